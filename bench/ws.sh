#!/usr/bin/env bash
# bench/ws.sh: volley's WebSocket echo load against gcannon's (MDA2AV/gcannon, C on io_uring),
# on the Go reference server's /ws (servers/go, gorilla/websocket) pinned to SERVER_CPU, each
# client one thread pinned to CLIENT_CPU, closed loop, interleaved (the tools' order rotates
# each repetition):
#
#   gcannon http://127.0.0.1:PORT/ws --ws -c CONNECTIONS -t 1 -d DURATION -p PIPELINE --ws-msg MESSAGE --json
#   volley run ws://127.0.0.1:PORT/ws -c CONNECTIONS -t 1 -d DURATION --pipeline PIPELINE --body MESSAGE --json FILE
#
# Messages echoed per client CPU-second (user + sys from /usr/bin/time), medians of REPS and
# every run, and the ratio volley ÷ gcannon. A message echoed is what each tool counts:
# `requests.completed` in volley's RunResult, `ws_frames` in gcannon's JSON (every frame it
# received after its 100 ms warm-up; its CPU figure includes the warm-up). One extra run per
# tool (COUNT_DURATION) sets its count beside the server's own (`GET /ws/count` before and
# after). The table is rewritten between `<!-- ws:begin -->` and `<!-- ws:end -->` in BENCH_MD
# (BENCHMARKS.md). Not part of CI.
#
# gcannon needs liburing >= 2.4 (Debian 12 has 2.3): both are built from git once, into
# TOOLS_DIR: liburing at LIBURING_REF, static only (configure --prefix, make -C src
# ENABLE_SHARED=0), and gcannon at GCANNON_REF with its own Makefile, CPATH and LIBRARY_PATH
# pointing at that liburing, so the binary links it statically. gcannon saves a run history
# in $HOME/.gcannon: its runs get a HOME of their own under the run's temporary folder.
#
# Usage:  bench/ws.sh                              # 3 reps x 10 s: about 1.5 minutes when idle
#         REPS=1 DURATION=3s bench/ws.sh           # quick
#         TOOLS=gcannon UPDATE_MD=0 bench/ws.sh    # gcannon alone (no volley build)
# Environment (all optional):
#   REPS=3  DURATION=10s  CONNECTIONS=16  PIPELINE=16  MESSAGE=hello  CLIENT_CPU=0  SERVER_CPU=1
#   TOOLS="volley gcannon"  COUNT_DURATION=5s
#   VOLLEY=<path>  VOLLEY_REV=<rev>   as in bench/compare.sh (default: cargo build --release)
#   GCANNON=<path>                    a gcannon binary to use instead of building one
#   GCANNON_REPO=https://github.com/MDA2AV/gcannon.git  GCANNON_REF=43b30bc24c8c... (0.5.3)
#   LIBURING_REPO=https://github.com/axboe/liburing.git  LIBURING_REF=liburing-2.15
#   TOOLS_DIR=<dir>     where gcannon and liburing are built (default target/bench-tools)
#   OUT_DIR=<dir>       raw outputs (default target/bench-ws/<UTC time>)
#   BENCH_MD=<file>     Markdown file whose section is rewritten (default BENCHMARKS.md)
#   UPDATE_MD=0         print the results, leave BENCH_MD alone
#   BUSY_MAX=20  WAIT_QUIET=120   wait before each run for other work to drop (bench/lib.sh)
#   TIMEOUT_SLACK=30    seconds a client may run past its duration before it is stopped
# Exit codes: 0 ok, 1 a run failed or its output could not be parsed, 2 missing
# prerequisites / bad settings / a build failed.
set -euo pipefail

REPS=${REPS:-3}
DURATION=${DURATION:-10s}
CONNECTIONS=${CONNECTIONS:-16}
PIPELINE=${PIPELINE:-16}
MESSAGE=${MESSAGE:-hello}
CLIENT_CPU=${CLIENT_CPU:-0}
SERVER_CPU=${SERVER_CPU:-1}
TOOLS=${TOOLS:-volley gcannon}
COUNT_DURATION=${COUNT_DURATION:-5s}
GCANNON_REPO=${GCANNON_REPO:-https://github.com/MDA2AV/gcannon.git}
GCANNON_REF=${GCANNON_REF:-43b30bc24c8cc6aab37dd7d718b47ffb985e6558}
LIBURING_REPO=${LIBURING_REPO:-https://github.com/axboe/liburing.git}
LIBURING_REF=${LIBURING_REF:-liburing-2.15}
UPDATE_MD=${UPDATE_MD:-1}
BUSY_MAX=${BUSY_MAX:-20}
WAIT_QUIET=${WAIT_QUIET:-120}
TIMEOUT_SLACK=${TIMEOUT_SLACK:-30}

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
TARGET_DIR=${CARGO_TARGET_DIR:-$ROOT/target}
BENCH_MD=${BENCH_MD:-$ROOT/BENCHMARKS.md}
TOOLS_DIR=${TOOLS_DIR:-$TARGET_DIR/bench-tools}
STAMP=$(date -u +%Y%m%dT%H%M%SZ)
OUT_DIR=${OUT_DIR:-$TARGET_DIR/bench-ws/$STAMP}
BENCH_TAG=ws
# shellcheck source=bench/lib.sh
source "$ROOT/bench/lib.sh"

[[ $REPS =~ ^[1-9][0-9]*$ ]] || die 2 "REPS must be a positive integer, got '$REPS'"
for v in CONNECTIONS PIPELINE; do
    [[ ${!v} =~ ^[1-9][0-9]*$ ]] || die 2 "$v must be a positive integer, got '${!v}'"
done
((PIPELINE <= 64)) || die 2 "PIPELINE must be at most 64 (gcannon's limit), got $PIPELINE"
for v in DURATION COUNT_DURATION; do
    [[ ${!v} =~ ^[1-9][0-9]*s$ ]] || die 2 "$v must look like 10s, got '${!v}'"
done
for v in BUSY_MAX WAIT_QUIET TIMEOUT_SLACK; do
    [[ ${!v} =~ ^[0-9]+$ ]] || die 2 "$v must be a non-negative integer, got '${!v}'"
done
[[ -n $MESSAGE && $MESSAGE != -* ]] || die 2 "MESSAGE must be non-empty and not start with '-'"
read -r -a tools <<<"$TOOLS"
((${#tools[@]})) || die 2 "TOOLS is empty (volley gcannon)"
for t in "${tools[@]}"; do [[ $t =~ ^(volley|gcannon)$ ]] || die 2 "unknown tool '$t' in TOOLS (volley gcannon)"; done
has_tool() { [[ " $TOOLS " == *" $1 "* ]]; }

for c in go git make taskset python3 timeout; do
    command -v "$c" >/dev/null 2>&1 || die 2 "$c is missing"
done
[[ -x /usr/bin/time ]] || die 2 "/usr/bin/time is missing (apt-get install time)"
[[ $CLIENT_CPU != "$SERVER_CPU" ]] || die 2 "CLIENT_CPU and SERVER_CPU must differ"
taskset -c "$CLIENT_CPU" true 2>/dev/null || die 2 "cannot pin to CLIENT_CPU=$CLIENT_CPU"
taskset -c "$SERVER_CPU" true 2>/dev/null || die 2 "cannot pin to SERVER_CPU=$SERVER_CPU"

# ---------------------------------------------------------------- clients
# build_gcannon: liburing (static) and gcannon from git into TOOLS_DIR, once per pair of refs;
# sets GCANNON and LIBURING_VERSION.
build_gcannon() {
    local lref=${LIBURING_REF//[^A-Za-z0-9._-]/_} gref=${GCANNON_REF//[^A-Za-z0-9._-]/_}
    local lsrc=$TOOLS_DIR/$lref-src prefix=$TOOLS_DIR/$lref
    local gdir=$TOOLS_DIR/gcannon-${gref:0:12}-$lref blog=$TOOLS_DIR/gcannon-build.log
    GCANNON=$gdir/gcannon
    command -v cc >/dev/null 2>&1 || command -v gcc >/dev/null 2>&1 || die 2 "a C compiler is missing (apt-get install build-essential)"
    mkdir -p "$TOOLS_DIR"
    if [[ ! -f $prefix/lib/liburing.a || ! -f $prefix/include/liburing.h ]]; then
        log "building liburing $LIBURING_REF from $LIBURING_REPO into $prefix (once)"
        rm -rf "$lsrc" "$prefix"
        {
            git clone --quiet "$LIBURING_REPO" "$lsrc" &&
                git -C "$lsrc" -c advice.detachedHead=false checkout --quiet "$LIBURING_REF" &&
                (cd "$lsrc" && ./configure --prefix="$prefix") &&
                make -C "$lsrc/src" ENABLE_SHARED=0 &&
                make -C "$lsrc/src" ENABLE_SHARED=0 install
        } >>"$blog" 2>&1 || die 2 "building liburing $LIBURING_REF failed; see $blog"
    fi
    local vh=$prefix/include/liburing/io_uring_version.h major minor
    [[ -f $vh ]] || die 2 "liburing $LIBURING_REF is older than 2.4 (no io_uring_version.h); gcannon needs >= 2.4"
    major=$(awk '/define IO_URING_VERSION_MAJOR/ { print $3 }' "$vh")
    minor=$(awk '/define IO_URING_VERSION_MINOR/ { print $3 }' "$vh")
    ((major > 2 || (major == 2 && minor >= 4))) || die 2 "liburing $LIBURING_REF is $major.$minor; gcannon needs >= 2.4"
    LIBURING_VERSION=$major.$minor
    [[ -x $GCANNON ]] && return 0
    log "building gcannon $GCANNON_REF from $GCANNON_REPO against liburing $major.$minor (once)"
    rm -rf "$gdir"
    {
        git clone --quiet "$GCANNON_REPO" "$gdir" &&
            git -C "$gdir" -c advice.detachedHead=false checkout --quiet "$GCANNON_REF" &&
            CPATH=$prefix/include LIBRARY_PATH=$prefix/lib make -C "$gdir"
    } >>"$blog" 2>&1 || { rm -f "$GCANNON"; die 2 "building gcannon $GCANNON_REF failed; see $blog"; }
    [[ -x $GCANNON ]] || die 2 "gcannon's make produced no $GCANNON; see $blog"
    ! ldd "$GCANNON" 2>/dev/null | grep -q liburing || die 2 "$GCANNON links liburing dynamically; see $blog"
}

GCANNON_DESC="gcannon: not measured"
if has_tool gcannon; then
    if [[ -n ${GCANNON:-} ]]; then
        [[ -x $GCANNON ]] || die 2 "GCANNON=$GCANNON is not executable"
        GCANNON_DESC="gcannon ($GCANNON)"
    else
        build_gcannon
        gdir=$(dirname "$GCANNON")
        GCANNON_DESC="gcannon $(sed -n 's/^#define GCANNON_VERSION "\(.*\)"$/\1/p' "$gdir/include/constants.h") (git $(git -C "$gdir" rev-parse --short HEAD)) with liburing $LIBURING_VERSION ($LIBURING_REF, static)"
    fi
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
fi

# ---------------------------------------------------------------- server
mkdir -p "$OUT_DIR"
TMP=$(mktemp -d -t volley-ws.XXXXXX)
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

log "go build servers/go"
(cd "$ROOT/servers/go" && go build -o "$TMP/server" .) >"$OUT_DIR/go-build.log" 2>&1 \
    || die 2 "go build of servers/go failed; see $OUT_DIR/go-build.log"
GO_VERSION=$(go env GOVERSION)
GORILLA_VERSION=$(cd "$ROOT/servers/go" && go list -m -f '{{.Version}}' github.com/gorilla/websocket) \
    || die 2 "go list -m github.com/gorilla/websocket failed in servers/go"
PORT=$(free_port)
PORT=$PORT taskset -c "$SERVER_CPU" "$TMP/server" >"$OUT_DIR/server.out" 2>&1 &
SERVER_PID=$!
ws_count() { python3 -c 'import sys, urllib.request; print(int(urllib.request.urlopen(sys.argv[1], timeout=5).read()))' "http://127.0.0.1:$PORT/ws/count"; }
for _ in $(seq 100); do ws_count >/dev/null 2>&1 && break; sleep 0.05; done
ws_count >/dev/null 2>&1 || die 2 "the Go server did not answer /ws/count on port $PORT; see $OUT_DIR/server.out"
server_ticks() { local f; f=$(cat "/proc/$SERVER_PID/stat") && f=${f##*) } && read -r -a f <<<"$f" && echo $((f[11] + f[12])); }
HZ=$(getconf CLK_TCK)
mkdir -p "$TMP/home"

# The command line of TOOL for DURATION writing to BASE.*: sets CMD (and what a reader sees).
tool_cmd() {
    local tool=$1 dur=$2 base=$3
    case $tool in
        gcannon) CMD=(env "HOME=$TMP/home" "$GCANNON" "http://127.0.0.1:$PORT/ws" --ws -c "$CONNECTIONS" -t 1 -d "$dur"
            -p "$PIPELINE" --ws-msg "$MESSAGE" --json) ;;
        volley) CMD=("$VOLLEY" run "ws://127.0.0.1:$PORT/ws" -c "$CONNECTIONS" -t 1 -d "$dur"
            --pipeline "$PIPELINE" --body "$MESSAGE" --json "$base.json") ;;
    esac
}

# One run of TOOL (label LABEL, DURATION DUR): appends a line to runs.tsv and sets LINE to it:
# label tool messages elapsed_s user_s sys_s rss_kb server_cpu_s server_echoed busy_pct
run_tool() {
    local tool=$1 label=$2 dur=$3 base=$OUT_DIR/$1-$2 busy rc=0 t0 t1 c0 c1 limit parsed u s m
    tool_cmd "$tool" "$dur" "$base"
    busy=$(wait_quiet)
    limit=$((${dur%s} + TIMEOUT_SLACK))
    c0=$(ws_count) t0=$(server_ticks)
    # gcannon writes its JSON on stdout, volley its text report (its JSON goes to its file)
    /usr/bin/time -f '%U %S %M' -o "$base.time" \
        taskset -c "$CLIENT_CPU" timeout -k 5 "$limit" "${CMD[@]}" >"$base.out" 2>"$base.err" &
    CLIENT_PID=$!
    wait "$CLIENT_PID" || rc=$?
    CLIENT_PID=
    sleep 0.3 # the server's last echoes
    c1=$(ws_count) t1=$(server_ticks)
    kill -0 "$SERVER_PID" 2>/dev/null || die 1 "the Go server died during $tool $label; see $OUT_DIR/server.out"
    if ((rc != 0)); then
        tail -n 20 "$base.out" "$base.err" >&2
        ((rc == 124 || rc == 137)) && die 1 "$tool $label did not stop within ${limit}s: see $base.err"
        die 1 "$tool $label exited with $rc: see $base.out, $base.err"
    fi
    parsed=$(python3 - "$tool" "$base" "$CONNECTIONS" <<'PY'
import json, sys
tool, base, conns = sys.argv[1], sys.argv[2], int(sys.argv[3])
def fail(why):
    print(f"{tool}: {why}", file=sys.stderr)
    sys.exit(1)
try:
    d = json.load(open(base + (".out" if tool == "gcannon" else ".json")))
except Exception as e:
    fail(f"no JSON ({e})")
if tool == "gcannon":
    if d.get("mode") != "websocket":
        fail(f"mode is {d.get('mode')!r}, not websocket")
    # it exits 0 even when every upgrade is refused (and reconnects in a loop)
    if d.get("ws_upgrades", 0) < conns:
        fail(f"{d.get('ws_upgrades')} of {conns} connections upgraded (status {d.get('status')})")
    n, elapsed = d["ws_frames"], d["elapsed_sec"]
else:
    n, elapsed = d["requests"]["completed"], d["elapsed_s"]
if n <= 0:
    fail("no message echoed")
print(n, elapsed)
PY
    ) || die 1 "$tool $label: its output could not be parsed (see $base.out, $base.err)"
    read -r u s m <"$base.time"
    LINE=$(printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s' "$label" "$tool" "${parsed// /$'\t'}" "$u" "$s" "$m" \
        "$(python3 -c "print(($t1 - $t0) / $HZ)")" "$((c1 - c0))" "$busy")
    printf '%s\n' "$LINE" >>"$OUT_DIR/runs.tsv"
}

printf 'label\ttool\tmessages\telapsed_s\tuser_s\tsys_s\trss_kb\tserver_cpu_s\tserver_echoed\tbusy_pct\n' >"$OUT_DIR/runs.tsv"
n=${#tools[@]}
for rep in $(seq "$REPS"); do
    # the order rotates: each tool goes first in turn
    for ((k = 0; k < n; k++)); do
        t=${tools[$(((k + rep - 1) % n))]}
        run_tool "$t" "$rep" "$DURATION"
        IFS=$'\t' read -r _ _ msgs _ u s _ _ echoed busy <<<"$LINE"
        log "rep $rep $t: $msgs messages, $(python3 -c "print(round($u + $s, 2))") client CPU-s (the server echoed $echoed; machine ${busy}% busy before)"
    done
done
for t in "${tools[@]}"; do
    run_tool "$t" count "$COUNT_DURATION"
    IFS=$'\t' read -r _ _ msgs _ _ _ _ _ echoed _ <<<"$LINE"
    log "count $t: $msgs messages counted, the server echoed $echoed"
done

# ---------------------------------------------------------------- report
commands=""
for t in "${tools[@]}"; do
    tool_cmd "$t" "$DURATION" "$t-repN"
    commands+="    $(quote taskset -c "$CLIENT_CPU" "${CMD[@]}" | sed -e "s#$TOOLS_DIR/#\$TOOLS_DIR/#g" -e "s#$ROOT/##g" -e "s#$TARGET_DIR/#target/#g" -e "s#$TMP#\$TMP#g")"$'\n'
done
header="Run $(date -u +%Y-%m-%dT%H:%M:%SZ) by \`bench/ws.sh\` (REPS=$REPS, DURATION=$DURATION, CONNECTIONS=$CONNECTIONS, PIPELINE=$PIPELINE, MESSAGE=$MESSAGE, TOOLS=\"$TOOLS\"); servers/go ($GO_VERSION, gorilla/websocket $GORILLA_VERSION) on CPU $SERVER_CPU, each client one thread on CPU $CLIENT_CPU; $VOLLEY_VERSION; $GCANNON_DESC; $(uname -sr), $(grep -m1 '^model name' /proc/cpuinfo | sed 's/^[^:]*: *//')."
section=$(HEADER="$header" COMMANDS="$commands" python3 - "$OUT_DIR/runs.tsv" <<'PY'
import csv, os, statistics, sys
rows = list(csv.DictReader(open(sys.argv[1]), delimiter="\t"))
for r in rows:
    r["cpu"] = float(r["user_s"]) + float(r["sys_s"])
    r["per_cpu"] = int(r["messages"]) / r["cpu"] if r["cpu"] > 0 else float("inf")
    r["rate"] = int(r["messages"]) / float(r["elapsed_s"])
    r["server_pct"] = 100 * float(r["server_cpu_s"]) / float(r["elapsed_s"])
timed = [r for r in rows if r["label"] != "count"]
tools = list(dict.fromkeys(r["tool"] for r in timed))
name = {"volley": "volley run ws:// --pipeline", "gcannon": "gcannon --ws -p"}
out = [os.environ["HEADER"], "", "| client | messages per client CPU-second (median) | runs | messages/s (median) | client CPU-s per run (median) |",
       "|---|---:|---|---:|---:|"]
med = {}
for t in tools:
    rs = [r for r in timed if r["tool"] == t]
    med[t] = statistics.median(r["per_cpu"] for r in rs)
    runs = ", ".join(f"{r['per_cpu']:,.0f}" for r in rs)
    out.append(f"| {name[t]} | {med[t]:,.0f} | {runs} | "
               f"{statistics.median(r['rate'] for r in rs):,.0f} | {statistics.median(r['cpu'] for r in rs):.2f} |")
out.append("")
if "volley" in med and "gcannon" in med:
    out.append(f"volley ÷ gcannon in messages per client CPU-second: **{med['volley'] / med['gcannon']:.2f}×**.")
else:
    out.append("volley ÷ gcannon: not measured (one tool only).")
out += ["", "Every run, in the order run (server CPU is the Go server's user + sys over the run; "
        "busy is the machine's load from other work just before it):", "",
        "| run | client | messages | messages/s | client CPU-s (user + sys) | messages per client CPU-s | client RSS | server CPU | server echoed | busy |",
        "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|"]
for r in rows:
    out.append(f"| {r['label']} | {r['tool']} | {int(r['messages']):,} | {r['rate']:,.0f} | {float(r['user_s']):.2f} + {float(r['sys_s']):.2f} | "
               f"{r['per_cpu']:,.0f} | {int(r['rss_kb']) / 1024:.1f} MiB | {r['server_pct']:.0f} % | {int(r['server_echoed']):,} | {r['busy_pct']} % |")
out += ["", "Counts (one more run of each client, the server's `/ws/count` read before and after it):", ""]
for r in rows:
    if r["label"] == "count":
        field = "`requests.completed`" if r["tool"] == "volley" else "`ws_frames`"
        diff = int(r["server_echoed"]) - int(r["messages"])
        out.append(f"- {r['tool']}: {field} {int(r['messages']):,}; the server echoed {int(r['server_echoed']):,} "
                   f"({diff:+,}: echoed but not counted by the client).")
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
begin, end = "<!-- ws:begin -->", "<!-- ws:end -->"
body = begin + "\n" + os.environ["SECTION"] + "\n" + end
if begin in text:
    a, b = text.index(begin), text.index(end) + len(end)
    text = text[:a] + body + text[b:]
else:
    text = text.rstrip() + "\n\n## WebSocket echo (`bench/ws.sh`)\n\n" + body + "\n"
open(path, "w").write(text)
PY
    log "rewrote the ws section of $BENCH_MD"
fi
