//! The notifications a session's records make (CONTRACT §18): `pause.created`, `pause.decided`,
//! `pause.expired` and `pause.resolved`, each with an id derived from the record it comes from
//! (the same on every retry, by every sender), and a body that carries no `shown` content, no
//! prompt and no memory text: where, which step and validator, the reason, the digest, who
//! decided and why, how it ended.

use serde_json::{Value, json};
use sha2::{Digest as _, Sha256};

use crate::backend::Logged;
use crate::session::{ApprovalEvent, ReviewDecision};

/// One notification, ready to sign and send.
#[derive(Debug, Clone, PartialEq)]
pub struct Notification {
    /// `msg_` and 32 hex digits of the SHA-256 of its session and record: the `webhook-id`.
    pub id: String,
    /// `pause.created`, `pause.decided`, `pause.expired` or `pause.resolved`.
    pub kind: &'static str,
    /// The JSON body: `{"type", "timestamp", "data"}`.
    pub body: Vec<u8>,
    /// When what it says happened.
    pub at: crate::session::Timestamp,
}

impl Notification {
    /// The notification of `logged`, with links to the console at `console` (if given).
    ///
    /// ```
    /// use planlock::backend::Logged;
    /// use planlock::review::notify::Notification;
    /// # let json = r#"{"event":"abandoned","pause":{"sessionId":"6f1c1b8e-4a55-4d1f-9a57-8a4f0f7c2a11","cycle":1,"stepId":"s","validatorId":"v","createdAt":"2026-01-01T00:00:00Z"},"at":"2026-01-01T00:01:00Z"}"#;
    /// let event = serde_json::from_str(json)?;
    /// let n = Notification::of(&Logged { session: "s1".into(), event }, None);
    /// assert_eq!(n.kind, "pause.resolved");
    /// assert!(n.id.starts_with("msg_") && n.id.len() == 36);
    /// # Ok::<(), serde_json::Error>(())
    /// ```
    pub fn of(logged: &Logged, console: Option<&str>) -> Notification {
        Notification::with_turn(logged, console, None)
    }

    /// [`of`](Self::of), and for an approval of a pause that needs several, where it stands:
    /// who approved so far and who may still (CONTRACT §18).
    pub fn with_turn(logged: &Logged, console: Option<&str>, turn: Option<&crate::review::Turn>) -> Notification {
        let event = &logged.event;
        let record = serde_json::to_string(event).unwrap_or_default();
        let digest = Sha256::digest(format!("{}\n{record}", logged.session).as_bytes());
        let id = format!("msg_{}", digest.iter().take(16).map(|b| format!("{b:02x}")).collect::<String>());
        let pause = event.pause();
        let mut data = json!({
            "session": logged.session,
            "sessionId": pause.session_id,
            "cycle": pause.cycle,
            "stepId": pause.step_id,
            "validator": pause.validator_id,
            "pause": pause.id(),
        });
        // The pause's own page in the console (issue 58), where it is decided.
        if let Some(console) = console {
            let (session, step) = (segment(&logged.session), segment(&pause.step_id));
            data["url"] = json!(format!("{console}/inbox/{session}/{}/{step}", pause.cycle));
        }
        let kind = match event {
            ApprovalEvent::Paused { step_type, reason, shown_digest, expires_at, .. } => {
                data["stepType"] = json!(step_type);
                data["reason"] = json!(reason);
                data["shownDigest"] = json!(shown_digest);
                data["expiresAt"] = json!(expires_at);
                "pause.created"
            }
            ApprovalEvent::Voted { decision, count, required } => {
                decided(&mut data, decision, false);
                data["approvals"] = json!(count);
                data["required"] = json!(required);
                "pause.decided"
            }
            ApprovalEvent::Decided { decision } => {
                decided(&mut data, decision, true);
                "pause.decided"
            }
            ApprovalEvent::ExpiryNoticed { .. } => "pause.expired",
            outcome => {
                data["resolution"] = json!(outcome.name());
                if let ApprovalEvent::Consumed { cycle, completed, .. } = outcome {
                    data["resumedBy"] = json!(cycle);
                    data["completed"] = json!(completed);
                }
                "pause.resolved"
            }
        };
        if let Some(turn) = turn {
            data["approvals"] = json!(turn.approved.len());
            data["required"] = json!(turn.required);
            data["approvedBy"] = json!(turn.approved);
            data["mayStillApprove"] = json!(turn.may_still_approve);
        }
        let at = event.at();
        let body = serde_json::to_vec(&json!({ "type": kind, "timestamp": at, "data": data })).unwrap_or_default();
        Notification { id, kind, body, at }
    }
}

/// What a decision says: the verdict, who (all of them, for an approval by several), whether
/// an access file vouched for them, where, why, on what digest, and whether it edits the step's
/// payload (with the edit's digest, never the payload).
fn decided(data: &mut Value, decision: &ReviewDecision, complete: bool) {
    data["verdict"] = json!(decision.verdict);
    data["by"] = json!(decision.approved_by());
    data["verified"] = json!(decision.verified);
    data["via"] = json!(decision.via);
    data["justification"] = json!(decision.justification);
    data["shownDigest"] = json!(decision.shown_digest);
    // An edit is said, with its digest: never its payload (CONTRACT §22).
    data["edited"] = json!(decision.edit.is_some());
    if let Some(edit) = &decision.edit {
        data["editDigest"] = json!(edit.digest);
    }
    data["complete"] = json!(complete);
}

/// `text` as one URL path segment.
fn segment(text: &str) -> String {
    text.bytes()
        .map(|b| match b.is_ascii_alphanumeric() || b"-._~".contains(&b) {
            true => (b as char).to_string(),
            false => format!("%{b:02X}"),
        })
        .collect()
}
