//! Step markers: one zero-sized type per step type, tying its [`StepType`] to its payload and
//! result types. The typestate [`PlanBuilder`](crate::PlanBuilder) uses them as states, the
//! executor's ledger as keys.
//!
//! The markers carry the wire names (`LLMCall`, not `LlmCall`) so compiler messages speak the
//! contract's language.

use serde::de::{DeserializeSeed, Deserializer};
use serde_json::Value;

use crate::contract::object::Contract;
use crate::contract::problem::Problem;
use crate::contract::registry::StepType;
use crate::contract::schema::*;
use crate::json::pointer::JsonPointer;

mod sealed {
    pub trait Sealed {}
}

/// A step type known at compile time.
pub trait Step: sealed::Sealed + Send + Sync + 'static {
    /// Its registry entry.
    const TYPE: StepType;
    /// What the step receives.
    type Payload: Clone + std::fmt::Debug + Send + Sync + 'static;
    /// What the step produces.
    type Result: Clone + std::fmt::Debug + Send + Sync + 'static;
    /// Wraps a payload in the plan's payload enum.
    fn wrap(payload: Self::Payload) -> StepPayload;
    /// The payload, if `payload` belongs to this step type.
    fn unwrap(payload: &StepPayload) -> Option<&Self::Payload>;
    /// Wraps a result in the ledger's result enum.
    fn wrap_result(result: Self::Result) -> StepResult;
    /// The result, if `result` belongs to this step type.
    fn unwrap_result(result: &StepResult) -> Option<&Self::Result>;
}

macro_rules! define_steps {
    ($($variant:ident $wire:literal $method:ident $mand:ident $(($maybe:ident))? $kind:ident $class:ident $payload:ident $result:ident;)*) => {
        $(
            #[doc = concat!("The `", $wire, "` step (", stringify!($mand), ", ", stringify!($kind), ").")]
            #[allow(clippy::upper_case_acronyms)]
            #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
            pub struct $variant;

            impl sealed::Sealed for $variant {}

            impl Step for $variant {
                const TYPE: StepType = StepType::$variant;
                type Payload = $payload;
                type Result = $result;
                fn wrap(payload: $payload) -> StepPayload {
                    StepPayload::$variant(payload)
                }
                fn unwrap(payload: &StepPayload) -> Option<&$payload> {
                    match payload {
                        StepPayload::$variant(p) => Some(p),
                        #[allow(unreachable_patterns)]
                        _ => None,
                    }
                }
                fn wrap_result(result: $result) -> StepResult {
                    StepResult::$variant(result)
                }
                fn unwrap_result(result: &StepResult) -> Option<&$result> {
                    match result {
                        StepResult::$variant(r) => Some(r),
                        #[allow(unreachable_patterns)]
                        _ => None,
                    }
                }
            }
        )*

        /// A step's typed result; the variant is the step's type.
        #[allow(clippy::upper_case_acronyms)]
        #[derive(Debug, Clone, PartialEq, serde::Serialize)]
        #[serde(untagged)]
        pub enum StepResult {
            $(
                #[doc = concat!("The result of a `", $wire, "` step.")]
                $variant($result),
            )*
        }

        impl StepResult {
            /// Reads a result of step type `ty` from JSON, strictly (as the record of a paused
            /// cycle keeps it).
            pub fn from_value(ty: StepType, value: &Value) -> Result<StepResult, serde_json::Error> {
                match ty {
                    $(StepType::$variant => <$result as serde::Deserialize>::deserialize(value).map(StepResult::$variant),)*
                }
            }

            /// The step type this result belongs to.
            pub fn step_type(&self) -> StepType {
                match self {
                    $(StepResult::$variant(_) => StepType::$variant,)*
                }
            }

            /// Checks what the result's types cannot (string rules, free-form limits).
            pub fn check_typed<'a>(&'a self, path: &mut JsonPointer<'a>, out: &mut Vec<Problem>) {
                match self {
                    $(StepResult::$variant(r) => r.check_typed(path, out),)*
                }
            }
        }

        /// A step's typed payload; the variant is the step's type.
        #[allow(clippy::upper_case_acronyms)]
        #[derive(Debug, Clone, PartialEq)]
        pub enum StepPayload {
            $(
                #[doc = concat!("The payload of a `", $wire, "` step.")]
                $variant($payload),
            )*
        }

        impl StepPayload {
            /// The step type this payload belongs to.
            pub fn step_type(&self) -> StepType {
                match self {
                    $(StepPayload::$variant(_) => StepType::$variant,)*
                }
            }

            pub fn check_typed<'a>(&'a self, path: &mut JsonPointer<'a>, out: &mut Vec<Problem>) {
                match self {
                    $(StepPayload::$variant(p) => p.check_typed(path, out),)*
                }
            }

            /// Whether [`check_typed`](Self::check_typed) would find nothing (see
            /// `Contract::typed_ok`).
            pub fn typed_ok(&self, limits_checked: bool, depth: usize) -> bool {
                match self {
                    $(StepPayload::$variant(p) => p.typed_ok(limits_checked, depth),)*
                }
            }

            /// Whether [`check_typed`](Self::check_typed) can find anything for this payload.
            pub fn has_typed_checks(&self) -> bool {
                match self {
                    $(StepPayload::$variant(_) => <$payload as Contract>::TYPED_CHECKS,)*
                }
            }

            pub fn check_value<'a>(ty: StepType, v: &'a Value, path: &mut JsonPointer<'a>, out: &mut Vec<Problem>) {
                match ty {
                    $(StepType::$variant => <$payload as Contract>::check_value(v, path, out),)*
                }
            }

            pub fn deserialize_as<'de, D: Deserializer<'de>>(ty: StepType, d: D) -> Result<StepPayload, D::Error> {
                match ty {
                    $(StepType::$variant => <$payload as serde::Deserialize>::deserialize(d).map(StepPayload::$variant),)*
                }
            }

            pub fn write_canonical(&self, out: &mut Vec<u8>) {
                match self {
                    $(StepPayload::$variant(p) => crate::json::canonical::Canonical::write_canonical(p, out),)*
                }
            }

            pub fn json_len_bound(&self) -> usize {
                match self {
                    $(StepPayload::$variant(p) => crate::json::size::JsonLenBound::json_len_bound(p),)*
                }
            }

            fn serialize_inner<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                match self {
                    $(StepPayload::$variant(p) => serde::Serialize::serialize(p, s),)*
                }
            }
        }

        $(
            impl From<$payload> for StepPayload {
                fn from(p: $payload) -> Self {
                    StepPayload::$variant(p)
                }
            }
        )*
    };
}

crate::contract::registry::for_each_step!(define_steps);

impl serde::Serialize for StepPayload {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        self.serialize_inner(s)
    }
}

impl crate::json::size::JsonLenBound for StepPayload {
    fn json_len_bound(&self) -> usize {
        StepPayload::json_len_bound(self)
    }
}

/// Deserializes the payload of a step whose type is already known.
pub struct PayloadSeed(pub StepType);

impl<'de> DeserializeSeed<'de> for PayloadSeed {
    type Value = StepPayload;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<StepPayload, D::Error> {
        StepPayload::deserialize_as(self.0, d)
    }
}
