//! The one rule for a session root's name under a directory of sessions.

/// The longest name of a session root, in bytes (a file name's limit on common file systems).
pub const MAX_ROOT_NAME_BYTES: usize = 255;

/// Whether `name` can be a session root's name under a directory: the one rule the lister, the
/// inbox, the console and every reader use. A plain name of one entry there: not empty, at most
/// [`MAX_ROOT_NAME_BYTES`], not `.` or `..`, no separator (`/`, nor `\`, which is one elsewhere),
/// and no NUL. A directory whose name breaks it is not a session (any other character is allowed,
/// and shown escaped wherever a name is shown).
///
/// ```
/// use planlock::session::is_root_name;
/// assert!(is_root_name("support-7") && is_root_name("세션"));
/// assert!(!is_root_name("..") && !is_root_name("a/b") && !is_root_name("a\\b") && !is_root_name("a\0"));
/// ```
pub fn is_root_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= MAX_ROOT_NAME_BYTES
        && name != "."
        && name != ".."
        && !name.contains(['/', '\\', '\0'])
}
