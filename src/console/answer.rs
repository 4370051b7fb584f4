//! What the console answers, and how: every response with the console's security headers (a
//! strict Content-Security-Policy, no sniffing, no framing, no caching), a page, a redirect, a
//! refusal.

use http_body_util::combinators::BoxBody;
use http_body_util::{BodyExt, Full};
use hyper::body::Bytes;
use hyper::header::{self, HeaderValue};
use hyper::{Response, StatusCode};

use super::templates;

const CSP: &str = "default-src 'none'; style-src 'self'; script-src 'self'; img-src 'self'; \
                   connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'";

/// What the console answers: a page (its body whole), or `/events`' stream.
pub type Answer = Response<BoxBody<Bytes, std::convert::Infallible>>;

/// A response with the console's security headers.
pub(super) fn respond(status: StatusCode, content_type: &'static str, body: impl Into<Bytes>) -> Answer {
    respond_with(status, content_type, Full::new(body.into()))
}

/// A response of `body` (whole, or a stream) with the console's security headers.
pub(super) fn respond_with<B>(status: StatusCode, content_type: &'static str, body: B) -> Answer
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

/// A page.
pub(super) fn html(status: StatusCode, body: String) -> Answer {
    respond(status, "text/html; charset=utf-8", body)
}

/// To `to` (303: a form's answer is a page to GET).
pub(super) fn redirect(to: &str) -> Answer {
    let mut response = respond(StatusCode::SEE_OTHER, "text/plain; charset=utf-8", "");
    if let Ok(to) = HeaderValue::from_str(to) {
        response.headers_mut().insert(header::LOCATION, to);
    }
    response
}

/// A refusal, saying why.
pub(super) fn refused(status: StatusCode, why: &str) -> Answer {
    html(status, templates::refused(why))
}
