#!/usr/bin/env bash
# bench/live.sh: what watching a run costs volley. Requests per client CPU-second with the
# live views on against off, in one interleaved session on one pinned nginx worker (loopback):
#
#   off        nothing watches
#   dashboard  --dashboard, with a page reading /events all along (curl -N, on SERVER_CPU)
#   metrics    --metrics-addr, scraped every second (curl, on SERVER_CPU)
#   remote     --prometheus-remote-write to a receiver on SERVER_CPU (answers 204)
#   all        the three at once
#
# for a closed loop (keep-alive, the busiest a run gets) and an open loop at RATE. Only
# volley's own CPU counts (user + sys, /usr/bin/time): the readers run on the server's CPU.
# Every repetition runs every cell, in an order rotating by one per repetition. Target: each
# view costs at most 3 %. The table goes between <!-- live:begin --> and <!-- live:end --> of
# BENCHMARKS.md.
#
# Usage:  bench/live.sh                       # 3 reps x 10 s x 10 cells: about 6 minutes
#         REPS=1 DURATION=3s bench/live.sh
#
# Environment (all optional):
#   REPS=3  DURATION=10s  CONNECTIONS=50  RATE=20000  CLIENT_CPU=0  SERVER_CPU=1
#   VOLLEY=<path> / VOLLEY_REV=<rev>   OUT_DIR  BENCH_MD  UPDATE_MD=0  BUSY_MAX=20  WAIT_QUIET=120
#
# Exit codes: 0 ok, 1 a run failed or its output could not be parsed, 2 bad settings.
set -euo pipefail

REPS=${REPS:-3}
DURATION=${DURATION:-10s}
CONNECTIONS=${CONNECTIONS:-50}
RATE=${RATE:-20000}
CLIENT_CPU=${CLIENT_CPU:-0}
SERVER_CPU=${SERVER_CPU:-1}
UPDATE_MD=${UPDATE_MD:-1}
BUSY_MAX=${BUSY_MAX:-20}
WAIT_QUIET=${WAIT_QUIET:-120}

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BENCH_MD=${BENCH_MD:-$ROOT/BENCHMARKS.md}
TOOLS_DIR=${TOOLS_DIR:-$ROOT/target/bench-tools}
OUT_DIR=${OUT_DIR:-$ROOT/target/bench-live/$(date -u +%Y%m%dT%H%M%SZ)}
BENCH_TAG=live
# shellcheck source=bench/lib.sh
source "$ROOT/bench/lib.sh"

[[ $REPS =~ ^[1-9][0-9]*$ ]] || die 2 "REPS must be a positive integer, got '$REPS'"
for v in CONNECTIONS RATE; do [[ ${!v} =~ ^[1-9][0-9]*$ ]] || die 2 "$v must be a positive integer"; done
[[ $DURATION =~ ^[1-9][0-9]*s$ ]] || die 2 "DURATION must be whole seconds like 10s, got '$DURATION'"
NGINX=$(command -v nginx 2>/dev/null || echo /usr/sbin/nginx)
[[ -x $NGINX ]] || die 2 "nginx is needed (bench/compare.sh installs it)"
[[ -x /usr/bin/time ]] || die 2 "/usr/bin/time is needed (Debian package time)"
command -v curl >/dev/null || die 2 "curl is needed"
[[ $CLIENT_CPU != "$SERVER_CPU" ]] || die 2 "CLIENT_CPU and SERVER_CPU must differ"

build_volley
TMP=$(mktemp -d -t volley-live.XXXXXX)
cp "$VOLLEY" "$TMP/volley"
PORT=${PORT:-$(free_port)}
RW_PORT=$(free_port)
write_nginx_conf "$TMP" "$PORT"
NGINX_PID= RW_PID= READER_PID=
cleanup() { stop_pid "$READER_PID"; stop_pid "$RW_PID"; stop_pid "$NGINX_PID"; rm -rf "$TMP"; }
trap cleanup EXIT
trap 'exit 130' INT TERM
taskset -c "$SERVER_CPU" "$NGINX" -p "$TMP/" -c "$TMP/nginx.conf" -e "$TMP/error.log" -g "daemon off;" &
NGINX_PID=$!
# The remote-write receiver: reads each push and answers 204.
taskset -c "$SERVER_CPU" python3 - "$RW_PORT" <<'EOF' &
import http.server, sys
class H(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    def do_POST(self):
        self.rfile.read(int(self.headers.get("Content-Length", 0)))
        self.send_response(204); self.end_headers()
    def log_message(self, *a): pass
http.server.ThreadingHTTPServer(("127.0.0.1", int(sys.argv[1])), H).serve_forever()
EOF
RW_PID=$!
for p in "$PORT" "$RW_PORT"; do
    for _ in $(seq 50); do (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null && break; sleep 0.1; done
done
URL="http://127.0.0.1:$PORT/"
mkdir -p "$OUT_DIR"

# watch VIEW BASE: starts what reads VIEW's output once volley printed where it is.
watch() {
    local view=$1 base=$2 url murl
    for _ in $(seq 100); do grep -q "at http" "$base.err" 2>/dev/null && break; sleep 0.05; done
    url=$(grep -o 'dashboard at [^ ]*' "$base.err" | cut -d' ' -f3 || true)
    murl=$(grep -o 'metrics at [^ ]*' "$base.err" | cut -d' ' -f3 || true)
    (
        if [[ -n $url ]]; then
            taskset -c "$SERVER_CPU" curl -sN "${url/\/\?/\/events?}" >"$base.events" &
        fi
        if [[ -n $murl ]]; then
            while sleep 1; do taskset -c "$SERVER_CPU" curl -s "$murl" >>"$base.scrapes" || break; done &
        fi
        wait
    ) &
    READER_PID=$!
}

CELLS=()
for kind in closed open; do for view in off dashboard metrics remote all; do CELLS+=("$kind-$view"); done; done
n=${#CELLS[@]}
for ((rep = 1; rep <= REPS; rep++)); do
    for ((k = 0; k < n; k++)); do
        cell=${CELLS[$(((k + rep - 1) % n))]}
        IFS=- read -r kind view <<<"$cell"
        args=(run "$URL" -c "$CONNECTIONS" -t 1 -d "$DURATION" --allow-shortfall --quiet)
        [[ $kind == open ]] && args+=(-R "$RATE")
        [[ $view == dashboard || $view == all ]] && args+=(--dashboard)
        [[ $view == metrics || $view == all ]] && args+=(--metrics-addr 127.0.0.1:0)
        [[ $view == remote || $view == all ]] && args+=(--prometheus-remote-write "http://127.0.0.1:$RW_PORT/api/v1/write")
        base="$OUT_DIR/$cell-rep$rep"
        wait_quiet >"$base.busy"
        log "rep $rep/$REPS: $cell"
        : >"$base.err"
        /usr/bin/time -f '%U %S %e %M' -o "$base.time" taskset -c "$CLIENT_CPU" "$TMP/volley" "${args[@]}" \
            --json "$base.json" >"$base.out" 2>"$base.err" &
        vpid=$!
        [[ $view == off ]] || watch "$view" "$base"
        wait "$vpid" || die 1 "$cell rep $rep failed: $(tail -n 3 "$base.err")"
        # The readers end with volley (its servers close); a scrape loop is stopped here.
        stop_pid "$READER_PID"; READER_PID=
    done
done

OUT_DIR="$OUT_DIR" BENCH_MD="$BENCH_MD" UPDATE_MD="$UPDATE_MD" REPS="$REPS" DURATION="$DURATION" \
    CONNECTIONS="$CONNECTIONS" RATE="$RATE" VOLLEY_VERSION="$VOLLEY_VERSION" \
    CLIENT_CPU="$CLIENT_CPU" SERVER_CPU="$SERVER_CPU" python3 - <<'EOF'
import glob, json, os, re, statistics
E = os.environ
out, reps = E["OUT_DIR"], int(E["REPS"])
runs = {}
for f in glob.glob(os.path.join(out, "*.json")):
    cell, rep = re.match(r"(.*)-rep(\d+)\.json$", os.path.basename(f)).groups()
    d = json.load(open(f))
    u, s, e, m = open(f[:-5] + ".time").read().split()[-4:]
    n = d["requests"]["completed"]
    base = f[:-5]
    ticks = open(base + ".events").read().count("event: tick") if os.path.exists(base + ".events") else None
    scrapes = open(base + ".scrapes").read().count("# EOF") if os.path.exists(base + ".scrapes") else None
    failed = [w for w in d["warnings"] if w.startswith("remote write:")]
    runs.setdefault(cell, {})[int(rep)] = dict(cpu=(float(u) + float(s)) / n * 1e6, rps=d["throughput_rps"],
        rss=int(m) / 1024, ticks=ticks, scrapes=scrapes, rw_failed=bool(failed),
        busy=int(open(base + ".busy").read()))
med = statistics.median
L = [f"Run by `REPS={reps} DURATION={E['DURATION']} RATE={E['RATE']} bench/live.sh` ({E['VOLLEY_VERSION']}); "
     f"nginx (1 worker) on CPU {E['SERVER_CPU']}; volley (-t 1) on CPU {E['CLIENT_CPU']}; the page (curl -N on /events), "
     f"the scrapes (curl every second) and the remote-write receiver (Python, 204) on CPU {E['SERVER_CPU']}; "
     f"{E['CONNECTIONS']} connections; raw outputs in `{os.path.relpath(out, os.path.dirname(E['BENCH_MD']))}/`. "
     "CPU = volley's user + sys per completed request; cost = its ratio to `off` in the same repetition, minus 1.", "",
     "| load | views | CPU µs/req | cost against off (median, range) | req/s | max RSS | ticks read | scrapes | pushes failed |",
     "|---|---|---:|---:|---:|---:|---:|---:|---|"]
for kind in ("closed", "open"):
    off = runs.get(f"{kind}-off", {})
    for view in ("off", "dashboard", "metrics", "remote", "all"):
        c = runs.get(f"{kind}-{view}", {})
        if not c:
            continue
        costs = [(c[r]["cpu"] / off[r]["cpu"] - 1) * 100 for r in c if r in off]
        cost = "—" if view == "off" else f"**{med(costs):+.1f} %** ({min(costs):+.1f} to {max(costs):+.1f})"
        load = "closed loop" if kind == "closed" else f"-R {int(E['RATE']):,}"
        t = [x["ticks"] for x in c.values() if x["ticks"] is not None]
        s = [x["scrapes"] for x in c.values() if x["scrapes"] is not None]
        L.append(f"| {load} | {view} | {med(x['cpu'] for x in c.values()):.2f} | {cost} | "
                 f"{med(x['rps'] for x in c.values()):,.0f} | {med(x['rss'] for x in c.values()):.1f} MiB | "
                 f"{med(t) if t else '—'} | {med(s) if s else '—'} | "
                 f"{sum(x['rw_failed'] for x in c.values())} of {len(c)} runs |")
busy = [x["busy"] for c in runs.values() for x in c.values()]
L += ["", f"Machine busy before the runs: at most {max(busy)} % (other work)."]
text = "\n".join(L)
print(text)
if E.get("UPDATE_MD", "1") == "1":
    md = open(E["BENCH_MD"]).read()
    begin, end = "<!-- live:begin -->", "<!-- live:end -->"
    if begin in md:
        md = md[:md.index(begin) + len(begin)] + "\n" + text + "\n" + md[md.index(end):]
    else:
        md += f"\n## Watching a run: what the live views cost (`bench/live.sh`)\n\n{begin}\n{text}\n{end}\n"
    open(E["BENCH_MD"], "w").write(md)
EOF
