/* test_analyzer.c -- the analyzer (analyzer/jn_an.h) on synthetic trace
 * stores: each test writes a store with hand-encoded events
 * (jn_db_encode_event) in a temp dir, runs jn_an_analyze and checks the
 * graphs: a batch symbol unified across input, intermediates and a view
 * attribute; loops with a trip-count symbol and carries; variants with
 * parent/diverge/decided; varying float attributes and constant scalars;
 * in-place state updates; values kept for later segments; corrupt chunks
 * skipped with messages naming run and step (the other steps analyzed),
 * foreign op tables refused; and the
 * IR text and binary round trips of what it produced.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#if __has_include("jn_an.h")
#include <sqlite3.h>

#include "jn_an.h"
#include "an_internal.h" /* an_find_repeats */
#include "jn_test.h"

/* ------------------------------------------------------- store builder */
typedef struct {
    jn_db *db;
    int64_t run, step;
    jn_db_buf buf;
    int nops, nsyncs;
} tb;

static char optable_text[1 << 16];
static char optable_hash_hex[17];

static void make_optable(void) {
    size_t n = 0;
    for (int op = 0; op < JN_NOPS; op++) {
        const jn_opinfo *in = jn_op_info((jn_op)op);
        n += (size_t)snprintf(optable_text + n, sizeof optable_text - n, "%s %s\n", in->name, in->schema);
    }
    snprintf(optable_hash_hex, sizeof optable_hash_hex, "%016llx", (unsigned long long)jn_optable_hash());
}

static void tb_open(tb *t, const char *name, const char *ops, const char *hash) {
    memset(t, 0, sizeof *t);
    const char *path = tmp(name);
    unlink(path);
    CHECK(jn_db_open(path, JN_DB_CREATE, &t->db) == JN_OK);
    jn_db_run_info ri = {.argv_json = "[\"python\",\"train.py\"]", .cwd = "/w", .python_version = "3.11",
                         .janus_version = "test", .optable_hash = hash ? hash : optable_hash_hex,
                         .optable_ops = ops ? ops : optable_text, .cpu_features = "", .device = "cpu",
                         .hostname = "h", .pid = 1, .started = 1.0};
    CHECK(jn_db_run_begin(t->db, &ri, &t->run) == JN_OK);
}

static int64_t site(tb *t, int line) {
    int64_t id = 0;
    CHECK(jn_db_callsite(t->db, "train.py", line, "main", &id) == JN_OK);
    return id;
}

/* A float32 tensor reference with contiguous strides. */
static jn_db_tref T(int64_t id, int role, int ndim, ...) {
    jn_db_tref r;
    memset(&r, 0, sizeof r);
    r.id = id;
    r.role = (uint8_t)role;
    r.dtype = JN_F32;
    r.ndim = (uint8_t)ndim;
    r.scalar = NAN;
    va_list ap;
    va_start(ap, ndim);
    for (int d = 0; d < ndim; d++) r.shape[d] = va_arg(ap, int64_t);
    va_end(ap);
    int64_t s = 1;
    for (int d = ndim - 1; d >= 0; d--) {
        r.strides[d] = s;
        s *= r.shape[d];
    }
    return r;
}

/* A Python scalar argument (a wrapped number). */
static jn_db_tref S(int64_t id, double v, int pytype) {
    jn_db_tref r = T(id, JN_TR_SCALAR, 0);
    r.dtype = pytype == 2 ? JN_F64 : JN_I64;
    r.scalar = v;
    r.pytype = (uint8_t)pytype;
    return r;
}

static void op(tb *t, jn_op o, int64_t cs, const jn_attrs *a, int nin, const jn_db_tref *in, int nout,
               const jn_db_tref *out, int inplace) {
    jn_db_event ev;
    memset(&ev, 0, sizeof ev);
    ev.kind = JN_EV_OP;
    ev.op = (uint32_t)o;
    ev.inplace = (uint8_t)inplace;
    if (a) ev.attrs = *a;
    ev.nattrs = (uint8_t)jn_op_info(o)->nattrs;
    ev.nin = (uint8_t)nin;
    ev.nout = (uint8_t)nout;
    ev.in = (jn_db_tref *)in;
    ev.out = (jn_db_tref *)out;
    ev.callsite = cs;
    ev.value = NAN;
    CHECK(jn_db_encode_event(&t->buf, &ev) == JN_OK);
    t->nops++;
}

static void sync_ev(tb *t, int kind, int64_t cs, int64_t tensor) {
    jn_db_event ev;
    memset(&ev, 0, sizeof ev);
    ev.kind = JN_EV_SYNC;
    ev.sync_kind = (uint8_t)kind;
    ev.value = 0.5;
    ev.tensor_id = tensor;
    ev.callsite = cs;
    CHECK(jn_db_encode_event(&t->buf, &ev) == JN_OK);
    t->nsyncs++;
}

static void decision(tb *t, int64_t cs, int kind, int64_t outcome) {
    jn_db_event ev;
    memset(&ev, 0, sizeof ev);
    ev.kind = JN_EV_DECISION;
    ev.dec_kind = (uint8_t)kind;
    ev.outcome = outcome;
    ev.callsite = cs;
    ev.value = NAN;
    CHECK(jn_db_encode_event(&t->buf, &ev) == JN_OK);
}

static void end_step_raw(tb *t, const void *data, size_t len) {
    jn_db_step s = {.run_id = t->run, .step = t->step, .kind = "optimizer", .started = 1.0, .duration = 0.001,
                    .signature = 1, .n_ops = t->nops, .n_syncs = t->nsyncs, .events = data, .events_len = len};
    CHECK(jn_db_write_step(t->db, &s) == JN_OK);
    t->step++;
    t->buf.len = 0;
    t->nops = t->nsyncs = 0;
}

static void end_step(tb *t) { end_step_raw(t, t->buf.data, t->buf.len); }

static void tb_close(tb *t) {
    jn_db_buf_free(&t->buf);
    jn_db_close(t->db);
}

/* Analyze the store at name; NULL (and the status in *st) on failure. */
static jn_ir_module *analyze(const char *name, jn_status *st, jn_an_stats *stats) {
    jn_db *db = NULL;
    jn_ir_module *m = NULL;
    jn_status s = jn_db_open(tmp(name), JN_DB_READONLY, &db);
    CHECK(s == JN_OK);
    if (s) return NULL;
    jn_an_options opt = {0, NULL, NULL};
    jn_an_stats local;
    s = jn_an_analyze(db, &opt, &m, stats ? stats : &local);
    if (st) *st = s;
    if (s && !st) fprintf(stderr, "  analyze failed: %s\n", jn_errmsg());
    jn_db_close(db);
    return s ? NULL : m;
}

static char *ir_text(const jn_ir_module *m) {
    char *p = NULL;
    size_t n = 0;
    FILE *f = open_memstream(&p, &n);
    CHECK(jn_ir_print(m, f) == JN_OK);
    fclose(f);
    return p;
}

/* print -> parse -> print and serialize -> deserialize -> print are the identity. */
static void check_round_trip(const jn_ir_module *m) {
    char *a = ir_text(m);
    if (getenv("JN_AN_DUMP")) fputs(a, stderr); /* JN_AN_DUMP=1 shows the graphs */
    jn_ir_module *p = NULL;
    jn_status s = jn_ir_parse(a, strlen(a), &p);
    CHECK(s == JN_OK);
    if (s) fprintf(stderr, "  parse: %s\n", jn_errmsg());
    if (p) {
        char *b = ir_text(p);
        CHECK(!strcmp(a, b));
        free(b);
        jn_ir_module_free(p);
    }
    void *data = NULL;
    size_t len = 0;
    s = jn_ir_serialize(m, &data, &len);
    CHECK(s == JN_OK);
    if (!s) {
        jn_ir_module *q = NULL;
        s = jn_ir_deserialize(data, len, &q);
        CHECK(s == JN_OK);
        if (s) fprintf(stderr, "  deserialize: %s\n", jn_errmsg());
        if (q) {
            char *b = ir_text(q);
            CHECK(!strcmp(a, b));
            free(b);
            jn_ir_module_free(q);
        }
    }
    free(data);
    free(a);
}

static int64_t eval(const jn_ir_graph *g, jn_ir_dim d, int64_t s0) {
    int64_t syms[64];
    for (int i = 0; i < 64; i++) syms[i] = s0;
    int64_t v = -1;
    CHECK(jn_ir_dim_eval(g, d, syms, &v) == JN_OK);
    return v;
}

static int count_guards(const jn_ir_graph *g, jn_ir_guard_kind k) {
    int n = 0;
    for (int i = 0; i < g->nguards; i++) n += g->guards[i].kind == k;
    return n;
}

/* The first host input (Python numbers are inputs too, in order of use). */
static int32_t host_input(const jn_ir_graph *g) {
    for (int32_t i = 0; i < g->ninputs; i++)
        if (g->inputs[i].kind == JN_IR_IN_HOST) return i;
    return 0;
}

/* d with every symbol at the low end of its range (-1 if it fails). */
static int64_t at_lo(const jn_ir_graph *g, jn_ir_dim d) {
    int64_t sy[64] = {0}, v = -1;
    for (int32_t k = 0; k < g->nsyms && k < 64; k++) sy[k] = g->syms[k].lo;
    return jn_ir_dim_eval(g, d, sy, &v) == JN_OK ? v : -1;
}

static const jn_ir_node *find_node(const jn_ir_graph *g, jn_op o, int nth) {
    for (int i = 0; i < g->nnodes; i++)
        if (g->nodes[i].op == o && nth-- == 0) return &g->nodes[i];
    return NULL;
}

/* ------------------------------------------------------------------ (a) */
/* Batches of 32 and a last one of 17: x[B,28,28] -> view [B*784] -> view
 * [B,784] -> linear -> sum -> item().  One symbol for B everywhere. */
static void test_batch_symbol(void) {
    tb t;
    tb_open(&t, "a.db", NULL, NULL);
    int64_t c1 = site(&t, 10), c2 = site(&t, 11), c3 = site(&t, 12), c4 = site(&t, 13), c5 = site(&t, 14);
    int64_t id = 1000;
    const int64_t W = 1, Bias = 2;
    for (int st = 0; st < 5; st++) {
        int64_t B = st == 4 ? 17 : 32;
        jn_db_tref x = T(id++, JN_TR_HOST, 3, B, (int64_t)28, (int64_t)28);
        jn_db_tref flat = T(id++, 0, 1, B * 784);
        jn_attrs a;
        memset(&a, 0, sizeof a);
        a.a[0].l.n = 1;
        a.a[0].l.v[0] = B * 784;
        op(&t, JN_OP_view, c1, &a, 1, &x, 1, &flat, 0);
        jn_db_tref x2 = T(id++, 0, 2, B, (int64_t)784);
        a.a[0].l.n = 2;
        a.a[0].l.v[0] = -1;
        a.a[0].l.v[1] = 784;
        op(&t, JN_OP_view, c2, &a, 1, &flat, 1, &x2, 0);
        jn_db_tref lin_in[3] = {x2, T(W, JN_TR_PARAM, 2, (int64_t)10, (int64_t)784),
                                T(Bias, JN_TR_PARAM, 1, (int64_t)10)};
        jn_db_tref y = T(id++, 0, 2, B, (int64_t)10);
        op(&t, JN_OP_linear, c3, NULL, 3, lin_in, 1, &y, 0);
        jn_db_tref l = T(id++, 0, 0);
        memset(&a, 0, sizeof a);
        a.a[2].i = -1;
        op(&t, JN_OP_sum, c4, &a, 1, &y, 1, &l, 0);
        sync_ev(&t, JN_SYNC_ITEM, c5, l.id);
        end_step(&t);
    }
    tb_close(&t);
    jn_an_stats st;
    jn_ir_module *m = analyze("a.db", NULL, &st);
    CHECK(m != NULL);
    if (!m) return;
    CHECK(m->ngraphs == 1 && st.graphs == 1 && st.groups == 1 && st.steps == 5 && st.ops == 20);
    CHECK(st.exemplars == 2); /* the four 32-batches collapse into one */
    const jn_ir_graph *g = m->graphs[0];
    CHECK(g->support == 5 && g->step_lo == 0 && g->step_hi == 4);
    CHECK(g->nsyms == 1);
    if (g->nsyms == 1) {
        CHECK(g->syms[0].kind == JN_IR_SYM_DIM && g->syms[0].lo == 17 && g->syms[0].hi == 32);
        CHECK(!strcmp(g->syms[0].name, "s0"));
    }
    /* inputs: x (host, [s0, 28, 28]), W and b (state, bound) */
    CHECK(g->ninputs == 3);
    const jn_ir_value *xv = &g->values[g->inputs[0].value];
    CHECK(g->inputs[0].kind == JN_IR_IN_HOST && xv->ndim == 3 && jn_ir_is_expr(xv->shape[0]) &&
          xv->shape[1] == 28 && xv->shape[2] == 28);
    CHECK(g->inputs[1].kind == JN_IR_IN_STATE && g->inputs[1].bind == W);
    /* the view attribute and the intermediate shapes are expressions of s0 */
    const jn_ir_node *v1 = find_node(g, JN_OP_view, 0), *v2 = find_node(g, JN_OP_view, 1);
    CHECK(v1 && v2);
    if (v1 && v2) {
        CHECK(eval(g, v1->attrs.a[0].l.v[0], 5) == 5 * 784);
        CHECK(eval(g, g->values[v1->out[0]].shape[0], 3) == 3 * 784);
        CHECK(v2->attrs.a[0].l.v[0] == -1 && v2->attrs.a[0].l.v[1] == 784);
        CHECK(g->values[v2->out[0]].shape[0] == xv->shape[0]); /* the same symbol, unified */
    }
    /* the loss is synced after the segment: kept */
    CHECK(g->noutputs == 1 && g->outputs[0].kind == JN_IR_OUT_KEEP);
    /* guards: the symbol's range, the constant dims 28, 28 of x, bindings */
    CHECK(count_guards(g, JN_IR_G_SYM) == 1);
    CHECK(count_guards(g, JN_IR_G_BIND) == 2);
    int dims_of_x = 0;
    for (int i = 0; i < g->nguards; i++)
        if (g->guards[i].kind == JN_IR_G_DIM && g->guards[i].value == g->inputs[0].value) {
            dims_of_x++;
            CHECK(g->guards[i].lo == 28 && g->guards[i].site == c1);
        }
    CHECK(dims_of_x == 2);
    char *text = ir_text(m);
    CHECK(strstr(text, "sym s0 dim 17..32") != NULL);
    CHECK(strstr(text, "\"train.py\":10") != NULL);
    free(text);
    check_round_trip(m);
    /* same store -> byte-identical IR */
    jn_ir_module *m2 = analyze("a.db", NULL, NULL);
    if (m2) {
        char *x1 = ir_text(m), *x2 = ir_text(m2);
        CHECK(!strcmp(x1, x2));
        free(x1);
        free(x2);
        jn_ir_module_free(m2);
    }
    jn_ir_module_free(m);
}

/* ------------------------------------------------------------------ (b) */
/* An RNN over T time steps, T varying (3, 5, 4, 5): h = tanh(x[:, t] * W + h),
 * outs.append(h); y = stack(outs, 1); loss = y.sum(); plus h * W after the
 * loop and a relu applied twice (a repeat whose count never varies). */
static void test_loop(void) {
    tb t;
    tb_open(&t, "b.db", NULL, NULL);
    int64_t c0 = site(&t, 70), c1 = site(&t, 71), c2 = site(&t, 72), c3 = site(&t, 73), c4 = site(&t, 74);
    int64_t c5 = site(&t, 75), c6 = site(&t, 76), cr = site(&t, 77), cl = site(&t, 69);
    int64_t id = 1000;
    const int Ts[4] = {3, 5, 4, 5};
    const int64_t W = 7;
    for (int st = 0; st < 4; st++) {
        int64_t T_ = Ts[st];
        jn_db_tref x = T(id++, JN_TR_HOST, 3, (int64_t)2, T_, (int64_t)4);
        jn_db_tref h = T(id++, 0, 2, (int64_t)2, (int64_t)4);
        jn_attrs a;
        memset(&a, 0, sizeof a);
        a.a[0].l.n = 2;
        a.a[0].l.v[0] = 2;
        a.a[0].l.v[1] = 4;
        a.a[2].i = -1;
        op(&t, JN_OP_full, c0, &a, 0, NULL, 1, &h, 0);
        for (int k = 0; k < 2; k++) {
            jn_db_tref r = T(id++, 0, 2, (int64_t)2, (int64_t)4);
            op(&t, JN_OP_relu, cr, NULL, 1, &h, 1, &r, 0);
            h = r;
        }
        jn_db_tref outs[8];
        for (int k = 0; k < T_; k++) {
            decision(&t, cl, JN_DEC_LOOP, k + 1 < T_);
            jn_db_tref xt = T(id++, 0, 2, (int64_t)2, (int64_t)4);
            memset(&a, 0, sizeof a);
            a.a[0].i = 1;
            a.a[1].i = k;
            op(&t, JN_OP_select, c1, &a, 1, &x, 1, &xt, 0);
            jn_db_tref in[2] = {xt, T(W, JN_TR_PARAM, 1, (int64_t)4)}, mm = T(id++, 0, 2, (int64_t)2, (int64_t)4);
            op(&t, JN_OP_mul, c2, NULL, 2, in, 1, &mm, 0);
            jn_db_tref in2[2] = {mm, h}, s = T(id++, 0, 2, (int64_t)2, (int64_t)4);
            memset(&a, 0, sizeof a);
            a.a[0].f = 1;
            op(&t, JN_OP_add, c3, &a, 2, in2, 1, &s, 0);
            jn_db_tref hn = T(id++, 0, 2, (int64_t)2, (int64_t)4);
            op(&t, JN_OP_tanh, c4, NULL, 1, &s, 1, &hn, 0);
            h = hn;
            outs[k] = hn;
        }
        jn_db_tref y = T(id++, 0, 3, (int64_t)2, T_, (int64_t)4);
        memset(&a, 0, sizeof a);
        a.a[0].i = 1;
        op(&t, JN_OP_stack, c5, &a, (int)T_, outs, 1, &y, 0);
        jn_db_tref in3[2] = {h, T(W, JN_TR_PARAM, 1, (int64_t)4)}, hw = T(id++, 0, 2, (int64_t)2, (int64_t)4);
        op(&t, JN_OP_mul, c6, NULL, 2, in3, 1, &hw, 0);
        jn_db_tref in4[2] = {y, hw}, z = T(id++, 0, 3, (int64_t)2, T_, (int64_t)4);
        jn_attrs one;
        memset(&one, 0, sizeof one);
        one.a[0].f = 1;
        jn_db_tref hw3 = hw;
        (void)hw3;
        op(&t, JN_OP_mul, c6, NULL, 2, in4, 1, &z, 0);
        jn_db_tref l = T(id++, 0, 0);
        memset(&a, 0, sizeof a);
        a.a[2].i = -1;
        op(&t, JN_OP_sum, c6, &a, 1, &z, 1, &l, 0);
        sync_ev(&t, JN_SYNC_ITEM, c6, l.id);
        end_step(&t);
    }
    tb_close(&t);
    jn_an_stats st;
    jn_ir_module *m = analyze("b.db", NULL, &st);
    CHECK(m && m->ngraphs == 1);
    if (!m || m->ngraphs != 1) {
        if (m) jn_ir_print(m, stderr);
        jn_ir_module_free(m);
        return;
    }
    const jn_ir_graph *g = m->graphs[0];
    CHECK(g->nloops == 1 && st.loops == 1);
    CHECK(g->support == 4);
    if (g->nloops != 1) {
        jn_ir_print(m, stderr);
        jn_ir_module_free(m);
        return;
    }
    const jn_ir_loop *L = &g->loops[0];
    /* the trip count is the symbol of x's time dim (input 0 is full()'s fill value) */
    const jn_ir_value *xv = &g->values[g->inputs[host_input(g)].value];
    CHECK(g->inputs[host_input(g)].kind == JN_IR_IN_HOST && xv->ndim == 3 && jn_ir_is_expr(xv->shape[1]));
    CHECK(L->trip == xv->shape[1]);
    CHECK(g->syms[L->ivar].kind == JN_IR_SYM_IVAR && g->syms[L->ivar].lo == 0 && g->syms[L->ivar].hi == 4);
    CHECK(L->count == 4 && L->ncarry == 1 && L->ncollect == 1);
    /* body: select index = the induction variable */
    const jn_ir_node *sel = &g->nodes[L->first];
    CHECK(sel->op == JN_OP_select && sel->loop == 0);
    int64_t sy[64] = {0};
    sy[L->ivar] = 3;
    int64_t idx = -1;
    CHECK(jn_ir_dim_eval(g, sel->attrs.a[1].i, sy, &idx) == JN_OK && idx == 3);
    /* carry h: seeded by the second relu, next = tanh */
    const jn_ir_node *tanh_n = &g->nodes[L->first + 3];
    CHECK(tanh_n->op == JN_OP_tanh && L->carry[0].next == tanh_n->out[0]);
    CHECK(g->values[L->carry[0].init].kind == JN_IR_V_NODE &&
          g->nodes[g->values[L->carry[0].init].def].op == JN_OP_relu);
    CHECK(find_node(g, JN_OP_relu, 1) != NULL && find_node(g, JN_OP_relu, 2) == NULL); /* unrolled */
    /* the add reads the carry parameter */
    CHECK(g->nodes[L->first + 2].in[1] == L->carry[0].param);
    /* stack(outs, 1) == permute(collect, [1, 0, 2]) */
    const jn_ir_node *perm = find_node(g, JN_OP_permute, 0);
    CHECK(perm && perm->in[0] == L->collect[0].out && perm->attrs.a[0].l.n == 3 && perm->attrs.a[0].l.v[0] == 1 &&
          perm->attrs.a[0].l.v[1] == 0 && perm->attrs.a[0].l.v[2] == 2);
    /* h * W after the loop reads the carried-out h */
    const jn_ir_node *after = find_node(g, JN_OP_mul, 1);
    CHECK(after && after->in[0] == L->carry[0].out);
    CHECK(count_guards(g, JN_IR_G_TRIP) == 1);
    for (int i = 0; i < g->nguards; i++)
        if (g->guards[i].kind == JN_IR_G_TRIP) CHECK(g->guards[i].lo == 3 && g->guards[i].hi == 5);
    check_round_trip(m);
    jn_ir_module_free(m);
}

/* A loop backwards over T-1 steps: for t in reversed(range(T-1)): h = tanh(x[:, t] + h).
 * The trip count is (T-1) of x's time dim, the index (T-2) - i. */
static void test_loop_reverse(void) {
    tb t;
    tb_open(&t, "b2.db", NULL, NULL);
    int64_t c0 = site(&t, 100), c1 = site(&t, 101), c2 = site(&t, 102), c3 = site(&t, 103);
    int64_t id = 1000;
    const int Ts[3] = {4, 7, 5};
    for (int st = 0; st < 3; st++) {
        int64_t T_ = Ts[st];
        jn_db_tref x = T(id++, JN_TR_HOST, 3, (int64_t)2, T_, (int64_t)3), h = T(id++, 0, 2, (int64_t)2, (int64_t)3);
        jn_attrs a;
        memset(&a, 0, sizeof a);
        a.a[0].l.n = 2;
        a.a[0].l.v[0] = 2;
        a.a[0].l.v[1] = 3;
        a.a[2].i = -1;
        op(&t, JN_OP_full, c0, &a, 0, NULL, 1, &h, 0);
        for (int64_t k = T_ - 2; k >= 0; k--) {
            jn_db_tref xt = T(id++, 0, 2, (int64_t)2, (int64_t)3), s = T(id++, 0, 2, (int64_t)2, (int64_t)3);
            memset(&a, 0, sizeof a);
            a.a[0].i = 1;
            a.a[1].i = k;
            op(&t, JN_OP_select, c1, &a, 1, &x, 1, &xt, 0);
            jn_db_tref in[2] = {xt, h};
            memset(&a, 0, sizeof a);
            a.a[0].f = 1;
            op(&t, JN_OP_add, c2, &a, 2, in, 1, &s, 0);
            jn_db_tref hn = T(id++, 0, 2, (int64_t)2, (int64_t)3);
            op(&t, JN_OP_tanh, c2, NULL, 1, &s, 1, &hn, 0);
            h = hn;
        }
        sync_ev(&t, JN_SYNC_ITEM, c3, h.id);
        end_step(&t);
    }
    tb_close(&t);
    jn_ir_module *m = analyze("b2.db", NULL, NULL);
    CHECK(m && m->ngraphs == 1 && m->graphs[0]->nloops == 1);
    if (!m || m->ngraphs != 1 || m->graphs[0]->nloops != 1) {
        jn_ir_module_free(m);
        return;
    }
    const jn_ir_graph *g = m->graphs[0];
    const jn_ir_loop *L = &g->loops[0];
    int64_t sy[64] = {0};
    const jn_ir_value *xv = &g->values[g->inputs[host_input(g)].value];
    CHECK(jn_ir_is_expr(xv->shape[1]));
    int32_t T_sym = jn_ir_is_expr(xv->shape[1]) ? g->exprs[jn_ir_expr_index(xv->shape[1])].sym : 0;
    sy[T_sym] = 9;
    sy[L->ivar] = 2;
    int64_t v = -1;
    CHECK(jn_ir_dim_eval(g, L->trip, sy, &v) == JN_OK && v == 8);                 /* T-1 */
    CHECK(jn_ir_dim_eval(g, g->nodes[L->first].attrs.a[1].i, sy, &v) == JN_OK && v == 9 - 2 - 2); /* T-2-i */
    CHECK(L->ncarry == 1 && L->ncollect == 0);
    CHECK(g->noutputs == 1 && g->outputs[0].value == L->carry[0].out); /* h is synced after the loop */
    check_round_trip(m);
    jn_ir_module_free(m);
}

/* A forward loop and a backward loop that reads the forward's values in
 * reverse, with a peeled first backward iteration (as autograd records a
 * recurrent net): y_k = tanh(y_{k-1} * 2) for k < T; g = y_{T-1} * 3; then
 * for k = T-2 .. 0: g = g * y_k; r = g * y_0.  The backward loop reads y
 * through a collect of the forward loop: select(collect, 0, (T-2) - i); the
 * peeled op reads the last y through the carry, the op after the loops the
 * first through select(collect, 0, 0). */
static void loop_cross_read(const char *db, const int *Ts, int nsteps) {
    tb t;
    tb_open(&t, db, NULL, NULL);
    int64_t c1 = site(&t, 140), c2 = site(&t, 141), c3 = site(&t, 142), c4 = site(&t, 143);
    int64_t id = 1000;
    for (int st = 0; st < nsteps; st++) {
        int64_t T_ = Ts[st];
        jn_db_tref y = T(id++, JN_TR_HOST, 1, (int64_t)4), ys[16];
        for (int64_t k = 0; k < T_; k++) {
            jn_db_tref in[2] = {y, S(id++, 2.0, 2)}, m = T(id++, 0, 1, (int64_t)4), yn = T(id++, 0, 1, (int64_t)4);
            op(&t, JN_OP_mul, c1, NULL, 2, in, 1, &m, 0);
            op(&t, JN_OP_tanh, c1, NULL, 1, &m, 1, &yn, 0);
            ys[k] = y = yn;
        }
        jn_db_tref in0[2] = {ys[T_ - 1], S(id++, 3.0, 2)}, g = T(id++, 0, 1, (int64_t)4);
        op(&t, JN_OP_mul, c2, NULL, 2, in0, 1, &g, 0);
        for (int64_t k = T_ - 2; k >= 0; k--) {
            jn_db_tref in[2] = {g, ys[k]}, gn = T(id++, 0, 1, (int64_t)4);
            op(&t, JN_OP_mul, c3, NULL, 2, in, 1, &gn, 0);
            g = gn;
        }
        jn_db_tref in1[2] = {g, ys[0]}, r = T(id++, 0, 1, (int64_t)4);
        op(&t, JN_OP_mul, c4, NULL, 2, in1, 1, &r, 0);
        sync_ev(&t, JN_SYNC_ITEM, c4, r.id);
        end_step(&t);
    }
    tb_close(&t);
    jn_ir_module *m = analyze(db, NULL, NULL);
    CHECK(m && m->ngraphs == 1 && m->graphs[0]->nloops == 2);
    if (!m || m->ngraphs != 1 || m->graphs[0]->nloops != 2) {
        jn_ir_module_free(m);
        return;
    }
    const jn_ir_graph *g = m->graphs[0];
    const jn_ir_loop *F = &g->loops[0], *B = &g->loops[1];
    CHECK(F->ncarry == 1 && F->ncollect == 1 && B->ncarry == 1);
    int64_t sy[64] = {0}, v = -1;
    CHECK(jn_ir_is_expr(F->trip));
    int32_t T_sym = jn_ir_is_expr(F->trip) ? g->exprs[jn_ir_expr_index(F->trip)].sym : 0;
    sy[T_sym] = 7;
    sy[B->ivar] = 2;
    CHECK(jn_ir_dim_eval(g, F->trip, sy, &v) == JN_OK && v == 7);
    CHECK(jn_ir_dim_eval(g, B->trip, sy, &v) == JN_OK && v == 6);
    int sel_in = 0, sel_out = 0;
    for (int32_t n = 0; n < g->nnodes; n++) {
        const jn_ir_node *nd = &g->nodes[n];
        if (nd->op != JN_OP_select || nd->in[0] != F->collect[0].out) continue;
        CHECK(jn_ir_dim_eval(g, nd->attrs.a[1].i, sy, &v) == JN_OK);
        if (nd->loop == 1) {
            sel_in++;
            CHECK(v == 7 - 2 - 2); /* (T-2) - i */
        } else {
            sel_out++;
            CHECK(v == 0);         /* y_0 after the loops */
        }
    }
    CHECK(sel_in == 1 && sel_out == 1);
    CHECK(g->nodes[F->first + F->count].op == JN_OP_mul && g->nodes[F->first + F->count].in[0] == F->carry[0].out);
    int lo = 1 << 30;
    for (int32_t k = 0; k < g->nguards; k++)
        if (g->guards[k].kind == JN_IR_G_TRIP && g->guards[k].loop == 1) lo = (int)g->guards[k].lo;
    int want = 1 << 30;
    for (int k = 0; k < nsteps; k++) want = Ts[k] - 1 < want ? Ts[k] - 1 : want;
    CHECK(lo == want); /* the backward loop's fewest trips */
    check_round_trip(m);
    jn_ir_module_free(m);
}

static void test_loop_cross_read(void) {
    const int Ts[4] = {5, 8, 6, 5};
    loop_cross_read("b5.db", Ts, 4);
    /* T = 2: the backward loop runs once, which is no repeat; the step
     * joins the others as a one-iteration loop (it comes first, too) */
    const int Ts1[4] = {2, 5, 8, 6};
    loop_cross_read("b5b.db", Ts1, 4);
}

/* Two steps whose loops fold alike (same op tokens) but run on tensors of
 * different rank ([4] three times, [2, 2] five times): the loop graph
 * generalize.c would write types every iteration like the first exemplar,
 * so the self-check finds the second exemplar differs and each trip count
 * is its own structure. */
static void test_loop_selfcheck(void) {
    tb t;
    tb_open(&t, "b6.db", NULL, NULL);
    int64_t c1 = site(&t, 150), c2 = site(&t, 151);
    int64_t id = 1000;
    for (int st = 0; st < 2; st++) {
        jn_db_tref x = st ? T(id++, JN_TR_HOST, 2, (int64_t)2, (int64_t)2) : T(id++, JN_TR_HOST, 1, (int64_t)4);
        for (int k = 0; k < (st ? 5 : 3); k++) {
            jn_db_tref y = st ? T(id++, 0, 2, (int64_t)2, (int64_t)2) : T(id++, 0, 1, (int64_t)4);
            op(&t, JN_OP_tanh, c1, NULL, 1, &x, 1, &y, 0);
            x = y;
        }
        sync_ev(&t, JN_SYNC_ITEM, c2, x.id);
        end_step(&t);
    }
    tb_close(&t);
    jn_ir_module *m = analyze("b6.db", NULL, NULL);
    CHECK(m && m->ngraphs == 2);
    for (int k = 0; m && k < m->ngraphs; k++) {
        const jn_ir_graph *g = m->graphs[k];
        CHECK(g->nloops == 0 && g->ninputs == 1);
        int r = g->values[g->inputs[0].value].ndim;
        CHECK(g->nnodes == (r == 1 ? 3 : 5));
        for (int32_t n = 0; n < g->nnodes; n++) CHECK(g->values[g->nodes[n].out[0]].ndim == r);
    }
    jn_ir_module_free(m);
}

/* 20 iterations every time (x = tanh(x * 2.0)): a loop with a constant trip
 * count instead of 40 unrolled nodes; 3 iterations stay unrolled. */
static void test_loop_constant(void) {
    tb t;
    tb_open(&t, "b3.db", NULL, NULL);
    int64_t c1 = site(&t, 110), c2 = site(&t, 111), c3 = site(&t, 112);
    int64_t id = 100;
    for (int st = 0; st < 2; st++) {
        jn_db_tref x = T(id++, JN_TR_HOST, 1, (int64_t)4);
        for (int k = 0; k < 20; k++) {
            jn_db_tref in[2] = {x, S(id++, 2.0, 2)}, y = T(id++, 0, 1, (int64_t)4), z = T(id++, 0, 1, (int64_t)4);
            op(&t, JN_OP_mul, c1, NULL, 2, in, 1, &y, 0);
            op(&t, JN_OP_tanh, c2, NULL, 1, &y, 1, &z, 0);
            x = z;
        }
        for (int k = 0; k < 3; k++) {
            jn_db_tref z = T(id++, 0, 1, (int64_t)4);
            op(&t, JN_OP_relu, c3, NULL, 1, &x, 1, &z, 0);
            x = z;
        }
        sync_ev(&t, JN_SYNC_ITEM, c3, x.id);
        end_step(&t);
    }
    tb_close(&t);
    jn_ir_module *m = analyze("b3.db", NULL, NULL);
    CHECK(m && m->ngraphs == 1 && m->graphs[0]->nloops == 1);
    if (m && m->ngraphs == 1 && m->graphs[0]->nloops == 1) {
        const jn_ir_graph *g = m->graphs[0];
        CHECK(g->loops[0].trip == 20 && g->loops[0].count == 2 && g->nnodes == 5);
        /* the Python 2.0 is fed at run time: its type is guarded, not its value */
        CHECK(count_guards(g, JN_IR_G_TRIP) == 1 && count_guards(g, JN_IR_G_SCALAR) == 0 &&
              count_guards(g, JN_IR_G_PYTYPE) == 1);
        check_round_trip(m);
    }
    jn_ir_module_free(m);
}

/* ------------------------------------------------------------------ (c) */
/* Two structures at one point: mul -> add (3 steps) and mul -> [branch] relu
 * -> add (2 steps). */
static void test_variants(void) {
    tb t;
    tb_open(&t, "c.db", NULL, NULL);
    int64_t c1 = site(&t, 20), c2 = site(&t, 21), c3 = site(&t, 22), cif = site(&t, 23);
    int64_t id = 100;
    for (int st = 0; st < 5; st++) {
        int taken = st == 1 || st == 3;
        jn_db_tref x = T(id++, JN_TR_HOST, 1, (int64_t)8), w = T(1, JN_TR_PARAM, 1, (int64_t)8);
        jn_db_tref in[2] = {x, w}, y = T(id++, 0, 1, (int64_t)8);
        op(&t, JN_OP_mul, c1, NULL, 2, in, 1, &y, 0);
        decision(&t, cif, JN_DEC_BRANCH, taken);
        if (taken) {
            jn_db_tref r = T(id++, 0, 1, (int64_t)8);
            op(&t, JN_OP_relu, c2, NULL, 1, &y, 1, &r, 0);
            y = r;
        }
        jn_db_tref in2[2] = {y, x}, z = T(id++, 0, 1, (int64_t)8);
        jn_attrs a;
        memset(&a, 0, sizeof a);
        a.a[0].f = 1;
        op(&t, JN_OP_add, c3, &a, 2, in2, 1, &z, 0);
        sync_ev(&t, JN_SYNC_ITEM, c3, z.id);
        end_step(&t);
    }
    tb_close(&t);
    jn_an_stats st;
    jn_ir_module *m = analyze("c.db", NULL, &st);
    CHECK(m && m->ngraphs == 2);
    if (!m || m->ngraphs != 2) {
        jn_ir_module_free(m);
        return;
    }
    const jn_ir_graph *a = m->graphs[0], *b = m->graphs[1];
    CHECK(a->group == 0 && b->group == 0 && st.groups == 1 && st.variants == 1);
    CHECK(a->variant == 0 && a->parent == -1 && a->support == 3 && a->nnodes == 2);
    CHECK(b->variant == 1 && b->parent == 0 && b->support == 2 && b->nnodes == 3);
    CHECK(b->diverge == 1);
    CHECK(b->decided == cif);
    check_round_trip(m);
    jn_ir_module_free(m);
}

/* A dim that varied at the same place in other segments: the batch of a
 * segment seen once (after an item(), in step 2 only) is a symbol (of the
 * value it had there, 8) because the batch varied at that place before the
 * item (4..8), and so is its output's; the dim that never varied anywhere
 * (6) and the parameter's stay constants with DIM guards. */
static void test_promote(void) {
    tb t;
    tb_open(&t, "pr.db", NULL, NULL);
    int64_t c1 = site(&t, 140), c2 = site(&t, 141), c3 = site(&t, 142);
    int64_t id = 100;
    jn_attrs sa;
    memset(&sa, 0, sizeof sa);
    sa.a[2].i = -1;
    const int64_t Bs[3] = {4, 8, 6};
    for (int st = 0; st < 3; st++) {
        for (int half = 0; half < (st == 2 ? 2 : 1); half++) {
            jn_db_tref x = T(id++, JN_TR_HOST, 2, half ? (int64_t)8 : Bs[st], (int64_t)6);
            jn_db_tref in[2] = {x, T(7, JN_TR_PARAM, 1, (int64_t)6)}, y = T(id++, 0, 2, x.shape[0], (int64_t)6);
            op(&t, JN_OP_mul, c1, NULL, 2, in, 1, &y, 0);
            jn_db_tref l = T(id++, 0, 0);
            op(&t, JN_OP_sum, c2, &sa, 1, &y, 1, &l, 0);
            sync_ev(&t, JN_SYNC_ITEM, half ? c3 : c2, l.id);
        }
        end_step(&t);
    }
    tb_close(&t);
    jn_ir_module *m = analyze("pr.db", NULL, NULL);
    CHECK(m && m->ngraphs == 2);
    for (int32_t k = 0; m && k < m->ngraphs; k++) {
        const jn_ir_graph *g = m->graphs[k];
        const jn_ir_value *xv = &g->values[g->inputs[host_input(g)].value];
        const jn_ir_node *mul = find_node(g, JN_OP_mul, 0);
        CHECK(jn_ir_is_expr(xv->shape[0]) && xv->shape[1] == 6 && mul && g->values[mul->out[0]].shape[0] == xv->shape[0]);
        int32_t sy = jn_ir_is_expr(xv->shape[0]) ? g->exprs[jn_ir_expr_index(xv->shape[0])].sym : -1;
        /* the graph of the steps: the range they had; the one seen once: its one value */
        CHECK(sy >= 0 && g->syms[sy].kind == JN_IR_SYM_DIM && g->syms[sy].lo == (k == 0 ? 4 : 8) && g->syms[sy].hi == 8);
        int dims = 0, seen = 0;
        for (int i = 0; i < g->nguards; i++) {
            const jn_ir_guard *q = &g->guards[i];
            dims += q->kind == JN_IR_G_DIM && q->lo == 6 && q->cls == JN_IR_GC_NEED; /* x's dim 1, the parameter's */
            seen += q->kind == JN_IR_G_SYM && q->sym == sy && q->cls == JN_IR_GC_SEEN;
        }
        CHECK(dims == 2 && seen == 1);
        if (k == 1) CHECK(g->support == 1 && !strcmp(g->entry + strlen(g->entry) - strlen("train.py:141"), "train.py:141"));
    }
    check_round_trip(m);
    jn_ir_module_free(m);
}

/* ------------------------------------------------------------------ (d) */
/* add(p, g, alpha=-lr) with lr changing every step (a scheduler) and a
 * constant Python scalar 2.0 in a mul: a scalar input bound to the
 * attribute, and one for the 2.0 too (fed at run time, its type guarded:
 * a value seen constant over a short recording is no constant). */
static void test_scalars(void) {
    tb t;
    tb_open(&t, "d.db", NULL, NULL);
    int64_t c1 = site(&t, 30), c2 = site(&t, 31);
    int64_t id = 100;
    for (int st = 0; st < 4; st++) {
        jn_db_tref x = T(id++, JN_TR_HOST, 1, (int64_t)4), two = S(id++, 2.0, 2);
        jn_db_tref in[2] = {x, two}, y = T(id++, 0, 1, (int64_t)4);
        op(&t, JN_OP_mul, c1, NULL, 2, in, 1, &y, 0);
        jn_db_tref p = T(7, JN_TR_PARAM, 1, (int64_t)4);
        jn_db_tref in2[2] = {p, y};
        jn_attrs a;
        memset(&a, 0, sizeof a);
        a.a[0].f = -0.1 / (st + 1);
        op(&t, JN_OP_add, c2, &a, 2, in2, 1, &p, 1); /* p.add_(y, alpha=-lr) */
        end_step(&t);
    }
    tb_close(&t);
    jn_ir_module *m = analyze("d.db", NULL, NULL);
    CHECK(m && m->ngraphs == 1);
    if (!m || m->ngraphs != 1) {
        jn_ir_module_free(m);
        return;
    }
    const jn_ir_graph *g = m->graphs[0];
    int nconst = 0, nscalar = 0, ntwo = 0;
    for (int i = 0; i < g->ninputs; i++) {
        nconst += g->inputs[i].kind == JN_IR_IN_CONST;
        if (g->inputs[i].kind == JN_IR_IN_SCALAR) {
            nscalar++;
            CHECK(g->inputs[i].scalar == -0.1 || (g->inputs[i].scalar == 2.0 && g->inputs[i].pytype == 2));
            ntwo += g->inputs[i].scalar == 2.0;
        }
    }
    CHECK(nconst == 0 && nscalar == 2 && ntwo == 1);
    const jn_ir_node *add = find_node(g, JN_OP_add, 0);
    CHECK(add && add->attr_input[0] >= 0);
    if (add && add->attr_input[0] >= 0) {
        const jn_ir_value *v = &g->values[add->attr_input[0]];
        CHECK(v->kind == JN_IR_V_INPUT && g->inputs[v->def].kind == JN_IR_IN_SCALAR);
    }
    CHECK(count_guards(g, JN_IR_G_SCALAR) == 0 && count_guards(g, JN_IR_G_PYTYPE) == 1);
    for (int i = 0; i < g->nguards; i++)
        if (g->guards[i].kind == JN_IR_G_PYTYPE)
            CHECK(g->guards[i].lo == 2 && g->guards[i].site == c1 && g->guards[i].cls == JN_IR_GC_NEED);
    check_round_trip(m);
    jn_ir_module_free(m);
}

/* ------------------------------------------------------------------ (e) */
/* SGD with momentum written in place: buf.mul_(0.9).add_(g); p.add_(buf);
 * state read at entry, written back at exit; an in-place write into a view
 * is refused with its reason. */
static void test_state(void) {
    tb t;
    tb_open(&t, "e.db", NULL, NULL);
    int64_t c1 = site(&t, 40), c2 = site(&t, 41), c3 = site(&t, 42), c4 = site(&t, 43), c5 = site(&t, 44);
    int64_t id = 100;
    for (int st = 0; st < 3; st++) {
        jn_db_tref gr = T(id++, JN_TR_HOST, 1, (int64_t)4);
        jn_db_tref buf = T(5, JN_TR_STATE, 1, (int64_t)4), p = T(6, JN_TR_PARAM, 1, (int64_t)4);
        jn_db_tref m9 = S(id++, 0.9, 2);
        jn_db_tref in1[2] = {buf, m9};
        op(&t, JN_OP_mul, c1, NULL, 2, in1, 1, &buf, 1);
        jn_db_tref in2[2] = {buf, gr};
        jn_attrs a;
        memset(&a, 0, sizeof a);
        a.a[0].f = 1;
        op(&t, JN_OP_add, c2, &a, 2, in2, 1, &buf, 1);
        jn_db_tref in3[2] = {p, buf};
        a.a[0].f = -0.1;
        op(&t, JN_OP_add, c3, &a, 2, in3, 1, &p, 1);
        end_step(&t);
    }
    /* a second group: x = h.clone(); v = x[1]; v.fill_(1); print(x): a write
     * through a select view, spliced back: x' = select_scatter(x, v', 0, 1) */
    int64_t c6 = site(&t, 45), c7 = site(&t, 46);
    for (int st = 0; st < 2; st++) {
        jn_db_tref h = T(id++, JN_TR_HOST, 2, (int64_t)3, (int64_t)4), x = T(id++, 0, 2, (int64_t)3, (int64_t)4);
        op(&t, JN_OP_clone, c4, NULL, 1, &h, 1, &x, 0);
        jn_db_tref v = T(id++, 0, 1, (int64_t)4);
        v.offset = 4;
        jn_attrs a;
        memset(&a, 0, sizeof a);
        a.a[1].i = 1;
        op(&t, JN_OP_select, c4, &a, 1, &x, 1, &v, 0);
        a.a[0].f = 1;
        op(&t, JN_OP_fill_, c5, &a, 1, &v, 1, &v, 1);
        sync_ev(&t, JN_SYNC_PRINT, c5, x.id);
        end_step(&t);
    }
    /* a third: x = h.clone(); v = x[::2]; v.fill_(1): x' = slice_scatter(x, v', 0, 0, 3, 2) */
    for (int st = 0; st < 2; st++) {
        jn_db_tref h = T(id++, JN_TR_HOST, 1, (int64_t)4), x = T(id++, 0, 1, (int64_t)4);
        op(&t, JN_OP_clone, c6, NULL, 1, &h, 1, &x, 0);
        jn_db_tref v = T(id++, 0, 1, (int64_t)2);
        v.strides[0] = 2;
        jn_attrs a;
        memset(&a, 0, sizeof a);
        a.a[2].i = 4;
        a.a[3].i = 2;
        op(&t, JN_OP_slice, c6, &a, 1, &x, 1, &v, 0);
        memset(&a, 0, sizeof a);
        a.a[0].f = 1;
        op(&t, JN_OP_fill_, c7, &a, 1, &v, 1, &v, 1);
        sync_ev(&t, JN_SYNC_PRINT, c7, x.id);
        end_step(&t);
    }
    tb_close(&t);
    jn_an_stats st;
    jn_ir_module *m = analyze("e.db", NULL, &st);
    CHECK(m && m->ngraphs == 3);
    if (!m || m->ngraphs != 3) {
        jn_ir_module_free(m);
        return;
    }
    /* the splice: clone, select, fill_, select_scatter(x, v'); x' kept */
    const jn_ir_graph *g2 = m->graphs[1];
    CHECK(g2->nnodes == 4);
    if (g2->nnodes == 4) {
        const jn_ir_node *sc = &g2->nodes[3];
        /* the index is a position: a symbol (recorded 1..1), the select's own */
        CHECK(sc->op == JN_OP_select_scatter && sc->nin == 2 && sc->attrs.a[0].i == 0 && jn_ir_is_expr(sc->attrs.a[1].i) &&
              at_lo(g2, sc->attrs.a[1].i) == 1 && sc->attrs.a[1].i == g2->nodes[1].attrs.a[1].i);
        CHECK(sc->in[0] == g2->nodes[0].out[0] && sc->in[1] == g2->nodes[2].out[0]); /* x before, v' */
        CHECK(g2->noutputs == 1 && g2->outputs[0].kind == JN_IR_OUT_KEEP && g2->outputs[0].value == sc->out[0]);
        const jn_ir_value *cv = &g2->values[sc->out[0]];
        CHECK(cv->ndim == 2 && cv->shape[0] == 3 && cv->shape[1] == 4);
    }
    /* the strided slice: clone, slice, fill_, slice_scatter(x, v', dim 0, 0, 3, step 2) */
    const jn_ir_graph *g3 = m->graphs[2];
    CHECK(g3->nnodes == 4);
    if (g3->nnodes == 4) {
        const jn_ir_node *sc = &g3->nodes[3];
        CHECK(sc->op == JN_OP_slice_scatter && sc->in[0] == g3->nodes[0].out[0] && sc->in[1] == g3->nodes[2].out[0]);
        /* start a symbol (recorded 0), end = start + 3 */
        CHECK(sc->attrs.a[0].i == 0 && jn_ir_is_expr(sc->attrs.a[1].i) && at_lo(g3, sc->attrs.a[1].i) == 0 &&
              jn_ir_is_expr(sc->attrs.a[2].i) && at_lo(g3, sc->attrs.a[2].i) == 3 && sc->attrs.a[3].i == 2);
        int64_t sy[64] = {0}, end = -1;
        for (int32_t k = 0; k < g3->nsyms && k < 64; k++) sy[k] = 100;
        CHECK(jn_ir_dim_eval(g3, sc->attrs.a[2].i, sy, &end) == JN_OK && end == 103);
        CHECK(g3->noutputs == 1 && g3->outputs[0].value == sc->out[0]);
    }
    const jn_ir_graph *g = m->graphs[0];
    CHECK(g->nnodes == 3);
    int nstate = 0;
    for (int i = 0; i < g->ninputs; i++) nstate += g->inputs[i].kind == JN_IR_IN_STATE;
    CHECK(nstate == 2);
    CHECK(g->noutputs == 2);
    if (g->noutputs == 2) {
        for (int k = 0; k < 2; k++) {
            const jn_ir_output *o = &g->outputs[k];
            CHECK(o->kind == JN_IR_OUT_STATE);
            CHECK(g->inputs[o->state].kind == JN_IR_IN_STATE);
        }
        /* buf's final value is the add, p's the last add; each reads the new buf */
        const jn_ir_node *n1 = &g->nodes[1], *n2 = &g->nodes[2];
        CHECK(n2->in[1] == n1->out[0]);
        CHECK(g->outputs[0].value == n1->out[0] && g->inputs[g->outputs[0].state].bind == 5);
        CHECK(g->outputs[1].value == n2->out[0] && g->inputs[g->outputs[1].state].bind == 6);
    }
    CHECK(st.uncaptured == 0 && jn_an_uncaptured_count() == 0);
    check_round_trip(m);
    jn_ir_module_free(m);
}

/* Views of views and stale views: (1) x = h.clone(); x[1][::2].fill_(1):
 * spliced up the chain, slice_scatter into the row, select_scatter into x;
 * (2) v = x[0]; x.mul_(2); v.relu(): v is taken again from the new x;
 * (3) a write through expand stays refused with its reason. */
static void test_view_chains(void) {
    tb t;
    tb_open(&t, "vc.db", NULL, NULL);
    int64_t c1 = site(&t, 130), c2 = site(&t, 131), c3 = site(&t, 132), c4 = site(&t, 133), c5 = site(&t, 134);
    int64_t id = 100;
    jn_attrs a;
    for (int st = 0; st < 2; st++) {
        jn_db_tref h = T(id++, JN_TR_HOST, 2, (int64_t)3, (int64_t)4), x = T(id++, 0, 2, (int64_t)3, (int64_t)4);
        op(&t, JN_OP_clone, c1, NULL, 1, &h, 1, &x, 0);
        jn_db_tref r = T(id++, 0, 1, (int64_t)4), v = T(id++, 0, 1, (int64_t)2);
        memset(&a, 0, sizeof a);
        a.a[1].i = 1;
        op(&t, JN_OP_select, c1, &a, 1, &x, 1, &r, 0);
        memset(&a, 0, sizeof a);
        a.a[2].i = 4;
        a.a[3].i = 2;
        v.strides[0] = 2;
        op(&t, JN_OP_slice, c1, &a, 1, &r, 1, &v, 0);
        memset(&a, 0, sizeof a);
        a.a[0].f = 1;
        op(&t, JN_OP_fill_, c1, &a, 1, &v, 1, &v, 1);
        sync_ev(&t, JN_SYNC_PRINT, c1, x.id);
        end_step(&t);
    }
    for (int st = 0; st < 2; st++) {
        jn_db_tref h = T(id++, JN_TR_HOST, 2, (int64_t)3, (int64_t)4), x = T(id++, 0, 2, (int64_t)3, (int64_t)4);
        op(&t, JN_OP_clone, c2, NULL, 1, &h, 1, &x, 0);
        jn_db_tref v = T(id++, 0, 1, (int64_t)4), y = T(id++, 0, 1, (int64_t)4);
        memset(&a, 0, sizeof a);
        op(&t, JN_OP_select, c2, &a, 1, &x, 1, &v, 0);
        jn_db_tref in[2] = {x, S(id++, 2.0, 2)};
        op(&t, JN_OP_mul, c3, NULL, 2, in, 1, &x, 1);
        op(&t, JN_OP_relu, c3, NULL, 1, &v, 1, &y, 0);
        sync_ev(&t, JN_SYNC_PRINT, c3, y.id);
        end_step(&t);
    }
    for (int st = 0; st < 2; st++) {
        jn_db_tref h = T(id++, JN_TR_HOST, 2, (int64_t)1, (int64_t)4), x = T(id++, 0, 2, (int64_t)1, (int64_t)4);
        op(&t, JN_OP_clone, c4, NULL, 1, &h, 1, &x, 0);
        jn_db_tref v = T(id++, 0, 2, (int64_t)3, (int64_t)4);
        v.strides[0] = 0;
        memset(&a, 0, sizeof a);
        a.a[0].l.n = 2;
        a.a[0].l.v[0] = 3;
        a.a[0].l.v[1] = 4;
        op(&t, JN_OP_expand, c4, &a, 1, &x, 1, &v, 0);
        memset(&a, 0, sizeof a);
        a.a[0].f = 1;
        op(&t, JN_OP_fill_, c5, &a, 1, &v, 1, &v, 1);
        sync_ev(&t, JN_SYNC_PRINT, c5, x.id);
        end_step(&t);
    }
    tb_close(&t);
    jn_an_stats st;
    jn_ir_module *m = analyze("vc.db", NULL, &st);
    CHECK(m && m->ngraphs == 2);
    if (!m || m->ngraphs != 2) {
        jn_ir_module_free(m);
        return;
    }
    const jn_ir_graph *g = m->graphs[0];
    CHECK(g->nnodes == 6);
    if (g->nnodes == 6) {
        const jn_ir_node *ss = &g->nodes[4], *sel = &g->nodes[5];
        CHECK(ss->op == JN_OP_slice_scatter && ss->in[0] == g->nodes[1].out[0] && ss->in[1] == g->nodes[3].out[0]);
        /* the positions are the views' symbols: the slice's start (recorded 0), the
         * splice's end start + 3 (the slice ended at 4 with step 2), the select's index */
        CHECK(ss->attrs.a[0].i == 0 && jn_ir_is_expr(ss->attrs.a[1].i) && ss->attrs.a[1].i == g->nodes[2].attrs.a[1].i &&
              at_lo(g, ss->attrs.a[1].i) == 0 && at_lo(g, ss->attrs.a[2].i) == 3 && ss->attrs.a[3].i == 2);
        CHECK(sel->op == JN_OP_select_scatter && sel->in[0] == g->nodes[0].out[0] && sel->in[1] == ss->out[0]);
        CHECK(sel->attrs.a[0].i == 0 && jn_ir_is_expr(sel->attrs.a[1].i) && sel->attrs.a[1].i == g->nodes[1].attrs.a[1].i &&
              at_lo(g, sel->attrs.a[1].i) == 1);
        CHECK(g->noutputs == 1 && g->outputs[0].value == sel->out[0]);
    }
    g = m->graphs[1];
    CHECK(g->nnodes == 5);
    if (g->nnodes == 5) { /* clone, select, mul, select again (of the new x), relu */
        CHECK(g->nodes[2].op == JN_OP_mul && g->nodes[3].op == JN_OP_select);
        CHECK(g->nodes[3].in[0] == g->nodes[2].out[0] && g->nodes[4].in[0] == g->nodes[3].out[0]);
        /* taken again at the same position: the first select's index symbol */
        CHECK(jn_ir_is_expr(g->nodes[1].attrs.a[1].i) && g->nodes[3].attrs.a[1].i == g->nodes[1].attrs.a[1].i);
    }
    CHECK(st.uncaptured == 1 && jn_an_uncaptured_count() == 1);
    const char *r = jn_an_uncaptured(0);
    CHECK(r && strstr(r, "view") && strstr(r, "fill_") && strstr(r, "train.py:134"));
    check_round_trip(m);
    jn_ir_module_free(m);
}

/* Gradient accumulation into a reshaped view, as autograd does for a bias:
 * b = sum(x, 0, keepdim).view(4); b.add_(g1); b.add_(g2) -> the base's new
 * value is the view of b' back to [1, 4] after each write. */
static void test_reshape_splice(void) {
    tb t;
    tb_open(&t, "e2.db", NULL, NULL);
    int64_t c1 = site(&t, 90), c2 = site(&t, 91), c3 = site(&t, 92);
    int64_t id = 100;
    for (int st = 0; st < 3; st++) {
        jn_db_tref x = T(id++, JN_TR_HOST, 2, (int64_t)5, (int64_t)4), y = T(id++, 0, 2, (int64_t)1, (int64_t)4);
        jn_attrs a;
        memset(&a, 0, sizeof a);
        a.a[0].l.n = 1;
        a.a[1].i = 1;
        a.a[2].i = -1;
        op(&t, JN_OP_sum, c1, &a, 1, &x, 1, &y, 0);
        jn_db_tref b = T(id++, 0, 1, (int64_t)4);
        memset(&a, 0, sizeof a);
        a.a[0].l.n = 1;
        a.a[0].l.v[0] = 4;
        op(&t, JN_OP_view, c1, &a, 1, &y, 1, &b, 0);
        for (int k = 0; k < 2; k++) {
            jn_db_tref in[2] = {b, T(id++, JN_TR_HOST, 1, (int64_t)4)};
            memset(&a, 0, sizeof a);
            a.a[0].f = 1;
            op(&t, JN_OP_add, c2, &a, 2, in, 1, &b, 1);
        }
        jn_db_tref z = T(id++, 0, 2, (int64_t)1, (int64_t)4);
        op(&t, JN_OP_relu, c3, NULL, 1, &y, 1, &z, 0); /* reads the base after the writes */
        sync_ev(&t, JN_SYNC_PRINT, c3, z.id);
        end_step(&t);
    }
    tb_close(&t);
    jn_ir_module *m = analyze("e2.db", NULL, NULL);
    CHECK(m && m->ngraphs == 1);
    if (!m || m->ngraphs != 1) {
        jn_ir_module_free(m);
        return;
    }
    const jn_ir_graph *g = m->graphs[0];
    /* sum, view, add, view back, add, view back, relu */
    CHECK(g->nnodes == 7);
    if (g->nnodes == 7) {
        CHECK(g->nodes[3].op == JN_OP_view && g->nodes[3].in[0] == g->nodes[2].out[0]);
        CHECK(g->nodes[3].attrs.a[0].l.n == 2 && g->nodes[3].attrs.a[0].l.v[0] == 1 &&
              g->nodes[3].attrs.a[0].l.v[1] == 4);
        CHECK(g->nodes[4].in[0] == g->nodes[2].out[0]); /* the second add reads b' */
        CHECK(g->nodes[6].op == JN_OP_relu && g->nodes[6].in[0] == g->nodes[5].out[0]);
    }
    check_round_trip(m);
    jn_ir_module_free(m);
}

/* ------------------------------------------------------------------ (f) */
static void test_corrupt(void) {
    tb t;
    tb_open(&t, "f.db", NULL, NULL);
    int64_t c1 = site(&t, 50);
    for (int st = 0; st < 4; st++) {
        jn_db_tref x = T(10 + st, JN_TR_HOST, 1, (int64_t)4), y = T(20 + st, 0, 1, (int64_t)4);
        op(&t, JN_OP_relu, c1, NULL, 1, &x, 1, &y, 0);
        op(&t, JN_OP_relu, c1, NULL, 1, &y, 1, &x, 0);
        if (st == 2) end_step_raw(&t, t.buf.data, t.buf.len - 3); /* truncated */
        else end_step(&t);
    }
    int64_t run = t.run;
    /* garbage events in a second run */
    tb t2 = t;
    t2.buf = (jn_db_buf){0};
    jn_db_run_info ri = {.argv_json = "[]", .cwd = "/", .python_version = "3", .janus_version = "t",
                         .optable_hash = optable_hash_hex, .optable_ops = optable_text, .cpu_features = "",
                         .device = "cpu", .hostname = "h", .pid = 1, .started = 1};
    CHECK(jn_db_run_begin(t.db, &ri, &t2.run) == JN_OK);
    t2.step = 0;
    unsigned char junk[64];
    for (int i = 0; i < 64; i++) junk[i] = (unsigned char)(i * 37 + 11);
    end_step_raw(&t2, junk, sizeof junk);
    tb_close(&t);
    /* the damaged steps are skipped, each named with what was wrong; the
     * rest is analyzed (steps 0, 1 and 3 of run 1: one group of 3 segments) */
    jn_status s;
    jn_an_stats st;
    jn_ir_module *m = analyze("f.db", &s, &st);
    CHECK(s == JN_OK && m && m->ngraphs == 1 && st.steps == 3 && st.skipped == 2 && jn_an_skipped_count() == 2);
    char want[64];
    snprintf(want, sizeof want, "run %lld, step 2: ", (long long)run);
    CHECK(jn_an_skipped(0) && strstr(jn_an_skipped(0), want) && strstr(jn_an_skipped(0), "corrupt") &&
          strstr(jn_an_skipped(0), "re-record"));
    snprintf(want, sizeof want, "run %lld, step 0: ", (long long)t2.run);
    CHECK(jn_an_skipped(1) && strstr(jn_an_skipped(1), want) && strstr(jn_an_skipped(1), "corrupt"));
    jn_ir_module_free(m);
    /* run 2 alone: nothing readable, an empty module */
    jn_db *db = NULL;
    CHECK(jn_db_open(tmp("f.db"), JN_DB_READONLY, &db) == JN_OK);
    jn_an_options opt = {t2.run, NULL, NULL};
    m = NULL;
    CHECK(jn_an_analyze(db, &opt, &m, &st) == JN_OK && m && m->ngraphs == 0 && st.steps == 0 && st.skipped == 1);
    jn_ir_module_free(m);
    /* a damaged compressed blob */
    jn_db_close(db);
    sqlite3 *h = NULL;
    CHECK(sqlite3_open(tmp("f.db"), &h) == SQLITE_OK);
    CHECK(sqlite3_exec(h, "UPDATE chunks SET data = x'28b52ffd0000' WHERE step = 1", NULL, NULL, NULL) == SQLITE_OK);
    sqlite3_close(h);
    CHECK(jn_db_open(tmp("f.db"), JN_DB_READONLY, &db) == JN_OK);
    opt.run_id = run;
    m = NULL;
    CHECK(jn_an_analyze(db, &opt, &m, &st) == JN_OK && m && st.steps == 2 && st.skipped == 2);
    snprintf(want, sizeof want, "run %lld, step 1: ", (long long)run);
    CHECK(jn_an_skipped_count() == 2 && strstr(jn_an_skipped(0), want) && strstr(jn_an_skipped(0), "corrupt"));
    jn_ir_module_free(m);
    /* a run that does not exist */
    opt.run_id = 99;
    CHECK(jn_an_analyze(db, &opt, &m, &st) == JN_ERR_VALUE && !m && has("no run 99"));
    jn_db_close(db);
}

/* ------------------------------------------------------------------ (g) */
static void test_foreign_optable(void) {
    static char ops[sizeof optable_text + 64];
    snprintf(ops, sizeof ops, "%sfrobnicate x:i\n", optable_text);
    tb t;
    tb_open(&t, "g.db", ops, "00000000deadbeef");
    int64_t c1 = site(&t, 60);
    jn_db_tref x = T(1, JN_TR_HOST, 1, (int64_t)4), y = T(2, 0, 1, (int64_t)4);
    op(&t, JN_OP_relu, c1, NULL, 1, &x, 1, &y, 0);
    end_step(&t);
    tb_close(&t);
    jn_status s;
    jn_ir_module *m = analyze("g.db", &s, NULL);
    CHECK(!m && s == JN_ERR_VALUE && has("frobnicate") && has("re-record") && has("run 1"));
    /* a changed attribute schema */
    snprintf(ops, sizeof ops, "%s", optable_text);
    char *p = strstr(ops, "\nrelu \n");
    CHECK(p != NULL);
    if (p) {
        memmove(p + 13, p + 7, strlen(p + 7) + 1);
        memcpy(p, "\nrelu slope:f\n", 14);
    }
    tb_open(&t, "g2.db", ops, "00000000deadbee2");
    c1 = site(&t, 60);
    op(&t, JN_OP_relu, c1, NULL, 1, &x, 1, &y, 0);
    end_step(&t);
    tb_close(&t);
    m = analyze("g2.db", &s, NULL);
    CHECK(!m && s == JN_ERR_VALUE && has("relu") && has("slope:f") && has("re-record"));
}

/* ------------------------------------------------------------------ fuzz */
/* Random but well-formed traces: random ops over a small pool of tensor ids
 * (so reads, in-place writes, views and state collide), repeated blocks with
 * random counts (loops), syncs and decisions.  The analyzer must return a
 * verified module or an error with a message; never crash (ASan). */
static uint64_t rng_state = 88172645463325252ull;
static uint64_t xr(void) {
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return rng_state;
}
static int rnd(int n) { return (int)(xr() % (uint64_t)n); }

/* Every tensor id keeps one random type for life (as real tensors do), unless
 * `wild` rounds mix them up on purpose. */
static jn_db_tref types[4096];
static int wild;

static jn_db_tref rand_tref(int64_t id, int role) {
    if (!wild && id > 0 && id < 4096 && types[id].id == id) {
        jn_db_tref r = types[id];
        r.role = (uint8_t)role;
        return r;
    }
    int nd = rnd(3);
    jn_db_tref r = T(id, role, 0);
    r.ndim = (uint8_t)nd;
    uint64_t s = 1;
    for (int d = nd - 1; d >= 0; d--) {
        r.shape[d] = wild && !rnd(4) ? (int64_t)(xr() >> 1) : 1 + rnd(3);
        r.strides[d] = (int64_t)(s & 0x3fffffffffffffffull);
        s *= (uint64_t)r.shape[d];
    }
    if (!rnd(10)) r.dtype = JN_I64;
    if (id > 0 && id < 4096) types[id] = r;
    return r;
}

/* One op of a fuzz program, replayed with fresh ids where it creates tensors. */
typedef struct {
    jn_op op;
    int64_t site;
    int nin, inplace, out_pool;       /* out_pool: writes pool tensor out_id (else a fresh one) */
    int64_t in_id[8], out_id;
    int in_role[8];
    double scalar[8];
    jn_attrs a;
} recipe;

static void rand_recipe(recipe *r, const int64_t *sites) {
    static const jn_op ops[] = {JN_OP_add, JN_OP_mul, JN_OP_relu, JN_OP_tanh, JN_OP_view, JN_OP_select,
                                JN_OP_sum, JN_OP_copy_, JN_OP_stack, JN_OP_full, JN_OP_cat, JN_OP_randn};
    memset(r, 0, sizeof *r);
    r->op = ops[rnd((int)(sizeof ops / sizeof ops[0]))];
    const jn_opinfo *info = jn_op_info(r->op);
    r->site = sites[rnd(4)];
    r->nin = info->nin + ((info->flags & JN_F_VARIADIC) ? rnd(3) : 0);
    for (int i = 0; i < r->nin; i++) {
        int k = rnd(10);
        r->in_role[i] = k == 0 ? JN_TR_SCALAR : k == 1 ? JN_TR_PARAM : k == 2 ? JN_TR_HOST : JN_TR_TEMP;
        r->in_id[i] = 1 + rnd(12);
        r->scalar[i] = rnd(3);
    }
    r->inplace = (info->flags & JN_F_INPLACE) || (!rnd(5) && r->nin && r->in_role[0] != JN_TR_SCALAR);
    r->out_pool = !r->inplace && !rnd(3);
    r->out_id = 1 + rnd(12);
    for (int k = 0; k < info->nattrs; k++) {
        switch (info->attr_kind[k]) {
        case JN_A_INT: r->a.a[k].i = wild && !rnd(3) ? (int64_t)xr() : rnd(4) - 1; break;
        case JN_A_FLOAT: r->a.a[k].f = rnd(3) * 0.5; break;
        case JN_A_BOOL: r->a.a[k].i = rnd(2); break;
        case JN_A_DTYPE: r->a.a[k].i = -1; break;
        default:
            r->a.a[k].l.n = rnd(3);
            for (int j = 0; j < r->a.a[k].l.n; j++) r->a.a[k].l.v[j] = wild && !rnd(3) ? (int64_t)xr() : rnd(5) - 1;
        }
    }
}

static void play(tb *t, const recipe *r, int64_t *next_id, int iter) {
    const jn_opinfo *info = jn_op_info(r->op);
    jn_db_tref in[8], out[2];
    for (int i = 0; i < r->nin; i++)
        in[i] = r->in_role[i] == JN_TR_SCALAR ? S((*next_id)++, r->scalar[i], 1)
                                               : rand_tref(r->in_id[i], r->in_role[i]);
    if (r->inplace && r->in_role[0] != JN_TR_SCALAR) out[0] = in[0];
    else out[0] = rand_tref(r->out_pool ? r->out_id : (*next_id)++, 0);
    jn_attrs a = r->a;
    if (r->op == JN_OP_select) a.a[1].i = iter; /* an index that moves with the iteration */
    op(t, r->op, r->site, &a, r->nin, in, info->nout, out, r->inplace && r->in_role[0] != JN_TR_SCALAR);
}

static void test_fuzz(void) {
    int ok = 0, refused = 0, loops = 0, rounds = getenv("JN_AN_FUZZ_ROUNDS") ? atoi(getenv("JN_AN_FUZZ_ROUNDS")) : 60;
    /* every graph, with or without loops, must unroll into its exemplars:
     * a difference is an internal error, which the checks below refuse */
    setenv("JANUS_AN_SELFCHECK", "all", 1);
    for (int round = 0; round < rounds; round++) {
        tb t;
        memset(types, 0, sizeof types);
        wild = round % 3 == 0;
        tb_open(&t, "fuzz.db", NULL, NULL);
        int64_t sites[4] = {site(&t, 80), site(&t, 81), site(&t, 82), site(&t, 83)};
        int64_t next_id = 100;
        recipe pre[8], body[4], post[4];
        int plen = 1 + rnd(6), blen = 1 + rnd(4), qlen = rnd(4);
        for (int i = 0; i < plen; i++) rand_recipe(&pre[i], sites);
        for (int i = 0; i < blen; i++) rand_recipe(&body[i], sites);
        for (int i = 0; i < qlen; i++) rand_recipe(&post[i], sites);
        for (int st = 0; st < 5; st++) {
            for (int i = 0; i < plen; i++) play(&t, &pre[i], &next_id, 0);
            int reps = 2 + rnd(3);
            for (int r = 0; r < reps; r++) {
                if (!rnd(4)) decision(&t, sites[0], JN_DEC_LOOP, 1);
                for (int i = 0; i < blen; i++) play(&t, &body[i], &next_id, r);
            }
            if (!rnd(3)) sync_ev(&t, JN_SYNC_ITEM, sites[1], 1 + rnd(12));
            for (int i = 0; i < qlen; i++) play(&t, &post[i], &next_id, 0);
            end_step(&t);
        }
        tb_close(&t);
        jn_status s = JN_OK;
        jn_ir_module *m = analyze("fuzz.db", &s, NULL);
        if (m) {
            ok++;
            /* JN_AN_FUZZ_KEEP=DIR keeps the well-formed stores (not the wild
             * ones, whose output types follow no op) for the matcher's
             * offline replay (tests/python/test_match_replay.py) */
            if (getenv("JN_AN_FUZZ_KEEP") && !wild) {
                char cmd[700];
                snprintf(cmd, sizeof cmd, "cp %s %s/fuzz_%d.db", tmp("fuzz.db"), getenv("JN_AN_FUZZ_KEEP"), round);
                if (system(cmd) != 0) fprintf(stderr, "cannot keep\n");
            }
            for (int k = 0; k < m->ngraphs; k++) loops += m->graphs[k]->nloops;
            CHECK(jn_ir_verify_module(m) == JN_OK);
            char *a = ir_text(m);
            jn_ir_module *p = NULL;
            CHECK(jn_ir_parse(a, strlen(a), &p) == JN_OK);
            if (p) {
                char *b = ir_text(p);
                CHECK(!strcmp(a, b));
                free(b);
            }
            jn_ir_module_free(p);
            free(a);
            jn_ir_module_free(m);
        } else {
            refused++;
            CHECK(s != JN_OK && jn_errmsg()[0]);
            if (strstr(jn_errmsg(), "internal error")) {
                fprintf(stderr, "  fuzz round %d: %s\n", round, jn_errmsg());
                char cmd[700];
                snprintf(cmd, sizeof cmd, "cp %s /tmp/jn_an_fuzz_fail.db", tmp("fuzz.db"));
                if (system(cmd) != 0) fprintf(stderr, "  (could not keep the store)\n");
            }
            CHECK(!strstr(jn_errmsg(), "internal error"));
        }
    }
    unsetenv("JANUS_AN_SELFCHECK");
    CHECK(ok > rounds / 2);
    if (getenv("JN_AN_FUZZ_ROUNDS")) fprintf(stderr, "fuzz: %d analyzed (%d loops), %d refused\n", ok, loops, refused);
    (void)refused;
}

/* An empty store is an empty module, not an error. */
static void test_empty(void) {
    tb t;
    tb_open(&t, "empty.db", NULL, NULL);
    tb_close(&t);
    jn_an_stats st;
    jn_ir_module *m = analyze("empty.db", NULL, &st);
    CHECK(m && m->ngraphs == 0 && st.runs == 1 && st.steps == 0);
    if (m) check_round_trip(m);
    jn_ir_module_free(m);
}

/* A bool mask's count that never varied (the mask kept every row of a
 * batch of 16 while recording) is a symbol anyway, and what moves with it
 * is told from the batch's equal 16s by data flow (analyzer/counts.c):
 * k = x[idx] (idx: the mask's coordinates), r = k.sum(1), the gradient's
 * e = r.sum().view(1).expand(16) times r; x + x stays the batch. */
static void test_mask_count(void) {
    tb t;
    tb_open(&t, "count.db", NULL, NULL);
    int64_t c1 = site(&t, 150), c2 = site(&t, 151), c3 = site(&t, 152), c4 = site(&t, 153), c5 = site(&t, 154);
    int64_t id = 100;
    for (int st = 0; st < 4; st++) {
        jn_db_tref x = T(id++, JN_TR_HOST, 2, (int64_t)16, (int64_t)3), idx = T(id++, JN_TR_DATAIDX, 1, (int64_t)16);
        idx.dtype = JN_I64;
        jn_attrs a;
        memset(&a, 0, sizeof a);
        a.a[0].l.n = 2;
        a.a[0].l.v[0] = 1; /* mask=[1, 0]: the index reads dim 0 */
        jn_db_tref in[2] = {x, idx}, k = T(id++, 0, 2, (int64_t)16, (int64_t)3);
        op(&t, JN_OP_index, c1, &a, 2, in, 1, &k, 0);
        memset(&a, 0, sizeof a);
        a.a[0].l.n = 1;
        a.a[0].l.v[0] = 1;
        a.a[2].i = -1;
        jn_db_tref r = T(id++, 0, 1, (int64_t)16), l = T(id++, 0, 0);
        op(&t, JN_OP_sum, c2, &a, 1, &k, 1, &r, 0);
        a.a[0].l.n = 0;
        op(&t, JN_OP_sum, c2, &a, 1, &r, 1, &l, 0);
        memset(&a, 0, sizeof a);
        a.a[0].l.n = 1;
        a.a[0].l.v[0] = 1;
        jn_db_tref v = T(id++, 0, 1, (int64_t)1), e = T(id++, 0, 1, (int64_t)16);
        op(&t, JN_OP_view, c3, &a, 1, &l, 1, &v, 0);
        a.a[0].l.v[0] = 16;
        op(&t, JN_OP_expand, c3, &a, 1, &v, 1, &e, 0);
        jn_db_tref er[2] = {e, r}, p = T(id++, 0, 1, (int64_t)16), xx[2] = {x, x}, y = T(id++, 0, 2, (int64_t)16, (int64_t)3);
        op(&t, JN_OP_mul, c4, NULL, 2, er, 1, &p, 0);
        memset(&a, 0, sizeof a);
        a.a[0].f = 1;
        op(&t, JN_OP_add, c5, &a, 2, xx, 1, &y, 0);
        sync_ev(&t, JN_SYNC_ITEM, c5, p.id);
        end_step(&t);
    }
    tb_close(&t);
    jn_ir_module *m = analyze("count.db", NULL, NULL);
    CHECK(m && m->ngraphs == 1);
    if (!m || m->ngraphs != 1) {
        jn_ir_module_free(m);
        return;
    }
    const jn_ir_graph *g = m->graphs[0];
    const jn_ir_node *ix = find_node(g, JN_OP_index, 0), *ex = find_node(g, JN_OP_expand, 0),
                     *mu = find_node(g, JN_OP_mul, 0), *ad = find_node(g, JN_OP_add, 0);
    CHECK(ix && ex && mu && ad);
    if (ix && ex && mu && ad) {
        jn_ir_dim n = g->values[ix->in[1]].shape[0];
        CHECK(jn_ir_is_expr(n) && at_lo(g, n) == 16);
        CHECK(g->values[ix->out[0]].shape[0] == n && g->values[ix->out[0]].shape[1] == 3);
        CHECK(ex->attrs.a[0].l.v[0] == n && g->values[mu->out[0]].shape[0] == n);
        /* the batch's 16s stay constants, guarded on x */
        CHECK(g->values[ad->out[0]].shape[0] == 16 && g->values[ix->in[0]].shape[0] == 16);
        int dims_of_x = 0;
        for (int i = 0; i < g->nguards; i++)
            dims_of_x += g->guards[i].kind == JN_IR_G_DIM && g->guards[i].value == ix->in[0];
        CHECK(dims_of_x == 2);
    }
    check_round_trip(m);
    jn_ir_module_free(m);
}

/* Tandem repeats: a short repeat that would take the first op of a longer
 * one leaves it to that one.  A GRU's zero state is selected just before
 * the time loop's first select (the same token: one call site), so
 * [select, select] x 2 used to start the loop one op late, rotated, with
 * its last iteration outside it and the stack of its outputs no collect. */
static void test_repeats(void) {
    enum { S = 1, L = 2, G = 3, K = 4 };
    const uint64_t tok[] = {S, S, L, G, S, L, G, S, L, G, S, L, G, K};
    an_rep *r = NULL;
    int32_t n = an_find_repeats(tok, (int32_t)(sizeof tok / sizeof tok[0]), &r);
    CHECK(n == 1 && r && r[0].start == 1 && r[0].period == 3 && r[0].count == 4);
    free(r);
    /* a repeat that stays inside the short one's span does not displace it */
    const uint64_t t2[] = {S, S, S, L, L, K};
    n = an_find_repeats(t2, 6, &r);
    CHECK(n == 2 && r && r[0].start == 0 && r[0].period == 1 && r[0].count == 3 && r[1].start == 3 && r[1].count == 2);
    free(r);
    /* a stacked RNN: two layers of the same tokens, each a time loop of 4
     * steps: the time loops, not the layer repeat (2 x 11 covers more) */
    enum { W = 5, X = 6, C = 7, Y = 8 };
    const uint64_t t3[] = {W, X, C, X, C, X, C, X, C, Y, K, W, X, C, X, C, X, C, X, C, Y, K};
    n = an_find_repeats(t3, 22, &r);
    CHECK(n == 2 && r && r[0].start == 1 && r[0].period == 2 && r[0].count == 4 && r[1].start == 12 &&
          r[1].period == 2 && r[1].count == 4);
    free(r);
    /* an outer repeat whose body holds only a run of one op is taken */
    const uint64_t t4[] = {W, S, S, S, Y, K, W, S, S, S, Y, K};
    n = an_find_repeats(t4, 12, &r);
    CHECK(n == 1 && r && r[0].start == 0 && r[0].period == 6 && r[0].count == 2);
    free(r);
}

int main(void) {
    if (jt_tmp_begin("an")) return 1;
    make_optable();
    test_batch_symbol();
    test_loop();
    test_loop_reverse();
    test_loop_constant();
    test_loop_cross_read();
    test_loop_selfcheck();
    test_variants();
    test_scalars();
    test_promote();
    test_mask_count();
    test_repeats();
    test_state();
    test_view_chains();
    test_reshape_splice();
    test_corrupt();
    test_foreign_optable();
    test_empty();
    test_fuzz();
    jt_tmp_end();
    JT_DONE();
}

#else
int main(void) {
    printf("test_analyzer: skipped (this build has no analyzer: ir/ and analyzer/ are not built)\n");
    return 0;
}
#endif
