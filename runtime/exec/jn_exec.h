/* jn_exec.h -- the graph executor: runs one optimized IR graph (codegen's
 * kernel table and memory plan) with ONE arena allocation, calling, in node
 * order, the compiled kernels of a shared object made by codegen's C
 * emitter and the eager table kernels (OpenBLAS GEMM, convolution, views,
 * everything the emitter does not generate).  Also the ABI between the
 * generated kernels and the executor.
 *
 * Layering: the executor lives in runtime/ (folder) but is its own library,
 * janus_exec, above janus_ir and janus_cg (it reads IR graphs and bundle
 * sections); the tensor runtime janus_rt stays below the IR.  Prefix jn_rt_.
 *
 * ------------------------------------------------------- kernel ABI
 * A generated kernel is `void NAME(const jn_kcall *c)` exported from the
 * shared object, NAME = jn_k<g>_<k> for kernel K<k> of graph index g of the
 * module.  The object also exports `const int jn_kabi_version` (must equal
 * JN_KABI_VERSION) and `const unsigned long long jn_kmodule_hash` (the
 * hash the emitter computed over the module it was generated from, see
 * jn_cg_module_hash) so a .so is never used with another module.
 *
 * Operands (c->data[0 .. nops)) are the kernel's call operands:
 * jn_cg_kernel_io.call[0 .. ncall) (codegen/jn_cg.h): the external inputs
 * the generated code reads (first-use order), then the values it writes.
 * For an ew / ew_reduce kernel these are io.in then io.out; for a gemm
 * kernel the generated function is the EPILOGUE only: the executor first
 * runs the GEMM node with its eager table kernel into the buffer of the
 * kernel's root output, and the epilogue reads that buffer (the GEMM's
 * output value is a call input) and writes the root output in place.
 *
 * The iteration space is c->shape[0 .. ndim) (ndim >= 1; a 0-d kernel gets
 * ndim 1, shape [1]); the executor may coalesce dims, so generated code
 * handles any ndim <= JN_MAX_DIMS.  strides[k*ndim + d] is operand k's
 * BYTE stride along dim d: 0 along a dim it broadcasts over.  For an
 * ew_reduce kernel the trailing c->nred dims are reduced (the output's
 * strides there are 0); the reduction is the root node's op (sum, mean,
 * amax, amin), mean divides by the product of the reduced dims.
 * Operands are typed by the IR (the emitter knows every dtype); a 0-d
 * input (a scalar input, a wrapped number) is passed with strides 0.
 * c->scalars[j] is the value of jn_cg_kernel_io.scalar[j], the scalar
 * inputs bound to member attributes (attr_input: alpha=%lr).
 * c->parallel_for is the runtime's thread pool (jn_parallel_for): the
 * object links nothing of janus, so everything it calls comes through c.
 */
#ifndef JN_EXEC_H
#define JN_EXEC_H

#include <stdint.h>

#include "jn_ir.h"

#ifdef __cplusplus
extern "C" {
#endif

#define JN_KABI_VERSION 1

typedef struct jn_kcall {
    int32_t nops, ndim, nred, pad_;
    char *const *data;        /* [nops] element-0 address of each operand */
    const int64_t *shape;     /* [ndim] iteration space */
    const int64_t *strides;   /* [nops * ndim] byte strides, operand-major */
    const double *scalars;    /* [io.nscalar] attribute values bound to scalar inputs */
    void (*parallel_for)(int64_t n, int64_t grain, void (*fn)(int64_t begin, int64_t end, void *ctx), void *ctx);
} jn_kcall;

typedef void (*jn_kfn)(const jn_kcall *c);

/* ------------------------------------------------- CUDA kernel ABI
 * A generated CUDA kernel (codegen/emit_cuda.c, compiled by NVRTC to the
 * bundle's JN_CG_SEC_CUBIN / JN_CG_SEC_PTX sections) is
 *   extern "C" __global__ void jn_k<g>_<k>(const __grid_constant__ jn_dkcall c)
 * with the same operands, iteration space, byte strides, nred and scalars
 * as jn_kcall above, but passed BY VALUE (no host pointers to chase; the
 * struct is 4.7 KB, within the 32 KB kernel parameter limit of CUDA >= 12.1
 * on sm_70+): data[] are device addresses, strides[k][d] operand k's byte
 * stride along dim d.  Launch with blockDim.x == JN_DK_BLOCK (reductions
 * use a shared-memory tree of that size) and any grid: ew and gemm-epilogue
 * kernels walk the flattened iteration space with a grid-stride loop,
 * ew_reduce kernels give each block one output row at a time (rows stride
 * by gridDim.x).  The module also holds `__constant__ int jn_kabi_version`
 * (== JN_DKABI_VERSION) and `__constant__ unsigned long long
 * jn_kmodule_hash` (cuModuleGetGlobal) for the same checks as a .so.
 * The future CUDA executor shares this definition; the emitter writes a
 * textual copy of it into every source (it compiles without janus
 * headers), so the two must change together. */
#define JN_DKABI_VERSION 1
#define JN_DK_MAX_OPS 64     /* operands (as the C emitter's limit) */
#define JN_DK_MAX_SCALARS 16 /* bound scalar attributes per kernel */
#define JN_DK_BLOCK 256      /* threads per block */

typedef struct jn_dkcall {
    int32_t nops, ndim, nred, pad_;
    char *data[JN_DK_MAX_OPS];                   /* device address of element 0 */
    int64_t shape[JN_MAX_DIMS];
    int64_t strides[JN_DK_MAX_OPS][JN_MAX_DIMS]; /* byte strides */
    double scalars[JN_DK_MAX_SCALARS];
} jn_dkcall;

/* ----------------------------------------------- compiled kernels */
/* A shared object of generated kernels, loaded from bytes (a bundle's
 * JN_CG_SEC_SO section).  Refused (JN_ERR_VALUE, one sentence naming
 * `origin` and the fix) when it does not load, has another ABI version or
 * was built for another module (hash). */
typedef struct jn_rt_exec_lib jn_rt_exec_lib;
jn_status jn_rt_exec_lib_open(const void *so, size_t len, uint64_t module_hash, const char *origin,
                              jn_rt_exec_lib **out);
void jn_rt_exec_lib_close(jn_rt_exec_lib *lib);
/* Kernel K<k> of graph index gi, NULL if the object has none. */
jn_kfn jn_rt_exec_lib_kernel(const jn_rt_exec_lib *lib, int32_t gi, int32_t k);

/* ------------------------------------------------------ executor */
typedef struct jn_rt_exec jn_rt_exec;

enum {
    JN_RT_EXEC_EAGER = 1    /* ignore kernels and plan: every node through its eager
                             * table kernel, each value its own tensor (the
                             * reference the differential tests compare against) */
};

/* Graph gi of m made runnable: kernels resolved in lib (NULL: no compiled
 * code; generated kernels then run member by member through the eager
 * kernels), operand lists and scratch precomputed so jn_rt_exec_run does no
 * per-call analysis beyond evaluating the symbols.  m and lib must outlive
 * the executor. */
jn_status jn_rt_exec_new(const jn_ir_module *m, int32_t gi, const jn_rt_exec_lib *lib, int flags,
                         jn_rt_exec **out);
void jn_rt_exec_free(jn_rt_exec *x);

/* One run.  inputs[i] is graph input i (g->inputs order): the tensor for
 * state/host/carry inputs (any strides), a 0-d tensor holding the number
 * for scalar/const inputs, a 0-d int64 tensor for the rng input (unused by
 * kernels: seeds and offsets are attributes over the rng symbol).
 * syms[s] is the value of symbol s (every dim/int/rng symbol; induction
 * variables are set by the executor).  Types and shapes are checked
 * against the IR (JN_ERR_SHAPE/TYPE naming input and dim).  On success
 * state outputs have been written into their state input tensors in place
 * (version bumped) and outs[0 .. number of keep outputs) hold new references
 * to the keep outputs, in g->outputs order.  The arena is allocated once
 * per run (or reused while its size fits). */
jn_status jn_rt_exec_run(jn_rt_exec *x, jn_tensor *const *inputs, const int64_t *syms, jn_tensor **outs);

/* Fills syms[s] for every dim symbol that appears as a plain dim of an
 * input's shape, from inputs (what a caller without a matcher uses); -1
 * for the others.  JN_ERR_SHAPE when two inputs disagree on a symbol. */
jn_status jn_rt_exec_bind_syms(const jn_ir_graph *g, jn_tensor *const *inputs, int64_t *syms);

/* Inputs for tests and benchmarks (no real data at hand): inputs[i] for
 * graph input i at symbol values syms: float tensors uniform in [-2, 2)
 * from one pseudo-random stream seeded by seed (taken input by input, so
 * two graphs with the same inputs get the same tensors), integer and bool
 * tensors zero (valid indices), scalar/const inputs their recorded value
 * as wrapped numbers, the rng input a 0-d int64 zero.  On failure the
 * made ones are released and inputs[] is NULL. */
jn_status jn_rt_exec_make_inputs(const jn_ir_graph *g, const int64_t *syms, uint64_t seed, jn_tensor **inputs);

typedef struct {
    int64_t arena_bytes;       /* this run's arena */
    int64_t peak_bytes;        /* arena + every other buffer alive at once (outputs, loop buffers) */
    int64_t kernels_gen, kernels_lib, nodes_eager;   /* calls made in the last run */
    int state_written;         /* the last run wrote a state input (even if it then failed:
                                * the inputs are no longer what the run started from) */
} jn_rt_exec_stats;
void jn_rt_exec_last_stats(const jn_rt_exec *x, jn_rt_exec_stats *st);

#ifdef __cplusplus
}
#endif
#endif
