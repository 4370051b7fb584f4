//! OTLP export (`otel` feature): [`Telemetry`] sends the spans as traces and planlock's metrics
//! over HTTP/protobuf, configured by the standard `OTEL_*` environment variables.
//!
//! A cycle never waits for the collector: a finished span goes into the batch processor's
//! bounded queue (`OTEL_BSP_MAX_QUEUE_SIZE`, 2048 by default) and is dropped when the queue is
//! full; the batches go out from the processor's own thread, each request on planlock's I/O
//! runtime with a timeout (`OTEL_EXPORTER_OTLP_TIMEOUT`, 10 s by default, at most 60 s). Every
//! number read from the environment is bounded ([`Telemetry::warnings`] says which were not
//! taken), and the export at exit waits [`SHUTDOWN_TIMEOUT`] at most. Spans that never reached
//! the collector are counted ([`SpanCounts`]).

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use opentelemetry::trace::TracerProvider as _;
use opentelemetry_http::{Bytes, HttpClient, HttpError, Request, Response};
use opentelemetry_otlp::{Protocol, WithExportConfig, WithHttpConfig};
use opentelemetry_sdk::Resource;
use opentelemetry_sdk::error::OTelSdkResult;
use opentelemetry_sdk::metrics::{PeriodicReader, SdkMeterProvider};
use opentelemetry_sdk::trace::{
    BatchConfigBuilder, BatchSpanProcessor, SdkTracerProvider, SpanData, SpanExporter, SpanProcessor,
};

use crate::contract::registry::{Failure, FailureKind};

/// How long [`Telemetry::shutdown`] waits, in all, for the last spans and metrics to go out:
/// a collector that is slow, hangs or drips its answer never holds a command longer, whatever
/// the `OTEL_*` variables say.
pub const SHUTDOWN_TIMEOUT: Duration = Duration::from_secs(2);

/// The numeric `OTEL_*` variables read, each with its default and the range it is taken in: a
/// value outside it (or not a number) is a warning ([`Telemetry::warnings`]) and the default.
/// Bounded because they size what the process allocates (a queue of 4,000,000,000 spans is an
/// abort) or how long it waits. Milliseconds for times.
const NUMBERS: &[Number] = &[
    Number { name: "OTEL_BSP_MAX_QUEUE_SIZE", default: 2048, min: 1, max: 65_536 },
    Number { name: "OTEL_BSP_MAX_EXPORT_BATCH_SIZE", default: 512, min: 1, max: 65_536 },
    Number { name: "OTEL_BSP_SCHEDULE_DELAY", default: 5000, min: 1, max: 600_000 },
    Number { name: "OTEL_METRIC_EXPORT_INTERVAL", default: 60_000, min: 100, max: 3_600_000 },
    Number { name: "OTEL_EXPORTER_OTLP_TIMEOUT", default: 10_000, min: 1, max: 60_000 },
    Number { name: "OTEL_EXPORTER_OTLP_TRACES_TIMEOUT", default: 10_000, min: 1, max: 60_000 },
    Number { name: "OTEL_EXPORTER_OTLP_METRICS_TIMEOUT", default: 10_000, min: 1, max: 60_000 },
    Number { name: "OTEL_SPAN_ATTRIBUTE_COUNT_LIMIT", default: 128, min: 0, max: 1024 },
    Number { name: "OTEL_SPAN_EVENT_COUNT_LIMIT", default: 128, min: 0, max: 1024 },
    Number { name: "OTEL_SPAN_LINK_COUNT_LIMIT", default: 128, min: 0, max: 1024 },
];

/// One numeric variable of [`NUMBERS`].
struct Number {
    name: &'static str,
    default: u64,
    min: u64,
    max: u64,
}

/// The values of [`NUMBERS`] as read, and what was wrong with them.
struct Numbers {
    values: Vec<(&'static str, u64)>,
    warnings: Vec<String>,
}

impl Numbers {
    fn from_env() -> Numbers {
        let mut numbers = Numbers { values: Vec::new(), warnings: Vec::new() };
        for n in NUMBERS {
            let value = match std::env::var(n.name).ok().filter(|v| !v.trim().is_empty()) {
                None => n.default,
                Some(text) => match text.trim().parse::<u64>() {
                    Ok(v) if (n.min..=n.max).contains(&v) => v,
                    _ => {
                        numbers.warnings.push(format!(
                            "{} = `{}` is not a whole number from {} to {}; using {}",
                            n.name,
                            crate::text::printable(&text),
                            n.min,
                            n.max,
                            n.default
                        ));
                        n.default
                    }
                },
            };
            numbers.values.push((n.name, value));
        }
        numbers
    }

    /// The value of `name` (one of [`NUMBERS`]).
    fn get(&self, name: &str) -> u64 {
        self.values.iter().find(|(n, _)| *n == name).map_or(0, |(_, v)| *v)
    }

    /// Whether the variable `name` was given (the per-signal timeouts fall back to the general).
    fn given(name: &str) -> bool {
        std::env::var(name).is_ok_and(|v| !v.trim().is_empty())
    }

    fn millis(&self, name: &str) -> Duration {
        Duration::from_millis(self.get(name))
    }

    /// A signal's export timeout: its own variable when given, else the general one.
    fn timeout(&self, signal: &str) -> Duration {
        let own = format!("OTEL_EXPORTER_OTLP_{signal}_TIMEOUT");
        if Self::given(&own) { self.millis(&own) } else { self.millis("OTEL_EXPORTER_OTLP_TIMEOUT") }
    }
}

/// The most of a collector's answer read (its body says only whether the export took).
const MAX_ANSWER_BYTES: usize = 64 << 10;

/// Telemetry could not be set up from the environment.
#[derive(Debug, thiserror::Error)]
pub enum TelemetryError {
    /// An `OTEL_*` variable holds something the exporter cannot use.
    #[error(
        "OpenTelemetry export is misconfigured: {reason}; fix the OTEL_* environment variables or unset OTEL_EXPORTER_OTLP_ENDPOINT"
    )]
    Config {
        /// What is wrong (variable values that may hold credentials, such as headers, are not
        /// repeated).
        reason: String,
    },
}

impl Failure for TelemetryError {
    /// `"telemetry-config"`.
    fn code(&self) -> &'static str {
        "telemetry-config"
    }
    /// `CycleFail`: nothing was run; fix the variables and run again.
    fn kind(&self) -> FailureKind {
        FailureKind::CycleFail
    }
}

/// What happened to the spans handed to the exporter.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct SpanCounts {
    /// Spans that ended and were offered to the export queue.
    pub ended: u64,
    /// Spans the collector accepted.
    pub exported: u64,
    /// Spans in batches the collector refused or never answered for.
    pub failed: u64,
}

impl SpanCounts {
    /// Spans that never reached the collector: refused, timed out, or dropped from a full queue.
    /// Exact after [`Telemetry::shutdown`]; before it, spans still queued count too.
    pub fn dropped(&self) -> u64 {
        self.ended.saturating_sub(self.exported)
    }
}

#[derive(Debug, Default)]
struct Counters {
    ended: AtomicU64,
    exported: AtomicU64,
    failed: AtomicU64,
}

impl Counters {
    fn read(&self) -> SpanCounts {
        SpanCounts {
            ended: self.ended.load(Ordering::Relaxed),
            exported: self.exported.load(Ordering::Relaxed),
            failed: self.failed.load(Ordering::Relaxed),
        }
    }
}

/// OpenTelemetry export of planlock's spans and metrics over OTLP/HTTP.
///
/// The `planlock` CLI sets it up when `OTEL_EXPORTER_OTLP_ENDPOINT` (or
/// `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`) is set. A program of yours adds [`layer`](Self::layer)
/// to its own `tracing` subscriber, so that the same spans go to its other layers too:
///
/// ```no_run
/// use tracing_subscriber::layer::SubscriberExt;
///
/// // OTEL_EXPORTER_OTLP_ENDPOINT=http://127.0.0.1:4318 OTEL_SERVICE_NAME=my-agent
/// if let Some(telemetry) = planlock::telemetry::Telemetry::from_env()? {
///     telemetry.install();
///     let subscriber = tracing_subscriber::registry().with(telemetry.layer());
///     tracing::subscriber::set_global_default(subscriber).expect("no subscriber yet");
///     // ... run cycles ...
///     let counts = telemetry.shutdown();
///     eprintln!("{} spans exported, {} dropped", counts.exported, counts.dropped());
/// }
/// # Ok::<(), planlock::telemetry::TelemetryError>(())
/// ```
#[derive(Debug)]
pub struct Telemetry {
    tracer: SdkTracerProvider,
    meter: Option<SdkMeterProvider>,
    counters: Arc<Counters>,
    warnings: Vec<String>,
}

impl Telemetry {
    /// Telemetry as the standard variables describe it; `None` when no OTLP endpoint is set or
    /// `OTEL_SDK_DISABLED` is `true`.
    ///
    /// Read: `OTEL_EXPORTER_OTLP_ENDPOINT` and the per-signal `…_TRACES_…`/`…_METRICS_…`
    /// forms of it, `…_HEADERS`, `…_TIMEOUT` and `…_COMPRESSION`; `OTEL_SERVICE_NAME` (else
    /// `planlock`) and `OTEL_RESOURCE_ATTRIBUTES`; `OTEL_BSP_*` for the batch queue;
    /// `OTEL_METRIC_EXPORT_INTERVAL`; `OTEL_TRACES_EXPORTER` and `OTEL_METRICS_EXPORTER`
    /// (`none` turns that signal off). The protocol is always HTTP/protobuf.
    pub fn from_env() -> Result<Option<Telemetry>, TelemetryError> {
        let var = |name: &str| std::env::var(name).ok().filter(|v| !v.trim().is_empty());
        if var("OTEL_SDK_DISABLED").is_some_and(|v| v.eq_ignore_ascii_case("true")) {
            return Ok(None);
        }
        let endpoint = |signal: &str| var(&format!("OTEL_EXPORTER_OTLP_{signal}_ENDPOINT"));
        let any_endpoint = var("OTEL_EXPORTER_OTLP_ENDPOINT").is_some();
        let on = |signal: &str| {
            let exporter = var(&format!("OTEL_{signal}_EXPORTER"));
            !exporter.is_some_and(|e| e.eq_ignore_ascii_case("none")) && (any_endpoint || endpoint(signal).is_some())
        };
        let (traces, metrics) = (on("TRACES"), on("METRICS"));
        if !traces && !metrics {
            return Ok(None);
        }
        for name in
            ["OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "OTEL_EXPORTER_OTLP_METRICS_ENDPOINT"]
        {
            if let Some(value) = var(name) {
                check_endpoint(name, &value)?;
            }
        }
        let resource = resource();
        let counters = Arc::new(Counters::default());
        // Every number the SDK would read from the environment is given here, bounded.
        let numbers = Numbers::from_env();
        let count = |name| u32::try_from(numbers.get(name)).unwrap_or(u32::MAX);
        let mut tracer = SdkTracerProvider::builder()
            .with_resource(resource.clone())
            .with_max_attributes_per_span(count("OTEL_SPAN_ATTRIBUTE_COUNT_LIMIT"))
            .with_max_events_per_span(count("OTEL_SPAN_EVENT_COUNT_LIMIT"))
            .with_max_links_per_span(count("OTEL_SPAN_LINK_COUNT_LIMIT"));
        if traces {
            let exporter = opentelemetry_otlp::SpanExporter::builder()
                .with_http()
                .with_protocol(Protocol::HttpBinary)
                .with_http_client(IoClient::new(numbers.timeout("TRACES"))?)
                .build()
                .map_err(config)?;
            let queue = numbers.get("OTEL_BSP_MAX_QUEUE_SIZE") as usize;
            let batch = BatchConfigBuilder::default()
                .with_max_queue_size(queue)
                .with_max_export_batch_size((numbers.get("OTEL_BSP_MAX_EXPORT_BATCH_SIZE") as usize).min(queue))
                .with_scheduled_delay(numbers.millis("OTEL_BSP_SCHEDULE_DELAY"))
                .build();
            let batch = BatchSpanProcessor::builder(Counted { inner: exporter, counters: counters.clone() })
                .with_batch_config(batch)
                .build();
            tracer = tracer.with_span_processor(Offered { inner: batch, counters: counters.clone() });
        }
        let meter = if metrics {
            let exporter = opentelemetry_otlp::MetricExporter::builder()
                .with_http()
                .with_protocol(Protocol::HttpBinary)
                .with_http_client(IoClient::new(numbers.timeout("METRICS"))?)
                .build()
                .map_err(config)?;
            let reader =
                PeriodicReader::builder(exporter).with_interval(numbers.millis("OTEL_METRIC_EXPORT_INTERVAL")).build();
            Some(SdkMeterProvider::builder().with_resource(resource).with_reader(reader).build())
        } else {
            None
        };
        Ok(Some(Telemetry { tracer: tracer.build(), meter, counters, warnings: numbers.warnings }))
    }

    /// Makes this the process's OpenTelemetry metrics provider (planlock's metrics go to it from
    /// now on) and its propagator the W3C Trace Context one.
    pub fn install(&self) {
        if let Some(meter) = &self.meter {
            opentelemetry::global::set_meter_provider(meter.clone());
        }
        opentelemetry::global::set_text_map_propagator(opentelemetry_sdk::propagation::TraceContextPropagator::new());
        crate::telemetry::refresh_meters();
    }

    /// The `tracing` layer that turns planlock's spans (and any others under the subscriber) into
    /// OpenTelemetry spans for export. It does not make a span's OpenTelemetry context current
    /// while the span is entered (an executor enters a step's span at every poll: measured, 4
    /// points of the workers' CPU per cycle); a program whose own OpenTelemetry instrumentation
    /// reads `Context::current()` inside planlock's spans builds its layer with
    /// `tracing_opentelemetry` itself.
    pub fn layer<S>(&self) -> impl tracing_subscriber::Layer<S> + use<S>
    where
        S: tracing::Subscriber + for<'span> tracing_subscriber::registry::LookupSpan<'span>,
    {
        let tracer = self.tracer.tracer_with_scope(
            opentelemetry::InstrumentationScope::builder("planlock").with_version(env!("CARGO_PKG_VERSION")).build(),
        );
        tracing_opentelemetry::layer()
            .with_tracer(tracer)
            .with_location(false)
            .with_threads(false)
            .with_target(false)
            .with_level(false)
            .with_tracked_inactivity(false)
            .with_context_activation(false)
    }

    /// What was wrong with the `OTEL_*` variables and was replaced by a default (a number out
    /// of its bounds, or not a number): a program says these to whoever set them.
    pub fn warnings(&self) -> &[String] {
        &self.warnings
    }

    /// What happened to the spans so far.
    pub fn counts(&self) -> SpanCounts {
        self.counters.read()
    }

    /// Sends what is queued and stops the exporters, spans and metrics at once, waiting at most
    /// [`SHUTDOWN_TIMEOUT`] in all for the collector; returns the final counts (what did not go
    /// out by then is counted as dropped).
    pub fn shutdown(self) -> SpanCounts {
        let Telemetry { tracer, meter, counters, .. } = self;
        // Each on a thread of its own, so that one's wait does not add to the other's; what is
        // still waiting at the deadline is left to end with the process.
        let (done, finished) = std::sync::mpsc::channel();
        let spans = done.clone();
        let _ = std::thread::Builder::new().name("planlock-otel-shutdown".into()).spawn(move || {
            let _ = tracer.shutdown_with_timeout(SHUTDOWN_TIMEOUT);
            let _ = spans.send(());
        });
        let waiting = match meter {
            Some(meter) => {
                let _ = std::thread::Builder::new().name("planlock-otel-shutdown".into()).spawn(move || {
                    let _ = meter.shutdown_with_timeout(SHUTDOWN_TIMEOUT);
                    let _ = done.send(());
                });
                2
            }
            None => 1,
        };
        let deadline = std::time::Instant::now() + SHUTDOWN_TIMEOUT;
        for _ in 0..waiting {
            let left = deadline.saturating_duration_since(std::time::Instant::now());
            if finished.recv_timeout(left).is_err() {
                break;
            }
        }
        counters.read()
    }
}

/// The exporter's complaint, without the credentials the variables may hold: a header's value
/// (`…_HEADERS`) and an endpoint's userinfo (`…_ENDPOINT`). Each is replaced where it stands
/// whole (not inside a longer word), so that a short value does not mangle the message.
fn config(e: impl std::fmt::Display) -> TelemetryError {
    let mut secrets = Vec::new();
    for (name, value) in std::env::vars() {
        if !name.starts_with("OTEL_EXPORTER_OTLP_") || value.trim().is_empty() {
            continue;
        }
        if name.ends_with("HEADERS") {
            secrets.push(value.clone());
            secrets.extend(value.split(',').filter_map(|pair| Some(pair.split_once('=')?.1.trim().to_owned())));
        } else if name.ends_with("ENDPOINT")
            && let Some((_, rest)) = value.split_once("://")
            && let Some((userinfo, _)) = rest.split_once('@')
        {
            secrets.push(userinfo.to_owned());
            secrets.extend(userinfo.split_once(':').map(|(_, password)| password.to_owned()));
        }
    }
    // The longest first: a password is part of its userinfo.
    secrets.retain(|s| !s.is_empty());
    secrets.sort_by_key(|s| std::cmp::Reverse(s.len()));
    let mut reason = e.to_string();
    for secret in &secrets {
        reason = replace_whole(&reason, secret, "(not shown)");
    }
    TelemetryError::Config { reason: crate::text::printable(&reason).into_owned() }
}

/// Refuses an endpoint that is not an http(s) URL with a host, naming the variable and what is
/// wrong, never the value: a value that cannot be read cannot be known to hold no credential.
fn check_endpoint(name: &str, value: &str) -> Result<(), TelemetryError> {
    let why = match reqwest::Url::parse(value.trim()) {
        Err(e) => e.to_string(),
        Ok(url) if !matches!(url.scheme(), "http" | "https") => "its scheme is not http or https".to_owned(),
        Ok(url) if url.host_str().is_none_or(str::is_empty) => "it names no host".to_owned(),
        Ok(_) => return Ok(()),
    };
    Err(TelemetryError::Config {
        reason: format!(
            "{name}: invalid endpoint ({why}); its value is not shown, as it may hold a credential: give an http(s) URL such as http://127.0.0.1:4318"
        ),
    })
}

/// `text` with each occurrence of `word` that is not inside a longer word (no letter or digit
/// right before or after it) replaced by `with`.
fn replace_whole(text: &str, word: &str, with: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(at) = rest.find(word) {
        let before = rest[..at].chars().next_back();
        let after = rest[at + word.len()..].chars().next();
        let inside = |c: Option<char>| c.is_some_and(char::is_alphanumeric);
        out.push_str(&rest[..at]);
        out.push_str(if inside(before) || inside(after) { word } else { with });
        rest = &rest[at + word.len()..];
    }
    out.push_str(rest);
    out
}

/// The resource from the environment, `service.name` `planlock` unless it names one.
fn resource() -> Resource {
    let named = std::env::var("OTEL_SERVICE_NAME").is_ok_and(|v| !v.trim().is_empty())
        || std::env::var("OTEL_RESOURCE_ATTRIBUTES").is_ok_and(|v| v.contains("service.name="));
    let builder = Resource::builder();
    if named { builder.build() } else { builder.with_service_name("planlock").build() }
}

/// The OTLP requests' client: reqwest on planlock's I/O runtime (no runtime or thread of its
/// own), with the export timeout, no redirects (headers may carry a collector's key).
#[derive(Debug)]
struct IoClient {
    client: reqwest::Client,
}

impl IoClient {
    fn new(timeout: Duration) -> Result<IoClient, TelemetryError> {
        let client = reqwest::Client::builder()
            .timeout(timeout)
            .connect_timeout(timeout)
            .redirect(reqwest::redirect::Policy::none())
            .build()
            .map_err(|e| config(format!("the HTTP client cannot be made: {e}")))?;
        Ok(IoClient { client })
    }
}

#[async_trait::async_trait]
impl HttpClient for IoClient {
    async fn send_bytes(&self, request: Request<Bytes>) -> Result<Response<Bytes>, HttpError> {
        let client = self.client.clone();
        let runtime = crate::io::runtime().map_err(HttpError::from)?;
        runtime
            .spawn(async move {
                let request = reqwest::Request::try_from(request)?;
                let mut answer = client.execute(request).await?;
                let mut out = Response::builder().status(answer.status());
                let mut body = Vec::new();
                while let Some(chunk) = answer.chunk().await? {
                    let room = MAX_ANSWER_BYTES.saturating_sub(body.len());
                    body.extend_from_slice(&chunk[..chunk.len().min(room)]);
                }
                if let Some(headers) = out.headers_mut() {
                    *headers = std::mem::take(answer.headers_mut());
                }
                Ok::<_, HttpError>(out.body(Bytes::from(body))?)
            })
            .await?
    }
}

/// The exporter, counting what the collector took.
#[derive(Debug)]
struct Counted<E> {
    inner: E,
    counters: Arc<Counters>,
}

impl<E: SpanExporter> SpanExporter for Counted<E> {
    fn export(&self, batch: Vec<SpanData>) -> impl Future<Output = OTelSdkResult> + Send {
        let n = batch.len() as u64;
        let sent = self.inner.export(batch);
        let counters = self.counters.clone();
        async move {
            let result = sent.await;
            let counter = if result.is_ok() { &counters.exported } else { &counters.failed };
            counter.fetch_add(n, Ordering::Relaxed);
            result
        }
    }

    fn shutdown_with_timeout(&self, timeout: Duration) -> OTelSdkResult {
        self.inner.shutdown_with_timeout(timeout)
    }

    fn force_flush(&self) -> OTelSdkResult {
        self.inner.force_flush()
    }

    fn set_resource(&mut self, resource: &Resource) {
        self.inner.set_resource(resource);
    }
}

/// The batch processor, counting the spans offered to it.
#[derive(Debug)]
struct Offered<P> {
    inner: P,
    counters: Arc<Counters>,
}

impl<P: SpanProcessor> SpanProcessor for Offered<P> {
    fn on_start(&self, span: &mut opentelemetry_sdk::trace::Span, cx: &opentelemetry::Context) {
        self.inner.on_start(span, cx);
    }

    fn on_end(&self, span: SpanData) {
        self.counters.ended.fetch_add(1, Ordering::Relaxed);
        self.inner.on_end(span);
    }

    fn force_flush(&self) -> OTelSdkResult {
        self.inner.force_flush()
    }

    fn shutdown_with_timeout(&self, timeout: Duration) -> OTelSdkResult {
        self.inner.shutdown_with_timeout(timeout)
    }

    fn set_resource(&mut self, resource: &Resource) {
        self.inner.set_resource(resource);
    }
}

#[cfg(test)]
mod endpoint_tests {
    use super::*;

    #[test]
    fn an_endpoint_that_cannot_be_read_is_named_never_shown() {
        for value in
            ["Sup3rSecret-Value_81\u{7f}", "ht tp://Sup3rSecret-Value_81", "ftp://Sup3rSecret-Value_81", "http://"]
        {
            let said = check_endpoint("OTEL_EXPORTER_OTLP_METRICS_ENDPOINT", value).unwrap_err().to_string();
            assert!(said.contains("OTEL_EXPORTER_OTLP_METRICS_ENDPOINT: invalid endpoint"), "{said}");
            assert!(!said.contains("Sup3rSecret"), "{said}");
        }
        assert!(check_endpoint("OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:4318").is_ok());
    }
}
