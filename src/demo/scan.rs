//! The demo `RepoScan`: counts a directory's regular files and digests their paths and contents,
//! a chunk at a time, within the step's `ioMs` deadline.

use std::path::Path;

use sha2::{Digest as _, Sha256};

/// The most files the demo `RepoScan` reads.
pub const MAX_SCAN_FILES: usize = 10_000;

/// How much of a file the demo `RepoScan` holds in memory at once.
const SCAN_CHUNK: usize = 64 * 1024;

/// Why a scan stopped.
#[derive(Debug, thiserror::Error)]
pub(super) enum ScanError {
    #[error("{0}")]
    Io(#[from] std::io::Error),
    #[error("more than {MAX_SCAN_FILES} files")]
    TooManyFiles,
    #[error("the scan ran past its `ioMs` deadline of {0} ms")]
    Deadline(u64),
}

/// Scans `dir`: the number of regular files, and a digest of their paths and contents. Files are
/// hashed a chunk at a time, so memory stays bounded whatever their size; only regular files
/// count (links, FIFOs, sockets and devices are skipped, so nothing can block the scan); and the
/// scan gives up at `deadline` (`ioMs` from the step's start), between chunks.
pub(super) fn scan(dir: &Path, deadline: Option<(std::time::Instant, u64)>) -> Result<(u64, String), ScanError> {
    let past_deadline = || match deadline {
        Some((at, ms)) if std::time::Instant::now() >= at => Err(ScanError::Deadline(ms)),
        _ => Ok(()),
    };
    let mut files = Vec::new();
    let mut pending = vec![dir.to_path_buf()];
    while let Some(d) = pending.pop() {
        for entry in std::fs::read_dir(&d)? {
            let entry = entry?;
            let kind = entry.file_type()?;
            if kind.is_dir() {
                pending.push(entry.path());
            } else if kind.is_file() {
                files.push(entry.path());
                if files.len() > MAX_SCAN_FILES {
                    return Err(ScanError::TooManyFiles);
                }
            }
        }
        past_deadline()?;
    }
    files.sort();
    let mut h = Sha256::new();
    let mut chunk = vec![0u8; SCAN_CHUNK];
    for f in &files {
        let rel = f.strip_prefix(dir).unwrap_or(f);
        h.update(rel.to_string_lossy().as_bytes());
        h.update([0]);
        let mut file_hash = Sha256::new();
        let mut file = open_regular(f)?;
        loop {
            let n = std::io::Read::read(&mut file, &mut chunk)?;
            if n == 0 {
                break;
            }
            file_hash.update(&chunk[..n]);
            past_deadline()?;
        }
        h.update(file_hash.finalize());
    }
    let digest: [u8; 32] = h.finalize().into();
    Ok((files.len() as u64, format!("scan-{}", crate::hash::Digest::from_bytes(digest))))
}

/// Opens a file listed as regular without following a link or waiting on a FIFO, in case it was
/// replaced since it was listed.
fn open_regular(path: &Path) -> std::io::Result<std::fs::File> {
    let mut options = std::fs::OpenOptions::new();
    options.read(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::custom_flags(&mut options, libc::O_NOFOLLOW | libc::O_NONBLOCK);
    let file = options.open(path)?;
    if !file.metadata()?.is_file() {
        return Err(std::io::Error::other(format!("{} is no longer a regular file", path.display())));
    }
    Ok(file)
}
