//! OpenTelemetry export for every command: on when `OTEL_EXPORTER_OTLP_ENDPOINT` (or a
//! per-signal endpoint) is set, configured by the standard `OTEL_*` variables (README,
//! "Telemetry"). Export never changes a command's outcome: a misconfiguration is a warning, and
//! spans that did not reach the collector are counted on stderr at exit.

use planlock::telemetry::{CAPTURE_CONTENT_ENV, Telemetry};
use tracing_subscriber::layer::SubscriberExt;

/// The export while the command runs.
pub(crate) struct Export(Option<Telemetry>);

/// Starts the export if the environment asks for it.
pub(crate) fn start() -> Export {
    match Telemetry::from_env() {
        Ok(Some(telemetry)) => {
            for warning in telemetry.warnings() {
                warn(&format!("telemetry-config: {warning}"));
            }
            telemetry.install();
            let subscriber = tracing_subscriber::registry().with(telemetry.layer());
            // The CLI sets no other subscriber: this one is the first.
            let _ = tracing::subscriber::set_global_default(subscriber);
            Export(Some(telemetry))
        }
        Ok(None) => Export(None),
        Err(e) => {
            warn(&format!("telemetry-config: {e}; running without export"));
            Export(None)
        }
    }
}

impl Export {
    /// Sends what is left (for at most `SHUTDOWN_TIMEOUT`) and says how many spans were lost.
    pub(crate) fn finish(self) {
        let Some(telemetry) = self.0 else { return };
        let counts = telemetry.shutdown();
        if counts.dropped() > 0 {
            let (lost, ended) = (counts.dropped(), counts.ended);
            warn(&format!("telemetry-dropped: {lost} of {ended} spans did not reach the OpenTelemetry collector"));
        }
    }
}

/// Whether prompts, answers and results go on the spans and in the history: only when
/// `OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT` is `true`, as the GenAI instrumentations
/// of other languages read it.
pub(crate) fn captures_content() -> bool {
    std::env::var(CAPTURE_CONTENT_ENV).is_ok_and(|v| v.trim().eq_ignore_ascii_case("true"))
}

fn warn(message: &str) {
    use std::io::Write;
    let _ = writeln!(std::io::stderr(), "planlock: warning: {}", planlock::text::escape_invisible(message));
}
