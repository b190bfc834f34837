#!/bin/sh
# Installs what the reference servers need and a clean Debian machine may lack: nginx and its
# echo module (apt, only when missing). Go, Node.js, Python 3, a JDK and Rust must already be
# there; a missing one is named and the script exits 1. Idempotent, non-interactive, and
# quiet when everything is present.
set -eu

missing=""
for tool in go node python3 javac cargo; do
    command -v "$tool" >/dev/null 2>&1 || missing="$missing $tool"
done

nginx_bin=$(command -v nginx 2>/dev/null || { [ -x /usr/sbin/nginx ] && echo /usr/sbin/nginx; } || true)
echo_module=""
if [ -n "$nginx_bin" ]; then
    modules=$("$nginx_bin" -V 2>&1 | sed -n 's/.*--modules-path=\([^ ]*\).*/\1/p')
    [ -f "${modules:-/usr/lib/nginx/modules}/ngx_http_echo_module.so" ] && echo_module=yes
fi

if [ -z "$nginx_bin" ] || [ -z "$echo_module" ]; then
    if [ "$(id -u)" -eq 0 ]; then
        sudo=""
    elif command -v sudo >/dev/null 2>&1; then
        sudo="sudo"
    else
        echo "install.sh: nginx and its echo module are needed: run as root, or install" \
            "sudo, or run: apt-get install nginx-light libnginx-mod-http-echo" >&2
        exit 1
    fi
    export DEBIAN_FRONTEND=noninteractive
    $sudo apt-get update -qq >/dev/null
    # nginx-light is the small build; releases that dropped it have plain nginx.
    pkg=nginx-light
    apt-cache show nginx-light >/dev/null 2>&1 || pkg=nginx
    $sudo apt-get install -y -qq "$pkg" libnginx-mod-http-echo >/dev/null
    # The package starts a system nginx on port 80; the reference server runs its own.
    if [ -z "$nginx_bin" ] && command -v systemctl >/dev/null 2>&1; then
        $sudo systemctl disable --now nginx >/dev/null 2>&1 || true
    fi
    echo "installed: $pkg libnginx-mod-http-echo"
fi

if [ -n "$missing" ]; then
    echo "install.sh: missing on PATH:$missing (install Go, Node.js, Python 3, a JDK with" \
        "javac, and Rust's cargo first)" >&2
    exit 1
fi
