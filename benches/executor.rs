//! A 12-step cycle with no-op handlers, side by side with the floor: the same no-op handlers
//! called directly in sequence, writing the same results into a `Vec`. Target (issue 4):
//! at most 150 ns per step above the floor, and no heap allocation per step beyond the result.
//!
//! Also prints the heap allocations of one cycle for a 4-step and a 12-step plan (counted by a
//! global allocator): equal counts mean no allocation per step.

use std::alloc::{GlobalAlloc, Layout, System};
use std::hint::black_box;
use std::sync::atomic::{AtomicUsize, Ordering};

use criterion::{Criterion, criterion_group, criterion_main};
use planlock::schema::*;
use planlock::steps::*;
use planlock::{
    CycleSession, Executor, Handler, HandlerError, Handlers, Step, StepContext, StepResult, StepType, ValidPlan,
};

struct Counting;
static ALLOCATIONS: AtomicUsize = AtomicUsize::new(0);

// SAFETY-free: delegates to the system allocator and only counts.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        ALLOCATIONS.fetch_add(1, Ordering::Relaxed);
        unsafe { System.alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        unsafe { System.dealloc(ptr, layout) }
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

/// The result each no-op handler returns. Three of them allocate their id ("m", "d", "e").
trait Sample {
    fn sample() -> Self;
}

macro_rules! samples {
    ($($ty:ident $step:ident => $value:expr;)*) => {
        $(impl Sample for $ty {
            fn sample() -> Self {
                $value
            }
        })*
        fn sample(ty: StepType) -> StepResult {
            match ty {
                $(StepType::$step => StepResult::$step($ty::sample()),)*
            }
        }
    };
}

samples! {
    RepoScanResult RepoScan => RepoScanResult { version_id: String::new(), file_count: 0 };
    ContextSelectResult ContextSelect => ContextSelectResult { selected_context: vec![] };
    RetrieveMemoryResult RetrieveMemory => RetrieveMemoryResult { items: vec![] };
    RetrieveDecisionContextResult RetrieveDecisionContext => RetrieveDecisionContextResult { decisions: vec![], anchors: vec![] };
    PromptAssembleResult PromptAssemble => PromptAssembleResult { prompt: String::new() };
    LlmCallResult LLMCall => LlmCallResult { response: String::new() };
    SummarizeMemoryResult SummarizeMemory => SummarizeMemoryResult { summary: String::new(), keywords: vec![] };
    PersistMemoryResult PersistMemory => PersistMemoryResult { id: "m".into() };
    PersistDecisionResult PersistDecision => PersistDecisionResult { id: "d".into() };
    PersistEvidenceResult PersistEvidence => PersistEvidenceResult { id: "e".into() };
    LinkDecisionEvidenceResult LinkDecisionEvidence => LinkDecisionEvidenceResult { status: String::new() };
    PersistSessionResult PersistSession => PersistSessionResult { status: String::new() };
}

struct Noop;

impl<T: Step> Handler<T> for Noop
where
    T::Result: Sample,
{
    async fn call(&self, _cx: &StepContext<'_>, _payload: &T::Payload) -> Result<T::Result, HandlerError> {
        Ok(T::Result::sample())
    }
}

/// The floor: the same work without the executor.
fn floor(plan: &ValidPlan) -> Vec<StepResult> {
    let mut out = Vec::with_capacity(plan.steps().len());
    for step in plan.steps() {
        let result = sample(step.step_type());
        out.push(result);
    }
    out
}

fn executor() -> Executor<impl planlock::handler::HandlerSet> {
    Executor::new(
        Handlers::new()
            .on::<RepoScan>(Noop)
            .on::<ContextSelect>(Noop)
            .on::<RetrieveMemory>(Noop)
            .on::<RetrieveDecisionContext>(Noop)
            .on::<PromptAssemble>(Noop)
            .on::<LLMCall>(Noop)
            .on::<SummarizeMemory>(Noop)
            .on::<PersistMemory>(Noop)
            .on::<PersistDecision>(Noop)
            .on::<PersistEvidence>(Noop)
            .on::<LinkDecisionEvidence>(Noop)
            .on::<PersistSession>(Noop),
    )
}

fn plan(full: bool, timeouts: bool) -> ValidPlan {
    let mut v: serde_json::Value = serde_json::from_str(include_str!("../tests/fixtures/full_plan.json")).unwrap();
    v["validators"] = serde_json::json!([]);
    if !timeouts {
        v["metadata"].as_object_mut().unwrap().remove("timeouts");
    }
    if !full {
        let keep = ["ContextSelect", "PromptAssemble", "LLMCall", "PersistSession"];
        v["steps"].as_array_mut().unwrap().retain(|s| keep.contains(&s["type"].as_str().unwrap()));
    }
    ValidPlan::from_value(&v).unwrap()
}

fn allocations_per_cycle(exec: &Executor<impl planlock::handler::HandlerSet>, plan: &ValidPlan) -> usize {
    let session = CycleSession::for_plan(plan);
    let run = || planlock::block_on(exec.run_with(plan, session)).unwrap();
    drop(run()); // one-time costs (tracing callsites) first
    let before = ALLOCATIONS.load(Ordering::Relaxed);
    let outcome = run();
    let after = ALLOCATIONS.load(Ordering::Relaxed);
    drop(outcome);
    after - before
}

fn bench(c: &mut Criterion) {
    let exec = executor();
    let (small, full, timed) = (plan(false, false), plan(true, false), plan(true, true));
    let (a4, a12, t12) = (
        allocations_per_cycle(&exec, &small),
        allocations_per_cycle(&exec, &full),
        allocations_per_cycle(&exec, &timed),
    );
    // Three of the twelve sample results allocate their id ("m", "d", "e"); none of the four do;
    // the one other allocation is the report's step list.
    println!("heap allocations per cycle: 4 steps {a4}, 12 steps {a12}, 12 steps with deadlines {t12} (3 are results)");
    let (session, timed_session) = (CycleSession::for_plan(&full), CycleSession::for_plan(&timed));
    let mut g = c.benchmark_group("cycle_12_noop_steps");
    g.bench_function("floor_direct_calls_into_vec", |b| b.iter(|| black_box(floor(black_box(&full)))));
    g.bench_function("executor_run_blocking", |b| {
        b.iter(|| black_box(planlock::block_on(exec.run_with(black_box(&full), session)).unwrap()))
    });
    g.bench_function("executor_run_blocking_with_deadlines", |b| {
        b.iter(|| black_box(planlock::block_on(exec.run_with(black_box(&timed), timed_session)).unwrap()))
    });
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
