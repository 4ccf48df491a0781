/* jn_exec.h -- the graph executor: runs one optimized IR graph (codegen's
 * kernel table and memory plan) with ONE arena allocation, calling, in node
 * order, the compiled kernels of a shared object made by codegen's C
 * emitter and the eager table kernels (OpenBLAS GEMM, convolution, views,
 * everything the emitter does not generate).  Also the ABI between the
 * generated kernels and the executor.
 *
 * Layering: exec/ is its own library, janus_exec, above janus_ir and
 * janus_cg (it reads IR graphs and bundle sections) and below replay/;
 * the tensor runtime janus_rt stays below the IR.  Prefix jn_ex_.
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
 * c->nthreads is the pool's size (jn_num_threads(); 0 or 1: none): an
 * ew_reduce kernel splits its sums as the eager reductions do on that pool,
 * so their results are the same bits (codegen/emit_c.c).
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
    int32_t nops, ndim, nred, nthreads;
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
 * exec_cuda.c (below) loads and launches them with this definition; the
 * emitter writes a textual copy of it into every source (it compiles
 * without janus headers), so the two must change together. */
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

/* ------------------------------------- CUDA kernels on a device
 * (exec_cuda.c) The bundle's CUDA module loaded on a GPU through the
 * driver API, opened at run time (dlopen libcuda.so.1, or $JANUS_LIBCUDA):
 * without a driver every call is JN_ERR_UNSUPPORTED saying so. */
enum { JN_RT_CUDA_IMAGE_NONE = 0, JN_RT_CUDA_IMAGE_CUBIN = 1, JN_RT_CUDA_IMAGE_PTX = 2 };

/* Compute capability and name of CUDA device `device` (what to compile for). */
jn_status jn_ex_cuda_device(int device, int *major, int *minor, char *name, size_t n);

/* Which image of a bundle of `target` ("cuda:sm_XX") a device of compute
 * capability dev_major.dev_minor (named `device` in messages) runs: the
 * cubin if the major matches and the minor is at least the bundle's, else
 * the PTX if the device is at least the bundle's arch, else
 * JN_ERR_UNSUPPORTED naming target, device arch and the fix.  Pure. */
jn_status jn_ex_cuda_pick_image(const char *target, int have_cubin, int have_ptx, int dev_major, int dev_minor,
                                const char *device, int *image);

/* The device struct for the call the CPU executor built (c->data[] must
 * already be device addresses); nscalar = the kernel's io.nscalar.
 * JN_ERR_UNSUPPORTED when it does not fit JN_DK_MAX_OPS / _SCALARS. */
jn_status jn_ex_dkcall_from(const jn_kcall *c, int32_t nscalar, jn_dkcall *d);

/* A module of generated CUDA kernels on CUDA device `device` (its primary
 * context): the image jn_ex_cuda_pick_image chooses from cubin / ptx
 * (either may be NULL), refused (JN_ERR_VALUE) unless its __constant__
 * jn_kabi_version is JN_DKABI_VERSION and jn_kmodule_hash is module_hash.
 * origin names it in messages. */
typedef struct jn_ex_dlib jn_ex_dlib;
jn_status jn_ex_dlib_open(const void *cubin, size_t cubinlen, const char *ptx, size_t ptxlen, const char *target,
                          uint64_t module_hash, const char *origin, int device, jn_ex_dlib **out);
void jn_ex_dlib_close(jn_ex_dlib *l);
/* The image loaded (JN_RT_CUDA_IMAGE_*); the device's name into device[n]. */
int jn_ex_dlib_image(const jn_ex_dlib *l, char *device, size_t n);
int jn_ex_dlib_has_kernel(const jn_ex_dlib *l, int32_t gi, int32_t k);
/* Launches kernel K<k> of graph index gi (JN_DK_BLOCK threads per block)
 * on `stream` (a CUstream; NULL: the default stream); asynchronous: faults
 * surface at jn_ex_dlib_sync. */
jn_status jn_ex_dlib_launch(jn_ex_dlib *l, int32_t gi, int32_t k, const jn_dkcall *d, void *stream);
jn_status jn_ex_dlib_sync(jn_ex_dlib *l);
/* The device arena of graph index gi, at least `bytes` (one per graph,
 * reused while it fits, reallocated after a sync when it does not). */
jn_status jn_ex_dlib_arena(jn_ex_dlib *l, int32_t gi, size_t bytes, uint64_t *base);
jn_status jn_ex_dlib_upload(jn_ex_dlib *l, uint64_t dst, const void *src, size_t n);
jn_status jn_ex_dlib_download(jn_ex_dlib *l, void *dst, uint64_t src, size_t n);

/* ----------------------------------------------- compiled kernels */
/* A shared object of generated kernels, loaded from bytes (a bundle's
 * JN_CG_SEC_SO section).  Refused (JN_ERR_VALUE, one sentence naming
 * `origin` and the fix) when it does not load, has another ABI version or
 * was built for another module (hash). */
typedef struct jn_ex_lib jn_ex_lib;
jn_status jn_ex_lib_open(const void *so, size_t len, uint64_t module_hash, const char *origin,
                              jn_ex_lib **out);
void jn_ex_lib_close(jn_ex_lib *lib);
/* Kernel K<k> of graph index gi, NULL if the object has none. */
jn_kfn jn_ex_lib_kernel(const jn_ex_lib *lib, int32_t gi, int32_t k);

/* ------------------------------------------------------ executor */
typedef struct jn_ex_exec jn_ex_exec;

enum {
    JN_EX_EAGER = 1    /* ignore kernels and plan: every node through its eager
                             * table kernel, each value its own tensor (the
                             * reference the differential tests compare against) */
};

/* Graph gi of m made runnable: kernels resolved in lib (NULL: no compiled
 * code; generated kernels then run member by member through the eager
 * kernels), operand lists and scratch precomputed so jn_ex_run does no
 * per-call analysis beyond evaluating the symbols.  m and lib must outlive
 * the executor. */
jn_status jn_ex_new(const jn_ir_module *m, int32_t gi, const jn_ex_lib *lib, int flags,
                         jn_ex_exec **out);
void jn_ex_free(jn_ex_exec *x);

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
jn_status jn_ex_run(jn_ex_exec *x, jn_tensor *const *inputs, const int64_t *syms, jn_tensor **outs);
/* jn_ex_run with the numbers of the scalar/const inputs given as
 * scalars[i] (scalars NULL: as jn_ex_run); inputs[i] is not read for them
 * (may be NULL).  What a caller that holds the numbers uses (replay's
 * matcher): no 0-d tensor per number made, and none read. */
jn_status jn_ex_run_scalars(jn_ex_exec *x, jn_tensor *const *inputs, const double *scalars, const int64_t *syms,
                            jn_tensor **outs);

/* Fills syms[s] for every dim symbol that appears as a plain dim of an
 * input's shape, from inputs (what a caller without a matcher uses); -1
 * for the others.  JN_ERR_SHAPE when two inputs disagree on a symbol. */
jn_status jn_ex_bind_syms(const jn_ir_graph *g, jn_tensor *const *inputs, int64_t *syms);

/* Inputs for tests and benchmarks (no real data at hand): inputs[i] for
 * graph input i at symbol values syms: float tensors uniform in [-2, 2)
 * from one pseudo-random stream seeded by seed (taken input by input, so
 * two graphs with the same inputs get the same tensors), integer and bool
 * tensors zero (valid indices), scalar/const inputs their recorded value
 * as wrapped numbers (except a scalar that is the end of an arange whose
 * length is a symbol: the value syms imply), the rng input a 0-d int64
 * zero.  On failure the
 * made ones are released and inputs[] is NULL. */
jn_status jn_ex_make_inputs(const jn_ir_graph *g, const int64_t *syms, uint64_t seed, jn_tensor **inputs);

/* Called around each generated kernel call of x (after = 0 before the
 * compiled function runs, 1 after) with the kernel index and the call as
 * the kernel receives it: what tests and the device executor use to see,
 * or mirror onto a GPU, exactly the layout the CPU kernels get.  NULL fn:
 * none. */
typedef void (*jn_ex_kcall_hook)(void *ctx, int32_t k, const jn_kcall *c, int after);
void jn_ex_set_kcall_hook(jn_ex_exec *x, jn_ex_kcall_hook fn, void *ctx);

/* ------------------------------------------------ graphs on a device
 * The same executor runs a graph on a device when given this table (the
 * style of ggml's backends): every buffer (own values, loop buffers, the
 * numbers of scalar inputs) comes from tensor_new, the arena from arena,
 * every node outside a launched kernel (library nodes: GEMMs, views,
 * copies, a gemm kernel's GEMM, kernels without device code member by
 * member) runs through node, generated kernels through launch with the
 * jn_kcall the CPU executor builds (data[] are device addresses), copies
 * between the run's buffers (in-place ops' functional copies, loop moves)
 * through copy; the state write-back and keep outputs out of the arena
 * use jn_copy_into / jn_contiguous, which follow the storages' device to
 * its backend.  Tensor inputs must be on storage_device.  exec_cuda.c fills it for a CUDA module and backend
 * (jn_ex_cuda_graphs); tests plug host kernels into it. */
typedef struct jn_ex_device {
    const char *name;     /* "cuda:0" (messages) */
    int storage_device;   /* jn_storage.device of its tensors (JN_CUDA; a host fake: JN_CPU) */
    void *ctx;
    int (*supports)(void *ctx, jn_op op);
    jn_status (*node)(void *ctx, jn_op op, int nin, jn_tensor *const *in, const jn_attrs *a, jn_tensor *const *out);
    jn_tensor *(*tensor_new)(void *ctx, const jn_meta *m);
    jn_status (*copy)(void *ctx, jn_tensor *dst, const jn_tensor *src);
    /* *out: a new reference to a 1-d uint8 tensor over at least `bytes` of
     * device memory for graph index gi (reused by the caller while it fits) */
    jn_status (*arena)(void *ctx, int32_t gi, size_t bytes, jn_tensor **out);
    int (*has_kernel)(void *ctx, int32_t gi, int32_t k);
    jn_status (*launch)(void *ctx, int32_t gi, int32_t k, const jn_kcall *c, int32_t nscalar);
    /* Optional (NULL: none): called around the run's steps (after the
     * inputs are checked and scalar inputs copied in, before the state
     * write-back): what a CUDA Graph captures or replays.  end gets the
     * steps' status and returns the run's. */
    jn_status (*begin)(void *ctx, int32_t gi);
    jn_status (*end)(void *ctx, int32_t gi, jn_status s);
    int copy_outputs;     /* keep outputs always copied out (their buffers are written again) */
} jn_ex_device;

/* jn_ex_new for a device (dev NULL: the CPU, lib used; else lib
 * ignored, kernels the device has are launched).  JN_ERR_UNSUPPORTED,
 * naming node and op, when a node the device would run has no kernel
 * there.  dev must outlive the executor. */
jn_status jn_ex_new_on(const jn_ir_module *m, int32_t gi, const jn_ex_lib *lib, const jn_ex_device *dev,
                            int flags, jn_ex_exec **out);

/* The device of a CUDA module l (NULL: no generated kernels, every node
 * through the backend) and a backend be (NULL: the eager CUDA backend,
 * jn_rt_backends[JN_CUDA]; a test may pass a table of host kernels over
 * the fake driver's host "device" memory) on `stream` (NULL with the CUDA
 * backend: its compute stream, jn_cuda_stream).  l and be must outlive it.
 * JN_ERR_UNSUPPORTED when there is no backend. */
struct jn_rt_backend;
typedef struct jn_ex_cuda_graphs jn_ex_cuda_graphs;
typedef struct {
    int64_t nodes;     /* library nodes run (views excepted) */
    int64_t launches;  /* generated kernels launched one by one (not from a CUDA Graph) */
    int64_t buffers;   /* buffers made (own values, loop buffers, scalars) */
    int64_t arenas;    /* arena headers over the module's device arena */
    /* CUDA Graphs (jn_ex_cuda_graphs_run): runs that launched a captured
     * graph as it was, captures (instantiated or updated), executable
     * graphs updated in place, instantiated; runs made of plain launches
     * and the last reason */
    int64_t replays, captures, updates, instantiations, plain_runs;
    char plain_reason[400];
} jn_ex_cuda_graphs_stats;
jn_status jn_ex_cuda_graphs_new(jn_ex_dlib *l, const struct jn_rt_backend *be, void *stream, jn_ex_cuda_graphs **out);
void jn_ex_cuda_graphs_free(jn_ex_cuda_graphs *c);
const jn_ex_device *jn_ex_cuda_graphs_device(jn_ex_cuda_graphs *c);
void jn_ex_cuda_graphs_get_stats(const jn_ex_cuda_graphs *c, jn_ex_cuda_graphs_stats *st);
/* Library nodes and copies between the run's buffers (default: the
 * backend's kernels and jn_copy_into).  A runner must enqueue its work on
 * the stream (so a CUDA Graph captures it), e.g. a test's host functions
 * through cuLaunchHostFunc on the fake driver.  NULL: the default. */
typedef struct {
    jn_status (*node)(void *ctx, jn_op op, int nin, jn_tensor *const *in, const jn_attrs *a, jn_tensor *const *out);
    jn_status (*copy)(void *ctx, jn_tensor *dst, const jn_tensor *src);
    void *ctx;
} jn_ex_cuda_graphs_runner;
void jn_ex_cuda_graphs_set_runner(jn_ex_cuda_graphs *c, const jn_ex_cuda_graphs_runner *r);
/* One run of x (made with jn_ex_new_on(..., jn_ex_cuda_graphs_device(c), ...))
 * as a CUDA Graph: the first run with given bindings is captured and
 * instantiated, later ones with the same calls launch it; a changed call
 * (other addresses, shapes or baked parameters) is captured again and the
 * executable graph updated; a capture that fails (e.g. a host sync in a
 * kernel) is redone with plain launches, as every later run of that graph
 * (stats: plain_reason).  Same contract as jn_ex_run. */
jn_status jn_ex_cuda_graphs_run(jn_ex_cuda_graphs *c, jn_ex_exec *x, jn_tensor *const *inputs, const int64_t *syms,
                                jn_tensor **outs);

typedef struct {
    int64_t arena_bytes;       /* this run's arena */
    int64_t peak_bytes;        /* arena + every other buffer alive at once (outputs, loop buffers) */
    int64_t kernels_gen, kernels_lib, nodes_eager;   /* calls made in the last run */
    int state_written;         /* the last run wrote a state input (even if it then failed:
                                * the inputs are no longer what the run started from) or
                                * ran a collective (the other ranks took part: it cannot
                                * be run again) */
    int32_t state_direct;      /* state outputs the last run wrote straight into their input
                                * (no copy back; exec.c direct_state) */
} jn_ex_stats;
void jn_ex_last_stats(const jn_ex_exec *x, jn_ex_stats *st);
/* 1 when the graph holds a collective (JN_F_COLL): every run must issue it
 * exactly once, so such a graph is never captured as a CUDA Graph. */
int jn_ex_has_collective(const jn_ex_exec *x);
/* Bytes of the arena CPU graphs share now (0 while none is allocated, e.g.
 * after eager work missed the block cache and it was given back). */
size_t jn_ex_shared_arena_bytes(void);
/* Give back now what graph runs leave idle between them -- the shared CPU
 * arena (the next run allocates it again) and, with cache, the blocks in
 * the runtime's block cache and malloc's free heap -- before eager work
 * that would otherwise sit on top of it: replay timing a graph eagerly, or
 * running a segment eagerly by choice (arena_idle_release does the same on
 * a block-cache miss, at most once per 16 runs).  1 if an arena was held. */
int jn_ex_release_idle(int cache);

#ifdef __cplusplus
}
#endif
#endif
