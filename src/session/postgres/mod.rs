//! [`PgSessionStore`]: a session in PostgreSQL, keyed by a session key the caller chooses, for
//! many workers on many machines (docs/CONTRACT.md, "More than one machine").
//!
//! One row of `planlock_sessions` holds the session state, the record of a paused cycle, the
//! reserved id and the bundle pin (each the JSON the file store writes, read back as strictly),
//! a `row_version` and a lease (`lease_owner`, `lease_until`).
//!
//! - Opening the store takes the lease: refused ("session in use") while another worker's lease
//!   runs; taken over once it has run out.
//! - Every write is one `UPDATE … WHERE row_version = $seen AND lease_owner = $me`: a worker whose
//!   lease was taken over (it stalled past it) finds no row to update, writes nothing, and gets
//!   [`SessionError::Fenced`](crate::session::SessionError::Fenced) (FailFast). Each write also
//!   extends the lease.
//! - A cycle is one value: the store begins it
//!   ([`SessionStore::begin_cycle`](crate::session::SessionStore::begin_cycle)), the runtime keeps
//!   it and hands it to the cycle's steps, and the stores of the session (its
//!   [`PgSession`](crate::pg::PgSession)) join it: the cycle's writes are kept in it and sent with
//!   the end of the cycle ([`SessionStore::end_cycle`](crate::session::SessionStore::end_cycle):
//!   the session state or the record of the pause, and the pin due, in its compare-and-set), after
//!   that compare-and-set and before its COMMIT, in one round trip; a write that fails there is its
//!   step's ([`SessionError::StepWrite`](crate::session::SessionError::StepWrite)), and a cycle
//!   that ends otherwise sends nothing.
//! - Dropping the store gives the lease back, so the next worker need not wait for it to run out.
//! - The store holds no connection between its operations: each takes one from the pool and
//!   gives it back, so a worker keeps as many sessions open as it likes on a few connections.

mod access;
mod budget;
mod records;
mod store;

pub use access::{install_access, installed_access, uninstall_access};
pub use budget::{PgBudget, budgets, remove_budget, set_budget};
pub use records::PgRecords;
pub(crate) use records::{paused_sessions, session_page};
use store::{Column, check_key};
pub use store::{DEFAULT_LEASE, MAX_SESSION_KEY_BYTES, PgSessionStore};
