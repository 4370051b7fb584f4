// Payloads shared by the ui tests; each test includes this file.
use planlock_contract::{AnyObject, schema::*};

pub fn ctx() -> ContextSelectPayload {
    ContextSelectPayload { input: "hi".into(), sources: vec![] }
}
pub fn prompt() -> PromptAssemblePayload {
    PromptAssemblePayload { template: "t".into(), vars: AnyObject::new() }
}
pub fn llm() -> LlmCallPayload {
    LlmCallPayload { prompt: "p".into(), config: AnyObject::new() }
}
pub fn save() -> PersistSessionPayload {
    PersistSessionPayload { session_ref: "s".into(), meta: AnyObject::new() }
}

/// A plan with its first three mandatory steps, for the cases about what may come after them.
pub fn up_to_llm_call() -> planlock_contract::PlanBuilder<planlock_contract::steps::LLMCall> {
    planlock_contract::PlanBuilder::new("profiles/default", "chat")
        .context_select("ctx", ctx())
        .prompt_assemble("prompt", prompt())
        .llm_call("llm", llm())
}
