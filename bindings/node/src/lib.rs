//! `require("@planlock/planlock")`: the validator and the plan hash of planlock's library for
//! producers of plans in Node.js (CONTRACT §17), as a napi-rs addon; `@napi-rs/cli` generates
//! its `index.d.ts` from these signatures. Every function wraps one of `planlock::producer`'s,
//! so the answers are the Rust library's own. Errors are JavaScript `Error`s whose `code` is
//! planlock's stable code (`plan-rejected`, `yaml`, `profile-outside-root`, `invalid-json`, …),
//! their message starting with it.

use napi::bindgen_prelude::{Buffer, Either};
use napi_derive::napi;
use planlock::Failure;
use planlock::producer::{self, ProducerError};

/// One problem the validator found.
#[napi(object)]
pub struct Problem {
    /// The stable code, such as `order-violation`.
    pub code: String,
    /// `CycleFail` or `FailFast`.
    pub class: String,
    /// Where, as a JSON Pointer (`""` for the whole document).
    pub pointer: String,
    /// What was wrong and what is allowed.
    pub message: String,
}

/// The validator's verdict on one plan.
#[napi(object)]
pub struct Report {
    /// Whether the plan is valid.
    pub ok: bool,
    /// `FailFast` if any problem is, else `CycleFail`; `null` for a valid plan.
    pub class: Option<String>,
    /// Every problem, in the validator's order.
    pub problems: Vec<Problem>,
}

/// A plan's JSON text: a string (UTF-8) or a Buffer (`string | Buffer` in `index.d.ts`).
fn bytes(plan: &Either<String, Buffer>) -> &[u8] {
    match plan {
        Either::A(s) => s.as_bytes(),
        Either::B(b) => b.as_ref(),
    }
}

/// A JavaScript `Error` whose `code` is planlock's stable code, its message starting with it.
fn error(e: ProducerError) -> napi::Error<String> {
    napi::Error::new(e.code().to_owned(), format!("{}: {e}", e.code()))
}

/// Validates a plan's JSON text: every problem, with its code, class, JSON Pointer and message.
#[napi]
pub fn validate(plan: Either<String, Buffer>) -> Report {
    let report = producer::validate(bytes(&plan));
    Report {
        ok: report.ok,
        class: report.class.map(|c| c.as_str().to_owned()),
        problems: report
            .problems
            .iter()
            .map(|p| Problem {
                code: p.code().as_str().to_owned(),
                class: p.class().as_str().to_owned(),
                pointer: p.pointer().to_owned(),
                message: p.message().to_owned(),
            })
            .collect(),
    }
}

/// The plan hash (64 hex digits) of a valid plan with the profile in `profileDir` (its
/// `modes.yaml`, `triggers.yaml` and `bundles.yaml`).
#[napi]
pub fn plan_hash(profile_dir: String, plan: Either<String, Buffer>) -> napi::Result<String, String> {
    producer::plan_hash_in(std::path::Path::new(&profile_dir), bytes(&plan)).map(|d| d.to_string()).map_err(error)
}

/// The plan hash of a valid plan with the profile's three documents given as text, in the order
/// `modes.yaml`, `triggers.yaml`, `bundles.yaml`.
#[napi]
pub fn plan_hash_of(documents: Vec<String>, plan: Either<String, Buffer>) -> napi::Result<String, String> {
    let [m, t, b] = documents.as_slice() else {
        return Err(napi::Error::new("invalid-arg".to_owned(), "documents: [modes, triggers, bundles]".to_owned()));
    };
    producer::plan_hash_of([m, t, b], bytes(&plan)).map(|d| d.to_string()).map_err(error)
}

/// A value's canonical JSON (RFC 8785), as the plan hash writes it.
#[napi]
pub fn canonical_json(value: serde_json::Value) -> napi::Result<String, String> {
    let text = serde_json::to_vec(&value).map_err(|e| napi::Error::new("invalid-json".to_owned(), e.to_string()))?;
    producer::canonical_json(&text).map_err(error)
}

/// JSON text (a string or a Buffer) written canonically, read by the Rust library rather than
/// `JSON.parse` (a number past the double range is refused, not made `Infinity`).
#[napi]
pub fn canonical_json_text(text: Either<String, Buffer>) -> napi::Result<String, String> {
    producer::canonical_json(bytes(&text)).map_err(error)
}

/// The plan's JSON Schema (draft 2020-12), as text.
#[napi]
pub fn schema() -> String {
    producer::schema()
}

/// The step registry, in canonical order: each step's `type`, `mandatory`, `failureClass` and
/// `timeout`.
#[napi]
pub fn registry() -> serde_json::Value {
    producer::registry()
}

/// Nanoseconds per validation of `plan`, over `iterations` calls made inside the addon: the Rust
/// validator alone, for measuring what a call from JavaScript adds (`bench.mjs`).
#[napi]
pub fn validate_in_rust_ns(plan: Buffer, iterations: u32) -> f64 {
    let started = std::time::Instant::now();
    for _ in 0..iterations.max(1) {
        std::hint::black_box(producer::validate(std::hint::black_box(plan.as_ref())));
    }
    started.elapsed().as_nanos() as f64 / iterations.max(1) as f64
}
