//! The checks every `POST` passes before its handler sees it, written once: the request comes
//! from the console's own pages (its `Origin`, or `Sec-Fetch-Site`), its form is at most
//! [`MAX_BODY`] bytes ([`MAX_EDIT_BODY`] for an edit) sent within [`BODY_TIME`], and — for a signed-in person — it carries their
//! login's CSRF token. A [`Posted`] is the only value a `POST` handler takes, and [`posted`] the
//! only way to make one, so a new form cannot forget a check.

use std::collections::HashMap;
use std::time::Duration;

use http_body_util::{BodyExt, Limited};
use hyper::body::Bytes;
use hyper::header;
use hyper::{Request, StatusCode};

use super::answer::{Answer, refused};
use super::auth::{Login, same_secret};

/// The most bytes of a form.
pub(super) const MAX_BODY: usize = 16 << 10;

/// The most bytes of the form that edits a step's payload (CONTRACT §22): a payload of at most
/// 64 KiB, percent-encoded (each byte at most three), and its reason.
pub(super) const MAX_EDIT_BODY: usize = 256 << 10;

/// How long a client has to send a request's body.
pub(super) const BODY_TIME: Duration = Duration::from_secs(10);

/// A `POST` that passed the checks: its head (headers, the client's address) and its form.
pub(super) struct Posted {
    /// The request without its body.
    pub(super) head: Request<()>,
    /// The form's fields.
    pub(super) fields: HashMap<String, String>,
}

impl Posted {
    /// The field `name`, if the form has it.
    pub(super) fn field(&self, name: &str) -> Option<&str> {
        self.fields.get(name).map(String::as_str)
    }
}

/// `req` as a [`Posted`], for `login` when a person is signed in (their CSRF token checked),
/// or the refusal to send back.
pub(super) async fn posted<B>(req: Request<B>, login: Option<&Login>) -> Result<Posted, Answer>
where
    B: hyper::body::Body<Data = Bytes>,
    B::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
{
    posted_within(req, login, MAX_BODY).await
}

/// [`posted`], for a form of at most `max` bytes.
pub(super) async fn posted_within<B>(req: Request<B>, login: Option<&Login>, max: usize) -> Result<Posted, Answer>
where
    B: hyper::body::Body<Data = Bytes>,
    B::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
{
    if !same_origin(&req) {
        return Err(refused(StatusCode::FORBIDDEN, "a request from another origin"));
    }
    let (parts, body) = req.into_parts();
    let read = tokio::time::timeout(BODY_TIME, Limited::new(body, max).collect()).await;
    let Ok(Ok(body)) = read else {
        return Err(refused(StatusCode::PAYLOAD_TOO_LARGE, "the form is too large or too slow"));
    };
    let fields: HashMap<String, String> = form_urlencoded::parse(&body.to_bytes()).into_owned().collect();
    if let Some(login) = login
        && !fields.get("csrf").is_some_and(|c| same_secret(c, &login.csrf))
    {
        return Err(refused(StatusCode::FORBIDDEN, "the form's CSRF token is missing or not this login's"));
    }
    Ok(Posted { head: Request::from_parts(parts, ()), fields })
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
