/* The export's tables against the list of event sources (src/trace/sources.def): every source
 * has a track producer in every format, every row names a source of the list and a function,
 * and every format has a name, an extension and a writer. A source added to sources.def without
 * its export files fails here. */
#include "export/export.h"
#include "export/producers.h"
#include "harness.h"

static const char *const source_names[] = {
#define SOURCE(ID, name, flag, first, last, where, needs_gpu, by_default, description) name,
#include "trace/sources.def"
#undef SOURCE
};

static size_t chrome_rows(int source)
{
    size_t rows = 0;
    for (size_t i = 0; i < chrome_producer_count; i++)
        rows += (int)chrome_producers[i].source == source;
    return rows;
}

static size_t perfetto_rows(int source)
{
    size_t rows = 0;
    for (size_t i = 0; i < perfetto_producer_count; i++)
        rows += (int)perfetto_producers[i].source == source;
    return rows;
}

static void test_every_source_has_tracks_in_every_format(void)
{
    for (int s = 0; s < EXPORT_SOURCE_COUNT; s++) {
        if (!chrome_rows(s) || !perfetto_rows(s))
            fprintf(stderr, "source '%s': %zu Chrome and %zu Perfetto producers\n", source_names[s],
                    chrome_rows(s), perfetto_rows(s));
        ASSERT(chrome_rows(s) > 0);
        ASSERT(perfetto_rows(s) > 0);
    }
}

static void test_every_row_names_a_source_and_a_function(void)
{
    for (size_t i = 0; i < chrome_producer_count; i++) {
        ASSERT(chrome_producers[i].source < EXPORT_SOURCE_COUNT);
        ASSERT(chrome_producers[i].produce != NULL);
    }
    for (size_t i = 0; i < perfetto_producer_count; i++) {
        ASSERT(perfetto_producers[i].source < EXPORT_SOURCE_COUNT);
        ASSERT(perfetto_producers[i].produce != NULL);
    }
}

static void test_formats_are_named_once_with_an_extension_and_a_writer(void)
{
    ASSERT_EQ(export_format_count, 2);
    ASSERT_STR_EQ(export_formats[0].name, "chrome");
    ASSERT_STR_EQ(export_formats[0].extension, ".json");
    ASSERT_STR_EQ(export_formats[1].name, "perfetto");
    ASSERT_STR_EQ(export_formats[1].extension, ".perfetto-trace");
    for (size_t i = 0; i < export_format_count; i++) {
        ASSERT(export_formats[i].write != NULL && export_formats[i].help != NULL);
        for (size_t j = 0; j < i; j++)
            ASSERT(strcmp(export_formats[i].name, export_formats[j].name) != 0);
    }
}

static const struct test_case tests[] = {
    {"every_source_has_tracks_in_every_format", test_every_source_has_tracks_in_every_format},
    {"every_row_names_a_source_and_a_function", test_every_row_names_a_source_and_a_function},
    {"formats_are_named_once_with_an_extension_and_a_writer",
     test_formats_are_named_once_with_an_extension_and_a_writer},
    {NULL, NULL},
};

int main(int argc, char **argv)
{
    return test_main(tests, argc, argv);
}
