//! The rules over the whole step list, the same for a document and a typed plan: duplicate
//! types and ids, the canonical order, the mandatory steps and `topK` (B-007 section 4, D-007).

use std::collections::HashMap;

use crate::contract::problem::{Problem, ProblemCode};
use crate::contract::registry::{StepType, allowed_after};

/// What the plan-level rules need to know of one step, from either path.
pub(super) struct StepFacts<'a> {
    pub(super) index: usize,
    pub(super) id: Option<&'a str>,
    pub(super) ty: Option<StepType>,
    /// For an unknown type: the registered type it probably means.
    pub(super) suggested: Option<StepType>,
    pub(super) payload_top_k: Option<u64>,
}

/// `metadata.topK` as far as the plan-level rules are concerned.
#[derive(Clone, Copy)]
pub(super) enum MetaTopK {
    Absent,
    Present(u64),
    /// Present but invalid: already reported, so the topK rules stay quiet.
    Invalid,
}

/// The rules over the whole step list: duplicates, order, mandatory steps, topK (B-007 §4,
/// D-007 metadata enforcement). Shared by both paths.
pub(super) fn plan_rules(facts: &[StepFacts<'_>], top_k: MetaTopK, out: &mut Vec<Problem>) {
    duplicate_ids(facts, out);
    structure_rules(facts, top_k, out);
}

pub(super) fn duplicate_ids(facts: &[StepFacts<'_>], out: &mut Vec<Problem>) {
    let mut ids = IdIndex::new(facts.len());
    for f in facts {
        let Some(id) = f.id else { continue };
        if let Some(first) = ids.first_use(id, f.index) {
            out.push(Problem::new(
                ProblemCode::DuplicateStepId,
                format!("/steps/{}/id", f.index),
                format!("step id `{id}` is already used by /steps/{first}; step ids are unique in a plan"),
            ));
        }
    }
}

/// Duplicate types, order, mandatory steps and topK: what the builder's types guarantee.
pub(super) fn structure_rules(facts: &[StepFacts<'_>], top_k: MetaTopK, out: &mut Vec<Problem>) {
    let mut first_of_type: [Option<usize>; 12] = [None; 12];
    let mut last: Option<StepType> = None;
    for f in facts {
        let Some(ty) = f.ty else { continue };
        if let Some(first) = first_of_type[ty.position()] {
            out.push(Problem::new(
                ProblemCode::DuplicateStepType,
                format!("/steps/{}/type", f.index),
                format!("`{ty}` already appears at /steps/{first}; each step type appears at most once"),
            ));
            continue;
        }
        first_of_type[ty.position()] = Some(f.index);
        match last {
            Some(l) if ty < l => out.push(Problem::new(
                ProblemCode::OrderViolation,
                format!("/steps/{}/type", f.index),
                format!(
                    "`{ty}` cannot come after `{l}`: the canonical order puts it earlier; allowed after `{l}`: {}",
                    list_or_none(allowed_after(Some(l)))
                ),
            )),
            _ => last = Some(ty),
        }
        if ty == StepType::RetrieveMemory {
            match top_k {
                MetaTopK::Absent => out.push(Problem::new(
                    ProblemCode::TopKMissing,
                    "/metadata/topK".to_owned(),
                    format!(
                        "step /steps/{} is `RetrieveMemory`, which needs `metadata.topK`; there is no default",
                        f.index
                    ),
                )),
                MetaTopK::Present(k) => {
                    if let Some(p) = f.payload_top_k.filter(|&p| p != k) {
                        out.push(Problem::new(
                            ProblemCode::TopKMismatch,
                            format!("/steps/{}/payload/topK", f.index),
                            format!("payload topK is {p} but metadata.topK is {k}; they must be equal"),
                        ));
                    }
                }
                MetaTopK::Invalid => {}
            }
        }
    }
    for spec in crate::contract::registry::REGISTRY.iter().filter(|s| s.mandatory) {
        let ty = spec.step_type;
        let meant = facts.iter().any(|f| f.suggested == Some(ty));
        if first_of_type[ty.position()].is_none() && !meant {
            out.push(Problem::new(
                ProblemCode::MissingMandatoryStep,
                "/steps".to_owned(),
                format!(
                    "the plan has no `{ty}` step; it is mandatory (every plan has {})",
                    list_or_none(
                        crate::contract::registry::REGISTRY.iter().filter(|s| s.mandatory).map(|s| s.step_type)
                    )
                ),
            ));
        }
    }
}

/// Where each step id was first used. A valid plan has at most 12 steps, so a short list on the
/// stack beats hashing; a long (invalid) one uses a map so no input is quadratic.
#[allow(clippy::large_enum_variant, reason = "a short-lived local; the inline list is the point")]
pub(super) enum IdIndex<'a> {
    /// The ids seen, and a 64-bit filter of their signatures: most new ids miss the filter and
    /// are never compared.
    Few(smallvec::SmallVec<[(u64, &'a str, usize); IdIndex::FEW]>, u64),
    Many(HashMap<&'a str, usize>),
}

impl<'a> IdIndex<'a> {
    const FEW: usize = 16;

    fn new(n: usize) -> Self {
        if n <= Self::FEW {
            IdIndex::Few(smallvec::SmallVec::new(), 0)
        } else {
            IdIndex::Many(HashMap::with_capacity(n))
        }
    }

    /// Length and first and last bytes: equal ids have equal signatures, so most pairs are
    /// told apart without comparing the strings.
    fn signature(id: &str) -> u64 {
        let b = id.as_bytes();
        let first = b.first().copied().unwrap_or(0);
        let last = b.last().copied().unwrap_or(0);
        ((b.len() as u64) << 16) | (u64::from(first) << 8) | u64::from(last)
    }

    /// Records `id` at `index`; returns the index of its first use if it was used before.
    fn first_use(&mut self, id: &'a str, index: usize) -> Option<usize> {
        match self {
            IdIndex::Few(seen, filter) => {
                let sig = Self::signature(id);
                let bit = 1u64 << (sig.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 58);
                if *filter & bit != 0
                    && let Some(&(_, _, first)) = seen.iter().find(|(s, seen_id, _)| *s == sig && *seen_id == id)
                {
                    return Some(first);
                }
                *filter |= bit;
                seen.push((sig, id, index));
                None
            }
            IdIndex::Many(map) => match map.entry(id) {
                std::collections::hash_map::Entry::Occupied(e) => Some(*e.get()),
                std::collections::hash_map::Entry::Vacant(e) => {
                    e.insert(index);
                    None
                }
            },
        }
    }
}

pub(super) fn list_or_none(types: impl Iterator<Item = StepType>) -> String {
    let names: Vec<String> = types.map(|t| format!("`{t}`")).collect();
    if names.is_empty() { "nothing (it is the last step)".to_owned() } else { names.join(", ") }
}
