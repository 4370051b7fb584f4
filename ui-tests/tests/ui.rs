//! Compile-fail and compile-pass tests of the typestate builder (trybuild).
//!
//! Compiler diagnostics change between releases, so these run only on the pinned toolchain
//! (`rust-toolchain.toml`); on any other compiler this file has no tests.

#[rustversion::stable(1.95)]
#[test]
fn builder_diagnostics() {
    let t = trybuild::TestCases::new();
    t.compile_fail("cases/fail/*.rs");
    t.pass("cases/pass/*.rs");
}
