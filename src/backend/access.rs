//! [`AccessBook`]: the access file kept where sessions live (CONTRACT §18, amended: the rules
//! live with the sessions), as an operator installs and reads it — a capability a
//! [`Backend`](super::Backend) has or says it has not ([`Backend::access`](super::Backend::access)).

use super::BackendFuture;
use crate::session::InstalledAccess;

/// The access file of a place where sessions live: beside the session roots, or the tenant's in
/// the database. Every path that decides or acts reads the rules through a session's records
/// ([`SessionRecords::installed_access`](crate::session::SessionRecords::installed_access));
/// this is where they are installed.
///
/// ```
/// # planlock::block_on(async {
/// let dir = tempfile::tempdir()?;
/// let sessions = planlock::backend::connect(dir.path().to_str().unwrap(), None).await?;
/// let book = sessions.access().expect("files keep an access file");
/// assert!(book.installed_access().await?.is_none(), "none installed: one operator, names unverified");
/// book.install_access("users: { ada: {} }\n").await?;
/// assert!(book.installed_access().await?.is_some());
/// assert!(book.uninstall_access().await?);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// # }).unwrap();
/// ```
pub trait AccessBook: Send + Sync {
    /// The access file installed here; `None` when none is.
    fn installed_access(&self) -> BackendFuture<'_, Option<InstalledAccess>>;

    /// Installs `text` as the access file here, replacing the one installed; the caller has
    /// checked it (`review::access::Access::parse`).
    fn install_access<'a>(&'a self, text: &'a str) -> BackendFuture<'a, ()>;

    /// Removes the access file installed here: whether there was one.
    fn uninstall_access(&self) -> BackendFuture<'_, bool>;
}
