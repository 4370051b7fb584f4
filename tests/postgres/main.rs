//! PostgreSQL for many workers on many machines, against a real server this harness starts
//! (`initdb`/`pg_ctl` from the Debian `postgresql` package, in a temporary directory, on a Unix
//! socket), never a mock:
//!
//! - migrations: idempotent, concurrent, a newer schema refused;
//! - the storage ports pass the same conformance suite as SQLite, and `postgres-semantic` the
//!   semantic tests too (by meaning, exact, bounded);
//! - a cycle's writes travel with its save: two round trips a cycle, each write's failure its
//!   step's, each step's result the one the database holds;
//! - the lease and fencing: "session in use", take-over after expiry, a fenced worker writes
//!   nothing; bad session keys;
//! - 8 worker processes × 64 sessions × 20 cycles pulling keys from a queue table
//!   (`FOR UPDATE SKIP LOCKED`): every session's cycle equals its completed cycles, no cycle
//!   number missing or repeated, one memory per completed cycle;
//! - a worker SIGSTOPped while holding a lease is taken over and, continued, refused;
//! - workers SIGKILLed mid-cycle (100 times): no row torn, every session resumes;
//! - the server stopped and restarted mid-run: failures carry their step's kind, nothing
//!   acknowledged is lost;
//! - bad connections: a wrong password or URL, a server that never answers (bounded by the
//!   connect timeout), and the CLI's exit codes for them.
//!
//! This binary is its own harness (one server for all tests, stopped at the end); run with a
//! `PLANLOCK_PG_WORKER` variable it is a worker process.

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Write};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use planlock::demo::Demo;
use planlock::pg::{PgDatabase, PgError, PgOptions};
use planlock::runtime::{RunOutcome, Runtime};
use planlock::session::postgres::PgSessionStore;
use planlock::session::{BeforeSave, SessionError, SessionStore, SessionUpdate};
use planlock::store::StoreHandlers;
use planlock::store::bundle::{BundleManifest, StrategyResolver};
use planlock::store::postgres::PgStore;
use planlock::{Failure, FailureKind, StepStatus, StepType, ValidPlan};
use serde_json::{Value, json};

mod approvals;
mod batch;
mod budgets;
#[path = "../common/mod.rs"]
mod common;
mod fixture;
mod fleet;
mod meaning;
mod outside;
mod pgvector;
mod storage;
mod tenants;
mod upgrade;
mod worker;
use approvals::*;
use batch::*;
use budgets::*;
use common::around::Around;
use common::pg::PgServer;
use fixture::*;
use fleet::*;
use meaning::*;
use outside::*;
use pgvector::*;
use storage::*;
use tenants::*;
use upgrade::*;
use worker::*;

// ---------------------------------------------------------------- the harness

type Test = fn(&PgServer);

const TESTS: &[(&str, Test)] = &[
    (
        "a_cycles_writes_are_durable_with_its_save_or_not_at_all",
        a_cycles_writes_are_durable_with_its_save_or_not_at_all,
    ),
    ("cycles_run_inside_a_tokio_runtime", cycles_run_inside_a_tokio_runtime),
    ("a_store_refuses_another_sessions_cycle", a_store_refuses_another_sessions_cycle),
    ("a_cycles_writes_travel_with_its_save_in_one_round_trip", a_cycles_writes_travel_with_its_save_in_one_round_trip),
    ("a_write_failing_in_the_batch_fails_its_own_step", a_write_failing_in_the_batch_fails_its_own_step),
    ("a_batched_write_returns_what_its_key_holds", a_batched_write_returns_what_its_key_holds),
    ("the_write_functions_answer_as_the_embedded_stores_do", the_write_functions_answer_as_the_embedded_stores_do),
    (
        "a_crowd_of_sessions_waits_for_connections_without_holding_threads",
        a_crowd_of_sessions_waits_for_connections_without_holding_threads,
    ),
    ("a_cycles_two_retrievals_share_one_read", a_cycles_two_retrievals_share_one_read),
    ("the_same_keyed_write_from_two_workers_happens_once", the_same_keyed_write_from_two_workers_happens_once),
    ("many_open_sessions_share_a_small_pool", many_open_sessions_share_a_small_pool),
    (
        "migrations_are_idempotent_concurrent_and_refuse_a_newer_schema",
        migrations_are_idempotent_concurrent_and_refuse_a_newer_schema,
    ),
    ("the_storage_ports_pass_the_conformance_suite", the_storage_ports_pass_the_conformance_suite),
    (
        "postgres_semantic_passes_the_conformance_suite_and_the_semantic_tests",
        postgres_semantic_passes_the_conformance_suite_and_the_semantic_tests,
    ),
    ("a_semantic_cycle_writes_its_vectors_with_its_save", a_semantic_cycle_writes_its_vectors_with_its_save),
    (
        "the_exact_ranking_is_bounded_and_says_what_it_left_to_the_words",
        the_exact_ranking_is_bounded_and_says_what_it_left_to_the_words,
    ),
    ("damaged_vectors_are_passed_over", damaged_vectors_are_passed_over),
    ("a_search_by_meaning_under_a_budget_reads_its_own_rows", a_search_by_meaning_under_a_budget_reads_its_own_rows),
    (
        "the_pgvector_tier_is_installed_written_and_searched_or_refused",
        the_pgvector_tier_is_installed_written_and_searched_or_refused,
    ),
    ("the_pgvector_tier_recalls_the_exact_ranking", the_pgvector_tier_recalls_the_exact_ranking),
    ("a_tenant_can_never_reach_another_tenants_sessions", a_tenant_can_never_reach_another_tenants_sessions),
    (
        "sixty_four_cycles_on_four_workers_make_exactly_the_calls_the_budget_fits",
        sixty_four_cycles_on_four_workers_make_exactly_the_calls_the_budget_fits,
    ),
    (
        "a_killed_workers_reservation_is_charged_when_its_lease_runs_out",
        a_killed_workers_reservation_is_charged_when_its_lease_runs_out,
    ),
    ("a_budget_costs_a_warm_cycle_no_round_trip", a_budget_costs_a_warm_cycle_no_round_trip),
    ("a_cycle_the_budget_cannot_cover_sends_nothing", a_cycle_the_budget_cannot_cover_sends_nothing),
    (
        "a_tenants_budget_is_its_own_and_a_prefix_budget_narrows_it",
        a_tenants_budget_is_its_own_and_a_prefix_budget_narrows_it,
    ),
    ("a_search_past_its_deadline_is_cancelled_by_the_server", a_search_past_its_deadline_is_cancelled_by_the_server),
    (
        "the_lease_refuses_a_second_worker_and_fences_a_stalled_one",
        the_lease_refuses_a_second_worker_and_fences_a_stalled_one,
    ),
    ("the_cli_runs_and_resumes_a_session_in_the_database", the_cli_runs_and_resumes_a_session_in_the_database),
    ("a_database_written_by_0_1_reads_the_same_and_resumes", a_database_written_by_0_1_reads_the_same_and_resumes),
    (
        "a_worker_acts_on_a_decision_from_another_process_without_a_restart",
        a_worker_acts_on_a_decision_from_another_process_without_a_restart,
    ),
    ("the_console_decides_on_a_database_session", the_console_decides_on_a_database_session),
    ("one_backend_one_pool_per_url", one_backend_one_pool_per_url),
    (
        "one_decision_per_pause_when_two_decide_at_once_on_postgres",
        one_decision_per_pause_when_two_decide_at_once_on_postgres,
    ),
    (
        "racing_two_person_approvals_count_each_person_once_on_postgres",
        racing_two_person_approvals_count_each_person_once_on_postgres,
    ),
    (
        "an_edit_restarts_the_count_and_runs_its_payload_on_postgres",
        an_edit_restarts_the_count_and_runs_its_payload_on_postgres,
    ),
    (
        "random_edits_and_approvals_run_exactly_the_approved_bytes_on_postgres",
        random_edits_and_approvals_run_exactly_the_approved_bytes_on_postgres,
    ),
    ("notifications_are_delivered_from_the_database", notifications_are_delivered_from_the_database),
    ("two_workers_act_on_each_decision_once_on_postgres", two_workers_act_on_each_decision_once_on_postgres),
    (
        "an_approved_run_killed_before_or_after_its_save_consumes_once_on_postgres",
        an_approved_run_killed_before_or_after_its_save_consumes_once_on_postgres,
    ),
    (
        "a_cycle_paused_between_its_writes_keeps_the_writes_before_each_pause",
        a_cycle_paused_between_its_writes_keeps_the_writes_before_each_pause,
    ),
    (
        "bad_connections_fail_clearly_and_quickly_without_the_password",
        bad_connections_fail_clearly_and_quickly_without_the_password,
    ),
    (
        "a_stopped_worker_is_taken_over_and_refused_when_it_continues",
        a_stopped_worker_is_taken_over_and_refused_when_it_continues,
    ),
    ("the_workers_example_runs_its_queue_to_the_end", the_workers_example_runs_its_queue_to_the_end),
    ("eight_workers_run_64_sessions_20_cycles_each_exactly", eight_workers_run_64_sessions_20_cycles_each_exactly),
    (
        "workers_killed_mid_cycle_leave_no_torn_row_and_every_session_resumes",
        workers_killed_mid_cycle_leave_no_torn_row_and_every_session_resumes,
    ),
    (
        "a_server_restart_fails_cycles_with_their_kind_and_loses_nothing",
        a_server_restart_fails_cycles_with_their_kind_and_loses_nothing,
    ),
    ("rules_installed_for_a_tenant_hold_there_and_only_there", rules_installed_for_a_tenant_hold_there_and_only_there),
    (
        "a_tenant_is_its_own_behind_a_pooler_that_drops_startup_options",
        a_tenant_is_its_own_behind_a_pooler_that_drops_startup_options,
    ),
    ("a_tenant_is_its_own_behind_a_transaction_pooler", a_tenant_is_its_own_behind_a_transaction_pooler),
    ("every_statement_names_its_tenant", every_statement_names_its_tenant),
    ("every_key_carries_the_tenant", every_key_carries_the_tenant),
    (
        "a_role_that_sees_every_tenant_needs_a_tenant_or_reads_only",
        a_role_that_sees_every_tenant_needs_a_tenant_or_reads_only,
    ),
];

fn main() {
    if let Ok(mode) = std::env::var("PLANLOCK_PG_WORKER") {
        return worker(&mode);
    }
    let filter: Vec<String> = std::env::args().skip(1).filter(|a| !a.starts_with('-')).collect();
    let Some(server) = PgServer::start() else {
        assert!(
            std::env::var("CI").is_err(),
            "no PostgreSQL server is installed; .ci/run installs the `postgresql` package"
        );
        eprintln!(
            "\n    ==================== SKIPPED ====================\n    \
             No PostgreSQL server (/usr/lib/postgresql/*/bin/pg_ctl): the PostgreSQL tests did not run.\n    \
             Install Debian's `postgresql` package (`.ci/run` does) to run them.\n    \
             =================================================\n"
        );
        return;
    };
    // Debian's server, then `.ci/pgvector`'s PostgreSQL 18 with pgvector (required under CI).
    let pgvector = common::pg::pgvector_bin();
    assert!(
        pgvector.is_some() || std::env::var("CI").is_err(),
        "no PostgreSQL 18 with pgvector: .ci/run installs it with .ci/pgvector (PLANLOCK_PGVECTOR)"
    );
    let mut failed = Vec::new();
    let servers = std::iter::once(server).chain(pgvector.map(|bin| PgServer::start_at(&bin, false)));
    for server in servers {
        println!("== on the server of {}", server.origin().display());
        for (name, test) in
            TESTS.iter().filter(|(name, _)| filter.is_empty() || filter.iter().any(|f| name.contains(f.as_str())))
        {
            println!("test {name} ...");
            let started = Instant::now();
            match std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| test(&server))) {
                Ok(()) => println!("test {name} ... ok ({:.1} s)", started.elapsed().as_secs_f64()),
                Err(_) => {
                    println!("test {name} ... FAILED");
                    failed.push(format!("{name} on {}", server.origin().display()));
                }
            }
        }
    }
    if !failed.is_empty() {
        eprintln!("failed: {failed:?}");
        std::process::exit(101);
    }
}
