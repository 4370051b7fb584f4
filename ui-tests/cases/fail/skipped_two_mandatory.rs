#![allow(unused_imports, dead_code)]
#[path = "../prelude.rs"]
mod prelude;
use planlock_contract::{PlanBuilder, schema::*};
use prelude::*;

// The first missing mandatory step is named (PromptAssemble), not the one nearest the call.
fn main() {
    let _ = PlanBuilder::new("profiles/default", "chat")
        .context_select("ctx", ctx())
        .persist_session("save", save());
}
