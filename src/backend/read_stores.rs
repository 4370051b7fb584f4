//! Reading a session's memories and decisions as its cycles read them, without taking the session.

use super::{Backend, BackendError};
use crate::session::BundlePinV1;
use crate::store::bundle::{BundleManifest, StrategyResolver};
use crate::store::provider::ResolvedStore;

/// The memories and decisions of session `name`, for reading, as its cycles read them: through
/// the providers its pin names (the backend's default bundle while it has none), with
/// `resolver`'s embedder, which must be the one the session was pinned with (its vectors mean
/// what that model meant).
pub async fn read_stores(
    backend: &dyn Backend,
    name: &str,
    resolver: &StrategyResolver,
) -> Result<ResolvedStore, BackendError> {
    let pin = backend.records(name).await?.load_pin().await?;
    let manifest = match &pin {
        Some(BundlePinV1 {
            bundle_id, strategy_provider_id: Some(strategy), memory_provider_id: Some(memory), ..
        }) => BundleManifest::pinned(bundle_id, strategy, memory),
        _ => backend.default_bundle(),
    };
    if let Some(BundlePinV1 { embedder_model: Some(model), embedder_dimension: Some(dimension), .. }) = &pin {
        let current = resolver.embedder_of(&manifest);
        if current.is_none_or(|(m, d)| m != model || d as u64 != *dimension) {
            let name = |m: &str, d| format!("`{}` ({d} dimensions)", crate::text::printable(m));
            return Err(BackendError::EmbedderMismatch {
                pinned: name(model, *dimension),
                current: current.map_or_else(|| "no embedder".to_owned(), |(m, d)| name(m, d as u64)),
            });
        }
    }
    backend.stores_to_read(name, resolver, &manifest).await
}
