//! The `book_ai` example binary, for the tests that run it (`tests/cli/`, `tests/spec_v2/`,
//! `tests/openai/`).
//!
//! `CARGO_BIN_EXE_*` exists only for `[[bin]]` targets, so the test asks cargo itself to build the
//! example once (`cargo build --example book_ai`, the same cargo, the same target dir and
//! profile; a no-op when `cargo test` already built it) and runs it from
//! `<target>/<profile>/examples/`, a sibling of the `deps/` folder the test runs from. Cargo
//! releases its build lock before it runs tests, so the nested build does not wait; it also keeps
//! a test from ever running a stale binary.

use std::path::PathBuf;
use std::process::Command;
use std::sync::OnceLock;

/// The example binary, built once per test process.
pub fn book_ai_binary() -> PathBuf {
    static BUILT: OnceLock<PathBuf> = OnceLock::new();
    BUILT
        .get_or_init(|| {
            let status = Command::new(env!("CARGO"))
                .args([
                    "build",
                    "--quiet",
                    "-p",
                    "wop-sdk-workspace",
                    "--example",
                    "book_ai",
                ])
                .current_dir(concat!(env!("CARGO_MANIFEST_DIR"), "/../.."))
                .status()
                .expect("cargo runs");
            assert!(status.success(), "`cargo build --example book_ai` failed");
            let exe = std::env::current_exe().expect("current exe");
            let profile_dir = exe
                .parent()
                .and_then(|deps| deps.parent())
                .expect("<target>/<profile>/deps/<test>");
            let bin = profile_dir
                .join("examples")
                .join(format!("book_ai{}", std::env::consts::EXE_SUFFIX));
            assert!(bin.exists(), "{} is missing", bin.display());
            bin
        })
        .clone()
}
