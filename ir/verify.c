/* verify.c -- the structural invariants of a graph (jn_ir_verify).
 *
 * Every rule the header lists, checked in an order where each step may
 * rely on the ones before it (tables, then symbols and expressions, then
 * loops, then values, then the things that use values), so no check ever
 * indexes out of bounds even on garbage: the parser and the deserializer
 * run this on everything they build.
 *
 * Scoping: a value has a scope (the loop whose body defines it, -1 at top
 * level) and a position in node order: inputs 0, node n's outputs 2n+1, a
 * loop's params 2*first, its outs 2*(first+count).  A use at position p in
 * scope s sees v when v's scope encloses s (or is s) and pos(v) < p.  Loop
 * outs sit in the loop's parent scope, so body values leave a loop only
 * through its carries and collects.
 */
#include <math.h>
#include <stdio.h>

#include "ir_priv.h"

typedef struct {
    const jn_ir_graph *g;
    const char *gn;
    int32_t *scope, *pos;      /* per value */
    int32_t *owner;            /* innermost loop per node */
    int32_t *ldepth;           /* nesting depth per loop */
    int32_t *loop_of_ivar;     /* per symbol: the loop it is the induction variable of, -1 */
    uint64_t *emask;           /* per expression: loops (< 64) whose induction variable it uses */
    uint64_t *amask;           /* per loop: itself and its ancestors (< 64) */
} vctx;

static jn_status bad(const vctx *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static jn_status bad(const vctx *c, const char *fmt, ...) {
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    return jn_error(JN_ERR_VALUE, "graph %s: %s", c->gn, msg);
}
#define BAD(...) return bad(c, __VA_ARGS__)

static const char *opname(jn_op op) {
    const jn_opinfo *in = jn_op_info(op);
    return in ? in->name : "?";
}

/* A dim is a constant or a ref to an existing expression. */
static int dim_ok(const vctx *c, jn_ir_dim d) {
    return !jn_ir_is_expr(d) || (jn_ir__eidx(d) >= 0 && jn_ir__eidx(d) < c->g->nexprs);
}

static uint64_t dim_mask(const vctx *c, jn_ir_dim d) {
    return jn_ir_is_expr(d) ? c->emask[jn_ir__eidx(d)] : 0;
}

static uint64_t scope_mask(const vctx *c, int32_t s) { return s >= 0 ? c->amask[s] : 0; }

static int encloses(const vctx *c, int32_t outer, int32_t l) {
    for (int32_t d = 0; l >= 0 && d <= JN_IR_MAX_LOOP_DEPTH; d++, l = c->g->loops[l].parent)
        if (l == outer) return 1;
    return outer < 0;
}

static int visible(const vctx *c, int32_t v, int32_t p, int32_t s) {
    return encloses(c, c->scope[v], s) && c->pos[v] < p;
}

/* The name of the first loop (< 64) in mask, for messages. */
static const char *mask_ivar(const vctx *c, uint64_t m, int32_t *loop) {
    for (int32_t l = 0; l < 64 && l < c->g->nloops; l++)
        if (m >> l & 1) {
            *loop = l;
            return c->g->syms[c->g->loops[l].ivar].name;
        }
    *loop = -1;
    return "?";
}

static int same_type(const jn_ir_value *a, const jn_ir_value *b, int skip) {
    if (a->dtype != b->dtype || a->device != b->device || a->ndim + skip != b->ndim) return 0;
    for (int d = 0; d < a->ndim; d++)
        if (a->shape[d] != b->shape[d + skip]) return 0;
    return 1;
}

static jn_status check_symbols(vctx *c) {
    const jn_ir_graph *g = c->g;
    int32_t cap = 16;
    while (cap < 2 * g->nsyms) cap *= 2;
    int32_t *tab = malloc((size_t)cap * sizeof *tab);
    if (!tab) return jn_error(JN_ERR_NOMEM, "out of memory verifying graph %s", c->gn);
    for (int32_t i = 0; i < cap; i++) tab[i] = -1;
    jn_status st = JN_OK;
    for (int32_t s = 0; s < g->nsyms && st == JN_OK; s++) {
        const jn_ir_sym *y = &g->syms[s];
        if (!jn_ir__is_ident(y->name)) {
            st = bad(c, "symbol #%d has name '%s', not an identifier", s, y->name ? y->name : "(null)");
            break;
        }
        if ((unsigned)y->kind > JN_IR_SYM_RNG) st = bad(c, "symbol %s has unknown kind %d", y->name, (int)y->kind);
        else if (y->lo > y->hi)
            st = bad(c, "symbol %s has range %lld..%lld with lo > hi", y->name, (long long)y->lo, (long long)y->hi);
        uint32_t h = (uint32_t)jn_ir__fnv(y->name, strlen(y->name), JN_IR_FNV_INIT) & (uint32_t)(cap - 1);
        for (; tab[h] >= 0 && st == JN_OK; h = (h + 1) & (uint32_t)(cap - 1))
            if (!strcmp(g->syms[tab[h]].name, y->name))
                st = bad(c, "symbol name %s is used twice (#%d and #%d)", y->name, tab[h], s);
        tab[h] = s;
    }
    free(tab);
    return st;
}

static jn_status check_exprs(vctx *c) {
    const jn_ir_graph *g = c->g;
    int32_t *depth = malloc(((size_t)g->nexprs + 1) * sizeof *depth);
    if (!depth) return jn_error(JN_ERR_NOMEM, "out of memory verifying graph %s", c->gn);
    jn_status st = JN_OK;
    for (int32_t i = 0; i < g->nexprs && st == JN_OK; i++) {
        const jn_ir_expr *e = &g->exprs[i];
        if (e->kind == JN_IR_E_SYM) {
            if (e->sym < 0 || e->sym >= g->nsyms) {
                st = bad(c, "expression #%d names symbol #%d, which does not exist", i, e->sym);
                break;
            }
            depth[i] = 1;
            c->emask[i] = c->loop_of_ivar[e->sym] >= 0 && c->loop_of_ivar[e->sym] < 64
                              ? 1ull << c->loop_of_ivar[e->sym] : 0;
            continue;
        }
        if ((unsigned)e->kind > JN_IR_E_FLOORDIV) {
            st = bad(c, "expression #%d has unknown kind %d", i, (int)e->kind);
            break;
        }
        jn_ir_dim ops[2] = {e->a, e->b};
        depth[i] = 1;
        c->emask[i] = 0;
        for (int k = 0; k < 2 && st == JN_OK; k++) {
            if (!jn_ir_is_expr(ops[k])) continue;
            int32_t j = jn_ir__eidx(ops[k]);
            if (j < 0 || j >= i)
                st = bad(c, "expression #%d refers to expression #%d, which is not an earlier one "
                            "(expressions must be acyclic)", i, j);
            else {
                if (depth[j] + 1 > depth[i]) depth[i] = depth[j] + 1;
                c->emask[i] |= c->emask[j];
            }
        }
        if (st == JN_OK && depth[i] > JN_IR_MAX_EXPR_DEPTH)
            st = bad(c, "expression #%d nests deeper than %d operators", i, JN_IR_MAX_EXPR_DEPTH);
    }
    free(depth);
    return st;
}

static jn_status check_loops(vctx *c) {
    const jn_ir_graph *g = c->g;
    for (int32_t l = 0; l < g->nloops; l++) {
        const jn_ir_loop *L = &g->loops[l];
        if (L->parent < -1 || L->parent >= g->nloops || L->parent == l)
            BAD("loop L%d has parent L%d, which does not exist", l, L->parent);
        if (L->first < 0 || L->count < 1 || (int64_t)L->first + L->count > g->nnodes)
            BAD("loop L%d covers nodes %d..%lld, not a non-empty range of the graph's %d nodes", l, L->first,
                (long long)L->first + L->count - 1, g->nnodes);
        if (!dim_ok(c, L->trip) || (!jn_ir_is_expr(L->trip) && L->trip < 0))
            BAD("loop L%d has an invalid trip count", l);
        if (L->ivar < 0 || L->ivar >= g->nsyms || g->syms[L->ivar].kind != JN_IR_SYM_IVAR)
            BAD("loop L%d has induction variable #%d, which is no ivar symbol", l, L->ivar);
        if (c->loop_of_ivar[L->ivar] >= 0)
            BAD("loops L%d and L%d share the induction variable %s", c->loop_of_ivar[L->ivar], l,
                g->syms[L->ivar].name);
        c->loop_of_ivar[L->ivar] = l;
        if (L->ncarry < 0 || L->ncollect < 0 || (L->ncarry && !L->carry) || (L->ncollect && !L->collect))
            BAD("loop L%d has a broken carry or collect table", l);
    }
    for (int32_t l = 0; l < g->nloops; l++) {
        int32_t d = 0;
        for (int32_t p = g->loops[l].parent; p >= 0; p = g->loops[p].parent)
            if (++d > JN_IR_MAX_LOOP_DEPTH) BAD("loop L%d nests deeper than %d (or its parents form a cycle)", l,
                                                JN_IR_MAX_LOOP_DEPTH);
        c->ldepth[l] = d;
        const jn_ir_loop *L = &g->loops[l];
        if (L->parent >= 0) {
            const jn_ir_loop *P = &g->loops[L->parent];
            if (L->first < P->first || L->first + L->count > P->first + P->count)
                BAD("loop L%d (nodes %d..%d) is not inside its parent L%d (nodes %d..%d)", l, L->first,
                    L->first + L->count - 1, L->parent, P->first, P->first + P->count - 1);
        }
    }
    for (int32_t l = 0; l < g->nloops; l++) {
        c->amask[l] = (l < 64 ? 1ull << l : 0);
        for (int32_t p = g->loops[l].parent; p >= 0; p = g->loops[p].parent) c->amask[l] |= p < 64 ? 1ull << p : 0;
        for (int32_t m = l + 1; m < g->nloops; m++) {
            const jn_ir_loop *A = &g->loops[l], *B = &g->loops[m];
            int overlap = A->first < B->first + B->count && B->first < A->first + A->count;
            if (overlap && !encloses(c, l, m) && !encloses(c, m, l))
                BAD("loops L%d and L%d overlap but neither encloses the other (loops must nest)", l, m);
        }
    }
    /* Innermost loop of each node: deeper loops overwrite shallower ones. */
    for (int32_t n = 0; n < g->nnodes; n++) c->owner[n] = -1;
    for (int32_t d = 0, more = 1; more; d++) {
        more = 0;
        for (int32_t l = 0; l < g->nloops; l++) {
            if (c->ldepth[l] > d) more = 1;
            if (c->ldepth[l] != d) continue;
            for (int32_t n = g->loops[l].first; n < g->loops[l].first + g->loops[l].count; n++) c->owner[n] = l;
        }
    }
    return JN_OK;
}

static jn_status check_arity(vctx *c) {
    const jn_ir_graph *g = c->g;
    for (int32_t n = 0; n < g->nnodes; n++) {
        const jn_ir_node *x = &g->nodes[n];
        const jn_opinfo *info = jn_op_info(x->op);
        if (!info) BAD("node %d has unknown op %d", n, (int)x->op);
        const char *on = info->name;
        int variadic = info->flags & JN_F_VARIADIC;
        if (variadic ? x->nin < info->nin : x->nin != info->nin)
            BAD("node %d (%s) has %d inputs; the op takes %s%d", n, on, x->nin, variadic ? "at least " : "", info->nin);
        if (x->nin > JN_MAX_INS) BAD("node %d (%s) has %d inputs (at most %d)", n, on, x->nin, JN_MAX_INS);
        if (x->nout != info->nout) BAD("node %d (%s) has %d outputs; the op has %d", n, on, x->nout, info->nout);
        if (x->nin && !x->in) BAD("node %d (%s) has no input array", n, on);
    }
    return JN_OK;
}

static jn_status check_values(vctx *c) {
    const jn_ir_graph *g = c->g;
    for (int32_t v = 0; v < g->nvalues; v++) {
        const jn_ir_value *x = &g->values[v];
        if ((unsigned)x->dtype >= JN_NDTYPES) BAD("value %%%d has unknown dtype %d", v, (int)x->dtype);
        if (x->device > JN_CUDA) BAD("value %%%d has unknown device %d", v, x->device);
        if (x->ndim > JN_MAX_DIMS) BAD("value %%%d has %d dims (at most %d)", v, x->ndim, JN_MAX_DIMS);
        for (int d = 0; d < x->ndim; d++) {
            if (!dim_ok(c, x->shape[d])) BAD("value %%%d dim %d refers to an expression that does not exist", v, d);
            if (!jn_ir_is_expr(x->shape[d]) && x->shape[d] < 0)
                BAD("value %%%d dim %d is negative (%lld)", v, d, (long long)x->shape[d]);
        }
        int32_t def = x->def, idx = x->idx;
        int ok = 0;
        switch (x->kind) {
        case JN_IR_V_INPUT:
            ok = def >= 0 && def < g->ninputs && g->inputs[def].value == v;
            c->scope[v] = -1;
            c->pos[v] = 0;
            break;
        case JN_IR_V_NODE:
            ok = def >= 0 && def < g->nnodes && idx >= 0 && idx < g->nodes[def].nout && idx < JN_MAX_OUTS &&
                 g->nodes[def].out[idx] == v;
            if (ok) {
                c->scope[v] = c->owner[def];
                c->pos[v] = 2 * def + 1;
            }
            break;
        case JN_IR_V_LOOP_PARAM:
            ok = def >= 0 && def < g->nloops && idx >= 0 && idx < g->loops[def].ncarry &&
                 g->loops[def].carry[idx].param == v;
            if (ok) {
                c->scope[v] = def;
                c->pos[v] = 2 * g->loops[def].first;
            }
            break;
        case JN_IR_V_LOOP_OUT:
            if (def >= 0 && def < g->nloops && idx >= 0) {
                const jn_ir_loop *L = &g->loops[def];
                ok = idx < L->ncarry ? L->carry[idx].out == v
                                     : idx - L->ncarry < L->ncollect && L->collect[idx - L->ncarry].out == v;
                c->scope[v] = L->parent;
                c->pos[v] = 2 * (L->first + L->count);
            }
            break;
        default: BAD("value %%%d has unknown kind %d", v, (int)x->kind);
        }
        if (!ok)
            BAD("value %%%d claims to be defined by %s #%d (output %d), which does not define it", v,
                x->kind == JN_IR_V_INPUT ? "input" : x->kind == JN_IR_V_NODE ? "node" : "loop", def, idx);
        uint64_t m = 0;
        for (int d = 0; d < x->ndim; d++) m |= dim_mask(c, x->shape[d]);
        if (m & ~scope_mask(c, c->scope[v])) {
            int32_t l;
            const char *iv = mask_ivar(c, m & ~scope_mask(c, c->scope[v]), &l);
            BAD("value %%%d has a shape using %s, the induction variable of loop L%d, outside that loop", v, iv, l);
        }
    }
    /* Definers point at values that point back: each value defined once. */
    for (int32_t i = 0; i < g->ninputs; i++) {
        int32_t v = g->inputs[i].value;
        if (v < 0 || v >= g->nvalues || g->values[v].kind != JN_IR_V_INPUT || g->values[v].def != i)
            BAD("input %d names value %%%d, which is not its value", i, v);
    }
    for (int32_t n = 0; n < g->nnodes; n++)
        for (int k = 0; k < g->nodes[n].nout && k < JN_MAX_OUTS; k++) {
            int32_t v = g->nodes[n].out[k];
            if (v < 0 || v >= g->nvalues || g->values[v].kind != JN_IR_V_NODE || g->values[v].def != n ||
                g->values[v].idx != k)
                BAD("node %d (%s) output %d names value %%%d, which is not defined by it", n, opname(g->nodes[n].op),
                    k, v);
        }
    for (int32_t l = 0; l < g->nloops; l++) {
        const jn_ir_loop *L = &g->loops[l];
        for (int32_t k = 0; k < L->ncarry + L->ncollect; k++) {
            int32_t p = k < L->ncarry ? L->carry[k].param : -1, o = k < L->ncarry ? L->carry[k].out
                                                                                   : L->collect[k - L->ncarry].out;
            if (k < L->ncarry && (p < 0 || p >= g->nvalues || g->values[p].kind != JN_IR_V_LOOP_PARAM ||
                                  g->values[p].def != l || g->values[p].idx != k))
                BAD("loop L%d carry %d names param %%%d, which is not defined by it", l, k, p);
            if (o < 0 || o >= g->nvalues || g->values[o].kind != JN_IR_V_LOOP_OUT || g->values[o].def != l ||
                g->values[o].idx != k)
                BAD("loop L%d %s %d names out %%%d, which is not defined by it", l,
                    k < L->ncarry ? "carry" : "collect", k < L->ncarry ? k : k - L->ncarry, o);
        }
    }
    return JN_OK;
}

static jn_status check_inputs(vctx *c) {
    const jn_ir_graph *g = c->g;
    for (int32_t i = 0; i < g->ninputs; i++) {
        const jn_ir_input *in = &g->inputs[i];
        if ((unsigned)in->kind > JN_IR_IN_RNG) BAD("input %%%d has unknown kind %d", in->value, (int)in->kind);
        if (in->kind == JN_IR_IN_SCALAR || in->kind == JN_IR_IN_CONST) {
            const char *k = jn_ir__input_kinds[in->kind];
            if (in->pytype < 1 || in->pytype > 3)
                BAD("input %%%d (%s) has Python type %d; expected 1 int, 2 float or 3 bool", in->value, k, in->pytype);
            if (in->pytype == 1 && (!isfinite(in->scalar) || in->scalar != floor(in->scalar)))
                BAD("input %%%d (%s) is a Python int but its value %g is not an integer", in->value, k, in->scalar);
            if (in->pytype == 3 && in->scalar != 0 && in->scalar != 1)
                BAD("input %%%d (%s) is a Python bool but its value is %g", in->value, k, in->scalar);
        }
        if (in->kind == JN_IR_IN_STATE && in->bind < 0)
            BAD("input %%%d (state) is bound to tensor id %lld; ids are >= 0", in->value, (long long)in->bind);
    }
    return JN_OK;
}

static jn_status check_nodes(vctx *c) {
    const jn_ir_graph *g = c->g;
    for (int32_t n = 0; n < g->nnodes; n++) {
        const jn_ir_node *x = &g->nodes[n];
        const jn_opinfo *info = jn_op_info(x->op);
        const char *on = info->name;
        if (x->loop != c->owner[n])
            BAD("node %d (%s) says it is in loop %d but lies in loop %d (a node's loop is the innermost loop whose "
                "range holds it)", n, on, x->loop, c->owner[n]);
        for (int k = 0; k < x->nin; k++) {
            int32_t v = x->in[k];
            if (v < 0 || v >= g->nvalues) BAD("node %d (%s) input %d is %%%d, which does not exist", n, on, k, v);
            if (c->pos[v] >= 2 * n + 1) BAD("node %d (%s) uses %%%d before it is defined", n, on, v);
            if (!visible(c, v, 2 * n + 1, x->loop))
                BAD("node %d (%s) uses %%%d, which is defined inside loop L%d the node is not in (pass it out "
                    "through a carry or collect)", n, on, v, c->scope[v]);
        }
        uint64_t allowed = scope_mask(c, x->loop), used = 0;
        for (int k = 0; k < JN_MAX_ATTRS; k++) {
            const char *an = k < info->nattrs ? info->attr_name[k] : "?";
            int32_t b = x->attr_input[k];
            if (k >= info->nattrs) {
                if (b != -1) BAD("node %d (%s) binds attribute slot %d, which the op does not have", n, on, k);
                continue;
            }
            const jn_attr *a = &x->attrs.a[k];
            switch (info->attr_kind[k]) {
            case JN_A_INT:
                if (!dim_ok(c, a->i)) BAD("node %d (%s) attribute %s refers to a missing expression", n, on, an);
                used |= dim_mask(c, a->i);
                break;
            case JN_A_BOOL:
                if (a->i != 0 && a->i != 1) BAD("node %d (%s) attribute %s is %lld, not a bool", n, on, an, (long long)a->i);
                break;
            case JN_A_DTYPE:
                if (a->i < -1 || a->i >= JN_NDTYPES)
                    BAD("node %d (%s) attribute %s is %lld, not a dtype", n, on, an, (long long)a->i);
                break;
            case JN_A_INTS:
                if (a->l.n < 0 || a->l.n > JN_MAX_DIMS)
                    BAD("node %d (%s) attribute %s has %d entries (at most %d)", n, on, an, a->l.n, JN_MAX_DIMS);
                for (int j = 0; j < a->l.n; j++) {
                    if (!dim_ok(c, a->l.v[j]))
                        BAD("node %d (%s) attribute %s entry %d refers to a missing expression", n, on, an, j);
                    used |= dim_mask(c, a->l.v[j]);
                }
                break;
            default: break;
            }
            if (b == -1) continue;
            if (info->attr_kind[k] != JN_A_FLOAT && info->attr_kind[k] != JN_A_INT)
                BAD("node %d (%s) binds attribute %s to %%%d, but only int and float attributes can be bound", n, on,
                    an, b);
            if (b < 0 || b >= g->nvalues || g->values[b].kind != JN_IR_V_INPUT ||
                (g->inputs[g->values[b].def].kind != JN_IR_IN_SCALAR && g->inputs[g->values[b].def].kind != JN_IR_IN_CONST))
                BAD("node %d (%s) binds attribute %s to %%%d, which is no scalar input", n, on, an, b);
        }
        if (used & ~allowed) {
            int32_t l;
            const char *iv = mask_ivar(c, used & ~allowed, &l);
            BAD("node %d (%s) has an attribute using %s, the induction variable of loop L%d, outside that loop", n, on,
                iv, l);
        }
    }
    return JN_OK;
}

/* next/body of loop l: seen from the end of its body, not one of the outs
 * of l or of a loop around it. */
static int body_visible(const vctx *c, int32_t v, int32_t l) {
    const jn_ir_loop *L = &c->g->loops[l];
    if (!visible(c, v, 2 * (L->first + L->count) + 1, l)) return 0;
    const jn_ir_value *x = &c->g->values[v];
    return !(x->kind == JN_IR_V_LOOP_OUT && encloses(c, x->def, l));
}

static jn_status check_carries(vctx *c) {
    const jn_ir_graph *g = c->g;
    for (int32_t l = 0; l < g->nloops; l++) {
        const jn_ir_loop *L = &g->loops[l];
        if (jn_ir_is_expr(L->trip) && (dim_mask(c, L->trip) & ~scope_mask(c, L->parent)))
            BAD("loop L%d has a trip count using an induction variable of itself or an inner loop", l);
        for (int32_t k = 0; k < L->ncarry; k++) {
            const jn_ir_carry *y = &L->carry[k];
            if (y->init < 0 || y->init >= g->nvalues) BAD("loop L%d carry %d has init %%%d, which does not exist", l, k, y->init);
            if (!visible(c, y->init, 2 * L->first + 1, L->parent))
                BAD("loop L%d carry %d has init %%%d, which is not defined before the loop", l, k, y->init);
            if (y->next < 0 || y->next >= g->nvalues)
                BAD("loop L%d carry %d has next %%%d, which does not exist (set carry[k].next)", l, k, y->next);
            if (!body_visible(c, y->next, l))
                BAD("loop L%d carry %d has next %%%d, which is not visible at the end of the loop body", l, k, y->next);
            const jn_ir_value *init = &g->values[y->init];
            if (!same_type(init, &g->values[y->param], 0) || !same_type(init, &g->values[y->out], 0))
                BAD("loop L%d carry %d: param %%%d / out %%%d are not typed like init %%%d", l, k, y->param, y->out, y->init);
            if (!same_type(init, &g->values[y->next], 0))
                BAD("loop L%d carry %d: next %%%d is not typed like init %%%d", l, k, y->next, y->init);
        }
        for (int32_t k = 0; k < L->ncollect; k++) {
            const jn_ir_collect *y = &L->collect[k];
            if (y->body < 0 || y->body >= g->nvalues || !body_visible(c, y->body, l))
                BAD("loop L%d collect %d has body %%%d, which is not visible in the loop body", l, k, y->body);
            const jn_ir_value *b = &g->values[y->body], *o = &g->values[y->out];
            if (o->ndim < 1 || o->shape[0] != L->trip || !same_type(b, o, 1))
                BAD("loop L%d collect %d: out %%%d is not typed [trip, shape of %%%d...]", l, k, y->out, y->body);
        }
    }
    return JN_OK;
}

static jn_status check_outputs(vctx *c) {
    const jn_ir_graph *g = c->g;
    for (int32_t i = 0; i < g->noutputs; i++) {
        const jn_ir_output *o = &g->outputs[i];
        if (o->kind != JN_IR_OUT_STATE && o->kind != JN_IR_OUT_KEEP) BAD("output %d has unknown kind %d", i, (int)o->kind);
        if (o->value < 0 || o->value >= g->nvalues) BAD("output %d names %%%d, which does not exist", i, o->value);
        if (c->scope[o->value] != -1)
            BAD("output %d names %%%d, which is defined inside loop L%d (use the loop's carry or collect out)", i,
                o->value, c->scope[o->value]);
        if (o->kind == JN_IR_OUT_KEEP) continue;
        if (o->state < 0 || o->state >= g->ninputs || g->inputs[o->state].kind != JN_IR_IN_STATE)
            BAD("output %d writes %%%d to input #%d, which is no state input", i, o->value, o->state);
        const jn_ir_value *v = &g->values[o->value], *s = &g->values[g->inputs[o->state].value];
        if (v->dtype != s->dtype || v->ndim != s->ndim || v->device != s->device)
            BAD("output %d writes %%%d (%s, %d dims) to state %%%d (%s, %d dims): dtype, device and ndim must match", i,
                o->value, jn_ir_dtype_short(v->dtype), v->ndim, g->inputs[o->state].value,
                jn_ir_dtype_short(s->dtype), s->ndim);
        for (int32_t j = 0; j < i; j++)
            if (g->outputs[j].kind == JN_IR_OUT_STATE && g->outputs[j].state == o->state)
                BAD("outputs %d and %d both write state %%%d", j, i, g->inputs[o->state].value);
    }
    return JN_OK;
}

static jn_status check_guards(vctx *c) {
    const jn_ir_graph *g = c->g;
    for (int32_t i = 0; i < g->nguards; i++) {
        const jn_ir_guard *q = &g->guards[i];
        if ((unsigned)q->kind > JN_IR_G_TRIP) BAD("guard %d has unknown kind %d", i, (int)q->kind);
        const char *k = jn_ir__guard_kinds[q->kind];
        if ((unsigned)q->cls > JN_IR_GC_SEEN) BAD("guard %d (%s) has unknown class %d", i, k, (int)q->cls);
        /* only a recorded range may be extrapolated: everything else is
         * what the compiled code relies on */
        if (q->cls == JN_IR_GC_SEEN && q->kind != JN_IR_G_SYM && q->kind != JN_IR_G_TRIP)
            BAD("guard %d (%s) is of class seen, which only a symbol's or trip count's range may be", i, k);
        if (q->kind == JN_IR_G_SYM) {
            if (q->sym < 0 || q->sym >= g->nsyms) BAD("guard %d (sym) names symbol #%d, which does not exist", i, q->sym);
        } else if (q->kind == JN_IR_G_TRIP) {
            if (q->loop < 0 || q->loop >= g->nloops) BAD("guard %d (trip) names loop L%d, which does not exist", i, q->loop);
        } else if (q->value < 0 || q->value >= g->nvalues) {
            BAD("guard %d (%s) names %%%d, which does not exist", i, k, q->value);
        }
        if ((q->kind == JN_IR_G_SYM || q->kind == JN_IR_G_TRIP) && q->lo > q->hi)
            BAD("guard %d (%s) has range %lld..%lld with lo > hi", i, k, (long long)q->lo, (long long)q->hi);
        const jn_ir_value *v = q->value >= 0 && q->value < g->nvalues ? &g->values[q->value] : NULL;
        const jn_ir_input *in = v && v->kind == JN_IR_V_INPUT ? &g->inputs[v->def] : NULL;
        switch (q->kind) {
        case JN_IR_G_DIM:
            if (q->dim < 0 || q->dim >= v->ndim) BAD("guard %d (dim) names dim %d of %%%d, which has %d dims", i, q->dim, q->value, v->ndim);
            break;
        case JN_IR_G_DTYPE:
            if (q->lo < 0 || q->lo >= JN_NDTYPES) BAD("guard %d (dtype) expects dtype %lld, which does not exist", i, (long long)q->lo);
            break;
        case JN_IR_G_DEVICE:
            if (q->lo < 0 || q->lo > JN_CUDA) BAD("guard %d (device) expects device %lld, which does not exist", i, (long long)q->lo);
            break;
        case JN_IR_G_SCALAR:
            if (!in || (in->kind != JN_IR_IN_SCALAR && in->kind != JN_IR_IN_CONST))
                BAD("guard %d (scalar) names %%%d, which is no scalar or const input", i, q->value);
            break;
        case JN_IR_G_PYTYPE:
            if (q->lo < 0 || q->lo > 3) BAD("guard %d (pytype) expects Python type %lld; expected 0..3", i, (long long)q->lo);
            break;
        case JN_IR_G_BIND:
            if (!in || in->kind != JN_IR_IN_STATE) BAD("guard %d (bind) names %%%d, which is no state input", i, q->value);
            break;
        default: break;
        }
    }
    return JN_OK;
}

/* Codegen's annotations: the kernel table and the memory plan. */
static jn_status check_codegen(vctx *c) {
    const jn_ir_graph *g = c->g;
    if (g->nkernels < 0 || (g->nkernels && !g->kernels)) BAD("the kernel table has a negative count or no storage");
    for (int32_t k = 0; k < g->nkernels; k++) {
        const jn_ir_kernel *K = &g->kernels[k];
        if ((unsigned)K->kind > JN_IR_K_LIB) BAD("kernel K%d has unknown kind %d", k, (int)K->kind);
        if ((unsigned)K->impl > JN_IR_IMPL_GEMM) BAD("kernel K%d has unknown impl %d", k, (int)K->impl);
        if (K->root < 0 || K->root >= g->nnodes) BAD("kernel K%d has root node %d, which does not exist", k, K->root);
        if (g->nodes[K->root].kernel != k)
            BAD("kernel K%d has root node %d (%s), which is not one of its members (kernel=K%d)", k, K->root,
                opname(g->nodes[K->root].op), k);
    }
    for (int32_t n = 0; n < g->nnodes; n++) {
        int32_t k = g->nodes[n].kernel;
        if (k == -1) continue;
        if (k < 0 || k >= g->nkernels) BAD("node %d (%s) names kernel K%d, which does not exist", n, opname(g->nodes[n].op), k);
        const jn_ir_kernel *K = &g->kernels[k];
        if (n > K->root) BAD("node %d (%s) comes after the root (node %d) of its kernel K%d", n, opname(g->nodes[n].op), K->root, k);
        if (g->nodes[n].loop != g->nodes[K->root].loop)
            BAD("node %d (%s) of kernel K%d is in loop %d, its root in loop %d (a kernel stays in one loop)", n,
                opname(g->nodes[n].op), k, g->nodes[n].loop, g->nodes[K->root].loop);
    }
    int planned = 0;
    for (int32_t v = 0; v < g->nvalues; v++) {
        const jn_ir_value *x = &g->values[v];
        if (x->mem == -1 && x->wmem == -1 && x->alias == -1) continue;
        if (x->kind != JN_IR_V_NODE) BAD("value %%%d is no node output but has a memory plan (mem/alias)", v);
        if (x->mem != -1 && (!dim_ok(c, x->mem) || (!jn_ir_is_expr(x->mem) && x->mem < 0)))
            BAD("value %%%d has mem %lld, which is no byte offset", v, (long long)x->mem);
        if (x->wmem != -1 && (!dim_ok(c, x->wmem) || (!jn_ir_is_expr(x->wmem) && x->wmem < 0)))
            BAD("value %%%d has wmem %lld, which is no byte offset", v, (long long)x->wmem);
        /* the wide plan places exactly the values the plan does */
        if ((x->wmem != -1) != (x->mem != -1 && g->warena != -1))
            BAD("value %%%d has %s wide-plan offset (wmem) but %s", v, x->wmem != -1 ? "a" : "no",
                x->mem == -1 ? "no arena offset (mem)" : g->warena == -1 ? "the graph has no wide arena" : "an arena offset");
        if (x->alias != -1 && (x->alias < 0 || x->alias >= g->nvalues || c->pos[x->alias] >= c->pos[v]))
            BAD("value %%%d aliases %%%d, which is not defined before it", v, x->alias);
        planned |= x->mem != -1;
    }
    if (!dim_ok(c, g->arena) || (!jn_ir_is_expr(g->arena) && g->arena < -1))
        BAD("the arena size %lld is neither -1 (unplanned) nor a byte count", (long long)g->arena);
    if (planned && g->arena == -1) BAD("values have arena offsets (mem) but the graph has no arena");
    if (!dim_ok(c, g->warena) || (!jn_ir_is_expr(g->warena) && g->warena < -1) || (g->warena != -1 && g->arena == -1))
        BAD("the wide arena size %lld is neither -1 (none) nor a byte count beside a planned arena", (long long)g->warena);
    return JN_OK;
}

jn_status jn_ir_verify(const jn_ir_graph *g) {
    vctx cx = {.g = g, .gn = g && g->name ? g->name : "?"}, *c = &cx;
    if (!g) return jn_error(JN_ERR_VALUE, "jn_ir_verify: no graph");
    if (!jn_ir__is_ident(g->name)) BAD("the graph name is not an identifier");
    if (g->nsyms < 0 || g->nexprs < 0 || g->nvalues < 0 || g->ninputs < 0 || g->nnodes < 0 || g->nloops < 0 ||
        g->noutputs < 0 || g->nguards < 0 || (g->nsyms && !g->syms) || (g->nexprs && !g->exprs) ||
        (g->nvalues && !g->values) || (g->ninputs && !g->inputs) || (g->nnodes && !g->nodes) ||
        (g->nloops && !g->loops) || (g->noutputs && !g->outputs) || (g->nguards && !g->guards))
        BAD("a table has a negative count or no storage");
    cx.scope = malloc(((size_t)g->nvalues + 1) * sizeof(int32_t));
    cx.pos = malloc(((size_t)g->nvalues + 1) * sizeof(int32_t));
    cx.owner = malloc(((size_t)g->nnodes + 1) * sizeof(int32_t));
    cx.ldepth = malloc(((size_t)g->nloops + 1) * sizeof(int32_t));
    cx.loop_of_ivar = malloc(((size_t)g->nsyms + 1) * sizeof(int32_t));
    cx.emask = malloc(((size_t)g->nexprs + 1) * sizeof(uint64_t));
    cx.amask = malloc(((size_t)g->nloops + 1) * sizeof(uint64_t));
    jn_status st = JN_OK;
    if (!cx.scope || !cx.pos || !cx.owner || !cx.ldepth || !cx.loop_of_ivar || !cx.emask || !cx.amask)
        st = jn_error(JN_ERR_NOMEM, "out of memory verifying graph %s", cx.gn);
    for (int32_t s = 0; st == JN_OK && s < g->nsyms; s++) cx.loop_of_ivar[s] = -1;
    if (st == JN_OK) st = check_symbols(c);
    if (st == JN_OK) st = check_loops(c);   /* before exprs: ivar masks need loop_of_ivar */
    if (st == JN_OK) st = check_exprs(c);
    if (st == JN_OK) st = check_arity(c);
    if (st == JN_OK) st = check_values(c);
    if (st == JN_OK) st = check_inputs(c);
    if (st == JN_OK) st = check_nodes(c);
    if (st == JN_OK) st = check_carries(c);
    if (st == JN_OK) st = check_outputs(c);
    if (st == JN_OK) st = check_guards(c);
    if (st == JN_OK) st = check_codegen(c);
    free(cx.scope);
    free(cx.pos);
    free(cx.owner);
    free(cx.ldepth);
    free(cx.loop_of_ivar);
    free(cx.emask);
    free(cx.amask);
    return st;
}

jn_status jn_ir_verify_module(const jn_ir_module *m) {
    if (!m) return jn_error(JN_ERR_VALUE, "jn_ir_verify_module: no module");
    if (m->ngraphs < 0 || (m->ngraphs && !m->graphs) || m->nsites < 0 || (m->nsites && !m->sites))
        return jn_error(JN_ERR_VALUE, "module: a table has a negative count or no storage");
    for (int32_t i = 0; i < m->ngraphs; i++) {
        if (!m->graphs[i]) return jn_error(JN_ERR_VALUE, "module: graph #%d is missing", i);
        jn_status st = jn_ir_verify(m->graphs[i]);
        if (st != JN_OK) return st;
        for (int32_t j = 0; j < i; j++)
            if (!strcmp(m->graphs[j]->name, m->graphs[i]->name))
                return jn_error(JN_ERR_VALUE, "module: two graphs are named %s (#%d and #%d)", m->graphs[i]->name, j, i);
    }
    for (int32_t i = 0; i < m->nsites; i++)
        for (int32_t j = 0; j < i; j++)
            if (m->sites[i].id == m->sites[j].id)
                return jn_error(JN_ERR_VALUE, "module: site %lld is listed twice", (long long)m->sites[i].id);
    return JN_OK;
}
