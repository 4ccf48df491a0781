/* matcher.c -- the replay matcher's program for each graph (the format is
 * ir/jn_ir_match.h), built while the graph is generalized, and
 * jn_an_events, which hands a run's recorded events to a caller (the
 * offline matcher tests replay them).
 *
 * The tokens are the structure's template ops that were RECORDED (not the
 * splices functionalize.c adds), in template order; loop bodies once.
 * Every ref is found by following tensor OBJECTS (an_ref.obj): an input's
 * object was created either outside the segment (a graph input) or by an
 * earlier op's output; which iteration of which token, relative to the
 * reader, is inferred over EVERY instance in EVERY exemplar of the
 * structure (so "iteration trip-1-c" and "iteration c" are told apart by
 * exemplars with other trip counts), and a graph whose instances disagree
 * with every hypothesis gets no matcher, with the reason noted
 * (jn_an_matcher_missing) rather than a guess.
 */
#include <stdlib.h>
#include <string.h>

#include "an_internal.h"
#include "jn_ir_match.h"

/* ------------------------------------------------------ result state */
static _Thread_local unsigned char *mbuf;
static _Thread_local int64_t mlen, mcap;
static _Thread_local uint32_t mgraphs;
static _Thread_local char **missing;
static _Thread_local int nmissing;
static _Thread_local int64_t capmissing;

void an_matcher_clear(void) {
    free(mbuf);
    mbuf = NULL;
    mlen = mcap = 0;
    mgraphs = 0;
    for (int i = 0; i < nmissing; i++) free(missing[i]);
    free(missing);
    missing = NULL;
    nmissing = 0;
    capmissing = 0;
}

int jn_an_matcher_missing_count(void) { return nmissing; }
const char *jn_an_matcher_missing(int i) { return i >= 0 && i < nmissing ? missing[i] : NULL; }

jn_status jn_an_matcher_section(void **data, size_t *len) {
    if (!data || !len) return jn_error(JN_ERR_VALUE, "jn_an_matcher_section: NULL output pointer");
    unsigned char *p = malloc((size_t)mlen + 12);
    if (!p) return jn_error(JN_ERR_NOMEM, "out of memory building the matcher section");
    memcpy(p, JN_IR_MATCH_MAGIC, 4);
    uint32_t v = JN_IR_MATCH_VERSION, n = mgraphs;
    for (int i = 0; i < 4; i++) p[4 + i] = (unsigned char)(v >> (8 * i)), p[8 + i] = (unsigned char)(n >> (8 * i));
    if (mlen) memcpy(p + 12, mbuf, (size_t)mlen);
    *data = p;
    *len = (size_t)mlen + 12;
    return JN_OK;
}

/* ------------------------------------------------------ byte writer */
typedef struct {
    unsigned char *p;
    int64_t n, cap;
    int oom;
} wbuf;

static void put(wbuf *w, uint64_t v, int bytes) {
    if (w->oom) return;
    if (an_grow(&w->p, &w->cap, w->n + bytes, 1)) {
        w->oom = 1;
        return;
    }
    for (int i = 0; i < bytes; i++) w->p[w->n++] = (unsigned char)(v >> (8 * i));
}
static void put_f64(wbuf *w, double d) {
    uint64_t u;
    memcpy(&u, &d, 8);
    put(w, u, 8);
}
static void put_str(wbuf *w, const char *s) {
    size_t n = strlen(s);
    put(w, n, 2);
    for (size_t i = 0; i < n; i++) put(w, (unsigned char)s[i], 1);
}

/* ----------------------------------------------- per exemplar indexing */
typedef struct {
    const an_ex *x;
    int32_t *op_t, *op_it;   /* per op: template op and iteration, -1 */
    int32_t *first_ref;      /* per object: its first ref */
    int32_t *refop;          /* per ref: its op */
    uint8_t *ext_ref;        /* per ref: an external value is first referenced here */
    int32_t nobj;
} xidx;

typedef struct {
    int kind;                /* 0 external, 1 token output, -1 unresolvable */
    int32_t t, k, it, K, in; /* token, output, its iteration, its loop's trip; in: input (E0) */
} desc;

typedef struct {
    desc d;
    int32_t it;              /* reader's iteration (0 outside loops) */
    int e;
} inst;

typedef struct {
    an_gen *G;
    xidx *X;
    const char *why;
    inst *I; int64_t nI, capI;
} mctx;

static void xidx_free(xidx *x) {
    free(x->op_t), free(x->op_it), free(x->first_ref), free(x->refop), free(x->ext_ref);
}

static int xidx_build(an_gen *G, int e, xidx *X) {
    const an_ex *x = G->E[e];
    const an_tmpl *T = G->T;
    memset(X, 0, sizeof *X);
    X->x = x;
    int32_t nobj = 0;
    for (int32_t r = 0; r < x->nrefs; r++)
        if (x->refs[r].obj >= nobj) nobj = x->refs[r].obj + 1;
    X->nobj = nobj;
    X->op_t = malloc(sizeof(int32_t) * ((size_t)x->nops + 1));
    X->op_it = malloc(sizeof(int32_t) * ((size_t)x->nops + 1));
    X->first_ref = malloc(sizeof(int32_t) * ((size_t)nobj + 1));
    X->refop = malloc(sizeof(int32_t) * ((size_t)x->nrefs + 1));
    X->ext_ref = calloc((size_t)x->nrefs + 1, 1);
    if (!X->op_t || !X->op_it || !X->first_ref || !X->refop || !X->ext_ref) return -1;
    for (int32_t i = 0; i < x->nops; i++) X->op_t[i] = X->op_it[i] = -1;
    for (int32_t o = 0; o < nobj; o++) X->first_ref[o] = -1;
    for (int32_t i = 0; i < x->nops; i++)
        for (int q = 0; q < x->ops[i].nin + x->ops[i].nout; q++) X->refop[x->ops[i].ref0 + q] = i;
    for (int32_t r = 0; r < x->nrefs; r++)
        if (x->refs[r].obj >= 0 && X->first_ref[x->refs[r].obj] < 0) X->first_ref[x->refs[r].obj] = r;
    for (int32_t v = 0; v < x->nvals; v++)
        if (x->vals[v].def < 0 && x->vals[v].ref >= 0 && x->vals[v].ref < x->nrefs) X->ext_ref[x->vals[v].ref] = 1;
    for (int32_t t = 0; t < T->nt; t++) {
        int32_t l = T->loop[t];
        if (l < 0) {
            int32_t i = T->eop[e][t];
            if (i >= 0 && i < x->nops) X->op_t[i] = t, X->op_it[i] = 0;
            continue;
        }
        const an_tloop *L = &T->loops[l];
        for (int32_t it = 0; it < L->count[e]; it++) {
            int64_t i = (int64_t)L->estart[e] + (int64_t)it * L->p + (t - L->tfirst);
            if (i >= 0 && i < x->nops) X->op_t[i] = t, X->op_it[i] = it;
        }
    }
    return 0;
}

/* E0's graph input for the external first referenced at ref r (-1 if none). */
static int32_t e0_input(an_gen *G, int32_t r) {
    const an_ex *x = G->E[0];
    int32_t v = x->refs[r].val;
    if (v < 0 || v >= x->nvals || x->vals[v].def >= 0) v = G->ext_at_ref[r];
    return v >= 0 ? G->irin[v] : -1;
}

/* Where the object of ref slot q of op i (exemplar e) comes from. */
static desc resolve(mctx *M, int e, int32_t i, int q) {
    const xidx *X = &M->X[e];
    const an_ex *x = X->x;
    desc d = {-1, -1, -1, -1, 0, -1};
    int32_t r = x->ops[i].ref0 + q, obj = x->refs[r].obj;
    if (obj < 0 || obj >= X->nobj) return d;
    int32_t fr = X->first_ref[obj], fo = X->refop[fr];
    int slot = fr - x->ops[fo].ref0;
    if (slot < x->ops[fo].nin || X->ext_ref[fr]) {
        d.kind = 0;
        d.in = e == 0 ? e0_input(M->G, fr) : -2;
        if (e == 0 && d.in < 0) d.kind = -1;
        return d;
    }
    if (x->ops[fo].synth || X->op_t[fo] < 0) return d;
    d.kind = 1;
    d.t = X->op_t[fo];
    d.k = slot - x->ops[fo].nin;
    d.it = X->op_it[fo];
    int32_t l = M->G->T->loop[d.t];
    d.K = l >= 0 ? M->G->T->loops[l].count[e] : 0;
    return d;
}

typedef struct {
    int kind, mode;
    int32_t a, b;
    int64_t c;
    int has_init;
    int ikind, imode;
    int32_t ia, ib;
    int64_t ic;
} mref;

static int choose(mctx *M, const inst *I, int64_t n, int32_t rl, int allow_prev, mref *out);

/* out: output k of token t in mode, read as init where the mode says (PREV
 * in iteration 0, SEED at the source loop's iteration -1). */
static int with_init(mref *out, int32_t t, int32_t k, int mode, const mref *init) {
    out->kind = JN_IR_MR_TOKEN;
    out->a = t;
    out->b = k;
    out->mode = mode;
    out->has_init = 1;
    out->ikind = init->kind;
    out->imode = init->mode;
    out->ia = init->a;
    out->ib = init->b;
    out->ic = init->c;
    return 0;
}

/* The mode and c of a cross-loop ref (source loop lc, reader loop rl) that
 * explains every instance, 0; -1 when neither ABS nor END does.  seed_t/k:
 * instances that are not that token's are its loop's iteration -1 (the
 * carry seed: JN_IR_MM_SEED), -1 when there are none. */
static int cross_mode(mctx *M, const inst *I, int64_t n, int32_t rl, int32_t lc, int32_t seed_t, int32_t seed_k,
                      mref *out) {
    const an_tmpl *T = M->G->T;
    int rel = rl >= 0;
    for (int end = 0; end < 2; end++) {
        int ok = 1;
        int64_t c0 = 0;
        for (int64_t k = 0; k < n && ok; k++) {
            const desc *d = &I[k].d;
            int seed = seed_t >= 0 && !(d->kind == 1 && d->t == seed_t && d->k == seed_k);
            int64_t it = seed ? -1 : d->it, K = T->loops[lc].count[I[k].e];
            int64_t c = (end ? K - 1 - it : it) - (rel ? I[k].it : 0);
            if (k == 0) c0 = c;
            ok = c == c0;
        }
        if (ok) {
            out->mode = (end ? JN_IR_MM_END : JN_IR_MM_ABS) | (rel ? JN_IR_MM_REL : 0);
            out->c = c0;
            return 0;
        }
    }
    return -1;
}

/* A ref that explains every instance I[0..n) (reader loop `rl`, -1), or -1.
 * allow_prev: a loop-carried ref may be tried. */
static int choose(mctx *M, const inst *I, int64_t n, int32_t rl, int allow_prev, mref *out) {
    const an_tmpl *T = M->G->T;
    memset(out, 0, sizeof *out);
    if (n == 0) return -1;
    int all_ext = 1, all_tok = 1;
    for (int64_t k = 0; k < n; k++) {
        all_ext &= I[k].d.kind == 0 && (I[k].e != 0 || I[k].d.in == I[0].d.in);
        all_tok &= I[k].d.kind == 1 && I[k].d.t == I[0].d.t && I[k].d.k == I[0].d.k;
    }
    if (all_ext) {
        int32_t in = -1;
        for (int64_t k = 0; k < n; k++)
            if (I[k].e == 0) in = I[k].d.in;
        if (in < 0) return -1;
        out->kind = JN_IR_MR_INPUT;
        out->a = in;
        return 0;
    }
    if (all_tok) {
        int32_t tc = I[0].d.t, lc = T->loop[tc];
        out->kind = JN_IR_MR_TOKEN;
        out->a = tc;
        out->b = I[0].d.k;
        if (lc < 0) return 0;
        int ok = 1;
        if (lc == rl) {
            for (int64_t k = 0; k < n && ok; k++) ok = I[k].d.it == I[k].it;
            if (ok) return 0;
        } else if (!cross_mode(M, I, n, rl, lc, -1, -1, out)) {
            return 0;
        }
    }
    /* another loop's carried value, and its seed where that loop's iteration
     * would be -1: a backward loop reading h[t - 1] of its forward loop */
    int64_t f = 0;
    while (f < n && !(I[f].d.kind == 1 && T->loop[I[f].d.t] >= 0 && T->loop[I[f].d.t] != rl)) f++;
    if (f < n) {
        int32_t tc = I[f].d.t, kc = I[f].d.k, lc = T->loop[tc];
        int64_t ns = 0;
        for (int64_t k = 0; k < n; k++) ns += !(I[k].d.kind == 1 && I[k].d.t == tc && I[k].d.k == kc);
        if (ns && !cross_mode(M, I, n, rl, lc, tc, kc, out)) {
            inst *J = malloc(sizeof *J * (size_t)ns);
            if (!J) return -2;
            int64_t m = 0;
            for (int64_t k = 0; k < n; k++)
                if (!(I[k].d.kind == 1 && I[k].d.t == tc && I[k].d.k == kc)) J[m++] = I[k];
            mref init;
            int r = choose(M, J, m, -1, 0, &init);
            free(J);
            if (r == -2) return r;
            if (!r && !(init.kind == JN_IR_MR_TOKEN && T->loop[init.a] == lc))
                return with_init(out, tc, kc, out->mode | JN_IR_MM_SEED, &init);
        }
    }
    if (!allow_prev || rl < 0) return -1;
    /* loop-carried: iterations >= 1 read the previous iteration's object of
     * one body token; iteration 0 reads the init (one ref, not carried) */
    int32_t tc = -1, kc = -1;
    int64_t n0 = 0;
    for (int64_t k = 0; k < n; k++) {
        if (I[k].it == 0) {
            n0++;
            continue;
        }
        const desc *d = &I[k].d;
        if (d->kind != 1 || T->loop[d->t] != rl || d->it != I[k].it - 1) return -1;
        if (tc < 0) tc = d->t, kc = d->k;
        if (d->t != tc || d->k != kc) return -1;
    }
    if (tc < 0 || n0 == 0) return -1;
    inst *J = malloc(sizeof *J * (size_t)n0);
    if (!J) return -2;
    int64_t m = 0;
    for (int64_t k = 0; k < n; k++)
        if (I[k].it == 0) J[m++] = I[k];
    mref init;
    int r = choose(M, J, m, -1, 0, &init);
    free(J);
    if (r) return r;
    return with_init(out, tc, kc, JN_IR_MM_PREV, &init);
}

/* Instances of slot q of template op t over every exemplar and iteration. */
static int gather(mctx *M, int32_t t, int q) {
    an_gen *G = M->G;
    const an_tmpl *T = G->T;
    M->nI = 0;
    for (int e = 0; e < G->m; e++) {
        int32_t l = T->loop[t];
        int32_t K = l >= 0 ? T->loops[l].count[e] : 1;
        for (int32_t it = 0; it < K; it++) {
            int32_t i = l >= 0 ? T->loops[l].estart[e] + it * T->loops[l].p + (t - T->loops[l].tfirst) : T->eop[e][t];
            if (an_grow(&M->I, &M->capI, M->nI + 1, sizeof *M->I)) return -2;
            inst *x = &M->I[M->nI++];
            x->d = resolve(M, e, i, q);
            x->it = it;
            x->e = e;
            if (x->d.kind < 0) return -1;
        }
    }
    return 0;
}

static void put_ref1(wbuf *w, int kind, int32_t a, int32_t b, int mode, int64_t c) {
    put(w, (uint64_t)kind, 1);
    put(w, (uint64_t)(uint32_t)a, 4);
    put(w, (uint64_t)b, 1);
    put(w, (uint64_t)mode, 1);
    put(w, (uint64_t)c, 8);
}

static void put_ref(wbuf *w, const mref *r, const int32_t *tokmap) {
    int32_t a = r->kind == JN_IR_MR_TOKEN ? tokmap[r->a] : r->a;
    put_ref1(w, r->kind, a, r->b, r->mode, r->c);
    if (r->has_init) put_ref1(w, r->ikind, r->ikind == JN_IR_MR_TOKEN ? tokmap[r->ia] : r->ia, r->ib, r->imode, r->ic);
}

/* The scalar input bound to E0's Python scalar at ref r, -1. */
static int32_t scalar_input(an_gen *G, int32_t r) {
    int32_t v = G->E[0]->refs[r].val;
    if (v < 0 || v >= G->E[0]->nvals) return -1;
    int32_t iv = G->irval[v];
    if (iv < 0 || G->g->values[iv].kind != JN_IR_V_INPUT) return -1;
    return G->g->values[iv].def;
}

static int eop_synth(an_gen *G, int32_t t) { return G->E[0]->ops[G->T->eop[0][t]].synth; }

static int build(mctx *M, int32_t gi, int entry, wbuf *w) {
    an_gen *G = M->G;
    const an_tmpl *T = G->T;
    const an_ex *E0 = G->E[0];
    jn_ir_graph *g = G->g;
    int rc = 0;
    int32_t *tokmap = malloc(sizeof(int32_t) * ((size_t)T->nt + 1));
    int32_t *gout = malloc(sizeof(int32_t) * ((size_t)T->nt * JN_MAX_OUTS + 1));
    uint8_t *gall = calloc((size_t)T->nt * JN_MAX_OUTS + 1, 1);
    if (!tokmap || !gout || !gall) {
        rc = -2;
        goto out;
    }
    int32_t ntok = 0;
    for (int32_t t = 0; t < T->nt; t++) {
        tokmap[t] = eop_synth(G, t) ? -1 : ntok++;
        for (int k = 0; k < JN_MAX_OUTS; k++) gout[t * JN_MAX_OUTS + k] = -1;
    }
    /* graph outputs: the object whose final value each one is */
    for (int32_t i = 0; i < g->noutputs; i++) {
        if (g->outputs[i].kind != JN_IR_OUT_KEEP) continue;
        int32_t t = G->out_t[i], j = G->out_j[i], l = T->loop[t];
        int32_t o = T->eop[0][t];
        if (l >= 0) o = T->loops[l].estart[0] + (T->loops[l].count[0] - 1) * T->loops[l].p + (t - T->loops[l].tfirst);
        desc d = resolve(M, 0, o, E0->ops[o].nin + j);
        if (d.kind != 1 || (T->loop[d.t] >= 0 && d.it != d.K - 1) || (G->out_all[i] && T->loop[d.t] != l)) {
            M->why = "a value Python keeps is not the final value of an object the graph's ops create";
            rc = -1;
            goto out;
        }
        gout[d.t * JN_MAX_OUTS + d.k] = i;
        gall[d.t * JN_MAX_OUTS + d.k] = G->out_all[i];
    }
    /* where its segments start: 0 step start, else the JN_SYNC_* before */
    put(w, (uint64_t)gi, 4);
    put(w, (uint64_t)entry, 1);
    put(w, (uint64_t)ntok, 4);
    put(w, (uint64_t)T->nloops, 4);
    for (int32_t l = 0; l < T->nloops; l++) {
        const an_tloop *L = &T->loops[l];
        int32_t first = -1, cnt = 0;
        for (int32_t t = L->tfirst; t < L->tfirst + L->p; t++)
            if (tokmap[t] >= 0) {
                if (first < 0) first = tokmap[t];
                cnt++;
            }
        if (!cnt) {
            M->why = "a loop body holds no recorded op";
            rc = -1;
            goto out;
        }
        int32_t il = G->irloop[l];
        put(w, (uint64_t)(uint32_t)first, 4);
        put(w, (uint64_t)cnt, 4);
        put(w, (uint64_t)g->loops[il].trip, 8);
        put(w, (uint64_t)(uint32_t)G->ivar[l], 4);
        put(w, (uint64_t)G->trip_lo[il], 8);
        put(w, (uint64_t)G->trip_hi[il], 8);
        put(w, (uint64_t)(uint32_t)il, 4);
    }
    for (int32_t t = 0; t < T->nt && !rc; t++) {
        if (tokmap[t] < 0) continue;
        const an_op *o = &E0->ops[T->eop[0][t]];
        const jn_opinfo *info = jn_op_info((jn_op)o->op);
        int collect = G->coll_out[t] >= 0;
        int32_t node = G->node_of[t];
        if (!collect && node < 0) {
            M->why = "a recorded op has no node";
            rc = -1;
            break;
        }
        put_str(w, info->name);
        put(w, o->nin, 1);
        put(w, o->nout, 1);
        put(w, (o->inplace ? JN_IR_MT_INPLACE : 0) | (collect ? JN_IR_MT_COLLECT : 0), 1);
        put(w, (uint64_t)(uint32_t)(T->loop[t]), 4);
        put(w, (uint64_t)o->site, 8);
        put(w, (uint64_t)info->nattrs, 1);
        for (int k = 0; k < info->nattrs; k++) {
            char kind = info->attr_kind[k];
            const jn_attr *a = node >= 0 ? &g->nodes[node].attrs.a[k] : &E0->attrv[o->attr0 + k];
            put(w, (unsigned char)kind, 1);
            if (kind == JN_A_INTS) {
                put(w, (uint64_t)a->l.n, 1);
                for (int j = 0; j < a->l.n; j++) put(w, (uint64_t)a->l.v[j], 8);
            } else if (kind == JN_A_FLOAT) {
                int32_t in = -1, v = node >= 0 ? g->nodes[node].attr_input[k] : -1;
                if (v >= 0 && g->values[v].kind == JN_IR_V_INPUT) in = g->values[v].def;
                put_f64(w, a->f);
                put(w, (uint64_t)(uint32_t)in, 4);
            } else {
                put(w, (uint64_t)a->i, 8);
            }
        }
        /* inputs */
        if (collect) {
            int ok = 1;
            int32_t tc = -1, kc = -1;
            for (int e = 0; e < G->m && ok; e++) {
                const an_op *x = &G->E[e]->ops[T->eop[e][t]];
                for (int q = 0; q < x->nin && ok; q++) {
                    desc d = resolve(M, e, T->eop[e][t], q);
                    if (tc < 0) tc = d.t, kc = d.k;
                    ok = d.kind == 1 && d.t == tc && d.k == kc && T->loop[d.t] >= 0 && d.it == q && d.K == x->nin;
                }
            }
            if (!ok || tc < 0) {
                M->why = "a stack/cat does not join one loop value over all iterations";
                rc = -1;
                break;
            }
            mref r = {.kind = JN_IR_MR_TOKEN, .a = tc, .b = kc};
            put_ref(w, &r, tokmap);
        } else {
            for (int q = 0; q < o->nin && !rc; q++) {
                int32_t r0 = o->ref0 + q;
                if (E0->refs[r0].obj < 0) {
                    int32_t in = scalar_input(G, r0);
                    if (in < 0) {
                        M->why = "a Python scalar has no input";
                        rc = -1;
                        break;
                    }
                    put_ref1(w, JN_IR_MR_SCALAR, in, 0, 0, 0);
                    continue;
                }
                if (T->each_of_ref && T->each_of_ref[r0]) { /* a stacked input: iteration i's tensor */
                    int32_t in = G->irin[E0->refs[r0].val];
                    if (in < 0) {
                        M->why = "a stacked input has no input";
                        rc = -1;
                        break;
                    }
                    put_ref1(w, JN_IR_MR_INPUT, in, 0, JN_IR_MM_ABS | JN_IR_MM_REL, 0);
                    continue;
                }
                if (T->eachlast_of_ref && T->eachlast_of_ref[r0]) { /* after the loop: its last iteration's */
                    int32_t in = G->irin[E0->refs[T->eachlast_of_ref[r0] - 1].val];
                    if (in < 0) {
                        M->why = "a stacked input has no input";
                        rc = -1;
                        break;
                    }
                    put_ref1(w, JN_IR_MR_INPUT, in, 0, JN_IR_MM_END, 0);
                    continue;
                }
                if (T->eachprev_of_ref && T->eachprev_of_ref[r0]) { /* its previous iteration's; iteration 0 its own */
                    int32_t in = G->irin[E0->refs[T->eachprev_of_ref[r0] - 1].val], seed = G->irin[E0->refs[r0].val];
                    if (in < 0 || seed < 0) {
                        M->why = "a stacked input has no input";
                        rc = -1;
                        break;
                    }
                    put_ref1(w, JN_IR_MR_INPUT, in, 0, JN_IR_MM_PREV, 0);
                    put_ref1(w, JN_IR_MR_INPUT, seed, 0, JN_IR_MM_SAME, 0);
                    continue;
                }
                mref r;
                if ((rc = gather(M, t, q)) || (rc = choose(M, M->I, M->nI, T->loop[t], 1, &r))) {
                    if (!M->why) M->why = "an input's source differs between iterations or recorded segments";
                    break;
                }
                put_ref(w, &r, tokmap);
            }
        }
        /* outputs */
        for (int q = 0; q < o->nout && !rc; q++) {
            desc d = resolve(M, 0, T->eop[0][t], o->nin + q);
            if (d.kind == 1 && d.t == t && d.k == q && d.it == 0) {
                put(w, 1 | (gall[t * JN_MAX_OUTS + q] ? JN_IR_MO_ALL : 0), 1);
            } else {
                mref r;
                put(w, 0, 1);
                if ((rc = gather(M, t, o->nin + q)) || (rc = choose(M, M->I, M->nI, T->loop[t], 1, &r))) {
                    if (!M->why) M->why = "an in-place write's target differs between iterations or segments";
                    break;
                }
                put_ref(w, &r, tokmap);
            }
            put(w, (uint64_t)(uint32_t)gout[t * JN_MAX_OUTS + q], 4);
            /* the shape the graph computes for it: the IR node's output, or
             * the value a stack/cat of a collect was rewritten into */
            int32_t ov = collect ? G->irval[E0->refs[o->ref0 + o->nin].val] : g->nodes[node].out[q];
            if (ov < 0 || ov >= g->nvalues) {
                M->why = "a recorded op's output has no value in the graph";
                rc = -1;
                break;
            }
            put(w, g->values[ov].ndim, 1);
            for (int d = 0; d < g->values[ov].ndim; d++) put(w, (uint64_t)g->values[ov].shape[d], 8);
        }
    }
out:
    free(tokmap);
    free(gout);
    free(gall);
    return rc;
}

jn_status an_matcher_build(an_gen *G, int32_t gi, int entry) {
    mctx M;
    memset(&M, 0, sizeof M);
    M.G = G;
    wbuf w = {0};
    int rc = 0;
    if (!(M.X = calloc((size_t)G->m, sizeof *M.X))) return jn_error(JN_ERR_NOMEM, "analyzer: out of memory");
    for (int e = 0; e < G->m && !rc; e++)
        if (xidx_build(G, e, &M.X[e])) rc = -2;
    if (!rc) rc = build(&M, gi, entry, &w);
    for (int e = 0; e < G->m; e++) xidx_free(&M.X[e]);
    free(M.X);
    free(M.I);
    if (rc == -2 || w.oom) {
        free(w.p);
        return jn_error(JN_ERR_NOMEM, "analyzer: out of memory");
    }
    if (rc) {
        free(w.p);
        if (an_grow(&missing, &capmissing, nmissing + 1, sizeof *missing)) return JN_ERR_NOMEM;
        char *m = NULL;
        if (asprintf(&m, "graph %s: no replay matcher: %s", G->g->name ? G->g->name : "?",
                     M.why ? M.why : "its ops could not be described") < 0)
            return jn_error(JN_ERR_NOMEM, "analyzer: out of memory");
        missing[nmissing++] = m;
        return JN_OK;
    }
    if (an_grow(&mbuf, &mcap, mlen + w.n, 1)) {
        free(w.p);
        return JN_ERR_NOMEM;
    }
    memcpy(mbuf + mlen, w.p, (size_t)w.n);
    mlen += w.n;
    mgraphs++;
    free(w.p);
    return JN_OK;
}

/* ---------------------------------------------------- recorded events */
jn_status jn_an_events(jn_db *db, int64_t run_id, jn_an_event_fn fn, void *ctx) {
    if (!db || !fn) return jn_error(JN_ERR_VALUE, "jn_an_events: NULL store or callback");
    an_ctx c;
    memset(&c, 0, sizeof c);
    jn_an_options opt = {.run_id = run_id, .progress = NULL};
    jn_an_stats st;
    memset(&st, 0, sizeof st);
    c.db = db;
    c.opt = &opt;
    c.st = &st;
    int64_t *runs = NULL, nruns = 0, *steps = NULL, nsteps = 0;
    jn_status s = an_run_ids(&c, &runs, &nruns);
    for (int64_t ri = 0; ri < nruns && !s; ri++) {
        c.run = runs[ri];
        c.step = -1;
        if ((s = an_load_optable(&c)) || (s = an_step_ids(&c, &steps, &nsteps))) break;
        for (int64_t si = 0; si < nsteps && !s; si++) {
            if ((s = an_decode_step(&c, steps[si]))) break;
            for (int64_t i = 0; i < c.sb.nev && !s; i++) {
                const an_event *x = &c.sb.ev[i];
                if (x->kind != JN_EV_OP && x->kind != JN_EV_SYNC) continue;
                jn_an_event ev;
                jn_an_tref tr[2 * 64];
                memset(&ev, 0, sizeof ev);
                ev.run = c.run;
                ev.step = steps[si];
                ev.kind = x->kind;
                ev.callsite = x->callsite;
                if (x->kind == JN_EV_OP) {
                    ev.op = (jn_op)x->op;
                    ev.inplace = x->inplace;
                    ev.nattrs = x->nattrs;
                    ev.attrs = &c.sb.attrs[x->attr0];
                    ev.nin = x->nin;
                    ev.nout = x->nout;
                    jn_an_tref *big = NULL, *t = tr;
                    if (x->nin + x->nout > (int)(sizeof tr / sizeof *tr)) {
                        if (!(big = malloc(sizeof *big * (size_t)(x->nin + x->nout)))) {
                            s = jn_error(JN_ERR_NOMEM, "out of memory");
                            break;
                        }
                        t = big;
                    }
                    for (int j = 0; j < x->nin + x->nout; j++) {
                        const an_tref *a = &c.sb.tr[x->ref0 + j];
                        t[j] = (jn_an_tref){a->id, a->scalar, a->shape, a->dtype, a->ndim, a->device, a->role,
                                            a->pytype};
                    }
                    ev.in = t;
                    ev.out = t + x->nin;
                    s = fn(ctx, &ev);
                    free(big);
                } else {
                    ev.sync_kind = x->sync_kind;
                    s = fn(ctx, &ev);
                }
            }
            if (!s) {
                jn_an_event end;
                memset(&end, 0, sizeof end);
                end.run = c.run;
                end.step = steps[si];
                end.kind = 0;
                s = fn(ctx, &end);
            }
        }
        free(steps);
        steps = NULL;
    }
    free(runs);
    free(c.sb.ev), free(c.sb.tr), free(c.sb.attrs), free(c.sb.reg), free(c.sb.rargs);
    free(c.opmap);
    return s;
}
