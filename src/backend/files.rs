//! Sessions as files: each session a root directory (`ops/runtime/…` for the session,
//! `ops/store/…` for its stores) under one directory. A session is named by its root's plain
//! name there ([`is_root_name`]), or by a path to its root (as a command line gives it).

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use crate::exec::budget::{BudgetState, TokenBudget, check_budget};
use crate::session::FileBudget;

use super::{
    AccessBook, Backend, BackendError, BackendFuture, BudgetBook, DeliveryClaim, DeliveryOutcome, Listed,
    OpenedSession, Outbox,
};
use crate::exec::SessionAt;
use crate::session::{
    FileRecords, FileSessionStore, InstalledAccess, SessionRecords, SessionStore, Timestamp, is_root_name,
};
use crate::store::bundle::{BundleError, BundleManifest, StrategyResolver};
use crate::store::provider::ResolvedStore;

/// Sessions as files: each session a root directory (`ops/runtime/…` for the session,
/// `ops/store/…` for its stores) under one directory, named by its root's plain name there
/// ([`is_root_name`]), or by a path to its root ([`of_root`](Self::of_root)).
///
/// ```
/// use planlock::backend::{Backend, FilesBackend};
/// let dir = tempfile::tempdir()?;
/// std::fs::create_dir(dir.path().join("support-7"))?;
/// let sessions = FilesBackend::existing(dir.path())?;
/// assert!(sessions.is_session_name("support-7") && !sessions.is_session_name("../etc"));
/// assert!(planlock::block_on(sessions.paused(100))?.is_empty());
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone)]
pub struct FilesBackend {
    dir: PathBuf,
    /// Names are paths to roots as a command line gives them (followed through links), not
    /// names of roots under `dir`.
    paths: bool,
}

impl FilesBackend {
    /// The sessions under `dir`, which need not exist yet (a first `run` makes its root).
    pub fn new(dir: impl Into<PathBuf>) -> FilesBackend {
        FilesBackend { dir: dir.into(), paths: false }
    }

    /// The sessions under `dir`, which must be a directory (a typo in a path is not an empty
    /// list).
    pub fn existing(dir: impl Into<PathBuf>) -> Result<FilesBackend, BackendError> {
        let dir = dir.into();
        existing(&dir, true).map_err(|source| BackendError::Dir { dir: dir.clone(), source })?;
        Ok(FilesBackend { dir, paths: false })
    }

    /// Sessions named by the paths of their roots (a command line's `--root DIR`), followed
    /// through links as a path a person typed is; and the name of `root` in it. A root's path
    /// must be UTF-8.
    pub fn of_root(root: &Path) -> Result<(FilesBackend, String), BackendError> {
        let name = root.to_str().ok_or_else(|| BackendError::Unknown(root.to_string_lossy().into_owned()))?;
        Ok((FilesBackend { dir: PathBuf::new(), paths: true }, name.to_owned()))
    }

    /// The directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The root of session `name`: a plain name of one directory here, or a path to a root.
    fn root_of(&self, name: &str) -> PathBuf {
        if is_root_name(name) && !self.paths { self.dir.join(name) } else { PathBuf::from(name) }
    }

    /// The root of session `name`, which must be a directory: a plain name that is none is no
    /// session here; a path that is none cannot be read (said with the path).
    fn existing_root(&self, name: &str) -> Result<PathBuf, BackendError> {
        if name.is_empty() || name.contains('\0') {
            return Err(BackendError::Unknown(crate::text::printable(name).into_owned()));
        }
        let root = self.root_of(name);
        let named = is_root_name(name) && !self.paths;
        match existing(&root, !named) {
            Ok(()) => Ok(root),
            Err(_) if named => Err(BackendError::Unknown(crate::text::printable(name).into_owned())),
            Err(source) => Err(crate::session::OpenError::Root { root, source }.into()),
        }
    }

    /// The session roots here (at most `max`): each directory, not followed through a link,
    /// whose name is a root's name, with its records.
    pub(crate) fn roots(&self, max: usize) -> Result<Vec<(String, FileRecords)>, BackendError> {
        let failed = |source| BackendError::Dir { dir: self.dir.clone(), source };
        let mut out = Vec::new();
        for entry in std::fs::read_dir(&self.dir).map_err(failed)?.take(max) {
            let entry = entry.map_err(failed)?;
            // One rule for which names are sessions (a name no reader could open is not listed).
            let Some(name) = entry.file_name().to_str().filter(|n| is_root_name(n)).map(str::to_owned) else {
                continue;
            };
            if entry.file_type().is_ok_and(|t| t.is_dir()) {
                out.push((name, FileRecords::new(entry.path())));
            }
        }
        Ok(out)
    }
}

/// `Ok` when `path` is a directory (through a link in its last component only when `follow`:
/// a root under the directory is never a link, a path a person gave may be).
fn existing(path: &Path, follow: bool) -> std::io::Result<()> {
    let meta = if follow { std::fs::metadata(path)? } else { std::fs::symlink_metadata(path)? };
    if !meta.is_dir() {
        return Err(std::io::Error::new(std::io::ErrorKind::NotADirectory, "not a directory"));
    }
    Ok(())
}

/// A root opened: its path and its session store.
#[derive(Debug)]
struct OpenedRoot {
    root: PathBuf,
    store: FileSessionStore,
}

impl OpenedSession for OpenedRoot {
    fn resolve(&self, resolver: &StrategyResolver, manifest: &BundleManifest) -> Result<ResolvedStore, BundleError> {
        resolver.resolve(manifest, &self.root)
    }

    fn into_session_store(self: Box<Self>) -> Box<dyn SessionStore> {
        Box::new(self.store)
    }

    fn budget(&self) -> Arc<dyn TokenBudget> {
        // The directory's budgets, whichever directory holds the root.
        let dir = crate::session::sessions_dir_of(&self.root);
        let name = self.root.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
        Arc::new(FileBudget::new(dir, name))
    }
}

impl Backend for FilesBackend {
    fn describe(&self, name: &str) -> String {
        self.root_of(name).display().to_string()
    }

    fn is_session_name(&self, name: &str) -> bool {
        self.paths || is_root_name(name)
    }

    fn default_bundle(&self) -> BundleManifest {
        BundleManifest::default_bundle()
    }

    fn budgets(&self) -> Option<&dyn BudgetBook> {
        Some(self)
    }

    fn outbox(&self) -> Option<&dyn Outbox> {
        Some(self)
    }

    fn access(&self) -> Option<&dyn AccessBook> {
        Some(self)
    }

    // The roots' approval logs, watched (inotify on Linux): a log written or made wakes its
    // root's session; what the watcher loses (an overflow, an error) wakes every session. Only
    // writes count, so a worker reading the logs does not wake itself.
    #[cfg(feature = "worker")]
    fn watch_decisions(&self, wake: super::Wake) -> BackendFuture<'_, Option<super::Watch>> {
        Box::pin(async move {
            use fs_notify::event::{AccessKind, AccessMode, EventKind};
            use fs_notify::{RecursiveMode, Watcher};
            if self.paths {
                return Ok(None);
            }
            let base = self.dir.clone();
            let log = Path::new(crate::session::APPROVAL_LOG_FILE);
            let mut watcher = fs_notify::recommended_watcher(move |event: fs_notify::Result<fs_notify::Event>| {
                let Ok(event) = event else { return wake.all() };
                let written = matches!(
                    event.kind,
                    EventKind::Create(_)
                        | EventKind::Modify(_)
                        | EventKind::Access(AccessKind::Close(AccessMode::Write))
                );
                if event.need_rescan() {
                    return wake.all();
                }
                for path in event.paths.iter().filter(|_| written) {
                    let Ok(inside) = path.strip_prefix(&base) else { continue };
                    let mut parts = inside.components();
                    if let Some(root) = parts.next().and_then(|root| root.as_os_str().to_str())
                        && parts.as_path() == log
                    {
                        wake.session(root);
                    }
                }
            })
            .map_err(|e| BackendError::Dir { dir: self.dir.clone(), source: std::io::Error::other(e) })?;
            watcher
                .watch(&self.dir, RecursiveMode::Recursive)
                .map_err(|e| BackendError::Dir { dir: self.dir.clone(), source: std::io::Error::other(e) })?;
            Ok(Some(super::Watch::new(watcher)))
        })
    }

    fn sessions(&self, max: usize) -> BackendFuture<'_, Vec<Listed>> {
        Box::pin(async move {
            let roots = self.roots(max)?;
            Ok(roots.into_iter().map(|(name, records)| (name, Box::new(records) as Box<dyn SessionRecords>)).collect())
        })
    }

    fn open<'a>(&'a self, name: &'a str) -> BackendFuture<'a, Box<dyn OpenedSession>> {
        Box::pin(async move {
            let root = self.root_of(name);
            let store = FileSessionStore::open(&root)?;
            Ok(Box::new(OpenedRoot { root, store }) as Box<dyn OpenedSession>)
        })
    }

    fn records<'a>(&'a self, name: &'a str) -> BackendFuture<'a, Box<dyn SessionRecords>> {
        Box::pin(async move { Ok(Box::new(FileRecords::new(self.existing_root(name)?)) as Box<dyn SessionRecords>) })
    }

    fn stores_to_read<'a>(
        &'a self,
        name: &'a str,
        resolver: &'a StrategyResolver,
        manifest: &'a BundleManifest,
    ) -> BackendFuture<'a, ResolvedStore> {
        Box::pin(async move {
            let root = self.existing_root(name)?;
            Ok(resolver.resolve_to_read(manifest, SessionAt::Root(&root))?)
        })
    }
}

impl AccessBook for FilesBackend {
    fn installed_access(&self) -> BackendFuture<'_, Option<InstalledAccess>> {
        Box::pin(async move { Ok(crate::session::read_installed_access(&self.dir)?) })
    }

    fn install_access<'a>(&'a self, text: &'a str) -> BackendFuture<'a, ()> {
        Box::pin(async move { Ok(crate::session::install_access(&self.dir, text)?) })
    }

    fn uninstall_access(&self) -> BackendFuture<'_, bool> {
        Box::pin(async move { Ok(crate::session::uninstall_access(&self.dir)?) })
    }
}

impl BudgetBook for FilesBackend {
    fn budgets(&self) -> BackendFuture<'_, Vec<BudgetState>> {
        Box::pin(async move { Ok(FileBudget::budgets(&self.dir)?) })
    }

    fn set_budget<'a>(&'a self, prefix: &'a str, tokens: u64, period: Duration) -> BackendFuture<'a, ()> {
        Box::pin(async move {
            check_budget(prefix, tokens, period.as_secs()).map_err(BackendError::BudgetSettings)?;
            Ok(FileBudget::set(&self.dir, prefix, tokens, period)?)
        })
    }

    fn remove_budget<'a>(&'a self, prefix: &'a str) -> BackendFuture<'a, bool> {
        Box::pin(async move { Ok(FileBudget::remove(&self.dir, prefix)?) })
    }
}

impl Outbox for FilesBackend {
    fn claim_delivery<'a>(
        &'a self,
        session: &'a str,
        id: &'a str,
        hook: &'a str,
        _hold: std::time::Duration,
    ) -> BackendFuture<'a, Option<DeliveryClaim>> {
        Box::pin(async move {
            let root = self.existing_root(session)?;
            Ok(super::outbox::claim_in_root(&root, session, id, hook, Timestamp::now())?)
        })
    }

    fn finish_delivery(&self, claim: DeliveryClaim, outcome: DeliveryOutcome) -> BackendFuture<'_, ()> {
        Box::pin(async move { Ok(super::outbox::finish_in_root(claim, outcome)?) })
    }
}

impl From<FilesBackend> for std::sync::Arc<dyn Backend> {
    fn from(backend: FilesBackend) -> Self {
        std::sync::Arc::new(backend)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::contract::registry::Failure;

    #[test]
    fn a_name_is_a_root_here_and_a_path_is_a_root_anywhere() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join("a")).unwrap();
        std::os::unix::fs::symlink(dir.path().join("a"), dir.path().join("link")).unwrap();
        let files = FilesBackend::existing(dir.path()).unwrap();
        let records = |b: &FilesBackend, name: &str| crate::io::block_on(b.records(name)).map(drop);
        assert!(records(&files, "a").is_ok());
        // A root under the directory is never a link, and an unknown name is no session.
        assert_eq!(records(&files, "link").unwrap_err().code(), "unknown-session");
        assert_eq!(records(&files, "missing").unwrap_err().code(), "unknown-session");
        // A path a person gave is followed; one that is no directory says so, with its path.
        let (given, name) = FilesBackend::of_root(&dir.path().join("link")).unwrap();
        assert!(records(&given, &name).is_ok() && given.is_session_name("../anything"));
        let (given, name) = FilesBackend::of_root(&dir.path().join("nothing")).unwrap();
        assert_eq!(records(&given, &name).unwrap_err().code(), "session-root");
        assert_eq!(FilesBackend::existing(dir.path().join("nothing")).unwrap_err().code(), "inbox-dir");
        let listed: Vec<String> = files.roots(10).unwrap().into_iter().map(|(n, _)| n).collect();
        assert_eq!(listed, ["a"], "a link under the directory is not listed");
    }
}
