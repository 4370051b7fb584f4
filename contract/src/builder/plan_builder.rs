//! The [`PlanBuilder`] itself: the draft it holds and the one method per step the table makes.

use std::marker::PhantomData;

use super::state::sealed;
use super::{
    AddedBefore, BuilderState, CanAdd, ComesAfter, Complete, NoTopK, NothingMissing, Start, Then, TopK, TopKSet,
    TopKState, TopKUnset,
};
use crate::contract::plan::{Budgets, ExecutionPlan, PlanMetadata, StepDefinition, Timeouts, ValidatorSignature};
use crate::contract::problem::Rejection;
use crate::contract::schema::*;
use crate::contract::steps::*;
use crate::contract::value::PositiveInt;
use crate::validate::ValidPlan;

/// A plan under construction; see the [module docs](super) for how the types check it.
///
/// ```
/// use planlock_contract::{AnyObject, PlanBuilder, schema::*};
///
/// let plan = PlanBuilder::new("profiles/default", "chat")
///     .top_k(5)
///     .context_select("ctx", ContextSelectPayload { input: "hi".into(), sources: vec!["repo".into()] })
///     .retrieve_memory("memory", "hi")
///     .prompt_assemble("prompt", PromptAssemblePayload { template: "{{input}}".into(), vars: AnyObject::new() })
///     .llm_call("llm", LlmCallPayload { prompt: "hi".into(), config: AnyObject::new() })
///     .persist_session("save", PersistSessionPayload { session_ref: "s1".into(), meta: AnyObject::new() })
///     .build()?;
/// assert_eq!(plan.steps().len(), 5);
/// assert_eq!(plan.metadata().top_k.map(|k| k.get()), Some(5));
/// # Ok::<(), planlock_contract::Rejection>(())
/// ```
///
/// A step out of order does not compile:
///
/// ```compile_fail
/// use planlock_contract::{AnyObject, PlanBuilder, schema::*};
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
    /// A `topK` that `.top_k(n)` could not take (0, or over 2^53 − 1), for `build()` to report.
    rejected_top_k: Option<u64>,
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
        if crate::contract::rules::step_id(id).is_err() || seen.contains(&hash) || self.len == self.hashes.len() {
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
        let plan = ExecutionPlan::new(metadata, Vec::with_capacity(crate::contract::registry::REGISTRY.len()));
        PlanBuilder {
            draft: Box::new(Draft { plan, ids: StepIds::default(), rejected_top_k: None }),
            state: PhantomData,
        }
    }
}

impl<S: BuilderState, M: TopKState> PlanBuilder<S, M> {
    /// Sets `metadata.topK`; allowed once. It must be at least 1 (and at most 2^53 − 1):
    /// another value is reported by [`build`](Self::build) with the validator's own code,
    /// `invalid-value` at `/metadata/topK`, like any other value types cannot check.
    pub fn top_k(mut self, n: u64) -> PlanBuilder<S, TopK>
    where
        M: TopKUnset,
    {
        match PositiveInt::new(n) {
            Some(k) => self.draft.plan.metadata.top_k = Some(k),
            None => self.draft.rejected_top_k = Some(n),
        }
        self.advance()
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

    /// Finishes the plan; compiles only once the four mandatory steps are in (the compiler
    /// names the first one missing).
    ///
    /// Returns the same [`ValidPlan`] the runtime validator produces, or the validator's
    /// [`Rejection`] for what types cannot check (step ids, empty strings, `topK` 0, free-form
    /// values, the document size limit).
    pub fn build(self) -> Result<ValidPlan, Rejection>
    where
        S::FirstMissing: NothingMissing,
    {
        let Draft { plan, ids, rejected_top_k } = *self.draft;
        ValidPlan::from_builder(plan, !ids.suspect, rejected_top_k)
    }
}

// Without bounds of their own: a step method's one bound, `S: Then<T>`, is the rule the compiler
// reports on, also in a generic helper that gave its state no bound.
impl<S, M> PlanBuilder<S, M> {
    /// The same draft in another state; the caller's bounds make the new state sound.
    #[inline]
    fn advance<N, K>(self) -> PlanBuilder<N, K> {
        PlanBuilder { draft: self.draft, state: PhantomData }
    }

    #[inline]
    fn push<N>(mut self, id: String, payload: StepPayload) -> PlanBuilder<N, M> {
        self.draft.ids.add(&id);
        self.draft.plan.steps.push(StepDefinition { id, payload });
        self.advance()
    }

    #[inline]
    fn retrieve_memory_with<N>(self, id: String, input: String) -> PlanBuilder<N, M> {
        // `M: TopKSet` at every caller proves `.top_k(n)` was called. When its `n` was refused,
        // `build()` reports that value and this payload's stand-in is never seen.
        let top_k = self.draft.plan.metadata.top_k.unwrap_or(PositiveInt::MIN);
        self.push(id, StepPayload::RetrieveMemory(RetrieveMemoryPayload { input, top_k }))
    }
}

/// Generates the states, the transition impls and the step methods from the registry rows.
///
/// Walking the rows in order, for each step type `T`: `T: ComesAfter<P>` for every earlier `P`
/// (every step comes after `Start`, in `state.rs`); for a mandatory `T`, `T: AddedBefore<P>` for
/// `T` and every earlier `P`, and `FirstMissing = T` for the states waiting since the previous
/// mandatory step; the method that adds `T` (and `maybe_` for an optional `T`), returning
/// `PlanBuilder<N, M>` where `S: Then<T, Next = N>` (see [`Then`] for why not `CanAdd`). The rule
/// impls are `do_not_recommend`, so an error names the rule, not a list of the impls that do exist.
macro_rules! builder_table {
    ($($variant:ident $wire:literal $method:ident $mand:ident $(($maybe:ident))? $kind:ident $class:ident $payload:ident $result:ident;)*) => {
        builder_table!(@row prev[] waiting[Start] methods[] $($variant $wire $method [$($maybe)?] $mand $payload;)*);
    };

    (@row prev[$($prev:ident)*] waiting[$($waiting:ident)*] methods[$($methods:tt)*]
        $variant:ident $wire:literal $method:ident [$($maybe:ident)?] $mand:ident $payload:ident; $($rest:tt)*) => {
        impl sealed::Sealed for $variant {}
        $(
            #[doc(hidden)]
            #[diagnostic::do_not_recommend]
            impl ComesAfter<$prev> for $variant {
                type Missing = <$prev as BuilderState>::FirstMissing;
            }
        )*
        builder_table!(@$mand $variant prev[$($prev)*] waiting[$($waiting)*] methods[
            $($methods)*
            builder_table!(@method $variant $wire $method [$($maybe)?] $payload);
        ] $($rest)*);
    };
    (@row prev[$($prev:ident)*] waiting[$($waiting:ident)*] methods[$($methods:tt)*]) => {
        $(
            #[doc(hidden)]
            impl BuilderState for $waiting {
                type FirstMissing = Complete;
            }
        )*
        /// The step methods, one per step type in canonical order, and `maybe_` for each
        /// optional one.
        impl<S, M> PlanBuilder<S, M> {
            $($methods)*
        }
    };

    (@mandatory $variant:ident prev[$($prev:ident)*] waiting[$($waiting:ident)*] methods[$($methods:tt)*] $($rest:tt)*) => {
        $(
            #[doc(hidden)]
            impl BuilderState for $waiting {
                type FirstMissing = $variant;
            }
        )*
        $(
            #[doc(hidden)]
            #[diagnostic::do_not_recommend]
            impl AddedBefore<$prev> for $variant {
                type Next = $prev;
            }
        )*
        #[doc(hidden)]
        #[diagnostic::do_not_recommend]
        impl AddedBefore<$variant> for $variant {
            type Next = $variant;
        }
        builder_table!(@row prev[$($prev)* $variant] waiting[$variant] methods[$($methods)*] $($rest)*);
    };
    (@optional $variant:ident prev[$($prev:ident)*] waiting[$($waiting:ident)*] methods[$($methods:tt)*] $($rest:tt)*) => {
        builder_table!(@row prev[$($prev)* $variant] waiting[$($waiting)* $variant] methods[$($methods)*] $($rest)*);
    };

    // Written out below: its payload's topK comes from the metadata.
    (@method RetrieveMemory $($rest:tt)*) => {};
    (@method $variant:ident $wire:literal $method:ident [$($maybe:ident)?] $payload:ident) => {
        #[doc = concat!("Adds the `", $wire, "` step; compiles only where the canonical order allows it (a generic helper's bound is [`CanAdd`]).")]
        #[inline]
        pub fn $method<N>(self, id: impl Into<String>, payload: $payload) -> PlanBuilder<N, M>
        where
            S: Then<$variant, Next = N>,
        {
            self.push(id.into(), StepPayload::$variant(payload))
        }
        $(builder_table!(@maybe $variant $wire $maybe $payload);)?
    };
    (@maybe $variant:ident $wire:literal $maybe:ident $payload:ident) => {
            #[doc = concat!("Adds the `", $wire, "` step when `payload` is `Some`; either way the plan goes on as if it had been added, so later steps keep their place in the order.")]
            #[inline]
            pub fn $maybe<N>(self, id: impl Into<String>, payload: Option<$payload>) -> PlanBuilder<N, M>
            where
                S: Then<$variant, Next = N>,
            {
                match payload {
                    Some(payload) => self.push(id.into(), StepPayload::$variant(payload)),
                    None => self.advance(),
                }
            }
    };
}

crate::contract::registry::for_each_step!(builder_table);

impl<S, M> PlanBuilder<S, M> {
    /// Adds the `RetrieveMemory` step with this query. Its payload `topK` is the plan's
    /// `metadata.topK`, so the two cannot disagree; compiles only after [`top_k`](Self::top_k).
    #[inline]
    pub fn retrieve_memory<N>(self, id: impl Into<String>, input: impl Into<String>) -> PlanBuilder<N, M>
    where
        S: Then<RetrieveMemory, Next = N>,
        M: TopKSet,
    {
        self.retrieve_memory_with(id.into(), input.into())
    }

    /// Adds the `RetrieveMemory` step when `input` is `Some`; either way the plan goes on as if
    /// it had been added, so later steps keep their place in the order.
    #[inline]
    pub fn maybe_retrieve_memory<N>(self, id: impl Into<String>, input: Option<String>) -> PlanBuilder<N, M>
    where
        S: Then<RetrieveMemory, Next = N>,
        M: TopKSet,
    {
        match input {
            Some(input) => self.retrieve_memory_with(id.into(), input),
            None => self.advance(),
        }
    }
}

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
static_assertions::assert_impl_all!(PromptAssemble: CanAdd<LLMCall>);
static_assertions::assert_impl_all!(LLMCall: CanAdd<PersistMemory>, CanAdd<PersistSession>);
static_assertions::assert_not_impl_any!(ContextSelect: CanAdd<LLMCall>, CanAdd<PersistSession>);
static_assertions::assert_not_impl_any!(Start: CanAdd<PromptAssemble>);
static_assertions::assert_impl_all!(Start: CanAdd<RepoScan>, CanAdd<ContextSelect>);
static_assertions::assert_impl_all!(<PersistSession as BuilderState>::FirstMissing: NothingMissing);
static_assertions::assert_not_impl_any!(<LinkDecisionEvidence as BuilderState>::FirstMissing: NothingMissing);
