/* test_bundle.c -- bundles (codegen/bundle.c) and their table in the trace
 * store (db/db.c, schema v2): build -> store -> open -> the IR prints as
 * before; atomic replacement per target (also under injected write
 * failures); every refusal with its message (corrupted, truncated or
 * tampered rows, payloads of another format, janus version, op table,
 * target, CPU features, unknown required sections, none stored); the
 * payload fuzzed (always an error, never a crash); the v1 -> v3 migration
 * and read-only use of a v1 store; jn_rt_cpu_features. */
#include <inttypes.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "jn_bundle.h"
#include "jn_db.h"
#include "jn_ir.h"
#include "jn_test.h"
#include "jn_test_db.h"

static int q_text_is(sqlite3 *h, const char *sql, const char *want) {
    sqlite3_stmt *st;
    int ok = 0;
    if (sqlite3_prepare_v2(h, sql, -1, &st, NULL) != SQLITE_OK) return 0;
    if (sqlite3_step(st) == SQLITE_ROW) {
        const char *t = (const char *)sqlite3_column_text(st, 0);
        ok = t && !strcmp(t, want);
        if (!ok) fprintf(stderr, "  %s: got \"%s\", want \"%s\"\n", sql, t ? t : "(null)", want);
    }
    sqlite3_finalize(st);
    return ok;
}

static int exec(jn_db *db, const char *sql) {
    char *err = NULL;
    int rc = sqlite3_exec(jn_db_testing_handle(db), sql, NULL, NULL, &err);
    if (rc != SQLITE_OK) fprintf(stderr, "  %s: %s\n", sql, err ? err : "?");
    sqlite3_free(err);
    return rc == SQLITE_OK;
}

/* A small training-step graph with a symbol, state update and guards. */
static jn_ir_module *make_module(void) {
    char text[2048];
    snprintf(text, sizeof text,
             "module optable=%016" PRIx64 " graphs=2\n"
             "site 1 \"train.py\":10 \"step\"\n"
             "graph g0 group=0 variant=0 parent=-1 diverge=0 support=3 steps=1..3 entry=\"start\" exit=\"end\" {\n"
             "  sym B dim 32..64 @1\n"
             "  in %%0 state f32[4, 3] bind=7 @1\n"
             "  in %%1 host f32[B, 4] @1\n"
             "  %%2 = mm(%%1, %%0) : f32[B, 3] @1\n"
             "  %%3 = relu(%%2) : f32[B, 3] @1\n"
             "  out %%3 keep\n"
             "  guard sym B in 32..64 seen @1 \"batch size\"\n"
             "}\n"
             "graph g1 group=1 variant=0 parent=-1 diverge=0 support=1 steps=4..4 entry=\"\" exit=\"\" {\n"
             "  in %%0 host f32[2] @1\n"
             "  %%1 = relu(%%0) : f32[2] @1\n"
             "  out %%1 keep\n"
             "}\n",
             jn_optable_hash());
    jn_ir_module *m = NULL;
    if (jn_ir_parse(text, strlen(text), &m) != JN_OK) fprintf(stderr, "  parse: %s\n", jn_errmsg());
    return m;
}

static char *print_str(const jn_ir_module *m) {
    char *buf = NULL;
    size_t n = 0;
    FILE *f = open_memstream(&buf, &n);
    if (!f) return NULL;
    jn_ir_print(m, f);
    fclose(f);
    return buf;
}

static jn_db *fresh_db(const char *name) {
    const char *p = tmp(name);
    unlink(p);
    jn_db *db = NULL;
    if (jn_db_open(p, JN_DB_CREATE, &db) != JN_OK) fprintf(stderr, "  open %s: %s\n", p, jn_errmsg());
    return db;
}

static const int64_t runs12[] = {1, 2};

static void test_cpu_features(void) {
    char buf[512], small[4];
    size_t n = jn_rt_cpu_features(buf, sizeof buf);
    CHECK(n < sizeof buf && strlen(buf) == n);
    CHECK(jn_rt_cpu_features(NULL, 0) == n);
    size_t k = jn_rt_cpu_features(small, sizeof small);
    CHECK(k == n && strlen(small) < sizeof small);
#if defined(__x86_64__)
    CHECK(strstr(buf, "sse4.2") != NULL); /* every x86-64 this runs on has it */
#endif
    CHECK(strstr(buf, "  ") == NULL && (n == 0 || (buf[0] != ' ' && buf[n - 1] != ' ')));
}

static void test_roundtrip(void) {
    jn_db *db = fresh_db("rt.db");
    jn_ir_module *m = make_module();
    if (!db || !m) {
        CHECK(0);
        return;
    }
    const uint8_t so[] = {0x7f, 'E', 'L', 'F', 1, 2, 3};
    const char plan[] = "plan bytes";
    jn_cg_bundle_section secs[] = {
        {JN_CG_SEC_SO, 0, "cpu", so, sizeof so},
        {JN_CG_SEC_MEMPLAN, 0, "", plan, sizeof plan},
        {99, JN_CG_SEC_OPTIONAL, "future", "xyz", 3}, /* a later part's section: skipped */
    };
    jn_cg_bundle_meta meta = {.source_runs = runs12, .nsource_runs = 2, .source_steps = 40};
    int64_t id = 0;
    CHECK(jn_cg_bundle_store(db, m, &meta, secs, 3, &id) == JN_OK && id > 0);

    jn_cg_bundle *b = NULL;
    jn_status s = jn_cg_bundle_open(db, NULL, &b);
    CHECK(s == JN_OK && b && b->module);
    if (s) fprintf(stderr, "  open: %s\n", jn_errmsg());
    if (b && b->module) {
        char *t1 = print_str(m), *t2 = print_str(b->module);
        CHECK(t1 && t2 && !strcmp(t1, t2));
        free(t1);
        free(t2);
        CHECK(b->ngraphs == 2 && !strcmp(b->source_runs, "[1,2]") && b->source_steps == 40);
        CHECK(!strcmp(b->target, "cpu") && !strcmp(b->janus_version, JANUS_VERSION));
        CHECK(b->optable_hash == jn_optable_hash() && b->nsections == 4);
        char feat[512];
        jn_rt_cpu_features(feat, sizeof feat);
        CHECK(!strcmp(b->cpu_features, feat)); /* default: this machine's */
        const jn_cg_bundle_section *x = jn_cg_bundle_section_find(b, JN_CG_SEC_SO);
        CHECK(x && x->len == sizeof so && !memcmp(x->data, so, sizeof so) && !strcmp(x->name, "cpu"));
        x = jn_cg_bundle_section_find(b, JN_CG_SEC_MEMPLAN);
        CHECK(x && x->len == sizeof plan && !memcmp(x->data, plan, sizeof plan));
        CHECK(jn_cg_bundle_section_find(b, JN_CG_SEC_MATCHER) == NULL);
    }
    jn_cg_bundle_free(b);

    /* the row as SQL and inspect see it */
    sqlite3 *h = jn_db_testing_handle(db);
    CHECK(q_int(h, "SELECT count(*) FROM bundles") == 1);
    CHECK(q_text_is(h, "SELECT codec || ' ' || target || ' ' || source_runs || ' ' || source_steps || ' ' || format "
                       "FROM bundles", "zstd cpu [1,2] 40 1"));
    CHECK(q_int(h, "SELECT length(checksum) FROM bundles") == 16);
    CHECK(q_int(h, "SELECT raw_bytes > length(data) FROM bundles") == 1); /* compressed */
    char want[32];
    snprintf(want, sizeof want, "%016" PRIx64, jn_optable_hash());
    CHECK(q_text_is(h, "SELECT optable_hash FROM bundles", want));

    jn_db_bundle row;
    CHECK(jn_db_bundle_get(db, "cpu", &row) == JN_OK && row.id == id && row.data && row.len > 0);
    jn_cg_bundle *p = NULL;
    CHECK(jn_cg_bundle_peek(row.data, row.len, &p) == JN_OK && p && p->ngraphs == 2 && !p->module);
    jn_cg_bundle_free(p);
    /* load with expectations spelled out equals the defaults */
    jn_cg_bundle_expect e = {JANUS_VERSION, jn_optable_hash(), "cpu", NULL, "here", "x.db"};
    CHECK(jn_cg_bundle_load(row.data, row.len, &e, &b) == JN_OK && b);
    jn_cg_bundle_free(b);
    jn_db_bundle_free(&row);
    jn_db_bundle *list = NULL;
    int n = -1;
    CHECK(jn_db_bundle_list(db, &list, &n) == JN_OK && n == 1 && list && list[0].id == id && !list[0].data &&
          list[0].len > 0 && list[0].stored_bytes > 0 && list[0].created > 1.6e9);
    jn_db_bundle_list_free(list, n);

    int64_t *ids = (void *)1;
    int nids = -1;
    CHECK(jn_db_run_ids(db, &ids, &nids) == JN_OK && nids == 0 && !ids);

    /* bad arguments */
    void *pl;
    size_t len;
    CHECK(jn_cg_bundle_build(NULL, NULL, NULL, 0, &pl, &len) == JN_ERR_VALUE);
    CHECK(jn_cg_bundle_build(m, NULL, secs, -1, &pl, &len) == JN_ERR_VALUE);
    jn_cg_bundle_section irsec = {JN_CG_SEC_IR, 0, "", "x", 1};
    CHECK(jn_cg_bundle_build(m, NULL, &irsec, 1, &pl, &len) == JN_ERR_VALUE && has("IR section"));
    jn_db_bundle bad = {0};
    CHECK(jn_db_bundle_put(db, &bad, NULL) == JN_ERR_VALUE && has("needs a target"));
    jn_ir_module_free(m);
    jn_db_close(db);
}

static void test_replace(void) {
    jn_db *db = fresh_db("replace.db");
    jn_ir_module *m = make_module();
    if (!db || !m) {
        CHECK(0);
        return;
    }
    sqlite3 *h = jn_db_testing_handle(db);
    int64_t id1 = 0, id2 = 0, id3 = 0;
    jn_cg_bundle_meta meta = {.source_runs = runs12, .nsource_runs = 1, .source_steps = 5};
    CHECK(jn_cg_bundle_store(db, m, &meta, NULL, 0, &id1) == JN_OK);
    meta.source_steps = 6;
    CHECK(jn_cg_bundle_store(db, m, &meta, NULL, 0, &id2) == JN_OK && id2 > id1); /* ids never reused */
    CHECK(q_int(h, "SELECT count(*) FROM bundles") == 1);
    CHECK(q_int(h, "SELECT id FROM bundles") == id2);
    /* another target lives beside it */
    jn_cg_bundle_meta other = {.target = "cpu-test", .source_steps = 9};
    CHECK(jn_cg_bundle_store(db, m, &other, NULL, 0, &id3) == JN_OK);
    CHECK(q_int(h, "SELECT count(*) FROM bundles") == 2);
    jn_db_bundle *list = NULL;
    int n = 0;
    CHECK(jn_db_bundle_list(db, &list, &n) == JN_OK && n == 2 && list[0].id == id2 && list[1].id == id3 &&
          !strcmp(list[1].target, "cpu-test"));
    jn_db_bundle_list_free(list, n);
    /* two rows of one target (only SQL can make that): get takes the newest */
    CHECK(exec(db, "INSERT INTO bundles(created, target, optable_hash, janus_version, cpu_features, source_runs, "
                   "source_steps, format, codec, raw_bytes, checksum, data) SELECT created, target, optable_hash, "
                   "janus_version, cpu_features, source_runs, 10, format, codec, raw_bytes, checksum, data "
                   "FROM bundles WHERE target = 'cpu-test'"));
    jn_db_bundle row;
    CHECK(jn_db_bundle_get(db, "cpu-test", &row) == JN_OK && row.id > id3 && row.source_steps == 10);
    jn_db_bundle_free(&row);
    CHECK(jn_db_bundle_get_id(db, id3, &row) == JN_OK && row.id == id3 && row.source_steps == 9);
    jn_db_bundle_free(&row);
    CHECK(jn_cg_bundle_store(db, m, &other, NULL, 0, &id3) == JN_OK); /* and put clears both */
    CHECK(q_int(h, "SELECT count(*) FROM bundles WHERE target = 'cpu-test'") == 1);

    /* a failing put at any of its writes leaves the old bundle, whole */
    int failed = 0, intact = 1;
    for (int k = 1; k <= 6; k++) {
        meta.source_steps = 100 + k;
        jn_db_inject_fault(k);
        int64_t nid = 0;
        jn_status s = jn_cg_bundle_store(db, m, &meta, NULL, 0, &nid);
        jn_db_inject_fault(0);
        if (s == JN_OK) break; /* k is past the last write */
        failed++;
        if (s != JN_ERR_IO || !strstr(jn_errmsg(), "injected") || !strstr(jn_errmsg(), "bundle")) intact = 0;
        if (q_int(h, "SELECT count(*) FROM bundles WHERE target='cpu'") != 1 ||
            q_int(h, "SELECT id FROM bundles WHERE target='cpu'") != id2 ||
            q_int(h, "SELECT source_steps FROM bundles WHERE target='cpu'") != 6)
            intact = 0;
        jn_cg_bundle *b = NULL;
        if (jn_cg_bundle_open(db, NULL, &b) != JN_OK || b->source_steps != 6) intact = 0;
        jn_cg_bundle_free(b);
    }
    CHECK(failed >= 3); /* BEGIN, DELETE, INSERT, COMMIT */
    CHECK(intact);
    CHECK(q_int(h, "SELECT count(*) FROM bundles") == 2);

    /* a reader's transaction sees the old set until it ends, then the new */
    jn_db *r = NULL;
    CHECK(jn_db_open(tmp("replace.db"), JN_DB_READONLY, &r) == JN_OK);
    if (r) {
        sqlite3 *rh = jn_db_testing_handle(r);
        CHECK(exec(r, "BEGIN") && q_int(rh, "SELECT max(id) FROM bundles WHERE target='cpu'") > 0);
        int64_t before = q_int(rh, "SELECT id FROM bundles WHERE target='cpu'");
        int64_t id4 = 0;
        CHECK(jn_cg_bundle_store(db, m, &meta, NULL, 0, &id4) == JN_OK);
        CHECK(q_int(rh, "SELECT id FROM bundles WHERE target='cpu'") == before);
        CHECK(q_int(rh, "SELECT count(*) FROM bundles WHERE target='cpu'") == 1);
        CHECK(exec(r, "COMMIT"));
        CHECK(q_int(rh, "SELECT id FROM bundles WHERE target='cpu'") == id4);
        jn_db_bundle row;
        CHECK(jn_db_bundle_put(r, &(jn_db_bundle){.target = "x", .optable_hash = "0", .janus_version = "0"},
                               NULL) == JN_ERR_IO && has("read-only"));
        CHECK(jn_db_bundle_get(r, "cpu", &row) == JN_OK && row.id == id4);
        jn_db_bundle_free(&row);
        jn_db_close(r);
    }
    jn_ir_module_free(m);
    jn_db_close(db);
}

/* Replace the stored blob of bundle `id` with f(blob). */
static void set_blob(jn_db *db, int64_t id, const void *data, int len) {
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(jn_db_testing_handle(db), "UPDATE bundles SET data = ?1 WHERE id = ?2", -1, &st, NULL)) return;
    sqlite3_bind_blob(st, 1, data, len, SQLITE_TRANSIENT);
    sqlite3_bind_int64(st, 2, id);
    if (sqlite3_step(st) != SQLITE_DONE) fprintf(stderr, "  set_blob failed\n");
    sqlite3_finalize(st);
}

static int get_blob(jn_db *db, int64_t id, uint8_t **out) {
    sqlite3_stmt *st;
    int n = -1;
    *out = NULL;
    if (sqlite3_prepare_v2(jn_db_testing_handle(db), "SELECT data FROM bundles WHERE id = ?1", -1, &st, NULL)) return -1;
    sqlite3_bind_int64(st, 1, id);
    if (sqlite3_step(st) == SQLITE_ROW) {
        n = sqlite3_column_bytes(st, 0);
        *out = malloc((size_t)n);
        memcpy(*out, sqlite3_column_blob(st, 0), (size_t)n);
    }
    sqlite3_finalize(st);
    return n;
}

static void test_store_refusals(void) {
    jn_db *db = fresh_db("refuse.db");
    jn_ir_module *m = make_module();
    if (!db || !m) {
        CHECK(0);
        return;
    }
    jn_cg_bundle *b = NULL;
    jn_db_bundle row;
    CHECK(jn_cg_bundle_open(db, NULL, &b) == JN_ERR_VALUE && !b && has("no bundle for target cpu") &&
          has("janus optimize") && has("refuse.db"));
    CHECK(jn_db_bundle_get(db, "cuda", &row) == JN_ERR_VALUE && has("no bundle for target cuda"));
    CHECK(jn_db_bundle_get_id(db, 77, &row) == JN_ERR_VALUE && has("no bundle 77"));

    int64_t id = 0;
    CHECK(jn_cg_bundle_store(db, m, NULL, NULL, 0, &id) == JN_OK);
    char idstr[32];
    snprintf(idstr, sizeof idstr, "bundle %" PRId64, id);
    uint8_t *orig = NULL;
    int olen = get_blob(db, id, &orig);
    CHECK(olen > 20);

    /* the payload as stored, to tell harmless flips from accepted damage */
    void *payload0 = NULL;
    size_t len0 = 0;
    CHECK(jn_cg_bundle_open(db, NULL, &b) == JN_OK && b);
    if (b) {
        len0 = b->len;
        payload0 = malloc(len0);
        memcpy(payload0, b->payload, len0);
    }
    jn_cg_bundle_free(b);
    b = NULL;
    /* flipped bytes anywhere in the stored (zstd-compressed) blob: refused,
     * unless the flip hit bits the decoder ignores and the payload came out
     * identical (which depends on how this machine's payload compressed) */
    int all_refused = 1;
    for (int pos = 0; pos < olen && orig; pos += (olen / 23) + 1) {
        uint8_t *c = malloc((size_t)olen);
        memcpy(c, orig, (size_t)olen);
        c[pos] ^= 0x5a;
        set_blob(db, id, c, olen);
        free(c);
        jn_status s = jn_cg_bundle_open(db, NULL, &b);
        if (s == JN_OK && b && payload0 && b->len == len0 && !memcmp(b->payload, payload0, len0)) {
            fprintf(stderr, "  flip at %d: the payload decodes unchanged (bits zstd ignores)\n", pos);
        } else if (s != JN_ERR_VALUE || b || !strstr(jn_errmsg(), "corrupt") || !strstr(jn_errmsg(), idstr) ||
            !strstr(jn_errmsg(), "refuse.db")) {
            fprintf(stderr, "  flip at %d: %s\n", pos, s ? jn_errmsg() : "accepted");
            all_refused = 0;
        }
        jn_cg_bundle_free(b);
        b = NULL;
    }
    CHECK(all_refused);
    free(payload0);
    /* truncated */
    set_blob(db, id, orig, olen / 2);
    CHECK(jn_cg_bundle_open(db, NULL, &b) == JN_ERR_VALUE && has("corrupt or truncated") && has(idstr) &&
          has("janus optimize"));
    set_blob(db, id, orig, 0);
    CHECK(jn_db_bundle_get(db, "cpu", &row) == JN_ERR_VALUE && has("truncated"));
    set_blob(db, id, orig, olen);
    CHECK(jn_cg_bundle_open(db, NULL, &b) == JN_OK && b);
    jn_cg_bundle_free(b);
    b = NULL;
    /* tampered columns */
    CHECK(exec(db, "UPDATE bundles SET raw_bytes = raw_bytes + 1"));
    CHECK(jn_cg_bundle_open(db, NULL, &b) == JN_ERR_VALUE && has("corrupt") && has(idstr));
    CHECK(exec(db, "UPDATE bundles SET raw_bytes = raw_bytes - 1, checksum = '0123456789abcdef'"));
    CHECK(jn_cg_bundle_open(db, NULL, &b) == JN_ERR_VALUE && has("checksum") && has(idstr));
    CHECK(sqlite3_exec(jn_db_testing_handle(db), "UPDATE bundles SET checksum = NULL", 0, 0, 0) != SQLITE_OK); /* NOT NULL */
    CHECK(exec(db, "UPDATE bundles SET codec = 'lz4'"));
    CHECK(jn_db_bundle_get(db, "cpu", &row) == JN_ERR_VALUE && has("unknown codec 'lz4'"));
    jn_ir_module_free(m);
    m = make_module();
    CHECK(jn_cg_bundle_store(db, m, NULL, NULL, 0, &id) == JN_OK);
    snprintf(idstr, sizeof idstr, "bundle %" PRId64, id);
    CHECK(exec(db, "UPDATE bundles SET format = 7"));
    CHECK(jn_cg_bundle_open(db, NULL, &b) == JN_ERR_VALUE && has("does not match its payload") && has(idstr));
    CHECK(exec(db, "UPDATE bundles SET format = 1, janus_version = '9.9'"));
    CHECK(jn_cg_bundle_open(db, NULL, &b) == JN_ERR_VALUE && has("does not match"));

    /* a bundle built elsewhere: the loader's messages through the store */
    jn_cg_bundle_meta foreign = {.cpu_features = "sse4.2 avx1024"};
    CHECK(jn_cg_bundle_store(db, m, &foreign, NULL, 0, &id) == JN_OK);
    CHECK(jn_cg_bundle_open(db, NULL, &b) == JN_ERR_VALUE &&
          has("was built for CPU features avx1024 that this machine lacks; re-run `janus optimize") &&
          has("refuse.db` here"));
    free(orig);
    jn_ir_module_free(m);
    jn_db_close(db);
}

static void test_payload_refusals(void) {
    jn_ir_module *m = make_module();
    if (!m) {
        CHECK(0);
        return;
    }
    void *pl = NULL;
    size_t len = 0;
    jn_cg_bundle *b = NULL;
    CHECK(jn_cg_bundle_build(m, NULL, NULL, 0, &pl, &len) == JN_OK && len > 24);
    uint8_t *p = pl;
    jn_cg_bundle_expect e = {.origin = "bundle X", .db_path = "run.db"};
    CHECK(jn_cg_bundle_load(p, len, &e, &b) == JN_OK && b);
    jn_cg_bundle_free(b);

    /* truncated, at every length */
    int ok = 1;
    for (size_t n = 0; n < len; n++) {
        jn_status s = jn_cg_bundle_load(p, n, &e, &b);
        if (s != JN_ERR_VALUE || b || !strstr(jn_errmsg(), n >= 4 ? "truncated" : "") ||
            !strstr(jn_errmsg(), "bundle X") || !strstr(jn_errmsg(), "janus optimize run.db")) {
            fprintf(stderr, "  truncated to %zu: %s\n", n, s ? jn_errmsg() : "accepted");
            ok = 0;
        }
    }
    CHECK(ok);
    CHECK(jn_cg_bundle_load(p, len - 10, &e, &b) == JN_ERR_VALUE && has("truncated (") && has(" of "));
    /* every single-byte flip */
    ok = 1;
    for (size_t i = 0; i < len; i++) {
        p[i] ^= 0x01;
        jn_status s = jn_cg_bundle_load(p, len, &e, &b);
        if (s != JN_ERR_VALUE || b) {
            fprintf(stderr, "  flip at %zu: %s\n", i, s ? jn_errmsg() : "accepted");
            ok = 0;
        }
        jn_cg_bundle_free(b);
        b = NULL;
        p[i] ^= 0x01;
    }
    CHECK(ok);
    p[30] ^= 0xff;
    CHECK(jn_cg_bundle_load(p, len, &e, &b) == JN_ERR_VALUE && has("bundle X is corrupt (checksum"));
    p[30] ^= 0xff;
    p[0] = 'X';
    CHECK(jn_cg_bundle_load(p, len, &e, &b) == JN_ERR_VALUE && has("not a janus bundle"));
    p[0] = 'J';
    p[4] = 7;
    CHECK(jn_cg_bundle_load(p, len, &e, &b) == JN_ERR_VALUE && has("payload format 7") && has("reads format 1"));
    p[4] = 1;
    /* trailing garbage */
    uint8_t *longer = malloc(len + 3);
    memcpy(longer, p, len);
    memset(longer + len, 0, 3);
    CHECK(jn_cg_bundle_load(longer, len + 3, &e, &b) == JN_ERR_VALUE && has("corrupt"));
    free(longer);
    CHECK(jn_cg_bundle_load(p, len, &e, &b) == JN_OK);
    jn_cg_bundle_free(b);

    /* mutants whose checksum is fixed up: the header reader's own bounds
     * checks (never a crash; an error, or a bundle whose module verifies) */
    srand(7);
    int accepted = 0, bad = 0;
    for (int k = 0; k < 3000; k++) {
        uint8_t *c = malloc(len);
        memcpy(c, p, len);
        int flips = 1 + rand() % 3;
        for (int f = 0; f < flips; f++) {
            size_t at = 24 + (size_t)rand() % (len - 24);
            /* aim at the header and table half the time: that is where the lengths are */
            if (k % 2) at = 24 + (size_t)rand() % (len / 3 > 24 ? len / 3 - 24 : 1);
            c[at] = (uint8_t)(k % 5 == 0 ? 0xff : rand());
        }
        uint64_t sum = jn_db_fnv1a64(c + 24, len - 24);
        for (int i = 0; i < 8; i++) c[16 + i] = (uint8_t)(sum >> (8 * i));
        jn_status s = jn_cg_bundle_load(c, len, &e, &b);
        if (s == JN_OK) {
            accepted++;
            if (!b || !b->module || jn_ir_verify_module(b->module) != JN_OK) bad++;
        } else if (s != JN_ERR_VALUE || b) {
            bad++;
        }
        jn_cg_bundle_free(b);
        b = NULL;
        free(c);
    }
    printf("payload fuzz: %d of 3000 checksum-fixed mutants accepted (and verified)\n", accepted);
    CHECK(bad == 0);

    /* this janus expects something else */
    jn_cg_bundle_expect e2 = e;
    e2.optable_hash = 0x1234;
    CHECK(jn_cg_bundle_load(p, len, &e2, &b) == JN_ERR_VALUE && !b &&
          has("was built by janus " JANUS_VERSION " with another op table (hash ") && has("re-run `janus optimize run.db`"));
    e2 = e;
    e2.janus_version = "9.9.9";
    CHECK(jn_cg_bundle_load(p, len, &e2, &b) == JN_ERR_VALUE && has("built by janus " JANUS_VERSION) &&
          has("this is janus 9.9.9"));
    e2 = e;
    e2.target = "cuda-sm90";
    CHECK(jn_cg_bundle_load(p, len, &e2, &b) == JN_ERR_VALUE && has("built for target cpu, not cuda-sm90"));
    e2 = e;
    e2.cpu_features = "sse4.2"; /* a weaker machine */
    char feat[512];
    jn_rt_cpu_features(feat, sizeof feat);
    if (strcmp(feat, "sse4.2") && strlen(feat) > 6)
        CHECK(jn_cg_bundle_load(p, len, &e2, &b) == JN_ERR_VALUE && has("that this machine lacks"));
    free(pl);

    /* built by another janus / op table / for another machine */
    jn_cg_bundle_meta meta = {.janus_version = "0.0.9"};
    CHECK(jn_cg_bundle_build(m, &meta, NULL, 0, &pl, &len) == JN_OK);
    CHECK(jn_cg_bundle_load(pl, len, &e, &b) == JN_ERR_VALUE && has("bundle X was built by janus 0.0.9, but this is "
                                                                    "janus " JANUS_VERSION "; re-run `janus optimize run.db`"));
    free(pl);
    uint64_t keep = m->optable_hash;
    m->optable_hash = 0xabcdefULL;
    CHECK(jn_cg_bundle_build(m, NULL, NULL, 0, &pl, &len) == JN_OK);
    m->optable_hash = keep;
    CHECK(jn_cg_bundle_load(pl, len, &e, &b) == JN_ERR_VALUE && has("with another op table (hash 0000000000abcdef"));
    free(pl);
    meta = (jn_cg_bundle_meta){.cpu_features = "avx2 avx1024 avx512zz"};
    CHECK(jn_cg_bundle_build(m, &meta, NULL, 0, &pl, &len) == JN_OK);
    CHECK(jn_cg_bundle_load(pl, len, &e, &b) == JN_ERR_VALUE &&
          has("built for CPU features avx1024 avx512zz that this machine lacks; re-run `janus optimize run.db` here"));
    e2 = e;
    e2.cpu_features = "avx2 avx1024 avx512zz sse";
    CHECK(jn_cg_bundle_load(pl, len, &e2, &b) == JN_OK && b);
    jn_cg_bundle_free(b);
    free(pl);
    meta = (jn_cg_bundle_meta){.target = "cuda-sm90"};
    CHECK(jn_cg_bundle_build(m, &meta, NULL, 0, &pl, &len) == JN_OK);
    CHECK(jn_cg_bundle_load(pl, len, &e, &b) == JN_ERR_VALUE && has("built for target cuda-sm90, not cpu"));
    CHECK(jn_cg_bundle_peek(pl, len, &b) == JN_OK && b && !strcmp(b->target, "cuda-sm90")); /* inspect sees it */
    jn_cg_bundle_free(b);
    free(pl);
    /* a section of a kind this janus does not know, not optional */
    jn_cg_bundle_section fut = {42, 0, "later", "abc", 3};
    CHECK(jn_cg_bundle_build(m, NULL, &fut, 1, &pl, &len) == JN_OK);
    CHECK(jn_cg_bundle_load(pl, len, &e, &b) == JN_ERR_VALUE && has("section of kind 42") && has("newer janus"));
    free(pl);
    fut.flags = JN_CG_SEC_OPTIONAL;
    CHECK(jn_cg_bundle_build(m, NULL, &fut, 1, &pl, &len) == JN_OK);
    CHECK(jn_cg_bundle_load(pl, len, &e, &b) == JN_OK && b && b->nsections == 2);
    jn_cg_bundle_free(b);
    free(pl);
    jn_ir_module_free(m);
}

/* A v1 store, exactly as the v1 schema made it: v3 minus bundles, the
 * replay tables and the runs columns kind and bundle_id. */
static void make_v1(const char *path) {
    unlink(path);
    jn_db *db = NULL;
    if (jn_db_open(path, JN_DB_CREATE, &db) != JN_OK) return;
    jn_db_run_info ri = {.argv_json = "[\"train.py\"]", .cwd = "/", .optable_hash = "00", .device = "cpu"};
    int64_t run;
    if (jn_db_run_begin(db, &ri, &run) != JN_OK) fprintf(stderr, "  run_begin: %s\n", jn_errmsg());
    exec(db, JT_UNDO_V11 JT_UNDO_V10 JT_UNDO_V9 JT_UNDO_V8 JT_UNDO_V6 "DROP TABLE bundles; DROP TABLE replay_misses; DROP TABLE replay_graphs; "
             "ALTER TABLE runs DROP COLUMN bundle_id; ALTER TABLE runs DROP COLUMN kind; "
             "ALTER TABLE runs DROP COLUMN pid_start; ALTER TABLE runs DROP COLUMN boot_id; "
             "UPDATE meta SET value = '1' WHERE key = 'schema_version'");
    jn_db_close(db);
}

static void test_migration(void) {
    const char *path = tmp("v1.db");
    make_v1(path);
    jn_db *db = NULL;
    /* read-only: used as it is, no bundles */
    CHECK(jn_db_open(path, JN_DB_READONLY, &db) == JN_OK && db && jn_db_schema_version(db) == 1);
    if (db) {
        jn_db_bundle *list = (void *)1;
        int n = -1;
        CHECK(jn_db_bundle_list(db, &list, &n) == JN_OK && n == 0 && !list);
        jn_db_bundle row;
        CHECK(jn_db_bundle_get(db, "cpu", &row) == JN_ERR_VALUE && has("no bundle for target cpu"));
        CHECK(q_int(jn_db_testing_handle(db), "SELECT count(*) FROM runs") == 1);
        jn_db_close(db);
    }
    /* a failure at any point leaves v1 or a complete migration */
    CHECK(jt_migrate_under_faults(path, make_v1, 18, 1, "SELECT count(*) FROM sqlite_master WHERE name='bundles'", 0,
                                  1, 1) >= 3);
    make_v1(path);
    CHECK(jn_db_open(path, JN_DB_WRITE, &db) == JN_OK && db && jn_db_schema_version(db) == JN_DB_SCHEMA_VERSION);
    if (!db) return;
    sqlite3 *h = jn_db_testing_handle(db);
    CHECK(q_int(h, "SELECT value FROM meta WHERE key='schema_version'") == JN_DB_SCHEMA_VERSION);
    CHECK(q_int(h, "SELECT count(*) FROM runs") == 1); /* kept */
    int64_t *ids = NULL;
    int nids = 0;
    CHECK(jn_db_run_ids(db, &ids, &nids) == JN_OK && nids == 1 && ids && ids[0] == 1);
    free(ids);
    CHECK(q_int(h, "SELECT count(*) FROM bundles") == 0);
    jn_ir_module *m = make_module();
    int64_t id;
    CHECK(m && jn_cg_bundle_store(db, m, NULL, NULL, 0, &id) == JN_OK);
    jn_cg_bundle *b = NULL;
    CHECK(jn_cg_bundle_open(db, NULL, &b) == JN_OK && b && b->module && b->module->ngraphs == 2);
    jn_cg_bundle_free(b);
    jn_ir_module_free(m);
    jn_db_close(db);
}

/* `test_bundle --fixture PATH`: a store with a usable bundle for target
 * cpu and one for target cpu-old that needs a CPU feature no machine has,
 * for tests/python/test_bundle_cli.py (janus inspect). */
static int fixture(const char *path) {
    unlink(path);
    jn_db *db = NULL;
    jn_ir_module *m = make_module();
    int64_t runs[] = {1};
    jn_cg_bundle_meta a = {.source_runs = runs, .nsource_runs = 1, .source_steps = 3};
    jn_cg_bundle_meta b = {.target = "cpu-old", .cpu_features = "avx1024", .source_steps = 1};
    int ok = m && jn_db_open(path, JN_DB_CREATE, &db) == JN_OK && jn_cg_bundle_store(db, m, &a, NULL, 0, NULL) == JN_OK &&
             jn_cg_bundle_store(db, m, &b, NULL, 0, NULL) == JN_OK;
    if (!ok) fprintf(stderr, "fixture: %s\n", jn_errmsg());
    jn_db_close(db);
    jn_ir_module_free(m);
    return ok ? 0 : 1;
}

/* `test_bundle --store-ir DB IRFILE`: what `janus optimize` will do with
 * its module -- store the IR blob (janus optimize --ir-out) of DB's runs as
 * DB's cpu bundle, open it back and print "bundle <id>: <n> graphs". */
static int store_ir(const char *path, const char *irfile) {
    FILE *f = fopen(irfile, "rb");
    if (!f) {
        perror(irfile);
        return 1;
    }
    char *buf = NULL;
    size_t len = 0, cap = 0, got;
    do {
        if (len == cap) buf = realloc(buf, cap = cap ? 2 * cap : 65536);
        got = fread(buf + len, 1, cap - len, f);
        len += got;
    } while (got > 0);
    fclose(f);
    jn_ir_module *m = NULL;
    jn_db *db = NULL;
    int64_t *runs = NULL, id = 0;
    int nruns = 0, rc = 1;
    jn_cg_bundle *b = NULL;
    if (jn_ir_deserialize(buf, len, &m) == JN_OK && jn_db_open(path, JN_DB_WRITE, &db) == JN_OK &&
        jn_db_run_ids(db, &runs, &nruns) == JN_OK) {
        jn_cg_bundle_meta meta = {.source_runs = runs, .nsource_runs = nruns,
                                  .source_steps = q_int(jn_db_testing_handle(db), "SELECT count(*) FROM steps")};
        if (jn_cg_bundle_store(db, m, &meta, NULL, 0, &id) == JN_OK && jn_cg_bundle_open(db, NULL, &b) == JN_OK) {
            printf("bundle %" PRId64 ": %d graphs\n", id, b->module->ngraphs);
            rc = 0;
        }
    }
    if (rc) fprintf(stderr, "store-ir: %s\n", jn_errmsg());
    jn_cg_bundle_free(b);
    free(runs);
    jn_db_close(db);
    jn_ir_module_free(m);
    free(buf);
    return rc;
}

int main(int argc, char **argv) {
    if (argc == 3 && !strcmp(argv[1], "--fixture")) return fixture(argv[2]);
    if (argc == 4 && !strcmp(argv[1], "--store-ir")) return store_ir(argv[2], argv[3]);
    if (jt_tmp_begin("bundle")) return 1;
    test_cpu_features();
    test_roundtrip();
    test_replace();
    test_store_refusals();
    test_payload_refusals();
    test_migration();
    jt_tmp_end();
    JT_DONE();
}
