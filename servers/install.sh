#!/bin/sh
# Installs what the reference servers need and a clean Debian machine may lack: nginx and its
# echo module (apt, only when missing, as root or with sudo). Go, Node.js, Python 3, a JDK and
# Maven (for the jetty and netty servers) are not installed here: a missing one is named, and `volley bench` then skips the servers
# that need it (their `requires` in the suite) with a note instead of failing. Only cargo is
# required, for volley itself. Idempotent, non-interactive, and quiet when everything is
# present.
set -eu

if ! command -v cargo >/dev/null 2>&1; then
    echo "install.sh: cargo is not on PATH: install Rust (https://rustup.rs) first; volley" \
        "itself is built with it" >&2
    exit 1
fi

missing=""
for tool in go node python3 javac mvn; do
    command -v "$tool" >/dev/null 2>&1 || missing="$missing $tool"
done

nginx_bin=$(command -v nginx 2>/dev/null || { [ -x /usr/sbin/nginx ] && echo /usr/sbin/nginx; } || true)
echo_module=""
if [ -n "$nginx_bin" ]; then
    modules=$("$nginx_bin" -V 2>&1 | sed -n 's/.*--modules-path=\([^ ]*\).*/\1/p')
    [ -f "${modules:-/usr/lib/nginx/modules}/ngx_http_echo_module.so" ] && echo_module=yes
fi

# nginx: installed from apt when it (or its echo module) is missing and we may; otherwise the
# suite skips it (without the echo module it starts but fails /delay and /bytes).
install_nginx() {
    if [ "$(id -u)" -eq 0 ]; then
        sudo=""
    elif command -v sudo >/dev/null 2>&1; then
        sudo="sudo"
    else
        echo "install.sh: nginx and its echo module are missing and cannot be installed" \
            "without root or sudo (apt-get install nginx-light libnginx-mod-http-echo)" >&2
        return 1
    fi
    command -v apt-get >/dev/null 2>&1 || {
        echo "install.sh: nginx and its echo module are missing, and there is no apt-get" \
            "to install them" >&2
        return 1
    }
    export DEBIAN_FRONTEND=noninteractive
    $sudo apt-get update -qq >/dev/null || return 1
    # nginx-light is the small build; releases that dropped it have plain nginx.
    pkg=nginx-light
    apt-cache show nginx-light >/dev/null 2>&1 || pkg=nginx
    $sudo apt-get install -y -qq "$pkg" libnginx-mod-http-echo >/dev/null || return 1
    # The package starts a system nginx on port 80; the reference server runs its own.
    if [ -z "$nginx_bin" ] && command -v systemctl >/dev/null 2>&1; then
        $sudo systemctl disable --now nginx >/dev/null 2>&1 || true
    fi
    echo "installed: $pkg libnginx-mod-http-echo"
}

if [ -z "$nginx_bin" ] || [ -z "$echo_module" ]; then
    if ! install_nginx; then
        [ -z "$nginx_bin" ] && missing="$missing nginx"
    fi
fi

if [ -n "$missing" ]; then
    echo "install.sh: not installed:$missing; volley bench skips the reference servers that" \
        "need them (install Go, Node.js, Python 3, a JDK with javac, Maven and nginx for all" \
        "eight)" >&2
fi
exit 0
