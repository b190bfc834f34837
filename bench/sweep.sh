#!/usr/bin/env bash
# bench/sweep.sh: `volley capacity --sweep` against `volley capacity` (the search) on a server
# of known capacity, interleaved: K slots each busy S ms per request (bench/known_capacity.py,
# pinned to SERVER_CPU; volley on CLIENT_CPU). Each measurement gets a fresh server, which
# says at its end how long a slot was really held: the true capacity is K ÷ that (a sleep
# overshoots S a little). Both run with their defaults and the closed-loop reference (the
# sweep measures it first for its top, 1.5 × it; the search last).
#
# Target (issue "Open-loop rate shapes"): the sweep finds the capacity within 85–102 % in
# under a third of the search's wall time.
#
# Usage:  bench/sweep.sh            # K=8 S_MS=10 (800 req/s), SLO p99<50ms, -c 16, 2 pairs
#         K=8 S_MS=10 SLO='p99<50ms' CONNECTIONS=16 REPS=2 CLIENT_CPU=0 SERVER_CPU=1 (defaults)
#         EXTRA='--confirm'  adds flags to the sweep; VOLLEY=<path> runs that binary
# Prints a Markdown table (one row per measurement) and the verdict.
# Exit codes: 0 measured (the verdict says whether the target was met), 1 a run failed,
# 2 bad settings.
set -euo pipefail

K=${K:-8}
S_MS=${S_MS:-10}
SLO=${SLO:-p99<50ms}
CONNECTIONS=${CONNECTIONS:-16}
REPS=${REPS:-2}
EXTRA=${EXTRA:-}
CLIENT_CPU=${CLIENT_CPU:-0}
SERVER_CPU=${SERVER_CPU:-1}
BUSY_MAX=${BUSY_MAX:-20}
WAIT_QUIET=${WAIT_QUIET:-120}
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BENCH_TAG=sweep
# shellcheck source=bench/lib.sh
source "$ROOT/bench/lib.sh"

for v in K S_MS REPS CONNECTIONS; do [[ ${!v} =~ ^[1-9][0-9]*$ ]] || die 2 "$v must be a positive integer"; done

build_volley
TMP=$(mktemp -d -t volley-sweep.XXXXXX)
SERVER_PID=
cleanup() { local rc=$?; stop_pid "$SERVER_PID"; rm -rf "$TMP"; exit "$rc"; }
trap cleanup EXIT
trap 'exit 130' INT

# One measurement: a fresh server, `volley capacity` with `$@`, the server's own account.
measure() {
    local name=$1; shift
    local port out
    port=$(free_port)
    out="$TMP/$name"
    taskset -c "$SERVER_CPU" python3 "$ROOT/bench/known_capacity.py" "$port" "$K" "$S_MS" >"$out.server" &
    SERVER_PID=$!
    for _ in $(seq 100); do
        python3 -c 'import sys, urllib.request; urllib.request.urlopen(sys.argv[1], timeout=1)' \
            "http://127.0.0.1:$port/" 2>/dev/null && break
        sleep 0.1
    done
    local rc=0
    taskset -c "$CLIENT_CPU" "$VOLLEY" capacity "http://127.0.0.1:$port/" --slo "$SLO" \
        -c "$CONNECTIONS" --pid "$SERVER_PID" --out "$out" "$@" >"$out.log" 2>&1 || rc=$?
    kill -TERM "$SERVER_PID" 2>/dev/null || true
    wait "$SERVER_PID" 2>/dev/null || true
    SERVER_PID=
    return "$rc"
}

echo "Server: bench/known_capacity.py, $K slots × $S_MS ms (nominal $((K * 1000 / S_MS)) req/s), on CPU $SERVER_CPU;" \
     "\`taskset -c $CLIENT_CPU volley capacity URL --slo '$SLO' -c $CONNECTIONS --pid PID\`," \
     "alone (the search) or with \`--sweep${EXTRA:+ $EXTRA}\`; pairs interleaved."
echo
status=0
rows=()
for rep in $(seq "$REPS"); do
    for method in sweep search; do
        busy=$(wait_quiet)
        log "rep $rep/$REPS: $method"
        args=()
        # shellcheck disable=SC2206  # EXTRA is flags, split on purpose
        [[ $method == sweep ]] && args=(--sweep $EXTRA)
        if ! measure "$method-$rep" "${args[@]}"; then
            log "$method $rep failed: $(tail -3 "$TMP/$method-$rep.log")"
            status=1
        fi
        rows+=("$method $rep $busy")
    done
done

python3 - "$TMP" "${rows[@]}" <<'EOF'
import json, os, sys
tmp, rows = sys.argv[1], sys.argv[2:]
print("| method | rep | wall | answer req/s | knee req/s | true capacity req/s | answer ÷ capacity | runs | other work before |")
print("|---|---:|---:|---:|---:|---:|---:|---:|---:|")
walls = {"sweep": [], "search": []}
inside = True
for row in rows:
    method, rep, busy = row.split()
    base = os.path.join(tmp, f"{method}-{rep}")
    try:
        c = json.load(open(os.path.join(base, "capacity.json")))
        server = json.loads(open(base + ".server").read().strip().splitlines()[-1])
    except (OSError, ValueError, IndexError) as e:
        print(f"| {method} | {rep} | failed: {e} | | | | | | |")
        inside = False
        continue
    cap = server["capacity_rps"]
    answer = c.get("max_rate_rps")
    knee = (c.get("sweep") or {}).get("knee_rps")
    ratio = answer / cap if answer and cap else None
    if method == "sweep":
        inside = inside and ratio is not None and 0.85 <= ratio <= 1.02
    walls[method].append(c["wall_s"])
    n = len(c["steps"])
    what = f"{n} windows" if method == "sweep" and not any("window" not in s for s in c["steps"]) else f"{n} steps"
    print(f"| {method} | {rep} | {c['wall_s']:.0f} s | {answer or '-'} | {knee or '-'} | {cap:.0f} | "
          f"{f'{ratio:.1%}' if ratio else '-'} | {what} | {busy} % |")
if walls["sweep"] and walls["search"]:
    share = (sum(walls["sweep"]) / len(walls["sweep"])) / (sum(walls["search"]) / len(walls["search"]))
    fast = share < 1 / 3
    print(f"\nSweep wall time {share:.1%} of the search's (mean of each); every sweep's answer within "
          f"85–102 % of the true capacity: {'yes' if inside else 'no'}; "
          f"{'target met' if inside and fast else 'target missed'}.")
EOF
exit "$status"
