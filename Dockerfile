# The image volley's generator pods run: one static binary and a CA bundle, nothing else.
#   docker build -t REGISTRY/volley:TAG .
# scripts/check-image.sh (part of `make test`) checks what the final stage holds without a
# container engine: it follows this file's final-stage COPY, USER and ENTRYPOINT lines and
# the build stage's cargo command, and fails on any final-stage line it cannot reproduce.

# Build stage: the official Rust image pinned by version, so that a rebuild uses the same
# compiler; Debian 12 (bookworm), whose ca-certificates the final stage ships.
FROM rust:1.95.0-slim-bookworm AS build
# musl-tools: ring (rustls's cryptography) compiles C and assembly, and for the musl target
# its build script needs musl-gcc. ca-certificates: the CA bundle the final stage copies
# (the slim image has it already; named so that it cannot silently go).
RUN apt-get update \
    && apt-get install -y --no-install-recommends musl-tools ca-certificates \
    && rm -rf /var/lib/apt/lists/*
# musl's libc links into the binary: a static binary needs no libc (no dynamic loader, no
# /lib) in the image.
RUN rustup target add x86_64-unknown-linux-musl
WORKDIR /src
# The repository, less what .dockerignore leaves out (target/, .git, …).
COPY . .
# No debug information in the image (the release profile's own setting, said here too so that
# a change to the profile cannot grow what every generator node pulls: about 9 MB).
ENV CARGO_PROFILE_RELEASE_DEBUG=0 CARGO_PROFILE_RELEASE_STRIP=debuginfo
# --locked: exactly Cargo.lock's dependency versions, as CI tests them.
RUN cargo build --release --locked --target x86_64-unknown-linux-musl

# Final stage: an empty filesystem; only what the COPY lines put there.
FROM scratch
# The static binary.
COPY --from=build /src/target/x86_64-unknown-linux-musl/release/volley /volley
# Debian's CA bundle, at the first path rustls-native-certs (openssl-probe) looks for on
# Linux, so that https:// targets verify as they do on a Debian host; no SSL_CERT_FILE needed.
COPY --from=build /etc/ssl/certs/ca-certificates.crt /etc/ssl/certs/ca-certificates.crt
# A numeric non-root uid:gid: a pod with runAsNonRoot can only be admitted when the kubelet
# can see that the image's user is not root, which it cannot tell from a name. 65532 is the
# "nonroot" uid of distroless images; scratch has no /etc/passwd, and volley needs none.
USER 65532:65532
# `docker run IMAGE run URL …` and a pod's args are volley's subcommand and flags.
ENTRYPOINT ["/volley"]
