/* Mapped ELF files for the importer's symbols (import_symbols.c) and the separate debug file of
 * a stripped one, found as gdb and perf find it: by build-id under the debug roots, then by its
 * .gnu_debuglink name (CRC32 checked) beside it, in its .debug/ folder and under the roots
 * (docs/cpu.md "Symbols"). Only read, never written. */
#ifndef LANTERN_DB_IMPORT_DEBUG_FILE_H
#define LANTERN_DB_IMPORT_DEBUG_FILE_H

#include <elf.h>
#include <stddef.h>
#include <stdint.h>

/* A 64-bit ELF file mapped read-only (or, decompressed, in memory it owns: import_minidebug.c),
 * its headers checked to lie within it. */
struct elf_image {
    const unsigned char *map;
    size_t len;
    int in_memory; /* map is malloc'ed, not mapped */
    const Elf64_Ehdr *header;
    const Elf64_Shdr *sections;
    size_t section_count;
};

/* Maps the regular file at path: 0, or -1 (no such file, not a 64-bit ELF; im left empty). */
int elf_image_open(struct elf_image *im, const char *path);
void elf_image_close(struct elf_image *im);

/* Takes the malloc'ed buffer (len bytes) as an image: 0, or -1 (not a 64-bit ELF: the buffer
 * freed, im left empty). Closed like a mapped one. */
int elf_image_take_buffer(struct elf_image *im, unsigned char *buffer, size_t len);

/* Whether [off, off + len) lies within the image. */
int elf_image_within(const struct elf_image *im, uint64_t off, uint64_t len);

/* The index of the first section of this type, or 0 (none). */
size_t elf_image_find_section(const struct elf_image *im, uint32_t type);

/* The contents of the section named name (not NOBITS, within the image), or NULL; *size its
 * length. */
const unsigned char *elf_image_named(const struct elf_image *im, const char *name, size_t *size);

/* Maps the debug file of file (mapped from path, which has no symbol table of its own) into
 * *debug: one whose build-id equals file's and that has a .symtab. Roots: the folders of
 * LANTERN_DEBUG_DIRS (colon-separated), then /usr/lib/debug. 0, or -1 (none found). */
int debug_file_open(const struct elf_image *file, const char *path, struct elf_image *debug);

#endif
