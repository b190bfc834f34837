#!/usr/bin/env bash
# What default names cost (docs/contract.md, "Names"): a run over a file of 100,000 requests
# with distinct literal paths, each unnamed, against the same file with one user name on
# every request, and against a build from before default names (BEFORE=path/to/volley, where
# unnamed requests had no results of their own), interleaved, on `volley serve`.
# Open loop at RATE req/s (the same work for each variant), CONNS connections, one worker.
# Prints a row per run: variant, completed requests, req/s, client CPU µs per request
# (user + sys from the RunResult, and user alone), client RSS max (MiB), the names in the
# result, and the seconds from start to exit of a run of 1 request (the file read, named and
# compiled). volley is pinned to CPU 0, the server to CPU 1.
#
# CALLGRIND=1 counts instead the client's instructions per request under valgrind's callgrind
# (repeatable on a shared machine, where CPU time moves by 2x from run to run): closed loop,
# -n 20,000 and -n 60,000, and the difference of the two counts ÷ 40,000, so that reading the
# file (the same in every variant) cancels out.
#
#   BEFORE=/tmp/volley-before AFTER=target/release/volley REPS=3 DURATION=5s bench/names.sh
set -euo pipefail

AFTER=${AFTER:-target/release/volley}
BEFORE=${BEFORE:-}
REPS=${REPS:-3}
DURATION=${DURATION:-5s}
CONNS=${CONNS:-32}
RATE=${RATE:-8000}
PORT=${PORT:-18391}
TMP=$(mktemp -d)
trap 'kill "$SERVER" 2>/dev/null || true; rm -rf "$TMP"' EXIT

python3 - "$TMP" <<'EOF'
import sys
d = sys.argv[1]
with open(f"{d}/unnamed.toml", "w") as f:
    for k in range(100_000):
        f.write(f'[[request]]\npath = "/r/{k}"\n')
with open(f"{d}/one-name.toml", "w") as f:
    for k in range(100_000):
        f.write(f'[[request]]\nname = "all"\npath = "/r/{k}"\n')
EOF

taskset -c 1 "$AFTER" serve --port "$PORT" >/dev/null 2>&1 &
SERVER=$!
sleep 0.5
URL="http://127.0.0.1:$PORT/"

run() { # label binary file
    local out="$TMP/$1.json"
    taskset -c 0 "$2" run "$URL" --requests-file "$3" -t 1 -c "$CONNS" -R "$RATE" -d "$DURATION" \
        --quiet --json "$out" >"$TMP/$1.log" 2>&1 || echo "$1: exit $? (a headline warning; the row stands)" >&2
    local start end
    start=$(date +%s.%N)
    taskset -c 0 "$2" run "$URL" --requests-file "$3" -t 1 -c 1 -n 1 --quiet --json /dev/null >/dev/null 2>&1 || true
    end=$(date +%s.%N)
    jq -r --arg l "$1" --arg load "$(echo "$end - $start" | bc)" '
        [$l, .requests.completed, (.requests.completed / .elapsed_s | floor),
         ((.client.cpu_user_s + .client.cpu_sys_s) / .requests.completed * 1e6 * 100 | round / 100),
         (.client.cpu_user_s / .requests.completed * 1e6 * 100 | round / 100),
         (.client.rss_max_bytes / 1048576 * 10 | round / 10),
         ((.endpoints // []) | length), $load] | @tsv' "$out"
}

instructions() { # label binary file: instructions per request between -n 20000 and 60000
    local n ir=()
    for n in 20000 60000; do
        taskset -c 0 valgrind --tool=callgrind --callgrind-out-file="$TMP/cg.out" \
            "$2" run "$URL" --requests-file "$3" -t 1 -c 32 -n "$n" --quiet \
            --json /dev/null >"$TMP/cg.log" 2>&1 || true
        ir+=("$(sed -n 's/.*Collected : //p' "$TMP/cg.log")")
    done
    printf '%s\t%s\t%s\t%s\n' "$1" "${ir[0]}" "${ir[1]}" "$(( (ir[1] - ir[0]) / 40000 ))"
}

if [ "${CALLGRIND:-0}" = 1 ]; then
    printf 'variant\tinstructions -n 20000\t-n 60000\tper request\n'
    [ -n "$BEFORE" ] && instructions "before-unnamed" "$BEFORE" "$TMP/unnamed.toml"
    instructions "after-unnamed" "$AFTER" "$TMP/unnamed.toml"
    instructions "after-one-name" "$AFTER" "$TMP/one-name.toml"
    exit 0
fi

printf 'variant\tcompleted\treq/s\tCPU µs/req\tuser µs/req\tRSS MiB\tnames\tload s\n'
for rep in $(seq "$REPS"); do
    [ -n "$BEFORE" ] && run "before-unnamed" "$BEFORE" "$TMP/unnamed.toml"
    run "after-unnamed" "$AFTER" "$TMP/unnamed.toml"
    run "after-one-name" "$AFTER" "$TMP/one-name.toml"
done
