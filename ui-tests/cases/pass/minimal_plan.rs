#![allow(unused_imports, dead_code)]
#[path = "../prelude.rs"]
mod prelude;
use planlock_contract::{PlanBuilder, schema::*};
use prelude::*;

fn main() {
    let plan = PlanBuilder::new("profiles/default", "chat")
        .context_select("ctx", ctx())
        .prompt_assemble("prompt", prompt())
        .llm_call("llm", llm())
        .persist_session("save", save())
        .build()
        .unwrap();
    assert_eq!(plan.steps().len(), 4);
}
