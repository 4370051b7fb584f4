//! The cycle's and the steps' spans (docs/CONTRACT.md §16), named from
//! [`telemetry::names`]; how a cycle's end is recorded on its span and in
//! the metrics.
//!
//! Layer 4, with the executor.

use std::time::Instant;

use tracing::field::Empty;

use crate::contract::plan::{PlanMetadata, StepDefinition};
use crate::contract::registry::Failure;
use crate::exec::cycle::{Cycle, CycleOutcome};
use crate::exec::failure::ExecError;
use crate::telemetry::names::*;
use crate::telemetry::{self, TraceParent};

/// The cycle's span, `invoke_workflow {mode}`; a resumed cycle's is the child of the paused
/// cycle's span (`trace`), in its trace.
pub(crate) fn cycle_span(
    metadata: &PlanMetadata,
    cycle: &Cycle,
    steps: usize,
    trace: Option<TraceParent>,
) -> tracing::Span {
    let mode = telemetry::name(&metadata.mode);
    let span = tracing::info_span!(
        "invoke_workflow",
        otel.name = %format_args!("invoke_workflow {mode}"),
        otel.status_code = Empty,
        otel.status_description = Empty,
        { GEN_AI_OPERATION_NAME } = "invoke_workflow",
        { GEN_AI_WORKFLOW_NAME } = mode,
        { GEN_AI_CONVERSATION_ID } = %cycle.session.session_id,
        { SESSION_ID } = %cycle.session.session_id,
        { OPENINFERENCE_SPAN_KIND } = "CHAIN",
        { CYCLE_NUMBER } = telemetry::int(cycle.session.cycle),
        { PLAN_HASH } = %cycle.session.plan_hash,
        { STEP_COUNT } = telemetry::int(steps),
        { RESUMED_AT } = telemetry::int(cycle.next),
        { OUTCOME } = Empty,
        { ERROR_TYPE } = Empty,
        { FAILURE_CLASS } = Empty,
        { INPUT_VALUE } = Empty,
        { INPUT_MIME_TYPE } = Empty,
        { OUTPUT_VALUE } = Empty,
        { OUTPUT_MIME_TYPE } = Empty,
    );
    if let Some(parent) = trace {
        parent.adopt(&span);
    }
    span
}

/// A step's span, named after its type, under the cycle's.
pub(crate) fn step_span(parent: &tracing::Span, index: usize, step: &StepDefinition) -> tracing::Span {
    let span = tracing::info_span!(
        parent: parent,
        "step",
        otel.name = step.step_type().wire_name(),
        otel.status_code = Empty,
        otel.status_description = Empty,
        { OPENINFERENCE_SPAN_KIND } = "CHAIN",
        { STEP_ID } = %step.id,
        { STEP_TYPE } = step.step_type().wire_name(),
        { STEP_INDEX } = telemetry::int(index),
        { OUTCOME } = Empty,
        { ERROR_TYPE } = Empty,
        { FAILURE_CLASS } = Empty,
        { PAYLOAD } = Empty,
        { RESULT } = Empty,
    );
    span
}

/// Records a failure on `span` (a step's or the cycle's): its code as `error.type`, its class,
/// the span's status with the message, and an `exception` event.
pub(crate) fn failed(span: &tracing::Span, err: &ExecError) {
    span.record(OUTCOME, "failed");
    span.record(FAILURE_CLASS, err.kind().as_str());
    telemetry::failed(span, err.code(), &err.to_string());
}

/// With content capture on: the text a completed step gives the cycle's span for readers that
/// show a run's input and output (Phoenix's Sessions): the prompt `PromptAssemble` built is
/// its input, the answer `LLMCall` got its output (a plan has each step at most once).
pub(crate) fn cycle_content(span: &tracing::Span, result: &crate::contract::steps::StepResult) {
    use crate::contract::steps::StepResult;
    let (value, mime, text) = match result {
        StepResult::PromptAssemble(r) => (INPUT_VALUE, INPUT_MIME_TYPE, &r.prompt),
        StepResult::LLMCall(r) => (OUTPUT_VALUE, OUTPUT_MIME_TYPE, &r.response),
        _ => return,
    };
    span.record(value, text.as_str());
    span.record(mime, "text/plain");
}

/// Records how the cycle ended on its span and in the metrics; a paused cycle keeps its span's
/// place in the trace for its record, so that its resume continues the trace.
pub(crate) fn cycle_ended(span: &tracing::Span, started: Instant, result: &mut Result<CycleOutcome, ExecError>) {
    let duration = started.elapsed();
    match result {
        Ok(CycleOutcome::Completed(done)) => {
            span.record(OUTCOME, "completed");
            done.report.trace_id = TraceParent::of_span(span).map(|t| t.trace_id());
            telemetry::cycle_ended("completed", duration, None);
        }
        Ok(CycleOutcome::InterventionRequired(paused)) => {
            span.record(OUTCOME, "paused");
            paused.trace = TraceParent::of_span(span);
            paused.cycle.report.trace_id = paused.trace.map(|t| t.trace_id());
            telemetry::cycle_ended("paused", duration, None);
        }
        Err(err) => {
            failed(span, err);
            telemetry::cycle_ended("failed", duration, Some((err.code(), err.kind().as_str())));
        }
    }
}

/// A validator's `apply_guardrail` span under its step's: for a Block (`verdict` `block`) or a
/// validator that failed (`error`); an Allow or a Warn is an event on the step.
pub(crate) fn guardrail_span(
    step_span: &tracing::Span,
    validator: &str,
    step: &StepDefinition,
    verdict: &str,
) -> tracing::Span {
    tracing::info_span!(
        parent: step_span,
        "apply_guardrail",
        otel.status_code = Empty,
        otel.status_description = Empty,
        { GEN_AI_OPERATION_NAME } = "apply_guardrail",
        { OPENINFERENCE_SPAN_KIND } = "GUARDRAIL",
        { VALIDATOR } = validator,
        { STEP_ID } = %step.id,
        { GUARDRAIL_VERDICT } = verdict,
        { ERROR_TYPE } = Empty,
    )
}

/// A validator's verdict that lets its step go on (`allow`, `warn`, or `approved`: a Block a
/// person approved), as an `apply_guardrail` event on the step's span.
pub(crate) fn guardrail_event(step_span: &tracing::Span, validator: &str, verdict: &str) {
    tracing::event!(
        parent: step_span,
        tracing::Level::INFO,
        { VALIDATOR } = validator,
        { GUARDRAIL_VERDICT } = verdict,
        "apply_guardrail"
    );
}
