#!/usr/bin/env bash
# The floor under the importer (docs/benchmarks.md, "CUDA at scale"): the CPU time SQLite takes
# to write an imported database's rows, in the importer's order (rowid) with its pragmas, and
# then its indexes, with no decoding and no post-processing: `INSERT INTO t SELECT * FROM
# source.t` per table into a fresh database with the same schema, then each CREATE INDEX.
#   bench/import_floor.sh DATABASE        (e.g. bench_import_cuda's DIR/session.db)
set -euo pipefail
if [ $# -ne 1 ] || [ ! -f "$1" ]; then
    echo "usage: $0 DATABASE" >&2
    exit 2
fi
src=$(realpath "$1")
out=$(mktemp /tmp/lantern-import-floor-XXXXXX.db)
trap 'rm -f "$out"' EXIT
rm -f "$out"
tables=$(sqlite3 "$src" "SELECT name FROM sqlite_master WHERE type = 'table'
  AND name NOT LIKE 'sqlite_%' ORDER BY rowid")
{
    echo "PRAGMA journal_mode=OFF; PRAGMA synchronous=OFF; PRAGMA cache_size=-65536;"
    sqlite3 "$src" "SELECT sql || ';' FROM sqlite_master WHERE type = 'table'
      AND name NOT LIKE 'sqlite_%' ORDER BY rowid"
    echo "ATTACH '$src' AS source;"
    echo ".timer on"
    echo ".echo on"
    echo "BEGIN;"
    for t in $tables; do
        echo "INSERT INTO main.$t SELECT * FROM source.$t ORDER BY rowid;"
    done
    echo "SELECT 'rows written';"
    sqlite3 "$src" "SELECT sql || ';' FROM sqlite_master WHERE type = 'index' AND sql IS NOT NULL
      ORDER BY rowid"
    echo "COMMIT;"
} >"$out.sql"
trap 'rm -f "$out" "$out.sql"' EXIT
sqlite3 "$out" <"$out.sql" 2>&1 | awk '
    /^(INSERT|CREATE|COMMIT)/ { what = $1 == "INSERT" ? $3 : $1 == "CREATE" ? $3 : "commit" }
    /^Run Time/ {
        cpu = $6 + $8; total += cpu; step += cpu
        if (cpu >= 0.01) printf "  %-30s %6.2f s CPU\n", what, cpu
        next
    }
    /^rows written/ { printf "rows (every table): %.2f s CPU\n", step; step = 0; next }
    END { printf "indexes and commit: %.2f s CPU\ntotal: %.2f s CPU\n", step, total }'
