//! Property tests: valid plans round-trip unchanged; no input makes validation panic, and every
//! rejection is a well-formed report; the bytes path and the value path agree; the direct
//! canonical writer agrees with the serde-based one; the producers' JSON Schema accepts every
//! plan planlock accepts.

use planlock_contract::schema::*;
use planlock_contract::{
    AnyObject, Budgets, ExecutionPlan, PlanMetadata, PositiveInt, ProblemCode, Rejection, StepDefinition, StepPayload,
    StepType, Timeouts, ValidPlan, ValidatorSignature,
};
use proptest::prelude::*;
use serde_json::{Map, Value, json};

fn text() -> impl Strategy<Value = String> {
    prop_oneof![any::<String>(), "[a-z {}]{0,12}"]
}

/// A record id the contract accepts (`RECORD_ID`): 1 to 256 characters, none a control
/// character; the edges included.
fn id() -> impl Strategy<Value = String> {
    prop_oneof![
        "[a-z0-9._:-]{1,12}",
        "[^\\p{Cc}]{1,40}",
        Just("x".repeat(planlock_contract::contract::rules::MAX_RECORD_ID_CHARS)),
    ]
}

fn pos() -> impl Strategy<Value = PositiveInt> {
    (1u64..=planlock_contract::MAX_SAFE_INTEGER).prop_map(|n| PositiveInt::new(n).unwrap())
}

fn json_value() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        (-(planlock_contract::MAX_SAFE_INTEGER as i64)..=planlock_contract::MAX_SAFE_INTEGER as i64)
            .prop_map(|n| json!(n)),
        (-1e15f64..1e15).prop_map(|f| json!(f)),
        text().prop_map(Value::String),
    ];
    leaf.prop_recursive(6, 48, 6, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..6).prop_map(Value::Array),
            prop::collection::btree_map(text(), inner, 0..6).prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    })
}

fn object() -> impl Strategy<Value = AnyObject> {
    prop::collection::btree_map(text(), json_value(), 0..5)
        .prop_map(|m| AnyObject(m.into_iter().collect::<Map<_, _>>()))
}

fn decision() -> impl Strategy<Value = Decision> {
    (
        id(),
        id(),
        pos(),
        text(),
        prop_oneof![Just("global".to_owned()), Just("axis".to_owned()), "domain:[a-z]{1,8}"],
        any::<bool>(),
        prop::option::of(id()),
    )
        .prop_map(|(id, root_id, version, text, scope, is_active, previous_version_id)| Decision {
            id,
            root_id,
            version,
            text,
            strength: "must".into(),
            scope,
            is_active,
            previous_version_id,
        })
}

fn payload(ty: StepType, top_k: PositiveInt) -> BoxedStrategy<StepPayload> {
    match ty {
        StepType::RepoScan => text().prop_map(|repo_path| RepoScanPayload { repo_path }.into()).boxed(),
        StepType::ContextSelect => (text(), prop::collection::vec(text(), 0..4))
            .prop_map(|(input, sources)| ContextSelectPayload { input, sources }.into())
            .boxed(),
        StepType::RetrieveMemory => text().prop_map(move |input| RetrieveMemoryPayload { input, top_k }.into()).boxed(),
        StepType::RetrieveDecisionContext => (text(), prop::option::of(text()))
            .prop_map(|(input, current_domain)| RetrieveDecisionContextPayload { input, current_domain }.into())
            .boxed(),
        StepType::PromptAssemble => {
            (text(), object()).prop_map(|(template, vars)| PromptAssemblePayload { template, vars }.into()).boxed()
        }
        StepType::LLMCall => {
            (text(), object()).prop_map(|(prompt, config)| LlmCallPayload { prompt, config }.into()).boxed()
        }
        StepType::SummarizeMemory => text().prop_map(|response| SummarizeMemoryPayload { response }.into()).boxed(),
        StepType::PersistMemory => (text(), prop::collection::vec(text(), 0..4), text())
            .prop_map(|(summary, keywords, session_ref)| PersistMemoryPayload { summary, keywords, session_ref }.into())
            .boxed(),
        StepType::PersistDecision => decision().prop_map(|decision| PersistDecisionPayload { decision }.into()).boxed(),
        StepType::PersistEvidence => (id(), text(), text())
            .prop_map(|(id, summary, source)| {
                PersistEvidencePayload { evidence: Evidence { id, summary, source } }.into()
            })
            .boxed(),
        StepType::LinkDecisionEvidence => (id(), id())
            .prop_map(|(decision_id, evidence_id)| LinkDecisionEvidencePayload { decision_id, evidence_id }.into())
            .boxed(),
        StepType::PersistSession => (text(), object())
            .prop_map(|(session_ref, meta)| PersistSessionPayload { session_ref, meta }.into())
            .boxed(),
    }
}

fn signature() -> impl Strategy<Value = ValidatorSignature> {
    ("[a-z-]{1,10}", "[0-9]{1,3}", "[0-9a-f]{64}").prop_map(|(id, version, config_hash)| ValidatorSignature {
        id,
        version,
        config_hash,
    })
}

/// Any plan the contract allows.
fn valid_plan() -> impl Strategy<Value = ExecutionPlan> {
    let meta = (
        "[a-z/]{1,20}",
        "[a-z]{1,8}",
        pos(),
        prop::option::of((prop::option::of(pos()), prop::option::of(pos()))),
        prop::option::of(prop::option::of(pos())),
    );
    (any::<u8>(), meta, prop::collection::vec(signature(), 0..3), prop::collection::vec(signature(), 0..2))
        .prop_flat_map(|(optional, (profile, mode, top_k, timeouts, budgets), validators, post_validators)| {
            let mut bit = 0;
            let types: Vec<StepType> = StepType::ALL
                .into_iter()
                .filter(|t| {
                    if t.is_mandatory() {
                        return true;
                    }
                    bit += 1;
                    optional & (1 << (bit - 1)) != 0
                })
                .collect();
            let payloads: Vec<_> = types.iter().map(|&t| payload(t, top_k)).collect();
            let has_memory = types.contains(&StepType::RetrieveMemory);
            (payloads, prop::collection::hash_set("[a-zA-Z0-9_.-]{1,16}", types.len()), any::<bool>()).prop_map(
                move |(payloads, ids, keep_top_k)| {
                    let mut metadata = PlanMetadata::new(profile.clone(), mode.clone());
                    metadata.top_k = (has_memory || keep_top_k).then_some(top_k);
                    metadata.timeouts = timeouts.map(|(llm_ms, io_ms)| Timeouts { llm_ms, io_ms });
                    metadata.budgets = budgets.map(|prompt_tokens| Budgets { prompt_tokens });
                    let steps = ids.into_iter().zip(payloads).map(|(id, p)| StepDefinition::new(id, p)).collect();
                    ExecutionPlan {
                        validators: validators.clone(),
                        post_validators: post_validators.clone(),
                        ..ExecutionPlan::new(metadata, steps)
                    }
                },
            )
        })
}

fn assert_well_formed(r: &Rejection) {
    assert!(!r.problems().is_empty());
    for p in r.problems() {
        assert!(ProblemCode::ALL.contains(&p.code()));
        assert!(p.pointer().is_empty() || p.pointer().starts_with('/'), "{p}");
        assert!(!p.message().is_empty());
    }
    assert_eq!(r.class(), r.problems().iter().map(|p| p.class()).max().unwrap());
}

/// A random change to a plan document.
#[derive(Debug, Clone)]
enum Edit {
    Replace(usize, Value),
    Remove(usize),
    Insert(usize, String, Value),
    SwapSteps(usize, usize),
    DuplicateStep(usize),
    /// An object becomes the array of its values, which serde's derived structs would accept.
    ObjectToArray(usize),
}

fn edit() -> impl Strategy<Value = Edit> {
    prop_oneof![
        (any::<usize>(), json_value()).prop_map(|(i, v)| Edit::Replace(i, v)),
        any::<usize>().prop_map(Edit::Remove),
        (
            any::<usize>(),
            prop_oneof![Just("onSuccess".to_owned()), Just("topK".to_owned()), "[a-z]{1,6}"],
            json_value()
        )
            .prop_map(|(i, k, v)| Edit::Insert(i, k, v)),
        (any::<usize>(), any::<usize>()).prop_map(|(a, b)| Edit::SwapSteps(a, b)),
        any::<usize>().prop_map(Edit::DuplicateStep),
        any::<usize>().prop_map(Edit::ObjectToArray),
    ]
}

/// Every (parent, key-or-index) location in the document, in a fixed order.
fn locations(v: &Value, at: Vec<String>, out: &mut Vec<Vec<String>>) {
    match v {
        Value::Object(m) => {
            for (k, c) in m {
                let mut p = at.clone();
                p.push(k.clone());
                out.push(p.clone());
                locations(c, p, out);
            }
        }
        Value::Array(a) => {
            for (i, c) in a.iter().enumerate() {
                let mut p = at.clone();
                p.push(i.to_string());
                out.push(p.clone());
                locations(c, p, out);
            }
        }
        _ => {}
    }
}

fn at_mut<'a>(v: &'a mut Value, path: &[String]) -> &'a mut Value {
    path.iter().fold(v, |v, seg| match v {
        Value::Object(m) => m.get_mut(seg).unwrap(),
        Value::Array(a) => &mut a[seg.parse::<usize>().unwrap()],
        _ => unreachable!(),
    })
}

fn apply(doc: &mut Value, e: &Edit) {
    let mut locs = Vec::new();
    locations(doc, Vec::new(), &mut locs);
    match e {
        Edit::Replace(i, v) => *at_mut(doc, &locs[i % locs.len()]) = v.clone(),
        Edit::Remove(i) => {
            let loc = &locs[i % locs.len()];
            let (last, parent) = loc.split_last().unwrap();
            match at_mut(doc, parent) {
                Value::Object(m) => {
                    m.remove(last);
                }
                Value::Array(a) => {
                    a.remove(last.parse::<usize>().unwrap());
                }
                _ => {}
            }
        }
        Edit::Insert(i, k, v) => {
            let loc = &locs[i % locs.len()];
            if let Value::Object(m) = at_mut(doc, loc) {
                m.insert(k.clone(), v.clone());
            }
        }
        Edit::SwapSteps(a, b) => {
            // An earlier edit may have removed steps: index the array as it is now.
            if let Some(s) = doc["steps"].as_array_mut().filter(|s| !s.is_empty()) {
                let len = s.len();
                s.swap(a % len, b % len);
            }
        }
        Edit::ObjectToArray(i) => {
            let objects: Vec<_> = locs.iter().filter(|l| at_mut(doc, l).is_object()).cloned().collect();
            let target = match objects.get(i % objects.len().max(1)) {
                Some(loc) => at_mut(doc, loc),
                None => doc,
            };
            if let Value::Object(m) = target.clone() {
                *target = Value::Array(m.into_iter().map(|(_, v)| v).collect());
            }
        }
        Edit::DuplicateStep(i) => {
            if let Some(s) = doc["steps"].as_array_mut().filter(|s| !s.is_empty()) {
                let c = s[i % s.len()].clone();
                s.push(c);
            }
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    #[test]
    fn valid_plans_survive_serialize_then_validate(plan in valid_plan()) {
        let valid = ValidPlan::from_plan(plan.clone()).map_err(|e| TestCaseError::fail(e.to_string()))?;
        let json = valid.to_json();
        let again = ValidPlan::from_str(&json).map_err(|e| TestCaseError::fail(format!("{e}\n{json}")))?;
        prop_assert_eq!(again.plan(), &plan);
        let from_value = ValidPlan::from_value(&serde_json::from_str(&json).unwrap()).map_err(|e| TestCaseError::fail(e.to_string()))?;
        prop_assert_eq!(from_value.plan(), &plan);
    }

    #[test]
    fn the_direct_canonical_writer_agrees_with_the_serde_one(plan in valid_plan(), modes in json_value()) {
        // The plan hash writes plans directly (no serde); `hash_document_bytes` goes through
        // the general serde-based writer. Both must give the same bytes for any plan.
        let valid = ValidPlan::from_plan(plan).map_err(|e| TestCaseError::fail(e.to_string()))?;
        let profile = planlock_contract::PolicyProfile {
            path: "profiles/p\u{1}\"q".into(),
            modes,
            triggers: json!([{"on": "x"}]),
            bundles: json!({}),
        };
        let bytes = planlock_contract::hash::hash_document_bytes(&profile, &valid).unwrap();
        prop_assert_eq!(planlock_contract::plan_hash(&profile, &valid), planlock_contract::Digest::of(&bytes));
        let parts = planlock_contract::HashParts::of(&profile, &valid);
        for (step, part) in valid.steps().iter().zip(&parts.steps) {
            prop_assert_eq!(part.digest, planlock_contract::Digest::of(&planlock_contract::canonical_json(step).unwrap()));
        }
        prop_assert_eq!(parts.metadata, planlock_contract::Digest::of(&planlock_contract::canonical_json(valid.metadata()).unwrap()));
        let both = (&valid.plan().validators, &valid.plan().post_validators);
        prop_assert_eq!(parts.validators, planlock_contract::Digest::of(&planlock_contract::canonical_json(&both).unwrap()));
    }

    #[test]
    fn arbitrary_bytes_never_panic(bytes in prop::collection::vec(any::<u8>(), 0..512)) {
        if let Err(r) = ValidPlan::from_slice(&bytes) { assert_well_formed(&r); }
    }

    #[test]
    fn arbitrary_json_never_panics(v in json_value()) {
        let text = v.to_string();
        match (ValidPlan::from_str(&text), ValidPlan::from_value(&v)) {
            (Err(a), Err(b)) => { assert_well_formed(&a); prop_assert_eq!(a, b); }
            (a, b) => prop_assert_eq!(a.is_ok(), b.is_ok()),
        }
    }

    /// Edited plans: the fast bytes path, the full report and the value walker agree.
    #[test]
    fn edited_plans_get_the_same_verdict_on_every_path(plan in valid_plan(), edits in prop::collection::vec(edit(), 1..4)) {
        let mut doc = serde_json::to_value(&plan).unwrap();
        for e in &edits { apply(&mut doc, e); }
        let text = doc.to_string();
        let from_bytes = ValidPlan::from_str(&text);
        let from_value = ValidPlan::from_value(&doc);
        match (&from_bytes, &from_value) {
            (Ok(a), Ok(b)) => prop_assert_eq!(a, b),
            (Err(a), Err(b)) => { assert_well_formed(a); prop_assert_eq!(a, b); }
            _ => prop_assert!(false, "paths disagree on {}: {:?} vs {:?}", text, from_bytes.err(), from_value.err()),
        }
        // The producers' JSON Schema never rejects what planlock accepts.
        if !SCHEMA.is_valid(&doc) {
            prop_assert!(from_bytes.is_err(), "the schema rejects a plan planlock accepts: {}", text);
        }
    }

    #[test]
    fn the_json_schema_accepts_every_valid_plan(plan in valid_plan()) {
        let doc = serde_json::to_value(ValidPlan::from_plan(plan).map_err(|e| TestCaseError::fail(e.to_string()))?.plan()).unwrap();
        let errors: Vec<String> = SCHEMA.iter_errors(&doc).map(|e| format!("{e} at {}", e.instance_path())).collect();
        prop_assert!(errors.is_empty(), "{:?}\n{}", errors, doc);
    }
}

/// The committed JSON Schema for producers.
static SCHEMA: std::sync::LazyLock<jsonschema::Validator> = std::sync::LazyLock::new(|| {
    let schema: Value = serde_json::from_str(include_str!("../../../schema/plan-v1.schema.json")).unwrap();
    jsonschema::validator_for(&schema).unwrap()
});

#[test]
fn free_form_values_are_held_to_the_limits_in_rust_built_plans() {
    let mut plan = ValidPlan::from_str(include_str!("../../../tests/fixtures/full_plan.json")).unwrap().into_plan();
    if let StepPayload::LLMCall(p) = &mut plan.steps[5].payload {
        p.config.0.insert("big".into(), json!(u64::MAX));
    }
    let err = ValidPlan::from_plan(plan).unwrap_err();
    assert_eq!(err.problems()[0].pointer(), "/steps/5/payload/config/big");
}

#[test]
fn rust_built_plans_meet_the_depth_limit_exactly_where_parsed_ones_do() {
    // The typed check's quick answer and its full walk must agree with the parser at the
    // boundary, for free-form values in a payload object and in a free-form value.
    fn nested(levels: usize) -> Value {
        (0..levels).fold(json!(1), |inner, _| json!([inner]))
    }
    let base = ValidPlan::from_str(include_str!("../../../tests/fixtures/full_plan.json")).unwrap().into_plan();
    let mut verdicts = Vec::new();
    for levels in 55..=66 {
        let mut plan = base.clone();
        if let StepPayload::LLMCall(p) = &mut plan.steps[5].payload {
            p.config.0.insert("deep".into(), nested(levels));
        }
        let json = serde_json::to_string(&plan).unwrap();
        let typed = ValidPlan::from_plan(plan.clone()).map(|_| ()).map_err(|e| e.problems()[0].code());
        let parsed = ValidPlan::from_str(&json).map(|_| ()).map_err(|e| e.problems()[0].code());
        assert_eq!(typed, parsed, "{levels} levels");
        verdicts.push(typed);
    }
    // The range straddles the limit: accepted below it, `too-deep` above.
    assert!(verdicts.first().is_some_and(Result::is_ok), "{verdicts:?}");
    assert!(verdicts.last().is_some_and(|v| v.as_ref().is_err_and(|c| c.as_str() == "too-deep")), "{verdicts:?}");
}
