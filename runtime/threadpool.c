/* threadpool.c -- a small fixed pool of worker threads for large kernels.
 *
 * jn_parallel_for splits [0, n) into one contiguous chunk per thread.  The
 * chunks are claimed, not assigned: the caller and the workers take the
 * next unclaimed chunk from one atomic ticket until none is left, and the
 * caller waits only for chunks someone claimed.  On a shared machine a
 * worker the scheduler has not run yet therefore costs nothing -- the
 * caller does its chunk too -- instead of stalling the caller for a time
 * slice (which made two threads slower than one under load).  Chunk
 * boundaries depend only on n and the thread count, never on who runs
 * them, so results are the same whatever the timing.  Size comes from
 * JANUS_NUM_THREADS (default: all online cores).  Nested calls, and calls
 * while another thread holds the pool, run inline, so kernels never
 * deadlock.
 *
 * Eager training issues many short parallel kernels back to back; waking a
 * sleeping worker through the condition variable costs more than such a
 * kernel's chunk (tens of microseconds on a loaded machine).  So a worker
 * that finished a job, and the caller waiting for claimed chunks, first
 * spin briefly (SPIN_ROUNDS pauses, ~50 us) before they sleep, as OpenMP
 * runtimes do.
 *
 * The ticket packs the job's generation (high 32 bits) with the next chunk
 * index (low 32): a worker that read an older job's fields can never claim
 * a chunk of a newer job, because its compare-and-swap names the old
 * generation.  A job's fields stay valid until every claimed chunk is done.
 */
#include "jn_runtime.h"

#include <pthread.h>
#include <stdlib.h>
#include <unistd.h>

#define MAX_THREADS 64
#define SPIN_ROUNDS 4000

static inline void cpu_relax(void) {
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#endif
}

static struct {
    pthread_mutex_t lock;   /* protects the job fields and the sleeping */
    pthread_cond_t wake, done;
    pthread_mutex_t busy;   /* held by the thread currently using the pool */
    pthread_once_t once;
    int nthreads;           /* including the caller */
    int started;            /* workers created */
    uint32_t generation;    /* of the current job; also in ticket's high bits */
    uint64_t ticket;        /* atomic: generation << 32 | next chunk to claim */
    int64_t finished;       /* atomic: chunks of the current job done */
    int waiting;            /* the caller sleeps on done */
    jn_range_fn fn;
    void *ctx;
    int64_t n, chunk, nchunks;
} pool = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, PTHREAD_COND_INITIALIZER,
          PTHREAD_MUTEX_INITIALIZER, PTHREAD_ONCE_INIT, 0, 0, 0, 0, 0, 0, NULL, NULL, 0, 0, 0};

static _Thread_local int in_worker;

static void init_size(void) {
    const char *e = getenv("JANUS_NUM_THREADS");
    long n = e ? strtol(e, NULL, 10) : sysconf(_SC_NPROCESSORS_ONLN);
    if (n < 1) n = 1;
    if (n > MAX_THREADS) n = MAX_THREADS;
    pool.nthreads = (int)n;
}

int jn_num_threads(void) {
    pthread_once(&pool.once, init_size);
    return pool.nthreads;
}

/* OpenBLAS keeps its own threads; janus.set_num_threads sizes both, as
 * torch.set_num_threads sizes its BLAS. */
void openblas_set_num_threads(int num_threads);

void jn_set_num_threads(int n) {
    pthread_once(&pool.once, init_size);
    if (n < 1) n = 1;
    if (n > MAX_THREADS) n = MAX_THREADS;
    openblas_set_num_threads(n);
    pthread_mutex_lock(&pool.busy);
    pool.nthreads = n; /* workers beyond n simply stay idle */
    pthread_mutex_unlock(&pool.busy);
}

/* Claims chunks of job gen and runs them until none is left (or the job
 * is no longer gen).  The fields were read by the caller for gen. */
static void run_chunks(uint32_t gen, jn_range_fn fn, void *ctx, int64_t n, int64_t chunk, int64_t nchunks) {
    uint64_t t = __atomic_load_n(&pool.ticket, __ATOMIC_ACQUIRE);
    for (;;) {
        if ((uint32_t)(t >> 32) != gen || (int64_t)(t & 0xffffffffu) >= nchunks) return;
        if (!__atomic_compare_exchange_n(&pool.ticket, &t, t + 1, 1, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)) continue;
        int64_t i = (int64_t)(t & 0xffffffffu), b = i * chunk, e = b + chunk < n ? b + chunk : n;
        fn(b, e, ctx);
        if (__atomic_add_fetch(&pool.finished, 1, __ATOMIC_ACQ_REL) == nchunks) {
            pthread_mutex_lock(&pool.lock); /* the caller may be going to sleep */
            if (pool.waiting) pthread_cond_signal(&pool.done);
            pthread_mutex_unlock(&pool.lock);
        }
        t = __atomic_load_n(&pool.ticket, __ATOMIC_ACQUIRE);
    }
}

static void *worker(void *arg) {
    int me = (int)(intptr_t)arg;
    uint32_t seen = 0;
    in_worker = 1;
    pthread_mutex_lock(&pool.lock);
    for (;;) {
        if (pool.generation == seen) {
            pthread_mutex_unlock(&pool.lock);
            for (int i = 0; i < SPIN_ROUNDS && __atomic_load_n(&pool.generation, __ATOMIC_ACQUIRE) == seen; i++)
                cpu_relax();
            pthread_mutex_lock(&pool.lock);
            while (pool.generation == seen) pthread_cond_wait(&pool.wake, &pool.lock);
        }
        seen = pool.generation;
        jn_range_fn fn = pool.fn;
        void *ctx = pool.ctx;
        int64_t n = pool.n, chunk = pool.chunk, nchunks = pool.nchunks;
        int active = me < pool.nthreads;
        pthread_mutex_unlock(&pool.lock);
        if (active) run_chunks(seen, fn, ctx, n, chunk, nchunks);
        pthread_mutex_lock(&pool.lock);
    }
    return NULL;
}

void jn_parallel_for(int64_t n, int64_t grain, jn_range_fn fn, void *ctx) {
    if (n <= 0) return;
    if (grain < 1) grain = 1;
    int nt = jn_num_threads();
    int64_t want = (n + grain - 1) / grain;
    if (want < nt) nt = (int)want;
    if (nt <= 1 || in_worker || pthread_mutex_trylock(&pool.busy) != 0) {
        fn(0, n, ctx);
        return;
    }
    pthread_mutex_lock(&pool.lock);
    while (pool.started < pool.nthreads - 1) {
        pthread_t th;
        if (pthread_create(&th, NULL, worker, (void *)(intptr_t)(pool.started + 1)) != 0) break;
        pthread_detach(th);
        pool.started++;
    }
    if (nt > pool.started + 1) nt = pool.started + 1;
    pool.fn = fn;
    pool.ctx = ctx;
    pool.n = n;
    pool.chunk = (n + nt - 1) / nt;
    pool.nchunks = (n + pool.chunk - 1) / pool.chunk;
    uint32_t gen = __atomic_add_fetch(&pool.generation, 1, __ATOMIC_RELEASE);
    __atomic_store_n(&pool.finished, 0, __ATOMIC_RELAXED);
    __atomic_store_n(&pool.ticket, (uint64_t)gen << 32, __ATOMIC_RELEASE);
    int64_t chunk = pool.chunk, nchunks = pool.nchunks;
    pthread_cond_broadcast(&pool.wake);
    pthread_mutex_unlock(&pool.lock);
    in_worker = 1;
    run_chunks(gen, fn, ctx, n, chunk, nchunks);
    in_worker = 0;
    for (int i = 0; i < SPIN_ROUNDS && __atomic_load_n(&pool.finished, __ATOMIC_ACQUIRE) < nchunks; i++)
        cpu_relax();
    pthread_mutex_lock(&pool.lock);
    pool.waiting = 1;
    while (__atomic_load_n(&pool.finished, __ATOMIC_ACQUIRE) < nchunks) pthread_cond_wait(&pool.done, &pool.lock);
    pool.waiting = 0;
    pthread_mutex_unlock(&pool.lock);
    pthread_mutex_unlock(&pool.busy);
}
