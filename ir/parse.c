/* parse.c -- reads the text form (jn_ir_parse) back into a module.
 *
 * Line by line: the line's first word picks the rule, and a small cursor
 * over [p, e) reads its fields; nothing reads past the end of the line or
 * the text (which need not be NUL-terminated).  Values, loops and inputs
 * are placed at the indices the text names (%7, L2), so a printed graph
 * reads back with the same numbering; expressions are rebuilt through
 * jn_ir_dim_op, whose hash-consing and canonical order make print -> parse
 * -> print the identity.  Recursion is bounded (parenthesis depth), value
 * numbers are bounded by the size of the text, and the finished module goes
 * through jn_ir_verify_module: what comes back is verified or an error
 * naming the line and what was expected.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>

#include "ir_priv.h"

#define MAX_PAREN JN_IR_MAX_EXPR_DEPTH /* whatever verifies must read back */

typedef struct {
    const char *text, *tend;
    const char *next;        /* start of the next line */
    const char *p, *e;       /* cursor and end of the current line (comment stripped) */
    int line;
    jn_ir_module *m;
    jn_ir_graph *g;          /* graph being read, NULL at module level */
    int graph_line, module_line;
    int32_t vmax, lmax;      /* bounds for %N and L<k> derived from the text size */
    char *vdef, *ldef;       /* placed flags for values and loops of g */
    int32_t stack[JN_IR_MAX_LOOP_DEPTH];
    int nstack;
    char *scratch;           /* decoded strings */
    size_t capscratch;
} P;

static jn_status err(P *P, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static jn_status err(P *P, const char *fmt, ...) {
    char msg[400], got[24];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    size_t n = 0;
    const char *at = P->p;
    while (at < P->e && (*at == ' ' || *at == '\t')) at++;
    for (const char *q = at; q < P->e && n < 16; q++) got[n++] = *q >= 0x20 && *q < 0x7f ? *q : '?';
    got[n] = 0;
    if (strncmp(msg, "expected", 8)) return jn_error(JN_ERR_VALUE, "line %d: %s", P->line, msg);
    if (at < P->e)
        return jn_error(JN_ERR_VALUE, "line %d: %s (found '%s%s')", P->line, msg, got, P->e - at > 16 ? "..." : "");
    return jn_error(JN_ERR_VALUE, "line %d: %s (found the end of the line)", P->line, msg);
}

/* ------------------------------------------------------------- lexing */
static void ws(P *P) {
    while (P->p < P->e && (*P->p == ' ' || *P->p == '\t')) P->p++;
}

static int is_idc(char c, int first) {
    return c == '_' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (!first && c >= '0' && c <= '9');
}

static int accept(P *P, char c) {
    ws(P);
    if (P->p < P->e && *P->p == c) {
        P->p++;
        return 1;
    }
    return 0;
}

static int accept2(P *P, const char *s) {
    ws(P);
    if (P->e - P->p >= 2 && P->p[0] == s[0] && P->p[1] == s[1]) {
        P->p += 2;
        return 1;
    }
    return 0;
}

/* An identifier; *s and *n point into the text. */
static int ident(P *P, const char **s, size_t *n) {
    ws(P);
    if (P->p >= P->e || !is_idc(*P->p, 1)) return 0;
    *s = P->p;
    while (P->p < P->e && is_idc(*P->p, 0)) P->p++;
    *n = (size_t)(P->p - *s);
    return 1;
}

static int word(P *P, const char *w) {
    const char *save = P->p, *s;
    size_t n;
    if (ident(P, &s, &n) && n == strlen(w) && !strncmp(s, w, n)) return 1;
    P->p = save;
    return 0;
}

static int dtype_n(const char *s, size_t n) {
    char b[16] = {0};
    if (n < sizeof b) memcpy(b, s, n);
    return jn_ir_dtype_from_short(b);
}

/* One of the words names[0..n) (dtypes when names is NULL): its index, or
 * -1 with the cursor left before the word, so the message shows it. */
static int keyword(P *P, const char *const *names, int n) {
    const char *save = P->p, *s;
    size_t len;
    int k = ident(P, &s, &len) ? (names ? jn_ir__lookup(names, n, s, len) : dtype_n(s, len)) : -1;
    if (k < 0) P->p = save;
    return k;
}

static int integer(P *P, int64_t *out) {
    ws(P);
    const char *q = P->p;
    int neg = q < P->e && *q == '-';
    if (neg) q++;
    if (q >= P->e || *q < '0' || *q > '9') return 0;
    uint64_t v = 0;
    for (; q < P->e && *q >= '0' && *q <= '9'; q++) {
        if (v > (UINT64_MAX - 9) / 10) return 0;
        v = v * 10 + (uint64_t)(*q - '0');
    }
    if (v > (uint64_t)INT64_MAX + (uint64_t)neg) return 0;
    *out = neg ? (int64_t)(0 - v) : (int64_t)v;
    P->p = q;
    return 1;
}

static int int32f(P *P, int32_t *out) {
    int64_t v;
    if (!integer(P, &v) || v < INT32_MIN || v > INT32_MAX) return 0;
    *out = (int32_t)v;
    return 1;
}

/* key=  (the key must match) */
static int key(P *P, const char *k) {
    const char *save = P->p;
    if (word(P, k) && P->p < P->e && *P->p == '=') {
        P->p++;
        return 1;
    }
    P->p = save;
    return 0;
}

/* A floating-point number as the printer writes it (%.17g, inf, nan). */
static int number(P *P, double *out, int *is_int) {
    ws(P);
    char buf[512];
    size_t n = 0;
    const char *q = P->p;
    while (q < P->e && n < sizeof buf - 1 && (is_idc(*q, 0) || *q == '-' || *q == '+' || *q == '.')) buf[n++] = *q++;
    if (!n || n >= sizeof buf - 1) return 0;
    buf[n] = 0;
    char *end;
    errno = 0;
    double v = strtod(buf, &end);
    if (end != buf + n) return 0;
    int digits = 1;
    for (size_t i = buf[0] == '-'; i < n; i++) digits &= buf[i] >= '0' && buf[i] <= '9';
    if (is_int) *is_int = digits && n > (size_t)(buf[0] == '-');
    *out = v;
    P->p = q;
    return 1;
}

/* "..." with \" \\ \n \t \xHH; the result lives in P->scratch until the next call. */
static int string(P *P, const char **out) {
    ws(P);
    if (P->p >= P->e || *P->p != '"') return 0;
    size_t need = (size_t)(P->e - P->p) + 1;
    if (need > P->capscratch) {
        char *s = realloc(P->scratch, need);
        if (!s) return 0;
        P->scratch = s;
        P->capscratch = need;
    }
    size_t n = 0;
    const char *q = P->p + 1;
    for (;; q++) {
        if (q >= P->e) return 0;
        if (*q == '"') break;
        if (*q != '\\') {
            P->scratch[n++] = *q;
            continue;
        }
        if (++q >= P->e) return 0;
        if (*q == '"' || *q == '\\') P->scratch[n++] = *q;
        else if (*q == 'n') P->scratch[n++] = '\n';
        else if (*q == 't') P->scratch[n++] = '\t';
        else if (*q == 'x' && P->e - q >= 3) {
            int v = 0;
            for (int k = 1; k <= 2; k++) {
                char c = q[k];
                int d = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
                if (d < 0) return 0;
                v = v * 16 + d;
            }
            if (!v) return 0; /* strings are C strings */
            P->scratch[n++] = (char)v;
            q += 2;
        } else return 0;
    }
    P->scratch[n] = 0;
    P->p = q + 1;
    *out = P->scratch;
    return 1;
}

static int site_ref(P *P, int64_t *site) {
    *site = 0;
    if (!accept(P, '@')) return 1;
    return integer(P, site);
}

static int at_end(P *P) {
    ws(P);
    return P->p >= P->e;
}

/* -------------------------------------------------------------- dims */
static jn_status expr(P *P, jn_ir_dim *out, int depth);

static jn_status atom(P *P, jn_ir_dim *out, int depth) {
    const char *s;
    size_t n;
    if (integer(P, out)) {
        if (jn_ir_is_expr(*out)) return err(P, "integer %lld is out of range for a dim", (long long)*out);
        return JN_OK;
    }
    if (accept(P, '(')) {
        if (depth >= MAX_PAREN) return err(P, "expression nests deeper than %d parentheses", MAX_PAREN);
        jn_status st = expr(P, out, depth + 1);
        if (st != JN_OK) return st;
        return accept(P, ')') ? JN_OK : err(P, "expected ')' closing the expression");
    }
    if (!ident(P, &s, &n)) return err(P, "expected a dim: an integer, a symbol or a parenthesized expression");
    char name[128];
    if (n >= sizeof name) return err(P, "symbol name too long");
    memcpy(name, s, n);
    name[n] = 0;
    int32_t sym = jn_ir_sym_find(P->g, name);
    if (sym < 0) return err(P, "unknown symbol '%s' (declare it with a sym line first)", name);
    *out = jn_ir_sym_dim(P->g, sym);
    return *out == JN_IR_DIM_ERROR ? JN_ERR_NOMEM : JN_OK;
}

static jn_status term(P *P, jn_ir_dim *out, int depth) {
    jn_status st = atom(P, out, depth);
    for (;;) {
        if (st != JN_OK) return st;
        jn_ir_expr_kind k;
        if (accept2(P, "//")) k = JN_IR_E_FLOORDIV;
        else if (accept(P, '*')) k = JN_IR_E_MUL;
        else return JN_OK;
        jn_ir_dim b;
        if ((st = atom(P, &b, depth)) != JN_OK) return st;
        *out = jn_ir_dim_op(P->g, k, *out, b);
        if (*out == JN_IR_DIM_ERROR) return JN_ERR_NOMEM;
    }
}

static jn_status expr(P *P, jn_ir_dim *out, int depth) {
    jn_status st = term(P, out, depth);
    for (;;) {
        if (st != JN_OK) return st;
        jn_ir_expr_kind k;
        if (accept(P, '+')) k = JN_IR_E_ADD;
        else if (accept(P, '-')) k = JN_IR_E_SUB;
        else return JN_OK;
        jn_ir_dim b;
        if ((st = term(P, &b, depth)) != JN_OK) return st;
        *out = jn_ir_dim_op(P->g, k, *out, b);
        if (*out == JN_IR_DIM_ERROR) return JN_ERR_NOMEM;
    }
}

/* <dtype>[<dim>, ...] [cuda] into t. */
static jn_status type(P *P, jn_ir_value *t) {
    memset(t, 0, sizeof *t);
    t->mem = -1;
    t->wmem = -1;
    t->alias = -1;
    int dt = keyword(P, NULL, 0);
    if (dt < 0) return err(P, "expected a type such as f32[B, 784] (dtypes: f32 f64 f16 bf16 i64 i32 u8 bool)");
    t->dtype = (jn_dtype)dt;
    if (!accept(P, '[')) return err(P, "expected '[' and the dims of the type");
    if (!accept(P, ']')) {
        do {
            if (t->ndim >= JN_MAX_DIMS) return err(P, "a type has at most %d dims", JN_MAX_DIMS);
            jn_status st = atom(P, &t->shape[t->ndim++], 0);
            if (st != JN_OK) return st;
        } while (accept(P, ','));
        if (!accept(P, ']')) return err(P, "expected ',' or ']' in the dims of the type");
    }
    if (word(P, "cuda")) t->device = JN_CUDA;
    else (void)word(P, "cpu");
    return JN_OK;
}

/* ------------------------------------------------------------ values */
static int vref(P *P, int32_t *v) {
    int64_t x;
    if (!accept(P, '%')) return 0;
    if (P->p < P->e && (*P->p == ' ' || *P->p == '-')) return 0;
    if (!integer(P, &x) || x < 0 || x >= P->vmax) return 0;
    *v = (int32_t)x;
    return 1;
}

static jn_status use(P *P, int32_t *v, const char *what) {
    if (!vref(P, v)) return err(P, "expected %s: a value %%<n>", what);
    if (*v >= P->g->nvalues || !P->vdef[*v]) return err(P, "%%%d is used before it is defined", *v);
    return JN_OK;
}

/* Defines value v (not yet defined) with type t and its definer. */
static jn_status place(P *P, int32_t v, const jn_ir_value *t, jn_ir_value_kind kind, int32_t def, int32_t idx) {
    if (v < P->g->nvalues && P->vdef[v]) return err(P, "%%%d is defined twice", v);
    if (jn_ir__values_upto(P->g, v) < 0) return JN_ERR_NOMEM;
    jn_ir_value *x = &P->g->values[v];
    *x = *t;
    x->kind = kind;
    x->def = def;
    x->idx = idx;
    if (kind != JN_IR_V_NODE) x->mem = x->wmem = -1, x->alias = -1; /* carries copy their init's type */
    P->vdef[v] = 1;
    return JN_OK;
}

static int32_t cur_loop(P *P) { return P->nstack ? P->stack[P->nstack - 1] : -1; }

/* -------------------------------------------------------------- lines */
static jn_status line_sym(P *P) {
    const char *s;
    size_t n;
    int64_t lo, hi, site;
    char name[128];
    if (!ident(P, &s, &n) || n >= sizeof name) return err(P, "expected a symbol name after 'sym'");
    memcpy(name, s, n);
    name[n] = 0;
    if (jn_ir_sym_find(P->g, name) >= 0) return err(P, "symbol %s is declared twice", name);
    int kind = keyword(P, jn_ir__sym_kinds, 4);
    if (kind < 0) return err(P, "expected a symbol kind (dim, int, ivar or rng)");
    if (!integer(P, &lo) || !accept2(P, "..") || !integer(P, &hi)) return err(P, "expected the range <lo>..<hi>");
    if (!site_ref(P, &site) || !at_end(P)) return err(P, "expected [@<site>] and the end of the sym line");
    return jn_ir_sym_add(P->g, name, (jn_ir_sym_kind)kind, lo, hi, site) < 0 ? JN_ERR_NOMEM : JN_OK;
}

static jn_status line_in(P *P) {
    jn_ir_graph *g = P->g;
    int32_t v;
    jn_ir_value t;
    if (!vref(P, &v)) return err(P, "expected the input's value %%<n> after 'in'");
    int kind = keyword(P, jn_ir__input_kinds, 6);
    if (kind < 0) return err(P, "expected an input kind (state, host, carry, scalar, const or rng)");
    jn_status st = type(P, &t);
    if (st != JN_OK) return st;
    JN_IR_RESERVE(g->inputs, g->capinputs, g->ninputs + 1, return JN_ERR_NOMEM);
    jn_ir_input *in = &g->inputs[g->ninputs];
    memset(in, 0, sizeof *in);
    in->kind = (jn_ir_input_kind)kind;
    in->value = v;
    if (accept(P, '=')) {
        int is_int = 0;
        if (word(P, "true") || word(P, "false")) {
            in->pytype = 3;
            in->scalar = P->p[-2] == 'u'; /* tr(u)e, fal(s)e */
        } else if (number(P, &in->scalar, &is_int)) {
            in->pytype = is_int ? 1 : 2;
        } else return err(P, "expected a number, true or false after '='");
    }
    if (key(P, "bind") && !integer(P, &in->bind)) return err(P, "expected a tensor id after 'bind='");
    if (!site_ref(P, &in->site) || !at_end(P)) return err(P, "expected [= <number>] [bind=<id>] [@<site>] and the end of the line");
    if ((st = place(P, v, &t, JN_IR_V_INPUT, g->ninputs, 0)) != JN_OK) return st;
    g->ninputs++;
    return JN_OK;
}

static jn_status attr_value(P *P, jn_ir_node *x, int k, const jn_opinfo *info) {
    jn_ir_graph *g = P->g;
    jn_attr *a = &x->attrs.a[k];
    const char *an = info->attr_name[k];
    char kind = info->attr_kind[k];
    ws(P);
    if (P->p < P->e && *P->p == '%') {
        int32_t v;
        if (kind != JN_A_INT && kind != JN_A_FLOAT) return err(P, "attribute %s cannot be bound to a value", an);
        jn_status st = use(P, &v, "a scalar input");
        if (st != JN_OK) return st;
        const jn_ir_value *b = &g->values[v];
        if (b->kind != JN_IR_V_INPUT || (g->inputs[b->def].kind != JN_IR_IN_SCALAR && g->inputs[b->def].kind != JN_IR_IN_CONST))
            return err(P, "attribute %s is bound to %%%d, which is no scalar or const input", an, v);
        double sv = g->inputs[b->def].scalar;
        x->attr_input[k] = v;
        if (kind == JN_A_FLOAT) a->f = sv;
        else a->i = fabs(sv) < 4e18 ? (int64_t)sv : 0;
        return JN_OK;
    }
    switch (kind) {
    case JN_A_INT: return atom(P, &a->i, 0);
    case JN_A_FLOAT: return number(P, &a->f, NULL) ? JN_OK : err(P, "expected a number for attribute %s", an);
    case JN_A_BOOL:
        if (word(P, "true")) a->i = 1;
        else if (word(P, "false")) a->i = 0;
        else return err(P, "expected true or false for attribute %s", an);
        return JN_OK;
    case JN_A_DTYPE: {
        const char *s;
        size_t n;
        char b[16] = {0};
        if (!ident(P, &s, &n)) return err(P, "expected a dtype or none for attribute %s", an);
        if (n < sizeof b) memcpy(b, s, n);
        a->i = !strcmp(b, "none") ? -1 : jn_ir_dtype_from_short(b);
        if (strcmp(b, "none") && a->i < 0) return err(P, "unknown dtype '%s' for attribute %s", b, an);
        return JN_OK;
    }
    case JN_A_INTS:
        a->l.n = 0;
        if (!accept(P, '[')) return err(P, "expected '[' for the list attribute %s", an);
        if (accept(P, ']')) return JN_OK;
        do {
            if (a->l.n >= JN_MAX_DIMS) return err(P, "attribute %s has more than %d entries", an, JN_MAX_DIMS);
            jn_status st = atom(P, &a->l.v[a->l.n++], 0);
            if (st != JN_OK) return st;
        } while (accept(P, ','));
        return accept(P, ']') ? JN_OK : err(P, "expected ',' or ']' in attribute %s", an);
    default: return err(P, "attribute %s has a kind this parser does not know", an);
    }
}

static jn_status line_node(P *P) {
    jn_ir_graph *g = P->g;
    int32_t outs[JN_MAX_OUTS], ins[JN_MAX_INS];
    int nout = 0, nin = 0;
    const char *s;
    size_t n;
    jn_status st;
    do {
        if (nout >= JN_MAX_OUTS) return err(P, "a node has at most %d outputs", JN_MAX_OUTS);
        if (!vref(P, &outs[nout++])) return err(P, "expected an output value %%<n>");
    } while (accept(P, ','));
    if (!accept(P, '=')) return err(P, "expected '=' after the node's outputs");
    char name[64];
    if (!ident(P, &s, &n) || n >= sizeof name) return err(P, "expected an op name after '='");
    memcpy(name, s, n);
    name[n] = 0;
    int op = jn_op_lookup(name);
    if (op < 0) return err(P, "unknown op '%s' (not in this build's op table)", name);
    const jn_opinfo *info = jn_op_info((jn_op)op);
    if (!accept(P, '(')) return err(P, "expected '(' and the inputs after op %s", name);
    if (!accept(P, ')')) {
        do {
            if (nin >= JN_MAX_INS) return err(P, "a node has at most %d inputs", JN_MAX_INS);
            if ((st = use(P, &ins[nin++], "an input")) != JN_OK) return st;
        } while (accept(P, ','));
        if (!accept(P, ')')) return err(P, "expected ',' or ')' in the inputs of op %s", name);
    }
    JN_IR_RESERVE(g->nodes, g->capnodes, g->nnodes + 1, return JN_ERR_NOMEM);
    jn_ir_node *x = &g->nodes[g->nnodes];
    memset(x, 0, sizeof *x);
    x->op = (jn_op)op;
    x->nin = (uint8_t)nin;
    x->nout = (uint8_t)nout;
    x->loop = cur_loop(P);
    jn_ir__attr_defaults(x->op, &x->attrs);
    for (int k = 0; k < JN_MAX_ATTRS; k++) x->attr_input[k] = -1;
    for (int k = 0; k < JN_MAX_OUTS; k++) x->out[k] = k < nout ? outs[k] : -1;
    if (nin) {
        if (!(x->in = jn_ir__alloc(g->pool, (size_t)nin * sizeof(int32_t)))) return JN_ERR_NOMEM;
        memcpy(x->in, ins, (size_t)nin * sizeof(int32_t));
    }
    x->kernel = -1;
    unsigned seen = 0;
    for (;;) {
        const char *save = P->p;
        if (!ident(P, &s, &n)) break;
        if (!accept(P, '=')) {
            P->p = save;
            break;
        }
        /* kernel=K<k> follows the attributes; pooling ops have an attribute
         * named kernel too, whose value is a list */
        if (n == 6 && !strncmp(s, "kernel", 6) && P->p < P->e && *P->p == 'K') {
            P->p++;
            int64_t kk;
            if (!integer(P, &kk) || kk < 0 || kk > INT32_MAX) return err(P, "expected kernel=K<k>");
            x->kernel = (int32_t)kk;
            break;
        }
        int k = -1;
        for (int j = 0; j < info->nattrs; j++)
            if (strlen(info->attr_name[j]) == n && !strncmp(info->attr_name[j], s, n)) k = j;
        if (k < 0) {
            P->p = save;
            return err(P, "op %s has no attribute '%.*s'", name, (int)(n < 32 ? n : 32), s);
        }
        if (seen >> k & 1) return err(P, "attribute %s is given twice", info->attr_name[k]);
        seen |= 1u << k;
        if ((st = attr_value(P, x, k, info)) != JN_OK) return st;
    }
    if (!accept(P, ':')) return err(P, "expected ':' and a type after the op call");
    jn_ir_value types[JN_MAX_OUTS];
    for (int k = 0; k < nout; k++) {
        if (k && !accept(P, ',')) return err(P, "expected ',' and a type for each of the %d outputs", nout);
        if ((st = type(P, &types[k])) != JN_OK) return st;
        if (key(P, "mem") && (st = atom(P, &types[k].mem, 0)) != JN_OK) return st;
        if (key(P, "wmem") && (st = atom(P, &types[k].wmem, 0)) != JN_OK) return st;
        if (key(P, "alias") && (st = use(P, &types[k].alias, "the aliased value")) != JN_OK) return st;
    }
    if (!site_ref(P, &x->site) || !at_end(P)) return err(P, "expected [@<site>] and the end of the node line");
    for (int k = 0; k < nout; k++)
        if ((st = place(P, outs[k], &types[k], JN_IR_V_NODE, g->nnodes, k)) != JN_OK) return st;
    g->nnodes++;
    return JN_OK;
}

static jn_status line_loop(P *P) {
    jn_ir_graph *g = P->g;
    int64_t l;
    const char *s;
    size_t n;
    jn_ir_dim trip;
    ws(P);
    if (!(P->p < P->e && *P->p == 'L' && (P->p++, integer(P, &l))) || l < 0 || l >= P->lmax)
        return err(P, "expected a loop name L<k> after 'loop'");
    if (l < g->nloops && P->ldef[l]) return err(P, "loop L%lld is defined twice", (long long)l);
    if (P->nstack >= JN_IR_MAX_LOOP_DEPTH) return err(P, "loops nest deeper than %d", JN_IR_MAX_LOOP_DEPTH);
    if (!key(P, "trip")) return err(P, "expected trip=<dim>");
    jn_status st = atom(P, &trip, 0);
    if (st != JN_OK) return st;
    if (!key(P, "ivar") || !ident(P, &s, &n)) return err(P, "expected ivar=<symbol>");
    char name[128] = {0};
    if (n < sizeof name) memcpy(name, s, n);
    int32_t ivar = jn_ir_sym_find(g, name);
    if (ivar < 0) return err(P, "unknown symbol '%s' as ivar (declare it with a sym line first)", name);
    if (!accept(P, '{') || !at_end(P)) return err(P, "expected '{' ending the loop line");
    int32_t old = g->nloops;
    if (jn_ir__loops_upto(g, (int32_t)l) < 0) return JN_ERR_NOMEM;
    for (int32_t k = old; k < g->nloops; k++) P->ldef[k] = 0;
    jn_ir_loop *L = &g->loops[l];
    memset(L, 0, sizeof *L);
    L->parent = cur_loop(P);
    L->first = g->nnodes;
    L->trip = trip;
    L->ivar = ivar;
    P->ldef[l] = 1;
    P->stack[P->nstack++] = (int32_t)l;
    return JN_OK;
}

static jn_status line_carry(P *P) {
    jn_ir_graph *g = P->g;
    int32_t l = cur_loop(P), par, init, next, out;
    if (l < 0) return err(P, "'carry' outside a loop");
    jn_ir_loop *L = &g->loops[l];
    if (L->ncollect) return err(P, "carry lines must come before the collect lines of loop L%d", l);
    jn_status st;
    if (!vref(P, &par) || !accept(P, '=')) return err(P, "expected %%<param> = after 'carry'");
    if ((st = use(P, &init, "the init value")) != JN_OK) return st;
    if (!accept2(P, "->") || !vref(P, &next)) return err(P, "expected -> %%<next>");
    if (!accept2(P, "=>") || !vref(P, &out) || !at_end(P)) return err(P, "expected => %%<out> and the end of the line");
    if (jn_ir__loop_reserve(L, L->ncarry + 1, 0) < 0) return JN_ERR_NOMEM;
    jn_ir_value t = g->values[init];
    int32_t k = L->ncarry;
    if ((st = place(P, par, &t, JN_IR_V_LOOP_PARAM, l, k)) != JN_OK) return st;
    if ((st = place(P, out, &t, JN_IR_V_LOOP_OUT, l, k)) != JN_OK) return st;
    L->carry[k] = (jn_ir_carry){par, init, next, out};
    L->ncarry++;
    return JN_OK;
}

static jn_status line_collect(P *P) {
    jn_ir_graph *g = P->g;
    int32_t l = cur_loop(P), body, out;
    if (l < 0) return err(P, "'collect' outside a loop");
    jn_ir_loop *L = &g->loops[l];
    jn_status st = use(P, &body, "the collected body value");
    if (st != JN_OK) return st;
    if (!accept2(P, "=>") || !vref(P, &out) || !at_end(P)) return err(P, "expected => %%<out> and the end of the line");
    jn_ir_value t = g->values[body];
    if (t.ndim >= JN_MAX_DIMS) return err(P, "collecting %%%d would need more than %d dims", body, JN_MAX_DIMS);
    memmove(&t.shape[1], &t.shape[0], (size_t)t.ndim * sizeof t.shape[0]);
    t.shape[0] = L->trip;
    t.ndim++;
    if (jn_ir__loop_reserve(L, 0, L->ncollect + 1) < 0) return JN_ERR_NOMEM;
    if ((st = place(P, out, &t, JN_IR_V_LOOP_OUT, l, L->ncarry + L->ncollect)) != JN_OK) return st;
    L->collect[L->ncollect++] = (jn_ir_collect){body, out};
    return JN_OK;
}

static jn_status line_out(P *P) {
    int32_t v, s;
    jn_status st = use(P, &v, "the output value");
    if (st != JN_OK) return st;
    if (word(P, "keep")) {
        if (!at_end(P)) return err(P, "expected the end of the line after 'keep'");
        return jn_ir_output_add(P->g, JN_IR_OUT_KEEP, v, -1) < 0 ? JN_ERR_NOMEM : JN_OK;
    }
    if (!key(P, "state")) return err(P, "expected 'keep' or state=%%<input>");
    if ((st = use(P, &s, "the state input")) != JN_OK) return st;
    if (!at_end(P)) return err(P, "expected the end of the line after state=%%%d", s);
    if (P->g->values[s].kind != JN_IR_V_INPUT) return err(P, "state=%%%d is not an input", s);
    return jn_ir_output_add(P->g, JN_IR_OUT_STATE, v, P->g->values[s].def) < 0 ? JN_ERR_NOMEM : JN_OK;
}

static jn_status range(P *P, jn_ir_guard *q) {
    if (!word(P, "in") || !integer(P, &q->lo) || !accept2(P, "..") || !integer(P, &q->hi))
        return err(P, "expected in <lo>..<hi>");
    return JN_OK;
}

static jn_status line_guard(P *P) {
    jn_ir_graph *g = P->g;
    const char *s;
    size_t n;
    jn_ir_guard q = {.value = -1, .sym = -1, .loop = -1, .dim = -1};
    int kind = keyword(P, jn_ir__guard_kinds, 8);
    if (kind < 0) return err(P, "expected a guard kind (sym, dim, dtype, device, scalar, pytype, bind or trip)");
    q.kind = (jn_ir_guard_kind)kind;
    jn_status st = JN_OK;
    if (kind == JN_IR_G_SYM) {
        char name[128] = {0};
        if (!ident(P, &s, &n)) return err(P, "expected a symbol name");
        if (n < sizeof name) memcpy(name, s, n);
        if ((q.sym = jn_ir_sym_find(g, name)) < 0) return err(P, "unknown symbol '%s'", name);
        st = range(P, &q);
    } else if (kind == JN_IR_G_TRIP) {
        int64_t l;
        ws(P);
        if (!(P->p < P->e && *P->p == 'L' && (P->p++, integer(P, &l))) || l < 0 || l >= g->nloops || !P->ldef[l])
            return err(P, "expected a defined loop L<k>");
        q.loop = (int32_t)l;
        st = range(P, &q);
    } else {
        if ((st = use(P, &q.value, "the guarded value")) != JN_OK) return st;
        if (kind == JN_IR_G_DIM && (!accept(P, '.') || !int32f(P, &q.dim))) return err(P, "expected .<dim> after the value");
        if (!accept2(P, "==")) return err(P, "expected '=='");
        int k = -1;
        switch (kind) {
        case JN_IR_G_DIM:
        case JN_IR_G_BIND:
            if (!integer(P, &q.lo)) return err(P, "expected an integer");
            break;
        case JN_IR_G_SCALAR:
            if (!number(P, &q.fval, NULL)) return err(P, "expected a number");
            break;
        case JN_IR_G_DTYPE:
        case JN_IR_G_DEVICE:
        case JN_IR_G_PYTYPE:
            k = kind == JN_IR_G_DEVICE ? keyword(P, jn_ir__devices, 2)
                : kind == JN_IR_G_PYTYPE ? keyword(P, jn_ir__pytypes, 4) : keyword(P, NULL, 0);
            if (k < 0) return err(P, "expected a %s name", jn_ir__guard_kinds[kind]);
            q.lo = k;
            break;
        }
        q.hi = q.lo;
    }
    if (st != JN_OK) return st;
    if (word(P, "seen")) q.cls = JN_IR_GC_SEEN;
    else if (word(P, "need")) q.cls = JN_IR_GC_NEED;
    else return err(P, "expected the guard's class after its check: need or seen");
    if (!site_ref(P, &q.site)) return err(P, "expected a site id after '@'");
    const char *note;
    ws(P);
    if (P->p < P->e && *P->p == '"') {
        if (!string(P, &note)) return err(P, "expected a quoted note");
        q.note = note;
    }
    if (!at_end(P)) return err(P, "expected [@<site>] [\"<note>\"] and the end of the guard line");
    return jn_ir_guard_add(g, &q) < 0 ? JN_ERR_NOMEM : JN_OK;
}

/* kernel K<k> <kind> root=%<v> [impl=<impl>]: kernels come in order. */
static jn_status line_kernel(P *P) {
    jn_ir_graph *g = P->g;
    int64_t k;
    int32_t v;
    jn_status st;
    if (!accept(P, 'K') || !integer(P, &k)) return err(P, "expected K<k> after 'kernel'");
    if (k != g->nkernels) return err(P, "expected kernel K%d (kernels are numbered in order)", g->nkernels);
    int kind = keyword(P, jn_ir__kernel_kinds, 4);
    if (kind < 0) return err(P, "expected a kernel kind: ew, ew_reduce, gemm or lib");
    if (!key(P, "root")) return err(P, "expected root=%%<v>");
    if ((st = use(P, &v, "the root node's output")) != JN_OK) return st;
    if (g->values[v].kind != JN_IR_V_NODE) return err(P, "root=%%%d is not a node output", v);
    int impl = JN_IR_IMPL_NONE;
    if (key(P, "impl")) {
        int i = keyword(P, jn_ir__impls + 1, 3);
        if (i < 0) return err(P, "expected impl=gen, lib or gemm");
        impl = i + 1;
    }
    if (!at_end(P)) return err(P, "expected the end of the kernel line");
    int32_t root = g->values[v].def, saved = g->nodes[root].kernel;
    if (jn_ir_kernel_add(g, (jn_ir_kernel_kind)kind, root) < 0) return JN_ERR_NOMEM;
    g->nodes[root].kernel = saved; /* as the node line said; the verifier checks */
    g->kernels[k].impl = (jn_ir_impl)impl;
    return JN_OK;
}

static jn_status line_arena(P *P) {
    jn_status st = atom(P, &P->g->arena, 0);
    if (st != JN_OK) return st;
    if (word(P, "wide") && (st = atom(P, &P->g->warena, 0)) != JN_OK) return st;
    return at_end(P) ? JN_OK : err(P, "expected the end of the arena line");
}

static jn_status line_graph(P *P) {
    const char *s;
    size_t n;
    char name[128];
    if (!ident(P, &s, &n) || n >= sizeof name) return err(P, "expected a graph name after 'graph'");
    memcpy(name, s, n);
    name[n] = 0;
    jn_ir_graph *g = jn_ir_graph_add(P->m, name);
    if (!g) return JN_ERR_NOMEM;
    P->g = g;
    P->graph_line = P->line;
    P->nstack = 0;
    const char *str;
    if (!key(P, "group") || !int32f(P, &g->group)) return err(P, "expected group=<n>");
    if (!key(P, "variant") || !int32f(P, &g->variant)) return err(P, "expected variant=<n>");
    if (!key(P, "parent") || !int32f(P, &g->parent)) return err(P, "expected parent=<n>");
    if (!key(P, "diverge") || !int32f(P, &g->diverge)) return err(P, "expected diverge=<n>");
    if (!key(P, "support") || !integer(P, &g->support)) return err(P, "expected support=<n>");
    if (!key(P, "steps") || !integer(P, &g->step_lo) || !accept2(P, "..") || !integer(P, &g->step_hi))
        return err(P, "expected steps=<a>..<b>");
    if (!key(P, "entry") || !string(P, &str)) return err(P, "expected entry=\"<text>\"");
    if (!(g->entry = jn_ir_intern(g, str))) return JN_ERR_NOMEM;
    if (!key(P, "exit") || !string(P, &str)) return err(P, "expected exit=\"<text>\"");
    if (!(g->exit = jn_ir_intern(g, str))) return JN_ERR_NOMEM;
    if (key(P, "decided") && (!accept(P, '@') || !integer(P, &g->decided))) return err(P, "expected decided=@<site>");
    if (!accept(P, '{') || !at_end(P)) return err(P, "expected '{' ending the graph line");
    return JN_OK;
}

static jn_status close_brace(P *P) {
    jn_ir_graph *g = P->g;
    if (!at_end(P)) return err(P, "expected nothing after '}'");
    if (P->nstack) {
        int32_t l = P->stack[--P->nstack];
        g->loops[l].count = g->nnodes - g->loops[l].first;
        return JN_OK;
    }
    for (int32_t v = 0; v < g->nvalues; v++)
        if (!P->vdef[v]) return err(P, "graph %s: value %%%d is referenced or skipped but never defined", g->name, v);
    for (int32_t l = 0; l < g->nloops; l++)
        if (!P->ldef[l]) return err(P, "graph %s: loop L%d is never defined (loops are numbered 0..n-1)", g->name, l);
    memset(P->vdef, 0, (size_t)g->nvalues);
    memset(P->ldef, 0, (size_t)g->nloops);
    P->g = NULL;
    return JN_OK;
}

static jn_status graph_line(P *P) {
    const char *s;
    size_t n;
    ws(P);
    if (P->p < P->e && *P->p == '%') return line_node(P);
    if (accept(P, '}')) return close_brace(P);
    if (!ident(P, &s, &n)) return err(P, "expected sym, in, a node, loop, carry, collect, out, guard or '}'");
#define IS(w) (n == sizeof(w) - 1 && !strncmp(s, w, n))
    if (IS("sym")) return line_sym(P);
    if (IS("in")) return line_in(P);
    if (IS("loop")) return line_loop(P);
    if (IS("carry")) return line_carry(P);
    if (IS("collect")) return line_collect(P);
    if (IS("out")) return line_out(P);
    if (IS("guard")) return line_guard(P);
    if (IS("kernel")) return line_kernel(P);
    if (IS("arena")) return line_arena(P);
    P->p = s;
    return err(P, "expected sym, in, a node, loop, carry, collect, out, guard or '}'");
}

static jn_status module_line(P *P, int *declared) {
    const char *s;
    size_t n;
    if (!ident(P, &s, &n)) return err(P, "expected 'site' or 'graph'");
    if (IS("graph")) return line_graph(P);
    if (IS("site")) {
        int64_t id, line;
        const char *file;
        if (!integer(P, &id) || !string(P, &file)) return err(P, "expected site <id> \"<file>\":<line> \"<func>\"");
        char *f = strdup(file);
        if (!f) return jn_error(JN_ERR_NOMEM, "out of memory");
        const char *func;
        jn_status st = JN_OK;
        if (!accept(P, ':') || !integer(P, &line) || line < INT32_MIN || line > INT32_MAX || !string(P, &func) || !at_end(P))
            st = err(P, "expected site <id> \"<file>\":<line> \"<func>\"");
        else if ((st = jn_ir_site_add(P->m, id, f, (int)line, func)) != JN_OK)
            st = err(P, "%s", jn_errmsg());
        free(f);
        return st;
    }
    if (IS("module")) {
        if (*declared) return err(P, "a second 'module' line");
        ws(P);
        uint64_t h = 0;
        int digits = 0;
        if (!key(P, "optable")) return err(P, "expected optable=<16 hex digits>");
        for (; P->p < P->e && digits < 16; P->p++, digits++) {
            char c = *P->p;
            int d = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
            if (d < 0) break;
            h = h << 4 | (uint64_t)d;
        }
        int64_t ng;
        if (!digits || !key(P, "graphs") || !integer(P, &ng) || ng < 0 || ng > INT32_MAX || !at_end(P))
            return err(P, "expected module optable=<16 hex digits> graphs=<n>");
        P->m->optable_hash = h;
        P->module_line = P->line;
        *declared = 1 + (int)(ng > INT32_MAX - 1 ? INT32_MAX - 1 : ng);
        return JN_OK;
    }
    P->p = s;
    return err(P, "expected 'site' or 'graph'");
#undef IS
}

/* Next line into [p, e) with the comment and trailing blanks cut off; 0 at the end. */
static int next_line(P *P) {
    if (P->next >= P->tend) return 0;
    const char *s = P->next, *q = s;
    while (q < P->tend && *q != '\n') q++;
    P->next = q < P->tend ? q + 1 : q;
    P->line++;
    const char *e = s;
    for (int in_str = 0; e < q; e++) {
        if (in_str && *e == '\\' && e + 1 < q) e++;
        else if (*e == '"') in_str = !in_str;
        else if (*e == '#' && !in_str) break;
    }
    while (e > s && (e[-1] == ' ' || e[-1] == '\t' || e[-1] == '\r')) e--;
    P->p = s;
    P->e = e;
    return 1;
}

jn_status jn_ir_parse(const char *text, size_t len, jn_ir_module **out) {
    *out = NULL;
    P P = {.text = text, .tend = text + len, .next = text};
    int64_t lines = 1;
    for (size_t i = 0; i < len; i++) lines += text[i] == '\n';
    if (lines > INT32_MAX / 8) return jn_error(JN_ERR_VALUE, "IR text too large (%lld lines)", (long long)lines);
    P.vmax = (int32_t)(lines * (JN_MAX_OUTS + 1) + 16);
    P.lmax = (int32_t)(lines + 1);
    P.vdef = calloc((size_t)P.vmax + 1, 1);
    P.ldef = calloc((size_t)P.lmax + 1, 1);
    P.m = jn_ir_module_new();
    jn_status st = JN_OK;
    int declared = 0;
    if (!P.vdef || !P.ldef || !P.m) st = jn_error(JN_ERR_NOMEM, "out of memory parsing IR text");
    for (size_t i = 0; st == JN_OK && i < len; i++)
        if (!text[i]) {
            P.line = 1;
            for (size_t j = 0; j < i; j++) P.line += text[j] == '\n';
            st = jn_error(JN_ERR_VALUE, "line %d: NUL byte in IR text", P.line);
        }
    while (st == JN_OK && next_line(&P)) {
        ws(&P);
        if (P.p >= P.e) continue;
        if (!declared && !word(&P, "module")) st = err(&P, "expected the 'module optable=<hex> graphs=<n>' line first");
        else if (!declared) {
            P.p -= 6;
            st = module_line(&P, &declared);
        } else st = P.g ? graph_line(&P) : module_line(&P, &declared);
    }
    if (st == JN_OK && !declared) st = jn_error(JN_ERR_VALUE, "line %d: no 'module' line (empty IR text)", P.line);
    if (st == JN_OK && P.g)
        st = jn_error(JN_ERR_VALUE, "line %d: graph %s (line %d) is not closed: expected '}'", P.line, P.g->name, P.graph_line);
    if (st == JN_OK && P.m->ngraphs != declared - 1)
        st = jn_error(JN_ERR_VALUE, "line %d: the module line says graphs=%d but the text has %d", P.module_line, declared - 1,
                      P.m->ngraphs);
    if (st == JN_OK) st = jn_ir_verify_module(P.m);
    free(P.vdef);
    free(P.ldef);
    free(P.scratch);
    if (st != JN_OK) {
        jn_ir_module_free(P.m);
        return st;
    }
    *out = P.m;
    return JN_OK;
}
