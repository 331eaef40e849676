/* One value out of a database: the first column of the first row of a query, for the meta
 * rows and counts every stage reads (importer, reports, exports, analyze). Errors read as "none". */
#ifndef LANTERN_COMMON_SQL_QUERY_H
#define LANTERN_COMMON_SQL_QUERY_H

#include <sqlite3.h>
#include <stdint.h>

/* As an integer; def when the query fails, returns no row or NULL. */
int64_t sql_query_int(sqlite3 *db, const char *sql, int64_t def);
/* As a string the caller frees; NULL when the query fails, returns no row or NULL. */
char *sql_query_text(sqlite3 *db, const char *sql);

#endif
