/* docs/gpu-metrics.md's table of metrics, generated from src/trace/gpu_metrics.def (through
 * the table in gpu_metrics.h): between
 *   <!-- metrics: generated from src/trace/gpu_metrics.def -->
 *   <!-- end metrics -->
 * one row per metric: its column, unit, definition, the CUPTI PM-sampling metrics tried (in
 * order) and the NVML GPM metric. `gpu_metrics_doc FILE` fails, saying how to fix it, when the
 * table differs (ctest gpu_metrics_doc); `gpu_metrics_doc FILE --update` rewrites it
 * (cmake --build build --target gpu-metrics-doc); unit/doc_tables.c does both. */
#include <stdio.h>
#include <string.h>

#include "trace/gpu_metrics.h"
#include "unit/doc_tables.h"

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

/* "a|b+c" as "`a`, else `b` + `c`". */
static void candidates(struct doc_text *t, const char *list)
{
    for (const char *p = list; *p;) {
        size_t n = strcspn(p, "|+");
        doc_text_str(t, "`");
        doc_text_add(t, p, n);
        doc_text_str(t, "`");
        if (!p[n])
            break;
        doc_text_str(t, p[n] == '|' ? ", else " : " + ");
        p += n + 1;
    }
}

static int put_table(struct doc_text *t, const char *line)
{
    (void)line;
    doc_text_str(
        t, "| column | unit | what it measures | CUPTI PM sampling (the first the chip accepts) | "
           "NVML GPM |\n|---|---|---|---|---|\n");
    for (int i = 0; i < GPU_METRIC_COUNT; i++) {
        const struct gpu_metric *m = &gpu_metrics[i];
        char cell[160] = "none";
        for (size_t k = 0; m->gpm_id && k < sizeof gpm_names / sizeof gpm_names[0]; k++)
            if (gpm_names[k].id == m->gpm_id)
                snprintf(cell, sizeof cell, "`NVML_GPM_METRIC_%s` (%u)%s", gpm_names[k].name,
                         m->gpm_id, m->gpm_scale != 1.0 ? ", MiB/s × 1 048 576" : "");
        doc_text_str(t, "| `");
        doc_text_str(t, m->column);
        doc_text_str(t, "` | ");
        doc_text_str(t, m->unit);
        doc_text_str(t, " | ");
        doc_text_str(t, m->definition);
        doc_text_str(t, " | ");
        candidates(t, m->cupti);
        doc_text_str(t, " | ");
        doc_text_str(t, cell);
        doc_text_str(t, " |\n");
    }
    return 0;
}

int main(int argc, char **argv)
{
    static const struct doc_tables tables = {
        .usage = "gpu_metrics_doc docs/gpu-metrics.md",
        .begin = "<!-- metrics: generated from src/trace/gpu_metrics.def -->",
        .end = "<!-- end metrics -->",
        .source = "src/trace/gpu_metrics.def",
        .target = "gpu-metrics-doc",
        .put = put_table,
    };
    return doc_tables_main(argc, argv, &tables);
}
