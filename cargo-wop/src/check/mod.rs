//! `cargo wop check`: this tool's gates on a published version, then, in a clone of
//! openwop-registry, the registry's own (`registry.rs`). Each failure names the file, the field
//! and the rule; every gate runs, then all failures are reported.
//!
//! Per tree (`tree.rs`; v1 always, the registry's tree, and v2 when the version has it):
//! - the version manifest: name and version, the tree's signing block (v1: exactly the
//!   registry's `{method: "manual", publicKeyRef, signatureRef}`; v2: exactly `{keyId, scheme:
//!   "ed25519-canonical-json"}`, `kind`, `engines.openwop` admitting major 2 with a ceiling), and
//!   nothing but the tarball's `pack.json` plus the registry's keys;
//! - integrity: `sha256-<base64>` of the tarball;
//! - the tarball: deterministic USTAR (see [`crate::tarball::read_tgz`]), `pack.json` its own
//!   RFC 8785 bytes (v1: no key the registry's closed schemas refuse), the signature inside it
//!   and beside it the same;
//! - the key (`gates.rs`): `registry/keys/<keyId>.pub`, and a `signingKeys` entry whose
//!   `permittedNamespaces` cover the pack; the signature verifies over the `pack.json` bytes;
//! - schemas: each valid JSON Schema with `$id` `https://packs.openwop.dev/<pack>/<version>/<file>`,
//!   each one `pack.json` references present, the served copy identical.
//!
//! Then: the two trees' tarballs hold the same files but `pack.json` and its signature;
//! `packs/<name>/` holds exactly the v1 tarball's files; every `nodes[].typeId` is exported by
//! `index.mjs` (imported in `node`).

mod gates;
mod registry;
mod tree;

use crate::error::{Result, WopError};
use gates::{Gate, entry, exported_type_ids};
pub use registry::{is_checkout, registry_gates, run as run_in_registry};
use serde_json::Value;
use std::path::{Path, PathBuf};

/// `cargo wop check`'s options.
#[derive(Clone, Debug, clap::Args)]
pub struct CheckArgs {
    /// The registry folder (as `cargo wop publish --registry` wrote it).
    #[arg(long, value_name = "DIR")]
    pub registry: PathBuf,
    /// Check only this pack (default: every pack of the v1 tree that `publish` wrote, i.e.
    /// that has a v2 form beside it, or every pack in a folder that is not a checkout).
    #[arg(long, value_name = "NAME")]
    pub pack: Option<String>,
    /// Check only this version (with --pack).
    #[arg(long, value_name = "VERSION", requires = "pack")]
    pub version: Option<String>,
}

/// Whether an `engines.openwop` range admits protocol major 2 with an explicit ceiling
/// (`>=x[.y[.z]] <M.0.0`, M > 2): the registry's v2 gate.
pub fn admits_v2(range: &str) -> bool {
    let Some((low, high)) = range.split_once(' ') else {
        return false;
    };
    let low_ok = low.strip_prefix(">=").is_some_and(|v| {
        let parts: Vec<&str> = v.split('.').collect();
        (1..=3).contains(&parts.len())
            && parts
                .iter()
                .all(|p| !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit()))
    });
    let ceiling = high
        .strip_prefix('<')
        .and_then(|v| v.strip_suffix(".0.0"))
        .filter(|m| !m.is_empty() && m.bytes().all(|b| b.is_ascii_digit()))
        .and_then(|m| m.parse::<u64>().ok());
    low_ok && ceiling.is_some_and(|m| m > 2)
}

/// Runs every gate on `name@version`: the v1 tree (required: the registry's tree), the v2 tree
/// when it holds the version, and `packs/<name>/` against the v1 tarball; `Ok` when all pass.
pub fn check_version(root: &Path, name: &str, version: &str) -> Result<()> {
    let what = format!("{name}@{version}");
    let mut g = Gate {
        problems: Vec::new(),
        what: &what,
    };
    let v1 = tree::check_tree(&mut g, root, "v1", name, version)?;
    if root
        .join(format!("registry/v2/packs/{name}/-/{version}.json"))
        .is_file()
    {
        let v2 = tree::check_tree(&mut g, root, "v2", name, version)?;
        let same = |e: &[crate::tarball::Entry]| -> Vec<(String, Vec<u8>)> {
            e.iter()
                .filter(|e| e.path != "pack.json" && e.path != crate::sign::SIGNATURE_FILE)
                .map(|e| (e.path.clone(), e.bytes.clone()))
                .collect()
        };
        if same(&v1) != same(&v2) {
            g.fail(
                &root.join(format!("registry/v2/packs/{name}/-/{version}.tgz")),
                "its files other than pack.json and its signature differ from the v1 tarball's",
            );
        }
    }
    tree::check_source(&mut g, root, name, &v1);
    match exported_type_ids(&v1, &what) {
        Ok(exported) => {
            let manifest: Value = entry(&v1, "pack.json")
                .and_then(|e| serde_json::from_slice(&e.bytes).ok())
                .unwrap_or(Value::Null);
            let listed: Vec<&str> = manifest["nodes"]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(|n| n["typeId"].as_str())
                .collect();
            let missing: Vec<&&str> = listed
                .iter()
                .filter(|t| !exported.iter().any(|e| e == **t))
                .collect();
            if missing.is_empty() {
                g.pass(&format!("index.mjs exports all {} typeId(s)", listed.len()));
            } else {
                g.fail(
                    &root.join(format!(
                        "registry/v1/packs/{name}/-/{version}.tgz/index.mjs"
                    )),
                    format!(
                        "`nodes` does not export {missing:?}, listed in pack.json `nodes[].typeId`"
                    ),
                );
            }
        }
        Err(e) => g.problems.push(e.message),
    }
    if g.problems.is_empty() {
        eprintln!("check: {what}: every gate passes");
        Ok(())
    } else {
        Err(WopError::failed(format!(
            "{what}: {} gate(s) fail:\n  {}",
            g.problems.len(),
            g.problems.join("\n  ")
        )))
    }
}

/// `cargo wop check`: this tool's gates on each version it checks, then, in a checkout of
/// openwop-registry, the registry's own; answers the number of versions checked.
pub fn run(args: &CheckArgs) -> Result<usize> {
    let root = &args.registry;
    let tree = root.join("registry/v1/packs");
    let checkout = is_checkout(root);
    let packs = match &args.pack {
        Some(p) => vec![p.clone()],
        // In a checkout, the packs this tool published (those with a v2 form): the others are
        // the registry's own gates' business, which run below on every pack.
        None if checkout => {
            crate::folder::list(&root.join("registry/v2/packs")).unwrap_or_default()
        }
        None => crate::folder::list(&tree)?,
    };
    let mut checked = 0;
    let mut failures = Vec::new();
    for pack in packs {
        let versions = match &args.version {
            Some(v) => vec![v.clone()],
            None => crate::folder::list(&tree.join(&pack).join("-"))?
                .into_iter()
                .filter_map(|f| f.strip_suffix(".tgz").map(str::to_owned))
                .collect(),
        };
        for version in versions {
            checked += 1;
            if let Err(e) = check_version(root, &pack, &version) {
                failures.push(e.message);
            }
        }
    }
    if checked == 0 && !checkout {
        return Err(WopError::failed(format!(
            "{}: no published version to check",
            tree.display()
        )));
    }
    if let Err(e) = registry_gates(root) {
        failures.push(e.message);
    }
    if failures.is_empty() {
        Ok(checked)
    } else {
        Err(WopError::failed(failures.join("\n")))
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn engine_ranges_admitting_major_2() {
        for ok in [
            ">=1.0 <3.0.0",
            ">=2.0 <3.0.0",
            ">=1 <4.0.0",
            ">=1.1.0 <3.0.0",
        ] {
            assert!(super::admits_v2(ok), "{ok}");
        }
        for bad in [
            ">=1.0.0 <2.0.0",
            ">=1.0",
            ">=2.0 <3.0",
            "^2.0.0",
            ">=1.0  <3.0.0",
            ">=1.0.0.0 <3.0.0",
        ] {
            assert!(!super::admits_v2(bad), "{bad}");
        }
    }
}
