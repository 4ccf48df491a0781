/* backend.c -- the backend tables and the dispatcher's device choice.
 *
 * The CPU backend is the jn_cpu_<op> kernels expanded from ops.def; the CUDA
 * backend's table lives in runtime/cuda/cuda_backend.c and is installed in
 * jn_rt_backends[JN_CUDA] by jn_cuda_init().  Here: the device a dispatched
 * op runs on (with PyTorch's mixed-device message), the factory device,
 * host/device transfers as jn_rt_to_device, and -- in a build without CUDA
 * -- the jn_cuda_* entry points answering "not built with CUDA".
 */
#include "jn_backend.h"

#include <stdio.h>
#include <string.h>

const jn_rt_backend jn_rt_cpu_backend = {
    "cpu",
    JN_CPU,
    jn_tensor_new_meta,
    jn_copy_into,
    NULL,
    {
#define JN_OP(name, nin, nout, flags, attrs) jn_cpu_##name,
#include "ops.def"
#undef JN_OP
    },
    {0},
};

const jn_rt_backend *jn_rt_backends[JN_NDEVICES] = {&jn_rt_cpu_backend, NULL};

const char *jn_device_name(int device) {
    switch (device) {
    case JN_CPU: return "cpu";
    case JN_CUDA: return "cuda:0";
    default: return "unknown device";
    }
}

static _Thread_local int factory_device = JN_CPU;

int jn_rt_set_factory_device(int device) {
    int old = factory_device;
    factory_device = device;
    return old;
}
int jn_rt_factory_device(void) { return factory_device; }

static int dev_of(const jn_tensor *t) { return t->storage ? t->storage->device : JN_CPU; }
static int cpu_scalar(const jn_tensor *t) { return t->ndim == 0 && dev_of(t) == JN_CPU; }

jn_status jn_rt_resolve_device(jn_op op, int nin, jn_tensor *const *in, int *device) {
    const jn_opinfo *info = jn_op_info(op);
    int dev = nin ? JN_CPU : factory_device, first = -1;
    /* in-place ops run where the tensor they write lives */
    int strict0 = (info->flags & JN_F_INPLACE) != 0;
    for (int i = 0; i < nin; i++) {
        if (cpu_scalar(in[i]) && !(strict0 && i == 0)) continue;
        if (first < 0) {
            first = i;
            dev = dev_of(in[i]);
        } else if (dev_of(in[i]) != dev && op != JN_OP_copy_) {
            return jn_error(JN_ERR_RUNTIME,
                            "Expected all tensors to be on the same device, but found at least two "
                            "devices, %s and %s! (op %s: input %d is on %s, input %d is on %s)",
                            jn_device_name(dev), jn_device_name(dev_of(in[i])), info->name, first,
                            jn_device_name(dev), i, jn_device_name(dev_of(in[i])));
        }
    }
    if (dev < 0 || dev >= JN_NDEVICES)
        return jn_error(JN_ERR_RUNTIME, "%s: a tensor has an unknown device number %d (internal error)",
                        info->name, dev);
    *device = dev;
    return JN_OK;
}

jn_status jn_rt_device_ready(jn_op op, int dev) {
    const jn_opinfo *info = jn_op_info(op);
    if (dev == JN_CPU) return JN_OK;
    /* the unsupported-op answer comes from the static table, before any
     * CUDA call (so it reads the same with or without a GPU) */
    if (dev == JN_CUDA && jn_cuda_built() && !jn_cuda_op_supported(op))
        return jn_error(JN_ERR_UNSUPPORTED, "op %s is not supported on CUDA yet (move its tensors to the cpu "
                        "with .cpu() for this op)", info->name);
    if (!jn_rt_backends[dev]) {
        jn_status s = jn_cuda_init();
        if (s) {
            char why[768];
            snprintf(why, sizeof why, "%s", jn_errmsg()); /* jn_error writes the buffer it would read */
            return jn_error(s, "%s: %s", info->name, why);
        }
    }
    return JN_OK;
}

jn_status jn_rt_select_device(jn_op op, int nin, jn_tensor *const *in, int *device) {
    jn_status s = jn_rt_resolve_device(op, nin, in, device);
    return s ? s : jn_rt_device_ready(op, *device);
}

jn_tensor *jn_rt_to_device(jn_tensor *t, int device, int copy) {
    if (device < 0 || device >= JN_NDEVICES) {
        jn_error(JN_ERR_VALUE, "to(): unknown device number %d", device);
        return NULL;
    }
    if (device == dev_of(t) && !copy && jn_is_contiguous(t)) {
        jn_tensor_incref(t);
        return t;
    }
    if (device != JN_CPU && !jn_rt_backends[device] && jn_cuda_init()) return NULL;
    jn_meta m = {t->dtype, t->ndim, {0}};
    memcpy(m.shape, t->shape, sizeof m.shape);
    jn_tensor *r = jn_rt_backends[device]->tensor_new(&m);
    if (!r) return NULL;
    if (jn_copy_into(r, t)) {
        jn_tensor_decref(r);
        return NULL;
    }
    return r;
}

#if !JANUS_HAVE_CUDA
/* ---- a build without the CUDA toolkit ---- */
static const char no_cuda[] = "janus was built without CUDA (no nvcc was found at build time; rebuild "
                              "with the CUDA toolkit installed, -DJANUS_CUDA=ON)";

int jn_cuda_built(void) { return 0; }
int jn_cuda_device_count(const char **why) {
    if (why) *why = no_cuda;
    return 0;
}
jn_status jn_cuda_init(void) { return jn_error(JN_ERR_UNSUPPORTED, "CUDA is not available: %s", no_cuda); }
jn_status jn_cuda_set_device(int ordinal) {
    return jn_error(JN_ERR_UNSUPPORTED, "CUDA device %d: CUDA is not available: %s", ordinal, no_cuda);
}
int jn_cuda_current_device(void) { return 0; }
jn_status jn_cuda_synchronize(void) { return JN_OK; }
size_t jn_cuda_memory_allocated(void) { return 0; }
size_t jn_cuda_max_memory_allocated(void) { return 0; }
size_t jn_cuda_memory_reserved(void) { return 0; }
void jn_cuda_reset_peak_memory_stats(void) {}
void jn_cuda_empty_cache(void) {}
int jn_cuda_op_supported(jn_op op) { return 0; }
void *jn_cuda_stream(void) { return NULL; }
void jn_cuda_hold_begin(void) {}
void *jn_cuda_hold_end(void) { return NULL; }
void jn_cuda_hold_release(void *held) { (void)held; }
const char *jn_cuda_flag_deferred(void) { return ""; }
jn_status jn_cuda_flag_check(const char *msg) {
    (void)msg;
    return JN_OK;
}
#endif
