//! `cargo wop check`: the registry's gates, run locally on a published version (the v2 tree,
//! and the v1 copy when there is one). Each failure names the file, the field and the rule;
//! every gate runs, then all failures are reported.
//!
//! - the version manifest: `kind`, `engines.openwop` admitting protocol major 2 with an explicit
//!   ceiling, `signing` exactly `{keyId, scheme: "ed25519-canonical-json"}`, name and version;
//! - integrity: `sha256-<base64>` of the tarball;
//! - the tarball: deterministic USTAR (see [`crate::tarball::read_tgz`]), `pack.json` its own
//!   RFC 8785 bytes, naming the same pack, version and signing block;
//! - the key: `registry/keys/<keyId>.pub`, and a `signingKeys` entry whose
//!   `permittedNamespaces` cover the pack; the signature verifies over the `pack.json` bytes;
//! - schemas: each valid JSON Schema with `$id` `https://packs.openwop.dev/<pack>/<version>/<file>`,
//!   each one `pack.json` references present, the served copy identical;
//! - every `nodes[].typeId` exported by `index.mjs` (imported in `node`).

mod gates;

use crate::error::{Result, WopError, json, read};
use crate::publish::integrity;
use crate::sign::{SCHEME, canonical};
use crate::tarball::read_tgz;
use gates::{Gate, check_key, check_schemas, entry, exported_type_ids};
use serde_json::{Value, json};
use std::path::{Path, PathBuf};

/// `cargo wop check`'s options.
#[derive(Clone, Debug, clap::Args)]
pub struct CheckArgs {
    /// The registry folder (as `cargo wop publish --registry` wrote it).
    #[arg(long, value_name = "DIR")]
    pub registry: PathBuf,
    /// Check only this pack (default: every pack of the v2 tree).
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

/// Runs every gate on `name@version`; `Ok` when all pass.
pub fn check_version(root: &Path, name: &str, version: &str) -> Result<()> {
    let what = format!("{name}@{version}");
    let mut g = Gate {
        problems: Vec::new(),
        what: &what,
    };
    let base = root.join(format!("registry/v2/packs/{name}/-"));
    let (vm_path, tgz_path, sig_path) = (
        base.join(format!("{version}.json")),
        base.join(format!("{version}.tgz")),
        base.join(format!("{version}.sig")),
    );
    let vm = json(&vm_path)?;
    if vm["name"] != json!(name) || vm["version"] != json!(version) {
        g.fail(
            &vm_path,
            format!("names {}@{}, not {what}", vm["name"], vm["version"]),
        );
    }
    if !vm["kind"].is_string() {
        g.fail(&vm_path, "`kind` is required in v2");
    }
    let range = vm
        .pointer("/engines/openwop")
        .and_then(Value::as_str)
        .unwrap_or("");
    if !admits_v2(range) {
        g.fail(&vm_path, format!("`engines.openwop` {range:?} does not admit protocol major 2 with an explicit ceiling (`>=x[.y[.z]] <M.0.0`, M > 2)"));
    }
    let signing = vm.get("signing").cloned().unwrap_or(Value::Null);
    let key_id = signing["keyId"].as_str().unwrap_or("").to_owned();
    let keys: Vec<&String> = signing
        .as_object()
        .map(|o| o.keys().collect())
        .unwrap_or_default();
    if keys.len() != 2 || key_id.is_empty() || signing["scheme"] != json!(SCHEME) {
        g.fail(
            &vm_path,
            format!("`signing` is {signing}; v2 holds exactly {{keyId, scheme: \"{SCHEME}\"}}"),
        );
    }
    let tgz = read(&tgz_path)?;
    let actual = integrity(&tgz);
    if vm["integrity"] != json!(actual) {
        g.fail(
            &vm_path,
            format!(
                "`integrity` {} does not match the tarball ({actual})",
                vm["integrity"]
            ),
        );
    } else {
        g.pass(&format!("integrity {actual}"));
    }
    let entries = read_tgz(&tgz, &tgz_path.display().to_string())?;
    g.pass(&format!("deterministic tarball of {} files", entries.len()));
    let Some(pack_json) = entry(&entries, "pack.json") else {
        return Err(WopError::failed(format!(
            "{}: no pack.json",
            tgz_path.display()
        )));
    };
    let in_tgz = tgz_path.join("pack.json");
    let manifest: Value = serde_json::from_slice(&pack_json.bytes)
        .map_err(|e| WopError::failed(format!("{}: not JSON: {e}", in_tgz.display())))?;
    if canonical(&manifest)? != pack_json.bytes {
        g.fail(
            &in_tgz,
            "not its own RFC 8785 canonical bytes: the signature covers the canonical bytes",
        );
    }
    if manifest["name"] != json!(name) || manifest["version"] != json!(version) {
        g.fail(
            &in_tgz,
            format!(
                "names {}@{}, not {what}",
                manifest["name"], manifest["version"]
            ),
        );
    }
    if manifest.get("signing") != Some(&signing) {
        g.fail(&in_tgz, "`signing` differs from the version manifest's");
    }
    check_key(&mut g, root, &key_id, name, &pack_json.bytes, &sig_path);
    check_schemas(&mut g, &tgz_path, &entries, &manifest, root, name, version);
    let listed: Vec<&str> = manifest["nodes"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|n| n["typeId"].as_str())
        .collect();
    match exported_type_ids(&entries, &what) {
        Ok(exported) => {
            let missing: Vec<&&str> = listed
                .iter()
                .filter(|t| !exported.iter().any(|e| e == **t))
                .collect();
            if missing.is_empty() {
                g.pass(&format!("index.mjs exports all {} typeId(s)", listed.len()));
            } else {
                g.fail(
                    &tgz_path.join("index.mjs"),
                    format!(
                        "`nodes` does not export {missing:?}, listed in pack.json `nodes[].typeId`"
                    ),
                );
            }
        }
        Err(e) => g.problems.push(e.message),
    }
    let v1 = root.join(format!("registry/v1/packs/{name}/-"));
    if v1.join(format!("{version}.json")).is_file() {
        let v1m = json(&v1.join(format!("{version}.json")))?;
        if v1m["integrity"] != json!(actual)
            || v1m.pointer("/signing/publicKeyRef") != Some(&json!(key_id))
        {
            g.fail(
                &v1.join(format!("{version}.json")),
                "the v1 copy names another integrity or `signing.publicKeyRef`",
            );
        }
        if read(&v1.join(format!("{version}.tgz")))? != tgz
            || read(&v1.join(format!("{version}.sig")))? != read(&sig_path)?
        {
            g.fail(
                &v1,
                "the v1 copy's tarball or signature differs from the v2 tree's",
            );
        }
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

/// `cargo wop check`.
pub fn run(args: &CheckArgs) -> Result<usize> {
    let tree = args.registry.join("registry/v2/packs");
    let packs = match &args.pack {
        Some(p) => vec![p.clone()],
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
            if let Err(e) = check_version(&args.registry, &pack, &version) {
                failures.push(e.message);
            }
        }
    }
    if checked == 0 {
        return Err(WopError::failed(format!(
            "{}: no published version to check",
            tree.display()
        )));
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
