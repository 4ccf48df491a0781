/* kernel.c -- what a kernel of the fuse pass reads and writes
 * (jn_cg_kernel_describe), for the emitter and the executor, and the
 * checker of the rules a kernel table must follow to be runnable
 * (jn_cg_check_kernels), which the tests run after every pipeline.
 *
 * A kernel runs at its root's position, so: every value of a member read
 * outside the kernel is read after the root (a later node, a carry next /
 * collect of the root's loop, a graph output, a carry init of a loop that
 * starts after the root), and written by the kernel (exported); members of
 * ew / ew_reduce kernels are elementwise (the root of ew_reduce is its
 * reduction); a gemm kernel has one GEMM member, its first.
 */
#include <stdio.h>

#include "cg_priv.h"

void jn_cg_kernel_io_free(jn_cg_kernel_io *io) {
    free(io->nodes);
    free(io->in);
    free(io->out);
    free(io->call);
    free(io->scalar);
    memset(io, 0, sizeof *io);
}

static int has(const int32_t *a, int32_t n, int32_t v) {
    for (int32_t i = 0; i < n; i++)
        if (a[i] == v) return 1;
    return 0;
}

/* Is value v (of a member of kernel k) read outside the kernel? */
static int read_outside(const jn_ir_graph *g, const cg_uses *u, int32_t v, int32_t k) {
    if (u->flags[v] & (CG_U_OUTPUT | CG_U_NEXT | CG_U_INIT | CG_U_COLLECT)) return 1;
    for (int32_t i = u->start[v]; i < u->start[v + 1]; i++)
        if (g->nodes[u->users[i]].kernel != k) return 1;
    return 0;
}

static jn_status describe(const jn_ir_graph *g, const cg_uses *u, int32_t k, jn_cg_kernel_io *io) {
    memset(io, 0, sizeof *io);
    int32_t root = g->kernels[k].root, cap = 0;
    for (int32_t n = 0; n <= root; n++)
        if (g->nodes[n].kernel == k) cap += 1 + g->nodes[n].nin + g->nodes[n].nout;
    io->nodes = malloc(((size_t)cap + 1) * sizeof(int32_t));
    io->in = malloc(((size_t)cap + 1) * sizeof(int32_t));
    io->out = malloc(((size_t)cap + 1) * sizeof(int32_t));
    io->call = malloc(((size_t)cap * 2 + 1) * sizeof(int32_t));
    io->scalar = malloc(((size_t)cap * JN_MAX_ATTRS + 1) * sizeof(int32_t));
    if (!io->nodes || !io->in || !io->out || !io->call || !io->scalar) {
        jn_cg_kernel_io_free(io);
        return jn_error(JN_ERR_NOMEM, "out of memory describing kernel K%d of graph %s", k, g->name);
    }
    for (int32_t n = 0; n <= root; n++) {
        const jn_ir_node *x = &g->nodes[n];
        if (x->kernel != k) continue;
        io->nodes[io->nnodes++] = n;
        for (int j = 0; j < x->nin; j++) {
            int32_t v = x->in[j], d = cg_def(g, v);
            if ((d < 0 || g->nodes[d].kernel != k) && !has(io->in, io->nin, v)) io->in[io->nin++] = v;
        }
        for (int j = 0; j < x->nout; j++)
            if (n == root || read_outside(g, u, x->out[j], k)) io->out[io->nout++] = x->out[j];
        for (int a = 0; a < JN_MAX_ATTRS; a++)
            if (x->attr_input[a] >= 0 && !has(io->scalar, io->nscalar, x->attr_input[a]))
                io->scalar[io->nscalar++] = x->attr_input[a];
    }
    /* the generated function's operands */
    const jn_ir_kernel *K = &g->kernels[k];
    if (K->kind == JN_IR_K_EW || K->kind == JN_IR_K_EW_REDUCE) {
        memcpy(io->call, io->in, (size_t)io->nin * sizeof(int32_t));
        io->ncall = io->ncall_in = io->nin;
    } else if (K->kind == JN_IR_K_GEMM && io->nnodes > 0) {
        int32_t gemm = io->nodes[0];
        for (int32_t i = 1; i < io->nnodes; i++) {
            const jn_ir_node *x = &g->nodes[io->nodes[i]];
            for (int j = 0; j < x->nin; j++) {
                int32_t v = x->in[j], d = cg_def(g, v);
                if ((d < 0 || g->nodes[d].kernel != k || d == gemm) && !has(io->call, io->ncall, v))
                    io->call[io->ncall++] = v;
            }
        }
        io->ncall_in = io->ncall;
    }
    if (K->kind != JN_IR_K_LIB)
        for (int32_t i = 0; i < io->nout; i++)
            if (!(K->kind == JN_IR_K_GEMM && io->out[i] == g->nodes[io->nodes[0]].out[0])) io->call[io->ncall++] = io->out[i];
    return JN_OK;
}

jn_status jn_cg_kernel_describe(const jn_ir_graph *g, int32_t k, jn_cg_kernel_io *io) {
    memset(io, 0, sizeof *io);
    if (k < 0 || k >= g->nkernels) return jn_error(JN_ERR_VALUE, "graph %s has no kernel K%d", g->name, k);
    cg_uses u;
    jn_status st = cg_uses_build(g, &u);
    if (st != JN_OK) return st;
    st = describe(g, &u, k, io);
    cg_uses_free(&u);
    return st;
}

jn_status jn_cg_check_kernels(const jn_ir_graph *g) {
    cg_uses u;
    jn_status st = cg_uses_build(g, &u);
    if (st != JN_OK) return st;
    for (int32_t k = 0; k < g->nkernels && st == JN_OK; k++) {
        const jn_ir_kernel *K = &g->kernels[k];
        jn_cg_kernel_io io;
        if ((st = describe(g, &u, k, &io)) != JN_OK) break;
        int32_t root = K->root;
        for (int32_t i = 0; i < io.nnodes && st == JN_OK; i++) {
            int32_t n = io.nodes[i];
            const jn_ir_node *x = &g->nodes[n];
            const char *on = jn_op_info(x->op)->name;
            int ew = (cg_flags(x->op) & JN_F_EW) != 0;
            if (K->kind == JN_IR_K_GEMM && i == 0 && x->op != JN_OP_mm && x->op != JN_OP_addmm && x->op != JN_OP_linear &&
                x->op != JN_OP_matmul)
                st = jn_error(JN_ERR_VALUE, "graph %s kernel K%d (gemm) starts with node %d (%s), no GEMM", g->name, k, n, on);
            else if (K->kind != JN_IR_K_LIB && !ew && !(K->kind == JN_IR_K_GEMM && i == 0) &&
                     !(K->kind == JN_IR_K_EW_REDUCE && n == root))
                st = jn_error(JN_ERR_VALUE, "graph %s kernel K%d has node %d (%s), which is not elementwise", g->name, k, n, on);
            for (int j = 0; j < x->nout && st == JN_OK; j++) {
                int32_t v = x->out[j];
                for (int32_t q = u.start[v]; q < u.start[v + 1]; q++) {
                    int32_t w = u.users[q];
                    if (g->nodes[w].kernel != k && w <= root) {
                        st = jn_error(JN_ERR_VALUE, "graph %s kernel K%d: node %d (%s) reads %%%d of member node %d before "
                                      "the kernel runs (at node %d)", g->name, k, w, jn_op_info(g->nodes[w].op)->name, v, n, root);
                        break;
                    }
                }
                for (int32_t l = 0; l < g->nloops && st == JN_OK; l++)
                    for (int32_t c = 0; c < g->loops[l].ncarry; c++)
                        if (g->loops[l].carry[c].init == v && g->loops[l].first <= root) {
                            st = jn_error(JN_ERR_VALUE, "graph %s kernel K%d: loop L%d starts before the kernel runs but "
                                          "takes %%%d as a carry init", g->name, k, l, v);
                            break;
                        }
            }
        }
        jn_cg_kernel_io_free(&io);
    }
    cg_uses_free(&u);
    return st;
}

jn_status jn_cg_module_hash(const jn_ir_module *m, uint64_t *out) {
    void *data = NULL;
    size_t len = 0;
    jn_status st = jn_ir_serialize(m, &data, &len);
    if (st != JN_OK) return st;
    uint64_t h = 0xcbf29ce484222325ull;
    for (size_t i = 0; i < len; i++) h = (h ^ ((const uint8_t *)data)[i]) * 0x100000001b3ull;
    free(data);
    *out = h;
    return JN_OK;
}
