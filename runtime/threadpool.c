/* threadpool.c -- a small fixed pool of worker threads for large kernels.
 *
 * jn_parallel_for splits [0, n) into one contiguous chunk per thread; the
 * caller runs chunk 0 itself and waits for the rest.  Size comes from
 * JANUS_NUM_THREADS (default: all online cores).  Nested calls, and calls
 * while another thread holds the pool, run inline, so kernels never deadlock.
 *
 * Eager training issues many short parallel kernels back to back; waking a
 * sleeping worker through the condition variable costs more than such a
 * kernel's chunk (tens of microseconds on a loaded machine).  So a worker
 * that finished a job, and the caller waiting for the workers, first spin
 * briefly (SPIN_ROUNDS pauses, ~50 us) on the job counters before they
 * sleep, as OpenMP runtimes do.  The counters are written under the lock
 * and read without it through atomics while spinning.
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
    pthread_mutex_t lock;   /* protects the job fields below */
    pthread_cond_t wake, done;
    pthread_mutex_t busy;   /* held by the thread currently using the pool */
    pthread_once_t once;
    int nthreads;           /* including the caller */
    int started;            /* workers created */
    uint64_t generation;
    int pending;
    jn_range_fn fn;
    void *ctx;
    int64_t n, chunk;
} pool = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, PTHREAD_COND_INITIALIZER,
          PTHREAD_MUTEX_INITIALIZER, PTHREAD_ONCE_INIT, 0, 0, 0, 0, NULL, NULL, 0, 0};

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

static void *worker(void *arg) {
    int me = (int)(intptr_t)arg;
    uint64_t seen = 0;
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
        int64_t b = me * pool.chunk, e = b + pool.chunk;
        if (e > pool.n) e = pool.n;
        jn_range_fn fn = pool.fn;
        void *ctx = pool.ctx;
        if (b < e && me < pool.nthreads) {
            pthread_mutex_unlock(&pool.lock);
            fn(b, e, ctx);
            pthread_mutex_lock(&pool.lock);
        }
        if (__atomic_sub_fetch(&pool.pending, 1, __ATOMIC_RELEASE) == 0) pthread_cond_signal(&pool.done);
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
    __atomic_store_n(&pool.pending, pool.started, __ATOMIC_RELAXED);
    __atomic_add_fetch(&pool.generation, 1, __ATOMIC_RELEASE);
    pthread_cond_broadcast(&pool.wake);
    pthread_mutex_unlock(&pool.lock);
    in_worker = 1;
    fn(0, pool.chunk < n ? pool.chunk : n, ctx);
    in_worker = 0;
    for (int i = 0; i < SPIN_ROUNDS && __atomic_load_n(&pool.pending, __ATOMIC_ACQUIRE) > 0; i++) cpu_relax();
    pthread_mutex_lock(&pool.lock);
    while (pool.pending > 0) pthread_cond_wait(&pool.done, &pool.lock);
    pthread_mutex_unlock(&pool.lock);
    pthread_mutex_unlock(&pool.busy);
}
