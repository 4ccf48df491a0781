/* p_cse.c -- common-subexpression elimination.
 *
 * Rules applied:
 *   - two `const` inputs with the same type, Python type and value (bit for
 *     bit: -0.0 and 0.0 differ) are one value: uses of the later one
 *     (node inputs and bound attributes) move to the earlier one; the input
 *     itself stays (inputs are the calling convention) and so do its guards;
 *   - two nodes with the same op, the same inputs in the same order, equal
 *     attributes (bound attributes bound to the same input) and the same
 *     output types, in the SAME loop (body-local reasoning: nodes never move
 *     across loop boundaries), are one: uses of the later node's outputs
 *     move to the earlier node's, and dce removes the later node;
 *   - collectives are never merged (each is a call every rank makes);
 *   - random ops and `empty` are never merged (conservative: each consumes
 *     or owns its own storage at replay even though the IR is functional);
 *   - a value that leaves the graph as an output is only redirected to one
 *     that does not (Python must not get one tensor for two).
 * Nodes are visited in order with their inputs already rewritten, so
 * chains of equal nodes collapse in one pass.  A graph that already has
 * kernels or a plan is left alone (remat's copies are equal on purpose).
 */
#include "cg_priv.h"

static uint64_t mix(uint64_t h, uint64_t x) {
    h ^= x + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2);
    return h;
}

static uint64_t node_hash(const jn_ir_node *x) {
    const jn_opinfo *info = jn_op_info(x->op);
    uint64_t h = mix((uint64_t)x->op, (uint64_t)(int64_t)x->loop);
    for (int k = 0; k < x->nin; k++) h = mix(h, (uint64_t)x->in[k]);
    for (int k = 0; k < info->nattrs; k++) {
        const jn_attr *a = &x->attrs.a[k];
        h = mix(h, (uint64_t)(int64_t)x->attr_input[k]);
        if (info->attr_kind[k] == JN_A_INTS) {
            for (int j = 0; j < a->l.n; j++) h = mix(h, (uint64_t)a->l.v[j]);
        } else h = mix(h, (uint64_t)a->i); /* a float's bits */
    }
    return h;
}

static int node_equal(const jn_ir_graph *g, const jn_ir_node *a, const jn_ir_node *b) {
    const jn_opinfo *info = jn_op_info(a->op);
    if (a->op != b->op || a->nin != b->nin || a->nout != b->nout || a->loop != b->loop) return 0;
    for (int k = 0; k < a->nin; k++)
        if (a->in[k] != b->in[k]) return 0;
    for (int k = 0; k < info->nattrs; k++) {
        const jn_attr *x = &a->attrs.a[k], *y = &b->attrs.a[k];
        if (a->attr_input[k] != b->attr_input[k]) return 0;
        if (info->attr_kind[k] == JN_A_INTS) {
            if (x->l.n != y->l.n) return 0;
            for (int j = 0; j < x->l.n; j++)
                if (x->l.v[j] != y->l.v[j]) return 0;
        } else if (x->i != y->i) return 0;
    }
    for (int k = 0; k < a->nout; k++)
        if (!cg_same_type(g, a->out[k], b->out[k])) return 0;
    return 1;
}

static void replace_input_value(jn_ir_graph *g, int32_t from, int32_t to) {
    cg_replace(g, from, to);
    for (int32_t n = 0; n < g->nnodes; n++)
        for (int k = 0; k < JN_MAX_ATTRS; k++)
            if (g->nodes[n].attr_input[k] == from) g->nodes[n].attr_input[k] = to;
}

jn_status jn_cg_pass_cse(jn_cg_ctx *cx, jn_ir_graph *g) {
    (void)cx;
    /* a planned graph is final: remat's copies are equal nodes on purpose,
     * and merging would leave kernels and plan stale */
    if (g->nkernels > 0 || g->arena != -1) return JN_OK;
    cg_uses u;
    jn_status st = cg_uses_build(g, &u);
    if (st != JN_OK) return st;
    /* equal constants */
    for (int32_t i = 0; i < g->ninputs; i++) {
        const jn_ir_input *a = &g->inputs[i];
        if (a->kind != JN_IR_IN_CONST) continue;
        for (int32_t j = 0; j < i; j++) {
            const jn_ir_input *b = &g->inputs[j];
            if (b->kind != JN_IR_IN_CONST || b->pytype != a->pytype || memcmp(&a->scalar, &b->scalar, sizeof(double)) ||
                !cg_same_type(g, a->value, b->value) || !cg_can_replace(g, &u, a->value, b->value))
                continue;
            replace_input_value(g, a->value, b->value);
            break;
        }
    }
    /* equal nodes */
    int32_t cap = 16;
    while (cap < 2 * g->nnodes) cap *= 2;
    int32_t *tab = malloc((size_t)cap * sizeof *tab);
    if (!tab) {
        cg_uses_free(&u);
        return jn_error(JN_ERR_NOMEM, "out of memory in cse of graph %s", g->name);
    }
    for (int32_t i = 0; i < cap; i++) tab[i] = -1;
    for (int32_t n = 0; n < g->nnodes; n++) {
        const jn_ir_node *x = &g->nodes[n];
        int fl = cg_flags(x->op);
        if ((fl & (JN_F_RAND | JN_F_COLL)) || x->op == JN_OP_empty) continue;
        uint32_t h = (uint32_t)node_hash(x) & (uint32_t)(cap - 1);
        for (; tab[h] >= 0; h = (h + 1) & (uint32_t)(cap - 1)) {
            const jn_ir_node *y = &g->nodes[tab[h]];
            if (!node_equal(g, x, y)) continue;
            int ok = 1;
            for (int k = 0; k < x->nout; k++) ok &= cg_can_replace(g, &u, x->out[k], y->out[k]);
            if (!ok) continue;
            for (int k = 0; k < x->nout; k++) {
                cg_replace(g, x->out[k], y->out[k]);
                u.flags[y->out[k]] |= u.flags[x->out[k]] & CG_U_OUTPUT;
            }
            break;
        }
        if (tab[h] < 0) tab[h] = n;
    }
    free(tab);
    cg_uses_free(&u);
    return JN_OK;
}
