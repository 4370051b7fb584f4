//! Where a session lives, and opening it there: its session store, and the stores its bundle's
//! providers use. What a program does before [`Runtime::builder`](super::Runtime::builder), written
//! once for the CLI and for any program that embeds planlock.
//!
//! Layer 7 (with the runtime): imports sessions, stores and the PostgreSQL pool.

use std::fmt;
use std::path::PathBuf;

use crate::contract::registry::{Failure, FailureKind};
#[cfg(feature = "postgres")]
use crate::pg::{PgDatabase, PgError};
#[cfg(feature = "postgres")]
use crate::session::postgres::{MAX_SESSION_KEY_BYTES, PgRecords, PgSessionStore};
use crate::session::{BundlePinV1, FileRecords, FileSessionStore, SessionError, SessionRecords, SessionStore};
use crate::store::bundle::{BundleError, BundleManifest, StrategyResolver};
use crate::store::provider::{ProviderPlace, ResolvedStore};

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
        /// The session's key: a tenant or conversation id.
        key: String,
    },
}

/// Why a [`Place`] could not be opened.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum PlaceError {
    /// The session key is empty or too long.
    #[error("the session key must be 1 to {max} bytes long (it is {len})")]
    Key {
        /// Its length in bytes.
        len: usize,
        /// The longest allowed.
        max: usize,
    },
    /// The database could not be reached or used.
    #[cfg(feature = "postgres")]
    #[error(transparent)]
    Database(#[from] PgError),
    /// The session store could not be opened (a root that is not a directory, a lease held by
    /// another worker).
    #[error(transparent)]
    Session(#[from] SessionError),
    /// The providers the session's pin names could not be opened.
    #[error(transparent)]
    Bundle(#[from] BundleError),
    /// The embedder given is not the one the session's vectors were made with.
    #[error(
        "the session's vectors were made with {pinned}, not {current}: give the embedder it was pinned with (CLI: --embed-url and --embed-model)"
    )]
    EmbedderMismatch {
        /// The pinned model and dimension.
        pinned: String,
        /// The given one.
        current: String,
    },
}

impl PlaceError {
    /// Whether the caller's input was wrong (a bad key or URL), not the place: a command line
    /// reports it as a usage error.
    pub fn is_usage(&self) -> bool {
        match self {
            PlaceError::Key { .. } => true,
            #[cfg(feature = "postgres")]
            PlaceError::Database(PgError::Url { .. }) => true,
            _ => false,
        }
    }
}

impl Failure for PlaceError {
    /// `"invalid-session-key"`, or the source's code.
    fn code(&self) -> &'static str {
        match self {
            PlaceError::Key { .. } => "invalid-session-key",
            #[cfg(feature = "postgres")]
            PlaceError::Database(e) => e.code(),
            PlaceError::Session(e) => e.code(),
            PlaceError::Bundle(e) => e.code(),
            PlaceError::EmbedderMismatch { .. } => "embedder-mismatch",
        }
    }

    fn kind(&self) -> FailureKind {
        FailureKind::FailFast
    }
}

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
    /// under a root; a root must exist.
    pub fn open(&self) -> Result<OpenedPlace, PlaceError> {
        match self {
            Place::Root(root) => {
                let store = FileSessionStore::open(root)?;
                Ok(OpenedPlace { at: Opened::Root(root.clone(), store) })
            }
            #[cfg(feature = "postgres")]
            Place::Database { url, key } => {
                let db = connect(url, key)?;
                Ok(OpenedPlace { at: Opened::Database(PgSessionStore::open(&db, key)?) })
            }
        }
    }

    /// The session's records here, for reading without taking the session: no lock on a root,
    /// no lease in a database, so a worker running a cycle is not disturbed (and a read never
    /// answers "session in use"). A root must exist.
    pub fn records(&self) -> Result<Box<dyn SessionRecords>, PlaceError> {
        match self {
            Place::Root(root) => {
                existing(root)?;
                Ok(Box::new(FileRecords::new(root)))
            }
            #[cfg(feature = "postgres")]
            Place::Database { url, key } => Ok(Box::new(PgRecords::new(&connect(url, key)?, key)?)),
        }
    }

    /// The session's bundle pin here, read without taking the session (`None`: no cycle has
    /// completed yet). Blocks until it is read.
    pub fn pin(&self) -> Result<Option<BundlePinV1>, PlaceError> {
        Ok(crate::io::block_on(self.records()?.load_pin())?)
    }

    /// The memories and decisions here, for reading, as the session's cycles read them: through
    /// the providers its pin names (the place's default bundle while it has none), opened only
    /// to read (nothing created, no lock, no lease, so a running worker is not disturbed), with
    /// `resolver`'s embedder, which must be the one the session was pinned with (its vectors
    /// mean what that model meant). Blocks until the pin is read.
    pub fn read_stores(&self, resolver: &StrategyResolver) -> Result<ResolvedStore, PlaceError> {
        let pin = self.pin()?;
        let manifest = match &pin {
            Some(BundlePinV1 {
                bundle_id,
                strategy_provider_id: Some(strategy),
                memory_provider_id: Some(memory),
                ..
            }) => BundleManifest::pinned(bundle_id, strategy, memory),
            _ => self.default_bundle(),
        };
        if let Some(BundlePinV1 { embedder_model: Some(model), embedder_dimension: Some(dimension), .. }) = &pin {
            let current = resolver.embedder_of(&manifest);
            if current.is_none_or(|(m, d)| m != model || d as u64 != *dimension) {
                let name = |m: &str, d| format!("`{}` ({d} dimensions)", crate::text::printable(m));
                return Err(PlaceError::EmbedderMismatch {
                    pinned: name(model, *dimension),
                    current: current.map_or_else(|| "no embedder".to_owned(), |(m, d)| name(m, d as u64)),
                });
            }
        }
        match self {
            Place::Root(root) => {
                existing(root)?;
                Ok(resolver.resolve_to_read(&manifest, ProviderPlace::Root(root))?)
            }
            #[cfg(feature = "postgres")]
            Place::Database { url, key } => {
                // A session of its own, whose cycle is never opened: nothing joins a worker's.
                let session = crate::pg::PgSession::new(&connect(url, key)?, key);
                Ok(resolver.resolve_to_read(&manifest, ProviderPlace::Session(&session))?)
            }
        }
    }
}

/// `root`, which a read needs to exist (a typo in a path is not an empty session).
fn existing(root: &std::path::Path) -> Result<(), SessionError> {
    let missing = |source| SessionError::Root { root: root.to_owned(), source };
    let meta = std::fs::metadata(root).map_err(missing)?;
    if !meta.is_dir() {
        return Err(missing(std::io::Error::new(std::io::ErrorKind::NotADirectory, "not a directory")));
    }
    Ok(())
}

/// The database at `url`, for the session `key`.
#[cfg(feature = "postgres")]
fn connect(url: &str, key: &str) -> Result<PgDatabase, PlaceError> {
    if key.is_empty() || key.len() > MAX_SESSION_KEY_BYTES {
        return Err(PlaceError::Key { len: key.len(), max: MAX_SESSION_KEY_BYTES });
    }
    Ok(PgDatabase::connect(url)?)
}

/// What a session was opened on, with its session store.
enum Opened {
    Root(PathBuf, FileSessionStore),
    #[cfg(feature = "postgres")]
    Database(PgSessionStore),
}

/// A [`Place`] opened: its session store, and where its bundle's providers open theirs.
pub struct OpenedPlace {
    at: Opened,
}

impl fmt::Debug for OpenedPlace {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let at = match &self.at {
            Opened::Root(root, _) => root.display().to_string(),
            #[cfg(feature = "postgres")]
            Opened::Database(store) => format!("session `{}`", crate::text::printable(store.key())),
        };
        f.debug_struct("OpenedPlace").field("at", &at).finish_non_exhaustive()
    }
}

impl OpenedPlace {
    /// The session store.
    pub fn session_store(&self) -> &dyn SessionStore {
        match &self.at {
            Opened::Root(_, store) => store,
            #[cfg(feature = "postgres")]
            Opened::Database(store) => store,
        }
    }

    /// The stores of `manifest`'s providers, opened here by `resolver`: under the root, or in
    /// the database session's namespace and cycles.
    pub fn resolve(
        &self,
        resolver: &StrategyResolver,
        manifest: &BundleManifest,
    ) -> Result<ResolvedStore, BundleError> {
        match &self.at {
            Opened::Root(root, _) => resolver.resolve(manifest, root),
            #[cfg(feature = "postgres")]
            Opened::Database(store) => resolver.resolve_for_session(manifest, store.session()),
        }
    }

    /// The session store, to boot a runtime on.
    pub fn into_session_store(self) -> Box<dyn SessionStore> {
        match self.at {
            Opened::Root(_, store) => Box::new(store),
            #[cfg(feature = "postgres")]
            Opened::Database(store) => Box::new(store),
        }
    }
}
