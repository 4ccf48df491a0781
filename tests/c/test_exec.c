/* test_exec.c -- the graph executor (exec/jn_exec.h), differential:
 *
 *   golden    every graph of tests/golden/ and tests/c/data/ (.ir files),
 *             optimized by jn_cg_optimize, run with its kernels (member by
 *             member: no compiled code) and plan, against the same graph
 *             op by op (JN_EX_EAGER): bitwise equal outputs and state
 *             writes (the same eager kernels run); and against the graph
 *             before the passes op by op: numerically equal (the passes
 *             may flip the sign of a zero).  Symbols at the bottom, middle
 *             and top of their ranges, so loops run several trip counts.
 *   random    hundreds of generated graphs (elementwise chains with
 *             broadcasting, reductions, GEMMs with bias+activation
 *             epilogues, views feeding elementwise ops, in-place table ops,
 *             optimizer updates, a loop with a carry and collects), the
 *             same comparisons;
 *   compiled  hand-written ABI-conformant kernels for a small graph,
 *             compiled by cc into a shared object and loaded from bytes:
 *             bitwise for ew and GEMM-epilogue kernels, 1e-5 relative for
 *             the ew_reduce sum; objects of another ABI or module refused;
 *   errors    inputs of the wrong shape or dtype name the input.
 */
#include <dirent.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "jn_cg.h"
#include "jn_exec.h"
#include "jn_test.h"
#include "jn_test_exec.h"
#include "k_gemm.h"

static uint64_t rs = 0x9e3779b97f4a7c15ull;
static uint32_t rnd(void) {
    rs ^= rs << 13;
    rs ^= rs >> 7;
    rs ^= rs << 17;
    return (uint32_t)(rs >> 16);
}

static char *read_file(const char *path, size_t *len) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *b = malloc((size_t)n + 1);
    *len = b ? fread(b, 1, (size_t)n, f) : 0;
    if (b) b[*len] = 0;
    fclose(f);
    return b;
}

static void free_outs(jn_tensor **o, int32_t n) {
    for (int32_t i = 0; i < n; i++)
        if (o[i]) jn_tensor_decref(o[i]);
    free(o);
}

/* ------------------------------------------------------- differential */
typedef struct {
    int graphs, runs, skipped, bitwise, numeric, tolerant;
    int64_t gen_calls;
    int64_t arena, eager_peak, plan_peak;
} tally;

/* Graph k of `orig` (before the passes) and of `opt` at symbol values sv:
 * opt with its plan and kernels (lib) vs opt op by op (bitwise, or within
 * rtol where tol_out[i] is set), and vs orig op by op (numerically). */
static void compare_at(const char *what, const jn_ir_module *orig, const jn_ir_module *opt, int32_t k,
                       const jn_ex_lib *lib, const int64_t *sv, uint64_t seed, tally *t, const uint8_t *tol_out) {
    const jn_ir_graph *g = opt->graphs[k];
    int32_t no = g->noutputs;
    jn_tensor **ref = calloc((size_t)no + 1, sizeof *ref), **got = calloc((size_t)no + 1, sizeof *got);
    jn_tensor **org = calloc((size_t)no + 1, sizeof *org);
    jn_ex_stats se, sp;
    jn_status st = jt_run_graph(opt, k, NULL, JN_EX_EAGER, sv, seed, ref, &se);
    if (st != JN_OK) { /* an op the zero/random inputs make fail (an index): nothing to compare */
        t->skipped++;
        if (getenv("EXEC_DEBUG")) fprintf(stderr, "%s graph %s not runnable: %s\n", what, g->name, jn_errmsg());
        goto done;
    }
    st = jt_run_graph(opt, k, lib, 0, sv, seed, got, &sp);
    CHECK(st == JN_OK);
    if (st != JN_OK) {
        fprintf(stderr, "%s graph %s: the planned run fails where op by op runs: %s\n", what, g->name, jn_errmsg());
        goto done;
    }
    t->runs++;
    int64_t ab = 0, wb = -1;
    /* the plan's arena, or past the recorded ranges the wide plan's */
    if (g->warena != -1) CHECK(jn_ir_dim_eval(g, g->warena, sv, &wb) == JN_OK);
    if (g->arena != -1) CHECK(jn_ir_dim_eval(g, g->arena, sv, &ab) == JN_OK && (sp.arena_bytes == ab || sp.arena_bytes == wb));
    CHECK(se.arena_bytes == 0 && se.kernels_gen == 0 && se.kernels_lib == 0);
    CHECK(sp.peak_bytes >= sp.arena_bytes);
    t->arena += sp.arena_bytes;
    t->gen_calls += sp.kernels_gen;
    if (getenv("EXEC_PEAKS"))
        fprintf(stderr, "%s %s: arena %lld planned peak %lld eager peak %lld\n", what, g->name, (long long)sp.arena_bytes,
                (long long)sp.peak_bytes, (long long)se.peak_bytes);
    t->eager_peak += se.peak_bytes;
    t->plan_peak += sp.peak_bytes;
    for (int32_t i = 0; i < no; i++) {
        int tol = tol_out && tol_out[i];
        int same = jt_same(ref[i], got[i], tol ? 2 : 1, 1e-4);
        CHECK(same);
        if (!same) {
            int64_t e = 0, n = jn_numel(ref[i]);
            while (e < n && jn_numel(got[i]) == n && jt_elem(ref[i], e) == jt_elem(got[i], e)) e++;
            fprintf(stderr, "%s graph %s: output %d (%%%d) differs planned vs op by op (element %lld: %.9g vs %.9g)\n",
                    what, g->name, i, g->outputs[i].value, (long long)e, e < n ? jt_elem(ref[i], e) : 0.0,
                    e < n && e < jn_numel(got[i]) ? jt_elem(got[i], e) : 0.0);
        }
        t->bitwise += same && !tol;
        t->tolerant += same && tol;
    }
    if (orig && jt_run_graph(orig, k, NULL, JN_EX_EAGER, sv, seed, org, NULL) == JN_OK) {
        CHECK(orig->graphs[k]->noutputs == no);
        for (int32_t i = 0; i < no && orig->graphs[k]->noutputs == no; i++) {
            int same = jt_same(org[i], got[i], tol_out && tol_out[i] ? 2 : 0, 1e-4);
            CHECK(same);
            if (!same) fprintf(stderr, "%s graph %s: output %d differs from the graph before the passes\n", what,
                               g->name, i);
            t->numeric += same;
        }
    }
done:
    free_outs(ref, no);
    free_outs(got, no);
    free_outs(org, no);
}

/* The optimized module's kernels emitted, compiled and loaded (NULL: none
 * to compile, or no compiler: reported once). */
static int no_cc;
static jn_ex_lib *compile_lib(const jn_ir_module *m, const char *what) { return jt_compile_lib(m, what, &no_cc); }

/* Every graph at its symbols' lo, middle and hi (rng and int symbols too). */
static void compare_module(const char *what, const jn_ir_module *orig, const jn_ir_module *opt, const jn_ex_lib *lib,
                           tally *t) {
    for (int32_t k = 0; k < opt->ngraphs; k++) {
        const jn_ir_graph *g = opt->graphs[k];
        int64_t *sv = calloc((size_t)g->nsyms + 1, sizeof *sv);
        t->graphs++;
        for (int p = 0; p < 3; p++) {
            for (int32_t s = 0; s < g->nsyms; s++) {
                const jn_ir_sym *y = &g->syms[s];
                sv[s] = p == 0 ? y->lo : p == 1 ? y->lo + (y->hi - y->lo) / 2 : y->hi;
            }
            compare_at(what, orig, opt, k, lib, sv, 777 + (uint64_t)p, t, NULL);
            int same_point = 1; /* lo == hi for every symbol: one point is enough */
            for (int32_t s = 0; s < g->nsyms; s++) same_point &= g->syms[s].lo == g->syms[s].hi;
            if (same_point) break;
        }
        free(sv);
    }
}

/* CPU graphs share one arena (exec.c, ensure_arena); a run that finds it
 * taken -- here a run of the same graph started from inside another run's
 * first kernel call -- must use an arena of its own: both give what they
 * give alone, bitwise, although their values sit at the same plan offsets.
 * Per golden graph with an arena and compiled kernels. */
typedef struct {
    const jn_ir_module *m;
    const jn_ex_lib *lib;
    int32_t gi;
    const int64_t *sv;
    int done;
    jn_status s;
    jn_tensor **o;
} nested;
static int nested_graphs, nested_outputs, nested_equal;
static void nested_hook(void *ctx, int32_t k, const jn_kcall *c, int after) {
    (void)k, (void)c;
    nested *n = ctx;
    if (after || n->done++) return;
    n->s = jt_run_graph(n->m, n->gi, n->lib, 0, n->sv, 7, n->o, NULL);
}
static void nested_runs(const jn_ir_module *m, int32_t gi, const jn_ex_lib *lib) {
    const jn_ir_graph *g = m->graphs[gi];
    size_t no = (size_t)g->noutputs + 1;
    jn_tensor **ra = calloc(no, sizeof *ra), **rb = calloc(no, sizeof *rb), **oa = calloc(no, sizeof *oa),
              **ob = calloc(no, sizeof *ob);
    int64_t *sv = calloc((size_t)g->nsyms + 1, sizeof *sv); /* every symbol at the top of its range */
    for (int32_t i = 0; sv && i < g->nsyms; i++) sv[i] = g->syms[i].kind == JN_IR_SYM_IVAR ? g->syms[i].lo : g->syms[i].hi;
    jn_ex_stats st;
    nested n = {m, lib, gi, sv, 0, JN_OK, ob};
    if (ra && rb && oa && ob && sv && jt_run_graph(m, gi, lib, 0, sv, 3, ra, &st) == JN_OK && st.arena_bytes > 0 &&
        st.kernels_gen > 0) {
        CHECK(jt_run_graph(m, gi, lib, 0, sv, 7, rb, NULL) == JN_OK);
        CHECK(jt_run_graph_hooked(m, gi, lib, 0, sv, 3, oa, NULL, nested_hook, &n) == JN_OK);
        CHECK(n.done > 0 && n.s == JN_OK);
        nested_graphs++;
        for (int32_t k = 0; k < g->noutputs; k++) {
            nested_outputs += 2;
            nested_equal += ra[k] && oa[k] && jt_same(ra[k], oa[k], 1, 0);
            nested_equal += rb[k] && ob[k] && jt_same(rb[k], ob[k], 1, 0);
        }
    }
    for (int32_t k = 0; k < g->noutputs; k++) {
        jn_tensor *all[4] = {ra ? ra[k] : NULL, rb ? rb[k] : NULL, oa ? oa[k] : NULL, ob ? ob[k] : NULL};
        for (int j = 0; j < 4; j++)
            if (all[j]) jn_tensor_decref(all[j]);
    }
    free(ra), free(rb), free(oa), free(ob), free(sv);
}

/* A plan packed at the symbols' maxima (a constant arena under symbolic
 * sizes, p_plan.c) holds only inside the recorded ranges: with every dim
 * symbol at twice its maximum the run takes the wide plan (the slot walk's
 * symbolic offsets, a bigger arena) and gives the op-by-op outputs. */
static int past_max_graphs, past_max_outputs;
static void past_max(const char *what, const jn_ir_module *orig, const jn_ir_module *m, int32_t gi, const jn_ex_lib *lib,
                     tally *t) {
    const jn_ir_graph *g = m->graphs[gi];
    int packed = 0, dim = 0;
    for (int32_t v = 0; !jn_ir_is_expr(g->arena) && g->arena > 0 && v < g->nvalues && !packed; v++)
        for (int d = 0; g->values[v].mem != -1 && d < g->values[v].ndim; d++) packed |= jn_ir_is_expr(g->values[v].shape[d]);
    for (int32_t k = 0; k < g->nsyms; k++) dim |= g->syms[k].kind == JN_IR_SYM_DIM;
    if (!packed || !dim) return;
    CHECK(g->warena != -1);
    int64_t *sv = calloc((size_t)g->nsyms + 1, sizeof *sv);
    for (int32_t k = 0; sv && k < g->nsyms; k++) {
        const jn_ir_sym *y = &g->syms[k];
        sv[k] = y->kind == JN_IR_SYM_IVAR ? y->lo : y->kind == JN_IR_SYM_DIM ? 2 * y->hi + 1 : y->hi;
    }
    tally here = {0};
    if (sv) compare_at(what, orig, m, gi, lib, sv, 5, &here, NULL);
    jn_ex_stats st;
    jn_tensor **out = calloc((size_t)g->noutputs + 1, sizeof *out);
    int64_t wb = 0;
    if (here.runs && out && jt_run_graph(m, gi, lib, 0, sv, 5, out, &st) == JN_OK) {
        CHECK(jn_ir_dim_eval(g, g->warena, sv, &wb) == JN_OK && st.arena_bytes == wb && wb > g->arena);
        past_max_graphs++;
        past_max_outputs += here.bitwise;
    }
    t->runs += here.runs, t->skipped += here.skipped, t->bitwise += here.bitwise;
    for (int32_t k = 0; out && k < g->noutputs; k++)
        if (out[k]) jn_tensor_decref(out[k]);
    free(out), free(sv);
}

static int golden_file(const char *path, tally *t, tally *tc) {
    size_t len;
    char *text = read_file(path, &len);
    jn_ir_module *orig = NULL, *opt = NULL;
    int ok = text && jn_ir_parse(text, len, &orig) == JN_OK && jn_ir_parse(text, len, &opt) == JN_OK;
    CHECK(ok);
    if (!ok) fprintf(stderr, "%s: %s\n", path, text ? jn_errmsg() : "cannot be read");
    jn_cg_options o = {.verify_each = 1};
    if (ok && jn_cg_optimize(opt, &o, NULL) != JN_OK) {
        fprintf(stderr, "%s: %s\n", path, jn_errmsg());
        CHECK(0);
        ok = 0;
    }
    if (ok) compare_module(strrchr(path, '/') + 1, orig, opt, NULL, t);
    tally wide = {0};
    for (int32_t gi = 0; ok && gi < opt->ngraphs; gi++) past_max(strrchr(path, '/') + 1, orig, opt, gi, NULL, &wide);
    jn_ex_lib *lib = ok ? compile_lib(opt, path) : NULL;
    if (lib) compare_module(strrchr(path, '/') + 1, orig, opt, lib, tc);
    for (int32_t gi = 0; lib && gi < opt->ngraphs; gi++) past_max(strrchr(path, '/') + 1, orig, opt, gi, lib, &wide);
    for (int32_t gi = 0; lib && gi < opt->ngraphs; gi++) nested_runs(opt, gi, lib);
    jn_ex_lib_close(lib);
    jn_ir_module_free(orig);
    jn_ir_module_free(opt);
    free(text);
    return ok;
}

static void test_golden(void) {
    char root[1024];
    snprintf(root, sizeof root, "%s", __FILE__);
    char *p = strstr(root, "tests/c/test_exec.c");
    if (!p) {
        fprintf(stderr, "cannot locate the source tree from %s; golden graphs skipped\n", __FILE__);
        return;
    }
    *p = 0;
    tally t = {0}, tc = {0};
    int files = 0;
    const char *dirs[] = {"tests/golden", "tests/c/data"};
    for (int d = 0; d < 2; d++) {
        char dir[1100];
        snprintf(dir, sizeof dir, "%s%s", root, dirs[d]);
        DIR *dh = opendir(dir);
        struct dirent *e;
        while (dh && (e = readdir(dh))) {
            size_t l = strlen(e->d_name);
            if (l < 4 || strcmp(e->d_name + l - 3, ".ir")) continue;
            char path[1400];
            snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
            files += golden_file(path, &t, &tc);
        }
        if (dh) closedir(dh);
    }
    printf("golden: %d files, %d graphs, %d runs compared (%d not runnable here): %d outputs bitwise equal planned vs "
           "op by op, %d equal to the graph before the passes; arena %lld bytes, peak %lld planned vs %lld op by op\n",
           files, t.graphs, t.runs, t.skipped, t.bitwise, t.numeric, (long long)t.arena, (long long)t.plan_peak,
           (long long)t.eager_peak);
    CHECK(files >= 16 && t.runs >= 50 && t.bitwise > 500);
    printf("golden, compiled kernels: %d runs (%lld generated kernel calls), %d outputs bitwise equal to op by op "
           "(compiled reductions included)\n", tc.runs, (long long)tc.gen_calls, tc.bitwise);
    CHECK(no_cc || (tc.runs == t.runs && tc.gen_calls > 0 && tc.bitwise > 0));
    printf("shared arena: %d golden graphs run inside a run of themselves (an arena of their own): %d of %d outputs "
           "bitwise equal to the runs alone\n", nested_graphs, nested_equal, nested_outputs);
    CHECK(no_cc || (nested_graphs >= 5 && nested_equal == nested_outputs));
    printf("plans packed at the maxima: %d runs (plain and compiled) with every dim symbol at twice its maximum took "
           "the wide plan: %d outputs equal to op by op\n", past_max_graphs, past_max_outputs);
    CHECK(past_max_graphs > 0 && past_max_outputs > 0);
}

/* ------------------------------------------------------ random graphs */
/* Shape kinds of generated values. */
enum { K_BN, K_B1, K_N, K_S, K_BM, K_NB, K_B, K_M, K_BK, K_FLAT, K_NM, K_MN, K_TBN, NK };

typedef struct {
    char *buf;
    size_t len, cap;
    int nv;                  /* next value number */
    int N, M, K;
    int vid[512], vk[512], contig[512], nvals;
} gen;

static void emit(gen *G, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void emit(gen *G, const char *fmt, ...) {
    va_list ap;
    for (;;) {
        va_start(ap, fmt);
        int n = vsnprintf(G->buf + G->len, G->cap - G->len, fmt, ap);
        va_end(ap);
        if ((size_t)n < G->cap - G->len) {
            G->len += (size_t)n;
            return;
        }
        G->cap = G->cap * 2 + (size_t)n + 64;
        G->buf = realloc(G->buf, G->cap);
    }
}

static const char *ty(const gen *G, int k, char *b, size_t n) {
    switch (k) {
    case K_BN: snprintf(b, n, "f32[B, %d]", G->N); break;
    case K_B1: snprintf(b, n, "f32[B, 1]"); break;
    case K_N: snprintf(b, n, "f32[%d]", G->N); break;
    case K_S: snprintf(b, n, "f32[]"); break;
    case K_BM: snprintf(b, n, "f32[B, %d]", G->M); break;
    case K_NB: snprintf(b, n, "f32[%d, B]", G->N); break;
    case K_B: snprintf(b, n, "f32[B]"); break;
    case K_M: snprintf(b, n, "f32[%d]", G->M); break;
    case K_BK: snprintf(b, n, "f32[B, %d]", G->K); break;
    case K_FLAT: snprintf(b, n, "f32[(B*%d)]", G->N); break;
    case K_NM: snprintf(b, n, "f32[%d, %d]", G->N, G->M); break;
    case K_MN: snprintf(b, n, "f32[%d, %d]", G->M, G->N); break;
    default: snprintf(b, n, "f32[T, B, %d]", G->N); break;
    }
    return b;
}

static int add_val(gen *G, int kind, int contig) {
    int id = G->nv++;
    if (G->nvals < 512) {
        G->vid[G->nvals] = id;
        G->vk[G->nvals] = kind;
        G->contig[G->nvals] = contig;
        G->nvals++;
    }
    return id;
}

/* A random pool value of kind k (-1 if none); `from` = the oldest index allowed. */
static int pick(const gen *G, int k, int need_contig) {
    int c[512], n = 0;
    for (int i = 0; i < G->nvals; i++)
        if (G->vk[i] == k && (!need_contig || G->contig[i])) c[n++] = i;
    return n ? c[rnd() % (unsigned)n] : -1;
}

static const char *unary_ops[] = {"exp", "neg", "tanh", "sigmoid", "relu", "abs", "sin", "log", "sqrt", "reciprocal"};

/* One value of kind k made by a random unary op of v. */
static int unary(gen *G, int vi, int k) {
    char t[64];
    const char *op = unary_ops[rnd() % 10];
    int id = add_val(G, k, 1);
    emit(G, "  %%%d = %s(%%%d) : %s\n", id, op, G->vid[vi], ty(G, k, t, sizeof t));
    return id;
}

/* A binary op of a (kind k) and a partner that broadcasts to it. */
static void binary(gen *G, int ai, int k) {
    char t[64];
    int partners[6], np = 0;
    partners[np++] = k;
    if (k == K_BN) partners[np++] = K_B1, partners[np++] = K_N;
    if (k == K_BM) partners[np++] = K_M;
    partners[np++] = K_S;
    int pk = partners[rnd() % (unsigned)np], bi = pick(G, pk, 0);
    char b[32];
    if (bi < 0 || rnd() % 4 == 0) snprintf(b, sizeof b, "%%%d", rnd() % 2 ? 6 : 7); /* the scalar or the constant */
    else snprintf(b, sizeof b, "%%%d", G->vid[bi]);
    char a[32];
    snprintf(a, sizeof a, "%%%d", G->vid[ai]);
    int swap = rnd() % 2;
    const char *x = swap ? b : a, *y = swap ? a : b;
    int id = add_val(G, k, 1);
    switch (rnd() % 6) {
    case 0: emit(G, "  %%%d = add(%s, %s) alpha=%s : %s\n", id, x, y, rnd() % 3 ? "1" : "%6", ty(G, k, t, sizeof t)); break;
    case 1: emit(G, "  %%%d = sub(%s, %s) alpha=0.5 : %s\n", id, x, y, ty(G, k, t, sizeof t)); break;
    case 2: emit(G, "  %%%d = mul(%s, %s) : %s\n", id, x, y, ty(G, k, t, sizeof t)); break;
    case 3: emit(G, "  %%%d = maximum(%s, %s) : %s\n", id, x, y, ty(G, k, t, sizeof t)); break;
    case 4: emit(G, "  %%%d = div(%s, %s) rounding_mode=0 : %s\n", id, x, y, ty(G, k, t, sizeof t)); break;
    default: emit(G, "  %%%d = minimum(%s, %s) : %s\n", id, x, y, ty(G, k, t, sizeof t)); break;
    }
}

/* One graph block named g<id> (no module line). */
static char *gen_graph(int id, int *nouts_hint) {
    gen G = {0};
    G.cap = 4096;
    G.buf = malloc(G.cap);
    G.N = 2 + (int)(rnd() % 7);
    G.M = 1 + (int)(rnd() % 6);
    G.K = 1 + (int)(rnd() % (unsigned)G.N);
    char t[64];
    emit(&G, "graph g%d group=0 variant=0 parent=-1 diverge=0 support=1 steps=0..0 entry=\"a\" exit=\"b\" {\n", id);
    emit(&G, "  sym B dim 1..6\n  sym T dim 1..3\n  sym i0 ivar 0..2\n");
    /* inputs, always all of them (the same input indices before and after the passes) */
    int kinds[] = {K_BN, K_BN, K_N, K_B1, K_NM, K_M};
    const char *ik[] = {"host", "host", "host", "host", "state", "state"};
    for (int i = 0; i < 6; i++) emit(&G, "  in %%%d %s %s\n", add_val(&G, kinds[i], 1), ik[i], ty(&G, kinds[i], t, sizeof t));
    emit(&G, "  in %%6 scalar f64[] = 0.75\n  in %%7 const f64[] = 2.5\n");
    G.nv = 8;
    emit(&G, "  in %%8 state %s\n", ty(&G, K_MN, t, sizeof t));
    emit(&G, "  in %%9 state %s\n  in %%10 state %s\n  in %%11 state %s\n", ty(&G, K_N, t, sizeof t),
         ty(&G, K_N, t, sizeof t), ty(&G, K_N, t, sizeof t));
    emit(&G, "  in %%12 host %s\n", ty(&G, K_TBN, t, sizeof t));
    G.nv = 13;
    char outs[2048];
    size_t ol = 0;
    outs[0] = 0;
    int did_opt = 0, did_loop = 0, nsteps = 6 + (int)(rnd() % 14);
    for (int s = 0; s < nsteps; s++) {
        int r = (int)(rnd() % 12), vi;
        switch (r) {
        case 0:
        case 1:
            if ((vi = pick(&G, rnd() % 3 ? K_BN : K_BM, 0)) >= 0) unary(&G, vi, G.vk[vi]);
            break;
        case 2:
        case 3:
            if ((vi = pick(&G, rnd() % 4 ? K_BN : K_BM, 0)) >= 0) binary(&G, vi, G.vk[vi]);
            break;
        case 4: { /* a reduction over the trailing dim or everything */
            if ((vi = pick(&G, rnd() % 2 ? K_BN : K_BM, 0)) < 0) break;
            const char *ops[] = {"sum", "mean", "amax", "amin"};
            int o = (int)(rnd() % 4), all = rnd() % 3 == 0, keep = !all && rnd() % 2;
            int k = all ? K_S : keep ? K_B1 : K_B;
            int id = add_val(&G, k, 1);
            emit(&G, "  %%%d = %s(%%%d) dims=%s keepdim=%s%s : %s\n", id, ops[o], G.vid[vi],
                 all ? "[]" : rnd() % 2 ? "[1]" : "[-1]", keep ? "true" : "false", o < 2 ? " dtype=none" : "",
                 ty(&G, k, t, sizeof t));
            break;
        }
        case 5: { /* a GEMM, often with a bias and an activation */
            if ((vi = pick(&G, K_BN, 0)) < 0) break;
            int id = add_val(&G, K_BM, 1), form = (int)(rnd() % 3);
            if (form == 0) emit(&G, "  %%%d = mm(%%%d, %%4) : %s\n", id, G.vid[vi], ty(&G, K_BM, t, sizeof t));
            else if (form == 1) emit(&G, "  %%%d = linear(%%%d, %%8, %%5) : %s\n", id, G.vid[vi], ty(&G, K_BM, t, sizeof t));
            else emit(&G, "  %%%d = addmm(%%5, %%%d, %%4) beta=1 alpha=1 : %s\n", id, G.vid[vi], ty(&G, K_BM, t, sizeof t));
            G.nvals--; /* the GEMM's output has one use when an epilogue follows */
            int cur = id;
            if (form == 0 && rnd() % 2) {
                int b = G.nv++;
                emit(&G, "  %%%d = add(%%%d, %%5) alpha=1 : %s\n", b, cur, ty(&G, K_BM, t, sizeof t));
                cur = b;
            }
            if (rnd() % 3) {
                const char *acts[] = {"relu", "tanh", "sigmoid", "silu", "gelu"};
                int a = (int)(rnd() % 5), b = G.nv++;
                emit(&G, "  %%%d = %s(%%%d)%s : %s\n", b, acts[a], cur, a == 4 ? " approximate=0" : "",
                     ty(&G, K_BM, t, sizeof t));
                cur = b;
            }
            G.vid[G.nvals] = cur, G.vk[G.nvals] = K_BM, G.contig[G.nvals] = 1, G.nvals++;
            break;
        }
        case 6: { /* views feeding elementwise ops */
            if ((vi = pick(&G, K_BN, 1)) < 0) break;
            int form = (int)(rnd() % 3), id = G.nv++, back = G.nv;
            if (form == 0) {
                emit(&G, "  %%%d = transpose(%%%d) dim0=0 dim1=1 : %s\n", id, G.vid[vi], ty(&G, K_NB, t, sizeof t));
                G.vid[G.nvals] = id, G.vk[G.nvals] = K_NB, G.contig[G.nvals] = 0, G.nvals++;
                int u = unary(&G, G.nvals - 1, K_NB);
                back = G.nv++;
                emit(&G, "  %%%d = transpose(%%%d) dim0=0 dim1=1 : %s\n", back, u, ty(&G, K_BN, t, sizeof t));
                G.vid[G.nvals] = back, G.vk[G.nvals] = K_BN, G.contig[G.nvals] = 0, G.nvals++;
            } else if (form == 1) {
                emit(&G, "  %%%d = view(%%%d) shape=[-1] : %s\n", id, G.vid[vi], ty(&G, K_FLAT, t, sizeof t));
                G.vid[G.nvals] = id, G.vk[G.nvals] = K_FLAT, G.contig[G.nvals] = 1, G.nvals++;
                int u = unary(&G, G.nvals - 1, K_FLAT);
                back = G.nv++;
                emit(&G, "  %%%d = view(%%%d) shape=[-1, %d] : %s\n", back, u, G.N, ty(&G, K_BN, t, sizeof t));
                G.vid[G.nvals] = back, G.vk[G.nvals] = K_BN, G.contig[G.nvals] = 1, G.nvals++;
            } else {
                emit(&G, "  %%%d = slice(%%%d) dim=1 start=0 end=%d step=1 : %s\n", id, G.vid[vi], G.K,
                     ty(&G, K_BK, t, sizeof t));
                G.vid[G.nvals] = id, G.vk[G.nvals] = K_BK, G.contig[G.nvals] = 0, G.nvals++;
                unary(&G, G.nvals - 1, K_BK);
            }
            break;
        }
        case 7: { /* in-place table ops in functional form */
            if ((vi = pick(&G, rnd() % 2 ? K_BN : K_N, 0)) < 0) break;
            int k = G.vk[vi], src = pick(&G, k == K_BN && rnd() % 2 ? K_N : k, 0);
            int id = add_val(&G, k, 1), form = (int)(rnd() % 3);
            if (form == 0)
                emit(&G, "  %%%d = uniform_(%%%d) low=-1 high=1 seed=%u offset=%u : %s\n", id, G.vid[vi], rnd() % 100,
                     rnd() % 1000, ty(&G, k, t, sizeof t));
            else if (form == 1)
                emit(&G, "  %%%d = fill_(%%%d) value=1.5 : %s\n", id, G.vid[vi], ty(&G, k, t, sizeof t));
            else {
                emit(&G, "  %%%d = copy_(%%%d, %%%d) : %s\n", id, G.vid[vi], G.vid[src], ty(&G, k, t, sizeof t));
            }
            break;
        }
        case 8: { /* an optimizer update of the state, once */
            if (did_opt || (vi = pick(&G, K_BN, 0)) < 0) break;
            did_opt = 1;
            int gr = G.nv++, a = G.nv++, b = G.nv++, c = -1;
            emit(&G, "  %%%d = sum(%%%d) dims=[0] keepdim=false dtype=none : %s\n", gr, G.vid[vi], ty(&G, K_N, t, sizeof t));
            if (rnd() % 2) {
                c = G.nv++;
                emit(&G, "  %%%d, %%%d, %%%d = adam_(%%9, %%10, %%11, %%%d) lr=%%6 beta1=0.9 beta2=0.999 eps=1e-08 "
                     "weight_decay=0 step=3 decoupled=false maximize=false : %s, %s, %s\n", a, b, c, gr,
                     ty(&G, K_N, t, sizeof t), ty(&G, K_N, t, sizeof t), ty(&G, K_N, t, sizeof t));
                ol += (size_t)snprintf(outs + ol, sizeof outs - ol, "  out %%%d state=%%9\n  out %%%d state=%%10\n  out "
                                       "%%%d state=%%11\n", a, b, c);
            } else {
                emit(&G, "  %%%d, %%%d = sgd_(%%9, %%10, %%%d) lr=0.1 momentum=0.9 dampening=0 weight_decay=0 "
                     "nesterov=false maximize=false first=false : %s, %s\n", a, b, gr, ty(&G, K_N, t, sizeof t),
                     ty(&G, K_N, t, sizeof t));
                ol += (size_t)snprintf(outs + ol, sizeof outs - ol, "  out %%%d state=%%9\n  out %%%d state=%%10\n", a, b);
                (void)c;
            }
            G.vid[G.nvals] = a, G.vk[G.nvals] = K_N, G.contig[G.nvals] = 1, G.nvals++;
            break;
        }
        case 9: { /* a loop over T with a carry and collects */
            if (did_loop || (vi = pick(&G, K_BN, 0)) < 0) break;
            did_loop = 1;
            int h = G.nv++, hout = G.nv++, xt = G.nv++, m1 = G.nv++, a1 = G.nv++, h2 = G.nv++, col = G.nv++, col2 = G.nv++;
            /* accumulators the executor may update in place: an elementwise
             * sum over the param, a window written by select_scatter */
            int acc = G.nv++, acc2 = G.nv++, accout = G.nv++, win = G.nv++, win2 = G.nv++, winout = G.nv++;
            char tt[256];
            emit(&G, "  loop L0 trip=T ivar=i0 {\n");
            emit(&G, "    carry %%%d = %%%d -> %%%d => %%%d\n", h, G.vid[vi], h2, hout);
            emit(&G, "    carry %%%d = %%0 -> %%%d => %%%d\n", acc, acc2, accout);
            emit(&G, "    carry %%%d = %%12 -> %%%d => %%%d\n", win, win2, winout);
            emit(&G, "    %%%d = select(%%12) dim=0 index=i0 : %s\n", xt, ty(&G, K_BN, t, sizeof t));
            emit(&G, "    %%%d = mul(%%%d, %%%d) : %s\n", m1, h, xt, ty(&G, K_BN, t, sizeof t));
            emit(&G, "    %%%d = add(%%%d, %%2) alpha=1 : %s\n", a1, m1, ty(&G, K_BN, t, sizeof t));
            emit(&G, "    %%%d = tanh(%%%d) : %s\n", h2, a1, ty(&G, K_BN, t, sizeof t));
            emit(&G, "    %%%d = add(%%%d, %%%d) alpha=1 : %s\n", acc2, acc, m1, ty(&G, K_BN, t, sizeof t));
            emit(&G, "    %%%d = select_scatter(%%%d, %%%d) dim=0 index=i0 : %s\n", win2, win, h2,
                 ty(&G, K_TBN, tt, sizeof tt));
            emit(&G, "    collect %%%d => %%%d\n", h2, col);
            emit(&G, "    collect %%%d => %%%d\n", m1, col2);
            emit(&G, "  }\n");
            ol += (size_t)snprintf(outs + ol, sizeof outs - ol, "  out %%%d keep\n  out %%%d keep\n", accout, winout);
            G.vid[G.nvals] = hout, G.vk[G.nvals] = K_BN, G.contig[G.nvals] = 1, G.nvals++;
            int sm = G.nv++;
            emit(&G, "  %%%d = sum(%%%d) dims=[0] keepdim=false dtype=none : %s\n", sm, col, ty(&G, K_BN, t, sizeof t));
            G.vid[G.nvals] = sm, G.vk[G.nvals] = K_BN, G.contig[G.nvals] = 1, G.nvals++;
            ol += (size_t)snprintf(outs + ol, sizeof outs - ol, "  out %%%d keep\n", col2);
            break;
        }
        default:
            if ((vi = pick(&G, K_BN, 0)) >= 0) binary(&G, vi, K_BN);
            break;
        }
    }
    /* outputs: the last value, and a few others */
    int nk = 0;
    for (int i = G.nvals - 1; i >= 0 && nk < 3; i--)
        if (G.vid[i] >= 13 && (i == G.nvals - 1 || rnd() % 3 == 0)) {
            ol += (size_t)snprintf(outs + ol, sizeof outs - ol, "  out %%%d keep\n", G.vid[i]);
            nk++;
        }
    if (rnd() % 4 == 0) { /* a state input written with a computed value */
        int vi = pick(&G, K_N, 0);
        if (vi >= 0 && G.vid[vi] >= 13 && !strstr(outs, "state=%11\n"))
            ol += (size_t)snprintf(outs + ol, sizeof outs - ol, "  out %%%d state=%%11\n", G.vid[vi]);
    }
    emit(&G, "%s}\n", outs);
    *nouts_hint = nk;
    return G.buf;
}

/* 15 modules of 20 generated graphs; every third module also with its
 * kernels emitted and compiled. */
static void test_random(void) {
    tally t = {0}, tc = {0};
    int nmod = 15, per = 20, parsed = 0, fused = 0, planned = 0;
    for (int mi = 0; mi < nmod; mi++) {
        size_t cap = 1 << 16, len = 0;
        char *text = malloc(cap);
        len += (size_t)snprintf(text, cap, "module optable=0000000000000000 graphs=%d\n", per);
        for (int i = 0; i < per; i++) {
            int nk;
            char *gtext = gen_graph(i, &nk);
            size_t gl = strlen(gtext);
            if (len + gl + 1 > cap) text = realloc(text, cap = 2 * (len + gl + 1));
            memcpy(text + len, gtext, gl + 1);
            len += gl;
            free(gtext);
        }
        jn_ir_module *orig = NULL, *opt = NULL;
        jn_status st = jn_ir_parse(text, len, &orig);
        CHECK(st == JN_OK);
        if (st != JN_OK) {
            fprintf(stderr, "generated module %d does not parse: %s\n%s", mi, jn_errmsg(), text);
            free(text);
            continue;
        }
        parsed += orig->ngraphs;
        CHECK(jn_ir_parse(text, len, &opt) == JN_OK);
        jn_cg_options o = {.verify_each = 1};
        st = jn_cg_optimize(opt, &o, NULL);
        CHECK(st == JN_OK);
        if (st == JN_OK) {
            int64_t hi[3] = {6, 3, 0}, ab = 0;
            for (int32_t k = 0; k < opt->ngraphs; k++) {
                const jn_ir_graph *g = opt->graphs[k];
                fused += g->nkernels > 0;
                planned += jn_ir_dim_eval(g, g->arena, hi, &ab) == JN_OK && ab > 0;
            }
            char what[64];
            snprintf(what, sizeof what, "random module %d", mi);
            int fails = jt_fail;
            compare_module(what, orig, opt, NULL, &t);
            tally wide = {0};
            for (int32_t k = 0; k < opt->ngraphs; k++) past_max(what, orig, opt, k, NULL, &wide);
            jn_ex_lib *lib = mi % 3 == 0 ? compile_lib(opt, what) : NULL;
            if (lib) compare_module(what, orig, opt, lib, &tc);
            for (int32_t k = 0; lib && k < opt->ngraphs; k++) past_max(what, orig, opt, k, lib, &wide);
            jn_ex_lib_close(lib);
            if (jt_fail != fails && getenv("EXEC_DEBUG")) fprintf(stderr, "%s", text);
        }
        jn_ir_module_free(orig);
        jn_ir_module_free(opt);
        free(text);
    }
    printf("random: %d graphs (%d with kernels, %d with an arena), %d runs compared (%d not runnable): %d outputs "
           "bitwise equal planned vs op by op, %d equal to the graph before the passes; arena %lld bytes, peak %lld "
           "planned vs %lld op by op\n", parsed, fused, planned, t.runs, t.skipped, t.bitwise, t.numeric,
           (long long)t.arena, (long long)t.plan_peak, (long long)t.eager_peak);
    printf("random, compiled kernels: %d runs (%lld generated kernel calls), %d outputs bitwise equal to op by op "
           "(compiled reductions included)\n", tc.runs, (long long)tc.gen_calls, tc.bitwise);
    printf("random, past the maxima: %d runs took the wide plan, %d outputs bitwise equal to op by op\n",
           past_max_graphs, past_max_outputs);
    CHECK(parsed == nmod * per && t.runs >= 3 * parsed - parsed / 10 && fused > parsed / 2 && planned > parsed / 2);
    CHECK(no_cc || (tc.runs >= parsed && tc.gen_calls > parsed && tc.bitwise > 0));
}

/* ----------------------------------------------------- compiled kernels */
static const char *KGRAPH =
    "module optable=0000000000000000 graphs=1\n"
    "graph g group=0 variant=0 parent=-1 diverge=0 support=1 steps=0..0 entry=\"a\" exit=\"b\" {\n"
    "  sym B dim 1..5\n"
    "  in %0 host f32[B, 4]\n"
    "  in %1 state f32[4, 3]\n"
    "  in %2 state f32[3]\n"
    "  in %3 host f32[3]\n"
    "  in %4 host f32[B, 1]\n"
    "  in %5 scalar f64[] = 0.5\n"
    "  %6 = mm(%0, %1) : f32[B, 3]\n"
    "  %7 = add(%6, %2) alpha=1 : f32[B, 3]\n"
    "  %8 = relu(%7) : f32[B, 3]\n"
    "  %9 = mul(%8, %3) : f32[B, 3]\n"
    "  %10 = add(%9, %4) alpha=%5 : f32[B, 3]\n"
    "  %11 = exp(%10) : f32[B, 3]\n"
    "  %12 = sum(%11) dims=[1] keepdim=false dtype=none : f32[B]\n"
    "  %13 = sub(%0, %4) alpha=1 : f32[B, 4]\n"
    "  %14 = mul(%13, %13) : f32[B, 4]\n"
    "  out %8 keep\n"
    "  out %10 keep\n"
    "  out %12 keep\n"
    "  out %14 keep\n"
    "}\n";

/* The three kernels of KGRAPH by hand, as the emitter would make them:
 * K0 the mm's epilogue (bias add, relu), K1 mul/add/exp/sum, K2 sub/mul
 * through c->parallel_for.  Strided n-d loops over any ndim. */
static const char *KSRC =
    "#include <stdint.h>\n#include <math.h>\n"
    "typedef struct { int32_t nops, ndim, nred, pad_; char *const *data; const int64_t *shape;\n"
    "  const int64_t *strides; const double *scalars;\n"
    "  void (*parallel_for)(int64_t, int64_t, void (*)(int64_t, int64_t, void *), void *); } jn_kcall;\n"
    "const int jn_kabi_version = ABI;\n"
    "const unsigned long long jn_kmodule_hash = HASHULL;\n"
    "static int64_t at(const jn_kcall *c, int k, int64_t lin, int from, int to) {\n"
    "  int64_t off = 0;\n"
    "  for (int d = to - 1; d >= from; d--) { off += (lin % c->shape[d]) * c->strides[k * c->ndim + d]; lin /= c->shape[d]; }\n"
    "  return off;\n"
    "}\n"
    "static int64_t prod(const jn_kcall *c, int from, int to) { int64_t n = 1; for (int d = from; d < to; d++) n *= c->shape[d]; return n; }\n"
    "void jn_k0_0(const jn_kcall *c) {\n"
    "  int64_t n = prod(c, 0, c->ndim);\n"
    "  for (int64_t i = 0; i < n; i++) {\n"
    "    float a = *(float *)(c->data[0] + (at(c, 0, i, 0, c->ndim)));\n"
    "    float b = *(float *)(c->data[1] + (at(c, 1, i, 0, c->ndim)));\n"
    "    float v = a + (float)1.0 * b; v = v < 0 ? 0 : v;\n"
    "    *(float *)(c->data[2] + (at(c, 2, i, 0, c->ndim))) = v;\n"
    "  }\n"
    "}\n"
    "void jn_k0_1(const jn_kcall *c) {\n"
    "  int nk = c->ndim - c->nred;\n"
    "  int64_t no = prod(c, 0, nk), ni = prod(c, nk, c->ndim);\n"
    "  float al = (float)c->scalars[0];\n"
    "  for (int64_t o = 0; o < no; o++) {\n"
    "    double acc = 0;\n"
    "    for (int64_t i = 0; i < ni; i++) {\n"
    "      char *p[5];\n"
    "      for (int k = 0; k < 5; k++) p[k] = c->data[k] + (at(c, k, o, 0, nk)) + (at(c, k, i, nk, c->ndim));\n"
    "      float t = *(float *)p[0] * *(float *)p[1];\n"
    "      float u = t + al * *(float *)p[2];\n"
    "      *(float *)p[3] = u;\n"
    "      acc += expf(u);\n"
    "    }\n"
    "    *(float *)(c->data[4] + (at(c, 4, o, 0, nk))) = (float)acc;\n"
    "  }\n"
    "}\n"
    "static void k2_range(int64_t b, int64_t e, void *ctx) {\n"
    "  const jn_kcall *c = ctx;\n"
    "  for (int64_t i = b; i < e; i++) {\n"
    "    float a = *(float *)(c->data[0] + (at(c, 0, i, 0, c->ndim)));\n"
    "    float b2 = *(float *)(c->data[1] + (at(c, 1, i, 0, c->ndim)));\n"
    "    float t = a - (float)1.0 * b2;\n"
    "    *(float *)(c->data[2] + (at(c, 2, i, 0, c->ndim))) = t * t;\n"
    "  }\n"
    "}\n"
    "void jn_k0_2(const jn_kcall *c) { c->parallel_for(prod(c, 0, c->ndim), 2, k2_range, (void *)c); }\n";

/* Compiles KSRC with the given ABI and hash into a .so; its bytes. */
static void *build_so(int abi, uint64_t hash, size_t *len) {
    char src[8192];
    const char *p = KSRC;
    size_t o = 0;
    while (*p && o < sizeof src - 64) { /* ABI and HASHULL substituted */
        if (!strncmp(p, "ABI;", 4)) {
            o += (size_t)snprintf(src + o, sizeof src - o, "%d;", abi);
            p += 4;
        } else if (!strncmp(p, "HASHULL", 7)) {
            o += (size_t)snprintf(src + o, sizeof src - o, "0x%016llxULL", (unsigned long long)hash);
            p += 7;
        } else {
            src[o++] = *p++;
        }
    }
    src[o] = 0;
    FILE *f = fopen(tmp("k.c"), "w");
    if (!f) return NULL;
    fputs(src, f);
    fclose(f);
    char cmd[1024];
    snprintf(cmd, sizeof cmd, "cc -shared -fPIC -O1 -o '%s' '%s' -lm", tmp("k.so"), tmp("k.c"));
    if (system(cmd) != 0) return NULL;
    return read_file(tmp("k.so"), len);
}

static void test_compiled(void) {
    if (system("cc --version >/dev/null 2>&1") != 0) {
        printf("compiled: no C compiler (cc), skipped\n");
        return;
    }
    if (jt_tmp_begin("exec") != 0) return;
    jn_ir_module *orig = NULL, *opt = NULL;
    CHECK(jn_ir_parse(KGRAPH, strlen(KGRAPH), &orig) == JN_OK && jn_ir_parse(KGRAPH, strlen(KGRAPH), &opt) == JN_OK);
    CHECK(jn_cg_optimize(opt, NULL, NULL) == JN_OK);
    const jn_ir_graph *g = opt->graphs[0];
    /* the kernel table the hand-written functions assume */
    CHECK(g->nkernels == 3);
    if (g->nkernels == 3) {
        CHECK(g->kernels[0].kind == JN_IR_K_GEMM && g->kernels[0].impl == JN_IR_IMPL_GEMM);
        CHECK(g->kernels[1].kind == JN_IR_K_EW_REDUCE && g->kernels[1].impl == JN_IR_IMPL_GEN);
        CHECK(g->kernels[2].kind == JN_IR_K_EW && g->kernels[2].impl == JN_IR_IMPL_GEN);
        jn_cg_kernel_io io;
        CHECK(jn_cg_kernel_describe(g, 0, &io) == JN_OK && io.ncall == 3 && io.ncall_in == 2 && io.call[0] == 6 &&
              io.call[1] == 2 && io.call[2] == 8);
        jn_cg_kernel_io_free(&io);
        CHECK(jn_cg_kernel_describe(g, 1, &io) == JN_OK && io.ncall == 5 && io.call[0] == 8 && io.call[1] == 3 &&
              io.call[2] == 4 && io.call[3] == 10 && io.call[4] == 12 && io.nscalar == 1 && io.scalar[0] == 5);
        jn_cg_kernel_io_free(&io);
        CHECK(jn_cg_kernel_describe(g, 2, &io) == JN_OK && io.ncall == 3 && io.call[0] == 0 && io.call[1] == 4 &&
              io.call[2] == 14);
        jn_cg_kernel_io_free(&io);
    }
    uint64_t h = 0;
    CHECK(jn_cg_module_hash(opt, &h) == JN_OK);
    size_t len = 0;
    void *so = build_so(JN_KABI_VERSION, h, &len);
    CHECK(so != NULL);
    jn_ex_lib *lib = NULL;
    jn_status st = so ? jn_ex_lib_open(so, len, h, "test bundle", &lib) : JN_ERR_IO;
    CHECK(st == JN_OK);
    if (st) fprintf(stderr, "lib_open: %s\n", jn_errmsg());
    CHECK(jn_ex_lib_kernel(lib, 0, 1) != NULL && jn_ex_lib_kernel(lib, 0, 3) == NULL &&
          jn_ex_lib_kernel(lib, 1, 0) == NULL);
    tally t = {0};
    uint8_t tol[4] = {0, 0, 1, 0}; /* the sum: expf and the eager exp may differ in the last bit */
    int64_t bs[] = {1, 3, 5};
    for (int i = 0; i < 3 && lib; i++) {
        compare_at("compiled", orig, opt, 0, lib, &bs[i], 99 + (uint64_t)i, &t, tol);
        jn_tensor *o[4] = {0};
        jn_ex_stats s;
        CHECK(jt_run_graph(opt, 0, lib, 0, &bs[i], 5, o, &s) == JN_OK);
        CHECK(s.kernels_gen == 3 && s.kernels_lib == 0 && s.nodes_eager == 1); /* the mm alone runs eagerly */
        for (int k = 0; k < 4; k++)
            if (o[k]) jn_tensor_decref(o[k]);
    }
    CHECK(t.runs == 3 && t.bitwise == 9);
    /* the kernel clock counts each node's kernel and each generated kernel once (the
     * GEMM's epilogue kernel includes the mm node, which counts alone: nested, once) */
    if (lib) {
        jn_tensor *in[6] = {0}, *o[4] = {0};
        jn_ex_exec *x = NULL;
        jn_ex_stats s;
        CHECK(jn_ex_make_inputs(g, &bs[2], 7, in) == JN_OK && jn_ex_new(opt, 0, lib, 0, &x) == JN_OK);
        double n0, n1;
        uint64_t c0, c1;
        jn_rt_kclock_set(1);
        CHECK(jn_rt_kclock_threads == 1);
        jn_rt_kclock_read(&n0, &c0);
        CHECK(jn_ex_run(x, in, &bs[2], o) == JN_OK);
        jn_rt_kclock_read(&n1, &c1);
        jn_rt_kclock_set(0);
        jn_ex_last_stats(x, &s);
        CHECK(c1 - c0 == (uint64_t)(s.kernels_gen + s.nodes_eager) && n1 > n0 && jn_rt_kclock_threads == 0);
        jn_tensor *o2[4] = {0};
        CHECK(jn_ex_run(x, in, &bs[2], o2) == JN_OK); /* off: nothing counted */
        jn_rt_kclock_read(&n0, &c0);
        CHECK(c0 == c1);
        jn_ex_free(x);
        for (int k = 0; k < 6; k++)
            if (in[k]) jn_tensor_decref(in[k]);
        for (int k = 0; k < 4; k++) {
            if (o[k]) jn_tensor_decref(o[k]);
            if (o2[k]) jn_tensor_decref(o2[k]);
        }
    }
    printf("compiled: %d runs with hand-written kernels from a shared object, %d outputs bitwise equal to op by op, the "
           "sum within 1e-5\n", t.runs, t.bitwise);
    jn_ex_lib_close(lib);
    /* refusals name the origin and the fix */
    lib = NULL;
    CHECK(so && jn_ex_lib_open(so, len, h ^ 1, "bundle X", &lib) == JN_ERR_VALUE && !lib && has("bundle X") &&
          has("another module") && has("janus optimize"));
    free(so);
    so = build_so(JN_KABI_VERSION + 1, h, &len);
    CHECK(so && jn_ex_lib_open(so, len, h, "bundle Y", &lib) == JN_ERR_VALUE && !lib && has("bundle Y") &&
          has("kernel ABI"));
    /* a truncated object (a corrupt one is the bundle checksum's business: dlopen trusts what it maps) */
    CHECK(so && jn_ex_lib_open(so, 64, h, "bundle Z", &lib) == JN_ERR_VALUE && !lib && has("bundle Z") &&
          has("do not load"));
    free(so);
    CHECK(jn_ex_lib_open("nope", 4, h, "bundle W", &lib) == JN_ERR_VALUE && has("not a shared object"));
    jn_ir_module_free(orig);
    jn_ir_module_free(opt);
    jt_tmp_end();
}

/* ----------------------------------------------------------- errors */
static void test_errors(void) {
    jn_ir_module *m = NULL;
    CHECK(jn_ir_parse(KGRAPH, strlen(KGRAPH), &m) == JN_OK);
    CHECK(jn_cg_optimize(m, NULL, NULL) == JN_OK);
    const jn_ir_graph *g = m->graphs[0];
    jn_ex_exec *x = NULL;
    CHECK(jn_ex_new(m, 1, NULL, 0, &x) == JN_ERR_VALUE && !x);
    CHECK(jn_ex_new(m, 0, NULL, 0, &x) == JN_OK);
    int64_t sv[1] = {3};
    jn_tensor *in[6];
    CHECK(jn_ex_make_inputs(g, sv, 1, in) == JN_OK);
    jn_tensor *outs[4] = {0};
    /* symbols from the inputs */
    int64_t b[1];
    CHECK(jn_ex_bind_syms(g, in, b) == JN_OK && b[0] == 3);
    CHECK(jn_ex_run(x, in, b, outs) == JN_OK && outs[3] && outs[3]->shape[0] == 3);
    jn_ex_stats s;
    jn_ex_last_stats(x, &s);
    CHECK(s.arena_bytes == 0 && s.kernels_lib == 3 && s.kernels_gen == 0 && s.nodes_eager == 9); /* all values leave */
    for (int k = 0; k < 4; k++) jn_tensor_decref(outs[k]), outs[k] = NULL;
    /* the arena is reused: a smaller batch fits */
    int64_t sv2[1] = {1};
    jn_tensor *in2[6];
    CHECK(jn_ex_make_inputs(g, sv2, 1, in2) == JN_OK);
    CHECK(jn_ex_run(x, in2, sv2, outs) == JN_OK && outs[1]->shape[0] == 1);
    for (int k = 0; k < 4; k++) jn_tensor_decref(outs[k]), outs[k] = NULL;
    /* disagreeing inputs, wrong shape, wrong dtype */
    CHECK(jn_ex_bind_syms(g, (jn_tensor *[]){in[0], in[1], in[2], in[3], in2[4], in[5]}, b) == JN_ERR_SHAPE &&
          has("symbol B") && has("input 4"));
    CHECK(jn_ex_run(x, in2, sv, outs) == JN_ERR_SHAPE && has("input 0") && has("dim 0 (B)") && !outs[0]);
    jn_tensor *bad = jn_tensor_zeros(JN_F64, 2, (int64_t[]){3, 4});
    jn_tensor *in3[6] = {bad, in[1], in[2], in[3], in[4], in[5]};
    CHECK(jn_ex_run(x, in3, sv, outs) == JN_ERR_TYPE && has("input 0") && has("float64") && has("float32"));
    jn_tensor *in4[6] = {in[0], in[1], in[2], in[3], in[4], NULL};
    CHECK(jn_ex_run(x, in4, sv, outs) == JN_ERR_VALUE && has("input 5") && has("missing"));
    jn_tensor_decref(bad);
    for (int i = 0; i < 6; i++) {
        jn_tensor_decref(in[i]);
        jn_tensor_decref(in2[i]);
    }
    jn_ex_free(x);
    jn_ir_module_free(m);
}

/* The one graph of module text G, an executor over it and its synthetic inputs at symbols 0. */
static void one_graph(const char *G, jn_ir_module **m, jn_ex_exec **x, jn_tensor **in) {
    *m = NULL;
    *x = NULL;
    CHECK(jn_ir_parse(G, strlen(G), m) == JN_OK);
    CHECK(jn_ex_new(*m, 0, NULL, 0, x) == JN_OK);
    CHECK(jn_ex_make_inputs((*m)->graphs[0], (int64_t[]){0}, 1, in) == JN_OK);
}

/* A run that fails after it wrote state in place says so (replay must not
 * re-run such a step eagerly: its inputs are gone); one that fails before
 * does not. */

static void test_state_written(void) {
    static const char *G =
        "module optable=0000000000000000 graphs=1\n"
        "graph g group=0 variant=0 parent=-1 diverge=0 support=1 steps=0..0 entry=\"a\" exit=\"b\" {\n"
        "  in %0 state f32[4]\n"
        "  in %1 host f32[4]\n"
        "  in %2 state f32[5, 3]\n"
        "  in %3 host i64[2]\n"
        "  %4 = copy_(%0, %1) : f32[4]\n"
        "  %5 = embedding(%2, %3) padding_idx=-1 : f32[2, 3]\n"
        "  out %4 state=%0\n"
        "  out %5 keep\n"
        "}\n";
    jn_ir_module *m;
    jn_ex_exec *x;
    jn_tensor *in[4];
    one_graph(G, &m, &x, in);
    jn_tensor *outs[1] = {0};
    jn_ex_stats st;
    CHECK(jn_ex_run(x, in, (int64_t[]){0}, outs) == JN_OK && outs[0]);
    jn_ex_last_stats(x, &st);
    CHECK(st.state_written == 1 && !memcmp(jn_data(in[0]), jn_data(in[1]), 16));
    jn_tensor_decref(outs[0]), outs[0] = NULL;
    ((int64_t *)jn_data(in[3]))[1] = 7; /* out of range for 5 rows: the embedding fails after copy_ */
    CHECK(jn_ex_run(x, in, (int64_t[]){0}, outs) != JN_OK && !outs[0]);
    jn_ex_last_stats(x, &st);
    CHECK(st.state_written == 1);
    jn_tensor *bad = jn_tensor_zeros(JN_F64, 1, (int64_t[]){4}), *in2[4] = {in[0], bad, in[2], in[3]};
    CHECK(jn_ex_run(x, in2, (int64_t[]){0}, outs) == JN_ERR_TYPE); /* refused before any node ran */
    jn_ex_last_stats(x, &st);
    CHECK(st.state_written == 0);
    jn_tensor_decref(bad);
    for (int i = 0; i < 4; i++) jn_tensor_decref(in[i]);
    jn_ex_free(x);
    jn_ir_module_free(m);
}

/* Numbers given as doubles (jn_ex_run_scalars, what replay passes) run as
 * the same numbers in 0-d tensors do, bitwise, also when a scalar changes
 * between runs, when the symbols change, and on the runs that skip the
 * per-node type checks (same symbols and scalars as a checked run); a
 * wrong input shape is still refused on such a run. */
static void test_scalars_rerun(void) {
    static const char *G =
        "module optable=0000000000000000 graphs=1\n"
        "graph g group=0 variant=0 parent=-1 diverge=0 support=1 steps=0..0 entry=\"a\" exit=\"b\" {\n"
        "  sym B dim 1..5\n"
        "  in %0 host f32[B, 3]\n"
        "  in %1 scalar f64[] = 0.1\n"
        "  in %2 scalar f64[] = 0.5\n"
        "  in %3 scalar i64[] = 2\n"
        "  %4 = mul(%0, %1) : f32[B, 3]\n"
        "  %5 = add(%4, %0) alpha=%2 : f32[B, 3]\n"
        "  %6 = pow(%5, %3) : f32[B, 3]\n"
        "  %7 = sum(%6) dims=[1] keepdim=false dtype=none : f32[B]\n"
        "  out %7 keep\n"
        "  out %5 keep\n"
        "}\n";
    jn_ir_module *m = NULL, *opt = NULL;
    jn_ex_exec *xs = NULL, *xt = NULL, *xe = NULL;
    CHECK(jn_ir_parse(G, strlen(G), &m) == JN_OK && jn_ir_parse(G, strlen(G), &opt) == JN_OK);
    if (!m || !opt) return;
    CHECK(jn_cg_optimize(opt, NULL, NULL) == JN_OK);
    CHECK(jn_ex_new(opt, 0, NULL, 0, &xs) == JN_OK && jn_ex_new(opt, 0, NULL, 0, &xt) == JN_OK &&
          jn_ex_new(m, 0, NULL, JN_EX_EAGER, &xe) == JN_OK);
    const struct { int64_t b; double s1, s2, s3; } runs[] = {
        {3, 0.1, 0.5, 2}, {3, 0.1, 0.5, 2}, {3, 0.7, -2.25, 2}, {3, 0.7, -2.25, 3}, {5, 0.7, -2.25, 3},
        {5, 0.7, -2.25, 3}, {3, 0.1, 0.5, 2}, {3, 0.1, 0.5, 2}};
    int same = 0, n = (int)(sizeof runs / sizeof runs[0]);
    for (int r = 0; r < n && xs && xt && xe; r++) {
        int64_t syms[1] = {runs[r].b};
        jn_tensor *in[4] = {0};
        CHECK(jn_ex_make_inputs(opt->graphs[0], syms, 7 + (uint64_t)r, in) == JN_OK);
        double num[4] = {0, runs[r].s1, runs[r].s2, runs[r].s3};
        for (int i = 1; i < 4; i++) {
            jn_tensor_decref(in[i]);
            in[i] = jn_scalar_f64(num[i], i == 3 ? JN_I64 : JN_F64, 1);
        }
        jn_tensor *only_x[4] = {in[0], NULL, NULL, NULL};
        jn_tensor *os[2] = {0}, *ot[2] = {0}, *oe[2] = {0};
        CHECK(jn_ex_run_scalars(xs, only_x, num, syms, os) == JN_OK);
        CHECK(jn_ex_run(xt, in, syms, ot) == JN_OK && jn_ex_run(xe, in, syms, oe) == JN_OK);
        for (int k = 0; k < 2; k++) {
            int eq = os[k] && ot[k] && oe[k] && jn_numel(os[k]) == jn_numel(oe[k]) &&
                     !memcmp(jn_data(os[k]), jn_data(ot[k]), (size_t)jn_numel(os[k]) * 4) &&
                     !memcmp(jn_data(os[k]), jn_data(oe[k]), (size_t)jn_numel(os[k]) * 4);
            CHECK(eq);
            same += eq;
            jn_tensor_decref(os[k]), jn_tensor_decref(ot[k]), jn_tensor_decref(oe[k]);
        }
        if (r == 1) { /* a checked run's values again: a wrong shape is still refused */
            jn_tensor *bad = jn_tensor_zeros(JN_F32, 2, (int64_t[]){4, 3}), *b4[4] = {bad, NULL, NULL, NULL};
            jn_tensor *ob[2] = {0};
            CHECK(jn_ex_run_scalars(xs, b4, num, syms, ob) == JN_ERR_SHAPE && !ob[0] && has("dim 0"));
            jn_tensor_decref(bad);
        }
        for (int i = 0; i < 4; i++) jn_tensor_decref(in[i]);
    }
    CHECK(same == 2 * n);
    printf("scalars: %d runs (scalars and symbols changing, repeated runs unchecked) bitwise equal to 0-d tensors "
           "and op by op\n", n);
    jn_ex_free(xs), jn_ex_free(xt), jn_ex_free(xe);
    jn_ir_module_free(m), jn_ir_module_free(opt);
}

/* State written straight into its input (direct_state): plain SGD's
 * p.add_(grad * c, alpha=-lr) as the graph has it, add(p, mul(g, c))
 * written back to p, runs with its output in p's own buffer -- compiled
 * (one fused kernel), member by member and op by op -- bitwise equal to
 * the eager executor; the state tensor keeps its buffer and gets one
 * version; a value written so is read later through the state's buffer
 * (wider: the mul after the add).  Not taken, and still equal: a state
 * read again after the update, and per run a state input that is not
 * contiguous or overlaps another input.  (A fused kernel whose space is
 * larger than the state would compute its elements twice; p_fuse.c gives
 * every member the kernel's shape, so wider's add stays alone, and the
 * test expects the direct write only while it does.) */
static const char *DGRAPH =
    "module optable=0000000000000000 graphs=3\n"
    "graph sgd group=0 variant=0 parent=-1 diverge=0 support=1 steps=0..0 entry=\"a\" exit=\"b\" {\n"
    "  in %0 state f32[4, 3]\n"
    "  in %1 host f32[4, 3]\n"
    "  in %2 scalar f64[] = 0.25\n"
    "  in %3 scalar f64[] = -0.5\n"
    "  %4 = mul(%1, %2) : f32[4, 3]\n"
    "  %5 = add(%0, %4) alpha=%3 : f32[4, 3]\n"
    "  out %5 state=%0\n"
    "  out %4 keep\n"
    "}\n"
    "graph reread group=1 variant=0 parent=-1 diverge=0 support=1 steps=0..0 entry=\"a\" exit=\"b\" {\n"
    "  in %0 state f32[4, 3]\n"
    "  in %1 host f32[4, 3]\n"
    "  %2 = add(%0, %1) alpha=1 : f32[4, 3]\n"
    "  %3 = sum(%0) dims=[1] keepdim=false dtype=none : f32[4]\n"
    "  out %2 state=%0\n"
    "  out %3 keep\n"
    "}\n"
    "graph wider group=2 variant=0 parent=-1 diverge=0 support=1 steps=0..0 entry=\"a\" exit=\"b\" {\n"
    "  in %0 state f32[4, 3]\n"
    "  in %1 host f32[4, 3]\n"
    "  in %2 host f32[2, 4, 3]\n"
    "  %3 = add(%0, %1) alpha=1 : f32[4, 3]\n"
    "  %4 = mul(%3, %2) : f32[2, 4, 3]\n"
    "  out %3 state=%0\n"
    "  out %4 keep\n"
    "}\n";

/* One run of graph gi on copies of in (in[0]: the state, made as `layout`
 * says: 0 contiguous, 1 a transposed view, 2 the same tensor as in[1]);
 * the state after the run and the kept output to *st, *keep. */
static jn_status direct_run(const jn_ir_module *m, int32_t gi, const jn_ex_lib *lib, int flags, jn_tensor *const *in,
                            int layout, jn_tensor **st, jn_tensor **keep, jn_ex_stats *stats) {
    const jn_ir_graph *g = m->graphs[gi];
    jn_tensor *mine[4] = {0};
    for (int32_t i = 0; i < g->ninputs; i++) mine[i] = jn_contiguous(in[i]); /* a copy of a contiguous one too */
    if (layout == 1) { /* the same values through a transposed [3, 4] buffer */
        jn_tensor *t = jn_tensor_zeros(JN_F32, 2, (int64_t[]){3, 4}), *v = jn_tensor_alias(t);
        v->shape[0] = 4, v->shape[1] = 3, v->strides[0] = 1, v->strides[1] = 4, v->is_view = 1;
        CHECK(jn_copy_into(v, mine[0]) == JN_OK && !jn_is_contiguous(v));
        jn_tensor_decref(t), jn_tensor_decref(mine[0]);
        mine[0] = v;
    } else if (layout == 2) {
        jn_tensor_decref(mine[0]);
        jn_tensor_incref(mine[1]);
        mine[0] = mine[1];
    }
    uint64_t ver = mine[0]->storage->version;
    jn_ex_exec *x = NULL;
    jn_status s = jn_ex_new(m, gi, lib, flags, &x);
    if (s == JN_OK) s = jn_ex_run(x, mine, NULL, keep);
    if (s == JN_OK) {
        jn_ex_last_stats(x, stats);
        CHECK(mine[0]->storage->version == ver + 1); /* written once, in place or copied back */
        *st = jn_contiguous(mine[0]);
    }
    jn_ex_free(x);
    for (int32_t i = 0; i < g->ninputs; i++) jn_tensor_decref(mine[i]);
    return s;
}

static int same_values(const jn_tensor *a, const jn_tensor *b) {
    return a && b && jn_numel(a) == jn_numel(b) && !memcmp(jn_data(a), jn_data(b), (size_t)jn_numel(a) * 4);
}

static void test_state_direct(void) {
    jn_ir_module *orig = NULL, *opt = NULL;
    CHECK(jn_ir_parse(DGRAPH, strlen(DGRAPH), &orig) == JN_OK && jn_ir_parse(DGRAPH, strlen(DGRAPH), &opt) == JN_OK);
    if (!orig || !opt) return;
    CHECK(jn_cg_optimize(opt, NULL, NULL) == JN_OK);
    int no_cc = 0, checked = 0;
    jn_ex_lib *lib = jt_compile_lib(opt, "state direct", &no_cc);
    /* the wider graph fuses its add into the mul's [2, 4, 3] kernel, or not: direct only if not */
    const jn_ir_graph *gw = opt->graphs[2];
    int wide_fused = gw->nodes[0].kernel >= 0 && gw->kernels[gw->nodes[0].kernel].root != 0;
    for (int32_t gi = 0; gi < 3; gi++) {
        jn_tensor *in[4] = {0};
        CHECK(jn_ex_make_inputs(orig->graphs[gi], NULL, 11 + (uint64_t)gi, in) == JN_OK);
        for (int layout = 0; layout < (gi == 0 ? 3 : 1); layout++) {
            jn_tensor *est = NULL, *ekeep = NULL;
            jn_ex_stats es = {0};
            CHECK(direct_run(orig, gi, NULL, JN_EX_EAGER, in, layout, &est, &ekeep, &es) == JN_OK);
            CHECK(es.state_direct == 0);
            for (int how = 0; how < 2; how++) { /* compiled (when a compiler is here), member by member */
                const jn_ex_lib *use = how == 0 ? lib : NULL;
                if (how == 0 && !lib) continue;
                jn_tensor *st = NULL, *keep = NULL;
                jn_ex_stats ss = {0};
                CHECK(direct_run(opt, gi, use, 0, in, layout, &st, &keep, &ss) == JN_OK);
                CHECK(same_values(st, est) && same_values(keep, ekeep));
                int want = gi == 0 ? layout == 0 : gi == 1 ? 0 : !wide_fused;
                CHECK(ss.state_direct == want);
                if (ss.state_direct != want)
                    fprintf(stderr, "graph %d layout %d %s: state_direct %d, expected %d\n", gi, layout,
                            how ? "member by member" : "compiled", ss.state_direct, want);
                if (how == 0 && gi == 0) CHECK(ss.kernels_gen == 1 && ss.nodes_eager == 0);
                checked++;
                if (st) jn_tensor_decref(st);
                if (keep) jn_tensor_decref(keep);
            }
            jn_tensor_decref(est), jn_tensor_decref(ekeep);
        }
        for (int i = 0; i < 4; i++)
            if (in[i]) jn_tensor_decref(in[i]);
    }
    /* one executor: a run refused the direct write, the next takes it again */
    jn_tensor *in[4] = {0}, *k = NULL;
    jn_ex_exec *x = NULL;
    jn_ex_stats ss = {0};
    CHECK(jn_ex_make_inputs(opt->graphs[0], NULL, 3, in) == JN_OK && jn_ex_new(opt, 0, lib, 0, &x) == JN_OK);
    jn_tensor *alias[4] = {in[1], in[1], in[2], in[3]};
    CHECK(jn_ex_run(x, alias, NULL, &k) == JN_OK);
    jn_ex_last_stats(x, &ss);
    CHECK(ss.state_direct == 0);
    jn_tensor_decref(k);
    CHECK(jn_ex_run(x, in, NULL, &k) == JN_OK);
    jn_ex_last_stats(x, &ss);
    CHECK(ss.state_direct == 1);
    jn_tensor_decref(k);
    jn_ex_free(x);
    for (int i = 0; i < 4; i++) jn_tensor_decref(in[i]);
    printf("state direct: %d runs bitwise equal to op by op, written in place only where it is safe%s\n", checked,
           lib ? "" : " (no compiled kernels: member by member only)");
    jn_ex_lib_close(lib);
    jn_ir_module_free(orig), jn_ir_module_free(opt);
}

/* The shared arena is given back when eager work misses the block cache
 * after IDLE_RUNS (16) runs on it, and only then; the next run allocates it
 * again and computes the same. */
static void test_idle_release(void) {
    static const char *G =
        "module optable=0000000000000000 graphs=1\n"
        "graph g group=0 variant=0 parent=-1 diverge=0 support=1 steps=0..0 entry=\"a\" exit=\"b\" {\n"
        "  in %0 host f32[64, 1024]\n"
        "  %1 = exp(%0) : f32[64, 1024] mem=0\n"
        "  %2 = sum(%1) dims=[1] keepdim=false dtype=none : f32[64]\n"
        "  out %2 keep\n"
        "  arena 262144\n"
        "}\n";
    jn_ir_module *m;
    jn_ex_exec *x;
    jn_tensor *in[1];
    one_graph(G, &m, &x, in);
    float first[64];
    jn_tensor *out = NULL;
    /* block sizes nothing else in this test uses (the second over 4x the
     * first: the cache serves a request from a block up to 2x larger), so
     * each allocation misses */
    int64_t odd = 70001;
    for (int r = 0; r < 40; r++) {
        CHECK(jn_ex_run(x, in, (int64_t[]){0}, &out) == JN_OK && out);
        if (!out) break;
        if (r == 0) memcpy(first, jn_data(out), sizeof first);
        CHECK(!memcmp(first, jn_data(out), sizeof first));
        jn_tensor_decref(out), out = NULL;
        CHECK(jn_ex_shared_arena_bytes() >= 262144);
        if (r == 5 || r == 20) {
            jn_tensor *e = jn_tensor_zeros(JN_F32, 1, (int64_t[]){odd});
            odd *= 5; /* eager work that misses */
            jn_tensor_decref(e);
            /* 6 runs: kept; 16 more (r = 6..20 plus this one's): given back */
            CHECK((jn_ex_shared_arena_bytes() == 0) == (r == 20));
        }
    }
    jn_tensor_decref(in[0]);
    jn_ex_free(x);
    jn_ir_module_free(m);
}

/* codegen's wt pass (p_wt.c) on tests/c/data/linear_wt.ir, optimized where
 * this CPU's best small kernel runs: W and U are transposed once (two
 * clones; none at the OpenBLAS level), V is not.  Then at every kernel
 * level this CPU has (a replay on a machine without the small kernel reads
 * such a bundle too) the optimized graph's outputs are the unrewritten
 * graph's bit for bit: linear's bits do not depend on its weight's layout. */
static void test_wt_pass(void) {
    char path[1100];
    snprintf(path, sizeof path, "%s", __FILE__);
    char *p = strstr(path, "tests/c/test_exec.c");
    if (!p) return;
    snprintf(p, sizeof path - (size_t)(p - path), "tests/c/data/linear_wt.ir");
    size_t len;
    char *text = read_file(path, &len);
    jn_ir_module *orig = NULL, *opt = NULL;
    CHECK(text && jn_ir_parse(text, len, &orig) == JN_OK && jn_ir_parse(text, len, &opt) == JN_OK);
    jn_cg_options o = {.verify_each = 1};
    CHECK(opt && jn_cg_optimize(opt, &o, NULL) == JN_OK);
    int best = jn_rt_sgemm_level(-1), clones = 0;
    for (int32_t n = 0; opt && n < opt->graphs[0]->nnodes; n++) clones += opt->graphs[0]->nodes[n].op == JN_OP_clone;
    CHECK(clones == (best > JN_SGEMM_OPENBLAS ? 2 : 0));
    for (int level = best; orig && opt && level >= 0; level--) {
        jn_rt_sgemm_level(level);
        jn_tensor *a[8] = {0}, *b[8] = {0};
        int64_t sv[1] = {0};
        CHECK(jt_run_graph(orig, 0, NULL, JN_EX_EAGER, sv, 11, a, NULL) == JN_OK);
        CHECK(jt_run_graph(opt, 0, NULL, 0, sv, 11, b, NULL) == JN_OK);
        for (int32_t k = 0; k < opt->graphs[0]->noutputs; k++) {
            CHECK(a[k] && b[k] && jt_same(a[k], b[k], 1, 0));
            if (a[k]) jn_tensor_decref(a[k]);
            if (b[k]) jn_tensor_decref(b[k]);
        }
    }
    jn_rt_sgemm_level(best);
    jn_ir_module_free(orig);
    jn_ir_module_free(opt);
    free(text);
}

int main(void) {
    test_idle_release();
    test_errors();
    test_state_written();
    test_scalars_rerun();
    test_state_direct();
    test_wt_pass();
    test_compiled();
    test_golden();
    test_random();
    JT_DONE();
}
