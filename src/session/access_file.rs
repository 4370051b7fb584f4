//! The rules installed where sessions live (CONTRACT §18, amended): the access file beside the
//! session roots ([`ACCESS_FILE`] in the directory that holds them), or its text in the database
//! for a tenant. Every path that decides or acts reads it from the session's records
//! ([`SessionRecords::installed_access`](super::SessionRecords::installed_access)), so nobody has
//! to remember a flag for the rules to hold.
//!
//! This layer keeps the text as installed; the reviewer's domain (`review::access`) reads it.

use std::io::Write as _;
use std::path::{Path, PathBuf};

use super::SessionError;
use crate::fsread::{self, ReadError};

/// The installed access file's name, in the directory that holds the session roots.
pub const ACCESS_FILE: &str = "planlock-access.yaml";

/// The largest access file read, in bytes (as a policy file).
pub const MAX_ACCESS_FILE_BYTES: u64 = 1 << 20;

/// The access file installed where sessions live, as written: where it is (a path, or "the
/// database, tenant `acme`") and its text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InstalledAccess {
    /// Where it is installed, as messages name it.
    pub source: String,
    /// Its text (YAML), at most [`MAX_ACCESS_FILE_BYTES`].
    pub text: String,
}

/// The directory whose installed rules govern the session under `root`: the one that holds it
/// (the working directory for a bare relative root such as `s`).
///
/// ```
/// use std::path::Path;
/// use planlock::session::sessions_dir_of;
/// assert_eq!(sessions_dir_of(Path::new("/srv/sessions/s")), Path::new("/srv/sessions"));
/// assert_eq!(sessions_dir_of(Path::new("s")), Path::new("."));
/// ```
pub fn sessions_dir_of(root: &Path) -> PathBuf {
    match root.parent() {
        Some(dir) if !dir.as_os_str().is_empty() => dir.to_path_buf(),
        _ => PathBuf::from("."),
    }
}

/// The access file installed in `dir`, if there is one. A link, a FIFO or anything but a regular
/// file there is refused without waiting (the rules are never taken from somewhere else), as is
/// one over [`MAX_ACCESS_FILE_BYTES`] or not UTF-8: a decision is then refused, never made
/// without its rules.
pub fn read_installed_access(dir: &Path) -> Result<Option<InstalledAccess>, SessionError> {
    let path = dir.join(ACCESS_FILE);
    let corrupt = |problem: String| SessionError::Corrupt { file: path.clone(), problem };
    let bytes = match fsread::read_regular(&path, MAX_ACCESS_FILE_BYTES) {
        Ok(bytes) => bytes,
        Err(ReadError::NotFound) => return Ok(None),
        Err(ReadError::NotRegular(what)) => return Err(corrupt(format!("the installed access file is {what}"))),
        Err(ReadError::TooLarge) => {
            return Err(corrupt(format!("the installed access file is larger than {MAX_ACCESS_FILE_BYTES} bytes")));
        }
        Err(ReadError::Io(op, source)) => return Err(SessionError::Io { file: path, op, source }),
    };
    let text = String::from_utf8(bytes).map_err(|_| corrupt("the installed access file is not UTF-8 text".into()))?;
    Ok(Some(InstalledAccess { source: path.display().to_string(), text }))
}

/// Installs `text` as the access file of `dir`, atomically (a reader sees the old file or the new
/// one) and durably. The caller has checked it.
pub fn install_access(dir: &Path, text: &str) -> Result<(), SessionError> {
    let path = dir.join(ACCESS_FILE);
    let io = |op: &'static str| {
        let file = path.clone();
        move |source| SessionError::Io { file, op, source }
    };
    let mut file = tempfile::Builder::new().prefix(".planlock-access.").tempfile_in(dir).map_err(io("create"))?;
    file.write_all(text.as_bytes()).map_err(io("write"))?;
    file.as_file().sync_all().map_err(io("sync"))?;
    file.persist(&path).map_err(|e| io("rename")(e.error))?;
    sync_dir(dir).map_err(io("sync the directory of"))
}

/// Removes the access file of `dir`: whether there was one.
pub fn uninstall_access(dir: &Path) -> Result<bool, SessionError> {
    let path = dir.join(ACCESS_FILE);
    match std::fs::remove_file(&path) {
        Ok(()) => {
            sync_dir(dir).map_err(|source| SessionError::Io { file: path, op: "sync the directory of", source })?;
            Ok(true)
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(false),
        Err(source) => Err(SessionError::Io { file: path, op: "remove", source }),
    }
}

fn sync_dir(dir: &Path) -> std::io::Result<()> {
    std::fs::File::open(dir)?.sync_all()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn what_is_installed_is_read_back_and_a_link_or_fifo_is_refused_at_once() {
        let dir = tempfile::tempdir().unwrap();
        assert_eq!(read_installed_access(dir.path()).unwrap(), None);
        install_access(dir.path(), "users: {}\n").unwrap();
        assert_eq!(read_installed_access(dir.path()).unwrap().unwrap().text, "users: {}\n");
        assert!(uninstall_access(dir.path()).unwrap() && !uninstall_access(dir.path()).unwrap());
        let elsewhere = dir.path().join("elsewhere.yaml");
        std::fs::write(&elsewhere, "users: {}\n").unwrap();
        std::os::unix::fs::symlink(&elsewhere, dir.path().join(ACCESS_FILE)).unwrap();
        assert!(read_installed_access(dir.path()).unwrap_err().to_string().contains("symbolic link"));
        std::fs::remove_file(dir.path().join(ACCESS_FILE)).unwrap();
        let made = std::process::Command::new("mkfifo").arg(dir.path().join(ACCESS_FILE)).status().unwrap();
        assert!(made.success());
        assert!(read_installed_access(dir.path()).is_err(), "a FIFO is refused, not waited on");
    }
}
