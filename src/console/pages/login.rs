//! The sign-in page.

use serde::Serialize;

use super::super::templates::{page, render};

/// The sign-in page: a personal token (with an access file), or the console's token and a name
/// (one operator, names unverified); `next` is the page it lands on after.
pub fn login(error: Option<&str>, (personal, read_only): (bool, bool), next: Option<&str>) -> String {
    #[derive(Serialize)]
    struct Login<'a> {
        error: Option<&'a str>,
        personal: bool,
        read_only: bool,
        next: Option<&'a str>,
    }
    page("Sign in", 0, None, render("login.html", Login { error, personal, read_only, next }))
}
