//! A person's decision on a paused cycle, and the session's approval log (CONTRACT §14;
//! docs/CONTRACT.md, "Approvals").
//!
//! - A [`ReviewDecision`] — `{ pause, verdict, by, at, justification, shownDigest }` — is bound to
//!   one pause ([`PauseRef`]: session, cycle, step, validator and the record's creation). Any
//!   process may write it, without the session's lock or lease ([`decide`](crate::review::decide)); a
//!   pause has at most one: a second, different one is `already-decided`, the same one again
//!   changes nothing.
//! - The approval log holds every decision and what became of it ([`ApprovalEvent`]), one JSON
//!   object a line (files) or row (PostgreSQL), appended and made durable before the call
//!   returns, never rewritten: the decisions live there, and each pause has one outcome.

use serde::{Deserialize, Serialize};
use uuid::Uuid;

use super::{InterventionRecord, SessionError, Timestamp};
use crate::hash::Digest;

/// The longest approval log read back, in bytes (16 MiB); past it, the log's last 16 MiB are
/// read (a line cut at the start is skipped).
pub const MAX_LOG_BYTES: u64 = 16 << 20;

/// Which pause a decision is bound to: the session, the cycle, the blocked step, the validator
/// and when its record was made (so a later pause of the same step is another pause).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct PauseRef {
    /// The session.
    pub session_id: Uuid,
    /// The paused cycle.
    pub cycle: u64,
    /// The blocked step.
    pub step_id: String,
    /// The validator that blocked it.
    pub validator_id: String,
    /// When the record of the pause was made.
    pub created_at: Timestamp,
}

impl PauseRef {
    /// A short name of this pause, `{cycle}@{createdAt}`, that a page's form or a command line
    /// carries so that a decision made on what it showed cannot land on a later pause of the
    /// same session (a re-run may pause at the same step, showing the same thing).
    ///
    /// ```
    /// # let json = r#"{"sessionId":"6f1c1b8e-4a55-4d1f-9a57-8a4f0f7c2a11","cycle":3,"stepId":"s","validatorId":"v","createdAt":"2026-01-01T00:00:00Z"}"#;
    /// let pause: planlock::session::PauseRef = serde_json::from_str(json)?;
    /// assert_eq!(pause.id(), "3@2026-01-01T00:00:00Z");
    /// # Ok::<(), serde_json::Error>(())
    /// ```
    pub fn id(&self) -> String {
        format!("{}@{}", self.cycle, self.created_at)
    }

    /// The pause `record` describes.
    pub fn of(record: &InterventionRecord) -> PauseRef {
        PauseRef {
            session_id: record.session_id,
            cycle: record.cycle,
            step_id: record.step_id.clone(),
            validator_id: record.validator.id.clone(),
            created_at: record.created_at,
        }
    }
}

/// Approve, reject, or abandon.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ReviewVerdict {
    /// The blocked step may run (once, while it meets what was approved).
    Approve,
    /// What the pause shows is refused: the paused cycle is abandoned.
    Reject,
    /// The paused cycle is given up without a judgement on what it shows: the one way to end an
    /// expired pause (taken after its expiry too), and a waiting one's (CONTRACT §14).
    Abandon,
}

impl ReviewVerdict {
    /// Every verdict, as a form offers them.
    pub const ALL: [ReviewVerdict; 3] = [ReviewVerdict::Approve, ReviewVerdict::Reject, ReviewVerdict::Abandon];

    /// `approve`, `reject` or `abandon`.
    pub fn as_str(self) -> &'static str {
        match self {
            ReviewVerdict::Approve => "approve",
            ReviewVerdict::Reject => "reject",
            ReviewVerdict::Abandon => "abandon",
        }
    }

    /// `approved`, `rejected` or `abandoned`: what a pause with this decision is.
    pub fn past(self) -> &'static str {
        match self {
            ReviewVerdict::Approve => "approved",
            ReviewVerdict::Reject => "rejected",
            ReviewVerdict::Abandon => "abandoned",
        }
    }

    /// Whether the session's next run abandons the paused cycle on it (a rejection, an abandon):
    /// one such decision ends a pause however many approvals it needs.
    pub fn ends_the_cycle(self) -> bool {
        self != ReviewVerdict::Approve
    }
}

impl std::fmt::Display for ReviewVerdict {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A person's decision on one pause.
///
/// ```
/// use planlock::session::{ReviewDecision, ReviewVerdict};
/// # let json = r#"{"sessionId":"6f1c1b8e-4a55-4d1f-9a57-8a4f0f7c2a11","planHash":"0000000000000000000000000000000000000000000000000000000000000000","cycle":1,"stepId":"s","stepType":"PersistMemory","phase":"pre","validator":{"id":"v","version":"1","config_hash":"0000000000000000000000000000000000000000000000000000000000000000"},"reason":"r","completed":[],"createdAt":"2026-01-01T00:00:00Z"}"#;
/// # let record: planlock::session::InterventionRecord = serde_json::from_str(json)?;
/// let decision = ReviewDecision::new(&record, ReviewVerdict::Approve, "ada", "no personal data");
/// assert_eq!(decision.pause.step_id, "s");
/// assert!(decision.same_as(&ReviewDecision::new(&record, ReviewVerdict::Approve, "ada", "no personal data")));
/// assert!(!decision.same_as(&ReviewDecision::new(&record, ReviewVerdict::Reject, "ada", "no personal data")));
/// # Ok::<(), serde_json::Error>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct ReviewDecision {
    /// The pause it is bound to.
    pub pause: PauseRef,
    /// Approve or reject.
    pub verdict: ReviewVerdict,
    /// Who decided.
    pub by: String,
    /// When.
    pub at: Timestamp,
    /// Why.
    pub justification: String,
    /// The digest of what the decider was shown (the record's `shownDigest`); `None` only for a
    /// record of an older version, which shows nothing to bind to.
    #[serde(default, skip_serializing_if = "Option::is_none", deserialize_with = "super::present")]
    pub shown_digest: Option<Digest>,
    /// Whether `by` was checked against an access file (CONTRACT §18): `true` when the decider
    /// is a user of it allowed for the validator, `false` when no access file was used (one
    /// operator, the name as typed). Set when the decision is recorded; absent in a record of an
    /// older version.
    #[serde(default, skip_serializing_if = "Option::is_none", deserialize_with = "super::present")]
    pub verified: Option<bool>,
    /// Where it was made: the console, the CLI or the library.
    #[serde(default, skip_serializing_if = "Option::is_none", deserialize_with = "super::present")]
    pub via: Option<Via>,
    /// The approval of a pause that needs more than one (`required: N`): everyone whose approval
    /// counted, in the order they approved (`by` is the last of them). Empty otherwise.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub approvers: Vec<String>,
    /// An approval that edits the paused step's payload (CONTRACT §22): the payload the step
    /// runs with instead, and its own digest, which the other approvers approve. `shown_digest`
    /// stays what the editor was shown. Absent for any other decision.
    #[serde(default, skip_serializing_if = "Option::is_none", deserialize_with = "super::present")]
    pub edit: Option<super::Edit>,
}

/// Where a decision was made: who vouches for its `by`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Via {
    /// The console: a person signed in (with an access file, by their own token).
    Console,
    /// The CLI: the operator's tool; whoever can write the session's records is trusted.
    Cli,
    /// A program through the library (a `Runtime`'s resume with an override).
    Library,
    /// planlock itself, applying a rule of the installed access file (a worker abandoning an
    /// expired pause by its validator's `onExpiry: abandon`): `by` is `planlock`, the reason
    /// names the rule.
    Rule,
}

impl ReviewDecision {
    /// The expiry rule (CONTRACT §14), said once: a pause that has expired can only be
    /// abandoned. When this decision comes after `record`'s pause expired and is not an abandon,
    /// when the pause expired; `None` when the decision is in time (or an abandon).
    pub fn too_late_for(&self, record: &InterventionRecord) -> Option<Timestamp> {
        if self.verdict == ReviewVerdict::Abandon || !record.expired_at(self.at) {
            return None;
        }
        record.expires_at
    }

    /// A decision on the pause of `record`, made now, on what the record shows.
    pub fn new(
        record: &InterventionRecord,
        verdict: ReviewVerdict,
        by: impl Into<String>,
        justification: impl Into<String>,
    ) -> ReviewDecision {
        ReviewDecision {
            pause: PauseRef::of(record),
            verdict,
            by: by.into(),
            at: Timestamp::now(),
            justification: justification.into(),
            shown_digest: record.shown_digest,
            verified: None,
            via: None,
            approvers: Vec::new(),
            edit: None,
        }
    }

    /// This decision, an approval that edits the step's payload to `edit`'s.
    pub fn editing(mut self, edit: super::Edit) -> ReviewDecision {
        self.edit = Some(edit);
        self
    }

    /// The digest this decision approves (or rejects): its edit's, for an edit; else what the
    /// decider was shown.
    pub fn approves(&self) -> Option<Digest> {
        self.edit.as_ref().map_or(self.shown_digest, |edit| Some(edit.digest))
    }

    /// This decision, made through `via`.
    pub fn via(mut self, via: Via) -> ReviewDecision {
        self.via = Some(via);
        self
    }

    /// Who approved, for a pause's approval: everyone in [`approvers`](Self::approvers), or
    /// `by` alone.
    pub fn approved_by(&self) -> Vec<&str> {
        match self.approvers.is_empty() {
            true => vec![self.by.as_str()],
            false => self.approvers.iter().map(String::as_str).collect(),
        }
    }

    /// Who decided, as every place that shows a decision writes it: the approvers (or `by`),
    /// printable and in backquotes, and `(unverified name)` after a name no rules vouched for (CONTRACT §18).
    ///
    /// ```
    /// # let json = r#"{"sessionId":"6f1c1b8e-4a55-4d1f-9a57-8a4f0f7c2a11","planHash":"0000000000000000000000000000000000000000000000000000000000000000","cycle":1,"stepId":"s","stepType":"PersistMemory","phase":"pre","validator":{"id":"v","version":"1","config_hash":"0000000000000000000000000000000000000000000000000000000000000000"},"reason":"r","completed":[],"createdAt":"2026-01-01T00:00:00Z"}"#;
    /// # let record: planlock::session::InterventionRecord = serde_json::from_str(json)?;
    /// use planlock::session::{ReviewDecision, ReviewVerdict};
    /// let mut decision = ReviewDecision::new(&record, ReviewVerdict::Approve, "eve", "fine");
    /// decision.verified = Some(false);
    /// assert_eq!(decision.who(), "`eve` (unverified name)");
    /// # Ok::<(), serde_json::Error>(())
    /// ```
    pub fn who(&self) -> String {
        let names: Vec<String> =
            self.approved_by().iter().map(|n| format!("`{}`", crate::text::printable(n))).collect();
        match self.verified {
            Some(false) => format!("{} (unverified name)", names.join(", ")),
            _ => names.join(", "),
        }
    }

    /// Whether `other` says the same thing on the same pause (the time it was made, where and how
    /// it was checked aside): a decision made again changes nothing. `other` by one of this
    /// approval's approvers, approving the same digest, is the same.
    pub fn same_as(&self, other: &ReviewDecision) -> bool {
        let same_person = self.by == other.by || self.approvers.contains(&other.by);
        let same_words = self.justification == other.justification || !self.approvers.is_empty();
        self.pause == other.pause
            && self.verdict == other.verdict
            && same_person
            && same_words
            && self.shown_digest == other.shown_digest
            && self.edit == other.edit
    }
}

/// What recording a decision did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Recorded {
    /// It is the pause's decision now.
    New,
    /// The same decision was already recorded; nothing changed.
    Again,
    /// An approval of a pause that needs more than one: it counts (or counted already), and the
    /// pause is not approved yet.
    Counted {
        /// The distinct approvals so far.
        approvals: usize,
        /// How many approve the pause.
        required: usize,
    },
}

/// One line of the approval log: a decision, or what became of one.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "event", rename_all = "camelCase", deny_unknown_fields)]
pub enum ApprovalEvent {
    /// A cycle paused for a person: logged right after the pause's record is saved (and, should
    /// a process stop between the two, by the next one that finds the record without it), so the
    /// log says every pause there was — what `pause.created` notifications are sent from.
    #[serde(rename_all = "camelCase")]
    Paused {
        /// The pause.
        pause: PauseRef,
        /// The blocked step's type.
        step_type: crate::contract::registry::StepType,
        /// Why the validator blocked it.
        reason: String,
        /// The digest of what it shows.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        shown_digest: Option<Digest>,
        /// When it expires, if it does.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        expires_at: Option<Timestamp>,
    },
    /// A pause was seen past its `expiresAt` without a decision (once: `pause.expired`).
    ExpiryNoticed {
        /// The pause.
        pause: PauseRef,
        /// When it was seen.
        at: Timestamp,
    },
    /// A decision was recorded.
    Decided {
        /// The decision.
        decision: ReviewDecision,
    },
    /// One person's approval of a pause that needs more than one (`approval 1 of 2 by ada`):
    /// the pause is approved when enough distinct people approved the same digest (the
    /// [`Decided`](Self::Decided) event that follows says so).
    #[serde(rename_all = "camelCase")]
    Voted {
        /// The approval.
        decision: ReviewDecision,
        /// How many distinct approvals the pause had with it.
        count: usize,
        /// How many it needs.
        required: usize,
    },
    /// The approval let the blocked step pass; the resumed cycle ended (completed, or failed
    /// after it).
    #[serde(rename_all = "camelCase")]
    Consumed {
        /// The pause.
        pause: PauseRef,
        /// The cycle that used it.
        cycle: u64,
        /// Whether that cycle completed.
        completed: bool,
        /// When.
        at: Timestamp,
    },
    /// The approval did not apply: the re-run met something other than what was approved
    /// (`approval-stale`); the validator judged what was there.
    #[serde(rename_all = "camelCase")]
    Stale {
        /// The pause.
        pause: PauseRef,
        /// The digest of what the re-run met.
        met: Digest,
        /// When.
        at: Timestamp,
    },
    /// The pause had expired: the decision was not used; only an abandon may follow.
    Expired {
        /// The pause.
        pause: PauseRef,
        /// When.
        at: Timestamp,
    },
    /// The paused cycle was abandoned: by a rejection, or by `abandon` while a decision waited.
    Abandoned {
        /// The pause.
        pause: PauseRef,
        /// When.
        at: Timestamp,
    },
    /// The pause the decision names had ended before it could be used (it was abandoned, or
    /// resumed, meanwhile).
    Superseded {
        /// The pause.
        pause: PauseRef,
        /// When.
        at: Timestamp,
    },
}

impl ApprovalEvent {
    /// The pause the event is about.
    pub fn pause(&self) -> &PauseRef {
        match self {
            ApprovalEvent::Decided { decision } | ApprovalEvent::Voted { decision, .. } => &decision.pause,
            ApprovalEvent::Paused { pause, .. } | ApprovalEvent::ExpiryNoticed { pause, .. } => pause,
            ApprovalEvent::Consumed { pause, .. }
            | ApprovalEvent::Stale { pause, .. }
            | ApprovalEvent::Expired { pause, .. }
            | ApprovalEvent::Abandoned { pause, .. }
            | ApprovalEvent::Superseded { pause, .. } => pause,
        }
    }

    /// Whether it says what became of a decision or a pause (`consumed`, `stale`, `expired`,
    /// `abandoned`, `superseded`): one a pause, at most.
    pub fn is_outcome(&self) -> bool {
        !matches!(self, ApprovalEvent::Decided { .. } | ApprovalEvent::Voted { .. } | ApprovalEvent::Paused { .. })
            && !matches!(self, ApprovalEvent::ExpiryNoticed { .. })
    }

    /// When it happened: the pause's making, the decision's, the outcome's or the notice's.
    pub fn at(&self) -> Timestamp {
        match self {
            ApprovalEvent::Paused { pause, .. } => pause.created_at,
            ApprovalEvent::Decided { decision } | ApprovalEvent::Voted { decision, .. } => decision.at,
            ApprovalEvent::ExpiryNoticed { at, .. }
            | ApprovalEvent::Consumed { at, .. }
            | ApprovalEvent::Stale { at, .. }
            | ApprovalEvent::Expired { at, .. }
            | ApprovalEvent::Abandoned { at, .. }
            | ApprovalEvent::Superseded { at, .. } => *at,
        }
    }

    /// Whether it is a notice (`paused`, `expiryNoticed`): logged once a pause, by whoever sees
    /// it first.
    pub fn is_notice(&self) -> bool {
        matches!(self, ApprovalEvent::Paused { .. } | ApprovalEvent::ExpiryNoticed { .. })
    }

    /// The event that says `record`'s pause was made.
    pub fn paused(record: &InterventionRecord) -> ApprovalEvent {
        ApprovalEvent::Paused {
            pause: PauseRef::of(record),
            step_type: record.step_type,
            reason: record.reason.clone(),
            shown_digest: record.shown_digest,
            expires_at: record.expires_at,
        }
    }

    /// The event's name as the log writes it (`decided`, `consumed`, …).
    pub fn name(&self) -> &'static str {
        match self {
            ApprovalEvent::Paused { .. } => "paused",
            ApprovalEvent::ExpiryNoticed { .. } => "expiryNoticed",
            ApprovalEvent::Decided { .. } => "decided",
            ApprovalEvent::Voted { .. } => "voted",
            ApprovalEvent::Consumed { .. } => "consumed",
            ApprovalEvent::Stale { .. } => "stale",
            ApprovalEvent::Expired { .. } => "expired",
            ApprovalEvent::Abandoned { .. } => "abandoned",
            ApprovalEvent::Superseded { .. } => "superseded",
        }
    }
}

/// What is decided on one pause so far: its decision, if it has one, and the approvals counted
/// toward one where its validator needs several ("1 of 2 (ada)").
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Decisions {
    /// The pause's decision.
    pub decision: Option<ReviewDecision>,
    /// Who approved it so far, in order, while it needs more (empty once it is decided).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub approvals: Vec<String>,
    /// How many approvals it needs, as the last of them counted (`None` without one).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub required: Option<usize>,
    /// The latest edit of the step's payload while the pause waits (CONTRACT §22): what the
    /// approvals counted are of, and what the next approver approves.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub edit: Option<super::Edit>,
}

/// The approvals of a pause so far: who approved which digest, in order.
impl super::ApprovalLog {
    /// What is decided on `pause` so far.
    pub fn decisions_on(&self, pause: &PauseRef) -> Decisions {
        let decision = self.decision_on(pause).cloned();
        let mut approvals: Vec<String> = Vec::new();
        let mut required = None;
        let edit = decision.is_none().then(|| self.latest_edit(pause)).flatten().cloned();
        if decision.is_none() {
            // The approvals counted are of what the pause stands on now: its latest edit's
            // digest once one was made (an edit restarts the count), else what it showed.
            let now = edit.as_ref().map(|e| e.digest);
            for event in &self.events {
                if let ApprovalEvent::Voted { decision, required: needs, .. } = event
                    && decision.pause == *pause
                    && (now.is_none() || decision.approves() == now)
                {
                    required = Some(*needs);
                    if !approvals.contains(&decision.by) {
                        approvals.push(decision.by.clone());
                    }
                }
            }
        }
        Decisions { decision, approvals, required, edit }
    }

    /// Who made the latest edit of `pause`'s step (printable), or an empty name.
    fn editor_of(&self, pause: &PauseRef) -> String {
        let by = self.events.iter().rev().find_map(|event| match event {
            ApprovalEvent::Voted { decision, .. } | ApprovalEvent::Decided { decision }
                if decision.pause == *pause && decision.edit.is_some() =>
            {
                Some(decision.by.as_str())
            }
            _ => None,
        });
        crate::text::printable(by.unwrap_or_default()).into_owned()
    }

    /// The latest edit of `pause`'s step, if one was made (CONTRACT §22).
    pub fn latest_edit(&self, pause: &PauseRef) -> Option<&super::Edit> {
        self.events.iter().rev().find_map(|event| match event {
            ApprovalEvent::Voted { decision, .. } | ApprovalEvent::Decided { decision } if decision.pause == *pause => {
                decision.edit.as_ref()
            }
            _ => None,
        })
    }

    /// The distinct people who approved `pause` on `digest`, in the order they approved (a pause
    /// that needs more than one approval: see [`ApprovalEvent::Voted`]).
    pub fn approvals_on(&self, pause: &PauseRef, digest: Option<Digest>) -> Vec<&str> {
        let mut names: Vec<&str> = Vec::new();
        for event in &self.events {
            if let ApprovalEvent::Voted { decision, .. } = event
                && decision.pause == *pause
                && decision.approves() == digest
                && !names.contains(&decision.by.as_str())
            {
                names.push(&decision.by);
            }
        }
        names
    }

    /// What recording `decision` on a pause that needs `required` distinct approvals does, as
    /// the log holds that pause's events now (the rule of CONTRACT §14 and §18, the same for
    /// every store): the events to append and what they do.
    ///
    /// - The pause has a decision: the same one again changes nothing (an approval by one of its
    ///   approvers is the same); another is [`SessionError::AlreadyDecided`].
    /// - A rejection or an abandon, or an approval where one is enough, is the pause's decision.
    /// - Otherwise it is one person's approval ([`ApprovalEvent::Voted`]): the same person's
    ///   second one is refused ([`SessionError::AlreadyApproved`]); the approval that makes `required` distinct people on the same digest also
    ///   writes the pause's decision, naming them all.
    pub fn tally(
        &self,
        decision: &ReviewDecision,
        required: usize,
    ) -> Result<(Recorded, Vec<ApprovalEvent>), SessionError> {
        if let Some(existing) = self.decision_on(&decision.pause) {
            if existing.same_as(decision) {
                return Ok((Recorded::Again, Vec::new()));
            }
            let by = crate::text::printable(&existing.approved_by().join(", ")).into_owned();
            return Err(SessionError::AlreadyDecided { verdict: existing.verdict, by });
        }
        // Once the step's payload was edited, a decision judges the latest edit: an approval or
        // an edit of what it replaced is stale (an abandon judges nothing shown).
        let latest = self.latest_edit(&decision.pause).map(|edit| (edit.digest, self.editor_of(&decision.pause)));
        if let Some((digest, edited_by)) = latest
            && decision.verdict != ReviewVerdict::Abandon
            && decision.shown_digest != Some(digest)
        {
            return Err(SessionError::ApprovalStale { edited_by, digest });
        }
        let decided = |decision: ReviewDecision| vec![ApprovalEvent::Decided { decision }];
        // An approval of an edit someone else made approves that edit: the pause's decision
        // carries it, for the re-run to run with.
        let edit = match &decision.edit {
            Some(edit) => Some(edit.clone()),
            None if decision.verdict == ReviewVerdict::Approve => {
                self.latest_edit(&decision.pause).filter(|e| Some(e.digest) == decision.shown_digest).cloned()
            }
            None => None,
        };
        if decision.verdict.ends_the_cycle() || required <= 1 {
            return Ok((Recorded::New, decided(ReviewDecision { edit, ..decision.clone() })));
        }
        let mut approvers: Vec<String> =
            self.approvals_on(&decision.pause, decision.approves()).into_iter().map(str::to_owned).collect();
        if approvers.contains(&decision.by) {
            let by = crate::text::printable(&decision.by).into_owned();
            return Err(SessionError::AlreadyApproved { by, approvals: approvers.len(), required });
        }
        approvers.push(decision.by.clone());
        let count = approvers.len();
        let mut events = vec![ApprovalEvent::Voted { decision: decision.clone(), count, required }];
        if count < required {
            return Ok((Recorded::Counted { approvals: count, required }, events));
        }
        events.extend(decided(ReviewDecision { approvers, edit, ..decision.clone() }));
        Ok((Recorded::New, events))
    }
}
