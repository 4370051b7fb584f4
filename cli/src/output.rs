//! How a command's answer reaches the terminal, written once for every command: its report as
//! one JSON object (`--format json`) or as text lines, and a failure as `{"error", "errorCode"}`
//! or a line on stderr.
//!
//! Nothing from outside reaches a terminal raw (CONTRACT §11): every text line goes through
//! [`escape_invisible`] (control, bidi and zero-width characters written as `\u{…}`), and the JSON
//! through [`json_escape_invisible`] (the same value, those characters as JSON escapes). A
//! command writes its report here and returns its exit code, or returns a [`CliError`] having
//! written nothing: so every run prints exactly one report or one error.

use std::fmt::{self, Write as _};
use std::io::Write as _;

use planlock::text::{escape_invisible, json_escape_invisible};
use serde::Serialize;

use crate::args::Format;
use crate::error::{CliError, EXIT_USAGE};

/// A command's report: its JSON form is its `Serialize`; [`text`](Report::text) writes the lines a
/// person reads.
pub trait Report: Serialize {
    /// Writes the report as text lines.
    fn text(&self, out: &mut Text);
}

/// Text lines, each escaped whole as it is written: a value cannot end its line early or reach
/// the terminal as anything but visible text.
#[derive(Default)]
pub struct Text(String);

impl Text {
    /// Appends one line (without its line break).
    pub fn line(&mut self, args: fmt::Arguments<'_>) {
        let mut line = String::new();
        let _ = line.write_fmt(args);
        self.0.push_str(&escape_invisible(&line));
        self.0.push('\n');
    }
}

/// Appends one formatted line to a [`Text`].
macro_rules! line {
    ($out:expr, $($arg:tt)*) => {
        $out.line(format_args!($($arg)*))
    };
}
pub(crate) use line;

/// The JSON text of `value`, as printed: one line, exact JSON, no invisible character raw.
pub fn json_line<T: Serialize + ?Sized>(value: &T) -> String {
    let json = serde_json::to_string(value).unwrap_or_else(|e| {
        serde_json::json!({ "error": format!("cannot write the report: {e}"), "errorCode": "output" }).to_string()
    });
    json_escape_invisible(&json).into_owned() + "\n"
}

/// What a failed command prints under `--format json`.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct ErrorReport<'a> {
    error: &'a str,
    error_code: &'a str,
}

/// Where the answer of one run goes, in the format asked for.
pub struct Output {
    format: Format,
    stdout: String,
    stderr: Text,
}

impl Output {
    /// Nothing written yet.
    pub fn new(format: Format) -> Output {
        Output { format, stdout: String::new(), stderr: Text::default() }
    }

    /// Whether JSON was asked for (`--format json`).
    pub fn is_json(&self) -> bool {
        matches!(self.format, Format::Json)
    }

    /// Writes `report` in the format asked for.
    pub fn report<R: Report>(&mut self, report: &R) {
        match self.format {
            Format::Json => self.stdout.push_str(&json_line(report)),
            Format::Text => {
                let mut text = Text::default();
                report.text(&mut text);
                self.stdout.push_str(&text.0);
            }
        }
    }

    /// Writes the failure of a command that wrote no report: `{"error", "errorCode"}` on stdout
    /// under `--format json`, else a line on stderr.
    pub fn error(&mut self, e: &CliError) {
        match self.format {
            Format::Json => self.stdout.push_str(&json_line(&ErrorReport { error: &e.message, error_code: e.code })),
            Format::Text => line!(self.stderr, "planlock: {}", e.message),
        }
    }

    /// Writes a JSON document (the schema), indented, in either format: it is its own report.
    pub fn document(&mut self, value: &serde_json::Value) {
        self.stdout.push_str(&json_escape_invisible(&format!("{value:#}")));
        self.stdout.push('\n');
    }

    /// Writes a text of several lines (clap's usage and help), each escaped, to stdout or stderr.
    pub fn lines(&mut self, text: &str, to_stderr: bool) {
        let mut lines = Text::default();
        for l in text.trim_end().lines() {
            line!(lines, "{l}");
        }
        match to_stderr {
            true => self.stderr.0.push_str(&lines.0),
            false => self.stdout.push_str(&lines.0),
        }
    }

    /// Writes what was gathered and returns the exit code: `code`, or 2 when stdout cannot be
    /// written (a closed pipe says nothing more: no one is reading).
    pub fn finish(self, code: u8) -> u8 {
        // If stderr itself cannot be written, there is nowhere left to report it.
        let _ = std::io::stderr().lock().write_all(self.stderr.0.as_bytes());
        let mut stdout = std::io::stdout().lock();
        match stdout.write_all(self.stdout.as_bytes()).and_then(|()| stdout.flush()) {
            Ok(()) => code,
            Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => EXIT_USAGE,
            Err(e) => {
                let mut text = Text::default();
                line!(text, "planlock: cannot write the output: {e}");
                let _ = std::io::stderr().lock().write_all(text.0.as_bytes());
                EXIT_USAGE
            }
        }
    }
}

/// Whether the command line asks for JSON (`--format json` or `--format=json`), read from the raw
/// arguments: a usage error is answered in the format asked for although the line did not parse.
pub fn asks_for_json(args: &[std::ffi::OsString]) -> bool {
    let mut args = args.iter().map(|a| a.to_str().unwrap_or_default());
    while let Some(arg) = args.next() {
        match arg {
            "--" => return false,
            "--format=json" => return true,
            "--format" if args.next() == Some("json") => return true,
            _ => {}
        }
    }
    false
}
