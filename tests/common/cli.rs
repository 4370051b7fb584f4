//! The one way the tests run the `planlock` binary: [`planlock`] for a command of their own,
//! [`with_input`] for one that reads standard input, and [`CliSession`] for the commands of one
//! session root (its policy and plan given where a command takes them).

use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use serde_json::Value;

/// The `planlock` binary (the crate `planlock-cli`, in `cli/`), as a command to add arguments to.
pub fn planlock() -> Command {
    Command::new(bin())
}

/// Where the `planlock` binary is: beside this test's executable's folder (`target/debug/`), as
/// `cargo test` at the root builds it with the tests (`cli` is a default member of the
/// workspace). A test run without it (`cargo test -p planlock`) builds it first, once.
pub fn bin() -> PathBuf {
    static BIN: std::sync::OnceLock<PathBuf> = std::sync::OnceLock::new();
    BIN.get_or_init(|| {
        let exe = std::env::current_exe().unwrap();
        // target/debug/deps/it-…, or target/debug/it-… for a bench's
        let dir = exe.parent().unwrap();
        let dir = if dir.ends_with("deps") { dir.parent().unwrap() } else { dir };
        let bin = dir.join(format!("planlock{}", std::env::consts::EXE_SUFFIX));
        if !bin.exists() {
            let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
            let built = Command::new(cargo)
                .args(["build", "--quiet", "-p", "planlock-cli"])
                .current_dir(env!("CARGO_MANIFEST_DIR"))
                .status()
                .unwrap();
            assert!(built.success() && bin.exists(), "building the planlock binary failed: {}", bin.display());
        }
        bin
    })
    .clone()
}

/// Runs `planlock args` with `stdin` (if any) as its standard input, and waits for it.
pub fn with_input(args: &[&str], stdin: Option<&str>) -> Output {
    let mut child =
        planlock().args(args).stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().unwrap();
    let mut input = child.stdin.take().unwrap();
    if let Some(s) = stdin {
        // A usage error exits before reading its input: a broken pipe is then expected.
        match input.write_all(s.as_bytes()) {
            Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => {}
            other => other.unwrap(),
        }
    }
    drop(input);
    child.wait_with_output().unwrap()
}

/// The one JSON object a command printed (`--format json`).
pub fn json(out: &Output) -> Value {
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!("{e}: {}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr))
    })
}

/// A session root in a temporary directory, with a policy (tone `friendly`) and a plan file.
pub struct CliSession {
    pub dir: tempfile::TempDir,
    pub root: PathBuf,
    pub policy: PathBuf,
    pub plan: PathBuf,
}

impl CliSession {
    /// A new, empty root, and `plan` (JSON) as its plan file.
    pub fn new(plan: &str) -> CliSession {
        let dir = tempfile::tempdir().unwrap();
        let (root, policy) = (dir.path().join("root"), dir.path().join("policy"));
        std::fs::create_dir(&root).unwrap();
        super::policy(&policy, "friendly");
        let plan_file = dir.path().join("plan.json");
        std::fs::write(&plan_file, plan).unwrap();
        CliSession { dir, root, policy, plan: plan_file }
    }

    /// `planlock args --root ROOT`, with `--policy-root` and the plan for `run` and `resume`.
    pub fn cli(&self, args: &[&str]) -> Output {
        self.command(args).output().unwrap()
    }

    /// The command [`cli`](Self::cli) runs, to add to before running it.
    pub fn command(&self, args: &[&str]) -> Command {
        let mut cmd = planlock();
        cmd.args(args).arg("--root").arg(&self.root);
        if matches!(args[0], "run" | "resume") {
            cmd.arg("--policy-root").arg(&self.policy).arg(&self.plan);
        }
        cmd
    }

    /// The root.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// The policy root.
    pub fn policy(&self) -> &Path {
        &self.policy
    }
}
