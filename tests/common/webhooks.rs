//! A webhook receiver that verifies every delivery with the `standardwebhooks` package from PyPI
//! (`tests/webhooks/receiver.py`, in the virtual environment `.ci/webhooks` makes), for
//! tests/it/webhooks.rs and the PostgreSQL harness.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

/// A Standard Webhooks secret (the specification's example).
pub const SECRET: &str = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";

/// The verifier's Python, or `None` (outside CI: the tests say they did not run).
pub fn python() -> Option<PathBuf> {
    match std::env::var_os("PLANLOCK_WEBHOOKS") {
        Some(dir) => Some(Path::new(&dir).join("venv/bin/python")),
        None => {
            assert!(std::env::var_os("CI").is_none(), "CI sets PLANLOCK_WEBHOOKS (.ci/webhooks)");
            eprintln!(
                "\n    SKIPPED: PLANLOCK_WEBHOOKS is not set (bash .ci/webhooks makes it): no webhook test ran.\n"
            );
            None
        }
    }
}

/// A receiver of `tests/webhooks/receiver.py` in `mode`.
pub struct Receiver {
    pub url: String,
    child: Child,
    log: PathBuf,
    _dir: tempfile::TempDir,
}

impl Drop for Receiver {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Receiver {
    pub fn start(python: &Path, mode: &str) -> Receiver {
        let dir = tempfile::tempdir().unwrap();
        let log = dir.path().join("received.jsonl");
        let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/webhooks/receiver.py");
        let mut child =
            Command::new(python).arg(script).args([SECRET, mode]).arg(&log).stdout(Stdio::piped()).spawn().unwrap();
        let mut port = String::new();
        BufReader::new(child.stdout.take().unwrap()).read_line(&mut port).unwrap();
        let url = format!("http://127.0.0.1:{}/hook", port.trim());
        Receiver { child, url, log, _dir: dir }
    }

    /// What it logged: each request's start and end (answered), in order.
    pub fn entries(&self) -> Vec<Value> {
        std::fs::read_to_string(&self.log)
            .unwrap_or_default()
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect()
    }

    /// The answered requests.
    pub fn answered(&self) -> Vec<Value> {
        self.entries().into_iter().filter(|e| e["phase"] == "end").collect()
    }

    /// Waits until `enough` holds of its entries (at most `within`).
    pub fn wait_for(&self, within: Duration, enough: impl Fn(&[Value]) -> bool) -> bool {
        let started = Instant::now();
        while started.elapsed() < within {
            if enough(&self.entries()) {
                return true;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        false
    }
}
