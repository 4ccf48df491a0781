/* p_dce.c -- dead-code elimination.
 *
 * A value is live when a graph output or a guard names it, when a live
 * node reads it, or through a loop: a live carry (its param read by a live
 * node, or its out live) makes its init and next live; a live collect out
 * makes its body live.  A node is live when any of its outputs is.  The
 * marking repeats until nothing changes (a param read in the body makes a
 * `next` live that may be computed from another param).  Rules applied:
 *   - dead nodes go, random ops included: they are pure functions of their
 *     (seed, offset) attributes, so dropping one shifts no other stream;
 *   - dead carries (param and out unread) and dead collects go;
 *   - a loop left without live nodes goes (with its carries);
 *   - a live loop whose body would be empty (pass-through carries) keeps
 *     its last node, since a loop needs one;
 *   - inputs always stay (they are the graph's calling convention);
 *   - collectives (JN_F_COLL) always stay, read or not: the other ranks
 *     wait for this one's call.
 * The graph is then compacted (cg_compact): order kept, %numbers closed up.
 */
#include "cg_priv.h"

jn_status jn_cg_pass_dce(jn_cg_ctx *cx, jn_ir_graph *g) {
    (void)cx;
    uint8_t *lv = calloc((size_t)g->nvalues + 1, 1), *ln = calloc((size_t)g->nnodes + 1, 1);
    if (!lv || !ln) {
        free(lv);
        free(ln);
        return jn_error(JN_ERR_NOMEM, "out of memory in dce of graph %s", g->name);
    }
    for (int32_t i = 0; i < g->noutputs; i++) lv[g->outputs[i].value] = 1;
    for (int32_t n = 0; n < g->nnodes; n++) ln[n] = (cg_flags(g->nodes[n].op) & JN_F_COLL) != 0;
    for (int32_t i = 0; i < g->nguards; i++)
        if (g->guards[i].value >= 0 && g->guards[i].value < g->nvalues) lv[g->guards[i].value] = 1;
    /* mark until nothing changes; then once more allowing the forced node */
    for (int changed, force = 0;; force = !changed) {
        changed = 0;
        for (int32_t n = g->nnodes - 1; n >= 0; n--) {
            const jn_ir_node *x = &g->nodes[n];
            int live = ln[n];
            for (int k = 0; k < x->nout && !live; k++) live = lv[x->out[k]];
            if (!live) continue;
            if (!ln[n]) ln[n] = 1, changed = 1;
            for (int k = 0; k < x->nin; k++)
                if (!lv[x->in[k]]) lv[x->in[k]] = 1, changed = 1;
        }
        for (int32_t l = 0; l < g->nloops; l++) {
            const jn_ir_loop *L = &g->loops[l];
            int any = 0;
            for (int32_t k = 0; k < L->ncarry; k++) {
                const jn_ir_carry *c = &L->carry[k];
                if (!lv[c->param] && !lv[c->out]) continue;
                any = 1;
                int32_t vs[4] = {c->param, c->out, c->init, c->next};
                for (int j = 0; j < 4; j++)
                    if (!lv[vs[j]]) lv[vs[j]] = 1, changed = 1;
            }
            for (int32_t k = 0; k < L->ncollect; k++)
                if (lv[L->collect[k].out]) {
                    any = 1;
                    if (!lv[L->collect[k].body]) lv[L->collect[k].body] = 1, changed = 1;
                }
            /* only once the marking settled: the body may still turn live */
            if (!any || !force) continue;
            int has = 0;
            for (int32_t n = L->first; n < L->first + L->count; n++) has |= ln[n];
            if (!has) ln[L->first + L->count - 1] = 1, changed = 1;
        }
        if (!changed && force) break;
    }
    jn_status st = cg_compact(g, ln, lv);
    free(lv);
    free(ln);
    return st;
}
