//! The id of a new session, reserved before its first cycle (`ops/runtime/new_session.json`).

use serde::{Deserialize, Serialize};
use uuid::Uuid;

use crate::hash::Digest;

/// The id of a new session, reserved before its first cycle (`ops/runtime/new_session.json`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase", remote = "Self")]
pub struct ReservedSession {
    /// The session id.
    #[serde(deserialize_with = "super::uuid_v4")]
    pub session_id: Uuid,
    /// The plan hash it was reserved under.
    pub plan_hash: Digest,
}

crate::contract::object::map_only_serde!(ReservedSession);

/// The reserved-id file, relative to the store's root.
pub const RESERVED_FILE: &str = "ops/runtime/new_session.json";
