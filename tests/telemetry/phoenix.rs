//! Arize Phoenix from PyPI as the operator's backend: the CLI exports its spans over OTLP/HTTP
//! (configured only by the standard environment variables), and the checks read them back from
//! Phoenix's REST API (`/v1/projects/{project}/spans`), as a person would see them there.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::common::models::{Models, free_port};
use crate::common::{dirs, plan_with, policy};

/// The key the CLI is given (`OPENAI_API_KEY`): it must be on no span.
const KEY: &str = "sk-planlock-phoenix-0123456789abcdef";

/// The question the demo plan asks: content, on no span unless content capture is on.
const QUESTION: &str = "How do I rotate the API key?";

/// The Phoenix of `.ci/phoenix`, or `None` (then the case skips, loudly; under `CI` that is a
/// failure).
pub fn phoenix_dir() -> Option<PathBuf> {
    crate::common::models::installed("PLANLOCK_PHOENIX", "phoenix-v1")
}

/// A Phoenix server on 127.0.0.1 with its data in a temporary directory, killed when dropped.
struct Phoenix {
    child: Child,
    url: String,
    _data: tempfile::TempDir,
}

impl Drop for Phoenix {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Phoenix {
    fn start(dir: &Path) -> Phoenix {
        let (port, grpc, data) = (free_port(), free_port(), tempfile::tempdir().unwrap());
        let child = Command::new(dir.join("venv/bin/phoenix"))
            .arg("serve")
            .env("PHOENIX_HOST", "127.0.0.1")
            .env("PHOENIX_PORT", port.to_string())
            // Phoenix's gRPC port listens on every interface: a high, random one, unused here.
            .env("PHOENIX_GRPC_PORT", grpc.to_string())
            .env("PHOENIX_WORKING_DIR", data.path())
            .env("PHOENIX_TELEMETRY_ENABLED", "false")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("phoenix serve");
        let phoenix = Phoenix { child, url: format!("http://127.0.0.1:{port}"), _data: data };
        let (started, agent) = (Instant::now(), ureq::Agent::new_with_defaults());
        while started.elapsed() < Duration::from_secs(180) {
            if agent.get(&format!("{}/healthz", phoenix.url)).call().is_ok_and(|r| r.status() == 200) {
                println!("  phoenix ready in {:.1?}", started.elapsed());
                return phoenix;
            }
            std::thread::sleep(Duration::from_millis(250));
        }
        panic!("Phoenix did not answer /healthz within 180 s");
    }

    /// Every span of `project`, once their number has stopped growing (the export is batched).
    fn spans(&self, project: &str, at_least: usize) -> Vec<Value> {
        let agent = ureq::Agent::new_with_defaults();
        let (started, mut last) = (Instant::now(), Vec::new());
        while started.elapsed() < Duration::from_secs(60) {
            let url = format!("{}/v1/projects/{project}/spans?limit=1000", self.url);
            if let Ok(mut answer) = agent.get(&url).call() {
                let body: Value = answer.body_mut().read_json().unwrap();
                let spans = body["data"].as_array().cloned().unwrap_or_default();
                if spans.len() >= at_least && spans.len() == last.len() {
                    return spans;
                }
                last = spans;
            }
            std::thread::sleep(Duration::from_millis(500));
        }
        panic!("Phoenix holds {} spans of {project}, fewer than {at_least}", last.len());
    }
}

fn attr<'a>(span: &'a Value, key: &str) -> Option<&'a Value> {
    span["attributes"].get(key)
}

fn attr_str(span: &Value, key: &str) -> String {
    match attr(span, key) {
        Some(Value::String(s)) => s.clone(),
        Some(v) => v.to_string(),
        None => String::new(),
    }
}

fn number(span: &Value, key: &str) -> Option<u64> {
    attr(span, key).and_then(|v| v.as_u64().or_else(|| v.as_str()?.parse().ok()))
}

pub fn phoenix_reads_the_cli_s_spans(dir: &Path, m: &Models) {
    let phoenix = Phoenix::start(dir);
    let project = "planlock-test";
    let d = dirs();
    policy(d.policy.path(), "friendly");
    let plan = |name: &str, reviewed: bool| {
        let plan = plan_with(|v| {
            v["steps"][5]["payload"]["config"] = json!({ "max_tokens": 24, "temperature": 0 });
            v["metadata"]["timeouts"]["llmMs"] = json!(120_000);
            if reviewed {
                crate::common::review_one_write(v);
            }
        });
        let file = d.policy.path().join(name);
        std::fs::write(&file, plan.to_json()).unwrap();
        file
    };
    let (plain, reviewed) = (plan("plain.json", false), plan("reviewed.json", true));
    let sessions = tempfile::tempdir().unwrap();
    let cli = |args: &[&str], capture: bool| -> Output {
        let mut command = crate::common::cli::planlock();
        command
            .args(args)
            .env("OTEL_EXPORTER_OTLP_ENDPOINT", &phoenix.url)
            .env("OTEL_SERVICE_NAME", "planlock-test")
            .env("OTEL_RESOURCE_ATTRIBUTES", format!("openinference.project.name={project}"))
            // Phoenix takes traces, not metrics.
            .env("OTEL_METRICS_EXPORTER", "none")
            .env("OPENAI_API_KEY", KEY);
        if capture {
            command.env(planlock::telemetry::CAPTURE_CONTENT_ENV, "true");
        }
        command.output().unwrap()
    };
    let run = |session: &str, plan: &Path, url: &str, capture: bool| {
        let root = sessions.path().join(session);
        let args = [
            "run",
            "--root",
            root.to_str().unwrap(),
            "--policy-root",
            d.policy.path().to_str().unwrap(),
            "--llm-url",
            url,
            "--llm-model",
            "smollm2",
            plan.to_str().unwrap(),
        ];
        cli(&args, capture)
    };
    let code = |out: &Output| (out.status.code(), String::from_utf8_lossy(&out.stderr).into_owned());
    // A whole cycle on SmolLM2; one paused by the review gate, approved from the inbox by
    // another process, resumed by a third; one whose model is gone; one with content capture.
    assert_eq!(code(&run("plain", &plain, &m.chat.url, false)).0, Some(0));
    assert_eq!(code(&run("reviewed", &reviewed, &m.chat.url, false)).0, Some(4));
    let inbox = sessions.path().to_str().unwrap();
    let out = cli(&["inbox", "approve", "--sessions", inbox, "--by", "ada", "--reason", "checked", "reviewed"], false);
    assert_eq!(code(&out).0, Some(0), "{}", code(&out).1);
    assert_eq!(code(&run("reviewed", &reviewed, &m.chat.url, false)).0, Some(0));
    let gone = format!("http://127.0.0.1:{}/v1", free_port());
    assert_eq!(code(&run("failing", &plain, &gone, false)).0, Some(1));
    assert_eq!(code(&run("captured", &plain, &m.chat.url, true)).0, Some(0));

    // Two whole cycles (the cycle, 12 steps, 2 model calls); the paused one (8 steps, 2 calls,
    // the Block's guardrail span: an Allow is an event on its step), the review, the resumed one
    // (2 steps); the failed one (6 steps, 1 call).
    let spans = phoenix.spans(project, 2 * 15 + (1 + 8 + 2 + 1) + 1 + (1 + 2) + (1 + 6 + 1));
    let dump = serde_json::to_string(&spans).unwrap();
    let cycles: Vec<&Value> = spans.iter().filter(|s| s["name"] == "invoke_workflow chat").collect();
    assert_eq!(cycles.len(), 5, "{:?}", spans.iter().map(|s| &s["name"]).collect::<Vec<_>>());
    let in_trace = |trace: &Value| {
        let trace = trace.clone();
        spans.iter().filter(move |s| s["context"]["trace_id"] == trace)
    };
    let child_of = |parent: &Value| {
        let id = parent["context"]["span_id"].clone();
        spans.iter().filter(move |s| s["parent_id"] == id)
    };
    let session_of = |cycle: &&Value| attr_str(cycle, "gen_ai.conversation.id");

    // Every cycle is a root (or the child of its paused cycle), Phoenix files it under the
    // session, and its steps are its children, named after their types.
    for cycle in &cycles {
        assert_eq!(attr_str(cycle, "session.id"), session_of(cycle), "Phoenix's session is the conversation id");
        assert_eq!(attr_str(cycle, "gen_ai.operation.name"), "invoke_workflow");
        assert_eq!(attr_str(cycle, "gen_ai.workflow.name"), "chat");
        assert!(attr(cycle, "planlock.plan.hash").is_some() && attr(cycle, "planlock.cycle.number").is_some());
        // Its children: its steps, and for a paused cycle the review and the resumed cycle.
        let steps: Vec<&Value> = child_of(cycle).filter(|s| attr(s, "planlock.step.type").is_some()).collect();
        assert!(!steps.is_empty() && steps.iter().all(|s| s["name"] == attr_str(s, "planlock.step.type")));
        let mut others = child_of(cycle).filter(|s| attr(s, "planlock.step.type").is_none());
        assert!(others.all(|s| s["name"] == "review approved" || s["name"] == "invoke_workflow chat"));
    }

    // The model calls: the conventions' names, and the token counts Phoenix derives from them.
    let chats: Vec<&Value> =
        spans.iter().filter(|s| s["name"] == "chat smollm2" && attr(s, "error.type").is_none()).collect();
    assert_eq!(chats.len(), 2 * 3, "LLMCall and SummarizeMemory of the two whole cycles and of the paused one");
    for chat in &chats {
        assert_eq!(chat["span_kind"], "LLM", "Phoenix reads gen_ai.operation.name = chat as an LLM span");
        assert_eq!(attr_str(chat, "gen_ai.provider.name"), "openai");
        assert_eq!(attr_str(chat, "gen_ai.request.model"), "smollm2");
        assert_eq!(attr_str(chat, "server.address"), "127.0.0.1");
        let (input, output) = (number(chat, "gen_ai.usage.input_tokens"), number(chat, "gen_ai.usage.output_tokens"));
        assert!(input > Some(0) && output > Some(0), "{chat}");
        assert_eq!(number(chat, "llm.token_count.prompt"), input, "Phoenix's prompt count: {chat}");
        assert_eq!(number(chat, "llm.token_count.completion"), output, "Phoenix's completion count: {chat}");
        assert_eq!(attr_str(chat, "llm.model_name"), attr_str(chat, "gen_ai.response.model"));
        let parent = spans.iter().find(|s| s["context"]["span_id"] == chat["parent_id"]).expect("its step");
        assert!(["LLMCall", "SummarizeMemory"].contains(&parent["name"].as_str().unwrap()), "{parent}");
    }

    // One trace across the pause: the paused cycle, the reviewer's decision and the resumed
    // cycle, the resumed one the paused one's child.
    let reviewed_id = cycles.iter().find(|c| c["parent_id"] != Value::Null).map(session_of).expect("a resumed cycle");
    let mine: Vec<&&Value> = cycles.iter().filter(|c| session_of(c) == reviewed_id).collect();
    assert_eq!(mine.len(), 2);
    let (paused, resumed) =
        if attr_str(mine[0], "planlock.outcome") == "paused" { (mine[0], mine[1]) } else { (mine[1], mine[0]) };
    assert_eq!(attr_str(paused, "planlock.outcome"), "paused");
    assert_eq!(attr_str(resumed, "planlock.outcome"), "completed");
    assert_eq!(resumed["context"]["trace_id"], paused["context"]["trace_id"]);
    assert_eq!(resumed["parent_id"], paused["context"]["span_id"]);
    let review: Vec<&Value> =
        in_trace(&paused["context"]["trace_id"]).filter(|s| s["name"] == "review approved").collect();
    assert_eq!(review.len(), 1, "the decision made by another process is in the trace");
    assert_eq!(attr_str(resumed, "planlock.cycle.resumed_at"), "7");

    // The failed cycle: error.type on the call, the step and the cycle, each an error.
    let failed = cycles.iter().find(|c| attr_str(c, "planlock.outcome") == "failed").expect("the failed cycle");
    assert_eq!(attr_str(failed, "error.type"), "step-failed");
    assert_eq!(attr_str(failed, "planlock.failure.class"), "CycleFail");
    let failed_trace: Vec<&Value> = in_trace(&failed["context"]["trace_id"]).collect();
    let call = failed_trace.iter().find(|s| s["name"] == "chat smollm2").expect("the failed call's span");
    assert!(attr_str(call, "error.type").starts_with("model-"), "{call}");
    for span in failed_trace.iter().filter(|s| attr(s, "error.type").is_some()) {
        assert_eq!(span["status_code"], "ERROR", "{span}");
    }

    // No key anywhere; the question only in the cycle with content capture on.
    assert!(!dump.contains(KEY), "the API key reached Phoenix");
    let captured = cycles.iter().find(|c| {
        session_of(c) != reviewed_id && c != &failed && {
            in_trace(&c["context"]["trace_id"]).any(|s| attr(s, "gen_ai.input.messages").is_some())
        }
    });
    let captured = captured.expect("the cycle with content capture on");
    for span in &spans {
        let text = span.to_string();
        let same = span["context"]["trace_id"] == captured["context"]["trace_id"];
        assert!(!text.contains(QUESTION) || same, "content without capture: {span}");
    }
    assert!(in_trace(&captured["context"]["trace_id"]).any(|s| s.to_string().contains(QUESTION)));
    // With capture on, what Phoenix's Input and Output panels and its Sessions read: the cycle's
    // prompt and answer on the cycle, a call's messages on the call.
    assert!(attr_str(captured, "input.value").contains(QUESTION), "{captured}");
    assert!(!attr_str(captured, "output.value").is_empty(), "{captured}");
    let mut calls = in_trace(&captured["context"]["trace_id"]).filter(|s| s["name"] == "chat smollm2");
    assert!(calls.all(|c| !attr_str(c, "input.value").is_empty() && !attr_str(c, "output.value").is_empty()));
    let asked = in_trace(&captured["context"]["trace_id"]).filter(|s| s["name"] == "chat smollm2");
    assert!(asked.clone().any(|c| attr_str(c, "input.value").contains(QUESTION)), "the LLMCall's question");
    // Span kinds Phoenix understands; the paused cycle's Block is its one guardrail span.
    assert_eq!(paused["span_kind"], "CHAIN", "{paused}");
    let guardrails: Vec<&Value> =
        in_trace(&paused["context"]["trace_id"]).filter(|s| s["name"] == "apply_guardrail").collect();
    assert_eq!(guardrails.len(), 1);
    assert_eq!(guardrails[0]["span_kind"], "GUARDRAIL");
    println!("  phoenix: {} spans, {} traces", spans.len(), cycles.len() - 1);
}
