/* test_db_read.c -- tests of the trace store's read side and of how a path
 * becomes a file: every reading function (jn_db.h, "reading") against
 * summaries written with known values; a read snapshot that does not see a
 * later commit; read failures that name the store; ":memory:", "file:v.db"
 * and names with URI characters opened as the files they name, from any
 * working directory; and stores that cannot be written -- a read-only
 * directory as an unprivileged user (a forked child that drops to nobody
 * when the test runs as root) -- read with and without a WAL index, refused
 * with the fix when the log holds commits the index would be needed for,
 * and refused for writing up front; runs whose process died read as lost
 * (a dead pid, a reused pid, another boot; never another host's run or a
 * live one), the next writer marks them so, and a v5 store migrates to v7
 * with its runs judged by host and pid. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <sqlite3.h>

#include "jn_db.h"
#include "jn_db_testing.h"
#include "jn_test.h"
#include "jn_test_db.h"

#define CS1 1
#define CS2 2

/* A store with two runs: run 1 (record, finished) has three steps with the
 * summaries below; run 2 (a replay of bundle 7) is still running. */
static jn_db *make_store(const char *path) {
    jn_db *db = NULL;
    if (jn_db_open(path, JN_DB_CREATE, &db) != JN_OK) return NULL;
    jn_db_run_info ri = {.argv_json = "[\"python\",\"t.py\"]", .cwd = "/w", .python_version = "3.11.2",
                         .janus_version = "9.9", .optable_hash = "00000000000000aa",
                         .optable_ops = "add alpha:f\nmul \nview shape:L", .cpu_features = "avx2",
                         .device = "cpu", .hostname = "h", .pid = 42, .started = 100.0};
    int64_t run = 0, id = 0;
    CHECK(jn_db_run_begin(db, &ri, &run) == JN_OK && run == 1);
    CHECK(jn_db_callsite(db, "t.py", 10, "main", &id) == JN_OK && id == CS1);
    CHECK(jn_db_callsite(db, "t.py", 20, "loss", &id) == JN_OK && id == CS2);
    jn_db_opcount oc0[] = {{"add", 2}, {"mul", 1}}, oc1[] = {{"add", 2}}, oc2[] = {{"mul", 1}};
    jn_db_sync sy0[] = {{0, JN_SYNC_ITEM, 1.5, CS1}}, sy1[] = {{0, JN_SYNC_ITEM, NAN, CS1}},
               sy2[] = {{0, JN_SYNC_BOOL, 0, CS2}, {1, JN_SYNC_ITEM, 2.5, CS1}};
    jn_db_decision de0[] = {{CS2, JN_DEC_BRANCH, 1, 1}}, de1[] = {{CS2, JN_DEC_BRANCH, 0, 1}},
                   de2[] = {{CS2, JN_DEC_LOOP, 3, 2}};
    jn_db_shape sh0[] = {{"add", CS1, 0, 0, 4}}, sh1[] = {{"add", CS1, 0, 0, 8}, {"add", CS1, 0, 1, 3}},
                sh2[] = {{"add", CS1, 0, 0, 4}, {"add", CS1, 0, 1, 3}};
    jn_db_step st[3] = {
        {.run_id = 1, .step = 0, .kind = "optimizer", .started = 101, .duration = 0.5, .signature = 0xaull,
         .n_ops = 3, .n_syncs = 1, .opcounts = oc0, .nopcounts = 2, .syncs = sy0, .nsyncs = 1, .decisions = de0,
         .ndecisions = 1, .shapes = sh0, .nshapes = 1},
        {.run_id = 1, .step = 1, .kind = "optimizer", .started = 102, .duration = 0.25,
         .signature = 0xfedcba9876543210ull, .n_ops = 2, .n_syncs = 1, .opcounts = oc1, .nopcounts = 1,
         .syncs = sy1, .nsyncs = 1, .decisions = de1, .ndecisions = 1, .shapes = sh1, .nshapes = 2},
        {.run_id = 1, .step = 2, .kind = "tail", .started = 103, .duration = 0.125, .signature = 0xaull,
         .n_ops = 1, .n_syncs = 2, .opcounts = oc2, .nopcounts = 1, .syncs = sy2, .nsyncs = 2, .decisions = de2,
         .ndecisions = 1, .shapes = sh2, .nshapes = 2},
    };
    CHECK(jn_db_write_steps(db, st, 3) == JN_OK);
    CHECK(jn_db_run_end(db, 1, 0, "finished", 110.0) == JN_OK);
    ri.kind = "replay";
    ri.bundle_id = 7;
    ri.argv_json = NULL;
    CHECK(jn_db_run_begin(db, &ri, &run) == JN_OK && run == 2);
    return db;
}

static void test_runs(jn_db *db) {
    jn_db_run_row *r = NULL;
    int n = -1;
    CHECK(jn_db_runs(db, 0, &r, &n) == JN_OK && n == 2);
    if (n == 2) {
        CHECK(r[0].id == 1 && !strcmp(r[0].kind, "record") && !strcmp(r[0].argv_json, "[\"python\",\"t.py\"]"));
        CHECK(!strcmp(r[0].cwd, "/w") && !strcmp(r[0].status, "finished") && !strcmp(r[0].python_version, "3.11.2"));
        CHECK(!strcmp(r[0].janus_version, "9.9") && !strcmp(r[0].hostname, "h") && !strcmp(r[0].device, "cpu"));
        CHECK(!strcmp(r[0].optable_hash, "00000000000000aa") && !strcmp(r[0].cpu_features, "avx2"));
        CHECK(r[0].started == 100.0 && r[0].ended == 110.0 && r[0].has_exit_status && r[0].exit_status == 0);
        CHECK(r[0].pid == 42 && r[0].bundle_id == 0);
        /* the running replay: no end, no exit status, its bundle; a NULL argv stays NULL */
        CHECK(r[1].id == 2 && !strcmp(r[1].kind, "replay") && r[1].bundle_id == 7 && r[1].argv_json == NULL);
        CHECK(isnan(r[1].ended) && !r[1].has_exit_status && !strcmp(r[1].status, "running"));
    }
    jn_db_runs_free(r, n);
    CHECK(jn_db_runs(db, 2, &r, &n) == JN_OK && n == 1 && r[0].id == 2);
    jn_db_runs_free(r, n);
    CHECK(jn_db_runs(db, 9, &r, &n) == JN_OK && n == 0 && r == NULL);
    jn_db_runs_free(r, n);
}

static void test_steps(jn_db *db) {
    jn_db_run_totals t;
    CHECK(jn_db_totals(db, 1, &t) == JN_OK && t.steps == 3 && t.ops == 6 && t.syncs == 4 && t.signatures == 2);
    CHECK(t.seconds == 0.875);
    CHECK(jn_db_totals(db, 2, &t) == JN_OK && t.steps == 0 && t.ops == 0 && t.signatures == 0);

    jn_db_count *c = NULL;
    int n = 0;
    CHECK(jn_db_step_kinds(db, 1, &c, &n) == JN_OK && n == 2);
    if (n == 2) CHECK(!strcmp(c[0].name, "optimizer") && c[0].count == 2 && !strcmp(c[1].name, "tail") && c[1].count == 1);
    jn_db_counts_free(c, n);
    CHECK(jn_db_op_histogram(db, 1, &c, &n) == JN_OK && n == 2);
    if (n == 2) CHECK(!strcmp(c[0].name, "add") && c[0].count == 4 && !strcmp(c[1].name, "mul") && c[1].count == 2);
    jn_db_counts_free(c, n);

    jn_db_step_row *s = NULL;
    CHECK(jn_db_steps(db, 1, &s, &n) == JN_OK && n == 3);
    if (n == 3) {
        CHECK(s[0].step == 0 && !strcmp(s[0].kind, "optimizer") && s[0].started == 101 && s[0].duration == 0.5);
        CHECK(s[1].signature == 0xfedcba9876543210ull && s[1].n_ops == 2 && s[1].n_syncs == 1);
        CHECK(s[2].step == 2 && !strcmp(s[2].kind, "tail") && s[2].signature == 0xa && s[2].n_syncs == 2);
    }
    jn_db_steps_free(s, n);

    jn_db_signature *g = NULL;
    CHECK(jn_db_signatures(db, 1, &g, &n) == JN_OK && n == 2);
    if (n == 2) {
        CHECK(g[0].signature == 0xa && g[0].steps == 2 && g[0].first_step == 0 && g[0].last_step == 2 && g[0].n_ops == 1);
        CHECK(g[1].signature == 0xfedcba9876543210ull && g[1].steps == 1 && g[1].first_step == 1);
    }
    jn_db_signatures_free(g, n);
}

static void test_summaries(jn_db *db) {
    int n = 0;
    jn_db_sync_point *p = NULL;
    CHECK(jn_db_sync_points(db, 1, &p, &n) == JN_OK && n == 2);
    if (n == 2) {
        /* most frequent first; the values in step order, NaN where none was seen */
        CHECK(p[0].kind == JN_SYNC_ITEM && p[0].callsite == CS1 && p[0].count == 3 && p[0].nvalues == 3);
        CHECK(p[0].values[0] == 1.5 && isnan(p[0].values[1]) && p[0].values[2] == 2.5);
        CHECK(p[1].kind == JN_SYNC_BOOL && p[1].callsite == CS2 && p[1].count == 1 && p[1].nvalues == 1 &&
              p[1].values[0] == 0);
    }
    jn_db_sync_points_free(p, n);

    jn_db_decision *d = NULL;
    CHECK(jn_db_decision_counts(db, 1, &d, &n) == JN_OK && n == 3);
    if (n == 3) {
        CHECK(d[0].callsite == CS2 && d[0].kind == JN_DEC_BRANCH && d[0].outcome == 0 && d[0].count == 1);
        CHECK(d[1].kind == JN_DEC_BRANCH && d[1].outcome == 1 && d[1].count == 1);
        CHECK(d[2].kind == JN_DEC_LOOP && d[2].outcome == 3 && d[2].count == 2);
    }
    jn_db_decision_counts_free(d, n);

    jn_db_shape_var *v = NULL;
    CHECK(jn_db_shape_variation(db, 1, &v, &n) == JN_OK && n == 1); /* dim 1 was always 3 */
    if (n == 1)
        CHECK(!strcmp(v[0].op, "add") && v[0].callsite == CS1 && v[0].arg == 0 && v[0].dim == 0 && v[0].nsizes == 2 &&
              v[0].sizes[0] == 4 && v[0].sizes[1] == 8);
    jn_db_shape_variation_free(v, n);

    jn_db_site *s = NULL;
    CHECK(jn_db_sites(db, &s, &n) == JN_OK && n == 2);
    const jn_db_site *f = jn_db_site_find(s, n, CS2);
    CHECK(f && !strcmp(f->file, "t.py") && f->line == 20 && !strcmp(f->func, "loss"));
    CHECK(jn_db_site_find(s, n, 3) == NULL && jn_db_site_find(s, n, 0) == NULL);
    jn_db_sites_free(s, n);

    jn_db_op_row *o = NULL;
    CHECK(jn_db_run_optable(db, 1, &o, &n) == JN_OK && n == 3);
    if (n == 3)
        CHECK(!strcmp(o[0].name, "add") && !strcmp(o[0].schema, "alpha:f") && !strcmp(o[1].name, "mul") &&
              !strcmp(o[1].schema, "") && !strcmp(o[2].name, "view") && !strcmp(o[2].schema, "shape:L"));
    jn_db_run_optable_free(o, n);
    CHECK(jn_db_run_optable(db, 9, &o, &n) == JN_OK && n == 0);
    jn_db_run_optable_free(o, n);
}

/* Between read_begin and read_end the store is one commit, although
 * another connection commits a step meanwhile. */
static void test_snapshot(const char *path, jn_db *db) {
    jn_db *w = NULL;
    CHECK(jn_db_open(path, JN_DB_WRITE, &w) == JN_OK);
    if (!w) return;
    jn_db_run_totals t;
    CHECK(jn_db_read_begin(db) == JN_OK);
    CHECK(jn_db_totals(db, 1, &t) == JN_OK && t.steps == 3);
    jn_db_step st = {.run_id = 1, .step = 3, .kind = "tail", .signature = 1, .n_ops = 0};
    CHECK(jn_db_write_step(w, &st) == JN_OK);
    CHECK(jn_db_totals(db, 1, &t) == JN_OK && t.steps == 3);
    jn_db_read_end(db);
    CHECK(jn_db_totals(db, 1, &t) == JN_OK && t.steps == 4);
    jn_db_read_end(db); /* without a begin: nothing */
    jn_db_close(w);
}

/* A read that fails says which store and what it was reading. */
static void test_failures(const char *path, jn_db *db) {
    int n = 0;
    jn_db_run_row *r = NULL;
    jn_db_inject_fault(1);
    CHECK(jn_db_runs(db, 0, &r, &n) == JN_ERR_IO && has("injected") && has("reading the runs") && has(path));
    jn_db_inject_fault(0);
    CHECK(r == NULL && n == 0);
    CHECK(sqlite3_exec(jn_db_testing_handle(db), "DROP TABLE shapes", NULL, NULL, NULL) == SQLITE_OK);
    jn_db_shape_var *v = NULL;
    CHECK(jn_db_shape_variation(db, 1, &v, &n) == JN_ERR_IO && has("shape variation") && has("no such table"));
    CHECK(jn_db_runs(NULL, 0, &r, &n) == JN_ERR_VALUE);
}

/* ------------------------------------------------------------------ paths */
/* A store at `name` relative to dir: created from there, the file of that
 * exact name exists, and the absolute path opened from elsewhere reads it. */
static void check_path(const char *dir, const char *name) {
    char cwd[PATH_MAX], full[PATH_MAX + 64];
    if (!getcwd(cwd, sizeof cwd) || chdir(dir) != 0) {
        CHECK(0);
        return;
    }
    jn_db *db = NULL;
    jn_db_run_info ri = {.argv_json = "[]", .optable_hash = "00000000000000aa", .optable_ops = "add"};
    int64_t run = 0;
    CHECK(jn_db_open(name, JN_DB_CREATE, &db) == JN_OK);
    if (db) {
        CHECK(jn_db_run_begin(db, &ri, &run) == JN_OK && run == 1);
        CHECK(!strcmp(jn_db_path(db), name)); /* messages name it as given */
        jn_db_close(db);
    }
    struct stat sb;
    CHECK(stat(name, &sb) == 0 && S_ISREG(sb.st_mode) && sb.st_size > 0);
    CHECK(chdir(cwd) == 0);
    snprintf(full, sizeof full, "%s/%s", dir, name);
    jn_db_run_row *r = NULL;
    int n = 0;
    CHECK(jn_db_open(full, JN_DB_READONLY, &db) == JN_OK && jn_db_runs(db, 0, &r, &n) == JN_OK && n == 1);
    if (n != 1) fprintf(stderr, "  store named '%s': %s\n", name, jn_errmsg());
    jn_db_runs_free(r, n);
    jn_db_close(db);
}

static void test_paths(void) {
    const char *dir = tmp("paths");
    mkdir(dir, 0755);
    /* SQLite would make an in-memory database of the first and read the
     * second as a URI naming v.db (this build interprets URIs) */
    check_path(dir, ":memory:");
    check_path(dir, "file:v.db");
    check_path(dir, "a?mode=ro#x%41.db");
    struct stat sb;
    char p[PATH_MAX];
    snprintf(p, sizeof p, "%s/v.db", dir);
    CHECK(stat(p, &sb) != 0); /* no file of the URI's name appeared */
}

/* --------------------------------------------------------- read-only */
static int copy_file(const char *from, const char *to) {
    FILE *a = fopen(from, "rb"), *b = a ? fopen(to, "wb") : NULL;
    char buf[65536];
    size_t k;
    int rc = a && b ? 0 : -1;
    while (!rc && (k = fread(buf, 1, sizeof buf, a)) > 0) rc = fwrite(buf, 1, k, b) == k ? 0 : -1;
    if (a) fclose(a);
    if (b && fclose(b)) rc = -1;
    return rc;
}

/* What an unprivileged user sees in a read-only directory: clean holds a
 * WAL store without -wal/-shm, indexed one with a -wal log and its -shm,
 * logged one with the log but no index. */
static void readonly_checks(const char *clean, const char *indexed, const char *logged) {
    jn_db *db = NULL;
    jn_db_run_row *r = NULL;
    jn_db_run_totals t;
    int n = 0;
    /* without -shm and nothing in a log: the file alone, read immutable */
    CHECK(jn_db_open(clean, JN_DB_READONLY, &db) == JN_OK);
    if (!db) fprintf(stderr, "  %s\n", jn_errmsg());
    CHECK(db && jn_db_runs(db, 0, &r, &n) == JN_OK && n == 2 && jn_db_totals(db, 1, &t) == JN_OK && t.steps == 4);
    CHECK(db && !jn_db_writable(db, NULL));
    jn_db_runs_free(r, n);
    jn_db_close(db);
    /* with the index: SQLite reads the log too (the last step is only there) */
    CHECK(jn_db_open(indexed, JN_DB_READONLY, &db) == JN_OK);
    if (!db) fprintf(stderr, "  %s\n", jn_errmsg());
    CHECK(db && jn_db_totals(db, 1, &t) == JN_OK && t.steps == 5);
    jn_db_close(db);
    /* commits in a log without its index: refused with the way out */
    CHECK(jn_db_open(logged, JN_DB_READONLY, &db) == JN_ERR_IO && has("-wal") && has("copy the store") && !db);
    /* writing: refused up front, saying why; or read-only on request */
    CHECK(jn_db_open(clean, JN_DB_WRITE, &db) == JN_ERR_IO && has("cannot be written here") && has("not writable") &&
          has("janus inspect") && !db);
    const char *why = NULL;
    CHECK(jn_db_open(clean, JN_DB_WRITE_OR_READONLY, &db) == JN_OK && !jn_db_writable(db, &why) && why &&
          strstr(why, "not writable"));
    CHECK(db && jn_db_runs(db, 0, &r, &n) == JN_OK && n == 2);
    jn_db_runs_free(r, n);
    jn_db_close(db);
}

static void test_readonly(const char *src) {
    char ro[PATH_MAX], clean[PATH_MAX + 16], indexed[PATH_MAX + 16], logged[PATH_MAX + 16], p[2 * PATH_MAX];
    snprintf(ro, sizeof ro, "%s", tmp("ro"));
    mkdir(ro, 0755);
    snprintf(clean, sizeof clean, "%s/clean.db", ro);
    snprintf(indexed, sizeof indexed, "%s/indexed.db", ro);
    snprintf(logged, sizeof logged, "%s/logged.db", ro);
    CHECK(copy_file(src, clean) == 0); /* closed: checkpointed, no -wal left */
    /* a fifth step left in the log of an open store, copied with and without its index */
    jn_db *w = NULL;
    CHECK(jn_db_open(src, JN_DB_WRITE, &w) == JN_OK);
    jn_db_step st = {.run_id = 1, .step = 4, .kind = "tail", .signature = 2};
    CHECK(w && jn_db_write_step(w, &st) == JN_OK);
    const char *suffix[] = {"", "-wal", "-shm"};
    for (int i = 0; i < 3; i++) {
        snprintf(p, sizeof p, "%s%s", src, suffix[i]);
        char to[PATH_MAX + 32];
        snprintf(to, sizeof to, "%s%s", indexed, suffix[i]);
        CHECK(copy_file(p, to) == 0);
        snprintf(to, sizeof to, "%s%s", logged, suffix[i]);
        if (i < 2) CHECK(copy_file(p, to) == 0);
    }
    jn_db_close(w);
    chmod(jt_tmpdir(), 0755); /* mkdtemp made it 0700 */
    chmod(ro, 0555);
    /* root ignores permissions: the checks run in a child as nobody */
    int root = geteuid() == 0;
    fflush(NULL);
    pid_t pid = fork();
    if (pid == 0) {
        if (root && (setgid(65534) != 0 || setuid(65534) != 0)) _exit(100);
        jt_fail = 0;
        readonly_checks(clean, indexed, logged);
        fflush(NULL);
        _exit(jt_fail ? 1 : 0);
    }
    int wst = 0;
    CHECK(pid > 0 && waitpid(pid, &wst, 0) == pid && WIFEXITED(wst));
    if (WEXITSTATUS(wst) == 100) fprintf(stderr, "  cannot become nobody: the read-only checks did not run\n");
    CHECK(WEXITSTATUS(wst) == 0);
    chmod(ro, 0755);
}

/* A run of this host by process pid (pid_start / boot_id as given: "" or
 * -1 leave the stored values NULL, as a store older than v7 has them). */
static int64_t owned_run(jn_db *db, const char *host, int64_t pid, int64_t pid_start, const char *boot) {
    jn_db_run_info ri = {.argv_json = "[]", .hostname = host, .pid = pid, .started = 1.0};
    int64_t run = 0;
    CHECK(jn_db_run_begin(db, &ri, &run) == JN_OK);
    char sql[256];
    snprintf(sql, sizeof sql, "UPDATE runs SET pid_start = %s, boot_id = %s WHERE id = %lld",
             pid_start < 0 ? "pid_start" : pid_start == 0 ? "NULL" : "?", boot ? (boot[0] ? "?" : "NULL") : "boot_id",
             (long long)run);
    sqlite3_stmt *st = NULL;
    CHECK(sqlite3_prepare_v2(jn_db_testing_handle(db), sql, -1, &st, NULL) == SQLITE_OK);
    int k = 1;
    if (pid_start > 0) sqlite3_bind_int64(st, k++, pid_start);
    if (boot && boot[0]) sqlite3_bind_text(st, k++, boot, -1, SQLITE_STATIC);
    CHECK(sqlite3_step(st) == SQLITE_DONE);
    sqlite3_finalize(st);
    return run;
}

static const char *status_of(jn_db *db, int64_t run, char *buf, size_t n) {
    jn_db_run_row *r = NULL;
    int nr = 0;
    buf[0] = 0;
    if (jn_db_runs(db, run, &r, &nr) == JN_OK && nr == 1) snprintf(buf, n, "%s", r[0].status ? r[0].status : "");
    jn_db_runs_free(r, nr);
    return buf;
}

static const char *stored_status(jn_db *db, int64_t run, char *buf, size_t n) {
    sqlite3_stmt *st = NULL;
    buf[0] = 0;
    char sql[96];
    snprintf(sql, sizeof sql, "SELECT status FROM runs WHERE id = %lld", (long long)run);
    if (sqlite3_prepare_v2(jn_db_testing_handle(db), sql, -1, &st, NULL) == SQLITE_OK && sqlite3_step(st) == SQLITE_ROW)
        snprintf(buf, n, "%s", (const char *)sqlite3_column_text(st, 0));
    sqlite3_finalize(st);
    return buf;
}

/* A v5 store as v5 made it (no pid_start, no boot_id) with one run of
 * this host left running by a process that is gone (pid 0x7ffffffe: above
 * any pid_max). */
static void make_v5(const char *path) {
    unlink(path);
    jn_db *db = NULL;
    if (jn_db_open(path, JN_DB_CREATE, &db) != JN_OK) return;
    jn_db_close(db);
    char host[256] = "", sql[1536];
    gethostname(host, sizeof host - 1);
    snprintf(sql, sizeof sql,
             JT_UNDO_V11 JT_UNDO_V10 JT_UNDO_V9 JT_UNDO_V8 JT_UNDO_V7 JT_UNDO_V6 "UPDATE meta SET value = '5' WHERE key = 'schema_version';"
             "INSERT INTO runs(id, hostname, pid, status) VALUES(1, '%s', 2147483646, 'running');", host);
    sqlite3 *h = NULL;
    if (sqlite3_open(path, &h) != SQLITE_OK || sqlite3_exec(h, sql, NULL, NULL, NULL) != SQLITE_OK)
        fprintf(stderr, "  make_v5: %s\n", h ? sqlite3_errmsg(h) : "?");
    sqlite3_close(h);
}

/* Runs whose owner is gone read as lost; the next writer marks them. */
static void test_lost(void) {
    const char *path = tmp("lost.db");
    jn_db *db = NULL;
    CHECK(jn_db_open(path, JN_DB_CREATE, &db) == JN_OK && jn_db_schema_version(db) == JN_DB_SCHEMA_VERSION);
    if (!db) return;
    char host[256] = "", boot[64] = "", b[32];
    gethostname(host, sizeof host - 1);
    FILE *f = fopen("/proc/sys/kernel/random/boot_id", "r");
    CHECK(f && fgets(boot, sizeof boot, f));
    if (f) fclose(f);
    boot[strcspn(boot, "\n")] = 0;
    /* a pid that names no process: above any pid_max (2^22); a real
     * process killed is test_cli.py's test_sigkilled_run_is_lost */
    const int64_t dead = 2147483646;

    /* run_begin stores this process's own identity */
    int64_t self = owned_run(db, host, getpid(), -1, NULL);
    jn_db_run_row *r = NULL;
    int nr = 0;
    CHECK(jn_db_runs(db, self, &r, &nr) == JN_OK && nr == 1 && r[0].pid_start > 0 && r[0].boot_id &&
          !strcmp(r[0].boot_id, boot) && !strcmp(r[0].status, "running"));
    jn_db_runs_free(r, nr);
    int64_t gone = owned_run(db, host, dead, 0, "");                 /* no such process */
    int64_t reused = owned_run(db, host, getpid(), 12345, NULL);     /* our pid, another start */
    int64_t reboot = owned_run(db, host, getpid(), -1, "00000000-0000-0000-0000-000000000000");
    int64_t other = owned_run(db, "another-host.example", dead, 0, ""); /* nothing to see here */
    int64_t ended = owned_run(db, host, dead, 0, "");
    CHECK(jn_db_run_end(db, ended, 0, "finished", 2.0) == JN_OK);
    CHECK(!strcmp(status_of(db, self, b, sizeof b), "running"));
    CHECK(!strcmp(status_of(db, gone, b, sizeof b), "lost"));
    CHECK(!strcmp(status_of(db, reused, b, sizeof b), "lost"));
    CHECK(!strcmp(status_of(db, reboot, b, sizeof b), "lost"));
    CHECK(!strcmp(status_of(db, other, b, sizeof b), "running"));
    CHECK(!strcmp(status_of(db, ended, b, sizeof b), "finished"));
    CHECK(!strcmp(stored_status(db, gone, b, sizeof b), "running")); /* reading changes nothing */

    /* the next writer marks exactly the lost ones, once */
    CHECK(jn_db_mark_lost(db, &r, &nr) == JN_OK && nr == 3);
    if (nr == 3) CHECK(r[0].id == gone && r[1].id == reused && r[2].id == reboot && r[0].pid == dead);
    jn_db_runs_free(r, nr);
    CHECK(!strcmp(stored_status(db, gone, b, sizeof b), "lost"));
    CHECK(!strcmp(stored_status(db, self, b, sizeof b), "running"));
    CHECK(!strcmp(stored_status(db, other, b, sizeof b), "running"));
    CHECK(jn_db_mark_lost(db, &r, &nr) == JN_OK && nr == 0 && r == NULL);
    jn_db_close(db);

    /* read-only: judged, never marked */
    CHECK(jn_db_open(path, JN_DB_READONLY, &db) == JN_OK);
    if (db) {
        CHECK(jn_db_mark_lost(db, &r, &nr) == JN_ERR_IO);
        jn_db_close(db);
    }

    /* a failure at any point of v5 -> v7 leaves v5 or a complete v7 */
    CHECK(jt_migrate_under_faults(tmp("v5f.db"), make_v5, 17, 5,
                                  "SELECT count(*) FROM pragma_table_info('runs') WHERE name IN ('pid_start','boot_id')",
                                  0, 2, 1) >= 2);
    make_v5(tmp("v5f.db"));
    CHECK(jn_db_open(tmp("v5f.db"), JN_DB_WRITE, &db) == JN_OK && jn_db_schema_version(db) == JN_DB_SCHEMA_VERSION);
    if (db) {
        CHECK(jn_db_mark_lost(db, &r, &nr) == JN_OK && nr == 1 && r && r[0].pid == 2147483646);
        jn_db_runs_free(r, nr);
        jn_db_close(db);
    }

    /* a v5 store (no pid_start, no boot_id) migrates, its runs judged by
     * pid: made as a current store taken back to v5's layout */
    const char *old = tmp("v5.db");
    CHECK(jn_db_open(old, JN_DB_CREATE, &db) == JN_OK);
    jn_db_close(db);
    sqlite3 *h = NULL;
    char sql[1536];
    CHECK(sqlite3_open(old, &h) == SQLITE_OK);
    snprintf(sql, sizeof sql,
             JT_UNDO_V11 JT_UNDO_V10 JT_UNDO_V9 JT_UNDO_V8 JT_UNDO_V7 JT_UNDO_V6 "UPDATE meta SET value = '5' WHERE key = 'schema_version';"
             "INSERT INTO runs(id, hostname, pid, status) VALUES(1, '%s', %d, 'running'), (2, '%s', %d, 'running');",
             host, (int)dead, host, (int)getpid());
    CHECK(sqlite3_exec(h, sql, NULL, NULL, NULL) == SQLITE_OK);
    sqlite3_close(h);
    CHECK(jn_db_open(old, JN_DB_READONLY, &db) == JN_OK && jn_db_schema_version(db) == 5); /* read as it is */
    if (db) {
        CHECK(!strcmp(status_of(db, 1, b, sizeof b), "lost") && !strcmp(status_of(db, 2, b, sizeof b), "running"));
        jn_db_close(db);
    }
    CHECK(jn_db_open(old, JN_DB_WRITE, &db) == JN_OK && jn_db_schema_version(db) == JN_DB_SCHEMA_VERSION);
    if (db) {
        CHECK(jn_db_mark_lost(db, &r, &nr) == JN_OK && nr == 1 && r && r[0].id == 1);
        jn_db_runs_free(r, nr);
        CHECK(jn_db_runs(db, 2, &r, &nr) == JN_OK && nr == 1 && r[0].pid_start == 0 && !r[0].boot_id);
        jn_db_runs_free(r, nr);
        jn_db_close(db);
    }
}

int main(void) {
    if (jt_tmp_begin("db_read")) return 1;
    const char *path = tmp("r.db");
    jn_db *db = make_store(path);
    CHECK(db != NULL);
    if (db) {
        test_runs(db);
        test_steps(db);
        test_summaries(db);
        test_snapshot(path, db);
        jn_db_close(db);
    }
    test_readonly(path);
    CHECK(jn_db_open(path, JN_DB_WRITE, &db) == JN_OK);
    if (db) {
        test_failures(path, db);
        jn_db_close(db);
    }
    test_paths();
    test_lost();
    jt_tmp_end();
    JT_DONE();
}
