//! Secrets never leave the process (CONTRACT §10, §11): a model server that echoes the request's
//! `Authorization` header back (in an error, a plain body, the answer, the summary that gets
//! stored, the model name, a redirect) and a URL with a password in it. After each run, the
//! secret is searched in stdout, stderr, the JSON report, every file under the session root
//! (the SQLite database and its WAL included) and the recorded spans: zero hits.
#![cfg(feature = "openai")]

use crate::common;

use std::path::Path;
use std::sync::{Arc, Mutex};

use serde_json::{Value, json};
use wiremock::{Mock, MockServer, Request, Respond, ResponseTemplate};

use common::{plan_with, policy};

const KEY: &str = "sk-echo-5ecret-key-0123456789";
const PASSWORD: &str = "pw-5ecret-in-url";

/// Answers with `make(the request's Authorization header)`.
struct Echo(fn(&str) -> ResponseTemplate);

impl Respond for Echo {
    fn respond(&self, request: &Request) -> ResponseTemplate {
        let auth = request.headers.get("authorization").and_then(|v| v.to_str().ok()).unwrap_or("(none)");
        (self.0)(auth)
    }
}

/// `text` with every character of the secret JSON-escaped as `\uXXXX`, which a scrub of the raw
/// body alone would miss.
fn escaped(text: &str) -> String {
    text.chars().map(|c| format!("\\u{:04x}", c as u32)).collect()
}

/// `text` percent-encoded, every byte.
fn percent(text: &str) -> String {
    text.bytes().map(|b| format!("%{b:02x}")).collect()
}

fn base64(text: &str) -> String {
    use base64::Engine as _;
    base64::engine::general_purpose::STANDARD.encode(text)
}

/// What a reader could decode a text into: as written, its JSON escapes decoded, its percent
/// escapes decoded, and its base64 runs decoded (written here, not taken from the library).
fn decodings(text: &str) -> Vec<String> {
    let mut json = String::new();
    let mut rest = text;
    while let Some(at) = rest.find("\\u") {
        json.push_str(&rest[..at]);
        let code = rest.get(at + 2..at + 6).and_then(|h| u32::from_str_radix(h, 16).ok());
        match code.and_then(char::from_u32) {
            Some(c) => {
                json.push(c);
                rest = &rest[at + 6..];
            }
            None => {
                json.push_str("\\u");
                rest = &rest[at + 2..];
            }
        }
    }
    json.push_str(rest);
    let bytes = text.as_bytes();
    let (mut percent, mut i) = (Vec::new(), 0);
    while i < bytes.len() {
        match (
            bytes[i],
            bytes.get(i + 1..i + 3).and_then(|h| u8::from_str_radix(std::str::from_utf8(h).ok()?, 16).ok()),
        ) {
            (b'%', Some(b)) => {
                percent.push(b);
                i += 3;
            }
            (b, _) => {
                percent.push(b);
                i += 1;
            }
        }
    }
    let mut views = vec![text.to_owned(), json, String::from_utf8_lossy(&percent).into_owned()];
    use base64::Engine as _;
    for run in text.split(|c: char| !(c.is_ascii_alphanumeric() || c == '+' || c == '/' || c == '=')) {
        if let Ok(bytes) = base64::engine::general_purpose::STANDARD.decode(run.trim_end_matches('=')) {
            views.push(String::from_utf8_lossy(&bytes).into_owned());
        } else if let Ok(bytes) = base64::engine::general_purpose::STANDARD_NO_PAD.decode(run.trim_end_matches('=')) {
            views.push(String::from_utf8_lossy(&bytes).into_owned());
        }
    }
    views
}

/// Whether `text`, decoded any way a reader could, shows twelve or more characters of `secret`
/// in a row (all of a shorter one).
fn shows(text: &str, secret: &str) -> bool {
    let run = secret.len().min(12);
    decodings(text)
        .iter()
        .any(|view| secret.as_bytes().windows(run).any(|w| view.contains(std::str::from_utf8(w).unwrap())))
}

/// The server's answers: each echoes the header somewhere.
fn echoes() -> Vec<(&'static str, Echo)> {
    vec![
        (
            "401 JSON error",
            Echo(|a| {
                ResponseTemplate::new(401).set_body_json(json!({"error": {"message": format!("invalid key: {a}")}}))
            }),
        ),
        ("500 plain body", Echo(|a| ResponseTemplate::new(500).set_body_string(format!("upstream said {a}")))),
        ("200 not JSON", Echo(|a| ResponseTemplate::new(200).set_body_string(format!("<html>{a}</html>")))),
        (
            "200 JSON of the wrong type",
            Echo(|a| ResponseTemplate::new(200).set_body_string(format!("{{\"choices\": \"{}\"}}", escaped(a)))),
        ),
        (
            "200 percent-encoded echo",
            Echo(|a| ResponseTemplate::new(200).set_body_string(format!("<a href=\"/?auth={}\">", percent(a)))),
        ),
        (
            "401 echoing the key cut short",
            Echo(|a| {
                let cut = &a[..a.len() - 4];
                ResponseTemplate::new(401).set_body_json(json!({"error": {"message": format!("bad key {cut}")}}))
            }),
        ),
        ("500 base64 echo", Echo(|a| ResponseTemplate::new(500).set_body_string(format!("token {}", base64(a))))),
        (
            "307 redirect",
            Echo(|a| {
                ResponseTemplate::new(307)
                    .insert_header("location", format!("http://evil.example/?k={}", a.replace(' ', "+")))
            }),
        ),
        // Succeeds: the answer, the model name and the summary (which is stored) all echo it,
        // once as written and once JSON-escaped.
        (
            "200 echoing answer",
            Echo(|a| {
                let summary = json!({ "summary": format!("the key was {a}"), "keywords": [a] }).to_string();
                let body = format!(
                    "{{\"model\": \"{}\", \"choices\": [{{\"message\": {{\"role\": \"assistant\", \"content\": {}}}}}]}}",
                    escaped(a),
                    serde_json::to_string(&summary).unwrap()
                );
                ResponseTemplate::new(200).set_body_string(body).insert_header("content-type", "application/json")
            }),
        ),
    ]
}

/// Every byte under `dir`, each file's bytes searched for `needle`; the files that hold it.
fn files_holding(dir: &Path, needle: &str) -> Vec<String> {
    let mut hits = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            hits.extend(files_holding(&path, needle));
        } else if let Ok(bytes) = std::fs::read(&path)
            && bytes.windows(needle.len()).any(|w| w == needle.as_bytes())
        {
            hits.push(path.display().to_string());
        }
    }
    hits
}

fn assert_nowhere(what: &str, texts: &[&str], root: &Path) {
    for secret in [KEY, PASSWORD] {
        for text in texts {
            assert!(!shows(text, secret), "{what}: the secret shows: {text}");
        }
        assert_eq!(files_holding(root, secret), Vec::<String>::new(), "{what}: stored under the root");
    }
}

#[test]
fn a_server_echoing_the_key_never_makes_planlock_show_or_store_it() {
    let rt = tokio::runtime::Runtime::new().unwrap();
    let (pol, dir) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    policy(pol.path(), "friendly");
    let plan = dir.path().join("plan.json");
    std::fs::write(&plan, plan_with(|_| {}).to_json()).unwrap();
    for (what, echo) in echoes() {
        let server = rt.block_on(MockServer::start());
        rt.block_on(Mock::given(wiremock::matchers::method("POST")).respond_with(echo).mount(&server));
        // The URL carries a password too.
        let url = server.uri().replace("http://", &format!("http://ada:{PASSWORD}@")) + "/v1";
        let root = tempfile::tempdir().unwrap();
        for format in ["text", "json"] {
            let out = crate::common::cli::planlock()
                .args(["run", "--format", format, "--root"])
                .arg(root.path())
                .arg("--policy-root")
                .arg(pol.path())
                .args(["--llm-url", &url, "--llm-model", "m", "--llm-api-key-env", "ECHO_KEY"])
                .arg(&plan)
                .env("ECHO_KEY", KEY)
                .output()
                .unwrap();
            let (stdout, stderr) = (String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
            assert_nowhere(&format!("{what} ({format})"), &[&stdout, &stderr], root.path());
            // The server did see the key: it was sent, and echoed.
            let seen = rt.block_on(server.received_requests()).unwrap();
            assert!(seen.iter().all(|r| r.headers.get("authorization").unwrap() == &format!("Bearer {KEY}")[..]));
            if what == "200 echoing answer" {
                assert_eq!(out.status.code(), Some(0), "{what}: {stdout}{stderr}");
            } else {
                assert_eq!(out.status.code(), Some(1), "{what}: {stdout}{stderr}");
            }
            if format == "json" {
                let report: Value = serde_json::from_str(&stdout).unwrap();
                assert_eq!(report["model"]["url"], server.uri() + "/v1", "no userinfo");
            } else {
                assert!(stdout.contains(&format!("at {}/v1", server.uri())), "{stdout}");
            }
            if what == "307 redirect" && format == "json" {
                let report: Value = serde_json::from_str(&stdout).unwrap();
                let error = report["error"].as_str().unwrap();
                assert!(error.contains("HTTP 307, a redirect to") && error.contains("evil.example"), "{error}");
                assert!(!error.contains("cannot reach"), "{error}");
            }
        }
    }
}

#[test]
fn the_spans_of_a_cycle_against_an_echoing_server_hold_no_secret() {
    use planlock::handlers::{ModelConfig, OpenAiModel};
    use planlock::schema::PersistSessionResult;
    use planlock::steps::*;
    use tracing_subscriber::layer::SubscriberExt;

    let rt = tokio::runtime::Runtime::new().unwrap();
    let server = rt.block_on(MockServer::start());
    let (_, echo) = echoes().pop().unwrap();
    rt.block_on(Mock::given(wiremock::matchers::method("POST")).respond_with(echo).mount(&server));
    let url = server.uri().replace("http://", &format!("http://ada:{PASSWORD}@")) + "/v1";
    let model = OpenAiModel::new(ModelConfig::new(url, "m").api_key(KEY));
    let save = planlock::handler_fn(|_, _: &planlock::schema::PersistSessionPayload| {
        Ok(PersistSessionResult { status: "saved".into() })
    });
    let handlers = planlock::demo::Demo::new()
        .handlers()
        .on::<LLMCall>(model.clone())
        .on::<SummarizeMemory>(model)
        .on::<PersistSession>(save);
    let exec = planlock::Executor::new(handlers).record_content(true);
    let fields = Arc::new(Mutex::new(Vec::new()));
    let subscriber = tracing_subscriber::registry().with(common::RecordedFields(fields.clone()));
    let outcome = {
        let _guard = tracing::subscriber::set_default(subscriber);
        rt.block_on(exec.run(&plan_with(|_| {}))).unwrap()
    };
    let done = outcome.completed().unwrap();
    assert!(done.ledger.get::<LLMCall>().unwrap().response.contains("[redacted]"));
    let fields = fields.lock().unwrap().clone();
    assert!(fields.iter().any(|(k, v)| k == "gen_ai.response.model" && v.contains("[redacted]")), "{fields:?}");
    for (name, value) in &fields {
        assert!(!value.contains(KEY) && !value.contains(PASSWORD), "{name} = {value}");
    }
}

/// An embeddings server that fails each way the chat model can: planlock reports the cause with
/// the chat model's code, before the cycle (the probe that learns the dimension) and in it (a
/// search), with the key scrubbed in every spelling, and with the same class in both places.
#[test]
fn an_embeddings_server_failing_gives_its_cause_and_never_the_key() {
    let rt = tokio::runtime::Runtime::new().unwrap();
    let (pol, dir) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    policy(pol.path(), "friendly");
    let plan = dir.path().join("plan.json");
    std::fs::write(&plan, plan_with(|_| {}).to_json()).unwrap();
    let bundle = concat!(env!("CARGO_MANIFEST_DIR"), "/examples/bundles/semantic");
    let big = "x".repeat(9 << 20);
    let failures: Vec<(&str, ResponseTemplate, &str, &str)> = vec![
        (
            "401",
            ResponseTemplate::new(401)
                .set_body_json(json!({"error": {"message": format!("invalid key {}", escaped(KEY))}})),
            "model-http-status",
            "HTTP 401",
        ),
        (
            "307",
            ResponseTemplate::new(307).insert_header("location", format!("http://evil.example/?k={}", percent(KEY))),
            "model-redirect",
            "redirect",
        ),
        (
            "a body past the limit",
            ResponseTemplate::new(200).set_body_string(big),
            "model-malformed-body",
            "larger than",
        ),
        (
            "not JSON",
            ResponseTemplate::new(200).set_body_string(format!("<p>{}</p>", base64(KEY))),
            "model-malformed-body",
            "not an embeddings answer",
        ),
    ];
    let probe = json!({ "data": [ { "embedding": [0.6, 0.8], "index": 0 } ] });
    for (what, failure, code, cause) in failures {
        for (phase, probe_ok) in [("before the cycle", false), ("in the cycle", true)] {
            let server = rt.block_on(MockServer::start());
            if probe_ok {
                let ok = ResponseTemplate::new(200).set_body_json(probe.clone());
                rt.block_on(
                    Mock::given(wiremock::matchers::method("POST")).respond_with(ok).up_to_n_times(1).mount(&server),
                );
            }
            rt.block_on(Mock::given(wiremock::matchers::method("POST")).respond_with(failure.clone()).mount(&server));
            let root = tempfile::tempdir().unwrap();
            let url = server.uri() + "/v1";
            let out = crate::common::cli::planlock()
                .args(["run", "--format", "json", "--bundle", bundle, "--root"])
                .arg(root.path())
                .arg("--policy-root")
                .arg(pol.path())
                .args(["--embed-url", &url, "--embed-model", "e5", "--embed-api-key-env", "ECHO_KEY"])
                .arg(&plan)
                .env("ECHO_KEY", KEY)
                .output()
                .unwrap();
            let (stdout, stderr) = (String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
            let what = format!("{what}, {phase}");
            assert_nowhere(&what, &[&stdout, &stderr], root.path());
            let report: Value = serde_json::from_str(&stdout).unwrap_or_else(|e| panic!("{what}: {e}: {stdout}"));
            let error = report["error"].as_str().unwrap_or_default();
            assert!(error.contains(cause), "{what}: the cause is named: {error}");
            // The class of RetrieveMemory, the first step that asks the embedder (CycleFail):
            // before the cycle as in it.
            assert_eq!(out.status.code(), Some(1), "{what}: {report}");
            if probe_ok {
                assert_eq!(report["errorCode"], "step-failed", "{what}: {report}");
                assert!(error.contains("RetrieveMemory"), "{what}: {error}");
            } else {
                assert_eq!(report["errorCode"], code, "{what}: {report}");
            }
        }
    }
}
