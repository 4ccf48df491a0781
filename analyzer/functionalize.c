/* functionalize.c -- one recorded segment -> SSA over canonical value
 * numbers (the scratch exemplar an_ctx.scr).
 *
 * Tensor ids are process-specific, so the segment is renumbered: every
 * tensor first read without being produced here is an EXTERNAL value (a
 * Python scalar always is a fresh one), every op output a new value.  A map
 * tensor id -> current value makes in-place updates functional: an op that
 * writes a tensor (an output with the id of a tensor seen before, as for
 * x.add_(y), or jn_dispatch_into) defines a new value and the id moves to
 * it, so later reads see the new value.  At the end of the segment the
 * final value of every external tensor that was written becomes a state
 * write-back (`overwrites`), and the final value of every tensor that a
 * later event of the run references (an_ctx.lastuse, from the first pass)
 * is kept for Python (`keep`); one that is only still alive where the
 * segment ends (JN_EV_LIVE: a loss nobody prints, .grad) is `live`, kept
 * by generalize.c unless it is a loop iteration's value.
 *
 * Views are ordinary functional nodes, which is only right while nothing
 * writes through an alias, so aliasing is made explicit with table ops the
 * analyzer adds.  A write INTO a view is spliced back into its parent, and
 * on up a chain of views to the base (splice(): slice_scatter for a slice
 * of any positive step, select_scatter for a select, view back for a
 * reshape of a contiguous parent, the inverse transpose/permute).  A view
 * read after its parent (or any ancestor) got a new value is taken again
 * from the new value first (freshen()), as eager mode would show the write
 * through it.  What stays refused, as the reason the segment cannot be
 * captured: writes through expand, as_strided or a reshape of a
 * non-contiguous parent, writes into an external tensor that is itself a
 * strided view, reads of a stale as_strided view, and a tensor whose dtype
 * or shape changes.  A tensor is never followed
 * through a view chain the recorder did not see (autograd's saved aliases
 * have ids of their own).
 *
 * What may still vary between segments with the same canonical form goes
 * to slots instead of the key: int attributes and int-list elements (slice
 * bounds move every batch), float attributes, Python scalar values, and the
 * Philox offset (the first random op's absolute offset; later random ops'
 * offsets relative to it).
 */
#include <math.h>
#include <string.h>

#include "an_internal.h"

/* A tensor keeps its dtype, device and shape for life (in-place writes too);
 * a trace that says otherwise cannot be trusted. */
static int same_meta(const an_ref *a, const an_ref *b) {
    return a->dtype == b->dtype && a->ndim == b->ndim && a->device == b->device &&
           !memcmp(a->shape, b->shape, sizeof(int64_t) * a->ndim);
}

static int32_t new_val(an_ctx *c, int32_t def, int idx, int role, int64_t bind, int32_t ref) {
    an_ex *e = &c->scr;
    if (an_grow(&e->vals, &c->capvals, e->nvals + 1, sizeof *e->vals)) return -1;
    an_val *v = &e->vals[e->nvals];
    memset(v, 0, sizeof *v);
    v->def = def;
    v->idx = (uint8_t)idx;
    v->role = (uint8_t)role;
    v->overwrites = -1;
    v->bind = bind;
    v->ref = ref;
    return e->nvals++;
}

static int islot(an_ctx *c, int64_t x) {
    an_ex *e = &c->scr;
    if (an_grow(&e->islots, &c->capislots, e->nislots + 1, sizeof *e->islots)) return -1;
    e->islots[e->nislots++] = (an_islot){x, x, x, 0, an_mix(AN_FNV_INIT, (uint64_t)x), an_mix(AN_FNV_INIT, 0)};
    return 0;
}

static int fslot(an_ctx *c, double x) {
    an_ex *e = &c->scr;
    if (an_grow(&e->fslots, &c->capfslots, e->nfslots + 1, sizeof *e->fslots)) return -1;
    e->fslots[e->nfslots++] = (an_fslot){x, x, x, 0};
    return 0;
}

/* The an_tid of tensor id (created if new: *isnew). NULL on OOM. */
static an_tid *tid_get(an_ctx *c, int64_t id, int *isnew) {
    int64_t *slot = an_map_get(&c->idmap, (uint64_t)id, c->nids, isnew);
    if (!slot) return NULL;
    if (*isnew) {
        if (an_grow(&c->ids, &c->capids, c->nids + 1, sizeof *c->ids)) return NULL;
        an_tid *t = &c->ids[c->nids++];
        memset(t, 0, sizeof *t);
        t->id = id;
        t->cur = t->ext = t->view_base = t->type_ref = -1;
    }
    return &c->ids[*slot];
}

/* Append an op the analyzer adds (the splice of a write into a view): int
 * attributes ia[] in schema order, inputs by value with their types, one
 * output of type *ot.  Returns the output value, -1 on OOM. */
static int32_t emit(an_ctx *c, jn_op op, int64_t site, int64_t stack, const jn_attrs *ia, int nin, const int32_t *iv,
                    const an_ref *it, const an_ref *ot, int32_t obj) {
    an_ex *e = &c->scr;
    const jn_opinfo *info = jn_op_info(op);
    if (an_grow(&e->ops, &c->capops, e->nops + 1, sizeof *e->ops) ||
        an_grow(&e->refs, &c->caprefs, e->nrefs + nin + 1, sizeof *e->refs) ||
        an_grow(&e->attrv, &c->capattrv, e->nattrv + info->nattrs, sizeof *e->attrv))
        return -1;
    int32_t oi = e->nops++;
    an_op *o = &e->ops[oi];
    memset(o, 0, sizeof *o);
    o->op = (int16_t)op;
    o->nin = (uint8_t)nin;
    o->nout = 1;
    o->synth = 1;
    o->mirror = -1;
    o->site = site;
    o->stack = stack;
    o->ref0 = e->nrefs;
    o->islot0 = e->nislots;
    o->fslot0 = e->nfslots;
    o->attr0 = e->nattrv;
    o->nattrs = (uint8_t)info->nattrs;
    uint64_t tok = an_mix(an_mix(an_mix(0x53504c494345ull, (uint64_t)op), (uint64_t)site), (uint64_t)stack);
    o->token = an_mix(tok, (uint64_t)nin);
    for (int k = 0; k < info->nattrs; k++) {
        const jn_attr *a = &ia->a[k];
        e->attrv[e->nattrv++] = *a;
        if (info->attr_kind[k] == JN_A_INTS) {
            o->token = an_mix(o->token, (uint64_t)a->l.n);
            for (int j = 0; j < a->l.n; j++)
                if (islot(c, a->l.v[j])) return -1;
        } else if (islot(c, a->i)) {
            return -1;
        }
    }
    for (int j = 0; j < nin; j++) {
        an_ref *r = &e->refs[e->nrefs++];
        *r = it[j];
        r->val = iv[j];
        r->noncontig = 0;
    }
    int32_t v = new_val(c, oi, 0, JN_TR_TEMP, 0, -1);
    if (v < 0) return -1;
    an_ref *r = &e->refs[e->nrefs++];
    *r = *ot;
    r->val = v;
    r->obj = obj;
    r->role = JN_TR_TEMP;
    r->noncontig = 0;
    return v;
}

#define AN_MAX_VIEW_CHAIN 64

/* Make view ti's current value current: where its parent (or an ancestor)
 * got a new value since the view was taken, take the view again from the
 * parent's new value, top down (in eager mode a read through the view sees
 * the write).  *bad when a view op in the chain cannot be taken again
 * (as_strided) or the chain is absurdly deep. */
static jn_status freshen(an_ctx *c, int32_t ti, int64_t site, int64_t stack, int *bad) {
    int32_t chain[AN_MAX_VIEW_CHAIN], n = 0;
    for (int32_t t = ti; t >= 0 && c->ids[t].is_view && c->ids[t].view_base >= 0; t = c->ids[t].view_base) {
        if (n == AN_MAX_VIEW_CHAIN) {
            *bad = 1;
            return JN_OK;
        }
        chain[n++] = t;
    }
    an_ex *e = &c->scr;
    while (n--) {
        an_tid *V = &c->ids[chain[n]];
        const an_tid *P = &c->ids[V->view_base];
        if (P->gen == V->base_gen) continue;
        if (!V->rederive || P->type_ref < 0 || V->type_ref < 0) {
            *bad = 1;
            return JN_OK;
        }
        const jn_opinfo *info = jn_op_info((jn_op)V->vop);
        jn_attrs a;
        memset(&a, 0, sizeof a);
        for (int k = 0; k < info->nattrs; k++) a.a[k] = c->sb.attrs[V->vattr0 + k];
        an_ref pt = e->refs[P->type_ref], vt = e->refs[V->type_ref];
        int32_t pv = P->cur, nv = emit(c, (jn_op)V->vop, site, stack, &a, 1, &pv, &pt, &vt, chain[n]);
        if (nv < 0) return JN_ERR_NOMEM;
        e->ops[e->nops - 1].mirror = V->vop_i;
        V->cur = nv;
        V->type_ref = e->nrefs - 1;
        V->gen++;
        V->base_gen = P->gen;
    }
    return JN_OK;
}

/* Can a write into view ti be spliced into its base, through every view in between? */
static int spliceable(const an_ctx *c, int32_t ti) {
    int n = 0;
    for (int32_t t = ti; c->ids[t].is_view && c->ids[t].view_base >= 0; t = c->ids[t].view_base)
        if (!c->ids[t].splice || ++n > AN_MAX_VIEW_CHAIN) return 0;
    return n > 0;
}

/* A write into view V is functional again when each parent's new value can
 * be rebuilt from its view's with table ops, from V up to the base: a slice
 * (any positive step): P' = slice_scatter(P, V', dim, start, end, step); a
 * select: P' = select_scatter(P, V', dim, index); a reshape of a contiguous
 * parent (view, squeeze, unsqueeze): P' = view(V', P's shape); a transpose
 * or permute: P' = the inverse one.  A view of a view is two such steps
 * (x[1][:, ::2].fill_(0)). */
static jn_status splice(an_ctx *c, int32_t vi, int64_t site, int64_t stack, int *bad) {
    an_ex *e = &c->scr;
    jn_status s = freshen(c, c->ids[vi].view_base, site, stack, bad);
    if (s || *bad) return s;
    for (int32_t ti = vi; c->ids[ti].is_view && c->ids[ti].view_base >= 0; ti = c->ids[ti].view_base) {
        an_tid *V = &c->ids[ti];
        int32_t bi = V->view_base;
        if (c->ids[bi].type_ref < 0 || V->type_ref < 0) {
            *bad = 1;
            return JN_OK;
        }
        an_ref bt = e->refs[c->ids[bi].type_ref], vt = e->refs[V->type_ref];
        int32_t in[2] = {c->ids[bi].cur, V->cur}, nb;
        an_ref it[2] = {bt, vt};
        jn_attrs a;
        memset(&a, 0, sizeof a);
        switch (V->splice) {
        case 1:
            a.a[0].i = V->vdim;
            a.a[1].i = V->va;
            a.a[2].i = V->vlen ? V->va + (V->vlen - 1) * V->vstep + 1 : V->va; /* checked when the view was made */
            a.a[3].i = V->vstep;
            nb = emit(c, JN_OP_slice_scatter, site, stack, &a, 2, in, it, &bt, bi);
            break;
        case 2:
            a.a[0].i = V->vdim;
            a.a[1].i = V->va;
            nb = emit(c, JN_OP_select_scatter, site, stack, &a, 2, in, it, &bt, bi);
            break;
        case 3:
            a.a[0].l.n = bt.ndim;
            memcpy(a.a[0].l.v, bt.shape, sizeof(int64_t) * bt.ndim);
            nb = emit(c, JN_OP_view, site, stack, &a, 1, in + 1, it + 1, &bt, bi);
            break;
        case 4:
            a.a[0].i = V->va;
            a.a[1].i = V->vlen;
            nb = emit(c, JN_OP_transpose, site, stack, &a, 1, in + 1, it + 1, &bt, bi);
            break;
        case 5:
            a.a[0].l.n = bt.ndim;
            for (int k = 0; k < bt.ndim; k++) a.a[0].l.v[V->perm[k]] = k; /* the inverse */
            nb = emit(c, JN_OP_permute, site, stack, &a, 1, in + 1, it + 1, &bt, bi);
            break;
        default:
            *bad = 1;
            return JN_OK;
        }
        if (nb < 0) return JN_ERR_NOMEM;
        if (V->splice == 1 || V->splice == 2) e->ops[e->nops - 1].mirror = V->vop_i; /* its positions */
        an_tid *B = &c->ids[bi];
        B->cur = nb;
        B->gen++;
        B->type_ref = e->nrefs - 1;
        if (B->ext >= 0) e->vals[B->ext].written = 1;
        c->ids[ti].base_gen = B->gen;
    }
    return JN_OK;
}

static void set_reason(an_ex *e, int code, int op, int64_t site) {
    if (e->reason_code) return;
    e->reason_code = code;
    e->reason_op = op;
    e->reason_site = site;
}

jn_status an_functionalize(an_ctx *c, const an_event *ev, int64_t n) {
    an_ex *e = &c->scr;
    e->nops = e->nrefs = e->nvals = e->nislots = e->nfslots = e->ndecs = e->nattrv = 0;
    e->reason_code = 0;
    an_map_clear(&c->idmap);
    c->nids = 0;
    int64_t rng0 = 0;
    int seen_rand = 0;
    e->has_rng = 0;
    for (int64_t i = 0; i < n; i++) {
        const an_event *x = &ev[i];
        if (x->kind == JN_EV_DECISION) {
            if (an_grow(&e->decs, &c->capdecs, e->ndecs + 1, sizeof *e->decs)) return JN_ERR_NOMEM;
            e->decs[e->ndecs++] = (an_dec){e->nops, x->dec_kind, x->callsite, x->outcome};
            continue;
        }
        if (x->kind != JN_EV_OP) continue;
        /* views read here whose parent got a new value since: taken again first */
        for (int j = 0; j < x->nin; j++) {
            const an_tref *t = &c->sb.tr[x->ref0 + j];
            int64_t *slot = t->role == JN_TR_SCALAR ? NULL : an_map_find(&c->idmap, (uint64_t)t->id);
            int bad = 0;
            if (slot && freshen(c, (int32_t)*slot, x->callsite, x->stack, &bad)) return JN_ERR_NOMEM;
            if (bad) set_reason(e, AN_R_STALE_VIEW, x->op, x->callsite);
        }
        if (an_grow(&e->ops, &c->capops, e->nops + 1, sizeof *e->ops) ||
            an_grow(&e->refs, &c->caprefs, e->nrefs + x->nin + x->nout, sizeof *e->refs))
            return JN_ERR_NOMEM;
        int32_t oi = e->nops++;
        an_op *o = &e->ops[oi];
        const jn_opinfo *info = jn_op_info((jn_op)x->op);
        o->op = x->op;
        o->nin = x->nin;
        o->nout = x->nout;
        o->inplace = x->inplace;
        o->synth = 0;
        o->mirror = -1;
        o->site = x->callsite;
        o->stack = x->stack;
        if (an_grow(&e->attrv, &c->capattrv, e->nattrv + info->nattrs, sizeof *e->attrv)) return JN_ERR_NOMEM;
        o->attr0 = e->nattrv;
        o->nattrs = (uint8_t)info->nattrs;
        const jn_attr *xa = &c->sb.attrs[x->attr0];
        for (int k = 0; k < info->nattrs; k++) e->attrv[e->nattrv++] = xa[k];
        o->ref0 = e->nrefs;
        o->islot0 = e->nislots;
        o->fslot0 = e->nfslots;
        uint64_t tok = an_mix(AN_FNV_INIT, (uint64_t)x->op);
        tok = an_mix(tok, (uint64_t)x->callsite);
        tok = an_mix(tok, (uint64_t)x->stack);
        /* stack/cat over a loop's per-iteration values: their arity follows the
         * trip count, so it is no part of the token (the refs still are) */
        int joins = x->op == JN_OP_stack || x->op == JN_OP_cat;
        tok = an_mix(tok, (uint64_t)(joins ? 0 : x->nin) | (uint64_t)x->nout << 8 |
                              (uint64_t)(x->inplace ? 1 : 0) << 16);
        for (int k = 0; k < info->nattrs; k++) {
            const jn_attr *a = &xa[k];
            switch (info->attr_kind[k]) {
            case JN_A_BOOL: case JN_A_DTYPE:
                tok = an_mix(tok, (uint64_t)a->i);
                break;
            case JN_A_INTS:
                tok = an_mix(tok, (uint64_t)a->l.n);
                for (int j = 0; j < a->l.n; j++)
                    if (islot(c, a->l.v[j])) return JN_ERR_NOMEM;
                break;
            case JN_A_FLOAT:
                if (fslot(c, a->f)) return JN_ERR_NOMEM;
                break;
            default: {
                int64_t v = a->i;
                if ((info->flags & JN_F_RAND) && !strcmp(info->attr_name[k], "offset")) {
                    /* the first random op's offset is the graph's rng symbol (kept
                     * on the exemplar); every one is relative to it (a function of
                     * the shapes in between), the first's 0 */
                    if (!seen_rand) {
                        seen_rand = 1;
                        rng0 = v;
                        e->has_rng = 1;
                        e->rng_first = e->rng_lo = e->rng_hi = v;
                    }
                    v = (int64_t)((uint64_t)v - (uint64_t)rng0);
                }
                if (islot(c, v)) return JN_ERR_NOMEM;
            }
            }
        }
        const an_tref *tr = &c->sb.tr[x->ref0];
        for (int j = 0; j < x->nin; j++) {
            const an_tref *t = &tr[j];
            an_ref *r = &e->refs[e->nrefs++];
            memset(r, 0, sizeof *r);
            r->dtype = t->dtype;
            r->ndim = t->ndim;
            r->device = t->device;
            r->role = t->role;
            r->pytype = t->pytype;
            r->noncontig = (uint8_t)!t->contig;
            memcpy(r->shape, t->shape, sizeof(int64_t) * t->ndim);
            if (!joins || j == 0)
                tok = an_mix(tok, (uint64_t)t->dtype | (uint64_t)t->pytype << 8 | (uint64_t)t->device << 16);
            r->obj = -1;
            if (t->role == JN_TR_SCALAR) {
                if ((r->val = new_val(c, -1, 0, JN_TR_SCALAR, 0, e->nrefs - 1)) < 0 || fslot(c, t->scalar))
                    return JN_ERR_NOMEM;
                continue;
            }
            int isnew;
            an_tid *td = tid_get(c, t->id, &isnew);
            if (!td) return JN_ERR_NOMEM;
            if (isnew) {
                int64_t bind = t->role == JN_TR_PARAM || t->role == JN_TR_STATE ? t->id : 0;
                int32_t v = new_val(c, -1, 0, t->role, bind, e->nrefs - 1);
                if (v < 0) return JN_ERR_NOMEM;
                td = &c->ids[c->nids - 1];
                td->cur = td->ext = v;
            }
            r->val = td->cur;
            r->obj = (int32_t)(td - c->ids);
            if (td->type_ref >= 0 && !same_meta(&e->refs[td->type_ref], r))
                set_reason(e, AN_R_INCONSISTENT, x->op, x->callsite);
            td->type_ref = e->nrefs - 1;
        }
        o = &e->ops[oi];
        int32_t in0 = -1, pending = -1;
        if (x->nin && tr[0].role != JN_TR_SCALAR) {
            int64_t *s0 = an_map_find(&c->idmap, (uint64_t)tr[0].id);
            in0 = s0 ? (int32_t)*s0 : -1;
        }
        for (int j = 0; j < x->nout; j++) {
            const an_tref *t = &tr[x->nin + j];
            an_ref *r = &e->refs[e->nrefs++];
            memset(r, 0, sizeof *r);
            r->dtype = t->dtype;
            r->ndim = t->ndim;
            r->device = t->device;
            r->role = t->role;
            r->pytype = t->pytype;
            r->noncontig = (uint8_t)!t->contig;
            memcpy(r->shape, t->shape, sizeof(int64_t) * t->ndim);
            if (t->role == JN_TR_SCALAR) { /* outputs are tensors; only garbage says otherwise */
                set_reason(e, AN_R_INCONSISTENT, x->op, x->callsite);
                r->role = JN_TR_TEMP;
            }
            int isnew;
            an_tid *td = tid_get(c, t->id, &isnew);
            if (!td) return JN_ERR_NOMEM;
            if (isnew && x->inplace && j == 0) {
                /* jn_dispatch_into into a tensor this segment has not read: an
                 * external tensor that is overwritten */
                int32_t v = new_val(c, -1, 0, r->role, t->role == JN_TR_PARAM || t->role == JN_TR_STATE ? t->id : 0,
                                    e->nrefs - 1);
                if (v < 0) return JN_ERR_NOMEM;
                td = &c->ids[c->nids - 1];
                td->cur = td->ext = v;
                isnew = 0;
            }
            if (!isnew && td->type_ref >= 0 && !same_meta(&e->refs[td->type_ref], r))
                set_reason(e, AN_R_INCONSISTENT, x->op, x->callsite);
            if (!isnew) { /* an in-place write of an existing tensor */
                if (td->is_view && pending < 0 && spliceable(c, (int32_t)(td - c->ids)))
                    pending = (int32_t)(td - c->ids);
                else if (td->is_view || (td->ext >= 0 && td->cur == td->ext && r->noncontig))
                    set_reason(e, AN_R_VIEW_WRITE, x->op, x->callsite);
                td->gen++;
                if (td->ext >= 0) e->vals[td->ext].written = 1;
            }
            int32_t v = new_val(c, oi, j, JN_TR_TEMP, 0, -1);
            if (v < 0) return JN_ERR_NOMEM;
            td = &c->ids[*an_map_find(&c->idmap, (uint64_t)t->id)];
            td->cur = v;
            td->type_ref = e->nrefs - 1;
            r->val = v;
            r->obj = (int32_t)(td - c->ids);
            if ((info->flags & JN_F_VIEW) && j == 0 && in0 >= 0 && isnew) {
                int32_t base = in0;
                td->is_view = 1;
                td->view_base = base;
                td->base_gen = c->ids[base].gen;
                td->splice = 0;
                td->rederive = x->op != JN_OP_as_strided;
                td->vop = x->op;
                td->vop_i = oi;
                td->vattr0 = x->attr0;
                const jn_attr *va = &c->sb.attrs[x->attr0];
                if (base == in0 && c->ids[in0].type_ref >= 0 && (x->op == JN_OP_slice || x->op == JN_OP_select)) {
                    const an_ref *bt = &e->refs[c->ids[in0].type_ref];
                    int64_t d = va[0].i < 0 ? va[0].i + bt->ndim : va[0].i;
                    if (d >= 0 && d < bt->ndim) {
                        int64_t size = bt->shape[d], s = va[1].i < 0 ? va[1].i + size : va[1].i;
                        int64_t len = r->shape[d], step = x->op == JN_OP_slice ? va[3].i : 0, last;
                        if (x->op == JN_OP_slice && step >= 1 && r->ndim == bt->ndim && s >= 0 && s <= size &&
                            len >= 0 && len <= size - s &&
                            (len == 0 || (!__builtin_mul_overflow(len - 1, step, &last) &&
                                          !__builtin_add_overflow(last, s, &last) && last < size))) {
                            td->splice = 1;
                            td->vlen = len;
                            td->vstep = step;
                        } else if (x->op == JN_OP_select && s >= 0 && s < size && r->ndim + 1 == bt->ndim) {
                            td->splice = 2;
                        }
                        td->vdim = (int32_t)d;
                        td->va = s;
                    }
                } else if (base == in0 && c->ids[in0].type_ref >= 0) {
                    const an_ref *bt = &e->refs[c->ids[in0].type_ref];
                    uint64_t nb = 1, nr = 1; /* unsigned: garbage sizes must not overflow */
                    for (int k = 0; k < bt->ndim; k++) nb *= (uint64_t)bt->shape[k];
                    for (int k = 0; k < r->ndim; k++) nr *= (uint64_t)r->shape[k];
                    if ((x->op == JN_OP_view || x->op == JN_OP_squeeze || x->op == JN_OP_unsqueeze) && nb == nr &&
                        !bt->noncontig) {
                        td->splice = 3;
                    } else if (x->op == JN_OP_transpose && r->ndim == bt->ndim) {
                        int64_t d0 = va[0].i < 0 ? va[0].i + bt->ndim : va[0].i;
                        int64_t d1 = va[1].i < 0 ? va[1].i + bt->ndim : va[1].i;
                        if (d0 >= 0 && d0 < bt->ndim && d1 >= 0 && d1 < bt->ndim) {
                            td->splice = 4;
                            td->va = d0;
                            td->vlen = d1;
                        }
                    } else if (x->op == JN_OP_permute && va[0].l.n == bt->ndim && r->ndim == bt->ndim) {
                        int seen = 0, ok = 1;
                        for (int k = 0; k < bt->ndim && ok; k++) {
                            int64_t p = va[0].l.v[k] < 0 ? va[0].l.v[k] + bt->ndim : va[0].l.v[k];
                            ok = p >= 0 && p < bt->ndim && !(seen & (1 << p));
                            seen |= 1 << (p & 31);
                            td->perm[k] = (int8_t)p;
                        }
                        if (ok) td->splice = 5;
                    }
                }
            }
        }
        e->ops[oi].token = tok;
        if (pending >= 0) {
            int bad = 0;
            jn_status s = splice(c, pending, x->callsite, x->stack, &bad);
            if (s) return s;
            if (bad) set_reason(e, AN_R_VIEW_WRITE, x->op, x->callsite);
        }
    }
    /* state write-backs and values Python still references */
    for (int64_t k = 0; k < c->nids; k++) {
        const an_tid *td = &c->ids[k];
        if (td->cur < 0 || e->vals[td->cur].def < 0) continue;
        if (td->ext >= 0) {
            e->vals[td->cur].overwrites = td->ext;
        } else {
            int64_t *lu = an_map_find(&c->lastuse, (uint64_t)td->id), *lp;
            if (lu && *lu > c->pos) e->vals[td->cur].keep = 1;
            else if ((lp = an_map_find(&c->livepos, (uint64_t)td->id)) && *lp > c->pos) e->vals[td->cur].live = 1;
        }
    }
    return JN_OK;
}

/* ----------------------------------------------------- exemplar identity */
static uint64_t ref_hash(uint64_t h, const an_ref *r) {
    h = an_mix(h, (uint64_t)r->val ^ (uint64_t)(uint32_t)r->obj << 32);
    h = an_mix(h, (uint64_t)r->dtype | (uint64_t)r->ndim << 8 | (uint64_t)r->device << 16 | (uint64_t)r->role << 24 |
                      (uint64_t)r->pytype << 32 | (uint64_t)r->noncontig << 40);
    for (int d = 0; d < r->ndim; d++) h = an_mix(h, (uint64_t)r->shape[d]);
    return h;
}

uint64_t an_ex_hash(const an_ex *e) {
    uint64_t h = an_mix(AN_FNV_INIT, (uint64_t)e->group);
    h = an_mix(h, (uint64_t)e->nops << 32 | (uint64_t)(uint32_t)e->nvals);
    for (int32_t i = 0; i < e->nops; i++) h = an_mix(h, e->ops[i].token);
    for (int32_t i = 0; i < e->nrefs; i++) h = ref_hash(h, &e->refs[i]);
    for (int32_t i = 0; i < e->nvals; i++) {
        const an_val *v = &e->vals[i];
        h = an_mix(h, (uint64_t)v->def ^ (uint64_t)v->idx << 40 ^ (uint64_t)v->role << 48);
        h = an_mix(h, (uint64_t)v->bind ^ (uint64_t)(v->overwrites + 1) << 44);
    }
    return an_mix(h, (uint64_t)e->reason_code);
}

static int attrs_same(const an_ex *ea, const an_op *a, const an_ex *eb, const an_op *b) {
    const jn_opinfo *info = jn_op_info((jn_op)a->op);
    for (int k = 0; k < info->nattrs; k++) {
        char kind = info->attr_kind[k];
        const jn_attr *x = &ea->attrv[a->attr0 + k], *y = &eb->attrv[b->attr0 + k];
        if ((kind == JN_A_BOOL || kind == JN_A_DTYPE) && x->i != y->i) return 0;
        if (kind == JN_A_INTS && x->l.n != y->l.n) return 0;
    }
    return 1;
}

int an_ex_same(const an_ex *a, const an_ex *b) {
    if (a->group != b->group || a->nops != b->nops || a->nrefs != b->nrefs || a->nvals != b->nvals ||
        a->nislots != b->nislots || a->nfslots != b->nfslots || a->reason_code != b->reason_code)
        return 0;
    for (int32_t i = 0; i < a->nops; i++) {
        const an_op *x = &a->ops[i], *y = &b->ops[i];
        if (x->token != y->token || x->op != y->op || x->site != y->site || x->stack != y->stack || x->nin != y->nin ||
            x->nout != y->nout || x->inplace != y->inplace || x->synth != y->synth || !attrs_same(a, x, b, y))
            return 0;
    }
    for (int32_t i = 0; i < a->nrefs; i++) {
        const an_ref *x = &a->refs[i], *y = &b->refs[i];
        if (x->val != y->val || x->obj != y->obj || x->dtype != y->dtype || x->ndim != y->ndim || x->device != y->device ||
            x->role != y->role || x->pytype != y->pytype || x->noncontig != y->noncontig ||
            memcmp(x->shape, y->shape, sizeof(int64_t) * x->ndim))
            return 0;
    }
    for (int32_t i = 0; i < a->nvals; i++) {
        const an_val *x = &a->vals[i], *y = &b->vals[i];
        if (x->def != y->def || x->idx != y->idx || x->role != y->role || x->bind != y->bind ||
            x->overwrites != y->overwrites || x->written != y->written)
            return 0;
    }
    return 1;
}
