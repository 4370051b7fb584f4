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
//! Layer 8 (beside the runtime): imports the reviewer's domain, the backends and sessions.

mod auth;
mod pages;
mod routes;
mod templates;
mod view;

use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use crate::contract::registry::{Failure, FailureKind};
use crate::review::access::Access;
use crate::review::decide_with;
use crate::review::inbox::Inbox;
use crate::session::{Recorded, ReviewDecision, ReviewVerdict, Via};
use crate::text::printable;
use http_body_util::{BodyExt, Full, Limited};
use hyper::body::Bytes;
use hyper::header::{self, HeaderValue};
use hyper::{Request, Response, StatusCode};
use tower_service::Service;

use auth::{Auth, COOKIE, ClientAddr, Login, Refusal, same_secret};
pub use auth::{FAILURE_WINDOW, LOCKOUT, LOGIN_LIFE, MAX_FAILURES, PROXY_SECRET_HEADER};
use pages::{Forms, PAUSES_PER_PAGE, PER_PAGE};
use routes::Route;

const CSP: &str = "default-src 'none'; style-src 'self'; script-src 'self'; img-src 'self'; \
                   form-action 'self'; frame-ancestors 'none'; base-uri 'none'";
const MAX_BODY: usize = 16 << 10;
const MAX_HEADERS: usize = 16 << 10;
/// The most connections [`Console::serve`] holds at once.
pub const MAX_CONNECTIONS: usize = 64;
/// The most connections one client address may hold at once: one client cannot take every slot.
pub const MAX_PER_CLIENT: usize = 16;
/// How long a client has to send a request's headers, and then its body.
const HEADER_TIME: Duration = Duration::from_secs(10);
const BODY_TIME: Duration = Duration::from_secs(10);
/// How long a write may wait for a client that does not read (pipelined requests never read
/// hold a connection and its response in memory), and a read for one that sends nothing (an
/// idle kept-alive connection): then the connection is closed.
const WRITE_TIME: Duration = Duration::from_secs(10);
const IDLE_TIME: Duration = Duration::from_secs(30);
/// The kernel's send buffer of a connection: what a client that does not read can leave
/// waiting there (64 connections: 4 MiB at most, not the hundreds the autotuned default allows).
const SEND_BUFFER: usize = 64 << 10;
struct State {
    inbox: Inbox,
    auth: Auth,
    read_only: bool,
    cache: view::Cache,
}

/// What the console answers.
pub type Answer = Response<Full<Bytes>>;

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
    /// The access file (CONTRACT §18): people sign in with their personal tokens (the console's
    /// token is then not used), and decide only where it allows them. Without it one operator
    /// signs in with the console's token and a name, recorded as unverified.
    pub access: Option<Arc<Access>>,
    /// The secret an authenticating proxy sends in [`PROXY_SECRET_HEADER`] with every request;
    /// needed with [`user_header`](Self::user_header).
    pub proxy_secret: Option<String>,
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

    /// With the proxy's shared secret.
    pub fn proxy_secret(mut self, secret: Option<String>) -> Self {
        self.proxy_secret = secret;
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
        let proxy = match (options.user_header, options.proxy_secret) {
            (None, _) => None,
            (Some(header), Some(secret)) if options.access.is_some() && secret.chars().count() >= MIN_TOKEN_CHARS => {
                identity_header(&header).map_err(ConsoleError::UserHeader)?;
                Some((header, secret))
            }
            (Some(_), _) => {
                return Err(ConsoleError::UserHeader(format!(
                    "a user header is taken only with an access file (--access) naming the users it may carry and                      the proxy's shared secret (--proxy-secret-env, at least {MIN_TOKEN_CHARS} characters), which                      the proxy sends in {PROXY_SECRET_HEADER} with every request"
                )));
            }
        };
        let state = State {
            inbox,
            auth: Auth::new(token, options.access, proxy),
            read_only: options.read_only,
            cache: view::Cache::default(),
        };
        Ok(Console { state: Arc::new(state) })
    }

    /// Serves connections on `listener` until the process stops: at most [`MAX_CONNECTIONS`] at
    /// once and [`MAX_PER_CLIENT`] of one address, each closed when its client stops reading or
    /// sending. Runs on a tokio runtime (planlock's: [`io_handle`](crate::io_handle)).
    pub async fn serve(self, listener: tokio::net::TcpListener) {
        accept(listener, self.state).await
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

/// A client address's share of the connections; given back when dropped.
struct ClientSlot {
    clients: Arc<Mutex<HashMap<IpAddr, usize>>>,
    ip: IpAddr,
}

impl ClientSlot {
    /// A slot for `ip`, unless it holds [`MAX_PER_CLIENT`] already.
    fn take(clients: &Arc<Mutex<HashMap<IpAddr, usize>>>, ip: IpAddr) -> Option<ClientSlot> {
        let mut held = clients.lock().unwrap_or_else(|p| p.into_inner());
        let count = held.entry(ip).or_insert(0);
        if *count >= MAX_PER_CLIENT {
            return None;
        }
        *count += 1;
        Some(ClientSlot { clients: clients.clone(), ip })
    }
}

impl Drop for ClientSlot {
    fn drop(&mut self) {
        let mut held = self.clients.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(count) = held.get_mut(&self.ip) {
            *count -= 1;
            if *count == 0 {
                held.remove(&self.ip);
            }
        }
    }
}

/// Serves connections until the process is stopped: at most [`MAX_CONNECTIONS`] at once, at
/// most [`MAX_PER_CLIENT`] of one address; a connection whose client stops reading or sending
/// is closed ([`WRITE_TIME`], [`IDLE_TIME`]).
async fn accept(listener: tokio::net::TcpListener, console: Arc<State>) {
    let slots = Arc::new(tokio::sync::Semaphore::new(MAX_CONNECTIONS));
    let clients = Arc::new(Mutex::new(HashMap::new()));
    loop {
        let Ok(slot) = slots.clone().acquire_owned().await else { return };
        let Ok((stream, peer)) = listener.accept().await else { continue };
        // Closed at once: the slot goes back for another client.
        let Some(client) = ClientSlot::take(&clients, peer.ip()) else { continue };
        let _ = socket2::SockRef::from(&stream).set_send_buffer_size(SEND_BUFFER);
        let console = console.clone();
        tokio::spawn(async move {
            let service = hyper::service::service_fn(move |mut req: Request<hyper::body::Incoming>| {
                // Who sends it, for the count of failed sign-ins.
                req.extensions_mut().insert(ClientAddr(peer.ip()));
                let console = console.clone();
                async move { Ok::<_, std::convert::Infallible>(handle(&console, req).await) }
            });
            let mut stream = tokio_io_timeout::TimeoutStream::new(stream);
            stream.set_write_timeout(Some(WRITE_TIME));
            stream.set_read_timeout(Some(IDLE_TIME));
            let _ = hyper::server::conn::http1::Builder::new()
                .timer(hyper_util::rt::TokioTimer::new())
                .header_read_timeout(HEADER_TIME)
                .max_buf_size(MAX_HEADERS)
                .serve_connection(hyper_util::rt::TokioIo::new(Box::pin(stream)), service)
                .await;
            drop((slot, client));
        });
    }
}

/// A response with the console's security headers.
fn respond(status: StatusCode, content_type: &'static str, body: impl Into<Bytes>) -> Answer {
    let mut response = Response::new(Full::new(body.into()));
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
    let login = match route.is_public() {
        true => None,
        false => match console.auth.login_of(&req) {
            Some(login) => Some(login),
            None => return redirect("/login"),
        },
    };
    match (route, login) {
        (Route::Static(content_type, body), _) => respond(StatusCode::OK, content_type, body),
        (Route::NoIcon, _) => respond(StatusCode::NO_CONTENT, "image/x-icon", ""),
        (Route::LoginForm, _) => login_form(console, &req),
        (Route::SignIn, _) => sign_in(console, req).await,
        (Route::SignOut, Some(login)) => sign_out(console, &login, req).await,
        (Route::MethodNotAllowed, _) => refused(StatusCode::METHOD_NOT_ALLOWED, "GET and POST only"),
        (Route::NotFound, _) | (_, None) => refused(StatusCode::NOT_FOUND, "no such page"),
        (Route::Home, _) => redirect("/sessions"),
        (Route::Sessions { status, page }, Some(login)) => {
            match console.sessions_page(status, page * PER_PAGE, PER_PAGE).await {
                Ok(list) => {
                    let forms = console.forms(&login);
                    html(StatusCode::OK, pages::sessions(&list, status, page, console.pending().await, &forms))
                }
                Err(e) => refused(StatusCode::INTERNAL_SERVER_ERROR, &e.to_string()),
            }
        }
        (Route::Inbox { page, notice }, Some(login)) => {
            match console.inbox_page(page * PAUSES_PER_PAGE, PAUSES_PER_PAGE).await {
                Ok((listing, total)) => {
                    let pending = console.pending().await;
                    let forms = console.forms(&login);
                    html(StatusCode::OK, pages::inbox(&listing, page, total, pending, &forms, notice.as_deref()))
                }
                Err(e) => refused(StatusCode::INTERNAL_SERVER_ERROR, &e.to_string()),
            }
        }
        (Route::Session(name), Some(login)) => match console.session_name(name) {
            Some(name) => session_page(console, &name, &console.forms(&login)).await,
            None => refused(StatusCode::NOT_FOUND, "no such page"),
        },
        (Route::Decide { session, verdict }, Some(login)) => decide_on(console, session, verdict, &login, req).await,
    }
}

impl State {
    /// What a page's forms need for `login`: its CSRF token, who it is, where it may decide.
    fn forms<'a>(&'a self, login: &'a Login) -> Forms<'a> {
        Forms { login, read_only: self.read_only, auth: &self.auth }
    }
}

/// Whether the request comes from the console's own pages: its `Origin`, when the browser sends
/// one, must be this console's (scheme, host and port of its `Host`).
fn same_origin<B>(req: &Request<B>) -> bool {
    let host = req.headers().get(header::HOST).and_then(|h| h.to_str().ok());
    match (req.headers().get(header::ORIGIN).map(|o| o.to_str()), host) {
        (None, _) => req
            .headers()
            .get("sec-fetch-site")
            .and_then(|v| v.to_str().ok())
            .is_none_or(|site| site == "same-origin" || site == "none"),
        (Some(Ok(origin)), Some(host)) => origin == format!("http://{host}"),
        _ => false,
    }
}

/// The form fields of a request body (at most [`MAX_BODY`] bytes, sent within [`BODY_TIME`]).
async fn form<B>(req: Request<B>) -> Option<HashMap<String, String>>
where
    B: hyper::body::Body<Data = Bytes>,
    B::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
{
    let body = Limited::new(req.into_body(), MAX_BODY).collect();
    let body = tokio::time::timeout(BODY_TIME, body).await.ok()?.ok()?.to_bytes();
    Some(form_urlencoded::parse(&body).into_owned().collect())
}

/// `GET /login`: the sign-in form (personal token, or the console's token and a name); behind a
/// proxy, the login of the user it names.
fn login_form<B>(console: &State, req: &Request<B>) -> Answer {
    if console.auth.by_proxy() {
        return match console.auth.proxy_login(req) {
            Some((id, _)) => signed_in(&id),
            None => refused(StatusCode::FORBIDDEN, "the proxy in front did not name a user of the access file"),
        };
    }
    html(StatusCode::OK, pages::login(None, console.auth.has_access()))
}

/// To the inbox, with the login's cookie.
fn signed_in(id: &str) -> Answer {
    let mut response = redirect("/inbox");
    let cookie = format!("{COOKIE}={id}; HttpOnly; SameSite=Strict; Path=/; Max-Age={}", LOGIN_LIFE.as_secs());
    if let Ok(cookie) = HeaderValue::from_str(&cookie) {
        response.headers_mut().insert(header::SET_COOKIE, cookie);
    }
    response
}

async fn sign_in<B>(console: &State, req: Request<B>) -> Answer
where
    B: hyper::body::Body<Data = Bytes>,
    B::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
{
    if !same_origin(&req) {
        return refused(StatusCode::FORBIDDEN, "a request from another origin");
    }
    if console.auth.by_proxy() {
        return refused(StatusCode::FORBIDDEN, "the proxy in front signs people in");
    }
    let client = req.extensions().get::<ClientAddr>().map(|c| c.0);
    let Some(fields) = form(req).await else {
        return refused(StatusCode::PAYLOAD_TOO_LARGE, "the form is too large or too slow");
    };
    let token = fields.get("token").map(String::as_str).unwrap_or("");
    let name = fields.get("name").map(String::as_str).unwrap_or("");
    match console.auth.sign_in(client, token, name) {
        Ok((id, _)) => signed_in(&id),
        Err(Refusal::Wrong(why)) => html(StatusCode::UNAUTHORIZED, pages::login(Some(why), console.auth.has_access())),
        Err(Refusal::TooMany(wait)) => {
            let why = format!("Too many failed sign-ins from here: try again in {} s.", wait.as_secs().max(1));
            let mut answer = html(StatusCode::TOO_MANY_REQUESTS, pages::login(Some(&why), console.auth.has_access()));
            if let Ok(after) = HeaderValue::from_str(&wait.as_secs().max(1).to_string()) {
                answer.headers_mut().insert(header::RETRY_AFTER, after);
            }
            answer
        }
    }
}

/// `POST /logout`: ends the login (with its CSRF token), and the cookie with it.
async fn sign_out<B>(console: &State, login: &Login, req: Request<B>) -> Answer
where
    B: hyper::body::Body<Data = Bytes>,
    B::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
{
    if !same_origin(&req) {
        return refused(StatusCode::FORBIDDEN, "a request from another origin");
    }
    let id = auth::cookie(&req, COOKIE).unwrap_or_default();
    let Some(fields) = form(req).await else {
        return refused(StatusCode::PAYLOAD_TOO_LARGE, "the form is too large or too slow");
    };
    if !fields.get("csrf").is_some_and(|c| same_secret(c, &login.csrf)) {
        return refused(StatusCode::FORBIDDEN, "the form's CSRF token is missing or not this login's");
    }
    console.auth.sign_out(&id);
    let mut response = redirect("/login");
    let gone = format!("{COOKIE}=; HttpOnly; SameSite=Strict; Path=/; Max-Age=0");
    if let Ok(gone) = HeaderValue::from_str(&gone) {
        response.headers_mut().insert(header::SET_COOKIE, gone);
    }
    response
}

impl State {
    /// The session a path segment names (decoded): under a directory, one plain name of a root
    /// there (no separator, no `..`: nothing outside the directory); in a database, a key (1 to
    /// 256 bytes).
    fn session_name(&self, name: String) -> Option<String> {
        self.inbox.backend().is_session_name(&name).then_some(name)
    }
}

async fn session_page(console: &Arc<State>, name: &str, forms: &Forms<'_>) -> Answer {
    let read = async {
        let records = console.inbox.records(name).await?;
        let history = records.history(100).await?;
        let log = records.approval_log().await?;
        let paused = console.inbox.show(name).await?;
        let id = match (&paused, records.load().await?) {
            (Some(p), _) => Some(p.record.session_id),
            (None, Some(state)) => Some(state.session_id),
            (None, None) => history.entries.first().map(|e| e.session_id),
        };
        Ok::<_, crate::review::inbox::InboxError>((history, log, paused, id))
    };
    match read.await {
        Ok((history, log, paused, id)) => html(
            StatusCode::OK,
            pages::session(name, id, &history.entries, paused.as_ref(), &log, forms, console.pending().await),
        ),
        Err(e) if e.code() == "unknown-session" => refused(StatusCode::NOT_FOUND, &e.to_string()),
        Err(e) => refused(StatusCode::INTERNAL_SERVER_ERROR, &e.to_string()),
    }
}

/// `POST /inbox/{session}/{verdict}`: a decision on the session's pause, by the signed-in person.
async fn decide_on<B>(
    console: &Arc<State>,
    session: String,
    verdict: ReviewVerdict,
    login: &Login,
    req: Request<B>,
) -> Answer
where
    B: hyper::body::Body<Data = Bytes>,
    B::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
{
    if !same_origin(&req) {
        return refused(StatusCode::FORBIDDEN, "a request from another origin");
    }
    if console.read_only {
        return refused(StatusCode::FORBIDDEN, "this console is read-only");
    }
    let Some(fields) = form(req).await else {
        return refused(StatusCode::PAYLOAD_TOO_LARGE, "the form is too large or too slow");
    };
    if !fields.get("csrf").is_some_and(|c| same_secret(c, &login.csrf)) {
        return refused(StatusCode::FORBIDDEN, "the form's CSRF token is missing or not this login's");
    }
    let Some(name) = console.session_name(session) else { return refused(StatusCode::NOT_FOUND, "no such session") };
    let reason = fields.get("reason").cloned().unwrap_or_default();
    let Some(pause_id) = fields.get("pause") else {
        return refused(StatusCode::BAD_REQUEST, "the form does not name the pause it was shown for");
    };
    let decided = async {
        let Some(pause) = console.inbox.show(&name).await? else {
            return Ok::<_, crate::review::inbox::InboxError>(Ok(format!(
                "Nothing is paused in {} any more.",
                printable(&name)
            )));
        };
        // Only where the login may decide: refused before anything is read further.
        if !console.auth.may_decide(login, &pause.record.validator.id) {
            return Ok(Err(()));
        }
        let mut decision = ReviewDecision::new(&pause.record, verdict, login.name.clone(), reason).via(Via::Console);
        // Bound to what this page showed: a pause that changed since is refused.
        decision.shown_digest = fields.get("digest").and_then(|d| d.parse().ok());
        // And to the pause it showed: a later one of the same session is not decided by it.
        let decision = match decision.on_pause(pause_id) {
            Ok(decision) => decision,
            Err(e) => return Ok(Ok(format!("Not recorded: {} ({})", e, e.code()))),
        };
        let records = console.inbox.records(&name).await?;
        Ok(Ok(match decide_with(records.as_ref(), &decision, console.auth.access()).await {
            Ok(Recorded::Counted { approvals, required }) => format!(
                "Recorded: approval {approvals} of {required} on {}; it waits for {} more.",
                printable(&name),
                required.saturating_sub(approvals)
            ),
            Ok(_) => format!("Recorded: {} on {} (acted on at its next run).", decision.verdict, printable(&name)),
            Err(e) => format!("Not recorded: {} ({})", e, e.code()),
        }))
    };
    let decided = decided.await;
    match decided {
        Ok(Err(())) => refused(
            StatusCode::FORBIDDEN,
            &format!(
                "{} may not decide on this pause: the access file does not list them among its validator's approvers (not-an-approver)",
                printable(&login.name)
            ),
        ),
        Ok(Ok(notice)) => {
            console.decided();
            let notice: String = form_urlencoded::byte_serialize(notice.as_bytes()).collect();
            redirect(&format!("/inbox?notice={notice}"))
        }
        // A name that is no session here: nothing was read or written.
        Err(e) if e.code() == "unknown-session" => refused(StatusCode::NOT_FOUND, &e.to_string()),
        Err(e) => refused(StatusCode::INTERNAL_SERVER_ERROR, &e.to_string()),
    }
}
