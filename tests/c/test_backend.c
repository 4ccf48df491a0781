/* test_backend.c -- the backend tables and the dispatcher's device choice
 * (runtime/jn_backend.h), on any machine.
 *
 * A CPU tensor whose storage is *labelled* JN_CUDA stands in for a device
 * tensor: device selection and its errors happen before any data is read,
 * so mixed-device messages, CPU-scalar promotion, in-place strictness and
 * the unsupported-op answer are checked for real without a GPU.  The CPU
 * table must hold every op's jn_cpu_ kernel; the CUDA entry points must
 * answer without a GPU (count 0 with a reason, init refused).
 */
#include "jn_backend.h"
#include "jn_test.h"

static jn_tensor *vec(int64_t n, double v) {
    jn_tensor *t = jn_tensor_new(JN_F32, 1, &n);
    for (int64_t i = 0; t && i < n; i++) ((float *)jn_data(t))[i] = (float)v;
    return t;
}

static void test_cpu_table(void) {
    static const jn_kernel_fn want[JN_NOPS] = {
#define JN_OP(name, nin, nout, flags, attrs) jn_cpu_##name,
#include "ops.def"
#undef JN_OP
    };
    int ok = 1;
    for (int op = 0; op < JN_NOPS; op++) ok &= jn_rt_cpu_backend.kernel[op] == want[op] && want[op];
    CHECK(ok);
    CHECK(jn_rt_backends[JN_CPU] == &jn_rt_cpu_backend && jn_rt_cpu_backend.device == JN_CPU);
    CHECK(!strcmp(jn_device_name(JN_CPU), "cpu") && !strcmp(jn_device_name(JN_CUDA), "cuda:0"));
}

static void test_selection(void) {
    jn_tensor *a = vec(3, 1), *b = vec(3, 2), *s = jn_scalar_f64(2.0, JN_F32, 1);
    int dev = -1;
    jn_tensor *ab[2] = {a, b};
    CHECK(jn_rt_select_device(JN_OP_add, 2, ab, &dev) == JN_OK && dev == JN_CPU);
    CHECK(jn_rt_select_device(JN_OP_full, 0, NULL, &dev) == JN_OK && dev == JN_CPU);

    b->storage->device = JN_CUDA; /* a label only: no byte moves */
    CHECK(jn_rt_resolve_device(JN_OP_add, 2, ab, &dev) == JN_ERR_RUNTIME);
    CHECK(has("Expected all tensors to be on the same device, but found at least two devices, cpu and cuda:0!"));
    CHECK(has("op add: input 0 is on cpu, input 1 is on cuda:0"));
    /* through the dispatcher: the same error, no output handed out */
    jn_attrs at;
    memset(&at, 0, sizeof at);
    at.a[0].f = 1;
    jn_tensor *out = NULL;
    CHECK(jn_dispatch(JN_OP_add, 2, ab, &at, &out) == JN_ERR_RUNTIME && !out && has("op add"));
    CHECK(jn_dispatch_into(JN_OP_add, 2, ab, &at, a) == JN_ERR_RUNTIME && has("same device"));
    /* a CPU 0-d tensor joins a device op ... */
    jn_tensor *sb[2] = {s, b};
    CHECK(jn_rt_resolve_device(JN_OP_mul, 2, sb, &dev) == JN_OK && dev == JN_CUDA);
    /* ... but is not written by one (in-place ops run where their target lives) */
    CHECK(jn_rt_resolve_device(JN_OP_index_put_, 2, sb, &dev) == JN_ERR_RUNTIME && has("op index_put_"));
    CHECK(jn_dispatch_into(JN_OP_add, 2, sb, &at, s) == JN_ERR_RUNTIME && has("the output is on cpu"));
    /* copy_ may cross devices */
    CHECK(jn_rt_resolve_device(JN_OP_copy_, 2, ab, &dev) == JN_OK && dev == JN_CPU);
    /* ops without a CUDA kernel say so before any CUDA call */
    jn_tensor *bb[1] = {b};
    if (jn_cuda_built()) {
        CHECK(jn_rt_select_device(JN_OP_conv2d, 1, bb, &dev) == JN_ERR_UNSUPPORTED);
        CHECK(has("op conv2d is not supported on CUDA yet"));
        CHECK(jn_cuda_op_supported(JN_OP_add) && jn_cuda_op_supported(JN_OP_mm) && !jn_cuda_op_supported(JN_OP_conv2d));
    } else {
        CHECK(jn_rt_select_device(JN_OP_add, 1, bb, &dev) == JN_ERR_UNSUPPORTED && has("built without CUDA"));
        CHECK(!jn_cuda_op_supported(JN_OP_add));
    }
    const char *why = NULL;
    if (jn_cuda_device_count(&why) == 0) { /* no GPU: a device op is refused, saying why */
        CHECK(why && *why);
        CHECK(jn_rt_select_device(JN_OP_add, 1, bb, &dev) == JN_ERR_UNSUPPORTED && has("add: "));
        CHECK(jn_cuda_init() == JN_ERR_UNSUPPORTED && jn_cuda_memory_allocated() == 0);
        CHECK(jn_rt_to_device(a, JN_CUDA, 0) == NULL);
    }
    b->storage->device = JN_CPU;

    /* factories follow the thread's factory device */
    CHECK(jn_rt_set_factory_device(JN_CUDA) == JN_CPU && jn_rt_factory_device() == JN_CUDA);
    CHECK(jn_rt_resolve_device(JN_OP_full, 0, NULL, &dev) == JN_OK && dev == JN_CUDA);
    CHECK(jn_rt_set_factory_device(JN_CPU) == JN_CUDA);
    /* CPU -> CPU transfers: a new reference, or a copy when asked */
    jn_tensor *r = jn_rt_to_device(a, JN_CPU, 0);
    CHECK(r == a);
    jn_tensor_decref(r);
    r = jn_rt_to_device(a, JN_CPU, 1);
    CHECK(r && r != a && ((float *)jn_data(r))[2] == 1.0f);
    jn_tensor_decref(r);
    CHECK(jn_rt_to_device(a, 7, 0) == NULL && has("unknown device"));
    jn_tensor_decref(a);
    jn_tensor_decref(b);
    jn_tensor_decref(s);
}

int main(void) {
    test_cpu_table();
    test_selection();
    JT_DONE();
}
