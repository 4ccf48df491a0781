/* p_unstack.c -- a collect that stacks the rows of one tensor is a view of it.
 *
 * A top-level loop over i = 0 .. trip-1 that collects select(x, d, i), x
 * made outside the loop, stacks x's own rows: out[t] = x.select(d, t), so
 *     out = permute(slice(x, d, 0, trip), [d, 0, .., d-1, d+1, ..])
 * -- two views, the slice left out when trip is x's whole dim (the same
 * interned expression) and the permute when d is 0.  They are placed right
 * after the loop and every use of out reads them instead; the collect is
 * then dead (dce2 drops it, and the loop when nothing else is left in it).
 * What it saves: the executor's copy of each row into the [trip, ...]
 * buffer, and the buffer.  Autograd's backward of `x[:, t]` over a time
 * loop is the case (char_lstm: the loss gradient's hidden-state rows and
 * the embedded input's rows, ~1 MB at its longest sequence).
 *
 * Not rewritten: nested loops (the views could not be placed after an
 * inner loop without splitting the outer one's range), a collect that is
 * a graph output (Python would get a view of x, not a tensor of its own),
 * an index other than the plain induction variable (a reversed walk is no
 * view), an index or dim bound to a Python number.
 */
#include "cg_priv.h"

/* Is value v visible, unchanged, for the whole of top-level loop l (made
 * before it at the top level, or a graph input)? */
static int outside(const jn_ir_graph *g, int32_t v, int32_t l) {
    const jn_ir_value *iv = &g->values[v];
    if (iv->kind == JN_IR_V_INPUT) return 1;
    if (iv->kind == JN_IR_V_NODE) return g->nodes[iv->def].loop == -1 && iv->def < g->loops[l].first;
    if (iv->kind == JN_IR_V_LOOP_OUT) return g->loops[iv->def].parent == -1 && iv->def != l;
    return 0;
}

/* A view node `op` of `in` typed like `type`, moved right after node
 * `after`; its output value, or -1 (out of memory). */
static int32_t view_after(jn_ir_graph *g, jn_op op, int32_t in, const jn_attrs *a, const jn_ir_value *type,
                          int64_t site, int32_t after) {
    int32_t n = jn_ir_node_add(g, op, 1, &in, a, 1, type, site);
    if (n < 0) return -1;
    g->nodes[n].loop = -1;
    cg_move_node(g, n, after);
    return g->nodes[after + 1].out[0];
}

/* Rewrites collect k of loop l when it qualifies: 1 done, 0 not, -1 error. */
static int unstack(jn_ir_graph *g, const cg_uses *u, int32_t l, int32_t k) {
    const jn_ir_loop *L = &g->loops[l];
    int32_t body = L->collect[k].body, out = L->collect[k].out;
    int32_t n = cg_def(g, body);
    if (n < 0 || g->nodes[n].op != JN_OP_select || g->nodes[n].loop != l) return 0;
    const jn_ir_node *s = &g->nodes[n];
    if (s->attr_input[0] != -1 || s->attr_input[1] != -1 || jn_ir_is_expr(s->attrs.a[0].i)) return 0;
    if (s->attrs.a[1].i != jn_ir_sym_dim(g, L->ivar)) return 0;
    if (u->flags[out] & CG_U_OUTPUT) return 0;
    int32_t x = s->in[0];
    if (!outside(g, x, l)) return 0;
    const jn_ir_value xv = g->values[x];
    int64_t d = s->attrs.a[0].i;
    if (d < 0) d += xv.ndim;
    if (d < 0 || d >= xv.ndim) return 0;
    int32_t after = L->first + L->count - 1, cur = x;
    int64_t site = s->site;
    if (!cg_node_movable(g, g->nnodes, after)) return 0;
    jn_ir_value t = xv; /* the views' types: x's, then dim d cut to trip, then moved to the front */
    t.shape[d] = L->trip;
    jn_ir_value pt = t;
    pt.shape[0] = L->trip;
    for (int j = 0, o = 1; j < xv.ndim; j++)
        if (j != d) pt.shape[o++] = t.shape[j];
    /* the result must be typed exactly as the collect's out */
    const jn_ir_value *ov = &g->values[out];
    if (ov->dtype != xv.dtype || ov->device != xv.device || ov->ndim != xv.ndim) return 0;
    for (int j = 0; j < ov->ndim; j++)
        if (ov->shape[j] != pt.shape[j]) return 0;
    if (xv.shape[d] != L->trip) {
        jn_attrs a = {0};
        a.a[0].i = d, a.a[1].i = 0, a.a[2].i = L->trip, a.a[3].i = 1;
        if ((cur = view_after(g, JN_OP_slice, cur, &a, &t, site, after++)) < 0) return -1;
    }
    if (d > 0) {
        jn_attrs a = {0};
        a.a[0].l.n = xv.ndim;
        a.a[0].l.v[0] = d;
        for (int j = 0, o = 1; j < xv.ndim; j++)
            if (j != d) a.a[0].l.v[o++] = j;
        if ((cur = view_after(g, JN_OP_permute, cur, &a, &pt, site, after++)) < 0) return -1;
    }
    cg_replace(g, out, cur);
    return 1;
}

jn_status jn_cg_pass_unstack(jn_cg_ctx *cx, jn_ir_graph *g) {
    (void)cx;
    if (g->nkernels > 0 || g->arena != -1) return JN_OK;
    for (int32_t l = 0; l < g->nloops; l++) {
        if (g->loops[l].parent != -1) continue;
        for (int32_t k = 0; k < g->loops[l].ncollect; k++) {
            cg_uses u; /* rebuilt per collect: a rewrite adds nodes */
            jn_status st = cg_uses_build(g, &u);
            if (st != JN_OK) return st;
            int r = unstack(g, &u, l, k);
            cg_uses_free(&u);
            if (r < 0) return jn_error(JN_ERR_NOMEM, "out of memory in unstack of graph %s", g->name);
        }
    }
    return JN_OK;
}
