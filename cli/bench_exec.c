/* bench_exec.c -- `janus bench-exec run.db` (hidden; benchmarks/bench_exec.py
 * drives it): times one graph of the store's bundle through the graph
 * executor (exec/) two ways in one process, interleaved run by run:
 * optimized (its arena, its compiled kernels from the bundle's "cpu"
 * object, or its kernels member by member when the bundle has none) and
 * op by op (JN_EX_EAGER: every node through its eager kernel, every
 * value its own buffer, freed after its last use), and prints the medians,
 * their ratio, the arena bytes and the op-by-op peak bytes as one JSON
 * object.  Inputs are synthetic (jn_ex_make_inputs at the top of each
 * symbol's recorded range): timing does not depend on the values.  The
 * graph is the training step: among the graphs that write state (an
 * optimizer update), the one with the most recorded support, ties to the
 * larger; --graph NAME picks another.  --check runs every
 * graph both ways on the same synthetic inputs and compares the outputs
 * and state writes (tests/python/test_exec_examples.py).
 *
 * --reference FILE names the graphs as recorded, before the codegen passes
 * (`janus optimize --ir-out FILE`): the op-by-op side then runs the
 * recorded graph of the same name.  Passes that reorder nodes for memory
 * (poolmask, hoist) change the op-by-op peak of the optimized graph too,
 * so the eager peak an arena is measured against is the recorded graph's
 * (reported as reference_peak_bytes; arena_ratio uses it), and --check
 * then compares the whole pipeline with the graph as recorded.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "jn_cli.h"
#include "jn_runtime.h"

#include "jn_bundle.h"
#include "jn_cg.h"
#include "jn_exec.h"

static double now(int cpu) {
    struct timespec ts;
    clock_gettime(cpu ? CLOCK_PROCESS_CPUTIME_ID : CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static double median(double *v, int n) {
    qsort(v, (size_t)n, sizeof *v, cmp_double);
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

static const char bench_usage[] =
    "usage: janus bench-exec [--graph NAME] [--repeats N] [--threads N] [--clock wall|cpu] [--reference FILE]\n"
    "                        [--optimized-only] run.db\n"
    "       janus bench-exec --check [--reference FILE] run.db   (every graph: optimized vs op by op outputs)\n"
    "  --reference FILE  the graphs as recorded (janus optimize --ir-out FILE): op by op runs those\n"
    "  --optimized-only  time the optimized graph alone (for a profiler; eager_s is 0)\n";

/* The graph of ref named like g whose inputs (kind, dtype, rank) are the
 * first of g's (fold appends the constants it makes; a pass that
 * specialises on a number makes its scalar input a const), so the same
 * synthetic inputs feed both; -1 with the error set. */
static int32_t ref_graph(const jn_ir_module *ref, const char *file, const jn_ir_graph *g) {
    for (int32_t k = 0; k < ref->ngraphs; k++) {
        const jn_ir_graph *r = ref->graphs[k];
        if (strcmp(r->name, g->name)) continue;
        int same = r->ninputs <= g->ninputs && r->nsyms == g->nsyms && r->noutputs == g->noutputs;
        for (int32_t i = 0; same && i < r->ninputs; i++) {
            const jn_ir_value *a = &r->values[r->inputs[i].value], *b = &g->values[g->inputs[i].value];
            jn_ir_input_kind rk = r->inputs[i].kind, gk = g->inputs[i].kind;
            same = (rk == gk || (rk == JN_IR_IN_SCALAR && gk == JN_IR_IN_CONST)) && a->dtype == b->dtype &&
                   a->ndim == b->ndim;
        }
        if (!same) break;
        return k;
    }
    jn_error(JN_ERR_VALUE, "reference %s has no graph %s with the same inputs; write it from the same store with "
             "janus optimize --ir-out FILE", file, g->name);
    return -1;
}

/* Reads the recorded graphs (janus optimize --ir-out) from file. */
static jn_status load_ref(const char *file, jn_ir_module **out) {
    *out = NULL;
    FILE *f = fopen(file, "rb");
    if (!f) return jn_error(JN_ERR_IO, "cannot open reference %s (%s); write it with janus optimize --ir-out FILE",
                            file, strerror(errno));
    char *buf = NULL;
    size_t len = 0, cap = 0, n;
    jn_status s = JN_OK;
    do {
        if (len == cap) {
            char *nb = realloc(buf, cap = cap ? 2 * cap : 1 << 16);
            if (!nb) {
                s = jn_error(JN_ERR_NOMEM, "out of memory reading reference %s", file);
                break;
            }
            buf = nb;
        }
        n = fread(buf + len, 1, cap - len, f);
        len += n;
    } while (n > 0);
    fclose(f);
    if (s == JN_OK && (s = jn_ir_deserialize(buf, len, out)) != JN_OK) {
        char why[512]; /* jn_errmsg's buffer is where jn_error writes */
        snprintf(why, sizeof why, "%s", jn_errmsg());
        s = jn_error(s, "reference %s: %s; write it with janus optimize --ir-out FILE", file, why);
    }
    free(buf);
    return s;
}

/* Compares a and b element by element: *bit stays 1 while they are
 * bitwise equal (any two NaNs equal), *rel grows to the largest relative
 * difference (absolute below 1). */
static void compare(const jn_tensor *a, const jn_tensor *b, int *bit, double *rel) {
    if (a->dtype != b->dtype || !jn_same_shape(a->ndim, a->shape, b->ndim, b->shape)) {
        *bit = 0;
        *rel = 1e300;
        return;
    }
    jn_tensor *ca = jn_contiguous((jn_tensor *)a), *cb = jn_contiguous((jn_tensor *)b);
    int64_t n = ca && cb ? jn_numel(ca) : 0;
    size_t es = jn_dtype_size[a->dtype];
    for (int64_t k = 0; k < n; k++) {
        const char *pa = jn_data(ca) + k * (int64_t)es, *pb = jn_data(cb) + k * (int64_t)es;
        double x = jn_load_f64(pa, a->dtype), y = jn_load_f64(pb, b->dtype);
        if (x != x && y != y) continue;
        if (memcmp(pa, pb, es)) *bit = 0;
        double d = fabs(x - y), m = fabs(x) > fabs(y) ? fabs(x) : fabs(y);
        if (x != x || y != y) d = 1e300;
        if (d > 0 && d / (m > 1 ? m : 1) > *rel) *rel = d / (m > 1 ? m : 1);
    }
    if (ca) jn_tensor_decref(ca);
    if (cb) jn_tensor_decref(cb);
}

/* Every graph of m on synthetic inputs, optimized (lib) vs op by op; one
 * JSON object; exit 1 when an output differs by more than 1e-4 relative
 * (compiled reductions sum in another order than eager) or a graph that
 * runs op by op fails optimized. */
static int check_all(const jn_ir_module *m, const jn_ex_lib *lib, const jn_ir_module *ref, const char *rfile) {
    int graphs = 0, checked = 0, skipped = 0, outputs = 0, bitwise = 0, bad = 0;
    double worst = 0;
    for (int32_t gi = 0; gi < m->ngraphs; gi++) {
        const jn_ir_graph *g = m->graphs[gi];
        graphs++;
        size_t ni = (size_t)g->ninputs + 1, no = (size_t)g->noutputs + 1;
        int64_t *syms = calloc((size_t)g->nsyms + 1, sizeof *syms);
        jn_tensor **ia = calloc(ni, sizeof *ia), **ib = calloc(ni, sizeof *ib);
        jn_tensor **oa = calloc(no, sizeof *oa), **ob = calloc(no, sizeof *ob);
        jn_ex_exec *xe = NULL, *xo = NULL;
        int done = 0;
        int32_t ri = ref ? ref_graph(ref, rfile, g) : gi;
        if (ri < 0) {
            fprintf(stderr, "janus bench-exec: %s\n", jn_errmsg());
            bad++;
        }
        if (ri >= 0 && syms && ia && ib && oa && ob &&
            jn_ex_new(ref ? ref : m, ri, NULL, JN_EX_EAGER, &xe) == JN_OK &&
            jn_ex_new(m, gi, lib, 0, &xo) == JN_OK)
            for (int p = 0; p < 2 && !done; p++) {
                for (int32_t s = 0; s < g->nsyms; s++) syms[s] = p == 0 ? g->syms[s].hi : g->syms[s].lo;
                if (jn_ex_make_inputs(g, syms, 7, ia) != JN_OK || jn_ex_make_inputs(g, syms, 7, ib) != JN_OK)
                    break;
                int nk = 0;
                for (int32_t i = 0; i < g->noutputs; i++) nk += g->outputs[i].kind == JN_IR_OUT_KEEP;
                if (jn_ex_run(xe, ia, syms, oa) == JN_OK) {
                    done = 1;
                    checked++;
                    if (jn_ex_run(xo, ib, syms, ob) != JN_OK) {
                        fprintf(stderr, "janus bench-exec: graph %s runs op by op but not optimized: %s\n", g->name,
                                jn_errmsg());
                        bad++;
                    } else {
                        for (int32_t i = 0, k = 0; i < g->noutputs; i++) {
                            const jn_ir_output *o = &g->outputs[i];
                            int bit = 1;
                            double rel = 0;
                            if (o->kind == JN_IR_OUT_KEEP) compare(oa[k], ob[k], &bit, &rel), k++;
                            else compare(ia[o->state], ib[o->state], &bit, &rel);
                            outputs++;
                            bitwise += bit;
                            if (rel > worst) worst = rel;
                            if (rel > 1e-4) {
                                fprintf(stderr, "janus bench-exec: graph %s output %d (%%%d) differs optimized vs op "
                                        "by op (relative %.3g)\n", g->name, i, o->value, rel);
                                bad++;
                            }
                        }
                        for (int32_t k = 0; k < nk; k++) jn_tensor_decref(ob[k]);
                    }
                    for (int32_t k = 0; k < nk; k++) jn_tensor_decref(oa[k]);
                }
                else if (p == 1) /* synthetic inputs can break what the recorded ones kept (index ranges) */
                    fprintf(stderr, "janus bench-exec: graph %s skipped: it does not run op by op on synthetic "
                            "inputs: %s\n", g->name, jn_errmsg());
                for (int32_t i = 0; i < g->ninputs; i++) {
                    if (ia[i]) jn_tensor_decref(ia[i]), ia[i] = NULL;
                    if (ib[i]) jn_tensor_decref(ib[i]), ib[i] = NULL;
                }
            }
        skipped += !done;
        jn_ex_free(xe);
        jn_ex_free(xo);
        free(syms);
        free(ia);
        free(ib);
        free(oa);
        free(ob);
    }
    jn_cli_json j;
    jn_cli_json_init(&j, stdout);
    jn_cli_json_obj(&j);
    jn_cli_json_key(&j, "graphs"), jn_cli_json_int(&j, graphs);
    jn_cli_json_key(&j, "checked"), jn_cli_json_int(&j, checked);
    jn_cli_json_key(&j, "skipped"), jn_cli_json_int(&j, skipped);
    jn_cli_json_key(&j, "compiled"), jn_cli_json_int(&j, lib != NULL);
    jn_cli_json_key(&j, "reference"), jn_cli_json_int(&j, ref != NULL);
    jn_cli_json_key(&j, "outputs"), jn_cli_json_int(&j, outputs);
    jn_cli_json_key(&j, "bitwise"), jn_cli_json_int(&j, bitwise);
    jn_cli_json_key(&j, "max_rel"), jn_cli_json_num(&j, worst);
    jn_cli_json_key(&j, "mismatches"), jn_cli_json_int(&j, bad);
    jn_cli_json_end(&j, '}');
    putchar('\n');
    return bad ? 1 : 0;
}

int jn_cli_bench_exec(int argc, char **argv) {
    const char *path = NULL, *gname = NULL, *rfile = NULL;
    int repeats = 20, threads = 0, cpu = 0, check = 0, only_opt = 0;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--graph") && i + 1 < argc) gname = argv[++i];
        else if (!strcmp(argv[i], "--repeats") && i + 1 < argc) repeats = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--threads") && i + 1 < argc) threads = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--clock") && i + 1 < argc) cpu = !strcmp(argv[++i], "cpu");
        else if (!strcmp(argv[i], "--check")) check = 1;
        else if (!strcmp(argv[i], "--optimized-only")) only_opt = 1;
        else if (!strcmp(argv[i], "--reference") && i + 1 < argc) rfile = argv[++i];
        else if (argv[i][0] != '-' && !path) path = argv[i];
        else {
            fputs(bench_usage, stderr);
            return 2;
        }
    }
    if (!path || repeats < 1) {
        fputs(bench_usage, stderr);
        return 2;
    }
    if (threads > 0) jn_set_num_threads(threads);
    jn_db *db = NULL;
    jn_cg_bundle *b = NULL;
    jn_ex_lib *lib = NULL;
    jn_ex_exec *xo = NULL, *xe = NULL, *xr = NULL;
    jn_ir_module *ref = NULL;
    jn_tensor **in = NULL, **outs = NULL;
    int64_t *syms = NULL;
    double *to = NULL, *te = NULL;
    int rc = 1;
    int32_t nin = 0;
    jn_cg_bundle_expect e = {.db_path = path};
    if (jn_db_open(path, JN_DB_READONLY, &db) != JN_OK || jn_cg_bundle_open(db, &e, &b) != JN_OK) {
        fprintf(stderr, "janus bench-exec: %s: %s\n", path, jn_errmsg());
        goto done;
    }
    const jn_ir_module *m = b->module;
    const jn_cg_bundle_section *so = jn_cg_bundle_section_find(b, JN_CG_SEC_SO);
    uint64_t h = 0;
    if (so && (jn_cg_module_hash(m, &h) != JN_OK || jn_ex_lib_open(so->data, so->len, h, path, &lib) != JN_OK)) {
        fprintf(stderr, "janus bench-exec: %s\n", jn_errmsg());
        goto done;
    }
    if (rfile && load_ref(rfile, &ref) != JN_OK) {
        fprintf(stderr, "janus bench-exec: %s\n", jn_errmsg());
        goto done;
    }
    if (check) {
        rc = check_all(m, lib, ref, rfile);
        goto done;
    }
    /* the training step: writes state (an optimizer update), most support, then most nodes */
    int32_t gi = -1, gstate = 0;
    for (int32_t k = 0; k < m->ngraphs; k++) {
        const jn_ir_graph *g = m->graphs[k];
        int st = 0;
        for (int32_t i = 0; i < g->noutputs; i++) st |= g->outputs[i].kind == JN_IR_OUT_STATE;
        int better = gi < 0 || st > gstate ||
                     (st == gstate && (g->support > m->graphs[gi]->support ||
                                       (g->support == m->graphs[gi]->support && g->nnodes > m->graphs[gi]->nnodes)));
        if (gname ? !strcmp(g->name, gname) : better) gi = k, gstate = st;
    }
    if (gi < 0) {
        fprintf(stderr, "janus bench-exec: %s has no graph %s\n", path, gname ? gname : "(the bundle is empty)");
        goto done;
    }
    const jn_ir_graph *g = m->graphs[gi];
    syms = calloc((size_t)g->nsyms + 1, sizeof *syms);
    in = calloc((size_t)g->ninputs + 1, sizeof *in);
    nin = g->ninputs;
    outs = calloc((size_t)g->noutputs + 1, sizeof *outs);
    to = calloc((size_t)repeats, sizeof *to);
    te = calloc((size_t)repeats, sizeof *te);
    if (!syms || !in || !outs || !to || !te) goto done;
    int32_t ri = ref ? ref_graph(ref, rfile, g) : -1;
    if ((ref && ri < 0) || jn_ex_new(m, gi, lib, 0, &xo) != JN_OK ||
        jn_ex_new(m, gi, NULL, JN_EX_EAGER, &xe) != JN_OK ||
        (ref && jn_ex_new(ref, ri, NULL, JN_EX_EAGER, &xr) != JN_OK)) {
        fprintf(stderr, "janus bench-exec: %s\n", jn_errmsg());
        goto done;
    }
    /* symbols at the top of their range; a scalar input tied to a symbol
     * (arange(T) with T fed as a number) holds its recorded value, so fall
     * back to the bottom, where that value was seen */
    const char *point = NULL;
    for (int p = 0; p < 2 && !point; p++) {
        for (int32_t s = 0; s < g->nsyms; s++) syms[s] = p == 0 ? g->syms[s].hi : g->syms[s].lo;
        for (int32_t i = 0; i < nin; i++)
            if (in[i]) jn_tensor_decref(in[i]), in[i] = NULL;
        if (jn_ex_make_inputs(g, syms, 1, in) != JN_OK) {
            fprintf(stderr, "janus bench-exec: %s\n", jn_errmsg());
            goto done;
        }
        if (jn_ex_run(xe, in, syms, outs) == JN_OK) {
            point = p == 0 ? "hi" : "lo";
            for (int32_t i = 0, k = 0; i < g->noutputs; i++)
                if (g->outputs[i].kind == JN_IR_OUT_KEEP) jn_tensor_decref(outs[k++]);
        } else if (p == 1) {
            fprintf(stderr, "janus bench-exec: graph %s does not run on synthetic inputs: %s\n", g->name, jn_errmsg());
            goto done;
        }
    }
    jn_ex_stats so_st = {0}, se_st = {0};
    for (int r = -2; r < repeats; r++) { /* two warm-up rounds */
        for (int which = 0; which < 2; which++) {
            jn_ex_exec *x = (r + which) % 2 ? xe : xo; /* alternate which goes first */
            if (only_opt && x == xe && r >= 0) continue; /* (profiling: the optimized runs alone) */
            double t0 = now(cpu);
            jn_status s = jn_ex_run(x, in, syms, outs);
            double t1 = now(cpu);
            if (s != JN_OK) {
                fprintf(stderr, "janus bench-exec: graph %s (%s): %s\n", g->name, x == xe ? "op by op" : "optimized",
                        jn_errmsg());
                goto done;
            }
            for (int32_t i = 0, k = 0; i < g->noutputs; i++)
                if (g->outputs[i].kind == JN_IR_OUT_KEEP) jn_tensor_decref(outs[k++]);
            if (r >= 0) (x == xe ? te : to)[r] = t1 - t0;
        }
    }
    jn_ex_last_stats(xo, &so_st);
    jn_ex_last_stats(xe, &se_st);
    /* the recorded graph op by op, once: its peak is what eager execution needs */
    jn_ex_stats sr_st = se_st;
    if (xr) {
        if (jn_ex_run(xr, in, syms, outs) != JN_OK) {
            fprintf(stderr, "janus bench-exec: graph %s as recorded (%s): %s\n", g->name, rfile, jn_errmsg());
            goto done;
        }
        for (int32_t i = 0, k = 0; i < g->noutputs; i++)
            if (g->outputs[i].kind == JN_IR_OUT_KEEP) jn_tensor_decref(outs[k++]);
        jn_ex_last_stats(xr, &sr_st);
    }
    int32_t nk[4] = {0};
    for (int32_t k = 0; k < g->nkernels; k++) nk[g->kernels[k].kind]++;
    double mo = median(to, repeats), me = only_opt ? 0 : median(te, repeats);
    jn_cli_json j;
    jn_cli_json_init(&j, stdout);
    jn_cli_json_obj(&j);
    jn_cli_json_key(&j, "graph"), jn_cli_json_str(&j, g->name);
    jn_cli_json_key(&j, "graphs"), jn_cli_json_int(&j, m->ngraphs);
    jn_cli_json_key(&j, "nodes"), jn_cli_json_int(&j, g->nnodes);
    jn_cli_json_key(&j, "kernels"), jn_cli_json_int(&j, g->nkernels);
    jn_cli_json_key(&j, "kernels_ew"), jn_cli_json_int(&j, nk[JN_IR_K_EW] + nk[JN_IR_K_EW_REDUCE]);
    jn_cli_json_key(&j, "kernels_gemm"), jn_cli_json_int(&j, nk[JN_IR_K_GEMM]);
    jn_cli_json_key(&j, "compiled"), jn_cli_json_int(&j, lib != NULL);
    jn_cli_json_key(&j, "symbols_at"), jn_cli_json_str(&j, point);
    jn_cli_json_key(&j, "repeats"), jn_cli_json_int(&j, repeats);
    jn_cli_json_key(&j, "clock"), jn_cli_json_str(&j, cpu ? "cpu" : "wall");
    jn_cli_json_key(&j, "optimized_s"), jn_cli_json_num(&j, mo);
    jn_cli_json_key(&j, "eager_s"), jn_cli_json_num(&j, me);
    jn_cli_json_key(&j, "speedup"), jn_cli_json_num(&j, mo > 0 ? me / mo : 0);
    jn_cli_json_key(&j, "arena_bytes"), jn_cli_json_int(&j, so_st.arena_bytes);
    jn_cli_json_key(&j, "optimized_peak_bytes"), jn_cli_json_int(&j, so_st.peak_bytes);
    jn_cli_json_key(&j, "eager_peak_bytes"), jn_cli_json_int(&j, se_st.peak_bytes);
    jn_cli_json_key(&j, "reference_peak_bytes"), jn_cli_json_int(&j, xr ? sr_st.peak_bytes : -1);
    jn_cli_json_key(&j, "arena_ratio"),
        jn_cli_json_num(&j, sr_st.peak_bytes > 0 ? (double)so_st.arena_bytes / (double)sr_st.peak_bytes : 0);
    jn_cli_json_key(&j, "gen_calls"), jn_cli_json_int(&j, so_st.kernels_gen);
    jn_cli_json_key(&j, "eager_calls_optimized"), jn_cli_json_int(&j, so_st.nodes_eager);
    jn_cli_json_key(&j, "eager_calls_op_by_op"), jn_cli_json_int(&j, se_st.nodes_eager);
    jn_cli_json_end(&j, '}');
    putchar('\n');
    rc = 0;
done:
    for (int32_t i = 0; in && i < nin; i++)
        if (in[i]) jn_tensor_decref(in[i]);
    jn_ex_free(xo);
    jn_ex_free(xe);
    jn_ex_free(xr);
    jn_ir_module_free(ref);
    jn_ex_lib_close(lib);
    if (b) jn_cg_bundle_free(b);
    if (db) jn_db_close(db);
    free(syms);
    free(in);
    free(outs);
    free(to);
    free(te);
    return rc;
}
