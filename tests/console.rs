#![cfg(all(feature = "cli", unix))]
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

mod common;
use common::console::{TOKEN, field, serve, url_segment};

const HOSTILE: &str = "<script>alert(1)</script> \"onmouseover=alert(2) \u{1b}[31m \u{202e}evil";
const HOSTILE_NAME: &str = "x\u{1b}[2J\u{202e}<img src=x onerror=alert(3)>";

fn manifest(path: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join(path)
}

fn planlock(args: &[&str], root: &Path) -> i32 {
    Command::new(env!("CARGO_BIN_EXE_planlock")).current_dir(root).args(args).output().unwrap().status.code().unwrap()
}

/// Session roots under a directory: `calm` completed, `review` paused, a hostile one paused with
/// hostile text in what it shows.
fn sessions() -> tempfile::TempDir {
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
    let inbox = console.get(&cookie, "/inbox");
    assert_eq!(inbox.status, 200);
    assert!(inbox.body.contains("<title>(3) Inbox"), "the pending count is in the title");
    assert!(inbox.headers.contains("content-security-policy: default-src 'none'; style-src 'self'; script-src 'self'"));
    let csrf = field(&inbox.body, "/inbox/review/approve", "csrf").to_owned();
    let digest = field(&inbox.body, "/inbox/review/approve", "digest").to_owned();
    assert_eq!(digest.len(), 64);
    // Refused: without the CSRF token, from another origin, with another login's token.
    let approve =
        |headers: &[(&str, &str)], body: &str| console.request("POST", "/inbox/review/approve", headers, body);
    let body = format!("csrf={csrf}&digest={digest}&reason=checked+by+hand");
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
    assert!(done.headers.contains("location: /inbox?notice=recorded"), "{}", done.headers);
    let log = planlock::block_on(records.approval_log()).unwrap();
    let ApprovalEvent::Decided { decision } = &log.events[0] else { panic!("{log:?}") };
    assert_eq!((decision.by.as_str(), decision.justification.as_str()), ("ada", "checked by hand"));
    assert_eq!(decision.shown_digest.map(|d| d.to_string()), Some(digest));
    // A decision on what the page did not show is refused, and says why.
    let csrf_other = field(&console.get(&cookie, "/inbox").body, "/inbox/other/reject", "csrf").to_owned();
    let stale = format!("csrf={csrf_other}&digest={}&reason=no", "0".repeat(64));
    let reply = console.request("POST", "/inbox/other/reject", &[("Cookie", &cookie), ("Origin", &origin)], &stale);
    assert!(reply.headers.contains("notice=not+recorded"), "{}", reply.headers);
    // The session's next run completes the approved cycle; its page shows every step.
    let policy = manifest("examples/policy");
    let plan = manifest("examples/plans/reviewed_plan.json");
    let args = ["run", "--root", "review", "--policy-root", policy.to_str().unwrap(), plan.to_str().unwrap()];
    assert_eq!(planlock(&args, dir.path()), 0);
    let page = console.get(&cookie, "/sessions/review");
    assert_eq!(page.status, 200);
    assert!(page.body.contains("Cycle 1 <span class=\"status completed\">completed</span>"), "{}", page.body);
    assert!(page.body.contains("Approved at <code>remember</code> by ada: checked by hand"));
    assert!(page.body.contains("<td>PersistSession</td>"));
    // Rejected from the inbox: the next run abandons the cycle.
    let inbox = console.get(&cookie, "/inbox").body;
    let (csrf, digest) = (field(&inbox, "/inbox/other/reject", "csrf"), field(&inbox, "/inbox/other/reject", "digest"));
    let body = format!("csrf={csrf}&digest={digest}&reason=not+this+one");
    let reply = console.request("POST", "/inbox/other/reject", &[("Cookie", &cookie), ("Origin", &origin)], &body);
    assert!(reply.headers.contains("notice=recorded"), "{}", reply.headers);
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
    let inbox = console.get(&cookie, "/inbox").body;
    assert!(inbox.contains("&lt;script&gt;alert(1)&lt;/script&gt;"), "the plan's text is shown as text");
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
    assert!(inbox.contains("<title>(3) Inbox") && !inbox.contains("<form class=\"decide"), "{inbox}");
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
fn chromium() -> Option<PathBuf> {
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
        .env("PLANLOCK_BIN", env!("CARGO_BIN_EXE_planlock"))
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
    assert_eq!(said.matches("ok: ").count(), 8, "{said}");
    for page in ["inbox", "session", "sessions"] {
        let png = std::fs::read(shots_dir.join(format!("console-{page}.png"))).unwrap();
        assert!(png.starts_with(b"\x89PNG") && png.len() > 10_000, "{page}");
    }
}
