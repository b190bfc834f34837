//! The `volley` binary: parse the command line, run it, exit with its code.

use clap::Parser;

fn main() {
    let argv: Vec<String> = std::env::args().collect();
    let code = volley::cmd::main(volley::cmd::Cli::parse(), argv);
    std::process::exit(code as i32);
}
