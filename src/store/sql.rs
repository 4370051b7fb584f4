//! What the stores that keep their decisions in SQL (SQLite, PostgreSQL) share.

use super::Scope;

impl<'a> Scope<'a> {
    /// The scope as SQL stores it: a kind (`global`, `axis`, `domain`) and the domain's name.
    pub(crate) fn columns(self) -> (&'static str, Option<&'a str>) {
        match self {
            Scope::Global => ("global", None),
            Scope::Axis => ("axis", None),
            Scope::Domain(name) => ("domain", Some(name)),
        }
    }
}
