//! The planlock tour, end to end: build a plan with the typestate builder, boot a session on a
//! fresh directory (Cold Start), run a cycle with the demo handlers, boot again (Resume), then
//! change the policy and watch the runtime refuse to continue the session (FailFast). Each state
//! is explained in plain words the first time it appears.
//!
//! Run: `cargo run --example quickstart`

use std::path::Path;
use std::sync::Arc;

use planlock::Failure;
use planlock::demo::Demo;
use planlock::runtime::{Boot, BootError, Runtime};
use planlock::schema::*;
use planlock::session::FileSessionStore;
use planlock::steps::{LLMCall, PersistSession};
use planlock::{AnyObject, CycleOutcome, Executor, PlanBuilder, PositiveInt, Timeouts, ValidPlan};

fn build_plan() -> Result<ValidPlan, planlock::Rejection> {
    PlanBuilder::new("profiles/default", "chat")
        .top_k(3)
        .timeouts(Timeouts { llm_ms: PositiveInt::new(30_000), io_ms: PositiveInt::new(2_000) })
        .context_select(
            "ctx",
            ContextSelectPayload { input: "How do I rotate the API key?".into(), sources: vec!["docs".into()] },
        )
        .retrieve_memory("memory", "API key rotation")
        .prompt_assemble(
            "prompt",
            PromptAssemblePayload {
                template: "Answer briefly: {{question}}".into(),
                vars: AnyObject::new().with("question", "How do I rotate the API key?"),
            },
        )
        .llm_call(
            "llm",
            LlmCallPayload {
                prompt: "Answer briefly: How do I rotate the API key?".into(),
                config: AnyObject::new().with("model", "demo"),
            },
        )
        .summarize_memory(
            "summary",
            SummarizeMemoryPayload { response: "Rotate the key in the vault, then redeploy.".into() },
        )
        .persist_memory(
            "remember",
            PersistMemoryPayload {
                summary: "key rotation".into(),
                keywords: vec!["api".into(), "key".into()],
                session_ref: "chat-1".into(),
            },
        )
        .persist_session("save", PersistSessionPayload { session_ref: "chat-1".into(), meta: AnyObject::new() })
        .build()
}

fn write_policy(root: &Path, tone: &str) -> std::io::Result<()> {
    let dir = root.join("profiles/default");
    std::fs::create_dir_all(&dir)?;
    std::fs::write(dir.join("modes.yaml"), format!("# comments do not change the hash\nchat:\n  tone: {tone}\n"))?;
    std::fs::write(dir.join("triggers.yaml"), "- on: greeting\n  mode: chat\n")?;
    std::fs::write(dir.join("bundles.yaml"), "default:\n  strategy_provider_id: hierarchical-sql\n")?;
    Ok(())
}

/// Boots a runtime on `session_root`, runs one cycle, and says what happened in plain words.
fn boot_and_run(session_root: &Path, policy_root: &Path, plan: &ValidPlan) -> Result<(), Box<dyn std::error::Error>> {
    let store = Arc::new(FileSessionStore::open(session_root)?);
    let runtime = match Runtime::boot(policy_root, plan.clone(), store) {
        Ok(r) => r,
        Err(e @ BootError::HashMismatch { .. }) => {
            println!("   Refused ({}): the session was saved under another plan hash, so going on would mix", e.kind());
            println!("   two policies in one session (a \"contaminated\" session). The runtime stops instead of");
            println!("   silently starting over. What it says: {e}");
            return Ok(());
        }
        Err(e) => return Err(e.into()),
    };
    match runtime.boot_kind() {
        Boot::ColdStart => {
            println!("   Cold Start: there is no session file yet, so a new session begins.");
            println!("   Its id is {}; nothing is written until a cycle completes.", runtime.session_id());
        }
        Boot::Resume(state) => {
            println!("   Resume: the saved plan hash matches this plan and policy, so the session goes on.");
            println!("   Same session id {}, last saved {}.", state.session_id, state.updated_at);
            if let Some(memory) = &state.memory_ref {
                println!("   It remembers the memory its last cycle wrote: {memory}.");
            }
        }
    }
    let executor = Executor::new(Demo::new().handlers().on::<PersistSession>(runtime.session_persister()));
    match runtime.run_cycle_blocking(&executor)? {
        CycleOutcome::Completed(done) => {
            let answer = done.ledger.get::<LLMCall>().map(|r| r.response.as_str()).unwrap_or_default();
            println!("   The cycle ran all {} steps. The (demo) model answered: {answer}", done.report.steps.len());
        }
        CycleOutcome::InterventionRequired(paused) => {
            let i = paused.intervention();
            println!("   The cycle paused for a person at step `{}`: {}", i.step_id, i.reason);
            let _ = paused.abandon();
        }
    }
    let saved = runtime.session().map(|s| s.last_execution_plan_hash.to_string()).unwrap_or_default();
    println!("   Saved {} with plan hash {}…", planlock::session::SESSION_FILE, &saved[..16.min(saved.len())]);
    Ok(())
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let plan = build_plan()?;
    println!("1. A plan built with the typestate builder (a wrong order would not compile):");
    for step in plan.steps() {
        println!("   {:<9} {}", step.id, step.step_type());
    }

    let policy = tempfile::tempdir()?;
    let sessions = tempfile::tempdir()?;
    write_policy(policy.path(), "friendly")?;

    println!("\n2. First boot on an empty directory:");
    boot_and_run(sessions.path(), policy.path(), &plan)?;

    println!("\n3. The process restarts with the same plan and policy:");
    boot_and_run(sessions.path(), policy.path(), &plan)?;

    println!("\n4. Someone edits the policy (tone: friendly -> formal) and restarts:");
    write_policy(policy.path(), "formal")?;
    boot_and_run(sessions.path(), policy.path(), &plan)?;

    println!("\n5. A plan from outside that breaks the contract never gets that far; every problem is named:");
    let tampered = plan.to_json().replace(r#""type":"LLMCall""#, r#""type":"LLMCal""#);
    if let Err(rejection) = ValidPlan::from_str(&tampered) {
        for p in rejection.problems() {
            println!("   {p}");
        }
    }
    Ok(())
}
