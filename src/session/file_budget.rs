//! [`FileBudget`]: the token budgets of the file sessions under one directory (CONTRACT §20),
//! kept in one file beside them ([`BUDGETS_FILE`]) and changed only under an exclusive lock on
//! [`BUDGETS_LOCK`], so that the sessions of several processes share them as the workers of a
//! database do: a reservation reads, checks and writes the file under the lock, or reserves
//! nothing.
//!
//! - A budget covers the sessions whose name (their root's, under the directory) starts with
//!   its prefix; periods are aligned to the Unix epoch, as in the database.
//! - A reservation names its session and the process's store of it. It is released once that
//!   session's root is no longer locked (the process that held it ended: killed, or done), or
//!   when another store of the session reserves (the lock is that store's now).
//! - The file is planlock's own record, and read as input (CONTRACT §11): at most
//!   [`MAX_BUDGETS_FILE_BYTES`], strictly; a damaged one refuses every call, naming it.

use std::fs::{File, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::{Deserialize, Serialize};
use uuid::Uuid;

use crate::exec::budget::{
    BudgetError, BudgetFuture, BudgetState, Charge, TokenAsk, TokenBudget, period_start, rfc3339,
};
use crate::fsread::{ReadError, read_regular};
use crate::session::CycleGuard;

/// The budgets' file, in the directory of the sessions.
pub const BUDGETS_FILE: &str = "planlock-budgets.json";

/// The file locked while the budgets are read and changed.
pub const BUDGETS_LOCK: &str = "planlock-budgets.lock";

/// The largest budgets file read.
pub const MAX_BUDGETS_FILE_BYTES: u64 = 4 << 20;

/// The most reservations the file keeps; past it, a reservation is refused until calls settle.
pub const MAX_HOLDS: usize = 10_000;

/// Released reservations are forgotten this long after they were made (a settlement that comes
/// later still charges what its call used until then).
const FORGET_AFTER_SECS: i64 = 86_400;

/// The file's contents.
#[derive(Debug, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct Book {
    budgets: Vec<Kept>,
    holds: Vec<Hold>,
}

/// One budget as the file keeps it.
#[derive(Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct Kept {
    prefix: String,
    tokens: u64,
    period_secs: u64,
    period_start: i64,
    used: u64,
    reserved: u64,
}

/// One reservation against one budget.
#[derive(Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct Hold {
    id: Uuid,
    prefix: String,
    session: String,
    owner: Uuid,
    period_start: i64,
    tokens: u64,
    state: HoldState,
    made_at: i64,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
enum HoldState {
    Held,
    /// Given back uncharged (written by planlock before 0.1's charged holds; kept readable).
    Released,
    /// Its holder died with it: charged all it reserved, until a late settlement says what its
    /// call used.
    Charged,
    Settled,
}

impl Kept {
    /// Rolled over to the period that holds `now`.
    fn roll(&mut self, now: i64) {
        let start = period_start(now, self.period_secs);
        if self.period_start < start {
            (self.period_start, self.used, self.reserved) = (start, 0, 0);
        }
    }

    /// When this period ends, in seconds since the Unix epoch.
    fn resets_at(&self) -> i64 {
        self.period_start.saturating_add(i64::try_from(self.period_secs).unwrap_or(i64::MAX))
    }

    fn state(&self) -> BudgetState {
        BudgetState {
            prefix: self.prefix.clone(),
            tokens: self.tokens,
            period_secs: self.period_secs,
            used: self.used,
            reserved: self.reserved,
            resets_at: rfc3339(self.resets_at()),
        }
    }
}

impl Book {
    fn budget(&mut self, prefix: &str, period: i64) -> Option<&mut Kept> {
        self.budgets.iter_mut().find(|b| b.prefix == prefix && b.period_start == period)
    }

    /// Ends hold `i`: gives back what it held (if still held) and charges `used`, to the period
    /// it was made in. A hold charged when its holder died is corrected to what its call used.
    fn end(&mut self, i: usize, used: u64) {
        let (prefix, period, tokens, state) = {
            let h = &self.holds[i];
            (h.prefix.clone(), h.period_start, h.tokens, h.state)
        };
        if let Some(b) = self.budget(&prefix, period) {
            if state == HoldState::Held {
                b.reserved = b.reserved.saturating_sub(tokens);
            }
            if state == HoldState::Charged {
                b.used = b.used.saturating_sub(tokens);
            }
            b.used = b.used.saturating_add(used);
        }
        self.holds[i].state = HoldState::Settled;
    }

    /// Ends hold `i`, whose holder died with it (CONTRACT §20): its call may have been sent, so
    /// it is charged all it reserved — over-charged by a crash, never overspent.
    fn charge_whole(&mut self, i: usize) {
        let tokens = self.holds[i].tokens;
        self.end(i, tokens);
        self.holds[i].state = HoldState::Charged;
    }
}

/// The token budgets of one file session, named `session` under `dir`, for its store open in
/// this process; given to [`RuntimeBuilder::budget`](crate::runtime::RuntimeBuilder::budget).
///
/// ```
/// use std::time::Duration;
/// use planlock::session::FileBudget;
/// let dir = tempfile::tempdir()?;
/// FileBudget::set(dir.path(), "", 10_000, Duration::from_secs(86_400))?;
/// let shown = FileBudget::budgets(dir.path())?;
/// assert_eq!((shown[0].tokens, shown[0].left()), (10_000, 10_000));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone)]
pub struct FileBudget {
    dir: PathBuf,
    session: String,
    owner: Uuid,
}

impl FileBudget {
    /// The budgets of session `session` (its root is `dir/session`), whose store this process
    /// holds open.
    pub fn new(dir: impl Into<PathBuf>, session: impl Into<String>) -> FileBudget {
        FileBudget { dir: dir.into(), session: session.into(), owner: Uuid::new_v4() }
    }

    /// The budgets under `dir`, by prefix, as a reservation would see them now.
    pub fn budgets(dir: &Path) -> Result<Vec<BudgetState>, BudgetError> {
        let now = now();
        let mut states = locked(dir, Mode::Read, |book| {
            book.budgets
                .iter_mut()
                .map(|b| {
                    b.roll(now);
                    b.state()
                })
                .collect::<Vec<_>>()
        })?;
        states.sort_by(|a, b| a.prefix.cmp(&b.prefix));
        Ok(states)
    }

    /// Sets the budget of the sessions under `dir` whose name starts with `prefix` (`""`: all):
    /// `tokens` per `period`. What this period used and holds is kept; another period starts
    /// now, aligned to itself (`1d`: since midnight UTC).
    pub fn set(dir: &Path, prefix: &str, tokens: u64, period: Duration) -> Result<(), BudgetError> {
        let secs = period.as_secs().max(1);
        locked(dir, Mode::Create, |book| match book.budgets.iter_mut().find(|b| b.prefix == prefix) {
            Some(b) => {
                let changed = b.period_secs != secs;
                (b.tokens, b.period_secs) = (tokens, secs);
                // Another period starts now, aligned to itself; the reservations in flight move
                // with it, so that their settlement finds the budget they were made from.
                let (old, new) = (b.period_start, period_start(now(), secs));
                if changed {
                    b.period_start = new;
                    let moved = book.holds.iter_mut().filter(|h| h.prefix == prefix && h.period_start == old);
                    for hold in moved.filter(|h| h.state == HoldState::Held) {
                        hold.period_start = new;
                    }
                }
            }
            None => book.budgets.push(Kept {
                prefix: prefix.to_owned(),
                tokens,
                period_secs: secs,
                period_start: period_start(now(), secs),
                used: 0,
                reserved: 0,
            }),
        })
    }

    /// Removes the budget of `prefix` under `dir`; whether there was one.
    pub fn remove(dir: &Path, prefix: &str) -> Result<bool, BudgetError> {
        locked(dir, Mode::Change, |book| {
            let before = book.budgets.len();
            book.budgets.retain(|b| b.prefix != prefix);
            book.holds.retain(|h| h.prefix != prefix);
            book.budgets.len() < before
        })
    }

    /// Whether the hold's worker is gone: its session's root is not locked (the process that
    /// held it ended), or it is this session's and another store's (this store holds the lock).
    fn gone(&self, hold: &Hold) -> bool {
        if hold.session == self.session {
            return hold.owner != self.owner;
        }
        // The name is read from the file (input): only a root's plain name is looked up, and
        // opened as a directory only, without waiting (a FIFO there would hold an open).
        if !crate::session::is_root_name(&hold.session) {
            return true;
        }
        match open_dir(&self.dir.join(&hold.session)) {
            Ok(root) => root.try_lock().is_ok(),
            Err(_) => true,
        }
    }

    fn reserve_now(&self, ask: &TokenAsk<'_>) -> Result<(), BudgetError> {
        let now = now();
        locked(&self.dir, Mode::Change, |book| {
            let covers = |prefix: &str| self.session.starts_with(prefix);
            for b in book.budgets.iter_mut().filter(|b| covers(&b.prefix)) {
                b.roll(now);
            }
            if !book.budgets.iter().any(|b| covers(&b.prefix)) {
                return Ok(());
            }
            // Only when the budgets are short are the reservations of gone workers looked for
            // (released) and the call checked again.
            let short = |book: &Book| {
                let mut covering: Vec<&Kept> = book.budgets.iter().filter(|b| covers(&b.prefix)).collect();
                covering.sort_by(|a, b| a.prefix.cmp(&b.prefix));
                covering
                    .into_iter()
                    .find(|b| b.used.saturating_add(b.reserved).saturating_add(ask.tokens) > b.tokens)
                    .map(|b| ask.refused(b.prefix.clone(), b.tokens, b.state().left(), b.reserved, b.resets_at()))
            };
            if short(book).is_some() {
                for i in 0..book.holds.len() {
                    let h = &book.holds[i];
                    if h.state == HoldState::Held && covers(&h.prefix) && self.gone(h) {
                        book.charge_whole(i);
                    }
                }
                book.holds.retain(|h| h.state == HoldState::Held || now - h.made_at < FORGET_AFTER_SECS);
                if let Some(refused) = short(book) {
                    return Err(refused);
                }
            }
            if book.holds.len() >= MAX_HOLDS {
                return Err(self.unavailable("written", format!("it keeps {MAX_HOLDS} reservations already")));
            }
            for b in book.budgets.iter_mut().filter(|b| covers(&b.prefix)) {
                b.reserved = b.reserved.saturating_add(ask.tokens);
                book.holds.push(Hold {
                    id: ask.id,
                    prefix: b.prefix.clone(),
                    session: self.session.clone(),
                    owner: self.owner,
                    period_start: b.period_start,
                    tokens: ask.tokens,
                    state: HoldState::Held,
                    made_at: now,
                });
            }
            Ok(())
        })?
    }

    fn settle_now(&self, charges: &[Charge]) -> Result<(), BudgetError> {
        locked(&self.dir, Mode::Change, |book| {
            for charge in charges {
                for i in 0..book.holds.len() {
                    if book.holds[i].id == charge.id && book.holds[i].state != HoldState::Settled {
                        book.end(i, charge.used);
                    }
                }
            }
            // A settled reservation is gone: settled once, however often it is sent.
            book.holds.retain(|h| h.state != HoldState::Settled);
        })
    }

    fn unavailable(&self, doing: &'static str, reason: String) -> BudgetError {
        BudgetError::Unavailable { place: self.dir.join(BUDGETS_FILE).display().to_string(), doing, reason }
    }
}

/// The budgets file's lock is a blocking wait: every change runs on planlock's blocking
/// threads, so a wait for another process's reservation holds no thread of the caller's.
impl TokenBudget for FileBudget {
    /// A reservation whose caller stops waiting (its future dropped, as at a step's deadline)
    /// is given back once made, never left held for a caller that will not settle it.
    fn reserve<'a>(&'a self, ask: TokenAsk<'a>) -> BudgetFuture<'a, ()> {
        #[cfg(feature = "io")]
        return Box::pin(self.reserve_off_thread(ask.id, ask.tokens, ask.cycle, ask.step_id.to_owned()));
        #[cfg(not(feature = "io"))]
        Box::pin(async move { self.reserve_now(&ask) })
    }

    /// Settled now, whatever the cycle: a file cannot join the session's save (a settlement that
    /// is lost in a crash is released with the session's lock, never overspent).
    fn settle<'a>(&'a self, charges: &'a [Charge], _cycle: Option<&'a CycleGuard>) -> BudgetFuture<'a, ()> {
        let (budget, charges) = (self.clone(), charges.to_vec());
        Box::pin(self.off_thread(move || budget.settle_now(&charges)))
    }
}

impl FileBudget {
    /// Reserves on planlock's blocking threads. The answer comes back on a channel: if the
    /// caller has stopped waiting, whichever side finds the reservation unheard of gives it back
    /// (the thread, when it cannot send; the dropped wait, when the answer is in the channel).
    #[cfg(feature = "io")]
    async fn reserve_off_thread(&self, id: Uuid, tokens: u64, cycle: u64, step: String) -> Result<(), BudgetError> {
        let runtime = crate::io::runtime().map_err(|reason| self.unavailable("read", reason))?;
        let (answer, heard) = tokio::sync::oneshot::channel();
        let budget = self.clone();
        runtime.spawn_blocking(move || {
            let made = budget.reserve_now(&TokenAsk { id, tokens, cycle, step_id: &step });
            if let Err(Ok(())) = answer.send(made) {
                budget.give_back(id, tokens);
            }
        });
        let mut waiting = Waiting { heard: Some(heard), budget: self.clone(), id, tokens };
        waiting.answer().await
    }

    /// Gives back reservation `id`, which no call drew from.
    #[cfg(feature = "io")]
    fn give_back(&self, id: Uuid, tokens: u64) {
        if let Err(e) = self.settle_now(&[Charge { id, reserved: tokens, used: 0 }]) {
            tracing::warn!(error = %e, "a reservation nobody waited for was not given back; it is when the session's lock ends");
        }
    }

    /// Runs `change` on the caller's thread: without the `io` feature (which every feature
    /// doing I/O brings) there is no other.
    #[cfg(not(feature = "io"))]
    async fn off_thread(
        &self,
        change: impl FnOnce() -> Result<(), BudgetError> + Send + 'static,
    ) -> Result<(), BudgetError> {
        change()
    }

    /// Runs `change` on planlock's blocking threads.
    #[cfg(feature = "io")]
    async fn off_thread(
        &self,
        change: impl FnOnce() -> Result<(), BudgetError> + Send + 'static,
    ) -> Result<(), BudgetError> {
        crate::io::blocking(change).await.unwrap_or_else(|reason| {
            Err(BudgetError::Unavailable {
                place: self.dir.join(BUDGETS_FILE).display().to_string(),
                doing: "read",
                reason,
            })
        })
    }
}

/// A reservation's answer, awaited; dropped unheard, it gives back a reservation made.
#[cfg(feature = "io")]
struct Waiting {
    heard: Option<tokio::sync::oneshot::Receiver<Result<(), BudgetError>>>,
    budget: FileBudget,
    id: Uuid,
    tokens: u64,
}

#[cfg(feature = "io")]
impl Waiting {
    async fn answer(&mut self) -> Result<(), BudgetError> {
        let Some(heard) = self.heard.as_mut() else { return Ok(()) };
        let answer = heard.await;
        self.heard = None;
        answer.unwrap_or_else(|_| Err(self.budget.unavailable("read", "the reservation's thread ended".to_owned())))
    }
}

#[cfg(feature = "io")]
impl Drop for Waiting {
    fn drop(&mut self) {
        let Some(mut heard) = self.heard.take() else { return };
        // Closed first, so the thread cannot send after this looks: either its answer is here,
        // or its send fails and it gives the reservation back itself.
        heard.close();
        if let Ok(Ok(())) = heard.try_recv() {
            let (budget, id, tokens) = (self.budget.clone(), self.id, self.tokens);
            if let Ok(runtime) = crate::io::runtime() {
                runtime.spawn_blocking(move || budget.give_back(id, tokens));
            }
        }
    }
}

/// Opens `path` only if it is a directory (not through a link), never waiting.
fn open_dir(path: &Path) -> std::io::Result<File> {
    let mut options = OpenOptions::new();
    options.read(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.custom_flags(libc::O_DIRECTORY | libc::O_NOFOLLOW | libc::O_NONBLOCK);
    }
    options.open(path)
}

fn now() -> i64 {
    time::OffsetDateTime::now_utc().unix_timestamp()
}

/// Runs `change` on the budgets under `dir` while holding their lock; writes them back
/// (atomically and durably) when `write`. No file: no budgets.
/// What a use of the budgets' file does with it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Mode {
    /// Reads it (`budget show`).
    Read,
    /// Changes what is there: a reservation, a settlement, a removal. Without a file there is
    /// nothing to change, and nothing is touched (CONTRACT §20: no budget set, no lock).
    Change,
    /// Makes it if there is none (`budget set`).
    Create,
}

fn locked<T>(dir: &Path, mode: Mode, change: impl FnOnce(&mut Book) -> T) -> Result<T, BudgetError> {
    let path = dir.join(BUDGETS_FILE);
    let failed = |doing: &'static str, reason: String| BudgetError::Unavailable {
        place: path.display().to_string(),
        doing,
        reason,
    };
    let missing = std::fs::symlink_metadata(&path).is_err_and(|e| e.kind() == std::io::ErrorKind::NotFound);
    if mode != Mode::Create && missing {
        return Ok(change(&mut Book::default()));
    }
    // The lock file is opened without following a link and without waiting (a FIFO there would
    // hold the open), and must be a regular file.
    let lock = {
        use std::os::unix::fs::OpenOptionsExt;
        let mut options = OpenOptions::new();
        options.create(true).truncate(false).write(true).custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK);
        options.open(dir.join(BUDGETS_LOCK)).map_err(|e| failed("read", format!("cannot open its lock file: {e}")))?
    };
    match lock.metadata() {
        Ok(meta) if meta.is_file() => {}
        _ => return Err(failed("read", format!("its lock file {BUDGETS_LOCK} is not a regular file"))),
    }
    lock.lock().map_err(|e| failed("read", format!("cannot lock it: {e}")))?;
    let mut book = match read_regular(&path, MAX_BUDGETS_FILE_BYTES) {
        Ok(bytes) => serde_json::from_slice::<Book>(&bytes).map_err(|e| {
            failed(
                "read",
                format!(
                    "it is not a budgets file planlock wrote ({e}); fix it, or remove it and set the budgets again"
                ),
            )
        })?,
        Err(ReadError::NotFound) => Book::default(),
        Err(ReadError::TooLarge) => {
            return Err(failed("read", format!("it is larger than {MAX_BUDGETS_FILE_BYTES} bytes")));
        }
        Err(ReadError::NotRegular(what)) => return Err(failed("read", format!("it is {what}"))),
        Err(ReadError::Io(op, e)) => return Err(failed("read", format!("{op}: {e}"))),
    };
    let out = change(&mut book);
    if mode != Mode::Read {
        let bytes = serde_json::to_vec_pretty(&book).map_err(|e| failed("written", e.to_string()))?;
        let mut temp = tempfile::Builder::new()
            .prefix(".planlock-budgets.")
            .tempfile_in(dir)
            .map_err(|e| failed("written", e.to_string()))?;
        temp.write_all(&bytes)
            .and_then(|()| temp.as_file().sync_all())
            .map_err(|e| failed("written", e.to_string()))?;
        temp.persist(&path).map_err(|e| failed("written", e.error.to_string()))?;
        File::open(dir).and_then(|d| d.sync_all()).map_err(|e| failed("written", e.to_string()))?;
    }
    drop(lock);
    Ok(out)
}
