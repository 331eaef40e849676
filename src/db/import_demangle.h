/* Demangled names (import_demangle.c): kernel names for the CUDA importer's end-of-session
 * work, and one name at a time for the CPU samples' frames (import_cpu.c). */
#ifndef LANTERN_DB_IMPORT_DEMANGLE_H
#define LANTERN_DB_IMPORT_DEMANGLE_H

#include <sqlite3.h>

/* The demangled name of every mangled kernel name of a kernel not yet demangled, each distinct
 * name once: a string each, paired with its mangled name in temp.demangled(name_id,
 * demangled_id), which cuda_finish.sql's one pass over kernels reads and drops (empty when no
 * C++ runtime is there to demangle). Returns 0 or -EIO on an SQL error. */
int import_demangle_kernel_names(sqlite3 *db);

/* The demangled form of a C++ name ("_Z..."), allocated (the caller frees it); NULL when it is
 * not a mangled name or no C++ runtime is there to demangle it. */
char *import_demangle(const char *name);

#endif
