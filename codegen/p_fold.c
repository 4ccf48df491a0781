/* p_fold.c -- constant folding.
 *
 * The IR has no tensor constants, only `const` inputs: Python numbers that
 * never varied (guarded), fed at replay as wrapped numbers (0-d, and weak
 * in type promotion like a Python scalar).  A node folds when
 *   - every input is a 0-d const input (none at all for a factory such as
 *     full(shape=[])), no attribute is bound to a varying scalar or uses a
 *     symbolic expression, the op is neither random, a collective nor
 *     `empty`, it has one output and that output is 0-d (casts of consts
 *     included);
 *   - the eager kernel (jn_dispatch, on real 0-d tensors) gives that dtype,
 *     in f32/f64/i64/i32/u8/bool, an integer result within 2^53;
 *   - its result may become a wrapped number: the node's own output was a
 *     0-d tensor, which promotes more strongly than a Python number, so
 *     every node reading it must be elementwise and compute in the same
 *     dtype either way (jn_result_type with the value wrapped or not), and
 *     it must not leave the graph as an output.
 * The result becomes a new const input (Python type from its dtype) and
 * the node's uses move to it; dce removes the node.  Bigger constant
 * results stay nodes: the IR keeps no tensor constants.
 */
#include "cg_priv.h"

static int eval_scalar(const jn_tensor *t, double *out) {
    const char *p = jn_data(t);
    switch (t->dtype) {
    case JN_F32: *out = *(const float *)p; return 1;
    case JN_F64: *out = *(const double *)p; return 1;
    case JN_I64: {
        int64_t v = *(const int64_t *)p;
        if (v > (INT64_C(1) << 53) || v < -(INT64_C(1) << 53)) return 0;
        *out = (double)v;
        return 1;
    }
    case JN_I32: *out = *(const int32_t *)p; return 1;
    case JN_U8: *out = *(const uint8_t *)p; return 1;
    case JN_BOOL: *out = *(const uint8_t *)p != 0; return 1;
    default: return 0;
    }
}

static jn_tensor *scalar_for(const jn_ir_graph *g, int32_t v, double val) {
    jn_dtype dt = g->values[v].dtype;
    return jn_dtype_is_float(dt) ? jn_scalar_f64(val, dt, 1) : jn_scalar_i64((int64_t)val, dt, 1);
}

/* Would node u compute in the same dtype with value y wrapped? */
static int promotion_same(const jn_ir_graph *g, const jn_ir_node *u, int32_t y) {
    if (!(cg_flags(u->op) & JN_F_EW) || u->nin > 8) return 0;
    jn_tensor ts[8], *p[8];
    memset(ts, 0, sizeof ts);
    for (int k = 0; k < u->nin; k++) {
        const jn_ir_value *x = &g->values[u->in[k]];
        ts[k].dtype = x->dtype;
        ts[k].ndim = x->ndim;
        ts[k].wrapped_number = x->kind == JN_IR_V_INPUT && g->inputs[x->def].kind == JN_IR_IN_CONST && x->ndim == 0;
        if (u->in[k] == y) ts[k].wrapped_number = 0;
        p[k] = &ts[k];
    }
    jn_dtype before = jn_result_type(u->nin, p);
    for (int k = 0; k < u->nin; k++)
        if (u->in[k] == y) ts[k].wrapped_number = 1;
    return jn_result_type(u->nin, p) == before;
}

static jn_status fold_node(jn_ir_graph *g, int32_t n, const cg_uses *u) {
    const jn_ir_node *x = &g->nodes[n];
    const jn_opinfo *info = jn_op_info(x->op);
    double vals[JN_MAX_INS];
    if ((info->flags & (JN_F_RAND | JN_F_COLL)) || x->op == JN_OP_empty || x->nout != 1 || x->nin > JN_MAX_INS) return JN_OK;
    int32_t y = x->out[0];
    const jn_ir_value *yv = &g->values[y];
    if (yv->ndim != 0 || (u->flags[y] & CG_U_OUTPUT)) return JN_OK;
    for (int k = 0; k < x->nin; k++)
        if (!cg_const(g, x->in[k], &vals[k])) return JN_OK;
    jn_attrs a = x->attrs;
    for (int k = 0; k < info->nattrs; k++) {
        double bv;
        if (x->attr_input[k] >= 0) {
            if (!cg_const(g, x->attr_input[k], &bv)) return JN_OK;
            if (info->attr_kind[k] == JN_A_FLOAT) a.a[k].f = bv;
            else a.a[k].i = (int64_t)bv;
        }
        if (info->attr_kind[k] == JN_A_INT && jn_ir_is_expr(a.a[k].i)) return JN_OK;
        if (info->attr_kind[k] == JN_A_INTS)
            for (int j = 0; j < a.a[k].l.n; j++)
                if (jn_ir_is_expr(a.a[k].l.v[j])) return JN_OK;
    }
    for (int32_t i = u->start[y]; i < u->start[y + 1]; i++)
        if (!promotion_same(g, &g->nodes[u->users[i]], y)) return JN_OK;
    jn_tensor *in[JN_MAX_INS], *out[JN_MAX_OUTS] = {0};
    int ok = 1;
    for (int k = 0; k < x->nin; k++) ok &= (in[k] = scalar_for(g, x->in[k], vals[k])) != NULL;
    double r = 0;
    if (ok && jn_dispatch(x->op, x->nin, in, &a, out) == JN_OK) {
        ok = out[0] && out[0]->ndim == 0 && out[0]->dtype == yv->dtype && eval_scalar(out[0], &r);
    } else ok = 0;
    for (int k = 0; k < x->nin; k++)
        if (in[k]) jn_tensor_decref(in[k]);
    if (out[0]) jn_tensor_decref(out[0]);
    if (!ok) return JN_OK; /* an op that fails here fails at replay too: leave it to report there */
    int64_t site = x->site;
    jn_dtype dt = yv->dtype;
    int dev = yv->device;
    int32_t i = jn_ir_input_add(g, JN_IR_IN_CONST, dt, dev, 0, NULL, site);
    if (i < 0) return JN_ERR_NOMEM;
    g->inputs[i].scalar = r;
    g->inputs[i].pytype = dt == JN_BOOL ? 3 : jn_dtype_is_float(dt) ? 2 : 1;
    cg_replace(g, y, g->inputs[i].value);
    return JN_OK;
}

jn_status jn_cg_pass_fold(jn_cg_ctx *cx, jn_ir_graph *g) {
    (void)cx;
    /* one node at a time: a folded result feeds the next fold */
    for (int32_t n = 0; n < g->nnodes; n++) {
        const jn_ir_node *x = &g->nodes[n];
        double v;
        int all = x->nout == 1 && g->values[x->out[0]].ndim == 0;
        for (int k = 0; k < x->nin && all; k++) all = cg_const(g, x->in[k], &v);
        if (!all) continue; /* the cheap test first: uses are rebuilt per candidate */
        cg_uses u;
        jn_status st = cg_uses_build(g, &u);
        if (st != JN_OK) return st;
        st = fold_node(g, n, &u);
        cg_uses_free(&u);
        if (st != JN_OK) return jn_error(st, "out of memory folding graph %s", g->name);
    }
    return JN_OK;
}
