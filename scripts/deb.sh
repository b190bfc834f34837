#!/usr/bin/env bash
# Builds volley's Debian package (`make deb`): the static musl binary (it runs on any Debian or
# Ubuntu release, so the package depends on nothing), its manual pages and its bash, zsh and
# fish completions — written by the binary itself into target/deb-assets — packed by cargo-deb
# from Cargo.toml's [package.metadata.deb]. Prints the package's path on its last line.
#
#   DEB_PROFILE   the cargo profile [release]; scripts/check-deb.sh uses image-check (release
#                 without LTO: CI's time)
#   DEB_TARGET    the target triple [x86_64-unknown-linux-musl]
#
# Needs cargo-deb (`cargo install cargo-deb --locked`), the musl target and musl-gcc
# (scripts/install-test-deps.sh installs all three).
set -euo pipefail
cd "$(dirname "$0")/.."

profile=${DEB_PROFILE:-release}
target=${DEB_TARGET:-x86_64-unknown-linux-musl}
command -v cargo-deb >/dev/null 2>&1 || {
    echo "deb.sh: cargo-deb is missing: cargo install cargo-deb --locked" >&2
    exit 1
}

# Built as the Dockerfile's build stage builds it (its ENV), so that after
# scripts/check-image.sh in `make test` this build is already done.
CARGO_PROFILE_RELEASE_DEBUG=0 CARGO_PROFILE_RELEASE_STRIP=debuginfo \
    cargo build --quiet --locked --profile "$profile" --target "$target"
bin=target/$target/$profile/volley

assets=target/deb-assets
rm -rf "$assets"
mkdir -p "$assets/man"
"$bin" man --dir "$assets/man"
gzip -9n "$assets"/man/*.1
"$bin" completions bash > "$assets/volley.bash"
"$bin" completions zsh > "$assets/_volley"
"$bin" completions fish > "$assets/volley.fish"

out=$(cargo deb --no-build --no-strip --profile "$profile" --target "$target" 2>&1) || {
    echo "$out" >&2
    exit 1
}
echo "$out" | tail -n 1
