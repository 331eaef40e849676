/* Between the launcher's files (launcher.h is the interface): run.c drives one run with
 * the steps below, each in the file of its kind, none calling back into run.c. */
#ifndef LANTERN_LAUNCHER_INTERNAL_H
#define LANTERN_LAUNCHER_INTERNAL_H

#include "launcher/launcher.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/types.h>

/* Keeps the failure's line for launcher_error; returns code, a negative errno that says what
 * kind of failure it was (the line says which). */
__attribute__((format(printf, 3, 4))) static inline int launcher_fail(struct launcher *l, int code,
                                                                      const char *fmt, ...)
{
    va_list ap;
    free(l->error);
    va_start(ap, fmt);
    if (vasprintf(&l->error, fmt, ap) < 0)
        l->error = NULL; /* launcher_error says "out of memory" */
    va_end(ap);
    return code;
}

/* session.c: checks the outputs and creates the session folder l->raw_dir; sets l->dir_fd to
 * a descriptor of the folder (opened without following a link, so the launcher's own file
 * goes into the folder it created). Returns 0 or launcher_fail's code. */
int session_prepare(struct launcher *l);
/* session.c: whether done(buffer file, arg) holds for every live agent of the session (a
 * process gone or ended needs nothing): every agent paused at a window's end (control.c), or
 * dumped (ring.c). */
int session_agents_all(struct launcher *l, int (*done)(int pool_fd, uint64_t arg), uint64_t arg);

/* control.c: session.lrc made in the session folder, SIGUSR1/SIGUSR2 held in this thread
 * (and so in every thread made after: the control thread takes them). 0 or launcher_fail's. */
int control_create(struct launcher *l);
/* control.c: the thread that takes the triggers while the program runs; its end (the open
 * window, if any, ends now). */
int control_start(struct launcher *l);
void control_finish(struct launcher *l);
/* control.c: unmaps the control file (launcher_release). */
void control_release(struct launcher *l);

/* ring.c (--ring): a dump of the ring at trigger_ns: the agents write what they hold (unless
 * the program ended), each process's .lrt and the segments kept are joined in a folder of the
 * session, imported (o->dumped) and removed. On the control thread, or at the program's end. */
void ring_dump(struct launcher *l, uint64_t trigger_ns, int program_ended);

/* ring.c (--ring): salvages the buffer files of processes that ended, and deletes their
 * segments (their writer, which deleted the older ones, is gone) once older than the ring and
 * a segment, so that a server forking a
 * traced worker per request does not fill the folder; at most every segment (now_ns: the
 * control thread's clock, CLOCK_MONOTONIC). On the control thread. */
void ring_sweep(struct launcher *l, uint64_t now_ns);

/* environment.c: the agent's path, malloc'd, or NULL. */
char *environment_find_agent(void);
/* environment.c: the Python bootstrap beside l->agent first on PYTHONPATH, and the
 * --python-functions patterns. Returns 0 or launcher_fail's code. */
int environment_set_python(struct launcher *l);
/* environment.c: what the agent reads (docs/architecture.md's table). Returns 0, or setenv's
 * -errno (errno set too). */
int environment_set_agent(const struct launcher *l);

/* child.c: runs l->o->command (see launcher_run); the samplers are not stopped here. */
int child_run(struct launcher *l);
/* child.c: holds (block = 1) or releases the signals forwarded to the command; released, a
 * pending one acts. */
void child_hold_signals(int block);
/* child.c: reaps every child of the launcher that has ended, writing how each ended to
 * launcher.lrt. Returns 1 while a child still runs, 0 when none is left (the launcher's own
 * helpers aside). */
int child_reap_ended(struct launcher *l);
/* child.c: the launcher's own helper processes (the GPU metric samplers), which the reaper of
 * descendants leaves out: added once forked; child_helper_reaped says whether the reaper took
 * its end (its wait status in *status, its resources in *ru), and then forgets it;
 * child_helper_forget forgets one its owner reaped itself. */
struct rusage;
void child_helper_add(pid_t pid);
int child_helper_reaped(pid_t pid, int *status, struct rusage *ru);
void child_helper_forget(pid_t pid);
int child_is_helper(pid_t pid);

/* launcher_file.c: launcher.lrt's first record; at the end the exits not written yet and the
 * end record (docs/trace-format.md). Return 0, or -ENOMEM, -ENOSPC (a record too big for its
 * chunk), or write's -errno (errno set too; -EIO for a short write). */
int launcher_write_start(struct launcher_file *f, char **command, const char *trace);
int launcher_write_end(struct launcher_file *f, int exit_status);
/* launcher_file.c: a reaped process's end (waitpid's status), batched: written when the batch
 * is full or a second old, or at launcher_file_flush_exits (before a window's or a dump's
 * database is written; launcher_write_end). */
void launcher_file_add_exit(struct launcher_file *f, pid_t pid, int status);
int launcher_file_flush_exits(struct launcher_file *f);
#endif
