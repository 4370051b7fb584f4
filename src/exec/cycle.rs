//! A cycle's state as the executor keeps it: the session it runs in, the cycle in progress, and
//! how it ends (completed, paused for a person, restored from a record to resume).
//!
//! Layer 4, with the executor.

use uuid::Uuid;

use crate::exec::failure::ExecError;
use crate::exec::ledger::Ledger;
use crate::exec::report::{CycleReport, Intervention, Phase};
use crate::exec::shown::Shown;
use crate::exec::validator::Override;
use crate::hash::{Digest, plan_digest};
use crate::telemetry::TraceParent;
use crate::validate::ValidPlan;

/// The session a cycle runs in: its id, the plan hash and the cycle number. Only the runtime makes
/// one for a real session (from what it booted and computed itself); a cycle run by an
/// [`Executor`](crate::Executor) alone gets a throw-away one
/// ([`Executor::run`](crate::Executor::run)).
///
/// A caller cannot make one up (its fields are private):
///
/// ```compile_fail,E0451
/// use planlock::{CycleSession, Digest};
/// let _ = CycleSession { session_id: uuid::Uuid::nil(), plan_hash: Digest::of(b"any"), cycle: 1 };
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CycleSession {
    pub(crate) session_id: Uuid,
    pub(crate) plan_hash: Digest,
    pub(crate) cycle: u64,
}

impl CycleSession {
    /// A throw-away session for cycles of `plan` outside any runtime: a new id, the digest of the
    /// plan alone as its hash, cycle 1. (A session's real identity and hash are the runtime's, and
    /// never leave it.) Compute it once and run many cycles with
    /// [`Executor::run_with`](crate::Executor::run_with), when hashing the plan per cycle would
    /// cost too much.
    pub fn for_plan(plan: &ValidPlan) -> CycleSession {
        CycleSession { session_id: Uuid::new_v4(), plan_hash: plan_digest(plan.plan()), cycle: 1 }
    }

    /// The session id (a UUID v4 created at cold start).
    pub fn session_id(&self) -> Uuid {
        self.session_id
    }

    /// The plan hash the cycle runs under (docs/CONTRACT.md, "Plan hash").
    pub fn plan_hash(&self) -> Digest {
        self.plan_hash
    }

    /// The cycle's number: the session's completed cycles + 1.
    pub fn cycle(&self) -> u64 {
        self.cycle
    }
}

/// A cycle that ran to the end.
#[derive(Debug, Clone, PartialEq)]
pub struct Completed {
    /// What happened.
    pub report: CycleReport,
    /// Every step's result.
    pub ledger: Ledger,
}

/// How a cycle ended, when it did not fail.
#[derive(Debug)]
#[must_use = "a paused cycle must be resumed or abandoned"]
#[allow(clippy::large_enum_variant, reason = "one per cycle, moved a few times; boxing buys nothing")]
pub enum CycleOutcome {
    /// Every step ran.
    Completed(Completed),
    /// A validator blocked a step; the cycle waits for the caller.
    InterventionRequired(PausedCycle),
}

impl CycleOutcome {
    /// The completed cycle, if it completed.
    pub fn completed(self) -> Option<Completed> {
        match self {
            CycleOutcome::Completed(c) => Some(c),
            CycleOutcome::InterventionRequired(_) => None,
        }
    }
}

/// A cycle in progress: its session, the next step to run, what it has recorded so far, and the
/// override it may still use. A paused cycle keeps it whole, so a resume goes on from here.
#[derive(Debug)]
pub(crate) struct Cycle {
    pub(crate) session: CycleSession,
    pub(crate) next: usize,
    pub(crate) ledger: Ledger,
    pub(crate) report: CycleReport,
    pub(crate) over: Option<Override>,
    /// The paused cycle's span, when this one resumes it: its span continues that trace.
    pub(crate) trace: Option<TraceParent>,
}

impl Cycle {
    pub(crate) fn new(session: CycleSession) -> Cycle {
        Cycle { session, next: 0, ledger: Ledger::default(), report: CycleReport::default(), over: None, trace: None }
    }
}

/// A paused cycle as the runtime restores it from its durable record: the step to re-run, the
/// results of the steps before it, and the override for the re-run.
#[derive(Debug)]
pub(crate) struct RestoredCycle {
    pub(crate) session: CycleSession,
    pub(crate) next: usize,
    pub(crate) ledger: Ledger,
    pub(crate) over: Option<Override>,
    /// The Block that paused the cycle: the resumed cycle's report keeps it, as a cycle resumed
    /// in the same process does.
    pub(crate) paused_by: Intervention,
    /// The paused cycle's span, from its record.
    pub(crate) trace: Option<TraceParent>,
}

/// A validator's Block as [`Executor::judge`](crate::executor::Executor::judge) found it, with what
/// it blocked.
pub(crate) struct Block {
    pub(crate) validator_id: String,
    pub(crate) phase: Phase,
    pub(crate) reason: String,
    pub(crate) shown: Shown,
}

/// A cycle paused by a validator's Block (docs/CONTRACT.md, "Execution"). The
/// [`Runtime`](crate::runtime::Runtime) saves it as a durable record and resumes it from there,
/// in this process or after a restart (the one resume path); a cycle run by the executor alone
/// (under a throw-away session) can only be inspected or abandoned ([`PausedCycle::abandon`]).
#[derive(Debug)]
#[must_use = "a paused cycle must be resumed or abandoned"]
pub struct PausedCycle {
    pub(crate) cycle: Cycle,
    pub(crate) intervention: Intervention,
    pub(crate) shown: Shown,
    /// The paused cycle's span, for its record (with an OpenTelemetry layer recording it).
    pub(crate) trace: Option<TraceParent>,
}

impl PausedCycle {
    /// The Block that paused the cycle.
    pub fn intervention(&self) -> &Intervention {
        &self.intervention
    }

    /// What the reviewer is to decide on: the blocked step's input (a Block before it) or its
    /// result (a Block after it, which the cycle does not keep), with its digest.
    pub fn shown(&self) -> &Shown {
        &self.shown
    }

    /// The results of the steps completed before the blocked one.
    pub fn ledger(&self) -> &Ledger {
        &self.cycle.ledger
    }

    /// Gives up the cycle; returns what happened.
    pub fn abandon(self) -> CycleReport {
        self.cycle.report
    }

    /// The report so far.
    pub fn report(&self) -> &CycleReport {
        &self.cycle.report
    }

    /// Where the paused cycle's span is in its trace (with the `otel` feature and an
    /// OpenTelemetry layer recording it): the runtime keeps it in the intervention record.
    pub fn trace(&self) -> Option<TraceParent> {
        self.trace
    }
}

/// The one rule for an override, in a process or after a restart: it must name the pending
/// Block's validator and step (`override-refused` otherwise).
pub(crate) fn override_fits(over: &Override, validator_id: &str, step_id: &str) -> Result<(), ExecError> {
    if over.validator_id == validator_id && over.step_id == step_id {
        return Ok(());
    }
    Err(ExecError::OverrideRefused {
        validator_id: over.validator_id.clone(),
        step_id: over.step_id.clone(),
        pending_validator: validator_id.to_owned(),
        pending_step: step_id.to_owned(),
    })
}
