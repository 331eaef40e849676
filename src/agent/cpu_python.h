/* Python stacks for the CPU samples (-t cpu in a CPython 3.10-3.13 process): a sampler thread
 * of the agent reads, every millisecond, the Python stack of each Python thread that ran since
 * its last look, and whether a thread that did not run waits for the GIL; the writer's drain
 * (cpu_sampling.c) writes what it found as TRACE_PY_* records, which the importer joins with
 * the native samples (docs/cpu.md, "Python"). */
#ifndef LANTERN_AGENT_CPU_PYTHON_H
#define LANTERN_AGENT_CPU_PYTHON_H

#include <stdint.h>

struct trace_cpu_sampler;

/* At each drain of the CPU sampler, writer lock held: starts the sampler thread the first
 * time the process runs an initialised CPython (only where `may_start`: on the writer thread;
 * it looks every period_ns, at least 1 ms), and writes its status (TRACE_CPU_SAMPLING's Python
 * fields, with native_reason: how the native samples are taken) and the looks it took; `final`
 * stops it. A process without Python pays one failed dlsym, once. */
void cpu_python_drain(int final, int may_start, uint64_t period_ns, const char *native_reason);

/* The Python sampler's totals into TRACE_CPU_SAMPLER's Python fields (none without it). */
void cpu_python_totals(struct trace_cpu_sampler *rec);

/* The sampler thread's OS tid (0: none): the native sampler leaves it out. */
uint32_t cpu_python_sampler_tid(void);

/* A benchmark's switch of CPU sampling alone (LANTERN_TEST_CPU_SWITCH, cpu_sampling.c): while
 * off, the sampler thread takes no look, as while the session is paused. */
void cpu_python_switch(int on);

/* In a fork child: the sampler thread is not there; it starts again at the child's drain. */
void cpu_python_at_fork_child(void);

#endif
