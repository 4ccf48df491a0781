/* jn_test_hostfn.h -- a jn_ex_cuda_graphs_runner for the C tests that run
 * graphs on the fake driver (tests/c/fake_libcuda.c): library nodes and
 * copies go to the stream as host functions (cuLaunchHostFunc) over a host
 * kernel table -- run at once outside a capture, recorded into the graph
 * during one -- as the eager CUDA backend's kernels would be captured from
 * its stream.  Set jt_hostfn.be, .launch (the fake's cuLaunchHostFunc) and
 * .stream, pass {jt_host_node, jt_host_copy, NULL} to
 * jn_ex_cuda_graphs_set_runner, check jt_hostfn.errors == 0 and call
 * jt_hostfn_free() at the end.  jt_fake_driver_load builds and loads the
 * fake driver itself.  Included by test_exec_cuda.c and test_replay_cuda.c
 * after jn_test.h and jn_test_emit.h.
 */
#ifndef JN_TEST_HOSTFN_H
#define JN_TEST_HOSTFN_H

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "jn_backend.h"
#include "jn_cg.h"

typedef struct jt_closure {
    struct jt_closure *next;
    jn_op op; /* JN_NOPS: a copy */
    int nin, nout;
    jn_tensor *in[JN_MAX_INS], *out[JN_MAX_OUTS];
    jn_attrs a;
} jt_closure;

static struct {
    const jn_rt_backend *be;                                    /* the kernels host functions run */
    int (*launch)(void *stream, void (*fn)(void *), void *data); /* cuLaunchHostFunc */
    void *stream;
    int errors;       /* host functions that failed (the first is printed) */
    jt_closure *list; /* every closure made, freed by jt_hostfn_free */
} jt_hostfn;

static void jt_hostfn_run(void *p) {
    jt_closure *c = p;
    jn_status s = c->op == JN_NOPS ? jn_copy_into(c->out[0], c->in[0]) : jt_hostfn.be->kernel[c->op](c->nin, c->in, &c->a, c->out);
    if (s && !jt_hostfn.errors++) fprintf(stderr, "host function: %s\n", jn_errmsg());
}

static jn_status jt_hostfn_enqueue(jn_op op, int nin, jn_tensor *const *in, const jn_attrs *a, int nout,
                                   jn_tensor *const *out) {
    jt_closure *c = calloc(1, sizeof *c);
    if (!c) return JN_ERR_NOMEM;
    c->op = op, c->nin = nin, c->nout = nout;
    if (a) c->a = *a;
    for (int i = 0; i < nin; i++) jn_tensor_incref(c->in[i] = in[i]);
    for (int j = 0; j < nout; j++) jn_tensor_incref(c->out[j] = out[j]);
    c->next = jt_hostfn.list, jt_hostfn.list = c;
    return jt_hostfn.launch(jt_hostfn.stream, jt_hostfn_run, c) ? jn_error(JN_ERR_RUNTIME, "cuLaunchHostFunc failed")
                                                                : JN_OK;
}

static inline jn_status jt_host_node(void *ctx, jn_op op, int nin, jn_tensor *const *in, const jn_attrs *a,
                                     jn_tensor *const *out) {
    (void)ctx;
    if (jn_op_info(op)->flags & JN_F_VIEW) return jt_hostfn.be->kernel[op](nin, in, a, out); /* strides only */
    return jt_hostfn_enqueue(op, nin, in, a, jn_op_info(op)->nout, out);
}

static inline jn_status jt_host_copy(void *ctx, jn_tensor *dst, const jn_tensor *src) {
    (void)ctx;
    jn_tensor *s = (jn_tensor *)src;
    return jt_hostfn_enqueue(JN_NOPS, 1, &s, NULL, 1, &dst);
}

static inline void jt_hostfn_free(void) {
    while (jt_hostfn.list) {
        jt_closure *c = jt_hostfn.list;
        jt_hostfn.list = c->next;
        for (int i = 0; i < c->nin; i++) jn_tensor_decref(c->in[i]);
        for (int j = 0; j < c->nout; j++) jn_tensor_decref(c->out[j]);
        free(c);
    }
}

/* tests/c/fake_libcuda.c compiled into the scratch folder (jt_tmp_begin
 * first) as libcuda.so.1, $JANUS_LIBCUDA pointed at it and jt_hostfn.launch
 * taken from it: the dlopen handle (the copy the runtime opens too), or
 * NULL with the reason printed. */
static inline void *jt_fake_driver_load(const char *src_dir) {
    char path[1200];
    snprintf(path, sizeof path, "%s/c/fake_libcuda.c", src_dir);
    char *src = read_text(path), flags[4000];
    snprintf(flags, sizeof flags, "-D_GNU_SOURCE -I%s/../exec -I%s/../ir -I%s/../runtime", src_dir, src_dir,
             src_dir);
    jn_cg_cc_options o = {.extra_flags = flags};
    void *so = NULL;
    size_t sl = 0;
    jn_status s = src ? jn_cg_compile_so(src, strlen(src), &o, &so, &sl, NULL) : JN_ERR_IO;
    free(src);
    if (s) {
        fprintf(stderr, "fake driver not built: %s\n", src ? jn_errmsg() : path);
        return NULL;
    }
    FILE *f = fopen(tmp("libcuda.so.1"), "wb");
    CHECK(f && fwrite(so, 1, sl, f) == sl);
    if (f) fclose(f);
    free(so);
    setenv("JANUS_LIBCUDA", tmp("libcuda.so.1"), 1);
    void *h = dlopen(tmp("libcuda.so.1"), RTLD_NOW | RTLD_LOCAL);
    if (h) *(void **)&jt_hostfn.launch = dlsym(h, "cuLaunchHostFunc");
    CHECK(jt_hostfn.launch != NULL);
    return h;
}

#endif
