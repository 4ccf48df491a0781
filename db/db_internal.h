/* db_internal.h -- what the files of db/ share and nothing else sees: the
 * connection of a store, the two calls every SQLite step and exec goes
 * through (fault injection, jn_db_inject_fault), the error builder, and
 * small helpers for reading rows into arrays.  Only the .c files of db/ include it; the
 * floors check (scripts/check_layers.py) refuses it anywhere else. */
#ifndef JN_DB_INTERNAL_H
#define JN_DB_INTERNAL_H

#include <sqlite3.h>

#include "jn_db.h"

sqlite3 *db_conn(jn_db *db);
/* sqlite3_prepare_v2 on the store's connection. */
int db_prepare(jn_db *db, const char *sql, sqlite3_stmt **st);
/* sqlite3_step, or SQLITE_FULL when an injected fault fires. */
int db_step(jn_db *db, sqlite3_stmt *st);
/* JN_ERR_IO "trace store P: WHAT failed: SQLite's message (hint)". */
jn_status db_fail(jn_db *db, int rc, const char *what);
/* A copy of a text column ("" for NULL); NULL only when out of memory. */
char *db_col_dup(sqlite3_stmt *st, int i);
/* Make room in *arr (elements of sz bytes, *cap of them) for element len;
 * -1 when out of memory (*arr unchanged). */
int db_grow(void **arr, int len, int *cap, size_t sz);
/* Frees the strings of one run row (jn_db_runs_free frees the array too). */
void db_run_row_clear(jn_db_run_row *r);

/* A run's owner (lost runs): this host's name, the kernel's boot id, the
 * start time of process pid (clock ticks since boot; 0 when there is no
 * such process).  The first two return 0, or -1 when unknown. */
int db_hostname(char *out, size_t n);
int db_boot_id(char *out, size_t n);
uint64_t db_proc_start(int64_t pid);

#endif
