//! The `planlock` binary: exit codes, JSON report shape, stdin input.

use std::process::Output;

use serde_json::Value;

const FULL: &str = include_str!("../fixtures/full_plan.json");

use crate::common::cli::with_input as planlock;

fn json_report(out: &Output) -> Value {
    let stdout = String::from_utf8(out.stdout.clone()).unwrap();
    assert_eq!(stdout.lines().count(), 1, "exactly one JSON object: {stdout}");
    serde_json::from_str(&stdout).unwrap()
}

#[test]
fn valid_plan_from_a_file_exits_0() {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/full_plan.json");
    let out = planlock(&["validate", path], None);
    assert_eq!(out.status.code(), Some(0));
    assert!(String::from_utf8_lossy(&out.stdout).contains("valid"));
    let out = planlock(&["validate", "--format", "json", path], None);
    assert_eq!(out.status.code(), Some(0));
    assert_eq!(json_report(&out), serde_json::json!({"valid": true, "class": null, "problems": [], "error": null}));
}

#[test]
fn cycle_fail_rejection_exits_1_with_every_problem() {
    let bad = FULL
        .replace(r#""type": "PromptAssemble""#, r#""type": "PromptAssembly""#)
        .replace(r#""id": "ctx""#, r#""id": "scan""#);
    let out = planlock(&["validate", "--format", "json", "-"], Some(&bad));
    assert_eq!(out.status.code(), Some(1));
    let report = json_report(&out);
    assert_eq!(report["valid"], false);
    assert_eq!(report["class"], "CycleFail");
    let problems = report["problems"].as_array().unwrap();
    let got: Vec<_> = problems.iter().map(|p| (p["code"].as_str().unwrap(), p["pointer"].as_str().unwrap())).collect();
    assert_eq!(got, [("unknown-step-type", "/steps/4/type"), ("duplicate-step-id", "/steps/1/id")]);
    for p in problems {
        let keys: Vec<_> = p.as_object().unwrap().keys().map(String::as_str).collect();
        assert_eq!(keys, ["class", "code", "message", "pointer"]);
        assert_eq!(p["class"], "CycleFail");
    }
}

#[test]
fn fail_fast_rejection_exits_3() {
    let bad = FULL.replace(r#""step_contract_version": "1""#, r#""step_contract_version": "2""#);
    let out = planlock(&["validate", "-"], Some(&bad));
    assert_eq!(out.status.code(), Some(3));
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(text.contains("/step_contract_version: unsupported-version [FailFast]"), "{text}");
}

#[test]
fn text_output_is_one_line_per_problem_with_its_pointer() {
    let out = planlock(&["validate", "-"], Some("{\"step_contract_version\":\"1\",\"extensions\":[],\"x\":1}"));
    assert_eq!(out.status.code(), Some(1));
    let text = String::from_utf8(out.stdout).unwrap();
    let lines: Vec<_> = text.lines().collect();
    assert_eq!(lines.len(), 4, "{text}");
    assert!(lines[1].starts_with("/x: unknown-field"));
    assert!(lines[2].starts_with("/metadata: missing-field"));
    assert!(lines[3].starts_with("/steps: missing-field"));
}

#[test]
fn usage_and_io_errors_exit_2() {
    assert_eq!(planlock(&["validate", "/no/such/plan.json"], None).status.code(), Some(2));
    assert_eq!(planlock(&["validate"], None).status.code(), Some(2));
    assert_eq!(planlock(&["validate", "--format", "yaml", "-"], Some("{}")).status.code(), Some(2));
    assert_eq!(planlock(&["frobnicate"], None).status.code(), Some(2));
    assert_eq!(planlock(&["--help"], None).status.code(), Some(0));
}

#[test]
fn malformed_input_is_a_report_not_a_crash() {
    let out = planlock(&["validate", "--format", "json", "-"], Some("\u{0}\u{1}garbage"));
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(json_report(&out)["problems"][0]["code"], "malformed-json");
}
