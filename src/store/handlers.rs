//! The six Retrieve and Persist step handlers over the ports.

use std::sync::Arc;

use super::{Call, NewMemory, Storage, StoreError};
use crate::contract::registry::StepType;
use crate::contract::schema::*;
use crate::contract::steps::{
    LinkDecisionEvidence, PersistDecision, PersistEvidence, PersistMemory, RetrieveDecisionContext, RetrieveMemory,
    Step,
};
use crate::exec::handler::{Entry, Handler, HandlerError, HandlerSet, Handlers, StepContext};

/// The handlers of `RetrieveMemory`, `RetrieveDecisionContext`, `PersistMemory`,
/// `PersistDecision`, `PersistEvidence` and `LinkDecisionEvidence`, over one implementation of
/// the ports. A failure is the step's, with its kind from the registry: a read is CycleFail, a
/// write FailFast.
///
/// ```
/// use planlock::store::{StoreHandlers, memory::InMemoryStore};
/// use planlock::{Handlers, StepType};
/// let handlers = StoreHandlers::new(InMemoryStore::new()).register(Handlers::new());
/// assert_eq!(handlers.step_types().len(), 6);
/// assert!(handlers.step_types().contains(&StepType::PersistDecision));
/// ```
#[derive(Debug)]
pub struct StoreHandlers<P> {
    ports: Arc<P>,
}

impl<P> Clone for StoreHandlers<P> {
    fn clone(&self) -> Self {
        StoreHandlers { ports: self.ports.clone() }
    }
}

/// The handler list after [`StoreHandlers::register`].
type WithStore<P, L> = Entry<
    LinkDecisionEvidence,
    StoreHandlers<P>,
    Entry<
        PersistEvidence,
        StoreHandlers<P>,
        Entry<
            PersistDecision,
            StoreHandlers<P>,
            Entry<
                PersistMemory,
                StoreHandlers<P>,
                Entry<RetrieveDecisionContext, StoreHandlers<P>, Entry<RetrieveMemory, StoreHandlers<P>, L>>,
            >,
        >,
    >,
>;

impl<P: Storage> StoreHandlers<P> {
    /// The handlers over `ports`.
    pub fn new(ports: P) -> StoreHandlers<P> {
        StoreHandlers { ports: Arc::new(ports) }
    }

    /// The ports, to read what they hold.
    pub fn ports(&self) -> &P {
        &self.ports
    }

    /// Adds the six handlers to `handlers` (they replace any earlier ones for those steps).
    pub fn register<L: HandlerSet>(&self, handlers: Handlers<L>) -> Handlers<WithStore<P, L>> {
        handlers
            .on_named::<RetrieveMemory, _>(self.clone())
            .on_named::<RetrieveDecisionContext, _>(self.clone())
            .on_named::<PersistMemory, _>(self.clone())
            .on_named::<PersistDecision, _>(self.clone())
            .on_named::<PersistEvidence, _>(self.clone())
            .on_named::<LinkDecisionEvidence, _>(self.clone())
    }
}

/// What each storage step's handler says when its port fails: the handlers', and a write's that
/// failed later, sent with the session save (`Runtime`, CONTRACT §13).
const FAILED: [(StepType, &str); 6] = [
    (StepType::RetrieveMemory, "searching memories failed"),
    (StepType::RetrieveDecisionContext, "loading the decision context failed"),
    (StepType::PersistMemory, "storing the memory failed"),
    (StepType::PersistDecision, "storing the decision failed"),
    (StepType::PersistEvidence, "storing the evidence failed"),
    (StepType::LinkDecisionEvidence, "linking the decision and evidence failed"),
];

/// A port's failure `e` as the failure of a `step`'s handler: what it was doing, and why.
pub(crate) fn step_failure(step: StepType, e: StoreError) -> HandlerError {
    let doing = FAILED.iter().find(|(t, _)| *t == step).map_or("the storage port failed", |(_, doing)| doing);
    HandlerError::with_source(doing, e)
}

/// [`step_failure`] for step type `S`.
fn failed<S: Step>() -> impl FnOnce(StoreError) -> HandlerError {
    move |e| step_failure(S::TYPE, e)
}

impl<P: Storage> Handler<RetrieveMemory> for StoreHandlers<P> {
    async fn call(
        &self,
        cx: &StepContext<'_>,
        p: &RetrieveMemoryPayload,
    ) -> Result<RetrieveMemoryResult, HandlerError> {
        let call = Call::of_step(cx);
        let items = self.ports.search(&call, &p.input, p.top_k.get()).await.map_err(failed::<RetrieveMemory>())?;
        Ok(RetrieveMemoryResult { items })
    }
}

impl<P: Storage> Handler<RetrieveDecisionContext> for StoreHandlers<P> {
    async fn call(
        &self,
        cx: &StepContext<'_>,
        p: &RetrieveDecisionContextPayload,
    ) -> Result<RetrieveDecisionContextResult, HandlerError> {
        let call = Call::of_step(cx);
        let found = self
            .ports
            .load(&call, &p.input, p.current_domain.as_deref())
            .await
            .map_err(failed::<RetrieveDecisionContext>())?;
        Ok(RetrieveDecisionContextResult { decisions: found.decisions, anchors: found.anchors })
    }
}

impl<P: Storage> Handler<PersistMemory> for StoreHandlers<P> {
    async fn call(&self, cx: &StepContext<'_>, p: &PersistMemoryPayload) -> Result<PersistMemoryResult, HandlerError> {
        let memory = NewMemory { session_ref: &p.session_ref, summary: &p.summary, keywords: &p.keywords };
        let stored = self.ports.put(&Call::of_step(cx), memory).await;
        let id = stored.map_err(failed::<PersistMemory>())?;
        Ok(PersistMemoryResult { id })
    }
}

impl<P: Storage> Handler<PersistDecision> for StoreHandlers<P> {
    async fn call(
        &self,
        cx: &StepContext<'_>,
        p: &PersistDecisionPayload,
    ) -> Result<PersistDecisionResult, HandlerError> {
        let stored = self.ports.persist_decision(&Call::of_step(cx), &p.decision).await;
        let id = stored.map_err(failed::<PersistDecision>())?;
        Ok(PersistDecisionResult { id })
    }
}

impl<P: Storage> Handler<PersistEvidence> for StoreHandlers<P> {
    async fn call(
        &self,
        cx: &StepContext<'_>,
        p: &PersistEvidencePayload,
    ) -> Result<PersistEvidenceResult, HandlerError> {
        let stored = self.ports.persist_evidence(&Call::of_step(cx), &p.evidence).await;
        let id = stored.map_err(failed::<PersistEvidence>())?;
        Ok(PersistEvidenceResult { id })
    }
}

impl<P: Storage> Handler<LinkDecisionEvidence> for StoreHandlers<P> {
    async fn call(
        &self,
        cx: &StepContext<'_>,
        p: &LinkDecisionEvidencePayload,
    ) -> Result<LinkDecisionEvidenceResult, HandlerError> {
        let anchor = Anchor { decision_id: p.decision_id.clone(), evidence_id: p.evidence_id.clone() };
        let linked = self.ports.link(&Call::of_step(cx), &anchor).await;
        let status = linked.map_err(failed::<LinkDecisionEvidence>())?;
        Ok(LinkDecisionEvidenceResult { status })
    }
}
