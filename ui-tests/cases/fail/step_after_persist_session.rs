#![allow(unused_imports, dead_code)]
#[path = "../prelude.rs"]
mod prelude;
use planlock_contract::{PlanBuilder, schema::*};
use prelude::*;

fn main() {
    let _ = up_to_llm_call()
        .persist_session("save", save())
        .persist_memory("remember", PersistMemoryPayload { summary: "s".into(), keywords: vec![], session_ref: "s".into() });
}
