//! Where the sessions a command names live, said once (cargo's one `--manifest-path` helper):
//! the flags of one session (`--root DIR`, or `--database URL --session KEY [--tenant T]`) and of
//! many (`--sessions DIR|URL`, `--database URL [--tenant T | --all-tenants]`) become one
//! [`Backend`], made once and held for the whole command (one database pool, released when the
//! command ends).

use std::fmt;
use std::sync::Arc;

use planlock::backend::{Backend, BackendError, FilesBackend, OpenedSession, PgBackend};
use planlock::session::SessionRecords;

use crate::args::{SessionPlace, SessionsArgs, from_env};
use crate::error::CliError;

/// One session, located: the backend it lives in and its name there.
pub struct Located {
    /// Where it lives (held for the command: one pool).
    pub backend: Arc<dyn Backend>,
    /// Its name in the backend: a root's path, or the session key.
    pub name: String,
    /// What messages call it: the root's path, or "session `KEY`" (never the URL).
    shown: String,
}

impl fmt::Display for Located {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.shown)
    }
}

impl Located {
    /// Opens the session's store (a database session's lease is taken; nothing is created under
    /// a root, which must exist).
    pub fn open(&self) -> Result<Box<dyn OpenedSession>, CliError> {
        planlock::block_on(self.backend.open(&self.name)).map_err(|e| CliError::of_place(&e))
    }

    /// The session's records, read without taking the session (no lock, no lease).
    pub fn records(&self) -> Result<Box<dyn SessionRecords>, CliError> {
        planlock::block_on(self.backend.records(&self.name)).map_err(|e| CliError::of_place(&e))
    }
}

impl SessionPlace {
    /// The session these flags name, its backend made once (clap makes sure one of `--root`
    /// and `--session` is given). A key that cannot be one is refused before connecting.
    pub fn locate(&self) -> Result<Located, CliError> {
        match (&self.root, &self.session) {
            (Some(root), _) => {
                let (backend, name) = FilesBackend::of_root(root).map_err(|e| CliError::of_place(&e))?;
                Ok(Located { backend: Arc::new(backend), name, shown: root.display().to_string() })
            }
            (None, Some(key)) => {
                let url = self.database.clone().or_else(|| from_env("PLANLOCK_DATABASE_URL")).ok_or_else(|| {
                    CliError::usage(
                        "usage",
                        "--session names a key in a database: give --database URL (or set PLANLOCK_DATABASE_URL)",
                    )
                })?;
                let max = planlock::session::postgres::MAX_SESSION_KEY_BYTES;
                if key.is_empty() || key.len() > max {
                    return Err(CliError::of_place(&BackendError::Key { len: key.len(), max }));
                }
                let tenant = self.tenant_name();
                let backend = database(&url, tenant.as_deref(), false)?;
                let shown = format!("session `{}`", planlock::printable(key));
                Ok(Located { backend, name: key.clone(), shown })
            }
            (None, None) => Err(CliError::usage("usage", "give --root DIR, or --session KEY in a database")),
        }
    }
}

impl SessionsArgs {
    /// The backend of the sessions these flags name, in `tenant` (the console's choice: its
    /// `--tenant`, or its access file's; else [`tenant_name`](Self::tenant_name)): `--sessions
    /// DIR|URL`, or `--database URL` (or PLANLOCK_DATABASE_URL), every tenant's with
    /// `--all-tenants`.
    pub fn backend_in(&self, tenant: Option<&str>) -> Result<Arc<dyn Backend>, CliError> {
        let url = match (&self.sessions, self.database_url()) {
            (Some(place), _) => match place.to_str().filter(|p| planlock::backend::is_database_url(p)) {
                Some(url) => url.to_owned(),
                // A directory, as given (its name need not be UTF-8).
                None if tenant.is_some() => return Err(CliError::of_place(&BackendError::TenantNeedsDatabase)),
                None => return Ok(Arc::new(FilesBackend::new(place))),
            },
            (None, Some(url)) => url,
            (None, None) => {
                return Err(CliError::usage(
                    "usage",
                    "give --sessions DIR or --database URL (or set PLANLOCK_DATABASE_URL)",
                ));
            }
        };
        database(&url, tenant, self.all_tenants)
    }

    /// [`backend_in`](Self::backend_in) in the tenant the flags name.
    pub fn backend(&self) -> Result<Arc<dyn Backend>, CliError> {
        self.backend_in(self.tenant_name().as_deref())
    }
}

/// The backend of the database at `url` (a `postgres://` URL or a libpq `key=value` string), in
/// `tenant`, or every tenant's, read only.
fn database(url: &str, tenant: Option<&str>, all_tenants: bool) -> Result<Arc<dyn Backend>, CliError> {
    let backend = match all_tenants {
        true => planlock::block_on(PgBackend::connect_all_tenants(url)),
        false => planlock::block_on(PgBackend::connect(url, tenant)),
    };
    Ok(Arc::new(backend.map_err(|e| CliError::of_place(&e))?))
}
