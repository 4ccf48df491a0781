/* test_exec_cuda.c -- the device side of the executor for generated
 * kernels (exec/exec_cuda.c).
 *
 * Without a GPU (here):
 *   image     jn_ex_cuda_pick_image, the pure choice between a bundle's
 *             cubin, its PTX and a refusal naming bundle target and device
 *             arch, over same-arch, newer-minor, newer-major, older and
 *             malformed cases;
 *   dkcall    jn_ex_dkcall_from against the jn_kcall the CPU executor
 *             builds: for every generated kernel call of every golden IR
 *             module and every emitter pattern (tests/c/jn_test_emit.h),
 *             run through the executor with compiled C kernels and a
 *             kernel-call hook, the device struct holds the same operands,
 *             coalesced shape, nred, byte strides (operand-major -> [k][d])
 *             and scalars, zero elsewhere; ABI limits refused;
 *   driver    no driver where $JANUS_LIBCUDA points (and, with no real
 *             driver, the toolkit's stub library): a clear error.
 * With a GPU (skipped here, naming what was not run): every golden
 * module's CUDA kernels compiled by NVRTC for the device, loaded, and run
 * call by call against the CPU executor (each CPU kernel call mirrored:
 * operands uploaded into the graph's device arena, the CUDA kernel
 * launched with the converted jn_dkcall, outputs compared after the CPU
 * kernel ran: bitwise or, for float results of libm functions and
 * reductions, within 1e-5 relative); a module of another hash refused.
 * Without one, the same harness runs through tests/c/fake_libcuda.c, a
 * driver whose "device" is the host and whose "cubins" are the generated
 * C kernels: every call of exec_cuda.c, the uploads, arena, launches and
 * downloads are exercised (results then equal by construction), plus the
 * refusals and failures a driver can report.
 */
#include <dlfcn.h>

#include "jn_backend.h"
#include "jn_cg.h"
#include "jn_exec.h"
#include "jn_settings.h"
#include "jn_test.h"
#include "jn_test_emit.h"
#include "jn_test_exec.h"
#include "jn_test_hostfn.h"

static int no_cc;

/* ---------------------------------------------------------- image choice */
static void test_pick_image(void) {
    static const struct {
        const char *target;
        int cubin, ptx, major, minor, want; /* want: an image, or -1 refused */
        const char *says;
    } c[] = {
        {"cuda:sm_90", 1, 1, 9, 0, JN_RT_CUDA_IMAGE_CUBIN, NULL},
        {"cuda:sm_80", 1, 1, 8, 6, JN_RT_CUDA_IMAGE_CUBIN, NULL},  /* 8.6 runs 8.0 machine code */
        {"cuda:sm_90", 1, 1, 10, 0, JN_RT_CUDA_IMAGE_PTX, NULL},   /* newer major: the driver JITs */
        {"cuda:sm_90", 0, 1, 9, 0, JN_RT_CUDA_IMAGE_PTX, NULL},
        {"cuda:sm_100", 1, 1, 10, 0, JN_RT_CUDA_IMAGE_CUBIN, NULL},
        {"cuda:sm_90a", 1, 0, 9, 0, JN_RT_CUDA_IMAGE_CUBIN, NULL},
        {"cuda:sm_90", 1, 0, 10, 0, -1, "its cubin runs on sm_90 to sm_99 only"},
        {"cuda:sm_86", 1, 1, 8, 0, -1, "its PTX needs sm_86 or newer"},
        {"cuda:sm_90", 1, 1, 8, 0, -1, "--target cuda:sm_80"},
        {"cuda:sm_120", 0, 1, 10, 0, -1, "cannot run on"},
    };
    for (size_t i = 0; i < sizeof c / sizeof c[0]; i++) {
        int img = -7;
        jn_status st = jn_ex_cuda_pick_image(c[i].target, c[i].cubin, c[i].ptx, c[i].major, c[i].minor, "Test GPU", &img);
        if (c[i].want >= 0) {
            CHECK(st == JN_OK && img == c[i].want);
        } else {
            CHECK(st == JN_ERR_UNSUPPORTED && img == JN_RT_CUDA_IMAGE_NONE);
            CHECK(has(c[i].target) && has("Test GPU") && has(c[i].says));
        }
        if ((c[i].want >= 0) != (st == JN_OK)) fprintf(stderr, "  case %zu (%s)\n", i, c[i].target);
    }
    int img;
    CHECK(jn_ex_cuda_pick_image("cpu", 1, 1, 9, 0, NULL, &img) == JN_ERR_VALUE && has("not a CUDA target") &&
          has("cuda:sm_90"));
    CHECK(jn_ex_cuda_pick_image("cuda:sm_9", 1, 1, 9, 0, NULL, &img) == JN_ERR_VALUE);
    CHECK(jn_ex_cuda_pick_image(NULL, 1, 1, 9, 0, NULL, &img) == JN_ERR_VALUE);
    CHECK(jn_ex_cuda_pick_image("cuda:sm_90", 0, 0, 9, 0, NULL, &img) == JN_ERR_VALUE && has("no CUDA kernels"));
}

/* ------------------------------------------------------ jn_dkcall layout */
/* d is c converted: every used field equal, every unused one zero. */
static int same_layout(const jn_kcall *c, int32_t nscalar, const jn_dkcall *d) {
    int ok = d->nops == c->nops && d->ndim == c->ndim && d->nred == c->nred && d->pad_ == 0;
    for (int k = 0; k < JN_DK_MAX_OPS; k++) {
        ok &= k < c->nops ? d->data[k] == c->data[k] : d->data[k] == NULL;
        for (int i = 0; i < JN_MAX_DIMS; i++)
            ok &= d->strides[k][i] == (k < c->nops && i < c->ndim ? c->strides[k * c->ndim + i] : 0);
    }
    for (int i = 0; i < JN_MAX_DIMS; i++) ok &= d->shape[i] == (i < c->ndim ? c->shape[i] : 0);
    for (int j = 0; j < JN_DK_MAX_SCALARS; j++) ok &= d->scalars[j] == (j < nscalar ? c->scalars[j] : 0.0);
    return ok;
}

typedef struct {
    const char *what;
    jn_cg_kernel_io *io; /* per kernel of the graph */
    int calls, after, bad;
} kcheck;

static void check_hook(void *ctx, int32_t k, const jn_kcall *c, int after) {
    kcheck *h = ctx;
    if (after) {
        h->after++;
        return;
    }
    h->calls++;
    jn_dkcall d;
    memset(&d, 0x5a, sizeof d); /* garbage: the conversion must clear what it does not set */
    int ok = c->nops == h->io[k].ncall && jn_ex_dkcall_from(c, h->io[k].nscalar, &d) == JN_OK &&
             same_layout(c, h->io[k].nscalar, &d);
    if (!ok && !h->bad++) fprintf(stderr, "%s kernel K%d: the device call differs from the CPU call\n", h->what, k);
}

/* Kernel io of every kernel of g (NULL on failure). */
static jn_cg_kernel_io *describe_all(const jn_ir_graph *g) {
    jn_cg_kernel_io *io = calloc((size_t)g->nkernels + 1, sizeof *io);
    for (int32_t k = 0; io && k < g->nkernels; k++) CHECK(jn_cg_kernel_describe(g, k, &io[k]) == JN_OK);
    return io;
}

static void free_io(const jn_ir_graph *g, jn_cg_kernel_io *io) {
    for (int32_t k = 0; io && k < g->nkernels; k++) jn_cg_kernel_io_free(&io[k]);
    free(io);
}

static void free_outs(jn_tensor **o, int32_t n) {
    for (int32_t i = 0; o && i < n; i++)
        if (o[i]) jn_tensor_decref(o[i]);
    free(o);
}

/* Graph gi of m through the executor with lib and the hook; 1 if it ran. */
static int run_with(const jn_ir_module *m, int32_t gi, const jn_ex_lib *lib, const int64_t *sv,
                    jn_ex_kcall_hook hook, void *ctx, jn_ex_stats *st, const char *what) {
    const jn_ir_graph *g = m->graphs[gi];
    jn_tensor **outs = calloc((size_t)g->noutputs + 1, sizeof *outs);
    jn_status s = jt_run_graph_hooked(m, gi, lib, 0, sv, 4242, outs, st, hook, ctx);
    if (s) fprintf(stderr, "%s graph %s: %s\n", what, g->name, jn_errmsg());
    free_outs(outs, g->noutputs);
    return s == JN_OK;
}

/* Symbols at the middle of their ranges. */
static int64_t *mid_syms(const jn_ir_graph *g) {
    int64_t *sv = calloc((size_t)g->nsyms + 1, sizeof *sv);
    for (int32_t s = 0; sv && s < g->nsyms; s++) sv[s] = g->syms[s].lo + (g->syms[s].hi - g->syms[s].lo) / 2;
    return sv;
}

/* mid_syms when graph gi runs op by op on synthetic inputs there, else
 * NULL (counted): symbols fitted apart that a real run relates (a slice's
 * end is its start plus its length) may not hold together at midpoints. */
static int unrunnable;
static int64_t *runnable_mid_syms(const jn_ir_module *m, int32_t gi) {
    const jn_ir_graph *g = m->graphs[gi];
    int64_t *sv = mid_syms(g);
    jn_tensor **outs = calloc((size_t)g->noutputs + 1, sizeof *outs);
    if (sv && outs && jt_run_graph(m, gi, NULL, JN_EX_EAGER, sv, 4242, outs, NULL) != JN_OK) {
        free(sv);
        sv = NULL;
        unrunnable++;
    }
    free_outs(outs, g->noutputs);
    return sv;
}

static int total_calls;

/* Every generated kernel call of every graph of m (optimized, with lib). */
static void check_module_calls(const jn_ir_module *m, const jn_ex_lib *lib, const int64_t *syms, const char *what) {
    for (int32_t gi = 0; gi < m->ngraphs; gi++) {
        const jn_ir_graph *g = m->graphs[gi];
        int64_t *sv = syms ? NULL : mid_syms(g);
        kcheck h = {.what = what, .io = describe_all(g)};
        jn_ex_stats st = {0};
        CHECK(h.io && run_with(m, gi, lib, syms ? syms : sv, check_hook, &h, &st, what));
        CHECK(h.bad == 0 && h.calls == h.after && h.calls == st.kernels_gen);
        total_calls += h.calls;
        free_io(g, h.io);
        free(sv);
    }
}

/* For each .ir file of tests/golden and tests/c/data, optimized: fn(m, name). */
typedef struct {
    void (*fn)(const jn_ir_module *, const char *);
} golden_fn;
static void each_golden_cb(const jn_ir_module *m, const char *name, void *ctx) { ((golden_fn *)ctx)->fn(m, name); }
static int each_golden(void (*fn)(const jn_ir_module *, const char *)) {
    golden_fn w = {fn};
    return jt_each_ir("golden", each_golden_cb, &w) + jt_each_ir("c/data", each_golden_cb, &w);
}

static void test_dkcall(void) {
    /* limits of the device ABI */
    char *data[JN_DK_MAX_OPS + 1] = {0};
    int64_t shape[JN_MAX_DIMS] = {3, 4}, strides[(JN_DK_MAX_OPS + 1) * 2] = {0};
    double sc[JN_DK_MAX_SCALARS + 1] = {0};
    jn_kcall c = {.nops = 2, .ndim = 2, .nred = 1, .data = data, .shape = shape, .strides = strides, .scalars = sc};
    jn_dkcall d;
    strides[0] = 16, strides[1] = 4, strides[2] = 4, strides[3] = 0; /* operand 1 broadcasts over dim 1 */
    sc[0] = 0.5;
    CHECK(jn_ex_dkcall_from(&c, 1, &d) == JN_OK && same_layout(&c, 1, &d));
    CHECK(d.strides[0][0] == 16 && d.strides[0][1] == 4 && d.strides[1][0] == 4 && d.strides[1][1] == 0);
    c.nops = JN_DK_MAX_OPS + 1;
    CHECK(jn_ex_dkcall_from(&c, 1, &d) == JN_ERR_UNSUPPORTED && has("operands") && has("64"));
    c.nops = 2;
    CHECK(jn_ex_dkcall_from(&c, JN_DK_MAX_SCALARS + 1, &d) == JN_ERR_UNSUPPORTED && has("scalars"));
    c.nred = 3;
    CHECK(jn_ex_dkcall_from(&c, 0, &d) == JN_ERR_VALUE && has("malformed"));
    c.nred = 0, c.ndim = JN_MAX_DIMS + 1;
    CHECK(jn_ex_dkcall_from(&c, 0, &d) == JN_ERR_VALUE);

    /* the calls the CPU executor makes for the emitter patterns (the
     * golden modules': test_golden) */
    int before = total_calls;
    for (size_t i = 0; i < sizeof cases / sizeof cases[0] && !no_cc; i++) {
        jn_ir_module *m = parse_body(cases[i].body);
        CHECK(m && run_passes(m, "fuse,select"));
        if (!m) continue;
        jn_ex_lib *lib = jt_compile_lib(m, cases[i].name, &no_cc);
        CHECK(lib != NULL || no_cc);
        if (lib) check_module_calls(m, lib, cases[i].syms, cases[i].name);
        jn_ex_lib_close(lib);
        jn_ir_module_free(m);
    }
    if (no_cc) {
        printf("SKIPPED: no C compiler -- not run: jn_dkcall against the CPU executor's jn_kcall\n");
        return;
    }
    printf("  jn_dkcall == jn_kcall: %zu emitter patterns (%d kernel calls)\n", sizeof cases / sizeof cases[0],
           total_calls - before);
    CHECK(total_calls > before);
}

/* ----------------------------------------------------------- the driver */
static int have_gpu;
static int gpu_major, gpu_minor;
static char gpu_name[256];

static void test_driver(void) {
    char *old = jn_setting_raw(JN_S_LIBCUDA) ? strdup(jn_setting_raw(JN_S_LIBCUDA)) : NULL;
    jn_ex_dlib *l = (jn_ex_dlib *)&l; /* must come back NULL */
    setenv("JANUS_LIBCUDA", "/nonexistent/libcuda.so.1", 1);
    jn_status st = jn_ex_dlib_open("x", 1, "x", 1, "cuda:sm_90", 1, "test bundle", 0, &l);
    CHECK(st == JN_ERR_UNSUPPORTED && l == NULL && has("CUDA driver was not found") &&
          has("/nonexistent/libcuda.so.1") && has("--target cpu"));
    int ma, mi;
    CHECK(jn_ex_cuda_device(0, &ma, &mi, NULL, 0) == JN_ERR_UNSUPPORTED);
    if (old) setenv("JANUS_LIBCUDA", old, 1);
    else unsetenv("JANUS_LIBCUDA");
    st = jn_ex_cuda_device(0, &gpu_major, &gpu_minor, gpu_name, sizeof gpu_name);
    have_gpu = st == JN_OK;
    char why[600];
    snprintf(why, sizeof why, "%s", jn_errmsg());
    if (!have_gpu) {
        /* the toolkit's stub: loads, but cuInit always fails (only tried
         * without a real driver: the stub has the driver's soname) */
        const char *stub = "/usr/local/cuda/lib64/stubs/libcuda.so";
        FILE *f = fopen(stub, "rb");
        if (f) {
            fclose(f);
            setenv("JANUS_LIBCUDA", stub, 1);
            st = jn_ex_dlib_open("x", 1, "x", 1, "cuda:sm_90", 1, "test bundle", 0, &l);
            CHECK(st == JN_ERR_UNSUPPORTED && l == NULL && has(stub) &&
                  (has("stub library") || has("does not start")));
            printf("  with the toolkit's stub: %s\n", jn_errmsg());
            if (old) setenv("JANUS_LIBCUDA", old, 1);
            else unsetenv("JANUS_LIBCUDA");
        }
        printf("SKIPPED: no CUDA device (%s) -- not run: loading the golden modules' cubin/PTX on a GPU, "
               "jn_kabi_version/jn_kmodule_hash read back, every CUDA kernel against the CPU executor\n", why);
    } else {
        printf("  GPU: %s (sm_%d%d)\n", gpu_name, gpu_major, gpu_minor);
    }
    free(old);
}

/* ------------------------------------------- GPU: kernels against the CPU */
typedef struct {
    kcheck kc;     /* the layout check, on every call */
    const char *what;
    jn_ex_dlib *l; /* NULL: no device, the layout check only */
    int32_t gi;
    const jn_ir_graph *g;
    jn_cg_kernel_io *io;
    int64_t lo[JN_DK_MAX_OPS];
    size_t off[JN_DK_MAX_OPS], len[JN_DK_MAX_OPS], total;
    char *got; /* the operands after the GPU kernel, host copies */
    size_t gotcap;
    int calls, exact, close, bad, err;
} mirror;

/* Bytes operand k spans from data[k]: [lo, hi). */
static void extent(const jn_kcall *c, int k, size_t esz, int64_t *lo, int64_t *hi) {
    *lo = 0, *hi = (int64_t)esz;
    for (int d = 0; d < c->ndim; d++) {
        int64_t span = (c->shape[d] - 1) * c->strides[(size_t)k * (size_t)c->ndim + (size_t)d];
        if (c->shape[d] == 0) continue;
        if (span < 0) *lo += span;
        else *hi += span;
    }
}

static void mirror_before(mirror *h, int32_t k, const jn_kcall *c) {
    const jn_cg_kernel_io *io = &h->io[k];
    char *ddata[JN_DK_MAX_OPS];
    uint64_t base = 0;
    jn_status st = JN_OK;
    h->total = 0;
    for (int j = 0; j < c->nops; j++) {
        int64_t lo, hi;
        extent(c, j, jn_dtype_size[h->g->values[io->call[j]].dtype], &lo, &hi);
        h->lo[j] = lo;
        h->len[j] = (size_t)(hi - lo);
        h->off[j] = h->total;
        h->total += ((size_t)(hi - lo) + 255) / 256 * 256;
    }
    if (h->total > h->gotcap) {
        free(h->got);
        h->got = malloc(h->total);
        h->gotcap = h->got ? h->total : 0;
    }
    if (!h->got) st = jn_error(JN_ERR_NOMEM, "out of memory");
    if (!st) st = jn_ex_dlib_arena(h->l, h->gi, h->total, &base);
    for (int j = 0; j < c->nops && !st; j++) {
        st = jn_ex_dlib_upload(h->l, base + h->off[j], c->data[j] + h->lo[j], h->len[j]);
        ddata[j] = (char *)(uintptr_t)(base + h->off[j] - (uint64_t)h->lo[j]);
    }
    jn_kcall dc = *c;
    dc.data = ddata;
    jn_dkcall d;
    if (!st) st = jn_ex_dkcall_from(&dc, io->nscalar, &d);
    if (!st) st = jn_ex_dlib_launch(h->l, h->gi, k, &d, NULL);
    if (!st) st = jn_ex_dlib_sync(h->l);
    if (!st) st = jn_ex_dlib_download(h->l, h->got, base, h->total);
    if (st && !h->err++) fprintf(stderr, "%s graph %s kernel K%d on the GPU: %s\n", h->what, h->g->name, k, jn_errmsg());
}

/* 1 bitwise equal, 2 within tolerance, 0 differs. */
static int cmp_elem(jn_dtype dt, const char *a, const char *b) {
    size_t n = jn_dtype_size[dt];
    if (!memcmp(a, b, n)) return 1;
    double x, y, tol;
    if (dt == JN_F32) {
        float fx, fy;
        memcpy(&fx, a, 4), memcpy(&fy, b, 4);
        x = fx, y = fy, tol = 1e-5;
    } else if (dt == JN_F64) {
        memcpy(&x, a, 8), memcpy(&y, b, 8);
        tol = 1e-9;
    } else {
        return 0; /* integers and bools: exact */
    }
    if (x != x && y != y) return 1;
    return fabs(x - y) <= tol * fmax(fabs(x), fabs(y)) + tol * 1e-1 ? 2 : 0;
}

static void mirror_after(mirror *h, int32_t k, const jn_kcall *c) {
    if (h->err) return;
    const jn_cg_kernel_io *io = &h->io[k];
    int64_t total = 1;
    for (int d = 0; d < c->ndim; d++) total *= c->shape[d];
    int worst = 1;
    for (int j = io->ncall_in; j < c->nops; j++) {
        jn_dtype dt = h->g->values[io->call[j]].dtype;
        for (int64_t e = 0; e < total && worst; e++) {
            int64_t off = 0, rem = e;
            for (int d = c->ndim - 1; d >= 0; d--) {
                off += (rem % c->shape[d]) * c->strides[(size_t)j * (size_t)c->ndim + (size_t)d];
                rem /= c->shape[d];
            }
            int r = cmp_elem(dt, c->data[j] + off, h->got + h->off[j] + (size_t)(off - h->lo[j]));
            if (r == 0)
                fprintf(stderr, "%s graph %s kernel K%d: operand %d (%%%d) element %lld differs CPU vs GPU\n", h->what,
                        h->g->name, k, j, io->call[j], (long long)e);
            if (r == 0) worst = 0;
            else if (r == 2) worst = 2;
        }
    }
    h->exact += worst == 1, h->close += worst == 2, h->bad += worst == 0;
}

static void mirror_hook(void *ctx, int32_t k, const jn_kcall *c, int after) {
    mirror *h = ctx;
    check_hook(&h->kc, k, c, after);
    if (!h->l) return;
    if (after) mirror_after(h, k, c);
    else h->calls++, mirror_before(h, k, c);
}

static int gpu_calls, gpu_exact, gpu_close, gpu_modules;
static int fake_driver; /* the "GPU" is tests/c/fake_libcuda.c: cubins are C kernel objects */
static int use_device;  /* the golden modules run on the device too */

/* ------------------------------------ whole graphs on the device
 * Graph gi run by the device executor (jn_ex_new_on with
 * jn_ex_cuda_graphs: generated kernels launched from l, every other node
 * through backend be) against the CPU executor with compiled C kernels on
 * the same inputs.  The test's device table wraps the real one and checks
 * that every buffer a node writes and every operand a kernel is launched
 * with lies in memory the device table handed out (its buffers, the
 * module's arena) or in an input's storage: no host allocation slips in.
 * With the fake driver the backend is the CPU kernels' table over the
 * fake's host "device" memory (bitwise: checks the plumbing, not CUDA);
 * with a GPU it is the eager CUDA backend (inputs uploaded, outputs
 * downloaded; floats within 1e-5 of the CPU output's largest element:
 * jt_close_norm). */
typedef struct {
    const jn_ex_device *in;
    jn_ex_device dev;
    jn_tensor *made[8192]; /* held: their memory stays theirs while the run goes on */
    int nmade;
    jn_tensor *const *inputs;
    int32_t ninputs;
    int foreign, nodes, launches;
} dtrack;

static int dt_known(const dtrack *t, const char *p, size_t n) {
    for (int i = 0; i < t->nmade; i++) {
        const char *d = t->made[i]->storage->data;
        if (p >= d && p + n <= d + t->made[i]->storage->nbytes) return 1;
    }
    for (int32_t i = 0; i < t->ninputs; i++) {
        const jn_storage *st = t->inputs[i] ? t->inputs[i]->storage : NULL;
        if (st && st->data && p >= (const char *)st->data && p + n <= (const char *)st->data + st->nbytes) return 1;
    }
    return 0;
}
static void dt_note(dtrack *t, jn_tensor *x) {
    if (x && t->nmade < (int)(sizeof t->made / sizeof t->made[0])) jn_tensor_incref(t->made[t->nmade++] = x);
}
static void dt_free(dtrack *t) {
    for (int i = 0; t && i < t->nmade; i++) jn_tensor_decref(t->made[i]);
    free(t);
}
static int dt_supports(void *ctx, jn_op op) { dtrack *t = ctx; return t->in->supports(t->in->ctx, op); }
static jn_status dt_node(void *ctx, jn_op op, int nin, jn_tensor *const *in, const jn_attrs *a, jn_tensor *const *out) {
    dtrack *t = ctx;
    t->nodes++;
    for (int j = 0; j < jn_op_info(op)->nout; j++)
        if (!(jn_op_info(op)->flags & JN_F_VIEW) && jn_numel(out[j]) > 0 && !dt_known(t, jn_data(out[j]), jn_elsize(out[j]))) {
            if (!t->foreign++) fprintf(stderr, "device executor: %s writes output %d into host memory\n", jn_op_info(op)->name, j);
        }
    return t->in->node(t->in->ctx, op, nin, in, a, out);
}
static jn_tensor *dt_tensor_new(void *ctx, const jn_meta *m) {
    dtrack *t = ctx;
    jn_tensor *x = t->in->tensor_new(t->in->ctx, m);
    dt_note(t, x);
    return x;
}
static jn_status dt_copy(void *ctx, jn_tensor *dst, const jn_tensor *src) { dtrack *t = ctx; return t->in->copy(t->in->ctx, dst, src); }
static jn_status dt_arena(void *ctx, int32_t gi, size_t bytes, jn_tensor **out) {
    dtrack *t = ctx;
    jn_status s = t->in->arena(t->in->ctx, gi, bytes, out);
    if (!s) dt_note(t, *out);
    return s;
}
static int dt_has_kernel(void *ctx, int32_t gi, int32_t k) { dtrack *t = ctx; return t->in->has_kernel(t->in->ctx, gi, k); }
static jn_status dt_launch(void *ctx, int32_t gi, int32_t k, const jn_kcall *c, int32_t nscalar) {
    dtrack *t = ctx;
    t->launches++;
    for (int j = 0; j < c->nops; j++)
        if (!dt_known(t, c->data[j], 1) && !t->foreign++)
            fprintf(stderr, "device executor: kernel K%d operand %d is not device memory\n", k, j);
    return t->in->launch(t->in->ctx, gi, k, c, nscalar);
}
static jn_status dt_begin(void *ctx, int32_t gi) { dtrack *t = ctx; return t->in->begin(t->in->ctx, gi); }
static jn_status dt_end(void *ctx, int32_t gi, jn_status s) { dtrack *t = ctx; return t->in->end(t->in->ctx, gi, s); }
static void dt_init(dtrack *t, const jn_ex_device *in) {
    memset(t, 0, sizeof *t);
    t->in = in;
    t->dev = *in;
    t->dev.ctx = t, t->dev.supports = dt_supports, t->dev.node = dt_node, t->dev.tensor_new = dt_tensor_new;
    t->dev.copy = dt_copy, t->dev.arena = dt_arena, t->dev.has_kernel = dt_has_kernel, t->dev.launch = dt_launch;
    t->dev.begin = in->begin ? dt_begin : NULL, t->dev.end = in->end ? dt_end : NULL;
}

static int graphs_run, graphs_outputs, graphs_exact, graphs_close, graphs_skipped;
static int64_t graphs_launches, graphs_nodes;
static const jn_rt_backend *graph_backend; /* the fake's host table, or the eager CUDA backend */
typedef int (*CUresult_fn)(void *stream, void (*fn)(void *), void *data);
static int graph_stream; /* the fake's stream handle: its address */

/* Inputs (jn_ex_make_inputs, seed) on the backend's device. */
static jn_status device_inputs(const jn_ir_graph *g, const int64_t *sv, jn_tensor **host, jn_tensor **dev) {
    jn_status s = jn_ex_make_inputs(g, sv, 4242, host);
    for (int32_t i = 0; i < g->ninputs && s == JN_OK; i++) {
        jn_ir_input_kind k = g->inputs[i].kind;
        int tensor = k == JN_IR_IN_STATE || k == JN_IR_IN_HOST || k == JN_IR_IN_CARRY;
        dev[i] = tensor ? jn_rt_to_device(host[i], graph_backend->device, 1) : host[i];
        if (!tensor) jn_tensor_incref(host[i]);
        if (!dev[i]) s = jn_error(JN_ERR_NOMEM, "input %d to the device: %s", i, jn_errmsg());
    }
    return s;
}

static void graph_on_device(const jn_ir_module *m, int32_t gi, const jn_ex_lib *lib, jn_ex_dlib *l, const char *name) {
    const jn_ir_graph *g = m->graphs[gi];
    int64_t *sv = runnable_mid_syms(m, gi);
    if (!sv) return;
    size_t ni = (size_t)g->ninputs + 1, no = (size_t)g->noutputs + 1;
    jn_tensor **ref = calloc(no, sizeof *ref), **hin = calloc(ni, sizeof *hin), **din = calloc(ni, sizeof *din),
              **keep = calloc(no, sizeof *keep);
    jn_ex_stats cst = {0}, dst = {0};
    jn_ex_cuda_graphs *cg = NULL;
    jn_ex_exec *x = NULL;
    dtrack *t = calloc(1, sizeof *t);
    jn_status s = sv && ref && hin && din && keep && t ? jt_run_graph(m, gi, lib, 0, sv, 4242, ref, &cst) : JN_ERR_NOMEM;
    CHECK(s == JN_OK);
    if (!s) s = device_inputs(g, sv, hin, din);
    if (!s) s = jn_ex_cuda_graphs_new(l, graph_backend, NULL, &cg);
    if (!s) {
        dt_init(t, jn_ex_cuda_graphs_device(cg));
        t->inputs = din, t->ninputs = g->ninputs;
        s = jn_ex_new_on(m, gi, NULL, &t->dev, 0, &x);
    }
    if (s == JN_ERR_UNSUPPORTED) { /* an op the backend lacks: the graph stays on the CPU */
        graphs_skipped++;
        goto done;
    }
    if (!s) s = jn_ex_run(x, din, sv, keep);
    CHECK(s == JN_OK);
    if (s) {
        fprintf(stderr, "%s graph %s on the device: %s\n", name, g->name, jn_errmsg());
        goto done;
    }
    jn_ex_last_stats(x, &dst);
    jn_ex_cuda_graphs_stats cs;
    jn_ex_cuda_graphs_get_stats(cg, &cs);
    graphs_run++;
    /* every compiled kernel launched, every other node through the node runner, all in device memory */
    CHECK(t->foreign == 0);
    CHECK(dst.kernels_gen == cst.kernels_gen && cs.launches == cst.kernels_gen && t->launches == cs.launches);
    CHECK(dst.nodes_eager == cst.nodes_eager && t->nodes == cst.nodes_eager && cs.nodes <= t->nodes);
    CHECK(cs.plain_runs == 1 && cs.captures == 0 && cs.replays == 0); /* jn_ex_run: no CUDA Graph */
    CHECK(dst.arena_bytes == cst.arena_bytes && (dst.arena_bytes == 0 || cs.arenas == 1));
    graphs_launches += cs.launches, graphs_nodes += cs.nodes;
    for (int32_t i = 0, k = 0; i < g->noutputs; i++) {
        jn_tensor *o = g->outputs[i].kind == JN_IR_OUT_KEEP ? keep[k++] : din[g->outputs[i].state];
        jn_tensor *h = jn_rt_to_device(o, JN_CPU, 1);
        int r = h && jt_same(ref[i], h, 1, 0) ? 1 : h && !fake_driver && jt_close_norm(ref[i], h, 1e-5) ? 2 : 0;
        CHECK(r != 0);
        if (!r) {
            double wa = 0, wx = 0, wy = 0; /* the worst element, for telling rounding from a wrong result */
            int64_t wk = -1, n = h && h->dtype == ref[i]->dtype && jn_numel(h) == jn_numel(ref[i]) ? jn_numel(h) : 0;
            for (int64_t e = 0; e < n; e++) {
                double cx = jt_elem(ref[i], e), gy = jt_elem(h, e), d = fabs(cx - gy);
                if (d > wa || (d != d && wk < 0)) wa = d, wx = cx, wy = gy, wk = e;
            }
            fprintf(stderr, "%s graph %s output %d (%%%d) differs CPU vs device: worst element %lld of %lld: %.9g vs %.9g\n",
                    name, g->name, i, g->outputs[i].value, (long long)wk, (long long)n, wx, wy);
        }
        graphs_outputs++, graphs_exact += r == 1, graphs_close += r == 2;
        jn_tensor_decref(h);
    }
done:
    jn_ex_free(x);
    jn_ex_cuda_graphs_free(cg);
    for (int32_t i = 0; i < g->noutputs; i++) {
        if (ref && ref[i]) jn_tensor_decref(ref[i]);
        if (keep && keep[i]) jn_tensor_decref(keep[i]);
    }
    for (int32_t i = 0; i < g->ninputs; i++) {
        if (hin && hin[i]) jn_tensor_decref(hin[i]);
        if (din && din[i]) jn_tensor_decref(din[i]);
    }
    free(ref), free(hin), free(din), free(keep), free(sv);
    dt_free(t);
}

/* ------------------------------------ whole graphs as CUDA Graphs
 * jn_ex_cuda_graphs_run on the fake driver, library nodes and copies run
 * as host functions over the CPU kernels (jn_test_hostfn.h).  Per graph: run 1 is captured and
 * instantiated, runs 2 and 3 (new input values written into the same
 * tensors) replay it, run 4 (a state input moved to a new tensor: another
 * address) is captured again and the executable graph updated; every run's
 * outputs bitwise equal to the CPU executor's on the same inputs.  Then
 * FAKE_CUDA_FAIL=capture: the run falls back to plain launches, the reason
 * kept, with the same results. */
static int cg_graphs, cg_runs, cg_outputs_equal, cg_outputs, churned;
static jn_ex_cuda_graphs_stats cg_total;

/* One run of both executors on inputs of `seed`; 1 when every output is bitwise equal. */
static int graph_run_pair(const jn_ir_module *m, int32_t gi, const jn_ex_lib *lib, jn_ex_exec *dx,
                          jn_ex_cuda_graphs *cg, const int64_t *sv, uint64_t seed, jn_tensor **din, int fresh_state) {
    const jn_ir_graph *g = m->graphs[gi];
    size_t ni = (size_t)g->ninputs + 1, no = (size_t)g->noutputs + 1;
    jn_tensor **hin = calloc(ni, sizeof *hin), **hk = calloc(no, sizeof *hk), **dk = calloc(no, sizeof *dk);
    jn_ex_exec *cx = NULL;
    int ok = 0;
    jn_status s = hin && hk && dk ? jn_ex_make_inputs(g, sv, seed, hin) : JN_ERR_NOMEM;
    for (int32_t i = 0; i < g->ninputs && !s; i++) { /* the same values into the device's tensors */
        jn_ir_input_kind k = g->inputs[i].kind;
        if (k != JN_IR_IN_STATE && k != JN_IR_IN_HOST && k != JN_IR_IN_CARRY) {
            if (din[i]) jn_tensor_decref(din[i]);
            jn_tensor_incref(din[i] = hin[i]);
        } else if (!din[i] || (fresh_state && k == JN_IR_IN_STATE)) { /* a new tensor: a new address */
            jn_tensor *old = din[i]; /* freed after: the new one cannot reuse its memory */
            if (!(din[i] = jn_rt_to_device(hin[i], graph_backend->device, 1))) s = JN_ERR_NOMEM;
            if (old) jn_tensor_decref(old);
        } else {
            s = jn_copy_into(din[i], hin[i]);
        }
    }
    if (!s) s = jn_ex_new(m, gi, lib, 0, &cx);
    if (!s) s = jn_ex_run(cx, hin, sv, hk);
    if (!s) s = jn_ex_cuda_graphs_run(cg, dx, din, sv, dk);
    if (s) fprintf(stderr, "graph %s (CUDA Graphs, seed %llu): %s\n", g->name, (unsigned long long)seed, jn_errmsg());
    if (!s) {
        ok = 1;
        for (int32_t i = 0, k = 0; i < g->noutputs; i++) {
            int keep = g->outputs[i].kind == JN_IR_OUT_KEEP;
            jn_tensor *a = keep ? hk[k] : hin[g->outputs[i].state], *b = keep ? dk[k] : din[g->outputs[i].state];
            k += keep;
            jn_tensor *bh = jn_rt_to_device(b, JN_CPU, 1); /* the GPU's result on the host */
            int same = bh && (jt_same(a, bh, 1, 0) || (!fake_driver && jt_close_norm(a, bh, 1e-5)));
            jn_tensor_decref(bh);
            if (!same) fprintf(stderr, "graph %s (CUDA Graphs, seed %llu): output %d differs\n", g->name, (unsigned long long)seed, i);
            ok &= same;
            cg_outputs++, cg_outputs_equal += same;
        }
    }
    jn_ex_free(cx);
    for (int32_t i = 0; i < g->noutputs; i++) {
        if (hk && hk[i]) jn_tensor_decref(hk[i]);
        if (dk && dk[i]) jn_tensor_decref(dk[i]);
    }
    for (int32_t i = 0; hin && i < g->ninputs; i++)
        if (hin[i]) jn_tensor_decref(hin[i]);
    free(hin), free(hk), free(dk);
    return ok;
}

static void graph_as_cuda_graph(const jn_ir_module *m, int32_t gi, const jn_ex_lib *lib, jn_ex_dlib *l) {
    const jn_ir_graph *g = m->graphs[gi];
    int64_t *sv = runnable_mid_syms(m, gi);
    if (!sv) return;
    jn_tensor **din = calloc((size_t)g->ninputs + 1, sizeof *din);
    jn_ex_cuda_graphs *cg = NULL;
    jn_ex_exec *dx = NULL;
    jn_ex_cuda_graphs_runner r = {jt_host_node, jt_host_copy, NULL};
    jn_status s = !sv || !din ? JN_ERR_NOMEM
                : fake_driver ? jn_ex_cuda_graphs_new(l, &jn_rt_cpu_backend, &graph_stream, &cg)
                              : jn_ex_cuda_graphs_new(l, NULL, NULL, &cg); /* the eager CUDA backend, its stream */
    if (!s) {
        if (fake_driver) jn_ex_cuda_graphs_set_runner(cg, &r);
        s = jn_ex_new_on(m, gi, NULL, jn_ex_cuda_graphs_device(cg), 0, &dx);
    }
    CHECK(s == JN_OK || (!fake_driver && s == JN_ERR_UNSUPPORTED)); /* an op the CUDA backend lacks: left out */
    int has_state = 0;
    for (int32_t i = 0; i < g->ninputs; i++) has_state |= g->inputs[i].kind == JN_IR_IN_STATE;
    if (!s && !fake_driver) { /* a real GPU: results right whatever ran; a capture may fail legitimately */
        jn_ex_cuda_graphs_stats st;
        for (int k = 0; k < 4; k++) CHECK(graph_run_pair(m, gi, lib, dx, cg, sv, 11 + (uint64_t)k, din, k == 3));
        jn_ex_cuda_graphs_get_stats(cg, &st);
        if (st.plain_runs) printf("  graph %s: plain launches: %s\n", g->name, st.plain_reason);
        cg_graphs++, cg_runs += 4;
        cg_total.replays += st.replays, cg_total.captures += st.captures, cg_total.updates += st.updates;
        cg_total.instantiations += st.instantiations, cg_total.plain_runs += st.plain_runs;
        s = JN_ERR_UNSUPPORTED; /* the fake's checks below do not apply */
    }
    if (!s) {
        jn_ex_cuda_graphs_stats st;
        CHECK(graph_run_pair(m, gi, lib, dx, cg, sv, 11, din, 0));
        jn_ex_cuda_graphs_get_stats(cg, &st);
        CHECK(st.captures == 1 && st.instantiations == 1 && st.replays == 0 && st.plain_runs == 0);
        if (st.plain_runs) fprintf(stderr, "graph %s: plain launches: %s\n", g->name, st.plain_reason);
        CHECK(graph_run_pair(m, gi, lib, dx, cg, sv, 12, din, 0) && graph_run_pair(m, gi, lib, dx, cg, sv, 13, din, 0));
        jn_ex_cuda_graphs_get_stats(cg, &st);
        if (!(st.captures == 1 && st.replays == 2 && st.launches == 0))
            fprintf(stderr, "graph %s: %lld captures, %lld replays, %lld launches\n", g->name, (long long)st.captures,
                    (long long)st.replays, (long long)st.launches);
        CHECK(st.captures == 1 && st.replays == 2 && st.launches == 0); /* nothing launched one by one */
        if (has_state) { /* another address: captured again, the executable graph updated (unless no
                          * captured call reads that state: then the same graph is right) */
            CHECK(graph_run_pair(m, gi, lib, dx, cg, sv, 14, din, 1));
            jn_ex_cuda_graphs_get_stats(cg, &st);
            CHECK(st.captures + st.replays == 4 && st.updates + st.instantiations == st.captures);
            cg_runs++;
            /* new addresses in every run: after three captures in a row, plain launches */
            jn_ex_cuda_graphs_stats s2;
            for (int k = 0; k < 3; k++) CHECK(graph_run_pair(m, gi, lib, dx, cg, sv, 20 + (uint64_t)k, din, 1));
            jn_ex_cuda_graphs_get_stats(cg, &s2);
            if (s2.replays == st.replays) { /* the walks differed (some captured call reads the state) */
                CHECK(s2.plain_runs >= 1 && strstr(s2.plain_reason, "in a row"));
                churned++;
            }
            cg_runs += 3;
            cg_total.launches += s2.launches; /* the plain runs' */
            st.replays = s2.replays, st.captures = s2.captures, st.updates = s2.updates;
            st.instantiations = s2.instantiations;
        }
        cg_runs += 3;
        cg_graphs++;
        cg_total.replays += st.replays, cg_total.captures += st.captures, cg_total.updates += st.updates;
        cg_total.instantiations += st.instantiations;
    }
    jn_ex_free(dx);
    jn_ex_cuda_graphs_free(cg);
    dx = NULL, cg = NULL;
    /* a capture that cannot start: plain launches, the reason kept, the same results */
    setenv("FAKE_CUDA_FAIL", "capture", 1);
    s = fake_driver ? jn_ex_cuda_graphs_new(l, &jn_rt_cpu_backend, &graph_stream, &cg) : JN_ERR_UNSUPPORTED;
    if (!s) {
        jn_ex_cuda_graphs_set_runner(cg, &r);
        s = jn_ex_new_on(m, gi, NULL, jn_ex_cuda_graphs_device(cg), 0, &dx);
    }
    if (!s) {
        jn_ex_cuda_graphs_stats st;
        CHECK(graph_run_pair(m, gi, lib, dx, cg, sv, 15, din, 0) && graph_run_pair(m, gi, lib, dx, cg, sv, 16, din, 0));
        jn_ex_cuda_graphs_get_stats(cg, &st);
        CHECK(st.captures == 0 && st.replays == 0 && st.plain_runs == 2 && strstr(st.plain_reason, "cuStreamBeginCapture"));
        cg_total.launches += st.launches;
        cg_total.plain_runs += st.plain_runs;
    }
    unsetenv("FAKE_CUDA_FAIL");
    jn_ex_free(dx);
    jn_ex_cuda_graphs_free(cg);
    dx = NULL, cg = NULL;
    /* JANUS_CUDA_GRAPHS=off, as any switch is spelled (was: only 0 turned them off): plain launches,
     * the reason names the variable; a value that is no switch is refused */
    setenv("JANUS_CUDA_GRAPHS", "off", 1);
    s = fake_driver ? jn_ex_cuda_graphs_new(l, &jn_rt_cpu_backend, &graph_stream, &cg) : JN_ERR_UNSUPPORTED;
    if (!s) {
        jn_ex_cuda_graphs_set_runner(cg, &r);
        s = jn_ex_new_on(m, gi, NULL, jn_ex_cuda_graphs_device(cg), 0, &dx);
    }
    if (!s) {
        jn_ex_cuda_graphs_stats st;
        CHECK(graph_run_pair(m, gi, lib, dx, cg, sv, 17, din, 0));
        jn_ex_cuda_graphs_get_stats(cg, &st);
        CHECK(st.captures == 0 && st.plain_runs == 1 && !strcmp(st.plain_reason, "JANUS_CUDA_GRAPHS=off"));
        cg_total.launches += st.launches;
    }
    jn_ex_free(dx);
    jn_ex_cuda_graphs_free(cg);
    cg = NULL;
    setenv("JANUS_CUDA_GRAPHS", "maybe", 1);
    if (fake_driver)
        CHECK(jn_ex_cuda_graphs_new(l, &jn_rt_cpu_backend, &graph_stream, &cg) == JN_ERR_VALUE && !cg &&
              has("JANUS_CUDA_GRAPHS=maybe"));
    unsetenv("JANUS_CUDA_GRAPHS");
    for (int32_t i = 0; din && i < g->ninputs; i++)
        if (din[i]) jn_tensor_decref(din[i]);
    free(din), free(sv);
    jt_hostfn_free();
}

/* The module's kernels for the device: a cubin (and PTX) from NVRTC, or,
 * for the fake driver, the generated C compiled to a shared object. */
static jn_status device_image(const jn_ir_module *m, const char *arch, void **cubin, size_t *cl, char **ptx, size_t *pl) {
    char *src = NULL, *log = NULL;
    size_t len = 0;
    int nk = 0;
    *cubin = NULL, *ptx = NULL, *cl = *pl = 0;
    jn_status st = fake_driver ? jn_cg_emit_c(m, &src, &len, &nk) : jn_cg_emit_cuda(m, &src, &len, &nk);
    if (!st && fake_driver) st = jn_cg_compile_so(src, len, NULL, cubin, cl, NULL);
    else if (!st) st = jn_cg_compile_cuda(src, len, arch, ptx, pl, cubin, cl, NULL, &log);
    free(src), free(log);
    return st;
}

/* One golden module: every graph through the CPU executor with compiled C
 * kernels, each kernel call's jn_dkcall checked and, with a device (real
 * or fake), mirrored onto it. */
static void golden_module(const jn_ir_module *m, const char *name) {
    char *ptx = NULL, arch[32], target[40];
    void *cubin = NULL;
    size_t pl = 0, cl = 0;
    uint64_t hash = 0;
    jn_ex_dlib *l = NULL;
    jn_ex_lib *lib = jt_compile_lib(m, name, &no_cc); /* NULL: no generated kernels */
    if (!lib) return;
    snprintf(arch, sizeof arch, "sm_%d%d", gpu_major, gpu_minor);
    snprintf(target, sizeof target, "cuda:%s", arch);
    CHECK(jn_cg_module_hash(m, &hash) == JN_OK);
    if (use_device) {
        jn_status st = device_image(m, arch, &cubin, &cl, &ptx, &pl);
        CHECK(st == JN_OK);
        if (st) fprintf(stderr, "%s: the device image for %s: %s\n", name, arch, jn_errmsg());
        /* another module's hash is refused, from the __constant__ read back */
        CHECK(st || (jn_ex_dlib_open(cubin, cl, ptx, pl, target, hash ^ 1, name, 0, &l) == JN_ERR_VALUE && !l &&
                     has("another module") && has(name)));
        if (!st) st = jn_ex_dlib_open(cubin, cl, ptx, pl, target, hash, name, 0, &l);
        CHECK(st == JN_OK);
        if (st) fprintf(stderr, "%s: %s\n", name, jn_errmsg());
        CHECK(!l || jn_ex_dlib_image(l, NULL, 0) == JN_RT_CUDA_IMAGE_CUBIN);
        gpu_modules += l != NULL;
    }
    for (int32_t gi = 0; gi < m->ngraphs; gi++) {
        const jn_ir_graph *g = m->graphs[gi];
        int64_t *sv = runnable_mid_syms(m, gi);
        if (!sv) continue;
        mirror h = {.kc = {.what = name, .io = describe_all(g)}, .what = name, .l = l, .gi = gi, .g = g};
        h.io = h.kc.io;
        jn_ex_stats st = {0};
        CHECK(h.io && run_with(m, gi, lib, sv, mirror_hook, &h, &st, name));
        CHECK(h.kc.bad == 0 && h.kc.calls == h.kc.after && h.kc.calls == st.kernels_gen);
        total_calls += h.kc.calls;
        if (l) {
            CHECK(h.err == 0 && h.bad == 0 && h.exact + h.close == h.calls && h.calls == h.kc.calls);
            for (int32_t k = 0; k < g->nkernels; k++)
                CHECK(jn_ex_dlib_has_kernel(l, gi, k) == (jn_ex_lib_kernel(lib, gi, k) != NULL));
            gpu_calls += h.calls, gpu_exact += h.exact, gpu_close += h.close;
        }
        free_io(g, h.io);
        free(h.got);
        free(sv);
    }
    for (int32_t gi = 0; l && graph_backend && gi < m->ngraphs; gi++) graph_on_device(m, gi, lib, l, name);
    for (int32_t gi = 0; l && graph_backend && (!fake_driver || jt_hostfn.launch) && gi < m->ngraphs; gi++)
        graph_as_cuda_graph(m, gi, lib, l);
    jn_ex_dlib_close(l);
    jn_ex_lib_close(lib);
    free(ptx), free(cubin);
}

static void test_golden(void) {
    if (have_gpu && !fake_driver && !jn_cg_nvrtc_available(NULL, 0))
        printf("SKIPPED: %s -- not run: the golden modules' CUDA kernels against the CPU executor\n", jn_errmsg());
    else
        use_device = have_gpu;
    if (use_device && fake_driver) graph_backend = &jn_rt_cpu_backend; /* the fake's "device" memory is host memory */
    else if (use_device && jn_cuda_init() == JN_OK) graph_backend = jn_rt_backends[JN_CUDA];
    else if (use_device) printf("SKIPPED: %s -- not run: whole golden graphs on the GPU (device executor)\n", jn_errmsg());
    int files = each_golden(golden_module);
    CHECK(files >= 16);
    if (no_cc) {
        printf("SKIPPED: no C compiler -- not run: jn_dkcall against the CPU executor's jn_kcall, the device "
               "kernels against the CPU's\n");
        return;
    }
    printf("  jn_dkcall == jn_kcall: %d golden files, %d kernel calls\n", files, total_calls);
    CHECK(total_calls > 0);
    if (!use_device) return;
    printf("  %s against the CPU executor: %d modules, %d kernel calls: %d bitwise equal, %d within 1e-5 relative\n",
           fake_driver ? "fake driver (host C kernels as \"device\" code)" : "CUDA kernels", gpu_modules, gpu_calls,
           gpu_exact, gpu_close);
    CHECK(gpu_modules > 0 && gpu_calls == total_calls);
    if (!graph_backend) return;
    printf("  whole graphs on the %s: %d graphs (%d left on the CPU: an op the backend lacks), %lld kernel launches, "
           "%lld library nodes; %d outputs: %d bitwise equal to the CPU executor's, %d within 1e-5 of its largest "
           "element\n",
           fake_driver ? "fake device (host kernels in the node-runner table: plumbing, not CUDA)" : "GPU", graphs_run,
           graphs_skipped, (long long)graphs_launches, (long long)graphs_nodes, graphs_outputs, graphs_exact, graphs_close);
    printf("  graph runs left out: %d (not runnable op by op on synthetic inputs at the symbols' midpoints)\n",
           unrunnable);
    CHECK(graphs_run > 0 && graphs_outputs == graphs_exact + graphs_close && graphs_launches > 0 && graphs_nodes > 0);
    if (!fake_driver) {
        printf("  CUDA Graphs on the GPU: %d graphs, %d runs: %lld captures (%lld instantiated, %lld updated), %lld "
               "replays, %lld plain runs; %d of %d outputs equal to the CPU executor's (bitwise or 1e-5)\n", cg_graphs,
               cg_runs, (long long)cg_total.captures, (long long)cg_total.instantiations, (long long)cg_total.updates,
               (long long)cg_total.replays, (long long)cg_total.plain_runs, cg_outputs_equal, cg_outputs);
        CHECK(cg_outputs_equal == cg_outputs && cg_graphs > 0);
        return;
    }
    printf("  CUDA Graphs on the fake driver (library nodes as captured host functions: plumbing, not CUDA): %d graphs, "
           "%d runs: %lld captures (%lld instantiated, %lld updated), %lld replays; %d of %d outputs bitwise equal to "
           "the CPU executor's; with capture failing: %lld plain runs; %d graphs with new state addresses in "
           "every run went to plain launches\n", cg_graphs, cg_runs,
           (long long)cg_total.captures, (long long)cg_total.instantiations, (long long)cg_total.updates,
           (long long)cg_total.replays, cg_outputs_equal, cg_outputs, (long long)cg_total.plain_runs, churned);
    CHECK(cg_graphs == graphs_run && cg_outputs_equal == cg_outputs && cg_total.replays >= 2 * cg_graphs &&
          jt_hostfn.errors == 0 && cg_total.updates > 0 && churned > 0);
}

/* Without a GPU: the same harness through tests/c/fake_libcuda.c, loaded
 * here (before test_golden) and checked further by fake_checks. */
static char *old_libcuda;
static void fake_setup(void) {
    if (have_gpu) return; /* a real driver is loaded (and stays): the real test runs */
    CHECK(jt_tmp_begin("exec_cuda") == 0);
    old_libcuda = jn_setting_raw(JN_S_LIBCUDA) ? strdup(jn_setting_raw(JN_S_LIBCUDA)) : NULL;
    void *h = jt_fake_driver_load(src_dir); /* the handle stays open */
    CHECK(h != NULL);
    if (!h) return;
    have_gpu = fake_driver = 1;
    jt_hostfn.be = &jn_rt_cpu_backend;
    jt_hostfn.stream = &graph_stream;
    CHECK(jn_ex_cuda_device(0, &gpu_major, &gpu_minor, gpu_name, sizeof gpu_name) == JN_OK);
    CHECK(gpu_major == 9 && gpu_minor == 0 && !strcmp(gpu_name, "Fake GPU"));
    int ma, mi;
    CHECK(jn_ex_cuda_device(1, &ma, &mi, NULL, 0) == JN_ERR_VALUE && has("device 1 does not exist"));
}

static void fake_checks(void) {
    if (!fake_driver) return;
    void *h = dlopen(tmp("libcuda.so.1"), RTLD_NOW | RTLD_NOLOAD);
    int (*nl)(void) = NULL;
    if (h) *(void **)&nl = dlsym(h, "fake_cuda_launches");
    CHECK(nl && nl() == gpu_calls + graphs_launches + cg_total.launches); /* every call went through cuLaunchKernel */
    if (h) dlclose(h);

    /* refusals and failures, with one small module */
    jn_ir_module *m = parse_body(cases[0].body);
    CHECK(m && run_passes(m, "fuse,select"));
    void *cubin = NULL;
    char *ptx = NULL;
    size_t cl = 0, pl = 0;
    uint64_t hash = 0;
    jn_ex_dlib *l = NULL;
    if (m && device_image(m, "sm_90", &cubin, &cl, &ptx, &pl) == JN_OK && jn_cg_module_hash(m, &hash) == JN_OK) {
        CHECK(jn_ex_dlib_open(cubin, cl, NULL, 0, "cuda:sm_100", hash, "bundle 7", 0, &l) == JN_ERR_UNSUPPORTED &&
              !l && has("cuda:sm_100 bundle cannot run on Fake GPU (sm_90)") && has("--target cuda:sm_90"));
        CHECK(jn_ex_dlib_open(NULL, 0, "// ptx\n", 7, "cuda:sm_90", hash, "bundle 7", 0, &l) == JN_ERR_RUNTIME &&
              !l && has("cuModuleLoadDataEx of the PTX of bundle 7") && has("no PTX JIT"));
        CHECK(jn_ex_dlib_open(cubin, cl, NULL, 0, "cuda:sm_90", hash, "bundle 7", 3, &l) == JN_ERR_VALUE &&
              has("device 3 does not exist"));
        CHECK(jn_ex_dlib_open(cubin, cl, NULL, 0, "cuda:sm_90", hash, "bundle 7", 0, &l) == JN_OK && l);
        jn_dkcall d = {.nops = 1, .ndim = 1, .shape = {4}};
        CHECK(l && jn_ex_dlib_launch(l, 0, 99, &d, NULL) == JN_ERR_VALUE && has("no kernel jn_k0_99"));
        setenv("FAKE_CUDA_FAIL", "launch", 1);
        CHECK(l && jn_ex_dlib_launch(l, 0, 0, &d, NULL) == JN_ERR_RUNTIME && has("cuLaunchKernel of jn_k0_0 of bundle 7") &&
              has("CUDA_ERROR_LAUNCH_FAILED"));
        unsetenv("FAKE_CUDA_FAIL");
        d.shape[0] = 0; /* an empty space launches nothing */
        CHECK(l && jn_ex_dlib_launch(l, 0, 0, &d, NULL) == JN_OK);
        uint64_t a = 0, b = 0;
        CHECK(l && jn_ex_dlib_arena(l, 2, 100, &a) == JN_OK && a && jn_ex_dlib_arena(l, 2, 50, &b) == JN_OK && b == a);
        CHECK(l && jn_ex_dlib_arena(l, 2, 1 << 20, &b) == JN_OK && b);
        CHECK(l && jn_ex_dlib_arena(l, -1, 8, &b) == JN_ERR_VALUE);
        jn_ex_dlib_close(l);
    }
    jn_ir_module_free(m);
    free(cubin), free(ptx);
    if (old_libcuda) setenv("JANUS_LIBCUDA", old_libcuda, 1);
    else unsetenv("JANUS_LIBCUDA");
    free(old_libcuda);
    jt_tmp_end();
}

int main(void) {
    jt_emit_src_dir(__FILE__);
    (void)kernels_part; /* the shared emitter-test helpers this test does not need */
    (void)check_goldens;
    test_pick_image();
    test_driver();
    fake_setup();
    test_golden();
    test_dkcall();
    fake_checks();
    JT_DONE();
}
