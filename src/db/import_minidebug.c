/* MiniDebugInfo (import_minidebug.h): the .gnu_debugdata section's xz stream decompressed into
 * memory with liblzma's one-call decoder, liblzma found with dlopen on first need so the
 * importer has no build-time dependency on it (without it such files keep their .dynsym). The
 * output is bounded (MINIDEBUG_MAX_SIZE, the decoder's memory MINIDEBUG_MEMLIMIT) and the
 * inner file checked like any ELF file before its symbols are read. */
#include "db/import_minidebug.h"

#include <dlfcn.h>
#include <stdlib.h>
#include <string.h>

/* Fedora's MiniDebugInfo is tens to hundreds of KiB decompressed (libc's: 0.1 MiB); a larger
 * output is refused rather than read. */
#define MINIDEBUG_MAX_SIZE (64u << 20)
/* The decoder's memory: xz's presets need at most 65 MiB (-9); find-debuginfo uses the
 * default, -6, 9 MiB. */
#define MINIDEBUG_MEMLIMIT (128ull << 20)
/* The first output buffer, in times the compressed size: symbol tables compress 3 to 6 times;
 * a too small buffer is doubled and the stream decoded again. */
#define MINIDEBUG_FIRST_RATIO 8

/* liblzma's lzma_stream_buffer_decode (lzma/container.h); lzma_ret is an enum (an int). */
typedef int (*lzma_stream_buffer_decode_fn)(uint64_t *memlimit, uint32_t flags,
                                            const void *allocator, const uint8_t *in,
                                            size_t *in_pos, size_t in_size, uint8_t *out,
                                            size_t *out_pos, size_t out_size);
enum { LZMA_RET_OK = 0, LZMA_RET_BUF_ERROR = 10 };

/* The decoder, looked for once per process (the importer is one thread); NULL without
 * liblzma. */
static lzma_stream_buffer_decode_fn minidebug_decoder(void)
{
    static lzma_stream_buffer_decode_fn decode;
    static int looked;
    if (!looked) {
        looked = 1;
        void *lzma = dlopen("liblzma.so.5", RTLD_NOW | RTLD_LOCAL);
        void *fn = lzma ? dlsym(lzma, "lzma_stream_buffer_decode") : NULL;
        memcpy(&decode, &fn, sizeof decode);
    }
    return decode;
}

/* The xz stream in[0, size) decompressed into a malloc'ed buffer (*out_size bytes), or NULL
 * (damaged, truncated, over MINIDEBUG_MAX_SIZE, no memory). */
static unsigned char *minidebug_decompress(lzma_stream_buffer_decode_fn decode,
                                           const unsigned char *in, size_t size, size_t *out_size)
{
    size_t capacity = size < MINIDEBUG_MAX_SIZE / MINIDEBUG_FIRST_RATIO
                          ? size * MINIDEBUG_FIRST_RATIO
                          : MINIDEBUG_MAX_SIZE;
    for (;;) {
        unsigned char *out = malloc(capacity);
        uint64_t memlimit = MINIDEBUG_MEMLIMIT;
        size_t in_pos = 0, out_pos = 0;
        int ret = out ? decode(&memlimit, 0, NULL, in, &in_pos, size, out, &out_pos, capacity) : -1;
        if (ret == LZMA_RET_OK) {
            *out_size = out_pos;
            return out;
        }
        free(out);
        /* BUF_ERROR: the output did not fit (a truncated stream is a DATA_ERROR) */
        if (ret != LZMA_RET_BUF_ERROR || capacity >= MINIDEBUG_MAX_SIZE)
            return NULL;
        capacity = capacity > MINIDEBUG_MAX_SIZE / 2 ? MINIDEBUG_MAX_SIZE : capacity * 2;
    }
}

int minidebug_open(const struct elf_image *file, struct elf_image *mini)
{
    *mini = (struct elf_image){0};
    size_t size = 0, out_size = 0;
    const unsigned char *packed = elf_image_named(file, ".gnu_debugdata", &size);
    lzma_stream_buffer_decode_fn decode = packed && size ? minidebug_decoder() : NULL;
    unsigned char *out = decode ? minidebug_decompress(decode, packed, size, &out_size) : NULL;
    if (!out || elf_image_take_buffer(mini, out, out_size) != 0)
        return -1;
    if (mini->header->e_machine == file->header->e_machine &&
        elf_image_find_section(mini, SHT_SYMTAB))
        return 0;
    elf_image_close(mini);
    return -1;
}
