#!/usr/bin/env bash
# bench/scale.sh: 10,000 virtual users on one small box, and memory over time.
#
# MODE=users   volley run URL --users 10000 --spawn-rate 100 -d 150s against one
#              nginx worker (the reference config of servers/nginx/) on loopback; nginx pinned to
#              SERVER_CPU, volley to CLIENT_CPU. Checks, from the RunResult JSON,
#              /proc and ss: the time series reaches 10,000 users,
#              connections.opened = 10,000, 10,000 client sockets ESTABLISHED and
#              every one of them carrying requests (their segs_out grows between
#              two snapshots 10 s apart on the plateau), requests keep flowing every
#              second, zero client-side errors, client RSS at 10,000 connections
#              (VmRSS sampled every 5 s; target <= 64 MiB; also client.rss_max_bytes).
# MODE=memory  volley run URL -R 20000 -c 50 -t 1 -d 60s: VmRSS sampled every
#              second; RSS at 10 s and at 60 s must agree within 5 %.
# MODE=all     both (default).
#
# Each mode rewrites its own section of BENCHMARKS.md (<!-- scale:begin/end -->,
# <!-- memory:begin/end -->).
#
# Environment (all optional):
#   MODE=all  USERS=10000  SPAWN_RATE=100  DURATION=150s  SAMPLE_EVERY=5
#   THINK_TIME=<dur>    give every user this pause between response and next request
#                       (locust-style users; default none: every user loops flat out)
#   SCALE_SECTION=scale the BENCHMARKS.md section the users run rewrites
#   USERS_FLAGS="..."   extra volley flags for the users run, e.g. "--timeout 10s"
#   NGINX_EVENTS="..."  extra nginx events{} directives, e.g. "multi_accept on;" (default none:
#                       the reference config of servers/nginx/, the same as bench/compare.sh)
#   MEM_RATE=20000  MEM_CONNECTIONS=50  MEM_DURATION=60s
#   CLIENT_CPU=0  SERVER_CPU=1  PORT=<free port>  VOLLEY=<path>  OUT_DIR=<dir>
#   VOLLEY_REV=<git rev>  build that commit (git archive into TOOLS_DIR=target/bench-tools)
#                         instead of the work tree
#   BENCH_MD=<file>  UPDATE_MD=0  REPORT_FROM=<dir>
#   BUSY_MAX=20  WAIT_QUIET=120   wait (bounded) for a quiet machine before each run
#
# Exit codes: 0 ok (targets are reported, not enforced), 1 a run failed or its
# output could not be parsed, 2 missing prerequisites / bad settings / a volley
# without --users.
set -euo pipefail

MODE=${MODE:-all}
USERS=${USERS:-10000}
SPAWN_RATE=${SPAWN_RATE:-100}
DURATION=${DURATION:-150s}
SAMPLE_EVERY=${SAMPLE_EVERY:-5}
THINK_TIME=${THINK_TIME:-}
USERS_FLAGS=${USERS_FLAGS:-}
NGINX_EVENTS=${NGINX_EVENTS:-}
SCALE_SECTION=${SCALE_SECTION:-scale}
MEM_RATE=${MEM_RATE:-20000}
MEM_CONNECTIONS=${MEM_CONNECTIONS:-50}
MEM_DURATION=${MEM_DURATION:-60s}
CLIENT_CPU=${CLIENT_CPU:-0}
SERVER_CPU=${SERVER_CPU:-1}
UPDATE_MD=${UPDATE_MD:-1}
BUSY_MAX=${BUSY_MAX:-20}
WAIT_QUIET=${WAIT_QUIET:-120}

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BENCH_MD=${BENCH_MD:-$ROOT/BENCHMARKS.md}
STAMP=$(date -u +%Y%m%dT%H%M%SZ)
OUT_DIR=${OUT_DIR:-$ROOT/target/bench-scale/$STAMP}
TOOLS_DIR=${TOOLS_DIR:-$ROOT/target/bench-tools}

BENCH_TAG=scale
# shellcheck source=bench/lib.sh
source "$ROOT/bench/lib.sh"

report() {
    OUT_DIR="$OUT_DIR" BENCH_MD="$BENCH_MD" UPDATE_MD="$UPDATE_MD" ROOT="$ROOT" python3 - <<'PYEOF'
import json, os, re, sys

out_dir, root = os.environ["OUT_DIR"], os.environ["ROOT"]
E = json.load(open(os.path.join(out_dir, "meta.json")))
mib = lambda b: f"{b / 2**20:.1f} MiB"

def fail(msg):
    print(f"[scale] error: {msg}", file=sys.stderr); sys.exit(1)

def samples(path):  # t_s rss_kib hwm_kib threads fds established [accept_queue listen_overflows]
    rows = []
    for line in open(path):
        f = line.split()
        if len(f) >= 6:
            r = dict(t=float(f[0]), rss=int(f[1]) * 1024, hwm=int(f[2]) * 1024, threads=int(f[3]),
                     fds=int(f[4]), est=int(f[5]), aq=None, lo=None)
            if len(f) >= 8 and f[6].isdigit() and f[7].isdigit():
                r.update(aq=int(f[6]), lo=int(f[7]))
            rows.append(r)
    return rows

def head(kind):
    L = [f"Run {E['DATE']} by `bench/scale.sh` (MODE={E['MODE']}); raw outputs were in "
         f"`{os.path.relpath(out_dir, root)}/`.", ""]
    L.append(f"- Machine: {E['CPU_MODEL']}, {E['NCPU']} CPUs, {E['KERNEL']}; nginx on CPU {E['SERVER_CPU']}, "
             f"volley on CPU {E['CLIENT_CPU']}; local port range {E['PORT_RANGE']}; open files: soft "
             f"{E['NOFILE_SOFT']}, hard {E['NOFILE_HARD']} (the shell's; volley raises its own soft limit)")
    L.append(f"- Versions: {E['VOLLEY_VERSION']} · {E['NGINX_VERSION']}")
    busy = int(open(os.path.join(out_dir, f"{kind}.busy")).read())
    if busy > int(E["BUSY_MAX"]):
        L.append(f"- **Warning:** the machine was {busy} % busy with other work just before this run.")
    L += ["", "```sh", E["CMD_NGINX"], E[f"CMD_{kind.upper()}"], "```", ""]
    return L

def load(kind):
    try:
        return json.load(open(os.path.join(out_dir, f"{kind}.json")))
    except Exception as ex:
        fail(f"cannot read {kind}.json: {ex}")

SECTIONS = {}
if os.path.exists(os.path.join(out_dir, "users.json")):
    d = load("users")
    S = samples(os.path.join(out_dir, "users.samples"))
    users = int(E["USERS"])
    dur = d["load"]["duration_s"]
    ts = d.get("timeseries") or []
    umax = max((b.get("users") or 0 for b in ts), default=0)
    reach = next((b["t_s"] for b in ts if (b.get("users") or 0) >= users), None)
    plateau = [b for b in ts if (b.get("users") or 0) >= users and b["t_s"] + b.get("interval_s", 1) <= dur + 1e-6]
    late_sent = sum(b["sent"] for b in ts if b["t_s"] >= dur)
    opened = d["connections"]["opened"]
    errs = d["requests"]["errors"]
    full = [s for s in S if s["fds"] >= users]          # volley holds a socket for every user
    on_plateau = [s for s in S if reach is not None and s["t"] >= reach + 2 and s["t"] <= dur - 1]
    rss_full = max((s["rss"] for s in full), default=None)
    p = os.path.join(out_dir, "users.active")
    active = open(p).read().split() if os.path.exists(p) else None
    ok = lambda c: "met" if c else "**not met**"
    L = head("users")
    think = E.get("THINK_TIME") or ""
    L.append(f"{users:,} virtual users added at {E['SPAWN_RATE']}/s, each holding one keep-alive connection and sending "
             + (f"its next GET {think} after the previous response (`--think-time {think}`)" if think else
                "its next GET as soon as the previous response is in (no think time)")
             + f"; `-d` includes the ramp, so the last {dur - users / float(E['SPAWN_RATE']):.0f} s run at {users:,} users.")
    L.append("")
    L.append("| check | result | target |")
    L.append("|---|---|---|")
    L.append(f"| users in the time series | max {umax:,}" + (f", reached at t = {reach} s" if reach is not None else "")
             + f" | {users:,} · {ok(umax >= users)} |")
    L.append(f"| `connections.opened` | {opened:,} (closed by server: {d['connections']['closed_by_server']:,}) | "
             f"{users:,} · {ok(opened == users)} |")
    est = [s["est"] for s in on_plateau]
    L.append(f"| client sockets ESTABLISHED to nginx (ss, every {E['SAMPLE_EVERY']} s) | max {max((s['est'] for s in S), default=0):,}"
             + (f"; at {users:,} users min {min(est):,}, median {sorted(est)[len(est) // 2]:,}" if est else "")
             + f" | {users:,} · {ok(bool(est) and min(est) >= users)} |")
    if active:
        a, n = int(active[0]), int(active[1])
        L.append(f"| ESTABLISHED connections that carried requests between two snapshots 10 s apart at {users:,} users "
                 f"(ss `segs_out` grew) | {a:,} of {n:,} | {users:,} · {ok(a >= users)} |")
    if plateau:
        cps = [b["completed"] for b in plateau]
        L.append(f"| responses per second at {users:,} users ({len(plateau)} full seconds inside `-d`) | min {min(cps):,}, "
                 f"median {sorted(cps)[len(cps) // 2]:,}, max {max(cps):,} | > 0 every second · {ok(min(cps) > 0)} |")
    L.append(f"| client-side errors (`requests.errors`) | {errs:,}"
             + (" (" + ", ".join(f"{k} {v:,}" for k, v in d["errors"].items() if v) + ")" if errs else "")
             + f" | 0 · {ok(errs == 0)} |")
    L.append(f"| requests sent after the send window (time-series buckets t ≥ {dur:.0f} s) | {late_sent:,} | 0 · {ok(late_sent == 0)} |")
    if rss_full is not None:
        L.append(f"| client RSS while volley held ≥ {users:,} sockets (VmRSS, max of {len(full)} samples) | {mib(rss_full)} | "
                 f"≤ 64 MiB · {ok(rss_full <= 64 * 2**20)} |")
    else:
        L.append(f"| client RSS with {users:,} sockets | volley never held {users:,} descriptors | ≤ 64 MiB · **not met** |")
    L.append(f"| `client.rss_max_bytes` | {mib(d['client']['rss_max_bytes'])} | ≤ 64 MiB · {ok(d['client']['rss_max_bytes'] <= 64 * 2**20)} |")
    if S and S[0].get("lo") is not None:
        aq = max(s["aq"] for s in S)
        lo = S[-1]["lo"] - S[0]["lo"]
        L.append(f"| nginx's accept queue (ss Recv-Q of the listening socket; its backlog is 511) | max {aq:,} | — |")
        L.append(f"| SYNs dropped because an accept queue was full (`ListenOverflows`, machine-wide, during the run) | {lo:,} | — |")
    L.append("")
    c = d["client"]
    L.append(f"Totals: {d['requests']['completed']:,} responses in {d['elapsed_s']:.1f} s ({d['throughput_rps']:,.0f} req/s "
             f"over the whole run including the ramp), latency p50 {d['latency_us']['p50']:,} µs, p99 "
             f"{d['latency_us']['p99']:,} µs, max {d['latency_us']['max']:,} µs; client CPU {c['cpu_user_s']:.1f} s user + "
             f"{c['cpu_sys_s']:.1f} s sys; status codes {d.get('status_codes')}; unfinished "
             f"{d['requests']['unfinished']:,}.")
    for w in d.get("warnings", []):
        if not w.startswith("closed loop:"):
            L.append(f"volley warned: {w}.")
    L.append("")
    L.append("Every 10th second of the time series, with the /proc and ss sample nearest to its end:")
    L.append("")
    L.append("| t (s) | users | sent/s | responses/s | errors/s | p50 | p99 | VmRSS | volley fds | ESTABLISHED | nginx accept queue |")
    L.append("|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    fmt = lambda v: "—" if v is None else f"{v:,} µs"
    for b in ts:
        if b["t_s"] % 10 and b is not ts[-1]:
            continue
        s = min(S, key=lambda s: abs(s["t"] - b["t_s"] - 1)) if S else None
        L.append(f"| {b['t_s']} | {b.get('users', '—')} | {b['sent']:,} | {b['completed']:,} | {b['errors']:,} | "
                 f"{fmt(b['latency_p50_us'])} | {fmt(b['latency_p99_us'])} | "
                 + (f"{mib(s['rss'])} | {s['fds']:,} | {s['est']:,} | {s['aq'] if s.get('aq') is not None else '—'} |" if s else "— | — | — | — |"))
    L.append("")
    L.append(f"(VmRSS, volley's open descriptors, client sockets ESTABLISHED to nginx and nginx's accept queue were sampled "
             f"every {E['SAMPLE_EVERY']} s from the start of the process; the time series starts at t0.)")
    SECTIONS[E.get("SCALE_SECTION") or "scale"] = L

if os.path.exists(os.path.join(out_dir, "memory.json")):
    d = load("memory")
    S = samples(os.path.join(out_dir, "memory.samples"))
    L = head("memory")
    def near(t):
        return min(S, key=lambda s: abs(s["t"] - t))
    end = max(s["t"] for s in S)
    a, b = near(10), near(min(60, end))
    drift = 100 * (b["rss"] - a["rss"]) / a["rss"]
    target = d["load"]["rate_rps"]
    lag = d.get("schedule_lag_us") or {}
    L.append(f"Open loop at {target:,.0f} req/s, {d['load']['connections']} connections, {d['elapsed_s']:.1f} s; "
             f"VmRSS of the volley process sampled every second.")
    L.append("")
    L.append(f"**RSS at {a['t']:.0f} s: {mib(a['rss'])}; at {b['t']:.0f} s: {mib(b['rss'])}; change {drift:+.1f} % "
             f"(target within 5 %: {'met' if abs(drift) <= 5 else '**not met**'}).** VmHWM at the end "
             f"{mib(S[-1]['hwm'])}; `client.rss_max_bytes` {mib(d['client']['rss_max_bytes'])}.")
    L.append("")
    L.append(f"The run itself: {d['requests']['completed']:,} responses, achieved "
             f"{d['requests']['completed'] / d['elapsed_s']:,.1f} req/s, errors {d['requests']['errors']}, "
             f"schedule lag p50 {lag.get('p50')} µs / p99 {lag.get('p99')} µs, corrected p99 "
             f"{d['latency_us']['p99']:,} µs, service p99 {d['service_time_us']['p99']:,} µs.")
    L.append("")
    L.append("| t (s) | " + " | ".join(f"{s['t']:.0f}" for s in S[::5]) + " |")
    L.append("|---|" + "---:|" * len(S[::5]))
    L.append("| VmRSS (MiB) | " + " | ".join(f"{s['rss'] / 2**20:.2f}" for s in S[::5]) + " |")
    SECTIONS["memory"] = L

for k, L in SECTIONS.items():
    print(f"\n===== {k} =====\n")
    print("\n".join(L))
if os.environ["UPDATE_MD"] != "0" and SECTIONS:
    path = os.environ["BENCH_MD"]
    text = open(path).read() if os.path.exists(path) else "# Benchmarks\n"
    for name, L in SECTIONS.items():
        begin, end = f"<!-- {name}:begin -->", f"<!-- {name}:end -->"
        section = f"{begin}\n" + "\n".join(L) + f"\n{end}"
        if begin in text and end in text and text.index(begin) < text.index(end):
            text = text[:text.index(begin)] + section + text[text.index(end) + len(end):]
        else:
            text = text.rstrip("\n") + "\n\n" + section + "\n"
    open(path + ".tmp", "w").write(text)
    os.replace(path + ".tmp", path)
    print(f"\n[scale] rewrote the {', '.join(SECTIONS)} section(s) of {path}", file=sys.stderr)
PYEOF
}

if [[ -n ${REPORT_FROM:-} ]]; then
    [[ -f $REPORT_FROM/meta.json ]] || die 2 "REPORT_FROM=$REPORT_FROM has no meta.json"
    OUT_DIR=$(cd "$REPORT_FROM" && pwd)
    report
    exit
fi

[[ $MODE =~ ^(all|users|memory)$ ]] || die 2 "MODE must be all, users or memory, got '$MODE'"
[[ -z $THINK_TIME || $THINK_TIME =~ ^[0-9]+(ms|s)$ ]] || die 2 "THINK_TIME must look like 500ms or 1s, got '$THINK_TIME'"
[[ $SCALE_SECTION =~ ^[a-z0-9-]+$ ]] || die 2 "SCALE_SECTION must be a plain name"
for v in USERS SPAWN_RATE SAMPLE_EVERY MEM_RATE MEM_CONNECTIONS; do [[ ${!v} =~ ^[1-9][0-9]*$ ]] || die 2 "$v must be a positive integer"; done
for v in DURATION MEM_DURATION; do [[ ${!v} =~ ^[1-9][0-9]*s$ ]] || die 2 "$v must be whole seconds like 150s, got '${!v}'"; done
DURATION_S=${DURATION%s}
MEM_DURATION_S=${MEM_DURATION%s}
want() { [[ $MODE == all || $MODE == "$1" ]]; }

missing=()
command -v taskset >/dev/null 2>&1 || missing+=(util-linux)
command -v python3 >/dev/null 2>&1 || missing+=(python3)
command -v ss >/dev/null 2>&1 || missing+=(iproute2)
command -v nginx >/dev/null 2>&1 || [[ -x /usr/sbin/nginx ]] || missing+=(nginx-light)
if ((${#missing[@]})); then
    [[ $(id -u) -eq 0 ]] && command -v apt-get >/dev/null 2>&1 || die 2 "missing ${missing[*]}; install them"
    log "installing: ${missing[*]}"
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq || die 2 "apt-get update failed"
    for p in "${missing[@]}"; do
        apt-get install -y -qq --no-install-recommends "$p" >/dev/null 2>&1 \
            || { [[ $p == nginx-light ]] && apt-get install -y -qq --no-install-recommends nginx >/dev/null; } \
            || die 2 "apt-get install $p failed"
    done
fi
NGINX=$(command -v nginx 2>/dev/null || echo /usr/sbin/nginx)
ncpu=$(nproc --all)
taskset -c "$CLIENT_CPU" true 2>/dev/null || die 2 "cannot pin to CLIENT_CPU=$CLIENT_CPU"
taskset -c "$SERVER_CPU" true 2>/dev/null || die 2 "cannot pin to SERVER_CPU=$SERVER_CPU"

build_volley
if want users && ! "$VOLLEY" run --help 2>&1 | grep -q -- '--users'; then
    die 2 "$VOLLEY run has no --users flag yet (MODE=memory runs the memory part alone)"
fi
NGINX_VERSION=$("$NGINX" -v 2>&1 | head -n1 | sed 's/^nginx version: //')
PORT_RANGE=$(sysctl -n net.ipv4.ip_local_port_range | tr -s '\t ' ' ')
read -r lo hi <<<"$PORT_RANGE"
if want users && ((hi - lo + 1 < USERS + 1000)); then
    die 2 "net.ipv4.ip_local_port_range ($PORT_RANGE) has fewer than USERS+1000 ports for one destination"
fi
NOFILE_SOFT=$(ulimit -Sn)
NOFILE_HARD=$(ulimit -Hn)

TMP=$(mktemp -d -t volley-scale.XXXXXX)
cp "$VOLLEY" "$TMP/volley"
VOLLEY_SRC=$VOLLEY
VOLLEY=$TMP/volley
NGINX_PID=
CLIENT_PID=
cleanup() {
    local rc=$?
    if [[ -n $CLIENT_PID ]]; then kill -TERM "$CLIENT_PID" 2>/dev/null || true; wait "$CLIENT_PID" 2>/dev/null || true; fi
    stop_pid "$NGINX_PID"   # the master stops its worker
    rm -rf "$TMP"
    exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

if [[ -z ${PORT:-} ]]; then
    PORT=$(free_port)
fi
URL="http://127.0.0.1:$PORT/"
write_nginx_conf "$TMP" "$PORT" "$NGINX_EVENTS"
NGINX_CMD=(taskset -c "$SERVER_CPU" "$NGINX" -p "$TMP/" -c "$TMP/nginx.conf" -e "$TMP/error.log" -g "daemon off;")
"${NGINX_CMD[@]}" >"$TMP/nginx.out" 2>&1 &
NGINX_PID=$!
ready=0
for _ in $(seq 100); do
    kill -0 "$NGINX_PID" 2>/dev/null || break
    if python3 -c 'import sys, urllib.request; sys.exit(0 if urllib.request.urlopen(sys.argv[1], timeout=1).read() == b"." else 1)' "$URL" 2>/dev/null; then
        ready=1; break
    fi
    sleep 0.1
done
((ready)) || { cat "$TMP/nginx.out" "$TMP/error.log" >&2 2>/dev/null || true; die 2 "nginx did not answer on $URL"; }
log "$NGINX_VERSION (pid $NGINX_PID) on $URL, pinned to CPU $SERVER_CPU"
mkdir -p "$OUT_DIR"
cp "$TMP/nginx.conf" "$OUT_DIR/nginx.conf"

established() { ss -Htn state established "( dport = :$PORT )" 2>/dev/null | wc -l; }
accept_queue() { ss -Hltn "( sport = :$PORT )" 2>/dev/null | awk '{ print $2; exit }'; }   # nginx's accept queue now
listen_overflows() { # SYNs dropped machine-wide because an accept queue was full (cumulative)
    awk '$1 == "TcpExt:" { if (!h) { for (i = 2; i <= NF; i++) n[i] = $i; h = 1; next }
                           for (i = 2; i <= NF; i++) if (n[i] == "ListenOverflows") print $i }' /proc/net/netstat
}
now_us() { local t=$EPOCHREALTIME; echo "${t/./}"; }
sample() { # t rss_kib hwm_kib threads fds established accept_queue listen_overflows, of process $1 started at $2 (epoch µs)
    local pid=$1 t0=$2 now rss hwm thr fds
    now=$(now_us)
    rss=$(awk '/^VmRSS:/ { print $2 }' "/proc/$pid/status" 2>/dev/null) || return 0
    hwm=$(awk '/^VmHWM:/ { print $2 }' "/proc/$pid/status" 2>/dev/null) || return 0
    thr=$(awk '/^Threads:/ { print $2 }' "/proc/$pid/status" 2>/dev/null) || return 0
    [[ -n $rss ]] || return 0
    fds=$(ls "/proc/$pid/fd" 2>/dev/null | wc -l) || return 0   # the process may exit between two reads
    printf '%d.%d %s %s %s %s %s %s %s\n' $(((now - t0) / 1000000)) $(((now - t0) % 1000000 / 100000)) \
        "$rss" "$hwm" "$thr" "$fds" "$(established)" "$(accept_queue)" "$(listen_overflows)"
}
segs() { # local port -> segs_out of every client socket to nginx
    ss -Htin state established "( dport = :$PORT )" 2>/dev/null | awk '
        /^[ \t]/ { if (port != "" && match($0, /segs_out:[0-9]+/)) print port, substr($0, RSTART + 9, RLENGTH - 9); next }
        { n = split($3, a, ":"); port = a[n] }'
}

run_sampled() { # kind every duration_s cmd...: run the client pinned, sample it until it exits
    local kind=$1 every=$2 dur=$3 rc=0 t0 next snap1=0 snap2=0 el
    shift 3
    wait_quiet >"$OUT_DIR/$kind.busy"
    log "$kind: $(printf '%q ' "$@" | sed "s#$TMP#\$TMP#g")"
    : >"$OUT_DIR/$kind.samples"
    t0=$(now_us)
    taskset -c "$CLIENT_CPU" "$@" >"$OUT_DIR/$kind.out" 2>"$OUT_DIR/$kind.err" &
    CLIENT_PID=$!
    next=0
    while kill -0 "$CLIENT_PID" 2>/dev/null; do
        el=$((($(now_us) - t0) / 1000000))
        if ((el >= next)); then
            sample "$CLIENT_PID" "$t0" >>"$OUT_DIR/$kind.samples" || true
            next=$((next + every))
        fi
        # Two snapshots of every socket's segs_out, 10 s apart, near the end of the plateau
        if [[ $kind == users ]]; then
            if ((snap1 == 0 && el >= dur - 25)); then segs >"$OUT_DIR/users.segs1" || true; snap1=1; fi
            if ((snap2 == 0 && el >= dur - 15)); then segs >"$OUT_DIR/users.segs2" || true; snap2=1; fi
        fi
        sleep 0.2
    done
    wait "$CLIENT_PID" || rc=$?
    CLIENT_PID=
    ((rc == 0)) || { tail -n 30 "$OUT_DIR/$kind.out" "$OUT_DIR/$kind.err" >&2; die 1 "$kind run exited with $rc"; }
    kill -0 "$NGINX_PID" 2>/dev/null || die 1 "nginx died during the $kind run"
}

short() { sed -e "s#$OUT_DIR/##g" -e "s#$ROOT/##g" -e "s#$TMP#\$TMP#g"; }

CMD_USERS=
CMD_MEMORY=
if want users; then
    USERS_CMD=("$VOLLEY" run "$URL" --users "$USERS" --spawn-rate "$SPAWN_RATE" -d "$DURATION")
    [[ -z $THINK_TIME ]] || USERS_CMD+=(--think-time "$THINK_TIME")
    # shellcheck disable=SC2206  # USERS_FLAGS is split on purpose
    [[ -z $USERS_FLAGS ]] || USERS_CMD+=($USERS_FLAGS)
    USERS_CMD+=(--quiet --json "$OUT_DIR/users.json")
    CMD_USERS="$(quote taskset -c "$CLIENT_CPU" "${USERS_CMD[@]}" | short)   # \$TMP/volley: a copy of $(echo "$VOLLEY_SRC" | short)"
    run_sampled users "$SAMPLE_EVERY" "$DURATION_S" "${USERS_CMD[@]}"
    if [[ -s $OUT_DIR/users.segs1 && -s $OUT_DIR/users.segs2 ]]; then
        # active = sockets present in both snapshots whose segs_out grew; total = sockets in the second
        awk 'NR == FNR { a[$1] = $2; next } { n++; if (($1 in a) && $2 > a[$1]) act++ } END { print act + 0, n + 0 }' \
            "$OUT_DIR/users.segs1" "$OUT_DIR/users.segs2" >"$OUT_DIR/users.active"
    fi
fi
if want memory; then
    MEM_CMD=("$VOLLEY" run "$URL" -R "$MEM_RATE" -c "$MEM_CONNECTIONS" -t 1 -d "$MEM_DURATION" --allow-shortfall --quiet --json "$OUT_DIR/memory.json")
    CMD_MEMORY="$(quote taskset -c "$CLIENT_CPU" "${MEM_CMD[@]}" | short)"
    run_sampled memory 1 "$MEM_DURATION_S" "${MEM_CMD[@]}"
fi

CMD_NGINX="$(quote "${NGINX_CMD[@]}" | short)   # nginx.conf: the one bench/compare.sh writes${NGINX_EVENTS:+, plus events { $NGINX_EVENTS \}}"
CPU_MODEL=$(grep -m1 '^model name' /proc/cpuinfo | sed 's/^[^:]*: *//' || true)
KERNEL=$(uname -sr)
NCPU=$ncpu
DATE=$(date -u +%Y-%m-%dT%H:%M:%SZ)
export THINK_TIME SCALE_SECTION MODE USERS SPAWN_RATE SAMPLE_EVERY CMD_NGINX CMD_USERS CMD_MEMORY CPU_MODEL KERNEL NCPU DATE VOLLEY_VERSION \
    NGINX_VERSION PORT_RANGE NOFILE_SOFT NOFILE_HARD CLIENT_CPU SERVER_CPU BUSY_MAX
python3 - "$OUT_DIR/meta.json" <<'EOF'
import json, os, sys
keys = ("THINK_TIME SCALE_SECTION MODE USERS SPAWN_RATE SAMPLE_EVERY CMD_NGINX CMD_USERS CMD_MEMORY CPU_MODEL KERNEL NCPU DATE VOLLEY_VERSION "
        "NGINX_VERSION PORT_RANGE NOFILE_SOFT NOFILE_HARD CLIENT_CPU SERVER_CPU BUSY_MAX").split()
json.dump({k: os.environ[k] for k in keys}, open(sys.argv[1], "w"), indent=2)
EOF
report
