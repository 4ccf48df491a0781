/* p_hoist.c -- run state updates as early as their inputs allow.
 *
 * A training step records the optimizer after the whole backward pass, so
 * every parameter's gradient stays alive from where it is computed to the
 * end of the step (on the CNN step, fc1's 192 KB weight gradient lives
 * through the convolutions' backward, where the arena peaks).  This pass
 * moves each update to right after the last node it depends on: its
 * gradient dies there and the update's outputs, which only leave the graph
 * (state written back), take no arena memory earlier.
 *
 * Moved: a node of an in-place table op (adam_, sgd_, copy_, fill_, ...;
 * not the random ones, nor collectives: their order across ranks is the
 * recorded one) whose every output is read by no node -- only by graph
 * outputs -- and that no guard, carry or collect names.  Its new
 * place is right after the latest of: the nodes defining its inputs and
 * the scalar inputs bound to its attributes, and every other reader of an
 * input it writes in place (inputs 0..nout-1) or of a view of one, so it
 * still runs after the last read of the old parameter and moments and the
 * executor keeps updating the state tensors themselves instead of copying
 * them (a reader inside a loop counts as the loop's last node).  Exact: the IR is
 * functional and the node is pure, so only the time its outputs are made
 * changes.  Nodes never leave their loop and loops are never split
 * (cg_node_movable); runs before fuse (no kernels to keep consistent) --
 * a graph that already has kernels or a plan is left alone.
 */
#include "cg_priv.h"

/* The node position a value is available after: -1 for graph inputs, the
 * node before its loop for a loop param, its defining node, or a loop's
 * last node for the loop's outputs. */
static int32_t ready_after(const jn_ir_graph *g, int32_t v) {
    const jn_ir_value *x = &g->values[v];
    switch (x->kind) {
    case JN_IR_V_NODE: return x->def;
    case JN_IR_V_LOOP_PARAM: return g->loops[x->def].first - 1;
    case JN_IR_V_LOOP_OUT: return g->loops[x->def].first + g->loops[x->def].count - 1;
    default: return -1;
    }
}

/* Position r lifted to the end of the outermost loop holding node r but
 * not loop `at` (the moved node's loop). */
static int32_t lift(const jn_ir_graph *g, int32_t r, int32_t at) {
    int32_t p = r;
    for (int32_t L = g->nodes[r].loop; L >= 0 && !cg_encloses(g, L, at); L = g->loops[L].parent)
        p = g->loops[L].first + g->loops[L].count - 1;
    return p;
}

/* The last reader of v or of any view of it (through view chains) other
 * than node n, lifted out of loops n is not in; -1 if none. */
static int32_t last_reader(const jn_ir_graph *g, const cg_uses *u, int32_t n, int32_t v, int depth) {
    int32_t after = -1;
    for (int32_t i = u->start[v]; i < u->start[v + 1]; i++) {
        int32_t r = u->users[i], p;
        if (r == n) continue;
        if ((p = lift(g, r, g->nodes[n].loop)) > after) after = p;
        if ((cg_flags(g->nodes[r].op) & JN_F_VIEW) && g->nodes[r].in[0] == v && depth < 64 &&
            (p = last_reader(g, u, n, g->nodes[r].out[0], depth + 1)) > after)
            after = p;
    }
    return after;
}

/* Where node n may go: right after the returned position (< n - 1 to be
 * worth a move), or n - 1 when it stays. */
static int32_t target(const jn_ir_graph *g, const cg_uses *u, int32_t n) {
    const jn_ir_node *x = &g->nodes[n];
    int32_t after = -1;
    for (int k = 0; k < x->nin; k++) {
        int32_t v = x->in[k], p = ready_after(g, v);
        if (p >= 0 && g->values[v].kind == JN_IR_V_NODE) p = lift(g, p, x->loop);
        if (p > after) after = p;
        /* readers of what it overwrites, views of it included: the executor
         * updates the state itself only when nothing reads it afterwards */
        if (k < x->nout && (p = last_reader(g, u, n, v, 0)) > after) after = p;
    }
    for (int k = 0; k < JN_MAX_ATTRS; k++)
        if (x->attr_input[k] >= 0) {
            int32_t p = ready_after(g, x->attr_input[k]);
            if (p > after) after = p;
        }
    return after < n ? after : n - 1;
}

static int candidate(const jn_ir_graph *g, const cg_uses *u, int32_t n) {
    const jn_ir_node *x = &g->nodes[n];
    int fl = cg_flags(x->op);
    if (!(fl & JN_F_INPLACE) || (fl & (JN_F_RAND | JN_F_COLL))) return 0;
    for (int k = 0; k < x->nout; k++)
        if (cg_nusers(u, x->out[k]) != 0 || (u->flags[x->out[k]] & ~CG_U_OUTPUT)) return 0;
    return 1;
}

jn_status jn_cg_pass_hoist(jn_cg_ctx *cx, jn_ir_graph *g) {
    (void)cx;
    if (g->nkernels > 0 || g->arena != -1) return JN_OK;
    cg_uses u;
    jn_status st = cg_uses_build(g, &u);
    if (st != JN_OK) return st;
    /* in order: a moved node lands before n, so the scan goes on at n + 1;
     * uses stay valid (node indices change, use lists are rebuilt) */
    for (int32_t n = 0; n < g->nnodes && st == JN_OK; n++) {
        if (!candidate(g, &u, n)) continue;
        int32_t after = target(g, &u, n);
        if (after >= n - 1 || !cg_node_movable(g, n, after)) continue;
        cg_move_node(g, n, after);
        cg_uses_free(&u);
        st = cg_uses_build(g, &u);
        if (st != JN_OK) return st;
    }
    cg_uses_free(&u);
    return st;
}
