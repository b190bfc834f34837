#!/usr/bin/env bash
# bench/mix.sh: what a request mix, a response check and a journey cost the client, as ratios
# of requests per client CPU-second measured in one interleaved session against one pinned
# server (nginx with one worker when it is installed, else `volley serve`):
#
#   mix     volley --requests-file mix.toml (3 requests, weights 80/15/5, one templated path
#           /items/{rand:1..10000}) ÷ volley on the single URL /        target ≥ 0.95
#   check   volley --expect-body-contains on a 1 KiB response ÷ the same run without
#           the check                                                     target ≥ 0.90
#   journey volley --requests-file journey.toml (a login once per user, then three steps each
#           capturing a value the next one sends: a JSON pointer, a header, a regex; the
#           cookie jar on) ÷ volley --requests-file nocapture.toml (the same requests, the
#           values and cookies as literals: no capture, `cookies = false`)  target ≥ 0.67,
#           i.e. at most 1.5× the client CPU per request. Needs nginx: the API the journey
#           walks (bench/lib.sh, journey_locations) answers JSON, an ETag and Set-Cookie,
#           which volley serve does not; with SERVER=serve this comparison is left out.
#
# Closed loop, CONNECTIONS keep-alive connections, `-t 1`, the server pinned to SERVER_CPU and
# volley to CLIENT_CPU with taskset. Every repetition runs every comparison, each pair in an
# order that rotates from one repetition to the next; the ratios are paired within a
# repetition (median and range over REPS). Client CPU is user + sys of the volley process
# from /usr/bin/time. The table goes between <!-- mix:begin --> and <!-- mix:end --> of
# BENCHMARKS.md, with the commands and how busy the machine was.
#
# Usage:  bench/mix.sh                        # 3 reps x 10 s: about 4.5 minutes on an idle machine
#         REPS=3 DURATION=5s bench/mix.sh     # about 2.5 minutes
#         TABLES=journey bench/mix.sh         # the journey comparison alone
#
# Environment (all optional):
#   REPS=3  DURATION=10s  CONNECTIONS=50  CLIENT_CPU=0  SERVER_CPU=1
#   TABLES="mix check journey"   the comparisons to run (any of them, in this order)
#   SERVER=auto         nginx (installed by apt when missing and root), serve (volley serve),
#                       or auto: nginx when it is installed, else volley serve
#   PORT=<free port picked automatically>
#   VOLLEY=<path>       use this binary instead of building target/release/volley
#   VOLLEY_REV=<rev>    build this commit (git archive into TOOLS_DIR, own target dir)
#   TOOLS_DIR=<dir>     default target/bench-tools
#   OUT_DIR=<dir>       raw outputs (default target/bench-mix/<UTC time>)
#   BENCH_MD=<file>     Markdown file whose section is rewritten (default BENCHMARKS.md)
#   UPDATE_MD=0         print the section, leave BENCH_MD alone
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
SERVER=${SERVER:-auto}
UPDATE_MD=${UPDATE_MD:-1}
BUSY_MAX=${BUSY_MAX:-20}
WAIT_QUIET=${WAIT_QUIET:-120}
OTHER_MAX=${OTHER_MAX:-25}
RETRIES=${RETRIES:-2}
TABLES=${TABLES:-mix check journey}

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BENCH_MD=${BENCH_MD:-$ROOT/BENCHMARKS.md}
TOOLS_DIR=${TOOLS_DIR:-$ROOT/target/bench-tools}
STAMP=$(date -u +%Y%m%dT%H%M%SZ)
OUT_DIR=${OUT_DIR:-$ROOT/target/bench-mix/$STAMP}

BENCH_TAG=mix
# shellcheck source=bench/lib.sh
source "$ROOT/bench/lib.sh"

report() {
    OUT_DIR="$OUT_DIR" BENCH_MD="$BENCH_MD" UPDATE_MD="$UPDATE_MD" ROOT="$ROOT" \
        python3 "$ROOT/bench/mix_report.py"
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
[[ $DURATION =~ ^[1-9][0-9]*[smh]$ ]] || die 2 "DURATION must look like 10s, 2m or 1h, got '$DURATION'"
[[ $SERVER =~ ^(auto|nginx|serve)$ ]] || die 2 "SERVER must be auto, nginx or serve, got '$SERVER'"
read -r -a TABLE_LIST <<<"$TABLES"
((${#TABLE_LIST[@]})) || die 2 "TABLES is empty"
for table in "${TABLE_LIST[@]}"; do
    [[ $table =~ ^(mix|check|journey)$ ]] || die 2 "TABLES takes mix, check and journey, got '$table'"
done

# ---------------------------------------------------------------- prerequisites
missing=()
command -v taskset >/dev/null 2>&1 || missing+=(util-linux)
[[ -x /usr/bin/time ]] || missing+=(time)
command -v python3 >/dev/null 2>&1 || missing+=(python3)
NGINX=$(command -v nginx 2>/dev/null || echo /usr/sbin/nginx)
SERVER_NOTE="SERVER=$SERVER"
if [[ $SERVER == auto ]]; then
    if [[ -x $NGINX ]]; then SERVER=nginx SERVER_NOTE="nginx is installed"; else SERVER=serve SERVER_NOTE="nginx is not installed"; fi
fi
if [[ $SERVER == serve && " ${TABLE_LIST[*]} " == *" journey "* ]]; then
    # volley serve answers no JSON, ETag or Set-Cookie: nothing for a journey to capture.
    ((${#TABLE_LIST[@]} > 1)) || die 2 "the journey comparison needs nginx (SERVER=serve cannot serve its API)"
    log "leaving out the journey comparison: it needs nginx ($SERVER_NOTE)"
    for i in "${!TABLE_LIST[@]}"; do [[ ${TABLE_LIST[i]} != journey ]] || unset 'TABLE_LIST[i]'; done
    TABLE_LIST=("${TABLE_LIST[@]}")
fi
TABLES="${TABLE_LIST[*]}"
[[ $SERVER != nginx || -x $NGINX ]] || missing+=(nginx)
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

ncpu=$(nproc --all)
taskset -c "$CLIENT_CPU" true 2>/dev/null || die 2 "cannot pin to CLIENT_CPU=$CLIENT_CPU (this machine has $ncpu CPUs)"
taskset -c "$SERVER_CPU" true 2>/dev/null || die 2 "cannot pin to SERVER_CPU=$SERVER_CPU (this machine has $ncpu CPUs)"
[[ $CLIENT_CPU != "$SERVER_CPU" ]] || die 2 "CLIENT_CPU and SERVER_CPU must differ"

build_volley

# ---------------------------------------------------------------- server
TMP=$(mktemp -d -t volley-mix.XXXXXX)
# A private copy, so a rebuild of target/release/volley during the runs cannot mix two
# binaries in one comparison.
cp "$VOLLEY" "$TMP/volley"
VOLLEY_SRC=$VOLLEY
VOLLEY=$TMP/volley
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

# The 1 KiB response the check reads: 1,018 x's and the needle at the very end, so the check
# scans the whole body (volley serve's /bytes?n=1024 is all x's: the needle `x` is found at
# once there, which this script's table says).
NEEDLE_NGINX=volley
if [[ $SERVER == nginx ]]; then
    write_nginx_conf "$TMP" "$PORT"
    body=$(printf 'x%.0s' $(seq 1018))$NEEDLE_NGINX
    # Two more locations beside `return 200 '.'`: the mix's templated path and /hello, and
    # the fixed 1 KiB body.
    python3 - "$TMP/nginx.conf" "$body" <<'EOF'
import sys
path, body = sys.argv[1:]
assert len(body) == 1024
text = open(path).read()
extra = ("        location /items/ { return 200 '.'; }\n"
         "        location = /hello { return 200 'Hello, World!'; }\n"
         f"        location = /1k {{ return 200 '{body}'; }}\n")
text = text.replace("        location / { return 200 '.'; }\n", "        location / { return 200 '.'; }\n" + extra)
open(path, "w").write(text)
EOF
    # The journey's API: /login, /api/me, /api/items, /api/cart.
    journey_locations "$TMP/nginx.conf"
    SERVER_CMD=(taskset -c "$SERVER_CPU" "$NGINX" -p "$TMP/" -c "$TMP/nginx.conf" -e "$TMP/error.log" -g "daemon off;")
    KB_PATH=1k
    NEEDLE=$NEEDLE_NGINX
    SERVER_VERSION=$("$NGINX" -v 2>&1 | head -n1 | sed 's/^nginx version: //')
else
    SERVER_CMD=(taskset -c "$SERVER_CPU" "$VOLLEY" serve --port "$PORT")
    KB_PATH='bytes?n=1024'
    NEEDLE=x
    SERVER_VERSION="volley serve ($("$VOLLEY" --version))"
fi
"${SERVER_CMD[@]}" >"$TMP/server.out" 2>&1 &
SERVER_PID=$!   # taskset execs the server

ready=0
for _ in $(seq 100); do
    kill -0 "$SERVER_PID" 2>/dev/null || break
    if python3 - "$URL" "${URL}$KB_PATH" "$NEEDLE" "$SERVER" <<'EOF' 2>/dev/null; then ready=1; break; fi
import json, sys, urllib.request
root, kb, needle, server = sys.argv[1:]
with urllib.request.urlopen(root, timeout=1) as r:
    assert r.status == 200 and r.read() == b"."
with urllib.request.urlopen(kb, timeout=1) as r:
    body = r.read()
    assert r.status == 200 and len(body) == 1024 and needle.encode() in body
if server == "nginx":
    with urllib.request.urlopen(urllib.request.Request(root + "login", data=b"{}"), timeout=1) as r:
        assert r.status == 200 and "accessToken" in json.load(r) and r.headers["Set-Cookie"].startswith("sid=")
EOF
    sleep 0.1
done
if ((!ready)); then
    cat "$TMP/server.out" "$TMP/error.log" >&2 2>/dev/null || true
    die 2 "the server did not answer 200 on $URL and 1 KiB on ${URL}$KB_PATH within 10 s"
fi
log "$SERVER_VERSION (pid $SERVER_PID) on $URL, pinned to CPU $SERVER_CPU"

# ---------------------------------------------------------------- the requests file
mkdir -p "$OUT_DIR"
cat >"$OUT_DIR/mix.toml" <<'EOF'
# bench/mix.sh: three requests, 80/15/5, one of them templated.
[[request]]
name = "root"
path = "/"
weight = 80

[[request]]
name = "item"
path = "/items/{rand:1..10000}"
weight = 15

[[request]]
name = "hello"
path = "/hello"
weight = 5
EOF
# volley serve has no /items/: the templated value goes in /hello's query there (it ignores it).
[[ $SERVER == nginx ]] || sed -i 's#^path = "/items/{rand:1..10000}"#path = "/hello?item={rand:1..10000}"#' "$OUT_DIR/mix.toml"
[[ " $TABLES " != *" journey "* ]] || journey_files "$OUT_DIR"   # journey.toml, nocapture.toml
: >"$OUT_DIR/runs.tsv"   # the order things ran: seq rep cell attempts

# cell_cmd CELL BASE: the client command of one cell (unpinned) in CMD.
cell_cmd() {
    local cell=$1 base=$2 c=$CONNECTIONS
    local common=(-t 1 -c "$c" -d "$DURATION" --quiet --json "$base.json")
    case $cell in
    single) CMD=("$VOLLEY" run "$URL" "${common[@]}") ;;
    mix) CMD=("$VOLLEY" run "$URL" --requests-file "$OUT_DIR/mix.toml" "${common[@]}") ;;
    plain1k) CMD=("$VOLLEY" run "${URL}$KB_PATH" "${common[@]}") ;;
    check1k) CMD=("$VOLLEY" run "${URL}$KB_PATH" --expect-body-contains "$NEEDLE" "${common[@]}") ;;
    nocapture) CMD=("$VOLLEY" run "$URL" --requests-file "$OUT_DIR/nocapture.toml" "${common[@]}") ;;
    journey) CMD=("$VOLLEY" run "$URL" --requests-file "$OUT_DIR/journey.toml" "${common[@]}") ;;
    *) die 1 "unknown cell $cell" ;;
    esac
}
GROUP_mix=(single mix)
GROUP_check=(plain1k check1k)
GROUP_journey=(nocapture journey)

ticks_machine() { # busy and total clock ticks of all CPUs so far
    local a i total=0
    read -r -a a < <(head -n1 /proc/stat)
    for ((i = 1; i <= 8 && i < ${#a[@]}; i++)); do total=$((total + a[i])); done
    echo "$((total - a[4] - a[5])) $total"
}
ticks_server() { # utime + stime of the server and its children, in clock ticks
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
        /usr/bin/time -f '%U %S %e %M' -o "$base.time" taskset -c "$CLIENT_CPU" "${CMD[@]}" >"$base.out" 2>"$base.err" &
        CLIENT_PID=$!
        wait "$CLIENT_PID" || rc=$?
        CLIENT_PID=
        echo "$(ticks_machine) $(ticks_server)" >>"$base.ticks"
        if ((rc != 0)); then
            tail -n 20 "$base.out" "$base.err" >&2
            die 1 "$cell exited with $rc in rep $rep (output: $base.out, $base.err)"
        fi
        kill -0 "$SERVER_PID" 2>/dev/null || die 1 "the server died during the $cell run of rep $rep"
        # % of one core used by neither the client nor the server while the client ran
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

for ((rep = 1; rep <= REPS; rep++)); do
    for table in "${TABLE_LIST[@]}"; do
        declare -n group="GROUP_$table"
        n=${#group[@]}
        for ((i = 0; i < n; i++)); do   # rotate the order by one per repetition
            run_cell "${group[(i + rep - 1) % n]}" "$rep"
        done
        unset -n group
    done
done

# ---------------------------------------------------------------- metadata
short() { sed -e "s#$OUT_DIR/##g" -e "s#$ROOT/##g" -e "s#$TMP#\$TMP#g"; }
for table in "${TABLE_LIST[@]}"; do
    declare -n group="GROUP_$table"
    for cell in "${group[@]}"; do
        cell_cmd "$cell" "$cell-repN"
        printf '%s\t%s\n' "$cell" "$(quote taskset -c "$CLIENT_CPU" "${CMD[@]}" | short)"
    done
    unset -n group
done >"$OUT_DIR/commands.tsv"
[[ $SERVER != nginx ]] || cp "$TMP/nginx.conf" "$OUT_DIR/nginx.conf"
CMD_SERVER="$(quote "${SERVER_CMD[@]}" | short)"
[[ $SERVER != nginx ]] || CMD_SERVER+="   # \$TMP/nginx.conf: $(printf '%s' "$OUT_DIR/nginx.conf" | sed "s#$ROOT/##")"
CMD_VOLLEY_NOTE="\$TMP/volley is a copy of $(printf '%s' "$VOLLEY_SRC" | short)"
CPU_MODEL=$(grep -m1 '^model name' /proc/cpuinfo | sed 's/^[^:]*: *//' || true)
KERNEL=$(uname -sr)
NCPU=$ncpu
DATE=$(date -u +%Y-%m-%dT%H:%M:%SZ)
export CMD_SERVER CMD_VOLLEY_NOTE CPU_MODEL KERNEL NCPU DATE VOLLEY_VERSION SERVER SERVER_VERSION \
    REPS DURATION CONNECTIONS CLIENT_CPU SERVER_CPU BUSY_MAX OTHER_MAX NEEDLE KB_PATH WAIT_QUIET RETRIES SERVER_NOTE TABLES
python3 - "$OUT_DIR/meta.json" <<'EOF'
import json, os, sys
keys = ("CMD_SERVER CMD_VOLLEY_NOTE CPU_MODEL KERNEL NCPU DATE VOLLEY_VERSION SERVER SERVER_VERSION "
        "REPS DURATION CONNECTIONS CLIENT_CPU SERVER_CPU BUSY_MAX OTHER_MAX NEEDLE KB_PATH WAIT_QUIET RETRIES SERVER_NOTE TABLES").split()
json.dump({k: os.environ[k] for k in keys}, open(sys.argv[1], "w"), indent=2)
EOF
report
