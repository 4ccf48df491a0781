/* guards.c -- every assumption generalize.c made, as a guard with its
 * provenance and its class (jn_ir_guard_class).
 *
 * NEED guards are what the graph's code is only right under: each tensor
 * input's dtype and device, every dim that never varied (kernels are
 * specialised on it), the Python type of a scalar fed at run time (it
 * decides type promotion), and the identity of bound state tensors.  SEEN
 * guards keep the range each symbol and loop trip count took in the
 * recording: the code does not depend on it (shapes, offsets and the arena
 * are expressions over the symbols), so at replay a value outside it is a
 * hit counted as extrapolated, with the matcher checking every op's output
 * shapes against the graph's.  (Codegen passes that specialise on a value
 * add NEED guards of their own.)  Each guard keeps the recorded value or
 * range and the call site of the first op that used the thing it checks,
 * so a miss or an extrapolation can be explained in one sentence
 * (jn_ir_guard_explain).
 */
#include <string.h>

#include "an_internal.h"

static jn_status add(an_gen *G, jn_ir_guard_kind kind, int32_t value, int32_t dim, int64_t lo, int64_t hi,
                     double fval, int64_t site, const char *note) {
    jn_ir_guard q;
    memset(&q, 0, sizeof q);
    q.kind = kind;
    q.value = value;
    q.sym = -1;
    q.loop = -1;
    q.dim = dim;
    q.lo = lo;
    q.hi = hi;
    q.fval = fval;
    q.site = site;
    q.note = note ? jn_ir_intern(G->g, note) : NULL;
    an_use_site(G->c, site);
    if (jn_ir_guard_add(G->g, &q) < 0) return jn_error(JN_ERR_NOMEM, "analyzer: out of memory");
    G->c->st->guards++;
    return JN_OK;
}

jn_status an_guard_tensor_input(an_gen *G, int32_t in, int64_t site) {
    const jn_ir_input *x = &G->g->inputs[in];
    int32_t v = x->value;
    const jn_ir_value *val = &G->g->values[v];
    jn_status s;
    if ((s = add(G, JN_IR_G_DTYPE, v, -1, val->dtype, val->dtype, 0, site, NULL))) return s;
    if ((s = add(G, JN_IR_G_DEVICE, v, -1, val->device, val->device, 0, site, NULL))) return s;
    for (int d = 0; d < val->ndim; d++) {
        jn_ir_dim dd = G->g->values[v].shape[d];
        if (!jn_ir_is_expr(dd) && (s = add(G, JN_IR_G_DIM, v, d, dd, dd, 0, site, NULL))) return s;
    }
    if (x->kind == JN_IR_IN_STATE && x->bind &&
        (s = add(G, JN_IR_G_BIND, v, -1, x->bind, x->bind, 0, site, NULL)))
        return s;
    return JN_OK;
}

/* A Python number is fed at run time whatever its value: only its type
 * (a float where an int was recorded, or a tensor where a number was, is
 * another program) is guarded. */
jn_status an_guard_scalar_input(an_gen *G, int32_t in, int64_t site) {
    const jn_ir_input *x = &G->g->inputs[in];
    return add(G, JN_IR_G_PYTYPE, x->value, -1, x->pytype, x->pytype, 0, site, NULL);
}

/* One range guard per symbol, one per loop trip count, both SEEN.  Induction
 * variables are bound by their loop, and the Philox offset only ever grows
 * (every step draws past the last), so a recorded range would miss on the
 * first step after the recording: it is an input, not an assumption. */
jn_status an_guard_symbols(an_gen *G) {
    jn_ir_graph *g = G->g;
    for (int32_t k = 0; k < g->nsyms; k++) {
        const jn_ir_sym *y = &g->syms[k];
        if (y->kind == JN_IR_SYM_IVAR) continue;
        if (y->kind == JN_IR_SYM_RNG) {
            G->c->st->symbols++;
            continue;
        }
        jn_ir_guard q;
        memset(&q, 0, sizeof q);
        q.kind = JN_IR_G_SYM;
        q.cls = JN_IR_GC_SEEN;
        q.value = q.loop = q.dim = -1;
        q.sym = k;
        q.lo = y->lo;
        q.hi = y->hi;
        q.site = y->site;
        q.note = k < G->capnote ? G->sym_note[k] : NULL;
        if (jn_ir_guard_add(g, &q) < 0) return jn_error(JN_ERR_NOMEM, "analyzer: out of memory");
        G->c->st->guards++;
        G->c->st->symbols++;
    }
    for (int32_t l = 0; l < g->nloops; l++) {
        jn_ir_guard q;
        memset(&q, 0, sizeof q);
        q.kind = JN_IR_G_TRIP;
        q.cls = JN_IR_GC_SEEN;
        q.value = q.sym = q.dim = -1;
        q.loop = l;
        int64_t lo = 0, hi = 0;
        if (jn_ir_is_expr(g->loops[l].trip)) {
            /* the range of the trip symbol it is (or is made of) */
            const jn_ir_expr *x = &g->exprs[jn_ir_expr_index(g->loops[l].trip)];
            if (x->kind == JN_IR_E_SYM) {
                lo = g->syms[x->sym].lo;
                hi = g->syms[x->sym].hi;
                q.site = g->syms[x->sym].site;
            }
        } else {
            lo = hi = g->loops[l].trip;
        }
        if (!q.site && g->loops[l].count > 0) q.site = g->nodes[g->loops[l].first].site;
        if (G->trip_lo && l < G->ntrip) {
            lo = G->trip_lo[l];
            hi = G->trip_hi[l];
        }
        q.lo = lo;
        q.hi = hi;
        if (jn_ir_guard_add(g, &q) < 0) return jn_error(JN_ERR_NOMEM, "analyzer: out of memory");
        G->c->st->guards++;
    }
    return JN_OK;
}
