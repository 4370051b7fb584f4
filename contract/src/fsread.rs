//! Reading the small files the runtime trusts (the session file, the policy profile files) so
//! that no file can hang, flood or fool it: one non-blocking open that follows no link in the last
//! component (a FIFO must not wait for a writer, and there is no stat-then-open race), only a
//! regular file is read, and never more than a cap.

use std::fs::{self, File};
use std::io::{self, Read};
use std::path::Path;

/// Why a file was not read.
#[derive(Debug)]
pub enum ReadError {
    /// There is no such file.
    NotFound,
    /// It is not a regular file: says what it is instead ("a FIFO, not a regular file").
    NotRegular(&'static str),
    /// It holds more than the cap.
    TooLarge,
    /// The operation (`open`, `inspect`, `read`) failed.
    Io(&'static str, io::Error),
}

/// Reads the regular file at `path`, at most `cap` bytes; a symbolic link is refused.
pub fn read_regular(path: &Path, cap: u64) -> Result<Vec<u8>, ReadError> {
    let file = open_regular(path)?;
    let opened = file.metadata().map_err(|e| ReadError::Io("inspect", e))?;
    // Sized from the file, so one read fills it; the cap still bounds what is read.
    let mut bytes = Vec::with_capacity(opened.len().min(cap) as usize + 1);
    file.take(cap + 1).read_to_end(&mut bytes).map_err(|e| ReadError::Io("read", e))?;
    if bytes.len() as u64 > cap {
        return Err(ReadError::TooLarge);
    }
    Ok(bytes)
}

/// Opens the regular file at `path` to read; a symbolic link, a FIFO (never waited on), a
/// directory or anything else is refused, saying what it is.
pub fn open_regular(path: &Path) -> Result<File, ReadError> {
    let file = match open_no_follow(path) {
        Ok(file) => file,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Err(ReadError::NotFound),
        Err(e) if is_symlink_refusal(&e) => return Err(ReadError::NotRegular("a symbolic link, not a regular file")),
        // Say what it is when that is why it cannot be opened (a socket, for one).
        Err(e) => {
            return Err(match fs::symlink_metadata(path) {
                Ok(meta) if !meta.is_file() => ReadError::NotRegular(kind_of(&meta)),
                _ => ReadError::Io("open", e),
            });
        }
    };
    let opened = file.metadata().map_err(|e| ReadError::Io("inspect", e))?;
    if !opened.is_file() {
        return Err(ReadError::NotRegular(kind_of(&opened)));
    }
    Ok(file)
}

#[cfg(unix)]
fn open_no_follow(path: &Path) -> io::Result<File> {
    use std::os::unix::fs::OpenOptionsExt;
    // O_NONBLOCK: opening a FIFO must not wait for a writer.
    fs::OpenOptions::new().read(true).custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK).open(path)
}

#[cfg(not(unix))]
fn open_no_follow(path: &Path) -> io::Result<File> {
    if fs::symlink_metadata(path)?.file_type().is_symlink() {
        return Err(io::Error::other(SymlinkRefused));
    }
    File::open(path)
}

/// Where the platform has no `O_NOFOLLOW`: the error `open_no_follow` gives for a link.
#[cfg(not(unix))]
#[derive(Debug, thiserror::Error)]
#[error("refusing to follow a symbolic link")]
struct SymlinkRefused;

/// Whether opening failed because the path is a symbolic link.
fn is_symlink_refusal(e: &io::Error) -> bool {
    #[cfg(unix)]
    return e.raw_os_error() == Some(libc::ELOOP);
    #[cfg(not(unix))]
    return e.get_ref().is_some_and(|inner| inner.is::<SymlinkRefused>());
}

fn kind_of(meta: &fs::Metadata) -> &'static str {
    let t = meta.file_type();
    if t.is_symlink() {
        return "a symbolic link, not a regular file";
    }
    if t.is_dir() {
        return "a directory, not a regular file";
    }
    #[cfg(unix)]
    {
        use std::os::unix::fs::FileTypeExt;
        if t.is_fifo() {
            return "a FIFO, not a regular file";
        }
        if t.is_socket() {
            return "a socket, not a regular file";
        }
        if t.is_block_device() || t.is_char_device() {
            return "a device, not a regular file";
        }
    }
    "not a regular file"
}
