//! The persisted session (`ops/runtime/session_state.json`, or a database row's `state`) and what a
//! save writes; the strict readers of its members.

use serde::{Deserialize, Deserializer, Serialize};
use uuid::Uuid;

use super::Timestamp;
use crate::hash::{Digest, HashParts};

/// The session file, relative to the store's root.
pub const SESSION_FILE: &str = "ops/runtime/session_state.json";

/// The largest session file read, in bytes (64 KiB).
pub const MAX_SESSION_FILE_BYTES: u64 = 64 * 1024;

/// A session id: a version 4 UUID.
pub(crate) fn uuid_v4<'de, D: Deserializer<'de>>(d: D) -> Result<Uuid, D::Error> {
    let id = Uuid::deserialize(d)?;
    if id.get_version_num() != 4 {
        return Err(serde::de::Error::custom(format_args!("sessionId `{id}` is not a version 4 UUID")));
    }
    Ok(id)
}

/// An optional member that, when present, is a value (never `null`: only its absence means none).
pub(crate) fn present<'de, D: Deserializer<'de>, T: Deserialize<'de>>(d: D) -> Result<Option<T>, D::Error> {
    T::deserialize(d).map(Some)
}

/// A required field whose value may be `null`.
fn nullable<'de, D: Deserializer<'de>>(d: D) -> Result<Option<String>, D::Error> {
    Option::<String>::deserialize(d)
}

/// The persisted session: minimal references only (PRD-004), plus the optional per-part
/// digests of the plan hash.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase", remote = "Self")]
pub struct SessionState {
    /// Created at cold start, restored on resume.
    #[serde(deserialize_with = "uuid_v4")]
    pub session_id: Uuid,
    /// The id of the last `PersistMemory` result.
    #[serde(deserialize_with = "nullable")]
    pub memory_ref: Option<String>,
    /// The `versionId` of the last `RepoScan` result.
    #[serde(deserialize_with = "nullable")]
    pub repo_scan_version: Option<String>,
    /// The plan hash the session was saved under.
    pub last_execution_plan_hash: Digest,
    /// When the store saved it.
    pub updated_at: Timestamp,
    /// How many cycles of this session have completed (absent in older files: 0).
    #[serde(default)]
    pub cycle: u64,
    /// Per-part digests of the plan hash, to say what changed on a mismatch.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hash_parts: Option<HashParts>,
}

crate::contract::object::map_only_serde!(SessionState);

/// What a save writes; the store adds `updatedAt`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SessionUpdate {
    /// The session id.
    pub session_id: Uuid,
    /// The memory reference.
    pub memory_ref: Option<String>,
    /// The repository scan version.
    pub repo_scan_version: Option<String>,
    /// The plan hash.
    pub last_execution_plan_hash: Digest,
    /// Per-part digests.
    pub hash_parts: Option<HashParts>,
    /// The number of completed cycles, this one included.
    pub cycle: u64,
}

impl SessionUpdate {
    /// The update of session `session_id` after its cycle `cycle` under the plan of hash
    /// `plan_hash`, with no memory reference, scan version or per-part digests.
    ///
    /// ```
    /// let update = planlock::session::SessionUpdate::new(uuid::Uuid::new_v4(), planlock::Digest::of(b"plan"), 1);
    /// assert_eq!((update.cycle, update.memory_ref), (1, None));
    /// ```
    pub fn new(session_id: Uuid, plan_hash: Digest, cycle: u64) -> SessionUpdate {
        SessionUpdate {
            session_id,
            memory_ref: None,
            repo_scan_version: None,
            last_execution_plan_hash: plan_hash,
            hash_parts: None,
            cycle,
        }
    }

    /// The state a store saves for this update: the update, stamped now.
    pub fn into_state(self) -> SessionState {
        SessionState {
            session_id: self.session_id,
            memory_ref: self.memory_ref,
            repo_scan_version: self.repo_scan_version,
            last_execution_plan_hash: self.last_execution_plan_hash,
            updated_at: Timestamp::now(),
            cycle: self.cycle,
            hash_parts: self.hash_parts,
        }
    }
}
