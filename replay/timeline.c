/* timeline.c -- what a replay did over time (rp_timeline.h): steps, the
 * first segments, and per graph the wall time of its segments compiled and
 * eagerly, kept while the replay runs and stored at its exit.
 *
 * Cheap on the hot paths: an eager op is an increment, a boundary appends
 * at most two rows to arrays grown by doubling (bounded by
 * JN_DB_STEPS_MAX / JN_DB_SEGMENTS_MAX; past those only sums go on).
 */
#include "rp_timeline.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static void seg_reset(rp_timeline *t, double now) {
    t->seg_t = now;
    t->seg_graph = -1;
    t->seg_guard = -1;
    t->seg_hit = t->seg_missed = 0;
    t->seg_ops = 0;
}

static void step_reset(rp_timeline *t, int64_t step, double now) {
    memset(&t->cur, 0, sizeof t->cur);
    t->cur.step = step;
    t->cur.kind = "step";
    t->cur.started = now - t->t0;
}

int rp_tl_begin(rp_timeline *t, int32_t ngraphs, double now) {
    memset(t, 0, sizeof *t);
    t->g = calloc((size_t)ngraphs + 1, sizeof *t->g);
    if (!t->g) return -1;
    t->ngraphs = ngraphs;
    t->t0 = now;
    t->fallback_id = -1;
    seg_reset(t, now);
    step_reset(t, 1, now);
    t->on = 1;
    return 0;
}

/* Room for one more element in *arr of *cap, up to max; 0 = none. */
static int room(void **arr, int len, int *cap, int max, size_t sz) {
    if (len >= max) return 0;
    if (len < *cap) return 1;
    int nc = *cap ? 2 * *cap : 256;
    if (nc > max) nc = max;
    void *p = realloc(*arr, (size_t)nc * sz);
    if (!p) return 0;
    *arr = p;
    *cap = nc;
    return 1;
}

void rp_tl_boundary(rp_timeline *t, int step_end, double now) {
    if (!t->on) return;
    /* an empty segment (a sync right after another, no op between) is no segment */
    if (t->seg_ops > 0 || t->seg_hit || t->seg_missed) {
        double d = now - t->seg_t;
        if (t->seg_graph >= 0 && t->seg_graph < t->ngraphs) {
            rp_tl_graph *g = &t->g[t->seg_graph];
            if (t->seg_hit) g->wall += d;
            else g->eager_segments++, g->eager_wall += d, g->eager_ops += t->seg_ops;
        }
        t->cur.segments++;
        if (room((void **)&t->segs, t->nsegs, &t->capsegs, JN_DB_SEGMENTS_MAX, sizeof *t->segs))
            t->segs[t->nsegs++] = (rp_tl_seg){t->cur.step, t->seg_t - t->t0, d, t->seg_graph,
                                                 t->seg_hit ? -1 : t->seg_guard, t->seg_hit, t->seg_ops};
        t->seq++;
    }
    seg_reset(t, now);
    if (!step_end) return;
    t->cur.duration = now - t->t0 - t->cur.started;
    if (room((void **)&t->steps, t->nsteps, &t->capsteps, JN_DB_STEPS_MAX, sizeof *t->steps))
        t->steps[t->nsteps++] = t->cur;
    step_reset(t, t->cur.step + 1, now);
}

void rp_tl_hit(rp_timeline *t, int32_t graph, int64_t nops, double graph_seconds) {
    if (!t->on || graph < 0 || graph >= t->ngraphs) return;
    rp_tl_graph *g = &t->g[graph];
    t->seg_graph = graph;
    t->seg_hit = 1;
    t->seg_ops += nops;
    t->cur.hits++;
    t->cur.graph_ops += nops;
    t->cur.graph_seconds += graph_seconds - g->seconds_seen;
    g->seconds_seen = graph_seconds;
    g->ops += nops;
}

void rp_tl_miss(rp_timeline *t, int32_t graph, int32_t guard) {
    if (!t->on || t->seg_hit || t->seg_missed) return; /* the first miss explains the segment */
    t->seg_missed = 1;
    t->seg_graph = graph;
    t->seg_guard = guard;
}

void rp_tl_fallback(rp_timeline *t, int64_t nops, int64_t last_id) {
    if (!t->on || nops <= 0) return;
    t->seg_ops += nops;
    t->cur.eager_ops += nops;
    t->fallback_id = last_id;
}

void rp_tl_eager_op(rp_timeline *t, int64_t out_id) {
    if (!t->on) return;
    if (out_id >= 0 && out_id == t->fallback_id) { /* the fallback counted it */
        t->fallback_id = -1;
        return;
    }
    t->seg_ops++;
    t->cur.eager_ops++;
}

jn_status rp_tl_write(rp_timeline *t, jn_db *db, int64_t run, const jn_ir_module *m, double now) {
    if (!t->on) return JN_OK;
    /* what ran after the last step boundary: the last segment and the tail */
    rp_tl_boundary(t, 0, now);
    if (now > t->t0 + t->cur.started) {
        t->cur.kind = "tail";
        t->cur.duration = now - t->t0 - t->cur.started;
        if (room((void **)&t->steps, t->nsteps, &t->capsteps, JN_DB_STEPS_MAX, sizeof *t->steps))
            t->steps[t->nsteps++] = t->cur;
        step_reset(t, t->cur.step + 1, now);
    }
    jn_status s = jn_db_run_steps_put(db, run, t->steps, t->nsteps);
    if (s) return s;
    jn_db_segment *rows = calloc((size_t)t->nsegs + 1, sizeof *rows);
    if (!rows) return jn_error(JN_ERR_NOMEM, "out of memory storing the replay's segments");
    for (int i = 0; i < t->nsegs; i++) {
        const rp_tl_seg *g = &t->segs[i];
        const char *name = m && g->graph >= 0 && g->graph < m->ngraphs ? m->graphs[g->graph]->name : "";
        rows[i] = (jn_db_segment){i, g->step, g->started, g->duration, name, g->hit, g->guard, g->ops};
    }
    s = jn_db_segments_put(db, run, rows, t->nsegs);
    free(rows);
    if (s || !m) return s;
    jn_db_graph_times *gt = calloc((size_t)t->ngraphs + 1, sizeof *gt);
    if (!gt) return jn_error(JN_ERR_NOMEM, "out of memory storing the replay's graph times");
    int32_t n = t->ngraphs < m->ngraphs ? t->ngraphs : m->ngraphs;
    for (int32_t i = 0; i < n; i++) {
        const rp_tl_graph *g = &t->g[i];
        gt[i] = (jn_db_graph_times){m->graphs[i]->name, g->ops, g->wall, g->eager_segments, g->eager_wall, g->eager_ops};
    }
    s = jn_db_graph_times_put(db, run, gt, n);
    free(gt);
    return s;
}

void rp_tl_free(rp_timeline *t) {
    free(t->steps);
    free(t->segs);
    free(t->g);
    memset(t, 0, sizeof *t);
}
