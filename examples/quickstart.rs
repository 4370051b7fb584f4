//! The planlock tour, end to end: build a plan with the typestate builder, boot a session on a
//! fresh directory (Cold Start) with its memories in an embedded SQLite database, run a cycle
//! that a review validator pauses, restart the process and resume it with a person's approval,
//! restart again (Resume): the next cycle pauses too, and a reviewer finds it in the inbox,
//! approves what it shows, and the session's next run completes it; a third is rejected from the
//! inbox. Then change the policy and watch the runtime refuse to continue the session
//! (FailFast). Each state is explained in plain words the first time it appears.
//!
//! Run: `cargo run --example quickstart`

use std::path::Path;

use planlock::Failure;
use planlock::demo::{Demo, ReviewGate};
use planlock::handler::Boxed;
use planlock::review::decide;
use planlock::review::inbox::{Inbox, InboxFilter};
use planlock::runtime::{Boot, BootError, RunOutcome, Runtime};
use planlock::schema::*;
use planlock::session::{FileSessionStore, ReviewDecision, ReviewVerdict};
use planlock::steps::{LLMCall, RetrieveMemory};
use planlock::store::StoreHandlers;
use planlock::store::sqlite::SqliteStore;
use planlock::{AnyObject, Override, PlanBuilder, PositiveInt, Timeouts, ValidPlan};

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
        // A person reviews every memory the cycle writes (the demo validator `demo-review`).
        .validator(ReviewGate::signature())
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

/// A runtime on the session root with the demo handlers and the review validator. Booting is
/// what a process does when it starts.
async fn boot(
    session_root: &Path,
    policy_root: &Path,
    plan: &ValidPlan,
) -> Result<Runtime<FileSessionStore, Boxed>, BootError> {
    let store = FileSessionStore::open(session_root)?;
    // Memories and decisions go to the session root's embedded SQLite database.
    let storage = StoreHandlers::new(SqliteStore::open(session_root));
    Runtime::builder(policy_root, plan.clone(), store)
        .handlers(Demo::new().with_store(&storage).boxed())
        .validator(ReviewGate::ID, ReviewGate::VERSION, &serde_json::json!({}), ReviewGate)
        .boot()
        .await
}

/// Says how the runtime started, in plain words.
fn describe_boot(runtime: &Runtime<FileSessionStore, Boxed>) {
    if let Some(paused) = runtime.pending() {
        println!(
            "   Paused: cycle {} is waiting for a person (step `{}`, validator `{}`).",
            paused.cycle, paused.step_id, paused.validator.id
        );
        println!("   The pause was saved to disk, so it survived the restart; only resume or abandon may follow.");
        return;
    }
    match runtime.boot_kind() {
        Boot::ColdStart => {
            println!("   Cold Start: there is no session file yet, so a new session begins.");
            println!("   Its id is {}; the session file is written when a cycle completes.", runtime.session_id());
        }
        Boot::Resume(state) => {
            println!("   Resume: the saved plan hash matches this plan and policy, so the session goes on.");
            println!(
                "   Same session id {}, {} cycle(s) completed, last saved {}.",
                state.session_id, state.cycle, state.updated_at
            );
            if let Some(memory) = &state.memory_ref {
                println!("   It remembers the memory its last cycle wrote: {memory}.");
            }
        }
    }
}

/// Says how a cycle ended, in plain words.
fn describe(outcome: RunOutcome, runtime: &Runtime<FileSessionStore, Boxed>) {
    match outcome {
        RunOutcome::Completed(done) => {
            let recalled = done.ledger.get::<RetrieveMemory>().map_or(0, |r| r.items.len());
            println!("   It recalled {recalled} memory(ies) of earlier cycles from the SQLite store.");
            let answer = done.ledger.get::<LLMCall>().map(|r| r.response.as_str()).unwrap_or_default();
            println!("   The cycle ran all its steps. The (demo) model answered: {answer}");
            println!("   Saved {} (cycle {}).", planlock::session::SESSION_FILE, runtime.cycle());
        }
        RunOutcome::Paused { record, .. } => {
            println!("   The cycle paused before step `{}`: {}", record.step_id, record.reason);
            println!(
                "   The steps before it are kept in {}; the session file is unchanged.",
                planlock::session::INTERVENTION_FILE
            );
        }
        RunOutcome::Abandoned(record) => {
            println!("   The reviewer's rejection abandoned cycle {}: the session is as it was.", record.cycle);
        }
    }
}

/// planlock's calls are futures; a synchronous program waits for its async part with the one
/// shim, `planlock::block_on` (an async program awaits instead, on any executor).
fn main() -> Result<(), Box<dyn std::error::Error>> {
    planlock::block_on(tour())
}

async fn tour() -> Result<(), Box<dyn std::error::Error>> {
    let plan = build_plan()?;
    println!("1. A plan built with the typestate builder (a wrong order would not compile):");
    for step in plan.steps() {
        println!("   {:<9} {}", step.id, step.step_type());
    }

    let policy = tempfile::tempdir()?;
    // A directory of session roots: one session, `chat-1`.
    let sessions = tempfile::tempdir()?;
    let session = sessions.path().join("chat-1");
    std::fs::create_dir(&session)?;
    write_policy(policy.path(), "friendly")?;

    println!("\n2. First boot on an empty directory, and the first cycle:");
    let mut runtime = boot(&session, policy.path(), &plan).await?;
    describe_boot(&runtime);
    describe(runtime.run_cycle().await?, &runtime);
    drop(runtime);

    println!("\n3. The process restarts; a person approves the write and the cycle resumes:");
    let mut runtime = boot(&session, policy.path(), &plan).await?;
    describe_boot(&runtime);
    let approval = Override::new(ReviewGate::ID, "remember", "checked: no personal data");
    describe(runtime.resume(Some(approval)).await?, &runtime);
    drop(runtime);

    println!("\n4. The process restarts again; cycle 2 pauses too, and waits in the inbox:");
    let mut runtime = boot(&session, policy.path(), &plan).await?;
    describe_boot(&runtime);
    describe(runtime.run_cycle().await?, &runtime);
    // The reviewer, in a process of their own (the session's lock stays with the runtime), lists
    // every pause waiting across the sessions of the directory and looks at what it shows.
    let inbox = Inbox::new(planlock::backend::FilesBackend::new(sessions.path().to_owned()));
    let waiting = inbox.list(&InboxFilter::default()).await?;
    for pause in &waiting.pauses {
        let r = &pause.record;
        println!(
            "   Inbox: session `{}`, cycle {}, step `{}` ({}): {}",
            pause.session, r.cycle, r.step_id, r.step_type, r.reason
        );
        if let (Some(shown), Some(digest)) = (&r.shown, &r.shown_digest) {
            println!("   It shows the write as it will run: {}", shown["payload"]);
            println!("   (digest {digest}: the approval binds to exactly this)");
        }
    }
    let pause = &waiting.pauses[0];
    let approval = ReviewDecision::new(&pause.record, ReviewVerdict::Approve, "ada", "checked: no personal data");
    decide(inbox.records(&pause.session).await?.as_ref(), &approval).await?;
    println!("   Ada approves it from the inbox; the session's next run acts on it:");
    describe(runtime.run_cycle().await?, &runtime);

    println!("\n5. Cycle 3, which the reviewer turns down from the inbox:");
    describe(runtime.run_cycle().await?, &runtime);
    let pause = inbox.show("chat-1").await?.ok_or("cycle 3 is paused")?;
    let rejection = ReviewDecision::new(&pause.record, ReviewVerdict::Reject, "ada", "not this memory");
    decide(inbox.records(&pause.session).await?.as_ref(), &rejection).await?;
    describe(runtime.run_cycle().await?, &runtime);
    println!("   The session still has {} completed cycle(s); the approval log has every decision:", runtime.cycle());
    for event in inbox.records("chat-1").await?.approval_log().await?.events {
        println!("   - cycle {} `{}`: {}", event.pause().cycle, event.pause().step_id, event.name());
    }
    drop(runtime);

    println!("\n6. Someone edits the policy (tone: friendly -> formal) and restarts:");
    write_policy(policy.path(), "formal")?;
    match boot(&session, policy.path(), &plan).await {
        Ok(_) => println!("   (unexpected) the runtime booted"),
        Err(e @ BootError::HashMismatch(_)) => {
            println!("   Refused ({}): the session was saved under another plan hash, so going on would mix", e.kind());
            println!("   two policies in one session (a \"contaminated\" session). The runtime stops instead of");
            println!("   silently starting over. What it says: {e}");
        }
        Err(e) => return Err(e.into()),
    }

    println!("\n7. A plan from outside that breaks the contract never gets that far; every problem is named:");
    let tampered = plan.to_json().replace(r#""type":"LLMCall""#, r#""type":"LLMCal""#);
    if let Err(rejection) = ValidPlan::from_str(&tampered) {
        for p in rejection.problems() {
            println!("   {p}");
        }
    }
    Ok(())
}
