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
    /// Install the pgvector tier of retrieval by meaning in a database (the `vector` extension,
    /// an HNSW index over the memories' vectors, the vectors stored before copied in), for
    /// bundles naming the provider `postgres-pgvector`. Refused where the server has no pgvector.
    Pgvector {
        /// The database (`postgres://user:password@host/db`); the password is never printed.
        #[arg(long, env = "PLANLOCK_DATABASE_URL", hide_env_values = true, value_name = "URL")]
        database: String,
        /// The embedder's dimension (one per database; multilingual-e5-small and the demo
        /// embedder: 384).
        #[arg(long, value_name = "N")]
        dimension: usize,
    },
    /// Print the grammar of the plans a model may write, generated from the step registry: every
    /// plan it describes passes `validate`. Give it to the model server with the request (GBNF:
    /// llama.cpp's `grammar`; Lark: llguidance; json-schema: `response_format` of a strict
    /// engine, which cannot say the order of the steps: validate what comes back).
    Grammar {
        /// The grammar's syntax: `gbnf`, `lark` or `json-schema` (`--format` stays the report's
        /// format, as for every command).
        #[arg(long, default_value = "gbnf")]
        syntax: String,
        /// The grammar of the compact choices `planlock plan` asks for (which optional steps, and
        /// their texts; planlock writes the plan of them), instead of whole plans.
        #[arg(long)]
        compact: bool,
        #[command(flatten)]
        of: PlansOf,
    },
    /// Ask a model on an OpenAI-compatible server to plan for a goal, at temperature 0 with a
    /// seed. By default the model writes only its choices — which optional steps, and the free
    /// texts — with their grammar (`planlock grammar --compact`), and planlock writes the plan
    /// of them (ids, keys, the profile's mode and topK, the references between steps);
    /// `--whole-plan` asks it for the whole plan document with the grammar of valid plans. The
    /// validator checks the plan (exit 1 and `plan-rejected` when it is not valid: a server that
    /// ignored the grammar), and the plan is printed, or written with `--out`.
    Plan {
        /// The server's base URL, e.g. llama.cpp's `http://127.0.0.1:8080/v1` (the API key, if any, from
        /// `OPENAI_API_KEY`; never printed).
        #[arg(long, value_name = "URL")]
        llm_url: String,
        /// The model's name on the server.
        #[arg(long, value_name = "NAME", default_value = "default")]
        llm_model: String,
        /// What the plan is for.
        #[arg(long)]
        goal: String,
        /// How the request constrains the model: `grammar` (GBNF in `grammar`), `json-schema`
        /// (the strict profile as `response_format`) or `none`.
        #[arg(long, default_value = "grammar")]
        constraint: String,
        /// The request's seed.
        #[arg(long, default_value_t = 0)]
        seed: u32,
        /// Write the plan to this file instead of printing it.
        #[arg(long)]
        out: Option<PathBuf>,
        /// Ask for the whole plan document (about three times the tokens) instead of the choices.
        #[arg(long)]
        whole_plan: bool,
        /// The plan's `sessionRef` (compact choices only).
        #[arg(long, value_name = "REF", conflicts_with = "whole_plan")]
        session_ref: Option<String>,
        /// A decision that exists, which the plan may link evidence to (compact choices only).
        #[arg(long, value_name = "ID", conflicts_with = "whole_plan")]
        existing_decision: Option<String>,
        /// An evidence that exists, which the plan may link a decision to (compact choices only).
        #[arg(long, value_name = "ID", conflicts_with = "whole_plan")]
        existing_evidence: Option<String>,
        /// What the plan is for (with a profile, its hash is printed too).
        #[command(flatten)]
        of: PlansOf,
    },
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
        /// Why the Block may pass; recorded with the decision (not blank, at most 2,000
        /// characters).
        #[arg(long, value_parser = parse_reason)]
        reason: String,
        /// Who decides (recorded with the decision; default: the `USER` environment variable).
        #[arg(long, value_name = "NAME")]
        by: Option<String>,
        /// The digest of what you approve (`inbox show` or `status` prints it); without it, what
        /// the record shows now.
        #[arg(long, value_name = "HEX")]
        digest: Option<String>,
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
    /// Show the session (id, completed cycles, plan hash) and any paused cycle, with the
    /// decision on it if one is recorded; with `--history N`, its last N finished cycles.
    Status {
        #[command(flatten)]
        place: SessionPlace,
        /// Also show the last N finished cycles (completed, paused or failed), newest first: each
        /// step's status, duration, tokens and warnings.
        #[arg(long, value_name = "N")]
        history: Option<usize>,
    },
    /// The console: sessions, each cycle's steps and the inbox in a web page, where a person
    /// approves or rejects a pause (on 127.0.0.1 unless `--listen` says otherwise).
    Serve {
        #[command(flatten)]
        sessions: SessionsArgs,
        /// Where to listen (`127.0.0.1:0` picks a free port; the address is printed).
        #[arg(long, default_value = "127.0.0.1:8790", value_name = "ADDR")]
        listen: std::net::SocketAddr,
        /// Serve the pages only: no approve or reject.
        #[arg(long)]
        read_only: bool,
        /// Take the person from this request header, set by an authenticating proxy in front of
        /// the console (oauth2-proxy's `X-Forwarded-User`, …): only with `--access` (the header
        /// must name one of its users) and `--proxy-secret-env`.
        #[arg(long, value_name = "HEADER", requires = "proxy_secret_env")]
        user_header: Option<String>,
        /// A one-off access file (CONTRACT §18) where none is installed (`planlock access
        /// install`), followed as it changes: people sign in with their own tokens and decide
        /// only where it allows them. The console follows the installed rules by default; a file
        /// that says other rules is refused. Without either, one operator signs in with the
        /// console's token and a name, recorded as unverified.
        #[arg(long, value_name = "FILE")]
        access: Option<std::path::PathBuf>,
        /// The environment variable holding the secret a trusted proxy in front sends in
        /// `X-Planlock-Proxy-Secret` with every request: with it the console counts failed
        /// sign-ins by the client the proxy reports (`X-Forwarded-For`), and takes
        /// `--user-header`.
        #[arg(long, value_name = "VAR")]
        proxy_secret_env: Option<String>,
        /// A trace UI's address of one trace, with `{traceId}` where the id goes (Phoenix:
        /// `http://127.0.0.1:6006/projects/UHJvamVjdDox/traces/{traceId}`): each cycle of a
        /// session's page links to its trace.
        #[arg(long, value_name = "URL", value_parser = parse_trace_url)]
        trace_url: Option<String>,
    },
    /// Act on each decision as it is made (CONTRACT §21): run a session's next cycle as soon as
    /// a person's decision on its pause is complete (an approval re-runs the blocked step, a
    /// rejection or an abandon ends the cycle, as `run` does), with the plan the session keeps.
    /// Woken by the decision itself (a database's notification, the session roots watched),
    /// and looking at every session every `--poll`. Each action is one line; SIGTERM or Ctrl-C
    /// stops it after the cycle in flight. Many may run at once: each decision is acted on once.
    Worker(WorkerArgs),
    /// The token budgets of the sessions (CONTRACT §20): tokens per period for every session of
    /// the directory or tenant, or for those whose name starts with a prefix. A model call
    /// reserves its estimate before it is sent and is refused (`budget-exhausted`) when a budget
    /// cannot cover it; the cycle's save settles it to what the server reported.
    Budget {
        #[command(subcommand)]
        command: BudgetCommand,
    },
    /// The pauses waiting for a person across sessions: list them, show one with what is being
    /// approved, approve or reject it (from any machine that reaches the sessions; the session
    /// goes on at its next `run`), read a session's approval log.
    Inbox {
        #[command(subcommand)]
        command: InboxCommand,
    },
    /// Send the pauses' notifications (created, decided, expired, resolved) to the access file's
    /// webhooks, signed per Standard Webhooks, at least once: a long-running sender (several may
    /// run at once), or with `--once` what is due now. Each attempt is printed; no secret is.
    Notify {
        #[command(flatten)]
        sessions: SessionsArgs,
        /// A one-off access file naming the webhooks (their secrets in the variables it names),
        /// where none is installed (`planlock access install`); one that says other rules than
        /// the installed ones is refused.
        #[arg(long, value_name = "FILE")]
        access: Option<PathBuf>,
        /// Deliver what is due now, and exit.
        #[arg(long)]
        once: bool,
        /// How long a receiver has to answer.
        #[arg(long, default_value = "10s", value_parser = parse_duration, value_name = "DURATION")]
        timeout: std::time::Duration,
        /// The wait before the first retry of a failed delivery (then doubled each time, at most
        /// an hour; retried until the event is a day old).
        #[arg(long, default_value = "10s", value_parser = parse_duration, value_name = "DURATION")]
        first_retry: std::time::Duration,
    },
    /// The access file's tools (CONTRACT §18): who may decide on pauses.
    Access {
        #[command(subcommand)]
        command: AccessCommand,
    },
}

#[derive(Subcommand)]
pub enum AccessCommand {
    /// Print a fresh personal token (256 random bits) once, and its `tokenSha256` for the access
    /// file: give the token to its person, keep only the hash. Nothing is written.
    NewToken {
        /// The person the token is for: the lines printed to paste into the file name them.
        #[arg(long, value_name = "NAME", default_value = "NAME")]
        name: String,
    },
    /// Install an access file where the sessions live (beside the session roots, or in the
    /// database for the tenant): every path that decides or acts applies it from then on (the
    /// inbox commands, `resume`, the library, the console, the sender), without a flag. It is
    /// checked first; an invalid file is refused and nothing changes.
    Install {
        #[command(flatten)]
        sessions: SessionsArgs,
        /// The access file to install.
        file: PathBuf,
    },
    /// Show the rules installed where the sessions live: who may decide on which validator's
    /// pauses, and how many approvals each needs.
    Show {
        #[command(flatten)]
        sessions: SessionsArgs,
    },
    /// Remove the installed access file: one operator decides again, names unverified.
    Remove {
        #[command(flatten)]
        sessions: SessionsArgs,
    },
}

/// The pause a decision is on, and who decides: what `inbox approve|reject|abandon` share.
#[derive(clap::Args)]
pub struct OnPause {
    #[command(flatten)]
    pub sessions: SessionsArgs,
    #[command(flatten)]
    pub decider: DeciderArgs,
    /// The pause you decide on, `CYCLE@CREATED` (`inbox show` prints it); without it, the one
    /// waiting now. A decision for a pause that has ended is refused.
    #[arg(long, value_name = "ID")]
    pub pause: Option<String>,
    /// The session: a root's name under `--sessions`, or a key in `--database`.
    pub session: String,
}

#[derive(Subcommand)]
pub enum InboxCommand {
    /// Every pause waiting for a person, oldest first: filtered as the console's inbox is (the
    /// same parameters, the same code).
    List {
        #[command(flatten)]
        sessions: SessionsArgs,
        /// Only this validator's pauses.
        #[arg(long)]
        validator: Option<String>,
        /// Only pauses at this step type.
        #[arg(long, value_parser = parse_step_type)]
        step_type: Option<StepType>,
        /// Only pauses at least this old (`90s`, `15m`, `2h`, `1d`).
        #[arg(long, value_parser = parse_duration, value_name = "DURATION")]
        older_than: Option<std::time::Duration>,
        /// Only pauses that stand so: waiting (nothing decided), decided (a decision or some of
        /// the approvals it needs), expired (they can only be abandoned).
        #[arg(long, value_parser = ["waiting", "decided", "expired"])]
        state: Option<String>,
        /// Only expired pauses (`--state expired`).
        #[arg(long, conflicts_with = "state")]
        expired: bool,
        /// Only pauses whose session name, step id or reason holds every one of these words.
        #[arg(long, value_name = "WORDS")]
        q: Option<String>,
        /// Newest first (else the one waiting longest first).
        #[arg(long)]
        newest_first: bool,
    },
    /// One pause: its record and what is being approved (`shown`, with its digest).
    Show {
        #[command(flatten)]
        sessions: SessionsArgs,
        /// The session: a root's name under `--sessions`, or a key in `--database`.
        session: String,
    },
    /// Approve a pause: the blocked step runs at the session's next `run` while it meets what
    /// was shown.
    Approve {
        #[command(flatten)]
        on: OnPause,
        /// The digest of what you approve (`inbox show` prints it); without it, what the pause
        /// stands on now: its latest edit, once one was made, else what its record shows.
        #[arg(long, value_name = "HEX")]
        digest: Option<String>,
    },
    /// Edit and approve a pause (CONTRACT §22): replace the paused step's payload with the JSON
    /// in FILE (checked by the plan's validator like a plan's step). Your edit is your approval
    /// of it; other approvers approve the edited payload (`inbox show` prints its digest and
    /// diff; `inbox approve --digest` it). The step re-runs with exactly that payload, once.
    Edit {
        #[command(flatten)]
        on: OnPause,
        /// The replacement payload: a JSON object (at most 64 KiB).
        #[arg(long, value_name = "FILE")]
        payload: PathBuf,
    },
    /// Reject a pause: its cycle is abandoned at the session's next `run`.
    Reject {
        #[command(flatten)]
        on: OnPause,
    },
    /// Abandon a pause without judging what it shows: its cycle is given up at the session's
    /// next `run`. The one way to end an expired pause; a waiting one too.
    Abandon {
        #[command(flatten)]
        on: OnPause,
    },
    /// A session's approval log: every decision and what became of it.
    Log {
        #[command(flatten)]
        sessions: SessionsArgs,
        /// The session: a root's name under `--sessions`, or a key in `--database`.
        session: String,
    },
}

/// Where the inbox's sessions are.
#[derive(clap::Args)]
pub struct SessionsArgs {
    /// Where the sessions live: a directory whose subdirectories are session roots, or a
    /// `postgres://` URL (as --database; prefer PLANLOCK_DATABASE_URL, which keeps a password off
    /// the command line). Given, it wins over the environment's database and tenant.
    #[arg(long, conflicts_with = "database", value_name = "DIR|URL")]
    pub sessions: Option<PathBuf>,
    /// A shared PostgreSQL database (`postgres://user:password@host/db`; default: the
    /// PLANLOCK_DATABASE_URL variable, when no --sessions is given); the password is never
    /// printed.
    #[arg(long, value_name = "URL")]
    pub database: Option<String>,
    /// The tenant whose sessions these are, in a database shared by tenants (row-level
    /// security shows only its rows; default: the PLANLOCK_TENANT variable, with a database);
    /// not with a directory.
    #[arg(long, value_name = "TENANT")]
    pub tenant: Option<String>,
    /// Without a tenant, as a role that bypasses row-level security: read every tenant's
    /// sessions, read only (such a role is refused without a tenant once the database holds
    /// several). Read-only commands only: anything that writes is refused by the database.
    #[arg(long, conflicts_with_all = ["tenant", "sessions"])]
    pub all_tenants: bool,
}

/// A variable of the environment that names a place, when set and not empty.
pub(crate) fn from_env(name: &str) -> Option<String> {
    std::env::var(name).ok().filter(|v| !v.trim().is_empty())
}

impl SessionsArgs {
    /// The database the flags name: `--database`, else (no `--sessions` given)
    /// PLANLOCK_DATABASE_URL. A place on the command line wins over the environment.
    pub fn database_url(&self) -> Option<String> {
        match &self.sessions {
            Some(_) => None,
            None => self.database.clone().or_else(|| from_env("PLANLOCK_DATABASE_URL")),
        }
    }

    /// The tenant: `--tenant`, else PLANLOCK_TENANT when the sessions are a database's.
    pub fn tenant_name(&self) -> Option<String> {
        let in_database = self.database_url().is_some()
            || self.sessions.as_ref().and_then(|s| s.to_str()).is_some_and(planlock::backend::is_database_url);
        let from_env = from_env("PLANLOCK_TENANT").filter(|_| in_database && !self.all_tenants);
        self.tenant.clone().or(from_env)
    }
}

/// Who decides, and why.
#[derive(clap::Args)]
pub struct DeciderArgs {
    /// Who decides (recorded with the decision).
    #[arg(long, value_name = "NAME")]
    pub by: String,
    /// Why (not blank, at most 2,000 characters).
    #[arg(long, value_parser = parse_reason)]
    pub reason: String,
    /// A one-off access file (CONTRACT §18) where none is installed (`planlock access
    /// install`): `--by` must name a user it allows for the pause's validator, and a validator
    /// that needs N approvals counts this one. The installed rules always apply; a file that
    /// says other rules is refused. Without either, one operator decides and the name is
    /// recorded as unverified.
    #[arg(long, value_name = "FILE")]
    pub access: Option<std::path::PathBuf>,
}

/// `90s`, `15m`, `2h` or `1d`: a whole number and a unit.
pub fn parse_duration(s: &str) -> Result<std::time::Duration, String> {
    planlock::review::inbox::parse_duration(s).map_err(|why| format!("`{s}` is not a duration: {why}"))
}

#[derive(Subcommand)]
pub enum BudgetCommand {
    /// Each budget: its prefix, tokens per period, what is used and reserved, what is left and
    /// when it resets.
    Show {
        #[command(flatten)]
        sessions: SessionsArgs,
    },
    /// Set a budget (what this period used and holds is kept).
    Set {
        #[command(flatten)]
        sessions: SessionsArgs,
        /// The sessions it covers: those whose name or key starts with this (default: all).
        #[arg(long, default_value = "")]
        prefix: String,
        /// Tokens per period: input and output, as the model server reports them.
        #[arg(long, value_name = "N")]
        tokens: u64,
        /// The period (`90s`, `15m`, `2h`, `1d`), aligned to the Unix epoch: `1d` resets at
        /// midnight UTC.
        #[arg(long, value_parser = parse_duration, default_value = "1d")]
        period: std::time::Duration,
    },
    /// Remove a budget.
    Remove {
        #[command(flatten)]
        sessions: SessionsArgs,
        /// The budget's prefix (default: the one covering every session).
        #[arg(long, default_value = "")]
        prefix: String,
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

fn parse_trace_url(s: &str) -> Result<String, String> {
    match (s.starts_with("http://") || s.starts_with("https://"), s.contains("{traceId}")) {
        (true, true) => Ok(s.to_owned()),
        _ => Err(format!("`{s}` is not a trace URL template: give an http(s) address with {{traceId}} in it")),
    }
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
    /// missing; nothing is written under it until a cycle completes. Not with `--database`;
    /// given, it wins over the environment's database and tenant.
    #[arg(long, required_unless_present_any = ["database", "session"], conflicts_with_all = ["database", "session"])]
    pub root: Option<PathBuf>,
    /// A shared PostgreSQL database for the session, its records and its memories, instead of
    /// files under `--root` (`postgres://user:password@host/db`; default: the
    /// PLANLOCK_DATABASE_URL variable); needs `--session`. The password is never printed.
    #[arg(long, requires = "session", value_name = "URL")]
    pub database: Option<String>,
    /// The session's key in the database (a conversation id, 1 to 256 bytes).
    #[arg(long, value_name = "KEY")]
    pub session: Option<String>,
    /// The tenant the session belongs to, in a database shared by tenants: row-level security
    /// shows and lets write only its rows (1 to 64 letters, digits, `.`, `_`, `-`; default: the
    /// PLANLOCK_TENANT variable, with a database).
    #[arg(long, requires = "session", value_name = "TENANT")]
    pub tenant: Option<String>,
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

/// What `grammar` and `plan` share: whose plans (a profile), and the keys of the free-form objects.
#[derive(clap::Args)]
pub struct PlansOf {
    /// The directory holding the policy profiles: with `--profile`, the plans are that profile's
    /// (its `policyProfile`, one of its modes, each mode's `topK`).
    #[arg(long, requires = "profile")]
    pub policy_root: Option<PathBuf>,
    /// The profile under the policy root, as a plan's `metadata.policyProfile` names it.
    #[arg(long, requires = "policy_root")]
    pub profile: Option<String>,
    /// The keys of `PromptAssemble`'s `vars` (the template's variables), comma-separated.
    #[arg(long, value_delimiter = ',')]
    pub vars: Vec<String>,
    /// The keys of `LLMCall`'s `config`, comma-separated.
    #[arg(long, value_delimiter = ',')]
    pub config: Vec<String>,
    /// The keys of `PersistSession`'s `meta`, comma-separated.
    #[arg(long, value_delimiter = ',')]
    pub meta: Vec<String>,
}

/// What `run` and `resume` share: where the session is, what its runtime runs with, the plan.
#[derive(clap::Args)]
pub struct CycleArgs {
    #[command(flatten)]
    pub place: SessionPlace,
    #[command(flatten)]
    pub runtime: RuntimeFlags,
    /// Make this step type's handler fail (repeatable), to show the failure semantics; any
    /// step type, `PersistSession` included (the save fails, nothing is written).
    #[arg(long = "fail", value_parser = parse_step_type)]
    pub fail: Vec<StepType>,
    /// The plan file, or `-` for standard input.
    pub plan: PathBuf,
}

/// What a session's runtime runs with (`run`, `resume`, `worker`): the policy, the bundle, the
/// model, the embedder, how long a pause waits.
#[derive(clap::Args)]
pub struct RuntimeFlags {
    /// The directory holding the policy profiles.
    #[arg(long)]
    pub policy_root: PathBuf,
    /// The bundle directory (its `manifest.json` names the strategy and memory providers).
    /// Without it, the default bundle: strategy `hierarchical-sql`, memory provider `sqlite`
    /// (`ops/store/planlock.sqlite3` under the root), or their PostgreSQL counterparts in a
    /// database. The session is pinned to the providers by its first completed cycle.
    #[arg(long)]
    pub bundle: Option<PathBuf>,
    #[command(flatten)]
    pub model: ModelArgs,
    #[command(flatten)]
    pub embed: EmbedArgs,
    /// How long a pause waits for a person (`30m`, `8h`, `2d`): past it, a decision is refused
    /// and the cycle can only be abandoned. No expiry without it.
    #[arg(long, value_parser = parse_duration, value_name = "DURATION")]
    pub approval_ttl: Option<std::time::Duration>,
}

/// The model the sessions' `LLMCall` and `SummarizeMemory` steps ask (`run`, `resume`,
/// `worker`).
#[derive(clap::Args)]
pub struct ModelArgs {
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
}

impl ModelArgs {
    /// The server and the model, when both are given.
    pub fn llm(&self) -> Option<(&str, &str)> {
        self.llm_url.as_deref().zip(self.llm_model.as_deref())
    }
}

/// `planlock worker`: where the sessions live and what their runtimes run with.
#[derive(clap::Args)]
pub struct WorkerArgs {
    #[command(flatten)]
    pub sessions: SessionsArgs,
    #[command(flatten)]
    pub runtime: RuntimeFlags,
    /// What the relative `repoPath`s of the kept plans mean (`run` takes the plan file's
    /// directory).
    #[arg(long, default_value = ".", value_name = "DIR")]
    pub repo_base: PathBuf,
    /// How often every session is looked at, whatever woke the worker (`10s`, `1m`; at least
    /// `1s`): what a lost notification costs at most.
    #[arg(long, default_value = "10s", value_parser = parse_duration, value_name = "DURATION")]
    pub poll: std::time::Duration,
    /// Act on what is decided now, then stop.
    #[arg(long)]
    pub once: bool,
    /// Find decisions by polling alone (a network file system, where watching does not work).
    #[arg(long)]
    pub no_watch: bool,
}

impl SessionPlace {
    /// The command that decides on this session's pause under the installed rules (never the
    /// database's URL: the environment variable that holds it).
    pub fn decide_command(&self) -> String {
        let place = match (&self.root, &self.session) {
            (Some(root), _) => {
                let name = root.file_name().map_or_else(|| root.to_string_lossy(), |n| n.to_string_lossy());
                let dir = planlock::session::sessions_dir_of(root);
                format!("--sessions {} {}", shell_word(&dir.to_string_lossy()), shell_word(&name))
            }
            (None, Some(key)) => {
                let tenant = self.tenant_name().map(|t| format!("--tenant {} ", shell_word(&t))).unwrap_or_default();
                format!("--database \"$PLANLOCK_DATABASE_URL\" {tenant}{}", shell_word(key))
            }
            (None, None) => "SESSION".to_owned(),
        };
        format!("planlock inbox approve --by NAME --reason TEXT {place}")
    }

    /// The tenant: `--tenant`, else PLANLOCK_TENANT, for a session in a database (never with
    /// `--root`).
    pub fn tenant_name(&self) -> Option<String> {
        match self.root {
            Some(_) => None,
            None => self.tenant.clone().or_else(|| from_env("PLANLOCK_TENANT")),
        }
    }
}

/// `word` as one word of a POSIX shell: as it is when it needs no quoting, else in single quotes.
fn shell_word(word: &str) -> String {
    let plain = |c: char| c.is_ascii_alphanumeric() || "._/-+=:@%".contains(c);
    match !word.is_empty() && word.chars().all(plain) {
        true => word.to_owned(),
        false => format!("'{}'", word.replace('\'', r"'\''")),
    }
}
