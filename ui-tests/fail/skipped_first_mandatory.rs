use planlock::{AnyObject, PlanBuilder, schema::*};

fn ctx() -> ContextSelectPayload { ContextSelectPayload { input: "hi".into(), sources: vec![] } }
fn prompt() -> PromptAssemblePayload { PromptAssemblePayload { template: "t".into(), vars: AnyObject::new() } }
fn llm() -> LlmCallPayload { LlmCallPayload { prompt: "p".into(), config: AnyObject::new() } }
fn save() -> PersistSessionPayload { PersistSessionPayload { session_ref: "s".into(), meta: AnyObject::new() } }

fn main() {
    let _ = PlanBuilder::new("profiles/default", "chat")
        .repo_scan("scan", RepoScanPayload { repo_path: ".".into() })
        .prompt_assemble("prompt", prompt());
}
