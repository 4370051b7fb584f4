//! Tenants isolated by the database (CONTRACT §20), adversarially: planlock connects as a role
//! without BYPASSRLS (as a deployment should), two tenants share one database, and every way of
//! reaching the other's sessions — reading, listing, resuming, deciding, abandoning, searching,
//! the history and the approval log, with the same session key, guessed names, forged rows and
//! SQL in names — finds nothing, as if the session were not there.

use planlock::block_on;
use planlock::store::{Call, MemoryRepositoryPort};

use super::approvals::{reviewed_fixture, reviewed_runtime};
use super::*;

/// The application's role: may log in and own its database, neither a superuser nor BYPASSRLS.
const ROLE: &str = "planlock_app";

/// A database owned by the application's role (its tables are planlock's, owned by it: forced
/// row-level security holds for the owner too); its URL as that role.
pub(super) fn app_database(server: &PgServer, name: &str) -> String {
    let mut client = postgres::Client::connect(&server.url("postgres"), postgres::NoTls).unwrap();
    let url = crate::common::pg::app_role(&mut client, &server.url(name), ROLE);
    client.batch_execute(&format!("DROP DATABASE IF EXISTS {name}")).unwrap();
    client.batch_execute(&format!("CREATE DATABASE {name} OWNER {ROLE}")).unwrap();
    url
}

pub(super) fn tenant_db(url: &str, tenant: &str) -> PgDatabase {
    PgDatabase::connect_with(url, PgOptions::default().tenant(tenant)).unwrap()
}

/// `planlock ARGS --format json` with the database and the tenant in the environment.
fn cli(url: &str, tenant: &str, args: &[&str]) -> (Option<i32>, Value, String) {
    let out = crate::common::cli::planlock()
        .args(args)
        .args(["--format", "json"])
        .env("PLANLOCK_DATABASE_URL", url)
        .env("PLANLOCK_TENANT", tenant)
        .output()
        .unwrap();
    let text = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    (out.status.code(), serde_json::from_slice(&out.stdout).unwrap_or(Value::Null), text)
}

pub(super) fn a_tenant_can_never_reach_another_tenants_sessions(server: &PgServer) {
    let url = app_database(server, "tenants");
    let fx = reviewed_fixture();
    let acme = tenant_db(&url, "acme");
    // acme's session `s1` runs a cycle and pauses at its reviewed write; a second session
    // completes one.
    let mut runtime = reviewed_runtime(&fx, PgSessionStore::open(&acme, "s1").unwrap(), |s| s);
    assert!(matches!(runtime.run_cycle_blocking(), Ok(RunOutcome::Paused { .. })));
    drop(runtime);
    acme_is_out_of_globex_s_reach(&url, &fx, &acme);

    // Below the application: the role sees only the tenant it sets, and cannot write another's.
    let app = url.clone();
    let mut client = postgres::Client::connect(&app, postgres::NoTls).unwrap();
    let (superuser, bypass): (bool, bool) = {
        let row =
            client.query_one("SELECT rolsuper, rolbypassrls FROM pg_roles WHERE rolname = current_user", &[]).unwrap();
        (row.get(0), row.get(1))
    };
    assert!(!superuser && !bypass, "planlock's role neither bypasses row-level security");
    let count = |client: &mut postgres::Client, tenant: &str, table: &str| -> i64 {
        client.batch_execute(&format!("SET planlock.tenant = '{tenant}'")).unwrap();
        client.query_one(&format!("SELECT count(*) FROM {table}"), &[]).unwrap().get(0)
    };
    // acme's one session (globex's guesses opened sessions of globex's own), one cycle each,
    // globex's decision; nothing without a tenant.
    for (table, acme_rows) in [("planlock_sessions", 1), ("planlock_cycle_history", 1), ("planlock_approval_log", 0)] {
        let seen = ["acme", "globex", ""].map(|tenant| count(&mut client, tenant, table));
        assert!(seen[0] == acme_rows && seen[1] >= 1 && seen[2] == 0, "{table}: acme, globex, no tenant see {seen:?}");
    }
    client.batch_execute("SET planlock.tenant = 'globex'").unwrap();
    let forged = client.execute("INSERT INTO planlock_sessions (tenant, session_key) VALUES ('acme', 'forged')", &[]);
    let err = forged.unwrap_err();
    assert!(format!("{err:?}").contains("row-level security"), "{err:?}");
    let moved = client.execute("UPDATE planlock_sessions SET tenant = 'acme'", &[]);
    let err = moved.unwrap_err();
    assert!(format!("{err:?}").contains("row-level security"), "{err:?}");
    // Every planlock table is protected: enabled and forced; no view.
    let unprotected: Vec<String> = client
        .query(
            "SELECT relname::text FROM pg_class WHERE relname LIKE 'planlock\\_%' AND relkind = 'r'
             AND relname <> 'planlock_schema_migrations' AND NOT (relrowsecurity AND relforcerowsecurity)",
            &[],
        )
        .unwrap()
        .iter()
        .map(|r| r.get(0))
        .collect();
    assert!(unprotected.is_empty(), "{unprotected:?}");
    let views: i64 =
        client.query_one("SELECT count(*) FROM pg_views WHERE viewname LIKE 'planlock%'", &[]).unwrap().get(0);
    assert_eq!(views, 0);

    // Names that are not a tenant's are refused before anything is sent; so is a role that
    // would see every tenant.
    for bad in ["acme'; --", "", "a b", &"x".repeat(65)] {
        let err = PgDatabase::connect_with(&url, PgOptions::default().tenant(bad)).unwrap_err();
        assert_eq!(err.code(), "pg-tenant", "{err}");
    }
    let (code, _, text) = cli(&url, "acme'; DROP TABLE planlock_sessions; --", &["status", "--session", "s1"]);
    assert_eq!(code, Some(3), "{text}");
    assert!(text.contains("pg-tenant") || text.contains("cannot be used"), "{text}");
    let err = PgDatabase::connect_with(&server.url("tenants"), PgOptions::default().tenant("acme")).unwrap_err();
    assert!(err.to_string().contains("bypasses row-level security"), "{err}");
}

/// The rules live with the sessions in a database too (CONTRACT §18, amended): an access file
/// installed for one tenant holds every decision on its sessions without a flag — `inbox`,
/// `resume` through the runtime — and no other tenant sees or is held by it.
pub(super) fn rules_installed_for_a_tenant_hold_there_and_only_there(server: &PgServer) {
    let url = app_database(server, "rules");
    let fx = reviewed_fixture();
    for tenant in ["acme", "globex"] {
        let db = tenant_db(&url, tenant);
        let mut runtime = reviewed_runtime(&fx, PgSessionStore::open(&db, "s1").unwrap(), |s| s);
        assert!(matches!(runtime.run_cycle_blocking(), Ok(RunOutcome::Paused { .. })));
    }
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("access.yaml");
    let users: String = ["ada", "bob", "eve"]
        .iter()
        .map(|u| format!("  {u}: {{ tokenSha256: \"{}\" }}\n", planlock::review::access::token_sha256(u)))
        .collect();
    std::fs::write(
        &file,
        format!("users:\n{users}validators:\n  demo-review: {{ approvers: [ada, bob], required: 2 }}\n"),
    )
    .unwrap();
    let (code, installed, text) = cli(&url, "acme", &["access", "install", file.to_str().unwrap()]);
    assert_eq!(code, Some(0), "{text}");
    assert!(installed["source"].as_str().unwrap().contains("tenant `acme`"), "{installed}");
    let decide = |tenant: &str, by: &str| cli(&url, tenant, &["inbox", "approve", "--by", by, "--reason", "ok", "s1"]);
    // acme: eve may not decide; ada's approval is one of two.
    let (code, refused, text) = decide("acme", "eve");
    assert_eq!((code, &refused["errorCode"]), (Some(3), &serde_json::json!("not-an-approver")), "{text}");
    let (code, counted, text) = decide("acme", "ada");
    assert_eq!((code, &counted["counted"]), (Some(0), &serde_json::json!([1, 2])), "{text}");
    // `resume` through the runtime by ada again: refused (she approved already; issue 58),
    // still one of two, nothing runs.
    let acme = tenant_db(&url, "acme");
    let mut runtime = reviewed_runtime(&fx, PgSessionStore::open(&acme, "s1").unwrap(), |s| s);
    let over = planlock::Override::new("demo-review", "remember", "me alone").by("ada");
    let refused = runtime.resume_blocking(Some(over)).unwrap_err();
    assert_eq!(planlock::Failure::code(&refused), "already-approved", "{refused}");
    assert!(refused.to_string().contains("it waits for bob"), "{refused}");
    drop(runtime);
    // globex has no rules: one operator, the name unverified; and it sees none of acme's.
    let (code, shown, _) = cli(&url, "globex", &["access", "show"]);
    assert_eq!((code, &shown["action"]), (Some(0), &serde_json::json!("none")));
    let (code, decided, text) = decide("globex", "eve");
    assert_eq!((code, &decided["decision"]["verified"]), (Some(0), &serde_json::json!(false)), "{text}");
}

/// Database `db` owned by the application's role, where tenant `''` has a paused session `s1`
/// and a budget, and Debian's PgBouncer in `mode` in front of it, dropping the startup options;
/// `None` (the test skipped, outside CI) when `pgbouncer` is not installed.
fn tenant_behind_a_pooler(server: &PgServer, db: &str, mode: &str) -> Option<(crate::common::pg::PgBouncer, Fixture)> {
    let url = app_database(server, db);
    let fx = reviewed_fixture();
    let plain = PgDatabase::connect(&url).unwrap();
    let mut runtime = reviewed_runtime(&fx, PgSessionStore::open(&plain, "s1").unwrap(), |s| s);
    assert!(matches!(runtime.run_cycle_blocking(), Ok(RunOutcome::Paused { .. })));
    drop(runtime);
    block_on(planlock::session::postgres::set_budget(&plain, "", 1000, std::time::Duration::from_secs(86_400)))
        .unwrap();
    let bouncer = crate::common::pg::PgBouncer::start(server, db, ROLE, mode);
    if bouncer.is_none() {
        assert!(std::env::var("CI").is_err(), "CI installs Debian's pgbouncer (.ci/run)");
        eprintln!("SKIPPED: no /usr/sbin/pgbouncer: the pooler test did not run");
    }
    Some((bouncer?, fx))
}

/// A tenant is its own whatever the connection (CONTRACT §20, amended): behind Debian's PgBouncer
/// dropping the startup option that names the tenant (`ignore_startup_parameters = options`),
/// tenant acme sees none of tenant `''`'s pause or budget and cannot decide on it, because every
/// batch planlock sends sets its tenant itself. On the code before, acme listed `''`'s pause and
/// its approval was "recorded" under acme.
pub(super) fn a_tenant_is_its_own_behind_a_pooler_that_drops_startup_options(server: &PgServer) {
    let Some((bouncer, _)) = tenant_behind_a_pooler(server, "pooled", "session") else { return };
    let pooled = bouncer.url("pooled", ROLE);
    let (code, listed, text) = cli(&pooled, "acme", &["inbox", "list"]);
    assert_eq!((code, listed["pauses"].as_array().map(Vec::len)), (Some(0), Some(0)), "{text}");
    let (code, budgets, text) = cli(&pooled, "acme", &["budget", "show"]);
    assert_eq!((code, &budgets["budgets"]), (Some(0), &serde_json::json!([])), "{text}");
    let (code, _, text) = cli(&pooled, "acme", &["inbox", "approve", "--by", "ada", "--reason", "mine", "s1"]);
    assert_ne!(code, Some(0), "acme cannot decide on another tenant's pause: {text}");
    // The same tenant `''` through the pooler still sees its own.
    let (code, listed, text) = cli(&pooled, "", &["inbox", "list"]);
    assert_eq!((code, listed["pauses"].as_array().map(Vec::len)), (Some(0), Some(1)), "{text}");
}

/// Behind PgBouncer in transaction pooling (Debian's 1.18: no named statements across
/// transactions), dropping the startup option that names the tenant, with
/// `statement_cache_capacity=0`: every statement unnamed and every batch carrying its tenant.
/// Four workers of tenant acme pause, are approved through the CLI and resume their sessions
/// while tenant `''`'s pause and budget stay out of acme's sight.
pub(super) fn a_tenant_is_its_own_behind_a_transaction_pooler(server: &PgServer) {
    let Some((bouncer, fx)) = tenant_behind_a_pooler(server, "txpooled", "transaction") else { return };
    let pooled = format!("{} statement_cache_capacity=0", bouncer.url("txpooled", ROLE));
    std::thread::scope(|scope| {
        let workers: Vec<_> = (0..4)
            .map(|w| {
                let (pooled, fx) = (&pooled, &fx);
                scope.spawn(move || {
                    let acme = tenant_db(pooled, "acme");
                    let key = format!("w{w}");
                    let mut runtime = reviewed_runtime(fx, PgSessionStore::open(&acme, &key).unwrap(), |s| s);
                    assert!(matches!(runtime.run_cycle_blocking(), Ok(RunOutcome::Paused { .. })));
                    let args = ["inbox", "approve", "--by", "ada", "--reason", "checked", key.as_str()];
                    let (code, _, text) = cli(pooled, "acme", &args);
                    assert_eq!(code, Some(0), "{text}");
                    let resumed = runtime.run_cycle_blocking();
                    assert!(matches!(resumed, Ok(RunOutcome::Completed(_))), "{resumed:?}");
                })
            })
            .collect();
        for worker in workers {
            worker.join().unwrap();
        }
    });
    let (code, listed, text) = cli(&pooled, "acme", &["inbox", "list"]);
    assert_eq!((code, listed["pauses"].as_array().map(Vec::len)), (Some(0), Some(0)), "{text}");
    let (code, budgets, text) = cli(&pooled, "acme", &["budget", "show"]);
    assert_eq!((code, &budgets["budgets"]), (Some(0), &serde_json::json!([])), "{text}");
    let (code, listed, text) = cli(&pooled, "", &["inbox", "list"]);
    assert_eq!((code, listed["pauses"].as_array().map(Vec::len)), (Some(0), Some(1)), "{text}");
    let (code, status, text) = cli(&pooled, "acme", &["status", "--session", "w0"]);
    assert_eq!((code, &status["session"]["cycle"]), (Some(0), &serde_json::json!(1)), "{text}");
}

/// A schema that distributes by tenant (CONTRACT §20, amended): every primary key and unique
/// index of every planlock table carries the tenant, as a sharded PostgreSQL (Citus) needs of
/// its distribution column. Read from `pg_catalog`.
pub(super) fn every_key_carries_the_tenant(server: &PgServer) {
    let url = server.database("keys");
    PgDatabase::connect(&url).unwrap();
    let mut client = postgres::Client::connect(&url, postgres::NoTls).unwrap();
    let rows = client
        .query(
            "SELECT c.relname::text, i.relname::text, array_agg(a.attname::text ORDER BY a.attname)
             FROM pg_index ix
             JOIN pg_class c ON c.oid = ix.indrelid
             JOIN pg_class i ON i.oid = ix.indexrelid
             JOIN pg_attribute a ON a.attrelid = c.oid AND a.attnum = ANY (ix.indkey)
             WHERE c.relname LIKE 'planlock\\_%' AND (ix.indisunique OR ix.indisprimary)
               AND c.relname <> 'planlock_schema_migrations'
             GROUP BY c.relname, i.relname ORDER BY 1, 2",
            &[],
        )
        .unwrap();
    assert!(rows.len() > 10, "the keys were read: {}", rows.len());
    let without: Vec<String> = rows
        .iter()
        .filter(|r| !r.get::<_, Vec<String>>(2).iter().any(|c| c == "tenant"))
        .map(|r| format!("{}.{} {:?}", r.get::<_, String>(0), r.get::<_, String>(1), r.get::<_, Vec<String>>(2)))
        .collect();
    assert!(without.is_empty(), "keys without the tenant: {without:#?}");
}

/// A role that bypasses row-level security, without a tenant (CONTRACT §20, amended): refused
/// once the database holds another tenant than `''` (it would read and write theirs as its own),
/// unless it asks to read them all (`--all-tenants`), and then it writes nothing. On the code
/// before, a superuser without a tenant listed every tenant's pauses and its decisions landed
/// under `''`.
pub(super) fn a_role_that_sees_every_tenant_needs_a_tenant_or_reads_only(server: &PgServer) {
    let url = app_database(server, "crossing");
    let fx = reviewed_fixture();
    let acme = tenant_db(&url, "acme");
    let mut runtime = reviewed_runtime(&fx, PgSessionStore::open(&acme, "s1").unwrap(), |s| s);
    assert!(matches!(runtime.run_cycle_blocking(), Ok(RunOutcome::Paused { .. })));
    drop(runtime);
    let superuser = server.url("crossing");
    let as_superuser = |args: &[&str]| {
        let out = crate::common::cli::planlock()
            .args(args)
            .args(["--format", "json", "--database", &superuser])
            .env_remove("PLANLOCK_TENANT")
            .output()
            .unwrap();
        (out.status.code(), serde_json::from_slice::<Value>(&out.stdout).unwrap_or(Value::Null))
    };
    let (code, refused) = as_superuser(&["inbox", "list"]);
    assert_ne!(code, Some(0), "{refused}");
    assert_eq!(refused["errorCode"], "pg-tenant", "{refused}");
    assert!(refused["error"].as_str().unwrap().contains("--all-tenants"), "{refused}");
    assert!(PgDatabase::connect(&superuser).is_err(), "the library refuses it too");
    let (code, listed) = as_superuser(&["inbox", "list", "--all-tenants"]);
    assert_eq!((code, listed["pauses"].as_array().map(Vec::len)), (Some(0), Some(1)), "{listed}");
    let (code, decided) = as_superuser(&["inbox", "approve", "--all-tenants", "--by", "root", "--reason", "all", "s1"]);
    assert_ne!(code, Some(0), "reading every tenant writes nothing: {decided}");
    let events: i64 = postgres::Client::connect(&superuser, postgres::NoTls)
        .unwrap()
        .query_one("SELECT count(*) FROM planlock_approval_log", &[])
        .unwrap()
        .get(0);
    assert_eq!(events, 0, "nothing recorded");
}

/// Tenant acme's paused `s1` is out of tenant globex's reach through every CLI command, the
/// console and the library, and globex's own `s1` is its own.
fn acme_is_out_of_globex_s_reach(url: &str, fx: &Fixture, acme: &PgDatabase) {
    let url = url.to_owned();
    let (code, json, text) = cli(&url, "acme", &["inbox", "list"]);
    assert_eq!((code, json["pauses"].as_array().map(Vec::len)), (Some(0), Some(1)), "{text}");

    // The console over the database serves one tenant: acme's shows its pause, globex's none,
    // and not the session's page either.
    for (tenant, pending) in [("acme", true), ("globex", false)] {
        use crate::common::console::serve;
        let console = serve(&["--database".as_ref(), url.as_ref(), "--tenant".as_ref(), tenant.as_ref()], &[]);
        let cookie = console.sign_in("ada");
        let inbox = console.get(&cookie, "/inbox").body;
        assert_eq!(inbox.contains("<title>(1) Inbox"), pending, "{tenant}: {inbox}");
        assert_eq!(inbox.contains("/inbox/s1"), pending, "{tenant}: {inbox}");
        let page = console.get(&cookie, "/sessions/s1");
        assert_eq!(page.body.contains("PersistMemory"), pending, "{tenant}: {}", page.body);
    }

    // Or the tenant its access file's users work in; users of two tenants get no console.
    let dir = tempfile::tempdir().unwrap();
    let access = dir.path().join("access.yaml");
    let user = |u: &str, t: &str| {
        format!("  {u}: {{ tokenSha256: \"{}\", tenant: {t} }}\n", planlock::review::access::token_sha256(u))
    };
    std::fs::write(&access, format!("users:\n{}", user("ada", "acme"))).unwrap();
    let console = crate::common::console::serve(
        &["--database".as_ref(), url.as_ref(), "--access".as_ref(), access.as_os_str()],
        &[],
    );
    let origin = console.origin();
    let reply = console.request("POST", "/login", &[("Origin", &origin)], "token=ada");
    let cookie = reply
        .headers
        .lines()
        .find_map(|l| l.strip_prefix("set-cookie: "))
        .unwrap()
        .split(';')
        .next()
        .unwrap()
        .to_owned();
    assert!(console.get(&cookie, "/inbox").body.contains("/inbox/s1"), "ada works in acme");
    drop(console);
    std::fs::write(&access, format!("users:\n{}{}", user("ada", "acme"), user("gus", "globex"))).unwrap();
    let out = crate::common::cli::planlock()
        .args(["serve", "--listen", "127.0.0.1:0", "--database", &url, "--access"])
        .arg(&access)
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success() && text.contains("several tenants (acme, globex)"), "{text}");

    // globex, with the same key and guessed ones: nothing.
    for key in ["s1", "S1", "s1 ", "acme/s1", "%", "s1'; DROP TABLE planlock_sessions; --"] {
        for args in [
            &["status", "--session", key][..],
            &["status", "--session", key, "--history", "9"],
            &["abandon", "--session", key],
            &["inbox", "show", key],
            &["inbox", "log", key],
            &["inbox", "approve", "--by", "mallory", "--reason", "x", key],
            &["inbox", "reject", "--by", "mallory", "--reason", "x", key],
            &["memory", "search", "--session", key, "anything"],
            &["decisions", "--session", key],
        ] {
            let (code, json, text) = cli(&url, "globex", args);
            // "Not found", whatever the command: no session, nothing paused, or nothing in it.
            let empty = |field: &str| json[field].as_array().is_some_and(Vec::is_empty);
            let nothing = match code {
                Some(3) => json["errorCode"] == "unknown-session",
                Some(1) => json["errorCode"] == "nothing-paused",
                Some(0) => empty("events") || empty("items") || (empty("decisions") && empty("anchors")),
                _ => false,
            };
            assert!(nothing, "{args:?}: {code:?} {text}");
        }
    }
    let (code, json, text) = cli(&url, "globex", &["inbox", "list"]);
    assert_eq!((code, json["pauses"].as_array().map(Vec::len)), (Some(0), Some(0)), "{text}");
    // Nor through the library: globex's stores in acme's namespace are empty.
    let globex = tenant_db(&url, "globex");
    assert!(block_on(PgStore::new(&globex, "s1").search(&Call::new(), "", 10)).unwrap().is_empty());
    assert!(block_on(PgStore::new(acme, "s1").search(&Call::new(), "", 10)).unwrap().is_empty(), "paused first");

    // globex's own `s1` is its own: a cold start, while acme's stays paused.
    let mut theirs = reviewed_runtime(fx, PgSessionStore::open(&globex, "s1").unwrap(), |s| s);
    assert!(matches!(theirs.run_cycle_blocking(), Ok(RunOutcome::Paused { .. })));
    drop(theirs);
    let (code, json, text) = cli(&url, "globex", &["inbox", "approve", "--by", "gus", "--reason", "ok", "s1"]);
    assert_eq!(code, Some(0), "{json} {text}");
    let (_, json, text) = cli(&url, "acme", &["status", "--session", "s1"]);
    assert!(json["intervention"].is_object(), "acme's pause is untouched by globex's decision: {text}");
    let (code, _, text) = cli(&url, "acme", &["inbox", "show", "s1"]);
    assert_eq!(code, Some(0), "{text}");
    let (_, json, _) = cli(&url, "acme", &["inbox", "log", "s1"]);
    assert!(json["events"].as_array().unwrap().iter().all(|e| e["event"] != "decided"), "{json}");
    let (_, json, _) = cli(&url, "globex", &["inbox", "log", "s1"]);
    assert!(json["events"].as_array().unwrap().iter().any(|e| e["event"] == "decided"), "{json}");
}

/// Every statement planlock sends names its tenant (CONTRACT §20, amended), so that row-level
/// security is the second wall, not the only one: with the policies of every planlock table
/// turned off, tenant globex still reaches nothing of acme's. On the code before, statements
/// found rows by key alone: globex listed and decided on acme's pause.
pub(super) fn every_statement_names_its_tenant(server: &PgServer) {
    let url = app_database(server, "walls");
    let fx = reviewed_fixture();
    let acme = tenant_db(&url, "acme");
    let mut client = postgres::Client::connect(&server.url("walls"), postgres::NoTls).unwrap();
    let tables: Vec<String> = client
        .query("SELECT relname::text FROM pg_class WHERE relname LIKE 'planlock\\_%' AND relrowsecurity", &[])
        .unwrap()
        .iter()
        .map(|r| r.get(0))
        .collect();
    assert!(tables.len() > 10, "{tables:?}");
    for table in &tables {
        client
            .batch_execute(&format!("ALTER TABLE {table} NO FORCE ROW LEVEL SECURITY, DISABLE ROW LEVEL SECURITY"))
            .unwrap();
    }
    let mut runtime = reviewed_runtime(&fx, PgSessionStore::open(&acme, "s1").unwrap(), |s| s);
    assert!(matches!(runtime.run_cycle_blocking(), Ok(RunOutcome::Paused { .. })));
    drop(runtime);
    block_on(planlock::session::postgres::set_budget(&acme, "", 1000, std::time::Duration::from_secs(86_400))).unwrap();
    acme_is_out_of_globex_s_reach(&url, &fx, &acme);
    let (code, budgets, text) = cli(&url, "globex", &["budget", "show"]);
    assert_eq!((code, &budgets["budgets"]), (Some(0), &serde_json::json!([])), "{text}");
    let (code, budgets, text) = cli(&url, "acme", &["budget", "show"]);
    assert_eq!((code, budgets["budgets"].as_array().map(Vec::len)), (Some(0), Some(1)), "{text}");
}
