/* generalize.c -- one structure (exemplars that align op by op) -> one IR
 * graph.
 *
 * Walks the ops in order and builds inputs, nodes and outputs, deciding for
 * everything that may differ between the exemplars (and between the
 * recorded segments inside one exemplar) how to generalize it:
 *
 *   dims      the vector of a dim's values over the exemplars: all equal ->
 *             the constant, unless the same place (call site and stack,
 *             occurrence, argument, dim) took other values in another
 *             segment of the recording (an_dim_ranges): then a symbol (its
 *             range this graph's value), shared with the graph's other such
 *             symbols of that value (or a product of two) -- one
 *             observation of a dim known to vary (an epoch's first step,
 *             seen once, gets the batch symbol; state inputs' dims stay);
 *             equal to a known symbol's vector -> that symbol;
 *             c*s, s1*s2, s+c, s-c of known symbols -> that expression
 *             ([B,28,28] -> view [B,784] gives (B*784)); else a new symbol
 *             (kind dim) with the range seen.  Symbols are named s0, s1, ...
 *             in order of first appearance.
 *   int attributes   the same matching; one that varied between segments of
 *             one exemplar (a slice bound that moves every batch) becomes an
 *             int symbol with its range.  A POSITION (ops_pos.def: a slice's
 *             start and end, a select's index) becomes a symbol even when it
 *             never moved (a segment seen once, an offset a longer run
 *             advances): a later position of the same op is the earlier one
 *             plus a constant (end = start + K), the first a fresh symbol --
 *             never fitted to other dims from one observation.  Inside a
 *             loop, a position that steps with the induction variable keeps
 *             its recorded base (the loop's own range).
 *   float attributes every one a scalar input bound to the attribute
 *             (node.attr_input), fed at run time: an optimizer's step count
 *             or a scheduled learning rate seen once is no constant.  A
 *             codegen pass that specialises on a value makes it a constant
 *             with a NEED guard itself.
 *   Python scalars   the same: IN_SCALAR with a pytype guard.
 *   Philox offset    the first random op's offset is the symbol `rng`; later
 *             ones rng + (the distance): outside loops the numel of the
 *             random ops before it (the dispatcher advances the offset by
 *             each one's numel), an expression of this graph's dims;
 *             in and after a loop with random ops, generalized like an int.
 *   inputs    state (PARAM/STATE, or any outside tensor written here), host
 *             batches, carries (tensors of earlier segments).
 *   outputs   state write-backs, then values Python still references.
 * guards.c adds the guards for what was assumed.
 */
#include <assert.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "an_internal.h"

static jn_status nomem(void) { return jn_error(JN_ERR_NOMEM, "analyzer: out of memory"); }

int32_t an_gen_sym(an_gen *G, const char *prefix, jn_ir_sym_kind kind, int64_t lo, int64_t hi, int64_t site) {
    char name[32];
    int32_t *ctr = kind == JN_IR_SYM_IVAR ? &G->nivar : &G->nsym;
    if (kind == JN_IR_SYM_RNG) snprintf(name, sizeof name, "rng");
    else snprintf(name, sizeof name, "%s%d", prefix, (*ctr)++);
    an_use_site(G->c, site);
    int32_t s = jn_ir_sym_add(G->g, name, kind, lo, hi, site);
    if (s >= 0 && !an_grow(&G->sym_note, &G->capnote, s + 1, sizeof *G->sym_note))
        G->sym_note[s] = G->what[0] ? jn_ir_intern(G->g, G->what) : NULL;
    return s;
}

static int add_cand(an_gen *G, jn_ir_dim d, int32_t sym, const int64_t *vec) {
    if (an_grow(&G->cands, &G->capcands, G->ncands + 1, sizeof *G->cands)) return -1;
    int64_t *v = NULL;
    if (vec) {
        if (!(v = malloc(sizeof(int64_t) * (size_t)G->m))) return -1;
        memcpy(v, vec, sizeof(int64_t) * (size_t)G->m);
    }
    G->cands[G->ncands++] = (an_cand){d, sym, v, 0, 0, NULL, 0, 0, 0};
    return 0;
}

/* An expression found by matching becomes a candidate too, so that later
 * dims can be expressed through it (4*(T-1)). */
static jn_ir_dim remember(an_gen *G, jn_ir_dim d, const int64_t *vec, jn_status *err) {
    if (add_cand(G, d, -1, vec)) *err = nomem();
    return d;
}

/* Per op of exemplar x, which of the ops of its call site, stack and op
 * code it is, of how many, and its iteration in a repeat:
 * (*occ)[3i .. 3i+2].  Ops of one line read different tensors within a
 * segment (a helper that loads the training images and then the test
 * images, the ops of one backward()); by occurrence they are told apart,
 * and only segments with as many of them are compared.  They are counted
 * on the folded sequence (loops.c: a repeat's body once, each later
 * iteration its first's occurrence and its own iteration number), so an op
 * keeps its place whatever a loop's trip count: else a segment whose two
 * loops ran other counts with the same total (an encoder's S and a
 * decoder's T) compared the k-th addmm of a line with another's k-th, an
 * input gradient [8, 16] with a weight gradient [48, 16], and the batch
 * became a symbol.  JN_ERR_NOMEM. */
static jn_status op_occ(const an_ex *x, int32_t **occ) {
    *occ = calloc(3 * (size_t)x->nops + 1, sizeof(int32_t));
    an_map cnt = {0};
    jn_status s = *occ ? JN_OK : JN_ERR_NOMEM;
    for (int pass = 0; pass < 2 && !s; pass++) /* which one, then of how many */
        for (int32_t i = 0, r = 0; i < x->nops && !s; i++) {
            while (r < x->nreps && x->reps[r].start + x->reps[r].period * x->reps[r].count <= i) r++;
            int32_t it = 0;
            if (r < x->nreps && i >= x->reps[r].start) it = (i - x->reps[r].start) / x->reps[r].period;
            int32_t *oc = *occ + 3 * i;
            if (it > 0) { /* a later iteration: its first's place */
                const int32_t *first = oc - 3 * (int64_t)it * x->reps[r].period;
                oc[0] = first[0], oc[1] = first[1], oc[2] = it;
                continue;
            }
            const an_op *o = &x->ops[i];
            uint64_t k = an_mix(an_mix(an_mix(AN_FNV_INIT, (uint64_t)o->site), (uint64_t)o->stack), (uint64_t)o->op);
            int64_t *c = an_map_get(&cnt, k, 0, NULL);
            if (!c) s = JN_ERR_NOMEM;
            else if (pass == 0) oc[0] = (int32_t)(*c)++, oc[2] = 0;
            else oc[1] = (int32_t)*c;
        }
    an_map_free(&cnt);
    if (s) {
        free(*occ);
        *occ = NULL;
        return jn_error(JN_ERR_NOMEM, "analyzer: out of memory");
    }
    return JN_OK;
}

uint64_t an_dim_key(const an_op *o, const int32_t *occ, int slot, int dim) {
    uint64_t h = an_mix(an_mix(an_mix(AN_FNV_INIT, (uint64_t)o->site), (uint64_t)o->stack), (uint64_t)o->op);
    h = an_mix(an_mix(an_mix(h, (uint64_t)occ[0]), (uint64_t)occ[1]), (uint64_t)occ[2]);
    return an_mix(an_mix(h, (uint64_t)slot), (uint64_t)dim);
}

/* Place key took [lo, hi]. */
static jn_status note_range(an_ctx *c, uint64_t key, int64_t lo, int64_t hi) {
    int isnew = 0;
    int64_t *k = an_map_get(&c->dimvar, key, c->ndv, &isnew);
    if (!k || (isnew && an_grow(&c->dv, &c->capdv, c->ndv + 1, sizeof *c->dv)))
        return jn_error(JN_ERR_NOMEM, "analyzer: out of memory");
    if (isnew) c->dv[c->ndv++] = (struct an_dimrange){lo, hi};
    struct an_dimrange *dr = &c->dv[*k];
    if (lo < dr->lo) dr->lo = lo;
    if (hi > dr->hi) dr->hi = hi;
    return JN_OK;
}

jn_status an_dim_ranges(an_ctx *c) {
    jn_status s = JN_OK;
    for (int64_t i = 0; i < c->nex && !s; i++) {
        if ((s = an_fold(&c->ex[i]))) break;
        const an_ex *x = &c->ex[i];
        int32_t *occ = NULL;
        if ((s = op_occ(x, &occ))) break;
        for (int32_t o = 0; o < x->nops && !s; o++) {
            const an_op *op = &x->ops[o];
            for (int q = 0; q < op->nin + op->nout && !s; q++) {
                const an_ref *r = &x->refs[op->ref0 + q];
                for (int d = 0; d < r->ndim && !s; d++)
                    s = note_range(c, an_dim_key(op, occ + 3 * o, q, d), r->shape[d], r->shape[d]);
            }
            const jn_opinfo *info = jn_op_info((jn_op)op->op);
            for (int k = 0, n = 0; k < info->nattrs && op->attr0 >= 0 && !s; k++) {
                int w = info->attr_kind[k] == JN_A_INTS ? x->attrv[op->attr0 + k].l.n : info->attr_kind[k] == JN_A_INT;
                for (int j = 0; j < w && !s; j++, n++) {
                    const an_islot *sl = &x->islots[op->islot0 + n];
                    s = note_range(c, an_dim_key(op, occ + 3 * o, AN_SLOT_INT + n, 0), sl->lo, sl->hi);
                }
            }
        }
        free(occ);
    }
    return s;
}

/* The dim or int at place G->place (gen_shape, gen_islot) that is one
 * constant v here but took other values at the same place elsewhere in
 * the recording: the promoted symbol of that value, or a product of two
 * (B*T), or a new one of that value's range.  0 when the place held
 * v everywhere (a hidden size that equals the batch stays a constant), or
 * v is 0 or 1, which decide broadcasting. */
static jn_ir_dim promote(an_gen *G, int64_t v, jn_ir_sym_kind kind, int64_t site, jn_status *err) {
    const int64_t *k = G->place ? an_map_find(&G->c->dimvar, G->place) : NULL;
    if (!k || G->c->dv[*k].lo == G->c->dv[*k].hi || v == 0 || v == 1 || jn_ir_is_expr(v)) return 0;
    for (int64_t j = 0; j < G->ncands; j++)
        if (G->cands[j].promoted && G->cands[j].vec[0] == v) return G->cands[j].d;
    for (int64_t j = 0; j < G->ncands; j++)
        for (int64_t l = j; l < G->ncands; l++) {
            const an_cand *a = &G->cands[j], *b = &G->cands[l];
            int64_t x;
            if (!a->promoted || !b->promoted || __builtin_mul_overflow(a->vec[0], b->vec[0], &x) || x != v) continue;
            return jn_ir_dim_op(G->g, JN_IR_E_MUL, a->d, b->d);
        }
    /* its range is what this graph saw (the evidence says it moves, not
     * that this graph's code was run with the other values) */
    int32_t s = an_gen_sym(G, "s", kind, v, v, site);
    if (s < 0 || add_cand(G, jn_ir_sym_dim(G->g, s), s, G->vec)) {
        *err = nomem();
        return 0;
    }
    G->cands[G->ncands - 1].promoted = 1;
    return G->cands[G->ncands - 1].d;
}

/* The dim (or int) whose per-exemplar values are vec.  JN_IR_EXPR_BASE + 1
 * is never returned; on OOM *err is set. */
jn_ir_dim an_gen_dim(an_gen *G, const int64_t *vec, jn_ir_sym_kind kind, int64_t site, jn_status *err) {
    int m = G->m;
    int same = 1;
    for (int e = 1; e < m && same; e++) same = vec[e] == vec[0];
    jn_ir_dim pd = same ? promote(G, vec[0], kind, site, err) : 0;
    if (pd || *err) return pd;
    /* a constant the IR cannot hold as one (it would read as an expression
     * reference) becomes a symbol of that single value */
    if (same && !jn_ir_is_expr(vec[0])) return vec[0];
    for (int64_t k = 0; k < G->ncands; k++) {
        const int64_t *cv = G->cands[k].vec;
        if (!cv) continue;
        int eq = 1;
        for (int e = 0; e < m && eq; e++) eq = cv[e] == vec[e];
        if (eq) {
            /* first seen as an int attribute (a shape list), now as a dim */
            int32_t y = G->cands[k].sym;
            if (kind == JN_IR_SYM_DIM && y >= 0 && G->g->syms[y].kind == JN_IR_SYM_INT)
                G->g->syms[y].kind = JN_IR_SYM_DIM;
            return G->cands[k].d;
        }
    }
    /* c*s */
    for (int64_t k = 0; k < G->ncands; k++) {
        const int64_t *cv = G->cands[k].vec;
        if (!cv || cv[0] == 0 || cv[0] == -1 || vec[0] % cv[0]) continue;
        int64_t q = vec[0] / cv[0];
        if (q == 0 || q == 1 || jn_ir_is_expr(q)) continue;
        int ok = 1;
        for (int e = 0; e < m && ok; e++) {
            int64_t x;
            ok = !__builtin_mul_overflow(cv[e], q, &x) && x == vec[e];
        }
        if (ok) return remember(G, jn_ir_dim_op(G->g, JN_IR_E_MUL, G->cands[k].d, q), vec, err);
    }
    /* s1*s2 */
    for (int64_t k = 0; k < G->ncands; k++)
        for (int64_t l = k; l < G->ncands; l++) {
            const int64_t *a = G->cands[k].vec, *b = G->cands[l].vec;
            if (!a || !b) continue;
            int ok = 1;
            for (int e = 0; e < m && ok; e++) {
                int64_t x;
                ok = !__builtin_mul_overflow(a[e], b[e], &x) && x == vec[e];
            }
            if (ok) return remember(G, jn_ir_dim_op(G->g, JN_IR_E_MUL, G->cands[k].d, G->cands[l].d), vec, err);
        }
    /* s+c, s-c */
    for (int64_t k = 0; k < G->ncands; k++) {
        const int64_t *cv = G->cands[k].vec;
        if (!cv) continue;
        int64_t q;
        if (__builtin_sub_overflow(vec[0], cv[0], &q) || jn_ir_is_expr(q) || jn_ir_is_expr(-q)) continue;
        int ok = 1;
        for (int e = 0; e < m && ok; e++) {
            int64_t x;
            ok = !__builtin_add_overflow(cv[e], q, &x) && x == vec[e];
        }
        if (ok)
            return remember(G, q > 0 ? jn_ir_dim_op(G->g, JN_IR_E_ADD, G->cands[k].d, q)
                                     : jn_ir_dim_op(G->g, JN_IR_E_SUB, G->cands[k].d, -q), vec, err);
    }
    int64_t lo = vec[0], hi = vec[0];
    for (int e = 1; e < m; e++) {
        if (vec[e] < lo) lo = vec[e];
        if (vec[e] > hi) hi = vec[e];
    }
    int32_t s = an_gen_sym(G, "s", kind, lo, hi, site);
    if (s < 0 || add_cand(G, jn_ir_sym_dim(G->g, s), s, vec)) {
        *err = nomem();
        return 0;
    }
    return jn_ir_sym_dim(G->g, s);
}

/* Op, ref, slot of template op t in exemplar e (iteration 0 in a loop). */
static const an_op *eop(an_gen *G, int e, int32_t t) { return &G->E[e]->ops[G->T->eop[e][t]]; }

/* The loop template op t belongs to, or NULL. */
static const an_tloop *loop_of(an_gen *G, int32_t t) {
    return G->T->loop[t] >= 0 ? &G->T->loops[G->T->loop[t]] : NULL;
}

/* d + off (off a constant), or 0 with *ok cleared when off does not fit. */
static jn_ir_dim plus(an_gen *G, jn_ir_dim d, int64_t off, int *ok) {
    *ok = !jn_ir_is_expr(off) && !jn_ir_is_expr(-off) && off != INT64_MIN;
    if (!*ok) return 0;
    return off == 0 ? d : off > 0 ? jn_ir_dim_op(G->g, JN_IR_E_ADD, d, off) : jn_ir_dim_op(G->g, JN_IR_E_SUB, d, -off);
}

/* A fresh symbol of kind `kind` for one value seen (G->vec: the same in
 * every exemplar) that one observation relates to nothing: a position that
 * never moved, an extent (gen_extent).  Bound through its per-exemplar
 * values (selfcheck), matched against no other dim. */
static jn_ir_dim unmatched_sym(an_gen *G, jn_ir_sym_kind kind, int64_t site, jn_status *err) {
    int32_t y = an_gen_sym(G, "s", kind, G->vec[0], G->vec[0], site);
    if (y < 0 || add_cand(G, jn_ir_sym_dim(G->g, y), y, NULL) ||
        !(G->cands[G->ncands - 1].firsts = malloc(sizeof(int64_t) * (size_t)G->m))) {
        *err = nomem();
        return 0;
    }
    an_cand *cd = &G->cands[G->ncands - 1];
    cd->position = 1;
    memcpy(cd->firsts, G->vec, sizeof(int64_t) * (size_t)G->m);
    return cd->d;
}

/* The count symbol whose values over the exemplars are G->vec, or a new
 * one: dim 0 of indices read from data (JN_TR_DATAIDX: a mask's coordinates), the same
 * in every exemplar.  The recording's constant is the data's, not the
 * program's (a mask that kept every row while recording drops some
 * later), so it is a symbol from that one value; coordinates of one count
 * share it (out[keep], y[keep] read one mask twice). */
static jn_ir_dim count_sym(an_gen *G, int64_t site, jn_status *err) {
    for (int64_t k = 0; k < G->ncands; k++) {
        const an_cand *cd = &G->cands[k];
        if (cd->count && !memcmp(cd->firsts, G->vec, sizeof(int64_t) * (size_t)G->m)) return cd->d;
    }
    jn_ir_dim d = unmatched_sym(G, JN_IR_SYM_DIM, site, err);
    if (!*err) G->cands[G->ncands - 1].count = 1;
    return d;
}

/* Whether the count id (counts.c) has the values G->vec over the exemplars. */
static int count_is(an_gen *G, int id) {
    return id > 0 && !memcmp(&G->cfirsts[(size_t)(id - 1) * (size_t)G->m], G->vec, sizeof(int64_t) * (size_t)G->m);
}

/* A position (attribute k) of template op t that never moved (its value
 * G->vec[0] in every exemplar).  An op the analyzer added (a splice of a
 * view, or the view taken again) repeats its view's position: the view's
 * same attribute when it held the same value, else its first position plus
 * the difference (slice_scatter's end is computed from start and length),
 * when both are in the same loop or outside loops.
 * Otherwise a later position of the same op is the earlier one plus a
 * constant (a slice's end = start + K), the first a fresh int symbol of
 * that one value, bound through its per-exemplar values (selfcheck) and
 * matched against no other dim (one observation proves no relation). */
static jn_ir_dim gen_position(an_gen *G, int32_t t, int k, int64_t site, jn_status *err) {
    int64_t v = G->vec[0], off;
    int ok = 0;
    const an_op *o0 = eop(G, 0, t);
    if (o0->synth && o0->mirror >= 0) {
        int32_t tm = -1;
        for (int32_t u = 0; u < t && tm < 0; u++)
            if (G->T->eop[0][u] == o0->mirror) tm = u;
        /* a view made in a loop and written after it, or in another loop
         * (an unbind's views, one accumulated into after the time loop):
         * its position is a function of that loop's ivar, meaningless here */
        int32_t nm = tm >= 0 && loop_of(G, tm) == loop_of(G, t) ? G->node_of[tm] : -1;
        if (nm >= 0) {
            const an_op *mo = &G->E[0]->ops[o0->mirror];
            const jn_opinfo *mi = jn_op_info((jn_op)mo->op);
            int same = -1, first = -1;
            for (int j = 0; j < mi->nattrs; j++) {
                if (!mi->attr_pos[j]) continue;
                if (first < 0) first = j;
                if (!strcmp(mi->attr_name[j], jn_op_info((jn_op)o0->op)->attr_name[k]) &&
                    G->E[0]->attrv[mo->attr0 + j].i == v)
                    same = j;
            }
            if (same >= 0) return G->g->nodes[nm].attrs.a[same].i;
            if (first >= 0 && !__builtin_sub_overflow(v, G->E[0]->attrv[mo->attr0 + first].i, &off)) {
                jn_ir_dim d = plus(G, G->g->nodes[nm].attrs.a[first].i, off, &ok);
                if (ok) return d;
            }
        }
        /* no view to follow: the recorded value (as before positions were symbols) */
        return an_gen_dim(G, G->vec, JN_IR_SYM_INT, site, err);
    }
    if (G->pos_t == t && !__builtin_sub_overflow(v, G->pos_prev_v, &off)) {
        jn_ir_dim d = plus(G, G->pos_prev, off, &ok);
        if (ok) return d;
    }
    jn_ir_dim d = unmatched_sym(G, JN_IR_SYM_INT, site, err);
    if (*err) return 0;
    G->pos_t = t;
    G->pos_prev = d;
    G->pos_prev_v = v;
    return d;
}

/* Int slot s of template op t: varied inside an exemplar -> a fresh int
 * symbol; inside a loop, a*ivar + b when it steps by a per iteration; a
 * position (ops_pos.def) a symbol even when it never moved. */
static jn_ir_dim gen_islot(an_gen *G, int32_t t, int32_t s, int64_t site, jn_status *err) {
    int varied = 0;
    int64_t lo = INT64_MAX, hi = INT64_MIN;
    for (int e = 0; e < G->m; e++) {
        const an_islot *x = &G->E[e]->islots[eop(G, e, t)->islot0 + s];
        varied |= x->varied;
        if (x->lo < lo) lo = x->lo;
        if (x->hi > hi) hi = x->hi;
        G->vec[e] = x->first;
    }
    jn_ir_dim b = 0;
    const an_op *o0 = eop(G, 0, t);
    const jn_opinfo *info = jn_op_info((jn_op)o0->op);
    int pos = 0, kpos = -1, rngoff = 0;
    for (int k = 0, n = 0; k < info->nattrs; k++) {
        int w = info->attr_kind[k] == JN_A_INTS ? o0->attr0 >= 0 ? G->E[0]->attrv[o0->attr0 + k].l.n : 0
                : info->attr_kind[k] == JN_A_INT ? 1 : 0;
        if (s >= n && s < n + w) {
            if (info->attr_kind[k] == JN_A_INTS)
                snprintf(G->what, sizeof G->what, "%s[%d] of %s", info->attr_name[k], s - n, info->name);
            else
                snprintf(G->what, sizeof G->what, "%s of %s", info->attr_name[k], info->name);
            pos = info->attr_kind[k] == JN_A_INT && info->attr_pos[k];
            kpos = k;
            /* a random op's offset is generalized relative to the first's */
            rngoff = (info->flags & JN_F_RAND) && !strcmp(info->attr_name[k], "offset");
        }
        n += w;
    }
    const an_tloop *L = loop_of(G, t);
    int64_t a = L ? G->T->slope[eop(G, 0, t)->islot0 + s] : 0;
    int same = 1;
    for (int e = 1; e < G->m && same; e++) same = G->vec[e] == G->vec[0];
    if (!varied && !a && s < AN_COUNT_SLOTS && count_is(G, G->cslot[G->T->eop[0][t]][s]))
        return count_sym(G, site, err); /* a count the data decides (counts.c) */
    /* where the same place took other values in other segments, that
     * evidence decides (an_gen_dim); else a position is a symbol anyway (a
     * negative one counts from the end: a relation the recorded value
     * keeps, and a splice normalizes, left as it was) */
    if (!varied && pos && !a && same && o0->synth && o0->mirror >= 0) {
        /* an op the analyzer added, which the matcher never sees: its
         * position is its view's, never one matched by value */
        b = gen_position(G, t, kpos, site, err);
    } else if (!varied) {
        G->place = G->occ && !rngoff && !o0->synth ? an_dim_key(o0, G->occ + 3 * G->T->eop[0][t], AN_SLOT_INT + s, 0) : 0;
        b = an_gen_dim(G, G->vec, JN_IR_SYM_INT, site, err);
        G->place = 0;
        if (!*err && !jn_ir_is_expr(b) && pos && !a && same && G->vec[0] >= 0)
            b = gen_position(G, t, kpos, site, err);
    } else {
        /* a slot that moved between segments: the same symbol as a slot that
         * always held the same values, or that plus a constant */
        uint64_t hs = AN_FNV_INIT, hd = AN_FNV_INIT;
        for (int e = 0; e < G->m; e++) {
            const an_islot *x = &G->E[e]->islots[eop(G, e, t)->islot0 + s];
            hs = an_mix(hs, x->hseq);
            hd = an_mix(hd, x->hdelta);
        }
        int found = 0;
        for (int64_t k = 0; k < G->ncands && !found; k++) {
            const an_cand *cd = &G->cands[k];
            if (!cd->firsts || cd->position || cd->hdelta != hd) continue;
            int64_t off, x;
            if (__builtin_sub_overflow(G->vec[0], cd->firsts[0], &off) || jn_ir_is_expr(off) || jn_ir_is_expr(-off))
                continue;
            int ok = 1;
            for (int e = 1; e < G->m && ok; e++) ok = !__builtin_sub_overflow(G->vec[e], cd->firsts[e], &x) && x == off;
            if (!ok || (cd->hseq == hs) != (off == 0)) continue;
            b = off == 0 ? cd->d
                : off > 0 ? jn_ir_dim_op(G->g, JN_IR_E_ADD, cd->d, off) : jn_ir_dim_op(G->g, JN_IR_E_SUB, cd->d, -off);
            found = 1;
        }
        if (!found) {
            int32_t y = an_gen_sym(G, "s", JN_IR_SYM_INT, lo, hi, site);
            if (y < 0 || add_cand(G, jn_ir_sym_dim(G->g, y), y, NULL) ||
                !(G->cands[G->ncands - 1].firsts = malloc(sizeof(int64_t) * (size_t)G->m))) {
                *err = nomem();
                return 0;
            }
            an_cand *cd = &G->cands[G->ncands - 1];
            cd->hseq = hs;
            cd->hdelta = hd;
            memcpy(cd->firsts, G->vec, sizeof(int64_t) * (size_t)G->m);
            b = cd->d;
        }
    }
    if (!a || *err) return b;
    jn_ir_dim k = jn_ir_sym_dim(G->g, G->ivar[G->T->loop[t]]);
    return jn_ir_dim_op(G->g, JN_IR_E_ADD, jn_ir_dim_op(G->g, JN_IR_E_MUL, k, a), b);
}

/* Float slot s of template op t: its first recorded value. */
static double fslot_first(an_gen *G, int32_t t, int32_t s) {
    return G->E[0]->fslots[eop(G, 0, t)->fslot0 + s].first;
}

/* Float attributes share one scalar input per (call site, op, attribute,
 * value) when the value never varied in any exemplar: the autograd
 * engine's alpha = 1 and beta = 1 of every gradient accumulation at the
 * backward call, each its own input before, so cse could not merge the
 * equal accumulations they bind (an LSTM's two bias gradients, summed over
 * the time steps twice).  Exact: the matcher binds a shared input once and
 * checks every later token against it (a live value that differs is a
 * miss, F_SCALARVAR), so the graph runs only where all were equal.  The
 * price: values equal throughout the recording that later diverge at one
 * call site (param groups whose lr drift apart) miss instead of replaying. */
typedef struct an_fshare {
    int64_t site;
    int32_t op, attr, value;
    double x;
} an_fshare;

/* The value of float slot s of template op t when it is the same in every
 * instance of every exemplar; 0 when it varied. */
static int fslot_fixed(an_gen *G, int32_t t, int32_t s, double *x) {
    for (int e = 0; e < G->m; e++) {
        const an_fslot *f = &G->E[e]->fslots[eop(G, e, t)->fslot0 + s];
        if (f->varied || !(f->first == f->lo && f->first == f->hi)) return 0;
        if (e == 0) *x = f->first;
        else if (memcmp(&f->first, x, sizeof *x)) return 0; /* bits: -0.0 is not 0.0 */
    }
    return 1;
}

/* Whether dim d of input q of op o (exemplar E) is an EXTENT: a dim only
 * read through index tensors (x[idx] along an int index, index_select's
 * dim), whose size reaches no output shape -- a dataset's row count. */
static int extent_place(const an_ex *E, const an_op *o, int32_t q, int d) {
    if (q != 0) return 0;
    if (o->op == JN_OP_index_select) {
        int64_t dim = E->attrv[o->attr0].i, nd = E->refs[o->ref0].ndim;
        return (dim < 0 ? dim + nd : dim) == d;
    }
    if (o->op != JN_OP_index) return 0;
    for (int k = 1; k < o->nin; k++) {  /* a bool mask consumes dims and has data-dependent rows */
        uint8_t dt = E->refs[o->ref0 + k].dtype;
        if (dt != JN_I64 && dt != JN_I32) return 0;
    }
    const jn_ints *mask = &E->attrv[o->attr0].l;
    return d < mask->n && mask->v[d] == 1;
}

/* Dim d of input q of template op t, the same n in every exemplar, is an
 * extent, and n appears in the exemplars only as extents of inputs (the
 * images and the labels of one dataset), in no output shape and no int
 * attribute (so nothing was sized by it: a gradient of the indexed tensor,
 * a view of its size, randperm(n); a tensor made here and indexed shows
 * its n as an output).  Then the dim becomes a symbol of its own from one
 * observation (gen_shape), bound from that input: a run on more data than
 * the recording's replays.  Conservative: a coincidental equal value
 * anywhere keeps the constant. */
static int gen_extent(an_gen *G, int32_t t, int32_t q, int d) {
    int64_t n = G->vec[0];
    if (n <= 1 || !extent_place(G->E[0], eop(G, 0, t), q, d)) return 0;
    for (int e = 0; e < G->m; e++) {
        const an_ex *E = G->E[e];
        for (int32_t i = 0; i < E->nops; i++) {
            const an_op *o = &E->ops[i];
            for (int32_t r = 0; r < o->nin + o->nout; r++) {
                const an_ref *x = &E->refs[o->ref0 + r];
                for (int k = 0; k < x->ndim; k++)
                    if (x->shape[k] == n && !(r < o->nin && extent_place(E, o, r, k))) return 0;
            }
            const jn_opinfo *info = jn_op_info((jn_op)o->op);
            for (int k = 0; k < info->nattrs && o->attr0 >= 0; k++) {
                const jn_attr *a = &E->attrv[o->attr0 + k];
                if (info->attr_kind[k] == JN_A_INT && a->i == n) return 0;
                if (info->attr_kind[k] == JN_A_INTS)
                    for (int j = 0; j < a->l.n; j++)
                        if (a->l.v[j] == n) return 0;
            }
        }
    }
    return 1;
}

/* Symbolic shape of ref q of template op t (state: a state input, whose
 * dims stay as recorded: a parameter's shape is no batch). */
static jn_status gen_shape(an_gen *G, int32_t t, int32_t q, int64_t site, jn_ir_dim *shape, int state) {
    const an_op *o = eop(G, 0, t);
    const an_ref *r0 = &G->E[0]->refs[o->ref0 + q];
    jn_status err = JN_OK;
    for (int d = 0; d < r0->ndim; d++) {
        if (q >= o->nin) /* inputs: jn_ir_guard_explain names the input itself */
            snprintf(G->what, sizeof G->what, "dim %d of the output of %s", d, an_op_name(o->op));
        else
            G->what[0] = 0;
        for (int e = 0; e < G->m; e++) G->vec[e] = G->E[e]->refs[eop(G, e, t)->ref0 + q].shape[d];
        if (!state && r0->val >= 0 && count_is(G, G->cval[r0->val][d])) { /* a count the data decides (counts.c) */
            if (q < o->nin) snprintf(G->what, sizeof G->what, "a count the data decides (mask indices) read by %s", an_op_name(o->op));
            shape[d] = count_sym(G, site, &err);
            if (err) return err;
            continue;
        }
        /* (an op the analyzer added is never matched: no value-matched dims) */
        G->place = state || o->synth || !G->occ ? 0 : an_dim_key(o, G->occ + 3 * G->T->eop[0][t], q, d);
        shape[d] = an_gen_dim(G, G->vec, JN_IR_SYM_DIM, site, &err);
        G->place = 0;
        if (!err && !state && q < o->nin && !o->synth && !jn_ir_is_expr(shape[d]) && gen_extent(G, t, q, d))
            shape[d] = unmatched_sym(G, JN_IR_SYM_DIM, site, &err);
        if (err) return err;
    }
    return JN_OK;
}

/* The graph input for E0's external value v, first referenced by ref q of template op t. */
static jn_status gen_input(an_gen *G, int32_t v, int32_t t, int32_t q) {
    const an_ex *E0 = G->E[0];
    const an_op *o = eop(G, 0, t);
    const an_val *val = &E0->vals[v];
    const an_ref *r0 = &E0->refs[o->ref0 + q];
    jn_ir_dim shape[JN_MAX_DIMS];
    jn_status s;
    int32_t in;
    if (val->role == JN_TR_SCALAR) {
        /* its float slot: after the op's float attributes */
        const jn_opinfo *info = jn_op_info((jn_op)o->op);
        int32_t fs = 0;
        for (int k = 0; k < info->nattrs; k++) fs += info->attr_kind[k] == JN_A_FLOAT;
        for (int32_t k = 0; k < q; k++) fs += E0->refs[o->ref0 + k].role == JN_TR_SCALAR;
        in = jn_ir_input_add(G->g, JN_IR_IN_SCALAR, (jn_dtype)r0->dtype, r0->device, 0, shape, o->site);
        if (in < 0) return nomem();
        G->g->inputs[in].scalar = fslot_first(G, t, fs);
        G->g->inputs[in].pytype = r0->pytype;
        G->irval[v] = G->g->inputs[in].value;
        return an_guard_scalar_input(G, in, o->site);
    }
    jn_ir_input_kind kind = val->written || val->role == JN_TR_PARAM || val->role == JN_TR_STATE ? JN_IR_IN_STATE
                            : val->role == JN_TR_HOST                                       ? JN_IR_IN_HOST
                                                                                            : JN_IR_IN_CARRY;
    if ((s = gen_shape(G, t, q, o->site, shape, kind == JN_IR_IN_STATE))) return s;
    in = jn_ir_input_add(G->g, kind, (jn_dtype)r0->dtype, r0->device, r0->ndim, shape, o->site);
    if (in < 0) return nomem();
    int64_t bind = val->bind;
    for (int e = 1; e < G->m && bind; e++) {
        const an_ex *x = G->E[e];
        if (x->vals[x->refs[eop(G, e, t)->ref0 + q].val].bind != bind) bind = 0;
    }
    G->g->inputs[in].bind = kind == JN_IR_IN_STATE ? bind : 0;
    G->irval[v] = G->g->inputs[in].value;
    G->irin[v] = in;
    return an_guard_tensor_input(G, in, o->site);
}

/* Inputs for the externals first referenced by template op t (E0). */
static jn_status gen_op_inputs(an_gen *G, int32_t t) {
    const an_op *o = eop(G, 0, t);
    for (int32_t q = 0; q < o->nin + o->nout; q++) {
        int32_t v = G->ext_at_ref[o->ref0 + q];
        jn_status err;
        if (G->T->each_of_ref && G->T->each_of_ref[o->ref0 + q]) continue; /* stacked: gen_each */
        if (v >= 0 && G->irval[v] < 0 && (err = gen_input(G, v, t, q))) return err;
    }
    return JN_OK;
}

/* select(sv, 0, idx) of a [trip, ...] value (a collect, a stacked input),
 * in IR loop irloop (-1: outside loops). */
static jn_status gen_row(an_gen *G, int32_t sv, jn_ir_dim idx, int32_t irloop, int64_t site, int32_t *val) {
    jn_ir_value ty = G->g->values[sv];
    ty.kind = JN_IR_V_NODE;
    ty.ndim--;
    memmove(ty.shape, ty.shape + 1, sizeof(jn_ir_dim) * ty.ndim);
    jn_attrs a;
    memset(&a, 0, sizeof a);
    a.a[0].i = 0;
    a.a[1].i = idx;
    int32_t n = jn_ir_node_add(G->g, JN_OP_select, 1, &sv, &a, 1, &ty, site);
    if (n < 0) return nomem();
    if (irloop >= 0) G->g->nodes[n].loop = irloop;
    *val = G->g->nodes[n].out[0];
    return JN_OK;
}

/* Input q of body op t reads an outside tensor of its own per iteration
 * (an_tmpl.each_of_ref): select(in, 0, i) of a graph input stacked over
 * the loop's trip, made at the first such read of E0's iteration-0 value
 * (further reads of that tensor in the body select from the same input). */
static jn_status gen_each(an_gen *G, int32_t t, int32_t q, int64_t site, int32_t *val) {
    const an_op *o = eop(G, 0, t);
    const an_ref *r0 = &G->E[0]->refs[o->ref0 + q];
    int32_t v = r0->val, l = G->T->loop[t], L = G->irloop[l];
    jn_status err;
    if (G->irval[v] < 0) {
        jn_ir_dim shape[JN_MAX_DIMS];
        if (r0->ndim + 1 > JN_MAX_DIMS) return jn_error(JN_ERR_VALUE, "analyzer: a stacked input has too many dims");
        shape[0] = G->g->loops[L].trip;
        if ((err = gen_shape(G, t, q, site, shape + 1, 0))) return err;
        int32_t in = jn_ir_input_add(G->g, JN_IR_IN_CARRY, (jn_dtype)r0->dtype, r0->device, r0->ndim + 1, shape, site);
        if (in < 0) return nomem();
        G->irval[v] = G->g->inputs[in].value;
        G->irin[v] = in;
        if ((err = an_guard_tensor_input(G, in, site))) return err;
    }
    if ((err = gen_row(G, G->irval[v], jn_ir_sym_dim(G->g, G->ivar[l]), L, site, val))) return err;
    G->each_sel[o->ref0 + q] = *val;
    return JN_OK;
}

/* select(collect, 0, index) for cross-loop read k (an_txread) by template op t. */
static jn_status gen_xread(an_gen *G, int32_t k, int32_t t, int64_t site, int32_t *val) {
    const an_txread *X = &G->T->xr[k];
    int32_t cv = G->xcoll[k];
    if (cv < 0) return jn_error(JN_ERR_VALUE, "analyzer: internal error: loop value read before it was collected");
    jn_ir_dim trip = G->g->loops[G->irloop[X->src]].trip, idx;
    if (X->from_end) {
        int64_t off;
        if (__builtin_add_overflow(X->c, (int64_t)1, &off)) return jn_error(JN_ERR_VALUE, "analyzer: loop index overflow");
        idx = jn_ir_dim_op(G->g, JN_IR_E_SUB, trip, off);
        if (X->at >= 0) idx = jn_ir_dim_op(G->g, JN_IR_E_SUB, idx, jn_ir_sym_dim(G->g, G->ivar[X->at]));
    } else {
        idx = X->c;
        if (X->at >= 0) idx = jn_ir_dim_op(G->g, JN_IR_E_ADD, jn_ir_sym_dim(G->g, G->ivar[X->at]), X->c);
    }
    return gen_row(G, cv, idx, G->T->loop[t] >= 0 ? G->irloop[G->T->loop[t]] : -1, site, val);
}

/* select(in, 0, trip - 1) of the stacked input read at E0 ref src (an op
 * after its loop reading the loop's last iteration's tensor). */
static jn_status gen_eachlast(an_gen *G, int32_t src, int64_t site, int32_t *val) {
    int32_t sv = G->irval[G->E[0]->refs[src].val], l = G->T->each_of_ref[src] - 1;
    if (sv < 0 || l < 0) return jn_error(JN_ERR_VALUE, "analyzer: internal error: a stacked input read before its loop");
    return gen_row(G, sv, jn_ir_dim_op(G->g, JN_IR_E_SUB, G->g->loops[G->irloop[l]].trip, 1), -1, site, val);
}

static jn_status gen_node(an_gen *G, int32_t t) {
    G->pos_t = -1;
    const an_ex *E0 = G->E[0];
    const an_op *o = eop(G, 0, t);
    const jn_opinfo *info = jn_op_info((jn_op)o->op);
    jn_status err = gen_op_inputs(G, t);
    if (err) return err;
    int32_t in[JN_MAX_INS];
    for (int j = 0; j < o->nin; j++) {
        int32_t r = o->ref0 + j, cr = G->T->carry_of_ref ? G->T->carry_of_ref[r] : 0;
        int32_t v = E0->refs[r].val;
        if (cr) { /* loop-carried: the carry's parameter inside the body */
            int32_t l = G->T->loop[t];
            in[j] = G->g->loops[G->irloop[l]].carry[cr - 1].param;
            continue;
        }
        int32_t xr = G->T->xread_of_ref ? G->T->xread_of_ref[r] : 0;
        if (xr) {
            if ((err = gen_xread(G, xr - 1, t, o->site, &in[j]))) return err;
            continue;
        }
        if (G->T->each_of_ref && G->T->each_of_ref[r]) {
            if ((err = gen_each(G, t, j, o->site, &in[j]))) return err;
            continue;
        }
        if (G->T->eachlast_of_ref && G->T->eachlast_of_ref[r]) { /* after the loop: its last iteration's */
            if ((err = gen_eachlast(G, G->T->eachlast_of_ref[r] - 1, o->site, &in[j]))) return err;
            continue;
        }
        if (G->eprev && G->eprev[r]) { /* the previous iteration's stacked read */
            in[j] = G->g->loops[G->irloop[G->T->loop[t]]].carry[G->eprev[r] - 1].param;
            continue;
        }
        if (G->irval[v] < 0) return jn_error(JN_ERR_VALUE, "analyzer: internal error: value %d used before defined", v);
        in[j] = G->irval[v];
    }
    jn_attrs a;
    memset(&a, 0, sizeof a);
    for (int k = 0; k < o->nattrs; k++) a.a[k] = E0->attrv[o->attr0 + k];
    int32_t attr_input[JN_MAX_ATTRS];
    int32_t is = 0, fs = 0;
    for (int k = 0; k < JN_MAX_ATTRS; k++) attr_input[k] = -1;
    for (int k = 0; k < info->nattrs; k++) {
        switch (info->attr_kind[k]) {
        case JN_A_INTS:
            for (int j = 0; j < a.a[k].l.n; j++) {
                a.a[k].l.v[j] = gen_islot(G, t, is++, o->site, &err);
                if (err) return err;
            }
            break;
        case JN_A_FLOAT: {
            double first = fslot_first(G, t, fs), fixed = 0;
            int share = fslot_fixed(G, t, fs++, &fixed) && !isnan(fixed);
            a.a[k].f = first;
            an_fshare *sh = NULL;
            for (int64_t q = 0; share && q < G->nfsh && !sh; q++) {
                an_fshare *c = &G->fsh[q];
                if (c->site == o->site && c->op == o->op && c->attr == k && !memcmp(&c->x, &fixed, sizeof fixed))
                    sh = c;
            }
            if (sh) {
                attr_input[k] = sh->value;
                break;
            }
            jn_ir_dim none[1] = {0};
            int32_t x = jn_ir_input_add(G->g, JN_IR_IN_SCALAR, JN_F64, 0, 0, none, o->site);
            if (x < 0) return nomem();
            G->g->inputs[x].scalar = first;
            G->g->inputs[x].pytype = 2;
            attr_input[k] = G->g->inputs[x].value;
            an_use_site(G->c, o->site);
            if (share) {
                if (an_grow(&G->fsh, &G->capfsh, G->nfsh + 1, sizeof *G->fsh)) return nomem();
                G->fsh[G->nfsh++] = (an_fshare){o->site, (int32_t)o->op, k, attr_input[k], fixed};
            }
            break;
        }
        case JN_A_BOOL: case JN_A_DTYPE:
            break;
        default:
            if ((info->flags & JN_F_RAND) && !strcmp(info->attr_name[k], "offset")) {
                if (G->rng < 0) {
                    int64_t lo = INT64_MAX, hi = INT64_MIN;
                    for (int e = 0; e < G->m; e++) {
                        if (G->E[e]->rng_lo < lo) lo = G->E[e]->rng_lo;
                        if (G->E[e]->rng_hi > hi) hi = G->E[e]->rng_hi;
                    }
                    snprintf(G->what, sizeof G->what, "the Philox offset at the first random op (%s)", info->name);
                    if ((G->rng = an_gen_sym(G, "rng", JN_IR_SYM_RNG, lo, hi, o->site)) < 0) return nomem();
                    if (!(G->rng_vec = malloc(sizeof(int64_t) * (size_t)G->m))) return nomem();
                    for (int e = 0; e < G->m; e++) G->rng_vec[e] = G->E[e]->rng_first;
                }
                /* the distance from the first random op (0 for the first; in a
                 * loop body, a step of the op's numel per iteration): outside
                 * loops the numel of the random ops before it, an expression of
                 * this graph's dims (a first step seen once, its shapes
                 * symbols, keeps the relation where its batch differs) */
                int exact = G->rng_exact && G->T->loop[t] < 0 && !o->synth;
                for (int e = 0; e < G->m && exact; e++) {
                    const an_islot *x = &G->E[e]->islots[eop(G, e, t)->islot0 + is];
                    exact = !x->varied && x->first == G->rng_sum[e];
                }
                if (!exact) G->rng_exact = 0;
                jn_ir_dim d = exact ? G->rng_dist : gen_islot(G, t, is, o->site, &err);
                is++;
                if (err) return err;
                a.a[k].i = d == 0 ? jn_ir_sym_dim(G->g, G->rng)
                                  : jn_ir_dim_op(G->g, JN_IR_E_ADD, jn_ir_sym_dim(G->g, G->rng), d);
            } else {
                a.a[k].i = gen_islot(G, t, is++, o->site, &err);
                if (err) return err;
            }
        }
    }
    jn_ir_value types[JN_MAX_OUTS];
    memset(types, 0, sizeof types);
    for (int j = 0; j < o->nout; j++) {
        const an_ref *rr = &E0->refs[o->ref0 + o->nin + j];
        types[j].dtype = (jn_dtype)rr->dtype;
        types[j].device = rr->device;
        types[j].ndim = rr->ndim;
        if ((err = gen_shape(G, t, o->nin + j, o->site, types[j].shape, 0))) return err;
    }
    /* a splice's result is the parent's new value: the parent's type */
    if ((o->op == JN_OP_slice_scatter || o->op == JN_OP_select_scatter) && o->nin > 0 &&
        G->g->values[in[0]].ndim == types[0].ndim)
        memcpy(types[0].shape, G->g->values[in[0]].shape, sizeof types[0].shape);
    int32_t n = jn_ir_node_add(G->g, (jn_op)o->op, o->nin, in, &a, o->nout, types, o->site);
    if (n < 0) return nomem();
    if ((info->flags & JN_F_RAND) && G->rng_exact) { /* the next random op's distance: + this one's numel */
        int ok = 1;
        for (int e = 0; e < G->m && ok; e++) { /* as recorded (a corrupt store's shapes overflow: not exact) */
            const an_ref *rr = &G->E[e]->refs[eop(G, e, t)->ref0 + o->nin];
            int64_t k = 1;
            for (int d = 0; d < rr->ndim && ok; d++) ok = !__builtin_mul_overflow(k, rr->shape[d], &k);
            ok = ok && !__builtin_add_overflow(G->rng_sum[e], k, &G->rng_sum[e]);
        }
        jn_ir_dim numel = 1;
        for (int d = 0; d < types[0].ndim && ok && numel != JN_IR_DIM_ERROR; d++)
            numel = jn_ir_dim_op(G->g, JN_IR_E_MUL, numel, types[0].shape[d]);
        jn_ir_dim sum = !ok || numel == JN_IR_DIM_ERROR ? JN_IR_DIM_ERROR
                                                        : jn_ir_dim_op(G->g, JN_IR_E_ADD, G->rng_dist, numel);
        if (sum == JN_IR_DIM_ERROR) G->rng_exact = 0;
        else G->rng_dist = sum;
    }
    memcpy(G->g->nodes[n].attr_input, attr_input, sizeof attr_input);
    G->node_of[t] = n;
    if (G->T->loop[t] >= 0) G->g->nodes[n].loop = G->irloop[G->T->loop[t]];
    an_use_site(G->c, o->site);
    for (int j = 0; j < o->nout; j++) G->irval[E0->refs[o->ref0 + o->nin + j].val] = G->g->nodes[n].out[j];
    return JN_OK;
}

/* The IR value of body op j's output idx in loop TL (iteration 0 of E0). */
static int32_t kept_body(const an_gen *G, const an_tloop *TL, int32_t j, int idx) {
    const an_op *b = &G->E[0]->ops[TL->estart[0] + j];
    return G->irval[G->E[0]->refs[b->ref0 + b->nin + idx].val];
}

/* IR loop L's collect of body value `body`, added once: its out (-1 on OOM). */
static int32_t loop_collect(an_gen *G, int32_t L, int32_t body) {
    const jn_ir_loop *gl = &G->g->loops[L];
    for (int32_t c = 0; c < gl->ncollect; c++)
        if (gl->collect[c].body == body) return gl->collect[c].out;
    int32_t c = jn_ir_loop_collect(G->g, L, body);
    return c < 0 ? -1 : G->g->loops[L].collect[c].out;
}

/* A loop of the template: trip symbol, induction variable, carries, body,
 * carried-out values, collects. */
static jn_status gen_loop(an_gen *G, int32_t l) {
    const an_tloop *TL = &G->T->loops[l];
    const an_ex *E0 = G->E[0];
    jn_status err = JN_OK;
    /* externals the body reads: graph inputs, created before the loop */
    for (int32_t j = 0; j < TL->p; j++)
        if ((err = gen_op_inputs(G, TL->tfirst + j))) return err;
    int64_t site = eop(G, 0, TL->tfirst)->site, lo = INT64_MAX, hi = INT64_MIN;
    for (int e = 0; e < G->m; e++) {
        G->vec[e] = TL->count[e];
        if (TL->count[e] < lo) lo = TL->count[e];
        if (TL->count[e] > hi) hi = TL->count[e];
    }
    snprintf(G->what, sizeof G->what, "the trip count of a loop");
    jn_ir_dim trip = an_gen_dim(G, G->vec, JN_IR_SYM_DIM, site, &err);
    if (err) return err;
    int32_t iv = an_gen_sym(G, "i", JN_IR_SYM_IVAR, 0, hi - 1, site);
    if (iv < 0) return nomem();
    G->ivar[l] = iv;
    int32_t L = jn_ir_loop_add(G->g, -1, G->g->nnodes, TL->p, trip, iv);
    if (L < 0) return nomem();
    G->irloop[l] = L;
    G->trip_lo[L] = lo;
    G->trip_hi[L] = hi;
    G->ntrip = L + 1;
    for (int32_t k = 0; k < TL->ncarry; k++) {
        int32_t init = G->irval[TL->carry[k].init];
        if (init < 0)
            return jn_error(JN_ERR_VALUE, "analyzer: internal error: loop seed %d undefined", TL->carry[k].init);
        if (jn_ir_loop_carry(G->g, L, init) != k) return nomem();
    }
    /* reads of the stacked read's previous iteration: carries seeded by the
     * tensor iteration 0 reads, whose next is that iteration's select */
    for (int32_t j = 0; j < TL->p && G->T->eachprev_of_ref; j++) {
        const an_op *b = &E0->ops[TL->estart[0] + j];
        for (int q = 0; q < b->nin; q++) {
            int32_t r = b->ref0 + q;
            if (!G->T->eachprev_of_ref[r]) continue;
            int32_t init = G->irval[E0->refs[r].val];
            if (init < 0) return jn_error(JN_ERR_VALUE, "analyzer: internal error: a stacked read's seed is undefined");
            int32_t k = jn_ir_loop_carry(G->g, L, init);
            if (k < 0) return nomem();
            G->eprev[r] = k + 1;
        }
    }
    int32_t first = G->g->nnodes;
    for (int32_t j = 0; j < TL->p; j++)
        if ((err = gen_node(G, TL->tfirst + j))) return err;
    G->g->loops[L].count = G->g->nnodes - first; /* with the selects of cross-loop reads */
    int32_t s0 = TL->estart[0], K = TL->count[0];
    for (int32_t k = 0; k < TL->ncarry; k++) {
        const an_op *nx = &E0->ops[s0 + TL->carry[k].next_j];
        const an_op *last = &E0->ops[s0 + (K - 1) * TL->p + TL->carry[k].next_j];
        jn_ir_loop *gl = &G->g->loops[L];
        gl->carry[k].next = G->irval[E0->refs[nx->ref0 + nx->nin + TL->carry[k].next_idx].val];
        G->irval[E0->refs[last->ref0 + last->nin + TL->carry[k].next_idx].val] = gl->carry[k].out;
    }
    for (int32_t j = 0; j < TL->p && G->T->eachprev_of_ref; j++) {
        const an_op *b = &E0->ops[s0 + j];
        for (int q = 0; q < b->nin; q++) {
            int32_t r = b->ref0 + q, src = G->T->eachprev_of_ref[r] - 1;
            if (src < 0) continue;
            if (G->each_sel[src] < 0)
                return jn_error(JN_ERR_VALUE, "analyzer: internal error: a stacked read follows none");
            G->g->loops[L].carry[G->eprev[r] - 1].next = G->each_sel[src];
        }
    }
    for (int32_t k = 0; k < TL->ncoll; k++) {
        const an_op *b = &E0->ops[s0 + TL->coll[k].body_j];
        int32_t c = jn_ir_loop_collect(G->g, L, G->irval[E0->refs[b->ref0 + b->nin + TL->coll[k].body_idx].val]);
        if (c < 0) return nomem();
        G->coll_out[TL->coll[k].consumer] = G->g->loops[L].collect[c].out;
    }
    /* body values later loops or ops read by index: collected (once per value) */
    for (int32_t k = 0; k < G->T->nxr; k++) {
        const an_txread *X = &G->T->xr[k];
        if (X->src != l) continue;
        const an_op *b = &E0->ops[s0 + X->j];
        int32_t body = G->irval[E0->refs[b->ref0 + b->nin + X->idx].val];
        jn_ir_loop *gl = &G->g->loops[L];
        if (X->param) { /* the input of the carry whose next this is */
            int32_t k2 = 0;
            while (k2 < TL->ncarry && (TL->carry[k2].next_j != X->j || TL->carry[k2].next_idx != X->idx)) k2++;
            if (k2 == TL->ncarry)
                return jn_error(JN_ERR_VALUE, "analyzer: internal error: a read of a carry's input without the carry");
            body = gl->carry[k2].param;
        }
        if ((G->xcoll[k] = loop_collect(G, L, body)) < 0) return nomem();
    }
    /* body values Python keeps from every iteration: collected (graph outputs) */
    for (int32_t j = 0; j < TL->p; j++)
        for (int idx = 0; idx < JN_MAX_OUTS; idx++)
            if (TL->kept[j] >> idx & 1 && loop_collect(G, L, kept_body(G, TL, j, idx)) < 0) return nomem();
    return JN_OK;
}

/* stack/cat over a loop's collected values: the collect [trip, ...] moved
 * into place (stack(dim=d) == permute moving dim 0 to d and a clone, since
 * stack's result is contiguous; cat(dim=d) == that and a view merging dims
 * d and d+1). */
static jn_status gen_consumer(an_gen *G, int32_t t) {
    const an_ex *E0 = G->E[0];
    const an_op *o = eop(G, 0, t);
    int32_t cv = G->coll_out[t];
    jn_ir_value ty = G->g->values[cv];
    int r = ty.ndim - 1; /* rank of one item */
    int64_t d = E0->islots[o->islot0].first;
    int stack = o->op == JN_OP_stack;
    if (d < 0) d += stack ? r + 1 : r;
    assert(d >= 0 && d <= (stack ? r : r - 1)); /* checked by loops.c */
    int32_t cur = cv;
    jn_ir_value out = ty;
    out.kind = JN_IR_V_NODE;
    if (d > 0) {
        jn_attrs a;
        memset(&a, 0, sizeof a);
        a.a[0].l.n = r + 1;
        for (int i = 0; i <= r; i++) {
            int src = i < d ? i + 1 : i == d ? 0 : i;
            a.a[0].l.v[i] = src;
            out.shape[i] = ty.shape[src];
        }
        int32_t n = jn_ir_node_add(G->g, JN_OP_permute, 1, &cur, &a, 1, &out, o->site);
        if (n < 0) return nomem();
        cur = G->g->nodes[n].out[0];
        /* stack and cat return contiguous tensors: later view()s rely on it */
        n = jn_ir_node_add(G->g, JN_OP_clone, 1, &cur, NULL, 1, &out, o->site);
        if (n < 0) return nomem();
        cur = G->g->nodes[n].out[0];
    }
    if (!stack) {
        jn_ir_value v = out;
        jn_attrs a;
        memset(&a, 0, sizeof a);
        v.ndim = (uint8_t)r;
        for (int i = 0, k = 0; i <= r; i++) {
            if (i == d + 1) continue;
            v.shape[k++] = i == d ? jn_ir_dim_op(G->g, JN_IR_E_MUL, out.shape[d], out.shape[d + 1]) : out.shape[i];
        }
        a.a[0].l.n = r;
        for (int i = 0; i < r; i++) a.a[0].l.v[i] = v.shape[i];
        int32_t n = jn_ir_node_add(G->g, JN_OP_view, 1, &cur, &a, 1, &v, o->site);
        if (n < 0) return nomem();
        cur = G->g->nodes[n].out[0];
    }
    an_use_site(G->c, o->site);
    G->irval[E0->refs[o->ref0 + o->nin].val] = cur;
    return JN_OK;
}

/* The value of template op t's output j that leaves the segment in exemplar
 * e: the op's own, or the last iteration's inside a loop. */
static const an_val *final_val(an_gen *G, int e, int32_t t, int j) {
    const an_ex *x = G->E[e];
    const an_tloop *L = loop_of(G, t);
    int32_t o = G->T->eop[e][t];
    if (L) o += (L->count[e] - 1) * L->p;
    return &x->vals[x->refs[x->ops[o].ref0 + x->ops[o].nin + j].val];
}

static const char *sync_word(int k) { return k ? jn_db_sync_call(k) : "step"; }

/* *kb (per template op and output): the base of a kept view that shows
 * only part of its bytes, or in another order (a transpose, a slice),
 * where the base is made here and outside loops.  Replay fills a kept view
 * by copying into its base's memory, which is whole only where the base is
 * filled too: another holder of that memory (autograd's alias of the view)
 * would otherwise leave the graph's run undecidable ("keeps only in part").
 * The base's memory is alive anyway, so keeping it costs no memory. */
static jn_status kept_bases(an_gen *G, uint8_t **kb) {
    const an_ex *E0 = G->E[0];
    const an_tmpl *T = G->T;
    int32_t *tof = malloc(sizeof(int32_t) * ((size_t)E0->nops + 1));
    *kb = calloc((size_t)T->nt * JN_MAX_OUTS + 1, 1);
    if (!tof || !*kb) {
        free(tof);
        return nomem();
    }
    for (int32_t o = 0; o < E0->nops; o++) tof[o] = -1;
    for (int32_t t = 0; t < T->nt; t++)
        if (T->loop[t] < 0) tof[T->eop[0][t]] = t;
    for (int32_t t = 0; t < T->nt; t++) {
        const an_op *o = eop(G, 0, t);
        if (T->loop[t] >= 0 || !(jn_op_info((jn_op)o->op)->flags & JN_F_VIEW) || o->op == JN_OP_view ||
            o->op == JN_OP_squeeze || o->op == JN_OP_unsqueeze)
            continue;
        int keep = 0;
        for (int e = 0; e < G->m; e++) keep |= final_val(G, e, t, 0)->keep;
        if (!keep) continue;
        const an_val *b = &E0->vals[E0->refs[o->ref0].val];
        while (b->def >= 0 && (jn_op_info((jn_op)E0->ops[b->def].op)->flags & JN_F_VIEW))
            b = &E0->vals[E0->refs[E0->ops[b->def].ref0].val];
        if (b->def < 0 || tof[b->def] < 0 || E0->ops[b->def].synth) continue; /* (no token to fill) */
        /* the base object's final value (no later write into it) */
        const an_op *bo = &E0->ops[b->def];
        int32_t obj = E0->refs[bo->ref0 + bo->nin + b->idx].obj, bv = (int32_t)(b - E0->vals), last = 1;
        for (int32_t k = b->def + 1; k < E0->nops && last; k++)
            for (int q = 0; q < E0->ops[k].nout && last; q++) {
                const an_ref *r = &E0->refs[E0->ops[k].ref0 + E0->ops[k].nin + q];
                last = r->obj != obj || r->val == bv;
            }
        if (last) (*kb)[tof[b->def] * JN_MAX_OUTS + b->idx] = 1;
    }
    free(tof);
    return JN_OK;
}

/* Graph output g->noutputs - 1 came from template op t's output j (for the matcher). */
static int note_out(an_gen *G, int32_t t, int j, int all) {
    int64_t cap = G->g->noutputs - 1, cap2 = cap, cap3 = cap;
    if (an_grow(&G->out_t, &cap, G->g->noutputs, sizeof *G->out_t) ||
        an_grow(&G->out_j, &cap2, G->g->noutputs, sizeof *G->out_j) ||
        an_grow(&G->out_all, &cap3, G->g->noutputs, sizeof *G->out_all))
        return -1;
    G->out_t[G->g->noutputs - 1] = t;
    G->out_j[G->g->noutputs - 1] = j;
    G->out_all[G->g->noutputs - 1] = (uint8_t)all;
    return 0;
}

jn_status an_generalize(an_ctx *c, const an_struct *s, const an_group *grp, jn_ir_graph *g) {
    return an_generalize_checked(c, s, grp, g, NULL);
}

jn_status an_generalize_checked(an_ctx *c, const an_struct *s, const an_group *grp, jn_ir_graph *g,
                                const char **why) {
    if (why) *why = NULL;
    an_gen G;
    memset(&G, 0, sizeof G);
    G.c = c;
    G.g = g;
    G.m = s->nex;
    G.rng = -1;
    G.rng_exact = 1;
    G.rng_dist = 0;
    G.pos_t = -1;
    G.T = s->tmpl;
    jn_status err = JN_OK;
    const an_ex *E0 = &c->ex[s->ex[0]];
    int32_t nl = G.T->nloops;
    G.E = malloc(sizeof *G.E * (size_t)G.m);
    G.vec = malloc(sizeof(int64_t) * (size_t)G.m);
    G.irval = malloc(sizeof(int32_t) * (size_t)(E0->nvals + 1));
    G.irin = malloc(sizeof(int32_t) * (size_t)(E0->nvals + 1));
    G.ext_at_ref = malloc(sizeof(int32_t) * (size_t)(E0->nrefs + 1));
    G.coll_out = malloc(sizeof(int32_t) * (size_t)(G.T->nt + 1));
    G.ivar = calloc((size_t)nl + 1, sizeof(int32_t));
    G.irloop = calloc((size_t)nl + 1, sizeof(int32_t));
    G.trip_lo = calloc((size_t)nl + 1, sizeof(int64_t));
    G.trip_hi = calloc((size_t)nl + 1, sizeof(int64_t));
    G.xcoll = malloc(sizeof(int32_t) * (size_t)(G.T->nxr + 1));
    G.each_sel = malloc(sizeof(int32_t) * (size_t)(E0->nrefs + 1));
    G.eprev = calloc((size_t)E0->nrefs + 1, sizeof(int32_t));
    G.node_of = malloc(sizeof(int32_t) * (size_t)(G.T->nt + 1));
    G.rng_sum = calloc((size_t)G.m + 1, sizeof(int64_t));
    if (op_occ(E0, &G.occ)) {
        err = nomem();
        goto done;
    }
    if (!G.node_of || !G.rng_sum || !G.each_sel || !G.eprev ||
        !G.xcoll || !G.E || !G.vec || !G.irval || !G.irin || !G.ext_at_ref || !G.coll_out || !G.ivar || !G.irloop ||
        !G.trip_lo || !G.trip_hi) {
        err = nomem();
        goto done;
    }
    for (int e = 0; e < G.m; e++) G.E[e] = &c->ex[s->ex[e]];
    for (int32_t v = 0; v < E0->nvals; v++) G.irval[v] = G.irin[v] = -1;
    for (int32_t r = 0; r < E0->nrefs; r++) G.ext_at_ref[r] = G.each_sel[r] = -1;
    for (int32_t t = 0; t < G.T->nt; t++) G.coll_out[t] = G.node_of[t] = -1;
    for (int32_t k = 0; k < G.T->nxr; k++) G.xcoll[k] = -1;
    for (int32_t v = 0; v < E0->nvals; v++)
        if (E0->vals[v].def < 0 && E0->vals[v].ref >= 0) G.ext_at_ref[E0->vals[v].ref] = v;

    /* header */
    char buf[600], site[512];
    g->group = s->group;
    g->variant = s->variant;
    g->parent = s->parent;
    g->diverge = s->diverge;
    g->decided = s->decided;
    if (s->decided) an_use_site(c, s->decided);
    g->support = s->support;
    g->step_lo = INT64_MAX;
    g->step_hi = INT64_MIN;
    for (int e = 0; e < G.m; e++) {
        if (G.E[e]->step_lo < g->step_lo) g->step_lo = G.E[e]->step_lo;
        if (G.E[e]->step_hi > g->step_hi) g->step_hi = G.E[e]->step_hi;
    }
    if (grp->prev_kind) snprintf(buf, sizeof buf, "after %s at %s", sync_word(grp->prev_kind),
                                 an_site_str(c, grp->prev_site, site, sizeof site));
    else snprintf(buf, sizeof buf, "step start");
    g->entry = jn_ir_intern(g, buf);
    if (E0->exit_kind) snprintf(buf, sizeof buf, "%s at %s", sync_word(E0->exit_kind),
                                an_site_str(c, E0->exit_site, site, sizeof site));
    else snprintf(buf, sizeof buf, "step end");
    g->exit = jn_ir_intern(g, buf);
    if (!g->entry || !g->exit) {
        err = nomem();
        goto done;
    }

    if ((err = an_counts(&G))) goto done;
    for (int32_t t = 0; t < G.T->nt && !err;) {
        int32_t l = G.T->loop[t];
        if (l >= 0) {
            err = gen_loop(&G, l);
            t += G.T->loops[l].p;
        } else {
            err = G.coll_out[t] >= 0 ? gen_consumer(&G, t) : gen_node(&G, t);
            t++;
        }
    }
    if (err) goto done;

    /* outputs: state write-backs, then values Python keeps (template order) */
    uint8_t *kbase = NULL;
    if ((err = kept_bases(&G, &kbase))) goto done;
    for (int pass = 0; pass < 2 && !err; pass++)
        for (int32_t t = 0; t < G.T->nt && !err; t++) {
            const an_op *o = eop(&G, 0, t);
            for (int j = 0; j < o->nout; j++) {
                const an_val *fv = final_val(&G, 0, t, j);
                int32_t v = (int32_t)(fv - E0->vals), w = fv->overwrites;
                if (pass == 0) {
                    if (w < 0) continue;
                    if (G.irin[w] < 0 || G.irval[v] < 0) {
                        err = jn_error(JN_ERR_VALUE, "analyzer: internal error: state write of value %d has no input",
                                       v);
                        break;
                    }
                    if (jn_ir_output_add(g, JN_IR_OUT_STATE, G.irval[v], G.irin[w]) < 0 || note_out(&G, t, j, 0))
                        err = nomem();
                    continue;
                }
                const an_tloop *TL = loop_of(&G, t);
                if (TL && TL->kept[t - TL->tfirst] >> j & 1) { /* every iteration's object */
                    int32_t cv = loop_collect(&G, G.irloop[G.T->loop[t]], kept_body(&G, TL, t - TL->tfirst, j));
                    if (cv < 0 || jn_ir_output_add(g, JN_IR_OUT_KEEP, cv, -1) < 0 || note_out(&G, t, j, 1))
                        err = nomem();
                    continue;
                }
                int keep = 0, live = 0;
                for (int e = 0; e < G.m; e++) {
                    keep |= final_val(&G, e, t, j)->keep;
                    live |= final_val(&G, e, t, j)->live;
                }
                /* alive but never read: kept too (in a loop, only where the
                 * last iteration's value is a carry's out, a loss summed in
                 * the time loop: another body value would need every
                 * iteration's; replay recomputes it if read) */
                if (!keep && live) keep = 1;
                keep |= kbase[t * JN_MAX_OUTS + j];
                if (!keep || w >= 0 || G.irval[v] < 0) continue;
                if (jn_ir_output_add(g, JN_IR_OUT_KEEP, G.irval[v], -1) < 0 || note_out(&G, t, j, 0)) err = nomem();
            }
        }
    free(kbase);
    if (!err) err = an_guard_symbols(&G);
    if (!err && why) {
        *why = an_selfcheck(&G);
        if (*why && !strcmp(*why, "out of memory")) err = nomem();
    }
    /* the matcher's program, for graphs of the module (not align.c's scratch ones) */
    if (!err && !(why && *why) && c->m && c->m->ngraphs > 0 && c->m->graphs[c->m->ngraphs - 1] == g)
        err = an_matcher_build(&G, c->m->ngraphs - 1, grp->prev_kind);
done:
    for (int64_t k = 0; k < G.ncands; k++) free(G.cands[k].vec), free(G.cands[k].firsts);
    free(G.cands);
    free(G.E);
    free(G.vec);
    free(G.irval);
    free(G.irin);
    free(G.ext_at_ref);
    free(G.xcoll);
    free(G.each_sel);
    free(G.eprev);
    free(G.rng_vec);
    free(G.rng_sum);
    free(G.coll_out);
    free(G.ivar);
    free(G.irloop);
    free(G.trip_lo);
    free(G.trip_hi);
    free(G.sym_note);
    free(G.fsh);
    free(G.node_of);
    free(G.occ);
    free(G.out_t);
    free(G.out_j);
    free(G.out_all);
    free(G.cval);
    free(G.cslot);
    free(G.cfirsts);
    return err;
}
