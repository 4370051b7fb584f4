//! Reading a plan from a file or standard input, as `validate`, `hash` and `run` do.

use std::io::Read;
use std::path::Path;

use planlock::{Failure, FailureKind, PlanReadError, Problem, Rejection, ValidPlan};

use crate::error::{CliError, class_exit};

/// Reads and validates the plan at `file` (`-` for standard input). The read is capped by
/// [`ValidPlan::from_reader`]; an I/O failure is the outer error, a rejection the inner one.
pub(super) fn read_plan(file: &Path) -> Result<Result<ValidPlan, Rejection>, CliError> {
    let cannot_read =
        |e: &dyn std::fmt::Display| CliError::usage("cannot-read", format!("cannot read {}: {e}", file.display()));
    let reader: Box<dyn Read> = if file.as_os_str() == "-" {
        Box::new(std::io::stdin().lock())
    } else {
        Box::new(std::fs::File::open(file).map_err(|e| cannot_read(&e))?)
    };
    match ValidPlan::from_reader(reader) {
        Ok(plan) => Ok(Ok(plan)),
        Err(PlanReadError::Rejected(rejection)) => Ok(Err(rejection)),
        Err(PlanReadError::Io(e)) => Err(cannot_read(&e)),
        Err(other) => Err(cannot_read(&other)),
    }
}

/// Why a plan could not be had: the error, and the problems of a rejection.
pub(super) struct PlanFailure {
    pub(super) error: CliError,
    pub(super) class: Option<FailureKind>,
    pub(super) problems: Vec<Problem>,
}

/// Reads and validates a plan.
pub(super) fn load_plan(file: &Path) -> Result<ValidPlan, PlanFailure> {
    match read_plan(file) {
        Err(error) => Err(PlanFailure { error, class: None, problems: vec![] }),
        Ok(Err(rejection)) => Err(PlanFailure {
            error: CliError {
                exit: class_exit(rejection.class()),
                code: rejection.code(),
                message: format!("{}: {rejection}", file.display()),
            },
            class: Some(rejection.class()),
            problems: rejection.into_problems(),
        }),
        Ok(Ok(plan)) => Ok(plan),
    }
}
