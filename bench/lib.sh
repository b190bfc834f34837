# bench/lib.sh: what the bench scripts share. Source it after setting BENCH_TAG, ROOT and
# (for build_volley) TOOLS_DIR.
# shellcheck shell=bash

log() { printf '[%s] %s\n' "$BENCH_TAG" "$*" >&2; }
die() { local code=$1; shift; printf '[%s] error: %s\n' "$BENCH_TAG" "$*" >&2; exit "$code"; }

# For display: a command line quoted only where a shell needs it.
quote() {
    local out="" a
    for a in "$@"; do
        if [[ $a =~ ^[A-Za-z0-9_./:=@%+,-]+$ ]]; then out+="$a "
        elif [[ $a != *\'* ]]; then out+="'$a' "
        else a=${a//\\/\\\\}; a=${a//\"/\\\"}; a=${a//\$/\\\$}; out+="\"$a\" "; fi
    done
    printf '%s' "${out% }"
}

# % of all CPUs busy over the next second.
busy_pct() {
    local a b total=0 idle i
    read -r -a a < <(head -n1 /proc/stat); sleep 1; read -r -a b < <(head -n1 /proc/stat)
    for ((i = 1; i < ${#a[@]}; i++)); do total=$((total + b[i] - a[i])); done
    idle=$((b[4] - a[4] + b[5] - a[5])); ((total > 0)) || total=1
    echo $(((total - idle) * 100 / total))
}

# Waits (at most WAIT_QUIET s) until other work uses at most BUSY_MAX % of the machine,
# and prints the last reading: other sessions share this machine.
wait_quiet() {
    local busy waited=0
    busy=$(busy_pct)
    while ((busy > BUSY_MAX && waited < WAIT_QUIET)); do
        ((waited == 0)) && log "machine is ${busy}% busy with other work; waiting up to ${WAIT_QUIET}s for it to drop to ${BUSY_MAX}%"
        sleep 4; waited=$((waited + 5)); busy=$(busy_pct)
    done
    ((busy <= BUSY_MAX)) || log "warning: still ${busy}% busy; running anyway (flagged in the results)"
    echo "$busy"
}

# build_rev REV NAME: builds commit REV on its own (git archive into TOOLS_DIR/NAME-src, target
# dir TOOLS_DIR/NAME-target) and prints the binary's path.
build_rev() {
    local rev short src
    rev=$(git -C "$ROOT" rev-parse --verify --quiet "$1^{commit}") || die 2 "$1 is not a commit"
    short=$(git -C "$ROOT" rev-parse --short "$rev")
    src=$TOOLS_DIR/$2-src
    log "building volley at git $short in $src"
    rm -rf "$src" && mkdir -p "$src"
    git -C "$ROOT" archive "$rev" | tar -x -C "$src" || die 2 "git archive $rev failed"
    (cd "$src" && CARGO_TARGET_DIR=$TOOLS_DIR/$2-target cargo build --release --quiet) || die 2 "cargo build --release of $short failed"
    printf '%s\n' "$TOOLS_DIR/$2-target/release/volley"
}

# Sets VOLLEY (the binary to measure) and VOLLEY_VERSION. VOLLEY_REV=<rev> builds that commit
# on its own (git archive into TOOLS_DIR, own target dir), so uncommitted edits in the work
# tree neither break nor leak into the run; VOLLEY=<path> uses a given binary; otherwise
# target/release/volley is built.
build_volley() {
    local rev="" short="" src
    if [[ -n ${VOLLEY_REV:-} ]]; then
        rev=$(git -C "$ROOT" rev-parse --verify --quiet "$VOLLEY_REV^{commit}") || die 2 "VOLLEY_REV=$VOLLEY_REV is not a commit"
        short=$(git -C "$ROOT" rev-parse --short "$rev")
        VOLLEY=$(build_rev "$rev" volley) || exit 2
    elif [[ -n ${VOLLEY:-} ]]; then
        [[ -x $VOLLEY ]] || die 2 "VOLLEY=$VOLLEY is not executable"
    else
        command -v cargo >/dev/null 2>&1 || die 2 "cargo not found (or set VOLLEY=/path/to/volley)"
        log "cargo build --release"
        (cd "$ROOT" && cargo build --release --quiet) || die 2 "cargo build --release failed"
        VOLLEY=$ROOT/target/release/volley
    fi
    VOLLEY_VERSION=$("$VOLLEY" --version) || die 2 "$VOLLEY --version failed"
    if [[ -n $short ]]; then
        VOLLEY_VERSION+=" (built from git $short)"
    elif [[ $VOLLEY == "$ROOT/target/release/volley" ]] && git -C "$ROOT" rev-parse --short HEAD >/dev/null 2>&1; then
        VOLLEY_VERSION+=" (built from git $(git -C "$ROOT" rev-parse --short HEAD)"
        [[ -z $(git -C "$ROOT" status --porcelain -- src Cargo.toml Cargo.lock 2>/dev/null) ]] || VOLLEY_VERSION+=" with uncommitted changes"
        VOLLEY_VERSION+=")"
    fi
}

# A free TCP port on 127.0.0.1.
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }

# Writes DIR/nginx.conf: one worker answering `return 200 '.'` on 127.0.0.1:PORT, with the
# settings of the reference server contract (servers/README.md) (worker_connections 16384, worker_rlimit_nofile 20000,
# keepalive_requests 1000000); EXTRA_EVENTS goes into the events block (e.g. "multi_accept on;").
write_nginx_conf() {
    local dir=$1 port=$2 extra_events=${3:-}
    cat >"$dir/nginx.conf" <<CONF
worker_processes 1;
worker_rlimit_nofile 20000;
pid $dir/nginx.pid;
error_log $dir/error.log;
events { worker_connections 16384;${extra_events:+ $extra_events} }
http {
    access_log off;
    keepalive_requests 1000000;
    server {
        listen 127.0.0.1:$port;
        location / { return 200 '.'; }
    }
}
CONF
}

# Stops a server we started: SIGTERM, then SIGKILL after 5 s; reaps it.
stop_pid() {
    local pid=$1
    [[ -n $pid ]] && kill -0 "$pid" 2>/dev/null || return 0
    kill -TERM "$pid" 2>/dev/null || true
    for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    kill -KILL "$pid" 2>/dev/null || true
    wait "$pid" 2>/dev/null || true
}
