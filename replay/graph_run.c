/* graph_run.c -- a COMPLETE graph run over the pending list (rp_run_graph).
 *
 * The graph runs only if, before anything is written, every check below
 * holds; otherwise the list runs eagerly (counted as a miss with the
 * reason).  The steps, in order:
 *   bind_inputs      every tensor input is bound by the matcher to an event
 *                    argument of this segment, and none of them is itself
 *                    pending; a state input the graph writes overlaps no
 *                    other state input (state_apart);
 *   index_headers    every header the list holds: which keep output fills
 *                    it (jn_rp_match_token_output of the event that created
 *                    it), found through its hold record (the list holds
 *                    one reference to it);
 *   check_state      every existing tensor a captured op wrote in place is
 *                    the input of a STATE output of the graph (else its
 *                    write would be lost);
 *   find_reached     every pending storage something outside the list can
 *                    still reach (a header with references beyond the
 *                    list's, or one the list does not know, e.g. autograd's
 *                    saved aliases) is filled whole by a keep output, or
 *                    goes to the set of values Python holds that the graph
 *                    does not keep; one only partly filled (a view of it
 *                    kept) falls back;
 *   compute_held     those values: their backward slice of the pending ops
 *                    runs eagerly first, or is kept as a deferred slice
 *                    (deferred.c) run only if one is read, or (speculate)
 *                    nothing: a read raises;
 *   run_exec         the executor runs (state written in place, versions
 *                    restored to what capture set, which is eager's count);
 *   fill_outputs     keep outputs are moved (a whole contiguous buffer the
 *                    executor owns alone) or copied into the pending headers;
 *   commit           the deferred slice is kept; a pending storage nothing
 *                    filled becomes LOST (data NULL): the recording proved
 *                    it is never read again, and a read raises saying so.
 */
#include <assert.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rp_internal.h"

/* ------------------------------------------------------------- sets */
typedef struct {
    jn_tensor *t;
    jn_storage *st;   /* t->storage, t->ext: the later scans read them here */
    void *ext;
    int64_t mine;     /* references the list holds: one, however many ops use it */
    int32_t fill;     /* keep output index filling it, -1 */
    int64_t it;       /* ... its slice [it] (a collect of a loop's objects), -1 the whole */
    uint8_t created, view, out, cov; /* out: some op's output; cov: covers(t), for filled ones */
} hdr;

/* Every header the list holds, once: found through its hold record
 * (rp_hold.slot, valid for the headers visited under mark). */
typedef struct {
    hdr *h;
    int64_t n, cap;
    uint32_t mark;
} hset;

static hdr *hget(hset *S, jn_tensor *t) {
    rp_hold *r = t->ext; /* every header of the list has its record */
    if (rp_visited(t, S->mark)) return &S->h[r->slot];
    r->slot = S->n;
    hdr *h = &S->h[S->n++];
    memset(h, 0, sizeof *h);
    h->t = t;
    h->st = t->storage;
    h->ext = r;
    h->fill = -1;
    h->it = -1;
    return h;
}

/* A set of storages (open addressing; sized for every reference of the
 * list), its members also in insertion order (item: nslot / 2 of them)
 * and their slots (at: what emptying it clears, instead of every slot). */
typedef struct {
    jn_storage **slot, **item;
    int64_t *at;
    int64_t nslot, n;
} sset;

static int64_t sset_pos(const sset *W, const jn_storage *st) {
    int64_t i = rp_home_slot(st, W->nslot);
    while (W->slot[i] && W->slot[i] != st) i = (i + 1) & (W->nslot - 1);
    return i;
}
static int sset_has(const sset *W, const jn_storage *st) { return W->slot[sset_pos(W, st)] != NULL; }
static int sset_add(sset *W, jn_storage *st) {
    int64_t i = sset_pos(W, st);
    if (W->slot[i]) return 1;
    if (2 * (W->n + 1) > W->nslot) return 0; /* sized for every reference: cannot happen */
    W->slot[i] = st;
    W->at[W->n] = i;
    W->item[W->n++] = st;
    return 1;
}

/* Room for at least `nslot` slots (a power of two), empty. */
static int sset_reserve(sset *W, int64_t nslot) {
    if (W->slot && W->nslot >= nslot) return 1;
    free(W->slot), free(W->item), free(W->at);
    W->slot = calloc((size_t)nslot, sizeof *W->slot);
    W->item = malloc(sizeof *W->item * (size_t)(nslot / 2 + 1));
    W->at = malloc(sizeof *W->at * (size_t)(nslot / 2 + 1));
    W->nslot = W->slot && W->item && W->at ? nslot : 0;
    W->n = 0;
    return W->nslot != 0;
}

static void sset_clear(sset *W) {
    for (int64_t k = 0; k < W->n; k++) W->slot[W->at[k]] = NULL;
    W->n = 0;
}

static void sset_free(sset *W) {
    free(W->slot), free(W->item), free(W->at);
    memset(W, 0, sizeof *W);
}

/* What the pending list says about one storage: headers seen, any filled
 * by the graph, one covering it filled, one Python may still reach. */
typedef struct {
    jn_storage *st;
    int64_t known;
    uint8_t any, full, need;
} sagg;

static int covers(const jn_tensor *t) {
    return t->offset == 0 && jn_is_contiguous(t) && (size_t)jn_numel(t) * jn_elsize(t) == t->storage->nbytes;
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

/* What a run needs that is fixed per graph, kept between its runs (a
 * calloc per array per run, and a scalar tensor made and freed per scalar
 * input, were a third of a small graph's host cost): the inputs, which
 * of them are this run's own, keep outputs, versions, and the scalar
 * inputs' tensors, rewritten in place while only this holds them. */
struct rp_gbuf {
    jn_tensor **inputs, **outs, **scal;
    uint8_t *owned;
    uint64_t *vers;
    int32_t n;            /* inputs */
};

/* The sets over the pending list, sized for the most references seen and
 * emptied after each run (on the replay: one list, one run at a time;
 * busy: a run inside a run makes its own). */
struct rp_runbuf {
    hdr *h;
    int64_t hcap;
    sset W, Pub, Kept;
    uint8_t *tseen;     /* index_headers: per matcher token, seen (all 0 between runs) */
    int32_t *tcnt;      /* ... and its events not yet walked (all 0 between runs) */
    int64_t tcap;
    int busy;
};

static void runbuf_free(struct rp_runbuf *B) {
    if (!B) return;
    free(B->h);
    free(B->tseen);
    free(B->tcnt);
    sset_free(&B->W);
    sset_free(&B->Pub);
    sset_free(&B->Kept);
    free(B);
}

void rp_runbuf_free(jn_replay *R) {
    runbuf_free(R->runbuf);
    R->runbuf = NULL;
}

static void gbuf_free(struct rp_gbuf *b) {
    if (!b) return;
    for (int32_t i = 0; i < b->n && b->scal; i++)
        if (b->scal[i]) jn_tensor_decref(b->scal[i]);
    free(b->inputs), free(b->outs), free(b->scal), free(b->owned), free(b->vers);
    free(b);
}

static struct rp_gbuf *gbuf_new(int32_t ninputs, int nkeep) {
    struct rp_gbuf *b = calloc(1, sizeof *b);
    if (!b) return NULL;
    b->inputs = calloc((size_t)ninputs + 1, sizeof *b->inputs);
    b->scal = calloc((size_t)ninputs + 1, sizeof *b->scal);
    b->owned = calloc((size_t)ninputs + 1, 1);
    b->vers = calloc((size_t)ninputs + 1, sizeof *b->vers);
    b->outs = calloc((size_t)nkeep + 1, sizeof *b->outs);
    b->n = ninputs;
    if (b->inputs && b->scal && b->owned && b->vers && b->outs) return b;
    gbuf_free(b);
    return NULL;
}

/* ------------------------------------------------------- the executor */
static jn_status graph_ready(jn_replay *R, int32_t gi, char *why, size_t n) {
    rp_graph *G = &R->g[gi];
    if (G->broken) {
        snprintf(why, n, "graph %s: the executor refused it earlier", R->m->graphs[gi]->name);
        return JN_ERR_RUNTIME;
    }
    if (G->x) return JN_OK;
    const jn_ir_graph *g = R->m->graphs[gi];
    jn_status s = jn_ex_new_on(R->m, gi, R->lib, R->cg ? jn_ex_cuda_graphs_device(R->cg) : NULL, 0, &G->x);
    if (s == JN_OK && !(G->keep_idx = malloc(sizeof *G->keep_idx * (size_t)(g->noutputs + 1)))) s = JN_ERR_NOMEM;
    for (int32_t i = 0; s == JN_OK && i < g->noutputs; i++) G->nkeep += g->outputs[i].kind == JN_IR_OUT_KEEP;
    if (s == JN_OK && !(G->buf = gbuf_new(g->ninputs, G->nkeep))) s = JN_ERR_NOMEM;
    if (s) {
        snprintf(why, n, "graph %s: executor: %s", g->name, jn_errmsg());
        if (G->x) jn_ex_free(G->x);
        G->x = NULL;
        gbuf_free(G->buf);
        G->buf = NULL;
        G->broken = 1;
        return s;
    }
    G->nkeep = 0;
    for (int32_t i = 0; i < g->noutputs; i++)
        G->keep_idx[i] = g->outputs[i].kind == JN_IR_OUT_KEEP ? G->nkeep++ : -1;
    return JN_OK;
}

void rp_graph_free(rp_graph *G) {
    gbuf_free(G->buf);
    if (G->x) jn_ex_free(G->x);
    free(G->keep_idx);
    free(G->ad.why);
    memset(G, 0, sizeof *G);
}

/* ------------------------------------------------------------ a run */
typedef struct {
    jn_replay *R;
    const jn_rp_match_result *res;
    const jn_ir_graph *g;
    rp_graph *G;
    jn_tensor **inputs;   /* per graph input: its tensor (a scalar of G->buf when owned), NULL (RNG) */
    uint8_t *owned;
    jn_tensor **outs;     /* the keep outputs */
    uint64_t *vers;
    struct rp_runbuf *B;  /* R->runbuf, or this run's own (own_B) */
    int own_B;
    hset S;               /* every header the list holds */
    sset *W;              /* pending storages Python reaches that the graph does not fill */
    sset *Pub;            /* storages a deferred slice must not share (rp_shared) */
    sset *Kept;           /* pending storages a graph output fills whole (slice_mark's cut) */
    rp_slice *D;          /* their deferred slice: kept only if the graph runs */
    int64_t nsliced;
    char *why;
    size_t wn;
} rp_run;

/* Each step: 0 go on; 1 fall back (why says why, nothing written); -1
 * failed after writing state (R->fatal). */
static int oom(rp_run *X) {
    snprintf(X->why, X->wn, "out of memory preparing graph %s", X->g->name);
    return 1;
}

static int run_prepare(rp_run *X) {
    jn_replay *R = X->R;
    struct rp_gbuf *b = X->G->buf;
    X->inputs = b->inputs, X->owned = b->owned, X->outs = b->outs, X->vers = b->vers;
    memset(X->inputs, 0, sizeof *X->inputs * (size_t)b->n);
    memset(X->owned, 0, (size_t)b->n);
    if (R->runbuf && !R->runbuf->busy) {
        X->B = R->runbuf;
    } else {
        if (!(X->B = calloc(1, sizeof *X->B))) return oom(X);
        if (!R->runbuf) R->runbuf = X->B;
        else X->own_B = 1;
    }
    X->B->busy = 1;
    X->W = &X->B->W, X->Pub = &X->B->Pub, X->Kept = &X->B->Kept;
    X->S.cap = R->nrefs + 1;
    X->S.mark = rp_next_mark(R);
    if (X->B->hcap < X->S.cap) {
        free(X->B->h);
        X->B->hcap = 0;
        if (!(X->B->h = malloc(sizeof *X->B->h * (size_t)X->S.cap))) return oom(X);
        X->B->hcap = X->S.cap;
    }
    X->S.h = X->B->h;
    int64_t nw = 16, np = 16;
    while (nw < 2 * X->S.cap) nw *= 2;
    /* Pub also takes the state the graph writes (its inputs) */
    while (np < 2 * (X->S.cap + X->g->ninputs + 1)) np *= 2;
    if (!sset_reserve(X->W, nw) || !sset_reserve(X->Pub, np) || !sset_reserve(X->Kept, nw)) return oom(X);
    return 0;
}

static void run_free(rp_run *X) {
    for (int i = 0; i < X->G->nkeep; i++)
        if (X->outs[i]) jn_tensor_decref(X->outs[i]), X->outs[i] = NULL;
    rp_slice_free(X->R, X->D); /* not committed: the list runs eagerly */
    if (!X->B) return;
    sset_clear(X->W);
    sset_clear(X->Pub);
    sset_clear(X->Kept);
    X->B->busy = 0;
    if (X->own_B) runbuf_free(X->B);
}

/* A slice header [it] of t along dim 0, on t's memory (no reference
 * taken: for a copy into or out of it while t lives). */
static jn_tensor row_of(const jn_tensor *t, int64_t it) {
    jn_tensor v = *t;
    v.ndim = t->ndim - 1;
    memmove(v.shape, t->shape + 1, sizeof(int64_t) * (size_t)v.ndim);
    memmove(v.strides, t->strides + 1, sizeof(int64_t) * (size_t)v.ndim);
    v.offset = t->offset + it * t->strides[0];
    v.autograd = v.pyobj = v.ext = NULL;
    return v;
}

/* Stacked input i ([trip, ...], jn_ir_match.h): the tensors the first
 * reader read in its events, one per iteration, copied in order into one
 * tensor (the graph's buffer of the last run when only it holds that). */
static int stack_input(rp_run *X, int32_t i, int32_t tok, int arg) {
    const jn_replay *R = X->R;
    const jn_ir_graph *g = X->g;
    const jn_ir_value *v = &g->values[g->inputs[i].value];
    int64_t shape[JN_MAX_DIMS], K = 0;
    if (v->device != JN_CPU) { /* its buffer is made here, in host memory */
        snprintf(X->why, X->wn, "graph %s: stacked input %d is on a GPU (not supported yet)", g->name, i);
        return 1;
    }
    for (int d = 0; d < v->ndim; d++)
        if (jn_ir_dim_eval(g, v->shape[d], X->res->syms, &shape[d]) != JN_OK) {
            snprintf(X->why, X->wn, "graph %s: stacked input %d's shape does not evaluate", g->name, i);
            return 1;
        }
    for (int64_t e = 0; e < R->nops; e++) K += X->res->ev_token[e] == tok;
    if (K != shape[0]) {
        snprintf(X->why, X->wn, "graph %s: stacked input %d has %lld tensors for a trip of %lld", g->name, i,
                 (long long)K, (long long)shape[0]);
        return 1;
    }
    jn_tensor **sc = &X->G->buf->scal[i];
    int same = *sc && (*sc)->refcnt == 1 && (*sc)->storage->refcnt == 1 && (*sc)->dtype == v->dtype &&
               (*sc)->ndim == v->ndim && !memcmp((*sc)->shape, shape, sizeof(int64_t) * (size_t)v->ndim);
    if (!same) {
        if (*sc) jn_tensor_decref(*sc);
        if (!(*sc = jn_tensor_new(v->dtype, v->ndim, shape))) return oom(X);
    }
    for (int64_t e = 0, it = 0; e < R->nops; e++) {
        if (X->res->ev_token[e] != tok) continue;
        const rp_op *p = &R->ops[e];
        jn_tensor *t = arg < p->nin ? rp_op_in(R, p)[arg] : NULL;
        jn_tensor row = row_of(*sc, it++);
        if (!t || !t->storage->data || t->dtype != row.dtype || t->ndim != row.ndim ||
            memcmp(t->shape, row.shape, sizeof(int64_t) * (size_t)row.ndim)) {
            snprintf(X->why, X->wn, "graph %s: stacked input %d's iteration %lld is not a tensor of its shape with "
                     "data", g->name, i, (long long)(it - 1));
            return 1;
        }
        if (jn_copy_into(&row, t)) return oom(X);
    }
    X->inputs[i] = *sc;
    X->owned[i] = 1;
    return 0;
}

/* The graph's inputs, from the arguments that bound them. */
static int bind_inputs(rp_run *X) {
    const jn_replay *R = X->R;
    const jn_ir_graph *g = X->g;
    const jn_rp_match_result *res = X->res;
    for (int32_t i = 0; i < g->ninputs; i++) {
        const jn_ir_input *in = &g->inputs[i];
        if (in->kind == JN_IR_IN_RNG) continue;
        if ((in->kind == JN_IR_IN_SCALAR || in->kind == JN_IR_IN_CONST) && !R->cg) {
            continue; /* the executor takes the numbers themselves (run_exec) */
        }
        if (in->kind == JN_IR_IN_SCALAR || in->kind == JN_IR_IN_CONST) {
            jn_dtype dt = g->values[in->value].dtype;
            jn_tensor **sc = &X->G->buf->scal[i];
            if (*sc && (*sc)->refcnt == 1 && (*sc)->storage->refcnt == 1 && (*sc)->dtype == dt) {
                jn_store_f64(jn_data(*sc), dt, res->scalars[i]); /* only this holds it: last run's, rewritten */
            } else {
                if (*sc) jn_tensor_decref(*sc);
                if (!(*sc = jn_scalar_f64(res->scalars[i], dt, 1))) return oom(X);
            }
            X->inputs[i] = *sc;
            X->owned[i] = 1;
            continue;
        }
        int32_t etok;
        int earg;
        if (jn_rp_match_input_each(R->mt, res->graph, i, &etok, &earg)) {
            if (stack_input(X, i, etok, earg)) return 1;
            continue;
        }
        int64_t e = res->input_event[i];
        int32_t arg = res->input_arg[i];
        const rp_op *p = e >= 0 && e < R->nops ? &R->ops[e] : NULL;
        jn_tensor *t = !p ? NULL : arg >= 0 && arg < p->nin ? rp_op_in(R, p)[arg]
                                   : arg < 0 && arg > -100 && -1 - arg < p->nout ? rp_op_out(R, p)[-1 - arg] : NULL;
        if (!t || (uint64_t)t->id != res->inputs[i] || !t->storage->data) {
            snprintf(X->why, X->wn, "graph %s: input %d is not bound to a tensor with data", g->name, i);
            return 1;
        }
        X->inputs[i] = t;
    }
    return 0;
}

/* A state input the graph writes must not overlap another state input
 * (but itself, under any input of its recorded tensor).  The matcher binds
 * state to the tensors the script passes, keeping their identities apart
 * (sbind in match.c), but a run could lay them out otherwise than the
 * recording (two parameters as views of one buffer): the graph writes
 * state back at its end, so an update eager made after another's write,
 * through an overlapping view, would see other values.  Carry and host
 * inputs are not checked, as they never were: they bind no recorded id,
 * and the aliasing they have is the recording's (a BatchNorm weight's view
 * an earlier segment made for autograd, read by the backward before the
 * optimizer writes the weight, as eagerly).  Storages are hashed (state
 * shares one rarely: a flat parameter buffer), and only state inputs on
 * one storage are compared. */
static int state_apart(rp_run *X) {
    const jn_ir_graph *g = X->g;
    int nw = 0;
    for (int32_t o = 0; o < g->noutputs; o++) nw += g->outputs[o].kind == JN_IR_OUT_STATE;
    if (!nw) return 0;
    enum { LOCAL = 256 };
    const jn_storage *lk[2 * LOCAL];
    const jn_storage **key = lk;
    int64_t nslot = 16;
    while (nslot < 2 * (int64_t)g->ninputs) nslot *= 2;
    if (nslot > 2 * LOCAL && !(key = malloc(sizeof *key * (size_t)nslot))) return oom(X);
    memset(key, 0, sizeof *key * (size_t)nslot);
    int shared = 0;
    for (int32_t i = 0; i < g->ninputs && !shared; i++) {
        if (g->inputs[i].kind != JN_IR_IN_STATE || !X->inputs[i]) continue;
        const jn_storage *st = X->inputs[i]->storage;
        int64_t h = rp_home_slot(st, nslot);
        while (key[h] && key[h] != st) h = (h + 1) & (nslot - 1);
        shared = key[h] != NULL;
        key[h] = st;
    }
    if (key != lk) free(key);
    for (int32_t o = 0; o < g->noutputs && shared; o++) {
        if (g->outputs[o].kind != JN_IR_OUT_STATE) continue;
        int32_t i = g->outputs[o].state;
        const jn_tensor *a = X->inputs[i];
        for (int32_t j = 0; j < g->ninputs && a; j++) {
            const jn_tensor *b = X->inputs[j];
            if (j == i || g->inputs[j].kind != JN_IR_IN_STATE || !b || b->storage != a->storage) continue;
            if (g->inputs[i].bind && g->inputs[j].bind == g->inputs[i].bind) continue; /* the same tensor */
            if (!jn_rt_may_overlap(a, b)) continue;
            snprintf(X->why, X->wn, "graph %s: state input %%%d, which the graph writes, overlaps state input %%%d in "
                     "memory here (views of one buffer), where the graph holds them apart: eager's order of their "
                     "updates would not be kept", g->name, g->inputs[i].value, g->inputs[j].value);
            return 1;
        }
    }
    return 0;
}

/* What the list holds, what was created here, which keep output fills it:
 * a keep output is the final value of a token's object, so of a token in a
 * loop only its last event's (the events are walked from the end; earlier
 * iterations' objects die unfilled, as the recording proved unread), but
 * for a collect of every iteration's object (JN_IR_MO_ALL: values autograd
 * holds across a sync), whose slice [it] fills iteration it's. */
static int index_headers(rp_run *X) {
    const jn_replay *R = X->R;
    int32_t ntok = 0;
    for (int64_t e = 0; e < R->nops; e++)
        if (X->res->ev_token[e] >= ntok) ntok = X->res->ev_token[e] + 1;
    if (X->B->tcap <= ntok) {
        uint8_t *t = calloc((size_t)ntok + 1, 1);
        int32_t *n = calloc((size_t)ntok + 1, sizeof *n);
        if (!t || !n) {
            free(t), free(n);
            return oom(X);
        }
        free(X->B->tseen), free(X->B->tcnt);
        X->B->tseen = t;
        X->B->tcnt = n;
        X->B->tcap = ntok + 1;
    }
    /* with collects of every iteration's object: per token its events,
     * counted down again from the end (what is left is an event's
     * iteration in its loop) */
    uint8_t *seen = X->B->tseen;
    int32_t *cnt = X->B->tcnt;
    int any_all = jn_rp_match_collects_all(R->mt, X->res->graph);
    for (int64_t e = 0; e < R->nops && any_all; e++)
        if (X->res->ev_token[e] >= 0) cnt[X->res->ev_token[e]]++;
    for (int64_t e = R->nops - 1; e >= 0; e--) {
        const rp_op *p = &R->ops[e];
        int32_t tok = X->res->ev_token[e];
        int64_t it = tok >= 0 && any_all ? --cnt[tok] : 0;
        int last = tok < 0 || !seen[tok];
        if (tok >= 0) seen[tok] = 1;
        for (int j = 0; j < p->nin + p->nout; j++) {
            hdr *h = hget(&X->S, rp_op_in(R, p)[j]);
            h->mine = 1;
            if (j >= p->nin) h->out = 1;
            if (j < p->nin || rp_written(p)) continue;
            int k = j - p->nin, all;
            h->created = 1;
            h->view = (jn_op_info(p->op)->flags & JN_F_VIEW) != 0;
            if (!last && !any_all) continue;
            int32_t o = jn_rp_match_token_output(R->mt, X->res->graph, tok, k, &all);
            if (!last && !all) continue;
            if (o >= 0 && o < X->g->noutputs && X->G->keep_idx[o] >= 0) {
                h->fill = X->G->keep_idx[o];
                h->it = all ? it : -1;
                h->cov = (uint8_t)covers(h->t);
            }
        }
    }
    memset(seen, 0, (size_t)ntok);
    return 0;
}

/* Existing tensors written in place must be written back by the graph. */
static int check_state(rp_run *X) {
    const jn_replay *R = X->R;
    const jn_ir_graph *g = X->g;
    for (int64_t e = 0; e < R->nops; e++) {
        const rp_op *p = &R->ops[e];
        if (!rp_written(p)) continue;
        for (int k = 0; k < p->nout; k++) {
            jn_storage *st = rp_op_out(R, p)[k]->storage;
            if (!st->data) continue; /* created in this segment: its final value is a keep output */
            int ok = 0;
            for (int32_t o = 0; o < g->noutputs && !ok; o++)
                ok = g->outputs[o].kind == JN_IR_OUT_STATE && X->inputs[g->outputs[o].state] &&
                     X->inputs[g->outputs[o].state]->storage == st;
            if (!ok) {
                snprintf(X->why, X->wn, "graph %s: op %lld (%s) writes a tensor the graph does not write back",
                         g->name, (long long)e, jn_op_info(p->op)->name);
                return 1;
            }
        }
    }
    return 0;
}

/* Per pending storage: filled whole by the graph, or unreachable (dies
 * with the list), or still reachable: into W (computed eagerly first, see
 * compute_held).  Then the existing tensors written in place are current:
 * their bytes are the graph's input. */
static int find_reached(rp_run *X) {
    int rc = 0;
    /* per storage, once (at the header heading its list of the list's
     * headers, rp_cap_held_only's list): every header on it is in S */
    for (int64_t k = 0; k < X->S.n && !rc; k++) {
        jn_storage *st = X->S.h[k].st;
        if (st->ext != X->S.h[k].ext || st->data || st->lazy != JN_LAZY_PENDING) continue; /* not created here */
        sagg agg = {st, 0, 0, 0, 0}, *a = &agg;
        for (const rp_hold *r = st->ext; r; r = r->next) {
            const hdr *h = &X->S.h[r->slot];
            a->known++;
            if (h->fill >= 0) {
                a->any = 1;
                a->full |= h->cov;
            } else if (h->t->refcnt > h->mine) {
                a->need = 1;
            }
        }
        int need = a->need || st->refcnt > a->known;
        if ((need || a->any) && !sset_add(X->Pub, st)) {
            rc = oom(X);
        } else if (need && !a->full && a->any) {
            snprintf(X->why, X->wn, "graph %s: Python holds a tensor sharing memory with a value the graph keeps "
                     "only in part", X->g->name);
            rc = 1;
        } else if (need && !a->full && !sset_add(X->W, st)) {
            rc = oom(X);
        } else if (a->full && !sset_add(X->Kept, st)) { /* a deferred slice may read it (slice_mark's cut) */
            rc = oom(X);
        }
    }
    if (rc) return rc;
    for (int64_t k = 0; k < X->S.n; k++) /* every op output's storage, once per header */
        if (X->S.h[k].out && X->S.h[k].st->data) X->S.h[k].st->lazy = 0;
    return 0;
}

/* Whether the value the graph keeps in st (whole) is what every pending op
 * reading st reads: no pending op writes st in place. */
static int kept_as_read(const rp_run *X, const jn_storage *st) {
    const jn_replay *R = X->R;
    if (!sset_has(X->Kept, st)) return 0;
    for (int64_t e = 0; e < R->nops; e++) {
        const rp_op *p = &R->ops[e];
        for (int k = 0; k < p->nout && rp_written(p); k++)
            if (rp_op_out(R, p)[k]->storage == st) return 0;
    }
    return 1;
}

/* The pending ops computing the storages in W (marked in in_slice; W grows
 * by their inputs): 0, 1 when one writes existing state (it cannot run
 * before the graph without changing what the graph reads), 2 out of memory,
 * 3 when one is a collective (run twice, it would desynchronize the ranks).
 * cut: the slice is deferred, so it stops at values the graph keeps whole
 * (kept_as_read): it reads them as the graph leaves them. */
static int slice_mark(rp_run *X, uint8_t *in_slice, int cut) {
    const jn_replay *R = X->R;
    int bad = 0;
    for (int64_t e = R->nops - 1; e >= 0 && !bad; e--) {
        const rp_op *p = &R->ops[e];
        int hit = 0;
        for (int k = 0; k < p->nout; k++) hit |= sset_has(X->W, rp_op_out(R, p)[k]->storage);
        if (!hit) continue;
        for (int k = 0; k < p->nout; k++) bad |= rp_written(p) && rp_op_out(R, p)[k]->storage->data != NULL;
        if (jn_op_info(p->op)->flags & JN_F_COLL) bad = 3;
        if (p->into == RP_BW_HEAD || p->into == RP_BW_GHOST) bad = 4; /* the engine cannot run after the graph */
        in_slice[e] = 1;
        for (int i = 0; i < p->nin && !bad; i++) {
            jn_storage *st = rp_op_in(R, p)[i]->storage;
            if (cut && !sset_has(X->W, st) && kept_as_read(X, st)) continue;
            if (!sset_add(X->W, st)) bad = 2;
        }
    }
    return bad;
}

static int shared_has(const void *ctx, const jn_storage *st) { return sset_has(ctx, st); }
static int kept_has(const void *ctx, const jn_storage *st) {
    return kept_as_read(ctx, st) && !sset_has(((const rp_run *)ctx)->W, st);
}
static int cut_shared_has(const void *ctx, const jn_storage *st) { return sset_has(((const rp_run *)ctx)->Pub, st); }

/* The values' slice as a deferred slice over snapshots of the state the
 * graph writes and private copies of what others reach (NULL: it runs now;
 * with cut, it cannot: it reads what the graph keeps). */
static rp_slice *slice_defer(rp_run *X, const uint8_t *in_slice, jn_storage *const *needed, int64_t nneed,
                             int cut) {
    const jn_ir_graph *g = X->g;
    for (int32_t o = 0; o < g->noutputs; o++)
        if (g->outputs[o].kind == JN_IR_OUT_STATE && X->inputs[g->outputs[o].state] &&
            !sset_add(X->Pub, X->inputs[g->outputs[o].state]->storage))
            return NULL;
    rp_shared sh = {shared_has, X->Pub, NULL};
    if (cut) sh = (rp_shared){cut_shared_has, X, kept_has};
    return rp_slice_new(X->R, in_slice, needed, nneed, &sh);
}

static void slice_debug(rp_run *X, const uint8_t *in_slice, jn_storage *const *needed, int64_t nneed, double ts) {
    const jn_replay *R = X->R;
    int64_t ns = 0;
    for (int64_t e = 0; e < R->nops; e++) ns += in_slice[e];
    fprintf(stderr, "[rp] graph %s: %lld values Python holds, slice of %lld/%lld ops %s in %.3f ms\n", X->g->name,
            (long long)nneed, (long long)ns, (long long)R->nops, X->D ? "deferred" : "eagerly", 1e3 * (jn_rt_seconds() - ts));
    for (int64_t k = 0; k < nneed; k++) { /* what they are: the first op making each */
        int64_t e = 0;
        for (int j = -1; e < R->nops; e++) {
            for (j = 0; j < R->ops[e].nout && rp_op_out(R, &R->ops[e])[j]->storage != needed[k]; j++) {}
            if (j < R->ops[e].nout) break;
        }
        fprintf(stderr, "[rp]   Python holds %zu bytes made by op %lld (%s)\n", needed[k]->nbytes, (long long)e,
                e < R->nops ? jn_op_info(R->ops[e].op)->name : "?");
    }
}

/* Values Python can still reach that the graph does not keep (the
 * recording never read them again, this run might): their backward slice
 * of the pending ops runs eagerly first, on the state as it was at the
 * segment's start (or is deferred), unless it includes a write to such
 * state. */
static int compute_held(rp_run *X) {
    jn_replay *R = X->R;
    if (!X->W->n || R->cfg.speculate) return 0;
    int64_t nneed = X->W->n;
    jn_storage **needed = malloc(sizeof *needed * (size_t)(nneed + 1));
    uint8_t *in_slice = calloc((size_t)R->nops + 1, 1);
    if (!needed || !in_slice) {
        free(needed), free(in_slice);
        return oom(X);
    }
    memcpy(needed, X->W->item, sizeof *needed * (size_t)nneed);
    int bad = slice_mark(X, in_slice, 0), cut = 0;
    if (bad == 3 && R->cfg.defer && X->Kept->n) {
        /* a collective computes them: deferred, the slice can start from the
         * values the graph keeps instead (`0.01 * x.sum()` after an all_gather:
         * autograd saves the sum, never reads it, and the graph keeps x) */
        memset(in_slice, 0, (size_t)R->nops);
        sset_clear(X->W);
        for (int64_t k = 0; k < nneed; k++) (void)sset_add(X->W, needed[k]); /* room: it held them */
        bad = slice_mark(X, in_slice, 1);
        cut = !bad;
    }
    jn_status s = JN_OK;
    double ts = jn_rt_seconds();
    if (!bad && R->cfg.defer) X->D = slice_defer(X, in_slice, needed, nneed, cut);
    if (cut && !X->D) bad = 2; /* it cannot run before the graph: it reads the graph's outputs */
    R->flushing = 1;
    for (int64_t e = 0; e < R->nops && !bad && !X->D && s == JN_OK; e++)
        if (in_slice[e]) s = rp_run_op(&R->ops[e], R->attrs, rp_op_in(R, &R->ops[e]));
    R->flushing = 0;
    if (R->cfg.debug) slice_debug(X, in_slice, needed, nneed, ts);
    if (!bad && s == JN_OK && !X->D)
        for (int64_t k = 0; k < nneed; k++) needed[k]->lazy = 0; /* final and eager's own */
    free(needed), free(in_slice);
    if (bad == 1 || bad == 3 || bad == 4) {
        snprintf(X->why, X->wn, "graph %s: Python holds a value the graph does not keep, computed %s", X->g->name,
                 bad == 1   ? "from state this segment updates"
                 : bad == 3 ? "by a collective (which runs once, in the graph or eagerly)"
                            : "by a skipped backward (JANUS_REPLAY_BACKWARD_SKIP=0 computes it)");
        return 1;
    }
    if (bad || s) {
        snprintf(X->why, X->wn, "graph %s: computing a value Python holds: %s", X->g->name,
                 bad ? "out of memory" : jn_errmsg());
        return 1;
    }
    X->nsliced = nneed;
    return 0;
}

static int run_exec(rp_run *X) {
    jn_replay *R = X->R;
    const jn_ir_graph *g = X->g;
    for (int32_t i = 0; i < g->ninputs; i++)
        if (X->inputs[i] && !X->owned[i]) X->vers[i] = X->inputs[i]->storage->version;
    double t0 = jn_rt_seconds();
    jn_rt_private_ids++;
    jn_status s = R->cg ? jn_ex_cuda_graphs_run(R->cg, X->G->x, X->inputs, X->res->syms, X->outs)
                        : jn_ex_run_scalars(X->G->x, X->inputs, X->res->scalars, X->res->syms, X->outs);
    jn_rt_private_ids--;
    X->G->seconds += jn_rt_seconds() - t0;
    if (R->cfg.debug) fprintf(stderr, "[rp] graph %s ran in %.3f ms\n", g->name, 1e3 * (jn_rt_seconds() - t0));
    for (int32_t i = 0; i < g->ninputs; i++)
        if (X->inputs[i] && !X->owned[i]) X->inputs[i]->storage->version = X->vers[i];
    if (!s) return 0;
    jn_ex_stats xst;
    jn_ex_last_stats(X->G->x, &xst);
    if (xst.state_written) { /* the step's inputs are gone: re-running it eagerly would be wrong */
        snprintf(X->why, X->wn, "graph %s failed after it had updated state in place or run a collective, so the step "
                 "cannot be re-run eagerly: %s (run with JANUS_REPLAY=0 to train without compiled graphs)", g->name, jn_errmsg());
        R->fatal = s;
        return -1;
    }
    snprintf(X->why, X->wn, "graph %s: %s", g->name, jn_errmsg());
    for (int64_t e = 0; e < R->nops; e++) { /* back to pending for the fallback */
        const rp_op *p = &R->ops[e];
        for (int k = 0; k < p->nout; k++) rp_op_out(R, p)[k]->storage->lazy = JN_LAZY_PENDING;
    }
    return 1;
}

/* Whether the executor's buffer behind o may move into st although other
 * kept outputs view it too (a batch held as a view of the data it slices):
 * every reference to the buffer is such an output, and every header those
 * outputs fill lies on st, which once it holds the bytes is what they all
 * show: nothing reads the executor's side again. */
static int only_outputs_view(const rp_run *X, const jn_tensor *o, const jn_storage *st) {
    int64_t n = 0;
    for (int i = 0; i < X->G->nkeep; i++) {
        const jn_tensor *u = X->outs[i];
        if (!u || u->storage != o->storage) continue;
        if (u->refcnt != 1) return 0;
        int filled = 0;
        for (int64_t k = 0; k < X->S.n; k++)
            if (X->S.h[k].fill == i) {
                if (X->S.h[k].st != st) return 0;
                filled = 1;
            }
        if (!filled) return 0;
        n++;
    }
    return o->storage->refcnt == n;
}

/* Whole buffers moved when the executor's output is alone (or only other
 * outputs view it, all into the same storage), else copied;
 * headers covering their storage first, then views of the rest (RP_PARTIAL
 * marks a storage only views fill: several may).  A view op's header that
 * covers its storage (contiguous from offset 0) is moved into like any
 * other: both sides are the same bytes in the same order (fashion-MNIST's
 * `(x.float() / 255).view(...)`: 188 MB copied, and held twice at the
 * copy, before). */
static int fill_outputs(rp_run *X) {
    jn_replay *R = X->R;
    jn_status s = JN_OK;
    R->flushing = 1;
    for (int pass = 0; pass < 2 && s == JN_OK; pass++)
        for (int64_t k = 0; k < X->S.n && s == JN_OK; k++) {
            hdr *h = &X->S.h[k];
            if (h->fill < 0 || h->cov != (pass == 0)) continue; /* before touching the header */
            jn_storage *st = h->st;
            if (st->lazy != JN_LAZY_PENDING && st->lazy != RP_PARTIAL) continue;
            jn_tensor *o = X->outs[h->fill], slice;
            if (h->it >= 0) { /* iteration it's object: [it] of the collect, copied */
                assert(o->ndim >= 1 && h->it < o->shape[0]); /* the matcher checked each event's shape */
                slice = row_of(o, h->it);
                o = &slice;
            }
            if (h->it < 0 && !st->data && h->cov && o->refcnt == 1 && (o->storage->refcnt == 1 || only_outputs_view(X, o, st)) &&
                (o->storage->owns_data == 1 || o->storage->release) && o->storage->device == st->device &&
                covers(o) && o->dtype == h->t->dtype && o->storage->nbytes == st->nbytes) {
                take_memory(st, o->storage); /* device memory too: its release goes with it */
                st->lazy = 0;
                continue;
            }
            if (R->cfg.debug)
                fprintf(stderr, "[rp] graph %s: output %d copied into a pending %s (%zu bytes)\n", X->g->name,
                        h->fill, h->view ? "view" : "tensor", st->nbytes);
            if ((s = rp_storage_alloc(st))) break;
            st->lazy = pass == 0 ? 0 : RP_PARTIAL;
            s = jn_copy_into(h->t, o);
        }
    R->flushing = 0;
    for (int64_t k = 0; k < X->S.n; k++) /* only filled ones were made partial */
        if (X->S.h[k].fill >= 0 && X->S.h[k].st->lazy == RP_PARTIAL) X->S.h[k].st->lazy = 0;
    if (!s) return 0;
    /* out of memory after the state was written: nothing right is left to do */
    snprintf(X->why, X->wn, "graph %s: filling its outputs: %s", X->g->name, jn_errmsg());
    R->fatal = JN_ERR_NOMEM;
    return -1;
}

/* The graph ran (rc 0) or failed after writing state (-1): the deferred
 * slice is kept (after a success), and what nothing filled is lost. */
static void commit(rp_run *X, int rc) {
    jn_replay *R = X->R;
    if (X->D && rc == 0 && rp_slice_take_kept(X->D)) { /* out of memory: its values are lost */
        rp_slice_free(R, X->D);
        X->D = NULL;
    }
    if (X->D && rc == 0) { /* computed only if read */
        for (int64_t k = 0; k < X->D->nneed; k++) X->D->needed[k]->lazy = JN_LAZY_DEFERRED;
        X->D->next = R->deferred;
        R->deferred = X->D;
        X->D = NULL;
    }
    for (int64_t k = 0; k < X->S.n; k++) { /* reached by nobody, or never read again (proved by the recording) */
        jn_storage *st = X->S.h[k].st;
        if (st->lazy == JN_LAZY_PENDING) st->lazy = JN_LAZY_LOST;
    }
    if (rc == 0 && X->nsliced) R->sliced++;
}

int rp_run_graph(jn_replay *R, const jn_rp_match_result *res, char *why, size_t wn) {
    int32_t gi = res->graph;
    const jn_ir_graph *g = R->m->graphs[gi];
    if (graph_ready(R, gi, why, wn)) return 1;
    if (res->nevents != R->nops) {
        snprintf(why, wn, "graph %s: matched %lld events, %lld pending", g->name, (long long)res->nevents,
                 (long long)R->nops);
        return 1;
    }
    rp_run X;
    memset(&X, 0, sizeof X);
    X.R = R, X.res = res, X.g = g, X.G = &R->g[gi], X.why = why, X.wn = wn;
    int rc = run_prepare(&X);
    if (!rc) rc = bind_inputs(&X);
    if (!rc) rc = state_apart(&X);
    if (!rc) rc = index_headers(&X);
    if (!rc) rc = check_state(&X);
    if (!rc) rc = find_reached(&X);
    if (!rc) rc = compute_held(&X);
    if (!rc) rc = run_exec(&X);
    if (!rc) {
        rc = fill_outputs(&X);
        commit(&X, rc);
    }
    run_free(&X);
    return rc;
}
