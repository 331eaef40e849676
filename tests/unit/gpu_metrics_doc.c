/* docs/gpu-metrics.md's table of metrics, generated from src/trace/gpu_metrics.def (through
 * the table in gpu_metrics.h): between
 *   <!-- metrics: generated from src/trace/gpu_metrics.def -->
 *   <!-- end metrics -->
 * one row per metric: its column, unit, definition, the CUPTI PM-sampling metrics tried (in
 * order) and the NVML GPM metric. `gpu_metrics_doc FILE` fails, saying how to fix it, when the
 * table differs (ctest gpu_metrics_doc); `gpu_metrics_doc FILE --update` rewrites it
 * (cmake --build build --target gpu-metrics-doc). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "trace/gpu_metrics.h"

#define BEGIN_MARK "<!-- metrics: generated from src/trace/gpu_metrics.def -->\n"
#define END_MARK "<!-- end metrics -->"

/* nvmlGpmMetricId_t's names (nvml.h) of the ids gpu_metrics.def uses. */
static const struct {
    unsigned id;
    const char *name;
} gpm_names[] = {
    {1, "GRAPHICS_UTIL"},
    {2, "SM_UTIL"},
    {3, "SM_OCCUPANCY"},
    {5, "ANY_TENSOR_UTIL"},
    {6, "DFMA_TENSOR_UTIL"},
    {7, "HMMA_TENSOR_UTIL"},
    {9, "IMMA_TENSOR_UTIL"},
    {10, "DRAM_BW_UTIL"},
    {20, "PCIE_TX_PER_SEC"},
    {21, "PCIE_RX_PER_SEC"},
    {60, "NVLINK_TOTAL_RX_PER_SEC"},
    {61, "NVLINK_TOTAL_TX_PER_SEC"},
};

struct text {
    char *p;
    size_t len, cap;
};

static void add(struct text *t, const char *s, size_t len)
{
    if (t->len + len + 1 > t->cap) {
        t->cap = (t->len + len + 1) * 2;
        t->p = realloc(t->p, t->cap);
        if (!t->p)
            abort();
    }
    memcpy(t->p + t->len, s, len);
    t->len += len;
    t->p[t->len] = '\0';
}

static void str(struct text *t, const char *s)
{
    add(t, s, strlen(s));
}

/* "a|b+c" as "`a`, else `b` + `c`". */
static void candidates(struct text *t, const char *list)
{
    for (const char *p = list; *p;) {
        size_t n = strcspn(p, "|+");
        str(t, "`");
        add(t, p, n);
        str(t, "`");
        if (!p[n])
            break;
        str(t, p[n] == '|' ? ", else " : " + ");
        p += n + 1;
    }
}

static void put_table(struct text *t)
{
    str(t, "| column | unit | what it measures | CUPTI PM sampling (the first the chip accepts) | "
           "NVML GPM |\n|---|---|---|---|---|\n");
    for (int i = 0; i < GPU_METRIC_COUNT; i++) {
        const struct gpu_metric *m = &gpu_metrics[i];
        char cell[160] = "none";
        for (size_t k = 0; m->gpm_id && k < sizeof gpm_names / sizeof gpm_names[0]; k++)
            if (gpm_names[k].id == m->gpm_id)
                snprintf(cell, sizeof cell, "`NVML_GPM_METRIC_%s` (%u)%s", gpm_names[k].name,
                         m->gpm_id, m->gpm_scale != 1.0 ? ", MiB/s × 1 048 576" : "");
        str(t, "| `");
        str(t, m->column);
        str(t, "` | ");
        str(t, m->unit);
        str(t, " | ");
        str(t, m->definition);
        str(t, " | ");
        candidates(t, m->cupti);
        str(t, " | ");
        str(t, cell);
        str(t, " |\n");
    }
}

static char *read_file(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    struct text t = {0};
    char chunk[65536];
    size_t n;
    while ((n = fread(chunk, 1, sizeof chunk, f)) > 0)
        add(&t, chunk, n);
    fclose(f);
    if (!t.p)
        add(&t, "", 0);
    *len = t.len;
    return t.p;
}

int main(int argc, char **argv)
{
    if (argc < 2 || (argc == 3 && strcmp(argv[2], "--update") != 0) || argc > 3) {
        fprintf(stderr, "usage: gpu_metrics_doc docs/gpu-metrics.md [--update]\n");
        return 2;
    }
    const char *path = argv[1];
    size_t len;
    char *doc = read_file(path, &len);
    if (!doc) {
        fprintf(stderr, "lantern: cannot read '%s'\n", path);
        return 2;
    }
    const char *begin = strstr(doc, BEGIN_MARK);
    const char *end = begin ? strstr(begin, END_MARK) : NULL;
    if (!end) {
        fprintf(stderr, "lantern: %s: no '%.40s' ... '%s' markers\n", path, BEGIN_MARK, END_MARK);
        free(doc);
        return 1;
    }
    struct text out = {0};
    add(&out, doc, (size_t)(begin - doc) + strlen(BEGIN_MARK));
    put_table(&out);
    add(&out, end, len - (size_t)(end - doc));
    int rc = 1;
    if (out.len == len && memcmp(out.p, doc, len) == 0) {
        rc = 0;
    } else if (argc == 3) {
        char tmp[4096];
        snprintf(tmp, sizeof tmp, "%s.tmp", path);
        FILE *f = fopen(tmp, "wb");
        int ok = f && fwrite(out.p, 1, out.len, f) == out.len;
        if (f && fclose(f) != 0)
            ok = 0;
        if (ok && rename(tmp, path) == 0) {
            printf("updated %s\n", path);
            rc = 0;
        } else {
            fprintf(stderr, "lantern: cannot write '%s'\n", path);
        }
    } else {
        fprintf(stderr,
                "lantern: %s: the metrics table differs from src/trace/gpu_metrics.def; "
                "regenerate it with: cmake --build build --target gpu-metrics-doc\n",
                path);
    }
    free(doc);
    free(out.p);
    return rc;
}
