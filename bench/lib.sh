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
    # The archive is no checkout: its commit is given (else it would read the enclosing one's).
    (cd "$src" && VOLLEY_BUILD_COMMIT=$(git -C "$ROOT" rev-parse --short=12 "$rev") \
        CARGO_TARGET_DIR=$TOOLS_DIR/$2-target cargo build --release --quiet) || die 2 "cargo build --release of $short failed"
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

# The journey bench/mix.sh and bench/journey_users.sh measure: a small API in nginx
# (journey_locations) and a requests file that logs in and carries its session through it,
# with a twin that sends the same bytes without keeping any state (journey_files).
#
# The API: POST /login answers a token in JSON and sets a session cookie; /api/me answers a
# CSRF token in JSON, /api/items an ETag header, /api/cart a cart id in JSON and a second
# cookie. Each /api/ location answers 200 only to the login's token and session cookie, and
# /api/items and /api/cart only to the values captured the step before (else 401, 403 or
# 412), so a run whose statuses are all 200 sent every value it captured.
JOURNEY_TOKEN=tok-7d2e5b81
JOURNEY_SID=s-4f1c9a
JOURNEY_CSRF=csrf-93b0
JOURNEY_ETAG='"items-v42"'
JOURNEY_CART=c-5521

# journey_locations CONF: adds the API's locations to a file of write_nginx_conf (after its
# `location /`).
journey_locations() {
    python3 - "$1" "$JOURNEY_TOKEN" "$JOURNEY_SID" "$JOURNEY_CSRF" "$JOURNEY_ETAG" "$JOURNEY_CART" <<'EOF'
import sys
path, token, sid, csrf, etag, cart = sys.argv[1:]
auth = (f'if ($http_authorization != "Bearer {token}") {{ return 401; }} '
        f'if ($cookie_sid != "{sid}") {{ return 401; }} ')
json = "default_type application/json; "
api = (
    f"        location = /login {{ add_header Set-Cookie \"sid={sid}; Path=/; HttpOnly\"; {json}"
    f"return 200 '{{\"accessToken\":\"{token}\",\"user\":{{\"id\":7,\"name\":\"u7\"}}}}'; }}\n"
    f"        location = /api/me {{ {auth}{json}"
    f"return 200 '{{\"user\":{{\"id\":7,\"name\":\"u7\"}},\"csrf\":\"{csrf}\"}}'; }}\n"
    f"        location = /api/items {{ {auth}if ($http_x_csrf_token != \"{csrf}\") {{ return 403; }} "
    f"add_header ETag '{etag}'; {json}"
    f"return 200 '{{\"items\":[{{\"id\":1,\"price\":250}},{{\"id\":2,\"price\":990}}],\"next\":\"/api/items?page=2\"}}'; }}\n"
    f"        location = /api/cart {{ {auth}if ($http_x_items_version != '{etag}') {{ return 412; }} "
    f"add_header Set-Cookie \"cart={cart}; Path=/\"; {json}"
    f"return 200 '{{\"cartId\":\"{cart}\",\"count\":2}}'; }}\n"
)
text = open(path).read()
anchor = "        location / { return 200 '.'; }\n"
assert anchor in text, "not a write_nginx_conf file"
open(path, "w").write(text.replace(anchor, anchor + api))
EOF
}

# journey_files DIR: DIR/journey.toml, the journey (each user logs in once, then three steps
# each capturing a value the next one sends: a JSON pointer, a header, a regex; the cookie jar
# on), and DIR/nocapture.toml, the same file with no capture, the values as literals, the
# cookies as a literal Cookie header and `cookies = false` (the same requests on the wire).
journey_files() {
    local dir=$1
    cat >"$dir/journey.toml" <<'EOF'
# A user's journey: log in once, then again and again three steps, each of them capturing a
# value that the next one sends (a JSON pointer, a header, a regex), with the login's token;
# the cookie jar (on by default) keeps the login's session cookie and the cart's cookie.
[[request]]
name = "login"
sequence = 1
once = true
method = "POST"
path = "/login"
headers = { Content-Type = "application/json" }
body = '{{"user": "u{user}", "password": "secret"}}'
capture = { token = { json = "/accessToken" } }

[[request]]
name = "me"
sequence = 2
path = "/api/me"
headers = { Authorization = "Bearer {var.token}" }
capture = { csrf = { json = "/csrf" } }

[[request]]
name = "items"
sequence = 3
path = "/api/items"
headers = { Authorization = "Bearer {var.token}", X-CSRF-Token = "{var.csrf}" }
capture = { version = { header = "ETag" } }

[[request]]
name = "cart"
sequence = 4
path = "/api/cart"
headers = { Authorization = "Bearer {var.token}", X-Items-Version = "{var.version}" }
capture = { cart = { regex = '"cartId":"([^"]+)"' } }
EOF
    python3 - "$dir/journey.toml" "$dir/nocapture.toml" "$JOURNEY_TOKEN" "$JOURNEY_CSRF" "$JOURNEY_ETAG" \
        "sid=$JOURNEY_SID; cart=$JOURNEY_CART" <<'EOF'
import re, sys
src, dst, token, csrf, etag, cookie = sys.argv[1:]
literal = {"token": token, "csrf": csrf, "version": etag.replace('"', '\\"')}
body = open(src).read().split("[[request]]", 1)[1]
out = ["# journey.toml without its state: no capture, the values it would capture as literals, the\n"
       "# cookies its jar would send as a Cookie header, no jar.\n",
       "cookies = false\n\n[[request]]"]
for line in body.splitlines(keepends=True):
    if line.startswith("capture = "):
        continue
    # The loop's steps carry the jar's cookies (the login is sent with an empty jar).
    line = line.replace("headers = { Authorization = ", f'headers = {{ Cookie = "{cookie}", Authorization = ')
    out.append(re.sub(r"\{var\.([A-Za-z_][A-Za-z0-9_-]*)\}", lambda m: literal[m.group(1)], line))
text = "".join(out)
assert "{var." not in text and "\ncapture" not in text, text
open(dst, "w").write(text)
EOF
}
