//! **Demo handlers** for every step but `PersistSession` (which the
//! [`Runtime`](crate::runtime::Runtime) handles itself): deterministic, offline, for the CLI, the
//! examples and tests. They show the shape of real handlers; they are not meant for
//! production.
//!
//! Layer 7, the top of the library: imports whatever it shows.
//!
//! - `RepoScan` really scans the directory: the file count, and a SHA-256 over every file's
//!   relative path and content as `versionId`.
//! - Memory and decisions live in an in-memory [`DemoStore`].
//! - `PromptAssemble` renders the template with minijinja (feature `prompts`, on by default;
//!   [`substitute`] without it); `LLMCall` echoes deterministically.
//! - Any step type can be made to fail, to show the failure semantics.

use std::collections::BTreeSet;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use crate::contract::plan::ValidatorSignature;
use crate::contract::registry::StepType;
use crate::contract::schema::*;
use crate::contract::steps::*;
use crate::exec::handler::{Handler, HandlerError, Handlers, StepContext};
use crate::exec::validator::{StepView, Validator, Verdict};
use crate::session::{BeforeSave, SESSION_FILE, SessionError, SessionStore, SessionUpdate};
use crate::store::{DecisionContextProviderPort, DecisionWritePort, MemoryRepositoryPort, StoreHandlers};

mod scan;
pub use scan::MAX_SCAN_FILES;
use scan::scan;

/// Memory, decisions, evidence and links, in memory.
#[derive(Debug, Default)]
pub struct DemoStore {
    /// Stored memories, oldest first.
    pub memories: Vec<MemoryItem>,
    /// Stored decisions.
    pub decisions: Vec<Decision>,
    /// Stored evidence.
    pub evidence: Vec<Evidence>,
    /// Decision–evidence links.
    pub anchors: Vec<Anchor>,
}

/// The demo handlers; clone it to register it for every step type.
#[derive(Debug, Clone, Default)]
pub struct Demo {
    store: Arc<Mutex<DemoStore>>,
    fail: Arc<BTreeSet<StepType>>,
    base: Option<PathBuf>,
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

    /// The store, for inspection.
    pub fn store(&self) -> Arc<Mutex<DemoStore>> {
        self.store.clone()
    }

    /// Every demo handler, registered for its step type (all but `PersistSession`, the runtime's).
    pub fn handlers(&self) -> Handlers<impl crate::exec::handler::HandlerSet + use<>> {
        Handlers::new()
            .on::<RepoScan>(self.clone())
            .on::<ContextSelect>(self.clone())
            .on::<RetrieveMemory>(self.clone())
            .on::<RetrieveDecisionContext>(self.clone())
            .on::<PromptAssemble>(self.clone())
            .on::<LLMCall>(self.clone())
            .on::<SummarizeMemory>(self.clone())
            .on::<PersistMemory>(self.clone())
            .on::<PersistDecision>(self.clone())
            .on::<PersistEvidence>(self.clone())
            .on::<LinkDecisionEvidence>(self.clone())
    }

    /// The demo handlers for the steps that need a model or a file system (`RepoScan`,
    /// `ContextSelect`, `PromptAssemble`, `LLMCall`, `SummarizeMemory`), and the real storage
    /// handlers over `store` for the Retrieve and Persist steps; [`failing`](Demo::failing)
    /// covers them all.
    pub fn with_store<P>(&self, store: &StoreHandlers<P>) -> Handlers<impl crate::exec::handler::HandlerSet + use<P>>
    where
        P: MemoryRepositoryPort + DecisionContextProviderPort + DecisionWritePort,
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

    fn in_store<T>(&self, f: impl FnOnce(&mut DemoStore) -> T) -> Result<T, HandlerError> {
        let mut store = self.store.lock().map_err(|_| HandlerError::new("the demo store lock is poisoned"))?;
        Ok(f(&mut store))
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

/// Stores `item`, replacing any with the same id, so a re-run of a write step is harmless.
fn upsert<T>(items: &mut Vec<T>, item: T, id: impl Fn(&T) -> &String) {
    let key = id(&item).clone();
    items.retain(|old| *id(old) != key);
    items.push(item);
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

impl Handler<RetrieveMemory> for Demo {
    async fn call(&self, _: &StepContext<'_>, p: &RetrieveMemoryPayload) -> Result<RetrieveMemoryResult, HandlerError> {
        self.check(StepType::RetrieveMemory)?;
        // topK comes from the plan, never from a default (D-007).
        let k = usize::try_from(p.top_k.get()).unwrap_or(usize::MAX);
        let words: BTreeSet<String> = p.input.split_whitespace().map(str::to_lowercase).collect();
        let items = self.in_store(|s| {
            s.memories
                .iter()
                .rev()
                .filter(|m| words.is_empty() || m.summary.split_whitespace().any(|w| words.contains(&w.to_lowercase())))
                .take(k)
                .cloned()
                .collect()
        })?;
        Ok(RetrieveMemoryResult { items })
    }
}

impl Handler<RetrieveDecisionContext> for Demo {
    async fn call(
        &self,
        _: &StepContext<'_>,
        p: &RetrieveDecisionContextPayload,
    ) -> Result<RetrieveDecisionContextResult, HandlerError> {
        self.check(StepType::RetrieveDecisionContext)?;
        let domain = p.current_domain.as_ref().map(|d| format!("domain:{d}"));
        self.in_store(|s| {
            let decisions: Vec<Decision> = s
                .decisions
                .iter()
                .filter(|d| d.is_active)
                .filter(|d| d.scope == "global" || d.scope == "axis" || Some(&d.scope) == domain.as_ref())
                .cloned()
                .collect();
            let anchors =
                s.anchors.iter().filter(|a| decisions.iter().any(|d| d.id == a.decision_id)).cloned().collect();
            RetrieveDecisionContextResult { decisions, anchors }
        })
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

impl Handler<LLMCall> for Demo {
    async fn call(&self, _: &StepContext<'_>, p: &LlmCallPayload) -> Result<LlmCallResult, HandlerError> {
        self.check(StepType::LLMCall)?;
        Ok(LlmCallResult { response: format!("(demo model) You said: {}", p.prompt) })
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

impl Handler<PersistMemory> for Demo {
    async fn call(&self, cx: &StepContext<'_>, p: &PersistMemoryPayload) -> Result<PersistMemoryResult, HandlerError> {
        self.check(StepType::PersistMemory)?;
        // The idempotency key makes a re-run of this step overwrite, not duplicate.
        let id = format!("mem-{}", &cx.idempotency_key().to_string()[..16]);
        let item = MemoryItem {
            id: id.clone(),
            summary: p.summary.clone(),
            timestamp: crate::session::Timestamp::now().to_string(),
        };
        self.in_store(|s| upsert(&mut s.memories, item, |m| &m.id))?;
        Ok(PersistMemoryResult { id })
    }
}

impl Handler<PersistDecision> for Demo {
    async fn call(
        &self,
        _: &StepContext<'_>,
        p: &PersistDecisionPayload,
    ) -> Result<PersistDecisionResult, HandlerError> {
        self.check(StepType::PersistDecision)?;
        let d = p.decision.clone();
        let id = d.id.clone();
        self.in_store(|s| {
            for old in s.decisions.iter_mut().filter(|o| o.root_id == d.root_id) {
                old.is_active = false;
            }
            upsert(&mut s.decisions, d, |o| &o.id);
        })?;
        Ok(PersistDecisionResult { id })
    }
}

impl Handler<PersistEvidence> for Demo {
    async fn call(
        &self,
        _: &StepContext<'_>,
        p: &PersistEvidencePayload,
    ) -> Result<PersistEvidenceResult, HandlerError> {
        self.check(StepType::PersistEvidence)?;
        let e = p.evidence.clone();
        let id = e.id.clone();
        self.in_store(|s| upsert(&mut s.evidence, e, |o| &o.id))?;
        Ok(PersistEvidenceResult { id })
    }
}

impl Handler<LinkDecisionEvidence> for Demo {
    async fn call(
        &self,
        _: &StepContext<'_>,
        p: &LinkDecisionEvidencePayload,
    ) -> Result<LinkDecisionEvidenceResult, HandlerError> {
        self.check(StepType::LinkDecisionEvidence)?;
        let anchor = Anchor { decision_id: p.decision_id.clone(), evidence_id: p.evidence_id.clone() };
        let status = self.in_store(|s| {
            if s.anchors.contains(&anchor) {
                "already-linked"
            } else {
                s.anchors.push(anchor);
                "linked"
            }
        })?;
        Ok(LinkDecisionEvidenceResult { status: status.into() })
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
    fn a_rerun_write_replaces_instead_of_duplicating() {
        let mut items = vec![Evidence { id: "e".into(), summary: "old".into(), source: "s".into() }];
        upsert(&mut items, Evidence { id: "e".into(), summary: "new".into(), source: "s".into() }, |e| &e.id);
        upsert(&mut items, Evidence { id: "f".into(), summary: "other".into(), source: "s".into() }, |e| &e.id);
        let summaries: Vec<_> = items.iter().map(|e| e.summary.as_str()).collect();
        assert_eq!(summaries, ["new", "other"]);
    }

    #[test]
    fn substitutes_known_names_only() {
        let vars = serde_json::json!({"name": "Ada", "n": 3}).as_object().cloned().unwrap_or_default();
        assert_eq!(substitute("Hi {{name}}, {{ n }} {{missing}} {{", &vars), "Hi Ada, 3 {{missing}} {{");
    }
}
