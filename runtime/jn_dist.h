/* jn_dist.h -- the process group of data-parallel training (runtime/dist.c).
 *
 * Collectives run on the engines users already trust: Open MPI for CPU
 * tensors (libmpi, dlopen'ed at init_process_group, JANUS_MPI_LIBRARY) and
 * NCCL for CUDA tensors (libnccl, dlopen'ed likewise, JANUS_NCCL_LIBRARY),
 * never on a transport of our own.  Nothing is linked: a process that never
 * calls jn_rt_dist_init neither needs nor loads MPI.  There is one process
 * group per process (the object torch.distributed's API implies); every
 * other function refuses with a clear error before jn_rt_dist_init.
 *
 * Every collective is blocking and watched: one that does not complete in
 * JANUS_DIST_TIMEOUT seconds (another rank died, raised or diverged) makes
 * this rank print which collective it waited in and abort the whole job
 * (MPI_Abort), so no rank hangs.
 */
#ifndef JN_DIST_H
#define JN_DIST_H

#include "jn_runtime.h"

/* torch.distributed.ReduceOp, in its order. */
typedef enum {
    JN_DIST_SUM,
    JN_DIST_AVG,
    JN_DIST_PRODUCT,
    JN_DIST_MIN,
    JN_DIST_MAX,
    JN_DIST_BAND,
    JN_DIST_BOR,
    JN_DIST_BXOR,
    JN_DIST_NOPS
} jn_dist_op;

typedef enum { JN_DIST_MPI, JN_DIST_NCCL } jn_dist_backend;

/* Start the process group.  MPI is initialized in both backends when it is
 * present (NCCL bootstraps over it); the nccl backend without mpirun
 * bootstraps over a TCP rendezvous at master_addr:master_port (rank 0
 * listens).  rank / world_size: what the caller was told (arguments or
 * RANK / WORLD_SIZE), -1 when nothing: they must match what mpirun started.
 * timeout_s: the collectives' limit, <= 0 for JANUS_DIST_TIMEOUT. */
jn_status jn_rt_dist_init(jn_dist_backend backend, int rank, int world_size, const char *master_addr,
                          int master_port, double timeout_s);
int jn_rt_dist_initialized(void);
int jn_rt_dist_rank(void);
int jn_rt_dist_world_size(void);
jn_dist_backend jn_rt_dist_backend(void);
/* 1: collectives may come from any thread (one at a time); 0: only from
 * the thread that called jn_rt_dist_init (MPI at MPI_THREAD_SINGLE) */
int jn_rt_dist_any_thread(void);
/* Collectives: t in place (all_reduce, broadcast); out = the world's ins
 * concatenated in rank order (all_gather); out = this rank's 1/world share
 * of the reduced in (reduce_scatter).  Contiguous tensors on the backend's
 * device; AVG divides the sum by the world size (floats only). */
jn_status jn_rt_dist_barrier(void);
jn_status jn_rt_dist_all_reduce(jn_tensor *t, jn_dist_op op);
jn_status jn_rt_dist_broadcast(jn_tensor *t, int src);
jn_status jn_rt_dist_all_gather(jn_tensor *out, jn_tensor *in);
jn_status jn_rt_dist_reduce_scatter(jn_tensor *out, jn_tensor *in, jn_dist_op op);
/* The GPU the nccl backend uses (LOCAL_RANK: a rank's number on its host),
 * made the process's CUDA device at the next jn_rt_dist_init; < 0: the
 * CUDA default (device 0, or janus.cuda.set_device's). */
void jn_rt_dist_set_device(int ordinal);
/* Hooks around every wait of a collective: leave() before it blocks (its
 * result goes to enter() after; NULL: nothing to give back), so a front end
 * lets other threads run meanwhile (Python: the GIL, when this thread holds
 * it).  Set once, before the first collective; NULL, NULL: none. */
void jn_rt_dist_set_wait_hooks(void *(*leave)(void), void (*enter)(void *));
/* End the process group (MPI_Finalize at exit: MPI cannot start twice). */
jn_status jn_rt_dist_destroy(void);
/* This rank failed (why: one line): print it naming the rank and end every
 * rank of the job now.  Does not return. */
void jn_rt_dist_abort(const char *why) __attribute__((noreturn));

#endif
