# The two commands that matter: `make quick` (install what the suites need, build, run the
# quick suite over every reference server) and `make test` (what CI runs; `test-deps` adds
# headless Chromium for the HTML report's browser test; scripts/deny.sh checks the
# dependencies' licences, sources and advisories with cargo-deny; scripts/check-image.sh checks
# what the Dockerfile's image holds: a static musl build run in a root of only what the image
# copies, as root in a network namespace of its own, skipped where it cannot run unless CI=true;
# scripts/check-deb.sh builds the Debian package and installs it with dpkg into a root of its own).
# `make check` is the quick tier for working on the code: fmt, clippy, every crate's unit and
# doc tests and the integration tests that need nothing but volley and run in seconds
# (tests/quick; scripts/tests.sh runs the tiers and counts skips, which fail under CI=true). `make demo` loads the built-in server for 5 s.
PORT ?= 18080
VOLLEY ?= target/release/volley
# `make install PREFIX=… [DESTDIR=…]`: the release binary, its manual pages and the completion
# scripts of bash, zsh and fish where distributions put them.
PREFIX ?= /usr/local

.PHONY: build deps test-deps quick demo check test bench install install-files deb

deps:
	servers/install.sh

test-deps:
	scripts/install-test-deps.sh

build:
	cargo build --release --locked

demo: build
	@$(VOLLEY) serve --port $(PORT) > /dev/null & pid=$$!; \
	trap 'kill $$pid 2>/dev/null' EXIT; sleep 0.3; \
	$(VOLLEY) run http://127.0.0.1:$(PORT)/ -c 10 -d 5s

install: build install-files

install-files:
	install -Dm755 $(VOLLEY) $(DESTDIR)$(PREFIX)/bin/volley
	$(VOLLEY) man --dir $(DESTDIR)$(PREFIX)/share/man/man1
	install -d $(DESTDIR)$(PREFIX)/share/bash-completion/completions \
		$(DESTDIR)$(PREFIX)/share/zsh/site-functions \
		$(DESTDIR)$(PREFIX)/share/fish/vendor_completions.d
	$(VOLLEY) completions bash > $(DESTDIR)$(PREFIX)/share/bash-completion/completions/volley
	$(VOLLEY) completions zsh > $(DESTDIR)$(PREFIX)/share/zsh/site-functions/_volley
	$(VOLLEY) completions fish > $(DESTDIR)$(PREFIX)/share/fish/vendor_completions.d/volley.fish

# The Debian package (cargo-deb; scripts/deb.sh): target/x86_64-unknown-linux-musl/debian/.
deb:
	scripts/deb.sh

quick: deps build
	$(VOLLEY) bench suites/quick.toml

check:
	cargo fmt --all -- --check
	cargo clippy --workspace --all-targets --locked -- -D warnings
	cargo test --locked --workspace --lib --bins
	cargo test --locked --workspace --doc
	scripts/tests.sh quick

test: deps test-deps
	cargo fmt --all -- --check
	cargo clippy --workspace --all-targets --locked -- -D warnings
	scripts/deny.sh
	scripts/msrv.sh
	RUSTDOCFLAGS="-D warnings" cargo doc --workspace --no-deps --locked --quiet
	cargo test --locked --workspace --lib --bins
	cargo test --locked --workspace --doc
	scripts/tests.sh all
	# The default backend is io_uring where the kernel has it: the engine, fault,
	# hostile-server, TLS and HTTP/2 tests run again on epoll.
	VOLLEY_IO=epoll scripts/tests.sh quick/engine quick/faults quick/hostile full/h2 \
		quick/h2_hostile quick/tls quick/tls_refused quick/open_loop quick/truthful \
		quick/proxy full/proxy
	scripts/check-image.sh
	scripts/check-deb.sh

bench: build
	bench/compare.sh
