/* p_simplify.c -- algebraic simplification.
 *
 * Each rule either redirects the uses of a node's output y to an equal
 * value x (the node is left for dce) or rewrites the node itself to read
 * an earlier value.  A redirect needs x typed exactly like y (dtype, device
 * and every dim compared as jn_ir_dim: wrapped-number promotion makes
 * mul(f32 x, const 1) f32 but mul(i64 x, const 1.0) f32, which must stay),
 * x no const input (a Python number promotes differently from a tensor),
 * and cg_can_replace (no output aliasing).  "const c" is a 0-d `const`
 * input with value c; attributes bound to scalar inputs or holding
 * symbolic expressions block the rules that read them.
 *   mul(x, 1), mul(1, x)                 -> x
 *   add(x, 0) (any alpha), add(0, x) alpha=1, sub(x, 0)   -> x
 *   div(x, 1) rounding_mode=0; div(int x, 1) any mode        -> x
 *   cast(x) to x's dtype, expand(x) / view(x) to x's shape  -> x
 *   view(view(z)) -> view(z) when z is no strided view (permute,
 *       transpose, expand, slice, select, as_strided), so a direct view
 *       of z is still valid; then -> z if that view is the identity
 *   transpose(x, a, a) -> x;  transpose(transpose(z, a, b), a, b) -> z
 *       (either order, negative dims normalized)
 *   permute(permute(z, p), q) -> permute(z, p[q[i]]); identity permute -> z
 *   squeeze(unsqueeze(z, d), [d]) -> z
 *   neg(neg(z)) -> z
 * Not applied: x*0 (NaN, inf), x-x, x/x; transposes that swap other dims.
 * x+0 turns -0.0 into +0.0 in IEEE arithmetic; like other graph compilers
 * this pass accepts that.
 */
#include "cg_priv.h"

static int is_c(const jn_ir_graph *g, int32_t v, double c) {
    double x;
    return cg_const(g, v, &x) && x == c;
}

static int plain_attrs(const jn_ir_node *x) {
    const jn_opinfo *info = jn_op_info(x->op);
    for (int k = 0; k < info->nattrs; k++) {
        if (x->attr_input[k] != -1) return 0;
        if (info->attr_kind[k] == JN_A_INT && jn_ir_is_expr(x->attrs.a[k].i)) return 0;
        if (info->attr_kind[k] == JN_A_INTS)
            for (int j = 0; j < x->attrs.a[k].l.n; j++)
                if (jn_ir_is_expr(x->attrs.a[k].l.v[j])) return 0;
    }
    return 1;
}

/* The node defining v when it is op `op` with plain attributes (any
 * attributes for a view: its shape is its output type), else NULL. */
static const jn_ir_node *def_op(const jn_ir_graph *g, int32_t v, jn_op op) {
    int32_t n = cg_def(g, v);
    if (n < 0 || g->nodes[n].op != op || (op != JN_OP_view && !plain_attrs(&g->nodes[n]))) return NULL;
    return &g->nodes[n];
}

static int norm(int64_t d, int ndim, int64_t *out) {
    if (d < 0) d += ndim;
    *out = d;
    return d >= 0 && d < ndim;
}

static int strided_view(const jn_ir_graph *g, int32_t v) {
    int32_t n = cg_def(g, v);
    if (n < 0) return 0;
    jn_op op = g->nodes[n].op;
    return (cg_flags(op) & JN_F_VIEW) && op != JN_OP_view && op != JN_OP_squeeze && op != JN_OP_unsqueeze;
}

/* The value node n's output equals, or -1; may rewrite node n. */
static int32_t rule(jn_ir_graph *g, int32_t n) {
    jn_ir_node *x = &g->nodes[n];
    int32_t a = x->nin > 0 ? x->in[0] : -1, b = x->nin > 1 ? x->in[1] : -1;
    /* view/expand shapes may be symbolic: the output type says the same */
    if (x->op != JN_OP_view && x->op != JN_OP_expand && !plain_attrs(x)) return -1;
    const jn_opinfo *info = jn_op_info(x->op);
    int nd = g->values[x->out[0]].ndim;
    switch (x->op) {
    case JN_OP_mul:
        if (is_c(g, b, 1)) return a;
        if (is_c(g, a, 1)) return b;
        return -1;
    case JN_OP_add:
        if (is_c(g, b, 0)) return a;
        if (is_c(g, a, 0) && x->attrs.a[0].f == 1) return b;
        return -1;
    case JN_OP_sub: return is_c(g, b, 0) ? a : -1;
    case JN_OP_div:
        if (!is_c(g, b, 1)) return -1;
        return x->attrs.a[0].i == 0 || jn_dtype_is_int(g->values[a].dtype) ? a : -1;
    case JN_OP_cast:
    case JN_OP_expand: return a;  /* the type check decides */
    case JN_OP_view: {
        const jn_ir_node *p = def_op(g, a, JN_OP_view);
        if (p && !strided_view(g, p->in[0])) x->in[0] = a = p->in[0];
        return a;
    }
    case JN_OP_transpose: {
        int64_t d0, d1, e0, e1;
        if (!norm(x->attrs.a[0].i, nd, &d0) || !norm(x->attrs.a[1].i, nd, &d1)) return -1;
        if (d0 == d1) return a;
        const jn_ir_node *p = def_op(g, a, JN_OP_transpose);
        if (!p || !norm(p->attrs.a[0].i, nd, &e0) || !norm(p->attrs.a[1].i, nd, &e1)) return -1;
        return (d0 == e0 && d1 == e1) || (d0 == e1 && d1 == e0) ? p->in[0] : -1;
    }
    case JN_OP_permute: {
        const jn_ints *q = &x->attrs.a[0].l;
        int64_t r[JN_MAX_DIMS], t;
        if (q->n != nd) return -1;
        for (int i = 0; i < nd; i++)
            if (!norm(q->v[i], nd, &r[i])) return -1;
        const jn_ir_node *p = def_op(g, a, JN_OP_permute);
        if (p && p->attrs.a[0].l.n == nd) {
            int ok = 1;
            int64_t c[JN_MAX_DIMS];
            for (int i = 0; i < nd && ok; i++) ok = norm(p->attrs.a[0].l.v[r[i]], nd, &c[i]);
            if (ok) {
                for (int i = 0; i < nd; i++) x->attrs.a[0].l.v[i] = r[i] = c[i];
                x->in[0] = a = p->in[0];
            }
        }
        for (int i = 0; i < nd; i++)
            if (r[i] != i) return -1;
        (void)t;
        return a;
    }
    case JN_OP_squeeze: {
        const jn_ir_node *p = def_op(g, a, JN_OP_unsqueeze);
        int64_t d, e;
        int m = g->values[a].ndim;
        if (!p || x->attrs.a[0].l.n != 1 || !norm(x->attrs.a[0].l.v[0], m, &d) || !norm(p->attrs.a[0].i, m, &e))
            return -1;
        return d == e ? p->in[0] : -1;
    }
    case JN_OP_neg: {
        const jn_ir_node *p = def_op(g, a, JN_OP_neg);
        return p ? p->in[0] : -1;
    }
    default: (void)info; return -1;
    }
}

jn_status jn_cg_pass_simplify(jn_cg_ctx *cx, jn_ir_graph *g) {
    (void)cx;
    cg_uses u;
    jn_status st = cg_uses_build(g, &u);
    if (st != JN_OK) return st;
    for (int32_t n = 0; n < g->nnodes; n++) {
        if (g->nodes[n].nout != 1) continue;
        int32_t y = g->nodes[n].out[0], x = rule(g, n);
        double c;
        if (x < 0 || x == y || !cg_same_type(g, x, y) || cg_const(g, x, &c) || !cg_can_replace(g, &u, y, x)) continue;
        cg_replace(g, y, x);
        u.flags[x] |= u.flags[y] & CG_U_OUTPUT;
    }
    cg_uses_free(&u);
    return JN_OK;
}
