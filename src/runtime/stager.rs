//! The runtime's own `PersistSession` handler, which stages the session update that the runtime
//! saves once the cycle has completed.

use super::*;

/// What the session's `PersistSession` handler and the runtime share: the session as last saved,
/// and the update this cycle's `PersistSession` step staged.
#[derive(Debug)]
pub(super) struct Staging {
    pub(super) previous: Option<SessionState>,
    pub(super) parts: HashParts,
    pub(super) staged: Option<SessionUpdate>,
}

/// The runtime's own `PersistSession` handler: it stages the session update (`memoryRef` from this
/// cycle's `PersistMemory` result, `repoScanVersion` from its `RepoScan` result, the previous values
/// when those steps are not in the plan). The runtime saves it once the cycle has completed, so a
/// cycle that pauses, fails or is abandoned leaves the session file as it was.
#[derive(Debug)]
pub struct SessionStager {
    pub(super) cell: Arc<Mutex<Staging>>,
}

impl Handler<PersistSession> for SessionStager {
    async fn call(
        &self,
        cx: &StepContext<'_>,
        _: &PersistSessionPayload,
    ) -> Result<PersistSessionResult, HandlerError> {
        let mut cell = self.cell.lock().map_err(|_| HandlerError::new("the session state lock is poisoned"))?;
        let previous = cell.previous.as_ref();
        let memory_ref = match cx.ledger().get::<PersistMemory>() {
            Some(r) => Some(r.id.clone()),
            None => previous.and_then(|p| p.memory_ref.clone()),
        };
        let repo_scan_version = match cx.ledger().get::<RepoScan>() {
            Some(r) => Some(r.version_id.clone()),
            None => previous.and_then(|p| p.repo_scan_version.clone()),
        };
        let update = SessionUpdate {
            session_id: cx.session_id(),
            memory_ref,
            repo_scan_version,
            last_execution_plan_hash: *cx.plan_hash(),
            hash_parts: Some(cell.parts.clone()),
            cycle: cx.cycle(),
        };
        cell.staged = Some(update);
        Ok(PersistSessionResult { status: "staged".into() })
    }
}

/// The handler list a runtime runs: the caller's, with the session's own `PersistSession` first.
pub(super) type WithStager<L> = Entry<PersistSession, SessionStager, L>;
