//! The builder's states and the rules between them, as traits (the pattern of bon's
//! `builder_state.rs`): sealed state markers, one public bound per step ([`CanAdd`]), and the
//! rule traits whose `on_unimplemented` messages the compiler shows. The impls are generated in
//! the parent module from the registry rows; they are `#[doc(hidden)]`.

use crate::contract::steps::Step;

pub(crate) mod sealed {
    pub trait Sealed {}
}

/// The state of a builder with no steps yet.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Start;

/// The plan metadata has no `topK`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct NoTopK;

/// The plan metadata has `topK` (its value is in the draft's metadata).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct TopK;

impl sealed::Sealed for Start {}
impl sealed::Sealed for NoTopK {}
impl sealed::Sealed for TopK {}

/// Where `metadata.topK` stands in a builder: [`NoTopK`] or [`TopK`].
pub trait TopKState: sealed::Sealed {}
impl TopKState for NoTopK {}
impl TopKState for TopK {}

/// Implemented by [`NoTopK`] only: `topK` can be set once.
#[diagnostic::on_unimplemented(
    message = "`topK` is already set for this plan: remove the second `.top_k(..)` call",
    label = "`.top_k(n)` was called before",
    note = "`metadata.topK` is set once; remove the second `.top_k(..)` call"
)]
pub trait TopKUnset: sealed::Sealed {}
#[diagnostic::do_not_recommend]
impl TopKUnset for NoTopK {}

/// Implemented by [`TopK`] only: `RetrieveMemory` needs `metadata.topK` (D-007).
#[diagnostic::on_unimplemented(
    message = "`RetrieveMemory` needs plan metadata `topK`: call `.top_k(n)` first",
    label = "this plan has no `topK` yet",
    note = "there is no default topK (D-007): set it with `.top_k(n)` before `.retrieve_memory(..)`"
)]
pub trait TopKSet: sealed::Sealed {}
#[diagnostic::do_not_recommend]
impl TopKSet for TopK {}

/// The state of a builder: [`Start`] or the marker of the last step added. Sealed.
///
/// `FirstMissing` is the first mandatory step not in the plan yet ([`Complete`] once all four
/// are in). The states encode "every mandatory step up to the last one added is in", so the
/// first mandatory step after the state is the first one missing.
pub trait BuilderState: sealed::Sealed {
    /// The first mandatory step the plan still lacks, or [`Complete`].
    type FirstMissing;
}

/// The [`BuilderState::FirstMissing`] of a plan that has every mandatory step.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Complete;
impl sealed::Sealed for Complete {}

/// A plan in state `Self` may get a `T` step next: `T` comes later in the canonical order than
/// the last step added, and no mandatory step before `T` is missing.
///
/// This is the one bound a generic helper needs to add a step in whatever state it is given:
///
/// ```
/// use planlock_contract::builder::{CanAdd, PlanBuilder, TopKState};
/// use planlock_contract::schema::{Evidence, PersistEvidencePayload};
/// use planlock_contract::steps::PersistEvidence;
///
/// fn with_evidence<S: CanAdd<PersistEvidence>, M: TopKState>(
///     builder: PlanBuilder<S, M>,
///     evidence: Evidence,
/// ) -> PlanBuilder<PersistEvidence, M> {
///     builder.persist_evidence("evidence", PersistEvidencePayload { evidence })
/// }
/// # use planlock_contract::{AnyObject, schema::*};
/// # let b = PlanBuilder::new("p", "chat")
/// #     .context_select("ctx", ContextSelectPayload { input: "hi".into(), sources: vec![] })
/// #     .prompt_assemble("prompt", PromptAssemblePayload { template: "t".into(), vars: AnyObject::new() })
/// #     .llm_call("llm", LlmCallPayload { prompt: "p".into(), config: AnyObject::new() });
/// let evidence = Evidence { id: "e-1".into(), summary: "log".into(), source: "ci".into() };
/// let plan = with_evidence(b, evidence)
///     .persist_session("save", PersistSessionPayload { session_ref: "s".into(), meta: AnyObject::new() })
///     .build()?;
/// assert_eq!(plan.steps().len(), 5);
/// # Ok::<(), planlock_contract::Rejection>(())
/// ```
///
/// When it does not hold, the compiler names the rule that fails: `T: ComesAfter<S>` (out of
/// order, or already in the plan) or `M: AddedBefore<T>` (the mandatory step `M` is missing).
pub trait CanAdd<T: Step>: BuilderState + Then<T, Next = T> {}

#[doc(hidden)]
impl<S: BuilderState, T: Step> CanAdd<T> for S
where
    T: ComesAfter<S, Missing = S::FirstMissing>,
    S::FirstMissing: AddedBefore<T, Next = T>,
{
}

/// `Self` comes later than `S` in the canonical order (so it is not in the plan yet either).
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot come after `{S}` in the canonical order: move it earlier, or remove it if the plan has one (in a generic helper: bound `{S}: CanAdd<{Self}>`)",
    label = "`{Self}` comes before `{S}` in the canonical order, or is already in the plan, or `{S}` is generic and not bounded for it",
    note = "steps follow the canonical order RepoScan, ContextSelect, RetrieveMemory, RetrieveDecisionContext, PromptAssemble, LLMCall, SummarizeMemory, PersistMemory, PersistDecision, PersistEvidence, LinkDecisionEvidence, PersistSession; each step type appears at most once",
    note = "a generic helper that adds `{Self}` in state `S` needs the bound `S: CanAdd<{Self}>`"
)]
pub trait ComesAfter<S>: Step {
    /// `S::FirstMissing`, asked through this rule so that the mandatory-step rule is asked only
    /// once this one holds (one error per call, also in a generic helper).
    #[doc(hidden)]
    type Missing;
}

/// Every step comes after none.
#[doc(hidden)]
#[diagnostic::do_not_recommend]
impl<T: Step> ComesAfter<Start> for T {
    type Missing = <Start as BuilderState>::FirstMissing;
}

/// The mandatory step `Self` (the first one missing) does not have to come before `T`: `T` is
/// `Self` or comes earlier. [`Complete`] allows every step.
#[diagnostic::on_unimplemented(
    message = "`{Self}` is mandatory and missing: add it before `{T}`",
    label = "`{Self}` must come before `{T}` in the canonical order",
    note = "every plan has the mandatory steps ContextSelect, PromptAssemble, LLMCall and PersistSession, in this order"
)]
pub trait AddedBefore<T>: sealed::Sealed {
    /// `T`: the state after adding it (see [`Then`]).
    #[doc(hidden)]
    type Next;
}

#[doc(hidden)]
#[diagnostic::do_not_recommend]
impl<T: Step> AddedBefore<T> for Complete {
    type Next = T;
}

/// `build()` needs this of the plan's first missing mandatory step: only [`Complete`] has it.
#[diagnostic::on_unimplemented(
    message = "`{Self}` is mandatory and missing: add it before `.build()`",
    label = "this plan has no `{Self}` step yet",
    note = "every plan has the mandatory steps ContextSelect, PromptAssemble, LLMCall and PersistSession, in this order"
)]
pub trait NothingMissing: sealed::Sealed {}

#[doc(hidden)]
#[diagnostic::do_not_recommend]
impl NothingMissing for Complete {}

/// The state after adding `T` to a plan in state `Self`: `T`, read through both rule traits in
/// turn (the order rule gives the mandatory step to ask, that rule gives `T`), so it is known only
/// where the rules allow the step. A step method's result goes through it (and
/// its only bound is this one): a refused call is one error, from the rule that fails, and leaves
/// the next state unknown, so the calls after it are not reported again. A generic helper's
/// `S: CanAdd<T>` brings `S: Then<T, Next = T>` with it.
#[doc(hidden)]
#[diagnostic::on_unimplemented(
    message = "`{T}` is already in the plan: remove this second `{T}` step",
    label = "a plan has at most one `{T}` step",
    note = "steps follow the canonical order RepoScan, ContextSelect, RetrieveMemory, RetrieveDecisionContext, PromptAssemble, LLMCall, SummarizeMemory, PersistMemory, PersistDecision, PersistEvidence, LinkDecisionEvidence, PersistSession; each step type appears at most once"
)]
// The compiler shows this message only when the failing rule is about the step itself
// (`T: ComesAfter<T>`: a step added twice in a row); otherwise it shows the rule's own.
pub trait Then<T> {
    type Next;
}

// No `S: BuilderState` here: in a generic helper whose state has no bound, the order rule is
// the one reported (with its hint on the bound to add), not this trait's own message.
#[doc(hidden)]
impl<S, T: Step> Then<T> for S
where
    T: ComesAfter<S>,
    <T as ComesAfter<S>>::Missing: AddedBefore<T>,
{
    type Next = <<T as ComesAfter<S>>::Missing as AddedBefore<T>>::Next;
}
