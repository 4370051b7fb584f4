//! `planlock validate`: every problem of a plan, with its code, class and JSON Pointer.

use std::fmt::Write as _;
use std::path::Path;

use planlock::{FailureKind, Problem};
use serde::Serialize;

use crate::args::Format;
use crate::error::{CliError, EXIT_VALID, class_exit};
use crate::report::line;

/// The JSON report.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct ValidateReport<'a> {
    valid: bool,
    class: Option<&'static str>,
    problems: &'a [Problem],
    error: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    error_code: Option<&'static str>,
}

pub fn validate(out: &mut String, format: Format, file: &Path) -> Result<u8, CliError> {
    let (class, problems): (Option<FailureKind>, Vec<Problem>) = match super::read_plan(file) {
        Err(e) => {
            return match format {
                Format::Json => {
                    let report = ValidateReport {
                        valid: false,
                        class: None,
                        problems: &[],
                        error: Some(&e.message),
                        error_code: Some(e.code),
                    };
                    line!(out, "{}", serde_json::to_string(&report).unwrap_or_default());
                    Ok(e.exit)
                }
                Format::Text => Err(e),
            };
        }
        Ok(Ok(_)) => (None, Vec::new()),
        Ok(Err(rejection)) => (Some(rejection.class()), rejection.into_problems()),
    };
    match format {
        Format::Json => {
            let report = ValidateReport {
                valid: class.is_none(),
                class: class.map(FailureKind::as_str),
                problems: &problems,
                error: None,
                error_code: None,
            };
            line!(out, "{}", serde_json::to_string(&report).unwrap_or_default());
        }
        Format::Text => match class {
            None => line!(out, "{}: valid", file.display()),
            Some(class) => {
                line!(out, "{}: rejected ({class}), {} problem(s)", file.display(), problems.len());
                for p in &problems {
                    line!(out, "{p}");
                }
            }
        },
    }
    Ok(class.map_or(EXIT_VALID, class_exit))
}
