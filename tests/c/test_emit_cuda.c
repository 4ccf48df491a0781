/* test_emit_cuda.c -- the CUDA emitter and the NVRTC driver
 * (codegen/emit_cuda.c, codegen/nvrtc.c).  No GPU is needed or used.
 *
 * For the IR patterns test_emit.c runs on the CPU (tests/c/jn_test_emit.h:
 * a GEMM bias+relu epilogue, broadcast chains, softmax-like and other
 * ew_reduce kernels, mixed dtypes with comparisons, where, masked_fill,
 * cast and clamp, integer and float64 math, a scalar-bound alpha) and for
 * every kernel of every golden IR module (tests/golden/NAME.ir) after the
 * codegen passes: the CUDA source is generated, every member statement in
 * it is one the C emitter also wrote for the same module (so test_emit.c's
 * bitwise comparisons against eager cover the expressions the GPU runs),
 * NVRTC compiles it for sm_90 with an empty log (no warnings), the cubin
 * is an ELF object for sm_90 and the PTX has an .entry for every
 * generated kernel.  Golden CUDA source for two patterns
 * (tests/golden/cuda; JANUS_UPDATE_GOLDEN=1 rewrites them).  Errors: a
 * missing NVRTC, a malformed arch and a failing compile say so clearly.
 * Without NVRTC the compile checks are skipped with a message naming them;
 * the emission checks still run.  What can only be checked on a GPU
 * (running the kernels, their results against the CPU's) is not run here.
 */
#include <stdint.h>

#include "jn_cg.h"
#include "jn_exec.h" /* the device kernel ABI (jn_dkcall) */
#include "jn_settings.h"
#include "jn_test.h"
#include "jn_test_emit.h"

static int have_nvrtc;
static double total_compile_s;

/* Every `{ const ...` member statement of the CUDA source appears in the
 * C source of the same module: one set of op semantics. */
static int members_shared(const char *cu, const char *c, const char *tag) {
    int n = 0, bad = 0;
    for (const char *p = cu; (p = strstr(p, "{ const ")) != NULL;) {
        const char *e = strchr(p, '\n');
        size_t l = e ? (size_t)(e - p) : strlen(p);
        char *line = strndup(p, l);
        /* (the reduction's step into acc is each target's own: it follows
         * that target's eager reduction -- k_reduce.c, the CUDA reduce_kernel) */
        if (!strstr(line, "acc = ") && !strstr(c, line)) {
            if (!bad++) fprintf(stderr, "%s: CUDA member statement not in the C source: %s\n", tag, line);
        }
        n++;
        free(line);
        p += l;
    }
    return bad == 0 && n > 0;
}

/* Compiles a generated module's CUDA and checks the outputs. */
static void compile_check(const jn_ir_module *m, const char *src, size_t len, const char *tag) {
    if (!have_nvrtc) return;
    char *ptx = NULL, *log = NULL;
    void *cubin = NULL;
    size_t pl = 0, cl = 0;
    double sec = 0;
    jn_status st = jn_cg_compile_cuda(src, len, "sm_90", &ptx, &pl, &cubin, &cl, &sec, &log);
    CHECK(st == JN_OK);
    if (st) {
        fprintf(stderr, "%s: %s\n", tag, jn_errmsg());
        return;
    }
    CHECK(log == NULL);
    if (log) fprintf(stderr, "%s: NVRTC warnings:\n%s\n", tag, log);
    /* an ELF for sm_90: e_machine EM_CUDA (190), the arch in e_flags' low byte */
    const unsigned char *b = cubin;
    CHECK(cl > 64 && !memcmp(b, "\177ELF", 4) && b[4] == 2 && (b[18] | b[19] << 8) == 190);
    CHECK(cl > 64 && (b[48] == 90 || (b[49] << 8 | b[48]) >> 8 == 90)); /* e_flags: sm_90 */
    CHECK(pl == strlen(ptx) && strstr(ptx, ".target sm_90") != NULL);
    int entries = 0, want = 0;
    for (int32_t gi = 0; gi < m->ngraphs; gi++)
        for (int32_t k = 0; k < m->graphs[gi]->nkernels; k++) {
            jn_ir_impl im = m->graphs[gi]->kernels[k].impl;
            char ent[64];
            snprintf(ent, sizeof ent, ".entry jn_k%d_%d(", gi, k);
            int gen = im == JN_IR_IMPL_GEN || im == JN_IR_IMPL_GEMM;
            want += gen;
            if (gen && strstr(ptx, ent)) entries++;
            if (gen && !strstr(ptx, ent)) fprintf(stderr, "%s: PTX lacks %s\n", tag, ent);
            if (!gen) CHECK(strstr(ptx, ent) == NULL);
        }
    CHECK(entries == want);
    /* the cubin names them too (its symbol table) */
    for (int32_t gi = 0; gi < m->ngraphs; gi++)
        for (int32_t k = 0; k < m->graphs[gi]->nkernels; k++) {
            jn_ir_impl im = m->graphs[gi]->kernels[k].impl;
            if (im != JN_IR_IMPL_GEN && im != JN_IR_IMPL_GEMM) continue;
            char sym[64];
            snprintf(sym, sizeof sym, "jn_k%d_%d", gi, k);
            CHECK(memmem(cubin, cl, sym, strlen(sym) + 1) != NULL);
        }
    CHECK(strstr(ptx, "jn_kabi_version") && strstr(ptx, "jn_kmodule_hash"));
    total_compile_s += sec;
    printf("  %s: %d kernels, NVRTC %.2f s (PTX %zu bytes, cubin %zu bytes)\n", tag, want, sec, pl, cl);
    free(ptx);
    free(cubin);
}

/* Emits m as CUDA and C, checks what is shared and compiles the CUDA. */
static void check_module(const jn_ir_module *m, int want_kernels, const char *tag) {
    char *cu = NULL, *c = NULL;
    size_t cul = 0, clen = 0;
    int nk = -1, nkc = -1;
    jn_status st = jn_cg_emit_cuda(m, &cu, &cul, &nk);
    CHECK(st == JN_OK);
    if (st) {
        fprintf(stderr, "%s: %s\n", tag, jn_errmsg());
        return;
    }
    CHECK(jn_cg_emit_c(m, &c, &clen, &nkc) == JN_OK && nkc == nk);
    if (want_kernels >= 0) CHECK(nk == want_kernels);
    CHECK(cul == strlen(cu) && nk > 0);
    CHECK(strstr(cu, "__grid_constant__ jn_dkcall c_") != NULL);
    CHECK(c && members_shared(cu, c, tag));
    compile_check(m, cu, cul, tag);
    free(cu);
    free(c);
}

static void test_cases(void) {
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        jn_ir_module *m = parse_body(cases[i].body);
        CHECK(m && run_passes(m, "fuse,select"));
        if (!m) continue;
        int before = jt_fail;
        check_module(m, cases[i].want_kernels, cases[i].name);
        if (jt_fail != before) printf("  %s: FAILED\n", cases[i].name);
        jn_ir_module_free(m);
    }
}

/* Every generated kernel of every golden IR module after the passes. */
static void golden_module(const jn_ir_module *m, const char *name, void *ctx) {
    (void)ctx;
    check_module(m, -1, name);
}

static void test_golden_modules(void) {
    double before = total_compile_s;
    CHECK(jt_each_ir("golden", golden_module, NULL) >= 8);
    if (have_nvrtc) printf("  golden modules: NVRTC %.2f s in all\n", total_compile_s - before);
}

static void test_goldens(void) {
    static const char *const names[] = {"bias_relu", "softmax_reduce"};
    check_goldens(names, sizeof names / sizeof names[0], jn_cg_emit_cuda, "cuda", ".cu", "CUDA", "test_emit_cuda");
}

/* The source's copy of the device ABI agrees with exec/jn_exec.h. */
static void test_abi(void) {
    jn_ir_module *m = parse_body(cases[0].body);
    CHECK(m && run_passes(m, "fuse,select"));
    if (!m) return;
    char *src = NULL, want[128];
    size_t len = 0;
    int nk = 0;
    CHECK(jn_cg_emit_cuda(m, &src, &len, &nk) == JN_OK);
    snprintf(want, sizeof want, "#define JN_MAX_DIMS %d\n#define JN_DK_MAX_OPS %d\n#define JN_DK_MAX_SCALARS %d\n"
             "#define JN_DK_BLOCK %d\n", JN_MAX_DIMS, JN_DK_MAX_OPS, JN_DK_MAX_SCALARS, JN_DK_BLOCK);
    CHECK(src && strstr(src, want) != NULL);
    snprintf(want, sizeof want, "__constant__ int jn_kabi_version = %d;", JN_DKABI_VERSION);
    CHECK(src && strstr(src, want) != NULL);
    CHECK(sizeof(jn_dkcall) <= 32764 - 8); /* CUDA >= 12.1 kernel parameter limit */
    /* NVRTC has no libc headers: the embedded fast math comes without includes */
    CHECK(src && !strstr(src, "#include"));
    free(src);
    /* a kernel the emitter refuses is an error naming it, for CUDA too */
    jn_ir_module_free(m);
    m = parse_body("  in %0 host i64[4]\n  in %1 host i64[4]\n"
                   "  %2 = div(%0, %1) rounding_mode=2 : i64[4]\n"
                   "  %3 = neg(%2) : i64[4]\n  out %3 keep\n");
    CHECK(m && run_passes(m, "fuse,select"));
    if (!m) return;
    CHECK(jn_cg_emit_cuda(m, &src, &len, &nk) == JN_OK && nk == 0);
    free(src);
    m->graphs[0]->kernels[0].impl = JN_IR_IMPL_GEN;
    CHECK(jn_cg_emit_cuda(m, &src, &len, &nk) == JN_ERR_UNSUPPORTED && has("graph g kernel K0") && has("CUDA"));
    jn_ir_module_free(m);
}

static void test_errors(void) {
    const char ok[] = "extern \"C\" __global__ void k(float *p) { p[threadIdx.x] = 1.0f; }\n";
    char *ptx = NULL, *log = NULL;
    void *cubin = NULL;
    size_t pl = 0, cl = 0;
    double sec = 0;
    CHECK(jn_cg_compile_cuda(ok, strlen(ok), "90", &ptx, &pl, &cubin, &cl, &sec, &log) == JN_ERR_VALUE &&
          has("sm_XX"));
    /* no NVRTC where it is pointed to (run first: a loaded NVRTC stays
     * loaded); the caller's JANUS_NVRTC is restored after, so
     * JANUS_NVRTC=/nonexistent runs this test as on a machine without CUDA */
    char *old = jn_setting_raw(JN_S_NVRTC) ? strdup(jn_setting_raw(JN_S_NVRTC)) : NULL;
    setenv("JANUS_NVRTC", "/nonexistent/libnvrtc.so", 1);
    jn_status st = jn_cg_compile_cuda(ok, strlen(ok), "sm_90", &ptx, &pl, &cubin, &cl, &sec, &log);
    CHECK(st == JN_ERR_UNSUPPORTED && ptx == NULL && cubin == NULL);
    CHECK(has("NVRTC not found") && has("/nonexistent/libnvrtc.so") && has("CUDA_HOME"));
    if (old) setenv("JANUS_NVRTC", old, 1);
    else unsetenv("JANUS_NVRTC");
    free(old);
    char where[1024] = "";
    have_nvrtc = jn_cg_nvrtc_available(where, sizeof where);
    if (!have_nvrtc) {
        printf("SKIPPED: %s -- not run: NVRTC compilation of the generated CUDA (every pattern and golden module "
               "to PTX and sm_90 cubin), the failing-compile error\n", jn_errmsg());
        return;
    }
    printf("  NVRTC: %s\n", where);
    st = jn_cg_compile_cuda(ok, strlen(ok), "sm_90", &ptx, &pl, &cubin, &cl, &sec, &log);
    CHECK(st == JN_OK && pl > 0 && cl > 4 && !memcmp(cubin, "\177ELF", 4) && sec > 0 && log == NULL);
    free(ptx), free(cubin);
    const char bad[] = "extern \"C\" __global__ void k(float *p) { p[0] = undeclared_thing; }\n";
    st = jn_cg_compile_cuda(bad, strlen(bad), "sm_90", &ptx, &pl, &cubin, &cl, &sec, &log);
    CHECK(st == JN_ERR_RUNTIME && ptx == NULL && cubin == NULL && has("undeclared_thing") && has("NVRTC"));
    /* warnings come back in the log of a successful compile */
    const char warn[] = "extern \"C\" __global__ void k(float *p) { int unused_var; p[0] = 1.0f; }\n";
    st = jn_cg_compile_cuda(warn, strlen(warn), "sm_90", &ptx, &pl, &cubin, &cl, &sec, &log);
    CHECK(st == JN_OK && log && strstr(log, "unused_var"));
    free(ptx), free(cubin), free(log);
}

int main(void) {
    jt_emit_src_dir(__FILE__);
    test_errors();
    test_abi();
    test_cases();
    test_goldens();
    test_golden_modules();
    if (have_nvrtc) printf("  NVRTC: %.2f s in all\n", total_compile_s);
    JT_DONE();
}
