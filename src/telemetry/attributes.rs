//! What planlock puts on a span from outside, bounded: a name cut to its length, a count typed as
//! the conventions type it, a failure marked as they say.

use super::names;

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
