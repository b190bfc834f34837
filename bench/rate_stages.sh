#!/usr/bin/env bash
# bench/rate_stages.sh: how exactly an open loop whose rate ramps (`--rate-stages`) holds its
# shape against one pinned nginx worker: each whole second's requests sent against the
# integral of its target (the RunResult's `timeseries[].target`), and the schedule lag.
#
# Target (issue "Open-loop rate shapes"): every whole second's sent within max(1 %, 2 requests)
# of its target, schedule lag p99 <= 1 ms.
#
# Usage:  bench/rate_stages.sh                      # "2s:1000,8s:10000", 3 reps
#         STAGES="2s:1000,8s:10000" REPS=3 CONNECTIONS=50 CLIENT_CPU=0 SERVER_CPU=1 (defaults)
#         VOLLEY=<path> runs that binary instead of building target/release/volley
# Prints a Markdown table per repetition and the verdict.
# Exit codes: 0 ok (measured; the verdict says whether the target was met), 1 a run failed,
# 2 missing prerequisites / bad settings.
set -euo pipefail

STAGES=${STAGES:-2s:1000,8s:10000}
REPS=${REPS:-3}
CONNECTIONS=${CONNECTIONS:-50}
CLIENT_CPU=${CLIENT_CPU:-0}
SERVER_CPU=${SERVER_CPU:-1}
BUSY_MAX=${BUSY_MAX:-20}     # before each run, wait while more than this % of all CPUs is busy
WAIT_QUIET=${WAIT_QUIET:-120} # with other work, for at most this many seconds
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
TOOLS_DIR=${TOOLS_DIR:-$ROOT/target/bench-tools}
BENCH_TAG=rate-stages
# shellcheck source=bench/lib.sh
source "$ROOT/bench/lib.sh"

for v in REPS CONNECTIONS; do [[ ${!v} =~ ^[1-9][0-9]*$ ]] || die 2 "$v must be a positive integer"; done
NGINX=$(command -v nginx 2>/dev/null || echo /usr/sbin/nginx)
[[ -x $NGINX ]] || die 2 "nginx not found (servers/install.sh installs it)"

build_volley
TMP=$(mktemp -d -t volley-rate-stages.XXXXXX)
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

echo "\`taskset -c $CLIENT_CPU volley run $URL --rate-stages \"$STAGES\" -c $CONNECTIONS -t 1\`, nginx (one worker) on CPU $SERVER_CPU"
echo
status=0
for rep in $(seq "$REPS"); do
    busy=$(wait_quiet)
    out="$TMP/rep$rep.json"
    log "rep $rep/$REPS"
    taskset -c "$CLIENT_CPU" "$VOLLEY" run "$URL" --rate-stages "$STAGES" -c "$CONNECTIONS" -t 1 \
        --quiet --json "$out" >/dev/null || { log "run $rep failed"; status=1; continue; }
    python3 - "$out" "$rep" "$busy" <<'EOF' || status=1
import json, sys
j = json.load(open(sys.argv[1]))
rep, busy = sys.argv[2], sys.argv[3]
rows, worst = [], 0.0
for t in j["timeseries"]:
    if t["interval_s"] < 1.0:
        continue  # a partial last bucket has no whole second's target
    target, sent = t["target"], t["sent"]
    allowed = max(0.01 * target, 2.0)
    worst = max(worst, abs(sent - target) / allowed)
    rows.append(f"| {rep} | {t['t_s']} | {target:,.1f} | {sent:,} | {sent - target:+,.1f} |")
lag = (j.get("schedule_lag_us") or {}).get("p99")
print("| rep | second | target | sent | sent − target |")
print("|---:|---:|---:|---:|---:|")
print("\n".join(rows))
ok = worst <= 1.0 and lag is not None and lag <= 1000
print(f"\nrep {rep}: worst second at {worst:.2f} of its allowance (max(1 %, 2 requests)); "
      f"schedule lag p99 {lag} µs; unsent {j['requests']['unsent']}; other work {busy} % before it: "
      f"{'target met' if ok else 'target missed'}\n")
EOF
done
exit "$status"
