/* rec.c -- the recorder core: the dispatcher hook, per-step buffers and
 * summaries, and the step writes into the trace store.
 *
 * The hook runs after every op.  It asks the Python layer for the call site
 * (a callback, cached there), encodes one JN_EV_OP event into the step's
 * buffer, counts the op, folds (op, attrs, call site) into the step's
 * signature hash and updates the shape / argument-type summaries (one
 * probe when the op's (op, call site, input shapes) key was seen in an
 * earlier step).  Errors inside the hook cannot be returned through the
 * dispatcher, so the first one is kept (jn_rec_pending_error) and recording
 * stops; the user's program runs on.  jn_rec_end_step() moves the step's
 * buffers into a queue that a writer thread drains through
 * jn_db_write_steps: compression and the SQLite commit then overlap the
 * next training steps instead of adding to them.  The writer is woken per
 * batch of JN_REC_BATCH steps (or every JN_REC_TICK_MS) and commits the
 * batch in one transaction.  The queue is short (backpressure at
 * JN_REC_QUEUE steps), so a SIGKILL loses at most those uncommitted steps;
 * jn_rec_stop() drains it; SIGTERM, SIGHUP and SIGINT at their default
 * have the writer commit it, with the step in progress, before the process
 * dies of them (signals.c, rec_end_by_signal).  One mutex serializes every
 * use of the store handle (the writer's step writes, the Python thread's
 * interning).  A forked child stops recording (it would write the parent's
 * run).
 */
#include "jn_rec.h"
#include "rec_internal.h"
#include "jn_settings.h"

#include <assert.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

int jn_rec_on = 0;
int jn_rec_quiet = 0;

/* ------------------------------------------------------------ hash map */
/* Open addressing over fixed 5-int64 keys; values are one int64 pair.
 * Used for the decision, shape and argument-type summaries. */
typedef struct {
    int64_t k[5];
    int64_t v, w;
    int used;
} kv_ent;

typedef struct {
    kv_ent *e;
    size_t cap, n;
} kv_map;

/* Word-at-a-time hashing (MurmurHash3's 64-bit block and finalizer steps):
 * the hook hashes a few words per op, where byte-wise FNV cost a multiply
 * per byte.  Only for in-memory keys; the stored signature stays FNV. */
static inline uint64_t wmix(uint64_t h, uint64_t v) {
    v *= 0x87c37b91114253d5ull;
    v = (v << 31) | (v >> 33);
    v *= 0x4cf5ad432745937full;
    h ^= v;
    h = (h << 27) | (h >> 37);
    return h * 5 + 0x52dce729;
}

static inline uint64_t wfinal(uint64_t h) {
    h ^= h >> 33;
    h *= 0xff51afd7ed558ccdull;
    h ^= h >> 33;
    h *= 0xc4ceb9fe1a85ec53ull;
    return h ^ (h >> 33);
}

static uint64_t kv_hash(const int64_t *k) {
    uint64_t h = 0x9E3779B97F4A7C15ull;
    for (int i = 0; i < 5; i++) h = wmix(h, (uint64_t)k[i]);
    return wfinal(h);
}

static void kv_free(kv_map *m) {
    free(m->e);
    memset(m, 0, sizeof *m);
}

static void kv_clear(kv_map *m) {
    if (m->n) memset(m->e, 0, sizeof(kv_ent) * m->cap);
    m->n = 0;
}

/* The entry for key k (inserted zeroed if new, *isnew set); NULL on OOM. */
static kv_ent *kv_get(kv_map *m, const int64_t *k, int *isnew) {
    if (2 * (m->n + 1) > m->cap) {
        size_t nc = m->cap ? 2 * m->cap : 64;
        kv_ent *ne = calloc(nc, sizeof *ne);
        if (!ne) return NULL;
        for (size_t i = 0; i < m->cap; i++) {
            if (!m->e[i].used) continue;
            size_t j = kv_hash(m->e[i].k) & (nc - 1);
            while (ne[j].used) j = (j + 1) & (nc - 1);
            ne[j] = m->e[i];
        }
        free(m->e);
        m->e = ne;
        m->cap = nc;
    }
    size_t j = kv_hash(k) & (m->cap - 1);
    while (m->e[j].used) {
        if (!memcmp(m->e[j].k, k, sizeof(int64_t) * 5)) {
            *isnew = 0;
            return &m->e[j];
        }
        j = (j + 1) & (m->cap - 1);
    }
    memset(&m->e[j], 0, sizeof m->e[j]);
    memcpy(m->e[j].k, k, sizeof(int64_t) * 5);
    m->e[j].used = 1;
    m->n++;
    *isnew = 1;
    return &m->e[j];
}

/* ------------------------------------------------------------- state */
static struct {
    jn_db *db;
    int64_t run_id, step;
    jn_rec_site_fn site_fn;
    /* the current step */
    jn_db_buf events;
    int64_t opcount[JN_NOPS];
    int touched[JN_NOPS], ntouched;
    int64_t n_ops, n_syncs, n_decisions;
    uint64_t sig;
    double started;
    jn_db_sync *syncs;
    int nsyncs, capsyncs;
    kv_map decisions;         /* (callsite, kind, outcome) -> count */
    kv_map shape_base;        /* (op, callsite, arg, dim, size) ever seen */
    kv_map shape_step;        /* ... first seen in this step: its rows */
    kv_map type_base;         /* (op, callsite, arg, pytype) ever seen -> first step */
    kv_map type_step;         /* ... first seen in this step -> uses in the step */
    kv_map seen;              /* hash of (op, callsite, input types+shapes) -> first step */
    int64_t last_cmp_id;      /* output of the latest comparison op */
    int64_t max_id;           /* largest tensor id seen so far (dispatch_into detection) */
    jn_status err;
    char errmsg[512];
    jn_rec_stats stats;
    int as_device;            /* > 0: every tensor written as on device as_device - 1 (test hook) */
} R;

/* ---------------------------------------------------------- live set */
/* The ids of the tensors this step's ops created, ascending (ids grow as
 * tensors are made; another thread's op may be recorded late: inserted in
 * place), and whether each died since (jn_rt_record_free of the header the
 * op made: a second header with the same id -- autograd's saved alias,
 * released after backward, or a detach() -- dying does not end the value
 * while the op's own header lives).  Where a segment
 * ends, the ones still alive go to a JN_EV_LIVE event, so the analyzer
 * keeps their values although the run never reads them again: Python may
 * (replay cannot know, and otherwise has to keep a recomputation ready).
 * Its own lock: tensors die on any thread, also while rec_mu is held (the
 * order is always rec_mu, then L.mu). */
typedef struct {
    const jn_tensor *t;
    uint8_t role;
} role_ent;

static struct {
    pthread_mutex_t mu;
    int64_t *id;
    uint8_t *dead;
    const jn_tensor **owner; /* the header the op made (compared, never dereferenced) */
    int64_t n, cap;
    int64_t *out;          /* scratch for the event */
    role_ent *roles;       /* the marked headers (see "roles" below) */
    int64_t nroles, nrslot;
} L = {PTHREAD_MUTEX_INITIALIZER, NULL, NULL, NULL, 0, 0, NULL, NULL, 0, 0};

static int64_t live_find(int64_t id) { /* index of the first id >= id */
    int64_t lo = 0, hi = L.n;
    while (lo < hi) {
        int64_t mid = lo + (hi - lo) / 2;
        if (L.id[mid] < id) lo = mid + 1;
        else hi = mid;
    }
    return lo;
}

/* Under L.mu (record_op holds it for an op's roles and outputs). */
static jn_status live_add_locked(const jn_tensor *t) {
    jn_status s = JN_OK;
    int64_t id = t->id;
    if (L.n == L.cap) {
        int64_t cap = L.cap ? 2 * L.cap : 1024;
        int64_t *ni = realloc(L.id, sizeof *ni * (size_t)cap), *no = NULL;
        uint8_t *nd = NULL;
        const jn_tensor **nw = NULL;
        if (ni) L.id = ni;
        if (ni && (nd = realloc(L.dead, (size_t)cap))) L.dead = nd;
        if (nd && (nw = realloc(L.owner, sizeof *nw * (size_t)cap))) L.owner = nw;
        if (nw && (no = realloc(L.out, sizeof *no * (size_t)cap))) L.out = no;
        if (no) L.cap = cap;
        else s = jn_error(JN_ERR_NOMEM, "recorder: out of memory tracking live tensors");
    }
    if (s == JN_OK) {
        int64_t k = L.n && L.id[L.n - 1] >= id ? live_find(id) : L.n;
        if (k < L.n && L.id[k] == id) {
            L.dead[k] = 0;
            L.owner[k] = t;
        } else {
            memmove(L.id + k + 1, L.id + k, sizeof *L.id * (size_t)(L.n - k));
            memmove(L.dead + k + 1, L.dead + k, (size_t)(L.n - k));
            memmove(L.owner + k + 1, L.owner + k, sizeof *L.owner * (size_t)(L.n - k));
            L.id[k] = id;
            L.dead[k] = 0;
            L.owner[k] = t;
            L.n++;
        }
    }
    return s;
}

static void fail(jn_status s);

/* ---------------------------------------------------- segment writes */
/* The ids this segment's ops wrote (made or in place), under rec_mu; a
 * sync and a step's end clear it.  Replay holds exactly those pending, so
 * a value read on the host is a sync there only if it is one of them
 * (jn_rec_written_in_segment): a mask made before the loop is no sync. */
static struct {
    int64_t *id;
    int64_t n, cap;
} W;

static jn_status written_add(const jn_tensor *t) {
    if (W.n == W.cap) {
        int64_t cap = W.cap ? 2 * W.cap : 1024;
        int64_t *n = realloc(W.id, sizeof *n * (size_t)cap);
        if (!n) return jn_error(JN_ERR_NOMEM, "recorder: out of memory tracking the segment's writes");
        W.id = n;
        W.cap = cap;
    }
    W.id[W.n++] = t->id;
    return JN_OK;
}

/* ---------------------------------------------------------- roles */
/* The role of each header marked while recording (jn_rec_mark; unmarked:
 * JN_TR_TEMP), kept here and not on the tensor: a table keyed by the
 * header's address (linear probing, deletion by backward shift), under
 * L.mu -- marks come from the Python thread, deaths from any.  A dying
 * header's entry goes (live_free_hook); a second header autograd makes
 * over the same value takes its role (role_alias_hook). */
static int64_t role_home(const jn_tensor *t) {
    return (int64_t)(((uint64_t)(uintptr_t)t * 0x9E3779B97F4A7C15ull) >> 20) & (L.nrslot - 1);
}

/* t's slot, or the empty one where it would go (L.nrslot > 0). */
static int64_t role_pos(const jn_tensor *t) {
    int64_t i = role_home(t);
    while (L.roles[i].t && L.roles[i].t != t) i = (i + 1) & (L.nrslot - 1);
    return i;
}

static int role_get_locked(const jn_tensor *t) {
    if (!L.nroles) return JN_TR_TEMP;
    const role_ent *e = &L.roles[role_pos(t)];
    return e->t ? e->role : JN_TR_TEMP;
}

static void role_drop_locked(const jn_tensor *t) {
    if (!L.nroles) return;
    int64_t i = role_pos(t);
    if (!L.roles[i].t) return;
    L.nroles--;
    for (int64_t j = (i + 1) & (L.nrslot - 1); L.roles[j].t; j = (j + 1) & (L.nrslot - 1)) {
        int64_t h = role_home(L.roles[j].t); /* moves back unless its home lies in (i, j] */
        if ((j > i && (h <= i || h > j)) || (j < i && h <= i && h > j)) {
            L.roles[i] = L.roles[j];
            i = j;
        }
    }
    L.roles[i].t = NULL;
}

static jn_status role_set_locked(const jn_tensor *t, int role) {
    if (role == JN_TR_TEMP) {
        role_drop_locked(t);
        return JN_OK;
    }
    if (2 * (L.nroles + 1) > L.nrslot) { /* grow: every entry to its new home */
        int64_t n = L.nrslot ? 2 * L.nrslot : 256;
        role_ent *old = L.roles, *e = calloc((size_t)n, sizeof *e);
        if (!e) return jn_error(JN_ERR_NOMEM, "recorder: out of memory for tensor roles");
        int64_t on = L.nrslot;
        L.roles = e, L.nrslot = n;
        for (int64_t k = 0; k < on; k++)
            if (old[k].t) L.roles[role_pos(old[k].t)] = old[k];
        free(old);
    }
    role_ent *e = &L.roles[role_pos(t)];
    if (!e->t) L.nroles++;
    e->t = t;
    e->role = (uint8_t)role;
    return JN_OK;
}

void jn_rec_mark(jn_tensor *t, int role) {
    if (!jn_rec_on) return;
    pthread_mutex_lock(&L.mu);
    jn_status s = role_set_locked(t, role);
    pthread_mutex_unlock(&L.mu);
    if (s) fail(s);
}

int jn_rec_role(const jn_tensor *t) {
    pthread_mutex_lock(&L.mu);
    int r = role_get_locked(t);
    pthread_mutex_unlock(&L.mu);
    return r;
}

static void role_alias_hook(const jn_tensor *from, const jn_tensor *to) {
    pthread_mutex_lock(&L.mu);
    int r = role_get_locked(from);
    jn_status s = r != JN_TR_TEMP ? role_set_locked(to, r) : JN_OK;
    pthread_mutex_unlock(&L.mu);
    if (s) fail(s);
}

static void live_free_hook(const jn_tensor *t) {
    pthread_mutex_lock(&L.mu);
    if (jn_rec_on) {
        int64_t k = L.n ? live_find(t->id) : 0;
        if (k < L.n && L.id[k] == t->id && L.owner[k] == t) L.dead[k] = 1;
    }
    role_drop_locked(t); /* its address may come back as another header */
    pthread_mutex_unlock(&L.mu);
}

static void live_clear(void) {
    pthread_mutex_lock(&L.mu);
    L.n = 0;
    pthread_mutex_unlock(&L.mu);
}

static void live_free(void) {
    pthread_mutex_lock(&L.mu);
    free(L.id), free(L.dead), free(L.owner), free(L.out), free(L.roles);
    L.id = L.out = NULL;
    L.dead = NULL;
    L.owner = NULL;
    L.roles = NULL;
    L.n = L.cap = L.nroles = L.nrslot = 0;
    pthread_mutex_unlock(&L.mu);
}

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* Keep the first error; recording stops, the program goes on. */
static void fail(jn_status s) {
    if (!R.err) {
        R.err = s;
        snprintf(R.errmsg, sizeof R.errmsg, "%s", jn_errmsg());
    }
    jn_rec_on = 0;
    jn_set_dispatch_hook(NULL);
}

jn_status jn_rec_pending_error(const char **msg) {
    if (msg) *msg = R.errmsg;
    return R.err;
}


void jn_rec_set_site_fn(jn_rec_site_fn fn) { R.site_fn = fn; }

static void get_site(jn_rec_site *s) {
    s->callsite = s->stack = 0;
    if (R.site_fn) R.site_fn(s);
}

static const char *pytype_name(int p) {
    static const char *const n[] = {"tensor", "int", "float", "bool"};
    return p >= 0 && p < 4 ? n[p] : "tensor";
}

/* --------------------------------------------------------------- hook */
/* Every field the encoder reads is set; shape and strides only up to ndim
 * (a full memset of the two 8-dim arrays per tensor showed in profiles). */
static void fill_tref(jn_db_tref *r, const jn_tensor *t, int is_out, int role) {
    r->pytype = 0;
    r->id = t->id;
    r->version = t->storage ? t->storage->version : 0;
    r->dtype = (uint8_t)t->dtype;
    r->ndim = (uint8_t)t->ndim;
    r->device = t->storage ? (uint8_t)t->storage->device : 0; /* where the tensor lives: guards and codegen key on it */
    if (__builtin_expect(R.as_device > 0, 0) && !t->wrapped_number) r->device = (uint8_t)(R.as_device - 1); /* numbers stay host */
    memcpy(r->shape, t->shape, sizeof(int64_t) * (size_t)t->ndim);
    memcpy(r->strides, t->strides, sizeof(int64_t) * (size_t)t->ndim);
    r->offset = t->offset;
    r->scalar = NAN;
    if (t->wrapped_number && !is_out) {
        r->role = JN_TR_SCALAR;
        if (t->storage && t->storage->data) r->scalar = jn_load_f64(jn_data(t), t->dtype);
        /* a wrapped number's dtype says which Python type it came from */
        r->pytype = t->dtype == JN_BOOL ? 3 : jn_dtype_is_float(t->dtype) ? 2 : 1;
    } else {
        r->role = (uint8_t)role;
    }
}

/* Shape and argument-type summaries: a row the first time each value is
 * seen at its key (see the header). */
static jn_status summarize_input(jn_op op, int64_t cs, int arg, const jn_db_tref *r) {
    int isnew;
    int64_t kt[5] = {op, cs, arg, r->pytype, 0};
    kv_ent *b = kv_get(&R.type_base, kt, &isnew);
    if (!b) return jn_error(JN_ERR_NOMEM, "recorder: out of memory for argument-type summaries");
    if (isnew) b->w = R.step;
    if (b->w == R.step) { /* first seen in this step: count its uses in the step */
        kv_ent *e = kv_get(&R.type_step, kt, &isnew);
        if (!e) return jn_error(JN_ERR_NOMEM, "recorder: out of memory for argument-type summaries");
        e->v++;
    }
    if (r->role == JN_TR_SCALAR) return JN_OK;
    for (int d = 0; d < r->ndim; d++) {
        int64_t k[5] = {op, cs, arg, d, r->shape[d]};
        if (!kv_get(&R.shape_base, k, &isnew))
            return jn_error(JN_ERR_NOMEM, "recorder: out of memory for shape summaries");
        if (isnew && !kv_get(&R.shape_step, k, &isnew))
            return jn_error(JN_ERR_NOMEM, "recorder: out of memory for shape summaries");
    }
    return JN_OK;
}

static void record_op(const jn_rec_site *sp, jn_op op, int nin, jn_tensor *const *in, const jn_attrs *a,
                      int nout, jn_tensor *const *out) {
    const jn_opinfo *info = jn_op_info(op);
    jn_rec_site site = *sp;
    jn_db_tref tin[JN_MAX_INS], tout[JN_MAX_OUTS];
    /* only what the encoder reads for an op event: the event struct is
     * large (every attribute slot), and clearing/copying it all per op showed */
    jn_db_event ev;
    ev.kind = JN_EV_OP;
    ev.op = (uint32_t)op;
    assert(info->nattrs <= JN_MAX_ATTRS);
    memcpy(ev.attrs.a, a->a, sizeof(jn_attr) * (size_t)info->nattrs);
    memset(ev.attr_kind, 0, sizeof ev.attr_kind);
    ev.nattrs = (uint8_t)info->nattrs;
    ev.nin = (uint8_t)nin;
    ev.nout = (uint8_t)nout;
    ev.in = tin;
    ev.out = tout;
    ev.callsite = site.callsite;
    ev.stack = site.stack;
    int64_t maxin = 0;
    jn_status s0 = JN_OK;
    uint8_t rin[JN_MAX_INS], rout[JN_MAX_OUTS];
    for (int i = 0; i < nin; i++)
        if (in[i]->id > maxin) maxin = in[i]->id;
    /* one hold of the live set's lock per op: the roles, then the outputs made here */
    pthread_mutex_lock(&L.mu);
    for (int i = 0; i < nin; i++) rin[i] = (uint8_t)role_get_locked(in[i]);
    for (int i = 0; i < nout; i++) rout[i] = (uint8_t)role_get_locked(out[i]);
    /* jn_dispatch_into writes an existing tensor: it is an input, or older
     * than anything this op could have created */
    ev.inplace = (info->flags & JN_F_INPLACE) || (nout == 1 && (rout[0] != JN_TR_TEMP || out[0]->id <= R.max_id));
    for (int i = 0; !ev.inplace && i < nout; i++)
        for (int k = 0; k < nin; k++)
            if (out[i] == in[k]) ev.inplace = 1;
    if (maxin > R.max_id) R.max_id = maxin;
    for (int i = 0; i < nout; i++)
        if (out[i]->id > R.max_id) R.max_id = out[i]->id;
    for (int i = 0; i < nout && !ev.inplace && !s0; i++) s0 = live_add_locked(out[i]); /* followed until it dies */
    pthread_mutex_unlock(&L.mu);
    for (int i = 0; i < nout && !s0; i++) s0 = written_add(out[i]);
    if (s0) {
        fail(s0);
        return;
    }
    for (int i = 0; i < nin; i++) fill_tref(&tin[i], in[i], 0, rin[i]);
    for (int i = 0; i < nout; i++) fill_tref(&tout[i], out[i], 1, rout[i]);

    jn_status s = jn_db_encode_event(&R.events, &ev);
    if (s) {
        fail(s);
        return;
    }
    if (!R.opcount[op]++) R.touched[R.ntouched++] = (int)op;
    R.n_ops++;
    if (jn_op_is_comparison(op)) R.last_cmp_id = out[0]->id;

    /* signature: op, structural attrs, call site.  Float attrs are values
     * (Adam's bias-corrected step size changes every step), like wrapped
     * scalars; the random stream position changes every step too. */
    uint64_t h = jn_rec_fnv(R.sig, &ev.op, sizeof ev.op);
    for (int k = 0; k < info->nattrs; k++) {
        if (info->attr_kind[k] == JN_A_FLOAT) continue;
        if ((info->flags & JN_F_RAND) &&
            (!strcmp(info->attr_name[k], "seed") || !strcmp(info->attr_name[k], "offset")))
            continue;
        if (info->attr_kind[k] == JN_A_INTS)
            h = jn_rec_fnv(h, &a->a[k].l, sizeof(int) + sizeof(int64_t) * (size_t)a->a[k].l.n);
        else
            h = jn_rec_fnv(h, &a->a[k].i, sizeof(int64_t));
    }
    R.sig = jn_rec_fnv(h, &site.callsite, sizeof site.callsite);

    /* summaries: one probe when this exact (op, call site, input types and
     * shapes) was already seen in an earlier step, which is the steady state */
    uint64_t kh = wmix(wmix(0x9E3779B97F4A7C15ull, ev.op), (uint64_t)site.callsite);
    for (int i = 0; i < nin; i++) {
        kh = wmix(kh, (uint64_t)tin[i].pytype | (uint64_t)tin[i].ndim << 8 | (uint64_t)i << 16);
        for (int d = 0; d < tin[i].ndim; d++) kh = wmix(kh, (uint64_t)tin[i].shape[d]);
    }
    int isnew;
    int64_t kk[5] = {(int64_t)wfinal(kh), 0, 0, 0, 0};
    kv_ent *seen = kv_get(&R.seen, kk, &isnew);
    if (!seen) {
        fail(jn_error(JN_ERR_NOMEM, "recorder: out of memory for summaries"));
        return;
    }
    if (isnew) seen->w = R.step;
    else if (seen->w < R.step) return;
    for (int i = 0; i < nin; i++)
        if ((s = summarize_input(op, site.callsite, i, &tin[i]))) {
            fail(s);
            return;
        }
}

/* Ops can come from two threads at once (another Python thread while the
 * autograd engine runs backward without the GIL): the step state is locked.
 * The call site is found before taking the lock, since finding it may wait
 * for the GIL. */
static pthread_mutex_t rec_mu = PTHREAD_MUTEX_INITIALIZER;

int jn_rec_written_in_segment(const jn_tensor *t) {
    if (!jn_rec_on || !t) return 0;
    pthread_mutex_lock(&rec_mu);
    int found = 0;
    for (int64_t k = W.n - 1; k >= 0 && !found; k--) found = W.id[k] == t->id;
    pthread_mutex_unlock(&rec_mu);
    return found;
}

static void hook_after(void *ctx, jn_op op, int nin, jn_tensor *const *in, const jn_attrs *a, int nout,
                       jn_tensor *const *out) {
    (void)ctx;
    if (!jn_rec_on) return;
    jn_rec_site site;
    get_site(&site);
    pthread_mutex_lock(&rec_mu);
    if (jn_rec_on) record_op(&site, op, nin, in, a, nout, out);
    pthread_mutex_unlock(&rec_mu);
}

/* ------------------------------------------------------ syncs, decisions */
/* The JN_EV_LIVE event where a segment ends (before its sync event, or at
 * the step's end): this step's tensors that are still alive. */
static jn_status record_live(void) {
    jn_db_event ev;
    memset(&ev, 0, sizeof ev);
    ev.kind = JN_EV_LIVE;
    pthread_mutex_lock(&L.mu);
    uint32_t n = 0;
    for (int64_t k = 0; k < L.n; k++)
        if (!L.dead[k]) L.out[n++] = L.id[k];
    ev.nlive = n;
    ev.live = L.out;
    jn_status s = n ? jn_db_encode_event(&R.events, &ev) : JN_OK;
    pthread_mutex_unlock(&L.mu);
    return s;
}

static void record_sync(const jn_rec_site *sp, int kind, double value, const jn_tensor *t) {
    jn_rec_site site = *sp;
    jn_status s0 = record_live();
    if (s0) {
        fail(s0);
        return;
    }
    jn_db_event ev;
    memset(&ev, 0, sizeof ev);
    ev.kind = JN_EV_SYNC;
    ev.sync_kind = (uint8_t)kind;
    ev.value = value;
    ev.tensor_id = t ? t->id : 0;
    ev.callsite = site.callsite;
    ev.stack = site.stack;
    jn_status s = jn_db_encode_event(&R.events, &ev);
    if (!s && R.nsyncs == R.capsyncs) {
        int nc = R.capsyncs ? 2 * R.capsyncs : 16;
        jn_db_sync *ns = realloc(R.syncs, sizeof *ns * (size_t)nc);
        if (!ns) s = jn_error(JN_ERR_NOMEM, "recorder: out of memory for sync points");
        else {
            R.syncs = ns;
            R.capsyncs = nc;
        }
    }
    if (s) {
        fail(s);
        return;
    }
    R.syncs[R.nsyncs++] = (jn_db_sync){R.n_ops, kind, value, site.callsite};
    R.n_syncs++;
    W.n = 0; /* a new segment */
}

static void sync_kind(int kind, int is_bool, double value, const jn_tensor *t) {
    if (!jn_rec_on || jn_rec_quiet) return;
    jn_rec_site site;
    get_site(&site);
    pthread_mutex_lock(&rec_mu);
    if (is_bool) kind = t && t->id == R.last_cmp_id ? JN_SYNC_COMPARE : JN_SYNC_BOOL;
    if (jn_rec_on) record_sync(&site, kind, value, t);
    pthread_mutex_unlock(&rec_mu);
}

void jn_rec_sync(int kind, double value, const jn_tensor *t) { sync_kind(kind, 0, value, t); }

void jn_rec_sync_bool(double value, const jn_tensor *t) { sync_kind(0, 1, value, t); }

static void record_decision(int64_t callsite, int kind, int64_t outcome);

void jn_rec_decision(int64_t callsite, int kind, int64_t outcome) {
    if (!jn_rec_on) return;
    pthread_mutex_lock(&rec_mu);
    if (jn_rec_on) record_decision(callsite, kind, outcome);
    pthread_mutex_unlock(&rec_mu);
}

static void record_decision(int64_t callsite, int kind, int64_t outcome) {
    jn_db_event ev;
    memset(&ev, 0, sizeof ev);
    ev.kind = JN_EV_DECISION;
    ev.callsite = callsite;
    ev.dec_kind = (uint8_t)kind;
    ev.outcome = outcome;
    ev.value = NAN;
    jn_status s = jn_db_encode_event(&R.events, &ev);
    int isnew;
    int64_t k[5] = {callsite, kind, outcome, 0, 0};
    kv_ent *e = s ? NULL : kv_get(&R.decisions, k, &isnew);
    if (!s && !e) s = jn_error(JN_ERR_NOMEM, "recorder: out of memory for decisions");
    if (s) {
        fail(s);
        return;
    }
    e->v++;
    R.n_decisions++;
}

/* A region's entry or exit marker (schema v9): its position among the
 * step's events is what the analyzer reads (analyzer/regions.c). */
void jn_rec_region(int64_t region, int enter, const int64_t *args, int nargs) {
    if (!jn_rec_on) return;
    jn_db_event ev;
    memset(&ev, 0, sizeof ev);
    ev.kind = JN_EV_REGION;
    ev.region = region;
    ev.region_enter = enter != 0;
    ev.nargs = nargs > 0 ? (uint32_t)nargs : 0;
    ev.args = args;
    ev.value = NAN;
    pthread_mutex_lock(&rec_mu);
    if (jn_rec_on) {
        jn_status s = jn_db_encode_event(&R.events, &ev);
        if (s) fail(s);
    }
    pthread_mutex_unlock(&rec_mu);
}

/* --------------------------------------------------------------- writer */
#define JN_REC_QUEUE 8
/* The writer is woken when this many steps have queued (or every
 * JN_REC_TICK_MS): one wake-up and one transaction per batch instead of
 * per step, which at hundreds of steps per second is most of its cost. */
#define JN_REC_BATCH 4
#define JN_REC_TICK_MS 50

typedef struct pending {
    jn_db_step st;
    char kind[16];
    jn_db_buf events;
    jn_db_sync *syncs;
    jn_db_opcount *oc;
    jn_db_decision *dec;
    jn_db_shape *sh;
    jn_db_argtype *at;
    struct pending *next;
} pending;

static pthread_mutex_t db_mu = PTHREAD_MUTEX_INITIALIZER; /* the store handle */
static pthread_mutex_t q_mu = PTHREAD_MUTEX_INITIALIZER;  /* the queue below */
static pthread_cond_t q_work = PTHREAD_COND_INITIALIZER, q_room = PTHREAD_COND_INITIALIZER;
static pending *q_head, *q_tail;
static int q_len, q_stop, q_busy, writer_up;
static int q_flush; /* commit what is queued now, without waiting for a batch */
/* a signal ends the process (rec_end_by_signal): once the queue is
 * committed the writer marks the run killed by q_sig, then sets q_sig_done */
static int q_sig, q_sig_done;
static pthread_t writer;
static clockid_t q_clock = CLOCK_REALTIME; /* of q_work's timed waits */
static jn_status w_err;              /* first failed write (the writer's message copied) */
static char w_errmsg[512];

static void pending_free(pending *p) {
    if (!p) return;
    jn_db_buf_free(&p->events);
    free(p->syncs);
    free(p->oc);
    free(p->dec);
    free(p->sh);
    free(p->at);
    free(p);
}

/* The writer takes everything queued so far and commits it as one
 * transaction: while it keeps up that is one step per commit; when training
 * outruns it the per-commit cost is shared by the batch. */
static void *writer_main(void *arg) {
    (void)arg;
    pending *batch[JN_REC_QUEUE];
    jn_db_step steps[JN_REC_QUEUE];
    pthread_mutex_lock(&q_mu);
    for (;;) {
        /* woken for a full batch or to stop; otherwise every JN_REC_TICK_MS
         * commits whatever has queued (a slow loop, or the last steps) */
        while (!q_stop && !q_flush && q_len < JN_REC_BATCH && !(q_sig && !q_sig_done)) {
            struct timespec dl;
            clock_gettime(q_clock, &dl);
            dl.tv_nsec += JN_REC_TICK_MS * 1000000L;
            if (dl.tv_nsec >= 1000000000L) {
                dl.tv_sec++;
                dl.tv_nsec -= 1000000000L;
            }
            if (pthread_cond_timedwait(&q_work, &q_mu, &dl) && q_head) break;
        }
        q_flush = 0;
        if (!q_head) {
            if (q_sig && !q_sig_done) { /* drained: the run ends here, killed */
                int sig = q_sig;
                pthread_mutex_unlock(&q_mu);
                pthread_mutex_lock(&db_mu);
                /* failing, it leaves the run to `janus record`, which stores the same */
                jn_status s = jn_db_run_end(R.db, R.run_id, 128 + sig, "killed", now());
                (void)s;
                pthread_mutex_unlock(&db_mu);
                pthread_mutex_lock(&q_mu);
                q_sig_done = 1;
                pthread_cond_broadcast(&q_room);
                continue;
            }
            if (q_stop) break; /* stopping and drained */
            continue;
        }
        int n = 0;
        while (q_head && n < JN_REC_QUEUE) {
            batch[n] = q_head;
            steps[n] = q_head->st;
            n++;
            q_head = q_head->next;
        }
        if (!q_head) q_tail = NULL;
        q_busy = 1;
        int skip = w_err != JN_OK; /* after a failure, later steps are dropped */
        pthread_mutex_unlock(&q_mu);
        jn_status s = JN_OK;
        if (!skip) {
            pthread_mutex_lock(&db_mu);
            s = jn_db_write_steps(R.db, steps, n);
            pthread_mutex_unlock(&db_mu);
        }
        pthread_mutex_lock(&q_mu);
        if (s && !w_err) {
            w_err = s;
            snprintf(w_errmsg, sizeof w_errmsg, "%s", jn_errmsg()); /* jn_errmsg is per thread */
        }
        for (int i = 0; i < n && !s && !skip; i++) R.stats.bytes += (int64_t)steps[i].events_len;
        if (!s && !skip) { /* committed: what a failure later reports as stored */
            R.stats.stored += n;
            R.stats.last_stored = steps[n - 1].step;
        }
        q_len -= n;
        q_busy = 0;
        pthread_cond_broadcast(&q_room);
        pthread_mutex_unlock(&q_mu);
        for (int i = 0; i < n; i++) pending_free(batch[i]);
        pthread_mutex_lock(&q_mu);
    }
    pthread_mutex_unlock(&q_mu);
    return NULL;
}

/* Queue a step for the writer (takes ownership of p). */
static jn_status enqueue(pending *p) {
    pthread_mutex_lock(&q_mu);
    while (q_len >= JN_REC_QUEUE && !w_err) pthread_cond_wait(&q_room, &q_mu);
    jn_status s = w_err;
    if (s) {
        jn_error(s, "%s", w_errmsg);
        pthread_mutex_unlock(&q_mu);
        pending_free(p);
        return s;
    }
    p->next = NULL;
    if (q_tail) q_tail->next = p;
    else q_head = p;
    q_tail = p;
    q_len++;
    /* the first step is committed at once, alone: a store that fills up
     * (or a run killed) early still keeps it */
    if (p->st.step == 0) q_flush = 1;
    if (q_len >= JN_REC_BATCH || q_flush) pthread_cond_signal(&q_work);
    pthread_mutex_unlock(&q_mu);
    return JN_OK;
}

void jn_rec_flush(void) {
    pthread_mutex_lock(&q_mu);
    if (q_head) {
        q_flush = 1;
        pthread_cond_signal(&q_work);
    }
    pthread_mutex_unlock(&q_mu);
}

static jn_status end_step(const char *kind);

void rec_end_by_signal(int sig, const struct timespec *deadline) {
    if (!R.db) return;
    /* the step in progress, once the recording thread is between ops (it
     * holds rec_mu while it records one); rec_mu is kept from here on */
    if (pthread_mutex_timedlock(&rec_mu, deadline) == 0 && jn_rec_on) {
        int room = 1;
        pthread_mutex_lock(&q_mu); /* end_step must not wait on a full queue past the deadline */
        while (room && q_len >= JN_REC_QUEUE && !w_err) room = !pthread_cond_timedwait(&q_room, &q_mu, deadline);
        pthread_mutex_unlock(&q_mu);
        if (room) end_step("tail");
    }
    pthread_mutex_lock(&q_mu);
    q_sig = sig;
    q_flush = 1;
    pthread_cond_signal(&q_work);
    while (writer_up && !q_sig_done && !pthread_cond_timedwait(&q_room, &q_mu, deadline)) {
    }
    pthread_mutex_unlock(&q_mu);
}

/* Stop the writer after it has written everything queued; its first error. */
static jn_status writer_join(void) {
    if (!writer_up) return JN_OK;
    pthread_mutex_lock(&q_mu);
    q_stop = 1;
    pthread_cond_signal(&q_work);
    pthread_mutex_unlock(&q_mu);
    pthread_join(writer, NULL);
    writer_up = 0;
    q_stop = 0;
    jn_status s = w_err;
    if (s) jn_error(s, "%s", w_errmsg);
    w_err = JN_OK;
    return s;
}

/* A forked child must not write the parent's run: it just stops recording.
 * (Its copy of the store handle is left alone; SQLite forbids using it.) */
static void atfork_child(void) {
    jn_rec_on = 0;
    jn_set_dispatch_hook(NULL);
    R.db = NULL;
    writer_up = 0;
    q_head = q_tail = NULL;
    q_len = 0;
    rec_sig_atfork_child();
    pthread_mutex_init(&db_mu, NULL);
    pthread_mutex_init(&q_mu, NULL);
    pthread_mutex_init(&rec_mu, NULL);
}

void jn_rec_get_stats(jn_rec_stats *out) {
    pthread_mutex_lock(&q_mu);
    *out = R.stats;
    pthread_mutex_unlock(&q_mu);
}

/* ------------------------------------------------------------ interning */
jn_status jn_rec_callsite(const char *file, int line, const char *func, int64_t *id) {
    *id = 0;
    if (!R.db) return JN_OK;
    pthread_mutex_lock(&db_mu);
    jn_status s = jn_db_callsite(R.db, file, line, func, id);
    pthread_mutex_unlock(&db_mu);
    return s;
}

jn_status jn_rec_region_put(const jn_db_region *r) {
    if (!R.db) return JN_OK;
    pthread_mutex_lock(&db_mu);
    jn_status s = jn_db_region_put(R.db, R.run_id, r);
    pthread_mutex_unlock(&db_mu);
    return s;
}

jn_status jn_rec_region_codes_put(const jn_db_region_code *rows, int n) {
    if (!R.db || !n) return JN_OK;
    pthread_mutex_lock(&db_mu);
    jn_status s = jn_db_region_codes_put(R.db, R.run_id, rows, n);
    pthread_mutex_unlock(&db_mu);
    return s;
}

jn_status jn_rec_stack(uint64_t hash, const int64_t *callsites, int n, int64_t *id) {
    *id = 0;
    if (!R.db) return JN_OK;
    pthread_mutex_lock(&db_mu);
    jn_status s = jn_db_stack(R.db, hash, callsites, n, id);
    pthread_mutex_unlock(&db_mu);
    return s;
}

/* --------------------------------------------------------------- steps */
static void reset_step(void) {
    R.events.len = 0;
    live_clear();
    W.n = 0;
    for (int i = 0; i < R.ntouched; i++) R.opcount[R.touched[i]] = 0;
    R.ntouched = 0;
    R.n_ops = R.n_syncs = R.n_decisions = 0;
    R.nsyncs = 0;
    R.sig = JN_REC_FNV_INIT;
    kv_clear(&R.decisions);
    kv_clear(&R.shape_step);
    kv_clear(&R.type_step);
    R.started = now();
}

jn_status jn_rec_start(const char *db_path, int64_t run_id, const char *python_version) {
    if (R.db) return jn_error(JN_ERR_RUNTIME, "recorder: already recording into run %lld", (long long)R.run_id);
    /* JANUS_RECORD_AS_DEVICE=cuda (tests only): the trace says every tensor
     * was on the GPU, so the device path of analyzer, codegen and bundles
     * is testable on a machine without one; nothing else changes */
    const char *as = "";
    jn_status s = jn_setting_str(JN_S_RECORD_AS_DEVICE, &as);
    if (s) return s;
    jn_db *db;
    s = jn_db_open(db_path, JN_DB_WRITE, &db);
    if (s) return s;
    if ((s = jn_db_run_set_python(db, run_id, python_version))) {
        jn_db_close(db);
        return s;
    }
    jn_rec_site_fn fn = R.site_fn;
    memset(&R, 0, sizeof R);
    R.site_fn = fn;
    R.db = db;
    R.run_id = run_id;
    R.as_device = !strcmp(as, "cuda") ? JN_CUDA + 1 : 0;
    R.stats.last_stored = -1;
    static int atfork_set;
    if (!atfork_set) {
        atfork_set = 1;
        pthread_atfork(NULL, NULL, atfork_child);
    }
    w_err = JN_OK;
    static int cond_set;
    if (!cond_set) { /* the writer's timed waits use the monotonic clock */
        pthread_condattr_t ca;
        if (!pthread_condattr_init(&ca)) {
            if (!pthread_condattr_setclock(&ca, CLOCK_MONOTONIC)) {
                pthread_cond_destroy(&q_work);
                pthread_cond_init(&q_work, &ca);
                q_clock = CLOCK_MONOTONIC;
                cond_set = 1;
            }
            pthread_condattr_destroy(&ca);
        }
    }
    q_sig = q_sig_done = 0;
    sigset_t sigs, prev; /* the writer never runs the signal handler (signals.c) */
    rec_sig_mask(&sigs);
    pthread_sigmask(SIG_BLOCK, &sigs, &prev);
    int rc = pthread_create(&writer, NULL, writer_main, NULL);
    pthread_sigmask(SIG_SETMASK, &prev, NULL);
    if (rc) {
        jn_db_close(db);
        R.db = NULL;
        return jn_error(JN_ERR_RUNTIME, "recorder: cannot start the writer thread");
    }
    writer_up = 1;
    if ((s = rec_sig_start())) {
        char msg[512];
        snprintf(msg, sizeof msg, "%s", jn_errmsg());
        writer_join();
        jn_db_close(db);
        R.db = NULL;
        return jn_error(s, "%s", msg);
    }
    reset_step();
    jn_dispatch_hook h = {hook_after, NULL};
    jn_set_dispatch_hook(&h);
    jn_rt_record_free = live_free_hook;
    jn_rt_record_alias = role_alias_hook;
    jn_rec_on = 1;
    return JN_OK;
}

static jn_status end_step(const char *kind);

jn_status jn_rec_end_step(const char *kind) {
    if (!R.db || !jn_rec_on) return JN_OK;
    pthread_mutex_lock(&rec_mu);
    jn_status s = end_step(kind);
    pthread_mutex_unlock(&rec_mu);
    return s;
}

static jn_status end_step(const char *kind) {
    if (!R.db || !jn_rec_on) return JN_OK;
    if (!R.n_ops && !R.n_syncs && !R.n_decisions) {
        R.started = now();
        return JN_OK;
    }
    jn_status s = record_live();
    if (s) {
        reset_step();
        fail(s);
        return s;
    }
    pending *p = calloc(1, sizeof *p);
    if (p) {
        p->oc = malloc(sizeof *p->oc * (size_t)(R.ntouched ? R.ntouched : 1));
        p->dec = malloc(sizeof *p->dec * (R.decisions.n ? R.decisions.n : 1));
        p->sh = malloc(sizeof *p->sh * (R.shape_step.n ? R.shape_step.n : 1));
        p->at = malloc(sizeof *p->at * (R.type_step.n ? R.type_step.n : 1));
    }
    if (!p || !p->oc || !p->dec || !p->sh || !p->at) {
        pending_free(p);
        s = jn_error(JN_ERR_NOMEM, "recorder: out of memory writing step %lld", (long long)R.step);
        goto done;
    }
    for (int i = 0; i < R.ntouched; i++)
        p->oc[i] = (jn_db_opcount){jn_op_info((jn_op)R.touched[i])->name, R.opcount[R.touched[i]]};
    int nd = 0, ns = 0, na = 0;
    for (size_t i = 0; i < R.decisions.cap; i++) {
        kv_ent *e = &R.decisions.e[i];
        if (e->used) p->dec[nd++] = (jn_db_decision){e->k[0], (int)e->k[1], e->k[2], e->v};
    }
    for (size_t i = 0; i < R.shape_step.cap; i++) {
        kv_ent *e = &R.shape_step.e[i];
        if (e->used)
            p->sh[ns++] = (jn_db_shape){jn_op_info((jn_op)e->k[0])->name, e->k[1], (int)e->k[2], (int)e->k[3], e->k[4]};
    }
    for (size_t i = 0; i < R.type_step.cap; i++) {
        kv_ent *e = &R.type_step.e[i];
        if (e->used)
            p->at[na++] = (jn_db_argtype){jn_op_info((jn_op)e->k[0])->name, e->k[1], (int)e->k[2],
                                          pytype_name((int)e->k[3]), e->v};
    }
    snprintf(p->kind, sizeof p->kind, "%s", kind);
    /* the buffers move to the writer; the next step starts with fresh ones */
    p->events = R.events;
    memset(&R.events, 0, sizeof R.events);
    p->syncs = R.syncs;
    R.syncs = NULL;
    int nsyncs = R.nsyncs;
    R.capsyncs = 0;
    p->st = (jn_db_step){
        .run_id = R.run_id, .step = R.step, .kind = p->kind, .started = R.started,
        .duration = now() - R.started, .signature = R.sig, .n_ops = R.n_ops, .n_syncs = R.n_syncs,
        .events = p->events.data, .events_len = p->events.len,
        .opcounts = p->oc, .nopcounts = R.ntouched, .syncs = p->syncs, .nsyncs = nsyncs,
        .decisions = p->dec, .ndecisions = nd, .shapes = p->sh, .nshapes = ns, .argtypes = p->at, .nargtypes = na};
    s = enqueue(p);
    if (!s) {
        pthread_mutex_lock(&q_mu);
        R.stats.steps++;
        R.stats.ops += R.n_ops;
        R.stats.syncs += R.n_syncs;
        R.stats.decisions += R.n_decisions;
        pthread_mutex_unlock(&q_mu);
        R.step++;
    }
done:
    reset_step();
    if (s) fail(s);
    return s;
}

jn_status jn_rec_stop(void) {
    if (!R.db) return JN_OK;
    int sig = rec_sig_stop(); /* first: a signal handled from here on is the default one */
    jn_status s = jn_rec_on ? jn_rec_end_step("tail") : JN_OK;
    jn_rec_on = 0;
    jn_set_dispatch_hook(NULL);
    jn_rt_record_free = NULL;
    jn_rt_record_alias = NULL;
    live_free();
    free(W.id);
    W.id = NULL;
    W.n = W.cap = 0;
    jn_status ws = writer_join();
    if (!s) s = ws;
    jn_db_close(R.db);
    R.db = NULL;
    jn_db_buf_free(&R.events);
    free(R.syncs);
    R.syncs = NULL;
    R.nsyncs = R.capsyncs = 0;
    kv_free(&R.decisions);
    kv_free(&R.shape_base);
    kv_free(&R.shape_step);
    kv_free(&R.type_base);
    kv_free(&R.type_step);
    kv_free(&R.seen);
    if (sig) raise(sig); /* one that arrived while stopping: its default action, now the steps are stored */
    return s;
}
