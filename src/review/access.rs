//! The access file (CONTRACT §18): the people who may decide on a pause, their personal tokens
//! (only each token's SHA-256 is stored), which validators each may decide, how many
//! distinct approvals a validator needs, and what becomes of its pause when it expires
//! undecided (`onExpiry`: `wait`, the default, or `abandon`, which a worker applies).
//!
//! ```yaml
//! users:
//!   ada: { tokenSha256: "<64 hex>" }
//!   bob: { tokenSha256: "<64 hex>" }
//! validators:
//!   demo-review: { approvers: [ada, bob], required: 2, onExpiry: abandon }
//! webhooks:
//!   - url: "http://127.0.0.1:9000/hook"
//!     secretEnv: PLANLOCK_WEBHOOK_SECRET
//!     events: [pause.created, pause.decided, pause.expired, pause.resolved]
//! console: { url: "https://console.example.com" }
//! ```
//!
//! Read as the policy files are (a regular file, at most [`MAX_ACCESS_FILE_BYTES`], no link; the
//! JSON-compatible subset of YAML). A validator the file does not name may be decided by any of
//! its users, with one approval. Unknown fields, a rule naming an unknown user or one twice,
//! `required` larger than its approvers, a duplicate name, a token hash that is not 64 hex
//! digits, or two users with one token are refused, with the line.

use std::collections::BTreeMap;
use std::path::Path;

use serde::Deserialize;
use sha2::{Digest as _, Sha256};
use subtle::ConstantTimeEq;

use crate::contract::registry::{Failure, FailureKind};
use crate::fsread::{self, ReadError};

pub use crate::session::MAX_ACCESS_FILE_BYTES;

/// The events a webhook may ask for.
pub const WEBHOOK_EVENTS: [&str; 4] = ["pause.created", "pause.decided", "pause.expired", "pause.resolved"];

/// Why an access file was not used.
#[derive(Debug, thiserror::Error)]
#[error("{file}:{line}: {problem}")]
pub struct AccessError {
    /// The file, as it was named.
    pub file: String,
    /// The 1-based line the problem is on (1 when it is about the whole file).
    pub line: usize,
    /// What is wrong, and what to write instead.
    pub problem: String,
}

impl Failure for AccessError {
    /// `access-invalid`.
    fn code(&self) -> &'static str {
        "access-invalid"
    }

    /// FailFast: nothing runs on an access file that cannot be read as written.
    fn kind(&self) -> FailureKind {
        FailureKind::FailFast
    }
}

/// The file as written.
#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct AccessFile {
    users: BTreeMap<String, UserEntry>,
    #[serde(default)]
    validators: BTreeMap<String, RuleEntry>,
    #[serde(default)]
    webhooks: Vec<Webhook>,
    #[serde(default)]
    console: Option<ConsoleEntry>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct UserEntry {
    token_sha256: String,
    /// The tenant the person works in, in a database shared by tenants (CONTRACT §20).
    #[serde(default)]
    tenant: Option<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct RuleEntry {
    approvers: Vec<String>,
    #[serde(default = "one")]
    required: usize,
    #[serde(default)]
    on_expiry: OnExpiry,
}

/// What becomes of a validator's pause that expired undecided (`onExpiry` in its rule; CONTRACT
/// §21).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum OnExpiry {
    /// It waits for a person, who can only abandon it (the default).
    #[default]
    Wait,
    /// A worker abandons it, once, as a decision by `planlock` whose reason names the rule.
    Abandon,
}

fn one() -> usize {
    1
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct ConsoleEntry {
    url: String,
}

/// A receiver of the pause events, as the access file names it.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct Webhook {
    /// Where the events are POSTed.
    pub url: String,
    /// The environment variable holding its `whsec_…` secret (never the secret itself).
    pub secret_env: String,
    /// The events it receives (of [`WEBHOOK_EVENTS`]).
    pub events: Vec<String>,
}

/// Who may decide on a validator's pauses, and how many distinct approvals it needs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rule {
    /// The users who may approve or reject (every user of the file for a validator it does not
    /// name).
    pub approvers: Vec<String>,
    /// How many distinct approvals approve a pause.
    pub required: usize,
    /// What becomes of a pause that expired undecided.
    pub on_expiry: OnExpiry,
}

/// The access file, read and checked (see the [module docs](self)).
///
/// ```
/// use planlock::review::access::{Access, token_sha256};
/// let yaml = format!(
///     "users:\n  ada: {{ tokenSha256: \"{}\" }}\n  bob: {{ tokenSha256: \"{}\" }}\nvalidators:\n  demo-review: {{ approvers: [ada, bob], required: 2 }}\n",
///     token_sha256("ada's token"),
///     token_sha256("bob's token"),
/// );
/// let access = Access::parse("access.yaml", &yaml)?;
/// assert_eq!(access.sign_in("bob's token"), Some("bob"));
/// assert_eq!(access.sign_in("a guess"), None);
/// assert!(access.may_decide("ada", "demo-review"));
/// assert_eq!(access.rule("demo-review").required, 2);
/// assert_eq!(access.rule("another").required, 1); // any user, one approval
/// let refused = Access::parse("access.yaml", "users:\n  ada: { tokenSha256: \"00\" }\n").unwrap_err();
/// assert_eq!(refused.line, 2);
/// # Ok::<(), planlock::review::access::AccessError>(())
/// ```
#[derive(Debug, Clone)]
pub struct Access {
    /// Where it was read from, as messages name it.
    source: String,
    /// Each user's token hash, by name.
    users: BTreeMap<String, [u8; 32]>,
    /// The tenant of each user who names one.
    tenants: BTreeMap<String, String>,
    validators: BTreeMap<String, Rule>,
    webhooks: Vec<Webhook>,
    console_url: Option<String>,
}

/// The SHA-256 of `token`, as the access file writes it (64 lowercase hex digits).
pub fn token_sha256(token: &str) -> String {
    Sha256::digest(token.as_bytes()).iter().map(|b| format!("{b:02x}")).collect()
}

/// A fresh personal token (256 random bits, as 64 hex digits) and its `tokenSha256`: what
/// `planlock access new-token` prints once.
pub fn new_token() -> Result<(String, String), AccessError> {
    let mut bytes = [0u8; 32];
    getrandom::fill(&mut bytes).map_err(|e| AccessError {
        file: "(the system's random source)".into(),
        line: 1,
        problem: format!("no random bytes for a token: {e}"),
    })?;
    let token: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
    let hash = token_sha256(&token);
    Ok((token, hash))
}

impl Access {
    /// Reads the access file at `path`: a regular file (no link), at most
    /// [`MAX_ACCESS_FILE_BYTES`].
    pub fn load(path: &Path) -> Result<Access, AccessError> {
        Access::read(path).map(|(access, _)| access)
    }

    /// [`load`](Self::load), with the text as read: what `planlock access install` installs
    /// (the very text it checked).
    pub fn read(path: &Path) -> Result<(Access, String), AccessError> {
        let name = path.display().to_string();
        let fail = |problem: String| AccessError { file: name.clone(), line: 1, problem };
        let bytes = match fsread::read_regular(path, MAX_ACCESS_FILE_BYTES) {
            Ok(bytes) => bytes,
            Err(ReadError::NotFound) => return Err(fail("there is no such file".into())),
            Err(ReadError::NotRegular(what)) => return Err(fail(format!("it is {what}; name the file itself"))),
            Err(ReadError::TooLarge) => {
                return Err(fail(format!("it is larger than {MAX_ACCESS_FILE_BYTES} bytes")));
            }
            Err(ReadError::Io(op, e)) => return Err(fail(format!("cannot {op} it: {e}"))),
        };
        let text = String::from_utf8(bytes).map_err(|_| fail("it is not UTF-8 text".into()))?;
        Ok((Access::parse(&name, &text)?, text))
    }

    /// The access file `text`, named `file` in errors.
    pub fn parse(file: &str, text: &str) -> Result<Access, AccessError> {
        let at = |line: usize, problem: String| AccessError { file: file.to_owned(), line, problem };
        let value = crate::hash::yaml::parse(file, text).map_err(|e| at(e.line, e.message))?;
        let written: AccessFile = serde_json::from_value(value).map_err(|e| {
            let problem = e.to_string();
            // serde names the field in backquotes; its line is where it is written.
            let line = problem.split('`').nth(1).map_or(1, |field| line_of(text, field));
            at(line, format!("{problem} (the access file has users, validators, webhooks and console)"))
        })?;
        let mut users = BTreeMap::new();
        let mut tenants = BTreeMap::new();
        let mut hashes: Vec<(&str, [u8; 32])> = Vec::new();
        for (name, entry) in &written.users {
            crate::review::check_decider(name).map_err(|e| at(line_of(text, name), e))?;
            let hash = parse_hash(&entry.token_sha256).ok_or_else(|| {
                at(
                    line_of(text, name),
                    format!(
                        "user `{}`: tokenSha256 must be 64 hex digits (the SHA-256 of the token, as `planlock access new-token` prints it)",
                        crate::text::printable(name)
                    ),
                )
            })?;
            if hash == <[u8; 32]>::from(Sha256::digest(b"")) {
                return Err(at(
                    line_of(text, name),
                    format!(
                        "user `{}`: tokenSha256 is the hash of the empty token, which would let anyone sign in as them; make a token with `planlock access new-token`",
                        crate::text::printable(name)
                    ),
                ));
            }
            if let Some((other, _)) = hashes.iter().find(|(_, h)| *h == hash) {
                return Err(at(
                    line_of(text, name),
                    format!("users `{other}` and `{name}` have one token; give each person a token of their own"),
                ));
            }
            hashes.push((name, hash));
            users.insert(name.clone(), hash);
            if let Some(tenant) = &entry.tenant {
                tenants.insert(name.clone(), tenant.clone());
            }
        }
        let mut validators = BTreeMap::new();
        for (id, rule) in written.validators {
            let line = line_of(text, &id);
            let mut approvers: Vec<String> = Vec::with_capacity(rule.approvers.len());
            for user in rule.approvers {
                if !users.contains_key(&user) {
                    return Err(at(line, format!("validator `{id}` names `{user}`, who is not among the users")));
                }
                if approvers.contains(&user) {
                    return Err(at(line, format!("validator `{id}` names `{user}` twice")));
                }
                approvers.push(user);
            }
            if rule.required == 0 || rule.required > approvers.len() {
                return Err(at(
                    line,
                    format!(
                        "validator `{id}` needs {} approvals from {} approvers; `required` is 1 to the number of approvers",
                        rule.required,
                        approvers.len()
                    ),
                ));
            }
            validators.insert(id, Rule { approvers, required: rule.required, on_expiry: rule.on_expiry });
        }
        for hook in &written.webhooks {
            let line = line_with(text, &hook.url);
            if !(hook.url.starts_with("http://") || hook.url.starts_with("https://")) {
                return Err(at(line, format!("webhook `{}`: the url must be http:// or https://", hook.url)));
            }
            if let Some(event) = hook.events.iter().find(|e| !WEBHOOK_EVENTS.contains(&e.as_str())) {
                return Err(at(
                    line,
                    format!("webhook `{}`: unknown event `{event}` (one of {WEBHOOK_EVENTS:?})", hook.url),
                ));
            }
            if hook.secret_env.is_empty() {
                return Err(at(line, format!("webhook `{}`: secretEnv must name a variable", hook.url)));
            }
        }
        Ok(Access {
            source: file.to_owned(),
            users,
            tenants,
            validators,
            webhooks: written.webhooks,
            console_url: written.console.map(|c| c.url.trim_end_matches('/').to_owned()),
        })
    }

    /// The rules installed where sessions live (CONTRACT §18, amended), read as a file is.
    pub fn installed(installed: &crate::session::InstalledAccess) -> Result<Access, AccessError> {
        Access::parse(&installed.source, &installed.text)
    }

    /// Where the rules were read from (a file's path, or the database and tenant).
    pub fn source(&self) -> &str {
        &self.source
    }

    /// Whether `other` says the same rules (wherever each was read from): the same people with
    /// the same tokens and tenants, validators, webhooks and console address.
    pub fn same_rules(&self, other: &Access) -> bool {
        self.users == other.users
            && self.tenants == other.tenants
            && self.validators == other.validators
            && self.webhooks == other.webhooks
            && self.console_url == other.console_url
    }

    /// The user whose personal token is `token`, if any. Every user's hash is compared, each in
    /// constant time, so how long it takes says nothing about which one matched or how closely.
    pub fn sign_in(&self, token: &str) -> Option<&str> {
        // An empty token is no one's, whatever a file says (it refuses the empty token's hash).
        if token.is_empty() {
            return None;
        }
        let presented: [u8; 32] = Sha256::digest(token.as_bytes()).into();
        let mut found = None;
        for (name, hash) in &self.users {
            if bool::from(presented.ct_eq(hash)) {
                found = Some(name.as_str());
            }
        }
        found
    }

    /// Whether `user` is a user of the file.
    pub fn is_user(&self, user: &str) -> bool {
        self.users.contains_key(user)
    }

    /// The users, by name.
    pub fn users(&self) -> impl Iterator<Item = &str> {
        self.users.keys().map(String::as_str)
    }

    /// Who may decide on `validator`'s pauses, and how many approvals they need: the file's rule,
    /// or every user with one approval for a validator it does not name.
    pub fn rule(&self, validator: &str) -> Rule {
        self.validators.get(validator).cloned().unwrap_or_else(|| Rule {
            approvers: self.users.keys().cloned().collect(),
            required: 1,
            on_expiry: OnExpiry::Wait,
        })
    }

    /// Whether `user` may approve or reject `validator`'s pauses.
    pub fn may_decide(&self, user: &str, validator: &str) -> bool {
        match self.validators.get(validator) {
            Some(rule) => rule.approvers.iter().any(|a| a == user),
            None => self.is_user(user),
        }
    }

    /// The tenant a console for these people serves (CONTRACT §20: one per console): `given`
    /// (its `--tenant`) if any, else the one the users name (`tenant:` beside their token).
    /// Refused: users of several tenants, or of another than `given`, in the file of one
    /// console.
    ///
    /// ```
    /// use planlock::review::access::{Access, token_sha256};
    /// let file = format!("users:\n  ada: {{ tokenSha256: \"{}\", tenant: acme }}\n", token_sha256("a"));
    /// let access = Access::parse("access.yaml", &file)?;
    /// assert_eq!(access.tenant(None)?, Some("acme".to_owned()));
    /// assert!(access.tenant(Some("globex")).is_err());
    /// # Ok::<(), planlock::review::access::AccessError>(())
    /// ```
    pub fn tenant(&self, given: Option<&str>) -> Result<Option<String>, AccessError> {
        let named: std::collections::BTreeSet<&str> = self.tenants.values().map(String::as_str).collect();
        let refuse = |problem: String| AccessError { file: "the access file".into(), line: 1, problem };
        match (given, named.len()) {
            (Some(given), _) => match self.tenants.iter().find(|(_, t)| *t != given) {
                Some((user, tenant)) => Err(refuse(format!(
                    "user `{user}` works in tenant `{}`, but this console serves `{}`",
                    crate::text::printable(tenant),
                    crate::text::printable(given)
                ))),
                None => Ok(Some(given.to_owned())),
            },
            (None, 0) => Ok(None),
            (None, 1) => Ok(named.first().map(|t| (*t).to_owned())),
            (None, _) => Err(refuse(format!(
                "its users work in several tenants ({}): a console serves one; start one per tenant with --tenant",
                named.iter().map(|t| crate::text::printable(t)).collect::<Vec<_>>().join(", ")
            ))),
        }
    }

    /// The validators the file names, with their rules (any other: every user, one approval).
    pub fn validators(&self) -> impl Iterator<Item = (&str, &Rule)> {
        self.validators.iter().map(|(id, rule)| (id.as_str(), rule))
    }

    /// The webhooks.
    pub fn webhooks(&self) -> &[Webhook] {
        &self.webhooks
    }

    /// The console's address for links in notifications, without a trailing `/`.
    pub fn console_url(&self) -> Option<&str> {
        self.console_url.as_deref()
    }
}

/// 64 hex digits, as 32 bytes.
fn parse_hash(hex: &str) -> Option<[u8; 32]> {
    if hex.len() != 64 || !hex.bytes().all(|b| b.is_ascii_hexdigit()) {
        return None;
    }
    let mut out = [0u8; 32];
    for (i, byte) in out.iter_mut().enumerate() {
        *byte = u8::from_str_radix(&hex[2 * i..2 * i + 2], 16).ok()?;
    }
    Some(out)
}

/// The 1-based line where `key` is first written as a mapping's key, plain or quoted, in block or
/// flow style (1 when it is not found): what an error about a name points at.
fn line_of(text: &str, key: &str) -> usize {
    let forms = [format!("{key}:"), format!("\"{key}\":"), format!("'{key}':")];
    let is_key = |line: &str| {
        line.split(['{', ',', '-'])
            .map(str::trim_start)
            .any(|part| forms.iter().any(|form| part.starts_with(form.as_str())))
    };
    text.lines().position(is_key).map_or(1, |at| at + 1)
}

/// The 1-based line where `value` is first written (1 when it is not found).
fn line_with(text: &str, value: &str) -> usize {
    text.lines().position(|line| line.contains(value)).map_or(1, |at| at + 1)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn file(rest: &str) -> String {
        format!(
            "users:\n  ada: {{ tokenSha256: \"{}\" }}\n  bob: {{ tokenSha256: \"{}\" }}\n{rest}",
            token_sha256("a"),
            token_sha256("b")
        )
    }

    #[test]
    fn every_mistake_is_refused_with_its_line() {
        let cases = [
            ("validators:\n  v: { approvers: [ada, eve] }\n", 5, "not among the users"),
            ("validators:\n  v: { approvers: [ada], required: 2 }\n", 5, "needs 2 approvals from 1"),
            ("validators:\n  v: { approvers: [ada, ada] }\n", 5, "twice"),
            ("validators:\n  v: { approvers: [ada], requierd: 1 }\n", 5, "unknown field `requierd`"),
            ("console: { url: \"x\" }\ncolour: red\n", 5, "unknown field `colour`"),
            ("users:\n  eve: {}\n", 4, "more than once"),
            ("webhooks:\n  - { url: \"ftp://x\", secretEnv: S, events: [pause.created] }\n", 5, "http"),
            ("webhooks:\n  - { url: \"http://x\", secretEnv: S, events: [pause.eaten] }\n", 5, "unknown event"),
        ];
        for (rest, line, says) in cases {
            let err = Access::parse("a.yaml", &file(rest)).unwrap_err();
            assert_eq!(err.line, line, "{rest}: {err}");
            assert!(err.to_string().contains(says), "{rest}: {err}");
            assert_eq!((err.code(), err.kind()), ("access-invalid", FailureKind::FailFast));
        }
        let empty = format!("users:\n  ada: {{ tokenSha256: \"{}\" }}\n", token_sha256(""));
        let refused = Access::parse("a.yaml", &empty).unwrap_err();
        assert!(refused.to_string().contains("empty token") && refused.line == 2, "{refused}");
        let same =
            "users:\n  ada: { tokenSha256: \"%\" }\n  bob: { tokenSha256: \"%\" }\n".replace('%', &token_sha256("x"));
        assert!(Access::parse("a.yaml", &same).unwrap_err().to_string().contains("one token"));
    }

    #[test]
    fn a_fresh_token_signs_its_user_in_and_no_other() {
        let (token, hash) = new_token().unwrap();
        assert_eq!((token.len(), hash.len()), (64, 64));
        assert_ne!(new_token().unwrap().0, token, "fresh each time");
        let access = Access::parse("a.yaml", &format!("users:\n  ada: {{ tokenSha256: \"{hash}\" }}\n")).unwrap();
        assert_eq!(access.sign_in(&token), Some("ada"));
        assert_eq!(access.sign_in(&hash), None, "the hash is not the token");
        assert_eq!(access.sign_in(""), None);
    }
}
