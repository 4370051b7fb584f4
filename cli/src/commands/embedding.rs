//! The embedder a command's flags name: for the resolver a run uses, and for reading a session's
//! stores as its cycles read them.

use planlock::{Failure, FailureKind};

use crate::error::{CliError, class_exit};

impl crate::args::EmbedArgs {
    /// The resolver with the embedder these flags name (the demo's without them), and how the
    /// output names it. A server is asked only when `manifest`'s providers rank by meaning: a
    /// bundle that embeds nothing never contacts it. A server that fails here fails with its
    /// cause's code (`model-http-status`, `model-redirect`, …) and the class of `first`, the
    /// first step that would have asked it: the same failure has the same class before the
    /// cycle as in it.
    pub(crate) fn resolver(
        &self,
        manifest: &planlock::store::bundle::BundleManifest,
        first: impl Fn(&[planlock::StepType]) -> Option<planlock::StepType>,
    ) -> Result<(planlock::store::bundle::StrategyResolver, crate::report::EmbedderInfo), CliError> {
        use std::sync::Arc;

        use planlock::embed::{DemoEmbedder, Embedder as _};
        use planlock::handlers::{EmbedConfig, OpenAiEmbedder};

        use crate::report::EmbedderInfo;
        let resolver = planlock::store::bundle::StrategyResolver::default();
        match (&self.embed_url, &self.embed_model) {
            (Some(url), Some(model)) if resolver.ranks_by_meaning(manifest) => {
                // E5 models embed queries and passages differently; servers that do not know the
                // member ignore it.
                let config =
                    EmbedConfig::new(url, model).api_key_env(&self.embed_api_key_env).purpose_member("input_type");
                let class = first(&resolver.embedding_steps(manifest)).map(|t| t.failure_kind());
                let embedder = OpenAiEmbedder::connect(config).map_err(|e| CliError {
                    exit: class_exit(class.unwrap_or(FailureKind::FailFast)),
                    code: e.code(),
                    message: e.to_string(),
                })?;
                let about = EmbedderInfo::Openai {
                    model: model.clone(),
                    url: embedder.config().shown_url(),
                    dimension: embedder.dimension(),
                };
                Ok((resolver.embedder(Arc::new(embedder)), about))
            }
            _ => {
                let about = EmbedderInfo::Demo { model: DemoEmbedder::MODEL, dimension: DemoEmbedder::DIMENSION };
                Ok((resolver.embedder(Arc::new(DemoEmbedder::new())), about))
            }
        }
    }
}

/// The stores of the session at `place` for reading, through the providers its pin names (a
/// read: nothing written, no lock or lease): with the embedder `embed` names, at the pinned
/// dimension; else the demo's (refused when the session was pinned with another: the message
/// names both); for a command without the flags (`embed` none), one that only says which flags
/// to give, so that a read that embeds nothing (`decisions`) still works.
pub(super) fn read_stores(
    place: &crate::place::Located,
    embed: Option<&crate::args::EmbedArgs>,
) -> Result<planlock::store::provider::ResolvedStore, CliError> {
    use std::sync::Arc;

    use planlock::embed::{DemoEmbedder, Embedder, Unavailable};
    use planlock::handlers::{EmbedConfig, OpenAiEmbedder};

    let pin = planlock::block_on(place.records()?.load_pin()).map_err(|e| CliError::of(&e))?;
    let pinned = pin.as_ref().and_then(|p| Some((p.embedder_model.clone()?, p.embedder_dimension?)));
    let named = embed.and_then(|e| Some((e.embed_url.as_ref()?, e.embed_model.as_ref()?, &e.embed_api_key_env)));
    let dimension = |pinned: &Option<(String, u64)>| pinned.as_ref().map_or(0, |(_, d)| *d as usize);
    let embedder: Arc<dyn Embedder> = match (named, &pinned) {
        (Some((url, model, key_env)), _) => Arc::new(OpenAiEmbedder::with_dimension(
            EmbedConfig::new(url, model).api_key_env(key_env).purpose_member("input_type"),
            dimension(&pinned),
        )),
        // A command without the flags (`decisions`) reads what needs no embedding.
        (None, Some((model, _))) if embed.is_none() && model != DemoEmbedder::MODEL => {
            // The pinned embedder with no server named: a read that would embed says what to give.
            let message = "the session was pinned with this model: give --embed-url and --embed-model to embed with it";
            Arc::new(Unavailable::new(model.clone(), dimension(&pinned), message))
        }
        (None, _) => Arc::new(DemoEmbedder::new()),
    };
    let resolver = planlock::store::bundle::StrategyResolver::default().embedder(embedder);
    planlock::block_on(planlock::backend::read_stores(place.backend.as_ref(), &place.name, &resolver))
        .map_err(|e| CliError::of_place(&e))
}
