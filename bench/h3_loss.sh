#!/usr/bin/env bash
# bench/h3_loss.sh: volley's open loop over HTTP/3 with and without loss — the same run (-R
# RATE, CONNECTIONS x STREAMS, DURATION) against the rust reference server (servers/rust:
# HTTP/3 on its TLS port over UDP) directly, and through bench/lossy_udp_relay.py, which drops
# every EVERY-th datagram each way (this kernel has no netem). The open loop's corrected
# percentiles (from each request's due time: a request held back by QUIC's recovery counts
# all of its wait) of both, side by side, with QUIC's packet counts; runs interleaved, clean
# first in odd repetitions.
#
# The table is rewritten between its markers in BENCH_MD (BENCHMARKS.md). Not part of CI.
#
# Usage:  bench/h3_loss.sh                         # 3 reps x 10 s at 20 requests/s
#         REPS=1 DURATION=5s bench/h3_loss.sh      # quick
# Environment: REPS=3 DURATION=10s RATE=20 CONNECTIONS=8 STREAMS=4 EVERY=2 TIMEOUT=5s
#   CLIENT_CPU=0 SERVER_CPU=1  VOLLEY=<path>  OUT_DIR=<dir>  BENCH_MD=<file>  UPDATE_MD=0
# Exit codes: 0 ok, 1 a run failed or could not be parsed, 2 missing prerequisites.
set -euo pipefail

REPS=${REPS:-3}
DURATION=${DURATION:-10s}
RATE=${RATE:-20}
CONNECTIONS=${CONNECTIONS:-8}
STREAMS=${STREAMS:-4}
EVERY=${EVERY:-2}
TIMEOUT=${TIMEOUT:-5s}
CLIENT_CPU=${CLIENT_CPU:-0}
SERVER_CPU=${SERVER_CPU:-1}
UPDATE_MD=${UPDATE_MD:-1}

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
TARGET_DIR=${CARGO_TARGET_DIR:-$ROOT/target}
BENCH_MD=${BENCH_MD:-$ROOT/BENCHMARKS.md}
STAMP=$(date -u +%Y%m%dT%H%M%SZ)
OUT_DIR=${OUT_DIR:-$TARGET_DIR/bench-h3-loss/$STAMP}
BENCH_TAG=h3-loss
# shellcheck source=bench/lib.sh
source "$ROOT/bench/lib.sh"

for v in REPS RATE CONNECTIONS STREAMS EVERY; do
    [[ ${!v} =~ ^[1-9][0-9]*$ ]] || die 2 "$v must be a positive integer, got '${!v}'"
done
((EVERY >= 2)) || die 2 "EVERY must be 2 or more"
for v in DURATION TIMEOUT; do
    [[ ${!v} =~ ^[1-9][0-9]*s$ ]] || die 2 "$v must look like 10s, got '${!v}'"
done
command -v openssl >/dev/null 2>&1 || die 2 "openssl is missing"
command -v python3 >/dev/null 2>&1 || die 2 "python3 is missing"
build_volley
log "cargo build --release --locked (servers/rust)"
(cd "$ROOT/servers/rust" && cargo build --release --locked --quiet) || die 2 "building servers/rust failed"
SERVER=$ROOT/servers/rust/target/release/server

mkdir -p "$OUT_DIR"
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 2 \
    -keyout "$OUT_DIR/key.pem" -out "$OUT_DIR/cert.pem" -subj /CN=localhost \
    -addext "subjectAltName=DNS:localhost,IP:127.0.0.1" 2>/dev/null
PORT=$(free_port)
TLS_CERT=$OUT_DIR/cert.pem TLS_KEY=$OUT_DIR/key.pem PORT=$PORT \
    taskset -c "$SERVER_CPU" "$SERVER" >"$OUT_DIR/server.out" 2>&1 &
SERVER_PID=$!
RELAY_PID=""
trap 'stop_pid "$RELAY_PID"; stop_pid $SERVER_PID' EXIT
for _ in $(seq 100); do (exec 3<>"/dev/tcp/127.0.0.1/$PORT") 2>/dev/null && break; sleep 0.05; done
# The relay on the server's CPU, so the client's CPU is the client's alone.
taskset -c "$SERVER_CPU" python3 "$ROOT/bench/lossy_udp_relay.py" --to "$PORT" --every "$EVERY" \
    >"$OUT_DIR/relay.out" 2>&1 &
RELAY_PID=$!
for _ in $(seq 100); do [[ -s $OUT_DIR/relay.out ]] && break; sleep 0.05; done
RELAY_PORT=$(head -1 "$OUT_DIR/relay.out")
[[ $RELAY_PORT =~ ^[0-9]+$ ]] || die 1 "the relay did not start: see $OUT_DIR/relay.out"

# One run of CASE (clean or lossy), repetition REP: its RunResult in OUT_DIR.
run_case() {
    local case=$1 rep=$2 port=$PORT out=$OUT_DIR/$1-$2
    [[ $case == lossy ]] && port=$RELAY_PORT
    taskset -c "$CLIENT_CPU" "$VOLLEY" run "https://localhost:$port/bytes?n=1024" --http3 \
        --cacert "$OUT_DIR/cert.pem" -R "$RATE" -c "$CONNECTIONS" --streams "$STREAMS" \
        -d "$DURATION" --timeout "$TIMEOUT" --json "$out.json" >"$out.txt" 2>&1 \
        || [[ -s $out.json ]] || die 1 "$case run $rep failed: see $out.txt"
    log "rep $rep $case: $(grep -m1 'packets sent' "$out.txt" || true)"
}

for rep in $(seq "$REPS"); do
    if ((rep % 2)); then order=(clean lossy); else order=(lossy clean); fi
    for c in "${order[@]}"; do run_case "$c" "$rep"; done
done
stop_pid "$RELAY_PID"
RELAY_PID=""
relayed=$(tail -1 "$OUT_DIR/relay.out" | awk '$1 == "relayed" {print $2 " datagrams, " $4 " dropped"}')

table=$(python3 - "$OUT_DIR" "$REPS" <<'PY'
import json, statistics, sys
out, reps = sys.argv[1], int(sys.argv[2])
def ms(us):
    return "—" if us is None else f"{us / 1000:,.1f}"
rows = []
for case in ("clean", "lossy"):
    rs = [json.load(open(f"{out}/{case}-{rep}.json")) for rep in range(1, reps + 1)]
    def med(f):
        xs = [f(r) for r in rs]
        xs = [x for x in xs if x is not None]
        return statistics.median(xs) if xs else None
    lat = lambda p: med(lambda r: r["latency_us"][p])
    svc = lambda p: med(lambda r: r["service_time_us"][p])
    sent = sum(r["requests"]["sent"] for r in rs)
    done = sum(r["requests"]["completed"] for r in rs)
    errs = sum(r["requests"]["errors"] for r in rs)
    pk = sum(r["target"]["quic"]["sent_packets"] for r in rs)
    lost = sum(r["target"]["quic"]["lost_packets"] for r in rs)
    lb = any(r.get("latency_lower_bound") for r in rs)
    ge = "≥ " if lb else ""
    rows.append(
        f"| {case} | {ge}{ms(lat('p50'))} | {ge}{ms(lat('p99'))} | {ge}{ms(lat('p99_9'))} "
        f"| {ms(svc('p50'))} | {ms(svc('p99'))} | {done:,} of {sent:,} ({errs} errors) "
        f"| {lost:,} of {pk:,} ({100 * lost / max(pk, 1):.1f} %) |"
    )
print("| run | corrected p50 (ms) | corrected p99 (ms) | corrected p99.9 (ms) | service p50 (ms) | service p99 (ms) | completed | QUIC packets lost |")
print("|---|---:|---:|---:|---:|---:|---|---|")
print("\n".join(rows))
PY
) || die 1 "the RunResults could not be read (see $OUT_DIR)"

section="Run $(date -u +%Y-%m-%dT%H:%M:%SZ) by \`bench/h3_loss.sh\` (REPS=$REPS, DURATION=$DURATION, RATE=$RATE, CONNECTIONS=$CONNECTIONS, STREAMS=$STREAMS, EVERY=$EVERY, TIMEOUT=$TIMEOUT); servers/rust (HTTP/3: quinn, h3) on CPU $SERVER_CPU with the relay, volley on CPU $CLIENT_CPU; GET /bytes?n=1024. Percentiles are medians over the repetitions; counts are sums. The relay: $relayed.

$table"
echo "$section"
if [[ $UPDATE_MD == 1 ]]; then
    SECTION="$section" python3 - "$BENCH_MD" <<'PY'
import os, sys
path = sys.argv[1]
text = open(path).read()
begin, end = "<!-- h3-loss:begin -->", "<!-- h3-loss:end -->"
body = begin + "\n" + os.environ["SECTION"] + "\n" + end
if begin in text:
    a, b = text.index(begin), text.index(end) + len(end)
    text = text[:a] + body + text[b:]
else:
    # After the HTTP/3 section's own table.
    at = text.index("<!-- h3:end -->") + len("<!-- h3:end -->")
    text = text[:at] + "\n\n" + body + text[at:]
open(path, "w").write(text)
PY
fi
