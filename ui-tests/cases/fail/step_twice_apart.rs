#![allow(unused_imports, dead_code)]
#[path = "../prelude.rs"]
mod prelude;
use planlock_contract::{PlanBuilder, schema::*};
use prelude::*;

// The same step again after another one: out of canonical order, or already in the plan.
fn main() {
    let _ = up_to_llm_call().prompt_assemble("prompt2", prompt()).persist_session("save", save()).build();
}
