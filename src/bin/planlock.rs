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

use clap::{Parser, Subcommand, ValueEnum};
use planlock::demo::{Demo, DemoSessionStore, ReviewGate};
use planlock::embed::{DemoEmbedder, Embedder};
use planlock::handlers::{EmbedConfig, ModelConfig, OpenAiEmbedder, OpenAiModel};
use planlock::pg::{PgDatabase, PgError};
use planlock::runtime::{Boot, RunOutcome, Runtime, RuntimeError, Status};
use planlock::session::postgres::{MAX_SESSION_KEY_BYTES, PgSessionStore};
use planlock::session::{FileSessionStore, InterventionRecord, SessionStore};
use planlock::steps::{LLMCall, SummarizeMemory};
use planlock::store::bundle::{BundleManifest, StrategyResolver};
use planlock::store::postgres::PgStore;
use planlock::store::provider::ResolvedStore;
use planlock::store::sqlite::SqliteStore;
use planlock::store::{DecisionContextProviderPort, MemoryRepositoryPort, StoreHandlers};
use planlock::{
    Failure, FailureKind, HashParts, Override, PlanReadError, PolicyProfile, Problem, Rejection, StepType, ValidPlan,
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
    /// Print the JSON Schema (draft 2020-12) of the plan document, for producers in other
    /// languages; `schema/plan-v1.schema.json` in the repository is this output.
    Schema,
    /// Boot a session and run one cycle of the plan with the demo handlers. A plan may name the
    /// demo validator `demo-review` (version `1`, configuration `{}`), which blocks every
    /// storage write for review. A relative `repoPath` in the plan is resolved against the
    /// directory that holds the plan file (the working directory for `-`).
    Run {
        #[command(flatten)]
        cycle: CycleArgs,
    },
    /// Resume the cycle a validator paused (after a restart too): the plan hash is recomputed
    /// from the policy files, the blocked step runs again with the approval, and the cycle goes
    /// on. Exits like `run`.
    Resume {
        #[command(flatten)]
        cycle: CycleArgs,
        /// The validator whose Block is approved (it must be the pending one).
        #[arg(long)]
        approve: String,
        /// The blocked step's id (it must be the pending one).
        #[arg(long)]
        step: String,
        /// Why the Block may pass; recorded in the cycle report (not blank, at most 2,000
        /// characters).
        #[arg(long, value_parser = parse_reason)]
        reason: String,
    },
    /// Abandon the paused cycle: its record is removed, the session file stays as it was, and
    /// the next `run` runs the same cycle number again. Exits 0, or 1 when nothing is paused.
    Abandon {
        #[command(flatten)]
        place: SessionPlace,
    },
    /// Look at the memories in the session root's SQLite store.
    Memory {
        #[command(subcommand)]
        command: MemoryCommand,
    },
    /// List the active decisions in the session root's SQLite store that a cycle would retrieve,
    /// with their evidence links: global and axis, and those of `--domain`.
    Decisions {
        #[command(flatten)]
        place: SessionPlace,
        /// Also the decisions of this domain (`domain:<name>`).
        #[arg(long)]
        domain: Option<String>,
        /// Output format.
        #[arg(long, value_enum, default_value_t = Format::Text)]
        format: Format,
    },
    /// Show the session (id, completed cycles, plan hash) and any paused cycle.
    Status {
        #[command(flatten)]
        place: SessionPlace,
        /// Output format.
        #[arg(long, value_enum, default_value_t = Format::Text)]
        format: Format,
    },
}

#[derive(Subcommand)]
enum MemoryCommand {
    /// Search the memories as `RetrieveMemory` does: by the words of the text, best first.
    Search {
        #[command(flatten)]
        place: SessionPlace,
        /// At most this many memories.
        #[arg(long, default_value_t = 10)]
        top_k: u64,
        #[command(flatten)]
        embed: EmbedArgs,
        /// Output format.
        #[arg(long, value_enum, default_value_t = Format::Text)]
        format: Format,
        /// The text to search for (its words; no query syntax).
        text: String,
    },
}

fn parse_reason(s: &str) -> Result<String, String> {
    planlock::validator::check_justification(s).map(|()| s.to_owned())
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
        Command::Schema => {
            let _ = writeln!(out, "{:#}", planlock::plan_json_schema());
            EXIT_VALID
        }
        Command::Run { cycle } => run(&mut out, cycle, None),
        Command::Resume { cycle, approve, step, reason } => {
            run(&mut out, cycle, Some(Override::new(approve, step, reason)))
        }
        Command::Abandon { place } => abandon(&mut out, &place),
        Command::Memory { command: MemoryCommand::Search { place, top_k, embed, format, text } } => {
            memory_search(&mut out, &place, top_k, &embed, format, &text)
        }
        Command::Decisions { place, domain, format } => decisions(&mut out, &place, domain.as_deref(), format),
        Command::Status { place, format } => status(&mut out, &place, format),
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
    let _ = writeln!(std::io::stderr().lock(), "planlock: {}", terminal_safe(&message.to_string()));
}

/// A message as a terminal may show it: a control character an input carried into it (an escape
/// sequence in a provider id, a file's text) is written escaped, never sent to the terminal.
fn terminal_safe(message: &str) -> String {
    message
        .chars()
        .flat_map(|c| if c.is_control() && c != '\n' { c.escape_debug().collect() } else { vec![c] })
        .collect()
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

/// The embedder as the text output names it.
fn describe_embedder(e: &serde_json::Value) -> String {
    match (e["kind"].as_str(), e["model"].as_str(), e["url"].as_str(), &e["dimension"]) {
        (Some("openai"), Some(model), Some(url), dimension) => format!("{model} at {url} ({dimension} dimensions)"),
        _ => "the offline demo embedder, words hashed, not a model (pass --embed-url and --embed-model for a real one)"
            .to_owned(),
    }
}

/// Why a record of a paused cycle is a leftover, as `run`, `resume` and `status` say it.
const LEFTOVER_WHY: &str = "its cycle had completed (a resume was stopped after saving the session, before removing the \
     record); nothing was run again";

/// What `run` and `resume` report, in text or as one JSON object.
struct RunReport<'a> {
    boot: Option<&'static str>,
    /// The record of a finished resume that boot removed (a crash had left it).
    removed_leftover: Option<InterventionRecord>,
    /// The embedder, when the bundle's providers rank with one.
    embedder: Option<serde_json::Value>,
    /// `{"kind": "demo"}` or `{"kind": "openai", "model", "url"}`; null when the run stopped
    /// before choosing.
    model: serde_json::Value,
    outcome: &'a str,
    hash: Option<String>,
    cycle: Option<u64>,
    steps: serde_json::Value,
    error: Option<String>,
    problems: Vec<Problem>,
    intervention: Option<InterventionRecord>,
}

impl RunReport<'_> {
    fn failed(outcome: &str, error: String) -> RunReport<'_> {
        RunReport {
            boot: None,
            removed_leftover: None,
            embedder: None,
            model: serde_json::Value::Null,
            outcome,
            hash: None,
            cycle: None,
            steps: serde_json::json!([]),
            error: Some(error),
            problems: vec![],
            intervention: None,
        }
    }

    fn write(self, out: &mut String, format: Format) {
        match format {
            Format::Json => {
                let mut report = serde_json::json!({
                    "boot": self.boot, "model": self.model, "outcome": self.outcome, "hash": self.hash, "cycle": self.cycle,
                    "steps": self.steps, "error": self.error, "problems": self.problems,
                    "intervention": self.intervention,
                });
                // Only when the bundle ranks by meaning: the members stay as they were otherwise.
                if let Some(e) = &self.embedder {
                    report["embedder"] = e.clone();
                }
                // Only when boot cleaned up: the report's members stay as they were otherwise.
                if let Some(r) = &self.removed_leftover {
                    report["bootCleanup"] = serde_json::json!({
                        "removedRecord": { "cycle": r.cycle, "stepId": r.step_id, "why": LEFTOVER_WHY }
                    });
                }
                line!(out, "{report}")
            }
            Format::Text => {
                if let Some(b) = self.boot {
                    line!(out, "boot: {b}");
                }
                if let Some(r) = &self.removed_leftover {
                    line!(out, "boot removed the record of cycle {} (step `{}`): {LEFTOVER_WHY}", r.cycle, r.step_id);
                }
                match (self.model["kind"].as_str(), self.model["model"].as_str(), self.model["url"].as_str()) {
                    (Some("openai"), Some(name), Some(url)) => match self.model["usage"].as_object() {
                        Some(u) => line!(
                            out,
                            "model: {name} at {url} ({} input and {} output tokens)",
                            u["inputTokens"],
                            u["outputTokens"]
                        ),
                        None => line!(out, "model: {name} at {url}"),
                    },
                    (Some("demo"), ..) => {
                        line!(out, "model: the offline demo model (pass --llm-url and --llm-model for a real one)")
                    }
                    _ => {}
                }
                if let Some(e) = &self.embedder {
                    line!(out, "embedder: {}", describe_embedder(e));
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
                match self.cycle {
                    Some(cycle) => line!(out, "outcome: {} (cycle {cycle})", self.outcome),
                    None => line!(out, "outcome: {}", self.outcome),
                }
                if let Some(e) = &self.error {
                    line!(out, "error: {}", terminal_safe(e));
                }
                for p in &self.problems {
                    line!(out, "  {p}");
                }
                if let Some(i) = &self.intervention {
                    line!(out, "paused: validator `{}` blocked step `{}`: {}", i.validator.id, i.step_id, i.reason);
                    line!(
                        out,
                        "to go on: planlock resume --approve {} --step {} --reason TEXT (same --root, --policy-root and plan), or planlock abandon",
                        i.validator.id,
                        i.step_id
                    );
                }
            }
        }
    }
}

/// Where a session lives: under a root, or in a shared database under a key.
#[derive(clap::Args)]
struct SessionPlace {
    /// The session root (`ops/runtime/session_state.json` lives under it). `run` creates it if
    /// missing; nothing is written under it until a cycle completes. Not with `--database`.
    #[arg(long, required_unless_present = "database", conflicts_with = "database")]
    root: Option<PathBuf>,
    /// A shared PostgreSQL database for the session, its records and its memories, instead of
    /// files under `--root` (`postgres://user:password@host/db`); needs `--session`. The
    /// password is never printed.
    #[arg(long, env = "PLANLOCK_DATABASE_URL", hide_env_values = true, requires = "session", value_name = "URL")]
    database: Option<String>,
    /// The session's key in the database (a tenant or conversation id, 1 to 256 bytes).
    #[arg(long, requires = "database", value_name = "KEY")]
    session: Option<String>,
}

/// The embedding server for bundles whose providers rank by meaning (`sqlite-semantic`,
/// `semantic-sql`); without it the offline demo embedder, said plainly.
#[derive(clap::Args, Clone)]
struct EmbedArgs {
    /// The base URL of an OpenAI-compatible embeddings server (`http://127.0.0.1:8000/v1`).
    /// Needs `--embed-model`. The session is pinned to the model and its dimension.
    #[arg(long, requires = "embed_model", value_name = "URL")]
    embed_url: Option<String>,
    /// The embedding model to ask.
    #[arg(long, requires = "embed_url", value_name = "NAME")]
    embed_model: Option<String>,
    /// The environment variable holding the embedding server's key (never printed).
    #[arg(long, default_value = planlock::handlers::openai::DEFAULT_API_KEY_ENV, value_name = "VAR")]
    embed_api_key_env: String,
}

impl EmbedArgs {
    /// The resolver with the embedder these flags name (the demo's without them), and how the
    /// output names it; the message when the server cannot be reached.
    fn resolver(&self) -> Result<(StrategyResolver, serde_json::Value), String> {
        let resolver = StrategyResolver::default();
        match (&self.embed_url, &self.embed_model) {
            (Some(url), Some(model)) => {
                // E5 models embed queries and passages differently; servers that do not know the
                // member ignore it.
                let config =
                    EmbedConfig::new(url, model).api_key_env(&self.embed_api_key_env).purpose_member("input_type");
                let embedder = OpenAiEmbedder::connect(config).map_err(|e| e.to_string())?;
                let about = serde_json::json!({
                    "kind": "openai", "model": model, "url": embedder.config().shown_url(), "dimension": embedder.dimension(),
                });
                Ok((resolver.embedder(std::sync::Arc::new(embedder)), about))
            }
            _ => {
                let about = serde_json::json!({ "kind": "demo", "model": DemoEmbedder::MODEL, "dimension": DemoEmbedder::DIMENSION });
                Ok((resolver.embedder(std::sync::Arc::new(DemoEmbedder::new())), about))
            }
        }
    }
}

/// The shared database, for the session `key`: 2 for a bad URL or key, 3 when it cannot be used.
fn connect(url: &str, key: &str) -> Result<PgDatabase, (u8, String)> {
    if key.is_empty() || key.len() > MAX_SESSION_KEY_BYTES {
        let message = format!("--session must be 1 to {MAX_SESSION_KEY_BYTES} bytes long (it is {})", key.len());
        return Err((EXIT_USAGE, message));
    }
    PgDatabase::connect(url).map_err(|e| match e {
        PgError::Url { .. } => (EXIT_USAGE, e.to_string()),
        _ => (EXIT_FAIL_FAST, e.to_string()),
    })
}

/// The memories of a session root whose pin names the provider `sqlite-semantic`: searched as
/// `RetrieveMemory` searches them, by meaning with the pinned embedder (the one the flags name,
/// or the demo's), read-only. `None` for any other root.
fn semantic_memories_of(place: &SessionPlace, embed: &EmbedArgs) -> Result<Option<ResolvedStore>, String> {
    use planlock::store::sqlite::semantic::{MEMORY_PROVIDER, SemanticMemory};
    let Some(root) = &place.root else { return Ok(None) };
    let pin = match FileSessionStore::open(root).and_then(|s| s.load_pin()) {
        Ok(Some(pin)) if pin.memory_provider_id.as_deref() == Some(MEMORY_PROVIDER) => pin,
        Ok(_) => return Ok(None),
        Err(e) => return Err(e.to_string()),
    };
    let (resolver, _) = embed.resolver()?;
    let manifest: BundleManifest = serde_json::from_value(serde_json::json!({
        "bundle_id": pin.bundle_id, "version": "pinned", "memory_provider_id": MEMORY_PROVIDER,
    }))
    .map_err(|e| e.to_string())?;
    let (model, dimension) = resolver.embedder_of(&manifest).unwrap_or(("", 0));
    if pin.embedder_model.as_deref() != Some(model) || pin.embedder_dimension != Some(dimension as u64) {
        return Err(format!(
            "the session's memories were embedded with `{}` ({} dimensions), not `{model}` ({dimension}); pass its --embed-url and --embed-model",
            pin.embedder_model.as_deref().map(planlock::printable).unwrap_or_default(),
            pin.embedder_dimension.unwrap_or(0)
        ));
    }
    let embedder: std::sync::Arc<dyn Embedder> = match (&embed.embed_url, &embed.embed_model) {
        (Some(url), Some(name)) => std::sync::Arc::new(OpenAiEmbedder::with_dimension(
            EmbedConfig::new(url, name).api_key_env(&embed.embed_api_key_env).purpose_member("input_type"),
            dimension,
        )),
        _ => std::sync::Arc::new(DemoEmbedder::new()),
    };
    let memory = SemanticMemory::new(SqliteStore::open(root).read_only(), embedder);
    Ok(Some(ResolvedStore::new(
        std::sync::Arc::new(memory),
        std::sync::Arc::new(planlock::store::memory::InMemoryStore::new()),
    )))
}

/// The memories and decisions of a session: its root's SQLite store, or its namespace of the
/// shared database (read without taking the session's lease, so a running worker is not
/// disturbed). Reports on stderr; `Err` is the exit code.
fn memories_of(place: &SessionPlace) -> Result<ResolvedStore, u8> {
    let opened = match (&place.database, &place.session, &place.root) {
        (Some(url), Some(key), _) => connect(url, key).map(|db| ResolvedStore::single(PgStore::new(&db, key.as_str()))),
        // A read: the file is opened read-only, and nothing is created.
        (_, _, Some(root)) => Ok(ResolvedStore::single(SqliteStore::open(root).read_only())),
        _ => Err((EXIT_USAGE, "give --root, or --database and --session".into())),
    };
    opened.map_err(|(code, message)| {
        say(format_args!("{message}"));
        code
    })
}

/// A session store opened where a [`SessionPlace`] says.
enum OpenedStore {
    Files(FileSessionStore),
    Database(PgDatabase, PgSessionStore),
}

impl OpenedStore {
    /// Opens the store (a database session's lease taken); the exit code and message when it
    /// cannot be: 2 for a bad URL or key, 3 otherwise.
    fn open(place: &SessionPlace) -> Result<OpenedStore, (u8, String)> {
        match (&place.database, &place.session, &place.root) {
            (Some(url), Some(key), _) => {
                let db = connect(url, key)?;
                let store = PgSessionStore::open(&db, key).map_err(|e| (EXIT_FAIL_FAST, e.to_string()))?;
                Ok(OpenedStore::Database(db, store))
            }
            (_, _, Some(root)) => {
                FileSessionStore::open(root).map(OpenedStore::Files).map_err(|e| (EXIT_FAIL_FAST, e.to_string()))
            }
            _ => Err((EXIT_USAGE, "give --root, or --database and --session".into())),
        }
    }

    /// [`open`](Self::open) for the commands that report on stderr: the message said there,
    /// `Err` with the exit code.
    fn open_or_say(place: &SessionPlace) -> Result<OpenedStore, u8> {
        OpenedStore::open(place).map_err(|(code, message)| {
            say(format_args!("{message}"));
            code
        })
    }

    fn store(&self) -> &dyn SessionStore {
        match self {
            OpenedStore::Files(store) => store,
            OpenedStore::Database(_, store) => store,
        }
    }

    /// What the messages call it.
    fn name(place: &SessionPlace) -> String {
        match (&place.session, &place.root) {
            (Some(key), _) => format!("session `{key}`"),
            (_, Some(root)) => root.display().to_string(),
            _ => String::new(),
        }
    }
}

/// What `run` and `resume` share: where the session is, which policy and bundle, the plan.
#[derive(clap::Args)]
struct CycleArgs {
    #[command(flatten)]
    place: SessionPlace,
    /// The directory holding the policy profiles.
    #[arg(long)]
    policy_root: PathBuf,
    /// The bundle directory (its `manifest.json` names the strategy and memory providers).
    /// Without it, the default bundle: strategy `hierarchical-sql`, memory provider `sqlite`
    /// (`ops/store/planlock.sqlite3` under the root). The session is pinned to the
    /// providers by its first completed cycle.
    #[arg(long)]
    bundle: Option<PathBuf>,
    /// Make this step type's handler fail (repeatable), to show the failure semantics; any
    /// step type, `PersistSession` included (the save fails, nothing is written).
    #[arg(long = "fail", value_parser = parse_step_type)]
    fail: Vec<StepType>,
    /// The base URL of an OpenAI-compatible chat-completions server for `LLMCall` and
    /// `SummarizeMemory`: `https://api.openai.com/v1`, vLLM's or llama.cpp's `http://HOST:PORT/v1`,
    /// Ollama's `http://127.0.0.1:11434/v1`. Needs `--llm-model`. Without both, the offline demo
    /// model answers, and the output says so.
    #[arg(long, requires = "llm_model", value_name = "URL")]
    llm_url: Option<String>,
    /// The model to ask when the plan's `config.model` names none.
    #[arg(long, requires = "llm_url", value_name = "NAME")]
    llm_model: Option<String>,
    /// The environment variable holding the API key, sent as a bearer token (never printed).
    /// Unset or empty: no key is sent, as local servers expect.
    #[arg(long, default_value = planlock::handlers::openai::DEFAULT_API_KEY_ENV, value_name = "VAR")]
    llm_api_key_env: String,
    #[command(flatten)]
    embed: EmbedArgs,
    /// Output format.
    #[arg(long, value_enum, default_value_t = Format::Text)]
    format: Format,
    /// The plan file, or `-` for standard input.
    plan: PathBuf,
}

/// Boots the session under the root with the demo handlers and runs its next cycle, or resumes
/// its paused one with `over`.
fn run(out: &mut String, c: CycleArgs, over: Option<Override>) -> u8 {
    let plan = match load_plan(&c.plan) {
        Ok(p) => p,
        Err(failure) => {
            let outcome = failure.class.map_or("error", FailureKind::as_str);
            let mut report = RunReport::failed(outcome, failure.message);
            report.problems = failure.problems;
            report.write(out, c.format);
            return failure.code;
        }
    };
    // Relative `repoPath`s mean the directory that holds the plan, wherever planlock runs.
    let plan_dir = match c.plan.parent() {
        Some(dir) if c.plan.as_os_str() != "-" && !dir.as_os_str().is_empty() => dir.to_path_buf(),
        _ => PathBuf::from("."),
    };
    let demo = Demo::new().failing(c.fail.clone()).repo_base(plan_dir);
    let fail_fast = |out: &mut String, message: String| {
        RunReport::failed("FailFast", message).write(out, c.format);
        EXIT_FAIL_FAST
    };
    // Memories and decisions live where the bundle says: by default the session root's SQLite
    // database, or the shared database's namespace of the session.
    let manifest = match c.bundle.as_deref().map(BundleManifest::load).transpose() {
        Ok(Some(manifest)) => manifest,
        Ok(None) if c.place.database.is_some() => BundleManifest::default_shared_bundle(),
        Ok(None) => BundleManifest::default_bundle(),
        Err(e) => return fail_fast(out, e.to_string()),
    };
    // `run` may create the root itself; nothing under it is created at boot.
    if over.is_none()
        && let Some(root) = &c.place.root
        && let Err(e) = std::fs::create_dir_all(root)
    {
        let message = format!("cannot create the session root {}: {e}", root.display());
        RunReport::failed("error", message).write(out, c.format);
        return EXIT_USAGE;
    }
    let (resolver, embedder) = match c.embed.resolver() {
        Ok(r) => r,
        Err(message) => return fail_fast(out, message),
    };
    // Named in the output only when the bundle's providers rank with it.
    let embedder = resolver.embedder_of(&manifest).map(|_| embedder);
    let (resolved, store) = match OpenedStore::open(&c.place) {
        Ok(OpenedStore::Database(db, store)) => {
            let key = store.key().to_owned();
            (resolver.resolve_in_database(&manifest, &db, &key), CycleStore::Database(demo.session_store(store)))
        }
        Ok(OpenedStore::Files(store)) => {
            let root = c.place.root.clone().unwrap_or_default();
            (resolver.resolve(&manifest, &root), CycleStore::Files(demo.session_store(store)))
        }
        Err((code, message)) => {
            let outcome = if code == EXIT_USAGE { "error" } else { "FailFast" };
            RunReport::failed(outcome, message).write(out, c.format);
            return code;
        }
    };
    let storage = match resolved {
        Ok(resolved) => StoreHandlers::new(resolved),
        Err(e) => return fail_fast(out, e.to_string()),
    };
    match store {
        CycleStore::Files(store) => {
            run_on(out, &c, over, &demo, Prepared { plan, store, manifest, resolver, embedder, storage })
        }
        CycleStore::Database(store) => {
            run_on(out, &c, over, &demo, Prepared { plan, store, manifest, resolver, embedder, storage })
        }
    }
}

/// The two session stores `run` may boot on (the runtime is generic over its store).
enum CycleStore {
    Files(DemoSessionStore<FileSessionStore>),
    Database(DemoSessionStore<PgSessionStore>),
}

/// What a cycle runs on: the plan, the session store, the bundle and the storage it resolved.
struct Prepared<S> {
    plan: ValidPlan,
    store: S,
    manifest: BundleManifest,
    resolver: StrategyResolver,
    /// How the output names the embedder, when the bundle's providers use one.
    embedder: Option<serde_json::Value>,
    storage: StoreHandlers<ResolvedStore>,
}

/// Boots the runtime on the prepared store and runs or resumes its cycle; the report and the
/// exit code.
fn run_on<S: SessionStore + 'static>(
    out: &mut String,
    c: &CycleArgs,
    over: Option<Override>,
    demo: &Demo,
    Prepared { plan, store, manifest, resolver, embedder, storage }: Prepared<S>,
) -> u8 {
    // The model: a real server when asked for, the demo otherwise; `--fail` covers both.
    let mut real = None;
    let (handlers, mut model) = match (&c.llm_url, &c.llm_model) {
        (Some(url), Some(name)) => {
            // The CLI runs its cycle with `run_cycle_blocking`: no async executor to keep free.
            let config = ModelConfig::new(url, name).api_key_env(&c.llm_api_key_env).on_thread_pool(false);
            let model = OpenAiModel::new(config);
            let about = serde_json::json!({ "kind": "openai", "model": name, "url": model.config().shown_url() });
            real = Some(model.clone());
            let handlers = demo
                .with_store(&storage)
                .on::<LLMCall>(demo.gate(model.clone()))
                .on::<SummarizeMemory>(demo.gate(model));
            (handlers.boxed(), about)
        }
        _ => (demo.with_store(&storage).boxed(), serde_json::json!({ "kind": "demo" })),
    };
    let runtime = Runtime::builder(&c.policy_root, plan, store)
        .handlers(handlers)
        .bundle(manifest)
        .resolver(resolver)
        .validator(ReviewGate::ID, ReviewGate::VERSION, &serde_json::json!({}), ReviewGate)
        .boot();
    let mut runtime = match runtime {
        Ok(r) => r,
        Err(e) => {
            RunReport::failed(e.kind().as_str(), e.to_string()).write(out, c.format);
            return class_exit(e.kind());
        }
    };
    let boot = match (runtime.boot_kind(), runtime.status()) {
        (_, Status::Paused) => "paused",
        (Boot::ColdStart, _) => "cold",
        (Boot::Resume(_), _) => "resume",
    };
    let cycle = runtime.cycle() + 1;
    let outcome = match over {
        None => runtime.run_cycle_blocking(),
        Some(over) => runtime.resume_blocking(Some(over)),
    };
    // The tokens the server reported for this cycle (the `chat` spans' `gen_ai.usage.*`).
    if let Some(real) = &real {
        model["usage"] =
            serde_json::json!({ "inputTokens": real.usage().input(), "outputTokens": real.usage().output() });
    }
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
    let removed_leftover = runtime.removed_leftover().cloned();
    let report = |outcome, steps, error| RunReport {
        boot: Some(boot),
        removed_leftover: removed_leftover.clone(),
        embedder: embedder.clone(),
        model: model.clone(),
        outcome,
        hash: Some(runtime.plan_hash().to_string()),
        cycle: Some(cycle),
        steps,
        error,
        problems: vec![],
        intervention: None,
    };
    match outcome {
        Ok(RunOutcome::Completed(_)) => {
            report("completed", steps_of(&|_| "completed"), None).write(out, c.format);
            EXIT_VALID
        }
        Ok(RunOutcome::Paused(record)) => {
            let at = runtime.plan().steps().iter().position(|s| s.id == record.step_id).unwrap_or(0);
            let status = move |i: usize| match i.cmp(&at) {
                std::cmp::Ordering::Less => "completed",
                std::cmp::Ordering::Equal => "blocked",
                std::cmp::Ordering::Greater => "not-run",
            };
            let mut paused = report("InterventionRequired", steps_of(&status), Some(record.reason.clone()));
            paused.intervention = Some(record);
            paused.write(out, c.format);
            EXIT_INTERVENTION
        }
        Err(e) => {
            let failed_at = match &e {
                RuntimeError::Exec(planlock::ExecError::StepFailed { step_id, .. }) => {
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
            report(kind.as_str(), steps_of(&status), Some(e.to_string())).write(out, c.format);
            class_exit(kind)
        }
    }
}

/// Removes the paused cycle's record; the session file stays as it was.
fn abandon(out: &mut String, place: &SessionPlace) -> u8 {
    let opened = match OpenedStore::open_or_say(place) {
        Ok(opened) => opened,
        Err(code) => return code,
    };
    let store = opened.store();
    let abandoned = store.load_intervention().and_then(|record| match record {
        Some(record) => store.remove_intervention().map(|()| Some(record)),
        None => Ok(None),
    });
    match abandoned {
        Ok(Some(record)) => {
            line!(
                out,
                "abandoned cycle {} (paused at step `{}`); the session is as it was",
                record.cycle,
                record.step_id
            );
            EXIT_VALID
        }
        Ok(None) => {
            say(format_args!("no cycle is paused in {}; there is nothing to abandon", OpenedStore::name(place)));
            EXIT_CYCLE_FAIL
        }
        Err(e) => {
            say(format_args!("{e}"));
            EXIT_FAIL_FAST
        }
    }
}

/// Prints what `RetrieveMemory` would find for `text`.
fn memory_search(
    out: &mut String,
    place: &SessionPlace,
    top_k: u64,
    embed: &EmbedArgs,
    format: Format,
    text: &str,
) -> u8 {
    let store = match semantic_memories_of(place, embed) {
        Ok(Some(store)) => store,
        Ok(None) => match memories_of(place) {
            Ok(store) => store,
            Err(code) => return code,
        },
        Err(message) => {
            say(format_args!("{message}"));
            return EXIT_FAIL_FAST;
        }
    };
    match pollster::block_on(store.search(text, top_k)) {
        Ok(items) => {
            match format {
                Format::Json => line!(out, "{}", serde_json::json!({ "items": items })),
                Format::Text if items.is_empty() => line!(out, "no memory matches"),
                Format::Text => {
                    for m in &items {
                        line!(out, "{}  {}  {}", m.id, m.timestamp, m.summary);
                    }
                }
            }
            EXIT_VALID
        }
        Err(e) => {
            say(format_args!("{e}"));
            EXIT_FAIL_FAST
        }
    }
}

/// Prints what `RetrieveDecisionContext` would load.
fn decisions(out: &mut String, place: &SessionPlace, domain: Option<&str>, format: Format) -> u8 {
    let store = match memories_of(place) {
        Ok(store) => store,
        Err(code) => return code,
    };
    match pollster::block_on(store.load("", domain)) {
        Ok(context) => {
            match format {
                Format::Json => {
                    line!(out, "{}", serde_json::json!({ "decisions": context.decisions, "anchors": context.anchors }))
                }
                Format::Text if context.decisions.is_empty() => line!(out, "no active decision in scope"),
                Format::Text => {
                    for d in &context.decisions {
                        line!(out, "{} v{} [{}] {} ({})", d.root_id, d.version, d.scope, d.text, d.strength);
                        for a in context.anchors.iter().filter(|a| a.decision_id == d.id) {
                            line!(out, "    evidence {}", a.evidence_id);
                        }
                    }
                }
            }
            EXIT_VALID
        }
        Err(e) => {
            say(format_args!("{e}"));
            EXIT_FAIL_FAST
        }
    }
}

/// Prints the session and any paused cycle.
fn status(out: &mut String, place: &SessionPlace, format: Format) -> u8 {
    let opened = match OpenedStore::open_or_say(place) {
        Ok(opened) => opened,
        Err(code) => return code,
    };
    let store = opened.store();
    let loaded = store.load().and_then(|s| Ok((s, store.load_intervention()?, store.load_pin()?)));
    let (session, mut pending, pin) = match loaded {
        Ok(all) => all,
        Err(e) => {
            say(format_args!("{e}"));
            return EXIT_FAIL_FAST;
        }
    };
    // A read writes nothing: a leftover record is reported, and the next boot removes it.
    let leftover = match (&pending, &session) {
        (Some(record), Some(s)) if record.is_leftover_of(s) => pending.take(),
        _ => None,
    };
    match format {
        Format::Json => {
            let leftover =
                leftover.map(|r| serde_json::json!({ "cycle": r.cycle, "stepId": r.step_id, "why": LEFTOVER_WHY }));
            line!(
                out,
                "{}",
                serde_json::json!({ "session": session, "intervention": pending, "pin": pin, "leftoverRecord": leftover })
            )
        }
        Format::Text => {
            match &session {
                None => line!(out, "session: none yet (the next run is a Cold Start)"),
                Some(s) => {
                    line!(out, "session: {}", s.session_id);
                    line!(out, "completed cycles: {}", s.cycle);
                    line!(out, "plan hash: {}", s.last_execution_plan_hash);
                    line!(out, "saved: {}", s.updated_at);
                }
            }
            match &pin {
                None => line!(out, "bundle pin: none yet (the first completed cycle pins the providers)"),
                Some(p) => line!(
                    out,
                    "bundle pin: `{}`, strategy `{}`, memory provider `{}` (since {})",
                    p.bundle_id,
                    p.strategy_provider_id.as_deref().unwrap_or("(older format)"),
                    p.memory_provider_id.as_deref().unwrap_or("(older format)"),
                    p.pinned_at
                ),
            }
            if let Some(r) = &leftover {
                line!(out, "leftover record of cycle {} (removed at the next run or resume): {LEFTOVER_WHY}", r.cycle);
            }
            match &pending {
                None => line!(out, "paused cycle: none"),
                Some(i) => line!(
                    out,
                    "paused cycle: {} at step `{}` ({}), validator `{}`: {}",
                    i.cycle,
                    i.step_id,
                    i.step_type,
                    i.validator.id,
                    i.reason
                ),
            }
        }
    }
    EXIT_VALID
}
