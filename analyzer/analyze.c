/* analyze.c -- jn_an_analyze: the analyzer's pipeline, in order.
 *
 *   for each run (load.c: op table mapped onto this build's)
 *     pass 1  decode every step, note per tensor id the last position that
 *             references it (segment.c: an_note_uses_step)
 *     pass 2  decode every step again, split it at sync points, put each
 *             segment in SSA form (functionalize.c) and collapse it into an
 *             exemplar of its group (segment.c: an_segment_step)
 *             and, when asked for (jn_an_options.regions), follow the region
 *             markers: the verdict on every region (regions.c)
 *   for each group, in order of first appearance
 *     loops + align   exemplars -> structures (repeats with a varying count
 *             folded into loops; a loop graph is kept only when it unrolls
 *             into every exemplar exactly, selfcheck.c) -> variants with
 *             parent/diverge/decided
 *     generalize + guards   one graph per structure
 *   the call sites the graphs mention; jn_ir_verify_module.
 *
 * A step whose chunk is damaged is skipped in both passes (jn_an_skipped
 * says which and why) and the rest analyzed.
 *
 * Decoding twice keeps memory proportional to the distinct exemplars plus
 * one map entry per tensor id, never to the recorded ops.  Everything is
 * visited in a fixed order (runs, steps, events; groups and exemplars by
 * first appearance; symbols by first use), so one store always gives the
 * same IR text.  Groups that cannot be captured faithfully are left out
 * with a reason (jn_an_uncaptured) rather than emitted wrong.
 */
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "an_internal.h"
#include "jn_settings.h"

/* ------------------------------------------------------------ reasons */
/* Lines of the last analysis of this thread: why groups were left out
 * (jn_an_uncaptured) and which steps were skipped (jn_an_skipped). */
typedef struct {
    char **v;
    int n, cap;
} msglist;
static _Thread_local msglist reasons, skipped;

static void msgs_clear(msglist *l) {
    for (int i = 0; i < l->n; i++) free(l->v[i]);
    free(l->v);
    memset(l, 0, sizeof *l);
}

static jn_status msgs_add(msglist *l, const char *fmt, va_list ap) {
    if (l->n == l->cap) {
        int nc = l->cap ? 2 * l->cap : 8;
        char **p = realloc(l->v, sizeof *p * (size_t)nc);
        if (!p) return jn_error(JN_ERR_NOMEM, "analyzer: out of memory");
        l->v = p;
        l->cap = nc;
    }
    char *m = NULL;
    if (vasprintf(&m, fmt, ap) < 0) return jn_error(JN_ERR_NOMEM, "analyzer: out of memory");
    l->v[l->n++] = m;
    return JN_OK;
}

int jn_an_uncaptured_count(void) { return reasons.n; }
const char *jn_an_uncaptured(int i) { return i >= 0 && i < reasons.n ? reasons.v[i] : NULL; }
int jn_an_skipped_count(void) { return skipped.n; }
const char *jn_an_skipped(int i) { return i >= 0 && i < skipped.n ? skipped.v[i] : NULL; }

jn_status an_reason(an_ctx *c, const char *fmt, ...) {
    (void)c;
    va_list ap;
    va_start(ap, fmt);
    jn_status s = msgs_add(&reasons, fmt, ap);
    va_end(ap);
    return s;
}

static jn_status skip_note(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static jn_status skip_note(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    jn_status s = msgs_add(&skipped, fmt, ap);
    va_end(ap);
    return s;
}

/* ---------------------------------------------------------- call sites */
void an_use_site(an_ctx *c, int64_t site) {
    if (site > 0) an_map_get(&c->sites, (uint64_t)site, 0, NULL);
}

/* A call site of the store (NULL = unknown); the table is read once, at
 * the first lookup, inside the analysis's read transaction. */
static const jn_db_site *site_row(an_ctx *c, int64_t site) {
    if (!c->dbsites_loaded) {
        c->dbsites_loaded = 1;
        if (jn_db_sites(c->db, &c->dbsites, &c->ndbsites)) c->ndbsites = 0; /* names only: "an unknown line" */
    }
    return jn_db_site_find(c->dbsites, c->ndbsites, site);
}

const char *an_site_str(an_ctx *c, int64_t site, char *buf, size_t n) {
    snprintf(buf, n, "an unknown line");
    const jn_db_site *r = site > 0 ? site_row(c, site) : NULL;
    if (r) snprintf(buf, n, "%s:%d", r->file, r->line);
    return buf;
}

const char *an_op_name(int op) { return op >= 0 && op < JN_NOPS ? jn_op_info((jn_op)op)->name : "?"; }

static int cmp_i64(const void *a, const void *b) {
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return x < y ? -1 : x > y;
}

static jn_status add_sites(an_ctx *c) {
    int64_t n = 0, *ids = malloc(sizeof(int64_t) * (c->sites.n + 1));
    if (!ids) return jn_error(JN_ERR_NOMEM, "analyzer: out of memory");
    for (size_t i = 0; i < c->sites.cap; i++)
        if (c->sites.used[i]) ids[n++] = (int64_t)c->sites.k[i];
    qsort(ids, (size_t)n, sizeof *ids, cmp_i64);
    jn_status s = JN_OK;
    for (int64_t i = 0; i < n && !s; i++) {
        const jn_db_site *r = site_row(c, ids[i]);
        s = jn_ir_site_add(c->m, ids[i], r ? r->file : "?", r ? r->line : 0, r ? r->func : "?");
    }
    free(ids);
    return s;
}

/* ------------------------------------------------------------- reading */
static void progress(an_ctx *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void progress(an_ctx *c, const char *fmt, ...) {
    if (!c->opt || !c->opt->progress) return;
    va_list ap;
    va_start(ap, fmt);
    vfprintf(c->opt->progress, fmt, ap);
    va_end(ap);
    fflush(c->opt->progress);
}

/* A step whose chunk is damaged (an_decode_step's JN_ERR_VALUE) is
 * skipped, with its message kept for jn_an_skipped; both passes skip the
 * same steps, so positions and last uses agree.  The other steps are
 * analyzed as if it had not been recorded. */
static jn_status read_run(an_ctx *c, int64_t run) {
    c->run = run;
    c->step = -1;
    jn_status s = an_load_optable(c);
    if (s) return s;
    int64_t *steps = NULL, n = 0, nbad = 0;
    if ((s = an_step_ids(c, &steps, &n))) return s;
    uint8_t *bad = calloc((size_t)n + 1, 1);
    if (!bad) {
        free(steps);
        return jn_error(JN_ERR_NOMEM, "analyzer: out of memory");
    }
    an_map_clear(&c->lastuse);
    an_map_clear(&c->livepos);
    c->pos = 0;
    for (int64_t i = 0; i < n && !s; i++) {
        s = an_decode_step(c, steps[i]);
        if (s == JN_ERR_VALUE) {
            bad[i] = 1, nbad++;
            s = skip_note("%s", jn_errmsg());
            continue;
        }
        if (!s) s = an_note_uses_step(c);
    }
    c->pos = 0;
    if (!s && c->rg) s = an_regions_run(c);
    for (int64_t i = 0; i < n && !s; i++) {
        if (bad[i]) continue;
        if (!(s = an_decode_step(c, steps[i])) && c->rg) s = an_regions_step(c);
        if (!s) s = an_segment_step(c);
        if (!s && n >= 1000 && (i + 1) % 1000 == 0)
            progress(c, "janus optimize: run %lld: %lld of %lld steps\n", (long long)run, (long long)i + 1,
                     (long long)n);
    }
    c->st->steps += n - nbad;
    c->st->skipped += nbad;
    c->st->runs++;
    free(bad);
    free(steps);
    return s;
}

/* ----------------------------------------------------------- building */
static const char *reason_text(int code) {
    switch (code) {
    case AN_R_VIEW_WRITE: return "in-place write into a view";
    case AN_R_STALE_VIEW: return "a view is read after its base was written in place";
    case AN_R_INCONSISTENT: return "the trace shows one tensor with two dtypes or shapes";
    default: return "unsupported";
    }
}

static jn_status build_group(an_ctx *c, an_group *grp, int32_t *ngroups) {
    char site[512], site2[512];
    int64_t support = 0;
    const an_ex *bad = NULL;
    for (int64_t i = 0; i < grp->nex; i++) {
        const an_ex *e = &c->ex[grp->ex[i]];
        support += e->count;
        if (e->reason_code && !bad) bad = e;
    }
    an_site_str(c, grp->first_site, site, sizeof site);
    if (bad) {
        c->st->uncaptured++;
        return an_reason(c, "group at %s (%lld segments): not captured: %s (%s at %s)", site, (long long)support,
                         reason_text(bad->reason_code), an_op_name(bad->reason_op),
                         an_site_str(c, bad->reason_site, site2, sizeof site2));
    }
    an_struct *s = NULL;
    int32_t n = 0;
    jn_status st = an_align(c, grp, &s, &n);
    if (st) return st;
    int32_t first = c->m->ngraphs;
    for (int32_t k = 0; k < n && !st; k++) {
        if (s[k].reason) continue;
        char name[32];
        snprintf(name, sizeof name, "g%d", c->m->ngraphs);
        jn_ir_graph *g = jn_ir_graph_add(c->m, name);
        if (!g) {
            st = jn_error(JN_ERR_NOMEM, "analyzer: out of memory");
            break;
        }
        s[k].group = *ngroups;
        /* JANUS_AN_SELFCHECK=all: every graph proves itself against its
         * exemplars (loop graphs always do, in align.c); for tests and fuzzing */
        const char *w = NULL, *all = "";
        if ((st = jn_setting_str(JN_S_AN_SELFCHECK, &all)) != JN_OK) break;
        st = an_generalize_checked(c, &s[k], grp, g, !strcmp(all, "all") ? &w : NULL);
        if (!st && w)
            st = jn_error(JN_ERR_RUNTIME, "analyzer: internal error: graph %s does not reproduce its recorded "
                          "segments (%s); please report this with the trace store", g->name ? g->name : "?", w);
    }
    for (int32_t k = 0; k < n; k++) {
        if (s[k].reason && !st)
            st = an_reason(c, "group at %s, variant %d (%lld segments): not captured: %s", site, k,
                           (long long)s[k].support, s[k].reason);
        free(s[k].ex);
        free(s[k].reason);
        an_tmpl_free(s[k].tmpl);
    }
    free(s);
    if (!st && c->m->ngraphs > first) {
        (*ngroups)++;
        c->st->variants += c->m->ngraphs - first - 1;
    }
    return st;
}

static void ex_free(an_ex *e) {
    free(e->ops), free(e->refs), free(e->vals), free(e->islots), free(e->fslots), free(e->decs);
    free(e->reps);
    free(e->attrv);
    e->ops = NULL, e->refs = NULL, e->vals = NULL, e->islots = NULL, e->fslots = NULL, e->decs = NULL;
    e->reps = NULL, e->attrv = NULL;
}

static void ctx_free(an_ctx *c) {
    for (int64_t i = 0; i < c->nex; i++) ex_free(&c->ex[i]);
    free(c->ex);
    for (int64_t i = 0; i < c->ngroups; i++) free(c->groups[i].ex);
    free(c->groups);
    an_ex *s = &c->scr;
    free(s->ops), free(s->refs), free(s->vals), free(s->islots), free(s->fslots), free(s->decs);
    free(s->attrv);
    free(c->sb.ev);
    free(c->sb.tr);
    free(c->sb.attrs);
    free(c->sb.reg);
    free(c->sb.rargs);
    an_regions_free(c);
    free(c->opmap);
    free(c->ids);
    an_map_free(&c->lastuse);
    an_map_free(&c->livepos);
    an_map_free(&c->exhash);
    an_map_free(&c->grouphash);
    an_map_free(&c->idmap);
    an_map_free(&c->sites);
    an_map_free(&c->dimvar);
    free(c->dv);
    jn_db_sites_free(c->dbsites, c->ndbsites);
}

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

jn_status jn_an_analyze(jn_db *db, const jn_an_options *opt, jn_ir_module **out, jn_an_stats *stats) {
    double t0 = now();
    jn_an_stats local;
    if (!stats) stats = &local;
    memset(stats, 0, sizeof *stats);
    msgs_clear(&reasons);
    msgs_clear(&skipped);
    an_matcher_clear();
    if (!out) return jn_error(JN_ERR_VALUE, "jn_an_analyze: NULL output pointer");
    *out = NULL;
    if (!db) return jn_error(JN_ERR_VALUE, "jn_an_analyze: NULL trace store");
    an_ctx c;
    memset(&c, 0, sizeof c);
    c.db = db;
    c.opt = opt;
    c.st = stats;
    jn_status s = JN_OK;
    int64_t *runs = NULL, nruns = 0;
    /* one read transaction: every table seen at the same commit, even while
     * a recorder appends */
    if (opt && opt->regions) s = an_regions_begin(&c);
    if (!s && !(s = jn_db_read_begin(db)) && !(s = an_run_ids(&c, &runs, &nruns)))
        for (int64_t i = 0; i < nruns && !s; i++) s = read_run(&c, runs[i]);
    if (!s && c.rg) s = an_regions_end(&c);
    free(runs);
    stats->exemplars = c.nex;
    /* what only reading needed goes before the graphs are built */
    free(c.sb.ev), free(c.sb.tr), free(c.sb.attrs), free(c.sb.reg), free(c.sb.rargs);
    memset(&c.sb, 0, sizeof c.sb);
    free(c.ids);
    c.ids = NULL;
    c.nids = c.capids = 0;
    an_map_free(&c.lastuse);
    an_map_free(&c.livepos);
    an_map_free(&c.idmap);
    an_map_free(&c.exhash);
    if (!s && !(c.m = jn_ir_module_new())) s = jn_error(JN_ERR_NOMEM, "analyzer: out of memory");
    if (!s) {
        c.m->optable_hash = jn_optable_hash();
        s = an_dim_ranges(&c);
        int32_t ngroups = 0;
        for (int64_t gi = 0; gi < c.ngroups && !s; gi++) {
            s = build_group(&c, &c.groups[gi], &ngroups);
            /* a group's exemplars are done with once its graphs exist: the
             * next group's graphs grow while they are freed */
            for (int64_t k = 0; k < c.groups[gi].nex; k++) ex_free(&c.ex[c.groups[gi].ex[k]]);
        }
        stats->groups = ngroups;
        stats->graphs = c.m->ngraphs;
        for (int32_t k = 0; k < c.m->ngraphs; k++) stats->loops += c.m->graphs[k]->nloops;
    }
    if (!s) s = add_sites(&c);
    jn_db_read_end(db);
    if (!s && (s = jn_ir_verify_module(c.m))) {
        char msg[512];
        snprintf(msg, sizeof msg, "%s", jn_errmsg());
        s = jn_error(JN_ERR_RUNTIME, "analyzer: internal error: the graphs it built do not verify (%s); please "
                     "report this with the trace store", msg);
    }
    ctx_free(&c);
    if (s) {
        jn_ir_module_free(c.m);
        stats->seconds = now() - t0;
        return s;
    }
    *out = c.m;
    stats->seconds = now() - t0;
    return JN_OK;
}
