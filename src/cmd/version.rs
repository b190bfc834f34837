//! `volley version [--json]` and `volley --version`: the version, the commit it was built
//! from and what it was built with (the I/O backends, the TLS stack), for bug reports and
//! scripts (docs/contract.md, "Installing").

use clap::Args;

use super::ExitCode;
use crate::engine::{choose_io, IoLoad};
use crate::plan::IoChoice;

/// The commit volley was built from (`git rev-parse --short=12 HEAD` at build time), or
/// `unknown` outside a git checkout.
pub const COMMIT: &str = env!("VOLLEY_COMMIT");

/// The TLS stack compiled in, as a literal for `concat!`.
macro_rules! tls {
    () => {
        "rustls 0.23 (ring)"
    };
}

/// The TLS stack compiled in.
pub const TLS: &str = tls!();

/// What `volley --version` prints after the name.
pub const LONG_VERSION: &str = concat!(
    env!("CARGO_PKG_VERSION"),
    " (git ",
    env!("VOLLEY_COMMIT"),
    "; I/O: io_uring, epoll; TLS: ",
    tls!(),
    "; HTTP/1.1, HTTP/2, HTTP/3, WebSocket)"
);

/// `volley version`.
#[derive(Debug, Args, Clone)]
pub struct VersionArgs {
    /// Print it as JSON: {version, commit, io, io_uring, tls, protocols, target}.
    #[arg(long)]
    pub json: bool,
}

/// Prints the version; with `--json`, also whether this kernel gives io_uring to volley.
pub(crate) fn execute(args: &VersionArgs) -> ExitCode {
    let uring = choose_io(IoChoice::Uring, IoLoad::KeepAlive);
    if args.json {
        let v = serde_json::json!({
            "version": env!("CARGO_PKG_VERSION"),
            "commit": COMMIT,
            "io": ["uring", "epoll"],
            "io_uring": match &uring {
                Ok(_) => serde_json::json!({"available": true}),
                Err(why) => serde_json::json!({"available": false, "why": why}),
            },
            "tls": TLS,
            "protocols": ["http/1.1", "h2", "h2c", "h3", "websocket"],
            "target": format!("{}-{}", std::env::consts::ARCH, std::env::consts::OS),
        });
        let text = serde_json::to_string_pretty(&v).unwrap_or_default();
        crate::sys::files::stdout(&format!("{text}\n"));
    } else {
        let here = match &uring {
            Ok(_) => "io_uring available on this kernel".to_string(),
            Err(why) => format!("io_uring not available here: {why}"),
        };
        crate::sys::files::stdout(&format!("volley {LONG_VERSION}\n{here}\n"));
    }
    ExitCode::Ok
}
