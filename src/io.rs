//! Layer 0: the one async story (docs/CONTRACT.md, "Async"). planlock's I/O — model and embedding
//! requests, PostgreSQL connections, SQLite's blocking calls — runs on one background tokio
//! runtime of planlock's own ([`runtime`]): its futures are awaited from any executor (a
//! caller's tokio, async-std, smol, or none) and a wait holds no thread of the caller's. Blocking
//! work (SQLite, an fsync) goes to that runtime's blocking threads ([`blocking`]), so a caller's
//! executor is never stalled. Synchronous entry points (the CLI, the `_blocking` methods) wait
//! on a future with [`block_on`], the one shim, which works on any thread, a tokio worker's
//! included.

use std::future::Future;

#[cfg(feature = "io")]
/// The background runtime: two worker threads (named `planlock-io`) and tokio's blocking pool;
/// `None` if the system refused the threads (every call then fails, saying so).
pub(crate) fn runtime() -> Result<&'static tokio::runtime::Runtime, String> {
    static RUNTIME: std::sync::OnceLock<Result<tokio::runtime::Runtime, String>> = std::sync::OnceLock::new();
    RUNTIME
        .get_or_init(|| {
            tokio::runtime::Builder::new_multi_thread()
                .worker_threads(2)
                .thread_name("planlock-io")
                .enable_all()
                .build()
                .map_err(|e| format!("cannot start planlock's I/O threads: {e}"))
        })
        .as_ref()
        .map_err(Clone::clone)
}

/// A handle on planlock's I/O runtime (tokio, two worker threads), for a program that serves on
/// it rather than starting a second one: `planlock serve` runs the console on it.
///
/// ```
/// let handle = planlock::io_handle()?;
/// assert_eq!(handle.block_on(async { 1 + 1 }), 2);
/// # Ok::<(), String>(())
/// ```
#[cfg(feature = "io")]
#[cfg_attr(docsrs, doc(cfg(feature = "io")))]
pub fn io_handle() -> Result<tokio::runtime::Handle, String> {
    Ok(runtime()?.handle().clone())
}

#[cfg(feature = "io")]
/// Runs the blocking `f` on the runtime's blocking threads and awaits it from any executor.
/// A panic in `f` is resumed in the caller.
pub(crate) async fn blocking<T: Send + 'static>(f: impl FnOnce() -> T + Send + 'static) -> Result<T, String> {
    let handle = runtime()?.spawn_blocking(f);
    match handle.await {
        Ok(value) => Ok(value),
        Err(e) if e.is_panic() => std::panic::resume_unwind(e.into_panic()),
        Err(e) => Err(format!("a blocking task ended: {e}")),
    }
}

/// Waits for `future` on this thread: the one way planlock's synchronous entry points (the CLI,
/// the `_blocking` methods) wait, and the one a synchronous program uses for planlock's other
/// futures. Works on any thread, an async executor's included (planlock's I/O runs on its own
/// runtime, so nothing it waits for needs this thread), though there it holds the thread: in
/// async code, `.await` instead.
///
/// ```
/// let root = tempfile::tempdir()?;
/// let records = planlock::session::FileRecords::new(root.path());
/// use planlock::session::SessionRecords;
/// assert!(planlock::block_on(records.load())?.is_none());
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn block_on<F: Future>(future: F) -> F::Output {
    pollster::block_on(future)
}
