/* jn_replay.h -- `janus replay` in the process: lazy capture in the
 * dispatcher, the matcher driven op by op, completed graphs run by the
 * executor, eager fallback of everything else, and the hit/miss counters.
 *
 * A jn_replay object is made from a store, a run id and a jn_rp_config
 * (jn_rp_config_from_env fills one from the JANUS_REPLAY_* settings); the
 * Python package (janus/_replay.py) makes one when JANUS_REPLAY_DB is set.
 * It owns the loaded bundle, the matcher, the graphs' executors, the
 * pending ops, deferred slices, timing rows and counters, and installs the
 * runtime's capture hook and dispatch hook with itself as their context
 * (one replay at a time per process: the runtime has one of each).  From
 * then on, while a segment is followed, jn_dispatch creates pending
 * outputs and hands each op to the object (see jn_rt_capture_hook in
 * jn_runtime.h).  A segment starts at a step start or after a sync point
 * and ends at the next one (jn_rp_step / jn_rp_sync), or when something
 * reads a pending tensor's data (jn_rt_materialize).  At its end the
 * matcher says COMPLETE (the graph runs and fills what Python can still
 * see) or MISS (the pending ops run eagerly, in order, with the eager
 * kernels); after a miss in the middle of a segment the rest of it runs
 * eagerly.  Results are always eager's: a graph only runs when every guard
 * held and everything Python can reach is produced by it or provably never
 * read (see graph_run.c).  Each graph is also timed against eager in the
 * run (config adapt) and one slower compiled is left to eager: its
 * segments then run eagerly from their first op, counted as fallbacks by
 * choice (guard JN_DB_MISS_CHOICE).
 *
 * Prefix jn_rp_.  Used from the thread that runs the script.
 */
#ifndef JN_REPLAY_H
#define JN_REPLAY_H

#include <stddef.h>
#include <stdint.h>

#include "jn_db.h"
#include "jn_exec.h"
#include "jn_runtime.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct jn_replay jn_replay;

typedef struct {
    int strict;        /* a fallback is an error naming its reason (CI) */
    int speculate;     /* values Python holds that a graph does not keep (the recording never read
                        * them again) are not computed: reading one raises (default: computed
                        * when first read, or before the graph runs when !defer) */
    int defer;         /* ... computed only if read (a deferred slice; CPU replays only) */
    int debug;         /* one stderr line per captured op, segment and graph run */
    int adapt;         /* time each graph against eager and leave slower ones to it (CPU,
                        * not strict) */
    double margin;     /* ... when compiled takes more than (1 + margin) x eager */
    int match_dump;    /* print the matcher's token programs to stderr at load */
    int region_batch;  /* a region template's ops are matched with the checks it proves left out (region.c) */
    int backward_skip; /* a backward whose ops the followed graph holds is not run op by op (backward.c) */
    int64_t backward_plans; /* ... with at most this many plans learned in all */
    /* Tests of a CUDA replay without a GPU (tests/c/test_replay_cuda.c): the
     * runner (library nodes, copies) and stream the graphs' device table
     * gets (NULL runner: the eager CUDA backend's kernels; NULL stream: its
     * compute stream), and the device string cuDNN choices are filed under
     * (NULL: this GPU's, jn_rt_cudnn_device).  Copied by jn_rp_new. */
    const jn_ex_cuda_graphs_runner *cuda_runner;
    void *cuda_stream;
    const char *algos_device;
} jn_rp_config;

/* The defaults of every field (the settings table's defaults). */
void jn_rp_config_default(jn_rp_config *cfg);
/* cfg from the settings table (runtime/settings.def: JANUS_REPLAY_STRICT,
 * _SPECULATE, _DEFER, _DEBUG, _ADAPT, _ADAPT_MARGIN, _REGION_BATCH, JANUS_MATCH_DUMP).  A
 * value the table refuses is returned as JN_ERR_VALUE with jn_setting's
 * message naming the variable (cfg then holds the defaults).  Debug's
 * per-op prints would be timed as capture: adapt is off under debug unless
 * JANUS_REPLAY_ADAPT is set. */
jn_status jn_rp_config_from_env(jn_rp_config *cfg);

/* Load the bundle of the store at db_path and start capturing (the first
 * segment starts now, as a step start).  run_id > 0: where the counters go
 * at jn_rp_finish.  A store without a usable bundle is refused with one
 * sentence (via jn_errmsg), as is a second replay or a recording in this
 * process; nothing is installed then and the caller runs eagerly. */
jn_status jn_rp_new(const char *db_path, int64_t run_id, const jn_rp_config *cfg, jn_replay **out);
/* Which of a store's bundle targets (oldest first) a CUDA device of compute
 * capability dev_major.dev_minor replays: "cuda:sm_<major><minor>" if
 * listed, else the newest "cuda:" one (jn_ex_cuda_pick_image then says
 * whether its cubin or PTX runs there); JN_ERR_VALUE (no message) when
 * none is a CUDA target.  Pure. */
jn_status jn_rp_pick_cuda(const char *const *targets, int n, int dev_major, int dev_minor, const char **pick);
/* A training step ended (Optimizer.step(), janus.step()). */
jn_status jn_rp_step(jn_replay *r);
/* A sync point of kind JN_SYNC_* (jn_db.h) reads t (may be NULL): the
 * segment ends, t's data is made current, the next segment starts. A
 * JN_SYNC_BOOL on the latest comparison's output counts as COMPARE. */
jn_status jn_rp_sync(jn_replay *r, int kind, jn_tensor *t);
/* Nested reads (printing reads through item()) are not syncs of their own. */
void jn_rp_quiet(jn_replay *r, int delta);
/* Flush, print the one-line summary to stderr (print_summary), write the
 * counters to the store (when a run id was given) and uninstall the hooks:
 * nothing is captured after it.  The counters stay readable until
 * jn_rp_free, which gives the bundle back.  A second call does nothing. */
jn_status jn_rp_finish(jn_replay *r, int print_summary);
/* jn_rp_finish (without a summary) if not done, then free r.  NULL-safe. */
void jn_rp_free(jn_replay *r);

typedef struct {
    int64_t segments, hits, misses, graphs_hit, ngraphs;
    int64_t extrapolated;      /* hits past a recorded range: a symbol or trip count outside
                                * what the recording saw, which the graph's code is valid for */
    int64_t sliced;            /* hits that first ran part of the segment eagerly (values
                                * Python holds that the graph does not keep) */
    int64_t chosen;            /* misses that were a choice (adapt): segments of graphs left
                                * to eager as slower there, and eager runs timing a graph */
    int64_t graphs_eager;      /* graphs left to eager */
    double seconds;            /* in graph runs (host time: GPU work is asynchronous) */
    int device;                /* where the graphs run: JN_CPU, or JN_CUDA (a CUDA bundle) */
    /* a CUDA replay's graph runs (jn_ex_cuda_graphs_stats): launched as
     * captured, captured (instantiated or updated), updated in place, and
     * made of plain launches */
    int64_t cuda_replays, cuda_captures, cuda_updates, cuda_plain_runs;
    /* backward skip: backward() calls seen while on, of them skipped, run to
     * learn a plan (learned), and not skipped for a reason (declined: calls =
     * skipped + learned + declined); skipped ones the engine ran after all
     * (a miss after them: fallbacks) */
    int64_t bw_calls, bw_skipped, bw_learned, bw_declined, bw_fallbacks;
} jn_rp_stats;
void jn_rp_get_stats(const jn_replay *r, jn_rp_stats *st);
/* The summary line (without newline) into buf. */
void jn_rp_summary(const jn_replay *r, char *buf, size_t n);
/* The i-th most frequent miss reason (NULL past the end); *count its count. */
const char *jn_rp_miss(const jn_replay *r, int i, int64_t *count);
/* The i-th reason a backward was not skipped (NULL past the end); *count its count. */
const char *jn_rp_bw_reason(const jn_replay *r, int i, int64_t *count);
/* The backward skip's counters per place and reason: calls not skipped, or
 * skipped and then run by the engine after all (fallback), at a place
 * (the graph's name and the token the matcher stood at; "" and -1 where it
 * knew none), under a reason (a short name and the words). */
typedef struct {
    const char *graph, *name, *words;
    int32_t token;
    int fallback;
    int64_t count;
} jn_rp_bw_row;
/* The i-th row in first-seen order; 0 past the end. */
int jn_rp_bw_row_at(const jn_replay *r, int i, jn_rp_bw_row *row);
/* What `janus optimize` decided about the recorded regions, stored with the
 * bundle this replay runs (the replay run's bundle_id; without a run row,
 * the newest bundle of its target): rows for jn_db_region_verdicts_free,
 * none when the bundle predates them (replay/verdicts.c). */
jn_status jn_rp_region_verdicts(const jn_replay *r, jn_db_region_verdict **rows, int *n);

#ifdef __cplusplus
}
#endif
#endif
