/* Symbols of the ELF files behind the CPU samples' addresses (import_symbols.h): each file is
 * mapped read-only once, its function symbols (.symtab where the file kept it, else .dynsym)
 * sorted by address, and a file offset turned into an address through its PT_LOAD segments.
 * Names point into the mapped string table, which stays mapped until the cache is freed.
 * Not read: separate debug files (/usr/lib/debug), DWARF, and JIT maps (docs/cpu.md). */
#include "db/import_symbols.h"

#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

struct elf_symbol {
    uint64_t value, size;
    const char *name;
};

struct elf_file {
    char *path;
    void *map;
    size_t map_len;
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
        if (e->map)
            munmap(e->map, e->map_len);
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

/* Whether [off, off + len) lies within the file. */
static int elf_within(const struct elf_file *e, uint64_t off, uint64_t len)
{
    return off <= e->map_len && len <= e->map_len - off;
}

/* The function symbols of one symbol table section (its strings in the linked section). */
static int elf_read_symbols(struct elf_file *e, const Elf64_Shdr *sections, size_t count,
                            size_t index)
{
    const Elf64_Shdr *sh = &sections[index];
    if (sh->sh_link >= count || sh->sh_entsize != sizeof(Elf64_Sym) ||
        !elf_within(e, sh->sh_offset, sh->sh_size))
        return -ENOEXEC;
    const Elf64_Shdr *strtab = &sections[sh->sh_link];
    if (!elf_within(e, strtab->sh_offset, strtab->sh_size) || strtab->sh_size == 0)
        return -ENOEXEC;
    const char *strings = (const char *)e->map + strtab->sh_offset;
    const Elf64_Sym *syms = (const Elf64_Sym *)((const char *)e->map + sh->sh_offset);
    size_t n = sh->sh_size / sizeof(Elf64_Sym);
    e->symbols = calloc(n ? n : 1, sizeof *e->symbols);
    if (!e->symbols)
        return -ENOMEM;
    for (size_t i = 0; i < n; i++) {
        unsigned type = ELF64_ST_TYPE(syms[i].st_info);
        if ((type != STT_FUNC && type != STT_GNU_IFUNC) || syms[i].st_value == 0 ||
            syms[i].st_name >= strtab->sh_size ||
            !memchr(strings + syms[i].st_name, 0, strtab->sh_size - syms[i].st_name))
            continue;
        e->symbols[e->symbol_count++] =
            (struct elf_symbol){syms[i].st_value, syms[i].st_size, strings + syms[i].st_name};
    }
    qsort(e->symbols, e->symbol_count, sizeof *e->symbols, symbol_order);
    return 0;
}

/* Maps the file and reads its segments and symbols; a file that is not a 64-bit ELF keeps
 * no symbols (every lookup fails). */
static void elf_load(struct elf_file *e)
{
    int fd = open(e->path, O_RDONLY | O_CLOEXEC | O_NONBLOCK); /* a FIFO must not block */
    struct stat st;
    if (fd < 0)
        return;
    if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_size >= (off_t)sizeof(Elf64_Ehdr)) {
        e->map_len = (size_t)st.st_size;
        e->map = mmap(NULL, e->map_len, PROT_READ, MAP_PRIVATE, fd, 0);
        if (e->map == MAP_FAILED)
            e->map = NULL;
    }
    close(fd);
    if (!e->map)
        return;
    const Elf64_Ehdr *eh = e->map;
    if (memcmp(eh->e_ident, ELFMAG, SELFMAG) || eh->e_ident[EI_CLASS] != ELFCLASS64 ||
        eh->e_phentsize != sizeof(Elf64_Phdr) || eh->e_shentsize != sizeof(Elf64_Shdr) ||
        !elf_within(e, eh->e_phoff, (uint64_t)eh->e_phnum * sizeof(Elf64_Phdr)) ||
        !elf_within(e, eh->e_shoff, (uint64_t)eh->e_shnum * sizeof(Elf64_Shdr)))
        return;
    e->segments = (const Elf64_Phdr *)((const char *)e->map + eh->e_phoff);
    e->segment_count = eh->e_phnum;
    const Elf64_Shdr *sections = (const Elf64_Shdr *)((const char *)e->map + eh->e_shoff);
    size_t symtab = 0, dynsym = 0;
    for (size_t i = 0; i < eh->e_shnum; i++) {
        if (sections[i].sh_type == SHT_SYMTAB && !symtab)
            symtab = i;
        if (sections[i].sh_type == SHT_DYNSYM && !dynsym)
            dynsym = i;
    }
    if (symtab && elf_read_symbols(e, sections, eh->e_shnum, symtab) == 0 && e->symbol_count)
        return;
    free(e->symbols);
    e->symbols = NULL;
    e->symbol_count = 0;
    if (dynsym)
        elf_read_symbols(e, sections, eh->e_shnum, dynsym);
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
