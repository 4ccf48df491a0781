/* janus.c -- entry point of the `janus` command.
 *
 *     janus run [--no-torch] [--] COMMAND...     run COMMAND eagerly on janus
 *     janus check SCRIPT.py...                   list the torch names janus lacks
 *     janus record [--db PATH] [--] COMMAND...   run COMMAND with recording on
 *     janus replay [--db PATH] [--] COMMAND...   run COMMAND through the stored graphs
 *     janus inspect [--json] [--run N] run.db    summarize a trace store
 *     janus report [-o report.html] run.db       one HTML page: coverage, graphs, misses, plots
 *     janus optimize [--dump-ir] run.db          mine the traces into graphs
 *     janus env [--all]                          print the settings (JANUS_* variables)
 *     janus --help | --help-env | --version | COMMAND --help
 *
 * This file parses the top level of the command line and hands the rest to
 * one function per subcommand (record.c, replay.c, inspect.c, optimize.c,
 * launch.c, report.c).  It also
 * holds the helpers the subcommands share (jn_cli.h): a streaming JSON emitter and
 * number formatting.  Usage mistakes print the usage on stderr and exit 2,
 * like other Unix tools; runtime failures exit 1 with a message that names
 * the file and the fix.  Before any command runs, every setting set in the
 * environment is parsed (jn_setting_check): a bad one is refused here, exit
 * 2 naming the variable, since some are only read deep inside a kernel.
 */
#include <math.h>
#include <string.h>

#include "jn_cli.h"
#include "jn_settings.h"

static const char usage[] =
    "usage: janus [--help] [--version] COMMAND [ARGS...]\n"
    "\n"
    "Janus records training runs, optimizes them offline and replays them.\n"
    "\n"
    "commands:\n"
    "  run      run a command (e.g. python3 train.py) eagerly on janus; a\n"
    "           PyTorch script's `import torch` loads janus (run, record and\n"
    "           replay all do that; --no-torch turns it off)\n"
    "  check    list the torch names a script uses that janus does not\n"
    "           support, with file:line, before anything runs\n"
    "  record   run a command (e.g. python3 train.py) with recording enabled,\n"
    "           appending a new run to a trace store (default run.db)\n"
    "  inspect  print the runs, steps, op histogram, step signatures and how\n"
    "           they differ, sync points, control flow and shape variation\n"
    "           of a trace store (--json for machines)\n"
    "  report   write one HTML page about a trace store: where the time went\n"
    "           (graphs vs eager, per step), per-graph timings, misses by\n"
    "           guard with their source lines, replay vs eager (plots)\n"
    "  optimize mine a trace store's steps into generalized, guarded graphs,\n"
    "           optimize them and store them as the store's bundle\n"
    "  replay   run the same command through the bundle's compiled graphs,\n"
    "           falling back to eager where they do not match (--eager for\n"
    "           the baseline, --strict for CI)\n"
    "  env      print the settings (JANUS_* environment variables) and the\n"
    "           values set now, marking any that would be refused (--all:\n"
    "           also the test, benchmark and build hooks); --help-env is the same\n"
    "\n"
    "`janus COMMAND --help` describes one command.  A JANUS_* variable set to\n"
    "a value janus refuses stops every command (exit 2, naming it).\n";

static const char env_usage[] =
    "usage: janus env [--all]      (or: janus --help-env [--all])\n"
    "\n"
    "Print janus's settings -- the JANUS_* environment variables -- with their\n"
    "type, accepted values, default, the files that read them and the value\n"
    "set now.  A value set now that janus would refuse is marked REFUSED and\n"
    "the exit status is 1 (every janus command refuses to start with it).\n"
    "\n"
    "options:\n"
    "  --all       every setting: also those janus sets for the process it\n"
    "              starts, and the hooks of tests, benchmarks and builds\n"
    "  -h, --help  show this help\n";

/* `janus env`: the table; exit 1 if a value set now is refused.  Without
 * --all the hidden rows are still checked, one stderr line each. */
static int cmd_env(int argc, char **argv) {
    unsigned shown = 1u << JN_SK_USER;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--all")) {
            shown = ~0u;
        } else if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
            fputs(env_usage, stdout);
            return 0;
        } else {
            fprintf(stderr, "janus env: unknown argument '%s'\n\n%s", argv[i], env_usage);
            return 2;
        }
    }
    int bad = jn_setting_print(stdout, shown);
    for (int s = 0; s < JN_S__COUNT; s++) {
        const char *v = jn_setting_raw((jn_setting)s);
        int b;
        int64_t n;
        double d;
        if (shown & (1u << jn_setting_info_of((jn_setting)s)->kind) || !v ||
            !jn_setting_parse((jn_setting)s, v, &b, &n, &d))
            continue;
        fprintf(stderr, "janus env: REFUSED: %s (`janus env --all` lists it)\n", jn_errmsg());
        bad++;
    }
    if (bad) fprintf(stderr, "janus env: %d setting%s set now would be refused\n", bad, bad == 1 ? "" : "s");
    return bad ? 1 : 0;
}

int main(int argc, char **argv) {
    if (argc < 2) {
        fputs(usage, stderr);
        return 2;
    }
    const char *cmd = argv[1];
    if (!strcmp(cmd, "--help") || !strcmp(cmd, "-h") || !strcmp(cmd, "help")) {
        if (!strcmp(cmd, "help") && argc > 2) {
            /* `janus help record` == `janus record --help` */
            if (!strcmp(argv[2], "record")) { fputs(jn_cli_record_usage, stdout); return 0; }
            if (!strcmp(argv[2], "inspect")) { fputs(jn_cli_inspect_usage, stdout); return 0; }
            if (!strcmp(argv[2], "optimize")) { fputs(jn_cli_optimize_usage, stdout); return 0; }
            if (!strcmp(argv[2], "replay")) { fputs(jn_cli_replay_usage, stdout); return 0; }
            if (!strcmp(argv[2], "env")) { fputs(env_usage, stdout); return 0; }
            if (!strcmp(argv[2], "run")) { fputs(jn_cli_run_usage, stdout); return 0; }
            if (!strcmp(argv[2], "check")) { fputs(jn_cli_check_usage, stdout); return 0; }
            if (!strcmp(argv[2], "report")) { fputs(jn_cli_report_usage, stdout); return 0; }
            fprintf(stderr, "janus: unknown command '%s'\n\n%s", argv[2], usage);
            return 2;
        }
        fputs(usage, stdout);
        return 0;
    }
    if (!strcmp(cmd, "--version") || !strcmp(cmd, "-V")) {
        printf("janus %s\n", JANUS_VERSION);
        return 0;
    }
    if (!strcmp(cmd, "env") || !strcmp(cmd, "--help-env")) return cmd_env(argc - 1, argv + 1);
    static const struct {
        const char *name;
        int (*run)(int, char **);
    } cmds[] = {{"record", jn_cli_record}, {"inspect", jn_cli_inspect}, {"optimize", jn_cli_optimize},
                {"bench-exec", jn_cli_bench_exec} /* hidden: benchmarks/bench_exec.py */, {"replay", jn_cli_replay},
                {"run", jn_cli_run}, {"check", jn_cli_check}, {"report", jn_cli_report}};
    for (size_t k = 0; k < sizeof cmds / sizeof cmds[0]; k++) {
        if (strcmp(cmd, cmds[k].name)) continue;
        int help = argc > 2 && (!strcmp(argv[2], "-h") || !strcmp(argv[2], "--help"));
        if (!help && jn_setting_check(JN_SETTING_CHECKED) != JN_OK) {
            fprintf(stderr, "janus %s: %s\n(`janus env` lists the settings and what each accepts)\n", cmd, jn_errmsg());
            return 2;
        }
        return cmds[k].run(argc - 1, argv + 1);
    }
    if (cmd[0] == '-')
        fprintf(stderr, "janus: unknown option '%s'\n\n%s", cmd, usage);
    else
        fprintf(stderr, "janus: unknown command '%s' (commands: run, check, record, inspect, report, optimize, replay, env)\n\n%s", cmd,
                usage);
    return 2;
}

/* ------------------------------------------------------------------ JSON */

void jn_cli_json_init(jn_cli_json *j, FILE *f) {
    memset(j, 0, sizeof *j);
    j->f = f;
}

/* Comma before every value but the first of its container (keys count as
 * the value they introduce). */
static void json_sep(jn_cli_json *j) {
    if (j->after_key) {
        j->after_key = 0;
        return;
    }
    if (j->count[j->depth]++ > 0) fputc(',', j->f);
}

static void json_open(jn_cli_json *j, char c) {
    json_sep(j);
    fputc(c, j->f);
    if (j->depth + 1 < JN_CLI_JSON_DEPTH) j->depth++;
    j->count[j->depth] = 0;
}

void jn_cli_json_obj(jn_cli_json *j) { json_open(j, '{'); }
void jn_cli_json_arr(jn_cli_json *j) { json_open(j, '['); }

void jn_cli_json_end(jn_cli_json *j, char close) {
    fputc(close, j->f);
    if (j->depth > 0) j->depth--;
}

void jn_cli_json_key(jn_cli_json *j, const char *key) {
    json_sep(j);
    jn_cli_json_quote(j->f, key);
    fputc(':', j->f);
    j->after_key = 1;
}

void jn_cli_json_str(jn_cli_json *j, const char *s) {
    json_sep(j);
    if (!s) fputs("null", j->f);
    else jn_cli_json_quote(j->f, s);
}

void jn_cli_json_int(jn_cli_json *j, int64_t v) {
    json_sep(j);
    fprintf(j->f, "%lld", (long long)v);
}

void jn_cli_json_num(jn_cli_json *j, double v) {
    json_sep(j);
    if (!isfinite(v)) fputs("null", j->f);
    else fprintf(j->f, "%.17g", v);
}

void jn_cli_json_null(jn_cli_json *j) {
    json_sep(j);
    fputs("null", j->f);
}

void jn_cli_json_raw(jn_cli_json *j, const char *json) {
    json_sep(j);
    fputs(json, j->f);
}

/* Length of the valid UTF-8 sequence at s, or 0 if it is not one. */
static int utf8_len(const unsigned char *s) {
    unsigned c = s[0];
    int n;
    if (c < 0x80) return 1;
    if (c >= 0xC2 && c <= 0xDF) n = 2;
    else if (c >= 0xE0 && c <= 0xEF) n = 3;
    else if (c >= 0xF0 && c <= 0xF4) n = 4;
    else return 0;
    for (int i = 1; i < n; i++)
        if ((s[i] & 0xC0) != 0x80) return 0;
    return n;
}

void jn_cli_json_quote(FILE *f, const char *str) {
    const unsigned char *s = (const unsigned char *)str;
    fputc('"', f);
    while (*s) {
        unsigned c = *s;
        if (c == '"' || c == '\\') {
            fputc('\\', f);
            fputc((int)c, f);
            s++;
        } else if (c < 0x20 || c == 0x7F) {
            switch (c) {
            case '\n': fputs("\\n", f); break;
            case '\r': fputs("\\r", f); break;
            case '\t': fputs("\\t", f); break;
            case '\b': fputs("\\b", f); break;
            case '\f': fputs("\\f", f); break;
            default: fprintf(f, "\\u%04x", c);
            }
            s++;
        } else if (c < 0x80) {
            fputc((int)c, f);
            s++;
        } else {
            int n = utf8_len(s);
            if (n == 0) {
                fputs("\\ufffd", f); /* file names and argv need not be UTF-8 */
                s++;
            } else {
                fwrite(s, 1, (size_t)n, f);
                s += n;
            }
        }
    }
    fputc('"', f);
}

/* ------------------------------------------------------------ formatting */

const char *jn_cli_commas(int64_t v, char *buf) {
    char tmp[32];
    int neg = v < 0;
    uint64_t u = neg ? (uint64_t)0 - (uint64_t)v : (uint64_t)v;
    int n = snprintf(tmp, sizeof tmp, "%llu", (unsigned long long)u);
    char *p = buf;
    if (neg) *p++ = '-';
    for (int i = 0; i < n; i++) {
        if (i > 0 && (n - i) % 3 == 0) *p++ = ',';
        *p++ = tmp[i];
    }
    *p = 0;
    return buf;
}

const char *jn_cli_bytes(int64_t v, char *buf) {
    if (v < 1000) snprintf(buf, 32, "%lld bytes", (long long)v);
    else if (v < 1000 * 1000) snprintf(buf, 32, "%.1f kB", (double)v / 1e3);
    else if (v < (int64_t)1000 * 1000 * 1000) snprintf(buf, 32, "%.1f MB", (double)v / 1e6);
    else snprintf(buf, 32, "%.2f GB", (double)v / 1e9);
    return buf;
}
