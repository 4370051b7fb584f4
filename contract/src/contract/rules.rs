//! Value rules that types cannot express, each defined once and used by every path that
//! checks a plan (the JSON walker, the typed check, the builder) and by the JSON Schema, which
//! states each rule as the [`StringRule`] beside its check says.

use serde_json::{Value, json};

/// The longest step id accepted, in characters.
pub const MAX_STEP_ID_CHARS: usize = 128;

/// A rule on a string field: its check, and the same rule as JSON Schema keywords.
///
/// The schema states exactly what the check accepts, or more (never less): a plan planlock
/// accepts must pass the schema.
pub struct StringRule {
    /// The check; `Err` says what is wrong.
    pub check: fn(&str) -> Result<(), String>,
    /// The JSON Schema keywords (`minLength`, `pattern`, …) that state it.
    pub schema: fn() -> Value,
}

/// Control characters are Unicode's `Cc`: U+0000–U+001F and U+007F–U+009F, exactly what
/// `char::is_control` reports. Written as an ECMA-262 class every JSON Schema tool reads.
const NO_CONTROL_CHARACTERS: &str = "^[^\\u0000-\\u001F\\u007F-\\u009F]*$";

/// `non_empty` as a rule.
pub const NON_EMPTY: StringRule = StringRule { check: non_empty, schema: || json!({ "minLength": 1 }) };

/// `step_id` as a rule.
pub const STEP_ID: StringRule = StringRule {
    check: step_id,
    schema: || json!({ "minLength": 1, "maxLength": MAX_STEP_ID_CHARS, "pattern": NO_CONTROL_CHARACTERS }),
};

/// The longest record id accepted (a memory's, decision's or evidence's, in a payload or in the
/// result that echoes it), in characters.
pub const MAX_RECORD_ID_CHARS: usize = 256;

/// `record_id` as a rule: what a payload's id may be is what its result's may be (CONTRACT §19,
/// amended), so a plan the validator accepts never fails its own result check on an id.
pub const RECORD_ID: StringRule = StringRule {
    check: record_id,
    schema: || json!({ "minLength": 1, "maxLength": MAX_RECORD_ID_CHARS, "pattern": NO_CONTROL_CHARACTERS }),
};

/// `sha256_hex` as a rule.
pub const SHA256_HEX: StringRule = StringRule { check: sha256_hex, schema: || json!({ "pattern": "^[0-9a-f]{64}$" }) };

/// `decision_scope` as a rule. `[\s\S]` is "any character", newlines included, in every
/// regex dialect JSON Schema tools use.
pub const DECISION_SCOPE: StringRule =
    StringRule { check: decision_scope, schema: || json!({ "pattern": "^(?:global|axis|domain:[\\s\\S]+)$" }) };

/// A required string must not be empty.
pub fn non_empty(s: &str) -> Result<(), String> {
    if s.is_empty() { Err("must not be empty".to_owned()) } else { Ok(()) }
}

/// `StepDefinition.id`: non-empty, at most 128 characters, no control characters.
#[inline]
pub fn step_id(s: &str) -> Result<(), String> {
    id(s, "a step id", MAX_STEP_ID_CHARS)
}

/// A record's id (a memory's, a decision's, an evidence's, and the ids a link names): non-empty,
/// at most 256 characters, no control characters.
///
/// ```
/// use planlock_contract::contract::rules::record_id;
/// assert!(record_id("d-1").is_ok());
/// assert_eq!(record_id("").unwrap_err(), "an id must not be empty");
/// ```
#[inline]
pub fn record_id(s: &str) -> Result<(), String> {
    id(s, "an id", MAX_RECORD_ID_CHARS)
}

/// An id called `what`: non-empty, at most `max` characters, no control characters.
#[inline]
fn id(s: &str, what: &str, max: usize) -> Result<(), String> {
    // The usual id, short printable ASCII, passes here without a call.
    if !s.is_empty() && s.len() <= max && s.bytes().all(|b| (0x20..0x7f).contains(&b)) {
        return Ok(());
    }
    id_in_full(s, what, max)
}

#[inline(never)]
fn id_in_full(s: &str, what: &str, max: usize) -> Result<(), String> {
    if s.is_empty() {
        return Err(format!("{what} must not be empty"));
    }
    // Fewer bytes than the limit means fewer characters too; count only when it matters.
    if s.len() > max {
        let chars = s.chars().count();
        if chars > max {
            return Err(format!("{what} has at most {max} characters; this one has {chars}"));
        }
    }
    // Control characters in ASCII are bytes below 0x20 and 0x7F; beyond ASCII, ask `char`.
    let control = match s.bytes().position(|b| !(0x20..0x7f).contains(&b)) {
        None => None,
        Some(i) => s[i..].chars().find(|c| c.is_control()),
    };
    match control {
        Some(c) => Err(format!("{what} must not contain control characters (found U+{:04X})", u32::from(c))),
        None => Ok(()),
    }
}

/// `ValidatorSignature.config_hash`: 64 lowercase hex digits (a SHA-256 digest).
pub fn sha256_hex(s: &str) -> Result<(), String> {
    if s.len() == 64 && s.bytes().all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b)) {
        Ok(())
    } else {
        Err("expected 64 lowercase hex digits (a SHA-256 digest)".to_owned())
    }
}

/// `Decision.scope`: `global`, `axis` or `domain:<name>` with a non-empty name.
pub fn decision_scope(s: &str) -> Result<(), String> {
    match s.strip_prefix("domain:") {
        Some(name) if !name.is_empty() => Ok(()),
        None if s == "global" || s == "axis" => Ok(()),
        _ => Err(format!("scope `{s}` is not `global`, `axis` or `domain:<name>`")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn step_ids() {
        assert!(step_id("ctx").is_ok());
        assert!(step_id("").is_err());
        assert!(step_id(&"x".repeat(128)).is_ok());
        assert!(step_id(&"é".repeat(129)).is_err());
        assert!(step_id("a\u{7}b").is_err());
    }

    #[test]
    fn hashes_and_scopes() {
        assert!(sha256_hex(&"a".repeat(64)).is_ok());
        assert!(sha256_hex(&"A".repeat(64)).is_err());
        assert!(sha256_hex(&"a".repeat(63)).is_err());
        assert!(decision_scope("global").is_ok());
        assert!(decision_scope("domain:billing").is_ok());
        assert!(decision_scope("domain:").is_err());
        assert!(decision_scope("local").is_err());
    }
}
