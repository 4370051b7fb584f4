//! The rules live with the sessions (CONTRACT §18, amended): an access file installed once
//! beside the session roots is applied by every path that decides or acts — the inbox commands,
//! `resume`, the runtime acting on a decision, the console, the sender — without a flag to
//! remember; a flag that disagrees with it is refused, and a running console follows it as it
//! changes.

use std::path::Path;

use serde_json::{Value, json};

use crate::approvals::paused_by_the_cli;
use crate::common::cli::{json, planlock};
use crate::common::console::{decide_fields, serve};
use crate::people::{access_file, cookie_of, decide, log_events, names, run, signs_in};

/// `planlock access install --sessions DIR FILE`.
fn install(dir: &Path, file: &Path) -> Value {
    let out = planlock().args(["access", "install", "--format", "json", "--sessions"]).arg(dir).arg(file).output();
    let out = out.unwrap();
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    json(&out)
}

/// `planlock resume` of the paused `run_args` by `by`: its exit code and report.
fn resume(run_args: &[String], by: &str, reason: &str) -> (Option<i32>, Value) {
    let mut args: Vec<String> = run_args.to_vec();
    args[0] = "resume".into();
    let plan = args.pop().unwrap();
    args.extend(["--approve", "demo-review", "--step", "remember", "--reason", reason, "--by", by].map(String::from));
    args.push(plan);
    let out = planlock().args(&args).env("USER", "operator").output().unwrap();
    (out.status.code(), json(&out))
}

#[test]
fn resume_by_one_person_of_two_records_one_approval_and_runs_nothing() {
    let (s, run_args) = paused_by_the_cli();
    let dir = s.sessions.path();
    let installed = install(dir, &access_file(s.policy.path(), 2));
    assert_eq!(
        installed["validators"][0],
        json!({"validator": "demo-review", "approvers": ["ada", "bob"], "required": 2})
    );
    // ada's approval, with no flag: the installed rules count it as one of two.
    let (code, first) = decide(dir, "approve", "ada", None);
    assert_eq!((code, &first["counted"], &first["decision"]["verified"]), (Some(0), &json!([1, 2]), &json!(true)));
    assert_eq!(first["turn"], json!({"approved": ["ada"], "required": 2, "mayStillApprove": ["bob"]}));
    // Every place that shows the pause says whose turn it is (issue 58): inbox list and show,
    // status.
    let turn = "1 of 2: ada approved; bob may approve";
    let text = |args: &[&str]| {
        let out = planlock().args(args).output().unwrap();
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    let sessions = dir.to_str().unwrap();
    let root = dir.join("s1");
    assert!(text(&["inbox", "list", "--sessions", sessions]).contains(turn));
    assert!(text(&["inbox", "show", "--sessions", sessions, "s1"]).contains(&format!("decision:   {turn}")));
    assert!(text(&["status", "--root", root.to_str().unwrap()]).contains(&format!("decision: none yet: {turn}")));
    let listed =
        json(&planlock().args(["inbox", "list", "--format", "json", "--sessions", sessions]).output().unwrap());
    assert_eq!(listed["pauses"][0]["turn"]["mayStillApprove"], json!(["bob"]), "{listed}");
    // `resume --approve` by someone the rules do not name (the `USER` default): refused.
    let mut args = run_args.clone();
    args[0] = "resume".into();
    let plan = args.pop().unwrap();
    args.extend(["--approve", "demo-review", "--step", "remember", "--reason", "me alone"].map(String::from));
    args.push(plan);
    let out = planlock().args(&args).env("USER", "operator").output().unwrap();
    assert_eq!((out.status.code(), &json(&out)["errorCode"]), (Some(3), &json!("not-an-approver")), "{out:?}");
    // ada again by `resume`: refused (she approved already), still one of two; the step does
    // not run, and the pause says who is left.
    let (code, again) = resume(&run_args, "ada", "me alone");
    assert_eq!((code, &again["errorCode"]), (Some(4), &json!("already-approved")), "{again}");
    assert!(again["error"].as_str().unwrap().contains("1 of 2: ada approved; bob may approve"), "{again}");
    assert_eq!(names(&log_events(dir)), ["voted"], "nothing consumed");
    // bob's `resume` is the second approval: the step runs.
    let (code, done) = resume(&run_args, "bob", "checked too");
    assert_eq!((code, &done["outcome"]), (Some(0), &json!("completed")), "{done}");
    let log = log_events(dir);
    assert_eq!(names(&log), ["voted", "voted", "decided", "consumed"]);
    assert_eq!(log[2]["decision"]["approvers"], json!(["ada", "bob"]));
}

#[test]
fn the_inbox_applies_the_installed_rules_and_refuses_a_flag_that_disagrees() {
    let (s, run_args) = paused_by_the_cli();
    let dir = s.sessions.path();
    let file = access_file(s.policy.path(), 2);
    // The pause's hint names the command that applies the rules, never a bypass.
    let text = planlock().arg("run").args(&run_args[3..]).output().unwrap();
    let said = String::from_utf8_lossy(&text.stdout);
    assert!(!said.contains("planlock resume"), "{said}");
    let hint = format!("to decide: planlock inbox approve --by NAME --reason TEXT --sessions {} s1", dir.display());
    assert!(said.contains(&hint), "{said}");
    install(dir, &file);
    // eve decides alone without --access: refused, nothing recorded.
    let (code, refused) = decide(dir, "approve", "eve", None);
    assert_eq!((code, &refused["errorCode"]), (Some(3), &json!("not-an-approver")), "{refused}");
    // A one-off file that says other rules (bob alone may decide): refused, naming both.
    let other = s.policy.path().join("other.yaml");
    let text = std::fs::read_to_string(&file).unwrap().replace("[ada, bob], required: 2", "[bob], required: 1");
    std::fs::write(&other, text).unwrap();
    let (code, refused) = decide(dir, "approve", "bob", Some(&other));
    assert_eq!((code, &refused["errorCode"]), (Some(3), &json!("access-mismatch")), "{refused}");
    let message = refused["error"].as_str().unwrap();
    assert!(message.contains("other.yaml") && message.contains("planlock-access.yaml"), "{message}");
    assert!(log_events(dir).is_empty());
    // The installed file itself, given again, agrees.
    assert_eq!(decide(dir, "approve", "bob", Some(&file)).0, Some(0));
    // `access show`, then `access remove`: one operator again, names unverified.
    let shown = json(&planlock().args(["access", "show", "--format", "json", "--sessions"]).arg(dir).output().unwrap());
    assert_eq!(shown["users"], json!(["ada", "bob", "eve"]));
    let removed = planlock().args(["access", "remove", "--sessions"]).arg(dir).output().unwrap();
    assert_eq!(removed.status.code(), Some(0));
    let again = planlock().args(["access", "remove", "--sessions"]).arg(dir).output().unwrap();
    assert_eq!(again.status.code(), Some(1), "nothing left to remove");
    let _ = run(&run_args);
}

#[test]
fn a_decision_the_installed_rules_would_refuse_is_not_acted_on() {
    let (s, run_args) = paused_by_the_cli();
    let dir = s.sessions.path();
    // Decided by a name nobody vouched for, before the rules were installed.
    let (code, decided) = decide(dir, "approve", "whoever", None);
    assert_eq!((code, &decided["decision"]["verified"]), (Some(0), &json!(false)));
    install(dir, &access_file(s.policy.path(), 2));
    let out = run(&run_args);
    let report = json(&out);
    assert_eq!((out.status.code(), &report["errorCode"]), (Some(3), &json!("not-an-approver")), "{report}");
    assert!(report["error"].as_str().unwrap().contains("nobody vouched for"), "{report}");
    assert!(!names(&log_events(dir)).contains(&"consumed"), "the step did not run");
    let status = json(&planlock().args(["status", "--format", "json", "--root"]).arg(s.root()).output().unwrap());
    assert!(status["intervention"].is_object(), "still paused: {status}");
}

#[test]
fn an_invalid_installed_file_refuses_every_decision_and_a_fifo_never_hangs() {
    let (s, _) = paused_by_the_cli();
    let dir = s.sessions.path();
    let invalid = s.policy.path().join("invalid.yaml");
    std::fs::write(&invalid, "users:\n  ada: { tokenSha256: \"00\" }\n").unwrap();
    let refused = planlock().args(["access", "install", "--sessions"]).arg(dir).arg(&invalid).output().unwrap();
    assert_eq!(refused.status.code(), Some(3), "an invalid file is not installed");
    assert!(!dir.join("planlock-access.yaml").exists());
    // Edited by hand into something unreadable: nothing is decided without its rules.
    std::fs::write(dir.join("planlock-access.yaml"), "users: [\n").unwrap();
    let (code, refused) = decide(dir, "approve", "ada", None);
    assert_eq!((code, &refused["errorCode"]), (Some(3), &json!("access-invalid")), "{refused}");
    std::fs::remove_file(dir.join("planlock-access.yaml")).unwrap();
    let made = std::process::Command::new("mkfifo").arg(dir.join("planlock-access.yaml")).status().unwrap();
    assert!(made.success());
    let started = std::time::Instant::now();
    let (code, refused) = decide(dir, "approve", "ada", None);
    assert_eq!(code, Some(3), "{refused}");
    assert!(started.elapsed() < std::time::Duration::from_secs(20), "refused, not waited on");
    assert!(log_events(dir).is_empty());
}

#[test]
fn a_new_token_names_its_person_and_prints_the_line_to_paste() {
    let out = planlock().args(["access", "new-token", "--name", "ada"]).output().unwrap();
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(!text.contains("\\n"), "no literal \\n: {text}");
    let line = text.lines().find(|l| l.trim_start().starts_with("ada: { tokenSha256: \"")).expect(&text);
    let token = text.lines().next().unwrap().rsplit(' ').next().unwrap();
    let hash = planlock::review::access::token_sha256(token);
    assert_eq!(line.trim(), format!("ada: {{ tokenSha256: \"{hash}\" }}"));
}

/// A running console follows the installed file: a removed person is signed out at once and
/// their POST refused, a new person signs in without a restart, and a file that becomes invalid
/// leaves the last good rules in force, said on every page.
#[test]
fn a_running_console_follows_the_installed_rules() {
    let (s, _) = paused_by_the_cli();
    let dir = s.sessions.path();
    let file = access_file(s.policy.path(), 1);
    install(dir, &file);
    let console = serve(&["--sessions".as_ref(), dir.as_os_str()], &[]);
    let origin = console.origin();
    let ada = cookie_of(&signs_in(&console, "ada's token"));
    let page = console.pause_page(&ada, "s1").body;
    let body = format!("{}&reason=checked", decide_fields(&page, "/inbox/s1/approve"));
    // ada is removed from the file: her login ends at once, and her POST is not recorded.
    let text = std::fs::read_to_string(&file).unwrap();
    let without_ada: String = text.lines().filter(|l| !l.contains("ada:")).map(|l| format!("{l}\n")).collect();
    let without_ada = without_ada.replace("[ada, bob]", "[bob]");
    let edited = s.policy.path().join("edited.yaml");
    std::fs::write(&edited, &without_ada).unwrap();
    install(dir, &edited);
    let after = console.get(&ada, "/inbox");
    assert_eq!((after.status, after.headers.contains("location: /login")), (303, true), "{}", after.body);
    let post = console.request("POST", "/inbox/s1/approve", &[("Cookie", &ada), ("Origin", &origin)], &body);
    assert_eq!(post.status, 403, "{}", post.body);
    assert!(post.body.contains("not-an-approver"), "{}", post.body);
    assert!(log_events(dir).is_empty(), "nothing recorded for a removed person");
    assert_eq!(signs_in(&console, "ada's token").status, 401);
    // A new person, added while it runs, signs in.
    let with_cy =
        format!("{without_ada}  cy: {{ tokenSha256: \"{}\" }}\n", planlock::review::access::token_sha256("cy's token"))
            .replace("validators:\n  demo-review: { approvers: [bob], required: 1 }\n", "");
    let with_cy = format!("{with_cy}validators:\n  demo-review: {{ approvers: [bob], required: 1 }}\n");
    std::fs::write(&edited, &with_cy).unwrap();
    install(dir, &edited);
    let cy = signs_in(&console, "cy's token");
    assert_eq!(cy.status, 303, "{}", cy.body);
    let cy = cookie_of(&cy);
    // The file becomes invalid (edited by hand): the last good rules stay, and every page says so.
    std::fs::write(dir.join("planlock-access.yaml"), "users: [\n").unwrap();
    let inbox = console.get(&cy, "/inbox");
    assert_eq!(inbox.status, 200, "cy is still signed in under the last good rules");
    assert!(inbox.body.contains("The access file cannot be used"), "{}", inbox.body);
    assert!(console.get(&cy, "/sessions").body.contains("the last good rules stay in force"));
}

#[test]
fn the_sender_needs_no_flag_once_the_rules_are_installed() {
    let (s, _) = paused_by_the_cli();
    let dir = s.sessions.path();
    let none = planlock().args(["notify", "--once", "--sessions"]).arg(dir).output().unwrap();
    assert_eq!(none.status.code(), Some(2), "nothing names a webhook");
    assert!(String::from_utf8_lossy(&none.stderr).contains("access install"), "{none:?}");
    let file = access_file(s.policy.path(), 1);
    let text = std::fs::read_to_string(&file).unwrap();
    let hooked = format!(
        "{text}webhooks:\n  - {{ url: \"http://127.0.0.1:9/hook\", secretEnv: HOOK_SECRET, events: [pause.created] }}\n"
    );
    std::fs::write(&file, hooked).unwrap();
    install(dir, &file);
    let out = planlock()
        .args(["notify", "--once", "--format", "json", "--timeout", "2s", "--sessions"])
        .arg(dir)
        .env("HOOK_SECRET", "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw")
        .output()
        .unwrap();
    let report = json(&out);
    assert_eq!(report["attempts"][0]["kind"], json!("pause.created"), "{report}");
}
