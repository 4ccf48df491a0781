/* test_replay_device.c -- replay and device tensors, without a GPU.
 * (1) Which CUDA bundle replay loads for a device (jn_rp_pick_cuda,
 * replay/bundle.c): the device's own arch over every other, else the
 * newest CUDA target, never a cpu one.  The messages around it (no driver,
 * stub, other arch) are checked end to end by tests/python/test_replay_gpu.py.
 * (2) The dispatcher while a segment is captured (runtime/dispatch.c): in
 * a CPU replay (the hook's device JN_CPU) an op on device tensors is not
 * captured but ends the segment through the hook's materialize, as a data
 * read does, and runs eagerly; a device factory runs eagerly with capture
 * paused; CPU ops are captured.  In a CUDA replay (device JN_CUDA) it is
 * the other way round: device ops are captured (pending on the device,
 * Python numbers kept as host tensors), CPU ops end the segment and CPU
 * factories run with capture paused.  The whole replay on the device is
 * tests/c/test_replay_cuda.c.  The "CUDA" backend here is the CPU
 * backend's table plugged in as jn_rt_backends[JN_CUDA] over host memory
 * labelled cuda (as tests/c/test_exec_cuda.c does): it checks the
 * dispatcher's decision, not CUDA code. */
#include <string.h>

#include "jn_backend.h"
#include "jn_replay.h"
#include "jn_test.h"

static int ends, captured;
static jn_status hook_materialize(void *ctx, jn_tensor *t) {
    (void)ctx, (void)t;
    ends++;
    jn_rt_capturing = 0; /* what replay's seg_end does */
    return JN_OK;
}
static jn_status hook_capture(void *ctx, jn_op op, int nin, jn_tensor *const *in, const jn_attrs *a, int nout,
                              jn_tensor *const *out, int into) {
    (void)ctx, (void)op, (void)nin, (void)in, (void)a, (void)into;
    captured++;
    for (int k = 0; k < nout; k++) out[k]->storage->lazy = JN_LAZY_PENDING;
    return JN_OK;
}

static jn_rt_backend fake;
static jn_tensor *fake_new(const jn_meta *m) {
    jn_tensor *t = jn_rt_cpu_backend.tensor_new(m);
    if (t) t->storage->device = JN_CUDA;
    return t;
}

static jn_tensor *vec(int64_t n, double v, int dev) {
    jn_tensor *t = jn_tensor_new(JN_F32, 1, &n);
    for (int64_t i = 0; i < n; i++) ((float *)jn_data(t))[i] = (float)v;
    t->storage->device = dev;
    return t;
}

static void test_dispatch_while_capturing(void) {
    if (!jn_cuda_built()) return; /* without CUDA a device op is refused before capture matters */
    fake = jn_rt_cpu_backend;
    fake.device = JN_CUDA;
    fake.tensor_new = fake_new;
    const jn_rt_backend *saved = jn_rt_backends[JN_CUDA];
    jn_rt_backends[JN_CUDA] = &fake;
    jn_rt_capture_hook h = {.capture = hook_capture, .materialize = hook_materialize, .device = JN_CPU};
    jn_rt_set_capture_hook(&h);
    jn_attrs at;
    memset(&at, 0, sizeof at);
    at.a[0].f = 1;

    /* a CPU op is captured (pending, no kernel run) */
    jn_tensor *c1 = vec(4, 1, JN_CPU), *c2 = vec(4, 2, JN_CPU), *cc[2] = {c1, c2}, *co = NULL;
    jn_rt_capturing = 1;
    CHECK(jn_dispatch(JN_OP_add, 2, cc, &at, &co) == JN_OK && co && captured == 1 && ends == 0);
    CHECK(co && co->storage->lazy == JN_LAZY_PENDING);
    if (co) co->storage->lazy = 0; /* hand the header back as an ordinary one */
    jn_tensor_decref(co);

    /* a device op: the segment ends first, then it runs eagerly */
    jn_tensor *d1 = vec(4, 1, JN_CUDA), *d2 = vec(4, 2, JN_CUDA), *dd[2] = {d1, d2}, *out = NULL;
    CHECK(jn_dispatch(JN_OP_add, 2, dd, &at, &out) == JN_OK && out);
    CHECK(ends == 1 && captured == 1 && !jn_rt_capturing);
    CHECK(out && out->storage->device == JN_CUDA && !out->storage->lazy && ((float *)jn_data(out))[3] == 3.0f);

    /* in place into a device tensor: the same */
    jn_rt_capturing = 1;
    CHECK(jn_dispatch_into(JN_OP_add, 2, dd, &at, d1) == JN_OK && ends == 2 && captured == 1);
    CHECK(((float *)jn_data(d1))[0] == 3.0f && !jn_rt_capturing);

    /* a device factory: eager, capture paused around it and on again after */
    jn_rt_capturing = 1;
    int prev = jn_rt_set_factory_device(JN_CUDA);
    jn_attrs fa;
    memset(&fa, 0, sizeof fa);
    fa.a[0].l.n = 1, fa.a[0].l.v[0] = 3; /* full(shape, value, dtype) */
    fa.a[1].f = 0;
    fa.a[2].i = JN_F32;
    jn_tensor *f = NULL;
    jn_status fs = jn_dispatch(JN_OP_full, 0, NULL, &fa, &f);
    jn_rt_set_factory_device(prev);
    CHECK(jn_rt_capturing == 1 && captured == 1 && ends == 2);
    CHECK(fs == JN_OK);
    if (fs == JN_OK) {
        CHECK(f && f->storage->device == JN_CUDA && !f->storage->lazy);
        f->storage->device = JN_CPU;
        jn_tensor_decref(f);
    }
    jn_rt_capturing = 0;

    /* a CUDA replay (the hook captures cuda ops): the device op is
     * captured, pending on the device, no kernel run ... */
    h.device = JN_CUDA;
    jn_rt_set_capture_hook(&h);
    jn_rt_capturing = 1;
    jn_tensor *dc = NULL;
    CHECK(jn_dispatch(JN_OP_mul, 2, dd, &at, &dc) == JN_OK && dc && captured == 2 && ends == 2);
    CHECK(dc && dc->storage->device == JN_CUDA && !dc->storage->data && dc->storage->lazy == JN_LAZY_PENDING);
    /* ... with a Python number as it is (the matcher reads it on the host) */
    jn_tensor *num = jn_scalar_f64(2.0, JN_F32, 1), *dn[2] = {d1, num}, *dcn = NULL;
    int seen_dev = -1;
    CHECK(jn_dispatch(JN_OP_mul, 2, dn, &at, &dcn) == JN_OK && captured == 3 && ends == 2);
    seen_dev = dcn ? dcn->storage->device : -1;
    CHECK(seen_dev == JN_CUDA);
    /* ... in place into a device tensor: captured too */
    CHECK(jn_dispatch_into(JN_OP_add, 2, dd, &at, d2) == JN_OK && captured == 4 && ends == 2 && jn_rt_capturing);
    CHECK(d2->storage->lazy == JN_LAZY_PENDING && ((float *)jn_data(d2))[0] == 2.0f); /* not run */
    d2->storage->lazy = 0;
    /* a CPU op ends the segment and runs eagerly */
    jn_tensor *co2 = NULL;
    CHECK(jn_dispatch(JN_OP_add, 2, cc, &at, &co2) == JN_OK && co2 && ends == 3 && captured == 4 && !jn_rt_capturing);
    CHECK(co2 && !co2->storage->lazy && ((float *)jn_data(co2))[0] == 3.0f);
    jn_rt_capturing = 1;
    CHECK(jn_dispatch_into(JN_OP_add, 2, cc, &at, c1) == JN_OK && ends == 4 && captured == 4 && !jn_rt_capturing);
    CHECK(((float *)jn_data(c1))[0] == 3.0f);
    /* a CPU factory: eager, capture paused */
    jn_rt_capturing = 1;
    jn_tensor *f2 = NULL;
    CHECK(jn_dispatch(JN_OP_full, 0, NULL, &fa, &f2) == JN_OK && f2 && !f2->storage->lazy && jn_rt_capturing == 1 &&
          ends == 4 && captured == 4);
    jn_rt_capturing = 0;
    jn_tensor *mine[] = {dc, dcn};
    for (size_t i = 0; i < 2; i++)
        if (mine[i]) {
            mine[i]->storage->lazy = 0;
            mine[i]->storage->device = JN_CPU;
            jn_tensor_decref(mine[i]);
        }
    jn_tensor_decref(num);
    jn_tensor_decref(co2);
    jn_tensor_decref(f2);

    jn_rt_set_capture_hook(NULL);
    jn_rt_backends[JN_CUDA] = saved;
    jn_tensor *all[] = {c1, c2, d1, d2, out};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
        if (all[i]) {
            all[i]->storage->device = JN_CPU;
            jn_tensor_decref(all[i]);
        }
}

int main(void) {
    test_dispatch_while_capturing();
    const char *pick = NULL;
    const char *t1[] = {"cpu", "cuda:sm_80", "cuda:sm_90", "cuda:sm_100"};
    CHECK(jn_rp_pick_cuda(t1, 4, 9, 0, &pick) == JN_OK && pick && !strcmp(pick, "cuda:sm_90"));
    CHECK(jn_rp_pick_cuda(t1, 4, 8, 0, &pick) == JN_OK && pick && !strcmp(pick, "cuda:sm_80"));
    CHECK(jn_rp_pick_cuda(t1, 4, 10, 0, &pick) == JN_OK && pick && !strcmp(pick, "cuda:sm_100"));
    /* no exact one: the newest (the list is oldest first) */
    CHECK(jn_rp_pick_cuda(t1, 4, 8, 9, &pick) == JN_OK && pick && !strcmp(pick, "cuda:sm_100"));
    const char *t2[] = {"cuda:sm_90", "cpu"};
    CHECK(jn_rp_pick_cuda(t2, 2, 12, 0, &pick) == JN_OK && pick && !strcmp(pick, "cuda:sm_90"));
    /* cpu only, or nothing: none */
    const char *t3[] = {"cpu"};
    CHECK(jn_rp_pick_cuda(t3, 1, 9, 0, &pick) != JN_OK && pick == NULL);
    CHECK(jn_rp_pick_cuda(t3, 0, 9, 0, &pick) != JN_OK && pick == NULL);
    JT_DONE();
}
