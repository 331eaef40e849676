/* The importer's symbol lookup (import_symbols.c) on one ELF file, for test_cpu_minidebug.py:
 * `symbol_probe FILE ADDRESS...` prints, a line per address (hex, a link-time address), the
 * function the importer names there, or "-". FILE is an absolute path, as the mappings' are (a
 * relative one names nothing). Exit 2 on bad arguments. */
#include "db/import_symbols.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>

int main(int argc, char **argv)
{
    struct symbol_cache *cache = symbol_cache_new();
    if (argc < 2 || !cache) {
        fprintf(stderr, "usage: symbol_probe FILE ADDRESS...\n");
        return 2;
    }
    for (int i = 2; i < argc; i++) {
        uint64_t address = strtoull(argv[i], NULL, 16);
        const char *name = symbol_lookup_address(cache, argv[1], address);
        printf("%s\n", name ? name : "-");
    }
    symbol_cache_free(cache);
    return 0;
}
