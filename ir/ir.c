/* ir.c -- construction of the graph IR: modules, graphs and their tables,
 * the private pool (a chunked arena that also interns strings and
 * hash-conses expressions), the site table, expression building with
 * constant folding and canonical operand order, dim_eval / dim_str, and
 * freeing.
 *
 * Expressions: a graph's exprs are unique by (kind, sym, a, b) -- the pool
 * keeps a hash table over them -- and the operands of + and * are ordered by
 * a STRUCTURAL key (symbols by index, then constants last, compound
 * expressions by a hash of their structure), never by creation order, so a
 * graph re-read from text, where expressions are created in another order,
 * prints the same.  The tables sync lazily with g->exprs, so expressions a
 * caller appended by hand are seen too.
 */
#include <limits.h>
#include <math.h>
#include <stdio.h>

#include "ir_priv.h"

/* ------------------------------------------------------------ the pool */
typedef struct chunk {
    struct chunk *next;
    size_t cap, used;
} chunk;

struct jn_ir_pool {
    chunk *head;
    const char **strs;          /* interned strings, open addressing */
    uint32_t nstrs, capstrs;
    int32_t *etab;              /* expression index per slot, -1 empty */
    uint32_t necount, ecap;
    uint64_t *ekey;             /* structural ordering key per expression */
    int32_t nhashed, capkey;
};

#define CHUNK_SIZE 16384

struct jn_ir_pool *jn_ir__pool_new(void) {
    struct jn_ir_pool *p = calloc(1, sizeof *p);
    if (!p) jn_error(JN_ERR_NOMEM, "out of memory allocating an IR pool");
    return p;
}

void jn_ir__pool_free(struct jn_ir_pool *p) {
    if (!p) return;
    for (chunk *c = p->head, *n; c; c = n) {
        n = c->next;
        free(c);
    }
    free(p->strs);
    free(p->etab);
    free(p->ekey);
    free(p);
}

void *jn_ir__alloc(struct jn_ir_pool *p, size_t n) {
    n = (n + 7) & ~(size_t)7;
    if (!n) n = 8;
    chunk *c = p->head;
    if (!c || c->cap - c->used < n) {
        /* Big requests get a chunk of their own behind the current one, so
         * the current chunk's free space is not wasted. */
        size_t cap = n > CHUNK_SIZE / 4 ? n : CHUNK_SIZE;
        chunk *nc = malloc(sizeof(chunk) + cap);
        if (!nc) {
            jn_error(JN_ERR_NOMEM, "out of memory in the IR pool (%zu bytes)", n);
            return NULL;
        }
        nc->cap = cap;
        nc->used = 0;
        if (c && cap == n) {
            nc->next = c->next;
            c->next = nc;
        } else {
            nc->next = c;
            p->head = nc;
        }
        c = nc;
    }
    void *r = (char *)(c + 1) + c->used;
    c->used += n;
    return r;
}

uint64_t jn_ir__fnv(const void *p, size_t n, uint64_t h) {
    const unsigned char *s = p;
    for (size_t i = 0; i < n; i++) h = (h ^ s[i]) * 0x100000001b3ull;
    return h;
}

const char *jn_ir__intern_n(struct jn_ir_pool *p, const char *s, size_t len) {
    if (p->capstrs == 0 || (p->nstrs + 1) * 2 > p->capstrs) {
        uint32_t nc = p->capstrs ? p->capstrs * 2 : 64;
        const char **t = calloc(nc, sizeof *t);
        if (!t) {
            jn_error(JN_ERR_NOMEM, "out of memory interning a string");
            return NULL;
        }
        for (uint32_t i = 0; i < p->capstrs; i++) {
            if (!p->strs[i]) continue;
            uint32_t h = (uint32_t)jn_ir__fnv(p->strs[i], strlen(p->strs[i]), JN_IR_FNV_INIT) & (nc - 1);
            while (t[h]) h = (h + 1) & (nc - 1);
            t[h] = p->strs[i];
        }
        free(p->strs);
        p->strs = t;
        p->capstrs = nc;
    }
    uint32_t h = (uint32_t)jn_ir__fnv(s, len, JN_IR_FNV_INIT) & (p->capstrs - 1);
    for (; p->strs[h]; h = (h + 1) & (p->capstrs - 1))
        if (!strncmp(p->strs[h], s, len) && p->strs[h][len] == 0) return p->strs[h];
    char *c = jn_ir__alloc(p, len + 1);
    if (!c) return NULL;
    memcpy(c, s, len);
    c[len] = 0;
    p->strs[h] = c;
    p->nstrs++;
    return c;
}

void *jn_ir__resize(void *arr, int32_t *cap, int64_t need, size_t elsize) {
    if (need > INT32_MAX / 2 || need < 0) {
        jn_error(JN_ERR_NOMEM, "IR table too large (%lld entries)", (long long)need);
        return NULL;
    }
    int64_t nc = *cap > 0 ? *cap : 8;
    while (nc < need) nc *= 2;
    void *np = realloc(arr, (size_t)nc * elsize);
    if (!np) {
        jn_error(JN_ERR_NOMEM, "out of memory growing an IR table to %lld entries", (long long)nc);
        return NULL;
    }
    memset((char *)np + (size_t)*cap * elsize, 0, (size_t)(nc - *cap) * elsize);
    *cap = (int32_t)nc;
    return np;
}

static int32_t pow2cap(int32_t n) {
    int32_t c = 0;
    if (n > 0)
        for (c = 4; c < n; c *= 2) {}
    return c;
}

int jn_ir__loop_reserve(jn_ir_loop *l, int carries, int collects) {
    if (carries > pow2cap(l->ncarry)) {
        jn_ir_carry *c = realloc(l->carry, (size_t)pow2cap(carries) * sizeof *c);
        if (!c) return jn_error(JN_ERR_NOMEM, "out of memory adding a loop carry"), -1;
        l->carry = c;
    }
    if (collects > pow2cap(l->ncollect)) {
        jn_ir_collect *c = realloc(l->collect, (size_t)pow2cap(collects) * sizeof *c);
        if (!c) return jn_error(JN_ERR_NOMEM, "out of memory adding a loop collect"), -1;
        l->collect = c;
    }
    return 0;
}

int jn_ir__is_ident(const char *s) {
    if (!s || !(*s == '_' || (*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z'))) return 0;
    for (s++; *s; s++)
        if (!(*s == '_' || (*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') || (*s >= '0' && *s <= '9')))
            return 0;
    return 1;
}

const char *const jn_ir__sym_kinds[4] = {"dim", "int", "ivar", "rng"};
const char *const jn_ir__input_kinds[6] = {"state", "host", "carry", "scalar", "const", "rng"};
const char *const jn_ir__kernel_kinds[4] = {"ew", "ew_reduce", "gemm", "lib"};
const char *const jn_ir__impls[4] = {"none", "gen", "lib", "gemm"};
const char *const jn_ir__guard_kinds[8] = {"sym", "dim", "dtype", "device", "scalar", "pytype", "bind", "trip"};
const char *const jn_ir__pytypes[4] = {"tensor", "int", "float", "bool"};
const char *const jn_ir__devices[2] = {"cpu", "cuda"};
static const char *const dtype_short[JN_NDTYPES] = {"f32", "f64", "f16", "bf16", "i64", "i32", "u8", "bool"};

int jn_ir__lookup(const char *const *names, int n, const char *s, size_t len) {
    for (int i = 0; i < n; i++)
        if (strlen(names[i]) == len && !strncmp(names[i], s, len)) return i;
    return -1;
}

const char *jn_ir_dtype_short(jn_dtype d) { return (unsigned)d < JN_NDTYPES ? dtype_short[d] : "?"; }

int jn_ir_dtype_from_short(const char *s) {
    return s ? jn_ir__lookup(dtype_short, JN_NDTYPES, s, strlen(s)) : -1;
}

void jn_ir__attr_defaults(jn_op op, jn_attrs *a) {
    memset(a, 0, sizeof *a);
    const jn_opinfo *in = jn_op_info(op);
    for (int k = 0; in && k < in->nattrs; k++) {
        if (in->attr_kind[k] == JN_A_FLOAT) a->a[k].f = in->attr_default[k];
        else if (in->attr_kind[k] != JN_A_INTS) a->a[k].i = (int64_t)in->attr_default[k];
    }
}

/* ------------------------------------------------------ module, graphs */
jn_ir_module *jn_ir_module_new(void) {
    jn_ir_module *m = calloc(1, sizeof *m);
    if (!m || !(m->pool = jn_ir__pool_new())) {
        free(m);
        jn_error(JN_ERR_NOMEM, "out of memory creating an IR module");
        return NULL;
    }
    m->optable_hash = jn_optable_hash();
    return m;
}

static void graph_free(jn_ir_graph *g) {
    if (!g) return;
    for (int32_t l = 0; l < g->nloops; l++) {
        free(g->loops[l].carry);
        free(g->loops[l].collect);
    }
    free(g->syms);
    free(g->exprs);
    free(g->values);
    free(g->inputs);
    free(g->nodes);
    free(g->loops);
    free(g->outputs);
    free(g->guards);
    free(g->kernels);
    jn_ir__pool_free(g->pool);
    free(g);
}

void jn_ir_module_free(jn_ir_module *m) {
    if (!m) return;
    for (int32_t i = 0; i < m->ngraphs; i++) graph_free(m->graphs[i]);
    free(m->graphs);
    free(m->sites);
    jn_ir__pool_free(m->pool);
    free(m);
}

jn_ir_graph *jn_ir_graph_add(jn_ir_module *m, const char *name) {
    JN_IR_RESERVE(m->graphs, m->capgraphs, m->ngraphs + 1, return NULL);
    jn_ir_graph *g = calloc(1, sizeof *g);
    if (!g || !(g->pool = jn_ir__pool_new())) {
        free(g);
        jn_error(JN_ERR_NOMEM, "out of memory creating graph %s", name ? name : "?");
        return NULL;
    }
    g->parent = -1;
    g->arena = -1;
    g->warena = -1;
    if (name && !(g->name = jn_ir_intern(g, name))) {
        graph_free(g);
        return NULL;
    }
    m->graphs[m->ngraphs++] = g;
    return g;
}

const char *jn_ir_intern(jn_ir_graph *g, const char *s) {
    return s ? jn_ir__intern_n(g->pool, s, strlen(s)) : NULL;
}

/* ---------------------------------------------------------------- sites */
static int same_str(const char *a, const char *b) { return a == b || (a && b && !strcmp(a, b)); }

jn_status jn_ir_site_add(jn_ir_module *m, int64_t id, const char *file, int line, const char *func) {
    const jn_ir_site *old = jn_ir_site_get(m, id);
    if (old) {
        /* Adding the same site twice is harmless; two meanings for one id are a bug. */
        if (old->line == line && same_str(old->file, file) && same_str(old->func, func)) return JN_OK;
        return jn_error(JN_ERR_VALUE, "site %lld added twice with different locations (%s:%d and %s:%d)",
                        (long long)id, old->file ? old->file : "?", old->line, file ? file : "?", line);
    }
    JN_IR_RESERVE(m->sites, m->capsites, m->nsites + 1, return JN_ERR_NOMEM);
    jn_ir_site *s = &m->sites[m->nsites];
    s->id = id;
    s->line = line;
    s->file = file ? jn_ir__intern_n(m->pool, file, strlen(file)) : NULL;
    s->func = func ? jn_ir__intern_n(m->pool, func, strlen(func)) : NULL;
    if ((file && !s->file) || (func && !s->func)) return JN_ERR_NOMEM;
    m->nsites++;
    return JN_OK;
}

const jn_ir_site *jn_ir_site_get(const jn_ir_module *m, int64_t id) {
    for (int32_t i = 0; m && i < m->nsites; i++)
        if (m->sites[i].id == id) return &m->sites[i];
    return NULL;
}

/* --------------------------------------------------------------- tables */
int32_t jn_ir_sym_add(jn_ir_graph *g, const char *name, jn_ir_sym_kind kind, int64_t lo, int64_t hi,
                      int64_t site) {
    JN_IR_RESERVE(g->syms, g->capsyms, g->nsyms + 1, return -1);
    jn_ir_sym *s = &g->syms[g->nsyms];
    s->name = jn_ir_intern(g, name);
    if (name && !s->name) return -1;
    s->kind = kind;
    s->lo = lo;
    s->hi = hi;
    s->site = site;
    return g->nsyms++;
}

int32_t jn_ir_sym_find(const jn_ir_graph *g, const char *name) {
    for (int32_t i = 0; name && i < g->nsyms; i++)
        if (g->syms[i].name && !strcmp(g->syms[i].name, name)) return i;
    return -1;
}

int32_t jn_ir_value_add(jn_ir_graph *g, jn_ir_value_kind kind, int32_t def, int32_t idx, jn_dtype dtype,
                        int device, int ndim, const jn_ir_dim *shape) {
    if (ndim < 0 || ndim > JN_MAX_DIMS)
        return jn_error(JN_ERR_VALUE, "graph %s: a value cannot have %d dims (at most %d)",
                        g->name ? g->name : "?", ndim, JN_MAX_DIMS), -1;
    jn_ir_dim dims[JN_MAX_DIMS];
    for (int d = 0; d < ndim; d++) dims[d] = shape[d]; /* shape may point into g->values */
    JN_IR_RESERVE(g->values, g->capvalues, g->nvalues + 1, return -1);
    jn_ir_value *v = &g->values[g->nvalues];
    memset(v, 0, sizeof *v);
    v->kind = kind;
    v->def = def;
    v->idx = idx;
    v->dtype = dtype;
    v->device = (uint8_t)device;
    v->ndim = (uint8_t)ndim;
    for (int d = 0; d < ndim; d++) v->shape[d] = dims[d];
    v->mem = -1;
    v->wmem = -1;
    v->alias = -1;
    return g->nvalues++;
}

int32_t jn_ir_input_add(jn_ir_graph *g, jn_ir_input_kind kind, jn_dtype dtype, int device, int ndim,
                        const jn_ir_dim *shape, int64_t site) {
    JN_IR_RESERVE(g->inputs, g->capinputs, g->ninputs + 1, return -1);
    int32_t v = jn_ir_value_add(g, JN_IR_V_INPUT, g->ninputs, 0, dtype, device, ndim, shape);
    if (v < 0) return -1;
    jn_ir_input *in = &g->inputs[g->ninputs];
    memset(in, 0, sizeof *in);
    in->kind = kind;
    in->value = v;
    in->site = site;
    return g->ninputs++;
}

/* The deepest loop whose range already holds node index n (loops added
 * with their final count before their body), -1 if none. */
static int32_t innermost_loop(const jn_ir_graph *g, int32_t n) {
    int32_t best = -1, bestd = -1;
    for (int32_t l = 0; l < g->nloops; l++) {
        const jn_ir_loop *L = &g->loops[l];
        if (n < L->first || n >= (int64_t)L->first + L->count) continue;
        int32_t d = 0;
        for (int32_t p = L->parent; p >= 0 && p < g->nloops && d <= JN_IR_MAX_LOOP_DEPTH; p = g->loops[p].parent) d++;
        if (d > bestd) best = l, bestd = d;
    }
    return best;
}

int32_t jn_ir_node_add(jn_ir_graph *g, jn_op op, int nin, const int32_t *in, const jn_attrs *attrs,
                       int nout, const jn_ir_value *out_types, int64_t site) {
    const char *gn = g->name ? g->name : "?";
    if (nin < 0 || nin > JN_MAX_INS)
        return jn_error(JN_ERR_VALUE, "graph %s: a node cannot have %d inputs (at most %d)", gn, nin,
                        JN_MAX_INS), -1;
    if (nout < 0 || nout > JN_MAX_OUTS)
        return jn_error(JN_ERR_VALUE, "graph %s: a node cannot have %d outputs (at most %d)", gn, nout,
                        JN_MAX_OUTS), -1;
    jn_ir_value types[JN_MAX_OUTS]; /* out_types may point into g->values */
    if (nout) memcpy(types, out_types, (size_t)nout * sizeof *types);
    JN_IR_RESERVE(g->nodes, g->capnodes, g->nnodes + 1, return -1);
    JN_IR_RESERVE(g->values, g->capvalues, g->nvalues + nout, return -1);
    jn_ir_node *n = &g->nodes[g->nnodes];
    memset(n, 0, sizeof *n);
    n->op = op;
    n->nin = (uint8_t)nin;
    n->nout = (uint8_t)nout;
    if (nin > 0) {
        if (!(n->in = jn_ir__alloc(g->pool, (size_t)nin * sizeof(int32_t)))) return -1;
        memcpy(n->in, in, (size_t)nin * sizeof(int32_t));
    }
    if (attrs) n->attrs = *attrs;
    else jn_ir__attr_defaults(op, &n->attrs);
    for (int k = 0; k < JN_MAX_ATTRS; k++) n->attr_input[k] = -1;
    for (int k = 0; k < JN_MAX_OUTS; k++) n->out[k] = -1;
    n->loop = innermost_loop(g, g->nnodes);
    n->site = site;
    n->kernel = -1;
    for (int k = 0; k < nout; k++) {
        const jn_ir_value *t = &types[k];
        n->out[k] = jn_ir_value_add(g, JN_IR_V_NODE, g->nnodes, k, t->dtype, t->device, t->ndim, t->shape);
        if (n->out[k] < 0) return -1;
    }
    return g->nnodes++;
}

int32_t jn_ir_loop_add(jn_ir_graph *g, int32_t parent, int32_t first, int32_t count, jn_ir_dim trip,
                       int32_t ivar) {
    JN_IR_RESERVE(g->loops, g->caploops, g->nloops + 1, return -1);
    int32_t l = g->nloops++;
    jn_ir_loop *lp = &g->loops[l];
    memset(lp, 0, sizeof *lp);
    lp->parent = parent;
    lp->first = first;
    lp->count = count;
    lp->trip = trip;
    lp->ivar = ivar;
    /* Nodes already in the range that sit directly in `parent` move into the
     * new loop (add outer loops before inner ones). */
    for (int32_t i = first; i >= 0 && i < g->nnodes && i < (int64_t)first + count; i++)
        if (g->nodes[i].loop == parent) g->nodes[i].loop = l;
    return l;
}

static int32_t loop_check(jn_ir_graph *g, int32_t l, int32_t v, const char *what) {
    if (l < 0 || l >= g->nloops)
        return jn_error(JN_ERR_VALUE, "graph %s: %s of loop L%d, which does not exist", g->name ? g->name : "?",
                        what, l), -1;
    if (v < 0 || v >= g->nvalues)
        return jn_error(JN_ERR_VALUE, "graph %s: %s of loop L%d names value %%%d, which does not exist",
                        g->name ? g->name : "?", what, l, v), -1;
    return 0;
}

int32_t jn_ir_loop_carry(jn_ir_graph *g, int32_t l, int32_t init) {
    if (loop_check(g, l, init, "carry") < 0) return -1;
    if (jn_ir__loop_reserve(&g->loops[l], g->loops[l].ncarry + 1, 0) < 0) return -1;
    JN_IR_RESERVE(g->values, g->capvalues, g->nvalues + 2, return -1);
    jn_ir_loop *lp = &g->loops[l];
    jn_ir_value t = g->values[init];
    int32_t k = lp->ncarry;
    jn_ir_carry *c = &lp->carry[k];
    c->init = init;
    c->next = -1;
    c->param = jn_ir_value_add(g, JN_IR_V_LOOP_PARAM, l, k, t.dtype, t.device, t.ndim, t.shape);
    c->out = jn_ir_value_add(g, JN_IR_V_LOOP_OUT, l, k, t.dtype, t.device, t.ndim, t.shape);
    lp->ncarry++;
    /* collect outs are numbered after the carries: renumber any added before */
    for (int32_t j = 0; j < lp->ncollect; j++)
        if (lp->collect[j].out >= 0 && lp->collect[j].out < g->nvalues) g->values[lp->collect[j].out].idx = lp->ncarry + j;
    return k;
}

int32_t jn_ir_loop_collect(jn_ir_graph *g, int32_t l, int32_t body) {
    if (loop_check(g, l, body, "collect") < 0) return -1;
    jn_ir_value t = g->values[body];
    if (t.ndim >= JN_MAX_DIMS)
        return jn_error(JN_ERR_VALUE, "graph %s: loop L%d cannot collect %%%d: it has %d dims already (at most %d)",
                        g->name ? g->name : "?", l, body, t.ndim, JN_MAX_DIMS), -1;
    if (jn_ir__loop_reserve(&g->loops[l], 0, g->loops[l].ncollect + 1) < 0) return -1;
    jn_ir_loop *lp = &g->loops[l];
    jn_ir_dim shape[JN_MAX_DIMS];
    shape[0] = lp->trip;
    for (int d = 0; d < t.ndim; d++) shape[d + 1] = t.shape[d];
    int32_t k = lp->ncollect;
    int32_t v = jn_ir_value_add(g, JN_IR_V_LOOP_OUT, l, lp->ncarry + k, t.dtype, t.device, t.ndim + 1, shape);
    if (v < 0) return -1;
    lp->collect[k].body = body;
    lp->collect[k].out = v;
    lp->ncollect++;
    return k;
}

int32_t jn_ir_output_add(jn_ir_graph *g, jn_ir_output_kind kind, int32_t value, int32_t state) {
    JN_IR_RESERVE(g->outputs, g->capoutputs, g->noutputs + 1, return -1);
    jn_ir_output *o = &g->outputs[g->noutputs];
    o->kind = kind;
    o->value = value;
    o->state = kind == JN_IR_OUT_STATE ? state : -1; /* the text form has no state for keep */
    return g->noutputs++;
}

int32_t jn_ir_guard_add(jn_ir_graph *g, const jn_ir_guard *guard) {
    JN_IR_RESERVE(g->guards, g->capguards, g->nguards + 1, return -1);
    jn_ir_guard q = *guard;
    /* Only the fields a kind uses survive the text form: clear the others
     * so a graph and its re-read copy are equal field by field. */
    int uses_value = q.kind != JN_IR_G_SYM && q.kind != JN_IR_G_TRIP;
    if (!uses_value) q.value = -1;
    if (q.kind != JN_IR_G_SYM) q.sym = -1;
    if (q.kind != JN_IR_G_TRIP) q.loop = -1;
    if (q.kind != JN_IR_G_DIM) q.dim = -1;
    if (q.kind == JN_IR_G_SCALAR) q.lo = q.hi = 0;
    else q.fval = 0;
    if (q.kind != JN_IR_G_SYM && q.kind != JN_IR_G_TRIP && q.kind != JN_IR_G_SCALAR) q.hi = q.lo;
    if (q.note && !(q.note = jn_ir_intern(g, q.note))) return -1;
    g->guards[g->nguards] = q;
    return g->nguards++;
}

int jn_ir__values_upto(jn_ir_graph *g, int32_t v) {
    JN_IR_RESERVE(g->values, g->capvalues, (int64_t)v + 1, return -1);
    for (; g->nvalues <= v; g->nvalues++) { /* new slots are zeroed by the resize */
        g->values[g->nvalues].mem = -1;
        g->values[g->nvalues].wmem = -1;
        g->values[g->nvalues].alias = -1;
    }
    return 0;
}

int32_t jn_ir_kernel_add(jn_ir_graph *g, jn_ir_kernel_kind kind, int32_t root) {
    JN_IR_RESERVE(g->kernels, g->capkernels, g->nkernels + 1, return -1);
    g->kernels[g->nkernels] = (jn_ir_kernel){kind, root, JN_IR_IMPL_NONE};
    if (root >= 0 && root < g->nnodes) g->nodes[root].kernel = g->nkernels;
    return g->nkernels++;
}

int jn_ir__loops_upto(jn_ir_graph *g, int32_t l) {
    JN_IR_RESERVE(g->loops, g->caploops, (int64_t)l + 1, return -1);
    if (g->nloops <= l) g->nloops = l + 1;
    return 0;
}

/* ---------------------------------------------------------- expressions */
static uint64_t mix(uint64_t x) {
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdull;
    x ^= x >> 33;
    x *= 0xc4ceb9fe1a85ec53ull;
    return x ^ (x >> 33);
}

static uint64_t slot_hash(jn_ir_expr_kind k, int32_t sym, jn_ir_dim a, jn_ir_dim b) {
    return mix(mix(mix((uint64_t)k * 31 + (uint64_t)(uint32_t)sym) ^ (uint64_t)a) ^ (uint64_t)b);
}

static int valid_ref(const jn_ir_graph *g, jn_ir_dim d, int32_t below) {
    return !jn_ir_is_expr(d) || (jn_ir__eidx(d) >= 0 && jn_ir__eidx(d) < below);
}

static uint64_t operand_key(const struct jn_ir_pool *p, jn_ir_dim d) {
    return jn_ir_is_expr(d) ? p->ekey[jn_ir_expr_index(d)] : mix((uint64_t)d ^ 0x5bd1e995ull);
}

/* Brings the hash table and keys up to date with g->exprs. */
static int expr_sync(jn_ir_graph *g) {
    struct jn_ir_pool *p = g->pool;
    if (p->nhashed == g->nexprs && p->ecap) return 0;
    JN_IR_RESERVE(p->ekey, p->capkey, g->nexprs, return -1);
    if ((uint64_t)(g->nexprs + 1) * 2 > p->ecap) {
        uint32_t nc = p->ecap ? p->ecap : 64;
        while ((uint64_t)(g->nexprs + 1) * 2 > nc) nc *= 2;
        int32_t *t = malloc((size_t)nc * sizeof *t);
        if (!t) return jn_error(JN_ERR_NOMEM, "out of memory hashing expressions"), -1;
        for (uint32_t i = 0; i < nc; i++) t[i] = -1;
        free(p->etab);
        p->etab = t;
        p->ecap = nc;
        p->necount = 0;
        p->nhashed = 0;
    }
    for (int32_t i = p->nhashed; i < g->nexprs; i++) {
        const jn_ir_expr *e = &g->exprs[i];
        int ok = e->kind == JN_IR_E_SYM || (valid_ref(g, e->a, i) && valid_ref(g, e->b, i));
        if (e->kind == JN_IR_E_SYM) p->ekey[i] = mix((uint64_t)(uint32_t)e->sym + 0x9e3779b97f4a7c15ull);
        else p->ekey[i] = ok ? mix(slot_hash(e->kind, 0, operand_key(p, e->a), operand_key(p, e->b))) : 0;
        int32_t sym = e->kind == JN_IR_E_SYM ? e->sym : 0;
        jn_ir_dim a = e->kind == JN_IR_E_SYM ? 0 : e->a, b = e->kind == JN_IR_E_SYM ? 0 : e->b;
        uint32_t h = (uint32_t)slot_hash(e->kind, sym, a, b) & (p->ecap - 1);
        for (; p->etab[h] >= 0; h = (h + 1) & (p->ecap - 1)) {
            const jn_ir_expr *o = &g->exprs[p->etab[h]];
            if (o->kind == e->kind && (e->kind == JN_IR_E_SYM ? o->sym == e->sym : o->a == e->a && o->b == e->b))
                break;
        }
        if (p->etab[h] < 0) { /* first of its kind wins */
            p->etab[h] = i;
            p->necount++;
        }
    }
    p->nhashed = g->nexprs;
    return 0;
}

static jn_ir_dim expr_intern(jn_ir_graph *g, jn_ir_expr_kind k, int32_t sym, jn_ir_dim a, jn_ir_dim b) {
    struct jn_ir_pool *p = g->pool;
    if (expr_sync(g) < 0) return JN_IR_DIM_ERROR;
    uint32_t h = (uint32_t)slot_hash(k, sym, a, b) & (p->ecap - 1);
    for (; p->etab[h] >= 0; h = (h + 1) & (p->ecap - 1)) {
        const jn_ir_expr *o = &g->exprs[p->etab[h]];
        if (o->kind == k && (k == JN_IR_E_SYM ? o->sym == sym : o->a == a && o->b == b))
            return jn_ir_expr_ref(p->etab[h]);
    }
    JN_IR_RESERVE(g->exprs, g->capexprs, g->nexprs + 1, return JN_IR_DIM_ERROR);
    jn_ir_expr *e = &g->exprs[g->nexprs++];
    e->kind = k;
    e->sym = sym;
    e->a = a;
    e->b = b;
    if (expr_sync(g) < 0) {
        g->nexprs--;
        return JN_IR_DIM_ERROR;
    }
    return jn_ir_expr_ref(g->nexprs - 1);
}

jn_ir_dim jn_ir__sym_ref(const jn_ir_graph *g, int32_t s) {
    for (int32_t i = 0; i < g->nexprs; i++)
        if (g->exprs[i].kind == JN_IR_E_SYM && g->exprs[i].sym == s) return jn_ir_expr_ref(i);
    return 0;
}

jn_ir_dim jn_ir_sym_dim(jn_ir_graph *g, int32_t sym) {
    if (sym < 0 || sym >= g->nsyms) {
        jn_error(JN_ERR_VALUE, "graph %s: symbol #%d does not exist", g->name ? g->name : "?", sym);
        return JN_IR_DIM_ERROR;
    }
    return expr_intern(g, JN_IR_E_SYM, sym, 0, 0);
}

/* Operand order of + and *: symbols by index, then compound expressions
 * by structural key, constants last (B*784, never 784*B). */
static int operand_before(const jn_ir_graph *g, jn_ir_dim x, jn_ir_dim y) {
    int cx = !jn_ir_is_expr(x), cy = !jn_ir_is_expr(y);
    if (cx || cy) return cx && cy ? x < y : cy;
    const jn_ir_expr *ex = &g->exprs[jn_ir_expr_index(x)], *ey = &g->exprs[jn_ir_expr_index(y)];
    int sx = ex->kind == JN_IR_E_SYM, sy = ey->kind == JN_IR_E_SYM;
    if (sx || sy) return sx && sy ? ex->sym < ey->sym : sx;
    uint64_t kx = g->pool->ekey[jn_ir_expr_index(x)], ky = g->pool->ekey[jn_ir_expr_index(y)];
    return kx != ky ? kx < ky : jn_ir_expr_index(x) < jn_ir_expr_index(y);
}

/* a OP b on constants; 0 when it overflows or leaves the constant range. */
int jn_ir_expr_apply(jn_ir_expr_kind k, int64_t a, int64_t b, int64_t *r) {
    switch (k) {
    case JN_IR_E_ADD: return !__builtin_add_overflow(a, b, r);
    case JN_IR_E_SUB: return !__builtin_sub_overflow(a, b, r);
    case JN_IR_E_MUL: return !__builtin_mul_overflow(a, b, r);
    case JN_IR_E_FLOORDIV:
        if (b == 0 || (a == INT64_MIN && b == -1)) return 0;
        *r = a / b;
        if (a % b != 0 && ((a < 0) != (b < 0))) (*r)--;
        return 1;
    default: return 0;
    }
}

/* Constant folding: exact, and the result still a constant (not a reference). */
static int fold(jn_ir_expr_kind k, int64_t a, int64_t b, int64_t *r) {
    return jn_ir_expr_apply(k, a, b, r) && !jn_ir_is_expr(*r);
}

jn_ir_dim jn_ir_dim_op(jn_ir_graph *g, jn_ir_expr_kind kind, jn_ir_dim a, jn_ir_dim b) {
    const char *gn = g->name ? g->name : "?";
    if (kind != JN_IR_E_ADD && kind != JN_IR_E_SUB && kind != JN_IR_E_MUL && kind != JN_IR_E_FLOORDIV) {
        jn_error(JN_ERR_VALUE, "graph %s: expression kind %d is not a binary operator", gn, (int)kind);
        return JN_IR_DIM_ERROR;
    }
    if (!valid_ref(g, a, g->nexprs) || !valid_ref(g, b, g->nexprs)) {
        jn_error(JN_ERR_VALUE, "graph %s: expression operand refers to an expression that does not exist", gn);
        return JN_IR_DIM_ERROR;
    }
    if (expr_sync(g) < 0) return JN_IR_DIM_ERROR;
    if ((kind == JN_IR_E_ADD || kind == JN_IR_E_MUL) && operand_before(g, b, a)) {
        jn_ir_dim t = a;
        a = b;
        b = t;
    }
    int64_t r;
    if (!jn_ir_is_expr(a) && !jn_ir_is_expr(b) && fold(kind, a, b, &r)) return r;
    if (!jn_ir_is_expr(b)) { /* identities; constants sit on the right after ordering */
        if ((kind == JN_IR_E_ADD || kind == JN_IR_E_SUB) && b == 0) return a;
        if ((kind == JN_IR_E_MUL || kind == JN_IR_E_FLOORDIV) && b == 1) return a;
        if (kind == JN_IR_E_MUL && b == 0) return 0;
    }
    return expr_intern(g, kind, 0, a, b);
}

static jn_status eval_rec(const jn_ir_graph *g, jn_ir_dim d, const int64_t *sv, int64_t *out, int depth) {
    if (!jn_ir_is_expr(d)) {
        *out = d;
        return JN_OK;
    }
    int32_t i = jn_ir__eidx(d);
    const char *gn = g->name ? g->name : "?";
    if (i < 0 || i >= g->nexprs)
        return jn_error(JN_ERR_VALUE, "graph %s: expression #%d does not exist", gn, i);
    if (depth > JN_IR_MAX_EXPR_DEPTH)
        return jn_error(JN_ERR_VALUE, "graph %s: expression #%d nests deeper than %d", gn, i, JN_IR_MAX_EXPR_DEPTH);
    const jn_ir_expr *e = &g->exprs[i];
    if (e->kind == JN_IR_E_SYM) {
        if (e->sym < 0 || e->sym >= g->nsyms)
            return jn_error(JN_ERR_VALUE, "graph %s: expression #%d names symbol #%d, which does not exist", gn, i,
                            e->sym);
        *out = sv[e->sym];
        return JN_OK;
    }
    int64_t a, b, r = 0;
    jn_status s = eval_rec(g, e->a, sv, &a, depth + 1);
    if (s == JN_OK) s = eval_rec(g, e->b, sv, &b, depth + 1);
    if (s != JN_OK) return s;
    if (e->kind != JN_IR_E_ADD && e->kind != JN_IR_E_SUB && e->kind != JN_IR_E_MUL && e->kind != JN_IR_E_FLOORDIV)
        return jn_error(JN_ERR_VALUE, "graph %s: expression #%d has unknown kind %d", gn, i, (int)e->kind);
    int bad = !jn_ir_expr_apply(e->kind, a, b, &r);
    if (bad) {
        char buf[256];
        jn_ir_dim_str(g, d, buf, sizeof buf);
        return jn_error(JN_ERR_VALUE, "graph %s: %s in %s with %lld and %lld", gn,
                        e->kind == JN_IR_E_FLOORDIV && b == 0 ? "division by zero" : "integer overflow", buf,
                        (long long)a, (long long)b);
    }
    *out = r;
    return JN_OK;
}

jn_status jn_ir_dim_eval(const jn_ir_graph *g, jn_ir_dim d, const int64_t *sym_values, int64_t *out) {
    return eval_rec(g, d, sym_values, out, 0);
}

void jn_ir__put(char *buf, size_t n, size_t *at, const char *fmt, ...) {
    if (*at >= n) return;
    va_list ap;
    va_start(ap, fmt);
    int k = vsnprintf(buf + *at, n - *at, fmt, ap);
    va_end(ap);
    if (k > 0) *at = *at + (size_t)k < n ? *at + (size_t)k : n - 1;
}

static void dim_put_rec(const jn_ir_graph *g, jn_ir_dim d, char *buf, size_t n, size_t *at, int depth) {
    static const char *const opstr[] = {"?", "+", "-", "*", "//"};
    if (!jn_ir_is_expr(d)) {
        jn_ir__put(buf, n, at, "%lld", (long long)d);
        return;
    }
    int32_t i = jn_ir__eidx(d);
    if (i < 0 || i >= g->nexprs || depth > JN_IR_MAX_EXPR_DEPTH) {
        jn_ir__put(buf, n, at, "<bad expr>");
        return;
    }
    const jn_ir_expr *e = &g->exprs[i];
    if (e->kind == JN_IR_E_SYM) {
        const char *nm = e->sym >= 0 && e->sym < g->nsyms ? g->syms[e->sym].name : NULL;
        jn_ir__put(buf, n, at, "%s", nm ? nm : "<bad symbol>");
    } else if ((unsigned)e->kind <= JN_IR_E_FLOORDIV) {
        jn_ir__put(buf, n, at, "(");
        dim_put_rec(g, e->a, buf, n, at, depth + 1);
        jn_ir__put(buf, n, at, "%s", opstr[e->kind]);
        dim_put_rec(g, e->b, buf, n, at, depth + 1);
        jn_ir__put(buf, n, at, ")");
    } else {
        jn_ir__put(buf, n, at, "<bad expr #%d>", i);
    }
}

void jn_ir__dim_put(const jn_ir_graph *g, jn_ir_dim d, char *buf, size_t n, size_t *at) {
    dim_put_rec(g, d, buf, n, at, 0);
}

const char *jn_ir_dim_str(const jn_ir_graph *g, jn_ir_dim d, char *buf, size_t n) {
    size_t at = 0;
    if (!n) return buf;
    buf[0] = 0;
    dim_put_rec(g, d, buf, n, &at, 0);
    return buf;
}

void jn_ir__fmt_double(double v, int as_float, char *buf, size_t n) {
    if (isnan(v)) snprintf(buf, n, "nan");
    else if (isinf(v)) snprintf(buf, n, v < 0 ? "-inf" : "inf");
    else {
        snprintf(buf, n, "%.17g", v);
        if (as_float && !strpbrk(buf, ".e")) {
            size_t l = strlen(buf);
            if (l + 2 < n) memcpy(buf + l, ".0", 3);
        }
    }
}
