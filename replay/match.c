/* match.c -- replay's matcher (jn_match.h): the JN_CG_SEC_MATCHER section
 * (ir/jn_ir_match.h) loaded and checked against the module, and the
 * per-event automaton over it.
 *
 * Load: every field is bounds-checked and cross-checked with the module
 * (ops by name with this build's schema, inputs/outputs/symbols/exprs in
 * range, refs only to earlier tokens or, inside a loop, to its body), so
 * the feeding loop trusts its tables.  Guards are indexed per symbol and
 * per input so a failure names the guard jn_ir_guard_explain describes.
 *
 * Run: cursors (a fixed pool of MAX_CURSORS, each sized for the largest
 * program) start at a segment's first event, one per graph whose first op
 * it is, die at their first mismatch and fork at a loop's end when both
 * another iteration and the op after the loop fit; the event's output identities go to one table shared by the
 * cursors (event index -> ids), and a token reference resolves to an event
 * index from the token's position (and iteration, inside loops).  The
 * per-event work is a handful of compares per input and attribute; a
 * failure records codes and numbers only, and the sentence is written once
 * the segment has missed.  jn_rp_match_dump prints every loaded token
 * (op, loop, refs), for debugging a matcher program (JANUS_MATCH_DUMP=1
 * under replay).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "jn_db.h"
#include "jn_ir_match.h"
#include "jn_match.h"

/* ---------------------------------------------------------- program */
typedef struct {
    uint8_t kind, b, mode, has_init;
    int32_t a;
    int64_t c;
    uint8_t ikind, ib, imode;
    int32_t ia;
    int64_t ic;
} mref;

/* What every event reads first (op, arity, the refs' pointer, the outputs'
 * kinds and shapes), then the attributes and in-place refs: a token is
 * ~1 KB, and feeding touches its first lines only for most ops. */
typedef struct {
    jn_op op;
    uint8_t nin, nout, flags, nattrs;
    int32_t loop;
    mref *in;                       /* nin refs (COLLECT: 1) */
    uint8_t out_new[JN_MAX_OUTS];
    uint8_t out_all[JN_MAX_OUTS];   /* gout collects every iteration's object (JN_IR_MO_ALL) */
    uint8_t ondim[JN_MAX_OUTS];     /* the graph's shape of each output */
    int32_t gout[JN_MAX_OUTS];
    jn_ir_dim oshape[JN_MAX_OUTS][JN_MAX_DIMS];
    char akind[JN_MAX_ATTRS];
    int32_t fin[JN_MAX_ATTRS];
    jn_attr attr[JN_MAX_ATTRS];
    int64_t site;
    mref out[JN_MAX_OUTS];
} mtok;

typedef struct {
    int32_t first, count, ivar;
    jn_ir_dim trip;
    int64_t lo, hi;
    int32_t guard;                  /* the graph's TRIP guard of this loop, -1 */
    uint8_t open;                   /* with no TRIP guard: every symbol of its trip has a SEEN
                                     * guard or none (loop_open) */
} mloop;

/* failure codes */
enum {
    F_OP = 1, F_ARITY, F_ATTR, F_DTYPE, F_DEVICE, F_RANK, F_DIM, F_SYM, F_SYMBIND, F_BIND, F_IDENT, F_NOTTENSOR,
    F_NOTSCALAR, F_PYTYPE, F_SCALAR, F_SCALARVAR, F_EXTRA, F_TRIP, F_SHORT, F_NOSTART, F_OUTRANK, F_OUTDIM,
    F_BINDTAKEN
};

typedef struct {
    int code;
    int32_t tok, arg, guard, sym;   /* arg: input (>= 0), output (-1 - k), attribute (-100 - k) */
    int32_t dim;                    /* F_OUTDIM: which dim of the output */
    int64_t event;
    double seen, want;
} mfail;

/* The state inputs of a hit (BIND guards).  A state input binds whatever
 * tensor the script passes there, as any input: the graph computes from it
 * and writes it back in place, as eager would.  Tensor ids are no guide
 * (they count every tensor the process made before: a run that makes one
 * more tensor before its model, makes its optimizer state elsewhere or
 * resumes from a checkpoint gives them all other ids than the recording).
 * What a hit must keep is the recording's aliasing: state inputs of one
 * recorded tensor are one tensor, and of two recorded tensors two
 * (`bind`, the recorded id, says which).  Per distinct recorded id (`rec`,
 * sorted, every graph's) the tensor this check saw, and the way back (a
 * tensor id -> that index, open addressing), each valid in the generation
 * `gen` of the check that wrote it. */
typedef struct {
    int64_t *rec;
    int32_t n;
    uint32_t gen;
    uint32_t *kgen;
    uint64_t *kid;
    uint64_t *hkey;
    int32_t *hval;
    uint32_t *hgen;
    int64_t nslot;
} sbind;

typedef struct {
    int32_t gi;
    uint8_t entry;                  /* 0 step start, else the JN_SYNC_* before its segments */
    uint8_t any_all;                /* some token output collects every iteration's object */
    const jn_ir_graph *g;
    int32_t ntok, nloop;
    mtok *tok;
    mloop *loop;
    int32_t *sym_guard;             /* per symbol: its SYM guard, -1 */
    int32_t *in_guard;              /* per input: GI_N slots (dtype, device, bind, scalar, pytype) */
    int32_t *dim_guard;             /* per input * JN_MAX_DIMS */
    int32_t *in_sb;                 /* per input: its recorded id's index in the matcher's sbind, -1 */
    int32_t *each_tok;              /* per input: a stacked input's first reader (token), -1 ... */
    uint8_t *each_arg;              /* ... and which of its inputs reads it */
} mgraph;

/* A cursor: one way of following graph P so far (a loop's end forks one
 * cursor that goes on iterating and one that leaves the loop). */
typedef struct {
    const mgraph *P;
    int32_t pos, cur_loop;
    int64_t it;
    int64_t *syms;
    uint8_t *sbound, *ibound;
    uint64_t *in_id;
    double *in_val;
    int64_t *in_ev;                 /* per input: the event that bound it ... */
    int32_t *in_arg;                /* ... and where (input j, output -1-k, attribute -100-k) */
    int64_t *in_it;                 /* per stacked input: the iteration in_id is of, -1 ... */
    uint64_t *in_prev;              /* ... and the previous iteration's id (0: none) */
    int64_t *loop_start, *loop_trip;
    int64_t *tok_ev;
    int64_t done;                   /* events matched */
    jn_rp_match_extrap *xp;         /* SEEN guards this run went past (each at most once) */
    int32_t nxp;
    mfail fail;
} mcur;

enum { GI_DTYPE, GI_DEVICE, GI_BIND, GI_SCALAR, GI_PYTYPE, GI_N };

#define MAX_CURSORS 64

struct jn_rp_matcher {
    const jn_ir_module *m;
    mgraph *gr; int32_t ngr;
    mcur *cur[MAX_CURSORS];         /* cursors, allocated once per program size on demand */
    mcur *pool[MAX_CURSORS]; int32_t npool;
    int32_t *ev_tok; int64_t capevtok;
    int32_t *by_graph;              /* module graph -> gr index, -1 */
    int32_t *start; int32_t *start0; /* per op: graphs starting with it (start[start0[op] .. start0[op+1])) */
    mcur **alive; int32_t nalive;
    int started, missed;
    int64_t nev;
    uint64_t *ev_ids; int64_t capev;
    mfail miss;
    int32_t miss_graph;
    int entry;                      /* of the current segment (jn_rp_match_begin), -1 any */
    int slow;                       /* the single-cursor fast path off (jn_rp_match_set_fast) */
    int64_t nfast;                  /* events it decided */
    int64_t nknown;                 /* ... of which with checks known to hold (jn_rp_match_feed_at) */
    sbind sb;
    char why[2048];
};

/* ----------------------------------------------------------- reading */
typedef struct {
    const unsigned char *p;
    size_t n, at;
    int bad;
    const char *what;
} rd;

static uint64_t get(rd *r, int bytes, const char *what) {
    if (r->bad) return 0;
    if (r->n - r->at < (size_t)bytes) {
        r->bad = 1;
        r->what = what;
        return 0;
    }
    uint64_t v = 0;
    for (int i = 0; i < bytes; i++) v |= (uint64_t)r->p[r->at + i] << (8 * i);
    r->at += (size_t)bytes;
    return v;
}

static jn_status bad(int32_t gi, const char *fmt, const char *what) {
    char b[256];
    snprintf(b, sizeof b, fmt, what);
    if (gi >= 0)
        return jn_error(JN_ERR_VALUE, "the bundle's matcher section is corrupt (graph g%d: %s); run `janus optimize` "
                        "again to rebuild it", gi, b);
    return jn_error(JN_ERR_VALUE, "the bundle's matcher section is corrupt (%s); run `janus optimize` again to "
                    "rebuild it", b);
}

static int dim_ok(const jn_ir_graph *g, jn_ir_dim d) {
    return !jn_ir_is_expr(d) || (jn_ir_expr_index(d) >= 0 && jn_ir_expr_index(d) < g->nexprs);
}

static int tensor_input(const jn_ir_graph *g, int32_t i) {
    return i >= 0 && i < g->ninputs &&
           (g->inputs[i].kind == JN_IR_IN_STATE || g->inputs[i].kind == JN_IR_IN_HOST ||
            g->inputs[i].kind == JN_IR_IN_CARRY);
}

static int scalar_input(const jn_ir_graph *g, int32_t i) {
    return i >= 0 && i < g->ninputs && (g->inputs[i].kind == JN_IR_IN_SCALAR || g->inputs[i].kind == JN_IR_IN_CONST);
}

static const char *read_ref1(rd *r, const mgraph *G, uint8_t *kind, int32_t *a, uint8_t *b, uint8_t *mode,
                             int64_t *c) {
    *kind = (uint8_t)get(r, 1, "a ref");
    *a = (int32_t)get(r, 4, "a ref");
    *b = (uint8_t)get(r, 1, "a ref");
    *mode = (uint8_t)get(r, 1, "a ref");
    *c = (int64_t)get(r, 8, "a ref");
    if (r->bad) return NULL;
    const jn_ir_graph *g = G->g;
    if (*kind == JN_IR_MR_INPUT) {
        if (!tensor_input(g, *a)) return "a ref names no tensor input";
        return *mode == JN_IR_MM_SAME ||
                       ((*mode == (JN_IR_MM_ABS | JN_IR_MM_REL) || *mode == JN_IR_MM_PREV || *mode == JN_IR_MM_END) &&
                        *c == 0)
                   ? NULL
                   : "an input ref of an unknown mode";
    }
    if (*kind == JN_IR_MR_SCALAR) return scalar_input(g, *a) ? NULL : "a ref names no scalar input";
    if (*kind != JN_IR_MR_TOKEN) return "unknown ref kind";
    if (*a < 0 || *a >= G->ntok) return "a ref names no token";
    if ((*mode & 0xf) > JN_IR_MM_END || (*mode & ~(0xf | JN_IR_MM_REL | JN_IR_MM_SEED))) return "unknown ref mode";
    if ((*mode & JN_IR_MM_SEED) && (*mode & 0xf) != JN_IR_MM_ABS && (*mode & 0xf) != JN_IR_MM_END)
        return "a seeded ref that is no cross-loop read";
    if (*c < -(INT64_C(1) << 40) || *c > (INT64_C(1) << 40)) return "an iteration offset is out of range";
    return NULL;
}

static const char *read_ref(rd *r, const mgraph *G, mref *x) {
    memset(x, 0, sizeof *x);
    const char *w = read_ref1(r, G, &x->kind, &x->a, &x->b, &x->mode, &x->c);
    if (w || r->bad) return w;
    if ((x->kind == JN_IR_MR_TOKEN && ((x->mode & 0xf) == JN_IR_MM_PREV || (x->mode & JN_IR_MM_SEED))) ||
        (x->kind == JN_IR_MR_INPUT && x->mode == JN_IR_MM_PREV)) {
        x->has_init = 1;
        w = read_ref1(r, G, &x->ikind, &x->ia, &x->ib, &x->imode, &x->ic);
    }
    return w;
}

/* Once every token is read: token refs name an existing output, in the
 * order and loop their mode allows (reader t; lr its loop). */
static const char *check_tref(const mgraph *G, int32_t t, int32_t lr, uint8_t kind, int32_t a, uint8_t b,
                              uint8_t mode) {
    if (kind != JN_IR_MR_TOKEN) return NULL;
    int m = mode & 0xf;
    int32_t lc = G->tok[a].loop;
    if (b >= G->tok[a].nout) return "a ref names no output";
    if (lc < 0) return a < t && m == JN_IR_MM_SAME && !(mode & JN_IR_MM_REL) ? NULL : "a ref to a later token";
    if ((mode & JN_IR_MM_REL) && lr < 0) return "a relative ref outside a loop";
    if (m == JN_IR_MM_SAME) return lc == lr && a < t ? NULL : "a loop ref outside its loop";
    if (m == JN_IR_MM_PREV) return lc == lr ? NULL : "a loop ref outside its loop";
    return lc != lr && a < t ? NULL : "a cross-loop ref into its own loop";
}

/* Stacked inputs (an INPUT ref of mode ABS | REL): every ref to one is
 * such a read from one loop, never an in-place target, a loop init or a
 * plain read; its first reader binds iteration i's tensor (each_tok/arg). */
static const char *index_each(mgraph *G) {
    const jn_ir_graph *g = G->g;
    if (!(G->each_tok = malloc(sizeof(int32_t) * ((size_t)g->ninputs + 1))) ||
        !(G->each_arg = calloc((size_t)g->ninputs + 1, 1)))
        return "out of memory";
    int32_t *plain = calloc((size_t)g->ninputs + 1, sizeof *plain);
    if (!plain) return "out of memory";
    for (int32_t i = 0; i < g->ninputs; i++) G->each_tok[i] = -1;
    const char *w = NULL;
    for (int32_t t = 0; t < G->ntok && !w; t++) {
        const mtok *T = &G->tok[t];
        int nr = T->flags & JN_IR_MT_COLLECT ? 0 : T->nin; /* a collect's one ref is a token */
        for (int j = 0; j < nr + T->nout && !w; j++) {
            const mref *r = j < nr ? &T->in[j] : &T->out[j - nr];
            if (j >= nr && T->out_new[j - nr]) continue;
            if (r->has_init && r->ikind == JN_IR_MR_INPUT) plain[r->ia] = 1;
            if (r->kind != JN_IR_MR_INPUT) continue;
            if (r->mode == JN_IR_MM_SAME) {
                plain[r->a] = 1;
                continue;
            }
            if (r->mode == JN_IR_MM_PREV || r->mode == JN_IR_MM_END || r->mode == JN_IR_MM_END) continue; /* below, once every stacked input is known */
            if (j >= nr || T->loop < 0) w = "a stacked input read outside a loop or written";
            else if (G->each_tok[r->a] < 0) G->each_tok[r->a] = t, G->each_arg[r->a] = (uint8_t)j;
            else if (G->tok[G->each_tok[r->a]].loop != T->loop) w = "a stacked input read by two loops";
        }
    }
    for (int32_t i = 0; i < g->ninputs && !w; i++)
        if (G->each_tok[i] >= 0 && (plain[i] || g->values[g->inputs[i].value].ndim < 1))
            w = "a stacked input is also read whole";
    for (int32_t t = 0; t < G->ntok && !w; t++) {
        const mtok *T = &G->tok[t];
        for (int j = 0; j < (T->flags & JN_IR_MT_COLLECT ? 0 : T->nin) && !w; j++) {
            const mref *r = &T->in[j];
            if (r->kind == JN_IR_MR_INPUT && r->mode == JN_IR_MM_PREV &&
                (G->each_tok[r->a] < 0 || G->tok[G->each_tok[r->a]].loop != T->loop))
                w = "a previous-iteration input read of no stacked input of its loop";
            if (r->kind == JN_IR_MR_INPUT && r->mode == JN_IR_MM_END &&
                (G->each_tok[r->a] < 0 || T->loop >= 0 || G->each_tok[r->a] > t))
                w = "a last-iteration input read of no stacked input, or inside a loop";
        }
    }
    free(plain);
    return w;
}

static const char *check_ref(const mgraph *G, int32_t t, const mref *x) {
    int32_t lr = G->tok[t].loop;
    const char *w = check_tref(G, t, lr, x->kind, x->a, x->b, x->mode);
    if (w || !x->has_init) return w;
    if (x->kind == JN_IR_MR_INPUT) /* a stacked input's previous element, a plain input at iteration 0 */
        return lr >= 0 && x->ikind == JN_IR_MR_INPUT && x->imode == JN_IR_MM_SAME
                   ? NULL
                   : "a previous-iteration input read outside a loop or seeded otherwise";
    if (x->ikind == JN_IR_MR_SCALAR) return "a loop init is a scalar";
    if (x->ikind == JN_IR_MR_TOKEN && ((x->imode & 0xf) == JN_IR_MM_PREV || (x->imode & (JN_IR_MM_REL | JN_IR_MM_SEED))))
        return "a loop init is loop-carried itself";
    /* the init is read as if just before the loop: the reader's (a carry),
     * the source's (a seed) */
    int32_t l = (x->mode & 0xf) == JN_IR_MM_PREV ? lr : G->tok[x->a].loop;
    if (x->ikind == JN_IR_MR_TOKEN && G->tok[x->ia].loop == l) return "a seed from its own loop";
    return check_tref(G, G->loop[l].first, -1, x->ikind, x->ia, x->ib, x->imode);
}

static void graph_free(mgraph *G) {
    for (int32_t t = 0; G->tok && t < G->ntok; t++) free(G->tok[t].in);
    free(G->tok), free(G->loop), free(G->sym_guard), free(G->in_guard), free(G->dim_guard), free(G->in_sb);
    free(G->each_tok), free(G->each_arg);
}

/* Per symbol, input and dim: the guard of G's graph on it, -1; each
 * loop's TRIP guard. */
/* Every symbol of d has a SEEN guard or none (sym_guard set). */
static int syms_seen(const mgraph *G, jn_ir_dim d, int depth) {
    if (!jn_ir_is_expr(d)) return 1;
    int32_t k = jn_ir_expr_index(d);
    if (depth > 64 || k < 0 || k >= G->g->nexprs) return 0;
    const jn_ir_expr *e = &G->g->exprs[k];
    if (e->kind == JN_IR_E_SYM) {
        int32_t q = e->sym >= 0 && e->sym < G->g->nsyms ? G->sym_guard[e->sym] : -2;
        return q == -1 || (q >= 0 && G->g->guards[q].cls == JN_IR_GC_SEEN);
    }
    return syms_seen(G, e->a, depth + 1) && syms_seen(G, e->b, depth + 1);
}

static jn_status index_guards(mgraph *G) {
    const jn_ir_graph *g = G->g;
    G->sym_guard = malloc(sizeof(int32_t) * ((size_t)g->nsyms + 1));
    G->in_guard = malloc(sizeof(int32_t) * ((size_t)g->ninputs * GI_N + 1));
    G->dim_guard = malloc(sizeof(int32_t) * ((size_t)g->ninputs * JN_MAX_DIMS + 1));
    int32_t *v2i = malloc(sizeof(int32_t) * ((size_t)g->nvalues + 1));
    if (!G->sym_guard || !G->in_guard || !G->dim_guard || !v2i) {
        free(v2i);
        return jn_error(JN_ERR_NOMEM, "out of memory loading the matcher");
    }
    for (int32_t s = 0; s < g->nsyms; s++) G->sym_guard[s] = -1;
    for (int32_t i = 0; i < g->ninputs * GI_N; i++) G->in_guard[i] = -1;
    for (int32_t i = 0; i < g->ninputs * JN_MAX_DIMS; i++) G->dim_guard[i] = -1;
    for (int32_t v = 0; v < g->nvalues; v++) v2i[v] = -1;
    for (int32_t i = 0; i < g->ninputs; i++)
        if (g->inputs[i].value >= 0 && g->inputs[i].value < g->nvalues) v2i[g->inputs[i].value] = i;
    for (int32_t k = 0; k < g->nguards; k++) {
        const jn_ir_guard *q = &g->guards[k];
        int32_t in = q->value >= 0 && q->value < g->nvalues ? v2i[q->value] : -1;
        switch (q->kind) {
        case JN_IR_G_SYM:
            if (q->sym >= 0 && q->sym < g->nsyms) G->sym_guard[q->sym] = k;
            break;
        case JN_IR_G_DIM:
            if (in >= 0 && q->dim >= 0 && q->dim < JN_MAX_DIMS) G->dim_guard[in * JN_MAX_DIMS + q->dim] = k;
            break;
        case JN_IR_G_DTYPE: if (in >= 0) G->in_guard[in * GI_N + GI_DTYPE] = k; break;
        case JN_IR_G_DEVICE: if (in >= 0) G->in_guard[in * GI_N + GI_DEVICE] = k; break;
        case JN_IR_G_BIND: if (in >= 0) G->in_guard[in * GI_N + GI_BIND] = k; break;
        case JN_IR_G_SCALAR: if (in >= 0) G->in_guard[in * GI_N + GI_SCALAR] = k; break;
        case JN_IR_G_PYTYPE: if (in >= 0) G->in_guard[in * GI_N + GI_PYTYPE] = k; break;
        default: break;
        }
    }
    /* a loop's TRIP guard: the one on the IR loop with the same number and
     * trip, else one on another loop with the same trip (the passes
     * renumber loops and drop emptied ones, never change trip expressions) */
    for (int32_t l = 0; l < G->nloop; l++) {
        int32_t il = G->loop[l].guard, same = -1, other = -1;
        for (int32_t k = 0; k < g->nguards; k++) {
            const jn_ir_guard *q = &g->guards[k];
            if (q->kind != JN_IR_G_TRIP || q->loop < 0 || q->loop >= g->nloops ||
                g->loops[q->loop].trip != G->loop[l].trip)
                continue;
            if (q->loop == il) same = k;
            else if (other < 0) other = k;
        }
        G->loop[l].guard = same >= 0 ? same : other;
        /* a loop the passes dropped (an unbind's selects: its collect is the
         * input itself) takes its trip's symbols' guards */
        G->loop[l].open = G->loop[l].guard < 0 && syms_seen(G, G->loop[l].trip, 0);
    }
    free(v2i);
    return JN_OK;
}

static jn_status read_graph(rd *r, const jn_ir_module *m, mgraph *G, const uint8_t *seen) {
    int32_t gi = (int32_t)get(r, 4, "a graph header");
    G->entry = (uint8_t)get(r, 1, "a graph header");
    G->ntok = (int32_t)get(r, 4, "a graph header");
    G->nloop = (int32_t)get(r, 4, "a graph header");
    if (r->bad) return bad(-1, "truncated in %s", r->what);
    if (gi < 0 || gi >= m->ngraphs) return bad(-1, "%s", "a graph index is out of range");
    if (G->entry > JN_SYNC_LAST) return bad(gi, "%s", "unknown entry kind");
    if (seen[gi]) return bad(gi, "%s", "the graph is listed twice");
    G->gi = gi;
    const jn_ir_graph *g = G->g = m->graphs[gi];
    if (G->ntok <= 0 || G->ntok > (int32_t)(r->n / 8) || G->nloop < 0 || G->nloop > G->ntok)
        return bad(gi, "%s", "token or loop count out of range");
    G->tok = calloc((size_t)G->ntok, sizeof *G->tok);
    G->loop = calloc((size_t)G->nloop + 1, sizeof *G->loop);
    if (!G->tok || !G->loop) return jn_error(JN_ERR_NOMEM, "out of memory loading the matcher");
    for (int32_t l = 0; l < G->nloop; l++) {
        mloop *L = &G->loop[l];
        L->first = (int32_t)get(r, 4, "a loop");
        L->count = (int32_t)get(r, 4, "a loop");
        L->trip = (jn_ir_dim)get(r, 8, "a loop");
        L->ivar = (int32_t)get(r, 4, "a loop");
        L->lo = (int64_t)get(r, 8, "a loop");
        L->hi = (int64_t)get(r, 8, "a loop");
        L->guard = (int32_t)get(r, 4, "a loop"); /* the IR loop, until the guard index below */
        if (r->bad) return bad(gi, "truncated in %s", r->what);
        if (L->first < 0 || L->count <= 0 || L->first > G->ntok - L->count || !dim_ok(g, L->trip) || L->ivar < 0 ||
            L->ivar >= g->nsyms || L->lo > L->hi || (l && L->first < G->loop[l - 1].first + G->loop[l - 1].count))
            return bad(gi, "%s", "a loop is out of range");
    }
    for (int32_t t = 0; t < G->ntok; t++) {
        mtok *T = &G->tok[t];
        char name[64];
        size_t ln = (size_t)get(r, 2, "an op name");
        if (r->bad || ln >= sizeof name || r->n - r->at < ln) return bad(gi, "%s", "truncated in an op name");
        memcpy(name, r->p + r->at, ln);
        name[ln] = 0;
        r->at += ln;
        int op = jn_op_lookup(name);
        if (op < 0) {
            char b[128];
            snprintf(b, sizeof b, "op '%s' is unknown to this janus", name);
            return bad(gi, "%s", b);
        }
        T->op = (jn_op)op;
        const jn_opinfo *info = jn_op_info(T->op);
        T->nin = (uint8_t)get(r, 1, "a token");
        T->nout = (uint8_t)get(r, 1, "a token");
        T->flags = (uint8_t)get(r, 1, "a token");
        T->loop = (int32_t)get(r, 4, "a token");
        T->site = (int64_t)get(r, 8, "a token");
        T->nattrs = (uint8_t)get(r, 1, "a token");
        if (r->bad) return bad(gi, "truncated in %s", r->what);
        if (T->nout < 1 || T->nout > JN_MAX_OUTS || T->nattrs != info->nattrs || (T->flags & ~3) ||
            T->loop < -1 || T->loop >= G->nloop)
            return bad(gi, "%s", "a token does not fit its op");
        int inl = T->loop >= 0 && t >= G->loop[T->loop].first && t < G->loop[T->loop].first + G->loop[T->loop].count;
        int anyl = 0;
        for (int32_t l = 0; l < G->nloop; l++)
            anyl |= t >= G->loop[l].first && t < G->loop[l].first + G->loop[l].count;
        if ((T->loop >= 0) != inl || (T->loop < 0 && anyl)) return bad(gi, "%s", "a token's loop is wrong");
        for (int k = 0; k < T->nattrs; k++) {
            T->akind[k] = (char)get(r, 1, "an attribute");
            T->fin[k] = -1;
            if (T->akind[k] != info->attr_kind[k] && !r->bad) return bad(gi, "%s", "an attribute kind is wrong");
            if (T->akind[k] == JN_A_INTS) {
                T->attr[k].l.n = (int)get(r, 1, "an attribute");
                if (T->attr[k].l.n > JN_MAX_DIMS) return bad(gi, "%s", "an int list is too long");
                for (int j = 0; j < T->attr[k].l.n; j++) {
                    T->attr[k].l.v[j] = (int64_t)get(r, 8, "an attribute");
                    if (!dim_ok(g, T->attr[k].l.v[j])) return bad(gi, "%s", "an attribute names no expression");
                }
            } else if (T->akind[k] == JN_A_FLOAT) {
                uint64_t u = get(r, 8, "an attribute");
                memcpy(&T->attr[k].f, &u, 8);
                T->fin[k] = (int32_t)get(r, 4, "an attribute");
                if (T->fin[k] != -1 && !scalar_input(g, T->fin[k]) && !r->bad)
                    return bad(gi, "%s", "a float attribute names no scalar input");
            } else {
                T->attr[k].i = (int64_t)get(r, 8, "an attribute");
                if (T->akind[k] == JN_A_INT && !dim_ok(g, T->attr[k].i))
                    return bad(gi, "%s", "an attribute names no expression");
            }
        }
        if (r->bad) return bad(gi, "truncated in %s", r->what);
        int nref = T->flags & JN_IR_MT_COLLECT ? 1 : T->nin;
        if (!(T->in = calloc((size_t)nref + 1, sizeof *T->in)))
            return jn_error(JN_ERR_NOMEM, "out of memory loading the matcher");
        for (int j = 0; j < nref; j++) {
            const char *w = read_ref(r, G, &T->in[j]);
            if (r->bad) return bad(gi, "truncated in %s", r->what);
            if (w) return bad(gi, "%s", w);
        }
        for (int k = 0; k < T->nout; k++) {
            uint8_t nf = (uint8_t)get(r, 1, "an output");
            if (nf & ~(JN_IR_MO_NEW | JN_IR_MO_ALL) && !r->bad) return bad(gi, "%s", "an output has unknown flags");
            T->out_new[k] = nf & JN_IR_MO_NEW;
            T->out_all[k] = (nf & JN_IR_MO_ALL) != 0;
            G->any_all |= T->out_all[k];
            if (!T->out_new[k]) {
                const char *w = read_ref(r, G, &T->out[k]);
                if (r->bad) return bad(gi, "truncated in %s", r->what);
                if (w) return bad(gi, "%s", w);
                if (T->out[k].kind == JN_IR_MR_SCALAR) return bad(gi, "%s", "an in-place write into a scalar");
            }
            T->gout[k] = (int32_t)get(r, 4, "an output");
            if (r->bad) return bad(gi, "truncated in %s", r->what);
            if (T->gout[k] < -1 || T->gout[k] >= g->noutputs) return bad(gi, "%s", "an output index is out of range");
            T->ondim[k] = (uint8_t)get(r, 1, "an output shape");
            if (!r->bad && T->ondim[k] > JN_MAX_DIMS) return bad(gi, "%s", "an output shape has too many dims");
            for (int d = 0; d < T->ondim[k] && !r->bad; d++) {
                T->oshape[k][d] = (jn_ir_dim)get(r, 8, "an output shape");
                if (!r->bad && !dim_ok(g, T->oshape[k][d])) return bad(gi, "%s", "an output shape names no expression");
            }
            if (r->bad) return bad(gi, "truncated in %s", r->what);
            /* a collect of the loop token's objects: [trip, ...] of the object's shape */
            if (T->out_all[k] && (!T->out_new[k] || T->loop < 0 || T->gout[k] < 0 ||
                                  g->values[g->outputs[T->gout[k]].value].ndim != T->ondim[k] + 1))
                return bad(gi, "%s", "an output collecting a loop's objects is no loop token's collect");
        }
    }
    for (int32_t t = 0; t < G->ntok; t++) {
        const mtok *T = &G->tok[t];
        const char *w = NULL;
        if (T->flags & JN_IR_MT_COLLECT) {
            if (T->in[0].kind != JN_IR_MR_TOKEN || G->tok[T->in[0].a].loop < 0 || T->in[0].mode != 0 || T->loop >= 0 ||
                T->in[0].a >= t || T->in[0].b >= G->tok[T->in[0].a].nout)
                w = "a collecting token names no loop value";
        } else {
            for (int j = 0; j < T->nin && !w; j++) w = check_ref(G, t, &T->in[j]);
        }
        for (int k = 0; k < T->nout && !w; k++)
            if (!T->out_new[k]) w = check_ref(G, t, &T->out[k]);
        if (w) return bad(gi, "%s", w);
    }
    const char *w = index_each(G);
    if (w) return bad(gi, "%s", w);
    return index_guards(G);
}

static void cursor_free(mcur *C) {
    if (!C) return;
    free(C->syms), free(C->sbound), free(C->ibound), free(C->in_id), free(C->in_val), free(C->in_ev), free(C->in_arg);
    free(C->in_it), free(C->in_prev);
    free(C->loop_start), free(C->loop_trip), free(C->tok_ev), free(C->xp);
    free(C);
}

/* ------------------------------------------------------ state tensors */
static int64_t sb_home(const sbind *S, uint64_t id) {
    return (int64_t)((id * 0x9E3779B97F4A7C15ull) >> 29) & (S->nslot - 1);
}

static int cmp_i64(const void *a, const void *b) {
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

/* The recorded ids of every graph's bound state inputs, once each, and per
 * input its index (at load). */
static jn_status index_state(jn_rp_matcher *mt) {
    sbind *S = &mt->sb;
    int64_t n = 0;
    for (int32_t k = 0; k < mt->ngr; k++) {
        const jn_ir_graph *g = mt->gr[k].g;
        for (int32_t i = 0; i < g->ninputs; i++) n += g->inputs[i].kind == JN_IR_IN_STATE && g->inputs[i].bind;
    }
    S->nslot = 16;
    while (S->nslot < 2 * n + 2) S->nslot *= 2;
    S->rec = malloc(sizeof *S->rec * (size_t)(n + 1));
    S->kgen = calloc((size_t)n + 1, sizeof *S->kgen);
    S->kid = calloc((size_t)n + 1, sizeof *S->kid);
    S->hkey = calloc((size_t)S->nslot, sizeof *S->hkey);
    S->hval = calloc((size_t)S->nslot, sizeof *S->hval);
    S->hgen = calloc((size_t)S->nslot, sizeof *S->hgen);
    if (!S->rec || !S->kgen || !S->kid || !S->hkey || !S->hval || !S->hgen)
        return jn_error(JN_ERR_NOMEM, "out of memory loading the matcher");
    n = 0;
    for (int32_t k = 0; k < mt->ngr; k++) {
        const jn_ir_graph *g = mt->gr[k].g;
        for (int32_t i = 0; i < g->ninputs; i++)
            if (g->inputs[i].kind == JN_IR_IN_STATE && g->inputs[i].bind) S->rec[n++] = g->inputs[i].bind;
    }
    qsort(S->rec, (size_t)n, sizeof *S->rec, cmp_i64);
    S->n = 0;
    for (int64_t i = 0; i < n; i++)
        if (!S->n || S->rec[S->n - 1] != S->rec[i]) S->rec[S->n++] = S->rec[i];
    for (int32_t k = 0; k < mt->ngr; k++) {
        mgraph *G = &mt->gr[k];
        const jn_ir_graph *g = G->g;
        if (!(G->in_sb = malloc(sizeof *G->in_sb * ((size_t)g->ninputs + 1))))
            return jn_error(JN_ERR_NOMEM, "out of memory loading the matcher");
        for (int32_t i = 0; i < g->ninputs; i++) {
            const int64_t *at = NULL;
            if (g->inputs[i].kind == JN_IR_IN_STATE && g->inputs[i].bind)
                at = bsearch(&g->inputs[i].bind, S->rec, (size_t)S->n, sizeof *S->rec, cmp_i64);
            G->in_sb[i] = at ? (int32_t)(at - S->rec) : -1;
        }
    }
    return JN_OK;
}

void jn_rp_match_free(jn_rp_matcher *mt) {
    if (!mt) return;
    for (int32_t i = 0; i < mt->ngr; i++) graph_free(&mt->gr[i]);
    for (int32_t k = 0; k < mt->nalive; k++) cursor_free(mt->alive[k]);
    for (int32_t k = 0; k < mt->npool; k++) cursor_free(mt->pool[k]);
    free(mt->gr), free(mt->by_graph), free(mt->start), free(mt->start0), free(mt->alive), free(mt->ev_ids);
    free(mt->ev_tok);
    free(mt->sb.rec), free(mt->sb.kgen), free(mt->sb.kid), free(mt->sb.hkey), free(mt->sb.hval), free(mt->sb.hgen);
    free(mt);
}

void jn_rp_match_dump(const jn_rp_matcher *mt, FILE *f) {
    for (int32_t k = 0; k < mt->ngr; k++) {
        const mgraph *G = &mt->gr[k];
        for (int32_t t = 0; t < G->ntok; t++) {
            const mtok *T = &G->tok[t];
            fprintf(f, "g%d t%d %s loop=%d nin=%d flags=%d", G->gi, t, jn_op_info(T->op)->name, T->loop, T->nin, T->flags);
            for (int j = 0; j < (T->flags & 2 ? 1 : T->nin); j++)
                fprintf(f, " [k%d a%d b%d m%d c%lld]", T->in[j].kind, T->in[j].a, T->in[j].b, T->in[j].mode,
                        (long long)T->in[j].c);
            fprintf(f, "\n");
        }
    }
}

jn_status jn_rp_match_new(const jn_ir_module *m, const void *sec, size_t len, jn_rp_matcher **out) {
    if (!out) return jn_error(JN_ERR_VALUE, "jn_rp_match_new: NULL output pointer");
    *out = NULL;
    if (!m) return jn_error(JN_ERR_VALUE, "jn_rp_match_new: NULL module");
    if (!sec || len < 12) return bad(-1, "%s", "truncated header");
    rd r = {sec, len, 0, 0, NULL};
    if (memcmp(sec, JN_IR_MATCH_MAGIC, 4)) return bad(-1, "%s", "no JNMT magic");
    r.at = 4;
    uint32_t ver = (uint32_t)get(&r, 4, "the header"), ng = (uint32_t)get(&r, 4, "the header");
    if (ver != JN_IR_MATCH_VERSION)
        return jn_error(JN_ERR_VALUE, "the bundle's matcher section has format version %u, this janus reads %d; "
                        "run `janus optimize` again with this janus", ver, JN_IR_MATCH_VERSION);
    if (ng > (uint32_t)m->ngraphs) return bad(-1, "%s", "more graphs than the module has");
    jn_rp_matcher *mt = calloc(1, sizeof *mt);
    if (!mt) return jn_error(JN_ERR_NOMEM, "out of memory loading the matcher");
    mt->m = m;
    mt->gr = calloc((size_t)ng + 1, sizeof *mt->gr);
    mt->by_graph = malloc(sizeof(int32_t) * ((size_t)m->ngraphs + 1));
    mt->alive = malloc(sizeof *mt->alive * MAX_CURSORS);
    uint8_t *seen = calloc((size_t)m->ngraphs + 1, 1);
    jn_status s = JN_OK;
    if (!mt->gr || !mt->by_graph || !mt->alive || !seen) s = jn_error(JN_ERR_NOMEM, "out of memory loading the matcher");
    for (int32_t i = 0; !s && i < m->ngraphs; i++) mt->by_graph[i] = -1;
    for (uint32_t k = 0; k < ng && !s; k++) {
        mgraph *G = &mt->gr[mt->ngr++];
        if (!(s = read_graph(&r, m, G, seen))) {
            seen[G->gi] = 1;
            mt->by_graph[G->gi] = (int32_t)k;
        }
    }
    free(seen);
    if (!s && r.at != r.n) s = bad(-1, "%s", "trailing bytes");
    /* per op: the graphs that start with it */
    if (!s) {
        mt->start0 = calloc((size_t)JN_NOPS + 2, sizeof *mt->start0);
        mt->start = malloc(sizeof(int32_t) * ((size_t)mt->ngr + 1));
        if (!mt->start0 || !mt->start) s = jn_error(JN_ERR_NOMEM, "out of memory loading the matcher");
    }
    if (!s) {
        for (int32_t i = 0; i < mt->ngr; i++) mt->start0[mt->gr[i].tok[0].op + 1]++;
        for (int op = 0; op < JN_NOPS; op++) mt->start0[op + 1] += mt->start0[op];
        int32_t *fill = calloc((size_t)JN_NOPS + 1, sizeof *fill);
        if (!fill) s = jn_error(JN_ERR_NOMEM, "out of memory loading the matcher");
        for (int32_t i = 0; !s && i < mt->ngr; i++) {
            jn_op op = mt->gr[i].tok[0].op;
            mt->start[mt->start0[op] + fill[op]++] = i;
        }
        free(fill);
    }
    if (!s) s = index_state(mt);
    /* the cursor pool, each sized for the largest program */
    int64_t ms = 1, mi = 1, ml = 1, mtk = 1, mg = 1;
    for (int32_t i = 0; !s && i < mt->ngr; i++) {
        const mgraph *G = &mt->gr[i];
        if (G->g->nguards > mg) mg = G->g->nguards;
        if (G->g->nsyms > ms) ms = G->g->nsyms;
        if (G->g->ninputs > mi) mi = G->g->ninputs;
        if (G->nloop > ml) ml = G->nloop;
        if (G->ntok > mtk) mtk = G->ntok;
    }
    for (int k = 0; !s && k < MAX_CURSORS; k++) {
        mcur *C = calloc(1, sizeof *C);
        if (C) {
            mt->pool[mt->npool++] = C;
            C->syms = calloc((size_t)ms, sizeof *C->syms);
            C->sbound = calloc((size_t)ms, 1);
            C->ibound = calloc((size_t)mi, 1);
            C->in_id = calloc((size_t)mi, sizeof *C->in_id);
            C->in_val = calloc((size_t)mi, sizeof *C->in_val);
            C->in_ev = calloc((size_t)mi, sizeof *C->in_ev);
            C->in_arg = calloc((size_t)mi, sizeof *C->in_arg);
            C->in_it = calloc((size_t)mi, sizeof *C->in_it);
            C->in_prev = calloc((size_t)mi, sizeof *C->in_prev);
            C->loop_start = calloc((size_t)ml, sizeof *C->loop_start);
            C->loop_trip = calloc((size_t)ml, sizeof *C->loop_trip);
            C->tok_ev = calloc((size_t)mtk, sizeof *C->tok_ev);
            C->xp = calloc((size_t)mg, sizeof *C->xp);
        }
        if (!C || !C->syms || !C->sbound || !C->ibound || !C->in_id || !C->in_val || !C->in_ev || !C->in_arg || !C->in_it || !C->in_prev || !C->loop_start ||
            !C->loop_trip || !C->tok_ev || !C->xp)
            s = jn_error(JN_ERR_NOMEM, "out of memory loading the matcher");
    }
    if (s) {
        jn_rp_match_free(mt);
        return s;
    }
    mt->miss_graph = -1;
    mt->entry = -1;
    *out = mt;
    return JN_OK;
}

int32_t jn_rp_match_ngraphs(const jn_rp_matcher *mt) { return mt ? mt->ngr : 0; }

int32_t jn_rp_match_alive(const jn_rp_matcher *mt, int32_t *graphs, int32_t max) {
    int32_t n = 0;
    for (int32_t k = 0; mt && !mt->missed && k < mt->nalive; k++) {
        int32_t gi = mt->alive[k]->P->gi, seen = 0;
        for (int32_t j = 0; j < n && !seen; j++) seen = graphs[j] == gi;
        if (!seen && n < max) graphs[n++] = gi;
    }
    return n;
}

int32_t jn_rp_match_ntokens(const jn_rp_matcher *mt, int32_t gi) {
    if (!mt || gi < 0 || gi >= mt->m->ngraphs || mt->by_graph[gi] < 0) return -1;
    return mt->gr[mt->by_graph[gi]].ntok;
}

int jn_rp_match_collects_all(const jn_rp_matcher *mt, int32_t gi) {
    return jn_rp_match_ntokens(mt, gi) >= 0 && mt->gr[mt->by_graph[gi]].any_all;
}

int jn_rp_match_input_each(const jn_rp_matcher *mt, int32_t gi, int32_t i, int32_t *tok, int *arg) {
    if (jn_rp_match_ntokens(mt, gi) < 0) return 0;
    const mgraph *G = &mt->gr[mt->by_graph[gi]];
    if (i < 0 || i >= G->g->ninputs || G->each_tok[i] < 0) return 0;
    *tok = G->each_tok[i];
    *arg = G->each_arg[i];
    return 1;
}

int32_t jn_rp_match_token_output(const jn_rp_matcher *mt, int32_t gi, int32_t tok, int k, int *all) {
    *all = 0;
    if (jn_rp_match_ntokens(mt, gi) <= tok || tok < 0 || k < 0 || k >= JN_MAX_OUTS) return -1;
    const mtok *T = &mt->gr[mt->by_graph[gi]].tok[tok];
    if (k >= T->nout || !T->out_new[k]) return -1;
    *all = T->out_all[k];
    return T->gout[k];
}

/* ------------------------------------------------------------ cursor */
static int fail(mcur *G, int code, int32_t arg, int32_t guard, double seen, double want) {
    G->fail.code = code;
    G->fail.tok = G->pos;
    G->fail.arg = arg;
    G->fail.guard = guard;
    G->fail.seen = seen;
    G->fail.want = want;
    return 0;
}

/* Value of dim d, 1 when known (every symbol in it bound). */
static int eval(const mcur *G, jn_ir_dim d, int64_t *v, int depth) {
    if (!jn_ir_is_expr(d)) {
        *v = d;
        return 1;
    }
    if (depth > 256) return 0;
    const jn_ir_expr *e = &G->P->g->exprs[jn_ir_expr_index(d)];
    if (e->kind == JN_IR_E_SYM) {
        if (!G->sbound[e->sym]) return 0;
        *v = G->syms[e->sym];
        return 1;
    }
    int64_t a, b;
    if (!eval(G, e->a, &a, depth + 1) || !eval(G, e->b, &b, depth + 1)) return 0;
    switch (e->kind) {
    case JN_IR_E_ADD: *v = (int64_t)((uint64_t)a + (uint64_t)b); return 1;
    case JN_IR_E_SUB: *v = (int64_t)((uint64_t)a - (uint64_t)b); return 1;
    case JN_IR_E_MUL: *v = (int64_t)((uint64_t)a * (uint64_t)b); return 1;
    case JN_IR_E_FLOORDIV:
        if (b == 0 || (a == INT64_MIN && b == -1)) return 0;
        *v = a / b - ((a % b != 0) && ((a < 0) != (b < 0)));
        return 1;
    default: return 0;
    }
}

/* Are loop L's recorded trips no limit?  Its TRIP guard is SEEN (read
 * each time: a test narrows a module's guards after loading), or it has
 * none and its trip's symbols are open (mloop.open). */
static int loop_open(const mcur *G, const mloop *L) {
    return L->guard >= 0 ? G->P->g->guards[L->guard].cls == JN_IR_GC_SEEN : L->open;
}

/* SEEN guard k did not hold (value v): the run goes on past the recorded
 * range, noted once per guard for the result. */
static void extrapolate(mcur *G, int32_t k, int64_t v) {
    for (int32_t i = 0; i < G->nxp; i++)
        if (G->xp[i].guard == k) return;
    if (G->nxp < G->P->g->nguards) G->xp[G->nxp++] = (jn_rp_match_extrap){k, (double)v};
}

static int bind_sym(mcur *G, int32_t s, int64_t v, int32_t arg) {
    int32_t k = G->P->sym_guard[s];
    if (k >= 0) {
        const jn_ir_guard *q = &G->P->g->guards[k];
        if (v < q->lo || v > q->hi) {
            if (q->cls == JN_IR_GC_SEEN) {
                extrapolate(G, k, v);
            } else {
                fail(G, F_SYM, arg, k, (double)v, 0);
                G->fail.sym = s;
                return 0;
            }
        }
    }
    G->syms[s] = v;
    G->sbound[s] = 1;
    return 1;
}

/* Does seen fit dim d?  Binds an unbound symbol that d is, or is linear in. */
static int match_dim(mcur *G, jn_ir_dim d, int64_t seen, int32_t arg, int32_t dimguard) {
    if (!jn_ir_is_expr(d)) return d == seen || fail(G, F_DIM, arg, dimguard, (double)seen, (double)d);
    int64_t v;
    if (eval(G, d, &v, 0)) {
        if (v == seen) return 1;
        const jn_ir_expr *e = &G->P->g->exprs[jn_ir_expr_index(d)];
        int32_t s = e->kind == JN_IR_E_SYM ? e->sym : -1;
        fail(G, F_SYMBIND, arg, s >= 0 ? G->P->sym_guard[s] : -1, (double)seen, (double)v);
        G->fail.sym = s;
        return 0;
    }
    const jn_ir_expr *e = &G->P->g->exprs[jn_ir_expr_index(d)];
    if (e->kind == JN_IR_E_SYM) return bind_sym(G, e->sym, seen, arg);
    /* s op c or c op s with one unknown symbol s */
    jn_ir_dim sa = e->a, sb = e->b;
    int64_t c;
    int left = jn_ir_is_expr(sa) && G->P->g->exprs[jn_ir_expr_index(sa)].kind == JN_IR_E_SYM && eval(G, sb, &c, 0);
    int right = !left && jn_ir_is_expr(sb) && G->P->g->exprs[jn_ir_expr_index(sb)].kind == JN_IR_E_SYM &&
                eval(G, sa, &c, 0);
    if (left || right) {
        int32_t s = G->P->g->exprs[jn_ir_expr_index(left ? sa : sb)].sym;
        int64_t x = 0;
        int ok = 1;
        /* wrapping arithmetic: seen is whatever the script passed */
        switch (e->kind) {
        case JN_IR_E_ADD: x = (int64_t)((uint64_t)seen - (uint64_t)c); break;
        case JN_IR_E_SUB:
            x = left ? (int64_t)((uint64_t)seen + (uint64_t)c) : (int64_t)((uint64_t)c - (uint64_t)seen);
            break;
        case JN_IR_E_MUL:
            ok = c != 0 && !(c == -1 && seen == INT64_MIN) && seen % c == 0;
            x = ok ? seen / c : 0;
            break;
        default: ok = 0;
        }
        if (ok) {
            if (!bind_sym(G, s, x, arg)) return 0;
            if (eval(G, d, &v, 0) && v == seen) return 1;
        }
    }
    return fail(G, F_SYMBIND, arg, -1, (double)seen, 0);
}

/* a's dtype, device and shape against tensor input i's, from its dim d0
 * on (1: a stacked input's element; its dim 0 is the loop's trip). */
static int input_type(mcur *G, int32_t i, const jn_rp_match_arg *a, int32_t arg, int d0) {
    const jn_ir_value *v = &G->P->g->values[G->P->g->inputs[i].value];
    const int32_t *gg = &G->P->in_guard[i * GI_N];
    if (a->dtype != v->dtype) return fail(G, F_DTYPE, arg, gg[GI_DTYPE], a->dtype, v->dtype);
    if (a->device != v->device) return fail(G, F_DEVICE, arg, gg[GI_DEVICE], a->device, v->device);
    if (a->ndim + d0 != v->ndim) return fail(G, F_RANK, arg, -1, a->ndim, v->ndim - d0);
    for (int d = d0; d < v->ndim; d++)
        if (!match_dim(G, v->shape[d], a->shape[d - d0], arg, G->P->dim_guard[i * JN_MAX_DIMS + d])) return 0;
    return 1;
}

static int bind_input(mcur *G, int32_t i, const jn_rp_match_arg *a, int32_t arg) {
    if (a->pytype) return fail(G, F_NOTTENSOR, arg, -1, a->scalar, 0);
    if (G->ibound[i]) return G->in_id[i] == a->id || fail(G, F_IDENT, arg, -1, (double)a->id, (double)G->in_id[i]);
    if (!input_type(G, i, a, arg, 0)) return 0;
    G->ibound[i] = 1;
    G->in_ev[i] = G->done;
    G->in_arg[i] = arg;
    G->in_id[i] = a->id;
    return 1;
}

/* Iteration G->it's tensor of stacked input i: its first read in the
 * iteration binds it (dtype, device, the element's rank and dims: dim 0 is
 * the loop's trip), every later read there is the same tensor.  in_ev /
 * in_arg keep the first binding (where a miss points); replay takes each
 * iteration's tensor from the first reader's events (jn_rp_match_input_each). */
static int bind_each(mcur *G, int32_t i, const jn_rp_match_arg *a, int32_t arg) {
    if (a->pytype) return fail(G, F_NOTTENSOR, arg, -1, a->scalar, 0);
    if (G->in_it[i] == G->it) return G->in_id[i] == a->id || fail(G, F_IDENT, arg, -1, (double)a->id, (double)G->in_id[i]);
    if (!input_type(G, i, a, arg, 1)) return 0;
    if (!G->ibound[i]) G->in_ev[i] = G->done, G->in_arg[i] = arg;
    G->ibound[i] = 1;
    G->in_prev[i] = G->in_it[i] == G->it - 1 ? G->in_id[i] : 0;
    G->in_it[i] = G->it;
    G->in_id[i] = a->id;
    return 1;
}

/* Stacked input i's last element, read after its loop (an END read). */
static int last_each(mcur *G, int32_t i, const jn_rp_match_arg *a, int32_t arg) {
    if (a->pytype) return fail(G, F_NOTTENSOR, arg, -1, a->scalar, 0);
    int32_t l = G->P->tok[G->P->each_tok[i]].loop;
    uint64_t want = G->loop_trip[l] >= 1 && G->in_it[i] == G->loop_trip[l] - 1 ? G->in_id[i] : 0;
    return (want && want == a->id) || fail(G, F_IDENT, arg, -1, (double)a->id, (double)want);
}

/* Stacked input i's element G->it - 1 (a PREV read; iteration 0 reads the
 * ref's init instead, bind_input). */
static int prev_each(mcur *G, int32_t i, const jn_rp_match_arg *a, int32_t arg) {
    if (a->pytype) return fail(G, F_NOTTENSOR, arg, -1, a->scalar, 0);
    uint64_t want = G->in_it[i] == G->it ? G->in_prev[i] : G->in_it[i] == G->it - 1 ? G->in_id[i] : 0;
    return (want && want == a->id) || fail(G, F_IDENT, arg, -1, (double)a->id, (double)want);
}

static int match_scalar(mcur *G, int32_t i, double x, int pytype, int32_t arg) {
    const jn_ir_input *in = &G->P->g->inputs[i];
    const int32_t *gg = &G->P->in_guard[i * GI_N];
    if (pytype != in->pytype) return fail(G, F_PYTYPE, arg, gg[GI_PYTYPE], pytype, in->pytype);
    if (in->kind == JN_IR_IN_CONST) {
        if (x == in->scalar || (isnan(x) && isnan(in->scalar))) return 1;
        return fail(G, F_SCALAR, arg, gg[GI_SCALAR], x, in->scalar);
    }
    if (G->ibound[i]) {
        if (x == G->in_val[i] || (isnan(x) && isnan(G->in_val[i]))) return 1;
        return fail(G, F_SCALARVAR, arg, -1, x, G->in_val[i]);
    }
    G->ibound[i] = 1;
    G->in_ev[i] = G->done;
    G->in_arg[i] = arg;
    G->in_val[i] = x;
    return 1;
}

/* The iteration of loop token t's object the ref says (INT64_MIN: its
 * loop's trip is not known yet). */
static int64_t ref_iter(const mcur *G, int32_t t, uint8_t mode, int64_t c, int32_t reader) {
    int32_t l = G->P->tok[t].loop;
    int64_t rit = G->P->tok[reader].loop >= 0 ? G->it : 0;
    switch (mode & 0xf) {
    case JN_IR_MM_SAME: return G->it;
    case JN_IR_MM_PREV: return G->it - 1;
    case JN_IR_MM_ABS: return c + ((mode & JN_IR_MM_REL) ? rit : 0);
    case JN_IR_MM_END:
        if (G->loop_trip[l] < 0) return INT64_MIN;
        return G->loop_trip[l] - 1 - c - ((mode & JN_IR_MM_REL) ? rit : 0);
    default: return INT64_MIN;
    }
}

/* Event index of token t's object in the iteration the ref says (-1 none). */
static int64_t ref_event(const mcur *G, int32_t t, uint8_t mode, int64_t c, int32_t reader) {
    const mtok *T = &G->P->tok[t];
    if (T->loop < 0) return G->tok_ev[t];
    const mloop *L = &G->P->loop[T->loop];
    int64_t itc = ref_iter(G, t, mode, c, reader);
    int64_t done = G->loop_trip[T->loop] >= 0 ? G->loop_trip[T->loop]
                   : G->cur_loop == T->loop ? G->it + 1 : 0;
    if (itc < 0 || itc >= done) return -1;
    return G->loop_start[T->loop] + itc * L->count + (t - L->first);
}

/* Ref r names its init now: a carry in iteration 0, a seeded cross-loop
 * read at its source loop's iteration -1. */
static int takes_init(const mcur *G, const mref *r, int32_t reader) {
    if ((r->mode & 0xf) == JN_IR_MM_PREV) return G->it == 0;
    return (r->mode & JN_IR_MM_SEED) && ref_iter(G, r->a, r->mode, r->c, reader) == -1;
}

/* Expected identity for a token ref: 1 and *id, or 0. */
static int ref_id(const jn_rp_matcher *mt, const mcur *G, const mref *r, int32_t reader, uint64_t *id) {
    int64_t e;
    if (r->has_init && takes_init(G, r, reader)) {
        if (r->ikind == JN_IR_MR_INPUT) {
            if (!G->ibound[r->ia]) return 0;
            *id = G->in_id[r->ia];
            return 1;
        }
        /* read as if just before the loop: the reader's (PREV), the source's (SEED) */
        int32_t l = G->P->tok[(r->mode & 0xf) == JN_IR_MM_PREV ? reader : r->a].loop;
        e = ref_event(G, r->ia, r->imode & ~JN_IR_MM_REL, r->ic, G->P->loop[l].first);
        if (e < 0 || e >= mt->nev) return 0;
        *id = mt->ev_ids[e * JN_MAX_OUTS + r->ib];
        return 1;
    }
    e = ref_event(G, r->a, r->mode, r->c, reader);
    if (e < 0 || e >= mt->nev) return 0;
    *id = mt->ev_ids[e * JN_MAX_OUTS + r->b];
    return 1;
}

/* A tensor argument against ref r (input or in-place output). */
static int match_tensor(const jn_rp_matcher *mt, mcur *G, const mref *r, const jn_rp_match_arg *a, int32_t arg) {
    if (r->kind == JN_IR_MR_INPUT) {
        if (r->mode == JN_IR_MM_PREV) return G->it == 0 ? bind_input(G, r->ia, a, arg) : prev_each(G, r->a, a, arg);
        if (r->mode == JN_IR_MM_END) return last_each(G, r->a, a, arg);
        return r->mode ? bind_each(G, r->a, a, arg) : bind_input(G, r->a, a, arg);
    }
    if (r->has_init && r->ikind == JN_IR_MR_INPUT && takes_init(G, r, G->pos)) return bind_input(G, r->ia, a, arg);
    if (a->pytype) return fail(G, F_NOTTENSOR, arg, -1, a->scalar, 0);
    uint64_t id;
    if (!ref_id(mt, G, r, G->pos, &id)) return fail(G, F_IDENT, arg, -1, (double)a->id, -1);
    return id == a->id || fail(G, F_IDENT, arg, -1, (double)a->id, (double)id);
}

/* skip: checks that hold by construction (jn_rp_match_known: bit j < 63 input j's
 * identity, JN_RP_MATCH_KNOWN_ATTRS every attribute); 0 on every path but feed_at's. */
static inline int match_tok(const jn_rp_matcher *mt, mcur *G, const jn_rp_match_event *ev, uint64_t skip) {
    const mtok *T = &G->P->tok[G->pos];
    if (T->op != ev->op) return fail(G, F_OP, -1, -1, ev->op, T->op);
    int collect = T->flags & JN_IR_MT_COLLECT;
    if (ev->nout != T->nout || (!collect && ev->nin != T->nin)) return fail(G, F_ARITY, -1, -1, ev->nin, T->nin);
    for (int k = 0; k < T->nattrs && !(skip & JN_RP_MATCH_KNOWN_ATTRS); k++) {
        const jn_attr *x = &ev->attrs[k], *y = &T->attr[k];
        switch (T->akind[k]) {
        case JN_A_INT:
            if (!match_dim(G, y->i, x->i, -100 - k, -1)) return 0;
            break;
        case JN_A_INTS:
            if (x->l.n != y->l.n) return fail(G, F_ATTR, -100 - k, -1, x->l.n, y->l.n);
            for (int j = 0; j < y->l.n; j++)
                if (!match_dim(G, y->l.v[j], x->l.v[j], -100 - k, -1)) return 0;
            break;
        case JN_A_FLOAT:
            if (T->fin[k] >= 0) {
                if (!match_scalar(G, T->fin[k], x->f, 2, -100 - k)) return 0;
            } else if (!(x->f == y->f || (isnan(x->f) && isnan(y->f)))) {
                return fail(G, F_ATTR, -100 - k, -1, x->f, y->f);
            }
            break;
        default:
            if (x->i != y->i) return fail(G, F_ATTR, -100 - k, -1, (double)x->i, (double)y->i);
        }
    }
    if (collect) {
        const mref *r = &T->in[0];
        int32_t l = G->P->tok[r->a].loop;
        if (G->loop_trip[l] < 0 || ev->nin != G->loop_trip[l]) return fail(G, F_ARITY, -1, -1, ev->nin, -1);
        const mloop *L = &G->P->loop[l];
        for (int j = 0; j < ev->nin; j++) {
            int64_t e = G->loop_start[l] + (int64_t)j * L->count + (r->a - L->first);
            if (ev->in[j].pytype || mt->ev_ids[e * JN_MAX_OUTS + r->b] != ev->in[j].id)
                return fail(G, F_IDENT, j, -1, (double)ev->in[j].id, (double)mt->ev_ids[e * JN_MAX_OUTS + r->b]);
        }
    } else {
        for (int j = 0; j < T->nin; j++) {
            const mref *r = &T->in[j];
            const jn_rp_match_arg *a = &ev->in[j];
            if (j < 63 && (skip >> j & 1)) continue; /* the tensor the ref names, by construction */
            if (r->kind == JN_IR_MR_SCALAR) {
                if (!a->pytype) return fail(G, F_NOTSCALAR, j, -1, 0, 0);
                if (!match_scalar(G, r->a, a->scalar, a->pytype, j)) return 0;
            } else if (!match_tensor(mt, G, r, a, j)) {
                return 0;
            }
        }
    }
    for (int k = 0; k < T->nout; k++)
        if (!T->out_new[k] && !match_tensor(mt, G, &T->out[k], &ev->out[k], -1 - k)) return 0;
    /* Output shapes (the dispatcher inferred them with the real values)
     * against the graph's: its kernels, views and memory plan compute with
     * these expressions, fitted to the recorded values; a relation that
     * does not hold here (a slice clamped at its tensor's end, a dim that
     * matched another by coincidence) is a miss, never a wrong number. */
    for (int k = 0; k < T->nout; k++) {
        const jn_rp_match_arg *o = &ev->out[k];
        if (o->ndim != T->ondim[k]) return fail(G, F_OUTRANK, -1 - k, -1, o->ndim, T->ondim[k]);
        for (int d = 0; d < o->ndim; d++) {
            jn_ir_dim x = T->oshape[k][d];
            if (!jn_ir_is_expr(x) ? x == o->shape[d] : match_dim(G, x, o->shape[d], -1 - k, -1)) continue;
            if (G->fail.code == F_SYM) return 0; /* a NEED range, explained as such */
            int64_t want = x;
            if (jn_ir_is_expr(x) && !eval(G, x, &want, 0)) want = -1;
            fail(G, F_OUTDIM, -1 - k, -1, (double)o->shape[d], (double)want);
            G->fail.dim = d;
            return 0;
        }
    }
    return 1;
}

/* Close loop l with it+1 iterations: bind the trip and check its range. */
static int close_loop(mcur *G) {
    const mloop *L = &G->P->loop[G->cur_loop];
    int64_t n = G->it + 1;
    G->loop_trip[G->cur_loop] = n;
    int32_t save = G->pos;
    G->pos = L->first;
    int64_t lo = L->lo, hi = L->hi;
    if (L->guard >= 0) lo = G->P->g->guards[L->guard].lo, hi = G->P->g->guards[L->guard].hi;
    int ok = n >= lo && n <= hi;
    if (!ok && loop_open(G, L)) { /* past the recorded trip counts: the loop runs trip times */
        if (L->guard >= 0) extrapolate(G, L->guard, n);
        ok = 1;
    }
    if (!ok) {
        const jn_ir_expr *e = jn_ir_is_expr(L->trip) ? &G->P->g->exprs[jn_ir_expr_index(L->trip)] : NULL;
        int32_t s = e && e->kind == JN_IR_E_SYM ? e->sym : -1;
        fail(G, F_TRIP, -1, L->guard >= 0 ? L->guard : s >= 0 ? G->P->sym_guard[s] : -1, (double)n, 0);
        G->fail.sym = s;
    } else {
        ok = match_dim(G, L->trip, n, -1, -1);
        if (!ok && G->fail.code != F_SYM) {
            /* the trip is a function of symbols bound earlier (T-1 after T) */
            int64_t want = -1;
            eval(G, L->trip, &want, 0);
            fail(G, F_TRIP, -1, -1, (double)n, (double)want);
            G->fail.tok = L->first;
        } else if (!ok) {
            G->fail.code = F_TRIP;
        }
    }
    G->pos = save;
    G->cur_loop = -1;
    return ok;
}

/* Could the loop end now (trip it+1 in range and equal to its bound value)? */
static int trip_fits(const mcur *G) {
    const mloop *L = &G->P->loop[G->cur_loop];
    int64_t n = G->it + 1, lo = L->lo, hi = L->hi, v;
    if (L->guard >= 0) lo = G->P->g->guards[L->guard].lo, hi = G->P->g->guards[L->guard].hi;
    if ((n < lo || n > hi) && !loop_open(G, L)) return 0;
    return !eval(G, L->trip, &v, 0) || v == n;
}

/* Leave the loop the cursor is at the end of; the op after it comes next. */
static int leave_loop(mcur *G, const jn_rp_match_event *ev) {
    if (!close_loop(G)) return 0;
    return G->pos < G->P->ntok || fail(G, F_EXTRA, -1, -1, ev->op, 0);
}

static mcur *cursor_new(jn_rp_matcher *mt, const mgraph *P);

/* The token at pos begins a loop: iteration 0 starts with this event. */
static void enter_loop(const jn_rp_matcher *mt, mcur *G) {
    const mtok *T = &G->P->tok[G->pos];
    if (T->loop < 0 || G->cur_loop >= 0) return;
    G->cur_loop = T->loop;
    G->it = 0;
    G->loop_start[T->loop] = mt->nev;
    G->syms[G->P->loop[T->loop].ivar] = 0;
    G->sbound[G->P->loop[T->loop].ivar] = 1;
}
static void cursor_copy(mcur *d, const mcur *s);

/* Advance cursor G by ev (event index mt->nev): 1 on a match.  At a loop
 * body's end where both another iteration and the op after the loop begin
 * with ev's op, *fork gets a copy that left the loop (also advanced). */
static int advance(jn_rp_matcher *mt, mcur *G, const jn_rp_match_event *ev, mcur **fork) {
    const mgraph *P = G->P;
    *fork = NULL;
    if (G->cur_loop >= 0) {
        const mloop *L = &P->loop[G->cur_loop];
        if (G->pos == L->first + L->count) {
            int open = loop_open(G, L); /* the recorded trips are no limit */
            int can_go_on = (open || G->it + 1 < L->hi) && P->tok[L->first].op == ev->op;
            int can_leave = L->first + L->count < P->ntok && P->tok[L->first + L->count].op == ev->op;
            /* a trip count already known from dims seen before the loop
             * (T-1 once T is bound) decides; no fork */
            int64_t trip;
            if (eval(G, L->trip, &trip, 0)) {
                if (G->it + 1 < trip) can_leave = 0;
                else can_go_on = 0;
            }
            if (can_go_on && can_leave) {
                mcur *F = cursor_new(mt, P);
                if (F) {
                    cursor_copy(F, G);
                    if (leave_loop(F, ev) && (enter_loop(mt, F), match_tok(mt, F, ev, 0))) *fork = F;
                    else {
                        G->fail = F->fail;
                        mt->pool[mt->npool++] = F;
                    }
                }
            }
            if (can_go_on) {
                G->it++;
                G->syms[L->ivar] = G->it;
                G->pos = L->first;
                if (match_tok(mt, G, ev, 0)) return 1;
                if (*fork) { /* only the copy that left the loop goes on */
                    cursor_copy(G, *fork);
                    mt->pool[mt->npool++] = *fork;
                    *fork = NULL;
                    return 1;
                }
                return 0;
            }
            if (!can_leave && !can_go_on && P->tok[L->first].op != ev->op && !trip_fits(G)) {
                /* neither fits; the loop cannot end here, so another iteration was due */
                G->pos = L->first;
                return fail(G, F_OP, -1, -1, ev->op, P->tok[L->first].op);
            }
            if (!can_leave && !open && G->it + 1 >= L->hi && P->tok[L->first].op == ev->op) {
                /* one more iteration than the loop's range allows */
                int32_t s = -1;
                if (jn_ir_is_expr(L->trip) && P->g->exprs[jn_ir_expr_index(L->trip)].kind == JN_IR_E_SYM)
                    s = P->g->exprs[jn_ir_expr_index(L->trip)].sym;
                G->pos = L->first;
                return fail(G, F_TRIP, -1, L->guard >= 0 ? L->guard : s >= 0 ? P->sym_guard[s] : -1,
                            (double)(G->it + 2), -1);
            }
            if (!leave_loop(G, ev)) return 0;
        }
    }
    if (G->pos >= P->ntok) return fail(G, F_EXTRA, -1, -1, ev->op, 0);
    enter_loop(mt, G);
    return match_tok(mt, G, ev, 0);
}

/* A cursor for P (from the pool when one fits; sized by the largest program). */
static mcur *cursor_new(jn_rp_matcher *mt, const mgraph *P) {
    if (mt->npool == 0) return NULL;
    mcur *C = mt->pool[--mt->npool];
    C->P = P;
    return C;
}

static void cursor_copy(mcur *d, const mcur *s) {
    const mgraph *P = s->P;
    const jn_ir_graph *g = P->g;
    d->P = P;
    d->pos = s->pos;
    d->cur_loop = s->cur_loop;
    d->it = s->it;
    d->done = s->done;
    d->fail = s->fail;
    d->nxp = s->nxp;
    memcpy(d->xp, s->xp, sizeof *d->xp * (size_t)s->nxp);
    memcpy(d->syms, s->syms, sizeof *d->syms * (size_t)g->nsyms);
    memcpy(d->sbound, s->sbound, (size_t)g->nsyms);
    memcpy(d->ibound, s->ibound, (size_t)g->ninputs);
    memcpy(d->in_id, s->in_id, sizeof *d->in_id * (size_t)g->ninputs);
    memcpy(d->in_val, s->in_val, sizeof *d->in_val * (size_t)g->ninputs);
    memcpy(d->in_ev, s->in_ev, sizeof *d->in_ev * (size_t)g->ninputs);
    memcpy(d->in_arg, s->in_arg, sizeof *d->in_arg * (size_t)g->ninputs);
    memcpy(d->in_it, s->in_it, sizeof *d->in_it * (size_t)g->ninputs);
    memcpy(d->in_prev, s->in_prev, sizeof *d->in_prev * (size_t)g->ninputs);
    memcpy(d->loop_start, s->loop_start, sizeof *d->loop_start * (size_t)P->nloop);
    memcpy(d->loop_trip, s->loop_trip, sizeof *d->loop_trip * (size_t)P->nloop);
    memcpy(d->tok_ev, s->tok_ev, sizeof *d->tok_ev * (size_t)P->ntok);
}

static void cursor_start(mcur *G) {
    const jn_ir_graph *g = G->P->g;
    G->pos = 0;
    G->cur_loop = -1;
    G->it = 0;
    G->done = 0;
    G->nxp = 0;
    memset(G->sbound, 0, (size_t)g->nsyms);
    memset(G->ibound, 0, (size_t)g->ninputs);
    memset(G->in_id, 0, sizeof *G->in_id * (size_t)g->ninputs);
    for (int32_t i = 0; i < g->ninputs; i++) G->in_ev[i] = -1, G->in_arg[i] = 0, G->in_it[i] = -1, G->in_prev[i] = 0;
    for (int32_t l = 0; l < G->P->nloop; l++) G->loop_trip[l] = -1;
    for (int32_t t = 0; t < G->P->ntok; t++) G->tok_ev[t] = -1;
    memset(&G->fail, 0, sizeof G->fail);
    for (int32_t i = 0; i < g->ninputs; i++)
        if (g->inputs[i].kind == JN_IR_IN_CONST || g->inputs[i].kind == JN_IR_IN_SCALAR) G->in_val[i] = g->inputs[i].scalar;
}

static int at_end(mcur *G) {
    if (G->cur_loop >= 0) {
        const mloop *L = &G->P->loop[G->cur_loop];
        if (G->pos != L->first + L->count || L->first + L->count != G->P->ntok) return 0;
        return close_loop(G);
    }
    return G->pos == G->P->ntok;
}

/* Per event of a completed cursor: its token (every loop's trip is known). */
static int fill_ev_tok(jn_rp_matcher *mt, const mcur *G) {
    if (mt->nev > mt->capevtok) {
        int32_t *p = realloc(mt->ev_tok, sizeof *p * (size_t)mt->nev);
        if (!p) return 0;
        mt->ev_tok = p;
        mt->capevtok = mt->nev;
    }
    const mgraph *P = G->P;
    int64_t e = 0;
    for (int32_t t = 0; t < P->ntok;) {
        int32_t l = P->tok[t].loop;
        if (l < 0) {
            if (e < mt->nev) mt->ev_tok[e] = t;
            e++, t++;
            continue;
        }
        const mloop *L = &P->loop[l];
        for (int64_t it = 0; it < G->loop_trip[l]; it++)
            for (int32_t j = 0; j < L->count; j++, e++)
                if (e < mt->nev) mt->ev_tok[e] = L->first + j;
        t = L->first + L->count;
    }
    return e == mt->nev;
}

/* ------------------------------------------------------- explanation */
static const char *op_name(int op) { return op >= 0 && op < JN_NOPS ? jn_op_info((jn_op)op)->name : "?"; }

static const char *site_str(const jn_ir_module *m, int64_t site, char *b, size_t n) {
    const jn_ir_site *s = jn_ir_site_get(m, site);
    if (s) snprintf(b, n, " at %s:%d", s->file, s->line);
    else b[0] = 0;
    return b;
}

static const char *boundary(int k) { return k ? jn_db_sync_call(k) : "a step boundary"; }

static void explain(jn_rp_matcher *mt) {
    const mfail *f = &mt->miss;
    char *w = mt->why;
    size_t n = sizeof mt->why;
    if (mt->miss_graph < 0) {
        if (f->code == F_NOSTART)
            snprintf(w, n, "no graph of the bundle starts with %s after %s", op_name((int)f->seen),
                     f->want >= 0 ? boundary((int)f->want) : "this boundary");
        else
            snprintf(w, n, "the matcher ran out of memory; this segment runs eagerly");
        return;
    }
    const mgraph *G = &mt->gr[mt->by_graph[mt->miss_graph]];
    const jn_ir_graph *g = G->g;
    char site[600], where[800], arg[64];
    int32_t t = f->tok < G->ntok ? f->tok : G->ntok - 1;
    const mtok *T = &G->tok[t < 0 ? 0 : t];
    site_str(mt->m, T->site, site, sizeof site);
    snprintf(where, sizeof where, "graph %s, op %d (%s%s)", g->name, t, op_name(T->op), site);
    if (f->arg >= 0) snprintf(arg, sizeof arg, "input %d", f->arg);
    else if (f->arg <= -100) snprintf(arg, sizeof arg, "attribute %s", jn_op_info(T->op)->attr_name[-100 - f->arg]);
    else snprintf(arg, sizeof arg, "output %d", -1 - f->arg);
    char gx[512] = "";
    if (f->guard >= 0) jn_ir_guard_explain(mt->m, g, f->guard, &f->seen, gx, sizeof gx);
    switch (f->code) {
    case F_OP:
        snprintf(w, n, "%s: expected %s, the script ran %s", where, op_name(T->op), op_name((int)f->seen));
        break;
    case F_ARITY: snprintf(w, n, "%s: %d inputs, recorded %d", where, (int)f->seen, (int)f->want); break;
    case F_ATTR:
        snprintf(w, n, "%s: %s was %.17g, recorded %.17g", where, arg, f->seen, f->want);
        break;
    case F_IDENT:
        snprintf(w, n, "%s: %s is another tensor than the graph's (the recorded dataflow differs)", where, arg);
        break;
    case F_NOTTENSOR: snprintf(w, n, "%s: %s is a Python number, recorded a tensor", where, arg); break;
    case F_NOTSCALAR: snprintf(w, n, "%s: %s is a tensor, recorded a Python number", where, arg); break;
    case F_SCALARVAR:
        snprintf(w, n, "%s: %s was %.17g, but the graph uses one value (%.17g) throughout", where, arg, f->seen,
                 f->want);
        break;
    case F_EXTRA:
        snprintf(w, n, "graph %s ended, but the script ran %s before the next sync", g->name, op_name((int)f->seen));
        break;
    case F_SHORT:
        snprintf(w, n, "the segment ended after %lld ops; graph %s expects %s%s next", (long long)f->event, g->name,
                 op_name(T->op), site);
        break;
    case F_BIND:
    case F_BINDTAKEN: {
        const jn_ir_guard *q = f->guard >= 0 && f->guard < g->nguards ? &g->guards[f->guard] : NULL;
        int32_t v = q ? q->value : -1, def = v >= 0 && v < g->nvalues && g->values[v].kind == JN_IR_V_INPUT
                                                 ? g->values[v].def : -1;
        char first[600] = "";
        if (def >= 0 && def < g->ninputs) site_str(mt->m, g->inputs[def].site, first, sizeof first);
        long long rec = q ? (long long)q->lo : 0;
        if (f->code == F_BIND)
            snprintf(w, n, "%s: %s: state %%%d (recorded as id %lld, first used%s) is tensor id %.0f here and tensor "
                     "id %.0f at another use: one tensor of the recording is two here", where, arg, v, rec,
                     first[0] ? first : " here", f->seen, f->want);
        else
            snprintf(w, n, "%s: %s: state %%%d (recorded as id %lld, first used%s) is tensor id %.0f, which is also "
                     "the state recorded as id %.0f: two state tensors of the recording are one tensor here", where,
                     arg, v, rec, first[0] ? first : " here", f->seen, f->want);
        break;
    }
    case F_SYMBIND:
        if (f->guard >= 0)
            snprintf(w, n, "%s: %s: %s, but another dim of this graph bound it to %.17g", where, arg, gx, f->want);
        else
            snprintf(w, n, "%s: %s was %.17g, which does not fit the graph's symbolic value", where, arg, f->seen);
        break;
    default:
        if (f->code == F_TRIP && f->guard >= 0) snprintf(w, n, "graph %s, the loop from op %d (%s%s): %s", g->name, t, op_name(T->op), site, gx);
        else if (f->guard >= 0) snprintf(w, n, "%s: %s: %s", where, arg, gx);
        else if (f->code == F_TRIP && f->want >= 0)
            snprintf(w, n, "graph %s, the loop from op %d (%s%s): it ran %.17g times, where the graph's trip count "
                     "(from dims seen before it) is %.17g", g->name, t, op_name(T->op), site, f->seen, f->want);
        else if (f->code == F_TRIP)
            snprintf(w, n, "graph %s, the loop from op %d (%s%s): it ran %.17g times, out of its recorded range",
                     g->name, t, op_name(T->op), site, f->seen);
        else if (f->code == F_RANK) snprintf(w, n, "%s: %s has %d dims, recorded %d", where, arg, (int)f->seen, (int)f->want);
        else if (f->code == F_DIM) snprintf(w, n, "%s: %s: a dim was %.17g, recorded %.17g", where, arg, f->seen, f->want);
        else if (f->code == F_OUTRANK)
            snprintf(w, n, "%s: %s has %d dims, the graph's has %d", where, arg, (int)f->seen, (int)f->want);
        else if (f->code == F_OUTDIM && f->want >= 0)
            snprintf(w, n, "%s: %s: dim %d is %.17g, where the graph computes %.17g (a shape relation of the recording "
                     "does not hold here)", where, arg, f->dim, f->seen, f->want);
        else if (f->code == F_OUTDIM)
            snprintf(w, n, "%s: %s: dim %d is %.17g, which does not fit the graph's shape", where, arg, f->dim, f->seen);
        else snprintf(w, n, "%s: %s does not fit the graph (value %.17g)", where, arg, f->seen);
    }
}

static void set_miss(jn_rp_matcher *mt, jn_rp_match_result *res) {
    res->kind = JN_RP_MATCH_MISS;
    res->graph = mt->miss_graph;
    res->guard = mt->miss.guard;
    res->seen = mt->miss.seen;
    res->token = mt->miss_graph >= 0 ? mt->miss.tok : -1;
    res->event = mt->miss.event;
    res->why = mt->why;
}

/* Keep the failure of the cursor that got furthest. */
static void note_fail(jn_rp_matcher *mt, const mcur *G) {
    /* on a tie, a failure that is a guard of the IR explains more */
    if (mt->miss_graph < 0 || G->done > mt->miss.event ||
        (G->done == mt->miss.event && mt->miss.guard < 0 && G->fail.guard >= 0)) {
        mt->miss = G->fail;
        mt->miss.event = G->done;
        mt->miss_graph = G->P->gi;
    }
}

void jn_rp_match_reset(jn_rp_matcher *mt) {
    if (!mt) return;
    for (int32_t k = 0; k < mt->nalive; k++) mt->pool[mt->npool++] = mt->alive[k];
    mt->nalive = 0;
    mt->started = mt->missed = 0;
    mt->nev = 0;
    mt->miss_graph = -1;
    mt->entry = -1;
    memset(&mt->miss, 0, sizeof mt->miss);
}

static jn_rp_match_kind missed(jn_rp_matcher *mt, jn_rp_match_result *res) {
    mt->missed = 1;
    for (int32_t k = 0; k < mt->nalive; k++) mt->pool[mt->npool++] = mt->alive[k];
    mt->nalive = 0;
    explain(mt);
    set_miss(mt, res);
    return JN_RP_MATCH_MISS;
}

/* The single-cursor fast path: one cursor left (the variants have
 * diverged), inside its program and not at a loop body's end (where the
 * next iteration and the op after the loop compete, and forks are made):
 * the event is checked against the expected token alone, with the same
 * checks and the same bookkeeping as the general path below, without its
 * loop over cursors, its fork list and its end-of-loop decisions.  -1: not
 * applicable, else the kind. */
static inline int feed_one(jn_rp_matcher *mt, const jn_rp_match_event *ev, jn_rp_match_result *res, uint64_t skip) {
    mcur *G = mt->alive[0];
    const mgraph *P = G->P;
    if (G->cur_loop >= 0 ? G->pos >= P->loop[G->cur_loop].first + P->loop[G->cur_loop].count : G->pos >= P->ntok)
        return -1;
    enter_loop(mt, G);
    int ok = match_tok(mt, G, ev, skip);
    mt->nfast++;
    if (ok) {
        if (P->tok[G->pos].loop < 0) G->tok_ev[G->pos] = mt->nev;
        G->pos++;
        G->done++;
    }
    uint64_t *ids = mt->ev_ids + mt->nev * JN_MAX_OUTS;
    for (int k = 0; k < ev->nout && k < JN_MAX_OUTS; k++) ids[k] = ev->out[k].id;
    mt->nev++;
    if (!ok) {
        note_fail(mt, G);
        mt->pool[mt->npool++] = G;
        mt->nalive = 0;
        return missed(mt, res);
    }
    int done = G->pos == P->ntok && G->cur_loop < 0;
    res->kind = done ? JN_RP_MATCH_COMPLETE : JN_RP_MATCH_CONTINUE;
    res->graph = done ? P->gi : -1;
    return res->kind;
}

void jn_rp_match_set_fast(jn_rp_matcher *mt, int on) { mt->slow = !on; }

int jn_rp_match_where(const jn_rp_matcher *mt, jn_rp_match_at *at) {
    if (!mt || mt->nalive != 1 || mt->missed) return 0;
    const mcur *G = mt->alive[0];
    at->graph = G->P->gi, at->pos = G->pos, at->loop = G->cur_loop, at->it = G->it, at->nev = mt->nev;
    at->loop_end = G->cur_loop >= 0 && G->pos == G->P->loop[G->cur_loop].first + G->P->loop[G->cur_loop].count;
    return 1;
}

int jn_rp_match_expects(const jn_rp_matcher *mt, jn_op op, uint64_t id) {
    if (!mt || !mt->started || mt->missed) return 0;
    for (int32_t c = 0; c < mt->nalive; c++) {
        const mcur *G = mt->alive[c];
        const mgraph *P = G->P;
        if (G->pos >= P->ntok) continue;
        if (G->cur_loop >= 0 && G->pos == P->loop[G->cur_loop].first + P->loop[G->cur_loop].count) continue;
        const mtok *T = &P->tok[G->pos];
        if (T->op != op || T->nin < 1 || (T->flags & JN_IR_MT_COLLECT)) continue;
        const mref *r = &T->in[0];
        uint64_t want;
        if (r->kind == JN_IR_MR_INPUT) {
            if (r->mode == JN_IR_MM_PREV ||
                (r->mode ? G->in_it[r->a] != G->it || G->in_id[r->a] == id : !G->ibound[r->a] || G->in_id[r->a] == id))
                return 1;
        } else if (r->kind == JN_IR_MR_TOKEN && ref_id(mt, G, r, G->pos, &want) && want == id) {
            return 1;
        }
    }
    return 0;
}

uint64_t jn_rp_match_known(const jn_rp_matcher *mt, int32_t gi, int32_t pos, const jn_rp_match_known_op *o) {
    if (!mt || gi < 0 || gi >= mt->m->ngraphs || mt->by_graph[gi] < 0) return 0;
    const mgraph *P = &mt->gr[mt->by_graph[gi]];
    if (pos < 0 || pos >= P->ntok) return 0;
    const mtok *T = &P->tok[pos];
    if (T->op != o->op || (T->flags & JN_IR_MT_COLLECT) || T->nin != o->nin) return 0;
    uint64_t skip = 0;
    for (int j = 0; j < T->nin && j < 63; j++) {
        const mref *r = &T->in[j];
        int32_t t = o->prod_tok[j];
        /* the ref resolves to token t's event of this iteration (ref_event: a
         * token outside loops by tok_ev, one inside by the iteration) */
        if (t >= 0 && t < pos && r->kind == JN_IR_MR_TOKEN && r->a == t && r->b == o->prod_out[j] &&
            (r->mode & 0xf) == JN_IR_MM_SAME && P->tok[t].loop == T->loop)
            skip |= (uint64_t)1 << j;
    }
    int same = o->attrs != NULL;
    for (int k = 0; k < T->nattrs && same; k++) {
        const jn_attr *x = &o->attrs[k], *y = &T->attr[k];
        switch (T->akind[k]) {
        case JN_A_INT: same = !jn_ir_is_expr(y->i) && x->i == y->i; break;
        case JN_A_INTS:
            same = x->l.n == y->l.n;
            for (int j = 0; j < y->l.n && same; j++) same = !jn_ir_is_expr(y->l.v[j]) && x->l.v[j] == y->l.v[j];
            break;
        case JN_A_FLOAT: same = T->fin[k] < 0 && (x->f == y->f || (isnan(x->f) && isnan(y->f))); break;
        default: same = x->i == y->i;
        }
    }
    return skip | (same ? JN_RP_MATCH_KNOWN_ATTRS : 0);
}

jn_rp_match_kind jn_rp_match_feed_at(jn_rp_matcher *mt, const jn_rp_match_event *ev, const jn_rp_match_at *at,
                                     uint64_t skip, jn_rp_match_result *res) {
    const mcur *G = mt->nalive == 1 ? mt->alive[0] : NULL;
    if (G && !mt->missed && !mt->slow && mt->nev < mt->capev && mt->nev == at->nev && G->P->gi == at->graph &&
        G->pos == at->pos && at->pos < G->P->ntok && G->cur_loop == at->loop && G->it == at->it &&
        G->P->tok[at->pos].loop == at->loop) {
        int k = feed_one(mt, ev, res, skip);
        if (k >= 0) {
            mt->nknown += skip != 0;
            return (jn_rp_match_kind)k;
        }
    }
    return jn_rp_match_feed(mt, ev, res);
}

int64_t jn_rp_match_known_events(const jn_rp_matcher *mt) { return mt ? mt->nknown : 0; }
int64_t jn_rp_match_fast_events(const jn_rp_matcher *mt) { return mt ? mt->nfast : 0; }

jn_rp_match_kind jn_rp_match_feed(jn_rp_matcher *mt, const jn_rp_match_event *ev, jn_rp_match_result *res) {
    if (mt->nalive == 1 && !mt->missed && mt->nev < mt->capev && !mt->slow) {
        int k = feed_one(mt, ev, res, 0);
        if (k >= 0) return (jn_rp_match_kind)k;
    }
    if (mt->missed) {
        set_miss(mt, res);
        return JN_RP_MATCH_MISS;
    }
    if (!mt->started) {
        mt->started = 1;
        mt->nalive = 0;
        if (ev->op >= 0 && ev->op < JN_NOPS)
            for (int32_t k = mt->start0[ev->op]; k < mt->start0[ev->op + 1]; k++) {
                if (mt->entry >= 0 && mt->gr[mt->start[k]].entry != mt->entry) continue;
                mcur *C = cursor_new(mt, &mt->gr[mt->start[k]]);
                if (!C) break;
                cursor_start(C);
                mt->alive[mt->nalive++] = C;
            }
        if (!mt->nalive) {
            mt->miss_graph = -1;
            memset(&mt->miss, 0, sizeof mt->miss);
            mt->miss.code = F_NOSTART;
            mt->miss.want = mt->entry;
            mt->miss.guard = -1;
            mt->miss.seen = ev->op;
            return missed(mt, res);
        }
    }
    if (mt->nev >= mt->capev) {
        int64_t nc = mt->capev ? 2 * mt->capev : 256;
        uint64_t *p = realloc(mt->ev_ids, sizeof *p * (size_t)nc * JN_MAX_OUTS);
        if (!p) {
            mt->miss_graph = -1;
            memset(&mt->miss, 0, sizeof mt->miss);
            mt->miss.guard = -1;
            return missed(mt, res);
        }
        mt->ev_ids = p;
        mt->capev = nc;
    }
    int32_t n = 0, done = -1, nnew = mt->nalive;
    mcur *forks[MAX_CURSORS];
    int32_t nf = 0;
    for (int32_t k = 0; k < nnew; k++) {
        mcur *G = mt->alive[k], *F = NULL;
        if (advance(mt, G, ev, &F)) {
            if (G->P->tok[G->pos].loop < 0) G->tok_ev[G->pos] = mt->nev;
            G->pos++;
            G->done++;
            mt->alive[n++] = G;
            if (G->pos == G->P->ntok && G->cur_loop < 0) done = G->P->gi;
        } else {
            note_fail(mt, G);
            mt->pool[mt->npool++] = G;
        }
        if (F) {
            if (F->P->tok[F->pos].loop < 0) F->tok_ev[F->pos] = mt->nev;
            F->pos++;
            F->done++;
            forks[nf++] = F;
            if (F->pos == F->P->ntok && F->cur_loop < 0) done = F->P->gi;
        }
    }
    for (int32_t k = 0; k < nf; k++) mt->alive[n++] = forks[k];
    mt->nalive = n;
    for (int k = 0; k < ev->nout && k < JN_MAX_OUTS; k++) mt->ev_ids[mt->nev * JN_MAX_OUTS + k] = ev->out[k].id;
    mt->nev++;
    if (!n) return missed(mt, res);
    res->kind = n == 1 && done >= 0 ? JN_RP_MATCH_COMPLETE : JN_RP_MATCH_CONTINUE;
    res->graph = res->kind == JN_RP_MATCH_COMPLETE ? done : -1;
    return res->kind;
}

/* At a hit: G's state inputs alias as the recording's did (one tensor per
 * recorded id, two tensors for two), else G fails (see sbind).  A few
 * array writes and one probe per state input. */
static int state_check(jn_rp_matcher *mt, mcur *G) {
    sbind *S = &mt->sb;
    const mgraph *P = G->P;
    const jn_ir_graph *g = P->g;
    if (++S->gen == 0) { /* wrapped: every stamp is stale again */
        memset(S->kgen, 0, sizeof *S->kgen * (size_t)S->n);
        memset(S->hgen, 0, sizeof *S->hgen * (size_t)S->nslot);
        S->gen = 1;
    }
    for (int32_t i = 0; i < g->ninputs; i++) {
        int32_t k = P->in_sb[i];
        if (k < 0 || !G->ibound[i]) continue;
        uint64_t id = G->in_id[i];
        int32_t guard = P->in_guard[i * GI_N + GI_BIND];
        int bad = 0;
        if (S->kgen[k] == S->gen) { /* another input of the same recorded tensor */
            if (S->kid[k] != id) {
                fail(G, F_BIND, G->in_arg[i], guard, (double)id, (double)S->kid[k]);
                bad = 1;
            }
        } else {
            S->kgen[k] = S->gen, S->kid[k] = id;
            int64_t h = sb_home(S, id);
            while (S->hgen[h] == S->gen && S->hkey[h] != id) h = (h + 1) & (S->nslot - 1);
            if (S->hgen[h] == S->gen) { /* the tensor of another recorded one */
                fail(G, F_BINDTAKEN, G->in_arg[i], guard, (double)id, (double)S->rec[S->hval[h]]);
                bad = 1;
            }
            S->hgen[h] = S->gen, S->hkey[h] = id, S->hval[h] = k;
        }
        if (bad) {
            if (G->in_ev[i] >= 0 && G->in_ev[i] < mt->nev) G->fail.tok = mt->ev_tok[G->in_ev[i]]; /* where bound */
            return 0;
        }
    }
    return 1;
}

void jn_rp_match_begin(jn_rp_matcher *mt, int entry) {
    if (mt && !mt->started) mt->entry = entry >= 0 && entry <= JN_SYNC_LAST ? entry : -1;
}

jn_rp_match_kind jn_rp_match_end(jn_rp_matcher *mt, jn_rp_match_result *res) {
    memset(res, 0, sizeof *res);
    res->graph = res->guard = res->token = -1;
    if (!mt->started) {
        jn_rp_match_reset(mt);
        res->kind = JN_RP_MATCH_NONE;
        return JN_RP_MATCH_NONE;
    }
    if (!mt->missed) {
        /* of the cursors at their graph's end, the graph that stands for
         * the most recorded segments (each one's guards and dataflow held);
         * one whose state inputs alias otherwise than recorded is out */
        uint8_t end[MAX_CURSORS];
        for (int32_t k = 0; k < mt->nalive; k++) end[k] = (uint8_t)at_end(mt->alive[k]);
        mcur *best = NULL;
        for (;;) {
            int32_t kb = -1;
            for (int32_t k = 0; k < mt->nalive; k++)
                if (end[k] && (kb < 0 || mt->alive[k]->P->g->support > mt->alive[kb]->P->g->support)) kb = k;
            if (kb < 0) break;
            end[kb] = 0;
            if (!fill_ev_tok(mt, mt->alive[kb])) break;
            if (state_check(mt, mt->alive[kb])) {
                best = mt->alive[kb];
                break;
            }
        }
        if (best) {
            mcur *G = best;
            res->kind = JN_RP_MATCH_COMPLETE;
            res->graph = G->P->gi;
            res->syms = G->syms;
            res->inputs = G->in_id;
            res->scalars = G->in_val;
            res->input_event = G->in_ev;
            res->input_arg = G->in_arg;
            res->nevents = mt->nev;
            res->ev_token = mt->ev_tok;
            res->extrap = G->xp;
            res->nextrap = G->nxp;
            jn_rp_match_reset(mt); /* the cursor goes back to the pool; its arrays stay until the next feed */
            return JN_RP_MATCH_COMPLETE;
        }
        for (int32_t k = 0; k < mt->nalive; k++) {
            mcur *G = mt->alive[k];
            if (G->fail.code == 0) fail(G, F_SHORT, -1, -1, 0, 0);
            note_fail(mt, G);
        }
        explain(mt);
    }
    set_miss(mt, res);
    jn_rp_match_reset(mt);
    return JN_RP_MATCH_MISS;
}
