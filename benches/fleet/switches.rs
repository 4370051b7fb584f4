//! What a setting costs a fleet, measured on against off in the same run (PostgreSQL, latency 0,
//! S = 64, W = 4, rounds interleaved; one round in the smoke run, 3 when its variable is set).
//! Printed: CPU per cycle (the workers and PostgreSQL together) and round trips per cycle, each
//! way, and their ratios.
//!
//! - Tenants (issue 45 §2), with `FLEET_TENANTS=1`: off, the workers connect as the superuser, as
//!   every other configuration (row-level security is bypassed); on, as a role without
//!   BYPASSRLS, in a tenant (every statement filtered by the policy, the tenant set in each
//!   BEGIN).
//! - Token budgets (issue 45 §3), with `FLEET_BUDGETS=1`: on, every session's runtime reserves
//!   each model call (two a cycle) from one budget the whole fleet shares, a row every
//!   reservation locks, and settles them with its save; off, no budget.

use std::path::Path;
use std::time::Duration;

use serde_json::{Value, json};

use super::{Backend, Config, measure, print, proc, record, worker};

/// The role the tenants' workers connect as.
const ROLE: &str = "planlock_fleet_app";

/// A setting whose cost is measured.
#[derive(Clone, Copy)]
enum Switch {
    Tenants,
    Budgets,
}

impl Switch {
    /// The variable that asks for 3 rounds, and the name in what is printed.
    fn of(self) -> (&'static str, &'static str) {
        match self {
            Switch::Tenants => ("FLEET_TENANTS", "tenants"),
            Switch::Budgets => ("FLEET_BUDGETS", "budgets"),
        }
    }
}

#[allow(clippy::too_many_arguments)]
pub fn overhead(
    quick: bool,
    window: Duration,
    url: &str,
    pg: &proc::PgWatch,
    model: &proc::ModelServer,
    policy: &Path,
    plan: &Path,
    records: &mut Vec<Value>,
) {
    for switch in [Switch::Tenants, Switch::Budgets] {
        let rounds = match (quick, std::env::var_os(switch.of().0).is_some()) {
            (_, true) => 3,
            (true, false) => 1,
            (false, false) => continue,
        };
        measure_switch(switch, rounds, window, url, pg, model, (policy, plan), records);
    }
}

#[allow(clippy::too_many_arguments)]
fn measure_switch(
    switch: Switch,
    rounds: usize,
    window: Duration,
    url: &str,
    pg: &proc::PgWatch,
    model: &proc::ModelServer,
    (policy, plan): (&Path, &Path),
    records: &mut Vec<Value>,
) {
    let name = switch.of().1;
    // The schema and the queue first (the workers would make them).
    let db = planlock::pg::PgDatabase::connect(url).unwrap();
    worker::fill_queue(url, &format!("{name}-setup"), 0);
    // (the superuser's URL of the "on" rounds' database, and the place their workers connect to)
    let (on_url, on_place) = match switch {
        // A database of its own (a superuser without a tenant is refused where tenants are),
        // the role and its rights on the tables.
        Switch::Tenants => {
            let on_url = url.replace("dbname=", "dbname=tenants_");
            let name = on_url.split("dbname=").nth(1).and_then(|r| r.split(' ').next()).unwrap().to_owned();
            let mut admin = postgres::Client::connect(url, postgres::NoTls).unwrap();
            // Each alone: neither runs inside a transaction block.
            admin.batch_execute(&format!("DROP DATABASE IF EXISTS {name}")).unwrap();
            admin.batch_execute(&format!("CREATE DATABASE {name}")).unwrap();
            planlock::pg::PgDatabase::connect(&on_url).unwrap();
            worker::fill_queue(&on_url, &format!("{name}-setup"), 0);
            let mut client = postgres::Client::connect(&on_url, postgres::NoTls).unwrap();
            let as_app = super::common::pg::app_role(&mut client, &on_url, ROLE);
            client
                .batch_execute(&format!(
                    "GRANT ALL ON ALL TABLES IN SCHEMA public TO {ROLE};
                     GRANT ALL ON ALL SEQUENCES IN SCHEMA public TO {ROLE};"
                ))
                .unwrap();
            (on_url, as_app)
        }
        // A budget no run spends: every call reserves and settles, none is refused.
        Switch::Budgets => {
            let (tokens, day) = (u64::MAX / 4, Duration::from_secs(86_400));
            planlock::block_on(planlock::session::postgres::set_budget(&db, "", tokens, day)).unwrap();
            (url.to_owned(), url.to_owned())
        }
    };
    let config = Config { backend: Backend::Postgres, latency_ms: 0, sessions: 64, workers: 4 };
    // [off, on]: CPU ms per cycle, round trips per cycle.
    let mut cpu = [Vec::new(), Vec::new()];
    let mut trips = [Vec::new(), Vec::new()];
    for round in 0..rounds {
        for on in [false, true] {
            let tag = format!("{name}-{round}-{on}");
            worker::fill_queue(if on { on_url.as_str() } else { url }, &tag, config.sessions);
            let place = if on { on_place.as_str() } else { url };
            let commands = (0..config.workers)
                .map(|w| {
                    let mut cmd = worker::command(config, w, &tag, place, &model.url, policy, plan, window);
                    match (switch, on) {
                        (Switch::Tenants, true) => cmd.env("FLEET_TENANT", "fleet"),
                        (Switch::Budgets, true) => cmd.env("FLEET_BUDGET", "1"),
                        (_, false) => cmd.env_remove("FLEET_TENANT").env_remove("FLEET_BUDGET"),
                    };
                    cmd
                })
                .collect();
            let Some(f) = measure(config, window, Some(pg), model, commands) else { continue };
            let cycles = f.all_cycles.max(1) as f64;
            cpu[on as usize].push(
                f.cpu_parts.iter().filter(|(n, _)| *n != "model server").map(|p| p.1).sum::<f64>() / cycles * 1e3,
            );
            trips[on as usize].push(f.round_trips.unwrap_or(0) as f64 / cycles);
            let system = format!("planlock, {name} {}", if on { "on" } else { "off" });
            print(&system, config, &f, None);
            records.push(record(&system, config, &f));
        }
    }
    if let Switch::Budgets = switch {
        planlock::block_on(planlock::session::postgres::remove_budget(&db, "")).unwrap();
    }
    let mean = |v: &[f64]| v.iter().sum::<f64>() / v.len().max(1) as f64;
    let (off, on) = (mean(&cpu[0]), mean(&cpu[1]));
    let (trips_off, trips_on) = (mean(&trips[0]), mean(&trips[1]));
    println!(
        "== {name}: CPU per cycle (workers and PostgreSQL) {on:.3} ms with {name} on, {off:.3} ms off: {:.3}x; \
         round trips per cycle {trips_on:.2} on, {trips_off:.2} off ({rounds} rounds each, interleaved)",
        on / off
    );
    records.push(json!({ "system": format!("{name} overhead"), "cpuMsOn": on, "cpuMsOff": off, "ratio": on / off,
        "roundTripsOn": trips_on, "roundTripsOff": trips_off }));
}
