#!/usr/bin/env bash
# bench/h3.sh: volley over HTTP/3 against oha's --http3 and against volley's own HTTP/2, on
# one server pinned to SERVER_CPU — SERVER=caddy (Debian's Caddy, which serves h1, h2 and h3
# on one port, quic-go) or SERVER=rust (servers/rust: hyper for h1 and h2, quinn and h3 for
# HTTP/3) —, every client pinned to CLIENT_CPU, interleaved (the tools' order rotates each
# repetition).
#
#   h3-throughput  closed loop, CONNECTIONS x STREAMS, one client thread, DURATION per run:
#                  volley --http3 -k · volley --http2 -k · oha --http-version 3 --insecure;
#                  requests per client CPU-second (user + sys from /usr/bin/time), medians of
#                  REPS, and the ratios; Caddy's own count of HTTP/3 requests against volley's
#                  (SERVER=caddy; the rust server keeps no log)
#   h3-memory      client RSS with MEM_CONNS QUIC connections (closed loop, 1 stream each)
#
# The tables are rewritten between their markers in BENCH_MD (BENCHMARKS.md): `h3` for Caddy,
# `h3-rust` for the rust server. Not part of CI.
#
# Usage:  bench/h3.sh                       # 3 reps x 10 s
#         REPS=1 DURATION=3s bench/h3.sh    # quick
# Environment: SERVER=caddy REPS=3 DURATION=10s CONNECTIONS=4 STREAMS=8 CLIENT_CPU=0 SERVER_CPU=1
#   MEM_CONNS=1000 MEM_DURATION=5s  VOLLEY=<path>  OHA=<path with HTTP/3>  TOOLS_DIR=<dir>
#   OUT_DIR=<dir>  BENCH_MD=<file>  UPDATE_MD=0 (print only)
# Exit codes: 0 ok, 1 a run failed or could not be parsed, 2 missing prerequisites.
set -euo pipefail

SERVER=${SERVER:-caddy}
REPS=${REPS:-3}
DURATION=${DURATION:-10s}
CONNECTIONS=${CONNECTIONS:-4}
STREAMS=${STREAMS:-8}
CLIENT_CPU=${CLIENT_CPU:-0}
SERVER_CPU=${SERVER_CPU:-1}
MEM_CONNS=${MEM_CONNS:-1000}
MEM_DURATION=${MEM_DURATION:-5s}
UPDATE_MD=${UPDATE_MD:-1}

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
TARGET_DIR=${CARGO_TARGET_DIR:-$ROOT/target}
BENCH_MD=${BENCH_MD:-$ROOT/BENCHMARKS.md}
TOOLS_DIR=${TOOLS_DIR:-$TARGET_DIR/bench-tools}
STAMP=$(date -u +%Y%m%dT%H%M%SZ)
OUT_DIR=${OUT_DIR:-$TARGET_DIR/bench-h3/$STAMP}
BENCH_TAG=h3
[[ $SERVER == caddy || $SERVER == rust ]] || { echo "[h3] error: SERVER must be caddy or rust, got '$SERVER'" >&2; exit 2; }
[[ $SERVER == rust ]] && BENCH_TAG=h3-rust
# shellcheck source=bench/lib.sh
source "$ROOT/bench/lib.sh"

[[ $REPS =~ ^[1-9][0-9]*$ ]] || die 2 "REPS must be a positive integer, got '$REPS'"
for v in CONNECTIONS STREAMS MEM_CONNS; do
    [[ ${!v} =~ ^[1-9][0-9]*$ ]] || die 2 "$v must be a positive integer, got '${!v}'"
done
for v in DURATION MEM_DURATION; do
    [[ ${!v} =~ ^[1-9][0-9]*s$ ]] || die 2 "$v must look like 10s, got '${!v}'"
done
if [[ $SERVER == caddy ]]; then
    command -v caddy >/dev/null 2>&1 || die 2 "caddy is missing (apt-get install caddy)"
fi
[[ -x /usr/bin/time ]] || die 2 "/usr/bin/time is missing (apt-get install time)"
command -v openssl >/dev/null 2>&1 || die 2 "openssl is missing"

VOLLEY=${VOLLEY:-}
if [[ -z $VOLLEY ]]; then
    (cd "$ROOT" && cargo build --release --quiet) || die 1 "cargo build --release failed"
    VOLLEY=$TARGET_DIR/release/volley
fi
# oha with HTTP/3 (its `http3` feature), built once into its own folder.
if [[ -z ${OHA:-} ]]; then
    OHA=$TOOLS_DIR/oha-h3/bin/oha
    if [[ ! -x $OHA ]]; then
        log "cargo install oha --locked --features http3 (once; several minutes)"
        cargo install oha --locked --features http3 --root "$TOOLS_DIR/oha-h3" \
            >"$TOOLS_DIR/oha-h3.log" 2>&1 || die 2 "building oha with http3 failed; see $TOOLS_DIR/oha-h3.log"
    fi
fi
"$OHA" --version >/dev/null || die 2 "OHA=$OHA does not run"

mkdir -p "$OUT_DIR"
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 2 \
    -keyout "$OUT_DIR/key.pem" -out "$OUT_DIR/cert.pem" -subj /CN=localhost \
    -addext "subjectAltName=DNS:localhost" -addext basicConstraints=CA:FALSE 2>/dev/null
PORT=$(free_port)
start_rust() {
    (cd "$ROOT/servers/rust" && cargo build --release --locked --quiet) || die 2 "building servers/rust failed"
    PORT=$PORT TLS_CERT=$OUT_DIR/cert.pem TLS_KEY=$OUT_DIR/key.pem \
        taskset -c "$SERVER_CPU" "$ROOT/servers/rust/target/release/server" >"$OUT_DIR/server.out" 2>&1 &
    SERVER_PID=$!
}
start_caddy() {
cat >"$OUT_DIR/Caddyfile" <<CONF
{
	admin off
	auto_https off
	storage file_system $OUT_DIR/storage
	servers {
		protocols h1 h2 h3
	}
}
https://localhost:$PORT {
	bind 127.0.0.1
	tls $OUT_DIR/cert.pem $OUT_DIR/key.pem
	log {
		output file $OUT_DIR/access.log {
			roll_disabled
		}
	}
	respond "." 200
}
CONF
HOME=$OUT_DIR XDG_DATA_HOME=$OUT_DIR/data XDG_CONFIG_HOME=$OUT_DIR/config \
    taskset -c "$SERVER_CPU" caddy run --adapter caddyfile --config "$OUT_DIR/Caddyfile" \
    >"$OUT_DIR/caddy.out" 2>&1 &
SERVER_PID=$!
}
"start_$SERVER"
trap 'stop_pid $SERVER_PID' EXIT
for _ in $(seq 100); do (exec 3<>"/dev/tcp/127.0.0.1/$PORT") 2>/dev/null && break; sleep 0.05; done
URL=https://localhost:$PORT/
secs=${DURATION%s}

# One run of TOOL: "requests cpu_seconds rss_kb" on stdout; its outputs kept in OUT_DIR.
run_tool() {
    local tool=$1 rep=$2 out=$OUT_DIR/$1-$2
    case $tool in
        volley-h3 | volley-h2)
            local v=--http3
            [[ $tool == volley-h2 ]] && v=--http2
            /usr/bin/time -f "%U %S %M" -o "$out.time" taskset -c "$CLIENT_CPU" "$VOLLEY" run "$URL" \
                "$v" -k -t 1 -c "$CONNECTIONS" --streams "$STREAMS" -d "$DURATION" --io epoll \
                --json "$out.json" >"$out.txt" 2>&1 || die 1 "$tool failed: see $out.txt"
            local n
            n=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["requests"]["completed"])' "$out.json")
            ;;
        oha-h3)
            /usr/bin/time -f "%U %S %M" -o "$out.time" taskset -c "$CLIENT_CPU" "$OHA" "$URL" \
                --http-version 3 --insecure -c "$CONNECTIONS" -p "$STREAMS" -z "$DURATION" \
                --worker-threads 1 --no-tui --output-format json >"$out.json" 2>"$out.txt" \
                || die 1 "$tool failed: see $out.txt"
            n=$(python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); print(sum(v for k,v in d["statusCodeDistribution"].items()))' "$out.json")
            ;;
    esac
    read -r u s m <"$out.time"
    echo "$n $(python3 -c "print($u + $s)") $m"
}

declare -A REQ CPU
tools=(volley-h3 volley-h2 oha-h3)
for rep in $(seq "$REPS"); do
    # The order rotates: each tool goes first once in three repetitions.
    for k in 0 1 2; do
        t=${tools[$(((k + rep) % 3))]}
        read -r n c _ < <(run_tool "$t" "$rep")
        REQ[$t]+="$n " CPU[$t]+="$c "
        log "rep $rep $t: $n requests, $c client CPU-s"
    done
done
# Caddy's count of HTTP/3 requests against volley's own, on one more run.
if [[ $SERVER == caddy ]]; then
    before=$(grep -c '"proto":"HTTP/3.0"' "$OUT_DIR/access.log" || true)
    read -r counted _ _ < <(run_tool volley-h3 count)
    after=$(grep -c '"proto":"HTTP/3.0"' "$OUT_DIR/access.log" || true)
    counts="Counts: a run whose RunResult says $counted requests completed; Caddy's access log has $((after - before)) HTTP/3 requests for it."
    server_desc="Caddy $(caddy version | cut -d' ' -f1)"
else
    counts="Counts: not checked (the rust server keeps no log; tests/full/h3.rs checks them against Caddy)."
    server_desc="servers/rust (quinn $(sed -n '/^name = "quinn"$/{n;s/version = "\(.*\)"/\1/p}' "$ROOT/servers/rust/Cargo.lock"), h3 and hyper)"
fi
read -r _ _ mem_kb < <(
    /usr/bin/time -f "%U %S %M" -o "$OUT_DIR/mem.time" taskset -c "$CLIENT_CPU" "$VOLLEY" run "$URL" \
        --http3 -k -c "$MEM_CONNS" -d "$MEM_DURATION" --io epoll --json "$OUT_DIR/mem.json" \
        >"$OUT_DIR/mem.txt" 2>&1 || die 1 "the memory run failed: see $OUT_DIR/mem.txt"
    cat "$OUT_DIR/mem.time"
)
mem_opened=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["target"]["quic"]["connections"])' "$OUT_DIR/mem.json")

table=$(REQ_V3="${REQ[volley-h3]}" CPU_V3="${CPU[volley-h3]}" REQ_V2="${REQ[volley-h2]}" \
    CPU_V2="${CPU[volley-h2]}" REQ_O="${REQ[oha-h3]}" CPU_O="${CPU[oha-h3]}" python3 - "$secs" <<'PY'
import os, statistics, sys
def rate(r, c):
    return [int(a) / float(b) for a, b in zip(os.environ[r].split(), os.environ[c].split())]
v3, v2, o = rate("REQ_V3", "CPU_V3"), rate("REQ_V2", "CPU_V2"), rate("REQ_O", "CPU_O")
m = {k: statistics.median(x) for k, x in (("v3", v3), ("v2", v2), ("o", o))}
print("| client | requests per client CPU-second (median) | runs |")
print("|---|---:|---|")
for name, key, runs in (("volley --http3", "v3", v3), ("volley --http2 (TLS)", "v2", v2), ("oha --http-version 3", "o", o)):
    print(f"| {name} | {m[key]:,.0f} | {', '.join(f'{x:,.0f}' for x in runs)} |")
print()
print(f"volley HTTP/3 ÷ oha HTTP/3: **{m['v3'] / m['o']:.2f}×**; volley HTTP/3 ÷ volley HTTP/2: {m['v3'] / m['v2']:.2f}×.")
PY
)
section="Run $(date -u +%Y-%m-%dT%H:%M:%SZ) by \`SERVER=$SERVER bench/h3.sh\` (REPS=$REPS, DURATION=$DURATION, CONNECTIONS=$CONNECTIONS, STREAMS=$STREAMS); $server_desc on CPU $SERVER_CPU, clients on CPU $CLIENT_CPU; oha $("$OHA" --version | cut -d' ' -f2).

$table

$counts

Memory: $MEM_CONNS QUIC connections ($mem_opened handshakes finished), closed loop, one stream each: volley's RSS at most $((mem_kb / 1024)) MiB."
echo "$section"
if [[ $UPDATE_MD == 1 ]]; then
    SECTION="$section" python3 - "$BENCH_MD" "$BENCH_TAG" <<'PY'
import os, sys
path, tag = sys.argv[1], sys.argv[2]
text = open(path).read()
begin, end = f"<!-- {tag}:begin -->", f"<!-- {tag}:end -->"
body = begin + "\n" + os.environ["SECTION"] + "\n" + end
if begin in text:
    a, b = text.index(begin), text.index(end) + len(end)
    text = text[:a] + body + text[b:]
elif tag == "h3-rust":
    h3_end = "<!-- h3:end -->"
    at = text.index(h3_end) + len(h3_end) if h3_end in text else len(text)
    text = text[:at] + "\n\nAgainst the reference server that speaks HTTP/3 with quinn (`SERVER=rust`):\n\n" + body + text[at:]
else:
    text = text.rstrip() + "\n\n## HTTP/3 (`bench/h3.sh`)\n\n" + body + "\n"
open(path, "w").write(text)
PY
fi
