#!/usr/bin/env bash
# bench/h2.sh: volley over HTTP/2 against h2load and oha, on one pinned nginx worker and one
# pinned h2o thread (loopback), over TLS (h2 by ALPN) and cleartext (h2c, prior knowledge).
#
# One session, two servers pinned to SERVER_CPU, every client pinned to CLIENT_CPU:
#   nginx  one worker, `return 200 '.'`, the settings of bench/lib.sh's write_nginx_conf
#          (worker_connections 16384, keepalive_requests 1000000, which also bounds requests
#          per HTTP/2 connection since nginx 1.19.7), `listen ... ssl http2` and `listen ... http2`
#   h2o    num-threads 1, a 1-byte file (`.`) served by file.dir (h2o has no `return`)
# Both use the ECDSA P-256 self-signed certificate of bench/tls.sh (made here with openssl).
# These tables are rewritten between their own markers in BENCH_MD (BENCHMARKS.md):
#
#   h2-throughput  closed loop, CONNECTIONS=4 connections x STREAMS=32 concurrent streams, GET,
#                  one client thread, DURATION per run, per server x protocol (tls, h2c):
#                  volley --http2 -k / --h2c -t 1 -c 4 --streams 32 · h2load -t 1 -c 4 -m 32 ·
#                  oha --http2 -c 4 -p 32 --worker-threads 1; requests per client CPU-second
#                  (user + sys from /usr/bin/time) and the ratios volley/h2load, volley/oha
#   h2-correct     the server's access log against volley's own counts (each server x
#                  protocol, COUNT_DURATION, no warm-up); volley against an nginx listener with
#                  http2_max_concurrent_streams MAXSTREAMS (what volley's JSON reports); and an
#                  open-loop run at STALL_RATE against nginx stalled twice for STALL_MS (its
#                  worker gets SIGSTOP, then SIGCONT) over HTTP/1.1, over h2c with one stream per
#                  connection and over h2c multiplexed (4 x 32), interleaved: the corrected
#                  percentiles must match
#   h2-memory      client RSS with MEM_CONNS h2c connections x MEM_STREAMS streams against nginx
#                  (closed loop, MEM_DURATION): volley, and h2load for reference
#
# Runs are interleaved as in bench/tls.sh: every repetition runs every table, and within a
# group the tools' order rotates from one repetition to the next. Figures are medians of REPS
# repetitions; every raw run is listed. Not part of CI.
#
# Usage:  bench/h2.sh                              # 3 reps x 10 s: about 11 minutes on an idle machine
#         REPS=1 DURATION=3s bench/h2.sh           # quick run
#         TOOLS="h2load oha" bench/h2.sh           # the peers only (volley's tables are skipped)
#
# Environment (all optional):
#   REPS=3  DURATION=10s  CONNECTIONS=4  STREAMS=32  CLIENT_CPU=0  SERVER_CPU=1
#   SERVERS="nginx h2o"  PROTOS="tls h2c"  TOOLS="volley h2load oha"
#   TABLES="h2-throughput h2-correct h2-memory"
#   COUNT_DURATION=5s  MAXSTREAMS=8
#   STALL_RATE=1000  STALL_MS=500  STALL_CONNECTIONS=20   (10 s runs, stalls at 2 s and 7 s)
#   MEM_CONNS=1000  MEM_STREAMS=32  MEM_DURATION=5s  MEM_REPS=1
#   VOLLEY=<path>  VOLLEY_REV=<rev>  OHA=<path>  TOOLS_DIR=<dir>   as in bench/compare.sh
#   OUT_DIR=<dir>       raw outputs (default $CARGO_TARGET_DIR or target, /bench-h2/<UTC time>)
#   BENCH_MD=<file>     Markdown file whose sections are rewritten (default BENCHMARKS.md)
#   UPDATE_MD=0         print the results, leave BENCH_MD alone
#   REPORT_FROM=<dir>   re-render the raw outputs of an earlier run, measure nothing
#   BUSY_MAX=20  WAIT_QUIET=120  OTHER_MAX=25  RETRIES=2   as in bench/compare.sh
#
# Exit codes: 0 ok, 1 a run failed or its output could not be parsed (volley not speaking
# HTTP/2 is one), 2 missing prerequisites / bad settings.
set -euo pipefail

REPS=${REPS:-3}
DURATION=${DURATION:-10s}
CONNECTIONS=${CONNECTIONS:-4}
STREAMS=${STREAMS:-32}
CLIENT_CPU=${CLIENT_CPU:-0}
SERVER_CPU=${SERVER_CPU:-1}
SERVERS=${SERVERS:-nginx h2o}
PROTOS=${PROTOS:-tls h2c}
TOOLS=${TOOLS:-volley h2load oha}
TABLES=${TABLES:-h2-throughput h2-correct h2-memory}
COUNT_DURATION=${COUNT_DURATION:-5s}
MAXSTREAMS=${MAXSTREAMS:-8}
STALL_RATE=${STALL_RATE:-1000}
STALL_MS=${STALL_MS:-500}
STALL_CONNECTIONS=${STALL_CONNECTIONS:-20}
MEM_CONNS=${MEM_CONNS:-1000}
MEM_STREAMS=${MEM_STREAMS:-32}
MEM_DURATION=${MEM_DURATION:-5s}
MEM_REPS=${MEM_REPS:-1}
UPDATE_MD=${UPDATE_MD:-1}
BUSY_MAX=${BUSY_MAX:-20}
WAIT_QUIET=${WAIT_QUIET:-120}
OTHER_MAX=${OTHER_MAX:-25}
RETRIES=${RETRIES:-2}

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
TARGET_DIR=${CARGO_TARGET_DIR:-$ROOT/target}
BENCH_MD=${BENCH_MD:-$ROOT/BENCHMARKS.md}
TOOLS_DIR=${TOOLS_DIR:-$TARGET_DIR/bench-tools}
STAMP=$(date -u +%Y%m%dT%H%M%SZ)
OUT_DIR=${OUT_DIR:-$TARGET_DIR/bench-h2/$STAMP}

BENCH_TAG=h2
# shellcheck source=bench/lib.sh
source "$ROOT/bench/lib.sh"

report() {
    OUT_DIR="$OUT_DIR" BENCH_MD="$BENCH_MD" UPDATE_MD="$UPDATE_MD" ROOT="$ROOT" \
        python3 "$ROOT/bench/h2_report.py"
}

if [[ -n ${REPORT_FROM:-} ]]; then
    [[ -f $REPORT_FROM/meta.json ]] || die 2 "REPORT_FROM=$REPORT_FROM has no meta.json"
    OUT_DIR=$(cd "$REPORT_FROM" && pwd)
    report
    exit
fi

[[ $REPS =~ ^[1-9][0-9]*$ ]] || die 2 "REPS must be a positive integer, got '$REPS'"
for v in CONNECTIONS STREAMS MAXSTREAMS STALL_RATE STALL_MS STALL_CONNECTIONS MEM_STREAMS MEM_REPS; do
    [[ ${!v} =~ ^[1-9][0-9]*$ ]] || die 2 "$v must be a positive integer, got '${!v}'"
done
for v in BUSY_MAX WAIT_QUIET OTHER_MAX RETRIES; do [[ ${!v} =~ ^[0-9]+$ ]] || die 2 "$v must be a non-negative integer"; done
for n in $MEM_CONNS; do [[ $n =~ ^[1-9][0-9]*$ ]] || die 2 "MEM_CONNS must be positive integers, got '$MEM_CONNS'"; done
for v in DURATION COUNT_DURATION MEM_DURATION; do
    [[ ${!v} =~ ^[1-9][0-9]*[smh]$ ]] || die 2 "$v must look like 10s, 2m or 1h, got '${!v}'"
done
to_seconds() { local n=${1%?}; case ${1: -1} in s) echo "$n" ;; m) echo $((n * 60)) ;; h) echo $((n * 3600)) ;; esac; }
for t in $TABLES; do
    [[ $t =~ ^h2-(throughput|correct|memory)$ ]] || die 2 "unknown table '$t' in TABLES (h2-throughput h2-correct h2-memory)"
done
for s in $SERVERS; do [[ $s =~ ^(nginx|h2o)$ ]] || die 2 "unknown server '$s' in SERVERS (nginx h2o)"; done
for p in $PROTOS; do [[ $p =~ ^(tls|h2c)$ ]] || die 2 "unknown protocol '$p' in PROTOS (tls h2c)"; done
for t in $TOOLS; do [[ $t =~ ^(volley|h2load|oha)$ ]] || die 2 "unknown tool '$t' in TOOLS (volley h2load oha)"; done
want() { [[ " $TABLES " == *" $1 "* ]]; }
has_tool() { [[ " $TOOLS " == *" $1 "* ]]; }
has_server() { [[ " $SERVERS " == *" $1 "* ]]; }

# ---------------------------------------------------------------- prerequisites
# Debian packages: command -> package. h2o is Debian's (2.2.x); its service is not started
# (policy-rc.d or no init), we run our own instance.
declare -A PKG=([h2load]=nghttp2-client [h2o]=h2o [openssl]=openssl [taskset]=util-linux [python3]=python3 [/usr/bin/time]=time)
missing=()
for c in "${!PKG[@]}"; do
    [[ $c == h2o ]] && ! has_server h2o && continue
    command -v "$c" >/dev/null 2>&1 || missing+=("${PKG[$c]}")
done
command -v nginx >/dev/null 2>&1 || [[ -x /usr/sbin/nginx ]] || missing+=(nginx)
if ((${#missing[@]})); then
    [[ $(id -u) -eq 0 ]] || die 2 "missing ${missing[*]}; run as root to install them, or install them yourself"
    command -v apt-get >/dev/null 2>&1 || die 2 "missing ${missing[*]} and apt-get is not available"
    log "installing: ${missing[*]}"
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq || die 2 "apt-get update failed"
    apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null || die 2 "apt-get install ${missing[*]} failed"
fi
NGINX=$(command -v nginx 2>/dev/null || echo /usr/sbin/nginx)
[[ -x $NGINX ]] || die 2 "nginx not found after installation"
"$NGINX" -V 2>&1 | grep -q -- --with-http_v2_module || die 2 "$NGINX was built without http_v2_module"
"$NGINX" -V 2>&1 | grep -q -- --with-http_ssl_module || die 2 "$NGINX was built without http_ssl_module"
H2O=
if has_server h2o; then H2O=$(command -v h2o) || die 2 "h2o not found after installation"; fi

# oha from crates.io, built once into TOOLS_DIR (a few minutes on 2 cores), as bench/compare.sh.
if has_tool oha; then
    if [[ -n ${OHA:-} ]]; then
        [[ -x $OHA ]] || die 2 "OHA=$OHA is not executable"
    elif [[ -x $TOOLS_DIR/bin/oha ]]; then
        OHA=$TOOLS_DIR/bin/oha
    else
        command -v cargo >/dev/null 2>&1 || die 2 "oha is missing and cargo is not found (or set OHA=, or TOOLS without oha)"
        log "cargo install oha --locked --root $TOOLS_DIR (once; a few minutes)"
        mkdir -p "$TOOLS_DIR"
        cargo install oha --locked --root "$TOOLS_DIR" >"$TOOLS_DIR/oha-install.log" 2>&1 \
            || die 2 "cargo install oha --locked failed; see $TOOLS_DIR/oha-install.log"
        OHA=$TOOLS_DIR/bin/oha
    fi
    oha_help=$("$OHA" --help 2>&1) || die 2 "$OHA --help failed"
    for f in --http2 --insecure --no-tui --output-format --worker-threads " -p "; do
        grep -q -- "$f" <<<"$oha_help" || die 2 "$OHA has no $f flag (this script needs oha >= 1.4)"
    done
fi

ncpu=$(nproc --all)
taskset -c "$CLIENT_CPU" true 2>/dev/null || die 2 "cannot pin to CLIENT_CPU=$CLIENT_CPU (this machine has $ncpu CPUs)"
taskset -c "$SERVER_CPU" true 2>/dev/null || die 2 "cannot pin to SERVER_CPU=$SERVER_CPU (this machine has $ncpu CPUs)"
[[ $CLIENT_CPU != "$SERVER_CPU" ]] || die 2 "CLIENT_CPU and SERVER_CPU must differ"
# MEM_CONNS connections need as many descriptors in the client
ulimit -n 65536 2>/dev/null || ulimit -n "$(ulimit -Hn)" 2>/dev/null || true

VOLLEY_VERSION="volley: not measured"
if has_tool volley; then
    if [[ -z ${VOLLEY:-} && -z ${VOLLEY_REV:-} ]]; then
        # build_volley assumes target/; honour CARGO_TARGET_DIR
        command -v cargo >/dev/null 2>&1 || die 2 "cargo not found (or set VOLLEY=/path/to/volley)"
        log "cargo build --release"
        (cd "$ROOT" && cargo build --release --quiet) || die 2 "cargo build --release failed"
        VOLLEY=$TARGET_DIR/release/volley
        build_volley
        VOLLEY_VERSION+=" (built from git $(git -C "$ROOT" rev-parse --short HEAD)"
        [[ -z $(git -C "$ROOT" status --porcelain -- src Cargo.toml Cargo.lock 2>/dev/null) ]] || VOLLEY_VERSION+=" with uncommitted changes"
        VOLLEY_VERSION+=")"
    else
        build_volley
    fi
fi
H2LOAD_VERSION=$(h2load --version 2>&1 | head -n1)
OHA_VERSION=$(if has_tool oha; then "$OHA" --version 2>&1 | head -n1; else echo "oha: not measured"; fi)
NGINX_VERSION=$("$NGINX" -v 2>&1 | head -n1 | sed 's/^nginx version: //')
NGINX_OPENSSL=$("$NGINX" -V 2>&1 | sed -n 's/^built with //p' | head -n1)
H2O_VERSION=$(if [[ -n $H2O ]]; then "$H2O" --version 2>&1 | head -n1; else echo "h2o: not measured"; fi)
H2O_OPENSSL=$(if [[ -n $H2O ]]; then "$H2O" --version 2>&1 | sed -n 's/^OpenSSL: //p' | head -n1; fi)
OPENSSL_VERSION=$(openssl version 2>&1 | head -n1)
H2LOAD_OPENSSL=$(ldd "$(command -v h2load)" 2>/dev/null | awk '/libssl/ { print $1 }' | head -n1)
RUSTLS_VERSION=$(awk '/^name = "rustls"$/ { getline; gsub(/"/, "", $3); print $3; exit }' "$ROOT/Cargo.lock")

# ---------------------------------------------------------------- certificate and servers
TMP=$(mktemp -d -t volley-h2.XXXXXX)
VOLLEY_SRC=${VOLLEY:-}
if has_tool volley; then cp "$VOLLEY" "$TMP/volley"; VOLLEY=$TMP/volley; fi
NGINX_PID=
H2O_PID=
H2O_CHILDREN=
CLIENT_PID=
STALL_PID=
worker_pids() { pgrep -P "$NGINX_PID" 2>/dev/null || true; }
server_pids() { # the server's processes: nginx master + worker; h2o and what it spawned
    case $1 in
    nginx) [[ -z $NGINX_PID ]] || echo "$NGINX_PID" $(worker_pids) ;;
    h2o) [[ -z $H2O_PID ]] || echo "$H2O_PID" $(pgrep -P "$H2O_PID" 2>/dev/null || true) ;;
    esac
}
cleanup() {
    local rc=$? p
    [[ -z $STALL_PID ]] || { kill -TERM "$STALL_PID" 2>/dev/null || true; wait "$STALL_PID" 2>/dev/null || true; }
    if [[ -n $NGINX_PID ]]; then for p in $(worker_pids); do kill -CONT "$p" 2>/dev/null || true; done; fi
    if [[ -n $CLIENT_PID ]]; then
        for p in $(pgrep -P "$CLIENT_PID" || true) "$CLIENT_PID"; do kill -TERM "$p" 2>/dev/null || true; done
        wait "$CLIENT_PID" 2>/dev/null || true
    fi
    stop_pid "$NGINX_PID"   # the master stops its worker
    if [[ -n $H2O_PID ]]; then
        H2O_CHILDREN+=" $(pgrep -P "$H2O_PID" 2>/dev/null || true)"
        stop_pid "$H2O_PID"
        # h2o's helpers (its crash-handler and the like) end with it; any left are ours to stop
        for p in $H2O_CHILDREN; do kill -TERM "$p" 2>/dev/null || true; done
    fi
    rm -rf "$TMP"
    exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 2 \
    -keyout "$TMP/key.pem" -out "$TMP/cert.pem" -subj "/CN=localhost" \
    -addext "basicConstraints=critical,CA:FALSE" \
    -addext "subjectAltName=DNS:localhost,IP:127.0.0.1" >"$TMP/openssl.out" 2>&1 \
    || { cat "$TMP/openssl.out" >&2; die 2 "openssl could not make the certificate"; }
CERT_CMD='openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 2 -keyout key.pem -out cert.pem -subj /CN=localhost -addext basicConstraints=critical,CA:FALSE -addext subjectAltName=DNS:localhost,IP:127.0.0.1'

port_free() { python3 -c 'import socket, sys; socket.socket().bind(("127.0.0.1", int(sys.argv[1])))' "$1" 2>/dev/null; }
declare -A PORT=()
taken=" "
for name in nginx-tls nginx-h2c nginx-tls-log nginx-h2c-log nginx-max nginx-h1 h2o-tls h2o-h2c h2o-tls-log h2o-h2c-log; do
    for _ in $(seq 20); do
        p=$(free_port)
        [[ $taken != *" $p "* ]] && port_free "$p" && break
    done
    PORT[$name]=$p
    taken+="$p "
done
url() { # url SERVER PROTO [log|max|h1]
    local key="$1-$2${3:+-$3}" scheme=http
    [[ $1 == nginx && ${3:-} == max ]] && key=nginx-max
    [[ ${3:-} == h1 ]] && key=nginx-h1
    [[ $2 == tls ]] && scheme=https
    echo "$scheme://127.0.0.1:${PORT[$key]}/"
}

# nginx: the reference settings of write_nginx_conf, with HTTP/2 listeners; TLS as bench/tls.sh.
# Six listeners on one worker: h2 over TLS and h2c without an access log (the timed runs),
# the same two with an unbuffered access log (the counts), h2c with
# http2_max_concurrent_streams MAXSTREAMS, and plain HTTP/1.1 (the stall's other side).
# backlog=4096: MEM_CONNS connections arriving at once must not overflow the accept queue.
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
    log_format h2 '\$server_protocol \$status';
    server {
        listen 127.0.0.1:${PORT[nginx-tls]} ssl http2 backlog=4096;
        location / { return 200 '.'; }
    }
    server {
        listen 127.0.0.1:${PORT[nginx-h2c]} http2 backlog=4096;
        location / { return 200 '.'; }
    }
    server {
        listen 127.0.0.1:${PORT[nginx-tls-log]} ssl http2;
        access_log $TMP/access-nginx-tls.log h2;
        location / { return 200 '.'; }
    }
    server {
        listen 127.0.0.1:${PORT[nginx-h2c-log]} http2;
        access_log $TMP/access-nginx-h2c.log h2;
        location / { return 200 '.'; }
    }
    server {
        listen 127.0.0.1:${PORT[nginx-max]} http2;
        http2_max_concurrent_streams $MAXSTREAMS;
        location / { return 200 '.'; }
    }
    server {
        listen 127.0.0.1:${PORT[nginx-h1]} backlog=4096;
        location / { return 200 '.'; }
    }
}
CONF
NGINX_CMD=(taskset -c "$SERVER_CPU" "$NGINX" -p "$TMP/" -c "$TMP/nginx.conf" -e "$TMP/error.log" -g "daemon off;")
"${NGINX_CMD[@]}" >"$TMP/nginx.out" 2>&1 &
NGINX_PID=$!   # taskset execs nginx: the master

# h2o: one thread; runs as root (`user: root`) so it can write its pid file and logs in $TMP;
# no OCSP stapling (a self-signed certificate has no responder). Each listener is its own host
# (h2o matches the Host header, which carries the port), two of them with an access log.
mkdir -p "$TMP/doc"
printf . >"$TMP/doc/index.html"
h2o_host() { # name port tls(0/1) log-file
    printf '  "127.0.0.1:%s":\n    listen:\n      host: 127.0.0.1\n      port: %s\n' "$2" "$2"
    if (($3)); then
        printf '      ssl:\n        certificate-file: %s\n        key-file: %s\n        ocsp-update-interval: 0\n' "$TMP/cert.pem" "$TMP/key.pem"
    fi
    [[ -z $4 ]] || printf '    access-log:\n      path: %s\n      format: "%%H %%s"\n' "$4"
    printf '    paths:\n      "/":\n        file.dir: %s\n' "$TMP/doc"
}
if [[ -n $H2O ]]; then
    {
        printf 'user: root\nnum-threads: 1\npid-file: %s\nerror-log: %s\nhosts:\n' "$TMP/h2o.pid" "$TMP/h2o-error.log"
        h2o_host h2o-tls "${PORT[h2o-tls]}" 1 ""
        h2o_host h2o-h2c "${PORT[h2o-h2c]}" 0 ""
        h2o_host h2o-tls-log "${PORT[h2o-tls-log]}" 1 "$TMP/access-h2o-tls.log"
        h2o_host h2o-h2c-log "${PORT[h2o-h2c-log]}" 0 "$TMP/access-h2o-h2c.log"
    } >"$TMP/h2o.conf"
    H2O_CMD=(taskset -c "$SERVER_CPU" "$H2O" -c "$TMP/h2o.conf")
    "${H2O_CMD[@]}" >"$TMP/h2o.out" 2>&1 &
    H2O_PID=$!
fi

# Ready when h2load gets 200 over h2 from every listener (it is the one client here that
# needs no volley and speaks h2c).
h2_ok() { h2load -n 1 -c 1 "$1" 2>&1 | grep -q '1 succeeded'; }
ready=0
for _ in $(seq 100); do
    kill -0 "$NGINX_PID" 2>/dev/null || break
    [[ -z $H2O_PID ]] || kill -0 "$H2O_PID" 2>/dev/null || break
    ok=1
    for s in $SERVERS; do for p in tls h2c; do h2_ok "$(url "$s" "$p")" && h2_ok "$(url "$s" "$p" log)" || ok=0; done; done
    h2_ok "$(url nginx h2c max)" || ok=0
    python3 -c 'import sys, urllib.request; sys.exit(urllib.request.urlopen(sys.argv[1], timeout=1).read() != b".")' "$(url nginx h2c h1)" 2>/dev/null || ok=0
    if ((ok)); then ready=1; break; fi
    sleep 0.1
done
if ((!ready)); then
    cat "$TMP/nginx.out" "$TMP/error.log" "$TMP/h2o.out" "$TMP/h2o-error.log" >&2 2>/dev/null || true
    die 2 "nginx or h2o did not answer over h2 on every listener within 10 s"
fi
H2O_CHILDREN=$(pgrep -P "$H2O_PID" 2>/dev/null || true)
log "$NGINX_VERSION (pid $NGINX_PID) and ${H2O_VERSION:-} (pid ${H2O_PID:-none}) on CPU $SERVER_CPU; ports: $(for k in "${!PORT[@]}"; do printf '%s=%s ' "$k" "${PORT[$k]}"; done)"

mkdir -p "$OUT_DIR"
cp "$TMP/nginx.conf" "$OUT_DIR/nginx.conf"
[[ -z $H2O ]] || cp "$TMP/h2o.conf" "$OUT_DIR/h2o.conf"
cp "$TMP/cert.pem" "$OUT_DIR/cert.pem"
: >"$OUT_DIR/runs.tsv"

# ---------------------------------------------------------------- volley speaks h2?
# Until the engine speaks HTTP/2, volley's cells cannot be measured: say so before
# spending minutes on the peers' runs.
if has_tool volley; then
    for p in $PROTOS; do
        u=$(url nginx "$p")
        flag=(--h2c); [[ $p == tls ]] && flag=(--http2 -k)
        rc=0
        timeout 20 "$VOLLEY" run --quiet --json "$OUT_DIR/probe-$p.json" "$u" "${flag[@]}" -t 1 -c 1 --streams 2 -n 100 \
            >"$OUT_DIR/probe-$p.out" 2>&1 || rc=$?
        why=$(python3 - "$OUT_DIR/probe-$p.json" "$rc" <<'EOF'
import json, sys
try:
    d = json.load(open(sys.argv[1]))
except Exception as e:
    print(f"no JSON ({e}); exit code {sys.argv[2]}"); sys.exit()
proto = (d.get("target") or {}).get("protocol")
q = d["requests"]
if proto not in ("h2", "h2c", "HTTP/2", "http/2", "HTTP/2.0") or q["completed"] == 0 or q["errors"]:
    errs = ", ".join(f"{k} {v}" for k, v in d["errors"].items() if v)
    print(f"target.protocol={proto}, completed {q['completed']}, errors {q['errors']} ({errs or 'none'}); exit code {sys.argv[2]}")
EOF
)
        [[ -z $why ]] || die 1 "volley does not speak HTTP/2 ($p) against nginx: $why (see $OUT_DIR/probe-$p.out; TOOLS=\"h2load oha\" measures the peers alone)"
    done
    log "volley speaks h2 over $PROTOS"
fi

# ---------------------------------------------------------------- cells
# Cell names: tp-SERVER-PROTO-TOOL (timed), count-SERVER-PROTO, maxstreams,
# stall-h1 / stall-h2c / stall-h2c-mux, mem-TOOL-N.
vflags() { if [[ $1 == tls ]]; then echo "--http2 -k"; else echo "--h2c"; fi; }
cell_cmd() { # CELL BASE: the client command (unpinned) in CMD
    local cell=$1 base=$2 c=$CONNECTIONS m=$STREAMS d=$DURATION s p tool n
    local v=("${VOLLEY:-volley}" run --quiet --json "$base.json")
    case $cell in
    tp-*)
        IFS=- read -r _ s p tool <<<"$cell"
        case $tool in
        volley) CMD=("${v[@]}" "$(url "$s" "$p")" $(vflags "$p") -t 1 -c "$c" --streams "$m" -d "$d") ;;
        h2load) CMD=(h2load -t 1 -c "$c" -m "$m" -D "$(to_seconds "$d")" "$(url "$s" "$p")") ;;
        oha) CMD=("$OHA" --http2 -c "$c" -p "$m" -z "$d" --worker-threads 1 --no-tui --output-format json)
            [[ $p == tls ]] && CMD+=(--insecure)
            CMD+=("$(url "$s" "$p")") ;;
        esac ;;
    count-*)
        IFS=- read -r _ s p <<<"$cell"
        CMD=("${v[@]}" "$(url "$s" "$p" log)" $(vflags "$p") -t 1 -c "$c" --streams "$m" -d "$COUNT_DURATION") ;;
    maxstreams) CMD=("${v[@]}" "$(url nginx h2c max)" --h2c -t 1 -c "$c" --streams "$m" -d "$COUNT_DURATION") ;;
    stall-h1) CMD=("${v[@]}" "$(url nginx h2c h1)" -R "$STALL_RATE" -c "$STALL_CONNECTIONS" -t 1 -d 10s) ;;
    stall-h2c) CMD=("${v[@]}" "$(url nginx h2c)" --h2c --streams 1 -R "$STALL_RATE" -c "$STALL_CONNECTIONS" -t 1 -d 10s) ;;
    stall-h2c-mux) CMD=("${v[@]}" "$(url nginx h2c)" --h2c --streams "$m" -R "$STALL_RATE" -c "$c" -t 1 -d 10s) ;;
    mem-volley-*) n=${cell##*-}
        CMD=("${v[@]}" "$(url nginx h2c)" --h2c -t 1 -c "$n" --streams "$MEM_STREAMS" -d "$MEM_DURATION" --timeout 10s) ;;
    mem-h2load-*) n=${cell##*-}
        CMD=(h2load -t 1 -c "$n" -m "$MEM_STREAMS" -D "$(to_seconds "$MEM_DURATION")" "$(url nginx h2c)") ;;
    *) die 1 "unknown cell $cell" ;;
    esac
}
cell_server() { case $1 in tp-h2o-* | count-h2o-*) echo h2o ;; *) echo nginx ;; esac; }

ticks_machine() {
    local a i total=0
    read -r -a a < <(head -n1 /proc/stat)
    for ((i = 1; i <= 8 && i < ${#a[@]}; i++)); do total=$((total + a[i])); done
    echo "$((total - a[4] - a[5])) $total"
}
ticks_server() { # utime + stime of both servers' processes (an idle one adds nothing)
    local p sum=0 f
    for p in $(server_pids nginx) $(server_pids h2o); do
        f=$(cat "/proc/$p/stat" 2>/dev/null) || continue
        f=${f##*) }
        read -r -a f <<<"$f"
        sum=$((sum + f[11] + f[12]))
    done
    echo "$sum"
}
ticks_one() { # utime + stime of one server's processes
    local p sum=0 f
    for p in $(server_pids "$1"); do
        f=$(cat "/proc/$p/stat" 2>/dev/null) || continue
        f=${f##*) }
        read -r -a f <<<"$f"
        sum=$((sum + f[11] + f[12]))
    done
    echo "$sum"
}
access_log() { [[ $1 == count-* ]] && { local s p; IFS=- read -r _ s p <<<"$1"; echo "$TMP/access-$s-$p.log"; }; }
log_lines() { if [[ -n $1 && -f $1 ]]; then wc -l <"$1"; else echo 0; fi; }

stall_server() { # the nginx worker stops for STALL_MS at 2 s and again at 7 s after the client starts
    local w s
    s=$(python3 -c "print($STALL_MS / 1000)")
    w=$(worker_pids)
    sleep 2
    kill -STOP $w; sleep "$s"; kill -CONT $w
    sleep "$(python3 -c "print(5 - $s)")"
    kill -STOP $w; sleep "$s"; kill -CONT $w
}

# Checks a finished run's output; prints why it is not a valid h2 run, or nothing.
check_run() { # cell base
    python3 - "$1" "$2" <<'EOF'
import json, os, re, sys
cell, base = sys.argv[1], sys.argv[2]
tool = "h2load" if "h2load" in cell else "oha" if "oha" in cell else "volley"
if tool == "volley":
    try:
        d = json.load(open(base + ".json"))
    except Exception as e:
        print(f"volley wrote no JSON ({e})"); sys.exit()
    proto = (d.get("target") or {}).get("protocol")
    q = d["requests"]
    want_h1 = cell == "stall-h1"
    if not want_h1 and proto not in ("h2", "h2c", "HTTP/2", "http/2", "HTTP/2.0"):
        print(f"volley did not speak HTTP/2: target.protocol={proto}")
    elif q["completed"] == 0:
        print("volley completed no request")
elif tool == "h2load":
    t = open(base + ".out").read()
    m = re.search(r"requests: (\d+) total, (\d+) started, (\d+) done, (\d+) succeeded", t)
    if not m or int(m.group(4)) == 0:
        print("h2load completed no request")
    elif "tls" in cell and "Application protocol: h2" not in t:
        print("h2load did not negotiate h2")
else:
    try:
        d = json.load(open(base + ".out"))
    except Exception as e:
        print(f"oha wrote no JSON ({e})"); sys.exit()
    if not d.get("statusCodeDistribution"):
        print("oha completed no request")
EOF
}

SEQ=0
run_cell() { # cell rep
    local cell=$1 rep=$2 base="$OUT_DIR/$1-rep$2" rc attempt other alog why
    cell_cmd "$cell" "$base"
    alog=$(access_log "$cell" || true)
    for ((attempt = 0; ; attempt++)); do
        wait_quiet >"$base.busy"
        log "rep $rep/$REPS: $cell"
        rc=0
        log_lines "$alog" >"$base.log0"
        echo "$(ticks_machine) $(ticks_server) $(ticks_one "$(cell_server "$cell")")" >"$base.ticks"
        /usr/bin/time -f '%U %S %e %M' -o "$base.time" taskset -c "$CLIENT_CPU" "${CMD[@]}" >"$base.out" 2>"$base.err" &
        CLIENT_PID=$!
        if [[ $cell == stall-* ]]; then stall_server & STALL_PID=$!; fi
        wait "$CLIENT_PID" || rc=$?
        CLIENT_PID=
        if [[ -n $STALL_PID ]]; then wait "$STALL_PID" || true; STALL_PID=; fi
        echo "$(ticks_machine) $(ticks_server) $(ticks_one "$(cell_server "$cell")")" >>"$base.ticks"
        if [[ -n $alog ]]; then
            sleep 0.3   # a server logs a request after its response is out
            log_lines "$alog" >"$base.log1"
            tail -n +"$(($(cat "$base.log0") + 1))" "$alog" | head -n "$(($(cat "$base.log1") - $(cat "$base.log0")))" \
                | awk '{ n[$1 " " $2]++ } END { for (k in n) print n[k], k }' >"$base.access"
        fi
        why=$(check_run "$cell" "$base")
        echo "$rc" >"$base.rc"
        if ((rc != 0)) && [[ -z $why && $cell != tp-* && -s $base.json ]]; then
            # a check run that spoke h2 and wrote its JSON: its exit code is part of the result
            log "warning: $cell exited with $rc in rep $rep (kept; see $base.err)"
        elif ((rc != 0)) || [[ -n $why ]]; then
            tail -n 20 "$base.out" "$base.err" >&2
            die 1 "$cell exited with $rc in rep $rep${why:+: $why} (output: $base.out, $base.err)"
        fi
        kill -0 "$NGINX_PID" 2>/dev/null || die 1 "nginx died during the $cell run of rep $rep"
        [[ -z $H2O_PID ]] || kill -0 "$H2O_PID" 2>/dev/null || die 1 "h2o died during the $cell run of rep $rep"
        other=$(awk -v hz="$(getconf CLK_TCK)" -v n="$ncpu" '
            NR == 1 { b0 = $1; t0 = $2; n0 = $3 } NR == 2 { b1 = $1; t1 = $2; n1 = $3 }
            FILENAME ~ /time$/ { c = $1 + $2 }
            END { wall = (t1 - t0) / hz / n; o = ((b1 - b0) - (n1 - n0)) / hz - c; printf "%d", (o > 0 ? 100 * o / wall : 0) }
        ' "$base.ticks" "$base.time")
        # checks, not timings: never repeated
        [[ $cell != count-* && $cell != maxstreams ]] || break
        ((other > OTHER_MAX && attempt < RETRIES)) || break
        log "other work used ${other}% of a core during this run; repeating it ($((attempt + 1))/$RETRIES)"
    done
    SEQ=$((SEQ + 1))
    printf '%s\t%s\t%s\t%s\n' "$SEQ" "$rep" "$cell" "$((attempt + 1))" >>"$OUT_DIR/runs.tsv"
}

# Groups: one per server x protocol in the throughput table (tools rotate within it).
GROUPS_TP=()
for s in $SERVERS; do
    for p in $PROTOS; do
        g=()
        for t in $TOOLS; do g+=("tp-$s-$p-$t"); done
        declare -a "GROUP_tp_${s}_$p=(${g[*]})"
        GROUPS_TP+=("GROUP_tp_${s}_$p")
    done
done
GROUP_stall=()
GROUP_count=()
GROUP_memory=()
if has_tool volley; then
    GROUP_stall=(stall-h1 stall-h2c stall-h2c-mux)
    for s in $SERVERS; do for p in $PROTOS; do GROUP_count+=("count-$s-$p"); done; done
    GROUP_count+=(maxstreams)
    for n in $MEM_CONNS; do GROUP_memory+=("mem-volley-$n"); done
fi
if has_tool h2load; then for n in $MEM_CONNS; do GROUP_memory+=("mem-h2load-$n"); done; fi

for ((rep = 1; rep <= REPS; rep++)); do
    if want h2-throughput; then
        for gname in "${GROUPS_TP[@]}"; do
            declare -n group=$gname
            n=${#group[@]}
            for ((i = 0; i < n; i++)); do run_cell "${group[(i + rep - 1) % n]}" "$rep"; done
            unset -n group
        done
    fi
    if want h2-correct && ((${#GROUP_stall[@]})); then
        n=${#GROUP_stall[@]}
        for ((i = 0; i < n; i++)); do run_cell "${GROUP_stall[(i + rep - 1) % n]}" "$rep"; done
        # the counts and the stream limit: once, in the first repetition
        if ((rep == 1)); then for cell in "${GROUP_count[@]}"; do run_cell "$cell" 1; done; fi
    fi
    if want h2-memory && ((rep <= MEM_REPS)) && ((${#GROUP_memory[@]})); then
        n=${#GROUP_memory[@]}
        for ((i = 0; i < n; i++)); do run_cell "${GROUP_memory[(i + rep - 1) % n]}" "$rep"; done
    fi
done

# ---------------------------------------------------------------- metadata
short() { sed -e "s#$OUT_DIR/##g" -e "s#$ROOT/##g" -e "s#$TMP#\$TMP#g"; }
for gname in "${GROUPS_TP[@]}"; do declare -n group=$gname; for cell in "${group[@]}"; do echo "$cell"; done; unset -n group; done >"$TMP/cells"
for cell in "${GROUP_stall[@]}" "${GROUP_count[@]}" "${GROUP_memory[@]}"; do echo "$cell"; done >>"$TMP/cells"
while read -r cell; do
    cell_cmd "$cell" "$cell-repN"
    printf '%s\t%s\n' "$cell" "$(quote taskset -c "$CLIENT_CPU" "${CMD[@]}" | short)"
done <"$TMP/cells" >"$OUT_DIR/commands.tsv"

CMD_NGINX="$(quote "${NGINX_CMD[@]}" | short)   # \$TMP/nginx.conf: $(printf '%s' "$OUT_DIR/nginx.conf" | sed "s#$ROOT/##")"
CMD_H2O=$([[ -z $H2O ]] || echo "$(quote "${H2O_CMD[@]}" | short)   # \$TMP/h2o.conf: $(printf '%s' "$OUT_DIR/h2o.conf" | sed "s#$ROOT/##")")
CMD_VOLLEY_NOTE="\$TMP/cert.pem, key.pem: $CERT_CMD"
[[ -z $VOLLEY_SRC ]] || CMD_VOLLEY_NOTE="\$TMP/volley is a copy of $(printf '%s' "$VOLLEY_SRC" | short); $CMD_VOLLEY_NOTE"
CPU_MODEL=$(grep -m1 '^model name' /proc/cpuinfo | sed 's/^[^:]*: *//' || true)
KERNEL=$(uname -sr)
NCPU=$ncpu
DATE=$(date -u +%Y-%m-%dT%H:%M:%SZ)
STARTED=$STAMP
export CMD_NGINX CMD_H2O CMD_VOLLEY_NOTE CPU_MODEL KERNEL NCPU DATE STARTED VOLLEY_VERSION H2LOAD_VERSION OHA_VERSION \
    NGINX_VERSION NGINX_OPENSSL H2O_VERSION H2O_OPENSSL OPENSSL_VERSION H2LOAD_OPENSSL RUSTLS_VERSION \
    REPS DURATION CONNECTIONS STREAMS CLIENT_CPU SERVER_CPU SERVERS PROTOS TOOLS TABLES BUSY_MAX OTHER_MAX \
    COUNT_DURATION MAXSTREAMS STALL_RATE STALL_MS STALL_CONNECTIONS MEM_CONNS MEM_STREAMS MEM_DURATION MEM_REPS
python3 - "$OUT_DIR/meta.json" <<'EOF'
import json, os, sys
keys = ("CMD_NGINX CMD_H2O CMD_VOLLEY_NOTE CPU_MODEL KERNEL NCPU DATE STARTED VOLLEY_VERSION H2LOAD_VERSION OHA_VERSION "
        "NGINX_VERSION NGINX_OPENSSL H2O_VERSION H2O_OPENSSL OPENSSL_VERSION H2LOAD_OPENSSL RUSTLS_VERSION "
        "REPS DURATION CONNECTIONS STREAMS CLIENT_CPU SERVER_CPU SERVERS PROTOS TOOLS TABLES BUSY_MAX OTHER_MAX "
        "COUNT_DURATION MAXSTREAMS STALL_RATE STALL_MS STALL_CONNECTIONS MEM_CONNS MEM_STREAMS MEM_DURATION MEM_REPS").split()
json.dump({k: os.environ[k] for k in keys}, open(sys.argv[1], "w"), indent=2)
EOF
report
