//! `planlock grammar` (CONTRACT §19): the grammar of the plans a model may write, in each syntax,
//! for a profile, and its failures.
#![cfg(feature = "cli")]

use serde_json::Value;

use crate::common::cli::with_input as planlock;

fn stdout(out: &std::process::Output) -> String {
    String::from_utf8(out.stdout.clone()).unwrap()
}

#[test]
fn the_grammar_comes_in_each_syntax_and_as_a_json_report() {
    let gbnf = planlock(&["grammar", "--vars", "question,context"], None);
    assert_eq!(gbnf.status.code(), Some(0));
    let text = stdout(&gbnf);
    assert!(text.starts_with("# planlock plan grammar") && text.contains("\nroot ::= "), "{text}");
    assert!(text.contains(r#"\"vars\":" "{" "\"question\":" scalar "," "\"context\":" scalar "}""#), "{text}");
    // The same text as the library makes.
    let request = planlock::grammar::GrammarRequest::new().vars(["question", "context"]);
    assert_eq!(text, planlock::grammar::grammar(&request, planlock::grammar::GrammarFormat::Gbnf).unwrap());

    let lark = stdout(&planlock(&["grammar", "--syntax", "lark"], None));
    assert!(lark.contains("\nstart: "), "{lark}");
    let schema: Value =
        serde_json::from_str(&stdout(&planlock(&["grammar", "--syntax", "json-schema"], None))).unwrap();
    assert_eq!(schema["title"], "ExecutionPlan");
    let report = planlock(&["grammar", "--format", "json", "--syntax", "lark"], None);
    let report: Value = serde_json::from_str(&stdout(&report)).unwrap();
    assert_eq!((report["syntax"].as_str(), report["grammar"].as_str()), (Some("lark"), Some(lark.as_str())));
}

#[test]
fn a_profiles_grammar_names_its_profile_and_modes() {
    let root = concat!(env!("CARGO_MANIFEST_DIR"), "/examples/policy");
    let out = planlock(&["grammar", "--policy-root", root, "--profile", "profiles/default"], None);
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    let text = stdout(&out);
    // The demo policy's one mode, `chat`, sets topK 5: the only topK its plans carry.
    assert!(text.contains(r#"\"mode\":" "\"chat\"""#) && text.contains(r#""\"topK\":" "5""#), "{text}");
    assert!(!text.contains(r#""\"topK\":" "4""#));
    let missing = planlock(&["grammar", "--policy-root", root, "--profile", "profiles/nope"], None);
    assert_eq!(missing.status.code(), Some(3), "{}", String::from_utf8_lossy(&missing.stderr));
}

#[test]
fn an_unknown_syntax_is_a_usage_error() {
    let out = planlock(&["grammar", "--syntax", "ebnf", "--format", "json"], None);
    assert_eq!(out.status.code(), Some(2));
    let report: Value = serde_json::from_str(&stdout(&out)).unwrap();
    assert_eq!(report["errorCode"], "usage");
    assert!(report["error"].as_str().unwrap().contains("gbnf, lark, json-schema"), "{report}");
}
