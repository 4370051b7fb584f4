#![allow(unused_imports, dead_code)]
#[path = "../prelude.rs"]
mod prelude;
use planlock_contract::builder::PlanBuilder;
use planlock_contract::schema::*;
use planlock_contract::steps::LLMCall;
use prelude::*;

// No bound on the state at all.
fn ask<S, M>(builder: PlanBuilder<S, M>) -> PlanBuilder<LLMCall, M> {
    builder.llm_call("llm", llm())
}

fn main() {}
