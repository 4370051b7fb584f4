//! Nothing from outside reaches a terminal raw (CONTRACT §11): strings carrying terminal
//! sequences (ESC, OSC, CSI, BEL, the C1 CSI), bidi overrides and isolates and zero-width
//! characters are put into every field a command prints — a plan's strings (in problem lines
//! and in what is stored: memories, decisions, evidence), a bundle's id, a paused record's
//! reason, a model server's answer — and every command's stdout and stderr, in text and in JSON,
//! is searched for them: zero raw characters. The JSON output still decodes to the exact
//! strings.
#![cfg(all(feature = "openai", unix))]

use crate::common;

use std::path::Path;
use std::process::Output;

use serde_json::{Value, json};

/// Sets the terminal's title (OSC … BEL), clears the screen (CSI 2J), recolours (C1 CSI),
/// reverses the text after it (RLO), isolates (LRI), hides (ZWSP, BOM, word joiner).
const HOSTILE: &str = "t\u{1b}]0;pwned\u{7}\u{1b}[2J\u{9b}31m\u{202e}gnp.exe\u{2066}i\u{200b}\u{feff}\u{2060}d";

/// The characters that must never be written raw: C0 but the line break, DEL, C1, the bidi
/// embeddings, overrides, isolates and marks, and the zero-width characters. (Written out here,
/// not taken from the library, so the test does not share the code it checks.)
fn raw_count(text: &str) -> usize {
    text.chars()
        .filter(|&c| {
            let c = c as u32;
            (c < 0x20 && c != 0x0A)
                || (0x7F..=0x9F).contains(&c)
                || (0x202A..=0x202E).contains(&c)
                || (0x2066..=0x2069).contains(&c)
                || (0x200B..=0x200F).contains(&c)
                || [0x061C, 0x2060, 0xFEFF].contains(&c)
        })
        .count()
}

struct Case {
    root: tempfile::TempDir,
    policy: tempfile::TempDir,
    dir: tempfile::TempDir,
}

impl Case {
    fn new() -> Case {
        let case = Case {
            root: tempfile::tempdir().unwrap(),
            policy: tempfile::tempdir().unwrap(),
            dir: tempfile::tempdir().unwrap(),
        };
        common::policy(case.policy.path(), "friendly");
        case
    }

    fn file(&self, name: &str, text: &str) -> std::path::PathBuf {
        let path = self.dir.path().join(name);
        std::fs::write(&path, text).unwrap();
        path
    }

    /// `planlock ARGS` with `--root` (where the command takes one) and `--policy-root` (for `run`
    /// and `resume`), in both formats; checks each output, and returns the text one's stdout
    /// and stderr, the JSON one's output and its report.
    fn each_format(&self, args: &[&str], tail: &[&Path]) -> (String, Output, Value) {
        let mut json = Value::Null;
        let (mut last, mut text) = (None, String::new());
        for format in ["text", "json"] {
            let mut cmd = crate::common::cli::planlock();
            cmd.args(args).args(["--format", format]);
            if !matches!(args[0], "validate" | "hash") {
                cmd.arg("--root").arg(self.root.path());
            }
            if matches!(args[0], "run" | "resume") {
                cmd.arg("--policy-root").arg(self.policy.path());
            }
            let out = cmd.args(tail).output().unwrap();
            let (stdout, stderr) = (String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
            assert_eq!(raw_count(&stdout), 0, "{args:?} ({format}): raw characters on stdout: {stdout:?}");
            assert_eq!(raw_count(&stderr), 0, "{args:?} ({format}): raw characters on stderr: {stderr:?}");
            if format == "json" {
                json = serde_json::from_str(&stdout).unwrap_or_else(|e| panic!("{args:?}: {e}: {stdout}"));
            } else {
                text = format!("{stdout}{stderr}");
            }
            last = Some(out);
        }
        (text, last.unwrap(), json)
    }
}

/// The demo plan with `edit` applied, hostile strings where the test puts them.
fn plan(edit: impl FnOnce(&mut Value)) -> String {
    let mut v: Value = serde_json::from_str(common::DEMO_PLAN).unwrap();
    v["steps"][0]["payload"]["repoPath"] = json!(concat!(env!("CARGO_MANIFEST_DIR"), "/cli/src"));
    edit(&mut v);
    serde_json::to_string_pretty(&v).unwrap()
}

fn step<'a>(v: &'a mut Value, id: &str) -> &'a mut Value {
    v["steps"].as_array_mut().unwrap().iter_mut().find(|s| s["id"] == id).unwrap()
}

#[test]
fn a_rejected_plans_strings_are_escaped_in_validate_and_run() {
    let case = Case::new();
    // An unknown member and an unknown step type, each named by the hostile string.
    let bad = case.file(
        "bad.json",
        &plan(|v| {
            step(v, "ctx")["payload"][HOSTILE] = json!(1);
            step(v, "summary")["type"] = json!(HOSTILE);
        }),
    );
    let (text, _, report) = case.each_format(&["validate"], &[&bad]);
    assert!(text.contains("\\u{202e}"), "shown escaped: {text}");
    let messages: Vec<&str> =
        report["problems"].as_array().unwrap().iter().map(|p| p["message"].as_str().unwrap()).collect();
    assert!(messages.iter().any(|m| m.contains(HOSTILE)), "JSON keeps the exact string: {messages:?}");
    case.each_format(&["run"], &[&bad]);
    case.each_format(&["hash", "--policy-root", case.policy.path().to_str().unwrap()], &[&bad]);
}

#[test]
fn stored_strings_a_bundle_id_and_a_records_reason_are_escaped_in_every_command() {
    let case = Case::new();
    let good = case.file(
        "plan.json",
        &plan(|v| {
            step(v, "remember")["payload"]["summary"] = json!(format!("summary {HOSTILE}"));
            // An id holds no control character (CONTRACT §19): the rest of the hostile string.
            let id: String = HOSTILE.chars().filter(|c| !c.is_control()).collect();
            let decision = &mut step(v, "decide")["payload"]["decision"];
            for member in ["id", "rootId"] {
                decision[member] = json!(format!("d-{id}"));
            }
            decision["text"] = json!(format!("text {HOSTILE}"));
            decision["strength"] = json!(HOSTILE);
            decision["scope"] = json!("global");
            step(v, "evidence")["payload"]["evidence"]["id"] = json!(format!("e-{id}"));
            let link = &mut step(v, "link")["payload"];
            link["decisionId"] = json!(format!("d-{id}"));
            link["evidenceId"] = json!(format!("e-{id}"));
        }),
    );
    let bundle = case.dir.path().join("bundle");
    std::fs::create_dir(&bundle).unwrap();
    std::fs::write(bundle.join("manifest.json"), json!({ "bundle_id": HOSTILE, "version": "1" }).to_string()).unwrap();
    let (_, out, report) = case.each_format(&["run", "--bundle", bundle.to_str().unwrap()], &[&good]);
    assert_eq!(out.status.code(), Some(0), "{report}");

    let (text, _, status) = case.each_format(&["status"], &[]);
    assert_eq!(status["pin"]["bundle_id"], HOSTILE, "exact in JSON");
    assert!(text.contains("\\u{202e}"), "shown escaped: {text}");
    let (_, _, found) = case.each_format(&["memory", "search", "summary"], &[]);
    assert_eq!(found["items"][0]["summary"], format!("summary {HOSTILE}"));
    let (_, _, decisions) = case.each_format(&["decisions"], &[]);
    assert_eq!(decisions["decisions"][0]["strength"], HOSTILE);
    let id: String = HOSTILE.chars().filter(|c| !c.is_control()).collect();
    assert_eq!(decisions["anchors"][0]["evidenceId"], format!("e-{id}"));

    // A paused cycle's record whose reason was edited: `status`, `run` and `abandon` show it.
    let reviewed =
        case.file("reviewed.json", &plan(|v| v["validators"] = json!([planlock::demo::ReviewGate::signature()])));
    let root = tempfile::tempdir().unwrap();
    let case = Case { root, ..case };
    let (_, out, _) = case.each_format(&["run"], &[&reviewed]);
    assert_eq!(out.status.code(), Some(4));
    let record = case.root.path().join("ops/runtime/intervention.json");
    let mut v: Value = serde_json::from_slice(&std::fs::read(&record).unwrap()).unwrap();
    v["reason"] = json!(format!("reason {HOSTILE}"));
    std::fs::write(&record, serde_json::to_vec(&v).unwrap()).unwrap();
    let (_, _, status) = case.each_format(&["status"], &[]);
    assert_eq!(status["intervention"]["reason"], format!("reason {HOSTILE}"));
    let (_, out, report) = case.each_format(&["run"], &[&reviewed]);
    assert_eq!((out.status.code(), &report["intervention"]["reason"]), (Some(4), &json!(format!("reason {HOSTILE}"))));
}

#[test]
fn a_model_servers_answer_is_escaped() {
    use wiremock::{Mock, MockServer, ResponseTemplate};
    let rt = tokio::runtime::Runtime::new().unwrap();
    let server = rt.block_on(MockServer::start());
    let body = format!("<html>{HOSTILE}</html>");
    rt.block_on(
        Mock::given(wiremock::matchers::method("POST"))
            .respond_with(ResponseTemplate::new(200).set_body_string(body))
            .mount(&server),
    );
    let case = Case::new();
    // The plan names no model: the one asked for, and printed, is the flag's.
    let good = case.file(
        "plan.json",
        &plan(|v| {
            for step in v["steps"].as_array_mut().unwrap() {
                if step["type"] == "LLMCall" {
                    step["payload"]["config"].as_object_mut().unwrap().remove("model");
                }
            }
        }),
    );
    let url = server.uri() + "/v1";
    let (text, out, report) = case.each_format(&["run", "--llm-url", &url, "--llm-model", HOSTILE], &[&good]);
    assert_eq!(out.status.code(), Some(1), "{report}");
    assert_eq!(report["model"]["model"], HOSTILE, "exact in JSON: {report}");
    assert!(text.contains("it began") && text.contains("\\u{202e}"), "{text}");
}
