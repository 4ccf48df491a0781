/* fake_libcuda.c -- a stand-in for the CUDA driver (libcuda.so.1) that runs
 * "device" code on the host, so test_exec_cuda can drive every line of
 * exec/exec_cuda.c and its own GPU-against-CPU harness on a
 * machine without a GPU.  Not built by CMake: the test compiles it at run
 * time (jn_cg_compile_so, -I to exec, ir, runtime) and points
 * $JANUS_LIBCUDA at it.
 *
 * One device, "Fake GPU", compute capability 9.0, 4 multiprocessors.
 * Device memory is host memory (cuMemAlloc is malloc; a CUdeviceptr is
 * the address).  A "cubin" is a shared object of janus's generated C
 * kernels (codegen/emit_c.c): cuModuleLoadDataEx dlopens it, a CUfunction
 * is its jn_k<g>_<k>, cuModuleGetGlobal finds jn_kabi_version and
 * jn_kmodule_hash in it, and cuLaunchKernel turns the jn_dkcall it is
 * given back into a jn_kcall (operand-major strides, a serial
 * parallel_for) and calls the C kernel.  So what a launch computes is the
 * CPU kernel's result on what the executor passed: the test checks the
 * plumbing (layout, uploads, downloads, arena, checks, errors), not CUDA
 * code.  PTX images are refused (CUDA_ERROR_INVALID_PTX) with a log line.
 * FAKE_CUDA_FAIL=launch makes every launch fail (CUDA_ERROR_LAUNCH_FAILED).
 * Stream capture records kernel launches (their jn_dkcall copied, as the
 * driver copies parameters) and host functions (cuLaunchHostFunc) into a
 * graph instead of running them; an executable graph runs that list at
 * each cuGraphLaunch; cuGraphExecUpdate takes new parameters when the
 * list has the same kernels in the same order, else fails as the driver
 * does for a changed topology.  FAKE_CUDA_FAIL=capture makes
 * cuStreamBeginCapture fail.
 */
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "jn_exec.h"

typedef int CUresult;
static int launches;

CUresult cuInit(unsigned flags) { (void)flags; return 0; }
CUresult cuDriverGetVersion(int *v) { *v = 13000; return 0; }
CUresult cuDeviceGetCount(int *n) { *n = 1; return 0; }
CUresult cuDeviceGet(int *d, int ordinal) { *d = ordinal; return ordinal == 0 ? 0 : 101; /* INVALID_DEVICE */ }
CUresult cuDeviceGetName(char *name, int len, int dev) { (void)dev; snprintf(name, (size_t)len, "Fake GPU"); return 0; }
CUresult cuDeviceGetAttribute(int *v, int attr, int dev) {
    (void)dev;
    *v = attr == 75 ? 9 : attr == 76 ? 0 : attr == 16 ? 4 : 0;
    return 0;
}
static int ctx_token;
CUresult cuDevicePrimaryCtxRetain(void **ctx, int dev) { (void)dev; *ctx = &ctx_token; return 0; }
CUresult cuDevicePrimaryCtxRelease_v2(int dev) { (void)dev; return 0; }
CUresult cuCtxSetCurrent(void *ctx) { return ctx == &ctx_token ? 0 : 201; /* INVALID_CONTEXT */ }
CUresult cuCtxSynchronize(void) { return 0; }

CUresult cuModuleLoadDataEx(void **mod, const void *image, unsigned nopt, int *opts, void **vals) {
    const char *img = image;
    if (strncmp(img, "\177ELF", 4) != 0) { /* PTX text: the fake has no JIT */
        for (unsigned i = 0; i < nopt; i++)
            if (opts[i] == 5) snprintf(vals[i], 64, "fake driver: no PTX JIT");
        return 218; /* CUDA_ERROR_INVALID_PTX */
    }
    /* the "cubin" is a shared object: its size is in its section headers */
    const unsigned char *e = image;
    uint64_t shoff;
    uint16_t shentsize, shnum;
    memcpy(&shoff, e + 0x28, 8);
    memcpy(&shentsize, e + 0x3a, 2);
    memcpy(&shnum, e + 0x3c, 2);
    size_t len = (size_t)(shoff + (uint64_t)shentsize * shnum);
    int fd = memfd_create("fake-cubin", 0);
    if (fd < 0 || write(fd, image, len) != (ssize_t)len) return 200; /* INVALID_IMAGE */
    char path[64];
    snprintf(path, sizeof path, "/proc/self/fd/%d", fd);
    *mod = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    close(fd);
    return *mod ? 0 : 200;
}
CUresult cuModuleUnload(void *mod) { return dlclose(mod) ? 400 : 0; }
CUresult cuModuleGetFunction(void **f, void *mod, const char *name) {
    *f = dlsym(mod, name);
    return *f ? 0 : 500; /* NOT_FOUND */
}
CUresult cuModuleGetGlobal_v2(unsigned long long *p, size_t *bytes, void *mod, const char *name) {
    void *s = dlsym(mod, name);
    if (!s) return 500;
    *p = (unsigned long long)(uintptr_t)s;
    *bytes = !strcmp(name, "jn_kabi_version") ? sizeof(int) : sizeof(unsigned long long);
    return 0;
}
CUresult cuMemAlloc_v2(unsigned long long *p, size_t n) {
    void *m = malloc(n);
    *p = (unsigned long long)(uintptr_t)m;
    return m ? 0 : 2; /* OUT_OF_MEMORY */
}
CUresult cuMemFree_v2(unsigned long long p) { free((void *)(uintptr_t)p); return 0; }
CUresult cuMemcpyHtoD_v2(unsigned long long d, const void *s, size_t n) { memcpy((void *)(uintptr_t)d, s, n); return 0; }
CUresult cuMemcpyDtoH_v2(void *d, unsigned long long s, size_t n) { memcpy(d, (const void *)(uintptr_t)s, n); return 0; }

static void serial_for(int64_t n, int64_t grain, void (*fn)(int64_t, int64_t, void *), void *ctx) {
    (void)grain;
    if (n > 0) fn(0, n, ctx);
}

/* ---- stream capture and graphs: a graph is the list of work captured
 * from a stream (kernels with a copy of their jn_dkcall, host functions),
 * an executable graph a copy of it; a launch runs the list in order. */
typedef struct {
    void *fn;            /* kernel (a C kernel of the "cubin") or host function */
    int host;
    jn_dkcall d;         /* kernel parameters, by value as the driver copies them */
    void *data;          /* host function argument */
} fnode;
typedef struct {
    fnode *n;
    int count, cap;
} fgraph;
static void *capturing;  /* the stream being captured, NULL */
static fgraph *cap_graph;
static int graph_launches, captured_nodes, graph_nodes_run;

static int fg_add(fgraph *g, fnode n) {
    if (g->count == g->cap) {
        int c = g->cap ? 2 * g->cap : 16;
        fnode *p = realloc(g->n, sizeof *p * (size_t)c);
        if (!p) return 2;
        g->n = p, g->cap = c;
    }
    g->n[g->count++] = n;
    captured_nodes++;
    return 0;
}

static void run_kernel(void *f, const jn_dkcall *d);

CUresult cuStreamBeginCapture_v2(void *stream, int mode) {
    const char *fail = getenv("FAKE_CUDA_FAIL");
    if (fail && !strcmp(fail, "capture")) return 900; /* STREAM_CAPTURE_UNSUPPORTED */
    if (capturing || mode != 2) return 1;
    capturing = stream ? stream : (void *)1;
    cap_graph = calloc(1, sizeof *cap_graph);
    return cap_graph ? 0 : 2;
}
CUresult cuStreamEndCapture(void *stream, void **graph) {
    if (!capturing || capturing != (stream ? stream : (void *)1)) return 901; /* STREAM_CAPTURE_INVALIDATED */
    capturing = NULL;
    *graph = cap_graph;
    cap_graph = NULL;
    return 0;
}
CUresult cuGraphInstantiateWithFlags(void **exec, void *graph, unsigned long long flags) {
    (void)flags;
    const fgraph *g = graph;
    fgraph *e = calloc(1, sizeof *e);
    if (!e) return 2;
    for (int i = 0; i < g->count; i++)
        if (fg_add(e, g->n[i])) return 2;
    captured_nodes -= g->count;
    *exec = e;
    return 0;
}
CUresult cuGraphExecUpdate_v2(void *exec, void *graph, void *info) {
    fgraph *e = exec;
    const fgraph *g = graph;
    int *result = info;
    int same = e->count == g->count;
    for (int i = 0; same && i < g->count; i++) same = e->n[i].host == g->n[i].host && (e->n[i].host || e->n[i].fn == g->n[i].fn);
    if (!same) { /* other topology: CU_GRAPH_EXEC_UPDATE_ERROR_TOPOLOGY_CHANGED */
        *result = 2;
        return 910; /* GRAPH_EXEC_UPDATE_FAILURE */
    }
    memcpy(e->n, g->n, sizeof *e->n * (size_t)g->count);
    *result = 0;
    return 0;
}
CUresult cuGraphLaunch(void *exec, void *stream) {
    (void)stream;
    const fgraph *e = exec;
    for (int i = 0; i < e->count; i++) {
        if (e->n[i].host) ((void (*)(void *))e->n[i].fn)(e->n[i].data);
        else run_kernel(e->n[i].fn, &e->n[i].d);
        graph_nodes_run++;
    }
    graph_launches++;
    return 0;
}
CUresult cuGraphExecDestroy(void *exec) {
    fgraph *e = exec;
    free(e->n);
    free(e);
    return 0;
}
CUresult cuGraphDestroy(void *graph) { return cuGraphExecDestroy(graph); }
CUresult cuLaunchHostFunc(void *stream, void (*fn)(void *), void *data) {
    void *fnp;
    memcpy(&fnp, &fn, sizeof fnp);
    if (capturing && capturing == (stream ? stream : (void *)1))
        return (CUresult)fg_add(cap_graph, (fnode){.fn = fnp, .host = 1, .data = data});
    fn(data);
    return 0;
}
/* what graphs did: the test reads these through dlsym */
int fake_cuda_graph_launches(void) { return graph_launches; }
int fake_cuda_graph_nodes_run(void) { return graph_nodes_run; }

CUresult cuLaunchKernel(void *f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by, unsigned bz,
                        unsigned shmem, void *stream, void **params, void **extra) {
    (void)extra;
    const char *fail = getenv("FAKE_CUDA_FAIL");
    if (fail && !strcmp(fail, "launch")) return 719; /* LAUNCH_FAILED */
    if (gx < 1 || gy != 1 || gz != 1 || bx != JN_DK_BLOCK || by != 1 || bz != 1 || shmem != 0) return 1; /* INVALID_VALUE */
    const jn_dkcall *d = params[0];
    if (capturing && capturing == (stream ? stream : (void *)1)) { /* recorded, run at each graph launch */
        fnode n = {.fn = f};
        memcpy(&n.d, d, sizeof n.d);
        return (CUresult)fg_add(cap_graph, n);
    }
    run_kernel(f, d);
    launches++;
    return 0;
}

static void run_kernel(void *f, const jn_dkcall *d) {
    int64_t strides[JN_DK_MAX_OPS * JN_MAX_DIMS];
    for (int k = 0; k < d->nops; k++)
        for (int i = 0; i < d->ndim; i++) strides[k * d->ndim + i] = d->strides[k][i];
    jn_kcall c = {.nops = d->nops, .ndim = d->ndim, .nred = d->nred, .data = d->data, .shape = d->shape,
                  .strides = strides, .scalars = d->scalars, .parallel_for = serial_for};
    jn_kfn fn;
    memcpy(&fn, &f, sizeof fn);
    fn(&c);
}
/* how many kernels ran: the test reads it through dlsym of the loaded fake */
int fake_cuda_launches(void) { return launches; }

CUresult cuGetErrorName(CUresult r, const char **s) { *s = r == 719 ? "CUDA_ERROR_LAUNCH_FAILED" : "CUDA_ERROR_FAKE"; return 0; }
CUresult cuGetErrorString(CUresult r, const char **s) { (void)r; *s = "fake driver error"; return 0; }
