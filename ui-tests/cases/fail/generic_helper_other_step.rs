#![allow(unused_imports, dead_code)]
#[path = "../prelude.rs"]
mod prelude;
use planlock_contract::builder::{CanAdd, PlanBuilder, TopKState};
use planlock_contract::schema::*;
use planlock_contract::steps::{PersistEvidence, PersistMemory};
use prelude::*;

// The bound allows `PersistEvidence`; the body adds `PersistMemory`, which the bound does not
// allow in every state.
fn with_memory<S: CanAdd<PersistEvidence>, M: TopKState>(builder: PlanBuilder<S, M>) -> PlanBuilder<PersistMemory, M> {
    builder.persist_memory("memory", PersistMemoryPayload { keywords: vec![], session_ref: "s".into(), summary: "s".into() })
}

fn main() {}
