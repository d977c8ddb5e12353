//! `cargo wop`: the pack author's tool, from `cargo new` to the folder a host mounts.
//!
//! ```text
//! cargo wop new NAME [--pack community.OWNER.PACK | vendor.ORG.PACK] [--sdk-path DIR]
//!                                   a pack crate: a node with a typed call, its test, the pack
//! cargo wop build [--release] [--folder] [--out DIR] [--provider P] [--model M] [--timeout-ms N]
//!                 [--budget-inputs FILE] [--deny-budget-warnings]
//!                                   the Node addon, its budget check, then the pack folder
//!                                   (single-file by default); what it used is recorded in
//!                                   target/wop/last-build.json
//! cargo wop test [--provider P] [--model M] [-- CARGO TEST ARGS]
//!                                   the crate's tests, then each scripted run of a node on the
//!                                   openwop-app host again through the generated pack, under the
//!                                   harness of openwop-app's contract: the two must agree
//! cargo wop dev --host-dir DIR [--provider P] [--model M] [--timeout-ms N] [--watch]
//!                                   the folder form, mounted into openwop-app's local packs
//!                                   folder (each flag not given: the last build's); --watch
//!                                   builds and mounts again on each change of the sources
//! cargo wop keygen --key-id ID (--pack NAME | --namespace PATTERN…) [--out DIR]
//!                                   an Ed25519 key pair; prints the registry's signingKeys entry
//! cargo wop sign --key FILE [--key-id ID] [--pack-dir DIR]
//!                                   pack.json as RFC 8785 bytes with `signing`, and its signature
//! cargo wop publish --registry DIR --key FILE [--key-id ID] [--pack-dir DIR] [--add-key] [--v1-only]
//!                                   a registry pull request's files: staged, gated (ours and the
//!                                   registry's own scripts), then written
//! cargo wop check --registry DIR [--pack NAME [--version V]]
//!                                   the registry's gates, run locally
//! ```
//!
//! Errors name the file, the field and the rule; progress goes to standard error. Exit codes:
//! 0 success, 1 a failure, 2 a usage error.
//!

mod budget;
mod build;
mod check;
mod dev;
mod error;
mod folder;
mod keys;
mod last_build;
mod new;
mod publish;
mod sign;
mod tarball;
mod test;
mod watch;

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
    /// Runs the crate's tests, then each scripted run of a node on the openwop-app host again
    /// through the generated pack under the harness of openwop-app's contract, and fails when
    /// the two differ (status, output or error code, provider requests): the command to run
    /// before publishing.
    Test(test::TestArgs),
    /// Builds the folder form and mounts it into openwop-app's local packs folder (with
    /// `--watch`, again on each change of the crate's sources).
    Dev(dev::DevArgs),
    /// An Ed25519 key pair for signing packs (the private key outside any repository); prints
    /// the registry's `signingKeys` entry.
    Keygen(keys::KeygenArgs),
    /// Signs the built pack: pack.json as its RFC 8785 bytes with `signing {keyId, scheme}`, and
    /// the Ed25519 signature over them in keys/pack.json.sig.
    Sign(sign::SignArgs),
    /// Writes what a pull request to openwop-registry holds into a clone of it (the signed
    /// tarball as the registry's build-pack-tarball.mjs builds it, the source folder, the version
    /// manifests; the registry's build-index and generate-sbom run), after this tool's gates and
    /// the registry's own pass on a staging copy. The build folder is not changed.
    Publish(publish::PublishArgs),
    /// Runs this tool's gates on published versions in a registry folder, then, in a clone of
    /// openwop-registry, the registry's own (scripts/registry-check.sh).
    Check(check::CheckArgs),
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
        Command::Test(args) => test::run(&args),
        Command::Dev(args) => dev::run(&args),
        Command::Keygen(args) => keys::keygen(&args).map(|entry| {
            println!(
                "{}",
                serde_json::to_string_pretty(&entry).unwrap_or_default()
            );
        }),
        Command::Sign(args) => sign::run(&args).map(|dir| println!("{}", dir.display())),
        Command::Publish(args) => publish::run(&args).map(|path| println!("{}", path.display())),
        Command::Check(args) => check::run(&args).map(|n| {
            progress(&format!("check: {n} version(s), every gate passes"));
        }),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(f) => {
            eprintln!("error: {}", f.message);
            ExitCode::from(f.exit)
        }
    }
}
