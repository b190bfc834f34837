#!/usr/bin/env bash
# bench/instructions.sh: client instructions per request of this build and of another commit,
# counted by valgrind's callgrind, against one pinned nginx worker (loopback).
#
# Wall-clock and CPU-time ratios on this shared 2-core machine move by ±10 % from run to run
# (the server's speed sets how many responses each epoll wake-up finds); an instruction count
# does not depend on what else runs, so it shows whether a change made the client's own work
# per request larger. Under valgrind the client is the slow side, so every build sees the same
# kind of batching; the numbers describe code cost, not throughput.
#
# Usage:  BASELINE_REV=<rev> bench/instructions.sh
#         REQUESTS=100000 CONNECTIONS=50 REPS=3 CLIENT_CPU=0 SERVER_CPU=1 (defaults)
#         VOLLEY=<path> measures that binary instead of building target/release/volley
# Prints a Markdown table (each run, and the median ratio this build ÷ baseline).
# Exit codes: 0 ok, 1 a run failed, 2 missing prerequisites / bad settings.
set -euo pipefail

REQUESTS=${REQUESTS:-100000}
CONNECTIONS=${CONNECTIONS:-50}
REPS=${REPS:-3}
CLIENT_CPU=${CLIENT_CPU:-0}
SERVER_CPU=${SERVER_CPU:-1}
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
TOOLS_DIR=${TOOLS_DIR:-$ROOT/target/bench-tools}
BENCH_TAG=instructions
# shellcheck source=bench/lib.sh
source "$ROOT/bench/lib.sh"

[[ -n ${BASELINE_REV:-} ]] || die 2 "BASELINE_REV=<commit> is required (the build to compare with)"
for v in REQUESTS CONNECTIONS REPS; do [[ ${!v} =~ ^[1-9][0-9]*$ ]] || die 2 "$v must be a positive integer"; done
command -v valgrind >/dev/null 2>&1 || die 2 "valgrind not found (apt-get install valgrind)"
NGINX=$(command -v nginx 2>/dev/null || echo /usr/sbin/nginx)
[[ -x $NGINX ]] || die 2 "nginx not found (servers/install.sh installs it)"

build_volley
BASELINE=$(build_rev "$BASELINE_REV" baseline) || exit 2
BASE_NAME="volley@$(git -C "$ROOT" rev-parse --short "$BASELINE_REV")"

TMP=$(mktemp -d -t volley-instructions.XXXXXX)
cp "$VOLLEY" "$TMP/volley"
cp "$BASELINE" "$TMP/volley-baseline"
NGINX_PID=
cleanup() { local rc=$?; stop_pid "$NGINX_PID"; rm -rf "$TMP"; exit "$rc"; }
trap cleanup EXIT
trap 'exit 130' INT

PORT=$(free_port)
write_nginx_conf "$TMP" "$PORT"
taskset -c "$SERVER_CPU" "$NGINX" -p "$TMP/" -c "$TMP/nginx.conf" -e "$TMP/error.log" -g "daemon off;" >"$TMP/nginx.out" 2>&1 &
NGINX_PID=$!
URL="http://127.0.0.1:$PORT/"
for _ in $(seq 100); do
    python3 -c 'import sys, urllib.request; urllib.request.urlopen(sys.argv[1], timeout=1)' "$URL" 2>/dev/null && break
    sleep 0.1
done

# count BIN NAME REP: instructions (Ir) and completed requests of one run.
count() {
    local bin=$1 out="$TMP/$2-$3"
    log "rep $3/$REPS: $2 under callgrind, $REQUESTS requests"
    taskset -c "$CLIENT_CPU" valgrind --tool=callgrind --callgrind-out-file="$out.cg" \
        "$bin" run "$URL" -t 1 -c "$CONNECTIONS" -n "$REQUESTS" --timeout 10s --quiet --json "$out.json" \
        >"$out.out" 2>"$out.err" || die 1 "$2 failed in rep $3 (see $out.err)"
    local ir completed
    ir=$(awk '/^(summary|totals):/ { print $2; exit }' "$out.cg")
    completed=$(python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))["requests"]["completed"])' "$out.json")
    printf '%s %s\n' "$ir" "$completed"
}

echo "| rep | build | requests | instructions | instructions per request |"
echo "|---:|---|---:|---:|---:|"
ratios=()
for ((rep = 1; rep <= REPS; rep++)); do
    # Alternate which build goes first.
    if ((rep % 2)); then order=(volley volley-baseline); else order=(volley-baseline volley); fi
    declare -A per=()
    for b in "${order[@]}"; do
        read -r ir n < <(count "$TMP/$b" "$b" "$rep")
        per[$b]=$(python3 -c "print($ir / $n)")
        name=$([[ $b == volley ]] && echo "volley (this build)" || echo "$BASE_NAME")
        printf '| %s | %s | %s | %s | %.0f |\n' "$rep" "$name" "$n" "$ir" "${per[$b]}"
    done
    ratios+=("$(python3 -c "print(${per[volley-baseline]} / ${per[volley]})")")
    unset per
done
python3 - "${ratios[@]}" <<'EOF'
import statistics, sys
r = [float(x) for x in sys.argv[1:]]
print()
print(f"Baseline instructions per request ÷ this build's (above 1: this build does less work): "
      f"median {statistics.median(r):.3f}, range {min(r):.3f}–{max(r):.3f} over {len(r)} pairs.")
EOF
