//! `cargo wop test`: the crate's tests, then the same scripted runs through the generated pack.
//!
//! 1. `cargo test` runs with `WOP_SDK_RECORD_DIR` set: each run a test finishes on the local
//!    host playing openwop-app (its settings unchanged) with a scripted provider is recorded
//!    (`wop_sdk_host::local::RECORD_DIR_VAR`: the node's type id and input, the steps the run
//!    was served, its status, output or error code, and its provider requests).
//! 2. The addon is built and the folder form written (`target/wop-test/packs`).
//! 3. Each recorded run of a node of the crate's packs is run again by the harness of
//!    openwop-app's contract (`harness/openwop_host.mjs`, shipped inside this tool) through the
//!    generated `index.mjs`, with the same steps served.
//! 4. The two must agree on the status, the output (as JSON) or the error code, and the provider
//!    requests made; any that do not are listed, and the command fails.

use crate::build::{self, BuildArgs};
use crate::last_build::LastBuild;
use crate::{Failure, crate_dir, progress};
use clap::Args;
use serde_json::{Value, json};
use std::path::{Path, PathBuf};
use std::process::Command;
use wop_sdk_host::local::{OPENWOP_APP_PROVIDERS, RECORD_DIR_VAR};

/// The harness of openwop-app's contract, written next to the built packs when the command runs.
const HARNESS: [(&str, &str); 3] = [
    (
        "openwop_host.mjs",
        include_str!("../harness/openwop_host.mjs"),
    ),
    (
        "registry_install.mjs",
        include_str!("../harness/registry_install.mjs"),
    ),
    ("soak.mjs", include_str!("../harness/soak.mjs")),
];

#[derive(Debug, Args)]
pub(crate) struct TestArgs {
    /// The pack's default provider in the build the harness runs (what a call that names none
    /// is sent to).
    #[arg(long, value_name = "PROVIDER", default_value = "mock")]
    provider: String,
    /// The pack's default model in that build.
    #[arg(long, value_name = "MODEL", default_value = "mock-1")]
    model: String,
    /// The pack crate's Cargo.toml (default: the current folder's).
    #[arg(long, value_name = "FILE")]
    manifest_path: Option<PathBuf>,
    /// Arguments for `cargo test`, after `--` (e.g. `-- --test nodes`).
    #[arg(last = true, value_name = "CARGO TEST ARGS")]
    cargo_args: Vec<String>,
}

fn io(what: &Path, e: std::io::Error) -> Failure {
    Failure::failed(format!("{}: {e}", what.display()))
}

/// The recorded runs, in the order of their file names.
fn records(dir: &Path) -> Result<Vec<(PathBuf, Value)>, Failure> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .map_err(|e| io(dir, e))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "json"))
        .collect();
    files.sort();
    files
        .into_iter()
        .map(|f| {
            let text = std::fs::read_to_string(&f).map_err(|e| io(&f, e))?;
            let record = serde_json::from_str(&text).map_err(|e| {
                Failure::failed(format!("{}: a run's record is not JSON: {e}", f.display()))
            })?;
            Ok((f, record))
        })
        .collect()
}

/// The type ids of the nodes in the pack folders.
fn type_ids(folders: &[PathBuf]) -> Result<Vec<String>, Failure> {
    let mut ids = Vec::new();
    for folder in folders {
        let path = folder.join("pack.json");
        let text = std::fs::read_to_string(&path).map_err(|e| io(&path, e))?;
        let manifest: Value = serde_json::from_str(&text)
            .map_err(|e| Failure::failed(format!("{}: not JSON: {e}", path.display())))?;
        ids.extend(
            manifest["nodes"]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(|n| n["typeId"].as_str().map(str::to_owned)),
        );
    }
    Ok(ids)
}

/// What a run gave, as the two sides are compared: status, then the output or the error code,
/// then the provider requests.
fn summary(outcome: &Value, requests: &Value) -> Value {
    let status = &outcome["status"];
    if status == "success" {
        json!({"status": status, "outputs": outcome["outputs"], "requests": requests})
    } else {
        json!({"status": status, "code": outcome["error"]["code"], "requests": requests})
    }
}

/// Runs the harness on `scenario` (written into `work`), answering its report.
fn harness(work: &Path, scenario: &Value) -> Result<Value, Failure> {
    let dir = work.join("harness");
    std::fs::create_dir_all(&dir).map_err(|e| io(&dir, e))?;
    for (name, text) in HARNESS {
        std::fs::write(dir.join(name), text).map_err(|e| io(&dir.join(name), e))?;
    }
    let file = work.join("scenario.json");
    std::fs::write(&file, scenario.to_string()).map_err(|e| io(&file, e))?;
    let out = Command::new("node")
        .arg(dir.join("openwop_host.mjs"))
        .arg(&file)
        .output()
        .map_err(|e| {
            Failure::failed(format!(
                "cannot run `node` ({e}): `cargo wop test` runs the pack in Node (>= 20)"
            ))
        })?;
    if !out.status.success() {
        return Err(Failure::failed(format!(
            "the harness of openwop-app's contract failed on {}: {}",
            file.display(),
            String::from_utf8_lossy(&out.stderr).trim()
        )));
    }
    serde_json::from_slice(&out.stdout)
        .map_err(|e| Failure::failed(format!("the harness's report is not JSON: {e}")))
}

pub(crate) fn run(args: &TestArgs) -> Result<(), Failure> {
    let dir = crate_dir(args.manifest_path.as_ref())?;
    let work = dir.join("target/wop-test");
    let recorded = work.join("records");
    let _ = std::fs::remove_dir_all(&recorded);
    std::fs::create_dir_all(&recorded).map_err(|e| io(&recorded, e))?;
    progress(&format!(
        "running the crate's tests (cargo test), recording each scripted run on the openwop-app host into {}",
        recorded.display()
    ));
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let status = Command::new(cargo)
        .current_dir(&dir)
        .arg("test")
        .args(&args.cargo_args)
        .env(RECORD_DIR_VAR, &recorded)
        .status()
        .map_err(|e| Failure::failed(format!("cannot run cargo: {e}")))?;
    if !status.success() {
        return Err(Failure::failed(
            "the crate's tests failed (cargo test's output above): nothing was run through the pack",
        ));
    }
    let runs = records(&recorded)?;
    // Not recorded as the crate's last build: `cargo wop dev` keeps the author's own defaults.
    let folders = build::packs(&BuildArgs::folder_into(
        work.join("packs"),
        args.manifest_path.clone(),
        LastBuild {
            provider: Some(args.provider.clone()),
            model: Some(args.model.clone()),
            timeout_ms: None,
        },
    ))?;
    let ids = type_ids(&folders)?;
    let (ours, others): (Vec<_>, Vec<_>) = runs.into_iter().partition(|(_, r)| {
        r["typeId"]
            .as_str()
            .is_some_and(|t| ids.iter().any(|i| i == t))
    });
    if !others.is_empty() {
        progress(&format!(
            "{} recorded run(s) of nodes that are not in the crate's packs: not compared",
            others.len()
        ));
    }
    if ours.is_empty() {
        progress(
            "warning: no test ran a node of the crate's packs on the openwop-app host (`LocalHost::builder()`, \
             or `on_every_host`) with a scripted provider and the profile's settings: nothing was compared",
        );
        return Ok(());
    }
    let steps: Vec<Value> = ours
        .iter()
        .enumerate()
        .map(|(i, (_, r))| {
            json!({"runId": format!("run-{i}"), "nodeId": format!("node-{i}"), "typeId": r["typeId"],
                   "inputs": r["input"], "script": r["script"]})
        })
        .collect();
    let prefixes: Vec<String> = folders
        .iter()
        .filter_map(|f| f.file_name().and_then(|n| n.to_str()).map(str::to_owned))
        .collect();
    let report = harness(
        &work,
        &json!({"packsDir": work.join("packs"), "prefixes": prefixes,
                "providers": OPENWOP_APP_PROVIDERS, "steps": steps}),
    )?;
    let mut disagree = Vec::new();
    for (i, (file, record)) in ours.iter().enumerate() {
        let step = &report["steps"][i];
        let local = summary(&record["outcome"], &record["requests"]);
        let pack = summary(&step["outcome"], &step["requests"]);
        let name = record["typeId"].as_str().unwrap_or_default();
        if local == pack {
            progress(&format!("agrees: {name}: {local}"));
        } else {
            disagree.push(format!(
                "{name} ({}):\n  local host:        {local}\n  pack in the harness: {pack}",
                file.display()
            ));
        }
    }
    if disagree.is_empty() {
        progress(&format!(
            "cargo wop test: {} scripted run(s) give the same through the pack on openwop-app's contract",
            ours.len()
        ));
        return Ok(());
    }
    Err(Failure::failed(format!(
        "{} of {} scripted run(s) differ between the local host and the pack run through index.mjs \
         (status, output or error code, provider requests):\n{}",
        disagree.len(),
        ours.len(),
        disagree.join("\n")
    )))
}
