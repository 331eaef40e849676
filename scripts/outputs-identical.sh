#!/usr/bin/env bash
# Checks that two builds of lantern give the same bytes on every read-side command: each stats
# report in every format and width, kernels (every column, hints, every format), analyze, the
# HTML page, both exports, diff (table, CSV, JSON, HTML), every command's --help, a set of
# invalid invocations, and the import of each raw session folder (its dump, as
# scripts/import-identical.sh); standard output, standard error, exit status and the files
# written are all compared. For restructurings meant to change no output (docs/architecture.md).
# The corpus: databases built here from tests/cuda_reports' sessions, tests/import/v3-session,
# a bench_import_cuda session, tests/gpu_metrics' session, and every *.db and *.db.raw/ of the
# folders named (sessions recorded on the GPU machine, kept with --keep-raw).
#   scripts/outputs-identical.sh BASE_BUILD NEW_BUILD [CORPUS_DIR...]
# Exits 1 on any difference, listing the cases that differ.
set -uo pipefail
if [ $# -lt 2 ]; then
    echo "usage: $0 BASE_BUILD NEW_BUILD [CORPUS_DIR...]" >&2
    exit 2
fi
base=$(realpath "$1") new=$(realpath "$2")
shift 2
cd "$(dirname "$0")/.."
src=$PWD
work=$(mktemp -d /tmp/lantern-outputs-identical-XXXXXX)
[ -n "${LANTERN_KEEP:-}" ] || trap 'rm -rf "$work"' EXIT
unset COLUMNS LANTERN_FORCE_TTY

# The corpus, built once with the new build's tools: databases in $work/corpus/*.db, raw
# session folders in $work/corpus/*.raw.
corpus=$work/corpus
mkdir -p "$corpus"
for n in cuda nccl; do
    cat src/db/schema.sql "tests/cuda_reports/${n}_session.sql" | sqlite3 "$corpus/$n.db" || exit 1
done
"$new/bin/bench_import_cuda" 100000 2 "$work/bench" >/dev/null || exit 1
mv "$work/bench/raw" "$corpus/bench.raw"
mkdir "$corpus/metrics.raw"
"$new/bin/gpu_metrics_session" "$corpus/metrics.raw" 20000 >/dev/null || exit 1
cp -r tests/import/v3-session "$corpus/v3.raw"
for dir in "$@"; do
    for f in "$dir"/*.db; do
        [ -e "$f" ] && cp "$f" "$corpus/$(basename "$dir")-$(basename "$f")"
    done
    for f in "$dir"/*.db.raw; do
        [ -e "$f" ] && cp -r "$f" "$corpus/$(basename "$dir")-$(basename "$f" .db.raw).raw"
    done
done
for raw in "$corpus"/*.raw; do # imported by the base build: the databases the commands read
    db=${raw%.raw}.db
    [ -e "$db" ] || "$base/bin/lantern" import "$raw" -o "$db" >/dev/null 2>&1
done

# The names a command's --help lists under HEADING (two-space indented words).
listed() { # BUILD COMMAND HEADING
    "$1/bin/lantern" "$2" --help 2>&1 | sed -n "/^$3:/,/^\$/p" | sed -n 's/^  \([a-z_%0-9]*\) .*/\1/p'
}
reports=$(listed "$base" stats Reports)
columns=$(listed "$base" kernels Columns | paste -sd,)

# Every case: CASE-NAME then the command, run in $work/run (so that paths are the same for
# both builds); its stdout, stderr, status and any file it wrote land in $work/<side>/CASE/.
cases() { # LANTERN
    local L=$1 db name
    c() { # NAME COMMAND...
        local name=$1
        shift
        mkdir -p "$out/$name" "$work/run"
        (cd "$work/run" && "$@" >"$out/$name/stdout" 2>"$out/$name/stderr"; echo $? >"$out/$name/status")
        # the import's progress line is timing
        sed -i 's/\r/\n/g; /importing\.\.\./d' "$out/$name/stderr"
        [ -n "$(ls -A "$work/run")" ] && mv "$work/run"/* "$out/$name/"
    }
    c help "$L" --help
    for cmd in profile stats export merge import kernels energy analyze report upgrade diff start stop dump; do
        c "help-$cmd" "$L" "$cmd" --help
    done
    c bad-cmd "$L" nosuch
    c bad-stats-noarg "$L" stats
    c bad-stats-report "$L" stats "$corpus/cuda.db" --report nosuch
    c bad-stats-format "$L" stats "$corpus/cuda.db" --format xml
    c bad-stats-width "$L" stats "$corpus/cuda.db" -w abc
    c bad-stats-file "$L" stats /nonexistent.db
    c bad-stats-notdb "$L" stats "$src/README.md"
    c bad-kernels-col "$L" kernels "$corpus/cuda.db" -c nosuch
    c bad-analyze-rule "$L" analyze "$corpus/cuda.db" --rule nosuch
    c bad-export-format "$L" export "$corpus/cuda.db" --format svg
    c bad-export-noformat "$L" export "$corpus/cuda.db"
    c bad-diff-one "$L" diff "$corpus/cuda.db"
    c bad-diff-threshold "$L" diff "$corpus/cuda.db" "$corpus/cuda.db" --threshold x
    c bad-import-noout "$L" import "$corpus/v3.raw"
    c bad-profile-trace "$L" profile -t nosuch -- true
    c bad-profile-rate "$L" profile --nvml-rate 0 -- true
    c bad-profile-sample "$L" profile --sample=gpu -- true
    c bad-profile-nocmd "$L" profile
    c bad-profile-unknown "$L" profile --no-such-option -- true
    c bad-merge-one "$L" merge "$corpus/cuda.db"
    c bad-start-nosession "$L" start --session /nonexistent
    for raw in "$corpus"/*.raw; do
        name=import-$(basename "$raw" .raw)
        c "$name" "$L" import "$raw" -o out.db
        if [ -e "$out/$name/out.db" ]; then
            sqlite3 "$out/$name/out.db" .dump >"$out/$name/dump.sql"
            { grep -v '^CREATE INDEX' "$out/$name/dump.sql"; grep '^CREATE INDEX' "$out/$name/dump.sql" | sort; } >"$out/$name/dump.sorted"
            rm "$out/$name/out.db" "$out/$name/dump.sql"
        fi
    done
    for db in "$corpus"/*.db; do
        name=$(basename "$db" .db)
        for r in $reports; do
            for f in table csv json; do
                c "$name-stats-$r-$f" "$L" stats "$db" --report "$r" --format "$f" -w 0
            done
            c "$name-stats-$r-w80" "$L" stats "$db" --report "$r" -w 80
        done
        c "$name-stats-trace-duration" "$L" stats "$db" --report cuda_gpu_trace --sort duration -w 0
        c "$name-stats-out" "$L" stats "$db" -o stats.txt
        for f in text csv json; do
            c "$name-kernels-$f" "$L" kernels "$db" --format "$f" -w 0
            c "$name-kernels-all-$f" "$L" kernels "$db" -c "$columns" --format "$f" -w 0
        done
        c "$name-kernels-w90" "$L" kernels "$db" -w 90
        c "$name-kernels-hints" "$L" kernels "$db" --hints -w 0
        c "$name-kernels-nomemops" "$L" kernels "$db" --no-memops --csv
        for f in table csv json; do
            c "$name-analyze-$f" "$L" analyze "$db" --details --format "$f" -w 0
        done
        c "$name-analyze-w100" "$L" analyze "$db" -w 100
        c "$name-report" "$L" report "$db" -o page.html
        c "$name-export-chrome" "$L" export "$db" --format chrome -o out.json
        c "$name-export-perfetto" "$L" export "$db" --format perfetto -o out.perfetto-trace
        c "$name-diff-self" "$L" diff "$db" "$db" --all --format json
    done
    local dbs=("$corpus"/*.db)
    for ((i = 0; i + 1 < ${#dbs[@]}; i++)); do
        name=diff-$(basename "${dbs[i]}" .db)-$(basename "${dbs[i + 1]}" .db)
        c "$name-table" "$L" diff "${dbs[i]}" "${dbs[i + 1]}" --all -w 0 --html page.html
        c "$name-csv" "$L" diff "${dbs[i]}" "${dbs[i + 1]}" --format csv
    done
    c merge "$L" merge "$corpus/cuda.db" "$corpus/nccl.db" -o merged.db
    [ -e "$out/merge/merged.db" ] && sqlite3 "$out/merge/merged.db" .dump >"$out/merge/merged.sql" &&
        rm "$out/merge/merged.db"
}

for side in base new; do
    out=$work/$side
    build=$base
    [ $side = new ] && build=$new
    # messages name the program as the user typed it: the same path for both sides
    ln -sfn "$build" "$work/build"
    cases "$work/build/bin/lantern"
done

status=0
n=$(ls "$work/new" | wc -l)
if diff -rq "$work/base" "$work/new" >"$work/diff" 2>&1; then
    echo "same: $n cases ($(du -sh "$work/new" | cut -f1) of outputs) over $(ls "$corpus" | wc -l) corpus entries"
else
    echo "DIFFERENT: $(wc -l <"$work/diff") of the outputs of $n cases"
    head -30 "$work/diff"
    for f in $(sed -n 's/^Files \(.*\) and .*/\1/p' "$work/diff" | head -3); do
        diff "$f" "${f/\/base\//\/new\/}" | head -10
    done
    status=1
fi
exit $status
