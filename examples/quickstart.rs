//! The planlock tour: build a plan with the typestate builder, check a plan from outside, and
//! see what a rejection looks like.
//!
//! Run: `cargo run --example quickstart`

use std::num::NonZeroU32;

use planlock::schema::*;
use planlock::{AnyObject, PlanBuilder, Timeouts, ValidPlan};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    println!("1. Build a plan in Rust. The compiler enforces the canonical step order:");
    let plan = PlanBuilder::new("profiles/default", "chat")
        .top_k(NonZeroU32::new(3).ok_or("topK")?)
        .timeouts(Timeouts { llm_ms: planlock::PositiveInt::new(30_000), io_ms: planlock::PositiveInt::new(2_000) })
        .context_select(
            "ctx",
            ContextSelectPayload { input: "How do I rotate the API key?".into(), sources: vec!["repo".into()] },
        )
        .retrieve_memory("memory", "API key rotation")
        .prompt_assemble(
            "prompt",
            PromptAssemblePayload {
                template: "Answer: {{question}}".into(),
                vars: AnyObject::new().with("question", "How do I rotate the API key?"),
            },
        )
        .llm_call(
            "llm",
            LlmCallPayload { prompt: "Answer the question".into(), config: AnyObject::new().with("model", "demo") },
        )
        .summarize_memory("summary", SummarizeMemoryPayload { response: "Rotate it in the vault.".into() })
        .persist_session("save", PersistSessionPayload { session_ref: "session-1".into(), meta: AnyObject::new() })
        .build()?;
    for step in plan.steps() {
        println!("   {:<8} {}", step.id, step.step_type());
    }

    println!("\n2. Its JSON is what a policy service in any language would send; the validator accepts it:");
    let json = plan.to_json();
    let again = ValidPlan::from_str(&json)?;
    println!("   {} bytes, {} steps, equal to the original: {}", json.len(), again.steps().len(), again == plan);

    println!("\n3. A plan from outside that breaks the contract is rejected with every problem named:");
    let tampered = json
        .replace(r#""id":"summary""#, r#""id":"ctx""#)
        .replace(r#""type":"LLMCall""#, r#""type":"LLMCal""#)
        .replace(r#""mode":"chat""#, r#""mode":"chat","retries":3"#);
    match ValidPlan::from_str(&tampered) {
        Ok(_) => println!("   unexpectedly accepted"),
        Err(rejection) => {
            println!("   rejected as {} with {} problems:", rejection.class(), rejection.problems().len());
            for p in rejection.problems() {
                println!("   - {p}");
            }
        }
    }

    println!("\n4. A plan for another contract version is refused before anything else is read (FailFast):");
    let future = json.replace(r#""step_contract_version":"1""#, r#""step_contract_version":"2""#);
    if let Err(rejection) = ValidPlan::from_str(&future) {
        println!("   {rejection}");
    }
    Ok(())
}
