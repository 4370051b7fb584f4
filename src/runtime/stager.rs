//! The runtime's own `PersistSession` step and the session update a completed cycle saves.

use crate::contract::schema::{PersistSessionPayload, PersistSessionResult};
use crate::contract::steps::{PersistMemory, PersistSession, RepoScan};
use crate::exec::executor::CycleSession;
use crate::exec::handler::{Entry, Handler, HandlerError, StepContext};
use crate::exec::ledger::Ledger;
use crate::hash::HashParts;
use crate::session::{SessionState, SessionUpdate};

/// The runtime's own `PersistSession` handler. The step stages; it writes nothing: the runtime
/// builds the session update from the completed cycle's ledger and saves it once the
/// cycle has completed, so a cycle that pauses, fails or is abandoned leaves the session as it was.
#[derive(Debug, Clone, Copy, Default)]
pub struct SessionStager;

impl Handler<PersistSession> for SessionStager {
    async fn call(&self, _: &StepContext<'_>, _: &PersistSessionPayload) -> Result<PersistSessionResult, HandlerError> {
        Ok(PersistSessionResult { status: "staged".into() })
    }
}

/// The handler list a runtime runs: the caller's, with the session's own `PersistSession` first.
pub(super) type WithStager<L> = Entry<PersistSession, SessionStager, L>;

/// The session update of a completed cycle: `memoryRef` from its `PersistMemory` result,
/// `repoScanVersion` from its `RepoScan` result, the previous session's values when those steps
/// are not in the plan.
pub(super) fn session_update(
    previous: Option<&SessionState>,
    ledger: &Ledger,
    session: CycleSession,
    parts: &HashParts,
) -> SessionUpdate {
    let memory_ref = match ledger.get::<PersistMemory>() {
        Some(r) => Some(r.id.clone()),
        None => previous.and_then(|p| p.memory_ref.clone()),
    };
    let repo_scan_version = match ledger.get::<RepoScan>() {
        Some(r) => Some(r.version_id.clone()),
        None => previous.and_then(|p| p.repo_scan_version.clone()),
    };
    SessionUpdate {
        session_id: session.session_id(),
        memory_ref,
        repo_scan_version,
        last_execution_plan_hash: session.plan_hash(),
        hash_parts: Some(parts.clone()),
        cycle: session.cycle(),
    }
}
