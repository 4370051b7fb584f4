//! The native half of `require("@planlock/planlock")`: planlock's validator and plan hash for
//! producers of plans in Node.js (CONTRACT §17), as a napi-rs addon. Every function wraps one of
//! `planlock::producer`'s, so the answers are the Rust library's own.
//!
//! What a caller imports is `planlock.js` (typed by `planlock.d.ts`): it checks the arguments
//! (a `TypeError` naming the one that is wrong), writes a value as JSON once (refusing what has no
//! JSON form: a lone surrogate, NaN, a `Date`), and turns a failure here into a `PlanlockError`.
//! So nothing here throws: a call answers a [`Report`] or an [`Answer`]. A text comes in as a
//! string (checked in `planlock.js` to hold no lone surrogate, so its UTF-8 is exact) or a
//! `Buffer` of UTF-8.

use napi::bindgen_prelude::{Buffer, Either};
use napi_derive::napi;
use planlock::Failure as _;
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
    /// `FailFast` if any problem is, else `CycleFail`; absent for a valid plan.
    pub class: Option<String>,
    /// Every problem, in the validator's order.
    pub problems: Vec<Problem>,
}

/// Why a call gave no value: planlock's error, which `planlock.js` throws as a `PlanlockError`.
#[napi(object)]
pub struct Failure {
    /// The stable code (`plan-rejected`, `yaml`, `invalid-json`, …).
    pub code: String,
    /// `CycleFail` or `FailFast`.
    pub class: String,
    /// What was wrong, and what to do.
    pub message: String,
    /// A rejected plan's problems (empty otherwise).
    pub problems: Vec<Problem>,
}

/// A call's value, or why there is none.
#[napi(object)]
pub struct Answer {
    /// The value (a hash, canonical JSON).
    pub value: Option<String>,
    /// Why there is no value.
    pub failure: Option<Failure>,
}

/// A text's UTF-8 bytes.
type Text = Either<String, Buffer>;

fn bytes(text: &Text) -> &[u8] {
    match text {
        Either::A(s) => s.as_bytes(),
        Either::B(b) => b.as_ref(),
    }
}

fn problems(list: &[planlock::Problem]) -> Vec<Problem> {
    list.iter()
        .map(|p| Problem {
            code: p.code().as_str().to_owned(),
            class: p.class().as_str().to_owned(),
            pointer: p.pointer().to_owned(),
            message: p.message().to_owned(),
        })
        .collect()
}

fn answer(result: Result<String, ProducerError>) -> Answer {
    match result {
        Ok(value) => Answer { value: Some(value), failure: None },
        Err(e) => {
            let problems = match &e {
                ProducerError::Rejected(r) => problems(r.problems()),
                _ => Vec::new(),
            };
            let failure = Failure {
                code: e.code().to_owned(),
                class: e.kind().as_str().to_owned(),
                message: e.to_string(),
                problems,
            };
            Answer { value: None, failure: Some(failure) }
        }
    }
}

/// Validates a plan's JSON text.
#[napi]
pub fn validate(plan: Text) -> Report {
    let report = producer::validate(bytes(&plan));
    Report { ok: report.ok, class: report.class.map(|c| c.as_str().to_owned()), problems: problems(&report.problems) }
}

/// The plan hash as `planlock hash --policy-root` computes it (the plan's `policyProfile` under
/// `policyRoot`).
#[napi]
pub fn plan_hash(policy_root: String, plan: Text) -> Answer {
    answer(producer::plan_hash_at(std::path::Path::new(&policy_root), bytes(&plan)).map(|d| d.to_string()))
}

/// The plan hash with the profile in `profileDir`.
#[napi]
pub fn plan_hash_in(profile_dir: String, plan: Text) -> Answer {
    answer(producer::plan_hash_in(std::path::Path::new(&profile_dir), bytes(&plan)).map(|d| d.to_string()))
}

/// The plan hash with the profile's three documents given as text.
#[napi]
pub fn plan_hash_of(modes: String, triggers: String, bundles: String, plan: Text) -> Answer {
    answer(producer::plan_hash_of([&modes, &triggers, &bundles], bytes(&plan)).map(|d| d.to_string()))
}

/// JSON text written canonically.
#[napi]
pub fn canonical_json(text: Text) -> Answer {
    answer(producer::canonical_json(bytes(&text)))
}

/// The plan's JSON Schema (draft 2020-12), as text.
#[napi]
pub fn schema() -> String {
    producer::schema()
}

/// The step registry, in canonical order.
#[napi]
pub fn registry() -> serde_json::Value {
    producer::registry()
}

/// Every code a call can fail with.
#[napi]
pub fn error_codes() -> Vec<String> {
    ProducerError::CODES.iter().map(|c| (*c).to_owned()).collect()
}

/// Nanoseconds per validation of `plan`, over `iterations` calls made inside the addon: the Rust
/// validator alone, for measuring what a call from JavaScript adds (`bench.mjs`; not part of the
/// package's interface).
#[napi]
pub fn validate_in_rust_ns(plan: Buffer, iterations: u32) -> f64 {
    let started = std::time::Instant::now();
    for _ in 0..iterations.max(1) {
        std::hint::black_box(producer::validate(std::hint::black_box(plan.as_ref())));
    }
    started.elapsed().as_nanos() as f64 / iterations.max(1) as f64
}
