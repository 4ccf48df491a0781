/* emit_c.c -- the C emitter: one self-contained C source per module with a
 * function per generated kernel (impl=gen: ew, ew_reduce; impl=gemm: the
 * epilogue after the GEMM), in the ABI of exec/jn_exec.h.
 *
 * The op table, the planning of each member and its expression live in
 * emit_ops.c (shared with the CUDA emitter, emit_cuda.c), the math in
 * runtime/k_ewmath.h and k_fastmath.h (embedded in the prologue); this
 * file writes the CPU loops around them.
 *
 * Loops.  The iteration space c->shape[0..ndim) is split into outer dims
 * (all but the last for ew; the kept dims for ew_reduce) walked by a row
 * index, the middle reduced dims (ew_reduce) walked by an odometer, and
 * the innermost dim, which runs a fast loop (typed pointers indexed by i,
 * operands expected to broadcast along it loaded once) when every
 * operand's innermost byte stride is its element size (or 0 where the IR
 * says it broadcasts), else a strided loop.  Rows go to c->parallel_for
 * when the work reaches 2^15 elements (the eager kernels' grain); one long
 * row of an ew kernel is split in chunks instead.
 */
#include <math.h>
#include <stdio.h>

#include "emit_priv.h"
#include "jn_ewmath_text.h"   /* jn_cg_ewmath_text: runtime/k_ewmath.h (CMake) */
#include "jn_fastmath_text.h" /* jn_cg_fastmath_text: runtime/k_fastmath.h (CMake) */

#define KABI_VERSION 1 /* JN_KABI_VERSION of exec/jn_exec.h */
#define PAR_GRAIN 32768 /* elements per task, as jn_nditer */
#define BLOCKED_MIN_EXPENSIVE 2 /* expensive members that make the fast loop blocked */

/* The loop body for element i: loads, members, stores; fast or strided. */
static void emit_body(const cg_em_ctx *e, int fast, const uint8_t *bc, const char *ind) {
    FILE *f = e->f;
    const jn_ir_graph *g = e->g;
    const jn_cg_kernel_io *io = e->io;
    for (int32_t j = 0; j < io->ncall_in; j++) {
        int32_t v = io->call[j];
        const char *T = cg_em_ctype(g->values[v].dtype);
        if (fast && bc[j]) fprintf(f, "%sconst %s v%d = s%d;\n", ind, T, v, j);
        else if (fast) fprintf(f, "%sconst %s v%d = ((const %s *)p%d)[i];\n", ind, T, v, T, j);
        else fprintf(f, "%sconst %s v%d = *(const %s *)(p%d + i * t%d);\n", ind, T, v, T, j, j);
    }
    for (int32_t m = cg_em_first_member(e->K); m < io->nnodes; m++) {
        int32_t n = io->nodes[m];
        const jn_ir_node *x = &g->nodes[n];
        char dst[32];
        if (!(e->reduce && n == e->K->root)) {
            fprintf(f, "%s%s v%d; /* %s */\n", ind, cg_em_ctype(g->values[x->out[0]].dtype), x->out[0], jn_op_info(x->op)->name);
            snprintf(dst, sizeof dst, "v%d", x->out[0]);
        }
        cg_em_member(e, n, 0, bc, dst, ind);
    }
    for (int32_t j = io->ncall_in; j < io->ncall; j++) {
        int32_t v = io->call[j];
        if (e->reduce && v == g->nodes[e->K->root].out[0]) continue; /* written per row */
        const char *T = cg_em_ctype(g->values[v].dtype);
        if (fast) fprintf(f, "%s((%s *)p%d)[i] = v%d;\n", ind, T, j, v);
        else fprintf(f, "%s*(%s *)(p%d + i * t%d) = v%d;\n", ind, T, j, j, v);
    }
}

/* The blocked fast loop: the row in blocks of `blk` elements, each member
 * one loop over the block into a small array (L1-resident), like the eager
 * kernels' one loop per op but without the memory traffic: chains of
 * expensive members (exp then tanh) are latency-bound as one long
 * per-element body.  Same expressions, same results. */
static void emit_blocked(const cg_em_ctx *e, const uint8_t *bc, int blk, const char *ind) {
    FILE *f = e->f;
    const jn_ir_graph *g = e->g;
    const jn_cg_kernel_io *io = e->io;
    fprintf(f, "%sfor (int64_t ib = i0; ib < i1; ib += %d) {\n", ind, blk);
    fprintf(f, "%s    const int64_t bn = i1 - ib < %d ? i1 - ib : %d;\n", ind, blk, blk);
    for (int32_t j = 0; j < io->ncall; j++) {
        int32_t v = io->call[j];
        const char *T = cg_em_ctype(g->values[v].dtype);
        if (j < io->ncall_in && !bc[j]) fprintf(f, "%s    const %s *A%d = (const %s *)p%d + ib;\n", ind, T, j, T, j);
    }
    char in2[64];
    snprintf(in2, sizeof in2, "%s        ", ind);
    for (int32_t m = cg_em_first_member(e->K); m < io->nnodes; m++) {
        int32_t n = io->nodes[m];
        const jn_ir_node *x = &g->nodes[n];
        char dst[32];
        if (!(e->reduce && n == e->K->root)) {
            fprintf(f, "%s    %s t%d[%d]; /* %s */\n", ind, cg_em_ctype(g->values[x->out[0]].dtype), x->out[0], blk,
                    jn_op_info(x->op)->name);
            snprintf(dst, sizeof dst, "t%d[i]", x->out[0]);
        }
        fprintf(f, "%s    for (int64_t i = 0; i < bn; i++)\n", ind);
        cg_em_member(e, n, 1, bc, dst, in2);
    }
    for (int32_t j = io->ncall_in; j < io->ncall; j++) {
        int32_t v = io->call[j];
        if (e->reduce && v == g->nodes[e->K->root].out[0]) continue;
        const char *T = cg_em_ctype(g->values[v].dtype);
        fprintf(f, "%s    for (int64_t i = 0; i < bn; i++) ((%s *)p%d + ib)[i] = t%d[i];\n", ind, T, j, v);
    }
    fprintf(f, "%s}\n", ind);
}

/* Members whose expressions cost tens of operations (the fast math, libm). */
static int expensive(jn_op op) {
    switch (op) {
    case JN_OP_exp: case JN_OP_log: case JN_OP_log1p: case JN_OP_expm1: case JN_OP_tanh: case JN_OP_sigmoid:
    case JN_OP_gelu: case JN_OP_silu: case JN_OP_sin: case JN_OP_cos: case JN_OP_erf: case JN_OP_pow:
    case JN_OP_atan2:
        return 1;
    default: return 0;
    }
}

/* Does operand v broadcast along the kernel's innermost dim (as the IR
 * types say)?  Decides which operands the fast loop loads once. */
static int bcast_inner(const jn_ir_graph *g, int32_t v, const jn_ir_value *S) {
    const jn_ir_value *x = &g->values[v];
    if (x->ndim == 0) return 1;
    if (S->ndim == 0) return 0;
    return x->shape[x->ndim - 1] == 1 && S->shape[S->ndim - 1] != 1;
}

static jn_status emit_kernel(FILE *f, const jn_ir_graph *g, int32_t gi, int32_t k, const jn_cg_kernel_io *io) {
    cg_em_ctx e = {.f = f, .g = g, .io = io, .K = &g->kernels[k], .k = k};
    const jn_ir_node *root = &g->nodes[e.K->root];
    e.reduce = e.K->kind == JN_IR_K_EW_REDUCE;
    if (e.reduce) cg_em_plan_reduce(g, e.K->root, &e.r, NULL, 0);
    const jn_ir_value *S = &g->values[e.reduce ? root->in[0] : root->out[0]];
    int nops = io->ncall;
    int32_t ro = e.reduce ? cg_em_call_index(io, root->out[0]) : -1;
    uint8_t *bc = calloc((size_t)nops + 1, 1);
    if (!bc) return jn_error(JN_ERR_NOMEM, "out of memory emitting kernel K%d of graph %s", k, g->name);
    for (int j = 0; j < io->ncall_in; j++) bc[j] = (uint8_t)bcast_inner(g, io->call[j], S);

    cg_em_kernel_comment(&e);
    fprintf(f, "static void jn_k%d_%d_rows(int64_t u0, int64_t u1, void *ctx_) {\n", gi, k);
    fprintf(f, "    const jn_kcall *c = (const jn_kcall *)ctx_;\n");
    fprintf(f, "    const int nd = c->ndim, no = %s;\n", e.reduce ? "nd - c->nred" : "nd - 1");
    fprintf(f, "    const int64_t *sh = c->shape, *st = c->strides;\n");
    fprintf(f, "    const int64_t n = no < nd ? sh[nd - 1] : 1;\n");
    if (!e.reduce) fprintf(f, "    const int64_t nch = jn_nchunks(c, no, n), chl = (n + nch - 1) / nch;\n");
    for (int j = 0; j < nops; j++) fprintf(f, "    const int64_t t%d = no < nd ? st[%d * nd + nd - 1] : 0;\n", j, j);
    /* the fast loop: typed pointers indexed by i (the reduction's output
     * is written once per row, outside it) */
    fprintf(f, "    const int fast = 1");
    for (int j = 0; j < nops; j++)
        if (j != ro) fprintf(f, " && t%d == %zu", j, bc[j] ? (size_t)0 : jn_dtype_size[g->values[io->call[j]].dtype]);
    fprintf(f, ";\n");
    if (e.reduce)
        fprintf(f, "    int64_t cnt = 1;\n    for (int d = no; d < nd; d++) cnt *= sh[d];\n    (void)cnt;\n    (void)t%d;\n", ro);
    fprintf(f, "    for (int64_t u = u0; u < u1; u++) {\n");
    if (!e.reduce) fprintf(f, "        const int64_t r = u / nch, i0 = (u %% nch) * chl, i1 = i0 + chl < n ? i0 + chl : n;\n");
    else fprintf(f, "        const int64_t r = u, i0 = 0, i1 = n;\n");
    for (int j = 0; j < nops; j++) fprintf(f, "        char *b%d = c->data[%d];\n", j, j);
    fprintf(f, "        for (int64_t q = r, d = no - 1; d >= 0; d--) {\n            const int64_t x = q %% sh[d];\n            q /= sh[d];\n");
    for (int j = 0; j < nops; j++) fprintf(f, "            b%d += x * st[%d * nd + d];\n", j, j);
    fprintf(f, "        }\n");
    if (e.reduce) cg_em_acc_init(f, &e.r, "        ");
    /* middle dims (reduced, all but the innermost) by an odometer */
    fprintf(f, "        int64_t mid = 1;\n        for (int d = no; d < nd - 1; d++) mid *= sh[d];\n");
    fprintf(f, "        for (int64_t mq = 0; mq < mid; mq++) {\n");
    for (int j = 0; j < nops; j++) fprintf(f, "            char *p%d = b%d;\n", j, j);
    if (ro >= 0) fprintf(f, "            (void)p%d;\n", ro);
    fprintf(f, "            for (int64_t q = mq, d = nd - 2; d >= no; d--) {\n                const int64_t x = q %% sh[d];\n                q /= sh[d];\n");
    for (int j = 0; j < nops; j++) fprintf(f, "                p%d += x * st[%d * nd + d];\n", j, j);
    fprintf(f, "            }\n");
    fprintf(f, "            if (fast) {\n");
    for (int j = 0; j < io->ncall_in; j++)
        if (bc[j]) {
            const char *T = cg_em_ctype(g->values[io->call[j]].dtype);
            fprintf(f, "                const %s s%d = *(const %s *)p%d;\n", T, j, T, j);
        }
    int nexp = 0;
    for (int32_t m = cg_em_first_member(e.K); m < io->nnodes; m++) nexp += expensive(g->nodes[io->nodes[m]].op);
    if (nexp >= BLOCKED_MIN_EXPENSIVE) {
        /* block size: the members' arrays within ~32 KB of stack */
        int blk = 32768 / (8 * (io->nnodes > 0 ? io->nnodes : 1));
        blk = blk > 256 ? 256 : blk < 16 ? 16 : blk & ~15;
        emit_blocked(&e, bc, blk, "                ");
    } else {
        fprintf(f, "                for (int64_t i = i0; i < i1; i++) {\n");
        emit_body(&e, 1, bc, "                    ");
        fprintf(f, "                }\n");
    }
    fprintf(f, "            } else {\n");
    fprintf(f, "                for (int64_t i = i0; i < i1; i++) {\n");
    emit_body(&e, 0, bc, "                    ");
    fprintf(f, "                }\n            }\n        }\n");
    if (e.reduce) {
        char cv[200];
        cg_em_reduce_result(cv, sizeof cv, &e.r);
        fprintf(f, "        *(%s *)b%d = %s;\n", cg_em_ctype(e.r.out), ro, cv);
    }
    fprintf(f, "    }\n}\n");
    fprintf(f, "void jn_k%d_%d(const jn_kcall *c) { jn_krun(c, %d, jn_k%d_%d_rows); }\n", gi, k, e.reduce, gi, k);
    free(bc);
    return JN_OK;
}

/* The driver every kernel shares: units of work (rows, or chunks of one
 * long row) on the pool when there is enough of it. */
static const char driver[] =
    "typedef void (*jn_krows)(int64_t u0, int64_t u1, void *ctx);\n"
    "/* chunks per row: one long row of an ew kernel is split so the pool can share it */\n"
    "static int64_t jn_nchunks(const jn_kcall *c, int no, int64_t n) {\n"
    "    int64_t rows = 1;\n"
    "    for (int d = 0; d < no; d++) rows *= c->shape[d];\n"
    "    return (rows == 1 && n > 2 * JN_KGRAIN && c->parallel_for) ? (n + JN_KGRAIN - 1) / JN_KGRAIN : 1;\n"
    "}\n"
    "static void jn_krun(const jn_kcall *c, int reduce, jn_krows fn) {\n"
    "    const int nd = c->ndim, no = reduce ? nd - c->nred : nd - 1;\n"
    "    int64_t rows = 1, inner = 1;\n"
    "    for (int d = 0; d < nd; d++) {\n"
    "        if (d < no) rows *= c->shape[d];\n"
    "        else inner *= c->shape[d];\n"
    "    }\n"
    "    if (rows == 0) return;\n"
    "    const int64_t n = no < nd ? c->shape[nd - 1] : 1;\n"
    "    const int64_t nch = reduce ? 1 : jn_nchunks(c, no, n), units = rows * nch;\n"
    "    if (c->parallel_for && units > 1 && rows * inner >= JN_KGRAIN) {\n"
    "        int64_t grain = nch > 1 ? 1 : JN_KGRAIN / (inner > 0 ? inner : 1);\n"
    "        c->parallel_for(units, grain > 0 ? grain : 1, fn, (void *)c);\n"
    "    } else {\n"
    "        fn(0, units, (void *)c);\n"
    "    }\n"
    "}\n";

static const char kcall_text[] =
    "typedef struct jn_kcall {\n"
    "    int32_t nops, ndim, nred, pad_;\n"
    "    char *const *data;\n"
    "    const int64_t *shape;\n"
    "    const int64_t *strides;\n"
    "    const double *scalars;\n"
    "    void (*parallel_for)(int64_t n, int64_t grain, void (*fn)(int64_t begin, int64_t end, void *ctx), void *ctx);\n"
    "} jn_kcall;\n";

static void prologue(FILE *f, uint64_t hash) {
    fprintf(f, "/* Generated by janus codegen (codegen/emit_c.c): the kernels of one IR\n"
               " * module in the ABI of exec/jn_exec.h.  Compile with -ffp-contract=off\n"
               " * and without -ffast-math: the results must match the eager kernels. */\n"
               "#include <math.h>\n#include <stddef.h>\n#include <stdint.h>\n#include <string.h>\n\n");
    fputs(kcall_text, f);
    fprintf(f, "const int jn_kabi_version = %d;\nconst unsigned long long jn_kmodule_hash = 0x%016llxULL;\n",
            KABI_VERSION, (unsigned long long)hash);
    fprintf(f, "#define JN_KGRAIN %d\n\n/* ---- runtime/k_fastmath.h ---- */\n", PAR_GRAIN);
    cg_em_put_header(f, jn_cg_fastmath_text);
    fprintf(f, "/* ---- end of runtime/k_fastmath.h ---- */\n\n/* ---- runtime/k_ewmath.h ---- */\n");
    cg_em_put_header(f, jn_cg_ewmath_text);
    fprintf(f, "/* ---- end of runtime/k_ewmath.h ---- */\n\n");
    fputs(driver, f);
}

jn_status jn_cg_emit_c(const jn_ir_module *m, char **src, size_t *len, int *nkernels) {
    static const cg_em_target t = {"C", CG_EM_MAX_OPS, prologue, NULL, emit_kernel};
    return cg_em_module(m, &t, src, len, nkernels);
}
