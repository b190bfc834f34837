#!/usr/bin/env bash
# bench/compare.sh: volley against wrk, oha and h2load on one pinned nginx worker (loopback).
#
# One session, one nginx (one worker, `return 200 '.'`, the reference config of servers/nginx/)
# pinned to SERVER_CPU, every client pinned to CLIENT_CPU, and these tables,
# each rewritten between its own markers in BENCHMARKS.md:
#
#   keepalive  closed loop, 50 keep-alive connections, GET:
#              wrk -t1 -c50 · volley -t 1 -c 50 · oha -c 50 · h2load --h1 -c 50 -t 1
#   pipeline   volley --pipeline 16 -c 50 -t 1 · h2load --h1 -m 16 -c 50 -t 1
#   close      a new connection per request: volley --no-keepalive -c 50 -t 1 ·
#              wrk -t1 -c50 -H "Connection: close"
#   openloop   volley -R 20000 -c 50 -t 1 (achieved rate, schedule lag) and
#              volley -R 1000 -c 50 -t 1 (corrected p50 vs service-time p50)
#   syscalls   syscalls per request, keep-alive case, each client once under
#              `strace -c -f` (and, where perf works, once under `perf stat`
#              with syscall tracepoints, which does not slow the client down)
#
# Runs are interleaved: every repetition runs every table, and within a table
# the tools' order rotates from one repetition to the next. Figures are the
# medians of REPS repetitions; every raw run is listed. Client CPU is user +
# sys from /usr/bin/time, measured the same way for every tool.
#
# Usage:  bench/compare.sh                       # 3 reps x 10 s: about 8 minutes on an idle machine
#         REPS=1 DURATION=3s bench/compare.sh    # quick run, about 1.5 minutes
#         TABLES="keepalive syscalls" bench/compare.sh
#
# Environment (all optional):
#   REPS=3  DURATION=10s  CONNECTIONS=50  CLIENT_CPU=0  SERVER_CPU=1
#   TABLES="keepalive pipeline close openloop syscalls"   which tables to measure and rewrite
#   VOLLEY_IO_MAIN=uring  the backend (--io) of the volley rows; with uring, every table but
#   EPOLL_ROWS=1          the open loop also gets a "volley --io epoll" row, interleaved
#   PIPELINE=16         requests in flight per connection in the pipeline table
#   OPEN_RATE=20000     open-loop rate whose achieved rate and schedule lag are checked
#   SLOW_RATE=1000      open-loop rate whose corrected p50 is compared with the service time
#   SYSCALL_DURATION=3s length of each strace / perf run
#   PORT=<free port picked automatically>
#   VOLLEY=<path>       use this binary instead of building target/release/volley
#   VOLLEY_REV=<rev>    build this commit (git archive into TOOLS_DIR, own target dir)
#                       instead of the work tree, e.g. VOLLEY_REV=HEAD while src/ is mid-edit
#   BASELINE_REV=<rev>  also measure volley built from this commit in the keep-alive table,
#                       interleaved with the others (row "volley@<rev>"), and report this
#                       build's requests per CPU-second divided by the baseline's
#   KEEPALIVE_TOOLS="volley baseline"  only these of wrk volley oha h2load baseline in the
#                       keep-alive table (more repetitions of one comparison in the same time)
#   OHA=<path>          use this oha instead of target/bench-tools/bin/oha (cargo install'ed)
#   TOOLS_DIR=<dir>     where `cargo install --root` puts oha (default target/bench-tools)
#   OUT_DIR=<dir>       raw outputs (default target/bench-compare/<UTC time>)
#   BENCH_MD=<file>     Markdown file whose sections are rewritten (default BENCHMARKS.md)
#   UPDATE_MD=0         print the results, leave BENCH_MD alone
#   REPORT_FROM=<dir>   re-render the raw outputs of an earlier run, measure nothing
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
TABLES=${TABLES:-keepalive pipeline close openloop syscalls}
PIPELINE=${PIPELINE:-16}
OPEN_RATE=${OPEN_RATE:-20000}
SLOW_RATE=${SLOW_RATE:-1000}
SYSCALL_DURATION=${SYSCALL_DURATION:-3s}
UPDATE_MD=${UPDATE_MD:-1}
BUSY_MAX=${BUSY_MAX:-20}
WAIT_QUIET=${WAIT_QUIET:-120}
OTHER_MAX=${OTHER_MAX:-25}
RETRIES=${RETRIES:-2}
# The backend of the "volley" rows, and whether the epoll backend gets rows of its own (when
# the main rows use io_uring).
VOLLEY_IO_MAIN=${VOLLEY_IO_MAIN:-uring}
[[ $VOLLEY_IO_MAIN =~ ^(uring|epoll|auto)$ ]] || { echo "VOLLEY_IO_MAIN must be uring, epoll or auto" >&2; exit 2; }
EPOLL_ROWS=${EPOLL_ROWS:-$([[ $VOLLEY_IO_MAIN == epoll ]] && echo 0 || echo 1)}

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BENCH_MD=${BENCH_MD:-$ROOT/BENCHMARKS.md}
TOOLS_DIR=${TOOLS_DIR:-$ROOT/target/bench-tools}
STAMP=$(date -u +%Y%m%dT%H%M%SZ)
OUT_DIR=${OUT_DIR:-$ROOT/target/bench-compare/$STAMP}

BENCH_TAG=compare
# shellcheck source=bench/lib.sh
source "$ROOT/bench/lib.sh"

report() { # render $OUT_DIR as Markdown and rewrite the measured sections of BENCH_MD
    OUT_DIR="$OUT_DIR" BENCH_MD="$BENCH_MD" UPDATE_MD="$UPDATE_MD" ROOT="$ROOT" \
        python3 "$(dirname "${BASH_SOURCE[0]}")/compare_report.py"
}

if [[ -n ${REPORT_FROM:-} ]]; then   # re-render an earlier run without measuring again
    [[ -f $REPORT_FROM/meta.json ]] || die 2 "REPORT_FROM=$REPORT_FROM has no meta.json"
    OUT_DIR=$(cd "$REPORT_FROM" && pwd)
    report
    exit
fi

[[ $REPS =~ ^[1-9][0-9]*$ ]] || die 2 "REPS must be a positive integer, got '$REPS'"
for v in CONNECTIONS PIPELINE OPEN_RATE SLOW_RATE; do [[ ${!v} =~ ^[1-9][0-9]*$ ]] || die 2 "$v must be a positive integer, got '${!v}'"; done
for v in BUSY_MAX WAIT_QUIET OTHER_MAX RETRIES; do [[ ${!v} =~ ^[0-9]+$ ]] || die 2 "$v must be a non-negative integer"; done
for v in DURATION SYSCALL_DURATION; do
    [[ ${!v} =~ ^[1-9][0-9]*[smh]$ ]] || die 2 "$v must look like 10s, 2m or 1h (every client accepts it), got '${!v}'"
done
to_seconds() { local n=${1%?}; case ${1: -1} in s) echo "$n" ;; m) echo $((n * 60)) ;; h) echo $((n * 3600)) ;; esac; }
for t in $TABLES; do
    [[ $t =~ ^(keepalive|pipeline|close|openloop|syscalls)$ ]] || die 2 "unknown table '$t' in TABLES (keepalive pipeline close openloop syscalls)"
done
want() { [[ " $TABLES " == *" $1 "* ]]; }

# ---------------------------------------------------------------- prerequisites
# Debian packages: command -> package
declare -A PKG=([wrk]=wrk [h2load]=nghttp2-client [strace]=strace [taskset]=util-linux [python3]=python3 [/usr/bin/time]=time)
missing=()
for c in "${!PKG[@]}"; do command -v "$c" >/dev/null 2>&1 || missing+=("${PKG[$c]}"); done
command -v nginx >/dev/null 2>&1 || [[ -x /usr/sbin/nginx ]] || missing+=(nginx)
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

# oha comes from crates.io, built once into TOOLS_DIR (a few minutes on 2 cores).
# Without it the keep-alive table simply has no oha row.
OHA_NOTE=
if [[ -n ${OHA:-} ]]; then
    [[ -x $OHA ]] || die 2 "OHA=$OHA is not executable"
elif [[ -x $TOOLS_DIR/bin/oha ]]; then
    OHA=$TOOLS_DIR/bin/oha
elif want keepalive || want syscalls; then
    if command -v cargo >/dev/null 2>&1; then
        log "cargo install oha --locked --root $TOOLS_DIR (once; a few minutes)"
        mkdir -p "$TOOLS_DIR"
        if cargo install oha --locked --root "$TOOLS_DIR" >"$TOOLS_DIR/oha-install.log" 2>&1; then
            OHA=$TOOLS_DIR/bin/oha
        else
            OHA_NOTE="oha could not be installed (cargo install oha --locked failed; see $TOOLS_DIR/oha-install.log)"
            log "warning: $OHA_NOTE"
        fi
    else
        OHA_NOTE="oha not measured: cargo not found"
    fi
fi
OHA=${OHA:-}
# oha's JSON flag and its worker-thread flag changed between releases; use what this one has.
OHA_FLAGS=()
if [[ -n $OHA ]]; then
    oha_help=$("$OHA" --help 2>&1) || die 2 "$OHA --help failed"
    if grep -q -- '--output-format' <<<"$oha_help"; then OHA_FLAGS+=(--output-format json); else OHA_FLAGS+=(-j); fi
    grep -q -- '--no-tui' <<<"$oha_help" && OHA_FLAGS+=(--no-tui)
    # one worker thread, as every other client here gets
    if grep -q -- "--worker-threads" <<<"$oha_help"; then OHA_FLAGS+=(--worker-threads 1)
    elif grep -q -- "--threads" <<<"$oha_help"; then OHA_FLAGS+=(--threads 1); fi
fi

PERF_OK=0
if want syscalls && command -v perf >/dev/null 2>&1 \
    && perf stat -x, -e raw_syscalls:sys_enter -o /dev/null -- true >/dev/null 2>&1; then
    PERF_OK=1
fi

ncpu=$(nproc --all)
taskset -c "$CLIENT_CPU" true 2>/dev/null || die 2 "cannot pin to CLIENT_CPU=$CLIENT_CPU (this machine has $ncpu CPUs)"
taskset -c "$SERVER_CPU" true 2>/dev/null || die 2 "cannot pin to SERVER_CPU=$SERVER_CPU (this machine has $ncpu CPUs)"
[[ $CLIENT_CPU != "$SERVER_CPU" ]] || die 2 "CLIENT_CPU and SERVER_CPU must differ"

build_volley
BASELINE_NAME=
BASELINE_VERSION=
if [[ -n ${BASELINE_REV:-} ]]; then
    BASELINE=$(build_rev "$BASELINE_REV" baseline) || exit 2
    BASELINE_NAME="volley@$(git -C "$ROOT" rev-parse --short "$BASELINE_REV")"
    BASELINE_VERSION="$("$BASELINE" --version) (built from git ${BASELINE_NAME#volley@})"
fi
WRK_VERSION=$( (wrk -v 2>&1 || true) | head -n1 | sed 's/ *Copyright.*//')
H2LOAD_VERSION=$(h2load --version 2>&1 | head -n1)
OHA_VERSION=$([[ -n $OHA ]] && "$OHA" --version 2>&1 | head -n1 || echo "oha: not installed")
NGINX_VERSION=$("$NGINX" -v 2>&1 | head -n1 | sed 's/^nginx version: //')
STRACE_VERSION=$(strace -V 2>&1 | head -n1)
PERF_VERSION=$( ((PERF_OK)) && perf --version 2>&1 | head -n1 || echo "")

# ---------------------------------------------------------------- nginx
TMP=$(mktemp -d -t volley-compare.XXXXXX)
# Run private copies, so a rebuild of target/release/volley during the runs
# cannot mix two binaries in one comparison.
cp "$VOLLEY" "$TMP/volley"
if [[ -n $BASELINE_NAME ]]; then
    cp "$BASELINE" "$TMP/volley-baseline"
    BASELINE=$TMP/volley-baseline
fi
VOLLEY_SRC=$VOLLEY
VOLLEY=$TMP/volley
NGINX_PID=
CLIENT_PID=
cleanup() {
    local rc=$? p
    if [[ -n $CLIENT_PID ]]; then   # /usr/bin/time (or strace / perf) and the client it runs
        for p in $(pgrep -P "$CLIENT_PID" || true) "$CLIENT_PID"; do kill -TERM "$p" 2>/dev/null || true; done
        wait "$CLIENT_PID" 2>/dev/null || true
    fi
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
python3 -c 'import socket, sys; socket.socket().bind(("127.0.0.1", int(sys.argv[1])))' "$PORT" 2>/dev/null \
    || die 2 "127.0.0.1:$PORT is already in use (or not a valid port); choose another PORT"
URL="http://127.0.0.1:$PORT/"

write_nginx_conf "$TMP" "$PORT"
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

# ---------------------------------------------------------------- cells
mkdir -p "$OUT_DIR"
cp "$TMP/nginx.conf" "$OUT_DIR/nginx.conf"
: >"$OUT_DIR/runs.tsv"   # the order things ran: seq rep cell attempts

# cell_cmd CELL BASE [DURATION]: the client command of one cell (unpinned) in CMD.
# BASE is the raw-output path without extension (volley writes BASE.json).
cell_cmd() {
    local cell=$1 base=$2 dur=${3:-$DURATION} c=$CONNECTIONS
    local dur_s
    dur_s=$(to_seconds "$dur")
    case $cell in
    ka-wrk) CMD=(wrk -t1 "-c$c" "-d$dur" --latency "$URL") ;;
    ka-volley) CMD=("$VOLLEY" run "$URL" -t 1 -c "$c" -d "$dur" --io "$VOLLEY_IO_MAIN" --quiet --json "$base.json") ;;
    ka-epoll) CMD=("$VOLLEY" run "$URL" -t 1 -c "$c" -d "$dur" --io epoll --quiet --json "$base.json") ;;
    ka-baseline) CMD=("$BASELINE" run "$URL" -t 1 -c "$c" -d "$dur" --quiet --json "$base.json") ;;
    ka-oha) CMD=("$OHA" -z "$dur" -c "$c" "${OHA_FLAGS[@]}" "$URL") ;;
    ka-h2load) CMD=(h2load --h1 -c "$c" -t 1 -D "$dur_s" "$URL") ;;
    pipe-volley) CMD=("$VOLLEY" run "$URL" -t 1 -c "$c" --pipeline "$PIPELINE" -d "$dur" --io "$VOLLEY_IO_MAIN" --quiet --json "$base.json") ;;
    pipe-epoll) CMD=("$VOLLEY" run "$URL" -t 1 -c "$c" --pipeline "$PIPELINE" -d "$dur" --io epoll --quiet --json "$base.json") ;;
    pipe-h2load) CMD=(h2load --h1 -m "$PIPELINE" -c "$c" -t 1 -D "$dur_s" "$URL") ;;
    close-wrk) CMD=(wrk -t1 "-c$c" "-d$dur" --latency -H "Connection: close" "$URL") ;;
    close-volley) CMD=("$VOLLEY" run "$URL" -t 1 -c "$c" --no-keepalive -d "$dur" --io "$VOLLEY_IO_MAIN" --quiet --json "$base.json") ;;
    close-epoll) CMD=("$VOLLEY" run "$URL" -t 1 -c "$c" --no-keepalive -d "$dur" --io epoll --quiet --json "$base.json") ;;
    open-fast) CMD=("$VOLLEY" run "$URL" -R "$OPEN_RATE" -c "$c" -t 1 -d "$dur" --allow-shortfall --quiet --json "$base.json") ;;
    open-slow) CMD=("$VOLLEY" run "$URL" -R "$SLOW_RATE" -c "$c" -t 1 -d "$dur" --allow-shortfall --quiet --json "$base.json") ;;
    *) die 1 "unknown cell $cell" ;;
    esac
}

GROUP_keepalive=(ka-wrk ka-volley ka-epoll ka-oha ka-h2load)
[[ -n $OHA ]] || GROUP_keepalive=(ka-wrk ka-volley ka-epoll ka-h2load)
if ((!EPOLL_ROWS)); then
    kept=()
    for cell in "${GROUP_keepalive[@]}"; do [[ $cell == ka-epoll ]] || kept+=("$cell"); done
    GROUP_keepalive=("${kept[@]}")
fi
[[ -z $BASELINE_NAME ]] || GROUP_keepalive+=(ka-baseline)
if [[ -n ${KEEPALIVE_TOOLS:-} ]]; then   # only these tools in the keep-alive table
    chosen=()
    for cell in "${GROUP_keepalive[@]}"; do
        [[ " $KEEPALIVE_TOOLS " == *" ${cell#ka-} "* ]] && chosen+=("$cell")
    done
    ((${#chosen[@]})) || die 2 "KEEPALIVE_TOOLS='$KEEPALIVE_TOOLS' names none of: ${GROUP_keepalive[*]#ka-}"
    GROUP_keepalive=("${chosen[@]}")
fi
GROUP_pipeline=(pipe-volley pipe-epoll pipe-h2load)
GROUP_close=(close-wrk close-volley close-epoll)
if ((!EPOLL_ROWS)); then GROUP_pipeline=(pipe-volley pipe-h2load); GROUP_close=(close-wrk close-volley); fi
GROUP_openloop=(open-fast open-slow)


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
time_wait() { awk '$1 == "TCP:" { for (i = 2; i < NF; i++) if ($i == "tw") print $(i + 1) }' /proc/net/sockstat; }


SEQ=0
run_cell() { # cell rep
    local cell=$1 rep=$2 base="$OUT_DIR/$1-rep$2" rc attempt other
    cell_cmd "$cell" "$base"
    for ((attempt = 0; ; attempt++)); do
        wait_quiet >"$base.busy"
        log "rep $rep/$REPS: $cell"
        rc=0
        time_wait >"$base.tw"
        echo "$(ticks_machine) $(ticks_nginx)" >"$base.ticks"
        # In the background plus wait, so that a signal to this script is handled at once.
        /usr/bin/time -f '%U %S %e %M' -o "$base.time" taskset -c "$CLIENT_CPU" "${CMD[@]}" >"$base.out" 2>"$base.err" &
        CLIENT_PID=$!
        wait "$CLIENT_PID" || rc=$?
        CLIENT_PID=
        echo "$(ticks_machine) $(ticks_nginx)" >>"$base.ticks"
        time_wait >>"$base.tw"
        if ((rc != 0)); then
            tail -n 20 "$base.out" "$base.err" >&2
            die 1 "$cell exited with $rc in rep $rep (output: $base.out, $base.err)"
        fi
        kill -0 "$NGINX_PID" 2>/dev/null || die 1 "nginx died during the $cell run of rep $rep"
        # % of one core used by neither the client nor nginx while the client ran
        other=$(awk -v hz="$(getconf CLK_TCK)" -v n="$ncpu" '
            NR == 1 { b0 = $1; t0 = $2; n0 = $3 } NR == 2 { b1 = $1; t1 = $2; n1 = $3 }
            FILENAME ~ /time$/ { c = $1 + $2 }
            END { wall = (t1 - t0) / hz / n; o = ((b1 - b0) - (n1 - n0)) / hz - c; printf "%d", (o > 0 ? 100 * o / wall : 0) }
        ' "$base.ticks" "$base.time")
        ((other > OTHER_MAX && attempt < RETRIES)) || break
        log "other work used ${other}% of a core during this run; repeating it ($((attempt + 1))/$RETRIES)"
    done
    SEQ=$((SEQ + 1))
    printf '%s\t%s\t%s\t%s\n' "$SEQ" "$rep" "$cell" "$((attempt + 1))" >>"$OUT_DIR/runs.tsv"
}

# ---------------------------------------------------------------- timed runs
for ((rep = 1; rep <= REPS; rep++)); do
    for table in keepalive pipeline close openloop; do
        want "$table" || continue
        declare -n group="GROUP_$table"
        n=${#group[@]}
        for ((i = 0; i < n; i++)); do   # rotate the order by one per repetition
            run_cell "${group[(i + rep - 1) % n]}" "$rep"
        done
        unset -n group
    done
done

# ---------------------------------------------------------------- syscalls per request
# Each client once, keep-alive, under strace -c -f (ptrace: slow, only the
# counts matter) and, where perf works, once under perf stat counting the
# syscall tracepoints that strace saw (no ptrace stops: the client runs at
# full speed, so the batching is the real one).
SYSCALL_TOOLS=()
if want syscalls; then
    SYSCALL_TOOLS=(volley wrk h2load)
    ((EPOLL_ROWS)) && SYSCALL_TOOLS+=(epoll)
    [[ -n $OHA ]] && SYSCALL_TOOLS+=(oha)
    for tool in "${SYSCALL_TOOLS[@]}"; do
        base="$OUT_DIR/sys-$tool-strace"
        cell_cmd "ka-$tool" "$base" "$SYSCALL_DURATION"
        wait_quiet >"$base.busy"
        log "syscalls: $tool under strace -c -f for $SYSCALL_DURATION"
        rc=0
        taskset -c "$CLIENT_CPU" strace -c -f -o "$base.strace" "${CMD[@]}" >"$base.out" 2>"$base.err" &
        CLIENT_PID=$!
        wait "$CLIENT_PID" || rc=$?
        CLIENT_PID=
        ((rc == 0)) || { tail -n 20 "$base.out" "$base.err" >&2; die 1 "$tool under strace exited with $rc"; }
        if ((PERF_OK)); then
            events=raw_syscalls:sys_enter
            for name in $(awk 'NF >= 5 && $NF != "total" && $1 ~ /^[0-9.]+$/ { print $NF }' "$base.strace"); do
                [[ -d /sys/kernel/tracing/events/syscalls/sys_enter_$name || -d /sys/kernel/debug/tracing/events/syscalls/sys_enter_$name ]] \
                    && events+=",syscalls:sys_enter_$name"
            done
            base="$OUT_DIR/sys-$tool-perf"
            cell_cmd "ka-$tool" "$base" "$SYSCALL_DURATION"
            wait_quiet >"$base.busy"
            log "syscalls: $tool under perf stat for $SYSCALL_DURATION"
            rc=0
            taskset -c "$CLIENT_CPU" perf stat -x, -o "$base.perf" -e "$events" -- "${CMD[@]}" >"$base.out" 2>"$base.err" &
            CLIENT_PID=$!
            wait "$CLIENT_PID" || rc=$?
            CLIENT_PID=
            ((rc == 0)) || { tail -n 20 "$base.out" "$base.err" >&2; die 1 "$tool under perf stat exited with $rc"; }
        fi
    done
fi

# ---------------------------------------------------------------- metadata
short() { sed -e "s#$OUT_DIR/##g" -e "s#$ROOT/##g" -e "s#$TMP#\$TMP#g"; }
declare -A SHOWN=()
for cell in "${GROUP_keepalive[@]}" "${GROUP_pipeline[@]}" "${GROUP_close[@]}" "${GROUP_openloop[@]}"; do
    cell_cmd "$cell" "$cell-repN"
    SHOWN[$cell]=$(quote taskset -c "$CLIENT_CPU" "${CMD[@]}" | short)
done
for tool in "${SYSCALL_TOOLS[@]}"; do
    cell_cmd "ka-$tool" "sys-$tool-strace" "$SYSCALL_DURATION"
    SHOWN[sys-$tool-strace]=$(quote taskset -c "$CLIENT_CPU" strace -c -f -o "sys-$tool-strace.strace" "${CMD[@]}" | short)
    cell_cmd "ka-$tool" "sys-$tool-perf" "$SYSCALL_DURATION"
    SHOWN[sys-$tool-perf]=$(quote taskset -c "$CLIENT_CPU" perf stat -x, -o "sys-$tool-perf.perf" -e 'raw_syscalls:sys_enter,syscalls:sys_enter_<each syscall strace saw>' -- "${CMD[@]}" | short)
done
for k in "${!SHOWN[@]}"; do printf '%s\t%s\n' "$k" "${SHOWN[$k]}"; done >"$OUT_DIR/commands.tsv"

CMD_NGINX="$(quote "${NGINX_CMD[@]}" | short)   # \$TMP/nginx.conf: $(printf '%s' "$OUT_DIR/nginx.conf" | sed "s#$ROOT/##")"
CMD_VOLLEY_NOTE="\$TMP/volley is a copy of $(printf '%s' "$VOLLEY_SRC" | short)"
CPU_MODEL=$(grep -m1 '^model name' /proc/cpuinfo | sed 's/^[^:]*: *//' || true)
KERNEL=$(uname -sr)
NCPU=$ncpu
DATE=$(date -u +%Y-%m-%dT%H:%M:%SZ)
PORT_RANGE=$(sysctl -n net.ipv4.ip_local_port_range 2>/dev/null | tr -s '\t ' ' ' || true)
TW_REUSE=$(sysctl -n net.ipv4.tcp_tw_reuse 2>/dev/null || true)
TW_MAX=$(sysctl -n net.ipv4.tcp_max_tw_buckets 2>/dev/null || true)
export CMD_NGINX CMD_VOLLEY_NOTE CPU_MODEL KERNEL NCPU DATE WRK_VERSION NGINX_VERSION VOLLEY_VERSION \
    H2LOAD_VERSION OHA_VERSION OHA_NOTE STRACE_VERSION PERF_VERSION PERF_OK PORT_RANGE TW_REUSE TW_MAX \
    REPS DURATION SYSCALL_DURATION CONNECTIONS CLIENT_CPU SERVER_CPU BUSY_MAX OTHER_MAX TABLES \
    PIPELINE OPEN_RATE SLOW_RATE BASELINE_NAME BASELINE_VERSION VOLLEY_IO_MAIN
python3 - "$OUT_DIR/meta.json" <<'EOF'
import json, os, sys
keys = ("CMD_NGINX CMD_VOLLEY_NOTE CPU_MODEL KERNEL NCPU DATE WRK_VERSION NGINX_VERSION VOLLEY_VERSION "
        "H2LOAD_VERSION OHA_VERSION OHA_NOTE STRACE_VERSION PERF_VERSION PERF_OK PORT_RANGE TW_REUSE TW_MAX "
        "REPS DURATION SYSCALL_DURATION CONNECTIONS CLIENT_CPU SERVER_CPU BUSY_MAX OTHER_MAX TABLES "
        "PIPELINE OPEN_RATE SLOW_RATE BASELINE_NAME BASELINE_VERSION VOLLEY_IO_MAIN").split()
json.dump({k: os.environ[k] for k in keys}, open(sys.argv[1], "w"), indent=2)
EOF
report
