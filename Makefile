# The two commands that matter: `make quick` (install what the suites need, build, run the
# quick suite over every reference server) and `make test` (what CI runs; `test-deps` adds
# headless Chromium for the HTML report's browser test; scripts/deny.sh checks the
# dependencies' licences, sources and advisories with cargo-deny; scripts/check-image.sh checks
# what the Dockerfile's image holds: a static musl build run in a root of only what the image
# copies, as root in a network namespace of its own, skipped where it cannot run unless CI=true).
# `make demo` loads the built-in server for 5 s.
PORT ?= 18080
VOLLEY := target/release/volley

.PHONY: build deps test-deps quick demo test bench

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

quick: deps build
	$(VOLLEY) bench suites/quick.toml

test: deps test-deps
	cargo fmt --all -- --check
	cargo clippy --all-targets --locked -- -D warnings
	scripts/deny.sh
	cargo test --locked
	# The default backend is io_uring where the kernel has it: the engine, fault,
	# hostile-server, TLS and HTTP/2 tests run again on epoll.
	VOLLEY_IO=epoll cargo test --locked -p volley --test engine --test faults --test hostile \
		--test h2 --test h2_hostile --test tls --test tls_refused --test open_loop --test truthful
	scripts/check-image.sh

bench: build
	bench/compare.sh
