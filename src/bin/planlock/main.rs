//! The `planlock` command-line tool: `main` parses the arguments, runs one command, and writes
//! its report; each command is a module of [`commands`].
//!
//! Exit codes: 0 valid / completed, 1 CycleFail, 2 usage or I/O error (writing the output
//! included), 3 FailFast (boot failures included), 4 InterventionRequired.
//!
//! Every command writes its whole report to a buffer and the buffer to stdout at the end, so a
//! failed write (a full disk, a closed pipe) is one error to report, never a panic.

mod args;
mod commands;
mod error;
mod report;

use std::io::Write as _;
use std::process::ExitCode;

use clap::Parser;

use crate::args::Cli;
use crate::error::{EXIT_USAGE, EXIT_VALID, say};

fn main() -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => {
            // `--help` and `--version` come here too, to stdout.
            let _ = e.print();
            return ExitCode::from(if e.use_stderr() { EXIT_USAGE } else { EXIT_VALID });
        }
    };
    let mut out = String::new();
    let code = match commands::dispatch(cli.command, &mut out) {
        Ok(code) => code,
        Err(e) => {
            say(&e.message);
            e.exit
        }
    };
    let mut stdout = std::io::stdout().lock();
    match stdout.write_all(out.as_bytes()).and_then(|()| stdout.flush()) {
        Ok(()) => ExitCode::from(code),
        // Whoever closed the pipe is not reading any more: nothing to say, and no one to say it to.
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => ExitCode::from(EXIT_USAGE),
        Err(e) => {
            say(&format!("cannot write the output: {e}"));
            ExitCode::from(EXIT_USAGE)
        }
    }
}
