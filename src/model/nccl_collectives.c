/* NCCL as nccl_sum sees it (nccl.h): the table of collectives with nccl-tests' conventions, the
 * parsing of NCCL's kernel names (src/device/generate.py and symmetric/generate.py of NCCL
 * name them), and the SQL functions over both. */
#include "model/nccl.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* nccl-tests' doc/PERFORMANCE.md: bus bandwidth = algorithm bandwidth x the factor of the
 * row's formula; its size for AllGather and ReduceScatter is the whole buffer, n times the
 * part NCCL's payload gives. AllToAll, Gather and Scatter (NCCL 2.28's ncclAlltoAll,
 * ncclGather, ncclScatter) take their count per rank, so their payload is taken the same way:
 * not yet checked against a trace of them. Send and Recv are one call each of a pair; the
 * SendRecv kernel runs both. */
const struct nccl_collective nccl_collectives[] = {
    {"AllReduce", "ncclAllReduce", "AllReduce", NCCL_BUSBW_ALLREDUCE, 0},
    {"AllGather", "ncclAllGather", "AllGather", NCCL_BUSBW_N_MINUS_1_OVER_N, 1},
    {"ReduceScatter", "ncclReduceScatter", "ReduceScatter", NCCL_BUSBW_N_MINUS_1_OVER_N, 1},
    {"Broadcast", "ncclBroadcast", "Broadcast", NCCL_BUSBW_ONE, 0},
    {"Reduce", "ncclReduce", "Reduce", NCCL_BUSBW_ONE, 0},
    {"Send", "ncclSend", "SendRecv", NCCL_BUSBW_ONE, 0},
    {"Recv", "ncclRecv", "SendRecv", NCCL_BUSBW_ONE, 0},
    {"AllToAll", "ncclAlltoAll", "SendRecv", NCCL_BUSBW_N_MINUS_1_OVER_N, 1},
    {"Gather", "ncclGather", "SendRecv", NCCL_BUSBW_N_MINUS_1_OVER_N, 1},
    {"Scatter", "ncclScatter", "SendRecv", NCCL_BUSBW_N_MINUS_1_OVER_N, 1},
    {"SendRecv", NULL, "SendRecv", NCCL_BUSBW_ONE, 0},   /* a kernel without its calls' ranges */
    {"Generic", NULL, "Generic", NCCL_BUSBW_UNKNOWN, 0}, /* a kernel of several collectives */
    {NULL, NULL, NULL, NCCL_BUSBW_UNKNOWN, 0},
};

const struct nccl_collective *nccl_collective_named(const char *name)
{
    for (const struct nccl_collective *c = nccl_collectives; name && c->name; c++)
        if (!strcmp(c->name, name))
            return c;
    return NULL;
}

double nccl_busbw_factor(const struct nccl_collective *c, long n)
{
    if (!c || n < 1)
        return -1;
    switch (c->busbw) {
    case NCCL_BUSBW_ALLREDUCE:
        return 2.0 * (double)(n - 1) / (double)n;
    case NCCL_BUSBW_N_MINUS_1_OVER_N:
        return (double)(n - 1) / (double)n;
    case NCCL_BUSBW_ONE:
        return 1;
    default:
        return -1;
    }
}

int nccl_kernel_runs(const struct nccl_collective *c, const char *kernel_collective)
{
    return c && kernel_collective &&
           (!strcmp(kernel_collective, "Generic") || !strcmp(kernel_collective, c->kernel));
}

/* ---- kernel names ---- */

/* The collective a kernel name's first word stands for. */
static const struct {
    const char *word, *collective;
} nccl_kernel_words[] = {
    {"AllReduce", "AllReduce"}, {"Reduce", "Reduce"},        {"ReduceScatter", "ReduceScatter"},
    {"AllGather", "AllGather"}, {"AllGatherV", "AllGather"}, {"Broadcast", "Broadcast"},
    {"SendRecv", "SendRecv"},   {"Generic", "Generic"},
};

static const char *nccl_kernel_collective(const char *word)
{
    for (size_t i = 0; i < sizeof nccl_kernel_words / sizeof nccl_kernel_words[0]; i++)
        if (!strcmp(nccl_kernel_words[i].word, word))
            return nccl_kernel_words[i].collective;
    return NULL;
}

static int nccl_is_reduction(const char *collective)
{
    return !strcmp(collective, "AllReduce") || !strcmp(collective, "Reduce") ||
           !strcmp(collective, "ReduceScatter");
}

static int nccl_is_proto(const char *word)
{
    return !strcmp(word, "LL") || !strcmp(word, "LL128") || !strcmp(word, "SIMPLE");
}

#define NCCL_MAX_WORDS 16

/* words [from, to) joined by '_' into dst (always terminated). */
static void nccl_join(char *dst, size_t size, char **words, int from, int to)
{
    size_t len = 0;
    dst[0] = 0;
    for (int i = from; i < to && len + 1 < size; i++) {
        int n = snprintf(dst + len, size - len, "%s%s", i > from ? "_" : "", words[i]);
        if (n < 0)
            break;
        len += (size_t)n;
    }
}

static void nccl_copy(char *dst, size_t size, const char *src)
{
    snprintf(dst, size, "%s", src);
}

/* Each form's parser is given the words after its prefix and k with its collective, the one
 * the first word names (nccl_parse_kernel); it fills in the rest. */

/* ncclDevKernel_<Coll>[_<redop>_<type>]_<ALGO>_<PROTO>, ncclDevKernel_SendRecv,
 * ncclDevKernel_Generic[_N] (NCCL 2.19+). */
static void nccl_parse_dev(char **w, int n, struct nccl_kernel *k)
{
    if (!strcmp(k->collective, "SendRecv") || !strcmp(k->collective, "Generic"))
        return;
    int first = 1;
    if (nccl_is_reduction(k->collective)) {
        if (n < 3)
            return;
        nccl_copy(k->redop, sizeof k->redop, w[1]);
        nccl_copy(k->type, sizeof k->type, w[2]);
        first = 3;
    }
    int last = n;
    if (n > first && nccl_is_proto(w[n - 1]))
        nccl_copy(k->proto, sizeof k->proto, w[--last]);
    nccl_join(k->algo, sizeof k->algo, w, first, last);
}

/* ncclSymkDevKernel_<Coll>_<algo>[_<red>_<type>][_profile] (symmetric kernels, NCCL 2.27+). */
static void nccl_parse_symmetric(char **w, int n, struct nccl_kernel *k)
{
    if (n > 1 && !strcmp(w[n - 1], "profile"))
        n--;
    int last = n;
    if (nccl_is_reduction(k->collective) && n >= 4) {
        nccl_copy(k->type, sizeof k->type, w[n - 1]);
        nccl_copy(k->redop, sizeof k->redop, w[n - 2]);
        last = n - 2;
    }
    nccl_join(k->algo, sizeof k->algo, w, 1, last);
}

/* ncclKernel_<Coll>_<ALGO>_<PROTO>_<redop>_<type> (NCCL 2.12-2.18), the type a C name
 * (float, int8_t, __nv_bfloat16). */
static void nccl_parse_old(char **w, int n, struct nccl_kernel *k)
{
    int proto = 1;
    while (proto < n && !nccl_is_proto(w[proto]))
        proto++;
    if (proto == n)
        return;
    if (strcmp(k->collective, "SendRecv") != 0) {
        nccl_join(k->algo, sizeof k->algo, w, 1, proto);
        nccl_copy(k->proto, sizeof k->proto, w[proto]);
    }
    if (nccl_is_reduction(k->collective) && proto + 1 < n)
        nccl_copy(k->redop, sizeof k->redop, w[proto + 1]);
    /* a type may hold '_' (int8_t, __nv_bfloat16): its words rejoined, empty ones too */
    if (proto + 2 < n)
        nccl_join(k->type, sizeof k->type, w, proto + 2, n);
}

static const struct {
    const char *prefix;
    void (*parse)(char **words, int n, struct nccl_kernel *k);
} nccl_kernel_forms[] = {
    {"ncclDevKernel_", nccl_parse_dev},
    {"ncclSymkDevKernel_", nccl_parse_symmetric},
    {"ncclKernel_", nccl_parse_old},
};

/* The function's identifier: a demangled name up to its '(' (after a return type "void "), a
 * mangled one (_Z<len><id>...) its <id>. NULL when there is none. */
static const char *nccl_identifier(const char *name, size_t *len)
{
    if (strncmp(name, "void ", 5) == 0)
        name += 5;
    if (name[0] == '_' && name[1] == 'Z') {
        char *end;
        unsigned long n = strtoul(name + 2, &end, 10);
        if (end == name + 2 || n == 0 || strnlen(end, n) < n)
            return NULL;
        *len = n;
        return end;
    }
    *len = strcspn(name, "(<");
    return name;
}

int nccl_parse_kernel(const char *name, struct nccl_kernel *k)
{
    memset(k, 0, sizeof *k);
    size_t len;
    const char *id = name ? nccl_identifier(name, &len) : NULL;
    char buf[160];
    if (!id || len >= sizeof buf)
        return 0;
    memcpy(buf, id, len);
    buf[len] = 0;
    for (size_t f = 0; f < sizeof nccl_kernel_forms / sizeof nccl_kernel_forms[0]; f++) {
        size_t plen = strlen(nccl_kernel_forms[f].prefix);
        if (strncmp(buf, nccl_kernel_forms[f].prefix, plen) != 0)
            continue;
        char *words[NCCL_MAX_WORDS];
        int n = 0;
        for (char *p = buf + plen; n < NCCL_MAX_WORDS; p++) {
            words[n++] = p;
            if (!(p = strchr(p, '_')))
                break;
            *p = 0;
        }
        const char *collective = nccl_kernel_collective(words[0]);
        if (!collective)
            return 0;
        nccl_copy(k->collective, sizeof k->collective, collective);
        nccl_kernel_forms[f].parse(words, n, k);
        return 1;
    }
    return 0;
}

/* ---- SQL ---- */

/* The last name parsed, per connection: lantern_nccl_kernel is called for several fields of
 * each kernel in a row. */
struct nccl_kernel_cache {
    char *name;
    int is_nccl;
    struct nccl_kernel k;
};

static void nccl_cache_free(void *p)
{
    struct nccl_kernel_cache *c = p;
    if (c)
        free(c->name);
    free(c);
}

static void nccl_spec(const struct nccl_kernel *k, char *out, size_t size)
{
    if (!k->algo[0]) {
        nccl_copy(out, size, k->collective);
        return;
    }
    snprintf(out, size, "%s%s%s%s%s", k->algo, k->proto[0] ? "_" : "", k->proto,
             k->type[0] ? " " : "", k->type);
}

static void sql_nccl_kernel(sqlite3_context *ctx, int argc, sqlite3_value **argv)
{
    (void)argc;
    struct nccl_kernel_cache *c = sqlite3_user_data(ctx);
    const char *name = (const char *)sqlite3_value_text(argv[0]);
    const char *field = (const char *)sqlite3_value_text(argv[1]);
    if (!name || !field)
        return;
    if (!c->name || strcmp(c->name, name) != 0) {
        free(c->name);
        c->name = strdup(name);
        c->is_nccl = c->name && nccl_parse_kernel(name, &c->k);
    }
    if (!c->is_nccl)
        return;
    char spec[128];
    const char *value = !strcmp(field, "collective") ? c->k.collective
                        : !strcmp(field, "algo")     ? c->k.algo
                        : !strcmp(field, "proto")    ? c->k.proto
                        : !strcmp(field, "redop")    ? c->k.redop
                        : !strcmp(field, "type")     ? c->k.type
                                                     : NULL;
    if (!strcmp(field, "spec")) {
        nccl_spec(&c->k, spec, sizeof spec);
        value = spec;
    }
    if (value && value[0])
        sqlite3_result_text(ctx, value, -1, SQLITE_TRANSIENT);
}

static void sql_nccl_busbw(sqlite3_context *ctx, int argc, sqlite3_value **argv)
{
    (void)argc;
    double f = nccl_busbw_factor(nccl_collective_named((const char *)sqlite3_value_text(argv[0])),
                                 (long)sqlite3_value_int64(argv[1]));
    if (f >= 0 && sqlite3_value_type(argv[1]) != SQLITE_NULL)
        sqlite3_result_double(ctx, f);
}

static void sql_nccl_runs(sqlite3_context *ctx, int argc, sqlite3_value **argv)
{
    (void)argc;
    sqlite3_result_int(
        ctx, nccl_kernel_runs(nccl_collective_named((const char *)sqlite3_value_text(argv[0])),
                              (const char *)sqlite3_value_text(argv[1])));
}

static void sql_nccl_size(sqlite3_context *ctx, int argc, sqlite3_value **argv)
{
    (void)argc;
    const struct nccl_collective *c =
        nccl_collective_named((const char *)sqlite3_value_text(argv[0]));
    if (sqlite3_value_type(argv[1]) == SQLITE_NULL)
        return;
    sqlite3_int64 bytes = sqlite3_value_int64(argv[1]);
    if (c && c->size_is_per_rank) {
        if (sqlite3_value_type(argv[2]) == SQLITE_NULL)
            return;
        bytes *= sqlite3_value_int64(argv[2]);
    }
    sqlite3_result_int64(ctx, bytes);
}

int nccl_sql_register(sqlite3 *db)
{
    struct nccl_kernel_cache *cache = calloc(1, sizeof *cache);
    if (!cache)
        return SQLITE_NOMEM;
    int rc = sqlite3_create_function_v2(db, "lantern_nccl_kernel", 2, SQLITE_UTF8, cache,
                                        sql_nccl_kernel, NULL, NULL, nccl_cache_free);
    if (rc == SQLITE_OK)
        rc =
            sqlite3_create_function(db, "lantern_nccl_busbw", 2, SQLITE_UTF8 | SQLITE_DETERMINISTIC,
                                    NULL, sql_nccl_busbw, NULL, NULL);
    if (rc == SQLITE_OK)
        rc = sqlite3_create_function(db, "lantern_nccl_runs", 2, SQLITE_UTF8 | SQLITE_DETERMINISTIC,
                                     NULL, sql_nccl_runs, NULL, NULL);
    if (rc == SQLITE_OK)
        rc = sqlite3_create_function(db, "lantern_nccl_size", 3, SQLITE_UTF8 | SQLITE_DETERMINISTIC,
                                     NULL, sql_nccl_size, NULL, NULL);
    return rc == SQLITE_OK ? 0 : -rc;
}
