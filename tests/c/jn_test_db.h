/* jn_test_db.h -- what the trace-store tests share: one-number SQL queries
 * on a raw handle, and the check every schema step repeats -- a store of the
 * old schema opened for writing with an injected SQLite failure at each of
 * its first steps must end either untouched or fully migrated, never in
 * between.  Include after jn_test.h. */
#ifndef JN_TEST_DB_H
#define JN_TEST_DB_H

#include <sqlite3.h>

#include "jn_db.h"
#include "jn_db_testing.h"

/* SQL that takes back what schema v6 added (db/db.c SCHEMA_V6): run first
 * when a test makes a store of an older schema out of a current one. */
/* what schema v11 added (db/db.c SCHEMA_V11), taken back first */
#define JT_UNDO_V11 "DROP TABLE replay_backward_reasons; DROP TABLE replay_backward; "
/* what schema v10 added (db/db.c SCHEMA_V10), taken back after v11's */
#define JT_UNDO_V10 "DROP TABLE region_replay_reasons; DROP TABLE region_replays; "
/* what schema v9 added (db/db.c SCHEMA_V9), taken back after v10's */
#define JT_UNDO_V9 "DROP TABLE region_verdicts; DROP TABLE region_codes; DROP TABLE regions; "
/* what schema v8 added (db/db.c SCHEMA_V8), taken back after v9's */
#define JT_UNDO_V8 "DROP TABLE replay_extrap; ALTER TABLE replay_graphs DROP COLUMN extrapolated; "
/* what schema v7 added (db/db.c SCHEMA_V7), taken back before v6's */
#define JT_UNDO_V7 "ALTER TABLE runs DROP COLUMN pid_start; ALTER TABLE runs DROP COLUMN boot_id; "

#define JT_UNDO_V6                                                                                         \
    "DROP TABLE run_steps; DROP TABLE replay_segments; DROP TABLE replay_graph_times; "                   \
    "DROP TABLE bundle_notes; ALTER TABLE runs DROP COLUMN cpu_seconds; ALTER TABLE runs DROP COLUMN "    \
    "peak_rss; ALTER TABLE replay_misses DROP COLUMN seen_min; ALTER TABLE replay_misses DROP COLUMN seen_max; "

/* The first column of the first row of sql; -999 (and the error on stderr)
 * when it does not run. */
static int64_t q_int(sqlite3 *h, const char *sql) {
    sqlite3_stmt *st;
    int64_t v = -999;
    if (sqlite3_prepare_v2(h, sql, -1, &st, NULL) != SQLITE_OK) {
        fprintf(stderr, "  SQL error: %s in %s\n", sqlite3_errmsg(h), sql);
        return v;
    }
    if (sqlite3_step(st) == SQLITE_ROW) v = sqlite3_column_int64(st, 0);
    sqlite3_finalize(st);
    return v;
}

/* For k = 1..nfaults: make(path) writes a store of schema version `old`,
 * jn_db_open(JN_DB_WRITE) runs with a fault injected at its k-th SQLite
 * write.  Every failed open must say "injected" (JN_ERR_IO) and leave the
 * file either at `old` with q_int(marker) == before, or at the current
 * version with marker == after; and, when nruns >= 0, `runs` still holding
 * nruns rows.  Returns how many opens failed, or -1 when one of them left
 * the file in between (reported on stderr). */
static int jt_migrate_under_faults(const char *path, void (*make)(const char *), int nfaults, int64_t old,
                                   const char *marker, int64_t before, int64_t after, int64_t nruns) {
    int failed = 0, consistent = 1;
    for (int k = 1; k <= nfaults; k++) {
        jn_db *db = NULL;
        make(path);
        jn_db_inject_fault(k);
        jn_status s = jn_db_open(path, JN_DB_WRITE, &db);
        jn_db_inject_fault(0);
        if (s == JN_OK) {
            jn_db_close(db);
            continue;
        }
        failed++;
        int ok = s == JN_ERR_IO && strstr(jn_errmsg(), "injected");
        sqlite3 *h = NULL;
        sqlite3_open(path, &h);
        int64_t v = q_int(h, "SELECT value FROM meta WHERE key='schema_version'");
        int64_t m = q_int(h, marker);
        ok = ok && ((v == old && m == before) || (v == JN_DB_SCHEMA_VERSION && m == after));
        if (nruns >= 0) ok = ok && q_int(h, "SELECT count(*) FROM runs") == nruns;
        if (!ok) {
            fprintf(stderr, "  fault %d: schema %lld, %s = %lld: %s\n", k, (long long)v, marker, (long long)m,
                    jn_errmsg());
            consistent = 0;
        }
        sqlite3_close(h);
    }
    return consistent ? failed : -1;
}

#endif
