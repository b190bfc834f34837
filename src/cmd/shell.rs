//! `volley completions SHELL` and `volley man`: the shell's completion script and the manual
//! pages, both generated from the one clap definition of the command line (docs/contract.md,
//! "Installing"), so they list every subcommand and flag as `--help` does.

use std::path::{Path, PathBuf};

use clap::{Args, CommandFactory};
use clap_complete::Shell;

use super::{Cli, ExitCode};

/// `volley completions`.
#[derive(Debug, Args, Clone)]
pub struct CompletionsArgs {
    /// The shell whose completion script is printed (bash, zsh, fish, powershell, elvish).
    #[arg(value_enum)]
    pub shell: Shell,
}

/// `volley man`.
#[derive(Debug, Args, Clone)]
pub struct ManArgs {
    /// Write every page (volley.1, volley-run.1, volley-history-check.1, …) into DIR instead of
    /// printing volley.1.
    #[arg(long, value_name = "DIR")]
    pub dir: Option<PathBuf>,
}

/// Prints the completion script of `shell`.
pub(crate) fn completions(args: &CompletionsArgs) -> ExitCode {
    let mut out = Vec::new();
    clap_complete::generate(args.shell, &mut Cli::command(), "volley", &mut out);
    crate::sys::files::stdout(&String::from_utf8_lossy(&out));
    ExitCode::Ok
}

/// Prints volley.1, or writes every page into `--dir` (exit 3 when one cannot be written).
pub(crate) fn man(args: &ManArgs) -> ExitCode {
    let cmd = Cli::command();
    let Some(dir) = &args.dir else {
        let mut out = Vec::new();
        if let Err(e) = clap_mangen::Man::new(cmd).render(&mut out) {
            stderrln!("volley man: {e}");
            return ExitCode::Failed;
        }
        crate::sys::files::stdout(&String::from_utf8_lossy(&out));
        return ExitCode::Ok;
    };
    match write_pages(cmd, "volley", dir) {
        Ok(()) => ExitCode::Ok,
        Err(e) => {
            stderrln!("volley man: --dir {}: {e}", dir.display());
            ExitCode::Failed
        }
    }
}

/// Writes the page of `cmd` (named `name`) and of each of its subcommands, depth first.
fn write_pages(cmd: clap::Command, name: &str, dir: &Path) -> std::io::Result<()> {
    std::fs::create_dir_all(dir)?;
    let cmd = cmd.name(name.to_string()).bin_name(name.replace('-', " "));
    let mut page = Vec::new();
    clap_mangen::Man::new(cmd.clone()).render(&mut page)?;
    crate::sys::files::write_atomically(&dir.join(format!("{name}.1")), &page)?;
    for sub in cmd.get_subcommands().filter(|s| !s.is_hide_set()) {
        let sub_name = format!("{name}-{}", sub.get_name());
        write_pages(sub.clone(), &sub_name, dir)?;
    }
    Ok(())
}
