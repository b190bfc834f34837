#!/usr/bin/env bash
# bench/tls.sh: volley over HTTPS against wrk (OpenSSL) on one pinned nginx worker (loopback).
#
# One session, one nginx (one worker, `return 200 '.'` as in bench/compare.sh, TLSv1.2 and
# TLSv1.3, a shared session cache and session tickets, an ECDSA P-256 self-signed certificate
# this script makes with openssl) pinned to SERVER_CPU, every client pinned to CLIENT_CPU, and
# these tables, each rewritten between its own markers in BENCHMARKS.md:
#
#   tls-keepalive  closed loop, 50 keep-alive TLS connections, GET:
#                  wrk -t1 -c50 · volley -k -t 1 -c 50 · volley --cacert CERT -t 1 -c 50
#   tls-close      a new TLS connection (handshake) per request:
#                  wrk -t1 -c50 -H "Connection: close" · volley -k --no-keepalive (resumed) ·
#                  volley -k --no-keepalive --no-tls-resume (full) · volley --no-keepalive over
#                  plain HTTP (the floor: what the TCP connection and the request cost without TLS);
#                  nginx logs $ssl_session_reused for these runs, so every run shows how many of
#                  its handshakes were resumptions, for wrk as for volley
#   tls-correct    nginx's access-log lines against volley's own request counts over TLS
#                  (keep-alive and a new connection per request, no warm-up), and an open-loop
#                  run at STALL_RATE against the same nginx stalled twice for STALL_MS (its worker
#                  gets SIGSTOP, then SIGCONT), over HTTPS and over plain HTTP, interleaved:
#                  the corrected percentiles must match
#   tls-memory     client RSS with MEM_CONNS keep-alive connections (each sending one GET per
#                  THINK_TIME), over HTTPS and over plain HTTP: the cost of one TLS connection
#
# Runs are interleaved: every repetition runs every table, and within a table the tools' order
# rotates from one repetition to the next. Figures are medians of REPS repetitions; every raw run
# is listed. Client CPU is user + sys from /usr/bin/time, the same way for every tool.
#
# Usage:  bench/tls.sh                          # 3 reps x 10 s: about 10 minutes on an idle machine
#         REPS=1 DURATION=3s bench/tls.sh       # quick run
#         TABLES="tls-keepalive tls-close" bench/tls.sh
#
# Environment (all optional):
#   REPS=3  DURATION=10s  CONNECTIONS=50  CLIENT_CPU=0  SERVER_CPU=1
#   TABLES="tls-keepalive tls-close tls-correct tls-memory"   which tables to measure and rewrite
#   COUNT_DURATION=5s   length of the access-log count runs (tls-correct)
#   STALL_RATE=1000  STALL_MS=500  STALL_CONNECTIONS=20   open-loop stall runs (10 s, stalls at
#                       2 s and 7 s, as tests/quick/open_loop.rs)
#   MEM_CONNS="1000 10000"  THINK_TIME=1s  MEM_DURATION=20s   memory runs
#   MEM_REPS=1          how many of the REPS repetitions include the memory runs (RSS is not
#                       a timing, and 10,000 handshakes take a while)
#   PORT=<free port picked automatically>  (three listeners: PORT, PORT+1, PORT+2)
#   VOLLEY=<path>  VOLLEY_REV=<rev>   as in bench/compare.sh
#   OUT_DIR=<dir>       raw outputs (default target/bench-tls/<UTC time>)
#   BENCH_MD=<file>     Markdown file whose sections are rewritten (default BENCHMARKS.md)
#   UPDATE_MD=0         print the results, leave BENCH_MD alone
#   REPORT_FROM=<dir>   re-render the raw outputs of an earlier run, measure nothing
#   BUSY_MAX=20  WAIT_QUIET=120  OTHER_MAX=25  RETRIES=2   as in bench/compare.sh
#
# Exit codes: 0 ok, 1 a run failed or its output could not be parsed,
# 2 missing prerequisites / bad settings.
set -euo pipefail

REPS=${REPS:-3}
DURATION=${DURATION:-10s}
CONNECTIONS=${CONNECTIONS:-50}
CLIENT_CPU=${CLIENT_CPU:-0}
SERVER_CPU=${SERVER_CPU:-1}
TABLES=${TABLES:-tls-keepalive tls-close tls-correct tls-memory}
COUNT_DURATION=${COUNT_DURATION:-5s}
STALL_RATE=${STALL_RATE:-1000}
STALL_MS=${STALL_MS:-500}
STALL_CONNECTIONS=${STALL_CONNECTIONS:-20}
MEM_CONNS=${MEM_CONNS:-1000 10000}
THINK_TIME=${THINK_TIME:-1s}
MEM_DURATION=${MEM_DURATION:-20s}
MEM_REPS=${MEM_REPS:-1}
UPDATE_MD=${UPDATE_MD:-1}
BUSY_MAX=${BUSY_MAX:-20}
WAIT_QUIET=${WAIT_QUIET:-120}
OTHER_MAX=${OTHER_MAX:-25}
RETRIES=${RETRIES:-2}

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BENCH_MD=${BENCH_MD:-$ROOT/BENCHMARKS.md}
TOOLS_DIR=${TOOLS_DIR:-$ROOT/target/bench-tools}
STAMP=$(date -u +%Y%m%dT%H%M%SZ)
OUT_DIR=${OUT_DIR:-$ROOT/target/bench-tls/$STAMP}

BENCH_TAG=tls
# shellcheck source=bench/lib.sh
source "$ROOT/bench/lib.sh"

report() {
    OUT_DIR="$OUT_DIR" BENCH_MD="$BENCH_MD" UPDATE_MD="$UPDATE_MD" ROOT="$ROOT" \
        python3 "$ROOT/bench/tls_report.py"
}

if [[ -n ${REPORT_FROM:-} ]]; then
    [[ -f $REPORT_FROM/meta.json ]] || die 2 "REPORT_FROM=$REPORT_FROM has no meta.json"
    OUT_DIR=$(cd "$REPORT_FROM" && pwd)
    report
    exit
fi

[[ $REPS =~ ^[1-9][0-9]*$ ]] || die 2 "REPS must be a positive integer, got '$REPS'"
for v in CONNECTIONS STALL_RATE STALL_MS STALL_CONNECTIONS MEM_REPS; do [[ ${!v} =~ ^[1-9][0-9]*$ ]] || die 2 "$v must be a positive integer, got '${!v}'"; done
for v in BUSY_MAX WAIT_QUIET OTHER_MAX RETRIES; do [[ ${!v} =~ ^[0-9]+$ ]] || die 2 "$v must be a non-negative integer"; done
for n in $MEM_CONNS; do [[ $n =~ ^[1-9][0-9]*$ ]] || die 2 "MEM_CONNS must be positive integers, got '$MEM_CONNS'"; done
for v in DURATION COUNT_DURATION MEM_DURATION; do
    [[ ${!v} =~ ^[1-9][0-9]*[smh]$ ]] || die 2 "$v must look like 10s, 2m or 1h, got '${!v}'"
done
for t in $TABLES; do
    [[ $t =~ ^tls-(keepalive|close|correct|memory)$ ]] || die 2 "unknown table '$t' in TABLES (tls-keepalive tls-close tls-correct tls-memory)"
done
want() { [[ " $TABLES " == *" $1 "* ]]; }

# ---------------------------------------------------------------- prerequisites
for c in wrk openssl taskset python3 /usr/bin/time; do
    command -v "$c" >/dev/null 2>&1 || die 2 "$c not found (bench/compare.sh installs wrk, nginx and time with apt)"
done
NGINX=$(command -v nginx 2>/dev/null || echo /usr/sbin/nginx)
[[ -x $NGINX ]] || die 2 "nginx not found"
"$NGINX" -V 2>&1 | grep -q -- --with-http_ssl_module || die 2 "$NGINX was built without http_ssl_module"
ncpu=$(nproc --all)
taskset -c "$CLIENT_CPU" true 2>/dev/null || die 2 "cannot pin to CLIENT_CPU=$CLIENT_CPU (this machine has $ncpu CPUs)"
taskset -c "$SERVER_CPU" true 2>/dev/null || die 2 "cannot pin to SERVER_CPU=$SERVER_CPU (this machine has $ncpu CPUs)"
[[ $CLIENT_CPU != "$SERVER_CPU" ]] || die 2 "CLIENT_CPU and SERVER_CPU must differ"

build_volley
WRK_VERSION=$( (wrk -v 2>&1 || true) | head -n1 | sed 's/ *Copyright.*//')
NGINX_VERSION=$("$NGINX" -v 2>&1 | head -n1 | sed 's/^nginx version: //')
OPENSSL_VERSION=$(openssl version 2>&1 | head -n1)
NGINX_OPENSSL=$("$NGINX" -V 2>&1 | sed -n 's/^built with //p' | head -n1)
WRK_OPENSSL=$(ldd "$(command -v wrk)" 2>/dev/null | awk '/libssl/ { print $1 }' | head -n1)
RUSTLS_VERSION=$(awk '/^name = "rustls"$/ { getline; gsub(/"/, "", $3); print $3; exit }' "$ROOT/Cargo.lock")
RING_VERSION=$(awk '/^name = "ring"$/ { getline; gsub(/"/, "", $3); print $3; exit }' "$ROOT/Cargo.lock")

# ---------------------------------------------------------------- certificate and nginx
TMP=$(mktemp -d -t volley-tls.XXXXXX)
cp "$VOLLEY" "$TMP/volley"
VOLLEY_SRC=$VOLLEY
VOLLEY=$TMP/volley
NGINX_PID=
CLIENT_PID=
STALL_PID=
worker_pids() { pgrep -P "$NGINX_PID" 2>/dev/null || true; }
cleanup() {
    local rc=$? p
    [[ -z $STALL_PID ]] || { kill -TERM "$STALL_PID" 2>/dev/null || true; wait "$STALL_PID" 2>/dev/null || true; }
    if [[ -n $NGINX_PID ]]; then for p in $(worker_pids); do kill -CONT "$p" 2>/dev/null || true; done; fi
    if [[ -n $CLIENT_PID ]]; then
        for p in $(pgrep -P "$CLIENT_PID" || true) "$CLIENT_PID"; do kill -TERM "$p" 2>/dev/null || true; done
        wait "$CLIENT_PID" 2>/dev/null || true
    fi
    stop_pid "$NGINX_PID"
    rm -rf "$TMP"
    exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# ECDSA P-256, self-signed, an end-entity certificate (CA:FALSE) for localhost and 127.0.0.1,
# as the suites' harness makes them; volley --cacert trusts it as its own anchor.
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 2 \
    -keyout "$TMP/key.pem" -out "$TMP/cert.pem" -subj "/CN=localhost" \
    -addext "basicConstraints=critical,CA:FALSE" \
    -addext "subjectAltName=DNS:localhost,IP:127.0.0.1" >"$TMP/openssl.out" 2>&1 \
    || { cat "$TMP/openssl.out" >&2; die 2 "openssl could not make the certificate"; }
CERT_CMD='openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 2 -keyout key.pem -out cert.pem -subj /CN=localhost -addext basicConstraints=critical,CA:FALSE -addext subjectAltName=DNS:localhost,IP:127.0.0.1'

port_free() { python3 -c 'import socket, sys; socket.socket().bind(("127.0.0.1", int(sys.argv[1])))' "$1" 2>/dev/null; }
if [[ -z ${PORT:-} ]]; then
    for _ in $(seq 20); do
        PORT=$(free_port)
        port_free $((PORT + 1)) && port_free $((PORT + 2)) && break
    done
fi
for p in "$PORT" $((PORT + 1)) $((PORT + 2)); do port_free "$p" || die 2 "127.0.0.1:$p is already in use; choose another PORT"; done
TLS_PORT=$PORT LOG_PORT=$((PORT + 1)) PLAIN_PORT=$((PORT + 2))
URL_TLS="https://127.0.0.1:$TLS_PORT/"
URL_LOG="https://127.0.0.1:$LOG_PORT/"
URL_PLAIN="http://127.0.0.1:$PLAIN_PORT/"
ACCESS_LOG=$TMP/access.log

# The reference settings of bench/lib.sh's write_nginx_conf (one worker, worker_connections
# 16384, worker_rlimit_nofile 20000, keepalive_requests 1000000, `return 200 '.'`), three
# listeners on the same worker: TLS without an access log (the timed keep-alive runs), TLS
# with an unbuffered access log that records $ssl_session_reused (the handshake runs and the
# counts), and plain HTTP (the floor, the cleartext side of the stall and memory runs).
# backlog=4096: 10,000 connections arriving at once must not overflow the accept queue.
cat >"$TMP/nginx.conf" <<CONF
worker_processes 1;
worker_rlimit_nofile 20000;
pid $TMP/nginx.pid;
error_log $TMP/error.log;
events { worker_connections 16384; }
http {
    access_log off;
    keepalive_requests 1000000;
    ssl_certificate $TMP/cert.pem;
    ssl_certificate_key $TMP/key.pem;
    ssl_protocols TLSv1.2 TLSv1.3;
    ssl_session_cache shared:SSL:10m;
    ssl_session_tickets on;
    log_format tls '\$ssl_protocol \$ssl_cipher \$ssl_session_reused \$status \$connection \$connection_requests';
    server {
        listen 127.0.0.1:$TLS_PORT ssl backlog=4096;
        location / { return 200 '.'; }
    }
    server {
        listen 127.0.0.1:$LOG_PORT ssl backlog=4096;
        access_log $ACCESS_LOG tls;
        location / { return 200 '.'; }
    }
    server {
        listen 127.0.0.1:$PLAIN_PORT backlog=4096;
        location / { return 200 '.'; }
    }
}
CONF
NGINX_CMD=(taskset -c "$SERVER_CPU" "$NGINX" -p "$TMP/" -c "$TMP/nginx.conf" -e "$TMP/error.log" -g "daemon off;")
"${NGINX_CMD[@]}" >"$TMP/nginx.out" 2>&1 &
NGINX_PID=$!

ready=0
for _ in $(seq 100); do
    kill -0 "$NGINX_PID" 2>/dev/null || break
    if python3 - "$URL_TLS" "$URL_PLAIN" "$TMP/cert.pem" <<'EOF' 2>/dev/null; then ready=1; break; fi
import ssl, sys, urllib.request
ctx = ssl.create_default_context(cafile=sys.argv[3])
for url in sys.argv[1:3]:
    with urllib.request.urlopen(url, timeout=1, context=ctx if url.startswith("https") else None) as r:
        if not (r.status == 200 and r.read() == b"."):
            sys.exit(1)
EOF
    sleep 0.1
done
if ((!ready)); then
    cat "$TMP/nginx.out" "$TMP/error.log" >&2 2>/dev/null || true
    die 2 "nginx did not answer 200 '.' on $URL_TLS and $URL_PLAIN within 10 s"
fi
log "$NGINX_VERSION (pid $NGINX_PID) on $URL_TLS (no log), $URL_LOG (access log), $URL_PLAIN; CPU $SERVER_CPU"

mkdir -p "$OUT_DIR"
cp "$TMP/nginx.conf" "$OUT_DIR/nginx.conf"
cp "$TMP/cert.pem" "$OUT_DIR/cert.pem"
: >"$OUT_DIR/runs.tsv"

# ---------------------------------------------------------------- cells
# cell_cmd CELL BASE: the client command of one cell (unpinned) in CMD.
cell_cmd() {
    local cell=$1 base=$2 c=$CONNECTIONS d=$DURATION
    local v=("$VOLLEY" run --quiet --json "$base.json")
    case $cell in
    ka-wrk) CMD=(wrk -t1 "-c$c" "-d$d" --latency "$URL_TLS") ;;
    ka-volley) CMD=("${v[@]}" "$URL_TLS" -k -t 1 -c "$c" -d "$d") ;;
    ka-verify) CMD=("${v[@]}" "$URL_TLS" --cacert "$TMP/cert.pem" -t 1 -c "$c" -d "$d") ;;
    close-wrk) CMD=(wrk -t1 "-c$c" "-d$d" --latency -H "Connection: close" "$URL_LOG") ;;
    close-volley) CMD=("${v[@]}" "$URL_LOG" -k --no-keepalive -t 1 -c "$c" -d "$d") ;;
    close-full) CMD=("${v[@]}" "$URL_LOG" -k --no-keepalive --no-tls-resume -t 1 -c "$c" -d "$d") ;;
    close-plain) CMD=("${v[@]}" "$URL_PLAIN" --no-keepalive -t 1 -c "$c" -d "$d") ;;
    count-ka) CMD=("${v[@]}" "$URL_LOG" -k -t 1 -c "$c" -d "$COUNT_DURATION") ;;
    count-close) CMD=("${v[@]}" "$URL_LOG" -k --no-keepalive -t 1 -c "$c" -d "$COUNT_DURATION") ;;
    stall-https) CMD=("${v[@]}" "$URL_TLS" -k -R "$STALL_RATE" -c "$STALL_CONNECTIONS" -t 1 -d 10s) ;;
    stall-http) CMD=("${v[@]}" "$URL_PLAIN" -R "$STALL_RATE" -c "$STALL_CONNECTIONS" -t 1 -d 10s) ;;
    mem-https-*) CMD=("${v[@]}" "$URL_TLS" -k -c "${cell##*-}" -t 1 -d "$MEM_DURATION" --think-time "$THINK_TIME" --timeout 10s) ;;
    mem-http-*) CMD=("${v[@]}" "$URL_PLAIN" -c "${cell##*-}" -t 1 -d "$MEM_DURATION" --think-time "$THINK_TIME" --timeout 10s) ;;
    *) die 1 "unknown cell $cell" ;;
    esac
}

ticks_machine() {
    local a i total=0
    read -r -a a < <(head -n1 /proc/stat)
    for ((i = 1; i <= 8 && i < ${#a[@]}; i++)); do total=$((total + a[i])); done
    echo "$((total - a[4] - a[5])) $total"
}
ticks_nginx() {
    local p sum=0 f
    for p in "$NGINX_PID" $(worker_pids); do
        f=$(cat "/proc/$p/stat" 2>/dev/null) || continue
        f=${f##*) }
        read -r -a f <<<"$f"
        sum=$((sum + f[11] + f[12]))
    done
    echo "$sum"
}
log_lines() { if [[ -f $ACCESS_LOG ]]; then wc -l <"$ACCESS_LOG"; else echo 0; fi; }

# The nginx worker stops for STALL_MS at 2 s and again at 7 s after the client starts.
stall_server() {
    local w s
    s=$(python3 -c "print($STALL_MS / 1000)")
    w=$(worker_pids)
    sleep 2
    kill -STOP $w; sleep "$s"; kill -CONT $w
    sleep "$(python3 -c "print(5 - $s)")"
    kill -STOP $w; sleep "$s"; kill -CONT $w
}

SEQ=0
run_cell() { # cell rep
    local cell=$1 rep=$2 base="$OUT_DIR/$1-rep$2" rc attempt other
    cell_cmd "$cell" "$base"
    for ((attempt = 0; ; attempt++)); do
        wait_quiet >"$base.busy"
        log "rep $rep/$REPS: $cell"
        rc=0
        log_lines >"$base.log0"
        echo "$(ticks_machine) $(ticks_nginx)" >"$base.ticks"
        /usr/bin/time -f '%U %S %e %M' -o "$base.time" taskset -c "$CLIENT_CPU" "${CMD[@]}" >"$base.out" 2>"$base.err" &
        CLIENT_PID=$!
        if [[ $cell == stall-* ]]; then stall_server & STALL_PID=$!; fi
        wait "$CLIENT_PID" || rc=$?
        CLIENT_PID=
        if [[ -n $STALL_PID ]]; then wait "$STALL_PID" || true; STALL_PID=; fi
        echo "$(ticks_machine) $(ticks_nginx)" >>"$base.ticks"
        sleep 0.2   # nginx logs a request after its response is out
        log_lines >"$base.log1"
        if [[ $cell == close-* || $cell == count-* ]]; then
            tail -n +"$(($(cat "$base.log0") + 1))" "$ACCESS_LOG" | head -n "$(($(cat "$base.log1") - $(cat "$base.log0")))" \
                | awk '{ n[$1 " " $2 " " $3 " " $4]++ } END { for (k in n) print n[k], k }' >"$base.access"
        fi
        if ((rc != 0)); then
            tail -n 20 "$base.out" "$base.err" >&2
            die 1 "$cell exited with $rc in rep $rep (output: $base.out, $base.err)"
        fi
        kill -0 "$NGINX_PID" 2>/dev/null || die 1 "nginx died during the $cell run of rep $rep"
        other=$(awk -v hz="$(getconf CLK_TCK)" -v n="$ncpu" '
            NR == 1 { b0 = $1; t0 = $2; n0 = $3 } NR == 2 { b1 = $1; t1 = $2; n1 = $3 }
            FILENAME ~ /time$/ { c = $1 + $2 }
            END { wall = (t1 - t0) / hz / n; o = ((b1 - b0) - (n1 - n0)) / hz - c; printf "%d", (o > 0 ? 100 * o / wall : 0) }
        ' "$base.ticks" "$base.time")
        # the count runs are checks, not timings: never repeated
        [[ $cell != count-* ]] || break
        ((other > OTHER_MAX && attempt < RETRIES)) || break
        log "other work used ${other}% of a core during this run; repeating it ($((attempt + 1))/$RETRIES)"
    done
    SEQ=$((SEQ + 1))
    printf '%s\t%s\t%s\t%s\n' "$SEQ" "$rep" "$cell" "$((attempt + 1))" >>"$OUT_DIR/runs.tsv"
}

GROUP_keepalive=(ka-wrk ka-volley ka-verify)
GROUP_close=(close-wrk close-volley close-full close-plain)
GROUP_correct=(stall-https stall-http)
GROUP_memory=()
for n in $MEM_CONNS; do GROUP_memory+=("mem-https-$n" "mem-http-$n"); done

for ((rep = 1; rep <= REPS; rep++)); do
    for table in keepalive close correct memory; do
        want "tls-$table" || continue
        [[ $table != memory ]] || ((rep <= MEM_REPS)) || continue
        declare -n group="GROUP_$table"
        n=${#group[@]}
        for ((i = 0; i < n; i++)); do run_cell "${group[(i + rep - 1) % n]}" "$rep"; done
        unset -n group
        # the access-log counts: once, in the first repetition
        if [[ $table == correct && $rep == 1 ]]; then run_cell count-ka 1; run_cell count-close 1; fi
    done
done

# ---------------------------------------------------------------- metadata
short() { sed -e "s#$OUT_DIR/##g" -e "s#$ROOT/##g" -e "s#$TMP#\$TMP#g"; }
for cell in "${GROUP_keepalive[@]}" "${GROUP_close[@]}" "${GROUP_correct[@]}" count-ka count-close "${GROUP_memory[@]}"; do
    cell_cmd "$cell" "$cell-repN"
    printf '%s\t%s\n' "$cell" "$(quote taskset -c "$CLIENT_CPU" "${CMD[@]}" | short)"
done >"$OUT_DIR/commands.tsv"

CMD_NGINX="$(quote "${NGINX_CMD[@]}" | short)   # \$TMP/nginx.conf: $(printf '%s' "$OUT_DIR/nginx.conf" | sed "s#$ROOT/##")"
CMD_VOLLEY_NOTE="\$TMP/volley is a copy of $(printf '%s' "$VOLLEY_SRC" | short); \$TMP/cert.pem, key.pem: $CERT_CMD"
CPU_MODEL=$(grep -m1 '^model name' /proc/cpuinfo | sed 's/^[^:]*: *//' || true)
KERNEL=$(uname -sr)
NCPU=$ncpu
DATE=$(date -u +%Y-%m-%dT%H:%M:%SZ)
export CMD_NGINX CMD_VOLLEY_NOTE CPU_MODEL KERNEL NCPU DATE WRK_VERSION NGINX_VERSION VOLLEY_VERSION \
    OPENSSL_VERSION NGINX_OPENSSL WRK_OPENSSL RUSTLS_VERSION RING_VERSION \
    REPS DURATION CONNECTIONS CLIENT_CPU SERVER_CPU BUSY_MAX OTHER_MAX TABLES COUNT_DURATION \
    STALL_RATE STALL_MS STALL_CONNECTIONS MEM_CONNS THINK_TIME MEM_DURATION MEM_REPS
python3 - "$OUT_DIR/meta.json" <<'EOF'
import json, os, sys
keys = ("CMD_NGINX CMD_VOLLEY_NOTE CPU_MODEL KERNEL NCPU DATE WRK_VERSION NGINX_VERSION VOLLEY_VERSION "
        "OPENSSL_VERSION NGINX_OPENSSL WRK_OPENSSL RUSTLS_VERSION RING_VERSION "
        "REPS DURATION CONNECTIONS CLIENT_CPU SERVER_CPU BUSY_MAX OTHER_MAX TABLES COUNT_DURATION "
        "STALL_RATE STALL_MS STALL_CONNECTIONS MEM_CONNS THINK_TIME MEM_DURATION MEM_REPS").split()
json.dump({k: os.environ[k] for k in keys}, open(sys.argv[1], "w"), indent=2)
EOF
report
