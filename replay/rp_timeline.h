/* rp_timeline.h -- what a replay did over time, for `janus report`: per
 * step its time and how much of it ran in graphs, per graph the wall time
 * of its segments compiled and eagerly, and the first segments one by one
 * (a trace).  Private to replay/ (prefix rp_tl_).
 *
 * The replay object (jn_replay.tl, rp_internal.h) feeds it at five places
 * and nothing else: a segment boundary (rp_tl_boundary, from replay.c's
 * seg_begin: a step boundary or a sync), a graph run (rp_tl_hit, replay.c),
 * a miss (rp_tl_miss, from report.c's rp_note_miss), the pending ops a
 * fallback runs eagerly (rp_tl_fallback, capture.c) and each op dispatched
 * eagerly outside capture (rp_tl_eager_op, from adapt.c's dispatch hook).  A
 * timeline segment is the time from one boundary to the next (Python
 * included), so a graph's compiled and eager segments compare like for
 * like.  At exit rp_tl_write stores the steps, segments and per-graph
 * times through db/ (jn_db_run_steps_put, jn_db_segments_put, both
 * bounded (jn_db.h), and jn_db_graph_times_put).
 * Memory: one row per step and per segment up to those bounds, then sums
 * only.
 */
#ifndef RP_TIMELINE_H
#define RP_TIMELINE_H

#include <stdint.h>

#include "jn_db.h"
#include "jn_ir.h"

typedef struct {
    int64_t step;
    double started, duration;
    int32_t graph, guard;
    int hit;
    int64_t ops;
} rp_tl_seg;

typedef struct {
    int64_t ops, eager_segments, eager_ops;
    double wall, eager_wall;
    double seconds_seen;         /* the graph's executor seconds at its last hit */
} rp_tl_graph;

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
    rp_tl_seg *segs;
    int nsegs, capsegs;
    int64_t seq;                 /* segments seen (stored or not) */
    rp_tl_graph *g;
    int32_t ngraphs;
} rp_timeline;

/* Start (now: the replay's start, CLOCK_MONOTONIC seconds); -1 when out
 * of memory (the replay goes on without a timeline). */
int rp_tl_begin(rp_timeline *t, int32_t ngraphs, double now);
/* The current segment ends (and with step_end, the current step). */
void rp_tl_boundary(rp_timeline *t, int step_end, double now);
/* The segment ran as graph g: nops ops, and g's executor seconds so far. */
void rp_tl_hit(rp_timeline *t, int32_t graph, int64_t nops, double graph_seconds);
/* The segment missed (graph -1: none stood for it; guard as the miss rows). */
void rp_tl_miss(rp_timeline *t, int32_t graph, int32_t guard);
/* A fallback ran nops pending ops eagerly; last_id is the first output id
 * of the last one (the dispatch hook sees that op once more). */
void rp_tl_fallback(rp_timeline *t, int64_t nops, int64_t last_id);
/* An op ran eagerly outside capture (out_id: its first output's id). */
void rp_tl_eager_op(rp_timeline *t, int64_t out_id);
/* Close the last segment and the tail, store the steps, segments and
 * graph times of run in db (graph names from m).  The status of the first failing write. */
jn_status rp_tl_write(rp_timeline *t, jn_db *db, int64_t run, const jn_ir_module *m, double now);
void rp_tl_free(rp_timeline *t);

#endif
