/* loops.c -- repeated sub-sequences whose count varies become loops.
 *
 * an_find_repeats finds tandem repeats in an exemplar's op tokens: a block
 * of period p repeated k >= 2 times.  Candidate periods come from the
 * distance to the next occurrences of the same token; left to right, the
 * candidate covering the most ops wins, greedily (p at most AN_MAX_PERIOD).
 * Two exemplars FOLD to the same sequence when their ops agree outside the
 * repeats and the repeats agree in period and body (counts aside).
 *
 * an_tmpl_loops lines up the exemplars of such a family: a repeat whose
 * count is the same everywhere is unrolled again (plain ops) unless it is
 * long (AN_MIN_CONST_TRIP or more: a loop with a constant trip count), one
 * whose count varies becomes a loop of the template, and then everything the IR
 * needs is checked on the recorded data, for every exemplar and iteration:
 *   - every body input refers to a value of the same iteration (local), of
 *     the previous one (a carry, seeded at iteration 0 by one outside
 *     value), to the same outside value in every iteration, or to an outside
 *     tensor of its own per iteration (a stacked graph input: the per-step
 *     values a forward loop's autograd saved, read after a sync) or of the
 *     previous one's (a carry of that stacked read, seeded at iteration 0);
 *   - shapes, dtypes and float attributes are the same in every iteration;
 *     int attributes are affine in the iteration (a*k + b, a the same for
 *     every exemplar; b is generalized like any int);
 *   - after the loop, body values are read only from the last iteration
 *     through a carry, or all together, in order, by one stack/cat (a
 *     collect); written-back body values are carried ones, kept ones
 *     carried or collected (every iteration's object filled from the
 *     collect: values autograd saved, held across a sync);
 *   - a carry's seed and its next value have the same shape and dtype.
 * Anything else is "not expressible" and the caller falls back to treating
 * each trip count as its own structure (correct, just less general).
 * Loops do not nest (a repeat inside a body stays unrolled).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "an_internal.h"

#define AN_MAX_PERIOD 4096
/* A repeat this long becomes a loop even when its count never varies (with a
 * constant trip count): unrolling it would only make the graph huge. */
#define AN_MIN_CONST_TRIP 16
#define AN_MAX_CANDIDATES 16
/* How many next equal tokens has_inner tries as the period of an inner repeat. */
#define AN_INNER_CANDIDATES 4
/* How far into a repeat an_find_repeats looks for a longer one that overlaps it. */
#define AN_LOOKAHEAD 64

/* Whether the body tok[i, i+p) holds a tandem repeat of at least kmin
 * copies of two ops or more (looking at each op's first
 * AN_INNER_CANDIDATES next equal ones; a run of one op, an unbind's
 * selects or an optimizer's per-parameter ops, is no inner loop). */
static int has_inner(const uint64_t *tok, const int32_t *nxt, int32_t i, int32_t p, int32_t kmin) {
    for (int32_t j = i; j + kmin <= i + p; j++) {
        int cand = 0;
        for (int32_t q = nxt[j] - j; nxt[j] >= 0 && cand < AN_INNER_CANDIDATES; cand++) {
            if ((int64_t)j + (int64_t)kmin * q > (int64_t)i + p) break;
            if (q < 2) goto next;
            int32_t c = 1;
            while (c < kmin && !memcmp(tok + j, tok + j + (int64_t)c * q, sizeof(uint64_t) * (size_t)q)) c++;
            if (c >= kmin) return 1;
        next:;
            int32_t nx = nxt[j + q];
            if (nx < 0) break;
            q = nx - j;
        }
    }
    return 0;
}

/* The best tandem repeat starting at op i (nxt: each op's next equal
 * token): its coverage k*p, 0 when none.  A repeat of k copies whose body
 * holds a repeat of max(3, k) copies or more is not taken: that is a loop
 * inside a loop (a stacked RNN's time loop inside its loop over layers,
 * whose tokens are the same layer after layer), loops do not nest, and
 * the inner one is the loop whose count the data varies; its copies are
 * then found on their own. */
static int64_t best_at(const uint64_t *tok, const int32_t *nxt, int32_t n, int32_t i, int32_t *bp, int32_t *bk) {
    int64_t best_cov = 0;
    int32_t cand = 0;
    *bp = *bk = 0;
    for (int32_t j = nxt[i]; j >= 0 && cand < AN_MAX_CANDIDATES; j = nxt[j], cand++) {
        int32_t p = j - i;
        if (p > AN_MAX_PERIOD || (int64_t)i + 2 * (int64_t)p > n) break;
        int32_t k = 1;
        while ((int64_t)i + (int64_t)(k + 1) * p <= n &&
               !memcmp(tok + i, tok + i + (int64_t)k * p, sizeof(uint64_t) * (size_t)p))
            k++;
        if (k >= 2 && (int64_t)k * p > best_cov && !(p >= 6 && has_inner(tok, nxt, i, p, k > 3 ? k : 3))) {
            best_cov = (int64_t)k * p;
            *bp = p;
            *bk = k;
        }
    }
    return best_cov;
}

int32_t an_find_repeats(const uint64_t *tok, int32_t n, an_rep **out) {
    *out = NULL;
    int32_t *nxt = malloc(sizeof(int32_t) * (size_t)(n + 1));
    an_map last;
    memset(&last, 0, sizeof last);
    an_rep *reps = NULL;
    int64_t cap = 0, nr = 0;
    if (!nxt) goto nomem;
    for (int32_t i = n - 1; i >= 0; i--) {
        int isnew;
        int64_t *v = an_map_get(&last, tok[i], -1, &isnew);
        if (!v) goto nomem;
        nxt[i] = (int32_t)*v;
        *v = i;
    }
    for (int32_t i = 0; i < n;) {
        int32_t p, k, p2, k2;
        int64_t cov = best_at(tok, nxt, n, i, &p, &k);
        /* a short repeat that would take the first op of a longer one
         * (a GRU's zero state selected before the time loop's first
         * select, [select, select] x 2) leaves it to that one: else the
         * loop starts one op late, rotated, its last iteration outside */
        for (int32_t j = i + 1; cov && j < i + cov && j <= i + AN_LOOKAHEAD; j++)
            if (best_at(tok, nxt, n, j, &p2, &k2) > cov && j + (int64_t)p2 * k2 > i + cov) cov = 0;
        if (cov) {
            if (an_grow(&reps, &cap, nr + 1, sizeof *reps)) goto nomem;
            reps[nr++] = (an_rep){i, p, k};
            i += p * k;
        } else {
            i++;
        }
    }
    free(nxt);
    an_map_free(&last);
    *out = reps;
    return (int32_t)nr;
nomem:
    free(nxt);
    free(reps);
    an_map_free(&last);
    jn_error(JN_ERR_NOMEM, "analyzer: out of memory");
    return -1;
}

jn_status an_fold(an_ex *e) {
    if (e->nreps >= 0) return JN_OK;
    uint64_t *tok = malloc(sizeof(uint64_t) * (size_t)(e->nops + 1));
    if (!tok) return jn_error(JN_ERR_NOMEM, "analyzer: out of memory");
    for (int32_t i = 0; i < e->nops; i++) tok[i] = e->ops[i].token;
    int32_t n = an_find_repeats(tok, e->nops, &e->reps);
    free(tok);
    if (n < 0) return JN_ERR_NOMEM;
    e->nreps = n;
    return JN_OK;
}

uint64_t an_folded_hash(const an_ex *e) {
    uint64_t h = AN_FNV_INIT;
    for (int32_t i = 0, r = 0; i < e->nops;) {
        if (r < e->nreps && e->reps[r].start == i) {
            h = an_mix(h, 0x4c4f4f50u ^ (uint64_t)e->reps[r].period << 32);
            for (int32_t j = 0; j < e->reps[r].period; j++) h = an_mix(h, e->ops[i + j].token);
            i += e->reps[r].period * e->reps[r].count;
            r++;
        } else {
            h = an_mix(h, e->ops[i++].token);
        }
    }
    return h;
}

int an_folded_same(const an_ex *a, const an_ex *b) {
    int32_t ia = 0, ib = 0, ra = 0, rb = 0;
    while (ia < a->nops && ib < b->nops) {
        int at_a = ra < a->nreps && a->reps[ra].start == ia;
        int at_b = rb < b->nreps && b->reps[rb].start == ib;
        if (at_a != at_b) return 0;
        if (at_a) {
            int32_t p = a->reps[ra].period;
            if (p != b->reps[rb].period) return 0;
            for (int32_t j = 0; j < p; j++)
                if (a->ops[ia + j].token != b->ops[ib + j].token) return 0;
            ia += p * a->reps[ra++].count;
            ib += p * b->reps[rb++].count;
            continue;
        }
        if (a->ops[ia].token != b->ops[ib].token) return 0;
        ia++, ib++;
    }
    return ia == a->nops && ib == b->nops;
}

void an_tmpl_free(an_tmpl *t) {
    if (!t) return;
    for (int32_t e = 0; e < t->m; e++) free(t->eop ? t->eop[e] : NULL);
    free(t->eop);
    free(t->loop);
    for (int32_t l = 0; l < t->nloops; l++) {
        free(t->loops[l].count);
        free(t->loops[l].estart);
        free(t->loops[l].carry);
        free(t->loops[l].coll);
        free(t->loops[l].kept);
    }
    free(t->loops);
    free(t->carry_of_ref);
    free(t->slope);
    free(t->xr);
    free(t->xread_of_ref);
    free(t->each_of_ref);
    free(t->eachprev_of_ref);
    free(t->eachlast_of_ref);
    free(t);
}

static an_tmpl *tmpl_new(int32_t m, int32_t nt) {
    an_tmpl *t = calloc(1, sizeof *t);
    if (!t) return NULL;
    t->m = m;
    t->nt = nt;
    t->eop = calloc((size_t)m, sizeof *t->eop);
    t->loop = malloc(sizeof(int32_t) * (size_t)(nt + 1));
    if (!t->eop || !t->loop) {
        an_tmpl_free(t);
        return NULL;
    }
    for (int32_t e = 0; e < m; e++)
        if (!(t->eop[e] = malloc(sizeof(int32_t) * (size_t)(nt + 1)))) {
            an_tmpl_free(t);
            return NULL;
        }
    for (int32_t i = 0; i < nt; i++) t->loop[i] = -1;
    return t;
}

an_tmpl *an_tmpl_plain(an_ctx *c, const int32_t *ex, int32_t m) {
    const an_ex *E0 = &c->ex[ex[0]];
    an_tmpl *t = tmpl_new(m, E0->nops);
    if (!t) {
        jn_error(JN_ERR_NOMEM, "analyzer: out of memory");
        return NULL;
    }
    for (int32_t e = 0; e < m; e++)
        for (int32_t i = 0; i < E0->nops; i++) t->eop[e][i] = i;
    return t;
}

/* ------------------------------------------------------------ loops */
/* Where an op of one exemplar sits in the template. */
typedef struct {
    int32_t *tpos, *titer;   /* per exemplar op: template op, iteration (-1 = the last one) */
    int32_t *refop;          /* per exemplar ref: its op */
} layout;

/* A value as the template sees it: (kind, template op, iteration, index). */
typedef struct {
    int32_t kind, t, it, idx;   /* kind 0 node output, 1 external (idx = ref slot) */
} vid;

static vid value_id(const an_ex *e, const layout *L, int32_t v) {
    const an_val *x = &e->vals[v];
    if (x->def >= 0) return (vid){0, L->tpos[x->def], L->titer[x->def], x->idx};
    int32_t op = L->refop[x->ref];
    return (vid){1, L->tpos[op], L->titer[op], x->ref - e->ops[op].ref0};
}

static int vid_eq(vid a, vid b) { return a.kind == b.kind && a.t == b.t && a.it == b.it && a.idx == b.idx; }

/* A read of another loop's body value (l, j, idx) at iteration it2 from
 * iteration it of the reader (0 for a plain op): it2 == cf + it (fwd) or
 * it2 == (trip - 1 - cr) - it (rev), the same c over every read. */
typedef struct {
    int set, mode;        /* plain reads: 1 the last iteration through a carry, 2 an xread */
    int32_t l, j, idx;
    int fwd, rev;
    int64_t cf, cr;
    int seed;             /* one read is the carry's seed, "iteration -1" (is_seed) */
} xstate;

/* EACH: an outside tensor first read in the iteration that reads it, one
 * per iteration (the per-step values a forward loop's autograd saved, read
 * by the backward loop after a sync): a graph input stacked over the trip */
/* PREVEACH: the outside tensor first read in the previous iteration, from
 * iteration 1 on (an attention decoder's backward reads h[t] where its
 * cell's backward read h[t - 1] in the iteration before): a carry seeded by
 * the tensor iteration 0 reads, whose next is the stacked input read there */
enum { REL_LOCAL = 1, REL_PREV, REL_OUT, REL_X, REL_EACH, REL_PREVEACH };
typedef struct {
    int kind, j, idx;     /* LOCAL/PREV: body op and output */
    vid out;              /* OUT: the outside value; EACH: where each is first read (it 0) */
    vid init;             /* PREV: the seed at iteration 0 */
    int set, init_set;
    xstate x;             /* X: another loop's value */
} rel;

/* The loop of the template that exemplar op `def` belongs to (and its
 * iteration, body op), or -1. */
static int32_t loop_iter(const an_tmpl *T, const layout *L, int32_t e, int32_t def, int32_t *it, int32_t *j) {
    if (def < 0) return -1;
    int32_t l = T->loop[L->tpos[def]];
    if (l < 0) return -1;
    const an_tloop *TL = &T->loops[l];
    *it = (def - TL->estart[e]) / TL->p;
    *j = L->tpos[def] - TL->tfirst;
    return l;
}

static const char *xnote(xstate *X, int32_t l2, int32_t j2, int32_t idx, int32_t it2, int32_t K2, int32_t it) {
    int64_t cf = (int64_t)it2 - it, cr = (int64_t)K2 - 1 - it2 - it;
    if (!X->set) {
        X->set = 1;
        X->l = l2, X->j = j2, X->idx = idx;
        X->fwd = X->rev = 1;
        X->cf = cf, X->cr = cr;
        return NULL;
    }
    if (X->l != l2 || X->j != j2 || X->idx != idx) return "loop iterations read their inputs differently";
    if (cf != X->cf) X->fwd = 0;
    if (cr != X->cr) X->rev = 0;
    if (!X->fwd && !X->rev)
        return "an op reads a loop's values at iterations that are neither c + i nor (trip - 1 - c) - i";
    return NULL;
}


/* Whether outside value v is the seed of loop l's carry whose next is body
 * value (j, idx), in exemplar x: an input of l's iteration 0 reads v where
 * iteration 1 reads (j, idx) of iteration 0 (in E0, the family's first,
 * so that x's loop may have run once).  A backward loop reads its forward
 * loop's carry input of every iteration, h[t - 1] of a cell: from the body
 * for t >= 1, the seed for t = 0. */
static int is_seed(const an_ex *x, const an_ex *E0, const an_tmpl *T, int32_t e, int32_t l, int32_t j, int32_t idx,
                   int32_t v) {
    const an_tloop *TL = &T->loops[l];
    if (TL->count[0] < 2) return 0;
    int32_t s0 = TL->estart[e], e0 = TL->estart[0];
    for (int32_t b = 0; b < TL->p; b++) {
        const an_op *o = &x->ops[s0 + b], *o1 = &E0->ops[e0 + TL->p + b];
        for (int32_t q = 0; q < o->nin && q < o1->nin; q++) {
            const an_val *w = &E0->vals[E0->refs[o1->ref0 + q].val];
            if (x->refs[o->ref0 + q].val == v && w->def == e0 + j && w->idx == idx) return 1;
        }
    }
    return 0;
}

static int32_t n_islots(const an_ex *x, int32_t o) {
    return (o + 1 < x->nops ? x->ops[o + 1].islot0 : x->nislots) - x->ops[o].islot0;
}

static int32_t n_fslots(const an_ex *x, int32_t o) {
    return (o + 1 < x->nops ? x->ops[o + 1].fslot0 : x->nfslots) - x->ops[o].fslot0;
}

static int same_type(const an_ref *a, const an_ref *b) {
    return a->ndim == b->ndim && a->dtype == b->dtype && !memcmp(a->shape, b->shape, sizeof(int64_t) * a->ndim);
}

/* The body value (j, idx) of loop TL is carried to the next iteration? */
static int is_carried(const an_tloop *TL, int32_t j, int32_t idx) {
    for (int32_t k = 0; k < TL->ncarry; k++)
        if (TL->carry[k].next_j == j && TL->carry[k].next_idx == idx) return 1;
    return 0;
}

/* A check_body reason that says where: the input, the body op, the iteration. */
static _Thread_local char why_buf[256];
static const char *at_input(const char *what, const an_op *o, int32_t j, int32_t p, int q, int32_t it) {
    snprintf(why_buf, sizeof why_buf, "%s (input %d of %s, body op %d of %d, iteration %d)", what, q,
             an_op_name(o->op), j, p, it);
    return why_buf;
}

/* Check one exemplar's loop iterations against the shared relations;
 * *bad: the loop a failure is about.  A loop only for its length (lconst[l]:
 * its count never varied) keeps the strict rules -- no random op, no
 * attribute that moves between segments -- so where those hold it is
 * unrolled again (an_tmpl_loops), as fast as before: the executor runs an
 * unrolled body faster than an IR loop (bench_replay_small's 20 steps). */
static const char *check_body(const an_ex *x, const an_ex *E0, const an_tmpl *T, const layout *LY, int32_t e,
                              rel *rels, const char *lconst, int32_t *bad) {
    int64_t ri = 0;
    for (int32_t l = 0; l < T->nloops; l++) {
        const an_tloop *TL = &T->loops[l];
        *bad = l;
        int32_t p = TL->p, K = TL->count[e], s0 = TL->estart[e];
        for (int32_t j = 0; j < p; j++) {
            const an_op *o0 = &x->ops[s0 + j];
            const an_op *E0op = &E0->ops[T->eop[0][TL->tfirst + j]];
            if (lconst[l] && (jn_op_info((jn_op)o0->op)->flags & JN_F_RAND)) return "random ops in a loop body";
            if (o0->nin != E0op->nin) return "an op in a loop body changes its arity";
            for (int32_t it = 0; it < K; it++) {
                int32_t oi = s0 + it * p + j;
                const an_op *ok = &x->ops[oi];
                if (ok->nin != o0->nin) return "an op in a loop body changes its arity";
                for (int32_t q = 0; q < ok->nin + ok->nout; q++)
                    if (!same_type(&x->refs[ok->ref0 + q], &x->refs[o0->ref0 + q]))
                        return "shapes change between loop iterations";
                int32_t nis = n_islots(x, oi);
                if (nis != n_islots(x, s0 + j)) return "an op in a loop body changes its attributes";
                for (int32_t s = 0; s < nis; s++) {
                    const an_islot *a = &x->islots[ok->islot0 + s], *a0 = &x->islots[o0->islot0 + s];
                    /* one that moved between segments moved alike in every
                     * iteration (the same deltas from its first value): a loop
                     * invariant b that varies, x[i:i + B, t] of a batch offset */
                    if ((a->varied || a0->varied) && (lconst[l] || a->varied != a0->varied || a->hdelta != a0->hdelta))
                        return "an int attribute in a loop body varies between segments";
                    int64_t slope = T->slope[E0op->islot0 + s];
                    if (jn_ir_is_expr(slope)) return "an int attribute is not affine in the loop iteration";
                    int64_t step, want;
                    if (__builtin_mul_overflow(slope, (int64_t)it, &step) ||
                        __builtin_add_overflow(a0->first, step, &want) || a->first != want)
                        return "an int attribute is not affine in the loop iteration";
                }
                int32_t nfs = n_fslots(x, oi);
                if (nfs != n_fslots(x, s0 + j)) return "an op in a loop body changes its attributes";
                for (int32_t s = 0; s < nfs; s++) {
                    const an_fslot *a = &x->fslots[ok->fslot0 + s], *a0 = &x->fslots[o0->fslot0 + s];
                    if (a->varied || !(a->first == a0->first))
                        return "a float attribute or Python scalar changes between loop iterations";
                }
                for (int32_t q = 0; q < ok->nin; q++) {
                    rel *R = &rels[ri + q];
                    const an_ref *rf = &x->refs[ok->ref0 + q];
                    if (rf->role == JN_TR_SCALAR) continue;
                    const an_val *xv = &x->vals[rf->val];
                    int32_t base = s0 + it * p;
                    rel now;
                    memset(&now, 0, sizeof now);
                    int32_t it2, j2, l2 = loop_iter(T, LY, e, xv->def, &it2, &j2);
                    if (l2 < 0 && R->set && R->kind == REL_X &&
                        is_seed(x, E0, T, e, R->x.l, R->x.j, R->x.idx, rf->val)) {
                        /* the seed where the other iterations read the carried
                         * body value: the carry's input is read (add_xread) */
                        R->x.seed = 1;
                        const char *w = xnote(&R->x, R->x.l, R->x.j, R->x.idx, -1, T->loops[R->x.l].count[e], it);
                        if (w) return at_input(w, ok, j, p, q, it);
                        continue;
                    }
                    if (l2 >= 0 && l2 != l) { /* another loop's value: collected, read back by index */
                        if (R->set && R->kind != REL_X)
                            return at_input("loop iterations read their inputs differently", ok, j, p, q, it);
                        R->set = 1;
                        R->kind = REL_X;
                        const char *w = xnote(&R->x, l2, j2, xv->idx, it2, T->loops[l2].count[e], it);
                        if (w) return at_input(w, ok, j, p, q, it);
                        continue;
                    }
                    if (xv->def >= base && xv->def < base + j) {
                        now.kind = REL_LOCAL;
                        now.j = xv->def - base;
                        now.idx = xv->idx;
                    } else if (it > 0 && xv->def >= base - p && xv->def < base) {
                        now.kind = REL_PREV;
                        now.j = xv->def - (base - p);
                        now.idx = xv->idx;
                    } else if (xv->def >= s0 && xv->def < s0 + K * p) {
                        return at_input("a loop body reads a value of an older iteration", ok, j, p, q, it);
                    } else {
                        now.kind = REL_OUT;
                        now.out = value_id(x, LY, rf->val);
                        /* first read in this very iteration (the last one is titer -1) */
                        int mine = now.out.kind == 1 && now.out.t >= TL->tfirst && now.out.t < TL->tfirst + p &&
                                   !xv->written && xv->role != JN_TR_PARAM && xv->role != JN_TR_STATE &&
                                   xv->role != JN_TR_HOST;
                        if (mine && (now.out.it == it || (now.out.it == -1 && it == K - 1))) {
                            now.out.it = 0;
                            if (it > 0) now.kind = REL_EACH;
                        } else if (mine && it > 1 && now.out.it == it - 1) {
                            /* (at iteration 1 it looks like a read of an outside
                             * value iteration 0 read first: OUT, told apart here) */
                            now.out.it = 0;
                            now.kind = REL_PREVEACH;
                        }
                        if (lconst[l] && now.kind >= REL_EACH) /* strict: unrolled, as fast as before */
                            return at_input("loop iterations read outside tensors of their own", ok, j, p, q, it);
                    }
                    if (it == 0 && now.kind == REL_OUT) {
                        /* a carry's seed or a plain outside read: told apart at it >= 1 */
                        if (!R->init_set) {
                            R->init = now.out;
                            R->init_set = 1;
                        } else if (!vid_eq(R->init, now.out)) {
                            return at_input("a loop starts from different values in different segments", ok, j, p, q,
                                            it);
                        }
                        continue;
                    }
                    if (R->set && vid_eq(R->out, now.out) &&
                        ((R->kind == REL_OUT && now.kind == REL_PREVEACH) || (R->kind == REL_PREVEACH && it == 1)))
                        R->kind = now.kind = REL_PREVEACH;
                    if (!R->set) {
                        R->kind = now.kind;
                        R->j = now.j;
                        R->idx = now.idx;
                        R->out = now.out;
                        R->set = 1;
                    } else if (R->kind != now.kind || R->j != now.j || R->idx != now.idx ||
                               ((now.kind == REL_OUT || now.kind >= REL_EACH) && !vid_eq(R->out, now.out))) {
                        return at_input("loop iterations read their inputs differently", ok, j, p, q, it);
                    }
                }
            }
            ri += o0->nin;
        }
    }
    *bad = -1;
    return NULL;
}

/* Outside the loops: the same dataflow in every exemplar, body values used
 * only as carried-out or collected values. */
static const char *check_outside(const an_ex *x, const an_ex *E0, an_tmpl *T, const layout *LY, const layout *LY0,
                                 int32_t e, xstate *xs, const char *lconst) {
    for (int32_t t = 0; t < T->nt; t++) {
        if (T->loop[t] >= 0) continue;
        int32_t o = T->eop[e][t], o0 = T->eop[0][t];
        const an_op *op = &x->ops[o], *op0 = &E0->ops[o0];
        /* a collect consumer? */
        const an_tcollect *cl = NULL;
        const an_tloop *CL = NULL;
        for (int32_t l = 0; l < T->nloops && !cl; l++)
            for (int32_t k = 0; k < T->loops[l].ncoll; k++)
                if (T->loops[l].coll[k].consumer == t) {
                    cl = &T->loops[l].coll[k];
                    CL = &T->loops[l];
                }
        if (cl) {
            int32_t K = CL->count[e], s0 = CL->estart[e];
            if (op->nin != K) return "segments collect loop values differently";
            for (int32_t k = 0; k < K; k++) {
                const an_val *yv = &x->vals[x->refs[op->ref0 + k].val];
                if (yv->def != s0 + k * CL->p + cl->body_j || yv->idx != cl->body_idx)
                    return "segments collect loop values differently";
            }
            continue;
        }
        if (op->nin != op0->nin) return "exemplars do not line up";
        for (int32_t q = 0; q < op->nin; q++) {
            const an_ref *rf = &x->refs[op->ref0 + q];
            if (rf->role == JN_TR_SCALAR) continue;
            const an_val *xv = &x->vals[rf->val];
            xstate *X = &xs[op0->ref0 + q];
            int32_t it2, j2, l2 = loop_iter(T, LY, e, xv->def, &it2, &j2);
            if (e == 0)
                X->mode = l2 < 0 ? 0 : LY->titer[xv->def] == -1 && is_carried(&T->loops[l2], j2, xv->idx) ? 1 : 2;
            if (X->mode == 2) { /* a loop value other than the last carried one: collected */
                if (l2 < 0) return "segments differ in dataflow";
                const char *w = xnote(X, l2, j2, xv->idx, it2, T->loops[l2].count[e], 0);
                if (w) return w;
                continue;
            }
            vid a = value_id(x, LY, rf->val), b = value_id(E0, LY0, E0->refs[op0->ref0 + q].val);
            if (!vid_eq(a, b)) return "segments differ in dataflow";
            if (a.kind == 1 && T->loop[a.t] >= 0) { /* an outside tensor a loop read first */
                int32_t src = E0->ops[T->eop[0][a.t]].ref0 + a.idx;
                if (T->each_of_ref[src]) { /* a stacked input's element: its loop's last one only */
                    if (a.it != -1) return "an op after a loop reads a stacked input's iteration other than the last";
                    T->eachlast_of_ref[op0->ref0 + q] = src + 1;
                } else if (a.it != 0 && !(a.it == -1 && T->loops[T->loop[a.t]].count[e] == 1)) {
                    return "an op after a loop reads an outside tensor a later iteration read first";
                }
            }
            if (xv->def >= 0 && T->loop[LY->tpos[xv->def]] >= 0) {
                const an_tloop *TL = &T->loops[T->loop[LY->tpos[xv->def]]];
                int32_t j = LY->tpos[xv->def] - TL->tfirst;
                if (LY->titer[xv->def] != -1 || !is_carried(TL, j, xv->idx))
                    return "a value of a loop iteration other than the last is used after the loop";
            }
        }
    }
    /* written-back body values must leave the loop through a carry; kept
     * ones through a carry's out or, kept in an earlier iteration (the
     * per-step values autograd saved, held across a sync before the
     * backward), collected over every iteration */
    for (int32_t v = 0; v < x->nvals; v++) {
        const an_val *xv = &x->vals[v];
        if (xv->def < 0 || (!xv->keep && xv->overwrites < 0)) continue;
        int32_t t = LY->tpos[xv->def];
        if (T->loop[t] < 0) continue;
        an_tloop *TL = &T->loops[T->loop[t]];
        if (LY->titer[xv->def] == -1 && is_carried(TL, t - TL->tfirst, xv->idx)) continue;
        if (xv->overwrites >= 0) return "a loop iteration's value is written back to an outside tensor";
        if (lconst[T->loop[t]]) return "a loop iteration's value is kept by Python"; /* unrolled, as before */
        TL->kept[t - TL->tfirst] |= 1u << xv->idx;
    }
    return NULL;
}

/* Template E0 ref r reads another loop's value as X says (at: the reading loop, -1). */
static int add_xread(an_tmpl *T, const xstate *X, int32_t at, int32_t r) {
    an_txread *n = realloc(T->xr, sizeof *n * (size_t)(T->nxr + 1));
    if (!n) return -1;
    T->xr = n;
    /* from the end when both fit (one trip count): the last iterations are
     * what a backward pass reads first.  A read that took the seed reads the
     * carry's input, whose iteration k is the next of k - 1. */
    int64_t c = X->rev ? X->cr - X->seed : X->cf + X->seed;
    n[T->nxr] = (an_txread){X->l, X->j, X->idx, at, (uint8_t)X->rev, (uint8_t)X->seed, c};
    T->xread_of_ref[r] = ++T->nxr;
    return 0;
}

/* One try of an_tmpl_loops with the repeats in unroll[] unrolled; *bad_rep:
 * a repeat whose count never varied (a loop only for its length) that a
 * check_body failure is about, else -1. */
static jn_status tmpl_loops_try(an_ctx *c, const int32_t *ex, int32_t m, const char *unroll, an_tmpl **out,
                                const char **why, int32_t *bad_rep) {
    *out = NULL;
    *why = NULL;
    *bad_rep = -1;
    const an_ex *E0 = &c->ex[ex[0]];
    int32_t nr = E0->nreps;
    int *varies = calloc((size_t)nr + 1, sizeof(int));
    char *constant = calloc((size_t)nr + 1, 1);
    layout *LY = calloc((size_t)m, sizeof *LY);
    rel *rels = NULL;
    xstate *xs = NULL;
    char *lconst = NULL; /* per template loop: only for its length (its count never varied) */
    an_tmpl *T = NULL;
    jn_status st = JN_OK;
    if (!varies || !constant || !LY) goto nomem;
    int32_t nloops = 0, nt = 0;
    for (int32_t r = 0; r < nr; r++) {
        int32_t least = E0->reps[r].count;
        for (int32_t e = 1; e < m; e++) {
            if (c->ex[ex[e]].reps[r].count != E0->reps[r].count) varies[r] = 1;
            if (c->ex[ex[e]].reps[r].count < least) least = c->ex[ex[e]].reps[r].count;
        }
        if (!varies[r] && least >= AN_MIN_CONST_TRIP && !unroll[r]) varies[r] = constant[r] = 1;
        nloops += varies[r];
    }
    if (!nloops) {
        *why = "no repeat count varies";
        goto done;
    }
    for (int32_t i = 0, r = 0; i < E0->nops;) {
        if (r < nr && E0->reps[r].start == i) {
            nt += E0->reps[r].period * (varies[r] ? 1 : E0->reps[r].count);
            i += E0->reps[r].period * E0->reps[r].count;
            r++;
        } else {
            nt++;
            i++;
        }
    }
    if (!(T = tmpl_new(m, nt))) goto nomem;
    if (!(T->loops = calloc((size_t)nloops, sizeof *T->loops))) goto nomem;
    T->nloops = nloops;
    for (int32_t l = 0; l < nloops; l++)
        if (!(T->loops[l].count = malloc(sizeof(int32_t) * (size_t)m)) ||
            !(T->loops[l].estart = malloc(sizeof(int32_t) * (size_t)m)))
            goto nomem;
    /* lay every exemplar onto the template */
    for (int32_t e = 0; e < m; e++) {
        const an_ex *x = &c->ex[ex[e]];
        LY[e].tpos = malloc(sizeof(int32_t) * (size_t)(x->nops + 1));
        LY[e].titer = malloc(sizeof(int32_t) * (size_t)(x->nops + 1));
        LY[e].refop = malloc(sizeof(int32_t) * (size_t)(x->nrefs + 1));
        if (!LY[e].tpos || !LY[e].titer || !LY[e].refop) goto nomem;
        for (int32_t o = 0; o < x->nops; o++)
            for (int32_t k = 0; k < x->ops[o].nin + x->ops[o].nout; k++) LY[e].refop[x->ops[o].ref0 + k] = o;
        int32_t i = 0, r = 0, t = 0, l = 0;
        while (i < x->nops && t < nt) {
            if (r < nr && x->reps[r].start == i && varies[r]) {
                int32_t p = x->reps[r].period, k = x->reps[r].count;
                an_tloop *TL = &T->loops[l];
                TL->tfirst = t;
                TL->p = p;
                TL->count[e] = k;
                TL->estart[e] = i;
                for (int32_t it = 0; it < k; it++)
                    for (int32_t j = 0; j < p; j++) {
                        LY[e].tpos[i + it * p + j] = t + j;
                        LY[e].titer[i + it * p + j] = it == k - 1 ? -1 : it;
                    }
                for (int32_t j = 0; j < p; j++) {
                    T->eop[e][t + j] = i + j;
                    T->loop[t + j] = l;
                }
                i += p * k;
                t += p;
                r++, l++;
            } else {
                if (r < nr && x->reps[r].start == i) r++; /* unrolled: plain ops from here */
                LY[e].tpos[i] = t;
                LY[e].titer[i] = 0;
                T->eop[e][t] = i;
                i++, t++;
            }
        }
        if (t != nt || i != x->nops) {
            *why = "exemplars do not line up";
            goto done;
        }
    }
    /* int attributes: the per-iteration step, from E0 */
    if (!(T->slope = calloc((size_t)E0->nislots + 1, sizeof(int64_t)))) goto nomem;
    if (!(T->carry_of_ref = calloc((size_t)E0->nrefs + 1, sizeof(int32_t)))) goto nomem;
    if (!(T->xread_of_ref = calloc((size_t)E0->nrefs + 1, sizeof(int32_t)))) goto nomem;
    if (!(T->each_of_ref = calloc((size_t)E0->nrefs + 1, sizeof(int32_t)))) goto nomem;
    if (!(T->eachprev_of_ref = calloc((size_t)E0->nrefs + 1, sizeof(int32_t)))) goto nomem;
    if (!(T->eachlast_of_ref = calloc((size_t)E0->nrefs + 1, sizeof(int32_t)))) goto nomem;
    for (int32_t l = 0; l < nloops; l++)
        if (!(T->loops[l].kept = calloc((size_t)T->loops[l].p + 1, sizeof *T->loops[l].kept))) goto nomem;
    int64_t nrel = 0;
    for (int32_t l = 0; l < nloops; l++) {
        const an_tloop *TL = &T->loops[l];
        for (int32_t j = 0; j < TL->p; j++) {
            int32_t o = TL->estart[0] + j;
            nrel += E0->ops[o].nin;
            for (int32_t s = 0; s < n_islots(E0, o); s++)
                T->slope[E0->ops[o].islot0 + s] = (int64_t)((uint64_t)E0->islots[E0->ops[o + TL->p].islot0 + s].first -
                                                            (uint64_t)E0->islots[E0->ops[o].islot0 + s].first);
        }
    }
    if (!(rels = calloc((size_t)nrel + 1, sizeof *rels))) goto nomem;
    int32_t bad = -1;
    if (!(lconst = calloc((size_t)nloops + 1, 1))) goto nomem;
    for (int32_t r = 0, l = 0; r < nr; r++)
        if (varies[r]) lconst[l++] = constant[r];
    for (int32_t e = 0; e < m && !*why; e++) *why = check_body(&c->ex[ex[e]], E0, T, &LY[e], e, rels, lconst, &bad);
    if (*why) {
        for (int32_t r = 0, l = 0; r < nr && bad >= 0; r++)
            if (varies[r] && l++ == bad && constant[r]) *bad_rep = r;
        goto done;
    }
    /* carries: every PREV relation, seeded by its iteration-0 read */
    int64_t ri = 0;
    for (int32_t l = 0; l < nloops; l++) {
        an_tloop *TL = &T->loops[l];
        for (int32_t j = 0; j < TL->p; j++) {
            const an_op *o = &E0->ops[TL->estart[0] + j];
            for (int32_t q = 0; q < o->nin; q++) {
                rel *R = &rels[ri + q];
                if (E0->refs[o->ref0 + q].role == JN_TR_SCALAR) continue;
                if ((R->kind == REL_OUT || R->kind == REL_EACH) && (!R->init_set || !vid_eq(R->init, R->out))) {
                    *why = "a loop body reads a different outside value in its first iteration";
                    goto done;
                }
                if (R->kind == REL_EACH) {
                    T->each_of_ref[o->ref0 + q] = l + 1;
                    continue;
                }
                if (R->kind == REL_PREVEACH) { /* after every EACH is known: below */
                    if (!R->init_set) {
                        *why = "a loop body reads a different outside value in its first iteration";
                        goto done;
                    }
                    continue;
                }
                if ((R->kind == REL_LOCAL || R->kind == REL_X) && R->init_set) {
                    *why = "loop iterations read their inputs differently";
                    goto done;
                }
                if (R->kind == REL_X) {
                    if (add_xread(T, &R->x, l, o->ref0 + q)) goto nomem;
                    continue;
                }
                if (R->kind != REL_PREV) continue;
                int32_t init = E0->refs[o->ref0 + q].val;
                int32_t k;
                for (k = 0; k < TL->ncarry; k++)
                    if (TL->carry[k].next_j == R->j && TL->carry[k].next_idx == R->idx) break;
                if (k == TL->ncarry) {
                    an_tcarry *nc = realloc(TL->carry, sizeof *nc * (size_t)(k + 1));
                    if (!nc) goto nomem;
                    TL->carry = nc;
                    TL->carry[k] = (an_tcarry){R->j, R->idx, init};
                    TL->ncarry++;
                } else if (TL->carry[k].init != init) {
                    *why = "one loop-carried value has two different seeds";
                    goto done;
                }
                T->carry_of_ref[o->ref0 + q] = k + 1;
            }
            ri += o->nin;
        }
    }
    /* PREVEACH reads: the stacked read they follow (first read at body
     * position (out.t, out.idx)), whose iteration-0 ref is an EACH one */
    ri = 0;
    for (int32_t l = 0; l < nloops; l++) {
        const an_tloop *TL = &T->loops[l];
        for (int32_t j = 0; j < TL->p; j++) {
            const an_op *o = &E0->ops[TL->estart[0] + j];
            for (int32_t q = 0; q < o->nin; q++) {
                const rel *R = &rels[ri + q];
                if (R->kind != REL_PREVEACH) continue;
                int32_t src = E0->ops[TL->estart[0] + R->out.t - TL->tfirst].ref0 + R->out.idx;
                if (T->each_of_ref[src] != l + 1) {
                    *why = "a loop body reads an outside tensor of an earlier iteration";
                    goto done;
                }
                T->eachprev_of_ref[o->ref0 + q] = src + 1;
            }
            ri += o->nin;
        }
    }
    /* seeds and next values agree in type, in every exemplar */
    for (int32_t e = 0; e < m; e++) {
        const an_ex *x = &c->ex[ex[e]];
        for (int32_t l = 0; l < nloops; l++) {
            const an_tloop *TL = &T->loops[l];
            for (int32_t j = 0; j < TL->p; j++) {
                const an_op *o = &x->ops[TL->estart[e] + j], *o0 = &E0->ops[TL->estart[0] + j];
                for (int32_t q = 0; q < o->nin; q++) {
                    int32_t k = T->carry_of_ref[o0->ref0 + q];
                    if (!k) continue;
                    const an_tcarry *cr = &TL->carry[k - 1];
                    const an_op *nx = &x->ops[TL->estart[e] + cr->next_j];
                    if (!same_type(&x->refs[o->ref0 + q], &x->refs[nx->ref0 + nx->nin + cr->next_idx])) {
                        *why = "a loop-carried value changes its shape or dtype";
                        goto done;
                    }
                }
            }
        }
    }
    /* collects: stack/cat ops after a loop over all its iterations' values (E0) */
    for (int32_t t = 0; t < nt; t++) {
        if (T->loop[t] >= 0) continue;
        const an_op *op = &E0->ops[T->eop[0][t]];
        if ((op->op != JN_OP_stack && op->op != JN_OP_cat) || !op->nin) continue;
        const an_val *v0 = &E0->vals[E0->refs[op->ref0].val];
        if (v0->def < 0 || T->loop[LY[0].tpos[v0->def]] < 0) continue;
        int32_t l = T->loop[LY[0].tpos[v0->def]];
        an_tloop *TL = &T->loops[l];
        int32_t j = LY[0].tpos[v0->def] - TL->tfirst;
        if (op->nin != TL->count[0]) continue;
        int ok = 1;
        for (int32_t k = 0; k < op->nin && ok; k++) {
            const an_val *yv = &E0->vals[E0->refs[op->ref0 + k].val];
            ok = yv->def == TL->estart[0] + k * TL->p + j && yv->idx == v0->idx;
        }
        if (!ok) continue;
        /* the stack/cat dim: one constant, in range for the items */
        const an_ref *item = &E0->refs[op->ref0];
        int32_t nis = (T->eop[0][t] + 1 < E0->nops ? E0->ops[T->eop[0][t] + 1].islot0 : E0->nislots) - op->islot0;
        if (nis != 1) continue;
        int64_t d = E0->islots[op->islot0].first;
        int r = item->ndim, stack = op->op == JN_OP_stack;
        for (int32_t e = 0; e < m && ok; e++) {
            const an_ex *x = &c->ex[ex[e]];
            const an_islot *is = &x->islots[x->ops[T->eop[e][t]].islot0];
            ok = !is->varied && is->first == d;
        }
        if (d < 0) d += stack ? r + 1 : r;
        if (!ok || r >= JN_MAX_DIMS || d < 0 || d > (stack ? r : r - 1)) continue;
        an_tcollect *nc = realloc(TL->coll, sizeof *nc * (size_t)(TL->ncoll + 1));
        if (!nc) goto nomem;
        TL->coll = nc;
        TL->coll[TL->ncoll++] = (an_tcollect){j, v0->idx, t};
    }
    if (!(xs = calloc((size_t)E0->nrefs + 1, sizeof *xs))) goto nomem;
    for (int32_t e = 0; e < m && !*why; e++) *why = check_outside(&c->ex[ex[e]], E0, T, &LY[e], &LY[0], e, xs, lconst);
    if (*why) goto done;
    for (int32_t r = 0; r < E0->nrefs; r++)
        if (xs[r].mode == 2 && add_xread(T, &xs[r], -1, r)) goto nomem;
    *out = T;
    T = NULL;
    goto done;
nomem:
    st = jn_error(JN_ERR_NOMEM, "analyzer: out of memory");
done:
    if (LY)
        for (int32_t e = 0; e < m; e++) free(LY[e].tpos), free(LY[e].titer), free(LY[e].refop);
    free(LY);
    free(varies);
    free(constant);
    free(rels);
    free(xs);
    free(lconst);
    an_tmpl_free(T);
    return st;
}

/* A repeat that is a loop only for its length (AN_MIN_CONST_TRIP: its count
 * never varied) whose body is not expressible (an optimizer's per-parameter
 * ops, the step count a float attribute) is unrolled and the template tried
 * again, so it does not cost the loops whose counts vary (the time loops). */
jn_status an_tmpl_loops(an_ctx *c, const int32_t *ex, int32_t m, an_tmpl **out, const char **why) {
    int32_t nr = c->ex[ex[0]].nreps, bad;
    char *unroll = calloc((size_t)nr + 1, 1);
    if (!unroll) return jn_error(JN_ERR_NOMEM, "analyzer: out of memory");
    jn_status st;
    while (!(st = tmpl_loops_try(c, ex, m, unroll, out, why, &bad)) && !*out && bad >= 0 && !unroll[bad])
        unroll[bad] = 1;
    free(unroll);
    return st;
}
