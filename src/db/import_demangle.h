/* Demangled kernel names (import_demangle.c), for the CUDA importer's end-of-session work. */
#ifndef LANTERN_DB_IMPORT_DEMANGLE_H
#define LANTERN_DB_IMPORT_DEMANGLE_H

#include <sqlite3.h>

/* kernels.demangled_id for every mangled kernel name not yet demangled, each distinct name
 * once. Returns 0 (also when no C++ runtime is there to demangle) or -1 on an SQL error. */
int import_demangle_kernel_names(sqlite3 *db);

#endif
