//! A paused cycle's record like the runtime writes (the fixture of 0.1 with what it shows), for
//! the benches that write pauses (approvals, notify).

use planlock::session::{InterventionRecord, Timestamp};

/// The record of a pause of cycle `cycle`, made now (a new pause each time it is called).
pub fn record(cycle: u64) -> InterventionRecord {
    let mut record: InterventionRecord =
        serde_json::from_str(include_str!("../../tests/fixtures/v0.1/files/paused/ops/runtime/intervention.json"))
            .unwrap();
    record.cycle = cycle;
    record.created_at = Timestamp::now();
    let shown =
        planlock::executor::Shown::of(serde_json::json!({ "payload": { "summary": "key rotation" }, "results": {} }));
    record.shown = Some(shown.value);
    record.shown_digest = Some(shown.digest);
    record
}
