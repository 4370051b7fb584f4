//! Telemetry in the OpenTelemetry GenAI conventions (docs/CONTRACT.md §16).
//!
//! planlock's spans are `tracing` spans, so any subscriber of yours sees them; with the `otel`
//! feature, `Telemetry` also exports them (and planlock's metrics) over OTLP. The tree of one
//! cycle:
//!
//! ```text
//! invoke_workflow {mode}        gen_ai.operation.name, gen_ai.workflow.name, gen_ai.conversation.id,
//! │                             planlock.cycle.number, planlock.plan.hash, planlock.outcome, error.type
//! ├── {StepType}                planlock.step.id/type/index, planlock.outcome, error.type, planlock.failure.class
//! │   ├── apply_guardrail       planlock.validator.id (one per validator that judged the step)
//! │   ├── chat {model}          a model call ([`ModelCall`]): gen_ai.provider.name, request/response
//! │   │                         model, max_tokens, token usage, finish reasons, server.address
//! │   └── embeddings {model}    an embedding request of a semantic store
//! └── …
//! ```
//!
//! - **Names** come from one table, [`names`]: the conventions' where they have them, planlock's
//!   own (`planlock.*`) where not. Failures carry their stable code as `error.type`.
//! - **Content** (payloads, results, prompts, answers, memory text, `shown`) is on the spans only
//!   when content recording is on (the runtime's `record_content`; the CLI turns it on with
//!   `OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=true`). Keys and passwords are never on
//!   a span: they are scrubbed from what a server answers before anything reads it.
//! - **One trace across a pause**: the paused cycle's span context is kept in its intervention
//!   record ([`TraceParent`]); the resumed cycle's span is its child, after a restart too.
//! - **Metrics**: `gen_ai.client.token.usage` and `gen_ai.client.operation.duration` with the
//!   conventions' units and buckets, and `planlock.cycles`, `planlock.cycle.duration`,
//!   `planlock.step.failures`, `planlock.pauses.pending`, `planlock.approvals` (see [`names`]).

mod attributes;
#[cfg(feature = "otel")]
mod export;
mod meters;
mod model_call;
pub mod names;
mod trace;

pub use attributes::{MAX_MESSAGE_CHARS, MAX_NAME_CHARS};
pub(crate) use attributes::{failed, int, name};
#[cfg(feature = "otel")]
pub use export::{SHUTDOWN_TIMEOUT, SpanCounts, Telemetry, TelemetryError};
pub use meters::{DURATION_BUCKETS, TOKEN_BUCKETS, refresh_meters};
pub(crate) use meters::{approval, budget_reserved, cycle_ended, pause_closed};
pub use model_call::{Message, ModelAnswer, ModelCall, Operation};
pub use names::CAPTURE_CONTENT_ENV;
pub use trace::{InvalidTraceParent, TraceParent};
