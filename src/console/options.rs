//! How a console is made: its token, its [`ConsoleOptions`], and why it cannot be
//! ([`ConsoleError`]).

use std::sync::Arc;

use super::auth;
use super::rules::RulesLog;
use crate::contract::registry::{Failure, FailureKind};
use crate::review::access::Access;
use crate::text::printable;

/// A fresh console token: 256 random bits, as hex.
pub fn new_token() -> String {
    auth::secret()
}

/// The shortest console token taken.
pub const MIN_TOKEN_CHARS: usize = 16;

/// How a console serves, besides its inbox and token.
#[derive(Debug, Clone, Default)]
#[non_exhaustive]
pub struct ConsoleOptions {
    /// Serve no action: no form is shown and every POST is refused.
    pub read_only: bool,
    /// The header an authenticating proxy in front names the person in (`Remote-User`, …):
    /// decisions are recorded as that person's. Taken only with an access file (the header must
    /// name one of its users) and the proxy's shared secret.
    pub user_header: Option<String>,
    /// Rules a program gives (CONTRACT §18) where none are installed: people sign in with their
    /// personal tokens (the console's token is then not used), and decide only where they allow
    /// them. Without these, [`access_file`](Self::access_file) or installed rules, one operator
    /// signs in with the console's token and a name, recorded as unverified.
    pub access: Option<Arc<Access>>,
    /// An access file (`--access FILE`) where none is installed, followed as it changes. By
    /// default the console follows the rules installed where its sessions live
    /// (`planlock access install`).
    pub access_file: Option<std::path::PathBuf>,
    /// Where the console says that its rules changed or cannot be read (default: a `tracing`
    /// warning).
    pub rules_log: Option<RulesLog>,
    /// The secret an authenticating proxy sends in [`PROXY_SECRET_HEADER`](super::PROXY_SECRET_HEADER) with every request;
    /// needed with [`user_header`](Self::user_header).
    pub proxy_secret: Option<String>,
    /// A trace UI's address of one trace, with `{traceId}` where the trace's id goes
    /// (`http://127.0.0.1:6006/projects/…/traces/{traceId}`): each cycle of a session's page
    /// links to its trace.
    pub trace_url: Option<String>,
}

impl ConsoleOptions {
    /// With [`read_only`](Self::read_only) set to `yes`.
    pub fn read_only(mut self, yes: bool) -> Self {
        self.read_only = yes;
        self
    }

    /// With [`user_header`](Self::user_header) set to `name`.
    pub fn user_header(mut self, name: Option<String>) -> Self {
        self.user_header = name;
        self
    }

    /// With the access file `access`.
    pub fn access(mut self, access: Option<Access>) -> Self {
        self.access = access.map(Arc::new);
        self
    }

    /// With the access file at `path`, followed as it changes.
    pub fn access_file(mut self, path: Option<std::path::PathBuf>) -> Self {
        self.access_file = path;
        self
    }

    /// With `log` told when the rules change or cannot be read.
    pub fn rules_log(mut self, log: RulesLog) -> Self {
        self.rules_log = Some(log);
        self
    }

    /// With the proxy's shared secret.
    pub fn proxy_secret(mut self, secret: Option<String>) -> Self {
        self.proxy_secret = secret;
        self
    }

    /// With the trace UI's address template (`{traceId}` in it).
    pub fn trace_url(mut self, template: Option<String>) -> Self {
        self.trace_url = template;
        self
    }
}

/// Why a console could not be made.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ConsoleError {
    /// The token is too short to be a secret.
    #[error("the console's token must be at least {MIN_TOKEN_CHARS} characters")]
    Token,
    /// The user header is not one a proxy names its user in.
    #[error("{0}")]
    UserHeader(String),
}

impl Failure for ConsoleError {
    /// `"console-token"` or `"user-header"`.
    fn code(&self) -> &'static str {
        match self {
            ConsoleError::Token => "console-token",
            ConsoleError::UserHeader(_) => "user-header",
        }
    }

    fn kind(&self) -> FailureKind {
        FailureKind::FailFast
    }
}

/// The headers an authenticating proxy may name its user in: not one a browser or the HTTP
/// exchange itself sets (`Host`, `Cookie` — the console's own login —, `Authorization`, the
/// forwarding headers …), and one whose name says it carries a person (`Remote-User`,
/// `X-Forwarded-User`, `X-Auth-Request-Email`, …).
pub(super) fn identity_header(name: &str) -> Result<(), String> {
    const NOT_IDENTITY: &[&str] = &[
        "host",
        "cookie",
        "set-cookie",
        "authorization",
        "proxy-authorization",
        "origin",
        "referer",
        "user-agent",
        "content-type",
        "content-length",
        "connection",
        "accept",
        "x-forwarded-for",
        "x-forwarded-host",
        "x-forwarded-proto",
        "x-real-ip",
        "forwarded",
        "via",
    ];
    const IDENTITY_WORDS: &[&str] = &["user", "email", "login", "identity", "principal", "subject"];
    let lower = name.to_ascii_lowercase();
    let valid = hyper::header::HeaderName::from_bytes(name.as_bytes()).is_ok();
    if !valid || NOT_IDENTITY.contains(&lower.as_str()) || !IDENTITY_WORDS.iter().any(|w| lower.contains(w)) {
        return Err(format!(
            "--user-header `{}` is not a header a proxy names its user in: give one such as Remote-User, \
             X-Forwarded-User or X-Auth-Request-Email (the name must say user, email, login, identity, principal \
             or subject, and not be one the browser sends, such as Host, Cookie or User-Agent)",
            printable(name)
        ));
    }
    Ok(())
}
