//! The cycle's and the steps' spans (docs/CONTRACT.md §16), named from
//! [`telemetry::names`](crate::telemetry::names); how a cycle's end is recorded on its span and in
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
        { GEN_AI_OPERATION_NAME } = "invoke_workflow",
        { GEN_AI_WORKFLOW_NAME } = mode,
        { GEN_AI_CONVERSATION_ID } = %cycle.session.session_id,
        { CYCLE_NUMBER } = cycle.session.cycle,
        { PLAN_HASH } = %cycle.session.plan_hash,
        { STEP_COUNT } = steps,
        { RESUMED_AT } = cycle.next,
        { OUTCOME } = Empty,
        { ERROR_TYPE } = Empty,
        { FAILURE_CLASS } = Empty,
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
        { STEP_ID } = %step.id,
        { STEP_TYPE } = step.step_type().wire_name(),
        { STEP_INDEX } = index,
        { OUTCOME } = Empty,
        { ERROR_TYPE } = Empty,
        { FAILURE_CLASS } = Empty,
        { PAYLOAD } = Empty,
        { RESULT } = Empty,
    );
    span
}

/// Records a failure on `span` (a step's or the cycle's): its code as `error.type`, its class,
/// the span's status.
pub(crate) fn failed(span: &tracing::Span, err: &ExecError) {
    span.record(OUTCOME, "failed");
    span.record(ERROR_TYPE, err.code());
    span.record(FAILURE_CLASS, err.kind().as_str());
    span.record("otel.status_code", "error");
}

/// Records how the cycle ended on its span and in the metrics; a paused cycle keeps its span's
/// place in the trace for its record, so that its resume continues the trace.
pub(crate) fn cycle_ended(span: &tracing::Span, started: Instant, result: &mut Result<CycleOutcome, ExecError>) {
    let duration = started.elapsed();
    match result {
        Ok(CycleOutcome::Completed(_)) => {
            span.record(OUTCOME, "completed");
            telemetry::cycle_ended("completed", duration, None);
        }
        Ok(CycleOutcome::InterventionRequired(paused)) => {
            span.record(OUTCOME, "paused");
            paused.trace = TraceParent::of_span(span);
            telemetry::cycle_ended("paused", duration, None);
        }
        Err(err) => {
            failed(span, err);
            telemetry::cycle_ended("failed", duration, Some((err.code(), err.kind().as_str())));
        }
    }
}
