/* counts.c -- which dims and int attributes of a segment are a count the
 * data decides (a bool mask's), for generalize.c.
 *
 * Indices read from a tensor's values (a mask's coordinates for
 * `out[keep]`, `nonzero`; repeat_interleave's: refs of role JN_TR_DATAIDX)
 * have a count as dim 0 that the data decides, not the program.
 * When it never changed while recording (a mask that kept every row) the
 * recording alone would make it a constant, and the graph would miss on
 * the first step that drops a row.  So it is a symbol from that one value
 * (count_sym in generalize.c), and this pass finds what moves with it.
 *
 * By data flow, not by equal values: a batch of 64 whose mask kept all 64
 * rows has many 64s and one count.  Each op of exemplar 0 has its shapes
 * inferred again (jn_op_infer, on metadata headers) with the count moved
 * by AN_COUNT_BY wherever it is known to be:
 *   - output dims that move by as much are the count;
 *   - where the shapes no longer fit, an int attribute of the count's
 *     value that makes them fit is it (a view to [n, 1]); else an input
 *     dim of that value that makes them fit is (autograd's expand of a
 *     sum's gradient to the recorded [n], multiplied with a [count] one),
 *     and the op that made that input learns it on the next sweep;
 *   - an output dim known to be the count that did not move is made by an
 *     int attribute or an input dim that moves it (the expand's shape).
 * Sweeps repeat until nothing changes (at most AN_COUNT_SWEEPS).  A wrong
 * guess costs hits, never numbers: the matcher checks every output shape
 * and attribute against the graph's, and selfcheck every exemplar. */
#include <stdlib.h>
#include <string.h>

#include "an_internal.h"

#define AN_COUNT_BY 1009   /* a count moved by this: far from any value a dim near it holds by chance */
#define AN_COUNT_SWEEPS 4
#define AN_COUNT_MAX 100   /* counts told apart per graph (ids fit an int8_t) */

/* jn_op_infer for op o of exemplar E on headers of its recorded inputs'
 * metadata, input j's dim d moved by mv[j][d], with attributes a.  Nonzero
 * when it cannot say: a failed inference (the moved shapes disagree).
 * Headers are contiguous, so a stride-dependent inference (a view of an
 * expanded tensor) may fit where the op would not: a guess the matcher's
 * shape check refuses, never a wrong number. */
static int probe(const an_ex *E, const an_op *o, const jn_attrs *a, int64_t (*mv)[JN_MAX_DIMS], jn_meta *out) {
    jn_tensor *x[JN_MAX_INS] = {0};
    int bad = o->nin > JN_MAX_INS || o->nout > JN_MAX_OUTS;
    for (int j = 0; j < o->nin && !bad; j++) {
        const an_ref *r = &E->refs[o->ref0 + j];
        jn_meta m = {(jn_dtype)r->dtype, r->ndim, {0}};
        for (int d = 0; d < r->ndim; d++) m.shape[d] = r->shape[d] + mv[j][d];
        bad = !(x[j] = jn_tensor_new_meta(&m));
        if (!bad && r->role == JN_TR_SCALAR) x[j]->wrapped_number = 1;
    }
    bad = bad || jn_op_infer((jn_op)o->op, o->nin, x, a, out) != JN_OK;
    for (int j = 0; j < o->nin && j < JN_MAX_INS; j++)
        if (x[j]) jn_tensor_decref(x[j]);
    return bad;
}

/* Int slot s of attributes a (gen_islot's numbering), NULL past the last. */
static int64_t *slot_of(const jn_opinfo *info, jn_attrs *a, int s) {
    for (int k = 0, n = 0; k < info->nattrs; k++) {
        int w = info->attr_kind[k] == JN_A_INTS ? a->a[k].l.n : info->attr_kind[k] == JN_A_INT;
        if (s < n + w) return info->attr_kind[k] == JN_A_INTS ? &a->a[k].l.v[s - n] : &a->a[k].i;
        n += w;
    }
    return NULL;
}

/* The seeds: dim 0 of every mask coordinate tensor the segment takes in,
 * the same value n > 1 in every exemplar (one that varied is a symbol by
 * the evidence already); coordinates of one count share its id. */
static jn_status seed(an_gen *G) {
    const an_ex *E0 = G->E[0];
    for (int32_t t = 0; t < G->T->nt; t++) {
        const an_op *o = &E0->ops[G->T->eop[0][t]];
        for (int q = 0; q < o->nin; q++) {
            const an_ref *r = &E0->refs[o->ref0 + q];
            if (r->role != JN_TR_DATAIDX || r->ndim < 1 || r->val < 0 || E0->vals[r->val].def >= 0) continue;
            int same = 1;
            for (int e = 0; e < G->m; e++) {
                G->vec[e] = G->E[e]->refs[G->E[e]->ops[G->T->eop[e][t]].ref0 + q].shape[0];
                same &= G->vec[e] == G->vec[0];
            }
            if (!same || G->vec[0] <= 1) continue;
            int id = 0;
            for (int k = 0; k < G->ncnt && !id; k++)
                if (!memcmp(&G->cfirsts[(size_t)k * (size_t)G->m], G->vec, sizeof(int64_t) * (size_t)G->m)) id = k + 1;
            if (!id) {
                if (G->ncnt >= AN_COUNT_MAX) continue;
                int64_t *f = realloc(G->cfirsts, sizeof(int64_t) * (size_t)G->m * (size_t)(G->ncnt + 1));
                if (!f) return jn_error(JN_ERR_NOMEM, "analyzer: out of memory");
                G->cfirsts = f;
                memcpy(&f[(size_t)G->ncnt * (size_t)G->m], G->vec, sizeof(int64_t) * (size_t)G->m);
                id = ++G->ncnt;
            }
            G->cval[r->val][0] = (int8_t)id;
        }
    }
    return JN_OK;
}

/* Op i of exemplar 0 and count id (value n): one step of the rules in the
 * header.  Returns whether a value's count dims grew. */
static int step_op(an_gen *G, int32_t i, int id, const jn_meta *base) {
    const an_ex *E0 = G->E[0];
    const an_op *o = &E0->ops[i];
    const jn_opinfo *info = jn_op_info((jn_op)o->op);
    int64_t n = G->cfirsts[(size_t)(id - 1) * (size_t)G->m];
    int64_t mv[JN_MAX_INS][JN_MAX_DIMS];
    jn_meta moved[JN_MAX_OUTS];
    jn_attrs a;
    memset(&a, 0, sizeof a);
    for (int k = 0; k < o->nattrs; k++) a.a[k] = E0->attrv[o->attr0 + k];
    memset(mv, 0, sizeof mv);
    int uses = 0, marked = 0, changed = 0;
    for (int j = 0; j < o->nin; j++) {
        const an_ref *r = &E0->refs[o->ref0 + j];
        for (int d = 0; d < r->ndim && r->val >= 0; d++)
            if (G->cval[r->val][d] == id) mv[j][d] = AN_COUNT_BY, uses = 1;
    }
    for (int j = 0; j < o->nout; j++) {
        const an_ref *r = &E0->refs[o->ref0 + o->nin + j];
        for (int d = 0; d < r->ndim && r->val >= 0; d++) marked |= G->cval[r->val][d] == id;
    }
    if (!uses && !marked) return 0;
    for (int s = 0; s < AN_COUNT_SLOTS; s++) {
        int64_t *x = slot_of(info, &a, s);
        if (!x) break;
        if (G->cslot[i][s] == id) *x += AN_COUNT_BY;
    }
    int fit = !probe(E0, o, &a, mv, moved);
    for (int s = 0; s < AN_COUNT_SLOTS && !fit; s++) { /* an attribute that moves with it */
        int64_t *x = slot_of(info, &a, s);
        if (!x) break;
        if (*x != n || G->cslot[i][s]) continue;
        *x += AN_COUNT_BY;
        if ((fit = !probe(E0, o, &a, mv, moved))) G->cslot[i][s] = (int8_t)id;
        else *x -= AN_COUNT_BY;
    }
    for (int j = 0; j < o->nin && !fit; j++) { /* an input dim that moves with it */
        const an_ref *r = &E0->refs[o->ref0 + j];
        for (int d = 0; d < r->ndim && !fit && r->val >= 0; d++) {
            if (G->cval[r->val][d] || r->shape[d] != n) continue;
            mv[j][d] = AN_COUNT_BY;
            if ((fit = !probe(E0, o, &a, mv, moved))) G->cval[r->val][d] = (int8_t)id, changed = 1;
            else mv[j][d] = 0;
        }
    }
    if (!fit) return changed;
    for (int j = 0; j < o->nout; j++) {
        const an_ref *r = &E0->refs[o->ref0 + o->nin + j];
        if (r->val < 0 || base[j].ndim != r->ndim || moved[j].ndim != r->ndim) continue;
        for (int d = 0; d < r->ndim; d++) {
            int8_t *c = &G->cval[r->val][d];
            if (r->shape[d] != n || base[j].shape[d] != n) continue;
            if (moved[j].shape[d] == n + AN_COUNT_BY) {
                if (!*c) *c = (int8_t)id, changed = 1;
                continue;
            }
            if (*c != id) continue;
            /* known to be the count, not moved yet: what makes it */
            int found = 0;
            for (int s = 0; s < AN_COUNT_SLOTS && !found; s++) {
                int64_t *x = slot_of(info, &a, s);
                if (!x) break;
                if (*x != n || G->cslot[i][s]) continue;
                *x += AN_COUNT_BY;
                jn_meta m2[JN_MAX_OUTS];
                if ((found = !probe(E0, o, &a, mv, m2) && m2[j].shape[d] == n + AN_COUNT_BY)) G->cslot[i][s] = (int8_t)id;
                else *x -= AN_COUNT_BY;
            }
            for (int p = 0; p < o->nin && !found; p++) {
                const an_ref *q = &E0->refs[o->ref0 + p];
                for (int k = 0; k < q->ndim && !found && q->val >= 0; k++) {
                    if (G->cval[q->val][k] || q->shape[k] != n) continue;
                    mv[p][k] = AN_COUNT_BY;
                    jn_meta m2[JN_MAX_OUTS];
                    if ((found = !probe(E0, o, &a, mv, m2) && m2[j].shape[d] == n + AN_COUNT_BY))
                        G->cval[q->val][k] = (int8_t)id, changed = 1;
                    else mv[p][k] = 0;
                }
            }
        }
    }
    return changed;
}

jn_status an_counts(an_gen *G) {
    const an_ex *E0 = G->E[0];
    if (!(G->cval = calloc((size_t)E0->nvals + 1, sizeof *G->cval)) ||
        !(G->cslot = calloc((size_t)E0->nops + 1, sizeof *G->cslot)))
        return jn_error(JN_ERR_NOMEM, "analyzer: out of memory");
    jn_status s = seed(G);
    if (s || !G->ncnt) return s;
    jn_meta base[JN_MAX_OUTS];
    int64_t none[JN_MAX_INS][JN_MAX_DIMS];
    memset(none, 0, sizeof none);
    int changed = 1;
    for (int sweep = 0; sweep < AN_COUNT_SWEEPS && changed; sweep++) {
        changed = 0;
        for (int32_t i = 0; i < E0->nops; i++) {
            const an_op *o = &E0->ops[i];
            const jn_opinfo *info = jn_op_info((jn_op)o->op);
            int near = 0; /* a count in or out: else nothing to learn here */
            for (int j = 0; j < o->nin + o->nout && !near; j++) {
                const an_ref *r = &E0->refs[o->ref0 + j];
                for (int d = 0; d < r->ndim && r->val >= 0 && !near; d++) near = G->cval[r->val][d] != 0;
            }
            if (!near) continue;
            jn_attrs a;
            memset(&a, 0, sizeof a);
            for (int k = 0; k < o->nattrs; k++) a.a[k] = E0->attrv[o->attr0 + k];
            if ((info->flags & JN_F_RAND) || probe(E0, o, &a, none, base)) continue;
            for (int id = 1; id <= G->ncnt; id++) changed |= step_op(G, i, id, base);
        }
    }
    return JN_OK;
}
