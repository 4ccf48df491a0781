/* report.c -- what a replay tells: its misses (each reason counted once
 * per graph, guard and token), its extrapolated hits (hits past a SEEN
 * guard's recorded range, per graph and per guard with the values seen),
 * the counters, the one-line summary, and the counters written to the
 * store at the end (replay_graphs, replay_misses, replay_extrap through
 * jn_db_replay_put, the regions' counters, then the timeline's steps and
 * segments), with cuDNN's
 * algorithm choices after a CUDA replay.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "jn_algos.h"
#include "jn_db.h"
#include "jn_region.h"
#include "rp_internal.h"

void rp_note_miss(jn_replay *R, int32_t graph, int32_t guard, int32_t token, double seen, const char *why) {
    R->misses++;
    if (graph >= 0 && R->g) R->g[graph].misses++;
    rp_tl_miss(&R->tl, graph, guard);
    for (int i = 0; i < R->nmiss; i++) {
        rp_miss *r = &R->miss[i];
        if (r->graph == graph && r->guard == guard && r->token == token && (guard >= 0 || !strcmp(r->why, why))) {
            r->count++;
            if (seen < r->lo || isnan(r->lo)) r->lo = seen;
            if (seen > r->hi || isnan(r->hi)) r->hi = seen;
            return;
        }
    }
    if (R->nmiss == R->capmiss) {
        int cap = R->capmiss ? 2 * R->capmiss : 16;
        rp_miss *n = realloc(R->miss, sizeof *n * (size_t)cap);
        if (!n) return;
        R->miss = n;
        R->capmiss = cap;
    }
    rp_miss *r = &R->miss[R->nmiss];
    char site[512] = "";
    if (graph >= 0 && guard >= 0 && guard < R->m->graphs[graph]->nguards) {
        const jn_ir_site *s = jn_ir_site_get(R->m, R->m->graphs[graph]->guards[guard].site);
        if (s) snprintf(site, sizeof site, "%s:%d", s->file, s->line);
    }
    r->why = strdup(why ? why : "");
    r->site = strdup(site);
    if (!r->why || !r->site) {
        free(r->why);
        free(r->site);
        return;
    }
    r->graph = graph, r->guard = guard, r->token = token, r->seen = r->lo = r->hi = seen, r->count = 1;
    R->nmiss++;
}

void rp_note_extrap(jn_replay *R, int32_t graph, const jn_rp_match_extrap *x, int32_t n) {
    R->extrapolated++;
    R->g[graph].extrap++;
    for (int32_t k = 0; k < n; k++) {
        rp_extrap *e = NULL;
        for (int i = 0; i < R->nxp && !e; i++)
            if (R->xp[i].graph == graph && R->xp[i].guard == x[k].guard) e = &R->xp[i];
        if (!e) {
            if (R->nxp == R->capxp) {
                int cap = R->capxp ? 2 * R->capxp : 16;
                rp_extrap *p = realloc(R->xp, sizeof *p * (size_t)cap);
                if (!p) return; /* the per-guard detail is lost, the counts are not */
                R->xp = p;
                R->capxp = cap;
            }
            e = &R->xp[R->nxp++];
            *e = (rp_extrap){graph, x[k].guard, x[k].seen, x[k].seen, 0};
        }
        if (x[k].seen < e->smin) e->smin = x[k].seen;
        if (x[k].seen > e->smax) e->smax = x[k].seen;
        e->count++;
    }
}

jn_status rp_lost_error(const jn_tensor *t) {
    char sh[128];
    return jn_error(JN_ERR_RUNTIME,
                    "janus replay: a tensor of shape %s was computed inside a compiled graph that does not keep it "
                    "(the recorded runs never read it again) and this run reads it; record a run that reads it "
                    "(`janus record`, `janus optimize`) or run eagerly with JANUS_REPLAY=0",
                    jn_shape_str(t->ndim, t->shape, sh, sizeof sh));
}

jn_status rp_strict_error(const char *why) {
    return jn_error(JN_ERR_RUNTIME, "janus replay (strict): fell back to eager: %s", why);
}

void rp_miss_free(jn_replay *R) {
    for (int i = 0; i < R->nmiss; i++) free(R->miss[i].why), free(R->miss[i].site);
    free(R->miss);
    R->miss = NULL;
    R->nmiss = R->capmiss = 0;
    free(R->xp);
    R->xp = NULL;
    R->nxp = R->capxp = 0;
}

/* The end's line: the summary, or (`janus replay` prints the counters'
 * line itself) how the GPU ran the graphs, known only here. */
void rp_print_end(const jn_replay *R, int print_summary) {
    if (print_summary) {
        char line[2048];
        jn_rp_summary(R, line, sizeof line);
        fprintf(stderr, "%s\n", line);
        fflush(stderr);
    } else if (R->cg) {
        jn_ex_cuda_graphs_stats cs;
        jn_ex_cuda_graphs_get_stats(R->cg, &cs);
        fprintf(stderr, "janus replay: graphs on cuda:0 as CUDA Graphs: %lld replays, %lld captures, %lld updates%s%s\n",
                (long long)cs.replays, (long long)cs.captures, (long long)cs.updates,
                cs.plain_runs ? "; plain launches: " : "", cs.plain_runs ? cs.plain_reason : "");
        fflush(stderr);
    }
}

void jn_rp_get_stats(const jn_replay *R, jn_rp_stats *st) {
    memset(st, 0, sizeof *st);
    st->segments = R->segments;
    st->hits = R->hits;
    st->extrapolated = R->extrapolated;
    st->misses = R->misses;
    st->sliced = R->sliced;
    st->ngraphs = R->m ? R->m->ngraphs : 0;
    st->chosen = R->chosen;
    for (int32_t i = 0; R->g && i < st->ngraphs; i++) {
        st->graphs_eager += R->g[i].ad.state == AD_EAGER;
        st->graphs_hit += R->g[i].hits > 0;
        st->seconds += R->g[i].seconds;
    }
    st->device = R->dev;
    rp_bw_totals bw;
    rp_bw_counts(R, &bw);
    st->bw_calls = bw.calls, st->bw_skipped = bw.skipped, st->bw_learned = bw.learned;
    st->bw_declined = bw.declined, st->bw_fallbacks = bw.fallbacks;
    if (R->cg) {
        jn_ex_cuda_graphs_stats cs;
        jn_ex_cuda_graphs_get_stats(R->cg, &cs);
        st->cuda_replays = cs.replays, st->cuda_captures = cs.captures, st->cuda_updates = cs.updates;
        st->cuda_plain_runs = cs.plain_runs;
    }
}

static int top_miss(const jn_replay *R, int rank) {
    /* rank-th by count (ties: first seen) */
    int chosen[8], nc = 0;
    for (int r = 0; r <= rank && r < 8; r++) {
        int best = -1;
        for (int i = 0; i < R->nmiss; i++) {
            int used = 0;
            for (int c = 0; c < nc; c++) used |= chosen[c] == i;
            if (!used && (best < 0 || R->miss[i].count > R->miss[best].count)) best = i;
        }
        if (best < 0) return -1;
        chosen[nc++] = best;
    }
    return rank < 8 ? chosen[rank] : -1;
}

const char *jn_rp_miss(const jn_replay *R, int i, int64_t *count) {
    int k = top_miss(R, i);
    if (k < 0) return NULL;
    if (count) *count = R->miss[k].count;
    return R->miss[k].why;
}

static void commas(int64_t v, char *buf, size_t n) {
    char raw[32];
    snprintf(raw, sizeof raw, "%lld", (long long)v);
    size_t len = strlen(raw), j = 0;
    for (size_t i = 0; i < len && j + 1 < n; i++) {
        if (i && (len - i) % 3 == 0 && j + 2 < n) buf[j++] = ',';
        buf[j++] = raw[i];
    }
    buf[j] = 0;
}

void jn_rp_summary(const jn_replay *R, char *buf, size_t n) {
    jn_rp_stats st;
    jn_rp_get_stats(R, &st);
    char seg[32], fb[32];
    commas(st.segments, seg, sizeof seg);
    commas(st.misses, fb, sizeof fb);
    double pct = st.segments ? 100.0 * (double)st.hits / (double)st.segments : 0;
    int k = top_miss(R, 0);
    char gpu[600] = "";
    if (R->cg) { /* what the GPU's graph runs were: launched captures, new captures, plain launches */
        jn_ex_cuda_graphs_stats cs;
        jn_ex_cuda_graphs_get_stats(R->cg, &cs);
        snprintf(gpu, sizeof gpu, " on cuda:0 (CUDA Graphs: %lld replays, %lld captures, %lld updates%s%s)",
                 (long long)cs.replays, (long long)cs.captures, (long long)cs.updates,
                 cs.plain_runs ? "; plain launches: " : "", cs.plain_runs ? cs.plain_reason : "");
    }
    char ch[128] = "";
    if (st.chosen) { /* what adapt chose is no guard's miss */
        char c[32];
        commas(st.chosen, c, sizeof c);
        snprintf(ch, sizeof ch, " (%s by choice: %lld graph%s slower than eager left to it, and timing runs)", c,
                 (long long)st.graphs_eager, st.graphs_eager == 1 ? "" : "s");
    }
    char xp[64] = "";
    if (st.extrapolated) { /* hits past the recorded ranges: SEEN guards, no miss */
        char x[32];
        commas(st.extrapolated, x, sizeof x);
        snprintf(xp, sizeof xp, "; %s past the recorded ranges", x);
    }
    char rg[1200];
    rp_region_summary(R, rg, sizeof rg);
    snprintf(buf, n, "janus replay: %.0f%% of %s segments ran as compiled graphs (%lld graph%s%s)%s, %s fell back%s%s%s%s",
             floor(pct), seg, (long long)st.graphs_hit, st.graphs_hit == 1 ? "" : "s", xp, gpu, fb, ch,
             k >= 0 ? "; top miss: " : "", k >= 0 ? R->miss[k].why : "", rg);
}

/* The regions' counters (schema v10): per region its calls and those run
 * without their Python, and why the others ran it. */
static jn_status rp_write_regions(jn_replay *R, jn_db *db) {
    jn_rp_region_stats st;
    jn_rp_region_get_stats(R, &st);
    if (!st.nregions) return JN_OK;
    int nw = 0;
    const char *reg;
    int64_t cnt;
    while (jn_rp_region_reason_at(R, nw, &reg, &cnt)) nw++;
    jn_db_region_replay *rows = calloc((size_t)st.nregions, sizeof *rows);
    jn_db_region_replay_reason *why = calloc((size_t)nw + 1, sizeof *why);
    jn_status s = JN_OK;
    if (!rows || !why) {
        s = jn_error(JN_ERR_NOMEM, "out of memory");
    } else {
        for (int i = 0; i < st.nregions; i++)
            rows[i].region = jn_rp_region_info(R, i, &rows[i].calls, &rows[i].replaced, &rows[i].refused);
        for (int i = 0; i < nw; i++) why[i].reason = jn_rp_region_reason_at(R, i, &why[i].region, &why[i].count);
        s = jn_db_region_replays_put(db, R->run_id, rows, st.nregions, why, nw);
    }
    free(rows);
    free(why);
    return s;
}

/* The backward skip's counters (schema v11): the totals and, per place and
 * reason, the calls not skipped or run after all; nothing when no backward
 * was seen (a script without one stores no row). */
static jn_status rp_write_backward(jn_replay *R, jn_db *db) {
    rp_bw_totals t;
    rp_bw_counts(R, &t);
    if (!t.calls) return JN_OK;
    int n = 0;
    jn_rp_bw_row row;
    while (jn_rp_bw_row_at(R, n, &row)) n++;
    jn_db_replay_backward_reason *why = calloc((size_t)n + 1, sizeof *why);
    if (!why) return jn_error(JN_ERR_NOMEM, "out of memory");
    for (int i = 0; i < n; i++) {
        jn_rp_bw_row_at(R, i, &row);
        why[i] = (jn_db_replay_backward_reason){row.graph, row.name, row.words, row.token, row.fallback, row.count};
    }
    jn_db_replay_backward_totals tot = {t.calls, t.skipped, t.learned, t.declined, t.fallbacks};
    jn_status s = jn_db_replay_backward_put(db, R->run_id, &tot, why, n);
    free(why);
    return s;
}

/* At the end: the counters (run_id > 0) and, after a CUDA replay, cuDNN's
 * algorithm choices (jn_algos.h), in one opening of the store.  They are
 * separate transactions: a failure to save the choices loses no counter,
 * and each failure is said on stderr with its reason. */
void rp_write_counters(jn_replay *R) {
    int algos = R->dev == JN_CUDA;
    if ((R->run_id <= 0 && !algos) || !R->db_path) return;
    jn_db *db = NULL;
    if (jn_db_open(R->db_path, JN_DB_WRITE, &db)) {
        fprintf(stderr, "janus replay: could not write the %s to %s: %s\n",
                R->run_id > 0 ? "counters" : "cuDNN algorithm choices", R->db_path, jn_errmsg());
        return;
    }
    if (R->run_id > 0) {
        int ng = R->m->ngraphs;
        jn_db_replay_graph *gr = calloc((size_t)ng + 1, sizeof *gr);
        jn_db_replay_miss *mr = calloc((size_t)R->nmiss + 1, sizeof *mr);
        jn_db_replay_extrap *xr = calloc((size_t)R->nxp + 1, sizeof *xr);
        char (*xwhy)[512] = calloc((size_t)R->nxp + 1, sizeof *xwhy);
        char (*xsite)[512] = calloc((size_t)R->nxp + 1, sizeof *xsite);
        jn_status s = !gr || !mr || !xr || !xwhy || !xsite ? jn_error(JN_ERR_NOMEM, "out of memory") : JN_OK;
        if (s == JN_OK) {
            for (int i = 0; i < ng; i++)
                gr[i] = (jn_db_replay_graph){R->m->graphs[i]->name, R->g[i].hits, R->g[i].misses, R->g[i].seconds,
                                             R->g[i].extrap};
            for (int i = 0; i < R->nxp; i++) { /* the guard's sentence without a value: kind, target, range */
                const rp_extrap *e = &R->xp[i];
                const jn_ir_graph *G = R->m->graphs[e->graph];
                const jn_ir_guard *q = &G->guards[e->guard];
                const jn_ir_site *st = jn_ir_site_get(R->m, q->site);
                jn_ir_guard_explain(R->m, G, e->guard, NULL, xwhy[i], sizeof xwhy[i]);
                if (st) snprintf(xsite[i], sizeof xsite[i], "%s:%d", st->file, st->line);
                xr[i] = (jn_db_replay_extrap){G->name, e->guard, xwhy[i], xsite[i], (double)q->lo, (double)q->hi,
                                              e->smin, e->smax, e->count};
            }
            for (int i = 0; i < R->nmiss; i++) {
                const rp_miss *r = &R->miss[i];
                mr[i] = (jn_db_replay_miss){.graph = r->graph >= 0 ? R->m->graphs[r->graph]->name : "",
                                            .guard = r->guard, .reason = r->why, .site = r->site, .seen = r->seen,
                                            .count = r->count, .has_range = !isnan(r->lo), .seen_min = r->lo,
                                            .seen_max = r->hi};
            }
            s = jn_db_replay_put(db, R->run_id, gr, ng, mr, R->nmiss, xr, R->nxp);
            if (!s) s = rp_write_regions(R, db);
            if (!s) s = rp_write_backward(R, db);
            if (!s) s = rp_tl_write(&R->tl, db, R->run_id, R->m, jn_rt_seconds());
        }
        if (s) fprintf(stderr, "janus replay: could not write the counters to %s: %s\n", R->db_path, jn_errmsg());
        free(gr);
        free(mr);
        free(xr);
        free(xwhy);
        free(xsite);
    }
    if (algos) {
        int n = 0;
        jn_status s = R->algos_dev[0] ? jn_ex_cuda_algos_save_for(db, R->algos_dev, &n) : jn_ex_cuda_algos_save(db, &n);
        if (s)
            fprintf(stderr, "janus replay: could not save the cuDNN algorithm choices to %s (the next run chooses "
                    "them again): %s\n", R->db_path, jn_errmsg());
    }
    jn_db_close(db);
}

const char *jn_rp_bw_reason(const jn_replay *R, int i, int64_t *count) { return rp_bw_reason(R, i, count); }

int jn_rp_bw_row_at(const jn_replay *R, int i, jn_rp_bw_row *row) {
    int32_t g, token;
    int why;
    int64_t count;
    if (!rp_bw_row(R, i, &g, &token, &why, &count)) return 0;
    *row = (jn_rp_bw_row){g >= 0 && R->m && g < R->m->ngraphs ? R->m->graphs[g]->name : "", rp_bw_why_name(why),
                          rp_bw_why_words(why), g >= 0 ? token : -1, rp_bw_why_fell(why), count};
    return 1;
}
