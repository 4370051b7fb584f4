//! [`Console`]: the tower [`Service`] of the console's pages and forms, its state, and the one
//! dispatch of a request to its route.

use std::sync::Arc;

use hyper::body::Bytes;
use hyper::{Request, StatusCode};
use tower_service::Service;

use super::answer::{Answer, redirect, refused, respond};
use super::auth::{self, Auth, PROXY_SECRET_HEADER};
use super::cache::Cache;
use super::options::{ConsoleError, ConsoleOptions, MIN_TOKEN_CHARS, identity_header};
use super::posted::{MAX_EDIT_BODY, posted, posted_within};
use super::routes::Route;
use super::rules::{LiveRules, Source};
use super::state::State;
use super::{decide, flash, login, read};
use crate::review::inbox::Inbox;
use crate::text::printable;

/// The console of an [`Inbox`]'s sessions, signed in with `token`: a tower [`Service`] of HTTP
/// requests; see the [module docs](crate::console).
///
/// ```
/// use planlock::console::{Console, ConsoleOptions, new_token};
/// use planlock::review::inbox::Inbox;
/// use tower_service::Service as _;
///
/// let dir = tempfile::tempdir()?;
/// let inbox = Inbox::new(planlock::backend::FilesBackend::new(dir.path()));
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
            cache: Cache::default(),
            flashes: flash::Flashes::default(),
            trace_url: options.trace_url,
        };
        Ok(Console { state: Arc::new(state) })
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

/// Answers `req`: its route, for the login it carries (a public route for anyone).
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
                (Route::Decide { .. } | Route::Edit { .. }, Some(name)) => {
                    let why = format!(
                        "{} may no longer decide: the access file no longer names them (not-an-approver)",
                        printable(&name)
                    );
                    return refused(StatusCode::FORBIDDEN, &why);
                }
                // A page asked for lands there after the sign-in (a deep link survives it).
                _ => return redirect(&sign_in_then(&req)),
            },
        },
    };
    match (route, login) {
        (Route::Static(content_type, body), _) => respond(StatusCode::OK, content_type, body),
        (Route::NoIcon, _) => respond(StatusCode::NO_CONTENT, "image/x-icon", ""),
        (Route::LoginForm { next }, _) => login::login_form(console, &req, &rules, next.as_deref()),
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
        (Route::Edit { session }, Some(login)) => match posted_within(req, Some(&login), MAX_EDIT_BODY).await {
            Ok(form) => decide::edit_on(console, session, (&login, &rules), form).await,
            Err(refusal) => refusal,
        },
    }
}

/// The sign-in page for `req`, with the page it asked for to land on after it, when that is a
/// page a person lands on ([`Route::landing`]).
fn sign_in_then<B>(req: &Request<B>) -> String {
    let asked = req.uri().path_and_query().map_or("/", |p| p.as_str());
    match (req.method() == hyper::Method::GET, Route::landing(asked)) {
        (true, Some(next)) => {
            ["/login?", &form_urlencoded::Serializer::new(String::new()).append_pair("next", &next).finish()].concat()
        }
        _ => "/login".to_owned(),
    }
}
