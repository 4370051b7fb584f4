#![cfg(unix)]
//! `planlock serve` over HTTP, as a browser talks to it (CONTRACT §15): sign-in with the console's
//! token, pages that escape every value (a plan string or a session name carrying `<script>`,
//! `"onmouseover=`, an ESC sequence and U+202E), the strict Content-Security-Policy, a decision
//! from the inbox recorded with who decided and what the page showed, refused without the CSRF
//! token or from another origin, `--read-only`, and bounds. The console runs as a real process on
//! a throw-away set of session roots made by the CLI; the requests are plain HTTP/1.1.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::Command;

use planlock::session::{ApprovalEvent, FileRecords, SessionRecords};

use crate::common;
use common::console::{TOKEN, decide_fields, field, rows, serve, url_segment};

const HOSTILE: &str = "<script>alert(1)</script> \"onmouseover=alert(2) \u{1b}[31m \u{202e}evil";
const HOSTILE_NAME: &str = "x\u{1b}[2J\u{202e}<img src=x onerror=alert(3)>";

fn manifest(path: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join(path)
}

fn planlock(args: &[&str], root: &Path) -> i32 {
    crate::common::cli::planlock().current_dir(root).args(args).output().unwrap().status.code().unwrap()
}

/// Session roots under a directory: `calm` completed, `review` paused, a hostile one paused with
/// hostile text in what it shows.
pub(crate) fn sessions() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let policy = manifest("examples/policy");
    let policy = policy.to_str().unwrap();
    let reviewed = manifest("examples/plans/reviewed_plan.json");
    let demo = manifest("examples/plans/demo_plan.json");
    let run = |root: &str, plan: &Path| {
        planlock(&["run", "--root", root, "--policy-root", policy, plan.to_str().unwrap()], dir.path())
    };
    assert_eq!(run("calm", &demo), 0);
    assert_eq!(run("review", &reviewed), 4);
    assert_eq!(run("other", &reviewed), 4);
    // The hostile plan: its memory summary (shown to the reviewer) and the session's name.
    let mut plan: serde_json::Value = serde_json::from_slice(&std::fs::read(&reviewed).unwrap()).unwrap();
    for step in plan["steps"].as_array_mut().unwrap() {
        if step["type"] == "PersistMemory" {
            step["payload"]["summary"] = HOSTILE.into();
        }
    }
    let hostile = dir.path().join("hostile.json");
    std::fs::write(&hostile, serde_json::to_vec(&plan).unwrap()).unwrap();
    assert_eq!(run(HOSTILE_NAME, &hostile), 4);
    std::fs::remove_file(hostile).unwrap();
    dir
}

#[test]
fn a_reviewer_signs_in_decides_from_the_inbox_and_the_session_goes_on() {
    let dir = sessions();
    let console = serve(&["--sessions".as_ref(), dir.path().as_os_str()], &[]);
    // Nothing without signing in; a wrong token is refused.
    let reply = console.request("GET", "/inbox", &[], "");
    assert_eq!((reply.status, reply.headers.contains("location: /login")), (303, true));
    let origin = console.origin();
    let wrong = console.request("POST", "/login", &[("Origin", &origin)], "token=not-it-at-all-nope&name=eve");
    assert_eq!(wrong.status, 401);
    let cookie = console.sign_in("ada");
    let list = console.get(&cookie, "/inbox");
    assert_eq!(list.status, 200);
    assert!(list.body.contains("<title>(3) Inbox"), "the pending count is in the title");
    assert!(list.headers.contains("content-security-policy: default-src 'none'; style-src 'self'; script-src 'self'"));
    assert_eq!(rows(&list.body), 3, "a row per pause");
    let inbox = console.pause_page(&cookie, "review");
    assert_eq!(inbox.status, 200);
    let csrf = field(&inbox.body, "/inbox/review/approve", "csrf").to_owned();
    let digest = field(&inbox.body, "/inbox/review/approve", "digest").to_owned();
    assert_eq!(digest.len(), 64);
    // Refused: without the CSRF token, from another origin, with another login's token.
    let approve =
        |headers: &[(&str, &str)], body: &str| console.request("POST", "/inbox/review/approve", headers, body);
    let pause = url_segment(field(&inbox.body, "/inbox/review/approve", "pause"));
    let body = format!("csrf={csrf}&digest={digest}&pause={pause}&reason=checked+by+hand");
    assert_eq!(approve(&[("Cookie", &cookie), ("Origin", &origin)], "digest=x&reason=no").status, 403);
    assert_eq!(approve(&[("Cookie", &cookie), ("Origin", "http://evil.example")], &body).status, 403);
    let other = console.sign_in("eve");
    assert_eq!(approve(&[("Cookie", &other), ("Origin", &origin)], &body).status, 403);
    assert_eq!(approve(&[("Origin", &origin)], &body).status, 303, "no cookie: to the login");
    let records = FileRecords::new(dir.path().join("review"));
    assert!(planlock::block_on(records.approval_log()).unwrap().events.is_empty(), "nothing recorded yet");
    // Accepted: recorded with who decided and the digest the page showed.
    let done = approve(&[("Cookie", &cookie), ("Origin", &origin)], &body);
    assert_eq!(done.status, 303);
    assert!(done.headers.contains("location: /inbox?flash="), "{}", done.headers);
    assert!(console.flash(&cookie, &done).starts_with("ok: Recorded: approve on review at step remember"));
    assert_eq!(console.flash(&cookie, &done), "", "shown once");
    let log = planlock::block_on(records.approval_log()).unwrap();
    let ApprovalEvent::Decided { decision } = &log.events[0] else { panic!("{log:?}") };
    assert_eq!((decision.by.as_str(), decision.justification.as_str()), ("ada", "checked by hand"));
    assert_eq!(decision.shown_digest.map(|d| d.to_string()), Some(digest));
    // A decision on what the page did not show is refused, and says why.
    let page = console.pause_page(&cookie, "other").body;
    let csrf_other = field(&page, "/inbox/other/reject", "csrf").to_owned();
    let pause_other = url_segment(field(&page, "/inbox/other/reject", "pause"));
    let stale = format!("csrf={csrf_other}&digest={}&pause={pause_other}&reason=no", "0".repeat(64));
    let reply = console.request("POST", "/inbox/other/reject", &[("Cookie", &cookie), ("Origin", &origin)], &stale);
    let said = console.flash(&cookie, &reply);
    assert!(said.starts_with("error: Not recorded on other at step remember (PersistMemory)"), "{said}");
    // The session's next run completes the approved cycle; its page shows every step.
    let policy = manifest("examples/policy");
    let plan = manifest("examples/plans/reviewed_plan.json");
    let args = ["run", "--root", "review", "--policy-root", policy.to_str().unwrap(), plan.to_str().unwrap()];
    assert_eq!(planlock(&args, dir.path()), 0);
    let page = console.get(&cookie, "/sessions/review");
    assert_eq!(page.status, 200);
    assert!(page.body.contains("Cycle 1 <span class=\"status completed\">completed</span>"), "{}", page.body);
    assert!(page.body.contains("approved by ada (unverified name): checked by hand"), "{}", page.body);
    assert!(page.body.contains("<td>save (PersistSession)</td>"), "{}", page.body);
    assert_eq!(page.body.matches("<section class=\"cycle").count(), 1, "the resumed cycle once");
    // Rejected from the inbox: the next run abandons the cycle.
    let inbox = console.pause_page(&cookie, "other").body;
    let body = format!("{}&reason=not+this+one", decide_fields(&inbox, "/inbox/other/reject"));
    let reply = console.request("POST", "/inbox/other/reject", &[("Cookie", &cookie), ("Origin", &origin)], &body);
    assert!(console.flash(&cookie, &reply).starts_with("ok: Recorded"), "{}", reply.headers);
    let args = ["run", "--root", "other", "--policy-root", policy.to_str().unwrap(), plan.to_str().unwrap()];
    assert_eq!(planlock(&args, dir.path()), 1, "abandoned");
    // A page over a directory is read from a snapshot a few seconds old at most (the runs were
    // another process's): it shows both ready within that.
    let started = std::time::Instant::now();
    loop {
        let sessions = console.get(&cookie, "/sessions?status=ready").body;
        if sessions.contains(">other</a>") && sessions.contains(">review</a>") {
            break;
        }
        assert!(started.elapsed() < std::time::Duration::from_secs(10), "{sessions}");
        std::thread::sleep(std::time::Duration::from_millis(200));
    }
}

#[test]
fn every_value_shows_as_text_and_nothing_from_a_plan_or_a_name_runs() {
    let dir = sessions();
    let console = serve(&["--sessions".as_ref(), dir.path().as_os_str()], &[]);
    let cookie = console.sign_in("ada");
    let name = format!("/sessions/{}", url_segment(HOSTILE_NAME));
    for path in ["/inbox", "/sessions", "/sessions?status=paused", name.as_str()] {
        let reply = console.get(&cookie, path);
        assert_eq!(reply.status, 200, "{path}: {}", reply.body);
        let body = &reply.body;
        for raw in ["<script>alert", "<img src=x", "\"onmouseover=", "\u{1b}", "\u{202e}"] {
            assert!(!body.contains(raw), "{path} carries {raw:?} raw");
        }
        // Every script is the console's own file; no inline handler.
        assert_eq!(body.matches("<script").count(), 1, "{path}");
        assert!(body.contains("<script src=\"/static/console.js\" defer></script>"));
    }
    let inbox = console.pause_page(&cookie, HOSTILE_NAME).body;
    assert!(!inbox.contains("<script>alert") && !inbox.contains("\u{202e}"), "{inbox}");
    assert!(inbox.contains("&lt;script&gt;alert(1)&lt;&#x2f;script&gt;"), "the plan's text is shown as text");
    // JSON's own escape for ESC (what is shown is the pretty JSON), planlock's for U+202E.
    assert!(inbox.contains("\\u001b[31m") && inbox.contains("\\u{202e}evil"), "invisible characters shown");
    assert!(inbox.contains("x\\u{1b}[2J\\u{202e}&lt;img"), "and in a session's name");
    assert!(inbox.contains("&lt;img src=x onerror=alert(3)&gt;"), "the session's name is shown as text");
    // A path that is not one plain session name finds nothing.
    for path in ["/sessions/..", "/sessions/..%2F..%2Fetc", "/sessions/a%2Fb", "/sessions/nope"] {
        assert_eq!(console.get(&cookie, path).status, 404, "{path}");
    }
}

#[test]
fn a_read_only_console_serves_no_action_and_requests_are_bounded() {
    let dir = sessions();
    let console = serve(&["--sessions".as_ref(), dir.path().as_os_str()], &["--read-only"]);
    let cookie = console.sign_in("ada");
    let inbox = console.get(&cookie, "/inbox").body;
    // A reader decides nothing: every pause is listed, none counted as waiting for them.
    assert!(inbox.contains("<title>Inbox") && !inbox.contains("<form class=\"decide"), "{inbox}");
    assert_eq!(rows(&inbox), 3, "{inbox}");
    let origin = console.origin();
    let reply = console.request("POST", "/inbox/review/approve", &[("Cookie", &cookie), ("Origin", &origin)], "x=1");
    assert_eq!(reply.status, 403);
    // A body past 16 KiB is refused; so are headers past 16 KiB.
    let console = serve(&["--sessions".as_ref(), dir.path().as_os_str()], &[]);
    let (cookie, origin) = (console.sign_in("ada"), console.origin());
    let big = format!("reason={}", "a".repeat(20_000));
    let reply = console.request("POST", "/inbox/review/approve", &[("Cookie", &cookie), ("Origin", &origin)], &big);
    assert_eq!(reply.status, 413);
    let mut stream = TcpStream::connect(&console.addr).unwrap();
    let huge = format!("GET /inbox HTTP/1.1\r\nHost: x\r\nX-Big: {}\r\n\r\n", "b".repeat(40_000));
    let _ = stream.write_all(huge.as_bytes());
    let mut answer = String::new();
    let _ = stream.read_to_string(&mut answer);
    assert!(answer.is_empty() || answer.starts_with("HTTP/1.1 431"), "{answer}");
    // A client that stops in the middle of its headers, or of its body, is cut off (10 s each).
    let started = std::time::Instant::now();
    let mut slow = TcpStream::connect(&console.addr).unwrap();
    slow.write_all(b"GET /inbox HTTP/1.1\r\nHost: x\r\n").unwrap();
    let mut answer = Vec::new();
    let _ = slow.read_to_end(&mut answer);
    let waited = started.elapsed();
    assert!(waited >= std::time::Duration::from_secs(9) && waited < std::time::Duration::from_secs(30), "{waited:?}");
    let started = std::time::Instant::now();
    let mut slow = TcpStream::connect(&console.addr).unwrap();
    let head = format!(
        "POST /inbox/review/approve HTTP/1.1\r\nHost: {0}\r\nOrigin: {origin}\r\nCookie: {cookie}\r\n\
         Content-Type: application/x-www-form-urlencoded\r\nContent-Length: 100\r\nConnection: close\r\n\r\nreason=",
        console.addr
    );
    slow.write_all(head.as_bytes()).unwrap();
    let mut answer = String::new();
    let _ = slow.read_to_string(&mut answer);
    assert!(answer.starts_with("HTTP/1.1 413"), "{answer}");
    assert!(started.elapsed() >= std::time::Duration::from_secs(9), "{:?}", started.elapsed());
}

/// Where Debian's Chromium is, if it is installed.
pub(crate) fn chromium() -> Option<PathBuf> {
    ["/usr/bin/chromium", "/usr/bin/chromium-browser"].iter().map(PathBuf::from).find(|p| p.exists())
}

/// The browser test: `tests/browser/console.mjs` (playwright-core driving Debian's Chromium)
/// signs in, reads the inbox, approves and rejects, runs the sessions on and reads their pages.
/// Its screenshots of the three pages go to `PLANLOCK_SCREENSHOTS` (the README's are made with
/// `PLANLOCK_SCREENSHOTS=docs`), else to a temporary directory.
#[test]
fn a_person_uses_the_console_in_a_real_browser() {
    let node = Command::new("node").arg("--version").output().is_ok_and(|o| o.status.success());
    let (Some(chromium), true) = (chromium(), node) else {
        assert!(std::env::var_os("CI").is_none(), "CI installs chromium and node (.ci/run)");
        eprintln!(
            "\n\n    ==================== SKIPPED ====================\n    \
             Chromium or node is not installed: the console's browser test did not run.\n    \
             Install Debian's `chromium` and Node.js (`.ci/run` does) to run it.\n    \
             =================================================\n"
        );
        return;
    };
    let tests = manifest("tests/browser");
    if !tests.join("node_modules/.package-lock.json").exists() {
        let out = Command::new("npm")
            .args(["ci", "--no-audit", "--no-fund", "--prefer-offline"])
            .current_dir(&tests)
            .output()
            .unwrap();
        assert!(out.status.success(), "npm ci: {}", String::from_utf8_lossy(&out.stderr));
    }
    let dir = sessions();
    let console = serve(&["--sessions".as_ref(), dir.path().as_os_str()], &[]);
    let shots = tempfile::tempdir().unwrap();
    let shots_dir = match std::env::var_os("PLANLOCK_SCREENSHOTS") {
        Some(d) => manifest(d.to_str().unwrap()),
        None => shots.path().to_owned(),
    };
    let out = Command::new("node")
        .arg("console.mjs")
        .current_dir(&tests)
        .env("CONSOLE_URL", console.origin())
        .env("CONSOLE_TOKEN", TOKEN)
        .env("PLANLOCK_BIN", crate::common::cli::bin())
        .env("SESSIONS_DIR", dir.path())
        .env("POLICY_ROOT", manifest("examples/policy"))
        .env("REVIEWED_PLAN", manifest("examples/plans/reviewed_plan.json"))
        .env("SCREENSHOTS", &shots_dir)
        .env("CHROMIUM", chromium)
        .output()
        .unwrap();
    let said = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    eprintln!("{said}");
    assert!(out.status.success(), "the browser test failed:\n{said}");
    assert_eq!(said.matches("ok: ").count(), 16, "{said}");
    for page in ["inbox", "pause", "session", "sessions", "pause-390"] {
        let png = std::fs::read(shots_dir.join(format!("console-{page}.png"))).unwrap();
        assert!(png.starts_with(b"\x89PNG") && png.len() > 10_000, "{page}");
    }
}

/// Copies the session root `from` to `to` (a root paused the same way, under another name).
pub(crate) fn copy_root(from: &Path, to: &Path) {
    let ok = Command::new("cp").arg("-a").arg(from).arg(to).status().unwrap().success();
    assert!(ok);
}

/// The edges a hostile client or a hostile directory finds: roots read without following links,
/// odd names in a POST path, the one rule for which names are sessions, HEAD, identity headers.
#[test]
fn the_consoles_edges_hold() {
    let dir = sessions();
    // A root whose `ops` is a link to another root's.
    std::fs::create_dir(dir.path().join("linked")).unwrap();
    std::os::unix::fs::symlink(dir.path().join("review/ops"), dir.path().join("linked/ops")).unwrap();
    // A root whose name holds a backslash: not a session name (one rule for the lister and the
    // readers), so listed nowhere and never given forms.
    copy_root(&dir.path().join("other"), &dir.path().join("back\\slash"));
    let console = serve(&["--sessions".as_ref(), dir.path().as_os_str()], &[]);
    let (cookie, origin) = (console.sign_in("ada"), console.origin());
    let head = console.request("HEAD", "/login", &[], "");
    assert_eq!((head.status, head.body.as_str()), (200, ""), "HEAD is answered as GET, without the body");
    let inbox = console.get(&cookie, "/inbox").body;
    assert!(!inbox.contains("back\\slash") && !inbox.contains("/inbox/back"), "{inbox}");
    assert!(inbox.contains("linked") && inbox.contains("symbolic link"), "listed as a problem: {inbox}");
    assert!(!inbox.contains("/inbox/linked/"), "no row for it");
    let fields = decide_fields(&console.pause_page(&cookie, "review").body, "/inbox/review/approve");
    let body = format!("{fields}&reason=fine");
    let post = |path: &str| console.request("POST", path, &[("Cookie", &cookie), ("Origin", &origin)], &body);
    // Through the link, nothing is written into the other root's log.
    let reply = post("/inbox/linked/approve");
    assert!(!console.flash(&cookie, &reply).starts_with("ok"), "{}", reply.headers);
    let logs = || {
        ["review", "other", "calm", "back\\slash"]
            .map(|r| std::fs::read(dir.path().join(r).join(planlock::session::APPROVAL_LOG_FILE)).unwrap_or_default())
    };
    assert!(logs().iter().all(Vec::is_empty), "nothing recorded through a link");
    // A name that is not a session is 404, and nothing is read or written.
    for odd in ["%00", "one%00", "%c0%ae", "%c0%ae%c0%ae", "%252e%252e", "..;", "%2e%2e", "back%5Cslash", "nope"] {
        let reply = post(&format!("/inbox/{odd}/approve"));
        assert_eq!(reply.status, 404, "{odd}: {}", reply.body);
    }
    assert!(logs().iter().all(Vec::is_empty), "nothing recorded");
    assert_eq!(console.get(&cookie, "/sessions/back%5Cslash").status, 404);
    let out = crate::common::cli::planlock()
        .args(["inbox", "list", "--format", "json", "--sessions"])
        .arg(dir.path())
        .output()
        .unwrap();
    let list: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert!(list["pauses"].as_array().unwrap().iter().all(|p| p["session"] != "back\\slash"), "{list}");
    // `--user-header` names a header a proxy puts its user in, never one the browser sends; and
    // only with an access file and the proxy's secret (tests/it/people.rs has the proxy itself).
    let access = dir.path().join("access.yaml");
    std::fs::write(&access, "users:\n  grace: { tokenSha256: \"".to_owned() + &"0".repeat(64) + "\" }\n").unwrap();
    for header in ["Host", "Cookie", "cookie", "User-Agent", "Origin", "X-Forwarded-For", "Content-Length"] {
        let out = crate::common::cli::planlock()
            .args(["serve", "--listen", "127.0.0.1:0", "--user-header", header, "--proxy-secret-env", "SECRET"])
            .arg("--access")
            .arg(&access)
            .arg("--sessions")
            .arg(dir.path())
            .env("SECRET", "a-secret-of-the-proxy-0123456789")
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(2), "{header}: {}", String::from_utf8_lossy(&out.stderr));
    }
    let alone = crate::common::cli::planlock()
        .args(["serve", "--listen", "127.0.0.1:0", "--user-header", "X-Forwarded-User", "--sessions"])
        .arg(dir.path())
        .output()
        .unwrap();
    assert_eq!(alone.status.code(), Some(2), "a user header alone is refused");
    assert!(String::from_utf8_lossy(&alone.stderr).contains("--proxy-secret-env"), "{alone:?}");
}

/// A form shown for one pause does not decide a later one: the re-run of a rejected cycle
/// pauses again showing the same thing (the same digest), and the old page's form is refused.
#[test]
fn an_old_form_does_not_decide_a_new_pause() {
    let dir = sessions();
    let console = serve(&["--sessions".as_ref(), dir.path().as_os_str()], &[]);
    let (cookie, origin) = (console.sign_in("ada"), console.origin());
    let old_page = console.pause_page(&cookie, "other").body;
    let reject = format!("{}&reason=no", decide_fields(&old_page, "/inbox/other/reject"));
    let post =
        |path: &str, body: &str| console.request("POST", path, &[("Cookie", &cookie), ("Origin", &origin)], body);
    assert!(console.flash(&cookie, &post("/inbox/other/reject", &reject)).starts_with("ok: Recorded"));
    let policy = manifest("examples/policy");
    let plan = manifest("examples/plans/reviewed_plan.json");
    let args = ["run", "--root", "other", "--policy-root", policy.to_str().unwrap(), plan.to_str().unwrap()];
    assert_eq!(planlock(&args, dir.path()), 1, "abandoned");
    // A second later: a pause's creation time is to the nanosecond, but not every clock is.
    std::thread::sleep(std::time::Duration::from_millis(20));
    assert_eq!(planlock(&args, dir.path()), 4, "paused again");
    let approve = format!("{}&reason=yes", decide_fields(&old_page, "/inbox/other/approve"));
    let reply = post("/inbox/other/approve", &approve);
    let said = console.flash(&cookie, &reply);
    assert!(said.starts_with("error: Not recorded") && said.contains("pause-ended"), "{said}");
    // The pause that came back says what was decided on its step before: who rejected it, why.
    let again = console.pause_page(&cookie, "other").body;
    let earlier = "<strong>rejected</strong> by ada (unverified name): no <span class=\"muted\">(an earlier pause)";
    assert!(again.contains(earlier), "{again}");
    let records = FileRecords::new(dir.path().join("other"));
    let record = planlock::block_on(records.load_intervention()).unwrap().unwrap();
    assert!(planlock::block_on(records.decision_on(&planlock::session::PauseRef::of(&record))).unwrap().is_none());
    // Each session's id (its traces' `session.id`) beside its name.
    let sessions = console.get(&cookie, "/sessions").body;
    assert!(sessions.contains(&format!("<code class=\"session-id\">{}</code>", record.session_id)), "{sessions}");
}

/// The inbox is paged, a row per pause, and its list never carries `shown` values: each row
/// links to its pause's own page, which shows what it shows whole, and where it is decided.
#[test]
fn the_inbox_is_paged_and_its_list_is_bounded() {
    let dir = sessions();
    let policy = manifest("examples/policy");
    let mut plan: serde_json::Value =
        serde_json::from_slice(&std::fs::read(manifest("examples/plans/reviewed_plan.json")).unwrap()).unwrap();
    for step in plan["steps"].as_array_mut().unwrap() {
        if step["type"] == "PersistMemory" {
            step["payload"]["summary"] = "long words ".repeat(3000).into();
        }
    }
    let big = dir.path().join("big.json");
    std::fs::write(&big, serde_json::to_vec(&plan).unwrap()).unwrap();
    let args = ["run", "--root", "big", "--policy-root", policy.to_str().unwrap(), big.to_str().unwrap()];
    assert_eq!(planlock(&args, dir.path()), 4);
    std::fs::remove_file(big).unwrap();
    for i in 0..60 {
        copy_root(&dir.path().join("review"), &dir.path().join(format!("copy-{i:02}")));
    }
    let console = serve(&["--sessions".as_ref(), dir.path().as_os_str()], &[]);
    let cookie = console.sign_in("ada");
    let first = console.get(&cookie, "/inbox").body;
    let second = console.get(&cookie, "/inbox?page=1").body;
    let pauses = rows;
    assert_eq!((pauses(&first), pauses(&second)), (50, 14), "64 pauses, 50 a page");
    assert!(first.contains("50 of 64") && first.contains("href=\"/inbox?page=1\""), "a link to the next page");
    assert!(first.len() < 100_000, "a page of 50 rows is small: {} bytes", first.len());
    let both = format!("{first}{second}");
    assert!(!both.contains("/inbox/big/approve") && !both.contains("long words"), "no form and no shown value");
    let page = console.pause_page(&cookie, "big").body;
    // Shown whole, and again in the edit form, where it can be edited (CONTRACT §22).
    let (shown, form) = page.split_at(page.find("<details class=\"edit\"").expect("an edit form"));
    assert_eq!((shown.matches("long words").count(), form.matches("long words").count()), (3000, 3000));
    assert!(page.contains("<pre class=\"shown\">{\n  &quot;"), "as lines of pretty JSON, not escaped line breaks");
    assert!(page.contains("/inbox/big/approve"), "and is where it is decided");
    let session = console.get(&cookie, "/sessions/big").body;
    assert!(session.contains("Session id <code>") && session.contains("href=\"/inbox/big/1/remember\""), "{session}");
}

/// A client that sends pipelined requests and never reads, on many connections, holds neither
/// every slot nor the console's memory: another client is served at once, and the held
/// connections are closed when their writes cannot go on.
#[test]
fn clients_that_never_read_do_not_hold_the_console() {
    use std::net::SocketAddr;
    let dir = sessions();
    let console = serve(&["--sessions".as_ref(), dir.path().as_os_str()], &[]);
    let cookie = console.sign_in("ada");
    let target: SocketAddr = console.addr.parse().unwrap();
    // From another loopback address, as another client: 70 connections, each with pipelined
    // requests for the inbox and the login page that it never reads.
    let mut held = Vec::new();
    let pipelined = format!(
        "GET /inbox HTTP/1.1\r\nHost: {}\r\nCookie: {cookie}\r\n\r\nGET /login HTTP/1.1\r\nHost: x\r\n\r\n",
        console.addr
    )
    .repeat(200);
    for _ in 0..70 {
        let Some(mut stream) = socket2_connect(target) else { continue };
        stream.set_write_timeout(Some(std::time::Duration::from_millis(200))).unwrap();
        let _ = stream.write_all(pipelined.as_bytes());
        held.push(stream);
    }
    std::thread::sleep(std::time::Duration::from_millis(500));
    let started = std::time::Instant::now();
    let reply = console.request("GET", "/login", &[], "");
    assert_eq!(reply.status, 200);
    assert!(started.elapsed() < std::time::Duration::from_secs(3), "served at once: {:?}", started.elapsed());
    // The held connections are closed once their writes have waited 10 s.
    std::thread::sleep(std::time::Duration::from_secs(12));
    let mut closed = 0;
    for mut stream in held.into_iter().take(5) {
        stream.set_read_timeout(Some(std::time::Duration::from_secs(5))).unwrap();
        let mut sink = Vec::new();
        match stream.read_to_end(&mut sink) {
            Ok(_) => closed += 1,
            Err(e) if e.kind() == std::io::ErrorKind::ConnectionReset => closed += 1,
            Err(_) => {}
        }
    }
    assert_eq!(closed, 5, "the console closed connections whose client does not read");
}

/// `planlock serve` tells its clients apart by address (it puts each request's in the request,
/// `console::ClientAddr`): a client that keeps failing to sign in is locked out, and a person at
/// another address still signs in with the right token.
#[test]
#[cfg(target_os = "linux")]
fn failed_sign_ins_lock_out_their_own_address_only() {
    let dir = sessions();
    let console = serve(&["--sessions".as_ref(), dir.path().as_os_str()], &[]);
    let target = console.addr.parse().unwrap();
    // From 127.0.0.2: a form post, its status.
    let from_other = |token: &str| -> u16 {
        let mut stream = socket2_connect(target).expect("a connection from 127.0.0.2");
        let (body, origin) = (format!("token={token}&name=mallory"), console.origin());
        let head = format!(
            "POST /login HTTP/1.1\r\nHost: {}\r\nOrigin: {origin}\r\nConnection: close\r\n\
             Content-Type: application/x-www-form-urlencoded\r\nContent-Length: {}\r\n\r\n",
            console.addr,
            body.len()
        );
        stream.write_all(format!("{head}{body}").as_bytes()).unwrap();
        let mut reply = String::new();
        stream.read_to_string(&mut reply).unwrap();
        reply.split(' ').nth(1).and_then(|s| s.parse().ok()).unwrap()
    };
    for _ in 0..planlock::console::MAX_FAILURES {
        assert_eq!(from_other("guess"), 401);
    }
    assert_eq!(from_other(TOKEN), 429, "127.0.0.2 is locked out, even with the right token");
    // 127.0.0.1 is another client: not locked out.
    let _cookie = console.sign_in("ada");
}

/// A connection to `target` from 127.0.0.2 (another client address on the loopback), if the
/// console takes it.
fn socket2_connect(target: std::net::SocketAddr) -> Option<TcpStream> {
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    runtime.block_on(async {
        let socket = tokio::net::TcpSocket::new_v4().ok()?;
        socket.bind("127.0.0.2:0".parse().unwrap()).ok()?;
        // A small window: the console's responses back up at once, as they do for a client
        // far away that stopped reading.
        socket.set_recv_buffer_size(4096).ok()?;
        let stream =
            tokio::time::timeout(std::time::Duration::from_secs(2), socket.connect(target)).await.ok()?.ok()?;
        let stream = stream.into_std().ok()?;
        stream.set_nonblocking(false).ok()?;
        Some(stream)
    })
}

/// What a page shows is never older than the freshness bound (two seconds): a request that finds
/// the console's snapshot older reads the sessions again before it answers, so a pause a worker
/// wrote a moment ago is in the very next page, not in the one after.
#[test]
fn a_page_is_never_older_than_the_freshness_bound() {
    let dir = sessions();
    let console = serve(&["--sessions".as_ref(), dir.path().as_os_str()], &[]);
    let cookie = console.sign_in("ada");
    let pauses = rows;
    let before = pauses(&console.get(&cookie, "/inbox").body);
    copy_root(&dir.path().join("review"), &dir.path().join("written-later"));
    std::thread::sleep(std::time::Duration::from_millis(2500));
    let after = console.get(&cookie, "/inbox").body;
    assert_eq!(pauses(&after), before + 1, "the first page after the bound shows the new pause");
    assert!(after.contains("written-later"));
}

/// A program mounts the console in its own server: [`planlock::console::Console`] is a tower
/// `Service`, called here with requests the program made (no process, no socket): a stranger is
/// sent to sign in, a person signs in with the token and reads the inbox with its pauses.
#[test]
fn a_program_mounts_the_console_as_a_tower_service() {
    use http_body_util::{BodyExt, Full};
    use hyper::body::Bytes;
    use planlock::console::{Console, ConsoleOptions};
    use planlock::review::inbox::Inbox;
    use tower_service::Service;

    let dir = sessions();
    let inbox = Inbox::new(planlock::backend::FilesBackend::new(dir.path().to_owned()));
    let mut console = Console::new(inbox, TOKEN, ConsoleOptions::default()).unwrap();
    let mut call = |method: &str, path: &str, headers: &[(&str, &str)], body: &str| {
        let mut request = hyper::Request::builder().method(method).uri(path).header("host", "console.test");
        for (name, value) in headers {
            request = request.header(*name, *value);
        }
        let request = request.body(Full::new(Bytes::from(body.to_owned()))).unwrap();
        let answer = planlock::block_on(console.call(request)).unwrap();
        let (parts, body) = answer.into_parts();
        let body = planlock::block_on(body.collect()).unwrap().to_bytes();
        (parts, String::from_utf8(body.to_vec()).unwrap())
    };
    let (stranger, _) = call("GET", "/inbox", &[], "");
    // Sent to sign in, and back to the page asked for after it.
    let to = stranger.headers["location"].to_str().unwrap();
    assert_eq!((stranger.status.as_u16(), to), (303, "/login?next=%2Finbox"));
    let form = format!("token={TOKEN}&name=ada");
    let form_type = ("content-type", "application/x-www-form-urlencoded");
    let (signed, _) = call("POST", "/login", &[form_type, ("origin", "http://console.test")], &form);
    let cookie = signed.headers["set-cookie"].to_str().unwrap().split(';').next().unwrap().to_owned();
    let (page, html) = call("GET", "/inbox", &[("cookie", &cookie)], "");
    assert_eq!(page.status.as_u16(), 200, "{html}");
    assert_eq!(rows(&html), 3, "the three paused sessions");
    assert!(page.headers["content-security-policy"].to_str().unwrap().contains("script-src 'self'"));
}

/// And in steady use no request waits for that read: past half the bound, a request is answered
/// from what is kept and starts the read in the background, so the next one (still within the
/// bound) already shows what a worker wrote meanwhile.
#[test]
fn a_page_past_half_the_bound_reads_ahead_in_the_background() {
    let dir = sessions();
    let console = serve(&["--sessions".as_ref(), dir.path().as_os_str()], &[]);
    let cookie = console.sign_in("ada");
    let pauses = rows;
    let before = pauses(&console.get(&cookie, "/inbox").body);
    let read_at = std::time::Instant::now();
    copy_root(&dir.path().join("review"), &dir.path().join("written-meanwhile"));
    std::thread::sleep(std::time::Duration::from_millis(1200));
    // Served from what is kept (read 1.2 s ago); starts the read ahead.
    let _ = console.get(&cookie, "/inbox");
    std::thread::sleep(std::time::Duration::from_millis(300));
    let after = console.get(&cookie, "/inbox").body;
    let asked_within_the_bound = read_at.elapsed() < std::time::Duration::from_millis(1900);
    assert_eq!(pauses(&after), before + 1, "read ahead (asked within the bound: {asked_within_the_bound})");
}
