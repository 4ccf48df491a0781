/* optimize.c -- `janus optimize [--run N] [--target T] [--dump-ir] [--ir-out FILE] [--no-store] [--no-compile] [--quiet] run.db`
 *
 * Runs the analyzer (analyzer/jn_an.h) over a trace store: the recorded
 * steps become generalized, guarded graphs.  Prints one summary line and
 * one line per group of segments it had to leave out (with the reason);
 * --dump-ir writes the graphs in the IR's text form to stdout (the summary
 * then goes to stderr, so stdout stays parseable), --ir-out writes the
 * binary form to a file (both show the analyzer's graphs).  The codegen
 * passes (codegen/passes.c: dce, cse, fold, simplify, poolmask, hoist, remat, fuse, plan, select;
 * JANUS_DUMP_IR dumps after them) then optimize the graphs; the C emitter
 * (codegen/emit_c.c) writes their generated kernels as C, the system C
 * compiler (codegen/cc.c: $CC, cc or gcc) turns it into a shared object,
 * and graphs and object are stored in the store as its "cpu" bundle
 * (codegen/jn_bundle.h; the object is its JN_CG_SEC_SO section "cpu"),
 * replacing the previous one in one transaction.  Without a C compiler
 * nothing is stored (exit 1, saying how to get one) unless --no-compile is
 * given: the bundle then holds no object and the executor runs those
 * kernels member by member through the eager kernels.
 *
 * --target cuda:sm_XX (default cpu) stores a bundle for that GPU instead:
 * the same passes, then the CUDA emitter (codegen/emit_cuda.c) and NVRTC
 * (codegen/nvrtc.c, loaded at run time; no GPU needed) give PTX and a cubin
 * for sm_XX, kept as the bundle's JN_CG_SEC_PTX / JN_CG_SEC_CUBIN sections
 * under target "cuda:sm_XX" (the "cpu" bundle is left alone).  Recorded
 * graphs are CPU graphs today (no device tensors yet), and the emitter
 * generates from them as a compile check; the summary says so, and nothing
 * runs these kernels until the CUDA executor exists.
 *
 * The analysis reads the store read-only, so this works on a store another
 * process is still recording into (its committed steps are analyzed); only
 * the bundle write opens it for writing (WAL: recorders go on).  A step
 * whose trace chunk is damaged is skipped with a warning naming run, step
 * and the damage; no readable step at all is "nothing to optimize" (exit
 * 1, nothing stored: an empty bundle would replace a useful one).  Failures
 * exit 1 with a message that names the file and the fix; usage mistakes
 * exit 2.  jn_cli_dump_graphs is shared with `janus inspect --graphs`.
 *
 * With the bundle go its notes (jn_db_bundle_notes_put): the summary line
 * and each group the analyzer left out or replay cannot match, with the
 * reason, for `janus report`.  While the kernels compile, a terminal sees
 * a `\r` progress line (elapsed time); a pipe gets the summary line only.
 */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "jn_cli.h"
#include "jn_db.h"
#include "jn_an.h"
#include "jn_bundle.h"
#include "jn_cg.h"

const char jn_cli_optimize_usage[] =
    "usage: janus optimize [--run N] [--target T] [--dump-ir] [--ir-out FILE] [--no-store] [--no-compile] [--quiet] PATH\n"
    "\n"
    "Mine the traces of a trace store (written by `janus record`) into\n"
    "generalized, guarded graphs: each recorded step is split at its sync\n"
    "points, segments that start at the same place are aligned op by op,\n"
    "varying shapes become symbols, varying Python numbers become inputs,\n"
    "repeats with a varying count become loops and different structures at\n"
    "one point become variants.  The graphs are then optimized (fusion,\n"
    "memory planning) and their fused kernels compiled to machine code with\n"
    "the system C compiler ($CC, else cc, else gcc).  Prints a summary and\n"
    "what it left out, and stores graphs and kernels in PATH as its bundle\n"
    "(replacing the last one).\n"
    "\n"
    "options:\n"
    "  --run N        only run N (default: every run in the store)\n"
    "  --target T     cpu (default), or cuda:sm_XX (e.g. cuda:sm_90): compile the\n"
    "                 fused kernels as CUDA with NVRTC (no GPU needed) to PTX and a\n"
    "                 cubin for that GPU, stored as the bundle of target T; the\n"
    "                 recorded graphs are CPU graphs, so for now this is a\n"
    "                 compile check: nothing runs these kernels yet\n"
    "  --dump-ir      print the graphs and their guards (IR text) on stdout;\n"
    "                 the summary goes to stderr\n"
    "  --ir-out FILE  write the graphs in the IR's binary form to FILE\n"
    "  --no-store     analyze only; leave the store's bundle as it is\n"
    "  --no-compile   store the graphs without compiled kernels (no C compiler\n"
    "                 needed; replay then runs those kernels op by op eagerly)\n"
    "  --quiet        no summary or progress lines (errors still print)\n"
    "  -h, --help     show this help\n";

/* Open the store or say why not (exit code 1), naming the file and the fix. */
static int open_store(const char *cmd, const char *path, jn_db **db) {
    struct stat sb;
    if (stat(path, &sb) != 0) {
        fprintf(stderr, "janus %s: %s does not exist; record one with `janus record --db %s -- python3 train.py`\n",
                cmd, path, path);
        return 1;
    }
    if (jn_db_open(path, JN_DB_READONLY, db) != JN_OK) {
        fprintf(stderr, "janus %s: %s\n", cmd, jn_errmsg());
        return 1;
    }
    return 0;
}

static int analyze(const char *cmd, const char *path, int64_t run, FILE *progress, jn_ir_module **m,
                   jn_an_stats *st, jn_an_regions *regions) {
    jn_db *db = NULL;
    int rc = open_store(cmd, path, &db);
    if (rc) return rc;
    jn_an_options opt = {.run_id = run, .progress = progress, .regions = regions};
    jn_status s = jn_an_analyze(db, &opt, m, st);
    jn_db_close(db);
    if (s) {
        fprintf(stderr, "janus %s: %s: %s\n", cmd, path, jn_errmsg());
        return 1;
    }
    /* damaged steps were left out: say which, on stderr even with --quiet */
    for (int i = 0; i < jn_an_skipped_count(); i++)
        fprintf(stderr, "janus %s: warning: %s: %s; that step was skipped, the others were analyzed\n", cmd, path,
                jn_an_skipped(i));
    return 0;
}

/* The regions summary: how many are replaceable, and each refused one with
 * its reason and the file:line that caused it (analyzer/regions.c). */
static void print_regions(FILE *out, const jn_an_regions *r) {
    if (!r->n) return;
    int ok = 0;
    for (int i = 0; i < r->n; i++) ok += r->v[i].replaceable;
    fprintf(out, "janus optimize: regions: %d replaceable, %d refused\n", ok, r->n - ok);
    for (int i = 0; i < r->n; i++) {
        const jn_db_region_verdict *v = &r->v[i];
        if (v->replaceable) continue;
        fprintf(out, "  region %s %s (%s): refused%s%s: %s\n", v->kind, v->qualname, v->site,
                *v->reason_site ? " at " : "", v->reason_site, v->reason);
    }
}

/* A `\r` line on stderr, redrawn every 0.1 s while a compile runs: what is
 * compiled and for how long so far.  Only on a terminal (progress_start
 * returns 0 elsewhere); progress_stop clears the line. */
typedef struct {
    pthread_t th;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int done;
    struct timespec t0;
    char what[200];
} progress_line;

static double since(const struct timespec *t0) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)(t.tv_sec - t0->tv_sec) + 1e-9 * (double)(t.tv_nsec - t0->tv_nsec);
}

static void *progress_main(void *arg) {
    progress_line *p = arg;
    static const char spin[] = "|/-\\";
    pthread_mutex_lock(&p->mu);
    for (unsigned k = 0; !p->done; k++) {
        fprintf(stderr, "\r\033[Kjanus optimize: %s %c %.1f s", p->what, spin[k % 4], since(&p->t0));
        fflush(stderr);
        struct timespec until;
        clock_gettime(CLOCK_REALTIME, &until);
        until.tv_nsec += 100 * 1000 * 1000;
        if (until.tv_nsec >= 1000000000L) until.tv_sec++, until.tv_nsec -= 1000000000L;
        pthread_cond_timedwait(&p->cv, &p->mu, &until);
    }
    fputs("\r\033[K", stderr);
    fflush(stderr);
    pthread_mutex_unlock(&p->mu);
    return NULL;
}

static int progress_start(progress_line *p, int on) {
    memset(p, 0, sizeof *p);
    if (!on || !isatty(STDERR_FILENO)) return 0;
    clock_gettime(CLOCK_MONOTONIC, &p->t0);
    pthread_mutex_init(&p->mu, NULL);
    pthread_cond_init(&p->cv, NULL);
    if (pthread_create(&p->th, NULL, progress_main, p) != 0) {
        pthread_mutex_destroy(&p->mu);
        pthread_cond_destroy(&p->cv);
        return 0;
    }
    return 1;
}

static void progress_stop(progress_line *p, int started) {
    if (!started) return;
    pthread_mutex_lock(&p->mu);
    p->done = 1;
    pthread_cond_signal(&p->cv);
    pthread_mutex_unlock(&p->mu);
    pthread_join(p->th, NULL);
    pthread_mutex_destroy(&p->mu);
    pthread_cond_destroy(&p->cv);
}

/* What the analysis said, stored with bundle id for `janus report`: the
 * summary, the groups left out and the graphs replay cannot match. */
static jn_status store_notes(jn_db *db, int64_t id, const jn_an_stats *st) {
    char line[512];
    snprintf(line, sizeof line, "%lld graphs in %lld groups (%lld variants), %lld loops, %lld symbols, %lld guards "
             "from %lld runs, %lld steps, %lld ops; %lld groups left out",
             (long long)st->graphs, (long long)st->groups, (long long)st->variants, (long long)st->loops,
             (long long)st->symbols, (long long)st->guards, (long long)st->runs, (long long)st->steps,
             (long long)st->ops, (long long)st->uncaptured);
    const char *summary = line;
    jn_status s = jn_db_bundle_notes_put(db, id, "summary", &summary, 1);
    int nu = jn_an_uncaptured_count(), nm = jn_an_matcher_missing_count();
    const char **v = calloc((size_t)(nu > nm ? nu : nm) + 1, sizeof *v);
    if (!v) return s ? s : jn_error(JN_ERR_NOMEM, "out of memory");
    for (int i = 0; i < nu; i++) v[i] = jn_an_uncaptured(i);
    if (!s && nu) s = jn_db_bundle_notes_put(db, id, "refused", v, nu);
    for (int i = 0; i < nm; i++) v[i] = jn_an_matcher_missing(i);
    if (!s && nm) s = jn_db_bundle_notes_put(db, id, "matcher", v, nm);
    free(v);
    return s;
}

/* A signal that stops the compile: the handler only records it (the one
 * process-global this needs: a handler has nowhere else to write); cc.c
 * polls it, kills and reaps the compiler and removes its files, and
 * optimize then dies of that same signal.  Installed only while the
 * compiler runs; a signal ignored before (nohup) stays ignored. */
static volatile sig_atomic_t stop_signal;
static void on_stop(int sig) { stop_signal = sig; }

static const int stop_sigs[3] = {SIGINT, SIGTERM, SIGHUP};

static void catch_stops(struct sigaction *old) {
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_stop;
    sigemptyset(&sa.sa_mask);
    for (int i = 0; i < 3; i++) {
        sigaction(stop_sigs[i], NULL, &old[i]);
        if (old[i].sa_handler != SIG_IGN) sigaction(stop_sigs[i], &sa, NULL);
    }
}

/* The old actions back; a caught signal is raised again (the process
 * then ends as that signal's default action says). */
static void release_stops(const struct sigaction *old) {
    for (int i = 0; i < 3; i++) sigaction(stop_sigs[i], &old[i], NULL);
    if (stop_signal) raise(stop_signal);
}

/* The graphs become the store's "cpu" bundle (atomically replacing the old
 * one), keyed by this build and machine and the runs they came from. */
static int store_bundle(const char *path, int64_t run, const char *target, jn_ir_module *m, const jn_an_stats *st,
                        const jn_an_regions *regions, int compile, int64_t *id, size_t *bytes, FILE *info) {
    /* the passes verify after each step: a pass bug stops here, before a
     * wrong graph could reach the store */
    jn_cg_options co;
    jn_cg_options_from_env(&co);
    co.verify_each = 1;
    jn_cg_stats cs;
    memset(&cs, 0, sizeof cs);
    if (jn_cg_optimize(m, &co, &cs) != JN_OK) {
        fprintf(stderr, "janus optimize: the codegen passes failed: %s; nothing was stored (--no-store "
                        "analyzes only)\n", jn_errmsg());
        return 1;
    }
    /* the generated kernels, compiled: a missing compiler stops here,
     * before anything is stored */
    const char *arch = !strncmp(target, "cuda:", 5) ? target + 5 : NULL;
    char *src = NULL, *ptx = NULL;
    void *so = NULL, *cubin = NULL;
    size_t srclen = 0, solen = 0, ptxlen = 0, cubinlen = 0;
    int nkernels = 0;
    double cc_s = 0;
    if (compile) {
        jn_cg_cc_options cco = {.progress = 0, .stop = &stop_signal}; /* progress: ours below, a \r line on a terminal */
        jn_status es = arch ? jn_cg_emit_cuda(m, &src, &srclen, &nkernels) : jn_cg_emit_c(m, &src, &srclen, &nkernels);
        progress_line pl;
        int shown = !es && nkernels > 0 && progress_start(&pl, info != NULL);
        if (shown) {
            char kb[32];
            snprintf(pl.what, sizeof pl.what, "compiling %d %skernel%s (%s of %s)", nkernels, arch ? "CUDA " : "",
                     nkernels == 1 ? "" : "s", jn_cli_bytes((int64_t)srclen, kb), arch ? "CUDA C, NVRTC" : "C");
        }
        if (!es && nkernels > 0 && arch) {
            es = jn_cg_compile_cuda(src, srclen, arch, &ptx, &ptxlen, &cubin, &cubinlen, &cc_s, NULL);
        } else if (!es && nkernels > 0) {
            struct sigaction old[3];
            catch_stops(old);
            es = jn_cg_compile_so(src, srclen, &cco, &so, &solen, &cc_s);
            if (stop_signal) {
                progress_stop(&pl, shown);
                fprintf(stderr, "janus optimize: stopped by %s while compiling the kernels (compiler stopped, its "
                        "files removed); nothing was stored\n", strsignal(stop_signal));
                free(src), free(so);
                release_stops(old);
                return 1;
            }
            release_stops(old);
        }
        progress_stop(&pl, shown);
        free(src);
        if (es) {
            fprintf(stderr, "janus optimize: %s; nothing was stored%s\n", jn_errmsg(),
                    arch ? " (--no-compile stores the graphs without kernels)" : "");
            return 1;
        }
    }
    if (info && cs.npasses > 0) {
        const jn_cg_pass_stats *a = &cs.pass[0], *z = &cs.pass[cs.npasses - 1];
        int64_t arena = 0, naive = 0;
        for (int i = 0; i < cs.npasses; i++)
            if (cs.pass[i].arena_bytes) arena = cs.pass[i].arena_bytes, naive = cs.pass[i].naive_bytes;
        char b1[32], b2[32], b3[32], b4[32], cc_text[96];
        if (compile && arch)
            snprintf(cc_text, sizeof cc_text, "%d CUDA kernel%s compiled for %s by NVRTC in %.2f s (PTX + cubin)",
                     nkernels, nkernels == 1 ? "" : "s", arch, cc_s);
        else if (compile) snprintf(cc_text, sizeof cc_text, "%d kernel%s compiled in %.2f s", nkernels, nkernels == 1 ? "" : "s", cc_s);
        else snprintf(cc_text, sizeof cc_text, "kernels not compiled (--no-compile)");
        fprintf(info, "janus optimize: codegen: %s nodes -> %s, %lld fused kernels, arena %s of %s bytes "
                      "(naive) at the recorded maxima, %s\n",
                jn_cli_commas(a->nodes_before, b1), jn_cli_commas(z->nodes_after, b2), (long long)z->kernels,
                jn_cli_commas(arena, b3), jn_cli_commas(naive, b4), cc_text);
        if (arch) {
            /* the device of IR values decides where a graph runs */
            int64_t ngpu = 0;
            for (int32_t gi = 0; gi < m->ngraphs; gi++)
                for (int32_t v = 0; v < m->graphs[gi]->nvalues; v++) ngpu += m->graphs[gi]->values[v].device != JN_CPU;
            if (ngpu == 0)
                fprintf(info, "janus optimize: target %s: the recorded graphs are CPU graphs (no values on a GPU), "
                              "so their CUDA kernels are a compile check only: nothing runs them yet\n", target);
            else
                fprintf(info, "janus optimize: target %s: %lld values are on a GPU: the graphs run there through "
                              "the device executor (generated kernels from the cubin, the rest through the eager "
                              "CUDA backend)\n", target, (long long)ngpu);
        }
    }
    jn_db *db = NULL;
    if (jn_db_open(path, JN_DB_WRITE, &db) != JN_OK) {
        fprintf(stderr, "janus optimize: cannot store the bundle: %s (or pass --no-store)\n", jn_errmsg());
        free(so), free(ptx), free(cubin);
        return 1;
    }
    int64_t *runs = NULL;
    int nruns = 0;
    jn_status s = JN_OK;
    if (run) {
        runs = malloc(sizeof *runs);
        if (runs) runs[0] = run, nruns = 1;
        else s = jn_error(JN_ERR_NOMEM, "out of memory");
    } else {
        s = jn_db_run_ids(db, &runs, &nruns);
    }
    /* a CUDA bundle holds no CPU code: it needs no CPU features */
    jn_cg_bundle_meta meta = {.target = target, .cpu_features = arch ? "" : NULL, .source_runs = runs,
                              .nsource_runs = nruns, .source_steps = st->steps};
    /* the replay matcher's program (ir/jn_ir_match.h), from the analysis,
     * and the compiled kernels */
    void *mdata = NULL;
    size_t mlen = 0;
    if (!s) s = jn_an_matcher_section(&mdata, &mlen);
    char vname[40];
    snprintf(vname, sizeof vname, "compute_%s", arch && strlen(arch) > 3 ? arch + 3 : "");
    jn_cg_bundle_section sec[3] = {{.kind = JN_CG_SEC_MATCHER, .flags = 0, .name = "", .data = mdata, .len = mlen}};
    int nsec = 1;
    if (so) sec[nsec++] = (jn_cg_bundle_section){.kind = JN_CG_SEC_SO, .name = "cpu", .data = so, .len = solen};
    if (ptx)
        sec[nsec++] = (jn_cg_bundle_section){.kind = JN_CG_SEC_PTX, .flags = JN_CG_SEC_OPTIONAL, .name = vname,
                                             .data = ptx, .len = ptxlen};
    if (cubin)
        sec[nsec++] = (jn_cg_bundle_section){.kind = JN_CG_SEC_CUBIN, .flags = JN_CG_SEC_OPTIONAL, .name = arch,
                                             .data = cubin, .len = cubinlen};
    if (!s) s = jn_cg_bundle_store(db, m, &meta, sec, nsec, id);
    if (!s && store_notes(db, *id, st) != JN_OK) /* costs the report its notes, nothing else */
        fprintf(stderr, "janus optimize: the bundle's notes were not stored: %s\n", jn_errmsg());
    /* without them a replay learns every region itself, as before */
    if (!s && regions->n && jn_db_region_verdicts_put(db, *id, regions->v, regions->n) != JN_OK)
        fprintf(stderr, "janus optimize: the region verdicts were not stored: %s\n", jn_errmsg());
    free(mdata);
    free(runs);
    free(so), free(ptx), free(cubin);
    if (!s) {
        jn_db_bundle b;
        if (jn_db_bundle_get_id(db, *id, &b) == JN_OK) {
            *bytes = b.len;
            jn_db_bundle_free(&b);
        }
    }
    jn_db_close(db);
    if (s) {
        fprintf(stderr, "janus optimize: cannot store the bundle in %s: %s\n", path, jn_errmsg());
        return 1;
    }
    return 0;
}

int jn_cli_dump_graphs(const char *cmd, const char *path, int64_t run, FILE *out) {
    jn_ir_module *m = NULL;
    jn_an_stats st;
    int rc = analyze(cmd, path, run, NULL, &m, &st, NULL);
    if (rc) return rc;
    if (jn_ir_print(m, out) != JN_OK) {
        fprintf(stderr, "janus %s: cannot print the graphs: %s\n", cmd, jn_errmsg());
        rc = 1;
    }
    for (int i = 0; i < jn_an_uncaptured_count(); i++) fprintf(out, "# %s\n", jn_an_uncaptured(i));
    jn_ir_module_free(m);
    return rc;
}

int jn_cli_optimize(int argc, char **argv) {
    const char *path = NULL, *ir_out = NULL, *target = "cpu";
    int dump = 0, quiet = 0, store = 1, compile = 1;
    int64_t run = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            fputs(jn_cli_optimize_usage, stdout);
            return 0;
        }
        if (!strcmp(a, "--dump-ir")) { dump = 1; continue; }
        if (!strcmp(a, "--no-store")) { store = 0; continue; }
        if (!strcmp(a, "--no-compile")) { compile = 0; continue; }
        if (!strcmp(a, "--quiet") || !strcmp(a, "-q")) { quiet = 1; continue; }
        if (!strcmp(a, "--run") || !strncmp(a, "--run=", 6)) {
            const char *v = a[5] == '=' ? a + 6 : (i + 1 < argc ? argv[++i] : NULL);
            char *end = NULL;
            long long n = v ? strtoll(v, &end, 10) : 0;
            if (!v || !*v || *end || n <= 0) {
                fprintf(stderr, "janus optimize: --run needs a positive run id\n\n%s", jn_cli_optimize_usage);
                return 2;
            }
            run = n;
            continue;
        }
        if (!strcmp(a, "--target") || !strncmp(a, "--target=", 9)) {
            const char *v = a[8] == '=' ? a + 9 : (i + 1 < argc ? argv[++i] : NULL);
            int num = 0, used = 0;
            if (!v || (strcmp(v, "cpu") != 0 &&
                       !(sscanf(v, "cuda:sm_%d%n", &num, &used) == 1 && v[used] == 0 && num >= 50 && num <= 999))) {
                fprintf(stderr, "janus optimize: --target must be cpu or cuda:sm_XX (e.g. cuda:sm_90), not '%s'\n\n%s",
                        v ? v : "", jn_cli_optimize_usage);
                return 2;
            }
            target = v;
            continue;
        }
        if (!strcmp(a, "--ir-out") || !strncmp(a, "--ir-out=", 9)) {
            const char *v = a[8] == '=' ? a + 9 : (i + 1 < argc ? argv[++i] : NULL);
            if (!v || !*v) {
                fprintf(stderr, "janus optimize: --ir-out needs a file name\n\n%s", jn_cli_optimize_usage);
                return 2;
            }
            ir_out = v;
            continue;
        }
        if (a[0] == '-' && a[1]) {
            fprintf(stderr, "janus optimize: unknown option '%s'\n\n%s", a, jn_cli_optimize_usage);
            return 2;
        }
        if (path) {
            fprintf(stderr, "janus optimize: one PATH only (got '%s' and '%s')\n\n%s", path, a, jn_cli_optimize_usage);
            return 2;
        }
        path = a;
    }
    if (!path) {
        fprintf(stderr, "janus optimize: no PATH given\n\n%s", jn_cli_optimize_usage);
        return 2;
    }
    FILE *info = quiet ? NULL : dump ? stderr : stdout;
    jn_ir_module *m = NULL;
    jn_an_stats st;
    jn_an_regions regions = {NULL, 0};
    int rc = analyze("optimize", path, run, quiet ? NULL : stderr, &m, &st, &regions);
    if (rc) return rc;
    if (st.steps == 0) { /* an empty bundle would only replace a useful one */
        char runs[48] = "";
        if (run) snprintf(runs, sizeof runs, " in run %lld", (long long)run);
        fprintf(stderr, "janus optimize: nothing to optimize: %s has no recorded steps%s%s; nothing was stored. "
                "Record a training run first: `janus record --db %s -- python3 train.py`\n", path, runs,
                st.skipped ? " that could be read (see the warnings above)" : "", path);
        jn_ir_module_free(m);
        jn_an_regions_free(&regions);
        return 1;
    }
    if (dump && jn_ir_print(m, stdout) != JN_OK) {
        fprintf(stderr, "janus optimize: cannot print the graphs: %s\n", jn_errmsg());
        rc = 1;
    }
    if (!rc && ir_out) {
        void *data = NULL;
        size_t len = 0;
        FILE *f = NULL;
        if (jn_ir_serialize(m, &data, &len) != JN_OK) {
            fprintf(stderr, "janus optimize: cannot serialize the graphs: %s\n", jn_errmsg());
            rc = 1;
        } else if (!(f = fopen(ir_out, "wb")) || fwrite(data, 1, len, f) != len) {
            fprintf(stderr, "janus optimize: cannot write %s (%s); check the directory exists and is writable\n",
                    ir_out, strerror(errno));
            rc = 1;
        }
        if (f && fclose(f) != 0 && !rc) {
            fprintf(stderr, "janus optimize: cannot write %s (%s)\n", ir_out, strerror(errno));
            rc = 1;
        }
        free(data);
    }
    int64_t bundle_id = 0;
    size_t bundle_bytes = 0;
    if (info) {
        char b1[32], b2[32];
        fprintf(info,
                "janus optimize: %lld graph%s in %lld group%s (%lld variant%s), %lld loop%s, %lld symbol%s, "
                "%lld guard%s from %lld run%s, %s steps, %s ops in %.2f s\n",
                (long long)st.graphs, st.graphs == 1 ? "" : "s", (long long)st.groups, st.groups == 1 ? "" : "s",
                (long long)st.variants, st.variants == 1 ? "" : "s", (long long)st.loops, st.loops == 1 ? "" : "s",
                (long long)st.symbols, st.symbols == 1 ? "" : "s", (long long)st.guards, st.guards == 1 ? "" : "s",
                (long long)st.runs, st.runs == 1 ? "" : "s", jn_cli_commas(st.steps, b1), jn_cli_commas(st.ops, b2),
                st.seconds);
        for (int i = 0; i < jn_an_uncaptured_count(); i++) fprintf(info, "  %s\n", jn_an_uncaptured(i));
        for (int i = 0; i < jn_an_matcher_missing_count(); i++) fprintf(info, "  %s\n", jn_an_matcher_missing(i));
        print_regions(info, &regions);
    }
    if (!rc && store)
        rc = store_bundle(path, run, target, m, &st, &regions, compile, &bundle_id, &bundle_bytes, info);
    if (info && bundle_id) {
        char b1[32];
        fprintf(info, "janus optimize: stored as bundle %lld (%s bytes) in %s%s%s\n", (long long)bundle_id,
                jn_cli_commas((int64_t)bundle_bytes, b1), path, strcmp(target, "cpu") ? " for target " : "",
                strcmp(target, "cpu") ? target : "");
    }
    jn_ir_module_free(m);
    jn_an_regions_free(&regions);
    return rc;
}
