//! The harness of openwop-app's contract (`cargo-wop/harness/openwop_host.mjs`) run in a real Node
//! process on a scenario, its report read back.

use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicU64, Ordering};

/// Runs the harness on `scenario` (written to a file of its own) and answers its report. The
/// host kind comes from the scenario alone: `WOP_SDK_HOST_CAPABILITIES` is not handed on. A
/// single-file pack writes its addon to a folder of this run's, removed with it: the tests leave
/// nothing in the system's temp dir.
pub fn run(scenario: &Value) -> Value {
    let addons = temp_path("wop-addons", "");
    let report = run_with_addon_dir(scenario, &addons);
    let _ = std::fs::remove_dir_all(&addons);
    report
}

/// [`run`], with `WOP_SDK_ADDON_DIR` (where a single-file pack writes its addon) set to `dir`,
/// which is left as the run left it.
pub fn run_with_addon_dir(scenario: &Value, dir: &Path) -> Value {
    let file = temp_path("wop-scenario", ".json");
    std::fs::write(&file, scenario.to_string()).expect("scenario written");
    let harness =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../cargo-wop/harness/openwop_host.mjs");
    let out = Command::new("node")
        .arg(harness)
        .arg(&file)
        .env_remove("WOP_SDK_HOST_CAPABILITIES")
        .env("WOP_SDK_ADDON_DIR", dir)
        .output()
        .expect("node runs (Node 20 is on every machine)");
    let _ = std::fs::remove_file(&file);
    assert!(
        out.status.success(),
        "the harness's Node process ended with {}: {}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("the report is JSON")
}

/// A path in the temp dir no other run of this process uses.
fn temp_path(stem: &str, suffix: &str) -> PathBuf {
    static NEXT: AtomicU64 = AtomicU64::new(0);
    std::env::temp_dir().join(format!(
        "{stem}-{}-{}{suffix}",
        std::process::id(),
        NEXT.fetch_add(1, Ordering::Relaxed)
    ))
}
