/* Running the profiled command: fork and exec, the signals sent to the launcher forwarded to
 * it, waiting for its end, and why an exec failed in words a user can act on (launcher.h,
 * launcher_run). The launcher is its descendants' subreaper: every process it reaps (the
 * command, and each orphan given to it) is recorded with how it ended, in launcher.lrt as
 * they come (launcher_file.c), so that a server forking a worker per request costs the
 * launcher no memory per worker. */
#include "launcher/launcher_internal.h"
#include "trace/process.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

static volatile sig_atomic_t child_pid;
/* A signal that came once the child had ended, before the launcher reaped it: lantern's own,
 * raised again once the signals are held (child_run), so the wait and the import stop on it
 * as on one that comes after. Forwarded, it would be lost on the dead child. */
static volatile sig_atomic_t signal_after_end;

/* Whether the child has ended: a zombie, or reaped already (ECHILD). A look only (WNOWAIT);
 * the main thread reaps it. */
static int child_ended(pid_t pid)
{
    siginfo_t info;
    memset(&info, 0, sizeof info);
    return waitid(P_PID, (id_t)pid, &info, WEXITED | WNOHANG | WNOWAIT) != 0 ||
           info.si_pid == pid;
}

/* A Ctrl-C or terminal hang-up reaches the child directly (same process group), so only
 * signals sent to the launcher itself (kill(2), sigqueue(3)) are forwarded: otherwise the
 * child would get a Ctrl-C twice. */
static void forward_signal(int sig, siginfo_t *info, void *ucontext)
{
    (void)ucontext;
    pid_t pid = (pid_t)child_pid;
    if (pid <= 0)
        return;
    int saved_errno = errno;
    if (child_ended(pid))
        signal_after_end = sig;
    else if (info->si_code == SI_USER || info->si_code == SI_QUEUE)
        kill(pid, sig);
    errno = saved_errno;
}

static const int forwarded_signals[] = {SIGINT, SIGTERM, SIGHUP};

void child_hold_signals(int block)
{
    sigset_t set;
    sigemptyset(&set);
    for (size_t i = 0; i < sizeof forwarded_signals / sizeof forwarded_signals[0]; i++)
        sigaddset(&set, forwarded_signals[i]);
    sigprocmask(block ? SIG_BLOCK : SIG_UNBLOCK, &set, NULL);
}

static void install_forwarding(void)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = forward_signal;
    sa.sa_flags = SA_SIGINFO;
    sigemptyset(&sa.sa_mask);
    for (size_t i = 0; i < sizeof forwarded_signals / sizeof forwarded_signals[0]; i++)
        sigaction(forwarded_signals[i], &sa, NULL);
}

/* In the child between fork and exec: default dispositions, then exec; an exec failure is
 * reported to the parent through the close-on-exec pipe. */
static void exec_child(char **command, int report_fd, const sigset_t *old_mask)
{
    for (size_t i = 0; i < sizeof forwarded_signals / sizeof forwarded_signals[0]; i++)
        signal(forwarded_signals[i], SIG_DFL);
    sigset_t mask = *old_mask;
    sigdelset(&mask, SIGUSR1); /* the launcher's triggers (control.c), not the program's */
    sigdelset(&mask, SIGUSR2);
    sigprocmask(SIG_SETMASK, &mask, NULL);
    execvp(command[0], command);
    int err = errno;
    ssize_t unused = write(report_fd, &err, sizeof err); /* nothing to do if it fails */
    (void)unused;
    _exit(127);
}

/* Why exec failed, with what to type instead where we can tell: a script without its
 * execute bit, or a file of the current folder named without "./" (execvp searches PATH). */
static int explain_exec_failure(struct launcher *l, const char *program, int err)
{
    struct stat st;
    if ((err == EACCES || err == ENOENT) && stat(program, &st) == 0) {
        const char *dot = strrchr(program, '.');
        const char *interpreter = !dot                  ? NULL
                                  : !strcmp(dot, ".py") ? "python3"
                                  : !strcmp(dot, ".sh") ? "sh"
                                                        : NULL;
        if (S_ISDIR(st.st_mode))
            return launcher_fail(l, -EISDIR, "cannot run '%s': it is a folder, not a program",
                                 program);
        if (access(program, X_OK) != 0) {
            if (interpreter)
                return launcher_fail(l, -EACCES,
                                     "'%s' is not executable; try: lantern profile %s %s", program,
                                     interpreter, program);
            return launcher_fail(l, -EACCES, "'%s' is not executable; try: chmod +x %s", program,
                                 program);
        }
        if (!strchr(program, '/'))
            return launcher_fail(
                l, -ENOENT,
                "'%s' is not in PATH; to run the file in this folder: lantern profile ./%s",
                program, program);
    }
    return launcher_fail(l, -err, "cannot run '%s': %s", program, strerror(err));
}

/* ---- the launcher's own helper processes (the GPU metric samplers) ----------------------- */

/* Their ends are theirs: when the reaper of descendants below takes one, its status is kept
 * here for its owner (child_helper_reaped), and it is not a process of the run. */
#define HELPERS_MAX 64
static struct helper {
    pid_t pid; /* 0: free */
    int ended, status;
    struct rusage ru;
} helpers[HELPERS_MAX];
static pthread_mutex_t helpers_lock = PTHREAD_MUTEX_INITIALIZER;

static struct helper *helper_find(pid_t pid)
{
    for (size_t i = 0; i < HELPERS_MAX; i++)
        if (helpers[i].pid == pid)
            return &helpers[i];
    return NULL;
}

void child_helper_add(pid_t pid)
{
    pthread_mutex_lock(&helpers_lock);
    struct helper *h = helper_find(0);
    if (h)
        *h = (struct helper){.pid = pid};
    pthread_mutex_unlock(&helpers_lock);
}

int child_helper_reaped(pid_t pid, int *status, struct rusage *ru)
{
    pthread_mutex_lock(&helpers_lock);
    struct helper *h = helper_find(pid);
    int ended = h && h->ended;
    if (ended) {
        *status = h->status;
        *ru = h->ru;
        h->pid = 0;
    }
    pthread_mutex_unlock(&helpers_lock);
    return ended;
}

void child_helper_forget(pid_t pid)
{
    pthread_mutex_lock(&helpers_lock);
    struct helper *h = helper_find(pid);
    if (h)
        h->pid = 0;
    pthread_mutex_unlock(&helpers_lock);
}

/* Keeps a reaped helper's status and resources; 1 when pid is a helper. */
static int helper_ended(pid_t pid, int status, const struct rusage *ru)
{
    pthread_mutex_lock(&helpers_lock);
    struct helper *h = helper_find(pid);
    if (h) {
        h->ended = 1;
        h->status = status;
        h->ru = *ru;
    }
    pthread_mutex_unlock(&helpers_lock);
    return h != NULL;
}

int child_is_helper(pid_t pid)
{
    pthread_mutex_lock(&helpers_lock);
    int is = helper_find(pid) != NULL;
    pthread_mutex_unlock(&helpers_lock);
    return is;
}

/* Whether the launcher has a child that is not a helper, a zombie included (one that ended
 * since the last wait4 is reaped on the next round): a walk of /proc for processes whose
 * parent it is (/proc/<pid>/task/<tid>/children is not in every kernel). */
static int others_alive(void)
{
    DIR *d = opendir("/proc");
    int found = 0;
    for (struct dirent *e; d && !found && (e = readdir(d));) {
        char *end, state;
        long pid = strtol(e->d_name, &end, 10), ppid;
        unsigned long long started;
        if (!*end && pid > 0 && trace_proc_stat(pid, &state, &ppid, &started) == 0 &&
            ppid == (long)getpid() && state != 'X')
            found = !child_is_helper((pid_t)pid);
    }
    if (d)
        closedir(d);
    return found;
}

static pid_t reap_wait(int options, int *status, struct rusage *ru)
{
    pid_t pid;
    while ((pid = wait4(-1, status, options, ru)) < 0 && errno == EINTR)
        ;
    return pid;
}

/* wait4(-1) (hang: until a child ends), writing how the one reaped ended to launcher.lrt (a
 * helper's end goes to its owner). Returns its pid, 0 when none has ended yet (not hang), or
 * -1 (ECHILD: no child left). */
static pid_t reap_one(struct launcher *l, int hang, int *status)
{
    int st = 0;
    struct rusage ru;
    pid_t pid = reap_wait(hang ? 0 : WNOHANG, &st, &ru);
    if (pid > 0 && !helper_ended(pid, st, &ru)) {
        launcher_file_add_exit(l->file, pid, st);
        *status = st;
    }
    return pid;
}

int child_reap_ended(struct launcher *l)
{
    pid_t pid;
    int status;
    while ((pid = reap_one(l, 0, &status)) > 0)
        ;
    return pid == 0 && others_alive();
}

int child_run(struct launcher *l)
{
    char **command = l->o->command;
    int pipefd[2];
    if (pipe2(pipefd, O_CLOEXEC) < 0)
        return launcher_fail(l, -errno, "cannot start '%s': %s", command[0], strerror(errno));
    sigset_t block, old;
    sigemptyset(&block);
    for (size_t i = 0; i < sizeof forwarded_signals / sizeof forwarded_signals[0]; i++)
        sigaddset(&block, forwarded_signals[i]);
    sigprocmask(SIG_BLOCK, &block, &old); /* no forwarding before child_pid is known */
    install_forwarding();
    /* Orphans of the command (a daemon's double fork) become the launcher's children rather
     * than init's, so it can wait for them all (wait.c) and see how each ended. */
    l->reaper = prctl(PR_SET_CHILD_SUBREAPER, 1) == 0;
    pid_t pid = fork();
    if (pid == 0)
        exec_child(command, pipefd[1], &old);
    child_pid = pid;
    sigprocmask(SIG_SETMASK, &old, NULL);
    close(pipefd[1]);
    if (pid < 0) {
        int err = errno;
        close(pipefd[0]);
        return launcher_fail(l, -err, "cannot start '%s': %s", command[0], strerror(err));
    }
    int err = 0, status = 0;
    ssize_t n;
    while ((n = read(pipefd[0], &err, sizeof err)) < 0 && errno == EINTR)
        ;
    close(pipefd[0]);
    /* the orphans that end meanwhile are reaped (and recorded) as they come */
    pid_t reaped;
    while ((reaped = reap_one(l, 1, &status)) != pid && reaped > 0)
        ;
    /* From here a signal is for lantern itself: held while the import runs (which stops
     * cleanly when one is pending, saying how to import the raw folder), then acting as usual
     * when the caller releases it (launcher_release). */
    child_hold_signals(1);
    child_pid = 0;
    for (size_t i = 0; i < sizeof forwarded_signals / sizeof forwarded_signals[0]; i++)
        signal(forwarded_signals[i], SIG_DFL);
    if (signal_after_end)
        raise(signal_after_end); /* held: pending, as if it came now */
    if (n == (ssize_t)sizeof err)
        return explain_exec_failure(l, command[0], err);
    if (WIFSIGNALED(status))
        return 128 + WTERMSIG(status);
    return WEXITSTATUS(status);
}
