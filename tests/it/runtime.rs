//! The runtime owns a session's cycles. Each test is one way a caller could once step around a
//! rule (halts, hashes, forged sessions, shared stores, overrides, saves after a pause, cycle
//! numbers, deadlines, panics, pauses lost on restart) and shows it no longer can.

use std::sync::atomic::AtomicUsize;
use std::sync::atomic::Ordering::SeqCst;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use planlock::demo::{Demo, ReviewGate};
use planlock::handler::Boxed;
use planlock::runtime::{RunOutcome, Runtime, RuntimeError, Status};
use planlock::schema::*;
use planlock::session::{
    CycleGuard, EndOfCycle, FileSessionStore, INTERVENTION_FILE, Leaves, SESSION_FILE, SessionState, SessionStore,
    StoreFuture,
};
use planlock::steps::*;
use planlock::{
    Failure, FailureKind, Handler, HandlerError, Override, StepContext, StepResult, StepType, StepView, ValidPlan,
    Validator, Verdict,
};
use serde_json::json;

use crate::common;
use common::{Dirs, dirs, plan_with, policy};

type DemoRuntime = Runtime<FileSessionStore, Boxed>;

/// The demo plan with the review gate, and only the writes in `writes` (besides PersistSession).
fn reviewed_plan(writes: &[&str]) -> ValidPlan {
    let writes: Vec<String> = writes.iter().map(|w| (*w).to_owned()).collect();
    plan_with(move |v| {
        v["validators"] = json!([ReviewGate::signature()]);
        let all = ["PersistMemory", "PersistDecision", "PersistEvidence", "LinkDecisionEvidence"];
        v["steps"].as_array_mut().unwrap().retain(|s| {
            let ty = s["type"].as_str().unwrap();
            !all.contains(&ty) || writes.iter().any(|w| w == ty)
        });
    })
}

fn boot_with(d: &Dirs, plan: ValidPlan, demo: &Demo) -> Result<DemoRuntime, planlock::runtime::BootError> {
    crate::common::demo_runtime(d, plan, demo).boot_blocking()
}

fn boot(d: &Dirs, plan: ValidPlan) -> DemoRuntime {
    boot_with(d, plan, &Demo::new()).unwrap()
}

/// The signature of validator `id`, version 1, configuration `{}`.
fn signature(id: &str) -> planlock::ValidatorSignature {
    let config_hash = planlock::config_hash(&json!({})).to_string();
    planlock::ValidatorSignature { id: id.into(), version: "1".into(), config_hash }
}

fn file(d: &Dirs, name: &str) -> Option<Vec<u8>> {
    std::fs::read(d.root.path().join(name)).ok()
}

#[test]
fn fail_fast_halts_the_runtime_not_just_one_cycle() {
    let d = dirs();
    let mut runtime = boot_with(&d, plan_with(|_| {}), &Demo::new().failing([StepType::PersistMemory])).unwrap();
    let err = runtime.run_cycle_blocking().unwrap_err();
    assert_eq!(err.kind(), FailureKind::FailFast);
    assert_eq!(runtime.status(), Status::Halted);
    for _ in 0..2 {
        let again = runtime.run_cycle_blocking().unwrap_err();
        assert!(matches!(again, RuntimeError::Halted { .. }), "{again}");
        assert!(again.to_string().contains("`remember`"), "names the original failure: {again}");
    }
    assert!(matches!(runtime.resume_blocking(None), Err(RuntimeError::Halted { .. })));
    assert!(file(&d, SESSION_FILE).is_none(), "nothing saved");
}

#[test]
fn resume_recomputes_the_plan_hash_from_the_policy_files() {
    let d = dirs();
    let mut runtime = boot(&d, reviewed_plan(&["PersistMemory"]));
    assert!(matches!(runtime.run_cycle_blocking().unwrap(), RunOutcome::Paused { .. }));
    policy(d.policy.path(), "formal");
    let err = runtime.resume_blocking(Some(Override::new(ReviewGate::ID, "remember", "ok"))).unwrap_err();
    assert_eq!((err.code(), err.kind()), ("plan-hash-mismatch", FailureKind::FailFast));
    assert!(err.to_string().contains("modes.yaml changed"), "{err}");
    assert_eq!(runtime.status(), Status::Halted);
    assert!(file(&d, SESSION_FILE).is_none(), "nothing saved under the stale hash");
    assert!(file(&d, INTERVENTION_FILE).is_some(), "the pause is kept for a decision under the old policy");
}

#[test]
fn a_session_store_cannot_be_shared_by_two_runtimes() {
    // The runtime owns its store; an `Arc` of one is no store, so two runtimes cannot share it.
    static_assertions::assert_not_impl_any!(Arc<FileSessionStore>: SessionStore);
    let d = dirs();
    let _first = boot(&d, plan_with(|_| {}));
    let err = FileSessionStore::open(d.root.path()).unwrap_err();
    assert_eq!(err.code(), "session-in-use");
}

/// A caller's own store that forwards every call to one shared store: the exclusive claim is
/// forwarded too, so it cannot be used to share a session.
#[derive(Debug)]
struct Forward(Arc<FileSessionStore>);

impl SessionStore for Forward {
    planlock::forward_session_store!(this => this.0;
        claim, begin_cycle, end_cycle, save_reserved, records);
}

#[test]
fn a_forwarding_wrapper_cannot_boot_two_runtimes_on_one_session() {
    let d = dirs();
    let shared = Arc::new(FileSessionStore::open(d.root.path()).unwrap());
    let boot_on = |store: Forward| {
        Runtime::builder(d.policy.path(), plan_with(|_| {}), store)
            .handlers(Demo::new().handlers().boxed())
            .boot_blocking()
    };
    let mut first = boot_on(Forward(shared.clone())).unwrap();
    let err = boot_on(Forward(shared.clone())).unwrap_err();
    assert_eq!(err.code(), "session-in-use", "{err}");
    assert!(err.to_string().contains("already claimed"), "{err}");
    // The first runtime is unaffected.
    assert!(matches!(first.run_cycle_blocking().unwrap(), RunOutcome::Completed(_)));
}

#[test]
fn an_override_is_tied_to_its_intervention() {
    let d = dirs();
    let mut runtime = boot(&d, reviewed_plan(&["PersistMemory", "PersistDecision"]));
    let RunOutcome::Paused { record: first, .. } = runtime.run_cycle_blocking().unwrap() else { panic!("not paused") };
    assert_eq!(first.step_id, "remember");
    // One that names another step or validator is refused, and the cycle stays paused.
    for wrong in [Override::new(ReviewGate::ID, "decide", "x"), Override::new("pii", "remember", "x")] {
        let err = runtime.resume_blocking(Some(wrong)).unwrap_err();
        assert_eq!((err.code(), err.kind()), ("override-refused", FailureKind::CycleFail));
        assert_eq!(runtime.status(), Status::Paused);
    }
    // The right one lets `remember` pass, and only it: `decide`, blocked by the same validator,
    // pauses the cycle again.
    let RunOutcome::Paused { record: second, .. } =
        runtime.resume_blocking(Some(Override::new(ReviewGate::ID, "remember", "ok"))).unwrap()
    else {
        panic!("the override passed a later step's block too")
    };
    assert_eq!(second.step_id, "decide");
    assert_eq!(second.completed.last().map(|c| c.id.as_str()), Some("remember"));
    let RunOutcome::Completed(done) =
        runtime.resume_blocking(Some(Override::new(ReviewGate::ID, "decide", "ok too"))).unwrap()
    else {
        panic!("still paused")
    };
    let steps: Vec<_> = done.report.overrides.iter().map(|o| o.approved.step_id.as_str()).collect();
    assert_eq!(steps, ["decide"], "the report of the run that completed records its override");
}

/// Blocks the session save after it ran: a post-validator on `PersistSession`.
struct BlockSave;
impl Validator for BlockSave {
    fn after(&self, step: &StepView<'_>, _: &StepResult) -> Verdict {
        if step.step_type == StepType::PersistSession {
            Verdict::Block("check the save".into())
        } else {
            Verdict::Allow
        }
    }
}

#[test]
fn a_cycle_paused_after_persist_session_and_abandoned_saved_nothing() {
    let d = dirs();
    let plan = plan_with(|v| v["postValidators"] = json!([signature("save-check")]));
    let mut runtime = crate::common::runtime_on(d.policy.path(), d.root.path(), plan)
        .handlers(Demo::new().handlers().boxed())
        .validator("save-check", "1", &json!({}), BlockSave)
        .boot_blocking()
        .unwrap();
    let RunOutcome::Paused { record, .. } = runtime.run_cycle_blocking().unwrap() else { panic!("not paused") };
    assert_eq!((record.step_id.as_str(), record.phase), ("save", planlock::session::BlockPhase::Post));
    assert!(file(&d, SESSION_FILE).is_none(), "the staged save was not written");
    runtime.abandon_blocking().unwrap();
    assert!(file(&d, SESSION_FILE).is_none());
    assert!(file(&d, INTERVENTION_FILE).is_none());
    assert_eq!(runtime.cycle(), 0);
}

/// A write handler as the contract asks: every call is seen, but a key is stored once.
#[derive(Clone, Default)]
struct KeyedWrites {
    calls: Arc<Mutex<Vec<String>>>,
    stored: Arc<Mutex<Vec<String>>>,
}

impl Handler<PersistMemory> for KeyedWrites {
    async fn call(&self, cx: &StepContext<'_>, _: &PersistMemoryPayload) -> Result<PersistMemoryResult, HandlerError> {
        let key = cx.idempotency_key().to_string();
        self.calls.lock().unwrap().push(key.clone());
        let mut stored = self.stored.lock().unwrap();
        if !stored.contains(&key) {
            stored.push(key.clone());
        }
        Ok(PersistMemoryResult { id: format!("mem-{}", &key[..12]) })
    }
}

fn keyed(d: &Dirs, writes: &KeyedWrites, demo: &Demo) -> Runtime<FileSessionStore, Boxed> {
    crate::common::runtime_on(d.policy.path(), d.root.path(), plan_with(|_| {}))
        .handlers(demo.handlers().on::<PersistMemory>(writes.clone()).boxed())
        .boot_blocking()
        .unwrap()
}

#[test]
fn cycle_numbers_make_each_cycles_writes_its_own_and_a_rerun_write_once() {
    let d = dirs();
    let writes = KeyedWrites::default();
    // Cycle 1 fails after its memory write (the decision write fails: FailFast, halted).
    let mut runtime = keyed(&d, &writes, &Demo::new().failing([StepType::PersistDecision]));
    assert_eq!(runtime.run_cycle_blocking().unwrap_err().kind(), FailureKind::FailFast);
    drop(runtime);
    // A new process re-runs cycle 1 under the same number, so its write has the same key.
    let mut runtime = keyed(&d, &writes, &Demo::new());
    runtime.run_cycle_blocking().unwrap();
    runtime.run_cycle_blocking().unwrap();
    assert_eq!(runtime.cycle(), 2);
    let calls = writes.calls.lock().unwrap().clone();
    let stored = writes.stored.lock().unwrap().clone();
    assert_eq!(calls.len(), 3, "cycle 1 twice, cycle 2 once");
    assert_eq!(calls[0], calls[1], "the re-run of cycle 1 has the same key");
    assert_eq!(stored.len(), 2, "so it was written once; cycle 2 wrote anew: {stored:?}");
    let state = runtime.session().unwrap();
    assert_eq!(state.memory_ref.as_deref(), Some(format!("mem-{}", &stored[1][..12]).as_str()));
    // The key is the contract's: SHA-256 of the JCS form of {cycle, planHash, sessionId, stepId}.
    let expected = planlock::IdempotencyKey::derive(state.session_id, &runtime.plan_hash(), 2, "remember");
    assert_eq!(stored[1], expected.to_string());
}

#[test]
fn a_paused_cycle_survives_a_restart_and_resumes_to_completion() {
    let d = dirs();
    {
        let mut runtime = boot(&d, reviewed_plan(&["PersistMemory"]));
        assert!(matches!(runtime.run_cycle_blocking().unwrap(), RunOutcome::Paused { .. }));
    }
    let mut runtime = boot(&d, reviewed_plan(&["PersistMemory"]));
    assert_eq!(runtime.status(), Status::Paused);
    let err = runtime.run_cycle_blocking().unwrap_err();
    assert_eq!((err.code(), err.kind()), ("cycle-paused", FailureKind::CycleFail));
    let RunOutcome::Completed(done) =
        runtime.resume_blocking(Some(Override::new(ReviewGate::ID, "remember", "approved"))).unwrap()
    else {
        panic!("still paused")
    };
    // The steps before the blocked one were restored, not run again.
    assert_eq!(done.ledger.len(), 9);
    // The report keeps the Block that paused the cycle, as a resume in the same process does.
    let paused_by: Vec<_> =
        done.report.interventions.iter().map(|i| (i.step_id.as_str(), i.validator_id.as_str())).collect();
    assert_eq!(paused_by, [("remember", ReviewGate::ID)]);
    assert_eq!(done.report.overrides.len(), 1);
    assert!(done.report.steps.iter().all(|s| s.index >= 7), "only the blocked step and those after it ran");
    assert_eq!(runtime.cycle(), 1);
    assert!(file(&d, INTERVENTION_FILE).is_none());
    let saved: serde_json::Value = serde_json::from_slice(&file(&d, SESSION_FILE).unwrap()).unwrap();
    assert_eq!(saved["cycle"], 1);
}

#[test]
fn a_record_from_another_plan_is_refused_at_boot() {
    let d = dirs();
    {
        let mut runtime = boot(&d, reviewed_plan(&["PersistMemory"]));
        assert!(matches!(runtime.run_cycle_blocking().unwrap(), RunOutcome::Paused { .. }));
    }
    let err = boot_with(&d, reviewed_plan(&["PersistMemory", "PersistDecision"]), &Demo::new()).unwrap_err();
    assert_eq!((err.code(), err.kind()), ("intervention-mismatch", FailureKind::FailFast));
    // A torn or foreign record is refused as a bad session file is.
    std::fs::write(d.root.path().join(INTERVENTION_FILE), "{\"sessionId\": 1}").unwrap();
    let err = boot_with(&d, reviewed_plan(&["PersistMemory"]), &Demo::new()).unwrap_err();
    assert_eq!(err.code(), "session-corrupt");
    assert!(err.to_string().contains("intervention record"), "{err}");
}

/// A synchronous handler that blocks the thread past its deadline, never yielding.
struct Blocking(Duration);
impl Handler<LLMCall> for Blocking {
    async fn call(&self, _: &StepContext<'_>, _: &LlmCallPayload) -> Result<LlmCallResult, HandlerError> {
        std::thread::sleep(self.0);
        Ok(LlmCallResult { response: "late".into() })
    }
}

#[test]
fn a_blocking_handler_cannot_outrun_its_deadline() {
    let d = dirs();
    let plan = plan_with(|v| v["metadata"]["timeouts"] = json!({"llmMs": 20}));
    let mut runtime = crate::common::runtime_on(d.policy.path(), d.root.path(), plan)
        .handlers(Demo::new().handlers().on::<LLMCall>(Blocking(Duration::from_millis(300))).boxed())
        .boot_blocking()
        .unwrap();
    let err = runtime.run_cycle_blocking().unwrap_err();
    assert_eq!((err.code(), err.kind()), ("step-timed-out", FailureKind::CycleFail), "{err}");
    assert!(err.to_string().contains("llmMs"), "{err}");
}

/// A handler that panics.
struct Panics;
impl Handler<PersistMemory> for Panics {
    async fn call(&self, _: &StepContext<'_>, _: &PersistMemoryPayload) -> Result<PersistMemoryResult, HandlerError> {
        panic!("disk on fire")
    }
}
impl Handler<SummarizeMemory> for Panics {
    async fn call(
        &self,
        _: &StepContext<'_>,
        _: &SummarizeMemoryPayload,
    ) -> Result<SummarizeMemoryResult, HandlerError> {
        panic!("summary on fire")
    }
}

#[test]
fn a_panicking_handler_fails_its_step_with_its_kind() {
    let d = dirs();
    let runtime_with = |handlers: planlock::Handlers<Boxed>| {
        crate::common::runtime_on(d.policy.path(), d.root.path(), plan_with(|_| {}))
            .handlers(handlers)
            .boot_blocking()
            .unwrap()
    };
    let mut runtime = runtime_with(Demo::new().handlers().on::<SummarizeMemory>(Panics).boxed());
    let err = runtime.run_cycle_blocking().unwrap_err();
    assert_eq!((err.code(), err.kind()), ("step-panicked", FailureKind::CycleFail));
    assert!(err.to_string().contains("summary on fire"), "{err}");
    assert_eq!(runtime.status(), Status::Ready, "a CycleFail leaves the runtime usable");
    drop(runtime);
    let mut runtime = runtime_with(Demo::new().handlers().on::<PersistMemory>(Panics).boxed());
    let err = runtime.run_cycle_blocking().unwrap_err();
    assert_eq!((err.code(), err.kind()), ("step-panicked", FailureKind::FailFast));
    assert_eq!(runtime.status(), Status::Halted, "a panicking write halts: the next cycle does not re-run it");
    assert!(matches!(runtime.run_cycle_blocking(), Err(RuntimeError::Halted { .. })));
}

/// A validator that panics.
struct PanickyGate;
impl Validator for PanickyGate {
    fn before(&self, _: &StepView<'_>) -> Verdict {
        panic!("cannot decide")
    }
}

#[test]
fn a_panicking_validator_is_fail_fast() {
    let d = dirs();
    let plan = plan_with(|v| v["validators"] = json!([signature("panicky")]));
    let mut runtime = crate::common::runtime_on(d.policy.path(), d.root.path(), plan)
        .handlers(Demo::new().handlers().boxed())
        .validator("panicky", "1", &json!({}), PanickyGate)
        .boot_blocking()
        .unwrap();
    let err = runtime.run_cycle_blocking().unwrap_err();
    assert_eq!((err.code(), err.kind()), ("validator-panicked", FailureKind::FailFast));
    assert!(err.to_string().contains("cannot decide"), "{err}");
    assert_eq!(runtime.status(), Status::Halted);
    // The gate judged the first step: the failure's report names it, failed, and nothing else.
    let report = err.report().expect("the failure carries the cycle's report");
    let statuses: Vec<_> = report.steps.iter().map(|s| (s.index, s.status)).collect();
    assert_eq!(statuses, [(0, planlock::StepStatus::Failed)]);
    // A halted runtime's refusal ran no step: no report.
    assert!(runtime.run_cycle_blocking().unwrap_err().report().is_none());
}

#[test]
fn the_runtime_saves_the_session_itself() {
    let d = dirs();
    let handlers = Demo::new()
        .handlers()
        .on::<PersistSession>(planlock::handler_fn(|_, _: &PersistSessionPayload| {
            Ok(PersistSessionResult { status: "mine".into() })
        }))
        .boxed();
    let err = crate::common::runtime_on(d.policy.path(), d.root.path(), plan_with(|_| {}))
        .handlers(handlers)
        .boot_blocking()
        .unwrap_err();
    assert_eq!(err.code(), "persist-session-handler");
}

#[test]
fn resume_and_abandon_need_a_paused_cycle() {
    let d = dirs();
    let mut runtime = boot(&d, plan_with(|_| {}));
    assert_eq!(runtime.resume_blocking(None).unwrap_err().code(), "not-paused");
    assert_eq!(runtime.abandon_blocking().unwrap_err().code(), "not-paused");
}

#[test]
fn abandon_then_run_starts_the_same_cycle_number_again() {
    let d = dirs();
    let plan = reviewed_plan(&["PersistMemory"]);
    let mut runtime = boot(&d, plan);
    let RunOutcome::Paused { record: first, .. } = runtime.run_cycle_blocking().unwrap() else { panic!() };
    let abandoned = runtime.abandon_blocking().unwrap();
    assert_eq!(abandoned.cycle, first.cycle);
    assert!(file(&d, INTERVENTION_FILE).is_none());
    let RunOutcome::Paused { record: again, .. } = runtime.run_cycle_blocking().unwrap() else { panic!() };
    assert_eq!(again.cycle, 1, "the abandoned cycle's number runs again");
}

#[test]
fn a_boot_error_has_the_class_its_doc_states() {
    use planlock::Failure;
    let d = dirs();
    // No handlers at all: the plan's steps have none (`missing-handler`), which endangers no data.
    let err = crate::common::runtime_on(d.policy.path(), d.root.path(), plan_with(|_| {})).boot_blocking().unwrap_err();
    assert_eq!((err.code(), err.kind()), ("missing-handler", FailureKind::CycleFail), "{err}");
    // A changed policy under a saved session is FailFast.
    let mut runtime = boot(&d, plan_with(|_| {}));
    assert!(matches!(runtime.run_cycle_blocking().unwrap(), RunOutcome::Completed(_)));
    drop(runtime);
    policy(d.policy.path(), "formal");
    let err = boot_with(&d, plan_with(|_| {}), &Demo::new()).unwrap_err();
    assert_eq!((err.code(), err.kind()), ("plan-hash-mismatch", FailureKind::FailFast), "{err}");
}

/// A store that counts the cycles the runtime opens on it, those whose guard reached a save, and
/// those that ended (the guard's end runs when it is dropped: after a save, or without one).
#[derive(Debug)]
struct Counting {
    inner: FileSessionStore,
    counts: Arc<Counts>,
}

#[derive(Debug, Default)]
struct Counts {
    begun: AtomicUsize,
    saved: AtomicUsize,
    ended: AtomicUsize,
}

impl Counts {
    fn get(&self) -> (usize, usize, usize) {
        (self.begun.load(SeqCst), self.saved.load(SeqCst), self.ended.load(SeqCst))
    }
}

impl SessionStore for Counting {
    fn begin_cycle(&self) -> StoreFuture<'_, CycleGuard> {
        self.counts.begun.fetch_add(1, SeqCst);
        let counts = self.counts.clone();
        Box::pin(std::future::ready(Ok(CycleGuard::ending(move || {
            counts.ended.fetch_add(1, SeqCst);
        }))))
    }
    fn end_cycle(&self, end: EndOfCycle, cycle: CycleGuard) -> StoreFuture<'_, Option<SessionState>> {
        // A save: an end that writes the session or a pause (a failed cycle's end keeps only its
        // history entry, with no cycle of the store's).
        if matches!(end.leaves, Leaves::Session(_) | Leaves::Pause(_)) {
            self.counts.saved.fetch_add(1, SeqCst);
        }
        self.inner.end_cycle(end, cycle)
    }
    planlock::forward_session_store!(this => this.inner;
        claim, save_reserved, records);
}

#[test]
fn every_cycle_the_runtime_opens_ends_with_its_save_or_is_dropped_without_one() {
    let (d, other) = (dirs(), dirs());
    let counts = Arc::new(Counts::default());
    let boot_on = |demo: Demo, plan, d: &Dirs| {
        let store = Counting { inner: FileSessionStore::open(d.root.path()).unwrap(), counts: counts.clone() };
        Runtime::builder(d.policy.path(), plan, store)
            .handlers(demo.handlers().boxed())
            .validator(ReviewGate::ID, ReviewGate::VERSION, &json!({}), ReviewGate)
            .boot_blocking()
            .unwrap()
    };
    let mut runtime = boot_on(Demo::new(), plan_with(|_| {}), &d);
    assert!(matches!(runtime.run_cycle_blocking().unwrap(), RunOutcome::Completed(_)));
    assert_eq!(counts.get(), (1, 1, 1), "one cycle, given to its save, ended");
    drop(runtime);
    // A cycle failing after its store writes: no save, its guard dropped (a store holding the
    // cycle's writes rolls them back there).
    let mut failing = boot_on(Demo::new().failing([StepType::LinkDecisionEvidence]), plan_with(|_| {}), &d);
    assert!(failing.run_cycle_blocking().is_err());
    assert_eq!(failing.cycle(), 1, "nothing saved");
    assert_eq!(counts.get(), (2, 1, 2), "the failed cycle ended without a save");
    drop(failing);
    // A paused cycle: its guard goes to the record's save; the resumed cycle is a cycle of its own.
    let mut paused = boot_on(Demo::new(), reviewed_plan(&["PersistMemory"]), &other);
    assert!(matches!(paused.run_cycle_blocking().unwrap(), RunOutcome::Paused { .. }));
    assert_eq!(counts.get(), (3, 2, 3));
    let over = Override::new(ReviewGate::ID, "remember", "reviewed");
    assert!(matches!(paused.resume_blocking(Some(over)).unwrap(), RunOutcome::Completed(_)));
    assert_eq!(counts.get(), (4, 3, 4));
}

/// A worker boots a runtime per session of one plan: each holds the plan, not a copy of it
/// (clones of a `ValidPlan` share it), and running a cycle does not copy it either.
#[test]
fn runtimes_of_one_plan_share_it() {
    let plan = plan_with(|_| {});
    let (a, b) = (dirs(), dirs());
    let mut first = boot(&a, plan.clone());
    let second = boot(&b, plan.clone());
    assert!(std::ptr::eq(first.plan().plan(), plan.plan()));
    assert!(std::ptr::eq(second.plan().plan(), plan.plan()));
    first.run_cycle_blocking().unwrap();
    assert!(std::ptr::eq(first.plan().plan(), plan.plan()));
    // Taken out, it is the caller's own again.
    assert_eq!(plan.clone().into_plan(), *plan.plan());
}

/// A session keeps the plan it runs (CONTRACT §21) with the end of its first cycle, paused or
/// completed, so that a worker resumes it without being handed the plan; a kept plan that was
/// removed or damaged is kept again with the next end.
#[test]
fn a_session_keeps_the_plan_it_runs() {
    use planlock::session::{FileRecords, PLAN_FILE, SessionRecords};
    let d = dirs();
    let plan = reviewed_plan(&["PersistMemory"]);
    let mut runtime = boot(&d, plan.clone());
    let records = FileRecords::new(d.root.path());
    assert!(planlock::block_on(records.load_plan()).unwrap().is_none(), "nothing kept before the first end");
    assert!(matches!(runtime.run_cycle_blocking().unwrap(), RunOutcome::Paused { .. }));
    let kept = planlock::block_on(records.load_plan()).unwrap().expect("kept with the pause");
    assert_eq!((kept.plan().unwrap(), kept.plan_hash), (plan.clone(), runtime.plan_hash()));
    // Damaged by hand: the next boot keeps it again, with the next end.
    drop(runtime);
    std::fs::write(d.root.path().join(PLAN_FILE), "{ not json").unwrap();
    let mut runtime = boot(&d, plan.clone());
    let over = Override::new(ReviewGate::ID, "remember", "reviewed");
    assert!(matches!(runtime.resume_blocking(Some(over)).unwrap(), RunOutcome::Completed(_)));
    let kept = planlock::block_on(records.load_plan()).unwrap().expect("kept again");
    assert_eq!(kept.plan().unwrap(), plan);
}
