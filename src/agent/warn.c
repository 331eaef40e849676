/* The agent's one-line warning (agent.h): every module of the agent may warn, so it lives
 * apart from the start-up code in agent.c, which calls the modules. */
#include "agent/agent.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

void agent_warn(const char *fmt, ...)
{
    char line[512] = "lantern: ";
    size_t prefix = strlen(line);
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(line + prefix, sizeof(line) - prefix - 1, fmt, ap);
    va_end(ap);
    size_t len = n < 0 ? prefix : prefix + (size_t)n;
    if (len > sizeof(line) - 2)
        len = sizeof(line) - 2;
    line[len++] = '\n';
    ssize_t ignored = write(STDERR_FILENO, line, len); /* one write: lines never interleave */
    (void)ignored;
}
