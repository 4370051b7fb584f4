//! `planlock validate`: every problem of a plan, with its code, class and JSON Pointer.

use std::path::Path;

use planlock::{FailureKind, Problem};
use serde::Serialize;

use crate::error::{CliError, EXIT_VALID, class_exit};
use crate::output::{Output, Report, Text, line};

/// The report: whether the plan is valid, and every problem (or why it could not be read).
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct ValidateReport<'a> {
    /// How the text names the plan.
    #[serde(skip)]
    file: &'a Path,
    valid: bool,
    class: Option<&'static str>,
    problems: Vec<Problem>,
    error: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    error_code: Option<&'static str>,
}

impl Report for ValidateReport<'_> {
    fn text(&self, out: &mut Text) {
        match (self.error, self.class) {
            (Some(e), _) => line!(out, "{e}"),
            (None, None) => line!(out, "{}: valid", self.file.display()),
            (None, Some(class)) => {
                line!(out, "{}: rejected ({class}), {} problem(s)", self.file.display(), self.problems.len());
                for p in &self.problems {
                    line!(out, "{p}");
                }
            }
        }
    }
}

pub fn validate(out: &mut Output, file: &Path) -> Result<u8, CliError> {
    let read = super::read_plan(file);
    let (class, problems) = match &read {
        Err(_) | Ok(Ok(_)) => (None, Vec::new()),
        Ok(Err(rejection)) => (Some(rejection.class()), rejection.problems().to_vec()),
    };
    let error = read.as_ref().err();
    // A plan that cannot be read is an error line in text; the JSON report says it in `error`.
    if let (Some(e), false) = (error, out.is_json()) {
        return Err(e.clone());
    }
    let report = ValidateReport {
        file,
        valid: error.is_none() && class.is_none(),
        class: class.map(FailureKind::as_str),
        problems,
        error: error.map(|e| e.message.as_str()),
        error_code: error.map(|e| e.code),
    };
    out.report(&report);
    Ok(match (error, class) {
        (Some(e), _) => e.exit,
        (None, class) => class.map_or(EXIT_VALID, class_exit),
    })
}
