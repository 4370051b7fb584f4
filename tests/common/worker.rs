//! A `planlock worker` process the test starts and reads line by line: what it said, waited
//! for with a deadline, and a SIGTERM that stops it.

use std::process::{Child, Stdio};
use std::sync::mpsc::{Receiver, RecvTimeoutError};
use std::time::{Duration, Instant};

/// A running worker.
pub struct WorkerProcess {
    child: Child,
    lines: Receiver<String>,
    /// Every line it printed so far.
    pub said: Vec<String>,
}

impl WorkerProcess {
    /// `planlock worker` with `args`, its standard output read line by line.
    pub fn start(args: &[&std::ffi::OsStr]) -> WorkerProcess {
        let mut child = super::cli::planlock()
            .arg("worker")
            .args(args)
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .unwrap();
        let lines = super::lines_of(child.stdout.take().unwrap());
        WorkerProcess { child, lines, said: Vec::new() }
    }

    /// The first line (from now) that holds `text`, within `within`; panics with what it said.
    pub fn wait_for(&mut self, text: &str, within: Duration) -> String {
        let deadline = Instant::now() + within;
        loop {
            match self.lines.recv_timeout(deadline.saturating_duration_since(Instant::now())) {
                Ok(line) => {
                    self.said.push(line.clone());
                    if line.contains(text) {
                        return line;
                    }
                }
                Err(RecvTimeoutError::Timeout | RecvTimeoutError::Disconnected) => {
                    panic!("the worker did not say `{text}` within {within:?}; it said:\n{}", self.said.join("\n"))
                }
            }
        }
    }

    /// What it says within `within` (kept in [`said`](Self::said) too).
    pub fn said_within(&mut self, within: Duration) -> Vec<String> {
        let deadline = Instant::now() + within;
        let mut new = Vec::new();
        while let Ok(line) = self.lines.recv_timeout(deadline.saturating_duration_since(Instant::now())) {
            self.said.push(line.clone());
            new.push(line);
        }
        new
    }

    /// Sends SIGTERM and waits for it to exit: its exit code.
    pub fn stop(mut self) -> Option<i32> {
        let pid = self.child.id().to_string();
        std::process::Command::new("kill").args(["-TERM", &pid]).status().unwrap();
        self.wait_for("stopped", Duration::from_secs(30));
        self.child.wait().unwrap().code()
    }
}

impl Drop for WorkerProcess {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
