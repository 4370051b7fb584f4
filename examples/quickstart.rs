//! The planlock tour, end to end: build a plan with the typestate builder, boot a session on a
//! fresh directory (Cold Start), run a cycle with the demo handlers, boot again (Resume), then
//! change the policy and watch the runtime refuse to continue the session (FailFast).
//!
//! Run: `cargo run --example quickstart`

use std::path::Path;
use std::sync::Arc;

use planlock::demo::Demo;
use planlock::runtime::{Boot, Runtime};
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

/// Boots a runtime on `session_root`, runs one cycle, and says what happened.
fn boot_and_run(session_root: &Path, policy_root: &Path, plan: &ValidPlan) -> Result<(), Box<dyn std::error::Error>> {
    let store = Arc::new(FileSessionStore::open(session_root)?);
    let runtime = match Runtime::boot(policy_root, plan.clone(), store) {
        Ok(r) => r,
        Err(e) => {
            println!("   boot refused [{} / {}]:\n   {e}", e.kind(), e.code());
            return Ok(());
        }
    };
    match runtime.boot_kind() {
        Boot::ColdStart => println!("   Cold Start: new session {} (nothing written yet)", runtime.session_id()),
        Boot::Resume(state) => println!(
            "   Resume: session {} restored (memoryRef {:?}, saved {})",
            state.session_id, state.memory_ref, state.updated_at
        ),
    }
    let executor = Executor::new(Demo::new().handlers().on::<PersistSession>(runtime.session_persister()));
    match runtime.run_cycle_blocking(&executor)? {
        CycleOutcome::Completed(done) => {
            let answer = done.ledger.get::<LLMCall>().map(|r| r.response.as_str()).unwrap_or_default();
            println!("   cycle completed: {} steps; the model said: {answer}", done.report.steps.len());
        }
        CycleOutcome::InterventionRequired(paused) => {
            println!("   cycle paused: {:?}", paused.intervention());
            let _ = paused.abandon();
        }
    }
    let saved = runtime.session().map(|s| s.last_execution_plan_hash.to_string()).unwrap_or_default();
    println!("   session saved under plan hash {}…", &saved[..16.min(saved.len())]);
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
    let state_file = sessions.path().join(planlock::session::SESSION_FILE);

    println!("\n2. First boot on an empty directory:");
    boot_and_run(sessions.path(), policy.path(), &plan)?;
    println!("   session file now exists: {}", state_file.exists());

    println!("\n3. The process restarts with the same plan and policy:");
    boot_and_run(sessions.path(), policy.path(), &plan)?;

    println!("\n4. Someone edits the policy (tone: friendly -> formal) and restarts:");
    write_policy(policy.path(), "formal")?;
    boot_and_run(sessions.path(), policy.path(), &plan)?;

    println!("\n5. A plan from outside that breaks the contract never gets that far:");
    let tampered = plan.to_json().replace(r#""type":"LLMCall""#, r#""type":"LLMCal""#);
    if let Err(rejection) = ValidPlan::from_str(&tampered) {
        for p in rejection.problems() {
            println!("   {p}");
        }
    }
    Ok(())
}
