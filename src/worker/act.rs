//! Acting on one session: what a decided pause needs (its plan kept, the session taken), the
//! runtime the caller boots for it, and the cycle run by [`Runtime::run_cycle`], which acts on
//! the decision exactly as `planlock run` does.

use crate::backend::{Backend, BackendError, OpenedSession};
use crate::contract::registry::Failure;
use crate::exec::handler::HandlerSet;
use crate::review::access::OnExpiry;
use crate::review::rules_for;
use crate::runtime::{RunOutcome, Runtime, RuntimeBuilder};
use crate::session::{
    InterventionRecord, OpenError, PauseRef, ReviewDecision, ReviewVerdict, SessionError, SessionRecords, SessionStore,
    Timestamp, Via,
};
use crate::validate::ValidPlan;

use super::event::{Acted, WorkerEvent};

/// A session whose pause is decided, taken for a worker (its lock or lease held while this
/// lives), with the plan it keeps: what [`Boot::builder`] builds the session's runtime from.
pub struct ToRun {
    /// The session's name (a root's name under the directory, or a key).
    pub name: String,
    /// The plan the session keeps (validated again).
    pub plan: ValidPlan,
    /// The session, opened.
    pub opened: Box<dyn OpenedSession>,
}

impl std::fmt::Debug for ToRun {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ToRun").field("name", &self.name).finish_non_exhaustive()
    }
}

/// How a worker's sessions boot: the runtime builder of a session taken to run (its handlers,
/// validators, bundle and budget: what the caller's sessions run with). Any
/// `Fn(ToRun) -> Result<RuntimeBuilder<S, L>, String>` is one; the error says why the session
/// cannot be booted (it is skipped, and looked at again at the next poll).
pub trait Boot: Send + Sync {
    /// The session store the runtime owns.
    type Store: SessionStore;
    /// The runtime's handlers.
    type Handlers: HandlerSet;
    /// The runtime builder of `session`.
    fn builder(&self, session: ToRun) -> Result<RuntimeBuilder<Self::Store, Self::Handlers>, String>;
}

impl<F, S, L> Boot for F
where
    F: Fn(ToRun) -> Result<RuntimeBuilder<S, L>, String> + Send + Sync,
    S: SessionStore,
    L: HandlerSet,
{
    type Store = S;
    type Handlers = L;
    fn builder(&self, session: ToRun) -> Result<RuntimeBuilder<S, L>, String> {
        self(session)
    }
}

/// Acts on session `name` if its pause is decided: `None` when there is nothing to do here
/// (nothing paused, nothing decided yet, or another worker holds the session and acts).
pub(super) async fn act_on<B: Boot>(backend: &dyn Backend, boot: &B, name: &str) -> Option<WorkerEvent> {
    let skipped = |why: String| Some(WorkerEvent::Skipped { session: name.to_owned(), why });
    let records = backend.records(name).await.ok()?;
    let record = records.load_intervention().await.ok()??;
    let decision = match records.decision_on(&PauseRef::of(&record)).await.ok()? {
        Some(decision) => decision,
        None => match expired_by_rule(records.as_ref(), &record).await {
            Ok(Some(decision)) => decision,
            Ok(None) => return None,
            Err(why) => return skipped(why),
        },
    };
    // A decision made after the pause expired is not acted on (a run logs it `expired`).
    if decision.too_late_for(&record).is_some() {
        return None;
    }
    let plan = match records.load_plan().await {
        Ok(Some(kept)) => kept.plan(),
        Ok(None) => {
            return skipped(
                "it keeps no plan (it was last run by an older planlock): run it once with `planlock run`".into(),
            );
        }
        Err(e) => return skipped(format!("its plan cannot be read: {e}")),
    };
    let plan = match plan {
        Ok(plan) => plan,
        Err(e) => return skipped(format!("the plan it keeps is not valid: {e}")),
    };
    let opened = match backend.open(name).await {
        Ok(opened) => opened,
        // Another worker (or a person's `run`) holds it: that one acts.
        Err(BackendError::Open(OpenError::InUse { .. } | OpenError::LeaseHeld { .. } | OpenError::Claimed { .. })) => {
            return None;
        }
        Err(e) => return skipped(format!("it cannot be opened ({}): {e}", e.code())),
    };
    let builder = match boot.builder(ToRun { name: name.to_owned(), plan, opened }) {
        Ok(builder) => builder,
        Err(why) => return skipped(why),
    };
    let mut runtime: Runtime<B::Store, B::Handlers> = match builder.boot().await {
        Ok(runtime) => runtime,
        Err(e) => return skipped(format!("its runtime cannot boot ({}): {e}", e.code())),
    };
    // Acted on by whoever took the session first: the decision may be gone by now.
    runtime.pending()?;
    let outcome = match runtime.run_cycle().await {
        Ok(RunOutcome::Completed(_)) => "completed".to_owned(),
        Ok(RunOutcome::Paused { .. }) => "paused again".to_owned(),
        Ok(RunOutcome::Abandoned(_)) => "abandoned".to_owned(),
        Err(e) => format!("{} ({})", e.code(), e),
    };
    Some(WorkerEvent::Acted(Acted {
        session: name.to_owned(),
        cycle: record.cycle,
        verdict: decision.verdict,
        by: decision.approved_by().join(", "),
        outcome,
    }))
}

/// The decision the installed rules make on `record`'s pause once it expired undecided: with
/// `onExpiry: abandon` for its validator, an abandon by `planlock` whose reason names the rule,
/// recorded in the approval log like any decision (once: a second worker finds it recorded).
/// `None` when the pause has not expired or its rule is to wait.
async fn expired_by_rule(
    records: &dyn SessionRecords,
    record: &InterventionRecord,
) -> Result<Option<ReviewDecision>, String> {
    if !record.expired_at(Timestamp::now()) {
        return Ok(None);
    }
    let Some(access) = rules_for(records, None).await.map_err(|e| format!("its rules cannot be read: {e}"))? else {
        return Ok(None);
    };
    let validator = &record.validator.id;
    if access.rule(validator).on_expiry != OnExpiry::Abandon {
        return Ok(None);
    }
    let reason = format!(
        "the pause expired undecided, and the installed rules say `onExpiry: abandon` for validator `{}`",
        crate::text::printable(validator)
    );
    let decision = ReviewDecision::new(record, ReviewVerdict::Abandon, "planlock", reason).via(Via::Rule);
    match records.record_decision(&decision, 1).await {
        Ok(_) | Err(SessionError::AlreadyDecided { .. }) => {}
        Err(e) => return Err(format!("its expiry rule cannot be applied: {e}")),
    }
    // Whichever decision is recorded (this one, or another worker's or person's) is acted on.
    records.decision_on(&PauseRef::of(record)).await.map_err(|e| e.to_string())
}
