/* replay.c -- lazy capture, graph runs and eager fallback (jn_replay.h).
 *
 * While a segment is followed (jn_rt_capturing), every dispatched op comes
 * here with its outputs pending (storage data NULL, lazy PENDING; in-place
 * targets keep their bytes but are marked PENDING too, so nothing outside
 * the dispatcher reads them stale).  Each op is kept in a pending list (op,
 * attributes, references to its input and output headers) and fed to the
 * matcher with jn_tensor.id as identity.  A MISS from feed runs the list
 * eagerly at once and the rest of the segment runs eagerly.
 *
 * At the segment's end a COMPLETE graph runs only if, before anything is
 * written, every check below holds; otherwise the list runs eagerly (counted
 * as a miss with the reason):
 *   - every tensor input is bound by the matcher to an event argument of
 *     this segment, and none of them is itself pending;
 *   - every existing tensor a captured op wrote in place is the input of a
 *     STATE output of the graph (else its write would be lost);
 *   - every pending storage that something outside the list can still reach
 *     (a header with references beyond the list's, or a header the list does
 *     not know, e.g. autograd's saved aliases) is filled whole by a KEEP
 *     output (jn_rp_match_token_output of the event that created it); one
 *     reached but not produced at all becomes LOST (data NULL): the
 *     recording proved it is never read again, and a read raises a
 *     RuntimeError saying so instead of returning garbage; one only partly
 *     filled (a view of it kept) falls back.
 * The executor writes state in place (versions restored to what capture set,
 * which is eager's count), keep outputs are moved (a whole contiguous buffer
 * the executor owns alone) or copied into the pending headers.
 *
 * Fallback runs the list in order with the eager kernels (jn_rt_run_kernel /
 * jn_rt_run_into), allocating each pending storage just before its op; a
 * kernel error (eager would have raised at the op) leaves the rest LOST and
 * is returned to whoever ended the segment.
 */
#include "jn_replay.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "jn_algos.h"
#include "jn_autograd.h"
#include "jn_backend.h"
#include "jn_bundle.h"
#include "jn_cg.h"
#include "jn_db.h"
#include "jn_exec.h"
#include "jn_match.h"
#include "jn_settings.h"

enum { PARTIAL = 3 }; /* jn_storage.lazy while views of it are being filled */

typedef struct {
    jn_op op;
    uint8_t into, nin, nout;
    int32_t ref;           /* refs[ref .. ref+nin) inputs, then nout outputs */
    jn_attrs a;
} pop;

typedef struct {
    int32_t graph, guard, token;
    char *why;             /* first sentence seen */
    char *site;
    double seen;
    int64_t count;
} miss_row;

/* A deferred slice: the pending ops that compute values Python still holds
 * but a graph did not keep, over shadow storages (private copies of every
 * other pending storage they touch, snapshots of the state the graph then
 * overwrote), run only if one of the values is read. */
typedef struct dslice {
    pop *ops;
    int64_t nops;
    jn_tensor **refs;             /* held: per op its inputs then outputs (remapped) */
    int64_t nrefs;
    jn_storage **needed;
    int64_t nneed;
    jn_tensor **checked;          /* existing inputs read as they are: must not change */
    uint64_t *ver;
    int64_t nchecked;
    struct dslice *next;
} dslice;

/* Timing a graph against eager (JANUS_REPLAY_ADAPT).  After its first
 * hit, the graph's segments cycle through four phases: an untimed compiled
 * run, a timed one, an untimed eager run and a timed one -- eager runs
 * still feed the matcher, so the time is known to be the graph's -- until
 * AD_PAIRS (compiled, eager) pairs are timed, or AD_SURE all on one side
 * of the margin, each run as time per op (a segment's length may follow
 * the data); then the graph is kept, or
 * left to eager when the median of the pairs' compiled/eager ratios is
 * above 1 + margin: its segments then run eagerly from their first op,
 * without capture.  The untimed runs absorb a switch: before an eager run
 * the graphs' idle memory is given back (else eager's buffers come on top
 * of it), and the compiled run after it allocates and faults its arena in
 * again; each would otherwise be timed as the mode's cost.  Pairs, not two
 * medians: this machine's speed drifts within a run by more than the
 * difference measured. */
enum { AD_PROBE = 0, AD_KEEP, AD_EAGER };
enum { AD_PAIRS = 9, AD_SURE = 5 };
enum { PH_FIRST = -1, PH_CAP_WARM, PH_CAP, PH_EAGER_WARM, PH_EAGER }; /* adapt_row.phase */
typedef struct {
    int state;
    int phase;                   /* PH_*: what this graph's next segment is */
    int npairs, obs_turns;       /* pairs timed; eager runs this graph asked for */
    double last_cap;             /* the timed compiled run waiting for its eager partner */
    double cap[AD_PAIRS], obs[AD_PAIRS], ratio[AD_PAIRS];
    double med;                  /* decided: the median ratio */
    char *why;                   /* AD_EAGER: the reason its segments count as fallbacks */
} adapt_row;

typedef struct {
    int64_t hits, misses;
    double seconds;
    adapt_row ad;
    jn_ex_exec *x;
    int32_t *keep_idx;     /* per graph output: index among keep outputs, -1 */
    int nkeep;
    int broken;            /* the executor refused it once: never again */
} graph_row;

/* How the current segment runs (JANUS_REPLAY_ADAPT). */
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
    int hooked;            /* eager_after is the dispatch hook */
    int seg_mode;          /* SEG_* */
    int obs_skip;          /* the hook's next call is the op that started SEG_OBSERVE (fed already) */
    int32_t seg_graph;     /* SEG_PLAIN: the graph it stands for */
    double seg_t0;         /* when a timed segment's first op came (0: not timed) */
    int64_t chosen;        /* segments run eagerly by that choice (timing runs included) */
    double t_begin;
    int64_t run_id;
    char *db_path;
    jn_cg_bundle *b;
    const jn_ir_module *m;
    jn_ex_lib *lib;
    /* a CUDA bundle (dev JN_CUDA): its module and the graphs' device table
     * over the eager CUDA backend; every graph's executor runs there */
    int dev;
    jn_ex_dlib *dlib;
    jn_ex_cuda_graphs *cg;
    jn_rp_matcher *mt;
    graph_row *g;
    /* the segment */
    pop *ops;
    int64_t nops, capops;
    jn_tensor **refs;
    int64_t nrefs, caprefs;
    int64_t last_cmp;
    int flushing;
    jn_status fatal;       /* run_graph's status when it returned -1 */
    uint32_t epoch;        /* next_mark */
    /* counters */
    int64_t segments, hits, misses, sliced, deferred_runs;
    dslice *deferred;
    miss_row *miss;
    int nmiss, capmiss;
};

/* ------------------------------------------------------------ helpers */
static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static jn_tensor **op_in(jn_replay *R, const pop *p) { return R->refs + p->ref; }
static jn_tensor **op_out(jn_replay *R, const pop *p) { return R->refs + p->ref + p->nin; }
/* Output k is an existing tensor written in place (not created here). */
static int written(const pop *p, int k) {
    (void)k; /* an in-place op writes every output (its first nout inputs) */
    return p->into || (jn_op_info(p->op)->flags & JN_F_INPLACE);
}

static void hold(jn_tensor *t) {
    jn_tensor_incref(t);
    t->capture_refs++;
}

/* Drop one held reference (t may die here). */
static void unhold(jn_tensor *t) {
    t->capture_refs--;
    jn_tensor_decref(t);
}

/* A reference of the pending list: held, and the header linked into its
 * storage's list of headers the pending list holds (cap_held_only). */
static void pend_hold(jn_tensor *t) {
    hold(t);
    if (t->capture_pend++ == 0) {
        jn_storage *st = t->storage;
        st->capture_hdrs++;
        t->capture_prev = NULL;
        t->capture_next = st->capture_list;
        if (st->capture_list) st->capture_list->capture_prev = t;
        st->capture_list = t;
    }
}

static void pend_unhold(jn_tensor *t) {
    if (--t->capture_pend == 0) {
        jn_storage *st = t->storage;
        st->capture_hdrs--;
        if (t->capture_prev) t->capture_prev->capture_next = t->capture_next;
        else st->capture_list = t->capture_next;
        if (t->capture_next) t->capture_next->capture_prev = t->capture_prev;
        t->capture_prev = t->capture_next = NULL;
    }
    unhold(t);
}

/* A fresh jn_tensor.capture_mark value: headers visited in one scan. */
static uint32_t next_mark(jn_replay *R) {
    if (++R->epoch == 0) R->epoch = 1; /* a wrapped mark of 0 could match a fresh header */
    return R->epoch;
}

/* Headers on st the pending list holds that only capture keeps alive
 * (each counted once; a header held by anyone else is not counted; one
 * only a deferred slice holds is not counted either, so autograd never
 * steals bytes a deferred slice still reads).  Called for every gradient
 * autograd may steal, so it walks st's own list of those headers
 * (capture_list), not the pending list: char_lstm's step asked ~60 times
 * about a storage with ~25 held views, each a walk over ~650 references
 * before. */
static int64_t cap_held_only(void *ctx, const jn_storage *st) {
    (void)ctx;
    int64_t n = 0;
    for (const jn_tensor *h = st->capture_list; h; h = h->capture_next) n += h->refcnt == h->capture_refs;
    return n;
}

static void clear_list(jn_replay *R) {
    for (int64_t i = 0; i < R->nrefs; i++) pend_unhold(R->refs[i]);
    R->nrefs = R->nops = 0;
}

static void note_miss(jn_replay *R, int32_t graph, int32_t guard, int32_t token, double seen, const char *why) {
    R->misses++;
    if (graph >= 0 && R->g) R->g[graph].misses++;
    for (int i = 0; i < R->nmiss; i++) {
        miss_row *r = &R->miss[i];
        if (r->graph == graph && r->guard == guard && r->token == token && (guard >= 0 || !strcmp(r->why, why))) {
            r->count++;
            return;
        }
    }
    if (R->nmiss == R->capmiss) {
        int cap = R->capmiss ? 2 * R->capmiss : 16;
        miss_row *n = realloc(R->miss, sizeof *n * (size_t)cap);
        if (!n) return;
        R->miss = n;
        R->capmiss = cap;
    }
    miss_row *r = &R->miss[R->nmiss];
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
    r->graph = graph, r->guard = guard, r->token = token, r->seen = seen, r->count = 1;
    R->nmiss++;
}

static jn_status lost_error(const jn_tensor *t) {
    char sh[128];
    return jn_error(JN_ERR_RUNTIME,
                    "janus replay: a tensor of shape %s was computed inside a compiled graph that does not keep it "
                    "(the recorded runs never read it again) and this run reads it; record a run that reads it "
                    "(`janus record`, `janus optimize`) or run eagerly with JANUS_REPLAY=0",
                    jn_shape_str(t->ndim, t->shape, sh, sizeof sh));
}

/* st takes over the memory of `from` (same device; its own allocation or
 * one with a release, never bytes inside its block), which is left empty:
 * how an executor's output becomes a pending tensor's bytes. */
static void take_memory(jn_storage *st, jn_storage *from) {
    st->data = from->data;
    st->owns_data = from->owns_data;
    st->block_class = from->block_class;
    st->release = from->release;
    st->release_ctx = from->release_ctx;
    from->data = NULL;
    from->owns_data = 0;
    from->release = NULL;
    from->release_ctx = NULL;
}

static void release_tensor(void *t) { jn_tensor_decref(t); }

/* jn_rt_storage_alloc for a storage on any device: a pending device
 * storage (a CUDA replay) gets its bytes from the device's backend -- a
 * tensor of the backend, kept alive by st (its bytes may live inside its
 * storage block, so they are borrowed, not taken). */
static jn_status storage_alloc(jn_storage *st) {
    if (st->data || st->device == JN_CPU) return jn_rt_storage_alloc(st);
    const jn_rt_backend *be = jn_rt_backends[st->device];
    if (!be)
        return jn_error(JN_ERR_UNSUPPORTED, "janus replay: the %s backend is not available for a pending tensor",
                        jn_device_name(st->device));
    jn_meta m = {JN_U8, 1, {(int64_t)st->nbytes}};
    jn_tensor *t = be->tensor_new(&m);
    if (!t) {
        char why[512];
        snprintf(why, sizeof why, "%s", jn_errmsg());
        return jn_error(JN_ERR_NOMEM, "janus replay: allocating %zu bytes on %s for a pending tensor: %s", st->nbytes,
                        jn_device_name(st->device), why);
    }
    st->data = t->storage->data;
    st->owns_data = 0;
    st->release = release_tensor;
    st->release_ctx = t;
    return JN_OK;
}

/* ----------------------------------------------------------- fallback */
/* Run the pending list eagerly, in order.  Every storage it touches is
 * current afterwards, except those of ops after a failing one (LOST). */
static jn_status fallback(jn_replay *R) {
    jn_status s = JN_OK;
    R->flushing = 1;
    for (int64_t e = 0; e < R->nops; e++) {
        const pop *p = &R->ops[e];
        for (int k = 0; k < p->nout; k++) op_out(R, p)[k]->storage->lazy = 0;
    }
    for (int64_t e = 0; e < R->nops; e++) {
        const pop *p = &R->ops[e];
        jn_tensor **out = op_out(R, p);
        if (s == JN_OK) {
            for (int k = 0; k < p->nout && s == JN_OK; k++) s = storage_alloc(out[k]->storage);
            if (s == JN_OK) {
                if (p->into) s = jn_rt_run_into(p->op, p->nin, op_in(R, p), &p->a, out[0]);
                else if (!(jn_op_info(p->op)->flags & JN_F_VIEW)) s = jn_rt_run_kernel(p->op, p->nin, op_in(R, p), &p->a, out);
            }
            if (s == JN_OK) continue;
        }
        for (int k = 0; k < p->nout; k++) /* never ran: its bytes are not eager's */
            if (!written(p, k)) out[k]->storage->lazy = JN_LAZY_LOST;
    }
    R->flushing = 0;
    clear_list(R);
    return s;
}

/* ---------------------------------------------------- deferred slices */
static void dslice_free(jn_replay *R, dslice *D) {
    if (!D) return;
    for (int64_t i = 0; i < D->nrefs; i++) unhold(D->refs[i]);
    for (int64_t i = 0; i < D->nchecked; i++) unhold(D->checked[i]);
    free(D->ops), free(D->refs), free(D->needed), free(D->checked), free(D->ver), free(D);
}

/* A header over base's storage seeing it as h sees its own. */
static jn_tensor *shadow_header(jn_replay *R, jn_tensor *base, const jn_tensor *h) {
    jn_tensor *t = jn_tensor_alias(base);
    if (!t) return NULL;
    t->dtype = h->dtype;
    t->ndim = h->ndim;
    memcpy(t->shape, h->shape, sizeof t->shape);
    memcpy(t->strides, h->strides, sizeof t->strides);
    t->offset = h->offset;
    t->is_view = 1;
    t->capture_refs = 1; /* released by unhold like every held reference */
    return t;
}

static int has_storage(jn_storage *const *v, int64_t n, const jn_storage *st) {
    for (int64_t i = 0; i < n; i++)
        if (v[i] == st) return 1;
    return 0;
}

/* The home slot of pointer p in an open-addressed table of nslot (a power
 * of two) slots; probing goes on linearly.  Fibonacci hashing: the high
 * bits of p * 2^64/phi spread heap addresses that share their low bits. */
static inline int64_t home_slot(const void *p, int64_t nslot) {
    return (int64_t)(((uint64_t)(uintptr_t)p * 0x9E3779B97F4A7C15ull) >> 20) & (nslot - 1);
}

/* The slice in_slice[] of the pending list as a deferred slice: needed
 * storages stay the real ones, every other pending storage gets a private
 * shadow, state the graph writes (written_st) a snapshot of its bytes now,
 * other existing inputs are read later as they are if their version has
 * not moved.  NULL when out of memory (the caller runs the slice now). */
static dslice *dslice_new(jn_replay *R, const uint8_t *in_slice, jn_storage *const *needed, int64_t nneed,
                          jn_storage *const *written_st, int64_t nwritten) {
    int64_t nops = 0, nrefs = 0;
    for (int64_t e = 0; e < R->nops; e++)
        if (in_slice[e]) nops++, nrefs += R->ops[e].nin + R->ops[e].nout;
    dslice *D = calloc(1, sizeof *D);
    jn_storage **from = calloc((size_t)nrefs + 1, sizeof *from);
    jn_tensor **base = calloc((size_t)nrefs + 1, sizeof *base);
    int64_t nmap = 0, nslot = 16;
    while (nslot < 2 * (nrefs + 1)) nslot *= 2;
    int64_t *slot = calloc((size_t)nslot, sizeof *slot); /* storage -> index+1 into from/base */
    int ok = D && from && base && slot && (D->ops = malloc(sizeof *D->ops * (size_t)(nops + 1))) &&
             (D->refs = calloc((size_t)nrefs + 1, sizeof *D->refs)) &&
             (D->needed = malloc(sizeof *D->needed * (size_t)(nneed + 1))) &&
             (D->checked = calloc((size_t)nrefs + 1, sizeof *D->checked)) &&
             (D->ver = calloc((size_t)nrefs + 1, sizeof *D->ver));
    if (ok) {
        memcpy(D->needed, needed, sizeof *needed * (size_t)nneed);
        D->nneed = nneed;
    }
    for (int64_t e = 0; e < R->nops && ok; e++) {
        if (!in_slice[e]) continue;
        const pop *p = &R->ops[e];
        pop *q = &D->ops[D->nops++];
        *q = *p;
        q->ref = (int32_t)D->nrefs;
        for (int j = 0; j < p->nin + p->nout && ok; j++) {
            jn_tensor *h = op_in(R, p)[j], *t = h;
            jn_storage *st = h->storage;
            if (has_storage(needed, nneed, st)) {
                hold(t);
            } else if (!st->data || has_storage(written_st, nwritten, st)) {
                int64_t i = home_slot(st, nslot);
                while (slot[i] && from[slot[i] - 1] != st) i = (i + 1) & (nslot - 1);
                int64_t m = slot[i] ? slot[i] - 1 : nmap;
                if (m == nmap) {
                    int64_t nb = (int64_t)st->nbytes;
                    jn_meta mm = {JN_U8, 1, {nb}};
                    base[m] = st->data ? jn_tensor_new(JN_U8, 1, &nb) : jn_rt_tensor_new_pending(&mm);
                    if (!base[m]) {
                        ok = 0;
                        break;
                    }
                    if (st->data && nb) memcpy(base[m]->storage->data, st->data, (size_t)nb);
                    from[nmap++] = st;
                    slot[i] = nmap;
                }
                if (!(t = shadow_header(R, base[m], h))) {
                    ok = 0;
                    break;
                }
            } else {
                hold(t);
                int64_t c = 0;
                while (c < D->nchecked && D->checked[c] != h) c++;
                if (c == D->nchecked) {
                    hold(h);
                    D->checked[D->nchecked] = h;
                    D->ver[D->nchecked++] = st->version;
                }
            }
            D->refs[D->nrefs++] = t;
        }
    }
    for (int64_t m = 0; m < nmap; m++) jn_tensor_decref(base[m]); /* the shadow headers hold them */
    free(from), free(base), free(slot);
    if (!ok) {
        dslice_free(R, D);
        return NULL;
    }
    return D;
}

static void dslice_unlink(jn_replay *R, dslice *D) {
    for (dslice **pp = &R->deferred; *pp; pp = &(*pp)->next)
        if (*pp == D) {
            *pp = D->next;
            return;
        }
}

/* One of D's values is read: run D (then it is gone). */
static jn_status dslice_run(jn_replay *R, dslice *D) {
    jn_status s = JN_OK;
    for (int64_t i = 0; i < D->nchecked && s == JN_OK; i++)
        if (D->checked[i]->storage->version != D->ver[i]) s = lost_error(D->checked[i]);
    for (int64_t k = 0; k < D->nneed; k++) D->needed[k]->lazy = 0;
    for (int64_t i = 0; i < D->nrefs; i++)
        if (D->refs[i]->storage->lazy == JN_LAZY_PENDING) D->refs[i]->storage->lazy = 0; /* shadows */
    R->flushing = 1;
    jn_rt_private_ids++;
    for (int64_t e = 0; e < D->nops && s == JN_OK; e++) {
        const pop *p = &D->ops[e];
        jn_tensor **in = D->refs + p->ref, **out = in + p->nin;
        for (int k = 0; k < p->nout && s == JN_OK; k++) s = storage_alloc(out[k]->storage);
        if (s) break;
        if (p->into) s = jn_rt_run_into(p->op, p->nin, in, &p->a, out[0]);
        else if (!(jn_op_info(p->op)->flags & JN_F_VIEW)) s = jn_rt_run_kernel(p->op, p->nin, in, &p->a, out);
    }
    jn_rt_private_ids--;
    R->flushing = 0;
    if (s)
        for (int64_t k = 0; k < D->nneed; k++) D->needed[k]->lazy = JN_LAZY_LOST;
    R->deferred_runs++;
    dslice_unlink(R, D);
    dslice_free(R, D);
    return s;
}

static dslice *dslice_find(jn_replay *R, const jn_storage *st) {
    for (dslice *D = R->deferred; D; D = D->next)
        if (has_storage(D->needed, D->nneed, st)) return D;
    return NULL;
}

/* Drop the deferred slices whose values nothing can reach any more. */
static void dslice_gc(jn_replay *R) {
    for (dslice **pp = &R->deferred; *pp;) {
        dslice *D = *pp;
        int reach = 0;
        for (int64_t k = 0; k < D->nneed && !reach; k++) {
            jn_storage *st = D->needed[k];
            int64_t distinct = 0;
            uint32_t mark = next_mark(R);
            for (int64_t i = 0; i < D->nrefs && !reach; i++) {
                jn_tensor *h = D->refs[i];
                if (h->storage != st || h->capture_mark == mark) continue;
                h->capture_mark = mark;
                distinct++;
                reach = h->refcnt > h->capture_refs;
            }
            reach |= (int64_t)st->refcnt > distinct;
        }
        if (reach) {
            pp = &D->next;
            continue;
        }
        *pp = D->next;
        dslice_free(R, D);
    }
}

/* ------------------------------------------------------- graph runs */
typedef struct {
    jn_tensor *t;
    int64_t mine;     /* references the list holds */
    int32_t fill;     /* keep output index filling it, -1 */
    uint8_t created, view;
} hdr;

typedef struct {
    hdr *h;
    int64_t n, cap;
    int64_t *slot;    /* open addressing: index+1 into h, 0 empty */
    int64_t nslot;
} hset;

static hdr *hget(hset *S, jn_tensor *t) {
    for (int64_t i = home_slot(t, S->nslot);; i = (i + 1) & (S->nslot - 1)) {
        if (!S->slot[i]) {
            if (S->n == S->cap) return NULL; /* sized by the caller: cannot happen */
            S->slot[i] = ++S->n;
            hdr *h = &S->h[S->n - 1];
            memset(h, 0, sizeof *h);
            h->t = t;
            h->fill = -1;
            return h;
        }
        if (S->h[S->slot[i] - 1].t == t) return &S->h[S->slot[i] - 1];
    }
}

/* A set of storages (open addressing; sized for every reference of the list). */
typedef struct {
    jn_storage **slot;
    int64_t nslot, n;
} sset;

static int64_t sset_pos(const sset *W, const jn_storage *st) {
    int64_t i = home_slot(st, W->nslot);
    while (W->slot[i] && W->slot[i] != st) i = (i + 1) & (W->nslot - 1);
    return i;
}
static int sset_has(const sset *W, const jn_storage *st) { return W->slot[sset_pos(W, st)] != NULL; }
static int sset_add(sset *W, jn_storage *st) {
    int64_t i = sset_pos(W, st);
    if (W->slot[i]) return 1;
    if (2 * (W->n + 1) > W->nslot) return 0; /* sized for every reference: cannot happen */
    W->slot[i] = st;
    W->n++;
    return 1;
}

/* What the pending list says about one storage: headers seen, any filled
 * by the graph, one covering it filled, one Python may still reach. */
typedef struct {
    jn_storage *st;
    int64_t known;
    uint8_t any, full, need;
} sagg;

/* st's entry of the open-addressed table A (nslot entries, a power of two
 * at least twice the number of headers), made on first use. */
static sagg *sagg_get(sagg *A, int64_t nslot, jn_storage *st) {
    int64_t i = home_slot(st, nslot);
    while (A[i].st && A[i].st != st) i = (i + 1) & (nslot - 1);
    A[i].st = st;
    return &A[i];
}

static int covers(const jn_tensor *t) {
    return t->offset == 0 && jn_is_contiguous(t) && (size_t)jn_numel(t) * jn_elsize(t) == t->storage->nbytes;
}

static jn_status graph_ready(jn_replay *R, int32_t gi, char *why, size_t n) {
    graph_row *G = &R->g[gi];
    if (G->broken) {
        snprintf(why, n, "graph %s: the executor refused it earlier", R->m->graphs[gi]->name);
        return JN_ERR_RUNTIME;
    }
    if (G->x) return JN_OK;
    const jn_ir_graph *g = R->m->graphs[gi];
    jn_status s = jn_ex_new_on(R->m, gi, R->lib, R->cg ? jn_ex_cuda_graphs_device(R->cg) : NULL, 0, &G->x);
    if (s == JN_OK && !(G->keep_idx = malloc(sizeof *G->keep_idx * (size_t)(g->noutputs + 1)))) s = JN_ERR_NOMEM;
    if (s) {
        snprintf(why, n, "graph %s: executor: %s", g->name, jn_errmsg());
        if (G->x) jn_ex_free(G->x);
        G->x = NULL;
        G->broken = 1;
        return s;
    }
    for (int32_t i = 0; i < g->noutputs; i++)
        G->keep_idx[i] = g->outputs[i].kind == JN_IR_OUT_KEEP ? G->nkeep++ : -1;
    return JN_OK;
}

/* Run graph res->graph over the pending list and fill it; 0 done, else
 * nothing was written and *why says why the list must run eagerly. */
static int run_graph(jn_replay *R, const jn_rp_match_result *res, char *why, size_t wn) {
    int32_t gi = res->graph;
    const jn_ir_graph *g = R->m->graphs[gi];
    if (graph_ready(R, gi, why, wn)) return 1;
    graph_row *G = &R->g[gi];
    if (res->nevents != R->nops) {
        snprintf(why, wn, "graph %s: matched %lld events, %lld pending", g->name, (long long)res->nevents,
                 (long long)R->nops);
        return 1;
    }
    int rc = 1;
    jn_tensor **inputs = calloc((size_t)g->ninputs + 1, sizeof *inputs);
    uint8_t *owned = calloc((size_t)g->ninputs + 1, 1);
    jn_tensor **outs = calloc((size_t)G->nkeep + 1, sizeof *outs);
    uint64_t *vers = calloc((size_t)g->ninputs + 1, sizeof *vers);
    hset S = {0};
    sset W = {0};
    sagg *A = NULL;
    dslice *D = NULL;
    int64_t nsliced = 0;
    S.cap = R->nrefs + 1;
    for (S.nslot = 16; S.nslot < 2 * S.cap; S.nslot *= 2) {}
    S.h = malloc(sizeof *S.h * (size_t)S.cap);
    S.slot = calloc((size_t)S.nslot, sizeof *S.slot);
    W.nslot = S.nslot;
    W.slot = calloc((size_t)W.nslot, sizeof *W.slot);
    if (!inputs || !owned || !outs || !vers || !S.h || !S.slot || !W.slot) {
        snprintf(why, wn, "out of memory preparing graph %s", g->name);
        goto done;
    }
    /* inputs, from the arguments that bound them */
    for (int32_t i = 0; i < g->ninputs; i++) {
        const jn_ir_input *in = &g->inputs[i];
        if (in->kind == JN_IR_IN_RNG) continue;
        if (in->kind == JN_IR_IN_SCALAR || in->kind == JN_IR_IN_CONST) {
            if (!(inputs[i] = jn_scalar_f64(res->scalars[i], g->values[in->value].dtype, 1))) goto oom;
            owned[i] = 1;
            continue;
        }
        int64_t e = res->input_event[i];
        int32_t arg = res->input_arg[i];
        const pop *p = e >= 0 && e < R->nops ? &R->ops[e] : NULL;
        jn_tensor *t = !p ? NULL : arg >= 0 && arg < p->nin ? op_in(R, p)[arg]
                                   : arg < 0 && arg > -100 && -1 - arg < p->nout ? op_out(R, p)[-1 - arg] : NULL;
        if (!t || (uint64_t)t->id != res->inputs[i] || !t->storage->data) {
            snprintf(why, wn, "graph %s: input %d is not bound to a tensor with data", g->name, i);
            goto done;
        }
        inputs[i] = t;
    }
    /* what the list holds, what was created here, what Python can reach */
    for (int64_t e = 0; e < R->nops; e++) {
        const pop *p = &R->ops[e];
        for (int j = 0; j < p->nin + p->nout; j++) {
            hdr *h = hget(&S, op_in(R, p)[j]);
            h->mine++;
            if (j < p->nin || written(p, j - p->nin)) continue;
            int k = j - p->nin;
            h->created = 1;
            h->view = (jn_op_info(p->op)->flags & JN_F_VIEW) != 0;
            int32_t o = jn_rp_match_token_output(R->mt, gi, res->ev_token[e], k);
            if (o >= 0 && o < g->noutputs && G->keep_idx[o] >= 0) h->fill = G->keep_idx[o];
        }
    }
    /* existing tensors written in place must be written back by the graph */
    for (int64_t e = 0; e < R->nops; e++) {
        const pop *p = &R->ops[e];
        if (!p->into && !(jn_op_info(p->op)->flags & JN_F_INPLACE)) continue;
        for (int k = 0; k < p->nout; k++) {
            jn_storage *st = op_out(R, p)[k]->storage;
            if (!st->data) continue; /* created in this segment: its final value is a keep output */
            int ok = 0;
            for (int32_t o = 0; o < g->noutputs && !ok; o++)
                ok = g->outputs[o].kind == JN_IR_OUT_STATE && inputs[g->outputs[o].state] &&
                     inputs[g->outputs[o].state]->storage == st;
            if (!ok) {
                snprintf(why, wn, "graph %s: op %lld (%s) writes a tensor the graph does not write back", g->name,
                         (long long)e, jn_op_info(p->op)->name);
                goto done;
            }
        }
    }
    /* per pending storage: filled whole by the graph, or unreachable (dies
     * with the list), or still reachable: computed eagerly first (below) */
    int64_t nA = 16; /* per storage, in one pass (a sort cost 2% of a char_lstm step) */
    while (nA < 2 * S.n) nA *= 2;
    A = calloc((size_t)nA, sizeof *A);
    if (!A) goto oom;
    for (int64_t k = 0; k < S.n; k++) {
        const hdr *h = &S.h[k];
        sagg *a = sagg_get(A, nA, h->t->storage);
        a->known++;
        if (h->fill >= 0) {
            a->any = 1;
            a->full |= (uint8_t)covers(h->t);
        } else if (h->t->refcnt > h->mine) {
            a->need = 1;
        }
    }
    for (int64_t k = 0; k < nA; k++) {
        const sagg *a = &A[k];
        jn_storage *st = a->st;
        if (!st || st->data || st->lazy != JN_LAZY_PENDING) continue; /* not created here */
        int need = a->need || st->refcnt > a->known;
        if (need && !a->full && a->any) {
            snprintf(why, wn, "graph %s: Python holds a tensor sharing memory with a value the graph keeps only in "
                     "part", g->name);
            goto done;
        }
        if (need && !a->full && !sset_add(&W, st)) goto oom;
    }
    for (int64_t e = 0; e < R->nops; e++) { /* existing tensors written in place: their
                                            * current bytes are the graph's input */
        const pop *p = &R->ops[e];
        for (int k = 0; k < p->nout; k++)
            if (op_out(R, p)[k]->storage->data) op_out(R, p)[k]->storage->lazy = 0;
    }
    /* Values Python can still reach that the graph does not keep (the
     * recording never read them again, this run might): their backward
     * slice of the pending ops runs eagerly first, on the state as it was
     * at the segment's start, unless it includes a write to such state. */
    if (W.n && !R->cfg.speculate) {
        int64_t nneed = W.n;
        jn_storage **needed = malloc(sizeof *needed * (size_t)(nneed + 1));
        uint8_t *in_slice = calloc((size_t)R->nops + 1, 1);
        if (!needed || !in_slice) {
            free(needed), free(in_slice);
            goto oom;
        }
        for (int64_t k = 0, j = 0; k < W.nslot; k++)
            if (W.slot[k]) needed[j++] = W.slot[k];
        int bad = 0;
        for (int64_t e = R->nops - 1; e >= 0 && !bad; e--) {
            const pop *p = &R->ops[e];
            int hit = 0;
            for (int k = 0; k < p->nout; k++) hit |= sset_has(&W, op_out(R, p)[k]->storage);
            if (!hit) continue;
            for (int k = 0; k < p->nout; k++) bad |= written(p, k) && op_out(R, p)[k]->storage->data != NULL;
            in_slice[e] = 1;
            for (int i = 0; i < p->nin && !bad; i++)
                if (!sset_add(&W, op_in(R, p)[i]->storage)) bad = 2;
        }
        jn_status s2 = JN_OK;
        double ts = now();
        if (!bad && R->cfg.defer) {
            jn_storage **wst = calloc((size_t)g->noutputs + 1, sizeof *wst);
            int64_t nw = 0;
            for (int32_t o = 0; wst && o < g->noutputs; o++)
                if (g->outputs[o].kind == JN_IR_OUT_STATE && inputs[g->outputs[o].state])
                    wst[nw++] = inputs[g->outputs[o].state]->storage;
            if (wst) D = dslice_new(R, in_slice, needed, nneed, wst, nw);
            free(wst);
        }
        R->flushing = 1;
        for (int64_t e = 0; e < R->nops && !bad && !D && s2 == JN_OK; e++) {
            if (!in_slice[e]) continue;
            const pop *p = &R->ops[e];
            jn_tensor **out = op_out(R, p);
            for (int k = 0; k < p->nout && s2 == JN_OK; k++) s2 = storage_alloc(out[k]->storage);
            if (s2) break;
            if (p->into) s2 = jn_rt_run_into(p->op, p->nin, op_in(R, p), &p->a, out[0]);
            else if (!(jn_op_info(p->op)->flags & JN_F_VIEW)) s2 = jn_rt_run_kernel(p->op, p->nin, op_in(R, p), &p->a, out);
        }
        R->flushing = 0;
        if (R->cfg.debug) {
            int64_t ns = 0;
            for (int64_t e = 0; e < R->nops; e++) ns += in_slice[e];
            fprintf(stderr, "[rp] graph %s: %lld values Python holds, slice of %lld/%lld ops %s in %.3f ms\n",
                    g->name, (long long)nneed, (long long)ns, (long long)R->nops, D ? "deferred" : "eagerly",
                    1e3 * (now() - ts));
            for (int64_t k = 0; k < nneed; k++) { /* what they are: the first op making each */
                int64_t e = 0;
                for (int j = -1; e < R->nops; e++) {
                    for (j = 0; j < R->ops[e].nout && op_out(R, &R->ops[e])[j]->storage != needed[k]; j++) {}
                    if (j < R->ops[e].nout) break;
                }
                fprintf(stderr, "[rp]   Python holds %zu bytes made by op %lld (%s)\n", needed[k]->nbytes,
                        (long long)e, e < R->nops ? jn_op_info(R->ops[e].op)->name : "?");
            }
        }
        if (!bad && s2 == JN_OK && !D)
            for (int64_t k = 0; k < nneed; k++) needed[k]->lazy = 0; /* final and eager's own */
        free(needed), free(in_slice);
        if (bad || s2) {
            if (bad == 1)
                snprintf(why, wn, "graph %s: Python holds a value the graph does not keep, computed from state this "
                         "segment updates", g->name);
            else
                snprintf(why, wn, "graph %s: computing a value Python holds: %s", g->name,
                         bad ? "out of memory" : jn_errmsg());
            goto done;
        }
        nsliced = nneed;
    }
    /* run */
    for (int32_t i = 0; i < g->ninputs; i++)
        if (inputs[i] && !owned[i]) vers[i] = inputs[i]->storage->version;
    double t0 = now();
    jn_rt_private_ids++;
    jn_status s = R->cg ? jn_ex_cuda_graphs_run(R->cg, G->x, inputs, res->syms, outs)
                       : jn_ex_run(G->x, inputs, res->syms, outs);
    jn_rt_private_ids--;
    G->seconds += now() - t0;
    if (R->cfg.debug) fprintf(stderr, "[rp] graph %s ran in %.3f ms\n", g->name, 1e3 * (now() - t0));
    for (int32_t i = 0; i < g->ninputs; i++)
        if (inputs[i] && !owned[i]) inputs[i]->storage->version = vers[i];
    jn_ex_stats xst;
    jn_ex_last_stats(G->x, &xst);
    if (s && xst.state_written) { /* the step's inputs are gone: re-running it eagerly would be wrong */
        snprintf(why, wn, "graph %s failed after it had updated state in place, so the step cannot be re-run "
                 "eagerly: %s (run with JANUS_REPLAY=0 to train without compiled graphs)", g->name, jn_errmsg());
        rc = -1;
        R->fatal = s;
        goto done;
    }
    if (s) {
        snprintf(why, wn, "graph %s: %s", g->name, jn_errmsg());
        for (int64_t e = 0; e < R->nops; e++) { /* back to pending for the fallback */
            const pop *p = &R->ops[e];
            for (int k = 0; k < p->nout; k++) op_out(R, p)[k]->storage->lazy = JN_LAZY_PENDING;
        }
        goto done;
    }
    /* fill: whole buffers moved when the executor's output is alone, else
     * copied; headers covering their storage first, then views of the rest
     * (PARTIAL marks a storage only views fill: several may).  A view op's
     * header that covers its storage (contiguous from offset 0) is moved
     * into like any other: both sides are the same bytes in the same order
     * (fashion-MNIST's `(x.float() / 255).view(...)`: 188 MB copied, and
     * held twice at the copy, before). */
    R->flushing = 1;
    for (int pass = 0; pass < 2 && s == JN_OK; pass++)
        for (int64_t k = 0; k < S.n && s == JN_OK; k++) {
            hdr *h = &S.h[k];
            jn_storage *st = h->t->storage;
            if (h->fill < 0 || covers(h->t) != (pass == 0)) continue;
            if (st->lazy != JN_LAZY_PENDING && st->lazy != PARTIAL) continue;
            jn_tensor *o = outs[h->fill];
            if (!st->data && covers(h->t) && o->refcnt == 1 && o->storage->refcnt == 1 &&
                (o->storage->owns_data == 1 || o->storage->release) && o->storage->device == st->device &&
                covers(o) && o->dtype == h->t->dtype && o->storage->nbytes == st->nbytes) {
                take_memory(st, o->storage); /* device memory too: its release goes with it */
                st->lazy = 0;
                continue;
            }
            if (R->cfg.debug)
                fprintf(stderr, "[rp] graph %s: output %d copied into a pending %s (%zu bytes)\n", g->name, h->fill,
                        h->view ? "view" : "tensor", st->nbytes);
            if ((s = storage_alloc(st))) break;
            st->lazy = pass == 0 ? 0 : PARTIAL;
            s = jn_copy_into(h->t, o);
        }
    R->flushing = 0;
    for (int64_t k = 0; k < S.n; k++)
        if (S.h[k].t->storage->lazy == PARTIAL) S.h[k].t->storage->lazy = 0;
    if (s) { /* out of memory after the state was written: nothing right is left to do */
        snprintf(why, wn, "graph %s: filling its outputs: %s", g->name, jn_errmsg());
        rc = -1;
        R->fatal = JN_ERR_NOMEM;
    } else {
        rc = 0;
    }
    if (D && rc == 0) { /* computed only if read */
        for (int64_t k = 0; k < D->nneed; k++) D->needed[k]->lazy = JN_LAZY_DEFERRED;
        D->next = R->deferred;
        R->deferred = D;
        D = NULL;
    }
    for (int64_t k = 0; k < S.n; k++) { /* reached by nobody, or never read again (proved by the recording) */
        jn_storage *st = S.h[k].t->storage;
        if (st->lazy == JN_LAZY_PENDING) st->lazy = JN_LAZY_LOST;
    }
    goto done;
oom:
    snprintf(why, wn, "out of memory preparing graph %s", g->name);
done:
    for (int32_t i = 0; i < g->ninputs && inputs; i++)
        if (owned[i]) jn_tensor_decref(inputs[i]);
    for (int i = 0; i < G->nkeep && outs; i++) jn_tensor_decref(outs[i]);
    free(inputs), free(owned), free(outs), free(vers), free(S.h), free(S.slot), free(W.slot), free(A);
    dslice_free(R, D); /* not committed: the list runs eagerly */
    if (rc == 0 && nsliced) R->sliced++;
    return rc;
}

/* ------------------------------------------------------------- segment */
static jn_status strict_error(const char *why) {
    return jn_error(JN_ERR_RUNTIME, "janus replay (strict): fell back to eager: %s", why);
}

/* ------------------------------------------------------ graph timing */
static double median(double *v, int n) {
    for (int i = 1; i < n; i++) /* n <= AD_PAIRS: insertion sort */
        for (int j = i; j > 0 && v[j - 1] > v[j]; j--) {
            double t = v[j];
            v[j] = v[j - 1];
            v[j - 1] = t;
        }
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

/* Keep graph gi or leave it to eager, once its pairs are timed. */
static void adapt_decide(jn_replay *R, int32_t gi) {
    adapt_row *ad = &R->g[gi].ad;
    const char *name = R->m->graphs[gi]->name;
    if (ad->state != AD_PROBE) return;
    if (ad->npairs < AD_PAIRS && ad->obs_turns > 8 * AD_PAIRS) { /* its eager runs never came out as it */
        ad->state = AD_KEEP;
        if (R->cfg.debug) fprintf(stderr, "[rp] graph %s kept: its eager runs could not be timed\n", name);
        return;
    }
    /* AD_SURE pairs all on one side of the margin decide early (each pair
     * costs an untimed run of each mode too); else all AD_PAIRS are timed */
    int n = ad->npairs, above = 0;
    for (int i = 0; i < n; i++) above += ad->ratio[i] > 1 + R->cfg.margin;
    if (n < AD_PAIRS && (n < AD_SURE || (above && above < n))) return;
    double r[AD_PAIRS], c[AD_PAIRS], e[AD_PAIRS];
    memcpy(r, ad->ratio, sizeof r);
    memcpy(c, ad->cap, sizeof c);
    memcpy(e, ad->obs, sizeof e);
    ad->med = median(r, n);
    double mc = median(c, n), me = median(e, n);
    ad->state = ad->med > 1 + R->cfg.margin ? AD_EAGER : AD_KEEP;
    if (R->cfg.debug)
        fprintf(stderr, "[rp] graph %s %s: compiled/eager %.2fx per op (median of %d pairs; medians %.2f vs %.2f us)\n",
                name, ad->state == AD_EAGER ? "left to eager" : "kept", ad->med, n, 1e6 * mc, 1e6 * me);
    if (ad->state != AD_EAGER) return;
    jn_ex_release_idle(1); /* a graph still kept allocates it again at its next run */
    if (!R->nops) { /* the pending list's arrays, sized for its captures (~600 bytes an op), too */
        free(R->ops);
        free(R->refs);
        R->ops = NULL;
        R->refs = NULL;
        R->capops = R->caprefs = 0;
    }
    char why[512];
    snprintf(why, sizeof why,
             "graph %s left to eager: compiled, its segment took %.2fx the eager time (per op, median of %d "
             "back-to-back pairs: %.2f vs %.2f us); JANUS_REPLAY_ADAPT=0 keeps it",
             name, ad->med, n, 1e6 * mc, 1e6 * me);
    ad->why = strdup(why);
    if (!ad->why) ad->state = AD_KEEP; /* out of memory: nothing to report it with */
}

/* The dispatch hook, installed for the whole replay, sees every op that
 * ran eagerly: it keeps the latest comparison (which bool() a sync is) and
 * feeds the matcher the ops of an observed segment. */
static void fill_arg(jn_rp_match_arg *r, const jn_tensor *t, int is_out);
static void eager_after(void *ctx, jn_op op, int nin, jn_tensor *const *in, const jn_attrs *a, int nout,
                        jn_tensor *const *out) {
    jn_replay *R = ctx;
    if (jn_rt_capturing) return; /* cap_capture had it */
    if (jn_op_is_comparison(op)) R->last_cmp = out[0]->id;
    if (R->seg_mode != SEG_OBSERVE) return;
    if (R->obs_skip) {
        R->obs_skip = 0;
        return;
    }
    jn_rp_match_arg ai[JN_MAX_INS], ao[JN_MAX_OUTS];
    for (int i = 0; i < nin; i++) fill_arg(&ai[i], in[i], 0);
    for (int k = 0; k < nout; k++) fill_arg(&ao[k], out[k], 1);
    jn_rp_match_event ev = {op, a->a, nin, nout, ai, ao};
    jn_rp_match_result res;
    if (jn_rp_match_feed(R->mt, &ev, &res) != JN_RP_MATCH_MISS) return;
    R->seg_mode = SEG_OFF;
    R->segments++;
    note_miss(R, res.graph, res.guard, res.token, res.seen, res.why ? res.why : "no graph fits");
    jn_rp_match_reset(R->mt);
}

/* After a segment's first op (captured, fed, CONTINUE or COMPLETE): run it
 * eagerly from here when every graph it can become was left to eager, or
 * when a graph being timed wants an eager run; time it when a graph it
 * can become is being timed. */
static jn_status adapt_first(jn_replay *R, int into) {
    int32_t alive[64];
    int32_t n = jn_rp_match_alive(R->mt, alive, 64), probe = -1, all_eager = n > 0;
    for (int32_t i = 0; i < n; i++) {
        int st = R->g[alive[i]].ad.state;
        all_eager &= st == AD_EAGER;
        /* the one standing for the most recorded segments drives (as jn_rp_match_end prefers it) */
        if (st == AD_PROBE && (probe < 0 || R->m->graphs[alive[i]]->support > R->m->graphs[probe]->support))
            probe = alive[i];
    }
    if (!all_eager && probe < 0) return JN_OK;
    if (all_eager) {
        R->seg_mode = SEG_PLAIN;
        R->seg_graph = alive[0];
        jn_rp_match_reset(R->mt);
        /* a graph still kept may have run since: eager's buffers would
         * come on top of its arena (a free: no trim, no block cache) */
        jn_ex_release_idle(0);
    } else {
        adapt_row *ad = &R->g[probe].ad;
        if (ad->phase < PH_EAGER_WARM) { /* a compiled run */
            R->seg_t0 = now();
            return JN_OK;
        }
        if (++ad->obs_turns > 8 * AD_PAIRS) {
            adapt_decide(R, probe); /* kept: its eager runs never came out as it */
            return JN_OK;
        }
        R->seg_mode = SEG_OBSERVE;
        R->obs_skip = !into; /* jn_dispatch calls the hook for this very op when capture returns */
        if (ad->phase == PH_EAGER_WARM) jn_ex_release_idle(1);
        R->seg_t0 = now();
    }
    jn_rt_capturing = 0;
    return fallback(R); /* the first op */
}

/* The end of a segment that ran eagerly by choice (SEG_OBSERVE, SEG_PLAIN,
 * SEG_OFF). */
static jn_status seg_end_eager(jn_replay *R) {
    int mode = R->seg_mode;
    R->seg_mode = SEG_CAPTURE;
    if (mode == SEG_OFF) return JN_OK;
    R->segments++;
    R->chosen++;
    if (mode == SEG_PLAIN) {
        note_miss(R, R->seg_graph, JN_DB_MISS_CHOICE, -1, NAN, R->g[R->seg_graph].ad.why);
        return JN_OK;
    }
    jn_rp_match_result res;
    jn_rp_match_kind k = jn_rp_match_end(R->mt, &res);
    if (k != JN_RP_MATCH_COMPLETE) {
        R->chosen--;
        note_miss(R, res.graph, res.guard, res.token, res.seen, res.why ? res.why : "the segment matched no graph");
        return JN_OK;
    }
    adapt_row *ad = &R->g[res.graph].ad;
    double t = res.nevents > 0 ? (now() - R->seg_t0) / (double)res.nevents : 0; /* per op: lengths vary */
    if (ad->state == AD_PROBE && ad->phase == PH_EAGER_WARM) ad->phase = PH_EAGER;
    else if (ad->state == AD_PROBE && ad->phase == PH_EAGER) {
        if (t > 0 && ad->last_cap > 0 && ad->npairs < AD_PAIRS) {
            ad->cap[ad->npairs] = ad->last_cap;
            ad->obs[ad->npairs] = t;
            ad->ratio[ad->npairs++] = ad->last_cap / t;
        }
        ad->phase = PH_CAP_WARM;
    }
    char why[256];
    snprintf(why, sizeof why, "graph %s ran eagerly to time it against its compiled run (JANUS_REPLAY_ADAPT)",
             R->m->graphs[res.graph]->name);
    note_miss(R, res.graph, JN_DB_MISS_CHOICE, -1, NAN, why);
    adapt_decide(R, res.graph);
    return JN_OK;
}

/* The segment ends: run its graph or its ops.  Capture stays off until the
 * caller starts the next segment. */
static jn_status seg_end(jn_replay *R) {
    if (R->seg_mode != SEG_CAPTURE) return seg_end_eager(R);
    if (!jn_rt_capturing) return JN_OK;
    jn_rt_capturing = 0;
    jn_rp_match_result res;
    jn_rp_match_kind k = jn_rp_match_end(R->mt, &res);
    if (k == JN_RP_MATCH_NONE && !R->nops) return JN_OK;
    R->segments++;
    if (R->cfg.debug) fprintf(stderr, "[rp] segment of %lld ops captured in %.3f ms\n", (long long)R->nops, 1e3 * (now() - R->t_begin));
    char why[1024] = "";
    if (k == JN_RP_MATCH_COMPLETE) {
        jn_rt_private_ids++; /* its scalars, arena and outputs: not the ids Python sees */
        int rc = run_graph(R, &res, why, sizeof why);
        jn_rt_private_ids--;
        if (rc == 0) {
            graph_row *g = &R->g[res.graph];
            R->hits++;
            clear_list(R); /* part of what a compiled segment costs */
            if (g->ad.state == AD_PROBE && g->ad.phase < PH_EAGER_WARM) {
                if (g->ad.phase == PH_CAP && R->seg_t0 > 0 && res.nevents > 0)
                    g->ad.last_cap = (now() - R->seg_t0) / (double)res.nevents;
                g->ad.phase++;
            }
            g->hits++;
            if (R->cfg.debug) fprintf(stderr, "[rp] segment done %.3f ms after its start (t=%.3f)\n", 1e3 * (now() - R->t_begin), now());
            return JN_OK;
        }
        if (rc < 0) {
            clear_list(R);
            return jn_error(R->fatal ? R->fatal : JN_ERR_RUNTIME, "janus replay: %s", why);
        }
        note_miss(R, res.graph, -1, -1, NAN, why);
    } else {
        snprintf(why, sizeof why, "%s", res.why ? res.why : "the segment matched no graph");
        note_miss(R, res.graph, res.guard, res.token, res.seen, why);
    }
    jn_status s = fallback(R);
    if (s == JN_OK && R->cfg.strict) s = strict_error(why);
    return s;
}

static void seg_begin(jn_replay *R, int entry) {
    if (!R->on) return;
    if (R->deferred) dslice_gc(R);
    jn_rp_match_begin(R->mt, entry);
    jn_rt_capturing = 1;
    R->seg_t0 = 0;
    if (R->cfg.debug) R->t_begin = now();
}

/* ------------------------------------------------------------ capture */
static int grow(void **p, int64_t *cap, int64_t need, size_t el) {
    if (need <= *cap) return 1;
    int64_t c = *cap ? *cap : 256;
    while (c < need) c *= 2;
    void *n = realloc(*p, el * (size_t)c);
    if (!n) return 0;
    *p = n;
    *cap = c;
    return 1;
}

static void fill_arg(jn_rp_match_arg *r, const jn_tensor *t, int is_out) {
    r->id = (uint64_t)t->id;
    r->shape = t->shape;
    r->ndim = (uint8_t)t->ndim;
    r->dtype = (uint8_t)t->dtype;
    r->device = (uint8_t)t->storage->device;
    r->pytype = 0;
    r->scalar = 0;
    if (t->wrapped_number && !is_out) { /* as the recorder: the dtype says which Python type */
        r->pytype = t->dtype == JN_BOOL ? 3 : jn_dtype_is_float(t->dtype) ? 2 : 1;
        r->scalar = t->storage->data && t->storage->device == JN_CPU ? jn_load_f64(jn_data(t), t->dtype) : NAN;
    }
}

static jn_status cap_capture(void *ctx, jn_op op, int nin, jn_tensor *const *in, const jn_attrs *a, int nout,
                             jn_tensor *const *out, int into) {
    jn_replay *R = ctx;
    jn_status s;
    for (int i = 0; i < nin; i++) /* a deferred value read: computed now (it is no pending op) */
        if (in[i]->storage->lazy == JN_LAZY_DEFERRED && (s = jn_rt_materialize(in[i]))) return s;
    for (int i = 0; i < nin; i++)
        if (in[i]->storage->lazy == JN_LAZY_LOST) {
            jn_rt_capturing = 0;
            jn_rp_match_reset(R->mt);
            note_miss(R, -1, -1, -1, NAN, "an op read a tensor a compiled graph did not keep");
            R->segments++;
            if ((s = fallback(R))) return s;
            return lost_error(in[i]);
        }
    if (!grow((void **)&R->ops, &R->capops, R->nops + 1, sizeof *R->ops) ||
        !grow((void **)&R->refs, &R->caprefs, R->nrefs + nin + nout, sizeof *R->refs)) {
        jn_rt_capturing = 0;
        jn_rp_match_reset(R->mt);
        (void)fallback(R);
        return jn_error(JN_ERR_NOMEM, "janus replay: out of memory for the pending ops");
    }
    pop *p = &R->ops[R->nops++];
    p->op = op;
    p->into = (uint8_t)into;
    p->nin = (uint8_t)nin;
    p->nout = (uint8_t)nout;
    p->ref = (int32_t)R->nrefs;
    /* only the op's own attributes (kernels read no others): a whole jn_attrs is 576 bytes */
    memcpy(&p->a, a, sizeof(jn_attr) * (size_t)jn_op_info(op)->nattrs);
    for (int i = 0; i < nin; i++) pend_hold(R->refs[R->nrefs++] = in[i]);
    for (int k = 0; k < nout; k++) {
        pend_hold(R->refs[R->nrefs++] = out[k]);
        out[k]->storage->lazy = JN_LAZY_PENDING; /* in-place targets too: their bytes are stale now */
    }
    if (jn_op_is_comparison(op)) R->last_cmp = out[0]->id;

    jn_rp_match_arg ai[JN_MAX_INS], ao[JN_MAX_OUTS];
    for (int i = 0; i < nin; i++) fill_arg(&ai[i], in[i], 0);
    for (int k = 0; k < nout; k++) fill_arg(&ao[k], out[k], 1);
    jn_rp_match_event ev = {op, a->a, nin, nout, ai, ao};
    if (R->cfg.debug) {
        fprintf(stderr, "[rp] %lld %s", (long long)(R->nops - 1), jn_op_info(op)->name);
        for (int i = 0; i < nin; i++) fprintf(stderr, " i%lld", (long long)in[i]->id);
        for (int k = 0; k < nout; k++) fprintf(stderr, " o%lld", (long long)out[k]->id);
        fprintf(stderr, "\n");
    }
    jn_rp_match_result res;
    if (jn_rp_match_feed(R->mt, &ev, &res) != JN_RP_MATCH_MISS) return R->cfg.adapt && R->nops == 1 ? adapt_first(R, into) : JN_OK;
    /* no graph fits: what is pending runs now, the rest of the segment eagerly */
    jn_rt_capturing = 0;
    char why[1024];
    snprintf(why, sizeof why, "%s", res.why ? res.why : "no graph fits");
    note_miss(R, res.graph, res.guard, res.token, res.seen, why);
    R->segments++;
    jn_rp_match_reset(R->mt);
    if ((s = fallback(R))) return s;
    return R->cfg.strict ? strict_error(why) : JN_OK;
}

static jn_status cap_materialize(void *ctx, jn_tensor *t) {
    jn_replay *R = ctx;
    if (t->storage->lazy == JN_LAZY_LOST) return lost_error(t);
    if (t->storage->lazy == JN_LAZY_DEFERRED) {
        dslice *D = dslice_find(R, t->storage);
        return D ? dslice_run(R, D) : lost_error(t);
    }
    if (R->flushing) return JN_OK;
    /* data read outside a sync point: the segment ends here */
    jn_status s = seg_end(R);
    if (s) return s;
    return t->storage->lazy == JN_LAZY_LOST ? lost_error(t) : JN_OK;
}

/* ------------------------------------------------------------- bundle */
/* Gives back the bundle and everything made from it (the hooks are off). */
static void unload(jn_replay *R) {
    clear_list(R);
    if (R->dlib) (void)jn_ex_dlib_sync(R->dlib); /* nothing in flight uses what is freed below */
    for (int32_t i = 0; R->g && R->m && i < R->m->ngraphs; i++) {
        if (R->g[i].x) jn_ex_free(R->g[i].x);
        free(R->g[i].keep_idx);
        free(R->g[i].ad.why);
    }
    free(R->g);
    R->g = NULL;
    jn_ex_cuda_graphs_free(R->cg); /* after the executors that use its table */
    R->cg = NULL;
    if (R->dlib) jn_ex_dlib_close(R->dlib);
    R->dlib = NULL;
    R->dev = JN_CPU;
    if (R->mt) jn_rp_match_free(R->mt);
    R->mt = NULL;
    if (R->lib) jn_ex_lib_close(R->lib);
    R->lib = NULL;
    if (R->b) jn_cg_bundle_free(R->b);
    R->b = NULL;
    R->m = NULL;
}

/* The device the recorded graphs ran on: JN_CPU unless a value is on a GPU
 * (the analyzer puts the recorded device on every value). */
static int module_device(const jn_ir_module *m) {
    for (int32_t gi = 0; gi < m->ngraphs; gi++)
        for (int32_t v = 0; v < m->graphs[gi]->nvalues; v++)
            if (m->graphs[gi]->values[v].device != JN_CPU) return m->graphs[gi]->values[v].device;
    return JN_CPU;
}

jn_status jn_rp_pick_cuda(const char *const *targets, int n, int dev_major, int dev_minor, const char **pick) {
    char want[32];
    snprintf(want, sizeof want, "cuda:sm_%d%d", dev_major, dev_minor);
    *pick = NULL;
    for (int i = 0; i < n; i++) {
        if (strncmp(targets[i], "cuda:", 5)) continue;
        if (!strcmp(targets[i], want)) { /* the device's own arch wins */
            *pick = targets[i];
            return JN_OK;
        }
        *pick = targets[i]; /* else the newest (oldest first): jn_ex_cuda_pick_image decides */
    }
    return *pick ? JN_OK : JN_ERR_VALUE;
}

/* The CUDA bundle R->b fits the device (dname, sm_<major><minor>): the
 * eager CUDA backend (library nodes, buffers, the stream), the bundle's
 * module (its cubin or PTX; none when the graphs have no generated
 * kernels) and the graphs' device table over both, into R->dlib / R->cg.
 * Refusals name what is missing; nothing is left open on failure. */
static jn_status open_device_exec(jn_replay *R, const char *db_path, const char *dname, int major, int minor) {
    char why[1024];
    jn_status s = jn_rt_backends[JN_CUDA] ? JN_OK : jn_cuda_init();
    if (s) {
        snprintf(why, sizeof why, "%s", jn_errmsg());
        return jn_error(s, "the %s bundle of %s fits %s (sm_%d%d), but the eager CUDA backend cannot start, and "
                        "the graphs need it (buffers, stream, library nodes): %s", R->b->target, db_path, dname, major,
                        minor, why);
    }
    const jn_cg_bundle_section *cubin = jn_cg_bundle_section_find(R->b, JN_CG_SEC_CUBIN);
    const jn_cg_bundle_section *ptx = jn_cg_bundle_section_find(R->b, JN_CG_SEC_PTX);
    if (cubin || ptx) {
        uint64_t h = 0;
        char origin[512];
        snprintf(origin, sizeof origin, "the %s bundle of %s", R->b->target, db_path);
        if ((s = jn_cg_module_hash(R->b->module, &h)) ||
            (s = jn_ex_dlib_open(cubin ? cubin->data : NULL, cubin ? cubin->len : 0, ptx ? (const char *)ptx->data : NULL,
                                 ptx ? ptx->len : 0, R->b->target, h, origin, 0, &R->dlib)))
            return s;
    }
    if ((s = jn_ex_cuda_graphs_new(R->dlib, NULL, R->cfg.cuda_stream, &R->cg))) {
        if (R->dlib) jn_ex_dlib_close(R->dlib);
        R->dlib = NULL;
        return s;
    }
    if (R->cfg.cuda_runner) jn_ex_cuda_graphs_set_runner(R->cg, &R->runner);
    R->dev = JN_CUDA;
    return JN_OK;
}

/* The recording ran on a GPU (or the store has no cpu bundle): the bundle
 * for this machine's GPU, into R->b; `cpu_why` is why the cpu bundle could
 * not be used ("" when it loaded but holds GPU graphs).  Every refusal names
 * what is missing and the fix; the caller then runs the script eagerly. */
static jn_status open_device_bundle(jn_replay *R, jn_db *db, const char *db_path, const char *cpu_why) {
    jn_db_bundle *list = NULL;
    int nb = 0;
    jn_status s = jn_db_bundle_list(db, &list, &nb);
    if (s) return s;
    const char **targets = calloc((size_t)nb + 1, sizeof *targets);
    if (!targets) {
        jn_db_bundle_list_free(list, nb);
        return jn_error(JN_ERR_NOMEM, "out of memory listing the bundles of %s", db_path);
    }
    int ncuda = 0;
    for (int i = 0; i < nb; i++)
        if (!strncmp(list[i].target, "cuda:", 5)) targets[ncuda++] = list[i].target;
    char dname[256] = "", err[1024] = "";
    int major = 0, minor = 0;
    jn_status ds = JN_OK;
    if (ncuda || !cpu_why[0]) { /* the driver only when a GPU bundle could be used */
        ds = jn_ex_cuda_device(0, &major, &minor, dname, sizeof dname);
        if (ds) snprintf(err, sizeof err, "%s", jn_errmsg());
    }
    const char *pick = NULL;
    if (!ncuda && cpu_why[0]) { /* no bundle at all, or a cpu one that does not load: as before */
        s = jn_error(JN_ERR_VALUE, "%s", cpu_why);
    } else if (!ncuda) {
        char fix[32];
        if (ds) snprintf(fix, sizeof fix, "cuda:sm_90");
        else snprintf(fix, sizeof fix, "cuda:sm_%d%d", major, minor);
        s = jn_error(JN_ERR_VALUE, "the graphs in %s were recorded on cuda tensors, and %s has no CUDA bundle; run "
                     "`janus optimize --target %s %s`", db_path, db_path, fix, db_path);
    } else if (ds) {
        s = jn_error(ds, "the graphs in %s were recorded on cuda tensors, and this machine cannot run them: %s", db_path,
                     err);
    } else {
        jn_rp_pick_cuda(targets, ncuda, major, minor, &pick);
        jn_cg_bundle_expect ex = {0};
        ex.db_path = db_path;
        ex.target = pick;
        if (!(s = jn_cg_bundle_open(db, &ex, &R->b))) {
            int image = 0;
            s = jn_ex_cuda_pick_image(R->b->target, jn_cg_bundle_section_find(R->b, JN_CG_SEC_CUBIN) != NULL,
                                      jn_cg_bundle_section_find(R->b, JN_CG_SEC_PTX) != NULL, major, minor, dname,
                                      &image);
            (void)image; /* jn_ex_dlib_open makes the same choice when it loads the module */
            if (!s) s = open_device_exec(R, db_path, dname, major, minor);
            if (s) {
                jn_cg_bundle_free(R->b);
                R->b = NULL;
            }
        }
    }
    free(targets);
    jn_db_bundle_list_free(list, nb);
    return s;
}

/* The bundle of the store at db_path, its matcher and compiled kernels,
 * into R (the device's bundle when the recording ran on a GPU); on a
 * refusal everything loaded is given back. */
static jn_status load(jn_replay *R, const char *db_path) {
    jn_db *db = NULL;
    jn_status s = jn_db_open(db_path, JN_DB_READONLY, &db);
    if (s) return s;
    jn_cg_bundle_expect ex = {0};
    ex.db_path = db_path;
    s = jn_cg_bundle_open(db, &ex, &R->b);
    /* the bundle of the device the recording used: the cpu one unless its
     * graphs hold GPU values (or there is none) -- a startup test only */
    if (s || module_device(R->b->module) != JN_CPU) {
        char cpu_why[1024] = "";
        if (s) snprintf(cpu_why, sizeof cpu_why, "%s", jn_errmsg());
        if (R->b) jn_cg_bundle_free(R->b);
        R->b = NULL;
        s = open_device_bundle(R, db, db_path, cpu_why);
    }
    if (!s && R->dev == JN_CUDA) { /* cuDNN's choices of earlier runs on this GPU (a failure only costs time) */
        int n = 0;
        jn_status as = R->algos_dev[0] ? jn_ex_cuda_algos_load_for(db, R->algos_dev, &n) : jn_ex_cuda_algos_load(db, &n);
        if (as)
            fprintf(stderr, "janus replay: could not load the cuDNN algorithm choices from %s (they are chosen "
                    "again): %s\n", db_path, jn_errmsg());
    }
    jn_db_close(db);
    if (s) return s;
    R->m = R->b->module;
    const jn_cg_bundle_section *ms = jn_cg_bundle_section_find(R->b, JN_CG_SEC_MATCHER);
    if (!ms)
        s = jn_error(JN_ERR_VALUE, "the bundle in %s has no replay matcher; re-run `janus optimize %s`", db_path,
                     db_path);
    if (!s) s = jn_rp_match_new(R->m, ms->data, ms->len, &R->mt);
    if (!s && R->cfg.match_dump) jn_rp_match_dump(R->mt, stderr);
    const jn_cg_bundle_section *so = jn_cg_bundle_section_find(R->b, JN_CG_SEC_SO);
    if (!s && so) {
        uint64_t h = 0;
        char origin[512];
        snprintf(origin, sizeof origin, "the compiled kernels in %s", db_path);
        if (!(s = jn_cg_module_hash(R->m, &h))) s = jn_ex_lib_open(so->data, so->len, h, origin, &R->lib);
    }
    if (!s && !(R->g = calloc((size_t)R->m->ngraphs + 1, sizeof *R->g)))
        s = jn_error(JN_ERR_NOMEM, "out of memory loading the bundle of %s", db_path);
    if (s) {
        unload(R);
        return s;
    }
    for (int32_t i = 0; i < R->m->ngraphs; i++) R->g[i].ad.phase = PH_FIRST;
    return JN_OK;
}

/* ------------------------------------------------------------- public */
void jn_rp_config_default(jn_rp_config *cfg) {
    memset(cfg, 0, sizeof *cfg);
    cfg->defer = 1;
    cfg->adapt = 1;
    cfg->margin = 0.10;
}

jn_status jn_rp_config_from_env(jn_rp_config *cfg) {
    jn_rp_config c;
    jn_rp_config_default(&c);
    jn_status s;
    if ((s = jn_setting_bool(JN_S_REPLAY_STRICT, &c.strict)) || (s = jn_setting_bool(JN_S_REPLAY_SPECULATE, &c.speculate)) ||
        (s = jn_setting_bool(JN_S_REPLAY_DEFER, &c.defer)) || (s = jn_setting_bool(JN_S_REPLAY_DEBUG, &c.debug)) ||
        (s = jn_setting_bool(JN_S_REPLAY_ADAPT, &c.adapt)) || (s = jn_setting_float(JN_S_REPLAY_ADAPT_MARGIN, &c.margin)) ||
        (s = jn_setting_bool(JN_S_MATCH_DUMP, &c.match_dump))) {
        jn_rp_config_default(cfg);
        return s;
    }
    /* debug's per-op prints would be timed as capture: on only when asked for */
    if (c.debug && !jn_setting_raw(JN_S_REPLAY_ADAPT)) c.adapt = 0;
    *cfg = c;
    return JN_OK;
}

/* Stop following segments: both hooks off. */
static void uninstall(jn_replay *R) {
    if (!R->on) return;
    jn_rt_set_capture_hook(NULL);
    if (R->hooked) jn_set_dispatch_hook(NULL);
    R->hooked = 0;
    R->seg_mode = SEG_CAPTURE;
    R->on = 0;
}

jn_status jn_rp_new(const char *db_path, int64_t run_id, const jn_rp_config *cfg, jn_replay **out) {
    *out = NULL;
    if (jn_rt_capture_hook_installed())
        return jn_error(JN_ERR_RUNTIME, "a replay is already running in this process");
    if (jn_dispatch_hook_installed()) /* its hook is the recorder's */
        return jn_error(JN_ERR_RUNTIME, "this process is being recorded (janus record, JANUS_RECORD_DB); a "
                                        "recording runs eagerly, so replay and record do not combine");
    jn_replay *R = calloc(1, sizeof *R);
    if (!R || !(R->db_path = strdup(db_path))) {
        free(R);
        return jn_error(JN_ERR_NOMEM, "out of memory starting a replay of %s", db_path);
    }
    R->cfg = *cfg;
    if (cfg->cuda_runner) R->runner = *cfg->cuda_runner;
    R->cfg.cuda_runner = cfg->cuda_runner ? &R->runner : NULL;
    snprintf(R->algos_dev, sizeof R->algos_dev, "%s", cfg->algos_device ? cfg->algos_device : "");
    R->cfg.algos_device = R->algos_dev;
    R->run_id = run_id;
    jn_status s = load(R, db_path);
    if (s) {
        jn_rp_free(R);
        return s;
    }
    if (R->dev != JN_CPU) R->cfg.defer = 0; /* deferred slices snapshot host bytes: on a GPU the slice runs first */
    /* timing graphs against eager: host clocks time a CPU graph, not a GPU's
     * asynchronous work; strict mode wants every graph that fits to run */
    if (R->dev != JN_CPU || R->cfg.strict) R->cfg.adapt = 0;
    R->seg_mode = SEG_CAPTURE;
    R->on = 1;
    jn_rt_capture_hook h = {cap_capture, cap_materialize, cap_held_only, R, R->dev};
    jn_rt_set_capture_hook(&h);
    jn_dispatch_hook dh = {eager_after, R};
    jn_set_dispatch_hook(&dh);
    R->hooked = 1;
    seg_begin(R, 0);
    *out = R;
    return JN_OK;
}

jn_status jn_rp_step(jn_replay *R) {
    if (!R->on) return JN_OK;
    jn_status s = seg_end(R);
    seg_begin(R, 0);
    return s;
}

void jn_rp_quiet(jn_replay *R, int delta) { R->quiet += delta; }

jn_status jn_rp_sync(jn_replay *R, int kind, jn_tensor *t) {
    if (!R->on) return JN_OK;
    jn_status s = JN_OK;
    if (!R->quiet) {
        if (kind == JN_SYNC_BOOL && t && t->id == R->last_cmp) kind = JN_SYNC_COMPARE;
        s = seg_end(R);
    }
    if (s == JN_OK && t) s = jn_rt_materialize(t);
    if (!R->quiet) seg_begin(R, kind);
    return s;
}

void jn_rp_get_stats(const jn_replay *R, jn_rp_stats *st) {
    memset(st, 0, sizeof *st);
    st->segments = R->segments;
    st->hits = R->hits;
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
    snprintf(buf, n, "janus replay: %.0f%% of %s segments ran as compiled graphs (%lld graph%s)%s, %s fell back%s%s%s",
             floor(pct), seg, (long long)st.graphs_hit, st.graphs_hit == 1 ? "" : "s", gpu, fb, ch,
             k >= 0 ? "; top miss: " : "", k >= 0 ? R->miss[k].why : "");
}

static void write_counters(const jn_replay *R);

jn_status jn_rp_finish(jn_replay *R, int print_summary) {
    if (!R->on) return JN_OK;
    jn_status s = seg_end(R);
    while (R->deferred) {
        dslice *D = R->deferred;
        R->deferred = D->next;
        for (int64_t k = 0; k < D->nneed; k++) D->needed[k]->lazy = JN_LAZY_LOST; /* nothing runs after it */
        dslice_free(R, D);
    }
    clear_list(R);
    uninstall(R);
    if (print_summary) {
        char line[2048];
        jn_rp_summary(R, line, sizeof line);
        fprintf(stderr, "%s\n", line);
        fflush(stderr);
    } else if (R->cg) { /* `janus replay` prints the counters' line; how the GPU ran them is known only here */
        jn_ex_cuda_graphs_stats cs;
        jn_ex_cuda_graphs_get_stats(R->cg, &cs);
        fprintf(stderr, "janus replay: graphs on cuda:0 as CUDA Graphs: %lld replays, %lld captures, %lld updates%s%s\n",
                (long long)cs.replays, (long long)cs.captures, (long long)cs.updates,
                cs.plain_runs ? "; plain launches: " : "", cs.plain_runs ? cs.plain_reason : "");
        fflush(stderr);
    }
    write_counters(R);
    return s;
}

void jn_rp_free(jn_replay *R) {
    if (!R) return;
    (void)jn_rp_finish(R, 0);
    unload(R);
    for (int i = 0; i < R->nmiss; i++) free(R->miss[i].why), free(R->miss[i].site);
    free(R->miss);
    free(R->db_path);
    free(R->ops);
    free(R->refs);
    free(R);
}

/* At the end: the counters (run_id > 0) and, after a CUDA replay, cuDNN's
 * algorithm choices (jn_algos.h), in one opening of the store.  They are
 * separate transactions: a failure to save the choices loses no counter,
 * and each failure is said on stderr with its reason. */
static void write_counters(const jn_replay *R) {
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
        jn_status s = !gr || !mr ? jn_error(JN_ERR_NOMEM, "out of memory") : JN_OK;
        if (s == JN_OK) {
            for (int i = 0; i < ng; i++)
                gr[i] = (jn_db_replay_graph){R->m->graphs[i]->name, R->g[i].hits, R->g[i].misses, R->g[i].seconds};
            for (int i = 0; i < R->nmiss; i++) {
                const miss_row *r = &R->miss[i];
                mr[i] = (jn_db_replay_miss){r->graph >= 0 ? R->m->graphs[r->graph]->name : "", r->guard, r->why,
                                            r->site, r->seen, r->count};
            }
            s = jn_db_replay_put(db, R->run_id, gr, ng, mr, R->nmiss);
        }
        if (s) fprintf(stderr, "janus replay: could not write the counters to %s: %s\n", R->db_path, jn_errmsg());
        free(gr);
        free(mr);
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
