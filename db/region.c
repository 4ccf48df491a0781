/* region.c -- the region tables of the trace store (schema v9): the regions
 * a recording entered and the code objects each ran (written by the
 * recorder), and the analyzer's verdict on each region, stored with the
 * bundle `janus optimize` made (jn_db.h, "regions"); and (schema v10) what
 * a replay's regions did, written with its counters at exit, as (schema
 * v11) what its backward skip did.
 *
 * Every write is one BEGIN IMMEDIATE ... COMMIT through db_step, so the
 * fault injection of the store tests (jn_db_inject_fault) reaches each
 * statement; a failure rolls back and names the store and what was being
 * stored.  A store older than v9 opened read-only has no such tables: its
 * reads give 0 rows.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "db_internal.h"
#include "jn_db.h"

/* ------------------------------------------------------------- helpers */
static jn_status writable(jn_db *db, const char *fn) {
    if (!db) return jn_error(JN_ERR_VALUE, "%s: NULL trace store", fn);
    if (!jn_db_writable(db, NULL))
        return jn_error(JN_ERR_IO, "%s: trace store %s was opened read-only", fn, jn_db_path(db));
    return JN_OK;
}

/* BEGIN IMMEDIATE / COMMIT as statements through db_step (counted by the
 * fault injection like db.c's). */
static int exec1(jn_db *db, const char *sql) {
    sqlite3_stmt *st = NULL;
    int rc = db_prepare(db, sql, &st);
    if (rc == SQLITE_OK) {
        rc = db_step(db, st);
        if (rc == SQLITE_DONE || rc == SQLITE_ROW) rc = SQLITE_OK;
    }
    sqlite3_finalize(st);
    return rc;
}

/* Never subject to fault injection: an injected failure leaves the store clean. */
static void rollback(jn_db *db) {
    if (!sqlite3_get_autocommit(db_conn(db))) sqlite3_exec(db_conn(db), "ROLLBACK", NULL, NULL, NULL);
}

static int step_reset(jn_db *db, sqlite3_stmt *st) {
    int rc = db_step(db, st);
    sqlite3_reset(st);
    sqlite3_clear_bindings(st);
    return rc == SQLITE_DONE || rc == SQLITE_ROW ? SQLITE_OK : rc;
}

static void text(sqlite3_stmt *st, int i, const char *s) {
    if (s) sqlite3_bind_text(st, i, s, -1, SQLITE_STATIC);
    else sqlite3_bind_null(st, i);
}

typedef void (*bind_fn)(sqlite3_stmt *st, int64_t key, const void *row, int i);

/* One transaction: sql bound per row (bind) and run; all or none. */
static jn_status put_rows(jn_db *db, int64_t key, const char *sql, const void *rows, int n, bind_fn bind,
                          const char *what) {
    sqlite3_stmt *ins = NULL;
    int rc = exec1(db, "BEGIN IMMEDIATE");
    if (rc == SQLITE_OK) rc = db_prepare(db, sql, &ins);
    for (int i = 0; i < n && rc == SQLITE_OK; i++) {
        bind(ins, key, rows, i);
        rc = step_reset(db, ins);
    }
    if (rc == SQLITE_OK) rc = exec1(db, "COMMIT");
    sqlite3_finalize(ins);
    if (rc != SQLITE_OK) {
        char buf[128];
        snprintf(buf, sizeof buf, "storing %s", what);
        jn_status s = db_fail(db, rc, buf);
        rollback(db);
        return s;
    }
    return JN_OK;
}

/* Rows of a query into an array: row(st, arr, i) fills element i; 0 when
 * out of memory. */
typedef int (*row_fn)(sqlite3_stmt *st, void *arr, int i);

static jn_status get_rows_since(jn_db *db, int since, int64_t key, const char *sql, void **arr, int *n, size_t sz,
                                row_fn row, const char *what, void (*free_fn)(void *, int)) {
    *arr = NULL;
    *n = 0;
    if (jn_db_schema_version(db) < since) return JN_OK;
    sqlite3_stmt *st = NULL;
    int rc = db_prepare(db, sql, &st), cap = 0, len = 0, nomem = 0;
    void *a = NULL;
    if (rc == SQLITE_OK) {
        sqlite3_bind_int64(st, 1, key);
        while ((rc = db_step(db, st)) == SQLITE_ROW) {
            if (db_grow(&a, len, &cap, sz)) {
                nomem = 1;
                break;
            }
            memset((char *)a + (size_t)len * sz, 0, sz);
            if (!row(st, a, len++)) {
                nomem = 1;
                break;
            }
        }
    }
    sqlite3_finalize(st);
    if (nomem || (rc != SQLITE_DONE && rc != SQLITE_OK)) {
        free_fn(a, len);
        if (nomem) return jn_error(JN_ERR_NOMEM, "out of memory reading %s from trace store %s", what, jn_db_path(db));
        char buf[128];
        snprintf(buf, sizeof buf, "reading %s", what);
        return db_fail(db, rc, buf);
    }
    *arr = a;
    *n = len;
    return JN_OK;
}

static jn_status get_rows(jn_db *db, int64_t key, const char *sql, void **arr, int *n, size_t sz, row_fn row,
                          const char *what, void (*free_fn)(void *, int)) {
    return get_rows_since(db, 9, key, sql, arr, n, sz, row, what, free_fn);
}

/* A text column copied ("" for NULL), or NULL staying NULL when keep_null. */
static int col(sqlite3_stmt *st, int i, const char **out, int keep_null) {
    if (keep_null && sqlite3_column_type(st, i) == SQLITE_NULL) {
        *out = NULL;
        return 1;
    }
    return (*out = db_col_dup(st, i)) != NULL;
}

/* ------------------------------------------------------------ regions */
static void bind_region(sqlite3_stmt *st, int64_t run, const void *rows, int i) {
    const jn_db_region *r = (const jn_db_region *)rows + i;
    sqlite3_bind_int64(st, 1, run);
    sqlite3_bind_int64(st, 2, r->region);
    text(st, 3, r->kind);
    text(st, 4, r->qualname);
    text(st, 5, r->file);
    sqlite3_bind_int(st, 6, r->line);
    text(st, 7, r->code_hash);
}

jn_status jn_db_region_put(jn_db *db, int64_t run_id, const jn_db_region *r) {
    jn_status s;
    if ((s = writable(db, "jn_db_region_put"))) return s;
    if (!r || r->region <= 0 || !r->kind || !r->qualname || !r->file || !r->code_hash)
        return jn_error(JN_ERR_VALUE, "jn_db_region_put: a region needs an id > 0, a kind, a name, a file and a "
                        "code hash");
    return put_rows(db, run_id, "INSERT OR IGNORE INTO regions(run_id, region, kind, qualname, file, line, code_hash) "
                    "VALUES(?1, ?2, ?3, ?4, ?5, ?6, ?7)", r, 1, bind_region, "a region");
}

static void bind_code(sqlite3_stmt *st, int64_t run, const void *rows, int i) {
    const jn_db_region_code *c = (const jn_db_region_code *)rows + i;
    sqlite3_bind_int64(st, 1, run);
    sqlite3_bind_int64(st, 2, c->region);
    text(st, 3, c->hash);
    text(st, 4, c->file);
    sqlite3_bind_int(st, 5, c->line);
    text(st, 6, c->name);
    sqlite3_bind_int(st, 7, c->user != 0);
    text(st, 8, c->effect);
    text(st, 9, c->effect ? c->effect_site : NULL);
}

jn_status jn_db_region_codes_put(jn_db *db, int64_t run_id, const jn_db_region_code *rows, int n) {
    jn_status s;
    if ((s = writable(db, "jn_db_region_codes_put"))) return s;
    if (n < 0 || (n && !rows)) return jn_error(JN_ERR_VALUE, "jn_db_region_codes_put: %d rows without an array", n);
    for (int i = 0; i < n; i++)
        if (rows[i].region <= 0 || !rows[i].hash || !rows[i].file || !rows[i].name)
            return jn_error(JN_ERR_VALUE, "jn_db_region_codes_put: code row %d needs a region id > 0, a hash, a "
                            "file and a name", i);
    /* a code seen again keeps the first effect stored for it */
    return put_rows(db, run_id,
                    "INSERT INTO region_codes(run_id, region, hash, file, line, name, user, effect, effect_site) "
                    "VALUES(?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9) ON CONFLICT(run_id, region, hash) DO UPDATE SET "
                    "effect = excluded.effect, effect_site = excluded.effect_site "
                    "WHERE region_codes.effect IS NULL AND excluded.effect IS NOT NULL",
                    rows, n, bind_code, "the code of a region");
}

static void regions_free(void *a, int n) { jn_db_regions_free(a, n); }
void jn_db_regions_free(jn_db_region *rows, int n) {
    for (int i = 0; rows && i < n; i++) {
        free((void *)rows[i].kind), free((void *)rows[i].qualname);
        free((void *)rows[i].file), free((void *)rows[i].code_hash);
    }
    free(rows);
}

static int region_row(sqlite3_stmt *st, void *arr, int i) {
    jn_db_region *r = (jn_db_region *)arr + i;
    r->region = sqlite3_column_int64(st, 0);
    r->line = sqlite3_column_int(st, 4);
    return col(st, 1, &r->kind, 0) && col(st, 2, &r->qualname, 0) && col(st, 3, &r->file, 0) &&
           col(st, 5, &r->code_hash, 0);
}

jn_status jn_db_regions(jn_db *db, int64_t run_id, jn_db_region **rows, int *n) {
    if (!db || !rows || !n) return jn_error(JN_ERR_VALUE, "jn_db_regions: NULL argument");
    return get_rows(db, run_id, "SELECT region, kind, qualname, file, line, code_hash FROM regions WHERE run_id = ?1 "
                    "ORDER BY region", (void **)rows, n, sizeof **rows, region_row, "the regions of a run",
                    regions_free);
}

static void codes_free(void *a, int n) { jn_db_region_codes_free(a, n); }
void jn_db_region_codes_free(jn_db_region_code *rows, int n) {
    for (int i = 0; rows && i < n; i++) {
        free((void *)rows[i].hash), free((void *)rows[i].file), free((void *)rows[i].name);
        free((void *)rows[i].effect), free((void *)rows[i].effect_site);
    }
    free(rows);
}

static int code_row(sqlite3_stmt *st, void *arr, int i) {
    jn_db_region_code *c = (jn_db_region_code *)arr + i;
    c->region = sqlite3_column_int64(st, 0);
    c->line = sqlite3_column_int(st, 3);
    c->user = sqlite3_column_int(st, 5);
    return col(st, 1, &c->hash, 0) && col(st, 2, &c->file, 0) && col(st, 4, &c->name, 0) &&
           col(st, 6, &c->effect, 1) && col(st, 7, &c->effect_site, 1);
}

jn_status jn_db_region_codes(jn_db *db, int64_t run_id, jn_db_region_code **rows, int *n) {
    if (!db || !rows || !n) return jn_error(JN_ERR_VALUE, "jn_db_region_codes: NULL argument");
    return get_rows(db, run_id, "SELECT region, hash, file, line, name, user, effect, effect_site FROM region_codes "
                    "WHERE run_id = ?1 ORDER BY region, file, line, hash", (void **)rows, n, sizeof **rows, code_row,
                    "the code of the regions of a run", codes_free);
}

/* ----------------------------------------------------------- verdicts */
static void bind_verdict(sqlite3_stmt *st, int64_t bundle, const void *rows, int i) {
    const jn_db_region_verdict *v = (const jn_db_region_verdict *)rows + i;
    sqlite3_bind_int64(st, 1, bundle);
    sqlite3_bind_int64(st, 2, v->run_id);
    sqlite3_bind_int64(st, 3, v->region);
    text(st, 4, v->kind);
    text(st, 5, v->qualname);
    text(st, 6, v->site);
    sqlite3_bind_int64(st, 7, v->calls);
    text(st, 8, v->replaceable ? "replaceable" : "refused");
    text(st, 9, v->reason ? v->reason : "");
    text(st, 10, v->reason_site ? v->reason_site : "");
    text(st, 11, v->code_hash);
    text(st, 12, v->codes ? v->codes : "");
}

jn_status jn_db_region_verdicts_put(jn_db *db, int64_t bundle_id, const jn_db_region_verdict *rows, int n) {
    jn_status s;
    if ((s = writable(db, "jn_db_region_verdicts_put"))) return s;
    if (n < 0 || (n && !rows)) return jn_error(JN_ERR_VALUE, "jn_db_region_verdicts_put: %d rows without an array", n);
    for (int i = 0; i < n; i++)
        if (!rows[i].kind || !rows[i].qualname || !rows[i].site || !rows[i].code_hash || rows[i].calls < 0 ||
            (!rows[i].replaceable && (!rows[i].reason || !*rows[i].reason)))
            return jn_error(JN_ERR_VALUE, "jn_db_region_verdicts_put: verdict row %d needs a kind, a name, a site, "
                            "a code hash, calls >= 0 and, when refused, a reason", i);
    return put_rows(db, bundle_id,
                    "INSERT INTO region_verdicts(bundle_id, seq, run_id, region, kind, qualname, site, calls, verdict, "
                    "reason, reason_site, code_hash, codes) SELECT ?1, coalesce(max(seq), -1) + 1, ?2, ?3, ?4, ?5, ?6, "
                    "?7, ?8, ?9, ?10, ?11, ?12 FROM region_verdicts WHERE bundle_id = ?1",
                    rows, n, bind_verdict, "the region verdicts of a bundle");
}

static void verdicts_free(void *a, int n) { jn_db_region_verdicts_free(a, n); }
void jn_db_region_verdicts_free(jn_db_region_verdict *rows, int n) {
    for (int i = 0; rows && i < n; i++) {
        free((void *)rows[i].kind), free((void *)rows[i].qualname), free((void *)rows[i].site);
        free((void *)rows[i].reason), free((void *)rows[i].reason_site);
        free((void *)rows[i].code_hash), free((void *)rows[i].codes);
    }
    free(rows);
}

static int verdict_row(sqlite3_stmt *st, void *arr, int i) {
    jn_db_region_verdict *v = (jn_db_region_verdict *)arr + i;
    v->run_id = sqlite3_column_int64(st, 0);
    v->region = sqlite3_column_int64(st, 1);
    v->calls = sqlite3_column_int64(st, 5);
    const unsigned char *verdict = sqlite3_column_text(st, 6);
    v->replaceable = verdict && !strcmp((const char *)verdict, "replaceable");
    return col(st, 2, &v->kind, 0) && col(st, 3, &v->qualname, 0) && col(st, 4, &v->site, 0) &&
           col(st, 7, &v->reason, 0) && col(st, 8, &v->reason_site, 0) && col(st, 9, &v->code_hash, 0) &&
           col(st, 10, &v->codes, 0);
}

jn_status jn_db_region_verdicts(jn_db *db, int64_t bundle_id, jn_db_region_verdict **rows, int *n) {
    if (!db || !rows || !n) return jn_error(JN_ERR_VALUE, "jn_db_region_verdicts: NULL argument");
    return get_rows(db, bundle_id, "SELECT run_id, region, kind, qualname, site, calls, verdict, reason, reason_site, "
                    "code_hash, codes FROM region_verdicts WHERE bundle_id = ?1 ORDER BY seq", (void **)rows, n,
                    sizeof **rows, verdict_row, "the region verdicts of a bundle", verdicts_free);
}

/* ------------------------------------------------ a replay's regions (v10) */
/* BEGIN IMMEDIATE, then the run must exist: JN_OK with *rc the SQLite
 * status so far (the caller goes on while it is SQLITE_OK and ends with
 * COMMIT or a rollback), or an error naming the missing run (rolled back). */
static jn_status begin_for_run(jn_db *db, int64_t run_id, const char *what, int *rc) {
    sqlite3_stmt *q = NULL;
    *rc = exec1(db, "BEGIN IMMEDIATE");
    if (*rc != SQLITE_OK || (*rc = db_prepare(db, "SELECT 1 FROM runs WHERE id = ?1", &q))) return JN_OK;
    sqlite3_bind_int64(q, 1, run_id);
    *rc = db_step(db, q);
    sqlite3_finalize(q);
    if (*rc == SQLITE_DONE) {
        rollback(db);
        return jn_error(JN_ERR_VALUE, "%s: trace store %s has no run %lld", what, jn_db_path(db), (long long)run_id);
    }
    if (*rc == SQLITE_ROW) *rc = SQLITE_OK;
    return JN_OK;
}

jn_status jn_db_region_replays_put(jn_db *db, int64_t run_id, const jn_db_region_replay *rows, int n,
                                   const jn_db_region_replay_reason *why, int nwhy) {
    jn_status s;
    if ((s = writable(db, "jn_db_region_replays_put"))) return s;
    if (n < 0 || nwhy < 0 || (n && !rows) || (nwhy && !why))
        return jn_error(JN_ERR_VALUE, "jn_db_region_replays_put: rows without an array");
    for (int i = 0; i < n; i++)
        if (!rows[i].region || rows[i].calls < 0 || rows[i].replaced < 0 || rows[i].replaced > rows[i].calls)
            return jn_error(JN_ERR_VALUE, "jn_db_region_replays_put: row %d needs a region name and 0 <= replaced "
                            "<= calls", i);
    for (int i = 0; i < nwhy; i++)
        if (!why[i].region || !why[i].reason || why[i].count < 0)
            return jn_error(JN_ERR_VALUE, "jn_db_region_replays_put: reason %d needs a region, a reason and a "
                            "count >= 0", i);
    if (jn_db_schema_version(db) < 10)
        return jn_error(JN_ERR_IO, "jn_db_region_replays_put: trace store %s has schema version %d, before the "
                        "region counters (10); open it for writing to migrate it", jn_db_path(db),
                        jn_db_schema_version(db));
    sqlite3_stmt *a = NULL, *b = NULL;
    int rc;
    if ((s = begin_for_run(db, run_id, "jn_db_region_replays_put", &rc))) return s;
    if (rc == SQLITE_OK)
        rc = db_prepare(db, "INSERT INTO region_replays(run_id, region, calls, replaced, refused) "
                        "VALUES(?1, ?2, ?3, ?4, ?5)", &a);
    if (rc == SQLITE_OK)
        rc = db_prepare(db, "INSERT INTO region_replay_reasons(run_id, region, reason, count) VALUES(?1, ?2, ?3, ?4)",
                        &b);
    for (int i = 0; i < n && rc == SQLITE_OK; i++) {
        sqlite3_bind_int64(a, 1, run_id);
        text(a, 2, rows[i].region);
        sqlite3_bind_int64(a, 3, rows[i].calls);
        sqlite3_bind_int64(a, 4, rows[i].replaced);
        sqlite3_bind_int(a, 5, rows[i].refused != 0);
        rc = step_reset(db, a);
    }
    for (int i = 0; i < nwhy && rc == SQLITE_OK; i++) {
        sqlite3_bind_int64(b, 1, run_id);
        text(b, 2, why[i].region);
        text(b, 3, why[i].reason);
        sqlite3_bind_int64(b, 4, why[i].count);
        rc = step_reset(db, b);
    }
    if (rc == SQLITE_OK) rc = exec1(db, "COMMIT");
    sqlite3_finalize(a);
    sqlite3_finalize(b);
    if (rc != SQLITE_OK) {
        s = db_fail(db, rc, "storing the region counters of a replay");
        rollback(db);
        return s;
    }
    return JN_OK;
}

static void rr_free(void *a, int n) { jn_db_region_replays_free(a, n, NULL, 0); }
static void rw_free(void *a, int n) { jn_db_region_replays_free(NULL, 0, a, n); }
void jn_db_region_replays_free(jn_db_region_replay *rows, int n, jn_db_region_replay_reason *why, int nwhy) {
    for (int i = 0; rows && i < n; i++) free((void *)rows[i].region);
    for (int i = 0; why && i < nwhy; i++) free((void *)why[i].region), free((void *)why[i].reason);
    free(rows);
    free(why);
}

static int rr_row(sqlite3_stmt *st, void *arr, int i) {
    jn_db_region_replay *r = (jn_db_region_replay *)arr + i;
    r->calls = sqlite3_column_int64(st, 1);
    r->replaced = sqlite3_column_int64(st, 2);
    r->refused = sqlite3_column_int(st, 3) != 0;
    return col(st, 0, &r->region, 0);
}

static int rw_row(sqlite3_stmt *st, void *arr, int i) {
    jn_db_region_replay_reason *r = (jn_db_region_replay_reason *)arr + i;
    r->count = sqlite3_column_int64(st, 2);
    return col(st, 0, &r->region, 0) && col(st, 1, &r->reason, 0);
}

jn_status jn_db_region_replays(jn_db *db, int64_t run_id, jn_db_region_replay **rows, int *n,
                               jn_db_region_replay_reason **why, int *nwhy) {
    if (!db || !rows || !n || !why || !nwhy) return jn_error(JN_ERR_VALUE, "jn_db_region_replays: NULL argument");
    *why = NULL;
    *nwhy = 0;
    jn_status s = get_rows_since(db, 10, run_id, "SELECT region, sum(calls) AS c, sum(replaced), max(refused) "
                                 "FROM region_replays WHERE run_id = ?1 GROUP BY region ORDER BY c DESC, region",
                                 (void **)rows, n, sizeof **rows, rr_row, "the region counters of a replay", rr_free);
    if (s) return s;
    s = get_rows_since(db, 10, run_id, "SELECT region, reason, sum(count) AS c FROM region_replay_reasons "
                       "WHERE run_id = ?1 GROUP BY region, reason ORDER BY c DESC, region, reason",
                       (void **)why, nwhy, sizeof **why, rw_row, "the region counters of a replay", rw_free);
    if (s) {
        jn_db_region_replays_free(*rows, *n, NULL, 0);
        *rows = NULL;
        *n = 0;
    }
    return s;
}

/* ----------------------------------------- a replay's backward skip (v11) */
jn_status jn_db_replay_backward_put(jn_db *db, int64_t run_id, const jn_db_replay_backward_totals *tot,
                                    const jn_db_replay_backward_reason *why, int nwhy) {
    jn_status s;
    if ((s = writable(db, "jn_db_replay_backward_put"))) return s;
    if (!tot || nwhy < 0 || (nwhy && !why))
        return jn_error(JN_ERR_VALUE, "jn_db_replay_backward_put: no totals, or reasons without an array");
    if (tot->calls < 0 || tot->skipped < 0 || tot->learned < 0 || tot->declined < 0 || tot->fallbacks < 0 ||
        tot->fallbacks > tot->skipped)
        return jn_error(JN_ERR_VALUE, "jn_db_replay_backward_put: the totals need counts >= 0 and fallbacks <= "
                        "skipped");
    for (int i = 0; i < nwhy; i++)
        if (!why[i].graph || !why[i].name || !why[i].reason || why[i].count < 0)
            return jn_error(JN_ERR_VALUE, "jn_db_replay_backward_put: reason %d needs a graph (\"\" for none), a "
                            "name, words and a count >= 0", i);
    if (jn_db_schema_version(db) < 11)
        return jn_error(JN_ERR_IO, "jn_db_replay_backward_put: trace store %s has schema version %d, before the "
                        "backward-skip counters (11); open it for writing to migrate it", jn_db_path(db),
                        jn_db_schema_version(db));
    sqlite3_stmt *a = NULL, *b = NULL;
    int rc;
    if ((s = begin_for_run(db, run_id, "jn_db_replay_backward_put", &rc))) return s;
    if (rc == SQLITE_OK)
        rc = db_prepare(db, "INSERT INTO replay_backward(run_id, calls, skipped, learned, declined, fallbacks) "
                        "VALUES(?1, ?2, ?3, ?4, ?5, ?6)", &a);
    if (rc == SQLITE_OK)
        rc = db_prepare(db, "INSERT INTO replay_backward_reasons(run_id, graph, token, name, reason, fallback, count) "
                        "VALUES(?1, ?2, ?3, ?4, ?5, ?6, ?7)", &b);
    if (rc == SQLITE_OK) {
        sqlite3_bind_int64(a, 1, run_id);
        sqlite3_bind_int64(a, 2, tot->calls);
        sqlite3_bind_int64(a, 3, tot->skipped);
        sqlite3_bind_int64(a, 4, tot->learned);
        sqlite3_bind_int64(a, 5, tot->declined);
        sqlite3_bind_int64(a, 6, tot->fallbacks);
        rc = step_reset(db, a);
    }
    for (int i = 0; i < nwhy && rc == SQLITE_OK; i++) {
        sqlite3_bind_int64(b, 1, run_id);
        text(b, 2, why[i].graph);
        sqlite3_bind_int64(b, 3, why[i].token);
        text(b, 4, why[i].name);
        text(b, 5, why[i].reason);
        sqlite3_bind_int(b, 6, why[i].fallback != 0);
        sqlite3_bind_int64(b, 7, why[i].count);
        rc = step_reset(db, b);
    }
    if (rc == SQLITE_OK) rc = exec1(db, "COMMIT");
    sqlite3_finalize(a);
    sqlite3_finalize(b);
    if (rc != SQLITE_OK) {
        s = db_fail(db, rc, "storing the backward-skip counters of a replay");
        rollback(db);
        return s;
    }
    return JN_OK;
}

void jn_db_replay_backward_free(jn_db_replay_backward_reason *why, int nwhy) {
    for (int i = 0; why && i < nwhy; i++)
        free((void *)why[i].graph), free((void *)why[i].name), free((void *)why[i].reason);
    free(why);
}
static void bw_free(void *a, int n) { jn_db_replay_backward_free(a, n); }

/* One row: totals (a count of reports first, 0 when none) or a reason. */
static int bw_tot_row(sqlite3_stmt *st, void *arr, int i) {
    int64_t *t = (int64_t *)arr + 6 * i;
    for (int k = 0; k < 6; k++) t[k] = sqlite3_column_int64(st, k);
    return 1;
}
static void tot_free(void *a, int n) { (void)n, free(a); }

static int bw_row(sqlite3_stmt *st, void *arr, int i) {
    jn_db_replay_backward_reason *r = (jn_db_replay_backward_reason *)arr + i;
    r->token = sqlite3_column_int64(st, 1);
    r->fallback = sqlite3_column_int(st, 4) != 0;
    r->count = sqlite3_column_int64(st, 5);
    return col(st, 0, &r->graph, 0) && col(st, 2, &r->name, 0) && col(st, 3, &r->reason, 0);
}

jn_status jn_db_replay_backward(jn_db *db, int64_t run_id, int *has, jn_db_replay_backward_totals *tot,
                                jn_db_replay_backward_reason **why, int *nwhy) {
    if (!db || !has || !tot || !why || !nwhy) return jn_error(JN_ERR_VALUE, "jn_db_replay_backward: NULL argument");
    *has = 0;
    memset(tot, 0, sizeof *tot);
    *why = NULL;
    *nwhy = 0;
    int64_t *t = NULL;
    int nt = 0;
    jn_status s = get_rows_since(db, 11, run_id, "SELECT count(*), sum(calls), sum(skipped), sum(learned), "
                                 "sum(declined), sum(fallbacks) FROM replay_backward WHERE run_id = ?1",
                                 (void **)&t, &nt, 6 * sizeof *t, bw_tot_row, "the backward-skip counters of a replay",
                                 tot_free);
    if (s) return s;
    if (nt == 1 && t[0] > 0) {
        *has = 1;
        *tot = (jn_db_replay_backward_totals){t[1], t[2], t[3], t[4], t[5]};
    }
    free(t);
    if (!*has) return JN_OK;
    /* the words are the name's: grouped by name, one row per place and reason */
    return get_rows_since(db, 11, run_id, "SELECT graph, token, name, max(reason), fallback, sum(count) AS c "
                          "FROM replay_backward_reasons WHERE run_id = ?1 GROUP BY graph, token, name, fallback "
                          "ORDER BY c DESC, graph, token, name", (void **)why, nwhy, sizeof **why, bw_row,
                          "the backward-skip counters of a replay", bw_free);
}
