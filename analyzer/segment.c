/* segment.c -- split a decoded step at its sync points and collapse the
 * segments into exemplars of their groups.
 *
 * Positions: every step start and every sync opens a new segment; segment
 * k's ops sit at position 2k and the sync that ends it at 2k+1.  The first
 * pass (an_note_uses) records, per tensor id, the last position that
 * references it; the second (an_segment_step) walks the same positions, so
 * "referenced after segment k" is simply lastuse > 2k.
 *
 * A segment's group key is where it starts: the step start or the kind and
 * call site of the sync before it, plus the call site of its first op.
 * Empty segments (two syncs in a row) are dropped, and so is their start:
 * a sync that ends one leaves the next segment starting where the empty
 * one did (a loss printed right after opt.step() on some steps only does
 * not make those steps a group of their own; replay.c's jn_rp_sync keeps
 * the same rule).  Decision events stay in
 * their segment (variant provenance).
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "an_internal.h"

static int note_in(an_map *m, int64_t id, int64_t pos) {
    int64_t *v = an_map_get(m, (uint64_t)id, pos, NULL);
    if (!v) return -1;
    if (*v < pos) *v = pos;
    return 0;
}
static int note(an_ctx *c, int64_t id, int64_t pos) { return note_in(&c->lastuse, id, pos); }

jn_status an_note_uses_step(an_ctx *c) {
    c->pos += 2;
    for (int64_t i = 0; i < c->sb.nev; i++) {
        const an_event *x = &c->sb.ev[i];
        if (x->kind == JN_EV_SYNC) {
            if (x->tensor_id && note(c, x->tensor_id, c->pos + 1)) return JN_ERR_NOMEM;
            c->pos += 2;
        } else if (x->kind == JN_EV_OP) {
            for (int j = 0; j < x->nin + x->nout; j++) {
                const an_tref *t = &c->sb.tr[x->ref0 + j];
                if (t->role != JN_TR_SCALAR && note(c, t->id, c->pos)) return JN_ERR_NOMEM;
            }
        } else if (x->kind == JN_EV_LIVE) { /* alive after the segment (not read: kept where loops allow) */
            for (int32_t j = 0; j < x->nlive; j++)
                if (note_in(&c->livepos, c->sb.tr[x->ref0 + j].id, c->pos + 1)) return JN_ERR_NOMEM;
        }
    }
    return JN_OK;
}

static int32_t group_of(an_ctx *c, uint8_t prev_kind, int64_t prev_site, int64_t first_site) {
    uint64_t h = an_mix(an_mix(an_mix(AN_FNV_INIT, prev_kind), (uint64_t)prev_site), (uint64_t)first_site);
    for (;; h = an_mix(h, 1)) {
        int isnew;
        int64_t *v = an_map_get(&c->grouphash, h, c->ngroups, &isnew);
        if (!v) return -1;
        if (!isnew) {
            an_group *g = &c->groups[*v];
            if (g->prev_kind == prev_kind && g->prev_site == prev_site && g->first_site == first_site)
                return (int32_t)*v;
            continue;
        }
        if (an_grow(&c->groups, &c->capgroups, c->ngroups + 1, sizeof *c->groups)) return -1;
        an_group *g = &c->groups[c->ngroups];
        memset(g, 0, sizeof *g);
        g->prev_kind = prev_kind;
        g->prev_site = prev_site;
        g->first_site = first_site;
        return (int32_t)c->ngroups++;
    }
}

/* p trimmed to n bytes (p itself if realloc declines; NULL p stays NULL). */
static void *take(void *p, size_t n) {
    if (!p) return NULL;
    void *q = realloc(p, n ? n : 1);
    return q ? q : p;
}

static int fsame(double a, double b) { return a == b || (isnan(a) && isnan(b)); }

/* Merge the scratch exemplar into its twin or add it as a new exemplar. */
static jn_status add_exemplar(an_ctx *c) {
    an_ex *s = &c->scr;
    uint64_t h = an_ex_hash(s);
    s->hash = h;
    int isnew;
    int64_t *head = an_map_get(&c->exhash, h, -1, &isnew);
    if (!head) return JN_ERR_NOMEM;
    for (int64_t k = *head; k >= 0; k = c->ex[k].next) {
        an_ex *e = &c->ex[k];
        if (e->hash != h || !an_ex_same(e, s)) continue;
        e->count++;
        if (c->step < e->step_lo) e->step_lo = c->step;
        if (c->step > e->step_hi) e->step_hi = c->step;
        if (c->run < e->run_lo) e->run_lo = c->run;
        if (c->run > e->run_hi) e->run_hi = c->run;
        for (int32_t i = 0; i < s->nvals; i++) {
            e->vals[i].keep |= s->vals[i].keep;
            e->vals[i].live |= s->vals[i].live;
        }
        for (int32_t i = 0; i < s->nislots; i++) {
            an_islot *a = &e->islots[i];
            int64_t x = s->islots[i].first;
            if (x != a->first) a->varied = 1;
            a->hseq = an_mix(a->hseq, (uint64_t)x);
            a->hdelta = an_mix(a->hdelta, (uint64_t)x - (uint64_t)a->first);
            if (x < a->lo) a->lo = x;
            if (x > a->hi) a->hi = x;
        }
        if (s->has_rng && s->rng_first < e->rng_lo) e->rng_lo = s->rng_first;
        if (s->has_rng && s->rng_first > e->rng_hi) e->rng_hi = s->rng_first;
        for (int32_t i = 0; i < s->nfslots; i++) {
            an_fslot *a = &e->fslots[i];
            double x = s->fslots[i].first;
            if (!fsame(x, a->first)) a->varied = 1;
            if (x < a->lo) a->lo = x;
            if (x > a->hi) a->hi = x;
        }
        return JN_OK;
    }
    if (an_grow(&c->ex, &c->capex, c->nex + 1, sizeof *c->ex)) return JN_ERR_NOMEM;
    an_ex *e = &c->ex[c->nex];
    *e = *s;
    /* the scratch arrays move into the exemplar (trimmed); the next segment
     * grows fresh ones, so a huge segment is never held twice */
    e->ops = take(s->ops, sizeof *s->ops * (size_t)s->nops);
    e->refs = take(s->refs, sizeof *s->refs * (size_t)s->nrefs);
    e->vals = take(s->vals, sizeof *s->vals * (size_t)s->nvals);
    e->islots = take(s->islots, sizeof *s->islots * (size_t)s->nislots);
    e->fslots = take(s->fslots, sizeof *s->fslots * (size_t)s->nfslots);
    e->decs = take(s->decs, sizeof *s->decs * (size_t)s->ndecs);
    e->attrv = take(s->attrv, sizeof *s->attrv * (size_t)s->nattrv);
    s->ops = NULL, s->refs = NULL, s->vals = NULL, s->islots = NULL, s->fslots = NULL, s->decs = NULL;
    s->attrv = NULL;
    c->capops = c->caprefs = c->capvals = c->capislots = c->capfslots = c->capdecs = c->capattrv = 0;
    e->count = 1;
    e->step_lo = e->step_hi = c->step;
    e->run_lo = e->run_hi = c->run;
    e->structure = -1;
    e->reps = NULL;
    e->nreps = -1;
    e->next = (int32_t)*head;
    *head = c->nex;
    an_group *g = &c->groups[e->group];
    if (an_grow(&g->ex, &g->capex, g->nex + 1, sizeof *g->ex)) return JN_ERR_NOMEM;
    g->ex[g->nex++] = (int32_t)c->nex;
    c->nex++;
    return JN_OK;
}

jn_status an_segment_step(an_ctx *c) {
    const an_event *ev = c->sb.ev;
    int64_t n = c->sb.nev, start = 0;
    uint8_t prev_kind = 0;
    int64_t prev_site = 0;
    c->pos += 2;
    for (int64_t i = 0; i <= n; i++) {
        if (i < n && ev[i].kind != JN_EV_SYNC) continue;
        int64_t first = -1;
        for (int64_t k = start; k < i; k++)
            if (ev[k].kind == JN_EV_OP) {
                first = k;
                break;
            }
        if (first >= 0) {
            c->st->segments++;
            int32_t g = group_of(c, prev_kind, prev_site, ev[first].callsite);
            if (g < 0) return JN_ERR_NOMEM;
            jn_status s = an_functionalize(c, ev + start, i - start);
            if (s) return s;
            c->scr.group = g;
            c->scr.exit_kind = i < n ? ev[i].sync_kind : 0;
            c->scr.exit_site = i < n ? ev[i].callsite : 0;
            if ((s = add_exemplar(c))) return s;
        }
        if (i < n) {
            if (first >= 0) { /* an empty segment's sync leaves the next starting where it did (replay.c) */
                prev_kind = ev[i].sync_kind;
                prev_site = ev[i].callsite;
            }
            c->pos += 2;
            start = i + 1;
        }
    }
    for (int64_t i = 0; i < n; i++) c->st->ops += ev[i].kind == JN_EV_OP;
    return JN_OK;
}
