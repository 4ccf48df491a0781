/* region.c -- regions whose Python is skipped: the observation log, the
 * templates and their runs, and the per-region counters (jn_region.h).
 *
 * Everything hangs on the jn_replay object (R->rg), nothing is
 * process-global.  A template run dispatches the ops the region's Python
 * would have dispatched, in its order, with its attributes: capture, the
 * matcher and the graphs cannot tell the difference, which is what keeps a
 * replaced call's results equal to the Python's.  Autograd is the one
 * difference: the ops record into one group node (jn_ag_group_begin around
 * the loop, rg_group_plan), whose backward dispatches the very formulas
 * eager's per-op nodes would, in their order.  The proof that the
 * template stands for the Python (pure body, guards) is the caller's
 * (csrc/region_py.c, janus/_region.py).
 *
 * Batch matching (JANUS_REPLAY_REGION_BATCH, on by default): a template's
 * run under capture feeds the matcher through rp_region_feed.  Once its ops
 * were matched at consecutive tokens of a graph (one cursor, one loop
 * iteration), a plan for that token keeps, per op, the checks the template
 * proves there (jn_rp_match_known: an input the graph names by the token
 * of the template op that made it, attributes fixed in both); later runs
 * from that token leave those checks out (jn_rp_match_feed_at) while the
 * chain of consecutive matches holds.  Every other check (the call's own
 * inputs, output shapes, in-place targets) runs, and any mismatch is the
 * op-by-op path's miss, so results and decisions are today's.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "jn_autograd.h"
#include "jn_region.h"
#include "rp_internal.h"

typedef struct {
    char *name;
    int nbound, nslots, nvals, nops, nc;
    int name_ix;           /* its row in names (the per-region counters) */
    jn_rp_region_op *ops;
    jn_rp_region_const *c;
    jn_tensor **slot;      /* scratch, nslots */
    /* autograd group node (rg_group_plan): bounds over the grad-mode ops,
     * whether the template may record into one, the slots a view op made */
    int g_members, g_edges, g_outs, g_ok;
    uint8_t *g_view;       /* nslots */
    jn_rt_infer_cache *ic; /* per op, made on the first run: its inferred output metadata */
    struct rg_plan *plan;  /* batch feeding (rp_region_feed): per graph token it ran from, what it proves */
    int nplan;
    int dropped;           /* jn_rp_region_drop: its ops freed */
} rg_template;

/* Where a template's ops were matched at consecutive tokens of a graph,
 * from pos0 on, in one loop iteration: per op the matcher's checks that
 * hold by construction there (jn_rp_match_known). */
typedef struct rg_plan {
    int32_t graph, pos0;
    uint64_t *skip;        /* nops */
} rg_plan;
enum { RG_MAX_PLANS = 128 }; /* per template: an unrolled graph calls a module at many tokens */

/* A template running under capture (R->rg_batch): the op it dispatches
 * and how far its ops were matched at consecutive tokens (chain). */
typedef struct {
    rg_template *T;
    int k, seen, chain;
    jn_rp_match_at at0;    /* op 0's token (pos), its loop, iteration and event (nev) */
    const rg_plan *plan;   /* the template's plan from at0's token, NULL */
} rg_batch;

typedef struct {
    char *why;             /* "<region>: <why>" */
    int64_t count;
    int name_ix;           /* its region's row in names (-1: none) */
} rg_reason;

typedef struct {
    char *name;
    int refused, replaceable;
    int64_t calls, replaced;
} rg_name;

struct rp_regions {
    jn_rp_region_event *log;
    jn_tensor **det;       /* the headers detach made while observing (held: no address reused) */
    int ndet, capdet;
    int64_t nlog, caplog, nsync;
    rg_template *t;
    int nt;
    rg_reason *why;
    int nwhy;
    rg_name *names;
    int nnames;
    int64_t calls, replaced;
    rg_batch b;
};

static rg_name *name_of(struct rp_regions *G, const char *name);

/* Decided once per template: may a run record its ops into one autograd
 * group node (jn_ag_group_begin) instead of a node each?  Exact by
 * construction for ops over the call's own slots; two cases keep per-op
 * nodes, because their tensors' histories reach past the call in ways the
 * group's order argument was not checked against (a fallback is never
 * wrong): a grad-mode op writing a bound slot in place (the caller's
 * tensor would take its history inside the group), and a returned slot
 * made or written by a view op (an output aliasing an input or another
 * output: checked per run against the returned slots, rg_group_use). */
static void rg_group_plan(rg_template *T) {
    T->g_ok = 1;
    for (int k = 0; k < T->nops; k++) {
        const jn_rp_region_op *o = &T->ops[k];
        for (int q = 0; q < o->nout; q++)
            if (jn_op_info(o->op)->flags & JN_F_VIEW) T->g_view[o->out[q]] = 1;
        if (!o->grad) continue;
        T->g_members++, T->g_edges += o->nin, T->g_outs += o->nout;
        if (o->mode != JN_RP_RG_NEW && o->out[0] < T->nbound) T->g_ok = 0;
    }
    if (!T->g_members) T->g_ok = 0;
}

static int rg_group_use(const rg_template *T, int nret, const int32_t *ret_slot) {
    if (!T->g_ok) return 0;
    for (int q = 0; q < nret; q++)
        if (ret_slot[q] >= 0 && ret_slot[q] < T->nslots && T->g_view[ret_slot[q]]) return 0;
    return 1;
}

static struct rp_regions *regions(jn_replay *R) {
    if (!R->rg) R->rg = calloc(1, sizeof *R->rg);
    return R->rg;
}

void jn_rp_region_observe(jn_replay *R, int on) {
    struct rp_regions *G = regions(R);
    if (!G) return;
    R->rg_observing = on;
    if (on) {
        G->nlog = G->nsync = 0;
        for (int i = 0; i < G->ndet; i++) jn_tensor_decref(G->det[i]);
        G->ndet = 0;
    }
}

const jn_rp_region_event *jn_rp_region_log(const jn_replay *R, int64_t *n, int64_t *nsync) {
    *n = R->rg ? R->rg->nlog : 0;
    *nsync = R->rg ? R->rg->nsync : 0;
    return R->rg ? R->rg->log : NULL;
}

static double scalar_value(const jn_tensor *t) {
    const char *p = (const char *)t->storage->data + t->offset * (int64_t)jn_dtype_size[t->dtype];
    switch (t->dtype) {
    case JN_F32: return *(const float *)p;
    case JN_F64: return *(const double *)p;
    case JN_I64: return (double)*(const int64_t *)p;
    case JN_I32: return *(const int32_t *)p;
    case JN_BOOL:
    case JN_U8: return *(const uint8_t *)p;
    default: return 0;
    }
}

void rp_region_tap(jn_replay *R, jn_op op, int nin, jn_tensor *const *in, const jn_attrs *a, int nout,
                   jn_tensor *const *out) {
    struct rp_regions *G = R->rg;
    if (G->nlog == G->caplog) {
        int64_t cap = G->caplog ? 2 * G->caplog : 64;
        jn_rp_region_event *l = realloc(G->log, (size_t)cap * sizeof *l);
        if (!l) { /* an incomplete log must not become a template: count it as a sync */
            G->nsync++;
            return;
        }
        G->log = l, G->caplog = cap;
    }
    jn_rp_region_event *e = &G->log[G->nlog++];
    e->op = op, e->nin = nin, e->nout = nout, e->grad = (uint8_t)jn_grad_enabled();
    for (int i = 0; i < nin; i++) {
        e->in_id[i] = in[i]->id;
        e->in_det[i] = (uint8_t)jn_rp_region_detached(R, in[i]);
        /* wrapped numbers are made from Python values, eagerly: their data is there */
        e->in_wrapped[i] = in[i]->wrapped_number && in[i]->storage && in[i]->storage->data && !in[i]->storage->lazy;
        e->in_dtype[i] = (uint8_t)in[i]->dtype;
        e->in_val[i] = e->in_wrapped[i] ? scalar_value(in[i]) : 0;
    }
    for (int k = 0; k < nout; k++) e->out_id[k] = out[k]->id;
    memcpy(&e->a, a, sizeof(jn_attr) * (size_t)jn_op_info(op)->nattrs);
}

void rp_region_sync_tap(jn_replay *R) { R->rg->nsync++; }

void jn_rp_region_alias(jn_replay *R, const jn_tensor *src, jn_tensor *out) {
    struct rp_regions *G = R ? R->rg : NULL;
    if (!G || !R->rg_observing || !src || !out) return;
    if (G->ndet == G->capdet) {
        int cap = G->capdet ? 2 * G->capdet : 16;
        jn_tensor **d = realloc(G->det, (size_t)cap * sizeof *d);
        if (!d) { /* unmarked reads could pass for src's: no template from this call */
            G->nsync++;
            return;
        }
        G->det = d, G->capdet = cap;
    }
    jn_tensor_incref(out);
    G->det[G->ndet++] = out;
}

int jn_rp_region_detached(const jn_replay *R, const jn_tensor *t) {
    const struct rp_regions *G = R ? R->rg : NULL;
    for (int i = 0; G && i < G->ndet; i++)
        if (G->det[i] == t) return 1;
    return 0;
}

int jn_rp_region_add(jn_replay *R, const char *name, int nbound, int nslots, int nvals, const jn_rp_region_op *ops,
                     int nops, const jn_rp_region_const *c, int nc) {
    struct rp_regions *G = regions(R);
    if (!G) return (void)jn_error(JN_ERR_NOMEM, "janus replay: out of memory for a region"), -1;
    if (nbound < 0 || nslots < nbound || nops < 0 || nc < 0 || nvals < 0)
        return (void)jn_error(JN_ERR_VALUE, "region %s: bad template sizes", name), -1;
    /* every slot read is bound or defined by an earlier op; every NEW output defines a fresh slot */
    char *defined = calloc((size_t)nslots + 1, 1);
    if (!defined) return (void)jn_error(JN_ERR_NOMEM, "janus replay: out of memory for a region"), -1;
    memset(defined, 1, (size_t)nbound);
    const char *bad = NULL;
    for (int k = 0; k < nops && !bad; k++) {
        const jn_rp_region_op *o = &ops[k];
        const jn_opinfo *oi = (unsigned)o->op < JN_NOPS ? jn_op_info(o->op) : NULL;
        if (!oi || o->nin < 0 || o->nin > JN_MAX_INS || o->nout < 1 || o->nout > JN_MAX_OUTS ||
            o->mode < JN_RP_RG_NEW || o->mode > JN_RP_RG_INTO || (o->mode == JN_RP_RG_INTO && o->nout != 1) ||
            o->grad < 0 || o->grad > 1) {
            bad = "an op's kind, arity or mode";
            break;
        }
        for (int i = 0; i < o->nin; i++)
            if (o->in[i] >= 0 ? o->in[i] >= nslots || !defined[o->in[i]] : -1 - o->in[i] >= nc)
                bad = "an input slot used before it is defined";
        for (int j = 0; j < oi->nattrs; j++)
            if (o->aval[j] >= nvals || JN_RP_AVAL_NEG(o->aval[j]) >= nvals ||
                (o->aval[j] != -1 && oi->attr_kind[j] != JN_A_FLOAT))
                bad = "an attribute's value index";
        for (int q = 0; q < o->nout; q++) {
            int32_t s = o->out[q];
            if (s < 0 || s >= nslots || (o->mode == JN_RP_RG_NEW) == defined[s]) bad = "an output slot";
            else defined[s] = 1;
        }
    }
    free(defined);
    if (bad) return (void)jn_error(JN_ERR_VALUE, "region %s: malformed template (%s)", name, bad), -1;
    rg_template *nt = realloc(G->t, (size_t)(G->nt + 1) * sizeof *nt);
    if (!nt) return (void)jn_error(JN_ERR_NOMEM, "janus replay: out of memory for a region"), -1;
    G->t = nt;
    rg_template *T = &G->t[G->nt];
    memset(T, 0, sizeof *T);
    T->name = strdup(name);
    T->ops = malloc((size_t)(nops ? nops : 1) * sizeof *T->ops);
    T->c = malloc((size_t)(nc ? nc : 1) * sizeof *T->c);
    T->slot = calloc((size_t)(nslots ? nslots : 1), sizeof *T->slot);
    T->g_view = calloc((size_t)(nslots ? nslots : 1), 1);
    if (!T->name || !T->ops || !T->c || !T->slot || !T->g_view) {
        free(T->name), free(T->ops), free(T->c), free(T->slot), free(T->g_view);
        return (void)jn_error(JN_ERR_NOMEM, "janus replay: out of memory for a region"), -1;
    }
    memcpy(T->ops, ops, (size_t)nops * sizeof *ops);
    memcpy(T->c, c, (size_t)nc * sizeof *c);
    T->nbound = nbound, T->nslots = nslots, T->nvals = nvals, T->nops = nops, T->nc = nc;
    rg_group_plan(T);
    rg_name *nm = name_of(G, name);
    if (!nm) {
        free(T->name), free(T->ops), free(T->c), free(T->slot), free(T->g_view);
        return (void)jn_error(JN_ERR_NOMEM, "janus replay: out of memory for a region"), -1;
    }
    nm->replaceable = 1;
    T->name_ix = (int)(nm - G->names);
    return G->nt++;
}

static jn_tensor *make_const(const jn_rp_region_const *c) {
    int fl = c->dtype == JN_F32 || c->dtype == JN_F64 || c->dtype == JN_F16 || c->dtype == JN_BF16;
    return fl ? jn_scalar_f64(c->v, (jn_dtype)c->dtype, 1) : jn_scalar_i64((int64_t)c->v, (jn_dtype)c->dtype, 1);
}

/* T's ops were just matched at consecutive tokens from at->pos: what each
 * of them proves there, kept for the next runs from that token.  Input j
 * of op k is known when the graph's ref names the token that made it in
 * this run (the slot's last writer, an earlier op of T); attributes when
 * the op's are the same every call (no value bound per call, no random
 * stream position). */
static void rg_plan_add(jn_replay *R, rg_template *T, const jn_rp_match_at *at) {
    if (T->nplan >= RG_MAX_PLANS) return;
    rg_plan *np = realloc(T->plan, (size_t)(T->nplan + 1) * sizeof *np);
    if (!np) return; /* no plan: op by op, as without one */
    T->plan = np;
    uint64_t *skip = malloc((size_t)T->nops * sizeof *skip);
    int32_t *wr_op = malloc((size_t)T->nslots * sizeof *wr_op);
    uint8_t *wr_q = malloc((size_t)T->nslots);
    if (skip && wr_op && wr_q) {
        for (int i = 0; i < T->nslots; i++) wr_op[i] = -1;
        for (int k = 0; k < T->nops; k++) {
            const jn_rp_region_op *o = &T->ops[k];
            int32_t ptok[JN_MAX_INS];
            uint8_t pout[JN_MAX_INS];
            for (int j = 0; j < o->nin; j++) {
                int32_t sl = o->in[j];
                ptok[j] = sl >= 0 && wr_op[sl] >= 0 ? at->pos + wr_op[sl] : -1;
                pout[j] = sl >= 0 && wr_op[sl] >= 0 ? wr_q[sl] : 0;
            }
            int fixed = !(jn_op_info(o->op)->flags & JN_F_RAND);
            for (int j = 0; j < jn_op_info(o->op)->nattrs; j++) fixed &= o->aval[j] == -1;
            jn_rp_match_known_op ko = {o->op, o->nin, ptok, pout, fixed ? o->a.a : NULL};
            skip[k] = jn_rp_match_known(R->mt, at->graph, at->pos + k, &ko);
            for (int q = 0; q < o->nout; q++) wr_op[o->out[q]] = k, wr_q[o->out[q]] = (uint8_t)q;
        }
        T->plan[T->nplan++] = (rg_plan){at->graph, at->pos, skip};
        skip = NULL;
    }
    free(skip), free(wr_op), free(wr_q);
}

static const rg_plan *rg_plan_find(const rg_template *T, int32_t graph, int32_t pos0) {
    for (int i = 0; i < T->nplan; i++)
        if (T->plan[i].pos0 == pos0 && T->plan[i].graph == graph) return &T->plan[i];
    return NULL;
}

/* Op 0 is fed with every check; its token (the cursor's, less one) picks
 * the plan.  Op k > 0 is fed with its plan's checks left out only while
 * ops 0..k-1 were each matched once, at consecutive tokens and events of
 * one iteration (chain == k): then every ref the plan skips names the
 * event that made the very tensor the op reads.  jn_rp_match_feed_at
 * checks once more that the cursor stands at that token. */
jn_rp_match_kind rp_region_feed(jn_replay *R, const jn_rp_match_event *ev, jn_rp_match_result *res) {
    rg_batch *B = &R->rg->b;
    int k = B->k, first = B->seen != k && ev->op == B->T->ops[k].op;
    B->seen = k;
    jn_rp_match_kind kind;
    if (first && k > 0 && B->chain == k && B->plan) {
        jn_rp_match_at at = B->at0;
        at.pos += k, at.nev += k;
        kind = jn_rp_match_feed_at(R->mt, ev, &at, B->plan->skip[k], res);
    } else {
        kind = jn_rp_match_feed(R->mt, ev, res);
    }
    jn_rp_match_at a;
    if (!first || B->chain != k || kind == JN_RP_MATCH_MISS || !jn_rp_match_where(R->mt, &a)) return kind;
    if (k == 0) { /* the cursor is one past the token op 0 matched, one event on */
        a.pos--, a.nev--;
        B->at0 = a;
        B->chain = 1;
        B->plan = rg_plan_find(B->T, a.graph, a.pos);
    } else if (a.graph == B->at0.graph && a.pos == B->at0.pos + k + 1 && a.loop == B->at0.loop && a.it == B->at0.it &&
               a.nev == B->at0.nev + k + 1) {
        B->chain++;
    }
    return kind;
}

jn_status jn_rp_region_run(jn_replay *R, int id, jn_tensor *const *bound, const double *vals, int nret,
                           const int32_t *ret_slot, jn_tensor **ret) {
    struct rp_regions *G = R->rg;
    if (!G || id < 0 || id >= G->nt) return jn_error(JN_ERR_VALUE, "janus replay: no region template %d", id);
    rg_template *T = &G->t[id];
    if (T->dropped) return jn_error(JN_ERR_VALUE, "janus replay: region %s: template %d was dropped", T->name, id);
    jn_tensor **S = T->slot;
    memcpy(S, bound, (size_t)T->nbound * sizeof *S);
    jn_status s = JN_OK;
    /* one autograd node for the call's ops (rg_group_plan) */
    jn_ag_group grp;
    int group = rg_group_use(T, nret, ret_slot);
    if (group) jn_ag_group_begin(&grp, T->g_members, T->g_edges, T->g_outs);
    int k = 0, grad0 = jn_grad_enabled(), grad = grad0;
    rg_batch *B = &G->b;
    if (R->cfg.region_batch && jn_rt_capturing && R->mt && T->nops) {
        B->T = T, B->seen = -1, B->chain = 0, B->plan = NULL;
        R->rg_batch = 1;
    }
    for (; k < T->nops && s == JN_OK; k++) {
        const jn_rp_region_op *o = &T->ops[k];
        B->k = k;
        if (o->grad != grad) jn_set_grad_enabled(grad = o->grad);
        jn_tensor *in[JN_MAX_INS], *out[JN_MAX_OUTS], *made[JN_MAX_INS];
        int nmade = 0;
        for (int i = 0; i < o->nin && s == JN_OK; i++) {
            if (o->in[i] >= 0) {
                in[i] = S[o->in[i]];
            } else if (!(in[i] = made[nmade++] = make_const(&T->c[-1 - o->in[i]]))) {
                nmade--;
                s = jn_error(JN_ERR_NOMEM, "janus replay: out of memory for a region's scalar");
            }
        }
        if (s == JN_OK) {
            jn_attrs a;
            int na = jn_op_info(o->op)->nattrs;
            memcpy(&a, &o->a, sizeof(jn_attr) * (size_t)na);
            for (int j = 0; j < na; j++)
                if (o->aval[j] >= 0) a.a[j].f = vals[o->aval[j]];
                else if (o->aval[j] != -1) a.a[j].f = -vals[JN_RP_AVAL_NEG(o->aval[j])];
            if (o->mode == JN_RP_RG_INTO) {
                s = jn_dispatch_into(o->op, o->nin, in, &a, S[o->out[0]]);
            } else if ((s = T->ic || (T->ic = calloc((size_t)T->nops, sizeof *T->ic))
                                ? jn_rt_dispatch_cached(o->op, o->nin, in, &a, out, &T->ic[k])
                                : jn_dispatch(o->op, o->nin, in, &a, out)) == JN_OK) {
                for (int q = 0; q < o->nout; q++) {
                    if (o->mode == JN_RP_RG_NEW) S[o->out[q]] = out[q]; /* owned until the end */
                    else jn_tensor_decref(out[q]);                     /* a reference to the input it wrote */
                }
            }
        }
        for (int i = 0; i < nmade; i++) jn_tensor_decref(made[i]);
        if (s != JN_OK) break;
    }
    if (grad != grad0) jn_set_grad_enabled(grad0);
    if (group) jn_ag_group_end(&grp);
    if (R->rg_batch) {
        R->rg_batch = 0;
        if (s == JN_OK && B->chain == T->nops && !B->plan) rg_plan_add(R, T, &B->at0);
        B->T = NULL;
    }
    for (int q = 0; s == JN_OK && q < nret; q++) {
        if (ret_slot[q] < 0 || ret_slot[q] >= T->nslots || !S[ret_slot[q]]) {
            while (q--) jn_tensor_decref(ret[q]);
            s = jn_error(JN_ERR_VALUE, "region %s: an output slot out of range", T->name);
            break;
        }
        ret[q] = S[ret_slot[q]];
        jn_tensor_incref(ret[q]);
    }
    /* the new outputs of the ops that ran, once each */
    for (int j = 0; j < k && j < T->nops; j++) {
        const jn_rp_region_op *o = &T->ops[j];
        if (o->mode != JN_RP_RG_NEW) continue;
        for (int q = 0; q < o->nout; q++) {
            if (S[o->out[q]]) jn_tensor_decref(S[o->out[q]]);
            S[o->out[q]] = NULL;
        }
    }
    if (s == JN_OK) G->replaced++, G->calls++, G->names[T->name_ix].replaced++, G->names[T->name_ix].calls++;
    return s;
}

void jn_rp_region_drop(jn_replay *R, int id) {
    struct rp_regions *G = R->rg;
    if (!G || id < 0 || id >= G->nt || G->t[id].dropped) return;
    rg_template *T = &G->t[id];
    for (int p = 0; p < T->nplan; p++) free(T->plan[p].skip);
    free(T->ops), free(T->c), free(T->slot), free(T->g_view), free(T->ic), free(T->plan);
    T->ops = NULL, T->c = NULL, T->slot = NULL, T->g_view = NULL, T->ic = NULL, T->plan = NULL;
    T->nops = T->nc = T->nplan = 0;
    T->dropped = 1;
}

int jn_rp_region_strict(const jn_replay *R) { return R->cfg.strict; }

void jn_rp_region_replaced(jn_replay *R, const char *name) {
    struct rp_regions *G = regions(R);
    rg_name *n = G ? name_of(G, name) : NULL;
    if (!n) return;
    n->replaceable = 1;
    n->calls++, n->replaced++;
    G->calls++, G->replaced++;
}

static rg_name *name_of(struct rp_regions *G, const char *name) {
    for (int i = 0; i < G->nnames; i++)
        if (!strcmp(G->names[i].name, name)) return &G->names[i];
    rg_name *n = realloc(G->names, (size_t)(G->nnames + 1) * sizeof *n);
    if (!n) return NULL;
    G->names = n;
    n = &G->names[G->nnames];
    if (!(n->name = strdup(name))) return NULL;
    n->refused = n->replaceable = 0;
    n->calls = n->replaced = 0;
    G->nnames++;
    return n;
}

/* One more call of reason why for region n (named name). */
static void count_reason(struct rp_regions *G, rg_name *n, const char *name, const char *why) {
    char buf[1024];
    snprintf(buf, sizeof buf, "%s: %s", name, why);
    for (int i = 0; i < G->nwhy; i++)
        if (!strcmp(G->why[i].why, buf)) {
            G->why[i].count++;
            return;
        }
    rg_reason *w = realloc(G->why, (size_t)(G->nwhy + 1) * sizeof *w);
    if (!w) return;
    G->why = w;
    if (!(w[G->nwhy].why = strdup(buf))) return;
    w[G->nwhy].name_ix = n ? (int)(n - G->names) : -1;
    w[G->nwhy++].count = 1;
}

void jn_rp_region_note(jn_replay *R, const char *name, const char *why, int refused) {
    struct rp_regions *G = regions(R);
    if (!G) return;
    G->calls++;
    rg_name *n = name_of(G, name);
    if (n) n->calls++;
    if (n && refused) n->refused = 1;
    count_reason(G, n, name, why);
}

void jn_rp_region_note_also(jn_replay *R, const char *name, const char *why) {
    struct rp_regions *G = regions(R);
    if (G) count_reason(G, name_of(G, name), name, why);
}

void jn_rp_region_get_stats(const jn_replay *R, jn_rp_region_stats *st) {
    memset(st, 0, sizeof *st);
    const struct rp_regions *G = R->rg;
    if (!G) return;
    st->calls = G->calls, st->replaced = G->replaced;
    for (int i = 0; i < G->nnames; i++)
        st->nrefused += G->names[i].refused, st->nreplaceable += G->names[i].replaceable && !G->names[i].refused;
    st->nregions = G->nnames;
    st->batch_ops = jn_rp_match_known_events(R->mt);
    for (int i = 0; i < G->nt; i++) st->batch_plans += G->t[i].nplan;
}

const char *jn_rp_region_info(const jn_replay *R, int i, int64_t *calls, int64_t *replaced, int *refused) {
    const struct rp_regions *G = R->rg;
    if (!G || i < 0 || i >= G->nnames) return NULL;
    *calls = G->names[i].calls, *replaced = G->names[i].replaced, *refused = G->names[i].refused;
    return G->names[i].name;
}

const char *jn_rp_region_reason(const jn_replay *R, int rank, int64_t *count) {
    const struct rp_regions *G = R->rg;
    if (!G || rank < 0 || rank >= G->nwhy) return NULL;
    /* rank-th by count, ties by first seen: small tables, a selection each time */
    int used[16] = {0}, pick = -1;
    if (rank >= 16) return NULL;
    for (int r = 0; r <= rank; r++) {
        pick = -1;
        for (int i = 0; i < G->nwhy; i++) {
            int taken = 0;
            for (int q = 0; q < r; q++) taken |= used[q] == i;
            if (!taken && (pick < 0 || G->why[i].count > G->why[pick].count)) pick = i;
        }
        used[r] = pick;
    }
    *count = G->why[pick].count;
    return G->why[pick].why;
}

const char *jn_rp_region_reason_at(const jn_replay *R, int i, const char **region, int64_t *count) {
    const struct rp_regions *G = R->rg;
    if (!G || i < 0 || i >= G->nwhy) return NULL;
    const rg_reason *w = &G->why[i];
    *count = w->count;
    if (w->name_ix < 0) return *region = "", w->why;
    *region = G->names[w->name_ix].name;
    return w->why + strlen(*region) + 2; /* past "<region>: " */
}

void rp_region_summary(const jn_replay *R, char *buf, size_t n) {
    buf[0] = 0;
    jn_rp_region_stats st;
    jn_rp_region_get_stats(R, &st);
    if (!st.calls) return;
    int64_t c = 0;
    const char *top = jn_rp_region_reason(R, 0, &c);
    snprintf(buf, n, "; regions: %lld of %lld calls ran without their Python%s%s", (long long)st.replaced,
             (long long)st.calls, top ? " (top reason the Python ran: " : "", top ? top : "");
    if (top && strlen(buf) + 2 < n) strcat(buf, ")");
    /* per region, the six with the most calls: replaced/calls */
    const struct rp_regions *G = R->rg;
    enum { NSHOW = 6 };
    int shown[NSHOW] = {-1, -1, -1, -1, -1, -1};
    for (int k = 0; k < NSHOW; k++) {
        for (int i = 0; i < G->nnames; i++) {
            int taken = 0;
            for (int q = 0; q < k; q++) taken |= shown[q] == i;
            if (!taken && (shown[k] < 0 || G->names[i].calls > G->names[shown[k]].calls)) shown[k] = i;
        }
        size_t len = strlen(buf);
        if (shown[k] < 0 || len + 8 >= n) break;
        const rg_name *nm = &G->names[shown[k]];
        snprintf(buf + len, n - len, "%s%s %lld/%lld%s", k ? ", " : " [per region: ", nm->name, (long long)nm->replaced,
                 (long long)nm->calls, nm->refused ? " refused" : "");
    }
    size_t len = strlen(buf);
    if (shown[0] >= 0 && len + 2 < n) strcat(buf, "]");
}

void rp_region_free(jn_replay *R) {
    struct rp_regions *G = R->rg;
    if (!G) return;
    for (int i = 0; i < G->nt; i++)
    {
        for (int p = 0; p < G->t[i].nplan; p++) free(G->t[i].plan[p].skip);
        free(G->t[i].name), free(G->t[i].ops), free(G->t[i].c), free(G->t[i].slot), free(G->t[i].g_view),
            free(G->t[i].ic), free(G->t[i].plan);
    }
    for (int i = 0; i < G->nwhy; i++) free(G->why[i].why);
    for (int i = 0; i < G->nnames; i++) free(G->names[i].name);
    for (int i = 0; i < G->ndet; i++) jn_tensor_decref(G->det[i]);
    free(G->t), free(G->why), free(G->names), free(G->log), free(G->det);
    free(G);
    R->rg = NULL;
}
