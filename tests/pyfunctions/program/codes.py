"""A server that compiles new code for each request (test_python_functions.py): N distinct
code objects, each a function `handler` (returning I) defined by exec and called once, none
kept by the program (one name for all: Python keeps the names it interns). Prints the process's RssAnon (KiB) after 40 % of them and at the end: the agent's
table of code objects must stop growing at its cap. Usage: codes.py N"""
import sys


def rss_anon_kib():
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith("RssAnon:"):
                return int(line.split()[1])
    return -1


n = int(sys.argv[1])
for i in range(n):
    namespace = {"__name__": "__main__"}
    exec(compile(f"def handler():\n    return {i}\n", "<request>", "exec"), namespace)
    namespace["handler"]()
    if i == n * 2 // 5:
        print("rss", rss_anon_kib(), flush=True)
print("rss", rss_anon_kib(), flush=True)
