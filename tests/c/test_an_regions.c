/* test_an_regions.c -- the analyzer's regions pass (analyzer/regions.c) on
 * a synthetic store: region rows, code rows and steps with hand-encoded
 * region markers, ops and syncs.  Each region is built to be replaceable
 * or refused for one reason, and the verdict, reason and file:line are
 * checked: a pure region; one whose op count follows its input's shape;
 * a sync inside; a tensor that is neither an argument, a parameter nor
 * state; two calls with inputs of the same shapes running different ops
 * (and two with the same shapes but another layout, which may);
 * an effect in its code; code never observed; a region refused through a
 * region it calls; two objects of one class counted as one verdict.
 * Without regions asked for, the analysis is what it was. */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "jn_an.h"
#include "jn_test.h"

typedef struct {
    jn_db *db;
    int64_t run, step;
    jn_db_buf buf;
    int nops, nsyncs;
    int64_t next_id;
} tb;

static char optable_text[1 << 16];
static char optable_hash_hex[17];

static void tb_open(tb *t, const char *name) {
    size_t n = 0;
    for (int op = 0; op < JN_NOPS; op++) {
        const jn_opinfo *in = jn_op_info((jn_op)op);
        n += (size_t)snprintf(optable_text + n, sizeof optable_text - n, "%s %s\n", in->name, in->schema);
    }
    snprintf(optable_hash_hex, sizeof optable_hash_hex, "%016llx", (unsigned long long)jn_optable_hash());
    memset(t, 0, sizeof *t);
    t->next_id = 1000;
    const char *path = tmp(name);
    unlink(path);
    CHECK(jn_db_open(path, JN_DB_CREATE, &t->db) == JN_OK);
    jn_db_run_info ri = {.argv_json = "[\"python\",\"train.py\"]", .cwd = "/w", .python_version = "3.11",
                         .janus_version = "test", .optable_hash = optable_hash_hex, .optable_ops = optable_text,
                         .cpu_features = "", .device = "cpu", .hostname = "h", .pid = 1, .started = 1.0};
    CHECK(jn_db_run_begin(t->db, &ri, &t->run) == JN_OK);
}

static int64_t site(tb *t, int line) {
    int64_t id = 0;
    CHECK(jn_db_callsite(t->db, "/w/train.py", line, "forward", &id) == JN_OK);
    return id;
}

static jn_db_tref T(int64_t id, int role, int64_t rows) {
    jn_db_tref r;
    memset(&r, 0, sizeof r);
    r.id = id;
    r.role = (uint8_t)role;
    r.dtype = JN_F32;
    r.ndim = 2;
    r.shape[0] = rows, r.shape[1] = 4;
    r.strides[0] = 4, r.strides[1] = 1;
    r.scalar = NAN;
    return r;
}

/* A unary op (neg) or mul of two: the output a new temp of `rows` rows; its id. */
static int64_t op(tb *t, jn_op o, int line, jn_db_tref a, const jn_db_tref *b) {
    jn_db_tref in[2] = {a, b ? *b : a}, out = T(t->next_id++, JN_TR_TEMP, a.shape[0]);
    jn_db_event ev;
    memset(&ev, 0, sizeof ev);
    ev.kind = JN_EV_OP;
    ev.op = (uint32_t)o;
    ev.nin = (uint8_t)jn_op_info(o)->nin;
    ev.nout = 1;
    ev.in = in;
    ev.out = &out;
    ev.callsite = site(t, line);
    ev.value = NAN;
    CHECK(jn_db_encode_event(&t->buf, &ev) == JN_OK);
    t->nops++;
    return out.id;
}

static void mark(tb *t, int64_t region, int enter, int nargs, const int64_t *args) {
    jn_db_event ev;
    memset(&ev, 0, sizeof ev);
    ev.kind = JN_EV_REGION;
    ev.region = region;
    ev.region_enter = (uint8_t)enter;
    ev.nargs = (uint32_t)nargs;
    ev.args = args;
    ev.value = NAN;
    CHECK(jn_db_encode_event(&t->buf, &ev) == JN_OK);
}

static void sync_ev(tb *t, int line, int64_t tensor) {
    jn_db_event ev;
    memset(&ev, 0, sizeof ev);
    ev.kind = JN_EV_SYNC;
    ev.sync_kind = JN_SYNC_ITEM;
    ev.value = 0.5;
    ev.tensor_id = tensor;
    ev.callsite = site(t, line);
    CHECK(jn_db_encode_event(&t->buf, &ev) == JN_OK);
    t->nsyncs++;
}

static void end_step(tb *t) {
    jn_db_step s = {.run_id = t->run, .step = t->step, .kind = "optimizer", .started = 1.0, .duration = 0.001,
                    .signature = 1, .n_ops = t->nops, .n_syncs = t->nsyncs, .events = t->buf.data,
                    .events_len = t->buf.len};
    CHECK(jn_db_write_step(t->db, &s) == JN_OK);
    t->step++;
    t->buf.len = 0;
    t->nops = t->nsyncs = 0;
}

enum { PURE = 1, ROWS, SYNC, GLOB, FLIP, EFFECT, UNSEEN, OUTER, INNER, TWIN_A, TWIN_B, LAYOUT };

static void region(tb *t, int64_t id, const char *name, int line, int observed, const char *effect, int eline) {
    jn_db_region r = {id, "module", name, "/w/train.py", line, "0123456789abcdef"};
    CHECK(jn_db_region_put(t->db, t->run, &r) == JN_OK);
    if (!observed) return;
    char es[32];
    snprintf(es, sizeof es, "train.py:%d", eline);
    char qn[64];
    snprintf(qn, sizeof qn, "%s.forward", name);
    jn_db_region_code c = {id, "0123456789abcdef", "/w/train.py", qn, line, 1, effect, effect ? es : NULL};
    CHECK(jn_db_region_codes_put(t->db, t->run, &c, 1) == JN_OK);
}

static const jn_db_region_verdict *find(const jn_an_regions *r, const char *name) {
    for (int i = 0; i < r->n; i++)
        if (!strcmp(r->v[i].qualname, name)) return &r->v[i];
    return NULL;
}

static void expect(const jn_an_regions *r, const char *name, int ok, const char *site, const char *reason_part) {
    const jn_db_region_verdict *v = find(r, name);
    CHECK(v != NULL);
    if (!v) return;
    int good = v->replaceable == ok && !strcmp(v->reason_site, site) && strstr(v->reason, reason_part);
    if (!good) fprintf(stderr, "  %s: %s at '%s': %s\n", name, v->replaceable ? "replaceable" : "refused",
                       v->reason_site, v->reason);
    CHECK(good);
}

static void test_verdicts(void) {
    tb t;
    tb_open(&t, "regions.db");
    region(&t, PURE, "Pure", 10, 1, NULL, 0);
    region(&t, ROWS, "Rows", 20, 1, NULL, 0);
    region(&t, SYNC, "Sync", 30, 1, NULL, 0);
    region(&t, GLOB, "Glob", 40, 1, NULL, 0);
    region(&t, FLIP, "Flip", 50, 1, NULL, 0);
    region(&t, EFFECT, "Effect", 60, 1, "stores attribute n: an effect outside the call", 61);
    region(&t, UNSEEN, "Unseen", 70, 0, NULL, 0);
    region(&t, OUTER, "Outer", 80, 1, NULL, 0);
    region(&t, INNER, "Inner", 90, 1, NULL, 0);
    region(&t, TWIN_A, "Twin", 100, 1, NULL, 0);
    region(&t, TWIN_B, "Twin", 100, 0, NULL, 0); /* same class, site and hash as TWIN_A: one verdict */
    region(&t, LAYOUT, "Layout", 110, 1, NULL, 0);
    jn_db_tref w = T(1, JN_TR_PARAM, 4), buf = T(2, JN_TR_STATE, 4);
    jn_db_tref glob = T(3, JN_TR_TEMP, 2); /* made by an op before the calls: a global */
    jn_db_tref g0 = T(4, JN_TR_TEMP, 2);
    op(&t, JN_OP_neg, 1, g0, NULL); /* id 1000 */
    glob.id = 1000;
    for (int s = 0; s < 4; s++) {
        int64_t rows = s < 2 ? 2 : 3; /* the batch changes after two steps */
        jn_db_tref x = T(10 + s, JN_TR_HOST, rows);
        int64_t args[1] = {x.id};
        /* Pure: argument, parameter, buffer */
        mark(&t, PURE, 1, 1, args);
        int64_t a = op(&t, JN_OP_mul, 11, x, &w);
        jn_db_tref at = T(a, JN_TR_TEMP, rows);
        int64_t b = op(&t, JN_OP_mul, 12, at, &buf);
        mark(&t, PURE, 0, 0, NULL);
        jn_db_tref y = T(b, JN_TR_TEMP, rows);
        int64_t ya[1] = {y.id};
        /* Rows: one op per row of its input */
        mark(&t, ROWS, 1, 1, ya);
        jn_db_tref acc = y;
        for (int k = 0; k < rows; k++) acc = T(op(&t, JN_OP_neg, 21, acc, NULL), JN_TR_TEMP, rows);
        mark(&t, ROWS, 0, 0, NULL);
        /* Sync: item() inside */
        mark(&t, SYNC, 1, 1, ya);
        int64_t c = op(&t, JN_OP_neg, 31, y, NULL);
        sync_ev(&t, 32, c);
        mark(&t, SYNC, 0, 0, NULL);
        /* Glob: reads a tensor it was not given */
        mark(&t, GLOB, 1, 1, ya);
        if (rows == 2) op(&t, JN_OP_mul, 41, y, &glob);
        else op(&t, JN_OP_neg, 41, y, NULL);
        mark(&t, GLOB, 0, 0, NULL);
        /* Flip: same shapes, another op every call */
        mark(&t, FLIP, 1, 1, ya);
        op(&t, s % 2 ? JN_OP_neg : JN_OP_relu, 51 + s % 2, y, NULL);
        mark(&t, FLIP, 0, 0, NULL);
        /* Effect: pure ops, an effect in its code */
        mark(&t, EFFECT, 1, 1, ya);
        op(&t, JN_OP_neg, 62, y, NULL);
        mark(&t, EFFECT, 0, 0, NULL);
        /* Unseen: never observed */
        mark(&t, UNSEEN, 1, 1, ya);
        op(&t, JN_OP_neg, 71, y, NULL);
        mark(&t, UNSEEN, 0, 0, NULL);
        /* Outer calls Inner, which syncs on the outer's own value */
        mark(&t, OUTER, 1, 1, ya);
        int64_t o = op(&t, JN_OP_neg, 81, y, NULL);
        int64_t oa[1] = {o};
        mark(&t, INNER, 1, 1, oa);
        op(&t, JN_OP_neg, 91, T(o, JN_TR_TEMP, rows), NULL);
        sync_ev(&t, 92, o);
        mark(&t, INNER, 0, 0, NULL);
        mark(&t, OUTER, 0, 0, NULL);
        /* two objects of one class */
        mark(&t, s % 2 ? TWIN_B : TWIN_A, 1, 1, ya);
        op(&t, JN_OP_neg, 101, y, NULL);
        mark(&t, s % 2 ? TWIN_B : TWIN_A, 0, 0, NULL);
        /* Layout: the same shapes, transposed strides every other call, and another op
         * then (a layout the replay's guard keys its variants on: no contradiction) */
        jn_db_tref z = T(20 + s, JN_TR_HOST, rows);
        if (s % 2) z.strides[0] = 1, z.strides[1] = rows;
        int64_t za[1] = {z.id};
        mark(&t, LAYOUT, 1, 1, za);
        op(&t, s % 2 ? JN_OP_relu : JN_OP_neg, 111, z, NULL);
        mark(&t, LAYOUT, 0, 0, NULL);
        end_step(&t);
    }
    jn_db_buf_free(&t.buf);
    jn_db_close(t.db);

    jn_db *db = NULL;
    CHECK(jn_db_open(tmp("regions.db"), JN_DB_READONLY, &db) == JN_OK);
    if (!db) return;
    jn_an_regions r = {NULL, 0};
    jn_an_options opt = {.run_id = 0, .progress = NULL, .regions = &r};
    jn_ir_module *m = NULL;
    jn_an_stats st;
    CHECK(jn_an_analyze(db, &opt, &m, &st) == JN_OK && m);
    int64_t graphs = st.graphs;
    jn_ir_module_free(m);
    CHECK(r.n == 11); /* the twins are one */
    expect(&r, "Pure", 1, "", "");
    expect(&r, "Rows", 1, "", "");
    expect(&r, "Sync", 0, "train.py:32", "reads tensor data inside the call (item()): a sync point");
    expect(&r, "Glob", 0, "train.py:41", "mul reads a tensor that is neither an argument, a parameter, a buffer nor "
                                         "optimizer state (a global or an attribute tensor)");
    expect(&r, "Flip", 0, "train.py:52", "call 2 ran neg where call 1 ran relu at train.py:51 (op 0), with inputs of "
                                         "the same shapes");
    expect(&r, "Effect", 0, "train.py:61", "stores attribute n: an effect outside the call (in Effect.forward)");
    expect(&r, "Unseen", 0, "train.py:70", "its code was not observed when recording");
    expect(&r, "Inner", 0, "train.py:92", "sync point");
    expect(&r, "Outer", 0, "train.py:92", "sync point");
    expect(&r, "Twin", 1, "", "");
    expect(&r, "Layout", 1, "", "");
    const jn_db_region_verdict *v = find(&r, "Twin");
    CHECK(v && v->calls == 4 && !strcmp(v->site, "train.py:100") && !strcmp(v->codes, "0123456789abcdef"));
    v = find(&r, "Pure");
    CHECK(v && v->calls == 4 && !strcmp(v->kind, "module") && !strcmp(v->code_hash, "0123456789abcdef"));
    jn_an_regions_free(&r);
    CHECK(r.n == 0 && !r.v);
    /* not asked for: the same graphs, nothing else */
    opt.regions = NULL;
    CHECK(jn_an_analyze(db, &opt, &m, &st) == JN_OK && m && st.graphs == graphs);
    jn_ir_module_free(m);
    jn_db_close(db);
}

int main(void) {
    if (jt_tmp_begin("anregions")) return 1;
    test_verdicts();
    jt_tmp_end();
    JT_DONE();
}
