/* align.c -- the exemplars of one group -> structures and the variant trie.
 *
 * Two exemplars have the same STRUCTURE when they align op by op: the same
 * op tokens (op, call site, stack, arity, input dtypes and Python types,
 * structural attributes) and the same dataflow (every input refers to the
 * same canonical value, every value is defined and written back the same
 * way), after folding repeats whose count varies into loops (loops.c).
 * What may then still differ -- shapes, int and float attributes, scalar
 * values, state bindings -- is generalize.c's business.
 *
 * Structures of one group become variants: variant 0 is the one that
 * covers the most recorded segments; every other variant hangs below the
 * earlier variant it shares the longest op prefix with (parent, diverge),
 * and `decided` names the last Python branch recorded before the point
 * where they diverge.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "an_internal.h"

static int same_structure(const an_ex *a, const an_ex *b) {
    if (a->nops != b->nops || a->nrefs != b->nrefs || a->nvals != b->nvals || a->nislots != b->nislots ||
        a->nfslots != b->nfslots)
        return 0;
    for (int32_t i = 0; i < a->nops; i++)
        if (a->ops[i].token != b->ops[i].token) return 0;
    for (int32_t i = 0; i < a->nrefs; i++)
        if (a->refs[i].val != b->refs[i].val || a->refs[i].ndim != b->refs[i].ndim ||
            a->refs[i].dtype != b->refs[i].dtype || a->refs[i].role != b->refs[i].role)
            return 0;
    for (int32_t i = 0; i < a->nvals; i++) {
        const an_val *x = &a->vals[i], *y = &b->vals[i];
        if (x->def != y->def || x->idx != y->idx || x->role != y->role || x->overwrites != y->overwrites ||
            x->written != y->written)
            return 0;
    }
    return 1;
}

static int32_t common_prefix(const an_ex *a, const an_ex *b) {
    int32_t n = a->nops < b->nops ? a->nops : b->nops, k = 0;
    while (k < n && a->ops[k].token == b->ops[k].token) k++;
    return k;
}

static int64_t first_ex(const an_struct *s) { return s->ex[0]; }

static int cmp_support(const void *pa, const void *pb) {
    const an_struct *a = pa, *b = pb;
    if (a->support != b->support) return a->support > b->support ? -1 : 1;
    return first_ex(a) < first_ex(b) ? -1 : first_ex(a) > first_ex(b);
}

static int add_struct(an_struct **s, int64_t *cap, int64_t *n, int32_t max_ex) {
    if (an_grow(s, cap, *n + 1, sizeof **s)) return -1;
    memset(&(*s)[*n], 0, sizeof (*s)[*n]);
    if (!((*s)[*n].ex = malloc(sizeof(int32_t) * (size_t)max_ex))) return -1;
    (*n)++;
    return 0;
}

/* Does exemplar x fold like a (the first of a family) once some of a's
 * loops (loopish[r]) run only once in x?  A repeat needs two iterations to
 * be seen, so a recurrent step with a single middle time step (its first
 * and last peeled) folds differently; here x's ops are lined up with a's
 * folded sequence, a loop of a matching one copy of its body in x.  On
 * success *out holds x's repeats as a's loops see them (count 1 where it
 * ran once); 0 when x does not fit or needs no such loop. */
static int fit_once(const an_ex *a, const uint8_t *loopish, const an_ex *x, an_rep **out) {
    an_rep *r = malloc(sizeof *r * (size_t)(a->nreps + 1));
    int32_t ia = 0, ra = 0, ix = 0, rx = 0, once = 0;
    if (!r) return -1;
    while (ia < a->nops) {
        if (ra < a->nreps && a->reps[ra].start == ia) {
            const an_rep *R = &a->reps[ra];
            int32_t p = R->period;
            if (rx < x->nreps && x->reps[rx].start == ix && x->reps[rx].period == p) {
                for (int32_t j = 0; j < p; j++)
                    if (x->ops[ix + j].token != a->ops[ia + j].token) goto no;
                r[ra] = x->reps[rx];
                ix += p * x->reps[rx++].count;
            } else if (loopish[ra] && ix + p <= x->nops) {
                for (int32_t j = 0; j < p; j++)
                    if (x->ops[ix + j].token != a->ops[ia + j].token) goto no;
                /* repeats x found inside the one copy are part of the body */
                while (rx < x->nreps && x->reps[rx].start < ix + p) {
                    if (x->reps[rx].start < ix ||
                        (int64_t)x->reps[rx].start + (int64_t)x->reps[rx].period * x->reps[rx].count > ix + p)
                        goto no;
                    rx++;
                }
                r[ra] = (an_rep){ix, p, 1};
                ix += p;
                once = 1;
            } else {
                goto no;
            }
            ia += p * R->count;
            ra++;
            continue;
        }
        if ((rx < x->nreps && x->reps[rx].start == ix) || ix >= x->nops || x->ops[ix].token != a->ops[ia].token)
            goto no;
        ia++, ix++;
    }
    if (ix != x->nops || rx != x->nreps || !once) goto no;
    *out = r;
    return 1;
no:
    free(r);
    return 0;
}

/* Build the loop graph in a scratch module and check it against every
 * exemplar (selfcheck.c) and against the IR's rules (jn_ir_verify: a
 * carry typed unlike its seed); *why is set when either fails, or when
 * generalize refuses the template with an internal error, and the caller
 * falls back to a variant per trip count (only out of memory fails). */
static jn_status selfcheck(an_ctx *c, an_group *g, const int32_t *fam, int32_t nf, an_tmpl *T, const char **why) {
    jn_ir_module *m = jn_ir_module_new();
    jn_ir_graph *gr = m ? jn_ir_graph_add(m, "check") : NULL;
    if (!gr) {
        jn_ir_module_free(m);
        return jn_error(JN_ERR_NOMEM, "analyzer: out of memory");
    }
    an_struct s;
    memset(&s, 0, sizeof s);
    s.ex = (int32_t *)fam;
    s.nex = nf;
    s.tmpl = T;
    s.parent = -1;
    jn_an_stats keep = *c->st; /* the scratch graph is not counted */
    jn_status st = an_generalize_checked(c, &s, g, gr, why);
    static _Thread_local char vwhy[400];
    if (st && st != JN_ERR_NOMEM) { /* a template generalize cannot build: no loops, not a failed optimize */
        snprintf(vwhy, sizeof vwhy, "the loop graph could not be built (%s)", jn_errmsg());
        *why = vwhy;
        st = JN_OK;
    } else if (!st && !*why && jn_ir_verify(gr)) {
        snprintf(vwhy, sizeof vwhy, "the loop graph does not verify (%s)", jn_errmsg());
        *why = vwhy;
    }
    *c->st = keep;
    jn_ir_module_free(m);
    return st;
}

jn_status an_align(an_ctx *c, an_group *g, an_struct **out, int32_t *nout) {
    an_struct *s = NULL;
    int64_t cap = 0, n = 0;
    int32_t *fam = malloc(sizeof(int32_t) * (size_t)(g->nex + 1));
    char *done = calloc((size_t)g->nex + 1, 1);
    uint64_t *fh = NULL;
    int32_t *nextf = NULL;
    an_map heads;
    memset(&heads, 0, sizeof heads);
    struct saved_reps {
        int32_t k;
        an_rep *reps;
        int32_t nreps;
    } *saved = NULL;
    int64_t nsaved = 0, capsaved = 0;
    *out = NULL;
    *nout = 0;
    if (!fam || !done) goto nomem;
    if (!(fh = malloc(sizeof(uint64_t) * (size_t)(g->nex + 1))) ||
        !(nextf = malloc(sizeof(int32_t) * (size_t)(g->nex + 1))))
        goto nomem;
    for (int64_t i = 0; i < g->nex; i++) {
        if (an_fold(&c->ex[g->ex[i]])) goto nomem;
        fh[i] = an_folded_hash(&c->ex[g->ex[i]]);
    }
    /* chain the exemplars with equal folded hashes (in order), so families
     * are found without comparing every pair */
    for (int64_t i = g->nex - 1; i >= 0; i--) {
        int64_t *h = an_map_get(&heads, fh[i], -1, NULL);
        if (!h) goto nomem;
        nextf[i] = (int32_t)*h;
        *h = i;
    }
    /* families: the same folded sequence (loop counts aside); first those
     * that can have loops, so that an exemplar that ran a loop once can join
     * one wherever it sits in the group */
    for (int phase = 0; phase < 2; phase++)
    for (int64_t i = 0; i < g->nex; i++) {
        if (done[i]) continue;
        int32_t nf = 0;
        for (int64_t k = i; k >= 0; k = nextf[k])
            if (!done[k] && an_folded_same(&c->ex[g->ex[i]], &c->ex[g->ex[k]])) {
                fam[nf++] = g->ex[k];
                done[k] = 1;
            }
        an_tmpl *T = NULL;
        const char *why = NULL;
        int long_rep = 0;
        for (int32_t r = 0; r < c->ex[fam[0]].nreps; r++) long_rep |= c->ex[fam[0]].reps[r].count >= 16;
        if (phase == 0 && nf == 1 && !long_rep) {
            done[i] = 0;
            continue;
        }
        /* exemplars where a loop of this family ran once join it */
        int32_t nf0 = nf;
        {
            const an_ex *a = &c->ex[fam[0]];
            uint8_t *loopish = calloc((size_t)a->nreps + 1, 1);
            if (!loopish) goto nomem;
            int any = 0;
            for (int32_t r = 0; r < a->nreps; r++) {
                for (int32_t f = 1; f < nf; f++) loopish[r] |= c->ex[fam[f]].reps[r].count != a->reps[r].count;
                loopish[r] |= a->reps[r].count >= 16;
                any |= loopish[r];
            }
            for (int64_t k = 0; any && k < g->nex; k++) {
                an_ex *x = &c->ex[g->ex[k]];
                an_rep *r = NULL;
                if (done[k] || x->nreps < 0) continue;
                int fit = fit_once(a, loopish, x, &r);
                if (fit < 0) {
                    free(loopish);
                    goto nomem;
                }
                if (!fit) continue;
                /* x's own repeats are kept aside until the loops are known to fit */
                if (an_grow(&saved, &capsaved, nsaved + 1, sizeof *saved)) {
                    free(r);
                    free(loopish);
                    goto nomem;
                }
                saved[nsaved++] = (struct saved_reps){(int32_t)k, x->reps, x->nreps};
                x->reps = r;
                x->nreps = a->nreps;
                fam[nf++] = g->ex[k];
                done[k] = 1;
            }
            free(loopish);
        }
        for (int pass = 0; pass < 2 && !T; pass++) {
            if (pass == 1) { /* without the exemplars that joined: as before */
                if (nf == nf0) break;
                for (int64_t q = 0; q < nsaved; q++) {
                    an_ex *x = &c->ex[g->ex[saved[q].k]];
                    free(x->reps);
                    x->reps = saved[q].reps;
                    x->nreps = saved[q].nreps;
                    done[saved[q].k] = 0;
                    saved[q].reps = NULL;
                }
                nsaved = 0;
                nf = nf0;
                why = NULL;
            }
            if ((nf > 1 || long_rep) && c->ex[fam[0]].nreps > 0 && an_tmpl_loops(c, fam, nf, &T, &why)) goto nomem;
            if (T && selfcheck(c, g, fam, nf, T, &why)) {
                an_tmpl_free(T);
                goto nomem;
            }
            if (T && why) { /* the loops do not reproduce a recorded exemplar: no loops then */
                an_tmpl_free(T);
                T = NULL;
            }
        }
        for (int64_t q = 0; q < nsaved; q++) free(saved[q].reps); /* joined for good */
        nsaved = 0;
        if (why && c->opt && c->opt->progress && strcmp(why, "no repeat count varies")) {
            char site[512];
            fprintf(c->opt->progress, "janus optimize: no loop at %s (%d segment shapes): %s; one variant per "
                    "trip count instead\n", an_site_str(c, g->first_site, site, sizeof site), nf, why);
        }
        if (T) {
            if (add_struct(&s, &cap, &n, nf)) {
                an_tmpl_free(T);
                goto nomem;
            }
            s[n - 1].tmpl = T;
            for (int32_t k = 0; k < nf; k++) {
                s[n - 1].ex[s[n - 1].nex++] = fam[k];
                s[n - 1].support += c->ex[fam[k]].count;
            }
            continue;
        }
        /* no loops: exemplars that align op by op */
        int64_t first = n;
        for (int32_t f = 0; f < nf; f++) {
            an_ex *e = &c->ex[fam[f]];
            int64_t k;
            for (k = first; k < n; k++)
                if (same_structure(&c->ex[s[k].ex[0]], e)) break;
            if (k == n && add_struct(&s, &cap, &n, nf)) goto nomem;
            s[k].ex[s[k].nex++] = fam[f];
            s[k].support += e->count;
        }
        for (int64_t k = first; k < n; k++)
            if (!(s[k].tmpl = an_tmpl_plain(c, s[k].ex, s[k].nex))) goto nomem;
    }
    free(saved);
    free(fam);
    free(done);
    free(fh);
    free(nextf);
    an_map_free(&heads);
    qsort(s, (size_t)n, sizeof *s, cmp_support);
    for (int64_t k = 0; k < n; k++) {
        s[k].variant = (int32_t)k;
        s[k].parent = -1;
        s[k].diverge = 0;
        s[k].decided = 0;
        const an_ex *e = &c->ex[s[k].ex[0]];
        int32_t best = -1;
        for (int64_t p = 0; p < k; p++) {
            int32_t l = common_prefix(&c->ex[s[p].ex[0]], e);
            if (l > best) {
                best = l;
                s[k].parent = (int32_t)p;
            }
        }
        if (k > 0) {
            /* the last branch before the divergence; else the last loop
             * decision (variants that differ in a trip count) */
            int64_t loop_site = 0;
            s[k].diverge = best;
            for (int32_t d = 0; d < e->ndecs && e->decs[d].pos <= best; d++) {
                if (e->decs[d].kind == JN_DEC_BRANCH) s[k].decided = e->decs[d].site;
                if (e->decs[d].kind == JN_DEC_LOOP) loop_site = e->decs[d].site;
            }
            if (!s[k].decided) s[k].decided = loop_site;
        }
        for (int32_t i = 0; i < s[k].nex; i++) c->ex[s[k].ex[i]].structure = (int32_t)k;
    }
    *out = s;
    *nout = (int32_t)n;
    return JN_OK;
nomem:
    for (int64_t q = 0; q < nsaved; q++) {
        an_ex *x = &c->ex[g->ex[saved[q].k]];
        free(x->reps);
        x->reps = saved[q].reps;
        x->nreps = saved[q].nreps;
    }
    free(saved);
    free(fh);
    free(nextf);
    an_map_free(&heads);
    for (int64_t k = 0; k < n; k++) {
        free(s[k].ex);
        an_tmpl_free(s[k].tmpl);
    }
    free(s);
    free(fam);
    free(done);
    return jn_error(JN_ERR_NOMEM, "analyzer: out of memory");
}
