/* jn_rec.h -- the recorder: everything that runs inside a recorded process.
 *
 * jn_rec_start() opens the trace store and installs the dispatcher hook; from
 * then on every op (forward, backward, optimizer update) is appended as an
 * encoded event to the current step's buffer, and cheap per-step summaries
 * (op counts, syncs, decisions, shapes, argument types, a signature hash)
 * are kept in memory.  jn_rec_end_step() writes the step in one transaction
 * and starts the next.  The Python layer supplies call sites (a callback),
 * sync points, control-flow decisions and tensor roles (jn_rec_mark).
 *
 * Summary rows kept small on purpose: a shape row (op, call site, arg, dim,
 * size) is written in the step where that size is first seen at that key,
 * and an argument-type row (op, call site, arg, pytype, uses in the step) in
 * the step where that Python type is first seen there.  A steady training
 * loop costs no such rows after step 0, while a key with more than one row
 * (`COUNT(DISTINCT size) ... GROUP BY op, callsite, arg, dim`) varies, and
 * the step of each row says when the new value appeared.  (One call site can
 * legitimately see several sizes in every step, e.g. an optimizer looping
 * over parameters; those show as several rows all written in the first
 * step.)  Op counts, syncs and decisions are written for every step.
 *
 * SIGTERM, SIGHUP and SIGINT at their default (signals.c): the queued
 * steps and the one in progress are committed and the run marked killed
 * before the process dies of the signal (bounded; also when blocked in C).
 *
 * Not thread-safe: ops are expected from one thread at a time (the Python
 * thread, or the autograd engine while that thread waits in backward()).
 */
#ifndef JN_REC_H
#define JN_REC_H

#include <stdint.h>

#include "jn_db.h"
#include "jn_runtime.h"

/* Non-zero while recording: the only thing sync hooks check when idle. */
extern int jn_rec_on;

/* Where the op being recorded was called from (filled by the Python layer). */
typedef struct {
    int64_t callsite, stack; /* 0 = unknown */
} jn_rec_site;
typedef void (*jn_rec_site_fn)(jn_rec_site *out);
void jn_rec_set_site_fn(jn_rec_site_fn fn);

/* Open the store (JN_DB_WRITE; the run must exist) and start recording. */
/* python_version goes into the run row (the CLI reads it to tell that janus was imported). */
jn_status jn_rec_start(const char *db_path, int64_t run_id, const char *python_version);
/* Write the current step (kind "optimizer", "marker", "tail") and reset.
 * An empty step (no ops, syncs or decisions) is not written. */
jn_status jn_rec_end_step(const char *kind);
/* Ask the writer to commit the steps queued so far now instead of at its
 * next batch or tick (does not wait): before a process may block for long,
 * e.g. in a collective a lost rank never joins, where mpirun ends it. */
void jn_rec_flush(void);
/* Flush a non-empty trailing step as "tail", remove the hook, close. */
jn_status jn_rec_stop(void);

/* Whether an op of the current segment (since the last sync or step
 * start) wrote t (made it, or in place): what replay holds pending there. */
int jn_rec_written_in_segment(const jn_tensor *t);
/* A sync point: kind JN_SYNC_*, the observed value (NaN if none), the tensor. */
void jn_rec_sync(int kind, double value, const jn_tensor *t);
/* As jn_rec_sync, but JN_SYNC_BOOL on the output of the latest comparison
 * op becomes JN_SYNC_COMPARE. */
void jn_rec_sync_bool(double value, const jn_tensor *t);
/* A control-flow decision of user code: JN_DEC_BRANCH (outcome 1 = the
 * fall-through body ran, 0 = jumped) or JN_DEC_LOOP (trip count). */
void jn_rec_decision(int64_t callsite, int kind, int64_t outcome);
/* Mark a tensor header's role (JN_TR_HOST / PARAM / STATE) while
 * recording (a no-op otherwise); the recorder keeps it, not the tensor. */
void jn_rec_mark(jn_tensor *t, int role);
/* A header's role: JN_TR_TEMP unless marked in this recording. */
int jn_rec_role(const jn_tensor *t);
/* While > 0, sync hooks record nothing (printing reads data through tolist). */
extern int jn_rec_quiet;

/* Regions (schema v9): a call of region `region` begins (enter 1, with
 * the ids of the tensors it was given) or ends (enter 0): one JN_EV_REGION
 * event in the step's events.  A no-op when not recording. */
void jn_rec_region(int64_t region, int enter, const int64_t *args, int nargs);
/* Store a region's row and the code rows of its observed calls through
 * the open store (NULL-safe: JN_OK when not recording). */
jn_status jn_rec_region_put(const jn_db_region *r);
jn_status jn_rec_region_codes_put(const jn_db_region_code *rows, int n);

/* Interning through the open store (NULL-safe: 0 when not recording). */
jn_status jn_rec_callsite(const char *file, int line, const char *func, int64_t *id);
jn_status jn_rec_stack(uint64_t hash, const int64_t *callsites, int n, int64_t *id);

/* The first error the dispatcher hook could not report (it has no status
 * to return); JN_OK if none.  Message in *msg. */
jn_status jn_rec_pending_error(const char **msg);

typedef struct {
    int64_t steps, ops, syncs, decisions, bytes; /* bytes: encoded event bytes written */
    /* committed to the store: how many steps, the last one's number (-1:
     * none).  Steps commit in order and none after a failed write, so the
     * stored steps are 0..last_stored; final once jn_rec_stop returned. */
    int64_t stored, last_stored;
} jn_rec_stats;
void jn_rec_get_stats(jn_rec_stats *out);

/* FNV-1a, exposed for the Python layer's stack hashes. */
static inline uint64_t jn_rec_fnv(uint64_t h, const void *p, size_t n) {
    const unsigned char *c = (const unsigned char *)p;
    for (size_t i = 0; i < n; i++) {
        h ^= c[i];
        h *= 1099511628211ull;
    }
    return h;
}
#define JN_REC_FNV_INIT 1469598103934665603ull

#endif
