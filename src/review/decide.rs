//! Deciding on a paused cycle from any process (CONTRACT §14): [`decide`] checks the decision
//! against the pause it names and records it, without the session's lock or lease (a worker may
//! be holding it while it waits).

use tracing::Instrument;

use super::access::Access;
use crate::contract::registry::{Failure, FailureKind};
use crate::session::{InterventionRecord, SessionRecords};
use crate::session::{Recorded, ReviewDecision, ReviewVerdict};
use crate::session::{SessionError, Timestamp};
use crate::text::printable;

/// The longest name of who decided, in characters.
pub const MAX_DECIDER_CHARS: usize = 256;

/// Why a decision was not recorded; nothing was written.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum DecideError {
    /// No cycle of the session is paused.
    #[error("no cycle is paused in this session; there is nothing to decide")]
    NotPaused,
    /// The pause the decision names is not the one waiting (it ended, or another took its place).
    #[error(
        "the decision names the pause of cycle {cycle} at step `{step_id}`, which is no longer the one waiting; look again and decide on the one there now"
    )]
    PauseEnded {
        /// The cycle the decision names.
        cycle: u64,
        /// The step it names.
        step_id: String,
    },
    /// The decision was made on another pause than the one waiting now (a page or a command
    /// line named it by [`PauseRef::id`](crate::session::PauseRef::id)).
    #[error(
        "the decision was made on pause {named}, which is no longer the one waiting (pause {waiting} is); look again and decide on the one there now"
    )]
    OtherPause {
        /// The pause the decider was shown.
        named: String,
        /// The pause waiting now.
        waiting: String,
    },
    /// The pause expired: only an abandon may follow.
    #[error("the pause expired at {expired_at}; a decision after it is refused: abandon the cycle")]
    Expired {
        /// When it expired.
        expired_at: Timestamp,
    },
    /// What the decider saw is not what the record shows now.
    #[error(
        "the decision is on what has digest {decided}, but the pause shows what has digest {shown}; look again and decide on what it shows"
    )]
    DigestMismatch {
        /// The digest the decision names.
        decided: String,
        /// The record's.
        shown: String,
    },
    /// The justification or the decider's name cannot be used.
    #[error("the decision cannot be used: {0}")]
    Invalid(String),
    /// The decider may not decide on this validator's pauses (CONTRACT §18).
    #[error(
        "`{by}` may not decide on pauses of validator `{validator}`: the access file does not list them among its approvers; ask one of them"
    )]
    NotAnApprover {
        /// Who tried.
        by: String,
        /// The validator of the pause.
        validator: String,
    },
    /// The approval is recorded, but the pause needs more (CONTRACT §18): nothing runs until
    /// enough distinct allowed people approved the same digest.
    #[error("the approval is recorded, and the pause waits for more: {turn}")]
    Incomplete {
        /// Who approved, and who may still.
        turn: super::Turn,
    },
    /// The decider approved this pause already, and it waits for the others (CONTRACT §18, issue
    /// 58): refused, nothing recorded.
    #[error("you ({by}) approved this pause already; it waits for {waiting}: {turn}")]
    AlreadyApproved {
        /// Who approved again.
        by: String,
        /// Who it waits for (the approvers who have not approved), as a person reads it.
        waiting: String,
        /// Who approved, and who may still.
        turn: super::Turn,
    },
    /// The access file installed where the session lives cannot be read as written: nothing is
    /// decided or acted on without its rules.
    #[error("the installed rules cannot be used: {0}; fix the file and install it again (`planlock access install`)")]
    Access(#[from] super::access::AccessError),
    /// An access file given for this call says other rules than the ones installed where the
    /// session lives: the installed rules are the ones every path applies.
    #[error(
        "the access file {given} says other rules than the ones installed ({installed}); decide without --access (the installed rules apply), or install the file with `planlock access install`"
    )]
    AccessMismatch {
        /// The file given.
        given: String,
        /// Where the installed rules are.
        installed: String,
    },
    /// The pause cannot be edited (CONTRACT §22): its step ran already, or it does not show
    /// its whole input.
    #[error(transparent)]
    NotEditable(#[from] crate::session::NotEditable),
    /// An edit of a session that keeps no plan to check it against (it was last run by an older
    /// planlock, or its plan lacks the step).
    #[error("this session keeps no plan to check an edit against: run it once with `planlock run`, then edit")]
    NoPlanKept,
    /// The edited payload breaks the plan's rules: the validator's problems, as for a plan.
    #[error("the edited payload is refused by the plan's validator: {0}")]
    EditInvalid(crate::contract::problem::Rejection),
    /// The store failed, or the pause already has another decision (`already-decided`).
    #[error(transparent)]
    Session(#[from] SessionError),
}

impl Failure for DecideError {
    fn code(&self) -> &'static str {
        match self {
            DecideError::NotPaused => "not-paused",
            DecideError::PauseEnded { .. } | DecideError::OtherPause { .. } => "pause-ended",
            DecideError::Expired { .. } => "approval-expired",
            DecideError::DigestMismatch { .. } => "digest-mismatch",
            DecideError::Invalid(_) => "decision-invalid",
            DecideError::NotAnApprover { .. } => "not-an-approver",
            DecideError::Incomplete { .. } => "approval-incomplete",
            DecideError::AlreadyApproved { .. } => "already-approved",
            DecideError::Access(e) => e.code(),
            DecideError::AccessMismatch { .. } => "access-mismatch",
            DecideError::NotEditable(crate::session::NotEditable::AfterStep) => "nothing-to-edit",
            DecideError::NotEditable(crate::session::NotEditable::NotWhole) => "not-editable",
            DecideError::NoPlanKept => "no-plan-kept",
            DecideError::EditInvalid(_) => "edit-invalid",
            DecideError::Session(e) => e.code(),
        }
    }

    /// CycleFail: nothing was written, the session goes on; the decider may look again. One who
    /// may not decide is FailFast: looking again changes nothing.
    fn kind(&self) -> FailureKind {
        match self {
            DecideError::NotAnApprover { .. } | DecideError::Access(_) | DecideError::AccessMismatch { .. } => {
                FailureKind::FailFast
            }
            DecideError::Session(e)
                if !matches!(e, SessionError::AlreadyDecided { .. } | SessionError::AlreadyApproved { .. }) =>
            {
                e.kind()
            }
            _ => FailureKind::CycleFail,
        }
    }
}

impl ReviewDecision {
    /// This decision, if it is on the pause named `id` (as [`PauseRef::id`](crate::session::PauseRef::id)
    /// writes it): what a form or a command line that showed one pause gives, so that the
    /// decision cannot land on another.
    ///
    /// ```
    /// use planlock::session::{ReviewDecision, ReviewVerdict};
    /// # let json = r#"{"sessionId":"6f1c1b8e-4a55-4d1f-9a57-8a4f0f7c2a11","planHash":"0000000000000000000000000000000000000000000000000000000000000000","cycle":1,"stepId":"s","stepType":"PersistMemory","phase":"pre","validator":{"id":"v","version":"1","config_hash":"0000000000000000000000000000000000000000000000000000000000000000"},"reason":"r","completed":[],"createdAt":"2026-01-01T00:00:00Z"}"#;
    /// # let record: planlock::session::InterventionRecord = serde_json::from_str(json)?;
    /// let decision = ReviewDecision::new(&record, ReviewVerdict::Reject, "ada", "no");
    /// assert!(decision.clone().on_pause("1@2026-01-01T00:00:00Z").is_ok());
    /// assert!(decision.on_pause("1@2026-01-01T00:00:01Z").is_err()); // a later pause of cycle 1
    /// # Ok::<(), serde_json::Error>(())
    /// ```
    pub fn on_pause(self, id: &str) -> Result<ReviewDecision, DecideError> {
        let waiting = self.pause.id();
        if id == waiting {
            return Ok(self);
        }
        Err(DecideError::OtherPause { named: printable(id).into_owned(), waiting })
    }
}

/// The rule for who decided: a name a person can read (at least one visible character, see
/// [`is_blank`](crate::text::is_blank)), at most [`MAX_DECIDER_CHARS`] characters, no control
/// character (a name is one line).
///
/// ```
/// use planlock::review::check_decider;
/// assert!(check_decider("ada").is_ok());
/// assert!(check_decider("\u{2800}").is_err() && check_decider("ada\nbob").is_err());
/// ```
pub fn check_decider(by: &str) -> Result<(), String> {
    let chars = by.chars().count();
    if crate::text::is_blank(by) || chars > MAX_DECIDER_CHARS {
        return Err(format!(
            "who decided must be named with a visible character, in at most {MAX_DECIDER_CHARS} characters (the name has {chars})"
        ));
    }
    match by.chars().find(|c| c.is_control()) {
        Some(c) => Err(format!("who decided must be named without control characters (found U+{:04X})", u32::from(c))),
        None => Ok(()),
    }
}

/// Records `decision` on the paused cycle of `records`: it must name the pause waiting there,
/// before its expiry, on what its record shows (its `shownDigest`), with a justification and a
/// decider's name a person can read, under the rules installed where the session lives
/// ([`SessionRecords::installed_access`]; see [`decide_with`]). It goes to the approval log,
/// where decisions live.
///
/// ```
/// use planlock::Failure;
/// use planlock::session::{FileRecords, ReviewVerdict};
/// use planlock::review::decide;
/// # let root = tempfile::tempdir()?;
/// let records = FileRecords::new(root.path());
/// // Nothing is paused under a new root.
/// # let json = r#"{"sessionId":"6f1c1b8e-4a55-4d1f-9a57-8a4f0f7c2a11","planHash":"0000000000000000000000000000000000000000000000000000000000000000","cycle":1,"stepId":"s","stepType":"PersistMemory","phase":"pre","validator":{"id":"v","version":"1","config_hash":"0000000000000000000000000000000000000000000000000000000000000000"},"reason":"r","completed":[],"createdAt":"2026-01-01T00:00:00Z"}"#;
/// # let record: planlock::session::InterventionRecord = serde_json::from_str(json)?;
/// let decision = planlock::session::ReviewDecision::new(&record, ReviewVerdict::Approve, "ada", "checked");
/// let refused = planlock::block_on(decide(&records, &decision));
/// assert_eq!(refused.unwrap_err().code(), "not-paused");
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub async fn decide(records: &dyn SessionRecords, decision: &ReviewDecision) -> Result<Recorded, DecideError> {
    decide_with(records, decision, None).await
}

/// The rules a decision on `records`' session is held to (CONTRACT §18, amended: the rules
/// live with the sessions): the access file installed where the session lives; where none is,
/// `given` (a one-off `--access FILE`), else none (one operator, names unverified). A `given`
/// file that says other rules than the installed ones is refused
/// ([`DecideError::AccessMismatch`]), and installed rules that cannot be read refuse every
/// decision ([`DecideError::Access`]).
pub async fn rules_for(records: &dyn SessionRecords, given: Option<&Access>) -> Result<Option<Access>, DecideError> {
    let Some(installed) = records.installed_access().await? else { return Ok(given.cloned()) };
    let access = Access::installed(&installed)?;
    if let Some(given) = given
        && !given.same_rules(&access)
    {
        return Err(DecideError::AccessMismatch { given: given.source().to_owned(), installed: installed.source });
    }
    Ok(Some(access))
}

/// [`decide`] under the rules of CONTRACT §18: those installed where the session lives, or
/// `access` where none are (a one-off check; one that disagrees with the installed rules is
/// refused). The decider must be a user of the rules allowed for the pause's validator (else
/// [`DecideError::NotAnApprover`], nothing written), the decision is recorded as verified, and
/// a pause whose validator needs `required: N` approvals is approved by N distinct allowed
/// people on the same digest ([`Recorded::Counted`] until then); one rejection rejects. Without
/// rules, one operator decides and the name is recorded as unverified.
///
/// ```
/// use planlock::Failure;
/// use planlock::review::access::{Access, token_sha256};
/// use planlock::review::decide_with;
/// use planlock::session::{FileRecords, ReviewDecision, ReviewVerdict};
/// # let json = r#"{"sessionId":"6f1c1b8e-4a55-4d1f-9a57-8a4f0f7c2a11","planHash":"0000000000000000000000000000000000000000000000000000000000000000","cycle":1,"stepId":"s","stepType":"PersistMemory","phase":"pre","validator":{"id":"v","version":"1","config_hash":"0000000000000000000000000000000000000000000000000000000000000000"},"reason":"r","completed":[],"createdAt":"2026-01-01T00:00:00Z"}"#;
/// # let record: planlock::session::InterventionRecord = serde_json::from_str(json)?;
/// let access = Access::parse("access.yaml", &format!("users:\n  ada: {{ tokenSha256: \"{}\" }}\n", token_sha256("t")))?;
/// let sessions = tempfile::tempdir()?;
/// let records = FileRecords::new(sessions.path().join("s"));
/// let eve = ReviewDecision::new(&record, ReviewVerdict::Approve, "eve", "looks fine");
/// let refused = planlock::block_on(decide_with(&records, &eve, Some(&access))).unwrap_err();
/// assert_eq!(refused.code(), "not-an-approver");
/// // Installed beside the session roots, the rules hold without being given.
/// planlock::session::install_access(sessions.path(), &format!("users:\n  ada: {{ tokenSha256: \"{}\" }}\n", token_sha256("t")))?;
/// assert_eq!(planlock::block_on(planlock::review::decide(&records, &eve)).unwrap_err().code(), "not-an-approver");
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub async fn decide_with(
    records: &dyn SessionRecords,
    decision: &ReviewDecision,
    access: Option<&Access>,
) -> Result<Recorded, DecideError> {
    decide_counted(records, decision, access).await.map(|decided| decided.recorded)
}

/// What recording a decision did, as [`decide_counted`] says it: the record, whether rules
/// vouched for the decider, and, for one approval of several, where the pause stands.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Decided {
    /// What recording it did.
    pub recorded: Recorded,
    /// Whether rules (installed, or given) vouched for the decider (CONTRACT §18).
    pub verified: bool,
    /// For [`Recorded::Counted`]: who approved so far and who may still.
    pub turn: Option<super::Turn>,
}

/// [`decide_with`], saying also whether the name was verified and, for one approval of several,
/// whose turn it is now: what the CLI, the console and the runtime show after a decision.
pub async fn decide_counted(
    records: &dyn SessionRecords,
    decision: &ReviewDecision,
    access: Option<&Access>,
) -> Result<Decided, DecideError> {
    decide_read(records, None, decision, access).await
}

/// A session's pause as [`read_pause`] read it from the session's records: the only way to
/// make one, so a decision checked against it ([`decide_shown`]) is checked against the record
/// the store holds, never one a caller wrote. It reads as the [`InterventionRecord`] it holds.
///
/// ```compile_fail
/// # fn made(record: planlock::session::InterventionRecord) {
/// let fabricated = planlock::review::ReadPause(record); // no: only `read_pause` makes one
/// # }
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct ReadPause(InterventionRecord);

impl std::ops::Deref for ReadPause {
    type Target = InterventionRecord;

    fn deref(&self) -> &InterventionRecord {
        &self.0
    }
}

/// The pause waiting in `records`' session, or `None`: read once, to show it, to check who may
/// decide it, and to decide on it with [`decide_shown`].
///
/// ```
/// use planlock::session::FileRecords;
/// # let root = tempfile::tempdir()?;
/// let records = FileRecords::new(root.path());
/// assert!(planlock::block_on(planlock::review::read_pause(&records))?.is_none(), "nothing is paused");
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub async fn read_pause(records: &dyn SessionRecords) -> Result<Option<ReadPause>, SessionError> {
    Ok(records.load_intervention().await?.map(ReadPause))
}

/// [`decide_counted`] on `pause`, the pause the caller read from `records` already with
/// [`read_pause`] (to show it, or to check who may decide it): the pause is read once per
/// request (the console's POST, the CLI's `inbox approve`), not again here. A pause that is not
/// the one `decision` names is refused as a pause read here would be
/// ([`DecideError::PauseEnded`]).
pub async fn decide_shown(
    records: &dyn SessionRecords,
    pause: &ReadPause,
    decision: &ReviewDecision,
    access: Option<&Access>,
) -> Result<Decided, DecideError> {
    decide_read(records, Some(&pause.0), decision, access).await
}

/// [`decide_counted`], on the pause `read` (`None`: read here, after the decider is checked).
async fn decide_read(
    records: &dyn SessionRecords,
    read: Option<&InterventionRecord>,
    decision: &ReviewDecision,
    access: Option<&Access>,
) -> Result<Decided, DecideError> {
    crate::exec::validator::check_justification(&decision.justification).map_err(DecideError::Invalid)?;
    check_decider(&decision.by).map_err(DecideError::Invalid)?;
    let access = rules_for(records, access).await?;
    let validator = &decision.pause.validator_id;
    let required = match &access {
        Some(access) if !access.may_decide(&decision.by, validator) => {
            return Err(DecideError::NotAnApprover {
                by: printable(&decision.by).into_owned(),
                validator: printable(validator).into_owned(),
            });
        }
        Some(access) => access.rule(validator).required,
        None => 1,
    };
    let decision = &ReviewDecision { verified: Some(access.is_some()), ..decision.clone() };
    let loaded;
    let record = match read {
        Some(record) => record,
        None => {
            loaded = records.load_intervention().await?.ok_or(DecideError::NotPaused)?;
            &loaded
        }
    };
    if crate::session::PauseRef::of(record) != decision.pause {
        let step_id = printable(&decision.pause.step_id).into_owned();
        return Err(DecideError::PauseEnded { cycle: decision.pause.cycle, step_id });
    }
    // An expired pause can only be abandoned; an abandon judges nothing shown, so it binds to
    // the pause alone.
    let abandon = decision.verdict == ReviewVerdict::Abandon;
    if let Some(expired_at) = decision.too_late_for(record) {
        return Err(DecideError::Expired { expired_at });
    }
    // An edit (CONTRACT §22): an approval only, its payload checked by the plan's validator
    // and its digest made here, whatever the caller built.
    if let Some(edit) = &decision.edit {
        if decision.verdict != ReviewVerdict::Approve {
            return Err(DecideError::Invalid("only an approval edits the step's payload".into()));
        }
        if super::edit_of(records, record, edit.payload.clone()).await? != *edit {
            return Err(DecideError::Invalid(
                "the edit's digest or payload is not what the validator makes of it: edit again".into(),
            ));
        }
    }
    // On what the pause shows: its record's digest, or its latest edit's (which the store's
    // tally holds it to: an approval of what an edit replaced is `approval-stale`).
    if decision.shown_digest != record.shown_digest && !abandon {
        let edited = match decision.shown_digest {
            Some(_) => records.decisions_on(&decision.pause).await?.edit.map(|e| e.digest),
            None => None,
        };
        if edited.is_none() || edited != decision.shown_digest {
            let name = |d: Option<crate::hash::Digest>| {
                d.map_or_else(|| "(none: a record of an older version)".into(), |d| d.to_string())
            };
            return Err(DecideError::DigestMismatch {
                decided: name(decision.shown_digest),
                shown: name(edited.or(record.shown_digest)),
            });
        }
    }
    // The decision is part of the paused cycle's trace: its span is a child of the cycle's.
    let verdict = decision.verdict.past();
    // Who, how, and how long the pause waited; the reason's length, never its text.
    use crate::telemetry::names::{APPROVAL_BY, APPROVAL_REASON_LENGTH, APPROVAL_WAIT, CYCLE_NUMBER, STEP_ID, VERDICT};
    let by = crate::text::escape_invisible(crate::telemetry::name(&decision.by)).into_owned();
    let span = tracing::info_span!(
        "review",
        otel.name = %format_args!("review {verdict}"),
        { VERDICT } = verdict,
        { APPROVAL_BY } = by.as_str(),
        { APPROVAL_REASON_LENGTH } = crate::telemetry::int(decision.justification.chars().count()),
        { APPROVAL_WAIT } = decision.at.since(record.created_at).as_secs_f64(),
        { STEP_ID } = %decision.pause.step_id,
        { CYCLE_NUMBER } = crate::telemetry::int(decision.pause.cycle),
    );
    if let Some(parent) = record.trace_parent {
        parent.adopt(&span);
    }
    let recorded = match (records.record_decision(decision, required).instrument(span).await, &access) {
        (Ok(recorded), _) => recorded,
        // A second approval by the same person: refused, saying whose turn it is.
        (Err(SessionError::AlreadyApproved { by, .. }), Some(access)) => {
            let turn = turn_on(records, &decision.pause, &access.rule(validator)).await?;
            return Err(DecideError::AlreadyApproved { by, waiting: turn.waiting_for(), turn });
        }
        (Err(e), _) => return Err(e.into()),
    };
    crate::telemetry::approval(verdict);
    let turn = match (&recorded, &access) {
        (Recorded::Counted { .. }, Some(access)) => {
            Some(turn_on(records, &decision.pause, &access.rule(validator)).await?)
        }
        _ => None,
    };
    Ok(Decided { recorded, verified: access.is_some(), turn })
}

/// Whether the decision recorded on a pause may be acted on under the rules installed where the
/// session lives (CONTRACT §18, amended: every path that acts applies them): an approval must
/// have been checked against rules (not a name nobody vouched for), by people the installed
/// rules allow for the validator, as many as they require. A rejection or an abandon only ends
/// the cycle, and is acted on as recorded. Without installed rules, every decision is.
pub async fn check_acting(records: &dyn SessionRecords, decision: &ReviewDecision) -> Result<(), DecideError> {
    if decision.verdict != ReviewVerdict::Approve {
        return Ok(());
    }
    let Some(access) = rules_for(records, None).await? else { return Ok(()) };
    let validator = &decision.pause.validator_id;
    let approved = decision.approved_by();
    if decision.verified != Some(true) {
        return Err(DecideError::NotAnApprover {
            by: format!("{} (a name nobody vouched for: recorded without rules)", printable(&decision.by)),
            validator: printable(validator).into_owned(),
        });
    }
    if let Some(stranger) = approved.iter().find(|by| !access.may_decide(by, validator)) {
        return Err(DecideError::NotAnApprover {
            by: printable(stranger).into_owned(),
            validator: printable(validator).into_owned(),
        });
    }
    let rule = access.rule(validator);
    let turn = super::Turn::of(&rule, approved.iter().map(|n| (*n).to_owned()).collect());
    match turn.complete() {
        true => Ok(()),
        false => Err(DecideError::Incomplete { turn }),
    }
}

/// Where the pause `pause` of `records`' session stands under `rule`: who approved it so far
/// and who may still.
pub async fn turn_on(
    records: &dyn SessionRecords,
    pause: &crate::session::PauseRef,
    rule: &super::access::Rule,
) -> Result<super::Turn, DecideError> {
    let decisions = records.decisions_on(pause).await?;
    let approved = match decisions.decision {
        Some(decision) => decision.approved_by().into_iter().map(str::to_owned).collect(),
        None => decisions.approvals,
    };
    Ok(super::Turn::of(rule, approved))
}
