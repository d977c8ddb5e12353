//! Compile-time behaviour of the macros and of the runtime's types: every mistake in
//! `tests/ui/*.rs` must fail with the reviewed `.stderr`; every form in `tests/ui/pass/` compiles.

#[test]
fn ui() {
    let t = trybuild::TestCases::new();
    t.compile_fail("tests/ui/*.rs");
    t.pass("tests/ui/pass/*.rs");
}
