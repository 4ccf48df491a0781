/* serial.c -- the compact binary form (jn_ir_serialize / jn_ir_deserialize).
 *
 *   "JNIR"  version (varint)  op-table hash (8 bytes LE)  payload  checksum
 *
 * The checksum is FNV-1a 64 (8 bytes LE) over every byte before it.  The
 * payload is varint / zigzag coded: the op names the module uses (nodes
 * refer to this table, so a blob never depends on enum numbering), the
 * site table, then per graph its fields and tables in declaration order.
 * A dim is one varint: even = a small constant (zigzag << 1), odd with
 * low bits 01 = expression index << 2, 3 = a large constant follows.
 * Node attributes carry their kind so a schema change is caught.
 *
 * The reader bounds-checks every field (counts against the bytes left, so
 * no allocation exceeds the blob's size by more than a constant), rebuilds
 * expressions through jn_ir_dim_op (remapping indices), and verifies the
 * result.  A different op-table hash is NOT refused here (the caller reads
 * m->optable_hash and decides); an op name this build lacks is.
 */
#include <stdio.h>

#include "ir_priv.h"

static const char MAGIC[4] = {'J', 'N', 'I', 'R'};

/* -------------------------------------------------------------- writer */
typedef struct {
    uint8_t *b;
    size_t n, cap;
    int oom;
} W;

static void wbytes(W *w, const void *p, size_t n) {
    if (w->oom) return;
    if (w->n + n > w->cap) {
        size_t nc = w->cap ? w->cap * 2 : 1024;
        while (nc < w->n + n) nc *= 2;
        uint8_t *b = realloc(w->b, nc);
        if (!b) {
            w->oom = 1;
            return;
        }
        w->b = b;
        w->cap = nc;
    }
    memcpy(w->b + w->n, p, n);
    w->n += n;
}

static void wvar(W *w, uint64_t v) {
    uint8_t b[10];
    int n = 0;
    do {
        b[n] = (uint8_t)(v & 0x7f);
        v >>= 7;
        if (v) b[n] |= 0x80;
        n++;
    } while (v);
    wbytes(w, b, (size_t)n);
}

static uint64_t zz(int64_t v) { return ((uint64_t)v << 1) ^ (uint64_t)(v >> 63); }
static int64_t unzz(uint64_t u) { return (int64_t)(u >> 1) ^ -(int64_t)(u & 1); }
static void wzz(W *w, int64_t v) { wvar(w, zz(v)); }

static void wu64(W *w, uint64_t v) {
    uint8_t b[8];
    for (int i = 0; i < 8; i++) b[i] = (uint8_t)(v >> (8 * i));
    wbytes(w, b, 8);
}

static void wf64(W *w, double d) {
    uint64_t u;
    memcpy(&u, &d, 8);
    wu64(w, u);
}

/* length + 1, 0 for NULL */
static void wstr(W *w, const char *s) {
    if (!s) {
        wvar(w, 0);
        return;
    }
    size_t n = strlen(s);
    wvar(w, n + 1);
    wbytes(w, s, n);
}

static void wdim(W *w, jn_ir_dim d) {
    int32_t i = jn_ir__eidx(d);
    if (jn_ir_is_expr(d) && i >= 0) wvar(w, (uint64_t)i << 2 | 1);
    else if (zz(d) < (1ull << 62)) wvar(w, zz(d) << 1);
    else {
        wvar(w, 3);
        wzz(w, d);
    }
}

static void write_graph(W *w, const jn_ir_graph *g, const int *opidx) {
    wstr(w, g->name);
    wzz(w, g->group);
    wzz(w, g->variant);
    wzz(w, g->parent);
    wzz(w, g->diverge);
    wzz(w, g->decided);
    wzz(w, g->support);
    wzz(w, g->step_lo);
    wzz(w, g->step_hi);
    wstr(w, g->entry);
    wstr(w, g->exit);
    wvar(w, (uint64_t)g->nsyms);
    for (int32_t i = 0; i < g->nsyms; i++) {
        const jn_ir_sym *s = &g->syms[i];
        wstr(w, s->name);
        wvar(w, (uint64_t)s->kind);
        wzz(w, s->lo);
        wzz(w, s->hi);
        wzz(w, s->site);
    }
    wvar(w, (uint64_t)g->nexprs);
    for (int32_t i = 0; i < g->nexprs; i++) {
        const jn_ir_expr *e = &g->exprs[i];
        wvar(w, (uint64_t)e->kind);
        if (e->kind == JN_IR_E_SYM) wvar(w, (uint64_t)e->sym);
        else {
            wdim(w, e->a);
            wdim(w, e->b);
        }
    }
    wvar(w, (uint64_t)g->nvalues);
    for (int32_t i = 0; i < g->nvalues; i++) {
        const jn_ir_value *v = &g->values[i];
        wvar(w, (uint64_t)v->kind);
        wzz(w, v->def);
        wzz(w, v->idx);
        wvar(w, (uint64_t)v->dtype);
        wvar(w, v->device);
        wvar(w, v->ndim);
        for (int d = 0; d < v->ndim; d++) wdim(w, v->shape[d]);
        wdim(w, v->mem);
        wdim(w, v->wmem);
        wzz(w, v->alias);
    }
    wvar(w, (uint64_t)g->ninputs);
    for (int32_t i = 0; i < g->ninputs; i++) {
        const jn_ir_input *in = &g->inputs[i];
        wvar(w, (uint64_t)in->kind);
        wzz(w, in->value);
        wf64(w, in->scalar);
        wvar(w, in->pytype);
        wzz(w, in->bind);
        wzz(w, in->site);
    }
    wvar(w, (uint64_t)g->nnodes);
    for (int32_t i = 0; i < g->nnodes; i++) {
        const jn_ir_node *x = &g->nodes[i];
        const jn_opinfo *info = jn_op_info(x->op);
        wvar(w, (uint64_t)opidx[x->op]);
        wvar(w, x->nin);
        for (int k = 0; k < x->nin; k++) wzz(w, x->in[k]);
        wvar(w, x->nout);
        for (int k = 0; k < x->nout; k++) wzz(w, x->out[k]);
        wvar(w, (uint64_t)info->nattrs);
        for (int k = 0; k < info->nattrs; k++) {
            const jn_attr *a = &x->attrs.a[k];
            uint8_t kind = (uint8_t)info->attr_kind[k];
            wbytes(w, &kind, 1);
            if (kind == JN_A_FLOAT) wf64(w, a->f);
            else if (kind == JN_A_INTS) {
                wvar(w, (uint64_t)a->l.n);
                for (int j = 0; j < a->l.n; j++) wdim(w, a->l.v[j]);
            } else wdim(w, a->i);
            wzz(w, x->attr_input[k]);
        }
        wzz(w, x->loop);
        wzz(w, x->site);
        wzz(w, x->kernel);
    }
    wvar(w, (uint64_t)g->nloops);
    for (int32_t i = 0; i < g->nloops; i++) {
        const jn_ir_loop *l = &g->loops[i];
        wzz(w, l->parent);
        wzz(w, l->first);
        wzz(w, l->count);
        wdim(w, l->trip);
        wzz(w, l->ivar);
        wvar(w, (uint64_t)l->ncarry);
        for (int32_t k = 0; k < l->ncarry; k++) {
            wzz(w, l->carry[k].param);
            wzz(w, l->carry[k].init);
            wzz(w, l->carry[k].next);
            wzz(w, l->carry[k].out);
        }
        wvar(w, (uint64_t)l->ncollect);
        for (int32_t k = 0; k < l->ncollect; k++) {
            wzz(w, l->collect[k].body);
            wzz(w, l->collect[k].out);
        }
    }
    wvar(w, (uint64_t)g->noutputs);
    for (int32_t i = 0; i < g->noutputs; i++) {
        wvar(w, (uint64_t)g->outputs[i].kind);
        wzz(w, g->outputs[i].value);
        wzz(w, g->outputs[i].state);
    }
    wvar(w, (uint64_t)g->nguards);
    for (int32_t i = 0; i < g->nguards; i++) {
        const jn_ir_guard *q = &g->guards[i];
        wvar(w, (uint64_t)q->kind);
        wvar(w, (uint64_t)q->cls);
        wzz(w, q->value);
        wzz(w, q->sym);
        wzz(w, q->loop);
        wzz(w, q->dim);
        wzz(w, q->lo);
        wzz(w, q->hi);
        wf64(w, q->fval);
        wzz(w, q->site);
        wstr(w, q->note);
    }
    wvar(w, (uint64_t)g->nkernels);
    for (int32_t i = 0; i < g->nkernels; i++) {
        wvar(w, (uint64_t)g->kernels[i].kind);
        wzz(w, g->kernels[i].root);
        wvar(w, (uint64_t)g->kernels[i].impl);
    }
    wdim(w, g->arena);
    wdim(w, g->warena);
}

jn_status jn_ir_serialize(const jn_ir_module *m, void **data, size_t *len) {
    *data = NULL;
    *len = 0;
    jn_status st = jn_ir_verify_module(m); /* the writer relies on valid indices */
    if (st != JN_OK) return st;
    int opidx[JN_NOPS];
    int nops = 0;
    jn_op used[JN_NOPS];
    for (int i = 0; i < JN_NOPS; i++) opidx[i] = -1;
    for (int32_t i = 0; i < m->ngraphs; i++)
        for (int32_t n = 0; n < m->graphs[i]->nnodes; n++) {
            jn_op op = m->graphs[i]->nodes[n].op;
            if (opidx[op] < 0) {
                opidx[op] = nops;
                used[nops++] = op;
            }
        }
    W w = {0};
    wbytes(&w, MAGIC, 4);
    wvar(&w, JN_IR_FORMAT_VERSION);
    wu64(&w, m->optable_hash);
    wvar(&w, (uint64_t)nops);
    for (int i = 0; i < nops; i++) wstr(&w, jn_op_info(used[i])->name);
    wvar(&w, (uint64_t)m->nsites);
    for (int32_t i = 0; i < m->nsites; i++) {
        wzz(&w, m->sites[i].id);
        wstr(&w, m->sites[i].file);
        wzz(&w, m->sites[i].line);
        wstr(&w, m->sites[i].func);
    }
    wvar(&w, (uint64_t)m->ngraphs);
    for (int32_t i = 0; i < m->ngraphs; i++) write_graph(&w, m->graphs[i], opidx);
    wu64(&w, w.oom ? 0 : jn_ir__fnv(w.b, w.n, JN_IR_FNV_INIT));
    if (w.oom) {
        free(w.b);
        return jn_error(JN_ERR_NOMEM, "out of memory serializing an IR module");
    }
    *data = w.b;
    *len = w.n;
    return JN_OK;
}

/* -------------------------------------------------------------- reader */
typedef struct {
    const uint8_t *base, *p, *end;
    const char *what;       /* the field being read, for the message */
    int bad;
    jn_ir_graph *g;         /* graph being read */
    jn_ir_dim *remap;       /* blob expression index -> dim in g */
    int32_t nremap;
} R;

static uint64_t rvar(R *r) {
    uint64_t v = 0;
    for (int s = 0; !r->bad; s += 7) {
        if (r->p >= r->end || s > 63) {
            r->bad = 1;
            break;
        }
        uint8_t b = *r->p++;
        if (s == 63 && b > 1) r->bad = 1;
        v |= (uint64_t)(b & 0x7f) << s;
        if (!(b & 0x80)) return v;
    }
    return 0;
}

static int64_t rzz(R *r) { return unzz(rvar(r)); }

static int32_t r32(R *r) {
    int64_t v = rzz(r);
    if (v < INT32_MIN || v > INT32_MAX) r->bad = 1;
    return r->bad ? 0 : (int32_t)v;
}

/* A small unsigned field (enum, count of a fixed array) up to max. */
static uint32_t rsmall(R *r, uint32_t max) {
    uint64_t v = rvar(r);
    if (v > max) r->bad = 1;
    return r->bad ? 0 : (uint32_t)v;
}

/* A table count: each entry takes at least min_bytes, so n is bounded by the bytes left. */
static int32_t rcount(R *r, size_t min_bytes) {
    uint64_t v = rvar(r);
    if (r->bad || v > (uint64_t)(r->end - r->p) / min_bytes || v > INT32_MAX / 2) {
        r->bad = 1;
        return 0;
    }
    return (int32_t)v;
}

static uint64_t ru64(R *r) {
    if (r->bad || r->end - r->p < 8) {
        r->bad = 1;
        return 0;
    }
    uint64_t v = 0;
    for (int i = 0; i < 8; i++) v |= (uint64_t)r->p[i] << (8 * i);
    r->p += 8;
    return v;
}

static double rf64(R *r) {
    uint64_t u = ru64(r);
    double d;
    memcpy(&d, &u, 8);
    return d;
}

/* Interned into pool; NULL for a NULL string (*ok 0 on error). */
static const char *rstr(R *r, struct jn_ir_pool *pool) {
    uint64_t n = rvar(r);
    if (r->bad || n == 0) return NULL;
    n--;
    if (n > (uint64_t)(r->end - r->p) || memchr(r->p, 0, n)) {
        r->bad = 1;
        return NULL;
    }
    const char *s = jn_ir__intern_n(pool, (const char *)r->p, n);
    if (!s) r->bad = 2;
    r->p += n;
    return s;
}

static jn_ir_dim rdim(R *r) {
    uint64_t u = rvar(r);
    if (r->bad) return 0;
    if (!(u & 1)) return unzz(u >> 1);
    if (u == 3) {
        int64_t d = rzz(r);
        if (jn_ir_is_expr(d)) r->bad = 1;
        return r->bad ? 0 : d;
    }
    if ((u & 3) != 1 || (u >> 2) >= (uint64_t)r->nremap) {
        r->bad = 1;
        return 0;
    }
    return r->remap[u >> 2];
}

#define RD(field, expr) (r->what = field, (expr))

static jn_status read_graph(R *r, jn_ir_module *m, const int *ops, int nops) {
    const char *name = RD("graph name", rstr(r, m->pool));
    if (r->bad) return JN_OK;
    jn_ir_graph *g = jn_ir_graph_add(m, name ? name : "");
    if (!g) return JN_ERR_NOMEM;
    r->g = g;
    r->what = "graph header";
    g->group = r32(r);
    g->variant = r32(r);
    g->parent = r32(r);
    g->diverge = r32(r);
    g->decided = rzz(r);
    g->support = rzz(r);
    g->step_lo = rzz(r);
    g->step_hi = rzz(r);
    g->entry = rstr(r, g->pool);
    g->exit = rstr(r, g->pool);
    int32_t n = RD("symbol count", rcount(r, 5));
    for (int32_t i = 0; i < n && !r->bad; i++) {
        r->what = "symbol";
        const char *s = rstr(r, g->pool);
        jn_ir_sym_kind k = (jn_ir_sym_kind)rsmall(r, 255);
        int64_t lo = rzz(r), hi = rzz(r), site = rzz(r);
        if (!r->bad && jn_ir_sym_add(g, s, k, lo, hi, site) < 0) return JN_ERR_NOMEM;
    }
    n = RD("expression count", rcount(r, 2));
    free(r->remap);
    r->remap = malloc(((size_t)n + 1) * sizeof *r->remap);
    r->nremap = 0;
    if (!r->remap) return jn_error(JN_ERR_NOMEM, "out of memory reading an IR blob");
    for (int32_t i = 0; i < n && !r->bad; i++) {
        r->what = "expression";
        uint32_t k = rsmall(r, JN_IR_E_FLOORDIV);
        jn_ir_dim d;
        if (r->bad) break;
        if (k == JN_IR_E_SYM) {
            uint32_t s = rsmall(r, (uint32_t)g->nsyms);
            if (r->bad || (int32_t)s >= g->nsyms) {
                r->bad = 1;
                break;
            }
            d = jn_ir_sym_dim(g, (int32_t)s);
        } else {
            jn_ir_dim a = rdim(r), b = rdim(r);
            if (r->bad) break;
            d = jn_ir_dim_op(g, (jn_ir_expr_kind)k, a, b);
        }
        if (d == JN_IR_DIM_ERROR) return JN_ERR_NOMEM;
        r->remap[r->nremap++] = d;
    }
    n = RD("value count", rcount(r, 7));
    if (!r->bad && n && jn_ir__values_upto(g, n - 1) < 0) return JN_ERR_NOMEM;
    for (int32_t i = 0; i < n && !r->bad; i++) {
        r->what = "value";
        jn_ir_value *v = &g->values[i];
        v->kind = (jn_ir_value_kind)rsmall(r, 255);
        v->def = r32(r);
        v->idx = r32(r);
        v->dtype = (jn_dtype)rsmall(r, 255);
        v->device = (uint8_t)rsmall(r, 255);
        v->ndim = (uint8_t)rsmall(r, JN_MAX_DIMS);
        for (int d = 0; d < v->ndim && !r->bad; d++) v->shape[d] = rdim(r);
        v->mem = rdim(r);
        v->wmem = rdim(r);
        v->alias = r32(r);
    }
    n = RD("input count", rcount(r, 13));
    if (!r->bad) JN_IR_RESERVE(g->inputs, g->capinputs, n, return JN_ERR_NOMEM);
    for (int32_t i = 0; i < n && !r->bad; i++) {
        r->what = "input";
        jn_ir_input *in = &g->inputs[i];
        in->kind = (jn_ir_input_kind)rsmall(r, 255);
        in->value = r32(r);
        in->scalar = rf64(r);
        in->pytype = (uint8_t)rsmall(r, 255);
        in->bind = rzz(r);
        in->site = rzz(r);
        g->ninputs = i + 1;
    }
    n = RD("node count", rcount(r, 6));
    if (!r->bad) JN_IR_RESERVE(g->nodes, g->capnodes, n, return JN_ERR_NOMEM);
    for (int32_t i = 0; i < n && !r->bad; i++) {
        r->what = "node";
        jn_ir_node *x = &g->nodes[i];
        memset(x, 0, sizeof *x);
        for (int k = 0; k < JN_MAX_ATTRS; k++) x->attr_input[k] = -1;
        for (int k = 0; k < JN_MAX_OUTS; k++) x->out[k] = -1;
        uint32_t oi = rsmall(r, (uint32_t)nops);
        if (r->bad || (int)oi >= nops) {
            r->bad = 1;
            break;
        }
        x->op = (jn_op)ops[oi];
        x->nin = (uint8_t)rsmall(r, JN_MAX_INS);
        if (!r->bad && x->nin && !(x->in = jn_ir__alloc(g->pool, (size_t)x->nin * sizeof(int32_t)))) return JN_ERR_NOMEM;
        for (int k = 0; k < x->nin && !r->bad; k++) x->in[k] = r32(r);
        x->nout = (uint8_t)rsmall(r, JN_MAX_OUTS);
        for (int k = 0; k < x->nout && !r->bad; k++) x->out[k] = r32(r);
        const jn_opinfo *info = jn_op_info(x->op);
        r->what = "node attributes";
        if ((int)rsmall(r, JN_MAX_ATTRS) != info->nattrs && !r->bad) {
            return jn_error(JN_ERR_VALUE, "IR blob: graph %s node %d (%s) has attributes that differ from this build's "
                            "op schema \"%s\"; re-run janus optimize", g->name, i, info->name, info->schema);
        }
        for (int k = 0; k < info->nattrs && !r->bad; k++) {
            jn_attr *a = &x->attrs.a[k];
            if (r->p >= r->end || *r->p++ != (uint8_t)info->attr_kind[k]) {
                r->bad = 1;
                break;
            }
            if (info->attr_kind[k] == JN_A_FLOAT) a->f = rf64(r);
            else if (info->attr_kind[k] == JN_A_INTS) {
                a->l.n = (int)rsmall(r, JN_MAX_DIMS);
                for (int j = 0; j < a->l.n && !r->bad; j++) a->l.v[j] = rdim(r);
            } else a->i = rdim(r);
            x->attr_input[k] = r32(r);
        }
        x->loop = r32(r);
        x->site = rzz(r);
        x->kernel = r32(r);
        g->nnodes = i + 1;
    }
    n = RD("loop count", rcount(r, 7));
    if (!r->bad && n && jn_ir__loops_upto(g, n - 1) < 0) return JN_ERR_NOMEM;
    for (int32_t i = 0; i < n && !r->bad; i++) {
        r->what = "loop";
        jn_ir_loop *l = &g->loops[i];
        l->parent = r32(r);
        l->first = r32(r);
        l->count = r32(r);
        l->trip = rdim(r);
        l->ivar = r32(r);
        int32_t nc = rcount(r, 4);
        if (r->bad || jn_ir__loop_reserve(l, nc, 0) < 0) return r->bad ? JN_OK : JN_ERR_NOMEM;
        for (int32_t k = 0; k < nc && !r->bad; k++, l->ncarry++) {
            jn_ir_carry *c = &l->carry[k]; /* one field per statement: argument order is unspecified */
            c->param = r32(r);
            c->init = r32(r);
            c->next = r32(r);
            c->out = r32(r);
        }
        nc = rcount(r, 2);
        if (r->bad || jn_ir__loop_reserve(l, 0, nc) < 0) return r->bad ? JN_OK : JN_ERR_NOMEM;
        for (int32_t k = 0; k < nc && !r->bad; k++, l->ncollect++) {
            l->collect[k].body = r32(r);
            l->collect[k].out = r32(r);
        }
    }
    n = RD("output count", rcount(r, 3));
    for (int32_t i = 0; i < n && !r->bad; i++) {
        r->what = "output";
        jn_ir_output_kind k = (jn_ir_output_kind)rsmall(r, 255);
        int32_t v = r32(r), s = r32(r);
        if (!r->bad && jn_ir_output_add(g, k, v, s) < 0) return JN_ERR_NOMEM;
        if (!r->bad) g->outputs[i].state = s; /* as written, even for keep */
    }
    n = RD("guard count", rcount(r, 18));
    for (int32_t i = 0; i < n && !r->bad; i++) {
        r->what = "guard";
        jn_ir_guard q;
        q.kind = (jn_ir_guard_kind)rsmall(r, 255);
        q.cls = (jn_ir_guard_class)rsmall(r, 255);
        q.value = r32(r);
        q.sym = r32(r);
        q.loop = r32(r);
        q.dim = r32(r);
        q.lo = rzz(r);
        q.hi = rzz(r);
        q.fval = rf64(r);
        q.site = rzz(r);
        q.note = rstr(r, g->pool);
        JN_IR_RESERVE(g->guards, g->capguards, g->nguards + 1, return JN_ERR_NOMEM);
        if (!r->bad) g->guards[g->nguards++] = q; /* as written: no normalization */
    }
    n = RD("kernel count", rcount(r, 3));
    for (int32_t i = 0; i < n && !r->bad; i++) {
        r->what = "kernel";
        jn_ir_kernel k;
        k.kind = (jn_ir_kernel_kind)rsmall(r, 255);
        k.root = r32(r);
        k.impl = (jn_ir_impl)rsmall(r, 255);
        JN_IR_RESERVE(g->kernels, g->capkernels, g->nkernels + 1, return JN_ERR_NOMEM);
        if (!r->bad) g->kernels[g->nkernels++] = k; /* as written; the verifier checks */
    }
    r->what = "arena";
    g->arena = rdim(r);
    g->warena = rdim(r);
    return JN_OK;
}

jn_status jn_ir_deserialize(const void *data, size_t len, jn_ir_module **out) {
    *out = NULL;
    const uint8_t *b = data;
    if (!data || len < 4 + 1 + 8 + 8)
        return jn_error(JN_ERR_VALUE, "IR blob is truncated (%zu bytes; a valid one has at least 21)", len);
    if (memcmp(b, MAGIC, 4)) return jn_error(JN_ERR_VALUE, "not a Janus IR blob (bad magic; expected \"JNIR\")");
    R rd = {.base = b, .p = b + 4, .end = b + len - 8, .what = "version"}, *r = &rd;
    uint64_t version = rvar(r);
    if (r->bad || version != JN_IR_FORMAT_VERSION)
        return jn_error(JN_ERR_VALUE, "IR blob has format version %llu; this build reads version %d (re-run janus optimize)",
                        (unsigned long long)version, JN_IR_FORMAT_VERSION);
    uint64_t want = 0;
    for (int i = 0; i < 8; i++) want |= (uint64_t)b[len - 8 + i] << (8 * i);
    if (jn_ir__fnv(b, len - 8, JN_IR_FNV_INIT) != want)
        return jn_error(JN_ERR_VALUE, "IR blob is corrupt or truncated (checksum mismatch over %zu bytes)", len);
    jn_ir_module *m = jn_ir_module_new();
    if (!m) return JN_ERR_NOMEM;
    jn_status st = JN_OK;
    m->optable_hash = RD("op-table hash", ru64(r));
    int32_t nops = RD("op table", rcount(r, 1));
    int *ops = malloc(((size_t)nops + 1) * sizeof *ops);
    if (!ops) st = jn_error(JN_ERR_NOMEM, "out of memory reading an IR blob");
    for (int32_t i = 0; i < nops && !r->bad && st == JN_OK; i++) {
        const char *name = rstr(r, m->pool);
        if (r->bad) break;
        ops[i] = name ? jn_op_lookup(name) : -1;
        if (ops[i] < 0)
            st = jn_error(JN_ERR_VALUE, "IR blob uses op '%s', which this build's op table lacks (re-run janus optimize "
                          "with this build)", name ? name : "(null)");
    }
    int32_t n = st == JN_OK ? RD("site count", rcount(r, 4)) : 0;
    for (int32_t i = 0; i < n && !r->bad && st == JN_OK; i++) {
        r->what = "site";
        int64_t id = rzz(r);
        const char *file = rstr(r, m->pool);
        int32_t line = r32(r);
        const char *func = rstr(r, m->pool);
        if (!r->bad) st = jn_ir_site_add(m, id, file, line, func);
    }
    n = st == JN_OK ? RD("graph count", rcount(r, 19)) : 0;
    for (int32_t i = 0; i < n && !r->bad && st == JN_OK; i++) st = read_graph(r, m, ops, nops);
    free(ops);
    free(rd.remap);
    if (st == JN_OK && r->bad == 2) st = JN_ERR_NOMEM;
    else if (st == JN_OK && r->bad)
        st = jn_error(JN_ERR_VALUE, "IR blob is corrupt: bad %s at byte %zu%s%s", r->what, (size_t)(r->p - b),
                      r->g ? " of graph " : "", r->g && r->g->name ? r->g->name : "");
    else if (st == JN_OK && r->p != r->end)
        st = jn_error(JN_ERR_VALUE, "IR blob is corrupt: %zu unexpected bytes after the last graph", (size_t)(r->end - r->p));
    if (st == JN_OK) st = jn_ir_verify_module(m);
    if (st != JN_OK) {
        jn_ir_module_free(m);
        return st;
    }
    *out = m;
    return JN_OK;
}
