# The two commands that matter: `make demo` (build, start the built-in server, load it for
# 5 s) and `make test` (what CI runs).
PORT ?= 18080
VOLLEY := target/release/volley

.PHONY: build demo test bench

build:
	cargo build --release --locked

demo: build
	@$(VOLLEY) serve --port $(PORT) > /dev/null & pid=$$!; \
	trap 'kill $$pid 2>/dev/null' EXIT; sleep 0.3; \
	$(VOLLEY) run http://127.0.0.1:$(PORT)/ -c 10 -d 5s

test:
	cargo fmt --all -- --check
	cargo clippy --all-targets --locked -- -D warnings
	cargo test --locked

bench: build
	bench/compare.sh
