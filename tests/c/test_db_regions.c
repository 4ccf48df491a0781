/* test_db_regions.c -- schema v9 of the trace store (db/region.c, db/trace.c):
 * the JN_EV_REGION markers round-trip through the event codec (and garbage
 * is refused); regions, their code rows (a code seen again keeps its first
 * effect) and a bundle's verdicts are written in one transaction each (all
 * or none under injected write failures) and read back in order; a
 * read-only store refuses writes; the v8 -> v9 migration (a v8 store reads
 * as no regions read-only, migrates atomically for writing); and a store
 * of a newer schema than the current one is refused untouched.  Schema
 * v10: a replay's region counters (calls, replaced, reasons) are written in
 * one transaction, add up over two reports of a run, read back summed; a v9
 * store reads as none read-only and migrates for writing.  Schema v11: a
 * replay's backward-skip counters (totals, per place and reason) likewise,
 * and a v10 store reads as none read-only and migrates for writing. */
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "jn_db.h"
#include "jn_test.h"
#include "jn_test_db.h"

static void test_codec(void) {
    jn_db_buf buf = {0};
    const int64_t args[] = {42, 7, 1000000};
    jn_db_event in = {.kind = JN_EV_REGION, .region = 3, .region_enter = 1, .nargs = 3, .args = args, .callsite = 9};
    jn_db_event out = {.kind = JN_EV_REGION, .region = 3, .region_enter = 0};
    CHECK(jn_db_encode_event(&buf, &in) == JN_OK && jn_db_encode_event(&buf, &out) == JN_OK);
    jn_db_decoder *d = NULL;
    jn_db_event ev;
    int got = 0;
    CHECK(jn_db_decoder_new(buf.data, buf.len, &d) == JN_OK);
    CHECK(jn_db_decoder_next(d, &ev, &got) == JN_OK && got && ev.kind == JN_EV_REGION && ev.region == 3 &&
          ev.region_enter == 1 && ev.nargs == 3 && ev.args && ev.args[0] == 42 && ev.args[2] == 1000000 &&
          ev.callsite == 9);
    CHECK(jn_db_decoder_next(d, &ev, &got) == JN_OK && got && ev.region == 3 && ev.region_enter == 0 && ev.nargs == 0);
    CHECK(jn_db_decoder_next(d, &ev, &got) == JN_OK && !got);
    jn_db_decoder_free(d);
    /* a truncated marker is corrupt, never read past the end */
    CHECK(jn_db_decoder_new(buf.data, 4, &d) == JN_OK);
    CHECK(jn_db_decoder_next(d, &ev, &got) != JN_OK);
    jn_db_decoder_free(d);
    size_t before = buf.len;
    jn_db_event bad = {.kind = JN_EV_REGION, .region = 0, .region_enter = 1};
    CHECK(jn_db_encode_event(&buf, &bad) == JN_ERR_VALUE && has("region id"));
    bad = (jn_db_event){.kind = JN_EV_REGION, .region = 1, .region_enter = 1, .nargs = 2, .args = NULL};
    CHECK(jn_db_encode_event(&buf, &bad) == JN_ERR_VALUE);
    CHECK(buf.len == before);
    jn_db_buf_free(&buf);
}

static const jn_db_region REG[] = {{1, "module", "Net", "/w/train.py", 12, "07b34e5d61ca4bf4"},
                                   {2, "step", "Adam", "/j/adam.py", 79, "9d492c640fb753e1"}};

static int64_t make_run(jn_db *db) {
    jn_db_run_info a = {.argv_json = "[\"python3\"]", .cwd = "/w", .optable_hash = "0123456789abcdef",
                        .optable_ops = "add a", .device = "cpu"};
    int64_t run = 0;
    if (jn_db_run_begin(db, &a, &run) != JN_OK) fprintf(stderr, "  run_begin: %s\n", jn_errmsg());
    return run;
}

static void test_put_get(void) {
    const char *path = tmp("v9.db");
    unlink(path);
    jn_db *db = NULL;
    CHECK(jn_db_open(path, JN_DB_CREATE, &db) == JN_OK && jn_db_schema_version(db) == JN_DB_SCHEMA_VERSION);
    if (!db) return;
    int64_t run = make_run(db);
    CHECK(jn_db_region_put(db, run, &REG[1]) == JN_OK && jn_db_region_put(db, run, &REG[0]) == JN_OK);
    jn_db_region again = REG[0];
    again.qualname = "Other";
    CHECK(jn_db_region_put(db, run, &again) == JN_OK); /* kept as first stored */
    jn_db_region_code C1[] = {{1, "a915ebe3d374e673", "/w/train.py", "Net.forward", 12, 1, NULL, NULL},
                              {1, "8f18c3719f57a2cd", "/j/module.py", "Module.__call__", 31, 0, NULL, NULL}};
    jn_db_region_code C2[] = {{1, "a915ebe3d374e673", "/w/train.py", "Net.forward", 12, 1, "stores attribute n",
                               "train.py:13"}};
    jn_db_region_code C3[] = {{1, "a915ebe3d374e673", "/w/train.py", "Net.forward", 12, 1, "calls print",
                               "train.py:14"}};
    CHECK(jn_db_region_codes_put(db, run, C1, 2) == JN_OK && jn_db_region_codes_put(db, run, C2, 1) == JN_OK &&
          jn_db_region_codes_put(db, run, C3, 1) == JN_OK);
    jn_db_region *r = NULL;
    jn_db_region_code *c = NULL;
    int n = -1, nc = -1;
    CHECK(jn_db_regions(db, run, &r, &n) == JN_OK && n == 2 && r);
    if (r && n == 2)
        CHECK(r[0].region == 1 && !strcmp(r[0].qualname, "Net") && r[0].line == 12 && !strcmp(r[1].kind, "step") &&
              !strcmp(r[1].code_hash, "9d492c640fb753e1"));
    jn_db_regions_free(r, n);
    CHECK(jn_db_region_codes(db, run, &c, &nc) == JN_OK && nc == 2 && c);
    if (c && nc == 2) { /* by region, file, line: /j/module.py first; the first effect stays */
        CHECK(!strcmp(c[0].file, "/j/module.py") && !c[0].effect && !c[0].user);
        CHECK(c[1].user == 1 && c[1].effect && !strcmp(c[1].effect, "stores attribute n") &&
              !strcmp(c[1].effect_site, "train.py:13"));
    }
    jn_db_region_codes_free(c, nc);
    /* verdicts: appended per bundle, in order */
    jn_db_region_verdict V[] = {
        {run, 1, "module", "Net", "train.py:12", 40, 0, "stores attribute n", "train.py:13", "a915", "a915 8f18"},
        {run, 2, "step", "Adam", "adam.py:79", 40, 1, "", "", "9d49", "9d49"}};
    CHECK(jn_db_region_verdicts_put(db, 5, V, 2) == JN_OK && jn_db_region_verdicts_put(db, 6, V + 1, 1) == JN_OK);
    jn_db_region_verdict *v = NULL;
    CHECK(jn_db_region_verdicts(db, 5, &v, &n) == JN_OK && n == 2 && v);
    if (v && n == 2)
        CHECK(!v[0].replaceable && !strcmp(v[0].reason, "stores attribute n") && v[0].calls == 40 &&
              !strcmp(v[0].codes, "a915 8f18") && v[1].replaceable && !strcmp(v[1].reason, "") &&
              !strcmp(v[1].qualname, "Adam"));
    jn_db_region_verdicts_free(v, n);
    CHECK(jn_db_region_verdicts(db, 7, &v, &n) == JN_OK && n == 0 && !v);
    /* refusals with their messages */
    jn_db_region_verdict noreason = V[0];
    noreason.reason = "";
    CHECK(jn_db_region_verdicts_put(db, 5, &noreason, 1) == JN_ERR_VALUE && has("reason"));
    jn_db_region noid = REG[0];
    noid.region = 0;
    CHECK(jn_db_region_put(db, run, &noid) == JN_ERR_VALUE && has("id > 0"));
    jn_db_region_code nohash = C1[0];
    nohash.hash = NULL;
    CHECK(jn_db_region_codes_put(db, run, &nohash, 1) == JN_ERR_VALUE && has("code row 0"));
    /* all or none: a failed write at any statement leaves no row of it */
    sqlite3 *h = jn_db_testing_handle(db);
    for (int k = 1; k <= 4; k++) {
        int64_t before = q_int(h, "SELECT count(*) FROM region_verdicts WHERE bundle_id = 8");
        jn_db_inject_fault(k);
        jn_status s = jn_db_region_verdicts_put(db, 8, V, 2);
        jn_db_inject_fault(0);
        int64_t after = q_int(h, "SELECT count(*) FROM region_verdicts WHERE bundle_id = 8");
        CHECK(s == JN_OK ? after == before + 2 : (s == JN_ERR_IO && has("injected") && after == before));
    }
    jn_db_close(db);
    /* read-only: readable, not writable */
    CHECK(jn_db_open(path, JN_DB_READONLY, &db) == JN_OK);
    if (!db) return;
    CHECK(jn_db_region_put(db, run, &REG[0]) == JN_ERR_IO && has("read-only"));
    CHECK(jn_db_regions(db, run, &r, &n) == JN_OK && n == 2);
    jn_db_regions_free(r, n);
    jn_db_close(db);
}

/* A v8 store: a current one without what v9 added. */
static void make_v8(const char *path) {
    unlink(path);
    jn_db *db = NULL;
    if (jn_db_open(path, JN_DB_CREATE, &db) != JN_OK) return;
    make_run(db);
    char *err = NULL;
    if (sqlite3_exec(jn_db_testing_handle(db), JT_UNDO_V11 JT_UNDO_V10 JT_UNDO_V9 "UPDATE meta SET value = '8' WHERE key = 'schema_version'",
                     NULL, NULL, &err) != SQLITE_OK)
        fprintf(stderr, "  make_v8: %s\n", err ? err : "?");
    sqlite3_free(err);
    jn_db_close(db);
}

static void test_migration_v8(void) {
    const char *path = tmp("v8.db");
    jn_db *db = NULL;
    make_v8(path);
    CHECK(jn_db_open(path, JN_DB_READONLY, &db) == JN_OK && db && jn_db_schema_version(db) == 8);
    if (db) {
        jn_db_region *r = NULL;
        jn_db_region_verdict *v = NULL;
        int n = -1, nv = -1;
        CHECK(jn_db_regions(db, 1, &r, &n) == JN_OK && n == 0 && !r);
        CHECK(jn_db_region_verdicts(db, 1, &v, &nv) == JN_OK && nv == 0 && !v);
        jn_db_close(db);
    }
    /* a failure at any point of the open leaves v8 or v9, never in between */
    CHECK(jt_migrate_under_faults(path, make_v8, 6, 8, "SELECT count(*) FROM sqlite_master WHERE name='regions'", 0,
                                  1, 1) >= 1);
    make_v8(path);
    CHECK(jn_db_open(path, JN_DB_WRITE, &db) == JN_OK && db && jn_db_schema_version(db) == JN_DB_SCHEMA_VERSION);
    if (!db) return;
    CHECK(jn_db_region_put(db, 1, &REG[0]) == JN_OK);
    CHECK(q_int(jn_db_testing_handle(db), "SELECT count(*) FROM regions") == 1);
    CHECK(q_int(jn_db_testing_handle(db), "SELECT count(*) FROM runs") == 1); /* the old run stays */
    jn_db_close(db);
}

static const jn_db_region_replay RR[] = {{"Block.forward (m.py:21)", 10, 8, 0}, {"Adam.step (a.py:9)", 10, 0, 1}};
static const jn_db_region_replay_reason RW[] = {{"Block.forward (m.py:21)", "learning", 2},
                                                 {"Adam.step (a.py:9)", "refused by the recording: x", 9},
                                                 {"Adam.step (a.py:9)", "learning", 1}};

static void test_region_replays(void) {
    const char *path = tmp("v10rr.db");
    unlink(path);
    jn_db *db = NULL;
    CHECK(jn_db_open(path, JN_DB_CREATE, &db) == JN_OK);
    if (!db) return;
    int64_t run = make_run(db);
    CHECK(jn_db_region_replays_put(db, run + 5, RR, 2, RW, 3) == JN_ERR_VALUE && has("no run"));
    jn_db_region_replay bad = {"x", 1, 2, 0};
    CHECK(jn_db_region_replays_put(db, run, &bad, 1, NULL, 0) == JN_ERR_VALUE && has("replaced"));
    /* all or none under a failure at each write */
    sqlite3 *h = jn_db_testing_handle(db);
    for (int k = 1; k <= 8; k++) {
        int64_t before = q_int(h, "SELECT count(*) FROM region_replays") + q_int(h, "SELECT count(*) FROM region_replay_reasons");
        jn_db_inject_fault(k);
        jn_status s = jn_db_region_replays_put(db, run, RR, 2, RW, 3);
        jn_db_inject_fault(0);
        int64_t after = q_int(h, "SELECT count(*) FROM region_replays") + q_int(h, "SELECT count(*) FROM region_replay_reasons");
        CHECK(s == JN_OK ? after == before + 5 : (s == JN_ERR_IO && has("injected") && after == before));
    }
    CHECK(sqlite3_exec(h, "DELETE FROM region_replays; DELETE FROM region_replay_reasons", 0, 0, 0) == SQLITE_OK);
    /* two reports of one run add up */
    CHECK(jn_db_region_replays_put(db, run, RR, 2, RW, 3) == JN_OK);
    CHECK(jn_db_region_replays_put(db, run, RR, 1, RW, 1) == JN_OK);
    jn_db_region_replay *r = NULL;
    jn_db_region_replay_reason *w = NULL;
    int n = 0, nw = 0;
    CHECK(jn_db_region_replays(db, run, &r, &n, &w, &nw) == JN_OK && n == 2 && nw == 3);
    if (n == 2 && nw == 3) {
        CHECK(!strcmp(r[0].region, "Block.forward (m.py:21)") && r[0].calls == 20 && r[0].replaced == 16 &&
              !r[0].refused);
        CHECK(!strcmp(r[1].region, "Adam.step (a.py:9)") && r[1].calls == 10 && r[1].replaced == 0 && r[1].refused);
        CHECK(!strcmp(w[0].reason, "refused by the recording: x") && w[0].count == 9);
        CHECK(!strcmp(w[1].region, "Block.forward (m.py:21)") && w[1].count == 4);
        CHECK(!strcmp(w[2].reason, "learning") && w[2].count == 1);
    }
    jn_db_region_replays_free(r, n, w, nw);
    CHECK(jn_db_region_replays(db, run + 1, &r, &n, &w, &nw) == JN_OK && n == 0 && nw == 0 && !r && !w);
    jn_db_close(db);
}

/* A v9 store: a current one without what v10 added. */
static void make_v9(const char *path) {
    unlink(path);
    jn_db *db = NULL;
    if (jn_db_open(path, JN_DB_CREATE, &db) != JN_OK) return;
    int64_t run = make_run(db);
    jn_db_region_put(db, run, &REG[0]);
    char *err = NULL;
    if (sqlite3_exec(jn_db_testing_handle(db), JT_UNDO_V11 JT_UNDO_V10 "UPDATE meta SET value = '9' WHERE key = 'schema_version'",
                     NULL, NULL, &err) != SQLITE_OK)
        fprintf(stderr, "  make_v9: %s\n", err ? err : "?");
    sqlite3_free(err);
    jn_db_close(db);
}

static void test_migration_v9(void) {
    const char *path = tmp("v9m.db");
    jn_db *db = NULL;
    make_v9(path);
    CHECK(jn_db_open(path, JN_DB_READONLY, &db) == JN_OK && db && jn_db_schema_version(db) == 9);
    if (db) {
        jn_db_region_replay *r = NULL;
        jn_db_region_replay_reason *w = NULL;
        int n = -1, nw = -1;
        CHECK(jn_db_region_replays(db, 1, &r, &n, &w, &nw) == JN_OK && n == 0 && nw == 0 && !r && !w);
        jn_db_region *g = NULL;
        CHECK(jn_db_regions(db, 1, &g, &n) == JN_OK && n == 1); /* v9's own rows stay readable */
        jn_db_regions_free(g, n);
        jn_db_close(db);
    }
    CHECK(jt_migrate_under_faults(path, make_v9, 6, 9,
                                  "SELECT count(*) FROM sqlite_master WHERE name='region_replays'", 0, 1, 1) >= 1);
    make_v9(path);
    CHECK(jn_db_open(path, JN_DB_WRITE, &db) == JN_OK && db && jn_db_schema_version(db) == JN_DB_SCHEMA_VERSION);
    if (!db) return;
    CHECK(jn_db_region_replays_put(db, 1, RR, 2, RW, 3) == JN_OK);
    CHECK(q_int(jn_db_testing_handle(db), "SELECT count(*) FROM region_replays") == 2);
    CHECK(q_int(jn_db_testing_handle(db), "SELECT count(*) FROM regions") == 1);
    jn_db_close(db);
}

/* ------------------------------------------------ backward skip (v11) */
static const jn_db_replay_backward_totals BT = {32, 14, 2, 16, 3};
static const jn_db_replay_backward_reason BW[] = {
    {"g0", "grad_defined", "a leaf it reaches has a .grad already (accumulation)", 41, 0, 16},
    {"g0", "fell_back_miss", "a miss later in its segment: the engine ran it there", 12, 1, 3},
    {"", "after_miss", "a miss earlier in its segment: the rest of the segment ran eagerly", -1, 0, 2}};

static void test_backward_counters(void) {
    const char *path = tmp("v11bw.db");
    unlink(path);
    jn_db *db = NULL;
    CHECK(jn_db_open(path, JN_DB_CREATE, &db) == JN_OK);
    if (!db) return;
    int64_t run = make_run(db);
    CHECK(jn_db_replay_backward_put(db, run + 5, &BT, BW, 3) == JN_ERR_VALUE && has("no run"));
    jn_db_replay_backward_totals bad = {1, 1, 0, 0, 2};
    CHECK(jn_db_replay_backward_put(db, run, &bad, NULL, 0) == JN_ERR_VALUE && has("fallbacks <= skipped"));
    jn_db_replay_backward_reason badw = {NULL, "x", "y", 0, 0, 1};
    CHECK(jn_db_replay_backward_put(db, run, &BT, &badw, 1) == JN_ERR_VALUE && has("needs a graph"));
    CHECK(jn_db_replay_backward_put(db, run, NULL, NULL, 0) == JN_ERR_VALUE);
    /* all or none under a failure at each write */
    sqlite3 *h = jn_db_testing_handle(db);
    for (int k = 1; k <= 8; k++) {
        int64_t before = q_int(h, "SELECT count(*) FROM replay_backward") +
                         q_int(h, "SELECT count(*) FROM replay_backward_reasons");
        jn_db_inject_fault(k);
        jn_status s = jn_db_replay_backward_put(db, run, &BT, BW, 3);
        jn_db_inject_fault(0);
        int64_t after = q_int(h, "SELECT count(*) FROM replay_backward") +
                        q_int(h, "SELECT count(*) FROM replay_backward_reasons");
        CHECK(s == JN_OK ? after == before + 4 : (s == JN_ERR_IO && has("injected") && after == before));
    }
    CHECK(sqlite3_exec(h, "DELETE FROM replay_backward; DELETE FROM replay_backward_reasons", 0, 0, 0) == SQLITE_OK);
    /* nothing stored: none */
    jn_db_replay_backward_totals t;
    jn_db_replay_backward_reason *w = NULL;
    int has_ = -1, n = -1;
    CHECK(jn_db_replay_backward(db, run, &has_, &t, &w, &n) == JN_OK && !has_ && n == 0 && !w && t.calls == 0);
    /* two reports of one run add up; rows per place and reason, most frequent first */
    CHECK(jn_db_replay_backward_put(db, run, &BT, BW, 3) == JN_OK);
    CHECK(jn_db_replay_backward_put(db, run, &BT, BW + 1, 1) == JN_OK);
    CHECK(jn_db_replay_backward(db, run, &has_, &t, &w, &n) == JN_OK && has_ && n == 3);
    CHECK(t.calls == 64 && t.skipped == 28 && t.learned == 4 && t.declined == 32 && t.fallbacks == 6);
    if (n == 3) {
        CHECK(!strcmp(w[0].graph, "g0") && w[0].token == 41 && !strcmp(w[0].name, "grad_defined") &&
              !w[0].fallback && w[0].count == 16 && strstr(w[0].reason, "accumulation"));
        CHECK(!strcmp(w[1].name, "fell_back_miss") && w[1].fallback && w[1].token == 12 && w[1].count == 6);
        CHECK(!strcmp(w[2].graph, "") && w[2].token == -1 && !strcmp(w[2].name, "after_miss") && w[2].count == 2);
    }
    jn_db_replay_backward_free(w, n);
    CHECK(jn_db_replay_backward(db, run + 1, &has_, &t, &w, &n) == JN_OK && !has_ && n == 0 && !w);
    jn_db_close(db);
    /* read-only: reads work, writes are refused */
    CHECK(jn_db_open(path, JN_DB_READONLY, &db) == JN_OK && db);
    if (!db) return;
    CHECK(jn_db_replay_backward_put(db, run, &BT, BW, 3) == JN_ERR_IO && has("read-only"));
    CHECK(jn_db_replay_backward(db, run, &has_, &t, &w, &n) == JN_OK && has_ && n == 3);
    jn_db_replay_backward_free(w, n);
    jn_db_close(db);
}

/* A v10 store: a current one without what v11 added. */
static void make_v10(const char *path) {
    unlink(path);
    jn_db *db = NULL;
    if (jn_db_open(path, JN_DB_CREATE, &db) != JN_OK) return;
    int64_t run = make_run(db);
    jn_db_region_replays_put(db, run, RR, 2, RW, 3);
    char *err = NULL;
    if (sqlite3_exec(jn_db_testing_handle(db), JT_UNDO_V11 "UPDATE meta SET value = '10' WHERE key = 'schema_version'",
                     NULL, NULL, &err) != SQLITE_OK)
        fprintf(stderr, "  make_v10: %s\n", err ? err : "?");
    sqlite3_free(err);
    jn_db_close(db);
}

static void test_migration_v10(void) {
    const char *path = tmp("v10m.db");
    jn_db *db = NULL;
    make_v10(path);
    CHECK(jn_db_open(path, JN_DB_READONLY, &db) == JN_OK && db && jn_db_schema_version(db) == 10);
    if (db) {
        jn_db_replay_backward_totals t;
        jn_db_replay_backward_reason *w = NULL;
        int has_ = -1, n = -1;
        CHECK(jn_db_replay_backward(db, 1, &has_, &t, &w, &n) == JN_OK && !has_ && n == 0 && !w);
        jn_db_region_replay *r = NULL;
        jn_db_region_replay_reason *rw = NULL;
        int nr = 0, nrw = 0;
        CHECK(jn_db_region_replays(db, 1, &r, &nr, &rw, &nrw) == JN_OK && nr == 2); /* v10's own rows stay */
        jn_db_region_replays_free(r, nr, rw, nrw);
        jn_db_close(db);
    }
    CHECK(jt_migrate_under_faults(path, make_v10, 6, 10,
                                  "SELECT count(*) FROM sqlite_master WHERE name='replay_backward'", 0, 1, 1) >= 1);
    make_v10(path);
    CHECK(jn_db_open(path, JN_DB_WRITE, &db) == JN_OK && db && jn_db_schema_version(db) == JN_DB_SCHEMA_VERSION);
    if (!db) return;
    CHECK(jn_db_replay_backward_put(db, 1, &BT, BW, 3) == JN_OK);
    CHECK(q_int(jn_db_testing_handle(db), "SELECT count(*) FROM replay_backward_reasons") == 3);
    CHECK(q_int(jn_db_testing_handle(db), "SELECT count(*) FROM region_replays") == 2);
    jn_db_close(db);
}

/* A janus refuses a store of a later schema, leaving it as it is. */
static void test_newer_refused(void) {
    const char *path = tmp("vnext.db");
    char next[16], want[40];
    snprintf(next, sizeof next, "%d", JN_DB_SCHEMA_VERSION + 1);
    snprintf(want, sizeof want, "schema version %s", next);
    unlink(path);
    jn_db *db = NULL;
    CHECK(jn_db_open(path, JN_DB_CREATE, &db) == JN_OK);
    if (!db) return;
    int64_t run = make_run(db);
    CHECK(jn_db_region_put(db, run, &REG[0]) == JN_OK);
    char sql[96];
    snprintf(sql, sizeof sql, "UPDATE meta SET value = '%s' WHERE key = 'schema_version'", next);
    CHECK(sqlite3_exec(jn_db_testing_handle(db), sql, 0, 0, 0) == SQLITE_OK);
    jn_db_close(db);
    for (int fl = JN_DB_READONLY; fl <= JN_DB_CREATE; fl++)
        CHECK(jn_db_open(path, fl, &db) == JN_ERR_IO && has(want) && has("upgrade janus"));
    sqlite3 *h = NULL;
    sqlite3_open(path, &h);
    CHECK(q_int(h, "SELECT value FROM meta WHERE key='schema_version'") == JN_DB_SCHEMA_VERSION + 1);
    CHECK(q_int(h, "SELECT count(*) FROM regions") == 1);
    sqlite3_close(h);
}

int main(void) {
    if (jt_tmp_begin("dbregions")) return 1;
    test_codec();
    test_put_get();
    test_migration_v8();
    test_region_replays();
    test_migration_v9();
    test_backward_counters();
    test_migration_v10();
    test_newer_refused();
    jt_tmp_end();
    JT_DONE();
}
