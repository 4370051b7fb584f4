//! Making the backend of a place a user gives: a directory of session roots, or a database URL.

use std::sync::Arc;

use super::{Backend, BackendError, BackendFuture, FilesBackend};

/// How a backend of a database is made from its URL and tenant: each backend built in that keeps
/// sessions in a database has one (`DATABASE`, where the backends are declared).
pub(super) type Connector = for<'a> fn(&'a str, Option<&'a str>) -> BackendFuture<'a, Arc<dyn Backend>>;

/// Whether `place` names a PostgreSQL database — a `postgres://` or `postgresql://` URL — rather
/// than a directory of session roots: the one test of it, for every place a user may give.
///
/// ```
/// assert!(planlock::backend::is_database_url("postgres://db.internal/planlock"));
/// assert!(!planlock::backend::is_database_url("postgres-sessions"));
/// ```
pub fn is_database_url(place: &str) -> bool {
    place.starts_with("postgres://") || place.starts_with("postgresql://")
}

/// Makes the backend of `place`: a `postgres://` or `postgresql://` URL (connected and migrated,
/// with a pool of its own, closed when the backend is dropped; in `tenant` if one is given), or
/// a directory of session roots (which must exist; a tenant is refused there). Make it once and
/// keep it for as long as the sessions are used.
pub async fn connect(place: &str, tenant: Option<&str>) -> Result<Arc<dyn Backend>, BackendError> {
    if is_database_url(place) {
        return match super::DATABASE {
            Some(connect) => connect(place, tenant).await,
            None => Err(BackendError::Unknown(
                "a database (this build has no feature `postgres`: build with it to use one)".to_owned(),
            )),
        };
    }
    if tenant.is_some() {
        return Err(BackendError::TenantNeedsDatabase);
    }
    Ok(Arc::new(FilesBackend::existing(place)?))
}
