/* The frame-pointer walk shared by -t osrt's backtraces and the CPU-time timers' handler
 * (frame_chain.h): reads stay inside one 4 KiB page, in windows of the caller's scratch
 * buffer, so that near frames cost one process_vm_readv. */
#include "agent/frame_chain.h"

#include <string.h>
#include <sys/uio.h>

/* A frame further than this above the one before ends the walk: it is no caller's. */
#define FRAME_CHAIN_MAX_FRAME_BYTES (1u << 20)
/* Reads stay inside one 4 KiB page: process_vm_readv fails a read that crosses into an
 * unreadable page as a whole. */
#define FRAME_CHAIN_PAGE 4096u

/* A window of the stack read with process_vm_readv into the caller's scratch. */
struct frame_chain_window {
    uintptr_t base;
    size_t len, cap;
    unsigned char *bytes;
};

/* The frame at fp: the caller's frame pointer and the return address. 0: unreadable. */
static int frame_chain_read(struct frame_chain_window *w, pid_t pid, uintptr_t fp,
                            uintptr_t frame[2])
{
    if (fp < w->base || fp - w->base + 2 * sizeof(uintptr_t) > w->len) {
        size_t len = FRAME_CHAIN_PAGE - (fp & (FRAME_CHAIN_PAGE - 1));
        len = len > w->cap                  ? w->cap
              : len < 2 * sizeof(uintptr_t) ? 2 * sizeof(uintptr_t)
                                            : len;
        struct iovec local = {w->bytes, len}, remote = {(void *)fp, len};
        ssize_t got = process_vm_readv(pid, &local, 1, &remote, 1, 0);
        if (got < (ssize_t)(2 * sizeof(uintptr_t)))
            return 0;
        w->base = fp;
        w->len = (size_t)got;
    }
    memcpy(frame, w->bytes + (fp - w->base), 2 * sizeof(uintptr_t));
    return 1;
}

unsigned frame_chain_walk(pid_t pid, uintptr_t fp, unsigned max_frames, frame_chain_visit visit,
                          void *context, unsigned char *scratch, size_t scratch_len)
{
    if (scratch_len < 2 * sizeof(uintptr_t))
        return 0;
    struct frame_chain_window w = {0, 0, scratch_len, scratch};
    uintptr_t frame[2];
    unsigned walked = 0;
    while (walked < max_frames) {
        if ((fp & (sizeof(uintptr_t) - 1)) || !frame_chain_read(&w, pid, fp, frame))
            break;
        walked++;
        uintptr_t next = frame[0];
        if (!visit(context, frame[1]) || next <= fp || next - fp > FRAME_CHAIN_MAX_FRAME_BYTES)
            break;
        fp = next;
    }
    return walked;
}
