/* exec_cuda.c -- the device side of the graph executor for generated
 * kernels: a bundle's CUDA module (codegen/emit_cuda.c compiled by NVRTC
 * into the JN_CG_SEC_CUBIN and JN_CG_SEC_PTX sections) loaded on a GPU, its
 * kernels launched with the by-value jn_dkcall of jn_exec.h, and one device
 * arena per graph.
 *
 * The CUDA driver API is opened at run time (dlopen of libcuda.so.1, never
 * linked), so janus builds and runs on machines without a driver; there
 * every entry point is a clear JN_ERR_UNSUPPORTED naming where it looked
 * ($JANUS_LIBCUDA, a path, first: tests point it at nothing, or at the
 * toolkit's stub library, whose cuInit always fails).  The API is declared
 * here (its ABI is stable; the _v2 names are what cuda.h maps the plain
 * ones to since CUDA 4/11), so no CUDA header is needed either.  The
 * device's PRIMARY context is used, the one the CUDA runtime (cuBLAS, the
 * eager backend) uses too, so device pointers pass freely between them.
 *
 * Which image runs (jn_ex_cuda_pick_image, a pure function): the cubin
 * when the device has the bundle's major compute capability and at least
 * its minor one (cubins are binary-compatible only so); else the PTX,
 * which the driver compiles for any device of at least the bundle's
 * capability (slower to load; a driver older than the NVRTC that made the
 * PTX refuses it, CUDA_ERROR_UNSUPPORTED_PTX_VERSION, and the message
 * says to update the driver); else the bundle is refused naming its target
 * and the device's arch, with the `janus optimize --target` that fixes it.
 * Then __constant__ jn_kabi_version and jn_kmodule_hash are read back
 * (cuModuleGetGlobal) and checked as lib.c checks a .so.
 *
 * Launch: JN_DK_BLOCK threads per block; the grid covers the iteration
 * space (ew, gemm epilogue: one thread per element) or one block per output
 * row (ew_reduce: nred > 0), capped at 32 blocks per multiprocessor since
 * every generated kernel walks its space with a grid-stride loop.  A
 * launch of an empty space is skipped as the CPU executor skips the call.
 * jn_ex_dkcall_from turns the jn_kcall the CPU executor builds (its
 * coalesced shape, operand-major byte strides, bound scalars) into the
 * device struct, so both executors give kernels the same layout.
 *
 * Every driver call's status becomes a jn_error naming the call, the
 * kernel or module, and the driver's own name for the error.
 *
 * Whole graphs (jn_ex_cuda_graphs, at the end): the executor's device
 * table for a module and a backend, and CUDA Graph capture and replay of
 * a graph's runs; described there.
 */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "jn_backend.h"
#include "jn_exec.h"
#include "jn_settings.h"

/* ------------------------------------------------- the driver API slice */
typedef int cu_result; /* CUDA_SUCCESS = 0 */
typedef int cu_device;
typedef struct cu_ctx_st *cu_context;
typedef struct cu_mod_st *cu_module;
typedef struct cu_func_st *cu_function;
typedef unsigned long long cu_deviceptr;

enum {
    CU_STUB_LIBRARY = 34,         /* CUDA_ERROR_STUB_LIBRARY */
    CU_NO_DEVICE = 100,           /* CUDA_ERROR_NO_DEVICE */
    CU_ATTR_MP_COUNT = 16,        /* CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT */
    CU_ATTR_CC_MAJOR = 75,        /* CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR */
    CU_ATTR_CC_MINOR = 76,
    CU_JIT_ERROR_LOG_BUFFER = 5,  /* CUjit_option */
    CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES = 6
};

typedef struct {
    void *lib;
    cu_result (*init)(unsigned);
    cu_result (*driver_version)(int *);
    cu_result (*device_count)(int *);
    cu_result (*device_get)(cu_device *, int);
    cu_result (*device_name)(char *, int, cu_device);
    cu_result (*device_attr)(int *, int, cu_device);
    cu_result (*ctx_retain)(cu_context *, cu_device);
    cu_result (*ctx_release)(cu_device);
    cu_result (*ctx_set_current)(cu_context);
    cu_result (*ctx_synchronize)(void);
    cu_result (*module_load_data_ex)(cu_module *, const void *, unsigned, int *, void **);
    cu_result (*module_unload)(cu_module);
    cu_result (*module_get_function)(cu_function *, cu_module, const char *);
    cu_result (*module_get_global)(cu_deviceptr *, size_t *, cu_module, const char *);
    cu_result (*mem_alloc)(cu_deviceptr *, size_t);
    cu_result (*mem_free)(cu_deviceptr);
    cu_result (*memcpy_htod)(cu_deviceptr, const void *, size_t);
    cu_result (*memcpy_dtoh)(void *, cu_deviceptr, size_t);
    cu_result (*launch)(cu_function, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, void *,
                        void **, void **);
    cu_result (*error_name)(cu_result, const char **);
    cu_result (*error_string)(cu_result, const char **);
    /* CUDA Graphs (optional: NULL when the driver lacks one; graphs then run as plain launches) */
    cu_result (*begin_capture)(void *stream, int mode);
    cu_result (*end_capture)(void *stream, void **graph);
    cu_result (*instantiate)(void **exec, void *graph, unsigned long long flags);
    cu_result (*graph_launch)(void *exec, void *stream);
    cu_result (*exec_update)(void *exec, void *graph, void *result_info);
    cu_result (*exec_destroy)(void *exec);
    cu_result (*graph_destroy)(void *graph);
    char graphs_missing[64]; /* the first graph entry point the driver lacks, "" */
    int version;
    char path[1100];
} cu_api;

static const char *cu_err(const cu_api *a, cu_result r) {
    static char buf[200];
    const char *name = NULL, *text = NULL;
    if (a->error_name) a->error_name(r, &name);
    if (a->error_string) a->error_string(r, &text);
    snprintf(buf, sizeof buf, "%s (%d)%s%s", name ? name : "CUDA error", r, text ? ": " : "", text ? text : "");
    return buf;
}

/* Opens the driver; a failure is not remembered (a test may point
 * $JANUS_LIBCUDA elsewhere and retry), a success is (the handle stays). */
static jn_status cu_get(const cu_api **out) {
    static cu_api api;
    static int opened;
    if (opened) {
        *out = &api;
        return JN_OK;
    }
    cu_api a;
    memset(&a, 0, sizeof a);
    const char *env = NULL;
    jn_status st = jn_setting_str(JN_S_LIBCUDA, &env);
    if (st) return st;
    const char *try_[] = {env && *env ? env : "libcuda.so.1", env && *env ? NULL : "libcuda.so"};
    for (int i = 0; i < 2 && !a.lib && try_[i]; i++) {
        a.lib = dlopen(try_[i], RTLD_NOW | RTLD_LOCAL);
        if (a.lib) snprintf(a.path, sizeof a.path, "%s", try_[i]);
    }
    if (!a.lib)
        return jn_error(JN_ERR_UNSUPPORTED, "the CUDA driver was not found (dlopen of %s failed): CUDA kernels need "
                        "an NVIDIA GPU and its driver; without one, run the cpu bundle (janus optimize --target cpu)",
                        env && *env ? env : "libcuda.so.1 and libcuda.so on the loader's path");
    struct { void **fn; const char *name; } syms[] = {
        {(void **)&a.init, "cuInit"},
        {(void **)&a.driver_version, "cuDriverGetVersion"},
        {(void **)&a.device_count, "cuDeviceGetCount"},
        {(void **)&a.device_get, "cuDeviceGet"},
        {(void **)&a.device_name, "cuDeviceGetName"},
        {(void **)&a.device_attr, "cuDeviceGetAttribute"},
        {(void **)&a.ctx_retain, "cuDevicePrimaryCtxRetain"},
        {(void **)&a.ctx_release, "cuDevicePrimaryCtxRelease_v2"},
        {(void **)&a.ctx_set_current, "cuCtxSetCurrent"},
        {(void **)&a.ctx_synchronize, "cuCtxSynchronize"},
        {(void **)&a.module_load_data_ex, "cuModuleLoadDataEx"},
        {(void **)&a.module_unload, "cuModuleUnload"},
        {(void **)&a.module_get_function, "cuModuleGetFunction"},
        {(void **)&a.module_get_global, "cuModuleGetGlobal_v2"},
        {(void **)&a.mem_alloc, "cuMemAlloc_v2"},
        {(void **)&a.mem_free, "cuMemFree_v2"},
        {(void **)&a.memcpy_htod, "cuMemcpyHtoD_v2"},
        {(void **)&a.memcpy_dtoh, "cuMemcpyDtoH_v2"},
        {(void **)&a.launch, "cuLaunchKernel"},
        {(void **)&a.error_name, "cuGetErrorName"},
        {(void **)&a.error_string, "cuGetErrorString"}};
    for (size_t i = 0; i < sizeof syms / sizeof syms[0]; i++) {
        void *p = dlsym(a.lib, syms[i].name);
        if (!p) {
            jn_status st = jn_error(JN_ERR_UNSUPPORTED, "the CUDA driver at %s lacks %s (a driver older than CUDA "
                                    "12.1?): update the NVIDIA driver", a.path, syms[i].name);
            dlclose(a.lib);
            return st;
        }
        memcpy(syms[i].fn, &p, sizeof p); /* POSIX: a function pointer through void * */
    }
    struct { void **fn; const char *name; } gsyms[] = {
        {(void **)&a.begin_capture, "cuStreamBeginCapture_v2"},
        {(void **)&a.end_capture, "cuStreamEndCapture"},
        {(void **)&a.instantiate, "cuGraphInstantiateWithFlags"},
        {(void **)&a.graph_launch, "cuGraphLaunch"},
        {(void **)&a.exec_update, "cuGraphExecUpdate_v2"},
        {(void **)&a.exec_destroy, "cuGraphExecDestroy"},
        {(void **)&a.graph_destroy, "cuGraphDestroy"}};
    for (size_t i = 0; i < sizeof gsyms / sizeof gsyms[0]; i++) {
        void *p = dlsym(a.lib, gsyms[i].name);
        if (!p && !a.graphs_missing[0]) snprintf(a.graphs_missing, sizeof a.graphs_missing, "%s", gsyms[i].name);
        memcpy(gsyms[i].fn, &p, sizeof p);
    }
    cu_result r = a.init(0);
    if (r) {
        jn_status st = r == CU_STUB_LIBRARY
            ? jn_error(JN_ERR_UNSUPPORTED, "%s is the CUDA toolkit's stub library, not a driver (cuInit: %s): CUDA "
                       "kernels need an NVIDIA GPU and its driver", a.path, cu_err(&a, r))
            : jn_error(JN_ERR_UNSUPPORTED, "the CUDA driver at %s does not start (cuInit: %s): %s", a.path,
                       cu_err(&a, r), r == CU_NO_DEVICE ? "this machine has no NVIDIA GPU"
                                                        : "check the GPU with nvidia-smi");
        dlclose(a.lib);
        return st;
    }
    if (a.driver_version(&a.version)) a.version = 0;
    api = a;
    opened = 1;
    *out = &api;
    return JN_OK;
}

jn_status jn_ex_cuda_device(int device, int *major, int *minor, char *name, size_t n) {
    const cu_api *a;
    jn_status st = cu_get(&a);
    if (st) return st;
    int count = 0;
    cu_device dev;
    char nm[256] = "";
    cu_result r = a->device_count(&count);
    if (r) return jn_error(JN_ERR_RUNTIME, "cuDeviceGetCount: %s", cu_err(a, r));
    if (device < 0 || device >= count)
        return jn_error(JN_ERR_VALUE, "CUDA device %d does not exist (this machine has %d)", device, count);
    if ((r = a->device_get(&dev, device)) || (r = a->device_name(nm, (int)sizeof nm, dev)) ||
        (r = a->device_attr(major, CU_ATTR_CC_MAJOR, dev)) || (r = a->device_attr(minor, CU_ATTR_CC_MINOR, dev)))
        return jn_error(JN_ERR_RUNTIME, "querying CUDA device %d (cuDeviceGet/GetName/GetAttribute): %s", device,
                        cu_err(a, r));
    if (name && n) snprintf(name, n, "%s", nm);
    return JN_OK;
}

/* -------------------------------------------------------- image choice */
/* sm_XY / compute_XY (XY may be 3 digits: sm_100 is 10.0) -> major, minor. */
static int parse_arch(const char *s, int *major, int *minor) {
    int n = 0, used = 0;
    if (sscanf(s, "sm_%d%n", &n, &used) != 1 && sscanf(s, "compute_%d%n", &n, &used) != 1) return 0;
    if (n < 10 || n > 999 || (s[used] != 0 && s[used] != 'a' && s[used] != 'f')) return 0;
    *major = n / 10, *minor = n % 10;
    return 1;
}

jn_status jn_ex_cuda_pick_image(const char *target, int have_cubin, int have_ptx, int dev_major, int dev_minor,
                                const char *device, int *image) {
    *image = JN_RT_CUDA_IMAGE_NONE;
    int bm = 0, bn = 0;
    const char *arch = target && !strncmp(target, "cuda:", 5) ? target + 5 : "";
    if (!parse_arch(arch, &bm, &bn))
        return jn_error(JN_ERR_VALUE, "bundle target '%s' is not a CUDA target (cuda:sm_XX): re-run `janus optimize "
                        "--target cuda:sm_%d%d`", target ? target : "", dev_major, dev_minor);
    if (!have_cubin && !have_ptx)
        return jn_error(JN_ERR_VALUE, "the %s bundle holds no CUDA kernels (no cubin or PTX section): re-run `janus "
                        "optimize --target %s` on a machine with NVRTC", target, target);
    if (have_cubin && dev_major == bm && dev_minor >= bn) {
        *image = JN_RT_CUDA_IMAGE_CUBIN;
        return JN_OK;
    }
    if (have_ptx && dev_major * 10 + dev_minor >= bm * 10 + bn) {
        *image = JN_RT_CUDA_IMAGE_PTX;
        return JN_OK;
    }
    char why[200] = "";
    if (have_cubin)
        snprintf(why, sizeof why, "its cubin runs on sm_%d%d to sm_%d9 only", bm, bn, bm);
    if (have_ptx)
        snprintf(why + strlen(why), sizeof why - strlen(why), "%sits PTX needs sm_%d%d or newer", have_cubin ? ", " : "",
                 bm, bn);
    return jn_error(JN_ERR_UNSUPPORTED, "the %s bundle cannot run on %s (sm_%d%d): %s; re-run `janus optimize "
                    "--target cuda:sm_%d%d` for this GPU", target, device ? device : "this GPU", dev_major, dev_minor,
                    why, dev_major, dev_minor);
}

/* ------------------------------------------------------- the jn_dkcall */
jn_status jn_ex_dkcall_from(const jn_kcall *c, int32_t nscalar, jn_dkcall *d) {
    if (c->nops < 1 || c->nops > JN_DK_MAX_OPS)
        return jn_error(JN_ERR_UNSUPPORTED, "a kernel call with %d operands does not fit the CUDA kernel ABI (at most "
                        "%d)", c->nops, JN_DK_MAX_OPS);
    if (c->ndim < 1 || c->ndim > JN_MAX_DIMS || c->nred < 0 || c->nred > c->ndim)
        return jn_error(JN_ERR_VALUE, "a kernel call over %d dims with %d reduced is malformed (1..%d dims)", c->ndim,
                        c->nred, JN_MAX_DIMS);
    if (nscalar < 0 || nscalar > JN_DK_MAX_SCALARS)
        return jn_error(JN_ERR_UNSUPPORTED, "a kernel call binding %d scalars does not fit the CUDA kernel ABI (at most "
                        "%d)", nscalar, JN_DK_MAX_SCALARS);
    memset(d, 0, sizeof *d); /* unused slots zero: the launch copies the whole struct */
    d->nops = c->nops, d->ndim = c->ndim, d->nred = c->nred;
    for (int k = 0; k < c->nops; k++) {
        d->data[k] = c->data[k];
        for (int i = 0; i < c->ndim; i++) d->strides[k][i] = c->strides[(size_t)k * (size_t)c->ndim + (size_t)i];
    }
    for (int i = 0; i < c->ndim; i++) d->shape[i] = c->shape[i];
    for (int j = 0; j < nscalar; j++) d->scalars[j] = c->scalars[j];
    return JN_OK;
}

/* ---------------------------------------------------------- the module */
typedef struct {
    cu_deviceptr base;
    size_t cap;
} darena;

struct jn_ex_dlib {
    const cu_api *a;
    cu_device dev;
    cu_context ctx;
    cu_module mod;
    int nsm, image;
    char name[256], origin[200];
    darena *arenas;   /* per graph index */
    int32_t narenas;
};

static jn_status ctx_current(const jn_ex_dlib *l, const char *what) {
    cu_result r = l->a->ctx_set_current(l->ctx);
    return r ? jn_error(JN_ERR_RUNTIME, "cuCtxSetCurrent before %s for %s: %s", what, l->origin, cu_err(l->a, r)) : JN_OK;
}

static jn_status check_globals(jn_ex_dlib *l, uint64_t module_hash) {
    const cu_api *a = l->a;
    cu_deviceptr p = 0;
    size_t sz = 0;
    int abi = 0;
    unsigned long long hash = 0;
    cu_result r = a->module_get_global(&p, &sz, l->mod, "jn_kabi_version");
    if (r || sz != sizeof abi)
        return jn_error(JN_ERR_VALUE, "the CUDA kernels of %s lack jn_kabi_version (cuModuleGetGlobal: %s), so they "
                        "were not made by janus's emitter: re-run `janus optimize`", l->origin,
                        r ? cu_err(a, r) : "wrong size");
    if ((r = a->memcpy_dtoh(&abi, p, sizeof abi)))
        return jn_error(JN_ERR_RUNTIME, "cuMemcpyDtoH of jn_kabi_version of %s: %s", l->origin, cu_err(a, r));
    if (abi != JN_DKABI_VERSION)
        return jn_error(JN_ERR_VALUE, "the CUDA kernels of %s use device kernel ABI %d, this janus uses %d: re-run "
                        "`janus optimize` with this janus", l->origin, abi, JN_DKABI_VERSION);
    r = a->module_get_global(&p, &sz, l->mod, "jn_kmodule_hash");
    if (r || sz != sizeof hash)
        return jn_error(JN_ERR_VALUE, "the CUDA kernels of %s lack jn_kmodule_hash (cuModuleGetGlobal: %s): re-run "
                        "`janus optimize`", l->origin, r ? cu_err(a, r) : "wrong size");
    if ((r = a->memcpy_dtoh(&hash, p, sizeof hash)))
        return jn_error(JN_ERR_RUNTIME, "cuMemcpyDtoH of jn_kmodule_hash of %s: %s", l->origin, cu_err(a, r));
    if ((uint64_t)hash != module_hash)
        return jn_error(JN_ERR_VALUE, "the CUDA kernels of %s were built for another module (hash %016llx, the graphs "
                        "hash to %016llx): re-run `janus optimize` to rebuild them together", l->origin, hash,
                        (unsigned long long)module_hash);
    return JN_OK;
}

jn_status jn_ex_dlib_open(const void *cubin, size_t cubinlen, const char *ptx, size_t ptxlen, const char *target,
                          uint64_t module_hash, const char *origin, int device, jn_ex_dlib **out) {
    *out = NULL;
    if (!origin) origin = "the bundle";
    const cu_api *a;
    jn_status st = cu_get(&a);
    if (st) return st;
    int n = 0;
    cu_result r = a->device_count(&n);
    if (r) return jn_error(JN_ERR_RUNTIME, "cuDeviceGetCount: %s", cu_err(a, r));
    if (device < 0 || device >= n)
        return jn_error(JN_ERR_VALUE, "CUDA device %d does not exist (this machine has %d)", device, n);
    jn_ex_dlib *l = calloc(1, sizeof *l);
    if (!l) return jn_error(JN_ERR_NOMEM, "out of memory loading the CUDA kernels of %s", origin);
    l->a = a;
    snprintf(l->origin, sizeof l->origin, "%s", origin);
    int major = 0, minor = 0;
    if ((r = a->device_get(&l->dev, device)) || (r = a->device_name(l->name, (int)sizeof l->name, l->dev)) ||
        (r = a->device_attr(&major, CU_ATTR_CC_MAJOR, l->dev)) ||
        (r = a->device_attr(&minor, CU_ATTR_CC_MINOR, l->dev)) ||
        (r = a->device_attr(&l->nsm, CU_ATTR_MP_COUNT, l->dev))) {
        st = jn_error(JN_ERR_RUNTIME, "querying CUDA device %d (cuDeviceGet/GetName/GetAttribute): %s", device,
                      cu_err(a, r));
        free(l);
        return st;
    }
    int have_cubin = cubin && cubinlen > 4, have_ptx = ptx && ptxlen > 0;
    if ((st = jn_ex_cuda_pick_image(target, have_cubin, have_ptx, major, minor, l->name, &l->image))) {
        free(l);
        return st;
    }
    if ((r = a->ctx_retain(&l->ctx, l->dev))) {
        st = jn_error(JN_ERR_RUNTIME, "cuDevicePrimaryCtxRetain on %s: %s", l->name, cu_err(a, r));
        free(l);
        return st;
    }
    if ((st = ctx_current(l, "loading the module"))) goto fail;
    char log[4096] = "";
    int opts[] = {CU_JIT_ERROR_LOG_BUFFER, CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES};
    void *vals[] = {log, (void *)(uintptr_t)sizeof log};
    char *ptxz = NULL; /* the driver reads PTX as a NUL-terminated string */
    const void *img = cubin;
    if (l->image == JN_RT_CUDA_IMAGE_PTX) {
        if (!(ptxz = malloc(ptxlen + 1))) {
            st = jn_error(JN_ERR_NOMEM, "out of memory loading the CUDA kernels of %s", origin);
            goto fail;
        }
        memcpy(ptxz, ptx, ptxlen);
        ptxz[ptxlen] = 0;
        img = ptxz;
    }
    r = a->module_load_data_ex(&l->mod, img, 2, opts, vals);
    free(ptxz);
    if (r) {
        log[sizeof log - 1] = 0;
        int old_driver = r == 222 || r == 35; /* UNSUPPORTED_PTX_VERSION, INSUFFICIENT_DRIVER */
        st = jn_error(JN_ERR_RUNTIME, "cuModuleLoadDataEx of the %s of %s (%s) on %s (sm_%d%d, driver %d.%d): %s%s%s; "
                      "%s", l->image == JN_RT_CUDA_IMAGE_PTX ? "PTX" : "cubin", origin, target, l->name, major, minor,
                      a->version / 1000, a->version % 1000 / 10, cu_err(a, r), log[0] ? " -- " : "", log,
                      old_driver ? "the driver is older than the CUDA toolkit whose NVRTC made the kernels: update "
                                   "the NVIDIA driver"
                                 : "re-run `janus optimize --target` for this GPU");
        l->mod = NULL;
        goto fail;
    }
    if ((st = check_globals(l, module_hash))) goto fail;
    *out = l;
    return JN_OK;
fail:
    jn_ex_dlib_close(l);
    return st;
}

void jn_ex_dlib_close(jn_ex_dlib *l) {
    if (!l) return;
    if (l->ctx && l->a->ctx_set_current(l->ctx) == 0) {
        for (int32_t i = 0; i < l->narenas; i++)
            if (l->arenas[i].base) l->a->mem_free(l->arenas[i].base);
        if (l->mod) l->a->module_unload(l->mod);
    }
    if (l->ctx) l->a->ctx_release(l->dev);
    free(l->arenas);
    free(l);
}

int jn_ex_dlib_image(const jn_ex_dlib *l, char *device, size_t n) {
    if (device && n) snprintf(device, n, "%s", l->name);
    return l->image;
}

/* Kernel K<k> of graph gi, NULL (no error set) when the module has none. */
static cu_function dlib_function(const jn_ex_dlib *l, int32_t gi, int32_t k) {
    char name[48];
    snprintf(name, sizeof name, "jn_k%d_%d", gi, k);
    cu_function f = NULL;
    return l->a->module_get_function(&f, l->mod, name) ? NULL : f;
}

int jn_ex_dlib_has_kernel(const jn_ex_dlib *l, int32_t gi, int32_t k) {
    return l && ctx_current(l, "a kernel lookup") == JN_OK && dlib_function(l, gi, k) != NULL;
}

jn_status jn_ex_dlib_launch(jn_ex_dlib *l, int32_t gi, int32_t k, const jn_dkcall *d, void *stream) {
    jn_status st = ctx_current(l, "a launch");
    if (st) return st;
    cu_function f = dlib_function(l, gi, k);
    if (!f)
        return jn_error(JN_ERR_VALUE, "the CUDA module of %s has no kernel jn_k%d_%d (graph index %d kernel K%d): "
                        "re-run `janus optimize`", l->origin, gi, k, gi, k);
    if (d->ndim < 1 || d->ndim > JN_MAX_DIMS || d->nred < 0 || d->nred > d->ndim)
        return jn_error(JN_ERR_VALUE, "kernel jn_k%d_%d of %s: a call over %d dims with %d reduced is malformed", gi,
                        k, l->origin, d->ndim, d->nred);
    int64_t total = 1, rows = 1;
    for (int i = 0; i < d->ndim; i++) {
        total *= d->shape[i];
        if (i < d->ndim - d->nred) rows *= d->shape[i];
    }
    int reduce = d->nred > 0;
    if (reduce ? rows == 0 : total == 0) return JN_OK; /* nothing to do (an empty reduction still writes rows) */
    int64_t blocks = reduce ? rows : (total + JN_DK_BLOCK - 1) / JN_DK_BLOCK, cap = (int64_t)(l->nsm > 0 ? l->nsm : 1) * 32;
    unsigned grid = (unsigned)(blocks < cap ? blocks : cap);
    void *params[] = {(void *)d};
    cu_result r = l->a->launch(f, grid, 1, 1, JN_DK_BLOCK, 1, 1, 0, stream, params, NULL);
    if (r)
        return jn_error(JN_ERR_RUNTIME, "cuLaunchKernel of jn_k%d_%d of %s (%u blocks of %d threads, %d operands): %s",
                        gi, k, l->origin, grid, JN_DK_BLOCK, d->nops, cu_err(l->a, r));
    return JN_OK;
}

jn_status jn_ex_dlib_sync(jn_ex_dlib *l) {
    jn_status st = ctx_current(l, "a synchronize");
    if (st) return st;
    cu_result r = l->a->ctx_synchronize();
    /* a kernel's fault surfaces here: name the module it came from */
    return r ? jn_error(JN_ERR_RUNTIME, "cuCtxSynchronize after the CUDA kernels of %s: %s", l->origin,
                        cu_err(l->a, r))
             : JN_OK;
}

jn_status jn_ex_dlib_arena(jn_ex_dlib *l, int32_t gi, size_t bytes, uint64_t *base) {
    *base = 0;
    if (gi < 0) return jn_error(JN_ERR_VALUE, "graph index %d for a device arena of %s", gi, l->origin);
    if (gi >= l->narenas) {
        darena *na = realloc(l->arenas, sizeof *na * (size_t)(gi + 1));
        if (!na) return jn_error(JN_ERR_NOMEM, "out of memory for the device arenas of %s", l->origin);
        memset(na + l->narenas, 0, sizeof *na * (size_t)(gi + 1 - l->narenas));
        l->arenas = na, l->narenas = gi + 1;
    }
    darena *A = &l->arenas[gi];
    if (A->cap < bytes || !A->base) {
        jn_status st = ctx_current(l, "a device arena");
        if (st) return st;
        /* in-flight kernels may still use the old one */
        cu_result r = A->base ? l->a->ctx_synchronize() : 0;
        if (!r && A->base) r = l->a->mem_free(A->base);
        A->base = 0, A->cap = 0;
        if (r || (r = l->a->mem_alloc(&A->base, bytes ? bytes : 1)))
            return jn_error(JN_ERR_NOMEM, "cuMemAlloc of the %zu-byte device arena of graph index %d of %s on %s: %s",
                            bytes, gi, l->origin, l->name, cu_err(l->a, r));
        A->cap = bytes;
    }
    *base = A->base;
    return JN_OK;
}

jn_status jn_ex_dlib_upload(jn_ex_dlib *l, uint64_t dst, const void *src, size_t n) {
    jn_status st = ctx_current(l, "a copy to the device");
    if (st || n == 0) return st;
    cu_result r = l->a->memcpy_htod(dst, src, n);
    return r ? jn_error(JN_ERR_RUNTIME, "cuMemcpyHtoD of %zu bytes for %s: %s", n, l->origin, cu_err(l->a, r)) : JN_OK;
}

jn_status jn_ex_dlib_download(jn_ex_dlib *l, void *dst, uint64_t src, size_t n) {
    jn_status st = ctx_current(l, "a copy from the device");
    if (st || n == 0) return st;
    cu_result r = l->a->memcpy_dtoh(dst, src, n);
    return r ? jn_error(JN_ERR_RUNTIME, "cuMemcpyDtoH of %zu bytes for %s: %s", n, l->origin, cu_err(l->a, r)) : JN_OK;
}

/* ------------------------------------------------- whole graphs on a GPU
 * The jn_ex_device of jn_exec.h for a CUDA module and a backend: the
 * executor's buffers come from the backend (the eager CUDA backend's
 * caching allocator), its arena from the module's per-graph device arena,
 * library nodes run the backend's kernels on tensors over that memory (or
 * an injected runner's), generated kernels are launched from the module
 * on `stream` -- the backend's compute stream, so stream order covers
 * both without events.
 *
 * CUDA Graphs (jn_ex_cuda_graphs_run): the steps of a graph's first run
 * are captured from the stream (relaxed mode: the caching allocator may
 * still cudaMalloc) and instantiated; every buffer made during the
 * capture is PINNED (held for the graph's life, since the graph writes
 * those addresses again).  A later run walks the same steps on the host
 * only -- headers, views, the pinned buffers handed out again in the same
 * order -- launching nothing, and folds every call (kernel parameters,
 * node attributes, operand addresses, shapes, strides) into a hash: equal
 * to the capture's, the graph is launched (cuGraphLaunch); else the
 * bindings changed (another batch tensor, another lr baked into a kernel
 * parameter, a new arena): the run is redone as a new capture and the
 * executable graph updated (cuGraphExecUpdate) or, failing that,
 * instantiated again.  A capture that fails (a host sync inside a kernel,
 * an API the capture forbids) makes that graph run as plain launches from
 * then on, the reason kept. */
enum { M_PLAIN, M_CAPTURE, M_WALK };

typedef struct {
    void *exec;              /* CUgraphExec, NULL */
    jn_tensor **pin;         /* buffers the graph writes, in the order the run made them */
    int32_t npin, cappin;
    uint64_t hash;           /* of the capture's calls */
    int64_t ncalls;
    int off;                 /* capture failed once: plain launches from now on */
    void *held;              /* device blocks freed during the capture (jn_cuda_hold_end) */
    char flag_msg[200];      /* index checks captured: the first one's message, read after each launch */
    int churn;               /* runs in a row whose walk differed from the capture */
} cgraph;

/* A graph whose walk differs from its capture this many runs in a row (a
 * learning rate or Adam's step count baked into a kernel's parameters
 * changes every step) runs as plain launches from then on: a walk, a new
 * capture and an update cost more host time than launching one by one
 * (fashion_mlp's step on an H200: 0.63x janus eager recapturing each step). */
#define CHURN_MAX 3

struct jn_ex_cuda_graphs {
    jn_ex_device dev;
    jn_ex_dlib *l;              /* may be NULL: no generated kernels */
    const jn_rt_backend *be;
    void *stream;
    jn_ex_cuda_graphs_runner run;  /* library nodes and copies */
    int graphs;                 /* CUDA Graphs wanted and the driver has them */
    /* the run in progress */
    int want, mode, retry, recapture;
    int32_t pin0;               /* pinned buffers of the previous capture */
    int32_t gi;
    uint64_t hash;
    int64_t ncalls, walk_pin;
    cgraph *g;                  /* per graph index */
    int32_t ng;
    jn_ex_cuda_graphs_stats st;
    char name[32];
};

static uint64_t h64(uint64_t h, const void *p, size_t n) {
    const unsigned char *b = p;
    for (size_t i = 0; i < n; i++) h = (h ^ b[i]) * 0x100000001b3ull;
    return h;
}
static uint64_t h_tensor(uint64_t h, const jn_tensor *t) {
    const char *d = t->storage->data ? jn_data(t) : NULL;
    h = h64(h, &d, sizeof d);
    h = h64(h, &t->dtype, sizeof t->dtype);
    h = h64(h, &t->ndim, sizeof t->ndim);
    h = h64(h, t->shape, sizeof(int64_t) * (size_t)t->ndim);
    return h64(h, t->strides, sizeof(int64_t) * (size_t)t->ndim);
}

static int cg_supports(void *ctx, jn_op op) {
    const jn_ex_cuda_graphs *c = ctx;
    return (unsigned)op < JN_NOPS && c->be->kernel[op] != NULL;
}

/* The default runner: the backend's kernel, a CPU number staged where the
 * backend wants device memory (the executor passes scalar inputs in device
 * memory already: a guard). */
static jn_status be_node(void *ctx, jn_op op, int nin, jn_tensor *const *in, const jn_attrs *a, jn_tensor *const *out) {
    const jn_rt_backend *be = ((jn_ex_cuda_graphs *)ctx)->be;
    jn_tensor *use[JN_MAX_INS], *staged[JN_MAX_INS] = {0};
    jn_status s = JN_OK;
    for (int i = 0; i < nin && i < JN_MAX_INS; i++) {
        use[i] = in[i];
        if (in[i]->storage->device != be->device && !be->host_scalars[op]) {
            if (!(staged[i] = jn_rt_to_device(in[i], be->device, 0))) {
                s = jn_errmsg()[0] ? JN_ERR_NOMEM : jn_error(JN_ERR_NOMEM, "out of memory staging input %d of %s", i,
                                                             jn_op_info(op)->name);
                break;
            }
            use[i] = staged[i];
        }
    }
    if (s == JN_OK) s = be->kernel[op](nin, use, a, out);
    for (int i = 0; i < nin && i < JN_MAX_INS; i++) jn_tensor_decref(staged[i]);
    return s;
}
static jn_status be_copy(void *ctx, jn_tensor *dst, const jn_tensor *src) {
    (void)ctx; /* jn_copy_into follows the storages' device to the backend */
    return jn_copy_into(dst, src);
}

static jn_status cg_node(void *ctx, jn_op op, int nin, jn_tensor *const *in, const jn_attrs *a, jn_tensor *const *out) {
    jn_ex_cuda_graphs *c = ctx;
    const jn_opinfo *info = jn_op_info(op);
    int view = (info->flags & JN_F_VIEW) != 0;
    if (c->mode != M_PLAIN && !view) { /* views only set strides on the host: nothing a graph holds */
        c->hash = h64(c->hash, &op, sizeof op);
        c->hash = h64(c->hash, a, sizeof(jn_attr) * (size_t)info->nattrs); /* the rest is not set (node_attrs) */
        for (int i = 0; i < nin; i++) c->hash = h_tensor(c->hash, in[i]);
        for (int j = 0; j < info->nout; j++) c->hash = h_tensor(c->hash, out[j]);
        c->ncalls++;
        if (c->mode == M_WALK) return JN_OK;
    }
    if (!view) c->st.nodes++;
    return c->run.node(c->run.ctx, op, nin, in, a, out);
}

static jn_status cg_copy(void *ctx, jn_tensor *dst, const jn_tensor *src) {
    jn_ex_cuda_graphs *c = ctx;
    if (c->mode != M_PLAIN) {
        c->hash = h_tensor(h_tensor(c->hash ^ 0xc0, dst), src);
        c->ncalls++;
        if (c->mode == M_WALK) return JN_OK;
    }
    return c->run.copy(c->run.ctx, dst, src);
}

static jn_status pin(cgraph *G, jn_tensor *t) {
    if (G->npin == G->cappin) {
        int32_t n = G->cappin ? 2 * G->cappin : 32;
        jn_tensor **p = realloc(G->pin, sizeof *p * (size_t)n);
        if (!p) return jn_error(JN_ERR_NOMEM, "out of memory pinning a CUDA Graph's buffers");
        G->pin = p, G->cappin = n;
    }
    jn_tensor_incref(t);
    G->pin[G->npin++] = t;
    return JN_OK;
}

static jn_tensor *cg_tensor_new(void *ctx, const jn_meta *m) {
    jn_ex_cuda_graphs *c = ctx;
    if (c->mode == M_WALK) { /* the capture's buffer, if the run asks for the same */
        cgraph *G = &c->g[c->gi];
        jn_tensor *t = c->walk_pin < G->npin ? G->pin[c->walk_pin] : NULL;
        if (!t || t->dtype != m->dtype || !jn_same_shape(t->ndim, t->shape, m->ndim, m->shape)) {
            jn_error(JN_ERR_RUNTIME, "the run asks for other buffers than the CUDA Graph's capture");
            c->retry = 1;
            return NULL;
        }
        c->walk_pin++;
        jn_tensor_incref(t);
        return t;
    }
    c->st.buffers++;
    jn_tensor *t = c->be->tensor_new(m);
    if (t && c->mode == M_CAPTURE && pin(&c->g[c->gi], t)) {
        jn_tensor_decref(t);
        return NULL;
    }
    return t;
}

static jn_status cg_arena(void *ctx, int32_t gi, size_t bytes, jn_tensor **out) {
    jn_ex_cuda_graphs *c = ctx;
    *out = NULL;
    int64_t n = (int64_t)(bytes ? bytes : 1);
    if (!c->l) { /* no module: the backend's memory */
        jn_meta m = {JN_U8, 1, {n}};
        *out = c->be->tensor_new(&m);
        return *out ? JN_OK : jn_error(JN_ERR_NOMEM, "out of memory for the %zu-byte arena of graph index %d", bytes, gi);
    }
    uint64_t base = 0;
    jn_status s = jn_ex_dlib_arena(c->l, gi, (size_t)n, &base);
    if (s) return s;
    /* the module owns the memory: the header neither frees nor moves it */
    *out = jn_tensor_from_memory((void *)(uintptr_t)base, (size_t)n, JN_U8, 1, &n, NULL, 0, NULL, NULL);
    if (!*out) return jn_error(JN_ERR_NOMEM, "out of memory for the arena header of graph index %d", gi);
    (*out)->storage->device = (uint8_t)c->be->device;
    c->st.arenas++;
    return JN_OK;
}

static int cg_has_kernel(void *ctx, int32_t gi, int32_t k) {
    const jn_ex_cuda_graphs *c = ctx;
    return c->l && jn_ex_dlib_has_kernel(c->l, gi, k);
}

static jn_status cg_launch(void *ctx, int32_t gi, int32_t k, const jn_kcall *kc, int32_t nscalar) {
    jn_ex_cuda_graphs *c = ctx;
    jn_dkcall d;
    jn_status s = jn_ex_dkcall_from(kc, nscalar, &d);
    if (s) return s;
    if (c->mode != M_PLAIN) { /* the parameters are baked into a captured launch */
        c->hash = h64(h64(c->hash, &k, sizeof k), &d, sizeof d);
        c->ncalls++;
        if (c->mode == M_WALK) return JN_OK;
    }
    s = jn_ex_dlib_launch(c->l, gi, k, &d, c->stream);
    c->st.launches += s == JN_OK && c->mode == M_PLAIN;
    return s;
}

static void unpin(cgraph *G) {
    for (int32_t i = 0; i < G->npin; i++) jn_tensor_decref(G->pin[i]);
    G->npin = 0;
}

static jn_status cg_begin(void *ctx, int32_t gi) {
    jn_ex_cuda_graphs *c = ctx;
    c->gi = gi;
    c->hash = 0xcbf29ce484222325ull, c->ncalls = 0, c->walk_pin = 0;
    c->mode = M_PLAIN;
    if (!c->want) { /* jn_ex_run outside jn_ex_cuda_graphs_run, or a fallback */
        c->st.plain_runs++;
        return JN_OK;
    }
    if (gi >= c->ng) {
        cgraph *ng = realloc(c->g, sizeof *ng * (size_t)(gi + 1));
        if (!ng) return jn_error(JN_ERR_NOMEM, "out of memory for the CUDA Graphs of graph index %d", gi);
        memset(ng + c->ng, 0, sizeof *ng * (size_t)(gi + 1 - c->ng));
        c->g = ng, c->ng = gi + 1;
    }
    cgraph *G = &c->g[gi];
    if (G->off) {
        c->st.plain_runs++;
        return JN_OK;
    }
    if (G->exec && !c->recapture) {
        c->mode = M_WALK;
        return JN_OK;
    }
    c->mode = M_CAPTURE;
    c->l->a->ctx_set_current(c->l->ctx);
    cu_result r = c->l->a->begin_capture(c->stream, 2 /* CU_STREAM_CAPTURE_MODE_RELAXED */);
    if (r) { /* not capturable here: plain launches (this run and the next ones) */
        snprintf(c->st.plain_reason, sizeof c->st.plain_reason, "cuStreamBeginCapture: %s", cu_err(c->l->a, r));
        G->off = 1;
        c->mode = M_PLAIN;
        c->st.plain_runs++;
        return JN_OK;
    }
    c->pin0 = G->npin;
    if (c->be->device == JN_CUDA) jn_cuda_hold_begin();
    return JN_OK;
}

static jn_status cg_end(void *ctx, int32_t gi, jn_status s) {
    jn_ex_cuda_graphs *c = ctx;
    if (c->mode == M_PLAIN) return s;
    cgraph *G = &c->g[gi];
    const cu_api *a = c->l->a;
    int mode = c->mode;
    c->mode = M_PLAIN;
    if (mode == M_WALK) {
        if (s == JN_OK && c->hash == G->hash && c->ncalls == G->ncalls && c->walk_pin == G->npin) {
            cu_result r = a->graph_launch(G->exec, c->stream);
            if (!r) {
                c->st.replays++;
                G->churn = 0;
                return G->flag_msg[0] && c->be->device == JN_CUDA ? jn_cuda_flag_check(G->flag_msg) : JN_OK;
            }
            snprintf(c->st.plain_reason, sizeof c->st.plain_reason, "cuGraphLaunch: %s", cu_err(a, r));
            G->off = 1;
        }
        if (!G->off && ++G->churn >= CHURN_MAX) {
            snprintf(c->st.plain_reason, sizeof c->st.plain_reason, "graph index %d changed its kernel parameters or "
                     "buffers in %d runs in a row (a learning rate or step count baked into a kernel?)", gi, CHURN_MAX);
            G->off = 1;
            a->exec_destroy(G->exec);
            G->exec = NULL;
            unpin(G);
            jn_cuda_hold_release(G->held);
            G->held = NULL;
        }
        c->retry = 1; /* the bindings changed (or the launch failed): redo the run */
        return s ? s : jn_error(JN_ERR_RUNTIME, "the CUDA Graph of graph index %d needs a new capture", gi);
    }
    void *graph = NULL;
    cu_result r = a->end_capture(c->stream, &graph);
    void *held = c->be->device == JN_CUDA ? jn_cuda_hold_end() : NULL;
    if (c->be->device == JN_CUDA) snprintf(G->flag_msg, sizeof G->flag_msg, "%s", jn_cuda_flag_deferred());
    const char *why = NULL;
    char buf[300];
    if (s) { /* a call inside failed: a host sync, a forbidden API, ... */
        snprintf(buf, sizeof buf, "%s", jn_errmsg());
        why = buf;
    } else if (r || !graph) {
        snprintf(buf, sizeof buf, "cuStreamEndCapture: %s", r ? cu_err(a, r) : "no graph");
        why = buf;
    }
    if (!why && G->exec) { /* same shape of work, new parameters: update the executable graph */
        struct { int result; void *err_node, *err_from; } info = {0, NULL, NULL};
        if (a->exec_update(G->exec, graph, &info) == 0) {
            c->st.updates++;
        } else {
            a->exec_destroy(G->exec);
            G->exec = NULL;
        }
    }
    if (!why && !G->exec) {
        if ((r = a->instantiate(&G->exec, graph, 0))) {
            snprintf(buf, sizeof buf, "cuGraphInstantiate: %s", cu_err(a, r));
            why = buf, G->exec = NULL;
        } else {
            c->st.instantiations++;
        }
    }
    if (graph) a->graph_destroy(graph);
    if (!why && (r = a->graph_launch(G->exec, c->stream))) {
        snprintf(buf, sizeof buf, "cuGraphLaunch: %s", cu_err(a, r));
        why = buf;
    }
    /* the pinned buffers of the previous capture are no longer in any graph */
    int32_t old = c->pin0;
    if (old > 0) {
        for (int32_t i = 0; i < old; i++) jn_tensor_decref(G->pin[i]);
        memmove(G->pin, G->pin + old, sizeof *G->pin * (size_t)(G->npin - old));
        G->npin -= old;
    }
    jn_cuda_hold_release(G->held);
    G->held = NULL;
    if (why) { /* nothing ran (a capture executes nothing): redo the run with plain launches */
        snprintf(c->st.plain_reason, sizeof c->st.plain_reason, "%s", why);
        G->off = 1;
        if (G->exec) a->exec_destroy(G->exec), G->exec = NULL;
        unpin(G);
        jn_cuda_hold_release(held);
        c->retry = 1;
        return s ? s : jn_error(JN_ERR_RUNTIME, "graph index %d: %s", gi, why);
    }
    G->held = held;
    c->st.captures++;
    G->hash = c->hash, G->ncalls = c->ncalls;
    return G->flag_msg[0] ? jn_cuda_flag_check(G->flag_msg) : JN_OK;
}

static void cg_graph_free(jn_ex_cuda_graphs *c, cgraph *G) {
    if (G->exec) c->l->a->exec_destroy(G->exec);
    G->exec = NULL;
    unpin(G);
    free(G->pin);
    G->pin = NULL, G->cappin = 0;
    jn_cuda_hold_release(G->held);
    G->held = NULL;
}

jn_status jn_ex_cuda_graphs_new(jn_ex_dlib *l, const jn_rt_backend *be, void *stream, jn_ex_cuda_graphs **out) {
    *out = NULL;
    if (!be) be = jn_rt_backends[JN_CUDA];
    if (!be)
        return jn_error(JN_ERR_UNSUPPORTED, "graphs on the GPU need the eager CUDA backend, which is not available "
                        "(%s): run the cpu bundle", jn_cuda_built() ? "no usable GPU, or janus.cuda not initialized"
                                                                    : "this janus was built without CUDA");
    if (!stream && be->device == JN_CUDA) stream = jn_cuda_stream();
    jn_ex_cuda_graphs *c = calloc(1, sizeof *c);
    if (!c) return jn_error(JN_ERR_NOMEM, "out of memory");
    c->l = l, c->be = be, c->stream = stream;
    c->run = (jn_ex_cuda_graphs_runner){be_node, be_copy, c};
    snprintf(c->name, sizeof c->name, "%s", be->device == JN_CUDA ? "cuda:0" : "the fake device");
    c->dev = (jn_ex_device){.name = c->name, .storage_device = be->device, .ctx = c, .supports = cg_supports,
                                 .node = cg_node, .tensor_new = cg_tensor_new, .copy = cg_copy, .arena = cg_arena,
                                 .has_kernel = cg_has_kernel, .launch = cg_launch, .begin = cg_begin, .end = cg_end};
    /* CUDA Graphs: the module's driver must have them; JANUS_CUDA_GRAPHS=0 switches them off */
    int graphs = 1;
    jn_status st = jn_setting_bool(JN_S_CUDA_GRAPHS, &graphs);
    if (st) {
        free(c);
        return st;
    }
    if (!l) snprintf(c->st.plain_reason, sizeof c->st.plain_reason, "no CUDA module (no generated kernels)");
    else if (l->a->graphs_missing[0])
        snprintf(c->st.plain_reason, sizeof c->st.plain_reason, "the driver lacks %s", l->a->graphs_missing);
    else if (!graphs)
        snprintf(c->st.plain_reason, sizeof c->st.plain_reason, "JANUS_CUDA_GRAPHS=%s", jn_setting_raw(JN_S_CUDA_GRAPHS));
    else c->graphs = 1;
    c->dev.copy_outputs = c->graphs;
    *out = c;
    return JN_OK;
}

void jn_ex_cuda_graphs_set_runner(jn_ex_cuda_graphs *c, const jn_ex_cuda_graphs_runner *r) {
    c->run = r ? *r : (jn_ex_cuda_graphs_runner){be_node, be_copy, c};
}

void jn_ex_cuda_graphs_free(jn_ex_cuda_graphs *c) {
    if (!c) return;
    for (int32_t i = 0; i < c->ng; i++) cg_graph_free(c, &c->g[i]);
    free(c->g);
    free(c);
}

const jn_ex_device *jn_ex_cuda_graphs_device(jn_ex_cuda_graphs *c) { return &c->dev; }

void jn_ex_cuda_graphs_get_stats(const jn_ex_cuda_graphs *c, jn_ex_cuda_graphs_stats *st) { *st = c->st; }

jn_status jn_ex_cuda_graphs_run(jn_ex_cuda_graphs *c, jn_ex_exec *x, jn_tensor *const *inputs, const int64_t *syms,
                                jn_tensor **outs) {
    /* a collective (NCCL) waits for the stream: not capturable, and a failed
     * capture must not have issued it once already */
    c->want = c->graphs && !jn_ex_has_collective(x), c->retry = 0, c->recapture = 0;
    jn_status s = jn_ex_run(x, inputs, syms, outs);
    if (c->retry) { /* the replay walk differed from the capture: capture anew */
        c->retry = 0, c->recapture = 1;
        s = jn_ex_run(x, inputs, syms, outs);
    }
    if (c->retry) { /* the capture failed (nothing ran): plain launches */
        c->retry = 0, c->want = 0;
        s = jn_ex_run(x, inputs, syms, outs);
    }
    c->want = 0, c->recapture = 0;
    return s;
}
