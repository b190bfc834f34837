#!/usr/bin/env bash
# bench/capacity.sh: the capacity of every reference server under an SLO, beside its
# closed-loop maximum: `volley bench` of suites/capacity.toml (the harness builds, pins, starts
# and monitors each server; each cell is one `volley capacity` search with its closed-loop
# reference), then the ranking and each server's latency–throughput curve as tables in the
# <!-- capacity:begin/end --> section of BENCHMARKS.md, and the report page's curves as a PNG
# (bench/capacity.png) when Chromium is there. A capacity far below the closed-loop maximum is
# the coordinated-omission lesson in one number.
#
# Environment (all optional):
#   SUITE=suites/capacity.toml  ONLY="go node"  (servers; default: all of the suite)
#   VOLLEY=<path>  VOLLEY_REV=<git rev>  OUT_DIR=<dir>  BENCH_MD=<file>  UPDATE_MD=1  PNG=1
#
# Exit codes: 0 ok, 1 a cell failed, 2 bad settings.
set -euo pipefail

BENCH_TAG=capacity
ROOT=$(cd "$(dirname "$0")/.." && pwd)
# shellcheck source=bench/lib.sh
. "$ROOT/bench/lib.sh"

SUITE=${SUITE:-$ROOT/suites/capacity.toml}
ONLY=${ONLY:-}
BENCH_MD=${BENCH_MD:-$ROOT/BENCHMARKS.md}
UPDATE_MD=${UPDATE_MD:-1}
PNG=${PNG:-1}
TOOLS_DIR=${TOOLS_DIR:-$ROOT/target/bench-tools}
OUT_DIR=${OUT_DIR:-$(mktemp -d /tmp/volley-capacity.XXXXXX)}
BUSY_MAX=${BUSY_MAX:-30}
WAIT_QUIET=${WAIT_QUIET:-60}

[[ -f $SUITE ]] || die 2 "SUITE=$SUITE: no such file"
build_volley
busy=$(wait_quiet)
log "volley bench $SUITE (machine ${busy}% busy before); results in $OUT_DIR/suite"
args=(bench "$SUITE" --out "$OUT_DIR/suite" --yes)
for n in $ONLY; do args+=(--only "$n"); done
status=0
(cd "$ROOT" && "$VOLLEY" "${args[@]}") || status=$?
[[ -f $OUT_DIR/suite/suite.json ]] || die 1 "no suite.json in $OUT_DIR/suite (exit $status)"

if [[ $PNG == 1 && -x /usr/bin/chromium ]]; then
    # The page's capacity sections only, as a person sees them.
    /usr/bin/chromium --headless --no-sandbox --disable-gpu --disable-quic --no-first-run \
        --disable-background-networking --disable-component-update --disable-sync \
        --user-data-dir="$OUT_DIR/chromium" --window-size=1400,2200 \
        --screenshot="$OUT_DIR/page.png" "file://$OUT_DIR/suite/report.html" >/dev/null 2>&1 || true
fi

python3 "$ROOT/bench/capacity_report.py" "$OUT_DIR/suite" "$BENCH_MD" "$UPDATE_MD" "$VOLLEY_VERSION" \
    "$(quote bench/capacity.sh) ($(quote "$VOLLEY" "${args[@]}"))" "$busy"
exit $((status == 0 ? 0 : 1))
