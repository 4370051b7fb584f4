//! [`TraceParent`]: where a paused cycle's trace is, kept in its intervention record so that the
//! resumed cycle continues the same trace, in this process or another, hours later.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// A span's place in a trace, in the W3C Trace Context `traceparent` form
/// (`00-{trace id}-{span id}-{flags}`, lowercase hex).
///
/// A paused cycle's record keeps its cycle span's; the resumed cycle's span becomes that span's
/// child, so one trace holds the cycle from its first step to its last, across the pause.
///
/// ```
/// use planlock::telemetry::TraceParent;
/// let parent: TraceParent = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01".parse()?;
/// assert_eq!(parent.trace_id(), "4bf92f3577b34da6a3ce929d0e0e4736");
/// assert_eq!(parent.to_string(), "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01");
/// // All-zero ids are invalid, as are upper case, other versions and other lengths.
/// assert!("00-00000000000000000000000000000000-00f067aa0ba902b7-01".parse::<TraceParent>().is_err());
/// # Ok::<(), planlock::telemetry::InvalidTraceParent>(())
/// ```
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct TraceParent {
    trace_id: [u8; 16],
    span_id: [u8; 8],
    flags: u8,
}

/// A string that is not a valid `traceparent`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("not a W3C traceparent (`00-` then 32 and 16 lowercase hex digits, not all zero, then 2): {start:?}")]
pub struct InvalidTraceParent {
    /// The string's first 64 characters.
    start: String,
}

impl TraceParent {
    /// The trace id, as 32 lowercase hex digits (what a backend's search takes).
    pub fn trace_id(&self) -> String {
        hex(&self.trace_id)
    }

    /// The span id, as 16 lowercase hex digits.
    pub fn span_id(&self) -> String {
        hex(&self.span_id)
    }

    /// The trace flags (bit 0: sampled).
    pub fn flags(&self) -> u8 {
        self.flags
    }

    /// The `traceparent` of `span` when an OpenTelemetry layer records it (`otel` feature);
    /// `None` otherwise.
    pub fn of_span(span: &tracing::Span) -> Option<TraceParent> {
        #[cfg(feature = "otel")]
        {
            use opentelemetry::trace::TraceContextExt;
            use tracing_opentelemetry::OpenTelemetrySpanExt;
            if span.is_disabled() {
                return None;
            }
            let cx = span.context();
            let sc = cx.span().span_context().clone();
            sc.is_valid().then(|| TraceParent {
                trace_id: sc.trace_id().to_bytes(),
                span_id: sc.span_id().to_bytes(),
                flags: sc.trace_flags().to_u8(),
            })
        }
        #[cfg(not(feature = "otel"))]
        {
            let _ = span;
            None
        }
    }

    /// Makes `span`, not yet entered, a child of this one, in its trace (`otel` feature; without
    /// it, or without an OpenTelemetry layer, nothing happens).
    pub fn adopt(&self, span: &tracing::Span) {
        #[cfg(feature = "otel")]
        {
            use opentelemetry::trace::{SpanContext, SpanId, TraceContextExt, TraceFlags, TraceId, TraceState};
            use tracing_opentelemetry::OpenTelemetrySpanExt;
            if span.is_disabled() {
                return;
            }
            let sc = SpanContext::new(
                TraceId::from_bytes(self.trace_id),
                SpanId::from_bytes(self.span_id),
                TraceFlags::new(self.flags),
                true,
                TraceState::default(),
            );
            // Refused only when the span has started already or no layer records it: then the
            // cycle starts a trace of its own, which is all that is lost.
            let _ = span.set_parent(opentelemetry::Context::new().with_remote_span_context(sc));
        }
        #[cfg(not(feature = "otel"))]
        let _ = span;
    }

    /// Reads a record's `traceparent` leniently: a value that is not one (a record edited by
    /// hand, another tool's format) is dropped, never a reason to refuse the record, since only
    /// the trace's continuity depends on it.
    pub(crate) fn lenient<'de, D: Deserializer<'de>>(d: D) -> Result<Option<TraceParent>, D::Error> {
        let text = Option::<std::borrow::Cow<'de, str>>::deserialize(d)?;
        Ok(text.and_then(|t| t.parse().ok()))
    }
}

impl FromStr for TraceParent {
    type Err = InvalidTraceParent;

    fn from_str(s: &str) -> Result<TraceParent, InvalidTraceParent> {
        let invalid = || InvalidTraceParent { start: s.chars().take(64).collect() };
        let b = s.as_bytes();
        if b.len() != 55 || !s.starts_with("00-") || b[35] != b'-' || b[52] != b'-' {
            return Err(invalid());
        }
        let mut trace_id = [0; 16];
        let mut span_id = [0; 8];
        let mut flags = [0; 1];
        unhex(&b[3..35], &mut trace_id).ok_or_else(invalid)?;
        unhex(&b[36..52], &mut span_id).ok_or_else(invalid)?;
        unhex(&b[53..55], &mut flags).ok_or_else(invalid)?;
        if trace_id == [0; 16] || span_id == [0; 8] {
            return Err(invalid());
        }
        Ok(TraceParent { trace_id, span_id, flags: flags[0] })
    }
}

impl fmt::Display for TraceParent {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "00-{}-{}-{:02x}", self.trace_id(), self.span_id(), self.flags)
    }
}

impl fmt::Debug for TraceParent {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "TraceParent({self})")
    }
}

impl Serialize for TraceParent {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for TraceParent {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<TraceParent, D::Error> {
        let text = std::borrow::Cow::<'de, str>::deserialize(d)?;
        text.parse().map_err(serde::de::Error::custom)
    }
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// Lowercase hex digits into `out`, two per byte; `None` on anything else.
fn unhex(digits: &[u8], out: &mut [u8]) -> Option<()> {
    let value = |d: u8| match d {
        b'0'..=b'9' => Some(d - b'0'),
        b'a'..=b'f' => Some(d - b'a' + 10),
        _ => None,
    };
    for (pair, byte) in digits.chunks_exact(2).zip(out.iter_mut()) {
        *byte = value(pair[0])? << 4 | value(pair[1])?;
    }
    Some(())
}
