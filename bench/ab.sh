#!/usr/bin/env bash
# bench/ab.sh: client CPU per request of two volley binaries, interleaved, against `volley serve`.
#
# For a change to the engine: the same load from both builds, one after the other, the order
# alternating each repetition, server pinned to SERVER_CPU and clients to CLIENT_CPU. Prints
# one line per run (rep, mode, build, responses, client µs CPU per response, req/s, send lag
# p99 µs, corrected p99 µs) and the median ratio B ÷ A of CPU per response per mode.
#
# Usage:  bench/ab.sh OLD_VOLLEY NEW_VOLLEY
#         REPS=5 DURATION=5s RATE=20000 CONNECTIONS=50 CLIENT_CPU=0 SERVER_CPU=1 (defaults)
#         B_FLAGS="--allow-shortfall"   extra open-loop flags for the second build only
#         MODES="open closed"           which loads to run (open: -R RATE; closed)
#         FLAGS="--pipeline 16"         extra flags for both builds' runs
#         TLS=1                         HTTPS: the server gets a self-signed certificate
#                                       (openssl), the clients -k
# The per-run line also gives volley's peak RSS (MiB), and the summary its median ratio:
# CONNECTIONS=10000 MODES=closed gives the memory of 10,000 connections (ulimit -n raised).
# Exit codes: 0 ok, 1 a run failed, 2 bad arguments.
set -euo pipefail
[[ $# -eq 2 && -x $1 && -x $2 ]] || { echo "usage: bench/ab.sh OLD_VOLLEY NEW_VOLLEY" >&2; exit 2; }
A=$1 B=$2
REPS=${REPS:-5} DURATION=${DURATION:-5s} RATE=${RATE:-20000} CONNECTIONS=${CONNECTIONS:-50}
CLIENT_CPU=${CLIENT_CPU:-0} SERVER_CPU=${SERVER_CPU:-1} B_FLAGS=${B_FLAGS:-}
MODES=${MODES:-open closed} FLAGS=${FLAGS:-} TLS=${TLS:-0}
read -ra COMMON <<<"$FLAGS"
ulimit -n 1048576 2>/dev/null || ulimit -n "$(ulimit -Hn)"
TMP=$(mktemp -d -t volley-ab.XXXXXX)
PORT=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
SCHEME=http SERVE_TLS=()
if [[ $TLS == 1 ]]; then
  openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 2 \
    -keyout "$TMP/key.pem" -out "$TMP/cert.pem" -subj /CN=localhost \
    -addext subjectAltName=IP:127.0.0.1 >/dev/null 2>&1
  SCHEME=https SERVE_TLS=(--tls-cert "$TMP/cert.pem" --tls-key "$TMP/key.pem") COMMON+=(-k)
fi
taskset -c "$SERVER_CPU" "$B" serve --port "$PORT" "${SERVE_TLS[@]}" >/dev/null 2>&1 &
SERVER=$!
trap 'kill $SERVER 2>/dev/null; rm -rf "$TMP"' EXIT
sleep 0.5
for rep in $(seq 1 "$REPS"); do
  for mode in $MODES; do
    order="a b"; (( rep % 2 == 0 )) && order="b a"
    for build in $order; do
      bin=$A; extra=()
      [[ $build == b ]] && bin=$B
      [[ $mode == open ]] && extra=(-R "$RATE")
      [[ $mode == open && $build == b && -n $B_FLAGS ]] && read -ra more <<<"$B_FLAGS" && extra+=("${more[@]}")
      /usr/bin/time -f "%U %S" -o "$TMP/t" taskset -c "$CLIENT_CPU" "$bin" run "$SCHEME://127.0.0.1:$PORT/" \
        -c "$CONNECTIONS" -t 1 -d "$DURATION" "${extra[@]}" "${COMMON[@]}" -q --json "$TMP/r.json" >/dev/null 2>&1 || true
      python3 - "$rep" "$mode" "$build" "$TMP" <<'PY'
import json, sys
rep, mode, build, tmp = sys.argv[1:]
u, s = map(float, open(f"{tmp}/t").read().split()[-2:])
r = json.load(open(f"{tmp}/r.json"))
n = r["requests"]["completed"]
lag = (r.get("schedule_lag_us") or {}).get("p99")
rss = round(r["client"]["rss_max_bytes"] / 2**20, 1)
print(rep, mode, build, n, round((u + s) / n * 1e6, 2), r["throughput_rps"], lag, r["latency_us"]["p99"], rss)
PY
    done
  done
done | tee "$TMP/runs.txt"
python3 - "$TMP/runs.txt" <<'PY'
import statistics, sys
runs, rss = {}, {}
for line in open(sys.argv[1]):
    rep, mode, build, _, cpu, *rest = line.split()
    runs.setdefault((mode, rep), {})[build] = float(cpu)
    rss.setdefault((mode, rep), {})[build] = float(rest[-1])
for mode in ("open", "closed"):
    ratios = [v["b"] / v["a"] for (m, _), v in runs.items() if m == mode and len(v) == 2]
    mem = [v["b"] / v["a"] for (m, _), v in rss.items() if m == mode and len(v) == 2]
    if ratios:
        print(f"{mode}: B/A CPU per response, median {statistics.median(ratios):.3f} over {len(ratios)} pairs;"
              f" B/A peak RSS, median {statistics.median(mem):.3f}")
PY
