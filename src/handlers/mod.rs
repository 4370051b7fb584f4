//! Layer 5: real handlers for the steps that meet the outside world. Each is behind the feature
//! that brings its dependency.
//!
//! - `TemplatePrompts` (feature `prompts`, on by default): `PromptAssemble` renders its
//!   `template` with minijinja, from `vars` and the cycle's earlier results.
//! - `OpenAiModel` (feature `openai`): `LLMCall` and `SummarizeMemory` on any
//!   OpenAI-compatible chat-completions server.
//! - `OpenAiEmbedder` (feature `openai`): the `Embedder` port on any OpenAI-compatible
//!   embeddings endpoint.
//! - `ModelPlanner` (feature `openai`): a `PolicyInterpreter` that asks a model for the plan,
//!   with the grammar of valid plans, and validates what it writes.
//!
//! What it may import is the layer test's to say (CONTRIBUTING.md, "The layers").

#[cfg(feature = "openai")]
pub mod embed;
#[cfg(feature = "openai")]
mod http;
#[cfg(feature = "openai")]
pub mod openai;
#[cfg(feature = "openai")]
mod pace;
#[cfg(feature = "openai")]
pub mod planner;
#[cfg(feature = "prompts")]
pub mod prompt;
#[cfg(feature = "openai")]
pub mod secret;
#[cfg(feature = "prompts")]
pub mod template_check;

#[cfg(feature = "openai")]
pub use embed::{EmbedConfig, OpenAiEmbedder};
#[cfg(feature = "openai")]
pub use openai::{ModelConfig, OpenAiModel};
#[cfg(feature = "openai")]
pub use planner::{Asked, Constraint, ModelPlanner, PlanError, Planned};
#[cfg(feature = "prompts")]
pub use prompt::TemplatePrompts;
