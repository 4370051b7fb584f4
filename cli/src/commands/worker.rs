//! `planlock worker`: acts on each decision as it is made (CONTRACT §21) on the sessions the
//! flags name, with the CLI's runtime (the demo handlers, a real model when asked for); one line
//! per action (a JSON object a line with `--format json`), until SIGTERM or Ctrl-C.

use std::io::Write as _;

use planlock::worker::{ToRun, Worker, WorkerEvent};
use serde::Serialize;

use crate::args::WorkerArgs;
use crate::error::{CliError, EXIT_VALID};
use crate::output::Output;
use crate::runtime;

/// One event, as a JSON line.
#[derive(Serialize)]
struct EventLine<'a> {
    at: String,
    event: &'static str,
    line: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    session: Option<&'a str>,
}

impl<'a> EventLine<'a> {
    fn of(event: &'a WorkerEvent) -> EventLine<'a> {
        let (kind, session) = match event {
            WorkerEvent::Started { .. } => ("started", None),
            WorkerEvent::Acted(a) => ("acted", Some(a.session.as_str())),
            WorkerEvent::Skipped { session, .. } => ("skipped", Some(session.as_str())),
            WorkerEvent::Failed { .. } => ("failed", None),
            WorkerEvent::Stopped => ("stopped", None),
            _ => ("other", None),
        };
        let at = planlock::session::Timestamp::now().to_string();
        EventLine { at, event: kind, line: event.to_string(), session }
    }
}

pub fn worker(out: &mut Output, w: WorkerArgs) -> Result<u8, CliError> {
    let backend = w.sessions.backend()?;
    let args = w.runtime.args(&[], w.repo_base.clone());
    let manifest = runtime::manifest(&args, backend.as_ref())?;
    let boot = |session: ToRun| {
        let ToRun { plan, opened, .. } = session;
        runtime::build(&args, manifest.clone(), plan, || Ok(opened)).map(|built| built.builder).map_err(|e| e.message)
    };
    let worker = Worker::new(backend, boot).poll_every(w.poll).watching(!w.no_watch);
    let json = out.is_json();
    let say = move |event: WorkerEvent| {
        let line = EventLine::of(&event);
        let said = match json {
            true => crate::output::json_line(&line),
            false => format!("{} {}\n", line.at, planlock::text::escape_invisible(&line.line)),
        };
        let mut stdout = std::io::stdout().lock();
        let _ = stdout.write_all(said.as_bytes()).and_then(|()| stdout.flush());
    };
    if w.once {
        let mut say = say;
        planlock::block_on(worker.act_on_decided(&mut say));
        return Ok(EXIT_VALID);
    }
    let stop = stop_signal()?;
    planlock::block_on(worker.run(stop, say));
    Ok(EXIT_VALID)
}

/// A future that completes at SIGTERM or SIGINT (Ctrl-C).
fn stop_signal() -> Result<impl std::future::Future<Output = ()>, CliError> {
    use tokio::signal::unix::{SignalKind, signal};
    let io = planlock::io_handle().map_err(|e| CliError::usage("io", e))?;
    let _entered = io.enter();
    let failed = |e: std::io::Error| CliError::usage("io", format!("cannot listen for signals: {e}"));
    let mut term = signal(SignalKind::terminate()).map_err(failed)?;
    let mut interrupt = signal(SignalKind::interrupt()).map_err(failed)?;
    Ok(async move {
        let mut term = std::pin::pin!(term.recv());
        let mut interrupt = std::pin::pin!(interrupt.recv());
        std::future::poll_fn(|cx| match (term.as_mut().poll(cx), interrupt.as_mut().poll(cx)) {
            (std::task::Poll::Pending, std::task::Poll::Pending) => std::task::Poll::Pending,
            _ => std::task::Poll::Ready(()),
        })
        .await;
    })
}
