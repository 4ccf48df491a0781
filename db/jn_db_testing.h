/* jn_db_testing.h -- for the C tests only: the SQLite connection under a
 * jn_db, so a test can build damaged or old-schema stores and check rows
 * through plain SQL.  Nothing outside tests/ includes this header
 * (scripts/check_layers.py fails the build if something does): the store's
 * SQL stays in db/, behind jn_db.h. */
#ifndef JN_DB_TESTING_H
#define JN_DB_TESTING_H

#include "jn_db.h"

struct sqlite3 *jn_db_testing_handle(jn_db *db);

#endif
