//! The command line: every command, its arguments and what `--help` says of them (clap derive).

use std::path::PathBuf;

use clap::{Parser, Subcommand, ValueEnum};
use planlock::StepType;

#[derive(Parser)]
#[command(name = "planlock", version, about = "Check execution plans against the planlock step contract")]
pub struct Cli {
    /// Output format: text for a person, or exactly one JSON object (the report, or `{"error",
    /// "errorCode"}`) on every path.
    #[arg(long, value_enum, default_value_t = Format::Text, global = true)]
    pub format: Format,
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Subcommand)]
pub enum Command {
    /// Validate a plan document; report every problem with its code, class and JSON Pointer.
    Validate {
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
    },
    /// Show the session (id, completed cycles, plan hash) and any paused cycle.
    Status {
        #[command(flatten)]
        place: SessionPlace,
    },
}

#[derive(Subcommand)]
pub enum MemoryCommand {
    /// Search the memories as `RetrieveMemory` does: by the words of the text, best first.
    Search {
        #[command(flatten)]
        place: SessionPlace,
        /// At most this many memories.
        #[arg(long, default_value_t = 10)]
        top_k: u64,
        #[command(flatten)]
        embed: EmbedArgs,
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
pub enum Format {
    Text,
    Json,
}

/// Where a session lives: under a root, or in a shared database under a key.
#[derive(clap::Args)]
pub struct SessionPlace {
    /// The session root (`ops/runtime/session_state.json` lives under it). `run` creates it if
    /// missing; nothing is written under it until a cycle completes. Not with `--database`.
    #[arg(long, required_unless_present = "database", conflicts_with = "database")]
    pub root: Option<PathBuf>,
    /// A shared PostgreSQL database for the session, its records and its memories, instead of
    /// files under `--root` (`postgres://user:password@host/db`); needs `--session`. The
    /// password is never printed.
    #[arg(long, env = "PLANLOCK_DATABASE_URL", hide_env_values = true, requires = "session", value_name = "URL")]
    pub database: Option<String>,
    /// The session's key in the database (a tenant or conversation id, 1 to 256 bytes).
    #[arg(long, requires = "database", value_name = "KEY")]
    pub session: Option<String>,
}

/// The embedding server for bundles whose providers rank by meaning (`sqlite-semantic`,
/// `semantic-sql`); without it the offline demo embedder, said plainly.
#[derive(clap::Args, Clone)]
pub struct EmbedArgs {
    /// The base URL of an OpenAI-compatible embeddings server (`http://127.0.0.1:8000/v1`).
    /// Needs `--embed-model`. The session is pinned to the model and its dimension.
    #[arg(long, requires = "embed_model", value_name = "URL")]
    pub embed_url: Option<String>,
    /// The embedding model to ask.
    #[arg(long, requires = "embed_url", value_name = "NAME")]
    pub embed_model: Option<String>,
    /// The environment variable holding the embedding server's key (never printed).
    #[arg(long, default_value = planlock::handlers::openai::DEFAULT_API_KEY_ENV, value_name = "VAR")]
    pub embed_api_key_env: String,
}

/// What `run` and `resume` share: where the session is, which policy and bundle, the plan.
#[derive(clap::Args)]
pub struct CycleArgs {
    #[command(flatten)]
    pub place: SessionPlace,
    /// The directory holding the policy profiles.
    #[arg(long)]
    pub policy_root: PathBuf,
    /// The bundle directory (its `manifest.json` names the strategy and memory providers).
    /// Without it, the default bundle: strategy `hierarchical-sql`, memory provider `sqlite`
    /// (`ops/store/planlock.sqlite3` under the root). The session is pinned to the
    /// providers by its first completed cycle.
    #[arg(long)]
    pub bundle: Option<PathBuf>,
    /// Make this step type's handler fail (repeatable), to show the failure semantics; any
    /// step type, `PersistSession` included (the save fails, nothing is written).
    #[arg(long = "fail", value_parser = parse_step_type)]
    pub fail: Vec<StepType>,
    /// The base URL of an OpenAI-compatible chat-completions server for `LLMCall` and
    /// `SummarizeMemory`: `https://api.openai.com/v1`, vLLM's or llama.cpp's `http://HOST:PORT/v1`,
    /// Ollama's `http://127.0.0.1:11434/v1`. Needs `--llm-model`. Without both, the offline demo
    /// model answers, and the output says so.
    #[arg(long, requires = "llm_model", value_name = "URL")]
    pub llm_url: Option<String>,
    /// The model to ask when the plan's `config.model` names none.
    #[arg(long, requires = "llm_url", value_name = "NAME")]
    pub llm_model: Option<String>,
    /// The environment variable holding the API key, sent as a bearer token (never printed).
    /// Unset or empty: no key is sent, as local servers expect.
    #[arg(long, default_value = planlock::handlers::openai::DEFAULT_API_KEY_ENV, value_name = "VAR")]
    pub llm_api_key_env: String,
    #[command(flatten)]
    pub embed: EmbedArgs,
    /// The plan file, or `-` for standard input.
    pub plan: PathBuf,
}

impl SessionPlace {
    /// The library's [`Place`](planlock::runtime::place::Place) these flags name (clap makes
    /// sure one of the two is given).
    pub fn place(&self) -> planlock::runtime::place::Place {
        use planlock::runtime::place::Place;
        match (&self.database, &self.session, &self.root) {
            (Some(url), Some(key), _) => Place::Database { url: url.clone(), key: key.clone() },
            (_, _, root) => Place::Root(root.clone().unwrap_or_default()),
        }
    }
}
