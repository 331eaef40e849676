/* MiniDebugInfo for the importer's symbols (import_symbols.c): the .gnu_debugdata section that
 * Fedora, RHEL and their kin put in their stripped files, an xz-compressed ELF file whose
 * .symtab holds the local functions that .dynsym lacks ("MiniDebugInfo" in gdb's manual).
 * Decompressed with liblzma, loaded at run time (docs/cpu.md "Symbols"). */
#ifndef LANTERN_DB_IMPORT_MINIDEBUG_H
#define LANTERN_DB_IMPORT_MINIDEBUG_H

#include "db/import_debug_file.h"

/* Decompresses file's .gnu_debugdata into *mini (an image in memory, closed with
 * elf_image_close): a 64-bit ELF file for file's machine with a .symtab, whose symbols have
 * file's addresses. 0, or -1 (no such section, no liblzma, damaged or foreign contents: *mini
 * left empty). */
int minidebug_open(const struct elf_image *file, struct elf_image *mini);

#endif
