#!/usr/bin/env bash
# bench/compare.sh: volley vs wrk against one pinned nginx worker on loopback.
#
# Both clients run closed loop (1 thread, 50 connections) against an nginx
# that answers `GET /` with 200 "." from memory. nginx is pinned to one core,
# the clients to the other; runs are interleaved (rep 1: wrk then volley,
# rep 2: volley then wrk, ...) and the medians are reported. Each client's
# CPU time comes from /usr/bin/time (user + sys), measured the same way for
# both.
#
# Usage:  bench/compare.sh                       # 3 reps x 10 s, about 2 minutes
#         REPS=1 DURATION=3s bench/compare.sh    # quick run
#
# Environment (all optional):
#   REPS=3  DURATION=10s  CONNECTIONS=50  CLIENT_CPU=0  SERVER_CPU=1
#   PORT=<free port picked automatically>
#   VOLLEY=<path>       use this binary instead of building target/release/volley
#   OUT_DIR=<dir>       raw outputs (default target/bench-compare/<UTC time>)
#   BENCH_MD=<file>     Markdown file whose compare section is rewritten
#                       (default BENCHMARKS.md at the repository root)
#   UPDATE_MD=0         print the results, leave BENCH_MD alone
#   BUSY_MAX=20         before each run, wait while more than this % of all CPUs
#   WAIT_QUIET=120      is busy with other work, for at most this many seconds
#                       (then run anyway; the table flags such runs)
#   OTHER_MAX=25        a run during which other work used more than this % of
#   RETRIES=2           one core is repeated, at most this many times
#
# Exit codes: 0 ok, 1 a run failed or its output could not be parsed,
# 2 missing prerequisites / bad settings.
set -euo pipefail

REPS=${REPS:-3}
DURATION=${DURATION:-10s}
CONNECTIONS=${CONNECTIONS:-50}
CLIENT_CPU=${CLIENT_CPU:-0}
SERVER_CPU=${SERVER_CPU:-1}
UPDATE_MD=${UPDATE_MD:-1}
BUSY_MAX=${BUSY_MAX:-20}
WAIT_QUIET=${WAIT_QUIET:-120}
OTHER_MAX=${OTHER_MAX:-25}
RETRIES=${RETRIES:-2}

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BENCH_MD=${BENCH_MD:-$ROOT/BENCHMARKS.md}
STAMP=$(date -u +%Y%m%dT%H%M%SZ)
OUT_DIR=${OUT_DIR:-$ROOT/target/bench-compare/$STAMP}

log() { printf '[compare] %s\n' "$*" >&2; }
die() { local code=$1; shift; printf '[compare] error: %s\n' "$*" >&2; exit "$code"; }

[[ $REPS =~ ^[1-9][0-9]*$ ]] || die 2 "REPS must be a positive integer, got '$REPS'"
[[ $CONNECTIONS =~ ^[1-9][0-9]*$ ]] || die 2 "CONNECTIONS must be a positive integer, got '$CONNECTIONS'"
for v in BUSY_MAX WAIT_QUIET OTHER_MAX RETRIES; do [[ ${!v} =~ ^[0-9]+$ ]] || die 2 "$v must be a non-negative integer"; done
[[ $DURATION =~ ^[0-9]+[smh]$ ]] || die 2 "DURATION must look like 10s, 2m or 1h (wrk and volley both accept it), got '$DURATION'"

# ---------------------------------------------------------------- report
report() { # render $OUT_DIR (raw outputs + meta.json) as Markdown; rewrite the BENCH_MD section
    export OUT_DIR BENCH_MD UPDATE_MD ROOT
    python3 - <<'PYEOF'
import json, os, re, statistics, sys

out_dir = os.environ["OUT_DIR"]
try:
    E = json.load(open(os.path.join(out_dir, "meta.json")))
except Exception as ex:
    print(f"[compare] error: cannot read {out_dir}/meta.json: {ex}", file=sys.stderr)
    sys.exit(1)
E.update({k: os.environ[k] for k in ("BENCH_MD", "UPDATE_MD", "ROOT")})
reps = int(E["REPS"])

def fail(msg):
    print(f"[compare] error: {msg}", file=sys.stderr)
    sys.exit(1)

def read_time(base):
    try:
        u, s, e, m = open(base + ".time").read().split()[-4:]
        return float(u), float(s), float(e), int(m) * 1024
    except Exception as ex:
        fail(f"cannot read {base}.time: {ex}")

def to_us(v, unit):
    return float(v) * {"us": 1, "ms": 1e3, "s": 1e6, "m": 6e7}[unit]

HZ = os.sysconf("SC_CLK_TCK")
def during(base, client_cpu):
    """nginx CPU and the CPU used by everything else while the client ran (% of one core)."""
    try:
        (b0, t0, n0), (b1, t1, n1) = [map(int, l.split()) for l in open(base + ".ticks").read().splitlines()[:2]]
    except Exception as ex:
        fail(f"cannot read {base}.ticks: {ex}")
    ncpu = int(E["NCPU"])
    wall = (t1 - t0) / HZ / ncpu
    nginx = (n1 - n0) / HZ
    other = (b1 - b0) / HZ - nginx - client_cpu
    return dict(nginx_pct=100 * nginx / wall, other_pct=max(0.0, 100 * other / wall))

def parse_wrk(base):
    text = open(base + ".out").read()
    m = re.search(r"(\d+) requests in ([\d.]+)(us|ms|s|m),", text)
    r = re.search(r"Requests/sec:\s*([\d.]+)", text)
    lat = dict(re.findall(r"^\s*(50|99)%\s+([\d.]+\w+)", text, re.M))
    if not (m and r and "50" in lat and "99" in lat):
        fail(f"cannot parse wrk output {base}.out")
    def lat_us(s):
        v, unit = re.match(r"([\d.]+)(\w+)", s).groups()
        return to_us(v, unit)
    notes = [l.strip() for l in text.splitlines() if re.search(r"Socket errors|Non-2xx", l)]
    return dict(requests=int(m.group(1)), rps=float(r.group(1)), p50=lat_us(lat["50"]),
                p99=lat_us(lat["99"]), notes=notes, self_cpu=None)

def parse_volley(base):
    try:
        d = json.load(open(base + ".json"))
    except Exception as ex:
        fail(f"cannot read {base}.json: {ex}")
    notes = []
    errs = d["requests"]["errors"]
    if errs:
        notes.append(f"errors {errs}: {d['errors']}")
    if d["requests"].get("unfinished"):
        notes.append(f"unfinished {d['requests']['unfinished']}")
    non200 = {k: v for k, v in d.get("status_codes", {}).items() if k != "200"}
    if non200:
        notes.append(f"statuses {non200}")
    c = d.get("client", {})
    if c.get("saturated"):
        notes.append(f"volley says client saturated ({c.get('saturated_fraction', 0):.0%} of seconds)")
    for w in d.get("warnings", []):
        if not w.startswith(("closed loop:", "client saturated")):
            notes.append("volley warning: " + w)
    c = d.get("client", {})
    self_cpu = (c.get("cpu_user_s") or 0) + (c.get("cpu_sys_s") or 0)
    return dict(requests=d["requests"]["completed"], rps=d["throughput_rps"],
                p50=d["latency_us"]["p50"], p99=d["latency_us"]["p99"], notes=notes, self_cpu=self_cpu)

runs = []
for rep in range(1, reps + 1):
    order = ["wrk", "volley"] if rep % 2 else ["volley", "wrk"]
    for pos, tool in enumerate(order, 1):
        base = os.path.join(out_dir, f"{tool}-rep{rep}")
        r = parse_wrk(base) if tool == "wrk" else parse_volley(base)
        u, s, e, rss = read_time(base)
        if r["requests"] <= 0:
            fail(f"{tool} rep {rep}: no requests completed")
        r.update(tool=tool, rep=rep, pos=pos, user=u, sys=s, wall=e, rss=rss,
                 busy=int(open(base + ".busy").read()),
                 **during(base, u + s),
                 cpu_per_m=(u + s) / r["requests"] * 1e6)
        runs.append(r)

med = statistics.median
def tool_runs(t): return [r for r in runs if r["tool"] == t]
summary = {}
for t in ("wrk", "volley"):
    rs = tool_runs(t)
    summary[t] = {k: med([r[k] for r in rs]) for k in ("rps", "cpu_per_m", "p50", "p99")}

# Requests per client CPU-second, volley / wrk, paired within each repetition.
pair = {}
for rep in range(1, reps + 1):
    w = next(r for r in runs if r["tool"] == "wrk" and r["rep"] == rep)
    v = next(r for r in runs if r["tool"] == "volley" and r["rep"] == rep)
    pair[rep] = (w["cpu_per_m"] / v["cpu_per_m"], v["rps"] / w["rps"])
eff = [p[0] for p in pair.values()]
thr = [p[1] for p in pair.values()]

def us(v): return f"{v:,.0f} µs"
def rng(xs): return f"{min(xs):.2f}–{max(xs):.2f}" if len(xs) > 1 else f"{xs[0]:.2f}"

L = []
L.append(f"Run {E['DATE']} by `bench/compare.sh` (REPS={reps}, DURATION={E['DURATION']}, "
         f"CONNECTIONS={E['CONNECTIONS']}); raw outputs were in `{os.path.relpath(out_dir, E['ROOT'])}/`.")
L.append("")
L.append(f"- Machine: {E['CPU_MODEL'] or 'unknown CPU'}, {E['NCPU']} CPUs, {E['KERNEL']}; "
         f"server on CPU {E['SERVER_CPU']}, clients on CPU {E['CLIENT_CPU']}")
L.append(f"- Versions: {E['WRK_VERSION']} · {E['NGINX_VERSION']} · {E['VOLLEY_VERSION']}")
OTHER_MAX = int(E["OTHER_MAX"])  # % of one core used by neither client nor nginx
busy_runs = [r for r in runs if r["busy"] > int(E["BUSY_MAX"]) or r["other_pct"] > OTHER_MAX]
if busy_runs:
    L.append(f"- **Warning:** {len(busy_runs)} of {len(runs)} runs had other work on the machine "
             f"(over {E['BUSY_MAX']} % busy just before, or over {OTHER_MAX} % of a core used by neither client "
             "nor nginx during the run); their numbers are noisy.")
L.append("")
L.append("```sh")
L.append(E["CMD_NGINX"] + "   # $TMP/nginx.conf as generated by bench/compare.sh")
L.append(E["CMD_WRK"])
L.append(E["CMD_VOLLEY"])
L.append("```")
L.append("")
L.append(f"Medians of {reps} run{'s' if reps > 1 else ''} per tool (client CPU = user + sys from `/usr/bin/time`; "
         "latency: wrk `--latency`, volley `latency_us`):")
L.append("")
L.append("| tool | req/s | CPU-s per million requests | p50 | p99 |")
L.append("|---|---:|---:|---:|---:|")
for t in ("wrk", "volley"):
    s = summary[t]
    L.append(f"| {t} | {s['rps']:,.0f} | {s['cpu_per_m']:.2f} | {us(s['p50'])} | {us(s['p99'])} |")
L.append("")
L.append(f"**volley / wrk, requests per client CPU-second: {med(eff):.2f}** "
         f"(median of the per-repetition ratios; range {rng(eff)}). "
         f"Throughput ratio volley / wrk: {med(thr):.2f} (range {rng(thr)}).")
L.append("")
L.append("All runs, in the order they ran:")
L.append("")
L.append("| rep | tool | req/s | requests | user s | sys s | CPU-s per M req | p50 | p99 | max RSS | nginx CPU | other CPU | notes |")
L.append("|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|")
for r in runs:
    notes = list(r["notes"])
    if r["busy"] > int(E["BUSY_MAX"]):
        notes.insert(0, f"**machine {r['busy']} % busy before the run**")
    if r["other_pct"] > OTHER_MAX:
        notes.insert(0, "**other work during the run**")
    if r["self_cpu"] is not None:
        notes.insert(0, f"self-reported CPU {r['self_cpu']:.2f} s")
    L.append(f"| {r['rep']} | {r['tool']} | {r['rps']:,.0f} | {r['requests']:,} | {r['user']:.2f} | {r['sys']:.2f} | "
             f"{r['cpu_per_m']:.2f} | {us(r['p50'])} | {us(r['p99'])} | {r['rss'] / 2**20:.1f} MiB | "
             f"{r['nginx_pct']:.0f} % | {r['other_pct']:.0f} % | {'; '.join(notes)} |")
body = "\n".join(L)

print()
print(body)
json.dump(dict(summary=summary, runs=runs, ratio_cpu_efficiency=eff, ratio_throughput=thr),
          open(os.path.join(out_dir, "summary.json"), "w"), indent=2)

if E["UPDATE_MD"] != "0":
    path = E["BENCH_MD"]
    begin, end = "<!-- compare:begin -->", "<!-- compare:end -->"
    text = open(path).read() if os.path.exists(path) else "# Benchmarks\n"
    section = f"{begin}\n{body}\n{end}"
    if begin in text and end in text and text.index(begin) < text.index(end):
        text = text[:text.index(begin)] + section + text[text.index(end) + len(end):]
    else:
        text = text.rstrip("\n") + "\n\n" + section + "\n"
    tmp = path + ".tmp"
    open(tmp, "w").write(text)
    os.replace(tmp, path)
    print(f"\n[compare] rewrote the compare section of {path}", file=sys.stderr)
PYEOF
}

if [[ -n ${REPORT_FROM:-} ]]; then   # re-render an earlier run without measuring again
    [[ -f $REPORT_FROM/meta.json ]] || die 2 "REPORT_FROM=$REPORT_FROM has no meta.json"
    OUT_DIR=$(cd "$REPORT_FROM" && pwd)
    report
    exit 0
fi

# ---------------------------------------------------------------- prerequisites
missing=()
command -v wrk >/dev/null 2>&1 || missing+=(wrk)
command -v nginx >/dev/null 2>&1 || [[ -x /usr/sbin/nginx ]] || missing+=(nginx)
[[ -x /usr/bin/time ]] || missing+=(time)
command -v taskset >/dev/null 2>&1 || missing+=(util-linux)
command -v python3 >/dev/null 2>&1 || missing+=(python3)
if ((${#missing[@]})); then
    [[ $(id -u) -eq 0 ]] || die 2 "missing ${missing[*]}; run as root to install them, or install them yourself"
    command -v apt-get >/dev/null 2>&1 || die 2 "missing ${missing[*]} and apt-get is not available"
    log "installing: ${missing[*]}"
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq || die 2 "apt-get update failed"
    pkgs=()
    for p in "${missing[@]}"; do [[ $p == nginx ]] || pkgs+=("$p"); done
    if ((${#pkgs[@]})); then
        apt-get install -y -qq --no-install-recommends "${pkgs[@]}" >/dev/null || die 2 "apt-get install ${pkgs[*]} failed"
    fi
    if [[ " ${missing[*]} " == *" nginx "* ]]; then
        # nginx-light is the smallest build (Debian 12); later releases only ship nginx.
        apt-get install -y -qq --no-install-recommends nginx-light >/dev/null 2>&1 \
            || apt-get install -y -qq --no-install-recommends nginx >/dev/null \
            || die 2 "could not install nginx-light or nginx"
    fi
fi
NGINX=$(command -v nginx 2>/dev/null || echo /usr/sbin/nginx)
[[ -x $NGINX ]] || die 2 "nginx not found after installation"

ncpu=$(nproc --all)
taskset -c "$CLIENT_CPU" true 2>/dev/null || die 2 "cannot pin to CLIENT_CPU=$CLIENT_CPU (this machine has $ncpu CPUs)"
taskset -c "$SERVER_CPU" true 2>/dev/null || die 2 "cannot pin to SERVER_CPU=$SERVER_CPU (this machine has $ncpu CPUs)"
[[ $CLIENT_CPU != "$SERVER_CPU" ]] || die 2 "CLIENT_CPU and SERVER_CPU must differ"

if [[ -n ${VOLLEY:-} ]]; then
    [[ -x $VOLLEY ]] || die 2 "VOLLEY=$VOLLEY is not executable"
else
    command -v cargo >/dev/null 2>&1 || die 2 "cargo not found (or set VOLLEY=/path/to/volley)"
    log "cargo build --release"
    (cd "$ROOT" && cargo build --release --quiet) || die 2 "cargo build --release failed"
    VOLLEY=$ROOT/target/release/volley
fi
VOLLEY_VERSION=$("$VOLLEY" --version) || die 2 "$VOLLEY --version failed"
if [[ $VOLLEY == "$ROOT/target/release/volley" ]] && git -C "$ROOT" rev-parse --short HEAD >/dev/null 2>&1; then
    VOLLEY_VERSION+=" (built from git $(git -C "$ROOT" rev-parse --short HEAD)"
    [[ -z $(git -C "$ROOT" status --porcelain -- src Cargo.toml Cargo.lock 2>/dev/null) ]] || VOLLEY_VERSION+=" with uncommitted changes"
    VOLLEY_VERSION+=")"
fi
WRK_VERSION=$( (wrk -v 2>&1 || true) | head -n1 | sed 's/ *Copyright.*//')
NGINX_VERSION=$("$NGINX" -v 2>&1 | head -n1 | sed 's/^nginx version: //')

# ---------------------------------------------------------------- nginx
TMP=$(mktemp -d -t volley-compare.XXXXXX)
# Run a private copy, so a rebuild of target/release/volley during the runs
# cannot mix two binaries in one comparison.
cp "$VOLLEY" "$TMP/volley"
VOLLEY_SRC=$VOLLEY
VOLLEY=$TMP/volley
NGINX_PID=
CLIENT_PID=
cleanup() {
    local rc=$? p
    if [[ -n $CLIENT_PID ]]; then   # /usr/bin/time and the client it runs
        for p in $(pgrep -P "$CLIENT_PID" || true) "$CLIENT_PID"; do kill -TERM "$p" 2>/dev/null || true; done
        wait "$CLIENT_PID" 2>/dev/null || true
    fi
    if [[ -n $NGINX_PID ]] && kill -0 "$NGINX_PID" 2>/dev/null; then
        kill -TERM "$NGINX_PID" 2>/dev/null || true   # master stops its worker
        for _ in $(seq 50); do kill -0 "$NGINX_PID" 2>/dev/null || break; sleep 0.1; done
        kill -KILL "$NGINX_PID" 2>/dev/null || true
        wait "$NGINX_PID" 2>/dev/null || true
    fi
    rm -rf "$TMP"
    exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

if [[ -z ${PORT:-} ]]; then
    PORT=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
fi
python3 -c 'import socket, sys; socket.socket().bind(("127.0.0.1", int(sys.argv[1])))' "$PORT" 2>/dev/null \
    || die 2 "127.0.0.1:$PORT is already in use (or not a valid port); choose another PORT"
URL="http://127.0.0.1:$PORT/"

cat >"$TMP/nginx.conf" <<EOF
worker_processes 1;
worker_rlimit_nofile 20000;
pid $TMP/nginx.pid;
error_log $TMP/error.log;
events { worker_connections 16384; }
http {
    access_log off;
    keepalive_requests 1000000;
    server {
        listen 127.0.0.1:$PORT;
        location / { return 200 '.'; }
    }
}
EOF
NGINX_CMD=(taskset -c "$SERVER_CPU" "$NGINX" -p "$TMP/" -c "$TMP/nginx.conf" -e "$TMP/error.log" -g "daemon off;")
"${NGINX_CMD[@]}" >"$TMP/nginx.out" 2>&1 &
NGINX_PID=$!   # taskset execs nginx, so this is the master's PID

ready=0
for _ in $(seq 100); do
    kill -0 "$NGINX_PID" 2>/dev/null || break
    if python3 - "$URL" <<'EOF' 2>/dev/null; then ready=1; break; fi
import sys, urllib.request
with urllib.request.urlopen(sys.argv[1], timeout=1) as r:
    ok = r.status == 200 and r.read() == b"." and r.headers.get("Server", "").startswith("nginx")
    sys.exit(0 if ok else 1)
EOF
    sleep 0.1
done
if ((!ready)); then
    cat "$TMP/nginx.out" "$TMP/error.log" >&2 2>/dev/null || true
    die 2 "nginx did not answer 200 '.' on $URL within 10 s"
fi
log "$NGINX_VERSION (pid $NGINX_PID) on $URL, pinned to CPU $SERVER_CPU"

# ---------------------------------------------------------------- runs
mkdir -p "$OUT_DIR"
cp "$TMP/nginx.conf" "$OUT_DIR/nginx.conf"
WRK_CMD=(taskset -c "$CLIENT_CPU" wrk -t1 "-c$CONNECTIONS" "-d$DURATION" --latency "$URL")
VOLLEY_CMD=(taskset -c "$CLIENT_CPU" "$VOLLEY" run "$URL" -t 1 -c "$CONNECTIONS" -d "$DURATION" --quiet --json)

busy_pct() { # % of all CPUs busy over the next second (our own clients are not running then)
    local a b
    read -r -a a < <(head -n1 /proc/stat)
    sleep 1
    read -r -a b < <(head -n1 /proc/stat)
    local total=0 idle i
    for ((i = 1; i < ${#a[@]}; i++)); do total=$((total + b[i] - a[i])); done
    idle=$((b[4] - a[4] + b[5] - a[5]))
    ((total > 0)) || total=1
    echo $(((total - idle) * 100 / total))
}

ticks_machine() { # busy and total clock ticks of all CPUs so far
    local a i busy=0 total=0
    read -r -a a < <(head -n1 /proc/stat)
    for ((i = 1; i <= 8 && i < ${#a[@]}; i++)); do total=$((total + a[i])); done
    busy=$((total - a[4] - a[5]))
    echo "$busy $total"
}
ticks_nginx() { # utime + stime of the nginx master and its workers, in clock ticks
    local p sum=0 f
    for p in "$NGINX_PID" $(pgrep -P "$NGINX_PID" || true); do
        f=$(cat "/proc/$p/stat" 2>/dev/null) || continue
        f=${f##*) }   # fields after the command name; utime, stime are fields 12, 13 from here
        read -r -a f <<<"$f"
        sum=$((sum + f[11] + f[12]))
    done
    echo "$sum"
}

wait_quiet() { # wait (bounded) until other work uses at most BUSY_MAX % of the machine; print the last reading
    local busy waited=0
    busy=$(busy_pct)
    while ((busy > BUSY_MAX && waited < WAIT_QUIET)); do
        ((waited == 0)) && log "machine is ${busy}% busy with other work; waiting up to ${WAIT_QUIET}s for it to drop to ${BUSY_MAX}%"
        sleep 4
        waited=$((waited + 5))
        busy=$(busy_pct)
    done
    ((busy <= BUSY_MAX)) || log "warning: still ${busy}% busy; running anyway (flagged in the table)"
    echo "$busy"
}

run_client() { # tool rep
    local tool=$1 rep=$2 base="$OUT_DIR/$1-rep$2" cmd rc attempt other
    if [[ $tool == wrk ]]; then cmd=("${WRK_CMD[@]}"); else cmd=("${VOLLEY_CMD[@]}" "$base.json"); fi
    for ((attempt = 0; ; attempt++)); do
        wait_quiet >"$base.busy"
        log "rep $rep/$REPS: $tool"
        rc=0
        echo "$(ticks_machine) $(ticks_nginx)" >"$base.ticks"
        # In the background plus wait, so that a signal to this script is handled at once.
        /usr/bin/time -f '%U %S %e %M' -o "$base.time" "${cmd[@]}" >"$base.out" 2>&1 &
        CLIENT_PID=$!
        wait "$CLIENT_PID" || rc=$?
        CLIENT_PID=
        echo "$(ticks_machine) $(ticks_nginx)" >>"$base.ticks"
        if ((rc != 0)); then
            tail -n 20 "$base.out" >&2
            die 1 "$tool exited with $rc in rep $rep (output: $base.out)"
        fi
        kill -0 "$NGINX_PID" 2>/dev/null || die 1 "nginx died during the $tool run of rep $rep"
        # % of one core used by neither the client nor nginx while the client ran
        other=$(awk -v hz="$(getconf CLK_TCK)" -v n="$ncpu" '
            NR == 1 { b0 = $1; t0 = $2; n0 = $3 } NR == 2 { b1 = $1; t1 = $2; n1 = $3 }
            FILENAME ~ /time$/ { c = $1 + $2 }
            END { wall = (t1 - t0) / hz / n; o = ((b1 - b0) - (n1 - n0)) / hz - c; printf "%d", (o > 0 ? 100 * o / wall : 0) }
        ' "$base.ticks" "$base.time")
        ((other > OTHER_MAX && attempt < RETRIES)) || break
        log "other work used ${other}% of a core during this run; repeating it ($((attempt + 1))/$RETRIES)"
    done
}

for ((rep = 1; rep <= REPS; rep++)); do
    if ((rep % 2)); then order=(wrk volley); else order=(volley wrk); fi
    for tool in "${order[@]}"; do run_client "$tool" "$rep"; done
done

# ---------------------------------------------------------------- metadata
quote() { # for display: single quotes where needed (no argument here contains one)
    local out="" a
    for a in "$@"; do
        if [[ $a =~ ^[A-Za-z0-9_./:=@%+,-]+$ ]]; then out+="$a "; else out+="'$a' "; fi
    done
    printf '%s' "${out% }"
}
short() { sed -e "s#$ROOT/##g" -e "s#$TMP#\$TMP#g"; }
CMD_NGINX=$(quote "${NGINX_CMD[@]}" | short)
CMD_WRK=$(quote "${WRK_CMD[@]}" | short)
CMD_VOLLEY="$(quote "${VOLLEY_CMD[@]}" | short) volley-repN.json   # \$TMP/volley: a copy of $(printf '%s' "$VOLLEY_SRC" | short)"
CPU_MODEL=$(grep -m1 '^model name' /proc/cpuinfo | sed 's/^[^:]*: *//' || true)
KERNEL=$(uname -sr)
NCPU=$ncpu
DATE=$(date -u +%Y-%m-%dT%H:%M:%SZ)
export CMD_NGINX CMD_WRK CMD_VOLLEY CPU_MODEL KERNEL NCPU DATE WRK_VERSION NGINX_VERSION VOLLEY_VERSION \
    REPS DURATION CONNECTIONS CLIENT_CPU SERVER_CPU BUSY_MAX OTHER_MAX
python3 - "$OUT_DIR/meta.json" <<'EOF'
import json, os, sys
keys = ("CMD_NGINX CMD_WRK CMD_VOLLEY CPU_MODEL KERNEL NCPU DATE WRK_VERSION NGINX_VERSION VOLLEY_VERSION "
        "REPS DURATION CONNECTIONS CLIENT_CPU SERVER_CPU BUSY_MAX OTHER_MAX").split()
json.dump({k: os.environ[k] for k in keys}, open(sys.argv[1], "w"), indent=2)
EOF
report
