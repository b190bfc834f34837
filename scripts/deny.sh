#!/usr/bin/env bash
# Dependency checks with cargo-deny (config: deny.toml): licences, bans and sources always;
# security advisories whenever RustSec's advisory database (a git repository on GitHub) can be
# fetched or is already in $CARGO_HOME/advisory-dbs. Installs cargo-deny when it is missing.
set -euo pipefail
cd "$(dirname "$0")/.."

if ! cargo deny --version >/dev/null 2>&1; then
    echo "deny: installing cargo-deny (once; a few minutes)" >&2
    cargo install cargo-deny --locked --quiet
fi

cargo deny --log-level error check licenses bans sources

db_dir=${CARGO_HOME:-$HOME/.cargo}/advisory-dbs
if timeout 60 cargo deny --log-level error fetch db >/dev/null 2>&1; then
    cargo deny --log-level error check advisories
elif [[ -n $(find "$db_dir" -mindepth 1 -maxdepth 1 -type d 2>/dev/null) ]]; then
    echo "deny: the advisory database could not be refreshed; checking against the copy in $db_dir" >&2
    cargo deny --log-level error --offline check advisories
else
    echo "deny: advisories NOT checked: RustSec's advisory database (github.com/RustSec/advisory-db) cannot be fetched from this machine and there is no local copy" >&2
fi
echo "deny: licences, bans and sources ok" >&2
