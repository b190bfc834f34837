#!/usr/bin/env bash
# bench/soak.sh: a long open-loop run against the built-in server (volley serve), to show
# that volley's memory stays flat and its time series complete over minutes.
#
#   volley serve         pinned to SERVER_CPU
#   volley run URL -R RATE -c CONNECTIONS -t 1 -d DURATION --json   pinned to CLIENT_CPU
#
# VmRSS and VmHWM of the client are sampled every SAMPLE_EVERY seconds from /proc. Checks,
# reported (not enforced): RSS at 60 s vs at the end within 5 %; one time-series bucket per
# second of the window with every bucket's completed count within 5 % of RATE (the last may
# be partial); no errors. Rewrites the <!-- soak:begin/end --> section of BENCHMARKS.md.
#
# Environment (all optional):
#   RATE=5000  CONNECTIONS=50  DURATION=10m  SAMPLE_EVERY=5
#   CLIENT_CPU=0  SERVER_CPU=1  PORT=<free port>  VOLLEY=<path>  OUT_DIR=<dir>
#   VOLLEY_REV=<git rev>  BENCH_MD=<file>  UPDATE_MD=0  BUSY_MAX=20  WAIT_QUIET=120
#
# Exit codes: 0 ok, 1 a run failed or its output could not be parsed, 2 bad settings.
set -euo pipefail

BENCH_TAG=soak
ROOT=$(cd "$(dirname "$0")/.." && pwd)
# shellcheck source=bench/lib.sh
. "$ROOT/bench/lib.sh"

RATE=${RATE:-5000}
CONNECTIONS=${CONNECTIONS:-50}
DURATION=${DURATION:-10m}
SAMPLE_EVERY=${SAMPLE_EVERY:-5}
CLIENT_CPU=${CLIENT_CPU:-0}
SERVER_CPU=${SERVER_CPU:-1}
BENCH_MD=${BENCH_MD:-$ROOT/BENCHMARKS.md}
UPDATE_MD=${UPDATE_MD:-1}
BUSY_MAX=${BUSY_MAX:-20}
WAIT_QUIET=${WAIT_QUIET:-120}

case $DURATION in
*m) DURATION_S=$((${DURATION%m} * 60)) ;;
*s) DURATION_S=${DURATION%s} ;;
*) die 2 "DURATION must be like 10m or 600s, got '$DURATION'" ;;
esac
command -v taskset >/dev/null || die 2 "taskset (util-linux) is needed"

OUT_DIR=${OUT_DIR:-$(mktemp -d /tmp/volley-soak.XXXXXX)}
mkdir -p "$OUT_DIR"
TOOLS_DIR=${TOOLS_DIR:-$ROOT/target/bench-tools}
build_volley
PORT=${PORT:-$(free_port)}

SERVER_PID=
CLIENT_PID=
cleanup() {
    [[ -z $CLIENT_PID ]] || stop_pid "$CLIENT_PID"
    [[ -z $SERVER_PID ]] || stop_pid "$SERVER_PID"
}
trap cleanup EXIT

taskset -c "$SERVER_CPU" "$VOLLEY" serve --port "$PORT" >"$OUT_DIR/server.log" 2>&1 &
SERVER_PID=$!
for _ in $(seq 50); do
    (exec 3<>"/dev/tcp/127.0.0.1/$PORT") 2>/dev/null && break
    sleep 0.1
done
kill -0 "$SERVER_PID" 2>/dev/null || die 1 "volley serve did not start (see $OUT_DIR/server.log)"

wait_quiet >"$OUT_DIR/busy"
CMD=("$VOLLEY" run "http://127.0.0.1:$PORT/" -R "$RATE" -c "$CONNECTIONS" -t 1 -d "$DURATION" --allow-shortfall --quiet --json "$OUT_DIR/soak.json")
log "$(quote taskset -c "$CLIENT_CPU" "${CMD[@]}")"
: >"$OUT_DIR/samples"
t0=$(date +%s.%N)
taskset -c "$CLIENT_CPU" "${CMD[@]}" >"$OUT_DIR/run.out" 2>"$OUT_DIR/run.err" &
CLIENT_PID=$!
while kill -0 "$CLIENT_PID" 2>/dev/null; do
    if st=$(cat "/proc/$CLIENT_PID/status" 2>/dev/null); then
        rss=$(awk '/^VmRSS:/ {print $2}' <<<"$st")
        hwm=$(awk '/^VmHWM:/ {print $2}' <<<"$st")
        t=$(python3 -c "import time; print(round(time.time() - $t0, 1))")
        [[ -z $rss ]] || echo "$t $rss $hwm" >>"$OUT_DIR/samples"
    fi
    sleep "$SAMPLE_EVERY"
done
rc=0
wait "$CLIENT_PID" || rc=$?
CLIENT_PID=
((rc == 0)) || { tail -n 30 "$OUT_DIR/run.err" >&2; die 1 "the soak run exited with $rc"; }

export BUSY_BEFORE="$(cat "$OUT_DIR/busy")"
export RATE CONNECTIONS DURATION SAMPLE_EVERY CLIENT_CPU SERVER_CPU BENCH_MD UPDATE_MD
export CMD_TEXT="$(quote taskset -c "$CLIENT_CPU" "${CMD[@]}" | sed "s#$OUT_DIR/##g")"
export CPU_MODEL="$(grep -m1 '^model name' /proc/cpuinfo | sed 's/^[^:]*: *//' || true)"
export KERNEL="$(uname -sr)" DATE="$(date -u +%Y-%m-%dT%H:%M:%SZ)" VERSION="$VOLLEY_VERSION"
python3 - "$OUT_DIR" <<'PYEOF'
import json, os, sys
out = sys.argv[1]
d = json.load(open(os.path.join(out, "soak.json")))
S = []
for line in open(os.path.join(out, "samples")):
    t, rss, hwm = line.split()
    S.append({"t": float(t), "rss": int(rss) * 1024, "hwm": int(hwm) * 1024})
mib = lambda b: f"{b / 2**20:.2f} MiB"
near = lambda t: min(S, key=lambda s: abs(s["t"] - t))
a, b = near(60), S[-1]
drift = 100 * (b["rss"] - a["rss"]) / a["rss"]
rate = float(os.environ["RATE"])
ts = d["timeseries"]
full = [p for p in ts if abs(p["interval_s"] - 1) < 1e-6]
bad = [p for p in full if abs(p["completed"] - rate) > 0.05 * rate]
window = d["load"]["duration_s"]
complete = len(full) >= int(window) - 1 and all(p["t_s"] == i for i, p in enumerate(ts))
lag = d.get("schedule_lag_us") or {}
L = []
L.append(f"`{os.environ['CMD_TEXT']}` against `volley serve` pinned to CPU {os.environ['SERVER_CPU']}; "
         f"{os.environ['CPU_MODEL']}, {os.environ['KERNEL']}, {os.environ['VERSION']}, {os.environ['DATE']}; "
         f"the machine was {os.environ['BUSY_BEFORE']} % busy with other work just before.")
L.append("")
L.append(f"**RSS at {a['t']:.0f} s: {mib(a['rss'])}; at {b['t']:.0f} s: {mib(b['rss'])}; change {drift:+.1f} % "
         f"(target within 5 %: {'met' if abs(drift) <= 5 else '**not met**'}).** VmHWM at the end {mib(b['hwm'])}.")
L.append("")
L.append(f"**Time series: {len(ts)} buckets for a {window:.0f} s window, "
         f"{'complete (one per second, none missing)' if complete else '**gaps**'}; "
         f"{len(bad)} full seconds off the rate by more than 5 %.** "
         f"{d['requests']['completed']:,} responses, achieved {d['throughput_rps']:,.1f} req/s, errors "
         f"{d['requests']['errors']}, unsent {d['requests']['unsent']}, schedule lag p50 {lag.get('p50')} µs / p99 "
         f"{lag.get('p99')} µs, corrected p99 {d['latency_us']['p99']:,} µs, client CPU "
         f"{d['client']['cpu_user_s'] + d['client']['cpu_sys_s']:.1f} s.")
L.append("")
step = max(1, len(S) // 12)
L.append("| t (s) | " + " | ".join(f"{s['t']:.0f}" for s in S[::step]) + " |")
L.append("|---|" + "---:|" * len(S[::step]))
L.append("| VmRSS (MiB) | " + " | ".join(f"{s['rss'] / 2**20:.2f}" for s in S[::step]) + " |")
print("\n".join(L))
if os.environ["UPDATE_MD"] != "0":
    path = os.environ["BENCH_MD"]
    text = open(path).read()
    begin, end = "<!-- soak:begin -->", "<!-- soak:end -->"
    section = begin + "\n" + "\n".join(L) + "\n" + end
    if begin in text and end in text:
        text = text[:text.index(begin)] + section + text[text.index(end) + len(end):]
    else:
        text = text.rstrip("\n") + "\n\n## Soak: 10 minutes open loop (`bench/soak.sh`)\n\n" + section + "\n"
    open(path + ".tmp", "w").write(text)
    os.replace(path + ".tmp", path)
    print(f"[soak] rewrote the soak section of {path}", file=sys.stderr)
PYEOF
