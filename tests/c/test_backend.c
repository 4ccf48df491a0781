/* test_backend.c -- the backend tables and the dispatcher's device choice
 * (runtime/jn_backend.h), on any machine.
 *
 * A CPU tensor whose storage is *labelled* JN_CUDA stands in for a device
 * tensor: device selection and its errors happen before any data is read,
 * so mixed-device messages, CPU-scalar promotion, in-place strictness and
 * the unsupported-op answer are checked for real without a GPU.  The CPU
 * table must hold every op's jn_cpu_ kernel; the CUDA entry points must
 * answer without a GPU (count 0 with a reason, init refused).  The cuDNN
 * algorithm cache's rows in run.db (exec/algos.c): a round trip
 * through a store, another GPU's rows left alone, damaged rows refused.
 */
#include "jn_backend.h"

#include <limits.h>
#include "jn_test.h"
#if JANUS_HAVE_CUDA
#include <sqlite3.h>

#include "cuda/jn_cuda_host.h"
#include "cuda/jn_cudnn.h"
#include "jn_algos.h"
#include "jn_db_testing.h"
#endif

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
        /* every op of the table has a CUDA kernel but the LAPACK ones (docs/ARCHITECTURE.md's list) */
        int all = 1;
        for (int op = 0; op < JN_NOPS; op++)
            if (strncmp(jn_op_info((jn_op)op)->name, "linalg_", 7)) all &= jn_cuda_op_supported((jn_op)op);
        CHECK(all && jn_cuda_op_supported(JN_OP_conv2d) && jn_cuda_op_supported(JN_OP_index_put_));
        CHECK(!jn_cuda_op_supported(JN_OP_linalg_inv) && !jn_cuda_op_supported(JN_OP_linalg_cholesky_ex));
        CHECK(jn_rt_select_device(JN_OP_linalg_inv, 1, bb, &dev) == JN_ERR_UNSUPPORTED &&
              has("op linalg_inv is not supported on CUDA yet"));
        CHECK(!jn_cuda_op_supported((jn_op)JN_NOPS));
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

#if JANUS_HAVE_CUDA
/* ---- runtime/cuda/cudnn.c: geometry, cache keys, the cache, the choice ---- */
static void test_cudnn_host(void) {
    jn_rt_cudnn_conv c, c2;
    int64_t x[4] = {8, 1, 28, 28}, w[4] = {6, 1, 5, 5}, one[2] = {1, 1}, two[2] = {2, 2}, zero[2] = {0, 0};
    /* LeNet's first layer, padding 2: a 28x28 output, packed NCHW strides */
    CHECK(jn_rt_cudnn_conv_geom(&c, JN_F32, x, w, one, two, one, 1, "conv2d") == JN_OK);
    CHECK(c.y[0] == 8 && c.y[1] == 6 && c.y[2] == 28 && c.y[3] == 28);
    CHECK(c.xs[0] == 784 && c.xs[1] == 784 && c.xs[2] == 28 && c.xs[3] == 1);
    CHECK(c.ys[0] == 6 * 784 && c.ys[1] == 784 && c.ys[2] == 28 && c.ys[3] == 1);
    CHECK(c.pad[0] == 2 && c.stride[1] == 1 && c.dil[0] == 1 && c.groups == 1 && c.dtype == JN_F32);
    /* stride 2, dilation 2, groups 2: sizes as conv2d's infer computes them */
    int64_t xg[4] = {2, 4, 9, 11}, wg[4] = {6, 2, 3, 2};
    CHECK(jn_rt_cudnn_conv_geom(&c2, JN_F64, xg, wg, two, one, two, 2, "conv2d") == JN_OK);
    CHECK(c2.y[1] == 6 && c2.y[2] == (9 + 2 - 5) / 2 + 1 && c2.y[3] == (11 + 2 - 3) / 2 + 1 && c2.groups == 2);
    /* refused, naming the problem */
    int64_t wbad[4] = {6, 3, 5, 5};
    CHECK(jn_rt_cudnn_conv_geom(&c2, JN_F32, x, wbad, one, zero, one, 1, "conv2d") == JN_ERR_SHAPE && has("groups=1"));
    CHECK(jn_rt_cudnn_conv_geom(&c2, JN_I64, x, w, one, zero, one, 1, "conv2d") == JN_ERR_TYPE && has("int64"));
    int64_t wbig[4] = {6, 1, 40, 5};
    CHECK(jn_rt_cudnn_conv_geom(&c2, JN_F32, x, wbig, one, zero, one, 1, "conv2d_input_grad") == JN_ERR_SHAPE &&
          has("conv2d_input_grad") && has("empty"));
    int64_t xhuge[4] = {70000, 3, 128, 128}, w3[4] = {4, 3, 3, 3};
    CHECK(jn_rt_cudnn_conv_geom(&c2, JN_F16, xhuge, w3, one, one, one, 1, "conv2d") == JN_ERR_UNSUPPORTED &&
          has("2^31"));
    CHECK(jn_rt_cudnn_conv_geom(&c2, JN_F32, x, w, zero, zero, one, 1, "conv2d") == JN_ERR_VALUE);

    /* keys: equal geometry -> equal key; any field that changes cuDNN's choice -> another key */
    char k1[256], k2[256];
    CHECK(jn_rt_cudnn_conv_geom(&c2, JN_F32, x, w, one, two, one, 1, "conv2d") == JN_OK);
    jn_rt_cudnn_key(&c, JN_RT_CUDNN_FWD, k1, sizeof k1);
    jn_rt_cudnn_key(&c2, JN_RT_CUDNN_FWD, k2, sizeof k2);
    CHECK(!strcmp(k1, k2));
    jn_rt_cudnn_key(&c, JN_RT_CUDNN_BWD_FILTER, k2, sizeof k2);
    CHECK(strcmp(k1, k2) != 0);
    int *fields[] = {&c2.dtype, &c2.x[0], &c2.x[2], &c2.w[3], &c2.xs[1], &c2.ys[2], &c2.pad[1], &c2.stride[0],
                     &c2.dil[1], &c2.groups};
    int distinct = 1;
    for (size_t i = 0; i < sizeof fields / sizeof fields[0]; i++) {
        (*fields[i])++;
        jn_rt_cudnn_key(&c2, JN_RT_CUDNN_FWD, k2, sizeof k2);
        distinct &= strcmp(k1, k2) != 0;
        (*fields[i])--;
    }
    CHECK(distinct);
    CHECK(jn_rt_cudnn_key(&c, JN_RT_CUDNN_FWD, k2, 8) > 8); /* the length it needs, as snprintf */

    /* the cache: miss, store, hit, overwrite, bounded size */
    jn_rt_cudnn_cache_clear();
    int algo = -1;
    size_t ws = 0;
    CHECK(!jn_rt_cudnn_cache_get(k1, &algo, &ws) && jn_rt_cudnn_cache_count() == 0);
    jn_rt_cudnn_cache_put(k1, 3, 4096);
    CHECK(jn_rt_cudnn_cache_get(k1, &algo, &ws) && algo == 3 && ws == 4096);
    jn_rt_cudnn_cache_put(k1, 1, 0);
    CHECK(jn_rt_cudnn_cache_get(k1, &algo, &ws) && algo == 1 && ws == 0 && jn_rt_cudnn_cache_count() == 1);
    char k[64];
    for (int i = 0; i < 2 * JN_RT_CUDNN_CACHE_SLOTS; i++) {
        snprintf(k, sizeof k, "key%d", i);
        jn_rt_cudnn_cache_put(k, i, (size_t)i);
    }
    CHECK(jn_rt_cudnn_cache_count() == JN_RT_CUDNN_CACHE_SLOTS);
    snprintf(k, sizeof k, "key%d", 2 * JN_RT_CUDNN_CACHE_SLOTS - 1); /* the newest stays */
    CHECK(jn_rt_cudnn_cache_get(k, &algo, &ws) && algo == 2 * JN_RT_CUDNN_CACHE_SLOTS - 1);
    CHECK(!jn_rt_cudnn_cache_get(k1, &algo, &ws)); /* the oldest went */
    char longkey[600];
    memset(longkey, 'k', sizeof longkey - 1);
    longkey[sizeof longkey - 1] = 0;
    jn_rt_cudnn_cache_put(longkey, 7, 0);
    CHECK(!jn_rt_cudnn_cache_get(longkey, &algo, &ws)); /* never stored truncated */
    /* the longest possible key (every field at -2^31) still fits and is cached */
    jn_rt_cudnn_conv big;
    int *bf = (int *)&big;
    for (size_t i = 0; i < sizeof big / sizeof(int); i++) bf[i] = INT_MIN;
    char kb[1024];
    size_t kl = jn_rt_cudnn_key(&big, JN_RT_CUDNN_BWD_FILTER, kb, sizeof kb);
    CHECK(kl > 300 && kl < sizeof kb);
    jn_rt_cudnn_cache_put(kb, 5, 1);
    CHECK(jn_rt_cudnn_cache_get(kb, &algo, &ws) && algo == 5);
    jn_rt_cudnn_cache_clear();
    CHECK(jn_rt_cudnn_cache_count() == 0);

    /* the choice: status must be 0; no tensor-op (TF32) math for float32/64;
     * deterministic preferred for the backward passes */
    jn_rt_cudnn_choice perf[4] = {{5, 1, 1, 3}, {2, 0, 0, 1}, {4, 0, 0, 3}, {6, 0, 1, 3}};
    CHECK(jn_rt_cudnn_pick(perf, 4, JN_RT_CUDNN_FWD, JN_F32) == 4);
    CHECK(jn_rt_cudnn_pick(perf, 4, JN_RT_CUDNN_FWD, JN_F16) == 2);
    CHECK(jn_rt_cudnn_pick(perf, 4, JN_RT_CUDNN_BWD_DATA, JN_F32) == 6);
    CHECK(jn_rt_cudnn_pick(perf, 3, JN_RT_CUDNN_BWD_FILTER, JN_F64) == 4); /* no deterministic one: the first */
    CHECK(jn_rt_cudnn_pick(perf, 2, JN_RT_CUDNN_FWD, JN_F32) == -1);

    /* loading: a bad JANUS_CUDNN_PATH is the only file tried, and the error
     * names libcudnn and the fix; the toolkit's own then loads (no GPU needed) */
    setenv("JANUS_CUDNN_PATH", "/nonexistent/libcudnn.so.9", 1);
    CHECK(jn_rt_cudnn_load() == JN_ERR_UNSUPPORTED && has("libcudnn") && has("/nonexistent/libcudnn.so.9") &&
          has("LD_LIBRARY_PATH"));
    unsetenv("JANUS_CUDNN_PATH");
    jn_status s = jn_rt_cudnn_load();
    CHECK(s == JN_OK || (s == JN_ERR_UNSUPPORTED && has("libcudnn")));
    CHECK(jn_rt_cudnn_load() == s); /* idempotent */
}

/* ---- the algorithm cache in run.db (schema v5 algos rows) ---- */
static int sql(jn_db *db, const char *q) { return sqlite3_exec(jn_db_testing_handle(db), q, NULL, NULL, NULL); }

static void test_cudnn_algos_store(void) {
    jn_rt_cudnn_conv c1, c2, back;
    int64_t x[4] = {8, 1, 28, 28}, w[4] = {6, 1, 5, 5}, xg[4] = {2, 4, 9, 11}, wg[4] = {6, 2, 3, 2};
    int64_t one[2] = {1, 1}, two[2] = {2, 2};
    CHECK(jn_rt_cudnn_conv_geom(&c1, JN_F32, x, w, one, two, one, 1, "conv2d") == JN_OK);
    CHECK(jn_rt_cudnn_conv_geom(&c2, JN_BF16, xg, wg, two, one, two, 2, "conv2d") == JN_OK);
    char k[3][JN_RT_CUDNN_KEY_MAX];
    jn_rt_cudnn_key(&c1, JN_RT_CUDNN_FWD, k[0], sizeof k[0]);
    jn_rt_cudnn_key(&c1, JN_RT_CUDNN_BWD_FILTER, k[1], sizeof k[1]);
    jn_rt_cudnn_key(&c2, JN_RT_CUDNN_BWD_DATA, k[2], sizeof k[2]);
    /* the key text parses back to the same convolution and pass */
    int kind = -1;
    CHECK(jn_rt_cudnn_key_parse(k[2], &back, &kind) == JN_OK && kind == JN_RT_CUDNN_BWD_DATA &&
          !memcmp(&back, &c2, sizeof back));
    CHECK(jn_rt_cudnn_key_parse(k[1], &back, &kind) == JN_OK && kind == JN_RT_CUDNN_BWD_FILTER &&
          !memcmp(&back, &c1, sizeof back));
    char bad[JN_RT_CUDNN_KEY_MAX + 8];
    CHECK(jn_rt_cudnn_key_parse("garbage", NULL, NULL) == JN_ERR_VALUE && has("'garbage' is not a convolution key"));
    snprintf(bad, sizeof bad, "%s:g1", k[0]); /* trailing text */
    CHECK(jn_rt_cudnn_key_parse(bad, NULL, NULL) == JN_ERR_VALUE && has("not a convolution key"));
    snprintf(bad, sizeof bad, "%s", k[0]);
    bad[0] = '7'; /* no such pass */
    CHECK(jn_rt_cudnn_key_parse(bad, NULL, NULL) == JN_ERR_VALUE && has("pass 7"));
    snprintf(bad, sizeof bad, " %s", k[0]); /* scanf takes it, the writer never writes it */
    CHECK(jn_rt_cudnn_key_parse(bad, NULL, NULL) == JN_ERR_VALUE && has("canonical"));
    jn_rt_cudnn_conv lie = c1;
    lie.y[2] = 27; /* an output size the geometry does not give */
    jn_rt_cudnn_key(&lie, JN_RT_CUDNN_FWD, bad, sizeof bad);
    CHECK(jn_rt_cudnn_key_parse(bad, NULL, NULL) == JN_ERR_VALUE && has("not a consistent convolution"));
    lie = c1;
    lie.dtype = JN_I64;
    jn_rt_cudnn_key(&lie, JN_RT_CUDNN_FWD, bad, sizeof bad);
    CHECK(jn_rt_cudnn_key_parse(bad, NULL, NULL) == JN_ERR_VALUE && has("dtype"));
    /* the device string: name and compute capability */
    char dev[128];
    jn_rt_cudnn_device_name("NVIDIA H200", 9, 0, dev, sizeof dev);
    CHECK(!strcmp(dev, "NVIDIA H200 sm_90"));

    if (jt_tmp_begin("algos")) return;
    const char *path = tmp("run.db");
    jn_db *db = NULL;
    CHECK(jn_db_open(path, JN_DB_CREATE, &db) == JN_OK);
    if (!db) return;
    /* export -> put -> get -> import: the same choices */
    jn_rt_cudnn_cache_clear();
    int n = -1;
    CHECK(jn_ex_cuda_algos_save_for(db, dev, &n) == JN_OK && n == 0); /* nothing chosen: nothing written */
    jn_rt_cudnn_cache_put(k[0], 1, 4096);
    jn_rt_cudnn_cache_put(k[1], 0, 0);
    jn_rt_cudnn_cache_put(k[2], 5, 123456789);
    jn_rt_cudnn_entry ex[JN_RT_CUDNN_CACHE_SLOTS];
    CHECK(jn_rt_cudnn_cache_export(ex, JN_RT_CUDNN_CACHE_SLOTS) == 3 && !strcmp(ex[2].key, k[2]) && ex[2].algo == 5);
    CHECK(jn_rt_cudnn_cache_export(ex, 2) == 2);
    CHECK(jn_ex_cuda_algos_save_for(db, dev, &n) == JN_OK && n == 3);
    jn_rt_cudnn_cache_clear();
    CHECK(jn_ex_cuda_algos_load_for(db, "NVIDIA A100-SXM4-80GB sm_80", &n) == JN_OK && n == 0 &&
          jn_rt_cudnn_cache_count() == 0); /* another GPU: nothing */
    CHECK(jn_ex_cuda_algos_load_for(db, dev, &n) == JN_OK && n == 3 && jn_rt_cudnn_cache_count() == 3);
    int algo = -1, same = 1;
    size_t ws = 0;
    same &= jn_rt_cudnn_cache_get(k[0], &algo, &ws) && algo == 1 && ws == 4096;
    same &= jn_rt_cudnn_cache_get(k[1], &algo, &ws) && algo == 0 && ws == 0;
    same &= jn_rt_cudnn_cache_get(k[2], &algo, &ws) && algo == 5 && ws == 123456789;
    CHECK(same);
    /* saving again replaces, never duplicates */
    CHECK(jn_ex_cuda_algos_save_for(db, dev, &n) == JN_OK && n == 3);
    jn_db_algo *rows = NULL;
    CHECK(jn_db_algos_get(db, dev, &rows, &n) == JN_OK && n == 3);
    jn_db_algos_free(rows, n);

    /* damaged rows: refused with the store and the row named, nothing imported */
    CHECK(sql(db, "UPDATE algos SET key = 'x' || key WHERE key LIKE '2:%'") == SQLITE_OK);
    jn_rt_cudnn_cache_clear();
    CHECK(jn_ex_cuda_algos_load_for(db, dev, &n) == JN_ERR_VALUE && n == 0 && has(path) && has("NVIDIA H200 sm_90") &&
          has("not a convolution key") && has("nothing imported") && has("DELETE FROM algos"));
    CHECK(jn_rt_cudnn_cache_count() == 0);
    CHECK(sql(db, "UPDATE algos SET key = substr(key, 2) WHERE key LIKE 'x%'; UPDATE algos SET algo = 99 "
                  "WHERE key LIKE '0:%'") == SQLITE_OK);
    CHECK(jn_ex_cuda_algos_load_for(db, dev, &n) == JN_ERR_VALUE && has("algorithm number 64 outside") &&
          jn_rt_cudnn_cache_count() == 0);
    CHECK(sql(db, "UPDATE algos SET algo = 2 WHERE key LIKE '0:%'") == SQLITE_OK);
    CHECK(jn_ex_cuda_algos_load_for(db, dev, &n) == JN_OK && n == 3); /* repaired */
    /* the entry points the replay calls: without a GPU they do nothing */
    const char *why = NULL;
    if (jn_cuda_device_count(&why) == 0) {
        CHECK(jn_rt_cudnn_device(dev, sizeof dev) == JN_ERR_UNSUPPORTED && has("cuDNN algorithm cache"));
        CHECK(jn_ex_cuda_algos_load(db, &n) == JN_OK && n == 0);
        CHECK(jn_ex_cuda_algos_save(db, &n) == JN_OK && n == 0);
        printf("test_backend: no GPU (%s): jn_ex_cuda_algos_load/_save with the real device name not run\n", why);
    } else {
        CHECK(jn_rt_cudnn_device(dev, sizeof dev) == JN_OK && strstr(dev, " sm_"));
        CHECK(jn_ex_cuda_algos_save(db, &n) == JN_OK && n == 3);
        jn_rt_cudnn_cache_clear();
        CHECK(jn_ex_cuda_algos_load(db, &n) == JN_OK && n == 3);
    }
    jn_rt_cudnn_cache_clear();
    jn_db_close(db);
    jt_tmp_end();
}

/* ---- advanced-indexing offsets (the CUDA index / index_put_ kernels'
 * host half): x's data at the offsets must equal the CPU index op ---- */
static void check_offsets(jn_tensor *x, int nidx, jn_tensor **idx, const int64_t *mask, int nmask) {
    jn_attrs a;
    memset(&a, 0, sizeof a);
    a.a[0].l.n = nmask;
    memcpy(a.a[0].l.v, mask, sizeof(int64_t) * (size_t)nmask);
    jn_tensor *in[JN_MAX_INS] = {x}, *want = NULL, *off = NULL;
    for (int k = 0; k < nidx; k++) in[1 + k] = idx[k];
    CHECK(jn_dispatch(JN_OP_index, 1 + nidx, in, &a, &want) == JN_OK);
    CHECK(jn_rt_cuda_index_offsets(x, nidx, idx, &a, &off) == JN_OK);
    if (!want || !off) return;
    CHECK(off->dtype == JN_I64 && jn_same_shape(off->ndim, off->shape, want->ndim, want->shape));
    jn_tensor *wc = jn_contiguous(want);
    int ok = wc != NULL;
    for (int64_t i = 0; ok && i < jn_numel(off); i++)
        ok = ((const float *)jn_data(x))[((const int64_t *)jn_data(off))[i]] == ((const float *)jn_data(wc))[i];
    CHECK(ok);
    jn_tensor_decref(wc);
    jn_tensor_decref(want);
    jn_tensor_decref(off);
}

static jn_tensor *ivec(int n, const int64_t *v) {
    int64_t sh = n;
    jn_tensor *t = jn_tensor_new(JN_I64, 1, &sh);
    memcpy(jn_data(t), v, sizeof(int64_t) * (size_t)n);
    return t;
}

static void test_index_offsets(void) {
    int64_t shape[3] = {4, 5, 6};
    jn_tensor *base = jn_tensor_new(JN_F32, 3, shape);
    for (int i = 0; i < 120; i++) ((float *)jn_data(base))[i] = (float)i;
    jn_tensor xt = *base; /* a permuted (non-contiguous) view: [6, 4, 5] */
    int perm[3] = {2, 0, 1};
    for (int d = 0; d < 3; d++) xt.shape[d] = base->shape[perm[d]], xt.strides[d] = base->strides[perm[d]];
    int64_t i0[3] = {3, -1, 0}, i1[3] = {1, 4, -5}, i2[2] = {2, 2};
    jn_tensor *a = ivec(3, i0), *b = ivec(3, i1), *c = ivec(2, i2);
    int64_t m01[2] = {1, 1}, m1[2] = {0, 1}, m02[3] = {1, 0, 1};
    jn_tensor *ab[2] = {a, b}, *bb[1] = {b}, *ac[2] = {a, a};
    check_offsets(base, 2, ab, m01, 2); /* x[i0, i1] */
    check_offsets(base, 1, bb, m1, 2);  /* x[:, i1] */
    check_offsets(&xt, 2, ac, m02, 3);  /* split indices: B goes first */
    check_offsets(&xt, 1, &c, m1, 2);
    /* a bool mask over the first two dims */
    int64_t ms[2] = {4, 5};
    jn_tensor *mask = jn_tensor_new(JN_BOOL, 2, ms);
    for (int i = 0; i < 20; i++) ((uint8_t *)jn_data(mask))[i] = (uint8_t)(i % 3 == 0);
    int64_t mm[1] = {1};
    check_offsets(base, 1, &mask, mm, 1);
    /* out of range: the CPU op's IndexError */
    int64_t bad[2] = {0, 9};
    jn_tensor *bt = ivec(2, bad), *off = NULL;
    jn_attrs at;
    memset(&at, 0, sizeof at);
    at.a[0].l.n = 1;
    at.a[0].l.v[0] = 1;
    CHECK(jn_rt_cuda_index_offsets(base, 1, &bt, &at, &off) == JN_ERR_INDEX && !off &&
          has("index 9 is out of bounds for dimension 0 with size 4"));
    jn_tensor_decref(bt);
    jn_tensor_decref(mask);
    jn_tensor_decref(a);
    jn_tensor_decref(b);
    jn_tensor_decref(c);
    jn_tensor_decref(base);
}
#endif

int main(void) {
    test_cpu_table();
    test_selection();
#if JANUS_HAVE_CUDA
    test_cudnn_host();
    test_cudnn_algos_store();
    test_index_offsets();
#endif
    JT_DONE();
}
