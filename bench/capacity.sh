#!/usr/bin/env bash
# bench/capacity.sh: `volley capacity` against every reference server of suites/quick.toml
# (built and started as the suite does, pinned to SERVER_CPU; volley on CLIENT_CPU), next to
# the same server's closed-loop maximum (`volley run -c CONNECTIONS`), and writes the table
# into the <!-- capacity:begin/end --> section of BENCHMARKS.md. A capacity far below the
# closed-loop maximum is the coordinated-omission lesson in one number.
#
# Environment (all optional):
#   SLO='p99<10ms'  CONNECTIONS=64  STEP=5s  WARMUP=1s  PRECISION=5%  REPEAT=1  START=500
#   CLOSED=5s  SERVERS="go node python java rust nginx"  CLIENT_CPU=0  SERVER_CPU=1
#   VOLLEY=<path>  VOLLEY_REV=<git rev>  OUT_DIR=<dir>  BENCH_MD=<file>  UPDATE_MD=1
#
# Exit codes: 0 ok, 1 a server could not be measured, 2 bad settings.
set -euo pipefail

BENCH_TAG=capacity
ROOT=$(cd "$(dirname "$0")/.." && pwd)
# shellcheck source=bench/lib.sh
. "$ROOT/bench/lib.sh"

SLO=${SLO:-p99<10ms}
CONNECTIONS=${CONNECTIONS:-64}
STEP=${STEP:-5s}
WARMUP=${WARMUP:-1s}
PRECISION=${PRECISION:-5%}
REPEAT=${REPEAT:-1}
START=${START:-500}
CLOSED=${CLOSED:-5s}
SERVERS=${SERVERS:-go node python java rust nginx}
CLIENT_CPU=${CLIENT_CPU:-0}
SERVER_CPU=${SERVER_CPU:-1}
BENCH_MD=${BENCH_MD:-$ROOT/BENCHMARKS.md}
UPDATE_MD=${UPDATE_MD:-1}
TOOLS_DIR=${TOOLS_DIR:-$ROOT/target/bench-tools}
OUT_DIR=${OUT_DIR:-$(mktemp -d /tmp/volley-capacity.XXXXXX)}
BUSY_MAX=${BUSY_MAX:-30}
WAIT_QUIET=${WAIT_QUIET:-60}

build_volley
mkdir -p "$OUT_DIR"
# The servers' build and start lines, from the suite (one definition).
python3 - "$ROOT/suites/quick.toml" "$OUT_DIR/servers.tsv" <<'PY'
import sys, tomllib
suite = tomllib.load(open(sys.argv[1], "rb"))
with open(sys.argv[2], "w") as out:
    for s in suite["server"]:
        if "start" not in s:
            continue
        env = " ".join(f"{k}={v}" for k, v in (s.get("env") or {}).items())
        # \x1f: an empty field (no build) must not shift the others, as tabs would for `read`.
        out.write("\x1f".join([s["name"], s.get("dir", "."), s.get("build", ""), s["start"], env]) + "\n")
PY
status=0
: >"$OUT_DIR/rows.tsv"
while IFS=$'\x1f' read -r name dir build start env; do
    [[ " $SERVERS " == *" $name "* ]] || continue
    if [[ -n $build ]]; then
        log "$name: building ($build)"
        (cd "$ROOT/$dir" && sh -c "$build") >"$OUT_DIR/$name.build.log" 2>&1 || { log "$name: build failed"; status=1; continue; }
    fi
    port=$(free_port)
    line=${start//\{port\}/$port}
    tmp=$(mktemp -d "$OUT_DIR/$name-tmp.XXXX")
    (cd "$ROOT/$dir" && exec env PORT="$port" TMPDIR="$tmp" $env taskset -c "$SERVER_CPU" sh -c "$line") \
        >"$OUT_DIR/$name.out" 2>"$OUT_DIR/$name.err" &
    pid=$!
    for _ in $(seq 300); do
        curl -s -o /dev/null "http://127.0.0.1:$port/" && break
        sleep 0.1
    done
    busy=$(wait_quiet)
    log "$name: capacity under '$SLO' (pid $pid, port $port, machine ${busy}% busy)"
    code=0
    taskset -c "$CLIENT_CPU" "$VOLLEY" capacity "http://127.0.0.1:$port/" --slo "$SLO" --pid "$pid" \
        -c "$CONNECTIONS" --step-duration "$STEP" --warmup "$WARMUP" --precision "$PRECISION" \
        --repeat "$REPEAT" --start-rate "$START" --out "$OUT_DIR/$name" \
        --json "$OUT_DIR/$name.capacity.json" 2>"$OUT_DIR/$name.capacity.txt" || code=$?
    log "$name: $(grep -m1 -E 'Max sustainable|No rate|at least' "$OUT_DIR/$name.capacity.txt" || echo "exit $code")"
    taskset -c "$CLIENT_CPU" "$VOLLEY" run "http://127.0.0.1:$port/" -c "$CONNECTIONS" -d "$CLOSED" \
        --warmup "$WARMUP" --pid "$pid" -q --json "$OUT_DIR/$name.closed.json" >/dev/null 2>&1 || true
    stop_pid "$pid"
    printf '%s\t%s\t%s\n' "$name" "$code" "$busy" >>"$OUT_DIR/rows.tsv"
done <"$OUT_DIR/servers.tsv"

python3 - "$OUT_DIR" "$BENCH_MD" "$UPDATE_MD" "$VOLLEY_VERSION" \
    "$(quote bench/capacity.sh) (SLO='$SLO' CONNECTIONS=$CONNECTIONS STEP=$STEP WARMUP=$WARMUP PRECISION=$PRECISION REPEAT=$REPEAT START=$START)" <<'PY'
import json, os, sys
out, md, update, version, command = sys.argv[1:6]
head = ["server", "max sustainable req/s", "limited by", "bracket req/s", "p99 at max", "steps", "wall",
        "server CPU µs/req at max", "closed-loop max req/s (p99)", "capacity ÷ closed-loop"]
L = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
for line in open(os.path.join(out, "rows.tsv")):
    name, code, busy = line.rstrip("\n").split("\t")
    try:
        c = json.load(open(os.path.join(out, f"{name}.capacity.json")))
    except Exception:
        L.append(f"| {name} | no result (exit {code}) | | | | | | | | |")
        continue
    best = c.get("max_rate_rps")
    at = [s for s in c["steps"] if s["target_rps"] == best and s["verdict"] == "pass"]
    p99 = f"{at[-1]['latency_us']['p99'] / 1000:.2f} ms" if at else ""
    cpu = at[-1].get("server_cpu_us_per_request") if at else None
    b = c.get("bracket") or {}
    try:
        r = json.load(open(os.path.join(out, f"{name}.closed.json")))
        closed = r["throughput_rps"]
        closed_s = f"{closed:,.0f} ({r['latency_us']['p99'] / 1000:.2f} ms)"
    except Exception:
        closed, closed_s = None, ""
    ratio = f"{best / closed:.2f}" if best and closed else ""
    lim = c.get("limited_by") or "none passed"
    L.append(f"| {name} | {best:,.0f} | {lim} | {b.get('low_rps')}–{b.get('high_rps')} | {p99} | {len(c['steps'])} | "
             f"{c['wall_s']:.0f} s | {'' if cpu is None else f'{cpu:.1f}'} | {closed_s} | {ratio} |"
             if best else f"| {name} | none | {lim} | | | {len(c['steps'])} | {c['wall_s']:.0f} s | | {closed_s} | |")
body = ["## Capacity under an SLO (`volley capacity`)", "",
        f"`{command}`, {version}; servers of suites/quick.toml pinned to CPU 1, volley to CPU 0; each "
        "server's capacity search, then its closed-loop maximum with the same connections. "
        "`limited by client` means volley on one core was the limit (the number is a lower bound).", "", *L, ""]
section = "<!-- capacity:begin -->\n" + "\n".join(body) + "<!-- capacity:end -->"
print(section)
if update == "1":
    text = open(md).read()
    b, e = "<!-- capacity:begin -->", "<!-- capacity:end -->"
    if b in text and e in text:
        text = text[: text.index(b)] + section + text[text.index(e) + len(e):]
    else:
        text = text.rstrip("\n") + "\n\n" + section + "\n"
    open(md, "w").write(text)
PY
exit $status
