//! The plan hash that guards a resume (docs/CONTRACT.md, "Plan hash"): the hash document of a
//! policy profile and a valid plan, and its parts.

use serde::{Deserialize, Serialize};

use super::Digest;
use super::digest::{canonical_digest, canonical_json, digest_written};
use crate::contract::plan::ExecutionPlan;
use crate::hash::profile::PolicyProfile;
use crate::json::canonical::Canonical;
use crate::json::canonical::CanonicalError;
use crate::validate::ValidPlan;

/// The hash document of docs/CONTRACT.md, "Plan hash", serialized in the library's own form. Fields
/// are declared in canonical key order, so hashing never reorders them.
#[derive(Serialize)]
struct HashDocument<'a> {
    bundles: &'a serde_json::Value,
    #[serde(rename = "executionPlan")]
    execution_plan: &'a ExecutionPlan,
    modes: &'a serde_json::Value,
    #[serde(rename = "policyProfile")]
    policy_profile: &'a str,
    triggers: &'a serde_json::Value,
}

/// `lastExecutionPlanHash`: SHA-256 over the canonical JSON of the profile path, the three
/// profile files and the plan (validators included). The runtime computes it; a session store
/// only stores and compares it.
///
/// ```
/// # let plan =
/// planlock_contract::ValidPlan::from_str(include_str!("../../../tests/fixtures/full_plan.json")).unwrap(); use
/// planlock_contract::{PolicyProfile, plan_hash}; let profile = PolicyProfile { path:
/// "profiles/default".into(), modes: serde_json::json!({}), triggers: serde_json::json!([]),
/// bundles: serde_json::json!({}) }; let hash = plan_hash(&profile, &plan);
/// assert_eq!(hash.to_string().len(), 64);
/// ```
pub fn plan_hash(profile: &PolicyProfile, plan: &ValidPlan) -> Digest {
    canonical_digest(&hash_document(profile, plan))
}

/// The canonical bytes [`plan_hash`] digests, written the general way (through serde); the
/// tests check that both ways agree.
pub fn hash_document_bytes(profile: &PolicyProfile, plan: &ValidPlan) -> Result<Vec<u8>, CanonicalError> {
    canonical_json(&hash_document(profile, plan))
}

/// The same members, in the same (canonical) order as the struct declares them, written
/// directly; `plan_hash` uses this, `hash_document_bytes` the serde path.
impl Canonical for HashDocument<'_> {
    fn write_canonical(&self, out: &mut Vec<u8>) {
        use crate::json::canonical::write_const_key;
        write_const_key(out, "{\"bundles\":");
        self.bundles.write_canonical(out);
        write_const_key(out, ",\"executionPlan\":");
        self.execution_plan.write_canonical(out);
        write_const_key(out, ",\"modes\":");
        self.modes.write_canonical(out);
        write_const_key(out, ",\"policyProfile\":");
        self.policy_profile.write_canonical(out);
        write_const_key(out, ",\"triggers\":");
        self.triggers.write_canonical(out);
        out.push(b'}');
    }
}

fn hash_document<'a>(profile: &'a PolicyProfile, plan: &'a ValidPlan) -> HashDocument<'a> {
    HashDocument {
        policy_profile: &profile.path,
        modes: &profile.modes,
        triggers: &profile.triggers,
        bundles: &profile.bundles,
        execution_plan: plan.plan(),
    }
}

/// Per-part digests of the hash document, kept in the session file so that a mismatch can say
/// what changed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase", remote = "Self")]
pub struct HashParts {
    /// Of the profile path.
    pub policy_profile: Digest,
    /// Of `modes.yaml`.
    pub modes: Digest,
    /// Of `triggers.yaml`.
    pub triggers: Digest,
    /// Of `bundles.yaml`.
    pub bundles: Digest,
    /// Of the plan's metadata.
    pub metadata: Digest,
    /// Of the plan's `validators` and `postValidators`.
    pub validators: Digest,
    /// Of each step, in order.
    pub steps: Vec<StepDigest>,
}

/// The digest of one step.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, remote = "Self")]
pub struct StepDigest {
    /// The step's id.
    pub id: String,
    /// SHA-256 of the step's canonical JSON.
    pub digest: Digest,
}

crate::contract::object::map_only_serde!(HashParts);
crate::contract::object::map_only_serde!(StepDigest);

impl HashParts {
    /// The parts of `profile` and `plan`.
    pub fn of(profile: &PolicyProfile, plan: &ValidPlan) -> HashParts {
        let p = plan.plan();
        HashParts {
            policy_profile: canonical_digest(profile.path.as_str()),
            modes: canonical_digest(&profile.modes),
            triggers: canonical_digest(&profile.triggers),
            bundles: canonical_digest(&profile.bundles),
            metadata: canonical_digest(&p.metadata),
            validators: digest_written(|out| {
                out.push(b'[');
                p.validators.write_canonical(out);
                out.push(b',');
                p.post_validators.write_canonical(out);
                out.push(b']');
            }),
            steps: p.steps.iter().map(|s| StepDigest { id: s.id.clone(), digest: canonical_digest(s) }).collect(),
        }
    }

    /// What differs between a stored `self` and the current `now`, in words, most general first.
    ///
    /// ```
    /// # use planlock_contract::hash::{HashParts, StepDigest};
    /// # use planlock_contract::Digest;
    /// # let d = Digest::of(b"x");
    /// # let old = HashParts { policy_profile: d, modes: d, triggers: d, bundles: d, metadata: d,
    /// validators: d,
    /// #     steps: vec![StepDigest { id: "llm".into(), digest: d }] };
    /// let mut now = old.clone();
    /// now.steps[0].digest = Digest::of(b"y");
    /// assert_eq!(old.difference(&now), "step `llm` changed");
    /// ```
    pub fn difference(&self, now: &HashParts) -> String {
        let named = [
            (self.policy_profile != now.policy_profile, "the policy profile path changed"),
            (self.modes != now.modes, "modes.yaml changed"),
            (self.triggers != now.triggers, "triggers.yaml changed"),
            (self.bundles != now.bundles, "bundles.yaml changed"),
            (self.metadata != now.metadata, "the plan's metadata changed"),
            (self.validators != now.validators, "the plan's validators changed"),
        ];
        let mut changes: Vec<String> = named.iter().filter(|(c, _)| *c).map(|(_, w)| (*w).to_owned()).collect();
        let first_step = self.steps.iter().zip(&now.steps).find(|(a, b)| a != b);
        match first_step {
            Some((old, new)) if old.id != new.id => {
                changes.push(format!("step `{}` is now `{}`", old.id, new.id));
            }
            Some((old, _)) => changes.push(format!("step `{}` changed", old.id)),
            None if self.steps.len() != now.steps.len() => changes.push(format!(
                "the plan has {} steps, the session was saved with {}",
                now.steps.len(),
                self.steps.len()
            )),
            None => {}
        }
        if changes.is_empty() { "the plan hash changed".to_owned() } else { changes.join("; ") }
    }
}
