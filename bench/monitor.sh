#!/usr/bin/env bash
# bench/monitor.sh: volley's server monitor (`--pid`) checked against vmstat and strace.
#
# For each server (nginx with one worker, Python's `python3 -m http.server`, a Node.js
# `http.createServer` one-liner; none of them written here), pinned to SERVER_CPU while volley
# runs on CLIENT_CPU:
#   1. a DURATION closed-loop run with `--pid`, while `vmstat 1` runs and CPU SERVER_CPU's line
#      of /proc/stat is read before and after: volley's server CPU split against the machine's;
#   2. a STRACE_DURATION run with `strace -c -f -p <every pid of the server>` attached: volley's
#      syscall count against strace's for the same run (strace slows the server a lot, so the
#      comparison is per request and in total for that one run, not against run 1).
# The results go to the monitor section of BENCHMARKS.md (between the monitor markers).
#
# Usage:  bench/monitor.sh                        # about 1.5 minutes on an idle machine
#         SERVERS="nginx" DURATION=5s bench/monitor.sh
#
# Environment (all optional):
#   SERVERS="nginx python node"  DURATION=10s  STRACE_DURATION=3s  CLIENT_CPU=0  SERVER_CPU=1
#   VOLLEY=<path>     use this binary instead of building target/release/volley
#   VOLLEY_REV=<rev>  build that commit (git archive into TOOLS_DIR=target/bench-tools)
#   OUT_DIR=<dir>     raw outputs (default target/bench-monitor/<UTC time>)
#   BENCH_MD=<file>   Markdown file whose monitor section is rewritten (default BENCHMARKS.md)
#   UPDATE_MD=0       print the section, leave BENCH_MD alone
#   BUSY_MAX=20 WAIT_QUIET=120   before each run wait (at most WAIT_QUIET s) until at most
#                     BUSY_MAX % of all CPUs are busy with other work
#   OTHER_MAX=15 RETRIES=3   repeat run 1 when processes other than the server and volley used
#                     more than OTHER_MAX % of a core during it (the table shows that share)
#   REPORT_FROM=<dir> re-render the section from an earlier OUT_DIR without measuring
#
# Needs root (perf counters, strace -p), nginx, python3, node, strace, vmstat, taskset.
# Exit codes: 0 ok, 1 a run failed, 2 missing prerequisites / bad settings.
set -euo pipefail

SERVERS=${SERVERS:-nginx python node}
DURATION=${DURATION:-10s}
STRACE_DURATION=${STRACE_DURATION:-3s}
CLIENT_CPU=${CLIENT_CPU:-0}
SERVER_CPU=${SERVER_CPU:-1}
UPDATE_MD=${UPDATE_MD:-1}
BUSY_MAX=${BUSY_MAX:-20}
WAIT_QUIET=${WAIT_QUIET:-120}
OTHER_MAX=${OTHER_MAX:-15}
RETRIES=${RETRIES:-3}

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BENCH_MD=${BENCH_MD:-$ROOT/BENCHMARKS.md}
STAMP=$(date -u +%Y%m%dT%H%M%SZ)
OUT_DIR=${OUT_DIR:-$ROOT/target/bench-monitor/$STAMP}

BENCH_TAG=monitor
TOOLS_DIR=${TOOLS_DIR:-$ROOT/target/bench-tools}
# shellcheck source=bench/lib.sh
source "$ROOT/bench/lib.sh"

# ---------------------------------------------------------------- report
report() { # render $OUT_DIR as Markdown; rewrite the BENCH_MD section
    export OUT_DIR BENCH_MD UPDATE_MD ROOT
    python3 - <<'PYEOF'
import json, os, re, sys

out_dir = os.environ["OUT_DIR"]
meta = json.load(open(os.path.join(out_dir, "meta.json")))
ncpu = int(meta["NCPU"])

def fail(msg):
    print(f"[monitor] error: {msg}", file=sys.stderr)
    sys.exit(1)

def vmstat(path):
    """Mean us/sy/id/wa/st over the per-second lines (the first line, since boot, is dropped)."""
    rows = []
    head = None
    for line in open(path):
        f = line.split()
        if not f:
            continue
        if f[0] == "r":
            head = f
            continue
        if head and f[0].isdigit() and len(f) == len(head):
            rows.append(dict(zip(head, map(int, f))))
    rows = rows[1:]
    if not rows:
        fail(f"no vmstat lines in {path}")
    return {k: sum(r[k] for r in rows) / len(rows) for k in ("us", "sy", "id", "wa", "st")}, len(rows)

def cpu_line(path, prefix):
    """Split between the two /proc/stat lines starting with `prefix`: user, system, irq+softirq,
    idle (% of those CPUs), and busy seconds."""
    a, b = [list(map(int, l.split()[1:])) for l in open(path).read().splitlines() if l.split()[0] == prefix][:2]
    d = [y - x for x, y in zip(a, b)]
    total = sum(d[:8]) or 1
    user, nice, system, idle, iowait, irq, softirq = d[:7]
    hz = os.sysconf("SC_CLK_TCK")
    return dict(user=100 * (user + nice) / total, system=100 * system / total,
                irq=100 * (irq + softirq) / total, idle=100 * (idle + iowait) / total,
                busy_s=(total - idle - iowait) / hz)

def strace(path):
    calls, total = {}, None
    for line in open(path):
        f = line.split()
        if len(f) >= 5 and f[0][0].isdigit() and "." in f[0]:
            name = f[-1]
            n = int(f[3])
            if name == "total":
                total = n
            else:
                calls[name] = n
    if total is None:
        fail(f"no strace -c total in {path}")
    return calls, total

def block(path):
    """The Server lines of volley's terminal summary."""
    lines, on = [], False
    for line in open(path):
        if line.startswith("  Server"):
            on = True
        elif on and not line.startswith("  " + " " * 13):
            break
        if on:
            lines.append(line.rstrip())
    return "\n".join(lines)

def per(n):
    return f"{n:.0f}" if n >= 10 else f"{n:.2f}" if n >= 0.1 else f"{n:.3f}"

L = []
L.append(f"Run {meta['DATE']} by `bench/monitor.sh` (DURATION={meta['DURATION']}, "
         f"STRACE_DURATION={meta['STRACE_DURATION']}); raw outputs were in "
         f"`{os.path.relpath(out_dir, meta['ROOT'])}/`.")
L.append("")
L.append(f"- Machine: {meta['CPU_MODEL']}, {ncpu} CPUs, {meta['KERNEL']}; servers on CPU "
         f"{meta['SERVER_CPU']}, volley on CPU {meta['CLIENT_CPU']}")
L.append(f"- Versions: {meta['VERSIONS']}")
L.append("")
L.append("```sh")
for s in meta["SERVERS"].split():
    L.append(f"# {s}")
    L.append(meta[f"CMD_{s}"])
L.append("taskset -c %s volley run URL -t 1 -c C -d %s --pid PID --json run.json &  vmstat 1   # run 1"
         % (meta["CLIENT_CPU"], meta["DURATION"]))
L.append("strace -c -f -p PID [-p PID2...] &  taskset -c %s volley run URL -t 1 -c C -d %s --pid PID   # run 2"
         % (meta["CLIENT_CPU"], meta["STRACE_DURATION"]))
L.append("```")
L.append("")

runs = {}
for s in meta["SERVERS"].split():
    d = os.path.join(out_dir, s)
    try:
        r1 = json.load(open(os.path.join(d, "run.json")))
        r2 = json.load(open(os.path.join(d, "strace-run.json")))
    except Exception as ex:
        fail(f"{s}: {ex}")
    runs[s] = dict(r1=r1, r2=r2, vm=vmstat(os.path.join(d, "vmstat.txt")),
                   cpu=cpu_line(os.path.join(d, "cpu.txt"), "cpu" + meta["SERVER_CPU"]),
                   machine=cpu_line(os.path.join(d, "cpu.txt"), "cpu"),
                   st=strace(os.path.join(d, "strace.txt")),
                   block=block(os.path.join(d, "run.out")),
                   conns=meta[f"CONNS_{s}"])

L.append("**Per request** (run 1, closed loop; volley's `server.per_request` and totals):")
L.append("")
L.append("| server | connections | req/s | CPU µs/req | user µs | sys µs | syscalls/req | context switches/req | RSS max | processes / threads |")
L.append("|---|---:|---:|---:|---:|---:|---:|---:|---:|---|")
for s, r in runs.items():
    j, sv = r["r1"], r["r1"]["server"]
    p = sv["per_request"]
    sc = per(p["syscalls"]) if p["syscalls"] is not None else "null"
    L.append(f"| {s} | {r['conns']} | {j['throughput_rps']:,.0f} | {p['cpu_us']:.1f} | {p['user_us']:.1f} | {p['sys_us']:.1f} | "
             f"{sc} | {per(p['ctx_switches'])} | {sv['rss_max_bytes'] / 2**20:.1f} MiB | "
             f"{sv.get('processes_max', len(sv['pids']))} / {sv['threads_max']} |")
L.append("")
for s, r in runs.items():
    L.append(f"{s}, volley's summary of run 1:")
    L.append("")
    L.append("```")
    L.append(r["block"])
    L.append("```")
    L.append("")

L.append(f"**CPU split against the machine** (run 1). `vmstat 1` averages are % of all {ncpu} CPUs "
         "(its `sy` includes hard and soft interrupts); \"server by vmstat\" is vmstat's busy time "
         "minus volley's own CPU (`client.cpu_user_s`/`cpu_sys_s`), in cores. CPU "
         f"{meta['SERVER_CPU']} runs only the server, so its /proc/stat line is the cleanest reference.")
L.append("")
L.append("| server | vmstat us / sy / id | client user / sys (cores) | server by vmstat user / sys | "
         f"CPU {meta['SERVER_CPU']} user / sys / irq+softirq / idle | volley server user / sys (cores) | volley user share | other work |")
L.append("|---|---|---|---|---|---|---|---:|")
for s, r in runs.items():
    j, sv = r["r1"], r["r1"]["server"]
    vm, n = r["vm"]
    el = j["elapsed_s"]
    cu, cs = j["client"]["cpu_user_s"] / el, j["client"]["cpu_sys_s"] / el
    vu, vs = vm["us"] / 100 * ncpu - cu, vm["sy"] / 100 * ncpu - cs
    w = sv["window_s"] or el
    su, ss = sv["cpu_user_s"] / w, sv["cpu_sys_s"] / w
    c = r["cpu"]
    share = 100 * su / (su + ss) if su + ss > 0 else 0
    other = max(0.0, r["machine"]["busy_s"] - sv["cpu_user_s"] - sv["cpu_sys_s"]
                - j["client"]["cpu_user_s"] - j["client"]["cpu_sys_s"]) / el
    L.append(f"| {s} | {vm['us']:.0f} / {vm['sy']:.0f} / {vm['id']:.0f} ({n} s) | {cu:.2f} / {cs:.2f} | {vu:.2f} / {vs:.2f} | "
             f"{c['user']:.0f}% / {c['system']:.0f}% / {c['irq']:.0f}% / {c['idle']:.0f}% | {su:.2f} / {ss:.2f} | {share:.0f}% | {100 * other:.0f}% |")
L.append("")
L.append("\"other work\" is the machine's busy time (/proc/stat) minus the server's and volley's CPU, "
         "in % of one core: what else ran during the run (runs with more than "
         f"{meta['OTHER_MAX']}% were repeated, up to {meta['RETRIES']} times).")
L.append("")

L.append("**Syscalls against `strace -c -f`** (run 2, both attached to the same processes for the same run; "
         "strace's window is a little longer: it attaches 1 s before the load and detaches after it):")
L.append("")
L.append("| server | requests | strace calls | volley syscalls | volley / strace | strace per request | volley per request | strace top 3 | volley top 3 |")
L.append("|---|---:|---:|---:|---:|---:|---:|---|---|")
for s, r in runs.items():
    j, sv = r["r2"], r["r2"]["server"]
    calls, total = r["st"]
    n = j["requests"]["completed"]
    vsys = sv["syscalls"]
    top_s = ", ".join(f"{k} {v:,}" for k, v in sorted(calls.items(), key=lambda kv: -kv[1])[:3])
    top_v = ", ".join(f"{t['name']} {t['count']:,}" for t in sv["syscalls_top"][:3])
    ratio = f"{vsys / total:.3f}" if vsys is not None and total else "-"
    L.append(f"| {s} | {n:,} | {total:,} | {vsys if vsys is None else f'{vsys:,}'} | {ratio} | "
             f"{total / max(n, 1):.2f} | {(vsys or 0) / max(n, 1):.2f} | {top_s} | {top_v} |")
L.append("")
body = "\n".join(L)
print(body)
json.dump({s: dict(vmstat=r["vm"][0], cpu=r["cpu"], strace_total=r["st"][1]) for s, r in runs.items()},
          open(os.path.join(out_dir, "summary.json"), "w"), indent=2)

if os.environ["UPDATE_MD"] != "0":
    path = os.environ["BENCH_MD"]
    begin, end = "<!-- monitor:begin -->", "<!-- monitor:end -->"
    text = open(path).read() if os.path.exists(path) else "# Benchmarks\n"
    section = f"{begin}\n{body}\n{end}"
    if begin in text and end in text and text.index(begin) < text.index(end):
        text = text[:text.index(begin)] + section + text[text.index(end) + len(end):]
    else:
        text = text.rstrip("\n") + "\n\n" + section + "\n"
    tmp = path + ".tmp"
    open(tmp, "w").write(text)
    os.replace(tmp, path)
    print(f"\n[monitor] rewrote the monitor section of {path}", file=sys.stderr)
PYEOF
}

if [[ -n ${REPORT_FROM:-} ]]; then
    [[ -f $REPORT_FROM/meta.json ]] || die 2 "REPORT_FROM=$REPORT_FROM has no meta.json"
    OUT_DIR=$(cd "$REPORT_FROM" && pwd)
    report
    exit 0
fi

# ---------------------------------------------------------------- prerequisites
[[ $(id -u) -eq 0 ]] || die 2 "run as root: perf counters on another process and strace -p need it"
for s in $SERVERS; do [[ $s =~ ^(nginx|python|node)$ ]] || die 2 "unknown server '$s' (nginx, python, node)"; done
[[ $DURATION =~ ^[0-9]+s$ && $STRACE_DURATION =~ ^[0-9]+s$ ]] || die 2 "DURATION and STRACE_DURATION must look like 10s"
missing=()
for c in strace vmstat taskset python3; do command -v $c >/dev/null 2>&1 || missing+=("$c"); done
[[ " $SERVERS " != *" nginx "* ]] || command -v nginx >/dev/null 2>&1 || [[ -x /usr/sbin/nginx ]] || missing+=(nginx)
[[ " $SERVERS " != *" node "* ]] || command -v node >/dev/null 2>&1 || missing+=(nodejs)
if ((${#missing[@]})); then
    command -v apt-get >/dev/null 2>&1 || die 2 "missing ${missing[*]}"
    log "installing: ${missing[*]}"
    pkgs=()
    for m in "${missing[@]}"; do
        case $m in vmstat) pkgs+=(procps) ;; taskset) pkgs+=(util-linux) ;; *) pkgs+=("$m") ;; esac
    done
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${pkgs[@]}" >/dev/null \
        || die 2 "apt-get install ${pkgs[*]} failed"
fi
NGINX=$(command -v nginx 2>/dev/null || echo /usr/sbin/nginx)
ncpu=$(nproc --all)
taskset -c "$CLIENT_CPU" true 2>/dev/null && taskset -c "$SERVER_CPU" true 2>/dev/null \
    || die 2 "cannot pin to CPUs $CLIENT_CPU and $SERVER_CPU (this machine has $ncpu)"
[[ $CLIENT_CPU != "$SERVER_CPU" ]] || die 2 "CLIENT_CPU and SERVER_CPU must differ"

build_volley

TMP=$(mktemp -d -t volley-monitor.XXXXXX)
cp "$VOLLEY" "$TMP/volley"
V=$TMP/volley
SERVER_PID=
BG_PIDS=()
stop_server() {
    [[ -n $SERVER_PID ]] || return 0
    local p
    for p in $(pgrep -P "$SERVER_PID" || true); do kill -TERM "$p" 2>/dev/null || true; done
    stop_pid "$SERVER_PID"
    SERVER_PID=
}
cleanup() {
    local rc=$? p
    for p in "${BG_PIDS[@]}"; do kill -TERM "$p" 2>/dev/null || true; done
    stop_server
    rm -rf "$TMP"
    exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM




start_server() { # name port dir -> SERVER_PID, CMD
    local name=$1 port=$2 dir=$3
    case $name in
    nginx)
        write_nginx_conf "$dir" "$port"
        CMD=(taskset -c "$SERVER_CPU" "$NGINX" -p "$dir/" -c "$dir/nginx.conf" -e "$dir/error.log" -g "daemon off;")
        ;;
    python)
        mkdir -p "$dir/www" && printf '.' >"$dir/www/index.html"
        CMD=(taskset -c "$SERVER_CPU" python3 -m http.server "$port" --bind 127.0.0.1 --directory "$dir/www")
        ;;
    node)
        CMD=(taskset -c "$SERVER_CPU" node -e "require('http').createServer((q, s) => s.end('.')).listen(+process.argv[1], '127.0.0.1')" "$port")
        ;;
    esac
    "${CMD[@]}" >"$dir/server.out" 2>&1 &
    SERVER_PID=$!   # taskset execs the server
    local ok=0
    for _ in $(seq 100); do
        kill -0 "$SERVER_PID" 2>/dev/null || break
        if python3 -c 'import sys, urllib.request; urllib.request.urlopen(sys.argv[1], timeout=1).read()' "http://127.0.0.1:$port/" 2>/dev/null; then ok=1; break; fi
        sleep 0.1
    done
    ((ok)) || { cat "$dir/server.out" >&2; die 1 "$name did not answer on port $port"; }
}

other_pct() { # % of one core used by neither the server nor volley during run 1 in $1
    python3 - "$1" <<'PYEOF'
import json, os, sys
d = sys.argv[1]
j = json.load(open(os.path.join(d, "run.json")))
a, b = [list(map(int, l.split()[1:])) for l in open(os.path.join(d, "cpu.txt")) if l.startswith("cpu ")][:2]
busy = sum(y - x for x, y in zip(a[:8], b[:8])) - (b[3] - a[3]) - (b[4] - a[4])
s, c = j["server"], j["client"]
other = busy / os.sysconf("SC_CLK_TCK") - s["cpu_user_s"] - s["cpu_sys_s"] - c["cpu_user_s"] - c["cpu_sys_s"]
print(max(0, round(100 * other / j["elapsed_s"])))
PYEOF
}

tree_pids() { # the server and its descendants
    local p out=() queue=("$SERVER_PID")
    while ((${#queue[@]})); do
        p=${queue[0]}; queue=("${queue[@]:1}"); out+=("$p")
        queue+=($(cat /proc/"$p"/task/*/children 2>/dev/null || true))
    done
    echo "${out[@]}"
}

mkdir -p "$OUT_DIR"
declare -A CMDS CONNS=([nginx]=50 [python]=10 [node]=50)
for name in $SERVERS; do
    d=$OUT_DIR/$name
    mkdir -p "$d"
    port=$(free_port)
    url="http://127.0.0.1:$port/"
    start_server "$name" "$port" "$TMP"
    CMDS[$name]=$(quote "${CMD[@]}" | sed -e "s#$TMP#\$TMP#g")
    [[ $name == nginx ]] && cp "$TMP/nginx.conf" "$d/nginx.conf"
    c=${CONNS[$name]}
    log "$name (pid $SERVER_PID, tree $(tree_pids)) on $url"
    taskset -c "$CLIENT_CPU" "$V" run "$url" -t 1 -c "$c" -d 2s --quiet >/dev/null   # warm up

    for ((attempt = 0; ; attempt++)); do
        wait_quiet >/dev/null
        log "$name: run 1 ($DURATION with vmstat)"
        vmstat -n 1 >"$d/vmstat.txt" & vm=$!; BG_PIDS+=("$vm")
        grep -E "^cpu($SERVER_CPU)? " /proc/stat >"$d/cpu.txt"
        taskset -c "$CLIENT_CPU" "$V" run "$url" -t 1 -c "$c" -d "$DURATION" --quiet --pid "$SERVER_PID" --json "$d/run.json" >"$d/run.out" 2>&1 \
            || { cat "$d/run.out" >&2; die 1 "$name: volley run failed"; }
        grep -E "^cpu($SERVER_CPU)? " /proc/stat >>"$d/cpu.txt"
        kill "$vm"; wait "$vm" 2>/dev/null || true
        other=$(other_pct "$d")
        ((other > OTHER_MAX && attempt < RETRIES)) || break
        log "$name: other work used ${other}% of a core during run 1; repeating it ($((attempt + 1))/$RETRIES)"
    done

    wait_quiet >/dev/null
    log "$name: run 2 ($STRACE_DURATION with strace -c -f)"
    pflags=(); for p in $(tree_pids); do pflags+=(-p "$p"); done
    strace -c -f -o "$d/strace.txt" "${pflags[@]}" 2>"$d/strace.err" & st=$!; BG_PIDS+=("$st")
    sleep 1
    taskset -c "$CLIENT_CPU" "$V" run "$url" -t 1 -c "$c" -d "$STRACE_DURATION" --quiet --pid "$SERVER_PID" --json "$d/strace-run.json" >"$d/strace-run.out" 2>&1 \
        || { cat "$d/strace-run.out" >&2; die 1 "$name: volley run under strace failed"; }
    kill -INT "$st"; wait "$st" 2>/dev/null || true
    stop_server
done

NGINX_V=$("$NGINX" -v 2>&1 | sed 's/^nginx version: //')
VERSIONS="$VOLLEY_VERSION · $NGINX_V · Python $(python3 -c 'import sys; print(sys.version.split()[0])') · node $(node --version 2>/dev/null || echo -) · $(strace -V | head -n1) · vmstat $(vmstat -V | grep -o '[0-9.]*$' | head -n1)"
export VERSIONS SERVERS DURATION STRACE_DURATION CLIENT_CPU SERVER_CPU ROOT OTHER_MAX RETRIES
export NCPU=$ncpu KERNEL="$(uname -sr)" DATE="$(date -u +%Y-%m-%dT%H:%M:%SZ)"
export CPU_MODEL="$(grep -m1 '^model name' /proc/cpuinfo | sed 's/^[^:]*: *//')"
for s in $SERVERS; do export "CMD_$s=${CMDS[$s]}" "CONNS_$s=${CONNS[$s]}"; done
python3 - "$OUT_DIR/meta.json" <<'EOF'
import json, os, sys
keys = "VERSIONS SERVERS DURATION STRACE_DURATION CLIENT_CPU SERVER_CPU ROOT NCPU KERNEL DATE CPU_MODEL OTHER_MAX RETRIES".split()
keys += [f"{p}_{s}" for s in os.environ["SERVERS"].split() for p in ("CMD", "CONNS")]
json.dump({k: os.environ[k] for k in keys}, open(sys.argv[1], "w"), indent=2)
EOF
report
