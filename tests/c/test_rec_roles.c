/* test_rec_roles.c -- the recorder's tensor roles (recorder/rec.c), kept in
 * its own table rather than on jn_tensor: a header marked while recording
 * has its role, every other one JN_TR_TEMP; a second header autograd makes
 * over the same value (jn_detach, saved tensors) takes the role; a dying
 * header's entry goes (its address may come back as an unmarked header);
 * many marks and deaths in any order keep every role (growth, deletion by
 * backward shift); marks outside a recording do nothing, and stopping
 * forgets them all.  The roles also reach the trace: an op's arguments
 * carry them (checked end to end by tests/python/test_recorder.py). */
#include <stdlib.h>

#include "jn_autograd.h"
#include "jn_db.h"
#include "jn_rec.h"
#include "jn_test.h"

static int64_t new_run(const char *db_path) {
    jn_db *db = NULL;
    if (jn_db_open(db_path, JN_DB_CREATE, &db)) return 0;
    char hash[24];
    snprintf(hash, sizeof hash, "%016llx", (unsigned long long)jn_optable_hash());
    jn_db_run_info info = {.argv_json = "[\"python\", \"train.py\"]", .cwd = ".", .python_version = "3.12",
                           .janus_version = "test", .optable_hash = hash, .optable_ops = "", .device = "cpu",
                           .kind = "record"};
    int64_t id = 0;
    if (jn_db_run_begin(db, &info, &id)) id = 0;
    jn_db_close(db);
    return id;
}

static jn_tensor *vec(void) {
    int64_t n = 4;
    return jn_tensor_zeros(JN_F32, 1, &n);
}

static void test_marks_aliases_deaths(void) {
    jn_tensor *p = vec(), *x = vec(), *t = vec();
    jn_rec_mark(p, JN_TR_PARAM), jn_rec_mark(x, JN_TR_HOST);
    CHECK(jn_rec_role(p) == JN_TR_PARAM && jn_rec_role(x) == JN_TR_HOST && jn_rec_role(t) == JN_TR_TEMP);
    jn_rec_mark(x, JN_TR_STATE); /* marked again: the latest role */
    CHECK(jn_rec_role(x) == JN_TR_STATE);
    jn_tensor *d = jn_detach(p); /* the same value: its role, its id */
    CHECK(d && d->id == p->id && jn_rec_role(d) == JN_TR_PARAM);
    jn_tensor *u = jn_detach(t);
    CHECK(u && jn_rec_role(u) == JN_TR_TEMP);
    jn_tensor_decref(p); /* the alias keeps its own entry */
    CHECK(jn_rec_role(d) == JN_TR_PARAM);
    jn_rec_mark(x, JN_TR_TEMP); /* unmarked */
    CHECK(jn_rec_role(x) == JN_TR_TEMP);
    jn_tensor_decref(d), jn_tensor_decref(u), jn_tensor_decref(x), jn_tensor_decref(t);
    /* a header made where a marked one died starts unmarked */
    jn_tensor *a = vec();
    jn_rec_mark(a, JN_TR_PARAM);
    jn_tensor *addr = a;
    jn_tensor_decref(a);
    jn_tensor *keep[64];
    for (int i = 0; i < 64; i++) { /* the allocator decides; checked when it reuses the address */
        keep[i] = vec();
        if (keep[i] == addr) CHECK(jn_rec_role(keep[i]) == JN_TR_TEMP);
    }
    for (int i = 0; i < 64; i++) jn_tensor_decref(keep[i]);
}

static void test_many(void) {
    enum { N = 3000 };
    jn_tensor **t = calloc(N, sizeof *t);
    int *role = calloc(N, sizeof *role);
    uint64_t r = 12345;
    for (int i = 0; i < N; i++) {
        t[i] = vec();
        role[i] = (int)(i % 4); /* TEMP, HOST, PARAM, STATE */
        jn_rec_mark(t[i], role[i]);
    }
    int ok = 1;
    for (int i = 0; i < N; i++) ok &= jn_rec_role(t[i]) == role[i];
    CHECK(ok);
    for (int k = 0; k < 2 * N; k++) { /* deaths and new marks in a pseudo-random order */
        r = r * 6364136223846793005ull + 1442695040888963407ull;
        int i = (int)((r >> 33) % N);
        if (k % 3 == 0) {
            jn_tensor_decref(t[i]);
            t[i] = vec();
            role[i] = JN_TR_TEMP;
        } else {
            role[i] = (int)((r >> 20) % 4);
            jn_rec_mark(t[i], role[i]);
        }
    }
    ok = 1;
    for (int i = 0; i < N; i++) ok &= jn_rec_role(t[i]) == role[i];
    CHECK(ok);
    for (int i = 0; i < N; i++) jn_tensor_decref(t[i]);
    free(t), free(role);
}

int main(void) {
    if (jt_tmp_begin("roles")) return 1;
    char path[512];
    snprintf(path, sizeof path, "%s/run.db", jt_tmpdir());
    jn_tensor *before = vec();
    jn_rec_mark(before, JN_TR_PARAM); /* not recording: nothing */
    CHECK(jn_rec_role(before) == JN_TR_TEMP);
    int64_t run = new_run(path);
    CHECK(run > 0 && jn_rec_start(path, run, "3.12") == JN_OK);
    test_marks_aliases_deaths();
    test_many();
    jn_tensor *p = vec();
    jn_rec_mark(p, JN_TR_PARAM);
    CHECK(jn_rec_role(p) == JN_TR_PARAM);
    CHECK(jn_rec_stop() == JN_OK);
    CHECK(jn_rec_role(p) == JN_TR_TEMP); /* a recording's roles end with it */
    jn_tensor_decref(p), jn_tensor_decref(before);
    jt_tmp_end();
    JT_DONE();
}
