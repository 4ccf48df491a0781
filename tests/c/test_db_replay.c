/* test_db_replay.c -- schema v3 of the trace store (db/db.c): runs marked
 * 'record' or 'replay' (with the bundle a replay loaded), replay counters
 * written with jn_db_replay_put (one transaction, summed per graph, also
 * under injected write failures: all or none) and read back with
 * jn_db_replay_get (misses aggregated, NaN "seen" kept), refusals with their
 * messages, extrapolated hits (schema v8: per graph, and per SEEN guard
 * with its recorded range and the values seen past it), and the v2 -> v3
 * (and on to the current version) migration: a v2 store is read as it is
 * read-only and migrated (atomically, old runs read as 'record') when
 * opened for writing; a v7 store reads as no extrapolation read-only and
 * migrates to v8 when opened for writing. */
#include <math.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "jn_db.h"
#include "jn_test.h"
#include "jn_test_db.h"

static jn_db_run_info info(const char *kind, int64_t bundle) {
    return (jn_db_run_info){.argv_json = "[\"python3\",\"train.py\"]", .cwd = "/w", .optable_hash = "0123456789abcdef",
                            .optable_ops = "add a", .device = "cpu", .kind = kind, .bundle_id = bundle};
}

static const jn_db_replay_graph G1[] = {{"g0", 10, 1, 0.5, 0}, {"g1", 0, 3, 0.0, 0}};
static const jn_db_replay_miss M1[] = {
    {"g1", 2, "shape of input x: dim 0 is 32, the graph wants 64", "train.py:12", 32, 2, 1, 17, 32},
    {"g1", 5, "scalar lr is 0.1, recorded 0.01", "train.py:20", NAN, 1, 0, NAN, NAN},
    {"g0", 0, "op relu where the graph has tanh", "model.py:7", 7, 1, 0, 0, 0},
};

static void test_kinds_and_counters(void) {
    const char *path = tmp("v3.db");
    jn_db *db = NULL;
    CHECK(jn_db_open(path, JN_DB_CREATE, &db) == JN_OK && jn_db_schema_version(db) == JN_DB_SCHEMA_VERSION);
    if (!db) return;
    jn_db_run_info a = info(NULL, 0), b = info("replay", 7);
    int64_t r1 = 0, r2 = 0;
    CHECK(jn_db_run_begin(db, &a, &r1) == JN_OK && jn_db_run_begin(db, &b, &r2) == JN_OK && r2 == r1 + 1);
    sqlite3 *h = jn_db_testing_handle(db);
    CHECK(q_int(h, "SELECT count(*) FROM runs WHERE id=1 AND kind='record' AND bundle_id IS NULL") == 1);
    CHECK(q_int(h, "SELECT count(*) FROM runs WHERE id=2 AND kind='replay' AND bundle_id=7") == 1);
    int64_t *ids = NULL;
    int n = 0;
    CHECK(jn_db_run_ids(db, &ids, &n) == JN_OK && n == 1 && ids && ids[0] == r1); /* replays are no sources */
    free(ids);

    jn_db_replay_graph *g = NULL;
    jn_db_replay_miss *m = NULL;
    int ng = -1, nm = -1;
    CHECK(jn_db_replay_get(db, r2, &g, &ng, &m, &nm) == JN_OK && ng == 0 && nm == 0 && !g && !m);

    CHECK(jn_db_replay_put(db, r2, G1, 2, M1, 3, NULL, 0) == JN_OK);
    /* a second report (another process of the run) adds up */
    jn_db_replay_graph g2[] = {{"g0", 5, 0, 0.25, 0}};
    jn_db_replay_miss m2[] = {M1[0]};
    CHECK(jn_db_replay_put(db, r2, g2, 1, m2, 1, NULL, 0) == JN_OK);
    CHECK(jn_db_replay_get(db, r2, &g, &ng, &m, &nm) == JN_OK && ng == 2 && nm == 3);
    if (ng == 2 && nm == 3) {
        CHECK(!strcmp(g[0].graph, "g0") && g[0].hits == 15 && g[0].misses == 1 && fabs(g[0].seconds - 0.75) < 1e-12);
        CHECK(!strcmp(g[1].graph, "g1") && g[1].hits == 0 && g[1].misses == 3);
        CHECK(!strcmp(m[0].graph, "g1") && m[0].guard == 2 && m[0].count == 4 && m[0].seen == 32 &&
              !strcmp(m[0].site, "train.py:12") && strstr(m[0].reason, "dim 0 is 32"));
        CHECK(m[0].has_range && m[0].seen_min == 17 && m[0].seen_max == 32); /* schema v6: the range kept */
        int nan_ok = 0;
        for (int i = 1; i < 3; i++)
            if (m[i].guard == 5) nan_ok = isnan(m[i].seen) && m[i].count == 1 && !strcmp(m[i].site, "train.py:20");
        CHECK(nan_ok);
    }
    jn_db_replay_free(g, ng, m, nm);
    /* extrapolated hits: per graph summed like the hits, per guard the
     * range and the values past it, summed over reports */
    jn_db_replay_graph gx[] = {{"g0", 4, 0, 0.1, 3}};
    jn_db_replay_extrap X1[] = {{"g0", 1, "symbol s0 (start of slice) at train.py:9", "train.py:9", 0, 35, 42, 91, 2},
                                {"g0", 3, "trip count of loop 0", "train.py:11", 3, 8, 12, 16, 1}};
    jn_db_replay_extrap X2[] = {{"g0", 1, "symbol s0 (start of slice) at train.py:9", "train.py:9", 0, 35, 36, 98, 1}};
    jn_db_replay_extrap *x = NULL;
    int nx = -1;
    CHECK(jn_db_replay_put(db, r2, gx, 1, NULL, 0, X1, 2) == JN_OK);
    CHECK(jn_db_replay_put(db, r2, gx, 1, NULL, 0, X2, 1) == JN_OK);
    CHECK(jn_db_replay_get(db, r2, &g, &ng, &m, &nm) == JN_OK && ng == 2 && g[0].hits == 23 && g[0].extrapolated == 6 &&
          g[1].extrapolated == 0);
    jn_db_replay_free(g, ng, m, nm);
    CHECK(jn_db_replay_extraps(db, r2, &x, &nx) == JN_OK && nx == 2);
    if (nx == 2)
        CHECK(x[0].guard == 1 && x[0].count == 3 && x[0].lo == 0 && x[0].hi == 35 && x[0].seen_min == 36 &&
              x[0].seen_max == 98 && !strcmp(x[0].site, "train.py:9") && strstr(x[0].reason, "s0") &&
              x[1].guard == 3 && x[1].count == 1 && x[1].seen_max == 16);
    jn_db_replay_extrap_free(x, nx);
    CHECK(jn_db_replay_extraps(db, r1, &x, &nx) == JN_OK && nx == 0 && !x);
    jn_db_replay_graph toomany[] = {{"g9", 1, 0, 0, 2}};
    CHECK(jn_db_replay_put(db, r2, toomany, 1, NULL, 0, NULL, 0) == JN_ERR_VALUE && has("extrapolated"));
    jn_db_replay_extrap badx[] = {{"g0", 1, "r", "", 5, 4, 6, 6, 1}};
    CHECK(jn_db_replay_put(db, r2, NULL, 0, NULL, 0, badx, 1) == JN_ERR_VALUE && has("extrapolation row 0"));
    /* other runs are not affected */
    CHECK(jn_db_replay_get(db, r1, &g, &ng, &m, &nm) == JN_OK && ng == 0 && nm == 0);
    /* nothing to report is fine */
    CHECK(jn_db_replay_put(db, r2, NULL, 0, NULL, 0, NULL, 0) == JN_OK);

    /* refusals */
    CHECK(jn_db_replay_put(db, 99, G1, 2, M1, 3, NULL, 0) == JN_ERR_VALUE && has("no run 99") && has(path));
    CHECK(q_int(h, "SELECT count(*) FROM replay_graphs WHERE run_id=99") == 0);
    jn_db_replay_graph bad[] = {{NULL, 1, 0, 0, 0}};
    CHECK(jn_db_replay_put(db, r2, bad, 1, NULL, 0, NULL, 0) == JN_ERR_VALUE && has("graph row 0"));
    jn_db_replay_graph neg[] = {{"g9", -1, 0, 0, 0}};
    CHECK(jn_db_replay_put(db, r2, neg, 1, NULL, 0, NULL, 0) == JN_ERR_VALUE && has("g9"));
    jn_db_replay_graph nans[] = {{"g9", 1, 0, NAN, 0}};
    CHECK(jn_db_replay_put(db, r2, nans, 1, NULL, 0, NULL, 0) == JN_ERR_VALUE && has("seconds"));
    jn_db_replay_miss nor[] = {{"g0", 1, NULL, "x.py:1", 0, 1, 0, 0, 0}};
    CHECK(jn_db_replay_put(db, r2, NULL, 0, nor, 1, NULL, 0) == JN_ERR_VALUE && has("reason"));
    CHECK(jn_db_replay_put(db, r2, NULL, 1, NULL, 0, NULL, 0) == JN_ERR_VALUE);
    CHECK(jn_db_replay_get(db, r2, NULL, &ng, &m, &nm) == JN_ERR_VALUE);

    /* injected write failures: every put is all or none */
    int64_t before = q_int(h, "SELECT sum(hits) FROM replay_graphs WHERE run_id=2");
    int64_t mbefore = q_int(h, "SELECT count(*) FROM replay_misses WHERE run_id=2");
    int failed = 0, consistent = 1;
    for (int k = 1; k <= 8; k++) {
        jn_db_inject_fault(k);
        jn_status s = jn_db_replay_put(db, r2, G1, 2, M1, 3, NULL, 0);
        jn_db_inject_fault(0);
        int64_t now = q_int(h, "SELECT sum(hits) FROM replay_graphs WHERE run_id=2");
        int64_t mnow = q_int(h, "SELECT count(*) FROM replay_misses WHERE run_id=2");
        if (s == JN_OK) {
            if (now != before + 10 || mnow != mbefore + 3) consistent = 0;
        } else {
            failed++;
            if (s != JN_ERR_IO || !strstr(jn_errmsg(), "injected") || now != before || mnow != mbefore) consistent = 0;
        }
        before = now;
        mbefore = mnow;
    }
    CHECK(failed >= 4);
    CHECK(consistent);
    jn_db_close(db);

    /* read-only: readable, not writable */
    CHECK(jn_db_open(path, JN_DB_READONLY, &db) == JN_OK);
    CHECK(jn_db_replay_put(db, r2, G1, 2, NULL, 0, NULL, 0) == JN_ERR_IO && has("read-only"));
    CHECK(jn_db_replay_get(db, r2, &g, &ng, &m, &nm) == JN_OK && ng == 2 && nm == 3);
    jn_db_replay_free(g, ng, m, nm);
    jn_db_close(db);
}

/* A v2 store as the v2 schema made it: v3 minus the replay tables and the
 * runs columns kind and bundle_id; one recorded run. */
static void make_v2(const char *path) {
    unlink(path);
    jn_db *db = NULL;
    if (jn_db_open(path, JN_DB_CREATE, &db) != JN_OK) return;
    jn_db_run_info a = info(NULL, 0);
    int64_t run;
    if (jn_db_run_begin(db, &a, &run) != JN_OK) fprintf(stderr, "  run_begin: %s\n", jn_errmsg());
    char *err = NULL;
    if (sqlite3_exec(jn_db_testing_handle(db),
                     JT_UNDO_V11 JT_UNDO_V10 JT_UNDO_V9 JT_UNDO_V8 JT_UNDO_V7 JT_UNDO_V6 "DROP TABLE replay_misses; DROP TABLE replay_graphs; "
                     "ALTER TABLE runs DROP COLUMN bundle_id; "
                     "ALTER TABLE runs DROP COLUMN kind; UPDATE meta SET value = '2' WHERE key = 'schema_version'",
                     NULL, NULL, &err) != SQLITE_OK)
        fprintf(stderr, "  make_v2: %s\n", err ? err : "?");
    sqlite3_free(err);
    jn_db_close(db);
}

static void test_migration_v2(void) {
    const char *path = tmp("v2.db");
    jn_db *db = NULL;
    make_v2(path);
    /* read-only: as it is */
    CHECK(jn_db_open(path, JN_DB_READONLY, &db) == JN_OK && db && jn_db_schema_version(db) == 2);
    if (db) {
        jn_db_replay_graph *g = NULL;
        jn_db_replay_miss *m = NULL;
        int ng = -1, nm = -1;
        CHECK(jn_db_replay_get(db, 1, &g, &ng, &m, &nm) == JN_OK && ng == 0 && nm == 0);
        int64_t *ids = NULL;
        int n = 0;
        CHECK(jn_db_run_ids(db, &ids, &n) == JN_OK && n == 1);
        free(ids);
        CHECK(q_int(jn_db_testing_handle(db), "SELECT count(*) FROM sqlite_master WHERE name LIKE 'replay%'") == 0);
        jn_db_close(db);
    }
    /* a failure at any point leaves v2 or a complete migration */
    CHECK(jt_migrate_under_faults(path, make_v2, 17, 2,
                                  "SELECT (SELECT count(*) FROM sqlite_master WHERE name IN "
                                  "('replay_graphs','replay_misses')) + (SELECT count(*) FROM "
                                  "pragma_table_info('runs') WHERE name IN ('kind','bundle_id'))",
                                  0, 4, 1) >= 3);
    make_v2(path);
    CHECK(jn_db_open(path, JN_DB_WRITE, &db) == JN_OK && db && jn_db_schema_version(db) == JN_DB_SCHEMA_VERSION);
    if (!db) return;
    sqlite3 *h = jn_db_testing_handle(db);
    CHECK(q_int(h, "SELECT value FROM meta WHERE key='schema_version'") == JN_DB_SCHEMA_VERSION);
    CHECK(q_int(h, "SELECT count(*) FROM runs WHERE kind='record' AND bundle_id IS NULL") == 1); /* old run */
    jn_db_run_info b = info("replay", 1);
    int64_t r2 = 0;
    CHECK(jn_db_run_begin(db, &b, &r2) == JN_OK && r2 == 2);
    CHECK(jn_db_replay_put(db, r2, G1, 2, M1, 3, NULL, 0) == JN_OK);
    CHECK(q_int(h, "SELECT sum(hits) FROM replay_graphs WHERE run_id=2") == 10);
    jn_db_close(db);
    /* and once more: a current store opens without migrating again */
    CHECK(jn_db_open(path, JN_DB_WRITE, &db) == JN_OK && jn_db_schema_version(db) == JN_DB_SCHEMA_VERSION);
    jn_db_close(db);
}

/* A v7 store with counters: v8 minus replay_extrap and the extrapolated
 * column.  Read-only it reads as no extrapolation; opened for writing it
 * migrates, its old hits counted as in range. */
static void test_migration_v7(void) {
    const char *path = tmp("v7.db");
    unlink(path);
    jn_db *db = NULL;
    CHECK(jn_db_open(path, JN_DB_CREATE, &db) == JN_OK);
    if (!db) return;
    jn_db_run_info b = info("replay", 1);
    int64_t r = 0;
    CHECK(jn_db_run_begin(db, &b, &r) == JN_OK && jn_db_replay_put(db, r, G1, 2, M1, 3, NULL, 0) == JN_OK);
    char *err = NULL;
    CHECK(sqlite3_exec(jn_db_testing_handle(db),
                       JT_UNDO_V11 JT_UNDO_V10 JT_UNDO_V9 JT_UNDO_V8 "UPDATE meta SET value = '7' WHERE key = 'schema_version'",
                       NULL, NULL, &err) == SQLITE_OK);
    sqlite3_free(err);
    jn_db_close(db);
    jn_db_replay_graph *g = NULL;
    jn_db_replay_miss *m = NULL;
    jn_db_replay_extrap *x = NULL;
    int ng = 0, nm = 0, nx = -1;
    CHECK(jn_db_open(path, JN_DB_READONLY, &db) == JN_OK && jn_db_schema_version(db) == 7);
    if (db) {
        CHECK(jn_db_replay_get(db, r, &g, &ng, &m, &nm) == JN_OK && ng == 2 && g[0].hits == 10 &&
              g[0].extrapolated == 0);
        jn_db_replay_free(g, ng, m, nm);
        CHECK(jn_db_replay_extraps(db, r, &x, &nx) == JN_OK && nx == 0);
        jn_db_close(db);
    }
    CHECK(jn_db_open(path, JN_DB_WRITE, &db) == JN_OK && jn_db_schema_version(db) == JN_DB_SCHEMA_VERSION);
    if (!db) return;
    jn_db_replay_graph gx[] = {{"g0", 2, 0, 0, 1}};
    jn_db_replay_extrap X[] = {{"g0", 0, "symbol s0", "", 1, 2, 3, 3, 1}};
    CHECK(jn_db_replay_put(db, r, gx, 1, NULL, 0, X, 1) == JN_OK);
    CHECK(jn_db_replay_get(db, r, &g, &ng, &m, &nm) == JN_OK && ng == 2 && g[0].hits == 12 && g[0].extrapolated == 1);
    jn_db_replay_free(g, ng, m, nm);
    CHECK(jn_db_replay_extraps(db, r, &x, &nx) == JN_OK && nx == 1);
    jn_db_replay_extrap_free(x, nx);
    jn_db_close(db);
}

/* `test_db_replay --put DB RUN`: store G1/M1 as run RUN's counters the
 * way a replaying process does at exit (tests/python/test_replay_cli.py). */
static int put_fixture(const char *path, const char *run) {
    jn_db *db = NULL;
    jn_status s = jn_db_open(path, JN_DB_WRITE, &db);
    if (!s) s = jn_db_replay_put(db, strtoll(run, NULL, 10), G1, 2, M1, 3, NULL, 0);
    if (s) fprintf(stderr, "test_db_replay --put: %s\n", jn_errmsg());
    jn_db_close(db);
    return s ? 1 : 0;
}

int main(int argc, char **argv) {
    if (argc == 4 && !strcmp(argv[1], "--put")) return put_fixture(argv[2], argv[3]);
    if (jt_tmp_begin("dbreplay")) return 1;
    test_kinds_and_counters();
    test_migration_v2();
    test_migration_v7();
    jt_tmp_end();
    JT_DONE();
}
