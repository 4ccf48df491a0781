/* nvrtc.c -- the CUDA compiler driver: generated CUDA C (emit_cuda.c) ->
 * PTX and cubin bytes, through NVRTC, the CUDA runtime compiler, which
 * needs no GPU.
 *
 * NVRTC is opened at run time (dlopen), never linked, so janus builds and
 * runs without the CUDA toolkit; without it jn_cg_compile_cuda is a clear
 * JN_ERR_UNSUPPORTED naming where it looked.  Looked for, in order:
 * $JANUS_NVRTC (a path to the library: tests point it at nothing to see
 * the message), $CUDA_HOME/lib64, the library CMake found at build time
 * (JANUS_NVRTC_PATH), /usr/local/cuda/lib64, then the dynamic loader's own
 * search, each as libnvrtc.so.13, libnvrtc.so.12 and libnvrtc.so.  The
 * NVRTC API is declared here (its ABI has been stable since CUDA 11), so no
 * CUDA header is needed either.
 *
 * A source is compiled once, with -arch=sm_XX: NVRTC then gives both the
 * cubin (machine code for exactly that GPU) and the compute_XX PTX it was
 * assembled from (what the driver can JIT for a newer GPU; the same text a
 * -arch=compute_XX compile gives, checked when this was written, at half
 * the compile time).  Options: --std=c++17, -default-device
 * (the embedded runtime/k_fastmath.h is plain C functions: they become
 * device functions), -fmad=false (no contraction into fused multiply-adds,
 * so the expressions round like the CPU's compiled with -ffp-contract=off);
 * -prec-div and -prec-sqrt stay at their IEEE defaults, -use_fast_math is
 * not given.
 */
#include <dlfcn.h>
#include <stdio.h>
#include <time.h>

#include "cg_priv.h"
#include "jn_settings.h"

/* The slice of nvrtc.h janus uses. */
typedef int nvrtc_result; /* NVRTC_SUCCESS = 0 */
typedef struct nvrtc_prog_ *nvrtc_prog;
typedef struct {
    void *lib;
    const char *(*error_string)(nvrtc_result);
    nvrtc_result (*version)(int *, int *);
    nvrtc_result (*create)(nvrtc_prog *, const char *, const char *, int, const char *const *, const char *const *);
    nvrtc_result (*destroy)(nvrtc_prog *);
    nvrtc_result (*compile)(nvrtc_prog, int, const char *const *);
    nvrtc_result (*log_size)(nvrtc_prog, size_t *);
    nvrtc_result (*log)(nvrtc_prog, char *);
    nvrtc_result (*ptx_size)(nvrtc_prog, size_t *);
    nvrtc_result (*ptx)(nvrtc_prog, char *);
    nvrtc_result (*cubin_size)(nvrtc_prog, size_t *);
    nvrtc_result (*cubin)(nvrtc_prog, char *);
    char path[1600];
} nvrtc_api;

#ifndef JANUS_NVRTC_PATH
#define JANUS_NVRTC_PATH ""
#endif

static const char *const SONAMES[] = {"libnvrtc.so.13", "libnvrtc.so.12", "libnvrtc.so"};
#define NSONAMES (sizeof SONAMES / sizeof SONAMES[0])

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* Opens NVRTC into a (once per process: the handle stays open). */
static jn_status nvrtc_open(nvrtc_api *a) {
    memset(a, 0, sizeof *a);
    const char *env = NULL;
    jn_status st = jn_setting_str(JN_S_NVRTC, &env);
    if (st) return st;
    char dirs[3][512], looked[2048] = "";
    int nd = 0;
    const char *home = getenv("CUDA_HOME");
    if (home && *home) snprintf(dirs[nd++], sizeof dirs[0], "%s/lib64", home);
    if (JANUS_NVRTC_PATH[0]) {
        /* the directory of the library CMake found */
        snprintf(dirs[nd], sizeof dirs[0], "%s", JANUS_NVRTC_PATH);
        char *sl = strrchr(dirs[nd], '/');
        if (sl) *sl = 0, nd++;
    }
    snprintf(dirs[nd++], sizeof dirs[0], "/usr/local/cuda/lib64");
    if (env && *env) {
        snprintf(looked, sizeof looked, "%s ($JANUS_NVRTC)", env);
        a->lib = dlopen(env, RTLD_NOW | RTLD_LOCAL);
        if (a->lib) snprintf(a->path, sizeof a->path, "%s", env);
    } else {
        for (int d = 0; d <= nd && !a->lib; d++) {
            for (size_t s = 0; s < NSONAMES && !a->lib; s++) {
                char p[1600];
                if (d < nd) snprintf(p, sizeof p, "%s/%s", dirs[d], SONAMES[s]);
                else snprintf(p, sizeof p, "%s", SONAMES[s]); /* the loader's search path */
                a->lib = dlopen(p, RTLD_NOW | RTLD_LOCAL);
                if (a->lib) snprintf(a->path, sizeof a->path, "%s", p);
            }
            size_t l = strlen(looked);
            snprintf(looked + l, sizeof looked - l, "%s%s", l ? ", " : "", d < nd ? dirs[d] : "the loader's path");
        }
    }
    if (!a->lib)
        return jn_error(JN_ERR_UNSUPPORTED, "NVRTC not found (looked for libnvrtc.so.13 / libnvrtc.so in %s): "
                        "install the CUDA toolkit or set CUDA_HOME", looked);
    struct { void **fn; const char *name; } syms[] = {
        {(void **)&a->error_string, "nvrtcGetErrorString"}, {(void **)&a->version, "nvrtcVersion"},
        {(void **)&a->create, "nvrtcCreateProgram"},        {(void **)&a->destroy, "nvrtcDestroyProgram"},
        {(void **)&a->compile, "nvrtcCompileProgram"},      {(void **)&a->log_size, "nvrtcGetProgramLogSize"},
        {(void **)&a->log, "nvrtcGetProgramLog"},           {(void **)&a->ptx_size, "nvrtcGetPTXSize"},
        {(void **)&a->ptx, "nvrtcGetPTX"},                  {(void **)&a->cubin_size, "nvrtcGetCUBINSize"},
        {(void **)&a->cubin, "nvrtcGetCUBIN"}};
    for (size_t i = 0; i < sizeof syms / sizeof syms[0]; i++) {
        /* POSIX: a function pointer travels through void * (dlsym's contract) */
        void *p = dlsym(a->lib, syms[i].name);
        if (!p) {
            jn_status st = jn_error(JN_ERR_UNSUPPORTED, "NVRTC at %s lacks %s (too old a CUDA toolkit?): install "
                                    "CUDA 12 or newer or set CUDA_HOME", a->path, syms[i].name);
            dlclose(a->lib);
            a->lib = NULL;
            return st;
        }
        memcpy(syms[i].fn, &p, sizeof p);
    }
    return JN_OK;
}

/* The API, opened on first use (not thread-safe on that first call, like
 * the rest of optimize). */
static jn_status nvrtc_get(const nvrtc_api **out) {
    static nvrtc_api api;
    static int opened;
    if (!opened) {
        jn_status st = nvrtc_open(&api);
        if (st) return st;
        opened = 1;
    }
    *out = &api;
    return JN_OK;
}

int jn_cg_nvrtc_available(char *path, size_t n) {
    const nvrtc_api *a;
    if (nvrtc_get(&a) != JN_OK) return 0;
    if (path && n) snprintf(path, n, "%s", a->path);
    return 1;
}

/* One compile of src for `arch` (sm_XX): its cubin and PTX; the log (if
 * any) into *log. */
static jn_status compile_one(const nvrtc_api *a, const char *src, const char *arch, void **cubin, size_t *cubinlen,
                             char **ptx, size_t *ptxlen, char **log) {
    char archopt[64];
    snprintf(archopt, sizeof archopt, "-arch=%s", arch);
    const char *opts[] = {archopt, "--std=c++17", "-default-device", "-fmad=false"};
    nvrtc_prog p = NULL;
    nvrtc_result r = a->create(&p, src, "janus_kernels.cu", 0, NULL, NULL);
    if (r) return jn_error(JN_ERR_RUNTIME, "NVRTC (%s) cannot create a program: %s", a->path, a->error_string(r));
    r = a->compile(p, (int)(sizeof opts / sizeof opts[0]), opts);
    size_t ln = 0;
    char *lg = NULL;
    if (a->log_size(p, &ln) == 0 && ln > 1 && (lg = malloc(ln + 1))) {
        if (a->log(p, lg) != 0) lg[0] = 0;
        lg[ln] = 0;
    }
    jn_status st = JN_OK;
    if (r) {
        st = jn_error(JN_ERR_RUNTIME, "NVRTC failed to compile the generated CUDA kernels for %s (%s): %.1500s; "
                      "this is a janus bug: report it with the log", arch, a->error_string(r), lg ? lg : "(no log)");
    } else {
        size_t cs = 0, ps = 0;
        if ((r = a->cubin_size(p, &cs)) != 0 || (r = a->ptx_size(p, &ps)) != 0 || cs == 0 || ps == 0) {
            st = jn_error(JN_ERR_RUNTIME, "NVRTC gave no cubin or PTX for %s: %s", arch, a->error_string(r));
        } else if (!(*cubin = malloc(cs)) || !(*ptx = malloc(ps))) {
            st = jn_error(JN_ERR_NOMEM, "out of memory for NVRTC output");
        } else if ((r = a->cubin(p, *cubin)) != 0 || (r = a->ptx(p, *ptx)) != 0) {
            st = jn_error(JN_ERR_RUNTIME, "NVRTC gave no cubin or PTX for %s: %s", arch, a->error_string(r));
        } else {
            (*ptx)[ps - 1] = 0; /* PTX: text, its size counts the NUL */
            *cubinlen = cs, *ptxlen = strlen(*ptx);
        }
        if (st) free(*cubin), free(*ptx), *cubin = NULL, *ptx = NULL;
    }
    if (lg && log && *lg) *log = lg, lg = NULL;
    free(lg);
    a->destroy(&p);
    return st;
}

jn_status jn_cg_compile_cuda(const char *src, size_t len, const char *arch, char **ptx, size_t *ptxlen, void **cubin,
                             size_t *cubinlen, double *seconds, char **log) {
    *ptx = NULL, *cubin = NULL, *ptxlen = 0, *cubinlen = 0;
    if (seconds) *seconds = 0;
    if (log) *log = NULL;
    int num = 0;
    if (!arch || sscanf(arch, "sm_%d", &num) != 1 || num < 50 || num > 999)
        return jn_error(JN_ERR_VALUE, "CUDA architecture '%s' is not of the form sm_XX (e.g. sm_90)", arch ? arch : "");
    if (strlen(src) != len)
        return jn_error(JN_ERR_VALUE, "the CUDA source has a NUL byte before its end (%zu bytes)", len);
    const nvrtc_api *a;
    jn_status st = nvrtc_get(&a);
    if (st) return st;
    double t0 = now_s();
    st = compile_one(a, src, arch, cubin, cubinlen, ptx, ptxlen, log);
    if (st) {
        if (log) free(*log), *log = NULL;
        return st;
    }
    if (seconds) *seconds = now_s() - t0;
    return JN_OK;
}
