//! The tests' support layer: one way to run the CLI ([`cli`]), one runtime fixture
//! ([`runtime_on`], [`demo_runtime`]), the policy and plans the tests share, the servers they start.
#![allow(dead_code)]

pub mod around;
#[cfg(feature = "openai")]
pub mod chat;
pub mod cli;
pub mod console;
pub mod edits;
pub mod goals;
#[cfg(feature = "openai")]
pub mod models;
#[cfg(feature = "postgres")]
pub mod pg;
pub mod semantic;
#[cfg(feature = "postgres")]
pub mod vectors;
pub mod webhooks;
pub mod worker;

use std::path::Path;

use planlock::ValidPlan;
use serde_json::{Value, json};

pub const DEMO_PLAN: &str = include_str!("../../examples/plans/demo_plan.json");

pub fn policy(root: &Path, tone: &str) {
    let dir = root.join("profiles/default");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("modes.yaml"), format!("chat:\n  tone: {tone}\n")).unwrap();
    std::fs::write(dir.join("triggers.yaml"), "[]\n").unwrap();
    std::fs::write(dir.join("bundles.yaml"), "{}\n").unwrap();
}

/// The demo review gate on a plan, and one write left for it to review (`PersistMemory`: the
/// other writes removed), as the approval tests run it.
pub fn review_one_write(v: &mut Value) {
    v["validators"] = json!([planlock::demo::ReviewGate::signature()]);
    let writes = ["PersistDecision", "PersistEvidence", "LinkDecisionEvidence"];
    v["steps"].as_array_mut().unwrap().retain(|s| !writes.contains(&s["type"].as_str().unwrap()));
}

pub fn plan_with(f: impl FnOnce(&mut Value)) -> ValidPlan {
    let mut v: Value = serde_json::from_str(DEMO_PLAN).unwrap();
    v["steps"][0]["payload"]["repoPath"] = json!(concat!(env!("CARGO_MANIFEST_DIR"), "/src"));
    f(&mut v);
    ValidPlan::from_value(&v).unwrap()
}

/// A tracing layer that keeps every span field given or recorded, as `(name, Debug of the value)`.
#[derive(Clone, Default)]
pub struct RecordedFields(pub std::sync::Arc<std::sync::Mutex<Vec<(String, String)>>>);

struct Visitor<'a>(&'a mut Vec<(String, String)>);

impl tracing::field::Visit for Visitor<'_> {
    fn record_debug(&mut self, field: &tracing::field::Field, value: &dyn std::fmt::Debug) {
        self.0.push((field.name().to_owned(), format!("{value:?}")));
    }
}

impl<S: tracing::Subscriber> tracing_subscriber::Layer<S> for RecordedFields {
    fn on_new_span(
        &self,
        attrs: &tracing::span::Attributes<'_>,
        _: &tracing::span::Id,
        _: tracing_subscriber::layer::Context<'_, S>,
    ) {
        if let Ok(mut fields) = self.0.lock() {
            attrs.record(&mut Visitor(&mut fields));
        }
    }

    fn on_record(
        &self,
        _: &tracing::span::Id,
        values: &tracing::span::Record<'_>,
        _: tracing_subscriber::layer::Context<'_, S>,
    ) {
        if let Ok(mut fields) = self.0.lock() {
            values.record(&mut Visitor(&mut fields));
        }
    }
}

/// Runs this test binary again as a child (`PLANLOCK_CHILD=mode`, `PLANLOCK_ROOT=root`, and
/// `envs`), stdout piped line by line into the receiver, stderr dropped.
pub fn spawn_self(
    mode: &str,
    root: &Path,
    envs: &[(&str, &str)],
) -> (std::process::Child, std::sync::mpsc::Receiver<String>) {
    let mut child = std::process::Command::new(std::env::current_exe().unwrap())
        .env("PLANLOCK_CHILD", mode)
        .env("PLANLOCK_ROOT", root)
        .envs(envs.iter().copied())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let rx = lines_of(child.stdout.take().unwrap());
    (child, rx)
}

/// The lines a child writes on `stdout`, sent one by one as they come, by a thread of their own.
pub fn lines_of(stdout: impl std::io::Read + Send + 'static) -> std::sync::mpsc::Receiver<String> {
    use std::io::BufRead;
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in std::io::BufReader::new(stdout).lines().map_while(Result::ok) {
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    rx
}

/// A policy root (its tone `friendly`) and a session root, both temporary.
pub struct Dirs {
    pub policy: tempfile::TempDir,
    pub root: tempfile::TempDir,
}

pub fn dirs() -> Dirs {
    let d = Dirs { policy: tempfile::tempdir().unwrap(), root: tempfile::tempdir().unwrap() };
    policy(d.policy.path(), "friendly");
    d
}

/// The runtime fixture: `plan` on the session root `root` (files), with the policy at `policy`;
/// a test adds its handlers, validators and settings before it boots.
pub fn runtime_on(
    policy: &Path,
    root: &Path,
    plan: ValidPlan,
) -> planlock::runtime::RuntimeBuilder<planlock::session::FileSessionStore> {
    planlock::runtime::Runtime::builder(policy, plan, planlock::session::FileSessionStore::open(root).unwrap())
}

/// [`runtime_on`] `d`'s roots with `demo`'s handlers and its review gate: what most runtime
/// tests run.
#[cfg(feature = "demo")]
pub fn demo_runtime(
    d: &Dirs,
    plan: ValidPlan,
    demo: &planlock::demo::Demo,
) -> planlock::runtime::RuntimeBuilder<planlock::session::FileSessionStore, planlock::handler::Boxed> {
    use planlock::demo::ReviewGate;
    runtime_on(d.policy.path(), d.root.path(), plan).handlers(demo.handlers().boxed()).validator(
        ReviewGate::ID,
        ReviewGate::VERSION,
        &json!({}),
        ReviewGate,
    )
}
