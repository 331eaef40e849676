/* Demangled kernel names (import_demangle.c), for the CUDA importer's end-of-session work. */
#ifndef LANTERN_DB_IMPORT_DEMANGLE_H
#define LANTERN_DB_IMPORT_DEMANGLE_H

#include <sqlite3.h>

/* The demangled name of every mangled kernel name of a kernel not yet demangled, each distinct
 * name once: a string each, paired with its mangled name in temp.demangled(name_id,
 * demangled_id), which cuda_finish.sql's one pass over kernels reads and drops (empty when no
 * C++ runtime is there to demangle). Returns 0 or -1 on an SQL error. */
int import_demangle_kernel_names(sqlite3 *db);

#endif
