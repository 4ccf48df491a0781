/* threadpool.c -- a small fixed pool of worker threads for large kernels.
 *
 * jn_parallel_for splits [0, n) into one contiguous chunk per thread.  The
 * chunks are claimed, not assigned: the caller and the workers take chunks
 * from one atomic ticket until none is left, and the caller waits only for
 * chunks someone claimed.  Chunk boundaries depend only on n and the
 * thread count, never on who runs them, so results are the same whatever
 * the timing.  Size comes from JANUS_NUM_THREADS (default: all online
 * cores); a value above 4x the cores runs the cores, with one warning:
 * oversubscribed workers wait for each other (65 threads on 2 cores made
 * graphs 3x slower), while a little oversubscription reproduces another
 * machine's chunking.  Nested calls, and calls while another thread holds
 * the pool, run inline, so kernels never deadlock.
 *
 * On a shared machine a worker may not run for a whole time slice.  With
 * chunks assigned per thread the caller would wait for it (two threads were
 * then several times slower than one); here the caller, once its own chunk
 * is done, gives a worker as long as that chunk took to claim the next one
 * and then takes it itself -- patient enough that a worker merely waking up
 * still gets its share of short kernels, never more than about twice the
 * one-thread time when no worker comes.
 *
 * Eager training issues many short parallel kernels back to back.  Workers
 * spin briefly (SPIN_ROUNDS pauses) on the ticket before they sleep, as
 * OpenMP runtimes do, and read a new job without taking the lock: the
 * ticket packs the job's generation (high 32 bits) with the number of
 * chunks left (low 32), the caller publishes the job's fields before the
 * ticket, and a claim is a compare-and-swap on (generation, left > 0) --
 * which can only succeed while that job is unfinished, so the fields a
 * worker read before it are that job's.  The mutex only guards sleeping.
 */
#include "jn_runtime.h"
#include "jn_settings.h"
#include "jn_thread.h"

#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#define MAX_THREADS 64
#define SPIN_ROUNDS 4000

static inline void cpu_relax(void) {
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#endif
}

static struct {
    pthread_mutex_t lock;   /* guards sleeping: wake (workers), done (the caller) */
    pthread_cond_t wake, done;
    pthread_mutex_t busy;   /* held by the thread currently using the pool */
    pthread_once_t once;
    int nthreads;           /* including the caller (atomic reads by workers) */
    int started;            /* workers created */
    uint64_t ticket;        /* atomic: generation << 32 | chunks left to claim */
    int64_t finished;       /* atomic: chunks of the current job done */
    int sleepers;           /* atomic: workers asleep (or going to sleep) on wake */
    int waiting;            /* atomic: the caller is asleep (or going to sleep) on done */
    /* the current job, written by the caller before it publishes the ticket */
    jn_range_fn fn;
    void *ctx;
    int64_t n, chunk, nchunks;
} pool = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, PTHREAD_COND_INITIALIZER,
          PTHREAD_MUTEX_INITIALIZER, PTHREAD_ONCE_INIT, 0, 0, 0, 0, 0, 0, NULL, NULL, 0, 0, 0};

#define LD(x) __atomic_load_n(&(x), __ATOMIC_SEQ_CST)
#define ST(x, v) __atomic_store_n(&(x), (v), __ATOMIC_SEQ_CST)
#define RLX(x) __atomic_load_n(&(x), __ATOMIC_RELAXED)
#define RLX_ST(x, v) __atomic_store_n(&(x), (v), __ATOMIC_RELAXED)

static _Thread_local int in_worker;

/* Sized at the first parallel kernel, where no jn_status can go back: a
 * bad value was already refused by `import janus` / the janus command;
 * here it is one stderr line and the default. */
static void init_size(void) {
    long cores = sysconf(_SC_NPROCESSORS_ONLN);
    if (cores < 1) cores = 1;
    int64_t asked = jn_setting_int_lazy(JN_S_NUM_THREADS), n = asked ? asked : cores; /* asked 0: unset */
    if (asked > 4 * (int64_t)cores) {
        fprintf(stderr, "janus: JANUS_NUM_THREADS=%lld is more than 4x this machine's %ld cores: using %ld threads "
                "(workers beyond the cores wait for each other)\n", (long long)asked, cores, cores);
        n = cores;
    }
    if (n > MAX_THREADS) {
        if (n == asked)
            fprintf(stderr, "janus: JANUS_NUM_THREADS=%lld is above the thread pool's %d: using %d threads\n",
                    (long long)asked, MAX_THREADS, MAX_THREADS);
        n = MAX_THREADS;
    }
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
    RLX_ST(pool.nthreads, n); /* workers beyond n simply stay idle */
    pthread_mutex_unlock(&pool.busy);
}

typedef struct {
    jn_range_fn fn;
    void *ctx;
    int64_t n, chunk, nchunks;
} job;

/* One chunk of job gen: its index, or -1 when none is left (or gen is over). */
static int64_t claim(uint32_t gen, int64_t nchunks) {
    uint64_t t = LD(pool.ticket);
    while ((uint32_t)(t >> 32) == gen && (t & 0xffffffffu) > 0)
        if (__atomic_compare_exchange_n(&pool.ticket, &t, t - 1, 0, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST))
            return nchunks - (int64_t)(t & 0xffffffffu);
    return -1;
}

static void run(const job *j, int64_t i) {
    int64_t b = i * j->chunk, e = b + j->chunk < j->n ? b + j->chunk : j->n;
    j->fn(b, e, j->ctx);
    if (__atomic_add_fetch(&pool.finished, 1, __ATOMIC_SEQ_CST) == j->nchunks && LD(pool.waiting)) {
        pthread_mutex_lock(&pool.lock); /* the caller is in, or about to enter, its wait */
        pthread_cond_signal(&pool.done);
        pthread_mutex_unlock(&pool.lock);
    }
}

static void *worker(void *arg) {
    int me = (int)(intptr_t)arg;
    uint32_t seen = 0;
    in_worker = 1;
    for (;;) {
        uint64_t t = LD(pool.ticket);
        for (int i = 0; i < SPIN_ROUNDS && (uint32_t)(t >> 32) == seen; i++) {
            cpu_relax();
            t = LD(pool.ticket);
        }
        if ((uint32_t)(t >> 32) == seen) {
            pthread_mutex_lock(&pool.lock);
            __atomic_add_fetch(&pool.sleepers, 1, __ATOMIC_SEQ_CST);
            while ((uint32_t)((t = LD(pool.ticket)) >> 32) == seen) pthread_cond_wait(&pool.wake, &pool.lock);
            __atomic_sub_fetch(&pool.sleepers, 1, __ATOMIC_SEQ_CST);
            pthread_mutex_unlock(&pool.lock);
        }
        seen = (uint32_t)(t >> 32);
        if (me >= RLX(pool.nthreads)) continue;
        job j = {RLX(pool.fn), RLX(pool.ctx), RLX(pool.n), RLX(pool.chunk), RLX(pool.nchunks)};
        for (int64_t i; (i = claim(seen, j.nchunks)) >= 0;) run(&j, i);
    }
    return NULL;
}

double jn_rt_seconds(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

int jn_rt_thread_start(pthread_t *th, void *(*fn)(void *), void *arg) {
    sigset_t all, prev;
    sigfillset(&all);
    /* faults stay deliverable (they go to the faulting thread anyway) */
    sigdelset(&all, SIGSEGV), sigdelset(&all, SIGBUS), sigdelset(&all, SIGFPE), sigdelset(&all, SIGILL);
    pthread_sigmask(SIG_BLOCK, &all, &prev);
    int rc = pthread_create(th, NULL, fn, arg);
    pthread_sigmask(SIG_SETMASK, &prev, NULL);
    return rc;
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
    while (pool.started < pool.nthreads - 1) {
        pthread_t th;
        if (jn_rt_thread_start(&th, worker, (void *)(intptr_t)(pool.started + 1)) != 0) break;
        pthread_detach(th);
        pool.started++;
    }
    if (nt > pool.started + 1) nt = pool.started + 1;
    job j = {fn, ctx, n, (n + nt - 1) / nt, 0};
    j.nchunks = (n + j.chunk - 1) / j.chunk;
    RLX_ST(pool.fn, fn);
    RLX_ST(pool.ctx, ctx);
    RLX_ST(pool.n, n);
    RLX_ST(pool.chunk, j.chunk);
    RLX_ST(pool.nchunks, j.nchunks);
    ST(pool.finished, 0);
    uint32_t gen = (uint32_t)(LD(pool.ticket) >> 32) + 1;
    ST(pool.ticket, (uint64_t)gen << 32 | (uint64_t)j.nchunks); /* publishes the fields above */
    if (LD(pool.sleepers)) {
        pthread_mutex_lock(&pool.lock);
        pthread_cond_broadcast(&pool.wake);
        pthread_mutex_unlock(&pool.lock);
    }
    in_worker = 1;
    int64_t i = claim(gen, j.nchunks);
    if (i >= 0) {
        double t0 = jn_rt_seconds();
        run(&j, i);
        double patience = jn_rt_seconds() - t0; /* what one chunk takes */
        for (;;) { /* chunks left: give a worker `patience` to take them before taking one back */
            double t1 = jn_rt_seconds();
            while ((LD(pool.ticket) & 0xffffffffu) > 0 && jn_rt_seconds() - t1 < patience) cpu_relax();
            if ((i = claim(gen, j.nchunks)) < 0) break;
            run(&j, i);
        }
    }
    in_worker = 0;
    for (int k = 0; k < SPIN_ROUNDS && LD(pool.finished) < j.nchunks; k++) cpu_relax();
    if (LD(pool.finished) < j.nchunks) {
        pthread_mutex_lock(&pool.lock);
        ST(pool.waiting, 1);
        while (LD(pool.finished) < j.nchunks) pthread_cond_wait(&pool.done, &pool.lock);
        ST(pool.waiting, 0);
        pthread_mutex_unlock(&pool.lock);
    }
    pthread_mutex_unlock(&pool.busy);
}
