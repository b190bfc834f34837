#!/usr/bin/env bash
# Runs the integration tests (tests/tests.rs, one binary; its tiers are the folders
# tests/quick, tests/slow and tests/full) and sums up what passed, failed and was skipped.
#
#   scripts/tests.sh quick          the quick tier in one process (`make check`)
#   scripts/tests.sh all            every tier, each file in a process of its own (`make test`):
#                                   a file's tests never share the machine with another file's
#   scripts/tests.sh FILE...        those files, e.g. quick/engine full/h2 (VOLLEY_IO=epoll ...)
#
# A test that needs a tool missing here calls common::skip: counted in target/tmp/skipped and
# listed below; under CI=true the test fails instead. Extra arguments for cargo go in
# $CARGO_TEST_ARGS (e.g. --release).
set -uo pipefail
cd "$(dirname "$0")/.."

[ $# -ge 1 ] || { echo "usage: scripts/tests.sh quick | all | TIER/FILE..." >&2; exit 2; }

files=()
case "$1" in
    quick) filters=("quick::") ;;
    all)
        for f in tests/quick/*.rs tests/slow/*.rs tests/full/*.rs; do
            f=${f#tests/}; files+=("${f%.rs}")
        done ;;
    *) files=("$@") ;;
esac
for f in "${files[@]}"; do
    [ -f "tests/$f.rs" ] || { echo "scripts/tests.sh: no test file tests/$f.rs" >&2; exit 2; }
done

skipped=target/tmp/skipped
mkdir -p target/tmp
: > "$skipped"
# shellcheck disable=SC2086 # CARGO_TEST_ARGS is a list of words
cargo test --locked -p volley --test tests ${CARGO_TEST_ARGS:-} --no-run || exit 1

log=$(mktemp)
trap 'rm -f "$log"' EXIT
passed=0 failed=0 failures=()
run() { # filter: one process of the test binary, its output shown as it comes
    # shellcheck disable=SC2086
    cargo test --locked -p volley --test tests ${CARGO_TEST_ARGS:-} -- "$1" 2>&1 | tee "$log"
    local status=${PIPESTATUS[0]} line p f
    line=$(grep -E '^test result: ' "$log" | tail -1)
    p=$(sed -nE 's/.* ([0-9]+) passed.*/\1/p' <<<"$line")
    f=$(sed -nE 's/.* ([0-9]+) failed.*/\1/p' <<<"$line")
    passed=$((passed + ${p:-0})) failed=$((failed + ${f:-0}))
    if [ "$status" -ne 0 ]; then
        failures+=("$1")
        [ "${f:-0}" -gt 0 ] || failed=$((failed + 1)) # a crash or a build error: count it
    fi
}
if [ ${#files[@]} -gt 0 ]; then
    for f in "${files[@]}"; do run "${f/\//::}::"; done
else
    run "${filters[0]}"
fi

nskipped=$(wc -l < "$skipped")
echo
echo "integration tests: $passed passed, $failed failed, $nskipped skipped"
if [ "$nskipped" -gt 0 ]; then
    sed 's/^/  skipped /' "$skipped"
fi
if [ ${#failures[@]} -gt 0 ]; then
    echo "failed in: ${failures[*]}"
    exit 1
fi
if [ "$nskipped" -gt 0 ] && [ -n "${CI:-}" ]; then
    echo "CI=true: a skipped test is a test that did not run" >&2
    exit 1
fi
