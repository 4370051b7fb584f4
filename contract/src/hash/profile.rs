//! The policy profile: `metadata.policyProfile` names a directory under a policy root the caller
//! gives, holding `modes.yaml`, `triggers.yaml` and `bundles.yaml` (PRD-004; docs/CONTRACT.md,
//! "Plan hash"). All three enter the plan hash as JSON data. A missing or unreadable file is
//! FailFast: without it, resume safety cannot be established.

use std::path::{Component, Path, PathBuf};

use serde_json::Value;

use crate::contract::registry::{Failure, FailureKind};
use crate::fsread::{self, ReadError};
use crate::hash::yaml::{self, YamlError};

/// The three files of a profile, in hash-document order.
pub const PROFILE_FILES: [&str; 3] = ["modes.yaml", "triggers.yaml", "bundles.yaml"];

/// The largest profile file read, in bytes (1 MiB).
pub const MAX_PROFILE_FILE_BYTES: u64 = 1 << 20;

/// A loaded policy profile.
#[derive(Debug, Clone, PartialEq)]
pub struct PolicyProfile {
    /// `metadata.policyProfile`, as the plan names it.
    pub path: String,
    /// `modes.yaml` as JSON data.
    pub modes: Value,
    /// `triggers.yaml` as JSON data.
    pub triggers: Value,
    /// `bundles.yaml` as JSON data.
    pub bundles: Value,
}

/// A profile that cannot be loaded. Always FailFast.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ProfileError {
    /// The profile path is absolute or leaves the policy root.
    #[error("policy profile `{path}` must be a relative path inside the policy root (no `..`, no leading `/`)")]
    InvalidPath {
        /// The path the plan named.
        path: String,
    },
    /// The profile directory or one of its files resolves (through a symbolic link) to a place
    /// outside the policy root.
    #[error(
        "policy file {} resolves to {}, outside the policy root {}; profiles stay inside the policy root",
        file.display(), resolved.display(), root.display()
    )]
    OutsideRoot {
        /// The file as the profile names it.
        file: PathBuf,
        /// Where it really is.
        resolved: PathBuf,
        /// The policy root, resolved.
        root: PathBuf,
    },
    /// A profile file is missing or unreadable.
    #[error("cannot read policy file {}: {source}; resume safety cannot be established", file.display())]
    Unreadable {
        /// The file.
        file: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// A profile file is not a regular file, larger than [`MAX_PROFILE_FILE_BYTES`], or not
    /// UTF-8.
    #[error("policy file {} is {problem}; resume safety cannot be established", file.display())]
    Invalid {
        /// The file.
        file: PathBuf,
        /// What is wrong.
        problem: &'static str,
    },
    /// A profile file is not in the accepted YAML subset.
    #[error("{0}")]
    Yaml(#[from] YamlError),
}

impl Failure for ProfileError {
    /// A stable machine-readable code.
    fn code(&self) -> &'static str {
        match self {
            ProfileError::InvalidPath { .. } => "profile-path",
            ProfileError::OutsideRoot { .. } => "profile-outside-root",
            ProfileError::Unreadable { .. } => "profile-unreadable",
            ProfileError::Invalid { .. } => "profile-invalid",
            ProfileError::Yaml(_) => "yaml",
        }
    }

    fn kind(&self) -> FailureKind {
        FailureKind::FailFast
    }
}

impl PolicyProfile {
    /// Loads the profile `profile` under `policy_root`.
    ///
    /// Each file is read only if it is a regular file of at most [`MAX_PROFILE_FILE_BYTES`]
    /// whose real path (symbolic links resolved) is inside the real policy root; a FIFO, a
    /// socket or a device is refused without waiting on it.
    pub fn load(policy_root: &Path, profile: &str) -> Result<PolicyProfile, ProfileError> {
        let relative = Path::new(profile);
        if profile.is_empty() || !relative.components().all(|c| matches!(c, Component::Normal(_) | Component::CurDir)) {
            return Err(ProfileError::InvalidPath { path: profile.to_owned() });
        }
        let root = policy_root
            .canonicalize()
            .map_err(|source| ProfileError::Unreadable { file: policy_root.to_owned(), source })?;
        let dir = policy_root.join(relative);
        let [modes, triggers, bundles] = PROFILE_FILES.map(|name| read_yaml(&root, &dir.join(name)));
        Ok(PolicyProfile { path: profile.to_owned(), modes: modes?, triggers: triggers?, bundles: bundles? })
    }
}

impl PolicyProfile {
    /// The profile `profile` from its three documents' texts (`modes.yaml`, `triggers.yaml`,
    /// `bundles.yaml`, in [`PROFILE_FILES`]'s order), for a producer that holds them rather than
    /// a policy root: the same YAML subset and limits as [`load`](Self::load), nothing read from
    /// disk.
    ///
    /// ```
    /// use planlock_contract::PolicyProfile;
    /// let profile = PolicyProfile::from_documents("profiles/default", ["chat:\n  tone: friendly\n", "[]\n", "{}\n"])?;
    /// assert_eq!(profile.modes["chat"]["tone"], "friendly");
    /// # Ok::<(), planlock_contract::ProfileError>(())
    /// ```
    pub fn from_documents(profile: &str, documents: [&str; 3]) -> Result<PolicyProfile, ProfileError> {
        let parse = |name: &str, text: &str| {
            if text.len() as u64 > MAX_PROFILE_FILE_BYTES {
                return Err(ProfileError::Invalid { file: PathBuf::from(name), problem: "larger than 1 MiB" });
            }
            Ok(yaml::parse(name, text)?)
        };
        let [modes, triggers, bundles] = [0, 1, 2].map(|i| parse(PROFILE_FILES[i], documents[i]));
        Ok(PolicyProfile { path: profile.to_owned(), modes: modes?, triggers: triggers?, bundles: bundles? })
    }
}

/// Reads one profile file; `root` is the policy root, resolved.
fn read_yaml(root: &Path, file: &Path) -> Result<Value, ProfileError> {
    let unreadable = |source| ProfileError::Unreadable { file: file.to_owned(), source };
    let invalid = |problem| ProfileError::Invalid { file: file.to_owned(), problem };
    // Resolved once, then opened by the resolved path without following a link, so what is
    // checked is what is read.
    let resolved = file.canonicalize().map_err(unreadable)?;
    if !resolved.starts_with(root) {
        return Err(ProfileError::OutsideRoot { file: file.to_owned(), resolved, root: root.to_owned() });
    }
    let bytes = fsread::read_regular(&resolved, MAX_PROFILE_FILE_BYTES).map_err(|e| match e {
        ReadError::NotFound => unreadable(std::io::ErrorKind::NotFound.into()),
        ReadError::NotRegular(what) => invalid(what),
        ReadError::TooLarge => invalid("larger than 1 MiB"),
        ReadError::Io(_, source) => unreadable(source),
    })?;
    let text = String::from_utf8(bytes).map_err(|_| invalid("not UTF-8 text"))?;
    Ok(yaml::parse(&file.display().to_string(), &text)?)
}
