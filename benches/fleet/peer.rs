//! The peers: `benches/peers/langgraph_fleet.py` (LangGraph) and `benches/peers/dbos_fleet.py`
//! (DBOS), each in a virtual environment this bench creates from its requirements file and
//! reuses (`benches/peers/.venv`, `benches/peers/.venv-dbos`). `FLEET_PEER=langgraph|dbos|all`
//! picks them (the full run: all).

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

use super::Config;

/// Which peer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    LangGraph,
    Dbos,
}

impl Kind {
    /// The peers `FLEET_PEER` names (`langgraph`, `dbos`, `all`; `1` is all).
    pub fn chosen(value: Option<&str>) -> Vec<Kind> {
        match value {
            Some("langgraph") => vec![Kind::LangGraph],
            Some("dbos") => vec![Kind::Dbos],
            _ => vec![Kind::LangGraph, Kind::Dbos],
        }
    }

    /// Its name, as the figures print it.
    pub fn name(self) -> &'static str {
        match self {
            Kind::LangGraph => "LangGraph",
            Kind::Dbos => "DBOS",
        }
    }

    /// Its script, requirements file and environment, under `benches/peers`.
    fn files(self) -> (&'static str, &'static str, &'static str) {
        match self {
            Kind::LangGraph => ("langgraph_fleet.py", "requirements.txt", ".venv"),
            Kind::Dbos => ("dbos_fleet.py", "dbos-requirements.txt", ".venv-dbos"),
        }
    }
}

pub struct Peer {
    pub kind: Kind,
    python: PathBuf,
    script: PathBuf,
    policy: PathBuf,
}

/// Says loudly that a peer is missing, and why.
fn missing(kind: Kind, why: &str) -> Option<Peer> {
    eprintln!(
        "\n    ==================== NO PEER ====================\n    \
         {} could not be installed ({why}):\n    \
         the fleet bench prints the figures without it.\n    \
         =================================================\n",
        kind.name()
    );
    None
}

impl Peer {
    /// The peer, its environment created (or reused) and its tables set up in `url`.
    pub fn install(kind: Kind, url: &str, policy: &Path) -> Option<Peer> {
        let peers = Path::new(env!("CARGO_MANIFEST_DIR")).join("benches/peers");
        let (script, requirements, venv) = kind.files();
        let venv = peers.join(venv);
        let python = venv.join("bin/python");
        let requirements = peers.join(requirements);
        let stamp = venv.join("requirements.txt");
        let wanted = std::fs::read_to_string(&requirements).ok()?;
        if std::fs::read_to_string(&stamp).ok().as_deref() != Some(wanted.as_str()) {
            eprintln!("fleet: installing {} into {} (once)", kind.name(), venv.display());
            let made = Command::new("python3").args(["-m", "venv"]).arg(&venv).status();
            if !made.is_ok_and(|s| s.success()) {
                return missing(kind, "python3 -m venv failed");
            }
            let pip = Command::new(venv.join("bin/pip"))
                .args(["install", "--quiet", "-r"])
                .arg(&requirements)
                .stdout(Stdio::null())
                .status();
            if !pip.is_ok_and(|s| s.success()) {
                return missing(kind, "pip install of its requirements failed");
            }
            std::fs::write(&stamp, wanted).ok()?;
        }
        let peer = Peer { kind, python, script: peers.join(script), policy: policy.to_path_buf() };
        let setup =
            Command::new(&peer.python).arg(&peer.script).env("FLEET_SETUP", "1").env("FLEET_PLACE", url).status();
        if !setup.is_ok_and(|s| s.success()) {
            return missing(kind, "its tables could not be set up");
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
            .env("FLEET_TAG", format!("{}-{tag}", self.kind.name().to_lowercase()))
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
