use planlock::{AnyObject, PlanBuilder, schema::*};

fn ctx() -> ContextSelectPayload { ContextSelectPayload { input: "hi".into(), sources: vec![] } }
fn prompt() -> PromptAssemblePayload { PromptAssemblePayload { template: "t".into(), vars: AnyObject::new() } }
fn llm() -> LlmCallPayload { LlmCallPayload { prompt: "p".into(), config: AnyObject::new() } }
fn save() -> PersistSessionPayload { PersistSessionPayload { session_ref: "s".into(), meta: AnyObject::new() } }

use std::num::NonZeroU32;

fn main() {
    let k = NonZeroU32::new(5).unwrap();
    let _ = PlanBuilder::new("profiles/default", "chat").top_k(k).top_k(k);
}
