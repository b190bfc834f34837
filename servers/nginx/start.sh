#!/bin/sh
# Starts the nginx reference server on 127.0.0.1:$PORT in the foreground (master process,
# `daemon off`), so SIGTERM to this process stops it. Config, pid and temp files live in
# ${TMPDIR:-/tmp}/volley-nginx-$PORT, one run dir per port.
set -eu
port=${1:-${PORT:?set PORT (or pass the port as the first argument)}}
here=$(cd "$(dirname "$0")" && pwd)
nginx=${NGINX:-$(command -v nginx || echo /usr/sbin/nginx)}
modules=${NGINX_MODULES:-$("$nginx" -V 2>&1 | sed -n 's/.*--modules-path=\([^ ]*\).*/\1/p')}
run=${TMPDIR:-/tmp}/volley-nginx-$port
mkdir -p "$run"
sed -e "s|@PORT@|$port|g" -e "s|@RUN@|$run|g" -e "s|@MODULES@|${modules:-/usr/lib/nginx/modules}|g" \
    "$here/nginx.conf.template" >"$run/nginx.conf"
exec "$nginx" -p "$run" -c "$run/nginx.conf" -g 'daemon off;'
