//! Configuration: flags and suite files turned into validated specs before anything is sent.
//! [`RunConfig`] is what `volley run`'s flags mean once checked ([`flags`]); a suite file is
//! checked and expanded into cells that each hold one ([`suite`]). Every error names the flag
//! ([`Flag`]) or the file, line and key it came from (exit code 2).

pub(crate) mod checks;
pub(crate) mod flag;
pub mod flags;
pub(crate) mod grpc;
pub mod http;
pub mod located;
pub(crate) mod monitor;
pub mod proxy;
pub mod ramp;
pub mod request;
pub(crate) mod requests;
pub(crate) mod shape;
pub mod shard;
pub mod suite;
// Thresholds are the model's (a bound on a metric); the flag and suite key are read here.
pub use volley_model::metric::threshold;
pub mod tls;
pub mod url;
pub mod ws;

pub use flag::Flag;
pub use flags::RunFlags;
pub use grpc::Reflect;
pub use located::FileError;
pub use monitor::{monitor_config, GcLogConfig, MonitorConfig, DEFAULT_MONITOR_INTERVAL};
pub use proxy::ProxyEnv;
pub use request::{generated_body, MAX_BODY_BYTES};
pub use url::parse_url;

use volley_plan::LoadSpec;

/// A configuration problem found before any load is sent.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    /// A flag has a value that cannot be used.
    #[error("{flag}: {message}")]
    Flag {
        /// The flag checked.
        flag: Flag,
        /// What is wrong and, where it helps, what would be right.
        message: String,
        /// Other flags the problem involves (a conflict), which a suite error may point at.
        also: Vec<Flag>,
    },
    /// The `--requests-file` cannot be read or used (its error names the file, line and key).
    #[error("--requests-file {0}")]
    Requests(Box<requests::RequestsError>),
    /// A proxy variable of the environment (`HTTPS_PROXY`, …) cannot be used.
    #[error("the {name} variable: {message} (or set --proxy, or --noproxy '*')")]
    ProxyEnv {
        /// The variable.
        name: String,
        /// What is wrong.
        message: String,
    },
    /// A variable of the environment that tunes the engine has a value that cannot be used.
    #[error("the {name} variable: {message}")]
    Env {
        /// The variable.
        name: &'static str,
        /// What is wrong and what would be right.
        message: String,
    },
    /// A file named by a flag cannot be read.
    #[error("{flag} {path}: {source}")]
    File {
        /// The flag that named the file.
        flag: Flag,
        /// The file.
        path: String,
        /// The operating system's reason.
        source: std::io::Error,
    },
}

impl From<requests::RequestsError> for ConfigError {
    fn from(e: requests::RequestsError) -> Self {
        ConfigError::Requests(Box::new(e))
    }
}

impl ConfigError {
    /// A bad value of one flag.
    pub(crate) fn flag(flag: Flag, message: impl Into<String>) -> Self {
        ConfigError::Flag {
            flag,
            message: message.into(),
            also: Vec::new(),
        }
    }

    /// A flag that cannot go with `others`.
    pub(crate) fn conflict(flag: Flag, others: &[Flag], message: impl Into<String>) -> Self {
        ConfigError::Flag {
            flag,
            message: message.into(),
            also: others.to_vec(),
        }
    }

    /// Every flag the problem involves, the checked one first.
    pub fn flags(&self) -> Vec<Flag> {
        match self {
            ConfigError::Flag { flag, also, .. } => {
                std::iter::once(*flag).chain(also.iter().copied()).collect()
            }
            ConfigError::File { flag, .. } => vec![*flag],
            ConfigError::Requests(_) => vec![Flag::RequestsFile],
            ConfigError::ProxyEnv { .. } => vec![Flag::Proxy],
            ConfigError::Env { .. } => vec![Flag::Rate],
        }
    }
}

/// What one run is, validated: the load, the server to monitor, the pass/fail criteria. Where
/// its results go is the command's business, not this.
#[derive(Debug, Clone)]
pub struct RunConfig {
    /// The load.
    pub load: LoadSpec,
    /// Server monitor (`--pid`).
    pub monitor: Option<MonitorConfig>,
    /// Pass/fail criteria (`--threshold`).
    pub thresholds: Vec<threshold::Threshold>,
    /// `--allow-shortfall`: an open loop short of its rate does not fail the run.
    pub allow_shortfall: bool,
    /// `--start-at`, `--clock-budget`, `--max-late` (docs/contract.md, "Shards").
    pub start: shard::StartSpec,
    /// `--reflect`: the gRPC call waits for the server's descriptors
    /// ([`RunConfig::reflected`]); `None` once they came, or without it.
    pub reflect: Option<Reflect>,
}

/// Command-line arguments (without the program name: `["http://a/", "-c", "10"]`) read into
/// the clap arguments `T` (`RunFlags`, a command's `Args`) as the command line reads them: for
/// a program or a test that has an argv, not a shell.
pub fn args_from<T, I, S>(args: I) -> Result<T, clap::Error>
where
    T: clap::Args,
    I: IntoIterator<Item = S>,
    S: Into<std::ffi::OsString> + Clone,
{
    let argv = std::iter::once("volley".into()).chain(args.into_iter().map(Into::into));
    let matches = T::augment_args(clap::Command::new("volley")).try_get_matches_from(argv)?;
    T::from_arg_matches(&matches)
}
