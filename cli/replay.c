/* replay.c -- `janus replay [--db PATH] [--strict] [--eager] [--] COMMAND...`
 *
 * Runs COMMAND (the same, unchanged training script) with the graphs `janus
 * optimize` stored in the trace store: the janus package in the child sees
 * JANUS_REPLAY_DB (the store's absolute path) and JANUS_REPLAY_RUN (a run
 * row made for this replay, kind 'replay') and replays through the bundle;
 * at exit it stores its counters in that run (jn_db_replay_put), which
 * `janus inspect` shows.  --eager runs the same command with JANUS_REPLAY=0
 * (a run of kind 'eager': the baseline to compare against); --strict sets
 * JANUS_REPLAY_STRICT=1, so that a miss is an error (for CI).  The same
 * switches in our own environment (JANUS_REPLAY=0, JANUS_REPLAY_STRICT=1)
 * mean the same.
 *
 * A store this process cannot write (a read-only mount, another user's
 * directory) or cannot add a run to (a full disk) still replays: its
 * bundle is used, no run row is made, one line says the counters cannot be
 * stored, and the child prints its own summary line at exit instead.
 *
 * What cannot replay still runs: a store that is missing, not a janus store,
 * unreadable, without a bundle, or whose bundle this janus or machine cannot
 * use makes the command run eagerly after one line on stderr saying why and
 * what to do -- except under --strict, where it is an error (exit 1) and the
 * command is not started.  Whether the recorded graphs fit the command is
 * the child's business: a bundle from another script simply misses, and the
 * counters say so.
 *
 * Everything about the child -- environment, stdin/stdout/stderr, signal
 * forwarding, the run's end and the exit status -- is `janus record`'s
 * (record.c's jn_cli_ helpers).  At the end one line on stderr sums up the
 * counters the child stored.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "jn_cli.h"
#include "jn_db.h"
#include "jn_bundle.h"
#include "jn_settings.h"

const char jn_cli_replay_usage[] =
    "usage: janus replay [--db PATH] [--strict] [--eager] [--no-torch] [--nproc N] [--] COMMAND [ARGS...]\n"
    "\n"
    "Run COMMAND (the script that was recorded, e.g. `python3 train.py\n"
    "--epochs 5`) with the graphs `janus optimize` stored in the trace store:\n"
    "each step that matches a graph runs as one compiled unit, anything else\n"
    "runs eagerly as written.  Per-graph hits, misses and time, and each\n"
    "miss's reason and source line, are stored in a new run of kind 'replay'\n"
    "(`janus inspect PATH` shows them).  stdin/stdout/stderr, signals and the\n"
    "exit status pass through.\n"
    "\n"
    "options:\n"
    "  --db PATH   trace store with the bundle (default run.db)\n"
    "  --eager     run the command eagerly (JANUS_REPLAY=0), for comparison;\n"
    "              stored as a run of kind 'eager'\n"
    "  --strict    a miss is an error (JANUS_REPLAY_STRICT=1), for CI; so is\n"
    "              a store without a usable bundle\n"
    "  --no-torch  leave `import torch` alone (by default it loads janus)\n"
    "  --nproc N   run N ranks under mpirun, each replayed (mpirun -n N janus replay ...)\n"
    "  -h, --help  show this help\n"
    "\n"
    "Without a usable bundle (no store, not a janus store, never optimized,\n"
    "made by another janus or for another CPU) the command runs eagerly and\n"
    "one line on stderr says why.  The child sees JANUS_REPLAY_DB (absolute\n"
    "path) and JANUS_REPLAY_RUN (the run id).\n";

/* The newest bundle of target cpu (else a CUDA one), and whether it loads here: its id (0 =
 * none) and, when it cannot be replayed, why (in why, empty otherwise). */
static int64_t usable_bundle(jn_db *db, const char *shown, char *why, size_t n) {
    jn_db_bundle *list = NULL;
    int nb = 0;
    int64_t id = 0;
    why[0] = 0;
    if (jn_db_bundle_list(db, &list, &nb) != JN_OK) {
        snprintf(why, n, "%s", jn_errmsg());
        return 0;
    }
    int64_t gpu = 0; /* a CUDA bundle alone: the child picks it for its GPU, or says why not */
    for (int i = 0; i < nb; i++) {
        if (!strcmp(list[i].target, "cpu")) id = list[i].id; /* oldest first: the last is the newest */
        else if (!strncmp(list[i].target, "cuda:", 5)) gpu = list[i].id;
    }
    jn_db_bundle_list_free(list, nb);
    if (!id && gpu) return gpu;
    if (!id) {
        snprintf(why, n, "%s has no bundle; run `janus optimize %s` first", shown, shown);
        return 0;
    }
    jn_cg_bundle_expect e = {.db_path = shown};
    jn_cg_bundle *b = NULL;
    if (jn_cg_bundle_open(db, &e, &b) != JN_OK) snprintf(why, n, "%s", jn_errmsg());
    jn_cg_bundle_free(b);
    return id;
}

/* One line from the counters the child stored. */
static void summary(jn_db *db, int64_t run, const char *shown, int eager, int fallback) {
    jn_db_replay_graph *g = NULL;
    jn_db_replay_miss *m = NULL;
    jn_db_miss_group *mg = NULL;
    int ng = 0, nm = 0, nmg = 0;
    if (jn_db_replay_get(db, run, &g, &ng, &m, &nm) != JN_OK || jn_db_replay_miss_groups(db, run, &mg, &nmg) != JN_OK) {
        fprintf(stderr, "janus replay: run %lld: cannot read its counters: %s\n", (long long)run, jn_errmsg());
        jn_db_replay_free(g, ng, m, nm);
        return;
    }
    jn_cli_replay_totals t = jn_cli_replay_sum(g, ng, m, nm);
    int64_t hits = t.hits, misses = t.misses, extrap = t.extrapolated;
    double secs = t.seconds;
    char a[32], b[32];
    if (eager || fallback) {
        fprintf(stderr, "janus replay: run %lld ran eagerly (%s)\n", (long long)run,
                eager ? "--eager: the baseline" : "no usable bundle, see above");
    } else if (ng == 0 && nm == 0) {
        fprintf(stderr, "janus replay: run %lld: no replay counters were stored (janus in the command ran "
                        "eagerly, saying why above, or the command did not import janus)\n", (long long)run);
    } else {
        int64_t tot = hits + misses, chosen = t.chosen;
        char d[32], c[32], ch[160] = "";
        if (chosen) snprintf(ch, sizeof ch, ", %s of them by choice (graphs slower than eager here, and timing runs)",
                             jn_cli_commas(chosen, c));
        fprintf(stderr, "janus replay: run %lld: %.1f%% hit rate (%s of %s segments ran as graphs, %s fell back "
                        "to eager%s), %d graph%s, %.3f s in graphs",
                (long long)run, tot ? 100.0 * (double)hits / (double)tot : 0.0, jn_cli_commas(hits, a),
                jn_cli_commas(tot, b), jn_cli_commas(misses, d), ch, ng, ng == 1 ? "" : "s", secs);
        if (extrap) fprintf(stderr, "; %s of the hits past the recorded ranges", jn_cli_commas(extrap, a));
        /* the largest group of real misses (groups come so ordered; choices last), as inspect words it */
        if (nmg && mg[0].guard != JN_DB_MISS_CHOICE) {
            char line[4096];
            fprintf(stderr, "; top miss (%sx): %s", jn_cli_commas(mg[0].count, a),
                    jn_cli_miss_group_text(&mg[0], line, sizeof line));
        }
        fprintf(stderr, "; `janus inspect --run %lld %s` shows %s\n", (long long)run, shown,
                nm ? "every miss" : "the counters");
    }
    jn_db_replay_free(g, ng, m, nm);
    jn_db_miss_groups_free(mg, nmg);
}

typedef struct {
    int strict, eager, torch;
} replay_flags;

static int replay_flag(const char *a, void *ctx) {
    replay_flags *f = ctx;
    if (!strcmp(a, "--strict")) return f->strict = 1;
    if (!strcmp(a, "--eager")) return f->eager = 1;
    return jn_cli_torch_flag(a, &f->torch);
}

int jn_cli_replay(int argc, char **argv) {
    const char *dbpath = "run.db";
    int np = jn_cli_nproc("replay", argc, argv);
    if (np >= 0) return np;
    /* the switches as the janus package in the child reads them (the settings table) */
    int on = 1;
    replay_flags fl = {0, 0, 1};
    if (jn_setting_bool(JN_S_REPLAY_STRICT, &fl.strict) || jn_setting_bool(JN_S_REPLAY, &on)) {
        fprintf(stderr, "janus replay: %s\n", jn_errmsg());
        return 2;
    }
    fl.eager = !on;
    int i = 0, rc0 = jn_cli_launch_args("replay", jn_cli_replay_usage, argc, argv, replay_flag, &fl, &dbpath, &i);
    if (rc0 >= 0) return rc0;
    int strict = fl.strict, eager = fl.eager;
    if (strict && eager) {
        fprintf(stderr, "janus replay: --strict and --eager do not combine (an eager run has no misses; "
                        "JANUS_REPLAY=0 and JANUS_REPLAY_STRICT=1 in the environment count too)\n\n%s",
                jn_cli_replay_usage);
        return 2;
    }
    char **cmd = argv + i;
    int ncmd = argc - i;

    char *abs = jn_cli_absolute(dbpath);
    if (!abs) {
        fprintf(stderr, "janus replay: cannot resolve %s: %s\n", dbpath, strerror(errno));
        return 1;
    }
    /* Why this cannot replay ("" = it can).  The store is opened for
     * writing (an older one is migrated): the run row and the counters go
     * into it -- or read-only where it cannot be written.  A missing store
     * is not created. */
    char why[2048] = "";
    jn_db *db = NULL;
    struct stat sb;
    int64_t bundle = 0, run = 0;
    int rc = 1;
    if (stat(abs, &sb) != 0)
        snprintf(why, sizeof why, "%s does not exist (record the script with `janus record --db %s -- COMMAND`, "
                 "then run `janus optimize %s`)", dbpath, dbpath, dbpath);
    else if (jn_db_open(abs, JN_DB_WRITE_OR_READONLY, &db) != JN_OK)
        snprintf(why, sizeof why, "%s", jn_errmsg());
    else
        bundle = usable_bundle(db, dbpath, why, sizeof why);
    const char *ro_why = "";
    int readonly = db && !jn_db_writable(db, &ro_why);
    if (readonly && !why[0])
        fprintf(stderr, "janus replay: %s cannot be written (%s): %s\n", dbpath, ro_why,
                eager ? "this eager run is not stored in it"
                      : "replaying with its bundle, but this run and its counters are not stored");
    if (why[0] && strict) {
        fprintf(stderr, "janus replay: --strict: cannot replay: %s\n", why);
        goto done;
    }
    if (why[0] && !eager) fprintf(stderr, "janus replay: %s; running the command eagerly\n", why);
    const char *kind = eager ? "eager" : "replay";
    if (db) {
        /* a run row that cannot be added (a full disk) is no reason not to
         * run the command: as with a read-only store, without a run */
        if (!readonly && jn_cli_run_begin("replay", db, abs, dbpath, ncmd, cmd, kind, bundle, &run)) {
            readonly = 1;
            run = 0;
            fprintf(stderr, "janus replay: %s\n",
                    eager || why[0] ? "running the command all the same; this run is not stored"
                                    : "replaying with its bundle all the same; this run and its counters are "
                                      "not stored");
        }
        jn_db_close(db);
        db = NULL;
    }

    char runs[32];
    snprintf(runs, sizeof runs, "%lld", (long long)run);
    int env_err = 0;
    if (run) env_err |= setenv("JANUS_REPLAY_DB", abs, 1) | setenv("JANUS_REPLAY_RUN", runs, 1);
    else if (readonly && !why[0]) env_err |= setenv("JANUS_REPLAY_DB", abs, 1) | unsetenv("JANUS_REPLAY_RUN");
    else env_err |= unsetenv("JANUS_REPLAY_DB") | unsetenv("JANUS_REPLAY_RUN");
    if (eager || why[0]) env_err |= setenv("JANUS_REPLAY", "0", 1);
    else env_err |= setenv("JANUS_REPLAY", "1", 1);
    /* the child's own exit line would repeat the one summary() prints from
     * its counters; without a run (a read-only store) it is the only one */
    if (run) env_err |= setenv("JANUS_REPLAY_QUIET", "1", 1);
    if (strict) env_err |= setenv("JANUS_REPLAY_STRICT", "1", 1);
    else env_err |= unsetenv("JANUS_REPLAY_STRICT");
    if (env_err) {
        fprintf(stderr, "janus replay: cannot set the environment: %s\n", strerror(errno));
        goto done;
    }
    char *alias = NULL;
    if (fl.torch && jn_cli_alias_begin("replay", &alias)) goto done;
    const char *status;
    rc = jn_cli_spawn_wait("replay", cmd, &status);
    jn_cli_alias_end(alias);
    if (run) {
        int ended; /* not stored: said; the script's status stands */
        db = jn_cli_run_end("replay", abs, run, rc, status, &ended);
        if (db) summary(db, run, dbpath, eager, why[0] != 0);
    }

done:
    if (db) jn_db_close(db);
    free(abs);
    return rc;
}
