//! Every name planlock's spans and metrics carry, in one table: the OpenTelemetry semantic
//! conventions' where they have one (from `opentelemetry-semantic-conventions`), planlock's own
//! (`planlock.*`) where they do not (docs/CONTRACT.md §16).
//!
//! The GenAI names are marked deprecated in that crate only because they moved to the GenAI
//! conventions' own repository; their values did not change.
//!
//! ```
//! use planlock::telemetry::names;
//! assert_eq!(names::GEN_AI_CONVERSATION_ID, "gen_ai.conversation.id");
//! assert_eq!(names::CYCLE_NUMBER, "planlock.cycle.number");
//! ```
#![allow(deprecated)]

use opentelemetry_semantic_conventions::{attribute, metric};

// Attributes from the conventions.

/// `gen_ai.operation.name`: `invoke_workflow` (a cycle), `chat`, `embeddings`.
pub const GEN_AI_OPERATION_NAME: &str = attribute::GEN_AI_OPERATION_NAME;
/// `gen_ai.workflow.name`: the plan's mode.
pub const GEN_AI_WORKFLOW_NAME: &str = attribute::GEN_AI_WORKFLOW_NAME;
/// `gen_ai.conversation.id`: the session id.
pub const GEN_AI_CONVERSATION_ID: &str = attribute::GEN_AI_CONVERSATION_ID;
/// `gen_ai.provider.name`: who serves the model (`openai` for an OpenAI-compatible server).
pub const GEN_AI_PROVIDER_NAME: &str = attribute::GEN_AI_PROVIDER_NAME;
/// `gen_ai.request.model`.
pub const GEN_AI_REQUEST_MODEL: &str = attribute::GEN_AI_REQUEST_MODEL;
/// `gen_ai.request.max_tokens`.
pub const GEN_AI_REQUEST_MAX_TOKENS: &str = attribute::GEN_AI_REQUEST_MAX_TOKENS;
/// `gen_ai.response.model`.
pub const GEN_AI_RESPONSE_MODEL: &str = attribute::GEN_AI_RESPONSE_MODEL;
/// `gen_ai.response.finish_reasons`.
pub const GEN_AI_RESPONSE_FINISH_REASONS: &str = attribute::GEN_AI_RESPONSE_FINISH_REASONS;
/// `gen_ai.usage.input_tokens`.
pub const GEN_AI_USAGE_INPUT_TOKENS: &str = attribute::GEN_AI_USAGE_INPUT_TOKENS;
/// `gen_ai.usage.output_tokens`.
pub const GEN_AI_USAGE_OUTPUT_TOKENS: &str = attribute::GEN_AI_USAGE_OUTPUT_TOKENS;
/// `gen_ai.usage.cache_read.input_tokens`, when the server reports it.
pub const GEN_AI_USAGE_CACHE_READ_INPUT_TOKENS: &str = attribute::GEN_AI_USAGE_CACHE_READ_INPUT_TOKENS;
/// `gen_ai.usage.reasoning.output_tokens`, when the server reports it.
pub const GEN_AI_USAGE_REASONING_OUTPUT_TOKENS: &str = attribute::GEN_AI_USAGE_REASONING_OUTPUT_TOKENS;
/// `gen_ai.token.type` (`input`, `output`), on `gen_ai.client.token.usage`.
pub const GEN_AI_TOKEN_TYPE: &str = attribute::GEN_AI_TOKEN_TYPE;
/// `gen_ai.embeddings.dimension.count`.
pub const GEN_AI_EMBEDDINGS_DIMENSION_COUNT: &str = attribute::GEN_AI_EMBEDDINGS_DIMENSION_COUNT;
/// `gen_ai.input.messages`: only with content capture on.
pub const GEN_AI_INPUT_MESSAGES: &str = attribute::GEN_AI_INPUT_MESSAGES;
/// `gen_ai.output.messages`: only with content capture on.
pub const GEN_AI_OUTPUT_MESSAGES: &str = attribute::GEN_AI_OUTPUT_MESSAGES;
/// `server.address`: the model server's host.
pub const SERVER_ADDRESS: &str = attribute::SERVER_ADDRESS;
/// `server.port`.
pub const SERVER_PORT: &str = attribute::SERVER_PORT;
/// `error.type`: a failure's stable code (planlock's codes are low-cardinality by design).
pub const ERROR_TYPE: &str = attribute::ERROR_TYPE;
/// `gen_ai.request.temperature`, when the request sets one.
pub const GEN_AI_REQUEST_TEMPERATURE: &str = attribute::GEN_AI_REQUEST_TEMPERATURE;
/// `gen_ai.request.seed`, when the request sends one (planlock sends one on every chat request).
pub const GEN_AI_REQUEST_SEED: &str = attribute::GEN_AI_REQUEST_SEED;
/// `session.id`: the session id, as OpenInference readers (Phoenix's Sessions) group by it.
pub const SESSION_ID: &str = attribute::SESSION_ID;
/// The `exception` event of a failed span: its `exception.type` (the stable code).
pub const EXCEPTION_TYPE: &str = attribute::EXCEPTION_TYPE;
/// The `exception` event's `exception.message` (the failure's message, escaped and cut).
pub const EXCEPTION_MESSAGE: &str = attribute::EXCEPTION_MESSAGE;

// OpenInference's attributes, which Arize Phoenix reads for its span kinds and its Input and
// Output panels (the GenAI conventions have no equivalent yet).

/// `openinference.span.kind`: `CHAIN` (a cycle, a step), `LLM` (a chat call), `EMBEDDING`,
/// `GUARDRAIL` (a validator's Block).
pub const OPENINFERENCE_SPAN_KIND: &str = "openinference.span.kind";
/// `input.value`: what went in, only with content capture on (a cycle's first prompt, a model
/// call's last user message).
pub const INPUT_VALUE: &str = "input.value";
/// `input.mime_type`: `text/plain`.
pub const INPUT_MIME_TYPE: &str = "input.mime_type";
/// `output.value`: what came out, only with content capture on (a cycle's last answer, a model
/// call's answer).
pub const OUTPUT_VALUE: &str = "output.value";
/// `output.mime_type`: `text/plain`.
pub const OUTPUT_MIME_TYPE: &str = "output.mime_type";

// planlock's own attributes.

/// The cycle's number in its session.
pub const CYCLE_NUMBER: &str = "planlock.cycle.number";
/// The session's plan hash.
pub const PLAN_HASH: &str = "planlock.plan.hash";
/// How a cycle or step ended: `completed`, `paused`, `failed` (a cycle); `completed`,
/// `blocked`, `failed` (a step).
pub const OUTCOME: &str = "planlock.outcome";
/// The step a resumed cycle starts at.
pub const RESUMED_AT: &str = "planlock.cycle.resumed_at";
/// The number of steps in the plan.
pub const STEP_COUNT: &str = "planlock.plan.steps";
/// A step's id.
pub const STEP_ID: &str = "planlock.step.id";
/// A step's type (`LLMCall`).
pub const STEP_TYPE: &str = "planlock.step.type";
/// A step's place in the plan.
pub const STEP_INDEX: &str = "planlock.step.index";
/// A failure's class: `CycleFail` or `FailFast`.
pub const FAILURE_CLASS: &str = "planlock.failure.class";
/// The step's payload as JSON: only with content capture on.
pub const PAYLOAD: &str = "planlock.step.payload";
/// The step's result as JSON: only with content capture on.
pub const RESULT: &str = "planlock.step.result";
/// A validator's id.
pub const VALIDATOR: &str = "planlock.validator.id";
/// A reviewer's verdict: `approved`, `rejected`.
pub const VERDICT: &str = "planlock.approval.verdict";
/// Who decided (the decider's name, escaped and cut to [`MAX_NAME_CHARS`](super::MAX_NAME_CHARS)).
pub const APPROVAL_BY: &str = "planlock.approval.by";
/// How long the reason given with a decision is, in characters (never its text).
pub const APPROVAL_REASON_LENGTH: &str = "planlock.approval.reason.length";
/// How long the pause waited for the decision, in seconds.
pub const APPROVAL_WAIT: &str = "planlock.approval.wait";
/// A validator's verdict on a step: `allow`, `warn`, `block` (on the step's `guardrail` events).
pub const GUARDRAIL_VERDICT: &str = "planlock.guardrail.verdict";

// Metrics from the conventions.

/// `gen_ai.client.token.usage` (`{token}`), by `gen_ai.token.type`.
pub const METRIC_TOKEN_USAGE: &str = metric::GEN_AI_CLIENT_TOKEN_USAGE;
/// `gen_ai.client.operation.duration` (`s`).
pub const METRIC_OPERATION_DURATION: &str = metric::GEN_AI_CLIENT_OPERATION_DURATION;

// planlock's own metrics.

/// Cycles by outcome (`{cycle}`).
pub const METRIC_CYCLES: &str = "planlock.cycles";
/// Cycle duration by outcome (`s`).
pub const METRIC_CYCLE_DURATION: &str = "planlock.cycle.duration";
/// Step failures by code and class (`{failure}`).
pub const METRIC_STEP_FAILURES: &str = "planlock.step.failures";
/// Pauses waiting for a person (`{pause}`): up when a cycle pauses, down when it resumes or is
/// abandoned; summed over every process, the number pending.
pub const METRIC_PAUSES_PENDING: &str = "planlock.pauses.pending";
/// Reviewers' decisions by verdict (`{approval}`).
pub const METRIC_APPROVALS: &str = "planlock.approvals";
/// Token reservations a budget granted to model calls (`{reservation}`, CONTRACT §20).
pub const METRIC_BUDGET_RESERVATIONS: &str = "planlock.budget.reservations";
/// Model calls a budget refused, by `error.type` (`budget-exhausted`, `budget-unavailable`;
/// `{refusal}`).
pub const METRIC_BUDGET_REFUSALS: &str = "planlock.budget.refusals";

/// The environment variable that turns content capture on in the CLI, as the GenAI conventions'
/// instrumentations name it.
pub const CAPTURE_CONTENT_ENV: &str = "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT";
