//! The console's routes: a request's method, path and query parsed once into a [`Route`], which
//! the console then answers with one `match`. A path the table does not hold is
//! [`Route::NotFound`]; nothing downstream looks at the path again.

use std::collections::HashMap;

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
    /// `GET /login`.
    LoginForm,
    /// `POST /login`.
    SignIn,
    /// `POST /logout`.
    SignOut,
    /// `GET /`: to the sessions.
    Home,
    /// `GET /sessions?status=…&page=…`.
    Sessions { status: Option<SessionStatus>, page: usize },
    /// `GET /inbox?page=…&notice=…`.
    Inbox { page: usize, notice: Option<String> },
    /// `GET /sessions/{name}`: the name percent-decoded (still to be checked against where the
    /// sessions live).
    Session(String),
    /// `POST /inbox/{name}/approve` or `…/reject`.
    Decide { session: String, verdict: ReviewVerdict },
    /// A method other than GET, HEAD and POST.
    MethodNotAllowed,
    /// Anything else.
    NotFound,
}

impl Route {
    /// The route of `method` on `path` with `query`. HEAD is GET (hyper sends the headers
    /// without the body).
    pub fn parse(method: &Method, path: &str, query: &str) -> Route {
        let get = *method == Method::GET || *method == Method::HEAD;
        if !get && *method != Method::POST {
            return Route::MethodNotAllowed;
        }
        let params = || -> HashMap<String, String> { form_urlencoded::parse(query.as_bytes()).into_owned().collect() };
        let page = |params: &HashMap<String, String>| {
            params.get("page").and_then(|p| p.parse::<usize>().ok()).unwrap_or(0).min(MAX_PAGE)
        };
        match (get, path) {
            (true, "/static/console.css") => Route::Static("text/css; charset=utf-8", include_str!("console.css")),
            (true, "/static/console.js") => Route::Static("text/javascript; charset=utf-8", include_str!("console.js")),
            (true, "/favicon.ico") => Route::NoIcon,
            (true, "/login") => Route::LoginForm,
            (false, "/login") => Route::SignIn,
            (false, "/logout") => Route::SignOut,
            (true, "/") => Route::Home,
            (true, "/sessions") => {
                let params = params();
                Route::Sessions {
                    status: params.get("status").and_then(|s| SessionStatus::parse(s)),
                    page: page(&params),
                }
            }
            (true, "/inbox") => {
                let mut params = params();
                Route::Inbox { page: page(&params), notice: params.remove("notice") }
            }
            (true, _) => match path.strip_prefix("/sessions/").and_then(segment) {
                Some(name) => Route::Session(name),
                None => Route::NotFound,
            },
            (false, _) => {
                let Some(rest) = path.strip_prefix("/inbox/") else { return Route::NotFound };
                let (verdict, name) = match (rest.strip_suffix("/approve"), rest.strip_suffix("/reject")) {
                    (Some(name), _) => (ReviewVerdict::Approve, name),
                    (_, Some(name)) => (ReviewVerdict::Reject, name),
                    _ => return Route::NotFound,
                };
                match segment(name) {
                    Some(session) => Route::Decide { session, verdict },
                    None => Route::NotFound,
                }
            }
        }
    }

    /// Whether the route is served without a login (the login itself and the console's files).
    pub fn is_public(&self) -> bool {
        matches!(self, Route::Static(..) | Route::NoIcon | Route::LoginForm | Route::SignIn)
    }
}

/// One path segment, percent-decoded; `None` when it holds a `/` or its bytes are not UTF-8 (an
/// overlong `%c0%ae` is not a dot: nothing is repaired).
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
        assert_eq!(Route::parse(&Method::HEAD, "/login", ""), Route::LoginForm);
        assert_eq!(Route::parse(&Method::DELETE, "/", ""), Route::MethodNotAllowed);
        assert_eq!(
            Route::parse(&Method::POST, "/inbox/s1/reject", ""),
            Route::Decide { session: "s1".into(), verdict: ReviewVerdict::Reject }
        );
        assert_eq!(Route::parse(&Method::POST, "/inbox/s1/delete", ""), Route::NotFound);
        assert_eq!(
            Route::parse(&Method::GET, "/sessions", "status=paused&page=999999999"),
            Route::Sessions { status: Some(SessionStatus::Paused), page: MAX_PAGE }
        );
        assert!(get("/static/console.css").is_public() && !get("/inbox").is_public());
    }
}
