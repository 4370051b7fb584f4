//! The console (CONTRACT §15): sessions, one session's cycles and the inbox in a web page, and
//! the forms that approve or reject a pause. [`Console`] is a tower [`Service`] a program mounts
//! in its own server (axum's `nest_service`, hyper through `hyper-util`'s adapter), or serves
//! itself on a listener with [`Console::serve`], as `planlock serve` does, on planlock's one I/O
//! runtime ([`io_handle`](crate::io_handle)).
//!
//! Secure by default: every page but the login needs a signed-in browser (the console's token,
//! [`new_token`] or one given, at least 16 characters); every POST needs the login's CSRF token
//! and, when the browser sends one, an `Origin` equal to the console's own; every response
//! carries a strict Content-Security-Policy (no inline script or style) and every value is
//! escaped for its context (`templates.rs`); a read-only console serves no action. Bounded:
//! pages are paged, bodies capped at 16 KiB, headers at 16 KiB, a connection that sends no
//! request in 10 s is closed, at most 64 at once.
//!
//! Layer 8, beside the runtime (CONTRIBUTING.md, "The layers"; `tests/it/layers.rs` holds them).

mod auth;
mod decide;
mod events;
mod flash;
mod login;
mod pages;
mod posted;
mod read;
mod routes;
mod rules;
mod server;
mod templates;
mod view;

use std::sync::Arc;

use crate::contract::registry::{Failure, FailureKind};
use crate::review::access::Access;
use crate::review::inbox::Inbox;
use crate::text::printable;
use http_body_util::combinators::BoxBody;
use http_body_util::{BodyExt, Full};
use hyper::body::Bytes;
use hyper::header::{self, HeaderValue};
use hyper::{Request, Response, StatusCode};
use tower_service::Service;

use auth::{Auth, Login};
pub use auth::{FAILURE_WINDOW, LOCKOUT, LOGIN_LIFE, MAX_FAILURES, PROXY_SECRET_HEADER};
use pages::Forms;
use posted::posted;
use routes::Route;
pub use rules::RulesLog;
use rules::{LiveRules, Rules, Source};

const CSP: &str = "default-src 'none'; style-src 'self'; script-src 'self'; img-src 'self'; \
                   connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'";
const MAX_HEADERS: usize = 16 << 10;
/// The most connections [`Console::serve`] holds at once.
pub const MAX_CONNECTIONS: usize = 64;
/// The most connections one client address may hold at once: one client cannot take every slot.
pub const MAX_PER_CLIENT: usize = 16;
struct State {
    inbox: Inbox,
    auth: Auth,
    rules: LiveRules,
    read_only: bool,
    cache: view::Cache,
    flashes: flash::Flashes,
    trace_url: Option<String>,
}

/// What the console answers: a page (its body whole), or `/events`' stream.
pub type Answer = Response<BoxBody<Bytes, std::convert::Infallible>>;

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
    /// The secret an authenticating proxy sends in [`PROXY_SECRET_HEADER`] with every request;
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

/// The console of an [`Inbox`]'s sessions, signed in with `token`: a tower [`Service`] of HTTP
/// requests; see the [module docs](self).
///
/// ```
/// use planlock::console::{Console, ConsoleOptions, new_token};
/// use planlock::review::inbox::{Inbox, Sessions};
/// use tower_service::Service as _;
///
/// let dir = tempfile::tempdir()?;
/// let inbox = Inbox::new(Sessions::Dir(dir.path().to_owned()));
/// let mut console = Console::new(inbox, new_token(), ConsoleOptions::default())?;
/// let request = hyper::Request::get("/inbox").body(http_body_util::Empty::<hyper::body::Bytes>::new())?;
/// let answer = planlock::block_on(console.call(request)).unwrap();
/// assert_eq!(answer.status(), hyper::StatusCode::SEE_OTHER, "a stranger is sent to sign in");
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone)]
pub struct Console {
    state: Arc<State>,
}

impl std::fmt::Debug for Console {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Console").field("read_only", &self.state.read_only).finish_non_exhaustive()
    }
}

impl Console {
    /// The console of `inbox`, signed in with `token` (at least [`MIN_TOKEN_CHARS`]).
    pub fn new(inbox: Inbox, token: impl Into<String>, options: ConsoleOptions) -> Result<Console, ConsoleError> {
        let token = token.into();
        if token.chars().count() < MIN_TOKEN_CHARS {
            return Err(ConsoleError::Token);
        }
        if options.proxy_secret.as_ref().is_some_and(|s| s.chars().count() < MIN_TOKEN_CHARS) {
            return Err(ConsoleError::UserHeader(format!(
                "the proxy's shared secret (--proxy-secret-env) must be at least {MIN_TOKEN_CHARS} characters"
            )));
        }
        match (&options.user_header, &options.proxy_secret) {
            (Some(header), Some(_)) => identity_header(header).map_err(ConsoleError::UserHeader)?,
            (Some(_), None) => {
                return Err(ConsoleError::UserHeader(format!(
                    "a user header is taken only with the proxy's shared secret (--proxy-secret-env, at least \
                     {MIN_TOKEN_CHARS} characters), which the proxy sends in {PROXY_SECRET_HEADER} with every \
                     request, and rules naming the users it may carry"
                )));
            }
            (None, _) => {}
        }
        let source = match (options.access, options.access_file) {
            (Some(access), _) => Source::Given(access),
            (None, Some(path)) => Source::File(path),
            (None, None) => Source::Installed(inbox.backend_arc()),
        };
        let state = State {
            rules: LiveRules::new(source, options.rules_log),
            inbox,
            auth: Auth::new(token, options.user_header, options.proxy_secret),
            read_only: options.read_only,
            cache: view::Cache::default(),
            flashes: flash::Flashes::default(),
            trace_url: options.trace_url,
        };
        Ok(Console { state: Arc::new(state) })
    }

    /// Serves connections on `listener` until the process stops: at most [`MAX_CONNECTIONS`] at
    /// once and [`MAX_PER_CLIENT`] of one address, each closed when its client stops reading or
    /// sending. Runs on a tokio runtime (planlock's: [`io_handle`](crate::io_handle)).
    pub async fn serve(self, listener: tokio::net::TcpListener) {
        server::accept(listener, self.state).await
    }
}

impl<B> Service<Request<B>> for Console
where
    B: hyper::body::Body<Data = Bytes> + Send + 'static,
    B::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
{
    type Response = Answer;
    type Error = std::convert::Infallible;
    type Future = std::pin::Pin<Box<dyn std::future::Future<Output = Result<Answer, Self::Error>> + Send>>;

    fn poll_ready(&mut self, _: &mut std::task::Context<'_>) -> std::task::Poll<Result<(), Self::Error>> {
        std::task::Poll::Ready(Ok(()))
    }

    /// Answers `req` on planlock's I/O runtime (its timers and reads are tokio's), so that the
    /// answer can be awaited from any executor.
    fn call(&mut self, req: Request<B>) -> Self::Future {
        let state = self.state.clone();
        Box::pin(async move {
            let answered = match crate::io::runtime() {
                Ok(runtime) => runtime.spawn(async move { handle(&state, req).await }).await.ok(),
                Err(_) => None,
            };
            Ok(answered.unwrap_or_else(|| refused(StatusCode::INTERNAL_SERVER_ERROR, "the console could not answer")))
        })
    }
}

/// The headers an authenticating proxy may name its user in: not one a browser or the HTTP
/// exchange itself sets (`Host`, `Cookie` — the console's own login —, `Authorization`, the
/// forwarding headers …), and one whose name says it carries a person (`Remote-User`,
/// `X-Forwarded-User`, `X-Auth-Request-Email`, …).
fn identity_header(name: &str) -> Result<(), String> {
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

/// A response with the console's security headers.
fn respond(status: StatusCode, content_type: &'static str, body: impl Into<Bytes>) -> Answer {
    respond_with(status, content_type, Full::new(body.into()))
}

/// A response of `body` (whole, or a stream) with the console's security headers.
fn respond_with<B>(status: StatusCode, content_type: &'static str, body: B) -> Answer
where
    B: hyper::body::Body<Data = Bytes, Error = std::convert::Infallible> + Send + Sync + 'static,
{
    let mut response = Response::new(body.boxed());
    *response.status_mut() = status;
    let headers = response.headers_mut();
    headers.insert(header::CONTENT_TYPE, HeaderValue::from_static(content_type));
    headers.insert(header::CONTENT_SECURITY_POLICY, HeaderValue::from_static(CSP));
    headers.insert(header::X_CONTENT_TYPE_OPTIONS, HeaderValue::from_static("nosniff"));
    headers.insert(header::REFERRER_POLICY, HeaderValue::from_static("same-origin"));
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    headers.insert(header::X_FRAME_OPTIONS, HeaderValue::from_static("DENY"));
    response
}

fn html(status: StatusCode, body: String) -> Answer {
    respond(status, "text/html; charset=utf-8", body)
}

fn redirect(to: &str) -> Answer {
    let mut response = respond(StatusCode::SEE_OTHER, "text/plain; charset=utf-8", "");
    if let Ok(to) = HeaderValue::from_str(to) {
        response.headers_mut().insert(header::LOCATION, to);
    }
    response
}

fn refused(status: StatusCode, why: &str) -> Answer {
    html(status, templates::refused(why))
}

async fn handle<B>(console: &Arc<State>, req: Request<B>) -> Answer
where
    B: hyper::body::Body<Data = Bytes> + Send + 'static,
    B::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
{
    let route = Route::parse(req.method(), req.uri().path(), req.uri().query().unwrap_or(""));
    if let Route::Static(content_type, body) = route {
        return respond(StatusCode::OK, content_type, body);
    }
    // The rules as they are now: a person removed a moment ago is no longer signed in.
    let rules = console.rules.current().await;
    let login = match route.is_public() {
        true => None,
        false => match console.auth.login_of(&req, rules.access.as_deref()) {
            Some(login) => Some(login),
            // A decision by a person the rules no longer name is refused as such.
            None => match (&route, console.auth.revoked(&req)) {
                (Route::Decide { .. }, Some(name)) => {
                    let why = format!(
                        "{} may no longer decide: the access file no longer names them (not-an-approver)",
                        printable(&name)
                    );
                    return refused(StatusCode::FORBIDDEN, &why);
                }
                _ => return redirect("/login"),
            },
        },
    };
    match (route, login) {
        (Route::Static(content_type, body), _) => respond(StatusCode::OK, content_type, body),
        (Route::NoIcon, _) => respond(StatusCode::NO_CONTENT, "image/x-icon", ""),
        (Route::LoginForm, _) => login::login_form(console, &req, &rules),
        (Route::SignIn, _) => match posted(req, None).await {
            Ok(form) => login::sign_in(console, form, &rules),
            Err(refusal) => refusal,
        },
        (Route::SignOut, Some(login)) => match posted(req, Some(&login)).await {
            Ok(form) => login::sign_out(console, form),
            Err(refusal) => refusal,
        },
        (Route::MethodNotAllowed, _) => refused(StatusCode::METHOD_NOT_ALLOWED, "GET and POST only"),
        (Route::NotFound, _) | (_, None) => refused(StatusCode::NOT_FOUND, "no such page"),
        (Route::Home, _) => redirect("/sessions"),
        (Route::Events, Some(_)) => read::events(console, auth::cookie(&req, auth::COOKIE).unwrap_or_default()),
        (Route::Sessions { status, words, page }, Some(login)) => {
            read::sessions(console, status, &words, page, &console.forms(&login, &rules)).await
        }
        (Route::Inbox { filter, page, flash }, Some(login)) => {
            read::inbox(console, filter, page, flash.as_deref(), &console.forms(&login, &rules)).await
        }
        (Route::Pause { session, cycle, step, flash, back }, Some(login)) => match console.session_name(session) {
            Some(name) => {
                let forms = console.forms(&login, &rules);
                read::pause(console, &name, cycle, &step, (flash.as_deref(), &back), &forms).await
            }
            None => refused(StatusCode::NOT_FOUND, "no such page"),
        },
        (Route::Session(name), Some(login)) => match console.session_name(name) {
            Some(name) => read::session(console, &name, &console.forms(&login, &rules)).await,
            None => refused(StatusCode::NOT_FOUND, "no such page"),
        },
        (Route::Decide { session, verdict }, Some(login)) => match posted(req, Some(&login)).await {
            Ok(form) => decide::decide_on(console, session, verdict, (&login, &rules), form).await,
            Err(refusal) => refusal,
        },
    }
}

impl State {
    /// What a page's forms need for `login`: its CSRF token, who it is, where it may decide.
    fn forms<'a>(&'a self, login: &'a Login, rules: &'a Rules) -> Forms<'a> {
        Forms { login, read_only: self.read_only, rules }
    }
}

impl State {
    /// The session a path segment names (decoded): under a directory, one plain name of a root
    /// there (no separator, no `..`: nothing outside the directory); in a database, a key (1 to
    /// 256 bytes).
    fn session_name(&self, name: String) -> Option<String> {
        self.inbox.backend().is_session_name(&name).then_some(name)
    }
}
