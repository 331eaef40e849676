"""What the CPU-sampling tests of tests/cpu/ share (pytest puts this folder on their path)."""


def perf_events_allowed():
    """Unprivileged perf events: kernel.perf_event_paranoid 2 or less."""
    try:
        with open("/proc/sys/kernel/perf_event_paranoid") as f:
            return int(f.read()) <= 2
    except OSError:
        return False
