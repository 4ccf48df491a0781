/* inspect.c -- `janus inspect [--json | --graphs] [--run N] run.db`
 *
 * Summarizes a trace store for a person (text) or a program (--json, one
 * JSON object): the runs with their argv, status and times, and per run the
 * steps, the op histogram, the distinct step signatures and -- for each
 * pair of consecutive distinct signatures -- the first event where their
 * first steps differ (decoded from the stored chunks, op names taken from
 * the run's own op table, with the call site), the sync points, the
 * control-flow decisions and the shape variation.  --graphs prints the
 * analyzer's graphs instead (jn_cli_dump_graphs in optimize.c).
 *
 * The store is opened read-only, so this works while another process is
 * still recording into it (WAL readers see the last committed step), on a
 * store whose last run was killed, and where nothing can be written (a
 * read-only mount, another user's directory).  Every number comes from
 * db/'s read functions (jn_db.h, "reading"), all inside one read
 * transaction; only the signature differences decode events.
 * A run of `janus replay` (schema v3: kind 'replay' or 'eager') shows its
 * counters instead of steps: hit rate, per graph hits, misses and seconds,
 * and its misses grouped by guard (jn_db_replay_miss_groups: one line per
 * guard however many values it saw, with their range), then the fallbacks
 * by choice, what its regions did, and what its backward skip did (calls,
 * skipped, plans learned; per place and reason the calls not skipped, and
 * the skipped ones the engine ran after all).
 * Last come the bundles `janus optimize` stored (schema v2): per bundle its
 * id, target, time, sizes, graph count, source runs, and whether this
 * janus on this machine would load it (or the one-sentence reason not).
 */
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "jn_cli.h"
#include "jn_db.h"
#include "jn_bundle.h"

const char jn_cli_inspect_usage[] =
    "usage: janus inspect [--json | --graphs] [--run N] PATH\n"
    "\n"
    "Print what a trace store (written by `janus record`) holds: the runs\n"
    "(argv, status, exit code, times), and per run the steps, the op\n"
    "histogram, the distinct step signatures and how consecutive ones differ\n"
    "(the first differing op with its call site), sync points, control-flow\n"
    "decisions and shape variation; then the bundles `janus optimize` stored\n"
    "(target, size, graphs, source runs, and whether this machine can use\n"
    "them).  Runs of `janus replay` show their counters instead: hit rate,\n"
    "per-graph hits, misses and time, the most frequent miss reasons with\n"
    "their source line, per region (module, optimizer step, ...) the\n"
    "calls that ran without their Python and why the others ran it, and the\n"
    "backward() calls the replay skipped, with why the others were not (per\n"
    "graph and token).  The store is opened read-only.\n"
    "\n"
    "options:\n"
    "  --json      print one JSON object instead of text\n"
    "  --graphs    print the graphs `janus optimize` mines from the store\n"
    "              (IR text, as `janus optimize --dump-ir`)\n"
    "  --run N     only run N\n"
    "  -h, --help  show this help\n";

static const char *sync_name(int k) { return jn_db_sync_name(k); }
static const char *dec_name(int k) { return k == JN_DEC_BRANCH ? "branch" : k == JN_DEC_LOOP ? "loop" : "?"; }

typedef struct {
    jn_db *db;
    const char *path;
    int json;
    jn_cli_json j;
    int failed;               /* a read failed and was reported */
    jn_db_site *sites;        /* every call site, loaded at first use */
    int nsites, sites_loaded;
} ctx;

/* Say why a read failed (the first time) and stop after this run. */
static void failed(ctx *c) {
    if (!c->failed) fprintf(stderr, "janus inspect: %s\n", jn_errmsg());
    c->failed = 1;
}

/* "file:line func" of a call site id (buf >= 512). */
static const char *callsite(ctx *c, int64_t id, char *buf, size_t n) {
    snprintf(buf, n, "?");
    if (id <= 0) return buf;
    if (!c->sites_loaded) {
        c->sites_loaded = 1;
        if (jn_db_sites(c->db, &c->sites, &c->nsites) != JN_OK) failed(c);
    }
    const jn_db_site *site = jn_db_site_find(c->sites, c->nsites, id);
    if (site) snprintf(buf, n, "%s:%d %s", site->file, site->line, site->func);
    return buf;
}

static const char *fmt_time(double t, char *buf) {
    if (!(t > 0)) return strcpy(buf, "-");
    time_t s = (time_t)t;
    struct tm tm;
    localtime_r(&s, &tm);
    strftime(buf, 32, "%Y-%m-%d %H:%M:%S", &tm);
    return buf;
}

/* ------------------------------------------------------- the run's op table */

typedef struct {
    char name[64];
    int nattrs;
    char attr_name[JN_MAX_ATTRS][24];
    char attr_kind[JN_MAX_ATTRS];
} opdesc;

typedef struct {
    opdesc *ops;
    int n;
} optable;

/* The run's op table with each schema ("a:f=1,b:L") split into attribute
 * names and kinds; empty when the store has none. */
static void optable_load(ctx *c, int64_t run, optable *t) {
    t->ops = NULL;
    t->n = 0;
    jn_db_op_row *rows = NULL;
    int nrows = 0;
    if (jn_db_run_optable(c->db, run, &rows, &nrows) != JN_OK) {
        failed(c);
        return;
    }
    int n = nrows && (t->ops = calloc((size_t)nrows, sizeof *t->ops)) ? nrows : 0;
    for (int i = 0; i < n; i++) {
        opdesc *o = &t->ops[t->n++];
        snprintf(o->name, sizeof o->name, "%s", rows[i].name);
        const char *p = rows[i].schema, *end = p + strlen(p);
        while (p < end && o->nattrs < JN_MAX_ATTRS) {
            const char *comma = memchr(p, ',', (size_t)(end - p));
            const char *ae = comma ? comma : end;
            const char *colon = memchr(p, ':', (size_t)(ae - p));
            if (colon) {
                size_t an = (size_t)(colon - p);
                snprintf(o->attr_name[o->nattrs], 24, "%.*s", (int)(an < 23 ? an : 23), p);
                o->attr_kind[o->nattrs] = colon + 1 < ae ? colon[1] : 'i';
                o->nattrs++;
            }
            p = comma ? comma + 1 : end;
        }
    }
    jn_db_run_optable_free(rows, nrows);
}

static const char *op_name(const optable *t, uint32_t op, char *buf) {
    if (op < (uint32_t)t->n) return t->ops[op].name;
    snprintf(buf, 32, "op#%u", op);
    return buf;
}

/* --------------------------------------------------------- step differences */

/* Differences found at one event, as text lines. */
typedef struct {
    char **v;
    int n, cap;
} strs;

static void strs_add(strs *s, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void strs_add(strs *s, const char *fmt, ...) {
    if (s->n == s->cap) {
        int cap = s->cap ? s->cap * 2 : 8;
        char **p = realloc(s->v, (size_t)cap * sizeof *p);
        if (!p) return;
        s->v = p;
        s->cap = cap;
    }
    va_list ap;
    va_start(ap, fmt);
    char *m = NULL;
    if (vasprintf(&m, fmt, ap) >= 0) s->v[s->n++] = m;
    va_end(ap);
}

static void strs_free(strs *s) {
    for (int i = 0; i < s->n; i++) free(s->v[i]);
    free(s->v);
    memset(s, 0, sizeof *s);
}

static const char *dtype_name(int d) { return d < JN_NDTYPES ? jn_dtype_names[d] : "?"; }

static void shape_str(int ndim, const int64_t *v, char *buf, size_t n) {
    size_t k = 0;
    k += (size_t)snprintf(buf + k, n - k, "[");
    for (int i = 0; i < ndim && i < JN_MAX_DIMS && k < n; i++)
        k += (size_t)snprintf(buf + k, n - k, i ? ", %lld" : "%lld", (long long)v[i]);
    if (k < n) snprintf(buf + k, n - k, "]");
}

static const char *attr_str(char kind, const jn_attr *a, char *buf, size_t n) {
    switch (kind) {
    case 'f': snprintf(buf, n, "%.9g", a->f); break;
    case 'L': shape_str(a->l.n, a->l.v, buf, n); break;
    case 'b': snprintf(buf, n, "%s", a->i ? "True" : "False"); break;
    case 'd': snprintf(buf, n, "%s", a->i < 0 ? "default" : dtype_name((int)a->i)); break;
    default: snprintf(buf, n, "%lld", (long long)a->i);
    }
    return buf;
}

static int attr_eq(char kind, const jn_attr *a, const jn_attr *b) {
    if (kind == 'f') return a->f == b->f || (isnan(a->f) && isnan(b->f));
    if (kind == 'L') {
        if (a->l.n != b->l.n) return 0;
        for (int i = 0; i < a->l.n && i < JN_MAX_DIMS; i++)
            if (a->l.v[i] != b->l.v[i]) return 0;
        return 1;
    }
    return a->i == b->i;
}

static const char *pytype_names[] = {"tensor", "int", "float", "bool"};

static void tref_diff(strs *d, const char *what, int idx, const jn_db_tref *a, const jn_db_tref *b) {
    char x[256], y[256];
    if (a->dtype != b->dtype)
        strs_add(d, "%s %d dtype: %s vs %s", what, idx, dtype_name(a->dtype), dtype_name(b->dtype));
    int nd = a->ndim < JN_MAX_DIMS ? a->ndim : JN_MAX_DIMS;
    int same = a->ndim == b->ndim;
    for (int i = 0; same && i < nd; i++) same = a->shape[i] == b->shape[i];
    if (!same) {
        shape_str(a->ndim, a->shape, x, sizeof x);
        shape_str(b->ndim, b->shape, y, sizeof y);
        strs_add(d, "%s %d shape: %s vs %s", what, idx, x, y);
    } else {
        int ss = 1;
        for (int i = 0; ss && i < nd; i++) ss = a->strides[i] == b->strides[i];
        if (!ss) {
            shape_str(a->ndim, a->strides, x, sizeof x);
            shape_str(b->ndim, b->strides, y, sizeof y);
            strs_add(d, "%s %d strides: %s vs %s", what, idx, x, y);
        }
    }
    if (a->pytype != b->pytype)
        strs_add(d, "%s %d Python type: %s vs %s", what, idx, a->pytype < 4 ? pytype_names[a->pytype] : "?",
                 b->pytype < 4 ? pytype_names[b->pytype] : "?");
    if (a->role == JN_TR_SCALAR && b->role == JN_TR_SCALAR && a->scalar != b->scalar &&
        !(isnan(a->scalar) && isnan(b->scalar)))
        strs_add(d, "%s %d scalar value: %.9g vs %.9g", what, idx, a->scalar, b->scalar);
}

static const char *ev_desc(const optable *t, const jn_db_event *e, char *buf, size_t n) {
    char tmp[32];
    if (e->kind == JN_EV_OP) snprintf(buf, n, "%s", op_name(t, e->op, tmp));
    else if (e->kind == JN_EV_SYNC) snprintf(buf, n, "sync %s", sync_name(e->sync_kind));
    else if (e->kind == JN_EV_DECISION) snprintf(buf, n, "%s decision", dec_name(e->dec_kind));
    else if (e->kind == JN_EV_LIVE) snprintf(buf, n, "%u tensors alive at the segment's end", e->nlive);
    else snprintf(buf, n, "event kind %d", e->kind);
    return buf;
}

/* Differences between two events.  The structural pass (what a step
 * signature covers: kind, op, non-float attributes, call site) skips tensor
 * metadata; the full pass adds float attributes, dtypes, shapes, strides and
 * Python argument types.
 * The Philox seed/offset of random ops differ at every call by design and
 * are never reported. */
static void event_diff(ctx *c, const optable *t, const jn_db_event *a, const jn_db_event *b, int full, strs *d) {
    char x[512], y[512];
    if (a->kind != b->kind || (a->kind == JN_EV_OP && a->op != b->op)) {
        strs_add(d, "op: %s vs %s", ev_desc(t, a, x, sizeof x), ev_desc(t, b, y, sizeof y));
    } else if (a->kind == JN_EV_OP) {
        const opdesc *o = a->op < (uint32_t)t->n ? &t->ops[a->op] : NULL;
        int na = a->nattrs > b->nattrs ? a->nattrs : b->nattrs;
        if (na > JN_MAX_ATTRS) na = JN_MAX_ATTRS;
        for (int i = 0; i < na; i++) {
            char kind = o && i < o->nattrs ? o->attr_kind[i] : 'i';
            if (o && i < o->nattrs && (!strcmp(o->attr_name[i], "seed") || !strcmp(o->attr_name[i], "offset")))
                continue;
            if (kind == 'f' && !full) continue; /* float attrs (lr, eps) are not in the signature either */
            if (!attr_eq(kind, &a->attrs.a[i], &b->attrs.a[i])) {
                char nm[32];
                if (o && i < o->nattrs) snprintf(nm, sizeof nm, "%s", o->attr_name[i]);
                else snprintf(nm, sizeof nm, "#%d", i);
                strs_add(d, "attr %s: %s vs %s", nm, attr_str(kind, &a->attrs.a[i], x, sizeof x),
                         attr_str(kind, &b->attrs.a[i], y, sizeof y));
            }
        }
        if (a->inplace != b->inplace) strs_add(d, "in-place: %d vs %d", a->inplace, b->inplace);
        if (a->nin != b->nin) strs_add(d, "inputs: %d vs %d", a->nin, b->nin);
        for (int i = 0; full && i < a->nin && i < b->nin; i++) tref_diff(d, "input", i, &a->in[i], &b->in[i]);
        if (a->nout != b->nout) strs_add(d, "outputs: %d vs %d", a->nout, b->nout);
        for (int i = 0; full && i < a->nout && i < b->nout; i++) tref_diff(d, "output", i, &a->out[i], &b->out[i]);
    } else if (a->kind == JN_EV_SYNC) {
        if (a->sync_kind != b->sync_kind)
            strs_add(d, "sync kind: %s vs %s", sync_name(a->sync_kind), sync_name(b->sync_kind));
        /* Observed values differ all the time (the loss); not a difference of the step's shape. */
    } else if (a->kind == JN_EV_DECISION) {
        if (a->dec_kind != b->dec_kind)
            strs_add(d, "decision kind: %s vs %s", dec_name(a->dec_kind), dec_name(b->dec_kind));
        if (a->outcome != b->outcome)
            strs_add(d, "%s outcome: %lld vs %lld", dec_name(a->dec_kind), (long long)a->outcome,
                     (long long)b->outcome);
    }
    if (a->callsite != b->callsite)
        strs_add(d, "call site: %s vs %s", callsite(c, a->callsite, x, sizeof x), callsite(c, b->callsite, y, sizeof y));
}

typedef struct {
    int64_t step_a, step_b;
    int64_t index;            /* -1: no event differs */
    char *desc_a, *desc_b;    /* op names (or "end of step") */
    char *site_a, *site_b;
    strs diffs;
    char *error;              /* chunks unreadable */
} sigdiff;

static void sigdiff_free(sigdiff *s) {
    free(s->desc_a); free(s->desc_b); free(s->site_a); free(s->site_b); free(s->error);
    strs_free(&s->diffs);
}

/* The next event that a step signature covers: region markers (5.2) are not. */
static jn_status next_event(jn_db_decoder *d, jn_db_event *e, int *got) {
    jn_status s;
    do s = jn_db_decoder_next(d, e, got);
    while (!s && *got && e->kind == JN_EV_REGION);
    return s;
}

static void compare_steps(ctx *c, jn_db *db, const optable *t, int64_t run, int full, sigdiff *r) {
    void *da = NULL, *db_ = NULL;
    size_t la = 0, lb = 0;
    jn_db_decoder *A = NULL, *B = NULL;
    r->index = -1;
    if (jn_db_read_chunk(db, run, r->step_a, &da, &la) != JN_OK ||
        jn_db_read_chunk(db, run, r->step_b, &db_, &lb) != JN_OK ||
        jn_db_decoder_new(da, la, &A) != JN_OK || jn_db_decoder_new(db_, lb, &B) != JN_OK) {
        r->error = strdup(jn_errmsg());
        goto out;
    }
    char x[512];
    for (int64_t i = 0;; i++) {
        jn_db_event ea, eb;
        int ga = 0, gb = 0;
        memset(&ea, 0, sizeof ea);
        memset(&eb, 0, sizeof eb);
        if (next_event(A, &ea, &ga) != JN_OK || next_event(B, &eb, &gb) != JN_OK) {
            r->error = strdup(jn_errmsg());
            goto out;
        }
        if (!ga && !gb) break;
        if (!ga || !gb) {
            r->index = i;
            r->desc_a = strdup(ga ? ev_desc(t, &ea, x, sizeof x) : "(end of step)");
            r->desc_b = strdup(gb ? ev_desc(t, &eb, x, sizeof x) : "(end of step)");
            r->site_a = strdup(ga ? callsite(c, ea.callsite, x, sizeof x) : "");
            r->site_b = strdup(gb ? callsite(c, eb.callsite, x, sizeof x) : "");
            strs_add(&r->diffs, "step %lld %s after %lld events", (long long)(ga ? r->step_b : r->step_a),
                     "ends", (long long)i);
            break;
        }
        event_diff(c, t, &ea, &eb, full, &r->diffs);
        if (r->diffs.n) {
            r->index = i;
            r->desc_a = strdup(ev_desc(t, &ea, x, sizeof x));
            r->desc_b = strdup(ev_desc(t, &eb, x, sizeof x));
            r->site_a = strdup(callsite(c, ea.callsite, x, sizeof x));
            r->site_b = strdup(callsite(c, eb.callsite, x, sizeof x));
            break;
        }
    }
out:
    jn_db_decoder_free(A);
    jn_db_decoder_free(B);
    free(da);
    free(db_);
}

/* ------------------------------------------------------------------ runs */

/* Print a stored argv (a JSON array of strings) as a shell command line a
 * person can copy; anything unexpected is printed as stored. */
static void print_argv(const char *json) {
    const char *p = json;
    char *out = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&out, &len);
    int ok = f && p && *p++ == '[';
    int first = 1;
    while (ok) {
        while (*p == ' ') p++;
        if (*p == ']') { p++; break; }
        if (!first) {
            if (*p++ != ',') { ok = 0; break; }
            while (*p == ' ') p++;
        }
        if (*p++ != '"') { ok = 0; break; }
        /* decode one string into w */
        char w[4096];
        size_t n = 0;
        while (ok && *p && *p != '"') {
            unsigned ch = (unsigned char)*p++;
            if (ch == '\\') {
                char e = *p++;
                switch (e) {
                case 'n': ch = '\n'; break;
                case 't': ch = '\t'; break;
                case 'r': ch = '\r'; break;
                case 'b': ch = '\b'; break;
                case 'f': ch = '\f'; break;
                case 'u': {
                    unsigned v = 0;
                    for (int k = 0; k < 4; k++) {
                        char h = *p++;
                        v = v * 16 + (unsigned)(h >= '0' && h <= '9' ? h - '0' : h >= 'a' && h <= 'f' ? h - 'a' + 10
                                                : h >= 'A' && h <= 'F' ? h - 'A' + 10 : 0);
                        if (!h) { ok = 0; break; }
                    }
                    if (v >= 0x80) { /* UTF-8; surrogate halves become '?' */
                        if (v >= 0xD800 && v <= 0xDFFF) ch = '?';
                        else if (v < 0x800) {
                            if (n + 2 < sizeof w) { w[n++] = (char)(0xC0 | (v >> 6)); w[n++] = (char)(0x80 | (v & 0x3F)); }
                            continue;
                        } else {
                            if (n + 3 < sizeof w) {
                                w[n++] = (char)(0xE0 | (v >> 12));
                                w[n++] = (char)(0x80 | ((v >> 6) & 0x3F));
                                w[n++] = (char)(0x80 | (v & 0x3F));
                            }
                            continue;
                        }
                    } else ch = v;
                    break;
                }
                case 0: ok = 0; break;
                default: ch = (unsigned char)e;
                }
            }
            if (n + 1 < sizeof w) w[n++] = (char)ch;
        }
        if (!ok || *p++ != '"') { ok = 0; break; }
        w[n] = 0;
        int plain = n > 0;
        for (size_t k = 0; k < n && plain; k++)
            plain = strchr("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_@%+=:,./-", w[k]) != NULL;
        if (!first) fputc(' ', f);
        if (plain) fputs(w, f);
        else {
            fputc('\'', f);
            for (size_t k = 0; k < n; k++) {
                if (w[k] == '\'') fputs("'\\''", f);
                else fputc(w[k], f);
            }
            fputc('\'', f);
        }
        first = 0;
    }
    if (f) fclose(f);
    fputs(ok && out ? out : (json ? json : ""), stdout);
    free(out);
}

static void print_run_header(ctx *c, const jn_db_run_row *r) {
    char t1[32], t2[32];
    if (c->json) {
        jn_cli_json *j = &c->j;
        jn_cli_json_key(j, "id"); jn_cli_json_int(j, r->id);
        jn_cli_json_key(j, "argv");
        /* argv is stored as JSON already; splice it in verbatim when it looks like an array. */
        size_t al = r->argv_json ? strlen(r->argv_json) : 0;
        if (al >= 2 && r->argv_json[0] == '[' && r->argv_json[al - 1] == ']') {
            jn_cli_json_raw(j, r->argv_json);
        } else {
            jn_cli_json_str(j, r->argv_json);
        }
        jn_cli_json_key(j, "cwd"); jn_cli_json_str(j, r->cwd);
        jn_cli_json_key(j, "started"); jn_cli_json_num(j, r->started);
        jn_cli_json_key(j, "ended"); jn_cli_json_num(j, r->ended); /* NaN (still running) -> null */
        jn_cli_json_key(j, "exit_status");
        if (!r->has_exit_status) jn_cli_json_null(j);
        else jn_cli_json_int(j, r->exit_status);
        jn_cli_json_key(j, "status"); jn_cli_json_str(j, r->status ? r->status : "running");
        jn_cli_json_key(j, "python_version"); jn_cli_json_str(j, r->python_version);
        jn_cli_json_key(j, "janus_version"); jn_cli_json_str(j, r->janus_version);
        jn_cli_json_key(j, "hostname"); jn_cli_json_str(j, r->hostname);
        jn_cli_json_key(j, "device"); jn_cli_json_str(j, r->device);
        jn_cli_json_key(j, "optable_hash"); jn_cli_json_str(j, r->optable_hash);
        jn_cli_json_key(j, "kind"); jn_cli_json_str(j, r->kind);
        jn_cli_json_key(j, "bundle_id");
        if (!r->bundle_id) jn_cli_json_null(j);
        else jn_cli_json_int(j, r->bundle_id);
        return;
    }
    printf("run %lld  ", (long long)r->id);
    if (strcmp(r->kind, "record")) {
        printf("[%s", r->kind);
        if (r->bundle_id) printf(" of bundle %lld", (long long)r->bundle_id);
        printf("]  ");
    }
    if (r->device && !strncmp(r->device, "cpu rank ", 9)) printf("rank %s  ", r->device + 9); /* janus.distributed */
    if (r->status && !strcmp(r->status, "lost"))
        printf("lost (process %lld died without closing it)", (long long)r->pid);
    else
        printf("%s", r->status && r->status[0] ? r->status : "running (or ended without closing)");
    if (r->has_exit_status) printf(" (exit %lld)", (long long)r->exit_status);
    printf("  ");
    print_argv(r->argv_json);
    printf("\n");
    printf("  started %s", fmt_time(r->started, t1));
    if (!isnan(r->ended)) printf("  ended %s  (%.1f s)", fmt_time(r->ended, t2), r->ended - r->started);
    const char *py = r->python_version;
    printf("\n  cwd %s  host %s  python %s  janus %s\n", r->cwd ? r->cwd : "", r->hostname ? r->hostname : "",
           py && py[0] ? py : "-", r->janus_version ? r->janus_version : "");
}

static void run_steps(ctx *c, int64_t run) {
    char a[32], b[32];
    jn_db_run_totals t;
    jn_db_count *k = NULL;
    int nk = 0;
    if (jn_db_totals(c->db, run, &t) != JN_OK || jn_db_step_kinds(c->db, run, &k, &nk) != JN_OK) {
        failed(c);
        return;
    }
    if (c->json) {
        jn_cli_json *j = &c->j;
        jn_cli_json_key(j, "steps"); jn_cli_json_int(j, t.steps);
        jn_cli_json_key(j, "ops"); jn_cli_json_int(j, t.ops);
        jn_cli_json_key(j, "syncs"); jn_cli_json_int(j, t.syncs);
        jn_cli_json_key(j, "step_seconds"); jn_cli_json_num(j, t.seconds);
        jn_cli_json_key(j, "step_kinds"); jn_cli_json_obj(j);
        for (int i = 0; i < nk; i++) {
            jn_cli_json_key(j, k[i].name);
            jn_cli_json_int(j, k[i].count);
        }
        jn_cli_json_end(j, '}');
    } else {
        printf("  steps: %s (", jn_cli_commas(t.steps, a));
        for (int i = 0; i < nk; i++) printf("%s%s %s", i ? ", " : "", k[i].name, jn_cli_commas(k[i].count, b));
        printf("%s), %s ops, %s sync points", nk ? "" : "none", jn_cli_commas(t.ops, a), jn_cli_commas(t.syncs, b));
        if (t.steps > 0) printf(", %.2f ms/step", t.seconds * 1e3 / (double)t.steps);
        printf("\n");
    }
    jn_db_counts_free(k, nk);
}

static void run_ops(ctx *c, int64_t run) {
    char a[32];
    jn_db_count *h = NULL;
    int n = 0;
    if (jn_db_op_histogram(c->db, run, &h, &n) != JN_OK) {
        failed(c);
        return;
    }
    if (c->json) {
        jn_cli_json_key(&c->j, "op_histogram");
        jn_cli_json_obj(&c->j);
        for (int i = 0; i < n; i++) {
            jn_cli_json_key(&c->j, h[i].name);
            jn_cli_json_int(&c->j, h[i].count);
        }
        jn_cli_json_end(&c->j, '}');
    } else {
        printf("  op histogram:\n");
        int64_t rest = 0;
        for (int i = 0; i < n; i++) {
            if (i < 15) printf("    %-24s %12s\n", h[i].name, jn_cli_commas(h[i].count, a));
            else rest += h[i].count;
        }
        if (n > 15) printf("    (%d more ops, %s calls)\n", n - 15, jn_cli_commas(rest, a));
        else if (!n) printf("    (none)\n");
    }
    jn_db_counts_free(h, n);
}

static void run_signatures(ctx *c, jn_db *db, int64_t run) {
    jn_db_signature *rows = NULL;
    int n = 0;
    if (jn_db_signatures(db, run, &rows, &n) != JN_OK) {
        failed(c);
        return;
    }
    /* as 16 hex digits, the way the store writes them */
    char (*sig)[17] = calloc((size_t)n + 1, sizeof *sig);
    if (!sig) n = 0;
    for (int i = 0; i < n; i++) snprintf(sig[i], sizeof sig[i], "%016llx", (unsigned long long)rows[i].signature);
    const jn_db_signature *v = rows;
    char a[32];
    if (c->json) {
        jn_cli_json_key(&c->j, "signatures");
        jn_cli_json_arr(&c->j);
        for (int i = 0; i < n; i++) {
            jn_cli_json_obj(&c->j);
            jn_cli_json_key(&c->j, "signature"); jn_cli_json_str(&c->j, sig[i]);
            jn_cli_json_key(&c->j, "steps"); jn_cli_json_int(&c->j, v[i].steps);
            jn_cli_json_key(&c->j, "first_step"); jn_cli_json_int(&c->j, v[i].first_step);
            jn_cli_json_end(&c->j, '}');
        }
        jn_cli_json_end(&c->j, ']');
    } else {
        printf("  step signatures: %d distinct\n", n);
        for (int i = 0; i < n && i < 20; i++)
            printf("    %-16s  %s step%s (first: step %lld)\n", sig[i],
                   jn_cli_commas(v[i].steps, a), v[i].steps == 1 ? "" : "s", (long long)v[i].first_step);
        if (n > 20) printf("    (%d more)\n", n - 20);
    }

    /* How consecutive distinct signatures differ: compare their first steps. */
    optable t;
    optable_load(c, run, &t);
    if (c->json) {
        jn_cli_json_key(&c->j, "signature_diffs");
        jn_cli_json_arr(&c->j);
    } else if (n > 1) {
        printf("  how they differ (first step of each, first differing event):\n");
    }
    int shown = 0;
    for (int i = 0; i + 1 < n && shown < 20; i++, shown++) {
        sigdiff r;
        memset(&r, 0, sizeof r);
        r.step_a = v[i].first_step;
        r.step_b = v[i + 1].first_step;
        /* The first structural difference explains a signature change best;
         * if there is none, the first difference of tensor metadata. */
        compare_steps(c, db, &t, run, 0, &r);
        if (r.index < 0 && !r.error) compare_steps(c, db, &t, run, 1, &r);
        if (c->json) {
            jn_cli_json *j = &c->j;
            jn_cli_json_obj(j);
            jn_cli_json_key(j, "signature_a"); jn_cli_json_str(j, sig[i]);
            jn_cli_json_key(j, "signature_b"); jn_cli_json_str(j, sig[i + 1]);
            jn_cli_json_key(j, "step_a"); jn_cli_json_int(j, r.step_a);
            jn_cli_json_key(j, "step_b"); jn_cli_json_int(j, r.step_b);
            jn_cli_json_key(j, "index");
            if (r.index < 0) jn_cli_json_null(j); else jn_cli_json_int(j, r.index);
            jn_cli_json_key(j, "op_a"); jn_cli_json_str(j, r.desc_a);
            jn_cli_json_key(j, "op_b"); jn_cli_json_str(j, r.desc_b);
            jn_cli_json_key(j, "callsite_a"); jn_cli_json_str(j, r.site_a);
            jn_cli_json_key(j, "callsite_b"); jn_cli_json_str(j, r.site_b);
            jn_cli_json_key(j, "differences"); jn_cli_json_arr(j);
            for (int k = 0; k < r.diffs.n; k++) jn_cli_json_str(j, r.diffs.v[k]);
            jn_cli_json_end(j, ']');
            jn_cli_json_key(j, "error"); jn_cli_json_str(j, r.error);
            jn_cli_json_end(j, '}');
        } else {
            printf("    step %lld vs step %lld: ", (long long)r.step_a, (long long)r.step_b);
            if (r.error) printf("events unreadable (%s)\n", r.error);
            else if (r.index < 0) printf("same events (the signatures differ in what the events do not store)\n");
            else {
                printf("event %lld: %s at %s  vs  %s at %s\n", (long long)r.index, r.desc_a,
                       r.site_a && r.site_a[0] ? r.site_a : "-", r.desc_b, r.site_b && r.site_b[0] ? r.site_b : "-");
                for (int k = 0; k < r.diffs.n; k++) printf("      %s\n", r.diffs.v[k]);
            }
        }
        sigdiff_free(&r);
    }
    if (c->json) jn_cli_json_end(&c->j, ']');
    else if (n - 1 > shown) printf("    (%d more pairs)\n", n - 1 - shown);
    free(t.ops);
    free(sig);
    jn_db_signatures_free(rows, n);
}

static void run_syncs(ctx *c, int64_t run) {
    char site[512], a[32];
    jn_db_sync_point *p = NULL;
    int n = 0;
    if (jn_db_sync_points(c->db, run, &p, &n) != JN_OK) {
        failed(c);
        return;
    }
    if (c->json) {
        jn_cli_json_key(&c->j, "sync_points");
        jn_cli_json_arr(&c->j);
    } else {
        printf("  sync points:\n");
    }
    for (int i = 0; i < n; i++) {
        callsite(c, p[i].callsite, site, sizeof site);
        if (c->json) {
            jn_cli_json *j = &c->j;
            jn_cli_json_obj(j);
            jn_cli_json_key(j, "kind"); jn_cli_json_str(j, sync_name(p[i].kind));
            jn_cli_json_key(j, "callsite"); jn_cli_json_str(j, site);
            jn_cli_json_key(j, "count"); jn_cli_json_int(j, p[i].count);
            jn_cli_json_key(j, "values"); jn_cli_json_arr(j);
            for (int k = 0; k < p[i].nvalues; k++) jn_cli_json_num(j, p[i].values[k]); /* NaN (none) -> null */
            jn_cli_json_end(j, ']');
            jn_cli_json_end(j, '}');
        } else if (i < 20) {
            printf("    %-8s %10s  at %s", sync_name(p[i].kind), jn_cli_commas(p[i].count, a), site);
            int k = 0;
            for (int v = 0; v < p[i].nvalues; v++)
                if (!isnan(p[i].values[v])) printf("%s%.6g", k++ ? ", " : "  values ", p[i].values[v]);
            printf("%s\n", k && p[i].count > k ? ", ..." : "");
        }
    }
    if (c->json) jn_cli_json_end(&c->j, ']');
    else if (!n) printf("    (none)\n");
    else if (n > 20) printf("    (%d more)\n", n - 20);
    jn_db_sync_points_free(p, n);
}

static void run_decisions(ctx *c, int64_t run) {
    char site[512], a[32];
    jn_db_decision *d = NULL;
    int nd = 0;
    if (jn_db_decision_counts(c->db, run, &d, &nd) != JN_OK) {
        failed(c);
        return;
    }
    if (c->json) {
        jn_cli_json_key(&c->j, "decisions");
        jn_cli_json_arr(&c->j);
    } else {
        printf("  control-flow decisions:\n");
    }
    int64_t cur_cs = -1;
    int cur_kind = -1, open = 0, n = 0;
    for (int i = 0; i < nd; i++) {
        int64_t cs = d[i].callsite, out = d[i].outcome, cnt = d[i].count;
        int kind = d[i].kind;
        if (cs != cur_cs || kind != cur_kind) {
            if (open) {
                if (c->json) { jn_cli_json_end(&c->j, ']'); jn_cli_json_end(&c->j, '}'); }
                else printf("\n");
            }
            cur_cs = cs;
            cur_kind = kind;
            open = 1;
            n++;
            callsite(c, cs, site, sizeof site);
            if (c->json) {
                jn_cli_json_obj(&c->j);
                jn_cli_json_key(&c->j, "callsite"); jn_cli_json_str(&c->j, site);
                jn_cli_json_key(&c->j, "kind"); jn_cli_json_str(&c->j, dec_name(kind));
                jn_cli_json_key(&c->j, "outcomes"); jn_cli_json_arr(&c->j);
            } else {
                printf("    %-6s at %s:", dec_name(kind), site);
            }
        }
        if (c->json) {
            jn_cli_json_obj(&c->j);
            jn_cli_json_key(&c->j, "outcome"); jn_cli_json_int(&c->j, out);
            jn_cli_json_key(&c->j, "count"); jn_cli_json_int(&c->j, cnt);
            jn_cli_json_end(&c->j, '}');
        } else if (kind == JN_DEC_BRANCH) {
            printf("  %s x%s", out ? "taken" : "not taken", jn_cli_commas(cnt, a));
        } else {
            printf("  %lld iterations x%s", (long long)out, jn_cli_commas(cnt, a));
        }
    }
    if (open) {
        if (c->json) { jn_cli_json_end(&c->j, ']'); jn_cli_json_end(&c->j, '}'); }
        else printf("\n");
    }
    if (c->json) jn_cli_json_end(&c->j, ']');
    else if (!n) printf("    (none)\n");
    jn_db_decision_counts_free(d, nd);
}

static void run_shapes(ctx *c, int64_t run) {
    char site[512];
    jn_db_shape_var *v = NULL;
    int n = 0;
    if (jn_db_shape_variation(c->db, run, &v, &n) != JN_OK) {
        failed(c);
        return;
    }
    if (c->json) {
        jn_cli_json_key(&c->j, "shape_variation");
        jn_cli_json_arr(&c->j);
    } else {
        printf("  shape variation:\n");
    }
    for (int i = 0; i < n; i++) {
        callsite(c, v[i].callsite, site, sizeof site);
        if (c->json) {
            jn_cli_json_obj(&c->j);
            jn_cli_json_key(&c->j, "op"); jn_cli_json_str(&c->j, v[i].op);
            jn_cli_json_key(&c->j, "callsite"); jn_cli_json_str(&c->j, site);
            jn_cli_json_key(&c->j, "arg"); jn_cli_json_int(&c->j, v[i].arg);
            jn_cli_json_key(&c->j, "dim"); jn_cli_json_int(&c->j, v[i].dim);
            jn_cli_json_key(&c->j, "sizes"); jn_cli_json_arr(&c->j);
            for (int k = 0; k < v[i].nsizes; k++) jn_cli_json_int(&c->j, v[i].sizes[k]);
            jn_cli_json_end(&c->j, ']');
            jn_cli_json_end(&c->j, '}');
        } else {
            printf("    %s at %s, arg %d dim %d: sizes", v[i].op, site, v[i].arg, v[i].dim);
            for (int k = 0; k < v[i].nsizes; k++) printf("%s%lld", k ? ", " : " ", (long long)v[i].sizes[k]);
            printf("\n");
        }
    }
    if (c->json) jn_cli_json_end(&c->j, ']');
    else if (!n) printf("    (none: every op saw the same shapes)\n");
    jn_db_shape_variation_free(v, n);
}

/* ---------------------------------------------------------------- replay */

static int has_mark(const jn_db_miss_group *g) { return strstr(g->pattern, JN_DB_SEEN_MARK) != NULL; }

/* "g1 guard 2 at train.py:12: <reason> (seen 32)": one group of misses in
 * words; with several values seen, the reason with JN_DB_SEEN_MARK where
 * the value goes and their range.  A value the reason does not mention (an
 * op's number) is not shown.  Shared with `janus replay`'s exit line. */
void jn_cli_json_extraps(jn_cli_json *j, const jn_db_replay_extrap *x, int nx) {
    jn_cli_json_arr(j);
    for (int i = 0; i < nx; i++) {
        jn_cli_json_obj(j);
        jn_cli_json_key(j, "graph"); jn_cli_json_str(j, x[i].graph);
        jn_cli_json_key(j, "guard"); jn_cli_json_int(j, x[i].guard);
        jn_cli_json_key(j, "reason"); jn_cli_json_str(j, x[i].reason);
        jn_cli_json_key(j, "site"); jn_cli_json_str(j, x[i].site);
        jn_cli_json_key(j, "recorded"); jn_cli_json_arr(j);
        jn_cli_json_num(j, x[i].lo); jn_cli_json_num(j, x[i].hi);
        jn_cli_json_end(j, ']');
        jn_cli_json_key(j, "seen"); jn_cli_json_arr(j);
        jn_cli_json_num(j, x[i].seen_min); jn_cli_json_num(j, x[i].seen_max);
        jn_cli_json_end(j, ']');
        jn_cli_json_key(j, "count"); jn_cli_json_int(j, x[i].count);
        jn_cli_json_end(j, '}');
    }
    jn_cli_json_end(j, ']');
}

jn_cli_replay_totals jn_cli_replay_sum(const jn_db_replay_graph *g, int ng, const jn_db_replay_miss *m, int nm) {
    jn_cli_replay_totals t = {0};
    int64_t in_graphs = 0, in_rows = 0;
    for (int i = 0; i < ng; i++) {
        t.hits += g[i].hits;
        in_graphs += g[i].misses;
        t.extrapolated += g[i].extrapolated;
        t.seconds += g[i].seconds;
    }
    for (int i = 0; i < nm; i++) {
        in_rows += m[i].count;
        if (m[i].guard == JN_DB_MISS_CHOICE) t.chosen += m[i].count;
    }
    t.misses = in_rows > in_graphs ? in_rows : in_graphs;
    return t;
}

const char *jn_cli_miss_group_text(const jn_db_miss_group *g, char *buf, size_t n) {
    size_t k = (size_t)snprintf(buf, n, "%s", g->graph[0] ? g->graph : "(no graph)");
    if (k < n && g->guard >= 0) k += (size_t)snprintf(buf + k, n - k, " guard %d", (int)g->guard);
    if (k < n && g->site[0]) k += (size_t)snprintf(buf + k, n - k, " at %s", g->site);
    int many = has_mark(g) && (g->nvalues > 1 || g->seen_min != g->seen_max);
    if (k < n) k += (size_t)snprintf(buf + k, n - k, ": %s", many ? g->pattern : g->reason);
    if (k < n && has_mark(g) && !isnan(g->seen_min)) {
        if (g->seen_min == g->seen_max) snprintf(buf + k, n - k, " (seen %.9g)", g->seen_min);
        else if (g->nvalues > 2) snprintf(buf + k, n - k, " (seen %.9g .. %.9g, %lld values)", g->seen_min, g->seen_max,
                                          (long long)g->nvalues);
        else snprintf(buf + k, n - k, " (seen %.9g .. %.9g)", g->seen_min, g->seen_max); /* count unknown or 2 */
    }
    return buf;
}

/* The counters a `janus replay` run stored: totals, per graph (hits inside
 * the recorded ranges and extrapolated past them), the misses grouped by
 * guard (text: the 10 largest groups, then the fallbacks by choice) and the
 * SEEN guards hits went past, with their recorded ranges and the values
 * seen (text: the 10 most frequent). */
static void print_region_replays(ctx *c, jn_db *db, int64_t run);
static void print_backward(ctx *c, jn_db *db, int64_t run);
static void run_replay(ctx *c, jn_db *db, int64_t run, const char *kind) {
    jn_db_replay_graph *g = NULL;
    jn_db_replay_miss *m = NULL;
    jn_db_miss_group *mg = NULL;
    jn_db_replay_extrap *x = NULL;
    int ng = 0, nm = 0, nmg = 0, nx = 0;
    if (jn_db_replay_get(db, run, &g, &ng, &m, &nm) != JN_OK ||
        jn_db_replay_miss_groups(db, run, &mg, &nmg) != JN_OK || jn_db_replay_extraps(db, run, &x, &nx) != JN_OK) {
        jn_db_replay_free(g, ng, m, nm);
        jn_db_miss_groups_free(mg, nmg);
        failed(c);
        return;
    }
    jn_cli_replay_totals t = jn_cli_replay_sum(g, ng, m, nm);
    int64_t hits = t.hits, misses = t.misses, extrap = t.extrapolated, tot = hits + misses;
    double secs = t.seconds;
    if (c->json) {
        jn_cli_json *j = &c->j;
        jn_cli_json_key(j, "replay");
        jn_cli_json_obj(j);
        jn_cli_json_key(j, "hits"); jn_cli_json_int(j, hits);
        jn_cli_json_key(j, "misses"); jn_cli_json_int(j, misses);
        jn_cli_json_key(j, "hit_rate");
        if (tot) jn_cli_json_num(j, (double)hits / (double)tot);
        else jn_cli_json_null(j);
        jn_cli_json_key(j, "seconds"); jn_cli_json_num(j, secs);
        jn_cli_json_key(j, "extrapolated"); jn_cli_json_int(j, extrap);
        jn_cli_json_key(j, "graphs");
        jn_cli_json_arr(j);
        for (int i = 0; i < ng; i++) {
            jn_cli_json_obj(j);
            jn_cli_json_key(j, "graph"); jn_cli_json_str(j, g[i].graph);
            jn_cli_json_key(j, "hits"); jn_cli_json_int(j, g[i].hits);
            jn_cli_json_key(j, "in_range"); jn_cli_json_int(j, g[i].hits - g[i].extrapolated);
            jn_cli_json_key(j, "extrapolated"); jn_cli_json_int(j, g[i].extrapolated);
            jn_cli_json_key(j, "misses"); jn_cli_json_int(j, g[i].misses);
            jn_cli_json_key(j, "seconds"); jn_cli_json_num(j, g[i].seconds);
            jn_cli_json_end(j, '}');
        }
        jn_cli_json_end(j, ']');
        jn_cli_json_key(j, "miss_reasons");
        jn_cli_json_arr(j);
        for (int i = 0; i < nm; i++) {
            jn_cli_json_obj(j);
            jn_cli_json_key(j, "graph"); jn_cli_json_str(j, m[i].graph);
            jn_cli_json_key(j, "guard"); jn_cli_json_int(j, m[i].guard);
            jn_cli_json_key(j, "reason"); jn_cli_json_str(j, m[i].reason);
            jn_cli_json_key(j, "site"); jn_cli_json_str(j, m[i].site);
            jn_cli_json_key(j, "seen"); jn_cli_json_num(j, m[i].seen); /* NaN -> null */
            jn_cli_json_key(j, "count"); jn_cli_json_int(j, m[i].count);
            jn_cli_json_end(j, '}');
        }
        jn_cli_json_end(j, ']');
        jn_cli_json_key(j, "miss_groups");
        jn_cli_json_arr(j);
        for (int i = 0; i < nmg; i++) {
            const jn_db_miss_group *q = &mg[i];
            jn_cli_json_obj(j);
            jn_cli_json_key(j, "graph"); jn_cli_json_str(j, q->graph);
            jn_cli_json_key(j, "guard"); jn_cli_json_int(j, q->guard);
            jn_cli_json_key(j, "choice"); jn_cli_json_raw(j, q->guard == JN_DB_MISS_CHOICE ? "true" : "false");
            jn_cli_json_key(j, "site"); jn_cli_json_str(j, q->site);
            jn_cli_json_key(j, "reason"); jn_cli_json_str(j, q->reason);
            jn_cli_json_key(j, "pattern"); jn_cli_json_str(j, q->pattern);
            jn_cli_json_key(j, "count"); jn_cli_json_int(j, q->count);
            jn_cli_json_key(j, "values"); jn_cli_json_int(j, q->nvalues);
            jn_cli_json_key(j, "seen_min"); jn_cli_json_num(j, q->seen_min); /* NaN -> null */
            jn_cli_json_key(j, "seen_max"); jn_cli_json_num(j, q->seen_max);
            jn_cli_json_end(j, '}');
        }
        jn_cli_json_end(j, ']');
        jn_cli_json_key(j, "extrapolations");
        jn_cli_json_extraps(j, x, nx);
        jn_cli_json_key(j, "regions");
        if (jn_cli_json_region_replays(j, db, run)) failed(c);
        jn_cli_json_key(j, "backward");
        if (jn_cli_json_backward(j, db, run)) failed(c);
        jn_cli_json_end(j, '}');
        jn_db_replay_free(g, ng, m, nm);
        jn_db_miss_groups_free(mg, nmg);
        jn_db_replay_extrap_free(x, nx);
        return;
    }
    char a[32], b[32], d[32];
    if (!strcmp(kind, "eager") && !ng && !nm) {
        printf("  replay: none (ran eagerly, the baseline of `janus replay --eager`)\n");
    } else if (!ng && !nm) {
        printf("  replay: no counters stored (the command did not replay: the store had no usable bundle, "
               "or it never imported janus)\n");
    } else {
        printf("  replay: %.1f%% hit rate: %s of %s segments ran as graphs, %s fell back to eager; "
               "%.3f s in graphs\n", tot ? 100.0 * (double)hits / (double)tot : 0.0, jn_cli_commas(hits, a),
               jn_cli_commas(tot, b), jn_cli_commas(misses, d), secs);
        /* in range: every symbol and trip count inside what the recording saw;
         * extrapolated: past it, where the graph's code is valid (SEEN guards) */
        char e[32], r[32];
        printf("    %-24s %12s %12s %12s %12s %10s\n", "graph", "hits", "in range", "extrapolated", "misses",
               "seconds");
        for (int i = 0; i < ng; i++)
            printf("    %-24s %12s %12s %12s %12s %10.3f\n", g[i].graph, jn_cli_commas(g[i].hits, a),
                   jn_cli_commas(g[i].hits - g[i].extrapolated, r), jn_cli_commas(g[i].extrapolated, e),
                   jn_cli_commas(g[i].misses, b), g[i].seconds);
        /* the groups come real misses first, then the choices (JN_DB_MISS_CHOICE) */
        int nreal = 0, nchoice;
        int64_t real = 0, chosen = 0;
        for (int i = 0; i < nmg; i++) {
            if (mg[i].guard == JN_DB_MISS_CHOICE) chosen += mg[i].count;
            else nreal++, real += mg[i].count;
        }
        nchoice = nmg - nreal;
        char line[4096];
        if (nreal) printf("  misses by guard (%s in %d group%s):\n", jn_cli_commas(real, a), nreal, nreal == 1 ? "" : "s");
        for (int i = 0; i < nreal && i < 10; i++)
            printf("    %8sx  %s\n", jn_cli_commas(mg[i].count, a), jn_cli_miss_group_text(&mg[i], line, sizeof line));
        if (nreal > 10) printf("    ... %d more groups (--json lists all)\n", nreal - 10);
        if (nchoice) printf("  fallbacks by choice (%s, not guard misses):\n", jn_cli_commas(chosen, a));
        for (int i = nreal; i < nmg && i < nreal + 5; i++)
            printf("    %8sx  %s: %s\n", jn_cli_commas(mg[i].count, a), mg[i].graph[0] ? mg[i].graph : "(no graph)",
                   mg[i].reason);
        if (nchoice > 5) printf("    ... %d more (--json lists all)\n", nchoice - 5);
        if (nx) printf("  extrapolated hits (%d guard%s past their recorded ranges):\n", nx, nx == 1 ? "" : "s");
        for (int i = 0; i < nx && i < 10; i++) {
            printf("    %8sx  %s guard %d", jn_cli_commas(x[i].count, a), x[i].graph, (int)x[i].guard);
            if (x[i].site[0]) printf(" at %s", x[i].site);
            printf(": recorded %.17g..%.17g, seen %.17g..%.17g: %s\n", x[i].lo, x[i].hi, x[i].seen_min, x[i].seen_max,
                   x[i].reason);
        }
        if (nx > 10) printf("    ... %d more (--json lists all)\n", nx - 10);
    }
    print_region_replays(c, db, run);
    print_backward(c, db, run);
    jn_db_replay_free(g, ng, m, nm);
    jn_db_miss_groups_free(mg, nmg);
    jn_db_replay_extrap_free(x, nx);
}

/* What the replay's regions did (schema v10): per region its calls and
 * those run without their Python, refused or not, and the reasons the
 * others ran it (text: the 3 most frequent per region), then the misses of
 * a module region keeping several variants, per variant (the 4 most
 * frequent "variant N: ..." rows; a call no variant took counts under each
 * variant kept at its argument signature, region_py.c). */
static int is_variant_row(const char *why) { return !strncmp(why, "variant ", 8) && strchr(why, ':'); }

static void print_region_replays(ctx *c, jn_db *db, int64_t run) {
    jn_db_region_replay *r = NULL;
    jn_db_region_replay_reason *w = NULL;
    int n = 0, nw = 0;
    if (jn_db_region_replays(db, run, &r, &n, &w, &nw) != JN_OK) {
        failed(c);
        return;
    }
    int64_t calls = 0, replaced = 0;
    for (int i = 0; i < n; i++) calls += r[i].calls, replaced += r[i].replaced;
    char a[32], b[32];
    if (n) printf("  region calls at replay: %s of %s ran without their Python\n", jn_cli_commas(replaced, a),
                  jn_cli_commas(calls, b));
    for (int i = 0; i < n; i++) {
        printf("    %s: %s of %s call%s replaced%s\n", r[i].region, jn_cli_commas(r[i].replaced, a),
               jn_cli_commas(r[i].calls, b), r[i].calls == 1 ? "" : "s", r[i].refused ? " (refused)" : "");
        for (int variant = 0, more = 0; variant < 2; variant++, more = 0) {
            for (int k = 0, shown = 0; k < nw; k++) {
                if (strcmp(w[k].region, r[i].region) || is_variant_row(w[k].reason) != variant) continue;
                if (shown++ == (variant ? 4 : 3)) {
                    more = 1;
                    break;
                }
                if (variant && shown == 1)
                    printf("      misses per variant kept (a call no variant at its signature took counts under each):\n");
                printf("      %8sx  %s\n", jn_cli_commas(w[k].count, a), w[k].reason);
            }
            if (more) printf("      ... (--json lists all)\n");
        }
    }
    jn_db_region_replays_free(r, n, w, nw);
}

int jn_cli_json_region_replays(jn_cli_json *j, jn_db *db, int64_t run) {
    jn_db_region_replay *r = NULL;
    jn_db_region_replay_reason *w = NULL;
    int n = 0, nw = 0;
    jn_status s = jn_db_region_replays(db, run, &r, &n, &w, &nw);
    jn_cli_json_arr(j);
    for (int i = 0; i < n; i++) {
        jn_cli_json_obj(j);
        jn_cli_json_key(j, "region"); jn_cli_json_str(j, r[i].region);
        jn_cli_json_key(j, "calls"); jn_cli_json_int(j, r[i].calls);
        jn_cli_json_key(j, "replaced"); jn_cli_json_int(j, r[i].replaced);
        jn_cli_json_key(j, "refused"); jn_cli_json_raw(j, r[i].refused ? "true" : "false");
        jn_cli_json_key(j, "reasons");
        jn_cli_json_arr(j);
        for (int k = 0; k < nw; k++) {
            if (strcmp(w[k].region, r[i].region)) continue;
            jn_cli_json_obj(j);
            jn_cli_json_key(j, "reason"); jn_cli_json_str(j, w[k].reason);
            jn_cli_json_key(j, "count"); jn_cli_json_int(j, w[k].count);
            jn_cli_json_end(j, '}');
        }
        jn_cli_json_end(j, ']');
        jn_cli_json_end(j, '}');
    }
    jn_cli_json_end(j, ']');
    jn_db_region_replays_free(r, n, w, nw);
    return s != JN_OK;
}

/* What the replay's backward skip did (schema v11): the calls, skipped (of
 * the calls), plans learned, then per place and reason the calls not
 * skipped and the skipped ones the engine ran after all (text: the 10 most
 * frequent of each).  Nothing when none was stored (an older store, or a
 * replay that saw no backward). */
static const char *bw_place(const jn_db_replay_backward_reason *w, char *buf, size_t n) {
    if (!w->graph[0]) snprintf(buf, n, "(no graph)");
    else if (w->token < 0) snprintf(buf, n, "%s", w->graph);
    else snprintf(buf, n, "%s token %lld", w->graph, (long long)w->token);
    return buf;
}

static void print_backward(ctx *c, jn_db *db, int64_t run) {
    jn_db_replay_backward_totals t;
    jn_db_replay_backward_reason *w = NULL;
    int has = 0, n = 0;
    if (jn_db_replay_backward(db, run, &has, &t, &w, &n) != JN_OK) {
        failed(c);
        return;
    }
    if (!has) return;
    char a[32], b[32], d[32], e[32], place[512];
    printf("  backward: %s call%s, %s skipped (%.1f%%), %s plan%s learned, %s not skipped", jn_cli_commas(t.calls, a),
           t.calls == 1 ? "" : "s", jn_cli_commas(t.skipped, b),
           t.calls ? 100.0 * (double)t.skipped / (double)t.calls : 0.0, jn_cli_commas(t.learned, d),
           t.learned == 1 ? "" : "s", jn_cli_commas(t.declined, e));
    if (t.fallbacks) printf("; %s skipped then run by the engine", jn_cli_commas(t.fallbacks, a));
    printf("\n");
    for (int fell = 0; fell < 2; fell++) {
        int rows = 0;
        for (int i = 0; i < n; i++) rows += w[i].fallback == fell;
        if (!rows) continue;
        printf("    %s:\n", fell ? "skipped, then run by the engine after all" : "not skipped");
        for (int i = 0, shown = 0; i < n; i++) {
            if (w[i].fallback != fell) continue;
            if (shown++ == 10) {
                printf("      ... %d more (--json lists all)\n", rows - 10);
                break;
            }
            printf("      %8sx  %s: %s\n", jn_cli_commas(w[i].count, a), bw_place(&w[i], place, sizeof place),
                   w[i].reason);
        }
    }
    jn_db_replay_backward_free(w, n);
}

/* The same as an object (null when none was stored). */
int jn_cli_json_backward(jn_cli_json *j, jn_db *db, int64_t run) {
    jn_db_replay_backward_totals t;
    jn_db_replay_backward_reason *w = NULL;
    int has = 0, n = 0;
    jn_status s = jn_db_replay_backward(db, run, &has, &t, &w, &n);
    if (s || !has) {
        jn_cli_json_null(j);
        return s != JN_OK;
    }
    jn_cli_json_obj(j);
    jn_cli_json_key(j, "calls"); jn_cli_json_int(j, t.calls);
    jn_cli_json_key(j, "skipped"); jn_cli_json_int(j, t.skipped);
    jn_cli_json_key(j, "learned"); jn_cli_json_int(j, t.learned);
    jn_cli_json_key(j, "declined"); jn_cli_json_int(j, t.declined);
    jn_cli_json_key(j, "fallbacks"); jn_cli_json_int(j, t.fallbacks);
    jn_cli_json_key(j, "skip_rate");
    if (t.calls) jn_cli_json_num(j, (double)t.skipped / (double)t.calls);
    else jn_cli_json_null(j);
    jn_cli_json_key(j, "reasons");
    jn_cli_json_arr(j);
    for (int i = 0; i < n; i++) {
        jn_cli_json_obj(j);
        jn_cli_json_key(j, "graph"); jn_cli_json_str(j, w[i].graph);
        jn_cli_json_key(j, "token"); jn_cli_json_int(j, w[i].token);
        jn_cli_json_key(j, "name"); jn_cli_json_str(j, w[i].name);
        jn_cli_json_key(j, "reason"); jn_cli_json_str(j, w[i].reason);
        jn_cli_json_key(j, "fallback"); jn_cli_json_raw(j, w[i].fallback ? "true" : "false");
        jn_cli_json_key(j, "count"); jn_cli_json_int(j, w[i].count);
        jn_cli_json_end(j, '}');
    }
    jn_cli_json_end(j, ']');
    jn_cli_json_end(j, '}');
    jn_db_replay_backward_free(w, n);
    return 0;
}

void jn_cli_json_verdicts(jn_cli_json *j, const jn_db_region_verdict *v, int n) {
    jn_cli_json_arr(j);
    for (int i = 0; i < n; i++) {
        jn_cli_json_obj(j);
        jn_cli_json_key(j, "run"); jn_cli_json_int(j, v[i].run_id);
        jn_cli_json_key(j, "region"); jn_cli_json_int(j, v[i].region);
        jn_cli_json_key(j, "kind"); jn_cli_json_str(j, v[i].kind);
        jn_cli_json_key(j, "qualname"); jn_cli_json_str(j, v[i].qualname);
        jn_cli_json_key(j, "site"); jn_cli_json_str(j, v[i].site);
        jn_cli_json_key(j, "calls"); jn_cli_json_int(j, v[i].calls);
        jn_cli_json_key(j, "verdict"); jn_cli_json_str(j, v[i].replaceable ? "replaceable" : "refused");
        jn_cli_json_key(j, "reason"); jn_cli_json_str(j, v[i].reason);
        jn_cli_json_key(j, "reason_site"); jn_cli_json_str(j, v[i].reason_site);
        jn_cli_json_key(j, "code_hash"); jn_cli_json_str(j, v[i].code_hash);
        jn_cli_json_key(j, "codes"); jn_cli_json_str(j, v[i].codes);
        jn_cli_json_end(j, '}');
    }
    jn_cli_json_end(j, ']');
}

/* The regions janus optimize judged with bundle id (analyzer/regions.c):
 * replaceable, or refused with the reason and the file:line. */
static void print_regions(ctx *c, jn_db *db, int64_t id) {
    jn_db_region_verdict *v = NULL;
    int n = 0;
    if (jn_db_region_verdicts(db, id, &v, &n) != JN_OK) {
        failed(c);
        return;
    }
    if (c->json) {
        jn_cli_json_key(&c->j, "regions");
        jn_cli_json_verdicts(&c->j, v, n);
    } else if (n) {
        int ok = 0;
        for (int i = 0; i < n; i++) ok += v[i].replaceable;
        printf("    regions: %d replaceable, %d refused\n", ok, n - ok);
        for (int i = 0; i < n; i++) {
            char a[32];
            printf("      %-11s  %s %s (%s), %s call%s, code %s", v[i].replaceable ? "replaceable" : "refused",
                   v[i].kind, v[i].qualname, v[i].site, jn_cli_commas(v[i].calls, a), v[i].calls == 1 ? "" : "s",
                   v[i].code_hash);
            if (!v[i].replaceable)
                printf(": %s%s%s", *v[i].reason_site ? "at " : "", v[i].reason_site, *v[i].reason_site ? ": " : "");
            printf("%s\n", v[i].replaceable ? "" : v[i].reason);
        }
    }
    jn_db_region_verdicts_free(v, n);
}

/* The bundles section: the rows, and each payload decompressed and checked
 * (graph count, and whether replay here would use it). */
static void print_bundles(ctx *c, jn_db *db) {
    jn_db_bundle *list = NULL;
    int n = 0;
    if (jn_db_bundle_list(db, &list, &n) != JN_OK) {
        failed(c);
        return;
    }
    if (c->json) {
        jn_cli_json_key(&c->j, "bundles");
        jn_cli_json_arr(&c->j);
    } else {
        printf("\nbundles:%s\n", n ? "" : " none (run `janus optimize` to make one)");
    }
    for (int i = 0; i < n; i++) {
        const jn_db_bundle *b = &list[i];
        int64_t graphs = -1;
        char why[1024] = "";
        /* the payload's sections (kind, name, bytes), for --json */
        enum { MAXSEC = 16 };
        struct { uint32_t kind; char name[32]; int64_t len; } secs[MAXSEC];
        int nsecs = 0;
        jn_db_bundle full;
        if (jn_db_bundle_get_id(db, b->id, &full) != JN_OK) {
            snprintf(why, sizeof why, "%s", jn_errmsg());
        } else {
            jn_cg_bundle *cb = NULL;
            if (jn_cg_bundle_peek(full.data, full.len, &cb) == JN_OK) {
                graphs = cb->ngraphs;
                for (int s = 0; s < cb->nsections && nsecs < MAXSEC; s++, nsecs++) {
                    secs[nsecs].kind = cb->sections[s].kind;
                    snprintf(secs[nsecs].name, sizeof secs[nsecs].name, "%s", cb->sections[s].name);
                    secs[nsecs].len = (int64_t)cb->sections[s].len;
                }
            }
            jn_cg_bundle_free(cb);
            char origin[64];
            snprintf(origin, sizeof origin, "bundle %lld", (long long)b->id);
            jn_cg_bundle_expect e = {.target = b->target, .origin = origin, .db_path = c->path};
            if (jn_cg_bundle_load(full.data, full.len, &e, &cb) != JN_OK) snprintf(why, sizeof why, "%s", jn_errmsg());
            jn_cg_bundle_free(cb);
            jn_db_bundle_free(&full);
        }
        if (c->json) {
            jn_cli_json *j = &c->j;
            jn_cli_json_obj(j);
            jn_cli_json_key(j, "id"); jn_cli_json_int(j, b->id);
            jn_cli_json_key(j, "target"); jn_cli_json_str(j, b->target);
            jn_cli_json_key(j, "created"); jn_cli_json_num(j, b->created);
            jn_cli_json_key(j, "bytes"); jn_cli_json_int(j, (int64_t)b->len);
            jn_cli_json_key(j, "stored_bytes"); jn_cli_json_int(j, (int64_t)b->stored_bytes);
            jn_cli_json_key(j, "graphs");
            if (graphs < 0) jn_cli_json_null(j); else jn_cli_json_int(j, graphs);
            jn_cli_json_key(j, "source_runs");
            size_t l = strlen(b->source_runs);
            if (l >= 2 && b->source_runs[0] == '[' && b->source_runs[l - 1] == ']') jn_cli_json_raw(j, b->source_runs);
            else jn_cli_json_str(j, b->source_runs);
            jn_cli_json_key(j, "source_steps"); jn_cli_json_int(j, b->source_steps);
            jn_cli_json_key(j, "janus_version"); jn_cli_json_str(j, b->janus_version);
            jn_cli_json_key(j, "optable_hash"); jn_cli_json_str(j, b->optable_hash);
            jn_cli_json_key(j, "cpu_features"); jn_cli_json_str(j, b->cpu_features);
            jn_cli_json_key(j, "format"); jn_cli_json_int(j, b->format);
            jn_cli_json_key(j, "checksum"); jn_cli_json_str(j, b->checksum);
            jn_cli_json_key(j, "sections");
            jn_cli_json_arr(j);
            for (int s = 0; s < nsecs; s++) {
                static const char *const kinds[] = {"?", "ir", "so", "memplan", "matcher", "ptx", "cubin"};
                jn_cli_json_obj(j);
                jn_cli_json_key(j, "kind");
                jn_cli_json_str(j, secs[s].kind < sizeof kinds / sizeof kinds[0] ? kinds[secs[s].kind] : "unknown");
                jn_cli_json_key(j, "name"); jn_cli_json_str(j, secs[s].name);
                jn_cli_json_key(j, "bytes"); jn_cli_json_int(j, secs[s].len);
                jn_cli_json_end(j, '}');
            }
            jn_cli_json_end(j, ']');
            jn_cli_json_key(j, "usable"); jn_cli_json_str(j, why[0] ? "no" : "yes");
            jn_cli_json_key(j, "refused");
            if (why[0]) jn_cli_json_str(j, why); else jn_cli_json_null(j);
            print_regions(c, db, b->id);
            jn_cli_json_end(j, '}');
        } else {
            char t[32], sz[32], st[32];
            printf("  bundle %lld  %s  %s  %s (%s stored)  ", (long long)b->id, b->target, fmt_time(b->created, t),
                   jn_cli_bytes((int64_t)b->len, sz), jn_cli_bytes((int64_t)b->stored_bytes, st));
            if (graphs >= 0) printf("%lld graph%s  ", (long long)graphs, graphs == 1 ? "" : "s");
            printf("from runs %s (%lld steps)  janus %s\n", b->source_runs, (long long)b->source_steps,
                   b->janus_version);
            printf("    %s%s\n", why[0] ? "not usable here: " : "usable here", why);
            print_regions(c, db, b->id);
        }
    }
    if (c->json) jn_cli_json_end(&c->j, ']');
    jn_db_bundle_list_free(list, n);
}

int jn_cli_inspect(int argc, char **argv) {
    const char *path = NULL;
    int json = 0, graphs = 0;
    int64_t only = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            fputs(jn_cli_inspect_usage, stdout);
            return 0;
        }
        if (!strcmp(a, "--json")) { json = 1; continue; }
        if (!strcmp(a, "--graphs")) { graphs = 1; continue; }
        if (!strcmp(a, "--run") || !strncmp(a, "--run=", 6)) {
            const char *v = a[5] == '=' ? a + 6 : (i + 1 < argc ? argv[++i] : NULL);
            char *end = NULL;
            long long n = v ? strtoll(v, &end, 10) : 0;
            if (!v || !*v || *end || n <= 0) {
                fprintf(stderr, "janus inspect: --run needs a positive run id\n\n%s", jn_cli_inspect_usage);
                return 2;
            }
            only = n;
            continue;
        }
        if (a[0] == '-' && a[1]) {
            fprintf(stderr, "janus inspect: unknown option '%s'\n\n%s", a, jn_cli_inspect_usage);
            return 2;
        }
        if (path) {
            fprintf(stderr, "janus inspect: one PATH only (got '%s' and '%s')\n\n%s", path, a, jn_cli_inspect_usage);
            return 2;
        }
        path = a;
    }
    if (!path) {
        fprintf(stderr, "janus inspect: no PATH given\n\n%s", jn_cli_inspect_usage);
        return 2;
    }
    if (graphs && json) {
        fprintf(stderr, "janus inspect: --graphs and --json do not combine\n\n%s", jn_cli_inspect_usage);
        return 2;
    }
    if (graphs) return jn_cli_dump_graphs("inspect", path, only, stdout);
    struct stat sb;
    if (stat(path, &sb) != 0) {
        fprintf(stderr, "janus inspect: %s does not exist; record one with `janus record --db %s -- python3 train.py`\n",
                path, path);
        return 1;
    }
    jn_db *db = NULL;
    if (jn_db_open(path, JN_DB_READONLY, &db) != JN_OK) {
        fprintf(stderr, "janus inspect: %s\n", jn_errmsg());
        return 1;
    }
    ctx c;
    memset(&c, 0, sizeof c);
    c.db = db;
    c.path = path;
    c.json = json;
    /* One read transaction: every table seen at the same commit. */
    jn_db_run_row *runs = NULL;
    int nruns = 0, rc = 1;
    if (jn_db_read_begin(db) != JN_OK || jn_db_runs(db, only, &runs, &nruns) != JN_OK) {
        failed(&c);
        goto done;
    }
    if (json) {
        jn_cli_json_init(&c.j, stdout);
        jn_cli_json_obj(&c.j);
        jn_cli_json_key(&c.j, "path"); jn_cli_json_str(&c.j, path);
        jn_cli_json_key(&c.j, "schema_version"); jn_cli_json_int(&c.j, jn_db_schema_version(db));
        jn_cli_json_key(&c.j, "runs");
        jn_cli_json_arr(&c.j);
    } else {
        char bb[32];
        printf("%s: trace store, schema %d, %s\n", path, jn_db_schema_version(db), jn_cli_bytes(sb.st_size, bb));
    }
    for (int i = 0; i < nruns; i++) {
        const jn_db_run_row *r = &runs[i];
        if (json) jn_cli_json_obj(&c.j);
        else printf("\n");
        print_run_header(&c, r);
        int record = !strcmp(r->kind, "record");
        /* a replay records no steps of its own: in text, only its counters */
        jn_db_run_totals t = {0};
        if (!json && !record && jn_db_totals(db, r->id, &t) != JN_OK) failed(&c);
        if (json || record || t.steps > 0) {
            run_steps(&c, r->id);
            run_ops(&c, r->id);
            run_signatures(&c, db, r->id);
            run_syncs(&c, r->id);
            run_decisions(&c, r->id);
            run_shapes(&c, r->id);
        }
        if (!record) run_replay(&c, db, r->id, r->kind);
        if (json) jn_cli_json_end(&c.j, '}');
        if (c.failed) break;
    }
    if (json) {
        jn_cli_json_end(&c.j, ']');
        if (!c.failed) print_bundles(&c, db);
        jn_cli_json_end(&c.j, '}');
        fputc('\n', stdout);
    } else {
        if (!nruns)
            printf(only ? "\nno run %lld in this store\n" : "\nno runs recorded yet\n", (long long)only);
        if (!c.failed) print_bundles(&c, db);
    }
    rc = c.failed ? 1 : (only && !nruns) ? 1 : 0;
    if (only && !nruns) fprintf(stderr, "janus inspect: %s has no run %lld\n", path, (long long)only);
done:
    jn_db_runs_free(runs, nruns);
    jn_db_sites_free(c.sites, c.nsites);
    jn_db_read_end(db);
    jn_db_close(db);
    return rc;
}
