/* fuzz_store.c -- libFuzzer harness of opening a trace store: the input is
 * a file's bytes, written to a temporary file (in /dev/shm when there is
 * one), opened read-only through db/ (jn_db_open) and read the way `janus
 * inspect` reads it (cli/inspect.c): runs, totals, step kinds, op
 * histogram, steps and their event chunks decoded, signatures, sync
 * points, decisions, shape variation, call sites, op tables, replay
 * counters, bundles listed, fetched and peeked/loaded.  Every failure must
 * be a status with a message, never a crash, leak or hang.  Seeds:
 * tests/fuzz/store/seeds (small recorded and optimized stores, 512-byte
 * pages).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "jn_bundle.h"
#include "jn_db.h"

static char dir[256];

static void remove_dir(void) { rmdir(dir); }

int LLVMFuzzerInitialize(int *argc, char ***argv) {
    (void)argc, (void)argv;
    const char *t = access("/dev/shm", W_OK) == 0 ? "/dev/shm" : getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp";
    snprintf(dir, sizeof dir, "%s/janus-fuzz-store-XXXXXX", t);
    if (!mkdtemp(dir)) abort();
    atexit(remove_dir); /* each input's files are removed after it */
    return 0;
}

static void check(jn_status s, const char *what) {
    if (s == JN_OK || s == JN_ERR_NOMEM || jn_errmsg()[0]) return;
    fprintf(stderr, "%s: status %d without a message\n", what, (int)s);
    abort();
}

static void read_run(jn_db *db, int64_t run) {
    jn_db_run_totals tot;
    check(jn_db_totals(db, run, &tot), "totals");
    jn_db_count *c = NULL;
    int n = 0;
    if (jn_db_step_kinds(db, run, &c, &n) == JN_OK) jn_db_counts_free(c, n);
    c = NULL, n = 0;
    if (jn_db_op_histogram(db, run, &c, &n) == JN_OK) jn_db_counts_free(c, n);
    jn_db_step_row *st = NULL;
    n = 0;
    if (jn_db_steps(db, run, &st, &n) == JN_OK) {
        for (int i = 0; i < n && i < 8; i++) {
            void *data = NULL;
            size_t len = 0;
            jn_status s = jn_db_read_chunk(db, run, st[i].step, &data, &len);
            check(s, "read_chunk");
            if (s != JN_OK) continue;
            jn_db_decoder *d = NULL;
            if (jn_db_decoder_new(data, len, &d) == JN_OK) {
                jn_db_event ev;
                int got = 0;
                while (jn_db_decoder_next(d, &ev, &got) == JN_OK && got) {
                }
                jn_db_decoder_free(d);
            }
            free(data);
        }
        jn_db_steps_free(st, n);
    }
    jn_db_signature *sg = NULL;
    n = 0;
    if (jn_db_signatures(db, run, &sg, &n) == JN_OK) jn_db_signatures_free(sg, n);
    jn_db_sync_point *sp = NULL;
    n = 0;
    if (jn_db_sync_points(db, run, &sp, &n) == JN_OK) jn_db_sync_points_free(sp, n);
    jn_db_decision *dc = NULL;
    n = 0;
    if (jn_db_decision_counts(db, run, &dc, &n) == JN_OK) jn_db_decision_counts_free(dc, n);
    jn_db_shape_var *sv = NULL;
    n = 0;
    if (jn_db_shape_variation(db, run, &sv, &n) == JN_OK) jn_db_shape_variation_free(sv, n);
    jn_db_op_row *ops = NULL;
    n = 0;
    if (jn_db_run_optable(db, run, &ops, &n) == JN_OK) jn_db_run_optable_free(ops, n);
    jn_db_replay_graph *g = NULL;
    jn_db_replay_miss *m = NULL;
    int ng = 0, nm = 0;
    if (jn_db_replay_get(db, run, &g, &ng, &m, &nm) == JN_OK) jn_db_replay_free(g, ng, m, nm);
    jn_db_replay_backward_totals bt;
    jn_db_replay_backward_reason *bw = NULL;
    int has = 0;
    n = 0;
    if (jn_db_replay_backward(db, run, &has, &bt, &bw, &n) == JN_OK) jn_db_replay_backward_free(bw, n);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    char path[400], side[420];
    snprintf(path, sizeof path, "%s/run.db", dir);
    FILE *f = fopen(path, "wb");
    if (!f) abort();
    if (size && fwrite(data, 1, size, f) != size) abort();
    fclose(f);
    jn_db *db = NULL;
    jn_status s = jn_db_open(path, JN_DB_READONLY, &db);
    check(s, "open");
    if (s == JN_OK) {
        jn_db_schema_version(db);
        if (jn_db_read_begin(db) == JN_OK) {
            jn_db_run_row *runs = NULL;
            int nr = 0;
            if (jn_db_runs(db, 0, &runs, &nr) == JN_OK) {
                for (int i = 0; i < nr && i < 4; i++) read_run(db, runs[i].id);
                jn_db_runs_free(runs, nr);
            }
            jn_db_site *sites = NULL;
            int ns = 0;
            if (jn_db_sites(db, &sites, &ns) == JN_OK) {
                jn_db_site_find(sites, ns, 1);
                jn_db_sites_free(sites, ns);
            }
            jn_db_bundle *bl = NULL;
            int nb = 0;
            if (jn_db_bundle_list(db, &bl, &nb) == JN_OK) {
                for (int i = 0; i < nb && i < 3; i++) {
                    jn_db_bundle b;
                    if (jn_db_bundle_get_id(db, bl[i].id, &b) != JN_OK) continue;
                    jn_cg_bundle *cb = NULL;
                    if (jn_cg_bundle_peek(b.data, b.len, &cb) == JN_OK) jn_cg_bundle_free(cb);
                    cb = NULL;
                    if (jn_cg_bundle_load(b.data, b.len, NULL, &cb) == JN_OK) jn_cg_bundle_free(cb);
                    jn_db_bundle_free(&b);
                }
                jn_db_bundle_list_free(bl, nb);
            }
            jn_db_read_end(db);
        }
        jn_db_close(db);
    }
    unlink(path);
    snprintf(side, sizeof side, "%s-wal", path);
    unlink(side);
    snprintf(side, sizeof side, "%s-shm", path);
    unlink(side);
    snprintf(side, sizeof side, "%s-journal", path);
    unlink(side);
    return 0;
}
