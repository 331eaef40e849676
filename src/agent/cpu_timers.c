/* CPU-time timers (cpu_timers.h): CPU sampling where perf_event_open is refused. The writer
 * creates, for each thread, a POSIX timer on that thread's CPU clock (the kernel allows the
 * clock of another thread of the same process) whose expiry sends a real-time signal to that
 * thread (SIGEV_THREAD_ID). The handler runs in the sampled thread, async-signal-safe: the
 * interrupted instruction and frame pointer from the ucontext, the chain walked with
 * process_vm_readv (frame_chain.c), the sample appended to the thread's single-producer /
 * single-consumer buffer (mapped by the writer, never in the handler); no lock, no allocation,
 * errno kept. The writer drains the buffers into the perf path's records (cpu_sampling.c). */
#include "agent/cpu_timers.h"
#include "agent/frame_chain.h"

#include <errno.h>
#include <signal.h>
#include <stddef.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <ucontext.h>
#include <unistd.h>

/* A thread's samples: the handler (the thread itself) writes at head, the drain reads at tail. */
struct cpu_timer_buffer {
    _Atomic uint64_t head;
    _Atomic uint64_t tail;
    _Atomic uint64_t lost;     /* the handler's counts: samples the buffer had no room for, */
    _Atomic uint64_t overruns; /* and the expiries folded into those */
    uint64_t lost_taken, overruns_taken; /* the drain's: the parts already handed on */
    uint64_t pad[2];                     /* the samples start on a cache line of their own */
    /* the handler's window on the stack it walks: a page read at once, and not on the signal
     * stack, which may be a small alternate one */
    unsigned char scratch[4096];
    struct cpu_timer_sample samples[];
};

struct cpu_timer_slot {
    struct cpu_timer_buffer *buffer; /* mapped at the slot's first use, kept for the next */
    _Atomic uint32_t generation;     /* a signal of another generation is a stale one */
    int timer;                       /* the kernel's timer id; -1: none */
    uint32_t tid;
    /* whether the thread ever took a signal (cpu_timers_watch): the buffer's counts at the
     * timer's creation, and the thread's CPU time while armed, as of the last look */
    uint64_t delivered_at_open, cpu_ns_last, cpu_ns_armed;
};

static struct {
    int signo;
    uint64_t period_ns;
    uint32_t slots; /* samples per buffer, a power of two */
    pid_t pid;      /* cached for the handler (getpid() is a system call) */
} timers;

static struct cpu_timer_slot timer_slots[CPU_TIMERS_MAX_THREADS];

static int cpu_timers_keep_frame(void *context, uintptr_t return_address)
{
    struct cpu_timer_sample *s = context;
    s->ips[s->frames++] = return_address;
    return s->frames < CPU_TIMERS_FRAMES;
}

/* The interrupted instruction and its callers by their frame pointers (x86-64 and AArch64;
 * elsewhere no frame: the sample says only that the thread ran). */
static void cpu_timers_take_stack(struct cpu_timer_buffer *b, struct cpu_timer_sample *s,
                                  const ucontext_t *uc)
{
    uintptr_t ip = 0, fp = 0;
#if defined(__x86_64__)
    ip = (uintptr_t)uc->uc_mcontext.gregs[REG_RIP];
    fp = (uintptr_t)uc->uc_mcontext.gregs[REG_RBP];
#elif defined(__aarch64__)
    ip = (uintptr_t)uc->uc_mcontext.pc;
    fp = (uintptr_t)uc->uc_mcontext.regs[29];
#else
    (void)uc;
#endif
    s->frames = 0;
    if (!ip)
        return;
    s->ips[s->frames++] = ip;
    frame_chain_walk(timers.pid, fp, CPU_TIMERS_FRAMES - 1, cpu_timers_keep_frame, s, b->scratch,
                     sizeof b->scratch);
}

static void cpu_timers_on_signal(int signo, siginfo_t *info, void *context)
{
    (void)signo;
    if (info->si_code != SI_TIMER) /* kill() or sigqueue() of the program's: not ours */
        return;
    uint64_t value = (uint64_t)(uintptr_t)info->si_value.sival_ptr;
    uint32_t slot = (uint32_t)value;
    if (slot >= CPU_TIMERS_MAX_THREADS ||
        __atomic_load_n(&timer_slots[slot].generation, __ATOMIC_ACQUIRE) != (uint32_t)(value >> 32))
        return; /* a deleted timer's signal, still in flight */
    struct cpu_timer_buffer *b = timer_slots[slot].buffer;
    if (!b)
        return;
    int saved_errno = errno;
    /* expiries the kernel folded into this one: the sample stands for them too */
    uint32_t overruns = info->si_overrun > 0 ? (uint32_t)info->si_overrun : 0;
    uint64_t head = __atomic_load_n(&b->head, __ATOMIC_RELAXED);
    if (head - __atomic_load_n(&b->tail, __ATOMIC_ACQUIRE) >= timers.slots) {
        __atomic_store_n(&b->overruns, __atomic_load_n(&b->overruns, __ATOMIC_RELAXED) + overruns,
                         __ATOMIC_RELEASE);
        __atomic_store_n(&b->lost, __atomic_load_n(&b->lost, __ATOMIC_RELAXED) + 1,
                         __ATOMIC_RELEASE);
    } else {
        struct cpu_timer_sample *s = &b->samples[head & (timers.slots - 1)];
        s->overruns = overruns;
        struct timespec now;
        clock_gettime(CLOCK_MONOTONIC, &now); /* the vDSO: no system call */
        s->ts = (uint64_t)now.tv_sec * 1000000000u + (uint64_t)now.tv_nsec;
        cpu_timers_take_stack(b, s, context);
        __atomic_store_n(&b->head, head + 1, __ATOMIC_RELEASE);
    }
    errno = saved_errno;
}

int cpu_timers_start(uint64_t period_ns, uint32_t slots)
{
    timers.period_ns = period_ns;
    timers.slots = slots;
    timers.pid = getpid();
    for (int i = 0; i < (int)CPU_TIMERS_MAX_THREADS; i++)
        timer_slots[i].timer = -1;
    /* the highest real-time signal the program leaves at its default: programs and libraries
     * take theirs from SIGRTMIN up (glibc keeps the two below SIGRTMIN for itself) */
    for (int signo = SIGRTMAX; signo >= SIGRTMIN; signo--) {
        struct sigaction old;
        if (sigaction(signo, NULL, &old) != 0 || (old.sa_flags & SA_SIGINFO) ||
            old.sa_handler != SIG_DFL)
            continue;
        struct sigaction ours = {.sa_sigaction = cpu_timers_on_signal,
                                 .sa_flags = SA_SIGINFO | SA_RESTART | SA_ONSTACK};
        sigemptyset(&ours.sa_mask);
        if (sigaction(signo, &ours, NULL) != 0)
            return -errno;
        timers.signo = signo;
        return signo;
    }
    return -EBUSY;
}

static clockid_t cpu_timers_thread_clock(uint32_t tid)
{
    /* the kernel's MAKE_THREAD_CPUCLOCK(tid, CPUCLOCK_SCHED), as pthread_getcpuclockid */
    return (clockid_t)((~tid << 3) | 4u | 2u);
}

static int cpu_timers_set(int timer, int armed)
{
    long sec = (long)(timers.period_ns / 1000000000u), nsec = (long)(timers.period_ns % 1000000000u);
    struct itimerspec it = {{armed ? sec : 0, armed ? nsec : 0}, {armed ? sec : 0, armed ? nsec : 0}};
    return syscall(SYS_timer_settime, timer, 0, &it, NULL) == 0 ? 0 : -errno;
}

/* Signals the slot's buffer saw: samples kept or not. */
static uint64_t cpu_timers_delivered(const struct cpu_timer_buffer *b)
{
    return __atomic_load_n(&b->head, __ATOMIC_ACQUIRE) +
           __atomic_load_n(&b->lost, __ATOMIC_ACQUIRE);
}

static uint64_t cpu_timers_thread_cpu_ns(uint32_t tid)
{
    struct timespec ts;
    if (clock_gettime(cpu_timers_thread_clock(tid), &ts) != 0)
        return 0;
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static int cpu_timers_map(struct cpu_timer_slot *t)
{
    size_t bytes = sizeof *t->buffer + (size_t)timers.slots * sizeof t->buffer->samples[0];
    void *map = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (map == MAP_FAILED)
        return -errno;
    t->buffer = map;
    return 0;
}

int cpu_timers_open(uint32_t slot, uint32_t tid, int armed)
{
    struct cpu_timer_slot *t = &timer_slots[slot];
    if (!t->buffer) {
        int rc = cpu_timers_map(t);
        if (rc)
            return rc;
    }
    uint32_t generation = __atomic_load_n(&t->generation, __ATOMIC_RELAXED);
    struct sigevent event = {.sigev_notify = SIGEV_THREAD_ID, .sigev_signo = timers.signo};
    event.sigev_value.sival_ptr = (void *)(uintptr_t)((uint64_t)generation << 32 | slot);
    event._sigev_un._tid = (pid_t)tid;
    int timer = -1;
    if (syscall(SYS_timer_create, cpu_timers_thread_clock(tid), &event, &timer) != 0) {
        int err = errno;
        /* the clock or the target of a thread that ended: EINVAL */
        if (err == EINVAL && syscall(SYS_tgkill, timers.pid, (pid_t)tid, 0) != 0 && errno == ESRCH)
            return -ESRCH;
        return -err;
    }
    t->timer = timer;
    t->tid = tid;
    t->delivered_at_open = cpu_timers_delivered(t->buffer);
    t->cpu_ns_last = cpu_timers_thread_cpu_ns(tid);
    t->cpu_ns_armed = 0;
    return armed ? cpu_timers_set(timer, 1) : 0;
}

void cpu_timers_watch(uint32_t slot, int armed)
{
    struct cpu_timer_slot *t = &timer_slots[slot];
    uint64_t now = t->timer >= 0 ? cpu_timers_thread_cpu_ns(t->tid) : 0;
    if (now < t->cpu_ns_last) /* ended: its clock reads no more */
        return;
    if (armed)
        t->cpu_ns_armed += now - t->cpu_ns_last;
    t->cpu_ns_last = now;
}

int cpu_timers_close(uint32_t slot)
{
    struct cpu_timer_slot *t = &timer_slots[slot];
    if (t->timer < 0)
        return 0;
    syscall(SYS_timer_delete, t->timer);
    t->timer = -1;
    /* a signal of this timer still in flight is ignored, and the buffer waits for a new thread */
    __atomic_fetch_add(&t->generation, 1, __ATOMIC_RELEASE);
    /* no signal in 4 periods of its CPU time, armed: it had the signal blocked */
    return cpu_timers_delivered(t->buffer) == t->delivered_at_open &&
           t->cpu_ns_armed >= 4 * timers.period_ns;
}

void cpu_timers_arm(uint32_t slot, int armed)
{
    if (timer_slots[slot].timer >= 0)
        cpu_timers_set(timer_slots[slot].timer, armed);
}

const struct cpu_timer_sample *cpu_timers_peek(uint32_t slot)
{
    struct cpu_timer_buffer *b = timer_slots[slot].buffer;
    if (!b)
        return NULL;
    uint64_t tail = __atomic_load_n(&b->tail, __ATOMIC_RELAXED);
    if (tail == __atomic_load_n(&b->head, __ATOMIC_ACQUIRE))
        return NULL;
    return &b->samples[tail & (timers.slots - 1)];
}

void cpu_timers_pop(uint32_t slot)
{
    struct cpu_timer_buffer *b = timer_slots[slot].buffer;
    __atomic_store_n(&b->tail, __atomic_load_n(&b->tail, __ATOMIC_RELAXED) + 1, __ATOMIC_RELEASE);
}

static uint64_t cpu_timers_take(_Atomic uint64_t *count, uint64_t *taken)
{
    uint64_t now = __atomic_load_n(count, __ATOMIC_ACQUIRE), fresh = now - *taken;
    *taken = now;
    return fresh;
}

uint64_t cpu_timers_take_lost(uint32_t slot, uint64_t *overruns)
{
    struct cpu_timer_buffer *b = timer_slots[slot].buffer;
    *overruns = b ? cpu_timers_take(&b->overruns, &b->overruns_taken) : 0;
    return b ? cpu_timers_take(&b->lost, &b->lost_taken) : 0;
}

int cpu_timers_handler_is_ours(void)
{
    struct sigaction now;
    return sigaction(timers.signo, NULL, &now) == 0 && (now.sa_flags & SA_SIGINFO) &&
           now.sa_sigaction == cpu_timers_on_signal;
}

int cpu_timers_signal(void)
{
    return timers.signo;
}

void cpu_timers_at_fork_child(void)
{
    timers.pid = getpid();
    for (uint32_t i = 0; i < CPU_TIMERS_MAX_THREADS; i++) {
        struct cpu_timer_slot *t = &timer_slots[i];
        t->timer = -1;
        if (t->buffer) {
            __atomic_store_n(&t->buffer->head, 0, __ATOMIC_RELAXED);
            __atomic_store_n(&t->buffer->tail, 0, __ATOMIC_RELAXED);
            __atomic_store_n(&t->buffer->lost, 0, __ATOMIC_RELAXED);
            __atomic_store_n(&t->buffer->overruns, 0, __ATOMIC_RELAXED);
            t->buffer->lost_taken = t->buffer->overruns_taken = 0;
        }
    }
}
