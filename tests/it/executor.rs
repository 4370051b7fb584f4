//! The flat executor: order, passthrough, no wiring, failure semantics, halting, missing
//! handlers, deadlines, validators with intervention (resumed through the runtime, the one
//! resume path), async runtimes.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use planlock::Failure;
use planlock::executor::{Phase, TokenUsage, WarnedBy};
use planlock::runtime::{RunOutcome, Runtime};
use planlock::schema::*;
use planlock::session::{BlockPhase, FileSessionStore};
use planlock::steps::*;
use planlock::{
    ExecError, Executor, FailureKind, Handler, HandlerError, Handlers, Override, PositiveInt, Step, StepContext,
    StepFailure, StepResult, StepStatus, StepType, StepView, Timeouts, ValidPlan, Validator, Verdict,
};
use serde_json::{Value, json};

use crate::common;

const FULL: &str = include_str!("../fixtures/full_plan.json");

/// A result every probe can return.
trait Sample {
    fn sample(attempt: usize) -> Self;
}

/// `Type(attempt) => value;` rows: the result each probe returns on its nth attempt.
macro_rules! samples {
    ($($ty:ident($attempt:ident) => $value:expr;)*) => {
        $(impl Sample for $ty {
            fn sample($attempt: usize) -> Self {
                let _ = $attempt;
                $value
            }
        })*
    };
}

samples! {
    RepoScanResult(n) => RepoScanResult { version_id: "v1".into(), file_count: 3 };
    ContextSelectResult(n) => ContextSelectResult { selected_context: vec![] };
    RetrieveMemoryResult(n) => RetrieveMemoryResult { items: vec![] };
    RetrieveDecisionContextResult(n) => RetrieveDecisionContextResult { decisions: vec![], anchors: vec![] };
    PromptAssembleResult(n) => PromptAssembleResult { prompt: format!("assembled #{n}") };
    LlmCallResult(n) => LlmCallResult { response: format!("response #{n}") };
    SummarizeMemoryResult(n) => SummarizeMemoryResult { summary: "s".into(), keywords: vec![] };
    PersistMemoryResult(n) => PersistMemoryResult { id: "m-1".into() };
    PersistDecisionResult(n) => PersistDecisionResult { id: "d-1".into() };
    PersistEvidenceResult(n) => PersistEvidenceResult { id: "e-1".into() };
    LinkDecisionEvidenceResult(n) => LinkDecisionEvidenceResult { status: "linked".into() };
    PersistSessionResult(n) => PersistSessionResult { status: "saved".into() };
}

#[derive(Default)]
struct ProbeState {
    /// (step id, payload as JSON, idempotency key)
    calls: Vec<(String, Value, String)>,
    fail: Option<StepType>,
    slow: Option<(StepType, Duration)>,
}

/// A handler for every step type that records what it got.
#[derive(Clone, Default)]
struct Probe(Arc<Mutex<ProbeState>>);

impl Probe {
    fn calls(&self) -> Vec<(String, Value, String)> {
        self.0.lock().unwrap().calls.clone()
    }
    fn ids(&self) -> Vec<String> {
        self.calls().into_iter().map(|c| c.0).collect()
    }
    fn fail(self, ty: StepType) -> Self {
        self.0.lock().unwrap().fail = Some(ty);
        self
    }
    fn slow(self, ty: StepType, d: Duration) -> Self {
        self.0.lock().unwrap().slow = Some((ty, d));
        self
    }
}

impl<T: Step> Handler<T> for Probe
where
    T::Result: Sample,
    T::Payload: serde::Serialize,
{
    async fn call(&self, cx: &StepContext<'_>, payload: &T::Payload) -> Result<T::Result, HandlerError> {
        let (fail, slow, attempt) = {
            let mut s = self.0.lock().unwrap();
            s.calls.push((
                cx.step_id().to_owned(),
                serde_json::to_value(payload).unwrap(),
                cx.idempotency_key().to_string(),
            ));
            let attempt = s.calls.iter().filter(|c| c.0 == cx.step_id()).count();
            (s.fail == Some(T::TYPE), s.slow.filter(|(t, _)| *t == T::TYPE).map(|(_, d)| d), attempt)
        };
        if let Some(d) = slow {
            futures_timer_sleep(d).await;
        }
        if fail {
            return Err(HandlerError::new(format!("{} handler failed on purpose", T::TYPE)));
        }
        if T::TYPE == StepType::LLMCall {
            // As a model handler does: the nth attempt costs n tokens in, 1 out.
            cx.record_usage(TokenUsage { input: attempt as u64, output: 1 });
        }
        Ok(T::Result::sample(attempt))
    }
}

async fn futures_timer_sleep(d: Duration) {
    futures_timer::Delay::new(d).await;
}

/// The probe on the eleven step types a runtime takes from its caller (it saves the session itself).
macro_rules! step_handlers {
    ($probe:expr) => {{
        let p = $probe;
        Handlers::new()
            .on::<RepoScan>(p.clone())
            .on::<ContextSelect>(p.clone())
            .on::<RetrieveMemory>(p.clone())
            .on::<RetrieveDecisionContext>(p.clone())
            .on::<PromptAssemble>(p.clone())
            .on::<LLMCall>(p.clone())
            .on::<SummarizeMemory>(p.clone())
            .on::<PersistMemory>(p.clone())
            .on::<PersistDecision>(p.clone())
            .on::<PersistEvidence>(p.clone())
            .on::<LinkDecisionEvidence>(p)
    }};
}

/// The probe on all twelve step types.
macro_rules! all_handlers {
    ($probe:expr) => {{
        let p = $probe;
        step_handlers!(p.clone()).on::<PersistSession>(p)
    }};
}

fn plan_without_validators() -> ValidPlan {
    let mut v: Value = serde_json::from_str(FULL).unwrap();
    v["validators"] = json!([]);
    ValidPlan::from_value(&v).unwrap()
}

#[test]
fn steps_run_in_plan_order_with_their_payloads_untouched() {
    let plan = plan_without_validators();
    let probe = Probe::default();
    let exec = Executor::new(all_handlers!(probe.clone()));
    let done = exec.run_blocking(&plan).unwrap().completed().unwrap();
    let plan_ids: Vec<_> = plan.steps().iter().map(|s| s.id.clone()).collect();
    assert_eq!(probe.ids(), plan_ids);
    // Bit-identical payloads: no rewriting, no wiring of earlier results into later payloads.
    for (call, step) in probe.calls().iter().zip(plan.steps()) {
        assert_eq!(call.1, serde_json::to_value(&step.payload).unwrap(), "payload of {}", step.id);
    }
    let llm_payload = &probe.calls()[5].1;
    assert_eq!(llm_payload["prompt"], "Answer the question", "the assembled prompt is not wired in");
    assert_eq!(done.ledger.len(), 12);
    assert_eq!(done.ledger.get::<PromptAssemble>().unwrap().prompt, "assembled #1");
    assert_eq!(done.report.steps.len(), 12);
    assert!(done.report.steps.iter().all(|s| s.status == planlock::StepStatus::Completed));
}

#[test]
fn handlers_read_earlier_results_from_the_ledger() {
    let plan = plan_without_validators();
    let seen = Arc::new(Mutex::new(None));
    let seen2 = seen.clone();
    let probe = Probe::default();
    let handlers = all_handlers!(probe).on::<LLMCall>(planlock::handler_fn(move |cx, _: &LlmCallPayload| {
        *seen2.lock().unwrap() = cx.ledger().get::<PromptAssemble>().map(|r| r.prompt.clone());
        assert!(cx.ledger().get::<SummarizeMemory>().is_none(), "only earlier results are visible");
        assert!(matches!(cx.result_by_id("prompt"), Some(StepResult::PromptAssemble(_))));
        Ok(LlmCallResult { response: "ok".into() })
    }));
    Executor::new(handlers).run_blocking(&plan).unwrap().completed().unwrap();
    assert_eq!(seen.lock().unwrap().as_deref(), Some("assembled #1"));
}

#[test]
fn each_step_type_fails_with_its_registry_kind() {
    let plan = plan_without_validators();
    for ty in StepType::ALL {
        let probe = Probe::default().fail(ty);
        let exec = Executor::new(all_handlers!(probe.clone()));
        let err = exec.run_blocking(&plan).unwrap_err();
        let ExecError::StepFailed { step_type, kind, step_id, cause: StepFailure::Handler(_), .. } = &err else {
            panic!("{ty}: {err}")
        };
        // The failure carries what the cycle did: the steps before, completed, then this one.
        let report = err.report().expect("a step failure carries the cycle's report");
        let statuses: Vec<_> = report.steps.iter().map(|s| (s.index, s.status)).collect();
        let mut expected: Vec<_> = (0..ty.position()).map(|i| (i, StepStatus::Completed)).collect();
        expected.push((ty.position(), StepStatus::Failed));
        assert_eq!(statuses, expected, "{ty}");
        assert_eq!(report.status_of(ty.position()), Some(StepStatus::Failed));
        assert_eq!(*step_type, ty);
        assert_eq!(*kind, ty.failure_kind(), "{ty}");
        assert_eq!(err.kind(), ty.failure_kind());
        assert_eq!(step_id, &plan.steps()[ty.position()].id);
        // Nothing after the failed step ran.
        assert_eq!(probe.calls().len(), ty.position() + 1);
        match ty.failure_kind() {
            FailureKind::CycleFail => {
                assert!(exec.halted().is_none());
                // The runtime stays usable: the next cycle runs (and fails the same way).
                assert!(matches!(exec.run_blocking(&plan), Err(ExecError::StepFailed { .. })));
            }
            FailureKind::FailFast => {
                assert!(exec.halted().is_some(), "{ty} halts the runtime");
                let again = exec.run_blocking(&plan).unwrap_err();
                let ExecError::Halted { original } = &again else { panic!("{again}") };
                assert_eq!(original.to_string(), err.to_string());
                assert_eq!(again.kind(), FailureKind::FailFast);
                assert_eq!(probe.calls().len(), ty.position() + 1, "a halted runtime runs nothing");
            }
        }
    }
}

#[test]
fn a_missing_handler_is_refused_before_the_first_step() {
    let plan = plan_without_validators();
    let probe = Probe::default();
    let handlers = Handlers::new()
        .on::<RepoScan>(probe.clone())
        .on::<ContextSelect>(probe.clone())
        .on::<PromptAssemble>(probe.clone())
        .on::<LLMCall>(probe.clone())
        .on::<PersistSession>(probe.clone());
    let err = Executor::new(handlers).run_blocking(&plan).unwrap_err();
    assert!(matches!(&err, ExecError::MissingHandler { step_type: StepType::RetrieveMemory, .. }), "{err}");
    assert_eq!(err.code(), "missing-handler");
    assert!(probe.calls().is_empty(), "no step ran");
}

fn timed_plan(llm_ms: Option<u64>, io_ms: Option<u64>) -> ValidPlan {
    let mut plan = plan_without_validators().into_plan();
    plan.metadata.timeouts =
        Some(Timeouts { llm_ms: llm_ms.and_then(PositiveInt::new), io_ms: io_ms.and_then(PositiveInt::new) });
    ValidPlan::from_plan(plan).unwrap()
}

#[test]
fn a_late_step_fails_at_its_deadline_with_its_own_kind() {
    for (ty, plan, kind) in [
        (StepType::LLMCall, timed_plan(Some(50), None), FailureKind::CycleFail),
        (StepType::PersistMemory, timed_plan(None, Some(50)), FailureKind::FailFast),
    ] {
        let probe = Probe::default().slow(ty, Duration::from_secs(3));
        let exec = Executor::new(all_handlers!(probe));
        let started = Instant::now();
        let err = exec.run_blocking(&plan).unwrap_err();
        let elapsed = started.elapsed();
        assert!(elapsed < Duration::from_millis(1500), "{ty} failed after {elapsed:?}, deadline 50 ms");
        assert!(elapsed >= Duration::from_millis(50));
        let ExecError::StepFailed { kind: k, cause: StepFailure::TimedOut { limit_ms: 50, .. }, .. } = &err else {
            panic!("{err}")
        };
        assert_eq!(*k, kind);
        assert_eq!(err.code(), "step-timed-out");
    }
}

#[test]
fn no_deadline_without_a_metadata_value() {
    // ioMs bounds I/O steps only; LLMCall has no llmMs here, and PromptAssemble is never bounded.
    let plan = timed_plan(None, Some(20));
    for ty in [StepType::LLMCall, StepType::PromptAssemble] {
        let probe = Probe::default().slow(ty, Duration::from_millis(120));
        let done = Executor::new(all_handlers!(probe)).run_blocking(&plan).unwrap();
        assert!(done.completed().is_some(), "{ty} has no deadline");
    }
}

#[test]
fn a_result_over_top_k_breaks_the_contract() {
    let plan = plan_without_validators();
    let item = MemoryItem { id: "i".into(), summary: "s".into(), timestamp: "t".into() };
    let handlers = all_handlers!(Probe::default()).on::<RetrieveMemory>(planlock::handler_fn(move |_, _| {
        Ok(RetrieveMemoryResult { items: vec![item.clone(); 6] })
    }));
    let err = Executor::new(handlers).run_blocking(&plan).unwrap_err();
    assert_eq!(err.code(), "result-contract");
    assert_eq!(err.kind(), FailureKind::CycleFail);
    assert!(err.to_string().contains("at most topK = 5"), "{err}");
}

#[test]
fn an_empty_persisted_id_breaks_the_contract_and_halts() {
    let plan = plan_without_validators();
    let handlers = all_handlers!(Probe::default())
        .on::<PersistMemory>(planlock::handler_fn(|_, _| Ok(PersistMemoryResult { id: String::new() })));
    let exec = Executor::new(handlers);
    let err = exec.run_blocking(&plan).unwrap_err();
    assert_eq!(err.code(), "result-contract");
    assert_eq!(err.kind(), FailureKind::FailFast);
    assert!(exec.halted().is_some());
}

/// A validator whose verdicts are scripted per step type and phase, counting its calls.
#[derive(Clone, Default)]
struct Scripted {
    before: Arc<Mutex<Vec<(StepType, Verdict)>>>,
    after: Arc<Mutex<Vec<(StepType, Verdict)>>>,
    calls: Arc<Mutex<Vec<(StepType, Phase)>>>,
}

impl Scripted {
    fn verdict(list: &Mutex<Vec<(StepType, Verdict)>>, ty: StepType) -> Verdict {
        let mut list = list.lock().unwrap();
        match list.iter().position(|(t, _)| *t == ty) {
            Some(i) => list.remove(i).1,
            None => Verdict::Allow,
        }
    }
}

impl Validator for Scripted {
    fn before(&self, step: &StepView<'_>) -> Verdict {
        self.calls.lock().unwrap().push((step.step_type, Phase::Before));
        Scripted::verdict(&self.before, step.step_type)
    }
    fn after(&self, step: &StepView<'_>, _: &StepResult) -> Verdict {
        self.calls.lock().unwrap().push((step.step_type, Phase::After));
        Scripted::verdict(&self.after, step.step_type)
    }
}

fn guarded(
    pre: &Scripted,
    post: &Scripted,
    probe: &Probe,
) -> (Executor<impl planlock::handler::HandlerSet>, ValidPlan) {
    let exec = Executor::new(all_handlers!(probe.clone()))
        .with_validator("pre-guard", "1", &json!({"strict": true}), pre.clone())
        .with_validator("post-guard", "3", &json!({"limit": 2}), post.clone());
    let mut plan = plan_without_validators().into_plan();
    plan.validators = vec![exec.validator_signature("pre-guard").unwrap()];
    plan.post_validators = vec![exec.validator_signature("post-guard").unwrap()];
    (exec, ValidPlan::from_plan(plan).unwrap())
}

#[test]
fn warnings_are_recorded_and_the_cycle_goes_on() {
    let (pre, post, probe) = (Scripted::default(), Scripted::default(), Probe::default());
    pre.before.lock().unwrap().push((StepType::ContextSelect, Verdict::Warn("odd input".into())));
    post.after.lock().unwrap().push((StepType::LLMCall, Verdict::Warn("long answer".into())));
    let (exec, plan) = guarded(&pre, &post, &probe);
    let done = exec.run_blocking(&plan).unwrap().completed().unwrap();
    let warnings: Vec<_> = done
        .report
        .warnings()
        .map(|(i, w)| match &w.by {
            WarnedBy::Validator { validator_id, phase } => (i, validator_id.as_str(), *phase, w.message.as_str()),
            WarnedBy::Handler => panic!("no handler warns here"),
        })
        .collect();
    assert_eq!(
        warnings,
        [(1, "pre-guard", Phase::Before, "odd input"), (5, "post-guard", Phase::After, "long answer")]
    );
    assert_eq!(probe.calls().len(), 12);
    // Every step saw the pre-validator before it and the post-validator after it.
    assert_eq!(pre.calls.lock().unwrap().len(), 12);
    assert_eq!(post.calls.lock().unwrap().len(), 12);
}

/// `guarded`'s handlers (but `PersistSession`, which the runtime brings), validators and plan
/// under a runtime on a fresh policy and session root: the one way a paused cycle resumes.
fn guarded_runtime(
    pre: &Scripted,
    post: &Scripted,
    probe: &Probe,
    dirs: &(tempfile::TempDir, tempfile::TempDir),
) -> Runtime<FileSessionStore, impl planlock::handler::HandlerSet> {
    let (_, plan) = guarded(pre, post, probe);
    common::policy(dirs.0.path(), "friendly");
    crate::common::runtime_on(dirs.0.path(), dirs.1.path(), plan)
        .handlers(step_handlers!(probe.clone()))
        .validator("pre-guard", "1", &json!({"strict": true}), pre.clone())
        .validator("post-guard", "3", &json!({"limit": 2}), post.clone())
        .boot_blocking()
        .unwrap()
}

fn roots() -> (tempfile::TempDir, tempfile::TempDir) {
    (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap())
}

#[test]
fn block_pauses_and_resume_reruns_the_step_from_its_start() {
    let (pre, post, probe) = (Scripted::default(), Scripted::default(), Probe::default());
    post.after.lock().unwrap().push((StepType::LLMCall, Verdict::Block("needs review".into())));
    let dirs = roots();
    let mut runtime = guarded_runtime(&pre, &post, &probe, &dirs);
    let RunOutcome::Paused { record, .. } = runtime.run_cycle_blocking().unwrap() else { panic!("not paused") };
    assert_eq!(
        (record.step_id.as_str(), record.step_type, record.validator.id.as_str(), record.phase),
        ("llm", StepType::LLMCall, "post-guard", BlockPhase::Post)
    );
    assert_eq!(record.reason, "needs review");
    // The blocked attempt's result is not kept; earlier results are.
    let kept: Vec<_> = record.completed.iter().map(|c| c.id.as_str()).collect();
    assert_eq!(kept, ["scan", "ctx", "memory", "decisions", "prompt"]);
    let key_before = probe.calls()[5].2.clone();
    pre.calls.lock().unwrap().clear();
    post.calls.lock().unwrap().clear();

    // Resume: the step runs again from its beginning (pre-validators, handler, post-validators).
    let RunOutcome::Completed(done) = runtime.resume_blocking(None).unwrap() else { panic!("not completed") };
    let calls = probe.ids();
    assert_eq!(calls.iter().filter(|id| *id == "llm").count(), 2, "the handler ran again");
    assert_eq!(calls.iter().filter(|id| *id == "prompt").count(), 1, "earlier steps did not");
    assert_eq!(pre.calls.lock().unwrap().first(), Some(&(StepType::LLMCall, Phase::Before)));
    assert_eq!(post.calls.lock().unwrap().first(), Some(&(StepType::LLMCall, Phase::After)));
    assert_eq!(done.ledger.get::<LLMCall>().unwrap().response, "response #2", "a fresh result, not the blocked one");
    assert_eq!(done.report.interventions.len(), 1, "the Block that paused the cycle");
    // The resumed cycle's report starts at the blocked step, with the tokens of this attempt.
    let llm: Vec<_> = done.report.steps.iter().filter(|s| s.step_type == StepType::LLMCall).collect();
    assert_eq!(
        llm.iter().map(|s| (s.status, s.usage)).collect::<Vec<_>>(),
        [(StepStatus::Completed, Some(TokenUsage { input: 2, output: 1 }))]
    );
    assert_eq!(probe.calls()[6].2, key_before, "the idempotency key is stable across the re-run");
    assert_ne!(probe.calls()[4].2, key_before, "and differs between steps");
}

#[test]
fn an_override_lets_one_block_pass_once_and_is_recorded() {
    let (pre, post, probe) = (Scripted::default(), Scripted::default(), Probe::default());
    pre.before.lock().unwrap().push((StepType::PersistMemory, Verdict::Block("pii".into())));
    pre.before.lock().unwrap().push((StepType::PersistMemory, Verdict::Block("pii again".into())));
    pre.before.lock().unwrap().push((StepType::PersistMemory, Verdict::Block("pii a third time".into())));
    pre.before.lock().unwrap().push((StepType::PersistMemory, Verdict::Block("pii a fourth time".into())));
    let dirs = roots();
    let mut runtime = guarded_runtime(&pre, &post, &probe, &dirs);
    let RunOutcome::Paused { record, .. } = runtime.run_cycle_blocking().unwrap() else { panic!() };
    assert_eq!(record.phase, BlockPhase::Pre);
    assert!(!probe.ids().contains(&"remember".to_owned()), "a pre-validator block stops the handler");
    // Without an override the same validator blocks again.
    let RunOutcome::Paused { record, .. } = runtime.resume_blocking(None).unwrap() else { panic!() };
    assert_eq!(record.reason, "pii again");
    // An override must name the pending validator and step; any other is refused, and nothing runs.
    for wrong in
        [Override::new("post-guard", "remember", "wrong validator"), Override::new("pre-guard", "llm", "wrong step")]
    {
        assert_eq!(runtime.resume_blocking(Some(wrong)).unwrap_err().code(), "override-refused");
    }
    let over = Override::new("pre-guard", "remember", "reviewed by the on-call engineer");
    let RunOutcome::Completed(done) = runtime.resume_blocking(Some(over)).unwrap() else { panic!() };
    assert_eq!(done.report.interventions.len(), 1, "the Block that paused the cycle");
    assert_eq!(done.report.overrides.len(), 1);
    let o = &done.report.overrides[0].approved;
    assert_eq!(
        (o.step_id.as_str(), o.validator_id.as_str(), o.justification.as_str()),
        ("remember", "pre-guard", "reviewed by the on-call engineer")
    );
    assert_eq!(done.report.overrides[0].reason, "pii a third time");
    assert_eq!(probe.ids().iter().filter(|id| *id == "remember").count(), 1);
}

#[test]
fn unknown_or_mismatched_validators_are_refused_before_step_one() {
    let probe = Probe::default();
    let make = || {
        Executor::new(all_handlers!(probe.clone())).with_validator(
            "pii-guard",
            "2",
            &json!({"mask": true}),
            Scripted::default(),
        )
    };
    let sig = make().validator_signature("pii-guard").unwrap();
    assert_eq!(sig.config_hash, planlock::config_hash(&json!({"mask": true})).to_string());
    type Change = Box<dyn Fn(&mut planlock::ValidatorSignature)>;
    let cases: Vec<(Change, &str)> = vec![
        (Box::new(|s| s.id = "other".into()), "unknown-validator"),
        (Box::new(|s| s.version = "3".into()), "validator-mismatch"),
        (Box::new(|s| s.config_hash = "0".repeat(64)), "validator-mismatch"),
    ];
    for (change, code) in cases {
        let exec = make();
        let mut plan = plan_without_validators().into_plan();
        let mut s = sig.clone();
        change(&mut s);
        plan.post_validators = vec![s];
        let plan = ValidPlan::from_plan(plan).unwrap();
        let err = exec.run_blocking(&plan).unwrap_err();
        assert_eq!(err.code(), code, "{err}");
        assert_eq!(err.kind(), FailureKind::FailFast);
        assert!(probe.calls().is_empty(), "no step ran");
    }
}

#[test]
fn runs_under_tokio_on_any_worker_thread() {
    fn assert_send<T: Send>(t: T) -> T {
        t
    }
    let plan = plan_without_validators();
    let probe = Probe::default().slow(StepType::RepoScan, Duration::from_millis(20));
    let exec = Arc::new(Executor::new(all_handlers!(probe.clone())).record_content(true));
    let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
    let outcome = rt.block_on(async {
        let (exec, plan) = (exec.clone(), plan.clone());
        // `spawn` requires the cycle's future to be Send.
        tokio::spawn(assert_send(async move { exec.run(&plan).await })).await.unwrap()
    });
    assert!(outcome.unwrap().completed().is_some());
    assert_eq!(probe.calls().len(), 12);
}

#[test]
fn timers_work_under_tokio_current_thread_too() {
    let plan = timed_plan(Some(30), None);
    let probe = Probe::default().slow(StepType::LLMCall, Duration::from_secs(2));
    let exec = Executor::new(all_handlers!(probe));
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    let err = rt.block_on(exec.run(&plan)).unwrap_err();
    assert_eq!(err.code(), "step-timed-out");
}

mod spans {
    use super::*;
    use tracing::field::{Field, Visit};
    use tracing::span::{Attributes, Id, Record};
    use tracing_subscriber::layer::{Context, Layer, SubscriberExt};

    type SpanLog = Vec<(String, Vec<(String, String)>)>;

    #[derive(Clone, Default)]
    struct Capture(Arc<Mutex<SpanLog>>);

    struct Fields<'a>(&'a mut Vec<(String, String)>);
    impl Visit for Fields<'_> {
        fn record_debug(&mut self, field: &Field, value: &dyn std::fmt::Debug) {
            self.0.push((field.name().to_owned(), format!("{value:?}")));
        }
    }

    impl<S: tracing::Subscriber + for<'a> tracing_subscriber::registry::LookupSpan<'a>> Layer<S> for Capture {
        fn on_new_span(&self, attrs: &Attributes<'_>, _: &Id, _: Context<'_, S>) {
            let mut fields = Vec::new();
            attrs.record(&mut Fields(&mut fields));
            self.0.lock().unwrap().push((attrs.metadata().name().to_owned(), fields));
        }
        fn on_record(&self, _: &Id, values: &Record<'_>, _: Context<'_, S>) {
            let mut fields = Vec::new();
            values.record(&mut Fields(&mut fields));
            if let Some(last) = self.0.lock().unwrap().last_mut() {
                last.1.extend(fields);
            }
        }
    }

    fn spans(record_content: bool) -> SpanLog {
        let capture = Capture::default();
        let subscriber = tracing_subscriber::registry().with(capture.clone());
        let plan = plan_without_validators();
        tracing::subscriber::with_default(subscriber, || {
            let exec = Executor::new(all_handlers!(Probe::default())).record_content(record_content);
            exec.run_blocking(&plan).unwrap().completed().unwrap();
        });
        capture.0.lock().unwrap().clone()
    }

    #[test]
    fn a_span_per_cycle_and_per_step_named_from_the_telemetry_table() {
        use planlock::telemetry::names;
        let spans = spans(false);
        let names_: Vec<_> = spans.iter().map(|s| s.0.as_str()).collect();
        assert_eq!(names_[0], "invoke_workflow");
        assert_eq!(names_.len(), 13);
        assert!(names_[1..].iter().all(|n| *n == "step"), "{names_:?}");
        let cycle = &spans[0].1;
        assert!(cycle.contains(&(names::GEN_AI_OPERATION_NAME.into(), "\"invoke_workflow\"".into())), "{cycle:?}");
        assert!(cycle.contains(&(names::GEN_AI_WORKFLOW_NAME.into(), "\"chat\"".into())), "{cycle:?}");
        let llm = &spans[6].1;
        // Exported under the step type's name (`otel.name`).
        assert!(llm.contains(&("otel.name".into(), "\"LLMCall\"".into())), "{llm:?}");
        assert!(llm.contains(&(names::STEP_ID.into(), "llm".into())), "{llm:?}");
        assert!(llm.contains(&(names::STEP_TYPE.into(), "\"LLMCall\"".into())), "{llm:?}");
        assert!(llm.contains(&(names::STEP_INDEX.into(), "5".into())), "{llm:?}");
        assert!(llm.contains(&(names::OUTCOME.into(), "\"completed\"".into())), "{llm:?}");
        assert!(!llm.iter().any(|(k, _)| k == names::PAYLOAD || k == names::RESULT), "no content by default");
    }

    #[test]
    fn content_is_recorded_only_on_opt_in() {
        let spans = spans(true);
        let llm = &spans[6].1;
        let (payload, result) = (planlock::telemetry::names::PAYLOAD, planlock::telemetry::names::RESULT);
        let text = llm.iter().find(|(k, _)| k == payload).map(|(_, v)| v.as_str()).unwrap_or_default();
        assert!(text.contains("Answer the question"), "{llm:?}");
        assert!(llm.iter().any(|(k, v)| k == result && v.contains("response #1")), "{llm:?}");
    }
}

#[test]
fn async_closures_are_handlers_and_keep_the_cycle_send() {
    use planlock::handler::{HandlerInput, async_handler_fn};
    let plan = plan_without_validators();
    let probe = Probe::default();
    let model = async_handler_fn(|input: HandlerInput<LLMCall>| async move {
        tokio::time::sleep(Duration::from_millis(5)).await;
        let prompt = input.ledger.get::<PromptAssemble>().map(|r| r.prompt.clone()).unwrap_or_default();
        Ok(LlmCallResult { response: format!("async {prompt} #{}", input.cycle) })
    });
    let exec = Arc::new(Executor::new(all_handlers!(probe).on::<LLMCall>(model)));
    let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
    let done = rt
        .block_on(async {
            let (exec, plan) = (exec.clone(), plan.clone());
            tokio::spawn(async move { exec.run(&plan).await }).await.unwrap()
        })
        .unwrap()
        .completed()
        .unwrap();
    assert!(done.ledger.get::<LLMCall>().unwrap().response.starts_with("async "), "{:?}", done.ledger);
    assert!(done.ledger.get::<LLMCall>().unwrap().response.ends_with("#1"));
}
