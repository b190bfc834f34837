//! The `volley` binary: parse the command line, run, map the result to an exit code.

use clap::Parser;

fn main() {
    let argv: Vec<String> = std::env::args().collect();
    let cli = volley::cli::Cli::parse();
    let code = volley::run(cli, argv);
    std::process::exit(code as i32);
}
