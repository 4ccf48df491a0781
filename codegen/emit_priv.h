/* emit_priv.h -- what the kernel emitters (emit_c.c: C for the CPU,
 * emit_cuda.c: CUDA C) share, defined in emit_ops.c: the one table of
 * generated ops with their calls of runtime/k_ewmath.h, the per-member
 * planning (compute
 * dtype, conversions, bound attributes), the reduction plan, the
 * whole-kernel support check and the emission of one member's statement.
 * Each emitter only writes its own loops, loads and stores around these,
 * so the op semantics exist once and the CPU tests of the C kernels cover
 * the expressions the CUDA kernels run.
 */
#ifndef JN_EMIT_PRIV_H
#define JN_EMIT_PRIV_H

#include <stdio.h>

#include "cg_priv.h"

#define CG_EM_MAX_OPS 64 /* operands per CPU kernel: what the executor passes (exec/) */

/* How one member node is computed. */
typedef struct {
    const char *expr;   /* template (see ops[] in emit_ops.c) */
    jn_dtype c;         /* compute dtype */
    jn_dtype argt[3];   /* dtype each input is converted to */
    const char *argn[3];/* the names the expression uses */
    char pre[320];      /* declarations before the expression */
} cg_em_mplan;

/* The reduction ending an ew_reduce kernel. */
typedef struct {
    jn_op op;
    jn_dtype in, out;
    int facc;   /* float sum/mean: a float accumulator (cg_em_acc_type); else uint64 (integer sum) or the input type (amax/amin) */
    int cuda;   /* 0: k_reduce.c's arithmetic (CPU); 1: the eager CUDA reduce_kernel's (emit_cuda.c sets it) */
} cg_em_rplan;

/* One kernel being emitted. */
typedef struct {
    FILE *f;
    const jn_ir_graph *g;
    const jn_cg_kernel_io *io;
    const jn_ir_kernel *K;
    int32_t k;
    int reduce;
    cg_em_rplan r;
    const char *acc; /* the lvalue the reduction's step accumulates into (NULL: "acc") */
} cg_em_ctx;

/* Can dtype d be an operand of generated code? */
int cg_em_gen_dtype(jn_dtype d);
/* The C type of d (bool as uint8_t). */
const char *cg_em_ctype(jn_dtype d);
/* expr (of dtype from) converted to dtype to as the eager conversions do. */
void cg_em_conv(char *out, size_t n, const char *expr, jn_dtype from, jn_dtype to);
/* Exact literals: a double (hex float, NAN, INFINITY), an int64. */
void cg_em_dbl_lit(char *out, size_t n, double v);
void cg_em_int_lit(char *out, size_t n, int64_t v);
/* Writes the reason into why (if any); returns 0. */
int cg_em_why_not(char *why, size_t n, const char *fmt, ...);
/* Plans member n (io may be NULL when only asking); 0 with why if not. */
int cg_em_plan_node(const jn_ir_graph *g, int32_t n, const jn_cg_kernel_io *io, cg_em_mplan *p, char *why, size_t wn);
int cg_em_plan_reduce(const jn_ir_graph *g, int32_t n, cg_em_rplan *r, char *why, size_t wn);
/* Can every member of kernel k be generated, with at most maxops operands? */
int cg_em_kernel_ok(const jn_ir_graph *g, int32_t k, const jn_cg_kernel_io *io, int maxops, char *why, size_t wn);
/* Expands a template's $s (k_ewmath.h's suffix of compute dtype c) into f. */
void cg_em_put_expr(FILE *f, const char *t, jn_dtype c);
/* A runtime header's embedded text without its #include lines. */
void cg_em_put_header(FILE *f, const char *text);
/* Index of value v among io's call operands, -1 if absent. */
int cg_em_call_index(const jn_cg_kernel_io *io, int32_t v);
/* Members the generated function computes (the GEMM itself runs as a library call). */
static inline int32_t cg_em_first_member(const jn_ir_kernel *K) { return K->kind == JN_IR_K_GEMM ? 1 : 0; }
/* The comment above a kernel: graph, kernel, kind, members, operands. */
void cg_em_kernel_comment(const cg_em_ctx *e);
/* The reduction's accumulator type (double, float, uint64_t, the input's). */
const char *cg_em_acc_type(const cg_em_rplan *r);
/* Declares accumulator `name` of r at its identity; cg_em_acc_fill: an
 * array arr[n] of them. */
void cg_em_acc_decl(FILE *f, const cg_em_rplan *r, const char *name, const char *ind);
void cg_em_acc_fill(FILE *f, const cg_em_rplan *r, const char *arr, int n, const char *ind);
/* One element into an accumulator: `acc (op)= val` (val of the reduction's
 * input dtype), as the eager reduction of r's target does it. */
void cg_em_red_step(FILE *f, const cg_em_rplan *r, const char *acc, const char *val, const char *ind);
/* Two partial accumulators combined: `dst (op)= src` (eager's comb). */
void cg_em_red_comb(FILE *f, const cg_em_rplan *r, const char *dst, const char *src, const char *ind);
/* The reduction's result expression (acc; cnt for mean) in r->out's type. */
void cg_em_reduce_result(char *out, size_t n, const cg_em_rplan *r);
/* Member n's statement for one element: `{ loads; dst = result; }`, or the
 * accumulation step (into e->acc) for the root of an ew_reduce kernel.
 * Values read as v<id> (blocked 0) or, in emit_c's blocked loop, t<id>[i],
 * A<j>[i], s<j> (bc[j]: operand j loaded once). */
void cg_em_member(const cg_em_ctx *e, int32_t n, int blocked, const uint8_t *bc, const char *dst, const char *ind);

/* One target's emitter, for cg_em_module: the source's prologue (ABI
 * struct, version and module hash, fast math), an extra ABI check per
 * kernel (NULL: none), and one kernel's code. */
typedef struct {
    const char *lang;        /* "C", "CUDA": messages */
    int maxops;              /* operands a kernel may have */
    void (*prologue)(FILE *f, uint64_t module_hash);
    jn_status (*check)(const jn_ir_graph *g, int32_t k, const jn_cg_kernel_io *io);
    jn_status (*kernel)(FILE *f, const jn_ir_graph *g, int32_t gi, int32_t k, const jn_cg_kernel_io *io);
} cg_em_target;

/* The source for every gen/gemm kernel of m (what jn_cg_emit_c and
 * jn_cg_emit_cuda return). */
jn_status cg_em_module(const jn_ir_module *m, const cg_em_target *t, char **src, size_t *len, int *nkernels);

#endif
