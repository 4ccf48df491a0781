/* p_fuse.c -- fusion: groups nodes into kernels (jn_ir_kernel, kernel=K<k>
 * on the member nodes).  A kernel runs where its root (last member)
 * stands, in the root's loop, so the rules keep that position valid.
 *
 * GEMM epilogues (first, in node order): an mm/addmm/linear/matmul node
 * whose output has exactly one use, by a node of the same loop that is
 * add (a bias, broadcast to the GEMM output), relu, gelu, tanh, sigmoid or
 * silu with the GEMM's output shape, takes that node into its kernel; the
 * chain continues while each new member's output again has exactly that
 * one use.  Kind gemm; the epilogue intermediates are never materialized.
 *
 * Elementwise kernels (then, roots in reverse node order): a root is an
 * elementwise op (JN_F_EW, one output) or a reduction (sum, mean, amax,
 * amin over the trailing dims or all dims, keepdim either) which can only
 * END a kernel, never sit inside one.  The kernel shape S is the root's
 * output shape (a reduction's: its input shape).  A producer p of a
 * member's input joins when
 *   - p is elementwise (JN_F_EW; random ops never are), not yet in a
 *     kernel, in the root's loop (never across loop boundaries);
 *   - p's output shape is exactly S (dims compared as jn_ir_dim: B and 32
 *     differ even when B was 32), and each input of p broadcasts to S
 *     (right-aligned, each dim 1 or equal): external inputs may broadcast,
 *     intermediates are full-size, so the emitter needs one index per
 *     element and strides per external input;
 *   - every other use of p's output comes after the root (a node with a
 *     higher index, a carry next / collect of the root's loop, a graph
 *     output, a carry init of a loop that starts after the root): the
 *     kernel then exports that value (writes it too).  A use before the
 *     root by a non-member would read it before the kernel runs.
 * Views are never members: a view between two elementwise ops splits
 * them (the view's output is an external input of the consumer's kernel,
 * which the emitter indexes through its strides).  Groups of one node stay
 * without a kernel: their eager table kernel runs them (LIB).  A kernel
 * stops growing at CG_MAX_KERNEL_NODES members, so generated functions
 * stay of a size a C compiler handles quickly, and takes no member that
 * would bind more than CG_MAX_KERNEL_SCALARS scalar inputs to attributes
 * (float attributes are fed at run time: an `add`'s alpha each; the CUDA
 * kernel ABI passes at most JN_DK_MAX_SCALARS, exec/jn_exec.h).
 * Kernels are numbered by root position.
 */
#include "cg_priv.h"

#define CG_MAX_KERNEL_NODES 128
#define CG_MAX_KERNEL_SCALARS 16 /* JN_DK_MAX_SCALARS */

/* Adds node x's bound scalar inputs to the kernel's set sc[0..*n) when they
 * fit in CG_MAX_KERNEL_SCALARS; 0 (set unchanged) when they do not. */
static int scalars_fit(const jn_ir_node *x, int32_t *sc, int *n) {
    int m = *n;
    for (int a = 0; a < JN_MAX_ATTRS; a++) {
        int32_t v = x->attr_input[a], seen = v < 0;
        for (int i = 0; i < m && !seen; i++) seen = sc[i] == v;
        if (seen) continue;
        if (m == CG_MAX_KERNEL_SCALARS) return 0;
        sc[m++] = v;
    }
    *n = m;
    return 1;
}

typedef struct {
    jn_ir_graph *g;
    cg_uses u;
    int32_t *kof;     /* per node: temporary kernel id, -1 */
    int32_t nk;
} fctx;

static int is_gemm(jn_op op) {
    return op == JN_OP_mm || op == JN_OP_addmm || op == JN_OP_linear || op == JN_OP_matmul;
}

static int same_shape_dims(const jn_ir_value *v, int nd, const jn_ir_dim *s) {
    if (v->ndim != nd) return 0;
    for (int d = 0; d < nd; d++)
        if (v->shape[d] != s[d]) return 0;
    return 1;
}

static int bcast_ok(const jn_ir_value *v, int nd, const jn_ir_dim *s) {
    if (v->ndim > nd) return 0;
    for (int d = 0; d < v->ndim; d++) {
        jn_ir_dim x = v->shape[v->ndim - 1 - d];
        if (x != 1 && x != s[nd - 1 - d]) return 0;
    }
    return 1;
}

static int ew_ok(const jn_ir_graph *g, const jn_ir_node *x, int nd, const jn_ir_dim *s) {
    int fl = cg_flags(x->op);
    if (!(fl & JN_F_EW) || (fl & JN_F_RAND) || x->nout != 1) return 0;
    if (!same_shape_dims(&g->values[x->out[0]], nd, s)) return 0;
    for (int k = 0; k < x->nin; k++)
        if (!bcast_ok(&g->values[x->in[k]], nd, s)) return 0;
    return 1;
}

/* A reduction that may end a kernel: over trailing dims or all dims. */
static int reduce_root(const jn_ir_graph *g, const jn_ir_node *x) {
    if (x->op != JN_OP_sum && x->op != JN_OP_mean && x->op != JN_OP_amax && x->op != JN_OP_amin) return 0;
    if (x->attr_input[0] != -1) return 0;
    const jn_ints *dims = &x->attrs.a[0].l;
    int nd = g->values[x->in[0]].ndim;
    if (dims->n == 0) return 1;
    uint32_t seen = 0;
    for (int j = 0; j < dims->n; j++) {
        int64_t d = dims->v[j];
        if (jn_ir_is_expr(d)) return 0;
        if (d < 0) d += nd;
        if (d < 0 || d >= nd || (seen >> d & 1)) return 0;
        seen |= 1u << d;
    }
    for (int d = nd - dims->n; d < nd; d++)
        if (!(seen >> d & 1)) return 0;
    return 1;
}

/* May value v (from a member-to-be) be used as the rules say, for a kernel
 * with temp id k rooted at `root`? */
static int uses_ok(const fctx *f, int32_t v, int32_t k, int32_t root) {
    const jn_ir_graph *g = f->g;
    for (int32_t i = f->u.start[v]; i < f->u.start[v + 1]; i++) {
        int32_t w = f->u.users[i];
        if (f->kof[w] != k && w <= root) return 0;
    }
    if (f->u.flags[v] & CG_U_INIT)
        for (int32_t l = 0; l < g->nloops; l++)
            for (int32_t c = 0; c < g->loops[l].ncarry; c++)
                if (g->loops[l].carry[c].init == v && g->loops[l].first <= root) return 0;
    return 1;
}

static void gemm_epilogues(fctx *f) {
    jn_ir_graph *g = f->g;
    for (int32_t n = 0; n < g->nnodes; n++) {
        const jn_ir_node *x = &g->nodes[n];
        if (!is_gemm(x->op) || f->kof[n] >= 0 || x->nout != 1) continue;
        const jn_ir_value *ov = &g->values[x->out[0]];
        int32_t cur = x->out[0], last = n, k = f->nk;
        for (;;) {
            if (cg_nusers(&f->u, cur) != 1 || f->u.flags[cur]) break;
            int32_t c = f->u.users[f->u.start[cur]];
            const jn_ir_node *y = &g->nodes[c];
            jn_op op = y->op;
            if (f->kof[c] >= 0 || y->loop != x->loop || y->nout != 1) break;
            if (op != JN_OP_add && op != JN_OP_relu && op != JN_OP_gelu && op != JN_OP_tanh && op != JN_OP_sigmoid &&
                op != JN_OP_silu)
                break;
            if (!ew_ok(g, y, ov->ndim, ov->shape)) break;
            /* the bias comes from outside the chain; add(cur, cur) is no epilogue;
             * alpha (fed at run time) is the kernel's scalar */
            if (op == JN_OP_add && y->in[0] == y->in[1]) break;
            f->kof[n] = k;
            f->kof[c] = k;
            last = c;
            cur = y->out[0];
        }
        if (last != n) f->nk++;
    }
}

static int32_t grow(fctx *f, int32_t root, int32_t k, int nd, const jn_ir_dim *s) {
    jn_ir_graph *g = f->g;
    int32_t count = 1, sc[CG_MAX_KERNEL_SCALARS];
    int nsc = 0;
    if (!scalars_fit(&g->nodes[root], sc, &nsc)) return 1;
    for (int changed = 1; changed && count < CG_MAX_KERNEL_NODES;) {
        changed = 0;
        for (int32_t m = root; m >= 0; m--) {
            if (f->kof[m] != k) continue;
            const jn_ir_node *x = &g->nodes[m];
            for (int j = 0; j < x->nin && count < CG_MAX_KERNEL_NODES; j++) {
                int32_t p = cg_def(g, x->in[j]);
                if (p < 0 || f->kof[p] != -1 || g->nodes[p].loop != g->nodes[root].loop) continue;
                if (!ew_ok(g, &g->nodes[p], nd, s)) continue;
                f->kof[p] = k; /* tentatively: its uses by members count as inside */
                int n0 = nsc;
                if (!uses_ok(f, g->nodes[p].out[0], k, root) || !scalars_fit(&g->nodes[p], sc, &nsc)) {
                    f->kof[p] = -1;
                    nsc = n0;
                    continue;
                }
                count++;
                changed = 1;
            }
        }
    }
    return count;
}

static void ew_kernels(fctx *f, uint8_t *is_reduce) {
    jn_ir_graph *g = f->g;
    for (int32_t n = g->nnodes - 1; n >= 0; n--) {
        if (f->kof[n] >= 0) continue;
        const jn_ir_node *x = &g->nodes[n];
        int red = reduce_root(g, x);
        const jn_ir_value *sv = &g->values[red ? x->in[0] : x->out[0]];
        if (!red && !ew_ok(g, x, sv->ndim, sv->shape)) continue;
        int32_t k = f->nk;
        f->kof[n] = k;
        if (grow(f, n, k, sv->ndim, sv->shape) < 2) {
            f->kof[n] = -1;
            continue;
        }
        is_reduce[k] = (uint8_t)red;
        f->nk++;
    }
}

jn_status jn_cg_pass_fuse(jn_cg_ctx *cx, jn_ir_graph *g) {
    (void)cx;
    fctx f = {.g = g};
    jn_status st = cg_uses_build(g, &f.u);
    if (st != JN_OK) return st;
    f.kof = malloc(((size_t)g->nnodes + 1) * sizeof(int32_t));
    int32_t *root = malloc(((size_t)g->nnodes + 1) * sizeof(int32_t)), *ren = malloc(((size_t)g->nnodes + 1) * sizeof(int32_t));
    uint8_t *isred = calloc((size_t)g->nnodes + 1, 1);
    if (!f.kof || !root || !ren || !isred) {
        st = jn_error(JN_ERR_NOMEM, "out of memory fusing graph %s", g->name);
        goto done;
    }
    /* a re-run starts over: kernels and any plan made from them */
    g->nkernels = 0;
    g->arena = g->warena = -1;
    for (int32_t v = 0; v < g->nvalues; v++) g->values[v].mem = g->values[v].wmem = -1, g->values[v].alias = -1;
    for (int32_t n = 0; n < g->nnodes; n++) f.kof[n] = -1, g->nodes[n].kernel = -1;
    gemm_epilogues(&f);
    int32_t ngemm = f.nk;
    ew_kernels(&f, isred);
    for (int32_t k = 0; k < f.nk; k++) root[k] = -1;
    for (int32_t n = 0; n < g->nnodes; n++)
        if (f.kof[n] >= 0) root[f.kof[n]] = n; /* the last member */
    /* number kernels by root position */
    int32_t next = 0;
    for (int32_t n = 0; n < g->nnodes; n++) {
        int32_t k = f.kof[n];
        if (k < 0 || root[k] != n) continue;
        jn_ir_kernel_kind kind = k < ngemm ? JN_IR_K_GEMM : isred[k] ? JN_IR_K_EW_REDUCE : JN_IR_K_EW;
        if (jn_ir_kernel_add(g, kind, n) < 0) {
            st = JN_ERR_NOMEM;
            goto done;
        }
        ren[k] = next++;
    }
    for (int32_t n = 0; n < g->nnodes; n++) g->nodes[n].kernel = f.kof[n] >= 0 ? ren[f.kof[n]] : -1;
done:
    cg_uses_free(&f.u);
    free(f.kof);
    free(root);
    free(ren);
    free(isred);
    return st;
}
