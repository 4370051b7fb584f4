//! The result of an action, shown once on the page the action returns to (CONTRACT §15): kept
//! on the server under an id it made, for the login that acted, and taken when that page is
//! read. The URL carries only the id, so no text a link holds is ever shown as a result.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use serde::Serialize;

/// How long a result waits to be shown.
const FLASH_LIFE: Duration = Duration::from_secs(300);
/// The most results one login keeps waiting; past it that login's oldest goes (never another
/// login's: one person's many refused POSTs push away only their own results).
const MAX_FLASHES_PER_LOGIN: usize = 16;
/// The most results kept in all (a bound on memory); past it the oldest goes.
const MAX_FLASHES: usize = 100_000;

/// A result: what happened, and whether it is an error (styled as one).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Flash {
    /// `ok` or `error`.
    pub kind: &'static str,
    /// What happened, naming the session and step.
    pub text: String,
    /// A refused decision's verdict and the reason the person typed: the form shows it again.
    #[serde(skip)]
    pub kept: Option<(&'static str, String)>,
}

impl Flash {
    /// A success.
    pub fn ok(text: String) -> Flash {
        Flash { kind: "ok", text, kept: None }
    }

    /// A refusal or failure.
    pub fn error(text: String) -> Flash {
        Flash { kind: "error", text, kept: None }
    }
}

impl Flash {
    /// This refusal, keeping the reason typed for `verdict`'s form.
    pub fn keeping(mut self, verdict: &'static str, reason: String) -> Flash {
        self.kept = Some((verdict, reason));
        self
    }
}

/// The results waiting to be shown, by id.
#[derive(Default)]
pub struct Flashes {
    kept: Mutex<HashMap<String, (String, Instant, Flash)>>,
}

impl Flashes {
    /// Keeps `flash` for the login whose CSRF token is `login`: its id.
    pub fn put(&self, login: &str, flash: Flash) -> String {
        let id = super::auth::secret()[..32].to_owned();
        let mut kept = self.kept.lock().unwrap_or_else(|p| p.into_inner());
        kept.retain(|_, (_, at, _)| at.elapsed() < FLASH_LIFE);
        let oldest = |kept: &HashMap<String, (String, Instant, Flash)>, of: Option<&str>| {
            let theirs = kept.iter().filter(|(_, (owner, _, _))| of.is_none_or(|o| owner == o));
            theirs.min_by_key(|(_, (_, at, _))| *at).map(|(id, _)| id.clone())
        };
        if kept.values().filter(|(owner, _, _)| owner == login).count() >= MAX_FLASHES_PER_LOGIN
            && let Some(oldest) = oldest(&kept, Some(login))
        {
            kept.remove(&oldest);
        }
        if kept.len() >= MAX_FLASHES
            && let Some(oldest) = oldest(&kept, None)
        {
            kept.remove(&oldest);
        }
        kept.insert(id.clone(), (login.to_owned(), Instant::now(), flash));
        id
    }

    /// The result `id` of the login `login`, once: `None` for an id it did not make, another
    /// login's, or one shown already.
    pub fn take(&self, login: &str, id: &str) -> Option<Flash> {
        let mut kept = self.kept.lock().unwrap_or_else(|p| p.into_inner());
        match kept.get(id) {
            Some((owner, at, _)) if owner == login && at.elapsed() < FLASH_LIFE => kept.remove(id).map(|(_, _, f)| f),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_result_is_shown_once_and_only_to_its_login() {
        let flashes = Flashes::default();
        let id = flashes.put("login-a", Flash::ok("Recorded".into()));
        assert_eq!(flashes.take("login-b", &id), None, "another login's");
        assert_eq!(flashes.take("login-a", "made-up"), None);
        assert_eq!(flashes.take("login-a", &id), Some(Flash::ok("Recorded".into())));
        assert_eq!(flashes.take("login-a", &id), None, "shown once");
    }

    #[test]
    fn one_logins_many_results_push_away_only_its_own() {
        let flashes = Flashes::default();
        let bobs = flashes.put("login-bob", Flash::ok("bob's".into()));
        for _ in 0..1001 {
            flashes.put("login-ada", Flash::error("refused".into()));
        }
        assert_eq!(flashes.take("login-bob", &bobs), Some(Flash::ok("bob's".into())), "bob's result waited");
    }
}
