//! The contract's tests, one binary with a module per area: the shared corpus (`tests/corpus/`,
//! which the Python and Node suites read too), the builder, canonical JSON, the plan hash and its
//! profile files, YAML, and properties of all of them. They need nothing but this crate:
//! `cargo test -p planlock-contract -p planlock-contract-ui` runs them with the compile-fail tests
//! (`ui-tests/`).
//!
//! Run one area with its module's name: `cargo test -p planlock-contract --test it corpus`.

mod builder;
mod canonical_json;
mod compact;
mod corpus;
mod grammar;
mod plan_hash;
mod profile;
mod properties;
mod yaml;

/// The repository's root: the shared corpus, fixtures and examples live there, beside the
/// bindings that read them too.
fn repo() -> &'static std::path::Path {
    std::path::Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/.."))
}
