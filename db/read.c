/* read.c -- the trace store's read side for people and reports: runs, step
 * totals and kinds, steps, the op histogram, step signatures, sync points,
 * control-flow decisions, shape variation, call sites and a run's op table,
 * each as an array of plain structs (jn_db.h, "reading").
 *
 * Also what `janus report` adds (schema v6): a run's CPU time and peak
 * memory, its per-step times, its first segments, and its misses grouped
 * by guard with the range of the values seen.
 *
 * These are the questions `janus inspect` asks, answered once here so that
 * every reader (inspect, the analyzer, `janus report`) shares one query per
 * question and no SQL lives outside db/.  Each function prepares its
 * statement, copies the rows out and finalizes: the arrays stay valid after
 * the store is closed.  Grouping and ordering are done by SQL where an
 * index helps and in C where the rows are few (shape variation's sizes).
 */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "db_internal.h"
#include "jn_db.h"

/* ------------------------------------------------------------- helpers */
/* One query's state: the statement, and whether something ran out of memory. */
typedef struct {
    jn_db *db;
    sqlite3_stmt *st;
    int rc, nomem;
    const char *what;
} query;

static int q_open(query *q, jn_db *db, const char *sql, const char *what) {
    q->db = db;
    q->st = NULL;
    q->nomem = 0;
    q->what = what;
    q->rc = db_prepare(db, sql, &q->st);
    return q->rc == SQLITE_OK;
}

/* Step to the next row: 1 = a row, 0 = done or failed (q->rc says which). */
static int q_row(query *q) {
    q->rc = db_step(q->db, q->st);
    return q->rc == SQLITE_ROW;
}

/* Finalize; the status: out of memory, an SQLite failure, or JN_OK. */
static jn_status q_close(query *q) {
    sqlite3_finalize(q->st);
    q->st = NULL;
    if (q->nomem)
        return jn_error(JN_ERR_NOMEM, "out of memory reading %s from trace store %s", q->what, jn_db_path(q->db));
    if (q->rc != SQLITE_DONE && q->rc != SQLITE_OK) {
        char buf[160];
        snprintf(buf, sizeof buf, "reading %s", q->what);
        return db_fail(q->db, q->rc, buf);
    }
    return JN_OK;
}

/* A text column copied, NULL staying NULL (an allocation failure is noted). */
static const char *q_text(query *q, int col) {
    if (sqlite3_column_type(q->st, col) == SQLITE_NULL) return NULL;
    char *s = db_col_dup(q->st, col);
    if (!s) q->nomem = 1;
    return s;
}

/* A text column copied ("" for NULL). */
static const char *q_str(query *q, int col) {
    char *s = db_col_dup(q->st, col);
    if (!s) q->nomem = 1;
    return s;
}

static double q_real(query *q, int col) {
    return sqlite3_column_type(q->st, col) == SQLITE_NULL ? (double)NAN : sqlite3_column_double(q->st, col);
}

/* Room for one more row in *arr; 0 when out of memory (noted). */
static int q_grow(query *q, void **arr, int len, int *cap, size_t sz) {
    if (db_grow(arr, len, cap, sz)) {
        q->nomem = 1;
        return 0;
    }
    return 1;
}

/* A step signature: 16 hex digits as written (older files: an integer). */
static uint64_t q_signature(query *q, int col) {
    if (sqlite3_column_type(q->st, col) == SQLITE_INTEGER) return (uint64_t)sqlite3_column_int64(q->st, col);
    const char *t = (const char *)sqlite3_column_text(q->st, col);
    return t ? strtoull(t, NULL, 16) : 0;
}

static jn_status check_args(jn_db *db, const void *rows, const int *n, const char *fn) {
    if (!db || !rows || !n) return jn_error(JN_ERR_VALUE, "%s: NULL argument", fn);
    return JN_OK;
}

/* ------------------------------------------------------- a read snapshot */
jn_status jn_db_read_begin(jn_db *db) {
    if (!db) return jn_error(JN_ERR_VALUE, "jn_db_read_begin: NULL trace store");
    int rc = sqlite3_exec(db_conn(db), "BEGIN", NULL, NULL, NULL);
    return rc == SQLITE_OK ? JN_OK : db_fail(db, rc, "starting a read transaction");
}

void jn_db_read_end(jn_db *db) {
    if (db && !sqlite3_get_autocommit(db_conn(db))) sqlite3_exec(db_conn(db), "COMMIT", NULL, NULL, NULL);
}

/* ------------------------------------------------------------------- runs */
void db_run_row_clear(jn_db_run_row *r) {
    const char *s[] = {r->kind, r->argv_json, r->cwd, r->status, r->python_version, r->janus_version,
                       r->hostname, r->device, r->optable_hash, r->cpu_features, r->boot_id};
    for (size_t k = 0; k < sizeof s / sizeof s[0]; k++) free((void *)s[k]);
}

void jn_db_runs_free(jn_db_run_row *rows, int n) {
    for (int i = 0; rows && i < n; i++) db_run_row_clear(&rows[i]);
    free(rows);
}

jn_status jn_db_runs(jn_db *db, int64_t only, jn_db_run_row **rows, int *n) {
    jn_status s;
    if ((s = check_args(db, rows, n, "jn_db_runs"))) return s;
    *rows = NULL;
    *n = 0;
    /* kind and bundle_id came with schema v3 (older runs are all
     * recordings), CPU time and peak memory with v6, pid_start and boot_id
     * with v7 */
    query q;
    int v = jn_db_schema_version(db);
#define RUN_COLS "id, kind, argv, cwd, status, python_version, janus_version, hostname, device, optable_hash, " \
                 "cpu_features, started, ended, exit_status, pid, bundle_id, "
    if (!q_open(&q, db, v >= 7   ? "SELECT " RUN_COLS "cpu_seconds, peak_rss, pid_start, boot_id "
                                   "FROM runs WHERE ?1 = 0 OR id = ?1 ORDER BY id"
                        : v >= 6 ? "SELECT " RUN_COLS "cpu_seconds, peak_rss, NULL, NULL "
                                   "FROM runs WHERE ?1 = 0 OR id = ?1 ORDER BY id"
                        : v >= 3 ? "SELECT " RUN_COLS "NULL, NULL, NULL, NULL FROM runs WHERE ?1 = 0 OR id = ?1 ORDER BY id"
                                 : "SELECT id, 'record', argv, cwd, status, python_version, janus_version, hostname, "
                                   "device, optable_hash, cpu_features, started, ended, exit_status, pid, NULL, NULL, "
                                   "NULL, NULL, NULL FROM runs WHERE ?1 = 0 OR id = ?1 ORDER BY id",
                "the runs"))
        return q_close(&q);
#undef RUN_COLS
    sqlite3_bind_int64(q.st, 1, only > 0 ? only : 0);
    jn_db_run_row *a = NULL;
    int len = 0, cap = 0;
    while (q_row(&q) && q_grow(&q, (void **)&a, len, &cap, sizeof *a)) {
        jn_db_run_row *r = &a[len++];
        memset(r, 0, sizeof *r);
        r->id = sqlite3_column_int64(q.st, 0);
        r->kind = q_str(&q, 1);
        if (r->kind && !r->kind[0]) { /* a v3 default never leaves it empty; be safe */
            free((void *)r->kind);
            r->kind = strdup("record");
            if (!r->kind) q.nomem = 1;
        }
        r->argv_json = q_text(&q, 2);
        r->cwd = q_text(&q, 3);
        r->status = q_text(&q, 4);
        r->python_version = q_text(&q, 5);
        r->janus_version = q_text(&q, 6);
        r->hostname = q_text(&q, 7);
        r->device = q_text(&q, 8);
        r->optable_hash = q_text(&q, 9);
        r->cpu_features = q_text(&q, 10);
        r->started = q_real(&q, 11);
        r->ended = q_real(&q, 12);
        r->has_exit_status = sqlite3_column_type(q.st, 13) != SQLITE_NULL;
        r->exit_status = sqlite3_column_int64(q.st, 13);
        r->pid = sqlite3_column_int64(q.st, 14);
        r->bundle_id = sqlite3_column_int64(q.st, 15);
        r->cpu_seconds = q_real(&q, 16);
        r->peak_rss = sqlite3_column_int64(q.st, 17);
        r->pid_start = sqlite3_column_int64(q.st, 18);
        r->boot_id = q_text(&q, 19);
        if (q.nomem) break;
        /* a run whose process died reads as lost, read-only stores too */
        if (jn_db_run_is_lost(r->status, r->hostname, r->pid, r->pid_start, r->boot_id)) {
            char *lost = strdup("lost");
            if (!lost) {
                q.nomem = 1;
                break;
            }
            free((void *)r->status);
            r->status = lost;
        }
    }
    if ((s = q_close(&q))) {
        jn_db_runs_free(a, len);
        return s;
    }
    *rows = a;
    *n = len;
    return JN_OK;
}

jn_status jn_db_totals(jn_db *db, int64_t run, jn_db_run_totals *out) {
    if (!db || !out) return jn_error(JN_ERR_VALUE, "jn_db_totals: NULL argument");
    memset(out, 0, sizeof *out);
    query q;
    if (q_open(&q, db, "SELECT count(*), coalesce(sum(n_ops), 0), coalesce(sum(n_syncs), 0), "
                       "coalesce(sum(duration), 0), count(DISTINCT signature) FROM steps WHERE run_id = ?1",
               "the step totals")) {
        sqlite3_bind_int64(q.st, 1, run);
        if (q_row(&q)) {
            out->steps = sqlite3_column_int64(q.st, 0);
            out->ops = sqlite3_column_int64(q.st, 1);
            out->syncs = sqlite3_column_int64(q.st, 2);
            out->seconds = sqlite3_column_double(q.st, 3);
            out->signatures = sqlite3_column_int64(q.st, 4);
            q.rc = SQLITE_DONE;
        }
    }
    return q_close(&q);
}

/* ------------------------------------------------------- named counts */
void jn_db_counts_free(jn_db_count *rows, int n) {
    for (int i = 0; rows && i < n; i++) free((void *)rows[i].name);
    free(rows);
}

/* Rows of (text, integer) from sql with ?1 = run. */
static jn_status counts(jn_db *db, int64_t run, const char *sql, const char *what, jn_db_count **rows, int *n) {
    jn_status s;
    if ((s = check_args(db, rows, n, what))) return s;
    *rows = NULL;
    *n = 0;
    query q;
    jn_db_count *a = NULL;
    int len = 0, cap = 0;
    if (q_open(&q, db, sql, what)) {
        sqlite3_bind_int64(q.st, 1, run);
        while (q_row(&q) && q_grow(&q, (void **)&a, len, &cap, sizeof *a)) {
            a[len].name = q_str(&q, 0);
            a[len++].count = sqlite3_column_int64(q.st, 1);
            if (q.nomem) break;
        }
    }
    if ((s = q_close(&q))) {
        jn_db_counts_free(a, len);
        return s;
    }
    *rows = a;
    *n = len;
    return JN_OK;
}

jn_status jn_db_step_kinds(jn_db *db, int64_t run, jn_db_count **rows, int *n) {
    return counts(db, run, "SELECT kind, count(*) FROM steps WHERE run_id = ?1 GROUP BY kind ORDER BY 2 DESC, 1",
                  "the step kinds", rows, n);
}

jn_status jn_db_op_histogram(jn_db *db, int64_t run, jn_db_count **rows, int *n) {
    return counts(db, run, "SELECT op, sum(count) FROM op_counts WHERE run_id = ?1 GROUP BY op ORDER BY 2 DESC, 1",
                  "the op histogram", rows, n);
}

/* ------------------------------------------------------------------ steps */
void jn_db_steps_free(jn_db_step_row *rows, int n) {
    for (int i = 0; rows && i < n; i++) free((void *)rows[i].kind);
    free(rows);
}

jn_status jn_db_steps(jn_db *db, int64_t run, jn_db_step_row **rows, int *n) {
    jn_status s;
    if ((s = check_args(db, rows, n, "jn_db_steps"))) return s;
    *rows = NULL;
    *n = 0;
    query q;
    jn_db_step_row *a = NULL;
    int len = 0, cap = 0;
    if (q_open(&q, db, "SELECT step, kind, started, duration, signature, n_ops, n_syncs FROM steps "
                       "WHERE run_id = ?1 ORDER BY step", "the steps")) {
        sqlite3_bind_int64(q.st, 1, run);
        while (q_row(&q) && q_grow(&q, (void **)&a, len, &cap, sizeof *a)) {
            jn_db_step_row *r = &a[len++];
            r->step = sqlite3_column_int64(q.st, 0);
            r->kind = q_str(&q, 1);
            r->started = q_real(&q, 2);
            r->duration = q_real(&q, 3);
            r->signature = q_signature(&q, 4);
            r->n_ops = sqlite3_column_int64(q.st, 5);
            r->n_syncs = sqlite3_column_int64(q.st, 6);
            if (q.nomem) break;
        }
    }
    if ((s = q_close(&q))) {
        jn_db_steps_free(a, len);
        return s;
    }
    *rows = a;
    *n = len;
    return JN_OK;
}

void jn_db_signatures_free(jn_db_signature *rows, int n) {
    (void)n;
    free(rows);
}

jn_status jn_db_signatures(jn_db *db, int64_t run, jn_db_signature **rows, int *n) {
    jn_status s;
    if ((s = check_args(db, rows, n, "jn_db_signatures"))) return s;
    *rows = NULL;
    *n = 0;
    query q;
    jn_db_signature *a = NULL;
    int len = 0, cap = 0;
    if (q_open(&q, db, "SELECT signature, count(*), min(step), max(step), min(n_ops) FROM steps WHERE run_id = ?1 "
                       "GROUP BY signature ORDER BY 3", "the step signatures")) {
        sqlite3_bind_int64(q.st, 1, run);
        while (q_row(&q) && q_grow(&q, (void **)&a, len, &cap, sizeof *a))
            a[len++] = (jn_db_signature){q_signature(&q, 0), sqlite3_column_int64(q.st, 1),
                                         sqlite3_column_int64(q.st, 2), sqlite3_column_int64(q.st, 3),
                                         sqlite3_column_int64(q.st, 4)};
    }
    if ((s = q_close(&q))) {
        free(a);
        return s;
    }
    *rows = a;
    *n = len;
    return JN_OK;
}

/* ------------------------------------------------------------ sync points */
void jn_db_sync_points_free(jn_db_sync_point *rows, int n) {
    (void)n;
    free(rows);
}

jn_status jn_db_sync_points(jn_db *db, int64_t run, jn_db_sync_point **rows, int *n) {
    jn_status s;
    if ((s = check_args(db, rows, n, "jn_db_sync_points"))) return s;
    *rows = NULL;
    *n = 0;
    query q, v;
    memset(&v, 0, sizeof v);
    jn_db_sync_point *a = NULL;
    int len = 0, cap = 0;
    if (q_open(&q, db, "SELECT kind, callsite_id, count(*) FROM syncs WHERE run_id = ?1 "
                       "GROUP BY kind, callsite_id ORDER BY 3 DESC, 1, 2", "the sync points") &&
        q_open(&v, db, "SELECT value FROM syncs WHERE run_id = ?1 AND kind = ?2 AND callsite_id IS ?3 "
                       "ORDER BY step, seq LIMIT ?4", "the sync values")) {
        sqlite3_bind_int64(q.st, 1, run);
        while (q_row(&q) && q_grow(&q, (void **)&a, len, &cap, sizeof *a)) {
            jn_db_sync_point *r = &a[len++];
            memset(r, 0, sizeof *r);
            r->kind = sqlite3_column_int(q.st, 0);
            r->callsite = sqlite3_column_int64(q.st, 1);
            r->count = sqlite3_column_int64(q.st, 2);
            /* the group's own call site value: NULL matches NULL only */
            sqlite3_reset(v.st);
            sqlite3_bind_int64(v.st, 1, run);
            sqlite3_bind_int(v.st, 2, r->kind);
            sqlite3_bind_value(v.st, 3, sqlite3_column_value(q.st, 1));
            sqlite3_bind_int(v.st, 4, JN_DB_SYNC_VALUES);
            while (r->nvalues < JN_DB_SYNC_VALUES && q_row(&v)) r->values[r->nvalues++] = q_real(&v, 0);
            if (v.rc != SQLITE_DONE && v.rc != SQLITE_ROW) break;
            v.rc = SQLITE_DONE;
        }
    }
    /* a failure of the values query stopped the groups: report that one */
    jn_status sv = v.db ? q_close(&v) : JN_OK;
    s = q_close(&q);
    if (sv) s = sv;
    if (s) {
        free(a);
        return s;
    }
    *rows = a;
    *n = len;
    return JN_OK;
}

/* -------------------------------------------------------------- decisions */
void jn_db_decision_counts_free(jn_db_decision *rows, int n) {
    (void)n;
    free(rows);
}

jn_status jn_db_decision_counts(jn_db *db, int64_t run, jn_db_decision **rows, int *n) {
    jn_status s;
    if ((s = check_args(db, rows, n, "jn_db_decision_counts"))) return s;
    *rows = NULL;
    *n = 0;
    query q;
    jn_db_decision *a = NULL;
    int len = 0, cap = 0;
    if (q_open(&q, db, "SELECT callsite_id, kind, outcome, sum(count) FROM decisions WHERE run_id = ?1 "
                       "GROUP BY callsite_id, kind, outcome ORDER BY callsite_id, kind, outcome",
               "the control-flow decisions")) {
        sqlite3_bind_int64(q.st, 1, run);
        while (q_row(&q) && q_grow(&q, (void **)&a, len, &cap, sizeof *a))
            a[len++] = (jn_db_decision){sqlite3_column_int64(q.st, 0), sqlite3_column_int(q.st, 1),
                                        sqlite3_column_int64(q.st, 2), sqlite3_column_int64(q.st, 3)};
    }
    if ((s = q_close(&q))) {
        free(a);
        return s;
    }
    *rows = a;
    *n = len;
    return JN_OK;
}

/* -------------------------------------------------------- shape variation */
void jn_db_shape_variation_free(jn_db_shape_var *rows, int n) {
    for (int i = 0; rows && i < n; i++) {
        free((void *)rows[i].op);
        free(rows[i].sizes);
    }
    free(rows);
}

jn_status jn_db_shape_variation(jn_db *db, int64_t run, jn_db_shape_var **rows, int *n) {
    jn_status s;
    if ((s = check_args(db, rows, n, "jn_db_shape_variation"))) return s;
    *rows = NULL;
    *n = 0;
    query q;
    jn_db_shape_var *a = NULL;
    int len = 0, cap = 0, scap = 0;
    /* one row per distinct size of each varying (op, call site, arg, dim) */
    if (q_open(&q, db, "SELECT op, callsite_id, arg, dim, size FROM shapes WHERE run_id = ?1 "
                       "AND (op, callsite_id, arg, dim) IN (SELECT op, callsite_id, arg, dim FROM shapes "
                       "WHERE run_id = ?1 GROUP BY op, callsite_id, arg, dim HAVING count(DISTINCT size) > 1) "
                       "GROUP BY op, callsite_id, arg, dim, size ORDER BY op, callsite_id, arg, dim, size",
               "the shape variation")) {
        sqlite3_bind_int64(q.st, 1, run);
        while (q_row(&q)) {
            const char *op = (const char *)sqlite3_column_text(q.st, 0);
            int64_t cs = sqlite3_column_int64(q.st, 1);
            int arg = sqlite3_column_int(q.st, 2), dim = sqlite3_column_int(q.st, 3);
            jn_db_shape_var *r = len ? &a[len - 1] : NULL;
            if (!r || strcmp(r->op, op ? op : "") || r->callsite != cs || r->arg != arg || r->dim != dim) {
                if (!q_grow(&q, (void **)&a, len, &cap, sizeof *a)) break;
                r = &a[len++];
                memset(r, 0, sizeof *r);
                r->op = q_str(&q, 0);
                r->callsite = cs;
                r->arg = arg;
                r->dim = dim;
                scap = 0;
                if (q.nomem) break;
            }
            if (!q_grow(&q, (void **)&r->sizes, r->nsizes, &scap, sizeof *r->sizes)) break;
            r->sizes[r->nsizes++] = sqlite3_column_int64(q.st, 4);
        }
    }
    if ((s = q_close(&q))) {
        jn_db_shape_variation_free(a, len);
        return s;
    }
    *rows = a;
    *n = len;
    return JN_OK;
}

/* ------------------------------------------------------------- call sites */
void jn_db_sites_free(jn_db_site *rows, int n) {
    for (int i = 0; rows && i < n; i++) {
        free((void *)rows[i].file);
        free((void *)rows[i].func);
    }
    free(rows);
}

jn_status jn_db_sites(jn_db *db, jn_db_site **rows, int *n) {
    jn_status s;
    if ((s = check_args(db, rows, n, "jn_db_sites"))) return s;
    *rows = NULL;
    *n = 0;
    query q;
    jn_db_site *a = NULL;
    int len = 0, cap = 0;
    if (q_open(&q, db, "SELECT id, file, line, func FROM callsites ORDER BY id", "the call sites")) {
        while (q_row(&q) && q_grow(&q, (void **)&a, len, &cap, sizeof *a)) {
            jn_db_site *r = &a[len++];
            r->id = sqlite3_column_int64(q.st, 0);
            r->file = q_str(&q, 1);
            r->line = sqlite3_column_int(q.st, 2);
            r->func = q_str(&q, 3);
            if (q.nomem) break;
        }
    }
    if ((s = q_close(&q))) {
        jn_db_sites_free(a, len);
        return s;
    }
    *rows = a;
    *n = len;
    return JN_OK;
}

const jn_db_site *jn_db_site_find(const jn_db_site *rows, int n, int64_t id) {
    int lo = 0, hi = n - 1;
    while (rows && lo <= hi) {
        int mid = lo + (hi - lo) / 2;
        if (rows[mid].id == id) return &rows[mid];
        if (rows[mid].id < id) lo = mid + 1;
        else hi = mid - 1;
    }
    return NULL;
}

/* ------------------------------------------------------ a run's op table */
void jn_db_run_optable_free(jn_db_op_row *rows, int n) {
    for (int i = 0; rows && i < n; i++) {
        free((void *)rows[i].name);
        free((void *)rows[i].schema);
    }
    free(rows);
}

jn_status jn_db_run_optable(jn_db *db, int64_t run, jn_db_op_row **rows, int *n) {
    jn_status s;
    if ((s = check_args(db, rows, n, "jn_db_run_optable"))) return s;
    *rows = NULL;
    *n = 0;
    query q;
    jn_db_op_row *a = NULL;
    int len = 0, cap = 0;
    if (q_open(&q, db, "SELECT o.ops FROM runs r JOIN optables o ON o.hash = r.optable_hash WHERE r.id = ?1",
               "the run's op table")) {
        sqlite3_bind_int64(q.st, 1, run);
        if (q_row(&q) && sqlite3_column_text(q.st, 0)) {
            /* "name schema\n" rows in enum order; the schema may be empty */
            const char *p = (const char *)sqlite3_column_text(q.st, 0);
            while (*p) {
                const char *eol = strchr(p, '\n');
                size_t l = eol ? (size_t)(eol - p) : strlen(p);
                if (l) {
                    if (!q_grow(&q, (void **)&a, len, &cap, sizeof *a)) break;
                    size_t nl = strcspn(p, " \n");
                    if (nl > l) nl = l;
                    const char *sp = p + nl + (nl < l ? 1 : 0);
                    a[len].name = strndup(p, nl);
                    a[len].schema = strndup(sp, (size_t)(p + l - sp));
                    len++;
                    if (!a[len - 1].name || !a[len - 1].schema) {
                        q.nomem = 1;
                        break;
                    }
                }
                p = eol ? eol + 1 : p + l;
            }
        }
        if (q.rc == SQLITE_ROW) q.rc = SQLITE_DONE;
    }
    if ((s = q_close(&q))) {
        jn_db_run_optable_free(a, len);
        return s;
    }
    *rows = a;
    *n = len;
    return JN_OK;
}

/* ------------------------------------------------- steps and segments (v6) */
void jn_db_run_steps_free(jn_db_run_step *rows, int n) {
    for (int i = 0; rows && i < n; i++) free((void *)rows[i].kind);
    free(rows);
}

jn_status jn_db_run_steps(jn_db *db, int64_t run, jn_db_run_step **rows, int *n) {
    jn_status s;
    if ((s = check_args(db, rows, n, "jn_db_run_steps"))) return s;
    *rows = NULL;
    *n = 0;
    if (jn_db_schema_version(db) < 6) return JN_OK;
    query q;
    jn_db_run_step *a = NULL;
    int len = 0, cap = 0;
    if (q_open(&q, db, "SELECT step, kind, started, duration, segments, hits, coalesce(graph_ops, -1), "
                       "coalesce(eager_ops, -1), graph_seconds FROM run_steps WHERE run_id = ?1 ORDER BY step",
               "the step times")) {
        sqlite3_bind_int64(q.st, 1, run);
        while (q_row(&q) && q_grow(&q, (void **)&a, len, &cap, sizeof *a)) {
            jn_db_run_step *r = &a[len++];
            r->step = sqlite3_column_int64(q.st, 0);
            r->kind = q_str(&q, 1);
            r->started = q_real(&q, 2);
            r->duration = q_real(&q, 3);
            r->segments = sqlite3_column_int64(q.st, 4);
            r->hits = sqlite3_column_int64(q.st, 5);
            r->graph_ops = sqlite3_column_int64(q.st, 6);
            r->eager_ops = sqlite3_column_int64(q.st, 7);
            r->graph_seconds = q_real(&q, 8);
            if (q.nomem) break;
        }
    }
    if ((s = q_close(&q))) {
        jn_db_run_steps_free(a, len);
        return s;
    }
    *rows = a;
    *n = len;
    return JN_OK;
}

void jn_db_segments_free(jn_db_segment *rows, int n) {
    for (int i = 0; rows && i < n; i++) free((void *)rows[i].graph);
    free(rows);
}

jn_status jn_db_segments(jn_db *db, int64_t run, jn_db_segment **rows, int *n) {
    jn_status s;
    if ((s = check_args(db, rows, n, "jn_db_segments"))) return s;
    *rows = NULL;
    *n = 0;
    if (jn_db_schema_version(db) < 6) return JN_OK;
    query q;
    jn_db_segment *a = NULL;
    int len = 0, cap = 0;
    if (q_open(&q, db, "SELECT seq, step, started, duration, graph, hit, guard, ops FROM replay_segments "
                       "WHERE run_id = ?1 ORDER BY seq", "the segments")) {
        sqlite3_bind_int64(q.st, 1, run);
        while (q_row(&q) && q_grow(&q, (void **)&a, len, &cap, sizeof *a)) {
            jn_db_segment *r = &a[len++];
            r->seq = sqlite3_column_int64(q.st, 0);
            r->step = sqlite3_column_int64(q.st, 1);
            r->started = q_real(&q, 2);
            r->duration = q_real(&q, 3);
            r->graph = q_str(&q, 4);
            r->hit = sqlite3_column_int(q.st, 5);
            r->guard = sqlite3_column_int(q.st, 6);
            r->ops = sqlite3_column_int64(q.st, 7);
            if (q.nomem) break;
        }
    }
    if ((s = q_close(&q))) {
        jn_db_segments_free(a, len);
        return s;
    }
    *rows = a;
    *n = len;
    return JN_OK;
}

/* ------------------------------------------------------ misses by guard */
void jn_db_miss_groups_free(jn_db_miss_group *rows, int n) {
    for (int i = 0; rows && i < n; i++) {
        free((void *)rows[i].graph);
        free((void *)rows[i].reason);
        free((void *)rows[i].pattern);
        free((void *)rows[i].site);
    }
    free(rows);
}

/* Words before a number that make it a position, not a value ("op 42",
 * "dim 0", "input 1"): never taken for the value seen. */
static int position_word(const char *reason, const char *num) {
    static const char *const words[] = {"op", "dim", "dims", "input", "inputs", "output", "outputs", "guard", "after"};
    const char *e = num;
    if (e == reason || e[-1] != ' ') return 0;
    e--;
    const char *b = e;
    while (b > reason && ((b[-1] >= 'a' && b[-1] <= 'z') || (b[-1] >= 'A' && b[-1] <= 'Z'))) b--;
    for (size_t k = 0; k < sizeof words / sizeof words[0]; k++)
        if ((size_t)(e - b) == strlen(words[k]) && !strncmp(b, words[k], (size_t)(e - b))) return 1;
    return 0;
}

/* reason with every number equal to seen (however it was spelled: 96,
 * 96.0, 0.10000000000000001) replaced by JN_DB_SEEN_MARK; a number that is
 * part of a name or a position (g3, %1, file.py:58, op 42) is kept.
 * malloc'ed; NULL when out of memory. */
static char *seen_pattern(const char *reason, double seen) {
    size_t n = strlen(reason), cap = n + 1, len = 0;
    char *out = malloc(cap);
    if (!out) return NULL;
    for (const char *p = reason; *p;) {
        int starts = (*p >= '0' && *p <= '9') || (*p == '-' && p[1] >= '0' && p[1] <= '9');
        char prev = p > reason ? p[-1] : ' ';
        if (starts && !isnan(seen) && !strchr("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.%#:/-+", prev)) {
            char *end = NULL;
            double v = strtod(p, &end);
            int whole = end && end > p && !((*end >= 'a' && *end <= 'z') || (*end >= 'A' && *end <= 'Z') ||
                                             (*end >= '0' && *end <= '9') || *end == '_' ||
                                             (*end == '.' && end[1] >= '0' && end[1] <= '9'));
            if (whole && (v == seen || (isinf(v) && isinf(seen) && (v > 0) == (seen > 0))) && !position_word(reason, p)) {
                size_t m = strlen(JN_DB_SEEN_MARK);
                if (len + m + (n - (size_t)(end - reason)) + 1 > cap) {
                    cap = len + m + n + 1;
                    char *q = realloc(out, cap);
                    if (!q) {
                        free(out);
                        return NULL;
                    }
                    out = q;
                }
                memcpy(out + len, JN_DB_SEEN_MARK, m);
                len += m;
                p = end;
                continue;
            }
            /* not the value: copy the whole number, so its digits are not looked at again */
            if (end && end > p) {
                while (p < end) {
                    if (len + 2 > cap) {
                        char *q = realloc(out, cap *= 2);
                        if (!q) {
                            free(out);
                            return NULL;
                        }
                        out = q;
                    }
                    out[len++] = *p++;
                }
                continue;
            }
        }
        if (len + 2 > cap) {
            char *q = realloc(out, cap *= 2);
            if (!q) {
                free(out);
                return NULL;
            }
            out = q;
        }
        out[len++] = *p++;
    }
    out[len] = 0;
    return out;
}

static int str_eq(const char *a, const char *b) { return !strcmp(a ? a : "", b ? b : ""); }

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static int cmp_group(const void *a, const void *b) {
    const jn_db_miss_group *x = a, *y = b;
    int cx = x->guard == JN_DB_MISS_CHOICE, cy = y->guard == JN_DB_MISS_CHOICE;
    if (cx != cy) return cx - cy;             /* real misses first */
    if (x->count != y->count) return x->count > y->count ? -1 : 1;
    int c = strcmp(x->graph, y->graph);
    if (c) return c;
    if (x->guard != y->guard) return x->guard < y->guard ? -1 : 1;
    return strcmp(x->pattern, y->pattern);
}

jn_status jn_db_replay_miss_groups(jn_db *db, int64_t run, jn_db_miss_group **rows, int *n) {
    jn_status s;
    if ((s = check_args(db, rows, n, "jn_db_replay_miss_groups"))) return s;
    *rows = NULL;
    *n = 0;
    jn_db_replay_graph *g = NULL;
    jn_db_replay_miss *m = NULL;
    int ng = 0, nm = 0;
    if ((s = jn_db_replay_get(db, run, &g, &ng, &m, &nm))) return s;
    jn_db_miss_group *a = NULL;
    int len = 0, cap = 0;
    /* per group: the values seen, to count distinct ones; a row that saw a
     * range (one guard, many values, one row) leaves the count unknown */
    double **vals = calloc((size_t)nm + 1, sizeof *vals);
    int *nvals = calloc((size_t)nm + 1, sizeof *nvals);
    char *ranged = calloc((size_t)nm + 1, 1);
    int nomem = !vals || !nvals || !ranged;
    for (int i = 0; i < nm && !nomem; i++) {
        const jn_db_replay_miss *r = &m[i];
        char *pat = seen_pattern(r->reason, r->seen);
        if (!pat) {
            nomem = 1;
            break;
        }
        int k = 0;
        while (k < len && !(str_eq(a[k].graph, r->graph) && a[k].guard == r->guard && str_eq(a[k].site, r->site) &&
                            !strcmp(a[k].pattern, pat)))
            k++;
        if (k == len) {
            if (db_grow((void **)&a, len, &cap, sizeof *a)) {
                free(pat);
                nomem = 1;
                break;
            }
            jn_db_miss_group *x = &a[len++];
            memset(x, 0, sizeof *x);
            x->graph = strdup(r->graph);
            x->reason = strdup(r->reason);
            x->site = strdup(r->site);
            x->pattern = pat;
            x->guard = r->guard;
            x->seen_min = x->seen_max = (double)NAN;
            if (!x->graph || !x->reason || !x->site) nomem = 1;
        } else {
            free(pat);
        }
        jn_db_miss_group *x = &a[k];
        x->count += r->count;
        double lo = r->has_range ? r->seen_min : r->seen, hi = r->has_range ? r->seen_max : r->seen;
        if (!isnan(lo) && (isnan(x->seen_min) || lo < x->seen_min)) x->seen_min = lo;
        if (!isnan(hi) && (isnan(x->seen_max) || hi > x->seen_max)) x->seen_max = hi;
        double *v = realloc(vals[k], sizeof *v * (size_t)(nvals[k] + 3));
        if (!v) {
            nomem = 1;
            break;
        }
        vals[k] = v;
        if (!isnan(r->seen)) v[nvals[k]++] = r->seen;
        if (r->has_range && r->seen_min != r->seen_max) ranged[k] = 1;
    }
    for (int k = 0; k < len && !nomem; k++) {
        qsort(vals[k], (size_t)nvals[k], sizeof *vals[k], cmp_double);
        int64_t d = 0;
        for (int i = 0; i < nvals[k]; i++) d += i == 0 || vals[k][i] != vals[k][i - 1];
        a[k].nvalues = ranged[k] ? 0 : d;
    }
    for (int k = 0; vals && k < nm; k++) free(vals[k]);
    free(vals);
    free(nvals);
    free(ranged);
    jn_db_replay_free(g, ng, m, nm);
    if (nomem) {
        jn_db_miss_groups_free(a, len);
        return jn_error(JN_ERR_NOMEM, "out of memory grouping the misses of run %" PRId64 " of trace store %s", run,
                        jn_db_path(db));
    }
    if (len > 1) qsort(a, (size_t)len, sizeof *a, cmp_group);
    *rows = a;
    *n = len;
    return JN_OK;
}

/* ------------------------------------------------------ graph times (v6) */
void jn_db_graph_times_free(jn_db_graph_times *rows, int n) {
    for (int i = 0; rows && i < n; i++) free((void *)rows[i].graph);
    free(rows);
}

jn_status jn_db_graph_times_get(jn_db *db, int64_t run, jn_db_graph_times **rows, int *n) {
    jn_status s;
    if ((s = check_args(db, rows, n, "jn_db_graph_times_get"))) return s;
    *rows = NULL;
    *n = 0;
    if (jn_db_schema_version(db) < 6) return JN_OK;
    query q;
    jn_db_graph_times *a = NULL;
    int len = 0, cap = 0;
    if (q_open(&q, db, "SELECT graph, ops, wall, eager_segments, eager_wall, eager_ops FROM replay_graph_times "
                       "WHERE run_id = ?1 ORDER BY graph", "the graph times")) {
        sqlite3_bind_int64(q.st, 1, run);
        while (q_row(&q) && q_grow(&q, (void **)&a, len, &cap, sizeof *a)) {
            jn_db_graph_times *r = &a[len++];
            r->graph = q_str(&q, 0);
            r->ops = sqlite3_column_int64(q.st, 1);
            r->wall = q_real(&q, 2);
            r->eager_segments = sqlite3_column_int64(q.st, 3);
            r->eager_wall = q_real(&q, 4);
            r->eager_ops = sqlite3_column_int64(q.st, 5);
            if (q.nomem) break;
        }
    }
    if ((s = q_close(&q))) {
        jn_db_graph_times_free(a, len);
        return s;
    }
    *rows = a;
    *n = len;
    return JN_OK;
}

/* ------------------------------------------------------ bundle notes (v6) */
void jn_db_notes_free(jn_db_note *rows, int n) {
    for (int i = 0; rows && i < n; i++) {
        free((void *)rows[i].kind);
        free((void *)rows[i].text);
    }
    free(rows);
}

jn_status jn_db_bundle_notes(jn_db *db, int64_t bundle_id, jn_db_note **rows, int *n) {
    jn_status s;
    if ((s = check_args(db, rows, n, "jn_db_bundle_notes"))) return s;
    *rows = NULL;
    *n = 0;
    if (jn_db_schema_version(db) < 6) return JN_OK;
    query q;
    jn_db_note *a = NULL;
    int len = 0, cap = 0;
    if (q_open(&q, db, "SELECT kind, text FROM bundle_notes WHERE bundle_id = ?1 ORDER BY seq", "a bundle's notes")) {
        sqlite3_bind_int64(q.st, 1, bundle_id);
        while (q_row(&q) && q_grow(&q, (void **)&a, len, &cap, sizeof *a)) {
            a[len].kind = q_str(&q, 0);
            a[len++].text = q_str(&q, 1);
            if (q.nomem) break;
        }
    }
    if ((s = q_close(&q))) {
        jn_db_notes_free(a, len);
        return s;
    }
    *rows = a;
    *n = len;
    return JN_OK;
}
