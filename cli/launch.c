/* launch.c -- `janus run`, `janus check`, and the torch alias every launch
 * gives its child.
 *
 *     janus run [--no-torch] [--] COMMAND...   run COMMAND eagerly on janus, nothing stored
 *     janus check [--] SCRIPT.py...            list the torch names a script uses that janus lacks
 *
 * The torch alias: `janus run`, `janus record` and `janus replay` write a
 * one-file `torch` package into a fresh temporary folder and put that folder
 * first on the child's PYTHONPATH, so a PyTorch script's `import torch`
 * loads janus (janus/_torch_alias.py does the rest: torch.* submodules,
 * unsupported names).  The folder is removed when the child ends.  Only the
 * child and its own children see it; `--no-torch` leaves it out.  Nothing is
 * installed anywhere, so a plain `python train.py` is untouched.
 *
 * `janus check` is a static scan (Python's ast, in janus/check.py) run with
 * the Python that has the janus package: $JANUS_PYTHON (the pip-installed
 * command sets it to its own interpreter), else python3 from PATH.
 */
#include <errno.h>
#include <ftw.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "jn_cli.h"
#include "jn_settings.h"

const char jn_cli_run_usage[] =
    "usage: janus run [--no-torch] [--] COMMAND [ARGS...]\n"
    "\n"
    "Run COMMAND (for example `python3 train.py --epochs 1`) eagerly on janus:\n"
    "nothing is recorded or stored.  A PyTorch script runs unchanged: its\n"
    "`import torch` loads janus.  stdin/stdout/stderr, signals and the exit\n"
    "status pass through.\n"
    "\n"
    "options:\n"
    "  --no-torch  leave `import torch` alone (also for `janus record/replay`)\n"
    "  -h, --help  show this help\n"
    "\n"
    "`janus check SCRIPT.py` lists, before anything runs, the torch names a\n"
    "script uses that janus does not support.\n";

const char jn_cli_check_usage[] =
    "usage: janus check [--] SCRIPT.py [SCRIPT.py...]\n"
    "\n"
    "Scan SCRIPT.py and the local modules it imports (statically: nothing\n"
    "runs) and list every torch name janus does not support, as FILE:LINE\n"
    "with the nearest supported alternative.  Exit status 0 when there are\n"
    "none, 1 when there are, 2 when a script cannot be read or parsed (or\n"
    "janus cannot be imported).\n"
    "\n"
    "The scan runs in the Python named by JANUS_PYTHON (default: python3 on\n"
    "PATH), which must be able to import janus.\n";

/* What torch/__init__.py in the alias folder says: hand over to janus.  The
 * import error names the interpreter, the cause and the ways out. */
static const char alias_init[] =
    "\"\"\"Written by `janus run/record/replay` (cli/launch.c): `import torch` loads janus.\n"
    "\n"
    "This folder is temporary and first on this process's PYTHONPATH; pass --no-torch\n"
    "to janus to import PyTorch itself.\"\"\"\n"
    "import sys\n"
    "\n"
    "try:\n"
    "    from janus import _torch_alias\n"
    "except ImportError as e:\n"
    "    raise ImportError(f\"`import torch` loads janus under `janus run/record/replay`, but \"\n"
    "                      f\"{sys.executable} cannot import janus ({e}): install it (pip install .) or \"\n"
    "                      f\"put it on PYTHONPATH, or pass --no-torch to janus to use PyTorch\") from e\n"
    "_torch_alias.install()\n";

int jn_cli_torch_flag(const char *a, void *torch) {
    if (strcmp(a, "--no-torch")) return 0;
    *(int *)torch = 0;
    return 1;
}

static int write_file(const char *path, const char *text) {
    FILE *f = fopen(path, "w");
    if (!f) return -1;
    size_t n = strlen(text);
    int bad = fwrite(text, 1, n, f) != n;
    bad |= fclose(f) != 0;
    return bad ? -1 : 0;
}

int jn_cli_alias_begin(const char *cmd, char **dir) {
    *dir = NULL;
    const char *tmp = getenv("TMPDIR");
    if (!tmp || !tmp[0]) tmp = "/tmp";
    char path[PATH_MAX];
    if ((size_t)snprintf(path, sizeof path, "%s/janus-torch-XXXXXX", tmp) >= sizeof path) {
        fprintf(stderr, "janus %s: TMPDIR is too long for the torch alias folder; set TMPDIR or pass --no-torch\n",
                cmd);
        return -1;
    }
    if (!mkdtemp(path)) {
        fprintf(stderr, "janus %s: cannot create the torch alias folder in %s: %s; set TMPDIR to a writable "
                        "folder or pass --no-torch\n", cmd, tmp, strerror(errno));
        return -1;
    }
    char *d = strdup(path);
    if (!d) {
        rmdir(path);
        fprintf(stderr, "janus %s: out of memory\n", cmd);
        return -1;
    }
    *dir = d;
    char pkg[PATH_MAX + 32], init[PATH_MAX + 48];
    snprintf(pkg, sizeof pkg, "%s/torch", d);
    snprintf(init, sizeof init, "%s/__init__.py", pkg);
    const char *old = getenv("PYTHONPATH");
    size_t n = strlen(d) + (old ? strlen(old) : 0) + 2;
    char *pp = malloc(n);
    int err = !pp || mkdir(pkg, 0700) != 0 || write_file(init, alias_init) != 0;
    int e = errno;
    if (!err) {
        if (old && old[0]) snprintf(pp, n, "%s:%s", d, old);
        else snprintf(pp, n, "%s", d);
        err = setenv("PYTHONPATH", pp, 1) != 0;
        e = errno;
    }
    free(pp);
    if (err) {
        fprintf(stderr, "janus %s: cannot set up the torch alias in %s: %s; pass --no-torch to run without it\n",
                cmd, d, strerror(e));
        jn_cli_alias_end(d);
        *dir = NULL;
        return -1;
    }
    return 0;
}

static int rm_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw) {
    (void)st, (void)flag, (void)ftw;
    return remove(path) != 0 && errno != ENOENT ? -1 : 0;
}

void jn_cli_alias_end(char *dir) {
    if (!dir) return;
    /* the folder holds our file and whatever bytecode Python cached beside it */
    nftw(dir, rm_entry, 8, FTW_DEPTH | FTW_PHYS);
    free(dir);
}

int jn_cli_run(int argc, char **argv) {
    int torch = 1, i = 1;
    for (; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "--")) {
            i++;
            break;
        }
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            fputs(jn_cli_run_usage, stdout);
            return 0;
        }
        if (jn_cli_torch_flag(a, &torch)) continue;
        if (a[0] == '-' && a[1]) {
            fprintf(stderr, "janus run: unknown option '%s' (put the command after --)\n\n%s", a, jn_cli_run_usage);
            return 2;
        }
        break;
    }
    if (i >= argc) {
        fprintf(stderr, "janus run: no COMMAND given\n\n%s", jn_cli_run_usage);
        return 2;
    }
    /* nothing stored: a store named by our own environment is not the child's business */
    const char *child_vars[] = {"JANUS_RECORD_DB", "JANUS_RECORD_RUN", "JANUS_REPLAY_DB", "JANUS_REPLAY_RUN"};
    for (size_t k = 0; k < sizeof child_vars / sizeof *child_vars; k++) unsetenv(child_vars[k]);
    char *alias = NULL;
    if (torch && jn_cli_alias_begin("run", &alias)) return 1;
    const char *status;
    int rc = jn_cli_spawn_wait("run", argv + i, &status);
    jn_cli_alias_end(alias);
    return rc;
}

/* The scan's entry point: imports janus.check with a message naming the
 * interpreter when janus is not importable. */
static const char check_main[] =
    "import sys\n"
    "try:\n"
    "    from janus import check\n"
    "except ImportError as e:\n"
    "    print(f'janus check: {sys.executable} cannot import janus ({e}); install it (pip install .), '\n"
    "          f'put it on PYTHONPATH, or set JANUS_PYTHON to a Python that has it', file=sys.stderr)\n"
    "    sys.exit(2)\n"
    "sys.exit(check.main(sys.argv[1:]))\n";

int jn_cli_check(int argc, char **argv) {
    int i = 1;
    if (i < argc && (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help"))) {
        fputs(jn_cli_check_usage, stdout);
        return 0;
    }
    if (i < argc && !strcmp(argv[i], "--")) i++;
    if (i >= argc) {
        fprintf(stderr, "janus check: no SCRIPT given\n\n%s", jn_cli_check_usage);
        return 2;
    }
    const char *py = NULL;
    if (jn_setting_str(JN_S_PYTHON, &py) != JN_OK) {
        fprintf(stderr, "janus check: %s\n", jn_errmsg());
        return 2;
    }
    if (!py || !py[0]) py = "python3";
    int n = argc - i;
    char **cmd = calloc((size_t)n + 4, sizeof *cmd);
    if (!cmd) {
        fprintf(stderr, "janus check: out of memory\n");
        return 1;
    }
    cmd[0] = (char *)py;
    cmd[1] = "-c";
    cmd[2] = (char *)check_main;
    for (int k = 0; k < n; k++) cmd[3 + k] = argv[i + k];
    const char *status;
    int rc = jn_cli_spawn_wait("check", cmd, &status);
    free(cmd);
    return rc;
}
