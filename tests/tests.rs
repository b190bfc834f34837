//! The integration tests: one binary (`cargo test --test tests`), its modules in three tiers
//! by folder, so a tier or a file is a filter: `cargo test --test tests quick::engine::`.
//! `scripts/tests.sh` runs the tiers the way `make check` and `make test` do (CONTRIBUTING.md).

mod common;

/// Tests that need nothing but volley and finish in seconds: in-process servers on ephemeral
/// ports (normal, stalling, faulty, hostile), the CLI, the file formats and golden outputs.
/// `make check` runs this tier.
mod quick {
    mod architecture;
    mod bench_requires;
    mod bench_shards;
    mod bench_tls;
    mod cli;
    mod compare_baseline;
    mod display;
    mod engine;
    mod faults;
    mod fuzz_regressions;
    mod grpc;
    mod h2_hostile;
    mod h3_hostile;
    mod habits;
    mod hdr_vector;
    mod history_messages;
    mod hostile;
    mod install;
    mod io_backends;
    pub(crate) mod journeys;
    mod journeys_hostile;
    mod merge;
    mod monitor;
    mod open_loop;
    mod otlp;
    mod proxy;
    mod rate_stages;
    mod report;
    pub(crate) mod schema;
    mod secrets;
    mod shards;
    mod suite_files;
    mod tls;
    mod tls_refused;
    mod truthful;
    mod websocket;
    mod websocket_h2;
    mod workload_engine;
    mod workloads;
}

/// Tests that need nothing but volley but run real searches or suites for tens of seconds.
mod slow {
    mod bench;
    mod bench_capacity;
    mod bench_guard;
    mod capacity;
    mod capacity_sweep;
    mod compare;
    mod history;
    mod history_calls;
    mod offcpu;
    mod profile;
}

/// Tests that need other software: nginx, Chromium, Prometheus, Otava, kubernetes-validate,
/// the reference servers' toolchains, network namespaces. A missing tool is a counted skip
/// ([`common::skip`]), and a failure under `CI=true`.
mod full {
    mod flame;
    mod gc;
    mod grpc;
    mod guide;
    mod h2;
    mod h2_interop;
    mod h3;
    mod h3_interop;
    mod history_otava;
    mod html;
    mod journeys;
    mod k8s;
    mod live;
    mod live_browser;
    mod man_pages;
    mod profile;
    mod profile_suite;
    mod proxy;
    mod reference_servers;
    mod remote_write;
    mod shards_netns;
}
