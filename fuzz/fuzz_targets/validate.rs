//! Arbitrary bytes through the validator: it must never panic, and a rejection is never empty.
#![no_main]

use libfuzzer_sys::fuzz_target;
use planlock::ValidPlan;

fuzz_target!(|data: &[u8]| {
    match ValidPlan::from_slice(data) {
        Ok(plan) => {
            // An accepted plan re-validates from its own serialization, unchanged.
            let again = ValidPlan::from_str(&plan.to_json()).expect("a valid plan round-trips");
            assert_eq!(again, plan);
        }
        Err(rejection) => assert!(!rejection.problems().is_empty()),
    }
    if let Ok(value) = serde_json::from_slice::<serde_json::Value>(data) {
        let _ = ValidPlan::from_value(&value);
    }
});
