// Payloads shared by the ui tests; each test includes this file.
use planlock::{AnyObject, schema::*};

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
