/* report.c -- `janus report [-o FILE] [--json | --trace FILE] [--run N ...] PATH`
 *
 * One page that shows where a store's runs spent their time and why
 * replayed segments missed: an overview of the runs, the share of ops and
 * time that ran in compiled graphs (per run and over its steps), per graph
 * its hits, misses, time per hit against the eager time of the same
 * segment, kernels, fused nodes, arena and IR, the misses grouped by guard
 * with the values seen and the script's lines around the guard, replay
 * against eager step by step, and what the analyzer left out.
 *
 * Data flow: every number is read here, through db/'s read functions (the
 * ones `janus inspect` uses: jn_db.h "reading", the replay counters, the
 * miss groups, the step times and segments of schema v6) and the bundle's
 * IR (codegen/jn_bundle.h), into ONE JSON document -- what --json prints,
 * its fields listed in docs/ARCHITECTURE.md ("janus report").  The HTML is
 * that document rendered by python/janus/report.py, which the build embeds
 * in this executable (jn_report_py.h): it is written to a temporary folder
 * and run with the Python of JANUS_PYTHON (default python3), so the
 * command needs no importable janus package; matplotlib draws the plots
 * where it is installed (else the page has tables and says why).
 * --trace writes a Chrome/Perfetto trace-event file instead: per replay or
 * eager run a process, with its steps and (replays) its first segments,
 * compiled or eager, on their own tracks.
 *
 * The store is opened read-only, in one read transaction, like inspect.
 * An empty store, a store with only recordings, a corrupt bundle: each
 * section says what it lacks instead of failing.
 */
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "jn_bundle.h"
#include "jn_cli.h"
#include "jn_db.h"
#include "jn_ir.h"
#include "jn_report_py.h"
#include "jn_settings.h"

const char jn_cli_report_usage[] =
    "usage: janus report [-o FILE] [--json | --trace FILE] [--run N ...] PATH\n"
    "\n"
    "Write one self-contained HTML page about a trace store: its runs (steps,\n"
    "steps/s, wall and CPU time, peak memory, bundle), how much of each\n"
    "replay ran in compiled graphs (ops and time, over the steps), per graph\n"
    "hits, misses and time per hit against eager, kernels, fused nodes, arena\n"
    "and IR, the misses grouped by guard with the values seen and the source\n"
    "lines, replay against eager step by step, and what the analyzer left\n"
    "out.  Plots need matplotlib in the Python that renders the page\n"
    "(JANUS_PYTHON, default python3); without it the page has tables only.\n"
    "The store is opened read-only.\n"
    "\n"
    "options:\n"
    "  -o FILE       where to write (default report.html; with --json: stdout)\n"
    "  --json        print the report's data as one JSON object instead\n"
    "  --trace FILE  write a Chrome/Perfetto trace-event file of the replay and\n"
    "                eager runs: steps and the first segments, compiled or eager\n"
    "  --run N       only run N (repeat, or N,M,...; default: every run)\n"
    "  -h, --help    show this help\n";

typedef struct {
    int64_t id;
    jn_ir_module *m;   /* NULL: why says why not */
    char *why;
} bmod;

typedef struct {
    jn_db *db;
    const char *path;
    jn_cli_json j;
    int failed;
    bmod *bm;
    int nbm;
} rctx;

static void failed(rctx *c) {
    if (!c->failed) fprintf(stderr, "janus report: %s\n", jn_errmsg());
    c->failed = 1;
}

/* The IR module of bundle id (cached; NULL with *why when it does not
 * load: corrupt, or made by a janus whose ops this one lacks). */
static const jn_ir_module *bundle_module(rctx *c, int64_t id, const char **why) {
    for (int i = 0; i < c->nbm; i++)
        if (c->bm[i].id == id) {
            *why = c->bm[i].why;
            return c->bm[i].m;
        }
    bmod *nb = realloc(c->bm, sizeof *nb * (size_t)(c->nbm + 1));
    if (!nb) {
        *why = "out of memory";
        return NULL;
    }
    c->bm = nb;
    bmod *b = &c->bm[c->nbm++];
    memset(b, 0, sizeof *b);
    b->id = id;
    jn_db_bundle full;
    jn_cg_bundle *cb = NULL;
    jn_status s = jn_db_bundle_get_id(c->db, id, &full);
    if (!s) {
        s = jn_cg_bundle_peek(full.data, full.len, &cb);
        const jn_cg_bundle_section *ir = s ? NULL : jn_cg_bundle_section_find(cb, JN_CG_SEC_IR);
        if (!s && !ir) s = jn_error(JN_ERR_VALUE, "bundle %lld has no IR section", (long long)id);
        if (!s) s = jn_ir_deserialize(ir->data, ir->len, &b->m);
        jn_cg_bundle_free(cb);
        jn_db_bundle_free(&full);
    }
    if (s) {
        b->m = NULL;
        b->why = strdup(jn_errmsg());
    }
    *why = b->why ? b->why : "out of memory";
    return b->m;
}

/* ------------------------------------------------------------ sources */

/* Split "file:line" (the last colon) into a path and a line number; 0 = not one. */
static int split_site(const char *site, char *file, size_t n, int *line) {
    const char *colon = site ? strrchr(site, ':') : NULL;
    if (!colon || colon == site || !colon[1]) return 0;
    char *end = NULL;
    long v = strtol(colon + 1, &end, 10);
    if (*end || v <= 0 || (size_t)(colon - site) >= n) return 0;
    memcpy(file, site, (size_t)(colon - site));
    file[colon - site] = 0;
    *line = (int)v;
    return 1;
}

/* A reason's first "at FILE:LINE" (the op a structural miss names). */
static int site_in_reason(const char *reason, char *out, size_t n) {
    for (const char *p = reason; p && (p = strstr(p, " at ")); p += 4) {
        const char *b = p + 4, *e = b;
        while (*e && *e != ' ' && *e != ')' && *e != ',' && *e != ';') e++;
        if ((size_t)(e - b) >= n) continue;
        char tmp[PATH_MAX + 32];
        if ((size_t)(e - b) >= sizeof tmp) continue;
        memcpy(tmp, b, (size_t)(e - b));
        tmp[e - b] = 0;
        char f[PATH_MAX];
        int line;
        if (split_site(tmp, f, sizeof f, &line)) {
            snprintf(out, n, "%s", tmp);
            return 1;
        }
    }
    return 0;
}

enum { SRC_CONTEXT = 3 };

/* "source": the lines around site's line in its file (relative paths
 * against the run's cwd), or why they are not there. */
static void emit_source(rctx *c, const char *site, const char *cwd) {
    jn_cli_json *j = &c->j;
    char file[PATH_MAX], path[2 * PATH_MAX];
    int line = 0;
    jn_cli_json_key(j, "source");
    if (!split_site(site, file, sizeof file, &line)) {
        jn_cli_json_null(j);
        return;
    }
    if (file[0] != '/' && cwd && cwd[0]) snprintf(path, sizeof path, "%s/%s", cwd, file);
    else snprintf(path, sizeof path, "%s", file);
    jn_cli_json_obj(j);
    jn_cli_json_key(j, "file"); jn_cli_json_str(j, file);
    jn_cli_json_key(j, "line"); jn_cli_json_int(j, line);
    FILE *f = fopen(path, "r");
    jn_cli_json_key(j, "exists"); jn_cli_json_raw(j, f ? "true" : "false");
    if (!f) {
        jn_cli_json_key(j, "note");
        char msg[2 * PATH_MAX + 160];
        snprintf(msg, sizeof msg, "%s cannot be read now (%s): the lines are not shown", path, strerror(errno));
        jn_cli_json_str(j, msg);
        jn_cli_json_end(j, '}');
        return;
    }
    jn_cli_json_key(j, "lines");
    jn_cli_json_arr(j);
    char buf[4096];
    int n = 0, shown = 0;
    while (fgets(buf, sizeof buf, f)) {
        size_t l = strlen(buf);
        int whole = l && buf[l - 1] == '\n';
        if (whole) buf[--l] = 0;
        if (!whole) { /* a very long line: keep its start, skip the rest */
            int ch;
            while ((ch = fgetc(f)) != EOF && ch != '\n') {
            }
        }
        n++;
        if (n < line - SRC_CONTEXT) continue;
        if (n > line + SRC_CONTEXT) break;
        jn_cli_json_arr(j);
        jn_cli_json_int(j, n);
        jn_cli_json_str(j, buf);
        jn_cli_json_end(j, ']');
        shown++;
    }
    fclose(f);
    jn_cli_json_end(j, ']');
    jn_cli_json_key(j, "note");
    if (!shown) {
        char msg[2 * PATH_MAX + 80];
        snprintf(msg, sizeof msg, "%s has only %d lines now: it changed since the run", path, n);
        jn_cli_json_str(j, msg);
    } else {
        jn_cli_json_null(j);
    }
    jn_cli_json_end(j, '}');
}

/* ---------------------------------------------------------------- runs */

static double median(double *v, int n) {
    if (n <= 0) return NAN;
    for (int i = 1; i < n; i++) /* insertion sort: step counts are modest, and v is ours */
        for (int k = i; k > 0 && v[k - 1] > v[k]; k--) {
            double t = v[k];
            v[k] = v[k - 1];
            v[k - 1] = t;
        }
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

static void json_num_or_null(jn_cli_json *j, const char *key, double v) {
    jn_cli_json_key(j, key);
    jn_cli_json_num(j, v); /* NaN -> null */
}

/* The steps of a recorded run: count, seconds, rate, and the series. */
static void emit_record_steps(rctx *c, int64_t run) {
    jn_cli_json *j = &c->j;
    jn_db_run_totals t;
    jn_db_step_row *st = NULL;
    int n = 0;
    if (jn_db_totals(c->db, run, &t) != JN_OK || jn_db_steps(c->db, run, &st, &n) != JN_OK) {
        failed(c);
        return;
    }
    /* as for timed runs, the first step (with the start-up) is left out of the rate */
    int64_t steps = 0;
    int nd = 0;
    double secs = 0, rate_secs = 0;
    double *d = calloc((size_t)n + 1, sizeof *d);
    for (int i = 0; i < n; i++)
        if (strcmp(st[i].kind, "tail")) {
            if (steps > 0) {
                if (d) d[nd++] = st[i].duration;
                rate_secs += st[i].duration;
            }
            steps++;
            secs += st[i].duration;
        }
    jn_cli_json_key(j, "steps"); jn_cli_json_int(j, steps);
    jn_cli_json_key(j, "ops"); jn_cli_json_int(j, t.ops);
    jn_cli_json_key(j, "step_seconds"); jn_cli_json_num(j, secs);
    json_num_or_null(j, "steps_per_second", rate_secs > 0 ? (double)(steps - 1) / rate_secs : NAN);
    json_num_or_null(j, "median_step_seconds", d ? median(d, nd) : NAN);
    free(d);
    jn_cli_json_key(j, "step_series");
    jn_cli_json_obj(j);
    const char *cols[] = {"step", "duration", "ops"};
    for (int k = 0; k < 3; k++) {
        jn_cli_json_key(j, cols[k]);
        jn_cli_json_arr(j);
        for (int i = 0; i < n; i++) {
            if (!strcmp(st[i].kind, "tail")) continue;
            if (k == 0) jn_cli_json_int(j, st[i].step);
            else if (k == 1) jn_cli_json_num(j, st[i].duration);
            else jn_cli_json_int(j, st[i].n_ops);
        }
        jn_cli_json_end(j, ']');
    }
    jn_cli_json_end(j, '}');
    jn_db_steps_free(st, n);
}

/* The steps of a replay or eager run (run_steps), with its coverage. */
static void emit_timed_steps(rctx *c, const jn_db_run_row *r, jn_db_run_step *st, int n) {
    jn_cli_json *j = &c->j;
    int replay = !strcmp(r->kind, "replay");
    int64_t steps = 0, seg = 0, hits = 0, gops = 0, eops = 0;
    double secs = 0, total = 0, gsec = 0, rate_secs = 0;
    double *d = calloc((size_t)n + 1, sizeof *d);
    int nd = 0;
    const jn_db_run_step *tail = NULL;
    for (int i = 0; i < n; i++) {
        const jn_db_run_step *s = &st[i];
        total += s->duration;
        seg += s->segments, hits += s->hits, gsec += s->graph_seconds;
        if (s->graph_ops > 0) gops += s->graph_ops;
        if (s->eager_ops > 0) eops += s->eager_ops;
        if (!strcmp(s->kind, "tail")) {
            tail = s;
            continue;
        }
        steps++;
        secs += s->duration;
        if (s->step > 1) { /* step 1 includes the start-up (imports, data loading) */
            rate_secs += s->duration;
            if (d) d[nd++] = s->duration;
        }
    }
    jn_cli_json_key(j, "steps"); jn_cli_json_int(j, steps);
    jn_cli_json_key(j, "ops");
    if (replay) jn_cli_json_int(j, gops + eops);
    else jn_cli_json_null(j);
    jn_cli_json_key(j, "step_seconds"); jn_cli_json_num(j, secs);
    json_num_or_null(j, "steps_per_second", rate_secs > 0 ? (double)(steps - 1) / rate_secs : NAN);
    json_num_or_null(j, "median_step_seconds", d ? median(d, nd) : NAN);
    free(d);
    jn_cli_json_key(j, "step_series");
    jn_cli_json_obj(j);
    const char *cols[] = {"step", "duration", "segments", "hits", "graph_ops", "eager_ops", "graph_seconds"};
    for (int k = 0; k < 7; k++) {
        if (!replay && k >= 2) break;
        jn_cli_json_key(j, cols[k]);
        jn_cli_json_arr(j);
        for (int i = 0; i < n; i++) {
            const jn_db_run_step *s = &st[i];
            if (!strcmp(s->kind, "tail")) continue;
            switch (k) {
            case 0: jn_cli_json_int(j, s->step); break;
            case 1: jn_cli_json_num(j, s->duration); break;
            case 2: jn_cli_json_int(j, s->segments); break;
            case 3: jn_cli_json_int(j, s->hits); break;
            case 4: jn_cli_json_int(j, s->graph_ops); break;
            case 5: jn_cli_json_int(j, s->eager_ops); break;
            default: jn_cli_json_num(j, s->graph_seconds);
            }
        }
        jn_cli_json_end(j, ']');
    }
    jn_cli_json_end(j, '}');
    jn_cli_json_key(j, "tail");
    if (tail) {
        jn_cli_json_obj(j);
        jn_cli_json_key(j, "duration"); jn_cli_json_num(j, tail->duration);
        jn_cli_json_key(j, "segments"); jn_cli_json_int(j, tail->segments);
        jn_cli_json_key(j, "hits"); jn_cli_json_int(j, tail->hits);
        jn_cli_json_end(j, '}');
    } else {
        jn_cli_json_null(j);
    }
    jn_cli_json_key(j, "coverage");
    if (!replay) {
        jn_cli_json_null(j);
        return;
    }
    jn_cli_json_obj(j);
    jn_cli_json_key(j, "segments"); jn_cli_json_int(j, seg);
    jn_cli_json_key(j, "hits"); jn_cli_json_int(j, hits);
    jn_cli_json_key(j, "graph_ops"); jn_cli_json_int(j, gops);
    jn_cli_json_key(j, "eager_ops"); jn_cli_json_int(j, eops);
    jn_cli_json_key(j, "graph_seconds"); jn_cli_json_num(j, gsec);
    jn_cli_json_key(j, "seconds"); jn_cli_json_num(j, total);
    json_num_or_null(j, "ops_share", gops + eops ? (double)gops / (double)(gops + eops) : NAN);
    json_num_or_null(j, "time_share", total > 0 ? gsec / total : NAN);
    jn_cli_json_end(j, '}');
}

/* Per graph of a replay run: counters joined with the timeline's times. */
static void emit_graphs(rctx *c, int64_t run, const jn_db_replay_graph *g, int ng) {
    jn_cli_json *j = &c->j;
    jn_db_graph_times *t = NULL;
    int nt = 0;
    if (jn_db_graph_times_get(c->db, run, &t, &nt) != JN_OK) {
        failed(c);
        return;
    }
    jn_cli_json_key(j, "graphs");
    jn_cli_json_arr(j);
    for (int i = 0; i < ng; i++) {
        const jn_db_graph_times *x = NULL;
        for (int k = 0; k < nt && !x; k++)
            if (!strcmp(t[k].graph, g[i].graph)) x = &t[k];
        jn_cli_json_obj(j);
        jn_cli_json_key(j, "graph"); jn_cli_json_str(j, g[i].graph);
        jn_cli_json_key(j, "hits"); jn_cli_json_int(j, g[i].hits);
        jn_cli_json_key(j, "extrapolated"); jn_cli_json_int(j, g[i].extrapolated);
        jn_cli_json_key(j, "misses"); jn_cli_json_int(j, g[i].misses);
        jn_cli_json_key(j, "seconds"); jn_cli_json_num(j, g[i].seconds);
        json_num_or_null(j, "exec_per_hit", g[i].hits ? g[i].seconds / (double)g[i].hits : NAN);
        jn_cli_json_key(j, "times");
        if (!x) {
            jn_cli_json_null(j);
        } else {
            jn_cli_json_obj(j);
            jn_cli_json_key(j, "ops"); jn_cli_json_int(j, x->ops);
            jn_cli_json_key(j, "wall"); jn_cli_json_num(j, x->wall);
            jn_cli_json_key(j, "eager_segments"); jn_cli_json_int(j, x->eager_segments);
            jn_cli_json_key(j, "eager_wall"); jn_cli_json_num(j, x->eager_wall);
            jn_cli_json_key(j, "eager_ops"); jn_cli_json_int(j, x->eager_ops);
            double ph = g[i].hits ? x->wall / (double)g[i].hits : NAN;
            double pe = x->eager_segments ? x->eager_wall / (double)x->eager_segments : NAN;
            json_num_or_null(j, "wall_per_hit", ph);
            json_num_or_null(j, "eager_per_segment", pe);
            json_num_or_null(j, "speedup", ph > 0 && pe > 0 ? pe / ph : NAN);
            jn_cli_json_end(j, '}');
        }
        jn_cli_json_end(j, '}');
    }
    jn_cli_json_end(j, ']');
    jn_db_graph_times_free(t, nt);
}

/* The misses of a replay run, grouped by guard, with words, values, source and counts per step. */
static void emit_misses(rctx *c, const jn_db_run_row *r, const jn_db_segment *seg, int nseg) {
    jn_cli_json *j = &c->j;
    jn_db_miss_group *m = NULL;
    int nm = 0;
    if (jn_db_replay_miss_groups(c->db, r->id, &m, &nm) != JN_OK) {
        failed(c);
        return;
    }
    const char *why = NULL;
    const jn_ir_module *mod = r->bundle_id ? bundle_module(c, r->bundle_id, &why) : NULL;
    jn_cli_json_key(j, "miss_groups");
    jn_cli_json_arr(j);
    for (int i = 0; i < nm; i++) {
        const jn_db_miss_group *x = &m[i];
        jn_cli_json_obj(j);
        jn_cli_json_key(j, "graph"); jn_cli_json_str(j, x->graph);
        jn_cli_json_key(j, "guard"); jn_cli_json_int(j, x->guard);
        jn_cli_json_key(j, "choice"); jn_cli_json_raw(j, x->guard == JN_DB_MISS_CHOICE ? "true" : "false");
        jn_cli_json_key(j, "count"); jn_cli_json_int(j, x->count);
        jn_cli_json_key(j, "reason"); jn_cli_json_str(j, x->reason);
        jn_cli_json_key(j, "pattern"); jn_cli_json_str(j, x->pattern);
        /* the guard in words, as the bundle states it (recorded value or range) */
        jn_cli_json_key(j, "guard_words");
        const jn_ir_graph *g = NULL;
        for (int32_t k = 0; mod && k < mod->ngraphs && !g; k++)
            if (!strcmp(mod->graphs[k]->name, x->graph)) g = mod->graphs[k];
        if (g && x->guard >= 0 && x->guard < g->nguards) {
            char words[1024];
            jn_ir_guard_explain(mod, g, x->guard, NULL, words, sizeof words);
            jn_cli_json_str(j, words);
        } else {
            jn_cli_json_null(j);
        }
        jn_cli_json_key(j, "nvalues"); jn_cli_json_int(j, x->nvalues);
        json_num_or_null(j, "seen_min", x->seen_min);
        json_num_or_null(j, "seen_max", x->seen_max);
        char site[PATH_MAX + 32] = "";
        if (x->site[0]) snprintf(site, sizeof site, "%s", x->site);
        else site_in_reason(x->reason, site, sizeof site);
        jn_cli_json_key(j, "site"); jn_cli_json_str(j, site);
        emit_source(c, site, r->cwd);
        /* how often per step, from the stored segments */
        jn_cli_json_key(j, "over_time");
        jn_cli_json_arr(j);
        int64_t cur = -1, cnt = 0;
        for (int k = 0; k <= nseg; k++) {
            int match = k < nseg && !seg[k].hit && seg[k].guard == x->guard && !strcmp(seg[k].graph, x->graph);
            if (k == nseg || (match && seg[k].step != cur)) {
                if (cnt) {
                    jn_cli_json_arr(j);
                    jn_cli_json_int(j, cur);
                    jn_cli_json_int(j, cnt);
                    jn_cli_json_end(j, ']');
                }
                if (k < nseg) cur = seg[k].step, cnt = 0;
            }
            if (match) cnt++;
        }
        jn_cli_json_end(j, ']');
        jn_cli_json_end(j, '}');
    }
    jn_cli_json_end(j, ']');
    jn_cli_json_key(j, "bundle_note");
    if (r->bundle_id && !mod) jn_cli_json_str(j, why);
    else jn_cli_json_null(j);
    jn_db_miss_groups_free(m, nm);
}

/* The script of a stored argv: its first argument ending in .py (as given). */
static void emit_script(jn_cli_json *j, const char *argv) {
    jn_cli_json_key(j, "script");
    const char *p = argv ? strstr(argv, ".py\"") : NULL;
    if (!p) {
        jn_cli_json_null(j);
        return;
    }
    const char *b = p;
    while (b > argv && b[-1] != '"') b--;
    char buf[PATH_MAX];
    size_t n = (size_t)(p + 3 - b);
    if (n >= sizeof buf || memchr(b, '\\', n)) { /* escaped characters: leave it to the argv */
        jn_cli_json_null(j);
        return;
    }
    memcpy(buf, b, n);
    buf[n] = 0;
    jn_cli_json_str(j, buf);
}

static void emit_run(rctx *c, const jn_db_run_row *r) {
    jn_cli_json *j = &c->j;
    jn_cli_json_obj(j);
    jn_cli_json_key(j, "id"); jn_cli_json_int(j, r->id);
    jn_cli_json_key(j, "kind"); jn_cli_json_str(j, r->kind);
    jn_cli_json_key(j, "status"); jn_cli_json_str(j, r->status ? r->status : "running");
    jn_cli_json_key(j, "exit_status");
    if (r->has_exit_status) jn_cli_json_int(j, r->exit_status);
    else jn_cli_json_null(j);
    jn_cli_json_key(j, "argv");
    size_t al = r->argv_json ? strlen(r->argv_json) : 0;
    if (al >= 2 && r->argv_json[0] == '[' && r->argv_json[al - 1] == ']') jn_cli_json_raw(j, r->argv_json);
    else jn_cli_json_str(j, r->argv_json);
    emit_script(j, r->argv_json);
    jn_cli_json_key(j, "cwd"); jn_cli_json_str(j, r->cwd);
    jn_cli_json_key(j, "hostname"); jn_cli_json_str(j, r->hostname);
    jn_cli_json_key(j, "janus_version"); jn_cli_json_str(j, r->janus_version);
    jn_cli_json_key(j, "python_version"); jn_cli_json_str(j, r->python_version);
    json_num_or_null(j, "started", r->started);
    json_num_or_null(j, "ended", r->ended);
    json_num_or_null(j, "wall_seconds", r->ended - r->started);
    json_num_or_null(j, "cpu_seconds", r->cpu_seconds);
    jn_cli_json_key(j, "peak_rss");
    if (r->peak_rss > 0) jn_cli_json_int(j, r->peak_rss);
    else jn_cli_json_null(j);
    jn_cli_json_key(j, "bundle_id");
    if (r->bundle_id) jn_cli_json_int(j, r->bundle_id);
    else jn_cli_json_null(j);
    if (!strcmp(r->kind, "record")) {
        emit_record_steps(c, r->id);
        jn_cli_json_key(j, "coverage"); jn_cli_json_null(j);
        jn_cli_json_end(j, '}');
        return;
    }
    jn_db_run_step *st = NULL;
    jn_db_segment *seg = NULL;
    jn_db_replay_graph *g = NULL;
    jn_db_replay_miss *m = NULL;
    jn_db_replay_extrap *x = NULL;
    int n = 0, nseg = 0, ng = 0, nm = 0, nx = 0;
    if (jn_db_run_steps(c->db, r->id, &st, &n) != JN_OK || jn_db_segments(c->db, r->id, &seg, &nseg) != JN_OK ||
        jn_db_replay_get(c->db, r->id, &g, &ng, &m, &nm) != JN_OK || jn_db_replay_extraps(c->db, r->id, &x, &nx) != JN_OK) {
        failed(c);
        goto out;
    }
    if (n) {
        emit_timed_steps(c, r, st, n);
    } else {
        jn_cli_json_key(j, "steps"); jn_cli_json_null(j);
        jn_cli_json_key(j, "coverage"); jn_cli_json_null(j);
    }
    jn_cli_json_key(j, "steps_stored"); jn_cli_json_raw(j, n ? "true" : "false");
    if (strcmp(r->kind, "replay")) goto done;
    jn_cli_replay_totals t = jn_cli_replay_sum(g, ng, m, nm);
    int64_t hits = t.hits, misses = t.misses, chosen = t.chosen;
    double secs = t.seconds;
    jn_cli_json_key(j, "replay");
    if (!ng && !nm) {
        jn_cli_json_null(j);
    } else {
        jn_cli_json_obj(j);
        jn_cli_json_key(j, "hits"); jn_cli_json_int(j, hits);
        jn_cli_json_key(j, "misses"); jn_cli_json_int(j, misses);
        jn_cli_json_key(j, "chosen"); jn_cli_json_int(j, chosen);
        json_num_or_null(j, "hit_rate", hits + misses ? (double)hits / (double)(hits + misses) : NAN);
        jn_cli_json_key(j, "graph_seconds"); jn_cli_json_num(j, secs);
        jn_cli_json_end(j, '}');
    }
    emit_graphs(c, r->id, g, ng);
    jn_cli_json_key(j, "extrapolations");
    jn_cli_json_extraps(j, x, nx);
    jn_cli_json_key(j, "regions");
    if (jn_cli_json_region_replays(j, c->db, r->id)) failed(c);
    jn_cli_json_key(j, "backward");
    if (jn_cli_json_backward(j, c->db, r->id)) failed(c);
    emit_misses(c, r, seg, nseg);
    jn_cli_json_key(j, "segments");
    jn_cli_json_obj(j);
    jn_cli_json_key(j, "stored"); jn_cli_json_int(j, nseg);
    jn_cli_json_key(j, "total"); jn_cli_json_int(j, hits + misses);
    jn_cli_json_key(j, "limit"); jn_cli_json_int(j, JN_DB_SEGMENTS_MAX);
    jn_cli_json_key(j, "last_step");
    if (nseg) jn_cli_json_int(j, seg[nseg - 1].step);
    else jn_cli_json_null(j);
    jn_cli_json_end(j, '}');
done:
    jn_cli_json_end(j, '}');
out:
    jn_db_run_steps_free(st, n);
    jn_db_segments_free(seg, nseg);
    jn_db_replay_free(g, ng, m, nm);
    jn_db_replay_extrap_free(x, nx);
}

/* -------------------------------------------------------------- bundles */

/* Per graph of a bundle's IR: what codegen made of it. */
static void emit_bundle_graphs(rctx *c, const jn_ir_module *m) {
    jn_cli_json *j = &c->j;
    jn_cli_json_key(j, "graphs");
    jn_cli_json_arr(j);
    for (int32_t gi = 0; gi < m->ngraphs; gi++) {
        const jn_ir_graph *g = m->graphs[gi];
        int32_t *members = calloc((size_t)g->nkernels + 1, sizeof *members);
        int64_t fused = 0, generated = 0;
        for (int32_t i = 0; members && i < g->nnodes; i++)
            if (g->nodes[i].kernel >= 0 && g->nodes[i].kernel < g->nkernels) members[g->nodes[i].kernel]++;
        for (int32_t k = 0; members && k < g->nkernels; k++) {
            if (members[k] > 1) fused += members[k];
            generated += g->kernels[k].kind != JN_IR_K_LIB;
        }
        free(members);
        jn_cli_json_obj(j);
        jn_cli_json_key(j, "name"); jn_cli_json_str(j, g->name);
        jn_cli_json_key(j, "group"); jn_cli_json_int(j, g->group);
        jn_cli_json_key(j, "variant"); jn_cli_json_int(j, g->variant);
        jn_cli_json_key(j, "support"); jn_cli_json_int(j, g->support);
        jn_cli_json_key(j, "entry"); jn_cli_json_str(j, g->entry);
        jn_cli_json_key(j, "exit"); jn_cli_json_str(j, g->exit);
        jn_cli_json_key(j, "nodes"); jn_cli_json_int(j, g->nnodes);
        jn_cli_json_key(j, "loops"); jn_cli_json_int(j, g->nloops);
        jn_cli_json_key(j, "guards"); jn_cli_json_int(j, g->nguards);
        jn_cli_json_key(j, "kernels"); jn_cli_json_int(j, g->nkernels);
        jn_cli_json_key(j, "generated_kernels"); jn_cli_json_int(j, generated);
        jn_cli_json_key(j, "fused_nodes"); jn_cli_json_int(j, fused);
        /* the arena: bytes, or an expression of the graph's symbols */
        jn_cli_json_key(j, "arena");
        if (jn_ir_is_expr(g->arena)) {
            char e[256];
            jn_cli_json_str(j, jn_ir_dim_str(g, g->arena, e, sizeof e));
        } else if (g->arena < 0) {
            jn_cli_json_null(j);
        } else {
            jn_cli_json_int(j, g->arena);
        }
        jn_cli_json_key(j, "ir");
        char *text = NULL;
        size_t len = 0;
        FILE *f = open_memstream(&text, &len);
        if (f && jn_ir_print_graph(m, g, f) == JN_OK && fclose(f) == 0) jn_cli_json_str(j, text);
        else {
            if (f) fclose(f);
            jn_cli_json_null(j);
        }
        free(text);
        jn_cli_json_end(j, '}');
    }
    jn_cli_json_end(j, ']');
    jn_cli_json_key(j, "sites");
    jn_cli_json_obj(j);
    for (int32_t i = 0; i < m->nsites; i++) {
        char id[32], where[PATH_MAX + 160];
        snprintf(id, sizeof id, "%lld", (long long)m->sites[i].id);
        snprintf(where, sizeof where, "%s:%d %s", m->sites[i].file, m->sites[i].line, m->sites[i].func);
        jn_cli_json_key(j, id);
        jn_cli_json_str(j, where);
    }
    jn_cli_json_end(j, '}');
}

static void emit_bundles(rctx *c) {
    jn_cli_json *j = &c->j;
    jn_db_bundle *list = NULL;
    int n = 0;
    if (jn_db_bundle_list(c->db, &list, &n) != JN_OK) {
        failed(c);
        return;
    }
    jn_cli_json_key(j, "bundles");
    jn_cli_json_arr(j);
    for (int i = 0; i < n; i++) {
        const jn_db_bundle *b = &list[i];
        jn_cli_json_obj(j);
        jn_cli_json_key(j, "id"); jn_cli_json_int(j, b->id);
        jn_cli_json_key(j, "target"); jn_cli_json_str(j, b->target);
        jn_cli_json_key(j, "created"); jn_cli_json_num(j, b->created);
        jn_cli_json_key(j, "bytes"); jn_cli_json_int(j, (int64_t)b->len);
        jn_cli_json_key(j, "stored_bytes"); jn_cli_json_int(j, (int64_t)b->stored_bytes);
        jn_cli_json_key(j, "source_runs"); jn_cli_json_str(j, b->source_runs);
        jn_cli_json_key(j, "source_steps"); jn_cli_json_int(j, b->source_steps);
        jn_cli_json_key(j, "janus_version"); jn_cli_json_str(j, b->janus_version);
        /* would this janus replay it here (the reason if not) */
        char why_not[1024] = "";
        jn_db_bundle full;
        if (jn_db_bundle_get_id(c->db, b->id, &full) != JN_OK) {
            snprintf(why_not, sizeof why_not, "%s", jn_errmsg());
        } else {
            char origin[64];
            snprintf(origin, sizeof origin, "bundle %lld", (long long)b->id);
            jn_cg_bundle_expect e = {.target = b->target, .origin = origin, .db_path = c->path};
            jn_cg_bundle *cb = NULL;
            if (jn_cg_bundle_load(full.data, full.len, &e, &cb) != JN_OK) snprintf(why_not, sizeof why_not, "%s", jn_errmsg());
            jn_cg_bundle_free(cb);
            jn_db_bundle_free(&full);
        }
        jn_cli_json_key(j, "usable"); jn_cli_json_raw(j, why_not[0] ? "false" : "true");
        jn_cli_json_key(j, "refused");
        if (why_not[0]) jn_cli_json_str(j, why_not);
        else jn_cli_json_null(j);
        const char *why = NULL;
        const jn_ir_module *m = bundle_module(c, b->id, &why);
        jn_cli_json_key(j, "graphs_note");
        if (m) {
            jn_cli_json_null(j);
            emit_bundle_graphs(c, m);
        } else {
            jn_cli_json_str(j, why);
            jn_cli_json_key(j, "graphs"); jn_cli_json_arr(j); jn_cli_json_end(j, ']');
        }
        /* what optimize said: the summary, the groups it left out and why */
        jn_db_note *notes = NULL;
        int nn = 0;
        if (jn_db_bundle_notes(c->db, b->id, &notes, &nn) != JN_OK) {
            failed(c);
        }
        jn_cli_json_key(j, "notes_stored"); jn_cli_json_raw(j, nn ? "true" : "false");
        jn_cli_json_key(j, "notes");
        jn_cli_json_arr(j);
        for (int k = 0; k < nn; k++) {
            jn_cli_json_obj(j);
            jn_cli_json_key(j, "kind"); jn_cli_json_str(j, notes[k].kind);
            jn_cli_json_key(j, "text"); jn_cli_json_str(j, notes[k].text);
            jn_cli_json_end(j, '}');
        }
        jn_cli_json_end(j, ']');
        jn_db_notes_free(notes, nn);
        /* the recording's proof per region (analyzer/regions.c), as inspect lists it */
        jn_db_region_verdict *v = NULL;
        int nv = 0;
        if (jn_db_region_verdicts(c->db, b->id, &v, &nv) != JN_OK) failed(c);
        jn_cli_json_key(j, "regions");
        jn_cli_json_verdicts(j, v, nv);
        jn_db_region_verdicts_free(v, nv);
        jn_cli_json_end(j, '}');
    }
    jn_cli_json_end(j, ']');
    jn_db_bundle_list_free(list, n);
}

/* ---------------------------------------------------------------- trace */

/* Microseconds to a tenth (the trace format's unit; shorter than %.17g). */
static void json_us(jn_cli_json *j, double seconds) {
    char b[48];
    snprintf(b, sizeof b, "%.1f", isfinite(seconds) ? seconds * 1e6 : 0.0);
    jn_cli_json_raw(j, b);
}

/* One complete event ("ph":"X"). */
static void trace_event(jn_cli_json *j, const char *name, const char *cat, double t, double dur, int64_t pid, int tid) {
    jn_cli_json_obj(j);
    jn_cli_json_key(j, "name"); jn_cli_json_str(j, name);
    jn_cli_json_key(j, "cat"); jn_cli_json_str(j, cat);
    jn_cli_json_key(j, "ph"); jn_cli_json_str(j, "X");
    jn_cli_json_key(j, "ts"); json_us(j, t);
    jn_cli_json_key(j, "dur"); json_us(j, dur);
    jn_cli_json_key(j, "pid"); jn_cli_json_int(j, pid);
    jn_cli_json_key(j, "tid"); jn_cli_json_int(j, tid);
}

static void trace_meta(jn_cli_json *j, const char *what, int64_t pid, int tid, const char *name) {
    jn_cli_json_obj(j);
    jn_cli_json_key(j, "name"); jn_cli_json_str(j, what);
    jn_cli_json_key(j, "ph"); jn_cli_json_str(j, "M");
    jn_cli_json_key(j, "ts"); jn_cli_json_int(j, 0);
    jn_cli_json_key(j, "dur"); jn_cli_json_int(j, 0);
    jn_cli_json_key(j, "pid"); jn_cli_json_int(j, pid);
    jn_cli_json_key(j, "tid"); jn_cli_json_int(j, tid);
    jn_cli_json_key(j, "args");
    jn_cli_json_obj(j);
    jn_cli_json_key(j, "name"); jn_cli_json_str(j, name);
    jn_cli_json_end(j, '}');
    jn_cli_json_end(j, '}');
}

enum { TID_STEPS = 1, TID_GRAPH = 2, TID_EAGER = 3 };

/* Every selected replay or eager run with stored steps becomes a process:
 * its steps, and (a replay) its stored segments on a compiled and an
 * eager track.  Returns the number of runs written (0: nothing to show). */
static int emit_trace(rctx *c, const jn_db_run_row *runs, int nruns) {
    jn_cli_json *j = &c->j;
    int shown = 0;
    jn_cli_json_obj(j);
    jn_cli_json_key(j, "displayTimeUnit"); jn_cli_json_str(j, "ms");
    jn_cli_json_key(j, "traceEvents");
    jn_cli_json_arr(j);
    for (int i = 0; i < nruns && !c->failed; i++) {
        const jn_db_run_row *r = &runs[i];
        if (!strcmp(r->kind, "record")) continue;
        jn_db_run_step *st = NULL;
        jn_db_segment *seg = NULL;
        int n = 0, nseg = 0;
        if (jn_db_run_steps(c->db, r->id, &st, &n) != JN_OK || jn_db_segments(c->db, r->id, &seg, &nseg) != JN_OK) {
            failed(c);
        } else if (n) {
            shown++;
            char name[96];
            snprintf(name, sizeof name, "run %lld (%s)", (long long)r->id, r->kind);
            trace_meta(j, "process_name", r->id, TID_STEPS, name);
            trace_meta(j, "thread_name", r->id, TID_STEPS, "steps");
            if (nseg) {
                trace_meta(j, "thread_name", r->id, TID_GRAPH, "compiled graphs");
                trace_meta(j, "thread_name", r->id, TID_EAGER, "eager");
            }
            for (int k = 0; k < n; k++) {
                char sn[64];
                if (!strcmp(st[k].kind, "tail")) snprintf(sn, sizeof sn, "after the last step");
                else snprintf(sn, sizeof sn, "step %lld", (long long)st[k].step);
                trace_event(j, sn, "step", st[k].started, st[k].duration, r->id, TID_STEPS);
                jn_cli_json_key(j, "args");
                jn_cli_json_obj(j);
                jn_cli_json_key(j, "segments"); jn_cli_json_int(j, st[k].segments);
                jn_cli_json_key(j, "hits"); jn_cli_json_int(j, st[k].hits);
                jn_cli_json_key(j, "graph_seconds"); jn_cli_json_num(j, st[k].graph_seconds);
                jn_cli_json_end(j, '}');
                jn_cli_json_end(j, '}');
            }
            for (int k = 0; k < nseg; k++) {
                const jn_db_segment *s = &seg[k];
                char sn[96];
                if (s->hit) snprintf(sn, sizeof sn, "%s", s->graph);
                else if (s->guard == JN_DB_MISS_CHOICE) snprintf(sn, sizeof sn, "eager (%s by choice)", s->graph);
                else if (s->graph[0]) snprintf(sn, sizeof sn, "eager (%s missed)", s->graph);
                else snprintf(sn, sizeof sn, "eager (no graph)");
                trace_event(j, sn, s->hit ? "graph" : "eager", s->started, s->duration, r->id,
                            s->hit ? TID_GRAPH : TID_EAGER);
                jn_cli_json_key(j, "args");
                jn_cli_json_obj(j);
                jn_cli_json_key(j, "step"); jn_cli_json_int(j, s->step);
                jn_cli_json_key(j, "ops"); jn_cli_json_int(j, s->ops);
                jn_cli_json_key(j, "graph"); jn_cli_json_str(j, s->graph);
                if (!s->hit) {
                    jn_cli_json_key(j, "guard");
                    jn_cli_json_int(j, s->guard);
                }
                jn_cli_json_end(j, '}');
                jn_cli_json_end(j, '}');
            }
        }
        jn_db_run_steps_free(st, n);
        jn_db_segments_free(seg, nseg);
    }
    jn_cli_json_end(j, ']');
    jn_cli_json_key(j, "otherData");
    jn_cli_json_obj(j);
    jn_cli_json_key(j, "store"); jn_cli_json_str(j, c->path);
    jn_cli_json_key(j, "segments_limit"); jn_cli_json_int(j, JN_DB_SEGMENTS_MAX);
    jn_cli_json_end(j, '}');
    jn_cli_json_end(j, '}');
    fputc('\n', j->f);
    return shown;
}

/* ------------------------------------------------------------- document */

static int selected(const int64_t *only, int nonly, int64_t id) {
    if (!nonly) return 1;
    for (int i = 0; i < nonly; i++)
        if (only[i] == id) return 1;
    return 0;
}

static void emit_document(rctx *c, const jn_db_run_row *runs, int nruns, int64_t store_bytes) {
    jn_cli_json *j = &c->j;
    jn_cli_json_obj(j);
    jn_cli_json_key(j, "janus_report"); jn_cli_json_int(j, 1);
    jn_cli_json_key(j, "path"); jn_cli_json_str(j, c->path);
    jn_cli_json_key(j, "store_bytes"); jn_cli_json_int(j, store_bytes);
    jn_cli_json_key(j, "schema_version"); jn_cli_json_int(j, jn_db_schema_version(c->db));
    jn_cli_json_key(j, "janus_version"); jn_cli_json_str(j, JANUS_VERSION);
    jn_cli_json_key(j, "generated"); jn_cli_json_num(j, jn_cli_now());
    jn_cli_json_key(j, "limits");
    jn_cli_json_obj(j);
    jn_cli_json_key(j, "steps"); jn_cli_json_int(j, JN_DB_STEPS_MAX);
    jn_cli_json_key(j, "segments"); jn_cli_json_int(j, JN_DB_SEGMENTS_MAX);
    jn_cli_json_end(j, '}');
    jn_cli_json_key(j, "runs");
    jn_cli_json_arr(j);
    for (int i = 0; i < nruns && !c->failed; i++) emit_run(c, &runs[i]);
    jn_cli_json_end(j, ']');
    if (!c->failed) emit_bundles(c);
    jn_cli_json_end(j, '}');
    fputc('\n', j->f);
}

/* Write the renderer and the data into a private folder and run it:
 * PYTHON DIR/report.py DIR/data.json OUT.  Returns the exit code. */
static int render_html(const char *json, size_t len, const char *out) {
    const char *py = NULL;
    if (jn_setting_str(JN_S_PYTHON, &py) != JN_OK) {
        fprintf(stderr, "janus report: %s\n", jn_errmsg());
        return 2;
    }
    if (!py || !py[0]) py = "python3";
    const char *tmp = getenv("TMPDIR");
    char dir[PATH_MAX], script[PATH_MAX + 16], data[PATH_MAX + 16];
    snprintf(dir, sizeof dir, "%s/janus-report-XXXXXX", tmp && *tmp ? tmp : "/tmp");
    if (!mkdtemp(dir)) {
        fprintf(stderr, "janus report: cannot make a temporary folder in %s: %s; set TMPDIR to a writable folder\n",
                tmp && *tmp ? tmp : "/tmp", strerror(errno));
        return 1;
    }
    snprintf(script, sizeof script, "%s/report.py", dir);
    snprintf(data, sizeof data, "%s/data.json", dir);
    int rc = 1;
    FILE *f = fopen(script, "w");
    int bad = !f || fputs(jn_cli_report_py, f) < 0;
    if (f && fclose(f)) bad = 1;
    f = bad ? NULL : fopen(data, "w");
    bad |= !f || fwrite(json, 1, len, f) != len;
    if (f && fclose(f)) bad = 1;
    if (bad) {
        fprintf(stderr, "janus report: cannot write to the temporary folder %s: %s\n", dir, strerror(errno));
    } else {
        char *argv[] = {(char *)py, script, data, "-o", (char *)out, NULL};
        const char *status;
        rc = jn_cli_spawn_wait("report", argv, &status);
        if (rc == 127)
            fprintf(stderr, "janus report: the page is rendered by Python: install python3 or set JANUS_PYTHON "
                            "(`janus report --json` needs no Python)\n");
    }
    unlink(script);
    unlink(data);
    rmdir(dir);
    return rc;
}

/* "--run 3", "--run=3", "--run 2,3": appends to *only.  0, or -1 (printed). */
static int parse_runs(const char *v, int64_t **only, int *n) {
    const char *p = v;
    while (p && *p) {
        char *end = NULL;
        long long id = strtoll(p, &end, 10);
        if (end == p || id <= 0 || (*end && *end != ',')) {
            fprintf(stderr, "janus report: --run needs positive run ids (N or N,M,...), not '%s'\n\n%s", v,
                    jn_cli_report_usage);
            return -1;
        }
        int64_t *a = realloc(*only, sizeof *a * (size_t)(*n + 1));
        if (!a) {
            fprintf(stderr, "janus report: out of memory\n");
            return -1;
        }
        *only = a;
        a[(*n)++] = id;
        p = *end ? end + 1 : end;
    }
    if (!v || !*v) {
        fprintf(stderr, "janus report: --run needs a run id\n\n%s", jn_cli_report_usage);
        return -1;
    }
    return 0;
}

int jn_cli_report(int argc, char **argv) {
    const char *path = NULL, *out = NULL, *trace = NULL;
    int json = 0, rc = 2;
    int64_t *only = NULL;
    int nonly = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            fputs(jn_cli_report_usage, stdout);
            free(only);
            return 0;
        }
        if (!strcmp(a, "--json")) { json = 1; continue; }
        const char *v = NULL;
        if (!strcmp(a, "-o") || !strcmp(a, "--trace") || !strcmp(a, "--run")) {
            if (i + 1 >= argc) {
                fprintf(stderr, "janus report: %s needs a value\n\n%s", a, jn_cli_report_usage);
                goto done;
            }
            v = argv[++i];
        } else if (!strncmp(a, "--run=", 6) || !strncmp(a, "--trace=", 8)) {
            v = strchr(a, '=') + 1;
        }
        if (v && (!strcmp(a, "-o"))) { out = v; continue; }
        if (v && !strncmp(a, "--trace", 7)) { trace = v; continue; }
        if (v && !strncmp(a, "--run", 5)) {
            if (parse_runs(v, &only, &nonly)) goto done;
            continue;
        }
        if (a[0] == '-' && a[1]) {
            fprintf(stderr, "janus report: unknown option '%s'\n\n%s", a, jn_cli_report_usage);
            goto done;
        }
        if (path) {
            fprintf(stderr, "janus report: one PATH only (got '%s' and '%s')\n\n%s", path, a, jn_cli_report_usage);
            goto done;
        }
        path = a;
    }
    if (!path) {
        fprintf(stderr, "janus report: no PATH given\n\n%s", jn_cli_report_usage);
        goto done;
    }
    if (trace && (json || out)) {
        fprintf(stderr, "janus report: --trace writes its own file; it does not combine with --json or -o\n\n%s",
                jn_cli_report_usage);
        goto done;
    }
    if ((trace && !*trace) || (out && !*out)) {
        fprintf(stderr, "janus report: an empty file name\n\n%s", jn_cli_report_usage);
        goto done;
    }
    rc = 1;
    struct stat sb;
    if (stat(path, &sb) != 0) {
        fprintf(stderr, "janus report: %s does not exist; record one with `janus record --db %s -- python3 train.py`\n",
                path, path);
        goto done;
    }
    rctx c;
    memset(&c, 0, sizeof c);
    c.path = path;
    if (jn_db_open(path, JN_DB_READONLY, &c.db) != JN_OK) {
        fprintf(stderr, "janus report: %s\n", jn_errmsg());
        goto done;
    }
    jn_db_run_row *all = NULL, *runs = NULL;
    int nall = 0, nruns = 0;
    char *doc = NULL;
    size_t len = 0;
    FILE *mem = NULL;
    if (jn_db_read_begin(c.db) != JN_OK || jn_db_runs(c.db, 0, &all, &nall) != JN_OK) {
        failed(&c);
        goto close;
    }
    /* the selected runs, in id order; an id the store lacks is an error */
    runs = calloc((size_t)nall + 1, sizeof *runs);
    for (int i = 0; runs && i < nall; i++)
        if (selected(only, nonly, all[i].id)) runs[nruns++] = all[i];
    for (int k = 0; k < nonly; k++) {
        int found = 0;
        for (int i = 0; i < nall; i++) found |= all[i].id == only[k];
        if (!found) {
            fprintf(stderr, "janus report: %s has no run %lld (`janus inspect %s` lists them)\n", path,
                    (long long)only[k], path);
            c.failed = 1;
        }
    }
    if (c.failed || !runs) goto close;
    if (trace) {
        FILE *f = fopen(trace, "w");
        if (!f) {
            fprintf(stderr, "janus report: cannot write %s: %s\n", trace, strerror(errno));
            c.failed = 1;
            goto close;
        }
        jn_cli_json_init(&c.j, f);
        int shown = emit_trace(&c, runs, nruns);
        if (fclose(f) != 0 && !c.failed) {
            fprintf(stderr, "janus report: cannot write %s: %s\n", trace, strerror(errno));
            c.failed = 1;
        }
        if (!c.failed && !shown)
            fprintf(stderr, "janus report: %s: no replay or eager run with stored step times (run `janus replay`); "
                            "the trace is empty\n", trace);
        else if (!c.failed)
            fprintf(stderr, "janus report: wrote %s (open it in ui.perfetto.dev or chrome://tracing)\n", trace);
        goto close;
    }
    mem = open_memstream(&doc, &len);
    if (!mem) {
        fprintf(stderr, "janus report: out of memory\n");
        c.failed = 1;
        goto close;
    }
    jn_cli_json_init(&c.j, mem);
    emit_document(&c, runs, nruns, (int64_t)sb.st_size);
    if (fclose(mem) != 0) c.failed = 1;
    mem = NULL;
    if (c.failed) goto close;
    if (json) {
        FILE *f = out ? fopen(out, "w") : stdout;
        if (!f || fwrite(doc, 1, len, f) != len || (out && fclose(f) != 0)) {
            fprintf(stderr, "janus report: cannot write %s: %s\n", out ? out : "stdout", strerror(errno));
            c.failed = 1;
        }
        goto close;
    }
    /* the page: rendered from the document, outside the read transaction */
    jn_db_read_end(c.db);
    int hrc = render_html(doc, len, out ? out : "report.html");
    if (hrc) c.failed = 1;
    rc = hrc;
close:
    if (c.failed && rc == 0) rc = 1;
    else if (!c.failed) rc = 0;
    free(doc);
    free(runs);
    jn_db_runs_free(all, nall);
    for (int i = 0; i < c.nbm; i++) {
        jn_ir_module_free(c.bm[i].m);
        free(c.bm[i].why);
    }
    free(c.bm);
    jn_db_read_end(c.db);
    jn_db_close(c.db);
done:
    free(only);
    return rc;
}
