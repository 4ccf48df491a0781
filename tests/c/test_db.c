/* test_db.c -- tests of the trace store (db/): creating and reopening a
 * store, runs, interning, steps with summaries checked through SQL, the
 * event codec (random round trips and a decoder fuzz), refusal of foreign,
 * non-janus and newer files, migration of an old store, unwritable paths,
 * fault injection in the middle of a write, two processes writing one file,
 * and the cost of one write_step. */
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "jn_db.h"
#include "jn_test.h"
#include "jn_test_db.h"

/* First column of the first row of `sql` as an integer (-999 on error). */
static int q_text_is(sqlite3 *h, const char *sql, const char *want) {
    sqlite3_stmt *st;
    int ok = 0;
    if (sqlite3_prepare_v2(h, sql, -1, &st, NULL) != SQLITE_OK) return 0;
    if (sqlite3_step(st) == SQLITE_ROW) {
        const char *v = (const char *)sqlite3_column_text(st, 0);
        ok = v && strcmp(v, want) == 0;
        if (!ok) fprintf(stderr, "  %s gave \"%s\", want \"%s\"\n", sql, v ? v : "NULL", want);
    }
    sqlite3_finalize(st);
    return ok;
}

/* A raw SQLite handle on a file, for setting up and checking fixtures. */
static sqlite3 *raw(const char *path) {
    sqlite3 *h = NULL;
    if (sqlite3_open(path, &h) != SQLITE_OK) fprintf(stderr, "  cannot open %s\n", path);
    return h;
}

static void write_file(const char *path, const char *text) {
    FILE *f = fopen(path, "w");
    if (f) {
        fputs(text, f);
        fclose(f);
    }
}

/* ------------------------------------------------------- random events */
static uint64_t rng = 88172645463325252ull;
static uint64_t rnd(void) {
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return rng;
}
static int64_t rnd_i64(void) {
    switch (rnd() % 4) {
    case 0: return (int64_t)(rnd() % 10);
    case 1: return -(int64_t)(rnd() % 1000);
    case 2: return (int64_t)rnd(); /* full range, incl. negatives */
    default: return (int64_t)(rnd() % 100000);
    }
}

static void rnd_tref(jn_db_tref *t) {
    memset(t, 0, sizeof *t);
    t->id = rnd_i64();
    t->version = rnd() % 3 ? rnd() % 100 : rnd();
    t->dtype = (uint8_t)(rnd() % 8);
    t->ndim = (uint8_t)(rnd() % (JN_MAX_DIMS + 1));
    t->device = (uint8_t)(rnd() % 2);
    t->role = (uint8_t)(rnd() % (JN_TR_DATAIDX + 1));
    t->pytype = (uint8_t)(rnd() % 4);
    for (int d = 0; d < t->ndim; d++) t->shape[d] = (int64_t)(rnd() % 7);
    if (rnd() % 2) {
        int64_t s = 1;
        for (int d = t->ndim - 1; d >= 0; d--) {
            t->strides[d] = s;
            s *= t->shape[d] > 1 ? t->shape[d] : 1;
        }
    } else {
        for (int d = 0; d < t->ndim; d++) t->strides[d] = rnd_i64();
    }
    t->offset = rnd() % 2 ? 0 : rnd_i64();
    if (t->role == JN_TR_SCALAR) t->scalar = (double)rnd_i64() / 7.0;
}

static jn_db_tref tref_pool[2][300];
static int64_t live_pool[2][600];

static void rnd_event(jn_db_event *ev, int slot) {
    memset(ev, 0, sizeof *ev);
    ev->kind = (uint8_t)(1 + rnd() % 4);
    ev->callsite = rnd_i64();
    ev->stack = rnd_i64();
    if (ev->kind == JN_EV_OP) {
        ev->op = (uint32_t)(rnd() % 3 ? rnd() % 200 : rnd() % 0xffffffffu);
        ev->inplace = (uint8_t)(rnd() % 2);
        ev->nattrs = (uint8_t)(rnd() % (JN_MAX_ATTRS + 1));
        static const char kinds[] = {JN_A_INT, JN_A_FLOAT, JN_A_BOOL, JN_A_INTS, JN_A_DTYPE};
        for (int k = 0; k < ev->nattrs; k++) {
            char c = kinds[rnd() % 5];
            ev->attr_kind[k] = c;
            jn_attr *a = &ev->attrs.a[k];
            if (c == JN_A_FLOAT) a->f = (double)rnd_i64() / 3.0;
            else if (c == JN_A_INTS) {
                a->l.n = (int)(rnd() % (JN_MAX_DIMS + 1));
                for (int j = 0; j < a->l.n; j++) a->l.v[j] = rnd_i64();
            } else a->i = rnd_i64();
        }
        ev->nin = (uint8_t)(rnd() % 8 ? rnd() % 4 : rnd() % 256);
        ev->nout = (uint8_t)(rnd() % 3);
        ev->in = tref_pool[slot];
        ev->out = tref_pool[slot] + 256;
        for (int i = 0; i < ev->nin; i++) rnd_tref(&ev->in[i]);
        for (int i = 0; i < ev->nout; i++) rnd_tref(&ev->out[i]);
    } else if (ev->kind == JN_EV_LIVE) { /* ascending ids, dense or sparse, up to a large set */
        ev->nlive = (uint32_t)(rnd() % 8 ? rnd() % 20 : rnd() % 600);
        int64_t id = (int64_t)(rnd() % 1000000);
        for (uint32_t i = 0; i < ev->nlive; i++) {
            live_pool[slot][i] = id;
            id += 1 + (int64_t)(rnd() % 4 ? rnd() % 3 : rnd() % 1000000);
        }
        ev->live = live_pool[slot];
    } else if (ev->kind == JN_EV_SYNC) {
        ev->sync_kind = (uint8_t)(1 + rnd() % 6);
        ev->value = rnd() % 4 ? (double)rnd_i64() / 9.0 : NAN;
        ev->tensor_id = rnd_i64();
    } else {
        ev->dec_kind = (uint8_t)(1 + rnd() % 2);
        ev->outcome = rnd_i64();
    }
}

static int tref_eq(const jn_db_tref *a, const jn_db_tref *b) {
    if (a->id != b->id || a->version != b->version || a->dtype != b->dtype || a->ndim != b->ndim ||
        a->device != b->device || a->role != b->role || a->pytype != b->pytype || a->offset != b->offset)
        return 0;
    for (int d = 0; d < a->ndim; d++)
        if (a->shape[d] != b->shape[d] || a->strides[d] != b->strides[d]) return 0;
    if (a->role == JN_TR_SCALAR && memcmp(&a->scalar, &b->scalar, 8)) return 0;
    return 1;
}

static int event_eq(const jn_db_event *a, const jn_db_event *b) {
    if (a->kind != b->kind || a->callsite != b->callsite || a->stack != b->stack) return 0;
    if (a->kind == JN_EV_SYNC)
        return a->sync_kind == b->sync_kind && !memcmp(&a->value, &b->value, 8) && a->tensor_id == b->tensor_id;
    if (a->kind == JN_EV_DECISION) return a->dec_kind == b->dec_kind && a->outcome == b->outcome;
    if (a->kind == JN_EV_LIVE) {
        if (a->nlive != b->nlive) return 0;
        for (uint32_t i = 0; i < a->nlive; i++)
            if (a->live[i] != b->live[i]) return 0;
        return 1;
    }
    if (a->op != b->op || a->inplace != b->inplace || a->nattrs != b->nattrs || a->nin != b->nin ||
        a->nout != b->nout)
        return 0;
    for (int k = 0; k < a->nattrs; k++) {
        const jn_attr *x = &a->attrs.a[k], *y = &b->attrs.a[k];
        if (a->attr_kind[k] != b->attr_kind[k]) return 0;
        switch (a->attr_kind[k]) {
        case JN_A_FLOAT: if (memcmp(&x->f, &y->f, 8)) return 0; break;
        case JN_A_INTS:
            if (x->l.n != y->l.n) return 0;
            for (int j = 0; j < x->l.n; j++)
                if (x->l.v[j] != y->l.v[j]) return 0;
            break;
        default: if (x->i != y->i) return 0;
        }
    }
    for (int i = 0; i < a->nin; i++)
        if (!tref_eq(&a->in[i], &b->in[i])) return 0;
    for (int i = 0; i < a->nout; i++)
        if (!tref_eq(&a->out[i], &b->out[i])) return 0;
    return 1;
}

/* ---------------------------------------------------------------- tests */
static void test_codec_roundtrip(void) {
    enum { N = 2000 };
    jn_db_buf buf = {0};
    uint64_t seed = rng;
    for (int i = 0; i < N; i++) {
        jn_db_event ev;
        rnd_event(&ev, 0);
        CHECK(jn_db_encode_event(&buf, &ev) == JN_OK);
    }
    rng = seed; /* regenerate the same sequence to compare */
    jn_db_decoder *d;
    CHECK(jn_db_decoder_new(buf.data, buf.len, &d) == JN_OK);
    int bad = 0, got = 0, n = 0;
    jn_db_event want, ev;
    for (;;) {
        if (jn_db_decoder_next(d, &ev, &got) != JN_OK) {
            bad++;
            fprintf(stderr, "  decode error: %s\n", jn_errmsg());
            break;
        }
        if (!got) break;
        rnd_event(&want, 0);
        if (!event_eq(&want, &ev)) bad++;
        n++;
    }
    CHECK(n == N);
    CHECK(bad == 0);
    jn_db_decoder_free(d);

    /* attr kinds from the op table when the event leaves them 0 */
    int op = jn_op_lookup("sum");
    if (op < 0) op = 0;
    const jn_opinfo *info = jn_op_info((jn_op)op);
    jn_db_event e = {.kind = JN_EV_OP, .op = (uint32_t)op, .nattrs = (uint8_t)info->nattrs, .callsite = 5};
    for (int k = 0; k < info->nattrs; k++)
        if (info->attr_kind[k] == JN_A_INTS) e.attrs.a[k].l.n = 0;
        else if (info->attr_kind[k] == JN_A_FLOAT) e.attrs.a[k].f = 0.5;
        else e.attrs.a[k].i = -1;
    buf.len = 0;
    CHECK(jn_db_encode_event(&buf, &e) == JN_OK);
    CHECK(jn_db_decoder_new(buf.data, buf.len, &d) == JN_OK);
    CHECK(jn_db_decoder_next(d, &ev, &got) == JN_OK && got == 1);
    CHECK(ev.nattrs == info->nattrs && ev.callsite == 5);
    for (int k = 0; k < info->nattrs; k++) CHECK(ev.attr_kind[k] == info->attr_kind[k]);
    jn_db_decoder_free(d);

    /* encoder errors */
    jn_db_event b = {.kind = 9};
    size_t before = buf.len;
    CHECK(jn_db_encode_event(&buf, &b) == JN_ERR_VALUE && has("unknown event kind"));
    b = (jn_db_event){.kind = JN_EV_OP, .op = 0xfffffff0u, .nattrs = 1};
    CHECK(jn_db_encode_event(&buf, &b) == JN_ERR_VALUE && has("unknown"));
    b = (jn_db_event){.kind = JN_EV_OP, .nattrs = JN_MAX_ATTRS + 1};
    CHECK(jn_db_encode_event(&buf, &b) == JN_ERR_VALUE);
    b = (jn_db_event){.kind = JN_EV_LIVE, .nlive = 2, .live = (const int64_t[]){7, 7}}; /* not ascending */
    CHECK(jn_db_encode_event(&buf, &b) == JN_ERR_VALUE && has("ascend"));
    b = (jn_db_event){.kind = JN_EV_LIVE, .nlive = 1, .live = (const int64_t[]){-3}};
    CHECK(jn_db_encode_event(&buf, &b) == JN_ERR_VALUE && has(">= 0"));
    CHECK(buf.len == before); /* a failed encode appends nothing */
    jn_db_buf_free(&buf);
}

static void test_decoder_fuzz(void) {
    /* a valid stream to mutate */
    jn_db_buf buf = {0};
    for (int i = 0; i < 40; i++) {
        jn_db_event ev;
        rnd_event(&ev, 0);
        jn_db_encode_event(&buf, &ev);
    }
    int crashes_would_show_under_asan = 0, errors = 0, runs = 0;
    uint8_t *m = malloc(buf.len + 64);
    for (int iter = 0; iter < 3000; iter++) {
        size_t len;
        int mode = iter % 3;
        if (mode == 0) { /* random bytes */
            len = rnd() % 200;
            for (size_t i = 0; i < len; i++) m[i] = (uint8_t)rnd();
        } else if (mode == 1) { /* truncation */
            len = rnd() % (buf.len + 1);
            memcpy(m, buf.data, len);
        } else { /* bit flips */
            len = buf.len;
            memcpy(m, buf.data, len);
            for (int k = 0; k < 3; k++) m[rnd() % len] ^= (uint8_t)(1u << (rnd() % 8));
        }
        /* copy to an exact-size allocation so ASan catches any overread */
        uint8_t *exact = malloc(len ? len : 1);
        memcpy(exact, m, len);
        jn_db_decoder *d;
        if (jn_db_decoder_new(exact, len, &d) != JN_OK) {
            free(exact);
            continue;
        }
        jn_db_event ev;
        int got, guard = 0;
        jn_status s;
        while ((s = jn_db_decoder_next(d, &ev, &got)) == JN_OK && got && guard++ < 100000) {
        }
        if (s != JN_OK) {
            errors++;
            if (s != JN_ERR_IO || !strstr(jn_errmsg(), "corrupt event chunk")) crashes_would_show_under_asan++;
            /* after an error the decoder stays at its end */
            CHECK(jn_db_decoder_next(d, &ev, &got) == JN_OK && got == 0);
        }
        runs++;
        jn_db_decoder_free(d);
        free(exact);
    }
    free(m);
    CHECK(runs == 3000);
    CHECK(errors > 500);                     /* garbage is noticed, not silently accepted */
    CHECK(crashes_would_show_under_asan == 0); /* every error is the corrupt-chunk IO error */
    jn_db_buf_free(&buf);
}

static jn_db_run_info run_info(void) {
    jn_db_run_info ri = {
        .argv_json = "[\"python\",\"train.py\"]", .cwd = "/work", .python_version = "3.11.2",
        .janus_version = JANUS_VERSION, .optable_hash = "0123456789abcdef", .optable_ops = "add a\nmul b",
        .cpu_features = "avx2 fma", .device = "cpu", .hostname = "host", .pid = 4242, .started = 1700000000.5};
    return ri;
}

/* A step with `nev` encoded events and one row of every summary kind. */
static jn_status write_test_step(jn_db *db, int64_t run, int64_t step, int nev, jn_db_buf *buf) {
    buf->len = 0;
    for (int i = 0; i < nev; i++) {
        jn_db_event ev;
        rnd_event(&ev, 1);
        if (jn_db_encode_event(buf, &ev)) return JN_ERR_RUNTIME;
    }
    jn_db_opcount oc[3] = {{"add", 10 + step}, {"mul", 3}, {"matmul", 2}};
    jn_db_sync sy[2] = {{0, JN_SYNC_ITEM, 0.25 * (double)step, 7}, {1, JN_SYNC_BOOL, NAN, 8}};
    jn_db_decision de[1] = {{9, JN_DEC_LOOP, 32 + step % 2, 1}};
    jn_db_shape sh[2] = {{"matmul", 7, 0, 0, 64 + step % 3}, {"matmul", 7, 0, 1, 784}};
    jn_db_argtype at[1] = {{"mul", 7, 1, step % 2 ? "float" : "int", 1}};
    jn_db_step s = {.run_id = run, .step = step, .kind = "optimizer", .started = 1.0 + (double)step,
                    .duration = 0.01, .signature = 0xfedcba9876543210ull ^ (uint64_t)(step % 2),
                    .n_ops = nev, .n_syncs = 2, .events = buf->data, .events_len = buf->len,
                    .opcounts = oc, .nopcounts = 3, .syncs = sy, .nsyncs = 2, .decisions = de, .ndecisions = 1,
                    .shapes = sh, .nshapes = 2, .argtypes = at, .nargtypes = 1};
    return jn_db_write_step(db, &s);
}

static void test_create_runs_steps(void) {
    const char *path = tmp("a.db");
    jn_db *db = NULL;
    CHECK(jn_db_open(path, JN_DB_READONLY, &db) == JN_ERR_IO && has("does not exist") && has(path));
    CHECK(jn_db_open(path, JN_DB_CREATE, &db) == JN_OK && db);
    if (!db) return;
    CHECK(jn_db_schema_version(db) == JN_DB_SCHEMA_VERSION);
    sqlite3 *h = jn_db_testing_handle(db);
    CHECK(q_text_is(h, "SELECT value FROM meta WHERE key='app'", "janus"));
    CHECK(q_int(h, "SELECT value FROM meta WHERE key='schema_version'") == JN_DB_SCHEMA_VERSION);
    CHECK(q_text_is(h, "SELECT value FROM meta WHERE key='janus_version'", JANUS_VERSION));
    CHECK(q_int(h, "SELECT count(*) FROM meta WHERE key IN ('created','optable_hash')") == 2);
    CHECK(q_text_is(h, "PRAGMA journal_mode", "wal"));
    CHECK(q_int(h, "PRAGMA foreign_keys") == 1);
    CHECK(q_int(h, "PRAGMA synchronous") == 1); /* NORMAL */

    /* runs */
    jn_db_run_info ri = run_info();
    int64_t r1 = 0, r2 = 0;
    CHECK(jn_db_run_begin(db, &ri, &r1) == JN_OK && r1 > 0);
    CHECK(jn_db_run_begin(db, &ri, &r2) == JN_OK && r2 == r1 + 1);
    CHECK(q_int(h, "SELECT count(*) FROM optables") == 1);
    CHECK(q_text_is(h, "SELECT ops FROM optables", "add a\nmul b"));
    CHECK(q_text_is(h, "SELECT status FROM runs WHERE id=1", "running"));
    CHECK(jn_db_run_end(db, r1, 3, "error", 1700000100.0) == JN_OK);
    CHECK(q_text_is(h, "SELECT status FROM runs WHERE id=1", "error"));
    CHECK(q_int(h, "SELECT exit_status FROM runs WHERE id=1") == 3);
    CHECK(q_text_is(h, "SELECT argv FROM runs WHERE id=1", "[\"python\",\"train.py\"]"));
    CHECK(q_int(h, "SELECT pid FROM runs WHERE id=2") == 4242);
    CHECK(q_text_is(h, "SELECT cpu_features || '|' || device || '|' || hostname || '|' || python_version "
                       "FROM runs WHERE id=2", "avx2 fma|cpu|host|3.11.2"));
    CHECK(jn_db_run_end(db, 999, 0, "finished", 0) == JN_ERR_VALUE && has("no run 999"));

    /* interning */
    int64_t c1, c2, c3, s1, s2, s3;
    CHECK(jn_db_callsite(db, "train.py", 10, "main", &c1) == JN_OK);
    CHECK(jn_db_callsite(db, "train.py", 11, "main", &c2) == JN_OK && c2 != c1);
    CHECK(jn_db_callsite(db, "train.py", 10, "main", &c3) == JN_OK && c3 == c1);
    int64_t fr[2] = {c1, c2};
    CHECK(jn_db_stack(db, 0x8000000000000001ull, fr, 2, &s1) == JN_OK);
    CHECK(jn_db_stack(db, 0x8000000000000001ull, fr, 2, &s2) == JN_OK && s2 == s1);
    CHECK(jn_db_stack(db, 7, fr, 1, &s3) == JN_OK && s3 != s1);
    CHECK(q_int(h, "SELECT count(*) FROM callsites") == 2);
    CHECK(q_text_is(h, "SELECT frames FROM stacks WHERE hash = -9223372036854775807", "[1,2]"));
    CHECK(q_int(h, "SELECT count(*) FROM stacks s, json_each(s.frames) j WHERE s.id = 1") == 2);

    /* steps */
    jn_db_buf buf = {0};
    uint64_t seed = rng;
    for (int64_t st = 0; st < 6; st++) CHECK(write_test_step(db, r1, st, 100, &buf) == JN_OK);
    CHECK(q_int(h, "SELECT count(*) FROM steps WHERE run_id=1") == 6);
    CHECK(q_int(h, "SELECT count(*) FROM chunks WHERE codec='zstd'") == 6);
    CHECK(q_int(h, "SELECT sum(count) FROM op_counts WHERE op='add'") == 10 * 6 + 15);
    CHECK(q_int(h, "SELECT count(*) FROM syncs WHERE value IS NULL") == 6); /* NaN -> no value */
    CHECK(q_int(h, "SELECT count(*) FROM v_syncs WHERE kind_name='item'") == 6);
    CHECK(q_int(h, "SELECT count(*) FROM v_step_signatures") == 2);
    CHECK(q_text_is(h, "SELECT signature FROM steps WHERE step=0", "fedcba9876543210"));
    CHECK(q_int(h, "SELECT n_sizes FROM v_shape_variation") == 3);
    CHECK(q_int(h, "SELECT count(DISTINCT pytype) FROM arg_types") == 2);
    CHECK(q_int(h, "SELECT count(DISTINCT outcome) FROM v_decisions WHERE kind_name='loop'") == 2);
    /* chunk round trip: regenerate step 4's events and compare bytes */
    void *data = NULL;
    size_t len = 0;
    rng = seed;
    jn_db_buf want = {0};
    for (int64_t st = 0; st <= 4; st++) {
        want.len = 0;
        for (int i = 0; i < 100; i++) {
            jn_db_event ev;
            rnd_event(&ev, 1);
            jn_db_encode_event(&want, &ev);
        }
    }
    CHECK(jn_db_read_chunk(db, r1, 4, &data, &len) == JN_OK);
    CHECK(len == want.len && data && memcmp(data, want.data, len) == 0);
    free(data);
    jn_db_buf_free(&want);
    CHECK(jn_db_read_chunk(db, r1, 77, &data, &len) == JN_ERR_VALUE && has("step 77"));

    /* duplicate step, missing run */
    CHECK(write_test_step(db, r1, 3, 5, &buf) == JN_ERR_VALUE && has("already recorded"));
    CHECK(write_test_step(db, 555, 0, 5, &buf) == JN_ERR_VALUE && has("no run 555"));
    CHECK(q_int(h, "SELECT count(*) FROM steps") == 6);
    CHECK(q_int(h, "SELECT count(*) FROM op_counts") == 18);

    /* an empty step */
    jn_db_step empty = {.run_id = r2, .step = 0, .kind = "tail"};
    CHECK(jn_db_write_step(db, &empty) == JN_OK);
    CHECK(jn_db_read_chunk(db, r2, 0, &data, &len) == JN_OK && len == 0);
    free(data);

    /* a corrupt chunk names the run and step */
    CHECK(sqlite3_exec(h, "UPDATE chunks SET data = x'28b52ffd00112233' WHERE run_id=1 AND step=2", 0, 0, 0) ==
          SQLITE_OK);
    CHECK(jn_db_read_chunk(db, r1, 2, &data, &len) == JN_ERR_VALUE && has("step 2 of run 1") && has("corrupt"));
    CHECK(sqlite3_exec(h, "UPDATE chunks SET raw_bytes = raw_bytes + 1 WHERE run_id=1 AND step=1", 0, 0, 0) ==
          SQLITE_OK);
    CHECK(jn_db_read_chunk(db, r1, 1, &data, &len) == JN_ERR_VALUE && has("step 1 of run 1"));
    jn_db_buf_free(&buf);
    jn_db_close(db);

    /* reopen read-only and for writing */
    CHECK(jn_db_open(path, JN_DB_READONLY, &db) == JN_OK);
    if (db) {
        CHECK(q_int(jn_db_testing_handle(db), "SELECT count(*) FROM steps") == 7);
        CHECK(jn_db_read_chunk(db, r1, 5, &data, &len) == JN_OK && len > 0);
        free(data);
        CHECK(jn_db_callsite(db, "x", 1, "f", &c1) == JN_ERR_IO && has("read-only"));
        jn_db_close(db);
    }
    CHECK(jn_db_open(path, JN_DB_WRITE, &db) == JN_OK);
    jn_db_close(db);

    /* an empty file: refused read-only, becomes a store with CREATE */
    const char *e = tmp("empty.db");
    write_file(e, "");
    CHECK(jn_db_open(e, JN_DB_READONLY, &db) == JN_ERR_IO && has("empty"));
    CHECK(jn_db_open(e, JN_DB_CREATE, &db) == JN_OK);
    jn_db_close(db);
}

static void test_foreign_files(void) {
    jn_db *db = NULL;
    /* not SQLite at all; the file is left as it was */
    const char *txt = tmp("notes.txt");
    const char *text = "these are my notes, not a database; they are long enough to look like a header\n";
    write_file(txt, text);
    for (int fl = JN_DB_READONLY; fl <= JN_DB_CREATE; fl++)
        CHECK(jn_db_open(txt, fl, &db) == JN_ERR_IO && has(txt) && has("not a SQLite file") && !db);
    char back[256] = {0};
    FILE *f = fopen(txt, "r");
    if (f) {
        CHECK(fread(back, 1, sizeof back - 1, f) == strlen(text));
        fclose(f);
    }
    CHECK(strcmp(back, text) == 0);

    /* SQLite, but somebody else's */
    const char *other = tmp("other.db");
    sqlite3 *h = raw(other);
    CHECK(sqlite3_exec(h, "CREATE TABLE t(x); INSERT INTO t VALUES(1);", 0, 0, 0) == SQLITE_OK);
    sqlite3_close(h);
    CHECK(jn_db_open(other, JN_DB_CREATE, &db) == JN_ERR_IO && has("not a janus trace store") && has(other));
    h = raw(other);
    CHECK(q_text_is(h, "PRAGMA journal_mode", "delete")); /* not switched to WAL */
    CHECK(q_int(h, "SELECT count(*) FROM sqlite_master") == 1);
    /* a meta table that isn't ours */
    CHECK(sqlite3_exec(h, "CREATE TABLE meta(key, value); INSERT INTO meta VALUES('app','other');", 0, 0, 0) ==
          SQLITE_OK);
    sqlite3_close(h);
    CHECK(jn_db_open(other, JN_DB_WRITE, &db) == JN_ERR_IO && has("not a janus trace store"));

    /* a newer schema */
    const char *newer = tmp("newer.db");
    CHECK(jn_db_open(newer, JN_DB_CREATE, &db) == JN_OK);
    CHECK(sqlite3_exec(jn_db_testing_handle(db), "UPDATE meta SET value='99' WHERE key='schema_version'", 0, 0, 0) ==
          SQLITE_OK);
    jn_db_close(db);
    char vcur[32];
    snprintf(vcur, sizeof vcur, "version %d", JN_DB_SCHEMA_VERSION);
    for (int fl = JN_DB_READONLY; fl <= JN_DB_CREATE; fl++)
        CHECK(jn_db_open(newer, fl, &db) == JN_ERR_IO && has("schema version 99") && has(vcur) &&
              has("upgrade janus"));
    h = raw(newer);
    CHECK(q_int(h, "SELECT value FROM meta WHERE key='schema_version'") == 99); /* untouched */
    sqlite3_close(h);
}

/* The prototype layout v0: meta and callsites only. */
static void make_v0(const char *path) {
    unlink(path);
    sqlite3 *h = raw(path);
    sqlite3_exec(h,
                 "CREATE TABLE meta(key TEXT PRIMARY KEY, value TEXT NOT NULL);"
                 "INSERT INTO meta VALUES('schema_version','0'),('app','janus'),('janus_version','0.0.1');"
                 "CREATE TABLE callsites(id INTEGER PRIMARY KEY, file TEXT NOT NULL, line INTEGER NOT NULL,"
                 "  func TEXT NOT NULL, UNIQUE(file, line, func));"
                 "INSERT INTO callsites(file, line, func) VALUES('old.py', 3, 'f');",
                 0, 0, 0);
    sqlite3_close(h);
}

static void test_migration(void) {
    const char *path = tmp("v0.db");
    jn_db *db = NULL;
    make_v0(path);
    CHECK(jn_db_open(path, JN_DB_READONLY, &db) == JN_ERR_IO && has("older schema version 0") && has("migrate"));

    /* a failure at any point of the open leaves the store at v0 or fully migrated */
    CHECK(jt_migrate_under_faults(path, make_v0, 19, 0, "SELECT count(*) FROM sqlite_master WHERE name='runs'", 0, 1,
                                  -1) >= 5);

    make_v0(path);
    CHECK(jn_db_open(path, JN_DB_WRITE, &db) == JN_OK);
    if (!db) return;
    CHECK(jn_db_schema_version(db) == JN_DB_SCHEMA_VERSION);
    sqlite3 *h = jn_db_testing_handle(db);
    CHECK(q_int(h, "SELECT value FROM meta WHERE key='schema_version'") == JN_DB_SCHEMA_VERSION);
    CHECK(q_int(h, "SELECT count(*) FROM sqlite_master WHERE name IN ('runs','steps','chunks','op_counts',"
                   "'syncs','decisions','shapes','arg_types','v_step_signatures','bundles')") == 10);
    int64_t id;
    CHECK(jn_db_callsite(db, "old.py", 3, "f", &id) == JN_OK && id == 1); /* old rows kept */
    jn_db_run_info ri = run_info();
    int64_t run;
    jn_db_buf buf = {0};
    CHECK(jn_db_run_begin(db, &ri, &run) == JN_OK && write_test_step(db, run, 0, 3, &buf) == JN_OK);
    jn_db_buf_free(&buf);
    jn_db_close(db);
}

static void test_unwritable(void) {
    jn_db *db = NULL;
    const char *p = tmp("no/such/dir/run.db");
    CHECK(jn_db_open(p, JN_DB_CREATE, &db) == JN_ERR_IO && has(p) && has("cannot create") &&
          has("directory exists and is writable") && !db);
    CHECK(jn_db_open(jt_tmpdir(), JN_DB_CREATE, &db) == JN_ERR_IO && has("is a directory") && !db);
    if (geteuid() != 0) { /* root ignores permissions */
        const char *ro = tmp("ro");
        mkdir(ro, 0500);
        char path[600];
        snprintf(path, sizeof path, "%s/run.db", ro);
        CHECK(jn_db_open(path, JN_DB_CREATE, &db) == JN_ERR_IO && has(path));
        chmod(ro, 0700);
    }
}

static void test_fault_injection(void) {
    const char *path = tmp("full.db");
    jn_db *db = NULL;
    CHECK(jn_db_open(path, JN_DB_CREATE, &db) == JN_OK);
    if (!db) return;
    jn_db_run_info ri = run_info();
    int64_t run;
    jn_db_buf buf = {0};
    CHECK(jn_db_run_begin(db, &ri, &run) == JN_OK);
    for (int st = 0; st < 3; st++) CHECK(write_test_step(db, run, st, 50, &buf) == JN_OK);
    sqlite3 *h = jn_db_testing_handle(db);
    /* fail the n-th statement of the write, for every n the write performs */
    int n, all_clear = 1;
    for (n = 1; n < 40; n++) {
        jn_db_inject_fault(n);
        jn_status s = write_test_step(db, run, 3, 50, &buf);
        jn_db_inject_fault(0);
        if (s == JN_OK) break;
        if (s != JN_ERR_IO || !strstr(jn_errmsg(), "disk is full") || !strstr(jn_errmsg(), "step 3 of run") ||
            !strstr(jn_errmsg(), path))
            all_clear = 0, fprintf(stderr, "  fault %d: %s\n", n, jn_errmsg());
        /* the failed step left nothing behind; the earlier ones are intact */
        if (q_int(h, "SELECT count(*) FROM steps WHERE step=3") != 0 ||
            q_int(h, "SELECT count(*) FROM chunks WHERE step=3") != 0 ||
            q_int(h, "SELECT count(*) FROM op_counts WHERE step=3") != 0 ||
            q_int(h, "SELECT count(*) FROM syncs WHERE step=3") != 0 ||
            q_int(h, "SELECT count(*) FROM steps") != 3 || !sqlite3_get_autocommit(h))
            all_clear = 0;
    }
    CHECK(all_clear);
    CHECK(n > 10); /* the write has that many statements: each one was failed once */
    CHECK(q_int(h, "SELECT count(*) FROM steps") == 4); /* the last try, without a fault, landed */
    jn_db_close(db);
    CHECK(jn_db_open(path, JN_DB_READONLY, &db) == JN_OK);
    if (db) {
        void *data;
        size_t len;
        for (int st = 0; st < 4; st++) {
            CHECK(jn_db_read_chunk(db, run, st, &data, &len) == JN_OK && len > 0);
            free(data);
        }
        jn_db_close(db);
    }
    jn_db_buf_free(&buf);
}

static void test_two_processes(void) {
    const char *path = tmp("shared.db");
    pid_t pids[2];
    for (int p = 0; p < 2; p++) {
        pids[p] = fork();
        if (pids[p] == 0) {
            rng += (uint64_t)p * 7919;
            jn_db *db = NULL;
            int64_t run;
            jn_db_buf buf = {0};
            jn_db_run_info ri = run_info();
            if (jn_db_open(path, JN_DB_CREATE, &db) || jn_db_run_begin(db, &ri, &run)) {
                fprintf(stderr, "  child %d: %s\n", p, jn_errmsg());
                _exit(2);
            }
            for (int st = 0; st < 50; st++)
                if (write_test_step(db, run, st, 30, &buf)) {
                    fprintf(stderr, "  child %d step %d: %s\n", p, st, jn_errmsg());
                    _exit(3);
                }
            jn_db_run_end(db, run, 0, "finished", 2.0);
            jn_db_buf_free(&buf);
            jn_db_close(db);
            _exit(0);
        }
    }
    for (int p = 0; p < 2; p++) {
        int status = -1;
        waitpid(pids[p], &status, 0);
        CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    }
    jn_db *db = NULL;
    CHECK(jn_db_open(path, JN_DB_READONLY, &db) == JN_OK);
    if (!db) return;
    sqlite3 *h = jn_db_testing_handle(db);
    CHECK(q_int(h, "SELECT count(*) FROM steps") == 100);
    CHECK(q_int(h, "SELECT count(DISTINCT run_id) FROM steps") == 2);
    CHECK(q_int(h, "SELECT count(*) FROM runs WHERE status='finished'") == 2);
    CHECK(q_int(h, "SELECT count(*) FROM op_counts") == 300);
    jn_db_close(db);
}

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static void test_speed(void) {
    const char *path = tmp("speed.db");
    jn_db *db = NULL;
    CHECK(jn_db_open(path, JN_DB_CREATE, &db) == JN_OK);
    if (!db) return;
    jn_db_run_info ri = run_info();
    int64_t run;
    CHECK(jn_db_run_begin(db, &ri, &run) == JN_OK);
    /* ~100 realistic op events per step (small ndim, few inputs) */
    jn_db_buf ev = {0};
    jn_db_tref tr[3];
    for (int i = 0; i < 3; i++) {
        memset(&tr[i], 0, sizeof tr[i]);
        tr[i] = (jn_db_tref){.id = 100 + i, .version = 1, .dtype = 0, .ndim = 2, .shape = {64, 128},
                             .strides = {128, 1}};
    }
    for (int i = 0; i < 100; i++) {
        jn_db_event e = {.kind = JN_EV_OP, .op = (uint32_t)(i % 20), .nin = 2, .nout = 1, .in = tr, .out = tr + 2,
                         .callsite = 3 + i % 7, .stack = 1 + i % 5};
        CHECK(jn_db_encode_event(&ev, &e) == JN_OK);
    }
    jn_db_opcount oc[20];
    static char names[20][8];
    for (int i = 0; i < 20; i++) {
        snprintf(names[i], sizeof names[i], "op%d", i);
        oc[i] = (jn_db_opcount){names[i], 5};
    }
    jn_db_shape sh[10];
    for (int i = 0; i < 10; i++) sh[i] = (jn_db_shape){names[i], 3, 0, 0, 64};
    enum { NSTEPS = 300 };
    double t0 = now();
    for (int st = 0; st < NSTEPS; st++) {
        jn_db_step s = {.run_id = run, .step = st, .kind = "optimizer", .signature = 1, .n_ops = 100,
                        .events = ev.data, .events_len = ev.len, .opcounts = oc, .nopcounts = 20,
                        .shapes = sh, .nshapes = 10};
        if (jn_db_write_step(db, &s)) {
            CHECK(0);
            break;
        }
    }
    double per = (now() - t0) / NSTEPS * 1e3;
    printf("write_step: %.3f ms per step (100 events, %zu raw bytes, 30 summary rows)\n", per, ev.len);
    CHECK(per < 20.0); /* the target is well under 1 ms in a release build; this only catches disasters */
    jn_db_buf_free(&ev);
    jn_db_close(db);
}

int main(void) {
    if (jt_tmp_begin("db")) return 1;
    if (getenv("JN_DB_STRESS")) { /* hunt races in the two-process test */
        for (int i = atoi(getenv("JN_DB_STRESS")); i > 0; i--) {
            test_two_processes();
            unlink(tmp("shared.db"));
        }
        JT_DONE();
    }
    test_codec_roundtrip();
    test_decoder_fuzz();
    test_create_runs_steps();
    test_foreign_files();
    test_migration();
    test_unwritable();
    test_fault_injection();
    test_two_processes();
    test_speed();
    jt_tmp_end();
    JT_DONE();
}
