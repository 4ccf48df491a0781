/* test_match.c -- replay's matcher (replay/jn_match.h) against
 * recorded runs, offline.
 *
 *   test_match                 the section loader on the module of a small
 *                              synthetic store: truncated, corrupt and
 *                              foreign sections are refused with a message,
 *                              never a crash
 *   test_match DB [OTHER_DB]   a recorded store: analyze, run the codegen
 *                              passes, build and load the bundle as
 *                              `janus optimize` does, then feed every
 *                              recorded event (jn_an_events) into the
 *                              matcher.  Every segment of a captured group
 *                              must complete a graph (hits == the graphs'
 *                              recorded support) with symbol values that
 *                              reproduce the recorded input shapes; then
 *                              mutated streams (batch size out of range,
 *                              another op, a changed constant scalar, a
 *                              trip count out of range, two state inputs
 *                              given one tensor, OTHER_DB's stream) must
 *                              miss with the right guard explained, and
 *                              another state tensor, or every tensor id
 *                              moved, must still hit.  Prints one summary
 *                              line ("match: ...") that
 *                              tests/python/test_match_replay.py reads.
 *   JN_MATCH_BENCH=1           also time the feed loop (ns per event).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#if __has_include("jn_an.h") && __has_include("jn_match.h") && __has_include("jn_bundle.h")
#include "jn_an.h"
#include "jn_bundle.h"
#include "jn_cg.h"
#include "jn_ir_match.h"
#include "jn_match.h"
#include "jn_test.h"

/* ----------------------------------------------------- recorded stream */
typedef struct {
    jn_op op;
    int nin, nout;
    jn_attr attrs[JN_MAX_ATTRS];
    int32_t arg0;             /* args[arg0 .. arg0 + nin + nout) */
} sev;

typedef struct {
    jn_rp_match_arg a;
    int64_t shape[JN_MAX_DIMS];
} sarg;

typedef struct {
    int32_t ev0, nev;         /* events of the segment */
    int entry;                /* 0 step start, else the JN_SYNC_* before it */
} sseg;

typedef struct {
    sev *ev; int64_t nev, capev;
    sarg *arg; int64_t narg, caparg;
    sseg *seg; int64_t nseg, capseg;
    int32_t cur0;             /* first event of the open segment */
    int entry;                /* what the open segment started after */
} stream;

static void *grow(void *p, int64_t *cap, int64_t n, size_t es) {
    if (n <= *cap) return p;
    int64_t nc = *cap ? *cap * 2 : 64;
    while (nc < n) nc *= 2;
    void *q = realloc(p, (size_t)nc * es);
    if (!q) abort();
    *cap = nc;
    return q;
}

/* A sync of kind `exit` (0: the step ended) closes the open segment; a
 * sync that closes an empty one leaves the next starting where it did (as
 * the analyzer's segment.c and replay.c's jn_rp_sync). */
static void close_seg(stream *s, int exit, int sync) {
    int empty = (int32_t)s->nev == s->cur0;
    if (!empty) {
        s->seg = grow(s->seg, &s->capseg, s->nseg + 1, sizeof *s->seg);
        s->seg[s->nseg++] = (sseg){s->cur0, (int32_t)s->nev - s->cur0, s->entry};
    }
    s->cur0 = (int32_t)s->nev;
    if (!(sync && empty)) s->entry = exit;
}

static jn_status collect(void *ctx, const jn_an_event *e) {
    stream *s = ctx;
    if (e->kind != JN_EV_OP) {
        close_seg(s, e->kind == JN_EV_SYNC ? e->sync_kind : 0, e->kind == JN_EV_SYNC);
        return JN_OK;
    }
    s->ev = grow(s->ev, &s->capev, s->nev + 1, sizeof *s->ev);
    s->arg = grow(s->arg, &s->caparg, s->narg + e->nin + e->nout, sizeof *s->arg);
    sev *x = &s->ev[s->nev++];
    x->op = e->op;
    x->nin = e->nin;
    x->nout = e->nout;
    memset(x->attrs, 0, sizeof x->attrs);
    memcpy(x->attrs, e->attrs, sizeof(jn_attr) * (size_t)e->nattrs);
    x->arg0 = (int32_t)s->narg;
    for (int j = 0; j < e->nin + e->nout; j++) {
        const jn_an_tref *t = j < e->nin ? &e->in[j] : &e->out[j - e->nin];
        sarg *a = &s->arg[s->narg++];
        memset(a, 0, sizeof *a);
        a->a.id = (uint64_t)t->id;
        a->a.ndim = t->ndim;
        a->a.dtype = t->dtype;
        a->a.device = t->device;
        memcpy(a->shape, t->shape, sizeof(int64_t) * t->ndim);
        if (t->role == JN_TR_SCALAR) {
            a->a.pytype = t->pytype ? t->pytype : 2;
            a->a.scalar = t->scalar;
        }
    }
    return JN_OK;
}

static void stream_free(stream *s) { free(s->ev), free(s->arg), free(s->seg); }

/* The differential test of the single-cursor fast path: every stream fed
 * to the loaded matcher (`fast`, fast path on) is fed in lockstep to a
 * second matcher of the same section with it off (`twin`); both must
 * decide every event and every segment's end the same. */
static jn_rp_matcher *fast, *twin;
static int64_t twin_events, twin_differ;

static int same_num(double a, double b) { return a == b || (isnan(a) && isnan(b)); }

static void same_result(jn_rp_match_kind ka, const jn_rp_match_result *a,
                        jn_rp_match_kind kb, const jn_rp_match_result *b, int at_end) {
    int ok = ka == kb && a->kind == b->kind;
    if (ok && ka == JN_RP_MATCH_MISS)
        ok = a->graph == b->graph && a->guard == b->guard && a->token == b->token && a->event == b->event &&
             same_num(a->seen, b->seen) && !strcmp(a->why ? a->why : "", b->why ? b->why : "");
    if (ok && ka == JN_RP_MATCH_COMPLETE) ok = a->graph == b->graph;
    if (ok && ka == JN_RP_MATCH_COMPLETE && at_end) {
        ok = a->nevents == b->nevents && a->nextrap == b->nextrap;
        for (int64_t e = 0; ok && e < a->nevents; e++) ok = a->ev_token[e] == b->ev_token[e];
        for (int32_t x = 0; ok && x < a->nextrap; x++)
            ok = a->extrap[x].guard == b->extrap[x].guard && same_num(a->extrap[x].seen, b->extrap[x].seen);
    }
    twin_differ += !ok;
    if (!ok)
        fprintf(stderr, "fast path and full matcher differ (%s): kinds %d / %d, graphs %d / %d, %s / %s\n",
                at_end ? "end" : "feed", ka, kb, a->graph, b->graph, ka == JN_RP_MATCH_MISS ? a->why : "-",
                kb == JN_RP_MATCH_MISS ? b->why : "-");
}

/* The bindings of two COMPLETE ends of graph gi. */
static void same_bindings(const jn_ir_module *m, const jn_rp_match_result *a, const jn_rp_match_result *b) {
    const jn_ir_graph *g = m->graphs[a->graph];
    int ok = 1;
    for (int32_t q = 0; ok && q < g->nsyms; q++) ok = a->syms[q] == b->syms[q];
    for (int32_t i = 0; ok && i < g->ninputs; i++)
        ok = a->inputs[i] == b->inputs[i] && same_num(a->scalars[i], b->scalars[i]) &&
             a->input_event[i] == b->input_event[i] && a->input_arg[i] == b->input_arg[i];
    twin_differ += !ok;
    if (!ok) fprintf(stderr, "fast path and full matcher bind graph %s differently\n", g->name);
}

static const jn_ir_module *twin_module;

/* The batch path (jn_rp_match_known / jn_rp_match_feed_at, replay/region.c)
 * in the same lockstep: `fast` is fed every event with the checks
 * jn_rp_match_known says hold left out, given each input's maker as the
 * stream shows it (the event that output the id, while one cursor was left,
 * at the token it matched, in the same loop iteration); the twin checks
 * everything.  A check left out wrongly shows as a different decision on
 * the mutated streams (another tensor, shape or value), whose misses the
 * twin still finds. */
typedef struct {
    uint64_t id;
    uint32_t gen;                     /* the segment it was made in (makers_gen) */
    int32_t graph, tok, loop;
    int64_t it;
    uint8_t q;
} maker;
enum { NMAKER = 1 << 14 };
static maker makers[NMAKER];          /* open addressing by id; an entry of an earlier segment is free */
static uint32_t makers_gen = 1;
static int64_t known_events, known_skips;

static maker *maker_of(uint64_t id, int add) {
    for (uint64_t h = (id * 0x9E3779B97F4A7C15ull) >> 50, n = 0; n < NMAKER; h = (h + 1) & (NMAKER - 1), n++) {
        if (makers[h].gen != makers_gen) return add ? &makers[h] : NULL;
        if (makers[h].id == id) return &makers[h];
    }
    return NULL;
}

static jn_rp_match_kind known_feed(jn_rp_matcher *mt, const jn_rp_match_event *ev, jn_rp_match_result *res) {
    jn_rp_match_at at;
    if (!jn_rp_match_where(mt, &at)) return jn_rp_match_feed(mt, ev, res);
    int32_t ptok[JN_MAX_INS];
    uint8_t pout[JN_MAX_INS];
    for (int j = 0; j < ev->nin && j < JN_MAX_INS; j++) {
        const maker *w = ev->in[j].pytype ? NULL : maker_of(ev->in[j].id, 0);
        int ok = w && w->graph == at.graph && w->loop == at.loop && w->it == at.it;
        ptok[j] = ok ? w->tok : -1;
        pout[j] = ok ? w->q : 0;
    }
    jn_rp_match_known_op o = {ev->op, ev->nin, ptok, pout, ev->attrs};
    uint64_t skip = ev->nin <= JN_MAX_INS ? jn_rp_match_known(mt, at.graph, at.pos, &o) : 0;
    known_skips += __builtin_popcountll(skip);
    jn_rp_match_kind k = jn_rp_match_feed_at(mt, ev, &at, skip, res);
    jn_rp_match_at a;
    if (k != JN_RP_MATCH_MISS && jn_rp_match_where(mt, &a))
        for (int q = 0; q < ev->nout; q++) {
            maker *w = maker_of(ev->out[q].id, 1);
            if (w) *w = (maker){ev->out[q].id, makers_gen, a.graph, a.pos - 1, a.loop, a.it, (uint8_t)q};
        }
    known_events++;
    return k;
}

/* jn_rp_match_expects (the peek replay's reshape asks) in the same lockstep:
 * before an event that one cursor then matches inside one loop iteration
 * (or outside loops), the peek for its op and first input says yes, and
 * for another op no. */
static int64_t expects_checked;

static jn_rp_match_kind twin_feed(jn_rp_matcher *mt, const jn_rp_match_event *ev, jn_rp_match_result *res) {
    jn_rp_match_kind k = mt == fast && twin ? known_feed(mt, ev, res) : jn_rp_match_feed(mt, ev, res);
    if (mt == fast && twin) {
        jn_rp_match_result r2;
        jn_rp_match_at b, a;
        int one = ev->nin >= 1 && !ev->in[0].pytype && jn_rp_match_where(twin, &b) && b.nev > 0;
        int yes = one && jn_rp_match_expects(twin, ev->op, ev->in[0].id);
        int other = one && jn_rp_match_expects(twin, (jn_op)((ev->op + 1) % JN_NOPS), ev->in[0].id);
        jn_rp_match_kind k2 = jn_rp_match_feed(twin, ev, &r2);
        twin_events++;
        same_result(k, res, k2, &r2, 0);
        if (one && k2 != JN_RP_MATCH_MISS && jn_rp_match_where(twin, &a) && a.graph == b.graph &&
            a.loop == b.loop && a.it == b.it && a.pos == b.pos + 1) {
            CHECK(yes);
            CHECK(!other);
            expects_checked++;
        }
    }
    return k;
}

static jn_rp_match_kind twin_end(jn_rp_matcher *mt, jn_rp_match_result *res) {
    jn_rp_match_kind k = jn_rp_match_end(mt, res);
    if (mt == fast && twin) {
        jn_rp_match_result r2;
        jn_rp_match_kind k2 = jn_rp_match_end(twin, &r2);
        same_result(k, res, k2, &r2, 1);
        if (k == JN_RP_MATCH_COMPLETE && k2 == k && res->graph == r2.graph) same_bindings(twin_module, res, &r2);
    }
    return k;
}

static void twin_begin(jn_rp_matcher *mt, int entry) {
    if (mt == fast && twin) makers_gen++;
    jn_rp_match_begin(mt, entry);
    if (mt == fast && twin) jn_rp_match_begin(twin, entry);
}

/* Feed segment k of s (args possibly replaced by `args`); returns end()'s kind. */
/* Whether dim d uses symbol y (through its expression). */
static int dim_uses(const jn_ir_graph *g, jn_ir_dim d, int32_t y) {
    if (!jn_ir_is_expr(d)) return 0;
    const jn_ir_expr *e = &g->exprs[jn_ir_expr_index(d)];
    return e->kind == JN_IR_E_SYM ? e->sym == y : dim_uses(g, e->a, y) || dim_uses(g, e->b, y);
}

/* An extent symbol (analyzer/generalize.c gen_extent): one that sizes no
 * node's output, only inputs' dims read through indices -- those dims may
 * change alone (more data than recorded), a hit. */
static int sym_is_extent(const jn_ir_graph *g, int32_t y) {
    for (int32_t n = 0; n < g->nnodes; n++)
        for (int32_t j = 0; j < g->nodes[n].nout; j++) {
            const jn_ir_value *v = &g->values[g->nodes[n].out[j]];
            for (int d = 0; d < v->ndim; d++)
                if (dim_uses(g, v->shape[d], y)) return 0;
        }
    return 1;
}

static jn_rp_match_kind feed_seg(jn_rp_matcher *mt, const stream *s, const sarg *args, int64_t k,
                                 jn_rp_match_result *res) {
    jn_rp_match_arg buf[2 * 300];
    const sseg *g = &s->seg[k];
    int32_t alive[64], nalive = -1; /* what replay chooses a segment's mode by, after its first op */
    twin_begin(mt, g->entry);
    CHECK(jn_rp_match_alive(mt, alive, 64) == 0);
    for (int32_t i = g->ev0; i < g->ev0 + g->nev; i++) {
        const sev *x = &s->ev[i];
        int n = x->nin + x->nout;
        jn_rp_match_arg *a = n <= 600 ? buf : malloc(sizeof *a * (size_t)n);
        for (int j = 0; j < n; j++) {
            a[j] = args[x->arg0 + j].a;
            a[j].shape = args[x->arg0 + j].shape;
        }
        jn_rp_match_event ev = {x->op, x->attrs, x->nin, x->nout, a, a + x->nin};
        jn_rp_match_kind r = twin_feed(mt, &ev, res);
        if (a != buf) free(a);
        if (r == JN_RP_MATCH_MISS) {
            CHECK(jn_rp_match_alive(mt, alive, 64) == 0);
            jn_rp_match_result r2;
            twin_end(mt, &r2);
            return JN_RP_MATCH_MISS;
        }
        if (nalive < 0) CHECK((nalive = jn_rp_match_alive(mt, alive, 64)) > 0);
    }
    jn_rp_match_kind k2 = twin_end(mt, res);
    if (k2 == JN_RP_MATCH_COMPLETE) { /* the graph it became was among those it could become */
        int in = 0;
        for (int32_t j = 0; j < nalive; j++) in |= alive[j] == res->graph;
        CHECK(in);
    }
    return k2;
}

/* ----------------------------------------------------------- helpers */
typedef struct {
    jn_ir_module *m;          /* the loaded bundle's module (post-passes) */
    jn_cg_bundle *b;
    jn_rp_matcher *mt;
    void *payload;
} loaded;

static int load(const char *path, loaded *L, jn_ir_module **an_out) {
    memset(L, 0, sizeof *L);
    jn_db *db = NULL;
    if (jn_db_open(path, JN_DB_READONLY, &db)) {
        fprintf(stderr, "%s\n", jn_errmsg());
        return -1;
    }
    jn_an_options opt = {0, NULL, NULL};
    jn_an_stats st;
    jn_ir_module *m = NULL;
    jn_status s = jn_an_analyze(db, &opt, &m, &st);
    jn_db_close(db);
    if (s) {
        fprintf(stderr, "analyze: %s\n", jn_errmsg());
        return -1;
    }
    for (int i = 0; i < jn_an_matcher_missing_count(); i++) fprintf(stderr, "  %s\n", jn_an_matcher_missing(i));
    void *sec = NULL;
    size_t len = 0;
    CHECK(jn_an_matcher_section(&sec, &len) == JN_OK);
    jn_cg_options co;
    jn_cg_options_from_env(&co);
    co.verify_each = 1;
    CHECK(jn_cg_optimize(m, &co, NULL) == JN_OK);
    jn_cg_bundle_meta meta = {0};
    jn_cg_bundle_section bs = {JN_CG_SEC_MATCHER, 0, "", sec, len};
    size_t plen = 0;
    CHECK(jn_cg_bundle_build(m, &meta, &bs, 1, &L->payload, &plen) == JN_OK);
    free(sec);
    if (an_out) *an_out = m;
    else jn_ir_module_free(m);
    if (jn_cg_bundle_load(L->payload, plen, NULL, &L->b)) {
        fprintf(stderr, "bundle: %s\n", jn_errmsg());
        return -1;
    }
    L->m = L->b->module;
    const jn_cg_bundle_section *ms = jn_cg_bundle_section_find(L->b, JN_CG_SEC_MATCHER);
    CHECK(ms != NULL);
    if (!ms || jn_rp_match_new(L->m, ms->data, ms->len, &L->mt)) {
        fprintf(stderr, "matcher: %s\n", jn_errmsg());
        return -1;
    }
    return 0;
}

static void unload(loaded *L) {
    jn_rp_match_free(L->mt);
    jn_cg_bundle_free(L->b);
    free(L->payload);
}

static double now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e9 + ts.tv_nsec;
}

/* The recorded shape of the tensor with identity id in segment k (NULL). */
static const sarg *find_arg(const stream *s, int64_t k, uint64_t id) {
    const sseg *g = &s->seg[k];
    for (int32_t i = g->ev0; i < g->ev0 + g->nev; i++)
        for (int j = 0; j < s->ev[i].nin + s->ev[i].nout; j++) {
            const sarg *a = &s->arg[s->ev[i].arg0 + j];
            if (!a->a.pytype && a->a.id == id) return a;
        }
    return NULL;
}

/* ns to feed every segment of s, each the best of 7 back-to-back feeds. */
static double warm_ns(jn_rp_matcher *mt, const stream *s, const jn_rp_match_event *evs) {
    double warm = 0;
    for (int64_t k = 0; k < s->nseg; k++) {
        double bk = 1e30;
        for (int rep = 0; rep < 7; rep++) {
            jn_rp_match_result r;
            double t0 = now_ns();
            jn_rp_match_begin(mt, s->seg[k].entry);
            for (int32_t i = s->seg[k].ev0; i < s->seg[k].ev0 + s->seg[k].nev; i++) jn_rp_match_feed(mt, &evs[i], &r);
            jn_rp_match_end(mt, &r);
            double t = now_ns() - t0;
            if (t < bk) bk = t;
        }
        warm += bk;
    }
    return warm;
}

/* --------------------------------------------------------- replay */
static int replay(const char *path, const char *other) {
    loaded L;
    if (load(path, &L, NULL)) {
        CHECK(0);
        return 1;
    }
    const jn_ir_module *m = L.m;
    const jn_cg_bundle_section *ms = jn_cg_bundle_section_find(L.b, JN_CG_SEC_MATCHER);
    CHECK(jn_rp_match_new(L.m, ms->data, ms->len, &twin) == JN_OK);
    jn_rp_match_set_fast(twin, 0);
    fast = L.mt;
    twin_module = L.m;
    stream s;
    memset(&s, 0, sizeof s);
    jn_db *db = NULL;
    CHECK(jn_db_open(path, JN_DB_READONLY, &db) == JN_OK);
    CHECK(jn_an_events(db, 0, collect, &s) == JN_OK);
    jn_db_close(db);
    close_seg(&s, 0, 0);

    int64_t hits = 0, misses = 0, support = 0, shape_ok = 0, shape_bad = 0, outs_ok = 0, outs_bad = 0;
    int64_t binds_ok = 0, binds_bad = 0;
    int64_t *ghits = calloc((size_t)m->ngraphs + 1, sizeof *ghits);
    int32_t *seg_graph = malloc(sizeof(int32_t) * ((size_t)s.nseg + 1));
    for (int32_t gi = 0; gi < m->ngraphs; gi++)
        if (jn_rp_match_ntokens(L.mt, gi) > 0) support += m->graphs[gi]->support;
    for (int64_t k = 0; k < s.nseg; k++) {
        jn_rp_match_result r;
        seg_graph[k] = -1;
        if (feed_seg(L.mt, &s, s.arg, k, &r) == JN_RP_MATCH_COMPLETE) {
            hits++;
            ghits[r.graph]++;
            seg_graph[k] = r.graph;
            /* the symbol values reproduce every bound input's recorded shape */
            const jn_ir_graph *g = m->graphs[r.graph];
            for (int32_t i = 0; i < g->ninputs; i++) {
                int32_t etok;
                int earg;
                if (jn_rp_match_input_each(L.mt, r.graph, i, &etok, &earg)) {
                    /* a stacked input: its first reader's events, one per
                     * iteration, each a tensor of the element's shape */
                    const jn_ir_value *v = &g->values[g->inputs[i].value];
                    int64_t n = 0, trip = -1;
                    int ok = jn_ir_dim_eval(g, v->shape[0], r.syms, &trip) == JN_OK;
                    for (int64_t e = 0; ok && e < r.nevents; e++) {
                        if (r.ev_token[e] != etok) continue;
                        const sev *x = &s.ev[s.seg[k].ev0 + e];
                        const sarg *a = &s.arg[x->arg0 + earg];
                        ok = !a->a.pytype && a->a.ndim + 1 == v->ndim;
                        for (int d = 1; ok && d < v->ndim; d++) {
                            int64_t xv = 0;
                            ok = jn_ir_dim_eval(g, v->shape[d], r.syms, &xv) == JN_OK && xv == a->shape[d - 1];
                        }
                        n++;
                    }
                    if (ok && n == trip) shape_ok++;
                    else shape_bad++;
                    continue;
                }
                if (!r.inputs[i]) continue;
                const sarg *a = find_arg(&s, k, r.inputs[i]);
                const jn_ir_value *v = &g->values[g->inputs[i].value];
                int ok = a && a->a.ndim == v->ndim;
                for (int d = 0; ok && d < v->ndim; d++) {
                    int64_t x = 0;
                    ok = jn_ir_dim_eval(g, v->shape[d], r.syms, &x) == JN_OK && x == a->shape[d];
                }
                if (ok) shape_ok++;
                else shape_bad++;
            }
            /* every input's event and argument hold the bound tensor or number */
            for (int32_t i = 0; i < g->ninputs; i++) {
                int32_t etok;
                int earg;
                if (r.input_event[i] < 0 || jn_rp_match_input_each(L.mt, r.graph, i, &etok, &earg)) continue;
                const sev *x = &s.ev[s.seg[k].ev0 + r.input_event[i]];
                int32_t a = r.input_arg[i];
                if (a <= -100) {
                    binds_ok += x->attrs[-100 - a].f == r.scalars[i];
                    binds_bad += x->attrs[-100 - a].f != r.scalars[i];
                    continue;
                }
                const sarg *q = &s.arg[x->arg0 + (a >= 0 ? a : x->nin + (-1 - a))];
                int ok = q->a.pytype ? q->a.scalar == r.scalars[i] || (isnan(q->a.scalar) && isnan(r.scalars[i]))
                                     : q->a.id == r.inputs[i];
                binds_ok += ok;
                binds_bad += !ok;
                if (!ok && getenv("JN_MATCH_VERBOSE"))
                    fprintf(stderr, "segment %lld: input %d bound at event %lld arg %d: recorded %s %g id %llu\n",
                            (long long)k, i, (long long)r.input_event[i], a, q->a.pytype ? "scalar" : "tensor",
                            q->a.scalar, (unsigned long long)q->a.id);
            }
            /* every token output a graph output holds: a KEEP output of the
             * shape that tensor was recorded with */
            for (int64_t e = 0; e < r.nevents; e++) {
                const sev *x = &s.ev[s.seg[k].ev0 + e];
                for (int q = 0; q < x->nout; q++) {
                    int all;
                    int32_t go = jn_rp_match_token_output(L.mt, r.graph, r.ev_token[e], q, &all);
                    if (go < 0) continue;
                    const sarg *a = &s.arg[x->arg0 + x->nin + q];
                    const jn_ir_value *v = &g->values[g->outputs[go].value];
                    /* a collect of every iteration's object: [trip, ...] of its shape */
                    int ok = g->outputs[go].kind == JN_IR_OUT_KEEP && a->a.ndim + all == v->ndim &&
                             a->a.dtype == v->dtype;
                    for (int d = 0; ok && d < a->a.ndim; d++) {
                        int64_t xv = 0;
                        ok = jn_ir_dim_eval(g, v->shape[d + all], r.syms, &xv) == JN_OK && xv == a->shape[d];
                    }
                    if (ok) outs_ok++;
                    else outs_bad++;
                    if (!ok && getenv("JN_MATCH_VERBOSE"))
                        fprintf(stderr, "segment %lld: event %lld (token %d) output %d -> graph output %d: not "
                                "a KEEP output of the recorded shape\n", (long long)k, (long long)e,
                                r.ev_token[e], q, go);
                }
            }
        } else {
            misses++;
            if (getenv("JN_MATCH_VERBOSE")) {
                fprintf(stderr, "segment %lld: miss at event %lld: %s\n  ops:", (long long)k, (long long)r.event,
                        r.why);
                for (int64_t x = r.event - 12; x < r.event + 3; x++)
                    if (x >= 0 && x < s.seg[k].nev)
                        fprintf(stderr, " %s%s", x == r.event ? "*" : "", jn_op_info(s.ev[s.seg[k].ev0 + x].op)->name);
                fprintf(stderr, "\n");
            }
        }
    }
    CHECK(hits == support);
    CHECK(shape_bad == 0);
    CHECK(outs_bad == 0);
    CHECK(binds_bad == 0);
    CHECK(hits > 0 || support == 0);
    for (int32_t gi = 0; gi < m->ngraphs; gi++)
        if (jn_rp_match_ntokens(L.mt, gi) > 0 && ghits[gi] != m->graphs[gi]->support)
            fprintf(stderr, "graph %s: %lld hits, support %lld\n", m->graphs[gi]->name, (long long)ghits[gi],
                    (long long)m->graphs[gi]->support);

    /* JN_MATCH_BENCH=only: the timing alone (benchmarks/bench_match.py) */
    int bench_only = getenv("JN_MATCH_BENCH") && !strcmp(getenv("JN_MATCH_BENCH"), "only");
    /* mutations, on the first hit segment of each graph */
    int nsym = 0, nseen = 0, nop = 0, nscalar = 0, nspecial = 0, nbind = 0, ntrip = 0, nother = 0, crashfree = 1;
    sarg *mut = malloc(sizeof *mut * ((size_t)s.narg + 1));
    for (int32_t gi = 0; gi < m->ngraphs && !bench_only; gi++) {
        int64_t k = -1;
        for (int64_t q = 0; q < s.nseg && k < 0; q++)
            if (seg_graph[q] == gi) k = q;
        if (k < 0) continue;
        const jn_ir_graph *g = m->graphs[gi];
        jn_rp_match_result r;
        CHECK(feed_seg(L.mt, &s, s.arg, k, &r) == JN_RP_MATCH_COMPLETE);
        uint64_t *ids = malloc(sizeof *ids * ((size_t)g->ninputs + 1));
        int64_t *syms = malloc(sizeof *syms * ((size_t)g->nsyms + 1));
        memcpy(ids, r.inputs, sizeof *ids * (size_t)g->ninputs);
        memcpy(syms, r.syms, sizeof *syms * (size_t)g->nsyms);
        const sseg *sg = &s.seg[k];
        /* (a) a dim symbol's input dim changed where the ops' outputs were
         * not: the graph's shape relations fail (an output's shape, or
         * another dim bound to the symbol), a miss, never a hit */
        for (int32_t i = 0; i < g->ninputs && !nsym; i++) {
            if (!ids[i]) continue;
            const jn_ir_value *v = &g->values[g->inputs[i].value];
            for (int d = 0; d < v->ndim && !nsym; d++) {
                if (!jn_ir_is_expr(v->shape[d])) continue;
                const jn_ir_expr *e = &g->exprs[jn_ir_expr_index(v->shape[d])];
                if (e->kind != JN_IR_E_SYM || sym_is_extent(g, e->sym)) continue;
                int64_t hi = g->syms[e->sym].hi;
                memcpy(mut, s.arg, sizeof *mut * (size_t)s.narg);
                for (int32_t x = sg->ev0; x < sg->ev0 + sg->nev; x++)
                    for (int j = 0; j < s.ev[x].nin + s.ev[x].nout; j++) {
                        sarg *a = &mut[s.ev[x].arg0 + j];
                        if (!a->a.pytype && a->a.id == ids[i]) a->shape[d] = hi + 1;
                    }
                jn_rp_match_kind rk = feed_seg(L.mt, &s, mut, k, &r);
                CHECK(rk == JN_RP_MATCH_MISS);
                if (rk == JN_RP_MATCH_MISS && r.graph == gi && r.why &&
                    (strstr(r.why, "where the graph computes") || strstr(r.why, "another dim of this graph"))) {
                    nsym++;
                    if (getenv("JN_MATCH_VERBOSE")) fprintf(stderr, "  shape miss: %s\n", r.why);
                } else {
                    fprintf(stderr, "graph %s: a dim changed alone: %s\n", g->name, r.why ? r.why : "(complete)");
                }
            }
        }
        /* (a') a symbol's recorded range narrowed below this segment's
         * value (the matcher reads the module's guards, so an edited
         * module stands for a shorter recording): SEEN, an extrapolated
         * hit naming the guard and the value; as a NEED guard, a miss */
        for (int32_t q = 0; q < g->nguards && !nseen; q++) {
            jn_ir_guard *sgd = &g->guards[q];
            if (sgd->kind != JN_IR_G_SYM || sgd->sym < 0 || sgd->cls != JN_IR_GC_SEEN) continue;
            int64_t val = syms[sgd->sym], lo = sgd->lo, hi = sgd->hi;
            if (val <= INT64_MIN + 2) continue;
            sgd->lo = lo < val - 1 ? lo : val - 2;
            sgd->hi = val - 1;
            jn_rp_match_kind rk = feed_seg(L.mt, &s, s.arg, k, &r);
            int ok = rk == JN_RP_MATCH_COMPLETE && r.graph == gi;
            int named = 0;
            for (int32_t x = 0; ok && x < r.nextrap; x++) named |= r.extrap[x].guard == q && r.extrap[x].seen == (double)val;
            CHECK(ok && named);
            sgd->cls = JN_IR_GC_NEED;
            rk = feed_seg(L.mt, &s, s.arg, k, &r);
            CHECK(rk == JN_RP_MATCH_MISS); /* (a variant that got further may be the one reported) */
            if (ok && named && rk == JN_RP_MATCH_MISS && r.guard == q && r.seen == (double)val) {
                nseen++;
                if (getenv("JN_MATCH_VERBOSE")) fprintf(stderr, "  sym miss (as NEED): %s\n", r.why);
                char want[64];
                snprintf(want, sizeof want, "was %lld", (long long)val);
                CHECK(strstr(r.why, want) != NULL && strstr(r.why, g->syms[sgd->sym].name) != NULL);
            }
            sgd->cls = JN_IR_GC_SEEN;
            sgd->lo = lo;
            sgd->hi = hi;
        }
        /* (b) another op in the middle */
        {
            memcpy(mut, s.arg, sizeof *mut * (size_t)s.narg);
            stream s2 = s;
            sev *ev2 = malloc(sizeof *ev2 * ((size_t)s.nev + 1));
            memcpy(ev2, s.ev, sizeof *ev2 * (size_t)s.nev);
            int32_t mid = sg->ev0 + sg->nev / 2;
            ev2[mid].op = (jn_op)((ev2[mid].op + 1) % JN_NOPS);
            s2.ev = ev2;
            jn_rp_match_kind rk = feed_seg(L.mt, &s2, mut, k, &r);
            CHECK(rk == JN_RP_MATCH_MISS);
            /* the graph itself misses at the op; a variant that got further may be the one reported */
            if (rk == JN_RP_MATCH_MISS && r.why && (r.graph != gi || (r.guard == -1 && strstr(r.why, "the script ran"))))
                nop++;
            else
                fprintf(stderr, "graph %s: another op: %s\n", g->name, r.why ? r.why : "(complete)");
            free(ev2);
        }
        /* (c) another value of a Python number, one at a time: fed at run
         * time, so still a hit, the scalar input bound to the new value
         * (a number whose value decides an int attribute, e.g. arange's
         * length, misses on that attribute or the output's shape instead);
         * one a codegen pass specialised on misses on its NEED guard */
        for (int32_t x = sg->ev0; x < sg->ev0 + sg->nev; x++)
            for (int j = 0; j < s.ev[x].nin; j++) {
                const sarg *a0 = &s.arg[s.ev[x].arg0 + j];
                if (!a0->a.pytype || a0->a.pytype == 3) continue;
                memcpy(mut, s.arg, sizeof *mut * (size_t)s.narg);
                mut[s.ev[x].arg0 + j].a.scalar = a0->a.scalar + 2;
                jn_rp_match_kind rk = feed_seg(L.mt, &s, mut, k, &r);
                crashfree &= rk == JN_RP_MATCH_MISS || rk == JN_RP_MATCH_COMPLETE;
                if (rk == JN_RP_MATCH_MISS && r.graph == gi && r.guard >= 0 && g->guards[r.guard].kind == JN_IR_G_SCALAR) {
                    CHECK(g->guards[r.guard].cls == JN_IR_GC_NEED && r.seen == a0->a.scalar + 2 &&
                          g->guards[r.guard].note && strstr(g->guards[r.guard].note, "specialised by"));
                    if (!nspecial && getenv("JN_MATCH_VERBOSE")) fprintf(stderr, "  special miss: %s\n", r.why);
                    nspecial++;
                }
                if (rk != JN_RP_MATCH_COMPLETE || r.graph != gi) continue;
                int fed = 0;
                for (int32_t i = 0; i < g->ninputs; i++)
                    fed |= g->inputs[i].kind == JN_IR_IN_SCALAR && r.input_event[i] == x - sg->ev0 &&
                           r.input_arg[i] == j && r.scalars[i] == a0->a.scalar + 2;
                CHECK(fed);
                if (fed && !nscalar && getenv("JN_MATCH_VERBOSE"))
                    fprintf(stderr, "  scalar fed: event %d input %d = %g\n", (int)(x - sg->ev0), j, a0->a.scalar + 2);
                nscalar += fed;
            }
        /* (d) another state tensor: bound as any input (the graph computes
         * from it and writes it back, as eager would), a hit */
        for (int32_t i = 0; i < g->ninputs; i++) {
            if (!ids[i] || g->inputs[i].kind != JN_IR_IN_STATE || !g->inputs[i].bind) continue;
            memcpy(mut, s.arg, sizeof *mut * (size_t)s.narg);
            for (int32_t x = sg->ev0; x < sg->ev0 + sg->nev; x++)
                for (int j = 0; j < s.ev[x].nin + s.ev[x].nout; j++) {
                    sarg *a = &mut[s.ev[x].arg0 + j];
                    if (!a->a.pytype && a->a.id == ids[i]) a->a.id = ids[i] + (1ull << 40);
                }
            jn_rp_match_kind rk = feed_seg(L.mt, &s, mut, k, &r);
            CHECK(rk == JN_RP_MATCH_COMPLETE && r.graph == gi && r.inputs[i] == ids[i] + (1ull << 40));
            if (rk == JN_RP_MATCH_COMPLETE && r.graph == gi && r.inputs[i] == ids[i] + (1ull << 40)) nbind++;
            else fprintf(stderr, "graph %s: another state tensor: %s\n", g->name, r.why ? r.why : "(complete)");
            break;
        }
        /* (e) a trip count out of range: the loop's TRIP guard narrowed
         * below what this segment ran (the matcher reads the module's
         * guards, so an edited module stands for a shorter recording):
         * the loop runs on, an extrapolated hit naming the guard; the same
         * guard as NEED misses there */
        for (int32_t q = 0; q < g->nguards && !ntrip; q++) {
            jn_ir_guard *tg = &g->guards[q];
            if (tg->kind != JN_IR_G_TRIP || tg->loop < 0 || tg->loop >= g->nloops) continue;
            int64_t n = 0;
            if (jn_ir_dim_eval(g, g->loops[tg->loop].trip, syms, &n) != JN_OK || n < 1) continue;
            int64_t lo = tg->lo, hi = tg->hi;
            tg->lo = n - 1 < lo ? n - 1 : lo;
            tg->hi = n - 1;
            jn_rp_match_kind rk = feed_seg(L.mt, &s, s.arg, k, &r);
            int named = 0;
            for (int32_t x = 0; rk == JN_RP_MATCH_COMPLETE && x < r.nextrap; x++)
                named |= r.extrap[x].guard == q && r.extrap[x].seen == (double)n;
            CHECK(rk == JN_RP_MATCH_COMPLETE && r.graph == gi && named);
            tg->cls = JN_IR_GC_NEED;
            jn_rp_match_kind rk2 = feed_seg(L.mt, &s, s.arg, k, &r);
            CHECK(rk2 == JN_RP_MATCH_MISS);
            if (named && rk2 == JN_RP_MATCH_MISS && r.guard == q && r.seen == (double)n) {
                if (getenv("JN_MATCH_VERBOSE")) fprintf(stderr, "  trip miss (as NEED): %s\n", r.why);
                ntrip++;
            } else {
                fprintf(stderr, "graph %s: trip out of range: %s\n", g->name, r.why ? r.why : "(complete)");
            }
            tg->cls = JN_IR_GC_SEEN;
            tg->lo = lo;
            tg->hi = hi;
        }
        free(ids);
        free(syms);
    }
    CHECK(crashfree);
    CHECK(nop > 0 || bench_only || hits == 0);
    /* (f) the stream of another script */
    int64_t ohits = 0, omiss = 0;
    if (other && !bench_only) {
        stream o;
        memset(&o, 0, sizeof o);
        CHECK(jn_db_open(other, JN_DB_READONLY, &db) == JN_OK);
        CHECK(jn_an_events(db, 0, collect, &o) == JN_OK);
        jn_db_close(db);
        close_seg(&o, 0, 0);
        for (int64_t k = 0; k < o.nseg; k++) {
            jn_rp_match_result r;
            if (feed_seg(L.mt, &o, o.arg, k, &r) == JN_RP_MATCH_COMPLETE) {
                ohits++;
                for (int32_t x = 0; x < r.nextrap && getenv("JN_MATCH_VERBOSE"); x++) {
                    char b[512];
                    fprintf(stderr, "other segment %lld: extrapolated: %s\n", (long long)k,
                            jn_ir_guard_explain(m, m->graphs[r.graph], r.extrap[x].guard, &r.extrap[x].seen, b, sizeof b));
                }
            } else {
                omiss++;
                CHECK(r.why && *r.why);
                if (getenv("JN_MATCH_VERBOSE")) fprintf(stderr, "other segment %lld: miss: %s\n", (long long)k, r.why);
            }
        }
        nother = omiss > 0;
        stream_free(&o);
    }
    /* (g) state binds no recorded id: the stream with every tensor id
     * moved (a script that made more tensors before its model, or before
     * its optimizer state) hits wherever the stream did, in a fresh
     * matcher; and two state inputs of a hit given one tensor miss, saying
     * so (the recording's aliasing is what a hit keeps) */
    int nshift = 0, ntied = 0;
    if (!bench_only && hits > 0) {
        const jn_cg_bundle_section *msec = jn_cg_bundle_section_find(L.b, JN_CG_SEC_MATCHER);
        jn_rp_matcher *mt2 = NULL;
        CHECK(jn_rp_match_new(L.m, msec->data, msec->len, &mt2) == JN_OK);
        memcpy(mut, s.arg, sizeof *mut * (size_t)s.narg);
        for (int64_t x = 0; x < s.narg; x++)
            if (!mut[x].a.pytype && mut[x].a.id) mut[x].a.id += 1ull << 40;
        int64_t shits = 0;
        for (int64_t k = 0; k < s.nseg; k++) {
            jn_rp_match_result r;
            shits += feed_seg(mt2, &s, mut, k, &r) == JN_RP_MATCH_COMPLETE;
        }
        CHECK(shits == hits);
        nshift = shits == hits;
        jn_rp_match_free(mt2);
        for (int64_t k = 0; k < s.nseg && !ntied; k++) {
            if (seg_graph[k] < 0) continue;
            const jn_ir_graph *g = m->graphs[seg_graph[k]];
            jn_rp_match_result r;
            if (feed_seg(L.mt, &s, s.arg, k, &r) != JN_RP_MATCH_COMPLETE) continue;
            int32_t i1 = -1, i2 = -1;
            for (int32_t i = 0; i < g->ninputs && i2 < 0; i++) {
                if (g->inputs[i].kind != JN_IR_IN_STATE || !g->inputs[i].bind || !r.inputs[i]) continue;
                if (i1 < 0) i1 = i;
                else if (g->inputs[i].bind != g->inputs[i1].bind && r.inputs[i] != r.inputs[i1]) i2 = i;
            }
            if (i2 < 0) continue;
            uint64_t a = r.inputs[i1], b = r.inputs[i2];
            memcpy(mut, s.arg, sizeof *mut * (size_t)s.narg);
            for (int32_t x = s.seg[k].ev0; x < s.seg[k].ev0 + s.seg[k].nev; x++)
                for (int j = 0; j < s.ev[x].nin + s.ev[x].nout; j++)
                    if (!mut[s.ev[x].arg0 + j].a.pytype && mut[s.ev[x].arg0 + j].a.id == b) mut[s.ev[x].arg0 + j].a.id = a;
            CHECK(jn_rp_match_new(L.m, msec->data, msec->len, &mt2) == JN_OK);
            jn_rp_match_kind rk = feed_seg(mt2, &s, mut, k, &r);
            CHECK(rk == JN_RP_MATCH_MISS);
            if (rk == JN_RP_MATCH_MISS && r.why && strstr(r.why, "two state tensors of the recording are one")) {
                ntied++;
                if (getenv("JN_MATCH_VERBOSE")) fprintf(stderr, "  tied state miss: %s\n", r.why);
            } else {
                fprintf(stderr, "graph %s: two state inputs one tensor: %s\n", g->name, r.why ? r.why : "(complete)");
            }
            jn_rp_match_free(mt2);
        }
    }
    /* a damaged section: refused, or loaded and then fed without a crash
     * (every field the feeding loop trusts was checked at load) */
    if (!bench_only) {
        const jn_cg_bundle_section *ms = jn_cg_bundle_section_find(L.b, JN_CG_SEC_MATCHER);
        unsigned char *c = malloc(ms->len + 1);
        uint64_t rnd = 0x9e3779b97f4a7c15ull;
        int rounds = getenv("JN_MATCH_FUZZ") ? atoi(getenv("JN_MATCH_FUZZ")) : 200, loaded = 0, refused = 0;
        for (int round = 0; round < rounds; round++) {
            memcpy(c, ms->data, ms->len);
            size_t len = ms->len;
            int nflip = 1 + round % 4;
            for (int f = 0; f < nflip; f++) {
                rnd = rnd * 6364136223846793005ull + 1442695040888963407ull;
                size_t at = (size_t)(rnd >> 33) % len;
                c[at] ^= (unsigned char)(1u << ((rnd >> 20) & 7));
            }
            if (round % 10 == 9) len = (size_t)(rnd >> 40) % len;
            jn_rp_matcher *bad = NULL;
            if (jn_rp_match_new(m, c, len, &bad) != JN_OK) {
                refused++;
                CHECK(strstr(jn_errmsg(), "matcher section") != NULL);
                continue;
            }
            loaded++;
            for (int64_t k = 0; k < s.nseg && k < 6; k++) {
                jn_rp_match_result r;
                jn_rp_match_kind rk = feed_seg(bad, &s, s.arg, k, &r);
                CHECK(rk == JN_RP_MATCH_COMPLETE || (rk == JN_RP_MATCH_MISS && r.why));
            }
            jn_rp_match_free(bad);
        }
        CHECK(refused > 0);
        if (getenv("JN_MATCH_VERBOSE")) fprintf(stderr, "damaged sections: %d refused, %d loaded and fed\n", refused, loaded);
        free(c);
    }
    CHECK(twin_differ == 0); /* the fast path decides as the full matcher on every stream fed */
    printf("twin: events=%lld fast_events=%lld differ=%lld\n", (long long)twin_events,
           (long long)jn_rp_match_fast_events(twin ? fast : NULL), (long long)twin_differ);
    if (twin_events > 1000) CHECK(expects_checked > 0); /* the peek was checked, not skipped throughout */
    printf("expects: checked=%lld\n", (long long)expects_checked);
    printf("known: events=%lld fed_known=%lld checks_left_out=%lld\n", (long long)known_events,
           (long long)jn_rp_match_known_events(twin ? fast : NULL), (long long)known_skips);
    jn_rp_match_free(twin);
    twin = fast = NULL;
    /* ns per event over the whole recorded stream (hits), best of 5 */
    double ns = 0, ns_stream = 0, ns_full = 0;
    int64_t nev = 0;
    for (int64_t k = 0; k < s.nseg; k++) nev += s.seg[k].nev;
    if (getenv("JN_MATCH_BENCH")) {
        /* the events built once: only jn_rp_match_feed / _end are timed */
        jn_rp_match_event *evs = malloc(sizeof *evs * ((size_t)s.nev + 1));
        jn_rp_match_arg *as = malloc(sizeof *as * ((size_t)s.narg + 1));
        for (int64_t i = 0; i < s.narg; i++) {
            as[i] = s.arg[i].a;
            as[i].shape = s.arg[i].shape;
        }
        for (int64_t i = 0; i < s.nev; i++)
            evs[i] = (jn_rp_match_event){s.ev[i].op, s.ev[i].attrs, s.ev[i].nin, s.ev[i].nout, as + s.ev[i].arg0,
                                         as + s.ev[i].arg0 + s.ev[i].nin};
        /* the whole stream, best of 7 passes (events stream from memory) */
        double best = 1e30;
        int64_t bhits = 0;
        for (int rep = 0; rep < 7; rep++) {
            bhits = 0;
            double t0 = now_ns();
            for (int64_t k = 0; k < s.nseg; k++) {
                jn_rp_match_result r;
                jn_rp_match_begin(L.mt, s.seg[k].entry);
                for (int32_t i = s.seg[k].ev0; i < s.seg[k].ev0 + s.seg[k].nev; i++) jn_rp_match_feed(L.mt, &evs[i], &r);
                bhits += jn_rp_match_end(L.mt, &r) == JN_RP_MATCH_COMPLETE;
            }
            double t = now_ns() - t0;
            if (t < best) best = t;
        }
        ns_stream = best / (double)(nev ? nev : 1);
        /* per segment, best of 7 back-to-back feeds: the events warm in
         * cache, as a dispatcher's just-made event is; with the fast path
         * off too (ns_per_event_full: the same run's baseline) */
        jn_rp_match_set_fast(L.mt, 0);
        ns_full = warm_ns(L.mt, &s, evs) / (double)(nev ? nev : 1);
        jn_rp_match_set_fast(L.mt, 1);
        double warm = warm_ns(L.mt, &s, evs);
        best = warm;
        CHECK(bhits == hits);
        ns = best / (double)(nev ? nev : 1);
        free(evs);
        free(as);
    }
    printf("match: segments=%lld hits=%lld misses=%lld support=%lld graphs=%d programs=%d shapes_ok=%lld outputs_ok=%lld "
           "mut_sym=%d mut_seen=%d mut_op=%d mut_scalar=%d mut_special=%d mut_bind=%d mut_shift=%d mut_tied=%d mut_trip=%d "
           "other_hits=%lld other_misses=%lld "
           "events=%lld ns_per_event=%.1f ns_per_event_stream=%.1f ns_per_event_full=%.1f\n",
           (long long)s.nseg, (long long)hits, (long long)misses, (long long)support, m->ngraphs,
           jn_rp_match_ngraphs(L.mt), (long long)shape_ok, (long long)outs_ok, nsym, nseen, nop, nscalar, nspecial, nbind, nshift, ntied, ntrip, (long long)ohits,
           (long long)omiss, (long long)nev, ns, ns_stream, ns_full);
    (void)nother;
    free(mut);
    free(ghits);
    free(seg_graph);
    stream_free(&s);
    unload(&L);
    return 0;
}

/* ------------------------------------------- section loader (no store) */
static int put_le(unsigned char *p, size_t *n, uint64_t v, int bytes) {
    for (int i = 0; i < bytes; i++) p[(*n)++] = (unsigned char)(v >> (8 * i));
    return 0;
}

static void loader_tests(void) {
    /* a one-graph module and its section, written by hand; the symbol's
     * range is SEEN (extrapolated past), or NEED in a copy of it */
    const char *ir = "module optable=0000000000000000 graphs=1\n"
                     "graph g0 group=0 variant=0 parent=-1 diverge=0 support=1 steps=0..0 entry=\"step start\" "
                     "exit=\"step end\" {\n"
                     "  sym s0 dim 1..64\n"
                     "  in %0 host f32[s0, 4]\n"
                     "  %1 = relu(%0) : f32[s0, 4]\n"
                     "  out %1 keep\n"
                     "  guard sym s0 in 1..64 seen\n"
                     "  guard dtype %0 == f32 need\n"
                     "  guard device %0 == cpu need\n"
                     "}\n";
    jn_ir_module *m = NULL, *mneed = NULL;
    CHECK(jn_ir_parse(ir, strlen(ir), &m) == JN_OK);
    if (!m) return;
    char irneed[1024];
    snprintf(irneed, sizeof irneed, "%s", ir);
    memcpy(strstr(irneed, "64 seen"), "64 need", 7);
    CHECK(jn_ir_parse(irneed, strlen(irneed), &mneed) == JN_OK);
    unsigned char sec[256];
    size_t n = 0;
#define P(v, b) put_le(sec, &n, (uint64_t)(v), (b))
    memcpy(sec, "JNMT", 4);
    n = 4;
    P(JN_IR_MATCH_VERSION, 4), P(1, 4);    /* version, ngraphs */
    P(0, 4), P(0, 1);                      /* graph 0, entry: step start */
    P(1, 4), P(0, 4);                      /* 1 token, 0 loops */
    P(4, 2);
    memcpy(sec + n, "relu", 4);
    n += 4;
    P(1, 1), P(1, 1), P(0, 1), P(-1, 4), P(0, 8), P(0, 1);   /* nin nout flags loop site nattrs */
    P(JN_IR_MR_INPUT, 1), P(0, 4), P(0, 1), P(0, 1), P(0, 8); /* input 0 */
    P(1, 1), P(0, 4);                      /* new output -> graph output 0 */
    P(2, 1), P(m->graphs[0]->values[1].shape[0], 8), P(4, 8); /* its shape [s0, 4] */
#undef P
    jn_rp_matcher *mt = NULL;
    CHECK(jn_rp_match_new(m, sec, n, &mt) == JN_OK);
    if (mt) {
        /* feed relu on a [17, 4] tensor: complete, s0 = 17 */
        int64_t shape[2] = {17, 4}, oshape[2] = {17, 4};
        jn_rp_match_arg in = {.id = 5, .shape = shape, .ndim = 2, .dtype = JN_F32};
        jn_rp_match_arg out = {.id = 6, .shape = oshape, .ndim = 2, .dtype = JN_F32};
        jn_rp_match_event ev = {JN_OP_relu, NULL, 1, 1, &in, &out};
        jn_rp_match_result r;
        CHECK(jn_rp_match_feed(mt, &ev, &r) == JN_RP_MATCH_COMPLETE);
        CHECK(jn_rp_match_end(mt, &r) == JN_RP_MATCH_COMPLETE && r.graph == 0 && r.syms[0] == 17 && r.inputs[0] == 5 &&
              r.input_event[0] == 0 && r.input_arg[0] == 0 && r.nevents == 1 && r.ev_token[0] == 0 && r.nextrap == 0);
        int all;
        CHECK(jn_rp_match_token_output(mt, 0, 0, 0, &all) == 0 && !all);
        /* [99, 4]: past the SEEN range 1..64, a hit that names the guard and the value */
        shape[0] = oshape[0] = 99;
        CHECK(jn_rp_match_feed(mt, &ev, &r) == JN_RP_MATCH_COMPLETE);
        CHECK(jn_rp_match_end(mt, &r) == JN_RP_MATCH_COMPLETE && r.syms[0] == 99 && r.nextrap == 1 &&
              r.extrap[0].guard == 0 && r.extrap[0].seen == 99);
        /* an output whose shape is not the graph's ([99, 5] from [99, 4]): a miss */
        oshape[1] = 5;
        CHECK(jn_rp_match_feed(mt, &ev, &r) == JN_RP_MATCH_MISS);
        CHECK(r.guard == -1 && strstr(r.why, "output 0: dim 1 is 5, where the graph computes 4"));
        CHECK(jn_rp_match_end(mt, &r) == JN_RP_MATCH_MISS);
        oshape[1] = 4;
        /* another dtype, another device: NEED guards miss */
        shape[0] = oshape[0] = 3;
        in.dtype = JN_F64;
        CHECK(jn_rp_match_feed(mt, &ev, &r) == JN_RP_MATCH_MISS && r.guard == 1 && strstr(r.why, "dtype"));
        jn_rp_match_end(mt, &r);
        CHECK(jn_rp_match_end(mt, &r) == JN_RP_MATCH_NONE);
        in.dtype = JN_F32;
        in.device = JN_CUDA;
        CHECK(jn_rp_match_feed(mt, &ev, &r) == JN_RP_MATCH_MISS && r.guard == 2 && strstr(r.why, "device") &&
              strstr(r.why, "cuda"));
        jn_rp_match_end(mt, &r);
        in.device = JN_CPU;
        /* entry kind: the graph's segments start at a step start */
        jn_rp_match_begin(mt, JN_SYNC_ITEM);
        CHECK(jn_rp_match_feed(mt, &ev, &r) == JN_RP_MATCH_MISS && r.graph == -1 && strstr(r.why, "after item()"));
        jn_rp_match_end(mt, &r);
        ev.op = JN_OP_neg;
        CHECK(jn_rp_match_feed(mt, &ev, &r) == JN_RP_MATCH_MISS && r.graph == -1 && strstr(r.why, "neg"));
        jn_rp_match_end(mt, &r);
        jn_rp_match_free(mt);
    }
    /* the same range as a NEED guard: 99 misses, naming it */
    mt = NULL;
    CHECK(mneed && jn_rp_match_new(mneed, sec, n, &mt) == JN_OK);
    if (mt) {
        int64_t shape[2] = {99, 4};
        jn_rp_match_arg in = {.id = 5, .shape = shape, .ndim = 2, .dtype = JN_F32};
        jn_rp_match_arg out = {.id = 6, .shape = shape, .ndim = 2, .dtype = JN_F32};
        jn_rp_match_event ev = {JN_OP_relu, NULL, 1, 1, &in, &out};
        jn_rp_match_result r;
        CHECK(jn_rp_match_feed(mt, &ev, &r) == JN_RP_MATCH_MISS);
        CHECK(r.guard == 0 && r.seen == 99 && strstr(r.why, "99") && strstr(r.why, "1..64"));
        jn_rp_match_end(mt, &r);
        jn_rp_match_free(mt);
    }
    jn_ir_module_free(mneed);
    /* every truncation and every single-byte corruption: refused or loaded, never a crash */
    for (size_t k = 0; k < n; k++) {
        mt = NULL;
        jn_status s = jn_rp_match_new(m, sec, k, &mt);
        CHECK(s != JN_OK && mt == NULL);
        if (k == 0) CHECK(has("matcher section"));
    }
    int refused = 0;
    for (size_t k = 0; k < n; k++)
        for (int bit = 0; bit < 8; bit++) {
            unsigned char c[256];
            memcpy(c, sec, n);
            c[k] ^= (unsigned char)(1 << bit);
            mt = NULL;
            if (jn_rp_match_new(m, c, n, &mt) != JN_OK) {
                refused++;
                CHECK(strstr(jn_errmsg(), "matcher section") != NULL);
            }
            jn_rp_match_free(mt);
        }
    CHECK(refused > 0);
    unsigned char old[256];
    memcpy(old, sec, n);
    old[4] = JN_IR_MATCH_VERSION - 1;
    char want[64];
    snprintf(want, sizeof want, "format version %d", JN_IR_MATCH_VERSION - 1);
    CHECK(jn_rp_match_new(m, old, n, &mt) != JN_OK && has(want));
    jn_ir_module_free(m);
}

/* A stacked input (version 5): loop token 0 (relu) reads input 0 with
 * ABS | REL, binding iteration i's tensor where it reads it, its output
 * collecting every iteration's object (JN_IR_MO_ALL); token 1 (neg) after
 * the loop reads input 0 with mode `after` (END: the last iteration's
 * element; anything else is refused). */
static size_t stacked_section(unsigned char *sec, const jn_ir_module *m, int after) {
    size_t n = 0;
    const jn_ir_graph *g = m->graphs[0];
#define P(v, b) put_le(sec, &n, (uint64_t)(v), (b))
    memcpy(sec, "JNMT", 4);
    n = 4;
    P(JN_IR_MATCH_VERSION, 4), P(1, 4);                  /* version, ngraphs */
    P(0, 4), P(0, 1), P(2, 4), P(1, 4);                  /* graph 0, step start, 2 tokens, 1 loop */
    P(0, 4), P(1, 4), P(g->loops[0].trip, 8), P(g->loops[0].ivar, 4), P(1, 8), P(8, 8), P(0, 4); /* loop 0 */
    P(4, 2);
    memcpy(sec + n, "relu", 4);
    n += 4;
    P(1, 1), P(1, 1), P(0, 1), P(0, 4), P(0, 8), P(0, 1);      /* nin nout flags loop site nattrs */
    P(JN_IR_MR_INPUT, 1), P(0, 4), P(0, 1), P(JN_IR_MM_ABS | JN_IR_MM_REL, 1), P(0, 8); /* iteration i's */
    P(JN_IR_MO_NEW | JN_IR_MO_ALL, 1), P(0, 4);         /* every iteration's object -> graph output 0 */
    P(1, 1), P(4, 8);                                    /* its shape [4] */
    P(3, 2);
    memcpy(sec + n, "neg", 3);
    n += 3;
    P(1, 1), P(1, 1), P(0, 1), P(-1, 4), P(0, 8), P(0, 1);
    P(JN_IR_MR_INPUT, 1), P(0, 4), P(0, 1), P(after, 1), P(0, 8);
    P(JN_IR_MO_NEW, 1), P(-1, 4), P(1, 1), P(4, 8);
#undef P
    return n;
}

static void stacked_tests(void) {
    const char *ir = "module optable=0000000000000000 graphs=1\n"
                     "graph g0 group=0 variant=0 parent=-1 diverge=0 support=1 steps=0..0 entry=\"step start\" "
                     "exit=\"step end\" {\n"
                     "  sym s0 dim 1..8\n"
                     "  sym i0 ivar 0..7\n"
                     "  in %0 carry f32[s0, 4]\n"
                     "  loop L0 trip=s0 ivar=i0 {\n"
                     "    %1 = select(%0) dim=0 index=i0 : f32[4]\n"
                     "    %2 = relu(%1) : f32[4]\n"
                     "    collect %2 => %3\n"
                     "  }\n"
                     "  %4 = select(%0) dim=0 index=(s0-1) : f32[4]\n"
                     "  %5 = neg(%4) : f32[4]\n"
                     "  out %3 keep\n"
                     "  guard trip L0 in 1..8 seen\n"
                     "}\n";
    jn_ir_module *m = NULL;
    CHECK(jn_ir_parse(ir, strlen(ir), &m) == JN_OK);
    if (!m) return;
    unsigned char sec[256];
    size_t n = stacked_section(sec, m, JN_IR_MM_END);
    jn_rp_matcher *mt = NULL;
    CHECK(jn_rp_match_new(m, sec, n, &mt) == JN_OK);
    if (mt) {
        /* three iterations, a new [4] tensor each, then neg of the last one:
         * complete, trip 3 */
        int64_t shape[1] = {4};
        jn_rp_match_arg in = {.id = 10, .shape = shape, .ndim = 1, .dtype = JN_F32};
        jn_rp_match_arg out = {.id = 20, .shape = shape, .ndim = 1, .dtype = JN_F32};
        jn_rp_match_event ev = {JN_OP_relu, NULL, 1, 1, &in, &out};
        jn_rp_match_result r;
        for (int it = 0; it < 3; it++) {
            in.id = 10 + (uint64_t)it, out.id = 20 + (uint64_t)it;
            CHECK(jn_rp_match_feed(mt, &ev, &r) == JN_RP_MATCH_CONTINUE);
        }
        ev.op = JN_OP_neg, out.id = 30;
        CHECK(jn_rp_match_feed(mt, &ev, &r) == JN_RP_MATCH_COMPLETE);
        CHECK(jn_rp_match_end(mt, &r) == JN_RP_MATCH_COMPLETE && r.graph == 0 && r.syms[0] == 3 && r.nevents == 4);
        int32_t tok = -1;
        int arg = -1, all = 0;
        CHECK(jn_rp_match_input_each(mt, 0, 0, &tok, &arg) == 1 && tok == 0 && arg == 0);
        CHECK(jn_rp_match_token_output(mt, 0, 0, 0, &all) == 0 && all == 1);
        /* the neg reads another tensor than the last iteration's: a miss */
        for (int it = 0; it < 4; it++) {
            ev.op = it < 3 ? JN_OP_relu : JN_OP_neg;
            in.id = it < 3 ? 10 + (uint64_t)it : 10;
            jn_rp_match_feed(mt, &ev, &r);
        }
        CHECK(jn_rp_match_end(mt, &r) == JN_RP_MATCH_MISS);
        /* an element of another shape: a miss */
        int64_t bad[1] = {5};
        in.shape = bad, ev.op = JN_OP_relu;
        CHECK(jn_rp_match_feed(mt, &ev, &r) == JN_RP_MATCH_MISS);
        jn_rp_match_end(mt, &r);
        jn_rp_match_free(mt);
    }
    /* refused with the loader's sentence: the stacked input also read whole,
     * a stacked read outside its loop, an input ref of an unknown mode */
    static const struct { int mode; const char *why; } bad[] = {
        {JN_IR_MM_SAME, "a stacked input is also read whole"},
        {JN_IR_MM_ABS | JN_IR_MM_REL, "a stacked input read outside a loop"},
        {JN_IR_MM_END | JN_IR_MM_REL, "an input ref of an unknown mode"},
    };
    for (size_t k = 0; k < sizeof bad / sizeof bad[0]; k++) {
        n = stacked_section(sec, m, bad[k].mode);
        mt = NULL;
        CHECK(jn_rp_match_new(m, sec, n, &mt) != JN_OK && mt == NULL && has("matcher section") && has(bad[k].why));
    }
    jn_ir_module_free(m);
}

int main(int argc, char **argv) {
    if (argc >= 2) {
        replay(argv[1], argc >= 3 ? argv[2] : NULL);
    } else {
        loader_tests();
        stacked_tests();
    }
    JT_DONE();
}
#else
int main(void) {
    printf("0 passed, 0 failed (analyzer, codegen or matcher not built)\n");
    return 0;
}
#endif
