//! The console's routes: a request's method, path and query parsed once into a [`Route`], which
//! the console then answers with one `match`. A path the table does not hold is
//! [`Route::NotFound`]; nothing downstream looks at the path again.

use crate::review::inbox::{FilterError, InboxFilter};
use crate::review::overview::SessionStatus;
use crate::session::ReviewVerdict;
use hyper::Method;

/// The most a `page` parameter is taken at (a page past the end is an empty page).
const MAX_PAGE: usize = 100_000;

/// What a request asks for.
#[derive(Debug, PartialEq)]
pub enum Route {
    /// A file of the console's own: its content type and its bytes.
    Static(&'static str, &'static str),
    /// `/favicon.ico`: no content.
    NoIcon,
    /// `GET /login?next=…`: the sign-in form, and the page to land on after it (a page of this
    /// console only: [`Route::landing`]).
    LoginForm { next: Option<String> },
    /// `POST /login`.
    SignIn,
    /// `POST /logout`.
    SignOut,
    /// `GET /`: to the sessions.
    Home,
    /// `GET /sessions?status=…&q=…&page=…`.
    Sessions { status: Option<SessionStatus>, words: Vec<String>, page: usize },
    /// `GET /inbox?validator=…&stepType=…&state=…&olderThan=…&q=…&order=…&page=…&flash=…`: the
    /// filter (or why its parameters are not one), the page, the id of a result to show once.
    Inbox { filter: Result<InboxFilter, FilterError>, page: usize, flash: Option<String> },
    /// `GET /inbox/{session}/{cycle}/{step}`: one pause's own page (`?flash=…`, and the inbox's
    /// filter it returns to, as a query read as a filter).
    Pause { session: String, cycle: u64, step: String, flash: Option<String>, back: String },
    /// `GET /sessions/{name}`: the name percent-decoded (still to be checked against where the
    /// sessions live).
    Session(String),
    /// `GET /events`: the live updates of the pages (`text/event-stream`).
    Events,
    /// `POST /inbox/{name}/approve`, `…/reject` or `…/abandon`.
    Decide { session: String, verdict: ReviewVerdict },
    /// `POST /inbox/{name}/edit`: edit and approve (CONTRACT §22).
    Edit { session: String },
    /// A method other than GET, HEAD and POST.
    MethodNotAllowed,
    /// Anything else.
    NotFound,
}

/// The parameters of a page that are not the filter's.
const PAGE_PARAMETERS: [&str; 2] = ["page", "flash"];

impl Route {
    /// The route of `method` on `path` with `query`. HEAD is GET (hyper sends the headers
    /// without the body).
    pub fn parse(method: &Method, path: &str, query: &str) -> Route {
        let get = *method == Method::GET || *method == Method::HEAD;
        if !get && *method != Method::POST {
            return Route::MethodNotAllowed;
        }
        let params: Vec<(String, String)> = form_urlencoded::parse(query.as_bytes()).into_owned().collect();
        let param = |name: &str| params.iter().find(|(k, _)| k == name).map(|(_, v)| v.clone());
        let page = param("page").and_then(|p| p.parse::<usize>().ok()).unwrap_or(0).min(MAX_PAGE);
        let flash = param("flash");
        match (get, path) {
            (true, "/static/console.css") => Route::Static("text/css; charset=utf-8", include_str!("console.css")),
            (true, "/static/console.js") => Route::Static("text/javascript; charset=utf-8", include_str!("console.js")),
            (true, "/favicon.ico") => Route::NoIcon,
            (true, "/login") => Route::LoginForm { next: param("next").and_then(|n| Route::landing(&n)) },
            (false, "/login") => Route::SignIn,
            (false, "/logout") => Route::SignOut,
            (true, "/") => Route::Home,
            (true, "/events") => Route::Events,
            (true, "/sessions") => {
                let mut words = InboxFilter::default();
                // The sessions' search is the inbox's: the same words, the same rule.
                let _ = words.set("q", &param("q").unwrap_or_default());
                Route::Sessions { status: param("status").and_then(|s| SessionStatus::parse(&s)), words: words.q, page }
            }
            (true, "/inbox") => {
                let filters = params.iter().filter(|(k, _)| !PAGE_PARAMETERS.contains(&k.as_str()));
                let filter = InboxFilter::from_pairs(filters.map(|(k, v)| (k.as_str(), v.as_str())));
                Route::Inbox { filter, page, flash }
            }
            (true, _) => {
                if let Some(rest) = path.strip_prefix("/inbox/") {
                    let mut parts = rest.split('/');
                    return match (parts.next().and_then(segment), parts.next(), parts.next().and_then(segment)) {
                        (Some(session), Some(cycle), Some(step)) if parts.next().is_none() => {
                            match cycle.parse::<u64>() {
                                Ok(cycle) => {
                                    let filters = params.iter().filter(|(k, _)| !PAGE_PARAMETERS.contains(&k.as_str()));
                                    let back = InboxFilter::from_pairs(filters.map(|(k, v)| (k.as_str(), v.as_str())));
                                    let back = back.map(|f| f.to_query()).unwrap_or_default();
                                    Route::Pause { session, cycle, step, flash, back }
                                }
                                Err(_) => Route::NotFound,
                            }
                        }
                        _ => Route::NotFound,
                    };
                }
                match path.strip_prefix("/sessions/").and_then(segment) {
                    Some(name) => Route::Session(name),
                    None => Route::NotFound,
                }
            }
            (false, _) => {
                let Some(rest) = path.strip_prefix("/inbox/") else { return Route::NotFound };
                let Some((name, action)) = rest.rsplit_once('/') else { return Route::NotFound };
                let verdict = ReviewVerdict::ALL.into_iter().find(|v| v.as_str() == action);
                match (segment(name), verdict) {
                    (Some(session), Some(verdict)) => Route::Decide { session, verdict },
                    (Some(session), None) if action == "edit" => Route::Edit { session },
                    _ => Route::NotFound,
                }
            }
        }
    }

    /// Whether the route is served without a login (the login itself and the console's files).
    pub fn is_public(&self) -> bool {
        matches!(self, Route::Static(..) | Route::NoIcon | Route::LoginForm { .. } | Route::SignIn)
    }

    /// `target` if it is a page of this console a person may land on after signing in (a deep
    /// link that survives the sign-in): a path of this origin (`/…`, never `//host` or a
    /// backslash), printable ASCII, at most 2 KiB, that is a page behind the login. Anything
    /// else is `None` (the inbox): no sign-in sends anyone elsewhere.
    pub fn landing(target: &str) -> Option<String> {
        let plain = target.len() <= 2048 && target.bytes().all(|b| b.is_ascii_graphic() && b != b'\\');
        if !plain || !target.starts_with('/') || target.starts_with("//") {
            return None;
        }
        let (path, query) = target.split_once('?').unwrap_or((target, ""));
        let page = Route::parse(&Method::GET, path, query);
        let lands = matches!(
            page,
            Route::Home | Route::Sessions { .. } | Route::Inbox { .. } | Route::Pause { .. } | Route::Session(_)
        );
        lands.then(|| target.to_owned())
    }
}

/// One path segment, percent-decoded; `None` when it holds a `/` or its bytes are not UTF-8 (an
/// overlong `%c0%ae` is not a dot: nothing is repaired). An encoded `/` is part of the name (a
/// database's key may hold one); whether a name is a session is the backend's rule.
fn segment(text: &str) -> Option<String> {
    if text.contains('/') {
        return None;
    }
    percent_encoding::percent_decode_str(text).decode_utf8().ok().map(|name| name.into_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_path_is_one_route() {
        let get = |p: &str| Route::parse(&Method::GET, p, "");
        assert_eq!(get("/"), Route::Home);
        assert_eq!(get("/sessions/a%20b"), Route::Session("a b".into()));
        assert_eq!(get("/sessions/a/b"), Route::NotFound);
        assert_eq!(get("/sessions/%c0%ae"), Route::NotFound);
        assert_eq!(Route::parse(&Method::HEAD, "/login", ""), Route::LoginForm { next: None });
        // A deep link survives the sign-in, and only to a page of this console.
        let next = |n: &str| Route::parse(&Method::GET, "/login", &format!("next={n}"));
        assert_eq!(
            next("%2Finbox%2Fs1%2F3%2Fremember"),
            Route::LoginForm { next: Some("/inbox/s1/3/remember".into()) }
        );
        assert_eq!(next("%2Finbox%3Fstate%3Dexpired"), Route::LoginForm { next: Some("/inbox?state=expired".into()) });
        for elsewhere in [
            "%2F%2Fevil.example%2Finbox",
            "https%3A%2F%2Fevil.example",
            "%2F%5Cevil.example",
            "%2Flogout",
            "%2Fevents",
            "%2Fnowhere",
            "%2Finbox%0a",
        ] {
            assert_eq!(next(elsewhere), Route::LoginForm { next: None }, "{elsewhere}");
        }
        assert_eq!(Route::parse(&Method::DELETE, "/", ""), Route::MethodNotAllowed);
        assert_eq!(
            Route::parse(&Method::POST, "/inbox/s1/reject", ""),
            Route::Decide { session: "s1".into(), verdict: ReviewVerdict::Reject }
        );
        assert_eq!(Route::parse(&Method::POST, "/inbox/s1/delete", ""), Route::NotFound);
        assert_eq!(Route::parse(&Method::POST, "/inbox/s1/edit", ""), Route::Edit { session: "s1".into() });
        assert_eq!(
            Route::parse(&Method::POST, "/inbox/s%2F1/abandon", ""),
            Route::Decide { session: "s/1".into(), verdict: ReviewVerdict::Abandon }
        );
        assert_eq!(
            Route::parse(&Method::GET, "/sessions", "status=paused&page=999999999&q=Ada%20b"),
            Route::Sessions {
                status: Some(SessionStatus::Paused),
                words: vec!["ada".into(), "b".into()],
                page: MAX_PAGE
            }
        );
        assert_eq!(
            get("/inbox/s1/3/remember"),
            Route::Pause { session: "s1".into(), cycle: 3, step: "remember".into(), flash: None, back: String::new() }
        );
        assert_eq!(get("/inbox/s1/x/remember"), Route::NotFound);
        assert_eq!(get("/inbox/s1/3/remember/more"), Route::NotFound);
        let Route::Inbox { filter, page: 2, flash: Some(flash) } =
            Route::parse(&Method::GET, "/inbox", "state=expired&page=2&flash=abc")
        else {
            panic!("an inbox route")
        };
        assert_eq!((filter.unwrap().state.map(|s| s.as_str()), flash.as_str()), (Some("expired"), "abc"));
        let Route::Inbox { filter: Err(e), .. } = Route::parse(&Method::GET, "/inbox", "notice=Recorded") else {
            panic!("an inbox route")
        };
        assert!(e.to_string().contains("not a filter"), "{e}");
        assert!(get("/static/console.css").is_public() && !get("/inbox").is_public());
    }
}
