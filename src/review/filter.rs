//! Which pauses a reviewer asks for (CONTRACT §15): the one filter of `planlock inbox list` and
//! of the console's inbox, read from the same named parameters ([`InboxFilter::set`]) — the
//! console's GET parameters (`?validator=…&stepType=…&state=…&olderThan=…&q=…&order=…`, what a
//! link carries) and the command's flags — and matched by one function.

use std::time::Duration;

use crate::contract::registry::{Failure, FailureKind, StepType};

/// The most words a search takes (the rest are not looked for), and the longest it reads.
pub const MAX_WORDS: usize = 8;
const MAX_QUERY_CHARS: usize = 200;

/// Where a pause stands, as a filter names it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum PauseState {
    /// Nothing is decided on it yet and it has not expired.
    Waiting,
    /// A decision is recorded (acted on at the session's next run), or some of the approvals
    /// it needs are (`1 of 2`).
    Decided,
    /// It waited past its expiry: it can only be abandoned.
    Expired,
}

impl PauseState {
    /// Every state, in the order a page offers them.
    pub const ALL: [PauseState; 3] = [PauseState::Waiting, PauseState::Decided, PauseState::Expired];

    /// Its name: `waiting`, `decided`, `expired`.
    pub fn as_str(self) -> &'static str {
        match self {
            PauseState::Waiting => "waiting",
            PauseState::Decided => "decided",
            PauseState::Expired => "expired",
        }
    }
}

/// Whose pauses the console lists (`show`): the default is [`Show::Mine`] for a person who
/// may decide, and every pause for a read-only console's reader. The CLI lists every pause.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Show {
    /// Only the pauses waiting for the signed-in person: ones they may decide, not expired, not
    /// decided, and not approved by them already (what the inbox's count counts).
    Mine,
    /// Every pause the other filters ask for.
    All,
}

impl Show {
    /// Its name: `mine` or `all`.
    pub fn as_str(self) -> &'static str {
        match self {
            Show::Mine => "mine",
            Show::All => "all",
        }
    }
}

/// Which pauses to list, and in what order.
///
/// ```
/// use planlock::review::inbox::{InboxFilter, PauseState};
/// let mut filter = InboxFilter::default();
/// filter.set("state", "waiting")?;
/// filter.set("olderThan", "15m")?;
/// filter.set("q", "Refund  ada")?;
/// assert_eq!(filter.state, Some(PauseState::Waiting));
/// assert_eq!(filter.older_than, Some(std::time::Duration::from_secs(900)));
/// assert_eq!(filter.words(), ["refund", "ada"]);
/// // The message names the parameter and what it takes, never the value from the URL.
/// assert_eq!(filter.set("state", "lost").unwrap_err().to_string(),
///            "`state`: takes one of waiting, decided, expired");
/// # Ok::<(), planlock::review::inbox::FilterError>(())
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct InboxFilter {
    /// Only this validator's.
    pub validator: Option<String>,
    /// Only pauses at this step type.
    pub step_type: Option<StepType>,
    /// Only pauses at least this old.
    pub older_than: Option<Duration>,
    /// Only expired ones (`Some(true)`) or only live ones (`Some(false)`).
    pub expired: Option<bool>,
    /// Only pauses that stand so.
    pub state: Option<PauseState>,
    /// Only pauses whose session name, step id, reason or decision's reason holds every one of
    /// these words (any case): what [`set`](Self::set)`("q", …)` takes, lowercased, at most
    /// [`MAX_WORDS`].
    pub q: Vec<String>,
    /// Newest first (else oldest first: the one waiting longest on top).
    pub newest_first: bool,
    /// Whose pauses the console lists (`None`: its default); see [`Show`].
    pub show: Option<Show>,
}

/// A filter parameter that is not one, or a value it does not take. Its message names the
/// parameter (a plain name; any other is "a parameter") and what it takes, and never repeats a
/// value: text from a URL is never shown as if the console said it (CONTRACT §15).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{name}: {expected}")]
pub struct FilterError {
    /// The parameter, as the message names it: `` `stepType` ``, or "a parameter" for a name
    /// that is not a plain one.
    pub name: String,
    /// Its value, printable and cut to 64 characters (for a program; the message leaves it out).
    pub value: String,
    /// What it takes.
    pub expected: String,
}

impl Failure for FilterError {
    /// `"invalid-filter"`.
    fn code(&self) -> &'static str {
        "invalid-filter"
    }

    fn kind(&self) -> FailureKind {
        FailureKind::FailFast
    }
}

/// The parameters a filter takes, by name: the console's GET parameters and the CLI's flags.
pub const PARAMETERS: [&str; 7] = ["validator", "stepType", "state", "olderThan", "q", "order", "show"];

impl InboxFilter {
    /// Sets parameter `name` (one of [`PARAMETERS`]) from `value`; an empty value leaves it
    /// unset (a form's empty field). A name that is not a parameter is refused too.
    pub fn set(&mut self, name: &str, value: &str) -> Result<(), FilterError> {
        let value = value.trim();
        let plain = !name.is_empty()
            && name.len() <= 32
            && name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-');
        let refuse = |expected: String| FilterError {
            name: if plain { format!("`{name}`") } else { "a parameter".to_owned() },
            value: crate::text::printable(value).chars().take(64).collect(),
            expected,
        };
        if value.is_empty() {
            return match PARAMETERS.contains(&name) {
                true => Ok(()),
                false => Err(refuse(format!("not a filter: give one of {}", PARAMETERS.join(", ")))),
            };
        }
        match name {
            "validator" => self.validator = Some(value.to_owned()),
            "stepType" => {
                let names = || StepType::ALL.iter().map(|t| t.wire_name()).collect::<Vec<_>>().join(", ");
                self.step_type =
                    Some(StepType::from_wire(value).ok_or_else(|| refuse(format!("takes one of {}", names())))?);
            }
            "state" => {
                let state = PauseState::ALL.into_iter().find(|s| s.as_str() == value);
                self.state = Some(state.ok_or_else(|| refuse("takes one of waiting, decided, expired".to_owned()))?);
            }
            "olderThan" => self.older_than = Some(parse_duration(value).map_err(refuse)?),
            "q" => {
                let text: String = value.chars().take(MAX_QUERY_CHARS).collect();
                self.q = text.split_whitespace().take(MAX_WORDS).map(str::to_lowercase).collect();
            }
            "order" => {
                self.newest_first = match value {
                    "newest" => true,
                    "oldest" => false,
                    _ => return Err(refuse("takes newest or oldest".to_owned())),
                }
            }
            "show" => {
                let show = [Show::Mine, Show::All].into_iter().find(|s| s.as_str() == value);
                self.show = Some(show.ok_or_else(|| refuse("takes mine or all".to_owned()))?);
            }
            _ => return Err(refuse(format!("not a filter: give one of {}", PARAMETERS.join(", ")))),
        }
        Ok(())
    }

    /// The filter of `pairs` (name, value): every parameter a query string holds. Names that
    /// are not filters are refused, as are values a filter does not take.
    pub fn from_pairs<'a>(pairs: impl IntoIterator<Item = (&'a str, &'a str)>) -> Result<InboxFilter, FilterError> {
        let mut filter = InboxFilter::default();
        for (name, value) in pairs {
            filter.set(name, value)?;
        }
        Ok(filter)
    }

    /// The words searched for.
    pub fn words(&self) -> &[String] {
        &self.q
    }

    /// Whether `text` (a session's name) holds every word searched for, in any case.
    pub fn holds_words(&self, text: &str) -> bool {
        holds_words(&self.q, text)
    }

    /// The parameters of this filter, as a query string a link carries (empty when it asks for
    /// everything), in the order of [`PARAMETERS`].
    #[cfg(feature = "console")]
    #[cfg_attr(docsrs, doc(cfg(feature = "console")))]
    pub fn to_query(&self) -> String {
        let mut query = form_urlencoded::Serializer::new(String::new());
        if let Some(v) = &self.validator {
            query.append_pair("validator", v);
        }
        if let Some(t) = self.step_type {
            query.append_pair("stepType", t.wire_name());
        }
        if let Some(s) = self.state {
            query.append_pair("state", s.as_str());
        }
        if let Some(age) = self.older_than {
            query.append_pair("olderThan", &format!("{}s", age.as_secs()));
        }
        if !self.q.is_empty() {
            query.append_pair("q", &self.q.join(" "));
        }
        if self.newest_first {
            query.append_pair("order", "newest");
        }
        if let Some(show) = self.show {
            query.append_pair("show", show.as_str());
        }
        query.finish()
    }
}

/// Whether `text` holds every one of `words` (lowercase), in any case.
pub(crate) fn holds_words(words: &[String], text: &str) -> bool {
    let text = text.to_lowercase();
    words.iter().all(|w| text.contains(w.as_str()))
}

/// A duration as a person writes one: a number and a unit, `90s`, `15m`, `2h`, `1d`.
///
/// ```
/// use planlock::review::inbox::parse_duration;
/// assert_eq!(parse_duration("2h"), Ok(std::time::Duration::from_secs(7200)));
/// assert!(parse_duration("2").is_err());
/// ```
pub fn parse_duration(s: &str) -> Result<Duration, String> {
    let split = s.find(|c: char| !c.is_ascii_digit()).unwrap_or(s.len());
    let (number, unit) = s.split_at(split);
    let n: u64 = number.parse().map_err(|_| "write a number and a unit (90s, 15m, 2h, 1d)".to_owned())?;
    let seconds = match unit {
        "s" => 1,
        "m" => 60,
        "h" => 3600,
        "d" => 86_400,
        _ => return Err("give a unit: s, m, h or d (90s, 15m, 2h, 1d)".to_owned()),
    };
    n.checked_mul(seconds).map(Duration::from_secs).ok_or_else(|| "it is too long".to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    #[cfg(feature = "console")]
    fn a_filter_goes_to_a_link_and_back() {
        let mut filter = InboxFilter::from_pairs([
            ("validator", "pii-guard"),
            ("stepType", "PersistMemory"),
            ("state", "expired"),
            ("olderThan", "2m"),
            ("q", "a&b  c"),
            ("order", "newest"),
            ("show", "all"),
        ])
        .unwrap();
        let query = filter.to_query();
        let back = InboxFilter::from_pairs(
            form_urlencoded::parse(query.as_bytes()).collect::<Vec<_>>().iter().map(|(k, v)| (k.as_ref(), v.as_ref())),
        )
        .unwrap();
        assert_eq!(back, filter);
        filter.set("q", "").unwrap();
        assert_eq!(filter.q, ["a&b", "c"], "an empty field leaves it as it was");
        assert_eq!(InboxFilter::from_pairs([("page", "2")]).unwrap_err().code(), "invalid-filter");
        assert!(InboxFilter::from_pairs([("olderThan", "99999999999999999999d")]).is_err());
    }
}
