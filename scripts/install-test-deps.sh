#!/bin/sh
# Installs what the tests need beyond Rust and the reference servers' tools: headless Chromium,
# which tests/full/html.rs uses to load the HTML report as a person would (Debian's `chromium`
# package), and nghttp2's clients h2load and nghttp, which tests/full/reference_servers.rs uses as
# independent HTTP/2 peers (Debian's `nghttp2-client`), and Maven, which builds the jetty and
# netty reference servers that tests/full/reference_servers.rs checks (Debian's `maven`; it fetches
# their jars from Maven Central into ~/.m2 on the first build); and what scripts/check-image.sh
# uses to build and run the container image's binary: Rust's x86_64-unknown-linux-musl target
# (from rustup), musl-gcc for ring's C (`musl-tools`), and `file`, `ip` (`iproute2`), `openssl`
# and `python3`; and `jq`, which a page of the guide uses (tests/full/guide.rs); and the other
# real servers and tools tests talk to (Prometheus, tinyproxy, Caddy for HTTP/3). From apt, only
# when missing. Idempotent, non-interactive, and quiet when everything is present. Needs root or
# sudo.
# Also kubernetes-validate and prometheus_client, from PyPI (below).
set -eu

# kubernetes-validate (PyPI) checks the manifests `volley k8s` prints against the schemas of
# several Kubernetes versions, offline (tests/full/k8s.rs).
if ! command -v kubernetes-validate >/dev/null 2>&1; then
    if command -v pip3 >/dev/null 2>&1; then pip=pip3; else pip=pip; fi
    "$pip" install --quiet --disable-pip-version-check kubernetes-validate==1.37.0 >/dev/null 2>&1 ||
        "$pip" install --quiet --disable-pip-version-check --break-system-packages \
            kubernetes-validate==1.37.0 >/dev/null
    command -v kubernetes-validate >/dev/null 2>&1 || {
        echo "install-test-deps.sh: pip installed kubernetes-validate but it is not on PATH" >&2
        exit 1
    }
    echo "installed: kubernetes-validate"
fi

# prometheus_client (PyPI): its OpenMetrics parser reads volley's /metrics (tests/full/live.rs).
if ! python3 -c "import prometheus_client" >/dev/null 2>&1; then
    if command -v pip3 >/dev/null 2>&1; then pip=pip3; else pip=pip; fi
    "$pip" install --quiet --disable-pip-version-check prometheus_client==0.26.0 >/dev/null 2>&1 ||
        "$pip" install --quiet --disable-pip-version-check --break-system-packages \
            prometheus_client==0.26.0 >/dev/null
    python3 -c "import prometheus_client" || {
        echo "install-test-deps.sh: pip installed prometheus_client but python3 cannot import it" >&2
        exit 1
    }
    echo "installed: prometheus_client"
fi

# Apache Otava (PyPI), in a virtual environment of its own (it brings numpy, scipy and cloud
# clients): tests/full/history_otava.rs checks volley's change points against it.
otava_env="${HOME}/.cache/volley/otava"
if ! "$otava_env/bin/python" -c "import otava.analysis" >/dev/null 2>&1; then
    rm -rf "$otava_env"
    if ! python3 -m venv "$otava_env" >/dev/null 2>&1; then
        apt-get update -qq >/dev/null && apt-get install -y -qq python3-venv >/dev/null
        python3 -m venv "$otava_env"
    fi
    "$otava_env/bin/pip" install --quiet --disable-pip-version-check apache-otava==0.8.0 >/dev/null
    "$otava_env/bin/python" -c "import otava.analysis" || {
        echo "install-test-deps.sh: pip installed apache-otava but its python cannot import it" >&2
        exit 1
    }
    echo "installed: apache-otava (in $otava_env)"
fi

# cargo-deb (crates.io) packs the Debian package scripts/check-deb.sh builds and installs.
if ! command -v cargo-deb >/dev/null 2>&1; then
    cargo install --quiet --locked cargo-deb --version 3.8.0 >/dev/null 2>&1 || {
        echo "install-test-deps.sh: cargo install cargo-deb failed" >&2
        exit 1
    }
    echo "installed: cargo-deb"
fi

musl=x86_64-unknown-linux-musl
if command -v rustup >/dev/null 2>&1 && ! rustup target list --installed | grep -qx "$musl"; then
    rustup target add "$musl" >/dev/null 2>&1 ||
        { echo "install-test-deps.sh: rustup target add $musl failed" >&2; exit 1; }
    echo "installed: Rust target $musl"
fi

pkgs=""
[ -x /usr/bin/chromium ] || pkgs="$pkgs chromium"
{ command -v h2load >/dev/null 2>&1 && command -v nghttp >/dev/null 2>&1; } ||
    pkgs="$pkgs nghttp2-client"
command -v mvn >/dev/null 2>&1 || pkgs="$pkgs maven"
command -v musl-gcc >/dev/null 2>&1 || pkgs="$pkgs musl-tools"
command -v file >/dev/null 2>&1 || pkgs="$pkgs file"
command -v ip >/dev/null 2>&1 || pkgs="$pkgs iproute2"
command -v openssl >/dev/null 2>&1 || pkgs="$pkgs openssl"
command -v python3 >/dev/null 2>&1 || pkgs="$pkgs python3"
# jq reads a RunResult's per-second series in docs/guide/how-many-users.md, which
# tests/full/guide.rs runs as written.
command -v jq >/dev/null 2>&1 || pkgs="$pkgs jq"
# `man -l` renders volley's manual pages (tests/full/man_pages.rs).
command -v man >/dev/null 2>&1 || pkgs="$pkgs man-db"
# A real Prometheus: it scrapes --metrics-addr and receives --prometheus-remote-write
# (tests/full/remote_write.rs).
[ -x /usr/bin/prometheus ] || pkgs="$pkgs prometheus"
# A real HTTP proxy: forwarding and CONNECT tunnels (tests/full/proxy.rs).
[ -x /usr/bin/tinyproxy ] || pkgs="$pkgs tinyproxy"
# A real HTTP/3 server: the engine's QUIC and HTTP/3 against it (tests/full/h3_interop.rs).
command -v caddy >/dev/null 2>&1 || pkgs="$pkgs caddy"
if [ -z "$pkgs" ]; then
    exit 0
fi

if [ "$(id -u)" -eq 0 ]; then
    sudo=""
elif command -v sudo >/dev/null 2>&1; then
    sudo="sudo"
else
    echo "install-test-deps.sh: needed by the tests:$pkgs: run as root, or install sudo," \
        "or run: apt-get install$pkgs" >&2
    exit 1
fi
if ! command -v apt-get >/dev/null 2>&1; then
    echo "install-test-deps.sh: no apt-get here: install the equivalents of:$pkgs" \
        "(for Chromium, /usr/bin/chromium, or point \$CHROMIUM at it when running cargo test)" >&2
    exit 1
fi

export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -qq >/dev/null
# shellcheck disable=SC2086 # the package list is split on purpose
$sudo apt-get install -y -qq $pkgs >/dev/null
if [ ! -x /usr/bin/chromium ]; then
    echo "install-test-deps.sh: apt-get installed chromium but /usr/bin/chromium is missing" >&2
    exit 1
fi
echo "installed:$pkgs"
