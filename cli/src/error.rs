//! Exit codes, and the one error type a command returns.

use planlock::{Failure, FailureKind};

/// Valid, completed, or found.
pub const EXIT_VALID: u8 = 0;
/// A plan rejected as CycleFail, a failed cycle, nothing to abandon.
pub const EXIT_CYCLE_FAIL: u8 = 1;
/// Usage, or I/O (writing the output included).
pub const EXIT_USAGE: u8 = 2;
/// FailFast, boot failures included.
pub const EXIT_FAIL_FAST: u8 = 3;
/// InterventionRequired: a validator paused the cycle.
pub const EXIT_INTERVENTION: u8 = 4;

/// The exit code of a failure class.
pub fn class_exit(kind: FailureKind) -> u8 {
    match kind {
        FailureKind::CycleFail => EXIT_CYCLE_FAIL,
        FailureKind::FailFast => EXIT_FAIL_FAST,
    }
}

/// Why a command stopped without its report: the exit code, the failure's stable code, and the
/// message (written by [`Output::error`](crate::output::Output::error): `{"error", "errorCode"}`
/// under `--format json`, a line on stderr otherwise).
#[derive(Debug, Clone)]
pub struct CliError {
    /// The process's exit code.
    pub exit: u8,
    /// The failure's stable code (`cannot-read`, `plan-hash-mismatch`, …).
    pub code: &'static str,
    /// What was wrong, where, and what to do.
    pub message: String,
}

impl CliError {
    /// A usage or I/O error (exit 2).
    pub fn usage(code: &'static str, message: impl Into<String>) -> CliError {
        CliError { exit: EXIT_USAGE, code, message: message.into() }
    }

    /// A library failure, with the exit code of its class.
    pub fn of<F: Failure + std::fmt::Display + ?Sized>(failure: &F) -> CliError {
        CliError { exit: class_exit(failure.kind()), code: failure.code(), message: failure.to_string() }
    }

    /// A FailFast failure of an error type without a class (exit 3).
    pub fn fail_fast(code: &'static str, message: impl Into<String>) -> CliError {
        CliError { exit: EXIT_FAIL_FAST, code, message: message.into() }
    }

    /// A place that could not be opened: a bad key or URL is usage (2), the rest FailFast (3).
    pub fn of_place(e: &planlock::backend::BackendError) -> CliError {
        let exit = if e.is_usage() { EXIT_USAGE } else { EXIT_FAIL_FAST };
        CliError { exit, code: e.code(), message: e.to_string() }
    }
}
