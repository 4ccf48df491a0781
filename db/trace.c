/* trace.c -- the binary codec of recorded events (jn_db_event).
 *
 * A step's events are appended to a jn_db_buf one after another and the
 * whole buffer is zstd-compressed by the store (db.c).  The encoding is
 * compact and self-describing enough to be decoded without the op table:
 *
 *   event   := kind:u8 body callsite:sv stack:sv
 *   op      := op:uv inplace:u8 nattrs:u8 attr*nattrs nin:u8 nout:u8 tref*(nin+nout)
 *   attr    := tag:u8 ('i','b','d': sv | 'f': f64 | 'L': n:uv sv*n)
 *   tref    := id:sv version:uv dtype:u8 ndim:u8 device:u8 role:u8 pytype:u8
 *              flags:u8 shape:sv*ndim [strides:sv*ndim unless flags&1]
 *              [offset:sv if flags&2] [scalar:f64 if role==SCALAR]
 *   sync    := sync_kind:u8 value:f64 tensor_id:sv
 *   decision:= dec_kind:u8 outcome:sv
 *   live    := n:uv first:sv delta:uv*(n-1)          (ids ascending; schema v4)
 *   region  := enter:u8 region:sv n:uv id:sv*n          (schema v9)
 *   (role JN_TR_DATAIDX: schema v12)
 *
 * uv is an unsigned LEB128 varint, sv a zigzag varint, f64 eight
 * little-endian bytes.  flags bit 0 says the strides are the contiguous
 * ones (the common case, so they are not stored), bit 1 that an offset
 * follows.  The decoder checks every length and range and reports garbage as
 * JN_ERR_IO "corrupt event chunk"; it never reads out of bounds.
 */
#include <stdlib.h>
#include <string.h>

#include "jn_db.h"

/* ------------------------------------------------------------- encoding */
static int buf_reserve(jn_db_buf *b, size_t extra) {
    if (b->cap - b->len >= extra) return 0;
    size_t cap = b->cap ? b->cap : 256;
    while (cap - b->len < extra) cap *= 2;
    uint8_t *p = realloc(b->data, cap);
    if (!p) return -1;
    b->data = p;
    b->cap = cap;
    return 0;
}

/* The callers reserve enough room up front, so the puts don't check. */
static inline void put_u8(jn_db_buf *b, unsigned v) { b->data[b->len++] = (uint8_t)v; }

static inline void put_uv(jn_db_buf *b, uint64_t v) {
    while (v >= 0x80) {
        b->data[b->len++] = (uint8_t)(v | 0x80);
        v >>= 7;
    }
    b->data[b->len++] = (uint8_t)v;
}

static inline void put_sv(jn_db_buf *b, int64_t v) {
    /* zigzag via unsigned arithmetic: no signed-shift UB */
    uint64_t u = (uint64_t)v;
    put_uv(b, (u << 1) ^ (0 - (u >> 63)));
}

static inline void put_f64(jn_db_buf *b, double v) {
    uint64_t u;
    memcpy(&u, &v, 8);
    for (int i = 0; i < 8; i++) b->data[b->len++] = (uint8_t)(u >> (8 * i));
}

static int strides_contiguous(const jn_db_tref *t) {
    /* must match the decoder's reconstruction exactly (unsigned: no overflow UB) */
    uint64_t s = 1;
    for (int d = t->ndim - 1; d >= 0; d--) {
        if ((uint64_t)t->strides[d] != s) return 0;
        s *= t->shape[d] > 1 ? (uint64_t)t->shape[d] : 1;
    }
    return 1;
}

/* Worst case bytes of one tref: 10 per varint. */
#define TREF_MAX (10 + 10 + 6 + 10 * 2 * JN_MAX_DIMS + 10 + 8)

static void put_tref(jn_db_buf *b, const jn_db_tref *t) {
    int contig = strides_contiguous(t);
    put_sv(b, t->id);
    put_uv(b, t->version);
    put_u8(b, t->dtype);
    put_u8(b, t->ndim);
    put_u8(b, t->device);
    put_u8(b, t->role);
    put_u8(b, t->pytype);
    put_u8(b, (unsigned)(contig ? 1 : 0) | (t->offset ? 2u : 0u));
    for (int d = 0; d < t->ndim; d++) put_sv(b, t->shape[d]);
    if (!contig)
        for (int d = 0; d < t->ndim; d++) put_sv(b, t->strides[d]);
    if (t->offset) put_sv(b, t->offset);
    if (t->role == JN_TR_SCALAR) put_f64(b, t->scalar);
}

static char attr_kind_of(const jn_db_event *ev, int k) {
    if (ev->attr_kind[k]) return ev->attr_kind[k];
    if (ev->op < (uint32_t)JN_NOPS) {
        const jn_opinfo *info = jn_op_info((jn_op)ev->op);
        if (info && k < info->nattrs) return info->attr_kind[k];
    }
    return 0;
}

jn_status jn_db_encode_event(jn_db_buf *buf, const jn_db_event *ev) {
    if (!buf || !ev) return jn_error(JN_ERR_VALUE, "jn_db_encode_event: NULL buffer or event");
    size_t start = buf->len;
    /* fixed part: kind + callsite + stack + the largest kind-specific head */
    if (buf_reserve(buf, 64)) goto nomem;
    put_u8(buf, ev->kind);
    switch (ev->kind) {
    case JN_EV_OP: {
        if (ev->nattrs > JN_MAX_ATTRS) {
            buf->len = start;
            return jn_error(JN_ERR_VALUE, "jn_db_encode_event: op %u has %d attributes (at most %d)",
                            ev->op, ev->nattrs, JN_MAX_ATTRS);
        }
        if ((ev->nin && !ev->in) || (ev->nout && !ev->out)) {
            buf->len = start;
            return jn_error(JN_ERR_VALUE, "jn_db_encode_event: op %u has nin=%d nout=%d but no tref array",
                            ev->op, ev->nin, ev->nout);
        }
        put_uv(buf, ev->op);
        put_u8(buf, ev->inplace);
        put_u8(buf, ev->nattrs);
        for (int k = 0; k < ev->nattrs; k++) {
            char kind = attr_kind_of(ev, k);
            const jn_attr *a = &ev->attrs.a[k];
            if (buf_reserve(buf, 12 + 10 * JN_MAX_DIMS)) goto nomem;
            switch (kind) {
            case JN_A_INT: case JN_A_BOOL: case JN_A_DTYPE:
                put_u8(buf, (unsigned)kind);
                put_sv(buf, a->i);
                break;
            case JN_A_FLOAT:
                put_u8(buf, (unsigned)kind);
                put_f64(buf, a->f);
                break;
            case JN_A_INTS:
                if (a->l.n < 0 || a->l.n > JN_MAX_DIMS) {
                    buf->len = start;
                    return jn_error(JN_ERR_VALUE, "jn_db_encode_event: op %u attribute %d is an int list of "
                                    "length %d (0..%d)", ev->op, k, a->l.n, JN_MAX_DIMS);
                }
                put_u8(buf, (unsigned)kind);
                put_uv(buf, (uint64_t)a->l.n);
                for (int j = 0; j < a->l.n; j++) put_sv(buf, a->l.v[j]);
                break;
            default:
                buf->len = start;
                return jn_error(JN_ERR_VALUE, "jn_db_encode_event: the kind of attribute %d of op %u is "
                                "unknown (set ev.attr_kind or use an op of this janus's op table)", k, ev->op);
            }
        }
        if (buf_reserve(buf, 2)) goto nomem;
        put_u8(buf, ev->nin);
        put_u8(buf, ev->nout);
        for (int i = 0; i < ev->nin + ev->nout; i++) {
            const jn_db_tref *t = i < ev->nin ? &ev->in[i] : &ev->out[i - ev->nin];
            if (t->ndim > JN_MAX_DIMS) {
                buf->len = start;
                return jn_error(JN_ERR_VALUE, "jn_db_encode_event: op %u tensor %d has ndim %d (at most %d)",
                                ev->op, i, t->ndim, JN_MAX_DIMS);
            }
            if (buf_reserve(buf, TREF_MAX)) goto nomem;
            put_tref(buf, t);
        }
        break;
    }
    case JN_EV_SYNC:
        put_u8(buf, ev->sync_kind);
        put_f64(buf, ev->value);
        put_sv(buf, ev->tensor_id);
        break;
    case JN_EV_DECISION:
        put_u8(buf, ev->dec_kind);
        put_sv(buf, ev->outcome);
        break;
    case JN_EV_LIVE:
        if (buf_reserve(buf, 10 * ((size_t)ev->nlive + 1))) goto nomem;
        put_uv(buf, ev->nlive);
        for (uint32_t i = 0; i < ev->nlive; i++) {
            if (ev->live[i] < 0 || (i && ev->live[i] <= ev->live[i - 1])) {
                buf->len = start;
                return jn_error(JN_ERR_VALUE, "jn_db_encode_event: live ids must be >= 0 and ascend (id %lld after %lld)",
                                (long long)ev->live[i], (long long)(i ? ev->live[i - 1] : -1));
            }
            if (i) put_uv(buf, (uint64_t)(ev->live[i] - ev->live[i - 1]));
            else put_sv(buf, ev->live[0]);
        }
        break;
    case JN_EV_REGION:
        if (ev->region <= 0 || ev->region_enter > 1 || (ev->nargs && !ev->args)) {
            buf->len = start;
            return jn_error(JN_ERR_VALUE, "jn_db_encode_event: a region event needs a region id > 0 (got %lld), "
                            "enter 0 or 1 and its %u argument ids", (long long)ev->region, ev->nargs);
        }
        if (buf_reserve(buf, 10 * ((size_t)ev->nargs + 3))) goto nomem;
        put_u8(buf, ev->region_enter);
        put_sv(buf, ev->region);
        put_uv(buf, ev->nargs);
        for (uint32_t i = 0; i < ev->nargs; i++) put_sv(buf, ev->args[i]);
        break;
    default:
        buf->len = start;
        return jn_error(JN_ERR_VALUE, "jn_db_encode_event: unknown event kind %d (expected JN_EV_OP, "
                        "JN_EV_SYNC, JN_EV_DECISION, JN_EV_LIVE or JN_EV_REGION)", ev->kind);
    }
    if (buf_reserve(buf, 20)) goto nomem;
    put_sv(buf, ev->callsite);
    put_sv(buf, ev->stack);
    return JN_OK;
nomem:
    buf->len = start;
    return jn_error(JN_ERR_NOMEM, "out of memory encoding a recorded event");
}

void jn_db_buf_free(jn_db_buf *buf) {
    if (!buf) return;
    free(buf->data);
    buf->data = NULL;
    buf->len = buf->cap = 0;
}

/* ------------------------------------------------------------- decoding */
struct jn_db_decoder {
    const uint8_t *p, *end;
    jn_db_tref *arena; /* the in/out trefs of the current event */
    size_t arena_cap;
    int64_t *ids;      /* the live ids of the current event */
    size_t ids_cap;
    size_t nevents;    /* events decoded so far, for messages */
};

jn_status jn_db_decoder_new(const void *data, size_t len, jn_db_decoder **out) {
    *out = NULL;
    if (!data && len) return jn_error(JN_ERR_VALUE, "jn_db_decoder_new: NULL data of length %zu", len);
    jn_db_decoder *d = calloc(1, sizeof *d);
    if (!d) return jn_error(JN_ERR_NOMEM, "out of memory creating an event decoder");
    d->p = data;
    d->end = len ? d->p + len : d->p; /* (NULL, 0) is allowed: no arithmetic on NULL */
    *out = d;
    return JN_OK;
}

void jn_db_decoder_free(jn_db_decoder *d) {
    if (!d) return;
    free(d->arena);
    free(d->ids);
    free(d);
}

/* *p (with *cap elements of el bytes) made to hold n; nonzero (the error
 * set) when out of memory.  void * to void ** would not be portable, hence
 * the memcpy. */
static int grow(void *pp, size_t *cap, size_t n, size_t el) {
    if (n <= *cap) return 0;
    size_t c = *cap ? *cap : 16;
    while (c < n) c *= 2;
    void *old;
    memcpy(&old, pp, sizeof old);
    void *p = realloc(old, c * el);
    if (!p) {
        jn_error(JN_ERR_NOMEM, "out of memory decoding recorded events");
        return 1;
    }
    memcpy(pp, &p, sizeof p);
    *cap = c;
    return 0;
}

/* Each getter returns -1 when the input ends or is malformed. */
static int get_u8(jn_db_decoder *d, uint8_t *v) {
    if (d->p >= d->end) return -1;
    *v = *d->p++;
    return 0;
}

static int get_uv(jn_db_decoder *d, uint64_t *v) {
    uint64_t r = 0;
    for (int shift = 0; shift < 64; shift += 7) {
        if (d->p >= d->end) return -1;
        uint8_t c = *d->p++;
        if (shift == 63 && c > 1) return -1; /* more than 64 bits */
        r |= (uint64_t)(c & 0x7f) << shift;
        if (!(c & 0x80)) {
            *v = r;
            return 0;
        }
    }
    return -1;
}

static int get_sv(jn_db_decoder *d, int64_t *v) {
    uint64_t u;
    if (get_uv(d, &u)) return -1;
    uint64_t s = (u >> 1) ^ (0 - (u & 1));
    memcpy(v, &s, 8); /* two's complement reinterpretation without UB */
    return 0;
}

static int get_f64(jn_db_decoder *d, double *v) {
    if (d->end - d->p < 8) return -1;
    uint64_t u = 0;
    for (int i = 0; i < 8; i++) u |= (uint64_t)d->p[i] << (8 * i);
    d->p += 8;
    memcpy(v, &u, 8);
    return 0;
}

static int get_tref(jn_db_decoder *d, jn_db_tref *t) {
    uint8_t flags;
    memset(t, 0, sizeof *t);
    if (get_sv(d, &t->id) || get_uv(d, &t->version) || get_u8(d, &t->dtype) || get_u8(d, &t->ndim) ||
        get_u8(d, &t->device) || get_u8(d, &t->role) || get_u8(d, &t->pytype) || get_u8(d, &flags))
        return -1;
    if (t->ndim > JN_MAX_DIMS || t->role > JN_TR_DATAIDX || (flags & ~3u)) return -1;
    for (int k = 0; k < t->ndim; k++)
        if (get_sv(d, &t->shape[k])) return -1;
    if (flags & 1) {
        /* contiguous strides; computed in unsigned so a garbage shape can't overflow */
        uint64_t s = 1;
        for (int k = t->ndim - 1; k >= 0; k--) {
            memcpy(&t->strides[k], &s, 8);
            s *= t->shape[k] > 1 ? (uint64_t)t->shape[k] : 1;
        }
    } else {
        for (int k = 0; k < t->ndim; k++)
            if (get_sv(d, &t->strides[k])) return -1;
    }
    if ((flags & 2) && get_sv(d, &t->offset)) return -1;
    if (t->role == JN_TR_SCALAR && get_f64(d, &t->scalar)) return -1;
    return 0;
}

static jn_status corrupt(jn_db_decoder *d, const char *what) {
    d->p = d->end; /* further calls report the end, never re-read garbage */
    return jn_error(JN_ERR_IO, "corrupt event chunk: %s in event %zu (the trace store is damaged; "
                    "re-record the run)", what, d->nevents);
}

jn_status jn_db_decoder_next(jn_db_decoder *d, jn_db_event *ev, int *got) {
    *got = 0;
    memset(ev, 0, sizeof *ev);
    if (d->p >= d->end) return JN_OK;
    if (get_u8(d, &ev->kind)) return corrupt(d, "truncated kind");
    switch (ev->kind) {
    case JN_EV_OP: {
        uint64_t op;
        if (get_uv(d, &op) || op > UINT32_MAX) return corrupt(d, "bad op index");
        ev->op = (uint32_t)op;
        if (get_u8(d, &ev->inplace) || get_u8(d, &ev->nattrs)) return corrupt(d, "truncated op header");
        if (ev->nattrs > JN_MAX_ATTRS) return corrupt(d, "too many attributes");
        for (int k = 0; k < ev->nattrs; k++) {
            uint8_t tag;
            jn_attr *a = &ev->attrs.a[k];
            if (get_u8(d, &tag)) return corrupt(d, "truncated attribute");
            switch (tag) {
            case JN_A_INT: case JN_A_BOOL: case JN_A_DTYPE:
                if (get_sv(d, &a->i)) return corrupt(d, "truncated int attribute");
                break;
            case JN_A_FLOAT:
                if (get_f64(d, &a->f)) return corrupt(d, "truncated float attribute");
                break;
            case JN_A_INTS: {
                uint64_t n;
                if (get_uv(d, &n) || n > JN_MAX_DIMS) return corrupt(d, "bad int-list attribute length");
                a->l.n = (int)n;
                for (int j = 0; j < a->l.n; j++)
                    if (get_sv(d, &a->l.v[j])) return corrupt(d, "truncated int-list attribute");
                break;
            }
            default:
                return corrupt(d, "unknown attribute tag");
            }
            ev->attr_kind[k] = (char)tag;
        }
        if (get_u8(d, &ev->nin) || get_u8(d, &ev->nout)) return corrupt(d, "truncated tensor counts");
        size_t n = (size_t)ev->nin + ev->nout;
        if (grow(&d->arena, &d->arena_cap, n, sizeof *d->arena)) return JN_ERR_NOMEM;
        for (size_t i = 0; i < n; i++)
            if (get_tref(d, &d->arena[i])) return corrupt(d, "bad tensor reference");
        ev->in = ev->nin ? d->arena : NULL;
        ev->out = ev->nout ? d->arena + ev->nin : NULL;
        break;
    }
    case JN_EV_SYNC:
        if (get_u8(d, &ev->sync_kind) || get_f64(d, &ev->value) || get_sv(d, &ev->tensor_id))
            return corrupt(d, "truncated sync event");
        break;
    case JN_EV_DECISION:
        if (get_u8(d, &ev->dec_kind) || get_sv(d, &ev->outcome)) return corrupt(d, "truncated decision event");
        break;
    case JN_EV_LIVE: {
        uint64_t n;
        if (get_uv(d, &n) || n > (uint64_t)(d->end - d->p)) return corrupt(d, "bad live-tensor count");
        if (grow(&d->ids, &d->ids_cap, (size_t)n, sizeof *d->ids)) return JN_ERR_NOMEM;
        for (uint64_t i = 0; i < n; i++) {
            uint64_t delta;
            if (i == 0 ? get_sv(d, &d->ids[0]) : get_uv(d, &delta)) return corrupt(d, "truncated live event");
            if (i == 0 && d->ids[0] < 0) return corrupt(d, "negative live id");
            if (i && (delta == 0 || delta > (uint64_t)(INT64_MAX - d->ids[i - 1]))) /* ids[i-1] >= 0 here */
                return corrupt(d, "live ids out of order");
            if (i) d->ids[i] = d->ids[i - 1] + (int64_t)delta;
        }
        ev->nlive = (uint32_t)n;
        ev->live = n ? d->ids : NULL;
        break;
    }
    case JN_EV_REGION: {
        uint64_t n;
        if (get_u8(d, &ev->region_enter) || ev->region_enter > 1 || get_sv(d, &ev->region) || ev->region <= 0)
            return corrupt(d, "bad region event");
        if (get_uv(d, &n) || n > (uint64_t)(d->end - d->p)) return corrupt(d, "bad region argument count");
        if (grow(&d->ids, &d->ids_cap, (size_t)n, sizeof *d->ids)) return JN_ERR_NOMEM;
        for (uint64_t i = 0; i < n; i++)
            if (get_sv(d, &d->ids[i])) return corrupt(d, "truncated region event");
        ev->nargs = (uint32_t)n;
        ev->args = n ? d->ids : NULL;
        break;
    }
    default:
        return corrupt(d, "unknown event kind");
    }
    if (get_sv(d, &ev->callsite) || get_sv(d, &ev->stack)) return corrupt(d, "truncated call site");
    d->nevents++;
    *got = 1;
    return JN_OK;
}
