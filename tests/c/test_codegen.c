/* test_codegen.c -- the codegen passes (codegen/jn_cg.h), each a golden
 * test on IR text: a graph body in, one or more named passes, the printed
 * body out compared with an expected text written by hand from the pass's
 * rules, plus the cases each pass must leave alone.  Every result must
 * verify and survive print -> parse -> print and serialize -> deserialize
 * -> print unchanged (the IR extensions: kernel=, mem=, alias=, kernel and
 * arena lines).  Then the whole pipeline over every golden graph mined by
 * the analyzer (tests/golden/ where present, else tests/c/data/):
 * it verifies after each pass, node counts never grow, and the planned
 * arena at the recorded symbol maxima is at most the naive sum; each
 * loop-free graph is interpreted through the eager kernels before and after
 * the passes and must give the same outputs; mutants of the optimized
 * modules must parse to an error or to a module the pipeline takes again.
 */
#include <dirent.h>
#include <stdlib.h>
#include <string.h>

#include "jn_cg.h"
#include "cg_priv.h" /* cg_dim_ge */
#include "jn_test.h"
#include "jn_test_exec.h"

#define HEAD "graph g group=0 variant=0 parent=-1 diverge=0 support=1 steps=0..0 entry=\"a\" exit=\"b\" {\n"

static char *print_graph(const jn_ir_module *m, const jn_ir_graph *g) {
    char *s = NULL;
    size_t n = 0;
    FILE *f = open_memstream(&s, &n);
    CHECK(jn_ir_print_graph(m, g, f) == JN_OK);
    fclose(f);
    return s;
}

static char *print_module(const jn_ir_module *m) {
    char *s = NULL;
    size_t n = 0;
    FILE *f = open_memstream(&s, &n);
    CHECK(jn_ir_print(m, f) == JN_OK);
    fclose(f);
    return s;
}

/* Both identities on a module that verifies. */
static void check_roundtrips(const jn_ir_module *m) {
    char *t1 = print_module(m), *t2 = NULL, *t3 = NULL;
    jn_ir_module *m2 = NULL, *m3 = NULL;
    jn_status st = jn_ir_parse(t1, strlen(t1), &m2);
    CHECK(st == JN_OK);
    if (st) fprintf(stderr, "reparse: %s\n%s", jn_errmsg(), t1);
    if (m2) t2 = print_module(m2);
    CHECK(t2 && !strcmp(t1, t2));
    void *b = NULL;
    size_t n = 0;
    CHECK(jn_ir_serialize(m, &b, &n) == JN_OK);
    st = jn_ir_deserialize(b, n, &m3);
    CHECK(st == JN_OK);
    if (st) fprintf(stderr, "reload: %s\n", jn_errmsg());
    if (m3) t3 = print_module(m3);
    CHECK(t3 && !strcmp(t1, t3));
    free(b);
    free(t1);
    free(t2);
    free(t3);
    jn_ir_module_free(m2);
    jn_ir_module_free(m3);
}

static void differential(const char *path, const jn_ir_module *m0, const jn_ir_module *m1, int32_t k);
static int diff_compared, diff_skipped;

/* Parses HEAD body "}", runs the comma list of passes on the graph, and
 * compares the printed body with `want`; when the graph runs on the eager
 * kernels, the outputs before and after must agree. */
static void golden(const char *what, const char *body, const char *passes, const char *want) {
    size_t n = strlen(HEAD) + strlen(body) + 64;
    char *text = malloc(n);
    snprintf(text, n, "module optable=0000000000000000 graphs=1\n" HEAD "%s}\n", body);
    jn_ir_module *m = NULL;
    jn_status st = jn_ir_parse(text, strlen(text), &m);
    CHECK(st == JN_OK);
    if (st) {
        fprintf(stderr, "%s: input does not parse: %s\n", what, jn_errmsg());
        free(text);
        return;
    }
    char list[128];
    snprintf(list, sizeof list, "%s", passes);
    for (char *p = strtok(list, ","); p; p = strtok(NULL, ",")) {
        st = jn_cg_run_pass(m, m->graphs[0], p);
        CHECK(st == JN_OK);
        if (st) fprintf(stderr, "%s: pass %s: %s\n", what, p, jn_errmsg());
        st = jn_ir_verify(m->graphs[0]);
        CHECK(st == JN_OK);
        if (st) fprintf(stderr, "%s: after %s: %s\n", what, p, jn_errmsg());
    }
    char *got = print_graph(m, m->graphs[0]);
    const char *b = got + strlen(HEAD);
    size_t blen = strlen(got) - strlen(HEAD) - 2; /* the closing "}\n" */
    int same = strlen(got) >= strlen(HEAD) + 2 && !strncmp(got, HEAD, strlen(HEAD)) && blen == strlen(want) &&
               !strncmp(b, want, blen);
    CHECK(same);
    if (!same) fprintf(stderr, "---- %s: want\n%s---- got\n%.*s----\n", what, want, (int)blen, b);
    check_roundtrips(m);
    jn_ir_module *orig = NULL;
    if (jn_ir_parse(text, strlen(text), &orig) == JN_OK) differential(what, orig, m, 0);
    jn_ir_module_free(orig);
    jn_ir_module_free(m);
    free(got);
    free(text);
}

/* ------------------------------------------------- the IR's extensions */
/* HEAD body "}" must fail to parse (or verify) with a message holding `msg`. */
static void reject(const char *body, const char *msg) {
    size_t n = strlen(HEAD) + strlen(body) + 64;
    char *text = malloc(n);
    snprintf(text, n, "module optable=0000000000000000 graphs=1\n" HEAD "%s}\n", body);
    jn_ir_module *m = NULL;
    jn_status st = jn_ir_parse(text, strlen(text), &m);
    CHECK(st == JN_ERR_VALUE && m == NULL && strstr(jn_errmsg(), msg));
    if (st != JN_ERR_VALUE || !strstr(jn_errmsg(), msg))
        fprintf(stderr, "want an error with '%s', got %s: %s\n", msg, jn_status_name(st), st ? jn_errmsg() : "");
    jn_ir_module_free(m);
    free(text);
}

static void test_ir_extensions(void) {
    /* kernel= after the attributes, even for pooling ops whose attribute is named kernel */
    const char *ok =
        "  sym B dim 1..64\n"
        "  in %0 host f32[B, 3, 8, 8]\n"
        "  %1, %2 = max_pool2d(%0) kernel=[2, 2] stride=[2, 2] padding=[0, 0] dilation=[1, 1] ceil_mode=false "
        "kernel=K0 : f32[B, 3, 4, 4] mem=0, i64[B, 3, 4, 4] mem=(B*384)\n"
        "  %3 = view(%1) shape=[B, 48] kernel=K1 : f32[B, 48] alias=%1\n"
        "  %4 = relu(%3) kernel=K1 : f32[B, 48]\n"
        "  out %4 keep\n"
        "  kernel K0 lib root=%1 impl=lib\n"
        "  kernel K1 ew root=%4\n"
        "  arena ((B*384)+(B*1536))\n";
    golden("ir: kernel, mem, alias, arena read back", ok, "verify", ok);
    reject("  in %0 host f32[4]\n  %1 = exp(%0) kernel=K0 : f32[4]\n  %2 = neg(%1) : f32[4]\n"
           "  kernel K0 ew root=%2\n",
           "kernel K0 has root node 1 (neg), which is not one of its members");
    reject("  in %0 host f32[4]\n  %1 = exp(%0) : f32[4]\n  %2 = neg(%1) kernel=K0 : f32[4]\n",
           "node 1 (neg) names kernel K0, which does not exist");
    reject("  in %0 host f32[4]\n  %1 = exp(%0) kernel=K0 : f32[4]\n  %2 = neg(%1) kernel=K0 : f32[4]\n"
           "  kernel K0 ew root=%1\n",
           "node 1 (neg) comes after the root (node 0) of its kernel K0");
    reject("  sym T dim 1..4\n  sym i ivar 0..3\n  in %0 host f32[4]\n  %1 = exp(%0) kernel=K0 : f32[4]\n"
           "  loop L0 trip=T ivar=i {\n    %2 = neg(%1) kernel=K0 : f32[4]\n    collect %2 => %3\n  }\n"
           "  kernel K0 ew root=%2\n",
           "in loop -1, its root in loop 0 (a kernel stays in one loop)");
    reject("  in %0 host f32[4]\n  %1 = exp(%0) : f32[4] mem=0\n",
           "values have arena offsets (mem) but the graph has no arena");
    reject("  in %0 host f32[4]\n  %1 = exp(%0) : f32[4] mem=-64\n  arena 64\n", "has mem -64, which is no byte offset");
    reject("  in %0 host f32[4]\n  %1 = exp(%0) : f32[4]\n  arena -5\n", "the arena size -5");
    reject("  in %0 host f32[4]\n  %1 = exp(%0) : f32[4]\n  %2 = exp(%0) kernel=K1 : f32[4]\n"
           "  kernel K1 ew root=%2\n",
           "expected kernel K0 (kernels are numbered in order)");
    reject("  in %0 host f32[4]\n  %1 = exp(%0) kernel=K0 : f32[4]\n  kernel K0 fused root=%1\n",
           "expected a kernel kind: ew, ew_reduce, gemm or lib");
    reject("  in %0 host f32[4]\n  %1 = exp(%0) kernel=K0 : f32[4]\n  kernel K0 ew root=%0\n",
           "root=%0 is not a node output");
    reject("  in %0 host f32[4]\n  %1 = exp(%0) kernel=K0 : f32[4]\n  kernel K0 ew root=%1 impl=fast\n",
           "expected impl=gen, lib or gemm");
    reject("  in %0 host f32[4]\n  %1 = exp(%0) : f32[4] alias=%2\n  %2 = neg(%0) : f32[4]\n",
           "%2 is used before it is defined");
    reject("  in %0 host f32[4]\n  %1 = exp(%0) kernel=K : f32[4]\n", "expected kernel=K<k>");
    /* the text says which graphs were optimized: a graph without the lines is unplanned */
    jn_ir_module *m = jn_ir_module_new();
    jn_ir_graph *g = jn_ir_graph_add(m, "g");
    CHECK(g && g->arena == -1 && g->nkernels == 0);
    jn_ir_dim four = 4;
    int32_t i = jn_ir_input_add(g, JN_IR_IN_HOST, JN_F32, 0, 1, &four, 0);
    jn_ir_value t = g->values[g->inputs[i].value];
    t.mem = 7; /* ignored: node_add takes dtype, device and shape only */
    int32_t n = jn_ir_node_add(g, JN_OP_exp, 1, &g->inputs[i].value, NULL, 1, &t, 0);
    CHECK(n == 0 && g->nodes[0].kernel == -1 && g->values[g->nodes[0].out[0]].mem == -1 &&
          g->values[g->nodes[0].out[0]].alias == -1 && jn_ir_verify(g) == JN_OK);
    CHECK(jn_ir_kernel_add(g, JN_IR_K_EW, 0) == 0 && g->nodes[0].kernel == 0 && jn_ir_verify(g) == JN_OK);
    jn_ir_module_free(m);
}

/* ------------------------------------------------------------------ dce */
static void test_dce(void) {
    golden("dce: dead nodes, a dead random op",
           "  sym B dim 1..64\n"
           "  in %0 host f32[B, 4]\n"
           "  in %1 const f64[] = 2.0\n"
           "  %2 = mul(%0, %1) : f32[B, 4]\n"
           "  %3 = exp(%0) : f32[B, 4]\n"
           "  %4 = randn() shape=[4] dtype=none seed=0 offset=0 : f32[4]\n"
           "  %5 = neg(%2) : f32[B, 4]\n"
           "  out %5 keep\n",
           "dce",
           "  sym B dim 1..64\n"
           "  in %0 host f32[B, 4]\n"
           "  in %1 const f64[] = 2.0\n"
           "  %2 = mul(%0, %1) : f32[B, 4]\n"
           "  %3 = neg(%2) : f32[B, 4]\n"
           "  out %3 keep\n");
    /* a carry whose param only feeds its own next is dead, so is an unread
     * collect and a whole loop; the live carry keeps its body */
    golden("dce: loops",
           "  sym T dim 1..9\n"
           "  sym i0 ivar 0..8\n"
           "  sym i1 ivar 0..8\n"
           "  in %0 host f32[4]\n"
           "  in %1 state f32[4] bind=1\n"
           "  loop L0 trip=T ivar=i0 {\n"
           "    carry %2 = %0 -> %5 => %6\n"
           "    carry %3 = %1 -> %4 => %7\n"
           "    %4 = exp(%3) : f32[4]\n"
           "    %5 = add(%2, %2) alpha=1 : f32[4]\n"
           "    %8 = neg(%2) : f32[4]\n"
           "    collect %8 => %9\n"
           "  }\n"
           "  loop L1 trip=T ivar=i1 {\n"
           "    %10 = exp(%0) : f32[4]\n"
           "    collect %10 => %11\n"
           "  }\n"
           "  out %6 keep\n",
           "dce",
           "  sym T dim 1..9\n"
           "  sym i0 ivar 0..8\n"
           "  sym i1 ivar 0..8\n"
           "  in %0 host f32[4]\n"
           "  in %1 state f32[4] bind=1\n"
           "  loop L0 trip=T ivar=i0 {\n"
           "    carry %2 = %0 -> %3 => %4\n"
           "    %3 = add(%2, %2) alpha=1 : f32[4]\n"
           "  }\n"
           "  out %4 keep\n");
    /* guards and state outputs keep values; a used carry keeps its param's producer chain */
    golden("dce: guards, state outputs, a value used after its loop",
           "  sym T dim 1..9\n"
           "  sym i0 ivar 0..8\n"
           "  in %0 state f32[4] bind=1\n"
           "  in %1 const f64[] = 0.5\n"
           "  %2 = mul(%0, %1) : f32[4]\n"
           "  %3 = neg(%0) : f32[4]\n"
           "  loop L0 trip=T ivar=i0 {\n"
           "    carry %4 = %3 -> %6 => %5\n"
           "    %6 = mul(%4, %2) : f32[4]\n"
           "  }\n"
           "  %7 = add(%5, %2) alpha=1 : f32[4]\n"
           "  %8 = exp(%3) : f32[4]\n"
           "  out %7 state=%0\n"
           "  guard dim %8.0 == 4 need\n"
           "  guard scalar %1 == 0.5 need\n",
           "dce",
           "  sym T dim 1..9\n"
           "  sym i0 ivar 0..8\n"
           "  in %0 state f32[4] bind=1\n"
           "  in %1 const f64[] = 0.5\n"
           "  %2 = mul(%0, %1) : f32[4]\n"
           "  %3 = neg(%0) : f32[4]\n"
           "  loop L0 trip=T ivar=i0 {\n"
           "    carry %4 = %3 -> %6 => %5\n"
           "    %6 = mul(%4, %2) : f32[4]\n"
           "  }\n"
           "  %7 = add(%5, %2) alpha=1 : f32[4]\n"
           "  %8 = exp(%3) : f32[4]\n"
           "  out %7 state=%0\n"
           "  guard dim %8.0 == 4 need\n"
           "  guard scalar %1 == 0.5 need\n");
}

/* -------------------------------------------------------------- unstack */
static void test_unstack(void) {
    /* L0 stacks the rows of %0 along dim 1 over its whole length: a permute
     * (and L0, left empty, goes with its trip guard; L2's is renumbered);
     * L1 stacks the first T-1 rows along dim 0: a slice, the loop stays for
     * its other collect; L2 walks %1 backwards (no view) and L3's collect is
     * a graph output (Python gets a tensor of its own): both stay */
    golden("unstack",
           "  sym T dim 2..9\n"
           "  sym i0 ivar 0..8\n"
           "  sym i1 ivar 0..8\n"
           "  sym i2 ivar 0..8\n"
           "  sym i3 ivar 0..8\n"
           "  in %0 host f32[2, T, 3]\n"
           "  in %1 host f32[T, 3]\n"
           "  loop L0 trip=T ivar=i0 {\n"
           "    %2 = select(%0) dim=1 index=i0 : f32[2, 3]\n"
           "    collect %2 => %3\n"
           "  }\n"
           "  loop L1 trip=(T-1) ivar=i1 {\n"
           "    %4 = select(%1) dim=0 index=i1 : f32[3]\n"
           "    %5 = exp(%4) : f32[3]\n"
           "    collect %4 => %6\n"
           "    collect %5 => %7\n"
           "  }\n"
           "  loop L2 trip=T ivar=i2 {\n"
           "    %8 = select(%1) dim=0 index=((T-1)-i2) : f32[3]\n"
           "    collect %8 => %9\n"
           "  }\n"
           "  loop L3 trip=T ivar=i3 {\n"
           "    %10 = select(%1) dim=-2 index=i3 : f32[3]\n"
           "    collect %10 => %11\n"
           "  }\n"
           "  %12 = neg(%3) : f32[T, 2, 3]\n"
           "  %13 = neg(%6) : f32[(T-1), 3]\n"
           "  %14 = neg(%9) : f32[T, 3]\n"
           "  out %12 keep\n"
           "  out %13 keep\n"
           "  out %7 keep\n"
           "  out %14 keep\n"
           "  out %11 keep\n"
           "  guard trip L0 in 2..9 seen\n"
           "  guard trip L2 in 2..9 seen\n",
           "unstack,dce",
           "  sym T dim 2..9\n"
           "  sym i0 ivar 0..8\n"
           "  sym i1 ivar 0..8\n"
           "  sym i2 ivar 0..8\n"
           "  sym i3 ivar 0..8\n"
           "  in %0 host f32[2, T, 3]\n"
           "  in %1 host f32[T, 3]\n"
           "  %12 = permute(%0) dims=[1, 0, 2] : f32[T, 2, 3]\n"
           "  loop L0 trip=(T-1) ivar=i1 {\n"
           "    %2 = select(%1) dim=0 index=i1 : f32[3]\n"
           "    %3 = exp(%2) : f32[3]\n"
           "    collect %3 => %4\n"
           "  }\n"
           "  %13 = slice(%1) dim=0 start=0 end=(T-1) step=1 : f32[(T-1), 3]\n"
           "  loop L1 trip=T ivar=i2 {\n"
           "    %5 = select(%1) dim=0 index=((T-1)-i2) : f32[3]\n"
           "    collect %5 => %6\n"
           "  }\n"
           "  loop L2 trip=T ivar=i3 {\n"
           "    %7 = select(%1) dim=-2 index=i3 : f32[3]\n"
           "    collect %7 => %8\n"
           "  }\n"
           "  %9 = neg(%12) : f32[T, 2, 3]\n"
           "  %10 = neg(%13) : f32[(T-1), 3]\n"
           "  %11 = neg(%6) : f32[T, 3]\n"
           "  out %9 keep\n"
           "  out %10 keep\n"
           "  out %4 keep\n"
           "  out %11 keep\n"
           "  out %8 keep\n"
           "  guard trip L1 in 2..9 seen\n");
}

/* ------------------------------------------------------------------ cse */
static void test_cse(void) {
    golden("cse: equal consts, equal nodes, chains; not: other attrs, random ops",
           "  sym B dim 1..64\n"
           "  in %0 host f32[B, 4]\n"
           "  in %1 const i64[] = -100\n"
           "  in %2 const i64[] = -100\n"
           "  in %3 host i64[B]\n"
           "  %4 = ne(%3, %1) : bool[B]\n"
           "  %5 = ne(%3, %2) : bool[B]\n"
           "  %6 = exp(%0) : f32[B, 4]\n"
           "  %7 = exp(%0) : f32[B, 4]\n"
           "  %8 = add(%6, %7) alpha=1 : f32[B, 4]\n"
           "  %9 = add(%6, %7) alpha=2 : f32[B, 4]\n"
           "  %10 = randn() shape=[4] dtype=none seed=0 offset=0 : f32[4]\n"
           "  %11 = randn() shape=[4] dtype=none seed=0 offset=0 : f32[4]\n"
           "  %12 = logical_and(%4, %5) : bool[B]\n"
           "  %13 = add(%10, %11) alpha=1 : f32[4]\n"
           "  out %8 keep\n"
           "  out %9 keep\n"
           "  out %12 keep\n"
           "  out %13 keep\n",
           "cse,dce",
           "  sym B dim 1..64\n"
           "  in %0 host f32[B, 4]\n"
           "  in %1 const i64[] = -100\n"
           "  in %2 const i64[] = -100\n"
           "  in %3 host i64[B]\n"
           "  %4 = ne(%3, %1) : bool[B]\n"
           "  %5 = exp(%0) : f32[B, 4]\n"
           "  %6 = add(%5, %5) alpha=1 : f32[B, 4]\n"
           "  %7 = add(%5, %5) alpha=2 : f32[B, 4]\n"
           "  %8 = randn() shape=[4] dtype=none seed=0 offset=0 : f32[4]\n"
           "  %9 = randn() shape=[4] dtype=none seed=0 offset=0 : f32[4]\n"
           "  %10 = logical_and(%4, %4) : bool[B]\n"
           "  %11 = add(%8, %9) alpha=1 : f32[4]\n"
           "  out %6 keep\n"
           "  out %7 keep\n"
           "  out %10 keep\n"
           "  out %11 keep\n");
    const char *keep =
        "  sym T dim 1..9\n"
        "  sym i0 ivar 0..8\n"
        "  in %0 host f32[4]\n"
        "  in %1 const f64[] = 0.0\n"
        "  in %2 const f64[] = -0.0\n"
        "  %3 = exp(%0) : f32[4]\n"
        "  %4 = exp(%0) : f32[4]\n"
        "  loop L0 trip=T ivar=i0 {\n"
        "    %5 = exp(%0) : f32[4]\n"
        "    %6 = add(%5, %1) alpha=1 : f32[4]\n"
        "    %7 = add(%5, %2) alpha=1 : f32[4]\n"
        "    %8 = mul(%6, %7) : f32[4]\n"
        "    collect %8 => %9\n"
        "  }\n"
        "  out %3 keep\n"
        "  out %4 keep\n"
        "  out %9 keep\n";
    golden("cse: not across loops, not two outputs, not 0.0 with -0.0", keep, "cse", keep);
}

/* ----------------------------------------------------------------- fold */
static void test_fold(void) {
    golden("fold: const arithmetic and a cast of a const",
           "  in %0 host f32[4]\n"
           "  in %1 const i64[] = 3\n"
           "  in %2 const i64[] = 4\n"
           "  %3 = mul(%1, %2) : i64[]\n"
           "  %4 = cast(%3) dtype=f32 : f32[]\n"
           "  %5 = mul(%0, %4) : f32[4]\n"
           "  %6 = full() shape=[] value=2.5 dtype=none : f32[]\n"
           "  %7 = add(%5, %6) alpha=1 : f32[4]\n"
           "  out %7 keep\n",
           "fold,dce",
           "  in %0 host f32[4]\n"
           "  in %1 const i64[] = 3\n"
           "  in %2 const i64[] = 4\n"
           "  in %5 const i64[] = 12\n"
           "  in %6 const f32[] = 12.0\n"
           "  in %7 const f32[] = 2.5\n"
           "  %3 = mul(%0, %6) : f32[4]\n"
           "  %4 = add(%3, %7) alpha=1 : f32[4]\n"
           "  out %4 keep\n");
    /* a 0-d f64 tensor makes i64 * it f64; a wrapped 2.0 would give f32:
     * not folded.  Nor: a varying scalar, a random op, a 1-d result, an
     * output. */
    const char *keep =
        "  in %0 host i64[4]\n"
        "  in %1 const i64[] = 2\n"
        "  in %2 scalar f64[] = 0.5\n"
        "  %3 = cast(%1) dtype=f64 : f64[]\n"
        "  %4 = mul(%0, %3) : f64[4]\n"
        "  %5 = mul(%1, %2) : f64[]\n"
        "  %6 = rand() shape=[] dtype=none seed=0 offset=0 : f32[]\n"
        "  %7 = full() shape=[3] value=1 dtype=none : f32[3]\n"
        "  %8 = neg(%1) : i64[]\n"
        "  out %4 keep\n"
        "  out %5 keep\n"
        "  out %6 keep\n"
        "  out %7 keep\n"
        "  out %8 keep\n";
    golden("fold: promotion changes, varying scalars, random, 1-d, outputs", keep, "fold", keep);
}

/* ------------------------------------------------------------- simplify */
static void test_simplify(void) {
    golden("simplify: identities and pairs",
           "  sym B dim 1..64\n"
           "  in %0 host f32[B, 4]\n"
           "  in %1 const i64[] = 1\n"
           "  in %2 const f64[] = 0.0\n"
           "  in %3 host i64[B, 4]\n"
           "  in %4 const f64[] = 1.0\n"
           "  %5 = mul(%0, %1) : f32[B, 4]\n"
           "  %6 = add(%5, %2) alpha=1 : f32[B, 4]\n"
           "  %7 = mul(%3, %4) : f32[B, 4]\n"
           "  %8 = cast(%6) dtype=f32 : f32[B, 4]\n"
           "  %9 = transpose(%8) dim0=0 dim1=1 : f32[4, B]\n"
           "  %10 = transpose(%9) dim0=1 dim1=0 : f32[B, 4]\n"
           "  %11 = view(%10) shape=[4, B] : f32[4, B]\n"
           "  %12 = view(%11) shape=[B, 4] : f32[B, 4]\n"
           "  %13 = unsqueeze(%12) dim=0 : f32[1, B, 4]\n"
           "  %14 = squeeze(%13) dims=[0] : f32[B, 4]\n"
           "  %15 = neg(%14) : f32[B, 4]\n"
           "  %16 = neg(%15) : f32[B, 4]\n"
           "  %17 = permute(%16) dims=[1, 0] : f32[4, B]\n"
           "  %18 = permute(%17) dims=[1, 0] : f32[B, 4]\n"
           "  %19 = add(%18, %7) alpha=1 : f32[B, 4]\n"
           "  out %19 keep\n",
           "simplify,dce",
           "  sym B dim 1..64\n"
           "  in %0 host f32[B, 4]\n"
           "  in %1 const i64[] = 1\n"
           "  in %2 const f64[] = 0.0\n"
           "  in %3 host i64[B, 4]\n"
           "  in %4 const f64[] = 1.0\n"
           "  %5 = mul(%3, %4) : f32[B, 4]\n"
           "  %6 = add(%0, %5) alpha=1 : f32[B, 4]\n"
           "  out %6 keep\n");
    golden("simplify: compositions; not: strided view chains, other transposes, output aliasing",
           "  in %0 host f32[2, 3, 4]\n"
           "  in %1 const i64[] = 1\n"
           "  %2 = permute(%0) dims=[1, 2, 0] : f32[3, 4, 2]\n"
           "  %3 = permute(%2) dims=[0, 2, 1] : f32[3, 2, 4]\n"
           "  %4 = view(%0) shape=[6, 4] : f32[6, 4]\n"
           "  %5 = view(%4) shape=[24] : f32[24]\n"
           "  %6 = transpose(%0) dim0=1 dim1=2 : f32[2, 4, 3]\n"
           "  %7 = view(%6) shape=[2, 4, 3, 1] : f32[2, 4, 3, 1]\n"
           "  %8 = view(%7) shape=[2, 4, 3] : f32[2, 4, 3]\n"
           "  %9 = unsqueeze(%0) dim=-1 : f32[2, 3, 4, 1]\n"
           "  %10 = squeeze(%9) dims=[3] : f32[2, 3, 4]\n"
           "  %11 = neg(%10) : f32[2, 3, 4]\n"
           "  %12 = transpose(%0) dim0=0 dim1=1 : f32[3, 2, 4]\n"
           "  %13 = transpose(%12) dim0=1 dim1=2 : f32[3, 4, 2]\n"
           "  %14 = mul(%0, %1) : f32[2, 3, 4]\n"
           "  out %3 keep\n"
           "  out %5 keep\n"
           "  out %8 keep\n"
           "  out %11 keep\n"
           "  out %13 keep\n"
           "  out %14 keep\n",
           "simplify,dce",
           "  in %0 host f32[2, 3, 4]\n"
           "  in %1 const i64[] = 1\n"
           "  %2 = permute(%0) dims=[1, 0, 2] : f32[3, 2, 4]\n"
           "  %3 = view(%0) shape=[24] : f32[24]\n"
           "  %4 = transpose(%0) dim0=1 dim1=2 : f32[2, 4, 3]\n"
           "  %5 = view(%4) shape=[2, 4, 3, 1] : f32[2, 4, 3, 1]\n"
           "  %6 = view(%5) shape=[2, 4, 3] : f32[2, 4, 3]\n"
           "  %7 = neg(%0) : f32[2, 3, 4]\n"
           "  %8 = transpose(%0) dim0=0 dim1=1 : f32[3, 2, 4]\n"
           "  %9 = transpose(%8) dim0=1 dim1=2 : f32[3, 4, 2]\n"
           "  %10 = mul(%0, %1) : f32[2, 3, 4]\n"
           "  out %2 keep\n"
           "  out %3 keep\n"
           "  out %6 keep\n"
           "  out %7 keep\n"
           "  out %9 keep\n"
           "  out %10 keep\n");
    /* shapes that differ symbolically, x+0 with alpha on the wrong side,
     * an integer true division by 1 (a float result), floor division of a float */
    const char *keep =
        "  sym B dim 1..64\n"
        "  in %0 host f32[B, 4]\n"
        "  in %1 host f32[B, 1]\n"
        "  in %2 const f64[] = 0.0\n"
        "  in %3 const i64[] = 1\n"
        "  in %4 host i64[4]\n"
        "  %5 = view(%0) shape=[32, 4] : f32[32, 4]\n"
        "  %6 = expand(%1) shape=[B, 4] : f32[B, 4]\n"
        "  %7 = add(%2, %0) alpha=2 : f32[B, 4]\n"
        "  %8 = div(%4, %3) rounding_mode=0 : f32[4]\n"
        "  %9 = div(%0, %3) rounding_mode=2 : f32[B, 4]\n"
        "  out %5 keep\n"
        "  out %6 keep\n"
        "  out %7 keep\n"
        "  out %8 keep\n"
        "  out %9 keep\n";
    golden("simplify: what must stay", keep, "simplify", keep);
}

/* ----------------------------------------------------------------- fuse */
static void test_fuse(void) {
    golden("fuse: GEMM epilogue, elementwise chain ending in a reduction, an export",
           "  sym B dim 1..64\n"
           "  in %0 host f32[B, 16]\n"
           "  in %1 state f32[8, 16] bind=1\n"
           "  in %2 state f32[8] bind=2\n"
           "  in %3 host f32[B, 8]\n"
           "  in %4 const f64[] = 0.5\n"
           "  %5 = linear(%0, %1, %2) : f32[B, 8]\n"
           "  %6 = relu(%5) : f32[B, 8]\n"
           "  %7 = sub(%6, %3) alpha=1 : f32[B, 8]\n"
           "  %8 = mul(%7, %7) : f32[B, 8]\n"
           "  %9 = mul(%8, %4) : f32[B, 8]\n"
           "  %10 = sum(%9) dims=[1] keepdim=false dtype=none : f32[B]\n"
           "  %11 = exp(%7) : f32[B, 8]\n"
           "  out %10 keep\n"
           "  out %11 keep\n",
           "fuse,select",
           "  sym B dim 1..64\n"
           "  in %0 host f32[B, 16]\n"
           "  in %1 state f32[8, 16] bind=1\n"
           "  in %2 state f32[8] bind=2\n"
           "  in %3 host f32[B, 8]\n"
           "  in %4 const f64[] = 0.5\n"
           "  %5 = linear(%0, %1, %2) kernel=K0 : f32[B, 8]\n"
           "  %6 = relu(%5) kernel=K0 : f32[B, 8]\n"
           "  %7 = sub(%6, %3) alpha=1 kernel=K1 : f32[B, 8]\n"
           "  %8 = mul(%7, %7) kernel=K1 : f32[B, 8]\n"
           "  %9 = mul(%8, %4) kernel=K1 : f32[B, 8]\n"
           "  %10 = sum(%9) dims=[1] keepdim=false dtype=none kernel=K1 : f32[B]\n"
           "  %11 = exp(%7) : f32[B, 8]\n"
           "  out %10 keep\n"
           "  out %11 keep\n"
           "  kernel K0 gemm root=%6 impl=gemm\n"
           "  kernel K1 ew_reduce root=%10 impl=gen\n");
    /* broadcasting inputs join ([8] into [B, 8]); a reduction in the
     * middle ends one kernel (exporting exp, read after its root) and its
     * [B, 1] result is an external input of the next; exp is not pulled
     * into that next kernel (the sum reads it before), a random op stays
     * out, a view splits mul | tanh, the kernel in the loop takes nothing
     * from outside it, and a GEMM with two users gets no epilogue */
    golden("fuse: what joins and what must not",
           "  sym B dim 1..64\n"
           "  sym T dim 1..9\n"
           "  sym i0 ivar 0..8\n"
           "  in %0 host f32[B, 8]\n"
           "  in %1 host f32[8]\n"
           "  in %2 host f32[32, 8]\n"
           "  in %3 host f32[8, 8]\n"
           "  %4 = add(%0, %1) alpha=1 : f32[B, 8]\n"
           "  %5 = exp(%4) : f32[B, 8]\n"
           "  %6 = sum(%5) dims=[-1] keepdim=true dtype=none : f32[B, 1]\n"
           "  %7 = div(%5, %6) rounding_mode=0 : f32[B, 8]\n"
           "  %8 = log(%7) : f32[B, 8]\n"
           "  %9 = rand() shape=[B, 8] dtype=none seed=0 offset=0 : f32[B, 8]\n"
           "  %10 = mul(%8, %9) : f32[B, 8]\n"
           "  %11 = view(%10) shape=[B, 8] : f32[B, 8]\n"
           "  %12 = tanh(%11) : f32[B, 8]\n"
           "  %13 = neg(%2) : f32[32, 8]\n"
           "  %14 = sigmoid(%13) : f32[32, 8]\n"
           "  %15 = neg(%12) : f32[B, 8]\n"
           "  %16 = exp(%15) : f32[B, 8]\n"
           "  %17 = mm(%3, %3) : f32[8, 8]\n"
           "  %18 = relu(%17) : f32[8, 8]\n"
           "  loop L0 trip=T ivar=i0 {\n"
           "    %19 = sigmoid(%17) : f32[8, 8]\n"
           "    %20 = mul(%19, %18) : f32[8, 8]\n"
           "    collect %20 => %21\n"
           "  }\n"
           "  out %6 keep\n"
           "  out %14 keep\n"
           "  out %16 keep\n"
           "  out %21 keep\n",
           "fuse",
           "  sym B dim 1..64\n"
           "  sym T dim 1..9\n"
           "  sym i0 ivar 0..8\n"
           "  in %0 host f32[B, 8]\n"
           "  in %1 host f32[8]\n"
           "  in %2 host f32[32, 8]\n"
           "  in %3 host f32[8, 8]\n"
           "  %4 = add(%0, %1) alpha=1 kernel=K0 : f32[B, 8]\n"
           "  %5 = exp(%4) kernel=K0 : f32[B, 8]\n"
           "  %6 = sum(%5) dims=[-1] keepdim=true dtype=none kernel=K0 : f32[B, 1]\n"
           "  %7 = div(%5, %6) rounding_mode=0 kernel=K1 : f32[B, 8]\n"
           "  %8 = log(%7) kernel=K1 : f32[B, 8]\n"
           "  %9 = rand() shape=[B, 8] dtype=none seed=0 offset=0 : f32[B, 8]\n"
           "  %10 = mul(%8, %9) kernel=K1 : f32[B, 8]\n"
           "  %11 = view(%10) shape=[B, 8] : f32[B, 8]\n"
           "  %12 = tanh(%11) kernel=K3 : f32[B, 8]\n"
           "  %13 = neg(%2) kernel=K2 : f32[32, 8]\n"
           "  %14 = sigmoid(%13) kernel=K2 : f32[32, 8]\n"
           "  %15 = neg(%12) kernel=K3 : f32[B, 8]\n"
           "  %16 = exp(%15) kernel=K3 : f32[B, 8]\n"
           "  %17 = mm(%3, %3) : f32[8, 8]\n"
           "  %18 = relu(%17) : f32[8, 8]\n"
           "  loop L0 trip=T ivar=i0 {\n"
           "    %19 = sigmoid(%17) kernel=K4 : f32[8, 8]\n"
           "    %20 = mul(%19, %18) kernel=K4 : f32[8, 8]\n"
           "    collect %20 => %21\n"
           "  }\n"
           "  out %6 keep\n"
           "  out %14 keep\n"
           "  out %16 keep\n"
           "  out %21 keep\n"
           "  kernel K0 ew_reduce root=%6\n"
           "  kernel K1 ew root=%10\n"
           "  kernel K2 ew root=%14\n"
           "  kernel K3 ew root=%16\n"
           "  kernel K4 ew root=%20\n");
}

/* What a kernel reads and writes, and the runnability checker. */
static void test_kernel_io(void) {
    const char *text = "module optable=0000000000000000 graphs=1\n" HEAD
                       "  sym B dim 1..64\n"
                       "  in %0 host f32[B, 16]\n"
                       "  in %1 state f32[8, 16] bind=1\n"
                       "  in %2 state f32[8] bind=2\n"
                       "  in %3 host f32[B, 8]\n"
                       "  in %4 const f64[] = 0.5\n"
                       "  %5 = linear(%0, %1, %2) : f32[B, 8]\n"
                       "  %6 = relu(%5) : f32[B, 8]\n"
                       "  %7 = sub(%6, %3) alpha=1 : f32[B, 8]\n"
                       "  %8 = mul(%7, %7) : f32[B, 8]\n"
                       "  %9 = mul(%8, %4) : f32[B, 8]\n"
                       "  %10 = sum(%9) dims=[1] keepdim=false dtype=none : f32[B]\n"
                       "  %11 = exp(%7) : f32[B, 8]\n"
                       "  out %10 keep\n"
                       "  out %11 keep\n"
                       "}\n";
    jn_ir_module *m = NULL;
    CHECK(jn_ir_parse(text, strlen(text), &m) == JN_OK);
    if (!m) return;
    jn_ir_graph *g = m->graphs[0];
    CHECK(jn_cg_run_pass(m, g, "fuse") == JN_OK && g->nkernels == 2 && jn_cg_check_kernels(g) == JN_OK);
    jn_cg_kernel_io io;
    CHECK(jn_cg_kernel_describe(g, 0, &io) == JN_OK);
    CHECK(io.nnodes == 2 && io.nodes[0] == 0 && io.nodes[1] == 1);
    CHECK(io.nin == 3 && io.in[0] == 0 && io.in[1] == 1 && io.in[2] == 2);
    CHECK(io.nout == 1 && io.out[0] == 6);
    /* the epilogue function reads the GEMM's output and writes the root */
    CHECK(io.ncall == 2 && io.ncall_in == 1 && io.call[0] == 5 && io.call[1] == 6 && io.nscalar == 0);
    jn_cg_kernel_io_free(&io);
    CHECK(jn_cg_kernel_describe(g, 1, &io) == JN_OK);
    CHECK(io.nnodes == 4 && io.nodes[0] == 2 && io.nodes[3] == 5);
    CHECK(io.nin == 3 && io.in[0] == 6 && io.in[1] == 3 && io.in[2] == 4);
    CHECK(io.nout == 2 && io.out[0] == 7 && io.out[1] == 10); /* the exported sub, the root */
    CHECK(io.ncall == 5 && io.ncall_in == 3 && io.call[0] == 6 && io.call[2] == 4 && io.call[3] == 7 && io.call[4] == 10);
    jn_cg_kernel_io_free(&io);
    CHECK(jn_cg_kernel_describe(g, 2, &io) == JN_ERR_VALUE);
    /* K1 shrunk to sub, mul, mul (root node 4, the second mul): still runnable */
    g->nodes[5].kernel = -1;
    g->kernels[1].root = 4;
    g->kernels[1].kind = JN_IR_K_EW;
    CHECK(jn_ir_verify(g) == JN_OK && jn_cg_check_kernels(g) == JN_OK);
    g->nodes[4].kernel = -1; /* root no member: structure broken, caught by the IR verifier */
    CHECK(jn_ir_verify(g) == JN_ERR_VALUE);
    g->nodes[4].kernel = 1;
    g->nodes[3].kernel = -1; /* mul(%7, %7) outside: reads %7 at node 3, before the root at node 4 */
    CHECK(jn_cg_check_kernels(g) == JN_ERR_VALUE && strstr(jn_errmsg(), "node 3 (mul) reads %7 of member node 2 before"));
    g->nodes[3].kernel = 1;
    g->nodes[2].op = JN_OP_softmax; /* a member that is not elementwise */
    CHECK(jn_cg_check_kernels(g) == JN_ERR_VALUE && strstr(jn_errmsg(), "node 2 (softmax), which is not elementwise"));
    jn_ir_module_free(m);
}

/* --------------------------------------------------------------- select */
static void test_select(void) {
    golden("select: f16 arithmetic is not generated yet",
           "  in %0 host f16[8]\n"
           "  in %1 host f32[8]\n"
           "  %2 = exp(%0) : f16[8]\n"
           "  %3 = neg(%2) : f16[8]\n"
           "  %4 = exp(%1) : f32[8]\n"
           "  %5 = neg(%4) : f32[8]\n"
           "  out %3 keep\n"
           "  out %5 keep\n",
           "fuse,select",
           "  in %0 host f16[8]\n"
           "  in %1 host f32[8]\n"
           "  %2 = exp(%0) kernel=K0 : f16[8]\n"
           "  %3 = neg(%2) kernel=K0 : f16[8]\n"
           "  %4 = exp(%1) kernel=K1 : f32[8]\n"
           "  %5 = neg(%4) kernel=K1 : f32[8]\n"
           "  out %3 keep\n"
           "  out %5 keep\n"
           "  kernel K0 ew root=%3 impl=lib\n"
           "  kernel K1 ew root=%5 impl=gen\n");
}

/* ----------------------------------------------------------------- plan */
static void test_fuse_symbolic(void) {
    /* B was 32 when recorded, but B and 32 are different dims: the [B, 8]
     * producer does not join the [32, 8] kernel (nor the other way) */
    const char *keep =
        "  sym B dim 32..32\n"
        "  in %0 host f32[B, 8]\n"
        "  in %1 host f32[32, 8]\n"
        "  %2 = exp(%0) : f32[B, 8]\n"
        "  %3 = add(%2, %1) alpha=1 : f32[32, 8]\n"
        "  %4 = neg(%3) : f32[B, 8]\n"
        "  out %4 keep\n";
    golden("fuse: shapes that differ symbolically", keep, "fuse", keep);
}

/* cg_dim_ge proves d >= need for every symbol value, or says no */
static void test_dim_ge(void) {
    jn_ir_module *m = jn_ir_module_new();
    jn_ir_graph *g = jn_ir_graph_add(m, "g");
    CHECK(g != NULL);
    if (!g) return;
    int32_t sb = jn_ir_sym_add(g, "B", JN_IR_SYM_DIM, 1, 64, 0), st = jn_ir_sym_add(g, "T", JN_IR_SYM_DIM, 1, 9, 0);
    int32_t si = jn_ir_sym_add(g, "k", JN_IR_SYM_INT, 0, 5, 0);
    jn_ir_dim B = jn_ir_sym_dim(g, sb), T = jn_ir_sym_dim(g, st), K = jn_ir_sym_dim(g, si);
#define OP(k, a, b) jn_ir_dim_op(g, JN_IR_E_##k, a, b)
#define UP(x) OP(MUL, OP(FLOORDIV, OP(ADD, x, 63), 64), 64) /* as cg_value_bytes rounds */
    jn_ir_dim b64 = OP(MUL, B, 64), b128 = OP(MUL, B, 128), bt64 = OP(MUL, OP(MUL, B, T), 64);
    CHECK(cg_dim_ge(g, 128, 64) && !cg_dim_ge(g, 64, 128) && cg_dim_ge(g, 64, 64));
    CHECK(cg_dim_ge(g, b64, b64) && cg_dim_ge(g, b128, b64) && !cg_dim_ge(g, b64, b128));
    CHECK(cg_dim_ge(g, OP(ADD, b64, 64), b64) && cg_dim_ge(g, OP(ADD, b64, 64), 64));
    CHECK(!cg_dim_ge(g, b64, 64));  /* B may be 0: no proof from B's recorded range */
    CHECK(cg_dim_ge(g, bt64, OP(MUL, OP(SUB, T, 1), OP(MUL, B, 64)))); /* B*T*64 >= (T-1)*B*64 */
    CHECK(!cg_dim_ge(g, OP(MUL, OP(SUB, T, 1), OP(MUL, B, 64)), bt64));
    CHECK(!cg_dim_ge(g, bt64, b128) && !cg_dim_ge(g, b128, bt64)); /* T*B vs 2*B: either way */
    CHECK(!cg_dim_ge(g, OP(MUL, K, 64), 0));  /* an int symbol may be negative */
    CHECK(cg_dim_ge(g, OP(MUL, OP(MUL, K, K), 0), 0));
    /* rounded sizes: through what they round */
    jn_ir_dim r4 = UP(OP(MUL, B, 4)), r8 = UP(OP(MUL, B, 8));
    CHECK(cg_dim_ge(g, r8, r4) && !cg_dim_ge(g, r4, r8));
    CHECK(cg_dim_ge(g, b64, r4) && cg_dim_ge(g, b64, r8)); /* a multiple of 64 >= B*4 >= ... */
    CHECK(!cg_dim_ge(g, OP(MUL, B, 8), r4));                 /* B*8 is no multiple of 64: B=1 gives 8 < 64 */
    CHECK(cg_dim_ge(g, r8, OP(MUL, B, 8)) && !cg_dim_ge(g, r4, OP(MUL, B, 8)));
    CHECK(!cg_dim_ge(g, OP(FLOORDIV, b128, 3), b64)); /* no rule for other divisions */
#undef UP
#undef OP
    jn_ir_module_free(m);
}

static void test_plan(void) {
    /* symbolic sizes that only grow with T: packed at T's maximum (8) with
     * constant offsets, smaller than the slot walk's (%3 could not reuse
     * %1's slot there: 16T bytes are not provably <= 4T), which is kept as
     * the wide plan (wmem=, arena ... wide) for runs past T's maximum */
    golden("plan: symbolic sizes packed at the maxima",
           "  sym T dim 1..8\n"
           "  in %0 host f32[T, 4]\n"
           "  %1 = sum(%0) dims=[1] keepdim=false dtype=none : f32[T]\n"
           "  %2 = sum(%1) dims=[] keepdim=false dtype=none : f32[]\n"
           "  %3 = exp(%0) : f32[T, 4]\n"
           "  %4 = add(%3, %2) alpha=1 : f32[T, 4]\n"
           "  out %4 keep\n",
           "plan",
           "  sym T dim 1..8\n"
           "  in %0 host f32[T, 4]\n"
           "  %1 = sum(%0) dims=[1] keepdim=false dtype=none : f32[T] mem=0 wmem=0\n"
           "  %2 = sum(%1) dims=[] keepdim=false dtype=none : f32[] mem=128 wmem=((((T*4)+63)//64)*64)\n"
           "  %3 = exp(%0) : f32[T, 4] mem=0 wmem=(((((T*4)+63)//64)*64)+64)\n"
           "  %4 = add(%3, %2) alpha=1 : f32[T, 4]\n"
           "  out %4 keep\n"
           "  arena 192 wide (((((T*16)+63)//64)*64)+(((((T*4)+63)//64)*64)+64))\n");
    /* a size that shrinks as the induction variable grows: the symbolic plan stays */
    golden("plan: a size not growing with its symbols",
           "  sym T dim 2..8\n"
           "  sym i0 ivar 0..7\n"
           "  in %0 host f32[T, 4]\n"
           "  in %1 host f32[]\n"
           "  loop L0 trip=T ivar=i0 {\n"
           "    carry %2 = %1 -> %6 => %7\n"
           "    %3 = slice(%0) dim=0 start=i0 end=T step=1 : f32[(T-i0), 4]\n"
           "    %4 = exp(%3) : f32[(T-i0), 4]\n"
           "    %5 = sum(%4) dims=[] keepdim=false dtype=none : f32[]\n"
           "    %6 = add(%2, %5) alpha=1 : f32[]\n"
           "  }\n"
           "  out %7 keep\n",
           "plan",
           "  sym T dim 2..8\n"
           "  sym i0 ivar 0..7\n"
           "  in %0 host f32[T, 4]\n"
           "  in %1 host f32[]\n"
           "  loop L0 trip=T ivar=i0 {\n"
           "    carry %2 = %1 -> %6 => %7\n"
           "    %3 = slice(%0) dim=0 start=i0 end=T step=1 : f32[(T-i0), 4] alias=%0\n"
           "    %4 = exp(%3) : f32[(T-i0), 4] mem=0\n"
           "    %5 = sum(%4) dims=[] keepdim=false dtype=none : f32[] mem=(((((T-i0)*16)+63)//64)*64)\n"
           "    %6 = add(%2, %5) alpha=1 : f32[] mem=(((((T-i0)*16)+63)//64)*64)\n"
           "  }\n"
           "  out %7 keep\n"
           "  arena ((((((T-i0)*16)+63)//64)*64)+64)\n");
    /* f32[16] = 64 bytes, one aligned unit; f32[4] rounds up to 64 too */
    golden("plan: in place, views, reuse after death, loops",
           "  sym T dim 1..9\n"
           "  sym i0 ivar 0..8\n"
           "  in %0 host f32[16]\n"
           "  in %1 host f32[16]\n"
           "  %2 = add(%0, %1) alpha=1 : f32[16]\n"
           "  %3 = exp(%2) : f32[16]\n"
           "  %4 = view(%3) shape=[4, 4] : f32[4, 4]\n"
           "  %5 = neg(%3) : f32[16]\n"
           "  %6 = sum(%4) dims=[1] keepdim=false dtype=none : f32[4]\n"
           "  %7 = mul(%6, %6) : f32[4]\n"
           "  loop L0 trip=T ivar=i0 {\n"
           "    %8 = mul(%5, %0) : f32[16]\n"
           "    %9 = exp(%8) : f32[16]\n"
           "    %10 = mul(%9, %9) : f32[16]\n"
           "    collect %10 => %11\n"
           "  }\n"
           "  %12 = add(%5, %1) alpha=1 : f32[16]\n"
           "  out %7 keep\n"
           "  out %11 keep\n"
           "  out %12 keep\n",
           "plan",
           "  sym T dim 1..9\n"
           "  sym i0 ivar 0..8\n"
           "  in %0 host f32[16]\n"
           "  in %1 host f32[16]\n"
           "  %2 = add(%0, %1) alpha=1 : f32[16] mem=0\n"
           "  %3 = exp(%2) : f32[16] mem=0\n"
           "  %4 = view(%3) shape=[4, 4] : f32[4, 4] alias=%3\n"
           "  %5 = neg(%3) : f32[16] mem=64\n"
           "  %6 = sum(%4) dims=[1] keepdim=false dtype=none : f32[4] mem=128\n"
           "  %7 = mul(%6, %6) : f32[4]\n"
           "  loop L0 trip=T ivar=i0 {\n"
           "    %8 = mul(%5, %0) : f32[16] mem=0\n"
           "    %9 = exp(%8) : f32[16] mem=0\n"
           "    %10 = mul(%9, %9) : f32[16] mem=0\n"
           "    collect %10 => %11\n"
           "  }\n"
           "  %12 = add(%5, %1) alpha=1 : f32[16]\n"
           "  out %7 keep\n"
           "  out %11 keep\n"
           "  out %12 keep\n"
           "  arena 192\n");
    /* no in place: another dtype of the same size, an input still read
     * later, a reduction, a view's base; an in-place table op reuses its
     * input 0 (not its input 1); a GEMM never writes its input */
    golden("plan: what must not be reused in place",
           "  in %0 host f32[16]\n"
           "  in %1 host f32[4, 4]\n"
           "  %2 = exp(%0) : f32[16]\n"
           "  %3 = cast(%2) dtype=i32 : i32[16]\n"
           "  %4 = neg(%0) : f32[16]\n"
           "  %5 = exp(%4) : f32[16]\n"
           "  %6 = add(%4, %5) alpha=1 : f32[16]\n"
           "  %7 = view(%6) shape=[4, 4] : f32[4, 4]\n"
           "  %8 = relu(%6) : f32[16]\n"
           "  %9 = mm(%7, %1) : f32[4, 4]\n"
           "  %10 = neg(%1) : f32[4, 4]\n"
           "  %11 = copy_(%10, %9) : f32[4, 4]\n"
           "  %12 = mm(%11, %11) : f32[4, 4]\n"
           "  %13 = add(%8, %3) alpha=1 : f32[16]\n"
           "  out %12 keep\n"
           "  out %13 keep\n",
           "plan",
           "  in %0 host f32[16]\n"
           "  in %1 host f32[4, 4]\n"
           "  %2 = exp(%0) : f32[16] mem=0\n"
           "  %3 = cast(%2) dtype=i32 : i32[16] mem=64\n"
           "  %4 = neg(%0) : f32[16] mem=0\n"
           "  %5 = exp(%4) : f32[16] mem=128\n"
           "  %6 = add(%4, %5) alpha=1 : f32[16] mem=0\n"
           "  %7 = view(%6) shape=[4, 4] : f32[4, 4] alias=%6\n"
           "  %8 = relu(%6) : f32[16] mem=128\n"
           "  %9 = mm(%7, %1) : f32[4, 4] mem=192\n"
           "  %10 = neg(%1) : f32[4, 4] mem=0\n"
           "  %11 = copy_(%10, %9) : f32[4, 4] mem=0\n"
           "  %12 = mm(%11, %11) : f32[4, 4]\n"
           "  %13 = add(%8, %3) alpha=1 : f32[16]\n"
           "  out %12 keep\n"
           "  out %13 keep\n"
           "  arena 256\n");
    /* addmm takes its addend's slot when the addend dies there (an
     * accumulated gradient), not when it is read later or is a factor too */
    golden("plan: addmm accumulates in place",
           "  in %0 host f32[4, 4]\n"
           "  in %1 host f32[4, 4]\n"
           "  %2 = neg(%0) : f32[4, 4]\n"
           "  %3 = addmm(%2, %1, %1) beta=1 alpha=1 : f32[4, 4]\n"
           "  %4 = addmm(%3, %1, %3) beta=1 alpha=1 : f32[4, 4]\n"
           "  %5 = addmm(%4, %1, %1) beta=1 alpha=1 : f32[4, 4]\n"
           "  %6 = add(%4, %5) alpha=1 : f32[4, 4]\n"
           "  out %6 keep\n",
           "plan",
           "  in %0 host f32[4, 4]\n"
           "  in %1 host f32[4, 4]\n"
           "  %2 = neg(%0) : f32[4, 4] mem=0\n"
           "  %3 = addmm(%2, %1, %1) beta=1 alpha=1 : f32[4, 4] mem=0\n"
           "  %4 = addmm(%3, %1, %3) beta=1 alpha=1 : f32[4, 4] mem=64\n"
           "  %5 = addmm(%4, %1, %1) beta=1 alpha=1 : f32[4, 4] mem=0\n"
           "  %6 = add(%4, %5) alpha=1 : f32[4, 4]\n"
           "  out %6 keep\n"
           "  arena 128\n");
    /* a scatter takes its base's slot when the base dies there, even
     * though the base had a view (dead by then): only the window is
     * written; not when src is a view of the base, nor when the base is
     * read later */
    golden("plan: a scatter writes its base's window in place",
           "  in %0 host f32[4, 8]\n"
           "  in %1 host f32[8]\n"
           "  %2 = neg(%0) : f32[4, 8]\n"
           "  %3 = select(%2) dim=0 index=1 : f32[8]\n"
           "  %4 = add(%3, %1) alpha=1 : f32[8]\n"
           "  %5 = select_scatter(%2, %4) dim=0 index=1 : f32[4, 8]\n"
           "  %6 = select(%5) dim=0 index=2 : f32[8]\n"
           "  %7 = select_scatter(%5, %6) dim=0 index=0 : f32[4, 8]\n"
           "  %8 = select_scatter(%7, %1) dim=0 index=3 : f32[4, 8]\n"
           "  %9 = select_scatter(%8, %1) dim=0 index=0 : f32[4, 8]\n"
           "  %10 = add(%8, %9) alpha=1 : f32[4, 8]\n"
           "  out %10 keep\n",
           "plan",
           "  in %0 host f32[4, 8]\n"
           "  in %1 host f32[8]\n"
           "  %2 = neg(%0) : f32[4, 8] mem=0\n"
           "  %3 = select(%2) dim=0 index=1 : f32[8] alias=%2\n"
           "  %4 = add(%3, %1) alpha=1 : f32[8] mem=128\n"
           "  %5 = select_scatter(%2, %4) dim=0 index=1 : f32[4, 8] mem=0\n"
           "  %6 = select(%5) dim=0 index=2 : f32[8] alias=%5\n"
           "  %7 = select_scatter(%5, %6) dim=0 index=0 : f32[4, 8] mem=128\n"
           "  %8 = select_scatter(%7, %1) dim=0 index=3 : f32[4, 8] mem=128\n"
           "  %9 = select_scatter(%8, %1) dim=0 index=0 : f32[4, 8] mem=0\n"
           "  %10 = add(%8, %9) alpha=1 : f32[4, 8]\n"
           "  out %10 keep\n"
           "  arena 256\n");
    /* scatter / scatter_add too; not when src is the base itself */
    golden("plan: scatter and scatter_add write their base in place",
           "  in %0 host f32[4, 8]\n"
           "  in %1 host i64[2, 8]\n"
           "  in %2 host f32[2, 8]\n"
           "  %3 = neg(%0) : f32[4, 8]\n"
           "  %4 = scatter_add(%3, %1, %2) dim=0 : f32[4, 8]\n"
           "  %5 = scatter(%4, %1, %4) dim=0 : f32[4, 8]\n"
           "  %6 = neg(%5) : f32[4, 8]\n"
           "  out %6 keep\n",
           "plan",
           "  in %0 host f32[4, 8]\n"
           "  in %1 host i64[2, 8]\n"
           "  in %2 host f32[2, 8]\n"
           "  %3 = neg(%0) : f32[4, 8] mem=0\n"
           "  %4 = scatter_add(%3, %1, %2) dim=0 : f32[4, 8] mem=0\n"
           "  %5 = scatter(%4, %1, %4) dim=0 : f32[4, 8] mem=128\n"
           "  %6 = neg(%5) : f32[4, 8]\n"
           "  out %6 keep\n"
           "  arena 256\n");
    /* the last node of a loop body is the last reader of a value from
     * outside the loop and of a carry's next: neither may be overwritten
     * in place (the next iteration, the carry copy read them) */
    golden("plan: no in place at the end of a loop body",
           "  sym T dim 1..9\n"
           "  sym i0 ivar 0..8\n"
           "  in %0 host f32[16]\n"
           "  %1 = exp(%0) : f32[16]\n"
           "  loop L0 trip=T ivar=i0 {\n"
           "    carry %2 = %0 -> %4 => %3\n"
           "    %4 = neg(%2) : f32[16]\n"
           "    %5 = mul(%4, %1) : f32[16]\n"
           "    collect %5 => %6\n"
           "  }\n"
           "  out %3 keep\n"
           "  out %6 keep\n",
           "plan",
           "  sym T dim 1..9\n"
           "  sym i0 ivar 0..8\n"
           "  in %0 host f32[16]\n"
           "  %1 = exp(%0) : f32[16] mem=0\n"
           "  loop L0 trip=T ivar=i0 {\n"
           "    carry %2 = %0 -> %4 => %3\n"
           "    %4 = neg(%2) : f32[16] mem=64\n"
           "    %5 = mul(%4, %1) : f32[16] mem=128\n"
           "    collect %5 => %6\n"
           "  }\n"
           "  out %3 keep\n"
           "  out %6 keep\n"
           "  arena 192\n");
    /* constant sizes: placed by offset, largest first.  In definition
     * order %4 (512 B, in place with %5) does not fit the 256 B hole %2
     * left and goes to the end, after %3: arena 256+64+512 = 832.  By
     * size it goes first, at 0, which %2 (dead by then) shared, and %3 above
     * it: 576 */
    golden("plan: constant sizes packed by offset",
           "  in %0 host f32[64]\n"
           "  in %1 host f32[128]\n"
           "  %2 = exp(%0) : f32[64]\n"
           "  %3 = sum(%2) dims=[] keepdim=false dtype=none : f32[]\n"
           "  %4 = exp(%1) : f32[128]\n"
           "  %5 = add(%4, %3) alpha=1 : f32[128]\n"
           "  %6 = mul(%5, %3) : f32[128]\n"
           "  out %6 keep\n",
           "plan",
           "  in %0 host f32[64]\n"
           "  in %1 host f32[128]\n"
           "  %2 = exp(%0) : f32[64] mem=0\n"
           "  %3 = sum(%2) dims=[] keepdim=false dtype=none : f32[] mem=512\n"
           "  %4 = exp(%1) : f32[128] mem=0\n"
           "  %5 = add(%4, %3) alpha=1 : f32[128] mem=0\n"
           "  %6 = mul(%5, %3) : f32[128]\n"
           "  out %6 keep\n"
           "  arena 576\n");
    /* after fuse: fused intermediates need no buffer; sizes are symbolic */
    golden("plan: kernels and symbolic sizes",
           "  sym B dim 1..64\n"
           "  in %0 host f32[B, 16]\n"
           "  in %1 host f32[B, 16]\n"
           "  %2 = add(%0, %1) alpha=1 : f32[B, 16]\n"
           "  %3 = exp(%2) : f32[B, 16]\n"
           "  %4 = mul(%3, %0) : f32[B, 16]\n"
           "  %5 = amax(%4) dims=[1] keepdim=false : f32[B]\n"
           "  %6 = view(%4) shape=[B, 4, 4] : f32[B, 4, 4]\n"
           "  %7 = sum(%6) dims=[1] keepdim=false dtype=none : f32[B, 4]\n"
           "  %8 = neg(%5) : f32[B]\n"
           "  %9 = exp(%7) : f32[B, 4]\n"
           "  out %8 keep\n"
           "  out %9 keep\n",
           "fuse,plan",
           "  sym B dim 1..64\n"
           "  in %0 host f32[B, 16]\n"
           "  in %1 host f32[B, 16]\n"
           "  %2 = add(%0, %1) alpha=1 kernel=K0 : f32[B, 16]\n"
           "  %3 = exp(%2) kernel=K0 : f32[B, 16]\n"
           "  %4 = mul(%3, %0) kernel=K0 : f32[B, 16] mem=0\n"
           "  %5 = amax(%4) dims=[1] keepdim=false kernel=K0 : f32[B] mem=(B*64)\n"
           "  %6 = view(%4) shape=[B, 4, 4] : f32[B, 4, 4] alias=%4\n"
           "  %7 = sum(%6) dims=[1] keepdim=false dtype=none : f32[B, 4] mem=((B*64)+((((B*4)+63)//64)*64))\n"
           "  %8 = neg(%5) : f32[B]\n"
           "  %9 = exp(%7) : f32[B, 4]\n"
           "  out %8 keep\n"
           "  out %9 keep\n"
           "  kernel K0 ew_reduce root=%5\n"
           "  arena (((((B*16)+63)//64)*64)+((B*64)+((((B*4)+63)//64)*64)))\n");
}

/* xorshift: the fuzzer's mutations and poolmask's test values */
static uint64_t rng_state = 0x2545f4914f6cdd1dull;
static uint32_t rnd(void) {
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return (uint32_t)(rng_state >> 16);
}

/* ------------------------------------------------------------ poolmask */
#define POOL "kernel=[2, 2] stride=[2, 2] padding=[0, 0] dilation=[1, 1] ceil_mode=false"
static void test_poolmask(void) {
    /* relu's backward mask over the pooled values, before the pool backward */
    golden("poolmask: relu -> max_pool2d backward",
           "  in %0 host f32[2, 2, 4, 4]\n"
           "  in %1 host f32[2, 2, 2, 2]\n"
           "  in %2 const f64[] = 0.0\n"
           "  %3 = relu(%0) : f32[2, 2, 4, 4]\n"
           "  %4, %5 = max_pool2d(%3) " POOL " : f32[2, 2, 2, 2], i64[2, 2, 2, 2]\n"
           "  %6 = mul(%4, %1) : f32[2, 2, 2, 2]\n"
           "  %7 = max_pool2d_backward(%1, %5) input_size=[2, 2, 4, 4] : f32[2, 2, 4, 4]\n"
           "  %8 = gt(%3, %2) : bool[2, 2, 4, 4]\n"
           "  %9 = where(%8, %7, %2) : f32[2, 2, 4, 4]\n"
           "  out %6 keep\n"
           "  out %9 keep\n",
           "poolmask",
           "  in %0 host f32[2, 2, 4, 4]\n"
           "  in %1 host f32[2, 2, 2, 2]\n"
           "  in %2 const f64[] = 0.0\n"
           "  %3 = relu(%0) : f32[2, 2, 4, 4]\n"
           "  %4, %5 = max_pool2d(%3) " POOL " : f32[2, 2, 2, 2], i64[2, 2, 2, 2]\n"
           "  %8 = gt(%4, %2) : bool[2, 2, 2, 2]\n"
           "  %6 = mul(%4, %1) : f32[2, 2, 2, 2]\n"
           "  %7 = where(%8, %1, %2) : f32[2, 2, 2, 2]\n"
           "  %9 = max_pool2d_backward(%7, %5) input_size=[2, 2, 4, 4] : f32[2, 2, 4, 4]\n"
           "  out %6 keep\n"
           "  out %9 keep\n");
    /* each group has one reason to stay: where's 0 is -0.0; the mask reads
     * another tensor; the mask compares with a tensor; the pool backward's
     * output escapes; the mask has two readers; where's other value is 1 */
    const char *keep =
        "  in %0 host f32[2, 2, 4, 4]\n"
        "  in %1 host f32[2, 2, 2, 2]\n"
        "  in %2 const f64[] = 0.0\n"
        "  in %3 const f64[] = -0.0\n"
        "  in %4 host f32[2, 2, 4, 4]\n"
        "  in %5 const f64[] = 1.0\n"
        "  %6 = relu(%0) : f32[2, 2, 4, 4]\n"
        "  %7, %8 = max_pool2d(%6) " POOL " : f32[2, 2, 2, 2], i64[2, 2, 2, 2]\n"
        "  %9 = max_pool2d_backward(%1, %8) input_size=[2, 2, 4, 4] : f32[2, 2, 4, 4]\n"
        "  %10 = gt(%6, %2) : bool[2, 2, 4, 4]\n"
        "  %11 = where(%10, %9, %3) : f32[2, 2, 4, 4]\n"
        "  %12 = max_pool2d_backward(%1, %8) input_size=[2, 2, 4, 4] : f32[2, 2, 4, 4]\n"
        "  %13 = gt(%4, %2) : bool[2, 2, 4, 4]\n"
        "  %14 = where(%13, %12, %2) : f32[2, 2, 4, 4]\n"
        "  %15 = max_pool2d_backward(%1, %8) input_size=[2, 2, 4, 4] : f32[2, 2, 4, 4]\n"
        "  %16 = gt(%6, %4) : bool[2, 2, 4, 4]\n"
        "  %17 = where(%16, %15, %2) : f32[2, 2, 4, 4]\n"
        "  %18 = max_pool2d_backward(%1, %8) input_size=[2, 2, 4, 4] : f32[2, 2, 4, 4]\n"
        "  %19 = gt(%6, %2) : bool[2, 2, 4, 4]\n"
        "  %20 = where(%19, %18, %2) : f32[2, 2, 4, 4]\n"
        "  %21 = max_pool2d_backward(%1, %8) input_size=[2, 2, 4, 4] : f32[2, 2, 4, 4]\n"
        "  %22 = gt(%6, %2) : bool[2, 2, 4, 4]\n"
        "  %23 = where(%22, %21, %2) : f32[2, 2, 4, 4]\n"
        "  %24 = where(%22, %0, %2) : f32[2, 2, 4, 4]\n"
        "  %25 = max_pool2d_backward(%1, %8) input_size=[2, 2, 4, 4] : f32[2, 2, 4, 4]\n"
        "  %26 = gt(%6, %2) : bool[2, 2, 4, 4]\n"
        "  %27 = where(%26, %25, %5) : f32[2, 2, 4, 4]\n"
        "  out %11 keep\n"
        "  out %14 keep\n"
        "  out %17 keep\n"
        "  out %18 keep\n"
        "  out %20 keep\n"
        "  out %23 keep\n"
        "  out %24 keep\n"
        "  out %27 keep\n";
    golden("poolmask: what must stay", keep, "poolmask", keep);
}

/* Exactness on the values where reordering could show: ties, +-0.0, NaN
 * and negative values in the pooled input, +-0.0, NaN and inf in the
 * incoming gradient; overlapping windows, padding and ceil mode; relu or
 * none, the comparison either way round; f32 and f64.  The graph before
 * and after poolmask, op by op, must agree bitwise (any NaN equals any
 * NaN: which one an op returns follows operand order). */
static void test_poolmask_exact(void) {
    static const struct {
        int h, k, s, p, ceil;
    } geo[] = {{6, 2, 2, 0, 0}, {5, 3, 1, 1, 0}, {6, 3, 2, 1, 1}, {7, 2, 2, 0, 1}};
    static const struct {
        const char *mask; /* %3 is the pooled input, %2 the constant */
        int relu;
    } var[] = {{"gt(%3, %2)", 1}, {"lt(%2, %3)", 0}, {"ne(%3, %2)", 1}, {"ge(%3, %2)", 0}};
    const float xs[] = {-1.0f, -0.0f, 0.0f, 0.5f, 1.0f, NAN, 1.0f, -2.0f};
    const float gs[] = {1.0f, -2.0f, -0.0f, 0.0f, 3.0f, NAN, INFINITY, 0.25f};
    int runs = 0;
    for (size_t gi = 0; gi < sizeof geo / sizeof geo[0]; gi++)
        for (size_t vi = 0; vi < sizeof var / sizeof var[0]; vi++)
            for (int dt = 0; dt < 2; dt++) {
                int H = geo[gi].h, k = geo[gi].k, st = geo[gi].s, pd = geo[gi].p;
                int num = H + 2 * pd - k, O = (geo[gi].ceil ? (num + st - 1) / st : num / st) + 1;
                if (geo[gi].ceil && (O - 1) * st >= H + pd) O--;
                const char *ty = dt ? "f64" : "f32";
                char text[4096];
                snprintf(text, sizeof text,
                         "module optable=0000000000000000 graphs=1\n" HEAD
                         "  in %%0 host %s[2, 3, %d, %d]\n"
                         "  in %%1 host %s[2, 3, %d, %d]\n"
                         "  in %%2 const f64[] = 0.0\n"
                         "  %%3 = %s(%%0)%s : %s[2, 3, %d, %d]\n"
                         "  %%4, %%5 = max_pool2d(%%3) kernel=[%d, %d] stride=[%d, %d] padding=[%d, %d] "
                         "dilation=[1, 1] ceil_mode=%s : %s[2, 3, %d, %d], i64[2, 3, %d, %d]\n"
                         "  %%6 = max_pool2d_backward(%%1, %%5) input_size=[2, 3, %d, %d] : %s[2, 3, %d, %d]\n"
                         "  %%7 = %s : bool[2, 3, %d, %d]\n"
                         "  %%8 = where(%%7, %%6, %%2) : %s[2, 3, %d, %d]\n"
                         "  out %%4 keep\n  out %%5 keep\n  out %%8 keep\n}\n",
                         ty, H, H, ty, O, O, var[vi].relu ? "relu" : "cast", var[vi].relu ? "" : dt ? " dtype=f64" : " dtype=f32",
                         ty, H, H, k, k, st, st, pd, pd, geo[gi].ceil ? "true" : "false", ty, O, O, O, O, H, H, ty,
                         H, H, var[vi].mask, H, H, ty, H, H);
                jn_ir_module *m0 = NULL, *m1 = NULL;
                CHECK(jn_ir_parse(text, strlen(text), &m0) == JN_OK && jn_ir_parse(text, strlen(text), &m1) == JN_OK);
                if (!m0 || !m1) {
                    fprintf(stderr, "poolmask exact: %s\n%s", jn_errmsg(), text);
                    jn_ir_module_free(m0);
                    jn_ir_module_free(m1);
                    continue;
                }
                jn_ir_graph *g = m1->graphs[0];
                CHECK(jn_cg_run_pass(m1, g, "poolmask") == JN_OK && jn_ir_verify(g) == JN_OK);
                CHECK(g->nodes[3].op == JN_OP_where && g->nodes[4].op == JN_OP_max_pool2d_backward); /* applied */
                int64_t sv[1] = {0};
                for (int trial = 0; trial < 12; trial++) {
                    jn_tensor *in[2][3] = {{0}}, *out[2][3] = {{0}};
                    uint64_t seed = rng_state;
                    for (int side = 0; side < 2; side++) {
                        const jn_ir_module *mm = side ? m1 : m0;
                        rng_state = seed; /* the same values on both sides */
                        CHECK(jn_ex_make_inputs(mm->graphs[0], sv, 1, in[side]) == JN_OK);
                        for (int t = 0; t < 2; t++) {
                            jn_tensor *x = in[side][t];
                            const float *src = t ? gs : xs;
                            for (int64_t e = 0; e < jn_numel(x); e++) {
                                float v = src[rnd() % 8];
                                if (dt) ((double *)jn_data(x))[e] = v;
                                else ((float *)jn_data(x))[e] = v;
                            }
                        }
                        jn_ex_exec *xe = NULL;
                        jn_status s2 = jn_ex_new(mm, 0, NULL, JN_EX_EAGER, &xe);
                        if (s2 == JN_OK) s2 = jn_ex_run(xe, in[side], sv, out[side]);
                        CHECK(s2 == JN_OK);
                        if (s2) fprintf(stderr, "poolmask exact: %s\n", jn_errmsg());
                        jn_ex_free(xe);
                    }
                    for (int o = 0; o < 3; o++) {
                        int same = out[0][o] && out[1][o] && jt_same(out[0][o], out[1][o], 1, 0);
                        CHECK(same);
                        if (!same) fprintf(stderr, "poolmask exact: output %d differs (geometry %zu, %s, %s)\n", o, gi,
                                           var[vi].mask, ty);
                    }
                    for (int side = 0; side < 2; side++)
                        for (int t = 0; t < 3; t++) {
                            if (in[side][t]) jn_tensor_decref(in[side][t]);
                            if (out[side][t]) jn_tensor_decref(out[side][t]);
                        }
                    runs++;
                }
                jn_ir_module_free(m0);
                jn_ir_module_free(m1);
            }
    CHECK(runs == 4 * 4 * 2 * 12);
}

/* --------------------------------------------------------------- hoist */
#define SGD "lr=0.5 momentum=0.5 dampening=0 weight_decay=0 nesterov=false maximize=false first=true"
static void test_hoist(void) {
    /* the first update moves up to after the last reader of its parameter
     * (%7), the second is already right after its gradient */
    golden("hoist: updates right after their last input",
           "  in %0 state f32[4] bind=1\n"
           "  in %1 state f32[4] bind=2\n"
           "  in %2 state f32[4] bind=3\n"
           "  in %3 state f32[4] bind=4\n"
           "  in %4 host f32[4]\n"
           "  in %5 const f64[] = 0.5\n"
           "  %6 = mul(%4, %5) : f32[4]\n"
           "  %7 = mul(%0, %4) : f32[4]\n"
           "  %8 = exp(%7) : f32[4]\n"
           "  %9 = mul(%8, %2) : f32[4]\n"
           "  %10 = neg(%9) : f32[4]\n"
           "  %11, %12 = sgd_(%0, %1, %6) " SGD " : f32[4], f32[4]\n"
           "  %13, %14 = sgd_(%2, %3, %10) " SGD " : f32[4], f32[4]\n"
           "  %15 = exp(%10) : f32[4]\n"
           "  out %11 state=%0\n"
           "  out %12 state=%1\n"
           "  out %13 state=%2\n"
           "  out %14 state=%3\n"
           "  out %15 keep\n",
           "hoist",
           "  in %0 state f32[4] bind=1\n"
           "  in %1 state f32[4] bind=2\n"
           "  in %2 state f32[4] bind=3\n"
           "  in %3 state f32[4] bind=4\n"
           "  in %4 host f32[4]\n"
           "  in %5 const f64[] = 0.5\n"
           "  %6 = mul(%4, %5) : f32[4]\n"
           "  %7 = mul(%0, %4) : f32[4]\n"
           "  %11, %12 = sgd_(%0, %1, %6) " SGD " : f32[4], f32[4]\n"
           "  %8 = exp(%7) : f32[4]\n"
           "  %9 = mul(%8, %2) : f32[4]\n"
           "  %10 = neg(%9) : f32[4]\n"
           "  %13, %14 = sgd_(%2, %3, %10) " SGD " : f32[4], f32[4]\n"
           "  %15 = exp(%10) : f32[4]\n"
           "  out %11 state=%0\n"
           "  out %12 state=%1\n"
           "  out %13 state=%2\n"
           "  out %14 state=%3\n"
           "  out %15 keep\n");
    /* a reader inside a loop holds an update until the loop's end; one the
     * loop does not read moves before it (the loop's range shifts) */
    golden("hoist: across loops",
           "  sym T dim 1..3\n"
           "  sym i0 ivar 0..2\n"
           "  in %0 state f32[4] bind=1\n"
           "  in %1 state f32[4] bind=2\n"
           "  in %2 host f32[4]\n"
           "  in %3 state f32[4] bind=3\n"
           "  in %4 state f32[4] bind=4\n"
           "  %5 = exp(%2) : f32[4]\n"
           "  loop L0 trip=T ivar=i0 {\n"
           "    carry %6 = %2 -> %7 => %8\n"
           "    %7 = mul(%6, %0) : f32[4]\n"
           "  }\n"
           "  %9 = neg(%8) : f32[4]\n"
           "  %10 = exp(%9) : f32[4]\n"
           "  %11, %12 = sgd_(%0, %1, %5) " SGD " : f32[4], f32[4]\n"
           "  %13, %14 = sgd_(%3, %4, %5) " SGD " : f32[4], f32[4]\n"
           "  out %10 keep\n"
           "  out %11 state=%0\n"
           "  out %12 state=%1\n"
           "  out %13 state=%3\n"
           "  out %14 state=%4\n",
           "hoist",
           "  sym T dim 1..3\n"
           "  sym i0 ivar 0..2\n"
           "  in %0 state f32[4] bind=1\n"
           "  in %1 state f32[4] bind=2\n"
           "  in %2 host f32[4]\n"
           "  in %3 state f32[4] bind=3\n"
           "  in %4 state f32[4] bind=4\n"
           "  %5 = exp(%2) : f32[4]\n"
           "  %13, %14 = sgd_(%3, %4, %5) " SGD " : f32[4], f32[4]\n"
           "  loop L0 trip=T ivar=i0 {\n"
           "    carry %6 = %2 -> %7 => %8\n"
           "    %7 = mul(%6, %0) : f32[4]\n"
           "  }\n"
           "  %11, %12 = sgd_(%0, %1, %5) " SGD " : f32[4], f32[4]\n"
           "  %9 = neg(%8) : f32[4]\n"
           "  %10 = exp(%9) : f32[4]\n"
           "  out %10 keep\n"
           "  out %11 state=%0\n"
           "  out %12 state=%1\n"
           "  out %13 state=%3\n"
           "  out %14 state=%4\n");
    /* a read of the parameter through a view holds the update too */
    golden("hoist: readers through views",
           "  in %0 state f32[4, 4] bind=1\n"
           "  in %1 state f32[4, 4] bind=2\n"
           "  in %2 host f32[4, 4]\n"
           "  %3 = exp(%2) : f32[4, 4]\n"
           "  %4 = transpose(%0) dim0=0 dim1=1 : f32[4, 4]\n"
           "  %5 = neg(%3) : f32[4, 4]\n"
           "  %6 = mm(%5, %4) : f32[4, 4]\n"
           "  %7 = exp(%6) : f32[4, 4]\n"
           "  %8, %9 = sgd_(%0, %1, %3) " SGD " : f32[4, 4], f32[4, 4]\n"
           "  out %7 keep\n"
           "  out %8 state=%0\n"
           "  out %9 state=%1\n",
           "hoist",
           "  in %0 state f32[4, 4] bind=1\n"
           "  in %1 state f32[4, 4] bind=2\n"
           "  in %2 host f32[4, 4]\n"
           "  %3 = exp(%2) : f32[4, 4]\n"
           "  %4 = transpose(%0) dim0=0 dim1=1 : f32[4, 4]\n"
           "  %5 = neg(%3) : f32[4, 4]\n"
           "  %6 = mm(%5, %4) : f32[4, 4]\n"
           "  %8, %9 = sgd_(%0, %1, %3) " SGD " : f32[4, 4], f32[4, 4]\n"
           "  %7 = exp(%6) : f32[4, 4]\n"
           "  out %7 keep\n"
           "  out %8 state=%0\n"
           "  out %9 state=%1\n");
    /* stays: an update whose output a node reads, a reader of the
     * parameter after the update, a random in-place op */
    const char *keep =
        "  in %0 state f32[4] bind=1\n"
        "  in %1 state f32[4] bind=2\n"
        "  in %2 host f32[4]\n"
        "  in %3 state f32[4] bind=3\n"
        "  in %4 state f32[4] bind=4\n"
        "  %5 = exp(%2) : f32[4]\n"
        "  %6 = neg(%5) : f32[4]\n"
        "  %7, %8 = sgd_(%0, %1, %2) " SGD " : f32[4], f32[4]\n"
        "  %9 = mul(%7, %6) : f32[4]\n"
        "  %10, %11 = sgd_(%3, %4, %2) " SGD " : f32[4], f32[4]\n"
        "  %12 = mul(%3, %6) : f32[4]\n"
        "  %13 = uniform_(%2) low=0 high=1 seed=1 offset=0 : f32[4]\n"
        "  out %8 state=%1\n"
        "  out %9 keep\n"
        "  out %10 state=%3\n"
        "  out %11 state=%4\n"
        "  out %12 keep\n"
        "  out %13 keep\n";
    golden("hoist: what must stay", keep, "hoist", keep);
}

/* --------------------------------------------------------------- remat */
static void test_remat(void) {
    /* neg(%0) (64 KiB of a graph input) is read again 9 nodes later: a
     * copy right before that group of readers; the index has one group */
    const char *chain =
        "  %5 = exp(%4) : f32[16384]\n"
        "  %6 = exp(%5) : f32[16384]\n"
        "  %7 = exp(%6) : f32[16384]\n"
        "  %8 = exp(%7) : f32[16384]\n"
        "  %9 = exp(%8) : f32[16384]\n"
        "  %10 = exp(%9) : f32[16384]\n"
        "  %11 = exp(%10) : f32[16384]\n"
        "  %12 = exp(%11) : f32[16384]\n"
        "  %13 = exp(%12) : f32[16384]\n";
    char in[4096], want[4096];
    snprintf(in, sizeof in,
             "  in %%0 host f32[16384]\n"
             "  in %%1 host i64[4]\n"
             "  in %%2 host f32[8, 4096]\n"
             "  %%3 = index(%%2, %%1) mask=[1] : f32[4, 4096]\n"
             "  %%4 = neg(%%0) : f32[16384]\n"
             "%s"
             "  %%14 = mul(%%13, %%4) : f32[16384]\n"
             "  %%15 = add(%%14, %%4) alpha=1 : f32[16384]\n"
             "  %%16 = sum(%%3) dims=[] keepdim=false dtype=none : f32[]\n"
             "  %%17 = exp(%%16) : f32[]\n"
             "  out %%15 keep\n"
             "  out %%17 keep\n",
             chain);
    snprintf(want, sizeof want,
             "  in %%0 host f32[16384]\n"
             "  in %%1 host i64[4]\n"
             "  in %%2 host f32[8, 4096]\n"
             "  %%3 = index(%%2, %%1) mask=[1] : f32[4, 4096]\n"
             "  %%4 = neg(%%0) : f32[16384]\n"
             "%s"
             "  %%18 = neg(%%0) : f32[16384]\n"
             "  %%14 = mul(%%13, %%18) : f32[16384]\n"
             "  %%15 = add(%%14, %%18) alpha=1 : f32[16384]\n"
             "  %%16 = sum(%%3) dims=[] keepdim=false dtype=none : f32[]\n"
             "  %%17 = exp(%%16) : f32[]\n"
             "  out %%15 keep\n"
             "  out %%17 keep\n",
             chain);
    golden("remat: a value of graph inputs computed again before far readers", in, "remat", want);
    /* stays: under 64 KiB (%2), not of graph inputs only (%4), an output
     * (%5), readers 8 nodes apart (%6) */
    const char *keep =
        "  in %0 host f32[1024]\n"
        "  in %1 host f32[16384]\n"
        "  %2 = neg(%0) : f32[1024]\n"
        "  %3 = exp(%1) : f32[16384]\n"
        "  %4 = neg(%3) : f32[16384]\n"
        "  %5 = neg(%1) : f32[16384]\n"
        "  %6 = tanh(%1) : f32[16384]\n"
        "  %7 = exp(%6) : f32[16384]\n"
        "  %8 = exp(%2) : f32[1024]\n"
        "  %9 = exp(%4) : f32[16384]\n"
        "  %10 = exp(%5) : f32[16384]\n"
        "  %11 = exp(%7) : f32[16384]\n"
        "  %12 = exp(%11) : f32[16384]\n"
        "  %13 = exp(%12) : f32[16384]\n"
        "  %14 = exp(%13) : f32[16384]\n"
        "  %15 = mul(%14, %6) : f32[16384]\n"
        "  %16 = mul(%2, %8) : f32[1024]\n"
        "  %17 = mul(%9, %4) : f32[16384]\n"
        "  %18 = mul(%10, %5) : f32[16384]\n"
        "  out %5 keep\n"
        "  out %15 keep\n"
        "  out %16 keep\n"
        "  out %17 keep\n"
        "  out %18 keep\n";
    golden("remat: what must stay", keep, "remat", keep);
    /* the planned arena shrinks: neg(%0) is no longer exported from the
     * sum's kernel and live across the GEMMs; its copy fuses into the mul */
    char text[4096];
    size_t at = (size_t)snprintf(text, sizeof text,
                                 "module optable=0000000000000000 graphs=1\n" HEAD
                                 "  in %%0 host f32[128, 128]\n"
                                 "  in %%1 host f32[16, 16]\n"
                                 "  %%2 = neg(%%0) : f32[128, 128]\n"
                                 "  %%3 = sum(%%2) dims=[] keepdim=false dtype=none : f32[]\n"
                                 "  %%4 = mm(%%1, %%1) : f32[16, 16]\n");
    for (int i = 5; i < 13; i++) at += (size_t)snprintf(text + at, sizeof text - at, "  %%%d = mm(%%%d, %%1) : f32[16, 16]\n", i, i - 1);
    snprintf(text + at, sizeof text - at, "  %%13 = mul(%%2, %%3) : f32[128, 128]\n  out %%12 keep\n  out %%13 keep\n}\n");
    int64_t arena[2] = {-1, -1};
    for (int with = 0; with < 2; with++) {
        jn_ir_module *m = NULL, *m0 = NULL;
        CHECK(jn_ir_parse(text, strlen(text), &m) == JN_OK && jn_ir_parse(text, strlen(text), &m0) == JN_OK);
        if (!m || !m0) break;
        jn_cg_options o = {.skip = with ? "" : "remat", .verify_each = 1};
        CHECK(jn_cg_optimize(m, &o, NULL) == JN_OK);
        CHECK(jn_cg_eval_at_max(m->graphs[0], m->graphs[0]->arena, &arena[with]) == JN_OK);
        differential("remat: arena", m0, m, 0);
        jn_ir_module_free(m);
        jn_ir_module_free(m0);
    }
    printf("remat: arena %lld bytes without, %lld with\n", (long long)arena[0], (long long)arena[1]);
    CHECK(arena[1] > 0 && arena[1] < arena[0]);
}

/* ------------------------------------------------------- the pipeline */
static char *read_file(const char *path, size_t *len) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *b = malloc((size_t)n + 1);
    *len = b ? fread(b, 1, (size_t)n, f) : 0;
    if (b) b[*len] = 0;
    fclose(f);
    return b;
}

/* ------------------------------------------- differential interpretation */
/* Both sides run through the graph executor (exec/): the original
 * graph op by op (JN_EX_EAGER), the optimized one with its kernels
 * (member by member: no compiled code here) at their roots and its planned
 * values at their arena offsets, so a plan that overlaps live values, or a
 * kernel whose value is read before it runs, changes the outputs.  Every
 * symbol at the top of its range; inputs from jt_make_input.  The passes
 * before fuse change what is computed; the results must not change: the
 * outputs are compared element by element (NaN equals NaN, -0.0 equals 0.0:
 * x+0 may flip the sign). */
static int64_t *sym_max(const jn_ir_graph *g) {
    int64_t *v = malloc(((size_t)g->nsyms + 1) * sizeof(int64_t));
    for (int32_t s2 = 0; v && s2 < g->nsyms; s2++) v[s2] = g->syms[s2].hi;
    return v;
}

/* Outputs of graph gi of m in output order (new references), 1 on success. */
static int interpret(const jn_ir_module *m, int32_t gi, jn_tensor **outs, int use_plan) {
    int64_t *sv = sym_max(m->graphs[gi]);
    int ok = sv && jt_run_graph(m, gi, NULL, use_plan ? 0 : JN_EX_EAGER, sv, 12345, outs, NULL) == JN_OK;
    free(sv);
    return ok;
}

/* Graph k of m0 (original) and of m1 (after the passes) compute the same outputs. */
static void differential(const char *path, const jn_ir_module *m0, const jn_ir_module *m1, int32_t k) {
    const jn_ir_graph *g0 = m0->graphs[k], *g1 = m1->graphs[k];
    jn_tensor **o0 = calloc((size_t)g0->noutputs + 1, sizeof *o0), **o1 = calloc((size_t)g1->noutputs + 1, sizeof *o1);
    if (!interpret(m0, k, o0, 0)) {
        diff_skipped++; /* an op the zero/random inputs make fail: nothing to compare */
        if (getenv("CG_DEBUG")) fprintf(stderr, "%s graph %s not runnable: %s\n", path, g0->name, jn_errmsg());
    } else {
        int ok = g0->noutputs == g1->noutputs && interpret(m1, k, o1, 1);
        CHECK(ok);
        if (!ok) fprintf(stderr, "%s graph %s: the optimized graph does not run (%s)\n", path, g1->name, jn_errmsg());
        for (int32_t i = 0; ok && i < g0->noutputs; i++) {
            int same = jt_same(o0[i], o1[i], 0, 0);
            CHECK(same);
            if (!same) fprintf(stderr, "%s graph %s: output %d differs after the passes\n", path, g0->name, i);
        }
        diff_compared++;
    }
    for (int32_t i = 0; i < g0->noutputs; i++)
        if (o0[i]) jn_tensor_decref(o0[i]);
    for (int32_t i = 0; i < g1->noutputs; i++)
        if (o1[i]) jn_tensor_decref(o1[i]);
    free(o0);
    free(o1);
}

static int64_t tot_before, tot_after, tot_kernels, tot_arena, tot_naive;
static int nfiles;

/* Mutants of an optimized module (the extensions included) must parse to
 * an error or to a module that verifies and reads back identically. */
static int fuzz_accepted, fuzz_tried;

static void fuzz_result(jn_status st, jn_ir_module *m) {
    fuzz_tried++;
    if (st != JN_OK) {
        CHECK(m == NULL && jn_errmsg()[0]);
        return;
    }
    fuzz_accepted++;
    jn_status v = jn_ir_verify_module(m);
    CHECK(v == JN_OK);
    if (v) fprintf(stderr, "accepted but does not verify: %s\n", jn_errmsg());
    check_roundtrips(m);
    /* the passes take any valid module, annotated or not */
    jn_cg_options o = {.verify_each = 1};
    st = jn_cg_optimize(m, &o, NULL);
    CHECK(st == JN_OK);
    if (st) fprintf(stderr, "pipeline on a mutant: %s\n", jn_errmsg());
    for (int32_t k = 0; k < m->ngraphs; k++) {
        st = jn_cg_check_kernels(m->graphs[k]);
        CHECK(st == JN_OK);
        if (st) fprintf(stderr, "mutant kernels: %s\n", jn_errmsg());
    }
    check_roundtrips(m);
    jn_ir_module_free(m);
}

static void fuzz_module(const jn_ir_module *m) {
    int64_t nodes = 0;
    for (int32_t k = 0; k < m->ngraphs; k++) nodes += m->graphs[k]->nnodes;
    int iters = nodes > 1000 ? 40 : 400; /* every accepted mutant runs the whole pipeline */
    char *t = print_module(m);
    size_t n = strlen(t);
    const char *words[] = {"kernel=K0", "kernel=K9", " mem=0", " mem=(B*64)", " alias=%0", " alias=%3", "ew", "gemm",
                           "arena 64", "impl=lib", "K1", "root=%2", "-1", "%1", "\n"};
    for (int i = 0; i < iters; i++) {
        char *u = malloc(n + 64);
        memcpy(u, t, n + 1);
        size_t at = rnd() % n, un = n;
        switch (rnd() % 3) {
        case 0: /* a byte */
            u[at] = (char)(" %=K0123456789[]-,()\nemk"[rnd() % 25]);
            break;
        case 1: { /* insert a word of the extensions */
            const char *w = words[rnd() % (sizeof words / sizeof *words)];
            size_t wl = strlen(w);
            memmove(u + at + wl, u + at, n - at + 1);
            memcpy(u + at, w, wl);
            un += wl;
            break;
        }
        default: { /* drop a line */
            char *a = u + at, *e = strchr(a, '\n');
            while (a > u && a[-1] != '\n') a--;
            if (e) memmove(a, e + 1, strlen(e + 1) + 1);
            un = strlen(u);
        }
        }
        jn_ir_module *m2 = NULL;
        jn_status st = jn_ir_parse(u, un, &m2); /* before the call: argument order is unspecified */
        fuzz_result(st, m2);
        free(u);
    }
    void *b = NULL;
    size_t bn = 0;
    CHECK(jn_ir_serialize(m, &b, &bn) == JN_OK);
    for (int i = 0; i < iters && bn > 16; i++) {
        uint8_t *c = malloc(bn);
        memcpy(c, b, bn);
        c[4 + rnd() % (bn - 12)] ^= (uint8_t)(1u << (rnd() % 8));
        uint64_t h = 0xcbf29ce484222325ull; /* FNV-1a 64 over all but the checksum, as serial.c writes it */
        for (size_t j = 0; j < bn - 8; j++) h = (h ^ c[j]) * 0x100000001b3ull;
        for (int j = 0; j < 8; j++) c[bn - 8 + j] = (uint8_t)(h >> (8 * j));
        jn_ir_module *m2 = NULL;
        jn_status st = jn_ir_deserialize(c, bn, &m2);
        fuzz_result(st, m2);
        free(c);
    }
    free(b);
    free(t);
}

static void pipeline_file(const char *path) {
    size_t len;
    char *text = read_file(path, &len);
    CHECK(text != NULL);
    if (!text) return;
    jn_ir_module *m = NULL;
    jn_status st = jn_ir_parse(text, len, &m);
    CHECK(st == JN_OK);
    if (st) {
        fprintf(stderr, "%s: %s\n", path, jn_errmsg());
        free(text);
        return;
    }
    nfiles++;
    jn_ir_module *orig = NULL;
    CHECK(jn_ir_parse(text, len, &orig) == JN_OK);
    char *dump = NULL;
    size_t dn = 0;
    FILE *df = open_memstream(&dump, &dn);
    jn_cg_options o = {.dump = df, .dump_passes = "all", .verify_each = 1};
    jn_cg_stats s;
    st = jn_cg_optimize(m, &o, &s);
    fclose(df);
    CHECK(st == JN_OK);
    if (st) fprintf(stderr, "%s: %s\n", path, jn_errmsg());
    CHECK(s.npasses == jn_cg_npasses());
    for (int i = 0; i < s.npasses; i++) {
        /* remat's copies and wt's transposed weights are the point; unstack's views
         * replace collects dce2 drops */
        int grows = !strcmp(s.pass[i].pass, "remat") || !strcmp(s.pass[i].pass, "unstack") ||
                    !strcmp(s.pass[i].pass, "wt");
        CHECK(grows || s.pass[i].nodes_after <= s.pass[i].nodes_before);
        if (!grows && s.pass[i].nodes_after > s.pass[i].nodes_before)
            fprintf(stderr, "%s: pass %s grew the graphs\n", path, s.pass[i].pass);
        char h[64];
        snprintf(h, sizeof h, "# after %s (graph ", s.pass[i].pass);
        CHECK(m->ngraphs == 0 || strstr(dump, h) != NULL);
    }
    const jn_cg_pass_stats *last = &s.pass[s.npasses - 1];
    CHECK(last->arena_bytes <= last->naive_bytes);
    for (int32_t k = 0; k < m->ngraphs; k++) {
        const jn_ir_graph *g = m->graphs[k];
        int64_t a = -1, nv = -1;
        CHECK(g->arena != -1);
        CHECK(jn_cg_eval_at_max(g, g->arena, &a) == JN_OK && jn_cg_naive_bytes(g, &nv) == JN_OK && a <= nv);
        st = jn_cg_check_kernels(g);
        CHECK(st == JN_OK);
        if (st) fprintf(stderr, "%s: %s\n", path, jn_errmsg());
        for (int32_t n = 0; n < g->nnodes; n++) /* every kernel member's kernel has an implementation */
            CHECK(g->nodes[n].kernel < 0 || g->kernels[g->nodes[n].kernel].impl != JN_IR_IMPL_NONE);
    }
    printf("  %-28s nodes %4lld -> %4lld, kernels %3lld, arena %8lld of naive %8lld bytes  %s\n",
           strrchr(path, '/') + 1, (long long)s.pass[0].nodes_before, (long long)last->nodes_after,
           (long long)last->kernels, (long long)last->arena_bytes, (long long)last->naive_bytes, last->arena_text);
    tot_before += s.pass[0].nodes_before;
    tot_after += last->nodes_after;
    tot_kernels += last->kernels;
    tot_arena += last->arena_bytes;
    tot_naive += last->naive_bytes;
    check_roundtrips(m);
    for (int32_t k = 0; orig && k < m->ngraphs; k++) differential(path, orig, m, k);
    jn_ir_module_free(orig);
    if (m->ngraphs) fuzz_module(m);
    /* a second run over the optimized module changes nothing */
    char *t1 = print_module(m);
    jn_cg_options o2 = {.verify_each = 1};
    CHECK(jn_cg_optimize(m, &o2, NULL) == JN_OK);
    char *t2 = print_module(m);
    CHECK(!strcmp(t1, t2));
    if (strcmp(t1, t2)) fprintf(stderr, "%s: a second pipeline run changed the module\n", path);
    free(t1);
    free(t2);
    free(dump);
    jn_ir_module_free(m);
    free(text);
}

static void pipeline_dir(const char *dir) {
    DIR *d = opendir(dir);
    if (!d) return;
    struct dirent *e;
    char *names[256];
    int n = 0;
    while ((e = readdir(d)) && n < 256) {
        size_t l = strlen(e->d_name);
        if (l > 3 && !strcmp(e->d_name + l - 3, ".ir")) names[n++] = strdup(e->d_name);
    }
    closedir(d);
    for (int i = 0; i < n; i++) { /* sorted: stable output */
        for (int j = i + 1; j < n; j++)
            if (strcmp(names[j], names[i]) < 0) {
                char *t = names[i];
                names[i] = names[j];
                names[j] = t;
            }
        char path[1024];
        snprintf(path, sizeof path, "%s/%s", dir, names[i]);
        pipeline_file(path);
        free(names[i]);
    }
}

static void test_pipeline(void) {
    /* the source tree from this file's path: <root>/tests/c/test_codegen.c */
    char root[1024];
    snprintf(root, sizeof root, "%s", __FILE__);
    char *t = strstr(root, "tests/c/test_codegen.c");
    if (!t) {
        fprintf(stderr, "cannot locate the source tree from %s; golden graphs skipped\n", __FILE__);
        return;
    }
    *t = 0;
    char dir[1100];
    printf("pipeline over the golden graphs:\n");
    snprintf(dir, sizeof dir, "%stests/golden", root);
    pipeline_dir(dir);
    snprintf(dir, sizeof dir, "%stests/c/data", root);
    pipeline_dir(dir);
    CHECK(nfiles >= 8);
    printf("  differential: %d graphs give the same outputs before and after the passes, %d not runnable here\n",
           diff_compared, diff_skipped);
    CHECK(diff_compared >= 10);
    printf("  fuzz: %d of %d mutants of the optimized modules accepted (and verified, read back)\n", fuzz_accepted,
           fuzz_tried);
    CHECK(fuzz_accepted > 0 && fuzz_accepted < fuzz_tried);
    printf("  total: %d files, nodes %lld -> %lld, %lld kernels, arena %lld of naive %lld bytes\n", nfiles,
           (long long)tot_before, (long long)tot_after, (long long)tot_kernels, (long long)tot_arena, (long long)tot_naive);
}

static void test_options(void) {
    jn_cg_options o;
    setenv("JANUS_DUMP_IR", "fuse,plan", 1);
    jn_cg_options_from_env(&o);
    CHECK(o.dump == stderr && o.dump_passes && !strcmp(o.dump_passes, "fuse,plan"));
    unsetenv("JANUS_DUMP_IR");
    jn_cg_options_from_env(&o);
    CHECK(o.dump == NULL && o.skip == NULL);
    setenv("JANUS_SKIP_PASSES", "unstack,remat", 1); /* the same graphs without some passes, to compare */
    jn_cg_options_from_env(&o);
    CHECK(o.skip && !strcmp(o.skip, "unstack,remat"));
    unsetenv("JANUS_SKIP_PASSES");
    CHECK(jn_cg_npasses() == 15 && !strcmp(jn_cg_passes[0].name, "verify") && jn_cg_pass_find("fuse") &&
          !jn_cg_pass_find("nope"));
    /* unknown names are errors naming them; skipped passes do nothing */
    const char *text = "module optable=0000000000000000 graphs=1\n" HEAD
                       "  in %0 host f32[4]\n"
                       "  %1 = exp(%0) : f32[4]\n"
                       "  %2 = neg(%0) : f32[4]\n"
                       "  out %2 keep\n"
                       "}\n";
    jn_ir_module *m = NULL;
    CHECK(jn_ir_parse(text, strlen(text), &m) == JN_OK);
    jn_cg_options bad = {.skip = "dce,fusion"};
    CHECK(jn_cg_optimize(m, &bad, NULL) == JN_ERR_VALUE && strstr(jn_errmsg(), "'fusion'") &&
          strstr(jn_errmsg(), "dce2") && strstr(jn_errmsg(), "JANUS_SKIP_PASSES"));
    char *dump = NULL;
    size_t dn = 0;
    FILE *df = open_memstream(&dump, &dn);
    jn_cg_options badd = {.dump = df, .dump_passes = "all,plna"};
    CHECK(jn_cg_optimize(m, &badd, NULL) == JN_ERR_VALUE && strstr(jn_errmsg(), "JANUS_DUMP_IR") &&
          strstr(jn_errmsg(), "'plna'"));
    jn_cg_options skip = {.skip = "dce,dce2", .dump = df, .dump_passes = "dce2, select"};
    jn_cg_stats s;
    CHECK(jn_cg_optimize(m, &skip, &s) == JN_OK);
    fclose(df);
    CHECK(m->graphs[0]->nnodes == 2); /* the dead exp stays */
    CHECK(strstr(dump, "# after dce2 (skipped) (graph g)\n") && strstr(dump, "# after select (graph g)\n") &&
          !strstr(dump, "# after fuse"));
    int ip = (int)(jn_cg_pass_find("plan") - jn_cg_passes);
    CHECK(s.pass[ip].arena_bytes == 64 && s.pass[ip].naive_bytes == 64 && !strcmp(s.pass[ip].arena_text, "g=64"));
    CHECK(jn_cg_run_pass(m, m->graphs[0], "dce") == JN_OK && m->graphs[0]->nnodes == 1);
    CHECK(jn_cg_run_pass(m, m->graphs[0], "nope") == JN_ERR_VALUE);
    free(dump);
    jn_ir_module_free(m);
}

int main(void) {
    test_ir_extensions();
    test_dce();
    test_cse();
    test_fold();
    test_simplify();
    test_unstack();
    test_fuse();
    test_select();
    test_kernel_io();
    test_fuse_symbolic();
    test_dim_ge();
    test_plan();
    test_poolmask();
    test_hoist();
    test_remat();
    printf("golden tests: %d graphs give the same outputs before and after their passes, %d not runnable here\n",
           diff_compared, diff_skipped);
    CHECK(diff_compared >= 15);
    diff_compared = diff_skipped = 0;
    test_options();
    test_poolmask_exact();
    test_pipeline();
    JT_DONE();
}
