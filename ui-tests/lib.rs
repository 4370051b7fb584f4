//! Nothing but a home for `tests/ui.rs`: the compile-fail and compile-pass tests of
//! `planlock_contract::PlanBuilder`, whose cases are in `cases/`. A crate of its own, so that
//! trybuild compiles the contract and its few dependencies, not the test tools of the contract's
//! own tests.
