#!/usr/bin/env bash
# bench/fuzz.sh: runs every cargo-fuzz target of fuzz/ for a bounded time, one at a time on one
# CPU, and writes what each did (executions, exec/s, corpus, crashes) into the
# <!-- fuzz:begin/end --> section of BENCHMARKS.md.
#
#   response  the streaming HTTP response parser: one keep-alive connection in fuzzer-chosen
#             pieces, in one piece and byte by byte (every body framing, 1xx, HEAD, eof)
#   units     durations, sizes, counts, decimals, stages, thresholds, CPU lists, URLs
#   suite     the suite TOML loader (seeded with suites/*.toml)
#   result    RunResult and suite.json readers, report rendering, histogram decoding (seeded
#             with tests/fixtures/report/)
#   h2        the HTTP/2 client connection (H2Conn) fed a server's bytes in fuzzer-chosen
#             pieces, in one piece and byte by byte: events, floods, windows, HPACK
#   h2_worker the worker's HTTP/2 side (a real worker over in-memory connections, on a clock
#             the input moves): GOAWAYs, refusals, resets, closes, stalls and windows against
#             its promises (each request written at most twice, bounded unwritten bytes per
#             connection, every request counted once)
#   h3        the HTTP/3 codec (engine::h3): a request stream's response or a server's
#             control, QPACK or other unidirectional stream, in fuzzer-chosen pieces, in one
#             piece and byte by byte: events, RFC error codes, bounds, QPACK static decoding
#   hsperfdata  the HotSpot counter file reader (monitor::gc) on any bytes
#   gctrace   Go's GODEBUG=gctrace=1 lines, jvmlog JVM -Xlog:gc lines, nodetrace Node --trace-gc
#             lines and volley's anchor line (monitor::gc; each seeded with its real fixtures
#             of tests/fixtures/gc/)
#
# The checks are volley_fuzzing::check_<target> (crates/fuzzing); inputs kept in fuzz/regressions/<target>/
# seed the runs and are replayed by `cargo test --test tests quick::fuzz_regressions::`. The growing corpus
# stays in fuzz/corpus/<target>/ (not committed), so later runs start where earlier ones ended.
#
# Environment (all optional):
#   SECONDS_PER_TARGET=60     seconds for units, suite, result, h2, h2_worker, h3 and the GC readers
#   RESPONSE_SECONDS=900      seconds for response (10^7 executions take ~400-900 s here)
#   RUNS_PER_TARGET=0         also stop each target after this many executions (libFuzzer's
#                             -runs; 0: time alone bounds it), for a count to reach on a
#                             machine whose speed varies (other work sharing it)
#   SANITIZER=none            cargo fuzz's -s: none (the parsers fuzzed are safe Rust; AddressSanitizer only
#                             made the runs 2-15x slower) or address
#   TARGETS="response units suite result h2 h2_worker h3 hsperfdata gctrace jvmlog nodetrace"
#   FUZZ_CPU=auto             the CPU the fuzzer is pinned to (taskset, when it exists); auto:
#                             the idlest CPU over the second before each target (a CPU that
#                             other work keeps busy starved a pinned fuzzer here)
#   RSS_LIMIT_MB=2048  TIMEOUT_S=10   libFuzzer's -rss_limit_mb and per-input -timeout
#   BENCH_MD=<file>  UPDATE_MD=0  BUSY_MAX=50  WAIT_QUIET=30  OUT_DIR=<dir>
#
# Needs a nightly toolchain (`cargo +nightly`); installs cargo-fuzz with
# `cargo install cargo-fuzz --locked` when it is missing.
#
# Exit codes: 0 no target crashed, 1 a target crashed (the input is printed), 2 bad settings or
# a failed build.
set -euo pipefail

BENCH_TAG=fuzz
ROOT=$(cd "$(dirname "$0")/.." && pwd)
# shellcheck source=bench/lib.sh
. "$ROOT/bench/lib.sh"

SECONDS_PER_TARGET=${SECONDS_PER_TARGET:-60}
RESPONSE_SECONDS=${RESPONSE_SECONDS:-900}
RUNS_PER_TARGET=${RUNS_PER_TARGET:-0}
SANITIZER=${SANITIZER:-none}
TARGETS=${TARGETS:-response units suite result h2 h2_worker h3 hsperfdata gctrace jvmlog nodetrace}
FUZZ_CPU=${FUZZ_CPU:-auto}
RSS_LIMIT_MB=${RSS_LIMIT_MB:-2048}
TIMEOUT_S=${TIMEOUT_S:-10}
BENCH_MD=${BENCH_MD:-$ROOT/BENCHMARKS.md}
UPDATE_MD=${UPDATE_MD:-1}
BUSY_MAX=${BUSY_MAX:-50}
WAIT_QUIET=${WAIT_QUIET:-30}
OUT_DIR=${OUT_DIR:-$(mktemp -d /tmp/volley-fuzz.XXXXXX)}
mkdir -p "$OUT_DIR"

for v in SECONDS_PER_TARGET RESPONSE_SECONDS RSS_LIMIT_MB TIMEOUT_S; do
    [[ ${!v} =~ ^[1-9][0-9]*$ ]] || die 2 "$v must be a positive whole number, got '${!v}'"
done
[[ $RUNS_PER_TARGET =~ ^[0-9]+$ ]] || die 2 "RUNS_PER_TARGET must be a whole number, got '$RUNS_PER_TARGET'"

for t in $TARGETS; do
    [[ -f $ROOT/fuzz/fuzz_targets/$t.rs ]] || die 2 "no fuzz target '$t' (fuzz/fuzz_targets/$t.rs)"
done

cargo +nightly --version >/dev/null 2>&1 || die 2 "a nightly toolchain is needed (cargo +nightly): rustup toolchain install nightly"
if ! cargo fuzz --version >/dev/null 2>&1; then
    log "cargo-fuzz missing: cargo install cargo-fuzz --locked"
    cargo install cargo-fuzz --locked || die 2 "cargo install cargo-fuzz failed"
fi
# The CPU with the most idle time over the next second (/proc/stat's cpuN lines).
idlest_cpu() {
    local a b
    a=$(grep '^cpu[0-9]' /proc/stat); sleep 1; b=$(grep '^cpu[0-9]' /proc/stat)
    paste <(echo "$a") <(echo "$b") | awk '{
        n = NF / 2; idle = ($(n + 5) + $(n + 6)) - ($5 + $6); total = 0
        for (i = 2; i <= n; i++) total += $(n + i) - $i
        f = total > 0 ? idle / total : 1
        if (best == "" || f > bestf) { best = substr($1, 4); bestf = f }
    } END { print best }'
}
HAVE_TASKSET=0
if command -v taskset >/dev/null 2>&1; then
    HAVE_TASKSET=1
else
    log "taskset not found: the fuzzer runs unpinned"
fi
[[ $FUZZ_CPU == auto || $FUZZ_CPU =~ ^[0-9]+$ ]] || die 2 "FUZZ_CPU must be auto or a CPU number, got '$FUZZ_CPU'"

cd "$ROOT/fuzz"
log "cargo +nightly fuzz build -s $SANITIZER (release, debug assertions and overflow checks on)"
cargo +nightly fuzz build -s "$SANITIZER" >"$OUT_DIR/build.log" 2>&1 || { tail -n 30 "$OUT_DIR/build.log" >&2; die 2 "cargo fuzz build failed"; }
# The binaries are run directly (what `cargo fuzz run` does after building), so the process
# started here is the fuzzer itself and the outer timeout reaches it.
BIN_DIR=target/$(rustc +nightly -vV | sed -n 's/^host: //p')/release

FUZZ_PID=
cleanup() { [[ -z $FUZZ_PID ]] || stop_pid "$FUZZ_PID"; }
trap cleanup EXIT

crashed=()
: >"$OUT_DIR/summary.tsv"
for t in $TARGETS; do
    secs=$SECONDS_PER_TARGET
    [[ $t == response ]] && secs=$RESPONSE_SECONDS
    seeds=("regressions/$t")
    extra=()
    case $t in
    # 1 KiB holds several responses with every framing; twice the executions of 4 KiB inputs.
    response) extra=(-max_len=1024) ;;
    # 4 KiB: a few exchanges with CONTINUATIONs; the floods' bounds are seeded (regressions/h2).
    h2) extra=(-max_len=4096) ;;
    # 2 KiB: a few dozen frames and commands, each input a whole run of a worker (about
    # 1,500 a second here); the 17 KiB PING flood seed is cut there (replayed whole by the
    # regression test).
    h2_worker) extra=(-max_len=2048) ;;
    # 4 KiB: a response of a few dozen frames, or a control stream; the 64 KiB bounds are
    # reached through the 256-byte ones the set-up byte picks.
    h3) extra=(-max_len=4096) ;;
    suite) seeds+=("$ROOT/suites") ;;
    # 4 KiB: a few dozen log lines; the 32 KiB hsperfdata seed is cut there (its prologue and
    # first entries still read).
    hsperfdata | gctrace | jvmlog | nodetrace) extra=(-max_len=4096) ;;
    result) for d in "$ROOT"/tests/fixtures/report/*/runs "$ROOT"/tests/fixtures/report; do [[ -d $d ]] && seeds+=("$d"); done ;;
    esac
    ((RUNS_PER_TARGET == 0)) || extra+=("-runs=$RUNS_PER_TARGET")
    mkdir -p "corpus/$t" "artifacts/$t"
    before=$(find "artifacts/$t" -type f | sort)
    busy=$(wait_quiet)
    PIN=()
    if ((HAVE_TASKSET)); then
        cpu=$FUZZ_CPU
        [[ $cpu != auto ]] || cpu=$(idlest_cpu)
        PIN=(taskset -c "$cpu")
    fi
    args=("corpus/$t" "${seeds[@]}"
        "-max_total_time=$secs" "-rss_limit_mb=$RSS_LIMIT_MB" "-timeout=$TIMEOUT_S"
        "-dict=dicts/$t.dict" "-artifact_prefix=artifacts/$t/" -print_final_stats=1 "${extra[@]}")
    log "$t: (cd fuzz && $(quote "${PIN[@]}" "$BIN_DIR/$t" "${args[@]}" | sed "s#$ROOT/#../#g")) (machine ${busy}% busy before)"
    rc=0
    [[ -x $BIN_DIR/$t ]] || die 2 "$BIN_DIR/$t was not built"
    # The outer timeout only guards against a fuzzer that ignores -max_total_time.
    "${PIN[@]}" timeout --kill-after=30 $((secs + 300)) "$BIN_DIR/$t" "${args[@]}" >"$OUT_DIR/$t.log" 2>&1 &
    FUZZ_PID=$!
    t0=$(date +%s)
    wait "$FUZZ_PID" || rc=$?
    ran=$(($(date +%s) - t0))
    FUZZ_PID=
    new=$(comm -13 <(echo "$before") <(find "artifacts/$t" -type f | sort) | grep -v '^$' || true)
    execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$OUT_DIR/$t.log" | tail -n1)
    rate=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$OUT_DIR/$t.log" | tail -n1)
    rss=$(sed -n 's/^stat::peak_rss_mb: *//p' "$OUT_DIR/$t.log" | tail -n1)
    # The last status line: "#N DONE cov: C ft: F corp: K/SIZE ..." (libFuzzer's corpus, seeds included).
    status=$(grep -E '^#[0-9]+' "$OUT_DIR/$t.log" | tail -n1 || true)
    cov=$(sed -n 's/.* cov: \([0-9]*\).*/\1/p' <<<"$status")
    corp=$(sed -n 's/.* corp: \([0-9]*\)\/\([0-9A-Za-z]*\).*/\1 \2/p' <<<"$status")
    # A timeout can be the machine, not the input: other work or a stalled VM can hold the
    # process for longer than -timeout (seen once: "timeout after 57 seconds" on an input
    # that runs in milliseconds). Replay each timeout input alone; one that passes is noted and
    # set aside, not counted as a crash.
    stalls=0
    for f in $new; do
        [[ $(basename "$f") == timeout-* ]] || continue
        if "${PIN[@]}" "$BIN_DIR/$t" "-timeout=$TIMEOUT_S" "-rss_limit_mb=$RSS_LIMIT_MB" "$f" >"$OUT_DIR/$t.replay.log" 2>&1; then
            log "$t: timeout on fuzz/$f did not reproduce (it runs within ${TIMEOUT_S}s alone): a machine stall, set aside in $OUT_DIR"
            mv "$f" "$OUT_DIR/"
            new=$(grep -vxF "$f" <<<"$new" || true)
            stalls=$((stalls + 1))
        fi
    done
    if ((stalls > 0)) && [[ -z $new ]] && ((rc == 70)); then rc=0; fi
    ncrash=$(grep -c . <<<"$new" || true)
    if ((rc != 0)) || [[ -n $new ]]; then
        crashed+=("$t")
        log "$t: the fuzzer exited with $rc; log $OUT_DIR/$t.log"
        grep -E 'panicked at|ERROR: libFuzzer|SUMMARY' "$OUT_DIR/$t.log" | head -n 5 >&2 || true
        for f in $new; do
            log "$t: crash input fuzz/$f ($(wc -c <"$f") bytes); reproduce: cd fuzz && cargo +nightly fuzz run $t $f"
            head -c 512 "$f" | od -A d -c | head -n 12 >&2
        done
        ((ncrash > 0)) || ncrash=1
    fi
    log "$t: ${execs:-?} executions in ${ran}s of ${secs}s (${rate:-?}/s), coverage ${cov:-?}, corpus ${corp:-?}, crashes $ncrash"
    ((stalls == 0)) || log "$t: the run stopped early at a timeout that did not reproduce; run it again for the full time"
    printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$t" "$ran" "${execs:-}" "${rate:-}" "${cov:-}" \
        "${corp%% *}" "${corp##* }" "$ncrash" "${rss:-}" "$busy" "$stalls" "${cpu:--}" >>"$OUT_DIR/summary.tsv"
done

DATE=$(date -u +%Y-%m-%dT%H:%M:%SZ)
COMMIT=$(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null || echo unknown)
[[ -z $(git -C "$ROOT" status --porcelain -- src fuzz Cargo.toml Cargo.lock 2>/dev/null) ]] || COMMIT+=" with uncommitted changes"
CPU_MODEL=$(grep -m1 '^model name' /proc/cpuinfo | sed 's/^[^:]*: *//' || true)
TOOLCHAIN="$(rustc +nightly --version) · $(cargo fuzz --version)"
KERNEL=$(uname -sr)
NCPU=$(nproc)
export BENCH_MD UPDATE_MD RSS_LIMIT_MB TIMEOUT_S SANITIZER DATE COMMIT CPU_MODEL TOOLCHAIN KERNEL NCPU
python3 - "$OUT_DIR/summary.tsv" <<'PYEOF'
import os, sys
rows = [l.rstrip("\n").split("\t") for l in open(sys.argv[1]) if l.strip()]
e = os.environ
num = lambda s: f"{int(s):,}" if s.isdigit() else "?"
L = [f"Run {e['DATE']} at commit {e['COMMIT']} by `bench/fuzz.sh`; {e['CPU_MODEL']}, {e['NCPU']} CPUs, "
     f"{e['KERNEL']}; {e['TOOLCHAIN']}; "
     + "each target pinned to one CPU (the idlest when it started)"
     + f"; `cargo fuzz build -s {e['SANITIZER']}` (debug assertions and overflow checks on), "
     f"`-rss_limit_mb={e['RSS_LIMIT_MB']} -timeout={e['TIMEOUT_S']}`.",
     "",
     "| target | seconds run | executions | exec/s | coverage (edges) | corpus (inputs / size) | crashes | peak RSS (MB) | CPU | machine busy before |",
     "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
for t, secs, execs, rate, cov, n, size, crashes, rss, busy, stalls, cpu in rows:
    note = f" (+{stalls} timeout that did not reproduce: stopped early)" if stalls != "0" else ""
    L.append(f"| `{t}` | {secs} | {num(execs)} | {num(rate)} | {num(cov)} | {num(n)} / {size or '?'} | "
             f"{crashes}{note} | {rss or '?'} | {cpu} | {busy} % |")
print("\n".join(L))
if e["UPDATE_MD"] != "0":
    path = e["BENCH_MD"]
    text = open(path).read()
    begin, end = "<!-- fuzz:begin -->", "<!-- fuzz:end -->"
    section = begin + "\n" + "\n".join(L) + "\n" + end
    if begin in text and end in text:
        text = text[:text.index(begin)] + section + text[text.index(end) + len(end):]
    else:
        text = text.rstrip("\n") + "\n\n## Fuzzing (`bench/fuzz.sh`)\n\n" + section + "\n"
    open(path + ".tmp", "w").write(text)
    os.replace(path + ".tmp", path)
    print(f"[fuzz] rewrote the fuzz section of {path}", file=sys.stderr)
PYEOF

if ((${#crashed[@]} > 0)); then
    die 1 "crashes in: ${crashed[*]} (inputs in fuzz/artifacts/; fix, then keep each in fuzz/regressions/<target>/)"
fi
log "no crash; logs in $OUT_DIR"
