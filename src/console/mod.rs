//! The console (CONTRACT §15): sessions, one session's cycles and the inbox in a web page, and
//! the forms that approve or reject a pause. [`Console`] is a tower [`Service`](tower_service::Service) a program mounts
//! in its own server (axum's `nest_service`, hyper through `hyper-util`'s adapter); `planlock
//! serve` (the crate `planlock-cli`) runs it in a bounded server of its own. Each request is answered
//! on planlock's one I/O runtime ([`io_handle`](crate::io_handle)); a server that puts the
//! client's address in the request ([`ClientAddr`]) has failed sign-ins counted per client.
//!
//! Secure by default: every page but the login needs a signed-in browser (the console's token,
//! [`new_token`] or one given, at least 16 characters); every POST needs the login's CSRF token
//! and, when the browser sends one, an `Origin` equal to the console's own; every response
//! carries a strict Content-Security-Policy (no inline script or style) and every value is
//! escaped for its context (`templates.rs`); a read-only console serves no action. Bounded:
//! pages are paged, bodies capped at 16 KiB (an edit's at 256 KiB).
//!
//! Layer 8, beside the runtime (CONTRIBUTING.md, "The layers"; `tests/it/layers.rs` holds them).

mod answer;
mod auth;
mod cache;
mod decide;
mod events;
mod flash;
mod login;
mod options;
mod pages;
mod posted;
mod read;
mod routes;
mod rules;
mod service;
mod state;
mod templates;
mod view;

pub use answer::Answer;
pub use auth::{ClientAddr, FAILURE_WINDOW, LOCKOUT, LOGIN_LIFE, MAX_FAILURES, PROXY_SECRET_HEADER};
pub use options::{ConsoleError, ConsoleOptions, MIN_TOKEN_CHARS, new_token};
pub use rules::RulesLog;
pub use service::Console;
