//! Edit and approve (CONTRACT §22): a reviewer's replacement for a paused step's payload, checked
//! by the same validator as a plan's step. The edit is put in place of the step's payload in the
//! plan the session keeps and the whole plan is validated ([`ValidPlan::from_value`]): its
//! problems are the validator's, with their codes and JSON Pointers; the payload kept is the one
//! the step's type reads back, so the re-run meets exactly the bytes approved.

use serde_json::Value;

use super::decide::DecideError;
use crate::session::{Edit, InterventionRecord, SessionRecords};
use crate::validate::ValidPlan;

/// The edit of `record`'s paused step to `payload`, checked against the plan `records`' session
/// keeps: refused for a pause after its step or one that does not show its whole input
/// ([`DecideError::NotEditable`]), for a session that keeps no plan, and for a payload the
/// validator refuses ([`DecideError::EditInvalid`], with its problems).
///
/// ```no_run
/// # async fn f(records: &dyn planlock::session::SessionRecords, record: &planlock::session::InterventionRecord) -> Result<(), Box<dyn std::error::Error>> {
/// use planlock::review::{decide, edit_of};
/// use planlock::session::{ReviewDecision, ReviewVerdict};
/// let edit = edit_of(records, record, serde_json::json!({"summary": "key rotation, redacted"})).await?;
/// let decision = ReviewDecision::new(record, ReviewVerdict::Approve, "ada", "redacted the name").editing(edit);
/// decide(records, &decision).await?;
/// # Ok(()) }
/// ```
pub async fn edit_of(
    records: &dyn SessionRecords,
    record: &InterventionRecord,
    payload: Value,
) -> Result<Edit, DecideError> {
    // Refused before anything is read: a pause after its step, or one not shown whole.
    Edit::of(record, payload.clone())?;
    let kept = records.load_plan().await?.ok_or(DecideError::NoPlanKept)?;
    let mut plan = kept.plan;
    let Some(at) = plan["steps"]
        .as_array()
        .and_then(|steps| steps.iter().position(|s| s["id"].as_str() == Some(record.step_id.as_str())))
    else {
        return Err(DecideError::NoPlanKept);
    };
    plan["steps"][at]["payload"] = payload;
    let edited = ValidPlan::from_value(&plan).map_err(DecideError::EditInvalid)?;
    let normalised = serde_json::to_value(&edited.steps()[at].payload)
        .map_err(|e| DecideError::Invalid(format!("the edited payload cannot be written: {e}")))?;
    Ok(Edit::of(record, normalised)?)
}

/// One line of an edit's diff against the payload the pause showed, as pretty JSON: `tag` is
/// `' '` (kept), `'-'` (what the edit removed) or `'+'` (what it added).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct DiffLine {
    /// `' '`, `'-'` or `'+'`.
    pub tag: char,
    /// The line, without its end.
    pub text: String,
}

/// The lines of `edit`'s payload against the payload `record` showed (pretty JSON, keys in
/// order): what the other approvers look at before they approve the edit. Bounded: both sides
/// are at most 64 KiB, and the diff gives up its search after a second (a coarser diff).
///
/// ```
/// use planlock::review::edit_diff;
/// use planlock::session::{Edit, InterventionRecord};
/// # let json = r#"{"sessionId":"6f1c1b8e-4a55-4d1f-9a57-8a4f0f7c2a11","planHash":"0000000000000000000000000000000000000000000000000000000000000000","cycle":1,"stepId":"s","stepType":"PersistMemory","phase":"pre","validator":{"id":"v","version":"1","config_hash":"0000000000000000000000000000000000000000000000000000000000000000"},"reason":"r","completed":[],"createdAt":"2026-01-01T00:00:00Z","shown":{"payload":{"summary":"a","sessionRef":"s"},"results":{}},"shownDigest":"0000000000000000000000000000000000000000000000000000000000000000"}"#;
/// # let record: InterventionRecord = serde_json::from_str(json)?;
/// let edit = Edit::of(&record, serde_json::json!({"summary": "b", "sessionRef": "s"})).unwrap();
/// let changed: Vec<String> = edit_diff(&record, &edit).iter().filter(|l| l.tag != ' ').map(|l| format!("{}{}", l.tag, l.text)).collect();
/// assert_eq!(changed, ["-  \"summary\": \"a\"", "+  \"summary\": \"b\""]);
/// # Ok::<(), serde_json::Error>(())
/// ```
pub fn edit_diff(record: &InterventionRecord, edit: &Edit) -> Vec<DiffLine> {
    let pretty = |value: Option<&Value>| {
        value.map(|v| serde_json::to_string_pretty(v).unwrap_or_default()).unwrap_or_default() + "\n"
    };
    let before = pretty(record.shown.as_ref().and_then(|s| s.get("payload")));
    let after = pretty(Some(&edit.payload));
    let diff = similar::TextDiff::configure()
        .timeout(std::time::Duration::from_secs(1))
        .diff_lines(before.as_str(), after.as_str());
    diff.iter_all_changes()
        .map(|change| DiffLine {
            tag: match change.tag() {
                similar::ChangeTag::Equal => ' ',
                similar::ChangeTag::Delete => '-',
                similar::ChangeTag::Insert => '+',
            },
            text: change.value().trim_end_matches('\n').to_owned(),
        })
        .collect()
}
