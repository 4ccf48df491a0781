/* test_db_algos.c -- schema v5 of the trace store (db/db.c): the algos
 * table of cuDNN algorithm choices, written with jn_db_algos_put (one
 * transaction, a (device, key) row replaced, all or none under injected
 * write failures) and read back per device with jn_db_algos_get; refusals
 * with their messages; and the v4 -> v5 migration: a v4 store is read as it
 * is read-only (0 rows) and migrated atomically when opened for writing. */
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "jn_db.h"
#include "jn_test.h"
#include "jn_test_db.h"

static const char H200[] = "NVIDIA H200 sm_90", A100[] = "NVIDIA A100-SXM4-80GB sm_80";
static const jn_db_algo R1[] = {{"0:0:conv-a", 1, 4096, 0.25}, {"1:0:conv-a", 0, 0, 0.5}, {"2:0:conv-a", 3, 1 << 20, 0}};

static void test_put_get(void) {
    const char *path = tmp("v5.db");
    jn_db *db = NULL;
    CHECK(jn_db_open(path, JN_DB_CREATE, &db) == JN_OK && jn_db_schema_version(db) == JN_DB_SCHEMA_VERSION);
    if (!db) return;
    sqlite3 *h = jn_db_testing_handle(db);
    CHECK(q_int(h, "SELECT count(*) FROM sqlite_master WHERE name = 'algos'") == 1);
    jn_db_algo *r = NULL;
    int n = -1;
    CHECK(jn_db_algos_get(db, H200, &r, &n) == JN_OK && n == 0 && !r);
    CHECK(jn_db_algos_put(db, H200, R1, 3) == JN_OK);
    jn_db_algo other = {"0:0:conv-a", 7, 8, 1};
    CHECK(jn_db_algos_put(db, A100, &other, 1) == JN_OK);
    CHECK(jn_db_algos_get(db, H200, &r, &n) == JN_OK && n == 3 && r);
    if (r && n == 3) { /* by key */
        CHECK(!strcmp(r[0].key, "0:0:conv-a") && r[0].algo == 1 && r[0].workspace == 4096 && r[0].seconds == 0.25);
        CHECK(!strcmp(r[2].key, "2:0:conv-a") && r[2].algo == 3 && r[2].workspace == 1 << 20);
    }
    jn_db_algos_free(r, n);
    /* another device: its own rows only; an unknown one: none */
    CHECK(jn_db_algos_get(db, A100, &r, &n) == JN_OK && n == 1 && r && r[0].algo == 7);
    jn_db_algos_free(r, n);
    CHECK(jn_db_algos_get(db, "NVIDIA H100 sm_90", &r, &n) == JN_OK && n == 0);
    /* a second put of a key replaces it */
    jn_db_algo again = {"1:0:conv-a", 5, 64, 0.125};
    CHECK(jn_db_algos_put(db, H200, &again, 1) == JN_OK);
    CHECK(q_int(h, "SELECT algo * 1000 + workspace FROM algos WHERE device = 'NVIDIA H200 sm_90' AND key = "
                   "'1:0:conv-a'") == 5064);
    CHECK(q_int(h, "SELECT count(*) FROM algos") == 4);
    /* refusals name what is wrong */
    jn_db_algo bad[2] = {{"k", 1, 0, 0}, {"", 1, 0, 0}};
    CHECK(jn_db_algos_put(db, H200, bad, 2) == JN_ERR_VALUE && has("row 1") && has("needs a key"));
    bad[1] = (jn_db_algo){"k2", -1, 0, 0};
    CHECK(jn_db_algos_put(db, H200, bad, 2) == JN_ERR_VALUE && has("algorithm >= 0"));
    bad[1] = (jn_db_algo){"k2", 1, 0, -1};
    CHECK(jn_db_algos_put(db, H200, bad, 2) == JN_ERR_VALUE && has("seconds >= 0"));
    CHECK(jn_db_algos_put(db, "", R1, 1) == JN_ERR_VALUE && has("device"));
    CHECK(jn_db_algos_put(db, H200, NULL, 2) == JN_ERR_VALUE);
    CHECK(jn_db_algos_get(db, NULL, &r, &n) == JN_ERR_VALUE);
    CHECK(q_int(h, "SELECT count(*) FROM algos") == 4); /* nothing of the refused puts */

    /* injected write failures: every put is all or none */
    jn_db_algo many[3] = {{"f0", 1, 1, 0}, {"f1", 2, 2, 0}, {"f2", 3, 3, 0}};
    int failed = 0, consistent = 1;
    for (int k = 1; k <= 8; k++) {
        sqlite3_exec(h, "DELETE FROM algos WHERE key LIKE 'f%'", NULL, NULL, NULL);
        jn_db_inject_fault(k);
        jn_status s = jn_db_algos_put(db, H200, many, 3);
        jn_db_inject_fault(0);
        int64_t now = q_int(h, "SELECT count(*) FROM algos WHERE key LIKE 'f%'");
        if (s == JN_OK) {
            if (now != 3) consistent = 0;
        } else {
            failed++;
            if (s != JN_ERR_IO || !has("injected") || !has("cuDNN algorithms") || now != 0) consistent = 0;
        }
    }
    CHECK(failed >= 4);
    CHECK(consistent);
    jn_db_close(db);

    /* read-only: readable, not writable */
    CHECK(jn_db_open(path, JN_DB_READONLY, &db) == JN_OK);
    CHECK(jn_db_algos_put(db, H200, R1, 1) == JN_ERR_IO && has("read-only"));
    CHECK(jn_db_algos_get(db, H200, &r, &n) == JN_OK && n == 6);
    jn_db_algos_free(r, n);
    jn_db_close(db);
}

/* A v4 store as the v4 schema made it: the current one minus what v5
 * (the algos table) and every later version added. */
static void make_v4(const char *path) {
    unlink(path);
    jn_db *db = NULL;
    if (jn_db_open(path, JN_DB_CREATE, &db) != JN_OK) return;
    jn_db_run_info a = {.argv_json = "[\"python3\"]", .cwd = "/w", .optable_hash = "0123456789abcdef",
                        .optable_ops = "add a", .device = "cpu"};
    int64_t run;
    if (jn_db_run_begin(db, &a, &run) != JN_OK) fprintf(stderr, "  run_begin: %s\n", jn_errmsg());
    char *err = NULL;
    if (sqlite3_exec(jn_db_testing_handle(db),
                     JT_UNDO_V11 JT_UNDO_V10 JT_UNDO_V9 JT_UNDO_V8 JT_UNDO_V7 JT_UNDO_V6 "DROP TABLE algos; UPDATE meta SET value = '4' WHERE key = 'schema_version'",
                     NULL, NULL, &err) != SQLITE_OK)
        fprintf(stderr, "  make_v4: %s\n", err ? err : "?");
    sqlite3_free(err);
    jn_db_close(db);
}

static void test_migration_v4(void) {
    const char *path = tmp("v4.db");
    jn_db *db = NULL;
    make_v4(path);
    /* read-only: as it is, no algorithms */
    CHECK(jn_db_open(path, JN_DB_READONLY, &db) == JN_OK && db && jn_db_schema_version(db) == 4);
    if (db) {
        jn_db_algo *r = NULL;
        int n = -1;
        CHECK(jn_db_algos_get(db, H200, &r, &n) == JN_OK && n == 0 && !r);
        CHECK(q_int(jn_db_testing_handle(db), "SELECT count(*) FROM sqlite_master WHERE name = 'algos'") == 0);
        jn_db_close(db);
    }
    /* a failure at any point leaves v4 or a complete migration (v5 to v9) */
    CHECK(jt_migrate_under_faults(path, make_v4, 15, 4, "SELECT count(*) FROM sqlite_master WHERE name = 'algos'", 0,
                                  1, 1) >= 3);
    make_v4(path);
    CHECK(jn_db_open(path, JN_DB_WRITE, &db) == JN_OK && db && jn_db_schema_version(db) == JN_DB_SCHEMA_VERSION);
    if (!db) return;
    sqlite3 *h = jn_db_testing_handle(db);
    CHECK(q_int(h, "SELECT value FROM meta WHERE key='schema_version'") == JN_DB_SCHEMA_VERSION);
    CHECK(q_int(h, "SELECT count(*) FROM runs") == 1); /* the old run stays */
    CHECK(jn_db_algos_put(db, H200, R1, 3) == JN_OK);
    CHECK(q_int(h, "SELECT count(*) FROM algos") == 3);
    jn_db_close(db);
    CHECK(jn_db_open(path, JN_DB_WRITE, &db) == JN_OK && jn_db_schema_version(db) == JN_DB_SCHEMA_VERSION);
    jn_db_close(db);
}

int main(void) {
    if (jt_tmp_begin("dbalgos")) return 1;
    test_put_get();
    test_migration_v4();
    jt_tmp_end();
    JT_DONE();
}
