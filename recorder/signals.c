/* signals.c -- a recording process killed by SIGTERM, SIGHUP or SIGINT
 * keeps its steps: the queued ones, the one in progress, and a run row
 * that says it was killed.
 *
 * Left at its default such a signal ends the process at once, and with it
 * the writer thread and the steps still queued for it (up to JN_REC_QUEUE,
 * JN_REC_TICK_MS) and the step in progress.  A Python-level handler cannot
 * help: it runs only between bytecodes, so a process blocked in C (a
 * collective waiting for a dead rank, a long kernel) would no longer die
 * of the signal.  So the handler here is C and async-signal-safe: it only
 * writes one byte to a self-pipe and returns.  A watcher thread blocked on
 * that pipe does the rest outside the signal context, where locks may be
 * taken: rec_end_by_signal (rec.c) ends the step in progress as "tail"
 * once the recording thread is between ops, has the writer commit every
 * queued step and mark the run 'killed' with exit status 128 + signal (what
 * `janus record` stores too when it reaps the child; this way a run whose
 * `janus` parent is gone as well does not read as lost).  Then the watcher
 * sets the signal's default action and raises it: the process dies of the
 * signal, with its exit status, whatever the main thread is doing.  All of
 * it is bounded by JN_REC_SIGNAL_WAIT_MS (a store locked by another
 * process, a writer stuck in I/O): past it the process dies anyway, with
 * what was committed by then.  The handler returns at once, so the thread
 * it interrupted goes on and releases whatever lock it held; the step lock
 * is kept by the watcher until the end, so the recording thread records
 * nothing more and stops at its next op.  A second signal while this runs
 * (`janus record` forwards one that was also sent to the whole process
 * group) changes nothing.
 *
 * Which signals, and chaining: only a signal whose disposition was the
 * default when recording started is handled this way.  One a handler was
 * installed for (Python's SIGINT handler, which raises KeyboardInterrupt;
 * a script's own SIGTERM handler installed before janus was imported) is
 * chained: the byte asks the watcher only to commit the queue now
 * (jn_rec_flush) and the previous handler runs as before, with its flags,
 * so ^C still raises KeyboardInterrupt, and the exit that follows stores
 * the rest through jn_rec_stop as any exit does.  An ignored signal stays
 * ignored (nohup).  A handler a script installs after janus was imported
 * replaces this one (signal.signal): then the script decides, as it asked.
 * The kernel may hand a signal sent to the process to any thread that does
 * not block it (an OpenBLAS worker, a Python thread), and Python's handler
 * run there only sets a flag: the main thread, asleep in time.sleep or
 * blocked in a read, would go on for as long as that takes before ^C
 * raised.  So a chained signal taken by another thread is sent on to the
 * process's first thread (tgkill), where Python runs its handlers, and is
 * handled there.
 *
 * The recorder's own threads (writer, watcher) keep these signals blocked,
 * so the handler never runs on a thread the flush waits for.  The pipe is
 * made once per process and never closed while recording may use it (a
 * handler racing jn_rec_stop must not write into a reused descriptor; a
 * signal whose byte arrives after the watcher stopped is raised again by
 * jn_rec_stop once the steps are stored, with its default action back); a
 * forked child restores the previous handlers and drops its copy of the
 * pipe, and a handler running in any process but the recording one acts as
 * if it were not there.
 */
#include "rec_internal.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

/* How long a signal may keep the process alive to store its steps. */
#define JN_REC_SIGNAL_WAIT_MS 3000

static const int sigs[REC_NSIGS] = {SIGTERM, SIGHUP, SIGINT};

static struct {
    int fd[2];                         /* the self-pipe: handler -> watcher */
    pid_t owner;                       /* the recording process */
    int up;                            /* the watcher runs */
    int installed[REC_NSIGS];
    struct sigaction old[REC_NSIGS];   /* what each signal did before */
    pthread_t th;
} S = {.fd = {-1, -1}};

static volatile sig_atomic_t dying;   /* a signal is ending the process */

#define CHAINED 0x80 /* in a pipe byte: a signal with a previous handler (flush only) */

static int slot_of(int sig) {
    for (int k = 0; k < REC_NSIGS; k++)
        if (sigs[k] == sig) return k;
    return -1;
}

static int has_handler(const struct sigaction *sa) {
    if (sa->sa_flags & SA_SIGINFO) return sa->sa_sigaction != NULL;
    return sa->sa_handler != SIG_DFL && sa->sa_handler != SIG_IGN;
}

/* The default action, on return from the handler (the signal is blocked
 * while its handler runs). */
static void default_on_return(int sig) {
    struct sigaction dfl;
    memset(&dfl, 0, sizeof dfl);
    dfl.sa_handler = SIG_DFL;
    sigemptyset(&dfl.sa_mask);
    sigaction(sig, &dfl, NULL);
    raise(sig);
}

/* Sent on to the first thread when another took it (see the top); 0 when
 * this is that thread, or it cannot be sent (gone: handled here). */
static int to_first_thread(int sig) {
#if defined(SYS_gettid) && defined(SYS_tgkill)
    pid_t pid = getpid();
    return (pid_t)syscall(SYS_gettid) != pid && syscall(SYS_tgkill, pid, pid, sig) == 0;
#else
    (void)sig;
    return 0;
#endif
}

/* Async-signal-safe: getpid, write, sigaction, raise, syscall (gettid,
 * tgkill), and the previous handler. */
static void on_signal(int sig, siginfo_t *si, void *uc) {
    int saved = errno, k = slot_of(sig);
    if (k < 0) return;
    const struct sigaction *old = &S.old[k];
    int chain = has_handler(old);
    if (chain && getpid() == S.owner && to_first_thread(sig)) {
        errno = saved;
        return;
    }
    if (getpid() != S.owner || S.fd[1] < 0) {
        if (!chain) default_on_return(sig); /* not the recording process: as if we were not here */
    } else if (chain) {
        unsigned char b = (unsigned char)(CHAINED | sig);
        ssize_t n = write(S.fd[1], &b, 1); /* a lost flush request costs nothing: exit flushes */
        (void)n;
    } else if (!__atomic_exchange_n(&dying, 1, __ATOMIC_SEQ_CST)) {
        unsigned char b = (unsigned char)sig;
        if (write(S.fd[1], &b, 1) != 1) default_on_return(sig); /* no watcher to tell: die as before */
    }
    errno = saved;
    if (chain) {
        if (old->sa_flags & SA_SIGINFO) old->sa_sigaction(sig, si, uc);
        else old->sa_handler(sig);
    }
}

/* Die of sig with its default action (this thread has it blocked). */
static void die_of(int sig) {
    struct sigaction dfl;
    memset(&dfl, 0, sizeof dfl);
    dfl.sa_handler = SIG_DFL;
    sigemptyset(&dfl.sa_mask);
    sigaction(sig, &dfl, NULL);
    sigset_t m;
    sigemptyset(&m);
    sigaddset(&m, sig);
    pthread_sigmask(SIG_UNBLOCK, &m, NULL);
    raise(sig);
    _exit(128 + sig); /* not reached: the default action of these signals ends the process */
}

static void *watch_main(void *arg) {
    (void)arg;
    for (;;) {
        unsigned char b;
        ssize_t n = read(S.fd[0], &b, 1);
        if (n < 0 && errno == EINTR) continue;
        if (n != 1 || b == 0) break; /* rec_sig_stop */
        if (b & CHAINED) {
            jn_rec_flush();
            continue;
        }
        struct timespec dl;
        clock_gettime(CLOCK_REALTIME, &dl);
        dl.tv_sec += JN_REC_SIGNAL_WAIT_MS / 1000;
        dl.tv_nsec += (JN_REC_SIGNAL_WAIT_MS % 1000) * 1000000L;
        if (dl.tv_nsec >= 1000000000L) {
            dl.tv_sec++;
            dl.tv_nsec -= 1000000000L;
        }
        rec_end_by_signal(b, &dl);
        die_of(b);
    }
    return NULL;
}

void rec_sig_mask(sigset_t *set) {
    sigemptyset(set);
    for (int k = 0; k < REC_NSIGS; k++) sigaddset(set, sigs[k]);
}

jn_status rec_sig_start(void) {
    if (S.fd[0] < 0) {
        if (pipe2(S.fd, O_CLOEXEC) != 0)
            return jn_error(JN_ERR_RUNTIME, "recorder: cannot make a pipe for signal handling: %s", strerror(errno));
        fcntl(S.fd[1], F_SETFL, O_NONBLOCK); /* the handler never blocks */
    }
    S.owner = getpid();
    dying = 0;
    sigset_t m, prev;
    rec_sig_mask(&m);
    pthread_sigmask(SIG_BLOCK, &m, &prev);
    int rc = pthread_create(&S.th, NULL, watch_main, NULL);
    pthread_sigmask(SIG_SETMASK, &prev, NULL);
    if (rc) return jn_error(JN_ERR_RUNTIME, "recorder: cannot start the signal watcher thread");
    S.up = 1;
    for (int k = 0; k < REC_NSIGS; k++) {
        struct sigaction sa;
        if (sigaction(sigs[k], NULL, &S.old[k]) != 0) continue;
        if (!has_handler(&S.old[k]) && S.old[k].sa_handler == SIG_IGN) continue; /* ignored stays ignored */
        memset(&sa, 0, sizeof sa);
        sa.sa_sigaction = on_signal;
        if (has_handler(&S.old[k])) { /* the previous handler's flags: Python's wants EINTR (no SA_RESTART) */
            sa.sa_flags = SA_SIGINFO | (S.old[k].sa_flags & (SA_RESTART | SA_ONSTACK));
            sa.sa_mask = S.old[k].sa_mask;
        } else {
            sa.sa_flags = SA_SIGINFO | SA_RESTART; /* the interrupted thread just goes on */
            sigemptyset(&sa.sa_mask);
        }
        S.installed[k] = sigaction(sigs[k], &sa, NULL) == 0;
    }
    return JN_OK;
}

static void restore_handlers(void) {
    for (int k = 0; k < REC_NSIGS; k++) {
        if (!S.installed[k]) continue;
        struct sigaction cur;
        /* one the script installed since is left alone */
        if (sigaction(sigs[k], NULL, &cur) == 0 && (cur.sa_flags & SA_SIGINFO) && cur.sa_sigaction == on_signal)
            sigaction(sigs[k], &S.old[k], NULL);
        S.installed[k] = 0;
    }
}

int rec_sig_stop(void) {
    restore_handlers();
    if (!S.up) return 0;
    unsigned char z = 0;
    while (write(S.fd[1], &z, 1) < 0 && errno == EINTR) {
    }
    pthread_join(S.th, NULL); /* (a signal it was handling ends the process here) */
    S.up = 0;
    /* a byte a handler wrote after the stop byte, racing this: not for the
     * next recording; one that was to end the process is the caller's */
    int pending = 0;
    struct pollfd p = {S.fd[0], POLLIN, 0};
    unsigned char b;
    while (poll(&p, 1, 0) == 1 && (p.revents & POLLIN) && read(S.fd[0], &b, 1) == 1)
        if (b && !(b & CHAINED) && !pending) pending = b;
    return pending;
}

void rec_sig_atfork_child(void) {
    restore_handlers();
    S.up = 0;
    for (int i = 0; i < 2; i++) {
        if (S.fd[i] >= 0) close(S.fd[i]);
        S.fd[i] = -1;
    }
}
