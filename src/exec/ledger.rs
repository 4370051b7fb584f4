//! The result ledger: what the steps of a cycle produced, keyed by step type (each type appears
//! at most once in a plan) and readable by id through [`StepContext`](crate::StepContext).
//!
//! Handlers see it read-only; only the executor writes to it, and it never feeds a result into
//! another step's payload (D-007 §2.4).

use crate::contract::registry::StepType;
use crate::contract::steps::{Step, StepResult};

/// The results of the steps completed so far in a cycle.
///
/// ```
/// use planlock::{Ledger, steps::LLMCall};
/// let ledger = Ledger::default();
/// assert!(ledger.get::<LLMCall>().is_none());
/// ```
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Ledger {
    // Boxed: a cycle's future carries its ledger from step to step, and a worker holds hundreds.
    results: Box<[Option<StepResult>; 12]>,
}

impl Ledger {
    /// The typed result of the step of type `T`, if it has run.
    pub fn get<T: Step>(&self) -> Option<&T::Result> {
        self.by_type(T::TYPE).and_then(T::unwrap_result)
    }

    /// The result of the step of type `ty`, if it has run.
    pub fn by_type(&self, ty: StepType) -> Option<&StepResult> {
        self.results[ty.position()].as_ref()
    }

    /// The results recorded, in canonical order.
    pub fn iter(&self) -> impl Iterator<Item = &StepResult> {
        self.results.iter().flatten()
    }

    /// How many results are recorded.
    pub fn len(&self) -> usize {
        self.iter().count()
    }

    /// Whether no result is recorded.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    pub(crate) fn record(&mut self, result: StepResult) {
        let slot = result.step_type().position();
        self.results[slot] = Some(result);
    }
}
