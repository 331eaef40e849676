/* The CPU samples' part of the Perfetto trace: each sample a PerfSample packet (pid, tid,
 * user mode, its callstack), thread by thread in time order, one packet sequence per thread.
 * Callstacks, frames, function names and mappings are interned per sequence as Perfetto's own
 * profilers intern them, straight from the database's interning (docs/schema.md): a callstack
 * is a cpu_callsites row (its frames from the outermost to the leaf), a frame a cpu_frames row,
 * a mapping a module (a synthetic address range each, since frames carry names, not
 * addresses). ui.perfetto.dev then shows the samples on the thread tracks, with flame graphs
 * of any selection. docs/export.md. */
#include "export/perfetto_writer.h"
#include "export/producers.h"
#include "model/cpu_profile.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#define CPU_MAX_DEPTH 256 /* as the model: deeper callsites are damage */

struct cpu_interning {
    struct cpu_profile p;
    uint64_t *frame_mapping; /* by frame: its module's mapping iid (1 + index in modules) */
    const char **modules;    /* distinct module names */
    size_t module_count;
    uint32_t *callstacks_seen, *frames_seen, *mappings_seen; /* by iid: the sequence */
    size_t callstacks_cap, frames_cap, mappings_cap;
};

static int number_modules(struct cpu_interning *c)
{
    c->frame_mapping = calloc(c->p.frames ? c->p.frames : 1, sizeof *c->frame_mapping);
    c->modules = calloc(c->p.frames ? c->p.frames : 1, sizeof *c->modules);
    if (!c->frame_mapping || !c->modules)
        return -ENOMEM;
    for (size_t f = 1; f < c->p.frames; f++) {
        const char *m = c->p.module[f] ? c->p.module[f] : "[unknown]";
        size_t k = 0;
        while (k < c->module_count && strcmp(c->modules[k], m))
            k++;
        if (k == c->module_count)
            c->modules[c->module_count++] = m;
        c->frame_mapping[f] = k + 1;
    }
    return 0;
}

static void intern_mapping(struct perfetto_writer *w, struct cpu_interning *c, uint64_t iid)
{
    if (perfetto_interned_seen(w, &c->mappings_seen, &c->mappings_cap, iid))
        return;
    const char *path = c->modules[iid - 1];
    perfetto_interned_string(w, PF_INTERNED_MAPPING_PATHS, iid, path, strlen(path));
    size_t m = perfetto_interned_begin(w, PF_INTERNED_MAPPINGS);
    pb_uint(&w->interned, PF_MAPPING_IID, iid);
    pb_uint(&w->interned, PF_MAPPING_START, iid << 32); /* one range of addresses each */
    pb_uint(&w->interned, PF_MAPPING_END, (iid << 32) + 0xffffffffu);
    pb_uint(&w->interned, PF_MAPPING_PATH_STRING_IDS, iid);
    pb_end(&w->interned, m);
}

static void intern_frame(struct perfetto_writer *w, struct cpu_interning *c, int64_t frame)
{
    if (perfetto_interned_seen(w, &c->frames_seen, &c->frames_cap, (uint64_t)frame))
        return;
    uint64_t mapping = c->frame_mapping[frame];
    intern_mapping(w, c, mapping);
    const char *name = c->p.name[frame];
    perfetto_interned_string(w, PF_INTERNED_FUNCTION_NAMES, (uint64_t)frame, name, strlen(name));
    size_t m = perfetto_interned_begin(w, PF_INTERNED_FRAMES);
    pb_uint(&w->interned, PF_FRAME_IID, (uint64_t)frame);
    pb_uint(&w->interned, PF_FRAME_FUNCTION_NAME_ID, (uint64_t)frame);
    pb_uint(&w->interned, PF_FRAME_MAPPING_ID, mapping);
    pb_uint(&w->interned, PF_FRAME_REL_PC, 0);
    pb_end(&w->interned, m);
}

/* The callstack of a leaf callsite, its frames and their names and mappings, interned in the
 * current sequence if it has not seen them. */
static void intern_callstack(struct perfetto_writer *w, struct cpu_interning *c, int64_t leaf)
{
    if (perfetto_interned_seen(w, &c->callstacks_seen, &c->callstacks_cap, (uint64_t)leaf))
        return;
    int64_t frames[CPU_MAX_DEPTH];
    int n = 0;
    for (int64_t cs = leaf; cs > 0 && n < CPU_MAX_DEPTH; cs = c->p.parent[cs])
        if (c->p.frame[cs])
            frames[n++] = c->p.frame[cs];
    for (int i = 0; i < n; i++)
        intern_frame(w, c, frames[i]);
    size_t m = perfetto_interned_begin(w, PF_INTERNED_CALLSTACKS);
    pb_uint(&w->interned, PF_CALLSTACK_IID, (uint64_t)leaf);
    for (int i = n; i-- > 0;) /* the outermost first */
        pb_uint(&w->interned, PF_CALLSTACK_FRAME_IDS, (uint64_t)frames[i]);
    pb_end(&w->interned, m);
}

int perfetto_cpu_samples(struct perfetto_writer *w);

int perfetto_cpu_samples(struct perfetto_writer *w)
{
    if (!cpu_profile_has_samples(w->db))
        return 0; /* nothing written: a session without samples exports as before */
    struct cpu_interning c;
    memset(&c, 0, sizeof c);
    sqlite3_stmt *st = NULL;
    int rc = -EIO;
    if (cpu_profile_load(w->db, &c.p) < 0 || number_modules(&c) < 0 ||
        sqlite3_prepare_v2(w->db,
                           "SELECT s.thread_id, p.pid, t.tid, s.ts_ns, ifnull(s.stack_id, 0)"
                           " FROM cpu_samples s JOIN threads t ON t.id = s.thread_id"
                           " JOIN processes p ON p.id = t.process_id ORDER BY s.thread_id, s.ts_ns",
                           -1, &st, NULL) != SQLITE_OK)
        goto out;
    int64_t thread = -1;
    int step;
    while ((step = sqlite3_step(st)) == SQLITE_ROW && !w->write_failed) {
        if (sqlite3_column_int64(st, 0) != thread) { /* a sequence per thread */
            thread = sqlite3_column_int64(st, 0);
            perfetto_run_begin(w, PERFETTO_THREAD_TRACK(thread));
        }
        int64_t stack = sqlite3_column_int64(st, 4);
        int64_t leaf = stack > 0 && (size_t)stack < c.p.stacks ? c.p.stack_callsite[stack] : 0;
        perfetto_payload_begin(w);
        pb_uint(&w->event, PF_PERF_SAMPLE_PID, (uint64_t)sqlite3_column_int64(st, 1));
        pb_uint(&w->event, PF_PERF_SAMPLE_TID, (uint64_t)sqlite3_column_int64(st, 2));
        pb_uint(&w->event, PF_PERF_SAMPLE_CPU_MODE, PF_CPU_MODE_USER);
        if (leaf > 0) { /* none: the thread was in the kernel, no user-space frame */
            intern_callstack(w, &c, leaf);
            pb_uint(&w->event, PF_PERF_SAMPLE_CALLSTACK_IID, (uint64_t)leaf);
        }
        perfetto_payload_end(w, (uint64_t)sqlite3_column_int64(st, 3), PF_PACKET_PERF_SAMPLE);
    }
    rc = step == SQLITE_DONE || w->write_failed ? 0 : -EIO;
out:
    sqlite3_finalize(st);
    cpu_profile_release(&c.p);
    free(c.frame_mapping);
    free(c.modules);
    free(c.callstacks_seen);
    free(c.frames_seen);
    free(c.mappings_seen);
    return rc;
}
