/* selfcheck.c -- a graph with loops, expanded for every recorded exemplar,
 * must be that exemplar op for op.
 *
 * loops.c proves its loop relations on the recorded data and generalize.c
 * writes them down as IR; this pass checks the written result itself, so a
 * mistake in either never reaches a graph.  For each exemplar of the
 * structure the symbols take that exemplar's values (the per-exemplar
 * vectors generalize.c matched them from; the Philox offset's first value),
 * the graph is walked in order with every loop unrolled trip times (its
 * induction variable bound, carries passed on, collects gathered), and each
 * node is compared with the next recorded op: op, arity, every attribute
 * after evaluating its expressions (float attributes fed from inputs
 * aside), output dtypes and evaluated shapes, and dataflow (each input is
 * the recorded value the matching op read; graph inputs bind to one
 * recorded external each, Python scalars to scalar inputs).  Nodes the
 * analyzer added are resolved, not matched: select(collect, 0, index)
 * yields the collected value of that iteration (the index must be in
 * range), and the permute/clone/view chain that rewrites a stack/cat of a
 * collect matches the recorded stack/cat over exactly the collected values;
 * select(stacked input, 0, i) binds iteration i's recorded external where
 * it is first read (one per iteration, every later read the same).
 * All recorded ops must be consumed, every state write-back must be the
 * recorded final value of the state it writes and every kept value (each
 * iteration's of a kept collect) one the segment produced.  The first difference is reported ("self-check of the
 * loop graph against exemplar 2 (steps 4..9), recorded op 17 (mm): input
 * 1: the graph reads %31 (recorded op 12's value), the trace op 13's"),
 * and the caller then treats each trip count as its own structure.
 */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "an_internal.h"

static _Thread_local char why_buf[400];

typedef struct {
    an_gen *G;
    const an_ex *x;
    int e;
    int64_t *symv;
    int32_t *xv;          /* IR value -> recorded value, -1 */
    int32_t **clist;      /* IR collect value -> recorded values per iteration; a stacked
                           * input (an_tmpl.each_of_ref) -> the externals bound so far, -1 */
    int32_t *clen;
    uint8_t *each;        /* IR value: a stacked input */
    int32_t *sel_in, *sel_it; /* IR value: select(stacked input, 0, it) -> input value + 1, it */
    int32_t pos;          /* next recorded op */
} sc;

static const char *fail(sc *S, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static const char *fail(sc *S, const char *fmt, ...) {
    int k = snprintf(why_buf, sizeof why_buf, "self-check of the loop graph against exemplar %d (steps %lld..%lld), "
                     "recorded op %d (%s): ", S->e, (long long)S->x->step_lo, (long long)S->x->step_hi, S->pos,
                     S->pos < S->x->nops ? an_op_name(S->x->ops[S->pos].op) : "end");
    if (k < 0 || (size_t)k >= sizeof why_buf) return why_buf;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(why_buf + k, sizeof why_buf - (size_t)k, fmt, ap);
    va_end(ap);
    return why_buf;
}

static int eval(sc *S, jn_ir_dim d, int64_t *out) {
    return jn_ir_dim_eval(S->G->g, d, S->symv, out) == JN_OK;
}

static int fsame(double a, double b) { return a == b || (isnan(a) && isnan(b)); }

/* The recorded stack/cat at pos over exactly collect value C's list? */
static int is_consumer(sc *S, int32_t C) {
    const an_op *o = &S->x->ops[S->pos];
    if (!S->clist[C] || S->each[C] || o->nin != S->clen[C]) return 0;
    for (int32_t k = 0; k < o->nin; k++)
        if (S->x->refs[o->ref0 + k].val != S->clist[C][k]) return 0;
    return 1;
}

/* The recorded op at pos is a template op whose stack/cat generalize.c
 * rewrote from a collect (G->coll_out): then the graph has the rewrite
 * there (or nothing, for stack(dim=0)), whatever node comes next -- which
 * may be another stack (an LSTM's final states after its last layer's
 * outputs). */
static int rewritten_at(const sc *S) {
    const an_tmpl *T = S->G->T;
    for (int32_t t = 0; t < T->nt; t++)
        if (T->loop[t] < 0 && T->eop[S->e][t] == S->pos) return S->G->coll_out[t] >= 0;
    return 0;
}

/* Node n; *skip = extra nodes it consumed (a consumer chain). */
static const char *node(sc *S, int32_t n, int32_t *skip) {
    const jn_ir_graph *g = S->G->g;
    const jn_ir_node *nd = &g->nodes[n];
    const an_ex *x = S->x;
    *skip = 0;
    if (nd->op == JN_OP_select && nd->nin == 1 && S->clist[nd->in[0]]) {
        int64_t idx;
        if (!eval(S, nd->attrs.a[1].i, &idx)) return fail(S, "the index of node %d does not evaluate", n);
        if (idx < 0 || idx >= S->clen[nd->in[0]])
            return fail(S, "node %d selects iteration %lld of a loop that ran %d", n, (long long)idx,
                        S->clen[nd->in[0]]);
        S->xv[nd->out[0]] = S->clist[nd->in[0]][idx];
        if (S->each[nd->in[0]]) S->sel_in[nd->out[0]] = nd->in[0] + 1, S->sel_it[nd->out[0]] = (int32_t)idx;
        return NULL;
    }
    if (S->pos >= x->nops) return fail(S, "the graph has node %d (%s) after the last recorded op", n, an_op_name(nd->op));
    const an_op *o = &x->ops[S->pos];
    if ((o->op == JN_OP_stack || o->op == JN_OP_cat) && ((int)nd->op != o->op || rewritten_at(S))) {
        /* a stack/cat of a loop's values: rewritten from its collect */
        int64_t d = x->attrv[o->attr0].i;
        int stack = o->op == JN_OP_stack, r = o->nin ? x->refs[o->ref0].ndim : 0;
        if (d < 0) d += stack ? r + 1 : r;
        int nchain = (d > 0) + (d > 0) + !stack; /* permute + clone when d > 0, view for cat */
        int32_t C = -1;
        for (int32_t v = 0; v < g->nvalues && C < 0; v++)
            if (is_consumer(S, v)) C = v;
        if (C < 0) return fail(S, "graph node %d is %s", n, an_op_name(nd->op));
        if (!nchain) { /* stack(dim=0) is the collect itself */
            S->xv[C] = x->refs[o->ref0 + o->nin].val;
            S->pos++;
            return node(S, n, skip);
        }
        int32_t cur = C;
        static const jn_op chain_ops[3] = {JN_OP_permute, JN_OP_clone, JN_OP_view};
        for (int k = 0, i = 0; k < 3; k++) {
            if ((k == 0 && !(d > 0)) || (k == 1 && !(d > 0)) || (k == 2 && stack)) continue;
            const jn_ir_node *c = n + i < g->nnodes ? &g->nodes[n + i] : NULL;
            if (!c || c->op != chain_ops[k] || c->nin != 1 || c->in[0] != cur)
                return fail(S, "the rewrite of a %s of loop values is not the expected %s", an_op_name(o->op),
                            an_op_name(chain_ops[k]));
            cur = c->out[0];
            i++;
        }
        S->xv[cur] = x->refs[o->ref0 + o->nin].val;
        *skip = nchain - 1;
        S->pos++;
        return NULL;
    }
    if ((int)nd->op != o->op || nd->nin != o->nin || nd->nout != o->nout)
        return fail(S, "the graph has %s (node %d)", an_op_name(nd->op), n);
    for (int q = 0; q < o->nin; q++) {
        const an_ref *rf = &x->refs[o->ref0 + q];
        int32_t v = nd->in[q];
        const jn_ir_value *iv = &g->values[v];
        if (rf->role == JN_TR_SCALAR) {
            if (iv->kind != JN_IR_V_INPUT || (g->inputs[iv->def].kind != JN_IR_IN_SCALAR &&
                                              g->inputs[iv->def].kind != JN_IR_IN_CONST))
                return fail(S, "input %d is a Python number, the graph reads %%%d", q, v);
            continue;
        }
        if (iv->kind == JN_IR_V_LOOP_PARAM && S->xv[v] < 0) {
            /* a loop seeded by a graph input not read before the loop */
            int32_t init = g->loops[iv->def].carry[iv->idx].init;
            if (g->values[init].kind == JN_IR_V_INPUT && S->xv[init] < 0 && x->vals[rf->val].def < 0)
                S->xv[init] = S->xv[v] = rf->val;
        }
        if (S->xv[v] < 0 && S->sel_in[v]) { /* iteration it's tensor of a stacked input: bound here */
            if (x->vals[rf->val].def >= 0)
                return fail(S, "input %d: a stacked graph input's iteration, the trace an op's output", q);
            S->xv[v] = S->clist[S->sel_in[v] - 1][S->sel_it[v]] = rf->val;
        }
        if (iv->kind == JN_IR_V_INPUT && S->xv[v] < 0) {
            if (x->vals[rf->val].def >= 0) return fail(S, "input %d: graph input %%%d, the trace an op's output", q, v);
            S->xv[v] = rf->val;
        }
        if (S->xv[v] != rf->val) {
            int32_t a = S->xv[v] >= 0 ? x->vals[S->xv[v]].def : -2, b = x->vals[rf->val].def;
            return fail(S, "input %d: the graph reads %%%d (recorded op %d's value), the trace op %d's", q, v, a, b);
        }
    }
    const jn_opinfo *info = jn_op_info((jn_op)o->op);
    for (int k = 0; k < info->nattrs && k < o->nattrs; k++) {
        const jn_attr *ra = &x->attrv[o->attr0 + k], *ga = &nd->attrs.a[k];
        int64_t val;
        switch (info->attr_kind[k]) {
        case JN_A_INTS:
            if (ga->l.n != ra->l.n) return fail(S, "attribute %s has %d entries, recorded %d", info->attr_name[k],
                                                ga->l.n, ra->l.n);
            for (int j = 0; j < ra->l.n; j++)
                if (!eval(S, ga->l.v[j], &val) || val != ra->l.v[j])
                    return fail(S, "attribute %s[%d] is %lld, recorded %lld", info->attr_name[k], j, (long long)val,
                                (long long)ra->l.v[j]);
            break;
        case JN_A_FLOAT:
            if (nd->attr_input[k] < 0 && !fsame(ga->f, ra->f))
                return fail(S, "attribute %s is %g, recorded %g", info->attr_name[k], ga->f, ra->f);
            break;
        case JN_A_INT:
            if (!eval(S, ga->i, &val) || val != ra->i)
                return fail(S, "attribute %s is %lld, recorded %lld", info->attr_name[k], (long long)val,
                            (long long)ra->i);
            break;
        default:
            if (ga->i != ra->i) return fail(S, "attribute %s differs", info->attr_name[k]);
        }
    }
    for (int j = 0; j < o->nout; j++) {
        const an_ref *rf = &x->refs[o->ref0 + o->nin + j];
        const jn_ir_value *ov = &g->values[nd->out[j]];
        if (ov->dtype != rf->dtype || ov->ndim != rf->ndim) 
            return fail(S, "output %d is dtype %d rank %d in the graph, recorded dtype %d rank %d", j, (int)ov->dtype,
                        ov->ndim, (int)rf->dtype, rf->ndim);
        for (int d = 0; d < rf->ndim; d++) {
            int64_t val;
            if (!eval(S, ov->shape[d], &val) || val != rf->shape[d])
                return fail(S, "output %d dim %d is %lld, recorded %lld", j, d, (long long)val,
                            (long long)rf->shape[d]);
        }
        S->xv[nd->out[j]] = rf->val;
    }
    S->pos++;
    return NULL;
}

static const char *run_loop(sc *S, int32_t l) {
    const jn_ir_graph *g = S->G->g;
    const jn_ir_loop *L = &g->loops[l];
    int64_t K;
    if (!eval(S, L->trip, &K) || K < 0 || K > S->x->nops)
        return fail(S, "loop L%d's trip count does not evaluate to a count", l);
    for (int32_t k = 0; k < L->ncarry; k++) S->xv[L->carry[k].param] = S->xv[L->carry[k].init];
    for (int32_t k = 0; k < L->ncollect; k++) {
        int32_t out = L->collect[k].out;
        free(S->clist[out]);
        if (!(S->clist[out] = malloc(sizeof(int32_t) * (size_t)(K + 1)))) return "out of memory";
        S->clen[out] = (int32_t)K;
    }
    for (int64_t it = 0; it < K; it++) {
        S->symv[L->ivar] = it;
        for (int32_t n = L->first; n < L->first + L->count; n++) {
            int32_t skip;
            const char *w = node(S, n, &skip);
            if (w) return w;
            n += skip;
        }
        for (int32_t k = 0; k < L->ncollect; k++) S->clist[L->collect[k].out][it] = S->xv[L->collect[k].body];
        int32_t nx[64];
        for (int32_t k = 0; k < L->ncarry && k < 64; k++) nx[k] = S->xv[L->carry[k].next];
        for (int32_t k = 0; k < L->ncarry && k < 64; k++) S->xv[L->carry[k].param] = nx[k];
    }
    for (int32_t k = 0; k < L->ncarry; k++) S->xv[L->carry[k].out] = S->xv[L->carry[k].param];
    return NULL;
}

static const char *check_one(sc *S) {
    an_gen *G = S->G;
    const jn_ir_graph *g = G->g;
    for (int32_t y = 0; y < g->nsyms; y++) S->symv[y] = 0;
    for (int64_t k = 0; k < G->ncands; k++) {
        const an_cand *cd = &G->cands[k];
        if (cd->sym < 0) continue;
        if (cd->vec) S->symv[cd->sym] = cd->vec[S->e];
        else if (cd->firsts) S->symv[cd->sym] = cd->firsts[S->e];
    }
    if (G->rng >= 0 && G->rng_vec) S->symv[G->rng] = G->rng_vec[S->e];
    for (int32_t v = 0; v < g->nvalues; v++) {
        S->xv[v] = -1;
        S->sel_in[v] = 0;
        if (!S->each[v]) continue;
        /* a stacked input: one external per iteration of its loop, bound when read */
        int64_t K;
        if (!eval(S, g->values[v].shape[0], &K) || K < 0 || K > S->x->nops)
            return fail(S, "stacked input %%%d's trip count does not evaluate to a count", v);
        free(S->clist[v]);
        if (!(S->clist[v] = malloc(sizeof(int32_t) * (size_t)(K + 1)))) return "out of memory";
        for (int64_t k = 0; k < K; k++) S->clist[v][k] = -1;
        S->clen[v] = (int32_t)K;
    }
    S->pos = 0;
    for (int32_t n = 0; n < g->nnodes; n++) {
        const jn_ir_node *nd = &g->nodes[n];
        const char *w;
        if (nd->loop >= 0) {
            if (g->loops[nd->loop].first != n) return fail(S, "node %d starts inside loop L%d", n, nd->loop);
            if (g->loops[nd->loop].ncarry > 64) return fail(S, "loop L%d has more than 64 carries", nd->loop);
            if ((w = run_loop(S, nd->loop))) return w;
            n = g->loops[nd->loop].first + g->loops[nd->loop].count - 1;
            continue;
        }
        int32_t skip;
        if ((w = node(S, n, &skip))) return w;
        n += skip;
    }
    if (S->pos != S->x->nops) return fail(S, "the graph covers %d of %d recorded ops", S->pos, S->x->nops);
    for (int32_t k = 0; k < g->noutputs; k++) {
        const jn_ir_output *o = &g->outputs[k];
        if (o->kind != JN_IR_OUT_STATE) {
            /* a kept value: the final value of a tensor this exemplar defined
             * (of one per iteration: a collect of them, an_tloop.kept) */
            if (S->clist[o->value]) {
                for (int32_t it = 0; it < S->clen[o->value]; it++) {
                    int32_t v = S->clist[o->value][it];
                    if (v < 0 || S->x->vals[v].def < 0)
                        return fail(S, "kept output %d, iteration %d, is not a value the segment produced", k, it);
                }
                continue;
            }
            int32_t v = S->xv[o->value];
            if (v < 0 || S->x->vals[v].def < 0)
                return fail(S, "kept output %d is not a value the segment produced", k);
            continue;
        }
        int32_t v = S->xv[o->value], in = S->xv[g->inputs[o->state].value];
        if (v < 0 || in < 0 || S->x->vals[v].overwrites != in)
            return fail(S, "state write-back %d is not the recorded final value of its state", k);
    }
    return NULL;
}

const char *an_selfcheck(an_gen *G) {
    const jn_ir_graph *g = G->g;
    sc S;
    memset(&S, 0, sizeof S);
    S.G = G;
    S.symv = calloc((size_t)g->nsyms + 1, sizeof *S.symv);
    S.xv = malloc(sizeof(int32_t) * (size_t)(g->nvalues + 1));
    S.clist = calloc((size_t)g->nvalues + 1, sizeof *S.clist);
    S.clen = calloc((size_t)g->nvalues + 1, sizeof *S.clen);
    S.each = calloc((size_t)g->nvalues + 1, 1);
    S.sel_in = calloc((size_t)g->nvalues + 1, sizeof *S.sel_in);
    S.sel_it = calloc((size_t)g->nvalues + 1, sizeof *S.sel_it);
    const char *w = NULL;
    if (!S.symv || !S.xv || !S.clist || !S.clen || !S.each || !S.sel_in || !S.sel_it) w = "out of memory";
    const an_ex *E0 = G->E[0];
    for (int32_t r = 0; r < E0->nrefs && !w && G->T->each_of_ref; r++)
        if (G->T->each_of_ref[r] && G->irval[E0->refs[r].val] >= 0) S.each[G->irval[E0->refs[r].val]] = 1;
    for (int e = 0; e < G->m && !w; e++) {
        S.e = e;
        S.x = G->E[e];
        w = check_one(&S);
    }
    if (S.clist)
        for (int32_t v = 0; v < g->nvalues; v++) free(S.clist[v]);
    free(S.clist);
    free(S.clen);
    free(S.each);
    free(S.sel_in);
    free(S.sel_it);
    free(S.symv);
    free(S.xv);
    return w;
}
