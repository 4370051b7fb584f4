//! The policy profile: `metadata.policyProfile` names a directory under a policy root the caller
//! gives, holding `modes.yaml`, `triggers.yaml` and `bundles.yaml` (PRD-004, CONTRACT §5). All
//! three enter the plan hash as JSON data. A missing or unreadable file is FailFast: without it,
//! resume safety cannot be established.

use std::io::Read;
use std::path::{Component, Path, PathBuf};

use serde_json::Value;

use crate::yaml::{self, YamlError};

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
pub enum ProfileError {
    /// The profile path is absolute or leaves the policy root.
    #[error("policy profile `{path}` must be a relative path inside the policy root (no `..`, no leading `/`)")]
    InvalidPath {
        /// The path the plan named.
        path: String,
    },
    /// A profile file is missing or unreadable.
    #[error("cannot read policy file {}: {source}; resume safety cannot be established", file.display())]
    Unreadable {
        /// The file.
        file: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// A profile file is larger than [`MAX_PROFILE_FILE_BYTES`] or not UTF-8.
    #[error("policy file {} is {problem}", file.display())]
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

impl ProfileError {
    /// A stable machine-readable code.
    pub fn code(&self) -> &'static str {
        match self {
            ProfileError::InvalidPath { .. } => "profile-path",
            ProfileError::Unreadable { .. } => "profile-unreadable",
            ProfileError::Invalid { .. } => "profile-invalid",
            ProfileError::Yaml(_) => "yaml",
        }
    }
}

impl PolicyProfile {
    /// Loads the profile `profile` under `policy_root`.
    pub fn load(policy_root: &Path, profile: &str) -> Result<PolicyProfile, ProfileError> {
        let relative = Path::new(profile);
        if profile.is_empty() || !relative.components().all(|c| matches!(c, Component::Normal(_) | Component::CurDir)) {
            return Err(ProfileError::InvalidPath { path: profile.to_owned() });
        }
        let dir = policy_root.join(relative);
        let [modes, triggers, bundles] = PROFILE_FILES.map(|name| read_yaml(&dir.join(name)));
        Ok(PolicyProfile { path: profile.to_owned(), modes: modes?, triggers: triggers?, bundles: bundles? })
    }
}

fn read_yaml(file: &Path) -> Result<Value, ProfileError> {
    let unreadable = |source| ProfileError::Unreadable { file: file.to_owned(), source };
    let mut bytes = Vec::new();
    std::fs::File::open(file)
        .and_then(|f| f.take(MAX_PROFILE_FILE_BYTES + 1).read_to_end(&mut bytes))
        .map_err(unreadable)?;
    if bytes.len() as u64 > MAX_PROFILE_FILE_BYTES {
        return Err(ProfileError::Invalid { file: file.to_owned(), problem: "larger than 1 MiB" });
    }
    let text = String::from_utf8(bytes)
        .map_err(|_| ProfileError::Invalid { file: file.to_owned(), problem: "not UTF-8 text" })?;
    Ok(yaml::parse(&file.display().to_string(), &text)?)
}
