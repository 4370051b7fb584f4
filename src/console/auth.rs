//! Who is signed in to the console (CONTRACT §18), in one of three ways:
//!
//! - **One operator** (no access file): the console's token and a name typed at sign-in; every
//!   decision is recorded with the name marked unverified.
//! - **Personal tokens** (an access file): each person signs in with their own token (compared
//!   in constant time); their name comes from the file, nothing typed.
//! - **A proxy** (an access file, a user header and the proxy's shared secret): the proxy signs
//!   people in; every request must carry the secret, and the header must name a user of the file.
//!
//! The rules are the console's live ones ([`Rules`](super::rules::Rules), read for every
//! request): a login is good only while they still name its person (or, without rules, while
//! it is the operator's), so a person removed from the file is signed out at once.
//!
//! Logins expire ([`LOGIN_LIFE`]) and can be signed out; a person holds at most
//! [`MAX_LOGINS_PER_PERSON`] (their oldest goes, nobody else's). A client that fails to sign in
//! [`MAX_FAILURES`] times within [`FAILURE_WINDOW`] is answered 429 for [`LOCKOUT`], its tries
//! not even looked at; behind a trusted proxy (one that sends the shared secret) the client is
//! the one the proxy reports in `X-Forwarded-For`, so one attacker does not lock out everyone
//! behind the proxy.
//!
//! Layer 8, with the console.

use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use hyper::Request;
use hyper::header;
use subtle::ConstantTimeEq;

use crate::review::access::Access;

/// How long a login lasts.
pub const LOGIN_LIFE: Duration = Duration::from_secs(12 * 3600);
/// How many failed sign-ins of one client within [`FAILURE_WINDOW`] lock it out.
pub const MAX_FAILURES: usize = 5;
/// The window [`MAX_FAILURES`] are counted in.
pub const FAILURE_WINDOW: Duration = Duration::from_secs(60);
/// How long a locked-out client is answered 429.
pub const LOCKOUT: Duration = Duration::from_secs(300);
/// The header a proxy sends the shared secret in (`--proxy-secret-env`).
pub const PROXY_SECRET_HEADER: &str = "x-planlock-proxy-secret";
/// The most logins one person holds; past it their oldest is dropped.
pub const MAX_LOGINS_PER_PERSON: usize = 32;
/// The most logins held in all (a bound on memory); past it the oldest is dropped.
const MAX_LOGINS: usize = 100_000;
/// The most clients whose failures are remembered; past it the longest quiet is forgotten.
const MAX_CLIENTS: usize = 10_000;
/// The login cookie.
pub const COOKIE: &str = "planlock_console";

/// The client address of a request, which the server puts in the request's extensions
/// (`planlock serve` does): failed sign-ins are counted, and locked out, per address. A console
/// mounted in a server that puts none there counts all its clients as one.
///
/// ```
/// use planlock::console::ClientAddr;
/// let mut request = hyper::Request::get("/login").body(()).unwrap();
/// request.extensions_mut().insert(ClientAddr("192.0.2.7".parse().unwrap()));
/// ```
#[derive(Debug, Clone, Copy)]
pub struct ClientAddr(pub IpAddr);

/// A signed-in browser.
#[derive(Debug, Clone)]
pub struct Login {
    /// Who: a user of the access file, or the name typed (unverified).
    pub name: String,
    /// Whether an access file vouches for the name.
    pub verified: bool,
    /// The login's CSRF token, which its forms carry.
    pub csrf: String,
    since: Instant,
}

impl Login {
    /// Whether `rules` still hold this login: a person's while they name them, the operator's
    /// while there are none.
    fn held(&self, rules: Option<&Access>) -> bool {
        match rules {
            Some(access) => self.verified && access.is_user(&self.name),
            None => !self.verified,
        }
    }
}

/// How the console knows people (see the module docs).
pub struct Auth {
    token: String,
    /// The header a proxy names its user in.
    user_header: Option<String>,
    /// The secret a trusted proxy sends with every request.
    proxy_secret: Option<String>,
    logins: Mutex<HashMap<String, Login>>,
    /// Logins the rules ended (their person removed), by cookie id: their POSTs are answered
    /// `not-an-approver`, not a sign-in page.
    revoked: Mutex<HashMap<String, String>>,
    failures: Mutex<HashMap<Option<IpAddr>, Tries>>,
}

/// A client's recent failed sign-ins.
#[derive(Default)]
struct Tries {
    failed: Vec<Instant>,
    locked_until: Option<Instant>,
}

/// Why a sign-in was refused.
pub enum Refusal {
    /// Too many failures: try again after this long.
    TooMany(Duration),
    /// The token (or the name) does not sign anyone in; the message says which.
    Wrong(&'static str),
}

/// A fresh secret: 256 random bits as hex (two v4 UUIDs where the system has no random source).
pub fn secret() -> String {
    let mut bytes = [0u8; 32];
    match getrandom::fill(&mut bytes) {
        Ok(()) => bytes.iter().map(|b| format!("{b:02x}")).collect(),
        Err(_) => format!("{}{}", uuid::Uuid::new_v4().simple(), uuid::Uuid::new_v4().simple()),
    }
}

/// Compares two secrets in time independent of where they differ.
pub fn same_secret(a: &str, b: &str) -> bool {
    a.len() == b.len() && bool::from(a.as_bytes().ct_eq(b.as_bytes()))
}

impl Auth {
    /// One operator with `token` or personal tokens (as the rules say, request by request); a
    /// proxy's users (`user_header`) or a proxy that only reports clients, each with its shared
    /// `proxy_secret`.
    pub fn new(token: String, user_header: Option<String>, proxy_secret: Option<String>) -> Auth {
        let (logins, revoked, failures) = (Mutex::default(), Mutex::default(), Mutex::default());
        Auth { token, user_header, proxy_secret, logins, revoked, failures }
    }

    /// Whether a proxy signs people in.
    pub fn by_proxy(&self) -> bool {
        self.user_header.is_some()
    }

    /// Whether `login` may decide on `validator`'s pauses under `rules` (anyone without them).
    pub fn may_decide(login: &Login, validator: &str, rules: Option<&Access>) -> bool {
        rules.is_none_or(|access| access.may_decide(&login.name, validator))
    }

    /// Whether `req` carries the trusted proxy's secret.
    fn sent_by_proxy<B>(&self, req: &Request<B>) -> bool {
        let Some(secret) = &self.proxy_secret else { return false };
        let sent = req.headers().get(PROXY_SECRET_HEADER).and_then(|v| v.to_str().ok());
        sent.is_some_and(|sent| same_secret(sent, secret))
    }

    /// The client whose sign-ins are counted: the one a trusted proxy reports (the last address
    /// of `X-Forwarded-For`, which it appends), else the connection's.
    pub fn client_of<B>(&self, req: &Request<B>) -> Option<IpAddr> {
        let own = req.extensions().get::<ClientAddr>().map(|c| c.0);
        if !self.sent_by_proxy(req) {
            return own;
        }
        let forwarded = req.headers().get_all("x-forwarded-for").iter().filter_map(|v| v.to_str().ok()).next_back();
        forwarded.and_then(|v| v.rsplit(',').next()).and_then(|a| a.trim().parse().ok()).or(own)
    }

    /// The proxy's user of `req`, when its secret is the one the console was given and its
    /// header, sent once, names a user of `rules`.
    fn proxy_user<B>(&self, req: &Request<B>, rules: Option<&Access>) -> Option<String> {
        let user_header = self.user_header.as_ref()?;
        if !self.sent_by_proxy(req) {
            return None;
        }
        // A repeated identity header is refused: which one the proxy meant cannot be known.
        let mut values = req.headers().get_all(user_header.as_str()).iter();
        let (Some(value), None) = (values.next(), values.next()) else { return None };
        let name = value.to_str().ok()?.trim();
        rules.filter(|access| access.is_user(name)).map(|_| name.to_owned())
    }

    /// The live login of the request's cookie under `rules`: a person's while the rules still
    /// name them, the operator's while there are none (behind a proxy: only while the proxy
    /// still names that login's user, with its secret). A login the rules no longer hold is
    /// ended.
    pub fn login_of<B>(&self, req: &Request<B>, rules: Option<&Access>) -> Option<Login> {
        let id = cookie(req, COOKIE)?;
        let mut logins = self.logins.lock().unwrap_or_else(|p| p.into_inner());
        let login = logins.get(&id)?.clone();
        let held = login.held(rules);
        if login.since.elapsed() >= LOGIN_LIFE || !held {
            logins.remove(&id);
            if !held && login.verified {
                let mut revoked = self.revoked.lock().unwrap_or_else(|p| p.into_inner());
                if revoked.len() >= MAX_LOGINS {
                    revoked.clear();
                }
                revoked.insert(id, login.name);
            }
            return None;
        }
        drop(logins);
        if self.by_proxy() && self.proxy_user(req, rules).as_deref() != Some(login.name.as_str()) {
            return None;
        }
        Some(login)
    }

    /// The person whose login of the request's cookie the rules ended (removed from the access
    /// file), if it is one.
    pub fn revoked<B>(&self, req: &Request<B>) -> Option<String> {
        let id = cookie(req, COOKIE)?;
        self.revoked.lock().unwrap_or_else(|p| p.into_inner()).get(&id).cloned()
    }

    /// The login of cookie id `id` while it is live under `rules` (an event stream asks while
    /// it runs: it ends at sign-out, expiry, or the person's removal).
    pub fn live(&self, id: &str, rules: Option<&Access>) -> Option<Login> {
        let logins = self.logins.lock().unwrap_or_else(|p| p.into_inner());
        logins.get(id).filter(|login| login.held(rules) && login.since.elapsed() < LOGIN_LIFE).cloned()
    }

    /// Behind a proxy, a login for the user it names (a cookie id and the login); `None` when it
    /// names none (or without its secret).
    pub fn proxy_login<B>(&self, req: &Request<B>, rules: Option<&Access>) -> Option<(String, Login)> {
        let name = self.proxy_user(req, rules)?;
        Some(self.keep(name, true))
    }

    /// A sign-in by `client` with the form's `token` and (one operator) `name` under `rules`: a
    /// cookie id and the login, or why not. A locked-out client's try is not looked at; an empty
    /// token signs nobody in.
    pub fn sign_in(
        &self,
        client: Option<IpAddr>,
        (token, name): (&str, &str),
        rules: Option<&Access>,
    ) -> Result<(String, Login), Refusal> {
        let now = Instant::now();
        if let Some(wait) = self.locked(client, now) {
            return Err(Refusal::TooMany(wait));
        }
        let signed = match rules {
            Some(access) => access.sign_in(token).map(|user| (user.to_owned(), true)).ok_or("That token is no one's."),
            None if token.is_empty() || !same_secret(token, &self.token) => Err("That is not the console's token."),
            None if name.trim().is_empty() || name.trim().chars().count() > 200 => {
                return Err(Refusal::Wrong("Give your name (at most 200 characters)."));
            }
            None => Ok((name.trim().to_owned(), false)),
        };
        match signed {
            Ok((name, verified)) => Ok(self.keep(name, verified)),
            Err(why) => {
                self.failed(client, now);
                Err(Refusal::Wrong(why))
            }
        }
    }

    /// Ends the login of cookie id `id`.
    pub fn sign_out(&self, id: &str) {
        self.logins.lock().unwrap_or_else(|p| p.into_inner()).remove(id);
    }

    /// A new login for `name`, kept: past [`MAX_LOGINS_PER_PERSON`] of theirs, their oldest is
    /// dropped (never another person's); past [`MAX_LOGINS`] in all, the oldest.
    fn keep(&self, name: String, verified: bool) -> (String, Login) {
        let id = secret();
        let login = Login { name, verified, csrf: secret(), since: Instant::now() };
        let mut logins = self.logins.lock().unwrap_or_else(|p| p.into_inner());
        logins.retain(|_, l| l.since.elapsed() < LOGIN_LIFE);
        let oldest_of = |logins: &HashMap<String, Login>, whose: Option<&str>| {
            let mine = logins.iter().filter(|(_, l)| whose.is_none_or(|w| l.name == w));
            mine.min_by_key(|(_, l)| l.since).map(|(k, _)| k.clone())
        };
        if logins.values().filter(|l| l.name == login.name).count() >= MAX_LOGINS_PER_PERSON
            && let Some(oldest) = oldest_of(&logins, Some(&login.name))
        {
            logins.remove(&oldest);
        }
        if logins.len() >= MAX_LOGINS
            && let Some(oldest) = oldest_of(&logins, None)
        {
            logins.remove(&oldest);
        }
        logins.insert(id.clone(), login.clone());
        (id, login)
    }

    /// How long `client` is still locked out, if it is.
    fn locked(&self, client: Option<IpAddr>, now: Instant) -> Option<Duration> {
        let failures = self.failures.lock().unwrap_or_else(|p| p.into_inner());
        let until = failures.get(&client)?.locked_until?;
        (until > now).then(|| until - now)
    }

    /// Counts a failed sign-in of `client`; the [`MAX_FAILURES`]th within [`FAILURE_WINDOW`]
    /// locks it out for [`LOCKOUT`].
    fn failed(&self, client: Option<IpAddr>, now: Instant) {
        let mut failures = self.failures.lock().unwrap_or_else(|p| p.into_inner());
        if failures.len() >= MAX_CLIENTS && !failures.contains_key(&client) {
            let quietest = failures.iter().min_by_key(|(_, t)| t.failed.last().copied()).map(|(k, _)| *k);
            if let Some(quietest) = quietest {
                failures.remove(&quietest);
            }
        }
        let tries = failures.entry(client).or_default();
        tries.failed.retain(|at| now.duration_since(*at) < FAILURE_WINDOW);
        tries.failed.push(now);
        if tries.failed.len() >= MAX_FAILURES {
            tries.failed.clear();
            tries.locked_until = Some(now + LOCKOUT);
        }
    }
}

/// The value of cookie `name`.
pub fn cookie<B>(req: &Request<B>, name: &str) -> Option<String> {
    req.headers().get_all(header::COOKIE).iter().filter_map(|v| v.to_str().ok()).find_map(|v| {
        v.split(';').find_map(|pair| {
            let (k, value) = pair.trim().split_once('=')?;
            (k == name).then(|| value.to_owned())
        })
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn five_failures_in_a_minute_lock_the_client_out_and_the_right_token_then_waits_too() {
        let auth = Auth::new("the console's token".into(), None, None);
        let client = Some(IpAddr::from([127, 0, 0, 9]));
        for _ in 0..MAX_FAILURES {
            assert!(matches!(auth.sign_in(client, ("guess", "ada"), None), Err(Refusal::Wrong(_))));
        }
        assert!(matches!(auth.sign_in(client, ("the console's token", "ada"), None), Err(Refusal::TooMany(_))));
        // Another client is not held up by it.
        assert!(auth.sign_in(Some(IpAddr::from([127, 0, 0, 8])), ("the console's token", "ada"), None).is_ok());
    }

    #[test]
    fn one_person_signing_in_again_and_again_signs_only_themselves_out() {
        let auth = Auth::new("the console's token".into(), None, None);
        let (bob, _) = auth.sign_in(None, ("the console's token", "bob"), None).ok().unwrap();
        for _ in 0..1001 {
            auth.sign_in(None, ("the console's token", "ada"), None).ok().unwrap();
        }
        assert!(auth.live(&bob, None).is_some(), "bob's login stays");
        let logins = auth.logins.lock().unwrap();
        assert_eq!(logins.values().filter(|l| l.name == "ada").count(), MAX_LOGINS_PER_PERSON);
    }
}
