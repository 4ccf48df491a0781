/* regions.c -- the regions pass: from the recording, the proof that a
 * region (a module's call, an optimizer's step or zero_grad, a clipping)
 * can be replaced by a graph, or the reason it cannot, with the file:line
 * that caused it (issue 23, docs/ARCHITECTURE.md 5.2).
 *
 * Inputs: the region markers of the trace (JN_EV_REGION, kept beside the
 * events by load.c), the events between them, and per region the code rows
 * the recorder stored for its observed calls (jn_db_region_codes: each code
 * object it ran, scanned, with its first effect outside the call).  A
 * region is replaceable only when every recorded call of it was a tensor
 * program of its inputs with no effect outside it:
 *   - no code object it ran has an effect (a store to an attribute, global,
 *     closure cell or container, an import, a yield, a builtin off the pure
 *     allow-list: the code row's effect and site);
 *   - no sync point inside a call (which sync, where);
 *   - every tensor an op reads is made inside the call, an argument (the
 *     ids on the entry marker), a parameter or state (a buffer, optimizer
 *     state); anything else is a global or an attribute tensor (the op, where);
 *   - calls in the same mode (a module call's grad mode and training flag,
 *     on its entry marker) whose inputs have the same roles, dtypes,
 *     devices, shapes and contiguity (the replay's signature, strides
 *     reduced as the trace keeps them) ran the same
 *     ops from the same lines (else the first differing op is named: control
 *     flow on a value the region does not see);
 *   - its code was observed (the recorder observes the second and third call
 *     of each region object; a region called once is not proved).
 * Calls nest: an op belongs to every open call, so a module is refused when
 * a submodule it calls is.  Verdicts are per (kind, class, definition site,
 * code hash) over every object and run: refused when any call was.
 *
 * Memory: per region one op list per distinct input signature (at most
 * SIG_MAX), per open call its op list; one map entry per tensor id for
 * where it was made.  Visited in a fixed order (runs, steps, events), so
 * the same store always gives the same verdicts.
 */
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "an_internal.h"

#define SIG_MAX 64
#define REASON_MAX 400

typedef struct {
    int16_t op;
    int64_t site;
} rg_tok;

typedef struct {
    uint64_t sig;
    int64_t call;             /* the call it was first seen in (1, 2, ...) */
    rg_tok *ops;
    int64_t nops;
} rg_sig;

/* One region object of the current run. */
typedef struct {
    int64_t id;
    int32_t row;              /* its verdict row (an_rg.rows) */
    int64_t calls;
    rg_sig *sigs;
    int32_t nsigs;
} rg_obj;

/* A call in progress. */
typedef struct {
    int32_t obj;              /* index into an_rg.objs */
    int64_t enter;            /* ops recorded in the run before it began */
    int64_t call;             /* which call of its region object */
    int64_t *args;            /* the ids it was given, sorted */
    uint32_t nargs;
    uint64_t sig;
    rg_tok *ops;
    int64_t nops, capops;
} rg_open;

/* A verdict row with room for its texts while it is built. */
typedef struct {
    jn_db_region_verdict v;   /* strings below point into the fields */
    char kind[32], qualname[160], site[300], code_hash[32];
    char reason[REASON_MAX], reason_site[300];
    int has_reason;
    char *codes;              /* space-separated hashes (malloc'ed) */
    int observed;             /* code rows seen for it */
} rg_row;

struct an_rg {
    rg_obj *objs;
    int64_t nobjs, capobjs;
    rg_open *open;
    int64_t nopen, capopen;
    rg_row *rows;
    int64_t nrows, caprows;
    an_map made;              /* tensor id -> op count when it was made (this run) */
    int64_t nops;             /* ops of this run so far */
};

static jn_status nomem(void) { return jn_error(JN_ERR_NOMEM, "analyzer: out of memory (regions)"); }

static const char *base(const char *path) {
    const char *s = strrchr(path, '/');
    return s ? s + 1 : path;
}

/* "file:line" of a call site, its file without the folder. */
static const char *site_of(an_ctx *c, int64_t site, char *buf, size_t n) {
    char full[600];
    an_site_str(c, site, full, sizeof full);
    const char *b = base(full);
    size_t len = strlen(b);
    if (len >= n) len = n - 1;
    memcpy(buf, b, len);
    buf[len] = 0;
    return buf;
}

static void refuse(rg_row *r, const char *site, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void refuse(rg_row *r, const char *site, const char *fmt, ...) {
    if (r->has_reason) return; /* the first reason stands */
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(r->reason, sizeof r->reason, fmt, ap);
    va_end(ap);
    snprintf(r->reason_site, sizeof r->reason_site, "%s", site ? site : "");
    r->has_reason = 1;
}

static int cmp_i64(const void *a, const void *b) {
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return x < y ? -1 : x > y;
}

static int cmp_str(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

/* ------------------------------------------------------------- setup */
jn_status an_regions_begin(an_ctx *c) {
    if (!(c->rg = calloc(1, sizeof *c->rg))) return nomem();
    return JN_OK;
}

static void objs_clear(struct an_rg *g) {
    for (int64_t i = 0; i < g->nobjs; i++) {
        for (int32_t k = 0; k < g->objs[i].nsigs; k++) free(g->objs[i].sigs[k].ops);
        free(g->objs[i].sigs);
    }
    g->nobjs = 0;
    for (int64_t i = 0; i < g->nopen; i++) free(g->open[i].args), free(g->open[i].ops);
    g->nopen = 0;
    an_map_clear(&g->made);
    g->nops = 0;
}

void an_regions_free(an_ctx *c) {
    struct an_rg *g = c->rg;
    if (!g) return;
    objs_clear(g);
    free(g->objs);
    free(g->open);
    for (int64_t i = 0; i < g->nrows; i++) free(g->rows[i].codes);
    free(g->rows);
    an_map_free(&g->made);
    free(g);
    c->rg = NULL;
}

/* The verdict row of (kind, qualname, site, hash), made when new. */
static int32_t row_of(struct an_rg *g, int64_t run, const jn_db_region *r) {
    char site[300];
    snprintf(site, sizeof site, "%s:%d", base(r->file), r->line);
    for (int64_t i = 0; i < g->nrows; i++) {
        rg_row *w = &g->rows[i];
        if (!strcmp(w->kind, r->kind) && !strcmp(w->qualname, r->qualname) && !strcmp(w->site, site) &&
            !strcmp(w->code_hash, r->code_hash))
            return (int32_t)i;
    }
    if (an_grow(&g->rows, &g->caprows, g->nrows + 1, sizeof *g->rows)) return -1;
    rg_row *w = &g->rows[g->nrows];
    memset(w, 0, sizeof *w);
    snprintf(w->kind, sizeof w->kind, "%s", r->kind);
    snprintf(w->qualname, sizeof w->qualname, "%s", r->qualname);
    snprintf(w->site, sizeof w->site, "%s", site);
    snprintf(w->code_hash, sizeof w->code_hash, "%s", r->code_hash);
    w->v.run_id = run;
    w->v.region = r->region;
    return (int32_t)g->nrows++;
}

/* Add a hash to a row's code list (kept unique; sorted at the end). */
static int add_code(rg_row *w, const char *hash) {
    size_t n = w->codes ? strlen(w->codes) : 0, h = strlen(hash);
    for (const char *p = w->codes; p && *p;) {
        const char *e = strchr(p, ' ');
        size_t len = e ? (size_t)(e - p) : strlen(p);
        if (len == h && !strncmp(p, hash, h)) return 0;
        p = e ? e + 1 : p + len;
    }
    char *s = realloc(w->codes, n + h + 2);
    if (!s) return -1;
    if (n) s[n++] = ' ';
    memcpy(s + n, hash, h + 1);
    w->codes = s;
    return 0;
}

jn_status an_regions_run(an_ctx *c) {
    struct an_rg *g = c->rg;
    objs_clear(g);
    jn_db_region *regs = NULL;
    jn_db_region_code *codes = NULL;
    int nregs = 0, ncodes = 0;
    jn_status s = jn_db_regions(c->db, c->run, &regs, &nregs);
    if (!s) s = jn_db_region_codes(c->db, c->run, &codes, &ncodes);
    for (int i = 0; i < nregs && !s; i++) {
        int32_t row = row_of(g, c->run, &regs[i]);
        if (row < 0 || an_grow(&g->objs, &g->capobjs, g->nobjs + 1, sizeof *g->objs)) {
            s = nomem();
            break;
        }
        g->objs[g->nobjs++] = (rg_obj){regs[i].region, row, 0, NULL, 0};
    }
    /* the scan: the first effect of each region's code, user code first */
    for (int pass = 0; pass < 2 && !s; pass++)
        for (int i = 0; i < ncodes && !s; i++) {
            const jn_db_region_code *k = &codes[i];
            rg_row *w = NULL;
            for (int64_t j = 0; j < g->nobjs; j++)
                if (g->objs[j].id == k->region) w = &g->rows[g->objs[j].row];
            if (!w) continue;
            if (pass == 0) {
                w->observed = 1;
                if (add_code(w, k->hash)) s = nomem();
            }
            if (k->effect && (pass == 0) == (k->user != 0)) refuse(w, k->effect_site, "%s (in %s)", k->effect, k->name);
        }
    jn_db_regions_free(regs, nregs);
    jn_db_region_codes_free(codes, ncodes);
    return s;
}

/* ------------------------------------------------------------ a step */
static rg_obj *obj_of(struct an_rg *g, int64_t id, int32_t *idx) {
    for (int64_t i = 0; i < g->nobjs; i++)
        if (g->objs[i].id == id) {
            *idx = (int32_t)i;
            return &g->objs[i];
        }
    return NULL;
}

static jn_status enter(an_ctx *c, const an_regev *m) {
    struct an_rg *g = c->rg;
    int32_t oi;
    rg_obj *o = obj_of(g, m->region, &oi);
    if (!o) return JN_OK; /* a region the store has no row of (its write failed): not judged */
    if (an_grow(&g->open, &g->capopen, g->nopen + 1, sizeof *g->open)) return nomem();
    rg_open *k = &g->open[g->nopen];
    memset(k, 0, sizeof *k);
    k->obj = oi;
    k->enter = g->nops;
    k->call = ++o->calls;
    g->rows[o->row].v.calls++;
    k->sig = AN_FNV_INIT;
    if (m->nargs) {
        if (!(k->args = malloc(sizeof *k->args * m->nargs))) return nomem();
        memcpy(k->args, c->sb.rargs + m->arg0, sizeof *k->args * m->nargs);
        qsort(k->args, m->nargs, sizeof *k->args, cmp_i64);
        int64_t lo = 0; /* a module call's mode comes first, negated (jn_db.h): part of the signature */
        while (lo < m->nargs && k->args[lo] < 0) k->sig = an_mix(k->sig, (uint64_t)-k->args[lo++]);
        memmove(k->args, k->args + lo, sizeof *k->args * (size_t)(m->nargs - lo));
        k->nargs = m->nargs - lo;
    }
    g->nopen++;
    return JN_OK;
}

/* Whether every op of a call has the same site. */
static int one_site(const rg_tok *t, int64_t n) {
    for (int64_t i = 1; i < n; i++)
        if (t[i].site != t[0].site) return 0;
    return 1;
}

/* The end of call k: its op list against the earlier calls with the same inputs. */
static jn_status finish(an_ctx *c, rg_open *k) {
    struct an_rg *g = c->rg;
    rg_obj *o = &g->objs[k->obj];
    rg_row *w = &g->rows[o->row];
    rg_sig *same = NULL;
    for (int32_t i = 0; i < o->nsigs; i++)
        if (o->sigs[i].sig == k->sig) same = &o->sigs[i];
    if (!same) {
        if (o->nsigs < SIG_MAX) {
            rg_sig *ns = realloc(o->sigs, sizeof *ns * (size_t)(o->nsigs + 1));
            if (!ns) return nomem();
            o->sigs = ns;
            ns[o->nsigs++] = (rg_sig){k->sig, k->call, k->ops, k->nops};
            k->ops = NULL;
        }
        return JN_OK;
    }
    if (w->has_reason) return JN_OK;
    int64_t n = k->nops < same->nops ? k->nops : same->nops, j = 0;
    /* An op's site is its first frame in a user file.  When no user code runs
     * inside the call (janus's own modules), that is the caller's line for
     * every op: two callers differ in site but not in the program, so such
     * calls compare by op alone. */
    int by_site = !(one_site(k->ops, k->nops) && one_site(same->ops, same->nops));
    while (j < n && k->ops[j].op == same->ops[j].op && (!by_site || k->ops[j].site == same->ops[j].site)) j++;
    if (j == n && k->nops == same->nops) return JN_OK;
    char s1[300], s2[300];
    if (j < n) {
        site_of(c, k->ops[j].site, s1, sizeof s1);
        site_of(c, same->ops[j].site, s2, sizeof s2);
        refuse(w, s1, "call %lld ran %s where call %lld ran %s at %s (op %lld), with inputs of the same shapes: "
               "control flow on a value the region does not see", (long long)k->call, an_op_name(k->ops[j].op),
               (long long)same->call, an_op_name(same->ops[j].op), s2, (long long)j);
    } else {
        const rg_tok *t = k->nops > n ? &k->ops[n] : &same->ops[n];
        site_of(c, t->site, s1, sizeof s1);
        refuse(w, s1, "call %lld ran %lld ops where call %lld ran %lld (the first one more: %s), with inputs of "
               "the same shapes: control flow on a value the region does not see", (long long)k->call,
               (long long)k->nops, (long long)same->call, (long long)same->nops, an_op_name(t->op));
    }
    return JN_OK;
}

static jn_status leave(an_ctx *c, const an_regev *m) {
    struct an_rg *g = c->rg;
    int64_t at = g->nopen - 1;
    while (at >= 0 && g->objs[g->open[at].obj].id != m->region) at--;
    if (at < 0) return JN_OK; /* its entry was in a step that was skipped */
    jn_status s = JN_OK;
    /* calls left open inside it (an exception between markers) end with it */
    for (int64_t i = g->nopen - 1; i >= at; i--) {
        if (!s) s = finish(c, &g->open[i]);
        free(g->open[i].args), free(g->open[i].ops);
    }
    g->nopen = at;
    return s;
}

static int is_arg(const rg_open *k, int64_t id) {
    return k->nargs && bsearch(&id, k->args, k->nargs, sizeof id, cmp_i64) != NULL;
}

static jn_status on_op(an_ctx *c, const an_event *x) {
    struct an_rg *g = c->rg;
    int64_t pos = g->nops++;
    for (int64_t d = 0; d < g->nopen; d++) {
        rg_open *k = &g->open[d];
        rg_row *w = &g->rows[g->objs[k->obj].row];
        if (an_grow(&k->ops, &k->capops, k->nops + 1, sizeof *k->ops)) return nomem();
        k->ops[k->nops++] = (rg_tok){x->op, x->callsite};
        for (int i = 0; i < x->nin; i++) {
            const an_tref *t = &c->sb.tr[x->ref0 + i];
            if (t->role == JN_TR_SCALAR) continue;
            int64_t *made = an_map_find(&g->made, (uint64_t)t->id);
            if (made && *made >= k->enter) continue; /* made inside the call */
            if (t->role == JN_TR_PARAM || t->role == JN_TR_STATE || is_arg(k, t->id)) {
                /* what the replay's entry guard checks, as far as the trace keeps it (strides as contig) */
                k->sig = an_mix(an_mix(k->sig, (uint64_t)t->contig << 24 | (uint64_t)t->device << 16 |
                                                   (uint64_t)t->role << 8 | t->dtype), t->ndim);
                for (int dd = 0; dd < t->ndim; dd++) k->sig = an_mix(k->sig, (uint64_t)t->shape[dd]);
                continue;
            }
            if (!w->has_reason) {
                char site[300];
                site_of(c, x->callsite, site, sizeof site);
                refuse(w, site, "%s reads a tensor that is neither an argument, a parameter, a buffer nor "
                       "optimizer state (%s): pass it as an argument or register it as a buffer",
                       an_op_name(x->op), t->role == JN_TR_HOST ? "a tensor made from Python data" :
                       "a global or an attribute tensor");
            }
        }
    }
    if (!x->inplace)
        for (int i = 0; i < x->nout; i++) {
            int64_t *v = an_map_get(&g->made, (uint64_t)c->sb.tr[x->ref0 + x->nin + i].id, pos, NULL);
            if (!v) return nomem();
            *v = pos;
        }
    return JN_OK;
}

static const char *sync_name(int k) { return jn_db_sync_what(k); }

static void on_sync(an_ctx *c, const an_event *x) {
    struct an_rg *g = c->rg;
    char site[300];
    for (int64_t d = 0; d < g->nopen; d++) {
        rg_row *w = &g->rows[g->objs[g->open[d].obj].row];
        if (w->has_reason) continue;
        site_of(c, x->callsite, site, sizeof site);
        refuse(w, site, "reads tensor data inside the call (%s): a sync point", sync_name(x->sync_kind));
    }
}

jn_status an_regions_step(an_ctx *c) {
    const an_stepbuf *b = &c->sb;
    int64_t r = 0;
    jn_status s = JN_OK;
    for (int64_t i = 0; i <= b->nev && !s; i++) {
        for (; r < b->nreg && b->reg[r].at == i && !s; r++)
            s = b->reg[r].enter ? enter(c, &b->reg[r]) : leave(c, &b->reg[r]);
        if (s || i == b->nev) break;
        const an_event *x = &b->ev[i];
        if (x->kind == JN_EV_OP) s = on_op(c, x);
        else if (x->kind == JN_EV_SYNC) on_sync(c, x);
    }
    return s;
}

/* -------------------------------------------------------- the verdicts */
static jn_status sort_codes(rg_row *w) {
    if (!w->codes || !*w->codes) return JN_OK;
    int n = 1;
    for (const char *p = w->codes; *p; p++) n += *p == ' ';
    char **v = malloc(sizeof *v * (size_t)n), *copy = strdup(w->codes);
    if (!v || !copy) {
        free(v), free(copy);
        return nomem();
    }
    int k = 0;
    for (char *t = strtok(copy, " "); t; t = strtok(NULL, " ")) v[k++] = t;
    qsort(v, (size_t)k, sizeof *v, cmp_str);
    char *o = w->codes;
    for (int i = 0; i < k; i++) {
        size_t len = strlen(v[i]);
        memcpy(o, v[i], len);
        o += len;
        *o++ = i + 1 < k ? ' ' : 0;
    }
    free(v), free(copy);
    return JN_OK;
}

static char *dup(const char *t) {
    return strdup(t ? t : "");
}

jn_status an_regions_end(an_ctx *c) {
    struct an_rg *g = c->rg;
    jn_an_regions *out = c->opt->regions;
    jn_an_regions_free(out);
    if (!g->nrows) return JN_OK;
    if (!(out->v = calloc((size_t)g->nrows, sizeof *out->v))) return nomem();
    for (int64_t i = 0; i < g->nrows; i++) {
        rg_row *w = &g->rows[i];
        if (!w->observed && w->v.calls > 0)
            refuse(w, w->site, "its code was not observed when recording: a region object's first call is not "
                   "observed (it makes state) and this one was called %lld time%s (or another profiler was "
                   "active); record more steps", (long long)w->v.calls, w->v.calls == 1 ? "" : "s");
        if (sort_codes(w)) return nomem();
        jn_db_region_verdict *v = &out->v[out->n++];
        *v = w->v;
        v->replaceable = !w->has_reason;
        v->kind = dup(w->kind), v->qualname = dup(w->qualname), v->site = dup(w->site);
        v->reason = dup(w->has_reason ? w->reason : ""), v->reason_site = dup(w->has_reason ? w->reason_site : "");
        v->code_hash = dup(w->code_hash), v->codes = dup(w->codes);
        if (!v->kind || !v->qualname || !v->site || !v->reason || !v->reason_site || !v->code_hash || !v->codes)
            return nomem();
    }
    return JN_OK;
}

void jn_an_regions_free(jn_an_regions *r) {
    if (!r) return;
    for (int i = 0; i < r->n; i++) {
        jn_db_region_verdict *v = &r->v[i];
        free((void *)v->kind), free((void *)v->qualname), free((void *)v->site), free((void *)v->reason);
        free((void *)v->reason_site), free((void *)v->code_hash), free((void *)v->codes);
    }
    free(r->v);
    r->v = NULL;
    r->n = 0;
}
