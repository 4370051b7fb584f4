//! A handler's result held to its step's result contract (B-007 section 3): what its types
//! cannot say, such as `RetrieveMemory` returning more than `topK` items.

use crate::contract::plan::PlanMetadata;
use crate::contract::problem::{Problem, ProblemCode};
use crate::contract::steps::StepPayload;
use crate::contract::value::PositiveInt;
use crate::json::pointer::JsonPointer;

/// The problems of `result` against its step's result contract: its type, and what the payload
/// bounds (`topK`, the plan's limits).
pub fn check_result(
    payload: &StepPayload,
    result: &crate::contract::steps::StepResult,
    metadata: &PlanMetadata,
) -> Vec<Problem> {
    let mut out = Vec::new();
    if result.step_type() != payload.step_type() {
        out.push(Problem::new(
            ProblemCode::InvalidType,
            String::new(),
            format!("a `{}` step returned a `{}` result", payload.step_type(), result.step_type()),
        ));
        return out;
    }
    result.check_typed(&mut JsonPointer::new(), &mut out);
    if let crate::contract::steps::StepResult::RetrieveMemory(r) = result {
        let limit = metadata.top_k.map(PositiveInt::get);
        if let Some(k) = limit.filter(|&k| r.items.len() as u64 > k) {
            out.push(Problem::new(
                ProblemCode::InvalidValue,
                "/items".to_owned(),
                format!("{} items returned; RetrieveMemory returns at most topK = {k}", r.items.len()),
            ));
        }
    }
    out
}
