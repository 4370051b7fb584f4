//! Where one session lives, said in one value: a root's path, or a database's URL and the
//! session's key. A shorthand for a [`Backend`] and a session's name in it (what
//! [`Place::backend`] gives), kept for the programs written against it; the work is the
//! backend's ([`crate::backend`]).
//!
//! Layer 8, with the runtime (CONTRIBUTING.md, "The layers"; `tests/it/layers.rs` holds them).

use std::fmt;
use std::path::PathBuf;
use std::sync::Arc;

use crate::backend::{Backend, BackendError, FilesBackend, OpenedSession};
use crate::session::{BundlePinV1, SessionRecords};
use crate::store::bundle::{BundleManifest, StrategyResolver};
use crate::store::provider::ResolvedStore;

/// Where a session lives: files under a root, or a namespace (the session key) of a shared
/// PostgreSQL database.
///
/// ```
/// use planlock::runtime::place::Place;
/// let dir = tempfile::tempdir()?;
/// let place = Place::Root(dir.path().to_owned());
/// let opened = place.open()?;
/// let session = planlock::block_on(opened.session_store().load())?;
/// assert!(session.is_none(), "a new place holds no session");
/// assert_eq!(place.default_bundle().bundle_id, "default");
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Place {
    /// Files under this root (`ops/runtime/…` for the session, `ops/store/…` for the stores).
    Root(PathBuf),
    /// The session `key` (1 to 256 bytes) of the database at `url`.
    #[cfg(feature = "postgres")]
    Database {
        /// `postgres://user:password@host/db`; the password is never shown.
        url: String,
        /// The session's key: a conversation id.
        key: String,
        /// The tenant the session belongs to (CONTRACT §20), if the database has tenants.
        tenant: Option<String>,
    },
}

/// Why a [`Place`] could not be opened: the [`Backend`]'s error.
pub type PlaceError = BackendError;

/// A [`Place`] opened: its session store, and where its bundle's providers open theirs.
pub type OpenedPlace = Box<dyn OpenedSession>;

impl fmt::Display for Place {
    /// What messages call it: the root's path, or "session `KEY`" (never the URL).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Place::Root(root) => write!(f, "{}", root.display()),
            #[cfg(feature = "postgres")]
            Place::Database { key, .. } => write!(f, "session `{}`", crate::text::printable(key)),
        }
    }
}

impl Place {
    /// The backend of this place and the session's name in it. A database is connected (once per
    /// URL in a process); a key that cannot be one is refused first.
    pub fn backend(&self) -> Result<(Arc<dyn Backend>, String), PlaceError> {
        match self {
            Place::Root(root) => {
                let (backend, name) = FilesBackend::of_root(root)?;
                Ok((Arc::new(backend), name))
            }
            #[cfg(feature = "postgres")]
            Place::Database { url, key, tenant } => {
                let max = crate::session::postgres::MAX_SESSION_KEY_BYTES;
                if key.is_empty() || key.len() > max {
                    return Err(PlaceError::Key { len: key.len(), max });
                }
                let backend = crate::io::block_on(crate::backend::PgBackend::connect(url, tenant.as_deref()))?;
                Ok((Arc::new(backend), key.clone()))
            }
        }
    }

    /// The bundle a session here uses when none is named: providers `hierarchical-sql` and
    /// `sqlite` under a root, their PostgreSQL counterparts in a database.
    pub fn default_bundle(&self) -> BundleManifest {
        match self {
            Place::Root(_) => BundleManifest::default_bundle(),
            #[cfg(feature = "postgres")]
            Place::Database { .. } => BundleManifest::default_shared_bundle(),
        }
    }

    /// Opens the session store here (a database session's lease is taken). Creates nothing
    /// under a root; a root must exist. Blocks until it is open ([`Backend::open`], awaited).
    pub fn open(&self) -> Result<OpenedPlace, PlaceError> {
        let (backend, name) = self.backend()?;
        crate::io::block_on(backend.open(&name))
    }

    /// The session's records here, for reading without taking the session: no lock on a root,
    /// no lease in a database, so a worker running a cycle is not disturbed (and a read never
    /// answers "session in use"). A root must exist, and a database must have the session.
    pub fn records(&self) -> Result<Box<dyn SessionRecords>, PlaceError> {
        let (backend, name) = self.backend()?;
        crate::io::block_on(backend.records(&name))
    }

    /// The session's bundle pin here, read without taking the session (`None`: no cycle has
    /// completed yet). Blocks until it is read.
    pub fn pin(&self) -> Result<Option<BundlePinV1>, PlaceError> {
        Ok(crate::io::block_on(self.records()?.load_pin())?)
    }

    /// The memories and decisions here, for reading, as the session's cycles read them
    /// ([`backend::read_stores`](crate::backend::read_stores)). Blocks until they are open.
    pub fn read_stores(&self, resolver: &StrategyResolver) -> Result<ResolvedStore, PlaceError> {
        let (backend, name) = self.backend()?;
        crate::io::block_on(crate::backend::read_stores(backend.as_ref(), &name, resolver))
    }
}
