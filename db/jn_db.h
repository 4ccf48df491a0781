/* jn_db.h -- the trace store: a versioned SQLite database (run.db) shared by
 * the recorder, analyzer, codegen, runtime and CLI, plus the binary codec of
 * recorded op events.
 *
 * Layout (schema version JN_DB_SCHEMA_VERSION):
 *   meta(key PRIMARY KEY, value)      schema_version, janus_version, created, app="janus"
 *   optables(hash PRIMARY KEY, ops)   op names (and schemas) of one op table, in enum order
 *   runs(...)                          one row per `janus record` (argv, cwd, times, exit status,
 *                                      versions, CPU features, device, optable hash, status)
 *   callsites(id, file, line, func)    interned Python call sites
 *   stacks(id, hash, frames)           interned call stacks (callsite ids, innermost first)
 *   steps(run_id, step, ...)           per step: kind, time, op/sync counts, signature hash
 *   chunks(run_id, step, codec, raw_bytes, data)   zstd-compressed encoded events of a step
 *   op_counts, syncs, decisions, shapes, arg_types  plain summary tables for SQL
 * Concretely (db/db.c SCHEMA_V1 is the authority):
 *   meta also holds optable_hash (the creating janus's table, 16 hex digits).
 *   runs(id, argv, cwd, started, ended, exit_status, status 'running'|'finished'|'error'|'killed'|'incomplete',
 *        python_version, janus_version, optable_hash, cpu_features, device, hostname, pid)
 *        (status 'lost' once a later writer found its process gone: jn_db_mark_lost)
 *   stacks.hash is the uint64 bit-cast to a signed INTEGER; stacks.frames is a JSON
 *        array of callsite ids ("[3,1]"), so SQL can json_each() it.
 *   steps(run_id, step, kind, started, duration, signature, n_ops, n_syncs):
 *        signature is TEXT, 16 lower-case hex digits.  PRIMARY KEY(run_id, step).
 *   chunks(run_id, step, codec 'zstd', raw_bytes, data)
 *   op_counts(run_id, step, op, count)
 *   syncs(run_id, step, seq, kind JN_SYNC_*, value REAL (NULL when NaN/none), callsite_id)
 *   decisions(run_id, step, callsite_id, kind JN_DEC_*, outcome, count)
 *   shapes(run_id, step, op, callsite_id, arg, dim, size)
 *   arg_types(run_id, step, op, callsite_id, arg, pytype TEXT, count)
 *   bundles(id, created REAL, target, optable_hash, janus_version, cpu_features,
 *        source_runs TEXT (JSON array of run ids), source_steps, format, codec 'zstd',
 *        raw_bytes, checksum TEXT (FNV-1a 64 of the raw payload, 16 hex), data BLOB)
 *        -- schema v2; the payload format is codegen/jn_bundle.h's.
 *   runs.kind TEXT 'record'|'replay'|'eager' (default 'record'), runs.bundle_id (a replay: the
 *        bundle it loaded, NULL otherwise)                          -- schema v3
 *   replay_graphs(run_id, graph, hits, misses, seconds)  PRIMARY KEY(run_id, graph)
 *   replay_misses(run_id, graph, guard, reason, site 'file:line', seen REAL (NULL = none), count)
 *        -- schema v3: what a replaying process reports at exit (jn_db_replay_put)
 *   algos(device, key, algo, workspace, seconds)  PRIMARY KEY(device, key)
 *        -- schema v5: the cuDNN convolution algorithm chosen per GPU (device = name and
 *        compute capability, "NVIDIA H200 sm_90") and convolution key (runtime/cuda/
 *        cudnn.c's text), its workspace bytes and the seconds the choice took
 *   (schema v4 changed no table: step chunks may hold JN_EV_LIVE events)
 *   runs.cpu_seconds, runs.peak_rss: the command's CPU time (user + system) and peak resident
 *        bytes, as its janus parent saw them at its exit (NULL: not stored)  -- schema v6
 *   replay_graph_times(run_id, graph, ops, wall, eager_segments, eager_wall, eager_ops)
 *        PRIMARY KEY(run_id, graph): ops run in the graph, the wall time of its segments
 *        (boundary to boundary, Python included), and how many of the segments it stood
 *        for ran eagerly, their wall time and ops                        -- schema v6
 *   replay_misses.seen_min, seen_max: the range of the values seen (NULL: just `seen`) -- v6
 *   run_steps(run_id, step, kind 'step'|'tail', started, duration, segments, hits, graph_ops,
 *        eager_ops, graph_seconds)  PRIMARY KEY(run_id, step): per step of a replay or eager
 *        run (the first JN_DB_STEPS_MAX; started: seconds since janus started in the process;
 *        graph_ops / eager_ops NULL where not counted: an eager run)   -- schema v6
 *   replay_segments(run_id, seq, step, started, duration, graph, hit, guard, ops)
 *        PRIMARY KEY(run_id, seq): the first JN_DB_SEGMENTS_MAX segments of a replay -- v6
 *   bundle_notes(bundle_id, seq, kind, text): what `janus optimize` said about a bundle it
 *        stored: 'summary' (one line), 'refused' (a group of segments the analyzer left out,
 *        with the reason), 'matcher' (a graph replay cannot match, and why)   -- schema v6
 *   runs.pid_start INTEGER (the owner's start time, clock ticks since boot), runs.boot_id TEXT
 *        -- schema v7: with hostname and pid, who owns a run (lost runs)
 *   replay_graphs.extrapolated (hits past a recorded range, default 0),
 *   replay_extrap(run_id, graph, guard, reason, site, lo, hi, seen_min, seen_max, count)
 *        -- schema v8: hits that went past a SEEN guard's recorded range lo..hi
 *   regions(run_id, region, kind, qualname, file, line, code_hash), region_codes(run_id, region,
 *        hash, file, line, name, user, effect, effect_site), region_verdicts(bundle_id, seq, ...)
 *        -- schema v9: the regions a recording entered (step chunks hold JN_EV_REGION
 *        markers), the code objects each ran with what their bytecode does outside the
 *        call, and what `janus optimize` decided about each region (see "regions" below)
 *   region_replays(run_id, region, calls, replaced, refused),
 *   region_replay_reasons(run_id, region, reason, count)
 *        -- schema v10: what a replay's regions did (calls run without their Python,
 *        and why the others ran it), written with the replay counters
 *   replay_backward(run_id, calls, skipped, learned, declined, fallbacks),
 *   replay_backward_reasons(run_id, graph, token, name, reason, fallback, count)
 *        -- schema v11: what a replay's backward skip did (backward() calls seen, skipped,
 *        run to learn a plan, not skipped; skipped ones run after all), and per place
 *        (graph, token) and reason the calls not skipped or run after all
 *        -- schema v12: no table; a trace reference's role may be JN_TR_DATAIDX
 *   views: v_step_signatures(run_id, signature, n_steps, first_step, last_step, n_ops),
 *          v_syncs / v_decisions (the rows plus kind_name, file, line, func),
 *          v_shape_variation(run_id, op, callsite_id, arg, dim, n_sizes, min_size, max_size)
 * Events record op NAMES through the run's optable, never bare enum numbers.
 * A jn_db handle is used by one thread at a time; processes share a file
 * through SQLite's locking (WAL, 10 s busy timeout).
 * Every write of a step is one transaction, so a crash or SIGKILL leaves all
 * committed steps readable (WAL mode).  Every user-visible failure returns a
 * jn_status with a message naming the file and the fix.
 */
#ifndef JN_DB_H
#define JN_DB_H

#include <stddef.h>
#include <stdint.h>

#include "jn_runtime.h"

#define JN_DB_SCHEMA_VERSION 12

typedef struct jn_db jn_db;

enum { JN_DB_READONLY = 0, JN_DB_WRITE = 1, JN_DB_CREATE = 2, JN_DB_WRITE_OR_READONLY = 3 };

/* Open (and with JN_DB_CREATE create or migrate) a trace store.  Refuses a
 * file that is not SQLite, a SQLite file that is not a janus trace store,
 * and a store of a newer schema, each with a clear message.  An older store
 * is migrated when opened for writing; read-only, a v1 store is read as it
 * is (it has no bundles), a v0 one is refused.
 *
 * path is a file name, always: it is made absolute (against the working
 * directory) and opened without URI interpretation, so ":memory:" and
 * "file:v.db" are files of those names and every command and process opens
 * the same file for the same path.
 *
 * Read-only works where nothing can be written (a read-only mount, a
 * directory of another user): a WAL store whose -shm index cannot be
 * created is read as an immutable file when its -wal log holds no commits,
 * and refused with the fix when it does.  JN_DB_WRITE on a store that
 * cannot be written here is refused up front, naming the file or directory;
 * JN_DB_WRITE_OR_READONLY opens such a store read-only instead
 * (jn_db_writable says which it got). */
jn_status jn_db_open(const char *path, int flags, jn_db **out);
void jn_db_close(jn_db *db);
int jn_db_schema_version(jn_db *db);
/* The path the store was opened with (for messages). */
const char *jn_db_path(jn_db *db);
/* 1 when the store was opened for writing; 0 with *why (may be NULL) saying
 * why not ("its directory D is not writable: Read-only file system"). */
int jn_db_writable(jn_db *db, const char **why);

/* ---- runs ---- */
typedef struct {
    const char *argv_json;      /* JSON array of strings */
    const char *cwd;
    const char *python_version;
    const char *janus_version;
    const char *optable_hash;   /* jn_optable_hash() as 16 hex digits */
    const char *optable_ops;    /* op names in enum order, '\n'-separated "name schema" rows */
    const char *cpu_features;
    const char *device;         /* "cpu" */
    const char *hostname;
    int64_t pid;
    double started;             /* unix time */
    const char *kind;           /* schema v3: "record" (NULL/"" too), "replay", "eager" (--eager) */
    int64_t bundle_id;          /* replay: the bundle it runs (0 = none / not a replay) */
} jn_db_run_info;

jn_status jn_db_run_begin(jn_db *db, const jn_db_run_info *info, int64_t *run_id);
/* The recording process fills this at start: it is also how the CLI tells
 * "the command imported janus" (set) from "it never did" (still empty). */
jn_status jn_db_run_set_python(jn_db *db, int64_t run_id, const char *python_version);
/* status: "finished", "error" (script raised / nonzero exit), "killed"
 * (by `janus record` reaping it, and first by a recording process itself
 * on SIGTERM/SIGHUP/SIGINT: recorder/signals.c), "incomplete" (the script
 * finished, its recording did not: a full disk); and "lost", which
 * jn_db_mark_lost sets */
jn_status jn_db_run_end(jn_db *db, int64_t run_id, int exit_status, const char *status, double ended);

/* Schema v6: the command's CPU time (user + system, seconds) and peak
 * resident bytes, as its parent saw them when it ended (getrusage of the
 * children: `janus record` and `janus replay` start one). */
jn_status jn_db_run_set_usage(jn_db *db, int64_t run_id, double cpu_seconds, int64_t peak_rss);
/* A run is lost when its status is still 'running' (or empty) but the
 * process that owned it is gone: it ran on this host (same host name),
 * and its boot id is not this boot's, or its pid is no process, or that
 * pid's start time is not pid_start (the pid was reused).  A run of
 * another host is never called lost: nothing here can see its process. */
int jn_db_run_is_lost(const char *status, const char *hostname, int64_t pid, int64_t pid_start, const char *boot_id);

/* The ids of every recorded run (kind 'record': replays are not sources),
 * ascending (*ids malloc'ed, free()); for the source_runs of a bundle. */
jn_status jn_db_run_ids(jn_db *db, int64_t **ids, int *n);

/* ---- interning (cached by the caller; these hit the database once) ---- */
jn_status jn_db_callsite(jn_db *db, const char *file, int line, const char *func, int64_t *id);
jn_status jn_db_stack(jn_db *db, uint64_t hash, const int64_t *callsites, int n, int64_t *id);

/* ---- event codec ---- */
enum { JN_EV_OP = 1, JN_EV_SYNC = 2, JN_EV_DECISION = 3, JN_EV_LIVE = 4, JN_EV_REGION = 5 };
/* A module call's mode on its JN_EV_REGION entry (stored negated among the ids): 1..4. */
#define JN_DB_REGION_MODE(grad_enabled, training) (1 + ((grad_enabled) != 0) + 2 * ((training) != 0))
/* What a tensor reference is, as far as the recorder can tell. */
enum {
    JN_TR_TEMP = 0,     /* produced by a recorded op */
    JN_TR_HOST = 1,     /* entered from Python data (list, buffer, numpy) */
    JN_TR_PARAM = 2,    /* nn.Parameter */
    JN_TR_STATE = 3,    /* buffer / optimizer state living across steps */
    JN_TR_SCALAR = 4,   /* a wrapped Python number; value in `scalar` */
    JN_TR_DATAIDX = 5   /* indices read from a tensor's values (a bool mask's coordinates,
                         * repeat_interleave's): dim 0 is a count the data decides */
};
/* Sync kinds (syncs.kind, a trace event's sync_kind), one row each: name,
 * number, the short name (inspect, the v_syncs view), the read as graph
 * entry/exit text and miss messages name it, and what a region refusal
 * says.  Every table of names expands this. */
#define JN_SYNC_KINDS(X)                                                                    \
    X(ITEM, 1, "item", "item()", "item()")                                                  \
    X(BOOL, 2, "bool", "bool()", "bool()")                                                  \
    X(TOLIST, 3, "tolist", "tolist()", "tolist()")                                          \
    X(NUMPY, 4, "numpy", "numpy()", "a buffer, numpy() or data_ptr() read")                 \
    X(PRINT, 5, "print", "print()", "printing a tensor")                                    \
    X(COMPARE, 6, "compare", "a comparison", "a comparison used as a bool")                 \
    X(MASK, 7, "mask", "a bool mask", "a bool mask's values read (indexing, nonzero)")
/* (numbered 1..N in order: the last is the count) */
#define JN_SYNC_ENUM_(n, v, name, call, what) JN_SYNC_##n = v,
#define JN_SYNC_COUNT_(n, v, name, call, what) +1
enum { JN_SYNC_KINDS(JN_SYNC_ENUM_) JN_SYNC_LAST = 0 JN_SYNC_KINDS(JN_SYNC_COUNT_) };
#undef JN_SYNC_ENUM_
#undef JN_SYNC_COUNT_
/* A sync kind's short name, its read as text, and what a region refusal says
 * ("?", "a sync", "a sync" for an unknown kind). */
const char *jn_db_sync_name(int kind);
const char *jn_db_sync_call(int kind);
const char *jn_db_sync_what(int kind);
enum { JN_DEC_BRANCH = 1, JN_DEC_LOOP = 2 };

typedef struct {
    int64_t id;            /* jn_tensor.id */
    uint64_t version;      /* storage version seen */
    uint8_t dtype, ndim, device, role;
    int64_t shape[JN_MAX_DIMS], strides[JN_MAX_DIMS], offset;
    double scalar;         /* JN_TR_SCALAR: the Python value */
    uint8_t pytype;        /* for op arguments: 0 tensor, 1 int, 2 float, 3 bool */
} jn_db_tref;

typedef struct {
    uint8_t kind;          /* JN_EV_* */
    /* JN_EV_OP */
    uint32_t op;           /* index into the run's optable */
    uint8_t inplace;       /* 1: dispatch_into / in-place op (out[0] aliases a written tensor) */
    jn_attrs attrs;        /* in the op's schema order */
    uint8_t nattrs;
    uint8_t nin, nout;
    jn_db_tref *in, *out;  /* decode: point into the decoder's arena */
    /* all kinds */
    int64_t callsite, stack;
    /* JN_EV_SYNC */
    uint8_t sync_kind;
    double value;          /* the observed scalar, NaN when none */
    int64_t tensor_id;     /* the tensor that was synced */
    /* JN_EV_DECISION */
    uint8_t dec_kind;      /* JN_DEC_* */
    int64_t outcome;       /* branch: 1 taken / 0 not; loop: trip count */
    /* JN_EV_LIVE (schema v4): the tensors made by this step's ops that are
     * still alive where a segment ends (just before its sync event, or at
     * the step's end): what the analyzer keeps although the run never
     * reads them again (a printed-later loss, .grad, autograd's saved
     * values at a sync inside the forward pass).  Ids ascending. */
    uint32_t nlive;
    const int64_t *live;   /* decode: points into the decoder's arena */
    /* JN_EV_REGION (schema v9): a region's call begins (region_enter 1) or
     * ends (0); region is the run's region id (jn_db_region_put).  On
     * entry, the ids of the tensors it was given (arguments; for an
     * optimizer or clipping, the gradients; for a module, also its own
     * tensor attributes), any order; a module call's
     * entry also holds its mode as one negative value, -JN_DB_REGION_MODE
     * (grad mode and the module's training flag: calls in different modes
     * may run different ops, so the analyzer compares a call only with
     * calls of its mode; a recording without it compares all). */
    int64_t region;
    uint8_t region_enter;
    uint32_t nargs;
    const int64_t *args;   /* decode: points into the decoder's arena */
    /* JN_EV_OP, optional: the jn_attr_kind of each attr ('i','f','b','L','d').
     * 0 = take it from jn_op_info(op) of the running process's op table.
     * The decoder always fills it in from the stored tags. */
    char attr_kind[JN_MAX_ATTRS];
} jn_db_event;

typedef struct {
    uint8_t *data;
    size_t len, cap;
} jn_db_buf;

/* Append one event (compact varint encoding) to buf. */
jn_status jn_db_encode_event(jn_db_buf *buf, const jn_db_event *ev);
void jn_db_buf_free(jn_db_buf *buf);

/* Decoding: iterate events of a decompressed chunk. */
typedef struct jn_db_decoder jn_db_decoder;
jn_status jn_db_decoder_new(const void *data, size_t len, jn_db_decoder **out);
/* 1 = an event was decoded into *ev (valid until the next call), 0 = end. <0 never; errors via status */
jn_status jn_db_decoder_next(jn_db_decoder *d, jn_db_event *ev, int *got);
void jn_db_decoder_free(jn_db_decoder *d);

/* ---- steps ---- */
typedef struct { const char *op; int64_t count; } jn_db_opcount;
typedef struct { int64_t seq; int kind; double value; int64_t callsite; } jn_db_sync;
typedef struct { int64_t callsite; int kind; int64_t outcome; int64_t count; } jn_db_decision;
typedef struct { const char *op; int64_t callsite; int arg, dim; int64_t size; } jn_db_shape;
typedef struct { const char *op; int64_t callsite; int arg; const char *pytype; int64_t count; } jn_db_argtype;

typedef struct {
    int64_t run_id, step;
    const char *kind;          /* "optimizer" (Optimizer.step), "marker" (janus.step()), "tail" (at exit) */
    double started, duration;
    uint64_t signature;        /* hash of (op, attrs, callsite) sequence */
    int64_t n_ops, n_syncs;
    const void *events;        /* encoded events (jn_db_encode_event), compressed by the store */
    size_t events_len;
    const jn_db_opcount *opcounts; int nopcounts;
    const jn_db_sync *syncs; int nsyncs;
    const jn_db_decision *decisions; int ndecisions;
    const jn_db_shape *shapes; int nshapes;
    const jn_db_argtype *argtypes; int nargtypes;
} jn_db_step;

/* One transaction: the step row, its chunk and its summaries. */
jn_status jn_db_write_step(jn_db *db, const jn_db_step *s);
/* Several steps in one transaction (all or none): the recorder's writer
 * thread batches what queued up, one commit per batch. */
jn_status jn_db_write_steps(jn_db *db, const jn_db_step *steps, int n);
/* The decompressed events of a step (caller frees *data with free()).
 * JN_ERR_VALUE (naming run and step) when the step has no chunk or its
 * chunk is damaged -- that step's data, the rest of the store may be fine;
 * JN_ERR_IO when the store itself cannot be read. */
jn_status jn_db_read_chunk(jn_db *db, int64_t run_id, int64_t step, void **data, size_t *len);

/* ---- bundles (schema v2) ----
 * What `janus optimize` produced from the traces, one current bundle per
 * target.  The store treats the payload as opaque bytes: it compresses them
 * (zstd), records their size and FNV-1a 64 checksum, and verifies both on
 * the way out. */
typedef struct {
    int64_t id;                 /* get/list: the row id (put ignores it) */
    double created;             /* unix time; put: 0 = now */
    const char *target;         /* "cpu" (later "cuda-sm90", ...) */
    const char *optable_hash;   /* 16 hex digits */
    const char *janus_version;
    const char *cpu_features;   /* space-separated features the code requires */
    const char *source_runs;    /* JSON array of run ids, "[1,2]" */
    int64_t source_steps;
    int64_t format;             /* the payload's format version */
    const void *data;           /* the raw (uncompressed) payload; NULL from list */
    size_t len;                 /* its size (list: too) */
    size_t stored_bytes;        /* get/list: the compressed size in the store */
    char checksum[17];          /* get/list: as stored */
} jn_db_bundle;

/* Store b as the bundle of b->target, deleting every other bundle of that
 * target, in ONE transaction: readers see the old set or the new one.  *id
 * (may be NULL) gets the new row id. */
jn_status jn_db_bundle_put(jn_db *db, const jn_db_bundle *b, int64_t *id);
/* The newest bundle of `target`, decompressed and verified (size and
 * checksum); strings and data are owned by *out: jn_db_bundle_free.  No
 * bundle: JN_ERR_VALUE "no bundle for target X ...; run `janus optimize`";
 * corrupt or truncated: JN_ERR_VALUE naming the file and bundle id. */
jn_status jn_db_bundle_get(jn_db *db, const char *target, jn_db_bundle *out);
jn_status jn_db_bundle_get_id(jn_db *db, int64_t id, jn_db_bundle *out);
/* Every bundle (without data), oldest first; *out is an array of *n that
 * jn_db_bundle_list_free releases.  A v1 store opened read-only has none. */
jn_status jn_db_bundle_list(jn_db *db, jn_db_bundle **out, int *n);
void jn_db_bundle_free(jn_db_bundle *b);        /* the owned fields; b itself stays */
void jn_db_bundle_list_free(jn_db_bundle *list, int n);
/* FNV-1a 64 of the bytes: the bundle checksum. */
uint64_t jn_db_fnv1a64(const void *data, size_t len);

/* ---- replay counters (schema v3) ----
 * What one `janus replay` run did, written by the replaying process at exit.
 * Per graph: segments run as the graph (hits), segments that started it and
 * missed (misses), and the seconds spent in graph runs.  Per miss: the guard
 * index that failed, the matcher's sentence, the Python call site
 * "file:line" and the value seen (NaN = none), and how often. */
typedef struct {
    const char *graph;
    int64_t hits, misses;
    double seconds;
    int64_t extrapolated;      /* of the hits: those past a recorded range (schema v8) */
} jn_db_replay_graph;
/* A miss row's guard when the segment ran eagerly by choice, no guard
 * failing: its graph was left to eager as slower there, or the run timed
 * it eagerly (JANUS_REPLAY_ADAPT). */
#define JN_DB_MISS_CHOICE (-2)
typedef struct {
    const char *graph;
    int32_t guard;
    const char *reason;
    const char *site;
    double seen;
    int64_t count;
    /* schema v6: has_range 1 = the row's count saw values in [seen_min,
     * seen_max] (seen is the first); 0 = only `seen` */
    int has_range;
    double seen_min, seen_max;
} jn_db_replay_miss;
/* A SEEN guard (a symbol's or trip count's recorded range lo..hi) that
 * hits went past: the guard index, its sentence and call site, the values
 * seen outside the range (min, max) and in how many hits (schema v8). */
typedef struct {
    const char *graph;
    int32_t guard;
    const char *reason, *site;
    double lo, hi, seen_min, seen_max;
    int64_t count;
} jn_db_replay_extrap;

/* Add the counters to run run_id in ONE transaction (all or none): graph
 * rows are summed into what the run already has (a second report, e.g. from
 * another process of the same run, adds up), miss and extrapolation rows
 * appended.  The run must exist; names and reasons must be non-NULL (site
 * may be NULL = ""); counts and seconds must be >= 0. */
jn_status jn_db_replay_put(jn_db *db, int64_t run_id, const jn_db_replay_graph *g, int ng,
                           const jn_db_replay_miss *m, int nm, const jn_db_replay_extrap *x, int nx);
/* The counters of run run_id: graphs by descending hits + misses, misses
 * summed over equal (graph, guard, reason, site, seen), most frequent
 * first.  Arrays and strings are owned by the caller: jn_db_replay_free.
 * A store older than v3 (read-only) or a run without counters gives 0 rows. */
jn_status jn_db_replay_get(jn_db *db, int64_t run_id, jn_db_replay_graph **g, int *ng, jn_db_replay_miss **m,
                           int *nm);
void jn_db_replay_free(jn_db_replay_graph *g, int ng, jn_db_replay_miss *m, int nm);
/* The extrapolations of run run_id, summed over equal (graph, guard,
 * reason, site, lo, hi) with the smallest and largest value seen, most
 * frequent first; 0 rows before schema v8.  Free with jn_db_replay_extrap_free. */
jn_status jn_db_replay_extraps(jn_db *db, int64_t run_id, jn_db_replay_extrap **x, int *nx);
void jn_db_replay_extrap_free(jn_db_replay_extrap *x, int nx);

/* The misses of run run_id grouped the way a person reads them: one row
 * per (graph, guard, site, reason with the value seen taken out), so the
 * same guard failing on 300 different values is one row with the range
 * of the values and how many distinct ones.  The reason keeps the first
 * value's sentence; `pattern` is that sentence with each spelling of the
 * value replaced by JN_DB_SEEN_MARK.  Real misses first, most frequent
 * first; fallbacks by choice (JN_DB_MISS_CHOICE) after them. */
#define JN_DB_SEEN_MARK "<seen>"
typedef struct {
    const char *graph, *reason, *pattern, *site;
    int32_t guard;
    int64_t count;
    int64_t nvalues;            /* distinct values seen; 0: none, or not known (a replay keeps a
                                 * guard's range, not each value: seen_min..seen_max says it) */
    double seen_min, seen_max;  /* NaN when none */
} jn_db_miss_group;
jn_status jn_db_replay_miss_groups(jn_db *db, int64_t run_id, jn_db_miss_group **rows, int *n);
void jn_db_miss_groups_free(jn_db_miss_group *rows, int n);

/* ---- per-step times and segments of replay and eager runs (schema v6) ----
 * Written once at the end of the replaying (or eager) process.  A step is
 * the time from one step boundary (Optimizer.step(), janus.step(); the
 * first: from janus's start in the process) to the next; the 'tail' is
 * what ran after the last boundary.  started counts from janus's start. */
#define JN_DB_STEPS_MAX 100000
#define JN_DB_SEGMENTS_MAX 20000
typedef struct {
    int64_t step;               /* 1, 2, ...; the tail: one more than the last step */
    const char *kind;           /* "step" or "tail" */
    double started, duration;   /* seconds */
    int64_t segments, hits;     /* a replay's segments in the step, and those run as graphs */
    int64_t graph_ops, eager_ops; /* ops run in graphs / eagerly; -1 = not counted (an eager run) */
    double graph_seconds;       /* inside graph runs */
} jn_db_run_step;
/* Store the rows (at most JN_DB_STEPS_MAX, more is refused) in ONE
 * transaction; a step already stored is replaced. */
jn_status jn_db_run_steps_put(jn_db *db, int64_t run_id, const jn_db_run_step *rows, int n);
/* The stored rows by step (a store before v6: none). */
jn_status jn_db_run_steps(jn_db *db, int64_t run_id, jn_db_run_step **rows, int *n);
void jn_db_run_steps_free(jn_db_run_step *rows, int n);

/* Per graph (schema v6): ops run in it over its hits; the wall time of
 * its hit segments, boundary to boundary (Python, capture and the graph);
 * the segments it stood for that ran eagerly (its misses and choices),
 * their wall time and ops.  Put sums into what the run has (like
 * jn_db_replay_put); get returns them by graph name. */
typedef struct {
    const char *graph;
    int64_t ops;
    double wall;
    int64_t eager_segments;
    double eager_wall;
    int64_t eager_ops;
} jn_db_graph_times;
jn_status jn_db_graph_times_put(jn_db *db, int64_t run_id, const jn_db_graph_times *rows, int n);
jn_status jn_db_graph_times_get(jn_db *db, int64_t run_id, jn_db_graph_times **rows, int *n);
void jn_db_graph_times_free(jn_db_graph_times *rows, int n);

typedef struct {
    int64_t seq;                /* 0, 1, ... in the order they ran */
    int64_t step;               /* the run_steps row it belongs to */
    double started, duration;   /* seconds; from one segment boundary to the next */
    const char *graph;          /* the graph it ran as, or stood for when it ran eagerly ("": none) */
    int hit;                    /* 1: it ran as the compiled graph */
    int32_t guard;              /* eager: the miss's guard (-1: not a guard; JN_DB_MISS_CHOICE); hit: -1 */
    int64_t ops;                /* ops in it (graph or eager) */
} jn_db_segment;
/* Store the rows (at most JN_DB_SEGMENTS_MAX) in ONE transaction. */
jn_status jn_db_segments_put(jn_db *db, int64_t run_id, const jn_db_segment *rows, int n);
/* The stored segments by seq (a store before v6: none). */
jn_status jn_db_segments(jn_db *db, int64_t run_id, jn_db_segment **rows, int *n);
void jn_db_segments_free(jn_db_segment *rows, int n);

/* ---- what optimize said about a bundle (schema v6) ----
 * Lines of kind "summary", "refused" or "matcher" (jn_db.h's layout),
 * stored after the bundle; a bundle without rows predates them. */
typedef struct { const char *kind, *text; } jn_db_note;
/* Append n lines of one kind to bundle_id's notes (ONE transaction). */
jn_status jn_db_bundle_notes_put(jn_db *db, int64_t bundle_id, const char *kind, const char *const *texts, int n);
/* The notes of bundle_id in the order stored (a store before v6: none). */
jn_status jn_db_bundle_notes(jn_db *db, int64_t bundle_id, jn_db_note **rows, int *n);
void jn_db_notes_free(jn_db_note *rows, int n);

/* ---- regions (schema v9) ----
 * A region is one object whose calls janus owns (a module's __call__, an
 * optimizer's step or zero_grad, clip_grad_norm_): the recorder numbers
 * them per run (1, 2, ...), stores each once, and marks every call's
 * entry and exit in the step's events (JN_EV_REGION).  For its first calls
 * it also stores the code objects the call ran: hash (the bytecode and
 * constants, janus/_region.py's _Scan), where defined, whether user code,
 * and the first effect outside the call its bytecode or its builtin calls
 * show ("stores attribute count", at "train.py:25"; NULL: none).  A code
 * row stored twice for a region keeps its first effect. */
typedef struct {
    int64_t region;
    const char *kind;           /* "module", "step", "zero_grad", "clip" */
    const char *qualname;       /* the class's (clip: the function's) qualified name */
    const char *file;           /* where its code is defined */
    int line;
    const char *code_hash;      /* the hash of its top code object (forward, step, ...) */
} jn_db_region;
typedef struct {
    int64_t region;
    const char *hash, *file, *name;
    int line, user;
    const char *effect, *effect_site; /* NULL: none seen */
} jn_db_region_code;
/* One row; a region already stored keeps its row. */
jn_status jn_db_region_put(jn_db *db, int64_t run_id, const jn_db_region *r);
/* n code rows of run_id in ONE transaction. */
jn_status jn_db_region_codes_put(jn_db *db, int64_t run_id, const jn_db_region_code *rows, int n);
/* The regions of run_id by id, and their code rows by (region, file,
 * line); a store before v9 has none.  Free with the matching _free. */
jn_status jn_db_regions(jn_db *db, int64_t run_id, jn_db_region **rows, int *n);
void jn_db_regions_free(jn_db_region *rows, int n);
jn_status jn_db_region_codes(jn_db *db, int64_t run_id, jn_db_region_code **rows, int *n);
void jn_db_region_codes_free(jn_db_region_code *rows, int n);

/* What `janus optimize` decided about each recorded region, stored with
 * the bundle it made (analyzer/regions.c): replaceable, or refused with the
 * reason and the file:line that caused it; the code hashes a replay
 * compares with the code it is about to skip. */
typedef struct {
    int64_t run_id, region;
    const char *kind, *qualname;
    const char *site;           /* "file:line" of its definition */
    int64_t calls;              /* calls recorded (in the stored steps) */
    int replaceable;            /* 1 replaceable, 0 refused */
    const char *reason;         /* refused: why ("" when replaceable) */
    const char *reason_site;    /* refused: the "file:line" that caused it ("" when none) */
    const char *code_hash;      /* its top code object's hash */
    const char *codes;          /* every code object's hash it ran, space-separated, sorted */
} jn_db_region_verdict;
/* Append the verdicts of bundle_id in ONE transaction. */
jn_status jn_db_region_verdicts_put(jn_db *db, int64_t bundle_id, const jn_db_region_verdict *rows, int n);
/* The verdicts of bundle_id in the order stored (before v9: none). */
jn_status jn_db_region_verdicts(jn_db *db, int64_t bundle_id, jn_db_region_verdict **rows, int *n);
void jn_db_region_verdicts_free(jn_db_region_verdict *rows, int n);

/* What a replay's regions did (schema v10), written by the replaying
 * process at exit with its counters: per region (named as the replay names
 * it, "Block.forward (model.py:21)") its calls, the calls that ran without
 * their Python, and whether it was refused; per region and reason ("a
 * guard missed: ...", "learning", "refused by the recording: ...") how many
 * calls ran their Python for it. */
typedef struct {
    const char *region;
    int64_t calls, replaced;
    int refused;
} jn_db_region_replay;
typedef struct {
    const char *region, *reason;
    int64_t count;
} jn_db_region_replay_reason;
/* Append both in ONE transaction (a second report of the same run adds
 * up).  The run must exist; names and reasons non-NULL, counts >= 0. */
jn_status jn_db_region_replays_put(jn_db *db, int64_t run_id, const jn_db_region_replay *rows, int n,
                                   const jn_db_region_replay_reason *why, int nwhy);
/* The rows of run_id summed per region, most calls first (ties by name),
 * and the reasons summed per (region, reason), most frequent first; a
 * store before v10 has none.  Free with jn_db_region_replays_free. */
jn_status jn_db_region_replays(jn_db *db, int64_t run_id, jn_db_region_replay **rows, int *n,
                               jn_db_region_replay_reason **why, int *nwhy);
void jn_db_region_replays_free(jn_db_region_replay *rows, int n, jn_db_region_replay_reason *why, int nwhy);

/* What a replay's backward skip did (schema v11, replay/backward.c),
 * written with its counters at exit: backward() calls seen while replaying,
 * of them skipped, run to learn a plan and declined (calls = skipped +
 * learned + declined), and the skipped ones the engine ran after all (a miss
 * after them: fallbacks); per place and reason, the calls not skipped
 * (fallback 0) or run after all (fallback 1).  A place is the graph's name
 * and the matcher's token there ("" and -1: none known); a reason its
 * short name ("retain_graph") and its words. */
typedef struct {
    int64_t calls, skipped, learned, declined, fallbacks;
} jn_db_replay_backward_totals;
typedef struct {
    const char *graph, *name, *reason;
    int64_t token;
    int fallback;
    int64_t count;
} jn_db_replay_backward_reason;
/* Append both in ONE transaction (a second report of the same run adds
 * up).  The run must exist; counts >= 0, graph, name and reason non-NULL. */
jn_status jn_db_replay_backward_put(jn_db *db, int64_t run_id, const jn_db_replay_backward_totals *tot,
                                    const jn_db_replay_backward_reason *why, int nwhy);
/* The totals of run_id summed (*has = 0: none stored, as in a store before
 * v11 or a replay that saw no backward), and the reasons summed per (graph,
 * token, name, fallback), most frequent first.  Free with
 * jn_db_replay_backward_free. */
jn_status jn_db_replay_backward(jn_db *db, int64_t run_id, int *has, jn_db_replay_backward_totals *tot,
                                jn_db_replay_backward_reason **why, int *nwhy);
void jn_db_replay_backward_free(jn_db_replay_backward_reason *why, int nwhy);

/* ---- cuDNN algorithm choices (schema v5) ----
 * What a GPU's cuDNN heuristics chose for one convolution pass, so a later
 * run with the store (a replay) reuses it instead of asking again.  The
 * store treats key as opaque text; runtime/cuda/cudnn.c defines it. */
typedef struct { const char *key; int64_t algo, workspace; double seconds; } jn_db_algo;

/* Store rows for `device` in ONE transaction (all or none); a row whose
 * (device, key) exists replaces it.  Keys must be non-empty, algo,
 * workspace and seconds >= 0. */
jn_status jn_db_algos_put(jn_db *db, const char *device, const jn_db_algo *rows, int n);
/* Every row of `device` (exact match), by key; *rows and the keys are owned
 * by the caller: jn_db_algos_free.  A store older than v5 (read-only) or
 * another device gives 0 rows. */
jn_status jn_db_algos_get(jn_db *db, const char *device, jn_db_algo **rows, int *n);
void jn_db_algos_free(jn_db_algo *rows, int n);

/* ---- reading: what `janus inspect` (and a report) shows ----
 * Each function fills a malloc'ed array of plain structs, in the order
 * given, which the caller releases with the matching _free (also safe on
 * NULL).  Strings in the rows are owned by the array; a text column that
 * is NULL in the store gives NULL where the comment says so.  A run that
 * does not exist gives 0 rows.  Failures come back as JN_ERR_IO naming the
 * file and what was being read. */

/* Every read between begin and end sees one commit of the store, while a
 * recorder may be appending (one read transaction).  end is safe without
 * a begin. */
jn_status jn_db_read_begin(jn_db *db);
void jn_db_read_end(jn_db *db);

typedef struct {
    int64_t id;
    const char *kind;           /* "record", "replay" or "eager" (stores before v3: "record") */
    const char *argv_json;      /* NULL = not stored; the rest likewise */
    const char *cwd, *status, *python_version, *janus_version, *hostname, *device, *optable_hash,
        *cpu_features;
    double started, ended;      /* unix time; ended NaN while running (or killed before closing) */
    int has_exit_status;
    int64_t exit_status;
    int64_t pid;
    int64_t bundle_id;          /* a replay: the bundle it loaded; 0 = none */
    double cpu_seconds;         /* schema v6: the command's user + system CPU time; NaN = not stored */
    int64_t peak_rss;           /* schema v6: its peak resident bytes; 0 = not stored */
    int64_t pid_start;          /* schema v7: the owner's start time (ticks since boot); 0 = unknown */
    const char *boot_id;        /* schema v7: the owner's kernel boot id; NULL = unknown */
} jn_db_run_row;
/* The runs (only > 0: just that one), by id.  A run left 'running' whose
 * process is gone (jn_db_run_is_lost) reads with status "lost". */
jn_status jn_db_runs(jn_db *db, int64_t only, jn_db_run_row **rows, int *n);
void jn_db_runs_free(jn_db_run_row *rows, int n);
/* The next writer's sweep: sets status 'lost' on every lost run (above)
 * and returns those rows (*rows for jn_db_runs_free; 0 rows: none). */
jn_status jn_db_mark_lost(jn_db *db, jn_db_run_row **rows, int *n);

typedef struct {
    int64_t steps, ops, syncs;  /* sums over the run's steps */
    int64_t signatures;         /* distinct step signatures */
    double seconds;             /* sum of the step durations */
} jn_db_run_totals;
jn_status jn_db_totals(jn_db *db, int64_t run, jn_db_run_totals *out);

/* A name with a count: step kinds, ops. */
typedef struct { const char *name; int64_t count; } jn_db_count;
/* Steps per kind ("optimizer", "marker", "tail"), most first, then by name. */
jn_status jn_db_step_kinds(jn_db *db, int64_t run, jn_db_count **rows, int *n);
/* Calls per op over the run, most first, then by name. */
jn_status jn_db_op_histogram(jn_db *db, int64_t run, jn_db_count **rows, int *n);
void jn_db_counts_free(jn_db_count *rows, int n);

typedef struct {
    int64_t step;
    const char *kind;
    double started, duration;
    uint64_t signature;
    int64_t n_ops, n_syncs;
} jn_db_step_row;
/* Every step of the run, by step number (steps over time). */
jn_status jn_db_steps(jn_db *db, int64_t run, jn_db_step_row **rows, int *n);
void jn_db_steps_free(jn_db_step_row *rows, int n);

typedef struct {
    uint64_t signature;
    int64_t steps, first_step, last_step;
    int64_t n_ops;              /* of its smallest step */
} jn_db_signature;
/* The distinct step signatures of the run, by first step. */
jn_status jn_db_signatures(jn_db *db, int64_t run, jn_db_signature **rows, int *n);
void jn_db_signatures_free(jn_db_signature *rows, int n);

#define JN_DB_SYNC_VALUES 5
typedef struct {
    int kind;                   /* JN_SYNC_* */
    int64_t callsite;           /* 0 = unknown */
    int64_t count;
    int nvalues;                /* the first values observed (by step, then order), NaN = none */
    double values[JN_DB_SYNC_VALUES];
} jn_db_sync_point;
/* The run's sync points grouped by (kind, call site), most frequent first,
 * then by kind and call site. */
jn_status jn_db_sync_points(jn_db *db, int64_t run, jn_db_sync_point **rows, int *n);
void jn_db_sync_points_free(jn_db_sync_point *rows, int n);

/* The run's control-flow decisions summed per (call site, kind, outcome),
 * in that order (rows as written: jn_db_decision). */
jn_status jn_db_decision_counts(jn_db *db, int64_t run, jn_db_decision **rows, int *n);
void jn_db_decision_counts_free(jn_db_decision *rows, int n);

typedef struct {
    const char *op;
    int64_t callsite;
    int arg, dim;
    int nsizes;                 /* >= 2 */
    int64_t *sizes;             /* the distinct sizes seen, ascending */
} jn_db_shape_var;
/* Every (op, call site, argument, dim) that saw more than one size in the
 * run, by op, call site, argument and dim. */
jn_status jn_db_shape_variation(jn_db *db, int64_t run, jn_db_shape_var **rows, int *n);
void jn_db_shape_variation_free(jn_db_shape_var *rows, int n);

typedef struct { int64_t id; const char *file; int line; const char *func; } jn_db_site;
/* Every interned call site, by id; jn_db_site_find looks one up (NULL =
 * none) in such an array. */
jn_status jn_db_sites(jn_db *db, jn_db_site **rows, int *n);
const jn_db_site *jn_db_site_find(const jn_db_site *rows, int n, int64_t id);
void jn_db_sites_free(jn_db_site *rows, int n);

/* The op table a run was recorded with: its rows in enum order ("name" and
 * the attribute schema, "" when none).  0 rows: the run or its table is
 * missing (a damaged store). */
typedef struct { const char *name, *schema; } jn_db_op_row;
jn_status jn_db_run_optable(jn_db *db, int64_t run, jn_db_op_row **rows, int *n);
void jn_db_run_optable_free(jn_db_op_row *rows, int n);

/* For tests: the n-th SQLite step/exec performed by db.c from now on (1 = the
 * next one) fails as if the disk were full (SQLITE_FULL); fires once.
 * 0 = off.  Process-global. */
void jn_db_inject_fault(int after_n_writes);

#endif
