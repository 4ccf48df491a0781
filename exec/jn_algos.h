/* jn_algos.h -- the cuDNN algorithm choices kept in run.db (schema v5,
 * db/jn_db.h algos): loading them into the CUDA backend's in-process cache
 * (runtime/cuda/cudnn.c) when a run with a store starts, and saving what
 * the run chose when it ends, so a replay asks cuDNN's heuristics once per
 * GPU model and convolution, not once per process.
 *
 * Where to call them (replay/replay.c, or any run that holds a
 * store): jn_ex_cuda_algos_load(db, NULL) once at replay start, after the
 * store is opened and before the first convolution runs; and
 * jn_ex_cuda_algos_save(db, NULL) once at exit, with the store opened for
 * writing (next to jn_db_replay_put).  Both are harmless everywhere: built
 * without CUDA, or without a GPU, they do nothing and return JN_OK; save
 * writes nothing when no convolution ran.  A failure (a damaged row, a
 * full disk) is a jn_status with the message set; the caller should warn
 * and go on -- the choices are then simply made again.
 */
#ifndef JN_ALGOS_H
#define JN_ALGOS_H

#include "jn_db.h"

/* The rows filed under this process's GPU (name + compute capability) into
 * the cache; *loaded (may be NULL) gets how many. */
jn_status jn_ex_cuda_algos_load(jn_db *db, int *loaded);
/* Every cache entry into the store under this GPU, one transaction;
 * *saved (may be NULL) gets how many rows were written. */
jn_status jn_ex_cuda_algos_save(jn_db *db, int *saved);

/* The same with an explicit device string (tests; the two above pass
 * jn_rt_cudnn_device's).  Built without CUDA: JN_OK and 0. */
jn_status jn_ex_cuda_algos_load_for(jn_db *db, const char *device, int *loaded);
jn_status jn_ex_cuda_algos_save_for(jn_db *db, const char *device, int *saved);

#endif
