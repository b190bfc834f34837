#!/usr/bin/env bash
# bench/threads.sh: is anything on the hot path shared between worker threads? The client CPU
# per request with -t 2 against -t 1, on each I/O backend, in one interleaved session on one
# pinned nginx worker (loopback).
#
#   closed-T-IO   volley -c 50 -t T --io IO (closed loop, keep-alive)
#   open-T-IO     volley -R RATE×T/2 -c 50 -t T --io IO (open loop, RATE/2 per thread either way:
#                 what an open-loop request costs depends on its thread's rate, through its
#                 wake-ups per request)
#
# for T in 1 2 and IO in uring epoll. The closed loop keeps the server busy, so both thread
# counts run on CLIENT_CPU alone: the two threads take turns on one core, and the difference
# is the cost of switching between them (the context switches per request are shown). The
# open loop at RATE leaves the server mostly idle, so its -t 2 runs on CLIENT_CPU and
# SERVER_CPU (OPEN_T2_CPUS): the threads run at the same time, and anything they shared on
# the hot path (a lock, a cache line written by both) would show as CPU per request above
# -t 1's. Scaling needs a server on another machine and is not claimed. Client CPU is user +
# sys from /usr/bin/time. Every repetition runs every cell, in an order rotating by
# one per repetition. The table goes between <!-- threads:begin --> and <!-- threads:end --> of
# BENCHMARKS.md.
#
# Usage:  bench/threads.sh                       # 3 reps x 10 s: about 5 minutes
#         REPS=1 DURATION=3s bench/threads.sh
#
# Environment (all optional):
#   REPS=3  DURATION=10s  CONNECTIONS=50  RATE=20000  CLIENT_CPU=0  SERVER_CPU=1
#   OPEN_T2_CPUS=CLIENT_CPU,SERVER_CPU   where the open loop's -t 2 runs
#   IOS="uring epoll"   VOLLEY=<path> / VOLLEY_REV=<rev>   OUT_DIR  BENCH_MD  UPDATE_MD=0
#   BUSY_MAX=20  WAIT_QUIET=120
#
# Exit codes: 0 ok, 1 a run failed or its output could not be parsed, 2 bad settings.
set -euo pipefail

REPS=${REPS:-3}
DURATION=${DURATION:-10s}
CONNECTIONS=${CONNECTIONS:-50}
RATE=${RATE:-20000}
CLIENT_CPU=${CLIENT_CPU:-0}
SERVER_CPU=${SERVER_CPU:-1}
IOS=${IOS:-uring epoll}
OPEN_T2_CPUS=${OPEN_T2_CPUS:-$CLIENT_CPU,$SERVER_CPU}
UPDATE_MD=${UPDATE_MD:-1}
BUSY_MAX=${BUSY_MAX:-20}
WAIT_QUIET=${WAIT_QUIET:-120}

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BENCH_MD=${BENCH_MD:-$ROOT/BENCHMARKS.md}
TOOLS_DIR=${TOOLS_DIR:-$ROOT/target/bench-tools}
OUT_DIR=${OUT_DIR:-$ROOT/target/bench-threads/$(date -u +%Y%m%dT%H%M%SZ)}
BENCH_TAG=threads
# shellcheck source=bench/lib.sh
source "$ROOT/bench/lib.sh"

[[ $REPS =~ ^[1-9][0-9]*$ ]] || die 2 "REPS must be a positive integer, got '$REPS'"
for v in CONNECTIONS RATE; do [[ ${!v} =~ ^[1-9][0-9]*$ ]] || die 2 "$v must be a positive integer"; done
[[ $DURATION =~ ^[1-9][0-9]*s$ ]] || die 2 "DURATION must be whole seconds like 10s, got '$DURATION'"
for io in $IOS; do [[ $io =~ ^(uring|epoll)$ ]] || die 2 "IOS holds uring and/or epoll, got '$io'"; done
NGINX=$(command -v nginx 2>/dev/null || echo /usr/sbin/nginx)
[[ -x $NGINX ]] || die 2 "nginx is needed (bench/compare.sh installs it)"
[[ -x /usr/bin/time ]] || die 2 "/usr/bin/time is needed (Debian package time)"
[[ $CLIENT_CPU != "$SERVER_CPU" ]] || die 2 "CLIENT_CPU and SERVER_CPU must differ"

build_volley
TMP=$(mktemp -d -t volley-threads.XXXXXX)
cp "$VOLLEY" "$TMP/volley"
PORT=${PORT:-$(free_port)}
write_nginx_conf "$TMP" "$PORT"
NGINX_PID=
cleanup() { stop_pid "$NGINX_PID"; rm -rf "$TMP"; }
trap cleanup EXIT
trap 'exit 130' INT TERM
taskset -c "$SERVER_CPU" "$NGINX" -p "$TMP/" -c "$TMP/nginx.conf" -e "$TMP/error.log" -g "daemon off;" &
NGINX_PID=$!
for _ in $(seq 50); do (exec 3<>"/dev/tcp/127.0.0.1/$PORT") 2>/dev/null && break; sleep 0.1; done
URL="http://127.0.0.1:$PORT/"
mkdir -p "$OUT_DIR"

CELLS=()
for io in $IOS; do for t in 1 2; do CELLS+=("closed-$t-$io" "open-$t-$io"); done; done
n=${#CELLS[@]}
for ((rep = 1; rep <= REPS; rep++)); do
    for ((k = 0; k < n; k++)); do
        cell=${CELLS[$(((k + rep - 1) % n))]}
        IFS=- read -r kind t io <<<"$cell"
        args=(run "$URL" -c "$CONNECTIONS" -t "$t" -d "$DURATION" --io "$io" --allow-shortfall --quiet)
        cpus=$CLIENT_CPU
        # The same rate per thread: a thread's wake-ups per request depend on its own rate.
        [[ $kind == open ]] && args+=(-R "$((RATE * t / 2))")
        [[ $kind == open && $t == 2 ]] && cpus=$OPEN_T2_CPUS
        base="$OUT_DIR/$cell-rep$rep"
        wait_quiet >"$base.busy"
        log "rep $rep/$REPS: $cell (CPUs $cpus)"
        /usr/bin/time -f '%U %S %e %M %w %c' -o "$base.time" taskset -c "$cpus" "$TMP/volley" "${args[@]}" \
            --json "$base.json" >"$base.out" 2>"$base.err" || die 1 "$cell rep $rep failed: $(tail -n 3 "$base.err")"
    done
done

OUT_DIR="$OUT_DIR" BENCH_MD="$BENCH_MD" UPDATE_MD="$UPDATE_MD" REPS="$REPS" DURATION="$DURATION" \
    CONNECTIONS="$CONNECTIONS" RATE="$RATE" VOLLEY_VERSION="$VOLLEY_VERSION" IOS="$IOS" \
    CLIENT_CPU="$CLIENT_CPU" SERVER_CPU="$SERVER_CPU" OPEN_T2_CPUS="$OPEN_T2_CPUS" python3 - <<'EOF'
import glob, json, os, re, statistics, sys
E = os.environ
out, reps = E["OUT_DIR"], int(E["REPS"])
runs = {}
for f in glob.glob(os.path.join(out, "*.json")):
    cell, rep = re.match(r"(.*)-rep(\d+)\.json$", os.path.basename(f)).groups()
    d = json.load(open(f))
    u, s, e, m, w, c = open(f[:-5] + ".time").read().split()[-6:]
    n = d["requests"]["completed"]
    runs.setdefault(cell, {})[int(rep)] = dict(cpu=(float(u) + float(s)) / n * 1e6, rps=d["throughput_rps"],
                                                cs=(int(w) + int(c)) / n,
                                                io=d["client"].get("io"), busy=int(open(f[:-5] + ".busy").read()))
med = statistics.median
L = [f"Run by `REPS={reps} DURATION={E['DURATION']} RATE={E['RATE']} bench/threads.sh` ({E['VOLLEY_VERSION']}); "
     f"nginx (1 worker) on CPU {E['SERVER_CPU']}; volley on CPU {E['CLIENT_CPU']}, except the open loop's -t 2 on CPUs "
     f"{E['OPEN_T2_CPUS']} (its threads run side by side); {E['CONNECTIONS']} connections; raw outputs in "
     f"`{os.path.relpath(out, os.path.dirname(E['BENCH_MD']))}/`. Context switches are volley's voluntary + "
     "involuntary ones (/usr/bin/time) per request.", "",
     "| load | --io | -t 1 CPU µs/req | -t 2 CPU µs/req | -t 2 ÷ -t 1 (per repetition: median, range) | "
     "context switches/req -t 1 → -t 2 | req/s -t 1 | req/s -t 2 |",
     "|---|---|---:|---:|---:|---:|---:|---:|"]
worst = []
for io in E["IOS"].split():
    for kind in ("closed", "open"):
        a, b = runs.get(f"{kind}-1-{io}", {}), runs.get(f"{kind}-2-{io}", {})
        ratios = [b[r]["cpu"] / a[r]["cpu"] for r in a if r in b]
        if not ratios:
            continue
        worst.append(max(abs(x - 1) for x in ratios))
        load = ("closed loop" if kind == "closed"
                else f"-R {int(E['RATE']) // 2:,} -t 1 / -R {int(E['RATE']):,} -t 2 ({int(E['RATE']) // 2:,} per thread)")
        L.append(f"| {load} | {io} | {med(x['cpu'] for x in a.values()):.2f} | {med(x['cpu'] for x in b.values()):.2f} | "
                 f"**{med(ratios):.3f}** ({min(ratios):.3f}–{max(ratios):.3f}) | "
                 f"{med(x['cs'] for x in a.values()):.3f} → {med(x['cs'] for x in b.values()):.3f} | "
                 f"{med(x['rps'] for x in a.values()):,.0f} | "
                 f"{med(x['rps'] for x in b.values()):,.0f} |")
busy = [x["busy"] for c in runs.values() for x in c.values()]
L += ["", f"Machine busy before the runs: at most {max(busy)} % (other work)."]
text = "\n".join(L)
print(text)
if E.get("UPDATE_MD", "1") == "1":
    md = open(E["BENCH_MD"]).read()
    begin, end = "<!-- threads:begin -->", "<!-- threads:end -->"
    if begin in md:
        md = md[:md.index(begin) + len(begin)] + "\n" + text + "\n" + md[md.index(end):]
    else:
        md += f"\n## Worker threads: client CPU per request, -t 2 against -t 1 (`bench/threads.sh`)\n\n{begin}\n{text}\n{end}\n"
    open(E["BENCH_MD"], "w").write(md)
EOF
