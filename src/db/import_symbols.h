/* Function names of code addresses, from the ELF files a process had mapped: for the CPU
 * samples' frames (import_cpu.c) and the OS runtime calls' backtraces (import_osrt.c). Each
 * file's symbol table (.symtab, else its separate debug file's .symtab, else .dynsym with its
 * MiniDebugInfo's .symtab) is read once per session; the files must still be where the process
 * mapped them (docs/cpu.md). */
#ifndef LANTERN_DB_IMPORT_SYMBOLS_H
#define LANTERN_DB_IMPORT_SYMBOLS_H

#include <stddef.h>
#include <stdint.h>

struct symbol_cache; /* every file read in this session */

struct symbol_cache *symbol_cache_new(void);
void symbol_cache_free(struct symbol_cache *c);

/* The function containing file_offset (an address's offset in the file: address - mapping
 * start + mapping offset) of the ELF file at path, or NULL (no such file, not ELF, no symbol
 * there). The name is owned by the cache. */
const char *symbol_lookup(struct symbol_cache *c, const char *path, uint64_t file_offset);

/* The same by a link-time address (the ELF file's own vaddr: a runtime address less the
 * object's load bias), as the OS runtime backtraces carry them. */
const char *symbol_lookup_address(struct symbol_cache *c, const char *path, uint64_t address);

#endif
