/* The database's name (launcher.h): -o's patterns expanded as nsys users expect (%r the rank,
 * %h the host, %p the launcher's pid, %q{VAR} a variable, %n the first free number, %% a
 * percent sign), and the default lantern-N.db, which is the pattern "lantern-%n.db". */
#include "launcher/launcher_internal.h"
#include "trace/rank.h"

#include <errno.h>
#include <limits.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define NAME_MAX_NUMBER 100000 /* %n tries 1 to NAME_MAX_NUMBER - 1 */

/* Keeps the line for *error (NULL: out of memory); returns -EINVAL. */
__attribute__((format(printf, 2, 3))) static int name_fail(char **error, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    if (vasprintf(error, fmt, ap) < 0)
        *error = NULL;
    va_end(ap);
    return -EINVAL;
}

/* Out of memory: *error NULL; returns -ENOMEM. */
static int name_out_of_memory(char **error)
{
    *error = NULL;
    return -ENOMEM;
}

/* "RANK, OMPI_COMM_WORLD_RANK, ...": the rank variables, for the error without one. */
static void rank_variable_list(char *out, size_t size)
{
    size_t len = 0;
    out[0] = '\0';
    for (const char *const *v = trace_rank_variables; *v && len < size; v++)
        len += (size_t)snprintf(out + len, size - len, "%s%s", len ? ", " : "", *v);
}

/* The value of %q{VAR} at *p (just after "%q"), *p moved past the '}'. */
static int name_variable(const char *pattern, const char **p, const char **value, char **error)
{
    const char *close = **p == '{' ? strchr(*p, '}') : NULL;
    if (!close || close == *p + 1)
        return name_fail(error, "-o '%s': %%q needs a variable's name in braces: %%q{VAR}",
                         pattern);
    int len = (int)(close - *p - 1);
    char var[256];
    if (len >= (int)sizeof var)
        return name_fail(error, "-o '%s': the variable's name in %%q{...} is too long", pattern);
    memcpy(var, *p + 1, (size_t)len);
    var[len] = '\0';
    if (!(*value = getenv(var)))
        return name_fail(error, "-o '%s': %%q{%s}: the environment variable %s is not set", pattern,
                         var, var);
    *p = close + 1;
    return 0;
}

/* Writes pattern expanded, with number for %n, to out; *numbered says whether %n was met.
 * 0, or -EINVAL with *error the reason. */
static int name_expand(const char *pattern, unsigned number, FILE *out, int *numbered, char **error)
{
    *numbered = 0;
    for (const char *p = pattern; *p;) {
        if (*p != '%') {
            fputc(*p++, out);
            continue;
        }
        char code = p[1];
        p += code ? 2 : 1;
        switch (code) {
        case '%':
            fputc('%', out);
            break;
        case 'n':
            fprintf(out, "%u", number);
            *numbered = 1;
            break;
        case 'p':
            fprintf(out, "%d", (int)getpid());
            break;
        case 'h': {
            char host[HOST_NAME_MAX + 1];
            if (gethostname(host, sizeof host) != 0)
                return name_fail(error, "-o '%s': cannot read the host name for %%h: %s", pattern,
                                 strerror(errno));
            host[HOST_NAME_MAX] = '\0';
            fputs(host, out);
            break;
        }
        case 'r': {
            const char *which;
            long long rank = trace_env_rank(trace_rank_variables, &which);
            if (rank < 0) {
                char vars[256];
                rank_variable_list(vars, sizeof vars);
                return name_fail(error,
                                 "-o '%s': %%r is the rank, but none of %s holds one (not "
                                 "run by a job launcher?)",
                                 pattern, vars);
            }
            fprintf(out, "%lld", rank);
            break;
        }
        case 'q': {
            const char *value;
            if (name_variable(pattern, &p, &value, error) < 0)
                return -EINVAL;
            fputs(value, out);
            break;
        }
        case '\0':
            return name_fail(error, "-o '%s': a '%%' ends the name (%%%% writes a percent sign)",
                             pattern);
        default:
            return name_fail(error,
                             "-o '%s': unknown pattern '%%%c' (known: %%r rank, %%h host, %%p "
                             "pid, %%q{VAR} environment variable, %%n first free number, %%%%)",
                             pattern, code);
        }
    }
    return 0;
}

static int path_exists(const char *path)
{
    struct stat st;
    return lstat(path, &st) == 0;
}

/* The name with number, malloc'd; *free_name says whether neither it nor its session folder
 * NAME.raw exists. 0, or launcher_output_name's error. */
static int name_try(const char *pattern, unsigned number, char **name, int *numbered,
                    int *free_name, char **error)
{
    size_t len;
    FILE *out = open_memstream(name, &len);
    if (!out)
        return name_out_of_memory(error);
    int rc = name_expand(pattern, number, out, numbered, error);
    if (fclose(out) != 0 && rc == 0)
        rc = name_out_of_memory(error);
    if (rc < 0) {
        free(*name);
        *name = NULL;
        return rc;
    }
    if (!**name) {
        free(*name);
        *name = NULL;
        return name_fail(error, "-o '%s': the name is empty", pattern);
    }
    char *raw;
    if (asprintf(&raw, "%s.raw", *name) < 0) {
        free(*name);
        *name = NULL;
        return name_out_of_memory(error);
    }
    *free_name = !path_exists(*name) && !path_exists(raw);
    free(raw);
    return 0;
}

int launcher_output_name(const char *pattern, char **name, char **error)
{
    *name = *error = NULL;
    for (unsigned number = 1; number < NAME_MAX_NUMBER; number++) {
        int numbered, free_name, rc = name_try(pattern, number, name, &numbered, &free_name, error);
        if (rc < 0)
            return rc;
        if (!numbered || free_name)
            return 0;
        free(*name);
        *name = NULL;
    }
    name_fail(error, "-o '%s': no free number for %%n (1 to %u are taken)", pattern,
              NAME_MAX_NUMBER - 1);
    return -ENOSPC;
}

char *launcher_default_output(void)
{
    char *name, *error;
    launcher_output_name("lantern-%n.db", &name, &error);
    free(error);
    return name;
}
