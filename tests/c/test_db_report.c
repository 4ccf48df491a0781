/* test_db_report.c -- schema v6 of the trace store (db/): what `janus
 * report` reads beyond the counters.  A run's CPU time and peak memory;
 * per-step times (jn_db_run_steps_put / _steps: bounded, kinds checked,
 * replaced per step) and segments (bounded); per-graph times summed like
 * the counters; a bundle's notes; miss rows with a range of values; the
 * misses grouped by guard (jn_db_replay_miss_groups: one group for a
 * reason that differs only in the value seen, however it is spelled, but
 * never when the number is a position such as "op 42"; ranges merged,
 * distinct values counted, unknown when a row kept a range; real misses
 * before fallbacks by choice); every put all or none under injected
 * failures; and the v5 -> v6 migration (a v5 store read-only reads as
 * having none of it, opened for writing it migrates). */
#include <math.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "jn_db.h"
#include "jn_test.h"
#include "jn_test_db.h"

static jn_db_run_info info(const char *kind) {
    return (jn_db_run_info){.argv_json = "[\"python3\",\"train.py\"]", .cwd = "/w", .optable_hash = "0123456789abcdef",
                            .optable_ops = "add a", .device = "cpu", .kind = kind};
}

static jn_db *fresh(const char *name, int64_t *rec, int64_t *rep) {
    jn_db *db = NULL;
    const char *path = tmp(name);
    unlink(path);
    if (jn_db_open(path, JN_DB_CREATE, &db) != JN_OK) return NULL;
    jn_db_run_info a = info("record"), b = info("replay");
    if (jn_db_run_begin(db, &a, rec) != JN_OK || jn_db_run_begin(db, &b, rep) != JN_OK) {
        jn_db_close(db);
        return NULL;
    }
    return db;
}

static void test_usage(void) {
    int64_t r1, r2;
    jn_db *db = fresh("usage.db", &r1, &r2);
    CHECK(db != NULL);
    if (!db) return;
    jn_db_run_row *rows = NULL;
    int n = 0;
    CHECK(jn_db_runs(db, r1, &rows, &n) == JN_OK && n == 1 && isnan(rows[0].cpu_seconds) && rows[0].peak_rss == 0);
    jn_db_runs_free(rows, n);
    CHECK(jn_db_run_set_usage(db, r1, 1.25, 300 << 20) == JN_OK);
    CHECK(jn_db_runs(db, r1, &rows, &n) == JN_OK && n == 1 && rows[0].cpu_seconds == 1.25 &&
          rows[0].peak_rss == 300 << 20);
    jn_db_runs_free(rows, n);
    CHECK(jn_db_run_set_usage(db, 99, 1, 1) == JN_ERR_VALUE && has("no run 99"));
    CHECK(jn_db_run_set_usage(db, r1, NAN, 1) == JN_ERR_VALUE);
    CHECK(jn_db_run_set_usage(db, r1, 1, -1) == JN_ERR_VALUE);
    jn_db_close(db);
}

static void test_steps_and_segments(void) {
    int64_t r1, r2;
    jn_db *db = fresh("steps.db", &r1, &r2);
    CHECK(db != NULL);
    if (!db) return;
    sqlite3 *h = jn_db_testing_handle(db);
    jn_db_run_step st[3] = {
        {1, "step", 0.0, 0.5, 2, 1, 10, 30, 0.01},
        {2, "step", 0.5, 0.25, 1, 1, 40, 0, 0.2},
        {3, "tail", 0.75, 0.125, 3, 0, -1, -1, 0.0},
    };
    CHECK(jn_db_run_steps_put(db, r2, st, 3) == JN_OK);
    jn_db_run_step *rs = NULL;
    int n = 0;
    CHECK(jn_db_run_steps(db, r2, &rs, &n) == JN_OK && n == 3);
    if (n == 3) {
        CHECK(rs[0].step == 1 && !strcmp(rs[0].kind, "step") && rs[0].duration == 0.5 && rs[0].segments == 2 &&
              rs[0].hits == 1 && rs[0].graph_ops == 10 && rs[0].eager_ops == 30 && rs[0].graph_seconds == 0.01);
        CHECK(rs[1].started == 0.5 && rs[1].graph_seconds == 0.2);
        CHECK(!strcmp(rs[2].kind, "tail") && rs[2].graph_ops == -1 && rs[2].eager_ops == -1); /* not counted */
    }
    jn_db_run_steps_free(rs, n);
    /* a step stored again is replaced, not added */
    jn_db_run_step again = {2, "step", 0.5, 0.75, 1, 0, 0, 40, 0};
    CHECK(jn_db_run_steps_put(db, r2, &again, 1) == JN_OK);
    CHECK(q_int(h, "SELECT count(*) FROM run_steps WHERE run_id = 2") == 3);
    CHECK(q_int(h, "SELECT eager_ops FROM run_steps WHERE run_id = 2 AND step = 2") == 40);
    CHECK(jn_db_run_steps(db, r1, &rs, &n) == JN_OK && n == 0 && !rs); /* other runs: none */
    /* refusals: kind, negative durations, too many, no run */
    jn_db_run_step bad = {1, "warmup", 0, 1, 0, 0, 0, 0, 0};
    CHECK(jn_db_run_steps_put(db, r2, &bad, 1) == JN_ERR_VALUE && has("step or tail"));
    bad.kind = "step", bad.duration = -1;
    CHECK(jn_db_run_steps_put(db, r2, &bad, 1) == JN_ERR_VALUE);
    CHECK(jn_db_run_steps_put(db, r2, st, JN_DB_STEPS_MAX + 1) == JN_ERR_VALUE && has("rows"));
    CHECK(jn_db_run_steps_put(db, 99, st, 1) == JN_ERR_VALUE && has("no run 99"));

    enum { NSEG = 5 };
    jn_db_segment seg[NSEG];
    for (int i = 0; i < NSEG; i++)
        seg[i] = (jn_db_segment){i, 1 + i / 2, 0.1 * i, 0.1, i % 2 ? "g1" : "", i % 2, i % 2 ? -1 : JN_DB_MISS_CHOICE, 7 + i};
    CHECK(jn_db_segments_put(db, r2, seg, NSEG) == JN_OK);
    jn_db_segment *rg = NULL;
    CHECK(jn_db_segments(db, r2, &rg, &n) == JN_OK && n == NSEG);
    if (n == NSEG) {
        CHECK(rg[3].seq == 3 && rg[3].step == 2 && !strcmp(rg[3].graph, "g1") && rg[3].hit == 1 && rg[3].ops == 10);
        CHECK(rg[4].graph[0] == 0 && rg[4].hit == 0 && rg[4].guard == JN_DB_MISS_CHOICE);
    }
    jn_db_segments_free(rg, n);
    CHECK(jn_db_segments_put(db, r2, seg, JN_DB_SEGMENTS_MAX + 1) == JN_ERR_VALUE);
    seg[0].ops = -1;
    CHECK(jn_db_segments_put(db, r2, seg, 1) == JN_ERR_VALUE && has("segment row 0"));

    /* per-graph times add up like the counters */
    jn_db_graph_times gt[] = {{"g0", 100, 0.5, 2, 0.25, 20}, {"g1", 5, 0.125, 0, 0, 0}};
    CHECK(jn_db_graph_times_put(db, r2, gt, 2) == JN_OK && jn_db_graph_times_put(db, r2, gt, 1) == JN_OK);
    jn_db_graph_times *t = NULL;
    CHECK(jn_db_graph_times_get(db, r2, &t, &n) == JN_OK && n == 2);
    if (n == 2)
        CHECK(!strcmp(t[0].graph, "g0") && t[0].ops == 200 && t[0].wall == 1.0 && t[0].eager_segments == 4 &&
              t[0].eager_wall == 0.5 && t[0].eager_ops == 40 && t[1].ops == 5);
    jn_db_graph_times_free(t, n);
    jn_db_graph_times neg[] = {{"g9", 1, -1, 0, 0, 0}};
    CHECK(jn_db_graph_times_put(db, r2, neg, 1) == JN_ERR_VALUE && has("g9"));

    /* notes of a bundle, in order, by kind */
    const char *lines[] = {"group at a.py:3 (4 segments): not captured: why", "group at b.py:9: other"};
    const char *sum = "2 graphs";
    CHECK(jn_db_bundle_notes_put(db, 7, "summary", &sum, 1) == JN_OK &&
          jn_db_bundle_notes_put(db, 7, "refused", lines, 2) == JN_OK);
    jn_db_note *notes = NULL;
    CHECK(jn_db_bundle_notes(db, 7, &notes, &n) == JN_OK && n == 3);
    if (n == 3) CHECK(!strcmp(notes[0].kind, "summary") && !strcmp(notes[2].text, lines[1]));
    jn_db_notes_free(notes, n);
    CHECK(jn_db_bundle_notes(db, 8, &notes, &n) == JN_OK && n == 0);
    CHECK(jn_db_bundle_notes_put(db, 7, NULL, lines, 1) == JN_ERR_VALUE);

    /* every put is all or none under an injected failure */
    int failed = 0, consistent = 1;
    const char *count_sql = "SELECT (SELECT count(*) FROM replay_segments) + (SELECT count(*) FROM run_steps)";
    for (int k = 1; k <= 6; k++) {
        jn_db_segment more[2] = {{100, 9, 1, 1, "g1", 1, -1, 1}, {101, 9, 2, 1, "g1", 1, -1, 1}};
        jn_db_run_step ms[2] = {{10, "step", 1, 1, 0, 0, -1, -1, 0}, {11, "step", 2, 1, 0, 0, -1, -1, 0}};
        for (int which = 0; which < 2; which++) {
            int64_t before = q_int(h, count_sql);
            jn_db_inject_fault(k);
            jn_status st2 = which ? jn_db_run_steps_put(db, r2, ms, 2) : jn_db_segments_put(db, r2, more, 2);
            jn_db_inject_fault(0);
            int64_t after = q_int(h, count_sql);
            if (st2 == JN_OK) consistent &= after == before + 2;
            else failed++, consistent &= after == before && st2 == JN_ERR_IO && strstr(jn_errmsg(), "injected");
        }
        /* so that the next round adds them again */
        sqlite3_exec(h, "DELETE FROM replay_segments WHERE seq >= 100; DELETE FROM run_steps WHERE step >= 10", 0, 0, 0);
    }
    CHECK(failed >= 6);
    CHECK(consistent);
    CHECK(q_int(h, "SELECT count(*) FROM replay_segments WHERE seq >= 100") == 0);
    jn_db_close(db);
}

static jn_db_replay_miss miss(const char *graph, int guard, const char *reason, const char *site, double seen,
                              int64_t count) {
    return (jn_db_replay_miss){.graph = graph, .guard = guard, .reason = reason, .site = site, .seen = seen,
                               .count = count};
}

static void test_miss_groups(void) {
    int64_t r1, r2;
    jn_db *db = fresh("groups.db", &r1, &r2);
    CHECK(db != NULL);
    if (!db) return;
    char reasons[9][160];
    jn_db_replay_miss m[16];
    int nm = 0;
    /* one attribute check failing on 9 values: 9 rows, one group */
    for (int i = 0; i < 9; i++) {
        snprintf(reasons[i], sizeof reasons[i], "graph g2, op 42 (adam_ at t.py:62): attribute step was %d, recorded 2",
                 101 + 100 * i);
        m[nm++] = miss("g2", -1, reasons[i], "", 101 + 100 * i, 1);
    }
    /* the value spelled as a float, and the same value twice */
    m[nm++] = miss("g3", -1, "graph g3, op 1 (mul at t.py:9): input 1 was 0.10000000000000001, recorded 0.5", "", 0.1, 2);
    m[nm++] = miss("g3", -1, "graph g3, op 1 (mul at t.py:9): input 1 was 0.25, recorded 0.5", "", 0.25, 1);
    /* the number is a position ("op 42"), not the value: never taken out */
    m[nm++] = miss("g4", -1, "graph g4, op 42 (relu at t.py:3): expected relu, the script ran tanh", "", 42, 1);
    m[nm++] = miss("g4", -1, "graph g4, op 7 (relu at t.py:3): expected relu, the script ran tanh", "", 7, 1);
    /* a guard with a range of values in one row (a replay keeps the range, not each value) */
    m[nm] = miss("g1", 3, "dim 0 of input %1 (at t.py:5) was 12; recorded 16", "t.py:5", 12, 30);
    m[nm].has_range = 1, m[nm].seen_min = 2, m[nm].seen_max = 14, nm++;
    /* a choice, more frequent than any miss: still listed last */
    m[nm++] = miss("g1", JN_DB_MISS_CHOICE, "graph g1 ran eagerly to time it against its compiled run", "", NAN, 50);
    CHECK(jn_db_replay_put(db, r2, NULL, 0, m, nm, NULL, 0) == JN_OK);

    jn_db_miss_group *g = NULL;
    int n = 0;
    CHECK(jn_db_replay_miss_groups(db, r2, &g, &n) == JN_OK);
    CHECK(n == 6); /* g1 guard 3, g2, g3, g4 twice (positions differ), the choice */
    const jn_db_miss_group *g1 = NULL, *g2 = NULL, *g3 = NULL;
    int g4 = 0;
    for (int i = 0; i < n; i++) {
        if (!strcmp(g[i].graph, "g1") && g[i].guard == 3) g1 = &g[i];
        if (!strcmp(g[i].graph, "g2")) g2 = &g[i];
        if (!strcmp(g[i].graph, "g3")) g3 = &g[i];
        if (!strcmp(g[i].graph, "g4")) {
            g4++;
            CHECK(!strstr(g[i].pattern, JN_DB_SEEN_MARK)); /* "op 42" is kept */
        }
    }
    CHECK(g1 && g1->count == 30 && g1->seen_min == 2 && g1->seen_max == 14 && g1->nvalues == 0 &&
          !strcmp(g1->site, "t.py:5") && strstr(g1->pattern, "was <seen>; recorded 16"));
    CHECK(g2 && g2->count == 9 && g2->nvalues == 9 && g2->seen_min == 101 && g2->seen_max == 901 &&
          !strcmp(g2->pattern, "graph g2, op 42 (adam_ at t.py:62): attribute step was <seen>, recorded 2") &&
          strstr(g2->reason, "was 101,"));
    CHECK(g3 && g3->count == 3 && g3->nvalues == 2 && g3->seen_min == 0.1 && g3->seen_max == 0.25);
    CHECK(g4 == 2);
    /* order: real misses by count (g1 30, g2 9, g3 3, ...), the choice last */
    CHECK(n == 6 && g[0].count == 30 && g[1].count == 9 && g[2].count == 3 && g[5].guard == JN_DB_MISS_CHOICE &&
          g[5].nvalues == 0 && isnan(g[5].seen_min));
    jn_db_miss_groups_free(g, n);
    /* the rows as stored: the range kept */
    jn_db_replay_graph *rg = NULL;
    jn_db_replay_miss *rm = NULL;
    int ng = 0, nr = 0;
    CHECK(jn_db_replay_get(db, r2, &rg, &ng, &rm, &nr) == JN_OK && nr == nm);
    int ranged = 0;
    for (int i = 0; i < nr; i++) ranged += rm[i].has_range && rm[i].seen_min == 2 && rm[i].seen_max == 14;
    CHECK(ranged == 1);
    jn_db_replay_free(rg, ng, rm, nr);
    CHECK(jn_db_replay_miss_groups(db, r1, &g, &n) == JN_OK && n == 0 && !g);
    jn_db_close(db);
}

/* A v5 store as v5 made it: the current one minus v6 and v7. */
static void make_v5(const char *path) {
    unlink(path);
    jn_db *db = NULL;
    if (jn_db_open(path, JN_DB_CREATE, &db) != JN_OK) return;
    jn_db_run_info a = info("replay");
    int64_t run;
    if (jn_db_run_begin(db, &a, &run) != JN_OK) fprintf(stderr, "  run_begin: %s\n", jn_errmsg());
    jn_db_replay_miss m = miss("g0", 1, "was 3", "x.py:1", 3, 1);
    if (jn_db_replay_put(db, run, NULL, 0, &m, 1, NULL, 0) != JN_OK) fprintf(stderr, "  replay_put: %s\n", jn_errmsg());
    char *err = NULL;
    if (sqlite3_exec(jn_db_testing_handle(db),
                     JT_UNDO_V11 JT_UNDO_V10 JT_UNDO_V9 JT_UNDO_V8 JT_UNDO_V7 JT_UNDO_V6 "UPDATE meta SET value = '5' WHERE key = 'schema_version'",
                     NULL, NULL, &err) != SQLITE_OK)
        fprintf(stderr, "  make_v5: %s\n", err ? err : "?");
    sqlite3_free(err);
    jn_db_close(db);
}

static void test_migration_v5(void) {
    const char *path = tmp("v5.db");
    jn_db *db = NULL;
    make_v5(path);
    CHECK(jn_db_open(path, JN_DB_READONLY, &db) == JN_OK && db && jn_db_schema_version(db) == 5);
    if (db) {
        int n = -1;
        jn_db_run_step *st = NULL;
        jn_db_segment *sg = NULL;
        jn_db_graph_times *gt = NULL;
        jn_db_note *no = NULL;
        jn_db_miss_group *mg = NULL;
        jn_db_run_row *runs = NULL;
        CHECK(jn_db_run_steps(db, 1, &st, &n) == JN_OK && n == 0);
        CHECK(jn_db_segments(db, 1, &sg, &n) == JN_OK && n == 0);
        CHECK(jn_db_graph_times_get(db, 1, &gt, &n) == JN_OK && n == 0);
        CHECK(jn_db_bundle_notes(db, 1, &no, &n) == JN_OK && n == 0);
        CHECK(jn_db_replay_miss_groups(db, 1, &mg, &n) == JN_OK && n == 1 && mg[0].seen_min == 3 && mg[0].nvalues == 1);
        jn_db_miss_groups_free(mg, n);
        CHECK(jn_db_runs(db, 0, &runs, &n) == JN_OK && n == 1 && isnan(runs[0].cpu_seconds));
        jn_db_runs_free(runs, n);
        jn_db_close(db);
    }
    CHECK(jt_migrate_under_faults(path, make_v5, 19, 5,
                                  "SELECT (SELECT count(*) FROM sqlite_master WHERE name IN ('run_steps',"
                                  "'replay_segments','replay_graph_times','bundle_notes')) + (SELECT count(*) FROM "
                                  "pragma_table_info('runs') WHERE name IN ('cpu_seconds','peak_rss'))",
                                  0, 6, 1) >= 3);
    make_v5(path);
    CHECK(jn_db_open(path, JN_DB_WRITE, &db) == JN_OK && db && jn_db_schema_version(db) == JN_DB_SCHEMA_VERSION);
    if (!db) return;
    jn_db_run_step s = {1, "step", 0, 1, 0, 0, -1, -1, 0};
    CHECK(jn_db_run_steps_put(db, 1, &s, 1) == JN_OK && jn_db_run_set_usage(db, 1, 2, 4096) == JN_OK);
    jn_db_close(db);
}

int main(void) {
    if (jt_tmp_begin("dbreport")) return 1;
    test_usage();
    test_steps_and_segments();
    test_miss_groups();
    test_migration_v5();
    jt_tmp_end();
    JT_DONE();
}
