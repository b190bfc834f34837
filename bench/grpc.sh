#!/usr/bin/env bash
# bench/grpc.sh: volley's gRPC unary calls against ghz's (bojand/ghz, Go, grpc-go), on the
# gRPC reference server (servers/grpc, grpc-go, helloworld.Greeter/SayHello, plain h2c)
# pinned to SERVER_CPU, each client pinned to CLIENT_CPU (one thread, one Go P), closed loop,
# CONCURRENCY calls in flight over CONNECTIONS connections, interleaved (the tools' order
# rotates each repetition):
#
#   ghz --insecure --proto servers/grpc/helloworld.proto --call helloworld.Greeter.SayHello
#       -d '{"name":"volley"}' --connections CONNECTIONS -c CONCURRENCY -z DURATION --cpus 1
#       -O json 127.0.0.1:PORT
#   volley run http://127.0.0.1:PORT/ --grpc helloworld.Greeter/SayHello
#       --proto servers/grpc/helloworld.proto --body '{"name":"volley"}' -c CONNECTIONS
#       --streams CONCURRENCY/CONNECTIONS -t 1 -d DURATION --json FILE
#
# Calls answered OK per client CPU-second (user + sys from /usr/bin/time), medians of REPS and
# every run, and the ratio volley ÷ ghz. An OK call is what each tool counts: in ghz's JSON
# `statusCodeDistribution.OK` (its `count` is every call, any status); in volley's RunResult
# `target.grpc.status_codes["0"]` where it exists, else `requests.completed` minus
# `requests.failed`. ghz's `--cpus 1` sets its GOMAXPROCS to 1 (the JSON's `options.CPUs`
# is checked); its CPU figure includes writing its JSON, which lists every call (up to a
# million) beside the totals. At the end the server is stopped and its `calls N` line (every
# call it answered, servers/README.md) is set against the calls the clients counted. The
# table is rewritten between `<!-- grpc:begin -->` and `<!-- grpc:end -->` in BENCH_MD
# (BENCHMARKS.md). Not part of CI.
#
# ghz is installed once into TOOLS_DIR with `go install github.com/bojand/ghz/cmd/ghz@GHZ_REF`
# (GOBIN=TOOLS_DIR/ghz-GHZ_REF): an explicit version, as the module proxy's `@latest` for ghz
# resolves to an old v0.93.0.
#
# Usage:  bench/grpc.sh                             # 3 reps x 10 s: about 1.5 minutes when idle
#         REPS=1 DURATION=3s bench/grpc.sh          # quick
#         TOOLS=ghz UPDATE_MD=0 bench/grpc.sh       # ghz alone (no volley build)
# Environment (all optional):
#   REPS=3  DURATION=10s  CONNECTIONS=4  CONCURRENCY=128  NAME=volley  CLIENT_CPU=0  SERVER_CPU=1
#   TOOLS="volley ghz"
#   VOLLEY=<path>  VOLLEY_REV=<rev>   as in bench/compare.sh (default: cargo build --release)
#   GHZ=<path>                        a ghz binary to use instead of installing one
#   GHZ_REF=v0.121.0                  the ghz version go install fetches
#   TOOLS_DIR=<dir>     where ghz is installed (default target/bench-tools)
#   OUT_DIR=<dir>       raw outputs (default target/bench-grpc/<UTC time>)
#   BENCH_MD=<file>     Markdown file whose section is rewritten (default BENCHMARKS.md)
#   UPDATE_MD=0         print the results, leave BENCH_MD alone
#   BUSY_MAX=20  WAIT_QUIET=120   wait before each run for other work to drop (bench/lib.sh)
#   TIMEOUT_SLACK=30    seconds a client may run past its duration before it is stopped
# Exit codes: 0 ok, 1 a run failed or its output could not be parsed, 2 missing
# prerequisites / bad settings / a build or install failed (a volley without --grpc is one).
set -euo pipefail

REPS=${REPS:-3}
DURATION=${DURATION:-10s}
CONNECTIONS=${CONNECTIONS:-4}
CONCURRENCY=${CONCURRENCY:-128}
NAME=${NAME:-volley}
CLIENT_CPU=${CLIENT_CPU:-0}
SERVER_CPU=${SERVER_CPU:-1}
TOOLS=${TOOLS:-volley ghz}
GHZ_REF=${GHZ_REF:-v0.121.0}
UPDATE_MD=${UPDATE_MD:-1}
BUSY_MAX=${BUSY_MAX:-20}
WAIT_QUIET=${WAIT_QUIET:-120}
TIMEOUT_SLACK=${TIMEOUT_SLACK:-30}

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
TARGET_DIR=${CARGO_TARGET_DIR:-$ROOT/target}
BENCH_MD=${BENCH_MD:-$ROOT/BENCHMARKS.md}
TOOLS_DIR=${TOOLS_DIR:-$TARGET_DIR/bench-tools}
STAMP=$(date -u +%Y%m%dT%H%M%SZ)
OUT_DIR=${OUT_DIR:-$TARGET_DIR/bench-grpc/$STAMP}
BENCH_TAG=grpc
PROTO=$ROOT/servers/grpc/helloworld.proto
# shellcheck source=bench/lib.sh
source "$ROOT/bench/lib.sh"

[[ $REPS =~ ^[1-9][0-9]*$ ]] || die 2 "REPS must be a positive integer, got '$REPS'"
for v in CONNECTIONS CONCURRENCY; do
    [[ ${!v} =~ ^[1-9][0-9]*$ ]] || die 2 "$v must be a positive integer, got '${!v}'"
done
((CONCURRENCY % CONNECTIONS == 0)) \
    || die 2 "CONCURRENCY ($CONCURRENCY) must be a multiple of CONNECTIONS ($CONNECTIONS): volley runs CONCURRENCY/CONNECTIONS streams on each connection"
STREAMS=$((CONCURRENCY / CONNECTIONS))
[[ $DURATION =~ ^[1-9][0-9]*s$ ]] || die 2 "DURATION must look like 10s, got '$DURATION'"
for v in BUSY_MAX WAIT_QUIET TIMEOUT_SLACK; do
    [[ ${!v} =~ ^[0-9]+$ ]] || die 2 "$v must be a non-negative integer, got '${!v}'"
done
[[ $NAME =~ ^[A-Za-z0-9._-]+$ && $NAME != fail ]] || die 2 "NAME must be a plain word other than 'fail' (the server refuses it), got '$NAME'"
[[ $GHZ_REF =~ ^(v[0-9]+\.[0-9]+\.[0-9]+|latest)$ ]] || die 2 "GHZ_REF must look like v0.121.0, got '$GHZ_REF'"
read -r -a tools <<<"$TOOLS"
((${#tools[@]})) || die 2 "TOOLS is empty (volley ghz)"
for t in "${tools[@]}"; do [[ $t =~ ^(volley|ghz)$ ]] || die 2 "unknown tool '$t' in TOOLS (volley ghz)"; done
has_tool() { [[ " $TOOLS " == *" $1 "* ]]; }

for c in go taskset python3 timeout; do
    command -v "$c" >/dev/null 2>&1 || die 2 "$c is missing"
done
[[ -x /usr/bin/time ]] || die 2 "/usr/bin/time is missing (apt-get install time)"
[[ -f $PROTO ]] || die 2 "$PROTO is missing"
[[ $CLIENT_CPU != "$SERVER_CPU" ]] || die 2 "CLIENT_CPU and SERVER_CPU must differ"
taskset -c "$CLIENT_CPU" true 2>/dev/null || die 2 "cannot pin to CLIENT_CPU=$CLIENT_CPU"
taskset -c "$SERVER_CPU" true 2>/dev/null || die 2 "cannot pin to SERVER_CPU=$SERVER_CPU"

# ---------------------------------------------------------------- clients
# The module version a Go binary was built from (`go version -m`), or "unknown".
go_mod_version() { go version -m "$1" 2>/dev/null | awk '$1 == "mod" { print $3; exit }' | grep . || echo unknown; }

GHZ_DESC="ghz: not measured"
if has_tool ghz; then
    if [[ -n ${GHZ:-} ]]; then
        [[ -x $GHZ ]] || die 2 "GHZ=$GHZ is not executable"
    else
        gbin=$TOOLS_DIR/ghz-$GHZ_REF
        GHZ=$gbin/ghz
        if [[ ! -x $GHZ ]]; then
            log "go install github.com/bojand/ghz/cmd/ghz@$GHZ_REF into $gbin (once)"
            mkdir -p "$gbin"
            GOBIN=$gbin nice -n 19 go install "github.com/bojand/ghz/cmd/ghz@$GHZ_REF" >>"$TOOLS_DIR/ghz-install.log" 2>&1 \
                || { rm -f "$GHZ"; die 2 "go install of ghz $GHZ_REF failed; see $TOOLS_DIR/ghz-install.log"; }
            [[ -x $GHZ ]] || die 2 "go install of ghz $GHZ_REF produced no $GHZ"
        fi
    fi
    # ghz --version prints "dev" when built by go install: the module version says more
    GHZ_DESC="ghz $(go_mod_version "$GHZ") ($(go version "$GHZ" 2>/dev/null | awk '{ print $2 }'), grpc-go $(go version -m "$GHZ" 2>/dev/null | awk '$1 == "dep" && $2 == "google.golang.org/grpc" { print $3 }'))"
fi
VOLLEY_VERSION="volley: not measured"
if has_tool volley; then
    if [[ -z ${VOLLEY:-} && -z ${VOLLEY_REV:-} ]]; then
        # build_volley assumes target/; honour CARGO_TARGET_DIR
        command -v cargo >/dev/null 2>&1 || die 2 "cargo not found (or set VOLLEY=/path/to/volley)"
        log "cargo build --release"
        (cd "$ROOT" && cargo build --release --quiet) || die 2 "cargo build --release failed"
        VOLLEY=$TARGET_DIR/release/volley
    fi
    build_volley
    run_help=$("$VOLLEY" run --help 2>&1) || true
    [[ $run_help == *--grpc* ]] || die 2 "$VOLLEY has no 'run --grpc' (TOOLS=ghz measures ghz alone)"
fi

# ---------------------------------------------------------------- server
mkdir -p "$OUT_DIR"
TMP=$(mktemp -d -t volley-grpc.XXXXXX)
SERVER_PID=
CLIENT_PID=
cleanup() {
    local rc=$?
    if [[ -n $CLIENT_PID ]]; then kill -TERM "$CLIENT_PID" 2>/dev/null || true; wait "$CLIENT_PID" 2>/dev/null || true; fi
    stop_pid "$SERVER_PID"
    rm -rf "$TMP"
    exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

log "go build servers/grpc"
(cd "$ROOT/servers/grpc" && go build -o "$TMP/server" .) >"$OUT_DIR/grpc-build.log" 2>&1 \
    || die 2 "go build of servers/grpc failed; see $OUT_DIR/grpc-build.log"
GO_VERSION=$(go env GOVERSION)
GRPC_GO_VERSION=$(cd "$ROOT/servers/grpc" && go list -m -f '{{.Version}}' google.golang.org/grpc) \
    || die 2 "go list -m google.golang.org/grpc failed in servers/grpc"
PORT=$(free_port)
PORT=$PORT taskset -c "$SERVER_CPU" "$TMP/server" >"$OUT_DIR/server.out" 2>&1 &
SERVER_PID=$!
port_open() { python3 -c 'import socket, sys; socket.create_connection(("127.0.0.1", int(sys.argv[1])), timeout=1).close()' "$PORT"; }
for _ in $(seq 100); do port_open 2>/dev/null && break; sleep 0.05; done
port_open 2>/dev/null || die 2 "the gRPC server did not listen on port $PORT; see $OUT_DIR/server.out"
server_ticks() { local f; f=$(cat "/proc/$SERVER_PID/stat") && f=${f##*) } && read -r -a f <<<"$f" && echo $((f[11] + f[12])); }
HZ=$(getconf CLK_TCK)
BODY="{\"name\":\"$NAME\"}"

# The command line of TOOL writing to BASE.*: sets CMD (and what a reader sees).
tool_cmd() {
    local tool=$1 base=$2
    case $tool in
        ghz) CMD=("$GHZ" --insecure --proto "$PROTO" --call helloworld.Greeter.SayHello -d "$BODY"
            --connections "$CONNECTIONS" -c "$CONCURRENCY" -z "$DURATION" --cpus 1 -O json "127.0.0.1:$PORT") ;;
        volley) CMD=("$VOLLEY" run "http://127.0.0.1:$PORT/" --grpc helloworld.Greeter/SayHello --proto "$PROTO"
            --body "$BODY" -c "$CONNECTIONS" --streams "$STREAMS" -t 1 -d "$DURATION" --json "$base.json") ;;
    esac
}

# One run of TOOL (label LABEL): appends a line to runs.tsv and sets LINE to it:
# label tool ok not_ok elapsed_s user_s sys_s rss_kb server_cpu_s busy_pct
run_tool() {
    local tool=$1 label=$2 base=$OUT_DIR/$1-$2 busy rc=0 t0 t1 limit parsed u s m
    tool_cmd "$tool" "$base"
    busy=$(wait_quiet)
    limit=$((${DURATION%s} + TIMEOUT_SLACK))
    t0=$(server_ticks)
    # ghz writes its JSON on stdout, volley its text report (its JSON goes to its file)
    /usr/bin/time -f '%U %S %M' -o "$base.time" \
        taskset -c "$CLIENT_CPU" timeout -k 5 "$limit" "${CMD[@]}" >"$base.out" 2>"$base.err" &
    CLIENT_PID=$!
    wait "$CLIENT_PID" || rc=$?
    CLIENT_PID=
    t1=$(server_ticks)
    kill -0 "$SERVER_PID" 2>/dev/null || die 1 "the gRPC server died during $tool $label; see $OUT_DIR/server.out"
    if ((rc != 0)); then
        tail -n 20 "$base.out" "$base.err" >&2
        ((rc == 124 || rc == 137)) && die 1 "$tool $label did not stop within ${limit}s: see $base.err"
        die 1 "$tool $label exited with $rc: see $base.out, $base.err"
    fi
    parsed=$(python3 - "$tool" "$base" <<'PY'
import json, sys
tool, base = sys.argv[1], sys.argv[2]
def fail(why):
    print(f"{tool}: {why}", file=sys.stderr)
    sys.exit(1)
try:
    d = json.load(open(base + (".out" if tool == "ghz" else ".json")))
except Exception as e:
    fail(f"no JSON ({e})")
if tool == "ghz":
    if d.get("options", {}).get("CPUs") != 1:
        fail(f"options.CPUs is {d.get('options', {}).get('CPUs')!r}, not 1 (--cpus 1)")
    codes = d.get("statusCodeDistribution") or {}
    ok = codes.get("OK", 0)
    not_ok = d["count"] - ok
    elapsed = d["total"] / 1e9  # a Go time.Duration: nanoseconds
else:
    req = d["requests"]
    codes = ((d.get("target") or {}).get("grpc") or {}).get("status_codes")
    if codes is not None:
        ok = codes.get("0", 0)
        not_ok = sum(codes.values()) - ok
    else:
        ok = req["completed"] - req.get("failed", 0)
        not_ok = req.get("failed", 0)
    elapsed = d["elapsed_s"]
if ok <= 0:
    fail(f"no call answered OK (status counts: {codes})")
print(ok, not_ok, elapsed)
PY
    ) || die 1 "$tool $label: its output could not be parsed (see $base.out, $base.err)"
    read -r u s m <"$base.time"
    LINE=$(printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s' "$label" "$tool" "${parsed// /$'\t'}" "$u" "$s" "$m" \
        "$(python3 -c "print(($t1 - $t0) / $HZ)")" "$busy")
    printf '%s\n' "$LINE" >>"$OUT_DIR/runs.tsv"
}

printf 'label\ttool\tok\tnot_ok\telapsed_s\tuser_s\tsys_s\trss_kb\tserver_cpu_s\tbusy_pct\n' >"$OUT_DIR/runs.tsv"
n=${#tools[@]}
for rep in $(seq "$REPS"); do
    # the order rotates: each tool goes first in turn
    for ((k = 0; k < n; k++)); do
        t=${tools[$(((k + rep - 1) % n))]}
        run_tool "$t" "$rep"
        IFS=$'\t' read -r _ _ ok not_ok _ u s _ _ busy <<<"$LINE"
        log "rep $rep $t: $ok calls OK ($not_ok not OK), $(python3 -c "print(round($u + $s, 2))") client CPU-s (machine ${busy}% busy before)"
    done
done

# The server's own count: every call it answered over the session, printed when it stops.
stop_pid "$SERVER_PID"
SERVER_PID=
SERVER_CALLS=$(sed -n 's/^calls \([0-9][0-9]*\)$/\1/p' "$OUT_DIR/server.out" | tail -n1)
[[ -n $SERVER_CALLS ]] || die 1 "the gRPC server printed no 'calls N' line when stopped; see $OUT_DIR/server.out"
log "the server answered $SERVER_CALLS calls"

# ---------------------------------------------------------------- report
commands=""
for t in "${tools[@]}"; do
    tool_cmd "$t" "$t-repN"
    commands+="    $(quote taskset -c "$CLIENT_CPU" "${CMD[@]}" | sed -e "s#$TOOLS_DIR/#\$TOOLS_DIR/#g" -e "s#$TARGET_DIR/#target/#g" -e "s#$ROOT/##g" -e "s#$TMP#\$TMP#g")"$'\n'
done
header="Run $(date -u +%Y-%m-%dT%H:%M:%SZ) by \`bench/grpc.sh\` (REPS=$REPS, DURATION=$DURATION, CONNECTIONS=$CONNECTIONS, CONCURRENCY=$CONCURRENCY, TOOLS=\"$TOOLS\"); servers/grpc (grpc-go $GRPC_GO_VERSION, $GO_VERSION, h2c) on CPU $SERVER_CPU, each client on CPU $CLIENT_CPU; $VOLLEY_VERSION; $GHZ_DESC; $(uname -sr), $(grep -m1 '^model name' /proc/cpuinfo | sed 's/^[^:]*: *//')."
section=$(HEADER="$header" COMMANDS="$commands" SERVER_CALLS="$SERVER_CALLS" python3 - "$OUT_DIR/runs.tsv" <<'PY'
import csv, os, statistics, sys
rows = list(csv.DictReader(open(sys.argv[1]), delimiter="\t"))
for r in rows:
    r["cpu"] = float(r["user_s"]) + float(r["sys_s"])
    r["per_cpu"] = int(r["ok"]) / r["cpu"] if r["cpu"] > 0 else float("inf")
    r["rate"] = int(r["ok"]) / float(r["elapsed_s"])
    r["server_pct"] = 100 * float(r["server_cpu_s"]) / float(r["elapsed_s"])
tools = list(dict.fromkeys(r["tool"] for r in rows))
name = {"volley": "volley run --grpc --streams", "ghz": "ghz --connections -c --cpus 1"}
out = [os.environ["HEADER"], "", "| client | OK calls per client CPU-second (median) | runs | OK calls/s (median) | client CPU-s per run (median) |",
       "|---|---:|---|---:|---:|"]
med = {}
for t in tools:
    rs = [r for r in rows if r["tool"] == t]
    med[t] = statistics.median(r["per_cpu"] for r in rs)
    runs = ", ".join(f"{r['per_cpu']:,.0f}" for r in rs)
    out.append(f"| {name[t]} | {med[t]:,.0f} | {runs} | "
               f"{statistics.median(r['rate'] for r in rs):,.0f} | {statistics.median(r['cpu'] for r in rs):.2f} |")
out.append("")
if "volley" in med and "ghz" in med:
    out.append(f"volley ÷ ghz in OK calls per client CPU-second: **{med['volley'] / med['ghz']:.2f}×**.")
else:
    out.append("volley ÷ ghz: not measured (one tool only).")
out += ["", "Every run, in the order run (server CPU is the gRPC server's user + sys over the run; "
        "busy is the machine's load from other work just before it):", "",
        "| run | client | OK calls | not OK | OK calls/s | client CPU-s (user + sys) | OK calls per client CPU-s | client RSS | server CPU | busy |",
        "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|"]
for r in rows:
    out.append(f"| {r['label']} | {r['tool']} | {int(r['ok']):,} | {int(r['not_ok']):,} | {r['rate']:,.0f} | "
               f"{float(r['user_s']):.2f} + {float(r['sys_s']):.2f} | {r['per_cpu']:,.0f} | {int(r['rss_kb']) / 1024:.1f} MiB | "
               f"{r['server_pct']:.0f} % | {r['busy_pct']} % |")
ok = sum(int(r["ok"]) for r in rows)
not_ok = sum(int(r["not_ok"]) for r in rows)
server = int(os.environ["SERVER_CALLS"])
out += ["", f"Counts: the clients counted {ok:,} calls OK and {not_ok:,} not OK over the session; the server's "
        f"`calls` line says it answered {server:,} ({server - ok:+,} against the OK calls: answered, "
        "but not counted OK by a client, such as the calls cut off when a run ends)."]
out += ["", "Commands (`$TOOLS_DIR` is target/bench-tools unless set):", "", os.environ["COMMANDS"].rstrip()]
print("\n".join(out))
PY
) || die 1 "the report could not be rendered from $OUT_DIR/runs.tsv"
printf '%s\n' "$section" | tee "$OUT_DIR/section.md"
if [[ $UPDATE_MD == 1 ]]; then
    SECTION="$section" python3 - "$BENCH_MD" <<'PY'
import os, sys
path = sys.argv[1]
text = open(path).read() if os.path.exists(path) else "# Benchmarks\n"
begin, end = "<!-- grpc:begin -->", "<!-- grpc:end -->"
body = begin + "\n" + os.environ["SECTION"] + "\n" + end
if begin in text:
    a, b = text.index(begin), text.index(end) + len(end)
    text = text[:a] + body + text[b:]
else:
    text = text.rstrip() + "\n\n## gRPC unary (`bench/grpc.sh`)\n\n" + body + "\n"
open(path, "w").write(text)
PY
    log "rewrote the grpc section of $BENCH_MD"
fi
