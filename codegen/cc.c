/* cc.c -- the C compiler driver: generated C source -> shared object bytes.
 *
 * The compiler is o->cc, else $CC (a command: its first word is the
 * program, "ccache gcc" works), else the first of cc and gcc found on
 * PATH (looked up here, so a missing one is a clear error rather than a
 * shell's "not found").  The source is written into a private temporary
 * directory, compiled there with
 *   -O3 -march=native -std=c11 -fPIC -shared -ffp-contract=off
 *   -fno-math-errno -fno-trapping-math -lm
 * (no -ffast-math: generated kernels must round like the eager kernels;
 * -march=native because a bundle records the CPU features it needs, and
 * no-trapping-math only lets gcc if-convert selects, never changes a
 * result), the object is read back and the directory removed.  The
 * compiler runs through posix_spawnp (no shell, so paths need no quoting),
 * its output goes to a file in the directory; a failing compile returns
 * its first error lines.  With o->progress a line on stderr says that a
 * compile is running when it takes longer than a second.
 *
 * Nothing is left behind when a compile is stopped.  The directory is
 * $TMPDIR/janus-<uid>/cc-<pid>-<start>-XXXXXX (the per-user folder 0700
 * and ours, else refused; pid and start time of this process), and the
 * compiler runs with TMPDIR set to it, so gcc's own temporaries land there
 * too, in a process group of its own, stdin from /dev/null.  o->stop (a
 * signal handler's flag, cli/optimize.c) is polled while it runs: when set,
 * the whole group is killed and reaped and the directory removed.  A
 * process killed outright (SIGKILL) cannot clean up, so every compile
 * first sweeps the per-user folder: a directory whose owner (pid and start
 * time) is gone has its leftover processes -- those whose environment
 * holds its TMPDIR: the orphaned compiler and its children -- killed, and
 * is removed.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "cg_priv.h"

extern char **environ;

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* Is `name` (a path, or a program looked up on PATH) executable? */
static int find_program(const char *name) {
    if (strchr(name, '/')) return access(name, X_OK) == 0;
    const char *path = getenv("PATH");
    if (!path) path = "/usr/bin:/bin";
    char buf[4096];
    for (const char *p = path; *p;) {
        const char *e = strchr(p, ':');
        size_t n = e ? (size_t)(e - p) : strlen(p);
        if (n > 0 && n < sizeof buf - 256) {
            snprintf(buf, sizeof buf, "%.*s/%s", (int)n, p, name);
            if (access(buf, X_OK) == 0) return 1;
        }
        if (!e) break;
        p = e + 1;
    }
    return 0;
}

static jn_status write_file(const char *path, const void *data, size_t len) {
    FILE *f = fopen(path, "wb");
    if (!f) return jn_error(JN_ERR_RUNTIME, "cannot write %s: %s", path, strerror(errno));
    size_t w = fwrite(data, 1, len, f);
    if (fclose(f) != 0 || w != len) return jn_error(JN_ERR_RUNTIME, "cannot write %s: %s", path, strerror(errno));
    return JN_OK;
}

static jn_status read_file(const char *path, void **data, size_t *len) {
    FILE *f = fopen(path, "rb");
    if (!f) return jn_error(JN_ERR_RUNTIME, "cannot read %s: %s", path, strerror(errno));
    size_t cap = 1 << 16, n = 0;
    char *buf = malloc(cap);
    for (size_t r; buf && (r = fread(buf + n, 1, cap - n, f)) > 0;) {
        n += r;
        if (n == cap) {
            char *nb = realloc(buf, cap *= 2);
            if (!nb) free(buf);
            buf = nb;
        }
    }
    fclose(f);
    if (!buf) return jn_error(JN_ERR_NOMEM, "out of memory reading %s", path);
    *data = buf, *len = n;
    return JN_OK;
}

/* The first lines of the compiler's output that say "error" (else its first lines). */
static void first_errors(const char *log, char *out, size_t n) {
    out[0] = 0;
    size_t at = 0;
    int lines = 0;
    for (int pass = 0; pass < 2 && lines == 0; pass++)
        for (const char *p = log; *p && lines < 4;) {
            const char *e = strchr(p, '\n');
            size_t l = e ? (size_t)(e - p) : strlen(p);
            if ((pass == 1 || memmem(p, l, "error", 5)) && l > 0) {
                int w = snprintf(out + at, n - at, "%s%.*s", lines ? " | " : "", (int)(l > 300 ? 300 : l), p);
                if (w < 0 || (size_t)w >= n - at) break;
                at += (size_t)w;
                lines++;
            }
            p = e ? e + 1 : p + l;
        }
}

/* Removes dir and everything under it (the compiler's files and
 * temporaries: no symlinks are followed). */
static void remove_tree(const char *dir, int depth) {
    DIR *d = opendir(dir);
    if (d) {
        for (struct dirent *e; (e = readdir(d));) {
            if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..")) continue;
            char p[1024];
            if (snprintf(p, sizeof p, "%s/%s", dir, e->d_name) >= (int)sizeof p) continue;
            struct stat sb;
            if (depth < 8 && lstat(p, &sb) == 0 && S_ISDIR(sb.st_mode)) remove_tree(p, depth + 1);
            else unlink(p);
        }
        closedir(d);
    }
    rmdir(dir);
}

/* Start time of process pid (clock ticks since boot, /proc/PID/stat field
 * 22); 0 when unknown. */
static unsigned long long start_time(pid_t pid) {
    char p[64], buf[1024];
    snprintf(p, sizeof p, "/proc/%d/stat", (int)pid);
    FILE *f = fopen(p, "r");
    if (!f) return 0;
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = 0;
    const char *q = strrchr(buf, ')'); /* the command name may hold spaces */
    unsigned long long t = 0;
    if (q && sscanf(q + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %*u %*u %*d %*d %*d %*d %*d %*d %llu", &t) != 1)
        t = 0;
    return t;
}

/* Kills the processes of this user whose environment holds TMPDIR=dir: a
 * compile's orphans (the compiler and its children) after its owner died. */
static void kill_orphans(const char *dir) {
    DIR *d = opendir("/proc");
    if (!d) return;
    char want[1100];
    int wl = snprintf(want, sizeof want, "TMPDIR=%s", dir);
    if (wl < 0 || wl >= (int)sizeof want) {
        closedir(d);
        return;
    }
    char *env = malloc(1 << 16);
    for (struct dirent *e; env && (e = readdir(d));) {
        char *end = NULL;
        long pid = strtol(e->d_name, &end, 10);
        if (pid <= 0 || *end || pid == (long)getpid()) continue;
        char p[64];
        snprintf(p, sizeof p, "/proc/%ld/environ", pid);
        int fd = open(p, O_RDONLY | O_CLOEXEC);
        if (fd < 0) continue; /* gone, or not ours */
        ssize_t n = read(fd, env, (1 << 16) - 1);
        close(fd);
        for (ssize_t i = 0; i < n;) {
            size_t l = strnlen(env + i, (size_t)(n - i));
            if (l == (size_t)wl && !memcmp(env + i, want, (size_t)wl)) {
                kill((pid_t)pid, SIGKILL);
                break;
            }
            i += (ssize_t)l + 1;
        }
    }
    free(env);
    closedir(d);
}

/* Removes the compile directories under base whose owner is gone (not
 * running, or its pid now another process), with their orphans. */
static void sweep_stale(const char *base) {
    DIR *d = opendir(base);
    if (!d) return;
    for (struct dirent *e; (e = readdir(d));) {
        int pid = 0;
        unsigned long long t0 = 0;
        char tail[16];
        if (sscanf(e->d_name, "cc-%d-%llu-%15s", &pid, &t0, tail) != 3 || pid <= 0 || pid == (int)getpid()) continue;
        int alive = kill((pid_t)pid, 0) == 0 || errno == EPERM;
        if (alive && t0 && start_time((pid_t)pid) != t0) alive = 0; /* the pid was reused */
        if (alive) continue;
        char p[1024];
        if (snprintf(p, sizeof p, "%s/%s", base, e->d_name) >= (int)sizeof p) continue;
        kill_orphans(p);
        remove_tree(p, 0);
    }
    closedir(d);
}

/* The per-user folder of compile directories, made if missing; refused
 * unless it is a directory of this user that nobody else may enter. */
static jn_status user_folder(char *out, size_t n) {
    const char *tmpd = getenv("TMPDIR");
    snprintf(out, n, "%s/janus-%u", tmpd && *tmpd ? tmpd : "/tmp", (unsigned)getuid());
    if (mkdir(out, 0700) != 0 && errno != EEXIST)
        return jn_error(JN_ERR_RUNTIME, "cannot make a temporary directory for the C compiler (%s): %s; set TMPDIR "
                        "to a writable directory", out, strerror(errno));
    struct stat sb;
    if (lstat(out, &sb) != 0 || !S_ISDIR(sb.st_mode) || sb.st_uid != getuid() || (sb.st_mode & 077))
        return jn_error(JN_ERR_RUNTIME, "%s is not a private directory of this user (it must be a directory owned by "
                        "uid %u with mode 0700); remove it, or set TMPDIR to another directory", out, (unsigned)getuid());
    return JN_OK;
}

/* environ with TMPDIR=dir (the compiler's temporaries go to its directory);
 * NULL when out of memory.  Free the array (not the strings but *tmpvar). */
static char **child_env(const char *dir, char **tmpvar) {
    size_t n = 0;
    for (char **e = environ; *e; e++) n++;
    char **env = malloc((n + 2) * sizeof *env);
    *tmpvar = env ? malloc(strlen(dir) + 8) : NULL;
    if (!env || !*tmpvar) {
        free(env);
        free(*tmpvar);
        *tmpvar = NULL;
        return NULL;
    }
    sprintf(*tmpvar, "TMPDIR=%s", dir);
    size_t k = 0;
    for (char **e = environ; *e; e++)
        if (strncmp(*e, "TMPDIR=", 7)) env[k++] = *e;
    env[k++] = *tmpvar;
    env[k] = NULL;
    return env;
}

static int stopped(const jn_cg_cc_options *o) { return o && o->stop && *o->stop; }

/* Splits extra (space separated) into argv slots; returns how many. */
static int split_flags(char *extra, char **argv, int max) {
    int n = 0;
    char *save = NULL;
    for (char *t = strtok_r(extra, " \t", &save); t && n < max; t = strtok_r(NULL, " \t", &save)) argv[n++] = t;
    return n;
}

jn_status jn_cg_compile_so(const char *src, size_t len, const jn_cg_cc_options *o, void **so, size_t *solen,
                           double *seconds) {
    *so = NULL, *solen = 0;
    if (seconds) *seconds = 0;
    double t0 = now_s();
    const char *envcc = getenv("CC");
    const char *cc = o && o->cc ? o->cc : envcc && *envcc ? envcc : NULL;
    char looked[300];
    if (cc) snprintf(looked, sizeof looked, "%s%s", o && o->cc ? "" : "$CC=", cc);
    else snprintf(looked, sizeof looked, "cc and gcc on PATH");
    if (!cc) cc = find_program("cc") ? "cc" : find_program("gcc") ? "gcc" : NULL;
    /* CC may be a command with words ("ccache gcc", "gcc -m64"): the first is the program */
    char *cmd = cc ? strdup(cc) : NULL, *words[16];
    int nw = cmd ? split_flags(cmd, words, 16) : 0;
    if (nw == 0 || !find_program(words[0])) {
        free(cmd);
        return jn_error(JN_ERR_UNSUPPORTED,
                        "no C compiler found to compile the generated kernels (looked for %s); install one "
                        "(apt-get install gcc) or set CC to a C compiler, or run `janus optimize --no-compile` "
                        "to run those kernels through the eager kernels", looked);
    }
    char base[600], dir[700];
    jn_status st = user_folder(base, sizeof base);
    if (st) {
        free(cmd);
        return st;
    }
    sweep_stale(base);
    snprintf(dir, sizeof dir, "%s/cc-%d-%llu-XXXXXX", base, (int)getpid(), start_time(getpid()));
    if (!mkdtemp(dir)) {
        free(cmd);
        return jn_error(JN_ERR_RUNTIME, "cannot make a temporary directory for the C compiler (%s): %s; set TMPDIR "
                        "to a writable directory", dir, strerror(errno));
    }
    char csrc[800], out[800], logp[800];
    snprintf(csrc, sizeof csrc, "%s/kernels.c", dir);
    snprintf(out, sizeof out, "%s/kernels.so", dir);
    snprintf(logp, sizeof logp, "%s/cc.log", dir);
    st = write_file(csrc, src, len);
    char *extra = o && o->extra_flags ? strdup(o->extra_flags) : NULL;
    char *tmpvar = NULL, **cenv = st ? NULL : child_env(dir, &tmpvar);
    if (!st && !cenv) st = jn_error(JN_ERR_NOMEM, "out of memory starting the C compiler");
    if (!st && stopped(o)) st = jn_error(JN_ERR_RUNTIME, "the C compiler was not started: stopped by a signal");
    if (st == JN_OK) {
        char *argv[80];
        int n = 0;
        for (int i = 0; i < nw; i++) argv[n++] = words[i];
        static const char *const flags[] = {"-O3", "-march=native", "-std=c11", "-fPIC", "-shared",
                                            "-ffp-contract=off", "-fno-math-errno", "-fno-trapping-math"};
        for (size_t i = 0; i < sizeof flags / sizeof flags[0]; i++) argv[n++] = (char *)flags[i];
        if (extra) n += split_flags(extra, argv + n, 40);
        argv[n++] = "-o";
        argv[n++] = out;
        argv[n++] = csrc;
        argv[n++] = "-lm";
        argv[n] = NULL;
        /* posix_spawn: safe in a process with threads (the runtime's pool),
         * the compiler's output into the log file, stdin /dev/null; a
         * process group of its own (one kill reaches gcc's cc1 and as too,
         * and a terminal's ^C reaches only us), default signal actions */
        posix_spawn_file_actions_t fa;
        posix_spawn_file_actions_init(&fa);
        posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
        posix_spawn_file_actions_addopen(&fa, 1, logp, O_WRONLY | O_CREAT | O_TRUNC, 0600);
        posix_spawn_file_actions_adddup2(&fa, 1, 2);
        posix_spawnattr_t at;
        posix_spawnattr_init(&at);
        sigset_t def;
        sigemptyset(&def);
        sigaddset(&def, SIGINT), sigaddset(&def, SIGTERM), sigaddset(&def, SIGHUP), sigaddset(&def, SIGPIPE);
        posix_spawnattr_setsigdefault(&at, &def);
        posix_spawnattr_setpgroup(&at, 0);
        posix_spawnattr_setflags(&at, POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGDEF);
        pid_t pid = -1;
        int rc = posix_spawnp(&pid, argv[0], &fa, &at, argv, cenv);
        posix_spawnattr_destroy(&at);
        posix_spawn_file_actions_destroy(&fa);
        if (rc != 0) {
            st = jn_error(JN_ERR_RUNTIME, "cannot start the C compiler %s: %s; check that it runs (or set CC to "
                          "another compiler)", cc, strerror(rc));
        } else {
            int status = 0, said = 0, halted = 0;
            for (;;) {
                pid_t r = waitpid(pid, &status, WNOHANG);
                if (r == pid) break;
                if (r < 0 && errno != EINTR) {
                    status = -1;
                    break;
                }
                if (stopped(o)) { /* the whole group, then reaped */
                    kill(-pid, SIGKILL);
                    kill(pid, SIGKILL);
                    while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
                    }
                    halted = 1;
                    break;
                }
                if (o && o->progress && !said && now_s() - t0 > 1.0) {
                    fprintf(stderr, "janus optimize: compiling the generated kernels with %s ...\n", cc);
                    said = 1;
                }
                struct timespec ts = {0, 20 * 1000 * 1000};
                nanosleep(&ts, NULL);
            }
            if (halted) {
                st = jn_error(JN_ERR_RUNTIME, "the C compiler %s was stopped by a signal (killed, its files removed)", cc);
            } else if (!(status != -1 && WIFEXITED(status) && WEXITSTATUS(status) == 0)) {
                void *log = NULL;
                size_t ll = 0;
                char first[1400] = "";
                if (read_file(logp, &log, &ll) == JN_OK) {
                    char *z = realloc(log, ll + 1);
                    if (z) {
                        z[ll] = 0;
                        first_errors(z, first, sizeof first);
                        log = z;
                    }
                    free(log);
                }
                int code = status != -1 && WIFEXITED(status) ? WEXITSTATUS(status) : -1;
                st = jn_error(JN_ERR_RUNTIME, "the C compiler %s failed (exit %d) on the generated kernels: %s%s; "
                              "check that %s works (or set CC to another compiler)",
                              cc, code, first[0] ? first : "no output", code == 127 ? " (could not run it)" : "", cc);
            } else {
                st = read_file(out, so, solen);
            }
        }
    }
    free(extra);
    free(cmd);
    free(cenv);
    free(tmpvar);
    remove_tree(dir, 0);
    if (seconds) *seconds = now_s() - t0;
    return st;
}
