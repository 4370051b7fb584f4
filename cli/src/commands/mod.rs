//! One module per command, and what several share: reading a plan.
//!
//! A command writes its report to `out` and returns its exit code, or returns a [`CliError`]
//! having written nothing (`main` writes it, as JSON or on stderr).

mod abandon;
mod access;
mod budget;
mod decisions;
mod grammar;
mod hash;
mod inbox;
mod memory;
mod notify;
mod pgvector;
mod plan;
mod run;
mod schema;
mod serve;
mod status;
mod validate;
mod worker;

use std::io::Read;
use std::path::Path;

use planlock::{Failure, FailureKind, PlanReadError, Problem, Rejection, ValidPlan};

use crate::args::{Command, MemoryCommand};
use crate::error::{CliError, class_exit};
use crate::output::Output;

/// Runs `command`, its report written to `out`.
pub fn dispatch(command: Command, out: &mut Output) -> Result<u8, CliError> {
    match command {
        Command::Validate { file } => validate::validate(out, &file),
        Command::Hash { policy_root, parts, plan } => hash::hash(out, &policy_root, parts, &plan),
        Command::Schema => schema::schema(out),
        Command::Pgvector { database, dimension } => pgvector::install(out, &database, dimension),
        Command::Grammar { syntax, compact, of } => grammar::grammar(out, &syntax, compact, &of),
        Command::Plan {
            llm_url,
            llm_model,
            goal,
            constraint,
            seed,
            out: file,
            whole_plan,
            session_ref,
            existing_decision,
            existing_evidence,
            of,
        } => {
            let frame = plan::Frame { whole_plan, session_ref, existing_decision, existing_evidence };
            let ask =
                plan::Ask { url: &llm_url, model: &llm_model, goal: &goal, constraint: &constraint, seed, out: file };
            plan::plan(out, ask, frame, &of)
        }
        Command::Run { cycle } => run::run(out, cycle, None),
        Command::Resume { cycle, approve, step, reason, by, digest } => {
            let by = by.or_else(|| std::env::var("USER").ok()).unwrap_or_else(|| "cli".to_owned());
            let mut over = planlock::Override::new(approve, step, reason).by(by);
            if let Some(hex) = digest {
                let digest = hex
                    .parse()
                    .map_err(|_| CliError::usage("usage", format!("--digest `{hex}` is not 64 hex digits")))?;
                over = over.for_shown(digest);
            }
            run::run(out, cycle, Some(over))
        }
        Command::Inbox { command } => inbox::inbox(out, command),
        Command::Budget { command } => budget::budget(out, command),
        Command::Worker(args) => worker::worker(out, args),
        Command::Access { command } => access::access(out, command),
        Command::Notify { sessions, access, once, timeout, first_retry } => {
            let options = planlock::review::notify::NotifyOptions::default().timeout(timeout).first_retry(first_retry);
            notify::notify(out, &sessions, access.as_deref(), once, options)
        }
        Command::Serve { sessions, listen, read_only, user_header, access, proxy_secret_env, trace_url } => {
            let people = serve::People { user_header, access, proxy_secret_env };
            serve::serve(out, &sessions, listen, (read_only, trace_url), people)
        }
        Command::Abandon { place } => abandon::abandon(out, &place),
        Command::Memory { command: MemoryCommand::Search { place, top_k, embed, text } } => {
            memory::search(out, &place, top_k, &embed, &text)
        }
        Command::Decisions { place, domain } => decisions::decisions(out, &place, domain.as_deref()),
        Command::Status { place, history } => status::status(out, &place, history),
    }
}

/// Reads and validates the plan at `file` (`-` for standard input). The read is capped by
/// [`ValidPlan::from_reader`]; an I/O failure is the outer error, a rejection the inner one.
fn read_plan(file: &Path) -> Result<Result<ValidPlan, Rejection>, CliError> {
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
struct PlanFailure {
    error: CliError,
    class: Option<FailureKind>,
    problems: Vec<Problem>,
}

/// Reads and validates a plan.
fn load_plan(file: &Path) -> Result<ValidPlan, PlanFailure> {
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

impl crate::args::EmbedArgs {
    /// The resolver with the embedder these flags name (the demo's without them), and how the
    /// output names it. A server is asked only when `manifest`'s providers rank by meaning: a
    /// bundle that embeds nothing never contacts it. A server that fails here fails with its
    /// cause's code (`model-http-status`, `model-redirect`, …) and the class of `first`, the
    /// first step that would have asked it: the same failure has the same class before the
    /// cycle as in it.
    pub(crate) fn resolver(
        &self,
        manifest: &planlock::store::bundle::BundleManifest,
        first: impl Fn(&[planlock::StepType]) -> Option<planlock::StepType>,
    ) -> Result<(planlock::store::bundle::StrategyResolver, crate::report::EmbedderInfo), CliError> {
        use std::sync::Arc;

        use planlock::embed::{DemoEmbedder, Embedder as _};
        use planlock::handlers::{EmbedConfig, OpenAiEmbedder};

        use crate::report::EmbedderInfo;
        let resolver = planlock::store::bundle::StrategyResolver::default();
        match (&self.embed_url, &self.embed_model) {
            (Some(url), Some(model)) if resolver.ranks_by_meaning(manifest) => {
                // E5 models embed queries and passages differently; servers that do not know the
                // member ignore it.
                let config =
                    EmbedConfig::new(url, model).api_key_env(&self.embed_api_key_env).purpose_member("input_type");
                let class = first(&resolver.embedding_steps(manifest)).map(|t| t.failure_kind());
                let embedder = OpenAiEmbedder::connect(config).map_err(|e| CliError {
                    exit: class_exit(class.unwrap_or(FailureKind::FailFast)),
                    code: e.code(),
                    message: e.to_string(),
                })?;
                let about = EmbedderInfo::Openai {
                    model: model.clone(),
                    url: embedder.config().shown_url(),
                    dimension: embedder.dimension(),
                };
                Ok((resolver.embedder(Arc::new(embedder)), about))
            }
            _ => {
                let about = EmbedderInfo::Demo { model: DemoEmbedder::MODEL, dimension: DemoEmbedder::DIMENSION };
                Ok((resolver.embedder(Arc::new(DemoEmbedder::new())), about))
            }
        }
    }
}

/// The stores of the session at `place` for reading, through the providers its pin names (a
/// read: nothing written, no lock or lease): with the embedder `embed` names, at the pinned
/// dimension; else the demo's (refused when the session was pinned with another: the message
/// names both); for a command without the flags (`embed` none), one that only says which flags
/// to give, so that a read that embeds nothing (`decisions`) still works.
fn read_stores(
    place: &crate::place::Located,
    embed: Option<&crate::args::EmbedArgs>,
) -> Result<planlock::store::provider::ResolvedStore, CliError> {
    use std::sync::Arc;

    use planlock::embed::{DemoEmbedder, Embedder, Unavailable};
    use planlock::handlers::{EmbedConfig, OpenAiEmbedder};

    let pin = planlock::block_on(place.records()?.load_pin()).map_err(|e| CliError::of(&e))?;
    let pinned = pin.as_ref().and_then(|p| Some((p.embedder_model.clone()?, p.embedder_dimension?)));
    let named = embed.and_then(|e| Some((e.embed_url.as_ref()?, e.embed_model.as_ref()?, &e.embed_api_key_env)));
    let dimension = |pinned: &Option<(String, u64)>| pinned.as_ref().map_or(0, |(_, d)| *d as usize);
    let embedder: Arc<dyn Embedder> = match (named, &pinned) {
        (Some((url, model, key_env)), _) => Arc::new(OpenAiEmbedder::with_dimension(
            EmbedConfig::new(url, model).api_key_env(key_env).purpose_member("input_type"),
            dimension(&pinned),
        )),
        // A command without the flags (`decisions`) reads what needs no embedding.
        (None, Some((model, _))) if embed.is_none() && model != DemoEmbedder::MODEL => {
            // The pinned embedder with no server named: a read that would embed says what to give.
            let message = "the session was pinned with this model: give --embed-url and --embed-model to embed with it";
            Arc::new(Unavailable::new(model.clone(), dimension(&pinned), message))
        }
        (None, _) => Arc::new(DemoEmbedder::new()),
    };
    let resolver = planlock::store::bundle::StrategyResolver::default().embedder(embedder);
    planlock::block_on(planlock::backend::read_stores(place.backend.as_ref(), &place.name, &resolver))
        .map_err(|e| CliError::of_place(&e))
}
