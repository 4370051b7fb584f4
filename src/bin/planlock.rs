//! The `planlock` command-line tool.
//!
//! Exit codes: 0 valid / completed, 1 CycleFail, 2 usage or I/O error, 3 FailFast (boot failures
//! included), 4 InterventionRequired.

use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use std::sync::Arc;

use clap::{Parser, Subcommand, ValueEnum};
use planlock::demo::{Demo, ReviewGate};
use planlock::runtime::{Boot, BootError, Runtime};
use planlock::session::FileSessionStore;
use planlock::{
    CycleOutcome, Executor, FailureKind, HashParts, PlanReadError, PolicyProfile, Problem, Rejection, StepType,
    ValidPlan,
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
    /// Print the plan hash (`lastExecutionPlanHash`) of a plan with its policy profile.
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
    /// storage write for review.
    Run {
        /// The session root (`ops/runtime/session_state.json` lives under it).
        #[arg(long)]
        root: PathBuf,
        /// The directory holding the policy profiles.
        #[arg(long)]
        policy_root: PathBuf,
        /// Make this step type's demo handler fail (repeatable), to show the failure semantics.
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
            let _ = e.print();
            return ExitCode::from(if e.use_stderr() { EXIT_USAGE } else { EXIT_VALID });
        }
    };
    match cli.command {
        Command::Validate { format, file } => validate(format, &file),
        Command::Hash { policy_root, parts, plan } => hash(&policy_root, parts, &plan),
        Command::Run { root, policy_root, fail, format, plan } => run(&root, &policy_root, fail, format, &plan),
    }
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
    }
}

fn cannot_read(file: &Path, e: std::io::Error) -> ExitCode {
    eprintln!("planlock: cannot read {}: {e}", file.display());
    ExitCode::from(EXIT_USAGE)
}

fn validate(format: Format, file: &Path) -> ExitCode {
    let (class, problems): (Option<FailureKind>, Vec<Problem>) = match read_plan(file) {
        Err(e) => return cannot_read(file, e),
        Ok(Ok(_)) => (None, Vec::new()),
        Ok(Err(rejection)) => (Some(rejection.class()), rejection.into_problems()),
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
    ExitCode::from(class.map_or(EXIT_VALID, class_exit))
}

fn class_exit(kind: FailureKind) -> u8 {
    match kind {
        FailureKind::CycleFail => EXIT_CYCLE_FAIL,
        FailureKind::FailFast => EXIT_FAIL_FAST,
    }
}

/// Reads and validates a plan; on failure prints why and returns the exit code.
fn load_plan(file: &Path) -> Result<ValidPlan, ExitCode> {
    read_plan(file).map_err(|e| cannot_read(file, e))?.map_err(|rejection| {
        eprintln!("planlock: {}: {rejection}", file.display());
        ExitCode::from(class_exit(rejection.class()))
    })
}

fn hash(policy_root: &Path, parts: bool, file: &Path) -> ExitCode {
    let plan = match load_plan(file) {
        Ok(p) => p,
        Err(code) => return code,
    };
    let result = PolicyProfile::load(policy_root, &plan.metadata().policy_profile).map_err(|e| e.to_string()).and_then(
        |profile| {
            let digest = planlock::plan_hash(&profile, &plan).map_err(|e| e.to_string())?;
            let parts = HashParts::of(&profile, &plan).map_err(|e| e.to_string())?;
            Ok((digest, parts))
        },
    );
    match result {
        Ok((digest, hash_parts)) => {
            if parts {
                println!("{}", serde_json::json!({ "hash": digest, "parts": hash_parts }));
            } else {
                println!("{digest}");
            }
            ExitCode::from(EXIT_VALID)
        }
        Err(e) => {
            eprintln!("planlock: {e}");
            ExitCode::from(EXIT_FAIL_FAST)
        }
    }
}

fn run(root: &Path, policy_root: &Path, fail: Vec<StepType>, format: Format, file: &Path) -> ExitCode {
    let plan = match load_plan(file) {
        Ok(p) => p,
        Err(code) => return code,
    };
    let report = |boot: Option<&str>,
                  outcome: &str,
                  hash: Option<String>,
                  steps: serde_json::Value,
                  error: Option<String>,
                  code: u8| {
        match format {
            Format::Json => println!(
                "{}",
                serde_json::json!({ "boot": boot, "outcome": outcome, "hash": hash, "steps": steps, "error": error })
            ),
            Format::Text => {
                if let Some(b) = boot {
                    println!("boot: {b}");
                }
                if let Some(steps) = steps.as_array() {
                    for s in steps {
                        println!(
                            "  {:<10} {:<24} {}",
                            s["id"].as_str().unwrap_or(""),
                            s["type"].as_str().unwrap_or(""),
                            s["status"].as_str().unwrap_or("")
                        );
                    }
                }
                println!("outcome: {outcome}");
                if let Some(e) = &error {
                    println!("error: {e}");
                }
            }
        }
        ExitCode::from(code)
    };
    let store = match FileSessionStore::open(root) {
        Ok(s) => Arc::new(s),
        Err(e) => return report(None, "FailFast", None, serde_json::json!([]), Some(e.to_string()), EXIT_FAIL_FAST),
    };
    let runtime = match Runtime::boot(policy_root, plan, store) {
        Ok(r) => r,
        Err(e) => {
            let kind = BootError::kind(&e);
            return report(None, kind.as_str(), None, serde_json::json!([]), Some(e.to_string()), class_exit(kind));
        }
    };
    let boot = match runtime.boot_kind() {
        Boot::ColdStart => "cold",
        Boot::Resume(_) => "resume",
    };
    let hash = Some(runtime.plan_hash().to_string());
    let demo = Demo::new().failing(fail);
    let executor = Executor::new(demo.handlers().on::<planlock::steps::PersistSession>(runtime.session_persister()))
        .with_validator(ReviewGate::ID, ReviewGate::VERSION, &serde_json::json!({}), ReviewGate);
    let executor = match executor {
        Ok(e) => e,
        Err(e) => {
            return report(Some(boot), "FailFast", hash, serde_json::json!([]), Some(e.to_string()), EXIT_FAIL_FAST);
        }
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
            report(Some(boot), "completed", hash, steps_of(&|_| "completed"), None, EXIT_VALID)
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
            report(Some(boot), "InterventionRequired", hash, steps_of(&status), Some(message), EXIT_INTERVENTION)
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
            report(Some(boot), kind.as_str(), hash, steps_of(&status), Some(e.to_string()), class_exit(kind))
        }
    }
}
