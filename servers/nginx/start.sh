#!/bin/sh
# Starts the nginx reference server on 127.0.0.1:$PORT in the foreground (master process,
# `daemon off`), so SIGTERM to this process stops it. Config, pid and temp files live in
# ${TMPDIR:-/tmp}/volley-nginx-$PORT, one run dir per port. HTTPS instead of HTTP when TLS_CERT
# and TLS_KEY name a PEM certificate chain and key (h2 and http/1.1 by ALPN); with H2C=1 and no
# TLS, cleartext HTTP/2 with prior knowledge (h2c) instead of HTTP/1.1.
set -eu
port=${1:-${PORT:?set PORT (or pass the port as the first argument)}}
here=$(cd "$(dirname "$0")" && pwd)
nginx=${NGINX:-$(command -v nginx || echo /usr/sbin/nginx)}
modules=${NGINX_MODULES:-$("$nginx" -V 2>&1 | sed -n 's/.*--modules-path=\([^ ]*\).*/\1/p')}
run=${TMPDIR:-/tmp}/volley-nginx-$port
mkdir -p "$run"
# HTTPS when TLS_CERT and TLS_KEY are set: `listen ... ssl http2` and the ssl_* lines of the
# template. Else with H2C=1 `listen ... http2`: nginx 1.22 then speaks HTTP/2 only on the port.
listen='' tls='#' cert='' key=''
if [ -n "${TLS_CERT:-}" ] && [ -n "${TLS_KEY:-}" ]; then
    # Absolute paths (nginx resolves relative ones against its prefix, the run dir), escaped
    # for the sed replacements below.
    abs() { (cd "$(dirname "$1")" && printf '%s/%s' "$(pwd)" "$(basename "$1")") | sed 's/[|&\\]/\\&/g'; }
    listen=' ssl http2' tls='' cert=$(abs "$TLS_CERT") key=$(abs "$TLS_KEY")
elif [ "${H2C:-}" = 1 ]; then
    listen=' http2'
fi
sed -e "s|@PORT@|$port|g" -e "s|@RUN@|$run|g" -e "s|@MODULES@|${modules:-/usr/lib/nginx/modules}|g" \
    -e "s|@LISTEN@|$listen|g" -e "s|@TLS@|$tls|g" -e "s|@CERT@|$cert|g" -e "s|@KEY@|$key|g" \
    "$here/nginx.conf.template" >"$run/nginx.conf"
exec "$nginx" -p "$run" -c "$run/nginx.conf" -g 'daemon off;'
