//! Signing in and out of the console: the sign-in form (a personal token, or the console's token
//! and a name; none for a read-only console's reader), the login's cookie, the sign-out.

use hyper::Request;
use hyper::StatusCode;
use hyper::header::{self, HeaderValue};

use super::answer::{Answer, html, redirect, refused};
use super::auth::{COOKIE, LOGIN_LIFE, Refusal};
use super::pages;
use super::posted::Posted;
use super::rules::Rules;
use super::state::State;

/// The name a read-only console's reader signs in under when they give none (they decide nothing).
const READER: &str = "reader";

/// `GET /login`: the sign-in form (personal token, or the console's token and a name); behind a
/// proxy, the login of the user it names.
pub(super) fn login_form<B>(console: &State, req: &Request<B>, rules: &Rules, next: Option<&str>) -> Answer {
    if console.auth.by_proxy() {
        return match console.auth.proxy_login(req, rules.access.as_deref()) {
            Some((id, _)) => signed_in(&id, next),
            None => refused(StatusCode::FORBIDDEN, "the proxy in front did not name a user of the access file"),
        };
    }
    html(StatusCode::OK, pages::login(None, (rules.access.is_some(), console.read_only), next))
}

/// To `next` (a page of this console, [`Route::landing`](super::routes::Route::landing)), else
/// the inbox, with the login's cookie.
fn signed_in(id: &str, next: Option<&str>) -> Answer {
    let mut response = redirect(next.unwrap_or("/inbox"));
    let cookie = format!("{COOKIE}={id}; HttpOnly; SameSite=Strict; Path=/; Max-Age={}", LOGIN_LIFE.as_secs());
    if let Ok(cookie) = HeaderValue::from_str(&cookie) {
        response.headers_mut().insert(header::SET_COOKIE, cookie);
    }
    response
}

pub(super) fn sign_in(console: &State, form: Posted, rules: &Rules) -> Answer {
    if console.auth.by_proxy() {
        return refused(StatusCode::FORBIDDEN, "the proxy in front signs people in");
    }
    // Behind a trusted proxy, the client it reports: one attacker locks out only themselves.
    let client = console.auth.client_of(&form.head);
    let personal = rules.access.is_some();
    let next = form.field("next").and_then(super::routes::Route::landing);
    let next = next.as_deref();
    let token = form.field("token").unwrap_or("");
    let name = match form.field("name").unwrap_or("") {
        "" if console.read_only => READER,
        name => name,
    };
    match console.auth.sign_in(client, (token, name), rules.access.as_deref()) {
        Ok((id, _)) => signed_in(&id, next),
        Err(Refusal::Wrong(why)) => {
            html(StatusCode::UNAUTHORIZED, pages::login(Some(why), (personal, console.read_only), next))
        }
        Err(Refusal::TooMany(wait)) => {
            let why = format!("Too many failed sign-ins from here: try again in {} s.", wait.as_secs().max(1));
            let page = pages::login(Some(&why), (personal, console.read_only), next);
            let mut answer = html(StatusCode::TOO_MANY_REQUESTS, page);
            if let Ok(after) = HeaderValue::from_str(&wait.as_secs().max(1).to_string()) {
                answer.headers_mut().insert(header::RETRY_AFTER, after);
            }
            answer
        }
    }
}

/// `POST /logout`: ends the login (its CSRF token checked by [`posted`](super::posted)), and
/// the cookie with it.
pub(super) fn sign_out(console: &State, form: Posted) -> Answer {
    let id = super::auth::cookie(&form.head, COOKIE).unwrap_or_default();
    console.auth.sign_out(&id);
    let mut response = redirect("/login");
    let gone = format!("{COOKIE}=; HttpOnly; SameSite=Strict; Path=/; Max-Age=0");
    if let Ok(gone) = HeaderValue::from_str(&gone) {
        response.headers_mut().insert(header::SET_COOKIE, gone);
    }
    response
}
