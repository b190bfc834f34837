#!/usr/bin/env bash
# bench/workspace.sh: how long building and testing take, this commit against one before it,
# interleaved (before, then after, REPS times), each side a fresh clone of its commit (as CI
# has) with its own target directory, so neither reuses the other's build.
#
#   build  a clean `cargo build --release --locked` (the crates' sources already downloaded)
#   check  the quick tier from warm: once untimed, then one engine source file touched and
#          timed. After the split that is `make check`; a commit without `make check` (the one
#          crate, be7ffe8) runs what it is made of there: fmt, clippy, the unit and doc tests
#          and the integration-test files of tests/quick, each its own binary
#   test   `CI=true make test`, what CI runs (servers and tools already installed)
#
# Usage:  BEFORE_REV=be7ffe8 AFTER_REV=HEAD REPS=1 TABLES=build,check bench/workspace.sh
# Prints one Markdown row per timed command (wall, user and system seconds) and the ratio
# after ÷ before per pair. Exit codes: 0 ok, 1 a timed command failed, 2 bad settings.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BENCH_TAG=workspace
# shellcheck source=bench/lib.sh
source "$ROOT/bench/lib.sh"

BEFORE_REV=${BEFORE_REV:-be7ffe8}
AFTER_REV=${AFTER_REV:-HEAD}
REPS=${REPS:-1}
TABLES=${TABLES:-build,check}
WORK=${WORK:-$ROOT/target/bench-workspace}
[[ $REPS =~ ^[1-9][0-9]*$ ]] || die 2 "REPS must be a positive integer"
for t in ${TABLES//,/ }; do
    [[ $t =~ ^(build|check|test)$ ]] || die 2 "TABLES: unknown table '$t' (build, check, test)"
done
before=$(git -C "$ROOT" rev-parse --short "$BEFORE_REV") || die 2 "BEFORE_REV: no commit $BEFORE_REV"
after=$(git -C "$ROOT" rev-parse --short "$AFTER_REV") || die 2 "AFTER_REV: no commit $AFTER_REV"

# fresh REV DIR: a clone of the commit, nothing built.
fresh() {
    rm -rf "$2"
    git clone --quiet --no-checkout "$ROOT" "$2"
    git -C "$2" checkout --quiet --detach "$1"
}

# timed NAME DIR CMD...: runs CMD in DIR, appends "NAME wall user sys" to $WORK/times.
timed() {
    local name=$1 dir=$2
    shift 2
    log "$name: $*"
    local t
    t=$(mktemp)
    if ! (cd "$dir" && /usr/bin/time -f '%e %U %S' -o "$t" "$@" >"$WORK/$name.log" 2>&1); then
        die 1 "$name failed: see $WORK/$name.log"
    fi
    echo "$name $(cat "$t")" >>"$WORK/times"
    rm -f "$t"
}

# The quick tier of a commit, as far as it has one.
check_cmd() {
    local dir=$1
    if grep -q '^check:' "$dir/Makefile"; then
        echo "make check"
        return
    fi
    local tests="" f
    for f in "$ROOT"/tests/quick/*.rs; do
        f=$(basename "$f" .rs)
        [[ -f $dir/tests/$f.rs ]] && tests+=" --test $f"
    done
    echo "cargo fmt --all -- --check && cargo clippy --all-targets --locked -- -D warnings && cargo test --locked --lib --bins && cargo test --locked --doc && cargo test --locked$tests"
}

touch_engine() {
    local f
    for f in crates/engine/src/lib.rs src/engine/mod.rs; do
        [[ -f $1/$f ]] && { touch "$1/$f"; return; }
    done
    die 2 "no engine source file in $1"
}

mkdir -p "$WORK"
: >"$WORK/times"
for rep in $(seq "$REPS"); do
    for side in before after; do
        rev=$BEFORE_REV
        [[ $side == after ]] && rev=$AFTER_REV
        dir=$WORK/$side
        for t in ${TABLES//,/ }; do
            case $t in
                build)
                    fresh "$rev" "$dir"
                    timed "build-$side-$rep" "$dir" cargo build --release --locked
                    ;;
                check)
                    [[ -d $dir ]] || fresh "$rev" "$dir"
                    cmd=$(check_cmd "$dir")
                    (cd "$dir" && bash -c "$cmd" >"$WORK/check-warmup-$side.log" 2>&1) ||
                        die 1 "the untimed check failed: see $WORK/check-warmup-$side.log"
                    touch_engine "$dir"
                    timed "check-$side-$rep" "$dir" bash -c "$cmd"
                    ;;
                test)
                    fresh "$rev" "$dir"
                    timed "test-$side-$rep" "$dir" env CI=true make test
                    ;;
            esac
        done
    done
done

echo
echo "| command | rep | volley@$before wall (user, sys) | volley@$after wall (user, sys) | after ÷ before |"
echo "|---|---:|---:|---:|---:|"
for t in ${TABLES//,/ }; do
    for rep in $(seq "$REPS"); do
        b=$(awk -v n="$t-before-$rep" '$1 == n {print $2, $3, $4}' "$WORK/times")
        a=$(awk -v n="$t-after-$rep" '$1 == n {print $2, $3, $4}' "$WORK/times")
        read -r bw bu bs <<<"$b"
        read -r aw au as <<<"$a"
        ratio=$(awk -v a="$aw" -v b="$bw" 'BEGIN {printf "%.2f", a / b}')
        echo "| $t | $rep | ${bw} s (${bu}, ${bs}) | ${aw} s (${au}, ${as}) | $ratio |"
    done
done
