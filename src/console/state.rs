//! What every request of one console shares ([`State`]), and what a handler asks of it.

use super::auth::{Auth, Login};
use super::cache::Cache;
use super::flash::Flashes;
use super::pages::Forms;
use super::rules::{LiveRules, Rules};
use crate::review::inbox::Inbox;

/// What every request of one console shares.
pub(super) struct State {
    pub(super) inbox: Inbox,
    pub(super) auth: Auth,
    pub(super) rules: LiveRules,
    pub(super) read_only: bool,
    pub(super) cache: Cache,
    pub(super) flashes: Flashes,
    pub(super) trace_url: Option<String>,
}

impl State {
    /// What a page's forms need for `login`: its CSRF token, who it is, where it may decide.
    pub(super) fn forms<'a>(&'a self, login: &'a Login, rules: &'a Rules) -> Forms<'a> {
        Forms { login, read_only: self.read_only, rules }
    }

    /// The session a path segment names (decoded): under a directory, one plain name of a root
    /// there (no separator, no `..`: nothing outside the directory); in a database, a key (1 to
    /// 256 bytes).
    pub(super) fn session_name(&self, name: String) -> Option<String> {
        self.inbox.backend().is_session_name(&name).then_some(name)
    }
}
