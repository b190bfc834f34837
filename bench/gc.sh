#!/usr/bin/env bash
# bench/gc.sh: the long-tail experiment of suites/seeds.toml (wrk2-style open loop: 500 req/s
# over 500 connections, GET / and POST 1 KiB / 4 KiB, percentiles to 99.999 %) over the JVM
# servers of the study (jetty, netty, the JDK's java) and go and node, every server with its GC
# log on (`runtime` in the suite), and writes the GC table into the <!-- gc:begin/end -->
# section of BENCHMARKS.md: per server and cell, the latency tail, the pauses (count, p50, p99,
# max), the allocation (GB, MB/s) and the share of the requests at or above p99.9 that
# overlapped a pause.
#
# The suite's scaled durations are the default (5 s warm-up + 20 s, once); the study's full
# version is WARMUP=2m DURATION=3h REPS=1 (about 3 h per cell: 15 cells).
#
# Environment (all optional):
#   WARMUP=5s  DURATION=20s  REPS=1  SERVERS="go node java jetty netty"
#   VOLLEY=<path>  VOLLEY_REV=<git rev>  OUT_DIR=<dir>  BENCH_MD=<file>  UPDATE_MD=1
#   BUSY_MAX=30  WAIT_QUIET=60
#
# Exit codes: 0 ok, 1 the suite or the report failed, 2 bad settings.
set -euo pipefail

BENCH_TAG=gc
ROOT=$(cd "$(dirname "$0")/.." && pwd)
# shellcheck source=bench/lib.sh
. "$ROOT/bench/lib.sh"

WARMUP=${WARMUP:-5s}
DURATION=${DURATION:-20s}
REPS=${REPS:-1}
SERVERS=${SERVERS:-go node java jetty netty}
BENCH_MD=${BENCH_MD:-$ROOT/BENCHMARKS.md}
UPDATE_MD=${UPDATE_MD:-1}
BUSY_MAX=${BUSY_MAX:-30}
WAIT_QUIET=${WAIT_QUIET:-60}
TOOLS_DIR=${TOOLS_DIR:-$ROOT/target/bench-tools}
OUT_DIR=${OUT_DIR:-$(mktemp -d /tmp/volley-gc.XXXXXX)}

[[ $REPS =~ ^[1-9][0-9]*$ ]] || die 2 "REPS must be a positive integer, got '$REPS'"
for d in "$WARMUP" "$DURATION"; do
    [[ $d =~ ^[0-9]+(ms|s|m|h)$ ]] || die 2 "WARMUP and DURATION are like 5s, 2m or 3h, got '$d'"
done

build_volley
mkdir -p "$OUT_DIR"
suite=$OUT_DIR/longtail.toml
# The seeds suite with the long-tail scenarios' warm-up, duration and repetitions replaced.
python3 - "$ROOT/suites/seeds.toml" "$suite" "$WARMUP" "$DURATION" "$REPS" <<'PY'
import re, sys
src, dst, warmup, duration, reps = sys.argv[1:]
text = open(src).read()
text = re.sub(r'(?m)^repetitions = \d+$', f'repetitions = {reps}', text, count=1)
def scaled(m):
    block = m.group(0)
    block = re.sub(r'(?m)^warmup = "[^"]*"$', f'warmup = "{warmup}"', block)
    return re.sub(r'(?m)^duration = "[^"]*"$', f'duration = "{duration}"', block)
text = re.sub(r'(?ms)^\[\[scenario\]\]\nname = "longtail-[^"]*".*?(?=^\[\[|\Z)', scaled, text)
open(dst, 'w').write(text)
PY
only=(--only longtail-get --only longtail-post)
for s in $SERVERS; do only+=(--only "$s"); done
busy=$(wait_quiet)
log "machine ${busy}% busy; running $(quote "$VOLLEY" bench "$suite" "${only[@]}") (warm-up $WARMUP, $DURATION, $REPS repetition(s))"
results=$OUT_DIR/results
status=0
(cd "$ROOT" && "$VOLLEY" bench "$suite" "${only[@]}" --out "$results" --yes) || status=$?
((status == 0 || status == 1)) || log "volley bench exited $status; reporting what it recorded"
python3 "$ROOT/bench/gc_report.py" "$results" "$BENCH_MD" "$UPDATE_MD" \
    "$(quote bench/gc.sh) (WARMUP=$WARMUP DURATION=$DURATION REPS=$REPS)" "$VOLLEY_VERSION" "$busy" \
    || die 1 "the report failed"
log "results in $results"
