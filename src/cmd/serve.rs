//! `volley serve [--port P] [--bind ADDR]`: the built-in reference server, for trying volley.

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
}

/// Serves until killed; exit 2 when the address cannot be bound.
pub fn execute(args: &ServeArgs) -> ExitCode {
    let announce = |local: std::net::SocketAddr| {
        crate::sys::files::stdout(&format!("volley serve: listening on http://{local}/ (endpoints: / POST / /hello /delay?ms=N /bytes?n=N)\n"));
    };
    match crate::serve::run(&args.bind, args.port, announce) {
        Ok(()) => ExitCode::Ok,
        Err(e) => {
            eprintln!("volley serve: --port {}: {e}", args.port);
            ExitCode::Usage
        }
    }
}
