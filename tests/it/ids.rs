//! One rule for an id (CONTRACT §19, amended): an id the validator accepts in a payload is an
//! id the contract accepts in the result that echoes it. Every id field of every step type that
//! has one, with the edges of `RECORD_ID` (empty, one character, the most, one more, odd
//! characters), goes through `planlock validate` and then `planlock run`: a plan that validates
//! runs to completion with the demo handlers; one that does not is refused at that field's
//! pointer. On the code before, `"evidence": {"id": ""}` validated and then ended FailFast at
//! `PersistEvidence` ("the result breaks the contract: /id: invalid-value"), halting the session.

use crate::common;

use common::cli::{CliSession, json};
use serde_json::{Value, json};

/// The rule, as CONTRACT §19 states it: 1 to 256 characters, none a control character.
const MAX_RECORD_ID_CHARS: usize = 256;

fn accepted(id: &str) -> bool {
    (1..=MAX_RECORD_ID_CHARS).contains(&id.chars().count()) && !id.chars().any(char::is_control)
}

/// The values each id field is given.
fn edges() -> Vec<String> {
    let most = MAX_RECORD_ID_CHARS;
    vec![
        String::new(),
        "a".into(),
        "x".repeat(most),
        "x".repeat(most + 1),
        "é".repeat(most),
        "id with spaces".into(),
        r#"quote" back\slash /slash"#.into(),
        "emoji 🙂 and \u{202e}rtl".into(),
        "bell\u{7}".into(),
        "next line\u{85}".into(),
        "tab\t".into(),
    ]
}

/// The id fields, each with the fields that must name the same record for the plan to hang
/// together (a link names the decision and the evidence the plan persists).
const FIELDS: [(&str, &[&str]); 4] = [
    ("/steps/8/payload/decision/id", &["/steps/8/payload/decision/rootId", "/steps/10/payload/decisionId"]),
    ("/steps/8/payload/decision/rootId", &[]),
    ("/steps/9/payload/evidence/id", &["/steps/10/payload/evidenceId"]),
    ("/steps/10/payload/decisionId", &["/steps/8/payload/decision/id", "/steps/8/payload/decision/rootId"]),
];

#[test]
fn every_id_the_validator_accepts_runs_and_every_other_is_refused_where_it_is() {
    let demo: Value = serde_json::from_str(common::DEMO_PLAN).unwrap();
    let (mut ran, mut refused) = (0, 0);
    for (field, same) in FIELDS {
        for value in edges() {
            let mut plan = demo.clone();
            plan["steps"][0]["payload"]["repoPath"] = json!(concat!(env!("CARGO_MANIFEST_DIR"), "/src"));
            for at in std::iter::once(field).chain(same.iter().copied()) {
                *plan.pointer_mut(at).unwrap() = json!(value);
            }
            let session = CliSession::new(&plan.to_string());
            let checked =
                common::cli::planlock().args(["--format", "json", "validate"]).arg(&session.plan).output().unwrap();
            let shown = value.escape_debug().to_string();
            let shown: String = shown.chars().take(40).collect();
            if accepted(&value) {
                assert_eq!(checked.status.code(), Some(0), "{field} = \"{shown}\": {}", json(&checked));
                let out = session.cli(&["run", "--format", "json"]);
                let report = json(&out);
                assert_eq!(report["outcome"], "completed", "{field} = \"{shown}\" validated but: {report}");
                ran += 1;
            } else {
                assert_eq!(checked.status.code(), Some(1), "{field} = \"{shown}\"");
                let problems = json(&checked)["problems"].clone();
                let here =
                    problems.as_array().unwrap().iter().any(|p| p["pointer"] == field && p["code"] == "invalid-value");
                assert!(here, "{field} = \"{shown}\": {problems}");
                refused += 1;
            }
        }
    }
    assert!(ran >= 20 && refused >= 12, "{ran} ran, {refused} refused");
}
