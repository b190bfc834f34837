//! The `volley` binary: parse the command line, run it, exit with its code.

use clap::Parser;

fn main() {
    let argv: Vec<String> = std::env::args().collect();
    let cli = match volley::cmd::Cli::try_parse_from(&argv) {
        Ok(cli) => cli,
        // Other tools' flags get a tip naming volley's (cmd::habits).
        Err(e) => volley::cmd::habits::explain(e, &argv).exit(),
    };
    let code = volley::cmd::main(cli, argv);
    std::process::exit(code as i32);
}
