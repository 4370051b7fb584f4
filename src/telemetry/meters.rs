//! planlock's metrics (docs/CONTRACT.md §16): the GenAI client metrics with the conventions'
//! units and bucket boundaries, and planlock's own counts. Recorded through the global
//! OpenTelemetry `MeterProvider` (`otel` feature); without the feature every call is empty.

use std::time::Duration;

/// `gen_ai.client.token.usage`'s explicit bucket boundaries, as the conventions give them.
pub const TOKEN_BUCKETS: [f64; 14] = [
    1.0, 4.0, 16.0, 64.0, 256.0, 1024.0, 4096.0, 16384.0, 65536.0, 262144.0, 1048576.0, 4194304.0, 16777216.0,
    67108864.0,
];

/// `gen_ai.client.operation.duration`'s explicit bucket boundaries (seconds), as the conventions
/// give them; planlock's cycle duration uses them too.
pub const DURATION_BUCKETS: [f64; 14] =
    [0.01, 0.02, 0.04, 0.08, 0.16, 0.32, 0.64, 1.28, 2.56, 5.12, 10.24, 20.48, 40.96, 81.92];

/// What one model call reports to the two GenAI metrics.
#[cfg_attr(not(feature = "otel"), allow(dead_code, reason = "read only where the metrics are recorded"))]
pub(crate) struct CallMetric<'a> {
    pub(crate) operation: &'static str,
    pub(crate) provider: &'a str,
    pub(crate) request_model: &'a str,
    pub(crate) response_model: Option<&'a str>,
    pub(crate) server_address: Option<&'a str>,
    pub(crate) error_type: Option<&'a str>,
    pub(crate) duration: Duration,
    pub(crate) input_tokens: Option<u64>,
    pub(crate) output_tokens: Option<u64>,
}

#[cfg(feature = "otel")]
mod instruments {
    use std::sync::{Arc, RwLock};

    use opentelemetry::metrics::{Counter, Histogram, UpDownCounter};

    use super::{DURATION_BUCKETS, TOKEN_BUCKETS};
    use crate::telemetry::names::*;

    pub(super) struct Meters {
        pub(super) token_usage: Histogram<u64>,
        pub(super) operation_duration: Histogram<f64>,
        pub(super) cycles: Counter<u64>,
        pub(super) cycle_duration: Histogram<f64>,
        pub(super) step_failures: Counter<u64>,
        pub(super) pauses: UpDownCounter<i64>,
        pub(super) approvals: Counter<u64>,
        pub(super) reservations: Counter<u64>,
        pub(super) refusals: Counter<u64>,
    }

    /// The instruments, made from the global provider the first time after each
    /// `refresh_meters` (instruments made from the default no-op provider would stay no-ops).
    static METERS: RwLock<Option<Arc<Meters>>> = RwLock::new(None);

    pub(super) fn get() -> Arc<Meters> {
        if let Some(m) = METERS.read().unwrap_or_else(|e| e.into_inner()).as_ref() {
            return m.clone();
        }
        let made = Arc::new(make());
        METERS.write().unwrap_or_else(|e| e.into_inner()).get_or_insert(made).clone()
    }

    pub(super) fn refresh() {
        *METERS.write().unwrap_or_else(|e| e.into_inner()) = None;
    }

    fn make() -> Meters {
        let scope =
            opentelemetry::InstrumentationScope::builder("planlock").with_version(env!("CARGO_PKG_VERSION")).build();
        let meter = opentelemetry::global::meter_with_scope(scope);
        Meters {
            token_usage: meter
                .u64_histogram(METRIC_TOKEN_USAGE)
                .with_unit("{token}")
                .with_description("Number of input and output tokens used.")
                .with_boundaries(TOKEN_BUCKETS.to_vec())
                .build(),
            operation_duration: meter
                .f64_histogram(METRIC_OPERATION_DURATION)
                .with_unit("s")
                .with_description("GenAI operation duration.")
                .with_boundaries(DURATION_BUCKETS.to_vec())
                .build(),
            cycles: meter.u64_counter(METRIC_CYCLES).with_unit("{cycle}").with_description("Cycles run.").build(),
            cycle_duration: meter
                .f64_histogram(METRIC_CYCLE_DURATION)
                .with_unit("s")
                .with_description("A cycle's duration, from its first step to its end.")
                .with_boundaries(DURATION_BUCKETS.to_vec())
                .build(),
            step_failures: meter
                .u64_counter(METRIC_STEP_FAILURES)
                .with_unit("{failure}")
                .with_description("Steps that failed, by code and class.")
                .build(),
            pauses: meter
                .i64_up_down_counter(METRIC_PAUSES_PENDING)
                .with_unit("{pause}")
                .with_description("Paused cycles waiting for a person (summed over every process).")
                .build(),
            approvals: meter
                .u64_counter(METRIC_APPROVALS)
                .with_unit("{approval}")
                .with_description("Reviewers' decisions, by verdict.")
                .build(),
            reservations: meter
                .u64_counter(METRIC_BUDGET_RESERVATIONS)
                .with_unit("{reservation}")
                .with_description("Token reservations a budget granted to model calls.")
                .build(),
            refusals: meter
                .u64_counter(METRIC_BUDGET_REFUSALS)
                .with_unit("{refusal}")
                .with_description("Model calls a token budget refused, by error type.")
                .build(),
        }
    }
}

/// Makes the instruments again from the global `MeterProvider` at their next use: call it after
/// installing a provider of your own (`Telemetry::install` does).
pub fn refresh_meters() {
    #[cfg(feature = "otel")]
    instruments::refresh();
}

/// A model call ended.
pub(crate) fn model_call(m: &CallMetric<'_>) {
    #[cfg(feature = "otel")]
    {
        use opentelemetry::KeyValue;

        use crate::telemetry::names::*;
        let mut attrs = Vec::with_capacity(7);
        attrs.push(KeyValue::new(GEN_AI_OPERATION_NAME, m.operation));
        attrs.push(KeyValue::new(GEN_AI_PROVIDER_NAME, m.provider.to_owned()));
        attrs.push(KeyValue::new(GEN_AI_REQUEST_MODEL, m.request_model.to_owned()));
        if let Some(model) = m.response_model {
            attrs.push(KeyValue::new(GEN_AI_RESPONSE_MODEL, model.to_owned()));
        }
        if let Some(server) = m.server_address {
            attrs.push(KeyValue::new(SERVER_ADDRESS, server.to_owned()));
        }
        let meters = instruments::get();
        for (kind, count) in [("input", m.input_tokens), ("output", m.output_tokens)] {
            if let Some(n) = count {
                attrs.push(KeyValue::new(GEN_AI_TOKEN_TYPE, kind));
                meters.token_usage.record(n, &attrs);
                attrs.pop();
            }
        }
        if let Some(error) = m.error_type {
            attrs.push(KeyValue::new(ERROR_TYPE, error.to_owned()));
        }
        meters.operation_duration.record(m.duration.as_secs_f64(), &attrs);
    }
    #[cfg(not(feature = "otel"))]
    let _ = m;
}

/// A cycle ended with `outcome` (`completed`, `paused`, `failed`) after `duration`; a failed
/// one's step failure counts under its `code` and `class`.
pub(crate) fn cycle_ended(outcome: &'static str, duration: Duration, failure: Option<(&'static str, &'static str)>) {
    #[cfg(feature = "otel")]
    {
        use opentelemetry::KeyValue;

        use crate::telemetry::names::*;
        let meters = instruments::get();
        let attrs = [KeyValue::new(OUTCOME, outcome)];
        meters.cycles.add(1, &attrs);
        meters.cycle_duration.record(duration.as_secs_f64(), &attrs);
        if let Some((code, class)) = failure {
            meters.step_failures.add(1, &[KeyValue::new(ERROR_TYPE, code), KeyValue::new(FAILURE_CLASS, class)]);
        }
        if outcome == "paused" {
            meters.pauses.add(1, &[]);
        }
    }
    #[cfg(not(feature = "otel"))]
    let _ = (outcome, duration, failure);
}

/// A paused cycle left the inbox: resumed or abandoned.
pub(crate) fn pause_closed() {
    #[cfg(feature = "otel")]
    instruments::get().pauses.add(-1, &[]);
}

/// A reviewer decided: `approved` or `rejected`.
pub(crate) fn approval(verdict: &'static str) {
    #[cfg(feature = "otel")]
    instruments::get().approvals.add(1, &[opentelemetry::KeyValue::new(crate::telemetry::names::VERDICT, verdict)]);
    #[cfg(not(feature = "otel"))]
    let _ = verdict;
}

/// A model call asked its budget: granted (`None`), or refused with the refusal's code.
pub(crate) fn budget_reserved(refused: Option<&'static str>) {
    #[cfg(feature = "otel")]
    {
        let meters = instruments::get();
        match refused {
            None => meters.reservations.add(1, &[]),
            Some(code) => {
                meters.refusals.add(1, &[opentelemetry::KeyValue::new(crate::telemetry::names::ERROR_TYPE, code)])
            }
        }
    }
    #[cfg(not(feature = "otel"))]
    let _ = refused;
}
