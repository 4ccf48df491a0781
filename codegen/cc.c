/* cc.c -- the C compiler driver: generated C source -> shared object bytes.
 *
 * The compiler is o->cc, else $CC (a command: its first word is the
 * program, "ccache gcc" works), else the first of cc and gcc found on
 * PATH (looked up here, so a missing one is a clear error rather than a
 * shell's "not found").  The source is written into a private temporary
 * directory (mkdtemp, mode 0700), compiled there with
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
 */
#include <errno.h>
#include <fcntl.h>
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

static void remove_dir(const char *dir, const char *const *names, int n) {
    char p[600];
    for (int i = 0; i < n; i++) {
        snprintf(p, sizeof p, "%s/%s", dir, names[i]);
        unlink(p);
    }
    rmdir(dir);
}

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
    const char *env = getenv("CC");
    const char *cc = o && o->cc ? o->cc : env && *env ? env : NULL;
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
    const char *tmpd = getenv("TMPDIR");
    char dir[512];
    snprintf(dir, sizeof dir, "%s/janus_cc_XXXXXX", tmpd && *tmpd ? tmpd : "/tmp");
    if (!mkdtemp(dir)) {
        free(cmd);
        return jn_error(JN_ERR_RUNTIME, "cannot make a temporary directory for the C compiler (%s): %s; set TMPDIR "
                        "to a writable directory", dir, strerror(errno));
    }
    static const char *const names[] = {"kernels.c", "kernels.so", "cc.log"};
    char csrc[600], out[600], logp[600];
    snprintf(csrc, sizeof csrc, "%s/%s", dir, names[0]);
    snprintf(out, sizeof out, "%s/%s", dir, names[1]);
    snprintf(logp, sizeof logp, "%s/%s", dir, names[2]);
    jn_status st = write_file(csrc, src, len);
    char *extra = o && o->extra_flags ? strdup(o->extra_flags) : NULL;
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
         * the compiler's output into the log file */
        posix_spawn_file_actions_t fa;
        posix_spawn_file_actions_init(&fa);
        posix_spawn_file_actions_addopen(&fa, 1, logp, O_WRONLY | O_CREAT | O_TRUNC, 0600);
        posix_spawn_file_actions_adddup2(&fa, 1, 2);
        pid_t pid = -1;
        int rc = posix_spawnp(&pid, argv[0], &fa, NULL, argv, environ);
        posix_spawn_file_actions_destroy(&fa);
        if (rc != 0) {
            st = jn_error(JN_ERR_RUNTIME, "cannot start the C compiler %s: %s; check that it runs (or set CC to "
                          "another compiler)", cc, strerror(rc));
        } else {
            int status = 0, said = 0;
            for (;;) {
                pid_t r = waitpid(pid, &status, WNOHANG);
                if (r == pid) break;
                if (r < 0 && errno != EINTR) {
                    status = -1;
                    break;
                }
                if (o && o->progress && !said && now_s() - t0 > 1.0) {
                    fprintf(stderr, "janus optimize: compiling the generated kernels with %s ...\n", cc);
                    said = 1;
                }
                struct timespec ts = {0, 20 * 1000 * 1000};
                nanosleep(&ts, NULL);
            }
            if (!(status != -1 && WIFEXITED(status) && WEXITSTATUS(status) == 0)) {
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
    remove_dir(dir, names, 3);
    if (seconds) *seconds = now_s() - t0;
    return st;
}
