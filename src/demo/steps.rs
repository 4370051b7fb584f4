//! The demo itself: its handler of every step, its review gate, and the session store that
//! fails when told.

use std::collections::BTreeSet;
use std::path::PathBuf;
use std::sync::Arc;

use super::scan::scan;
use crate::contract::plan::ValidatorSignature;
use crate::contract::registry::StepType;
use crate::contract::schema::*;
use crate::contract::steps::*;
use crate::exec::handler::{Handler, HandlerError, Handlers, StepContext};
use crate::exec::validator::{StepView, Validator, Verdict};
use crate::session::{BeforeSave, SESSION_FILE, SessionError, SessionStore, SessionUpdate};
use crate::store::memory::InMemoryStore;
use crate::store::{Storage, StoreHandlers};
use crate::telemetry::{Message, ModelAnswer, ModelCall, Operation};

/// The demo handlers; clone it to register it for every step type.
#[derive(Debug, Clone)]
pub struct Demo {
    store: StoreHandlers<InMemoryStore>,
    fail: Arc<BTreeSet<StepType>>,
    base: Option<PathBuf>,
}

impl Default for Demo {
    fn default() -> Demo {
        Demo { store: StoreHandlers::new(InMemoryStore::new()), fail: Arc::default(), base: None }
    }
}

impl Demo {
    /// Demo handlers with an empty store.
    pub fn new() -> Demo {
        Demo::default()
    }

    /// Makes the handlers of these step types fail.
    pub fn failing(mut self, types: impl IntoIterator<Item = StepType>) -> Demo {
        self.fail = Arc::new(types.into_iter().collect());
        self
    }

    /// Resolves relative `repoPath`s against `base` (default: the working directory).
    pub fn repo_base(mut self, base: impl Into<PathBuf>) -> Demo {
        self.base = Some(base.into());
        self
    }

    /// The demo's own store (clones share its data), for inspection.
    pub fn store(&self) -> &InMemoryStore {
        self.store.ports()
    }

    /// Every demo handler, registered for its step type (all but `PersistSession`, the
    /// runtime's): the Retrieve and Persist steps are the real storage handlers over the demo's
    /// [`InMemoryStore`], as [`with_store`](Demo::with_store) gives them over any store.
    pub fn handlers(&self) -> Handlers<impl crate::exec::handler::HandlerSet + use<>> {
        self.with_store(&self.store)
    }

    /// The demo handlers for the steps that need a model or a file system (`RepoScan`,
    /// `ContextSelect`, `PromptAssemble`, `LLMCall`, `SummarizeMemory`), and the real storage
    /// handlers over `store` for the Retrieve and Persist steps; [`failing`](Demo::failing)
    /// covers them all.
    pub fn with_store<P>(&self, store: &StoreHandlers<P>) -> Handlers<impl crate::exec::handler::HandlerSet + use<P>>
    where
        P: Storage,
    {
        Handlers::new()
            .on::<RepoScan>(self.clone())
            .on::<ContextSelect>(self.clone())
            .on::<RetrieveMemory>(self.gate(store.clone()))
            .on::<RetrieveDecisionContext>(self.gate(store.clone()))
            .on::<PromptAssemble>(self.clone())
            .on::<LLMCall>(self.clone())
            .on::<SummarizeMemory>(self.clone())
            .on::<PersistMemory>(self.gate(store.clone()))
            .on::<PersistDecision>(self.gate(store.clone()))
            .on::<PersistEvidence>(self.gate(store.clone()))
            .on::<LinkDecisionEvidence>(self.gate(store.clone()))
    }

    /// `handler`, failing instead when the demo was told to fail its step type.
    pub fn gate<H>(&self, handler: H) -> Gated<H> {
        Gated { demo: self.clone(), handler }
    }

    /// The store a runtime with these demo handlers should use: `store`, whose session saves
    /// fail when the demo was told to fail `PersistSession` (the runtime saves the session
    /// itself, so that is where its failure shows: FailFast, nothing written).
    pub fn session_store<S: SessionStore>(&self, store: S) -> DemoSessionStore<S> {
        let fails = self.fail.contains(&StepType::PersistSession);
        let check: fn(&SessionUpdate) -> Result<(), SessionError> = if fails { fail_as_told } else { save_as_told };
        BeforeSave::new(store, check)
    }

    fn check(&self, ty: StepType) -> Result<(), HandlerError> {
        if self.fail.contains(&ty) {
            Err(HandlerError::new(format!("the demo {ty} handler was told to fail")))
        } else {
            Ok(())
        }
    }
}

/// A handler that fails when the demo was told to fail its step type; see [`Demo::gate`].
#[derive(Debug, Clone)]
pub struct Gated<H> {
    demo: Demo,
    handler: H,
}

impl<T: Step, H: Handler<T>> Handler<T> for Gated<H> {
    async fn call(&self, cx: &StepContext<'_>, payload: &T::Payload) -> Result<T::Result, HandlerError> {
        self.demo.check(T::TYPE)?;
        self.handler.call(cx, payload).await
    }

    fn tokens_ahead(&self, plan: &crate::contract::plan::ExecutionPlan, payload: &T::Payload) -> u64 {
        self.handler.tokens_ahead(plan, payload)
    }
}

/// A session store whose saves fail when the demo was told to fail `PersistSession`; see
/// [`Demo::session_store`].
pub type DemoSessionStore<S> = BeforeSave<S, fn(&SessionUpdate) -> Result<(), SessionError>>;

fn save_as_told(_: &SessionUpdate) -> Result<(), SessionError> {
    Ok(())
}

fn fail_as_told(_: &SessionUpdate) -> Result<(), SessionError> {
    let source = std::io::Error::other("the demo was told to fail PersistSession");
    Err(SessionError::Io { file: SESSION_FILE.into(), op: "write", source })
}

impl Handler<RepoScan> for Demo {
    async fn call(&self, cx: &StepContext<'_>, p: &RepoScanPayload) -> Result<RepoScanResult, HandlerError> {
        self.check(StepType::RepoScan)?;
        let dir = match &self.base {
            Some(base) => base.join(&p.repo_path),
            None => PathBuf::from(&p.repo_path),
        };
        let io_ms = cx.metadata().timeouts.as_ref().and_then(|t| t.io_ms).map(|ms| ms.get());
        let deadline = io_ms.map(|ms| (std::time::Instant::now() + std::time::Duration::from_millis(ms), ms));
        let (file_count, version_id) =
            scan(&dir, deadline).map_err(|e| HandlerError::with_source(format!("cannot scan {}", dir.display()), e))?;
        Ok(RepoScanResult { version_id, file_count })
    }
}

impl Handler<ContextSelect> for Demo {
    async fn call(&self, _: &StepContext<'_>, p: &ContextSelectPayload) -> Result<ContextSelectResult, HandlerError> {
        self.check(StepType::ContextSelect)?;
        let selected_context = p
            .sources
            .iter()
            .map(|s| crate::contract::value::AnyValue(serde_json::json!({ "source": s, "input": p.input })))
            .collect();
        Ok(ContextSelectResult { selected_context })
    }
}

/// Replaces each `{{name}}` with `vars.name` (a string as is, anything else as JSON); an unknown
/// name stays as written.
pub fn substitute(template: &str, vars: &serde_json::Map<String, serde_json::Value>) -> String {
    let mut out = String::with_capacity(template.len());
    let mut rest = template;
    while let Some(start) = rest.find("{{") {
        out.push_str(&rest[..start]);
        let after = &rest[start + 2..];
        match after.find("}}") {
            Some(end) => {
                let name = after[..end].trim();
                match vars.get(name) {
                    Some(serde_json::Value::String(s)) => out.push_str(s),
                    Some(v) => out.push_str(&v.to_string()),
                    None => out.push_str(&rest[start..start + 2 + end + 2]),
                }
                rest = &after[end + 2..];
            }
            None => {
                out.push_str(&rest[start..]);
                rest = "";
            }
        }
    }
    out.push_str(rest);
    out
}

/// With the `prompts` feature the demo renders real templates (`handlers::TemplatePrompts`);
/// without it, [`substitute`].
impl Handler<PromptAssemble> for Demo {
    async fn call(
        &self,
        cx: &StepContext<'_>,
        p: &PromptAssemblePayload,
    ) -> Result<PromptAssembleResult, HandlerError> {
        self.check(StepType::PromptAssemble)?;
        #[cfg(feature = "prompts")]
        let prompt = crate::handlers::TemplatePrompts::new().render(cx, &p.template, &p.vars)?;
        #[cfg(not(feature = "prompts"))]
        let prompt = {
            let _ = cx;
            substitute(&p.template, &p.vars)
        };
        Ok(PromptAssembleResult { prompt })
    }
}

/// The demo model's `gen_ai.provider.name` on its `chat demo` spans.
pub const DEMO_PROVIDER: &str = "planlock.demo";

impl Handler<LLMCall> for Demo {
    async fn call(&self, cx: &StepContext<'_>, p: &LlmCallPayload) -> Result<LlmCallResult, HandlerError> {
        self.check(StepType::LLMCall)?;
        // A model call like any other on the trace, answered at once and counting no tokens.
        let call = ModelCall::start(Operation::Chat, DEMO_PROVIDER, "demo");
        let response = format!("(demo model) You said: {}", p.prompt);
        if cx.records_content() {
            call.content(&[Message { role: "user", text: &p.prompt }], Some((&response, Some("stop"))));
        }
        call.answered(ModelAnswer { model: Some("demo"), finish_reasons: &["stop"], ..ModelAnswer::default() });
        Ok(LlmCallResult { response })
    }
}

impl Handler<SummarizeMemory> for Demo {
    async fn call(
        &self,
        _: &StepContext<'_>,
        p: &SummarizeMemoryPayload,
    ) -> Result<SummarizeMemoryResult, HandlerError> {
        self.check(StepType::SummarizeMemory)?;
        let summary: String = p.response.split(['.', '\n']).next().unwrap_or_default().chars().take(80).collect();
        let keywords: BTreeSet<String> = p
            .response
            .split(|c: char| !c.is_alphanumeric())
            .filter(|w| w.chars().count() > 3)
            .map(str::to_lowercase)
            .collect();
        Ok(SummarizeMemoryResult { summary, keywords: keywords.into_iter().take(5).collect() })
    }
}

/// A demo pre-validator: blocks every write of memories, decisions, evidence and links (the
/// FailFast steps but the session save) for a person to review, so the cycle pauses. The CLI
/// registers it as `demo-review`, version `1`, configuration `{}`; a plan uses it by naming
/// [`ReviewGate::signature`].
#[derive(Debug, Clone, Copy, Default)]
pub struct ReviewGate;

impl ReviewGate {
    /// The id the CLI registers it under.
    pub const ID: &'static str = "demo-review";
    /// Its version.
    pub const VERSION: &'static str = "1";

    /// The signature a plan names to use it (configuration `{}`).
    pub fn signature() -> ValidatorSignature {
        let config_hash = crate::hash::config_hash(&serde_json::json!({})).to_string();
        ValidatorSignature { id: ReviewGate::ID.into(), version: ReviewGate::VERSION.into(), config_hash }
    }
}

impl Validator for ReviewGate {
    fn before(&self, step: &StepView<'_>) -> Verdict {
        let write = step.step_type.failure_kind() == crate::contract::registry::FailureKind::FailFast;
        if write && step.step_type != StepType::PersistSession {
            Verdict::Block(format!("`{}` writes to storage; a person must review it first", step.id))
        } else {
            Verdict::Allow
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn substitutes_known_names_only() {
        let vars = serde_json::json!({"name": "Ada", "n": 3}).as_object().cloned().unwrap_or_default();
        assert_eq!(substitute("Hi {{name}}, {{ n }} {{missing}} {{", &vars), "Hi Ada, 3 {{missing}} {{");
    }
}
