#!/usr/bin/env bash
# Checks that two builds of the importer write the same database: every table's rows in rowid
# order, the schema, and the indexes (`sqlite3 .dump`; the indexes compared as a set, as the
# order they were created in is not the data's), and the same messages and exit status, for
# the sessions it makes or is given: a
# bench_import_cuda session (CUDA + NVTX, two processes), the same with one raw file cut in
# the middle of a chunk (imported up to the damage), tests/import/v3-session, and any
# SESSION_DIR named. For importer changes meant to be speed only (docs/benchmarks.md,
# "Importer").
#   scripts/import-identical.sh BASE_BUILD NEW_BUILD [SESSION_DIR...]
# e.g. a build of main in /tmp/lantern-base/build against build/. Exits 1 on any difference.
set -uo pipefail
if [ $# -lt 2 ]; then
    echo "usage: $0 BASE_BUILD NEW_BUILD [SESSION_DIR...]" >&2
    exit 2
fi
base=$1 new=$2
shift 2
cd "$(dirname "$0")/.."
work=$(mktemp -d /tmp/lantern-import-identical-XXXXXX)
trap 'rm -rf "$work"' EXIT

"$new/bin/bench_import_cuda" 300000 2 "$work/cuda" >/dev/null || exit 1
mkdir "$work/damaged"
cp "$work/cuda/raw/"*.lrt "$work/damaged/"
first=$(ls "$work/damaged/"*.lrt | head -1)
truncate -s $(($(stat -c %s "$first") / 2 + 12345)) "$first"
sessions=("$work/cuda/raw" "$work/damaged" tests/import/v3-session "$@")

status=0
for session in "${sessions[@]}"; do
    for side in base new; do
        build=$base
        [ $side = new ] && build=$new
        "$build/bin/lantern" import "$session" -o "$work/out.db" --force >/dev/null 2>"$work/err"
        echo "exit $?" >>"$work/err"
        tr '\r' '\n' <"$work/err" | grep -v 'importing\.\.\.' >"$work/$side.err" # progress: timing
        sqlite3 "$work/out.db" .dump >"$work/dump.sql" 2>&1
        { grep -v '^CREATE INDEX' "$work/dump.sql"; grep '^CREATE INDEX' "$work/dump.sql" | sort; } >"$work/$side.sql"
        rm -f "$work/out.db"
    done
    if cmp -s "$work/base.sql" "$work/new.sql" && cmp -s "$work/base.err" "$work/new.err"; then
        echo "same: $session ($(wc -l <"$work/new.sql") lines of dump)"
    else
        echo "DIFFERENT: $session"
        diff "$work/base.sql" "$work/new.sql" | head -20
        diff "$work/base.err" "$work/new.err" | head -5
        status=1
    fi
done
exit $status
