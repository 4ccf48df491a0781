/* jn_an.h -- the analyzer: recorded traces in run.db -> generalized,
 * guarded graphs (jn_ir_module).  Pure C, no Python.
 *
 * The pipeline (jn_an_analyze, analyze.c, lists every pass in order):
 *   load        read runs, steps and chunks; map the run's op names to this
 *               build's op table; decode events (errors name run and step)
 *   segment     split each step at sync points; a segment's key is where it
 *               starts (the sync or step boundary before it + its first call site)
 *   group       segments with the same key form a group
 *   functionalize  (per segment, while streaming) in-place updates -> SSA;
 *               segments equal but for scalar values collapse into exemplars
 *   loops       fold repeated sub-sequences whose repeat count varies across
 *               the group into loops (trip-count symbols)
 *   align       same op, same structural attributes, same call site, op by op;
 *               structurally different members become variants (decision trie)
 *   generalize  varying dims -> symbols unified across values (and products),
 *               varying Python scalars -> scalar inputs, constant ones ->
 *               guarded constants, varying int attributes -> expressions;
 *               inputs (state/host/carry) and outputs (state writes, values
 *               used later); groups that cannot be expressed are left out
 *               with a reason (jn_an_uncaptured)
 *   guards      every assumption as a guard with the recorded value/range and
 *               the source line it came from
 *   regions     (when asked) per recorded region: replaceable, or refused with
 *               the reason and file:line (regions.c)
 */
#ifndef JN_AN_H
#define JN_AN_H

#include <stdio.h>

#include "jn_db.h"
#include "jn_ir.h"

/* The verdict on every recorded region (analyzer/regions.c), one row per
 * (kind, class, definition site, code hash) over the region objects and
 * runs analyzed: replaceable only when every call of every such object
 * was; else refused with the first reason and the file:line that caused
 * it.  Rows in order of first appearance; strings owned by the list. */
typedef struct {
    jn_db_region_verdict *v;
    int n;
} jn_an_regions;
void jn_an_regions_free(jn_an_regions *r);

typedef struct {
    int64_t run_id;      /* 0 = every run in the store (one still recording: its
                          * committed steps); else only that run */
    FILE *progress;      /* progress lines on long work; NULL = quiet */
    jn_an_regions *regions; /* non-NULL: filled with the region verdicts (caller frees
                          * with jn_an_regions_free); NULL: regions are not analyzed */
} jn_an_options;

typedef struct {
    int64_t runs, steps, ops, segments, groups, graphs, loops, symbols, guards;
    double seconds;
    /* added by the analyzer (issue 5): */
    int64_t variants;    /* graphs beyond the first of their group */
    int64_t uncaptured;  /* groups left out (see jn_an_uncaptured) */
    int64_t exemplars;   /* distinct segments after collapsing identical ones */
    int64_t skipped;     /* steps left out: their trace chunk is damaged (see
                          * jn_an_skipped); `steps` counts the others */
} jn_an_stats;

/* Analyze the store; *out is a verified module (caller frees).  A store with
 * no steps yields an empty module, not an error.  A step whose trace chunk
 * is damaged (missing, not decodable, events this build cannot read) is
 * skipped, named in jn_an_skipped, and the other steps analyzed; a store
 * that cannot be read, or a run whose op table this build cannot map,
 * fails the analysis. */
jn_status jn_an_analyze(jn_db *db, const jn_an_options *opt, jn_ir_module **out, jn_an_stats *stats);

/* Why groups were left out by the last jn_an_analyze of this thread, one
 * line each ("group at train.py:12 (40 segments): not captured: in-place
 * write into a view (copy_ at train.py:14)"); valid until the next call. */
int jn_an_uncaptured_count(void);
const char *jn_an_uncaptured(int i);

/* The steps the last jn_an_analyze of this thread skipped, one line each
 * ("run 1, step 2: trace chunk is corrupt (...); re-record the run or
 * delete this step"); valid until the next call. */
int jn_an_skipped_count(void);
const char *jn_an_skipped(int i);

/* ------------------------------------------------ replay matcher data */
/* The replay matcher's program (ir/jn_ir_match.h) for the graphs of the
 * last jn_an_analyze of this thread, as the bytes of the bundle's
 * JN_CG_SEC_MATCHER section; *data malloc'ed (free()).  Graphs it could
 * not describe have no entry; jn_an_matcher_missing says why, one line each. */
jn_status jn_an_matcher_section(void **data, size_t *len);
int jn_an_matcher_missing_count(void);
const char *jn_an_matcher_missing(int i);

/* ------------------------------------------------ recorded events */
/* A run's recorded events as replay's dispatcher would see them (for the
 * offline matcher tests and tools).  Valid during the callback only. */
typedef struct {
    int64_t id;
    double scalar;            /* role JN_TR_SCALAR: the Python value */
    const int64_t *shape;
    uint8_t dtype, ndim, device, role, pytype;
} jn_an_tref;

typedef struct {
    int64_t run, step;
    int kind;                 /* JN_EV_OP, JN_EV_SYNC, or 0: the step ended */
    jn_op op;
    int inplace, nattrs, nin, nout, sync_kind;
    const jn_attr *attrs;
    const jn_an_tref *in, *out;
    int64_t callsite;
} jn_an_event;

/* Return JN_OK to go on; anything else stops jn_an_events with that status. */
typedef jn_status (*jn_an_event_fn)(void *ctx, const jn_an_event *ev);
/* Every op and sync of run_id (0 = every run), step by step, in order;
 * decision events are skipped. */
jn_status jn_an_events(jn_db *db, int64_t run_id, jn_an_event_fn fn, void *ctx);

#endif
