/* jn_replay.h -- `janus replay` in the process: lazy capture in the
 * dispatcher, the matcher driven op by op, completed graphs run by the
 * executor, eager fallback of everything else, and the hit/miss counters.
 *
 * Started by the Python package (janus/_replay.py) when JANUS_REPLAY_DB is
 * set.  From then on, while a segment is followed, jn_dispatch creates
 * pending outputs and hands each op here (see jn_rt_capture_hook in
 * jn_runtime.h).  A segment starts at a step start or after a sync point
 * and ends at the next one (jn_rp_step / jn_rp_sync), or when
 * something reads a pending tensor's data (jn_rt_materialize).  At its end
 * the matcher says COMPLETE (the graph runs and fills what Python can still
 * see) or MISS (the pending ops run eagerly, in order, with the eager
 * kernels); after a miss in the middle of a segment the rest of it runs
 * eagerly.  Results are always eager's: a graph only runs when every guard
 * held and everything Python can reach is produced by it or provably never
 * read (see replay.c).  Each graph is also timed against eager in the run
 * (JANUS_REPLAY_ADAPT) and one slower compiled is left to eager: its
 * segments then run eagerly from their first op, counted as fallbacks by
 * choice (guard JN_DB_MISS_CHOICE).
 *
 * Prefix jn_rp_.  One replay per process, on the thread that runs
 * the script.
 */
#ifndef JN_REPLAY_H
#define JN_REPLAY_H

#include <stddef.h>
#include <stdint.h>

#include "jn_exec.h"
#include "jn_runtime.h"

#ifdef __cplusplus
extern "C" {
#endif

extern int jn_rp_on;   /* a replay is active (a flag test on the sync paths) */

enum {
    JN_RP_STRICT = 1,     /* a fallback is an error (CI) */
    JN_RP_SPECULATE = 2   /* values Python holds that a graph does not keep (the recording
                                  * never read them again) are not computed: reading one raises
                                  * (default: they are computed eagerly before the graph runs) */
};

/* Load the bundle of the store at db_path and start capturing (the first
 * segment starts now, as a step start).  run_id > 0: where the counters go
 * at exit.  A store without a usable bundle is refused with one sentence
 * (*why*, via jn_errmsg) and nothing is installed: the caller runs eagerly. */
jn_status jn_rp_start(const char *db_path, int64_t run_id, int flags);
/* Which of a store's bundle targets (oldest first) a CUDA device of compute
 * capability dev_major.dev_minor replays: "cuda:sm_<major><minor>" if
 * listed, else the newest "cuda:" one (jn_ex_cuda_pick_image then says
 * whether its cubin or PTX runs there); JN_ERR_VALUE (no message) when
 * none is a CUDA target.  Pure. */
jn_status jn_rp_pick_cuda(const char *const *targets, int n, int dev_major, int dev_minor, const char **pick);
/* A training step ended (Optimizer.step(), janus.step()). */
jn_status jn_rp_step(void);
/* A sync point of kind JN_SYNC_* (jn_db.h) reads t (may be NULL): the
 * segment ends, t's data is made current, the next segment starts. A
 * JN_SYNC_BOOL on the latest comparison's output counts as COMPARE. */
jn_status jn_rp_sync(int kind, jn_tensor *t);
/* Nested reads (printing reads through item()) are not syncs of their own. */
void jn_rp_quiet(int delta);
/* Flush, print the one-line summary to stderr (unless quiet), write the
 * counters to the store (when a run id was given), uninstall. */
jn_status jn_rp_stop(int print_summary);

typedef struct {
    int64_t segments, hits, misses, graphs_hit, ngraphs;
    int64_t sliced;            /* hits that first ran part of the segment eagerly (values
                                * Python holds that the graph does not keep) */
    int64_t chosen;            /* misses that were a choice (JANUS_REPLAY_ADAPT): segments of graphs
                                * left to eager as slower there, and eager runs timing a graph */
    int64_t graphs_eager;      /* graphs left to eager */
    double seconds;            /* in graph runs (host time: GPU work is asynchronous) */
    int device;                /* where the graphs run: JN_CPU, or JN_CUDA (a CUDA bundle) */
    /* a CUDA replay's graph runs (jn_ex_cuda_graphs_stats): launched as
     * captured, captured (instantiated or updated), updated in place, and
     * made of plain launches */
    int64_t cuda_replays, cuda_captures, cuda_updates, cuda_plain_runs;
} jn_rp_stats;
void jn_rp_get_stats(jn_rp_stats *st);
/* The summary line (without newline) into buf. */
void jn_rp_summary(char *buf, size_t n);
/* The i-th most frequent miss reason (NULL past the end); *count its count. */
const char *jn_rp_miss(int i, int64_t *count);

/* Tests of a CUDA replay without a GPU (tests/c/test_replay_cuda.c): the
 * runner (library nodes, copies) and stream the graphs' device table gets
 * (NULL r: the eager CUDA backend's kernels; NULL stream: its compute
 * stream), and the device string cuDNN choices are filed under (NULL:
 * this GPU's, jn_rt_cudnn_device).  Call before jn_rp_start. */
void jn_rp_set_cuda_runner(const jn_ex_cuda_graphs_runner *r, void *stream);
void jn_rp_set_algos_device(const char *device);

#ifdef __cplusplus
}
#endif
#endif
