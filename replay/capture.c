/* capture.c -- lazy capture: the pending list and the capture hook's
 * callbacks (jn_rt_capture_hook, ctx the replay object).
 *
 * While a segment is followed (jn_rt_capturing), every dispatched op comes
 * here with its outputs pending (storage data NULL, lazy PENDING; in-place
 * targets keep their bytes but are marked PENDING too, so nothing outside
 * the dispatcher reads them stale).  Each op is kept in the pending list
 * (op, attributes, held references to its input and output headers) and
 * fed to the matcher with jn_tensor.id as identity.  A MISS from feed runs
 * the list eagerly at once and the rest of the segment runs eagerly.
 *
 * The fallback runs the list in order with the eager kernels
 * (jn_rt_run_kernel / jn_rt_run_into), allocating each pending storage just
 * before its op; a kernel error (eager would have raised at the op) leaves
 * the rest LOST and is returned to whoever ended the segment.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "jn_backend.h"
#include "rp_internal.h"

/* ---------------------------------------------------------- holding */
enum { CHUNK = 256 };

int rp_pool_reserve(jn_replay *R, int64_t n) {
    rp_pool *P = &R->pool;
    while (P->nfree < n) {
        int64_t k = n - P->nfree > CHUNK ? n - P->nfree : CHUNK;
        rp_chunk *c = malloc(sizeof *c + sizeof(rp_hold) * (size_t)k);
        if (!c) {
            jn_error(JN_ERR_NOMEM, "janus replay: out of memory for the records of held tensors");
            return 0;
        }
        c->next = P->chunks;
        P->chunks = c;
        for (int64_t i = 0; i < k; i++) {
            c->h[i].next = P->free;
            P->free = &c->h[i];
        }
        P->nfree += k;
    }
    return 1;
}

/* Every record is back in the pool by now (nothing is held). */
void rp_pool_free(rp_pool *P) {
    while (P->chunks) {
        rp_chunk *c = P->chunks;
        P->chunks = c->next;
        free(c);
    }
    P->free = NULL;
    P->nfree = 0;
}

/* A use of t by the pending list: the list holds one reference per header
 * however many of its ops use it (pend counts the uses), and links the
 * header into its storage's list of headers the list holds
 * (rp_cap_held_only).  A chain's tensor is an output once and an input
 * once: one atomic reference pair instead of two. */
static inline void pend_hold(jn_replay *R, jn_tensor *t) {
    rp_hold *h = t->ext;
    if (h && h->pend) {
        h->pend++;
        return;
    }
    rp_hold_ref(R, t);
    h = t->ext;
    h->pend = 1;
    jn_storage *st = t->storage;
    h->prev = NULL;
    h->next = st->ext;
    if (h->next) h->next->prev = h;
    st->ext = h;
}

static inline void pend_unhold(jn_replay *R, jn_tensor *t) {
    rp_hold *h = t->ext;
    if (--h->pend) return;
    jn_storage *st = t->storage;
    if (h->prev) h->prev->next = h->next;
    else st->ext = h->next;
    if (h->next) h->next->prev = h->prev;
    h->prev = h->next = NULL;
    rp_unhold(R, t);
}

uint32_t rp_next_mark(jn_replay *R) {
    if (++R->epoch == 0) R->epoch = 1; /* a wrapped mark of 0 could match a fresh record */
    return R->epoch;
}

/* Headers on st the pending list holds that only capture keeps alive
 * (each counted once; a header held by anyone else is not counted; one
 * only a deferred slice holds is not counted either, so autograd never
 * steals bytes a deferred slice still reads).  Called for every gradient
 * autograd may steal, so it walks st's own list of those headers, not the
 * pending list: char_lstm's step asked ~60 times about a storage with ~25
 * held views, each a walk over ~650 references before. */
int64_t rp_cap_held_only(void *ctx, const jn_storage *st) {
    (void)ctx;
    int64_t n = 0;
    for (const rp_hold *h = st->ext; h; h = h->next) n += h->t->refcnt == h->refs;
    return n;
}

int64_t rp_cap_held_refs(void *ctx, const jn_tensor *t) {
    (void)ctx;
    return rp_held(t);
}

int rp_cap_expects(void *ctx, jn_op op, const jn_tensor *t) {
    jn_replay *R = ctx;
    return R->mt && jn_rp_match_expects(R->mt, op, t->id);
}

void rp_clear_list(jn_replay *R) {
    if (R->bw) rp_bw_clear(R);
    for (int64_t i = 0; i < R->nrefs; i++) pend_unhold(R, R->refs[i]);
    R->nrefs = R->nops = R->nattrs = 0;
}

/* --------------------------------------------------------- fallback */
static void release_tensor(void *t) { jn_tensor_decref(t); }

/* jn_rt_storage_alloc for a storage on any device: a pending device
 * storage (a CUDA replay) gets its bytes from the device's backend -- a
 * tensor of the backend, kept alive by st (its bytes may live inside its
 * storage block, so they are borrowed, not taken). */
jn_status rp_storage_alloc(jn_storage *st) {
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

jn_status rp_run_op(const rp_op *p, const jn_attr *attrs, jn_tensor *const *in) {
    jn_tensor *const *out = in + p->nin;
    jn_status s = JN_OK;
    for (int k = 0; k < p->nout && s == JN_OK; k++) s = rp_storage_alloc(out[k]->storage);
    if (s) return s;
    if (jn_op_info(p->op)->flags & JN_F_VIEW && !p->into) return JN_OK; /* its strides were set at capture */
    jn_attrs a; /* kernels read the op's own attributes only */
    memcpy(a.a, attrs + p->attr, sizeof(jn_attr) * p->nattr);
    if (p->into) return jn_rt_run_into(p->op, p->nin, in, &a, out[0]);
    return jn_rt_run_kernel(p->op, p->nin, in, &a, out);
}

/* Every storage it touches is current afterwards, except those of ops after
 * a failing one (LOST). */
jn_status rp_fallback(jn_replay *R, int cause) {
    jn_status s = JN_OK;
    int named = 0;
    R->flushing = 1;
    const rp_op *last = R->nops ? &R->ops[R->nops - 1] : NULL;
    rp_tl_fallback(&R->tl, R->nops, last && last->nout ? rp_op_out(R, last)[0]->id : -1);
    for (int64_t e = 0; e < R->nops; e++) {
        const rp_op *p = &R->ops[e];
        for (int k = 0; k < p->nout; k++) rp_op_out(R, p)[k]->storage->lazy = 0;
    }
    for (int64_t e = 0; e < R->nops; e++) {
        const rp_op *p = &R->ops[e];
        if (s == JN_OK && p->into == RP_BW_HEAD && (s = rp_bw_fallback(R, p, cause)) == JN_OK) continue;
        if (s == JN_OK && p->into == RP_BW_GHOST) continue; /* its head ran the engine */
        if (s == JN_OK && p->into != RP_BW_HEAD && (s = rp_run_op(p, R->attrs, rp_op_in(R, p))) == JN_OK) continue;
        if (s != JN_OK && s != JN_ERR_NOMEM && !named) { /* the script's error, raised far from its line */
            char msg[768];
            snprintf(msg, sizeof msg, "%s", jn_errmsg());
            s = jn_error(s, "%s (raised where janus replay ran the ops of this segment, after the line that "
                            "called %s: `janus replay --eager` or JANUS_REPLAY=0 raises it at that line)",
                         msg, jn_op_info(p->op)->name);
            named = 1;
        }
        if (!rp_written(p)) /* never ran: its bytes are not eager's */
            for (int k = 0; k < p->nout; k++) rp_op_out(R, p)[k]->storage->lazy = JN_LAZY_LOST;
    }
    R->flushing = 0;
    rp_clear_list(R);
    return s;
}

/* ---------------------------------------------------------- capture */
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

void rp_fill_arg(jn_rp_match_arg *r, const jn_tensor *t, int is_out) {
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

/* The segment stops being captured here (a miss, a lost input, no
 * memory): what is pending runs now, the rest of the segment eagerly. */
jn_status rp_capture_off(jn_replay *R, int32_t graph, int32_t guard, int32_t token, double seen, const char *why) {
    jn_rt_capturing = 0;
    jn_rp_match_reset(R->mt);
    if (why) {
        rp_note_miss(R, graph, guard, token, seen, why);
        R->segments++;
    }
    return rp_fallback(R, why ? RP_BW_FELL_MISS : RP_BW_FELL_NOMEM);
}

/* Inputs a captured op cannot read: a deferred one is computed now (it is
 * no pending op), a lost one ends the segment with the error. */
static jn_status __attribute__((noinline)) check_inputs_slow(jn_replay *R, int nin, jn_tensor *const *in) {
    jn_status s;
    for (int i = 0; i < nin; i++)
        if (in[i]->storage->lazy == JN_LAZY_DEFERRED && (s = jn_rt_materialize(in[i]))) return s;
    for (int i = 0; i < nin; i++)
        if (in[i]->storage->lazy == JN_LAZY_LOST) {
            if ((s = rp_capture_off(R, -1, -1, -1, NAN, "an op read a tensor a compiled graph did not keep"))) return s;
            return rp_lost_error(in[i]);
        }
    return JN_OK;
}

static inline jn_status check_inputs(jn_replay *R, int nin, jn_tensor *const *in) {
    int odd = 0;
    for (int i = 0; i < nin; i++) {
        int z = in[i]->storage->lazy;
        odd |= z == JN_LAZY_DEFERRED || z == JN_LAZY_LOST;
    }
    return odd ? check_inputs_slow(R, nin, in) : JN_OK;
}

static void debug_op(const jn_replay *R, jn_op op, int nin, jn_tensor *const *in, int nout, jn_tensor *const *out) {
    fprintf(stderr, "[rp] %lld %s", (long long)(R->nops - 1), jn_op_info(op)->name);
    for (int i = 0; i < nin; i++) fprintf(stderr, " i%lld", (long long)in[i]->id);
    for (int k = 0; k < nout; k++) fprintf(stderr, " o%lld", (long long)out[k]->id);
    fprintf(stderr, "\n");
}

/* Room for one more op of nin + nout references and na attributes. */
static int __attribute__((noinline)) make_room(jn_replay *R, int nref, int na) {
    return grow((void **)&R->ops, &R->capops, R->nops + 1, sizeof *R->ops) &&
           grow((void **)&R->refs, &R->caprefs, R->nrefs + nref, sizeof *R->refs) &&
           grow((void **)&R->attrs, &R->capattrs, R->nattrs + na + 1, sizeof *R->attrs) && rp_pool_reserve(R, nref);
}

int rp_cap_push(jn_replay *R, jn_op op, int into, int32_t attr, int nin, jn_tensor *const *in, int nout,
                jn_tensor *const *out) {
    if ((R->nops >= R->capops || R->nrefs + nin + nout > R->caprefs || R->nattrs + 1 >= R->capattrs ||
         R->pool.nfree < nin + nout) &&
        !make_room(R, nin + nout, 0))
        return 0;
    rp_op *p = &R->ops[R->nops++];
    R->seg_any = 1;
    *p = (rp_op){op, (uint8_t)into, (uint8_t)nin, (uint8_t)nout, 0, (int32_t)R->nrefs, attr};
    jn_tensor **r = R->refs + R->nrefs;
    R->nrefs += nin + nout;
    for (int i = 0; i < nin; i++) pend_hold(R, r[i] = in[i]);
    for (int k = 0; k < nout; k++) pend_hold(R, r[nin + k] = out[k]);
    return 1;
}

jn_status rp_cap_capture(void *ctx, jn_op op, int nin, jn_tensor *const *in, const jn_attrs *a, int nout,
                         jn_tensor *const *out, int into) {
    jn_replay *R = ctx;
    jn_status s = check_inputs(R, nin, in);
    if (s) return s;
    int na = jn_op_info(op)->nattrs;
    if (__builtin_expect(R->nops >= R->capops || R->nrefs + nin + nout > R->caprefs ||
                         R->nattrs + na >= R->capattrs || R->pool.nfree < nin + nout, 0) &&
        !make_room(R, nin + nout, na)) {
        (void)rp_capture_off(R, -1, -1, -1, NAN, NULL);
        return jn_error(JN_ERR_NOMEM, "janus replay: out of memory for the pending ops");
    }
    rp_op *p = &R->ops[R->nops++];
    R->seg_any = 1;
    *p = (rp_op){op, (uint8_t)into, (uint8_t)nin, (uint8_t)nout, (uint8_t)na, (int32_t)R->nrefs, (int32_t)R->nattrs};
    /* only the op's own attributes (kernels read no others) */
    memcpy(R->attrs + R->nattrs, a->a, sizeof(jn_attr) * (size_t)na);
    R->nattrs += na;
    jn_tensor **r = R->refs + R->nrefs;
    R->nrefs += nin + nout;
    jn_rp_match_arg ai[JN_MAX_INS], ao[JN_MAX_OUTS];
    for (int i = 0; i < nin; i++) {
        pend_hold(R, r[i] = in[i]);
        rp_fill_arg(&ai[i], in[i], 0);
    }
    for (int k = 0; k < nout; k++) {
        pend_hold(R, r[nin + k] = out[k]);
        out[k]->storage->lazy = JN_LAZY_PENDING; /* in-place targets too: their bytes are stale now */
        rp_fill_arg(&ao[k], out[k], 1);
    }
    if (jn_op_is_comparison(op)) R->last_cmp = out[0]->id;

    jn_rp_match_event ev = {op, a->a, nin, nout, ai, ao};
    if (__builtin_expect(R->cfg.debug, 0)) debug_op(R, op, nin, in, nout, out);
    jn_rp_match_result res;
    jn_rp_match_kind kind = R->rg_batch ? rp_region_feed(R, &ev, &res) : jn_rp_match_feed(R->mt, &ev, &res);
    if (__builtin_expect(kind != JN_RP_MATCH_MISS, 1))
        return R->cfg.adapt && R->nops == 1 ? rp_adapt_first(R, into) : JN_OK;
    /* no graph fits: what is pending runs now, the rest of the segment eagerly */
    char why[1024];
    snprintf(why, sizeof why, "%s", res.why ? res.why : "no graph fits");
    if ((s = rp_capture_off(R, res.graph, res.guard, res.token, res.seen, why))) return s;
    return R->cfg.strict ? rp_strict_error(why) : JN_OK;
}

jn_status rp_cap_materialize(void *ctx, jn_tensor *t) {
    jn_replay *R = ctx;
    if (t->storage->lazy == JN_LAZY_LOST) return rp_lost_error(t);
    if (t->storage->lazy == JN_LAZY_DEFERRED) {
        rp_slice *D = rp_slice_find(R, t->storage);
        return D ? rp_slice_run(R, D) : rp_lost_error(t);
    }
    if (R->flushing) return JN_OK;
    /* data read outside a sync point: the segment ends here */
    jn_status s = rp_seg_end(R);
    if (s) return s;
    return t->storage->lazy == JN_LAZY_LOST ? rp_lost_error(t) : JN_OK;
}
