/* jn_timeline.h -- what a replay did over time, for `janus report`: per
 * step its time and how much of it ran in graphs, per graph the wall time
 * of its segments compiled and eagerly, and the first segments one by one
 * (a trace).  Private to replay/ (prefix jn_rp_tl_).
 *
 * replay.c feeds it at five places and nothing else: a segment boundary
 * (jn_rp_tl_boundary, from seg_begin: a step boundary or a sync), a graph
 * run (jn_rp_tl_hit), a miss (jn_rp_tl_miss, from note_miss), the pending
 * ops a fallback runs eagerly (jn_rp_tl_fallback) and each op dispatched
 * eagerly outside capture (jn_rp_tl_eager_op, from the dispatch hook).  A
 * timeline segment is the time from one boundary to the next (Python
 * included), so a graph's compiled and eager segments compare like for
 * like.  At exit jn_rp_tl_write stores the steps, segments and per-graph
 * times through db/ (jn_db_run_steps_put, jn_db_segments_put, both
 * bounded (jn_db.h), and jn_db_graph_times_put).
 * Memory: one row per step and per segment up to those bounds, then sums
 * only.
 */
#ifndef JN_TIMELINE_H
#define JN_TIMELINE_H

#include <stdint.h>

#include "jn_db.h"
#include "jn_ir.h"

typedef struct {
    int64_t step;
    double started, duration;
    int32_t graph, guard;
    int hit;
    int64_t ops;
} jn_rp_tl_seg;

typedef struct {
    int64_t ops, eager_segments, eager_ops;
    double wall, eager_wall;
    double seconds_seen;         /* the graph's executor seconds at its last hit */
} jn_rp_tl_graph;

typedef struct {
    int on;
    double t0;                   /* the replay's start: steps count from here */
    double seg_t;                /* the current segment's start */
    int32_t seg_graph, seg_guard;
    int seg_hit, seg_missed;
    int64_t seg_ops;
    int64_t fallback_id;         /* the last op a fallback ran (its dispatch hook call is not counted again) */
    jn_db_run_step cur;          /* the step being run */
    jn_db_run_step *steps;
    int nsteps, capsteps;
    jn_rp_tl_seg *segs;
    int nsegs, capsegs;
    int64_t seq;                 /* segments seen (stored or not) */
    jn_rp_tl_graph *g;
    int32_t ngraphs;
} jn_rp_timeline;

/* Start (now: the replay's start, CLOCK_MONOTONIC seconds); -1 when out
 * of memory (the replay goes on without a timeline). */
int jn_rp_tl_begin(jn_rp_timeline *t, int32_t ngraphs, double now);
/* The current segment ends (and with step_end, the current step). */
void jn_rp_tl_boundary(jn_rp_timeline *t, int step_end, double now);
/* The segment ran as graph g: nops ops, and g's executor seconds so far. */
void jn_rp_tl_hit(jn_rp_timeline *t, int32_t graph, int64_t nops, double graph_seconds);
/* The segment missed (graph -1: none stood for it; guard as the miss rows). */
void jn_rp_tl_miss(jn_rp_timeline *t, int32_t graph, int32_t guard);
/* A fallback ran nops pending ops eagerly; last_id is the first output id
 * of the last one (the dispatch hook sees that op once more). */
void jn_rp_tl_fallback(jn_rp_timeline *t, int64_t nops, int64_t last_id);
/* An op ran eagerly outside capture (out_id: its first output's id). */
void jn_rp_tl_eager_op(jn_rp_timeline *t, int64_t out_id);
/* Close the last segment and the tail, store the steps, segments and
 * graph times of run in db (graph names from m).  The status of the first failing write. */
jn_status jn_rp_tl_write(jn_rp_timeline *t, jn_db *db, int64_t run, const jn_ir_module *m, double now);
void jn_rp_tl_free(jn_rp_timeline *t);

#endif
