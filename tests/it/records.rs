//! planlock's own records are input too (CONTRACT §11): a pin, a paused cycle's record and an
//! override's justification are checked as strictly as a plan before anything acts on them, a
//! record a finished resume left behind is cleaned up, and a message quoting a record or a
//! manifest never sends a control character to the terminal.
#![cfg(unix)]

use std::path::{Path, PathBuf};
use std::process::Output;

use serde_json::{Value, json};

const REVIEWED_PLAN: &str = include_str!("../../examples/plans/reviewed_plan.json");

use crate::common::cli::CliSession as Session;

impl Session {
    fn run(&self) -> Output {
        self.cli(&["run", "--format", "json"])
    }

    fn resume(&self, reason: &str) -> Output {
        self.cli(&["resume", "--format", "json", "--approve", "demo-review", "--step", "remember", "--reason", reason])
    }

    fn file(&self, name: &str) -> PathBuf {
        self.root().join("ops/runtime").join(name)
    }

    /// Runs the first cycle, which the review validator pauses.
    fn paused(self) -> Session {
        let out = self.run();
        assert_eq!(out.status.code(), Some(4), "{}", text(&out));
        self
    }
}

fn text(out: &Output) -> String {
    format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr))
}

fn edit(path: &Path, f: impl FnOnce(&mut Value)) -> Vec<u8> {
    let mut v: Value = serde_json::from_slice(&std::fs::read(path).unwrap()).unwrap();
    f(&mut v);
    let bytes = serde_json::to_vec_pretty(&v).unwrap();
    std::fs::write(path, &bytes).unwrap();
    bytes
}

/// A refusal: exit 3, the message names `what`, and the file is byte for byte as it was.
fn assert_refused(out: &Output, what: &str, file: &Path, bytes: &[u8]) {
    assert_eq!(out.status.code(), Some(3), "{}", text(out));
    assert!(text(out).contains(what), "expected `{what}` in: {}", text(out));
    assert_eq!(std::fs::read(file).unwrap(), bytes, "the record was changed");
}

#[test]
fn a_pin_with_a_null_or_a_lone_provider_id_is_refused_not_repinned() {
    let s = Session::new(REVIEWED_PLAN);
    let paused = s.paused();
    assert_eq!(paused.resume("reviewed").status.code(), Some(0));
    let pin = paused.file("bundle_pin.json");
    let bytes = edit(&pin, |v| v["memory_provider_id"] = Value::Null);
    assert_refused(&paused.run(), "bundle pin", &pin, &bytes);
    assert!(text(&paused.run()).contains("memory_provider_id"), "names the field");
    let bytes = edit(&pin, |v| {
        v.as_object_mut().unwrap().remove("memory_provider_id");
    });
    assert_refused(&paused.run(), "naming one provider but not the other", &pin, &bytes);
    // Both absent is the older format: upgraded, and the session goes on.
    edit(&pin, |v| {
        v.as_object_mut().unwrap().remove("strategy_provider_id");
    });
    assert_eq!(paused.run().status.code(), Some(4), "cycle 2 runs (and pauses for review)");
}

#[test]
fn a_tampered_list_of_completed_steps_is_refused_untouched() {
    type Tamper = fn(&mut Value);
    let tampers: [(&str, Tamper, &str); 4] = [
        (
            "50 memories where topK is 5",
            |v| {
                let i = v["completed"].as_array().unwrap().iter().position(|c| c["type"] == "RetrieveMemory").unwrap();
                let item = json!({"id": "m", "summary": "s", "timestamp": "t"});
                v["completed"][i]["result"]["items"] = Value::Array(vec![item; 50]);
            },
            "breaks its contract",
        ),
        (
            "the LLMCall result left out",
            |v| v["completed"].as_array_mut().unwrap().retain(|c| c["type"] != "LLMCall"),
            "completed steps",
        ),
        (
            "an entry twice",
            |v| {
                let first = v["completed"][0].clone();
                v["completed"].as_array_mut().unwrap().insert(1, first);
            },
            "completed steps",
        ),
        ("two entries swapped", |v| v["completed"].as_array_mut().unwrap().swap(1, 2), "where the plan has"),
    ];
    for (what, tamper, says) in tampers {
        let s = Session::new(REVIEWED_PLAN).paused();
        let record = s.file("intervention.json");
        let bytes = edit(&record, tamper);
        let out = s.resume("reviewed");
        assert_refused(&out, says, &record, &bytes);
        assert!(text(&out).contains("intervention.json"), "{what}: names the file: {}", text(&out));
    }
}

#[test]
fn a_blank_or_oversized_reason_is_a_usage_error_and_nothing_runs() {
    let s = Session::new(REVIEWED_PLAN).paused();
    let record = std::fs::read(s.file("intervention.json")).unwrap();
    for reason in ["", "   ", &"x".repeat(2001), "ok\u{1b}[2J"] {
        let out = s.resume(reason);
        assert_eq!(out.status.code(), Some(2), "{reason:?}: {}", text(&out));
        assert_eq!(std::fs::read(s.file("intervention.json")).unwrap(), record);
    }
    assert_eq!(s.resume("checked: no personal data").status.code(), Some(0));
}

#[test]
fn a_record_a_finished_resume_left_is_reported_by_status_and_removed_at_boot() {
    let s = Session::new(REVIEWED_PLAN).paused();
    let record = std::fs::read(s.file("intervention.json")).unwrap();
    assert_eq!(s.resume("reviewed").status.code(), Some(0));
    // As if the resume was killed after its session save, before removing the record.
    std::fs::write(s.file("intervention.json"), &record).unwrap();
    let out = s.cli(&["status", "--format", "json"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let status: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(status["intervention"], Value::Null, "{status}");
    assert_eq!(status["leftoverRecord"]["cycle"], 1, "{status}");
    assert!(s.file("intervention.json").exists(), "status only reads");
    let out = s.cli(&["status"]);
    assert!(text(&out).contains("leftover record of cycle 1"), "{}", text(&out));

    let out = s.run();
    assert_eq!(out.status.code(), Some(4), "cycle 2 ran and paused: {}", text(&out));
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(report["bootCleanup"]["removedRecord"]["cycle"], 1, "{report}");
    assert_eq!(report["cycle"], 2, "{report}");
}

#[test]
fn a_paused_first_cycle_must_belong_to_the_reserved_session() {
    for (what, id, says) in [
        ("another v4 id", uuid::Uuid::new_v4().to_string(), "reserved session"),
        ("a v1-shaped id", "6f1c1b8e-4a55-1d1f-9a57-8a4f0f7c2a11".to_owned(), "not a v4 UUID"),
    ] {
        let s = Session::new(REVIEWED_PLAN).paused();
        let record = s.file("intervention.json");
        if what == "a v1-shaped id" {
            // Without a reservation, only the id's form can be checked.
            std::fs::remove_file(s.file("new_session.json")).unwrap();
        }
        let bytes = edit(&record, |v| v["sessionId"] = json!(id));
        assert_refused(&s.resume("reviewed"), says, &record, &bytes);
    }
}

#[test]
fn messages_name_the_record_and_escape_control_characters() {
    let s = Session::new(REVIEWED_PLAN).paused();
    let record = s.file("intervention.json");
    std::fs::write(&record, b"{\"sessionId\": 1, \"\x1b[31mevil\": true}").unwrap();
    let out = s.cli(&["status"]);
    assert_eq!(out.status.code(), Some(3), "{}", text(&out));
    assert!(text(&out).contains("intervention record"), "{}", text(&out));
    assert!(!text(&out).contains("session file"), "{}", text(&out));

    // A bundle whose provider id carries a terminal escape.
    let bundle = tempfile::tempdir().unwrap();
    let manifest = json!({"bundle_id": "b", "version": "1", "strategy_provider_id": "x\u{1b}[2Jy"});
    std::fs::write(bundle.path().join("manifest.json"), manifest.to_string()).unwrap();
    let fresh = Session::new(REVIEWED_PLAN);
    let bundle_arg = bundle.path().to_str().unwrap();
    for format in ["text", "json"] {
        let out = fresh.cli(&["run", "--format", format, "--bundle", bundle_arg]);
        assert_eq!(out.status.code(), Some(3), "{}", text(&out));
        assert!(!out.stdout.contains(&0x1b) && !out.stderr.contains(&0x1b), "a raw ESC reached the terminal");
        assert!(text(&out).contains("u{1b}[2Jy"), "{}", text(&out));
    }
}
