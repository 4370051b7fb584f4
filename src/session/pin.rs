//! The bundle pin of a session, `ops/runtime/bundle_pin.json` (D-021; docs/CONTRACT.md, "Storage
//! behind ports"): which strategy and memory provider the session's bundle resolved to when the
//! session began, so that it can never silently switch providers.

use serde::{Deserialize, Serialize};

use super::Timestamp;

/// The pin file, relative to the store's root.
pub const PIN_FILE: &str = "ops/runtime/bundle_pin.json";

/// A session's bundle pin. An older pin has no provider ids; it is upgraded with the manifest's
/// current ones and saved with the next completed cycle.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, remote = "Self")]
pub struct BundlePinV1 {
    /// Always 1.
    pub version: PinVersion,
    /// The bundle's id.
    pub bundle_id: String,
    /// The strategy provider the session is pinned to (absent in the older format; `null` is
    /// refused, not taken for absent).
    #[serde(default, skip_serializing_if = "Option::is_none", deserialize_with = "present")]
    pub strategy_provider_id: Option<String>,
    /// The memory provider the session is pinned to (absent in the older format; `null` is
    /// refused).
    #[serde(default, skip_serializing_if = "Option::is_none", deserialize_with = "present")]
    pub memory_provider_id: Option<String>,
    /// The embedder's model, when a provider ranks by meaning (absent otherwise, and in older
    /// pins; `null` is refused).
    #[serde(default, skip_serializing_if = "Option::is_none", deserialize_with = "present")]
    pub embedder_model: Option<String>,
    /// The embedder's dimension, with its model.
    #[serde(default, skip_serializing_if = "Option::is_none", deserialize_with = "positive")]
    pub embedder_dimension: Option<u64>,
    /// When the session was pinned.
    pub pinned_at: Timestamp,
}

crate::contract::object::map_only_serde!(BundlePinV1);

/// A member that, when present, is a number above zero.
fn positive<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<u64>, D::Error> {
    match u64::deserialize(d)? {
        0 => Err(serde::de::Error::custom("an embedder dimension must be above zero")),
        n => Ok(Some(n)),
    }
}

/// A member that, when present, is a non-empty string: only its absence means the older format.
fn present<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<String>, D::Error> {
    let id = String::deserialize(d)?;
    if id.is_empty() {
        return Err(serde::de::Error::custom("a provider id must not be empty"));
    }
    Ok(Some(id))
}

/// The pin format's version: the number 1 and nothing else.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct PinVersion;

impl Serialize for PinVersion {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_u64(1)
    }
}

impl<'de> Deserialize<'de> for PinVersion {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<PinVersion, D::Error> {
        match u64::deserialize(d)? {
            1 => Ok(PinVersion),
            other => Err(serde::de::Error::custom(format_args!("pin version {other} is not 1"))),
        }
    }
}
