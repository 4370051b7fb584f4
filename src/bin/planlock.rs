//! The `planlock` command-line tool.
//!
//! Exit codes: 0 valid, 1 rejected with class CycleFail, 3 rejected with class FailFast,
//! 2 usage or I/O error.

use std::io::Read;
use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand, ValueEnum};
use planlock::{FailureKind, MAX_PLAN_BYTES, Problem, ValidPlan};

#[derive(Parser)]
#[command(name = "planlock", version, about = "Check execution plans against the planlock step contract")]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Validate a plan document; report every problem with its code, class and JSON Pointer.
    Validate {
        /// Output format.
        #[arg(long, value_enum, default_value_t = Format::Text)]
        format: Format,
        /// The plan file, or `-` for standard input.
        file: PathBuf,
    },
}

#[derive(Clone, Copy, ValueEnum)]
enum Format {
    Text,
    Json,
}

const EXIT_VALID: u8 = 0;
const EXIT_CYCLE_FAIL: u8 = 1;
const EXIT_USAGE: u8 = 2;
const EXIT_FAIL_FAST: u8 = 3;

fn main() -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => {
            let _ = e.print();
            return ExitCode::from(if e.use_stderr() { EXIT_USAGE } else { EXIT_VALID });
        }
    };
    match cli.command {
        Command::Validate { format, file } => validate(format, &file),
    }
}

fn read_input(file: &PathBuf) -> std::io::Result<Vec<u8>> {
    let mut bytes = Vec::new();
    let limit = MAX_PLAN_BYTES as u64 + 1;
    if file.as_os_str() == "-" {
        std::io::stdin().lock().take(limit).read_to_end(&mut bytes)?;
    } else {
        std::fs::File::open(file)?.take(limit).read_to_end(&mut bytes)?;
    }
    Ok(bytes)
}

fn validate(format: Format, file: &PathBuf) -> ExitCode {
    let bytes = match read_input(file) {
        Ok(b) => b,
        Err(e) => {
            eprintln!("planlock: cannot read {}: {e}", file.display());
            return ExitCode::from(EXIT_USAGE);
        }
    };
    let (class, problems): (Option<FailureKind>, Vec<Problem>) = match ValidPlan::from_slice(&bytes) {
        Ok(_) => (None, Vec::new()),
        Err(rejection) => (Some(rejection.class()), rejection.into_problems()),
    };
    match format {
        Format::Json => {
            let report = serde_json::json!({
                "valid": class.is_none(),
                "class": class.map(FailureKind::as_str),
                "problems": problems,
            });
            println!("{report}");
        }
        Format::Text => match class {
            None => println!("{}: valid", file.display()),
            Some(class) => {
                println!("{}: rejected ({class}), {} problem(s)", file.display(), problems.len());
                for p in &problems {
                    println!("{p}");
                }
            }
        },
    }
    ExitCode::from(match class {
        None => EXIT_VALID,
        Some(FailureKind::CycleFail) => EXIT_CYCLE_FAIL,
        Some(FailureKind::FailFast) => EXIT_FAIL_FAST,
    })
}
