#![allow(unused_imports, dead_code)]
#[path = "../prelude.rs"]
mod prelude;
use planlock::{PlanBuilder, schema::*};
use prelude::*;

fn main() {
    let _ = PlanBuilder::new("profiles/default", "chat")
        .context_select("ctx", ctx())
        .prompt_assemble("prompt", prompt())
        .llm_call("llm", llm())
        .persist_session("save", save())
        .persist_memory("remember", PersistMemoryPayload { summary: "s".into(), keywords: vec![], session_ref: "s".into() });
}
