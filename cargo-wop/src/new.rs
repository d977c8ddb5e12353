//! `cargo wop new NAME`: a pack crate that builds, tests and packs, with no second crate and no
//! build.rs.

use crate::{Failure, progress};
use clap::Args;
use std::path::{Path, PathBuf};
use wop_sdk_rules::grammar::pack_name_problem;

/// Where the SDK this `cargo wop` was built from lives: the default of `--sdk-path`.
const SDK: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/..");

#[derive(Debug, Args)]
pub(crate) struct NewArgs {
    /// The crate's folder (created; must not exist) and its name.
    name: PathBuf,
    /// The pack's name: `community.<owner>.<pack>`, or `vendor.<org>.<pack>` for an
    /// organization's (`core.*` and `private.*` are not a pack author's); default
    /// `community.local.<NAME>`.
    #[arg(long, value_name = "NAME")]
    pack: Option<String>,
    /// The wop-sdk checkout the crate depends on by path (until the crates are on crates.io); by
    /// default the one this `cargo wop` was built from.
    #[arg(long, value_name = "DIR")]
    sdk_path: Option<PathBuf>,
}

fn write(path: &Path, text: &str) -> Result<(), Failure> {
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent)
            .map_err(|e| Failure::failed(format!("{}: cannot create: {e}", parent.display())))?;
    }
    std::fs::write(path, text)
        .map_err(|e| Failure::failed(format!("{}: cannot write: {e}", path.display())))
}

/// Why a pack author cannot take the namespace of `pack`: the registry reserves `core.*` for the
/// OpenWOP working group's spec-canonical packs, and `private.*` never appears in a registry.
fn author_namespace_problem(pack: &str) -> Option<String> {
    match pack.split('.').next() {
        Some("core") => Some(
            "`core.*` is reserved for the OpenWOP working group's spec-canonical packs; a pack author's pack is `community.<owner>.<pack>` (or `vendor.<org>.<pack>` for an organization's)".to_owned(),
        ),
        Some("private") => Some(
            "`private.*` is for a host's internal packs and never appears in a registry; a pack author's pack is `community.<owner>.<pack>` (or `vendor.<org>.<pack>`)".to_owned(),
        ),
        _ => None,
    }
}

pub(crate) fn run(args: &NewArgs) -> Result<(), Failure> {
    let dir = &args.name;
    let crate_name = dir
        .file_name()
        .and_then(|n| n.to_str())
        .filter(|n| {
            !n.is_empty()
                && n.chars().all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
                && n.starts_with(|c: char| c.is_ascii_lowercase())
        })
        .ok_or_else(|| {
            Failure::usage(format!(
                "NAME `{}`: a crate name starts with a lowercase letter and has only letters, digits, `-` and `_`",
                dir.display()
            ))
        })?;
    if dir.exists() {
        return Err(Failure::usage(format!(
            "{}: already exists; `cargo wop new` makes a new folder",
            dir.display()
        )));
    }
    let pack = args
        .pack
        .clone()
        .unwrap_or_else(|| format!("community.local.{}", crate_name.replace('_', "-")));
    if let Some(problem) = pack_name_problem(&pack).or_else(|| author_namespace_problem(&pack)) {
        return Err(Failure::usage(format!("--pack `{pack}`: {problem}")));
    }
    let sdk = args.sdk_path.clone().unwrap_or_else(|| PathBuf::from(SDK));
    let sdk = sdk
        .canonicalize()
        .map_err(|e| Failure::usage(format!("--sdk-path {}: {e}", sdk.display())))?;
    if !sdk.join("wop-sdk/Cargo.toml").is_file() {
        return Err(Failure::usage(format!(
            "--sdk-path {}: not a wop-sdk checkout (no wop-sdk/Cargo.toml)",
            sdk.display()
        )));
    }
    let fill = |t: &str| {
        t.replace("__CRATE__", crate_name)
            .replace("__LIB__", &crate_name.replace('-', "_"))
            .replace("__PACK__", &pack)
            .replace("__SDK__", &sdk.display().to_string())
    };
    write(
        &dir.join("Cargo.toml"),
        &fill(include_str!("template/Cargo.toml.txt")),
    )?;
    write(
        &dir.join("src/lib.rs"),
        &fill(include_str!("template/lib.rs.txt")),
    )?;
    write(
        &dir.join("tests/nodes.rs"),
        &fill(include_str!("template/test.rs.txt")),
    )?;
    write(
        &dir.join(crate::budget::INPUTS_FILE),
        &fill(include_str!("template/budget-inputs.json.txt")),
    )?;
    write(&dir.join(".gitignore"), "/target\n")?;
    // The versions the SDK is tested with: the new crate resolves to them (and shares a target
    // folder's builds with the SDK).
    if let Ok(lock) = std::fs::read_to_string(sdk.join("Cargo.lock")) {
        write(&dir.join("Cargo.lock"), &lock)?;
    }
    progress(&format!(
        "created {} (pack `{pack}`): `cargo test` runs its node on the local host; `cargo wop build` writes its pack folder",
        dir.display()
    ));
    Ok(())
}
