/* Separate debug files (import_debug_file.h): distributions strip .symtab from their libraries
 * and ship it in a debug file whose sections are empty (NOBITS) except the debug ones and the
 * symbol table, at the original's addresses. Found the way gdb does ("Separate Debug Files" in
 * its manual): /ROOT/.build-id/ab/cdef....debug for build-id abcdef..., then the
 * .gnu_debuglink name in the file's folder, its .debug/ and /ROOT/<the file's folder>/. A
 * candidate counts only with the same build-id (and, found by name, the CRC32 the link holds),
 * so a stale or foreign file is refused. Each failed candidate costs one failed open. */
#include "db/import_debug_file.h"

#include "trace/environment.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#define DEBUG_DEFAULT_ROOT "/usr/lib/debug"

int elf_image_within(const struct elf_image *im, uint64_t off, uint64_t len)
{
    return off <= im->len && len <= im->len - off;
}

void elf_image_close(struct elf_image *im)
{
    if (im->in_memory)
        free((void *)im->map);
    else if (im->map)
        munmap((void *)im->map, im->len);
    *im = (struct elf_image){0};
}

static int elf_image_check(struct elf_image *im)
{
    const Elf64_Ehdr *eh = (const Elf64_Ehdr *)im->map;
    if (im->len < sizeof *eh || memcmp(eh->e_ident, ELFMAG, SELFMAG) ||
        eh->e_ident[EI_CLASS] != ELFCLASS64 || eh->e_phentsize != sizeof(Elf64_Phdr) ||
        eh->e_shentsize != sizeof(Elf64_Shdr) || eh->e_phoff % 8 || eh->e_shoff % 8 ||
        !elf_image_within(im, eh->e_phoff, (uint64_t)eh->e_phnum * sizeof(Elf64_Phdr)) ||
        !elf_image_within(im, eh->e_shoff, (uint64_t)eh->e_shnum * sizeof(Elf64_Shdr)))
        return -1;
    im->header = eh; /* the tables are read in place: aligned (checked above) */
    im->sections = (const Elf64_Shdr *)(im->map + eh->e_shoff);
    im->section_count = eh->e_shnum;
    return 0;
}

int elf_image_open(struct elf_image *im, const char *path)
{
    *im = (struct elf_image){0};
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK); /* a FIFO must not block */
    struct stat st;
    if (fd < 0)
        return -1;
    if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_size >= (off_t)sizeof(Elf64_Ehdr)) {
        void *map = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
        if (map != MAP_FAILED) {
            im->map = map;
            im->len = (size_t)st.st_size;
        }
    }
    close(fd);
    if (im->map && elf_image_check(im) == 0)
        return 0;
    elf_image_close(im);
    return -1;
}

int elf_image_take_buffer(struct elf_image *im, unsigned char *buffer, size_t len)
{
    *im = (struct elf_image){.map = buffer, .len = len, .in_memory = 1};
    if (buffer && elf_image_check(im) == 0)
        return 0;
    elf_image_close(im);
    return -1;
}

size_t elf_image_find_section(const struct elf_image *im, uint32_t type)
{
    for (size_t i = 1; i < im->section_count; i++)
        if (im->sections[i].sh_type == type)
            return i;
    return 0;
}

/* The contents of a section that has them (not NOBITS), or NULL. */
static const unsigned char *elf_image_contents(const struct elf_image *im, const Elf64_Shdr *sh)
{
    return sh->sh_type != SHT_NOBITS && elf_image_within(im, sh->sh_offset, sh->sh_size)
               ? im->map + sh->sh_offset
               : NULL;
}

const unsigned char *elf_image_named(const struct elf_image *im, const char *name, size_t *size)
{
    size_t names = im->header->e_shstrndx;
    const unsigned char *table =
        names && names < im->section_count ? elf_image_contents(im, &im->sections[names]) : NULL;
    size_t table_size = table ? im->sections[names].sh_size : 0, want = strlen(name) + 1;
    for (size_t i = 1; table && i < im->section_count; i++) {
        const Elf64_Shdr *sh = &im->sections[i];
        if (sh->sh_name < table_size && table_size - sh->sh_name >= want &&
            !memcmp(table + sh->sh_name, name, want) && elf_image_contents(im, sh)) {
            *size = sh->sh_size;
            return elf_image_contents(im, sh);
        }
    }
    return NULL;
}

/* The NT_GNU_BUILD_ID note's bytes (*size of them) in one note section, or NULL. */
static const unsigned char *note_build_id(const unsigned char *notes, size_t len, size_t *size)
{
    size_t at = 0;
    while (len - at >= sizeof(Elf64_Nhdr)) {
        Elf64_Nhdr nh;
        memcpy(&nh, notes + at, sizeof nh);
        size_t name = at + sizeof nh, desc = name + ((nh.n_namesz + 3ull) & ~3ull);
        if (desc > len || nh.n_descsz > len - desc)
            return NULL;
        if (nh.n_type == NT_GNU_BUILD_ID && nh.n_namesz == 4 &&
            !memcmp(notes + name, "GNU", 4) && nh.n_descsz >= 2) {
            *size = nh.n_descsz;
            return notes + desc;
        }
        at = desc + ((nh.n_descsz + 3ull) & ~3ull);
        if (at > len)
            return NULL;
    }
    return NULL;
}

/* The image's build-id (*size bytes), or NULL. */
static const unsigned char *elf_image_build_id(const struct elf_image *im, size_t *size)
{
    for (size_t i = 1; i < im->section_count; i++) {
        const Elf64_Shdr *sh = &im->sections[i];
        const unsigned char *notes = sh->sh_type == SHT_NOTE ? elf_image_contents(im, sh) : NULL;
        const unsigned char *id = notes ? note_build_id(notes, sh->sh_size, size) : NULL;
        if (id)
            return id;
    }
    return NULL;
}

/* The CRC-32 (ISO-HDLC, zlib's) that .gnu_debuglink carries: of the whole debug file. */
static uint32_t debug_crc32(const unsigned char *data, size_t len)
{
    uint32_t table[256];
    for (uint32_t i = 0; i < 256; i++) {
        uint32_t c = i;
        for (int k = 0; k < 8; k++)
            c = c & 1 ? 0xEDB88320u ^ (c >> 1) : c >> 1;
        table[i] = c;
    }
    uint32_t crc = 0xFFFFFFFFu;
    for (size_t i = 0; i < len; i++)
        crc = table[(crc ^ data[i]) & 0xFF] ^ (crc >> 8);
    return crc ^ 0xFFFFFFFFu;
}

/* What the candidate must match: the original's build-id, and the link's CRC when found by
 * the link's name. */
struct debug_want {
    const struct elf_image *file;
    const unsigned char *build_id;
    size_t build_id_size;
    int check_crc;
    uint32_t crc;
};

/* Maps path into *debug when it is the wanted debug file: 0, else -1. */
static int debug_candidate(const struct debug_want *want, const char *path,
                           struct elf_image *debug)
{
    if (elf_image_open(debug, path) != 0)
        return -1;
    size_t id_size = 0;
    const unsigned char *id = elf_image_build_id(debug, &id_size);
    int same_id = want->build_id ? id && id_size == want->build_id_size &&
                                       !memcmp(id, want->build_id, id_size)
                                 : !id;
    if (same_id && debug->header->e_machine == want->file->header->e_machine &&
        elf_image_find_section(debug, SHT_SYMTAB) &&
        (!want->check_crc || debug_crc32(debug->map, debug->len) == want->crc))
        return 0;
    elf_image_close(debug);
    return -1;
}

/* The debug roots, in order: LANTERN_DEBUG_DIRS's folders, then the system's. */
struct debug_roots {
    const char *next; /* the rest of LANTERN_DEBUG_DIRS */
    int system_given;
};

static struct debug_roots debug_roots_start(void)
{
    return (struct debug_roots){getenv(trace_env_name(TRACE_ENV_DEBUG_DIRS)), 0};
}

/* The next root (*len bytes long), or NULL after the last. */
static const char *debug_next_root(struct debug_roots *r, size_t *len)
{
    while (r->next && *r->next == ':')
        r->next++;
    if (r->next && *r->next) {
        const char *root = r->next;
        *len = strcspn(root, ":");
        r->next += *len;
        return root;
    }
    if (r->system_given)
        return NULL;
    r->system_given = 1;
    *len = strlen(DEBUG_DEFAULT_ROOT);
    return DEBUG_DEFAULT_ROOT;
}

/* ROOT/.build-id/ab/cdef....debug under each root. */
static int debug_by_build_id(const struct debug_want *want, struct elf_image *debug)
{
    char hex[2 * 64 + 2], path[4096];
    if (!want->build_id || want->build_id_size > 64)
        return -1;
    for (size_t i = 0, at = 0; i < want->build_id_size; i++)
        at += (size_t)snprintf(hex + at, sizeof hex - at, i == 1 ? "/%02x" : "%02x",
                               want->build_id[i]);
    struct debug_roots roots = debug_roots_start();
    const char *root;
    size_t len;
    while ((root = debug_next_root(&roots, &len)))
        if ((size_t)snprintf(path, sizeof path, "%.*s/.build-id/%s.debug", (int)len, root, hex) <
                sizeof path &&
            debug_candidate(want, path, debug) == 0)
            return 0;
    return -1;
}

/* The link's name in the file's folder, its .debug/ folder, then ROOT/<folder>/ per root. */
static int debug_by_link(struct debug_want *want, const char *file_path, struct elf_image *debug)
{
    size_t size = 0;
    const unsigned char *link = elf_image_named(want->file, ".gnu_debuglink", &size);
    const unsigned char *end = link ? memchr(link, 0, size) : NULL;
    const char *name = (const char *)link, *slash = strrchr(file_path, '/');
    size_t crc_at = end ? ((size_t)(end - link) + 4) & ~(size_t)3 : 0;
    if (!end || end == link || strchr(name, '/') || crc_at + 4 > size || !slash)
        return -1;
    memcpy(&want->crc, link + crc_at, 4);
    want->check_crc = 1;
    int folder = (int)(slash - file_path);
    char path[4096];
    const char *forms[] = {"%.*s/%s", "%.*s/.debug/%s"};
    for (size_t i = 0; i < sizeof forms / sizeof *forms; i++)
        if ((size_t)snprintf(path, sizeof path, forms[i], folder, file_path, name) <
                sizeof path &&
            debug_candidate(want, path, debug) == 0)
            return 0;
    struct debug_roots roots = debug_roots_start();
    const char *root;
    size_t len;
    while ((root = debug_next_root(&roots, &len)))
        if ((size_t)snprintf(path, sizeof path, "%.*s%.*s/%s", (int)len, root, folder,
                             file_path, name) < sizeof path &&
            debug_candidate(want, path, debug) == 0)
            return 0;
    return -1;
}

int debug_file_open(const struct elf_image *file, const char *path, struct elf_image *debug)
{
    struct debug_want want = {.file = file};
    want.build_id = elf_image_build_id(file, &want.build_id_size);
    *debug = (struct elf_image){0};
    return debug_by_build_id(&want, debug) == 0 || debug_by_link(&want, path, debug) == 0 ? 0
                                                                                          : -1;
}
