//! The `planlock` command-line tool: `main` parses the arguments, runs one command, and writes
//! its report; each command is a module of [`commands`], and [`output`] is where every answer
//! is written (text escaped, JSON exact, errors in one place).
//!
//! Exit codes (README, "Exit codes"; tested against it): 0 valid / completed / found, 1
//! CycleFail (nothing to abandon included), 2 usage or I/O error (writing the output included),
//! 3 FailFast (boot failures included), 4 InterventionRequired (a paused cycle waits for a
//! person).
//!
//! Every command writes its whole report to a buffer and the buffer to stdout at the end, so a
//! failed write (a full disk, a closed pipe) is one error to report, never a panic.

mod args;
mod commands;
mod error;
mod output;
mod place;
mod report;
mod runtime;
mod telemetry;

use std::process::ExitCode;

use clap::Parser;

use crate::args::{Cli, Format};
use crate::error::{CliError, EXIT_USAGE, EXIT_VALID};
use crate::output::{Output, asks_for_json};

fn main() -> ExitCode {
    let args: Vec<_> = std::env::args_os().collect();
    let cli = match Cli::try_parse_from(&args) {
        Ok(cli) => cli,
        Err(e) => return ExitCode::from(usage(&e, asks_for_json(&args[1..]))),
    };
    let mut out = Output::new(cli.format);
    let export = telemetry::start();
    let code = match commands::dispatch(cli.command, &mut out) {
        Ok(code) => code,
        Err(e) => {
            out.error(&e);
            e.exit
        }
    };
    let code = out.finish(code);
    export.finish();
    ExitCode::from(code)
}

/// Answers a command line that did not parse (or asked for `--help` or `--version`, which go to
/// stdout as text); its exit code.
fn usage(e: &clap::Error, json: bool) -> u8 {
    use clap::error::ErrorKind;
    // The message quotes what was typed: escaped line by line, like every other line.
    let rendered = e.render().to_string();
    if matches!(e.kind(), ErrorKind::DisplayHelp | ErrorKind::DisplayVersion) {
        let mut out = Output::new(Format::Text);
        out.lines(&rendered, false);
        return out.finish(EXIT_VALID);
    }
    let mut out = Output::new(if json { Format::Json } else { Format::Text });
    match json {
        true => out.error(&CliError::usage("usage", rendered.trim_end().trim_start_matches("error: "))),
        false => out.lines(&rendered, true),
    }
    out.finish(EXIT_USAGE)
}
