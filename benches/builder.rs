//! Building a 12-step plan at run time with the typestate builder (which validates what types
//! cannot: ids, strings, free-form limits) against constructing the same `ExecutionPlan` by hand
//! with no checks, and against the hand-built plan then validated. Target (issue 3): at most 1.2×
//! the hand-built plan.

use std::hint::black_box;

use criterion::{Criterion, criterion_group, criterion_main};

#[path = "common/paired.rs"]
mod paired;
use planlock::schema::*;
use planlock::{AnyObject, ExecutionPlan, PlanBuilder, PlanMetadata, PositiveInt, StepDefinition};

fn decision() -> Decision {
    Decision {
        id: "d-2".into(),
        root_id: "d-1".into(),
        version: PositiveInt::new(2).unwrap(),
        text: "Rotate keys every 90 days".into(),
        strength: "must".into(),
        scope: "domain:security".into(),
        is_active: true,
        previous_version_id: Some("d-1".into()),
    }
}

fn vars() -> AnyObject {
    AnyObject::new().with("question", "How do I rotate the API key?").with("context", "repo")
}

fn by_hand() -> ExecutionPlan {
    let k = PositiveInt::new(5).unwrap();
    let mut metadata = PlanMetadata::new("profiles/default", "chat");
    metadata.top_k = Some(k);
    ExecutionPlan::new(
        metadata,
        vec![
            StepDefinition::new("scan", RepoScanPayload { repo_path: ".".into() }),
            StepDefinition::new("ctx", ContextSelectPayload { input: "hi".into(), sources: vec!["repo".into()] }),
            StepDefinition::new("memory", RetrieveMemoryPayload { input: "hi".into(), top_k: k }),
            StepDefinition::new(
                "decisions",
                RetrieveDecisionContextPayload { input: "hi".into(), current_domain: Some("security".into()) },
            ),
            StepDefinition::new("prompt", PromptAssemblePayload { template: "{{question}}".into(), vars: vars() }),
            StepDefinition::new(
                "llm",
                LlmCallPayload { prompt: "hi".into(), config: AnyObject::new().with("model", "m") },
            ),
            StepDefinition::new("summary", SummarizeMemoryPayload { response: "r".into() }),
            StepDefinition::new(
                "remember",
                PersistMemoryPayload { summary: "s".into(), keywords: vec!["k".into()], session_ref: "s1".into() },
            ),
            StepDefinition::new("decide", PersistDecisionPayload { decision: decision() }),
            StepDefinition::new(
                "evidence",
                PersistEvidencePayload {
                    evidence: Evidence { id: "e".into(), summary: "s".into(), source: "a".into() },
                },
            ),
            StepDefinition::new(
                "link",
                LinkDecisionEvidencePayload { decision_id: "d-2".into(), evidence_id: "e".into() },
            ),
            StepDefinition::new("save", PersistSessionPayload { session_ref: "s1".into(), meta: AnyObject::new() }),
        ],
    )
}

fn with_builder() -> planlock::ValidPlan {
    PlanBuilder::new("profiles/default", "chat")
        .top_k(5)
        .repo_scan("scan", RepoScanPayload { repo_path: ".".into() })
        .context_select("ctx", ContextSelectPayload { input: "hi".into(), sources: vec!["repo".into()] })
        .retrieve_memory("memory", "hi")
        .retrieve_decision_context(
            "decisions",
            RetrieveDecisionContextPayload { input: "hi".into(), current_domain: Some("security".into()) },
        )
        .prompt_assemble("prompt", PromptAssemblePayload { template: "{{question}}".into(), vars: vars() })
        .llm_call("llm", LlmCallPayload { prompt: "hi".into(), config: AnyObject::new().with("model", "m") })
        .summarize_memory("summary", SummarizeMemoryPayload { response: "r".into() })
        .persist_memory(
            "remember",
            PersistMemoryPayload { summary: "s".into(), keywords: vec!["k".into()], session_ref: "s1".into() },
        )
        .persist_decision("decide", PersistDecisionPayload { decision: decision() })
        .persist_evidence(
            "evidence",
            PersistEvidencePayload { evidence: Evidence { id: "e".into(), summary: "s".into(), source: "a".into() } },
        )
        .link_decision_evidence(
            "link",
            LinkDecisionEvidencePayload { decision_id: "d-2".into(), evidence_id: "e".into() },
        )
        .persist_session("save", PersistSessionPayload { session_ref: "s1".into(), meta: AnyObject::new() })
        .build()
        .unwrap()
}

fn bench(c: &mut Criterion) {
    assert_eq!(with_builder().plan(), &by_hand());
    let mut g = c.benchmark_group("build_12_step_plan");
    g.bench_function("by_hand_execution_plan", |b| b.iter(|| black_box(by_hand())));
    g.bench_function("by_hand_then_validate", |b| {
        b.iter(|| black_box(planlock::ValidPlan::from_plan(by_hand()).unwrap()))
    });
    g.bench_function("typestate_builder_validated", |b| b.iter(|| black_box(with_builder())));
    g.finish();
    paired::report(
        "build_12_step_plan",
        &mut [
            ("by_hand_execution_plan", &mut || drop(black_box(by_hand()))),
            ("typestate_builder_validated", &mut || drop(black_box(with_builder()))),
            ("by_hand_then_validate", &mut || drop(black_box(planlock::ValidPlan::from_plan(by_hand()).unwrap()))),
        ],
    );
}

criterion_group!(benches, bench);
criterion_main!(benches);
