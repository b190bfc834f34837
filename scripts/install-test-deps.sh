#!/bin/sh
# Installs what the tests need beyond Rust and the reference servers' tools: headless Chromium,
# which tests/html.rs uses to load the HTML report as a person would (Debian's `chromium`
# package, from apt, only when /usr/bin/chromium is missing). Idempotent, non-interactive, and
# quiet when everything is present. Needs root or sudo to install.
set -eu

if [ -x /usr/bin/chromium ]; then
    exit 0
fi

if [ "$(id -u)" -eq 0 ]; then
    sudo=""
elif command -v sudo >/dev/null 2>&1; then
    sudo="sudo"
else
    echo "install-test-deps.sh: headless Chromium (/usr/bin/chromium) is needed by" \
        "tests/html.rs: run as root, or install sudo, or run: apt-get install chromium" >&2
    exit 1
fi
if ! command -v apt-get >/dev/null 2>&1; then
    echo "install-test-deps.sh: no apt-get here: install Chromium so that /usr/bin/chromium" \
        "exists (or point \$CHROMIUM at it when running cargo test)" >&2
    exit 1
fi

export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -qq >/dev/null
$sudo apt-get install -y -qq chromium >/dev/null
if [ ! -x /usr/bin/chromium ]; then
    echo "install-test-deps.sh: apt-get installed chromium but /usr/bin/chromium is missing" >&2
    exit 1
fi
echo "installed: chromium"
