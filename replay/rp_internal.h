/* rp_internal.h -- the replay object's insides, shared by replay/'s files.
 *
 * One jn_replay (struct below) is everything `janus replay` keeps in the
 * process; each file owns one concern of it:
 *   replay.c     the object: config, new/finish/free, segments (begin, end),
 *                step and sync points
 *   capture.c    per-tensor records (rp_hold), the pending list, the
 *                capture hook's callbacks and the eager fallback
 *   deferred.c   deferred slices: values Python holds that a graph did not
 *                keep, computed only if read
 *   graph_run.c  running a COMPLETE graph over the pending list
 *   adapt.c      timing graphs against eager; the dispatch hook
 *   bundle.c     loading and unloading the bundle (CPU or CUDA)
 *   report.c     misses, counters, the summary line, the store's counters
 *   timeline.c   steps and segments over time (rp_timeline.h)
 *   match.c      the matcher (jn_match.h)
 *   region.c     regions whose Python is skipped (jn_region.h)
 * Internal names carry the prefix rp_.
 */
#ifndef RP_INTERNAL_H
#define RP_INTERNAL_H

#include <stdint.h>

#include "jn_autograd.h"
#include "jn_bundle.h"
#include "jn_exec.h"
#include "jn_match.h"
#include "jn_replay.h"
#include "jn_runtime.h"
#include "rp_timeline.h"

enum { RP_PARTIAL = 3 }; /* jn_storage.lazy while views of it are being filled */

/* One captured op of the pending list (24 bytes: a whole jn_attrs is 576,
 * and a record that size cost a cache miss per captured op). */
typedef struct {
    jn_op op;
    uint8_t into, nin, nout, nattr;
    int32_t ref;           /* refs[ref .. ref+nin) inputs, then nout outputs */
    int32_t attr;          /* attrs[attr .. attr+nattr): its own attributes (schema order) */
} rp_op;

/* What replay keeps on a tensor it holds, hung on jn_tensor.ext (the
 * extension pointer of the layer that installed the capture hook) while
 * refs > 0, pooled (rp_pool_*).  The headers the pending list holds are
 * also linked into a list per storage (jn_storage.ext points at its
 * first), which answers the runtime's held_only question without a walk
 * over the pending list. */
typedef struct rp_hold {
    jn_tensor *t;
    int64_t refs;          /* of t->refcnt: held by replay (eager would not hold them) */
    int64_t pend;          /* uses by the pending list, which holds one of refs while pend > 0 */
    uint32_t mark;         /* visited in the current scan (rp_next_mark) */
    int64_t slot;          /* the current scan's index for it (graph_run.c), valid if marked */
    struct rp_hold *prev, *next; /* the storage's list while pend > 0; next: the free list */
} rp_hold;

typedef struct rp_chunk {
    struct rp_chunk *next;
    rp_hold h[];
} rp_chunk;

typedef struct {
    rp_hold *free;
    int64_t nfree;
    rp_chunk *chunks;
} rp_pool;

typedef struct {
    int32_t graph, guard, token;
    char *why;             /* first sentence seen */
    char *site;
    double seen, lo, hi;   /* the first value seen, and the range of them */
    int64_t count;
} rp_miss;

/* A SEEN guard hits went past (report.c): its recorded range, the values
 * seen outside it, in how many hits. */
typedef struct {
    int32_t graph, guard;
    double smin, smax;
    int64_t count;
} rp_extrap;

/* A deferred slice: the pending ops that compute values Python still holds
 * but a graph did not keep, over shadow storages (private copies of every
 * other pending storage they touch, snapshots of the state the graph then
 * overwrote), run only if one of the values is read. */
typedef struct rp_slice {
    rp_op *ops;
    int64_t nops;
    jn_attr *attrs;               /* the ops' attributes (rp_op.attr) */
    jn_tensor **refs;             /* per op its inputs then outputs (remapped) */
    int64_t nrefs;
    jn_tensor **held;             /* the distinct headers of refs, each held once */
    int64_t nheld;
    jn_tensor **vhdr;             /* the distinct headers of refs on the values (needed) */
    int64_t nvhdr;
    jn_storage **needed;
    int64_t nneed;
    jn_tensor **checked;          /* existing inputs read as they are: must not change (in held) */
    uint64_t *ver;
    int64_t nchecked;
    jn_storage **kept_from;       /* values the graph keeps that the slice reads instead of recomputing */
    jn_storage **kept_to;         /* their private copies, filled by rp_slice_take_kept after the graph ran */
    int64_t nkept;
    struct rp_slice *next;
} rp_slice;

/* Timing a graph against eager (adapt.c). */
enum { AD_PROBE = 0, AD_KEEP, AD_EAGER };
enum { AD_PAIRS = 9, AD_SURE = 5 };
enum { PH_FIRST = -1, PH_CAP_WARM, PH_CAP, PH_EAGER_WARM, PH_EAGER }; /* rp_adapt.phase */
typedef struct {
    int state;
    int phase;                   /* PH_*: what this graph's next segment is */
    int npairs, obs_turns;       /* pairs timed; eager runs this graph asked for */
    double last_cap;             /* the timed compiled run waiting for its eager partner */
    double cap[AD_PAIRS], obs[AD_PAIRS], ratio[AD_PAIRS];
    double med;                  /* decided: the median ratio */
    char *why;                   /* AD_EAGER: the reason its segments count as fallbacks */
} rp_adapt;

typedef struct {
    int64_t hits, misses;
    int64_t extrap;        /* of the hits: past a recorded range */
    double seconds;
    rp_adapt ad;
    jn_ex_exec *x;
    int32_t *keep_idx;     /* per graph output: index among keep outputs, -1 */
    int nkeep;
    int broken;            /* the executor refused it once: never again */
    struct rp_gbuf *buf;   /* graph_run.c: its runs' per-input arrays and scalar tensors, kept */
} rp_graph;

/* How the current segment runs (adapt). */
enum {
    SEG_CAPTURE = 0,   /* captured: a graph or the fallback at its end */
    SEG_OBSERVE,       /* eager, the matcher fed from the dispatch hook: timed for its graph */
    SEG_PLAIN,         /* eager: every graph it could become was left to eager */
    SEG_OFF            /* eager after a miss while observed (already counted) */
};

struct jn_replay {
    jn_rp_config cfg;      /* effective: adapt and defer as this device allows */
    char algos_dev[300];   /* cfg.algos_device, copied */
    jn_ex_cuda_graphs_runner runner; /* *cfg.cuda_runner, copied */
    int on;                /* hooks installed: segments are followed */
    int quiet;             /* nested reads that are no sync points */
    int seg_mode;          /* SEG_* */
    int seg_entry;         /* where this segment started: 0 a step start, else the JN_SYNC_* before */
    int seg_any;           /* an op was dispatched (captured, pushed or run eagerly) in this segment */
    int obs_skip;          /* the hook's next call is the op that started SEG_OBSERVE (fed already) */
    int32_t seg_graph;     /* SEG_PLAIN: the graph it stands for */
    double seg_t0;         /* when a timed segment's first op came (0: not timed) */
    double t_begin;
    int64_t run_id;
    char *db_path;
    /* the bundle (bundle.c) */
    jn_cg_bundle *b;
    const jn_ir_module *m;
    jn_ex_lib *lib;
    /* a CUDA bundle (dev JN_CUDA): its module and the graphs' device table
     * over the eager CUDA backend; every graph's executor runs there */
    int dev;
    jn_ex_dlib *dlib;
    jn_ex_cuda_graphs *cg;
    jn_rp_matcher *mt;
    rp_graph *g;
    /* the segment (capture.c) */
    rp_op *ops;
    int64_t nops, capops;
    jn_tensor **refs;
    int64_t nrefs, caprefs;
    jn_attr *attrs;        /* the ops' attributes (rp_op.attr) */
    int64_t nattrs, capattrs;
    int64_t last_cmp;
    int flushing;
    jn_status fatal;       /* rp_run_graph's status when it returned -1 */
    struct rp_runbuf *runbuf; /* graph_run.c: a run's sets over the list, kept between runs */
    rp_pool pool;          /* the rp_hold records */
    uint32_t epoch;        /* rp_next_mark */
    rp_slice *deferred;
    /* counters (report.c) */
    int64_t segments, hits, misses, sliced, deferred_runs;
    int64_t chosen;        /* segments run eagerly by choice (adapt; timing runs included) */
    rp_miss *miss;
    int nmiss, capmiss;
    int64_t extrapolated;  /* hits past a recorded range (SEEN guards) */
    rp_extrap *xp;
    int nxp, capxp;
    rp_timeline tl;        /* steps and segments over time, for `janus report` (timeline.c) */
    int rg_observing;      /* a region call is observed: the dispatch hook and syncs log to rg */
    struct rp_regions *rg; /* region.c: templates, observation log, counters (NULL until used) */
    int rg_batch;          /* a template runs under capture: the hook feeds through rp_region_feed */
    /* backward skip (backward.c) */
    uint64_t seg_seq0;     /* autograd nodes made in this segment have seq >= it */
    struct rp_bw *bw;      /* plans, this segment's skips, counters (NULL until used) */
};

/* ---------------------------------------------------------- backward.c */
/* Why a backward was not skipped, or was skipped and then run by the engine
 * after all (the FELL_ ones): X(id, name, words).  The name is what tests
 * and --json key on, the words what a person reads; both are stored with
 * the counters (jn_db_replay_backward_put).  The autograd walk's reasons
 * (JN_AG_WALK_WHYS) follow as RP_BW_WALK_<id>. */
#define RP_BW_WHYS(X)                                                                                       \
    X(OFF, "off", "the skip is off (JANUS_REPLAY_BACKWARD_SKIP=0)")                                        \
    X(AFTER_MISS, "after_miss", "a miss earlier in its segment: the rest of the segment ran eagerly")      \
    X(EAGER_SEGMENT, "eager_segment", "its segment ran eagerly by choice (timing, or a graph left to eager)") \
    X(REGION, "region", "inside a region call being observed or run from its template")                    \
    X(NO_MATCHER, "no_matcher", "the bundle has no matcher")                                               \
    X(RETAIN, "retain_graph", "retain_graph=True")                                                         \
    X(ROOTS, "roots", "an explicit gradient or several roots")                                             \
    X(FIRST_OP, "first_op", "no op of its segment came before it (its graph was made before a sync)")     \
    X(NOT_ONE, "not_one_graph", "not one graph followed (several could still match)")                      \
    X(LOOP, "loop", "inside a loop of its graph")                                                          \
    X(FINGERPRINT, "fingerprint", "its autograd graph kept changing (4 variants learned at its place)")    \
    X(PLANS, "plans", "256 plans learned in all: new places keep coming (sequence lengths, ...)")          \
    X(STRETCH, "stretch", "its ops were not matched to their end by one cursor of one graph")             \
    X(NESTED, "nested", "a backward inside its stretch was skipped")                                       \
    X(PY_SCALAR, "py_scalar", "a number made by the backward is read as a Python scalar")                  \
    X(UNKNOWN_INPUT, "unknown_input", "the backward reads a tensor it neither made nor found saved")        \
    X(GRAD_NOT_OUTPUT, "grad_not_output", "a leaf's .grad is not the first output of one of the backward's ops") \
    X(GRAD_VIEW, "grad_view", "a leaf's .grad is a view or shared")                                        \
    X(LEARN_STOPPED, "learn_stopped", "a miss or an error while it ran to learn its plan")                 \
    X(NOMEM, "nomem", "out of memory")                                                                      \
    X(FELL_MISS, "fell_back_miss", "a miss later in its segment: the engine ran it there")                 \
    X(FELL_REFUSED, "fell_back_refused", "its segment's graph was refused: the engine ran it")             \
    X(FELL_CHOICE, "fell_back_choice", "its segment ran eagerly by choice: the engine ran it")             \
    X(FELL_NOMEM, "fell_back_nomem", "out of memory: the engine ran it")
typedef enum {
#define X(id, name, words) RP_BW_##id,
    RP_BW_WHYS(X)
#undef X
    RP_BW_WALK, /* RP_BW_WALK + JN_AG_WALK_<id> - 1: the walk's reasons */
    RP_BW_NWHY = RP_BW_WALK + JN_AG_WALK_NWHY - 1
} rp_bw_why;
/* The reason's name and words (NULL out of range); a fallback or not. */
const char *rp_bw_why_name(int why);
const char *rp_bw_why_words(int why);
static inline int rp_bw_why_fell(int why) { return why >= RP_BW_FELL_MISS && why <= RP_BW_FELL_NOMEM; }

/* The capture hook's backward callback (jn_rt_capture_hook.backward). */
jn_status rp_bw_hook(void *ctx, int n, jn_tensor *const *roots, jn_tensor *const *grads, int retain, int *handled);
/* The fallback reaches a skipped backward's head record: the engine runs;
 * cause (an RP_BW_FELL_ reason) is why the list runs eagerly. */
jn_status rp_bw_fallback(jn_replay *R, const rp_op *p, int cause);
/* The list is cleared: this segment's skips are done with. */
void rp_bw_clear(jn_replay *R);
void rp_bw_free(jn_replay *R);
/* Counters: backward calls seen, skipped, learned, declined (not skipped,
 * learning aside), fell back (skipped, then run by the engine). */
typedef struct {
    int64_t calls, skipped, learned, declined, fallbacks;
} rp_bw_totals;
void rp_bw_counts(const jn_replay *R, rp_bw_totals *t);
/* The i-th decline reason in words, over all places (NULL past the end). */
const char *rp_bw_reason(const jn_replay *R, int i, int64_t *count);
/* The i-th (place, reason) row, declines and fallbacks, in first-seen
 * order: 0 past the end.  graph and token -1 where it was at no place of
 * one graph. */
int rp_bw_row(const jn_replay *R, int i, int32_t *graph, int32_t *token, int *why, int64_t *count);

/* ------------------------------------------------------------ region.c */
/* While a region is observed: log an op (the dispatch hook), a sync point. */
void rp_region_tap(jn_replay *R, jn_op op, int nin, jn_tensor *const *in, const jn_attrs *a, int nout,
                   jn_tensor *const *out);
void rp_region_sync_tap(jn_replay *R);
/* The capture hook's matcher feed while a template runs (R->rg_batch):
 * jn_rp_match_feed, with the checks the template proves left out where the
 * cursor stands where its plan says. */
jn_rp_match_kind rp_region_feed(jn_replay *R, const jn_rp_match_event *ev, jn_rp_match_result *res);
/* "; regions: ..." for the summary line ("" when no region call was seen). */
void rp_region_summary(const jn_replay *R, char *buf, size_t n);
void rp_region_free(jn_replay *R);

/* ------------------------------------------------------------ helpers */
/* The replay's timers (segments, timing's choice) read jn_rt_seconds. */

/* The home slot of pointer p in an open-addressed table of nslot (a power
 * of two) slots; probing goes on linearly.  Fibonacci hashing: the high
 * bits of p * 2^64/phi spread heap addresses that share their low bits. */
static inline int64_t rp_home_slot(const void *p, int64_t nslot) {
    return (int64_t)(((uint64_t)(uintptr_t)p * 0x9E3779B97F4A7C15ull) >> 20) & (nslot - 1);
}

static inline jn_tensor **rp_op_in(const jn_replay *R, const rp_op *p) { return R->refs + p->ref; }
static inline jn_tensor **rp_op_out(const jn_replay *R, const rp_op *p) { return R->refs + p->ref + p->nin; }
/* Output k of p is an existing tensor written in place (not created here):
 * an in-place op writes every output (its first nout inputs). */
static inline int rp_written(const rp_op *p) {
    return p->into == 1 || (!p->into && (jn_op_info(p->op)->flags & JN_F_INPLACE));
}
/* rp_op.into of a skipped backward's records (backward.c): its head (attr:
 * the skip's index in R->bw_skips) and the records standing for the rest of
 * its matcher events (holding what graph_run reads by event: a graph input
 * bound there, a .grad made there). */
enum { RP_BW_HEAD = 3, RP_BW_GHOST = 2 };

/* ------------------------------------------------ capture.c: holding */
/* Room for n more records: 0 when out of memory (error set).  The holds
 * below then cannot fail. */
int rp_pool_reserve(jn_replay *R, int64_t n);
/* Append a record holding in and out (no attributes; attr is the caller's):
 * 0 when out of memory (error set). */
int rp_cap_push(jn_replay *R, jn_op op, int into, int32_t attr, int nin, jn_tensor *const *in, int nout,
                jn_tensor *const *out);
/* Capture off for the rest of the segment: the list runs now (why: a miss to count). */
jn_status rp_capture_off(jn_replay *R, int32_t graph, int32_t guard, int32_t token, double seen, const char *why);
void rp_pool_free(rp_pool *P);
/* t's record, made (from the reserved ones) on first use. */
static inline rp_hold *rp_record(jn_replay *R, jn_tensor *t) {
    rp_hold *h = (rp_hold *)t->ext;
    if (h) return h;
    h = R->pool.free;
    R->pool.free = h->next;
    R->pool.nfree--;
    h->t = t;
    h->refs = h->pend = 0;
    h->mark = 0;
    h->prev = h->next = NULL;
    t->ext = h;
    return h;
}
/* A reference replay holds on t (pending list or deferred slice). */
static inline void rp_hold_ref(jn_replay *R, jn_tensor *t) {
    jn_tensor_incref(t);
    rp_record(R, t)->refs++;
}
/* t's one reference (a header made here) becomes a held one. */
static inline void rp_hold_new(jn_replay *R, jn_tensor *t) { rp_record(R, t)->refs = 1; }
/* Drop one held reference (t may die here; its record goes back to the
 * pool with its last reference, before). */
static inline void rp_unhold(jn_replay *R, jn_tensor *t) {
    rp_hold *h = (rp_hold *)t->ext;
    if (--h->refs == 0) {
        t->ext = NULL;
        h->next = R->pool.free;
        R->pool.free = h;
        R->pool.nfree++;
    }
    jn_tensor_decref(t);
}
/* The references to t replay holds. */
static inline int64_t rp_held(const jn_tensor *t) { return t->ext ? ((const rp_hold *)t->ext)->refs : 0; }
/* Whether held t was visited in the scan of mark (rp_next_mark); marks it. */
static inline int rp_visited(jn_tensor *t, uint32_t mark) {
    rp_hold *h = (rp_hold *)t->ext;
    if (h->mark == mark) return 1;
    h->mark = mark;
    return 0;
}
/* A fresh mark: headers visited in one scan. */
uint32_t rp_next_mark(jn_replay *R);
void rp_clear_list(jn_replay *R);
/* An eager storage for a pending one, on its device. */
jn_status rp_storage_alloc(jn_storage *st);
/* Run the pending list eagerly, in order (the fallback); cause: why, as an
 * RP_BW_FELL_ reason (what a skipped backward in the list counts under). */
jn_status rp_fallback(jn_replay *R, int cause);
/* One op (its attributes at attrs + p->attr) with its eager kernel over in
 * (its inputs, then its outputs), its pending outputs given their bytes
 * first. */
jn_status rp_run_op(const rp_op *p, const jn_attr *attrs, jn_tensor *const *in);
void rp_fill_arg(jn_rp_match_arg *r, const jn_tensor *t, int is_out);
jn_status rp_cap_capture(void *ctx, jn_op op, int nin, jn_tensor *const *in, const jn_attrs *a, int nout,
                         jn_tensor *const *out, int into);
jn_status rp_cap_materialize(void *ctx, jn_tensor *t);
int64_t rp_cap_held_only(void *ctx, const jn_storage *st);
int64_t rp_cap_held_refs(void *ctx, const jn_tensor *t);
int rp_cap_expects(void *ctx, jn_op op, const jn_tensor *t);

/* --------------------------------------------------------- deferred.c */
/* The storages a deferred slice must not share (it works on private copies
 * of them): state the graph overwrites, pending storages something besides
 * the pending list reaches or the graph fills. */
typedef struct {
    int (*has)(const void *ctx, const jn_storage *st);
    const void *ctx;
    /* NULL, or: the storages the graph keeps whole that the slice reads
     * as the graph leaves them (its cut: their producers are not in it);
     * private copies of them are taken after the graph ran */
    int (*kept)(const void *ctx, const jn_storage *st);
} rp_shared;
/* The ops of the pending list with in_slice[e] set as a deferred slice
 * (NULL when out of memory: the caller runs the slice now). */
rp_slice *rp_slice_new(jn_replay *R, const uint8_t *in_slice, jn_storage *const *needed, int64_t nneed,
                       const rp_shared *sh);
void rp_slice_free(jn_replay *R, rp_slice *D);
/* After the graph ran and filled its outputs: D's copies of the kept
 * values it reads (out of memory: an error, D unusable). */
jn_status rp_slice_take_kept(rp_slice *D);
jn_status rp_slice_run(jn_replay *R, rp_slice *D);
rp_slice *rp_slice_find(const jn_replay *R, const jn_storage *st);
void rp_slice_gc(jn_replay *R);
/* At the end: the values something still reaches are computed, the rest dropped. */
void rp_slice_settle(jn_replay *R);

/* -------------------------------------------------------- graph_run.c */
/* Run graph res->graph over the pending list and fill it; 0 done, 1:
 * nothing was written and why says why the list must run eagerly, -1: it
 * failed after writing state (R->fatal). */
int rp_run_graph(jn_replay *R, const jn_rp_match_result *res, char *why, size_t wn);
void rp_graph_free(rp_graph *G);
void rp_runbuf_free(jn_replay *R);

/* ------------------------------------------------------------ adapt.c */
jn_status rp_adapt_first(jn_replay *R, int into);
jn_status rp_seg_end_eager(jn_replay *R);
/* After a compiled run of graph gi (nevents ops). */
void rp_adapt_hit(jn_replay *R, int32_t gi, int64_t nevents);
void rp_eager_after(void *ctx, jn_op op, int nin, jn_tensor *const *in, const jn_attrs *a, int nout,
                    jn_tensor *const *out);

/* ----------------------------------------------------------- bundle.c */
/* R->b, R->m, R->mt, R->lib (and the CUDA device's) of the store at
 * db_path; refusals name what is missing.  rp_unload gives it all back. */
jn_status rp_load(jn_replay *R, const char *db_path);
void rp_unload(jn_replay *R);

/* ----------------------------------------------------------- replay.c */
jn_status rp_seg_end(jn_replay *R);

/* ----------------------------------------------------------- report.c */
void rp_note_miss(jn_replay *R, int32_t graph, int32_t guard, int32_t token, double seen, const char *why);
/* A hit of graph `graph` that went past the recorded ranges of n SEEN guards. */
void rp_note_extrap(jn_replay *R, int32_t graph, const jn_rp_match_extrap *x, int32_t n);
jn_status rp_lost_error(const jn_tensor *t);
jn_status rp_strict_error(const char *why);
void rp_write_counters(jn_replay *R);
void rp_print_end(const jn_replay *R, int print_summary);
void rp_miss_free(jn_replay *R);

#endif
