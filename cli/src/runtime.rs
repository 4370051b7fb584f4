//! The runtime a command boots for a session (`run`, `resume`, `worker`), said once: the demo
//! handlers, a real model when asked for, the review gate, the bundle's providers with the
//! embedder, and the session's token budgets.

use std::path::{Path, PathBuf};

use planlock::backend::{Backend, OpenedSession};
use planlock::demo::{Demo, DemoSessionStore, ReviewGate};
use planlock::handler::Boxed;
use planlock::handlers::{ModelConfig, OpenAiModel};
use planlock::runtime::{Runtime, RuntimeBuilder};
use planlock::session::SessionStore;
use planlock::steps::{LLMCall, SummarizeMemory};
use planlock::store::StoreHandlers;
use planlock::store::bundle::BundleManifest;
use planlock::{Failure, StepType, ValidPlan};

use crate::args::EmbedArgs;
use crate::error::CliError;
use crate::report::{EmbedderInfo, ModelInfo};

/// What a session's runtime runs with, from the command line.
pub struct RuntimeArgs<'a> {
    /// The directory holding the policy profiles.
    pub policy_root: &'a Path,
    /// The bundle directory, or the backend's default bundle.
    pub bundle: Option<&'a Path>,
    /// The step types whose handlers fail (`--fail`).
    pub fail: &'a [StepType],
    /// What relative `repoPath`s mean.
    pub repo_base: PathBuf,
    /// The model server and model (`--llm-url`, `--llm-model`), or the demo model.
    pub llm: Option<(&'a str, &'a str)>,
    /// The variable holding the model server's key.
    pub llm_api_key_env: &'a str,
    /// The embedder's flags.
    pub embed: &'a EmbedArgs,
    /// How long a pause waits for a person.
    pub approval_ttl: Option<std::time::Duration>,
}

impl crate::args::RuntimeFlags {
    /// What a session's runtime runs with: these flags, the handlers that fail (`--fail`), and
    /// what relative `repoPath`s mean.
    pub fn args<'a>(&'a self, fail: &'a [StepType], repo_base: PathBuf) -> RuntimeArgs<'a> {
        RuntimeArgs {
            policy_root: &self.policy_root,
            bundle: self.bundle.as_deref(),
            fail,
            repo_base,
            llm: self.model.llm(),
            llm_api_key_env: &self.model.llm_api_key_env,
            embed: &self.embed,
            approval_ttl: self.approval_ttl,
        }
    }
}

/// A session's runtime, ready to boot, and what the report says of its model and embedder.
pub struct Built {
    pub builder: RuntimeBuilder<DemoSessionStore<Box<dyn SessionStore>>, Boxed>,
    pub model: ModelInfo,
    pub embedder: Option<EmbedderInfo>,
}

/// The model the plan's `LLMCall` steps ask for by name (`config.model`), if one does: it wins
/// over `--llm-model`, which is the model of the steps that name none.
fn planned_model(plan: &ValidPlan) -> Option<String> {
    plan.steps().iter().find_map(|s| match &s.payload {
        planlock::StepPayload::LLMCall(p) => p.config.0.get("model")?.as_str().map(str::to_owned),
        _ => None,
    })
}

/// The bundle the session runs: the one `--bundle` names, else the backend's default.
pub fn manifest(args: &RuntimeArgs<'_>, backend: &dyn Backend) -> Result<BundleManifest, CliError> {
    match args.bundle.map(BundleManifest::load).transpose() {
        Ok(Some(manifest)) => Ok(manifest),
        Ok(None) => Ok(backend.default_bundle()),
        Err(e) => Err(CliError::fail_fast(e.code(), e.to_string())),
    }
}

/// The runtime of the session `open` opens (once the embedder is had: nothing is opened for a
/// run that cannot go) for `plan`, with `manifest`'s providers.
pub fn build(
    args: &RuntimeArgs<'_>,
    manifest: BundleManifest,
    plan: ValidPlan,
    open: impl FnOnce() -> Result<Box<dyn OpenedSession>, CliError>,
) -> Result<Built, CliError> {
    let demo = Demo::new().failing(args.fail.to_vec()).repo_base(args.repo_base.clone());
    let first_in_plan = |types: &[StepType]| plan.steps().iter().map(|s| s.step_type()).find(|t| types.contains(t));
    let (resolver, embedder) = args.embed.resolver(&manifest, first_in_plan)?;
    // Named in the output only when the bundle's providers rank with it.
    let embedder = resolver.embedder_of(&manifest).map(|_| embedder);
    let opened = open()?;
    // Memories and decisions live where the bundle says: by default the session root's SQLite
    // database, or the shared database's namespace of the session.
    let storage = opened.resolve(&resolver, &manifest).map_err(|e| CliError::fail_fast(e.code(), e.to_string()))?;
    let storage = StoreHandlers::new(storage);
    // The session's token budgets: each model call reserves from them (none set: nothing).
    let budget = opened.budget();
    let store = demo.session_store(opened.into_session_store());
    // The model: a real server when asked for, the demo otherwise; `--fail` covers both.
    let planned = planned_model(&plan);
    let (handlers, model) = match args.llm {
        Some((url, name)) => {
            let config = ModelConfig::new(url, name).api_key_env(args.llm_api_key_env);
            let model = OpenAiModel::new(config);
            // The model asked is the plan's when it names one (its `config.model` wins).
            let named_by_plan = planned.as_ref().is_some_and(|p| p != name);
            let about = ModelInfo::Openai {
                model: planned.clone().unwrap_or_else(|| name.to_owned()),
                url: model.config().shown_url(),
                usage: None,
                named_by_plan,
            };
            let handlers = demo
                .with_store(&storage)
                .on::<LLMCall>(demo.gate(model.clone()))
                .on::<SummarizeMemory>(demo.gate(model));
            (handlers.boxed(), about)
        }
        None => (demo.with_store(&storage).boxed(), ModelInfo::Demo),
    };
    let builder = Runtime::builder(args.policy_root, plan, store)
        .handlers(handlers)
        .bundle(manifest)
        .resolver(resolver)
        .budget(budget)
        .record_content(crate::telemetry::captures_content())
        .validator(ReviewGate::ID, ReviewGate::VERSION, &serde_json::json!({}), ReviewGate);
    let builder = match args.approval_ttl {
        Some(ttl) => builder.approval_ttl(ttl),
        None => builder,
    };
    Ok(Built { builder, model, embedder })
}
