/* algos.c -- moves the cuDNN algorithm cache (runtime/cuda/cudnn.c) to and
 * from run.db's algos table (db/db.c, schema v5).  It lives in janus_exec
 * because it needs both the tensor runtime (janus_rt, where the cache is)
 * and the store (janus_db, which sits above janus_rt).  The conversion
 * between cache entries and text rows, and its checks, are cudnn.c's
 * (jn_rt_cudnn_cache_export / _import); this file only carries rows.
 * See jn_algos.h for where the two entry points must be called.
 */
#include "jn_algos.h"

#include <stdio.h>
#include <stdlib.h>

#if JANUS_HAVE_CUDA
#include "cuda/jn_cudnn.h"

jn_status jn_ex_cuda_algos_load_for(jn_db *db, const char *device, int *loaded) {
    if (loaded) *loaded = 0;
    if (!db || !device) return jn_error(JN_ERR_VALUE, "jn_ex_cuda_algos_load: NULL store or device");
    jn_db_algo *rows = NULL;
    int n = 0;
    jn_status s = jn_db_algos_get(db, device, &rows, &n);
    if (s || !n) return s;
    jn_rt_cudnn_entry *e = calloc((size_t)n, sizeof *e);
    if (!e) {
        jn_db_algos_free(rows, n);
        return jn_error(JN_ERR_NOMEM, "out of memory loading %d cuDNN algorithm rows from %s", n, jn_db_path(db));
    }
    char where[512];
    snprintf(where, sizeof where, "trace store %s, device '%s'", jn_db_path(db), device);
    for (int i = 0; i < n && !s; i++) {
        /* a key that does not fit, or numbers beyond int/size_t, are damage
         * the import names: pass them on so it refuses them */
        if ((size_t)snprintf(e[i].key, sizeof e[i].key, "%s", rows[i].key) >= sizeof e[i].key) e[i].key[0] = 0;
        e[i].algo = rows[i].algo < 0 ? -1 : rows[i].algo >= JN_RT_CUDNN_MAX_ALGO ? JN_RT_CUDNN_MAX_ALGO : (int)rows[i].algo;
        e[i].workspace = (size_t)(rows[i].workspace < 0 ? 0 : rows[i].workspace);
        e[i].seconds = rows[i].seconds;
    }
    s = jn_rt_cudnn_cache_import(e, n, where);
    if (!s && loaded) *loaded = n;
    free(e);
    jn_db_algos_free(rows, n);
    return s;
}

jn_status jn_ex_cuda_algos_save_for(jn_db *db, const char *device, int *saved) {
    if (saved) *saved = 0;
    if (!db || !device) return jn_error(JN_ERR_VALUE, "jn_ex_cuda_algos_save: NULL store or device");
    jn_rt_cudnn_entry *e = calloc(JN_RT_CUDNN_CACHE_SLOTS, sizeof *e);
    jn_db_algo *rows = calloc(JN_RT_CUDNN_CACHE_SLOTS, sizeof *rows);
    if (!e || !rows) {
        free(e);
        free(rows);
        return jn_error(JN_ERR_NOMEM, "out of memory saving the cuDNN algorithms to %s", jn_db_path(db));
    }
    int n = jn_rt_cudnn_cache_export(e, JN_RT_CUDNN_CACHE_SLOTS);
    for (int i = 0; i < n; i++)
        rows[i] = (jn_db_algo){e[i].key, e[i].algo, (int64_t)e[i].workspace, e[i].seconds};
    jn_status s = n ? jn_db_algos_put(db, device, rows, n) : JN_OK;
    if (!s && saved) *saved = n;
    free(rows);
    free(e);
    return s;
}

jn_status jn_ex_cuda_algos_load(jn_db *db, int *loaded) {
    char dev[300];
    if (loaded) *loaded = 0;
    if (jn_rt_cudnn_device(dev, sizeof dev)) return JN_OK; /* no GPU: nothing to choose for */
    return jn_ex_cuda_algos_load_for(db, dev, loaded);
}

jn_status jn_ex_cuda_algos_save(jn_db *db, int *saved) {
    char dev[300];
    if (saved) *saved = 0;
    if (!jn_rt_cudnn_cache_count() || jn_rt_cudnn_device(dev, sizeof dev)) return JN_OK;
    return jn_ex_cuda_algos_save_for(db, dev, saved);
}

#else /* built without CUDA: no convolution ever ran on a GPU */
jn_status jn_ex_cuda_algos_load_for(jn_db *db, const char *device, int *loaded) {
    if (loaded) *loaded = 0;
    return JN_OK;
}
jn_status jn_ex_cuda_algos_save_for(jn_db *db, const char *device, int *saved) {
    if (saved) *saved = 0;
    return JN_OK;
}
jn_status jn_ex_cuda_algos_load(jn_db *db, int *loaded) { return jn_ex_cuda_algos_load_for(db, NULL, loaded); }
jn_status jn_ex_cuda_algos_save(jn_db *db, int *saved) { return jn_ex_cuda_algos_save_for(db, NULL, saved); }
#endif
