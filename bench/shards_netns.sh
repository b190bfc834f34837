#!/usr/bin/env bash
# bench/shards_netns.sh: sharded runs across network namespaces. One server namespace with a
# bridge, where `volley serve` listens on 10.77.0.1, and one namespace per generator "host"
# (10.77.0.10, .11, ...), each joined to the bridge by its own veth pair. For N = 2, 4, 8
# shards, N generators each run `volley run --shard i/N --start-at T --clock-budget off` of
# one open-loop load (RATE req/s in all, CONNECTIONS connections in all), and `volley merge`
# makes them one result; in the same repetition one unsharded `volley run` of the same whole
# load goes from the first generator namespace over the same path. The order of the four runs
# rotates from one repetition to the next. Measured:
#
#   rate accuracy   the merged achieved rate (requests written in the send window ÷ its
#                   length, added over the shards) against RATE, %
#   start skew      each shard's `shard.start_late_us` (how late it began after --start-at):
#                   the largest, and the largest − the smallest
#   shape           the merged corrected-latency p50, p90, p99, p99.9 beside the unsharded
#                   run's of the same repetition
#   count           the merged `requests.completed` against the server's own count
#                   (`GET /_volley/counts`, read inside the server namespace)
#
# The server is pinned to SERVER_CPU and every generator (all N of them, and the unsharded
# run) to CLIENT_CPU with taskset: the generators share one core, as they share one clock.
# Needs root and iproute2 (network namespaces, veth, bridge). The table goes between
# <!-- shards-netns:begin --> and <!-- shards-netns:end --> of BENCHMARKS.md.
#
# Usage:  bench/shards_netns.sh                     # 3 reps x 4 runs x 10 s: about 3 minutes
#         REPS=1 DURATION=5s bench/shards_netns.sh  # about 40 s
#
# Environment (all optional):
#   REPS=3  DURATION=10s  RATE=10000  CONNECTIONS=64  SHARDS="2 4 8"
#   SERVER_CPU=0  CLIENT_CPU=1  START_LEAD_MS=2000 (how far ahead --start-at is set)
#   VOLLEY=<path>       use this binary instead of building target/release/volley
#   VOLLEY_REV=<rev>    build this commit (git archive into TOOLS_DIR, own target dir)
#   TOOLS_DIR=<dir>     default target/bench-tools
#   OUT_DIR=<dir>       raw outputs (default target/bench-shards-netns/<UTC time>)
#   BENCH_MD=<file>     Markdown file whose section is rewritten (default BENCHMARKS.md)
#   UPDATE_MD=0         print the section, leave BENCH_MD alone
#   REPORT_FROM=<dir>   re-render the raw outputs of an earlier run, measure nothing
#   BUSY_MAX=20         before each run, wait while more than this % of all CPUs
#   WAIT_QUIET=120      is busy with other work, for at most this many seconds
#                       (then run anyway; the table flags such runs)
#   OTHER_MAX=40        a run during which other work used more than this % of
#   RETRIES=2           one core is repeated, at most this many times (what no
#                       process is charged with counts as other work, the kernel's
#                       packet work of the run itself too: 5-25 % on a quiet machine)
#
# Exit codes: 0 ok, 1 a run or a merge failed, 2 missing prerequisites / bad settings.
set -euo pipefail

REPS=${REPS:-3}
DURATION=${DURATION:-10s}
RATE=${RATE:-10000}
CONNECTIONS=${CONNECTIONS:-64}
SHARDS=${SHARDS:-2 4 8}
SERVER_CPU=${SERVER_CPU:-0}
CLIENT_CPU=${CLIENT_CPU:-1}
START_LEAD_MS=${START_LEAD_MS:-2000}
UPDATE_MD=${UPDATE_MD:-1}
BUSY_MAX=${BUSY_MAX:-20}
WAIT_QUIET=${WAIT_QUIET:-120}
OTHER_MAX=${OTHER_MAX:-40}
RETRIES=${RETRIES:-2}

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BENCH_MD=${BENCH_MD:-$ROOT/BENCHMARKS.md}
TOOLS_DIR=${TOOLS_DIR:-$ROOT/target/bench-tools}
STAMP=$(date -u +%Y%m%dT%H%M%SZ)
OUT_DIR=${OUT_DIR:-$ROOT/target/bench-shards-netns/$STAMP}

BENCH_TAG=shards-netns
# shellcheck source=bench/lib.sh
source "$ROOT/bench/lib.sh"

report() {
    OUT_DIR="$OUT_DIR" BENCH_MD="$BENCH_MD" UPDATE_MD="$UPDATE_MD" ROOT="$ROOT" \
        python3 "$ROOT/bench/shards_netns_report.py"
}

if [[ -n ${REPORT_FROM:-} ]]; then
    [[ -f $REPORT_FROM/meta.json ]] || die 2 "REPORT_FROM=$REPORT_FROM has no meta.json"
    OUT_DIR=$(cd "$REPORT_FROM" && pwd)
    report
    exit
fi

[[ $REPS =~ ^[1-9][0-9]*$ ]] || die 2 "REPS must be a positive integer, got '$REPS'"
[[ $RATE =~ ^[1-9][0-9]*$ ]] || die 2 "RATE must be a positive integer (req/s), got '$RATE'"
[[ $CONNECTIONS =~ ^[1-9][0-9]*$ ]] || die 2 "CONNECTIONS must be a positive integer, got '$CONNECTIONS'"
[[ $START_LEAD_MS =~ ^[1-9][0-9]*$ ]] || die 2 "START_LEAD_MS must be a positive integer, got '$START_LEAD_MS'"
[[ $DURATION =~ ^[1-9][0-9]*[smh]$ ]] || die 2 "DURATION must look like 10s, 2m or 1h, got '$DURATION'"
for v in BUSY_MAX WAIT_QUIET OTHER_MAX RETRIES; do [[ ${!v} =~ ^[0-9]+$ ]] || die 2 "$v must be a non-negative integer"; done
MAX_N=1
for n in $SHARDS; do
    [[ $n =~ ^[1-9][0-9]*$ && $n -ge 2 && $n -le 200 ]] || die 2 "SHARDS must list shard counts from 2 to 200, got '$n'"
    ((n <= CONNECTIONS)) || die 2 "$n shards cannot share $CONNECTIONS connections (each needs one)"
    ((n > MAX_N)) && MAX_N=$n
done
((MAX_N > 1)) || die 2 "SHARDS is empty"

# ---------------------------------------------------------------- prerequisites
[[ $(id -u) -eq 0 ]] || die 2 "network namespaces need root"
missing=()
command -v ip >/dev/null 2>&1 || missing+=(iproute2)
command -v taskset >/dev/null 2>&1 || missing+=(util-linux)
command -v python3 >/dev/null 2>&1 || missing+=(python3)
if ((${#missing[@]})); then
    command -v apt-get >/dev/null 2>&1 || die 2 "missing ${missing[*]} and apt-get is not available"
    log "installing: ${missing[*]}"
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq || die 2 "apt-get update failed"
    apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null || die 2 "apt-get install ${missing[*]} failed"
fi
ncpu=$(nproc --all)
NCPU=$ncpu
taskset -c "$CLIENT_CPU" true 2>/dev/null || die 2 "cannot pin to CLIENT_CPU=$CLIENT_CPU (this machine has $ncpu CPUs)"
taskset -c "$SERVER_CPU" true 2>/dev/null || die 2 "cannot pin to SERVER_CPU=$SERVER_CPU (this machine has $ncpu CPUs)"
[[ $CLIENT_CPU != "$SERVER_CPU" ]] || die 2 "CLIENT_CPU and SERVER_CPU must differ"

build_volley

# ---------------------------------------------------------------- namespaces
TMP=$(mktemp -d -t volley-shards-netns.XXXXXX)
# A private copy, so a rebuild of target/release/volley during the runs cannot mix two
# binaries in one comparison.
cp "$VOLLEY" "$TMP/volley"
VOLLEY_SRC=$VOLLEY
VOLLEY=$TMP/volley
NS=volley-bench-$$
SERVER_NS=$NS-server
SERVER_IP=10.77.0.1
PORT=8080
URL="http://$SERVER_IP:$PORT/"
SERVER_PID=
CLIENT_PIDS=()
made=()
cleanup() {
    local rc=$? p n
    for p in "${CLIENT_PIDS[@]}"; do kill -TERM "$p" 2>/dev/null || true; done
    for p in "${CLIENT_PIDS[@]}"; do wait "$p" 2>/dev/null || true; done
    stop_pid "$SERVER_PID"
    for n in "${made[@]}"; do ip netns del "$n" 2>/dev/null || true; done
    rm -rf "$TMP"
    exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

gen_ns() { echo "$NS-gen$1"; }
ip netns add "$SERVER_NS" || die 2 "ip netns add failed (no network namespaces here?)"
made+=("$SERVER_NS")
ip -n "$SERVER_NS" link set lo up
ip -n "$SERVER_NS" link add br0 type bridge || die 2 "cannot make a bridge in a namespace"
ip -n "$SERVER_NS" addr add "$SERVER_IP/24" dev br0
ip -n "$SERVER_NS" link set br0 up
for ((i = 0; i < MAX_N; i++)); do
    g=$(gen_ns "$i")
    ip netns add "$g"
    made+=("$g")
    # Made in the server namespace, its peer moved straight into the generator's: nothing is
    # created in the namespace the script runs in.
    ip -n "$SERVER_NS" link add "host$i" type veth peer name eth0 netns "$g" || die 2 "cannot make a veth pair"
    ip -n "$SERVER_NS" link set "host$i" master br0 up
    ip -n "$g" addr add "10.77.0.$((10 + i))/24" dev eth0
    ip -n "$g" link set eth0 up
    ip -n "$g" link set lo up
done
log "namespaces: $SERVER_NS ($SERVER_IP, bridge br0) and $MAX_N generators $(gen_ns 0) .. $(gen_ns $((MAX_N - 1)))"

# The server's count of `GET /`, read inside its namespace (that request is not counted);
# from namespace $2 when given (to see that a generator reaches it).
server_count() {
    ip netns exec "${2:-$SERVER_NS}" python3 - "$URL" <<'EOF'
import json, sys, urllib.request
with urllib.request.urlopen(sys.argv[1] + "_volley/counts", timeout=2) as r:
    print(json.load(r).get("GET /", 0))
EOF
}

SERVER_CMD=(ip netns exec "$SERVER_NS" taskset -c "$SERVER_CPU" "$VOLLEY" serve --bind "$SERVER_IP" --port "$PORT")
"${SERVER_CMD[@]}" >"$TMP/server.out" 2>&1 &
SERVER_PID=$!   # ip netns exec and taskset exec the server
for ((i = 0; i < MAX_N; i++)); do
    ok=0
    for _ in $(seq 100); do
        kill -0 "$SERVER_PID" 2>/dev/null || break
        if server_count "$(gen_ns "$i")" >/dev/null 2>&1; then ok=1; break; fi
        sleep 0.1
    done
    ((ok)) || { cat "$TMP/server.out" >&2; die 2 "$(gen_ns "$i") does not reach $URL within 10 s"; }
done
log "volley serve (pid $SERVER_PID) on $URL in $SERVER_NS, pinned to CPU $SERVER_CPU; generators pinned to CPU $CLIENT_CPU"

# ---------------------------------------------------------------- runs
mkdir -p "$OUT_DIR"
: >"$OUT_DIR/runs.tsv"   # seq rep cell busy server_before server_after attempts other_pct
COMMON=(-R "$RATE" -c "$CONNECTIONS" -t 1 -d "$DURATION" -q)
client() { # NS ARGS...: a generator command, pinned, in namespace NS
    local ns=$1; shift
    CMD=(ip netns exec "$ns" taskset -c "$CLIENT_CPU" "$VOLLEY" "$@")
}

start_at() { # START_LEAD_MS from now, RFC 3339 UTC with milliseconds
    python3 -c 'import datetime as d, sys
t = d.datetime.now(d.timezone.utc) + d.timedelta(milliseconds=int(sys.argv[1]))
print(t.strftime("%Y-%m-%dT%H:%M:%S.") + f"{t.microsecond // 1000:03d}Z")' "$START_LEAD_MS"
}

ticks() { # idle + iowait ticks of all CPUs so far, the server's utime + stime, the time
    local a f
    read -r -a a < <(head -n1 /proc/stat)
    f=$(cat "/proc/$SERVER_PID/stat") || die 1 "the server (pid $SERVER_PID) is gone"
    f=${f##*) }
    read -r -a f <<<"$f"
    echo "$((a[4] + a[5])) $((f[11] + f[12])) $(date +%s.%N)"
}

# % of one core that other work used during a run: the machine's busy time (all CPUs' time
# less their idle time: on this kind of virtual machine /proc/stat's user and system ticks
# undercount, its idle time does not) less the server's and the generators' own CPU time
# (their RunResults' client CPU). What is left includes the kernel's work on this run's own
# packets (veths and bridge) that no process is charged with: its floor on a quiet machine is
# the quiet runs' value in the table.
other_pct() { # TICKS_FILE RESULT.json...
    python3 - "$NCPU" "$@" <<'EOF'
import json, os, sys
hz = os.sysconf("SC_CLK_TCK")
ncpu = int(sys.argv[1])
(i0, s0, t0), (i1, s1, t1) = [map(float, l.split()) for l in open(sys.argv[2]).read().splitlines()[:2]]
wall = max(t1 - t0, 1e-3)
clients = sum(c["cpu_user_s"] + c["cpu_sys_s"] for c in (json.load(open(f))["client"] for f in sys.argv[3:]))
other = ncpu * wall - (i1 - i0) / hz - (s1 - s0) / hz - clients
print(max(0, round(100 * other / wall)))
EOF
}

SEQ=0
run_cell() { # cell rep
    local cell=$1 rep=$2 attempt other
    for ((attempt = 0; ; attempt++)); do
        run_once "$cell" "$rep"
        other=$(other_pct "$OUT_DIR/$cell-rep$rep.ticks" "${RESULTS[@]}")
        ((other > OTHER_MAX && attempt < RETRIES)) || break
        log "other work used ${other}% of a core during this run; repeating it ($((attempt + 1))/$RETRIES)"
    done
    SEQ=$((SEQ + 1))
    printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$SEQ" "$rep" "$cell" "$BUSY" "$BEFORE" "$AFTER" "$((attempt + 1))" "$other" >>"$OUT_DIR/runs.tsv"
}

run_once() { # cell rep: one run (and its merge); RESULTS the generators' RunResults
    local cell=$1 rep=$2 base="$OUT_DIR/$1-rep$2" at n i rc p files=()
    BUSY=$(wait_quiet)
    log "rep $rep/$REPS: $cell"
    BEFORE=$(server_count)
    rm -f "$base".json "$base"-shard*.json
    if [[ $cell == single ]]; then
        ticks >"$base.ticks"
        client "$(gen_ns 0)" run "$URL" "${COMMON[@]}" --json "$base.json"
        "${CMD[@]}" >"$base.out" 2>"$base.err" || {
            tail -n 20 "$base.err" >&2
            die 1 "the unsharded run of rep $rep failed (output: $base.err)"
        }
        ticks >>"$base.ticks"
        files=("$base.json")
    else
        n=${cell#n}
        at=$(start_at)
        CLIENT_PIDS=()
        for ((i = 0; i < n; i++)); do
            client "$(gen_ns "$i")" run "$URL" "${COMMON[@]}" --shard "$i/$n" --start-at "$at" \
                --clock-budget off --json "$base-shard$i.json"
            "${CMD[@]}" >"$base-shard$i.out" 2>"$base-shard$i.err" &
            CLIENT_PIDS+=($!)
            files+=("$base-shard$i.json")
        done
        # The window of other work starts with the load (the lead before it is only waiting).
        python3 -c 'import datetime as d, sys, time
t = d.datetime.fromisoformat(sys.argv[1].replace("Z", "+00:00")).timestamp()
time.sleep(max(0.0, t - time.time()))' "$at"
        ticks >"$base.ticks"
        rc=0
        for p in "${CLIENT_PIDS[@]}"; do wait "$p" || rc=$?; done
        CLIENT_PIDS=()
        ticks >>"$base.ticks"
        if ((rc != 0)); then
            tail -n 5 "$base"-shard*.err >&2
            die 1 "a shard of $cell in rep $rep exited with $rc (output: $base-shard*.err)"
        fi
        "$VOLLEY" merge "${files[@]}" -o "$base.json" >"$base.merge.out" 2>"$base.merge.err" || {
            cat "$base.merge.err" >&2
            die 1 "volley merge of $cell in rep $rep failed"
        }
    fi
    AFTER=$(server_count)
    kill -0 "$SERVER_PID" 2>/dev/null || die 1 "the server died during the $cell run of rep $rep"
    RESULTS=("${files[@]}")
}

CELLS=(single)
for n in $SHARDS; do CELLS+=("n$n"); done
for ((rep = 1; rep <= REPS; rep++)); do
    k=${#CELLS[@]}
    for ((j = 0; j < k; j++)); do   # rotate the order by one per repetition
        run_cell "${CELLS[(j + rep - 1) % k]}" "$rep"
    done
done

# ---------------------------------------------------------------- metadata
short() { sed -e "s#$OUT_DIR/##g" -e "s#$ROOT/##g" -e "s#$TMP#\$TMP#g" -e "s#$NS#\$NS#g"; }
{
    client "$(gen_ns 0)" run "$URL" "${COMMON[@]}" --json single-repN.json
    printf 'single\t%s\n' "$(quote "${CMD[@]}" | short)"
    client "$(gen_ns i)" run "$URL" "${COMMON[@]}" --shard "i/N" --start-at T --clock-budget off --json nN-repN-shardi.json
    printf 'shard\t%s\n' "$(quote "${CMD[@]}" | short)"
    printf 'merge\t%s\n' "$(quote "$VOLLEY" merge nN-repN-shard0.json ... -o nN-repN.json | short)"
    printf 'server\t%s\n' "$(quote "${SERVER_CMD[@]}" | short)"
} >"$OUT_DIR/commands.tsv"
CMD_VOLLEY_NOTE="\$TMP/volley is a copy of $(printf '%s' "$VOLLEY_SRC" | short); \$NS-server holds the bridge br0 ($SERVER_IP/24), each \$NS-genI one end of a veth pair (10.77.0.(10+I)/24) whose other end is a port of br0"
CPU_MODEL=$(grep -m1 '^model name' /proc/cpuinfo | sed 's/^[^:]*: *//' || true)
KERNEL=$(uname -sr)
NCPU=$ncpu
DATE=$(date -u +%Y-%m-%dT%H:%M:%SZ)
export CMD_VOLLEY_NOTE CPU_MODEL KERNEL NCPU DATE VOLLEY_VERSION REPS DURATION RATE CONNECTIONS SHARDS \
    SERVER_CPU CLIENT_CPU START_LEAD_MS BUSY_MAX WAIT_QUIET OTHER_MAX RETRIES
python3 - "$OUT_DIR/meta.json" <<'EOF'
import json, os, sys
keys = ("CMD_VOLLEY_NOTE CPU_MODEL KERNEL NCPU DATE VOLLEY_VERSION REPS DURATION RATE CONNECTIONS SHARDS "
        "SERVER_CPU CLIENT_CPU START_LEAD_MS BUSY_MAX WAIT_QUIET OTHER_MAX RETRIES").split()
json.dump({k: os.environ[k] for k in keys}, open(sys.argv[1], "w"), indent=2)
EOF
report
