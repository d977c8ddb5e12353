//! The harness of openwop-app's contract (`tests/harness/openwop_host.mjs`) run in a real Node
//! process on a scenario, its report read back.

use serde_json::Value;
use std::path::Path;
use std::process::Command;
use std::sync::atomic::{AtomicU64, Ordering};

/// Runs the harness on `scenario` (written to a file of its own) and answers its report. The
/// host kind comes from the scenario alone: `WOP_SDK_HOST_CAPABILITIES` is not handed on.
pub fn run(scenario: &Value) -> Value {
    static NEXT: AtomicU64 = AtomicU64::new(0);
    let file = std::env::temp_dir().join(format!(
        "wop-scenario-{}-{}.json",
        std::process::id(),
        NEXT.fetch_add(1, Ordering::Relaxed)
    ));
    std::fs::write(&file, scenario.to_string()).expect("scenario written");
    let harness = Path::new(env!("CARGO_MANIFEST_DIR")).join("../harness/openwop_host.mjs");
    let out = Command::new("node")
        .arg(harness)
        .arg(&file)
        .env_remove("WOP_SDK_HOST_CAPABILITIES")
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
