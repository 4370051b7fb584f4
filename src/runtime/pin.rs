//! The bundle pin a session needs (D-021 §5): new, kept, upgraded from the older format, or
//! refused when the bundle names other providers or another embedder.

use super::error::BootError;
use crate::embed::MAX_DIMENSION;
use crate::session::{BundlePinV1, PIN_FILE, PinVersion, SessionError, SessionStore, Timestamp};
use crate::store::bundle::{BundleManifest, StrategyResolver};
use crate::text::printable;

/// The pin a session on `store` needs for `manifest`: `None` when the stored one already names
/// its ids, a new pin for a new session, an upgraded one for a pin without ids; a pin naming other
/// ids, or an id without an implementation, is refused.
pub(super) async fn pin_for<S: SessionStore>(
    store: &S,
    manifest: &BundleManifest,
    resolver: &StrategyResolver,
) -> Result<Option<BundlePinV1>, BootError> {
    let (strategy, memory) = (manifest.strategy_id(), manifest.memory_id());
    resolver.check(strategy, memory)?;
    let embedder = resolver.embedder_of(manifest);
    // Bounded before anything is pinned to it (CONTRACT §11): a store of such vectors would fill
    // memory long before it filled a search.
    if let Some((model, dimension)) = embedder
        && !(1..=MAX_DIMENSION).contains(&dimension)
    {
        let model = printable(model).into_owned();
        return Err(BootError::EmbedderDimension { model, dimension, max: MAX_DIMENSION });
    }
    let fresh = |pinned_at| BundlePinV1 {
        version: PinVersion,
        bundle_id: manifest.bundle_id.clone(),
        strategy_provider_id: Some(strategy.to_owned()),
        memory_provider_id: Some(memory.to_owned()),
        embedder_model: embedder.map(|(m, _)| m.to_owned()),
        embedder_dimension: embedder.map(|(_, d)| d as u64),
        pinned_at,
    };
    let Some(pin) = store.records().load_pin().await? else { return Ok(Some(fresh(Timestamp::now()))) };
    match (&pin.strategy_provider_id, &pin.memory_provider_id) {
        (Some(s), Some(m)) if s == strategy && m == memory => {}
        (Some(s), Some(m)) => {
            return Err(BootError::PinMismatch {
                bundle: printable(&manifest.bundle_id).into_owned(),
                pinned_strategy: printable(s).into_owned(),
                pinned_memory: printable(m).into_owned(),
                strategy: printable(strategy).into_owned(),
                memory: printable(memory).into_owned(),
            });
        }
        // The older format: upgraded with the manifest's current ids, keeping when it pinned.
        (None, None) => return Ok(Some(fresh(pin.pinned_at))),
        // One id without the other is no format planlock wrote.
        (Some(_), None) | (None, Some(_)) => {
            return Err(BootError::Session(SessionError::Corrupt {
                file: PIN_FILE.into(),
                problem: "naming one provider but not the other (the older format names neither)".into(),
            }));
        }
    }
    // The providers match; the embedder must too, since stored vectors mean what its model meant.
    match (&pin.embedder_model, pin.embedder_dimension, embedder) {
        (Some(m), Some(d), Some((model, dimension))) if m == model && d == dimension as u64 => Ok(None),
        (Some(m), Some(d), Some((model, dimension))) => Err(BootError::EmbedderMismatch {
            pinned: format!("`{}` ({d} dimensions)", printable(m)),
            current: format!("`{}` ({dimension} dimensions)", printable(model)),
        }),
        (None, None, Some(_)) => Ok(Some(fresh(pin.pinned_at))),
        (None, None, None) | (Some(_), Some(_), None) => Ok(None),
        _ => Err(BootError::Session(SessionError::Corrupt {
            file: PIN_FILE.into(),
            problem: "naming an embedder model without its dimension, or the reverse".into(),
        })),
    }
}
