//! The open transactions of cycles in progress (CONTRACT §13: a cycle's store writes and its
//! session save are durable together where they share a database).
//!
//! While a [`PgSessionStore`](crate::session::postgres::PgSessionStore) of a key is open on a
//! [`PgDatabase`](super::PgDatabase), the [`PgStore`](crate::store::postgres::PgStore) writes of
//! that namespace on the same pool join one transaction per cycle, opened by the first of them;
//! the session save's compare-and-set commits it. Two rules keep that safe under load:
//! - At most one connection fewer than the pool holds is in an open cycle at once (a write that
//!   would open one more waits for a place to be freed), so an operation outside the cycles
//!   always finds a connection, even a synchronous one on an executor thread that the open
//!   cycles need to go on. The wait is asynchronous ([`CycleTransactions::place`], a fair
//!   semaphore): a thousand cycles waiting hold no thread, so the cycles holding places always
//!   find a thread for their next write and their save (waiting on threads, they took them all
//!   and the places were never given back before the steps' deadlines).
//! - Each key's cycles have a generation, advanced when a cycle is discarded: a write that
//!   finishes after its cycle was given up (its step's deadline passed) is rolled back instead of
//!   being left for the next cycle's save.
//!
//! A key's slot also keeps what a cycle's first read read for a later read of the same cycle
//! ([`keep_reads`](CycleTransactions::keep_reads)): the store's two retrieval steps then share one
//! read-only transaction. It is forgotten when the cycle writes, saves or is discarded.

use std::any::Any;
use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard};

use tokio::sync::{OwnedSemaphorePermit, Semaphore};

use super::PgConnection;

/// The registry of one pool.
#[derive(Debug)]
pub(crate) struct CycleTransactions {
    state: Mutex<State>,
    /// A permit per cycle that may hold a connection at once; none: no cycle is held (writes
    /// commit alone).
    places: Option<Arc<Semaphore>>,
}

#[derive(Debug, Default)]
struct State {
    slots: HashMap<String, Slot>,
}

/// A place among the open cycles, waited for with [`CycleTransactions::place`], and the
/// connection permit that goes with it ([`PgDatabase::permit`](super::PgDatabase::permit)); the
/// cycle that opens holds both until it ends.
pub(crate) struct Place {
    _place: OwnedSemaphorePermit,
    _connection: Option<OwnedSemaphorePermit>,
}

#[derive(Debug, Default)]
struct Slot {
    cycle: Option<Box<OpenCycle>>,
    generation: u64,
    /// What the cycle's first read kept for a later one ([`CycleTransactions::keep_reads`]).
    reads: Option<Box<dyn Any + Send>>,
}

/// A session key's cycle, taken out of the registry.
pub(crate) enum CycleSlot {
    /// No session store of this key is open on this pool: a write commits alone.
    Unregistered,
    /// Its session store is open and no write of the cycle has happened yet: the first opens the
    /// cycle's transaction ([`CycleTransactions::begin`]).
    Idle { generation: u64 },
    /// The cycle's open transaction: put back after a write, or committed by the save.
    Open(Box<OpenCycle>),
}

/// What a write of a key would do ([`CycleTransactions::peek`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Peek {
    /// Commit alone: no session store of the key is open here.
    Alone,
    /// Open the key's cycle: it needs a place.
    Open,
    /// Join the key's open cycle, on its connection.
    Join,
}

/// An open cycle transaction. Dropped unfinished, it is rolled back, so its connection goes
/// back to the pool outside any transaction; either way its place among the open ones is freed.
pub(crate) struct OpenCycle {
    conn: PgConnection,
    generation: u64,
    finished: bool,
    /// Given back when the cycle ends (dropped last, after the rollback).
    _place: Place,
}

impl std::fmt::Debug for OpenCycle {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OpenCycle").field("generation", &self.generation).finish_non_exhaustive()
    }
}

impl OpenCycle {
    /// The transaction's connection.
    pub(crate) fn conn(&mut self) -> &mut PgConnection {
        &mut self.conn
    }

    /// Commits it.
    pub(crate) fn commit(mut self: Box<Self>) -> Result<(), postgres::Error> {
        self.finished = true;
        self.conn.batch_execute("COMMIT")
    }
}

impl Drop for OpenCycle {
    fn drop(&mut self) {
        if !self.finished {
            let _ = self.conn.batch_execute("ROLLBACK");
        }
    }
}

impl CycleTransactions {
    /// The registry of a pool of `pool_size` connections.
    pub(crate) fn new(pool_size: usize) -> CycleTransactions {
        // One connection stays outside the cycles; a pool of one holds no cycle open.
        let max_open = pool_size.saturating_sub(1);
        let places = (max_open > 0).then(|| Arc::new(Semaphore::new(max_open)));
        CycleTransactions { state: Mutex::default(), places }
    }

    fn state(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Holds the cycles of `key` open for its session save (its store was opened).
    pub(crate) fn register(&self, key: &str) {
        if self.places.is_some() {
            self.state().slots.insert(key.to_owned(), Slot::default());
        }
    }

    /// Stops holding the cycles of `key`, rolling back one in progress (its store was dropped).
    pub(crate) fn unregister(&self, key: &str) {
        let slot = self.state().slots.remove(key);
        drop(slot);
    }

    /// The cycle of `key`, taken out: the caller puts it back ([`put`](Self::put)), commits
    /// it, or drops it (rolled back).
    pub(crate) fn take(&self, key: &str) -> CycleSlot {
        let mut state = self.state();
        match state.slots.get_mut(key) {
            None => CycleSlot::Unregistered,
            Some(slot) => match slot.cycle.take() {
                Some(cycle) => CycleSlot::Open(cycle),
                None => CycleSlot::Idle { generation: slot.generation },
            },
        }
    }

    /// Whether a session store of `key` is open on this pool (its cycles are held).
    pub(crate) fn is_registered(&self, key: &str) -> bool {
        self.state().slots.contains_key(key)
    }

    /// Keeps `reads` for a later read of `key`'s cycle in progress (nothing is kept when no
    /// session store of `key` is open on this pool).
    pub(crate) fn keep_reads(&self, key: &str, reads: Box<dyn Any + Send>) {
        if let Some(slot) = self.state().slots.get_mut(key) {
            slot.reads = Some(reads);
        }
    }

    /// What the cycle of `key` kept with [`keep_reads`](Self::keep_reads), taken out.
    pub(crate) fn take_reads(&self, key: &str) -> Option<Box<dyn Any + Send>> {
        self.state().slots.get_mut(key).and_then(|slot| slot.reads.take())
    }

    /// Forgets what the cycle of `key` kept: it is saving, so a later read is the next cycle's.
    pub(crate) fn forget_reads(&self, key: &str) {
        if let Some(slot) = self.state().slots.get_mut(key) {
            slot.reads = None;
        }
    }

    /// What a write of `key` would do now, without taking anything out.
    pub(crate) fn peek(&self, key: &str) -> Peek {
        match self.state().slots.get(key) {
            None => Peek::Alone,
            Some(slot) if slot.cycle.is_none() => Peek::Open,
            Some(_) => Peek::Join,
        }
    }

    /// A place for one more open cycle, once fewer than the most allowed are open (first come,
    /// first served), with a connection permit of `db`; waiting holds no thread. `None` when
    /// this pool holds no cycles open.
    pub(crate) async fn place(&self, db: &super::PgDatabase) -> Option<Place> {
        let places = self.places.clone()?;
        let place = places.acquire_owned().await.ok()?;
        Some(Place { _place: place, _connection: db.permit().await })
    }

    /// Opens the cycle transaction of `key`, of generation `generation`, in `place`, on a
    /// connection `connect` takes from the pool now (not before the place: a connection held
    /// while waiting would be one the others cannot have). What its reads kept is forgotten:
    /// the cycle now writes.
    pub(crate) fn begin<E: From<postgres::Error>>(
        &self,
        key: &str,
        place: Place,
        generation: u64,
        connect: impl FnOnce() -> Result<PgConnection, E>,
    ) -> Result<Box<OpenCycle>, E> {
        self.forget_reads(key);
        let conn = connect()?;
        // From here, dropping it (a failed BEGIN) gives the place back.
        let mut cycle = Box::new(OpenCycle { conn, generation, finished: false, _place: place });
        cycle.conn.batch_execute("BEGIN")?;
        Ok(cycle)
    }

    /// Puts the cycle of `key` back for its next write; rolled back if the key's store was
    /// dropped or its cycle discarded meanwhile.
    pub(crate) fn put(&self, key: &str, cycle: Box<OpenCycle>) {
        let mut state = self.state();
        let stale = match state.slots.get_mut(key) {
            Some(slot) if slot.generation == cycle.generation => {
                slot.cycle = Some(cycle);
                None
            }
            _ => Some(cycle),
        };
        drop(state);
        drop(stale);
    }

    /// Rolls back the cycle of `key`, if one is open, and gives up its generation: its cycle ended
    /// without a save.
    pub(crate) fn discard(&self, key: &str) {
        let mut state = self.state();
        let cycle = state.slots.get_mut(key).and_then(|slot| {
            slot.generation += 1;
            slot.reads = None;
            slot.cycle.take()
        });
        drop(state);
        drop(cycle);
    }
}
