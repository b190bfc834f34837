#!/usr/bin/env bash
# bench/openloop.sh: what an open-loop request costs the client, against the closed loop and
# against the floor of one timed wake-up per request, in one interleaved session on one
# pinned nginx worker (loopback):
#
#   open-R     volley -R R -c 50 -t 1, for R in RATES (1k 5k 20k 50k): client CPU per
#              request, wake-ups per request, schedule lag and corrected latency p50/p99,
#              achieved rate
#   closed     volley -c 50 -t 1 (no -R): the closed loop's CPU per request, the reference
#   floor-R    bench/floor/timed_wake.c (gcc -O2) at R: one epoll_pwait2 with the due time
#              as deadline per request and no I/O at all: the floor of waking at that rate
#   floorio-R  the same plus one GET written per due time on one keep-alive connection to
#              the same nginx, the response read when the socket is ready (a wake-up for it
#              too when it comes back before the next due time)
#   zrk-R      zrk (zoxy-io/zrk, a Zig io_uring rewrite of wrk2) -t 1 -c 50 -R R: a second
#              open-loop client on the same schedule, its CPU per request and corrected
#              latency (it reports no service time and only the maximum schedule lag)
#   base-R, base-closed   with BASELINE_REV (or BASELINE): volley built from that commit,
#              the same runs, interleaved with this build's (the before/after table)
#   perf       PERF_RATES (default 1000 20000), each volley build once under `perf stat`
#              counting syscalls by name and context switches (PERF_DURATION each)
#
# Client CPU is user + sys of the client process from /usr/bin/time (the same for every
# client); wake-ups are its voluntary context switches (/usr/bin/time %w: each is a sleep in
# the kernel, so one wake-up; volley's other threads, the aggregator and the CPU sampler, add
# about 2 a second). Per request means per completed request (volley) or per due request
# (the floor). Every repetition runs every cell, in an order rotating by one per repetition.
# The table goes between <!-- NAME:begin --> and <!-- NAME:end --> of BENCHMARKS.md (NAME:
# SECTION, default openloop-cost).
#
# Usage:  bench/openloop.sh                              # 3 reps x 10 s: about 8 minutes
#         BASELINE_REV=main bench/openloop.sh            # before (main) vs after (this tree)
#         REPS=1 DURATION=3s RATES="1000 20000" bench/openloop.sh
#
# Environment (all optional):
#   REPS=3  DURATION=10s  CONNECTIONS=50  CLIENT_CPU=0  SERVER_CPU=1
#   RATES="1000 5000 20000 50000"
#   CELLS="open closed floor floorio base"   which kinds of cells to run (base needs a baseline;
#                       zrk is not in the default: building it fetches Zig 0.16 from PyPI)
#   ZRK=<path>          a zrk binary for the zrk cells, instead of building one into TOOLS_DIR:
#   ZRK_REPO=https://github.com/zoxy-io/zrk.git  ZRK_REF=v1.4.2
#   ZIO_REPO=https://github.com/lalinsky/zio.git  ZIO_REF=v0.17.0   (zrk's one dependency,
#                       given to its build as a local path: the build fetches nothing)
#   ZIG=<path>          Zig 0.16 (default: ziglang==0.16.0 from PyPI, into TOOLS_DIR)
#   PERF_RATES="1000 20000"  PERF_DURATION=5s   (PERF_RATES= skips the perf runs)
#   VOLLEY=<path> / VOLLEY_REV=<rev>   the build measured (default: target/release/volley)
#   BASELINE=<path> / BASELINE_REV=<rev>   the build it is compared with
#   BATCH_WINDOW_US=<µs>  this build's runs get VOLLEY_BATCH_WINDOW_US=<µs> (the open loop's
#                       batch window, an experiment; the baseline's runs never do)
#   THIS_IO=auto  BASELINE_IO=auto   VOLLEY_IO of this build's runs and of the baseline's
#                       (BASELINE=target/release/volley THIS_IO=uring BASELINE_IO=epoll
#                       compares the two backends of one build)
#   SECTION=openloop-cost   the marked section of BENCH_MD that is rewritten
#   PORT, TOOLS_DIR, OUT_DIR, BENCH_MD, UPDATE_MD=0, REPORT_FROM=<dir>,
#   BUSY_MAX=20, WAIT_QUIET=120, OTHER_MAX=25, RETRIES=2   as in bench/compare.sh
#
# Exit codes: 0 ok, 1 a run failed or its output could not be parsed,
# 2 missing prerequisites / bad settings.
set -euo pipefail

REPS=${REPS:-3}
DURATION=${DURATION:-10s}
CONNECTIONS=${CONNECTIONS:-50}
CLIENT_CPU=${CLIENT_CPU:-0}
SERVER_CPU=${SERVER_CPU:-1}
RATES=${RATES:-1000 5000 20000 50000}
CELLS=${CELLS:-open closed floor floorio base}
PERF_RATES=${PERF_RATES-1000 20000}
PERF_DURATION=${PERF_DURATION:-5s}
SECTION=${SECTION:-openloop-cost}
UPDATE_MD=${UPDATE_MD:-1}
BUSY_MAX=${BUSY_MAX:-20}
WAIT_QUIET=${WAIT_QUIET:-120}
OTHER_MAX=${OTHER_MAX:-25}
RETRIES=${RETRIES:-2}
BATCH_WINDOW_US=${BATCH_WINDOW_US:-}
THIS_IO=${THIS_IO:-auto}
BASELINE_IO=${BASELINE_IO:-auto}
ZRK_REPO=${ZRK_REPO:-https://github.com/zoxy-io/zrk.git}
ZRK_REF=${ZRK_REF:-v1.4.2}
ZIO_REPO=${ZIO_REPO:-https://github.com/lalinsky/zio.git}
ZIO_REF=${ZIO_REF:-v0.17.0}

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BENCH_MD=${BENCH_MD:-$ROOT/BENCHMARKS.md}
TOOLS_DIR=${TOOLS_DIR:-$ROOT/target/bench-tools}
STAMP=$(date -u +%Y%m%dT%H%M%SZ)
OUT_DIR=${OUT_DIR:-$ROOT/target/bench-openloop/$STAMP}

BENCH_TAG=openloop
# shellcheck source=bench/lib.sh
source "$ROOT/bench/lib.sh"

report() {
    OUT_DIR="$OUT_DIR" BENCH_MD="$BENCH_MD" UPDATE_MD="$UPDATE_MD" ROOT="$ROOT" SECTION="$SECTION" \
        python3 "$ROOT/bench/openloop_report.py"
}

if [[ -n ${REPORT_FROM:-} ]]; then
    [[ -f $REPORT_FROM/meta.json ]] || die 2 "REPORT_FROM=$REPORT_FROM has no meta.json"
    OUT_DIR=$(cd "$REPORT_FROM" && pwd)
    report
    exit
fi

[[ $REPS =~ ^[1-9][0-9]*$ ]] || die 2 "REPS must be a positive integer, got '$REPS'"
[[ $CONNECTIONS =~ ^[1-9][0-9]*$ ]] || die 2 "CONNECTIONS must be a positive integer, got '$CONNECTIONS'"
for v in BUSY_MAX WAIT_QUIET OTHER_MAX RETRIES; do [[ ${!v} =~ ^[0-9]+$ ]] || die 2 "$v must be a non-negative integer"; done
for v in DURATION PERF_DURATION; do
    [[ ${!v} =~ ^[1-9][0-9]*s$ ]] || die 2 "$v must be whole seconds like 10s, got '${!v}'"
done
for r in $RATES $PERF_RATES; do [[ $r =~ ^[1-9][0-9]*$ ]] || die 2 "RATES and PERF_RATES must be positive integers, got '$r'"; done
for c in $CELLS; do [[ $c =~ ^(open|closed|floor|floorio|base|zrk)$ ]] || die 2 "unknown cell kind '$c' in CELLS (open closed floor floorio base zrk)"; done
for v in THIS_IO BASELINE_IO; do [[ ${!v} =~ ^(auto|uring|epoll)$ ]] || die 2 "$v must be auto, uring or epoll"; done
[[ -z $BATCH_WINDOW_US || $BATCH_WINDOW_US =~ ^[0-9]+$ ]] || die 2 "BATCH_WINDOW_US must be a whole number of µs"
[[ $SECTION =~ ^[a-z0-9-]+$ ]] || die 2 "SECTION must be lower-case letters, digits and dashes"
want() { [[ " $CELLS " == *" $1 "* ]]; }

# ---------------------------------------------------------------- prerequisites
missing=()
command -v taskset >/dev/null 2>&1 || missing+=(util-linux)
[[ -x /usr/bin/time ]] || missing+=(time)
command -v python3 >/dev/null 2>&1 || missing+=(python3)
command -v gcc >/dev/null 2>&1 || missing+=(gcc)
NGINX=$(command -v nginx 2>/dev/null || echo /usr/sbin/nginx)
[[ -x $NGINX ]] || missing+=(nginx)
if ((${#missing[@]})); then
    [[ $(id -u) -eq 0 ]] || die 2 "missing ${missing[*]}; run as root to install them, or install them yourself"
    command -v apt-get >/dev/null 2>&1 || die 2 "missing ${missing[*]} and apt-get is not available"
    log "installing: ${missing[*]}"
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq || die 2 "apt-get update failed"
    for p in "${missing[@]}"; do
        if [[ $p == nginx ]]; then
            apt-get install -y -qq --no-install-recommends nginx-light >/dev/null 2>&1 \
                || apt-get install -y -qq --no-install-recommends nginx >/dev/null \
                || die 2 "could not install nginx-light or nginx"
        else
            apt-get install -y -qq --no-install-recommends "$p" >/dev/null || die 2 "apt-get install $p failed"
        fi
    done
    NGINX=$(command -v nginx 2>/dev/null || echo /usr/sbin/nginx)
fi
PERF_OK=0
if [[ -n $PERF_RATES ]] && command -v perf >/dev/null 2>&1 \
    && perf stat -x, -e raw_syscalls:sys_enter -o /dev/null -- true >/dev/null 2>&1; then
    PERF_OK=1
fi

ncpu=$(nproc --all)
taskset -c "$CLIENT_CPU" true 2>/dev/null || die 2 "cannot pin to CLIENT_CPU=$CLIENT_CPU (this machine has $ncpu CPUs)"
taskset -c "$SERVER_CPU" true 2>/dev/null || die 2 "cannot pin to SERVER_CPU=$SERVER_CPU (this machine has $ncpu CPUs)"
[[ $CLIENT_CPU != "$SERVER_CPU" ]] || die 2 "CLIENT_CPU and SERVER_CPU must differ"

# build_zrk: Zig 0.16 (from PyPI unless ZIG is set), zio and zrk from git into TOOLS_DIR, once
# per pair of refs; zrk's build.zig.zon is pointed at the zio checkout so that nothing is
# fetched. Sets ZRK.
build_zrk() {
    local zref=${ZRK_REF//[^A-Za-z0-9._-]/_} iref=${ZIO_REF//[^A-Za-z0-9._-]/_}
    local dir=$TOOLS_DIR/zrk-$zref-zio-$iref blog=$TOOLS_DIR/zrk-build.log
    ZRK=$dir/zrk/zig-out/bin/zrk
    [[ -x $ZRK ]] && return 0
    mkdir -p "$TOOLS_DIR"
    if [[ -z ${ZIG:-} ]]; then
        ZIG=$TOOLS_DIR/ziglang-0.16.0/ziglang/zig
        if [[ ! -x $ZIG ]]; then
            log "installing Zig 0.16.0 (PyPI ziglang) into $TOOLS_DIR/ziglang-0.16.0 (once)"
            python3 -m pip install --quiet --disable-pip-version-check --target "$TOOLS_DIR/ziglang-0.16.0" \
                ziglang==0.16.0 >>"$blog" 2>&1 || die 2 "pip install ziglang==0.16.0 failed; see $blog"
        fi
    fi
    [[ -x $ZIG ]] || die 2 "ZIG=$ZIG is not executable"
    log "building zrk $ZRK_REF (zio $ZIO_REF) with Zig $("$ZIG" version) into $dir (once)"
    rm -rf "$dir"
    mkdir -p "$dir"
    {
        git clone --quiet "$ZIO_REPO" "$dir/zio" &&
            git -C "$dir/zio" -c advice.detachedHead=false checkout --quiet "$ZIO_REF" &&
            git clone --quiet "$ZRK_REPO" "$dir/zrk" &&
            git -C "$dir/zrk" -c advice.detachedHead=false checkout --quiet "$ZRK_REF" &&
            python3 - "$dir/zrk/build.zig.zon" <<'EOF' &&
import re, sys
p = sys.argv[1]
s = open(p).read()
s, n = re.subn(r'\.zio\s*=\s*\.\{[^}]*\}', '.zio = .{ .path = "../zio" }', s)
if n != 1:
    sys.exit(f"{p}: no single .zio dependency to point at ../zio")
open(p, "w").write(s)
EOF
            (cd "$dir/zrk" && ZIG_GLOBAL_CACHE_DIR=$dir/cache "$ZIG" build -Doptimize=ReleaseFast)
    } >>"$blog" 2>&1 || { rm -f "$ZRK"; die 2 "building zrk $ZRK_REF failed; see $blog"; }
    [[ -x $ZRK ]] || die 2 "zrk's build produced no $ZRK; see $blog"
}

build_volley
ZRK_VERSION=
if want zrk; then
    if [[ -n ${ZRK:-} ]]; then
        [[ -x $ZRK ]] || die 2 "ZRK=$ZRK is not executable"
    else
        build_zrk
    fi
    ZRK_VERSION="$("$ZRK" --version 2>&1 | head -n1)"
fi
BASELINE_NAME=
BASELINE_VERSION=
if [[ -n ${BASELINE_REV:-} ]]; then
    BASELINE=$(build_rev "$BASELINE_REV" baseline) || exit 2
    BASELINE_NAME="volley@$(git -C "$ROOT" rev-parse --short "$BASELINE_REV")"
    BASELINE_VERSION="$("$BASELINE" --version) (built from git ${BASELINE_NAME#volley@})"
elif [[ -n ${BASELINE:-} ]]; then
    [[ -x $BASELINE ]] || die 2 "BASELINE=$BASELINE is not executable"
    BASELINE_NAME="volley (baseline)"
    [[ $BASELINE_IO == auto ]] || BASELINE_NAME="volley --io $BASELINE_IO"
    BASELINE_VERSION="$("$BASELINE" --version) ($BASELINE)"
fi

# ---------------------------------------------------------------- nginx and the floor
TMP=$(mktemp -d -t volley-openloop.XXXXXX)
# Private copies, so a rebuild of target/release/volley during the runs cannot mix binaries.
cp "$VOLLEY" "$TMP/volley"
VOLLEY_SRC=$VOLLEY
VOLLEY=$TMP/volley
if [[ -n $ZRK_VERSION ]]; then
    cp "$ZRK" "$TMP/zrk"
    ZRK=$TMP/zrk
fi
if [[ -n $BASELINE_NAME ]]; then
    cp "$BASELINE" "$TMP/volley-baseline"
    BASELINE_SRC=$BASELINE
    BASELINE=$TMP/volley-baseline
fi
FLOOR_SRC=$ROOT/bench/floor/timed_wake.c
gcc -O2 -o "$TMP/timed_wake" "$FLOOR_SRC" || die 2 "gcc -O2 $FLOOR_SRC failed"
FLOOR=$TMP/timed_wake
SERVER_PID=
CLIENT_PID=
cleanup() {
    local rc=$? p
    if [[ -n $CLIENT_PID ]]; then
        for p in $(pgrep -P "$CLIENT_PID" || true) "$CLIENT_PID"; do kill -TERM "$p" 2>/dev/null || true; done
        wait "$CLIENT_PID" 2>/dev/null || true
    fi
    stop_pid "$SERVER_PID"
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
SERVER_CMD=(taskset -c "$SERVER_CPU" "$NGINX" -p "$TMP/" -c "$TMP/nginx.conf" -e "$TMP/error.log" -g "daemon off;")
"${SERVER_CMD[@]}" >"$TMP/server.out" 2>&1 &
SERVER_PID=$!   # taskset execs nginx: the master's PID
ready=0
for _ in $(seq 100); do
    kill -0 "$SERVER_PID" 2>/dev/null || break
    if python3 - "$URL" <<'EOF' 2>/dev/null; then ready=1; break; fi
import sys, urllib.request
with urllib.request.urlopen(sys.argv[1], timeout=1) as r:
    sys.exit(0 if r.status == 200 and r.read() == b"." else 1)
EOF
    sleep 0.1
done
if ((!ready)); then
    cat "$TMP/server.out" "$TMP/error.log" >&2 2>/dev/null || true
    die 2 "nginx did not answer 200 '.' on $URL within 10 s"
fi
SERVER_VERSION=$("$NGINX" -v 2>&1 | head -n1 | sed 's/^nginx version: //')
log "$SERVER_VERSION (pid $SERVER_PID) on $URL, pinned to CPU $SERVER_CPU"

mkdir -p "$OUT_DIR"
cp "$TMP/nginx.conf" "$OUT_DIR/nginx.conf"
: >"$OUT_DIR/runs.tsv"   # the order things ran: seq rep cell attempts

# cell_cmd CELL BASE [DURATION]: the client command of one cell (unpinned) in CMD.
cell_cmd() {
    local cell=$1 base=$2 dur=${3:-$DURATION} c=$CONNECTIONS rate
    local this=(env "VOLLEY_IO=$THIS_IO" "$VOLLEY") base_=(env "VOLLEY_IO=$BASELINE_IO" "${BASELINE:-}")
    [[ -z $BATCH_WINDOW_US ]] || this=(env "VOLLEY_IO=$THIS_IO" "VOLLEY_BATCH_WINDOW_US=$BATCH_WINDOW_US" "$VOLLEY")
    rate=${cell##*-}
    case $cell in
    closed) CMD=("${this[@]}" run "$URL" -c "$c" -t 1 -d "$dur" --quiet --json "$base.json") ;;
    base-closed) CMD=("${base_[@]}" run "$URL" -c "$c" -t 1 -d "$dur" --quiet --json "$base.json") ;;
    open-*) CMD=("${this[@]}" run "$URL" -R "$rate" -c "$c" -t 1 -d "$dur" --allow-shortfall --quiet --json "$base.json") ;;
    base-*) CMD=("${base_[@]}" run "$URL" -R "$rate" -c "$c" -t 1 -d "$dur" --allow-shortfall --quiet --json "$base.json") ;;
    floor-*) CMD=("$FLOOR" "$rate" "${dur%s}" none) ;;
    zrk-*) CMD=("$ZRK" -t 1 -c "$c" -d "$dur" -R "$rate" --format json -o "$base.json" "$URL") ;;
    floorio-*) CMD=("$FLOOR" "$rate" "${dur%s}" io 127.0.0.1 "$PORT") ;;
    *) die 1 "unknown cell $cell" ;;
    esac
}
ALL=()
want closed && ALL+=(closed)
[[ -z $BASELINE_NAME ]] || ! want base || ! want closed || ALL+=(base-closed)
for r in $RATES; do
    want open && ALL+=("open-$r")
    [[ -z $BASELINE_NAME ]] || ! want base || ALL+=("base-$r")
    want floor && ALL+=("floor-$r")
    want floorio && ALL+=("floorio-$r")
    want zrk && ALL+=("zrk-$r")
done
((${#ALL[@]})) || die 2 "CELLS='$CELLS' and RATES='$RATES' leave nothing to run"

ticks_machine() { # busy and total clock ticks of all CPUs so far
    local a i total=0
    read -r -a a < <(head -n1 /proc/stat)
    for ((i = 1; i <= 8 && i < ${#a[@]}; i++)); do total=$((total + a[i])); done
    echo "$((total - a[4] - a[5])) $total"
}
ticks_server() { # utime + stime of nginx's master and worker, in clock ticks
    local p sum=0 f
    for p in "$SERVER_PID" $(pgrep -P "$SERVER_PID" || true); do
        f=$(cat "/proc/$p/stat" 2>/dev/null) || continue
        f=${f##*) }
        read -r -a f <<<"$f"
        sum=$((sum + f[11] + f[12]))
    done
    echo "$sum"
}

SEQ=0
run_cell() { # cell rep
    local cell=$1 rep=$2 base="$OUT_DIR/$1-rep$2" rc attempt other
    cell_cmd "$cell" "$base"
    for ((attempt = 0; ; attempt++)); do
        wait_quiet >"$base.busy"
        log "rep $rep/$REPS: $cell"
        rc=0
        echo "$(ticks_machine) $(ticks_server)" >"$base.ticks"
        /usr/bin/time -f '%U %S %e %M %w %c' -o "$base.time" taskset -c "$CLIENT_CPU" "${CMD[@]}" >"$base.out" 2>"$base.err" &
        CLIENT_PID=$!
        wait "$CLIENT_PID" || rc=$?
        CLIENT_PID=
        echo "$(ticks_machine) $(ticks_server)" >>"$base.ticks"
        if ((rc != 0)); then
            tail -n 20 "$base.out" "$base.err" >&2
            die 1 "$cell exited with $rc in rep $rep (output: $base.out, $base.err)"
        fi
        kill -0 "$SERVER_PID" 2>/dev/null || die 1 "nginx died during the $cell run of rep $rep"
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

n=${#ALL[@]}
for ((rep = 1; rep <= REPS; rep++)); do
    for ((i = 0; i < n; i++)); do   # rotate the order by one per repetition
        run_cell "${ALL[(i + rep - 1) % n]}" "$rep"
    done
done

# ---------------------------------------------------------------- syscalls per request
PERF_EVENTS=raw_syscalls:sys_enter,context-switches
for s in epoll_pwait2 sendto recvfrom write read writev clock_nanosleep timerfd_settime futex; do
    [[ -d /sys/kernel/tracing/events/syscalls/sys_enter_$s || -d /sys/kernel/debug/tracing/events/syscalls/sys_enter_$s ]] \
        && PERF_EVENTS+=",syscalls:sys_enter_$s"
done
PERF_CELLS=()
if ((PERF_OK)); then
    for r in $PERF_RATES; do
        PERF_CELLS+=("open-$r")
        [[ -z $BASELINE_NAME ]] || PERF_CELLS+=("base-$r")
    done
    for cell in "${PERF_CELLS[@]}"; do
        base="$OUT_DIR/perf-$cell"
        cell_cmd "$cell" "$base" "$PERF_DURATION"
        wait_quiet >"$base.busy"
        log "perf stat: $cell for $PERF_DURATION"
        rc=0
        taskset -c "$CLIENT_CPU" perf stat -x, -o "$base.perf" -e "$PERF_EVENTS" -- "${CMD[@]}" >"$base.out" 2>"$base.err" &
        CLIENT_PID=$!
        wait "$CLIENT_PID" || rc=$?
        CLIENT_PID=
        ((rc == 0)) || { tail -n 20 "$base.out" "$base.err" >&2; die 1 "$cell under perf stat exited with $rc"; }
    done
fi

# ---------------------------------------------------------------- metadata
short() { sed -e "s#$OUT_DIR/##g" -e "s#$ROOT/##g" -e "s#$TMP#\$TMP#g"; }
{
    for cell in "${ALL[@]}"; do
        cell_cmd "$cell" "$cell-repN"
        printf '%s\t%s\n' "$cell" "$(quote taskset -c "$CLIENT_CPU" "${CMD[@]}" | short)"
    done
    for cell in "${PERF_CELLS[@]}"; do
        cell_cmd "$cell" "perf-$cell" "$PERF_DURATION"
        printf '%s\t%s\n' "perf-$cell" "$(quote taskset -c "$CLIENT_CPU" perf stat -x, -o "perf-$cell.perf" -e "$PERF_EVENTS" -- "${CMD[@]}" | short)"
    done
} >"$OUT_DIR/commands.tsv"
CMD_SERVER="$(quote "${SERVER_CMD[@]}" | short)   # \$TMP/nginx.conf: $(printf '%s' "$OUT_DIR/nginx.conf" | sed "s#$ROOT/##")"
CMD_VOLLEY_NOTE="\$TMP/volley is a copy of $(printf '%s' "$VOLLEY_SRC" | short)"
[[ -z $BASELINE_NAME ]] || CMD_VOLLEY_NOTE+="; \$TMP/volley-baseline of $(printf '%s' "$BASELINE_SRC" | short)"
CMD_VOLLEY_NOTE+="; \$TMP/timed_wake: gcc -O2 -o \$TMP/timed_wake bench/floor/timed_wake.c"
[[ -z $ZRK_VERSION ]] || CMD_VOLLEY_NOTE+="; \$TMP/zrk: zrk $ZRK_REF built with ReleaseFast (ZRK_REPO, ZIO_REF $ZIO_REF)"
CPU_MODEL=$(grep -m1 '^model name' /proc/cpuinfo | sed 's/^[^:]*: *//' || true)
KERNEL=$(uname -sr)
NCPU=$ncpu
DATE=$(date -u +%Y-%m-%dT%H:%M:%SZ)
GCC_VERSION=$(gcc --version | head -n1)
PERF_VERSION=$( ((PERF_OK)) && perf --version 2>&1 | head -n1 || echo "")
export CMD_SERVER CMD_VOLLEY_NOTE CPU_MODEL KERNEL NCPU DATE VOLLEY_VERSION SERVER_VERSION GCC_VERSION \
    REPS DURATION CONNECTIONS CLIENT_CPU SERVER_CPU BUSY_MAX OTHER_MAX WAIT_QUIET RETRIES RATES CELLS \
    BASELINE_NAME BASELINE_VERSION PERF_OK PERF_VERSION PERF_DURATION BATCH_WINDOW_US THIS_IO BASELINE_IO \
    ZRK_VERSION
python3 - "$OUT_DIR/meta.json" <<'EOF'
import json, os, sys
keys = ("CMD_SERVER CMD_VOLLEY_NOTE CPU_MODEL KERNEL NCPU DATE VOLLEY_VERSION SERVER_VERSION GCC_VERSION "
        "REPS DURATION CONNECTIONS CLIENT_CPU SERVER_CPU BUSY_MAX OTHER_MAX WAIT_QUIET RETRIES RATES CELLS "
        "BASELINE_NAME BASELINE_VERSION PERF_OK PERF_VERSION PERF_DURATION BATCH_WINDOW_US THIS_IO BASELINE_IO "
        "ZRK_VERSION").split()
json.dump({k: os.environ[k] for k in keys}, open(sys.argv[1], "w"), indent=2)
EOF
report
