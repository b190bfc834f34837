#!/usr/bin/env bash
# bench/profile.sh: what `--profile` costs the server it samples. One nginx worker pinned to
# SERVER_CPU, volley on CLIENT_CPU, closed loop; runs without `--profile`, with it, and (OFF_CPU=1)
# with `--profile --profile-off-cpu`, interleaved (all with `--pid`, so the monitor is the same),
# REPS rounds. Per run: requests a second, the server's CPU per request (the monitor's), volley's
# own CPU per request, the profile's samples, lost records and sampled CPU per request, and the
# off-CPU view's waits, lost records and blocked µs per request.
#
# Targets: the sampling's cost to the server stated at the default frequency (499 Hz):
# throughput with ÷ without (issue "Why is it slow"); the off-CPU view's, which costs a sample
# at every context switch, the same way (issue "Off-CPU time").
#
# Usage:  bench/profile.sh        # REPS=3 DURATION=10s CONNECTIONS=50 FREQ= (default 499)
#         OFF_CPU=1 (0: only without and with --profile) CLIENT_CPU=0 SERVER_CPU=1 VOLLEY=<path>
# Prints a Markdown table and the ratios. Exit codes: 0 measured, 1 a run failed, 2 missing
# prerequisites or bad settings.
set -euo pipefail

REPS=${REPS:-3}
DURATION=${DURATION:-10s}
CONNECTIONS=${CONNECTIONS:-50}
FREQ=${FREQ:-}
OFF_CPU=${OFF_CPU:-1}
CLIENT_CPU=${CLIENT_CPU:-0}
SERVER_CPU=${SERVER_CPU:-1}
BUSY_MAX=${BUSY_MAX:-20}
WAIT_QUIET=${WAIT_QUIET:-120}
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BENCH_TAG=profile
# shellcheck source=bench/lib.sh
source "$ROOT/bench/lib.sh"

for v in REPS CONNECTIONS; do [[ ${!v} =~ ^[1-9][0-9]*$ ]] || die 2 "$v must be a positive integer"; done
NGINX=$(command -v nginx 2>/dev/null || echo /usr/sbin/nginx)
[[ -x $NGINX ]] || die 2 "nginx not found (servers/install.sh installs it)"

build_volley
TMP=$(mktemp -d -t volley-profile.XXXXXX)
NGINX_PID=
cleanup() { local rc=$?; stop_pid "$NGINX_PID"; rm -rf "$TMP"; exit "$rc"; }
trap cleanup EXIT
trap 'exit 130' INT

PORT=$(free_port)
write_nginx_conf "$TMP" "$PORT"
# One process (no master), so --pid is the worker that serves.
sed -i '1i master_process off;' "$TMP/nginx.conf"
taskset -c "$SERVER_CPU" "$NGINX" -p "$TMP/" -c "$TMP/nginx.conf" -e "$TMP/error.log" -g "daemon off;" >"$TMP/nginx.out" 2>&1 &
NGINX_PID=$!
URL="http://127.0.0.1:$PORT/"
for _ in $(seq 100); do
    python3 -c 'import sys, urllib.request; urllib.request.urlopen(sys.argv[1], timeout=1)' "$URL" 2>/dev/null && break
    sleep 0.1
done

profile_flags=(--profile)
[[ -n $FREQ ]] && profile_flags+=(--profile-frequency "$FREQ")
modes=(off on)
[[ $OFF_CPU == 1 ]] && modes+=(offcpu)
echo "\`taskset -c $CLIENT_CPU volley run $URL -c $CONNECTIONS -d $DURATION --pid NGINX [${profile_flags[*]}$([[ $OFF_CPU == 1 ]] && echo " [--profile-off-cpu]")]\`," \
     "nginx (one process) on CPU $SERVER_CPU; ${modes[*]} interleaved"
echo
status=0
rows=()
for rep in $(seq "$REPS"); do
    for mode in "${modes[@]}"; do
        busy=$(wait_quiet)
        out="$TMP/$mode-$rep.json"
        extra=()
        [[ $mode == on ]] && extra=("${profile_flags[@]}")
        [[ $mode == offcpu ]] && extra=("${profile_flags[@]}" --profile-off-cpu)
        log "rep $rep/$REPS: profile $mode"
        taskset -c "$CLIENT_CPU" "$VOLLEY" run "$URL" -c "$CONNECTIONS" -d "$DURATION" \
            --pid "$NGINX_PID" "${extra[@]}" --quiet --json "$out" >/dev/null \
            || { log "run $mode $rep failed"; status=1; continue; }
        rows+=("$mode $rep $busy $out")
    done
done

python3 - "${rows[@]}" <<'EOF'
import json, statistics, sys
rows = [r.split(" ", 3) for r in sys.argv[1:]]
print("| profile | rep | req/s | server CPU µs/req | volley CPU µs/req | samples | lost | sampled µs/req | off-CPU waits | lost | blocked µs/req | other work before |")
print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
by = {"on": [], "off": [], "offcpu": []}
for mode, rep, busy, path in rows:
    j = json.load(open(path))
    s = j["server"]
    c = j["client"]
    done = j["requests"]["completed"]
    volley = (c["cpu_user_s"] + c["cpu_sys_s"]) / done * 1e6
    p = s.get("profile") or {}
    o = p.get("off_cpu") or {}
    by[mode].append((j["throughput_rps"], s["per_request"]["cpu_us"], volley))
    print(f"| {mode} | {rep} | {j['throughput_rps']:,.0f} | {s['per_request']['cpu_us']:.2f} | {volley:.2f} | "
          f"{p.get('samples', '-')} | {p.get('lost', '-')} | {p.get('cpu_us_per_request') or '-'} | "
          f"{o.get('switches', '-')} | {o.get('lost', '-')} | {o.get('blocked_us_per_request') or '-'} | {busy} % |")
med = lambda m, k: statistics.median(v[k] for v in by[m])
for mode, what in (("on", "--profile"), ("offcpu", "--profile --profile-off-cpu")):
    if by[mode] and by["off"]:
        print(f"\nMedians, {what} ÷ without: throughput {med(mode, 0) / med('off', 0):.3f}; "
              f"server CPU per request {med(mode, 1) / med('off', 1):.3f}; "
              f"volley's CPU per request {med(mode, 2) / med('off', 2):.3f}.")
EOF
exit "$status"
