//! Whose turn it is on a pause that needs several approvals (CONTRACT §18: whoever shows a
//! partial approval names who approved and who may still approve).

use serde::Serialize;

use super::access::Rule;

/// Where a pause that needs several approvals stands: who approved (in order), how many it
/// needs, and who of its approvers may still approve.
///
/// ```
/// use planlock::review::Turn;
/// use planlock::review::access::Rule;
/// let approvers = vec!["ada".into(), "bob".into(), "cy".into()];
/// let rule = Rule { approvers, required: 2, on_expiry: planlock::review::access::OnExpiry::Wait };
/// let turn = Turn::of(&rule, vec!["ada".into()]);
/// assert_eq!(turn.to_string(), "1 of 2: ada approved; bob or cy may approve");
/// assert!(!turn.complete() && turn.may_approve("bob") && !turn.may_approve("ada"));
/// assert_eq!(turn.waiting_for(), "bob or cy");
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Turn {
    /// Who approved so far, in the order they did.
    pub approved: Vec<String>,
    /// How many distinct approvals approve the pause.
    pub required: usize,
    /// The approvers who have not approved yet.
    pub may_still_approve: Vec<String>,
}

impl Turn {
    /// The turn on a pause of `rule` that `approved` have approved.
    pub fn of(rule: &Rule, approved: Vec<String>) -> Turn {
        let may_still_approve = rule.approvers.iter().filter(|a| !approved.contains(a)).cloned().collect();
        Turn { approved, required: rule.required, may_still_approve }
    }

    /// Whether enough people approved.
    pub fn complete(&self) -> bool {
        self.approved.len() >= self.required
    }

    /// Who the pause waits for, as a person reads it: "bob", "bob or cy", or "nobody".
    pub fn waiting_for(&self) -> String {
        either(&self.may_still_approve)
    }

    /// Whether `name` may still approve (an approver who has not yet).
    pub fn may_approve(&self, name: &str) -> bool {
        !self.complete() && self.may_still_approve.iter().any(|a| a == name)
    }
}

/// `names` as a person reads them: "ada", "ada, bob or cy", or "nobody".
fn either(names: &[String]) -> String {
    let shown: Vec<String> = names.iter().map(|n| crate::text::printable(n).into_owned()).collect();
    match shown.as_slice() {
        [] => "nobody".to_owned(),
        [one] => one.clone(),
        [rest @ .., last] => format!("{} or {last}", rest.join(", ")),
    }
}

impl std::fmt::Display for Turn {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} of {}: ", self.approved.len(), self.required)?;
        if !self.approved.is_empty() {
            let approved: Vec<String> = self.approved.iter().map(|n| crate::text::printable(n).into_owned()).collect();
            write!(f, "{} approved; ", approved.join(", "))?;
        }
        match self.may_still_approve.is_empty() {
            true => write!(f, "nobody else may approve"),
            false => write!(f, "{} may approve", either(&self.may_still_approve)),
        }
    }
}
