/* dist.c -- the process group: collectives on Open MPI and NCCL (jn_dist.h).
 *
 * Both libraries are dlopen'ed at init, never linked, so janus builds and a
 * single process runs without them; a missing one is an error naming the
 * package and the setting that points elsewhere.  Open MPI's handles
 * (MPI_COMM_WORLD, MPI_FLOAT, MPI_SUM, ...) are addresses of its exported
 * ompi_mpi_* objects, so they are looked up by name like the functions and
 * no mpi.h is needed to build.  NCCL's few types are declared here by their
 * documented ABI (an opaque comm pointer, a 128-byte unique id, int enums).
 *
 * The one piece of process-global state is the process group itself (`pg`),
 * which torch.distributed's API implies.  A watchdog thread bounds every
 * collective by JANUS_DIST_TIMEOUT: blocking MPI calls keep Open MPI's own
 * algorithms (the bandwidth of MPI_Allreduce itself), and a collective that
 * outlives the limit aborts the job instead of hanging it.  While a
 * collective waits, the front end's wait hooks (jn_rt_dist_set_wait_hooks:
 * Python's GIL) are let go, so the process's other threads run on.
 */
#include "jn_dist.h"

#include "jn_backend.h"
#include "jn_settings.h"
#include "jn_thread.h"

#include <arpa/inet.h>
#include <dlfcn.h>
#include <errno.h>
#include <limits.h>
#include <netdb.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

typedef void *MPI_Handle; /* every Open MPI handle is a pointer */
#define MPI_IN_PLACE_ ((void *)1)
#define MPI_THREAD_SINGLE_ 0
#define MPI_THREAD_SERIALIZED_ 2

typedef struct {
    char internal[128];
} nccl_id;

static const char *const OP_NAMES[JN_DIST_NOPS] = {"SUM", "AVG", "PRODUCT", "MIN", "MAX", "BAND", "BOR", "BXOR"};

static struct {
    int up;
    pid_t pid; /* the process that started MPI (a forked child never finalizes it) */
    jn_dist_backend backend;
    int rank, world;
    double timeout;
    /* MPI */
    void *mpi_lib;
    MPI_Handle comm, errors_return;
    /* MPI's thread level (JANUS_DIST_MPI_THREADS): any_thread 0 means only
     * mpi_thread, the one that started it, may call MPI */
    int any_thread;
    pthread_t mpi_thread;
    MPI_Handle dtype[JN_NDTYPES]; /* NULL: no MPI type (half floats, bool maps to uint8) */
    MPI_Handle rop[JN_DIST_NOPS];
    int (*Initialized)(int *);
    int (*Finalized)(int *);
    int (*Init_thread)(int *, char ***, int, int *);
    int (*Query_thread)(int *);
    int (*Finalize)(void);
    int (*Comm_dup)(MPI_Handle, MPI_Handle *);
    int (*Comm_set_errhandler)(MPI_Handle, MPI_Handle);
    int (*Comm_rank)(MPI_Handle, int *);
    int (*Comm_size)(MPI_Handle, int *);
    int (*Barrier)(MPI_Handle);
    int (*Allreduce)(const void *, void *, int, MPI_Handle, MPI_Handle, MPI_Handle);
    int (*Bcast)(void *, int, MPI_Handle, int, MPI_Handle);
    int (*Allgather)(const void *, int, MPI_Handle, void *, int, MPI_Handle, MPI_Handle);
    int (*Reduce_scatter_block)(const void *, void *, int, MPI_Handle, MPI_Handle, MPI_Handle);
    int (*Abort)(MPI_Handle, int);
    int (*Error_string)(int, char *, int *);
    /* NCCL */
    void *nccl_lib;
    void *nccl_comm;
    int (*nGetUniqueId)(nccl_id *);
    int (*nCommInitRank)(void **, int, nccl_id, int);
    int (*nCommDestroy)(void *);
    int (*nAllReduce)(const void *, void *, size_t, int, int, void *, void *);
    int (*nBroadcast)(const void *, void *, size_t, int, int, void *, void *);
    int (*nAllGather)(const void *, void *, size_t, int, void *, void *);
    int (*nReduceScatter)(const void *, void *, size_t, int, int, void *, void *);
    const char *(*nGetErrorString)(int);
    /* watchdog */
    pthread_t dog;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int dog_up, stop;
    const char *in_call; /* the collective running now, NULL between (atomic: written by the calling thread) */
    long long seq;       /* collectives started so far (atomic, one writer: collectives are serialized) */
    int device_set, device; /* the nccl backend's GPU (jn_rt_dist_set_device), else the CUDA default */
    /* the front end's hooks around a wait (NULL: none) */
    void *(*leave)(void);
    void (*enter)(void *);
} pg = {.mu = PTHREAD_MUTEX_INITIALIZER, .cv = PTHREAD_COND_INITIALIZER};

/* what pg.leave returned for the wait this thread is in (serialized calls:
 * one per thread) */
static __thread void *wait_token;

void jn_rt_dist_set_device(int ordinal) {
    pg.device_set = ordinal >= 0;
    pg.device = ordinal;
}

void jn_rt_dist_set_wait_hooks(void *(*leave)(void), void (*enter)(void *)) {
    pg.leave = leave;
    pg.enter = enter;
}

static jn_status need_up(const char *what) {
    if (!pg.up)
        return jn_error(JN_ERR_RUNTIME, "%s: the default process group is not initialized: call "
                        "janus.distributed.init_process_group(backend=\"mpi\") first", what);
    return JN_OK;
}

/* a call into MPI from this thread is allowed at MPI's thread level */
static jn_status mpi_thread_ok(const char *what) {
    if (pg.any_thread || pthread_equal(pthread_self(), pg.mpi_thread)) return JN_OK;
    return jn_error(JN_ERR_RUNTIME, "%s: called from a thread other than the one that called init_process_group, "
                    "and MPI runs at MPI_THREAD_SINGLE (JANUS_DIST_MPI_THREADS=single, the default): set "
                    "JANUS_DIST_MPI_THREADS=serialized before init_process_group to call collectives from any "
                    "thread, one at a time", what);
}

int jn_rt_dist_any_thread(void) { return !pg.mpi_lib || pg.any_thread; }

/* ---------------------------------------------------------------- watchdog */
/* The watchdog polls instead of being woken per collective: a wake-up (a
 * futex call and a context switch, twice per call) cost more than a small
 * all-reduce on two shared cores.  A collective only stores its name and
 * bumps a counter (atomics: no lock, no clock read on the calling thread);
 * the watchdog looks every timeout / 8 (at most 1 s, at least 10 ms) and
 * times a collective from the first poll that saw it running, so a hung
 * collective ends the job between timeout and timeout + 2 periods (1.25 x
 * timeout) after it started. */
static void *watchdog(void *arg) {
    (void)arg;
    long long seen = -1; /* the collective the polls have seen running, and since when */
    double since = 0;
    pthread_mutex_lock(&pg.mu);
    while (!pg.stop) {
        double period = pg.timeout / 8 > 1 ? 1 : pg.timeout / 8 < 0.01 ? 0.01 : pg.timeout / 8;
        struct timespec until;
        clock_gettime(CLOCK_REALTIME, &until); /* pg.cv's clock; the timeout itself is measured on CLOCK_MONOTONIC */
        until.tv_sec += (time_t)period;
        until.tv_nsec += (long)((period - (double)(time_t)period) * 1e9);
        if (until.tv_nsec >= 1000000000L) until.tv_sec++, until.tv_nsec -= 1000000000L;
        pthread_cond_timedwait(&pg.cv, &pg.mu, &until);
        const char *what = __atomic_load_n(&pg.in_call, __ATOMIC_ACQUIRE);
        long long seq = __atomic_load_n(&pg.seq, __ATOMIC_ACQUIRE);
        if (pg.stop || !what) continue;
        if (seq != seen) { /* a collective started since the last poll: time it from now */
            seen = seq, since = jn_rt_seconds();
            continue;
        }
        if (jn_rt_seconds() - since >= pg.timeout) {
            char why[256];
            snprintf(why, sizeof why, "%s (collective #%lld) got no answer from the other ranks within %g s "
                     "(JANUS_DIST_TIMEOUT): a rank is lost or runs different collectives", what, seq, pg.timeout);
            pthread_mutex_unlock(&pg.mu);
            jn_rt_dist_abort(why);
            pthread_mutex_lock(&pg.mu);
        }
    }
    pthread_mutex_unlock(&pg.mu);
    return NULL;
}

static void watch_begin(const char *what) {
    if (pg.leave) wait_token = pg.leave();
    /* one writer (collectives are serialized): a plain increment, published before the name */
    __atomic_store_n(&pg.seq, __atomic_load_n(&pg.seq, __ATOMIC_RELAXED) + 1, __ATOMIC_RELEASE);
    __atomic_store_n(&pg.in_call, what, __ATOMIC_RELEASE);
}

static void watch_end(void) {
    __atomic_store_n(&pg.in_call, (const char *)NULL, __ATOMIC_RELEASE);
    void *tok = wait_token;
    wait_token = NULL;
    if (pg.enter && tok) pg.enter(tok);
}

/* --------------------------------------------------------------------- MPI */
static jn_status mpi_err(int rc, const char *what) {
    char msg[512] = "";
    int n = 0;
    if (pg.Error_string) pg.Error_string(rc, msg, &n);
    return jn_error(JN_ERR_RUNTIME, "%s failed on rank %d: MPI error %d (%s)", what, pg.rank, rc, msg);
}

static jn_status load_mpi(void) {
    if (pg.mpi_lib) return JN_OK;
    const char *path = NULL;
    jn_status s = jn_setting_str(JN_S_MPI_LIBRARY, &path);
    if (s) return s;
    /* RTLD_GLOBAL: Open MPI's components (plugins it dlopens) resolve libmpi's symbols globally */
    void *h = dlopen(path, RTLD_NOW | RTLD_GLOBAL);
    if (!h)
        return jn_error(JN_ERR_UNSUPPORTED, "the mpi backend needs Open MPI, and %s could not be loaded (%s): "
                        "install it (apt-get install openmpi-bin libopenmpi-dev) or set JANUS_MPI_LIBRARY to "
                        "your libmpi.so", path, dlerror());
    struct {
        void *slot;
        const char *name;
    } fns[] = {
        {&pg.Initialized, "MPI_Initialized"}, {&pg.Finalized, "MPI_Finalized"},
        {&pg.Init_thread, "MPI_Init_thread"}, {&pg.Query_thread, "MPI_Query_thread"},
        {&pg.Finalize, "MPI_Finalize"},
        {&pg.Comm_dup, "MPI_Comm_dup"}, {&pg.Comm_set_errhandler, "MPI_Comm_set_errhandler"},
        {&pg.Comm_rank, "MPI_Comm_rank"}, {&pg.Comm_size, "MPI_Comm_size"},
        {&pg.Barrier, "MPI_Barrier"}, {&pg.Allreduce, "MPI_Allreduce"}, {&pg.Bcast, "MPI_Bcast"},
        {&pg.Allgather, "MPI_Allgather"}, {&pg.Reduce_scatter_block, "MPI_Reduce_scatter_block"},
        {&pg.Abort, "MPI_Abort"}, {&pg.Error_string, "MPI_Error_string"},
    };
    for (size_t i = 0; i < sizeof fns / sizeof fns[0]; i++)
        if (!(*(void **)fns[i].slot = dlsym(h, fns[i].name))) {
            dlclose(h);
            return jn_error(JN_ERR_UNSUPPORTED, "%s is not an Open MPI library (no %s): set JANUS_MPI_LIBRARY to "
                            "Open MPI's libmpi.so (apt-get install openmpi-bin libopenmpi-dev)", path, fns[i].name);
        }
    /* Open MPI's predefined handles are its ompi_mpi_* objects */
    const char *types[JN_NDTYPES] = {0};
    types[JN_F32] = "ompi_mpi_float", types[JN_F64] = "ompi_mpi_double", types[JN_I64] = "ompi_mpi_int64_t";
    types[JN_I32] = "ompi_mpi_int32_t", types[JN_U8] = "ompi_mpi_uint8_t", types[JN_BOOL] = "ompi_mpi_uint8_t";
    for (int t = 0; t < JN_NDTYPES; t++) pg.dtype[t] = types[t] ? dlsym(h, types[t]) : NULL;
    const char *ops[JN_DIST_NOPS] = {"ompi_mpi_op_sum", "ompi_mpi_op_sum", "ompi_mpi_op_prod", "ompi_mpi_op_min",
                                     "ompi_mpi_op_max", "ompi_mpi_op_band", "ompi_mpi_op_bor", "ompi_mpi_op_bxor"};
    for (int o = 0; o < JN_DIST_NOPS; o++) pg.rop[o] = dlsym(h, ops[o]);
    MPI_Handle world = dlsym(h, "ompi_mpi_comm_world");
    pg.errors_return = dlsym(h, "ompi_mpi_errors_return");
    if (!world || !pg.errors_return || !pg.dtype[JN_F32] || !pg.rop[JN_DIST_SUM]) {
        dlclose(h);
        return jn_error(JN_ERR_UNSUPPORTED, "%s is an MPI other than Open MPI (no ompi_mpi_comm_world): janus's "
                        "mpi backend uses Open MPI (apt-get install openmpi-bin libopenmpi-dev)", path);
    }
    pg.comm = world;
    pg.mpi_lib = h;
    return JN_OK;
}

/* The thread level.  By default only the thread that started MPI calls it
 * (janus's own threads -- the watchdog, the kernel pool, the recorder's
 * writer -- never do, so one thread is all MPI ever sees) and MPI starts at
 * MPI_THREAD_SINGLE: at any higher level Open MPI 4.1 takes a lock in every
 * call, ~5% of a 4 KB all-reduce (benchmarks/results/dist.md).  Collectives
 * from other threads (DDP's communication thread, a user's thread) need
 * MPI_THREAD_SERIALIZED and, so that they cannot interleave with another
 * library's calls on MPI_COMM_WORLD in a different order on each rank, a
 * communicator of janus's own.  An MPI started before janus keeps its level
 * (MPI_Query_thread says which). */
static jn_status start_mpi(void) {
    int inited = 0, fin = 0, provided = 0, rc, async = 0;
    const char *level = NULL;
    jn_status s = jn_setting_str(JN_S_DIST_MPI_THREADS, &level);
    if (!s) s = jn_setting_bool(JN_S_DDP_ASYNC_REDUCE, &async);
    if (s) return s;
    int want = async || !strcmp(level, "serialized") ? MPI_THREAD_SERIALIZED_ : MPI_THREAD_SINGLE_;
    pg.Initialized(&inited);
    pg.Finalized(&fin);
    if (fin)
        return jn_error(JN_ERR_RUNTIME, "init_process_group: MPI was finalized in this process and cannot start "
                        "again: keep one process group for the life of the process");
    if (!inited) {
        /* Open MPI starts its own threads here: they inherit these signals
         * blocked, so mpirun's SIGTERM or a ^C reaches the main thread
         * (jn_thread.h says why) */
        sigset_t user, prev;
        sigemptyset(&user);
        sigaddset(&user, SIGINT), sigaddset(&user, SIGTERM), sigaddset(&user, SIGHUP), sigaddset(&user, SIGQUIT);
        pthread_sigmask(SIG_BLOCK, &user, &prev);
        rc = pg.Init_thread(NULL, NULL, want, &provided);
        pthread_sigmask(SIG_SETMASK, &prev, NULL);
        if (rc) return mpi_err(rc, "MPI_Init_thread");
    }
    if (inited && (rc = pg.Query_thread(&provided))) return mpi_err(rc, "MPI_Query_thread");
    pg.pid = getpid();
    pg.mpi_thread = pthread_self();
    pg.any_thread = provided >= MPI_THREAD_SERIALIZED_;
    if (pg.any_thread) { /* errors come back as codes, on our communicator or on the world */
        MPI_Handle dup = NULL;
        if ((rc = pg.Comm_dup(pg.comm, &dup))) return mpi_err(rc, "MPI_Comm_dup");
        pg.comm = dup;
    }
    pg.Comm_set_errhandler(pg.comm, pg.errors_return);
    pg.Comm_rank(pg.comm, &pg.rank);
    pg.Comm_size(pg.comm, &pg.world);
    return JN_OK;
}

/* elements per MPI call: counts are int */
#define CHUNK ((int64_t)1 << 30)

static jn_status mpi_check(jn_tensor *t, const char *what, jn_dist_op op) {
    jn_status s = mpi_thread_ok(what);
    if (s) return s;
    if (!t->storage || t->storage->device != JN_CPU)
        return jn_error(JN_ERR_VALUE, "%s: the mpi backend takes CPU tensors; a CUDA tensor needs "
                        "init_process_group(backend=\"nccl\")", what);
    if (!jn_is_contiguous(t)) return jn_error(JN_ERR_VALUE, "%s: the tensor is not contiguous: pass t.contiguous()", what);
    if (!pg.dtype[t->dtype])
        return jn_error(JN_ERR_TYPE, "%s: dtype %s has no MPI type: cast to float32 first (or use the nccl backend)",
                        what, jn_dtype_names[t->dtype]);
    if ((int)op >= 0) {
        if (op >= JN_DIST_NOPS || !pg.rop[op]) return jn_error(JN_ERR_VALUE, "%s: unknown ReduceOp %d", what, (int)op);
        if (op == JN_DIST_AVG && !jn_dtype_is_float(t->dtype))
            return jn_error(JN_ERR_TYPE, "%s: ReduceOp.AVG needs a floating tensor (got %s): use SUM", what,
                            jn_dtype_names[t->dtype]);
        if (op >= JN_DIST_BAND && jn_dtype_is_float(t->dtype))
            return jn_error(JN_ERR_TYPE, "%s: ReduceOp.%s needs an integer tensor (got %s)", what, OP_NAMES[op],
                            jn_dtype_names[t->dtype]);
    }
    return JN_OK;
}

/* bool holds 0 / 1: SUM is "any" (MAX) and PRODUCT "all" (MIN), as
 * PyTorch's NCCL backend does, so no rank's sum of trues overflows a bool */
static jn_dist_op bool_op(jn_dtype d, jn_dist_op op) {
    if (d != JN_BOOL) return op;
    return op == JN_DIST_SUM ? JN_DIST_MAX : op == JN_DIST_PRODUCT ? JN_DIST_MIN : op;
}

static void divide(jn_tensor *t, int world) {
    int64_t n = jn_numel(t);
    if (t->dtype == JN_F32) {
        float *p = (float *)jn_data(t);
        for (int64_t i = 0; i < n; i++) p[i] /= (float)world;
    } else {
        double *p = (double *)jn_data(t);
        for (int64_t i = 0; i < n; i++) p[i] /= (double)world;
    }
}

/* -------------------------------------------------------------------- NCCL */
enum { NCCL_SUM = 0, NCCL_PROD = 1, NCCL_MAX = 2, NCCL_MIN = 3, NCCL_AVG = 4 };

static int nccl_type(jn_dtype d) {
    switch (d) { /* ncclDataType_t */
    case JN_U8: case JN_BOOL: return 1;
    case JN_I32: return 2;
    case JN_I64: return 4;
    case JN_F16: return 6;
    case JN_F32: return 7;
    case JN_F64: return 8;
    case JN_BF16: return 9;
    default: return -1;
    }
}

static jn_status load_nccl(void) {
    if (pg.nccl_lib) return JN_OK;
    if (!jn_cuda_built())
        return jn_error(JN_ERR_UNSUPPORTED, "the nccl backend needs janus built with CUDA (this build has only the "
                        "CPU backend): use backend=\"mpi\", or rebuild with the CUDA toolkit installed");
    const char *path = NULL;
    jn_status s = jn_setting_str(JN_S_NCCL_LIBRARY, &path);
    if (s) return s;
    void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!h)
        return jn_error(JN_ERR_UNSUPPORTED, "the nccl backend needs NCCL, and %s could not be loaded (%s): install "
                        "NCCL (the CUDA toolkit's libnccl2, or pip's nvidia-nccl-cu12) or set JANUS_NCCL_LIBRARY",
                        path, dlerror());
    struct {
        void *slot;
        const char *name;
    } fns[] = {
        {&pg.nGetUniqueId, "ncclGetUniqueId"}, {&pg.nCommInitRank, "ncclCommInitRank"},
        {&pg.nCommDestroy, "ncclCommDestroy"}, {&pg.nAllReduce, "ncclAllReduce"}, {&pg.nBroadcast, "ncclBroadcast"},
        {&pg.nAllGather, "ncclAllGather"}, {&pg.nReduceScatter, "ncclReduceScatter"},
        {&pg.nGetErrorString, "ncclGetErrorString"},
    };
    for (size_t i = 0; i < sizeof fns / sizeof fns[0]; i++)
        if (!(*(void **)fns[i].slot = dlsym(h, fns[i].name))) {
            dlclose(h);
            return jn_error(JN_ERR_UNSUPPORTED, "%s lacks %s (NCCL 2.10 or newer is needed): set JANUS_NCCL_LIBRARY",
                            path, fns[i].name);
        }
    pg.nccl_lib = h;
    return JN_OK;
}

static jn_status nccl_err(int rc, const char *what) {
    return jn_error(JN_ERR_RUNTIME, "%s failed on rank %d: NCCL error %d (%s)", what, pg.rank, rc,
                    pg.nGetErrorString ? pg.nGetErrorString(rc) : "?");
}

/* The NCCL unique id from rank 0 to the others over TCP (no mpirun): rank 0
 * listens at addr:port and sends the 128 bytes to each peer that connects. */
static jn_status tcp_rendezvous(nccl_id *id, const char *addr, int port) {
    if (!addr || !*addr || port <= 0)
        return jn_error(JN_ERR_VALUE, "init_process_group(backend=\"nccl\") without mpirun needs MASTER_ADDR and "
                        "MASTER_PORT (rank 0's host and a free port) in the environment");
    struct addrinfo hints = {.ai_family = AF_INET, .ai_socktype = SOCK_STREAM}, *ai = NULL;
    char ps[16];
    snprintf(ps, sizeof ps, "%d", port);
    if (getaddrinfo(pg.rank == 0 ? NULL : addr, ps, &hints, &ai) || !ai)
        return jn_error(JN_ERR_VALUE, "MASTER_ADDR=%s could not be resolved: set it to rank 0's host", addr);
    jn_status st = JN_OK;
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    if (pg.rank == 0) {
        int one = 1;
        setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
        struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port), .sin_addr = {INADDR_ANY}};
        if (bind(fd, (struct sockaddr *)&sa, sizeof sa) || listen(fd, pg.world)) {
            st = jn_error(JN_ERR_IO, "rank 0 could not listen at MASTER_PORT=%d (%s): choose a free port", port,
                          strerror(errno));
        } else {
            for (int peer = 1; peer < pg.world && !st; peer++) {
                int c = accept(fd, NULL, NULL);
                if (c < 0 || write(c, id, sizeof *id) != (ssize_t)sizeof *id)
                    st = jn_error(JN_ERR_IO, "rank 0: the NCCL rendezvous lost a peer (%s)", strerror(errno));
                if (c >= 0) close(c);
            }
        }
    } else {
        int ok = 0;
        for (int tries = 0; tries < (int)(pg.timeout * 10) && !ok; tries++) {
            ok = connect(fd, ai->ai_addr, ai->ai_addrlen) == 0;
            if (!ok) {
                close(fd);
                fd = socket(AF_INET, SOCK_STREAM, 0);
                usleep(100000);
            }
        }
        size_t got = 0;
        while (ok && got < sizeof *id) {
            ssize_t r = read(fd, (char *)id + got, sizeof *id - got);
            if (r <= 0) break;
            got += (size_t)r;
        }
        if (got != sizeof *id)
            st = jn_error(JN_ERR_IO, "rank %d: no NCCL id from rank 0 at %s:%d within %g s (JANUS_DIST_TIMEOUT): "
                          "is rank 0 running with the same MASTER_ADDR/MASTER_PORT?", pg.rank, addr, port, pg.timeout);
    }
    close(fd);
    freeaddrinfo(ai);
    return st;
}

static jn_status start_nccl(const char *addr, int port) {
    jn_status s = load_nccl();
    /* the rank's GPU first: ncclCommInitRank binds the communicator to the current device */
    if (!s && pg.device_set && (s = jn_cuda_set_device(pg.device))) {
        char why[512];
        snprintf(why, sizeof why, "%s", jn_errmsg()); /* jn_error writes the buffer it would read */
        return jn_error(s, "init_process_group(backend=\"nccl\") on rank %d (LOCAL_RANK or device_id %d): %s",
                        pg.rank, pg.device, why);
    }
    if (!s) s = jn_cuda_init();
    if (s) return s;
    nccl_id id;
    memset(&id, 0, sizeof id);
    int rc;
    if (pg.rank == 0 && (rc = pg.nGetUniqueId(&id))) return nccl_err(rc, "ncclGetUniqueId");
    if (pg.world > 1) {
        if (pg.mpi_lib) {
            watch_begin("the NCCL id broadcast");
            rc = pg.Bcast(&id, (int)sizeof id, pg.dtype[JN_U8], 0, pg.comm);
            watch_end();
            if (rc) return mpi_err(rc, "the NCCL id broadcast");
        } else if ((s = tcp_rendezvous(&id, addr, port))) {
            return s;
        }
    }
    if ((rc = pg.nCommInitRank(&pg.nccl_comm, pg.world, id, pg.rank))) return nccl_err(rc, "ncclCommInitRank");
    return JN_OK;
}

static jn_status nccl_check(jn_tensor *t, const char *what, jn_dist_op op) {
    if (!t->storage || t->storage->device == JN_CPU)
        return jn_error(JN_ERR_VALUE, "%s: the nccl backend takes CUDA tensors: move it with .cuda(), or use "
                        "backend=\"mpi\" for CPU tensors", what);
    if (!jn_is_contiguous(t)) return jn_error(JN_ERR_VALUE, "%s: the tensor is not contiguous: pass t.contiguous()", what);
    if (nccl_type(t->dtype) < 0) return jn_error(JN_ERR_TYPE, "%s: NCCL has no %s type", what, jn_dtype_names[t->dtype]);
    if ((int)op >= JN_DIST_BAND)
        return jn_error(JN_ERR_UNSUPPORTED, "%s: NCCL has no ReduceOp.%s", what, OP_NAMES[op]);
    return JN_OK;
}

static int nccl_op(jn_dist_op op) {
    switch (op) {
    case JN_DIST_PRODUCT: return NCCL_PROD;
    case JN_DIST_MIN: return NCCL_MIN;
    case JN_DIST_MAX: return NCCL_MAX;
    case JN_DIST_AVG: return NCCL_AVG;
    default: return NCCL_SUM;
    }
}

/* a NCCL call completes when the stream does: the watchdog covers both */
static jn_status nccl_done(int rc, const char *what) {
    if (rc) {
        watch_end();
        return nccl_err(rc, what);
    }
    jn_status s = jn_cuda_synchronize();
    watch_end();
    return s;
}

/* ------------------------------------------------------------------ the API */
jn_status jn_rt_dist_init(jn_dist_backend backend, int rank, int world_size, const char *master_addr,
                          int master_port, double timeout_s) {
    if (pg.up)
        return jn_error(JN_ERR_RUNTIME, "init_process_group: the default process group is already initialized "
                        "(call destroy_process_group first)");
    jn_status s = jn_setting_float(JN_S_DIST_TIMEOUT, &pg.timeout);
    if (s) return s;
    if (timeout_s > 0) pg.timeout = timeout_s;
    /* nccl outside mpirun (torchrun-style variables) leaves MPI alone: each
     * process would be a world of its own (an MPI singleton) */
    if (backend == JN_DIST_NCCL && !getenv("OMPI_COMM_WORLD_SIZE"))
        s = jn_error(JN_ERR_UNSUPPORTED, "not under mpirun");
    else
        s = load_mpi();
    if (s && backend == JN_DIST_MPI) return s;
    if (s) { /* nccl without MPI: the launcher's variables say who we are */
        if (rank < 0 || world_size <= 0)
            return jn_error(JN_ERR_VALUE, "init_process_group(backend=\"nccl\") without MPI needs RANK and WORLD_SIZE "
                            "(torchrun-style variables) or the rank= and world_size= arguments");
        if (rank >= world_size)
            return jn_error(JN_ERR_VALUE, "init_process_group: rank %d is not below world_size %d: number the ranks "
                            "0..%d", rank, world_size, world_size - 1);
        pg.rank = rank, pg.world = world_size;
    } else if ((s = start_mpi())) {
        return s;
    }
    if (world_size > 0 && world_size != pg.world)
        return jn_error(JN_ERR_VALUE, "init_process_group: world_size is %d (WORLD_SIZE or the argument) but the "
                        "launcher started %d processes: launch %d ranks (mpirun -n %d) or fix WORLD_SIZE",
                        world_size, pg.world, world_size, world_size);
    if (rank >= 0 && rank != pg.rank)
        return jn_error(JN_ERR_VALUE, "init_process_group: rank is %d (RANK or the argument) but MPI numbers this "
                        "process %d: leave RANK unset under mpirun", rank, pg.rank);
    if (backend == JN_DIST_NCCL && (s = start_nccl(master_addr, master_port))) return s;
    if (!pg.dog_up) {
        pg.stop = 0;
        if (!pg.pid) pg.pid = getpid();
        if (jn_rt_thread_start(&pg.dog, watchdog, NULL))
            return jn_error(JN_ERR_RUNTIME, "init_process_group: could not start the watchdog thread");
        pg.dog_up = 1;
    }
    pg.backend = backend;
    pg.up = 1;
    return JN_OK;
}

int jn_rt_dist_initialized(void) { return pg.up; }
int jn_rt_dist_rank(void) { return pg.up ? pg.rank : -1; }
int jn_rt_dist_world_size(void) { return pg.up ? pg.world : -1; }
jn_dist_backend jn_rt_dist_backend(void) { return pg.backend; }

jn_status jn_rt_dist_barrier(void) {
    jn_status s = need_up("barrier");
    if (s) return s;
    if (!pg.mpi_lib) { /* nccl without MPI: a 1-element all_reduce is the barrier */
        jn_tensor *t = jn_tensor_zeros(JN_F32, 0, NULL), *d = t ? jn_rt_to_device(t, JN_CUDA, 1) : NULL;
        s = d ? jn_rt_dist_all_reduce(d, JN_DIST_SUM) : jn_error(JN_ERR_NOMEM, "barrier: out of memory");
        if (d) jn_tensor_decref(d);
        if (t) jn_tensor_decref(t);
        return s;
    }
    if ((s = mpi_thread_ok("barrier"))) return s;
    watch_begin("barrier");
    int rc = pg.Barrier(pg.comm);
    watch_end();
    return rc ? mpi_err(rc, "barrier") : JN_OK;
}

jn_status jn_rt_dist_all_reduce(jn_tensor *t, jn_dist_op op) {
    jn_status s = need_up("all_reduce");
    if (s) return s;
    int64_t n = jn_numel(t);
    op = bool_op(t->dtype, op);
    if (pg.backend == JN_DIST_NCCL) {
        if ((s = nccl_check(t, "all_reduce", op))) return s;
        watch_begin("all_reduce");
        return nccl_done(pg.nAllReduce(jn_data(t), jn_data(t), (size_t)n, nccl_type(t->dtype), nccl_op(op),
                                       pg.nccl_comm, jn_cuda_stream()),
                         "all_reduce");
    }
    if ((s = mpi_check(t, "all_reduce", op))) return s;
    size_t es = jn_dtype_size[t->dtype];
    watch_begin("all_reduce");
    int rc = 0;
    for (int64_t at = 0; at < n && !rc; at += CHUNK) {
        int c = (int)(n - at < CHUNK ? n - at : CHUNK);
        rc = pg.Allreduce(MPI_IN_PLACE_, jn_data(t) + at * (int64_t)es, c, pg.dtype[t->dtype], pg.rop[op], pg.comm);
    }
    watch_end();
    if (rc) return mpi_err(rc, "all_reduce");
    if (op == JN_DIST_AVG) divide(t, pg.world);
    return JN_OK;
}

jn_status jn_rt_dist_broadcast(jn_tensor *t, int src) {
    jn_status s = need_up("broadcast");
    if (s) return s;
    if (src < 0 || src >= pg.world)
        return jn_error(JN_ERR_VALUE, "broadcast: src=%d is not a rank of this world of %d", src, pg.world);
    int64_t n = jn_numel(t);
    if (pg.backend == JN_DIST_NCCL) {
        if ((s = nccl_check(t, "broadcast", (jn_dist_op)-1))) return s;
        watch_begin("broadcast");
        return nccl_done(pg.nBroadcast(jn_data(t), jn_data(t), (size_t)n, nccl_type(t->dtype), src, pg.nccl_comm,
                                       jn_cuda_stream()),
                         "broadcast");
    }
    if ((s = mpi_check(t, "broadcast", (jn_dist_op)-1))) return s;
    size_t es = jn_dtype_size[t->dtype];
    watch_begin("broadcast");
    int rc = 0;
    for (int64_t at = 0; at < n && !rc; at += CHUNK) {
        int c = (int)(n - at < CHUNK ? n - at : CHUNK);
        rc = pg.Bcast(jn_data(t) + at * (int64_t)es, c, pg.dtype[t->dtype], src, pg.comm);
    }
    watch_end();
    return rc ? mpi_err(rc, "broadcast") : JN_OK;
}

static jn_status same_kind(jn_tensor *out, jn_tensor *in, const char *what, int64_t want_out) {
    if (out->dtype != in->dtype)
        return jn_error(JN_ERR_TYPE, "%s: output dtype %s differs from the input's %s", what,
                        jn_dtype_names[out->dtype], jn_dtype_names[in->dtype]);
    if (jn_numel(out) != want_out)
        return jn_error(JN_ERR_SHAPE, "%s: the output holds %lld elements; it needs %lld (world size %d)", what,
                        (long long)jn_numel(out), (long long)want_out, pg.world);
    if (want_out > INT_MAX)
        return jn_error(JN_ERR_UNSUPPORTED, "%s: more than 2^31-1 elements in one call: split the tensor", what);
    return JN_OK;
}

jn_status jn_rt_dist_all_gather(jn_tensor *out, jn_tensor *in) {
    jn_status s = need_up("all_gather");
    if (s) return s;
    int64_t n = jn_numel(in);
    if ((s = same_kind(out, in, "all_gather", n * pg.world))) return s;
    if (pg.backend == JN_DIST_NCCL) {
        if ((s = nccl_check(in, "all_gather", (jn_dist_op)-1)) || (s = nccl_check(out, "all_gather", (jn_dist_op)-1)))
            return s;
        watch_begin("all_gather");
        return nccl_done(pg.nAllGather(jn_data(in), jn_data(out), (size_t)n, nccl_type(in->dtype), pg.nccl_comm,
                                       jn_cuda_stream()),
                         "all_gather");
    }
    if ((s = mpi_check(in, "all_gather", (jn_dist_op)-1)) || (s = mpi_check(out, "all_gather", (jn_dist_op)-1)))
        return s;
    watch_begin("all_gather");
    int rc = pg.Allgather(jn_data(in), (int)n, pg.dtype[in->dtype], jn_data(out), (int)n, pg.dtype[in->dtype], pg.comm);
    watch_end();
    return rc ? mpi_err(rc, "all_gather") : JN_OK;
}

jn_status jn_rt_dist_reduce_scatter(jn_tensor *out, jn_tensor *in, jn_dist_op op) {
    jn_status s = need_up("reduce_scatter");
    if (s) return s;
    int64_t n = jn_numel(in);
    op = bool_op(in->dtype, op);
    if (n % pg.world)
        return jn_error(JN_ERR_SHAPE, "reduce_scatter: the input's %lld elements do not split into %d equal shares",
                        (long long)n, pg.world);
    if ((s = same_kind(out, in, "reduce_scatter", n / pg.world))) return s;
    if (pg.backend == JN_DIST_NCCL) {
        if ((s = nccl_check(in, "reduce_scatter", op)) || (s = nccl_check(out, "reduce_scatter", op))) return s;
        watch_begin("reduce_scatter");
        return nccl_done(pg.nReduceScatter(jn_data(in), jn_data(out), (size_t)(n / pg.world), nccl_type(in->dtype),
                                           nccl_op(op), pg.nccl_comm, jn_cuda_stream()),
                         "reduce_scatter");
    }
    if ((s = mpi_check(in, "reduce_scatter", op)) || (s = mpi_check(out, "reduce_scatter", op))) return s;
    watch_begin("reduce_scatter");
    int rc = pg.Reduce_scatter_block(jn_data(in), jn_data(out), (int)(n / pg.world), pg.dtype[in->dtype], pg.rop[op],
                                     pg.comm);
    watch_end();
    if (rc) return mpi_err(rc, "reduce_scatter");
    if (op == JN_DIST_AVG) divide(out, pg.world);
    return JN_OK;
}

jn_status jn_rt_dist_destroy(void) {
    jn_status s = need_up("destroy_process_group");
    if (s) return s;
    if (pg.nccl_comm) pg.nCommDestroy(pg.nccl_comm);
    pg.nccl_comm = NULL;
    pg.up = 0;
    return JN_OK;
}

/* MPI_Finalize once, at exit (a later init_process_group in the same
 * process reuses the initialized MPI).  It waits for the other ranks to
 * finish too, so the watchdog bounds it like a collective. */
__attribute__((destructor)) static void dist_fini(void) {
    int fin = 1;
    pg.leave = NULL, pg.enter = NULL; /* the interpreter is gone by now */
    if (pg.mpi_lib && pg.pid == getpid() && !pg.Finalized(&fin) && !fin) {
        if (pg.dog_up) watch_begin("MPI_Finalize (the end of the job)");
        pg.Finalize();
        if (pg.dog_up) watch_end();
    }
    if (pg.dog_up && pg.pid == getpid()) { /* a forked child has no watchdog thread */
        pthread_mutex_lock(&pg.mu);
        pg.stop = 1;
        pthread_cond_signal(&pg.cv);
        pthread_mutex_unlock(&pg.mu);
        pthread_join(pg.dog, NULL);
        pg.dog_up = 0;
    }
}

void jn_rt_dist_abort(const char *why) {
    fprintf(stderr, "janus.distributed: rank %d of %d failed: %s; ending every rank of the job\n", pg.rank, pg.world,
            why);
    fflush(stderr);
    /* mpirun forwards a rank's output asynchronously and kills at the abort: give it a moment to pass this on */
    usleep(300000);
    if (pg.mpi_lib && pg.Abort) pg.Abort(pg.comm, 1);
    _exit(1);
}
