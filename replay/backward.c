/* backward.c -- the backward skip: a loss.backward() whose ops the followed
 * graph already holds is not run op by op while a segment is captured.
 *
 * Learning: the first backward at a (graph, token) with one cursor runs the
 * engine as always, its ops captured and matched; if they were matched from
 * there on by that one graph, ending outside its loops with one cursor
 * (loops inside the stretch are the matcher's: a recurrent net's backward
 * through time), the replay keeps a plan: per event
 * its op, attributes, where each input came from (an earlier event of the
 * stretch, a tensor a reached record saved, or a number the formula made),
 * its outputs' metadata, which event made each leaf's .grad, the public
 * tensor ids the engine used, and the fingerprint of the autograd graph it
 * walked (jn_ag_walk_graph: records, attributes, metadata, edges, saved
 * tensors).
 *
 * Skipping: a later backward at the same place whose walk has the same
 * fingerprint and nothing that makes the engine's ops unpredictable (hooks,
 * nodes from before the segment, a defined .grad, retain_graph, explicit
 * gradients) appends one head record and a record per other event (so
 * events and records stay one to one for graph_run), gives each leaf a
 * pending .grad header, feeds the matcher the plan's events rebuilt over
 * today's tensors (every check the matcher makes still runs), and leaves the
 * autograd graph as the engine would (saved tensors out of the records, now
 * held by the pending list only; records released).  The fallback (a later
 * miss, a refused graph) puts the saved tensors back and runs the engine at
 * the head record, then moves each .grad into its pending header.
 *
 * Counters: every backward() while the replay is on is seen here, and one
 * not skipped counts under its reason (rp_bw_why) at its place (graph,
 * token; none before the matcher knows one), as does a skipped one the
 * fallback ran after all; they go to the store with the replay's counters.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "jn_autograd.h"
#include "rp_internal.h"

enum { SRC_EVENT = 0, SRC_SAVED, SRC_SCALAR, SRC_NEW };

typedef struct {
    uint8_t kind, k, pytype;
    int32_t a;           /* SRC_EVENT: event offset in the stretch; SRC_SAVED: index in the walk's saved */
    double scalar;
} bw_src;

typedef struct {
    jn_op op;
    uint8_t nin, nout, nattr, device;
    int32_t src;         /* plan->src[src ..): nin inputs, then nout outputs */
    int32_t attr;        /* plan->attrs[attr ..) */
    int32_t meta;        /* plan->meta[meta ..): nout outputs */
    int32_t leaf;        /* the leaf whose .grad its output 0 is, -1 */
} bw_ev;

typedef struct {
    int32_t graph, pos;
    int64_t nev0;
    int usable;          /* 0: this place is not skipped (learning refused it) */
    int why;             /* ... and why (rp_bw_why) */
    uint64_t fp;
    int nrec, nleaf, nsaved;
    int32_t n;
    bw_ev *ev;
    bw_src *src;
    int32_t nsrc;
    jn_attr *attrs;
    jn_meta *meta;
    int32_t *leaf_ev;    /* per leaf: the event whose output 0 is its .grad, -1 */
    uint64_t *leaf_ver;  /* ... and the version that .grad's storage ended at */
    int64_t nids;        /* public tensor ids the engine used */
    int64_t nnew;        /* outputs made by the stretch's events */
} bw_plan;

typedef struct {
    jn_ag_walk w;
    jn_tensor *root;     /* the root's value and history at the skip (jn_ag_history_alias): held by
                          * the head record, it keeps the walked graph alive */
    int detached;        /* the saved tensors are out of their records (jn_ag_walk_detach) */
    jn_tensor **hdr;     /* per leaf: its pending .grad (a reference; the list holds one too), NULL */
    int32_t graph, pos;  /* its plan's place (the counters of a fallback) */
    uint64_t *ver;       /* per saved tensor: its storage's version at the skip (ops captured
                          * later bump it, but the engine at the fallback runs before them) */
} bw_skip;

/* per place (autograd graphs), and in all (places: one per sequence length of a
 * loop the graph holds, say) */
enum { MAX_VARIANTS = 4 }; /* fingerprints per place; plans in all: cfg.backward_plans (256) */

/* Calls not skipped (or run after all) per place and reason. */
typedef struct {
    int32_t graph, pos;
    int why;
    int64_t count;
} bw_row;

struct rp_bw {
    bw_plan *plans;
    int nplans, capplans;
    bw_skip *skips;
    int nskips, capskips;
    int64_t calls, skipped, learned, declined, fallbacks;
    bw_row *rows;
    int nrows, caprows;
};

static const char *const why_name[RP_BW_NWHY] = {
#define X(id, name, words) name,
    RP_BW_WHYS(X) JN_AG_WALK_WHYS(X)
#undef X
};
static const char *const why_words[RP_BW_NWHY] = {
#define X(id, name, words) words,
    RP_BW_WHYS(X) JN_AG_WALK_WHYS(X)
#undef X
};
const char *rp_bw_why_name(int why) { return why >= 0 && why < RP_BW_NWHY ? why_name[why] : NULL; }
const char *rp_bw_why_words(int why) { return why >= 0 && why < RP_BW_NWHY ? why_words[why] : NULL; }

static struct rp_bw *bw_of(jn_replay *R) {
    if (!R->bw) R->bw = calloc(1, sizeof *R->bw);
    return R->bw;
}

/* One more call under why at (graph, pos); the row table is small (places
 * times reasons), so a linear search.  Out of memory: the totals still count. */
static void count_row(struct rp_bw *B, int32_t graph, int32_t pos, int why) {
    for (int i = 0; i < B->nrows; i++) {
        bw_row *r = &B->rows[i];
        if (r->graph == graph && r->pos == pos && r->why == why) {
            r->count++;
            return;
        }
    }
    if (B->nrows == B->caprows) {
        int c = B->caprows ? B->caprows * 2 : 16;
        bw_row *nr = realloc(B->rows, sizeof *nr * (size_t)c);
        if (!nr) return;
        B->rows = nr;
        B->caprows = c;
    }
    B->rows[B->nrows++] = (bw_row){graph, pos, why, 1};
}

/* Not skipped, at (graph, pos) or none (-1). */
static void decline_at(struct rp_bw *B, int32_t graph, int32_t pos, int why) {
    B->declined++;
    count_row(B, graph, pos, why);
}
static void decline(struct rp_bw *B, int why) { decline_at(B, -1, -1, why); }

static void plan_free(bw_plan *P) {
    free(P->ev), free(P->src), free(P->attrs), free(P->meta), free(P->leaf_ev), free(P->leaf_ver);
    P->ev = NULL, P->src = NULL, P->attrs = NULL, P->meta = NULL, P->leaf_ev = NULL, P->leaf_ver = NULL;
}

void rp_bw_clear(jn_replay *R) {
    struct rp_bw *B = R->bw;
    for (int i = 0; i < B->nskips; i++) {
        bw_skip *K = &B->skips[i];
        for (int l = 0; l < K->w.nleaf; l++) jn_tensor_decref(K->hdr[l]);
        jn_ag_walk_free(&K->w);
        free(K->hdr);
        free(K->ver);
    }
    B->nskips = 0;
}

void rp_bw_free(jn_replay *R) {
    struct rp_bw *B = R->bw;
    if (!B) return;
    rp_bw_clear(R);
    for (int i = 0; i < B->nplans; i++) plan_free(&B->plans[i]);
    free(B->plans);
    free(B->skips);
    free(B->rows);
    free(B);
    R->bw = NULL;
}

void rp_bw_counts(const jn_replay *R, rp_bw_totals *t) {
    const struct rp_bw *B = R->bw;
    memset(t, 0, sizeof *t);
    if (!B) return;
    *t = (rp_bw_totals){B->calls, B->skipped, B->learned, B->declined, B->fallbacks};
}

/* The declines summed over places, reasons in first-seen order. */
const char *rp_bw_reason(const jn_replay *R, int i, int64_t *count) {
    const struct rp_bw *B = R->bw;
    int k = -1;
    for (int r = 0; B && r < B->nrows; r++) {
        int why = B->rows[r].why, first = 1;
        if (rp_bw_why_fell(why)) continue;
        for (int q = 0; q < r && first; q++) first = B->rows[q].why != why;
        if (first && ++k == i) {
            *count = 0;
            for (int q = r; q < B->nrows; q++) *count += B->rows[q].why == why ? B->rows[q].count : 0;
            return why_words[why];
        }
    }
    return NULL;
}

int rp_bw_row(const jn_replay *R, int i, int32_t *graph, int32_t *token, int *why, int64_t *count) {
    const struct rp_bw *B = R->bw;
    if (!B || i < 0 || i >= B->nrows) return 0;
    const bw_row *r = &B->rows[i];
    *graph = r->graph, *token = r->pos, *why = r->why, *count = r->count;
    return 1;
}

/* The plan for this place and fingerprint; *refused: why learning refused
 * the place (-1: it did not); *variants: plans the place has. */
static bw_plan *plan_find(struct rp_bw *B, const jn_rp_match_at *at, uint64_t fp, int *refused, int *variants) {
    bw_plan *hit = NULL;
    *refused = -1;
    *variants = 0;
    for (int i = 0; i < B->nplans; i++) {
        bw_plan *P = &B->plans[i];
        if (P->graph != at->graph || P->pos != at->pos || P->nev0 != at->nev) continue;
        if (!P->usable) *refused = P->why;
        (*variants)++;
        if (P->usable && P->fp == fp) hit = P;
    }
    return hit;
}

/* ------------------------------------------------------------ pointer maps */
typedef struct {
    const void **key;
    int32_t *val;
    int64_t nslot;
} pmap;

static int pmap_init(pmap *M, int64_t n) {
    M->nslot = 16;
    while (M->nslot < 2 * n + 2) M->nslot *= 2;
    M->key = calloc((size_t)M->nslot, sizeof *M->key);
    M->val = malloc(sizeof *M->val * (size_t)M->nslot);
    return M->key && M->val;
}
static void pmap_free(pmap *M) { free(M->key), free(M->val); }
static void pmap_put(pmap *M, const void *p, int32_t v) {
    int64_t i = rp_home_slot(p, M->nslot);
    while (M->key[i] && M->key[i] != p) i = (i + 1) & (M->nslot - 1);
    if (M->key[i]) return; /* the first one stays */
    M->key[i] = p;
    M->val[i] = v;
}
static int32_t pmap_get(const pmap *M, const void *p) {
    int64_t i = rp_home_slot(p, M->nslot);
    while (M->key[i] && M->key[i] != p) i = (i + 1) & (M->nslot - 1);
    return M->key[i] ? M->val[i] : -1;
}

/* ---------------------------------------------------------------- learning */
/* The plan for the stretch of events [nev0, nev0 + n) the engine just
 * made (-1), or the reason it cannot be kept (rp_bw_why). */
static int plan_build(jn_replay *R, bw_plan *P, const jn_ag_walk *w, int64_t nev0, int32_t n) {
    int64_t nsrc = 0, nattr = 0, nmeta = 0;
    for (int64_t e = nev0; e < nev0 + n; e++) {
        const rp_op *p = &R->ops[e];
        if (p->into >= RP_BW_GHOST) return RP_BW_NESTED;
        nsrc += p->nin + p->nout, nattr += p->nattr, nmeta += p->nout;
    }
    P->ev = calloc((size_t)n + 1, sizeof *P->ev);
    P->src = calloc((size_t)nsrc + 1, sizeof *P->src);
    P->attrs = calloc((size_t)nattr + 1, sizeof *P->attrs);
    P->meta = calloc((size_t)nmeta + 1, sizeof *P->meta);
    P->leaf_ev = malloc(sizeof *P->leaf_ev * (size_t)(w->nleaf + 1));
    P->leaf_ver = calloc((size_t)w->nleaf + 1, sizeof *P->leaf_ver);
    pmap made = {0}, saved = {0};
    int why = -1;
    if (!P->ev || !P->src || !P->attrs || !P->meta || !P->leaf_ev || !P->leaf_ver || !pmap_init(&made, nmeta) ||
        !pmap_init(&saved, w->nsaved)) {
        why = RP_BW_NOMEM;
        goto out;
    }
    for (int i = 0; i < w->nsaved; i++) pmap_put(&saved, w->saved[i], i);
    int32_t is = 0, ia = 0, im = 0;
    P->nnew = 0;
    for (int32_t o = 0; o < n && why < 0; o++) {
        const rp_op *p = &R->ops[nev0 + o];
        bw_ev *E = &P->ev[o];
        jn_tensor *const *in = rp_op_in(R, p), *const *out = rp_op_out(R, p);
        *E = (bw_ev){p->op, p->nin, p->nout, p->nattr, 0, is, ia, im, -1};
        E->device = (uint8_t)(p->nout ? out[0]->storage->device : JN_CPU);
        memcpy(P->attrs + ia, R->attrs + p->attr, sizeof(jn_attr) * p->nattr);
        ia += p->nattr;
        int written = rp_written(p);
        for (int j = 0; j < p->nin + p->nout && why < 0; j++) {
            jn_tensor *t = j < p->nin ? in[j] : out[j - p->nin];
            bw_src *S = &P->src[is++];
            if (j >= p->nin && !written) { /* a new output */
                jn_meta *m = &P->meta[im++];
                m->dtype = t->dtype, m->ndim = t->ndim;
                memcpy(m->shape, t->shape, sizeof(int64_t) * (size_t)t->ndim);
                S->kind = SRC_NEW;
                pmap_put(&made, t, o << 4 | (j - p->nin));
                P->nnew++;
                continue;
            }
            if (j >= p->nin) im++; /* an in-place output's slot stays unused */
            int32_t v = pmap_get(&made, t);
            if (v >= 0) {
                if (t->wrapped_number) why = RP_BW_PY_SCALAR;
                S->kind = SRC_EVENT, S->a = v >> 4, S->k = (uint8_t)(v & 15);
            } else if ((v = pmap_get(&saved, t)) >= 0 && j < p->nin) {
                S->kind = SRC_SAVED, S->a = v;
            } else if (t->wrapped_number && j < p->nin) {
                jn_rp_match_arg a;
                rp_fill_arg(&a, t, 0);
                S->kind = SRC_SCALAR, S->pytype = a.pytype, S->scalar = a.scalar;
            } else {
                why = RP_BW_UNKNOWN_INPUT;
            }
        }
    }
    P->nsrc = is;
    for (int l = 0; l < w->nleaf && why < 0; l++) {
        jn_tensor *g = jn_grad(w->leaf[l]);
        P->leaf_ev[l] = -1;
        if (!g) continue;
        int32_t v = pmap_get(&made, g);
        if (v < 0 || (v & 15) != 0) {
            why = RP_BW_GRAD_NOT_OUTPUT;
            break;
        }
        const rp_op *p = &R->ops[nev0 + (v >> 4)];
        if ((jn_op_info(p->op)->flags & JN_F_VIEW) || !jn_is_contiguous(g) || g->offset ||
            P->ev[v >> 4].leaf >= 0) {
            why = RP_BW_GRAD_VIEW;
            break;
        }
        P->leaf_ev[l] = v >> 4;
        P->ev[v >> 4].leaf = l;
        P->leaf_ver[l] = g->storage->version;
    }
out:
    pmap_free(&made), pmap_free(&saved);
    return why;
}

/* ------------------------------------------------------------------ skipping */
/* The records of the skip: the head (root, then saved tensors) and one per
 * other event (its saved inputs at their argument, its .grad output, more
 * saved tensors), so that the list holds every saved tensor once more. */
static int push_records(jn_replay *R, const bw_plan *P, bw_skip *K, int32_t idx) {
    const jn_ag_walk *w = &K->w;
    int next = 0; /* saved tensors given to a record so far */
    for (int32_t o = 0; o < P->n; o++) {
        const bw_ev *E = &P->ev[o];
        jn_tensor *in[256];
        int nin = 0;
        for (int j = 0; j < E->nin; j++) { /* a graph input bound here is found at its argument */
            const bw_src *S = &P->src[E->src + j];
            in[nin++] = S->kind == SRC_SAVED ? w->saved[S->a] : K->root;
        }
        if (o == 0 && nin < 255) in[nin++] = K->root;
        else if (o == 0) return 0;
        int left = P->n - o, want = (w->nsaved - next + left - 1) / left;
        while (want-- > 0 && nin < 255 && next < w->nsaved) in[nin++] = w->saved[next++];
        jn_tensor *out = E->leaf >= 0 ? K->hdr[E->leaf] : NULL;
        if (!rp_cap_push(R, E->op, o == 0 ? RP_BW_HEAD : RP_BW_GHOST, o == 0 ? idx : 0, nin, in, out != NULL, &out))
            return 0;
    }
    return next == w->nsaved;
}

static void fill_new(jn_rp_match_arg *a, const jn_meta *m, uint64_t id, int dev) {
    a->id = id;
    a->shape = m->shape;
    a->ndim = (uint8_t)m->ndim;
    a->dtype = (uint8_t)m->dtype;
    a->device = (uint8_t)dev;
    a->pytype = 0;
    a->scalar = 0;
}

/* The plan's events over today's tensors, fed to the matcher. */
static jn_status feed_events(jn_replay *R, const bw_plan *P, bw_skip *K, int64_t id0) {
    const jn_ag_walk *w = &K->w;
    uint64_t *ids = malloc(sizeof *ids * (size_t)P->n * JN_MAX_OUTS + 1);
    if (!ids) return jn_error(JN_ERR_NOMEM, "janus replay: out of memory skipping a backward");
    int64_t next = id0;
    static const int64_t none[1] = {0};
    jn_status s = JN_OK;
    for (int32_t o = 0; o < P->n && s == JN_OK; o++) {
        const bw_ev *E = &P->ev[o];
        jn_rp_match_arg ai[JN_MAX_INS], ao[JN_MAX_OUTS];
        for (int j = 0; j < E->nin + E->nout; j++) {
            const bw_src *S = &P->src[E->src + j];
            jn_rp_match_arg *a = j < E->nin ? &ai[j] : &ao[j - E->nin];
            int k = j - E->nin;
            switch (S->kind) {
            case SRC_NEW: {
                uint64_t id = E->leaf >= 0 && k == 0 ? (uint64_t)K->hdr[E->leaf]->id : (uint64_t)next++;
                ids[o * JN_MAX_OUTS + k] = id;
                fill_new(a, &P->meta[E->meta + k], id, E->device);
                break;
            }
            case SRC_EVENT: {
                const bw_ev *M = &P->ev[S->a];
                fill_new(a, &P->meta[M->meta + S->k], ids[S->a * JN_MAX_OUTS + S->k], M->device);
                break;
            }
            case SRC_SAVED: rp_fill_arg(a, w->saved[S->a], 0); break;
            default:
                memset(a, 0, sizeof *a);
                a->shape = none;
                a->pytype = S->pytype;
                a->scalar = S->scalar;
            }
        }
        jn_rp_match_event ev = {E->op, P->attrs + E->attr, E->nin, E->nout, ai, ao};
        jn_rp_match_result res;
        if (jn_rp_match_feed(R->mt, &ev, &res) != JN_RP_MATCH_MISS) continue;
        char why[1024];
        snprintf(why, sizeof why, "%s", res.why ? res.why : "no graph fits");
        s = rp_capture_off(R, res.graph, res.guard, res.token, res.seen, why);
        if (s == JN_OK && R->cfg.strict) s = rp_strict_error(why);
        break;
    }
    free(ids);
    return s;
}

static jn_status skip(jn_replay *R, struct rp_bw *B, const bw_plan *P, jn_ag_walk *w, jn_tensor *root) {
    if (B->nskips == B->capskips) {
        int c = B->capskips ? B->capskips * 2 : 4;
        bw_skip *ns = realloc(B->skips, sizeof *ns * (size_t)c);
        if (!ns) return jn_error(JN_ERR_NOMEM, "janus replay: out of memory skipping a backward");
        B->skips = ns;
        B->capskips = c;
    }
    int32_t idx = B->nskips;
    bw_skip *K = &B->skips[idx];
    memset(K, 0, sizeof *K);
    K->hdr = calloc((size_t)w->nleaf + 1, sizeof *K->hdr);
    K->ver = malloc(sizeof *K->ver * (size_t)(w->nsaved + 1));
    if (!K->hdr || !K->ver) {
        free(K->hdr), free(K->ver);
        return jn_error(JN_ERR_NOMEM, "janus replay: out of memory skipping a backward");
    }
    for (int i = 0; i < w->nsaved; i++) K->ver[i] = w->saved[i]->storage->version;
    if (!(K->root = jn_ag_history_alias(root))) {
        free(K->hdr), free(K->ver);
        return jn_error(JN_ERR_NOMEM, "janus replay: out of memory skipping a backward");
    }
    int64_t nhdr = 0;
    for (int l = 0; l < w->nleaf; l++) {
        if (P->leaf_ev[l] < 0) continue;
        jn_tensor *leaf = w->leaf[l];
        jn_meta m = {leaf->dtype, leaf->ndim, {0}};
        memcpy(m.shape, leaf->shape, sizeof(int64_t) * (size_t)leaf->ndim);
        if (!(K->hdr[l] = jn_rt_tensor_new_pending(&m))) {
            for (int j = 0; j < l; j++) jn_tensor_decref(K->hdr[j]);
            jn_tensor_decref(K->root);
            free(K->hdr), free(K->ver);
            return jn_error(JN_ERR_NOMEM, "janus replay: out of memory skipping a backward");
        }
        K->hdr[l]->storage->device = leaf->storage->device;
        nhdr++;
    }
    /* the ids the engine would have used, so later tensors get the recorded ones */
    int64_t nfake = P->nnew - nhdr, nres = P->nids - nhdr > nfake ? P->nids - nhdr : nfake;
    int64_t id0 = jn_rt_reserve_ids(nres);
    K->w = *w; /* the skip owns the walk now */
    memset(w, 0, sizeof *w);
    K->graph = P->graph, K->pos = P->pos;
    B->nskips++;
    int ok = push_records(R, P, K, idx);
    jn_tensor_decref(K->root); /* the head record holds it (only it: a value nobody else reaches) */
    if (!ok) { /* out of memory: what is pending runs now, the engine at this head if it got in */
        (void)rp_capture_off(R, -1, -1, -1, NAN, NULL);
        return jn_error(JN_ERR_NOMEM, "janus replay: out of memory for the pending ops");
    }
    /* as the engine leaves them: saved tensors released (the list holds them), .grad set */
    jn_ag_walk_detach(&K->w);
    K->detached = 1;
    for (int i = 0; i < K->w.nsaved; i++) jn_tensor_decref(K->w.saved[i]);
    for (int l = 0; l < K->w.nleaf; l++) {
        if (!K->hdr[l]) continue;
        jn_tensor_incref(K->hdr[l]);
        (void)jn_set_grad(K->w.leaf[l], K->hdr[l]);
        K->hdr[l]->storage->version = P->leaf_ver[l];
    }
    B->skipped++;
    if (R->cfg.debug) fprintf(stderr, "[rp] backward skipped: %d ops at token %d\n", P->n, P->pos);
    return feed_events(R, P, K, id0);
}

jn_status rp_bw_fallback(jn_replay *R, const rp_op *p, int cause) {
    bw_skip *K = &R->bw->skips[p->attr];
    jn_ag_walk *w = &K->w;
    R->bw->fallbacks++;
    count_row(R->bw, K->graph, K->pos, rp_bw_why_fell(cause) ? cause : RP_BW_FELL_MISS);
    /* each leaf's .grad as Python left it since (the pending header, or what replaced
     * it): put back after the engine, which starts from none, as at the skip */
    jn_tensor **was = calloc((size_t)w->nleaf + 1, sizeof *was);
    uint64_t *now = malloc(sizeof *now * (size_t)(w->nsaved + 1));
    if (!was || !now) {
        free(was), free(now);
        return jn_error(JN_ERR_NOMEM, "janus replay: out of memory running a skipped backward");
    }
    for (int l = 0; l < w->nleaf; l++) {
        if (!K->hdr[l]) continue;
        if ((was[l] = jn_grad(w->leaf[l]))) jn_tensor_incref(was[l]);
        (void)jn_set_grad(w->leaf[l], NULL);
    }
    if (K->detached) jn_ag_walk_restore(w);
    K->detached = 0;
    /* the saved tensors' versions as the engine saw them at the skip: in-place ops
     * captured since bumped them, and they run after this record */
    for (int i = 0; i < w->nsaved; i++) now[i] = w->saved[i]->storage->version;
    for (int i = 0; i < w->nsaved; i++) w->saved[i]->storage->version = K->ver[i];
    /* the dispatch hook sees the engine's ops: they are the fallback's (counted as
     * its records already), not ops of a region call being observed */
    int tl_on = R->tl.on, observing = R->rg_observing;
    R->tl.on = 0, R->rg_observing = 0;
    jn_rt_private_ids++; /* the ids Python's tensors get stay the ones the skip used */
    /* from the root as it was (K->root), without hooks registered since the skip */
    jn_status s = jn_ag_backward_engine(1, &K->root, NULL, 0, 1);
    jn_rt_private_ids--;
    R->tl.on = tl_on, R->rg_observing = observing;
    for (int i = 0; i < w->nsaved; i++) w->saved[i]->storage->version = now[i];
    for (int l = 0; l < w->nleaf; l++) {
        jn_tensor *h = K->hdr[l];
        if (!h) continue;
        jn_tensor *g = jn_grad(w->leaf[l]);
        if (s == JN_OK && !g)
            s = jn_error(JN_ERR_RUNTIME, "janus replay: internal: the backward gave no gradient a skipped one gave");
        if (s == JN_OK) {
            /* its version is eager's already: the plan's, and what ops captured since added */
            uint64_t v = h->storage->version;
            if ((s = rp_storage_alloc(h->storage)) == JN_OK) s = jn_copy_into(h, g);
            h->storage->version = v;
            if (s == JN_OK) h->storage->lazy = 0;
        }
        (void)jn_set_grad(w->leaf[l], was[l]); /* steals it */
    }
    free(was), free(now);
    return s;
}

/* ---------------------------------------------------------------- the hook */
static jn_status learn(jn_replay *R, struct rp_bw *B, const jn_ag_walk *pw, const jn_rp_match_at *atp, jn_status s,
                       int64_t nids);

jn_status rp_bw_hook(void *ctx, int n, jn_tensor *const *roots, jn_tensor *const *grads, int retain, int *handled) {
    jn_replay *R = ctx;
    *handled = 0;
    struct rp_bw *B = bw_of(R);
    if (!B) return JN_OK;
    B->calls++;
    /* the first reason that applies; a place once the matcher knows one */
    if (!R->cfg.backward_skip) return decline(B, RP_BW_OFF), JN_OK;
    if (R->seg_mode != SEG_CAPTURE) return decline(B, RP_BW_EAGER_SEGMENT), JN_OK;
    if (!jn_rt_capturing) return decline(B, RP_BW_AFTER_MISS), JN_OK;
    if (R->rg_batch || R->rg_observing) return decline(B, RP_BW_REGION), JN_OK;
    if (!R->mt) return decline(B, RP_BW_NO_MATCHER), JN_OK;
    jn_rp_match_at at;
    int where = jn_rp_match_where(R->mt, &at);
    int32_t g = where ? at.graph : -1, pos = where ? at.pos : -1;
    if (retain) return decline_at(B, g, pos, RP_BW_RETAIN), JN_OK;
    if (n != 1 || (grads && grads[0])) return decline_at(B, g, pos, RP_BW_ROOTS), JN_OK;
    if (!R->nops) return decline_at(B, g, pos, RP_BW_FIRST_OP), JN_OK;
    if (!where || at.nev != R->nops) return decline_at(B, g, pos, RP_BW_NOT_ONE), JN_OK;
    /* at a loop's body end the backward's first event exits the loop (a
     * loss summed in the time loop): the stretch starts after it */
    if (at.loop != -1 && !at.loop_end) return decline_at(B, g, pos, RP_BW_LOOP), JN_OK;
    jn_ag_walk w;
    memset(&w, 0, sizeof w);
    jn_status s = jn_ag_walk_graph(roots[0], R->seg_seq0, &w);
    if (s || w.why) {
        decline_at(B, g, pos, s ? RP_BW_NOMEM : RP_BW_WALK + w.code - 1);
        jn_ag_walk_free(&w);
        return JN_OK;
    }
    int refused, variants;
    bw_plan *P = plan_find(B, &at, w.fp, &refused, &variants);
    if (refused >= 0) { /* every later call at a refused place counts under its reason */
        decline_at(B, g, pos, refused);
        jn_ag_walk_free(&w);
        return JN_OK;
    }
    if (P && P->nrec == w.nrec && P->nleaf == w.nleaf && P->nsaved == w.nsaved) {
        *handled = 1;
        int64_t was = B->skipped;
        s = skip(R, B, P, &w, roots[0]);
        if (B->skipped == was) decline_at(B, g, pos, RP_BW_NOMEM); /* it failed before the skip */
        jn_ag_walk_free(&w);
        return s;
    }
    if (variants >= MAX_VARIANTS || B->nplans >= R->cfg.backward_plans) { /* each new autograd graph here is learned
                                                                 * once, up to these many */
        decline_at(B, g, pos, variants >= MAX_VARIANTS ? RP_BW_FINGERPRINT : RP_BW_PLANS);
        jn_ag_walk_free(&w);
        return JN_OK;
    }
    /* learn a new variant: the engine runs, captured as always */
    *handled = 1;
    /* held while learning: the engine frees the ones no op reads, and a
     * tensor it makes at a freed one's address must not be taken for it */
    for (int i = 0; i < w.nsaved; i++) jn_tensor_incref(w.saved[i]);
    int64_t id0 = jn_rt_reserve_ids(0);
    s = jn_ag_backward_engine(1, roots, NULL, 0, 0);
    int64_t nids = jn_rt_reserve_ids(0) - id0;
    s = learn(R, B, &w, &at, s, nids);
    for (int i = 0; i < w.nsaved; i++) jn_tensor_decref(w.saved[i]);
    jn_ag_walk_free(&w);
    return s;
}

/* After the engine ran under capture (status s): a new plan for this place
 * and fingerprint, or the place refused with the reason. */
static jn_status learn(jn_replay *R, struct rp_bw *B, const jn_ag_walk *pw, const jn_rp_match_at *atp, jn_status s,
                       int64_t nids) {
    const jn_rp_match_at at = *atp;
    jn_rp_match_at at2;
    if (s || !jn_rt_capturing || R->seg_mode != SEG_CAPTURE || !jn_rp_match_where(R->mt, &at2)) {
        decline_at(B, at.graph, at.pos, RP_BW_LEARN_STOPPED); /* nothing learned: a later call tries again */
        return s;
    }
    int why = -1;
    int32_t cnt = (int32_t)(at2.nev - at.nev);
    if (at2.graph != at.graph || at2.loop != -1 || at2.pos <= at.pos || R->nops != at2.nev || cnt < 1)
        why = RP_BW_STRETCH;
    if (B->nplans == B->capplans) {
        int c = B->capplans ? B->capplans * 2 : 8;
        bw_plan *np = realloc(B->plans, sizeof *np * (size_t)c);
        if (!np) return decline_at(B, at.graph, at.pos, RP_BW_NOMEM), s;
        B->plans = np;
        B->capplans = c;
    }
    bw_plan *P = &B->plans[B->nplans++];
    memset(P, 0, sizeof *P);
    P->graph = at.graph, P->pos = at.pos, P->nev0 = at.nev;
    P->n = cnt;
    if (why < 0) why = plan_build(R, P, pw, at.nev, cnt);
    P->usable = why < 0;
    P->why = why;
    if (why >= 0) {
        plan_free(P);
        decline_at(B, at.graph, at.pos, why);
    } else {
        P->fp = pw->fp, P->nrec = pw->nrec, P->nleaf = pw->nleaf, P->nsaved = pw->nsaved, P->nids = nids;
        B->learned++;
    }
    return s;
}
