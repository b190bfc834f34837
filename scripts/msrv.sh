#!/usr/bin/env bash
# The minimum supported Rust version, built: every crate of the workspace, with its tests, on
# the toolchain named by `rust-version` in Cargo.toml (the one place it is written). Installs
# that toolchain with rustup when it is missing; its own target directory (target/msrv), so
# that the stable build's cache is left alone.
set -euo pipefail
cd "$(dirname "$0")/.."

msrv=$(sed -n 's/^rust-version = "\(.*\)"$/\1/p' Cargo.toml | head -n1)
[[ -n $msrv ]] || { echo "msrv: no rust-version in Cargo.toml" >&2; exit 2; }
if ! rustup run "$msrv" rustc --version >/dev/null 2>&1; then
    echo "msrv: installing Rust $msrv (once)" >&2
    rustup toolchain install "$msrv" --profile minimal >/dev/null
fi
CARGO_TARGET_DIR=target/msrv cargo "+$msrv" check --workspace --all-targets --locked --quiet
echo "msrv: the workspace builds on Rust $msrv" >&2
