//! The LangGraph peer: `benches/peers/langgraph_fleet.py` in a virtual environment this bench
//! creates from `benches/peers/requirements.txt` and reuses (`benches/peers/.venv`).

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

use super::Config;

pub struct Peer {
    python: PathBuf,
    script: PathBuf,
    policy: PathBuf,
}

/// Says loudly that the peer is missing, and why.
fn missing(why: &str) -> Option<Peer> {
    eprintln!(
        "\n    ==================== NO PEER ====================\n    \
         LangGraph could not be installed ({why}):\n    \
         the fleet bench prints planlock's figures alone.\n    \
         =================================================\n"
    );
    None
}

impl Peer {
    /// The peer, its environment created (or reused) and its tables set up in `url`.
    pub fn install(url: &str, policy: &Path) -> Option<Peer> {
        let peers = Path::new(env!("CARGO_MANIFEST_DIR")).join("benches/peers");
        let venv = peers.join(".venv");
        let python = venv.join("bin/python");
        let requirements = peers.join("requirements.txt");
        let stamp = venv.join("requirements.txt");
        let wanted = std::fs::read_to_string(&requirements).ok()?;
        if std::fs::read_to_string(&stamp).ok().as_deref() != Some(wanted.as_str()) {
            eprintln!("fleet: installing LangGraph into {} (once)", venv.display());
            let made = Command::new("python3").args(["-m", "venv"]).arg(&venv).status();
            if !made.is_ok_and(|s| s.success()) {
                return missing("python3 -m venv failed");
            }
            let pip = Command::new(venv.join("bin/pip"))
                .args(["install", "--quiet", "-r"])
                .arg(&requirements)
                .stdout(Stdio::null())
                .status();
            if !pip.is_ok_and(|s| s.success()) {
                return missing("pip install -r benches/peers/requirements.txt failed");
            }
            std::fs::write(&stamp, wanted).ok()?;
        }
        let peer = Peer { python, script: peers.join("langgraph_fleet.py"), policy: policy.to_path_buf() };
        let setup =
            Command::new(&peer.python).arg(&peer.script).env("FLEET_SETUP", "1").env("FLEET_PLACE", url).status();
        if !setup.is_ok_and(|s| s.success()) {
            return missing("its tables could not be set up");
        }
        Some(peer)
    }

    /// The command that starts peer worker `index` of `config`.
    pub fn command(
        &self,
        config: Config,
        index: usize,
        tag: &str,
        url: &str,
        model_url: &str,
        window: Duration,
    ) -> Command {
        let mut cmd = Command::new(&self.python);
        cmd.arg(&self.script)
            .env("FLEET_PLACE", url)
            .env("FLEET_TAG", format!("langgraph-{tag}"))
            .env("FLEET_INDEX", index.to_string())
            .env("FLEET_WORKERS", config.workers.to_string())
            .env("FLEET_SESSIONS", config.sessions.to_string())
            .env("FLEET_MODEL_URL", model_url)
            .env("FLEET_POLICY", &self.policy)
            .env("FLEET_WINDOW_MS", window.as_millis().to_string())
            .env("FLEET_LATENCY_MS", config.latency_ms.to_string());
        cmd
    }
}
