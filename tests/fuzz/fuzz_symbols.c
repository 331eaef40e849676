/* libFuzzer target for the importer's reading of ELF files (import_symbols.c and the files it
 * reads through: import_debug_file.c, import_minidebug.c): each input is one file, written where
 * a mapped library would be, its symbols read as the importer reads them (.symtab, else a
 * debug file, else .dynsym with the MiniDebugInfo section's .symtab, decompressed), and
 * addresses taken from the input looked up. scripts/fuzz.sh seeds it with a program, its debug
 * file and its stripped copy carrying MiniDebugInfo (docs/testing.md). */
#include "db/import_symbols.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static char folder[256], elf_path[300];

static void setup(void)
{
    const char *tmp = access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp"; /* in memory */
    snprintf(folder, sizeof folder, "%s/lantern-fuzz-elf-XXXXXX", tmp);
    if (!mkdtemp(folder))
        abort();
    snprintf(elf_path, sizeof elf_path, "%s/libfuzz.so", folder);
    setenv("LANTERN_DEBUG_DIRS", folder, 1); /* debug files looked for here first */
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (!folder[0])
        setup();
    FILE *f = fopen(elf_path, "wb");
    if (!f || fwrite(data, 1, size, f) != size || fclose(f) != 0)
        abort();
    struct symbol_cache *cache = symbol_cache_new();
    if (!cache)
        abort();
    /* the input's last 8 bytes, and a few fixed places, as addresses and file offsets */
    uint64_t tail = 0;
    if (size >= 8)
        memcpy(&tail, data + size - 8, 8);
    const uint64_t addresses[] = {0, 0x1000, 0x2340, size / 2, tail, UINT64_MAX};
    for (size_t i = 0; i < sizeof addresses / sizeof *addresses; i++) {
        symbol_lookup(cache, elf_path, addresses[i]);
        symbol_lookup_address(cache, elf_path, addresses[i]);
    }
    symbol_cache_free(cache);
    unlink(elf_path);
    return 0;
}
