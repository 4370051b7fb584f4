//! Layer 4: texts to vectors (docs/CONTRACT.md, "Retrieval by meaning"): the [`Embedder`] port
//! that the semantic providers (`store`) rank with and `handlers::OpenAiEmbedder` implements, its vectors' arithmetic, and [`DemoEmbedder`], a deterministic
//! stand-in for the offline demo. `OpenAiEmbedder` (`handlers::embed`, feature `openai`) is the
//! real one, on any OpenAI-compatible `/v1/embeddings` endpoint.
//!
//! An embedder is part of what a session is pinned to: its [`model`](Embedder::model) and
//! [`dimension`](Embedder::dimension) are recorded with the providers, since vectors of another
//! model mean something else (CONTRACT §12).

use std::future::Future;
use std::pin::Pin;
use std::time::Instant;

use crate::contract::registry::{Failure, FailureKind};

/// A boxed future of an embedder's call.
pub type EmbedFuture<'a> = Pin<Box<dyn Future<Output = Result<Vec<Vec<f32>>, EmbedError>> + Send + 'a>>;

/// What a text is embedded for. Some models (E5) embed a search query and a stored passage
/// differently; others ignore it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Purpose {
    /// A search query.
    Query,
    /// A text that is stored and searched for.
    Passage,
}

/// The largest vector dimension accepted (8,192): a session is pinned to its embedder's
/// dimension, and a model that answers more (a server's mistake, or an answer meant to exhaust
/// memory) is refused when the pin is made, not after the store has filled with such vectors.
pub const MAX_DIMENSION: usize = 8192;

/// Why texts could not be embedded. A server's failure keeps its cause's stable code and class
/// (`model-http-status`, `model-redirect`, …, as the chat model's); a bad answer is
/// `embed-answer`.
///
/// ```
/// use planlock::Failure;
/// use planlock::embed::EmbedError;
/// let e = EmbedError::new("e5", "the answer has 2 vectors for 3 texts");
/// assert_eq!((e.code(), e.to_string().as_str()), ("embed-answer", "embedding with `e5` failed: the answer has 2 vectors for 3 texts"));
/// ```
#[derive(Debug, thiserror::Error)]
#[error("embedding with `{model}` failed: {message}{}", source.as_ref().map(|s| format!(": {s}")).unwrap_or_default())]
#[non_exhaustive]
pub struct EmbedError {
    /// The embedder's model.
    pub model: String,
    /// What went wrong.
    pub message: String,
    /// The stable code: the cause's, or `embed-answer`.
    pub code: &'static str,
    /// The class: the cause's, or CycleFail.
    pub kind: FailureKind,
    /// The cause, when there is one (a `ModelError` for a server); its text is in the message.
    #[source]
    pub source: Option<Box<dyn std::error::Error + Send + Sync>>,
}

impl EmbedError {
    /// An answer that cannot be used (`embed-answer`, CycleFail).
    pub fn new(model: impl Into<String>, message: impl Into<String>) -> EmbedError {
        let (model, message) = (model.into(), message.into());
        EmbedError { model, message, code: "embed-answer", kind: FailureKind::CycleFail, source: None }
    }

    /// A failure with a cause that has its own code and class (a server's).
    pub fn caused_by<E>(model: impl Into<String>, message: impl Into<String>, cause: E) -> EmbedError
    where
        E: Failure + std::error::Error + Send + Sync + 'static,
    {
        let (code, kind) = (cause.code(), cause.kind());
        EmbedError { model: model.into(), message: message.into(), code, kind, source: Some(Box::new(cause)) }
    }
}

impl Failure for EmbedError {
    fn code(&self) -> &'static str {
        self.code
    }
    fn kind(&self) -> FailureKind {
        self.kind
    }
}

/// Turns texts into vectors of one dimension, one per text, in order.
pub trait Embedder: Send + Sync + 'static {
    /// The model's id, as pinned.
    fn model(&self) -> &str;
    /// The vectors' dimension, as pinned.
    fn dimension(&self) -> usize;
    /// One vector per text, each of [`dimension`](Self::dimension) numbers; a request still
    /// running when `deadline` passes (the step's) is given up, so that no work outlives its step.
    fn embed<'a>(&'a self, texts: &'a [String], purpose: Purpose, deadline: Option<Instant>) -> EmbedFuture<'a>;
}

/// Checks that `vectors` are one per text, of `dimension` numbers each (at most
/// [`MAX_DIMENSION`]), none of them degenerate ([`degenerate`]): a server's answer is input like
/// any other (CONTRACT §11).
pub fn check_vectors(model: &str, dimension: usize, texts: usize, vectors: &[Vec<f32>]) -> Result<(), EmbedError> {
    let fail = |message: String| EmbedError::new(model, message);
    if dimension > MAX_DIMENSION {
        return Err(fail(format!("its vectors have {dimension} dimensions, more than the {MAX_DIMENSION} accepted")));
    }
    if vectors.len() != texts {
        return Err(fail(format!("{} vectors for {texts} texts", vectors.len())));
    }
    for (i, v) in vectors.iter().enumerate() {
        if v.len() != dimension {
            return Err(fail(format!("vector {i} has {} numbers, not the dimension {dimension}", v.len())));
        }
        if let Some(why) = degenerate(v) {
            return Err(fail(format!("vector {i} {why}")));
        }
    }
    Ok(())
}

/// Why `v` cannot be ranked by, if it cannot: a number that is not finite (NaN would rank first
/// for every query), or a length that is zero, below the smallest normal `f32` (denormal: its
/// direction is lost to rounding) or past the largest (its dot products overflow).
///
/// ```
/// use planlock::embed::degenerate;
/// assert_eq!(degenerate(&[0.6, 0.8]), None);
/// assert!(degenerate(&[f32::NAN, 1.0]).is_some() && degenerate(&[0.0, 0.0]).is_some());
/// assert!(degenerate(&[1e-40, 0.0]).is_some() && degenerate(&[3e38, 3e38]).is_some());
/// ```
pub fn degenerate(v: &[f32]) -> Option<&'static str> {
    if v.iter().any(|x| !x.is_finite()) {
        return Some("has a number that is not finite");
    }
    let norm = norm(v);
    if norm == 0.0 {
        Some("is all zeros")
    } else if norm < f64::from(f32::MIN_POSITIVE) {
        Some("is too short to have a direction (denormal)")
    } else if norm > f64::from(f32::MAX).sqrt() {
        Some("is too long: its products overflow")
    } else {
        None
    }
}

/// The length of `v`, summed in `f64` (no overflow, no loss).
fn norm(v: &[f32]) -> f64 {
    v.iter().map(|x| f64::from(*x) * f64::from(*x)).sum::<f64>().sqrt()
}

/// `v` scaled to length 1 (a zero vector stays zero), so a dot product is the cosine.
pub fn normalized(mut v: Vec<f32>) -> Vec<f32> {
    let norm = norm(&v);
    if norm > 0.0 {
        v.iter_mut().for_each(|x| *x = (f64::from(*x) / norm) as f32);
    }
    v
}

/// The dot product of two vectors of one length.
#[inline]
pub fn dot(a: &[f32], b: &[f32]) -> f32 {
    // Four lanes of partial sums: the compiler vectorizes this, and the order is fixed, so the
    // result is the same on every run.
    let mut lanes = [0.0f32; 4];
    let (ca, cb) = (a.chunks_exact(4), b.chunks_exact(4));
    let (ra, rb) = (ca.remainder(), cb.remainder());
    for (x, y) in ca.zip(cb) {
        for i in 0..4 {
            lanes[i] += x[i] * y[i];
        }
    }
    let tail: f32 = ra.iter().zip(rb).map(|(x, y)| x * y).sum();
    (lanes[0] + lanes[1]) + (lanes[2] + lanes[3]) + tail
}

/// The offline demo's embedder: no model, a deterministic hash of each word (and of its
/// three-letter pieces, so that `rotate` and `rotation` share some) into a normalized vector. It
/// finds texts that share words or their stems, not meaning; every output that names the
/// embedder says it is the demo's.
///
/// ```
/// use planlock::embed::{DemoEmbedder, Embedder, Purpose, dot};
/// let e = DemoEmbedder::new();
/// let texts = ["rotate the api key".to_owned(), "key rotation runbook".to_owned(), "lunch menu".to_owned()];
/// let v = planlock::block_on(e.embed(&texts, Purpose::Passage, None))?;
/// assert!(dot(&v[0], &v[1]) > dot(&v[0], &v[2]));
/// # Ok::<(), planlock::embed::EmbedError>(())
/// ```
#[derive(Debug, Clone, Copy, Default)]
pub struct DemoEmbedder;

impl DemoEmbedder {
    /// The model id it is pinned as.
    pub const MODEL: &'static str = "planlock-demo-embedder";
    /// Its dimension.
    pub const DIMENSION: usize = 384;

    /// The demo embedder.
    pub fn new() -> DemoEmbedder {
        DemoEmbedder
    }

    fn vector(text: &str) -> Vec<f32> {
        let mut v = vec![0.0f32; Self::DIMENSION];
        let mut add = |piece: &[u8], weight: f32| {
            // FNV-1a: fixed, fast, and good enough to spread pieces over the dimensions.
            let h =
                piece.iter().fold(0xcbf2_9ce4_8422_2325u64, |h, b| (h ^ u64::from(*b)).wrapping_mul(0x100_0000_01b3));
            let sign = if h >> 63 == 0 { 1.0 } else { -1.0 };
            v[(h % Self::DIMENSION as u64) as usize] += sign * weight;
        };
        for word in text.split(|c: char| !c.is_alphanumeric()).filter(|w| !w.is_empty()) {
            let word = word.to_lowercase();
            add(word.as_bytes(), 1.0);
            for piece in word.as_bytes().windows(3) {
                add(piece, 0.5);
            }
        }
        normalized(v)
    }
}

impl Embedder for DemoEmbedder {
    fn model(&self) -> &str {
        Self::MODEL
    }
    fn dimension(&self) -> usize {
        Self::DIMENSION
    }
    fn embed<'a>(&'a self, texts: &'a [String], _purpose: Purpose, _deadline: Option<Instant>) -> EmbedFuture<'a> {
        let vectors = texts.iter().map(|t| Self::vector(t)).collect();
        Box::pin(std::future::ready(Ok(vectors)))
    }
}

/// An embedder known only by its model and dimension, with no server to call: every
/// [`embed`](Embedder::embed) fails with `message` (`embed-answer`, CycleFail). For a read that
/// must name the session's pinned embedder (so the pin's check passes) where nothing has said how
/// to reach it: a read that needs no embedding goes on, one that does says what to give.
///
/// ```
/// use planlock::embed::{Embedder, Purpose, Unavailable};
/// let e = Unavailable::new("e5-small", 384, "give --embed-url to embed with it");
/// assert_eq!((e.model(), e.dimension()), ("e5-small", 384));
/// let err = planlock::block_on(e.embed(&["a query".to_owned()], Purpose::Query, None)).unwrap_err();
/// assert!(err.to_string().contains("--embed-url"));
/// ```
#[derive(Debug, Clone)]
pub struct Unavailable {
    model: String,
    dimension: usize,
    message: String,
}

impl Unavailable {
    /// An embedder of `model` and `dimension` whose every call fails with `message`.
    pub fn new(model: impl Into<String>, dimension: usize, message: impl Into<String>) -> Unavailable {
        Unavailable { model: model.into(), dimension, message: message.into() }
    }
}

impl Embedder for Unavailable {
    fn model(&self) -> &str {
        &self.model
    }
    fn dimension(&self) -> usize {
        self.dimension
    }
    fn embed<'a>(&'a self, _: &'a [String], _: Purpose, _: Option<Instant>) -> EmbedFuture<'a> {
        Box::pin(std::future::ready(Err(EmbedError::new(&self.model, &self.message))))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dot_is_the_plain_sum_for_every_length() {
        for n in [0, 1, 3, 4, 5, 384, 385] {
            let a: Vec<f32> = (0..n).map(|i| i as f32 * 0.5).collect();
            let b: Vec<f32> = (0..n).map(|i| 1.0 - i as f32 * 0.25).collect();
            let plain: f32 = a.iter().zip(&b).map(|(x, y)| x * y).sum();
            assert!((dot(&a, &b) - plain).abs() <= 1e-3 * plain.abs().max(1.0), "{n}");
        }
    }

    #[test]
    fn vectors_from_a_server_are_checked() {
        assert!(check_vectors("m", 2, 1, &[vec![1.0, 0.0]]).is_ok());
        assert!(check_vectors("m", 2, 2, &[vec![1.0, 0.0]]).unwrap_err().message.contains("1 vectors for 2"));
        assert!(check_vectors("m", 2, 1, &[vec![1.0]]).unwrap_err().message.contains("dimension 2"));
        assert!(check_vectors("m", 1, 1, &[vec![f32::NAN]]).unwrap_err().message.contains("not finite"));
        assert!(check_vectors("m", 2, 1, &[vec![0.0, 0.0]]).unwrap_err().message.contains("all zeros"));
        assert!(check_vectors("m", 2, 1, &[vec![1e-39, 1e-39]]).unwrap_err().message.contains("denormal"));
        assert!(check_vectors("m", 2, 1, &[vec![3e38, -3e38]]).unwrap_err().message.contains("overflow"));
        let wide = vec![vec![1.0; MAX_DIMENSION + 1]];
        assert!(check_vectors("m", MAX_DIMENSION + 1, 1, &wide).unwrap_err().message.contains("8192"));
    }
}
