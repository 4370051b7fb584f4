//! Value rules that types cannot express, each defined once and used by every path that
//! checks a plan (the JSON walker, the typed check, the builder).

/// The longest step id accepted, in characters.
pub const MAX_STEP_ID_CHARS: usize = 128;

/// A required string must not be empty.
pub(crate) fn non_empty(s: &str) -> Result<(), String> {
    if s.is_empty() { Err("must not be empty".to_owned()) } else { Ok(()) }
}

/// `StepDefinition.id`: non-empty, at most 128 characters, no control characters.
#[inline]
pub(crate) fn step_id(s: &str) -> Result<(), String> {
    // The usual id, short printable ASCII, passes here without a call.
    if !s.is_empty() && s.len() <= MAX_STEP_ID_CHARS && s.bytes().all(|b| (0x20..0x7f).contains(&b)) {
        return Ok(());
    }
    step_id_in_full(s)
}

#[inline(never)]
fn step_id_in_full(s: &str) -> Result<(), String> {
    if s.is_empty() {
        return Err("a step id must not be empty".to_owned());
    }
    // Fewer bytes than the limit means fewer characters too; count only when it matters.
    if s.len() > MAX_STEP_ID_CHARS {
        let chars = s.chars().count();
        if chars > MAX_STEP_ID_CHARS {
            return Err(format!("a step id has at most {MAX_STEP_ID_CHARS} characters; this one has {chars}"));
        }
    }
    // Control characters in ASCII are bytes below 0x20 and 0x7F; beyond ASCII, ask `char`.
    let control = match s.bytes().position(|b| !(0x20..0x7f).contains(&b)) {
        None => None,
        Some(i) => s[i..].chars().find(|c| c.is_control()),
    };
    match control {
        Some(c) => Err(format!("a step id must not contain control characters (found U+{:04X})", u32::from(c))),
        None => Ok(()),
    }
}

/// `ValidatorSignature.config_hash`: 64 lowercase hex digits (a SHA-256 digest).
pub(crate) fn sha256_hex(s: &str) -> Result<(), String> {
    if s.len() == 64 && s.bytes().all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b)) {
        Ok(())
    } else {
        Err("expected 64 lowercase hex digits (a SHA-256 digest)".to_owned())
    }
}

/// `Decision.scope`: `global`, `axis` or `domain:<name>` with a non-empty name.
pub(crate) fn decision_scope(s: &str) -> Result<(), String> {
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
