/* janus.c -- entry point of the `janus` command.
 *
 *     janus run [--no-torch] [--] COMMAND...     run COMMAND eagerly on janus
 *     janus check SCRIPT.py...                   list the torch names janus lacks
 *     janus record [--db PATH] [--] COMMAND...   run COMMAND with recording on
 *     janus replay [--db PATH] [--] COMMAND...   run COMMAND through the stored graphs
 *     janus inspect [--json] [--run N] run.db    summarize a trace store
 *     janus optimize [--dump-ir] run.db          mine the traces into graphs
 *     janus --help | --version | COMMAND --help
 *
 * This file parses the top level of the command line and hands the rest to
 * one function per subcommand (record.c, replay.c, inspect.c, optimize.c,
 * launch.c).  It also
 * holds the helpers the subcommands share (jn_cli.h): a streaming JSON emitter and
 * number formatting.  Usage mistakes print the usage on stderr and exit 2,
 * like other Unix tools; runtime failures exit 1 with a message that names
 * the file and the fix.
 */
#include <math.h>
#include <string.h>

#include "jn_cli.h"

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
    "  optimize mine a trace store's steps into generalized, guarded graphs,\n"
    "           optimize them and store them as the store's bundle\n"
    "  replay   run the same command through the bundle's compiled graphs,\n"
    "           falling back to eager where they do not match (--eager for\n"
    "           the baseline, --strict for CI)\n"
    "\n"
    "`janus COMMAND --help` describes one command.\n";

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
            if (!strcmp(argv[2], "run")) { fputs(jn_cli_run_usage, stdout); return 0; }
            if (!strcmp(argv[2], "check")) { fputs(jn_cli_check_usage, stdout); return 0; }
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
    if (!strcmp(cmd, "record")) return jn_cli_record(argc - 1, argv + 1);
    if (!strcmp(cmd, "inspect")) return jn_cli_inspect(argc - 1, argv + 1);
    if (!strcmp(cmd, "optimize")) return jn_cli_optimize(argc - 1, argv + 1);
    if (!strcmp(cmd, "bench-exec")) return jn_cli_bench_exec(argc - 1, argv + 1); /* hidden: benchmarks/bench_exec.py */
    if (!strcmp(cmd, "replay")) return jn_cli_replay(argc - 1, argv + 1);
    if (!strcmp(cmd, "run")) return jn_cli_run(argc - 1, argv + 1);
    if (!strcmp(cmd, "check")) return jn_cli_check(argc - 1, argv + 1);
    if (cmd[0] == '-')
        fprintf(stderr, "janus: unknown option '%s'\n\n%s", cmd, usage);
    else
        fprintf(stderr, "janus: unknown command '%s' (commands: run, check, record, inspect, optimize, replay)\n\n%s", cmd, usage);
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
