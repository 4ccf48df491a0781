/* emit_cuda.c -- the CUDA emitter: one self-contained CUDA C source per
 * module with a __global__ kernel per generated kernel (impl=gen: ew,
 * ew_reduce; impl=gemm: the epilogue after the GEMM), in the device ABI of
 * exec/jn_exec.h (jn_dkcall, by value), for NVRTC (nvrtc.c).
 *
 * Same semantics as the C emitter, from the same code: the op table, the
 * planning of each member and its per-element statement come from
 * emit_ops.c (emit_priv.h), the reduction's accumulator, step and result
 * too, and the per-element math is the text of runtime/k_ewmath.h and
 * k_fastmath.h, embedded as for C (their #include lines dropped: NVRTC has no libc
 * headers, so the source defines the few names it uses -- fixed-width
 * integer types, INT*_MIN/MAX, INFINITY, NAN -- itself; memcpy, fabsf,
 * copysignf and the libm functions are CUDA's device versions; NVRTC's
 * -default-device makes its plain C functions device functions).  Only the
 * loops differ:
 *
 *   ew / gemm epilogue: a grid-stride loop over the flattened iteration
 *   space, each element's operand addresses found by decomposing its index
 *   over c->shape (innermost fastest) with the byte strides.
 *
 *   ew_reduce: one block per output row (rows stride by gridDim.x); its
 *   JN_DK_BLOCK threads each accumulate a strided share of the reduced
 *   elements, then a shared-memory tree combines them -- the order and
 *   arithmetic of the eager CUDA reduce_kernel (runtime/cuda/kernels.cu):
 *   the output's math type as accumulator (float for a float32 sum or
 *   mean, double for float64, wrapping 64-bit integers), its red_join for
 *   amax/amin (a NaN on either side gives their sum), mean as the sum
 *   times 1/count in double.
 *
 * What differs from the CPU results: the fast math, + - * / and sqrt are
 * IEEE-rounded on both (NVRTC with -fmad=false, -prec-div/-prec-sqrt at
 * their defaults), so ew members built from them match the eager CPU
 * kernels bit for bit; the other libm functions (pow, atan2, log1p, expm1,
 * sin, cos, float64 exp/log/tanh/erf) are CUDA's, within their documented
 * ulps of glibc's, not bitwise; reductions follow the eager CUDA
 * reduction (above), not the CPU's order, so they match the CPU within a
 * sum's rounding.  No
 * float16/bfloat16: the shared table generates the CPU dtypes only
 * (f32 f64 i64 i32 u8 bool).  These are claims to check on a GPU: this
 * file is tested by compiling, not running.
 */
#include <stdio.h>

#include "emit_priv.h"
#include "jn_ewmath_text.h"   /* jn_cg_ewmath_text: runtime/k_ewmath.h (CMake) */
#include "jn_fastmath_text.h" /* jn_cg_fastmath_text: runtime/k_fastmath.h (CMake) */

/* These mirror exec/jn_exec.h (janus_cg sits below janus_exec);
 * test_emit_cuda.c checks that they agree. */
#define DKABI_VERSION 1    /* JN_DKABI_VERSION */
#define DK_MAX_OPS 64      /* JN_DK_MAX_OPS */
#define DK_MAX_SCALARS 16  /* JN_DK_MAX_SCALARS */
#define DK_BLOCK 256       /* JN_DK_BLOCK */

static const char prelude[] =
    "typedef signed char int8_t;\n"
    "typedef short int16_t;\n"
    "typedef int int32_t;\n"
    "typedef long long int64_t;\n"
    "typedef unsigned char uint8_t;\n"
    "typedef unsigned short uint16_t;\n"
    "typedef unsigned int uint32_t;\n"
    "typedef unsigned long long uint64_t;\n"
    "#define INT32_MIN (-2147483647 - 1)\n"
    "#define INT32_MAX 2147483647\n"
    "#define INT64_MIN (-9223372036854775807LL - 1)\n"
    "#define INT64_MAX 9223372036854775807LL\n"
    "#define INT64_C(c) c##LL\n"
    "#define INFINITY __int_as_float(0x7f800000)\n"
    "#define NAN __int_as_float(0x7fc00000)\n";

/* The jn_dkcall of exec/jn_exec.h, as text. */
static void put_dkcall(FILE *f) {
    fprintf(f,
            "#define JN_MAX_DIMS %d\n#define JN_DK_MAX_OPS %d\n#define JN_DK_MAX_SCALARS %d\n#define JN_DK_BLOCK %d\n"
            "typedef struct jn_dkcall {\n"
            "    int32_t nops, ndim, nred, pad_;\n"
            "    char *data[JN_DK_MAX_OPS];\n"
            "    int64_t shape[JN_MAX_DIMS];\n"
            "    int64_t strides[JN_DK_MAX_OPS][JN_MAX_DIMS];\n"
            "    double scalars[JN_DK_MAX_SCALARS];\n"
            "} jn_dkcall;\n",
            JN_MAX_DIMS, DK_MAX_OPS, DK_MAX_SCALARS, DK_BLOCK);
}

/* Operand pointers p<j> = data[j] advanced by index q decomposed over
 * dims [lo, hi) (innermost fastest). */
static void put_decompose(FILE *f, int nops, const char *q, const char *base, const char *lo, const char *hi,
                          const char *ind) {
    for (int j = 0; j < nops; j++) fprintf(f, "%schar *p%d = %s%d];\n", ind, j, base, j);
    fprintf(f, "%sfor (int64_t q = %s, d = (int64_t)%s - 1; d >= %s; d--) {\n", ind, q, hi, lo);
    fprintf(f, "%s    const int64_t x = q %% c->shape[d];\n%s    q /= c->shape[d];\n", ind, ind);
    for (int j = 0; j < nops; j++) fprintf(f, "%s    p%d += x * c->strides[%d][d];\n", ind, j, j);
    fprintf(f, "%s}\n", ind);
}

/* Loads, members, stores for the element at p<j>. */
static void put_body(const cg_em_ctx *e, const char *ind) {
    FILE *f = e->f;
    const jn_ir_graph *g = e->g;
    const jn_cg_kernel_io *io = e->io;
    for (int32_t j = 0; j < io->ncall_in; j++) {
        int32_t v = io->call[j];
        const char *T = cg_em_ctype(g->values[v].dtype);
        fprintf(f, "%sconst %s v%d = *(const %s *)p%d;\n", ind, T, v, T, j);
    }
    for (int32_t m = cg_em_first_member(e->K); m < io->nnodes; m++) {
        int32_t n = io->nodes[m];
        const jn_ir_node *x = &g->nodes[n];
        char dst[32] = "";
        if (!(e->reduce && n == e->K->root)) {
            fprintf(f, "%s%s v%d; /* %s */\n", ind, cg_em_ctype(g->values[x->out[0]].dtype), x->out[0],
                    jn_op_info(x->op)->name);
            snprintf(dst, sizeof dst, "v%d", x->out[0]);
        }
        cg_em_member(e, n, 0, NULL, dst, ind);
    }
    for (int32_t j = io->ncall_in; j < io->ncall; j++) {
        int32_t v = io->call[j];
        if (e->reduce && v == g->nodes[e->K->root].out[0]) continue; /* written per row */
        fprintf(f, "%s*(%s *)p%d = v%d;\n", ind, cg_em_ctype(g->values[v].dtype), j, v);
    }
}

static jn_status emit_kernel(FILE *f, const jn_ir_graph *g, int32_t gi, int32_t k, const jn_cg_kernel_io *io) {
    cg_em_ctx e = {.f = f, .g = g, .io = io, .K = &g->kernels[k], .k = k};
    const jn_ir_node *root = &g->nodes[e.K->root];
    e.reduce = e.K->kind == JN_IR_K_EW_REDUCE;
    if (e.reduce) cg_em_plan_reduce(g, e.K->root, &e.r, NULL, 0);
    e.r.cuda = 1; /* the eager CUDA reduce_kernel's arithmetic */
    int nops = io->ncall;
    cg_em_kernel_comment(&e);
    fprintf(f, "extern \"C\" __global__ void __launch_bounds__(JN_DK_BLOCK) jn_k%d_%d(const __grid_constant__ "
               "jn_dkcall c_) {\n", gi, k);
    fprintf(f, "    const jn_dkcall *c = &c_;\n    const int nd = c->ndim;\n");
    if (!e.reduce) {
        fprintf(f, "    int64_t total = 1;\n    for (int d = 0; d < nd; d++) total *= c->shape[d];\n");
        fprintf(f, "    for (int64_t el = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; el < total; "
                   "el += (int64_t)gridDim.x * blockDim.x) {\n");
        put_decompose(f, nops, "el", "c->data[", "0", "nd", "        ");
        put_body(&e, "        ");
        fprintf(f, "    }\n}\n");
        return JN_OK;
    }
    int32_t ro = cg_em_call_index(io, root->out[0]);
    const char *A = cg_em_acc_type(&e.r);
    fprintf(f, "    const int no = nd - c->nred;\n    int64_t rows = 1, cnt = 1;\n");
    fprintf(f, "    for (int d = 0; d < nd; d++) {\n        if (d < no) rows *= c->shape[d];\n"
               "        else cnt *= c->shape[d];\n    }\n");
    fprintf(f, "    __shared__ %s red[JN_DK_BLOCK];\n", A);
    fprintf(f, "    for (int64_t row = blockIdx.x; row < rows; row += gridDim.x) {\n");
    /* base[j]: the row's address of operand j (the output's reduced strides
     * are 0); not b: member statements name their operands a, b, x */
    fprintf(f, "        char *base[%d];\n        {\n", nops);
    put_decompose(f, nops, "row", "c->data[", "0", "no", "            ");
    for (int j = 0; j < nops; j++) fprintf(f, "            base[%d] = p%d;\n", j, j);
    fprintf(f, "        }\n");
    cg_em_acc_decl(f, &e.r, "acc", "        ");
    fprintf(f, "        for (int64_t el = threadIdx.x; el < cnt; el += blockDim.x) {\n");
    put_decompose(f, nops, "el", "base[", "no", "nd", "            ");
    fprintf(f, "            (void)p%d;\n", ro);
    put_body(&e, "            ");
    fprintf(f, "        }\n");
    /* the block's partial results, combined pairwise */
    fprintf(f, "        red[threadIdx.x] = acc;\n        __syncthreads();\n");
    fprintf(f, "        for (unsigned s = blockDim.x / 2; s > 0; s >>= 1) {\n");
    fprintf(f, "            if (threadIdx.x < s) {\n");
    cg_em_red_comb(f, &e.r, "acc", "red[threadIdx.x + s]", "                ");
    fprintf(f, "                red[threadIdx.x] = acc;\n            }\n            __syncthreads();\n        }\n");
    char cv[200];
    cg_em_reduce_result(cv, sizeof cv, &e.r);
    fprintf(f, "        if (threadIdx.x == 0) {\n            acc = red[0];\n");
    fprintf(f, "            *(%s *)base[%d] = %s;\n        }\n", cg_em_ctype(e.r.out), ro, cv);
    fprintf(f, "        __syncthreads(); /* red is reused by the next row */\n    }\n}\n");
    return JN_OK;
}

static void prologue(FILE *f, uint64_t hash) {
    fprintf(f, "/* Generated by janus codegen (codegen/emit_cuda.c): the kernels of one IR\n"
               " * module in the device ABI of exec/jn_exec.h (jn_dkcall), for NVRTC with\n"
               " * -default-device -fmad=false (codegen/nvrtc.c).  Launch with JN_DK_BLOCK threads. */\n");
    fputs(prelude, f);
    put_dkcall(f);
    fprintf(f, "extern \"C\" __constant__ int jn_kabi_version = %d;\n"
               "extern \"C\" __constant__ unsigned long long jn_kmodule_hash = 0x%016llxULL;\n",
            DKABI_VERSION, (unsigned long long)hash);
    /* a module uses some of the static helpers: no "declared but never referenced" */
    fprintf(f, "\n/* ---- runtime/k_fastmath.h (device functions) ---- */\n#pragma nv_diag_suppress 177\n");
    cg_em_put_header(f, jn_cg_fastmath_text);
    fprintf(f, "#pragma nv_diag_default 177\n/* ---- end of runtime/k_fastmath.h ---- */\n");
    fprintf(f, "/* ---- runtime/k_ewmath.h (device functions) ---- */\n");
    cg_em_put_header(f, jn_cg_ewmath_text);
    fprintf(f, "/* ---- end of runtime/k_ewmath.h ---- */\n");
}

/* The device ABI's fixed scalar array. */
static jn_status check_abi(const jn_ir_graph *g, int32_t k, const jn_cg_kernel_io *io) {
    if (io->nscalar <= DK_MAX_SCALARS) return JN_OK;
    return jn_error(JN_ERR_UNSUPPORTED, "graph %s kernel K%d binds %d scalar inputs, more than the %d "
                    "of the CUDA kernel ABI", g->name, k, io->nscalar, DK_MAX_SCALARS);
}

jn_status jn_cg_emit_cuda(const jn_ir_module *m, char **src, size_t *len, int *nkernels) {
    static const cg_em_target t = {"CUDA", DK_MAX_OPS, prologue, check_abi, emit_kernel};
    return cg_em_module(m, &t, src, len, nkernels);
}
