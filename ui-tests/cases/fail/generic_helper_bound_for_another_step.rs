#![allow(unused_imports, dead_code)]
#[path = "../prelude.rs"]
mod prelude;
use planlock_contract::builder::{CanAdd, PlanBuilder, TopKState};
use planlock_contract::schema::*;
use planlock_contract::steps::{LLMCall, SummarizeMemory};
use prelude::*;

// The bound allows `LLMCall` (so `LLMCall` is not in the plan yet, and it is mandatory); the body
// adds `SummarizeMemory`, which must come after it.
fn summarize<S: CanAdd<LLMCall>, M: TopKState>(builder: PlanBuilder<S, M>) -> PlanBuilder<SummarizeMemory, M> {
    builder.summarize_memory("summary", SummarizeMemoryPayload { response: "r".into() })
}

fn main() {}
