//! The plan hash: SHA-256 of the canonical hash document (the profile path, the three policy
//! files and the plan); every part changes it, formatting and legacy forms do not.

use planlock_contract::profile::PolicyProfile;
use planlock_contract::{ValidPlan, canonical_json, plan_hash};
use serde_json::{Value, json};

const FULL: &str = include_str!("../../../tests/fixtures/full_plan.json");

fn profile() -> PolicyProfile {
    PolicyProfile {
        path: "profiles/default".into(),
        modes: json!({"chat": {"tone": "friendly"}}),
        triggers: json!([{"on": "greeting"}]),
        bundles: json!({}),
    }
}

#[test]
fn legacy_plans_and_empty_validator_lists_hash_the_same() {
    let mut v: Value = serde_json::from_str(FULL).unwrap();
    v["postValidators"] = json!([]);
    let with = ValidPlan::from_value(&v).unwrap();
    v.as_object_mut().unwrap().remove("postValidators");
    let without = ValidPlan::from_value(&v).unwrap();
    assert_eq!(plan_hash(&profile(), &with), plan_hash(&profile(), &without));
}

#[test]
fn every_part_of_the_hash_document_changes_the_hash() {
    let plan = ValidPlan::from_str(FULL).unwrap();
    let base = plan_hash(&profile(), &plan);
    let mut p = profile();
    p.path = "profiles/other".into();
    assert_ne!(plan_hash(&p, &plan), base);
    let edits: [fn(&mut PolicyProfile); 3] =
        [|p| p.modes = json!({}), |p| p.triggers = json!([]), |p| p.bundles = json!(null)];
    for edit in edits {
        let mut p = profile();
        edit(&mut p);
        assert_ne!(plan_hash(&p, &plan), base);
    }
    let mut v: Value = serde_json::from_str(FULL).unwrap();
    v["validators"][0]["version"] = json!("3");
    assert_ne!(plan_hash(&profile(), &ValidPlan::from_value(&v).unwrap()), base, "validator signatures count");
    // Key order and whitespace of the plan document do not.
    let reordered = ValidPlan::from_str(&FULL.replace("\n", " ")).unwrap();
    assert_eq!(plan_hash(&profile(), &reordered), base);
}

#[test]
fn the_hash_is_sha256_of_the_canonical_document() {
    let plan = ValidPlan::from_str(FULL).unwrap();
    let bytes = planlock_contract::hash::hash_document_bytes(&profile(), &plan).unwrap();
    let text = String::from_utf8(bytes.clone()).unwrap();
    assert!(text.starts_with(r#"{"bundles":{},"executionPlan":{"extensions":[],"metadata":{"budgets""#), "{text}");
    assert_eq!(whitespace_outside_strings(&text), None, "{text}");
    assert_eq!(plan_hash(&profile(), &plan), planlock_contract::Digest::of(&bytes));
}

/// The offset of the first whitespace byte outside a JSON string, if there is one.
fn whitespace_outside_strings(json: &str) -> Option<usize> {
    let (mut in_string, mut escaped) = (false, false);
    for (i, b) in json.bytes().enumerate() {
        match (in_string, escaped, b) {
            (true, true, _) => escaped = false,
            (true, false, b'\\') => escaped = true,
            (true, false, b'"') | (false, _, b'"') => in_string = !in_string,
            (false, _, b' ' | b'\n' | b'\r' | b'\t') => return Some(i),
            _ => {}
        }
    }
    None
}

#[test]
fn the_whitespace_check_sees_whitespace_between_members_not_inside_strings() {
    assert_eq!(whitespace_outside_strings(r#"{"a b":"c \" d"}"#), None);
    assert_eq!(whitespace_outside_strings(r#"{"a":1, "b":2}"#), Some(7));
}

#[test]
fn yaml_formatting_and_comments_do_not_change_the_hash() {
    let parse = |text| planlock_contract::yaml::parse("modes.yaml", text).unwrap();
    let plan = ValidPlan::from_str(FULL).unwrap();
    let mut a = profile();
    a.modes = parse("# the modes\nchat:\n  tone: friendly   # trailing comment\n  tags:\n    - a\n");
    let mut b = profile();
    b.modes = parse("{chat: {tags: ['a'], tone: \"friendly\"}}");
    assert_eq!(plan_hash(&a, &plan), plan_hash(&b, &plan));
}

#[test]
fn the_direct_writer_agrees_with_serde_json_canonicalizer_on_plans_and_the_hash_document() {
    let plan = ValidPlan::from_str(FULL).unwrap();
    assert_eq!(canonical_json(plan.plan()).unwrap(), serde_json_canonicalizer::to_vec(plan.plan()).unwrap());
    let doc = planlock_contract::hash::hash_document_bytes(&profile(), &plan).unwrap();
    let as_value: Value = serde_json::from_slice(&doc).unwrap();
    assert_eq!(doc, serde_json_canonicalizer::to_vec(&as_value).unwrap());
}
