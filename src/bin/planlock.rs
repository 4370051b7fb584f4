//! The `planlock` command-line tool.
//!
//! Exit codes: 0 valid / completed, 1 CycleFail, 2 usage or I/O error (writing the output
//! included), 3 FailFast (boot failures included), 4 InterventionRequired.
//!
//! Every command writes its whole report to a buffer and the buffer to stdout at the end, so a
//! failed write (a full disk, a closed pipe) is one error to report, never a panic.

use std::fmt::Write as _;
use std::io::{Read, Write as _};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use std::sync::Arc;

use clap::{Parser, Subcommand, ValueEnum};
use planlock::demo::{Demo, ReviewGate};
use planlock::runtime::{Boot, Runtime};
use planlock::session::FileSessionStore;
use planlock::{
    CycleOutcome, Executor, Failure, FailureKind, HashParts, PlanReadError, PolicyProfile, Problem, Rejection,
    StepType, ValidPlan,
};

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
    /// Print the plan hash (`lastExecutionPlanHash`) of a plan with its policy profile. Exits 0
    /// with the hash, 1 or 3 when the plan is rejected (its class), 2 when it cannot be read, 3
    /// when a policy file is missing, unreadable or invalid.
    Hash {
        /// The directory holding the policy profiles.
        #[arg(long)]
        policy_root: PathBuf,
        /// Also print the per-part digests, as JSON.
        #[arg(long)]
        parts: bool,
        /// The plan file, or `-` for standard input.
        plan: PathBuf,
    },
    /// Boot a session and run one cycle of the plan with the demo handlers. A plan may name the
    /// demo validator `demo-review` (version `1`, configuration `{}`), which blocks every
    /// storage write for review. A relative `repoPath` in the plan is resolved against the
    /// directory that holds the plan file (the working directory for `-`).
    Run {
        /// The session root (`ops/runtime/session_state.json` lives under it). Created if missing;
        /// nothing is written under it until a cycle completes.
        #[arg(long)]
        root: PathBuf,
        /// The directory holding the policy profiles.
        #[arg(long)]
        policy_root: PathBuf,
        /// Make this step type's handler fail (repeatable), to show the failure semantics; any
        /// step type, `PersistSession` included (the save fails, nothing is written).
        #[arg(long = "fail", value_parser = parse_step_type)]
        fail: Vec<StepType>,
        /// Output format.
        #[arg(long, value_enum, default_value_t = Format::Text)]
        format: Format,
        /// The plan file, or `-` for standard input.
        plan: PathBuf,
    },
}

fn parse_step_type(s: &str) -> Result<StepType, String> {
    StepType::from_wire(s).ok_or_else(|| {
        let names: Vec<_> = StepType::ALL.iter().map(|t| t.wire_name()).collect();
        format!("unknown step type `{s}`; one of: {}", names.join(", "))
    })
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
const EXIT_INTERVENTION: u8 = 4;

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
    let code = match cli.command {
        Command::Validate { format, file } => validate(&mut out, format, &file),
        Command::Hash { policy_root, parts, plan } => hash(&mut out, &policy_root, parts, &plan),
        Command::Run { root, policy_root, fail, format, plan } => {
            run(&mut out, &root, &policy_root, fail, format, &plan)
        }
    };
    let mut stdout = std::io::stdout().lock();
    match stdout.write_all(out.as_bytes()).and_then(|()| stdout.flush()) {
        Ok(()) => ExitCode::from(code),
        // Whoever closed the pipe is not reading any more: nothing to say, and no one to say it to.
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => ExitCode::from(EXIT_USAGE),
        Err(e) => {
            say(format_args!("cannot write the output: {e}"));
            ExitCode::from(EXIT_USAGE)
        }
    }
}

/// A message on stderr; if stderr itself cannot be written, there is nowhere left to report it.
fn say(message: std::fmt::Arguments<'_>) {
    let _ = writeln!(std::io::stderr().lock(), "planlock: {message}");
}

/// Appends one line to the report (writing to a `String` cannot fail).
macro_rules! line {
    ($out:expr, $($arg:tt)*) => {{
        let _ = writeln!($out, $($arg)*);
    }};
}

/// Reads and validates the plan at `file` (`-` for standard input). The read is capped by
/// [`ValidPlan::from_reader`]; an I/O failure is the outer error, a rejection the inner one.
fn read_plan(file: &Path) -> std::io::Result<Result<ValidPlan, Rejection>> {
    let reader: Box<dyn Read> =
        if file.as_os_str() == "-" { Box::new(std::io::stdin().lock()) } else { Box::new(std::fs::File::open(file)?) };
    match ValidPlan::from_reader(reader) {
        Ok(plan) => Ok(Ok(plan)),
        Err(PlanReadError::Rejected(rejection)) => Ok(Err(rejection)),
        Err(PlanReadError::Io(e)) => Err(e),
        Err(other) => Err(std::io::Error::other(other)),
    }
}

fn cannot_read(file: &Path, e: &std::io::Error) -> String {
    format!("cannot read {}: {e}", file.display())
}

fn validate(out: &mut String, format: Format, file: &Path) -> u8 {
    let (class, problems): (Option<FailureKind>, Vec<Problem>) = match read_plan(file) {
        Err(e) => {
            let error = cannot_read(file, &e);
            match format {
                Format::Json => line!(
                    out,
                    "{}",
                    serde_json::json!({ "valid": false, "class": null, "problems": [], "error": error })
                ),
                Format::Text => say(format_args!("{error}")),
            }
            return EXIT_USAGE;
        }
        Ok(Ok(_)) => (None, Vec::new()),
        Ok(Err(rejection)) => (Some(rejection.class()), rejection.into_problems()),
    };
    match format {
        Format::Json => {
            let report = serde_json::json!({
                "valid": class.is_none(),
                "class": class.map(FailureKind::as_str),
                "problems": problems,
                "error": null,
            });
            line!(out, "{report}");
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
    class.map_or(EXIT_VALID, class_exit)
}

fn class_exit(kind: FailureKind) -> u8 {
    match kind {
        FailureKind::CycleFail => EXIT_CYCLE_FAIL,
        FailureKind::FailFast => EXIT_FAIL_FAST,
    }
}

/// Why a plan could not be had: the exit code, the message, and the problems of a rejection.
struct PlanFailure {
    code: u8,
    class: Option<FailureKind>,
    message: String,
    problems: Vec<Problem>,
}

/// Reads and validates a plan.
fn load_plan(file: &Path) -> Result<ValidPlan, PlanFailure> {
    match read_plan(file) {
        Err(e) => Err(PlanFailure { code: EXIT_USAGE, class: None, message: cannot_read(file, &e), problems: vec![] }),
        Ok(Err(rejection)) => Err(PlanFailure {
            code: class_exit(rejection.class()),
            class: Some(rejection.class()),
            message: format!("{}: {rejection}", file.display()),
            problems: rejection.into_problems(),
        }),
        Ok(Ok(plan)) => Ok(plan),
    }
}

fn hash(out: &mut String, policy_root: &Path, parts: bool, file: &Path) -> u8 {
    let plan = match load_plan(file) {
        Ok(p) => p,
        Err(failure) => {
            say(format_args!("{}", failure.message));
            return failure.code;
        }
    };
    match PolicyProfile::load(policy_root, &plan.metadata().policy_profile) {
        Ok(profile) => {
            let (digest, hash_parts) = (planlock::plan_hash(&profile, &plan), HashParts::of(&profile, &plan));
            if parts {
                line!(out, "{}", serde_json::json!({ "hash": digest, "parts": hash_parts }));
            } else {
                line!(out, "{digest}");
            }
            EXIT_VALID
        }
        Err(e) => {
            say(format_args!("{e}"));
            EXIT_FAIL_FAST
        }
    }
}

/// What `run` reports, in text or as one JSON object.
struct RunReport<'a> {
    boot: Option<&'static str>,
    outcome: &'a str,
    hash: Option<String>,
    steps: serde_json::Value,
    error: Option<String>,
    problems: Vec<Problem>,
}

impl RunReport<'_> {
    fn failed(outcome: &str, error: String) -> RunReport<'_> {
        RunReport {
            boot: None,
            outcome,
            hash: None,
            steps: serde_json::json!([]),
            error: Some(error),
            problems: vec![],
        }
    }

    fn write(self, out: &mut String, format: Format) {
        match format {
            Format::Json => line!(
                out,
                "{}",
                serde_json::json!({
                    "boot": self.boot, "outcome": self.outcome, "hash": self.hash, "steps": self.steps,
                    "error": self.error, "problems": self.problems,
                })
            ),
            Format::Text => {
                if let Some(b) = self.boot {
                    line!(out, "boot: {b}");
                }
                if let Some(steps) = self.steps.as_array() {
                    for s in steps {
                        line!(
                            out,
                            "  {:<10} {:<24} {}",
                            s["id"].as_str().unwrap_or(""),
                            s["type"].as_str().unwrap_or(""),
                            s["status"].as_str().unwrap_or("")
                        );
                    }
                }
                line!(out, "outcome: {}", self.outcome);
                if let Some(e) = &self.error {
                    line!(out, "error: {e}");
                }
                for p in &self.problems {
                    line!(out, "  {p}");
                }
            }
        }
    }
}

fn run(out: &mut String, root: &Path, policy_root: &Path, fail: Vec<StepType>, format: Format, file: &Path) -> u8 {
    let plan = match load_plan(file) {
        Ok(p) => p,
        Err(failure) => {
            let outcome = failure.class.map_or("error", FailureKind::as_str);
            let mut report = RunReport::failed(outcome, failure.message);
            report.problems = failure.problems;
            report.write(out, format);
            return failure.code;
        }
    };
    // The root itself may be created here; nothing under it is created at boot.
    if let Err(e) = std::fs::create_dir_all(root) {
        let message = format!("cannot create the session root {}: {e}", root.display());
        RunReport::failed("error", message).write(out, format);
        return EXIT_USAGE;
    }
    let store = match FileSessionStore::open(root) {
        Ok(s) => Arc::new(s),
        Err(e) => {
            RunReport::failed("FailFast", e.to_string()).write(out, format);
            return EXIT_FAIL_FAST;
        }
    };
    let runtime = match Runtime::boot(policy_root, plan, store) {
        Ok(r) => r,
        Err(e) => {
            let kind = e.kind();
            RunReport::failed(kind.as_str(), e.to_string()).write(out, format);
            return class_exit(kind);
        }
    };
    let boot = match runtime.boot_kind() {
        Boot::ColdStart => "cold",
        Boot::Resume(_) => "resume",
    };
    let hash = Some(runtime.plan_hash().to_string());
    // Relative `repoPath`s mean the directory that holds the plan, wherever planlock runs.
    let plan_dir = match file.parent() {
        Some(dir) if file.as_os_str() != "-" && !dir.as_os_str().is_empty() => dir.to_path_buf(),
        _ => PathBuf::from("."),
    };
    let demo = Demo::new().failing(fail).repo_base(plan_dir);
    let handlers =
        demo.handlers().on::<planlock::steps::PersistSession>(demo.persist_session(runtime.session_persister()));
    let executor =
        Executor::new(handlers).with_validator(ReviewGate::ID, ReviewGate::VERSION, &serde_json::json!({}), ReviewGate);
    let report = |outcome, steps, error| RunReport {
        boot: Some(boot),
        outcome,
        hash: hash.clone(),
        steps,
        error,
        problems: vec![],
    };
    let steps_of = |statuses: &dyn Fn(usize) -> &'static str| {
        let steps: Vec<_> = runtime
            .plan()
            .steps()
            .iter()
            .enumerate()
            .map(|(i, s)| serde_json::json!({ "id": s.id, "type": s.step_type().wire_name(), "status": statuses(i) }))
            .collect();
        serde_json::Value::Array(steps)
    };
    match runtime.run_cycle_blocking(&executor) {
        Ok(CycleOutcome::Completed(_)) => {
            report("completed", steps_of(&|_| "completed"), None).write(out, format);
            EXIT_VALID
        }
        Ok(CycleOutcome::InterventionRequired(paused)) => {
            let at = paused.intervention().step_index;
            let message = paused.intervention().reason.clone();
            let _ = paused.abandon();
            let status = move |i: usize| {
                if i < at {
                    "completed"
                } else if i == at {
                    "blocked"
                } else {
                    "not-run"
                }
            };
            report("InterventionRequired", steps_of(&status), Some(message)).write(out, format);
            EXIT_INTERVENTION
        }
        Err(e) => {
            let failed_at = match &e {
                planlock::ExecError::StepFailed { step_id, .. } => {
                    runtime.plan().steps().iter().position(|s| &s.id == step_id)
                }
                _ => None,
            };
            let status = move |i: usize| match failed_at {
                Some(at) if i < at => "completed",
                Some(at) if i == at => "failed",
                _ => "not-run",
            };
            let kind = e.kind();
            report(kind.as_str(), steps_of(&status), Some(e.to_string())).write(out, format);
            class_exit(kind)
        }
    }
}
