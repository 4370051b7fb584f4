//! A connection of its own that listens on a channel (`LISTEN`): what a worker is woken by when
//! a decision is recorded (schema 18's `planlock_decided`). It reconnects when the connection
//! is lost, and says so, so that nothing sent meanwhile is taken for never sent.

use std::time::Duration;

use futures_util::StreamExt;
use tokio_postgres::{AsyncMessage, NoTls};

use super::{PgDatabase, PgError};

/// What a listener hears.
#[derive(Debug)]
pub(crate) enum Heard<'a> {
    /// A notification's payload.
    Payload(&'a str),
    /// The connection was lost (or could not be made): what was sent meanwhile was not heard.
    Lost,
}

/// A listening connection, kept while this value lives: dropping it stops it.
#[derive(Debug)]
pub(crate) struct Listening(tokio::task::AbortHandle);

impl Drop for Listening {
    fn drop(&mut self) {
        self.0.abort();
    }
}

/// The longest wait between two attempts to listen again.
const MOST_BACKOFF: Duration = Duration::from_secs(30);

impl PgDatabase {
    /// Listens on `channel` on a connection of its own (not one of the pool's: a listening
    /// connection is never given back), calling `heard` with each notification, and with
    /// [`Heard::Lost`] whenever the connection is lost, before it connects again (waiting 1 s,
    /// then twice as long each time, at most 30 s). Fails only when it cannot be started at
    /// all (the first connection made is its check).
    pub(crate) async fn listen(
        &self,
        channel: &'static str,
        heard: impl Fn(Heard<'_>) + Send + Sync + 'static,
    ) -> Result<Listening, PgError> {
        let (config, timeout) = self.pool.recipe();
        let config = config.clone();
        let target = self.target.to_string();
        let failed = |reason: String| PgError::Connect { target: target.clone(), reason };
        let runtime = crate::io::runtime().map_err(failed)?;
        let heard = std::sync::Arc::new(heard);
        let lost = heard.clone();
        // One connection that listens: its messages are read by a task of their own, which
        // hands each notification to `heard` and ends when the connection does.
        let connect = move || {
            let (config, heard) = (config.clone(), heard.clone());
            async move {
                let (client, mut connection) =
                    tokio::time::timeout(timeout, config.connect(NoTls)).await.map_err(|_| None)?.map_err(Some)?;
                let driver = tokio::spawn(async move {
                    let mut messages = futures_util::stream::poll_fn(move |cx| connection.poll_message(cx));
                    while let Some(Ok(message)) = messages.next().await {
                        if let AsyncMessage::Notification(n) = message {
                            heard(Heard::Payload(n.payload()));
                        }
                    }
                });
                client.batch_execute(&format!("LISTEN {channel}")).await.map_err(Some)?;
                Ok::<_, Option<tokio_postgres::Error>>((client, driver))
            }
        };
        // The first connection says whether listening can work at all.
        let first = runtime.spawn(connect()).await.map_err(|e| failed(e.to_string()))?;
        let first = first.map_err(|e| {
            failed(e.map_or_else(|| "no answer within the connect timeout".into(), |e| super::reason(&e)))
        })?;
        let task = runtime.spawn(async move {
            let mut current = Some(first);
            let mut backoff = Duration::from_secs(1);
            loop {
                if let Some((client, driver)) = current.take() {
                    backoff = Duration::from_secs(1);
                    let _ = driver.await;
                    drop(client);
                }
                lost(Heard::Lost);
                tokio::time::sleep(backoff).await;
                backoff = (backoff * 2).min(MOST_BACKOFF);
                current = connect().await.ok();
            }
        });
        Ok(Listening(task.abort_handle()))
    }
}
