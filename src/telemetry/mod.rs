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

#[cfg(feature = "otel")]
mod export;
mod meters;
mod model_call;
pub mod names;
mod trace;

#[cfg(feature = "otel")]
pub use export::{SHUTDOWN_TIMEOUT, SpanCounts, Telemetry, TelemetryError};
pub use meters::{DURATION_BUCKETS, TOKEN_BUCKETS, refresh_meters};
pub(crate) use meters::{approval, budget_reserved, cycle_ended, pause_closed};
pub use model_call::{Message, ModelAnswer, ModelCall, Operation};
pub use trace::{InvalidTraceParent, TraceParent};

/// The most characters of a name from outside (a plan's mode, a model's name as the plan or the
/// server gives it, a finish reason) put in a span's name or attribute: a name is for grouping,
/// and the plan and the server are input (CONTRACT §11).
pub const MAX_NAME_CHARS: usize = 128;

/// `text`'s first [`MAX_NAME_CHARS`] characters.
pub(crate) fn name(text: &str) -> &str {
    text.char_indices().nth(MAX_NAME_CHARS).map_or(text, |(at, _)| &text[..at])
}

/// The most characters of a failure's message put on a span (its status and its `exception`
/// event).
pub const MAX_MESSAGE_CHARS: usize = 1024;

/// A count as the conventions type it, an int: recorded as `u64`, `tracing-opentelemetry` would
/// send it as a string.
pub(crate) fn int(n: impl TryInto<i64>) -> i64 {
    n.try_into().unwrap_or(i64::MAX)
}

/// Marks `span` failed as the conventions say: `error.type` (the stable code), its status an
/// error whose description is `message`, and an `exception` event with `exception.type` and
/// `exception.message`. The message is escaped (no control or bidi character) and cut to
/// [`MAX_MESSAGE_CHARS`]; planlock's messages never carry a key (a server's answer is scrubbed
/// before anything reads it). The span declares `otel.status_description`.
pub(crate) fn failed(span: &tracing::Span, code: &str, message: &str) {
    let message = crate::text::escape_invisible(message);
    let message = match message.char_indices().nth(MAX_MESSAGE_CHARS) {
        Some((at, _)) => format!("{}…", &message[..at]),
        None => message.into_owned(),
    };
    span.record(names::ERROR_TYPE, code);
    span.record("otel.status_description", message.as_str());
    tracing::event!(
        parent: span,
        tracing::Level::WARN,
        { names::EXCEPTION_TYPE } = code,
        { names::EXCEPTION_MESSAGE } = message.as_str(),
        "exception"
    );
}

/// The environment variable that turns content capture on in the CLI, as the GenAI conventions'
/// instrumentations name it.
pub const CAPTURE_CONTENT_ENV: &str = "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT";
