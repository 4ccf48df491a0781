/* jn_test_emit.h -- what the emitter tests share (test_emit.c runs the
 * generated C against eager, test_emit_cuda.c compiles the generated CUDA
 * with NVRTC): the IR patterns of fused kernels (cases[]), the source
 * directory, parsing one graph body, running passes, reading a file and
 * the kernels part of a generated source.  Include after jn_test.h.
 */
#ifndef JN_TEST_EMIT_H
#define JN_TEST_EMIT_H

#include <dirent.h>

#include "jn_cg.h"
#include "jn_settings.h"

#define HEAD "graph g group=0 variant=0 parent=-1 diverge=0 support=1 steps=0..0 entry=\"a\" exit=\"b\" {\n"

static char src_dir[1024]; /* <repo>/tests */

/* src_dir from this file's path. */
static inline void jt_emit_src_dir(const char *file) {
    snprintf(src_dir, sizeof src_dir, "%s", file); /* <repo>/tests/c/test_x.c */
    for (int i = 0; i < 2; i++) {
        char *p = strrchr(src_dir, '/');
        if (p) *p = 0;
        else snprintf(src_dir, sizeof src_dir, "../tests");
    }
}

static jn_ir_module *parse_body(const char *body) {
    size_t n = strlen(HEAD) + strlen(body) + 64;
    char *text = malloc(n);
    snprintf(text, n, "module optable=0000000000000000 graphs=1\n" HEAD "%s}\n", body);
    jn_ir_module *m = NULL;
    jn_status st = jn_ir_parse(text, strlen(text), &m);
    if (st) fprintf(stderr, "does not parse: %s\n%s", jn_errmsg(), text);
    free(text);
    return m;
}

static int run_passes(jn_ir_module *m, const char *passes) {
    char list[128];
    snprintf(list, sizeof list, "%s", passes);
    for (char *p = strtok(list, ","); p; p = strtok(NULL, ","))
        if (jn_cg_run_pass(m, m->graphs[0], p) != JN_OK) {
            fprintf(stderr, "pass %s: %s\n", p, jn_errmsg());
            return 0;
        }
    return 1;
}

static char *read_text(const char *path) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    rewind(f);
    char *t = malloc((size_t)n + 1);
    size_t r = t ? fread(t, 1, (size_t)n, f) : 0;
    fclose(f);
    if (t) t[r] = 0;
    return t;
}

/* For each .ir file of tests/<sub>, parsed and through the codegen passes:
 * fn(m, file name, ctx).  Returns how many modules it saw. */
static int jt_each_ir(const char *sub, void (*fn)(const jn_ir_module *m, const char *name, void *ctx), void *ctx) {
    char dir[1200];
    snprintf(dir, sizeof dir, "%s/%s", src_dir, sub);
    DIR *d = opendir(dir);
    CHECK(d != NULL);
    if (!d) return 0;
    int files = 0;
    for (struct dirent *e; (e = readdir(d));) {
        size_t l = strlen(e->d_name);
        if (l < 4 || strcmp(e->d_name + l - 3, ".ir")) continue;
        char path[1500];
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        char *text = read_text(path);
        jn_ir_module *m = NULL;
        CHECK(text && jn_ir_parse(text, strlen(text), &m) == JN_OK);
        free(text);
        if (!m) continue;
        CHECK(jn_cg_optimize(m, NULL, NULL) == JN_OK);
        fn(m, e->d_name, ctx);
        jn_ir_module_free(m);
        files++;
    }
    closedir(d);
    return files;
}

/* The kernels part of the generated source (the prelude embeds
 * runtime/k_fastmath.h and the module hash, which change on their own). */
static const char *kernels_part(const char *src) {
    const char *p = strstr(src, "\n/* graph ");
    return p ? p + 1 : src;
}

typedef struct {
    const char *name;
    const char *body;
    int64_t syms[4];      /* symbol values */
    int transpose;        /* graph input index fed as a transposed view, -1: none */
    double scalar_feed;   /* value fed for `scalar` inputs (NAN: the recorded one) */
    int want_kernels;     /* generated functions expected */
    int specials;         /* 1: NaN/-0/inf among float inputs; 2: every input
                           * cycles through the edge values (jt_edge) */
} ecase;

/* Edge values (specials 2): element i of every input is jt_edge(i) in
 * its dtype (integers wrap) -- NaN (both signs, a payload), +-inf, +-0,
 * a denormal, the smallest normal, the integer types' extremes -- so an
 * [E, 1] against an [E] operand meets every pair: every op of runtime/
 * k_ewmath.h the emitter generates, compared with eager bit for bit
 * (test_ewmath.c compares eager with the spec's functions). */
#define JT_NEDGE 24
static inline void jt_edge(int64_t i, double *f, int64_t *n) {
    static const double fe[JT_NEDGE] = {NAN, -NAN, INFINITY, -INFINITY, 0.0, -0.0, 1e-40, 1.17549435e-38, 1, -1, 0.5, -0.5,
                                        2, -2, 2.5, -2.5, 3, -3, 0.1, 20, -20, 88.8, -104.5, 1e30};
    static const int64_t ie[JT_NEDGE] = {0, 1, -1, 2, -2, 3, -3, 7, -7, 127, 128, 255, -128, 256, INT32_MAX, INT32_MIN,
                                         INT64_MAX, INT64_MIN, 5, -5, 64, 100, -100, (int64_t)1 << 40};
    *f = fe[i % JT_NEDGE], *n = ie[i % JT_NEDGE];
}
/* the float ops on [24, 1] x [24] of type T, each also feeding a chain
 * (add, logical_or) so that all of them join generated kernels */
#define EDGES_FLOAT_IR(T) \
    "  in %0 host " T "[24, 1]\n" \
    "  in %1 host " T "[24]\n" \
    "  in %2 host bool[24]\n" \
    "  %3 = add(%0, %1) alpha=0.5 : " T "[24, 24]\n" \
    "  %4 = sub(%0, %1) alpha=-2 : " T "[24, 24]\n" \
    "  %5 = mul(%0, %1) : " T "[24, 24]\n" \
    "  %6 = div(%0, %1) rounding_mode=0 : " T "[24, 24]\n" \
    "  %7 = div(%0, %1) rounding_mode=1 : " T "[24, 24]\n" \
    "  %8 = pow(%0, %1) : " T "[24, 24]\n" \
    "  %9 = maximum(%0, %1) : " T "[24, 24]\n" \
    "  %10 = minimum(%0, %1) : " T "[24, 24]\n" \
    "  %11 = atan2(%0, %1) : " T "[24, 24]\n" \
    "  %12 = eq(%0, %1) : bool[24, 24]\n" \
    "  %13 = ne(%0, %1) : bool[24, 24]\n" \
    "  %14 = lt(%0, %1) : bool[24, 24]\n" \
    "  %15 = le(%0, %1) : bool[24, 24]\n" \
    "  %16 = gt(%0, %1) : bool[24, 24]\n" \
    "  %17 = ge(%0, %1) : bool[24, 24]\n" \
    "  %18 = where(%14, %0, %1) : " T "[24, 24]\n" \
    "  %19 = neg(%1) : " T "[24]\n" \
    "  %20 = abs(%1) : " T "[24]\n" \
    "  %21 = sign(%1) : " T "[24]\n" \
    "  %22 = relu(%1) : " T "[24]\n" \
    "  %23 = exp(%1) : " T "[24]\n" \
    "  %24 = log(%1) : " T "[24]\n" \
    "  %25 = log1p(%1) : " T "[24]\n" \
    "  %26 = expm1(%1) : " T "[24]\n" \
    "  %27 = sqrt(%1) : " T "[24]\n" \
    "  %28 = rsqrt(%1) : " T "[24]\n" \
    "  %29 = reciprocal(%1) : " T "[24]\n" \
    "  %30 = tanh(%1) : " T "[24]\n" \
    "  %31 = sigmoid(%1) : " T "[24]\n" \
    "  %32 = gelu(%1) approximate=0 : " T "[24]\n" \
    "  %33 = gelu(%1) approximate=1 : " T "[24]\n" \
    "  %34 = silu(%1) : " T "[24]\n" \
    "  %35 = sin(%1) : " T "[24]\n" \
    "  %36 = cos(%1) : " T "[24]\n" \
    "  %37 = erf(%1) : " T "[24]\n" \
    "  %38 = floor(%1) : " T "[24]\n" \
    "  %39 = ceil(%1) : " T "[24]\n" \
    "  %40 = round(%1) : " T "[24]\n" \
    "  %41 = isnan(%1) : bool[24]\n" \
    "  %42 = clamp(%1) min=-1 max=1 has_min=true has_max=true : " T "[24]\n" \
    "  %43 = clamp(%1) min=0.5 max=0.25 has_min=true has_max=true : " T "[24]\n" \
    "  %44 = clamp(%1) min=0 max=2 has_min=false has_max=true : " T "[24]\n" \
    "  %45 = clamp(%1) min=nan max=1 has_min=true has_max=true : " T "[24]\n" \
    "  %46 = masked_fill(%1, %2) value=-1.5 : " T "[24]\n" \
    "  %47 = logical_not(%2) : bool[24]\n" \
    "  %48 = add(%19, %20) alpha=1 : " T "[24]\n" \
    "  %49 = add(%48, %21) alpha=1 : " T "[24]\n" \
    "  %50 = add(%49, %22) alpha=1 : " T "[24]\n" \
    "  %51 = add(%50, %23) alpha=1 : " T "[24]\n" \
    "  %52 = add(%51, %24) alpha=1 : " T "[24]\n" \
    "  %53 = add(%52, %25) alpha=1 : " T "[24]\n" \
    "  %54 = add(%53, %26) alpha=1 : " T "[24]\n" \
    "  %55 = add(%54, %27) alpha=1 : " T "[24]\n" \
    "  %56 = add(%55, %28) alpha=1 : " T "[24]\n" \
    "  %57 = add(%56, %29) alpha=1 : " T "[24]\n" \
    "  %58 = add(%57, %30) alpha=1 : " T "[24]\n" \
    "  %59 = add(%58, %31) alpha=1 : " T "[24]\n" \
    "  %60 = add(%59, %32) alpha=1 : " T "[24]\n" \
    "  %61 = add(%60, %33) alpha=1 : " T "[24]\n" \
    "  %62 = add(%61, %34) alpha=1 : " T "[24]\n" \
    "  %63 = add(%62, %35) alpha=1 : " T "[24]\n" \
    "  %64 = add(%63, %36) alpha=1 : " T "[24]\n" \
    "  %65 = add(%64, %37) alpha=1 : " T "[24]\n" \
    "  %66 = add(%65, %38) alpha=1 : " T "[24]\n" \
    "  %67 = add(%66, %39) alpha=1 : " T "[24]\n" \
    "  %68 = add(%67, %40) alpha=1 : " T "[24]\n" \
    "  %69 = add(%68, %42) alpha=1 : " T "[24]\n" \
    "  %70 = add(%69, %43) alpha=1 : " T "[24]\n" \
    "  %71 = add(%70, %44) alpha=1 : " T "[24]\n" \
    "  %72 = add(%71, %45) alpha=1 : " T "[24]\n" \
    "  %73 = add(%72, %46) alpha=1 : " T "[24]\n" \
    "  %74 = logical_or(%41, %47) : bool[24]\n" \
    "  %75 = where(%74, %73, %73) : " T "[24]\n" \
    "  %76 = add(%3, %4) alpha=1 : " T "[24, 24]\n" \
    "  %77 = add(%76, %5) alpha=1 : " T "[24, 24]\n" \
    "  %78 = add(%77, %6) alpha=1 : " T "[24, 24]\n" \
    "  %79 = add(%78, %7) alpha=1 : " T "[24, 24]\n" \
    "  %80 = add(%79, %8) alpha=1 : " T "[24, 24]\n" \
    "  %81 = add(%80, %9) alpha=1 : " T "[24, 24]\n" \
    "  %82 = add(%81, %10) alpha=1 : " T "[24, 24]\n" \
    "  %83 = add(%82, %11) alpha=1 : " T "[24, 24]\n" \
    "  %84 = add(%83, %18) alpha=1 : " T "[24, 24]\n" \
    "  %85 = logical_or(%12, %13) : bool[24, 24]\n" \
    "  %86 = logical_or(%85, %14) : bool[24, 24]\n" \
    "  %87 = logical_or(%86, %15) : bool[24, 24]\n" \
    "  %88 = logical_or(%87, %16) : bool[24, 24]\n" \
    "  %89 = logical_or(%88, %17) : bool[24, 24]\n" \
    "  %90 = where(%89, %84, %84) : " T "[24, 24]\n" \
    "  out %3 keep\n" "  out %4 keep\n" "  out %5 keep\n" "  out %6 keep\n" "  out %7 keep\n" "  out %8 keep\n" \
    "  out %9 keep\n" "  out %10 keep\n" "  out %11 keep\n" "  out %12 keep\n" "  out %13 keep\n" "  out %14 keep\n" \
    "  out %15 keep\n" "  out %16 keep\n" "  out %17 keep\n" "  out %18 keep\n" "  out %19 keep\n" "  out %20 keep\n" \
    "  out %21 keep\n" "  out %22 keep\n" "  out %23 keep\n" "  out %24 keep\n" "  out %25 keep\n" "  out %26 keep\n" \
    "  out %27 keep\n" "  out %28 keep\n" "  out %29 keep\n" "  out %30 keep\n" "  out %31 keep\n" "  out %32 keep\n" \
    "  out %33 keep\n" "  out %34 keep\n" "  out %35 keep\n" "  out %36 keep\n" "  out %37 keep\n" "  out %38 keep\n" \
    "  out %39 keep\n" "  out %40 keep\n" "  out %41 keep\n" "  out %42 keep\n" "  out %43 keep\n" "  out %44 keep\n" \
    "  out %45 keep\n" "  out %46 keep\n" "  out %47 keep\n" "  out %75 keep\n" "  out %90 keep\n"
/* the integer ops, likewise */
#define EDGES_INT_IR(T) \
    "  in %0 host " T "[24, 1]\n" \
    "  in %1 host " T "[24]\n" \
    "  in %2 host bool[24]\n" \
    "  %3 = add(%0, %1) alpha=3 : " T "[24, 24]\n" \
    "  %4 = sub(%0, %1) alpha=-1 : " T "[24, 24]\n" \
    "  %5 = mul(%0, %1) : " T "[24, 24]\n" \
    "  %6 = maximum(%0, %1) : " T "[24, 24]\n" \
    "  %7 = minimum(%0, %1) : " T "[24, 24]\n" \
    "  %8 = eq(%0, %1) : bool[24, 24]\n" \
    "  %9 = ne(%0, %1) : bool[24, 24]\n" \
    "  %10 = lt(%0, %1) : bool[24, 24]\n" \
    "  %11 = le(%0, %1) : bool[24, 24]\n" \
    "  %12 = gt(%0, %1) : bool[24, 24]\n" \
    "  %13 = ge(%0, %1) : bool[24, 24]\n" \
    "  %14 = where(%10, %0, %1) : " T "[24, 24]\n" \
    "  %15 = logical_xor(%8, %12) : bool[24, 24]\n" \
    "  %16 = neg(%1) : " T "[24]\n" \
    "  %17 = abs(%1) : " T "[24]\n" \
    "  %18 = sign(%1) : " T "[24]\n" \
    "  %19 = relu(%1) : " T "[24]\n" \
    "  %20 = floor(%1) : " T "[24]\n" \
    "  %21 = ceil(%1) : " T "[24]\n" \
    "  %22 = round(%1) : " T "[24]\n" \
    "  %23 = isnan(%1) : bool[24]\n" \
    "  %24 = clamp(%1) min=-3 max=5 has_min=true has_max=true : " T "[24]\n" \
    "  %25 = clamp(%1) min=-3000000000 max=3000000000 has_min=true has_max=true : " T "[24]\n" \
    "  %26 = clamp(%1) min=300 max=400 has_min=true has_max=true : " T "[24]\n" \
    "  %27 = clamp(%1) min=3 max=-2 has_min=false has_max=true : " T "[24]\n" \
    "  %28 = masked_fill(%1, %2) value=7 : " T "[24]\n" \
    "  %29 = logical_not(%2) : bool[24]\n" \
    "  %30 = add(%16, %17) alpha=1 : " T "[24]\n" \
    "  %31 = add(%30, %18) alpha=1 : " T "[24]\n" \
    "  %32 = add(%31, %19) alpha=1 : " T "[24]\n" \
    "  %33 = add(%32, %20) alpha=1 : " T "[24]\n" \
    "  %34 = add(%33, %21) alpha=1 : " T "[24]\n" \
    "  %35 = add(%34, %22) alpha=1 : " T "[24]\n" \
    "  %36 = add(%35, %24) alpha=1 : " T "[24]\n" \
    "  %37 = add(%36, %25) alpha=1 : " T "[24]\n" \
    "  %38 = add(%37, %26) alpha=1 : " T "[24]\n" \
    "  %39 = add(%38, %27) alpha=1 : " T "[24]\n" \
    "  %40 = add(%39, %28) alpha=1 : " T "[24]\n" \
    "  %41 = logical_or(%23, %29) : bool[24]\n" \
    "  %42 = where(%41, %40, %40) : " T "[24]\n" \
    "  %43 = add(%3, %4) alpha=1 : " T "[24, 24]\n" \
    "  %44 = add(%43, %5) alpha=1 : " T "[24, 24]\n" \
    "  %45 = add(%44, %6) alpha=1 : " T "[24, 24]\n" \
    "  %46 = add(%45, %7) alpha=1 : " T "[24, 24]\n" \
    "  %47 = add(%46, %14) alpha=1 : " T "[24, 24]\n" \
    "  %48 = logical_or(%8, %9) : bool[24, 24]\n" \
    "  %49 = logical_or(%48, %10) : bool[24, 24]\n" \
    "  %50 = logical_or(%49, %11) : bool[24, 24]\n" \
    "  %51 = logical_or(%50, %12) : bool[24, 24]\n" \
    "  %52 = logical_or(%51, %13) : bool[24, 24]\n" \
    "  %53 = logical_or(%52, %15) : bool[24, 24]\n" \
    "  %54 = where(%53, %47, %47) : " T "[24, 24]\n" \
    "  out %3 keep\n" "  out %4 keep\n" "  out %5 keep\n" "  out %6 keep\n" "  out %7 keep\n" "  out %8 keep\n" \
    "  out %9 keep\n" "  out %10 keep\n" "  out %11 keep\n" "  out %12 keep\n" "  out %13 keep\n" "  out %14 keep\n" \
    "  out %15 keep\n" "  out %16 keep\n" "  out %17 keep\n" "  out %18 keep\n" "  out %19 keep\n" "  out %20 keep\n" \
    "  out %21 keep\n" "  out %22 keep\n" "  out %23 keep\n" "  out %24 keep\n" "  out %25 keep\n" "  out %26 keep\n" \
    "  out %27 keep\n" "  out %28 keep\n" "  out %29 keep\n" "  out %42 keep\n" "  out %54 keep\n"

/* One chain, run with a transposed operand and contiguous (the two cases below). */
#define BROADCAST_CHAIN_IR \
    "  sym B dim 1..64\n" \
    "  in %0 host f32[B, 37]\n" \
    "  in %1 host f32[B, 1]\n" \
    "  in %2 state f32[37] bind=1\n" \
    "  in %3 const f64[] = 0.5\n" \
    "  %4 = sub(%0, %1) alpha=1 : f32[B, 37]\n" \
    "  %5 = mul(%4, %2) : f32[B, 37]\n" \
    "  %6 = exp(%5) : f32[B, 37]\n" \
    "  %7 = tanh(%4) : f32[B, 37]\n" \
    "  %8 = add(%6, %7) alpha=0.25 : f32[B, 37]\n" \
    "  %9 = sigmoid(%8) : f32[B, 37]\n" \
    "  %10 = log(%9) : f32[B, 37]\n" \
    "  %11 = gelu(%10) approximate=0 : f32[B, 37]\n" \
    "  %12 = erf(%11) : f32[B, 37]\n" \
    "  %13 = silu(%12) : f32[B, 37]\n" \
    "  %14 = abs(%13) : f32[B, 37]\n" \
    "  %15 = sqrt(%14) : f32[B, 37]\n" \
    "  %16 = mul(%15, %3) : f32[B, 37]\n" \
    "  %17 = div(%16, %1) rounding_mode=0 : f32[B, 37]\n" \
    "  %18 = maximum(%17, %4) : f32[B, 37]\n" \
    "  %19 = pow(%18, %3) : f32[B, 37]\n" \
    "  %20 = rsqrt(%14) : f32[B, 37]\n" \
    "  %21 = add(%19, %20) alpha=1 : f32[B, 37]\n" \
    "  %22 = floor(%21) : f32[B, 37]\n" \
    "  %23 = neg(%22) : f32[B, 37]\n" \
    "  out %23 keep\n" \
    "  out %6 keep\n" \
    "  out %9 keep\n" \
    "  out %11 keep\n" \
    "  out %13 keep\n" \
    "  out %17 keep\n" \
    "  out %19 keep\n" \
    "  out %21 keep\n"

/* rows of a float64 mean and a float32 sum */
#define ROWS_MEAN_SUM_IR \
    "  sym B dim 1..4096\n" \
    "  in %0 host f64[B, 777]\n" \
    "  in %1 host f64[777]\n" \
    "  in %2 host f32[B, 777]\n" \
    "  %3 = mul(%0, %1) : f64[B, 777]\n" \
    "  %4 = mean(%3) dims=[1] keepdim=false dtype=none : f64[B]\n" \
    "  %5 = mul(%2, %2) : f32[B, 777]\n" \
    "  %6 = sum(%5) dims=[-1] keepdim=true dtype=none : f32[B, 1]\n" \
    "  out %4 keep\n" \
    "  out %6 keep\n"

/* (x * w).sum() over N float64 values */
#define F64_DOT_IR \
    "  sym N dim 1..1000000\n" \
    "  in %0 host f64[N]\n" \
    "  in %1 host f64[N]\n" \
    "  %2 = mul(%0, %1) : f64[N]\n" \
    "  %3 = sum(%2) dims=[] keepdim=false dtype=none : f64[]\n" \
    "  out %3 keep\n"

static const ecase cases[] = {
    {"bias_relu",
     "  sym B dim 1..64\n"
     "  in %0 host f32[B, 16]\n"
     "  in %1 state f32[16, 8] bind=1\n"
     "  in %2 state f32[8] bind=2\n"
     "  %3 = mm(%0, %1) : f32[B, 8]\n"
     "  %4 = add(%3, %2) alpha=1 : f32[B, 8]\n"
     "  %5 = relu(%4) : f32[B, 8]\n"
     "  out %5 keep\n",
     {13}, -1, NAN, 1, 0},
    {"linear_gelu_big",
     "  sym B dim 1..4096\n"
     "  in %0 host f32[B, 24]\n"
     "  in %1 state f32[300, 24] bind=1\n"
     "  in %2 state f32[300] bind=2\n"
     "  %3 = linear(%0, %1, %2) : f32[B, 300]\n"
     "  %4 = gelu(%3) approximate=1 : f32[B, 300]\n"
     "  out %4 keep\n",
     {257}, -1, NAN, 1, 0},
    {"broadcast_chain",
     BROADCAST_CHAIN_IR,
     {9}, 0, NAN, 1, 1},
    {"broadcast_chain_contiguous",
     BROADCAST_CHAIN_IR,
     {9}, -1, NAN, 1, 1},
    {"logsumexp_like_blocked",
     "  sym B dim 1..4096\n"
     "  in %0 host f32[B, 301]\n"
     "  in %1 host f32[B, 1]\n"
     "  %2 = sub(%0, %1) alpha=1 : f32[B, 301]\n"
     "  %3 = exp(%2) : f32[B, 301]\n"
     "  %4 = sigmoid(%3) : f32[B, 301]\n"
     "  %5 = log(%4) : f32[B, 301]\n"
     "  %6 = sum(%5) dims=[-1] keepdim=true dtype=none : f32[B, 1]\n"
     "  out %6 keep\n"
     "  out %3 keep\n",
     {300}, -1, NAN, 1, 1},
    {"broadcast_big_strided",
     "  sym B dim 1..4096\n"
     "  in %0 host f32[B, 300]\n"
     "  in %1 host f32[B, 1]\n"
     "  in %2 state f32[300] bind=1\n"
     "  %3 = sub(%0, %1) alpha=1 : f32[B, 300]\n"
     "  %4 = mul(%3, %2) : f32[B, 300]\n"
     "  %5 = exp(%4) : f32[B, 300]\n"
     "  out %5 keep\n",
     {301}, 0, NAN, 1, 0},
    {"long_row",
     "  sym N dim 1..1000000\n"
     "  in %0 host f32[N]\n"
     "  in %1 const f64[] = 2.5\n"
     "  %2 = mul(%0, %1) : f32[N]\n"
     "  %3 = tanh(%2) : f32[N]\n"
     "  out %3 keep\n",
     {200003}, -1, NAN, 1, 0},
    {"softmax_reduce",
     "  sym B dim 1..64\n"
     "  in %0 host f32[B, 37]\n"
     "  in %1 host f32[B, 1]\n"
     "  %2 = sub(%0, %1) alpha=1 : f32[B, 37]\n"
     "  %3 = exp(%2) : f32[B, 37]\n"
     "  %4 = sum(%3) dims=[1] keepdim=true dtype=none : f32[B, 1]\n"
     "  %5 = div(%3, %4) rounding_mode=0 : f32[B, 37]\n"
     "  out %5 keep\n"
     "  out %3 keep\n",
     {11}, -1, NAN, 1, 0},
    {"reductions",
     "  sym B dim 1..4096\n"
     "  in %0 host f32[B, 5, 7]\n"
     "  in %1 host f64[B, 33]\n"
     "  in %2 host i32[B, 9]\n"
     "  in %3 const f64[] = 0.5\n"
     "  %4 = mul(%0, %0) : f32[B, 5, 7]\n"
     "  %5 = mean(%4) dims=[1, 2] keepdim=false dtype=none : f32[B]\n"
     "  %6 = exp(%1) : f64[B, 33]\n"
     "  %7 = amax(%6) dims=[-1] keepdim=false : f64[B]\n"
     "  %8 = neg(%2) : i32[B, 9]\n"
     "  %9 = sum(%8) dims=[] keepdim=false dtype=none : i64[]\n"
     "  %10 = mul(%1, %3) : f64[B, 33]\n"
     "  %11 = amin(%10) dims=[1] keepdim=true : f64[B, 1]\n"
     "  %12 = add(%0, %3) alpha=1 : f32[B, 5, 7]\n"
     "  %13 = sum(%12) dims=[2] keepdim=false dtype=f64 : f64[B, 5]\n"
     "  %14 = mul(%11, %11) : f64[B, 1]\n"
     "  %15 = sum(%14) dims=[1] keepdim=false dtype=none : f64[B]\n"
     "  out %15 keep\n"
     "  out %5 keep\n"
     "  out %7 keep\n"
     "  out %9 keep\n"
     "  out %11 keep\n"
     "  out %13 keep\n",
     {1500}, -1, NAN, 6, 0},
    {"mixed_dtypes",
     "  sym B dim 1..64\n"
     "  in %0 host f32[B, 6]\n"
     "  in %1 host i64[B, 6]\n"
     "  in %2 host bool[B, 6]\n"
     "  in %3 const f64[] = 0.5\n"
     "  in %4 const i64[] = 2\n"
     "  in %5 host i32[6]\n"
     "  %6 = gt(%0, %3) : bool[B, 6]\n"
     "  %7 = logical_and(%6, %2) : bool[B, 6]\n"
     "  %8 = mul(%1, %4) : i64[B, 6]\n"
     "  %9 = add(%0, %8) alpha=1 : f32[B, 6]\n"
     "  %10 = where(%7, %9, %0) : f32[B, 6]\n"
     "  %11 = masked_fill(%10, %2) value=-1.5 : f32[B, 6]\n"
     "  %12 = cast(%11) dtype=i32 : i32[B, 6]\n"
     "  %13 = lt(%12, %1) : bool[B, 6]\n"
     "  %14 = cast(%13) dtype=f64 : f64[B, 6]\n"
     "  %15 = clamp(%11) min=-1 max=1 has_min=true has_max=true : f32[B, 6]\n"
     "  %16 = logical_not(%13) : bool[B, 6]\n"
     "  %17 = add(%16, %2) alpha=1 : bool[B, 6]\n"
     "  %18 = ne(%5, %4) : bool[B, 6]\n"
     "  %19 = logical_xor(%17, %18) : bool[B, 6]\n"
     "  %20 = cast(%19) dtype=u8 : u8[B, 6]\n"
     "  %21 = isnan(%15) : bool[B, 6]\n"
     "  %22 = logical_or(%21, %19) : bool[B, 6]\n"
     "  %23 = where(%22, %5, %4) : i32[B, 6]\n"
     "  out %12 keep\n"
     "  out %14 keep\n"
     "  out %15 keep\n"
     "  out %20 keep\n"
     "  out %23 keep\n",
     {5}, 0, NAN, 3, 1},
    {"integer_and_f64",
     "  sym B dim 1..64\n"
     "  in %0 host i32[B, 7]\n"
     "  in %1 host u8[B, 7]\n"
     "  in %2 host f64[B, 7]\n"
     "  in %3 const i64[] = 3\n"
     "  %4 = add(%0, %3) alpha=2 : i32[B, 7]\n"
     "  %5 = abs(%4) : i32[B, 7]\n"
     "  %6 = sign(%4) : i32[B, 7]\n"
     "  %7 = maximum(%5, %6) : i32[B, 7]\n"
     "  %8 = sub(%7, %1) alpha=1 : i32[B, 7]\n"
     "  %9 = clamp(%8) min=-2.5 max=0 has_min=true has_max=false : f32[B, 7]\n"
     "  %10 = mul(%1, %1) : u8[B, 7]\n"
     "  %11 = relu(%8) : i32[B, 7]\n"
     "  %12 = exp(%2) : f64[B, 7]\n"
     "  %13 = tanh(%12) : f64[B, 7]\n"
     "  %14 = log(%13) : f64[B, 7]\n"
     "  %15 = mul(%14, %0) : f64[B, 7]\n"
     "  %16 = div(%15, %3) rounding_mode=1 : f64[B, 7]\n"
     "  %17 = clamp(%4) min=-3 max=5 has_min=true has_max=true : i32[B, 7]\n"
     "  %18 = sigmoid(%10) : f32[B, 7]\n"
     "  out %9 keep\n"
     "  out %11 keep\n"
     "  out %16 keep\n"
     "  out %17 keep\n"
     "  out %18 keep\n",
     {6}, -1, NAN, 3, 1},
    {"scalar_alpha",
     "  sym B dim 1..64\n"
     "  in %0 host f32[B, 8]\n"
     "  in %1 host f32[B, 8]\n"
     "  in %2 scalar f64[] = 0.01\n"
     "  in %3 host bool[B, 8]\n"
     "  %4 = add(%0, %1) alpha=%2 : f32[B, 8]\n"
     "  %5 = relu(%4) : f32[B, 8]\n"
     "  %6 = clamp(%5) min=%2 max=0.75 has_min=true has_max=true : f32[B, 8]\n"
     "  %7 = masked_fill(%6, %3) value=%2 : f32[B, 8]\n"
     "  out %7 keep\n",
     {7}, -1, 0.37, 1, 0},
    {"edges_f32", EDGES_FLOAT_IR("f32"), {0}, -1, NAN, 2, 2},
    {"edges_f64", EDGES_FLOAT_IR("f64"), {0}, -1, NAN, 2, 2},
    {"edges_i64", EDGES_INT_IR("i64"), {0}, -1, NAN, 2, 2},
    {"edges_i32", EDGES_INT_IR("i32"), {0}, -1, NAN, 2, 2},
    {"edges_u8", EDGES_INT_IR("u8"), {0}, -1, NAN, 2, 2},
    {"edges_bool",
     "  in %0 host bool[24, 1]\n"
     "  in %1 host bool[24]\n"
     "  %2 = logical_and(%0, %1) : bool[24, 24]\n"
     "  %3 = logical_or(%0, %1) : bool[24, 24]\n"
     "  %4 = logical_xor(%0, %1) : bool[24, 24]\n"
     "  %5 = add(%0, %1) alpha=1 : bool[24, 24]\n"
     "  %6 = mul(%0, %1) : bool[24, 24]\n"
     "  %7 = maximum(%0, %1) : bool[24, 24]\n"
     "  %8 = minimum(%0, %1) : bool[24, 24]\n"
     "  %9 = lt(%0, %1) : bool[24, 24]\n"
     "  %10 = where(%9, %0, %1) : bool[24, 24]\n"
     "  %11 = logical_not(%1) : bool[24]\n"
     "  %12 = abs(%1) : bool[24]\n"
     "  %13 = floor(%1) : bool[24]\n"
     "  %14 = isnan(%1) : bool[24]\n"
     "  %15 = logical_or(%11, %12) : bool[24]\n"
     "  %16 = logical_or(%15, %13) : bool[24]\n"
     "  %17 = logical_or(%16, %14) : bool[24]\n"
     "  %18 = logical_or(%2, %3) : bool[24, 24]\n"
     "  %19 = logical_or(%18, %4) : bool[24, 24]\n"
     "  %20 = logical_or(%19, %5) : bool[24, 24]\n"
     "  %21 = logical_or(%20, %6) : bool[24, 24]\n"
     "  %22 = logical_or(%21, %7) : bool[24, 24]\n"
     "  %23 = logical_or(%22, %8) : bool[24, 24]\n"
     "  %24 = logical_or(%23, %9) : bool[24, 24]\n"
     "  %25 = logical_or(%24, %10) : bool[24, 24]\n"
     "  out %2 keep\n" "  out %3 keep\n" "  out %4 keep\n" "  out %5 keep\n" "  out %6 keep\n" "  out %7 keep\n"
     "  out %8 keep\n" "  out %9 keep\n" "  out %10 keep\n" "  out %11 keep\n" "  out %12 keep\n" "  out %13 keep\n"
     "  out %14 keep\n" "  out %17 keep\n" "  out %25 keep\n",
     {0}, -1, NAN, 2, 2},
    /* reductions in eager's order (k_reduce.c: 32 lanes, then the rest;
     * long ranges on the pool in chunks): float64 dot products of odd
     * sizes, one and more than one lane block, chunked on a pool */
    {"f64_dot_33", F64_DOT_IR, {33}, -1, NAN, 1, 0},
    {"f64_dot_1000", F64_DOT_IR, {1000}, -1, NAN, 1, 0},
    {"f64_dot_100003", F64_DOT_IR, {100003}, -1, NAN, 1, 0},
    /* rows of 777 (mean, float32 sum in double), a [B, 5, 301] reduced
     * over both dims against a [301] weight (the dims do not merge: the
     * element-by-element path) and 4 rows of 40 001 (chunked rows) */
    {"rows_mean_sum", ROWS_MEAN_SUM_IR, {37}, -1, NAN, 2, 0},
    {"rows_mean_sum_transposed", ROWS_MEAN_SUM_IR, {37}, 0, NAN, 2, 0},
    {"mid_dims_broadcast",
     "  sym B dim 1..4096\n"
     "  in %0 host f64[B, 5, 301]\n"
     "  in %1 host f64[301]\n"
     "  %2 = mul(%0, %1) : f64[B, 5, 301]\n"
     "  %3 = sum(%2) dims=[1, 2] keepdim=false dtype=none : f64[B]\n"
     "  out %3 keep\n",
     {3}, -1, NAN, 1, 0},
    {"chunked_rows",
     "  sym B dim 1..4096\n"
     "  in %0 host f64[B, 40001]\n"
     "  %1 = exp(%0) : f64[B, 40001]\n"
     "  %2 = sum(%1) dims=[1] keepdim=false dtype=none : f64[B]\n"
     "  out %2 keep\n",
     {4}, -1, NAN, 1, 0},
    /* amax/amin of negatives and zeros of both signs: which zero comes
     * out depends on the order (lanes, not elements, are merged) */
    {"signed_zero_extremes",
     "  sym B dim 1..4096\n"
     "  in %0 host f64[B, 100]\n"
     "  in %1 const f64[] = -0.0\n"
     "  in %2 const f64[] = -1\n"
     "  %3 = mul(%0, %1) : f64[B, 100]\n"
     "  %4 = lt(%0, %2) : bool[B, 100]\n"
     "  %5 = where(%4, %0, %3) : f64[B, 100]\n"
     "  %6 = amax(%5) dims=[-1] keepdim=false : f64[B]\n"
     "  %7 = neg(%5) : f64[B, 100]\n"
     "  %8 = amin(%7) dims=[-1] keepdim=false : f64[B]\n"
     "  out %6 keep\n"
     "  out %8 keep\n",
     {300}, -1, NAN, 2, 0},
};

/* Golden generated source of the named cases: the kernels part of
 * emit(fuse+select(case)) must equal <tests>/golden/<dir>/<name><ext> after
 * its first (header) line; JANUS_UPDATE_GOLDEN=1 rewrites the files.
 * `what` names the language, `prog` the test program, for messages. */
typedef jn_status (*jt_emit_fn)(const jn_ir_module *m, char **src, size_t *len, int *nkernels);

static void check_goldens(const char *const *names, size_t n, jt_emit_fn emit, const char *dir, const char *ext,
                          const char *what, const char *prog) {
    int update = 0;
    CHECK(jn_setting_bool(JN_S_UPDATE_GOLDEN, &update) == JN_OK);
    for (size_t i = 0; i < n; i++) {
        const ecase *c = NULL;
        for (size_t j = 0; j < sizeof cases / sizeof cases[0]; j++)
            if (!strcmp(cases[j].name, names[i])) c = &cases[j];
        jn_ir_module *m = c ? parse_body(c->body) : NULL;
        CHECK(m && run_passes(m, "fuse,select"));
        if (!m) continue;
        char *src = NULL, path[1200];
        size_t len = 0;
        int nk = 0;
        CHECK(emit(m, &src, &len, &nk) == JN_OK);
        snprintf(path, sizeof path, "%s/golden/%s/%s%s", src_dir, dir, names[i], ext);
        const char *got = src ? kernels_part(src) : "";
        if (update) {
            FILE *f = fopen(path, "wb");
            CHECK(f && fprintf(f, "/* Golden generated %s (tests/c/%s.c; JANUS_UPDATE_GOLDEN=1 rewrites it) */\n", what,
                               prog) > 0 && fputs(got, f) >= 0);
            if (f) fclose(f);
            printf("wrote %s\n", path);
        } else {
            char *want = read_text(path);
            const char *w = want ? strchr(want, '\n') : NULL;
            int same = w && !strcmp(w + 1, got);
            CHECK(same);
            if (!same) fprintf(stderr, "%s differs from the generated %s (or is missing); JANUS_UPDATE_GOLDEN=1 "
                                       "build/%s rewrites it\n", path, what, prog);
            free(want);
        }
        free(src);
        jn_ir_module_free(m);
    }
}

#endif
