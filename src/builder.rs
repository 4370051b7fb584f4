//! The typestate [`PlanBuilder`]: plans that break the order, presence or uniqueness rules do
//! not compile.
//!
//! `PlanBuilder<S, M>` remembers the last step added (`S`: [`Start`] or a step marker from
//! [`steps`](crate::steps)) and whether `metadata.topK` is set (`M`: [`NoTopK`] or [`TopK`]).
//! Each step method exists in every state but carries `where` bounds on two traits:
//!
//! - [`ComesAfter<S>`]: the step comes later than `S` in the canonical order (so it is also
//!   not in the plan yet);
//! - [`Added<S>`]: the mandatory step right before it is in the plan, so no mandatory step is
//!   skipped.
//!
//! Both traits carry `#[diagnostic::on_unimplemented]`, so a wrong call reads, for example,
//! "this plan has no `PromptAssemble` step yet". [`PlanBuilder::build`] requires all four
//! mandatory steps the same way. The impls are generated from the registry rows.
//!
//! What types cannot check — step ids (empty, longer than 128 characters, control characters,
//! duplicated), empty metadata strings, free-form values over the document limits — is reported
//! by `build()` as a [`Rejection`] with the validator's own codes. Ids are checked and hashed as
//! they are added, so `build()` walks them again only when one may be malformed or repeated.

use std::marker::PhantomData;
use std::num::NonZeroU32;

use crate::json::PositiveInt;
use crate::plan::{Budgets, ExecutionPlan, PlanMetadata, StepDefinition, Timeouts, ValidatorSignature};
use crate::schema::*;
use crate::steps::*;
use crate::validate::{Rejection, ValidPlan};

mod sealed {
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
    message = "`topK` is already set for this plan",
    label = "`.top_k(n)` was called before",
    note = "`metadata.topK` is set once; remove the second `.top_k(..)` call"
)]
pub trait TopKUnset: sealed::Sealed {}
impl TopKUnset for NoTopK {}

/// Implemented by [`TopK`] only: `RetrieveMemory` needs `metadata.topK` (D-007).
#[diagnostic::on_unimplemented(
    message = "`RetrieveMemory` needs plan metadata `topK`: call `.top_k(n)` first",
    label = "this plan has no `topK` yet",
    note = "there is no default topK (D-007): set it with `.top_k(n)` before `.retrieve_memory(..)`"
)]
pub trait TopKSet: sealed::Sealed {}
impl TopKSet for TopK {}

/// `Self` may be added to a plan whose last step is `S`: it comes later in the canonical order.
#[diagnostic::on_unimplemented(
    message = "cannot add `{Self}` after `{S}`",
    label = "`{Self}` is already in the plan or comes earlier in the canonical order",
    note = "steps follow the canonical order RepoScan, ContextSelect, RetrieveMemory, RetrieveDecisionContext, PromptAssemble, LLMCall, SummarizeMemory, PersistMemory, PersistDecision, PersistEvidence, LinkDecisionEvidence, PersistSession; each step type appears at most once"
)]
pub trait ComesAfter<S>: Step {}

/// The mandatory step `Self` is in a plan whose last step is `S`.
#[diagnostic::on_unimplemented(
    message = "this plan has no `{Self}` step yet",
    label = "`{Self}` is mandatory and must be added before this",
    note = "every plan has the mandatory steps ContextSelect, PromptAssemble, LLMCall and PersistSession, in this order"
)]
pub trait Added<S>: Step {}

/// A plan under construction; see the [module docs](self) for how the types check it.
///
/// ```
/// use planlock::{AnyObject, PlanBuilder, schema::*};
///
/// let plan = PlanBuilder::new("profiles/default", "chat")
///     .top_k(std::num::NonZeroU32::new(5).unwrap())
///     .context_select("ctx", ContextSelectPayload { input: "hi".into(), sources: vec!["repo".into()] })
///     .retrieve_memory("memory", "hi")
///     .prompt_assemble("prompt", PromptAssemblePayload { template: "{{input}}".into(), vars: AnyObject::new() })
///     .llm_call("llm", LlmCallPayload { prompt: "hi".into(), config: AnyObject::new() })
///     .persist_session("save", PersistSessionPayload { session_ref: "s1".into(), meta: AnyObject::new() })
///     .build()?;
/// assert_eq!(plan.steps().len(), 5);
/// assert_eq!(plan.metadata().top_k.map(|k| k.get()), Some(5));
/// # Ok::<(), planlock::Rejection>(())
/// ```
///
/// A step out of order does not compile:
///
/// ```compile_fail
/// use planlock::{AnyObject, PlanBuilder, schema::*};
/// PlanBuilder::new("p", "chat")
///     .context_select("ctx", ContextSelectPayload { input: "hi".into(), sources: vec![] })
///     .llm_call("llm", LlmCallPayload { prompt: "hi".into(), config: AnyObject::new() }); // no PromptAssemble
/// ```
#[must_use = "a builder does nothing until `.build()`"]
#[derive(Debug, Clone)]
pub struct PlanBuilder<S = Start, M = NoTopK> {
    // Boxed so each call moves a pointer, not the whole draft.
    draft: Box<Draft>,
    state: PhantomData<fn() -> (S, M)>,
}

/// The plan so far and what is known about its step ids.
#[derive(Debug, Clone)]
struct Draft {
    plan: ExecutionPlan,
    ids: StepIds,
}

/// The step ids added so far, as 64-bit hashes, so a repeated or malformed id is noticed as it
/// is added and `build()` re-checks the ids only when one may be wrong. (The types allow at most
/// one step per type, so there are at most twelve.)
#[derive(Debug, Clone, Default)]
struct StepIds {
    hashes: [u64; 12],
    len: usize,
    /// An id may be malformed or repeated (or two ids share a hash): check them all at build.
    suspect: bool,
}

impl StepIds {
    #[inline]
    fn add(&mut self, id: &str) {
        // FNV-1a: a few instructions a byte, and ids are short.
        let hash = id.bytes().fold(0xcbf2_9ce4_8422_2325_u64, |h, b| (h ^ u64::from(b)).wrapping_mul(0x100_0000_01b3));
        let seen = &self.hashes[..self.len];
        if crate::rules::step_id(id).is_err() || seen.contains(&hash) || self.len == self.hashes.len() {
            self.suspect = true;
        }
        if let Some(slot) = self.hashes.get_mut(self.len) {
            *slot = hash;
            self.len += 1;
        }
    }
}

impl PlanBuilder {
    /// A builder for a plan with these two required metadata keys. `topK` is set with
    /// [`top_k`](PlanBuilder::top_k), so the type knows whether `RetrieveMemory` is allowed.
    pub fn new(policy_profile: impl Into<String>, mode: impl Into<String>) -> PlanBuilder<Start, NoTopK> {
        let metadata = PlanMetadata::new(policy_profile, mode);
        let plan = ExecutionPlan::new(metadata, Vec::with_capacity(crate::REGISTRY.len()));
        PlanBuilder { draft: Box::new(Draft { plan, ids: StepIds::default() }), state: PhantomData }
    }
}

impl<S, M: TopKState> PlanBuilder<S, M> {
    /// Sets `metadata.topK`; allowed once.
    pub fn top_k(mut self, n: NonZeroU32) -> PlanBuilder<S, TopK>
    where
        M: TopKUnset,
    {
        self.draft.plan.metadata.top_k = Some(PositiveInt::from(n));
        PlanBuilder { draft: self.draft, state: PhantomData }
    }

    /// Sets `metadata.timeouts`.
    pub fn timeouts(mut self, timeouts: Timeouts) -> Self {
        self.draft.plan.metadata.timeouts = Some(timeouts);
        self
    }

    /// Sets `metadata.budgets`.
    pub fn budgets(mut self, budgets: Budgets) -> Self {
        self.draft.plan.metadata.budgets = Some(budgets);
        self
    }

    /// Adds a pre-validator signature (run before each step).
    pub fn validator(mut self, signature: ValidatorSignature) -> Self {
        self.draft.plan.validators.push(signature);
        self
    }

    /// Adds a post-validator signature (run after each step).
    pub fn post_validator(mut self, signature: ValidatorSignature) -> Self {
        self.draft.plan.post_validators.push(signature);
        self
    }

    #[inline]
    fn push<T: Step>(mut self, id: String, payload: StepPayload) -> PlanBuilder<T, M> {
        self.draft.ids.add(&id);
        self.draft.plan.steps.push(StepDefinition { id, payload });
        PlanBuilder { draft: self.draft, state: PhantomData }
    }

    /// Finishes the plan; compiles only once the four mandatory steps are in.
    ///
    /// Returns the same [`ValidPlan`] the runtime validator produces, or the validator's
    /// [`Rejection`] for what types cannot check (step ids, empty strings, free-form values).
    pub fn build(self) -> Result<ValidPlan, Rejection>
    where
        ContextSelect: Added<S>,
        PromptAssemble: Added<S>,
        LLMCall: Added<S>,
        PersistSession: Added<S>,
    {
        let Draft { plan, ids } = *self.draft;
        ValidPlan::from_builder(plan, !ids.suspect)
    }
}

/// Generates the transition impls and the step methods from the registry rows.
///
/// For each row `T`, in order: `T: ComesAfter<P>` for `Start` and every earlier `P`;
/// `M: Added<T>` for every mandatory `M` up to and including `T`; and the method adding `T`,
/// bounded by `T: ComesAfter<S>` and, when a mandatory step precedes `T`, by the nearest one's
/// `Added<S>`.
macro_rules! builder_table {
    ($($variant:ident $wire:literal $method:ident $mand:ident $kind:ident $class:ident $payload:ident $result:ident;)*) => {
        builder_table!(@row prev[] mands[] last[] methods[] $($variant $wire $method $mand $payload;)*);
    };

    (@row prev[$($prev:ident)*] mands[$($mands:ident)*] last[$($last:ident)?] methods[$($methods:tt)*]
        $variant:ident $wire:literal $method:ident $mand:ident $payload:ident; $($rest:tt)*) => {
        impl ComesAfter<Start> for $variant {}
        $(impl ComesAfter<$prev> for $variant {})*
        $(impl Added<$variant> for $mands {})*
        builder_table!(@next $mand $variant prev[$($prev)*] mands[$($mands)*] last[$($last)?] methods[
            $($methods)*
            builder_table!(@method $variant $wire $method $payload [$($last)?]);
        ] $($rest)*);
    };
    (@row prev[$($prev:ident)*] mands[$($mands:ident)*] last[$($last:ident)?] methods[$($methods:tt)*]) => {
        /// The step methods, one per step type, in canonical order.
        impl<S, M: TopKState> PlanBuilder<S, M> {
            $($methods)*
        }
    };

    (@next mandatory $variant:ident prev[$($prev:ident)*] mands[$($mands:ident)*] last[$($last:ident)?] methods[$($methods:tt)*] $($rest:tt)*) => {
        impl Added<$variant> for $variant {}
        builder_table!(@row prev[$($prev)* $variant] mands[$($mands)* $variant] last[$variant] methods[$($methods)*] $($rest)*);
    };
    (@next optional $variant:ident prev[$($prev:ident)*] mands[$($mands:ident)*] last[$($last:ident)?] methods[$($methods:tt)*] $($rest:tt)*) => {
        builder_table!(@row prev[$($prev)* $variant] mands[$($mands)*] last[$($last)?] methods[$($methods)*] $($rest)*);
    };

    (@method RetrieveMemory $wire:literal $method:ident $payload:ident [$($last:ident)?]) => {
        /// Adds the `RetrieveMemory` step with this query. Its payload `topK` is the plan's
        /// `metadata.topK`, so the two cannot disagree; compiles only after [`top_k`](Self::top_k).
        #[inline]
        pub fn $method(self, id: impl Into<String>, input: impl Into<String>) -> PlanBuilder<RetrieveMemory, M>
        where
            RetrieveMemory: ComesAfter<S>,
            $($last: Added<S>,)?
            M: TopKSet,
        {
            // `M: TopKSet` proves `.top_k(n)` set it. Were it missing, this payload would
            // disagree with the metadata and `build()` would reject the plan: no panic either way.
            let top_k = self.draft.plan.metadata.top_k.unwrap_or(PositiveInt::MIN);
            let payload = RetrieveMemoryPayload { input: input.into(), top_k };
            self.push(id.into(), StepPayload::RetrieveMemory(payload))
        }
    };
    (@method $variant:ident $wire:literal $method:ident $payload:ident [$($last:ident)?]) => {
        #[doc = concat!("Adds the `", $wire, "` step; compiles only where the canonical order allows it.")]
        #[inline]
        pub fn $method(self, id: impl Into<String>, payload: $payload) -> PlanBuilder<$variant, M>
        where
            $variant: ComesAfter<S>,
            $($last: Added<S>,)?
        {
            self.push(id.into(), StepPayload::$variant(payload))
        }
    };
}

crate::registry::for_each_step!(builder_table);

static_assertions::assert_eq_size!(Start, ());
static_assertions::assert_eq_size!(NoTopK, ());
static_assertions::assert_eq_size!(TopK, ());
// The states cost nothing at run time: a builder is one pointer, whatever its type.
static_assertions::assert_eq_size!(PlanBuilder<Start, NoTopK>, usize);
static_assertions::assert_eq_size!(PlanBuilder<PersistSession, TopK>, usize);
static_assertions::assert_eq_size!(PhantomData<fn() -> (LLMCall, TopK)>, ());
static_assertions::assert_impl_all!(PlanBuilder<Start, NoTopK>: Send, Sync, Clone);
static_assertions::assert_impl_all!(PlanBuilder<PersistSession, TopK>: Send, Sync, Clone);
static_assertions::assert_impl_all!(ValidPlan: Send, Sync, Clone);
static_assertions::assert_impl_all!(LLMCall: ComesAfter<PromptAssemble>, ComesAfter<Start>);
static_assertions::assert_not_impl_any!(LLMCall: ComesAfter<LLMCall>, ComesAfter<PersistSession>);
static_assertions::assert_not_impl_any!(PromptAssemble: Added<ContextSelect>);
static_assertions::assert_impl_all!(PersistSession: Added<PersistSession>);
static_assertions::assert_impl_all!(ContextSelect: Added<PersistSession>);
