/* db.c -- the trace store: opening, creating and migrating run.db, runs,
 * interned call sites and stacks, and the per-step write of a step row, its
 * zstd-compressed event chunk and its summary rows.
 *
 * The store is one SQLite file in WAL mode (readers never block the writer,
 * a SIGKILL loses at most the step being written) with synchronous=NORMAL
 * (a commit does not fsync; an OS crash may lose the last steps but never
 * corrupts the file) and a 10 s busy timeout, so that two `janus record`
 * processes can append to one file.  Every step is one BEGIN IMMEDIATE ...
 * COMMIT transaction through statements prepared once per connection.
 *
 * A path is opened as the absolute file name it denotes, never as a URI or
 * SQLite's in-memory ":memory:".  Read-only opens work where nothing can be
 * written: without a -shm index to read a WAL store by, a store whose -wal
 * log holds no commits is opened immutable (readable() below).
 *
 * Versioning: meta.schema_version.  A newer store is refused (upgrade
 * janus), an older one is migrated in one transaction by the steps of
 * `migrations` below, a file that is not SQLite or not a janus store is
 * refused without touching it.  All failures come back as JN_ERR_IO with the
 * path, what was being done, SQLite's message and a hint.
 *
 * Schema v1 (see SCHEMA_V1): meta, optables, runs, callsites, stacks
 * (frames: JSON array of callsite ids, innermost first), steps (signature:
 * 16 hex digits), chunks (codec 'zstd', raw_bytes, data), summary tables
 * op_counts, syncs, decisions, shapes, arg_types, and the views
 * v_step_signatures, v_syncs, v_decisions, v_shape_variation.
 * Schema v2 (SCHEMA_V2) adds bundles: the compressed, checksummed payloads
 * `janus optimize` stores, replaced per target in one transaction.
 * Schema v3 (SCHEMA_V3) marks each run's kind ('record', 'replay' or 'eager', and
 * the bundle a replay loaded) and adds the replay counters: per run and
 * graph the hits, misses and seconds, and per run the guard misses with
 * the matcher's reason, the call site and the value seen.
 * Schema v4 (SCHEMA_V4) changes no table: step chunks may now hold
 * JN_EV_LIVE events (trace.c).
 * Schema v5 (SCHEMA_V5) adds algos: the cuDNN convolution algorithms a
 * GPU chose, per device string and convolution key, so a later run on the
 * same kind of GPU chooses nothing again (jn_db_algos_put / _get).
 * Schema v6 (SCHEMA_V6) adds what `janus report` shows beyond the
 * counters: a run's CPU time and peak memory, per replayed graph its ops
 * and the wall time of its segments compiled and eager, per miss row the
 * range of values seen, the per-step times of replay and eager runs
 * (run_steps) and the first segments of a replay (replay_segments).
 * Schema v7 (SCHEMA_V7) adds runs.pid_start and runs.boot_id: with the
 * host and pid a run already had, they name the process that owns a run,
 * so a run left 'running' by a process that died is told apart from one
 * still going (jn_db_run_is_lost, jn_db_mark_lost).
 * Schema v8 (SCHEMA_V8) adds extrapolated hits: replay_graphs.extrapolated
 * (per graph, the hits past a recorded range) and replay_extrap (per SEEN
 * guard, its range and the values seen past it; jn_db_replay_extraps).
 * Schema v9 (SCHEMA_V9) adds regions: the regions a recording entered, the
 * code objects each ran with their first effect outside the call, and per
 * bundle the analyzer's verdict on each (region.c); step chunks may hold
 * JN_EV_REGION markers.
 * Schema v10 (SCHEMA_V10) adds what a replay's regions did: per replay run
 * and region the calls and those run without their Python, and why the
 * others ran it (region.c, jn_db_region_replays_put).
 * Schema v11 (SCHEMA_V11) adds what a replay's backward skip did: per
 * replay run the backward calls, skipped, learned, declined and run after
 * all, and per place and reason the calls not skipped (region.c,
 * jn_db_replay_backward_put).
 * Schema v12 (SCHEMA_V12) changes no table: a tensor reference's role may
 * now be JN_TR_DATAIDX, coordinates read from a bool mask (trace.c), which
 * a janus reading v11 would take for a corrupt chunk.
 */
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <math.h>
#include <signal.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zstd.h>

#include "db_internal.h"
#include "jn_db.h"
#include "jn_db_testing.h"
#include "jn_settings.h"

#ifndef JANUS_VERSION
#define JANUS_VERSION "unknown"
#endif

#define BUSY_TIMEOUT_MS 10000
#define ZSTD_LEVEL 3

/* The summary tables carry no FOREIGN KEY clauses on purpose: only
 * write_step fills them, in the transaction that inserts their steps row,
 * and a per-row foreign-key probe doubled the cost of a step.  Steps and
 * chunks do carry them (one probe per step).
 *
 * Only indexes that grow at their right end are kept on the summary tables
 * ((run_id, step)): an index by op or call site would dirty a different
 * page per row and multiply the WAL bytes written by every commit.
 *
 * Created with IF NOT EXISTS so that the same script both creates a new
 * store and completes an older one (migration from v0). */
static const char SCHEMA_V1[] =
    "CREATE TABLE IF NOT EXISTS meta(key TEXT PRIMARY KEY, value TEXT NOT NULL);\n"
    "CREATE TABLE IF NOT EXISTS optables(hash TEXT PRIMARY KEY, ops TEXT NOT NULL);\n"
    "CREATE TABLE IF NOT EXISTS runs(\n"
    "  id INTEGER PRIMARY KEY, argv TEXT, cwd TEXT, started REAL, ended REAL,\n"
    "  exit_status INTEGER, status TEXT NOT NULL DEFAULT 'running',\n"
    "  python_version TEXT, janus_version TEXT,\n"
    "  optable_hash TEXT REFERENCES optables(hash),\n"
    "  cpu_features TEXT, device TEXT, hostname TEXT, pid INTEGER);\n"
    "CREATE TABLE IF NOT EXISTS callsites(id INTEGER PRIMARY KEY, file TEXT NOT NULL,\n"
    "  line INTEGER NOT NULL, func TEXT NOT NULL, UNIQUE(file, line, func));\n"
    "CREATE TABLE IF NOT EXISTS stacks(id INTEGER PRIMARY KEY, hash INTEGER NOT NULL UNIQUE,\n"
    "  frames TEXT NOT NULL);\n"
    "CREATE TABLE IF NOT EXISTS steps(run_id INTEGER NOT NULL REFERENCES runs(id),\n"
    "  step INTEGER NOT NULL, kind TEXT NOT NULL, started REAL, duration REAL,\n"
    "  signature TEXT NOT NULL, n_ops INTEGER NOT NULL, n_syncs INTEGER NOT NULL,\n"
    "  PRIMARY KEY(run_id, step));\n"
    "CREATE INDEX IF NOT EXISTS steps_signature ON steps(run_id, signature);\n"
    "CREATE TABLE IF NOT EXISTS chunks(run_id INTEGER NOT NULL, step INTEGER NOT NULL,\n"
    "  codec TEXT NOT NULL, raw_bytes INTEGER NOT NULL, data BLOB NOT NULL,\n"
    "  PRIMARY KEY(run_id, step), FOREIGN KEY(run_id, step) REFERENCES steps(run_id, step));\n"
    "CREATE TABLE IF NOT EXISTS op_counts(run_id INTEGER NOT NULL, step INTEGER NOT NULL,\n"
    "  op TEXT NOT NULL, count INTEGER NOT NULL);\n"
    "CREATE INDEX IF NOT EXISTS op_counts_step ON op_counts(run_id, step);\n"
    "CREATE TABLE IF NOT EXISTS syncs(run_id INTEGER NOT NULL, step INTEGER NOT NULL,\n"
    "  seq INTEGER NOT NULL, kind INTEGER NOT NULL, value REAL, callsite_id INTEGER);\n"
    "CREATE INDEX IF NOT EXISTS syncs_step ON syncs(run_id, step);\n"
    "CREATE TABLE IF NOT EXISTS decisions(run_id INTEGER NOT NULL, step INTEGER NOT NULL,\n"
    "  callsite_id INTEGER, kind INTEGER NOT NULL, outcome INTEGER NOT NULL,\n"
    "  count INTEGER NOT NULL);\n"
    "CREATE INDEX IF NOT EXISTS decisions_step ON decisions(run_id, step);\n"
    "CREATE TABLE IF NOT EXISTS shapes(run_id INTEGER NOT NULL, step INTEGER NOT NULL,\n"
    "  op TEXT NOT NULL, callsite_id INTEGER, arg INTEGER NOT NULL, dim INTEGER NOT NULL,\n"
    "  size INTEGER NOT NULL);\n"
    "CREATE INDEX IF NOT EXISTS shapes_step ON shapes(run_id, step);\n"
    "CREATE TABLE IF NOT EXISTS arg_types(run_id INTEGER NOT NULL, step INTEGER NOT NULL,\n"
    "  op TEXT NOT NULL, callsite_id INTEGER, arg INTEGER NOT NULL, pytype TEXT NOT NULL,\n"
    "  count INTEGER NOT NULL);\n"
    "CREATE INDEX IF NOT EXISTS arg_types_step ON arg_types(run_id, step);\n"
    /* views for the questions `janus inspect` and people ask */
    "CREATE VIEW IF NOT EXISTS v_step_signatures AS\n"
    "  SELECT run_id, signature, count(*) AS n_steps, min(step) AS first_step,\n"
    "         max(step) AS last_step, min(n_ops) AS n_ops\n"
    "  FROM steps GROUP BY run_id, signature;\n"
    "CREATE VIEW IF NOT EXISTS v_syncs AS\n"
#define JN_SYNC_CASE_(n, v, name, call, what) " WHEN " #v " THEN '" name "'"
    "  SELECT s.*, CASE s.kind" JN_SYNC_KINDS(JN_SYNC_CASE_) " ELSE 'other' END AS kind_name,\n"
#undef JN_SYNC_CASE_
    "    c.file, c.line, c.func\n"
    "  FROM syncs s LEFT JOIN callsites c ON c.id = s.callsite_id;\n"
    "CREATE VIEW IF NOT EXISTS v_decisions AS\n"
    "  SELECT d.*, CASE d.kind WHEN 1 THEN 'branch' WHEN 2 THEN 'loop' ELSE 'other' END AS kind_name,\n"
    "    c.file, c.line, c.func\n"
    "  FROM decisions d LEFT JOIN callsites c ON c.id = d.callsite_id;\n"
    "CREATE VIEW IF NOT EXISTS v_shape_variation AS\n"
    "  SELECT run_id, op, callsite_id, arg, dim, count(DISTINCT size) AS n_sizes,\n"
    "         min(size) AS min_size, max(size) AS max_size\n"
    "  FROM shapes GROUP BY run_id, op, callsite_id, arg, dim HAVING count(DISTINCT size) > 1;\n";

/* Schema v2 = v1 + bundles: what `janus optimize` made of the traces (see
 * jn_db.h).  The payload is zstd-compressed; checksum is FNV-1a 64 of the
 * raw payload as 16 hex digits, raw_bytes its size. */
static const char SCHEMA_V2[] =
    "CREATE TABLE IF NOT EXISTS bundles(id INTEGER PRIMARY KEY AUTOINCREMENT, created REAL NOT NULL,\n"
    "  target TEXT NOT NULL, optable_hash TEXT NOT NULL, janus_version TEXT NOT NULL,\n"
    "  cpu_features TEXT NOT NULL, source_runs TEXT NOT NULL, source_steps INTEGER NOT NULL,\n"
    "  format INTEGER NOT NULL, codec TEXT NOT NULL, raw_bytes INTEGER NOT NULL,\n"
    "  checksum TEXT NOT NULL, data BLOB NOT NULL);\n"
    "CREATE INDEX IF NOT EXISTS bundles_target ON bundles(target, id);\n";

/* Schema v3 = v2 + replay: runs.kind says which command made a run (a
 * column with a default, so v2 rows read as 'record'), runs.bundle_id the
 * bundle a replay loaded; replay_graphs / replay_misses hold the counters a
 * replaying process writes at exit (jn_db_replay_put).  Plain ALTERs: this
 * script runs once per store, inside the migration transaction. */
static const char SCHEMA_V3[] =
    "ALTER TABLE runs ADD COLUMN kind TEXT NOT NULL DEFAULT 'record';\n"
    "ALTER TABLE runs ADD COLUMN bundle_id INTEGER;\n"
    "CREATE TABLE IF NOT EXISTS replay_graphs(run_id INTEGER NOT NULL REFERENCES runs(id),\n"
    "  graph TEXT NOT NULL, hits INTEGER NOT NULL, misses INTEGER NOT NULL, seconds REAL NOT NULL,\n"
    "  PRIMARY KEY(run_id, graph));\n"
    "CREATE TABLE IF NOT EXISTS replay_misses(run_id INTEGER NOT NULL REFERENCES runs(id),\n"
    "  graph TEXT NOT NULL, guard INTEGER NOT NULL, reason TEXT NOT NULL, site TEXT NOT NULL,\n"
    "  seen REAL, count INTEGER NOT NULL);\n"
    "CREATE INDEX IF NOT EXISTS replay_misses_run ON replay_misses(run_id);\n";

/* Schema v4 = v3, but step chunks may hold JN_EV_LIVE events (the tensors
 * still alive where a segment ends), which an older janus would call
 * corrupt; no table changes, so the step is a no-op statement. */
static const char SCHEMA_V4[] = "SELECT 1;\n";
static const char SCHEMA_V12[] = "SELECT 1;\n"; /* no table: a trace role (JN_TR_DATAIDX) */

/* Schema v5 = v4 + algos: one row per (device, convolution key) with the
 * algorithm cuDNN's heuristics chose, its workspace bytes and the seconds
 * the choice took (runtime/cuda/cudnn.c writes and reads them).  Only a
 * new table, so an older store read-only simply has none. */
static const char SCHEMA_V5[] =
    "CREATE TABLE IF NOT EXISTS algos(device TEXT NOT NULL, key TEXT NOT NULL, algo INTEGER NOT NULL,\n"
    "  workspace INTEGER NOT NULL, seconds REAL NOT NULL, PRIMARY KEY(device, key));\n";

/* Schema v6 = v5 + what a report needs that the counters do not say:
 * columns with defaults (older rows read as "not measured") and two
 * tables written once at a replaying or eager process's exit
 * (jn_db_run_steps_put, jn_db_segments_put; both bounded, jn_db.h). */
static const char SCHEMA_V6[] =
    "ALTER TABLE runs ADD COLUMN cpu_seconds REAL;\n"
    "ALTER TABLE runs ADD COLUMN peak_rss INTEGER;\n"
    "CREATE TABLE IF NOT EXISTS replay_graph_times(run_id INTEGER NOT NULL REFERENCES runs(id),\n"
    "  graph TEXT NOT NULL, ops INTEGER NOT NULL, wall REAL NOT NULL, eager_segments INTEGER NOT NULL,\n"
    "  eager_wall REAL NOT NULL, eager_ops INTEGER NOT NULL, PRIMARY KEY(run_id, graph));\n"
    "ALTER TABLE replay_misses ADD COLUMN seen_min REAL;\n"
    "ALTER TABLE replay_misses ADD COLUMN seen_max REAL;\n"
    "CREATE TABLE IF NOT EXISTS run_steps(run_id INTEGER NOT NULL REFERENCES runs(id), step INTEGER NOT NULL,\n"
    "  kind TEXT NOT NULL, started REAL NOT NULL, duration REAL NOT NULL, segments INTEGER NOT NULL,\n"
    "  hits INTEGER NOT NULL, graph_ops INTEGER, eager_ops INTEGER, graph_seconds REAL NOT NULL,\n"
    "  PRIMARY KEY(run_id, step));\n"
    "CREATE TABLE IF NOT EXISTS replay_segments(run_id INTEGER NOT NULL REFERENCES runs(id),\n"
    "  seq INTEGER NOT NULL, step INTEGER NOT NULL, started REAL NOT NULL, duration REAL NOT NULL,\n"
    "  graph TEXT NOT NULL, hit INTEGER NOT NULL, guard INTEGER NOT NULL, ops INTEGER NOT NULL,\n"
    "  PRIMARY KEY(run_id, seq));\n"
    "CREATE TABLE IF NOT EXISTS bundle_notes(bundle_id INTEGER NOT NULL, seq INTEGER NOT NULL,\n"
    "  kind TEXT NOT NULL, text TEXT NOT NULL, PRIMARY KEY(bundle_id, seq));\n";
/* Schema v7 = v6 + the identity of a run's process beyond its pid: its
 * start time (clock ticks since boot, /proc/PID/stat field 22), so a pid
 * reused by another process does not keep a dead run alive, and the
 * kernel's boot id, so no run of an earlier boot does.  NULL in older
 * rows: those are judged by host and pid alone. */
static const char SCHEMA_V7[] =
    "ALTER TABLE runs ADD COLUMN pid_start INTEGER;\n"
    "ALTER TABLE runs ADD COLUMN boot_id TEXT;\n";
/* Schema v8 = v7 + extrapolated hits: per graph how many of its hits went
 * past a recorded range (a SEEN guard, ir/jn_ir.h), and per such guard the
 * range and the values seen past it.  A column with a default and a new
 * table: an older store read-only reads as none. */
static const char SCHEMA_V8[] =
    "ALTER TABLE replay_graphs ADD COLUMN extrapolated INTEGER NOT NULL DEFAULT 0;\n"
    "CREATE TABLE IF NOT EXISTS replay_extrap(run_id INTEGER NOT NULL REFERENCES runs(id),\n"
    "  graph TEXT NOT NULL, guard INTEGER NOT NULL, reason TEXT NOT NULL, site TEXT NOT NULL,\n"
    "  lo REAL NOT NULL, hi REAL NOT NULL, seen_min REAL NOT NULL, seen_max REAL NOT NULL,\n"
    "  count INTEGER NOT NULL);\n"
    "CREATE INDEX IF NOT EXISTS replay_extrap_run ON replay_extrap(run_id);\n";

/* Schema v9 = v8 + regions (db/region.c, jn_db.h "regions"): new tables
 * only, so an older store read-only reads as none. */
static const char SCHEMA_V9[] =
    "CREATE TABLE IF NOT EXISTS regions(run_id INTEGER NOT NULL REFERENCES runs(id), region INTEGER NOT NULL,\n"
    "  kind TEXT NOT NULL, qualname TEXT NOT NULL, file TEXT NOT NULL, line INTEGER NOT NULL,\n"
    "  code_hash TEXT NOT NULL, PRIMARY KEY(run_id, region));\n"
    "CREATE TABLE IF NOT EXISTS region_codes(run_id INTEGER NOT NULL, region INTEGER NOT NULL,\n"
    "  hash TEXT NOT NULL, file TEXT NOT NULL, line INTEGER NOT NULL, name TEXT NOT NULL, user INTEGER NOT NULL,\n"
    "  effect TEXT, effect_site TEXT, PRIMARY KEY(run_id, region, hash));\n"
    "CREATE TABLE IF NOT EXISTS region_verdicts(bundle_id INTEGER NOT NULL, seq INTEGER NOT NULL,\n"
    "  run_id INTEGER NOT NULL, region INTEGER NOT NULL, kind TEXT NOT NULL, qualname TEXT NOT NULL,\n"
    "  site TEXT NOT NULL, calls INTEGER NOT NULL, verdict TEXT NOT NULL, reason TEXT NOT NULL,\n"
    "  reason_site TEXT NOT NULL, code_hash TEXT NOT NULL, codes TEXT NOT NULL, PRIMARY KEY(bundle_id, seq));\n";

/* Schema v10 = v9 + a replay's region counters (db/region.c): new tables
 * only, so an older store read-only reads as none. */
static const char SCHEMA_V10[] =
    "CREATE TABLE IF NOT EXISTS region_replays(run_id INTEGER NOT NULL REFERENCES runs(id),\n"
    "  region TEXT NOT NULL, calls INTEGER NOT NULL, replaced INTEGER NOT NULL, refused INTEGER NOT NULL);\n"
    "CREATE INDEX IF NOT EXISTS region_replays_run ON region_replays(run_id);\n"
    "CREATE TABLE IF NOT EXISTS region_replay_reasons(run_id INTEGER NOT NULL REFERENCES runs(id),\n"
    "  region TEXT NOT NULL, reason TEXT NOT NULL, count INTEGER NOT NULL);\n"
    "CREATE INDEX IF NOT EXISTS region_replay_reasons_run ON region_replay_reasons(run_id);\n";

/* Schema v11 = v10 + a replay's backward-skip counters (db/region.c): new
 * tables only, so an older store read-only reads as none. */
static const char SCHEMA_V11[] =
    "CREATE TABLE IF NOT EXISTS replay_backward(run_id INTEGER NOT NULL REFERENCES runs(id),\n"
    "  calls INTEGER NOT NULL, skipped INTEGER NOT NULL, learned INTEGER NOT NULL, declined INTEGER NOT NULL,\n"
    "  fallbacks INTEGER NOT NULL);\n"
    "CREATE INDEX IF NOT EXISTS replay_backward_run ON replay_backward(run_id);\n"
    "CREATE TABLE IF NOT EXISTS replay_backward_reasons(run_id INTEGER NOT NULL REFERENCES runs(id),\n"
    "  graph TEXT NOT NULL, token INTEGER NOT NULL, name TEXT NOT NULL, reason TEXT NOT NULL,\n"
    "  fallback INTEGER NOT NULL, count INTEGER NOT NULL);\n"
    "CREATE INDEX IF NOT EXISTS replay_backward_reasons_run ON replay_backward_reasons(run_id);\n";

/* Migration steps: migrations[i] takes a store from version `from` to
 * from+1.  v0 was the prototype layout (meta and callsites only); its
 * tables are a subset of v1's, so v1's IF-NOT-EXISTS script completes it. */
static const struct {
    int from;
    const char *sql;
} migrations[] = {
    {0, SCHEMA_V1},
    {1, SCHEMA_V2},
    {2, SCHEMA_V3},
    {3, SCHEMA_V4},
    {4, SCHEMA_V5},
    {5, SCHEMA_V6},
    {6, SCHEMA_V7},
    {7, SCHEMA_V8},
    {8, SCHEMA_V9},
    {9, SCHEMA_V10},
    {10, SCHEMA_V11},
    {11, SCHEMA_V12},
};

/* Cached statements, prepared on first use. */
enum {
    ST_BEGIN, ST_COMMIT, ST_OPTABLE, ST_RUN, ST_RUN_END, ST_RUN_PY, ST_CS_GET, ST_CS_PUT, ST_STACK_GET,
    ST_STACK_PUT, ST_STEP, ST_CHUNK, ST_OPCOUNT, ST_SYNC, ST_DECISION, ST_SHAPE, ST_ARGTYPE,
    ST_READ_CHUNK, ST_COUNT
};
static const char *const stmt_sql[ST_COUNT] = {
    [ST_BEGIN] = "BEGIN IMMEDIATE",
    [ST_COMMIT] = "COMMIT",
    [ST_OPTABLE] = "INSERT INTO optables(hash, ops) VALUES(?1, ?2) "
                   "ON CONFLICT(hash) DO UPDATE SET ops = excluded.ops WHERE optables.ops = ''",
    [ST_RUN] = "INSERT INTO runs(argv, cwd, started, python_version, janus_version, optable_hash, "
               "cpu_features, device, hostname, pid, kind, bundle_id, pid_start, boot_id) "
               "VALUES(?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14)",
    [ST_RUN_END] = "UPDATE runs SET ended = ?1, exit_status = ?2, status = ?3 WHERE id = ?4",
    [ST_RUN_PY] = "UPDATE runs SET python_version = ?1 WHERE id = ?2",
    [ST_CS_GET] = "SELECT id FROM callsites WHERE file = ?1 AND line = ?2 AND func = ?3",
    [ST_CS_PUT] = "INSERT OR IGNORE INTO callsites(file, line, func) VALUES(?1, ?2, ?3)",
    [ST_STACK_GET] = "SELECT id FROM stacks WHERE hash = ?1",
    [ST_STACK_PUT] = "INSERT OR IGNORE INTO stacks(hash, frames) VALUES(?1, ?2)",
    [ST_STEP] = "INSERT INTO steps(run_id, step, kind, started, duration, signature, n_ops, n_syncs) "
                "VALUES(?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
    [ST_CHUNK] = "INSERT INTO chunks(run_id, step, codec, raw_bytes, data) VALUES(?1, ?2, 'zstd', ?3, ?4)",
    [ST_OPCOUNT] = "INSERT INTO op_counts(run_id, step, op, count) VALUES(?1, ?2, ?3, ?4)",
    [ST_SYNC] = "INSERT INTO syncs(run_id, step, seq, kind, value, callsite_id) VALUES(?1, ?2, ?3, ?4, ?5, ?6)",
    [ST_DECISION] = "INSERT INTO decisions(run_id, step, callsite_id, kind, outcome, count) "
                    "VALUES(?1, ?2, ?3, ?4, ?5, ?6)",
    [ST_SHAPE] = "INSERT INTO shapes(run_id, step, op, callsite_id, arg, dim, size) "
                 "VALUES(?1, ?2, ?3, ?4, ?5, ?6, ?7)",
    [ST_ARGTYPE] = "INSERT INTO arg_types(run_id, step, op, callsite_id, arg, pytype, count) "
                   "VALUES(?1, ?2, ?3, ?4, ?5, ?6, ?7)",
    [ST_READ_CHUNK] = "SELECT codec, raw_bytes, data FROM chunks WHERE run_id = ?1 AND step = ?2",
};

struct jn_db {
    sqlite3 *h;
    char *path;                 /* as given, for messages */
    char *abs;                  /* its absolute form: what SQLite opens */
    char ro_why[PATH_MAX + 96]; /* JN_DB_WRITE_OR_READONLY opened read-only: why */
    int flags, version;
    int injected; /* the last failure came from jn_db_inject_fault */
    sqlite3_stmt *st[ST_COUNT];
    ZSTD_CCtx *cctx; /* reused: no per-step context allocation */
    void *zbuf;
    size_t zcap;
};

/* ------------------------------------------------------------ sync kinds */
#define JN_SYNC_ROW_(n, v, name, call, what) [v] = {name, call, what},
static const struct {
    const char *name, *call, *what;
} sync_kinds[JN_SYNC_LAST + 1] = {JN_SYNC_KINDS(JN_SYNC_ROW_)};
#undef JN_SYNC_ROW_

static int sync_known(int k) { return k >= 1 && k <= JN_SYNC_LAST && sync_kinds[k].name; }
const char *jn_db_sync_name(int kind) { return sync_known(kind) ? sync_kinds[kind].name : "?"; }
const char *jn_db_sync_call(int kind) { return sync_known(kind) ? sync_kinds[kind].call : "a sync"; }
const char *jn_db_sync_what(int kind) { return sync_known(kind) ? sync_kinds[kind].what : "a sync"; }

/* ------------------------------------------------------ fault injection */
static int fault_countdown; /* test-only, so a plain global is enough */
static int fault_full;      /* JANUS_DB_FAULT_AFTER: the disk stays full once it fired */

void jn_db_inject_fault(int after_n_writes) {
    fault_countdown = after_n_writes > 0 ? after_n_writes : 0;
    fault_full = 0;
}

/* write: the statement changes the store.  jn_db_inject_fault counts
 * every statement and fails one; the full disk of JANUS_DB_FAULT_AFTER
 * counts and fails writes only (reads, PRAGMAs, BEGIN and COMMIT pass). */
static int fault_fires(jn_db *db, int write) {
    db->injected = 0;
    if (fault_full && !write) return 0;
    if (fault_full < 0 || (fault_countdown > 0 && --fault_countdown == 0)) {
        if (fault_full) fault_full = -1;
        db->injected = 1;
        return 1;
    }
    return 0;
}

/* A statement of db/ prepared outside the per-connection cache; a failure
 * here is SQLite's own, never an injected one. */
int db_prepare(jn_db *db, const char *sql, sqlite3_stmt **st) {
    db->injected = 0;
    return sqlite3_prepare_v2(db->h, sql, -1, st, NULL);
}

/* Every sqlite3_step / sqlite3_exec of db/ goes through these two. */
int db_step(jn_db *db, sqlite3_stmt *st) {
    const char *sql = sqlite3_sql(st);
    if (fault_fires(db, !sqlite3_stmt_readonly(st) && sql && strncmp(sql, "PRAGMA", 6))) return SQLITE_FULL;
    return sqlite3_step(st);
}

static int db_exec(jn_db *db, const char *sql) {
    int write = strncmp(sql, "PRAGMA", 6) && strncmp(sql, "BEGIN", 5) && strncmp(sql, "COMMIT", 6);
    if (fault_fires(db, write)) return SQLITE_FULL;
    return sqlite3_exec(db->h, sql, NULL, NULL, NULL);
}

/* --------------------------------------------------------------- errors */
static const char *hint_for(int rc) {
    switch (rc & 0xff) {
    case SQLITE_FULL: return " (the disk is full: free some space and record again)";
    case SQLITE_READONLY: case SQLITE_PERM: case SQLITE_CANTOPEN:
        return " (check that the file and its directory exist and are writable)";
    case SQLITE_BUSY: case SQLITE_LOCKED:
        return " (another process held the database longer than the busy timeout; retry)";
    case SQLITE_NOTADB: return " (the file is not a SQLite database)";
    case SQLITE_CORRUPT: return " (the database file is damaged)";
    case SQLITE_IOERR: return " (an I/O error: check the disk)";
    case SQLITE_NOMEM: return " (out of memory)";
    default: return "";
    }
}

jn_status db_fail(jn_db *db, int rc, const char *what) {
    const char *msg = db->injected || !db->h ? sqlite3_errstr(rc) : sqlite3_errmsg(db->h);
    return jn_error(JN_ERR_IO, "trace store %s: %s failed: %s%s%s", db->path, what, msg,
                    db->injected ? " [injected fault]" : "", hint_for(rc));
}

/* ------------------------------------------------------------ statements */
static jn_status get_stmt(jn_db *db, int which, sqlite3_stmt **out) {
    *out = NULL;
    if (!db->st[which]) {
        int rc = sqlite3_prepare_v3(db->h, stmt_sql[which], -1, SQLITE_PREPARE_PERSISTENT, &db->st[which], NULL);
        if (rc != SQLITE_OK) {
            db->injected = 0;
            return db_fail(db, rc, "preparing a statement");
        }
    }
    *out = db->st[which];
    return JN_OK;
}

/* Run a statement that returns no rows; always leaves it reset. */
static int run_stmt(jn_db *db, sqlite3_stmt *st) {
    int rc = db_step(db, st);
    sqlite3_reset(st);
    return rc == SQLITE_DONE || rc == SQLITE_ROW ? SQLITE_OK : rc;
}

static void bind_text(sqlite3_stmt *st, int i, const char *s) {
    if (s) sqlite3_bind_text(st, i, s, -1, SQLITE_STATIC);
    else sqlite3_bind_null(st, i);
}

static int64_t u64_to_i64(uint64_t u) {
    int64_t v;
    memcpy(&v, &u, 8);
    return v;
}

/* Roll back whatever transaction is open; never subject to fault injection
 * so that an injected failure still leaves the store clean. */
static void rollback(jn_db *db) {
    if (!sqlite3_get_autocommit(db->h)) sqlite3_exec(db->h, "ROLLBACK", NULL, NULL, NULL);
}

/* ----------------------------------------------------------------- open */
/* Value of meta[key] as an integer; 1 if absent, -1 on error (rc set). */
static int meta_int(jn_db *db, const char *key, int64_t *v, int *rc) {
    sqlite3_stmt *st;
    *rc = sqlite3_prepare_v2(db->h, "SELECT value FROM meta WHERE key = ?1", -1, &st, NULL);
    if (*rc != SQLITE_OK) return -1;
    sqlite3_bind_text(st, 1, key, -1, SQLITE_STATIC);
    int r = db_step(db, st), ret = 1;
    if (r == SQLITE_ROW) {
        *v = sqlite3_column_int64(st, 0);
        ret = 0;
    } else if (r != SQLITE_DONE) {
        *rc = r;
        ret = -1;
    }
    sqlite3_finalize(st);
    return ret;
}

static jn_status create_schema(jn_db *db) {
    int rc = db_exec(db, "BEGIN IMMEDIATE");
    if (rc != SQLITE_OK) return db_fail(db, rc, "starting the schema transaction");
    /* another process may have created it while we waited for the lock */
    int exists = 0;
    sqlite3_stmt *st;
    rc = sqlite3_prepare_v2(db->h, "SELECT 1 FROM sqlite_master WHERE name = 'meta'", -1, &st, NULL);
    if (rc == SQLITE_OK) {
        rc = db_step(db, st);
        exists = rc == SQLITE_ROW;
        if (rc == SQLITE_ROW || rc == SQLITE_DONE) rc = SQLITE_OK;
        sqlite3_finalize(st);
    }
    if (rc == SQLITE_OK && !exists) rc = db_exec(db, SCHEMA_V1);
    if (rc == SQLITE_OK && !exists) rc = db_exec(db, SCHEMA_V2);
    if (rc == SQLITE_OK && !exists) rc = db_exec(db, SCHEMA_V3);
    if (rc == SQLITE_OK && !exists) rc = db_exec(db, SCHEMA_V5);
    if (rc == SQLITE_OK && !exists) rc = db_exec(db, SCHEMA_V6);
    if (rc == SQLITE_OK && !exists) rc = db_exec(db, SCHEMA_V7);
    if (rc == SQLITE_OK && !exists) rc = db_exec(db, SCHEMA_V8);
    if (rc == SQLITE_OK && !exists) rc = db_exec(db, SCHEMA_V9);
    if (rc == SQLITE_OK && !exists) rc = db_exec(db, SCHEMA_V10);
    if (rc == SQLITE_OK && !exists) rc = db_exec(db, SCHEMA_V11);
    if (rc == SQLITE_OK && !exists) {
        char sql[512];
        snprintf(sql, sizeof sql,
                 "INSERT INTO meta(key, value) VALUES('schema_version', '%d'), ('janus_version', '%s'), "
                 "('created', strftime('%%Y-%%m-%%dT%%H:%%M:%%SZ', 'now')), ('app', 'janus'), "
                 "('optable_hash', '%016" PRIx64 "')",
                 JN_DB_SCHEMA_VERSION, JANUS_VERSION, jn_optable_hash());
        rc = db_exec(db, sql);
    }
    if (rc == SQLITE_OK) rc = db_exec(db, "COMMIT");
    if (rc != SQLITE_OK) {
        jn_status s = db_fail(db, rc, "creating the schema");
        rollback(db);
        return s;
    }
    return JN_OK;
}

static jn_status migrate(jn_db *db) {
    int rc = db_exec(db, "BEGIN IMMEDIATE");
    if (rc != SQLITE_OK) return db_fail(db, rc, "starting the migration transaction");
    int64_t v = 0;
    /* re-read inside the transaction: a concurrent opener may have migrated */
    if (meta_int(db, "schema_version", &v, &rc) < 0) goto fail;
    for (size_t i = 0; i < sizeof migrations / sizeof migrations[0]; i++) {
        if (migrations[i].from != v) continue;
        rc = db_exec(db, migrations[i].sql);
        if (rc != SQLITE_OK) goto fail;
        v++;
    }
    if (v != JN_DB_SCHEMA_VERSION) {
        rollback(db);
        return jn_error(JN_ERR_IO, "trace store %s: no migration from schema version %" PRId64
                        " to %d (the file is too old for this janus; re-record it)",
                        db->path, v, JN_DB_SCHEMA_VERSION);
    }
    char sql[160];
    snprintf(sql, sizeof sql, "INSERT OR REPLACE INTO meta(key, value) VALUES('schema_version', '%d')",
             JN_DB_SCHEMA_VERSION);
    rc = db_exec(db, sql);
    if (rc == SQLITE_OK) rc = db_exec(db, "COMMIT");
    if (rc != SQLITE_OK) goto fail;
    return JN_OK;
fail:;
    jn_status s = db_fail(db, rc, "migrating to the current schema");
    rollback(db);
    return s;
}

/* Is this file a janus store (1), an empty file (0), or refused (error)? */
static jn_status classify(jn_db *db, int *is_store) {
    sqlite3_stmt *st;
    int rc = sqlite3_prepare_v2(db->h, "SELECT count(*), sum(name = 'meta') FROM sqlite_master", -1, &st, NULL);
    int ntables = 0, has_meta = 0;
    if (rc == SQLITE_OK) {
        rc = db_step(db, st);
        if (rc == SQLITE_ROW) {
            ntables = sqlite3_column_int(st, 0);
            has_meta = sqlite3_column_int(st, 1);
            rc = SQLITE_OK;
        }
        sqlite3_finalize(st);
    }
    if ((rc & 0xff) == SQLITE_NOTADB)
        return jn_error(JN_ERR_IO, "%s is not a SQLite file (%s), so it is not a janus trace store; "
                        "give `janus record --db` a new file name", db->path, sqlite3_errstr(rc));
    if (rc != SQLITE_OK) return db_fail(db, rc, "reading the table list");
    if (ntables == 0) {
        *is_store = 0;
        return JN_OK;
    }
    /* app must be 'janus': someone else's table called meta is not ours */
    int ok = 0;
    if (has_meta) {
        rc = sqlite3_prepare_v2(db->h, "SELECT value FROM meta WHERE key = 'app'", -1, &st, NULL);
        if (rc == SQLITE_OK) {
            rc = db_step(db, st);
            if (rc == SQLITE_ROW) {
                const unsigned char *v = sqlite3_column_text(st, 0);
                ok = v && strcmp((const char *)v, "janus") == 0;
                rc = SQLITE_OK;
            } else if (rc == SQLITE_DONE) {
                rc = SQLITE_OK;
            }
            sqlite3_finalize(st);
        }
        /* a failure to read is reported as such, not as "not ours" */
        if (rc != SQLITE_OK && (rc & 0xff) != SQLITE_ERROR) return db_fail(db, rc, "reading the meta table");
    }
    if (!ok)
        return jn_error(JN_ERR_IO, "%s is a SQLite database but not a janus trace store (no janus meta "
                        "table); it was left untouched: use another file name", db->path);
    *is_store = 1;
    return JN_OK;
}

/* PRAGMA journal_mode=WAL.  Changing the mode does not wait on the busy
 * handler, so when another process is creating or writing the same new
 * file it can fail with SQLITE_BUSY at once: retry for the busy timeout. */
static int set_wal(jn_db *db) {
    int rc = SQLITE_BUSY;
    for (int waited = 0; waited <= BUSY_TIMEOUT_MS; waited += 5) {
        sqlite3_stmt *st;
        rc = sqlite3_prepare_v2(db->h, "PRAGMA journal_mode = WAL", -1, &st, NULL);
        if (rc == SQLITE_OK) {
            rc = db_step(db, st);
            if (rc == SQLITE_ROW) {
                const unsigned char *m = sqlite3_column_text(st, 0);
                rc = m && strcmp((const char *)m, "wal") == 0 ? SQLITE_OK : SQLITE_CANTOPEN;
            }
            sqlite3_finalize(st);
        }
        if ((rc & 0xff) != SQLITE_BUSY && (rc & 0xff) != SQLITE_LOCKED) break;
        sqlite3_sleep(5);
    }
    return rc;
}

/* The absolute form of path (malloc'ed; NULL when out of memory or the
 * working directory is gone).  SQLite then opens exactly that file: never
 * an in-memory database for ":memory:", never a URI for "file:v.db" (this
 * SQLite interprets URIs in plain file names), and the same file whichever
 * command, process or working directory opens it. */
static char *absolute(const char *path) {
    if (path[0] == '/') return strdup(path);
    char cwd[PATH_MAX];
    if (!getcwd(cwd, sizeof cwd)) return NULL;
    size_t n = strlen(cwd) + strlen(path) + 2;
    char *out = malloc(n);
    if (out) snprintf(out, n, "%s%s%s", cwd, strcmp(cwd, "/") ? "/" : "", path);
    return out;
}

/* Can this process write the existing store at abs?  SQLite writes
 * abs-wal and abs-shm next to it, so the directory counts too.  0 = yes;
 * otherwise why (the file or directory and the system's reason). */
static int not_writable(const char *abs, char *why, size_t n) {
    if (access(abs, W_OK) != 0) {
        snprintf(why, n, "the file is not writable: %s", strerror(errno));
        return 1;
    }
    char *dir = strdup(abs);
    if (!dir) {
        snprintf(why, n, "out of memory");
        return 1;
    }
    char *slash = strrchr(dir, '/');
    if (slash == dir) slash[1] = 0;
    else *slash = 0;
    int r = access(dir, W_OK | X_OK) != 0;
    if (r) snprintf(why, n, "its directory %s is not writable: %s", dir, strerror(errno));
    free(dir);
    return r;
}

/* Open db->h on db->abs.  immutable: as a read-only "file:" URI with
 * immutable=1 (the path percent-escaped, so no character of it is taken
 * for URI syntax). */
static int open_conn(jn_db *db, int oflags, int immutable) {
    if (db->h) sqlite3_close(db->h);
    db->h = NULL;
    int rc;
    if (!immutable) {
        rc = sqlite3_open_v2(db->abs, &db->h, oflags, NULL);
    } else {
        size_t n = strlen(db->abs);
        char *uri = malloc(3 * n + 32);
        if (!uri) return SQLITE_NOMEM;
        size_t k = (size_t)sprintf(uri, "file:");
        for (const unsigned char *p = (const unsigned char *)db->abs; *p; p++) {
            if ((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') ||
                strchr("/-._~", *p))
                uri[k++] = (char)*p;
            else
                k += (size_t)sprintf(uri + k, "%%%02X", *p);
        }
        strcpy(uri + k, "?immutable=1");
        rc = sqlite3_open_v2(uri, &db->h, SQLITE_OPEN_READONLY | SQLITE_OPEN_URI, NULL);
        free(uri);
    }
    if (rc == SQLITE_OK) {
        sqlite3_extended_result_codes(db->h, 1);
        sqlite3_busy_timeout(db->h, BUSY_TIMEOUT_MS);
    }
    return rc;
}

/* Read-only, where the store cannot be written: a WAL store whose -shm
 * index is missing cannot be read by SQLite's normal means (it would create
 * the index: "unable to open database file" or "attempt to write a
 * readonly database").  Without a -wal log (or with an empty one) the file
 * alone holds every commit, so it is opened immutable (no locks, no index);
 * a log with commits in it cannot be read without the index, which is
 * refused with the fix. */
static jn_status readable(jn_db *db) {
    sqlite3_stmt *st = NULL;
    int rc = sqlite3_prepare_v2(db->h, "PRAGMA schema_version", -1, &st, NULL);
    if (rc == SQLITE_OK) rc = sqlite3_step(st);
    sqlite3_finalize(st);
    if (rc == SQLITE_ROW || rc == SQLITE_DONE) return JN_OK;
    char why[PATH_MAX + 128];
    int code = rc & 0xff;
    if ((code != SQLITE_READONLY && code != SQLITE_CANTOPEN) || !not_writable(db->abs, why, sizeof why))
        return JN_OK; /* whatever it is, classify() reports it in context */
    size_t n = strlen(db->abs);
    char *wal = malloc(n + 5);
    if (!wal) return jn_error(JN_ERR_NOMEM, "out of memory opening trace store %s", db->path);
    snprintf(wal, n + 5, "%s-wal", db->abs);
    struct stat ws;
    int logged = stat(wal, &ws) == 0 && ws.st_size > 0;
    free(wal);
    if (logged)
        return jn_error(JN_ERR_IO, "cannot read trace store %s: its write-ahead log %s-wal holds commits not yet in "
                        "the file, and SQLite cannot create the %s-shm index it needs to read them (%s); copy the "
                        "store together with its -wal file to a writable directory and read the copy",
                        db->path, db->path, db->path, why);
    if ((rc = open_conn(db, SQLITE_OPEN_READONLY, 1)) != SQLITE_OK) return db_fail(db, rc, "opening read-only");
    return JN_OK;
}

jn_status jn_db_open(const char *path, int flags, jn_db **out) {
    if (!out) return jn_error(JN_ERR_VALUE, "jn_db_open: NULL output pointer");
    *out = NULL;
    if (!path || !*path) return jn_error(JN_ERR_VALUE, "jn_db_open: empty trace store path");
    if (flags < JN_DB_READONLY || flags > JN_DB_WRITE_OR_READONLY)
        return jn_error(JN_ERR_VALUE, "jn_db_open: bad flags %d (JN_DB_READONLY, JN_DB_WRITE, JN_DB_CREATE or "
                        "JN_DB_WRITE_OR_READONLY)", flags);

    /* JANUS_DB_FAULT_AFTER (tests): a full disk from N statements into
     * this store on (every later write fails, reads work), in a process a
     * test cannot reach into (a recorded script) */
    if (jn_setting_raw(JN_S_DB_FAULT_AFTER)) {
        int64_t after = 0;
        jn_status fs = jn_setting_int(JN_S_DB_FAULT_AFTER, &after);
        if (fs) return fs;
        jn_db_inject_fault((int)after);
        fault_full = 1;
    }
    jn_db *db = calloc(1, sizeof *db);
    if (!db || !(db->path = strdup(path)) || !(db->abs = absolute(path))) {
        int e = errno;
        if (db) free(db->path);
        free(db);
        if (e == ENOMEM) return jn_error(JN_ERR_NOMEM, "out of memory opening trace store %s", path);
        return jn_error(JN_ERR_IO, "cannot resolve trace store %s: the working directory is gone (%s)", path,
                        strerror(e));
    }
    jn_status s = JN_OK;
    struct stat sb;
    int exists = stat(db->abs, &sb) == 0;
    if (exists && S_ISDIR(sb.st_mode)) {
        s = jn_error(JN_ERR_IO, "trace store %s is a directory, not a file; give a file path such as %s/run.db",
                     path, path);
        goto fail;
    }
    if (!exists && flags != JN_DB_CREATE) {
        s = jn_error(JN_ERR_IO, "trace store %s does not exist (%s); record one with `janus record`", path,
                     strerror(errno));
        goto fail;
    }
    if (exists && flags != JN_DB_READONLY && not_writable(db->abs, db->ro_why, sizeof db->ro_why)) {
        if (flags != JN_DB_WRITE_OR_READONLY) {
            s = jn_error(JN_ERR_IO, "trace store %s cannot be written here (%s); reading it still works "
                         "(`janus inspect`, `janus optimize --no-store`)", path, db->ro_why);
            goto fail;
        }
        flags = JN_DB_READONLY;
    } else {
        db->ro_why[0] = 0;
        if (flags == JN_DB_WRITE_OR_READONLY) flags = JN_DB_WRITE;
    }
    db->flags = flags;
    int oflags = flags == JN_DB_READONLY ? SQLITE_OPEN_READONLY
                 : flags == JN_DB_WRITE  ? SQLITE_OPEN_READWRITE
                                         : SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE;
    int rc = open_conn(db, oflags, 0);
    if (rc != SQLITE_OK) {
        s = jn_error(JN_ERR_IO, "cannot %s trace store %s: %s%s", exists ? "open" : "create", path,
                     db->h ? sqlite3_errmsg(db->h) : sqlite3_errstr(rc),
                     exists ? " (check the file's permissions)"
                            : " (check that the directory exists and is writable)");
        goto fail;
    }
    if (flags != JN_DB_READONLY && sqlite3_db_readonly(db->h, "main") == 1) {
        s = jn_error(JN_ERR_IO, "trace store %s is not writable (check the permissions of the file and "
                     "its directory)", path);
        goto fail;
    }
    if (flags == JN_DB_READONLY && (s = readable(db))) goto fail;

    int is_store = 0;
    if ((s = classify(db, &is_store))) goto fail;
    if (!is_store && flags != JN_DB_CREATE) {
        s = jn_error(JN_ERR_IO, "%s is an empty file, not a janus trace store; record one with `janus record`",
                     path);
        goto fail;
    }
    /* only now, knowing the file is ours (or empty), change its settings */
    if ((rc = db_exec(db, "PRAGMA foreign_keys = ON")) != SQLITE_OK) {
        s = db_fail(db, rc, "enabling foreign keys");
        goto fail;
    }
    if (flags != JN_DB_READONLY) {
        rc = set_wal(db);
        if (rc != SQLITE_OK) {
            s = db_fail(db, rc, "switching to WAL mode");
            goto fail;
        }
        if ((rc = db_exec(db, "PRAGMA synchronous = NORMAL")) != SQLITE_OK) {
            s = db_fail(db, rc, "setting synchronous=NORMAL");
            goto fail;
        }
    }
    if (!is_store && (s = create_schema(db))) goto fail;

    int64_t v = 0;
    int r = meta_int(db, "schema_version", &v, &rc);
    if (r < 0) {
        s = db_fail(db, rc, "reading the schema version");
        goto fail;
    }
    if (r > 0) {
        s = jn_error(JN_ERR_IO, "%s is not a janus trace store (its meta table has no schema_version)", path);
        goto fail;
    }
    if (v > JN_DB_SCHEMA_VERSION) {
        s = jn_error(JN_ERR_IO, "trace store %s has schema version %" PRId64 ", newer than version %d that "
                     "this janus (%s) reads; upgrade janus to open it", path, v, JN_DB_SCHEMA_VERSION, JANUS_VERSION);
        goto fail;
    }
    /* Read-only, a store of v1 or later is read as it is: v2, v3, v5, v6, v7,
     * v8, v9, v10 and v11 only added tables and columns with defaults (v4
     * and v12 only what chunks may hold), so an
     * older store simply has no bundles, no replay counters, no algorithm
     * choices, only recorded runs, runs known by host and pid alone, no
     * extrapolated hits, no regions, no region counters of its replays and
     * no backward-skip counters. */
    if (v < JN_DB_SCHEMA_VERSION && !(flags == JN_DB_READONLY && v >= 1)) {
        if (flags == JN_DB_READONLY) {
            s = jn_error(JN_ERR_IO, "trace store %s has the older schema version %" PRId64 " (current %d); "
                         "open it for writing once (e.g. `janus record --db %s`) to migrate it",
                         path, v, JN_DB_SCHEMA_VERSION, path);
            goto fail;
        }
        if ((s = migrate(db))) goto fail;
        v = JN_DB_SCHEMA_VERSION;
    }
    db->version = (int)v;
    *out = db;
    return JN_OK;
fail:
    jn_db_close(db);
    return s;
}

void jn_db_close(jn_db *db) {
    if (!db) return;
    for (int i = 0; i < ST_COUNT; i++) sqlite3_finalize(db->st[i]);
    if (db->h) sqlite3_close(db->h);
    ZSTD_freeCCtx(db->cctx);
    free(db->zbuf);
    free(db->path);
    free(db->abs);
    free(db);
}

int jn_db_schema_version(jn_db *db) { return db ? db->version : -1; }

const char *jn_db_path(jn_db *db) { return db ? db->path : ""; }

int jn_db_writable(jn_db *db, const char **why) {
    if (why) *why = !db ? "no store" : db->ro_why[0] ? db->ro_why : db->flags == JN_DB_READONLY ? "opened read-only" : "";
    return db && db->flags != JN_DB_READONLY;
}

sqlite3 *db_conn(jn_db *db) { return db->h; }

struct sqlite3 *jn_db_testing_handle(jn_db *db) { return db ? db->h : NULL; }

static jn_status need_write(jn_db *db, const char *fn) {
    if (!db) return jn_error(JN_ERR_VALUE, "%s: NULL trace store", fn);
    if (db->flags == JN_DB_READONLY)
        return jn_error(JN_ERR_IO, "%s: trace store %s was opened read-only", fn, db->path);
    return JN_OK;
}

/* ----------------------------------------------------------------- runs */
jn_status jn_db_run_begin(jn_db *db, const jn_db_run_info *info, int64_t *run_id) {
    jn_status s;
    if ((s = need_write(db, "jn_db_run_begin"))) return s;
    if (!info || !run_id) return jn_error(JN_ERR_VALUE, "jn_db_run_begin: NULL run info or run id");
    sqlite3_stmt *opt, *run, *begin, *commit;
    if ((s = get_stmt(db, ST_OPTABLE, &opt)) || (s = get_stmt(db, ST_RUN, &run)) ||
        (s = get_stmt(db, ST_BEGIN, &begin)) || (s = get_stmt(db, ST_COMMIT, &commit)))
        return s;
    int rc = run_stmt(db, begin);
    if (rc != SQLITE_OK) return db_fail(db, rc, "starting a run");
    if (info->optable_hash) {
        bind_text(opt, 1, info->optable_hash);
        bind_text(opt, 2, info->optable_ops ? info->optable_ops : "");
        if ((rc = run_stmt(db, opt)) != SQLITE_OK) goto fail;
    }
    bind_text(run, 1, info->argv_json);
    bind_text(run, 2, info->cwd);
    sqlite3_bind_double(run, 3, info->started);
    bind_text(run, 4, info->python_version);
    bind_text(run, 5, info->janus_version ? info->janus_version : JANUS_VERSION);
    bind_text(run, 6, info->optable_hash);
    bind_text(run, 7, info->cpu_features);
    bind_text(run, 8, info->device);
    bind_text(run, 9, info->hostname);
    sqlite3_bind_int64(run, 10, info->pid);
    bind_text(run, 11, info->kind && *info->kind ? info->kind : "record");
    if (info->bundle_id > 0) sqlite3_bind_int64(run, 12, info->bundle_id);
    else sqlite3_bind_null(run, 12);
    /* the owner's identity, when it is a process of this host we can see */
    char host[256], boot[64];
    uint64_t t0 = 0;
    if (info->pid > 0 && info->hostname && !db_hostname(host, sizeof host) && !strcmp(host, info->hostname))
        t0 = db_proc_start(info->pid);
    if (t0) sqlite3_bind_int64(run, 13, (int64_t)t0);
    else sqlite3_bind_null(run, 13);
    if (t0 && !db_boot_id(boot, sizeof boot)) bind_text(run, 14, boot);
    else sqlite3_bind_null(run, 14);
    if ((rc = run_stmt(db, run)) != SQLITE_OK) goto fail;
    *run_id = sqlite3_last_insert_rowid(db->h);
    if ((rc = run_stmt(db, commit)) != SQLITE_OK) goto fail;
    return JN_OK;
fail:
    s = db_fail(db, rc, "recording a new run");
    rollback(db);
    return s;
}

jn_status jn_db_run_end(jn_db *db, int64_t run_id, int exit_status, const char *status, double ended) {
    jn_status s;
    if ((s = need_write(db, "jn_db_run_end"))) return s;
    sqlite3_stmt *st;
    if ((s = get_stmt(db, ST_RUN_END, &st))) return s;
    sqlite3_bind_double(st, 1, ended);
    sqlite3_bind_int(st, 2, exit_status);
    bind_text(st, 3, status ? status : "finished");
    sqlite3_bind_int64(st, 4, run_id);
    int rc = run_stmt(db, st);
    if (rc != SQLITE_OK) return db_fail(db, rc, "ending a run");
    if (sqlite3_changes(db->h) == 0)
        return jn_error(JN_ERR_VALUE, "trace store %s has no run %" PRId64 " to end", db->path, run_id);
    return JN_OK;
}

jn_status jn_db_run_set_python(jn_db *db, int64_t run_id, const char *python_version) {
    jn_status s;
    if ((s = need_write(db, "jn_db_run_set_python"))) return s;
    sqlite3_stmt *st;
    if ((s = get_stmt(db, ST_RUN_PY, &st))) return s;
    bind_text(st, 1, python_version ? python_version : "");
    sqlite3_bind_int64(st, 2, run_id);
    int rc = run_stmt(db, st);
    if (rc != SQLITE_OK) return db_fail(db, rc, "recording the Python version of a run");
    if (sqlite3_changes(db->h) == 0)
        return jn_error(JN_ERR_VALUE, "trace store %s has no run %" PRId64, db->path, run_id);
    return JN_OK;
}

/* ------------------------------------------------------------ lost runs */
int db_hostname(char *out, size_t n) {
    if (gethostname(out, n - 1) != 0) return -1;
    out[n - 1] = 0;
    return 0;
}

int db_boot_id(char *out, size_t n) {
    FILE *f = fopen("/proc/sys/kernel/random/boot_id", "r");
    if (!f) return -1;
    int ok = fgets(out, (int)n, f) != NULL;
    fclose(f);
    if (!ok) return -1;
    out[strcspn(out, "\n")] = 0;
    return out[0] ? 0 : -1;
}

uint64_t db_proc_start(int64_t pid) {
    char p[64], buf[1024];
    snprintf(p, sizeof p, "/proc/%lld/stat", (long long)pid);
    FILE *f = fopen(p, "r");
    if (!f) return 0;
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = 0;
    const char *q = strrchr(buf, ')'); /* the command name may hold spaces */
    unsigned long long t = 0;
    if (!q || sscanf(q + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %*u %*u %*d %*d %*d %*d %*d %*d %llu",
                     &t) != 1)
        return 0;
    return (uint64_t)t;
}

int jn_db_run_is_lost(const char *status, const char *hostname, int64_t pid, int64_t pid_start, const char *boot_id) {
    if (status && status[0] && strcmp(status, "running")) return 0;
    char host[256], boot[64];
    if (pid <= 0 || !hostname || db_hostname(host, sizeof host) || strcmp(host, hostname))
        return 0; /* another host's process: nothing here can tell */
    if (boot_id && boot_id[0] && !db_boot_id(boot, sizeof boot) && strcmp(boot, boot_id))
        return 1; /* started before this host's last boot */
    if (pid > INT32_MAX || (kill((pid_t)pid, 0) != 0 && errno == ESRCH)) return 1; /* no such process */
    if (pid_start > 0) {
        uint64_t t = db_proc_start(pid);
        if (t && t != (uint64_t)pid_start) return 1; /* the pid is another process now */
    }
    return 0;
}

jn_status jn_db_mark_lost(jn_db *db, jn_db_run_row **rows, int *n) {
    jn_status s;
    if ((s = need_write(db, "jn_db_mark_lost"))) return s;
    if (!rows || !n) return jn_error(JN_ERR_VALUE, "jn_db_mark_lost: NULL argument");
    *rows = NULL;
    *n = 0;
    jn_db_run_row *all = NULL;
    int nall = 0, nlost = 0;
    if ((s = jn_db_runs(db, 0, &all, &nall))) return s;
    sqlite3_stmt *up = NULL;
    int rc = db_prepare(db, "UPDATE runs SET status = 'lost' WHERE id = ?1 AND status = 'running'", &up);
    for (int i = 0; rc == SQLITE_OK && i < nall; i++) {
        if (strcmp(all[i].status ? all[i].status : "", "lost")) continue; /* jn_db_runs judged it */
        sqlite3_bind_int64(up, 1, all[i].id);
        rc = db_step(db, up);
        sqlite3_reset(up);
        if (rc == SQLITE_DONE) rc = SQLITE_OK;
        if (rc == SQLITE_OK && sqlite3_changes(db->h) > 0) {
            jn_db_run_row t = all[nlost]; /* keep the marked ones first, in order */
            all[nlost++] = all[i];
            all[i] = t;
        }
    }
    sqlite3_finalize(up);
    if (rc != SQLITE_OK) {
        jn_db_runs_free(all, nall);
        return db_fail(db, rc, "marking the runs whose process died as lost");
    }
    for (int i = nlost; i < nall; i++) db_run_row_clear(&all[i]);
    if (nlost == 0) {
        free(all);
        return JN_OK;
    }
    *rows = all;
    *n = nlost;
    return JN_OK;
}

/* ------------------------------------------------------------ interning */
/* Look up with `get`; if absent insert with `put` (OR IGNORE: a concurrent
 * process may win the race) and look up again. */
static jn_status intern(jn_db *db, sqlite3_stmt *get, sqlite3_stmt *put, int64_t *id, const char *what) {
    for (int pass = 0; pass < 2; pass++) {
        int rc = db_step(db, get);
        if (rc == SQLITE_ROW) {
            *id = sqlite3_column_int64(get, 0);
            sqlite3_reset(get);
            return JN_OK;
        }
        sqlite3_reset(get);
        if (rc != SQLITE_DONE) return db_fail(db, rc, what);
        if (pass == 0 && (rc = run_stmt(db, put)) != SQLITE_OK) return db_fail(db, rc, what);
    }
    return jn_error(JN_ERR_IO, "trace store %s: %s: the inserted row is missing", db->path, what);
}

jn_status jn_db_callsite(jn_db *db, const char *file, int line, const char *func, int64_t *id) {
    jn_status s;
    if ((s = need_write(db, "jn_db_callsite"))) return s;
    if (!id) return jn_error(JN_ERR_VALUE, "jn_db_callsite: NULL id");
    sqlite3_stmt *get, *put;
    if ((s = get_stmt(db, ST_CS_GET, &get)) || (s = get_stmt(db, ST_CS_PUT, &put))) return s;
    sqlite3_stmt *both[2] = {get, put};
    for (int i = 0; i < 2; i++) {
        bind_text(both[i], 1, file ? file : "");
        sqlite3_bind_int(both[i], 2, line);
        bind_text(both[i], 3, func ? func : "");
    }
    return intern(db, get, put, id, "interning a call site");
}

jn_status jn_db_stack(jn_db *db, uint64_t hash, const int64_t *callsites, int n, int64_t *id) {
    jn_status s;
    if ((s = need_write(db, "jn_db_stack"))) return s;
    if (!id || n < 0 || (n > 0 && !callsites))
        return jn_error(JN_ERR_VALUE, "jn_db_stack: bad arguments (n=%d)", n);
    sqlite3_stmt *get, *put;
    if ((s = get_stmt(db, ST_STACK_GET, &get)) || (s = get_stmt(db, ST_STACK_PUT, &put))) return s;
    /* frames as a JSON array so SQL can json_each() it */
    size_t cap = (size_t)n * 22 + 3, len = 0;
    char *frames = malloc(cap);
    if (!frames) return jn_error(JN_ERR_NOMEM, "out of memory interning a call stack of %d frames", n);
    frames[len++] = '[';
    for (int i = 0; i < n; i++)
        len += (size_t)snprintf(frames + len, cap - len, "%s%" PRId64, i ? "," : "", callsites[i]);
    frames[len++] = ']';
    frames[len] = 0;
    sqlite3_bind_int64(get, 1, u64_to_i64(hash));
    sqlite3_bind_int64(put, 1, u64_to_i64(hash));
    sqlite3_bind_text(put, 2, frames, (int)len, SQLITE_STATIC);
    s = intern(db, get, put, id, "interning a call stack");
    sqlite3_clear_bindings(put);
    free(frames);
    return s;
}

/* ---------------------------------------------------------------- steps */
static jn_status check_step(const jn_db_step *s) {
    if ((s->events_len && !s->events) || s->nopcounts < 0 || (s->nopcounts && !s->opcounts) || s->nsyncs < 0 ||
        (s->nsyncs && !s->syncs) || s->ndecisions < 0 || (s->ndecisions && !s->decisions) || s->nshapes < 0 ||
        (s->nshapes && !s->shapes) || s->nargtypes < 0 || (s->nargtypes && !s->argtypes))
        return jn_error(JN_ERR_VALUE, "jn_db_write_step: step %" PRId64 " of run %" PRId64
                        " has a negative count or a NULL array", s->step, s->run_id);
    if (s->events_len > (size_t)INT32_MAX)
        return jn_error(JN_ERR_VALUE, "jn_db_write_step: step %" PRId64 " has %zu bytes of events (at most 2 GiB)",
                        s->step, s->events_len);
    for (int i = 0; i < s->nopcounts; i++)
        if (!s->opcounts[i].op) goto nullname;
    for (int i = 0; i < s->nshapes; i++)
        if (!s->shapes[i].op) goto nullname;
    for (int i = 0; i < s->nargtypes; i++)
        if (!s->argtypes[i].op || !s->argtypes[i].pytype) goto nullname;
    return JN_OK;
nullname:
    return jn_error(JN_ERR_VALUE, "jn_db_write_step: step %" PRId64 " has a summary row with a NULL op name "
                    "or type", s->step);
}

/* One step's rows inside the caller's transaction; on failure sets the
 * error (naming the step) and returns it, leaving the rollback to the caller. */
static jn_status write_one(jn_db *db, const jn_db_step *s, sqlite3_stmt **q) {
    jn_status st;
    if ((st = check_step(s))) return st;

    /* compress before taking the write lock: other writers wait less */
    size_t bound = ZSTD_compressBound(s->events_len);
    if (bound > db->zcap) {
        void *p = realloc(db->zbuf, bound);
        if (!p) return jn_error(JN_ERR_NOMEM, "out of memory compressing step %" PRId64, s->step);
        db->zbuf = p;
        db->zcap = bound;
    }
    if (!db->cctx && !(db->cctx = ZSTD_createCCtx()))
        return jn_error(JN_ERR_NOMEM, "out of memory creating a zstd context");
    size_t csize = ZSTD_compressCCtx(db->cctx, db->zbuf, db->zcap, s->events ? s->events : "", s->events_len,
                                     ZSTD_LEVEL);
    if (ZSTD_isError(csize))
        return jn_error(JN_ERR_RUNTIME, "compressing step %" PRId64 " of run %" PRId64 ": %s", s->step, s->run_id,
                        ZSTD_getErrorName(csize));

    const char *what = "inserting the step row";
    int rc;
    char sig[17];
    snprintf(sig, sizeof sig, "%016" PRIx64, s->signature);
    sqlite3_stmt *t = q[ST_STEP];
    sqlite3_bind_int64(t, 1, s->run_id);
    sqlite3_bind_int64(t, 2, s->step);
    bind_text(t, 3, s->kind ? s->kind : "marker");
    sqlite3_bind_double(t, 4, s->started);
    sqlite3_bind_double(t, 5, s->duration);
    sqlite3_bind_text(t, 6, sig, 16, SQLITE_STATIC);
    sqlite3_bind_int64(t, 7, s->n_ops);
    sqlite3_bind_int64(t, 8, s->n_syncs);
    if ((rc = run_stmt(db, t)) != SQLITE_OK) goto fail;

    what = "inserting the event chunk";
    t = q[ST_CHUNK];
    sqlite3_bind_int64(t, 1, s->run_id);
    sqlite3_bind_int64(t, 2, s->step);
    sqlite3_bind_int64(t, 3, (int64_t)s->events_len);
    sqlite3_bind_blob(t, 4, db->zbuf, (int)csize, SQLITE_STATIC);
    rc = run_stmt(db, t);
    sqlite3_bind_null(t, 4); /* don't keep a pointer into zbuf */
    if (rc != SQLITE_OK) goto fail;

    what = "inserting op counts";
    t = q[ST_OPCOUNT];
    sqlite3_bind_int64(t, 1, s->run_id);
    sqlite3_bind_int64(t, 2, s->step);
    for (int i = 0; i < s->nopcounts; i++) {
        sqlite3_bind_text(t, 3, s->opcounts[i].op, -1, SQLITE_STATIC);
        sqlite3_bind_int64(t, 4, s->opcounts[i].count);
        if ((rc = run_stmt(db, t)) != SQLITE_OK) goto fail;
    }
    what = "inserting sync points";
    t = q[ST_SYNC];
    sqlite3_bind_int64(t, 1, s->run_id);
    sqlite3_bind_int64(t, 2, s->step);
    for (int i = 0; i < s->nsyncs; i++) {
        const jn_db_sync *y = &s->syncs[i];
        sqlite3_bind_int64(t, 3, y->seq);
        sqlite3_bind_int(t, 4, y->kind);
        sqlite3_bind_double(t, 5, y->value); /* NaN is stored as NULL: no value */
        sqlite3_bind_int64(t, 6, y->callsite);
        if ((rc = run_stmt(db, t)) != SQLITE_OK) goto fail;
    }
    what = "inserting control-flow decisions";
    t = q[ST_DECISION];
    sqlite3_bind_int64(t, 1, s->run_id);
    sqlite3_bind_int64(t, 2, s->step);
    for (int i = 0; i < s->ndecisions; i++) {
        const jn_db_decision *d = &s->decisions[i];
        sqlite3_bind_int64(t, 3, d->callsite);
        sqlite3_bind_int(t, 4, d->kind);
        sqlite3_bind_int64(t, 5, d->outcome);
        sqlite3_bind_int64(t, 6, d->count);
        if ((rc = run_stmt(db, t)) != SQLITE_OK) goto fail;
    }
    what = "inserting shapes";
    t = q[ST_SHAPE];
    sqlite3_bind_int64(t, 1, s->run_id);
    sqlite3_bind_int64(t, 2, s->step);
    for (int i = 0; i < s->nshapes; i++) {
        const jn_db_shape *h = &s->shapes[i];
        sqlite3_bind_text(t, 3, h->op, -1, SQLITE_STATIC);
        sqlite3_bind_int64(t, 4, h->callsite);
        sqlite3_bind_int(t, 5, h->arg);
        sqlite3_bind_int(t, 6, h->dim);
        sqlite3_bind_int64(t, 7, h->size);
        if ((rc = run_stmt(db, t)) != SQLITE_OK) goto fail;
    }
    what = "inserting argument types";
    t = q[ST_ARGTYPE];
    sqlite3_bind_int64(t, 1, s->run_id);
    sqlite3_bind_int64(t, 2, s->step);
    for (int i = 0; i < s->nargtypes; i++) {
        const jn_db_argtype *a = &s->argtypes[i];
        sqlite3_bind_text(t, 3, a->op, -1, SQLITE_STATIC);
        sqlite3_bind_int64(t, 4, a->callsite);
        sqlite3_bind_int(t, 5, a->arg);
        sqlite3_bind_text(t, 6, a->pytype, -1, SQLITE_STATIC);
        sqlite3_bind_int64(t, 7, a->count);
        if ((rc = run_stmt(db, t)) != SQLITE_OK) goto fail;
    }
    return JN_OK;
fail:
    if (rc == SQLITE_CONSTRAINT_PRIMARYKEY && strcmp(what, "inserting the step row") == 0)
        st = jn_error(JN_ERR_VALUE, "trace store %s: step %" PRId64 " of run %" PRId64 " is already recorded",
                      db->path, s->step, s->run_id);
    else if (rc == SQLITE_CONSTRAINT_FOREIGNKEY)
        st = jn_error(JN_ERR_VALUE, "trace store %s: cannot record step %" PRId64 ": there is no run %" PRId64
                      " (create it with jn_db_run_begin)", db->path, s->step, s->run_id);
    else {
        char buf[128];
        snprintf(buf, sizeof buf, "writing step %" PRId64 " of run %" PRId64 " (%s)", s->step, s->run_id, what);
        st = db_fail(db, rc, buf);
    }
    return st;
}

jn_status jn_db_write_steps(jn_db *db, const jn_db_step *steps, int n) {
    jn_status st;
    if ((st = need_write(db, "jn_db_write_steps"))) return st;
    if (!steps || n < 1) return jn_error(JN_ERR_VALUE, "jn_db_write_steps: no steps");
    sqlite3_stmt *q[ST_COUNT];
    static const int needed[] = {ST_BEGIN, ST_COMMIT, ST_STEP, ST_CHUNK, ST_OPCOUNT,
                                 ST_SYNC, ST_DECISION, ST_SHAPE, ST_ARGTYPE};
    for (size_t i = 0; i < sizeof needed / sizeof needed[0]; i++)
        if ((st = get_stmt(db, needed[i], &q[needed[i]]))) return st;
    int rc = run_stmt(db, q[ST_BEGIN]);
    if (rc != SQLITE_OK) {
        char buf[128];
        snprintf(buf, sizeof buf, "starting the transaction of step %" PRId64 " of run %" PRId64, steps[0].step,
                 steps[0].run_id);
        return db_fail(db, rc, buf);
    }
    for (int i = 0; i < n; i++)
        if ((st = write_one(db, &steps[i], q))) {
            rollback(db);
            return st;
        }
    if ((rc = run_stmt(db, q[ST_COMMIT])) != SQLITE_OK) {
        char buf[128];
        snprintf(buf, sizeof buf, "committing step %" PRId64 " of run %" PRId64, steps[n - 1].step,
                 steps[n - 1].run_id);
        st = db_fail(db, rc, buf);
        rollback(db);
        return st;
    }
    return JN_OK;
}

jn_status jn_db_write_step(jn_db *db, const jn_db_step *s) {
    if (!s) return jn_error(JN_ERR_VALUE, "jn_db_write_step: NULL step");
    return jn_db_write_steps(db, s, 1);
}

jn_status jn_db_read_chunk(jn_db *db, int64_t run_id, int64_t step, void **data, size_t *len) {
    if (!db || !data || !len) return jn_error(JN_ERR_VALUE, "jn_db_read_chunk: NULL argument");
    *data = NULL;
    *len = 0;
    jn_status s;
    sqlite3_stmt *st;
    if ((s = get_stmt(db, ST_READ_CHUNK, &st))) return s;
    sqlite3_bind_int64(st, 1, run_id);
    sqlite3_bind_int64(st, 2, step);
    int rc = db_step(db, st);
    if (rc == SQLITE_DONE) {
        sqlite3_reset(st);
        return jn_error(JN_ERR_VALUE, "trace store %s has no events for step %" PRId64 " of run %" PRId64,
                        db->path, step, run_id);
    }
    if (rc != SQLITE_ROW) {
        s = db_fail(db, rc, "reading an event chunk");
        sqlite3_reset(st);
        return s;
    }
    const char *codec = (const char *)sqlite3_column_text(st, 0);
    int64_t raw = sqlite3_column_int64(st, 1);
    const void *blob = sqlite3_column_blob(st, 2);
    size_t csize = (size_t)sqlite3_column_bytes(st, 2);
    const char *why = NULL;
    void *out = NULL;
    if (!codec || strcmp(codec, "zstd") != 0) why = "unknown codec";
    else if (raw < 0 || raw > INT32_MAX) why = "bad raw size";
    else if (ZSTD_getFrameContentSize(blob, csize) != (unsigned long long)raw) why = "size mismatch";
    else if (!(out = malloc(raw ? (size_t)raw : 1))) {
        sqlite3_reset(st);
        return jn_error(JN_ERR_NOMEM, "out of memory reading step %" PRId64 " of run %" PRId64, step, run_id);
    } else {
        size_t got = ZSTD_decompress(out, (size_t)raw, blob, csize);
        if (ZSTD_isError(got)) why = ZSTD_getErrorName(got);
        else if (got != (size_t)raw) why = "short data";
    }
    if (why) {
        s = jn_error(JN_ERR_VALUE, "trace store %s: the event chunk of step %" PRId64 " of run %" PRId64
                     " is corrupt (%s%s%s)", db->path, step, run_id, why, codec ? ", codec " : "", codec ? codec : "");
        sqlite3_reset(st);
        free(out);
        return s;
    }
    sqlite3_reset(st);
    *data = out;
    *len = (size_t)raw;
    return JN_OK;
}

/* -------------------------------------------------------------- bundles */
uint64_t jn_db_fnv1a64(const void *data, size_t len) {
    const uint8_t *p = data;
    uint64_t h = 0xcbf29ce484222325ULL;
    for (size_t i = 0; i < len; i++) {
        h ^= p[i];
        h *= 0x100000001b3ULL;
    }
    return h;
}

static int has_bundles(jn_db *db) { return db->version >= 2; }

jn_status jn_db_bundle_put(jn_db *db, const jn_db_bundle *b, int64_t *id) {
    jn_status s;
    if ((s = need_write(db, "jn_db_bundle_put"))) return s;
    if (!b || !b->target || !*b->target || !b->optable_hash || !b->janus_version || (b->len && !b->data))
        return jn_error(JN_ERR_VALUE, "jn_db_bundle_put: a bundle needs a target, an op-table hash, a janus "
                        "version and its data");
    if (b->len > (size_t)INT32_MAX)
        return jn_error(JN_ERR_VALUE, "jn_db_bundle_put: the bundle for target %s has %zu bytes (at most 2 GiB)",
                        b->target, b->len);
    size_t bound = ZSTD_compressBound(b->len);
    void *z = malloc(bound ? bound : 1);
    if (!z) return jn_error(JN_ERR_NOMEM, "out of memory compressing the bundle for target %s", b->target);
    size_t csize = ZSTD_compress(z, bound, b->data ? b->data : "", b->len, ZSTD_LEVEL);
    if (ZSTD_isError(csize)) {
        free(z);
        return jn_error(JN_ERR_RUNTIME, "compressing the bundle for target %s: %s", b->target,
                        ZSTD_getErrorName(csize));
    }
    char sum[17];
    snprintf(sum, sizeof sum, "%016" PRIx64, jn_db_fnv1a64(b->data ? b->data : "", b->len));

    sqlite3_stmt *del = NULL, *ins = NULL;
    const char *what = "starting the bundle transaction";
    int rc = db_exec(db, "BEGIN IMMEDIATE");
    if (rc != SQLITE_OK) goto fail;
    what = "preparing the bundle statements";
    if ((rc = sqlite3_prepare_v2(db->h, "DELETE FROM bundles WHERE target = ?1", -1, &del, NULL)) != SQLITE_OK ||
        (rc = sqlite3_prepare_v2(db->h,
                                 "INSERT INTO bundles(created, target, optable_hash, janus_version, cpu_features, "
                                 "source_runs, source_steps, format, codec, raw_bytes, checksum, data) VALUES("
                                 "CASE WHEN ?1 > 0 THEN ?1 ELSE (julianday('now') - 2440587.5) * 86400.0 END, "
                                 "?2, ?3, ?4, ?5, ?6, ?7, ?8, 'zstd', ?9, ?10, ?11)",
                                 -1, &ins, NULL)) != SQLITE_OK)
        goto fail;
    what = "deleting the target's old bundles";
    bind_text(del, 1, b->target);
    if ((rc = run_stmt(db, del)) != SQLITE_OK) goto fail;
    what = "inserting the bundle";
    sqlite3_bind_double(ins, 1, b->created);
    bind_text(ins, 2, b->target);
    bind_text(ins, 3, b->optable_hash);
    bind_text(ins, 4, b->janus_version);
    bind_text(ins, 5, b->cpu_features ? b->cpu_features : "");
    bind_text(ins, 6, b->source_runs ? b->source_runs : "[]");
    sqlite3_bind_int64(ins, 7, b->source_steps);
    sqlite3_bind_int64(ins, 8, b->format);
    sqlite3_bind_int64(ins, 9, (int64_t)b->len);
    sqlite3_bind_text(ins, 10, sum, 16, SQLITE_STATIC);
    sqlite3_bind_blob(ins, 11, z, (int)csize, SQLITE_STATIC);
    if ((rc = run_stmt(db, ins)) != SQLITE_OK) goto fail;
    int64_t new_id = sqlite3_last_insert_rowid(db->h);
    what = "committing the bundle";
    if ((rc = db_exec(db, "COMMIT")) != SQLITE_OK) goto fail;
    sqlite3_finalize(del);
    sqlite3_finalize(ins);
    free(z);
    if (id) *id = new_id;
    return JN_OK;
fail:;
    char buf[160];
    snprintf(buf, sizeof buf, "storing the bundle for target %s (%s)", b->target, what);
    s = db_fail(db, rc, buf);
    rollback(db);
    sqlite3_finalize(del);
    sqlite3_finalize(ins);
    free(z);
    return s;
}

void jn_db_bundle_free(jn_db_bundle *b) {
    if (!b) return;
    free((void *)b->target);
    free((void *)b->optable_hash);
    free((void *)b->janus_version);
    free((void *)b->cpu_features);
    free((void *)b->source_runs);
    free((void *)b->data);
    memset(b, 0, sizeof *b);
}

void jn_db_bundle_list_free(jn_db_bundle *list, int n) {
    for (int i = 0; list && i < n; i++) jn_db_bundle_free(&list[i]);
    free(list);
}

char *db_col_dup(sqlite3_stmt *st, int i) {
    const unsigned char *t = sqlite3_column_text(st, i);
    return strdup(t ? (const char *)t : "");
}

/* ids grow (AUTOINCREMENT): the newest bundle of a target has the largest */
#define BUNDLE_COLS "id, created, target, optable_hash, janus_version, cpu_features, source_runs, " \
                    "source_steps, format, codec, raw_bytes, checksum, length(data)"

/* The metadata columns of the current row of st (BUNDLE_COLS) into *b. */
static jn_status bundle_row(jn_db *db, sqlite3_stmt *st, jn_db_bundle *b) {
    memset(b, 0, sizeof *b);
    b->id = sqlite3_column_int64(st, 0);
    b->created = sqlite3_column_double(st, 1);
    b->target = db_col_dup(st, 2);
    b->optable_hash = db_col_dup(st, 3);
    b->janus_version = db_col_dup(st, 4);
    b->cpu_features = db_col_dup(st, 5);
    b->source_runs = db_col_dup(st, 6);
    b->source_steps = sqlite3_column_int64(st, 7);
    b->format = sqlite3_column_int64(st, 8);
    int64_t raw = sqlite3_column_int64(st, 10);
    b->len = raw > 0 ? (size_t)raw : 0;
    const unsigned char *sum = sqlite3_column_text(st, 11);
    snprintf(b->checksum, sizeof b->checksum, "%s", sum ? (const char *)sum : "");
    b->stored_bytes = (size_t)sqlite3_column_int64(st, 12);
    if (!b->target || !b->optable_hash || !b->janus_version || !b->cpu_features || !b->source_runs) {
        jn_db_bundle_free(b);
        return jn_error(JN_ERR_NOMEM, "out of memory reading a bundle of trace store %s", db->path);
    }
    return JN_OK;
}

/* Decompress and verify the data column (13) of the current row into b. */
static jn_status bundle_data(jn_db *db, sqlite3_stmt *st, jn_db_bundle *b) {
    const char *codec = (const char *)sqlite3_column_text(st, 9);
    int64_t raw = sqlite3_column_int64(st, 10);
    const void *blob = sqlite3_column_blob(st, 13);
    size_t csize = (size_t)sqlite3_column_bytes(st, 13);
    char why[160] = "";
    void *out = NULL;
    if (!codec || strcmp(codec, "zstd") != 0) {
        snprintf(why, sizeof why, "unknown codec '%s'", codec ? codec : "");
    } else if (raw < 0 || raw > INT32_MAX) {
        snprintf(why, sizeof why, "bad raw size %" PRId64, raw);
    } else {
        unsigned long long fs = blob ? ZSTD_getFrameContentSize(blob, csize) : ZSTD_CONTENTSIZE_ERROR;
        if (fs == ZSTD_CONTENTSIZE_ERROR || fs == ZSTD_CONTENTSIZE_UNKNOWN)
            snprintf(why, sizeof why, "the compressed data is damaged or truncated (%zu bytes)", csize);
        else if (fs != (unsigned long long)raw)
            snprintf(why, sizeof why, "it holds %llu bytes where %" PRId64 " were stored", fs, raw);
        else if (!(out = malloc(raw ? (size_t)raw : 1)))
            return jn_error(JN_ERR_NOMEM, "out of memory reading bundle %" PRId64 " of trace store %s", b->id,
                            db->path);
        else {
            size_t got = ZSTD_decompress(out, (size_t)raw, blob, csize);
            if (ZSTD_isError(got))
                snprintf(why, sizeof why, "the compressed data is damaged or cut short: %s", ZSTD_getErrorName(got));
            else if (got != (size_t)raw)
                snprintf(why, sizeof why, "it holds %zu bytes where %" PRId64 " were stored", got, raw);
            else {
                char sum[17];
                snprintf(sum, sizeof sum, "%016" PRIx64, jn_db_fnv1a64(out, (size_t)raw));
                if (strcmp(sum, b->checksum) != 0)
                    snprintf(why, sizeof why, "checksum %s, stored %s", sum, b->checksum);
            }
        }
    }
    if (why[0]) {
        free(out);
        return jn_error(JN_ERR_VALUE, "trace store %s: bundle %" PRId64 " (target %s) is corrupt or truncated (%s); "
                        "re-run `janus optimize %s` to rebuild it", db->path, b->id, b->target, why, db->path);
    }
    b->data = out;
    b->len = (size_t)raw;
    return JN_OK;
}

/* One bundle by target (newest) or by id. */
static jn_status bundle_get(jn_db *db, const char *target, int64_t id, jn_db_bundle *out) {
    if (!db || !out) return jn_error(JN_ERR_VALUE, "jn_db_bundle_get: NULL argument");
    memset(out, 0, sizeof *out);
    if (target && !*target) return jn_error(JN_ERR_VALUE, "jn_db_bundle_get: empty target");
    if (!has_bundles(db)) goto absent;
    sqlite3_stmt *st = NULL;
    int rc = sqlite3_prepare_v2(db->h,
                                target ? "SELECT " BUNDLE_COLS ", data FROM bundles WHERE target = ?1 "
                                         "ORDER BY id DESC LIMIT 1"
                                       : "SELECT " BUNDLE_COLS ", data FROM bundles WHERE id = ?2",
                                -1, &st, NULL);
    if (rc != SQLITE_OK) return db_fail(db, rc, "reading a bundle");
    if (target) bind_text(st, 1, target);
    else sqlite3_bind_int64(st, 2, id);
    rc = db_step(db, st);
    jn_status s = JN_OK;
    if (rc == SQLITE_ROW) {
        if (!(s = bundle_row(db, st, out)) && (s = bundle_data(db, st, out))) jn_db_bundle_free(out);
        sqlite3_finalize(st);
        return s;
    }
    s = rc == SQLITE_DONE ? JN_OK : db_fail(db, rc, "reading a bundle");
    sqlite3_finalize(st);
    if (s) return s;
absent:
    if (target)
        return jn_error(JN_ERR_VALUE, "trace store %s has no bundle for target %s; run `janus optimize %s`",
                        db->path, target, db->path);
    return jn_error(JN_ERR_VALUE, "trace store %s has no bundle %" PRId64 " (`janus inspect %s` lists them)",
                    db->path, id, db->path);
}

jn_status jn_db_bundle_get(jn_db *db, const char *target, jn_db_bundle *out) {
    return bundle_get(db, target ? target : "", 0, out); /* "" is refused */
}

jn_status jn_db_bundle_get_id(jn_db *db, int64_t id, jn_db_bundle *out) { return bundle_get(db, NULL, id, out); }

jn_status jn_db_bundle_list(jn_db *db, jn_db_bundle **out, int *n) {
    if (!db || !out || !n) return jn_error(JN_ERR_VALUE, "jn_db_bundle_list: NULL argument");
    *out = NULL;
    *n = 0;
    if (!has_bundles(db)) return JN_OK;
    sqlite3_stmt *st = NULL;
    int rc = sqlite3_prepare_v2(db->h, "SELECT " BUNDLE_COLS " FROM bundles ORDER BY id", -1, &st, NULL);
    if (rc != SQLITE_OK) return db_fail(db, rc, "listing the bundles");
    jn_db_bundle *list = NULL;
    int len = 0, cap = 0;
    jn_status s = JN_OK;
    while ((rc = db_step(db, st)) == SQLITE_ROW) {
        if (len == cap) {
            int nc = cap ? 2 * cap : 4;
            jn_db_bundle *p = realloc(list, (size_t)nc * sizeof *p);
            if (!p) {
                s = jn_error(JN_ERR_NOMEM, "out of memory listing the bundles of trace store %s", db->path);
                break;
            }
            list = p;
            cap = nc;
        }
        if ((s = bundle_row(db, st, &list[len]))) break;
        len++;
    }
    if (!s && rc != SQLITE_DONE) s = db_fail(db, rc, "listing the bundles");
    sqlite3_finalize(st);
    if (s) {
        jn_db_bundle_list_free(list, len);
        return s;
    }
    *out = list;
    *n = len;
    return JN_OK;
}

jn_status jn_db_run_ids(jn_db *db, int64_t **ids, int *n) {
    if (!db || !ids || !n) return jn_error(JN_ERR_VALUE, "jn_db_run_ids: NULL argument");
    *ids = NULL;
    *n = 0;
    sqlite3_stmt *st = NULL;
    /* replays record no steps of their own: they are no source runs */
    int rc = sqlite3_prepare_v2(db->h, db->version >= 3 ? "SELECT id FROM runs WHERE kind = 'record' ORDER BY id"
                                                        : "SELECT id FROM runs ORDER BY id", -1, &st, NULL);
    if (rc != SQLITE_OK) return db_fail(db, rc, "listing the runs");
    int64_t *v = NULL;
    int len = 0, cap = 0;
    while ((rc = db_step(db, st)) == SQLITE_ROW) {
        if (len == cap) {
            int nc = cap ? 2 * cap : 16;
            int64_t *p = realloc(v, (size_t)nc * sizeof *p);
            if (!p) {
                free(v);
                sqlite3_finalize(st);
                return jn_error(JN_ERR_NOMEM, "out of memory listing the runs of trace store %s", db->path);
            }
            v = p;
            cap = nc;
        }
        v[len++] = sqlite3_column_int64(st, 0);
    }
    jn_status s = rc == SQLITE_DONE ? JN_OK : db_fail(db, rc, "listing the runs");
    sqlite3_finalize(st);
    if (s) {
        free(v);
        return s;
    }
    *ids = v;
    *n = len;
    return JN_OK;
}

/* ------------------------------------------------------- replay counters */
jn_status jn_db_replay_put(jn_db *db, int64_t run_id, const jn_db_replay_graph *g, int ng,
                           const jn_db_replay_miss *m, int nm, const jn_db_replay_extrap *x, int nx) {
    jn_status s;
    if ((s = need_write(db, "jn_db_replay_put"))) return s;
    if (ng < 0 || nm < 0 || nx < 0 || (ng && !g) || (nm && !m) || (nx && !x))
        return jn_error(JN_ERR_VALUE, "jn_db_replay_put: bad counter arrays (%d graphs, %d misses, %d "
                        "extrapolations)", ng, nm, nx);
    for (int i = 0; i < ng; i++)
        if (!g[i].graph || g[i].hits < 0 || g[i].misses < 0 || !(g[i].seconds >= 0) || g[i].extrapolated < 0 ||
            g[i].extrapolated > g[i].hits)
            return jn_error(JN_ERR_VALUE, "jn_db_replay_put: graph row %d (%s) needs a name, counts and seconds "
                            ">= 0, and no more extrapolated hits than hits", i, g[i].graph ? g[i].graph : "no name");
    for (int i = 0; i < nm; i++)
        if (!m[i].graph || !m[i].reason || m[i].count < 0)
            return jn_error(JN_ERR_VALUE, "jn_db_replay_put: miss row %d (graph %s) needs a graph, a reason and a "
                            "count >= 0", i, m[i].graph ? m[i].graph : "none");
    for (int i = 0; i < nx; i++)
        if (!x[i].graph || !x[i].reason || x[i].count < 0 || !(x[i].lo <= x[i].hi) || !(x[i].seen_min <= x[i].seen_max))
            return jn_error(JN_ERR_VALUE, "jn_db_replay_put: extrapolation row %d (graph %s) needs a graph, a reason, "
                            "a count >= 0 and ranges lo <= hi", i, x[i].graph ? x[i].graph : "none");
    sqlite3_stmt *run = NULL, *gr = NULL, *mi = NULL, *xi = NULL;
    const char *what = "starting the replay-counter transaction";
    int rc = db_exec(db, "BEGIN IMMEDIATE");
    if (rc != SQLITE_OK) goto fail;
    what = "preparing the replay-counter statements";
    if ((rc = sqlite3_prepare_v2(db->h, "SELECT 1 FROM runs WHERE id = ?1", -1, &run, NULL)) != SQLITE_OK ||
        (rc = sqlite3_prepare_v2(db->h,
                                 "INSERT INTO replay_graphs(run_id, graph, hits, misses, seconds, extrapolated) "
                                 "VALUES(?1, ?2, ?3, ?4, ?5, ?6) ON CONFLICT(run_id, graph) DO UPDATE SET "
                                 "hits = hits + excluded.hits, misses = misses + excluded.misses, "
                                 "seconds = seconds + excluded.seconds, "
                                 "extrapolated = extrapolated + excluded.extrapolated",
                                 -1, &gr, NULL)) != SQLITE_OK ||
        (rc = sqlite3_prepare_v2(db->h,
                                 "INSERT INTO replay_misses(run_id, graph, guard, reason, site, seen, count, seen_min, "
                                 "seen_max) VALUES(?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)",
                                 -1, &mi, NULL)) != SQLITE_OK ||
        (rc = sqlite3_prepare_v2(db->h,
                                 "INSERT INTO replay_extrap(run_id, graph, guard, reason, site, lo, hi, seen_min, "
                                 "seen_max, count) VALUES(?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10)",
                                 -1, &xi, NULL)) != SQLITE_OK)
        goto fail;
    what = "looking up the run";
    sqlite3_bind_int64(run, 1, run_id);
    rc = db_step(db, run);
    if (rc == SQLITE_DONE) {
        rollback(db);
        sqlite3_finalize(run);
        sqlite3_finalize(gr);
        sqlite3_finalize(mi);
        sqlite3_finalize(xi);
        return jn_error(JN_ERR_VALUE, "trace store %s has no run %" PRId64 " to store replay counters for "
                        "(start replays with `janus replay`)", db->path, run_id);
    }
    if (rc != SQLITE_ROW) goto fail;
    what = "storing a graph's counters";
    for (int i = 0; i < ng; i++) {
        sqlite3_bind_int64(gr, 1, run_id);
        bind_text(gr, 2, g[i].graph);
        sqlite3_bind_int64(gr, 3, g[i].hits);
        sqlite3_bind_int64(gr, 4, g[i].misses);
        sqlite3_bind_double(gr, 5, g[i].seconds);
        sqlite3_bind_int64(gr, 6, g[i].extrapolated);
        if ((rc = run_stmt(db, gr)) != SQLITE_OK) goto fail;
    }
    what = "storing a miss";
    for (int i = 0; i < nm; i++) {
        sqlite3_bind_int64(mi, 1, run_id);
        bind_text(mi, 2, m[i].graph);
        sqlite3_bind_int(mi, 3, m[i].guard);
        bind_text(mi, 4, m[i].reason);
        bind_text(mi, 5, m[i].site ? m[i].site : "");
        if (!isnan(m[i].seen)) sqlite3_bind_double(mi, 6, m[i].seen);
        else sqlite3_bind_null(mi, 6); /* NaN: no value */
        sqlite3_bind_int64(mi, 7, m[i].count);
        int range = m[i].has_range && !isnan(m[i].seen_min) && !isnan(m[i].seen_max);
        if (range) sqlite3_bind_double(mi, 8, m[i].seen_min), sqlite3_bind_double(mi, 9, m[i].seen_max);
        else sqlite3_bind_null(mi, 8), sqlite3_bind_null(mi, 9);
        if ((rc = run_stmt(db, mi)) != SQLITE_OK) goto fail;
    }
    what = "storing an extrapolation";
    for (int i = 0; i < nx; i++) {
        sqlite3_bind_int64(xi, 1, run_id);
        bind_text(xi, 2, x[i].graph);
        sqlite3_bind_int(xi, 3, x[i].guard);
        bind_text(xi, 4, x[i].reason);
        bind_text(xi, 5, x[i].site ? x[i].site : "");
        sqlite3_bind_double(xi, 6, x[i].lo);
        sqlite3_bind_double(xi, 7, x[i].hi);
        sqlite3_bind_double(xi, 8, x[i].seen_min);
        sqlite3_bind_double(xi, 9, x[i].seen_max);
        sqlite3_bind_int64(xi, 10, x[i].count);
        if ((rc = run_stmt(db, xi)) != SQLITE_OK) goto fail;
    }
    what = "committing the replay counters";
    if ((rc = db_exec(db, "COMMIT")) != SQLITE_OK) goto fail;
    sqlite3_finalize(run);
    sqlite3_finalize(gr);
    sqlite3_finalize(mi);
    sqlite3_finalize(xi);
    return JN_OK;
fail:;
    char buf[160];
    snprintf(buf, sizeof buf, "storing the replay counters of run %" PRId64 " (%s)", run_id, what);
    s = db_fail(db, rc, buf);
    rollback(db);
    sqlite3_finalize(run);
    sqlite3_finalize(gr);
    sqlite3_finalize(mi);
    sqlite3_finalize(xi);
    return s;
}

/* ------------------------------------------------- usage, steps, segments */
jn_status jn_db_run_set_usage(jn_db *db, int64_t run_id, double cpu_seconds, int64_t peak_rss) {
    jn_status s;
    if ((s = need_write(db, "jn_db_run_set_usage"))) return s;
    if (!(cpu_seconds >= 0) || peak_rss < 0)
        return jn_error(JN_ERR_VALUE, "jn_db_run_set_usage: CPU seconds and peak bytes must be >= 0");
    sqlite3_stmt *st = NULL;
    int rc = db_prepare(db, "UPDATE runs SET cpu_seconds = ?1, peak_rss = ?2 WHERE id = ?3", &st);
    if (rc == SQLITE_OK) {
        sqlite3_bind_double(st, 1, cpu_seconds);
        if (peak_rss > 0) sqlite3_bind_int64(st, 2, peak_rss);
        else sqlite3_bind_null(st, 2);
        sqlite3_bind_int64(st, 3, run_id);
        rc = run_stmt(db, st);
    }
    sqlite3_finalize(st);
    if (rc != SQLITE_OK) return db_fail(db, rc, "storing a run's CPU time and memory");
    if (sqlite3_changes(db->h) == 0)
        return jn_error(JN_ERR_VALUE, "trace store %s has no run %" PRId64, db->path, run_id);
    return JN_OK;
}

/* One transaction of n rows through the statement sql (bind(st, i) binds
 * row i's ?2..); ?1 is the run.  The run must exist. */
static jn_status put_rows(jn_db *db, int64_t run_id, const char *sql, int n, const void *rows,
                          void (*bind)(sqlite3_stmt *, const void *, int), const char *what) {
    sqlite3_stmt *run = NULL, *ins = NULL;
    const char *doing = "starting the transaction";
    int rc = db_exec(db, "BEGIN IMMEDIATE");
    if (rc != SQLITE_OK) goto fail;
    doing = "preparing the statements";
    if ((rc = db_prepare(db, "SELECT 1 FROM runs WHERE id = ?1", &run)) != SQLITE_OK ||
        (rc = db_prepare(db, sql, &ins)) != SQLITE_OK)
        goto fail;
    doing = "looking up the run";
    sqlite3_bind_int64(run, 1, run_id);
    rc = db_step(db, run);
    if (rc == SQLITE_DONE) {
        rollback(db);
        sqlite3_finalize(run);
        sqlite3_finalize(ins);
        return jn_error(JN_ERR_VALUE, "trace store %s has no run %" PRId64 " to store %s for", db->path, run_id, what);
    }
    if (rc != SQLITE_ROW) goto fail;
    doing = "storing a row";
    for (int i = 0; i < n; i++) {
        sqlite3_bind_int64(ins, 1, run_id);
        bind(ins, rows, i);
        if ((rc = run_stmt(db, ins)) != SQLITE_OK) goto fail;
    }
    doing = "committing";
    if ((rc = db_exec(db, "COMMIT")) != SQLITE_OK) goto fail;
    sqlite3_finalize(run);
    sqlite3_finalize(ins);
    return JN_OK;
fail:;
    char buf[200];
    snprintf(buf, sizeof buf, "storing the %s of run %" PRId64 " (%s)", what, run_id, doing);
    jn_status s = db_fail(db, rc, buf);
    rollback(db);
    sqlite3_finalize(run);
    sqlite3_finalize(ins);
    return s;
}

static void bind_step(sqlite3_stmt *st, const void *rows, int i) {
    const jn_db_run_step *r = (const jn_db_run_step *)rows + i;
    sqlite3_bind_int64(st, 2, r->step);
    bind_text(st, 3, r->kind && *r->kind ? r->kind : "step");
    sqlite3_bind_double(st, 4, r->started);
    sqlite3_bind_double(st, 5, r->duration);
    sqlite3_bind_int64(st, 6, r->segments);
    sqlite3_bind_int64(st, 7, r->hits);
    if (r->graph_ops >= 0) sqlite3_bind_int64(st, 8, r->graph_ops);
    else sqlite3_bind_null(st, 8);
    if (r->eager_ops >= 0) sqlite3_bind_int64(st, 9, r->eager_ops);
    else sqlite3_bind_null(st, 9);
    sqlite3_bind_double(st, 10, r->graph_seconds);
}

jn_status jn_db_run_steps_put(jn_db *db, int64_t run_id, const jn_db_run_step *rows, int n) {
    jn_status s;
    if ((s = need_write(db, "jn_db_run_steps_put"))) return s;
    if (n < 0 || n > JN_DB_STEPS_MAX || (n && !rows))
        return jn_error(JN_ERR_VALUE, "jn_db_run_steps_put: %d rows (0..%d)", n, JN_DB_STEPS_MAX);
    for (int i = 0; i < n; i++)
        if (!(rows[i].duration >= 0) || !isfinite(rows[i].started) || rows[i].segments < 0 || rows[i].hits < 0 ||
            !(rows[i].graph_seconds >= 0) ||
            (rows[i].kind && *rows[i].kind && strcmp(rows[i].kind, "step") && strcmp(rows[i].kind, "tail")))
            return jn_error(JN_ERR_VALUE, "jn_db_run_steps_put: step row %d (step %" PRId64 ") needs a kind step or "
                            "tail, a start time, and durations and counts >= 0", i, rows[i].step);
    return put_rows(db, run_id,
                    "INSERT OR REPLACE INTO run_steps(run_id, step, kind, started, duration, segments, hits, "
                    "graph_ops, eager_ops, graph_seconds) VALUES(?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10)",
                    n, rows, bind_step, "step times");
}

static void bind_segment(sqlite3_stmt *st, const void *rows, int i) {
    const jn_db_segment *r = (const jn_db_segment *)rows + i;
    sqlite3_bind_int64(st, 2, r->seq);
    sqlite3_bind_int64(st, 3, r->step);
    sqlite3_bind_double(st, 4, r->started);
    sqlite3_bind_double(st, 5, r->duration);
    bind_text(st, 6, r->graph ? r->graph : "");
    sqlite3_bind_int(st, 7, r->hit != 0);
    sqlite3_bind_int(st, 8, r->guard);
    sqlite3_bind_int64(st, 9, r->ops);
}

static void bind_graph_times(sqlite3_stmt *st, const void *rows, int i) {
    const jn_db_graph_times *r = (const jn_db_graph_times *)rows + i;
    bind_text(st, 2, r->graph);
    sqlite3_bind_int64(st, 3, r->ops);
    sqlite3_bind_double(st, 4, r->wall);
    sqlite3_bind_int64(st, 5, r->eager_segments);
    sqlite3_bind_double(st, 6, r->eager_wall);
    sqlite3_bind_int64(st, 7, r->eager_ops);
}

jn_status jn_db_graph_times_put(jn_db *db, int64_t run_id, const jn_db_graph_times *rows, int n) {
    jn_status s;
    if ((s = need_write(db, "jn_db_graph_times_put"))) return s;
    if (n < 0 || (n && !rows)) return jn_error(JN_ERR_VALUE, "jn_db_graph_times_put: bad row array (%d rows)", n);
    for (int i = 0; i < n; i++)
        if (!rows[i].graph || rows[i].ops < 0 || !(rows[i].wall >= 0) || rows[i].eager_segments < 0 ||
            !(rows[i].eager_wall >= 0) || rows[i].eager_ops < 0)
            return jn_error(JN_ERR_VALUE, "jn_db_graph_times_put: row %d (%s) needs a graph name, and counts and "
                            "seconds >= 0", i, rows[i].graph ? rows[i].graph : "no name");
    return put_rows(db, run_id,
                    "INSERT INTO replay_graph_times(run_id, graph, ops, wall, eager_segments, eager_wall, eager_ops) "
                    "VALUES(?1, ?2, ?3, ?4, ?5, ?6, ?7) ON CONFLICT(run_id, graph) DO UPDATE SET "
                    "ops = ops + excluded.ops, wall = wall + excluded.wall, "
                    "eager_segments = eager_segments + excluded.eager_segments, "
                    "eager_wall = eager_wall + excluded.eager_wall, eager_ops = eager_ops + excluded.eager_ops",
                    n, rows, bind_graph_times, "graph times");
}

jn_status jn_db_bundle_notes_put(jn_db *db, int64_t bundle_id, const char *kind, const char *const *texts, int n) {
    jn_status s;
    if ((s = need_write(db, "jn_db_bundle_notes_put"))) return s;
    if (!kind || !*kind || n < 0 || (n && !texts))
        return jn_error(JN_ERR_VALUE, "jn_db_bundle_notes_put: needs a kind and %d lines", n);
    for (int i = 0; i < n; i++)
        if (!texts[i]) return jn_error(JN_ERR_VALUE, "jn_db_bundle_notes_put: line %d is NULL", i);
    sqlite3_stmt *ins = NULL;
    int rc = db_exec(db, "BEGIN IMMEDIATE");
    if (rc == SQLITE_OK)
        rc = db_prepare(db, "INSERT INTO bundle_notes(bundle_id, seq, kind, text) SELECT ?1, "
                            "coalesce(max(seq), -1) + 1, ?2, ?3 FROM bundle_notes WHERE bundle_id = ?1", &ins);
    for (int i = 0; i < n && rc == SQLITE_OK; i++) {
        sqlite3_bind_int64(ins, 1, bundle_id);
        bind_text(ins, 2, kind);
        bind_text(ins, 3, texts[i]);
        rc = run_stmt(db, ins);
    }
    if (rc == SQLITE_OK) rc = db_exec(db, "COMMIT");
    sqlite3_finalize(ins);
    if (rc != SQLITE_OK) {
        s = db_fail(db, rc, "storing the notes of a bundle");
        rollback(db);
        return s;
    }
    return JN_OK;
}

jn_status jn_db_segments_put(jn_db *db, int64_t run_id, const jn_db_segment *rows, int n) {
    jn_status s;
    if ((s = need_write(db, "jn_db_segments_put"))) return s;
    if (n < 0 || n > JN_DB_SEGMENTS_MAX || (n && !rows))
        return jn_error(JN_ERR_VALUE, "jn_db_segments_put: %d rows (0..%d)", n, JN_DB_SEGMENTS_MAX);
    for (int i = 0; i < n; i++)
        if (!(rows[i].duration >= 0) || !isfinite(rows[i].started) || rows[i].ops < 0)
            return jn_error(JN_ERR_VALUE, "jn_db_segments_put: segment row %d (seq %" PRId64 ") needs a start time, "
                            "a duration >= 0 and ops >= 0", i, rows[i].seq);
    return put_rows(db, run_id,
                    "INSERT OR REPLACE INTO replay_segments(run_id, seq, step, started, duration, graph, hit, guard, "
                    "ops) VALUES(?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)",
                    n, rows, bind_segment, "segments");
}

void jn_db_replay_free(jn_db_replay_graph *g, int ng, jn_db_replay_miss *m, int nm) {
    for (int i = 0; g && i < ng; i++) free((void *)g[i].graph);
    for (int i = 0; m && i < nm; i++) {
        free((void *)m[i].graph);
        free((void *)m[i].reason);
        free((void *)m[i].site);
    }
    free(g);
    free(m);
}

/* Grow *arr (elements of size sz) to hold one more than len. */
int db_grow(void **arr, int len, int *cap, size_t sz) {
    if (len < *cap) return 0;
    int nc = *cap ? 2 * *cap : 8;
    void *p = realloc(*arr, (size_t)nc * sz);
    if (!p) return -1;
    *arr = p;
    *cap = nc;
    return 0;
}

jn_status jn_db_replay_get(jn_db *db, int64_t run_id, jn_db_replay_graph **g, int *ng, jn_db_replay_miss **m,
                           int *nm) {
    if (!db || !g || !ng || !m || !nm) return jn_error(JN_ERR_VALUE, "jn_db_replay_get: NULL argument");
    *g = NULL;
    *m = NULL;
    *ng = *nm = 0;
    if (db->version < 3) return JN_OK;
    sqlite3_stmt *st = NULL;
    jn_db_replay_graph *ga = NULL;
    jn_db_replay_miss *ma = NULL;
    int gl = 0, gc = 0, ml = 0, mc = 0, nomem = 0;
    int v6 = db->version >= 6; /* the ranges of the values seen came with v6 */
    int rc = sqlite3_prepare_v2(db->h,
                                db->version >= 8 ? "SELECT graph, hits, misses, seconds, extrapolated "
                                                   "FROM replay_graphs WHERE run_id = ?1 "
                                                   "ORDER BY hits + misses DESC, graph"
                                                 : "SELECT graph, hits, misses, seconds, 0 FROM replay_graphs "
                                                   "WHERE run_id = ?1 ORDER BY hits + misses DESC, graph",
                                -1, &st, NULL);
    if (rc != SQLITE_OK) goto fail;
    sqlite3_bind_int64(st, 1, run_id);
    while ((rc = db_step(db, st)) == SQLITE_ROW) {
        if (db_grow((void **)&ga, gl, &gc, sizeof *ga)) goto oom;
        jn_db_replay_graph *r = &ga[gl++];
        r->graph = db_col_dup(st, 0);
        r->hits = sqlite3_column_int64(st, 1);
        r->misses = sqlite3_column_int64(st, 2);
        r->seconds = sqlite3_column_double(st, 3);
        r->extrapolated = sqlite3_column_int64(st, 4);
        if (!r->graph) goto oom;
    }
    if (rc != SQLITE_DONE) goto fail;
    sqlite3_finalize(st);
    rc = sqlite3_prepare_v2(db->h,
                            v6 ? "SELECT graph, guard, reason, site, seen, sum(count) AS n, min(coalesce(seen_min, seen)), "
                                 "max(coalesce(seen_max, seen)), count(seen_min) FROM replay_misses "
                                 "WHERE run_id = ?1 GROUP BY graph, guard, reason, site, seen "
                                 "ORDER BY n DESC, graph, guard, rowid"
                               : "SELECT graph, guard, reason, site, seen, sum(count) AS n, NULL, NULL, 0 "
                                 "FROM replay_misses WHERE run_id = ?1 GROUP BY graph, guard, reason, site, seen "
                                 "ORDER BY n DESC, graph, guard, rowid",
                            -1, &st, NULL);
    if (rc != SQLITE_OK) goto fail;
    sqlite3_bind_int64(st, 1, run_id);
    while ((rc = db_step(db, st)) == SQLITE_ROW) {
        if (db_grow((void **)&ma, ml, &mc, sizeof *ma)) goto oom;
        jn_db_replay_miss *r = &ma[ml++];
        r->graph = db_col_dup(st, 0);
        r->guard = sqlite3_column_int(st, 1);
        r->reason = db_col_dup(st, 2);
        r->site = db_col_dup(st, 3);
        r->seen = sqlite3_column_type(st, 4) == SQLITE_NULL ? (double)NAN : sqlite3_column_double(st, 4);
        r->count = sqlite3_column_int64(st, 5);
        r->has_range = sqlite3_column_int64(st, 8) > 0;
        r->seen_min = r->has_range ? sqlite3_column_double(st, 6) : (double)NAN;
        r->seen_max = r->has_range ? sqlite3_column_double(st, 7) : (double)NAN;
        if (!r->graph || !r->reason || !r->site) goto oom;
    }
    if (rc != SQLITE_DONE) goto fail;
    sqlite3_finalize(st);
    *g = ga;
    *ng = gl;
    *m = ma;
    *nm = ml;
    return JN_OK;
oom:
    nomem = 1;
fail:;
    jn_status s = nomem ? jn_error(JN_ERR_NOMEM, "out of memory reading the replay counters of run %" PRId64
                                                 " of trace store %s", run_id, db->path)
                        : db_fail(db, rc, "reading the replay counters");
    sqlite3_finalize(st);
    jn_db_replay_free(ga, gl, ma, ml);
    return s;
}

void jn_db_replay_extrap_free(jn_db_replay_extrap *x, int nx) {
    for (int i = 0; x && i < nx; i++) {
        free((void *)x[i].graph);
        free((void *)x[i].reason);
        free((void *)x[i].site);
    }
    free(x);
}

jn_status jn_db_replay_extraps(jn_db *db, int64_t run_id, jn_db_replay_extrap **x, int *nx) {
    if (!db || !x || !nx) return jn_error(JN_ERR_VALUE, "jn_db_replay_extraps: NULL argument");
    *x = NULL;
    *nx = 0;
    if (db->version < 8) return JN_OK;
    sqlite3_stmt *st = NULL;
    jn_db_replay_extrap *xa = NULL;
    int xl = 0, xc = 0, nomem = 0;
    int rc = sqlite3_prepare_v2(db->h, "SELECT graph, guard, reason, site, lo, hi, min(seen_min), max(seen_max), "
                                       "sum(count) AS n FROM replay_extrap WHERE run_id = ?1 "
                                       "GROUP BY graph, guard, reason, site, lo, hi ORDER BY n DESC, graph, guard",
                                -1, &st, NULL);
    if (rc != SQLITE_OK) goto fail;
    sqlite3_bind_int64(st, 1, run_id);
    while ((rc = db_step(db, st)) == SQLITE_ROW) {
        if (db_grow((void **)&xa, xl, &xc, sizeof *xa)) goto oom;
        jn_db_replay_extrap *r = &xa[xl++];
        r->graph = db_col_dup(st, 0);
        r->guard = sqlite3_column_int(st, 1);
        r->reason = db_col_dup(st, 2);
        r->site = db_col_dup(st, 3);
        r->lo = sqlite3_column_double(st, 4);
        r->hi = sqlite3_column_double(st, 5);
        r->seen_min = sqlite3_column_double(st, 6);
        r->seen_max = sqlite3_column_double(st, 7);
        r->count = sqlite3_column_int64(st, 8);
        if (!r->graph || !r->reason || !r->site) goto oom;
    }
    if (rc != SQLITE_DONE) goto fail;
    sqlite3_finalize(st);
    *x = xa;
    *nx = xl;
    return JN_OK;
oom:
    nomem = 1;
fail:;
    jn_status s = nomem ? jn_error(JN_ERR_NOMEM, "out of memory reading the extrapolations of run %" PRId64
                                                 " of trace store %s", run_id, db->path)
                        : db_fail(db, rc, "reading the replay extrapolations");
    sqlite3_finalize(st);
    jn_db_replay_extrap_free(xa, xl);
    return s;
}

/* ------------------------------------------------ cuDNN algorithm choices */
jn_status jn_db_algos_put(jn_db *db, const char *device, const jn_db_algo *rows, int n) {
    jn_status s;
    if ((s = need_write(db, "jn_db_algos_put"))) return s;
    if (!device || !*device || n < 0 || (n && !rows))
        return jn_error(JN_ERR_VALUE, "jn_db_algos_put: needs a device string and a row array (got %d rows)", n);
    for (int i = 0; i < n; i++)
        if (!rows[i].key || !*rows[i].key || rows[i].algo < 0 || rows[i].workspace < 0 || !(rows[i].seconds >= 0))
            return jn_error(JN_ERR_VALUE, "jn_db_algos_put: row %d (key %s) needs a key, an algorithm >= 0, a "
                            "workspace >= 0 and seconds >= 0", i, rows[i].key ? rows[i].key : "none");
    sqlite3_stmt *ins = NULL;
    const char *what = "starting the algorithm transaction";
    int rc = db_exec(db, "BEGIN IMMEDIATE");
    if (rc != SQLITE_OK) goto fail;
    what = "preparing the algorithm statement";
    if ((rc = sqlite3_prepare_v2(db->h,
                                 "INSERT INTO algos(device, key, algo, workspace, seconds) VALUES(?1, ?2, ?3, ?4, ?5) "
                                 "ON CONFLICT(device, key) DO UPDATE SET algo = excluded.algo, "
                                 "workspace = excluded.workspace, seconds = excluded.seconds",
                                 -1, &ins, NULL)) != SQLITE_OK)
        goto fail;
    what = "storing an algorithm";
    for (int i = 0; i < n; i++) {
        bind_text(ins, 1, device);
        bind_text(ins, 2, rows[i].key);
        sqlite3_bind_int64(ins, 3, rows[i].algo);
        sqlite3_bind_int64(ins, 4, rows[i].workspace);
        sqlite3_bind_double(ins, 5, rows[i].seconds);
        if ((rc = run_stmt(db, ins)) != SQLITE_OK) goto fail;
    }
    what = "committing the algorithms";
    if ((rc = db_exec(db, "COMMIT")) != SQLITE_OK) goto fail;
    sqlite3_finalize(ins);
    return JN_OK;
fail:;
    char buf[400];
    snprintf(buf, sizeof buf, "storing the cuDNN algorithms of device '%.200s' (%s)", device, what);
    s = db_fail(db, rc, buf);
    rollback(db);
    sqlite3_finalize(ins);
    return s;
}

void jn_db_algos_free(jn_db_algo *rows, int n) {
    for (int i = 0; rows && i < n; i++) free((void *)rows[i].key);
    free(rows);
}

jn_status jn_db_algos_get(jn_db *db, const char *device, jn_db_algo **rows, int *n) {
    if (!db || !device || !rows || !n) return jn_error(JN_ERR_VALUE, "jn_db_algos_get: NULL argument");
    *rows = NULL;
    *n = 0;
    if (db->version < 5) return JN_OK;
    sqlite3_stmt *st = NULL;
    jn_db_algo *a = NULL;
    int len = 0, cap = 0, nomem = 0;
    int rc = sqlite3_prepare_v2(db->h, "SELECT key, algo, workspace, seconds FROM algos WHERE device = ?1 "
                                       "ORDER BY key", -1, &st, NULL);
    if (rc != SQLITE_OK) goto fail;
    bind_text(st, 1, device);
    while ((rc = db_step(db, st)) == SQLITE_ROW) {
        if (db_grow((void **)&a, len, &cap, sizeof *a)) goto oom;
        jn_db_algo *r = &a[len++];
        r->key = db_col_dup(st, 0);
        r->algo = sqlite3_column_int64(st, 1);
        r->workspace = sqlite3_column_int64(st, 2);
        r->seconds = sqlite3_column_double(st, 3);
        if (!r->key) goto oom;
    }
    if (rc != SQLITE_DONE) goto fail;
    sqlite3_finalize(st);
    *rows = a;
    *n = len;
    return JN_OK;
oom:
    nomem = 1;
fail:;
    char buf[400];
    snprintf(buf, sizeof buf, "reading the cuDNN algorithms of device '%.200s'", device);
    jn_status s = nomem ? jn_error(JN_ERR_NOMEM, "out of memory %s from trace store %s", buf, db->path)
                        : db_fail(db, rc, buf);
    sqlite3_finalize(st);
    jn_db_algos_free(a, len);
    return s;
}
