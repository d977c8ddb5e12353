//! This test binary re-executed as a child process (`tests/redelivery.rs`, `tests/lease.rs`):
//! started to run one test function of its own, watched through marker files in a fresh folder,
//! and the SQLite journal in that folder opened again by the parent as a new process would.

#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::{Child, Command};
use std::time::{Duration, Instant};
use wop_sdk_host::local::{LocalHost, ScriptedProvider};

/// An empty folder `<temp>/<name>-<pid>`, whatever an earlier run left there.
pub fn fresh_dir(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("temp dir");
    dir
}

/// Starts this test binary again, running only the test fn `test` with `env` set.
pub fn spawn_self(test: &str, env: &[(&str, &Path)]) -> Child {
    let mut command = Command::new(std::env::current_exe().expect("test binary"));
    command.args(["--exact", test, "--nocapture", "--test-threads=1"]);
    for (key, value) in env {
        command.env(key, value);
    }
    command.spawn().expect("spawn the child")
}

/// Waits until `file` exists: the child reached `point`. Panics if the child ends first, or
/// after two minutes.
pub fn wait_for(child: &mut Child, file: &Path, point: &str) {
    let start = Instant::now();
    while !file.exists() {
        if let Ok(Some(status)) = child.try_wait() {
            panic!("the child ended before {point}: {status}");
        }
        assert!(
            start.elapsed() < Duration::from_secs(120),
            "the child never reached {point}"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// A local host on the SQLite journal in `dir`, as a new process would open it.
pub fn host_on_journal(dir: &Path, provider: &ScriptedProvider) -> LocalHost {
    LocalHost::builder()
        .provider(provider.clone())
        .sqlite_journal(dir.join("journal.sqlite"))
        .expect("open the journal")
        .build()
}

/// The child's runtime: one thread, timers and I/O on.
pub fn child_runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime")
}
