//! The idempotency key a step's handler is handed: one per step, cycle, plan and session.

use std::fmt;

use uuid::Uuid;

use super::Digest;
use super::digest::digest_written;
use crate::json::canonical::Canonical;

/// A key that is stable for one step of one cycle of one plan in one session, so a write
/// handler can make a re-run of that cycle (after an intervention, a failure or a crash)
/// harmless, while the next cycle writes anew (docs/CONTRACT.md, "Sessions and the runtime"):
/// lowercase hex SHA-256 of the canonical JSON of `{ "cycle", "planHash", "sessionId", "stepId" }`.
///
/// ```
/// use planlock_contract::{Digest, IdempotencyKey};
/// let (session, hash) = (uuid::Uuid::nil(), Digest::of(b"plan"));
/// let key = IdempotencyKey::derive(session, &hash, 3, "remember");
/// assert_eq!(key, IdempotencyKey::derive(session, &hash, 3, "remember"));
/// assert_ne!(key, IdempotencyKey::derive(session, &hash, 4, "remember"));
/// let doc = format!(r#"{{"cycle":3,"planHash":"{hash}","sessionId":"{session}","stepId":"remember"}}"#);
/// assert_eq!(*key.digest(), Digest::of(doc.as_bytes()));
/// ```
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct IdempotencyKey(Digest);

impl IdempotencyKey {
    /// Derives the key of step `step_id` in cycle `cycle`.
    pub fn derive(session_id: Uuid, plan_hash: &Digest, cycle: u64, step_id: &str) -> IdempotencyKey {
        IdempotencyKey(digest_written(|out| {
            // Members in canonical order; the hex digest and the UUID need no escape.
            out.extend_from_slice(b"{\"cycle\":");
            cycle.write_canonical(out);
            out.extend_from_slice(b",\"planHash\":\"");
            out.extend_from_slice(plan_hash.to_string().as_bytes());
            out.extend_from_slice(b"\",\"sessionId\":\"");
            out.extend_from_slice(session_id.hyphenated().to_string().as_bytes());
            out.extend_from_slice(b"\",\"stepId\":");
            step_id.write_canonical(out);
            out.push(b'}');
        }))
    }

    /// The digest.
    pub fn digest(&self) -> &Digest {
        &self.0
    }
}

impl fmt::Display for IdempotencyKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.fmt(f)
    }
}

impl fmt::Debug for IdempotencyKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "IdempotencyKey({})", self.0)
    }
}
