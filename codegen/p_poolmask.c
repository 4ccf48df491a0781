/* p_poolmask.c -- apply an elementwise mask of max_pool2d's input at the
 * pooled size, before max_pool2d_backward instead of after it.
 *
 * Autograd writes relu -> max_pool2d as
 *     r = relu(c);  p, i = max_pool2d(r)                   (forward)
 *     gr = max_pool2d_backward(gp, i);  m = gt(r, 0);  gc = where(m, gr, 0)
 * so the full-size relu output r stays alive from the forward pass until
 * the backward mask reads it, next to the indices and the gradients: on
 * the CNN step that is the peak.  This pass rewrites the backward into
 *     m' = cmp(p, k)  (right after max_pool2d)
 *     x = where(m', gp, 0);  gc = max_pool2d_backward(x, i)
 * after which r dies right after the pool forward, the mask is a pooled
 * bool, and the where runs on the 4x smaller pooled gradient.
 *
 * Exact, bitwise, for any max_pool2d geometry (overlapping windows,
 * padding, ceil mode) because of two facts about the eager kernels:
 *  - max_pool2d writes value and index of the same element: p[w] is
 *    bitwise r[i[w]] (NaN and ties included), so cmp(p, k)[w] equals
 *    cmp(r, k)[i[w]] for any comparison with a 0-d constant k;
 *  - max_pool2d_backward zeroes its output and adds each window's grad at
 *    its index, in window order.  At a position q whose mask is true, the
 *    windows with i[w] = q all have a true pooled mask, so both forms add
 *    the same grads in the same order; where it is false, the original
 *    gives where's 0 and the rewrite adds only where's 0 to a zeroed
 *    element: both +0.0 (so the 0 must be +0.0, not -0.0).
 * Matched: where(m, gr, z) with z a 0-d number +0.0, m = eq|ne|lt|le|gt|ge
 * of the pooled input r and a 0-d number (either side, any value), gr =
 * max_pool2d_backward(gp, i) with i max_pool2d(r)'s indices, gr and m each
 * read by this where only (no output, guard, carry or collect), gr a
 * floating dtype equal to the where's, gp shaped like the pooled output,
 * all four nodes in one loop.  The value numbers stay: the mask is moved
 * to right after the pool (node order, not numbering, is what the
 * verifier and the planner read), the where and the pool backward trade
 * places.  Runs before fuse: a graph that already has kernels or a plan is
 * left alone.  Values other nodes read (r, i, p) are untouched.  Python
 * numbers are fed at run time: the rewrite relies on z being +0.0, so z
 * becomes a constant with a NEED guard (cg_specialise); k may be anything.
 */
#include <math.h>

#include "cg_priv.h"

static int same_shape(const jn_ir_graph *g, int32_t a, int32_t b) {
    const jn_ir_value *x = &g->values[a], *y = &g->values[b];
    if (x->ndim != y->ndim) return 0;
    for (int d = 0; d < x->ndim; d++)
        if (x->shape[d] != y->shape[d]) return 0;
    return 1;
}

/* Read only by one input slot of one node, and nothing else. */
static int single_use(const cg_uses *u, int32_t v) { return cg_nusers(u, v) == 1 && u->flags[v] == 0; }

/* Rewrites at where node w when it matches; 1 if it did. */
static int rewrite(jn_ir_graph *g, const cg_uses *u, int32_t w, jn_status *st) {
    jn_ir_node *W = &g->nodes[w];
    double c;
    if (W->op != JN_OP_where || W->nin != 3 || W->nout != 1) return 0;
    int32_t m = W->in[0], gr = W->in[1], z = W->in[2], gc = W->out[0];
    if (!cg_scalar(g, z, &c) || c != 0 || signbit(c)) return 0;
    if (m == gr || !single_use(u, m) || !single_use(u, gr)) return 0;
    int32_t pn = cg_def(g, gr), gn = cg_def(g, m);
    if (pn < 0 || gn < 0 || g->nodes[pn].op != JN_OP_max_pool2d_backward || g->nodes[pn].nin != 2) return 0;
    int32_t gp = g->nodes[pn].in[0], i = g->nodes[pn].in[1];
    int32_t fn = cg_def(g, i);
    if (fn < 0 || g->nodes[fn].op != JN_OP_max_pool2d || g->nodes[fn].out[1] != i) return 0;
    int32_t r = g->nodes[fn].in[0], p = g->nodes[fn].out[0];
    jn_ir_node *G = &g->nodes[gn];
    if (!jn_op_is_comparison(G->op) || G->nin != 2) return 0;
    int side = G->in[0] == r ? 0 : G->in[1] == r ? 1 : -1;
    if (side < 0 || !cg_scalar(g, G->in[1 - side], &c)) return 0;
    jn_dtype dt = g->values[gr].dtype;
    if (!jn_dtype_is_float(dt) || g->values[gc].dtype != dt || g->values[gp].dtype != dt ||
        g->values[p].dtype != g->values[r].dtype || !same_shape(g, gp, p) || !same_shape(g, gc, r))
        return 0;
    int32_t loop = W->loop;
    if (g->nodes[pn].loop != loop || g->nodes[fn].loop != loop || G->loop != loop) return 0;
    if (!cg_node_movable(g, gn, fn)) return 0;
    if ((*st = cg_specialise(g, z, "poolmask (the where's 0 must be +0.0)")) != JN_OK) return 0;
    /* where and pool backward trade places: where(m, gp, z) -> gr, then
     * max_pool2d_backward(gr, i) -> gc */
    jn_ir_node tmp = g->nodes[pn];
    g->nodes[pn] = g->nodes[w];
    g->nodes[w] = tmp;
    g->nodes[pn].in[1] = gp;
    g->nodes[pn].out[0] = gr;
    g->nodes[w].in[0] = gr;
    g->nodes[w].out[0] = gc;
    g->values[gr].def = pn;
    g->values[gc].def = w;
    g->values[gr].dtype = g->values[gp].dtype;
    g->values[gr].ndim = g->values[gp].ndim;
    memcpy(g->values[gr].shape, g->values[gp].shape, sizeof g->values[gr].shape);
    /* the mask over the pooled values */
    G->in[side] = p;
    g->values[m].ndim = g->values[p].ndim;
    memcpy(g->values[m].shape, g->values[p].shape, sizeof g->values[m].shape);
    cg_move_node(g, gn, fn);
    return 1;
}

jn_status jn_cg_pass_poolmask(jn_cg_ctx *cx, jn_ir_graph *g) {
    (void)cx;
    if (g->nkernels > 0 || g->arena != -1) return JN_OK;
    cg_uses u;
    jn_status st = cg_uses_build(g, &u);
    int built = st == JN_OK;
    for (int32_t n = 0; st == JN_OK && n < g->nnodes; n++) {
        if (!rewrite(g, &u, n, &st)) continue;
        cg_uses_free(&u);
        built = (st = cg_uses_build(g, &u)) == JN_OK;
    }
    if (built) cg_uses_free(&u);
    return st;
}
