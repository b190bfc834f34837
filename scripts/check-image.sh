#!/usr/bin/env bash
# Checks what the Dockerfile's image holds, without a container engine: builds the binary as
# the Dockerfile's build stage does (static, musl), assembles a root holding only what the
# final stage's COPY lines copy, and runs the binary there with chroot as the Dockerfile's USER,
# inside a network namespace of its own (servers and a DNS server bind loopback ports freely):
#   - the binary is static (file, ldd);
#   - a name only in /etc/hosts resolves, and so do a name answered by a DNS server on
#     127.0.0.1:53 (by its full name and, as a pod names a Service, by its short name through
#     resolv.conf's search list), and a name nobody knows does not: musl's resolver reads both
#     files itself, with no nsswitch.conf;
#   - https:// is verified against the bundle the image ships: a server whose certificate a
#     test CA signed is refused (unknown issuer) with the image's bundle; with no bundle the
#     run fails differently (no roots at all), so the refusal came from verifying; with the
#     bundle file replaced by the test CA (same path) the same run succeeds.
# Each check prints PASS or FAIL with its reason; any FAIL exits 1.
#
# The final stage's COPY sources it knows: a file the build stage's cargo command builds (from
# this build) and the CA bundle under /etc/ssl/certs/ (this machine's, from Debian's
# ca-certificates, as the Debian build stage's is). Any other final-stage line (ADD, RUN, ENV,
# a COPY with --chown, …) fails the check until this script learns to reproduce it.
#
# The build uses the `image-check` profile (Cargo.toml: release without LTO, for CI's time)
# with the build stage's CARGO_* ENV settings; IMAGE_CHECK_PROFILE=release builds exactly as
# the Dockerfile does.
#
# Needs root (chroot, a network namespace, port 53), cargo with the x86_64-unknown-linux-musl
# target, musl-gcc, python3, openssl, file, ldd and ip (scripts/install-test-deps.sh installs
# them). Where it cannot run it says why and skips (exit 0), except under CI=true, where that
# is a failure: CI is where it must run.
set -euo pipefail
cd "$(dirname "$0")/.."
self=$PWD/scripts/$(basename "$0")

# ---------------------------------------------------------------------------------------------
# Inside the network namespace (the script runs itself there; see the end).
# ---------------------------------------------------------------------------------------------
if [ "${1:-}" = --in-netns ]; then
    failures=0
    checks=0
    pass() {
        checks=$((checks + 1))
        echo "PASS $1: $2"
    }
    fail() {
        checks=$((checks + 1))
        failures=$((failures + 1))
        echo "FAIL $1: $2"
    }

    pids=()
    # shellcheck disable=SC2317 # run by the EXIT trap
    stop() {
        for pid in "${pids[@]}"; do
            kill "$pid" 2>/dev/null || true
            wait "$pid" 2>/dev/null || true
        done
    }
    trap stop EXIT
    trap 'exit 130' INT
    trap 'exit 143' TERM

    ip link set lo up

    # Waits up to 10 s for FILE to contain PATTERN, written by the process PID.
    wait_for() {
        local pid=$1 file=$2 pattern=$3 i
        for i in $(seq 100); do
            grep -q "$pattern" "$file" 2>/dev/null && return 0
            kill -0 "$pid" 2>/dev/null || break
            sleep 0.1
        done
        echo "check-image: a test server did not start: $(cat "$file")" >&2
        exit 1
    }
    # The servers run outside the root, as root: they stand in for the load's targets and the
    # cluster's DNS, which are not in the image.
    "$IC_BIN" serve --port 8080 >"$IC_WORK/http.log" 2>&1 &
    pids+=($!)
    wait_for $! "$IC_WORK/http.log" listening
    "$IC_BIN" serve --port 8443 --tls-cert "$IC_WORK/server.pem" --tls-key "$IC_WORK/server.key" \
        >"$IC_WORK/https.log" 2>&1 &
    pids+=($!)
    wait_for $! "$IC_WORK/https.log" listening
    : >"$IC_WORK/dns.log"
    python3 scripts/check-image-dns.py 127.0.0.1 53 dns-target.loadtest.svc.cluster.local \
        127.0.0.1 "$IC_WORK/dns.log" >"$IC_WORK/dns.out" 2>&1 &
    pids+=($!)
    wait_for $! "$IC_WORK/dns.out" ready

    chroot_bin=$(command -v chroot)
    # `volley run URL -n 10 -c 1 -t 1 --json -` in the image as a pod runs it: chrooted, as the
    # USER's uid:gid, with an empty environment (no SSL_CERT_FILE or SSL_CERT_DIR pointing
    # elsewhere). Sets rc, and leaves the JSON in out.json and stderr in err.txt.
    run_image() {
        set +e
        timeout 30 env -i "$chroot_bin" --userspec="$IC_UID:$IC_GID" "$IC_ROOT" \
            "$IC_ENTRY" run "$1" -n 10 -c 1 -t 1 --json - >"$IC_WORK/out.json" 2>"$IC_WORK/err.txt"
        rc=$?
        set -e
    }
    # volley's error line (or stderr's last line).
    why() {
        { grep '^volley:' "$IC_WORK/err.txt" || tail -n 1 "$IC_WORK/err.txt"; } | tail -n 1
    }
    # What out.json says: "ADDR, COMPLETED/SENT responses STATUS:N…[, TLS …]", and exit 1
    # unless 10 requests all completed with 200 at ADDR.
    outcome() {
        python3 - "$IC_WORK/out.json" "$1" <<'EOF'
import json, sys
d = json.load(open(sys.argv[1]))
t, r, s = d["target"], d["requests"], d["status_codes"]
statuses = " ".join(f"{k}:{v}" for k, v in s.items()) or "none"
line = f"{t['addr']}, {r['completed']}/{r['sent']} responses {statuses}"
if t.get("tls"):
    tls = t["tls"]
    line += f", {tls['version']}, " + ("NOT verified (-k)" if tls["insecure"] else "verified")
print(line)
ok = t["addr"] == sys.argv[2] and r["completed"] == 10 and s == {"200": 10}
sys.exit(0 if ok and not (t.get("tls") or {}).get("insecure") else 1)
EOF
    }
    # The DNS server's questions since line FROM of its log, on one line.
    asked_since() {
        tail -n "+$(($1 + 1))" "$IC_WORK/dns.log" | paste -sd, - | sed 's/,/, /g'
    }
    dns_lines() { wc -l <"$IC_WORK/dns.log"; }

    # URL ADDR: a run that must reach ADDR with 10 responses of 200; sets `said` to what it
    # did or why it failed.
    run_ok() {
        local got=""
        run_image "$1"
        if [ "$rc" -eq 0 ] && got=$(outcome "$2"); then
            said="$1 -> $got"
            return 0
        fi
        said="$1: exit $rc: $(why)${got:+; $got}"
        return 1
    }
    # NAME URL ADDR WHAT: run_ok as a check.
    expect_ok() {
        if run_ok "$2" "$3"; then
            pass "$1" "$4: $said"
        else
            fail "$1" "$4: $said"
        fi
    }
    # NAME URL TEXT WHAT: a run that must fail with TEXT in its error.
    expect_refused() {
        local name=$1 url=$2 text=$3 what=$4
        run_image "$url"
        if [ "$rc" -ne 0 ] && grep -q "$text" "$IC_WORK/err.txt"; then
            pass "$name" "$what: exit $rc: $(why)"
        else
            fail "$name" "$what: expected an error with \"$text\"; exit $rc: $(why)"
        fi
    }

    # --- name resolution: musl's resolver, reading the root's /etc/hosts and resolv.conf ---
    what="a name only in /etc/hosts"
    n=$(dns_lines)
    if ! run_ok http://hosts-only-target:8080/ 127.0.0.1:8080; then
        fail hosts "$what: $said"
    elif [ "$(dns_lines)" -ne "$n" ]; then
        fail hosts "$what: $said, but the DNS server was asked: $(asked_since "$n")"
    else
        pass hosts "$what: $said; the DNS server was not asked"
    fi

    what="a name only the DNS server at 127.0.0.1:53 knows"
    n=$(dns_lines)
    if ! run_ok http://dns-target.loadtest.svc.cluster.local:8080/ 127.0.0.1:8080; then
        fail dns-name "$what: $said"
    elif ! tail -n "+$((n + 1))" "$IC_WORK/dns.log" | grep -qx "A dns-target.loadtest.svc.cluster.local"; then
        fail dns-name "$what: $said, but the DNS server was not asked for its A record: $(asked_since "$n")"
    else
        pass dns-name "$what: $said; asked: $(asked_since "$n")"
    fi

    what="a Service's short name, through resolv.conf's search list"
    n=$(dns_lines)
    if run_ok http://dns-target:8080/ 127.0.0.1:8080; then
        pass dns-search "$what: $said; asked: $(asked_since "$n")"
    else
        fail dns-search "$what: $said; asked: $(asked_since "$n")"
    fi

    n=$(dns_lines)
    expect_refused dns-unknown http://nowhere-target:8080/ "cannot resolve host" \
        "a name neither knows is not resolved"
    if [ "$(dns_lines)" -eq "$n" ]; then
        fail dns-unknown-asked "the DNS server was never asked for nowhere-target"
    fi

    # --- TLS: which roots the image's binary trusts ---
    bundle="$IC_ROOT$IC_BUNDLE"
    cp "$bundle" "$IC_WORK/bundle.orig"
    expect_refused tls-refused https://tls-target:8443/ "not signed by a trusted authority" \
        "the image's bundle ($(grep -c 'BEGIN CERTIFICATE' "$bundle") CAs) does not hold the test CA"
    rm "$bundle"
    expect_refused tls-no-bundle https://tls-target:8443/ "no root trust anchors" \
        "with no file at $IC_BUNDLE nothing is trusted (a different error)"
    cp "$IC_WORK/ca.pem" "$bundle"
    chmod 0644 "$bundle"
    expect_ok tls-test-ca https://tls-target:8443/ 127.0.0.1:8443 \
        "with $IC_BUNDLE replaced by the test CA"
    cp "$IC_WORK/bundle.orig" "$bundle"

    if [ "$failures" -gt 0 ]; then
        echo "check-image: $failures of $checks checks in the namespace FAILED"
        exit 1
    fi
    echo "check-image: $checks checks in the namespace passed"
    exit 0
fi

# ---------------------------------------------------------------------------------------------
# Outside: read the Dockerfile, build, assemble the root, then run the part above.
# ---------------------------------------------------------------------------------------------
started=$(date +%s.%N)
profile=${IMAGE_CHECK_PROFILE:-image-check}
failures=0
die() {
    echo "check-image: FAIL: $*" >&2
    exit 1
}
unavailable() {
    if [ "${CI:-}" = true ]; then
        die "$* (under CI=true this check must run, not skip)"
    fi
    echo "check-image: SKIP: $*" >&2
    exit 0
}
elapsed() { awk -v a="$1" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f s", b - a }'; }

# The Dockerfile's instructions, one a line: continuation lines joined, comments and blank
# lines dropped.
instructions() {
    awk '
        /^[ \t]*#/ { next }
        /^[ \t]*$/ { next }
        {
            line = $0
            if (sub(/\\[ \t]*$/, "", line)) { acc = acc line " "; next }
            print acc line
            acc = ""
        }
        END { if (acc != "") print acc }
    ' Dockerfile
}

declare -A workdir_of cargo_of env_of
stage="" final_image=""
copies=() user="" entry="" not_understood=()
while IFS= read -r ins; do
    read -r kw rest <<<"$ins"
    kw=${kw^^}
    if [ "$kw" = FROM ]; then
        read -r image _as name <<<"$rest"
        stage=${name:-#$((${#workdir_of[@]} + 1))}
        workdir_of[$stage]=/
        final_image=$image
        copies=() user="" entry="" not_understood=()
        continue
    fi
    case "$kw" in
    WORKDIR) workdir_of[$stage]=$rest ;;
    RUN) [[ $rest == *"cargo build"* ]] && cargo_of[$stage]=$rest ;;
    ENV) env_of[$stage]="${env_of[$stage]:-} $rest" ;;
    esac
    # What the final stage may hold; collected for every stage, the last one's are kept.
    case "$kw" in
    COPY) copies+=("$rest") ;;
    USER) user=$rest ;;
    ENTRYPOINT) entry=$rest ;;
    LABEL | EXPOSE) ;; # metadata: nothing in the filesystem or the process
    *) not_understood+=("$ins") ;;
    esac
done < <(instructions)

[ "$final_image" = scratch ] ||
    die "the Dockerfile's final stage is FROM $final_image, not scratch: this check assembles an empty root"
for ins in "${not_understood[@]}"; do
    die "the final stage's \`$ins\` is not something this check reproduces; teach scripts/check-image.sh about it"
done
[[ $user =~ ^([0-9]+)(:([0-9]+))?$ ]] ||
    die "the final stage's USER \`$user\` is not a numeric uid[:gid] (runAsNonRoot needs a numeric uid)"
uid=${BASH_REMATCH[1]} gid=${BASH_REMATCH[3]:-0}
[ "$uid" -ne 0 ] || die "the final stage's USER is root"
[[ $entry =~ ^\[\ *\"(/[^\"]+)\"\ *\]$ ]] ||
    die "the final stage's ENTRYPOINT \`$entry\` is not the exec form [\"/path\"] this check runs"
entrypoint=${BASH_REMATCH[1]}

# Each COPY as "SOURCE-STAGE SOURCE DEST"; the build stage's cargo command gives the target.
copy_specs=() triple="" build_stage=""
for c in "${copies[@]}"; do
    read -ra w <<<"$c"
    { [ "${#w[@]}" -eq 3 ] && [[ ${w[0]} == --from=* ]]; } ||
        die "the final stage's \`COPY $c\` is not \`COPY --from=STAGE SOURCE DEST\` (one file, no other flags)"
    from=${w[0]#--from=} src=${w[1]} dest=${w[2]}
    [[ $src == /* && $dest == /* && $dest != */ ]] ||
        die "\`COPY $c\`: this check copies one absolute path to another"
    [ -n "${workdir_of[$from]:-}" ] || die "\`COPY $c\`: no stage named $from"
    copy_specs+=("$from $src $dest")
done
[ "${#copy_specs[@]}" -gt 0 ] || die "the final stage copies nothing"

# Where each COPY's file comes from here, and which is the bundle.
sources=() bundle_dest=""
for spec in "${copy_specs[@]}"; do
    read -r from src dest <<<"$spec"
    cargo=${cargo_of[$from]:-}
    out_prefix="${workdir_of[$from]%/}/target/"
    if [[ -n $cargo && $src == "$out_prefix"* ]]; then
        [[ $cargo =~ --target[=\ ]([^ ]+) ]] ||
            die "the $from stage's \`$cargo\` names no --target"
        t=${BASH_REMATCH[1]}
        [[ $cargo == *--release* && $cargo == *--locked* ]] ||
            die "the $from stage's \`$cargo\` is not a --release --locked build"
        [ -z "$triple" ] || [ "$triple" = "$t" ] || die "two build targets: $triple and $t"
        triple=$t build_stage=$from
        rel=${src#"$out_prefix"}
        [[ $rel == "$triple/release/"* ]] ||
            die "\`COPY $src\`: not under the build's output directory ${out_prefix}$triple/release/"
        # The same file of this build, in the check's profile's directory (under the target
        # directory, known once cargo is known to be here).
        sources+=("@target/$triple/$profile/${rel#"$triple/release/"}")
    elif [[ $src == /etc/ssl/certs/* ]]; then
        # This machine's copy: Debian's ca-certificates, as in the Debian build stage. The
        # checks need it to exist and not to hold the test CA; its exact content is not checked.
        sources+=("$src")
        bundle_dest=$dest
    else
        die "\`COPY --from=$from $src $dest\`: this check does not know where to take $src from"
    fi
done
[ -n "$triple" ] || die "no COPY of the build's binary"
[ -n "$bundle_dest" ] || die "no COPY of a CA bundle under /etc/ssl/certs/"
case " ${copy_specs[*]} " in
*" $entrypoint "*) ;;
*) die "the ENTRYPOINT $entrypoint is not a file the final stage copies" ;;
esac
echo "check-image: Dockerfile: FROM scratch; $(for s in "${copy_specs[@]}"; do
    read -r _ _ d <<<"$s"
    printf 'COPY %s; ' "$d"
done)USER $uid:$gid; ENTRYPOINT $entrypoint (built by the $build_stage stage for $triple)"

# Can it run here?
[ "$(id -u)" -eq 0 ] || unavailable "needs root (chroot, a network namespace, port 53); run as root to check the image"
unshare --net true 2>/dev/null || unavailable "cannot create a network namespace here (unshare --net)"
missing=""
for tool in cargo python3 openssl file ldd ip chroot timeout musl-gcc; do
    command -v "$tool" >/dev/null 2>&1 || missing="$missing $tool"
done
[ -z "$missing" ] || unavailable "missing:$missing (scripts/install-test-deps.sh installs them)"
if command -v rustup >/dev/null 2>&1 && ! rustup target list --installed | grep -qx "$triple"; then
    unavailable "the Rust target $triple is not installed (rustup target add $triple)"
fi

target_dir=$(cargo metadata --format-version 1 --no-deps |
    python3 -c 'import json, sys; print(json.load(sys.stdin)["target_directory"])')
sources=("${sources[@]/#@target\//$target_dir/}")

# The binary, as the build stage builds it: its cargo settings from ENV (KEY=VALUE words).
build_env=()
read -ra words <<<"${env_of[$build_stage]:-}"
for w in "${words[@]}"; do
    [[ $w == CARGO_*=* ]] && build_env+=("$w")
done
build_started=$(date +%s.%N)
env "${build_env[@]}" cargo build --quiet --locked --profile "$profile" --target "$triple"
echo "check-image: built: ${build_env[*]} cargo build --locked --profile $profile --target $triple ($(elapsed "$build_started"))"

checks=0
pass() {
    checks=$((checks + 1))
    echo "PASS $1: $2"
}
fail() {
    checks=$((checks + 1))
    failures=$((failures + 1))
    echo "FAIL $1: $2"
}
bin=${sources[0]}
for i in "${!copy_specs[@]}"; do
    read -r _ _ dest <<<"${copy_specs[$i]}"
    [ "$dest" = "$entrypoint" ] && bin=${sources[$i]}
done
kind=$(file -b "$bin")
linked=$(ldd "$bin" 2>&1 || true)
if [[ $kind == *"static-pie linked"* || $kind == *"statically linked"* ]] &&
    [[ $linked == *"statically linked"* || $linked == *"not a dynamic executable"* ]]; then
    pass static "file: ${kind%%, BuildID*}; ldd: $(echo "$linked" | head -n 1 | sed 's/^[[:space:]]*//')"
else
    fail static "file: $kind; ldd: $linked"
fi

work=$(mktemp -d /tmp/volley-check-image.XXXXXX)
trap 'rm -rf "$work"' EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
root=$work/root
mkdir -m 0755 "$root"

# The root: what the COPY lines copy (root-owned, modes kept, as COPY does) …
for i in "${!copy_specs[@]}"; do
    read -r _ _ dest <<<"${copy_specs[$i]}"
    [ -f "${sources[$i]}" ] || die "${sources[$i]} (for COPY to $dest) does not exist"
    mkdir -p "$root$(dirname "$dest")"
    cp "${sources[$i]}" "$root$dest"
done
# … and the two files the kubelet mounts into every pod's containers: /etc/hosts (the pod's
# own entries and its hostAliases; one alias stands for a target only it names) and
# /etc/resolv.conf (a ClusterFirst pod's: the namespace's search list, the cluster DNS, which
# is 127.0.0.1 here, and ndots:5).
mkdir -p "$root/etc"
cat >"$root/etc/hosts" <<'EOF'
# Kubernetes-managed hosts file.
127.0.0.1	localhost
::1	localhost ip6-localhost ip6-loopback
fe00::0	ip6-localnet
fe00::0	ip6-mcastprefix
10.244.1.7	volley-gen-0

# Entries added by HostAliases.
127.0.0.1	hosts-only-target	tls-target
EOF
cat >"$root/etc/resolv.conf" <<'EOF'
search loadtest.svc.cluster.local svc.cluster.local cluster.local
nameserver 127.0.0.1
options ndots:5
EOF
chmod 0644 "$root/etc/hosts" "$root/etc/resolv.conf"
echo "check-image: root: $(cd "$root" && find . -type f | sed 's/^\.//' | sort | paste -sd' ' -)"

# A test CA and a server certificate it signed for tls-target.
cat >"$work/ca.cnf" <<'EOF'
[req]
distinguished_name = dn
prompt = no
x509_extensions = v3
[dn]
CN = volley check-image test CA
[v3]
basicConstraints = critical, CA:TRUE
keyUsage = critical, keyCertSign, cRLSign
subjectKeyIdentifier = hash
EOF
cat >"$work/server.ext" <<'EOF'
basicConstraints = critical, CA:FALSE
keyUsage = critical, digitalSignature
extendedKeyUsage = serverAuth
subjectAltName = DNS:tls-target
authorityKeyIdentifier = keyid
EOF
ec=(-newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes)
openssl req -x509 -new -config "$work/ca.cnf" "${ec[@]}" -days 2 \
    -keyout "$work/ca.key" -out "$work/ca.pem" 2>/dev/null
openssl req -new "${ec[@]}" -subj /CN=tls-target \
    -keyout "$work/server.key" -out "$work/server.csr" 2>/dev/null
openssl x509 -req -in "$work/server.csr" -CA "$work/ca.pem" -CAkey "$work/ca.key" \
    -set_serial "0x$(openssl rand -hex 8)" -days 2 -extfile "$work/server.ext" \
    -out "$work/server.pem" 2>/dev/null

echo "check-image: running $entrypoint in the root as $uid:$gid, in a new network namespace"
set +e
IC_WORK=$work IC_ROOT=$root IC_BIN=$bin IC_ENTRY=$entrypoint IC_UID=$uid IC_GID=$gid \
    IC_BUNDLE=$bundle_dest unshare --net -- "$self" --in-netns
inner=$?
set -e

if [ "$failures" -gt 0 ] || [ "$inner" -ne 0 ]; then
    echo "check-image: FAILED ($(elapsed "$started"))"
    exit 1
fi
echo "check-image: all checks passed ($(elapsed "$started"))"
