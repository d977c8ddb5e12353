//! `cargo wop`: the pack author's tool, from `cargo new` to the folder a host mounts.
//!
//! ```text
//! cargo wop new NAME [--pack community.OWNER.PACK] [--sdk-path DIR]
//!                                   a pack crate: a node with a typed call, its test, the pack
//! cargo wop build [--release] [--folder] [--out DIR] [--provider P] [--model M]
//!                                   the Node addon, then the pack folder (single-file by default)
//! cargo wop dev --host-dir DIR [--out DIR]
//!                                   the folder form, mounted into openwop-app's local packs folder
//! ```
//!
//! Errors name the file, the field and the rule; progress goes to standard error. Exit codes:
//! 0 success, 1 a failure, 2 a usage error.
//!
//! Not built yet: `keygen`, `sign`, `publish` and `check` (the registry's staging layout, the
//! Ed25519 signature of `pack.json`, the registry's gates). See `docs/CHANGELOG.md`.

mod build;
mod dev;
mod new;

use clap::{Parser, Subcommand};
use std::path::PathBuf;
use std::process::ExitCode;

/// `cargo` runs `cargo-wop wop ARGS`: the extra `wop` is dropped.
#[derive(Debug, Parser)]
#[command(name = "cargo", bin_name = "cargo")]
enum Cargo {
    /// The OpenWOP pack author's tool.
    #[command(version)]
    Wop(Wop),
}

#[derive(Debug, clap::Args)]
struct Wop {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// A new pack crate: one node with a typed call, its test on the local host, and the pack.
    New(new::NewArgs),
    /// Builds the pack's Node addon (no build.rs, no second crate) and writes the pack folder.
    Build(build::BuildArgs),
    /// Builds the folder form and mounts it into openwop-app's local packs folder.
    Dev(dev::DevArgs),
}

/// A failure: the message names the file, the field and the rule.
#[derive(Debug)]
pub(crate) struct Failure {
    pub(crate) exit: u8,
    pub(crate) message: String,
}

impl Failure {
    pub(crate) fn usage(message: impl Into<String>) -> Self {
        Self {
            exit: 2,
            message: message.into(),
        }
    }

    pub(crate) fn failed(message: impl Into<String>) -> Self {
        Self {
            exit: 1,
            message: message.into(),
        }
    }
}

/// A line on standard error.
pub(crate) fn progress(line: &str) {
    eprintln!("{line}");
}

/// The crate `cargo wop` works on: the current folder's, unless `--manifest-path` names one.
pub(crate) fn crate_dir(manifest_path: Option<&PathBuf>) -> Result<PathBuf, Failure> {
    let dir = match manifest_path {
        Some(p) => p.parent().map(PathBuf::from).unwrap_or_default(),
        None => std::env::current_dir()
            .map_err(|e| Failure::failed(format!("cannot read the current folder: {e}")))?,
    };
    if !dir.join("Cargo.toml").is_file() {
        return Err(Failure::usage(format!(
            "{}: no Cargo.toml here; run `cargo wop` in a pack crate (made by `cargo wop new`) or give --manifest-path",
            dir.display()
        )));
    }
    Ok(dir)
}

fn main() -> ExitCode {
    let Cargo::Wop(wop) = Cargo::parse();
    let result = match wop.command {
        Command::New(args) => new::run(&args),
        Command::Build(args) => build::run(&args).map(|_| ()),
        Command::Dev(args) => dev::run(&args),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(f) => {
            eprintln!("error: {}", f.message);
            ExitCode::from(f.exit)
        }
    }
}
