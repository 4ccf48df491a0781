/* jn_cg.h -- codegen: the optimization passes that turn a mined IR module
 * (ir/jn_ir.h) into one the later stages compile and run: fused kernels, a
 * static memory plan per graph, and a choice of implementation per kernel.
 *
 * The passes are listed ONCE, in pipeline order, in jn_cg_passes[]
 * (codegen/passes.c); every name below is a key of that list:
 *
 *   verify    jn_ir_verify (structural invariants); changes nothing
 *   dce       dead-code elimination (nodes, loop carries/collects, loops)
 *   cse       common-subexpression elimination (and equal const inputs)
 *   fold      constant folding: 0-d results of const inputs become const inputs
 *   simplify  algebraic identities (x*1, x+0, cast to the same dtype, view
 *             chains, transpose/permute pairs, squeeze(unsqueeze), neg(neg))
 *   cse2      cse again (simplify makes nodes equal: two view(view(x)) chains)
 *   dce2      dead-code elimination again (simplify and cse leave dead nodes)
 *   poolmask  relu's backward mask applied at max_pool2d's pooled size, before
 *             max_pool2d_backward (exact): the full-size activation dies early
 *   hoist     state updates (optimizer steps) right after their last input
 *   remat     cheap values of graph inputs recomputed before far readers
 *   fuse      elementwise fusion, reduction tails, GEMM epilogues -> kernels
 *   plan      liveness-based buffer reuse into one static arena per graph
 *   select    per kernel: generated C, the eager library kernel, or GEMM
 *
 * Semantics every pass preserves (the graph is functional): SSA values,
 * every node a pure function of its inputs and attributes (random ops are
 * deterministic in their seed/offset attributes); graph outputs, loop
 * carries/collects and guards keep values alive; nodes never move across
 * loop boundaries.  Each pass leaves a graph that jn_ir_verify accepts.
 *
 * Dumping: JANUS_DUMP_IR=all (every pass) or a comma list of pass names
 * (JANUS_DUMP_IR=fuse,plan) makes jn_cg_options_from_env ask jn_cg_optimize
 * to print each graph to stderr after those passes, under a header line
 * "# after <pass> (graph <name>)".
 */
#ifndef JN_CG_H
#define JN_CG_H

#include <signal.h>
#include <stdint.h>
#include <stdio.h>

#include "jn_ir.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct jn_cg_ctx jn_cg_ctx;

typedef struct {
    const char *name;   /* "dce" */
    const char *what;   /* one line for --help and dumps */
    jn_status (*run)(jn_cg_ctx *cx, jn_ir_graph *g);
} jn_cg_pass;

/* The one pass list, in pipeline order, ended by a {NULL} entry. */
extern const jn_cg_pass jn_cg_passes[];
#define JN_CG_MAX_PASSES 16
int jn_cg_npasses(void);
const jn_cg_pass *jn_cg_pass_find(const char *name);   /* NULL if unknown */

typedef struct {
    const char *skip;        /* comma list of pass names not to run (NULL: none) */
    FILE *dump;              /* print the IR here after the passes in dump_passes (NULL: never) */
    const char *dump_passes; /* "all" or a comma list; NULL = all */
    int verify_each;         /* run jn_ir_verify after every pass (tests, debug builds) */
} jn_cg_options;

/* Defaults (nothing skipped, no dump, verify_each on in debug builds), then
 * JANUS_DUMP_IR from the environment (dump to stderr) and JANUS_SKIP_PASSES
 * (a comma list of passes to leave out, e.g. "remat", to time or compare
 * the same graphs without one; the executor runs graphs without fused
 * kernels or a plan op by op, so any pass may go). */
void jn_cg_options_from_env(jn_cg_options *o);

/* Per pass, summed over the graphs of the module. */
typedef struct {
    const char *pass;
    int64_t nodes_before, nodes_after;
    int64_t kernels;          /* kernel table entries after the pass */
    int64_t arena_bytes;      /* planned arena at the recorded symbol maxima (0: unplanned) */
    int64_t naive_bytes;      /* sum of every arena-eligible intermediate, same point */
    char arena_text[256];     /* per graph "g0=(B*4096) g1=512", truncated */
} jn_cg_pass_stats;

typedef struct {
    int npasses;
    jn_cg_pass_stats pass[JN_CG_MAX_PASSES];
} jn_cg_stats;

/* Runs the pass list over every graph of m (o NULL = defaults without the
 * environment).  st may be NULL.  An unknown name in o->skip or
 * o->dump_passes is JN_ERR_VALUE naming it and the known passes. */
jn_status jn_cg_optimize(jn_ir_module *m, const jn_cg_options *o, jn_cg_stats *st);

/* One named pass over one graph of m (tests; the pipeline runs them all). */
jn_status jn_cg_run_pass(jn_ir_module *m, jn_ir_graph *g, const char *name);

/* Bytes of d with every symbol at the top of its recorded range. */
jn_status jn_cg_eval_at_max(const jn_ir_graph *g, jn_ir_dim d, int64_t *out);
/* What the plan pass counts as the naive footprint of g (every value that
 * could live in the arena gets its own 64-byte aligned buffer), at the
 * recorded symbol maxima. */
jn_status jn_cg_naive_bytes(const jn_ir_graph *g, int64_t *out);

/* What kernel k of g reads and writes, for the emitter and the executor:
 * its member nodes in order (root last), its external input values (read
 * by a member, defined outside the kernel; first-use order, no repeats)
 * and the values it writes (the root's outputs and every member output
 * read outside the kernel), in node order.  Free with jn_cg_kernel_io_free. */
/* The generated function's operands (the kernel ABI, exec/jn_exec.h)
 * are call[0 .. ncall): call[0 .. ncall_in) the values it reads, then the
 * values it writes.  ew / ew_reduce: in then out.  gemm: the epilogue only
 * (members after the GEMM): the values the epilogue members read from
 * outside the epilogue (the GEMM's output among them), first-use order,
 * then out without the GEMM's output.  lib: ncall 0.  scalar[0 .. nscalar)
 * are the scalar inputs bound to member attributes (attr_input), in member
 * then attribute order, each once: the kernel's c->scalars. */
typedef struct {
    int32_t nnodes, *nodes;
    int32_t nin, *in;
    int32_t nout, *out;
    int32_t ncall, ncall_in, *call;
    int32_t nscalar, *scalar;
} jn_cg_kernel_io;
jn_status jn_cg_kernel_describe(const jn_ir_graph *g, int32_t k, jn_cg_kernel_io *io);
void jn_cg_kernel_io_free(jn_cg_kernel_io *io);

/* The rules that make g's kernel table runnable (beyond jn_ir_verify's
 * structure): members of ew/ew_reduce kernels elementwise but a reduction
 * root, a gemm kernel starting with its GEMM, no member output read outside
 * the kernel before its root runs.  JN_ERR_VALUE naming kernel and node. */
jn_status jn_cg_check_kernels(const jn_ir_graph *g);

/* 64-bit FNV-1a over the module's binary form (jn_ir_serialize): what a
 * compiled object records so that it is never run against another module. */
jn_status jn_cg_module_hash(const jn_ir_module *m, uint64_t *out);

/* ---------------------------------------------- C emission (emit_c.c) */
/* One C source (self-contained: no janus headers, its own copy of the
 * jn_kcall struct of exec/jn_exec.h) with one function
 * `void jn_k<g>_<k>(const jn_kcall *c)` per kernel of every graph of m
 * whose impl is GEN (ew, ew_reduce) or GEMM (the epilogue after the GEMM),
 * plus the exported jn_kabi_version and jn_kmodule_hash.  Members compute
 * in the same C types and expressions as the eager kernels
 * (runtime/k_elementwise.c, the fast math of runtime/k_fastmath.h), each
 * result rounded to its IR dtype: ew kernels match eager bit for bit,
 * ew_reduce kernels within a sum's rounding.  *src is malloc'd (NUL
 * terminated, *len bytes without it); *nkernels the functions emitted.
 * JN_ERR_UNSUPPORTED naming graph, kernel and node when a GEN/GEMM kernel
 * holds something jn_cg_emit_supported refuses (select never lets that
 * happen). */
jn_status jn_cg_emit_c(const jn_ir_module *m, char **src, size_t *len, int *nkernels);
/* Can the emitter generate kernel k of g (every member op, dtype,
 * attribute binding in its one table)?  0 = no, with the reason in why
 * (may be NULL).  The select pass gives such kernels impl=lib. */
int jn_cg_emit_supported(const jn_ir_graph *g, int32_t k, char *why, size_t n);

/* ------------------------------------------ CUDA emission (emit_cuda.c) */
/* One self-contained CUDA C source with one kernel
 * `extern "C" __global__ void jn_k<g>_<k>(const __grid_constant__ jn_dkcall c)`
 * (device ABI: exec/jn_exec.h) per GEN/GEMM kernel of m, from the
 * same op table and member expressions as jn_cg_emit_c, plus __constant__
 * jn_kabi_version and jn_kmodule_hash.  Outputs and errors as
 * jn_cg_emit_c. */
jn_status jn_cg_emit_cuda(const jn_ir_module *m, char **src, size_t *len, int *nkernels);

/* ------------------------------------------ NVRTC (nvrtc.c) */
/* Compiles CUDA source src (len bytes, NUL terminated) with NVRTC, loaded
 * at run time, for arch "sm_XX": *cubin (machine code for sm_XX) and *ptx
 * (compute_XX PTX text, NUL terminated, *ptxlen without the NUL), both
 * malloc'd.  *seconds (may be NULL) the wall time of both compiles; *log
 * (may be NULL; malloc'd, NULL when empty) NVRTC's messages, i.e. the
 * warnings of a successful compile.  No NVRTC: JN_ERR_UNSUPPORTED naming
 * where it looked and the fix; a failing compile JN_ERR_RUNTIME with the
 * log; a malformed arch JN_ERR_VALUE. */
jn_status jn_cg_compile_cuda(const char *src, size_t len, const char *arch, char **ptx, size_t *ptxlen, void **cubin,
                             size_t *cubinlen, double *seconds, char **log);
/* Can NVRTC be loaded?  path (may be NULL) gets the library's path. */
int jn_cg_nvrtc_available(char *path, size_t n);

/* ----------------------------------------- the C compiler (cc.c) */
typedef struct {
    const char *cc;           /* compiler command; NULL: $CC, else cc, else gcc */
    const char *extra_flags;  /* appended to the command line (tests: "-Wall -Werror") */
    int progress;             /* print a progress line to stderr while compiling */
    /* NULL, or a flag a signal handler sets: once *stop is nonzero the
     * compile is abandoned (JN_ERR_RUNTIME): the compiler's process group
     * killed and reaped, its files removed */
    const volatile sig_atomic_t *stop;
} jn_cg_cc_options;

/* Compiles src into a shared object (-O3 -march=native -std=c11 -fPIC
 * -shared -ffp-contract=off -fno-math-errno -lm) in a private temporary
 * directory ($TMPDIR/janus-<uid>/cc-*, removed afterwards, also by the
 * next compile when this process dies); *so (malloc'd, *solen bytes)
 * holds the object.  *seconds (may be NULL) the wall time spent.  o may
 * be NULL.  A missing compiler is JN_ERR_UNSUPPORTED naming what was
 * looked for and the fix; a failing compile JN_ERR_RUNTIME with its first
 * error lines. */
jn_status jn_cg_compile_so(const char *src, size_t len, const jn_cg_cc_options *o, void **so, size_t *solen,
                           double *seconds);

#ifdef __cplusplus
}
#endif
#endif
