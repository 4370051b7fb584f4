//! planlock's integration tests, one binary with a module per area (linking one executable, not
//! one per file). The harnesses that control processes — `crash`, `crash_points`, `models`,
//! `telemetry`, `postgres` — are their own binaries; all share
//! `tests/common/`.
//!
//! Run one area with its module's name: `cargo test --test it approvals`. The contract's tests (the
//! corpus, the builder, canonical JSON, the hash; the compile-fail tests) are in `contract/tests/`.

#[path = "../common/mod.rs"]
mod common;

mod approvals;
mod bare_backend;
mod budgets;
mod bundle;
mod cli;
mod cli_edges;
mod cli_grammar;
mod cli_json;
mod cli_run;
mod console;
mod console_pages;
mod edit;
mod executor;
mod history;
mod hostile_templates;
mod ids;
mod layers;
mod lifecycle;
mod openai;
mod people;
mod planner;
mod planner_choices;
mod prompts;
mod readme;
mod records;
mod rules;
mod runtime;
mod secrets;
mod semantic;
mod session;
mod store;
mod store_files;
mod terminal;
mod triage;
mod typescript;
mod upgrade;
mod vectors;
mod webhooks;
mod worker;
