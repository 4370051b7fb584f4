//! The compact form (CONTRACT §19, amended: the model chooses, the contract writes): random walks
//! through its grammar, read as a model's answer, give plans the validator accepts whose links
//! name what the plan persists (or the frame's existing records); what the grammar cannot stop
//! (a server that ignores it) is refused when the answer is read, with a pointer into it.

use std::collections::BTreeSet;

use planlock_contract::grammar::{Choices, GrammarFormat, GrammarRequest, PlanFrame, compact_grammar};
use planlock_contract::{ProblemCode, StepPayload, StepType, ValidPlan};
use serde_json::Value;

use crate::grammar::{Rng, accepts, read_gbnf, walk};

fn frames() -> [PlanFrame; 4] {
    let vars = GrammarRequest::new().vars(["question", "context", "tone"]);
    [
        PlanFrame::default(),
        PlanFrame::new(vars.clone()),
        PlanFrame::new(vars.clone()).existing_decision("d-existing"),
        PlanFrame::new(vars).existing_decision("d-existing").existing_evidence("e-existing"),
    ]
}

/// The link's ids, and the ids of the decision and the evidence the plan persists.
fn ids(plan: &ValidPlan) -> (Option<(String, String)>, Option<String>, Option<String>) {
    let (mut link, mut decision, mut evidence) = (None, None, None);
    for step in plan.steps() {
        match &step.payload {
            StepPayload::LinkDecisionEvidence(p) => link = Some((p.decision_id.clone(), p.evidence_id.clone())),
            StepPayload::PersistDecision(p) => decision = Some(p.decision.id.clone()),
            StepPayload::PersistEvidence(p) => evidence = Some(p.evidence.id.clone()),
            _ => {}
        }
    }
    (link, decision, evidence)
}

#[test]
fn ten_thousand_walks_through_the_choices_grammar_are_valid_plans_whose_links_name_what_is_there() {
    let mut rng = Rng(0x0063_6f6d_7061_6374);
    let (mut lengths, mut links) = (BTreeSet::new(), 0);
    for frame in frames() {
        let rules = read_gbnf(&compact_grammar(&frame, GrammarFormat::Gbnf).unwrap());
        for n in 0..2_500 {
            let mut text = String::new();
            walk(&rules["root"], &rules, &mut rng, &mut text);
            let choices =
                Choices::read(&text, &frame).unwrap_or_else(|r| panic!("walk {n} does not read: {r}\n{text}"));
            let plan = choices.plan(&frame, "a goal").unwrap_or_else(|r| panic!("walk {n}: no plan: {r}\n{text}"));
            lengths.insert(plan.steps().len());
            let (link, decision, evidence) = ids(&plan);
            if let Some((d, e)) = link {
                links += 1;
                let existing = |id: &str, prefix: &str| id == format!("{prefix}-existing");
                assert!(decision.as_deref() == Some(d.as_str()) || existing(&d, "d"), "walk {n}: {d}\n{text}");
                assert!(evidence.as_deref() == Some(e.as_str()) || existing(&e, "e"), "walk {n}: {e}\n{text}");
            }
            // planlock writes what the contract determines: the step ids, the mode's topK.
            for step in plan.steps() {
                assert_eq!(step.id, planlock_contract::grammar::step_id(step.step_type()));
            }
            assert_eq!(plan.metadata().top_k.map(|k| k.get()), Some(5));
        }
    }
    // The walks reach the shortest plan (the four mandatory steps) and the whole one.
    assert_eq!((lengths.first(), lengths.last()), (Some(&4), Some(&12)), "{lengths:?}");
    assert!(links > 1_000, "{links} plans with a link");
}

#[test]
fn a_link_is_in_the_grammar_only_with_what_it_links() {
    let frame = PlanFrame::default();
    let rules = read_gbnf(&compact_grammar(&frame, GrammarFormat::Gbnf).unwrap());
    let q = r#""ContextSelect":{"question":"q"}"#;
    let d = r#""PersistDecision":{"text":"t","strength":"must"}"#;
    let e = r#""PersistEvidence":{"summary":"s"}"#;
    let l = r#""LinkDecisionEvidence":{}"#;
    assert!(accepts(&rules, &format!("{{{q},{d},{e},{l}}}")));
    assert!(accepts(&rules, &format!("{{{q},{d},{e}}}")));
    assert!(!accepts(&rules, &format!("{{{q},{d},{l}}}")));
    assert!(!accepts(&rules, &format!("{{{q},{e},{l}}}")));
    assert!(!accepts(&rules, &format!("{{{q},{l}}}")));
    // With a decision that exists, evidence alone may be linked to it.
    let existing = read_gbnf(&compact_grammar(&frame.existing_decision("d-1"), GrammarFormat::Gbnf).unwrap());
    assert!(accepts(&existing, &format!("{{{q},{e},{l}}}")));
    assert!(!accepts(&existing, &format!("{{{q},{d},{l}}}")));
}

/// What reading `answer` in the default frame refuses: each problem's code and pointer.
fn refused(answer: &str) -> Vec<(ProblemCode, String)> {
    let rejection = Choices::read(answer, &PlanFrame::default()).expect_err(answer);
    rejection.problems().iter().map(|p| (p.code(), p.pointer().to_owned())).collect()
}

#[test]
fn an_answer_the_grammar_would_not_allow_is_refused_with_every_problem_and_where() {
    use ProblemCode::*;
    let q = r#""ContextSelect":{"question":"q"}"#;
    // Both of the link's needs are missing: a problem each.
    let link = (InvalidValue, "/LinkDecisionEvidence".to_owned());
    assert_eq!(
        refused(r#"{"LinkDecisionEvidence":{}}"#),
        [(MissingField, "/ContextSelect".into()), link.clone(), link]
    );
    assert_eq!(refused(&format!(r#"{{{q},"Branch":{{}}}}"#)), [(UnknownField, "/Branch".into())]);
    assert_eq!(
        refused(&format!(r#"{{{q},"PersistMemory":{{"summary":""}}}}"#)),
        [(InvalidValue, "/PersistMemory/summary".into())]
    );
    let long = "x".repeat(201);
    assert_eq!(
        refused(&format!(r#"{{"ContextSelect":{{"question":"{long}"}}}}"#)),
        [(InvalidValue, "/ContextSelect/question".into())]
    );
    assert_eq!(
        refused(&format!(r#"{{{q},"PersistDecision":{{"text":"t"}}}}"#)),
        [(MissingField, "/PersistDecision/strength".into())]
    );
    assert_eq!(refused(&format!(r#"{{{q},"RepoScan":[]}}"#)), [(InvalidType, "/RepoScan".into())]);
    assert_eq!(refused(&format!(r#"{{{q},{q}}}"#))[0].0, DuplicateKey);
    assert_eq!(refused("not json")[0].0, MalformedJson);
    assert_eq!(refused("[1]"), [(InvalidType, String::new())]);
    // Past the plan's size limit, refused before it is parsed.
    let huge = format!(r#"{{"ContextSelect":{{"question":"{}"}}}}"#, "x".repeat(planlock_contract::MAX_PLAN_BYTES));
    assert_eq!(refused(&huge), [(TooLarge, String::new())]);
}

#[test]
fn null_is_a_step_not_chosen_and_prose_around_the_object_is_read_past() {
    let frame = PlanFrame::default();
    let answer = r#"Here: {"RepoScan":null,"ContextSelect":{"question":"q"},"RetrieveMemory":{}} done"#;
    let choices = Choices::read(answer, &frame).unwrap();
    assert!(!choices.has(StepType::RepoScan) && choices.has(StepType::RetrieveMemory));
    let plan = choices.plan(&frame, "g").unwrap();
    let types: Vec<StepType> = plan.steps().iter().map(|s| s.step_type()).collect();
    use StepType::*;
    assert_eq!(types, [ContextSelect, RetrieveMemory, PromptAssemble, LLMCall, PersistSession]);
}

#[test]
fn the_same_answer_gives_the_same_plan_and_another_goal_other_record_ids() {
    let frame = PlanFrame::new(GrammarRequest::new().vars(["question", "context"]));
    let answer = r#"{"ContextSelect":{"question":"q"},"PromptAssemble":{"vars":{"context":"c"}},
        "PersistDecision":{"text":"t","strength":"must"},"PersistEvidence":{"summary":"s"},"LinkDecisionEvidence":{}}"#;
    let choices = Choices::read(answer, &frame).unwrap();
    let (a, b) = (choices.plan(&frame, "goal one").unwrap(), choices.plan(&frame, "goal one").unwrap());
    assert_eq!(a.to_json(), b.to_json());
    let other = choices.plan(&frame, "goal two").unwrap();
    assert_ne!(ids(&a).1, ids(&other).1);
    // The template's variables: the question, and the ones the model wrote.
    let prompt = a.steps().iter().find_map(|s| match &s.payload {
        StepPayload::PromptAssemble(p) => Some(p.clone()),
        _ => None,
    });
    let prompt = prompt.unwrap();
    assert_eq!(prompt.template, "question: {{ question }}\ncontext: {{ context }}");
    assert_eq!(Value::Object(prompt.vars.0), serde_json::json!({ "question": "q", "context": "c" }));
}

#[test]
fn the_choices_grammar_has_the_same_rules_in_lark_and_a_strict_json_schema() {
    let frame = PlanFrame::new(GrammarRequest::new().vars(["question", "context"]));
    let gbnf = compact_grammar(&frame, GrammarFormat::Gbnf).unwrap();
    let lark = compact_grammar(&frame, GrammarFormat::Lark).unwrap();
    let rules =
        |text: &str, defines: &str| text.lines().filter(|l| !l.starts_with(['#', '/']) && l.contains(defines)).count();
    assert_eq!(rules(&gbnf, " ::= "), rules(&lark, ": "));
    let schema: Value = serde_json::from_str(&compact_grammar(&frame, GrammarFormat::JsonSchema).unwrap()).unwrap();
    assert_eq!(schema["additionalProperties"], false);
    let steps: Vec<&String> = schema["properties"].as_object().unwrap().keys().collect();
    assert_eq!(steps.len(), schema["required"].as_array().unwrap().len());
    // An answer in the strict form (every step written, null where not chosen) reads.
    let mut answer = serde_json::Map::new();
    for step in &steps {
        answer.insert((*step).clone(), Value::Null);
    }
    answer.insert("ContextSelect".into(), serde_json::json!({ "question": "q" }));
    answer.insert("PromptAssemble".into(), serde_json::json!({ "vars": { "context": "c" } }));
    let validator = jsonschema::validator_for(&schema).unwrap();
    assert!(validator.is_valid(&Value::Object(answer.clone())));
    Choices::read(&Value::Object(answer).to_string(), &frame).unwrap().plan(&frame, "g").unwrap();
}
