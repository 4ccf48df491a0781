/* p_remat.c -- recompute cheap values of graph inputs where they are used
 * again, instead of keeping them alive in between.
 *
 * A training step reads its batch at the start (x = index(dataset, idx))
 * and again at the very end (the first layer's weight gradient needs x),
 * so x occupies the arena through the whole step, the peaks included.
 * Graph inputs live through the whole graph anyway and take no arena
 * bytes, so a value computed from inputs only can be computed again right
 * before a later group of its readers for the cost of one more pass over
 * it: its arena bytes are then held only around each group.
 *
 * Recomputed: a top-level node of a cheap op -- elementwise (not random)
 * or a gather (index, index_select, gather, embedding) -- with one
 * output, every input a graph input, at least REMAT_MIN_BYTES at the
 * symbols' maxima, read by nodes only (no output, guard, carry or
 * collect).  Its top-level readers, in node order, form groups: a reader
 * more than REMAT_GAP nodes after the previous one starts a new group;
 * each group after the first gets its own copy of the node placed right
 * before its first reader.  Readers inside loops keep the original.
 * Exact: the node is a pure function of values that do not change.  It
 * adds nodes (the one pass that does); runs after cse, whose merging it
 * would otherwise undo (cse leaves planned graphs alone for the same
 * reason), and before fuse and plan, which see the copies as ordinary
 * nodes.  A graph that already has kernels or a plan is left alone.
 */
#include "cg_priv.h"

#define REMAT_GAP 8
#define REMAT_MIN_BYTES 65536

static int cheap(jn_op op) {
    int fl = cg_flags(op);
    if (fl & (JN_F_RAND | JN_F_INPLACE | JN_F_VIEW | JN_F_FACTORY | JN_F_COLL)) return 0;
    return (fl & JN_F_EW) || op == JN_OP_index || op == JN_OP_index_select || op == JN_OP_gather ||
           op == JN_OP_embedding;
}

static int candidate(const jn_ir_graph *g, const cg_uses *u, int32_t n) {
    const jn_ir_node *x = &g->nodes[n];
    if (x->loop != -1 || x->nout != 1 || !cheap(x->op) || u->flags[x->out[0]] != 0) return 0;
    for (int k = 0; k < x->nin; k++)
        if (g->values[x->in[k]].kind != JN_IR_V_INPUT) return 0;
    int64_t b = 0;
    jn_ir_dim d = cg_value_bytes((jn_ir_graph *)g, x->out[0]);
    return d != JN_IR_DIM_ERROR && jn_cg_eval_at_max(g, d, &b) == JN_OK && b >= REMAT_MIN_BYTES;
}

/* A copy of node n right after node `after`, read by the top-level readers
 * of v at positions (before the copy is made) in [from, to]. */
static jn_status copy_for(jn_ir_graph *g, int32_t n, int32_t after, int32_t from, int32_t to) {
    jn_ir_node x = g->nodes[n];
    int32_t v = x.out[0];
    int32_t c = jn_ir_node_add(g, x.op, x.nin, x.in, &x.attrs, 1, &g->values[v], x.site);
    if (c < 0) return jn_error(JN_ERR_NOMEM, "out of memory recomputing %%%d in graph %s", v, g->name);
    int32_t cv = g->nodes[c].out[0];
    memcpy(g->nodes[c].attr_input, x.attr_input, sizeof x.attr_input);
    g->nodes[c].loop = -1;
    cg_move_node(g, c, after);
    for (int32_t r = from + 1; r <= to + 1; r++) /* the readers moved up by one */
        for (int k = 0; k < g->nodes[r].nin; k++)
            if (g->nodes[r].in[k] == v && g->nodes[r].loop == -1) g->nodes[r].in[k] = cv;
    return JN_OK;
}

jn_status jn_cg_pass_remat(jn_cg_ctx *cx, jn_ir_graph *g) {
    (void)cx;
    if (g->nkernels > 0 || g->arena != -1) return JN_OK;
    cg_uses u;
    jn_status st = cg_uses_build(g, &u);
    if (st != JN_OK) return st;
    int32_t *rd = NULL;
    for (int32_t n = 0; n < g->nnodes && st == JN_OK; n++) {
        if (!candidate(g, &u, n)) continue;
        int32_t v = g->nodes[n].out[0], nr = 0;
        free(rd);
        if (!(rd = malloc(((size_t)cg_nusers(&u, v) + 1) * sizeof *rd))) {
            st = jn_error(JN_ERR_NOMEM, "out of memory recomputing values in graph %s", g->name);
            break;
        }
        for (int32_t i = u.start[v]; i < u.start[v + 1]; i++) /* top-level readers, in order, once each */
            if (g->nodes[u.users[i]].loop == -1 && (nr == 0 || rd[nr - 1] != u.users[i])) rd[nr++] = u.users[i];
        int changed = 0;
        /* groups from the last: a copy shifts only the nodes after it */
        for (int32_t e = nr - 1; e > 0 && st == JN_OK;) {
            int32_t b = e;
            while (b > 0 && rd[b] - rd[b - 1] <= REMAT_GAP) b--;
            if (b == 0) break; /* the first group keeps the original */
            st = copy_for(g, n, rd[b] - 1, rd[b], rd[e]);
            changed = 1;
            e = b - 1;
        }
        if (changed && st == JN_OK) {
            cg_uses_free(&u);
            st = cg_uses_build(g, &u);
            if (st != JN_OK) {
                free(rd);
                return st;
            }
        }
    }
    free(rd);
    cg_uses_free(&u);
    return st;
}
