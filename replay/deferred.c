/* deferred.c -- deferred slices: values Python still holds that a graph did
 * not keep (the recording never read them again), computed only if read.
 *
 * When a graph runs, the backward slice of the pending ops that computes
 * such values is copied out of the pending list (rp_slice_new) over shadow
 * storages where sharing could be seen: a pending storage something else
 * reaches or the graph fills gets a private one, state the graph then
 * overwrites a snapshot of its bytes now; a pending storage only the list
 * reaches is used as it is (nobody else can see it again), other existing
 * inputs are read later as they are if their version has not moved.  A
 * slice whose values a collective computes is cut at the values the graph
 * keeps whole (graph_run.c): it reads copies of them taken right after the
 * graph ran (rp_slice_take_kept) instead of recomputing them, so it never
 * runs a collective a second time on one rank.  The values' storages are marked JN_LAZY_DEFERRED; the first read
 * of one (rp_cap_materialize, or a captured op reading it) runs the slice
 * (rp_slice_run).  A slice whose values nothing can reach any more is
 * dropped at the next segment's start (rp_slice_gc).  CPU replays only:
 * the snapshots are host bytes.
 */
#include <stdlib.h>
#include <string.h>

#include "rp_internal.h"

void rp_slice_free(jn_replay *R, rp_slice *D) {
    if (!D) return;
    for (int64_t i = 0; i < D->nheld; i++) rp_unhold(R, D->held[i]);
    free(D->ops), free(D->attrs), free(D->refs), free(D->held), free(D->vhdr), free(D->needed), free(D->checked);
    free(D->ver), free(D->kept_from), free(D->kept_to);
    free(D);
}

/* A header over base's storage seeing it as h sees its own, held. */
static jn_tensor *shadow_header(jn_replay *R, jn_tensor *base, const jn_tensor *h) {
    jn_tensor *t = jn_tensor_alias(base);
    if (!t) return NULL;
    t->dtype = h->dtype;
    t->ndim = h->ndim;
    memcpy(t->shape, h->shape, sizeof t->shape);
    memcpy(t->strides, h->strides, sizeof t->strides);
    t->offset = h->offset;
    t->is_view = 1;
    rp_hold_new(R, t); /* released by rp_unhold like every held reference */
    return t;
}

static int has_storage(jn_storage *const *v, int64_t n, const jn_storage *st) {
    for (int64_t i = 0; i < n; i++)
        if (v[i] == st) return 1;
    return 0;
}

/* The shadow storages of one slice: from[m] -> base[m] (a header owning
 * the private copy), and per header of the list its shadow header, both
 * found through open-addressed tables. */
typedef struct {
    jn_storage **from;
    jn_tensor **base;
    int64_t *slot;       /* storage -> index+1 into from/base */
    jn_tensor **hkey, **hval; /* header -> its shadow header (hkey NULL: empty) */
    int64_t n, nslot;
} shadows;

/* st's shadow (made on first use: a copy of its bytes, or pending when it
 * has none yet); NULL when out of memory. */
static jn_tensor *shadow_of(shadows *M, jn_storage *st) {
    int64_t i = rp_home_slot(st, M->nslot);
    while (M->slot[i] && M->from[M->slot[i] - 1] != st) i = (i + 1) & (M->nslot - 1);
    if (M->slot[i]) return M->base[M->slot[i] - 1];
    int64_t nb = (int64_t)st->nbytes;
    jn_meta mm = {JN_U8, 1, {nb}};
    jn_tensor *b = st->data ? jn_tensor_new(JN_U8, 1, &nb) : jn_rt_tensor_new_pending(&mm);
    if (!b) return NULL;
    if (st->data && nb) memcpy(b->storage->data, st->data, (size_t)nb);
    M->from[M->n] = st;
    M->base[M->n++] = b;
    M->slot[i] = M->n;
    return b;
}

/* h's shadow header (one per header of the list, held once by D). */
static jn_tensor *shadow_ref(jn_replay *R, rp_slice *D, shadows *M, jn_tensor *h, uint32_t mark) {
    int64_t i = rp_home_slot(h, M->nslot);
    while (M->hkey[i] && M->hkey[i] != h) i = (i + 1) & (M->nslot - 1);
    if (M->hkey[i]) return M->hval[i];
    jn_tensor *b = shadow_of(M, h->storage), *t = b ? shadow_header(R, b, h) : NULL;
    if (!t) return NULL;
    M->hkey[i] = h, M->hval[i] = t;
    (void)rp_visited(t, mark);
    D->held[D->nheld++] = t;
    return t;
}

/* D holds each header it refers to once (1: the first time, mark fresh). */
static int hold_once(jn_replay *R, rp_slice *D, jn_tensor *t, uint32_t mark) {
    if (rp_visited(t, mark)) return 0;
    rp_hold_ref(R, t);
    D->held[D->nheld++] = t;
    return 1;
}

/* Reference h of a sliced op, as the slice sees it (held), into D: a
 * value's own header; a shadow for a storage the caller says must not be
 * shared (state the graph overwrites, a pending storage someone else can
 * reach or the graph fills); a pending storage only the list reaches as it
 * is (it dies with the list otherwise: nobody else can see what the slice
 * writes into it); an existing input as it is, its version checked. */
static int slice_ref(jn_replay *R, rp_slice *D, shadows *M, jn_tensor *h, const rp_shared *sh, uint32_t mark) {
    jn_storage *st = h->storage;
    jn_tensor *t = h;
    if (has_storage(D->needed, D->nneed, st)) {
        hold_once(R, D, t, mark);
    } else if (sh->has(sh->ctx, st)) {
        if (!(t = shadow_ref(R, D, M, h, mark))) return 0;
        if (sh->kept && sh->kept(sh->ctx, st) && !has_storage(D->kept_from, D->nkept, st)) {
            D->kept_from[D->nkept] = st;
            D->kept_to[D->nkept++] = t->storage;
        }
    } else if (!st->data) {
        hold_once(R, D, t, mark);
    } else if (hold_once(R, D, t, mark)) {
        D->checked[D->nchecked] = h;
        D->ver[D->nchecked++] = st->version;
    }
    D->refs[D->nrefs++] = t;
    return 1;
}

/* The distinct headers on D's values among its references (what
 * rp_slice_gc asks about). */
static void note_value_headers(jn_replay *R, rp_slice *D) {
    uint32_t mark = rp_next_mark(R);
    for (int64_t i = 0; i < D->nrefs; i++) {
        jn_tensor *h = D->refs[i];
        if (has_storage(D->needed, D->nneed, h->storage) && !rp_visited(h, mark)) D->vhdr[D->nvhdr++] = h;
    }
}

rp_slice *rp_slice_new(jn_replay *R, const uint8_t *in_slice, jn_storage *const *needed, int64_t nneed,
                       const rp_shared *sh) {
    int64_t nops = 0, nrefs = 0, nattrs = 0;
    for (int64_t e = 0; e < R->nops; e++)
        if (in_slice[e]) nops++, nrefs += R->ops[e].nin + R->ops[e].nout, nattrs += R->ops[e].nattr;
    rp_slice *D = calloc(1, sizeof *D);
    shadows M = {calloc((size_t)nrefs + 1, sizeof *M.from), calloc((size_t)nrefs + 1, sizeof *M.base), NULL, NULL,
                 NULL, 0, 16};
    while (M.nslot < 2 * (nrefs + 1)) M.nslot *= 2;
    M.slot = calloc((size_t)M.nslot, sizeof *M.slot);
    M.hkey = calloc((size_t)M.nslot, sizeof *M.hkey);
    M.hval = malloc(sizeof *M.hval * (size_t)M.nslot);
    /* a record per reference at most */
    int ok = rp_pool_reserve(R, nrefs) && D && M.from && M.base && M.slot && M.hkey && M.hval &&
             (D->ops = malloc(sizeof *D->ops * (size_t)(nops + 1))) &&
             (D->attrs = malloc(sizeof *D->attrs * (size_t)(nattrs + 1))) &&
             (D->refs = calloc((size_t)nrefs + 1, sizeof *D->refs)) &&
             (D->held = malloc(sizeof *D->held * (size_t)(nrefs + 1))) &&
             (D->vhdr = malloc(sizeof *D->vhdr * (size_t)(nrefs + 1))) &&
             (D->needed = malloc(sizeof *D->needed * (size_t)(nneed + 1))) &&
             (D->checked = calloc((size_t)nrefs + 1, sizeof *D->checked)) &&
             (D->ver = calloc((size_t)nrefs + 1, sizeof *D->ver)) &&
             (D->kept_from = calloc((size_t)nrefs + 1, sizeof *D->kept_from)) &&
             (D->kept_to = calloc((size_t)nrefs + 1, sizeof *D->kept_to));
    if (ok) {
        memcpy(D->needed, needed, sizeof *needed * (size_t)nneed);
        D->nneed = nneed;
    }
    int64_t na = 0;
    uint32_t mark = rp_next_mark(R);
    for (int64_t e = 0; e < R->nops && ok; e++) {
        if (!in_slice[e]) continue;
        const rp_op *p = &R->ops[e];
        rp_op *q = &D->ops[D->nops++];
        *q = *p;
        q->ref = (int32_t)D->nrefs;
        q->attr = (int32_t)na;
        memcpy(D->attrs + na, R->attrs + p->attr, sizeof *D->attrs * p->nattr);
        na += p->nattr;
        for (int j = 0; j < p->nin + p->nout && ok; j++) ok = slice_ref(R, D, &M, rp_op_in(R, p)[j], sh, mark);
    }
    if (ok) note_value_headers(R, D);
    for (int64_t m = 0; m < M.n; m++) jn_tensor_decref(M.base[m]); /* the shadow headers hold them */
    free(M.from), free(M.base), free(M.slot), free(M.hkey), free(M.hval);
    if (!ok) {
        rp_slice_free(R, D);
        return NULL;
    }
    return D;
}

jn_status rp_slice_take_kept(rp_slice *D) {
    for (int64_t i = 0; i < D->nkept; i++) {
        jn_storage *from = D->kept_from[i], *to = D->kept_to[i];
        if (!from->data || from->nbytes != to->nbytes)
            return jn_error(JN_ERR_RUNTIME, "janus replay: a value the graph keeps is missing after it ran");
        jn_status s = to->data ? JN_OK : rp_storage_alloc(to);
        if (s) return s;
        if (to->nbytes) memcpy(to->data, from->data, to->nbytes);
        to->lazy = 0;
    }
    return JN_OK;
}

static void slice_unlink(jn_replay *R, rp_slice *D) {
    for (rp_slice **pp = &R->deferred; *pp; pp = &(*pp)->next)
        if (*pp == D) {
            *pp = D->next;
            return;
        }
}

/* One of D's values is read: run D (then it is gone). */
jn_status rp_slice_run(jn_replay *R, rp_slice *D) {
    jn_status s = JN_OK;
    for (int64_t i = 0; i < D->nchecked && s == JN_OK; i++)
        if (D->checked[i]->storage->version != D->ver[i]) s = rp_lost_error(D->checked[i]);
    for (int64_t k = 0; k < D->nneed; k++) D->needed[k]->lazy = 0;
    /* shadows (pending) and the pending storages only the list reached
     * (LOST since the graph ran): the ops about to run fill them, and a
     * kernel that dispatches (a composite) must read them as eager's */
    for (int64_t i = 0; i < D->nrefs; i++)
        if (!D->refs[i]->storage->data) D->refs[i]->storage->lazy = 0;
    R->flushing = 1;
    jn_rt_private_ids++;
    for (int64_t e = 0; e < D->nops && s == JN_OK; e++) s = rp_run_op(&D->ops[e], D->attrs, D->refs + D->ops[e].ref);
    jn_rt_private_ids--;
    R->flushing = 0;
    if (s)
        for (int64_t k = 0; k < D->nneed; k++) D->needed[k]->lazy = JN_LAZY_LOST;
    R->deferred_runs++;
    slice_unlink(R, D);
    rp_slice_free(R, D);
    return s;
}

rp_slice *rp_slice_find(const jn_replay *R, const jn_storage *st) {
    for (rp_slice *D = R->deferred; D; D = D->next)
        if (has_storage(D->needed, D->nneed, st)) return D;
    return NULL;
}

/* Whether something outside replay can reach one of D's values: a header
 * of it held beyond replay's references, or one replay does not hold. */
static int reachable(const rp_slice *D) {
    for (int64_t i = 0; i < D->nvhdr; i++)
        if (D->vhdr[i]->refcnt > rp_held(D->vhdr[i])) return 1;
    for (int64_t k = 0; k < D->nneed; k++) {
        int64_t distinct = 0;
        for (int64_t i = 0; i < D->nvhdr; i++) distinct += D->vhdr[i]->storage == D->needed[k];
        if ((int64_t)D->needed[k]->refcnt > distinct) return 1;
    }
    return 0;
}

void rp_slice_gc(jn_replay *R) {
    for (rp_slice **pp = &R->deferred; *pp;) {
        rp_slice *D = *pp;
        if (reachable(D)) {
            pp = &D->next;
            continue;
        }
        *pp = D->next;
        rp_slice_free(R, D);
    }
}

/* Replay ends: a value something still reaches is computed now, since
 * nothing could run its slice once replay is gone (a parameter the
 * recording never read again, read after the run: a state_dict saved at
 * exit); the rest are dropped.  A slice that cannot run (an input written
 * since) leaves its values LOST, as a read during replay would. */
void rp_slice_settle(jn_replay *R) {
    rp_slice_gc(R);
    while (R->deferred) (void)rp_slice_run(R, R->deferred); /* unlinks it, run or not */
}
