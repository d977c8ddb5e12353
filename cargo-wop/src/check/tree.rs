//! The gates of one tree of a published version (`registry/<tree>/packs/<name>/-/<version>.*`),
//! and of the pack's source folder `packs/<name>/` against the v1 tarball.

use super::admits_v2;
use super::gates::{Gate, check_key, check_schemas, entry};
use crate::error::{Result, WopError, json, read};
use crate::folder::PackFolder;
use crate::publish::integrity;
use crate::sign::{SIGNATURE_FILE, canonical};
use crate::tarball::{Entry, read_tgz};
use serde_json::{Value, json};
use std::path::Path;

/// The keys the registry adds to a manifest to serve it as a version manifest.
const SERVED_KEYS: &[&str] = &[
    "integrity",
    "tarballUrl",
    "signatureUrl",
    "publishedAt",
    "deprecated",
    "yanked",
];

/// The signing block's problem in `tree`, if any, and the key id it names.
fn signing_problem(tree: &str, signing: &Value) -> (Option<String>, String) {
    let obj = signing.as_object();
    let keys = obj.map_or(0, serde_json::Map::len);
    if tree == "v1" {
        let id = signing["publicKeyRef"].as_str().unwrap_or("").to_owned();
        let ok = keys == 3
            && !id.is_empty()
            && signing["method"] == json!("manual")
            && signing["signatureRef"] == json!(SIGNATURE_FILE);
        let rule = format!(
            "`signing` is {signing}; the registry's v1 block is exactly {{method: \"manual\", publicKeyRef, signatureRef: \"{SIGNATURE_FILE}\"}} (scripts/build-pack-tarball.mjs --signed)"
        );
        (if ok { None } else { Some(rule) }, id)
    } else {
        let id = signing["keyId"].as_str().unwrap_or("").to_owned();
        let ok = keys == 2 && !id.is_empty() && signing["scheme"] == json!(crate::sign::SCHEME);
        let rule = format!(
            "`signing` is {signing}; v2 holds exactly {{keyId, scheme: \"{}\"}}",
            crate::sign::SCHEME
        );
        (if ok { None } else { Some(rule) }, id)
    }
}

/// Runs the gates of `tree` on `name@version`; answers the tarball's files.
pub(super) fn check_tree(
    g: &mut Gate<'_>,
    root: &Path,
    tree: &str,
    name: &str,
    version: &str,
) -> Result<Vec<Entry>> {
    let what = format!("{name}@{version}");
    let base = root.join(format!("registry/{tree}/packs/{name}/-"));
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
    if tree == "v2" {
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
    }
    let signing = vm.get("signing").cloned().unwrap_or(Value::Null);
    let (problem, key_id) = signing_problem(tree, &signing);
    if let Some(rule) = problem {
        g.fail(&vm_path, rule);
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
        g.pass(&format!("{tree}: integrity {actual}"));
    }
    let entries = read_tgz(&tgz, &tgz_path.display().to_string())?;
    g.pass(&format!(
        "{tree}: deterministic tarball of {} files",
        entries.len()
    ));
    let in_tgz = tgz_path.join("pack.json");
    let Some(pack_json) = entry(&entries, "pack.json") else {
        return Err(WopError::failed(format!(
            "{}: no pack.json",
            tgz_path.display()
        )));
    };
    let manifest: Value = serde_json::from_slice(&pack_json.bytes)
        .map_err(|e| WopError::failed(format!("{}: not JSON: {e}", in_tgz.display())))?;
    if canonical(&manifest)? != pack_json.bytes {
        g.fail(
            &in_tgz,
            "not its own RFC 8785 canonical bytes: the signature covers the canonical bytes",
        );
    }
    let mut served = vm.clone();
    if let Some(o) = served.as_object_mut() {
        o.retain(|k, _| !SERVED_KEYS.contains(&k.as_str()));
    }
    if served != manifest {
        g.fail(&vm_path, "not the tarball's pack.json plus the registry's keys (integrity, tarballUrl, signatureUrl, publishedAt, deprecated, yanked)");
    }
    if tree == "v1" {
        let extra: Vec<&String> = manifest
            .as_object()
            .into_iter()
            .flat_map(|o| o.keys())
            .filter(|k| {
                k.as_str() == "peerDependenciesMeta" || wop_sdk_rules::grammar::is_extension_key(k)
            })
            .collect();
        if !extra.is_empty() {
            g.fail(
                &in_tgz,
                format!("{extra:?}: the registry's closed manifest schemas do not admit them"),
            );
        }
    }
    match entry(&entries, SIGNATURE_FILE) {
        None => g.fail(
            &tgz_path,
            format!("no {SIGNATURE_FILE}: the registry verifies the signature inside the tarball"),
        ),
        Some(sig) if std::fs::read(&sig_path).ok().as_deref() != Some(sig.bytes.as_slice()) => {
            g.fail(&sig_path, format!("not the tarball's {SIGNATURE_FILE}"));
        }
        Some(_) => {}
    }
    check_key(g, root, &key_id, name, &pack_json.bytes, &sig_path);
    if tree == "v1" {
        check_schemas(g, &tgz_path, &entries, &manifest, root, name, version);
    }
    Ok(entries)
}

/// `packs/<name>/` holds exactly the v1 tarball's files: the registry builds the tarball from
/// that folder (`scripts/build-pack-tarball.mjs`) and runs its `$id` gate there.
pub(super) fn check_source(g: &mut Gate<'_>, root: &Path, name: &str, tarball: &[Entry]) {
    let dir = root.join(format!("packs/{name}"));
    let folder = match PackFolder::open(Some(&dir)) {
        Ok(folder) => folder,
        Err(e) => {
            g.problems.push(e.message);
            return;
        }
    };
    let version = entry(tarball, "pack.json")
        .and_then(|e| serde_json::from_slice::<Value>(&e.bytes).ok())
        .and_then(|m| m["version"].as_str().map(str::to_owned))
        .unwrap_or_default();
    if folder.version != version {
        // The source folder holds the latest version a pull request brought, not every one.
        g.pass(&format!(
            "packs/{name}/ holds version {}, not this one: compared with that version",
            folder.version
        ));
        return;
    }
    let files = match folder.tarball_entries() {
        Ok((files, _)) => files,
        Err(e) => {
            g.problems.push(e.message);
            return;
        }
    };
    let mut differ: Vec<String> = files
        .iter()
        .filter(|f| entry(tarball, &f.path).is_none_or(|t| t.bytes != f.bytes))
        .map(|f| f.path.clone())
        .collect();
    differ.extend(
        tarball
            .iter()
            .filter(|t| entry(&files, &t.path).is_none())
            .map(|t| format!("{} (missing)", t.path)),
    );
    if differ.is_empty() {
        g.pass(&format!(
            "packs/{name}/ holds exactly the v1 tarball's {} files",
            tarball.len()
        ));
    } else {
        g.fail(&dir, format!("{differ:?} differ from the v1 tarball: the registry builds the tarball from this folder"));
    }
}
