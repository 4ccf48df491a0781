/* jn_backend.h -- execution backends: the CPU kernels and the CUDA backend
 * as tables of function pointers, in the style of ggml's backends.
 *
 * A backend owns one kind of memory (jn_storage.device) and implements
 * table ops over tensors whose storages live there: kernel[op] is indexed
 * by the op enum expanded from ops.def, NULL where the backend has no
 * implementation (the dispatcher then reports "op X is not supported on
 * CUDA yet").  The dispatcher picks the backend from the inputs' device (a
 * load and a compare per op on the CPU path); factories (no inputs) use the
 * thread's factory device, which the Python front end sets around
 * `device='cuda'` calls and the autograd engine sets to the device of the
 * gradient it propagates.
 *
 * The CUDA backend (runtime/cuda/, built only when JANUS_HAVE_CUDA) is
 * initialized lazily: no CUDA call happens before the first question about
 * devices (jn_cuda_device_count) or the first CUDA tensor, so a machine with
 * the toolkit and no GPU behaves exactly like a CPU-only build.
 */
#ifndef JN_BACKEND_H
#define JN_BACKEND_H

#include "jn_runtime.h"

#ifdef __cplusplus
extern "C" {
#endif

#define JN_NDEVICES 2 /* JN_CPU, JN_CUDA */

typedef struct jn_rt_backend {
    const char *name;   /* "cpu", "cuda" (device names in messages: see jn_device_name) */
    int device;         /* jn_device_type */
    /* A contiguous tensor of m on this device (uninitialized). */
    jn_tensor *(*tensor_new)(const jn_meta *m);
    /* dst <- src, same shape (or src broadcastable), converting dtype; either
     * tensor may be on another device (the host side of a transfer). */
    jn_status (*copy_into)(jn_tensor *dst, const jn_tensor *src);
    /* Wait for all work queued on this device. */
    jn_status (*sync)(void);
    jn_kernel_fn kernel[JN_NOPS];
    /* 1: kernel[op] takes CPU 0-d inputs as they are (reads their value on
     * the host and passes it by value); 0: the dispatcher uploads them */
    unsigned char host_scalars[JN_NOPS];
} jn_rt_backend;

/* jn_rt_backends[device]; [JN_CUDA] is NULL until the CUDA backend is
 * initialized (and stays NULL in a build without CUDA or without a GPU). */
extern const jn_rt_backend *jn_rt_backends[JN_NDEVICES];
extern const jn_rt_backend jn_rt_cpu_backend;

/* "cpu" / "cuda:0", PyTorch's spelling, for messages. */
const char *jn_device_name(int device);

/* The device factory ops (no tensor inputs) create their output on, per
 * thread; JN_CPU unless set.  Returns the previous value. */
int jn_rt_set_factory_device(int device);
int jn_rt_factory_device(void);

/* The dispatcher's device choice for op over inputs in[0..nin): the device
 * of the first input that is not a CPU 0-d tensor (PyTorch lets CPU scalars
 * join device ops), JN_CPU when none.  Mixed devices (copy_ excepted) are a
 * JN_ERR_RUNTIME naming the op and the inputs' devices; a device whose
 * backend is not available is JN_ERR_UNSUPPORTED.  Exposed for tests. */
jn_status jn_rt_select_device(jn_op op, int nin, jn_tensor *const *in, int *device);
/* Its two halves: which device (no CUDA call; mixed-device errors), then
 * whether op can run there (unsupported op, CUDA initialization). */
jn_status jn_rt_resolve_device(jn_op op, int nin, jn_tensor *const *in, int *device);
jn_status jn_rt_device_ready(jn_op op, int device);

/* A contiguous copy of t on `device` (a new reference; t itself when it is
 * already there and contiguous and copy is 0).  Not differentiable. */
jn_tensor *jn_rt_to_device(jn_tensor *t, int device, int copy);

/* ---- CUDA (every function exists in every build; without CUDA they say so) */
/* 1 when this build has the CUDA backend compiled in. */
int jn_cuda_built(void);
/* Number of usable CUDA devices (0 when built without CUDA, without a driver
 * or without a GPU); the reason for 0 goes to *why when non-NULL (static). */
int jn_cuda_device_count(const char **why);
/* Initialize the backend (device 0, stream, cuBLAS) if not done; JN_OK or a
 * JN_ERR_UNSUPPORTED saying why CUDA cannot be used. */
jn_status jn_cuda_init(void);
/* The one device this process uses (an ordinal among the visible GPUs, 0
 * by default): settable before jn_cuda_init (the nccl backend sets it from
 * LOCAL_RANK), then only to the same number; an error says why not. */
jn_status jn_cuda_set_device(int ordinal);
int jn_cuda_current_device(void);
jn_status jn_cuda_synchronize(void);
/* Bytes handed out by the caching allocator now / at most since start or
 * the last reset; bytes reserved from the driver (cached + in use). */
size_t jn_cuda_memory_allocated(void);
size_t jn_cuda_max_memory_allocated(void);
size_t jn_cuda_memory_reserved(void);
void jn_cuda_reset_peak_memory_stats(void);
/* Give every cached free block back to the driver. */
void jn_cuda_empty_cache(void);
/* Is op implemented by the CUDA backend?  (Answers from the static table,
 * no GPU needed; 0 in a build without CUDA.) */
int jn_cuda_op_supported(jn_op op);
/* The backend's compute stream (a cudaStream_t / CUstream), NULL before
 * jn_cuda_init or without CUDA: graphs launch their kernels on it. */
void *jn_cuda_stream(void);
/* While a CUDA Graph is captured: device blocks freed are held, not
 * reused (the graph writes them again on replay); hold_end hands them
 * over, hold_release gives them back once the graph is gone. */
void jn_cuda_hold_begin(void);
void *jn_cuda_hold_end(void);
void jn_cuda_hold_release(void *held);
/* Index checks inside a CUDA Graph capture cannot read their flag back (a
 * sync): jn_cuda_flag_deferred returns, and forgets, the message of the
 * first check deferred since the last call ("" none); after each launch of
 * a graph with such checks, jn_cuda_flag_check(msg) reads and clears the
 * flag (JN_ERR_INDEX with msg when a kernel set it). */
const char *jn_cuda_flag_deferred(void);
jn_status jn_cuda_flag_check(const char *msg);

#ifdef __cplusplus
}
#endif
#endif
