//! `volley serve [--port P] [--bind ADDR]`: the built-in reference server, for trying volley.

use std::path::PathBuf;

use clap::Args;

use super::ExitCode;

/// `volley serve` flags.
#[derive(Debug, Args, Clone)]
pub struct ServeArgs {
    /// Port on 127.0.0.1 (0 picks a free one and prints it).
    #[arg(short = 'p', long, default_value_t = 8080)]
    pub port: u16,

    /// Address to bind.
    #[arg(long, default_value = "127.0.0.1")]
    pub bind: String,

    /// Serve HTTPS with this PEM certificate chain [default: $TLS_CERT].
    #[arg(long, value_name = "FILE", requires = "tls_key")]
    pub tls_cert: Option<PathBuf>,

    /// The certificate's PEM private key [default: $TLS_KEY].
    #[arg(long, value_name = "FILE", requires = "tls_cert")]
    pub tls_key: Option<PathBuf>,
}

/// Serves until killed; exit 2 when the address cannot be bound or the certificate read.
pub(crate) fn execute(args: &ServeArgs) -> ExitCode {
    // The reference servers' contract: TLS_CERT and TLS_KEY in the environment mean HTTPS.
    let from_env = |k: &str| {
        std::env::var_os(k)
            .filter(|v| !v.is_empty())
            .map(PathBuf::from)
    };
    let files = match (&args.tls_cert, &args.tls_key) {
        (Some(c), Some(k)) => Some((c.clone(), k.clone())),
        _ => from_env("TLS_CERT").zip(from_env("TLS_KEY")),
    };
    let tls = match files
        .map(|(c, k)| crate::serve::tls_config(&c, &k))
        .transpose()
    {
        Ok(t) => t,
        Err(e) => {
            stderrln!("volley serve: {e}");
            return ExitCode::Usage;
        }
    };
    let scheme = if tls.is_some() { "https" } else { "http" };
    let announce = |local: std::net::SocketAddr| {
        crate::sys::files::stdout(&format!("volley serve: listening on {scheme}://{local}/ (endpoints: / POST / /hello /delay?ms=N /bytes?n=N)\n"));
    };
    match crate::serve::run(&args.bind, args.port, tls, announce) {
        Ok(()) => ExitCode::Ok,
        Err(e) => {
            stderrln!("volley serve: --port {}: {e}", args.port);
            ExitCode::Usage
        }
    }
}
