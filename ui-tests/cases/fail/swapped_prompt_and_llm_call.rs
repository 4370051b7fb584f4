#![allow(unused_imports, dead_code)]
#[path = "../prelude.rs"]
mod prelude;
use planlock_contract::{PlanBuilder, schema::*};
use prelude::*;

// One mistake, one error: the calls after the refused one are not reported again.
fn main() {
    let _ = PlanBuilder::new("profiles/default", "chat")
        .context_select("ctx", ctx())
        .llm_call("llm", llm())
        .prompt_assemble("prompt", prompt())
        .persist_session("save", save())
        .build();
}
