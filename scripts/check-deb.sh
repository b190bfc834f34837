#!/usr/bin/env bash
# Checks volley's Debian package (scripts/deb.sh) as a user's dpkg would take it: builds it,
# installs it with dpkg into a root of its own (--instdir, --admindir: nothing of this machine's
# is touched), and checks what landed there — the binary runs and names its version, every
# manual page renders with `man -l`, the completion scripts sit where bash, zsh and fish look —
# then removes it and checks that nothing is left. Each check prints PASS or FAIL; any FAIL
# exits 1.
#
# The build uses the image-check profile (release without LTO, for CI's time; DEB_PROFILE
# overrides it). Needs dpkg, man, cargo-deb, the musl target and musl-gcc
# (scripts/install-test-deps.sh installs them). Where one is missing it says so and skips
# (exit 0), except under CI=true, where that is a failure.
set -euo pipefail
cd "$(dirname "$0")/.."

missing=""
for tool in dpkg dpkg-deb man cargo-deb musl-gcc; do
    command -v "$tool" >/dev/null 2>&1 || missing="$missing $tool"
done
if [ -n "$missing" ]; then
    if [ "${CI:-}" = true ]; then
        echo "check-deb: FAIL: missing:$missing (scripts/install-test-deps.sh installs them)" >&2
        exit 1
    fi
    echo "check-deb: skipped: missing:$missing (scripts/install-test-deps.sh installs them)"
    exit 0
fi

failures=0
check() { # NAME COMMAND...: PASS when the command succeeds
    local name=$1
    shift
    if "$@" >/dev/null 2>&1; then
        echo "check-deb: PASS: $name"
    else
        echo "check-deb: FAIL: $name" >&2
        failures=$((failures + 1))
    fi
}

deb=$(DEB_PROFILE=${DEB_PROFILE:-image-check} scripts/deb.sh | tail -n 1)
[ -f "$deb" ] || { echo "check-deb: FAIL: scripts/deb.sh made no package ($deb)" >&2; exit 1; }
echo "check-deb: built $deb ($(du -k "$deb" | cut -f1) KiB)"

root=$(mktemp -d)
trap 'rm -rf "$root"' EXIT
admin=$root/var/lib/dpkg
mkdir -p "$admin/info" "$admin/updates"
touch "$admin/status"
dpkg_here() {
    dpkg --instdir="$root" --admindir="$admin" --force-not-root --force-script-chrootless "$@"
}

version=$(grep -m1 '^version' Cargo.toml | cut -d'"' -f2)
check "the package is volley $version for amd64" \
    sh -c "dpkg-deb --field '$deb' Package Version Architecture | tr '\n' ' ' | grep -q 'Package: volley Version: $version.* Architecture: amd64'"
check "dpkg installs it" dpkg_here -i "$deb"
check "dpkg lists it as installed" sh -c "dpkg-query --admindir='$admin' -W -f='\${Status}' volley | grep -q 'install ok installed'"

bin=$root/usr/bin/volley
check "usr/bin/volley names its version" sh -c "'$bin' --version | grep -q '^volley $version'"
check "usr/bin/volley version --json names its commit" sh -c "'$bin' version --json | grep -q '\"commit\"'"
check "usr/bin/volley is static (runs anywhere)" sh -c "file '$bin' | grep -Eq 'static(-pie)? linked'"

man_dir=$root/usr/share/man/man1
pages=$(find "$man_dir" -name '*.1.gz' | wc -l)
check "a manual page for volley and each subcommand ($pages)" test "$pages" -ge 10
for page in "$man_dir"/volley.1.gz "$man_dir"/volley-run.1.gz; do
    check "man -l $(basename "$page") renders" sh -c "MANWIDTH=100 man -l '$page' 2>/dev/null | grep -q 'volley'"
done
check "volley-run(1) documents --proxy" sh -c "MANWIDTH=100 man -l '$man_dir/volley-run.1.gz' 2>/dev/null | grep -q -- '--proxy'"

share=$root/usr/share
check "bash completion where bash-completion looks" \
    bash -c "source '$share/bash-completion/completions/volley' && complete -p volley"
check "zsh completion in vendor-completions" grep -q '#compdef volley' "$share/zsh/vendor-completions/_volley"
check "fish completion in vendor_completions.d" grep -q 'complete -c volley' "$share/fish/vendor_completions.d/volley.fish"
check "the changelog in usr/share/doc/volley" test -s "$share/doc/volley/CHANGELOG.md"

check "dpkg removes it" dpkg_here --purge volley
left=$( (find "$root/usr" -type f 2>/dev/null || true) | wc -l)
check "nothing of it is left ($left files)" test "$left" -eq 0

if [ "$failures" -gt 0 ]; then
    echo "check-deb: $failures check(s) failed" >&2
    exit 1
fi
echo "check-deb: all checks passed"
