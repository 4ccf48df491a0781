/* p_wt.c -- a weight read by several small linears is transposed once.
 *
 * linear(x, W, b) is x @ W^T + b.  For a few rows of x (a recurrent step at
 * a small batch) the small-GEMM kernel transposes W's 16 x 16 blocks in
 * registers at every call (gemm_nt_rows), or packs W^T into scratch;
 * the same product over a W^T made beforehand runs as the plain NN kernel,
 * 1.4-2x faster at [8 x 64] x [64 x 256] (benchmarks/results/graph_small.md),
 * with the same bits: both accumulate every element by the same FMAs in
 * order of k from the bias (jn_rt_sgemm_nt_is_nn).  A TBPTT step's graph
 * runs its 20 time steps' linears over the same three weights.
 *
 * Rewritten: for a float32 2-D graph input W, the linears with a bias that
 * read it as their weight, whose row count, W's dims and the small kernel
 * make jn_rt_sgemm_nt_is_nn hold at compile time (literal dims, for either
 * layout of x), when they run at least twice (two of them, or one inside a
 * loop).  Before the
 * first of them (outside its loops) come
 *     t = clone(transpose(W))       W^T, contiguous
 *     w = transpose(t)              W again, laid out transposed
 * and they read w.  Exact: linear's bits do not depend on its weight's
 * layout (k_linalg.c reads such a weight as it is only where that gives
 * the row-major weight's bits, and copies it back otherwise: a replay on a
 * machine without the small kernel pays a copy, never another number).
 * The IR is functional, so w equals W wherever it is read (an optimizer
 * update of W is a later value).  CPU graphs only (CUDA's linear is
 * cuBLAS's); runs after remat and before fuse and plan, which see the new
 * nodes as ordinary ones.  A graph that already has kernels or a plan is
 * left alone.
 */
#include "cg_priv.h"
#include "k_gemm.h"

static int literal(jn_ir_dim d) { return !jn_ir_is_expr(d) && d > 0; }

/* Node n is linear(x, W, b) as the rewrite needs it (W value v, [N, K]). */
static int takes(const jn_ir_graph *g, int32_t n, int32_t v) {
    const jn_ir_node *x = &g->nodes[n];
    if (x->op != JN_OP_linear || x->nin != 3 || x->in[1] != v || x->in[0] == v || x->in[2] == v) return 0;
    const jn_ir_value *a = &g->values[x->in[0]], *w = &g->values[v], *b = &g->values[x->in[2]];
    const jn_ir_value *o = &g->values[x->out[0]];
    if (a->dtype != JN_F32 || b->dtype != JN_F32 || o->dtype != JN_F32 || a->ndim != 2 || b->ndim != 1 ||
        !literal(a->shape[0]) || a->shape[1] != w->shape[1])
        return 0;
    /* whatever x's layout turns out to be at run time */
    return jn_rt_sgemm_nt_is_nn(0, a->shape[0], w->shape[0], w->shape[1]) &&
           jn_rt_sgemm_nt_is_nn(1, a->shape[0], w->shape[0], w->shape[1]);
}

/* The top-level position node n runs at: its outermost loop's first node. */
static int32_t top_pos(const jn_ir_graph *g, int32_t n) {
    int32_t p = n;
    for (int32_t l = g->nodes[n].loop; l != -1; l = g->loops[l].parent) p = g->loops[l].first;
    return p;
}

static jn_status rewrite(jn_ir_graph *g, int32_t v, const int32_t *rd, int32_t nr, int32_t first) {
    const jn_ir_value *w = &g->values[v];
    jn_ir_value tt = *w, ww = *w;
    tt.shape[0] = w->shape[1], tt.shape[1] = w->shape[0];
    jn_attrs a;
    memset(&a, 0, sizeof a);
    a.a[0].i = 0, a.a[1].i = 1;
    int64_t site = g->nodes[rd[0]].site;
    int32_t n0 = jn_ir_node_add(g, JN_OP_transpose, 1, &v, &a, 1, &tt, site);
    int32_t v0 = n0 < 0 ? -1 : g->nodes[n0].out[0];
    int32_t n1 = n0 < 0 ? -1 : jn_ir_node_add(g, JN_OP_clone, 1, &v0, NULL, 1, &tt, site);
    int32_t v1 = n1 < 0 ? -1 : g->nodes[n1].out[0];
    int32_t n2 = n1 < 0 ? -1 : jn_ir_node_add(g, JN_OP_transpose, 1, &v1, &a, 1, &ww, site);
    if (n2 < 0) return jn_error(JN_ERR_NOMEM, "out of memory transposing a weight in graph %s", g->name);
    int32_t v2 = g->nodes[n2].out[0];
    g->nodes[n0].loop = g->nodes[n1].loop = g->nodes[n2].loop = -1;
    for (int32_t i = 0; i < nr; i++) g->nodes[rd[i]].in[1] = v2; /* readers keep their indices until the moves */
    cg_move_node(g, n0, first - 1);
    cg_move_node(g, n1, first);
    cg_move_node(g, n2, first + 1);
    return JN_OK;
}

jn_status jn_cg_pass_wt(jn_cg_ctx *cx, jn_ir_graph *g) {
    (void)cx;
    if (g->nkernels > 0 || g->arena != -1) return JN_OK;
    int32_t nv = g->nvalues;
    int32_t *rd = malloc(((size_t)g->nnodes + 1) * sizeof *rd);
    if (!rd) return jn_error(JN_ERR_NOMEM, "out of memory in the wt pass of graph %s", g->name);
    cg_uses u;
    jn_status st = cg_uses_build(g, &u);
    int built = st == JN_OK;
    for (int32_t v = 0; v < nv && st == JN_OK; v++) {
        const jn_ir_value *w = &g->values[v];
        if (w->kind != JN_IR_V_INPUT || w->dtype != JN_F32 || w->device != JN_CPU || w->ndim != 2 ||
            !literal(w->shape[0]) || !literal(w->shape[1]))
            continue;
        int32_t nr = 0, runs = 0, first = g->nnodes;
        for (int32_t i = u.start[v]; i < u.start[v + 1]; i++) {
            int32_t n = u.users[i];
            if ((nr && rd[nr - 1] == n) || !takes(g, n, v)) continue;
            rd[nr++] = n;
            runs += g->nodes[n].loop == -1 ? 1 : 2;
            int32_t p = top_pos(g, n);
            if (p < first) first = p;
        }
        if (runs < 2) continue;
        /* first is a top-level position: every loop after it lies wholly after it */
        if ((st = rewrite(g, v, rd, nr, first)) != JN_OK) break;
        cg_uses_free(&u);
        st = cg_uses_build(g, &u);
        built = st == JN_OK;
    }
    if (built) cg_uses_free(&u);
    free(rd);
    return st;
}
