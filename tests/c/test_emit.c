/* test_emit.c -- the C emitter and the compiler driver (codegen/emit_c.c,
 * codegen/cc.c).
 *
 * For IR graphs of the fused patterns (a GEMM bias+relu epilogue, a
 * broadcast chain with [B, 1] and [N] operands, softmax-like and other
 * ew_reduce kernels, mixed dtypes with comparisons, where, masked_fill,
 * cast and clamp, integer arithmetic, float64 math, a scalar-bound alpha,
 * and every op the emitter generates on edge values for each dtype),
 * the fuse and select passes run, the generated source is compiled with
 * -Wall -Wextra -Werror, loaded with dlopen and every kernel is called
 * through a hand-built jn_kcall on the values an eager run (jn_dispatch,
 * node by node) computed, including a transposed (non-contiguous) input, a
 * broadcast input and inputs large enough for the thread pool.  Every
 * kernel must match eager bit for bit, reductions included (float64 sums
 * of odd sizes, of more than one 32-lane block, chunked on the pool, over
 * dims that do not merge; which signed zero amax/amin return).  Also: golden generated C for three patterns (tests/golden/c;
 * JANUS_UPDATE_GOLDEN=1 rewrites them), every kernel of every golden IR
 * module (tests/golden/NAME.ir) after the passes compiles warning-free, the
 * select pass refuses what the emitter cannot generate, and a missing or
 * failing compiler is a clear error.
 */
#include <dlfcn.h>
#include <stdint.h>
#include <unistd.h>

#include "jn_cg.h"
#include "jn_exec.h" /* the kernel ABI */
#include "jn_test.h"
#include "jn_test_emit.h" /* the IR patterns (cases[]) and helpers shared with test_emit_cuda.c */

/* Generated source -> loaded object (NULL on failure, reported). */
static void *compile_load(const char *src, size_t len, const char *tag) {
    jn_cg_cc_options co = {.extra_flags = "-Wall -Wextra -Werror"};
    void *so = NULL;
    size_t sl = 0;
    double sec = 0;
    jn_status st = jn_cg_compile_so(src, len, &co, &so, &sl, &sec);
    CHECK(st == JN_OK);
    if (st) {
        fprintf(stderr, "%s: %s\n", tag, jn_errmsg());
        return NULL;
    }
    CHECK(sl > 0 && sec > 0);
    const char *path = tmp(tag);
    FILE *f = fopen(path, "wb");
    CHECK(f && fwrite(so, 1, sl, f) == sl);
    if (f) fclose(f);
    free(so);
    void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    CHECK(h != NULL);
    if (!h) fprintf(stderr, "%s: dlopen: %s\n", tag, dlerror());
    return h;
}

/* ------------------------------------------------------ eager vs kernel */
static uint64_t rng_state = 0x9e3779b97f4a7c15ull;
static double urand(void) {
    rng_state ^= rng_state << 13, rng_state ^= rng_state >> 7, rng_state ^= rng_state << 17;
    return (double)(rng_state >> 11) / 9007199254740992.0;
}

/* Random contents; floats get a few specials (NaN, -0, inf) up front
 * (specials 1), or every element is an edge value (2: jt_edge). */
static void fill(jn_tensor *t, int specials) {
    int64_t n = jn_numel(t);
    char *p = jn_data(t);
    for (int64_t i = 0; i < n; i++) {
        if (specials == 2) {
            double f;
            int64_t k;
            jt_edge(i, &f, &k);
            switch (t->dtype) {
            case JN_F32: ((float *)p)[i] = (float)f; break;
            case JN_F64: ((double *)p)[i] = f; break;
            case JN_I64: ((int64_t *)p)[i] = k; break;
            case JN_I32: ((int32_t *)p)[i] = (int32_t)(uint32_t)(uint64_t)k; break;
            case JN_U8: ((uint8_t *)p)[i] = (uint8_t)(uint64_t)k; break;
            default: ((uint8_t *)p)[i] = i % 3 != 0; break;
            }
            continue;
        }
        double v = urand() * 6 - 3;
        if (specials && jn_dtype_is_float(t->dtype) && i < 3) v = i == 0 ? NAN : i == 1 ? -0.0 : INFINITY;
        switch (t->dtype) {
        case JN_F32: ((float *)p)[i] = (float)v; break;
        case JN_F64: ((double *)p)[i] = v; break;
        case JN_I64: ((int64_t *)p)[i] = (int64_t)floor(v * 2); break;
        case JN_I32: ((int32_t *)p)[i] = (int32_t)floor(v * 2); break;
        case JN_U8: ((uint8_t *)p)[i] = (uint8_t)(urand() * 12); break;
        default: ((uint8_t *)p)[i] = urand() < 0.5; break;
        }
    }
}

static jn_tensor *input_tensor(const jn_ir_graph *g, int32_t i, const ecase *c) {
    const jn_ir_input *in = &g->inputs[i];
    const jn_ir_value *v = &g->values[in->value];
    if (in->kind == JN_IR_IN_SCALAR || in->kind == JN_IR_IN_CONST) {
        double x = in->kind == JN_IR_IN_SCALAR && !isnan(c->scalar_feed) ? c->scalar_feed : in->scalar;
        return jn_dtype_is_float(v->dtype) ? jn_scalar_f64(x, v->dtype, 1) : jn_scalar_i64((int64_t)x, v->dtype, 1);
    }
    int64_t shape[JN_MAX_DIMS];
    for (int d = 0; d < v->ndim; d++) CHECK(jn_ir_dim_eval(g, v->shape[d], c->syms, &shape[d]) == JN_OK);
    if (i == c->transpose && v->ndim == 2) {
        int64_t ts[2] = {shape[1], shape[0]};
        jn_tensor *base = jn_tensor_new(v->dtype, 2, ts);
        fill(base, c->specials);
        jn_tensor *t = jn_tensor_alias(base);
        jn_tensor_decref(base);
        t->shape[0] = shape[0], t->shape[1] = shape[1];
        int64_t s0 = t->strides[0];
        t->strides[0] = t->strides[1], t->strides[1] = s0;
        CHECK(!jn_is_contiguous(t));
        return t;
    }
    jn_tensor *t = jn_tensor_new(v->dtype, v->ndim, shape);
    fill(t, c->specials);
    return t;
}

static double scalar_value(const jn_ir_graph *g, int32_t v, const ecase *c) {
    const jn_ir_input *in = &g->inputs[g->values[v].def];
    return in->kind == JN_IR_IN_SCALAR && !isnan(c->scalar_feed) ? c->scalar_feed : in->scalar;
}

static jn_tensor *contig(jn_tensor *t) { return jn_contiguous(t); }

/* Same elements?  exact: bit for bit, except that any NaN equals any NaN
 * (x86 passes on one operand's NaN, and which one depends on the operand
 * order the compiler picked for a commutative op: sign and payload of a
 * NaN are not reproducible between two compilations); else within 1e-5
 * relative. */
static int same_values(jn_tensor *a, jn_tensor *b, int exact, const char *what) {
    if (a->dtype != b->dtype || jn_numel(a) != jn_numel(b)) {
        fprintf(stderr, "%s: dtype/size differ\n", what);
        return 0;
    }
    jn_tensor *ca = contig(a), *cb = contig(b);
    int64_t n = jn_numel(a);
    size_t es = jn_elsize(a);
    int ok = 1;
    for (int64_t i = 0; i < n && ok; i++) {
        const char *pa = jn_data(ca) + i * (int64_t)es, *pb = jn_data(cb) + i * (int64_t)es;
        if (!memcmp(pa, pb, es)) continue;
        if (jn_dtype_is_float(a->dtype)) {
            double x = a->dtype == JN_F32 ? *(const float *)pa : *(const double *)pa;
            double y = a->dtype == JN_F32 ? *(const float *)pb : *(const double *)pb;
            if (isnan(x) && isnan(y)) continue;
            if (!exact && fabs(x - y) <= 1e-5 * (1 + fabs(y))) continue;
        }
        double x = jn_dtype_is_float(a->dtype) ? (a->dtype == JN_F32 ? *(const float *)pa : *(const double *)pa) : 0;
        double y = jn_dtype_is_float(a->dtype) ? (a->dtype == JN_F32 ? *(const float *)pb : *(const double *)pb) : 0;
        fprintf(stderr, "%s: element %lld differs (kernel %.9g, eager %.9g)\n", what, (long long)i, x, y);
        ok = 0;
    }
    jn_tensor_decref(ca);
    jn_tensor_decref(cb);
    return ok;
}

/* The executor's view of a call: size-1 dims dropped, neighbours every
 * operand walks contiguously merged (reduced with reduced, kept with
 * kept); all dims gone leaves [1]. */
static void coalesce(const jn_kcall *c, int64_t *shape, int64_t *st, int32_t *nd2, int32_t *nred2) {
    int nd = c->ndim, n2 = 0, red = 0, nops = c->nops;
    for (int d = 0; d < nd; d++) {
        if (c->shape[d] == 1) continue;
        int isred = d >= nd - c->nred, merge = n2 > 0 && (red > 0) == isred;
        for (int k = 0; merge && k < nops; k++)
            merge = st[k * nd + n2 - 1] == c->strides[k * nd + d] * c->shape[d];
        if (merge) {
            shape[n2 - 1] *= c->shape[d];
            for (int k = 0; k < nops; k++) st[k * nd + n2 - 1] = c->strides[k * nd + d];
            continue;
        }
        shape[n2] = c->shape[d];
        for (int k = 0; k < nops; k++) st[k * nd + n2] = c->strides[k * nd + d];
        n2++;
        red += isred;
    }
    if (n2 == 0) {
        shape[0] = 1;
        for (int k = 0; k < nops; k++) st[k * nd] = 0;
        n2 = 1;
        red = c->nred > 0;
    }
    /* repack operand-major with the new dim count */
    for (int k = 0; k < nops; k++)
        for (int d = 0; d < n2; d++) st[k * n2 + d] = st[k * nd + d];
    *nd2 = n2, *nred2 = red;
}

/* Runs kernel k of graph 0 from the eager values vals[], comparing what it
 * writes with them.  Returns 1 if it was called. */
static int call_kernel(void *h, const jn_ir_graph *g, int32_t k, jn_tensor **vals, const ecase *c) {
    const jn_ir_kernel *K = &g->kernels[k];
    if (K->impl != JN_IR_IMPL_GEN && K->impl != JN_IR_IMPL_GEMM) return 0;
    char sym[64], what[256];
    snprintf(sym, sizeof sym, "jn_k0_%d", k);
    snprintf(what, sizeof what, "%s K%d", c->name, k);
    jn_kfn fn = (jn_kfn)(uintptr_t)dlsym(h, sym);
    CHECK(fn != NULL);
    if (!fn) return 0;
    jn_cg_kernel_io io;
    CHECK(jn_cg_kernel_describe(g, k, &io) == JN_OK);
    const jn_ir_node *root = &g->nodes[K->root];
    int reduce = K->kind == JN_IR_K_EW_REDUCE;
    jn_tensor *space = vals[reduce ? root->in[0] : root->out[0]];
    int nd = space->ndim ? space->ndim : 1, nred = 0;
    int64_t shape[JN_MAX_DIMS] = {1};
    for (int d = 0; d < space->ndim; d++) shape[d] = space->shape[d];
    if (reduce) nred = root->attrs.a[0].l.n ? root->attrs.a[0].l.n : space->ndim;
    int nops = io.ncall;
    char **data = calloc((size_t)nops, sizeof(char *));
    int64_t *strides = calloc((size_t)nops * (size_t)nd, sizeof(int64_t));
    jn_tensor **outs = calloc((size_t)nops, sizeof(jn_tensor *));
    double scal[64];
    for (int32_t j = 0; j < io.nscalar && j < 64; j++) scal[j] = scalar_value(g, io.scalar[j], c);
    /* a gemm epilogue writes its root in place over the GEMM's output */
    jn_tensor *inplace = NULL, *gemm_ref = NULL;
    if (K->kind == JN_IR_K_GEMM) {
        inplace = jn_contiguous(vals[g->nodes[io.nodes[0]].out[0]]);
        gemm_ref = jn_contiguous(vals[g->nodes[io.nodes[0]].out[0]]);
    }
    for (int j = 0; j < nops; j++) {
        int32_t v = io.call[j];
        if (j < io.ncall_in) {
            jn_tensor *t = inplace && v == g->nodes[io.nodes[0]].out[0] ? inplace : vals[v];
            data[j] = jn_data(t);
            if (space->ndim) jn_broadcast_byte_strides(t, nd, shape, strides + (size_t)j * nd);
            continue;
        }
        jn_tensor *ref = vals[v];
        outs[j] = inplace && v == root->out[0] ? (jn_tensor_incref(inplace), inplace)
                                               : jn_tensor_new(ref->dtype, ref->ndim, ref->shape);
        if (outs[j] != inplace) memset(jn_data(outs[j]), 0xa5, (size_t)jn_numel(outs[j]) * jn_elsize(outs[j]));
        data[j] = jn_data(outs[j]);
        if (reduce && v == root->out[0]) {
            int64_t s = (int64_t)jn_elsize(ref);
            for (int d = nd - 1; d >= 0; d--) {
                if (d >= nd - nred) strides[(size_t)j * nd + d] = 0;
                else strides[(size_t)j * nd + d] = s, s *= shape[d];
            }
        } else if (space->ndim) {
            jn_broadcast_byte_strides(outs[j], nd, shape, strides + (size_t)j * nd);
        }
    }
    jn_kcall kc = {.nops = nops, .ndim = nd, .nred = nred, .nthreads = jn_num_threads(), .data = data, .shape = shape,
                   .strides = strides, .scalars = scal, .parallel_for = jn_parallel_for};
    /* as built, then with dims coalesced the way the executor does */
    int64_t shape2[JN_MAX_DIMS];
    int64_t *strides2 = calloc((size_t)nops * (size_t)nd + 1, sizeof(int64_t));
    jn_kcall kc2 = kc;
    kc2.shape = shape2, kc2.strides = strides2;
    coalesce(&kc, shape2, strides2, &kc2.ndim, &kc2.nred);
    for (int pass = 0; pass < 2; pass++) {
        if (pass == 1) {
            if (inplace) memcpy(jn_data(inplace), jn_data(gemm_ref), (size_t)jn_numel(inplace) * jn_elsize(inplace));
            for (int j = io.ncall_in; j < nops; j++)
                if (outs[j] != inplace) memset(jn_data(outs[j]), 0xa5, (size_t)jn_numel(outs[j]) * jn_elsize(outs[j]));
        }
        fn(pass ? &kc2 : &kc);
        for (int j = io.ncall_in; j < nops; j++) {
            int32_t v = io.call[j];
            char w2[300];
            snprintf(w2, sizeof w2, "%s output %%%d%s", what, v, pass ? " (dims coalesced)" : "");
            CHECK(same_values(outs[j], vals[v], 1, w2));
        }
    }
    for (int j = io.ncall_in; j < nops; j++) jn_tensor_decref(outs[j]);
    jn_tensor_decref(inplace);
    jn_tensor_decref(gemm_ref);
    free(strides2);
    free(data);
    free(strides);
    free(outs);
    jn_cg_kernel_io_free(&io);
    return 1;
}

static void run_case(const ecase *c) {
    jn_ir_module *m = parse_body(c->body);
    CHECK(m != NULL);
    if (!m) return;
    CHECK(run_passes(m, "fuse,select"));
    jn_ir_graph *g = m->graphs[0];
    char *src = NULL;
    size_t len = 0;
    int nk = -1;
    jn_status st = jn_cg_emit_c(m, &src, &len, &nk);
    CHECK(st == JN_OK && nk == c->want_kernels);
    if (st || nk != c->want_kernels) fprintf(stderr, "%s: emit %s, %d kernels (want %d)\n", c->name, st ? jn_errmsg() : "ok", nk, c->want_kernels);
    void *h = st ? NULL : compile_load(src, len, c->name);
    free(src);
    if (!h) {
        jn_ir_module_free(m);
        return;
    }
    const int *abi = dlsym(h, "jn_kabi_version");
    const unsigned long long *hash = dlsym(h, "jn_kmodule_hash");
    uint64_t mh = 0;
    CHECK(jn_cg_module_hash(m, &mh) == JN_OK);
    CHECK(abi && *abi == JN_KABI_VERSION);
    CHECK(hash && *hash == mh);
    /* the eager run, node by node */
    jn_tensor **vals = calloc((size_t)g->nvalues, sizeof(jn_tensor *));
    for (int32_t i = 0; i < g->ninputs; i++) vals[g->inputs[i].value] = input_tensor(g, i, c);
    int ok = 1;
    for (int32_t n = 0; n < g->nnodes && ok; n++) {
        const jn_ir_node *x = &g->nodes[n];
        jn_tensor *in[JN_MAX_INS], *out[JN_MAX_OUTS] = {NULL};
        for (int k = 0; k < x->nin; k++) in[k] = vals[x->in[k]];
        jn_attrs a = x->attrs;
        for (int k = 0; k < JN_MAX_ATTRS; k++)
            if (x->attr_input[k] >= 0) a.a[k].f = scalar_value(g, x->attr_input[k], c);
        st = jn_dispatch(x->op, x->nin, in, &a, out);
        CHECK(st == JN_OK);
        if (st) {
            fprintf(stderr, "%s: eager node %d: %s\n", c->name, n, jn_errmsg());
            ok = 0;
        }
        for (int k = 0; k < x->nout && !st; k++) vals[x->out[k]] = out[k];
    }
    int called = 0;
    for (int32_t k = 0; k < g->nkernels && ok; k++) called += call_kernel(h, g, k, vals, c);
    CHECK(called == c->want_kernels);
    for (int32_t v = 0; v < g->nvalues; v++) jn_tensor_decref(vals[v]);
    free(vals);
    dlclose(h);
    jn_ir_module_free(m);
}

/* ------------------------------------------------------------- goldens */

static void test_goldens(void) {
    static const char *const names[] = {"bias_relu", "broadcast_chain", "softmax_reduce"};
    check_goldens(names, sizeof names / sizeof names[0], jn_cg_emit_c, "c", ".c", "C", "test_emit");
}

/* Every kernel of every golden IR module compiles warning-free. */
static void golden_module(const jn_ir_module *m, const char *name, void *ctx) {
    (void)ctx;
    char *src = NULL;
    size_t len = 0;
    int nk = 0, want = 0;
    CHECK(jn_cg_emit_c(m, &src, &len, &nk) == JN_OK);
    for (int32_t gi = 0; gi < m->ngraphs; gi++)
        for (int32_t k = 0; k < m->graphs[gi]->nkernels; k++) {
            jn_ir_impl im = m->graphs[gi]->kernels[k].impl;
            want += im == JN_IR_IMPL_GEN || im == JN_IR_IMPL_GEMM;
        }
    CHECK(nk == want && nk > 0);
    void *h = src ? compile_load(src, len, name) : NULL;
    for (int32_t gi = 0; h && gi < m->ngraphs; gi++)
        for (int32_t k = 0; k < m->graphs[gi]->nkernels; k++) {
            jn_ir_impl im = m->graphs[gi]->kernels[k].impl;
            char sym[64];
            snprintf(sym, sizeof sym, "jn_k%d_%d", gi, k);
            CHECK((dlsym(h, sym) != NULL) == (im == JN_IR_IMPL_GEN || im == JN_IR_IMPL_GEMM));
        }
    printf("  %s: %d kernels compiled\n", name, nk);
    if (h) dlclose(h);
    free(src);
}

static void test_golden_modules(void) { CHECK(jt_each_ir("golden", golden_module, NULL) >= 8); }

/* ------------------------------------------- what is not generated */
static void test_refused(void) {
    /* integer floor division reports division by zero eagerly: not generated */
    jn_ir_module *m = parse_body("  in %0 host i64[4]\n  in %1 host i64[4]\n"
                                 "  %2 = div(%0, %1) rounding_mode=2 : i64[4]\n"
                                 "  %3 = neg(%2) : i64[4]\n  out %3 keep\n");
    CHECK(m && run_passes(m, "fuse,select"));
    if (!m) return;
    jn_ir_graph *g = m->graphs[0];
    CHECK(g->nkernels == 1 && g->kernels[0].impl == JN_IR_IMPL_LIB);
    char why[256] = "";
    CHECK(!jn_cg_emit_supported(g, 0, why, sizeof why) && strstr(why, "div"));
    char *src = NULL;
    size_t len = 0;
    int nk = -1;
    CHECK(jn_cg_emit_c(m, &src, &len, &nk) == JN_OK && nk == 0);
    free(src);
    /* forced to gen anyway: refused with a message, never wrong code */
    g->kernels[0].impl = JN_IR_IMPL_GEN;
    CHECK(jn_cg_emit_c(m, &src, &len, &nk) == JN_ERR_UNSUPPORTED && has("graph g kernel K0") && has("select"));
    jn_ir_module_free(m);
}

/* --------------------------------------------------------- the compiler */
static void test_compiler_errors(void) {
    const char ok_src[] = "int jn_x(void) { return 1; }\n";
    void *so = NULL;
    size_t sl = 0;
    double sec = -1;
    char *old = getenv("CC") ? strdup(getenv("CC")) : NULL;
    setenv("CC", "/nonexistent/cc", 1);
    jn_status st = jn_cg_compile_so(ok_src, strlen(ok_src), NULL, &so, &sl, &sec);
    CHECK(st == JN_ERR_UNSUPPORTED && so == NULL && sl == 0);
    CHECK(has("/nonexistent/cc") && has("apt-get install gcc") && has("CC"));
    setenv("CC", "no-such-compiler-janus", 1);
    CHECK(jn_cg_compile_so(ok_src, strlen(ok_src), NULL, &so, &sl, &sec) == JN_ERR_UNSUPPORTED &&
          has("no-such-compiler-janus"));
    /* CC as a command: its first word is the program */
    setenv("CC", "env cc", 1);
    st = jn_cg_compile_so(ok_src, strlen(ok_src), NULL, &so, &sl, &sec);
    CHECK(st == JN_OK && sl > 4);
    free(so);
    so = NULL;
    if (old) setenv("CC", old, 1);
    else unsetenv("CC");
    free(old);
    /* a compiler that fails: its first error line is in the message */
    const char bad[] = "int f(void) { return undeclared_thing; }\n";
    st = jn_cg_compile_so(bad, strlen(bad), NULL, &so, &sl, &sec);
    CHECK(st == JN_ERR_RUNTIME && so == NULL && has("undeclared_thing") && has("failed"));
    jn_cg_cc_options fo = {.cc = "false"};
    CHECK(jn_cg_compile_so(ok_src, strlen(ok_src), &fo, &so, &sl, &sec) == JN_ERR_RUNTIME && has("false"));
    /* and one that works: an ELF shared object comes back */
    st = jn_cg_compile_so(ok_src, strlen(ok_src), NULL, &so, &sl, &sec);
    CHECK(st == JN_OK && sl > 4 && so && !memcmp(so, "\177ELF", 4) && sec > 0);
    free(so);
}

int main(void) {
    jt_emit_src_dir(__FILE__);
    if (jt_tmp_begin("emit")) return 1;
    test_compiler_errors();
    test_refused();
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        int before = jt_fail;
        run_case(&cases[i]);
        printf("  %s: %s\n", cases[i].name, jt_fail == before ? "ok" : "FAILED");
    }
    test_goldens();
    test_golden_modules();
    jt_tmp_end();
    JT_DONE();
}
