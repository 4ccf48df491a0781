/* util.c -- helpers the passes share: use lists, use replacement, graph
 * compaction and small type, constant and size helpers (cg_priv.h).
 *
 * Compaction is the only place nodes and values disappear: passes that
 * rewrite (cse, fold, simplify) only redirect uses and leave the dead
 * definitions for dce, which marks what is live and calls cg_compact.  It
 * keeps the relative order of everything, so a graph printed after dce
 * reads like the one before with the dead lines gone and the %numbers
 * closed up.
 */
#include <stdio.h>

#include "cg_priv.h"

jn_status cg_uses_build(const jn_ir_graph *g, cg_uses *u) {
    int32_t nv = g->nvalues, total = 0;
    u->start = calloc((size_t)nv + 2, sizeof(int32_t));
    u->flags = calloc((size_t)nv + 1, 1);
    for (int32_t n = 0; u->start && n < g->nnodes; n++) {
        total += g->nodes[n].nin;
        for (int k = 0; k < g->nodes[n].nin; k++) u->start[g->nodes[n].in[k] + 2]++;
    }
    u->users = malloc(((size_t)total + 1) * sizeof(int32_t));
    if (!u->start || !u->flags || !u->users) {
        cg_uses_free(u);
        return jn_error(JN_ERR_NOMEM, "out of memory listing the uses of graph %s", g->name);
    }
    for (int32_t v = 0; v < nv; v++) u->start[v + 2] += u->start[v + 1];
    for (int32_t n = 0; n < g->nnodes; n++)
        for (int k = 0; k < g->nodes[n].nin; k++) u->users[u->start[g->nodes[n].in[k] + 1]++] = n;
    for (int32_t i = 0; i < g->noutputs; i++) u->flags[g->outputs[i].value] |= CG_U_OUTPUT;
    for (int32_t i = 0; i < g->nguards; i++)
        if (g->guards[i].value >= 0 && g->guards[i].value < nv) u->flags[g->guards[i].value] |= CG_U_GUARD;
    for (int32_t l = 0; l < g->nloops; l++) {
        const jn_ir_loop *L = &g->loops[l];
        for (int32_t k = 0; k < L->ncarry; k++) {
            u->flags[L->carry[k].init] |= CG_U_INIT;
            u->flags[L->carry[k].next] |= CG_U_NEXT;
        }
        for (int32_t k = 0; k < L->ncollect; k++) u->flags[L->collect[k].body] |= CG_U_COLLECT;
    }
    return JN_OK;
}

void cg_uses_free(cg_uses *u) {
    free(u->start);
    free(u->users);
    free(u->flags);
    u->start = u->users = NULL;
    u->flags = NULL;
}

void cg_replace(jn_ir_graph *g, int32_t from, int32_t to) {
    for (int32_t n = 0; n < g->nnodes; n++)
        for (int k = 0; k < g->nodes[n].nin; k++)
            if (g->nodes[n].in[k] == from) g->nodes[n].in[k] = to;
    for (int32_t l = 0; l < g->nloops; l++) {
        jn_ir_loop *L = &g->loops[l];
        for (int32_t k = 0; k < L->ncarry; k++) {
            if (L->carry[k].init == from) L->carry[k].init = to;
            if (L->carry[k].next == from) L->carry[k].next = to;
        }
        for (int32_t k = 0; k < L->ncollect; k++)
            if (L->collect[k].body == from) L->collect[k].body = to;
    }
    for (int32_t i = 0; i < g->noutputs; i++)
        if (g->outputs[i].value == from) g->outputs[i].value = to;
}

int cg_can_replace(const jn_ir_graph *g, const cg_uses *u, int32_t y, int32_t x) {
    if (!(u->flags[y] & CG_U_OUTPUT)) return 1;
    return g->values[x].kind == JN_IR_V_NODE && !(u->flags[x] & CG_U_OUTPUT);
}

int cg_same_type(const jn_ir_graph *g, int32_t a, int32_t b) {
    const jn_ir_value *x = &g->values[a], *y = &g->values[b];
    if (x->dtype != y->dtype || x->device != y->device || x->ndim != y->ndim) return 0;
    for (int d = 0; d < x->ndim; d++)
        if (x->shape[d] != y->shape[d]) return 0;
    return 1;
}

int cg_const(const jn_ir_graph *g, int32_t v, double *val) {
    const jn_ir_value *x = &g->values[v];
    if (x->kind != JN_IR_V_INPUT || x->ndim != 0 || g->inputs[x->def].kind != JN_IR_IN_CONST) return 0;
    *val = g->inputs[x->def].scalar;
    return 1;
}

int cg_scalar(const jn_ir_graph *g, int32_t v, double *val) {
    const jn_ir_value *x = &g->values[v];
    if (x->kind != JN_IR_V_INPUT || x->ndim != 0 ||
        (g->inputs[x->def].kind != JN_IR_IN_CONST && g->inputs[x->def].kind != JN_IR_IN_SCALAR))
        return 0;
    *val = g->inputs[x->def].scalar;
    return 1;
}

jn_status cg_specialise(jn_ir_graph *g, int32_t v, const char *why) {
    double c;
    if (!cg_scalar(g, v, &c)) return jn_error(JN_ERR_VALUE, "graph %s: %%%d is no scalar input to specialise", g->name, v);
    jn_ir_input *in = &g->inputs[g->values[v].def];
    if (in->kind == JN_IR_IN_CONST) return JN_OK;
    char note[96];
    snprintf(note, sizeof note, "specialised by %s", why);
    jn_ir_guard q = {.kind = JN_IR_G_SCALAR, .cls = JN_IR_GC_NEED, .value = v, .sym = -1, .loop = -1, .dim = -1,
                     .fval = c, .site = in->site, .note = note};
    if (jn_ir_guard_add(g, &q) < 0) return jn_error(JN_ERR_NOMEM, "out of memory specialising graph %s", g->name);
    in->kind = JN_IR_IN_CONST;
    return JN_OK;
}

jn_ir_dim cg_value_bytes(jn_ir_graph *g, int32_t v) {
    const jn_ir_value *x = &g->values[v];
    /* constant factors first: when they are a multiple of 64 the size
     * needs no rounding expression, (B*64) rather than ((((B*64)+63)//64)*64) */
    int64_t c = (int64_t)jn_dtype_size[x->dtype];
    int nd = x->ndim;
    jn_ir_dim sym[JN_MAX_DIMS];
    int ns = 0;
    for (int d = 0; d < nd; d++) {
        if (jn_ir_is_expr(x->shape[d])) sym[ns++] = x->shape[d];
        else if (x->shape[d] > 0 && c > INT64_MAX / 2 / x->shape[d]) return JN_IR_DIM_ERROR;
        else c *= x->shape[d];
    }
    if (!ns) return (c + CG_ALIGN - 1) / CG_ALIGN * CG_ALIGN;
    jn_ir_dim b = c;
    for (int d = 0; d < ns && b != JN_IR_DIM_ERROR; d++) b = jn_ir_dim_op(g, JN_IR_E_MUL, b, sym[d]);
    if (b == JN_IR_DIM_ERROR || c % CG_ALIGN == 0) return b;
    b = jn_ir_dim_op(g, JN_IR_E_ADD, b, CG_ALIGN - 1);
    b = b == JN_IR_DIM_ERROR ? b : jn_ir_dim_op(g, JN_IR_E_FLOORDIV, b, CG_ALIGN);
    return b == JN_IR_DIM_ERROR ? b : jn_ir_dim_op(g, JN_IR_E_MUL, b, CG_ALIGN);
}

int cg_encloses(const jn_ir_graph *g, int32_t outer, int32_t l) {
    for (; l >= 0; l = g->loops[l].parent)
        if (l == outer) return 1;
    return outer < 0;
}

jn_status cg_arena_eligible(const jn_ir_graph *g, uint8_t **out) {
    uint8_t *e = calloc((size_t)g->nvalues + 1, 1);
    if (!e) return jn_error(JN_ERR_NOMEM, "out of memory planning graph %s", g->name);
    for (int32_t v = 0; v < g->nvalues; v++)
        e[v] = g->values[v].kind == JN_IR_V_NODE && !(cg_flags(g->nodes[g->values[v].def].op) & JN_F_VIEW);
    /* a value leaving the graph, or the storage a leaving view shares,
     * becomes a tensor Python keeps: allocated on its own */
    for (int32_t i = 0; i < g->noutputs; i++) {
        int32_t v = g->outputs[i].value;
        for (int hops = 0; v >= 0 && hops <= g->nnodes; hops++) {
            e[v] = 0;
            int32_t n = cg_def(g, v);
            v = n >= 0 && (cg_flags(g->nodes[n].op) & JN_F_VIEW) ? g->nodes[n].in[0] : -1;
        }
    }
    *out = e;
    return JN_OK;
}

jn_status cg_compact(jn_ir_graph *g, const uint8_t *live_node, const uint8_t *live_val) {
    int32_t nv = g->nvalues, nn = g->nnodes, nl = g->nloops;
    int32_t *vmap = malloc(((size_t)nv + 1) * sizeof(int32_t)), *nmap = malloc(((size_t)nn + 1) * sizeof(int32_t));
    int32_t *lmap = malloc(((size_t)nl + 1) * sizeof(int32_t));
    /* per loop: new index of each carry / collect (-1 dropped) */
    int32_t **cmap = calloc((size_t)nl + 1, sizeof(int32_t *));
    jn_status st = JN_OK;
    if (!vmap || !nmap || !lmap || !cmap) goto oom;
    for (int32_t l = 0; l < nl; l++) {
        const jn_ir_loop *L = &g->loops[l];
        lmap[l] = -1;
        for (int32_t n = L->first; n < L->first + L->count; n++)
            if (live_node[n]) lmap[l] = 0;
        if (!(cmap[l] = malloc(((size_t)L->ncarry + L->ncollect + 1) * sizeof(int32_t)))) goto oom;
        int32_t k2 = 0;
        for (int32_t k = 0; k < L->ncarry; k++)
            cmap[l][k] = lmap[l] == 0 && (live_val[L->carry[k].param] || live_val[L->carry[k].out]) ? k2++ : -1;
        for (int32_t k = 0; k < L->ncollect; k++)
            cmap[l][L->ncarry + k] = lmap[l] == 0 && live_val[L->collect[k].out] ? k2++ : -1;
    }
    int32_t k = 0;
    for (int32_t l = 0; l < nl; l++)
        if (lmap[l] == 0) lmap[l] = k++;
    k = 0;
    for (int32_t n = 0; n < nn; n++) nmap[n] = live_node[n] ? k++ : -1;
    k = 0;
    for (int32_t v = 0; v < nv; v++) {
        const jn_ir_value *x = &g->values[v];
        int keep = x->kind == JN_IR_V_INPUT || (x->kind == JN_IR_V_NODE && live_node[x->def]) ||
                   (x->kind != JN_IR_V_NODE && x->kind != JN_IR_V_INPUT && lmap[x->def] >= 0 &&
                    cmap[x->def][x->idx] >= 0);
        vmap[v] = keep ? k++ : -1;
    }
    /* values */
    for (int32_t v = 0; v < nv; v++) {
        if (vmap[v] < 0) continue;
        jn_ir_value x = g->values[v];
        if (x.kind == JN_IR_V_NODE) x.def = nmap[x.def];
        else if (x.kind != JN_IR_V_INPUT) {
            /* a param's idx is its carry; an out's idx counts carries then collects */
            x.idx = cmap[x.def][x.idx];
            x.def = lmap[x.def];
        }
        x.alias = x.alias >= 0 ? vmap[x.alias] : -1;
        g->values[vmap[v]] = x;
    }
    g->nvalues = k;
    /* nodes */
    for (int32_t n = 0; n < nn; n++) {
        if (nmap[n] < 0) continue;
        jn_ir_node x = g->nodes[n];
        for (int j = 0; j < x.nin; j++) x.in[j] = vmap[x.in[j]];
        for (int j = 0; j < x.nout; j++) x.out[j] = vmap[x.out[j]];
        for (int j = 0; j < JN_MAX_ATTRS; j++)
            if (x.attr_input[j] >= 0) x.attr_input[j] = vmap[x.attr_input[j]];
        x.loop = x.loop >= 0 ? lmap[x.loop] : -1;
        g->nodes[nmap[n]] = x;
    }
    /* loops: ranges from the surviving nodes (outer loops before inner ones
     * keep their indices relative order) */
    for (int32_t l = 0; l < nl; l++) {
        jn_ir_loop L = g->loops[l];
        if (lmap[l] < 0) {
            free(L.carry);
            free(L.collect);
            continue;
        }
        int32_t first = -1, count = 0;
        for (int32_t n = L.first; n < L.first + L.count; n++)
            if (nmap[n] >= 0) {
                if (first < 0) first = nmap[n];
                count++;
            }
        int32_t nc = 0, ncol = 0;
        for (int32_t j = 0; j < L.ncarry; j++)
            if (cmap[l][j] >= 0) {
                jn_ir_carry c = L.carry[j];
                L.carry[nc++] = (jn_ir_carry){vmap[c.param], vmap[c.init], vmap[c.next], vmap[c.out]};
            }
        for (int32_t j = 0; j < L.ncollect; j++)
            if (cmap[l][L.ncarry + j] >= 0) {
                jn_ir_collect c = L.collect[j];
                L.collect[ncol++] = (jn_ir_collect){vmap[c.body], vmap[c.out]};
            }
        L.ncarry = nc;
        L.ncollect = ncol;
        L.first = first;
        L.count = count;
        L.parent = L.parent >= 0 ? lmap[L.parent] : -1;
        g->loops[lmap[l]] = L;
    }
    g->nnodes = 0;
    for (int32_t n = 0; n < nn; n++) g->nnodes += nmap[n] >= 0;
    k = 0;
    for (int32_t l = 0; l < nl; l++) k += lmap[l] >= 0;
    g->nloops = k;
    for (int32_t i = 0; i < g->ninputs; i++) g->inputs[i].value = vmap[g->inputs[i].value];
    for (int32_t i = 0; i < g->noutputs; i++) g->outputs[i].value = vmap[g->outputs[i].value];
    /* a trip guard follows its loop's new number and goes with a dropped
     * loop (the matcher still counts the iterations: its program keeps
     * the recorded loops; the guard only named the bound in a miss) */
    k = 0;
    for (int32_t i = 0; i < g->nguards; i++) {
        jn_ir_guard q = g->guards[i];
        if (q.value >= 0 && q.value < nv) q.value = vmap[q.value];
        if (q.kind == JN_IR_G_TRIP) {
            if (q.loop < 0 || q.loop >= nl || lmap[q.loop] < 0) continue;
            q.loop = lmap[q.loop];
        }
        g->guards[k++] = q;
    }
    g->nguards = k;
    /* kernels whose root died go; their surviving members run on their own */
    k = 0;
    for (int32_t i = 0; i < g->nkernels; i++) {
        int32_t r = nmap[g->kernels[i].root];
        int32_t nk = r >= 0 ? k++ : -1;
        if (r >= 0) {
            g->kernels[nk] = g->kernels[i];
            g->kernels[nk].root = r;
        }
        for (int32_t n = 0; n < g->nnodes; n++)
            if (g->nodes[n].kernel == i) g->nodes[n].kernel = nk;
    }
    g->nkernels = k;
    goto done;
oom:
    st = jn_error(JN_ERR_NOMEM, "out of memory compacting graph %s", g->name);
done:
    for (int32_t l = 0; cmap && l < nl; l++) free(cmap[l]);
    free(cmap);
    free(vmap);
    free(nmap);
    free(lmap);
    return st;
}

jn_status jn_cg_eval_at_max(const jn_ir_graph *g, jn_ir_dim d, int64_t *out) {
    int64_t *vals = malloc(((size_t)g->nsyms + 1) * sizeof(int64_t));
    if (!vals) return jn_error(JN_ERR_NOMEM, "out of memory evaluating a size of graph %s", g->name);
    for (int32_t s = 0; s < g->nsyms; s++) vals[s] = g->syms[s].hi;
    jn_status st = jn_ir_dim_eval(g, d, vals, out);
    free(vals);
    return st;
}

jn_status jn_cg_naive_bytes(const jn_ir_graph *g, int64_t *out) {
    uint8_t *e;
    jn_status st = cg_arena_eligible(g, &e);
    if (st != JN_OK) return st;
    int64_t sum = 0;
    for (int32_t v = 0; v < g->nvalues && st == JN_OK; v++) {
        if (!e[v]) continue;
        const jn_ir_value *x = &g->values[v];
        int64_t b = (int64_t)jn_dtype_size[x->dtype], dv;
        for (int d = 0; d < x->ndim && st == JN_OK; d++) {
            st = jn_cg_eval_at_max(g, x->shape[d], &dv);
            b *= dv;
        }
        sum += (b + CG_ALIGN - 1) / CG_ALIGN * CG_ALIGN;
    }
    free(e);
    *out = sum;
    return st;
}

/* Node `from` may move to right after node `after` (same loop) when every
 * loop overlapping the nodes in between lies wholly among them (it shifts
 * by one) or around them all. */
int cg_node_movable(const jn_ir_graph *g, int32_t from, int32_t after) {
    int32_t lo = from < after ? from : after + 1, hi = from < after ? after : from;
    for (int32_t l = 0; l < g->nloops; l++) {
        int32_t a = g->loops[l].first, b = a + g->loops[l].count - 1;
        int inside = a >= lo && b <= hi && a != from && b != from, around = a <= lo && b >= hi;
        if (!inside && !around && b >= lo && a <= hi) return 0;
    }
    return 1;
}

/* Moves node `from` (movable) to right after node `after`, shifting the
 * nodes in between, and fixes their outputs' defining nodes and the ranges
 * of the loops among them. */
void cg_move_node(jn_ir_graph *g, int32_t from, int32_t after) {
    if (from == after + 1 || from == after) return;
    int32_t lo = from < after ? from : after + 1, hi = from < after ? after : from, step = from > after ? 1 : -1;
    jn_ir_node t = g->nodes[from];
    if (step > 0) {
        memmove(&g->nodes[lo + 1], &g->nodes[lo], (size_t)(hi - lo) * sizeof t);
        g->nodes[lo] = t;
    } else {
        memmove(&g->nodes[lo], &g->nodes[lo + 1], (size_t)(hi - lo) * sizeof t);
        g->nodes[hi] = t;
    }
    for (int32_t l = 0; l < g->nloops; l++) {
        int32_t a = g->loops[l].first, b = a + g->loops[l].count - 1;
        if (a >= lo && b <= hi) g->loops[l].first += step;
    }
    for (int32_t n = lo; n <= hi; n++)
        for (int k = 0; k < g->nodes[n].nout; k++) g->values[g->nodes[n].out[k]].def = n;
}
