/* record.c -- `janus record [--db PATH] [--] COMMAND...`
 *
 * Creates a run row in the trace store (argv, cwd, versions, op table, CPU
 * features, host, start time), then runs COMMAND as a child process with
 * JANUS_RECORD_DB and JANUS_RECORD_RUN in its environment; the janus package
 * in the child sees them at import and appends the run's steps itself.  The
 * child inherits stdin/stdout/stderr and the process group, so a terminal's
 * ^C reaches it directly; signals sent to this process alone are forwarded.
 * When the child ends, the run is closed with its exit status ("finished",
 * "error", or "killed" for a signal, exit code 128+signal as a shell
 * reports it), a one-line summary goes to stderr, and janus exits with the
 * child's status so scripts and CI see what they would see without janus --
 * unless the recording failed (a full disk): the child reports that on a
 * pipe (JANUS_RECORD_REPORT_FD) with the last step it stored, and janus
 * names that step and exits non-zero (1 when the command itself exited 0),
 * as it does when the run's end cannot be stored.
 *
 * The store is closed while the child runs: the child opens its own
 * connection, and nothing of ours (file descriptors, locks) leaks into it.
 * With --progress a thread of ours reads the run's step count from the
 * store (read-only, every 0.25 s) and shows it on stderr: one `\r` line on
 * a terminal, else a line every 2 s while it grows.
 * The run row, child and signal handling are shared with `janus replay`
 * (replay.c) through the jn_cli_ functions below.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/resource.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "jn_cli.h"
#include "jn_db.h"

const char jn_cli_record_usage[] =
    "usage: janus record [--db PATH] [--progress] [--no-torch] [--nproc N] [--] COMMAND [ARGS...]\n"
    "\n"
    "Run COMMAND (for example `python3 train.py --epochs 1`) with recording\n"
    "enabled.  Every op the janus package dispatches, with its call site,\n"
    "sync points and control-flow decisions, is stored per training step in\n"
    "a new run appended to the trace store; earlier runs are kept.\n"
    "stdin/stdout/stderr, signals and the exit status pass through.\n"
    "\n"
    "options:\n"
    "  --db PATH   trace store to append to (created if missing; default run.db)\n"
    "  --progress  show the number of steps recorded so far on stderr\n"
    "  --no-torch  leave `import torch` alone (by default it loads janus)\n"
    "  --nproc N   run N ranks of COMMAND under mpirun (janus.distributed), each\n"
    "              recorded as its own run of the store (the same as\n"
    "              `mpirun -n N janus record ...`); inspect shows each run's rank\n"
    "  -h, --help  show this help\n"
    "\n"
    "The child sees JANUS_RECORD_DB (absolute path) and JANUS_RECORD_RUN (the\n"
    "run id) in its environment.  At the end one summary line is printed on\n"
    "stderr; `janus inspect PATH` shows the details.\n";

static volatile sig_atomic_t child_pid;

double jn_cli_now(void) {
    struct timeval tv;
    gettimeofday(&tv, NULL);
    return (double)tv.tv_sec + (double)tv.tv_usec / 1e6;
}

/* Forward a signal sent to janus alone.  Signals the terminal generates
 * (si_code SI_KERNEL) already reached the child, which shares our process
 * group; sending them again would make Python see ^C twice. */
static void forward(int sig, siginfo_t *si, void *uc) {
    (void)uc;
    if (si && si->si_code == SI_KERNEL) return;
    pid_t p = (pid_t)child_pid;
    if (p > 0) kill(p, sig);
}

/* Growing string for argv JSON and the op table text. */
typedef struct {
    char *s;
    size_t len, cap;
} sbuf;

static int sb_add(sbuf *b, const char *s, size_t n) {
    if (b->len + n + 1 > b->cap) {
        size_t cap = b->cap ? b->cap * 2 : 256;
        while (cap < b->len + n + 1) cap *= 2;
        char *p = realloc(b->s, cap);
        if (!p) return -1;
        b->s = p;
        b->cap = cap;
    }
    memcpy(b->s + b->len, s, n);
    b->len += n;
    b->s[b->len] = 0;
    return 0;
}

static int sb_str(sbuf *b, const char *s) { return sb_add(b, s, strlen(s)); }

/* argv as a JSON array, through the shared escaper (memstream). */
static char *argv_json(int n, char **v) {
    char *out = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&out, &len);
    if (!f) return NULL;
    jn_cli_json j;
    jn_cli_json_init(&j, f);
    jn_cli_json_arr(&j);
    for (int i = 0; i < n; i++) jn_cli_json_str(&j, v[i]);
    jn_cli_json_end(&j, ']');
    if (fclose(f) != 0) {
        free(out);
        return NULL;
    }
    return out;
}

/* "name schema" per op in enum order: what event op indices refer to. */
static char *optable_text(void) {
    sbuf b = {0};
    for (int op = 0; op < JN_NOPS; op++) {
        const jn_opinfo *oi = jn_op_info((jn_op)op);
        if (sb_str(&b, oi->name) || sb_str(&b, " ") || sb_str(&b, oi->schema ? oi->schema : "") ||
            sb_str(&b, "\n")) {
            free(b.s);
            return NULL;
        }
    }
    return b.s;
}

/* The CPU features generated code may use (runtime/cpu.c): the same list
 * a bundle records and the loader checks, so a run and a bundle compare. */
static char *cpu_features(void) {
    size_t n = jn_rt_cpu_features(NULL, 0) + 1;
    char *out = malloc(n);
    if (out) jn_rt_cpu_features(out, n);
    return out ? out : strdup("");
}

/* Absolute form of path (its directory need not be canonical; the file
 * need not exist). */
char *jn_cli_absolute(const char *path) {
    if (path[0] == '/') return strdup(path);
    char cwd[PATH_MAX];
    if (!getcwd(cwd, sizeof cwd)) return NULL;
    size_t n = strlen(cwd) + strlen(path) + 2;
    char *out = malloc(n);
    if (out) snprintf(out, n, "%s/%s", cwd, path);
    return out;
}

/* Clear messages for locations SQLite would report vaguely (or, for a
 * read-only file, open read-only and fail only at the first write). */
int jn_cli_check_location(const char *cmd, const char *abs, const char *shown) {
    struct stat st;
    if (stat(abs, &st) == 0) {
        if (S_ISDIR(st.st_mode)) {
            fprintf(stderr, "janus %s: %s is a directory; pass --db %s/run.db to store the trace inside it\n",
                    cmd, shown, shown);
            return -1;
        }
        if (access(abs, R_OK | W_OK) != 0) {
            fprintf(stderr, "janus %s: cannot write the trace store %s: %s; "
                            "pass --db with a writable location\n", cmd, shown, strerror(errno));
            return -1;
        }
    }
    char *dir = strdup(abs);
    if (!dir) return -1;
    char *slash = strrchr(dir, '/');
    if (slash == dir) slash[1] = 0;
    else *slash = 0;
    int rc = 0;
    /* SQLite's WAL mode creates PATH-wal and PATH-shm next to the file. */
    if (stat(dir, &st) != 0 || !S_ISDIR(st.st_mode)) {
        fprintf(stderr, "janus %s: cannot create the trace store %s: directory %s does not exist; "
                        "create it or pass --db with another location\n", cmd, shown, dir);
        rc = -1;
    } else if (access(dir, W_OK | X_OK) != 0) {
        fprintf(stderr, "janus %s: cannot create the trace store %s: directory %s is not writable (%s); "
                        "pass --db with a writable location\n", cmd, shown, dir, strerror(errno));
        rc = -1;
    }
    free(dir);
    return rc;
}

/* SQLite reports a full disk variously ("database or disk is full", or a
 * "disk I/O error" when the shared-memory index cannot grow); say it plainly. */
void jn_cli_full_disk_hint(const char *cmd, const char *abs) {
    char *dir = strdup(abs);
    if (!dir) return;
    char *slash = strrchr(dir, '/');
    if (slash == dir) slash[1] = 0;
    else *slash = 0;
    struct statvfs vfs;
    if (statvfs(dir, &vfs) == 0 && vfs.f_blocks > 0 && (uint64_t)vfs.f_bavail * vfs.f_frsize < 64 * 1024)
        fprintf(stderr, "janus %s: the file system holding %s is full; free some space or pass --db "
                        "with another location (earlier runs in the store are intact)\n", cmd, dir);
    free(dir);
}

/* Size of the store as it lies on disk (the WAL holds recent commits). */
static int64_t store_bytes(const char *abs) {
    struct stat st;
    int64_t n = 0;
    if (stat(abs, &st) == 0) n += st.st_size;
    size_t len = strlen(abs) + 5;
    char *wal = malloc(len);
    if (wal) {
        snprintf(wal, len, "%s-wal", abs);
        if (stat(wal, &st) == 0) n += st.st_size;
        free(wal);
    }
    return n;
}

/* Fork and exec; on exec failure the child reports errno through a
 * close-on-exec pipe so we can say "command not found" ourselves. */
static pid_t spawn(char **cmd, int *exec_errno) {
    int pfd[2];
    *exec_errno = 0;
    if (pipe2(pfd, O_CLOEXEC) != 0) return -1;
    pid_t pid = fork();
    if (pid < 0) {
        close(pfd[0]);
        close(pfd[1]);
        return -1;
    }
    if (pid == 0) {
        close(pfd[0]);
        /* Our forwarding handlers are reset by exec; the mask is inherited. */
        sigset_t none;
        sigemptyset(&none);
        sigprocmask(SIG_SETMASK, &none, NULL);
        execvp(cmd[0], cmd);
        int e = errno;
        ssize_t w = write(pfd[1], &e, sizeof e);
        (void)w;
        _exit(127);
    }
    child_pid = pid;
    close(pfd[1]);
    int e;
    ssize_t r;
    do r = read(pfd[0], &e, sizeof e);
    while (r < 0 && errno == EINTR);
    if (r == (ssize_t)sizeof e) *exec_errno = e;
    close(pfd[0]);
    return pid;
}

/* failed: the child reported a failed recording (said after this line). */
static void summary(jn_db *db, int64_t run, const char *abs, const char *shown, int failed) {
    jn_db_run_totals t;
    jn_db_run_row *r = NULL;
    int nr = 0;
    if (jn_db_totals(db, run, &t) != JN_OK || jn_db_runs(db, run, &r, &nr) != JN_OK) {
        fprintf(stderr, "janus record: run %lld ran, but its summary cannot be read: %s\n", (long long)run,
                jn_errmsg());
        return;
    }
    const char *py = nr ? r[0].python_version : NULL;
    char a[32], b[32], c[32];
    if (t.steps == 0 && (!py || !py[0]) && !failed) {
        fprintf(stderr, "janus record: run %lld: the command never imported janus; nothing was recorded "
                        "(run a Python script that does `import janus`)\n", (long long)run);
    } else {
        fprintf(stderr, "janus record: run %lld: %s step%s, %s ops, %lld distinct step signature%s, %s %s\n",
                (long long)run, jn_cli_commas(t.steps, a), t.steps == 1 ? "" : "s", jn_cli_commas(t.ops, b),
                (long long)t.signatures, t.signatures == 1 ? "" : "s", shown, jn_cli_bytes(store_bytes(abs), c));
    }
    jn_db_runs_free(r, nr);
}

/* A new run row for cmd (kind "record" or "replay"/"eager", bundle_id the
 * bundle a replay loads): argv, cwd, versions, op table, CPU features,
 * host, pid, start time.  Messages are printed; returns 0 or -1. */
int jn_cli_run_begin(const char *cmd, jn_db *db, const char *abs, const char *shown, int ncmd, char **argv,
                     const char *kind, int64_t bundle_id, int64_t *run) {
    char cwd[PATH_MAX], host[256] = "";
    if (!getcwd(cwd, sizeof cwd)) cwd[0] = 0;
    gethostname(host, sizeof host - 1);
    char hash[32];
    snprintf(hash, sizeof hash, "%016llx", (unsigned long long)jn_optable_hash());
    char *aj = argv_json(ncmd, argv), *ops = optable_text(), *cpu = cpu_features();
    int rc = -1;
    if (!aj || !ops || !cpu) {
        fprintf(stderr, "janus %s: out of memory\n", cmd);
        goto done;
    }
    /* runs left 'running' by a process that died: say so once, mark them */
    jn_db_run_row *lost = NULL;
    int nlost = 0;
    if (jn_db_mark_lost(db, &lost, &nlost) != JN_OK) {
        fprintf(stderr, "janus %s: cannot add a run to %s: %s\n", cmd, shown, jn_errmsg());
        jn_cli_full_disk_hint(cmd, abs);
        goto done;
    }
    for (int k = 0; k < nlost; k++)
        fprintf(stderr, "janus %s: run %lld of %s was left running by process %lld, which is gone: marked lost "
                        "(its stored steps are kept)\n", cmd, (long long)lost[k].id, shown, (long long)lost[k].pid);
    jn_db_runs_free(lost, nlost);
    /* a rank of mpirun (or a torchrun-style launcher): the run's device names it, "cpu rank 1/2" */
    const char *rk = getenv("OMPI_COMM_WORLD_RANK"), *ws = getenv("OMPI_COMM_WORLD_SIZE");
    if (!rk || !ws) rk = getenv("RANK"), ws = getenv("WORLD_SIZE");
    char device[64] = "cpu";
    if (rk && ws && *rk && *ws) snprintf(device, sizeof device, "cpu rank %.16s/%.16s", rk, ws);
    jn_db_run_info info = {
        .argv_json = aj, .cwd = cwd, .python_version = "", .janus_version = JANUS_VERSION,
        .optable_hash = hash, .optable_ops = ops, .cpu_features = cpu, .device = device,
        .hostname = host, .pid = (int64_t)getpid(), .started = jn_cli_now(), .kind = kind,
        .bundle_id = bundle_id,
    };
    if (jn_db_run_begin(db, &info, run) != JN_OK) {
        fprintf(stderr, "janus %s: cannot add a run to %s: %s\n", cmd, shown, jn_errmsg());
        jn_cli_full_disk_hint(cmd, abs);
        goto done;
    }
    rc = 0;
done:
    free(aj);
    free(ops);
    free(cpu);
    return rc;
}

/* Run argv as a child with our signals forwarded and wait for it.  Returns
 * the exit code a shell would report (127/126 when it cannot be run,
 * 128+signal when killed) and sets *status to the run status to store
 * ("finished", "error" or "killed"). */
int jn_cli_spawn_wait(const char *cmd, char **argv, const char **status) {
    struct sigaction sa, old[4];
    const int sigs[4] = {SIGINT, SIGTERM, SIGHUP, SIGQUIT};
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = forward;
    sa.sa_flags = SA_SIGINFO | SA_RESTART;
    sigemptyset(&sa.sa_mask);
    for (int k = 0; k < 4; k++) sigaction(sigs[k], &sa, &old[k]);
    /* A blocked signal mask is inherited: a parent that launched us from a
     * thread with these blocked would leave us deaf to them, never passing
     * them on.  Unblock them here (the child gets an empty mask anyway). */
    sigset_t fwd, oldmask;
    sigemptyset(&fwd);
    for (int k = 0; k < 4; k++) sigaddset(&fwd, sigs[k]);
    sigprocmask(SIG_UNBLOCK, &fwd, &oldmask);

    int exec_errno = 0, wst = 0, rc = 1;
    pid_t pid = spawn(argv, &exec_errno);
    if (pid < 0) {
        fprintf(stderr, "janus %s: cannot start %s: %s\n", cmd, argv[0], strerror(errno));
    } else {
        pid_t w;
        do w = waitpid(pid, &wst, 0);
        while (w < 0 && errno == EINTR);
        child_pid = 0;
    }
    for (int k = 0; k < 4; k++) sigaction(sigs[k], &old[k], NULL);
    sigprocmask(SIG_SETMASK, &oldmask, NULL);

    *status = "error";
    if (pid < 0) {
        rc = 1;
    } else if (exec_errno) {
        fprintf(stderr, "janus %s: cannot run '%s': %s%s\n", cmd, argv[0], strerror(exec_errno),
                exec_errno == ENOENT ? " (is it installed and on PATH?)" : "");
        rc = exec_errno == ENOENT ? 127 : 126; /* what a shell returns */
    } else if (WIFSIGNALED(wst)) {
        int sig = WTERMSIG(wst);
        rc = 128 + sig;
        *status = "killed";
        /* We reaped it, so no shell will say how it died; an interrupt the
         * user typed needs no telling (bash stays quiet about those too). */
        if (sig != SIGINT && sig != SIGPIPE)
            fprintf(stderr, "janus %s: %s was killed by signal %d (%s)%s\n", cmd, argv[0], sig, strsignal(sig),
                    WCOREDUMP(wst) ? ", core dumped" : "");
    } else {
        rc = WEXITSTATUS(wst);
        *status = rc == 0 ? "finished" : "error";
    }
    return rc;
}

/* Close run `run` of the store at abs with the child's exit code and
 * status, and its CPU time and peak memory (our only child: getrusage of
 * the children).  Failing here (disk full, file replaced) loses only the
 * end time (*ended 0; the run reads as lost later); what the child
 * committed is already safe.  Returns the open store (for a summary) or
 * NULL. */
jn_db *jn_cli_run_end(const char *cmd, const char *abs, int64_t run, int rc, const char *status, int *ended) {
    jn_db *db = NULL;
    *ended = 1;
    struct rusage ru;
    double cpu = getrusage(RUSAGE_CHILDREN, &ru) == 0 ? (double)ru.ru_utime.tv_sec + (double)ru.ru_stime.tv_sec +
                                                            1e-6 * (double)(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec)
                                                      : -1;
    if (jn_db_open(abs, JN_DB_WRITE, &db) != JN_OK || jn_db_run_end(db, run, rc, status, jn_cli_now()) != JN_OK ||
        (cpu >= 0 && jn_db_run_set_usage(db, run, cpu, (int64_t)ru.ru_maxrss * 1024) != JN_OK)) {
        fprintf(stderr, "janus %s: run %lld ran, but its end could not be stored: %s\n", cmd, (long long)run,
                jn_errmsg());
        jn_cli_full_disk_hint(cmd, abs);
        *ended = 0;
    }
    return db;
}

int jn_cli_nproc(const char *cmd, int argc, char **argv) {
    int at = -1;
    const char *n = NULL;
    for (int i = 1; i < argc && strcmp(argv[i], "--") && (argv[i][0] == '-' || (i > 1 && !strcmp(argv[i - 1], "--db")));
         i++) {
        if (!strcmp(argv[i], "--nproc") && i + 1 < argc) at = i, n = argv[i + 1];
        else if (!strncmp(argv[i], "--nproc=", 8)) at = i, n = argv[i] + 8;
        if (n) break;
    }
    if (!n) return -1;
    char *end = NULL;
    long np = strtol(n, &end, 10);
    if (!*n || *end || np < 1 || np > 4096) {
        fprintf(stderr, "janus %s: --nproc needs a number of ranks from 1 to 4096 (got '%s')\n", cmd, n);
        return 2;
    }
    char self[PATH_MAX];
    ssize_t len = readlink("/proc/self/exe", self, sizeof self - 1);
    if (len <= 0) {
        fprintf(stderr, "janus %s --nproc: cannot find the janus executable: %s\n", cmd, strerror(errno));
        return 1;
    }
    self[len] = 0;
    /* mpirun -n N --oversubscribe [--allow-run-as-root] janus CMD <the options but --nproc> -- COMMAND... */
    char **v = calloc((size_t)argc + 8, sizeof *v);
    if (!v) return 1;
    int k = 0;
    v[k++] = "mpirun", v[k++] = "-n", v[k++] = (char *)n, v[k++] = "--oversubscribe";
    if (geteuid() == 0) v[k++] = "--allow-run-as-root"; /* asked for explicitly by running --nproc */
    v[k++] = self, v[k++] = (char *)cmd;
    for (int i = 1; i < argc; i++)
        if (i != at && !(i == at + 1 && !strcmp(argv[at], "--nproc"))) v[k++] = argv[i];
    execvp("mpirun", v);
    fprintf(stderr, "janus %s --nproc: mpirun could not be started (%s): install Open MPI (apt-get install "
            "openmpi-bin libopenmpi-dev) or launch the ranks yourself (mpirun -n %s janus %s ...)\n", cmd,
            strerror(errno), n, cmd);
    free(v);
    return 127;
}

int jn_cli_launch_args(const char *cmd, const char *usage, int argc, char **argv,
                       int (*flag)(const char *a, void *ctx), void *ctx, const char **dbpath, int *first) {
    int i = 1;
    for (; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "--")) {
            i++;
            break;
        }
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            fputs(usage, stdout);
            return 0;
        }
        if (flag && flag(a, ctx)) continue;
        if (!strcmp(a, "--db")) {
            if (i + 1 >= argc) {
                fprintf(stderr, "janus %s: --db needs a PATH\n\n%s", cmd, usage);
                return 2;
            }
            *dbpath = argv[++i];
            continue;
        }
        if (!strncmp(a, "--db=", 5)) {
            *dbpath = a + 5;
            continue;
        }
        if (a[0] == '-' && a[1]) {
            fprintf(stderr, "janus %s: unknown option '%s' (put the command after --)\n\n%s", cmd, a, usage);
            return 2;
        }
        break; /* the command starts here */
    }
    if (i >= argc) {
        fprintf(stderr, "janus %s: no COMMAND given\n\n%s", cmd, usage);
        return 2;
    }
    if (!(*dbpath)[0]) {
        fprintf(stderr, "janus %s: --db needs a non-empty PATH\n", cmd);
        return 2;
    }
    *first = i;
    return -1;
}

/* --progress: the live step count (see the top of this file). */
typedef struct {
    pthread_t th;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int done, tty;
    const char *abs;
    int64_t run;
    double t0;
} step_count;

static void *count_main(void *arg) {
    step_count *p = arg;
    jn_db *db = NULL;
    int64_t shown = -1;
    double said = p->t0;
    pthread_mutex_lock(&p->mu);
    while (!p->done) {
        jn_db_run_totals t;
        if (!db && jn_db_open(p->abs, JN_DB_READONLY, &db) != JN_OK) db = NULL;
        if (db && jn_db_totals(db, p->run, &t) == JN_OK) {
            double now = jn_cli_now();
            char a[32], b[32];
            if (p->tty) {
                fprintf(stderr, "\r\033[Kjanus record: run %lld: %s steps, %s ops, %.0f s", (long long)p->run,
                        jn_cli_commas(t.steps, a), jn_cli_commas(t.ops, b), now - p->t0);
            } else if (t.steps != shown && now - said >= 2) {
                fprintf(stderr, "janus record: run %lld: %s steps so far (%.0f s)\n", (long long)p->run,
                        jn_cli_commas(t.steps, a), now - p->t0);
                shown = t.steps;
                said = now;
            }
            fflush(stderr);
        }
        struct timespec until;
        clock_gettime(CLOCK_REALTIME, &until);
        until.tv_nsec += 250 * 1000 * 1000;
        if (until.tv_nsec >= 1000000000L) until.tv_sec++, until.tv_nsec -= 1000000000L;
        pthread_cond_timedwait(&p->cv, &p->mu, &until);
    }
    if (p->tty) fputs("\r\033[K", stderr);
    pthread_mutex_unlock(&p->mu);
    jn_db_close(db);
    return NULL;
}

static int count_start(step_count *p, const char *abs, int64_t run) {
    memset(p, 0, sizeof *p);
    p->abs = abs, p->run = run, p->t0 = jn_cli_now(), p->tty = isatty(STDERR_FILENO);
    pthread_mutex_init(&p->mu, NULL);
    pthread_cond_init(&p->cv, NULL);
    return pthread_create(&p->th, NULL, count_main, p) == 0;
}

static void count_stop(step_count *p, int started) {
    if (started) {
        pthread_mutex_lock(&p->mu);
        p->done = 1;
        pthread_cond_signal(&p->cv);
        pthread_mutex_unlock(&p->mu);
        pthread_join(p->th, NULL);
    }
    pthread_mutex_destroy(&p->mu);
    pthread_cond_destroy(&p->cv);
}

typedef struct {
    int torch, progress;
} record_flags;

static int record_flag(const char *a, void *ctx) {
    record_flags *f = ctx;
    if (!strcmp(a, "--progress")) return f->progress = 1;
    return jn_cli_torch_flag(a, &f->torch);
}

int jn_cli_record(int argc, char **argv) {
    const char *dbpath = "run.db";
    int i = jn_cli_nproc("record", argc, argv);
    if (i >= 0) return i;
    record_flags fl = {1, 0};
    int rc0 = jn_cli_launch_args("record", jn_cli_record_usage, argc, argv, record_flag, &fl, &dbpath, &i);
    if (rc0 >= 0) return rc0;
    char **cmd = argv + i;
    int ncmd = argc - i;

    char *abs = jn_cli_absolute(dbpath);
    if (!abs) {
        fprintf(stderr, "janus record: cannot resolve %s: %s\n", dbpath, strerror(errno));
        return 1;
    }
    if (jn_cli_check_location("record", abs, dbpath)) {
        free(abs);
        return 1;
    }

    jn_db *db = NULL;
    if (jn_db_open(abs, JN_DB_CREATE, &db) != JN_OK) {
        fprintf(stderr, "janus record: %s\n", jn_errmsg());
        jn_cli_full_disk_hint("record", abs);
        free(abs);
        return 1;
    }
    int rc = 1;
    int64_t run = 0;
    if (jn_cli_run_begin("record", db, abs, dbpath, ncmd, cmd, "record", 0, &run)) goto done;
    jn_db_close(db);
    db = NULL;

    char runs[32];
    snprintf(runs, sizeof runs, "%lld", (long long)run);
    if (setenv("JANUS_RECORD_DB", abs, 1) || setenv("JANUS_RECORD_RUN", runs, 1)) {
        fprintf(stderr, "janus record: cannot set the environment: %s\n", strerror(errno));
        goto done;
    }
    /* the child says on this pipe when its recording failed (a full disk):
     * then the run is incomplete and janus exits non-zero */
    int rep[2];
    char fds[16];
    if (pipe2(rep, O_CLOEXEC) != 0 || fcntl(rep[1], F_SETFD, 0) != 0 || fcntl(rep[0], F_SETFL, O_NONBLOCK) != 0) {
        fprintf(stderr, "janus record: cannot make a pipe: %s\n", strerror(errno));
        goto done;
    }
    snprintf(fds, sizeof fds, "%d", rep[1]);
    char *alias = NULL;
    if (setenv("JANUS_RECORD_REPORT_FD", fds, 1) || (fl.torch && jn_cli_alias_begin("record", &alias))) {
        close(rep[0]);
        close(rep[1]);
        goto done;
    }
    const char *status;
    step_count sc;
    int counting = fl.progress && count_start(&sc, abs, run);
    rc = jn_cli_spawn_wait("record", cmd, &status);
    if (fl.progress) count_stop(&sc, counting);
    jn_cli_alias_end(alias);
    close(rep[1]);
    char report[4096];
    ssize_t nrep = read(rep[0], report, sizeof report - 1); /* non-blocking: a worker may hold the pipe */
    close(rep[0]);
    if (nrep > 0 && !strcmp(status, "finished")) status = "incomplete"; /* the script's exit code is kept */
    int ended;
    db = jn_cli_run_end("record", abs, run, rc, status, &ended);
    if (db) summary(db, run, abs, dbpath, nrep > 0);
    if (nrep > 0) {
        report[nrep] = 0;
        long long last = strtoll(report, NULL, 10);
        int script_rc = rc;
        if (rc == 0) rc = 1;
        char stored[96];
        if (last > 0) snprintf(stored, sizeof stored, "steps 0-%lld are stored, later steps are not", last);
        else snprintf(stored, sizeof stored, "%s", last == 0 ? "step 0 is stored, later steps are not"
                                                                : "no step is stored");
        fprintf(stderr, "janus record: run %lld is incomplete: %s; the command exited with status %d, janus with %d\n",
                (long long)run, stored, script_rc, rc);
        jn_cli_full_disk_hint("record", abs);
    } else if (!ended && rc == 0) {
        rc = 1; /* the store does not say how the run ended */
    }

done:
    if (db) jn_db_close(db);
    free(abs);
    return rc;
}
