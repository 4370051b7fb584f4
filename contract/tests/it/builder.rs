//! The typestate builder at run time: all 256 combinations of the eight optional steps build,
//! and each built plan is accepted by the runtime validator and reads back equal.

use std::collections::HashSet;

use planlock_contract::schema::*;
use planlock_contract::{AnyObject, FailureKind, PlanBuilder, ProblemCode, StepType, ValidPlan};

fn decision() -> Decision {
    Decision {
        id: "d-1".into(),
        root_id: "d-1".into(),
        version: planlock_contract::PositiveInt::new(1).unwrap(),
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
                .top_k(4)
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

    // The same 256 plans from one chain of `maybe_` calls, as configuration-driven code writes them.
    let maybe_built: HashSet<String> = (0u32..256).map(|mask| maybe_chain(mask).to_json()).collect();
    let chained: HashSet<String> = plans.iter().map(ValidPlan::to_json).collect();
    assert_eq!(maybe_built, chained);
}

/// Bit `i` of `mask` says whether the `i`-th optional step is in.
fn maybe_chain(mask: u32) -> ValidPlan {
    let on = |bit: u32| mask & (1 << bit) != 0;
    let evidence = Evidence { id: "e".into(), summary: "s".into(), source: "x".into() };
    PlanBuilder::new("profiles/default", "chat")
        .top_k(4)
        .maybe_repo_scan("scan", on(0).then(|| RepoScanPayload { repo_path: ".".into() }))
        .context_select("ctx", ContextSelectPayload { input: "hi".into(), sources: vec!["repo".into()] })
        .maybe_retrieve_memory("memory", on(1).then(|| "hi".to_string()))
        .maybe_retrieve_decision_context(
            "decisions",
            on(2).then(|| RetrieveDecisionContextPayload { input: "hi".into(), current_domain: None }),
        )
        .prompt_assemble(
            "prompt",
            PromptAssemblePayload { template: "{{x}}".into(), vars: AnyObject::new().with("x", 1) },
        )
        .llm_call("llm", LlmCallPayload { prompt: "hi".into(), config: AnyObject::new() })
        .maybe_summarize_memory("summary", on(3).then(|| SummarizeMemoryPayload { response: "r".into() }))
        .maybe_persist_memory(
            "remember",
            on(4).then(|| PersistMemoryPayload { summary: "s".into(), keywords: vec![], session_ref: "s1".into() }),
        )
        .maybe_persist_decision("decide", on(5).then(|| PersistDecisionPayload { decision: decision() }))
        .maybe_persist_evidence("evidence", on(6).then_some(PersistEvidencePayload { evidence }))
        .maybe_link_decision_evidence(
            "link",
            on(7).then(|| LinkDecisionEvidencePayload { decision_id: "d-1".into(), evidence_id: "e".into() }),
        )
        .persist_session("save", PersistSessionPayload { session_ref: "s1".into(), meta: AnyObject::new() })
        .build()
        .expect("a builder-built plan is valid")
}

#[test]
fn a_top_k_the_builder_cannot_store_is_reported_by_build_as_the_validator_reports_it() {
    for n in [0, planlock_contract::MAX_SAFE_INTEGER + 1, u64::MAX] {
        let built = PlanBuilder::new("p", "chat")
            .top_k(n)
            .context_select("ctx", ContextSelectPayload { input: "hi".into(), sources: vec![] })
            .retrieve_memory("memory", "query")
            .prompt_assemble("prompt", PromptAssemblePayload { template: "t".into(), vars: AnyObject::new() })
            .llm_call("llm", LlmCallPayload { prompt: "p".into(), config: AnyObject::new() })
            .persist_session("save", PersistSessionPayload { session_ref: "s".into(), meta: AnyObject::new() })
            .build()
            .unwrap_err();
        // The same plan as a document, with that topK in both places.
        let doc = format!(
            r#"{{"step_contract_version":"1","extensions":[],"metadata":{{"policyProfile":"p","mode":"chat","topK":{n}}},
            "steps":[{{"id":"ctx","type":"ContextSelect","payload":{{"input":"hi","sources":[]}}}},
            {{"id":"memory","type":"RetrieveMemory","payload":{{"input":"query","topK":{n}}}}},
            {{"id":"prompt","type":"PromptAssemble","payload":{{"template":"t","vars":{{}}}}}},
            {{"id":"llm","type":"LLMCall","payload":{{"prompt":"p","config":{{}}}}}},
            {{"id":"save","type":"PersistSession","payload":{{"sessionRef":"s","meta":{{}}}}}}]}}"#
        );
        let parsed = ValidPlan::from_str(&doc).unwrap_err();
        let first = |r: &planlock_contract::Rejection| {
            let p = &r.problems()[0];
            (p.code(), p.pointer().to_owned(), p.message().to_owned())
        };
        assert_eq!(first(&built), first(&parsed), "topK {n}");
        assert_eq!(first(&built).0, ProblemCode::InvalidValue);
        assert_eq!(built.problems().len(), 1, "no topK rule repeats it: {built}");
    }
}

#[test]
fn every_way_to_a_valid_plan_holds_it_to_the_size_limit() {
    let plan_with = |text: String| {
        PlanBuilder::new("p", "chat")
            .context_select("ctx", ContextSelectPayload { input: text, sources: vec![] })
            .prompt_assemble("prompt", PromptAssemblePayload { template: "t".into(), vars: AnyObject::new() })
            .llm_call("llm", LlmCallPayload { prompt: "p".into(), config: AnyObject::new() })
            .persist_session("save", PersistSessionPayload { session_ref: "s".into(), meta: AnyObject::new() })
            .build()
    };
    let limit = planlock_contract::MAX_PLAN_BYTES;
    let small = plan_with(String::new()).unwrap().to_json().len();
    let fits = plan_with("a".repeat(limit - small)).unwrap();
    assert_eq!(fits.to_json().len(), limit);
    assert!(ValidPlan::from_str(&fits.to_json()).is_ok());
    // The size is the JSON form's, not the strings': a control character is a six-byte escape.
    for over in ["a".repeat(limit - small + 1), "\u{1}".repeat(limit / 6)] {
        let built = plan_with(over.clone()).unwrap_err();
        assert_eq!(built.problems()[0].code(), ProblemCode::TooLarge, "{built}");
        let mut plan = plan_with("x".into()).unwrap().into_plan();
        plan.steps[0].payload =
            planlock_contract::StepPayload::ContextSelect(ContextSelectPayload { input: over, sources: vec![] });
        let from_plan = ValidPlan::from_plan(plan.clone()).unwrap_err();
        assert_eq!(from_plan.problems()[0].code(), ProblemCode::TooLarge);
        let as_value = serde_json::to_value(&plan).unwrap();
        assert_eq!(ValidPlan::from_value(&as_value).unwrap_err().problems()[0].code(), ProblemCode::TooLarge);
    }
}

#[test]
fn retrieve_memory_takes_top_k_from_the_metadata() {
    let plan = PlanBuilder::new("p", "chat")
        .context_select("ctx", ContextSelectPayload { input: "hi".into(), sources: vec![] })
        .top_k(7)
        .retrieve_memory("memory", "query")
        .prompt_assemble("prompt", PromptAssemblePayload { template: "t".into(), vars: AnyObject::new() })
        .llm_call("llm", LlmCallPayload { prompt: "p".into(), config: AnyObject::new() })
        .persist_session("save", PersistSessionPayload { session_ref: "s".into(), meta: AnyObject::new() })
        .build()
        .unwrap();
    assert_eq!(plan.metadata().top_k.map(|k| k.get()), Some(7));
    let planlock_contract::StepPayload::RetrieveMemory(p) = &plan.steps()[1].payload else { panic!() };
    assert_eq!(p.top_k.get(), 7);
}

fn minimal(ids: [&str; 4]) -> Result<ValidPlan, planlock_contract::Rejection> {
    PlanBuilder::new("p", "chat")
        .context_select(ids[0], ContextSelectPayload { input: "hi".into(), sources: vec![] })
        .prompt_assemble(ids[1], PromptAssemblePayload { template: "t".into(), vars: AnyObject::new() })
        .llm_call(ids[2], LlmCallPayload { prompt: "p".into(), config: AnyObject::new() })
        .persist_session(ids[3], PersistSessionPayload { session_ref: "s".into(), meta: AnyObject::new() })
        .build()
}

#[test]
fn build_reports_what_types_cannot_check_with_the_validators_codes() {
    let codes = |r: Result<ValidPlan, planlock_contract::Rejection>| {
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
