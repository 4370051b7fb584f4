//! The console as a reviewer's workplace, over plain HTTP (CONTRACT §15): the pages pulse live on
//! `/events` when another process pauses, a session's page explains each cycle once (its
//! failure's message escaped, its trace linked), a read-only console says so and asks for no
//! name. The browser's view of the same is `tests/browser/console.mjs`.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::common::console::{TOKEN, serve};
use crate::console::{copy_root, sessions};

/// The pulses a `/events` stream sent so far: `(pending, version)` each.
fn pulses(text: &str) -> Vec<(u64, String)> {
    text.split("event: pulse\ndata: ")
        .skip(1)
        .filter_map(|rest| serde_json::from_str::<Value>(rest.lines().next()?).ok())
        .map(|v| (v["pending"].as_u64().unwrap(), v["version"].as_str().unwrap().to_owned()))
        .collect()
}

#[test]
fn the_pages_pulse_live_on_events_when_another_process_pauses() {
    let dir = sessions();
    let console = serve(&["--sessions".as_ref(), dir.path().as_os_str()], &[]);
    assert_eq!(console.request("GET", "/events", &[], "").status, 303, "signed in, as every page");
    let cookie = console.sign_in("ada");
    let mut stream = TcpStream::connect(&console.addr).unwrap();
    stream.set_read_timeout(Some(Duration::from_millis(200))).unwrap();
    let ask = format!("GET /events HTTP/1.1\r\nHost: {}\r\nCookie: {cookie}\r\n\r\n", console.addr);
    stream.write_all(ask.as_bytes()).unwrap();
    let mut text = String::new();
    let mut read_until = |text: &mut String, count: usize, within: Duration| {
        let started = Instant::now();
        let mut buf = [0u8; 4096];
        while pulses(text).len() < count && started.elapsed() < within {
            if let Ok(n) = stream.read(&mut buf) {
                text.push_str(&String::from_utf8_lossy(&buf[..n]));
            }
        }
    };
    read_until(&mut text, 1, Duration::from_secs(5));
    let head = text.to_lowercase();
    assert!(head.starts_with("http/1.1 200") && head.contains("content-type: text/event-stream"), "{text}");
    assert!(head.contains("content-security-policy: default-src 'none'"), "{text}");
    assert!(text.contains("retry: 1000"), "{text}");
    let first = pulses(&text)[0].clone();
    assert_eq!(first.0, 3, "three pauses wait");
    // Another process pauses a session: the stream says so within 3 s (half a second to look,
    // at most two for the snapshot), with nothing asked.
    let paused_at = Instant::now();
    copy_root(&dir.path().join("review"), &dir.path().join("paused-meanwhile"));
    read_until(&mut text, 2, Duration::from_secs(6));
    let all = pulses(&text);
    assert!(all.len() >= 2, "a second pulse: {text}");
    assert_eq!(all[1].0, 4, "{all:?}");
    assert_ne!(all[1].1, first.1, "a new version");
    assert!(paused_at.elapsed() <= Duration::from_secs(3), "{:?}", paused_at.elapsed());
}

#[test]
fn a_sessions_page_explains_each_cycle_once_with_its_failure_and_trace() {
    let dir = sessions();
    // A later cycle of `calm` failed: its entry, as the runtime keeps it, with a message that
    // carries markup and the trace its spans are in.
    let path = dir.path().join("calm").join(planlock::session::HISTORY_FILE);
    let text = std::fs::read_to_string(&path).unwrap();
    let mut failed: Value = serde_json::from_str(text.lines().last().unwrap()).unwrap();
    failed["cycle"] = json!(2);
    failed["end"] = json!("failed");
    failed["failure"] = json!({
        "code": "model-unreachable", "class": "CycleFail", "stepId": "llm",
        "message": "the model server at <script>alert(9)</script> did not answer"
    });
    failed["report"]["trace_id"] = json!("4bf92f3577b34da6a3ce929d0e0e4736");
    std::fs::write(&path, format!("{text}{failed}\n")).unwrap();
    let trace_url = "http://127.0.0.1:6006/traces/{traceId}";
    let console = serve(&["--sessions".as_ref(), dir.path().as_os_str()], &["--trace-url", trace_url]);
    let cookie = console.sign_in("ada");
    let page = console.get(&cookie, "/sessions/calm").body;
    assert_eq!(page.matches("<section class=\"cycle").count(), 2, "{page}");
    assert!(page.contains("failed: model-unreachable (CycleFail) at step llm"), "{page}");
    assert!(page.contains("the model server at &lt;script&gt;alert(9)&lt;&#x2f;script&gt; did not answer"));
    assert!(!page.contains("<script>alert(9)"));
    assert!(
        page.contains("href=\"http:&#x2f;&#x2f;127.0.0.1:6006&#x2f;traces&#x2f;4bf92f3577b34da6a3ce929d0e0e4736\""),
        "{page}"
    );
    assert!(page.contains("<td>save (PersistSession)</td>") && page.contains("<td>llm (LLMCall)</td>"), "{page}");
    // A trace URL without `{traceId}` is refused at the start.
    let out = crate::common::cli::planlock()
        .args(["serve", "--sessions", ".", "--trace-url", "http://127.0.0.1:6006/traces"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2), "{}", String::from_utf8_lossy(&out.stderr));
}

#[test]
fn a_read_only_console_says_so_and_asks_for_no_name() {
    let dir = sessions();
    let console = serve(&["--sessions".as_ref(), dir.path().as_os_str()], &["--read-only"]);
    let login = console.request("GET", "/login", &[], "").body;
    assert!(login.contains("This console is read-only") && !login.contains("name=\"name\""), "{login}");
    assert!(!login.contains("data-pending"), "no count before sign-in");
    let origin = console.origin();
    let signed = console.request("POST", "/login", &[("Origin", &origin)], &format!("token={TOKEN}"));
    assert_eq!(signed.status, 303, "{}", signed.body);
    let cookie = signed.headers.lines().find_map(|l| l.strip_prefix("set-cookie: ")).unwrap();
    let cookie = cookie.split(';').next().unwrap();
    let page = console.pause_page(cookie, "review").body;
    assert!(page.contains("This console is read-only") && !page.contains("<form class=\"decide"), "{page}");
}

/// The console's leftovers (CONTRACT §15): a parameter that is not a filter is named, its value
/// never repeated; a link to a pause that has ended says what became of it, with links to its
/// session and to the pause waiting now; a refused decision returns to the pause's page with the
/// reason kept and the refusal beside the form.
#[test]
fn the_console_says_what_happened_and_repeats_nothing_from_the_url() {
    use crate::common::console::decide_fields;
    let dir = sessions();
    let console = serve(&["--sessions".as_ref(), dir.path().as_os_str()], &[]);
    let (cookie, origin) = (console.sign_in("ada"), console.origin());
    let page = console.get(&cookie, "/inbox?notice=Your+account+is+locked+call+555");
    assert_eq!(page.status, 400);
    assert!(page.body.contains("`notice`: not a filter"), "{}", page.body);
    assert!(
        !page.body.contains("call 555") && !page.body.contains("locked"),
        "a value from the URL is repeated: {}",
        page.body
    );
    let crafted = console.get(&cookie, "/inbox?Your+account+is+locked+call+555=1");
    assert!(!crafted.body.contains("locked") && crafted.body.contains("a parameter: not a filter"), "{}", crafted.body);
    // A blank reason: refused, back on the pause's page, the refusal beside the form.
    let pause = console.pause_page(&cookie, "other");
    let approve = decide_fields(&pause.body, "/inbox/other/approve");
    let post =
        |path: &str, body: &str| console.request("POST", path, &[("Cookie", &cookie), ("Origin", &origin)], body);
    let reply = post("/inbox/other/approve", &format!("{approve}&reason=+"));
    let to = reply.headers.lines().find_map(|l| l.strip_prefix("location: ")).unwrap().to_owned();
    assert!(to.starts_with("/inbox/other/1/"), "{to}");
    let shown = console.get(&cookie, &to).body;
    let form = &shown[shown.find("action=\"/inbox/other/approve\"").unwrap()..];
    assert!(form[..form.find("</form>").unwrap()].contains("class=\"flash error\""), "beside the form: {shown}");
    // A pause decided meanwhile: the typed reason comes back in its form.
    let reject = decide_fields(&pause.body, "/inbox/other/reject");
    assert_eq!(post("/inbox/other/approve", &format!("{approve}&reason=looks+right")).status, 303);
    let reply = post("/inbox/other/reject", &format!("{reject}&reason=my+careful+words"));
    let to = reply.headers.lines().find_map(|l| l.strip_prefix("location: ")).unwrap().to_owned();
    let shown = console.get(&cookie, &to).body;
    assert!(shown.contains("already-decided") && shown.contains("my careful words"), "{shown}");
    // One operator's decision: the name nobody vouched for is marked where it is shown.
    assert!(shown.contains("by ada (unverified name)"), "{shown}");
    // Acted on: the old link says what became of the pause.
    let policy = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/policy");
    let plan = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/plans/reviewed_plan.json");
    let out = crate::common::cli::planlock()
        .current_dir(dir.path())
        .args(["run", "--root", "other", "--policy-root"])
        .arg(&policy)
        .arg(&plan)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    let ended = console.get(&cookie, to.split('?').next().unwrap());
    assert_eq!(ended.status, 404);
    let said = &ended.body;
    assert!(said.contains("approved by `ada` (unverified name)") && said.contains("acted on by cycle 1"), "{said}");
    assert!(ended.body.contains("href=\"/sessions/other\""), "{}", ended.body);
}
