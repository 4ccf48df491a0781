/* test_core.c -- C unit tests of the runtime core: dtype promotion and
 * half-precision conversion, the op table and its hash, Philox known
 * answers, the N-d iterator over strided/broadcast operands, copies between
 * dtypes, the thread pool, and dispatcher error paths. */
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "jn_runtime.h"
#include "jn_test.h"

static void test_promotion(void) {
    CHECK(jn_promote(JN_U8, JN_I32) == JN_I32);
    CHECK(jn_promote(JN_BOOL, JN_U8) == JN_U8);
    CHECK(jn_promote(JN_F16, JN_BF16) == JN_F32);
    CHECK(jn_promote(JN_I64, JN_F16) == JN_F16);
    CHECK(jn_promote(JN_F32, JN_F64) == JN_F64);
    CHECK(jn_promote(JN_I32, JN_I64) == JN_I64);
    /* wrapped numbers and 0-d tensors rank below dimensioned tensors */
    int64_t sh[1] = {3};
    jn_tensor *i32 = jn_tensor_new(JN_I32, 1, sh), *f = jn_scalar_f64(2.5, JN_F64, 1);
    jn_tensor *i64z = jn_scalar_i64(1, JN_I64, 0), *f16 = jn_tensor_new(JN_F16, 1, sh);
    jn_tensor *d0 = jn_scalar_f64(1, JN_F64, 0);
    jn_tensor *a[2] = {i32, f};
    CHECK(jn_result_type(2, a) == JN_F32);   /* int tensor + python float -> default float */
    jn_tensor *b[2] = {i32, i64z};
    CHECK(jn_result_type(2, b) == JN_I32);   /* 0-d int64 doesn't widen an int32 tensor */
    jn_tensor *c[2] = {f16, d0};
    CHECK(jn_result_type(2, c) == JN_F16);   /* 0-d double doesn't widen a half tensor */
    jn_tensor *d[2] = {i32, d0};
    CHECK(jn_result_type(2, d) == JN_F64);   /* but a higher category does take its dtype */
    jn_tensor_decref(i32); jn_tensor_decref(f); jn_tensor_decref(i64z);
    jn_tensor_decref(f16); jn_tensor_decref(d0);
    CHECK(jn_dtype_from_name("long") == JN_I64 && jn_dtype_from_name("nope") == -1);
}

static void test_half(void) {
    /* every half bit pattern survives a round trip through float (NaNs stay NaN) */
    int bad = 0;
    for (uint32_t h = 0; h < 65536; h++) {
        float f = jn_f16_to_f32((uint16_t)h);
        uint16_t back = jn_f32_to_f16(f);
        if (f == f && back != h) bad++;
        if (f != f && (back & 0x7c00) != 0x7c00) bad++;
    }
    CHECK(bad == 0);
    CHECK(jn_f32_to_f16(65504.0f) == 0x7bff);
    CHECK(jn_f32_to_f16(1e6f) == 0x7c00);
    CHECK(jn_f32_to_f16(1.0f + 1.0f / 2048) == 0x3c00); /* tie rounds to even */
    CHECK_NEAR(jn_f16_to_f32(0x0001), 5.960464477539063e-08, 1e-20);
    CHECK(jn_f32_to_bf16(1.0f) == 0x3f80);
    CHECK_NEAR(jn_bf16_to_f32(jn_f32_to_bf16(3.14159f)), 3.140625, 1e-9);
    float nan = jn_bf16_to_f32(jn_f32_to_bf16(NAN));
    CHECK(nan != nan);
}

static void test_optable(void) {
    CHECK(JN_NOPS > 50);
    CHECK(jn_op_lookup("add") == JN_OP_add && jn_op_lookup("no_such_op") == -1);
    const jn_opinfo *s = jn_op_info(JN_OP_sum);
    CHECK(s->nattrs == 3 && s->attr_kind[0] == 'L' && !strcmp(s->attr_name[1], "keepdim"));
    CHECK(jn_op_attr_index(JN_OP_rand, "offset") == 3);
    CHECK(jn_optable_hash() == jn_optable_hash() && jn_optable_hash() != 0);
    for (int i = 0; i < JN_NOPS; i++) {
        const jn_opinfo *in = jn_op_info((jn_op)i);
        int commas = 0;
        for (const char *p = in->schema; *p; p++) commas += *p == ',';
        CHECK(in->nattrs == (in->schema[0] ? commas + 1 : 0));
    }
    /* positions (ops_pos.def): every name is an int attribute of its op
     * and marked; structural ints are not */
    int marked = 0, listed = 0;
    for (int i = 0; i < JN_NOPS; i++)
        for (int k = 0; k < jn_op_info((jn_op)i)->nattrs; k++) marked += jn_op_info((jn_op)i)->attr_pos[k];
#define JN_OP_POS(name, attrs)                                                                      \
    for (const char *p = attrs; *p;) {                                                              \
        char nm[24] = {0};                                                                          \
        size_t len = strcspn(p, ",");                                                               \
        memcpy(nm, p, len < 23 ? len : 23);                                                         \
        int k = jn_op_attr_index(JN_OP_##name, nm);                                                 \
        CHECK(k >= 0 && jn_op_info(JN_OP_##name)->attr_kind[k] == 'i' && jn_op_info(JN_OP_##name)->attr_pos[k]); \
        listed++;                                                                                   \
        p += len + (p[len] == ',');                                                                 \
    }
#include "ops_pos.def"
#undef JN_OP_POS
    CHECK(marked == listed && listed >= 5);
    CHECK(jn_op_info(JN_OP_slice)->attr_pos[1] && !jn_op_info(JN_OP_slice)->attr_pos[0]); /* start yes, dim no */
}

static void test_philox(void) {
    /* Random123 known-answer vectors for philox4x32-10 */
    uint32_t out[4];
    const uint32_t z[4] = {0, 0, 0, 0}, zk[2] = {0, 0};
    jn_rt_philox4(z, zk, out);
    CHECK(out[0] == 0x6627e8d5u && out[1] == 0xe169c58du && out[2] == 0xbc57ac4cu && out[3] == 0x9b00dbd8u);
    const uint32_t f[4] = {0xffffffffu, 0xffffffffu, 0xffffffffu, 0xffffffffu}, fk[2] = {0xffffffffu, 0xffffffffu};
    jn_rt_philox4(f, fk, out);
    CHECK(out[0] == 0x408f276du && out[1] == 0x41c83b0eu && out[2] == 0xa20bc7c6u && out[3] == 0x6d5451fdu);
    const uint32_t p[4] = {0x243f6a88u, 0x85a308d3u, 0x13198a2eu, 0x03707344u}, pk[2] = {0xa4093822u, 0x299f31d0u};
    jn_rt_philox4(p, pk, out);
    CHECK(out[0] == 0xd16cfe09u && out[1] == 0x94fdccebu && out[2] == 0x5001e420u && out[3] == 0x24126ea1u);
    jn_philox(0, 0, out);
    CHECK(out[0] == 0x6627e8d5u);
}

static void test_copy_and_iter(void) {
    /* a transposed float32 view copied into a contiguous int32 tensor */
    int64_t sh[2] = {3, 4};
    jn_tensor *a = jn_tensor_new(JN_F32, 2, sh);
    float *ad = (float *)jn_data(a);
    for (int i = 0; i < 12; i++) ad[i] = (float)i + 0.25f;
    jn_tensor *at = jn_tensor_alias(a);
    at->shape[0] = 4; at->shape[1] = 3; at->strides[0] = 1; at->strides[1] = 4;
    CHECK(!jn_is_contiguous(at));
    int64_t sh2[2] = {4, 3};
    jn_tensor *b = jn_tensor_new(JN_I32, 2, sh2);
    CHECK(jn_copy_into(b, at) == JN_OK);
    int32_t *bd = (int32_t *)jn_data(b);
    int ok = 1;
    for (int i = 0; i < 4; i++)
        for (int j = 0; j < 3; j++) ok &= bd[i * 3 + j] == j * 4 + i;
    CHECK(ok);
    /* broadcasting a row into a matrix */
    int64_t rs[1] = {3};
    jn_tensor *row = jn_tensor_new(JN_F64, 1, rs);
    for (int j = 0; j < 3; j++) ((double *)jn_data(row))[j] = j;
    jn_tensor *m = jn_tensor_new(JN_F16, 2, sh2);
    CHECK(jn_copy_into(m, row) == JN_OK);
    CHECK(jn_f16_to_f32(((uint16_t *)jn_data(m))[3 * 3 + 2]) == 2.0f);
    /* incompatible shapes are an error, not a crash */
    CHECK(jn_copy_into(row, m) == JN_ERR_SHAPE && strstr(jn_errmsg(), "[4, 3]"));
    /* views share storage and its version */
    CHECK(at->storage == a->storage);
    jn_tensor_decref(a); jn_tensor_decref(at); jn_tensor_decref(b);
    jn_tensor_decref(row); jn_tensor_decref(m);
}

static void add_range(int64_t b, int64_t e, void *ctx) {
    int64_t *acc = ctx;
    int64_t s = 0;
    for (int64_t i = b; i < e; i++) s += i;
    __atomic_fetch_add(acc, s, __ATOMIC_RELAXED);
}

static void count_loop(char **p, const int64_t *s, int64_t n, void *ctx) {
    (void)p; (void)s;
    __atomic_fetch_add((int64_t *)ctx, n, __ATOMIC_RELAXED);
}

/* per chunk: run off the calling thread, and then with SIGINT blocked */
typedef struct {
    pthread_t caller;
    int off, off_blocked;
} mask_seen;

static void note_mask(int64_t b, int64_t e, void *ctx) {
    (void)b, (void)e;
    mask_seen *m = ctx;
    usleep(20000); /* long enough that a worker claims a chunk too */
    if (pthread_equal(pthread_self(), m->caller)) return;
    sigset_t cur;
    pthread_sigmask(SIG_BLOCK, NULL, &cur);
    __atomic_fetch_add(&m->off, 1, __ATOMIC_RELAXED);
    __atomic_fetch_add(&m->off_blocked, sigismember(&cur, SIGINT) && sigismember(&cur, SIGTERM), __ATOMIC_RELAXED);
}

static void test_threads(void) {
    /* workers never take a signal sent to the process (jn_thread.h) */
    mask_seen ms = {pthread_self(), 0, 0};
    for (int tries = 0; tries < 20 && !ms.off && jn_num_threads() > 1; tries++)
        jn_parallel_for(8, 1, note_mask, &ms);
    CHECK(jn_num_threads() < 2 || ms.off > 0);
    CHECK(ms.off_blocked == ms.off);
    int64_t acc = 0;
    jn_parallel_for(1000003, 1000, add_range, &acc);
    CHECK(acc == (int64_t)1000003 * 1000002 / 2);
    acc = 0;
    jn_parallel_for(0, 1, add_range, &acc);
    CHECK(acc == 0);
    /* the iterator visits every element exactly once, in parallel too */
    int64_t shape[3] = {64, 33, 65};
    int64_t st[1][JN_MAX_DIMS] = {{0, 0, 0}};
    char *base[1] = {NULL};
    int64_t n = 0;
    jn_nditer(1, base, 3, shape, st, count_loop, &n, 1);
    CHECK(n == 64 * 33 * 65);
    shape[1] = 0;
    n = 0;
    jn_nditer(1, base, 3, shape, st, count_loop, &n, 1);
    CHECK(n == 0);
}

static void test_dispatch_errors(void) {
    jn_attrs a;
    memset(&a, 0, sizeof a);
    jn_tensor *out[JN_MAX_OUTS];
    CHECK(jn_dispatch(JN_OP_add, 1, NULL, &a, out) == JN_ERR_VALUE);
    CHECK(strstr(jn_errmsg(), "add") != NULL);
    CHECK(jn_dispatch((jn_op)9999, 0, NULL, &a, out) == JN_ERR_VALUE);
    int64_t big[1] = {-5};
    CHECK(jn_tensor_new(JN_F32, 1, big) == NULL && strstr(jn_errmsg(), "negative"));
}

/* jn_rt_dispatch_cached: a hit gives jn_dispatch's metadata; a changed
 * input shape or attribute infers again (and raises as jn_dispatch). */
static void test_dispatch_cached(void) {
    jn_rt_infer_cache c;
    memset(&c, 0, sizeof c);
    jn_attrs a;
    memset(&a, 0, sizeof a);
    a.a[0].f = 1.0; /* add's alpha */
    int64_t s23[2] = {2, 3}, s3[1] = {3}, s4[1] = {4};
    jn_tensor *x = jn_tensor_zeros(JN_F32, 2, s23), *y = jn_tensor_zeros(JN_F32, 1, s3),
              *z = jn_tensor_zeros(JN_F32, 1, s4), *in[2] = {x, y}, *out[JN_MAX_OUTS];
    for (int k = 0; k < 2; k++) { /* infer, then hit */
        CHECK(jn_rt_dispatch_cached(JN_OP_add, 2, in, &a, out, &c) == JN_OK && c.valid);
        CHECK(out[0]->ndim == 2 && out[0]->shape[0] == 2 && out[0]->shape[1] == 3 && out[0]->dtype == JN_F32);
        jn_tensor_decref(out[0]);
    }
    in[1] = z; /* [2,3] + [4]: jn_dispatch's shape error, not the cached shape */
    CHECK(jn_rt_dispatch_cached(JN_OP_add, 2, in, &a, out, &c) == JN_ERR_SHAPE);
    in[1] = x;
    CHECK(jn_rt_dispatch_cached(JN_OP_add, 2, in, &a, out, &c) == JN_OK && out[0]->shape[1] == 3);
    jn_tensor_decref(out[0]);
    jn_tensor *xi = jn_tensor_zeros(JN_I64, 2, s23), *ii[2] = {xi, xi};
    CHECK(jn_rt_dispatch_cached(JN_OP_add, 2, ii, &a, out, &c) == JN_OK && out[0]->dtype == JN_I64);
    jn_tensor_decref(out[0]);
    a.a[0].f = 0.5; /* a fractional alpha on integers: an error, though the inputs are as cached */
    CHECK(jn_rt_dispatch_cached(JN_OP_add, 2, ii, &a, out, &c) != JN_OK);
    jn_tensor_decref(x), jn_tensor_decref(y), jn_tensor_decref(z), jn_tensor_decref(xi);
}

/* The block cache (tensor.c): a freed large buffer is reused by the next
 * one of its size class, or of a class up to 2x smaller, and goes back to
 * its own class; jn_rt_block_cache_release empties it. */
static void test_block_cache(void) {
    jn_rt_block_cache_release();
    int64_t big = 300000, small = 200000; /* floats: 1.2 MB, and 0.8 MB (within 2x) */
    jn_tensor *a = jn_tensor_new(JN_F32, 1, &big);
    CHECK(a != NULL);
    if (!a) return;
    void *pa = a->storage->data;
    jn_tensor_decref(a);
    jn_tensor *b = jn_tensor_new(JN_F32, 1, &small); /* its class is empty: takes the larger block */
    CHECK(b && b->storage->data == pa);
    jn_tensor_decref(b);
    jn_tensor *c = jn_tensor_new(JN_F32, 1, &big); /* the block went back to its own class */
    CHECK(c && c->storage->data == pa);
    if (c) jn_tensor_decref(c);
    CHECK(jn_rt_block_cache_release() >= (size_t)big * 4); /* it was cached, and is given back */
    CHECK(jn_rt_block_cache_release() == 0);
}

/* Small blocks above the C library's per-thread cache sizes (inline
 * storages, autograd nodes) are classed by size and reused within a class, up to the thread's byte budget; a block freed on
 * another thread lands in that thread's cache, freed when it exits.  Under
 * AddressSanitizer every block is malloc's own (class -1). */
static void *free_on_thread(void *p) {
    void **b = p;
    jn_rt_small_free(b[0], (int)(intptr_t)b[1]);
    return NULL;
}

static void test_small_blocks(void) {
    int c1, c2, c3;
    char *a = jn_rt_small_alloc(1100, &c1);
    CHECK(a != NULL);
    if (!a) return;
    memset(a, 0xab, 1100);
    jn_rt_small_free(a, c1);
    char *b = jn_rt_small_alloc(1150, &c2);   /* the same 1152-byte class */
    char *big = jn_rt_small_alloc(9000, &c3); /* above the classes: malloc's */
    CHECK(b != NULL && big != NULL && c3 == -1);
#if defined(__SANITIZE_ADDRESS__)
    CHECK(c1 == -1 && c2 == -1);
#else
    CHECK(c1 == 17 && c2 == 17 && b == a); /* LIFO within the class */
    int c4, c5;
    char *d = jn_rt_small_alloc(1153, &c4);  /* the next class: another block */
    CHECK(d != NULL && c4 == 18 && d != b);
    jn_rt_small_free(d, c4);
    char *e = jn_rt_small_alloc(100, &c5);   /* the C library's own size: not classed */
    CHECK(e != NULL && c5 == -1);
    jn_rt_small_free(e, c5);
#endif
    memset(big, 0, 9000);
    jn_rt_small_free(big, c3);
    /* more than the budget (4 MB) freed at once: the rest goes to malloc (the
     * overflow path runs; what it keeps is not observable from here) */
    enum { N = 1200 };
    static void *v[N];
    static int cl[N];
    for (int i = 0; i < N; i++) v[i] = jn_rt_small_alloc(8000, &cl[i]);
    for (int i = 0; i < N; i++) jn_rt_small_free(v[i], cl[i]);
    /* freed on another thread, which exits (its cache goes with it) */
    void *arg[2] = {b, (void *)(intptr_t)c2};
    pthread_t th;
    CHECK(pthread_create(&th, NULL, free_on_thread, arg) == 0 && pthread_join(th, NULL) == 0);
    /* storages with their data inline come from the classes too */
    int64_t n = 300; /* 1200 bytes: above the C library's per-thread cache */
    jn_tensor *t = jn_tensor_new(JN_F32, 1, &n);
    CHECK(t && t->storage->owns_data == 2 && ((uintptr_t)t->storage->data & 63) == 0);
    if (t) {
        memset(t->storage->data, 1, 1200);
        jn_tensor_decref(t);
    }
}

/* Headers come back from the per-thread cache as new ones: nothing of the
 * header they were before (autograd slot, Python wrapper, capture record,
 * view and number flags, strides, offset) survives, and ids stay unique. */
static void test_header_reuse(void) {
    enum { N = 2100 }; /* more than the cache keeps */
    static jn_tensor *t[N];
    int64_t shape[2] = {3, 5};
    for (int i = 0; i < N; i++) {
        t[i] = jn_tensor_new(JN_F32, 2, shape);
        CHECK(t[i] != NULL);
        if (!t[i]) return;
        t[i]->pyobj = t[i];
        t[i]->ext = t[i];
        t[i]->wrapped_number = t[i]->is_view = 1;
        t[i]->offset = 7;
        t[i]->strides[0] = 99;
    }
    int64_t last = t[N - 1]->id;
    for (int i = 0; i < N; i++) {
        t[i]->pyobj = t[i]->ext = NULL; /* (nobody frees a header holding them) */
        jn_tensor_decref(t[i]);
    }
    int bad = 0;
    int64_t one = 4;
    for (int i = 0; i < N; i++) {
        t[i] = jn_tensor_new(JN_I64, 1, &one);
        if (!t[i]) return;
        bad += t[i]->refcnt != 1 || t[i]->autograd || t[i]->pyobj || t[i]->ext || t[i]->wrapped_number ||
               t[i]->is_view || t[i]->offset || t[i]->strides[0] != 1 || t[i]->ndim != 1 || t[i]->shape[0] != 4 ||
               t[i]->dtype != JN_I64 || t[i]->id <= last;
    }
    CHECK(bad == 0);
    for (int i = 0; i < N; i++) jn_tensor_decref(t[i]);
}

int main(void) {
    test_header_reuse();
    test_promotion();
    test_half();
    test_optable();
    test_philox();
    test_copy_and_iter();
    test_threads();
    test_dispatch_errors();
    test_dispatch_cached();
    test_block_cache();
    test_small_blocks();
    JT_DONE();
}
