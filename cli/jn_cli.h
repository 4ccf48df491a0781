/* jn_cli.h -- internal interface of the `janus` command (the files in cli/).
 *
 * janus.c parses the top-level command line and dispatches to one function
 * per subcommand (record.c, replay.c, inspect.c, optimize.c, launch.c, report.c).  The helpers declared here are the
 * small pieces the subcommands share: a streaming JSON emitter (inspect
 * --json, the argv column of a run), number formatting for humans, and the
 * usage texts.  Nothing here is a public API; every symbol is jn_cli_.
 */
#ifndef JN_CLI_H
#define JN_CLI_H

#include <stdint.h>
#include <stdio.h>

#include "jn_db.h"

/* Subcommands: argv[0] is the subcommand name.  Return the process exit code. */
int jn_cli_record(int argc, char **argv);
int jn_cli_inspect(int argc, char **argv);
int jn_cli_optimize(int argc, char **argv);
/* Hidden: times a bundle graph optimized vs op by op (bench_exec.c, benchmarks/bench_exec.py). */
int jn_cli_bench_exec(int argc, char **argv);
int jn_cli_replay(int argc, char **argv);
int jn_cli_run(int argc, char **argv);   /* launch.c */
int jn_cli_check(int argc, char **argv); /* launch.c */
int jn_cli_report(int argc, char **argv);

extern const char jn_cli_record_usage[];
extern const char jn_cli_replay_usage[];
extern const char jn_cli_inspect_usage[];
extern const char jn_cli_optimize_usage[];
extern const char jn_cli_run_usage[];
extern const char jn_cli_check_usage[];
extern const char jn_cli_report_usage[];

/* The torch alias (launch.c): `janus run/record/replay` put a temporary
 * folder with a `torch` package that loads janus first on the child's
 * PYTHONPATH.  jn_cli_torch_flag takes --no-torch (torch: int *, set to 0)
 * for jn_cli_launch_args; jn_cli_alias_begin makes the folder and sets
 * PYTHONPATH (0, or -1 after a message), jn_cli_alias_end removes it and
 * frees dir (NULL: nothing). */
int jn_cli_torch_flag(const char *a, void *torch);
int jn_cli_alias_begin(const char *cmd, char **dir);
void jn_cli_alias_end(char *dir);

/* What `janus record` and `janus replay` share (record.c).  cmd is the
 * subcommand name for messages ("record"); abs the store's absolute path,
 * shown the path as the user gave it.  Each prints its own messages. */
double jn_cli_now(void);                          /* unix time */
char *jn_cli_absolute(const char *path);          /* malloc'ed; NULL on failure (errno) */
/* Clear messages for a directory, an unwritable file or directory: -1. */
int jn_cli_check_location(const char *cmd, const char *abs, const char *shown);
/* Says so plainly when the file system holding abs is full. */
void jn_cli_full_disk_hint(const char *cmd, const char *abs);
/* A new run row (kind "record", "replay" or "eager"; bundle_id 0 = none)
 * for the command argv[0..ncmd-1]: 0, or -1 after a message. */
int jn_cli_run_begin(const char *cmd, jn_db *db, const char *abs, const char *shown, int ncmd, char **argv,
                     const char *kind, int64_t bundle_id, int64_t *run);
/* Run argv as a child (signals forwarded), wait: the exit code a shell
 * reports; *status "finished", "error" or "killed". */
int jn_cli_spawn_wait(const char *cmd, char **argv, const char **status);
/* The options `janus record` and `janus replay` share: -h/--help, --db PATH
 * (--db=PATH), `--`, then the command.  flag(a, ctx) takes a command's own
 * flags (nonzero: taken).  Returns -1 with *first the command's index in
 * argv, else the exit code (0 after --help, 2 for a usage error, printed). */
/* `janus CMD --nproc N ...`: exec mpirun -n N (--oversubscribe) running
 * `janus CMD` with the same arguments but --nproc on every rank.  Returns
 * -1 when argv has no --nproc, else the exit code of a failure (exec
 * succeeded: no return). */
int jn_cli_nproc(const char *cmd, int argc, char **argv);
int jn_cli_launch_args(const char *cmd, const char *usage, int argc, char **argv,
                       int (*flag)(const char *a, void *ctx), void *ctx, const char **dbpath, int *first);
/* Close the run (*ended: 0 when its end could not be stored); returns the
 * store opened for writing (NULL on failure). */
jn_db *jn_cli_run_end(const char *cmd, const char *abs, int64_t run, int rc, const char *status, int *ended);

/* One group of misses in words, as `janus inspect` prints it (inspect.c):
 * "g1 guard 2 at train.py:12: <reason> (seen 32)". */
const char *jn_cli_miss_group_text(const jn_db_miss_group *g, char *buf, size_t n);

/* A replay run's totals from its stored counters (inspect.c), read the
 * same way by `janus replay`'s exit line, `janus inspect` and `janus
 * report`.  misses counts every fallback, also a segment that matched no
 * graph (a miss row without a graph, in no graph's count); chosen: those
 * by timing's choice (JN_DB_MISS_CHOICE). */
typedef struct {
    int64_t hits, misses, chosen, extrapolated;
    double seconds;
} jn_cli_replay_totals;
jn_cli_replay_totals jn_cli_replay_sum(const jn_db_replay_graph *g, int ng, const jn_db_replay_miss *m, int nm);

/* Analyze the store at path (run 0 = all) and print its graphs as IR text
 * to out (optimize.c; `janus inspect --graphs`).  Returns the exit code. */
int jn_cli_dump_graphs(const char *cmd, const char *path, int64_t run, FILE *out);

/* Streaming JSON: commas and nesting are tracked, strings escaped (control
 * characters, quotes, backslashes; invalid UTF-8 bytes become U+FFFD so the
 * output always parses). */
#define JN_CLI_JSON_DEPTH 32
typedef struct {
    FILE *f;
    int depth;
    int count[JN_CLI_JSON_DEPTH]; /* values emitted at each level */
    int after_key;                /* a key was just written: no comma before the value */
} jn_cli_json;

void jn_cli_json_init(jn_cli_json *j, FILE *f);
void jn_cli_json_obj(jn_cli_json *j);   /* { */
void jn_cli_json_arr(jn_cli_json *j);   /* [ */
void jn_cli_json_end(jn_cli_json *j, char close); /* } or ] */
void jn_cli_json_key(jn_cli_json *j, const char *key);
void jn_cli_json_str(jn_cli_json *j, const char *s); /* NULL -> null */
void jn_cli_json_int(jn_cli_json *j, int64_t v);
void jn_cli_json_num(jn_cli_json *j, double v);      /* NaN/inf -> null */
void jn_cli_json_null(jn_cli_json *j);
/* A value that is already JSON text (argv as stored by janus record). */
void jn_cli_json_raw(jn_cli_json *j, const char *json);
/* The extrapolations of a replay run as an array (inspect.c; `janus inspect
 * --json` and `janus report` write the same fields). */
void jn_cli_json_extraps(jn_cli_json *j, const jn_db_replay_extrap *x, int nx);
/* The region verdicts of a bundle as an array (inspect.c; `janus inspect
 * --json` bundles[].regions and `janus report` write the same fields). */
void jn_cli_json_verdicts(jn_cli_json *j, const jn_db_region_verdict *v, int n);
/* What a replay run's regions did (schema v10) as an array: per region its
 * calls, replaced calls, refused, and the reasons its Python ran with their
 * counts (`janus inspect --json` replay.regions, `janus report` runs[].regions).
 * 1 when the store could not be read (the array is then empty). */
int jn_cli_json_region_replays(jn_cli_json *j, jn_db *db, int64_t run);
/* What a replay run's backward skip did (schema v11) as an object: calls,
 * skipped, learned, declined, fallbacks, skip_rate and the reasons per
 * place; null when none was stored (`janus inspect --json`
 * replay.backward, `janus report` runs[].backward).  1 when the store
 * could not be read. */
int jn_cli_json_backward(jn_cli_json *j, jn_db *db, int64_t run);
/* Write s as a JSON string literal (with quotes) to f. */
void jn_cli_json_quote(FILE *f, const char *s);

/* 45000 -> "45,000" (buf of at least 32 bytes). */
const char *jn_cli_commas(int64_t v, char *buf);
/* 1234567 -> "1.2 MB" (buf of at least 32 bytes). */
const char *jn_cli_bytes(int64_t v, char *buf);

#endif
