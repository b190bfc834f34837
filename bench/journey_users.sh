#!/usr/bin/env bash
# bench/journey_users.sh: what a journey's users cost the client in memory. USERS virtual
# users (10,000), each holding a keep-alive connection to one pinned nginx worker, run
#
#   journey    --requests-file journey.toml: each user logs in once, then loops over three
#              steps that each capture a value (a JSON pointer, a header, a regex) and send
#              the one before; a cookie jar per user (bench/lib.sh, journey_files)
#   nocapture  --requests-file nocapture.toml: the same requests with the values and cookies
#              as literals, no capture, `cookies = false`
#   single     the single URL / (no requests file): the users' connections alone
#
# with `volley run URL --users USERS --spawn-rate SPAWN_RATE --think-time THINK_TIME -d DURATION
# -t 1`, volley pinned to CLIENT_CPU and nginx (the API of bench/lib.sh's journey_locations,
# the settings of write_nginx_conf plus `multi_accept on`) to SERVER_CPU. The client's memory
# is the RunResult's client.rss_max_bytes (peak RSS), with VmRSS sampled every SAMPLE_EVERY s
# (the last sample, on the plateau of USERS users, is the one that says what the users hold).
# journey − nocapture over USERS is what one user's variables and cookie jar cost. Every
# repetition runs the three, in an order that rotates; medians and ranges over REPS. The table
# goes between <!-- journey-users:begin --> and <!-- journey-users:end --> of BENCHMARKS.md.
#
# Usage:  bench/journey_users.sh              # 3 reps x 3 runs x 10 s: about 2.5 minutes
#
# Environment (all optional):
#   REPS=3  USERS=10000  SPAWN_RATE=5000  THINK_TIME=1s  DURATION=10s  SAMPLE_EVERY=1
#   CLIENT_CPU=0  SERVER_CPU=1  PORT=<free port>  VOLLEY=<path>  VOLLEY_REV=<rev>
#   TOOLS_DIR=target/bench-tools  OUT_DIR=target/bench-journey-users/<UTC time>
#   BENCH_MD=BENCHMARKS.md  UPDATE_MD=0 (print only)  REPORT_FROM=<dir> (re-render)
#   BUSY_MAX=20  WAIT_QUIET=120   wait (bounded) for a quiet machine before each run
#
# Exit codes: 0 ok (the numbers are reported, not judged), 1 a run failed or its output could
# not be parsed, 2 missing prerequisites / bad settings.
set -euo pipefail

REPS=${REPS:-3}
USERS=${USERS:-10000}
SPAWN_RATE=${SPAWN_RATE:-5000}
THINK_TIME=${THINK_TIME:-1s}
DURATION=${DURATION:-10s}
SAMPLE_EVERY=${SAMPLE_EVERY:-1}
CLIENT_CPU=${CLIENT_CPU:-0}
SERVER_CPU=${SERVER_CPU:-1}
UPDATE_MD=${UPDATE_MD:-1}
BUSY_MAX=${BUSY_MAX:-20}
WAIT_QUIET=${WAIT_QUIET:-120}

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BENCH_MD=${BENCH_MD:-$ROOT/BENCHMARKS.md}
TOOLS_DIR=${TOOLS_DIR:-$ROOT/target/bench-tools}
STAMP=$(date -u +%Y%m%dT%H%M%SZ)
OUT_DIR=${OUT_DIR:-$ROOT/target/bench-journey-users/$STAMP}

BENCH_TAG=journey-users
# shellcheck source=bench/lib.sh
source "$ROOT/bench/lib.sh"

report() {
    OUT_DIR="$OUT_DIR" BENCH_MD="$BENCH_MD" UPDATE_MD="$UPDATE_MD" ROOT="$ROOT" \
        python3 "$ROOT/bench/journey_users_report.py"
}

if [[ -n ${REPORT_FROM:-} ]]; then
    [[ -f $REPORT_FROM/meta.json ]] || die 2 "REPORT_FROM=$REPORT_FROM has no meta.json"
    OUT_DIR=$(cd "$REPORT_FROM" && pwd)
    report
    exit
fi

for v in REPS USERS SPAWN_RATE SAMPLE_EVERY; do [[ ${!v} =~ ^[1-9][0-9]*$ ]] || die 2 "$v must be a positive integer"; done
for v in BUSY_MAX WAIT_QUIET; do [[ ${!v} =~ ^[0-9]+$ ]] || die 2 "$v must be a non-negative integer"; done
[[ $DURATION =~ ^[1-9][0-9]*s$ ]] || die 2 "DURATION must be whole seconds like 10s, got '$DURATION'"
[[ $THINK_TIME =~ ^[0-9]+(ms|s)$ ]] || die 2 "THINK_TIME must look like 500ms or 1s, got '$THINK_TIME'"
((USERS <= 15000)) || die 2 "USERS=$USERS: nginx's worker_connections (16384, write_nginx_conf) holds at most about 15,000"

missing=()
command -v taskset >/dev/null 2>&1 || missing+=(util-linux)
command -v python3 >/dev/null 2>&1 || missing+=(python3)
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
[[ $CLIENT_CPU != "$SERVER_CPU" ]] || die 2 "CLIENT_CPU and SERVER_CPU must differ"

# A descriptor per user for volley (which raises its own soft limit to the hard one).
ulimit -n 65536 2>/dev/null || ulimit -n "$(ulimit -Hn)" 2>/dev/null || true
(($(ulimit -Hn) >= USERS + 100)) || die 2 "the open-files limit ($(ulimit -Hn)) is below USERS+100; raise it (ulimit -n)"
PORT_RANGE=$(sysctl -n net.ipv4.ip_local_port_range | tr -s '\t ' ' ')
read -r lo hi <<<"$PORT_RANGE"
((hi - lo + 1 >= USERS + 1000)) || die 2 "net.ipv4.ip_local_port_range ($PORT_RANGE) has fewer than USERS+1000 ports"

build_volley
NGINX_VERSION=$("$NGINX" -v 2>&1 | head -n1 | sed 's/^nginx version: //')

TMP=$(mktemp -d -t volley-journey-users.XXXXXX)
cp "$VOLLEY" "$TMP/volley"   # a rebuild during the runs cannot mix two binaries
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
# multi_accept: SPAWN_RATE connections a second are accepted as they come (bench/scale.sh
# shows nginx's accept queue overflowing without it).
write_nginx_conf "$TMP" "$PORT" "multi_accept on;"
journey_locations "$TMP/nginx.conf"
NGINX_CMD=(taskset -c "$SERVER_CPU" "$NGINX" -p "$TMP/" -c "$TMP/nginx.conf" -e "$TMP/error.log" -g "daemon off;")
"${NGINX_CMD[@]}" >"$TMP/nginx.out" 2>&1 &
NGINX_PID=$!
ready=0
for _ in $(seq 100); do
    kill -0 "$NGINX_PID" 2>/dev/null || break
    if python3 - "$URL" <<'EOF' 2>/dev/null; then ready=1; break; fi
import json, sys, urllib.request
root = sys.argv[1]
with urllib.request.urlopen(root, timeout=1) as r:
    assert r.status == 200 and r.read() == b"."
with urllib.request.urlopen(urllib.request.Request(root + "login", data=b"{}"), timeout=1) as r:
    assert r.status == 200 and "accessToken" in json.load(r) and r.headers["Set-Cookie"].startswith("sid=")
EOF
    sleep 0.1
done
((ready)) || { cat "$TMP/nginx.out" "$TMP/error.log" >&2 2>/dev/null || true; die 2 "nginx did not answer on $URL"; }
log "$NGINX_VERSION (pid $NGINX_PID) on $URL, pinned to CPU $SERVER_CPU"
mkdir -p "$OUT_DIR"
cp "$TMP/nginx.conf" "$OUT_DIR/nginx.conf"
journey_files "$OUT_DIR"   # journey.toml, nocapture.toml
: >"$OUT_DIR/runs.tsv"     # the order things ran: seq rep cell

cell_cmd() { # cell base: the client command of one cell (unpinned) in CMD
    local cell=$1 base=$2
    CMD=("$VOLLEY" run "$URL")
    case $cell in
    single) ;;
    nocapture | journey) CMD+=(--requests-file "$OUT_DIR/$cell.toml") ;;
    *) die 1 "unknown cell $cell" ;;
    esac
    CMD+=(--users "$USERS" --spawn-rate "$SPAWN_RATE" --think-time "$THINK_TIME" -d "$DURATION" -t 1 --quiet --json "$base.json")
}
CELLS=(single nocapture journey)

now_us() { local t=$EPOCHREALTIME; echo "${t/./}"; }
sample() { # t_s rss_kib hwm_kib fds of process $1 started at $2 (epoch µs)
    local pid=$1 t0=$2 now rss hwm fds
    now=$(now_us)
    rss=$(awk '/^VmRSS:/ { print $2 }' "/proc/$pid/status" 2>/dev/null) || return 0
    hwm=$(awk '/^VmHWM:/ { print $2 }' "/proc/$pid/status" 2>/dev/null) || return 0
    [[ -n $rss && -n $hwm ]] || return 0
    fds=$(ls "/proc/$pid/fd" 2>/dev/null | wc -l) || return 0   # the process may exit between two reads
    printf '%d.%d %s %s %s\n' $(((now - t0) / 1000000)) $(((now - t0) % 1000000 / 100000)) "$rss" "$hwm" "$fds"
}

SEQ=0
run_cell() { # cell rep
    local cell=$1 rep=$2 base="$OUT_DIR/$1-rep$2" rc=0 t0 next el
    cell_cmd "$cell" "$base"
    wait_quiet >"$base.busy"
    log "rep $rep/$REPS: $cell"
    : >"$base.samples"
    t0=$(now_us)
    taskset -c "$CLIENT_CPU" "${CMD[@]}" >"$base.out" 2>"$base.err" &
    CLIENT_PID=$!   # taskset execs volley
    next=0
    while kill -0 "$CLIENT_PID" 2>/dev/null; do
        el=$((($(now_us) - t0) / 1000000))
        if ((el >= next)); then
            sample "$CLIENT_PID" "$t0" >>"$base.samples" || true
            next=$((next + SAMPLE_EVERY))
        fi
        sleep 0.1
    done
    wait "$CLIENT_PID" || rc=$?
    CLIENT_PID=
    ((rc == 0)) || { tail -n 30 "$base.out" "$base.err" >&2; die 1 "$cell exited with $rc in rep $rep"; }
    kill -0 "$NGINX_PID" 2>/dev/null || die 1 "nginx died during the $cell run of rep $rep"
    SEQ=$((SEQ + 1))
    printf '%s\t%s\t%s\n' "$SEQ" "$rep" "$cell" >>"$OUT_DIR/runs.tsv"
}

for ((rep = 1; rep <= REPS; rep++)); do
    for ((i = 0; i < ${#CELLS[@]}; i++)); do   # rotate the order by one per repetition
        run_cell "${CELLS[(i + rep - 1) % ${#CELLS[@]}]}" "$rep"
    done
done

short() { sed -e "s#$OUT_DIR/##g" -e "s#$ROOT/##g" -e "s#$TMP#\$TMP#g"; }
for cell in "${CELLS[@]}"; do
    cell_cmd "$cell" "$cell-repN"
    printf '%s\t%s\n' "$cell" "$(quote taskset -c "$CLIENT_CPU" "${CMD[@]}" | short)"
done >"$OUT_DIR/commands.tsv"
CMD_NGINX="$(quote "${NGINX_CMD[@]}" | short)   # \$TMP/nginx.conf: $(printf '%s' "$OUT_DIR/nginx.conf" | sed "s#$ROOT/##")"
CMD_VOLLEY_NOTE="\$TMP/volley is a copy of $(printf '%s' "$VOLLEY_SRC" | short)"
CPU_MODEL=$(grep -m1 '^model name' /proc/cpuinfo | sed 's/^[^:]*: *//' || true)
KERNEL=$(uname -sr)
NCPU=$ncpu
DATE=$(date -u +%Y-%m-%dT%H:%M:%SZ)
NOFILE=$(ulimit -Sn)
export CMD_NGINX CMD_VOLLEY_NOTE CPU_MODEL KERNEL NCPU DATE VOLLEY_VERSION NGINX_VERSION REPS USERS SPAWN_RATE \
    THINK_TIME DURATION SAMPLE_EVERY CLIENT_CPU SERVER_CPU BUSY_MAX WAIT_QUIET PORT_RANGE NOFILE
python3 - "$OUT_DIR/meta.json" <<'EOF'
import json, os, sys
keys = ("CMD_NGINX CMD_VOLLEY_NOTE CPU_MODEL KERNEL NCPU DATE VOLLEY_VERSION NGINX_VERSION REPS USERS SPAWN_RATE "
        "THINK_TIME DURATION SAMPLE_EVERY CLIENT_CPU SERVER_CPU BUSY_MAX WAIT_QUIET PORT_RANGE NOFILE").split()
json.dump({k: os.environ[k] for k in keys}, open(sys.argv[1], "w"), indent=2)
EOF
report
