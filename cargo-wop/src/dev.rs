//! `cargo wop dev --host-dir DIR`: the folder form of the crate's packs, copied into a local
//! packs folder that openwop-app mounts, and the environment it needs to mount them.
//!
//! openwop-app (backend/typescript) dev-mounts every folder of `OPENWOP_LOCAL_PACKS_DIR` whose
//! name starts with one of `OPENWOP_LOCAL_PACK_PREFIXES` (comma-separated); its default prefixes
//! leave `community.` out, so the pack's own name is printed as the prefix.

use crate::build::{self, BuildArgs};
use crate::{Failure, progress};
use clap::Args;
use std::path::PathBuf;

#[derive(Debug, Args)]
pub(crate) struct DevArgs {
    /// The local packs folder openwop-app mounts (`OPENWOP_LOCAL_PACKS_DIR`); created if missing.
    #[arg(long, value_name = "DIR")]
    host_dir: PathBuf,
    /// The pack crate's Cargo.toml (default: the current folder's).
    #[arg(long, value_name = "FILE")]
    manifest_path: Option<PathBuf>,
}

pub(crate) fn run(args: &DevArgs) -> Result<(), Failure> {
    std::fs::create_dir_all(&args.host_dir).map_err(|e| {
        Failure::failed(format!(
            "--host-dir {}: cannot create: {e}",
            args.host_dir.display()
        ))
    })?;
    let dir = args
        .host_dir
        .canonicalize()
        .map_err(|e| Failure::failed(format!("--host-dir {}: {e}", args.host_dir.display())))?;
    let folders = build::run(&BuildArgs::folder_into(
        dir.clone(),
        args.manifest_path.clone(),
    ))?;
    let prefixes: Vec<String> = folders
        .iter()
        .filter_map(|f| f.file_name().and_then(|n| n.to_str()).map(str::to_owned))
        .collect();
    progress("mount it in openwop-app (backend/typescript):");
    println!(
        "OPENWOP_LOCAL_PACKS_DIR={} OPENWOP_LOCAL_PACK_PREFIXES={} npm run dev",
        dir.display(),
        prefixes.join(",")
    );
    Ok(())
}
