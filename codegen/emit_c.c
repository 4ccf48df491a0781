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

/* Block size of the blocked fast loop: the members' arrays within ~32 KB
 * of stack, a multiple of `mult` (16; a reduction's lanes: 32). */
static int block_len(const jn_cg_kernel_io *io, int mult) {
    int blk = 32768 / (8 * (io->nnodes > 0 ? io->nnodes : 1));
    return blk > 256 ? 256 : blk < mult ? mult : blk & ~(mult - 1);
}

/* Row base pointers b<j> of output row r (dims [0, no)). */
static void put_row_bases(FILE *f, int nops, int only, const char *ind) {
    for (int j = 0; j < nops; j++)
        if (only < 0 || j == only) fprintf(f, "%schar *b%d = c->data[%d];\n", ind, j, j);
    fprintf(f, "%sfor (int64_t q = r, d = no - 1; d >= 0; d--) {\n%s    const int64_t x = q %% sh[d];\n%s    q /= sh[d];\n",
            ind, ind, ind);
    for (int j = 0; j < nops; j++)
        if (only < 0 || j == only) fprintf(f, "%s    b%d += x * st[%d * nd + d];\n", ind, j, j);
    fprintf(f, "%s}\n", ind);
}

/* The head every row function shares: dims, innermost byte strides t<j>,
 * whether the fast loop applies, the reduced element count. */
static void put_head(FILE *f, const jn_ir_graph *g, const jn_cg_kernel_io *io, const uint8_t *bc, int reduce, int32_t ro) {
    int nops = io->ncall;
    fprintf(f, "    const int nd = c->ndim, no = %s;\n", reduce ? "nd - c->nred" : "nd - 1");
    fprintf(f, "    const int64_t *sh = c->shape, *st = c->strides;\n");
    fprintf(f, "    const int64_t n = no < nd ? sh[nd - 1] : 1;\n");
    for (int j = 0; j < nops; j++) fprintf(f, "    const int64_t t%d = no < nd ? st[%d * nd + nd - 1] : 0;\n", j, j);
    /* the fast loop: typed pointers indexed by i (the reduction's output
     * is written once per row, outside it) */
    fprintf(f, "    const int fast = 1");
    for (int j = 0; j < nops; j++)
        if (j != ro) fprintf(f, " && t%d == %zu", j, bc[j] ? (size_t)0 : jn_dtype_size[g->values[io->call[j]].dtype]);
    fprintf(f, ";\n");
    if (reduce) fprintf(f, "    int64_t cnt = 1;\n    for (int d = no; d < nd; d++) cnt *= sh[d];\n    (void)t%d;\n", ro);
}

/* p<j> = b<j> advanced to middle index mq (reduced dims [no, nd-1)). */
static void put_mid(FILE *f, int nops, int32_t ro, const char *ind) {
    for (int j = 0; j < nops; j++) fprintf(f, "%schar *p%d = b%d;\n", ind, j, j);
    if (ro >= 0) fprintf(f, "%s(void)p%d;\n", ind, ro);
    fprintf(f, "%sfor (int64_t q = mq, d = nd - 2; d >= no; d--) {\n%s    const int64_t x = q %% sh[d];\n%s    q /= sh[d];\n",
            ind, ind, ind);
    for (int j = 0; j < nops; j++) fprintf(f, "%s    p%d += x * st[%d * nd + d];\n", ind, j, j);
    fprintf(f, "%s}\n", ind);
}

static int count_expensive(const cg_em_ctx *e) {
    int nexp = 0;
    for (int32_t m = cg_em_first_member(e->K); m < e->io->nnodes; m++) nexp += expensive(e->g->nodes[e->io->nodes[m]].op);
    return nexp;
}

static jn_status emit_reduce(FILE *f, const jn_ir_graph *g, int32_t gi, int32_t k, const jn_cg_kernel_io *io);

static jn_status emit_kernel(FILE *f, const jn_ir_graph *g, int32_t gi, int32_t k, const jn_cg_kernel_io *io) {
    if (g->kernels[k].kind == JN_IR_K_EW_REDUCE) return emit_reduce(f, g, gi, k, io);
    cg_em_ctx e = {.f = f, .g = g, .io = io, .K = &g->kernels[k], .k = k};
    const jn_ir_value *S = &g->values[g->nodes[e.K->root].out[0]];
    int nops = io->ncall;
    uint8_t *bc = calloc((size_t)nops + 1, 1);
    if (!bc) return jn_error(JN_ERR_NOMEM, "out of memory emitting kernel K%d of graph %s", k, g->name);
    for (int j = 0; j < io->ncall_in; j++) bc[j] = (uint8_t)bcast_inner(g, io->call[j], S);

    cg_em_kernel_comment(&e);
    fprintf(f, "static void jn_k%d_%d_rows(int64_t u0, int64_t u1, void *ctx_) {\n", gi, k);
    fprintf(f, "    const jn_kcall *c = (const jn_kcall *)ctx_;\n");
    put_head(f, g, io, bc, 0, -1);
    fprintf(f, "    const int64_t nch = jn_nchunks(c, no, n), chl = (n + nch - 1) / nch;\n");
    fprintf(f, "    for (int64_t u = u0; u < u1; u++) {\n");
    fprintf(f, "        const int64_t r = u / nch, i0 = (u %% nch) * chl, i1 = i0 + chl < n ? i0 + chl : n;\n");
    put_row_bases(f, nops, -1, "        ");
    fprintf(f, "        {\n            const int64_t mq = 0;\n");
    put_mid(f, nops, -1, "            ");
    fprintf(f, "            if (fast) {\n");
    for (int j = 0; j < io->ncall_in; j++)
        if (bc[j]) {
            const char *T = cg_em_ctype(g->values[io->call[j]].dtype);
            fprintf(f, "                const %s s%d = *(const %s *)p%d;\n", T, j, T, j);
        }
    if (count_expensive(&e) >= BLOCKED_MIN_EXPENSIVE) {
        emit_blocked(&e, bc, block_len(io, 16), "                ");
    } else {
        fprintf(f, "                for (int64_t i = i0; i < i1; i++) {\n");
        emit_body(&e, 1, bc, "                    ");
        fprintf(f, "                }\n");
    }
    fprintf(f, "            } else {\n");
    fprintf(f, "                for (int64_t i = i0; i < i1; i++) {\n");
    emit_body(&e, 0, bc, "                    ");
    fprintf(f, "                }\n            }\n        }\n");
    fprintf(f, "    }\n}\n");
    fprintf(f, "void jn_k%d_%d(const jn_kcall *c) { jn_krun(c, jn_k%d_%d_rows); }\n", gi, k, gi, k);
    free(bc);
    return JN_OK;
}

/* An ew_reduce kernel, summing in runtime/k_reduce.c's order so that its
 * results equal the eager reduction's bit for bit.  The eager reduction
 * reads the fused members' output as a fresh contiguous tensor whose
 * reduced dims are trailing, so its plan depends only on the output count
 * (rows), the reduced count (cnt) and the pool size: each output's reduced
 * range [0, cnt) is split into jn_kred_run's chunks (one unless few
 * outputs reduce long ranges on a pool), and each chunk [rb, re) is folded
 * as k_reduce.c's LANES: element rb + 32m + q into lane q while whole
 * blocks of 32 remain, the lanes merged in order into the chunk's
 * accumulator, then the rest one by one; chunk results combine in order.
 * The fast path (one reduced dim after coalescing, unit strides) runs
 * whole blocks as a fixed 32-wide loop, as k_reduce.c does; otherwise each
 * element finds its lane from its position. */
static jn_status emit_reduce(FILE *f, const jn_ir_graph *g, int32_t gi, int32_t k, const jn_cg_kernel_io *io) {
    cg_em_ctx e = {.f = f, .g = g, .io = io, .K = &g->kernels[k], .k = k, .reduce = 1};
    const jn_ir_node *root = &g->nodes[e.K->root];
    cg_em_plan_reduce(g, e.K->root, &e.r, NULL, 0);
    const jn_ir_value *S = &g->values[root->in[0]];
    int nops = io->ncall;
    int32_t ro = cg_em_call_index(io, root->out[0]);
    uint8_t *bc = calloc((size_t)nops + 1, 1);
    if (!bc) return jn_error(JN_ERR_NOMEM, "out of memory emitting kernel K%d of graph %s", k, g->name);
    for (int j = 0; j < io->ncall_in; j++) bc[j] = (uint8_t)bcast_inner(g, io->call[j], S);
    const char *A = cg_em_acc_type(&e.r);
    char res[240];
    cg_em_reduce_result(res, sizeof res, &e.r);

    cg_em_kernel_comment(&e);
    /* (row, chunk) units: a chunk's result into k->part, or (no part) a
     * whole row's chunks in order and its result written */
    fprintf(f, "static void jn_k%d_%d_rows(int64_t u0, int64_t u1, void *ctx_) {\n", gi, k);
    fprintf(f, "    const jn_kred *k = (const jn_kred *)ctx_;\n    const jn_kcall *c = k->c;\n");
    put_head(f, g, io, bc, 1, ro);
    fprintf(f, "    for (int64_t u = u0; u < u1; u++) {\n");
    fprintf(f, "        const int64_t r = k->part ? u / k->nch : u;\n");
    fprintf(f, "        const int64_t ch0 = k->part ? u %% k->nch : 0, ch1 = k->part ? ch0 + 1 : k->nch;\n");
    put_row_bases(f, nops, -1, "        ");
    cg_em_acc_decl(f, &e.r, "racc", "        ");
    fprintf(f, "        for (int64_t ch = ch0; ch < ch1; ch++) {\n");
    fprintf(f, "            const int64_t rb = ch * k->clen, re = rb + k->clen < cnt ? rb + k->clen : cnt;\n");
    fprintf(f, "            const int64_t full = rb + (re - rb) / 32 * 32;\n");
    cg_em_acc_decl(f, &e.r, "acc", "            ");
    cg_em_acc_fill(f, &e.r, "l", 32, "            ");
    fprintf(f, "            if (fast && n == cnt) {\n");
    fprintf(f, "                const int64_t mq = 0;\n");
    put_mid(f, nops, ro, "                ");
    for (int j = 0; j < io->ncall_in; j++)
        if (bc[j]) {
            const char *T = cg_em_ctype(g->values[io->call[j]].dtype);
            fprintf(f, "                const %s s%d = *(const %s *)p%d;\n", T, j, T, j);
        }
    cg_em_ctx lane = e, seq = e;
    int blocked = count_expensive(&e) >= BLOCKED_MIN_EXPENSIVE;
    if (blocked) {
        lane.acc = "l[i & 31]";
        fprintf(f, "                {\n                    const int64_t i0 = rb, i1 = full;\n");
        emit_blocked(&lane, bc, block_len(io, 32), "                    ");
        fprintf(f, "                }\n");
    } else {
        lane.acc = "l[q]";
        fprintf(f, "                for (int64_t ib = rb; ib < full; ib += 32)\n");
        fprintf(f, "                    for (int64_t q = 0; q < 32; q++) {\n                        const int64_t i = ib + q;\n");
        emit_body(&lane, 1, bc, "                        ");
        fprintf(f, "                    }\n");
    }
    fprintf(f, "                for (int q = 0; q < 32; q++) {\n");
    cg_em_red_comb(f, &e.r, "acc", "l[q]", "                    ");
    fprintf(f, "                }\n");
    if (blocked) {
        fprintf(f, "                {\n                    const int64_t i0 = full, i1 = re;\n");
        emit_blocked(&seq, bc, block_len(io, 32), "                    ");
        fprintf(f, "                }\n");
    } else {
        fprintf(f, "                for (int64_t i = full; i < re; i++) {\n");
        emit_body(&seq, 1, bc, "                    ");
        fprintf(f, "                }\n");
    }
    /* any layout: element by element, each into its lane or, past the
     * whole blocks (the lanes merged first), into acc */
    fprintf(f, "            } else {\n");
    fprintf(f, "                for (int64_t pos = rb; pos < re;) {\n");
    fprintf(f, "                    const int64_t mq = pos / n, ia = pos %% n, ie = re - mq * n < n ? re - mq * n : n;\n");
    put_mid(f, nops, ro, "                    ");
    fprintf(f, "                    for (int64_t i = ia; i < ie; i++, pos++) {\n");
    fprintf(f, "                        if (pos == full)\n                            for (int q = 0; q < 32; q++) {\n");
    cg_em_red_comb(f, &e.r, "acc", "l[q]", "                                ");
    fprintf(f, "                            }\n");
    fprintf(f, "                        %s *const a_ = pos < full ? &l[(pos - rb) & 31] : &acc;\n", A);
    lane.acc = "*a_";
    emit_body(&lane, 0, bc, "                        ");
    fprintf(f, "                    }\n                }\n");
    fprintf(f, "                if (full == re)\n                    for (int q = 0; q < 32; q++) {\n");
    cg_em_red_comb(f, &e.r, "acc", "l[q]", "                        ");
    fprintf(f, "                    }\n            }\n");
    /* the chunk's accumulator (identity, then the fold added: k_reduce.c's
     * `*a += acc`), combined with the earlier chunks' */
    cg_em_acc_decl(f, &e.r, "cacc", "            ");
    cg_em_red_comb(f, &e.r, "cacc", "acc", "            ");
    fprintf(f, "            if (ch == ch0) racc = cacc;\n            else {\n");
    cg_em_red_comb(f, &e.r, "racc", "cacc", "                ");
    fprintf(f, "            }\n        }\n");
    fprintf(f, "        if (k->part) {\n            ((%s *)k->part)[u] = racc;\n        } else {\n", A);
    fprintf(f, "            const %s acc = racc;\n            *(%s *)b%d = %s;\n        }\n    }\n}\n", A, cg_em_ctype(e.r.out), ro, res);
    /* the chunks' results of each row, combined in chunk order */
    fprintf(f, "static void jn_k%d_%d_fin(const jn_kred *k) {\n    const jn_kcall *c = k->c;\n", gi, k);
    fprintf(f, "    const int nd = c->ndim, no = nd - c->nred;\n    const int64_t *sh = c->shape, *st = c->strides;\n");
    fprintf(f, "    int64_t rows = 1, cnt = 1;\n    for (int d = 0; d < nd; d++) {\n        if (d < no) rows *= sh[d];\n"
               "        else cnt *= sh[d];\n    }\n    (void)cnt;\n");
    fprintf(f, "    for (int64_t r = 0; r < rows; r++) {\n");
    fprintf(f, "        %s acc = ((const %s *)k->part)[r * k->nch];\n", A, A);
    fprintf(f, "        for (int64_t ch = 1; ch < k->nch; ch++) {\n");
    char src[96];
    snprintf(src, sizeof src, "((const %s *)k->part)[r * k->nch + ch]", A);
    cg_em_red_comb(f, &e.r, "acc", src, "            ");
    fprintf(f, "        }\n");
    put_row_bases(f, nops, ro, "        ");
    fprintf(f, "        *(%s *)b%d = %s;\n    }\n}\n", cg_em_ctype(e.r.out), ro, res);
    fprintf(f, "void jn_k%d_%d(const jn_kcall *c) { jn_kred_run(c, sizeof(%s), jn_k%d_%d_rows, jn_k%d_%d_fin); }\n", gi, k,
            A, gi, k, gi, k);
    free(bc);
    return JN_OK;
}

/* The driver every kernel shares: units of work (rows, or chunks of one
 * long row) on the pool when there is enough of it. */
static const char driver[] =
    "typedef void (*jn_krows)(int64_t u0, int64_t u1, void *ctx);\n"
    "/* (inline: a module may have no kernel of one kind) */\n"
    "/* chunks per row: one long row of an ew kernel is split so the pool can share it */\n"
    "static inline int64_t jn_nchunks(const jn_kcall *c, int no, int64_t n) {\n"
    "    int64_t rows = 1;\n"
    "    for (int d = 0; d < no; d++) rows *= c->shape[d];\n"
    "    return (rows == 1 && n > 2 * JN_KGRAIN && c->parallel_for) ? (n + JN_KGRAIN - 1) / JN_KGRAIN : 1;\n"
    "}\n"
    "static inline void jn_krun(const jn_kcall *c, jn_krows fn) {\n"
    "    const int nd = c->ndim, no = nd - 1;\n"
    "    int64_t rows = 1;\n"
    "    for (int d = 0; d < no; d++) rows *= c->shape[d];\n"
    "    if (rows == 0) return;\n"
    "    const int64_t n = no < nd ? c->shape[nd - 1] : 1;\n"
    "    const int64_t nch = jn_nchunks(c, no, n), units = rows * nch;\n"
    "    if (c->parallel_for && units > 1 && rows * n >= JN_KGRAIN) {\n"
    "        int64_t grain = nch > 1 ? 1 : JN_KGRAIN / (n > 0 ? n : 1);\n"
    "        c->parallel_for(units, grain > 0 ? grain : 1, fn, (void *)c);\n"
    "    } else {\n"
    "        fn(0, units, (void *)c);\n"
    "    }\n"
    "}\n"
    "/* A reduction's split, as runtime/k_reduce.c's run_reduce makes it: when\n"
    " * few outputs reduce long ranges on a pool of nt > 1 threads, the range is\n"
    " * cut in nch chunks of clen whose results combine in chunk order (part:\n"
    " * one accumulator per row and chunk, computed on the pool; without it\n"
    " * each row does its chunks in turn -- the same sums). */\n"
    "typedef struct jn_kred {\n"
    "    const jn_kcall *c;\n"
    "    int64_t nch, clen;\n"
    "    void *part;\n"
    "} jn_kred;\n"
    "static inline void jn_kred_run(const jn_kcall *c, size_t accsz, jn_krows fn, void (*fin)(const jn_kred *k)) {\n"
    "    const int nd = c->ndim, no = nd - c->nred;\n"
    "    int64_t rows = 1, cnt = 1;\n"
    "    for (int d = 0; d < nd; d++) {\n"
    "        if (d < no) rows *= c->shape[d];\n"
    "        else cnt *= c->shape[d];\n"
    "    }\n"
    "    if (rows == 0) return;\n"
    "    const int64_t nt = c->nthreads;\n"
    "    jn_kred k = {c, 1, cnt, NULL};\n"
    "    if (nt > 1 && (rows + 255) / 256 < nt && cnt >= 16384 && rows * cnt >= 65536) {\n"
    "        k.nch = cnt / 8192 < nt ? cnt / 8192 : nt;\n"
    "        k.clen = (cnt + k.nch - 1) / k.nch;\n"
    "        if (c->parallel_for) k.part = malloc((size_t)(rows * k.nch) * accsz);\n"
    "    }\n"
    "    const int64_t units = k.part ? rows * k.nch : rows;\n"
    "    if (c->parallel_for && units > 1 && rows * cnt >= JN_KGRAIN) {\n"
    "        int64_t grain = k.part ? 1 : JN_KGRAIN / (cnt > 0 ? cnt : 1);\n"
    "        c->parallel_for(units, grain > 0 ? grain : 1, fn, &k);\n"
    "    } else {\n"
    "        fn(0, units, &k);\n"
    "    }\n"
    "    if (k.part) {\n"
    "        fin(&k);\n"
    "        free(k.part);\n"
    "    }\n"
    "}\n";

static const char kcall_text[] =
    "typedef struct jn_kcall {\n"
    "    int32_t nops, ndim, nred, nthreads;\n"
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
               "#include <math.h>\n#include <stddef.h>\n#include <stdint.h>\n#include <stdlib.h>\n#include <string.h>\n\n");
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
