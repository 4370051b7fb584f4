//! The people who may decide (CONTRACT §18): personal tokens, the access file's rules, approvals
//! by more than one person, and what the CLI records — with the real `planlock` binary, on
//! session roots, and with processes that decide at once.

use std::path::{Path, PathBuf};
use std::process::Output;

use planlock::review::access::token_sha256;
use serde_json::{Value, json};

use crate::approvals::paused_by_the_cli;
use crate::common::cli::{json, planlock};

/// An access file in `dir`: ada, bob and eve; `demo-review` needs `required` of ada and bob.
pub(crate) fn access_file(dir: &Path, required: usize) -> PathBuf {
    let path = dir.join("access.yaml");
    let users: String = ["ada", "bob", "eve"]
        .iter()
        .map(|u| format!("  {u}: {{ tokenSha256: \"{}\" }}\n", token_sha256(&format!("{u}'s token"))))
        .collect();
    let text =
        format!("users:\n{users}validators:\n  demo-review: {{ approvers: [ada, bob], required: {required} }}\n");
    std::fs::write(&path, text).unwrap();
    path
}

/// `planlock inbox VERB --format json --sessions DIR --by BY --reason … --access FILE s1`.
pub(crate) fn decide(dir: &Path, verb: &str, by: &str, access: Option<&Path>) -> (Option<i32>, Value) {
    let mut cmd = planlock();
    cmd.args(["inbox", verb, "--format", "json", "--sessions"]).arg(dir).args(["--by", by, "--reason", "checked"]);
    if let Some(access) = access {
        cmd.arg("--access").arg(access);
    }
    let out = cmd.arg("s1").output().unwrap();
    (out.status.code(), json(&out))
}

pub(crate) fn log_events(dir: &Path) -> Vec<Value> {
    let out = planlock().args(["inbox", "log", "--format", "json", "--sessions"]).arg(dir).arg("s1").output().unwrap();
    json(&out)["events"].as_array().unwrap().clone()
}

pub(crate) fn names(events: &[Value]) -> Vec<&str> {
    events.iter().map(|e| e["event"].as_str().unwrap()).collect()
}

pub(crate) fn run(args: &[String]) -> Output {
    planlock().args(args).output().unwrap()
}

#[test]
fn a_new_token_is_printed_once_with_the_hash_the_file_keeps() {
    let out = planlock().args(["access", "new-token", "--format", "json"]).output().unwrap();
    let report = json(&out);
    let (token, hash) = (report["token"].as_str().unwrap(), report["tokenSha256"].as_str().unwrap());
    assert_eq!((token.len(), hash.len()), (64, 64), "{report}");
    assert_eq!(token_sha256(token), hash);
    let again = json(&planlock().args(["access", "new-token", "--format", "json"]).output().unwrap());
    assert_ne!(again["token"], report["token"], "a fresh token each time");
}

#[test]
fn two_people_approve_a_pause_that_needs_two_and_only_its_approvers_count() {
    let (s, run_args) = paused_by_the_cli();
    let dir = s.sessions.path();
    let access = access_file(s.policy.path(), 2);
    // eve is a user, but not an approver of demo-review: refused, nothing recorded.
    let (code, refused) = decide(dir, "approve", "eve", Some(&access));
    assert_eq!((code, &refused["errorCode"]), (Some(3), &json!("not-an-approver")), "{refused}");
    let (code, refused) = decide(dir, "reject", "mallory", Some(&access));
    assert_eq!((code, &refused["errorCode"]), (Some(3), &json!("not-an-approver")), "{refused}");
    assert!(log_events(dir).is_empty(), "nothing recorded for who may not decide");
    // ada's approval counts, once: sent again, it is refused, saying whose turn it is (issue 58).
    let (code, first) = decide(dir, "approve", "ada", Some(&access));
    assert_eq!((code, &first["counted"]), (Some(0), &json!([1, 2])), "{first}");
    let (code, again) = decide(dir, "approve", "ada", Some(&access));
    assert_eq!((code, &again["errorCode"]), (Some(1), &json!("already-approved")), "{again}");
    assert!(again["error"].as_str().unwrap().contains("you (ada) approved this pause already; it waits for bob"));
    let log = log_events(dir);
    assert_eq!(names(&log), ["voted"]);
    assert_eq!((&log[0]["count"], &log[0]["required"]), (&json!(1), &json!(2)));
    assert_eq!((&log[0]["decision"]["verified"], &log[0]["decision"]["via"]), (&json!(true), &json!("cli")));
    // The session does not act on half an approval: it is still paused.
    assert_eq!(run(&run_args).status.code(), Some(4));
    let list = json(&planlock().args(["inbox", "list", "--format", "json", "--sessions"]).arg(dir).output().unwrap());
    assert_eq!((&list["pauses"][0]["approvals"], &list["pauses"][0]["required"]), (&json!(["ada"]), &json!(2)));
    let text = planlock().args(["inbox", "list", "--sessions"]).arg(dir).output().unwrap();
    assert!(String::from_utf8_lossy(&text.stdout).contains("1 of 2 (ada)"), "{text:?}");
    // bob's makes two: the pause is approved, naming both.
    let (code, second) = decide(dir, "approve", "bob", Some(&access));
    assert_eq!(code, Some(0), "{second}");
    let log = log_events(dir);
    assert_eq!(names(&log), ["voted", "voted", "decided"]);
    assert_eq!(log[2]["decision"]["approvers"], json!(["ada", "bob"]));
    let text = planlock().args(["inbox", "log", "--sessions"]).arg(dir).arg("s1").output().unwrap();
    assert!(String::from_utf8_lossy(&text.stdout).contains("approval 1 of 2 by `ada`"), "{text:?}");
    // A rejection after it is another decision: refused.
    assert_eq!(decide(dir, "reject", "bob", Some(&access)).1["errorCode"], json!("already-decided"));
    let out = run(&run_args);
    assert_eq!((out.status.code(), &json(&out)["outcome"]), (Some(0), &json!("completed")));
}

#[test]
fn one_rejection_by_an_approver_rejects_and_without_an_access_file_the_name_is_unverified() {
    let (s, run_args) = paused_by_the_cli();
    let dir = s.sessions.path();
    let access = access_file(s.policy.path(), 2);
    assert_eq!(decide(dir, "approve", "ada", Some(&access)).0, Some(0));
    let (code, rejected) = decide(dir, "reject", "bob", Some(&access));
    assert_eq!((code, &rejected["decision"]["verdict"]), (Some(0), &json!("reject")), "{rejected}");
    let out = run(&run_args);
    assert_eq!(json(&out)["outcome"], json!("abandoned"), "{out:?}");
    // The next pause, decided without an access file: one operator, the name as typed.
    assert_eq!(run(&run_args).status.code(), Some(4));
    let (code, decided) = decide(dir, "approve", "whoever", None);
    assert_eq!((code, &decided["decision"]["verified"]), (Some(0), &json!(false)), "{decided}");
    let log = log_events(dir);
    assert_eq!(log.last().unwrap()["decision"]["verified"], json!(false));
    let text = planlock().args(["inbox", "log", "--sessions"]).arg(dir).arg("s1").output().unwrap();
    assert!(String::from_utf8_lossy(&text.stdout).contains("(unverified name)"), "{text:?}");
}

#[test]
fn a_bad_access_file_is_refused_with_its_line_and_nothing_is_recorded() {
    let (s, _) = paused_by_the_cli();
    let dir = s.sessions.path();
    let bad = s.policy.path().join("bad.yaml");
    std::fs::write(&bad, "users:\n  ada: { tokenSha256: \"x\" }\n").unwrap();
    let (code, refused) = decide(dir, "approve", "ada", Some(&bad));
    assert_eq!((code, &refused["errorCode"]), (Some(3), &json!("access-invalid")), "{refused}");
    assert!(refused["error"].as_str().unwrap().contains("bad.yaml:2:"), "{refused}");
    let link = s.policy.path().join("link.yaml");
    std::os::unix::fs::symlink(access_file(s.policy.path(), 1), &link).unwrap();
    assert_eq!(decide(dir, "approve", "ada", Some(&link)).1["errorCode"], json!("access-invalid"));
    assert!(log_events(dir).is_empty());
}

/// Deciders who send their approvals at the same moment, from processes of their own, many
/// rounds: each pause ends with exactly one approval a person, and the decision naming both.
#[test]
fn racing_approvals_never_count_one_person_twice_and_never_lose_one() {
    for round in 0..12 {
        let (s, _) = paused_by_the_cli();
        let dir = s.sessions.path();
        let access = access_file(s.policy.path(), 2);
        let children: Vec<_> = ["ada", "bob", "ada", "bob"]
            .iter()
            .map(|by| {
                planlock()
                    .args(["inbox", "approve", "--format", "json", "--sessions"])
                    .arg(dir)
                    .args(["--by", by, "--reason", "checked", "--access"])
                    .arg(&access)
                    .arg("s1")
                    .stdout(std::process::Stdio::piped())
                    .spawn()
                    .unwrap()
            })
            .collect();
        // Each person's first approval is recorded; a second one is refused (approved already,
        // or the pause decided by then), or is the decision it completed, sent again: never
        // counted.
        let mut recorded = Vec::new();
        for child in children {
            let out = child.wait_with_output().unwrap();
            let said = String::from_utf8_lossy(&out.stdout).into_owned();
            match out.status.code() {
                Some(0) if said.contains("\"again\":true") => {}
                Some(0) => recorded.push(said),
                Some(1) => assert!(
                    said.contains("already-approved") || said.contains("already-decided"),
                    "round {round}: {said}"
                ),
                other => panic!("round {round}: exit {other:?}: {said}"),
            }
        }
        assert_eq!(recorded.len(), 2, "round {round}: one approval a person: {recorded:?}");
        let log = log_events(dir);
        assert_eq!(names(&log), ["voted", "voted", "decided"], "round {round}: {log:?}");
        let mut approvers: Vec<&str> =
            log[2]["decision"]["approvers"].as_array().unwrap().iter().map(|a| a.as_str().unwrap()).collect();
        approvers.sort_unstable();
        assert_eq!(approvers, ["ada", "bob"], "round {round}");
    }
}

/// The secret the tests' proxy sends.
const PROXY_SECRET: &str = "the-proxys-shared-secret-0123456789";

/// The console of `s`'s sessions behind a proxy that sends [`PROXY_SECRET`], with the access
/// file where ada and bob each approve alone, and `extra` flags.
fn behind_a_proxy(s: &crate::approvals::Session, extra: &[&str]) -> crate::common::console::Console {
    let access = access_file(s.policy.path(), 1);
    let place = ["--sessions".as_ref(), s.sessions.path().as_os_str(), "--access".as_ref(), access.as_os_str()];
    let mut flags = vec!["--proxy-secret-env", "PROXY_SECRET"];
    flags.extend_from_slice(extra);
    crate::common::console::serve_with(&place, &flags, &[("PROXY_SECRET", PROXY_SECRET)])
}

/// `token=…` for the sign-in form.
pub(crate) fn signs_in(console: &crate::common::console::Console, token: &str) -> crate::common::console::Reply {
    let origin = console.origin();
    console.request("POST", "/login", &[("Origin", &origin)], &format!("token={}", token.replace('\'', "%27")))
}

pub(crate) fn cookie_of(reply: &crate::common::console::Reply) -> String {
    let line = reply.headers.lines().find_map(|l| l.strip_prefix("set-cookie: ")).expect("a cookie");
    line.split(';').next().unwrap().to_owned()
}

#[test]
fn a_person_signs_in_with_their_own_token_decides_only_where_allowed_and_signs_out() {
    use crate::common::console::{decide_fields, field, rows, serve};
    let (s, _) = paused_by_the_cli();
    let dir = s.sessions.path();
    let access = access_file(s.policy.path(), 2);
    let console = serve(&["--sessions".as_ref(), dir.as_os_str(), "--access".as_ref(), access.as_os_str()], &[]);
    let origin = console.origin();
    let form = console.request("GET", "/login", &[], "").body;
    assert!(form.contains("Your personal token") && !form.contains("name=\"name\""), "nothing typed but the token");
    // The console's own token signs no one in when there is an access file.
    assert_eq!(signs_in(&console, crate::common::console::TOKEN).status, 401);
    // eve may sign in, but not decide on demo-review: nothing waits for her (her inbox is empty
    // and counts 0), no form, and a POST is refused.
    let eve = cookie_of(&signs_in(&console, "eve's token"));
    let inbox = console.get(&eve, "/inbox").body;
    assert!(inbox.contains("<title>Inbox ·") && inbox.contains("Nothing waits for you."), "{inbox}");
    assert_eq!((rows(&inbox), rows(&console.get(&eve, "/inbox?show=all").body)), (0, 1));
    let page = console.pause_page(&eve, "s1").body;
    assert!(page.contains("not among this validator") && !page.contains("action=\"/inbox/s1/approve\""), "{page}");
    assert!(page.contains(">eve<") || page.contains("eve</span>"), "the header names who is signed in");
    let csrf = field(&page, "/logout", "csrf").to_owned();
    let forged = format!("csrf={csrf}&digest=x&pause=x&reason=mine");
    let reply = console.request("POST", "/inbox/s1/approve", &[("Cookie", &eve), ("Origin", &origin)], &forged);
    assert_eq!(reply.status, 403, "{}", reply.body);
    assert!(reply.body.contains("not-an-approver"), "{}", reply.body);
    assert!(log_events(dir).is_empty(), "nothing recorded");
    // ada approves: one of two. It waited for her (counted, listed), then for bob only.
    let ada = cookie_of(&signs_in(&console, "ada's token"));
    let inbox = console.get(&ada, "/inbox").body;
    assert!(inbox.contains("<title>(1) Inbox") && rows(&inbox) == 1, "{inbox}");
    let page = console.pause_page(&ada, "s1").body;
    let body = format!("{}&reason=checked", decide_fields(&page, "/inbox/s1/approve"));
    let reply = console.request("POST", "/inbox/s1/approve", &[("Cookie", &ada), ("Origin", &origin)], &body);
    assert_eq!(reply.status, 303, "{}", reply.body);
    let said = console.flash(&ada, &reply);
    assert!(said.starts_with("ok: Recorded: approval 1 of 2 on s1"), "{said}");
    let inbox = console.get(&ada, "/inbox").body;
    assert!(inbox.contains("<title>Inbox ·") && rows(&inbox) == 0, "nothing waits for ada: {inbox}");
    let all = console.get(&ada, "/inbox?show=all").body;
    assert!(all.contains("<span class=\"status partial\">1 of 2: ada approved; bob may approve</span>"), "{all}");
    let bob = cookie_of(&signs_in(&console, "bob's token"));
    let inbox = console.get(&bob, "/inbox").body;
    assert!(inbox.contains("<title>(1) Inbox") && rows(&inbox) == 1, "it waits for bob: {inbox}");
    // Her page says whose turn it is and offers her no second Approve (issue 58); a second one
    // sent anyway is refused, saying so, and nothing is recorded.
    let again = console.pause_page(&ada, "s1").body;
    assert!(again.contains("You approved; waiting for bob."), "{again}");
    assert!(!again.contains("action=\"/inbox/s1/approve\"") && again.contains("action=\"/inbox/s1/reject\""));
    let reply = console.request("POST", "/inbox/s1/approve", &[("Cookie", &ada), ("Origin", &origin)], &body);
    let said = console.flash(&ada, &reply);
    assert!(said.contains("approved this pause already; it waits for bob"), "{said}");
    let log = log_events(dir);
    assert_eq!(names(&log), ["voted"]);
    assert_eq!((&log[0]["decision"]["via"], &log[0]["decision"]["verified"]), (&json!("console"), &json!(true)));
    // Signed out, the cookie is worth nothing.
    let out = console.request(
        "POST",
        "/logout",
        &[("Cookie", &ada), ("Origin", &origin)],
        &format!("csrf={}", field(&page, "/logout", "csrf")),
    );
    assert_eq!(out.status, 303);
    assert!(out.headers.contains("max-age=0"), "{}", out.headers);
    let after = console.get(&ada, "/inbox");
    assert_eq!((after.status, after.headers.contains("location: /login")), (303, true));
    // A deep link survives the sign-in: a pause's page asked for signed out is where the sign-in
    // lands; a link elsewhere lands in the inbox.
    let location = |reply: &crate::common::console::Reply| {
        reply.headers.lines().find_map(|l| l.strip_prefix("location: ")).unwrap_or_default().trim().to_owned()
    };
    let at = console.request("GET", "/inbox/s1/1/remember?state=decided", &[], "");
    let to = location(&at);
    // (The test's reader lowercases headers.)
    assert_eq!((at.status, to.as_str()), (303, "/login?next=%2finbox%2fs1%2f1%2fremember%3fstate%3ddecided"));
    let form = console.request("GET", &to, &[], "").body;
    assert!(form.contains("name=\"next\" value=\"&#x2f;inbox&#x2f;s1&#x2f;1&#x2f;remember?state=decided\""), "{form}");
    for (next, lands) in [("%2Finbox%2Fs1%2F1%2Fremember", "/inbox/s1/1/remember"), ("%2F%2Fevil.example", "/inbox")] {
        let body = format!("token=ada%27s+token&next={next}");
        let reply = console.request("POST", "/login", &[("Origin", &origin)], &body);
        assert_eq!((reply.status, location(&reply)), (303, lands.to_owned()), "{}", reply.body);
    }
}

#[test]
fn five_wrong_tokens_in_a_minute_are_answered_429_even_with_the_right_one() {
    use crate::common::console::serve;
    let (s, _) = paused_by_the_cli();
    let access = access_file(s.policy.path(), 1);
    let console =
        serve(&["--sessions".as_ref(), s.sessions.path().as_os_str(), "--access".as_ref(), access.as_os_str()], &[]);
    for n in 0..planlock::console::MAX_FAILURES {
        assert_eq!(signs_in(&console, &format!("guess-{n}")).status, 401);
    }
    let locked = signs_in(&console, "ada's token");
    assert_eq!(locked.status, 429, "{}", locked.body);
    assert!(locked.headers.contains("retry-after:"), "{}", locked.headers);
}

#[test]
fn behind_a_proxy_only_requests_with_its_secret_name_a_person() {
    use crate::common::console::decide_fields;
    let (s, _) = paused_by_the_cli();
    let dir = s.sessions.path();
    let console = behind_a_proxy(&s, &["--user-header", "X-Forwarded-User"]);
    let origin = console.origin();
    // Without the secret the header names no one, whoever sends it.
    let forged = console.request("GET", "/login", &[("X-Forwarded-User", "ada")], "");
    assert_eq!(forged.status, 403, "{}", forged.body);
    let wrong =
        console.request("GET", "/login", &[("X-Forwarded-User", "ada"), ("X-Planlock-Proxy-Secret", "guess")], "");
    assert_eq!(wrong.status, 403);
    let stranger = console.request(
        "GET",
        "/login",
        &[("X-Forwarded-User", "mallory"), ("X-Planlock-Proxy-Secret", PROXY_SECRET)],
        "",
    );
    assert_eq!(stranger.status, 403, "a name the access file does not hold");
    let ada = [("X-Forwarded-User", "ada"), ("X-Planlock-Proxy-Secret", PROXY_SECRET)];
    let cookie = cookie_of(&console.request("GET", "/login", &ada, ""));
    let with = |headers: &[(&str, &str)]| {
        let mut all = vec![("Cookie", cookie.as_str())];
        all.extend_from_slice(headers);
        console.request("GET", "/inbox", &all, "")
    };
    assert_eq!(with(&ada).status, 200);
    assert_eq!(with(&[]).status, 303, "the cookie alone, without the proxy, is no login");
    assert_eq!(
        with(&[("X-Forwarded-User", "bob"), ("X-Planlock-Proxy-Secret", PROXY_SECRET)]).status,
        303,
        "another person's"
    );
    let inbox = with(&ada).body;
    let at = inbox.find("href=\"/inbox/s1/").unwrap() + 6;
    let href = &inbox[at..at + inbox[at..].find('"').unwrap()];
    let mut all = vec![("Cookie", cookie.as_str())];
    all.extend_from_slice(&ada);
    let page = console.request("GET", href, &all, "").body;
    let body = format!("{}&reason=via+the+proxy", decide_fields(&page, "/inbox/s1/approve"));
    let mut headers = vec![("Cookie", cookie.as_str()), ("Origin", origin.as_str())];
    headers.extend_from_slice(&ada);
    assert_eq!(console.request("POST", "/inbox/s1/approve", &headers, &body).status, 303);
    let log = log_events(dir);
    assert_eq!((&log[0]["decision"]["by"], &log[0]["decision"]["verified"]), (&json!("ada"), &json!(true)));
}

/// The same, as a person does it in Debian's headless Chromium at a phone's width: three people
/// by their own tokens, forms only where allowed, one approval of two, sign-out; then edit and
/// approve with a running worker (`tests/browser/edit.mjs`).
#[test]
fn people_sign_in_with_their_tokens_in_a_real_browser() {
    let node = std::process::Command::new("node").arg("--version").output().is_ok_and(|o| o.status.success());
    let (Some(chromium), true) = (crate::console::chromium(), node) else {
        assert!(std::env::var_os("CI").is_none(), "CI installs chromium and node (.ci/run)");
        eprintln!("\n    SKIPPED: Chromium or node is not installed: the access file's browser test did not run.\n");
        return;
    };
    let tests = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/browser");
    if !tests.join("node_modules/.package-lock.json").exists() {
        let out = std::process::Command::new("npm")
            .args(["ci", "--no-audit", "--no-fund", "--prefer-offline"])
            .current_dir(&tests)
            .output()
            .unwrap();
        assert!(out.status.success(), "npm ci: {}", String::from_utf8_lossy(&out.stderr));
    }
    let (s, run) = paused_by_the_cli();
    let access = access_file(s.policy.path(), 2);
    let console = crate::common::console::serve(
        &["--sessions".as_ref(), s.sessions.path().as_os_str(), "--access".as_ref(), access.as_os_str()],
        &[],
    );
    let out = std::process::Command::new("node")
        .arg("access.mjs")
        .current_dir(&tests)
        .env("CONSOLE_URL", console.origin())
        .env("CHROMIUM", chromium)
        .env("ADA_TOKEN", "ada's token")
        .env("BOB_TOKEN", "bob's token")
        .env("EVE_TOKEN", "eve's token")
        .output()
        .unwrap();
    let said = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert!(out.status.success(), "the browser test failed:\n{said}");
    assert_eq!(said.matches("ok: ").count(), 7, "{said}");
    assert_eq!(names(&log_events(s.sessions.path())), ["voted", "voted", "decided"]);

    // Edit and approve (CONTRACT §22), with a running worker: ada edits, bob approves the edit,
    // and the memory stored is ada's text.
    let mut edit_run = run.clone();
    let s2 = s.sessions.path().join("s2");
    let at = edit_run.iter().position(|a| a == "--root").unwrap() + 1;
    edit_run[at] = s2.to_str().unwrap().to_owned();
    let args: Vec<&str> = edit_run.iter().map(String::as_str).collect();
    assert_eq!(crate::common::cli::planlock().args(&args).output().unwrap().status.code(), Some(4), "s2 paused");
    let policy = edit_run[edit_run.iter().position(|a| a == "--policy-root").unwrap() + 1].clone();
    let mut worker = crate::common::worker::WorkerProcess::start(&[
        "--sessions".as_ref(),
        s.sessions.path().as_os_str(),
        "--policy-root".as_ref(),
        policy.as_ref(),
    ]);
    worker.wait_for("started", std::time::Duration::from_secs(30));
    let out = std::process::Command::new("node")
        .arg("edit.mjs")
        .current_dir(&tests)
        .env("CONSOLE_URL", console.origin())
        .env("CHROMIUM", crate::console::chromium().unwrap())
        .env("SESSION", "s2")
        .env("ADA_TOKEN", "ada's token")
        .env("BOB_TOKEN", "bob's token")
        .output()
        .unwrap();
    let said = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert!(
        out.status.success(),
        "the edit's browser test failed:\n{said}\nthe worker said:\n{}",
        worker.said.join("\n")
    );
    assert_eq!(said.matches("ok: ").count(), 4, "{said}");
    let acted = worker.wait_for("s2 cycle 1", std::time::Duration::from_secs(20));
    assert!(acted.ends_with("approve by ada, bob: completed"), "{acted}");
    assert_eq!(worker.stop(), Some(0));
    let conn = rusqlite::Connection::open(s2.join(planlock::store::sqlite::DATABASE_FILE)).unwrap();
    let stored: String = conn.query_row("SELECT summary FROM memories", [], |r| r.get(0)).unwrap();
    assert_eq!(stored, "key rotation (names removed by ada)", "the memory stored is ada's text");
}

/// Sign-in that one person or a proxy cannot turn against the team: behind a trusted proxy the
/// failures count by the client it reports (an attacker locks out only themselves), an empty
/// token signs nobody in, a repeated identity header names nobody, and an event stream ends
/// when its login signs out.
#[test]
fn sign_in_cannot_be_turned_against_the_team() {
    use crate::common::console::field;
    let (s, _) = paused_by_the_cli();
    let console = behind_a_proxy(&s, &[]);
    let origin = console.origin();
    let from = |client: &str, token: &str| {
        let headers =
            [("Origin", origin.as_str()), ("X-Planlock-Proxy-Secret", PROXY_SECRET), ("X-Forwarded-For", client)];
        console.request("POST", "/login", &headers, &format!("token={token}"))
    };
    for n in 0..planlock::console::MAX_FAILURES {
        assert_eq!(from("127.0.0.66", &format!("guess-{n}")).status, 401);
    }
    assert_eq!(from("127.0.0.66", "ada%27s+token").status, 429, "the attacker is locked out");
    assert_eq!(from("127.0.0.7", "ada%27s+token").status, 303, "ada, behind the same proxy, is not");
    // Without the proxy's secret, a forwarded address is not believed.
    let forged = [("Origin", origin.as_str()), ("X-Forwarded-For", "127.0.0.99")];
    for _ in 0..planlock::console::MAX_FAILURES {
        console.request("POST", "/login", &forged, "token=guess");
    }
    assert_eq!(console.request("POST", "/login", &forged, "token=bob%27s+token").status, 429);
    // An empty token is no one's.
    assert_eq!(from("127.0.0.8", "").status, 401);
    // The event stream of a login ends when it signs out.
    let bob = cookie_of(&from("127.0.0.9", "bob%27s+token"));
    let page = console.get(&bob, "/inbox").body;
    let csrf = field(&page, "/logout", "csrf").to_owned();
    let (addr, cookie) = (console.addr.clone(), bob.clone());
    let (done, ended) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        use std::io::{Read, Write};
        let mut stream = std::net::TcpStream::connect(&addr).unwrap();
        let ask = format!("GET /events HTTP/1.1\r\nHost: {addr}\r\nCookie: {cookie}\r\nConnection: close\r\n\r\n");
        stream.write_all(ask.as_bytes()).unwrap();
        let mut all = Vec::new();
        let _ = stream.read_to_end(&mut all);
        let _ = done.send(());
    });
    std::thread::sleep(std::time::Duration::from_millis(700));
    let out = console.request("POST", "/logout", &[("Cookie", &bob), ("Origin", &origin)], &format!("csrf={csrf}"));
    assert_eq!(out.status, 303);
    assert!(ended.recv_timeout(std::time::Duration::from_secs(10)).is_ok(), "the stream ended with its login");
}

/// A proxy that sends its user header twice names nobody: which one it meant cannot be known.
#[test]
fn a_repeated_identity_header_names_nobody() {
    let (s, _) = paused_by_the_cli();
    let console = behind_a_proxy(&s, &["--user-header", "X-Forwarded-User"]);
    let once = [("X-Forwarded-User", "ada"), ("X-Planlock-Proxy-Secret", PROXY_SECRET)];
    assert_eq!(console.request("GET", "/login", &once, "").status, 303);
    let twice = [("X-Forwarded-User", "eve"), ("X-Forwarded-User", "ada"), ("X-Planlock-Proxy-Secret", PROXY_SECRET)];
    assert_eq!(console.request("GET", "/login", &twice, "").status, 403);
}
