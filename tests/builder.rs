//! The typestate builder at run time: all 256 combinations of the eight optional steps build,
//! and each built plan is accepted by the runtime validator and reads back equal.

use std::collections::HashSet;
use std::num::NonZeroU32;

use planlock::schema::*;
use planlock::{AnyObject, FailureKind, PlanBuilder, ProblemCode, StepType, ValidPlan};

fn decision() -> Decision {
    Decision {
        id: "d-1".into(),
        root_id: "d-1".into(),
        version: planlock::PositiveInt::new(1).unwrap(),
        text: "Rotate keys".into(),
        strength: "must".into(),
        scope: "global".into(),
        is_active: true,
        previous_version_id: None,
    }
}

/// Expands to one builder chain per combination of the `opt` rows (2^8 = 256 chains), each
/// pushed into `$out`.
macro_rules! every_combination {
    ($out:ident; [$($chain:tt)*]) => {
        $out.push(
            PlanBuilder::new("profiles/default", "chat")
                .top_k(NonZeroU32::new(4).unwrap())
                $($chain)*
                .build()
                .expect("a builder-built plan is valid"),
        );
    };
    ($out:ident; [$($chain:tt)*] mand $method:ident($($arg:expr),*); $($rest:tt)*) => {
        every_combination!($out; [$($chain)* .$method($($arg),*)] $($rest)*);
    };
    ($out:ident; [$($chain:tt)*] opt $method:ident($($arg:expr),*); $($rest:tt)*) => {
        every_combination!($out; [$($chain)*] $($rest)*);
        every_combination!($out; [$($chain)* .$method($($arg),*)] $($rest)*);
    };
}

#[test]
#[allow(clippy::vec_init_then_push, reason = "the 256 pushes are generated")]
fn all_256_optional_step_combinations_build_validate_and_round_trip() {
    let mut plans: Vec<ValidPlan> = Vec::with_capacity(256);
    every_combination!(plans; []
        opt repo_scan("scan", RepoScanPayload { repo_path: ".".into() });
        mand context_select("ctx", ContextSelectPayload { input: "hi".into(), sources: vec!["repo".into()] });
        opt retrieve_memory("memory", "hi");
        opt retrieve_decision_context("decisions", RetrieveDecisionContextPayload { input: "hi".into(), current_domain: None });
        mand prompt_assemble("prompt", PromptAssemblePayload { template: "{{x}}".into(), vars: AnyObject::new().with("x", 1) });
        mand llm_call("llm", LlmCallPayload { prompt: "hi".into(), config: AnyObject::new() });
        opt summarize_memory("summary", SummarizeMemoryPayload { response: "r".into() });
        opt persist_memory("remember", PersistMemoryPayload { summary: "s".into(), keywords: vec![], session_ref: "s1".into() });
        opt persist_decision("decide", PersistDecisionPayload { decision: decision() });
        opt persist_evidence("evidence", PersistEvidencePayload { evidence: Evidence { id: "e".into(), summary: "s".into(), source: "x".into() } });
        opt link_decision_evidence("link", LinkDecisionEvidencePayload { decision_id: "d-1".into(), evidence_id: "e".into() });
        mand persist_session("save", PersistSessionPayload { session_ref: "s1".into(), meta: AnyObject::new() });
    );
    assert_eq!(plans.len(), 256);
    let mut shapes = HashSet::new();
    for plan in &plans {
        let types: Vec<StepType> = plan.steps().iter().map(|s| s.step_type()).collect();
        assert!(types.windows(2).all(|w| w[0] < w[1]), "canonical order: {types:?}");
        shapes.insert(types);
        let json = plan.to_json();
        let again = ValidPlan::from_str(&json).unwrap_or_else(|e| panic!("{e}\n{json}"));
        assert_eq!(&again, plan);
    }
    assert_eq!(shapes.len(), 256, "every combination is a different plan");
}

#[test]
fn retrieve_memory_takes_top_k_from_the_metadata() {
    let plan = PlanBuilder::new("p", "chat")
        .context_select("ctx", ContextSelectPayload { input: "hi".into(), sources: vec![] })
        .top_k(NonZeroU32::new(7).unwrap())
        .retrieve_memory("memory", "query")
        .prompt_assemble("prompt", PromptAssemblePayload { template: "t".into(), vars: AnyObject::new() })
        .llm_call("llm", LlmCallPayload { prompt: "p".into(), config: AnyObject::new() })
        .persist_session("save", PersistSessionPayload { session_ref: "s".into(), meta: AnyObject::new() })
        .build()
        .unwrap();
    assert_eq!(plan.metadata().top_k.map(|k| k.get()), Some(7));
    let planlock::StepPayload::RetrieveMemory(p) = &plan.steps()[1].payload else { panic!() };
    assert_eq!(p.top_k.get(), 7);
}

fn minimal(ids: [&str; 4]) -> Result<ValidPlan, planlock::Rejection> {
    PlanBuilder::new("p", "chat")
        .context_select(ids[0], ContextSelectPayload { input: "hi".into(), sources: vec![] })
        .prompt_assemble(ids[1], PromptAssemblePayload { template: "t".into(), vars: AnyObject::new() })
        .llm_call(ids[2], LlmCallPayload { prompt: "p".into(), config: AnyObject::new() })
        .persist_session(ids[3], PersistSessionPayload { session_ref: "s".into(), meta: AnyObject::new() })
        .build()
}

#[test]
fn build_reports_what_types_cannot_check_with_the_validators_codes() {
    let codes = |r: Result<ValidPlan, planlock::Rejection>| {
        r.unwrap_err().problems().iter().map(|p| (p.code(), p.pointer().to_owned())).collect::<Vec<_>>()
    };
    assert_eq!(codes(minimal(["a", "b", "a", "c"])), [(ProblemCode::DuplicateStepId, "/steps/2/id".to_owned())]);
    assert_eq!(codes(minimal(["", "b", "c", "d"])), [(ProblemCode::InvalidValue, "/steps/0/id".to_owned())]);
    let long = "x".repeat(129);
    assert_eq!(codes(minimal(["a", &long, "c", "d"])), [(ProblemCode::InvalidValue, "/steps/1/id".to_owned())]);
    assert_eq!(codes(minimal(["a", "b", "c\u{0}", "d"])), [(ProblemCode::InvalidValue, "/steps/2/id".to_owned())]);
    assert_eq!(codes(minimal(["a", "b\u{85}", "c", "d"])), [(ProblemCode::InvalidValue, "/steps/1/id".to_owned())]);
    // Beyond ASCII and at the length limit, ids are fine.
    assert!(minimal(["étape", "b", &"y".repeat(128), "ü".repeat(128).as_str()]).is_ok());
    let err = PlanBuilder::new("", "chat")
        .context_select("a", ContextSelectPayload { input: "hi".into(), sources: vec![] })
        .prompt_assemble(
            "b",
            PromptAssemblePayload { template: "t".into(), vars: AnyObject::new().with("n", u64::MAX) },
        )
        .llm_call("c", LlmCallPayload { prompt: "p".into(), config: AnyObject::new() })
        .persist_session("d", PersistSessionPayload { session_ref: "s".into(), meta: AnyObject::new() })
        .build()
        .unwrap_err();
    assert_eq!(err.class(), FailureKind::CycleFail);
    let pointers: Vec<_> = err.problems().iter().map(|p| p.pointer()).collect();
    assert_eq!(pointers, ["/metadata/policyProfile", "/steps/1/payload/vars/n"]);
}
