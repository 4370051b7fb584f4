//! The cost of tenants (issue 45 §2), with `FLEET_TENANTS=1` (and one round in the smoke run):
//! PostgreSQL, latency 0, S = 64, W = 4, rounds interleaved, tenants off (the workers connect as
//! the superuser, as every other configuration: row-level security is bypassed) against on (as a
//! role without BYPASSRLS, in a tenant: every statement filtered by the policy, the tenant set
//! in each BEGIN). Printed: CPU per cycle (the workers and PostgreSQL together) and round trips
//! per cycle, each way, and their ratios.

use std::path::Path;
use std::time::Duration;

use serde_json::{Value, json};

use super::{Backend, Config, measure, print, proc, record, worker};

/// The role the tenants' workers connect as.
const ROLE: &str = "planlock_fleet_app";

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
    let rounds = match (quick, std::env::var_os("FLEET_TENANTS").is_some()) {
        (_, true) => 3,
        (true, false) => 1,
        (false, false) => return,
    };
    // The schema and the queue first (the workers would make them), then the role and its
    // rights on them.
    drop(planlock::pg::PgDatabase::connect(url).unwrap());
    worker::fill_queue(url, "tenants-setup", 0);
    let mut client = postgres::Client::connect(url, postgres::NoTls).unwrap();
    let as_app = super::common::pg::app_role(&mut client, url, ROLE);
    client
        .batch_execute(&format!(
            "GRANT ALL ON ALL TABLES IN SCHEMA public TO {ROLE};
             GRANT ALL ON ALL SEQUENCES IN SCHEMA public TO {ROLE};"
        ))
        .unwrap();
    let config = Config { backend: Backend::Postgres, latency_ms: 0, sessions: 64, workers: 4 };
    // [off, on]: CPU ms per cycle, round trips per cycle.
    let mut cpu = [Vec::new(), Vec::new()];
    let mut trips = [Vec::new(), Vec::new()];
    for round in 0..rounds {
        for tenants in [false, true] {
            let tag = format!("tenants-{round}-{tenants}");
            worker::fill_queue(url, &tag, config.sessions);
            let place = if tenants { as_app.as_str() } else { url };
            let commands = (0..config.workers)
                .map(|w| {
                    let mut cmd = worker::command(config, w, &tag, place, &model.url, policy, plan, window);
                    match tenants {
                        true => cmd.env("FLEET_TENANT", "fleet"),
                        false => cmd.env_remove("FLEET_TENANT"),
                    };
                    cmd
                })
                .collect();
            let Some(f) = measure(config, window, Some(pg), model, commands) else { continue };
            let cycles = f.all_cycles.max(1) as f64;
            cpu[tenants as usize].push(
                f.cpu_parts.iter().filter(|(n, _)| *n != "model server").map(|p| p.1).sum::<f64>() / cycles * 1e3,
            );
            trips[tenants as usize].push(f.round_trips.unwrap_or(0) as f64 / cycles);
            let system = if tenants { "planlock, tenants on (RLS)" } else { "planlock, tenants off" };
            print(system, config, &f, None);
            records.push(record(system, config, &f));
        }
    }
    let mean = |v: &[f64]| v.iter().sum::<f64>() / v.len().max(1) as f64;
    let (off, on) = (mean(&cpu[0]), mean(&cpu[1]));
    let (trips_off, trips_on) = (mean(&trips[0]), mean(&trips[1]));
    println!(
        "== tenants: CPU per cycle (workers and PostgreSQL) {on:.3} ms with tenants on, {off:.3} ms off: {:.3}x; \
         round trips per cycle {trips_on:.2} on, {trips_off:.2} off ({rounds} rounds each, interleaved)",
        on / off
    );
    records.push(json!({ "system": "tenants overhead", "cpuMsOn": on, "cpuMsOff": off, "ratio": on / off,
        "roundTripsOn": trips_on, "roundTripsOff": trips_off }));
}
