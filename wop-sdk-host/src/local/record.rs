//! What `cargo wop test` replays through the generated pack: with [`RECORD_DIR_VAR`] set, each
//! run the local host finishes while playing openwop-app ([`HostProfile::OpenwopApp`], its
//! settings unchanged) on the scripted provider is written to that folder as one JSON file: the
//! node's type id and input, the steps the run was served (the script format), and what the run
//! gave (its status, output or error code, and the provider requests it made).
//!
//! A run is left out when the host's settings are not the profile's (the harness of openwop-app's
//! contract plays the profile, not a variation of it), or when its script hangs or cuts a
//! connection (the harness has no such step).

use super::inner::Inner;
use super::profile::HostProfile;
use crate::provider::mock::Step;
use serde_json::{Value, json};
use std::sync::atomic::{AtomicU64, Ordering};
use wop_sdk::node::NodeOutcome;

/// The folder runs are recorded into (unset: nothing is recorded).
pub const RECORD_DIR_VAR: &str = "WOP_SDK_RECORD_DIR";

/// Whether `inner`'s runs are recorded: the variable is set, the host plays openwop-app with
/// its settings unchanged, and its provider is scripted.
pub(super) fn on(inner: &Inner) -> bool {
    std::env::var_os(RECORD_DIR_VAR).is_some()
        && inner.scripts.is_some()
        && inner.config == HostProfile::OpenwopApp.config().validated()
}

/// Writes the record of one finished run (see the module docs).
pub(super) fn write(inner: &Inner, type_id: &str, input: &Value, outcome: &NodeOutcome) {
    static WRITTEN: AtomicU64 = AtomicU64::new(0);
    let (Some(dir), Some(scripts)) = (std::env::var_os(RECORD_DIR_VAR), &inner.scripts) else {
        return;
    };
    let steps = scripts.served_to(&outcome.run_id);
    if steps.iter().any(|s| matches!(s, Step::Hang | Step::Cut)) {
        return;
    }
    let result = match &outcome.result {
        Ok(output) => json!({"status": "success", "outputs": output}),
        Err(e) => {
            json!({"status": "failure", "error": {"code": e.error.as_str(), "message": e.message}})
        }
    };
    let record = json!({
        "typeId": type_id,
        "input": input,
        "script": steps.iter().map(Step::to_json).collect::<Vec<_>>(),
        "outcome": result,
        "requests": scripts.requests_of(&outcome.run_id).len(),
    });
    let dir = std::path::PathBuf::from(dir);
    let n = WRITTEN.fetch_add(1, Ordering::SeqCst);
    let run: String = outcome
        .run_id
        .as_str()
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' {
                c
            } else {
                '_'
            }
        })
        .collect();
    let name = format!("{}-{n}-{run}.json", std::process::id());
    let written = std::fs::create_dir_all(&dir).and_then(|()| {
        let part = dir.join(format!(".{name}.part"));
        std::fs::write(&part, record.to_string())?;
        std::fs::rename(&part, dir.join(&name))
    });
    if let Err(e) = written {
        eprintln!(
            "wop-sdk: {RECORD_DIR_VAR}={}: the run could not be recorded: {e}",
            dir.display()
        );
    }
}
