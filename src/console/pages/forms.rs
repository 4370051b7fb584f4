//! Who is looking and what their forms need, and how a pause and a decision read to them.

use super::super::auth::{Auth, Login};
use super::super::rules::Rules;
use super::super::templates::Viewer;
use crate::review::inbox::{InboxFilter, InboxListing, PendingPause, Show};

/// Who decided, as a page shows it: the approvers (or `by`), and "(unverified name)" after a
/// name no rules vouched for (CONTRACT §18: wherever a decision is shown).
pub(super) fn who(decision: &crate::session::ReviewDecision) -> String {
    let names = decision.approved_by().join(", ");
    match decision.verified {
        Some(false) => format!("{names} (unverified name)"),
        _ => names,
    }
}

/// How a pause stands as a page shows it (issue 58): the class its colour is by — `waiting`,
/// `partial` (some of several approvals), `approved` (green), `rejected` and `abandoned` (red),
/// `expired` — and its words. A decided pause is on its way: approved, it runs ("approved —
/// running"); rejected or abandoned, its cycle ends.
/// A partial approval names who approved and who may still (CONTRACT §18) under the rules in
/// force here: installed ones (the listing's turn), or the console's own access file.
pub(super) fn standing(pause: &PendingPause, forms: &Forms<'_>) -> (&'static str, String) {
    use crate::session::ReviewVerdict;
    let turn = forms.turn(pause).filter(|_| !pause.approvals.is_empty());
    match &pause.decision {
        _ if pause.expired => ("expired", pause.state()),
        Some(d) => match d.verdict {
            ReviewVerdict::Approve => ("approved", format!("{} — running", pause.state())),
            ReviewVerdict::Reject => ("rejected", format!("{} — ending the cycle", pause.state())),
            ReviewVerdict::Abandon => ("abandoned", format!("{} — ending the cycle", pause.state())),
        },
        None if let Some(turn) = turn => ("partial", turn.to_string()),
        None if !pause.approvals.is_empty() => ("partial", pause.state()),
        None => ("waiting", pause.state()),
    }
}

/// Who is looking, and what their forms need: the login (its CSRF token, its name), whether
/// actions are served, and where the login may decide.
pub struct Forms<'a> {
    pub login: &'a Login,
    pub read_only: bool,
    pub rules: &'a Rules,
}

impl Forms<'_> {
    /// The signed-in person as the header shows them, with the sign-out form.
    pub(super) fn viewer(&self) -> Viewer<'_> {
        Viewer {
            name: &self.login.name,
            verified: self.login.verified,
            csrf: &self.login.csrf,
            read_only: self.read_only,
            rules_problem: self.rules.problem.as_deref(),
        }
    }

    /// Whether the login may decide on `validator`'s pauses under the rules in force.
    pub fn may_decide(&self, validator: &str) -> bool {
        Auth::may_decide(self.login, validator, self.rules.access.as_deref())
    }

    /// Whose turn it is on `pause` under the rules in force here: installed ones (the listing's
    /// turn), or the console's own access file; `None` once it is decided, or without rules.
    pub fn turn(&self, pause: &PendingPause) -> Option<crate::review::Turn> {
        match (&pause.turn, self.rules.access.as_deref()) {
            _ if pause.decision.is_some() => None,
            (Some(turn), _) => Some(turn.clone()),
            (None, Some(rules)) => {
                Some(crate::review::Turn::of(&rules.rule(&pause.record.validator.id), pause.approvals.clone()))
            }
            (None, None) => None,
        }
    }

    /// Whether `pause` waits for the login (issue 58): one they may decide, not expired, not
    /// decided, and not approved by them already. What the inbox's count counts, and what its
    /// default view ([`Show::Mine`]) lists.
    pub fn waits_for_me(&self, pause: &PendingPause) -> bool {
        !self.read_only
            && !pause.expired
            && pause.decision.is_none()
            && !pause.approvals.contains(&self.login.name)
            && self.may_decide(&pause.record.validator.id)
    }

    /// How many of `listing`'s pauses wait for the login (the number in the title and the
    /// navigation; a listing holds the oldest [`MAX_INBOX`](crate::review::inbox::MAX_INBOX)).
    pub fn pending(&self, listing: &InboxListing) -> usize {
        listing.pauses.iter().filter(|p| self.waits_for_me(p)).count()
    }

    /// Whose pauses `filter` lists for the login: what it says, else only theirs — every pause
    /// for a read-only console's reader, who decides none.
    pub fn show(&self, filter: &InboxFilter) -> Show {
        filter.show.unwrap_or(if self.read_only { Show::All } else { Show::Mine })
    }
}
