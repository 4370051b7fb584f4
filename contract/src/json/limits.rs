//! The limits of a plan document: its size, its depth, its numbers.

/// The largest plan document accepted, in bytes (1 MiB). Larger input is `too-large`.
pub const MAX_PLAN_BYTES: usize = 1 << 20;

/// The deepest nesting accepted: the plan's root object is depth 1, `steps` depth 2, a step
/// depth 3, its payload depth 4. Deeper input is `too-deep`.
pub const MAX_DEPTH: usize = 64;

/// The largest integer magnitude accepted anywhere (2^53 − 1): every number must survive a
/// round trip through an IEEE-754 double, as in every other plan producer.
pub const MAX_SAFE_INTEGER: u64 = (1 << 53) - 1;

/// Free-form values appear only as payload fields, at `/steps/N/payload/FIELD`: depth 5.
pub const FREE_FORM_DEPTH: usize = 5;
