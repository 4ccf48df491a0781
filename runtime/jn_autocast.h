/* jn_autocast.h -- mixed precision: PyTorch's autocast in the dispatcher.
 *
 * While a thread has an autocast region open for a device type (cpu or
 * cuda), jn_dispatch casts the floating inputs on that device of the ops
 * named in autocast.c's policy table before running them: "lower
 * precision" ops (GEMMs, convolutions) to the region's dtype, "float32"
 * ops (losses, exp/log/pow, softmax on cuda, ...) to float32, "promote"
 * ops (cat, stack, ...) to the widest input type.  The casts are ordinary
 * `cast` ops issued through the dispatcher, so they are differentiable
 * (the gradient is cast back) and recorded like any op.  State is per
 * thread; regions nest (the Python context manager saves and restores).
 *
 * The cost when no thread uses autocast: jn_dispatch tests one global
 * counter (jn_rt_autocast_threads) and calls nothing.
 */
#ifndef JN_AUTOCAST_H
#define JN_AUTOCAST_H

#include "jn_runtime.h"

/* Policies (autocast.c's table; PyTorch's CastPolicy names). */
enum {
    JN_AC_NONE = 0,    /* run on the inputs' dtypes */
    JN_AC_LOWER,       /* float inputs (not float64) -> the region's dtype */
    JN_AC_FP32,        /* float inputs (not float64) -> float32 */
    JN_AC_PROMOTE,     /* float inputs -> the widest of them and the region's dtype */
    JN_AC_FP32_RSCALAR /* float32 when input 0 is a Python number (`2 / x`: PyTorch's __rtruediv__) */
};

/* This thread's autocast state for a device type (JN_CPU, JN_CUDA). */
typedef struct {
    int enabled;
    jn_dtype dtype;      /* the lower precision dtype */
    int cache_enabled;
} jn_autocast_state;

jn_autocast_state jn_autocast_get(int device);
/* JN_ERR_VALUE for a device other than cpu/cuda or a dtype other than
 * float16/bfloat16 (the Python front end warns and disables first). */
jn_status jn_autocast_set(int device, jn_autocast_state st);
/* Region nesting (the Python context manager): decrement returns the new
 * depth; at 0 the caller clears the cast cache. */
int jn_autocast_increment_nesting(void);
int jn_autocast_decrement_nesting(void);
/* Drop this thread's cached casts of leaf parameters. */
void jn_autocast_clear_cache(void);
int jn_autocast_cache_size(void);
/* Suspend autocast on this thread (derivative formulas, composite ops that
 * PyTorch runs as one kernel); returns the token for resume. */
int jn_autocast_suspend(void);
void jn_autocast_resume(int token);
/* Any autocast region enabled on this thread (and not suspended)? */
int jn_autocast_active(void);

/* The policy of op on a device type (tests, documentation). */
int jn_autocast_policy(int device, jn_op op);
/* Composite functions of the Python front end that PyTorch treats as one
 * op (cross_entropy, layer_norm, ...): index into autocast.c's second
 * table, or -1. */
int jn_autocast_composite_lookup(const char *name);
int jn_autocast_composite_policy(int index, int device);

/* The device type whose autocast state applies to these inputs: the
 * first input not on the cpu, else JN_CPU (mixed devices fail later). */
int jn_autocast_device_of(int nin, jn_tensor *const *in);
/* What autocast does to these inputs under `policy` on device type dev
 * with this thread's dtype for it: target[i] = the dtype input i is cast
 * to, or -1.  Only floating tensors on dev are touched, never Python
 * numbers.  Returns 1 when some input is cast.  Shared by the dispatcher
 * path, the composites and the tests (_C._autocast_plan). */
int jn_autocast_plan(int policy, int dev, int nin, jn_tensor *const *in, int *target);
/* Apply a plan: use[i] = in[i] (borrowed) where target[i] < 0, else a new
 * reference to its cast, made through the dispatcher (and cached for leaf
 * parameters).  On failure nothing is held. */
jn_status jn_autocast_cast_inputs(int nin, jn_tensor *const *in, const int *target, jn_tensor **use);

/* dispatch.c's entry when some thread has autocast on: plans, casts, and
 * runs jn_rt_dispatch_plain (jn_dispatch without this test). */
jn_status jn_rt_autocast_dispatch(jn_op op, int nin, jn_tensor *const *in, const jn_attrs *a, jn_tensor **out);
jn_status jn_rt_dispatch_plain(jn_op op, int nin, jn_tensor *const *in, const jn_attrs *a, jn_tensor **out);
/* Threads with an autocast region enabled (atomic): jn_dispatch's one test. */
extern int jn_rt_autocast_threads;

#endif
