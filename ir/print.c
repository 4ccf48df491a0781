/* print.c -- the text form (jn_ir_print, grammar in jn_ir.h) and the
 * one-sentence guard explanations (jn_ir_guard_explain).
 *
 * The printer is deterministic and writes exactly what parse.c reads back:
 * every binary expression in parentheses, "((T-1)-i0)"; floats as %.17g
 * (inf, -inf, nan spelled out); scalar input values in a form that tells
 * their Python type (3 int, 3.0 float, true bool); every attribute in
 * schema order; strings quoted with \" \\ \n \t \xHH escapes.  Loops are
 * printed where their first node is, carries first and collects last.
 * It never indexes out of bounds, so an invalid graph can be printed for
 * debugging (loops that do not nest are listed as comments at the end).
 */
#include <math.h>
#include <stdio.h>

#include "ir_priv.h"

typedef struct {
    const jn_ir_module *m;
    const jn_ir_graph *g;
    FILE *f;
    char *printed;   /* per loop */
} pctx;

static void put_str(FILE *f, const char *s) {
    fputc('"', f);
    for (const unsigned char *p = (const unsigned char *)(s ? s : ""); *p; p++) {
        if (*p == '"' || *p == '\\') fprintf(f, "\\%c", *p);
        else if (*p == '\n') fputs("\\n", f);
        else if (*p == '\t') fputs("\\t", f);
        else if (*p < 0x20 || *p == 0x7f) fprintf(f, "\\x%02x", *p);
        else fputc(*p, f);
    }
    fputc('"', f);
}

static void put_dim(FILE *f, const jn_ir_graph *g, jn_ir_dim d, int depth) {
    static const char *const opstr[] = {"?", "+", "-", "*", "//"};
    int32_t i = jn_ir__eidx(d);
    if (!jn_ir_is_expr(d)) fprintf(f, "%lld", (long long)d);
    else if (i < 0 || i >= g->nexprs || depth > JN_IR_MAX_EXPR_DEPTH) fputs("<bad expr>", f);
    else if (g->exprs[i].kind == JN_IR_E_SYM) {
        int32_t s = g->exprs[i].sym;
        fputs(s >= 0 && s < g->nsyms && g->syms[s].name ? g->syms[s].name : "<bad symbol>", f);
    } else if ((unsigned)g->exprs[i].kind <= JN_IR_E_FLOORDIV) {
        fputc('(', f);
        put_dim(f, g, g->exprs[i].a, depth + 1);
        fputs(opstr[g->exprs[i].kind], f);
        put_dim(f, g, g->exprs[i].b, depth + 1);
        fputc(')', f);
    } else fputs("<bad expr>", f);
}

static void put_double(FILE *f, double v, int as_float) {
    char b[64];
    jn_ir__fmt_double(v, as_float, b, sizeof b);
    fputs(b, f);
}

static void put_type(FILE *f, const jn_ir_graph *g, int32_t v) {
    if (v < 0 || v >= g->nvalues) {
        fputs("?[]", f);
        return;
    }
    const jn_ir_value *x = &g->values[v];
    fprintf(f, "%s[", jn_ir_dtype_short(x->dtype));
    for (int d = 0; d < x->ndim && d < JN_MAX_DIMS; d++) {
        if (d) fputs(", ", f);
        put_dim(f, g, x->shape[d], 0);
    }
    fputc(']', f);
    if (x->device) fprintf(f, " %s", x->device == JN_CUDA ? "cuda" : "?");
}

static void put_site(FILE *f, int64_t site) {
    if (site) fprintf(f, " @%lld", (long long)site);
}

static void indent(FILE *f, int depth) {
    for (int i = 0; i <= depth; i++) fputs("  ", f);
}

static void put_node(pctx *p, int32_t n, int depth) {
    const jn_ir_graph *g = p->g;
    const jn_ir_node *x = &g->nodes[n];
    const jn_opinfo *info = jn_op_info(x->op);
    FILE *f = p->f;
    indent(f, depth);
    for (int k = 0; k < x->nout && k < JN_MAX_OUTS; k++) fprintf(f, "%s%%%d", k ? ", " : "", x->out[k]);
    fprintf(f, " = %s(", info ? info->name : "?");
    for (int k = 0; k < x->nin && x->in; k++) fprintf(f, "%s%%%d", k ? ", " : "", x->in[k]);
    fputc(')', f);
    for (int k = 0; info && k < info->nattrs; k++) {
        const jn_attr *a = &x->attrs.a[k];
        fprintf(f, " %s=", info->attr_name[k]);
        if (x->attr_input[k] != -1) {
            fprintf(f, "%%%d", x->attr_input[k]);
            continue;
        }
        switch (info->attr_kind[k]) {
        case JN_A_INT: put_dim(f, g, a->i, 0); break;
        case JN_A_FLOAT: put_double(f, a->f, 0); break;
        case JN_A_BOOL: fputs(a->i ? "true" : "false", f); break;
        case JN_A_DTYPE: fputs(a->i == -1 ? "none" : jn_ir_dtype_short((jn_dtype)a->i), f); break;
        case JN_A_INTS:
            fputc('[', f);
            for (int j = 0; j < a->l.n && j < JN_MAX_DIMS; j++) {
                if (j) fputs(", ", f);
                put_dim(f, g, a->l.v[j], 0);
            }
            fputc(']', f);
            break;
        default: fputs("?", f);
        }
    }
    if (x->kernel != -1) fprintf(f, " kernel=K%d", x->kernel);
    fputs(" :", f);
    for (int k = 0; k < x->nout && k < JN_MAX_OUTS; k++) {
        fputs(k ? ", " : " ", f);
        put_type(f, g, x->out[k]);
        int32_t v = x->out[k];
        if (v < 0 || v >= g->nvalues) continue;
        if (g->values[v].mem != -1) {
            fputs(" mem=", f);
            put_dim(f, g, g->values[v].mem, 0);
        }
        if (g->values[v].wmem != -1) {
            fputs(" wmem=", f);
            put_dim(f, g, g->values[v].wmem, 0);
        }
        if (g->values[v].alias != -1) fprintf(f, " alias=%%%d", g->values[v].alias);
    }
    put_site(f, x->site);
    const jn_ir_site *s = x->site ? jn_ir_site_get(p->m, x->site) : NULL;
    if (s) { /* a comment runs to the end of the line: no control characters in it */
        fputs("  # ", f);
        for (const char *c = s->file ? s->file : "?"; *c; c++) fputc((unsigned char)*c < 0x20 ? '?' : *c, f);
        fprintf(f, ":%d", s->line);
    }
    fputc('\n', f);
}

/* Nodes from..to-1 of scope `scope`; a loop of that scope starting at a
 * node is printed there with its body. */
static void walk(pctx *p, int32_t scope, int32_t from, int32_t to, int depth) {
    const jn_ir_graph *g = p->g;
    FILE *f = p->f;
    for (int32_t n = from; n < to;) {
        int32_t l = -1;
        for (int32_t k = 0; k < g->nloops && depth < JN_IR_MAX_LOOP_DEPTH; k++) {
            const jn_ir_loop *L = &g->loops[k];
            if (!p->printed[k] && L->parent == scope && L->first == n && L->count >= 1 && L->count <= to - n) {
                l = k;
                break;
            }
        }
        if (l < 0) {
            put_node(p, n++, depth);
            continue;
        }
        const jn_ir_loop *L = &g->loops[l];
        p->printed[l] = 1;
        indent(f, depth);
        fprintf(f, "loop L%d trip=", l);
        put_dim(f, g, L->trip, 0);
        fprintf(f, " ivar=%s {\n", L->ivar >= 0 && L->ivar < g->nsyms && g->syms[L->ivar].name ? g->syms[L->ivar].name : "?");
        for (int32_t k = 0; k < L->ncarry; k++) {
            indent(f, depth + 1);
            fprintf(f, "carry %%%d = %%%d -> %%%d => %%%d\n", L->carry[k].param, L->carry[k].init, L->carry[k].next,
                    L->carry[k].out);
        }
        walk(p, l, n, n + L->count, depth + 1);
        for (int32_t k = 0; k < L->ncollect; k++) {
            indent(f, depth + 1);
            fprintf(f, "collect %%%d => %%%d\n", L->collect[k].body, L->collect[k].out);
        }
        indent(f, depth);
        fputs("}\n", f);
        n += L->count;
    }
}

static void put_guard(FILE *f, const jn_ir_graph *g, const jn_ir_guard *q) {
    fprintf(f, "  guard %s ", (unsigned)q->kind <= JN_IR_G_TRIP ? jn_ir__guard_kinds[q->kind] : "?");
    switch (q->kind) {
    case JN_IR_G_SYM:
        fprintf(f, "%s in %lld..%lld", q->sym >= 0 && q->sym < g->nsyms && g->syms[q->sym].name ? g->syms[q->sym].name : "?",
                (long long)q->lo, (long long)q->hi);
        break;
    case JN_IR_G_DIM: fprintf(f, "%%%d.%d == %lld", q->value, q->dim, (long long)q->lo); break;
    case JN_IR_G_DTYPE: fprintf(f, "%%%d == %s", q->value, jn_ir_dtype_short((jn_dtype)q->lo)); break;
    case JN_IR_G_DEVICE: fprintf(f, "%%%d == %s", q->value, q->lo == 0 ? "cpu" : q->lo == 1 ? "cuda" : "?"); break;
    case JN_IR_G_SCALAR:
        fprintf(f, "%%%d == ", q->value);
        put_double(f, q->fval, 0);
        break;
    case JN_IR_G_PYTYPE: fprintf(f, "%%%d == %s", q->value, q->lo >= 0 && q->lo <= 3 ? jn_ir__pytypes[q->lo] : "?"); break;
    case JN_IR_G_BIND: fprintf(f, "%%%d == %lld", q->value, (long long)q->lo); break;
    case JN_IR_G_TRIP: fprintf(f, "L%d in %lld..%lld", q->loop, (long long)q->lo, (long long)q->hi); break;
    default: fputs("?", f);
    }
    fputs(q->cls == JN_IR_GC_SEEN ? " seen" : q->cls == JN_IR_GC_NEED ? " need" : " ?", f);
    put_site(f, q->site);
    if (q->note) {
        fputc(' ', f);
        put_str(f, q->note);
    }
    fputc('\n', f);
}

jn_status jn_ir_print_graph(const jn_ir_module *m, const jn_ir_graph *g, FILE *f) {
    fprintf(f, "graph %s group=%d variant=%d parent=%d diverge=%d support=%lld steps=%lld..%lld entry=",
            g->name ? g->name : "?", g->group, g->variant, g->parent, g->diverge, (long long)g->support,
            (long long)g->step_lo, (long long)g->step_hi);
    put_str(f, g->entry);
    fputs(" exit=", f);
    put_str(f, g->exit);
    if (g->decided) fprintf(f, " decided=@%lld", (long long)g->decided);
    fputs(" {\n", f);
    for (int32_t s = 0; s < g->nsyms; s++) {
        const jn_ir_sym *y = &g->syms[s];
        fprintf(f, "  sym %s %s %lld..%lld", y->name ? y->name : "?",
                (unsigned)y->kind <= JN_IR_SYM_RNG ? jn_ir__sym_kinds[y->kind] : "?", (long long)y->lo, (long long)y->hi);
        put_site(f, y->site);
        fputc('\n', f);
    }
    for (int32_t i = 0; i < g->ninputs; i++) {
        const jn_ir_input *in = &g->inputs[i];
        fprintf(f, "  in %%%d %s ", in->value, (unsigned)in->kind <= JN_IR_IN_RNG ? jn_ir__input_kinds[in->kind] : "?");
        put_type(f, g, in->value);
        if (in->kind == JN_IR_IN_SCALAR || in->kind == JN_IR_IN_CONST) {
            fputs(" = ", f);
            if (in->pytype == 3) fputs(in->scalar != 0 ? "true" : "false", f);
            else if (in->pytype == 1 && isfinite(in->scalar)) fprintf(f, "%.0f", in->scalar);
            else put_double(f, in->scalar, 1);
        }
        if (in->kind == JN_IR_IN_STATE && in->bind) fprintf(f, " bind=%lld", (long long)in->bind);
        put_site(f, in->site);
        fputc('\n', f);
    }
    pctx p = {m, g, f, calloc((size_t)g->nloops + 1, 1)};
    if (!p.printed) return jn_error(JN_ERR_NOMEM, "out of memory printing graph %s", g->name ? g->name : "?");
    walk(&p, -1, 0, g->nnodes, 0);
    for (int32_t l = 0; l < g->nloops; l++)
        if (!p.printed[l]) fprintf(f, "  # loop L%d (nodes %d, count %d, parent %d) does not nest and is not shown\n", l,
                                   g->loops[l].first, g->loops[l].count, g->loops[l].parent);
    free(p.printed);
    for (int32_t i = 0; i < g->noutputs; i++) {
        const jn_ir_output *o = &g->outputs[i];
        if (o->kind == JN_IR_OUT_STATE)
            fprintf(f, "  out %%%d state=%%%d\n", o->value, o->state >= 0 && o->state < g->ninputs ? g->inputs[o->state].value : -1);
        else fprintf(f, "  out %%%d keep\n", o->value);
    }
    for (int32_t i = 0; i < g->nguards; i++) put_guard(f, g, &g->guards[i]);
    for (int32_t i = 0; i < g->nkernels; i++) {
        const jn_ir_kernel *k = &g->kernels[i];
        int32_t r = k->root;
        fprintf(f, "  kernel K%d %s root=%%%d", i, (unsigned)k->kind <= JN_IR_K_LIB ? jn_ir__kernel_kinds[k->kind] : "?",
                r >= 0 && r < g->nnodes ? g->nodes[r].out[0] : -1);
        if (k->impl != JN_IR_IMPL_NONE)
            fprintf(f, " impl=%s", (unsigned)k->impl <= JN_IR_IMPL_GEMM ? jn_ir__impls[k->impl] : "?");
        fputc('\n', f);
    }
    if (g->arena != -1) {
        fputs("  arena ", f);
        put_dim(f, g, g->arena, 0);
        if (g->warena != -1) {
            fputs(" wide ", f);
            put_dim(f, g, g->warena, 0);
        }
        fputc('\n', f);
    }
    fputs("}\n", f);
    return ferror(f) ? jn_error(JN_ERR_IO, "error writing graph %s", g->name ? g->name : "?") : JN_OK;
}

jn_status jn_ir_print(const jn_ir_module *m, FILE *f) {
    fprintf(f, "module optable=%016llx graphs=%d\n", (unsigned long long)m->optable_hash, m->ngraphs);
    for (int32_t i = 0; i < m->nsites; i++) {
        const jn_ir_site *s = &m->sites[i];
        fprintf(f, "site %lld ", (long long)s->id);
        put_str(f, s->file);
        fprintf(f, ":%d ", s->line);
        put_str(f, s->func);
        fputc('\n', f);
    }
    for (int32_t i = 0; i < m->ngraphs; i++) {
        fputc('\n', f);
        jn_status st = jn_ir_print_graph(m, m->graphs[i], f);
        if (st != JN_OK) return st;
    }
    return ferror(f) ? jn_error(JN_ERR_IO, "error writing an IR module") : JN_OK;
}

/* ------------------------------------------------------ explanations */
/* "train.py:42 in main", or "" when the site is unknown. */
static void site_put(const jn_ir_module *m, int64_t site, const char *prefix, char *buf, size_t n, size_t *at) {
    const jn_ir_site *s = site ? jn_ir_site_get(m, site) : NULL;
    if (!s) return;
    jn_ir__put(buf, n, at, "%s%s:%d", prefix, s->file ? s->file : "?", s->line);
    if (s->func && *s->func) jn_ir__put(buf, n, at, " in %s", s->func);
}

/* "host input %1" / "output %7 of mm" / "%5"; returns the value's site. */
static int64_t value_put(const jn_ir_graph *g, int32_t v, char *buf, size_t n, size_t *at) {
    if (v < 0 || v >= g->nvalues) {
        jn_ir__put(buf, n, at, "%%%d", v);
        return 0;
    }
    const jn_ir_value *x = &g->values[v];
    if (x->kind == JN_IR_V_INPUT && x->def >= 0 && x->def < g->ninputs && (unsigned)g->inputs[x->def].kind <= JN_IR_IN_RNG) {
        jn_ir__put(buf, n, at, "%s input %%%d", jn_ir__input_kinds[g->inputs[x->def].kind], v);
        return g->inputs[x->def].site;
    }
    if (x->kind == JN_IR_V_NODE && x->def >= 0 && x->def < g->nnodes) {
        const jn_opinfo *info = jn_op_info(g->nodes[x->def].op);
        jn_ir__put(buf, n, at, "output %%%d of %s", v, info ? info->name : "?");
        return g->nodes[x->def].site;
    }
    jn_ir__put(buf, n, at, "%%%d", v);
    return 0;
}

static void range_put(int64_t lo, int64_t hi, char *buf, size_t n, size_t *at) {
    if (lo == hi) jn_ir__put(buf, n, at, "%lld", (long long)lo);
    else jn_ir__put(buf, n, at, "%lld..%lld", (long long)lo, (long long)hi);
}

static const char *dtype_of(double v) {
    return v >= 0 && v < JN_NDTYPES ? jn_ir_dtype_short((jn_dtype)(int)v) : "an unknown dtype";
}

static const char *pytype_of(double v) {
    static const char *const names[4] = {"a tensor", "a Python int", "a Python float", "a Python bool"};
    return v >= 0 && v <= 3 ? names[(int)v] : "an unknown type";
}

const char *jn_ir_guard_explain(const jn_ir_module *m, const jn_ir_graph *g, int32_t k, const double *seen, char *buf,
                                size_t n) {
    size_t at = 0;
    if (!n) return buf;
    buf[0] = 0;
    if (!g || k < 0 || k >= g->nguards) {
        jn_ir__put(buf, n, &at, "graph %s has no guard %d", g && g->name ? g->name : "?", k);
        return buf;
    }
    const jn_ir_guard *q = &g->guards[k];
    char num[64];
    int64_t site = q->site;
    switch (q->kind) {
    case JN_IR_G_SYM: {
        const jn_ir_sym *y = q->sym >= 0 && q->sym < g->nsyms ? &g->syms[q->sym] : NULL;
        jn_ir__put(buf, n, &at, "symbol %s", y && y->name ? y->name : "?");
        int open = 0;
        jn_ir_dim r = y ? jn_ir__sym_ref(g, q->sym) : 0;
        for (int32_t i = 0; r && i < g->ninputs && !open; i++) {
            int32_t v = g->inputs[i].value;
            if (v < 0 || v >= g->nvalues) continue;
            for (int d = 0; d < g->values[v].ndim && d < JN_MAX_DIMS && !open; d++)
                if (g->values[v].shape[d] == r) {
                    jn_ir__put(buf, n, &at, " (dim %d of ", d);
                    value_put(g, v, buf, n, &at);
                    open = 1;
                }
        }
        if (y && y->site && jn_ir_site_get(m, y->site)) {
            site_put(m, y->site, open ? ", first seen at " : " (first seen at ", buf, n, &at);
            open = 1;
        }
        if (open) jn_ir__put(buf, n, &at, ")");
        if (seen) jn_ir__put(buf, n, &at, " was %.0f; recorded ", *seen);
        else jn_ir__put(buf, n, &at, q->cls == JN_IR_GC_SEEN ? " took " : " must be in the recorded range ");
        range_put(q->lo, q->hi, buf, n, &at);
        if (!seen && q->cls == JN_IR_GC_SEEN) jn_ir__put(buf, n, &at, " in the recording (no limit)");
        site = 0;
        break;
    }
    case JN_IR_G_DIM:
        jn_ir__put(buf, n, &at, "dim %d of ", q->dim);
        if (!site) site = value_put(g, q->value, buf, n, &at);
        else value_put(g, q->value, buf, n, &at);
        site_put(m, site, " (at ", buf, n, &at);
        if (site && jn_ir_site_get(m, site)) jn_ir__put(buf, n, &at, ")");
        if (seen) jn_ir__put(buf, n, &at, " was %.0f; recorded %lld", *seen, (long long)q->lo);
        else jn_ir__put(buf, n, &at, " must be %lld as recorded", (long long)q->lo);
        site = 0;
        break;
    case JN_IR_G_DTYPE:
    case JN_IR_G_DEVICE: {
        int dt = q->kind == JN_IR_G_DTYPE;
        jn_ir__put(buf, n, &at, "%s of ", dt ? "dtype" : "device");
        int64_t vs = value_put(g, q->value, buf, n, &at);
        if (!site) site = vs;
        const char *rec = dt ? dtype_of((double)q->lo) : q->lo == 1 ? "cuda" : "cpu";
        if (seen) jn_ir__put(buf, n, &at, " was %s; recorded %s", dt ? dtype_of(*seen) : *seen == 1 ? "cuda" : "cpu", rec);
        else jn_ir__put(buf, n, &at, " must be %s as recorded", rec);
        break;
    }
    case JN_IR_G_SCALAR: {
        const jn_ir_value *x = q->value >= 0 && q->value < g->nvalues ? &g->values[q->value] : NULL;
        const jn_ir_input *in = x && x->kind == JN_IR_V_INPUT && x->def >= 0 && x->def < g->ninputs ? &g->inputs[x->def] : NULL;
        jn_ir__put(buf, n, &at, "scalar %%%d (%s", q->value, in ? pytype_of(in->pytype) : "a Python number");
        if (!site && in) site = in->site;
        site_put(m, site, " at ", buf, n, &at);
        jn_ir__put(buf, n, &at, ")");
        if (seen) {
            jn_ir__fmt_double(*seen, 0, num, sizeof num);
            jn_ir__put(buf, n, &at, " was %s; recorded ", num);
        } else jn_ir__put(buf, n, &at, " must be ");
        jn_ir__fmt_double(q->fval, 0, num, sizeof num);
        jn_ir__put(buf, n, &at, "%s%s", num, seen ? "" : " as recorded");
        site = 0;
        break;
    }
    case JN_IR_G_PYTYPE: {
        jn_ir__put(buf, n, &at, "argument ");
        int64_t vs = value_put(g, q->value, buf, n, &at);
        if (!site) site = vs;
        site_put(m, site, " (at ", buf, n, &at);
        if (site && jn_ir_site_get(m, site)) jn_ir__put(buf, n, &at, ")");
        if (seen) jn_ir__put(buf, n, &at, " was %s; recorded %s", pytype_of(*seen), pytype_of((double)q->lo));
        else jn_ir__put(buf, n, &at, " must be %s as recorded", pytype_of((double)q->lo));
        site = 0;
        break;
    }
    case JN_IR_G_BIND:
        if (seen) jn_ir__put(buf, n, &at, "state %%%d was tensor id %.0f, aliased otherwise than recorded (as id %lld)",
                             q->value, *seen, (long long)q->lo);
        else jn_ir__put(buf, n, &at, "state %%%d must alias no other state, as recorded (as id %lld)", q->value,
                        (long long)q->lo);
        if (!site && q->value >= 0 && q->value < g->nvalues && g->values[q->value].kind == JN_IR_V_INPUT &&
            g->values[q->value].def >= 0 && g->values[q->value].def < g->ninputs)
            site = g->inputs[g->values[q->value].def].site;
        site_put(m, site, "; first used at ", buf, n, &at);
        site = 0;
        break;
    case JN_IR_G_TRIP:
        jn_ir__put(buf, n, &at, "trip count of loop L%d", q->loop);
        if (!site && q->loop >= 0 && q->loop < g->nloops) {
            const jn_ir_loop *L = &g->loops[q->loop];
            if (L->first >= 0 && L->first < g->nnodes) site = g->nodes[L->first].site;
        }
        site_put(m, site, " (at ", buf, n, &at);
        if (site && jn_ir_site_get(m, site)) jn_ir__put(buf, n, &at, ")");
        if (seen) jn_ir__put(buf, n, &at, " was %.0f; recorded ", *seen);
        else jn_ir__put(buf, n, &at, q->cls == JN_IR_GC_SEEN ? " took " : " must be in the recorded range ");
        range_put(q->lo, q->hi, buf, n, &at);
        if (!seen && q->cls == JN_IR_GC_SEEN) jn_ir__put(buf, n, &at, " in the recording (no limit)");
        site = 0;
        break;
    default: jn_ir__put(buf, n, &at, "guard %d has unknown kind %d", k, (int)q->kind); site = 0;
    }
    if (site && jn_ir_site_get(m, site)) site_put(m, site, " (at ", buf, n, &at), jn_ir__put(buf, n, &at, ")");
    if (q->note && *q->note) jn_ir__put(buf, n, &at, " (%s)", q->note);
    return buf;
}
