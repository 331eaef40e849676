#!/bin/bash
# Writes tests/upgrade/schema-vN.db.gz: the database each older Lantern (the last commit of each
# schema version 1..8) writes for `lantern profile -- nvtx_demo 2`, kept byte for byte (gzip -n).
# Each commit is checked out in a temporary worktree under /tmp and built just enough (lantern,
# its agent, nvtx_demo). Run from the repository; a new schema version adds its last commit here.
set -eu
repo=$(git rev-parse --show-toplevel)
work=$(mktemp -d /tmp/lantern-old-XXXXXX)
trap 'for wt in "$work"/src-v*; do git -C "$repo" worktree remove --force "$wt"; done; rm -rf "$work"' EXIT
for pair in 1:30879b7 2:f3343d3 3:8422302 4:aeae1ad 5:0f77fb5 6:d026cd1 7:7f8d366 8:0298d08; do
    v=${pair%%:*} commit=${pair##*:} wt=$work/src-v${pair%%:*}
    git -C "$repo" worktree add --detach "$wt" "$commit" >/dev/null
    cmake -S "$wt" -B "$wt/build" -DCMAKE_BUILD_TYPE=Release >/dev/null
    cmake --build "$wt/build" -j"$(nproc)" --target lantern lantern-agent nvtx_demo >/dev/null
    (cd "$work" && "$wt/build/bin/lantern" profile -o "schema-v$v.db" -- "$wt/build/bin/nvtx_demo" 2)
    gzip -9 -n -c "$work/schema-v$v.db" >"$repo/tests/upgrade/schema-v$v.db.gz"
done
