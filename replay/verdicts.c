/* verdicts.c -- the recording's region verdicts for the running replay:
 * read once from the store (the bundle this replay loaded), for the
 * replay-time regions (janus/_region.py) to start from: a region the
 * analyzer refused is not learned; a region whose code hash differs from
 * the recorded one is a miss "source changed since recording".
 */
#include <string.h>

#include "rp_internal.h"

/* The id of the bundle the replay runs: its run row's, else the newest of its target. */
static jn_status bundle_id(const jn_replay *R, jn_db *db, int64_t *id) {
    *id = 0;
    jn_status s = JN_OK;
    if (R->run_id > 0) {
        jn_db_run_row *runs = NULL;
        int n = 0;
        if ((s = jn_db_runs(db, R->run_id, &runs, &n))) return s;
        if (n) *id = runs[0].bundle_id;
        jn_db_runs_free(runs, n);
        if (*id) return JN_OK;
    }
    jn_db_bundle *list = NULL;
    int n = 0;
    if ((s = jn_db_bundle_list(db, &list, &n))) return s;
    for (int i = 0; i < n; i++) /* oldest first: the last one of the target */
        if (R->b && !strcmp(list[i].target, R->b->target)) *id = list[i].id;
    jn_db_bundle_list_free(list, n);
    return JN_OK;
}

jn_status jn_rp_region_verdicts(const jn_replay *R, jn_db_region_verdict **rows, int *n) {
    if (!R || !rows || !n) return jn_error(JN_ERR_VALUE, "jn_rp_region_verdicts: NULL argument");
    *rows = NULL;
    *n = 0;
    jn_db *db = NULL;
    jn_status s = jn_db_open(R->db_path, JN_DB_READONLY, &db);
    if (s) return s;
    int64_t id = 0;
    if (!(s = jn_db_read_begin(db)) && !(s = bundle_id(R, db, &id)) && id) s = jn_db_region_verdicts(db, id, rows, n);
    jn_db_read_end(db);
    jn_db_close(db);
    return s;
}
