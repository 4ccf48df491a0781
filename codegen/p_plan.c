/* p_plan.c -- memory planning: one static arena per graph.
 *
 * What lives in the arena: node outputs that are no views and do not
 * leave the graph (directly, or through a view of them that does: those
 * become tensors Python keeps, allocated on their own), and that some
 * node outside their kernel reads (a fused intermediate lives in
 * registers).  Inputs and loop params/outs are not in the arena (the
 * executor copies a carry's init/next and a collect's body into buffers of
 * its own).  A view output gets alias=%base (the storage it shares, through
 * view chains) and no slot; its base stays live as long as the view.
 *
 * Liveness over node order: a value is defined where its node runs (a
 * kernel member runs at its kernel's root) and lives until its last use:
 * the last reader outside its kernel; a reader inside a loop the value is
 * defined outside of keeps it to the end of that (outermost such) loop;
 * a carry next or a collect body lives to the end of its loop; a carry
 * init to the start of its loop.
 *
 * Allocation, in order of definition: slots of values that died before
 * this node are freed; an output of an elementwise node or an `ew` kernel
 * first takes (in place) the slot of an input that dies right here with
 * the identical type, no view sharing it, defined in the same loop and no
 * carry next or collect body (those are read after the iteration or in the
 * next one, even when the last body node is their last reader) (elementwise code reads every
 * input element before it writes that element; an input the kernel itself
 * writes does not count), and so does the output of an in-place table op
 * (uniform_, copy_, in functional form) with its input 0, which its eager
 * kernel overwrites anyway, addmm's with its addend (input 0, which
 * its kernel then accumulates into where it is), and a scatter's
 * (select_scatter, slice_scatter, scatter, scatter_add) with its base
 * (input 0: its kernel's copy of the base is then a copy onto itself,
 * which jn_copy_into skips, and only the window or the indexed elements are
 * written; the base may have had views, all dead by then, but src and
 * index may not share its storage); else the best free slot
 * whose size is provably large enough (the identical size expression, or
 * both constants and the slot no smaller, the smallest such); else a new
 * slot at the end of the arena.  Sizes are numel * element size rounded
 * up to 64 bytes, as expressions over the graph's symbols, so offsets are
 * 64-byte aligned expressions and the arena is one (mem=, arena lines).
 *
 * When every size is a constant, a second plan is tried: the same walk
 * with no reuse of free slots gives the chains of values that share
 * storage in place (the same in-place decisions), each live over
 * [definition of its first, last use of its last]; they are placed by
 * offset, largest (or longest lived, or largest size x lifetime) first, each
 * at the lowest offset free for its whole lifetime -- which merges
 * neighbouring free space and uses part of a bigger hole, what the slot
 * walk cannot.  The smaller of the two plans is kept.  Neither goes below
 * the most bytes live at one position, which is what an op-by-op run
 * that frees each buffer after its last use peaks at too, less the
 * in-place sharing and fused intermediates.
 *
 * When sizes are symbolic but each only grows with the symbols (a proof:
 * `nondecreasing`), the same packing runs at the symbols' recorded maxima
 * and gives constant offsets, right for every run within the recorded
 * ranges (each value fills a prefix of its bytes at the maxima); it is
 * kept when its arena is smaller than the slot walk's at the maxima -- the
 * executor allocates the arena at the maxima anyway (char_lstm's step
 * graph: 4.7 -> 3.0 MB).  The slot walk's plan is then kept beside it as
 * the WIDE plan (wmem=, `arena ... wide`): its offsets are expressions
 * valid for any symbol values, what the executor uses for a run past a
 * recorded range (replay extrapolates over SEEN guards).
 */
#include <stdio.h>

#include "cg_priv.h"
#include "jn_settings.h"

typedef struct {
    jn_ir_dim off, size;
    int32_t owner;          /* value holding it, -1 = free */
    int32_t first, lastp;   /* positions: where it was made, the last use of its last owner */
} slot;

typedef struct {
    const cg_uses *u;
    const uint8_t *elig, *viewed;
    const int32_t *ex, *last;
} plan_ctx;

/* ------------------------------------------- comparing symbolic sizes */
/* A polynomial over the graph's symbols with integer coefficients: terms
 * of up to PMAXF symbol factors (sorted); small caps, and any overflow or
 * cap hit means "cannot tell", never a wrong answer. */
#define PMAXT 32
#define PMAXF 4
typedef struct {
    int8_t nf;
    int32_t f[PMAXF];
    int64_t c;
} pterm;
typedef struct {
    int n;
    pterm t[PMAXT];
} poly;

static int same_mono(const pterm *a, const pterm *b) {
    if (a->nf != b->nf) return 0;
    for (int i = 0; i < a->nf; i++)
        if (a->f[i] != b->f[i]) return 0;
    return 1;
}

/* p += sign * t, merging like terms */
static int padd_term(poly *p, const pterm *t, int64_t sign) {
    int64_t c;
    if (__builtin_mul_overflow(t->c, sign, &c)) return 0;
    for (int i = 0; i < p->n; i++)
        if (same_mono(&p->t[i], t)) return !__builtin_add_overflow(p->t[i].c, c, &p->t[i].c);
    if (p->n == PMAXT) return 0;
    p->t[p->n] = *t;
    p->t[p->n++].c = c;
    return 1;
}

/* *out = d as a polynomial; 0 when it is none (a floor division) or too big */
static int poly_of(const jn_ir_graph *g, jn_ir_dim d, poly *out, int depth) {
    out->n = 0;
    if (!jn_ir_is_expr(d)) {
        pterm t = {0, {0}, d};
        return d == 0 || padd_term(out, &t, 1);
    }
    int32_t i = jn_ir_expr_index(d);
    if (i < 0 || i >= g->nexprs || depth > 64) return 0;
    const jn_ir_expr *e = &g->exprs[i];
    if (e->kind == JN_IR_E_SYM) {
        pterm t = {1, {e->sym}, 1};
        return padd_term(out, &t, 1);
    }
    if (e->kind == JN_IR_E_FLOORDIV) return 0;
    poly a, b;
    if (!poly_of(g, e->a, &a, depth + 1) || !poly_of(g, e->b, &b, depth + 1)) return 0;
    if (e->kind == JN_IR_E_ADD || e->kind == JN_IR_E_SUB) {
        *out = a;
        for (int k = 0; k < b.n; k++)
            if (!padd_term(out, &b.t[k], e->kind == JN_IR_E_ADD ? 1 : -1)) return 0;
        return 1;
    }
    for (int x = 0; x < a.n; x++) /* JN_IR_E_MUL */
        for (int y = 0; y < b.n; y++) {
            pterm t;
            if (a.t[x].nf + b.t[y].nf > PMAXF || __builtin_mul_overflow(a.t[x].c, b.t[y].c, &t.c)) return 0;
            t.nf = (int8_t)(a.t[x].nf + b.t[y].nf);
            int k = 0, p = 0, q = 0; /* merge the sorted factor lists */
            while (p < a.t[x].nf || q < b.t[y].nf)
                t.f[k++] = q >= b.t[y].nf || (p < a.t[x].nf && a.t[x].f[p] <= b.t[y].f[q]) ? a.t[x].f[p++] : b.t[y].f[q++];
            if (!padd_term(out, &t, 1)) return 0;
        }
    return 1;
}

/* Is p >= 0 for every value of the symbols?  Yes when every coefficient is
 * >= 0 and every symbol in a nonzero term is never negative (a dim or an
 * induction variable; an int symbol may be, and the RNG offset is left
 * out to be safe): each term is then >= 0. */
static int poly_nonneg(const jn_ir_graph *g, const poly *p) {
    for (int i = 0; i < p->n; i++) {
        if (!p->t[i].c) continue;
        if (p->t[i].c < 0) return 0;
        for (int k = 0; k < p->t[i].nf; k++) {
            int32_t s = p->t[i].f[k];
            if (s < 0 || s >= g->nsyms || (g->syms[s].kind != JN_IR_SYM_DIM && g->syms[s].kind != JN_IR_SYM_IVAR))
                return 0;
        }
    }
    return 1;
}

static const jn_ir_expr *expr_of(const jn_ir_graph *g, jn_ir_dim d) {
    if (!jn_ir_is_expr(d)) return NULL;
    int32_t i = jn_ir_expr_index(d);
    return i >= 0 && i < g->nexprs ? &g->exprs[i] : NULL;
}

/* d is ((x + (k-1)) // k) * k with a constant k > 0 (a size rounded up to
 * a multiple of k, as cg_value_bytes writes it): *x, *k */
static int round_up_of(const jn_ir_graph *g, jn_ir_dim d, jn_ir_dim *x, int64_t *k) {
    const jn_ir_expr *m = expr_of(g, d), *f, *a;
    if (!m || m->kind != JN_IR_E_MUL || jn_ir_is_expr(m->b) || m->b <= 0) return 0;
    if (!(f = expr_of(g, m->a)) || f->kind != JN_IR_E_FLOORDIV || f->b != m->b) return 0;
    if (!(a = expr_of(g, f->a)) || a->kind != JN_IR_E_ADD || a->b != m->b - 1) return 0;
    *x = a->a;
    *k = m->b;
    return 1;
}

static int ge_rec(const jn_ir_graph *g, jn_ir_dim d, jn_ir_dim need, int depth) {
    if (d == need) return 1;
    if (!jn_ir_is_expr(d) && !jn_ir_is_expr(need)) return d >= need;
    if (depth > 16) return 0;
    poly a, b;
    if (poly_of(g, d, &a, 0) && poly_of(g, need, &b, 0)) {
        for (int i = 0; i < b.n; i++)
            if (!padd_term(&a, &b.t[i], -1)) return 0;
        return poly_nonneg(g, &a);
    }
    jn_ir_dim x, y;
    int64_t k, l;
    int rd = round_up_of(g, d, &x, &k), rn = round_up_of(g, need, &y, &l);
    /* both rounded up to multiples of k: rounding up is monotone */
    if (rd && rn && k == l) return ge_rec(g, x, y, depth + 1);
    /* d rounds x up, so d >= x >= need */
    if (rd && ge_rec(g, x, need, depth + 1)) return 1;
    /* need rounds y up to the least multiple of l >= y: a multiple of l
     * that is >= y is >= need */
    if (rn && poly_of(g, d, &a, 0)) {
        for (int i = 0; i < a.n; i++)
            if (a.t[i].c % l) return 0;
        return ge_rec(g, d, y, depth + 1);
    }
    return 0;
}

int cg_dim_ge(const jn_ir_graph *g, jn_ir_dim d, jn_ir_dim need) { return ge_rec(g, d, need, 0); }

/* Is d provably >= need? */
static int fits(jn_ir_graph *g, jn_ir_dim d, jn_ir_dim need) { return cg_dim_ge(g, d, need); }

/* Operator depth of d (the IR caps it at 200: ir/ir_priv.h). */
#define PLAN_MAX_DEPTH 150
static int depth_of(const jn_ir_graph *g, jn_ir_dim d) {
    if (!jn_ir_is_expr(d)) return 0;
    const jn_ir_expr *e = &g->exprs[jn_ir_expr_index(d)];
    if (e->kind == JN_IR_E_SYM) return 1;
    int a = depth_of(g, e->a), b = depth_of(g, e->b);
    return 1 + (a > b ? a : b);
}

/* Places the arena values in definition order (see the header): slots[]
 * gets the slots, vslot[v] the slot of each value, *endp the arena size.
 * fresh: no free slot is reused, so each slot is one chain of values that
 * share storage in place, live over [first, lastp] (positions). */
static jn_status place(jn_ir_graph *g, const plan_ctx *P, int fresh, slot *slots, int32_t *nslotsp,
                       int32_t *vslot, jn_ir_dim *endp) {
    int32_t nn = g->nnodes, nslots = 0;
    int end_depth = 0;
    jn_ir_dim end = 0;
    for (int32_t v = 0; v < g->nvalues; v++) vslot[v] = -1;
    for (int32_t p = 0; p < nn; p++) {
        /* free what died before p */
        for (int32_t s = 0; s < nslots; s++)
            if (slots[s].owner >= 0 && P->last[slots[s].owner] < p) slots[s].owner = -1;
        int32_t k = g->nodes[p].kernel;
        if (k >= 0 && g->kernels[k].root != p) continue; /* runs at its root */
        int pfl = cg_flags(g->nodes[p].op);
        /* addmm's output may take its addend's slot: the accumulated weight
         * gradient of an unrolled backward (acc + x^T @ dy per step), which
         * jn_cpu_addmm then updates where it is instead of copying it first */
        int acc_gemm = k < 0 && g->nodes[p].op == JN_OP_addmm;
        /* a scatter's output may take its base's slot: the functional form of
         * writing a window (x[t] += g per time step of an unrolled backward),
         * which the kernel then writes where it is: O(window) instead of a
         * copy of the whole base per write */
        jn_op pop = g->nodes[p].op;
        int scat = k < 0 && (pop == JN_OP_select_scatter || pop == JN_OP_slice_scatter || pop == JN_OP_scatter ||
                             pop == JN_OP_scatter_add);
        int inplace_ok = k >= 0 ? g->kernels[k].kind == JN_IR_K_EW
                                : (pfl & (JN_F_EW | JN_F_INPLACE)) != 0 || acc_gemm || scat;
        int32_t first = k >= 0 ? 0 : p;
        for (int32_t n = first; n <= p; n++) {
            if (g->nodes[n].kernel != k || (k < 0 && n != p)) continue;
            const jn_ir_node *x = &g->nodes[n];
            for (int j = 0; j < x->nout; j++) {
                int32_t v = x->out[j], pick = -1;
                if (!P->elig[v]) continue;
                jn_ir_dim need = cg_value_bytes(g, v);
                if (need == JN_IR_DIM_ERROR) return JN_ERR_NOMEM;
                /* in place: an external input of this node/kernel dying here */
                for (int32_t m = first; m <= p && inplace_ok && pick < 0; m++) {
                    if (g->nodes[m].kernel != k || (k < 0 && m != p)) continue;
                    /* a table op that writes its inputs in place (uniform_, copy_; adam_
                     * writes inputs 0..nout-1) may only give output j input j's slot */
                    int lo = 0, hi = g->nodes[m].nin;
                    if (k < 0 && (pfl & JN_F_INPLACE)) lo = j, hi = j + 1 < hi ? j + 1 : hi;
                    if (acc_gemm || scat) lo = 0, hi = j == 0 && hi > 0 ? 1 : 0; /* the addend / base, input 0 */
                    for (int i = lo; i < hi && pick < 0; i++) {
                        int32_t w = g->nodes[m].in[i], s = vslot[w];
                        /* views of a scatter's base are dead by here (they keep it live), and only
                         * its window is written: viewed is fine unless src itself shares the base */
                        if (s < 0 || slots[s].owner != w || P->last[w] != p || (P->viewed[w] && !scat) ||
                            !cg_same_type(g, v, w))
                            continue;
                        int shared = 0; /* src or index sharing the base's storage */
                        for (int i2 = 1; scat && i2 < g->nodes[p].nin; i2++)
                            shared |= g->nodes[p].in[i2] == w || g->values[g->nodes[p].in[i2]].alias == w;
                        if (shared) continue;
                        /* a GEMM reads its factors while it writes: the addend may not be one */
                        if (acc_gemm && (g->nodes[p].in[1] == w || (g->nodes[p].nin > 2 && g->nodes[p].in[2] == w)))
                            continue;
                        int32_t wd = cg_def(g, w);
                        if (k >= 0 && wd >= 0 && g->nodes[wd].kernel == k) continue; /* written by this kernel */
                        /* a value from outside the loop is read again next iteration; a carry's
                         * next or a collect body is copied out after the last node */
                        if (wd < 0 || g->nodes[wd].loop != g->nodes[p].loop || (P->u->flags[w] & (CG_U_NEXT | CG_U_COLLECT)))
                            continue;
                        pick = s;
                    }
                }
                /* best fit among free slots (fresh: none, groups only) */
                for (int32_t s = 0; s < nslots && pick < 0 && !fresh; s++)
                    if (slots[s].owner < 0 && slots[s].size == need) pick = s;
                for (int32_t s = 0; s < nslots; s++) {
                    if (pick >= 0 || fresh || slots[s].owner >= 0 || !fits(g, slots[s].size, need)) continue;
                    int32_t best = s;
                    for (int32_t t = s + 1; t < nslots; t++)
                        if (slots[t].owner < 0 && fits(g, slots[t].size, need) && slots[t].size != slots[best].size &&
                            fits(g, slots[best].size, slots[t].size))
                            best = t; /* provably no bigger */
                    pick = best;
                }
                if (pick < 0) {
                    /* symbolic offsets are sums of the sizes before them: past
                     * the IR's expression depth a value gets a buffer of its own */
                    int nd = fresh ? 0 : depth_of(g, need), ed = (nd > end_depth ? nd : end_depth) + 1;
                    if (!fresh && ed > PLAN_MAX_DEPTH) continue;
                    slots[nslots] = (slot){end, need, -1, p, p};
                    if (!fresh) { /* fresh: pack places the chains; no offsets to sum */
                        end = jn_ir_dim_op(g, JN_IR_E_ADD, end, need);
                        if (end == JN_IR_DIM_ERROR) return JN_ERR_NOMEM;
                        end_depth = jn_ir_is_expr(end) ? ed : 0;
                    }
                    pick = nslots++;
                }
                slots[pick].owner = v;
                if (slots[pick].lastp < P->last[v]) slots[pick].lastp = P->last[v];
                vslot[v] = pick;
            }
        }
    }
    *nslotsp = nslots;
    *endp = end;
    return JN_OK;
}

/* Orders for pack to try: largest first; longest lived first; largest
 * size x lifetime first (ties: earlier first). */
static int64_t span(const slot *x) { return (int64_t)x->lastp - x->first + 1; }
static int tie(const slot *x, const slot *y) { return x->first < y->first ? -1 : x->first > y->first; }
static int by_size(const void *a, const void *b) {
    const slot *x = *(const slot *const *)a, *y = *(const slot *const *)b;
    return x->size != y->size ? (x->size > y->size ? -1 : 1) : tie(x, y);
}
static int by_span(const void *a, const void *b) {
    const slot *x = *(const slot *const *)a, *y = *(const slot *const *)b;
    return span(x) != span(y) ? (span(x) > span(y) ? -1 : 1) : by_size(a, b);
}
static int by_area(const void *a, const void *b) {
    const slot *x = *(const slot *const *)a, *y = *(const slot *const *)b;
    /* as doubles: size x span may overflow int64; ties are broken exactly */
    double ax = (double)x->size * (double)span(x), ay = (double)y->size * (double)span(y);
    return ax != ay ? (ax > ay ? -1 : 1) : by_size(a, b);
}

/* Places the chains `by` lists, in that order, each at the lowest offset
 * where it overlaps no chain placed before it that is live at the same
 * time (positions [first, lastp], both inclusive).  Sets off; returns the
 * arena size.  order: scratch for n indices. */
static int64_t pack_in_order(slot *c, slot **by, int32_t n, int32_t *order) {
    int64_t end = 0;
    for (int32_t i = 0; i < n; i++) {
        slot *x = by[i];
        /* the placed chains live with x, by offset (insertion sort: few) */
        int32_t k = 0;
        for (int32_t j = 0; j < i; j++) {
            const slot *y = by[j];
            if (y->lastp < x->first || x->lastp < y->first) continue;
            int32_t m = k++;
            for (; m > 0 && c[order[m - 1]].off > y->off; m--) order[m] = order[m - 1];
            order[m] = (int32_t)(y - c);
        }
        int64_t off = 0;
        for (int32_t m = 0; m < k; m++) {
            const slot *y = &c[order[m]];
            if (off + x->size <= y->off) break; /* the gap below y */
            if (y->off + y->size > off) off = y->off + y->size;
        }
        x->off = off;
        if (off + x->size > end) end = off + x->size;
    }
    return end;
}

/* Offline placement of chains of constant sizes: the best of the orders
 * above (a heuristic: the exact problem is NP-hard).  Sets off; returns
 * the arena size, or INT64_MAX when out of memory (the caller then keeps
 * its other plan). */
static int64_t pack(slot *c, int32_t n, int32_t *order) {
    int (*const cmp[])(const void *, const void *) = {by_size, by_span, by_area};
    slot **by = malloc((size_t)n * sizeof(slot *));
    int64_t *keep = malloc((size_t)n * sizeof(int64_t)), best = INT64_MAX;
    for (size_t t = 0; by && keep && t < sizeof cmp / sizeof cmp[0]; t++) {
        for (int32_t i = 0; i < n; i++) by[i] = &c[i];
        qsort(by, (size_t)n, sizeof(slot *), cmp[t]);
        int64_t end = pack_in_order(c, by, n, order);
        if (end < best) {
            best = end;
            for (int32_t i = 0; i < n; i++) keep[i] = c[i].off;
        }
    }
    if (best != INT64_MAX)
        for (int32_t i = 0; i < n; i++) c[i].off = keep[i];
    free(by);
    free(keep);
    return best;
}

/* JANUS_PLAN_LIVE=1: after planning, prints to stderr where the most
 * arena bytes are in use at once (symbols at their recorded maxima; a
 * value occupies [mem, mem+size) from its node -- its kernel's root --
 * through its last use; values sharing bytes in place count once) and
 * every value live there: the floor no placement of this node order goes
 * below, next to the arena the plan got.  A diagnostic for graph
 * rewrites (what to make die earlier or smaller), not for placement. */
typedef struct {
    int64_t lo, hi;
} span_t;
static int by_lo(const void *a, const void *b) {
    const span_t *x = a, *y = b;
    return x->lo < y->lo ? -1 : x->lo > y->lo;
}
static int64_t used_at(const jn_ir_graph *g, const int32_t *ex, const int32_t *last, int32_t p, span_t *sp) {
    int32_t n = 0;
    for (int32_t v = 0; v < g->nvalues; v++) {
        int64_t off = 0, b = 0;
        if (g->values[v].mem == -1 || ex[cg_def(g, v)] > p || last[v] < p) continue;
        if (jn_cg_eval_at_max(g, g->values[v].mem, &off) != JN_OK ||
            jn_cg_eval_at_max(g, cg_value_bytes((jn_ir_graph *)g, v), &b) != JN_OK)
            continue;
        sp[n++] = (span_t){off, off + b};
    }
    qsort(sp, (size_t)n, sizeof *sp, by_lo);
    int64_t total = 0, end = INT64_MIN;
    for (int32_t i = 0; i < n; i++) {
        int64_t lo = sp[i].lo > end ? sp[i].lo : end;
        if (sp[i].hi > lo) total += sp[i].hi - lo;
        if (sp[i].hi > end) end = sp[i].hi;
    }
    return total;
}
static void print_live_peak(const jn_ir_graph *g, const int32_t *ex, const int32_t *last) {
    int32_t nn = g->nnodes, at = -1;
    int64_t best = -1, arena = 0;
    span_t *sp = malloc(((size_t)g->nvalues + 1) * sizeof *sp);
    if (!sp) return;
    for (int32_t p = 0; p < nn; p++) {
        int64_t b = used_at(g, ex, last, p, sp);
        if (b > best) best = b, at = p;
    }
    free(sp);
    if (jn_cg_eval_at_max(g, g->arena, &arena) != JN_OK) arena = -1;
    fprintf(stderr, "plan %s: arena %lld bytes; most in use at once %lld bytes, at node %d (%s)%s\n", g->name,
            (long long)arena, (long long)best, at, at >= 0 ? jn_op_info(g->nodes[at].op)->name : "-",
            at >= 0 ? ", live there:" : "");
    for (int32_t v = 0; at >= 0 && v < g->nvalues; v++) {
        int64_t b = 0, off = 0;
        if (g->values[v].mem == -1 || ex[cg_def(g, v)] > at || last[v] < at) continue;
        if (jn_cg_eval_at_max(g, cg_value_bytes((jn_ir_graph *)g, v), &b) != JN_OK ||
            jn_cg_eval_at_max(g, g->values[v].mem, &off) != JN_OK)
            continue;
        const jn_ir_value *x = &g->values[v];
        char shape[256], d[64];
        size_t k = 0;
        shape[0] = 0;
        for (int i = 0; i < x->ndim && k < sizeof shape - 1; i++)
            k += (size_t)snprintf(shape + k, sizeof shape - k, "%s%s", i ? ", " : "", jn_ir_dim_str(g, x->shape[i], d, sizeof d));
        int32_t dn = cg_def(g, v);
        fprintf(stderr, "  %%%d = %s (node %d, last use node %d) %s[%s] %lld bytes at %lld\n", v,
                jn_op_info(g->nodes[dn].op)->name, dn, last[v], jn_dtype_names[x->dtype], shape, (long long)b,
                (long long)off);
    }
}

/* Is d non-decreasing in every symbol over the symbols' ranges (a proof,
 * else 0)?  Symbols and constants are; so are sums, differences with a
 * constant, floor divisions by a positive constant and products of two
 * such factors that are never negative (a non-decreasing factor is
 * smallest with every symbol at its lowest, `lo`).  Byte sizes are built
 * from these. */
static int nondecreasing(const jn_ir_graph *g, jn_ir_dim d, const int64_t *lo, int depth) {
    if (!jn_ir_is_expr(d)) return 1;
    if (depth > 64) return 0;
    const jn_ir_expr *e = &g->exprs[jn_ir_expr_index(d)];
    int64_t x, y;
    switch (e->kind) {
    case JN_IR_E_SYM: return 1;
    case JN_IR_E_ADD: return nondecreasing(g, e->a, lo, depth + 1) && nondecreasing(g, e->b, lo, depth + 1);
    case JN_IR_E_SUB: return !jn_ir_is_expr(e->b) && nondecreasing(g, e->a, lo, depth + 1);
    case JN_IR_E_FLOORDIV: return !jn_ir_is_expr(e->b) && e->b > 0 && nondecreasing(g, e->a, lo, depth + 1);
    case JN_IR_E_MUL:
        return nondecreasing(g, e->a, lo, depth + 1) && nondecreasing(g, e->b, lo, depth + 1) &&
               jn_ir_dim_eval(g, e->a, lo, &x) == JN_OK && jn_ir_dim_eval(g, e->b, lo, &y) == JN_OK && x >= 0 &&
               y >= 0;
    }
    return 0;
}

/* Symbolic sizes that only grow with the symbols: the chains packed by
 * offset at the symbols' recorded maxima (the arena is allocated at that
 * size anyway, jn_ex_exec's arena_grow) give constant offsets that are
 * right for every smaller run too -- each value then fills a prefix of
 * the bytes it has at the maxima, and two values live at once never share
 * bytes there.  Sets the chains' sizes to their maxima and packs them;
 * returns the arena, or INT64_MAX when some size may shrink as a symbol
 * grows (or on an error: the caller keeps its symbolic plan). */
static int64_t pack_at_max(jn_ir_graph *g, slot *slots, int32_t n, int32_t *order) {
    int64_t *lo = malloc(((size_t)g->nsyms + 1) * sizeof *lo);
    if (!lo) return INT64_MAX;
    for (int32_t k = 0; k < g->nsyms; k++) lo[k] = g->syms[k].lo;
    int ok = 1;
    for (int32_t k = 0; k < n && ok; k++) {
        int64_t m;
        ok = nondecreasing(g, slots[k].size, lo, 0) && jn_cg_eval_at_max(g, slots[k].size, &m) == JN_OK && m >= 0;
        if (ok) slots[k].size = m;
    }
    free(lo);
    return ok ? pack(slots, n, order) : INT64_MAX;
}

jn_status jn_cg_pass_plan(jn_cg_ctx *cx, jn_ir_graph *g) {
    (void)cx;
    int32_t nv = g->nvalues, nn = g->nnodes;
    cg_uses u = {0};
    uint8_t *elig = NULL, *viewed = calloc((size_t)nv + 1, 1);
    int32_t *ex = malloc(((size_t)nn + 1) * sizeof(int32_t)), *last = malloc(((size_t)nv + 1) * sizeof(int32_t));
    int32_t *vslot = malloc(((size_t)nv + 1) * sizeof(int32_t));
    slot *slots = malloc(((size_t)nv + 1) * sizeof(slot));
    int32_t *order = malloc(((size_t)nv + 1) * sizeof(int32_t));
    jn_status st = cg_uses_build(g, &u);
    if (st == JN_OK) st = cg_arena_eligible(g, &elig);
    if (st == JN_OK && (!viewed || !ex || !last || !vslot || !slots || !order))
        st = jn_error(JN_ERR_NOMEM, "out of memory planning graph %s", g->name);
    if (st != JN_OK) goto done;
    for (int32_t n = 0; n < nn; n++) ex[n] = g->nodes[n].kernel >= 0 ? g->kernels[g->nodes[n].kernel].root : n;
    g->warena = -1;
    /* liveness */
    for (int32_t v = 0; v < nv; v++) {
        int32_t dn = cg_def(g, v);
        int32_t dloop = dn >= 0 ? g->nodes[dn].loop : -1, dk = dn >= 0 ? g->nodes[dn].kernel : -1;
        if (g->values[v].kind == JN_IR_V_LOOP_PARAM) dloop = g->values[v].def;
        else if (g->values[v].kind == JN_IR_V_LOOP_OUT) dloop = g->loops[g->values[v].def].parent;
        int32_t l = dn >= 0 ? ex[dn] : -1;
        vslot[v] = -1;
        g->values[v].mem = -1;
        g->values[v].wmem = -1;
        g->values[v].alias = -1;
        for (int32_t i = u.start[v]; i < u.start[v + 1]; i++) {
            int32_t w = u.users[i];
            if (dk >= 0 && g->nodes[w].kernel == dk) continue; /* inside the kernel */
            int32_t p = ex[w];
            for (int32_t L = g->nodes[w].loop; L >= 0 && !cg_encloses(g, L, dloop); L = g->loops[L].parent)
                if (g->loops[L].first + g->loops[L].count - 1 > p) p = g->loops[L].first + g->loops[L].count - 1;
            if (p > l) l = p;
        }
        last[v] = l;
    }
    for (int32_t L = 0; L < g->nloops; L++) {
        const jn_ir_loop *Lp = &g->loops[L];
        int32_t end = Lp->first + Lp->count - 1;
        for (int32_t k = 0; k < Lp->ncarry; k++) {
            if (last[Lp->carry[k].next] < end) last[Lp->carry[k].next] = end;
            if (last[Lp->carry[k].init] < Lp->first) last[Lp->carry[k].init] = Lp->first;
        }
        for (int32_t k = 0; k < Lp->ncollect; k++)
            if (last[Lp->collect[k].body] < end) last[Lp->collect[k].body] = end;
    }
    /* views: alias the base storage, which lives as long as they do */
    for (int32_t n = 0; n < nn; n++) {
        const jn_ir_node *x = &g->nodes[n];
        if (!(cg_flags(x->op) & JN_F_VIEW)) continue;
        int32_t base = g->values[x->in[0]].alias >= 0 ? g->values[x->in[0]].alias : x->in[0];
        g->values[x->out[0]].alias = base;
        viewed[base] = 1;
    }
    for (int32_t v = nv - 1; v >= 0; v--) {
        int32_t b = g->values[v].alias;
        if (b >= 0 && last[b] < last[v]) last[b] = last[v];
    }
    /* which values need a slot */
    for (int32_t v = 0; v < nv; v++) {
        if (!elig[v]) continue;
        int32_t dn = cg_def(g, v), k = g->nodes[dn].kernel;
        if (k < 0 || dn == g->kernels[k].root) continue;
        int internal = !(u.flags[v] & (CG_U_OUTPUT | CG_U_NEXT | CG_U_INIT | CG_U_COLLECT));
        for (int32_t i = u.start[v]; i < u.start[v + 1] && internal; i++) internal = g->nodes[u.users[i]].kernel == k;
        if (internal) elig[v] = 0;
    }
    plan_ctx P = {&u, elig, viewed, ex, last};
    jn_ir_dim end = 0;
    int32_t nslots = 0;
    st = place(g, &P, 0, slots, &nslots, vslot, &end);
    if (st != JN_OK) goto done;
    for (int32_t v = 0; v < nv; v++)
        if (vslot[v] >= 0) g->values[v].mem = slots[vslot[v]].off;
    /* constant sizes: try placing the in-place chains by offset, largest
     * first, and keep that plan when it is smaller */
    if (!jn_ir_is_expr(end) && nslots) {
        int32_t ngroups = 0;
        jn_ir_dim fend = 0; /* the chains end to end: unused */
        st = place(g, &P, 1, slots, &ngroups, vslot, &fend);
        if (st != JN_OK) goto done;
        int sized = 1; /* constant sizes (end is a sum of them; checked all the same) */
        for (int32_t s = 0; s < ngroups; s++) sized &= !jn_ir_is_expr(slots[s].size);
        int64_t gend = sized ? pack(slots, ngroups, order) : INT64_MAX;
        if (gend < end) {
            for (int32_t v = 0; v < nv; v++)
                if (vslot[v] >= 0) g->values[v].mem = slots[vslot[v]].off;
            end = gend;
        }
    }
    /* symbolic sizes: the same packing at the recorded maxima, kept when
     * its (constant) arena is smaller than the slot walk's at the maxima */
    int64_t emax;
    if (jn_ir_is_expr(end) && nslots && jn_cg_eval_at_max(g, end, &emax) == JN_OK) {
        int32_t ngroups = 0;
        jn_ir_dim fend = 0;
        st = place(g, &P, 1, slots, &ngroups, vslot, &fend);
        if (st != JN_OK) goto done;
        int64_t gend = pack_at_max(g, slots, ngroups, order);
        if (gend < emax) {
            /* the slot walk stays as the wide plan, valid past the maxima
             * (values it left to buffers of their own stay there) */
            for (int32_t v = 0; v < nv; v++) {
                g->values[v].wmem = g->values[v].mem;
                if (vslot[v] >= 0 && g->values[v].wmem != -1) g->values[v].mem = slots[vslot[v]].off;
            }
            g->warena = end;
            end = gend;
        }
    }
    g->arena = end;
    int live = 0;
    if ((st = jn_setting_bool(JN_S_PLAN_LIVE, &live)) != JN_OK) goto done;
    if (live) print_live_peak(g, ex, last);
done:
    cg_uses_free(&u);
    free(elig);
    free(viewed);
    free(ex);
    free(last);
    free(vslot);
    free(slots);
    free(order);
    return st;
}
