/* Symbols of the ELF files behind the CPU samples' addresses (import_symbols.h): each file is
 * mapped read-only once, its function symbols (.symtab where the file kept it, else the .symtab
 * of its separate debug file (import_debug_file.c), else .dynsym with its MiniDebugInfo's
 * .symtab (import_minidebug.c)) sorted by address, and a file offset turned into an address
 * through its PT_LOAD segments. Names point into the string tables, which stay mapped (or in
 * memory) until the cache is freed. Not read: DWARF, and JIT maps (docs/cpu.md). */
#include "db/import_symbols.h"

#include "db/import_debug_file.h"
#include "db/import_minidebug.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

struct elf_symbol {
    uint64_t value, size;
    const char *name;
};

struct elf_file {
    char *path;
    struct elf_image image, debug; /* debug: the separate debug file or the MiniDebugInfo
                                    * whose names are used */
    const Elf64_Phdr *segments;
    size_t segment_count;
    struct elf_symbol *symbols;
    size_t symbol_count;
    struct elf_file *next;
};

struct symbol_cache {
    struct elf_file *files;
};

struct symbol_cache *symbol_cache_new(void)
{
    return calloc(1, sizeof(struct symbol_cache));
}

void symbol_cache_free(struct symbol_cache *c)
{
    if (!c)
        return;
    for (struct elf_file *e = c->files, *next; e; e = next) {
        next = e->next;
        elf_image_close(&e->image);
        elf_image_close(&e->debug);
        free(e->symbols);
        free(e->path);
        free(e);
    }
    free(c);
}

static int symbol_order(const void *a, const void *b)
{
    const struct elf_symbol *x = a, *y = b;
    return x->value < y->value ? -1 : x->value > y->value;
}

/* Adds the function symbols of im's first symbol table section of this type (its strings in
 * the linked section) to e's: 0 when it has some. */
static int elf_add_symbols(struct elf_file *e, const struct elf_image *im, uint32_t type)
{
    size_t index = elf_image_find_section(im, type);
    const Elf64_Shdr *sh = &im->sections[index];
    if (!index || sh->sh_link >= im->section_count || sh->sh_entsize != sizeof(Elf64_Sym) ||
        sh->sh_offset % 8 || !elf_image_within(im, sh->sh_offset, sh->sh_size))
        return -ENOEXEC;
    const Elf64_Shdr *strtab = &im->sections[sh->sh_link];
    if (strtab->sh_type == SHT_NOBITS || strtab->sh_size == 0 ||
        !elf_image_within(im, strtab->sh_offset, strtab->sh_size))
        return -ENOEXEC;
    const char *strings = (const char *)im->map + strtab->sh_offset;
    const Elf64_Sym *syms = (const Elf64_Sym *)(im->map + sh->sh_offset);
    size_t n = sh->sh_size / sizeof(Elf64_Sym), before = e->symbol_count;
    struct elf_symbol *grown = realloc(e->symbols, (before + n + 1) * sizeof *e->symbols);
    if (!grown)
        return -ENOMEM;
    e->symbols = grown;
    for (size_t i = 0; i < n; i++) {
        unsigned sym_type = ELF64_ST_TYPE(syms[i].st_info);
        if ((sym_type != STT_FUNC && sym_type != STT_GNU_IFUNC) || syms[i].st_value == 0 ||
            syms[i].st_name >= strtab->sh_size ||
            !memchr(strings + syms[i].st_name, 0, strtab->sh_size - syms[i].st_name))
            continue;
        e->symbols[e->symbol_count++] =
            (struct elf_symbol){syms[i].st_value, syms[i].st_size, strings + syms[i].st_name};
    }
    return e->symbol_count > before ? 0 : -ENOENT;
}

/* The names of a file that kept neither .symtab nor a debug file: .dynsym and, where the file
 * carries MiniDebugInfo, its .symtab of the local functions (the union, as gdb reads it). */
static void elf_add_dynamic_symbols(struct elf_file *e)
{
    if (minidebug_open(&e->image, &e->debug) == 0 && elf_add_symbols(e, &e->debug, SHT_SYMTAB))
        elf_image_close(&e->debug);
    elf_add_symbols(e, &e->image, SHT_DYNSYM);
}

/* Maps the file and reads its segments and symbols, sorted by address: its own .symtab, else
 * its debug file's, else its .dynsym with its MiniDebugInfo's; a file that is not a 64-bit ELF
 * keeps no symbols (every lookup fails). */
static void elf_load(struct elf_file *e)
{
    if (elf_image_open(&e->image, e->path) != 0)
        return;
    e->segments = (const Elf64_Phdr *)(e->image.map + e->image.header->e_phoff);
    e->segment_count = e->image.header->e_phnum;
    if (elf_add_symbols(e, &e->image, SHT_SYMTAB) != 0 &&
        (debug_file_open(&e->image, e->path, &e->debug) != 0 ||
         elf_add_symbols(e, &e->debug, SHT_SYMTAB) != 0)) {
        elf_image_close(&e->debug); /* none found, or one without function symbols */
        elf_add_dynamic_symbols(e);
    }
    if (e->symbol_count) /* else symbols may be NULL */
        qsort(e->symbols, e->symbol_count, sizeof *e->symbols, symbol_order);
}

static struct elf_file *elf_of(struct symbol_cache *c, const char *path)
{
    for (struct elf_file *e = c->files; e; e = e->next)
        if (!strcmp(e->path, path))
            return e;
    struct elf_file *e = calloc(1, sizeof *e);
    if (!e || !(e->path = strdup(path))) {
        free(e);
        return NULL;
    }
    elf_load(e);
    e->next = c->files;
    c->files = e;
    return e;
}

/* The function of e containing a link-time address, or NULL. */
static const char *elf_symbol_at(const struct elf_file *e, uint64_t address)
{
    size_t lo = 0, hi = e->symbol_count; /* the last symbol at or below the address */
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (e->symbols[mid].value <= address)
            lo = mid + 1;
        else
            hi = mid;
    }
    if (lo == 0)
        return NULL;
    /* aliases share an address: any of them names it; a sized symbol must contain it */
    const struct elf_symbol *s = &e->symbols[lo - 1];
    if (s->size && address >= s->value + s->size)
        return NULL;
    return s->name;
}

static const struct elf_file *symbol_file(struct symbol_cache *c, const char *path)
{
    struct elf_file *e = c && path && *path == '/' ? elf_of(c, path) : NULL;
    return e && e->symbol_count ? e : NULL;
}

const char *symbol_lookup(struct symbol_cache *c, const char *path, uint64_t file_offset)
{
    const struct elf_file *e = symbol_file(c, path);
    if (!e)
        return NULL;
    for (size_t i = 0; i < e->segment_count; i++) {
        const Elf64_Phdr *ph = &e->segments[i];
        if (ph->p_type == PT_LOAD && file_offset >= ph->p_offset &&
            file_offset < ph->p_offset + ph->p_filesz)
            return elf_symbol_at(e, file_offset - ph->p_offset + ph->p_vaddr);
    }
    return NULL;
}

const char *symbol_lookup_address(struct symbol_cache *c, const char *path, uint64_t address)
{
    const struct elf_file *e = symbol_file(c, path);
    return e ? elf_symbol_at(e, address) : NULL;
}
