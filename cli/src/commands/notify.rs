//! `planlock notify`: the sender of the pauses' notifications ([`planlock::review::notify`]) on
//! the sessions the flags name, for the webhooks of an access file; every attempt printed (JSON
//! lines with `--format json`), no secret ever.

use std::path::Path;
use std::sync::Arc;

use planlock::review::notify::{Attempted, Notifier, NotifyOptions};
use serde::Serialize;

use crate::args::SessionsArgs;
use crate::error::{CliError, EXIT_CYCLE_FAIL, EXIT_VALID};
use crate::output::{Output, Report, Text, line};

/// `--once`: what each attempt did.
#[derive(Serialize)]
struct SentReport {
    attempts: Vec<AttemptLine>,
}

/// One attempt, as printed.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct AttemptLine {
    url: String,
    id: String,
    kind: &'static str,
    session: String,
    outcome: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    why: Option<String>,
}

impl From<&Attempted> for AttemptLine {
    fn from(a: &Attempted) -> Self {
        AttemptLine {
            url: a.url.clone(),
            id: a.id.clone(),
            kind: a.kind,
            session: a.session.clone(),
            outcome: a.outcome,
            why: a.why.clone(),
        }
    }
}

impl AttemptLine {
    fn text(&self) -> String {
        let why = self.why.as_deref().map(|w| format!(": {w}")).unwrap_or_default();
        format!("{} {} {} of `{}` to {}{why}", self.outcome, self.kind, self.id, self.session, self.url)
    }
}

impl Report for SentReport {
    fn text(&self, out: &mut Text) {
        if self.attempts.is_empty() {
            line!(out, "nothing was due");
        }
        for a in &self.attempts {
            line!(out, "{}", a.text());
        }
        if !self.attempts.is_empty() {
            let count = |outcome: &str| self.attempts.iter().filter(|a| a.outcome == outcome).count();
            let failed = self.attempts.len() - count("delivered") - count("skipped");
            line!(out, "{} delivered, {failed} failed, {} sessions skipped", count("delivered"), count("skipped"));
        }
    }
}

pub fn notify(
    out: &mut Output,
    sessions: &SessionsArgs,
    access: Option<&Path>,
    once: bool,
    options: NotifyOptions,
) -> Result<u8, CliError> {
    let backend = sessions.backend()?;
    // The installed rules name the webhooks; `--access` only where none are installed.
    let access = match super::access::rules_here(backend.as_ref(), access)? {
        (Some(access), _) => access,
        (None, _) => {
            return Err(CliError::usage(
                "no-access-file",
                "no access file is installed here (`planlock access install`) and none is given (--access): no webhook is named",
            ));
        }
    };
    let notifier = Notifier::new(backend, &access, options).map_err(|e| CliError::of(&e))?;
    if once {
        let attempted = planlock::block_on(notifier.once()).map_err(|e| CliError::of(&e))?;
        // Nothing could be delivered of what was due: say so with the exit code too.
        let delivered = attempted.iter().any(|a| a.outcome == "delivered");
        out.report(&SentReport { attempts: attempted.iter().map(AttemptLine::from).collect() });
        return Ok(if attempted.is_empty() || delivered { EXIT_VALID } else { EXIT_CYCLE_FAIL });
    }
    let json = out.is_json();
    let report: Arc<dyn Fn(&Attempted) + Send + Sync> = Arc::new(move |a| {
        let line = AttemptLine::from(a);
        let said = match json {
            true => crate::output::json_line(&line),
            false => format!("{}\n", planlock::text::escape_invisible(&line.text())),
        };
        use std::io::Write as _;
        let mut stdout = std::io::stdout().lock();
        let _ = stdout.write_all(said.as_bytes()).and_then(|()| stdout.flush());
    });
    let runtime = planlock::io_handle().map_err(|e| CliError::usage("io", e))?;
    runtime.block_on(notifier.run(report));
    Ok(EXIT_VALID)
}
