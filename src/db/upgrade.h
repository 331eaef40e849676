/* Databases written by an older Lantern (schema versions 1 to IMPORT_SCHEMA_VERSION - 1)
 * brought to this schema, so that every database any Lantern wrote opens (docs/schema.md,
 * "Compatibility"): `lantern upgrade FILE` in place, and every command reading one through an
 * upgraded copy (src/cli/cli.c). */
#ifndef LANTERN_DB_UPGRADE_H
#define LANTERN_DB_UPGRADE_H

#include <stddef.h>

/* The oldest schema version this Lantern upgrades. */
#define UPGRADE_OLDEST_SCHEMA 1

/* Writes the database at old_path, of schema version from (UPGRADE_OLDEST_SCHEMA ..
 * IMPORT_SCHEMA_VERSION - 1), into new_path (an empty or new file) at this schema: every row of
 * every table the two schemas share, in the columns they share; the columns and tables added
 * since get what an import by this Lantern would have given where it can be worked out from
 * the rows (processes' names and parents), else their defaults (NULL: not known); meta gains
 * upgraded_from. The old file is only read. Returns 0, or a negative errno (-EINVAL: a version
 * that cannot be upgraded; -EIO: SQLite failed) with a one-line reason in err. */
int upgrade_database(const char *old_path, int from, const char *new_path, char *err,
                     size_t err_len);

#endif
