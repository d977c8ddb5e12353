//! `cargo wop dev --host-dir DIR [--provider P] [--model M] [--timeout-ms N] [--watch]`: the
//! folder form of the crate's packs, built into a local packs folder that openwop-app mounts, and
//! the environment it needs to mount them.
//!
//! openwop-app (backend/typescript) dev-mounts every folder of `OPENWOP_LOCAL_PACKS_DIR` whose
//! name starts with one of `OPENWOP_LOCAL_PACK_PREFIXES` (comma-separated); its default prefixes
//! leave `community.` out, so the pack's own name is printed as the prefix.
//!
//! openwop-app requires a provider and a model on every call: the pack's defaults for calls that
//! name none come from `--provider`/`--model` (and `--timeout-ms`) as with `cargo wop build`, and
//! each one not given from the crate's last successful `cargo wop build`
//! ([`crate::last_build`]). Where each came from is printed.
//!
//! `--watch` then watches the crate's sources ([`crate::watch`]) and, on a change, builds and
//! mounts again. Each pack folder is replaced whole (`wop_sdk_host::pack::write_pack_files`
//! writes it beside the old one and renames it into place), so a host that loaded the old addon
//! keeps it; a build that fails leaves the mount as it was. openwop-app imports a pack once, when
//! it starts: it runs the new build only once restarted.

use crate::build::{self, BuildArgs};
use crate::last_build::{self, LastBuild};
use crate::{Failure, crate_dir, progress};
use clap::Args;
use std::path::{Path, PathBuf};

#[derive(Debug, Args)]
pub(crate) struct DevArgs {
    /// The local packs folder openwop-app mounts (`OPENWOP_LOCAL_PACKS_DIR`); created if missing.
    #[arg(long, value_name = "DIR")]
    host_dir: PathBuf,
    /// The provider of calls that name none, when the node's configuration names none (default:
    /// the last `cargo wop build`'s).
    #[arg(long, value_name = "PROVIDER")]
    provider: Option<String>,
    /// The model of calls that name none, when the node's configuration names none (default: the
    /// last `cargo wop build`'s).
    #[arg(long, value_name = "MODEL")]
    model: Option<String>,
    /// The node timeout when the node's configuration has no `timeoutMs` (default: the last
    /// `cargo wop build`'s, else 300000).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..))]
    timeout_ms: Option<u64>,
    /// After the first build, watch the crate's sources and build and mount again on each change
    /// (Ctrl-C ends).
    #[arg(long)]
    watch: bool,
    /// The pack crate's Cargo.toml (default: the current folder's).
    #[arg(long, value_name = "FILE")]
    manifest_path: Option<PathBuf>,
}

/// The value dev builds with, and where it came from.
fn source<T>(
    flag: &str,
    given: Option<T>,
    recorded: Option<T>,
    file: &Path,
) -> (Option<T>, String) {
    match (given, recorded) {
        (Some(v), _) => (Some(v), format!("from {flag}")),
        (None, Some(v)) => (Some(v), format!("from the last build, {}", file.display())),
        (None, None) => (None, format!("no {flag}, and no last build recorded one")),
    }
}

/// The pack defaults dev builds with: each flag given, else the last build's; each printed with
/// where it came from.
fn defaults(args: &DevArgs, dir: &Path) -> Result<LastBuild, Failure> {
    for (flag, value) in [("--provider", &args.provider), ("--model", &args.model)] {
        if value.as_deref().is_some_and(str::is_empty) {
            return Err(Failure::usage(format!("{flag}: must not be empty")));
        }
    }
    let recorded = last_build::read(dir).unwrap_or_default();
    let file = last_build::path(dir);
    let (provider, from) = source(
        "--provider",
        args.provider.clone(),
        recorded.provider,
        &file,
    );
    progress(&match &provider {
        Some(p) => format!("dev: provider `{p}` ({from})"),
        None => format!("dev: provider none ({from})"),
    });
    let (model, from) = source("--model", args.model.clone(), recorded.model, &file);
    progress(&match &model {
        Some(m) => format!("dev: model `{m}` ({from})"),
        None => format!("dev: model none ({from})"),
    });
    let (timeout_ms, from) = source("--timeout-ms", args.timeout_ms, recorded.timeout_ms, &file);
    progress(&match timeout_ms {
        Some(n) => format!("dev: timeout {n} ms ({from})"),
        None => format!(
            "dev: timeout {} ms, the default ({from})",
            wop_sdk_host::pack::DEFAULT_TIMEOUT_MS
        ),
    });
    Ok(LastBuild {
        provider,
        model,
        timeout_ms,
    })
}

/// The line that starts openwop-app with the packs of `folders` mounted from `dir`.
fn print_mount(dir: &Path, folders: &[PathBuf]) {
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
}

pub(crate) fn run(args: &DevArgs) -> Result<(), Failure> {
    let krate = crate_dir(args.manifest_path.as_ref())?;
    let used = defaults(args, &krate)?;
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
    let build = BuildArgs::folder_into(dir.clone(), args.manifest_path.clone(), used);
    let first = build::packs(&build);
    if !args.watch {
        print_mount(&dir, &first?);
        return Ok(());
    }
    match first {
        Ok(folders) => print_mount(&dir, &folders),
        Err(f) => {
            eprintln!("error: {}", f.message);
            progress(
                "the first build failed: the packs folder is as it was; watching for a change",
            );
        }
    }
    crate::watch::run(&krate, |changed| {
        let changed = changed.join(", ");
        progress(&format!("changed: {changed}: building again"));
        match build::packs(&build) {
            Ok(folders) => {
                let names: Vec<String> = folders
                    .iter()
                    .filter_map(|f| f.file_name().map(|n| n.to_string_lossy().into_owned()))
                    .collect();
                progress(&format!(
                    "rebuilt and re-mounted {} in {} (changed: {changed})",
                    names.join(", "),
                    dir.display()
                ));
                print_mount(&dir, &folders);
                progress(
                    "openwop-app imports a pack once, when it starts: restart it to load this build (in its `npm run dev`, a `tsx watch`, press Return; or stop it and run the line above again)",
                );
            }
            Err(f) => {
                eprintln!("error: {}", f.message);
                progress(&format!(
                    "the rebuild failed (changed: {changed}): the previous mount stays; watching for the next change"
                ));
            }
        }
    })
}
