//! [`PolicyInterpreter`]: what turns a situation into a plan (D-007 §1), with the validator at
//! its entrance.

use serde_json::Value;

use super::ValidPlan;
use crate::contract::problem::Rejection;

/// Turns the current situation into a plan (D-007 §1). The version gate sits at its entrance:
/// whatever an interpreter produces goes through [`ValidPlan::from_value`], so an unsupported
/// `step_contract_version` or non-empty `extensions` is refused (FailFast) before anything else.
/// A model that writes plans is one (`planlock::handlers::ModelPlanner`): what it writes is
/// checked the same way.
///
/// ```
/// use planlock_contract::validate::PolicyInterpreter;
/// use serde_json::{Value, json};
/// struct Empty;
/// impl PolicyInterpreter for Empty {
///     fn produce(&self, _policy_ref: &str, _situation: &Value) -> Value {
///         json!({ "step_contract_version": "1", "extensions": [], "steps": [] })
///     }
/// }
/// assert!(Empty.interpret("profiles/default", &json!({})).is_err());
/// ```
pub trait PolicyInterpreter {
    /// Produces the plan document for `policy_ref` and the situation.
    fn produce(&self, policy_ref: &str, situation: &Value) -> Value;

    /// The validated plan.
    fn interpret(&self, policy_ref: &str, situation: &Value) -> Result<ValidPlan, Rejection> {
        ValidPlan::from_value(&self.produce(policy_ref, situation))
    }
}
