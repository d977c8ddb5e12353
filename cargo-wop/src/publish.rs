//! `cargo wop publish --registry DIR`: the registry's staging layout, written into a checkout of
//! openwop/openwop-registry (or any folder served the same way), then checked with
//! [`crate::check`]:
//!
//! ```text
//! packs/<name>/                                  the pack's source (where the $id gate runs)
//! registry/<name>/<version>/<schema file>        the schemas at their `$id` URLs
//! registry/v2/packs/<name>/-/<version>.{tgz,sig,json}, registry/v2/packs/<name>/index.json
//! registry/v1/packs/<name>/-/<version>.{tgz,sig,json}, registry/v1/packs/<name>/index.json
//! registry/keys/<keyId>.pub                      the public key (written when absent)
//! registry/.well-known/openwop-registry.json     created with the key's entry when absent
//! ```
//!
//! The v2 tree is the one the registry's v2 gates and a v2 host read (`signing: {keyId,
//! scheme}`). The v1 tree carries the same tarball and signature with the v1 signing block
//! (`{method: "manual", publicKeyRef, signatureRef}`), because today's openwop-app installer
//! (`packs/registryInstaller.ts`) fetches `/v1/packs/…` and reads `signing.publicKeyRef`;
//! `--v2-only` leaves it out.

use crate::error::{Result, WopError, json, parse, pretty, read, write};
use crate::folder::PackFolder;
use crate::sign::{SCHEME, SIGNATURE_FILE, key_and_id, sign_folder};
use base64::Engine as _;
use serde_json::{Map, Value, json};
use sha2::{Digest, Sha256};
use std::path::{Path, PathBuf};

/// The origin of pack-internal schema `$id`s.
pub const SCHEMA_ORIGIN: &str = "https://packs.openwop.dev";

/// `cargo wop publish`'s options.
#[derive(Clone, Debug, clap::Args)]
pub struct PublishArgs {
    /// The registry folder (a checkout of openwop/openwop-registry, or an empty folder).
    #[arg(long, value_name = "DIR")]
    pub registry: PathBuf,
    /// The pack folder and the key, as `cargo wop sign` takes them.
    #[command(flatten)]
    pub sign: crate::sign::SignArgs,
    /// Write only the v2 tree (no `/v1/` copy for today's openwop-app installer).
    #[arg(long)]
    pub v2_only: bool,
}

/// `https://packs.openwop.dev/<pack>/<version>/<file>`.
pub fn schema_id(name: &str, version: &str, file: &str) -> String {
    format!("{SCHEMA_ORIGIN}/{name}/{version}/{file}")
}

/// `sha256-<base64>` of `bytes` (the registry's and the installer's integrity).
pub fn integrity(bytes: &[u8]) -> String {
    format!(
        "sha256-{}",
        base64::engine::general_purpose::STANDARD.encode(Sha256::digest(bytes))
    )
}

/// Sets every schema's `$id` in the folder to its URL for this version.
fn rewrite_schema_ids(folder: &PackFolder) -> Result<usize> {
    let dir = folder.dir.join("schemas");
    if !dir.is_dir() {
        return Ok(0);
    }
    let mut n = 0;
    for file in crate::folder::list(&dir)? {
        if !file.ends_with(".json") {
            continue;
        }
        let path = dir.join(&file);
        let mut schema = json(&path)?;
        let Some(object) = schema.as_object_mut() else {
            return Err(WopError::failed(format!(
                "{}: a schema is a JSON object",
                path.display()
            )));
        };
        let id = schema_id(&folder.name, &folder.version, &file);
        if object.get("$id").and_then(Value::as_str) != Some(id.as_str()) {
            object.insert("$id".into(), Value::String(id));
            write(&path, &pretty(&schema))?;
            n += 1;
        }
    }
    Ok(n)
}

/// The version manifest of one tree.
fn version_manifest(manifest: &Value, tree: &str, key_id: &str, integrity: &str) -> Value {
    let mut m: Map<String, Value> = manifest.as_object().cloned().unwrap_or_default();
    let (name, version) = (
        m.get("name").cloned().unwrap_or(Value::Null),
        m.get("version").cloned().unwrap_or(Value::Null),
    );
    let base = format!(
        "/{tree}/packs/{}/-/{}",
        name.as_str().unwrap_or(""),
        version.as_str().unwrap_or("")
    );
    let signing = if tree == "v2" {
        json!({"keyId": key_id, "scheme": SCHEME})
    } else {
        json!({"method": "manual", "publicKeyRef": key_id, "signatureRef": SIGNATURE_FILE})
    };
    m.insert("signing".into(), signing);
    m.insert("integrity".into(), json!(integrity));
    m.insert("tarballUrl".into(), json!(format!("{base}.tgz")));
    m.insert("signatureUrl".into(), json!(format!("{base}.sig")));
    Value::Object(m)
}

fn semver_key(v: &str) -> (u64, u64, u64, bool) {
    let core = v.split(['-', '+']).next().unwrap_or("");
    let mut parts = core.split('.').map(|p| p.parse::<u64>().unwrap_or(0));
    let (a, b, c) = (
        parts.next().unwrap_or(0),
        parts.next().unwrap_or(0),
        parts.next().unwrap_or(0),
    );
    (a, b, c, !v.contains('-'))
}

/// The pack's `index.json` in one tree, with this version's row added or replaced.
fn pack_index(
    path: &Path,
    manifest: &Value,
    tree: &str,
    key_id: &str,
    integrity: &str,
) -> Result<Value> {
    let name = manifest["name"].as_str().unwrap_or("");
    let version = manifest["version"].as_str().unwrap_or("");
    let mut versions: Vec<Value> = if path.is_file() {
        json(path)?["versions"]
            .as_array()
            .cloned()
            .unwrap_or_default()
    } else {
        Vec::new()
    };
    versions.retain(|row| row["version"].as_str() != Some(version));
    let base = format!("/{tree}/packs/{name}/-/{version}");
    let mut row = json!({
        "version": version,
        "manifestUrl": format!("{base}.json"),
        "tarballUrl": format!("{base}.tgz"),
        "signatureUrl": format!("{base}.sig"),
        "signingKeyId": key_id,
        "integrity": integrity,
    });
    if tree == "v2" {
        row["signingScheme"] = json!(SCHEME);
    } else {
        row["signingMethod"] = json!("manual");
    }
    versions.push(row);
    versions.sort_by_key(|row| semver_key(row["version"].as_str().unwrap_or("")));
    let type_ids: Vec<Value> = manifest["nodes"]
        .as_array()
        .map(|nodes| {
            nodes
                .iter()
                .filter_map(|n| n.get("typeId").cloned())
                .collect()
        })
        .unwrap_or_default();
    let latest = versions
        .iter()
        .rev()
        .find(|row| !row["version"].as_str().unwrap_or("").contains('-'))
        .or(versions.last())
        .and_then(|row| row.get("version").cloned())
        .unwrap_or(Value::Null);
    Ok(json!({
        "name": name,
        "kind": manifest.get("kind").cloned().unwrap_or(json!("node")),
        "typeIds": type_ids,
        "nodeCount": type_ids.len(),
        "versions": versions,
        "latest": latest,
    }))
}

/// Writes `bytes` at `path` unless a published file with other bytes is there: a published
/// version is immutable.
fn write_once(path: &Path, bytes: &[u8], version: &str) -> Result<()> {
    if path.is_file() && read(path)? != bytes {
        return Err(WopError::failed(format!(
            "{}: version {version} is already published with other content; a published version is immutable: bump the pack's version",
            path.display()
        )));
    }
    write(path, bytes)
}

/// `registry/keys/<keyId>.pub`, and the discovery document when there is none.
fn publish_key(
    root: &Path,
    key: &ed25519_dalek::SigningKey,
    key_id: &str,
    name: &str,
) -> Result<()> {
    let pem = crate::keys::public_pem(&key.verifying_key())?;
    let path = root.join(format!("registry/keys/{key_id}.pub"));
    if path.is_file() {
        if crate::keys::load_public_key(&path)? != key.verifying_key() {
            return Err(WopError::failed(format!(
                "{}: the registry holds another public key under the id {key_id}; choose another --key-id",
                path.display()
            )));
        }
    } else {
        write(&path, pem.as_bytes())?;
    }
    let discovery = root.join("registry/.well-known/openwop-registry.json");
    let namespace = crate::keys::owner_namespace(name).unwrap_or_else(|| name.to_owned());
    let entry = crate::keys::signing_keys_entry(key_id, &[namespace], None);
    if !discovery.is_file() {
        let doc = json!({
            "name": "local registry (cargo wop publish)",
            "endpoints": {
                "packMetadata": "/v2/packs/{name}/index.json",
                "versionManifest": "/v2/packs/{name}/-/{version}.json",
                "versionTarball": "/v2/packs/{name}/-/{version}.tgz",
                "versionSignature": "/v2/packs/{name}/-/{version}.sig",
                "publicKey": "/keys/{keyId}.pub"
            },
            "signingKeys": [entry],
        });
        write(&discovery, &pretty(&doc))?;
    } else {
        let doc = json(&discovery)?;
        let known = doc["signingKeys"]
            .as_array()
            .is_some_and(|keys| keys.iter().any(|k| k["keyId"] == json!(key_id)));
        if !known {
            eprintln!(
                "publish: {} has no signingKeys entry for {key_id}; the registry's maintainers add it (in your pull request):\n{}",
                discovery.display(),
                serde_json::to_string_pretty(&entry).unwrap_or_default()
            );
        }
    }
    Ok(())
}

/// `cargo wop publish`: answers the path of the v2 version manifest.
pub fn run(args: &PublishArgs) -> Result<PathBuf> {
    let folder = PackFolder::open(args.sign.pack_dir.as_deref())?;
    if folder.is_folder_form() {
        return Err(WopError::usage(format!(
            "{}: pack.json `x-wopSdk.addon.file`: the folder form (the addon beside index.mjs) cannot be published: a registry install keeps only pack.json, index.mjs, schemas/, keys/ and prompts/; build the single-file form (`cargo wop build` without --folder)",
            folder.dir.display()
        )));
    }
    let (key, key_id) = key_and_id(&args.sign.key, args.sign.key_id.as_deref())?;
    let (name, version) = (folder.name.clone(), folder.version.clone());
    let rewritten = rewrite_schema_ids(&folder)?;
    eprintln!(
        "publish: {name}@{version}: {rewritten} schema $id(s) set to {SCHEMA_ORIGIN}/{name}/{version}/<file>"
    );
    let signed = sign_folder(&folder, &key, &key_id)?;
    let folder = PackFolder::open(Some(&folder.dir))?;
    eprintln!(
        "publish: pack.json signed with {key_id} ({SCHEME}, {} canonical bytes)",
        signed.len()
    );
    let (entries, left_out) = folder.tarball_entries()?;
    if !left_out.is_empty() {
        eprintln!(
            "publish: not in the tarball (the registry carries only pack.json, index.mjs, README.md, LICENSE, schemas/, keys/): {}",
            left_out.join(", ")
        );
    }
    let tgz = crate::tarball::tgz(entries.clone())?;
    let integrity = integrity(&tgz);
    eprintln!(
        "publish: tarball of {} files, {} bytes, {integrity}",
        entries.len(),
        tgz.len()
    );
    let signature = read(&folder.dir.join(SIGNATURE_FILE))?;
    let root = &args.registry;
    std::fs::create_dir_all(root).map_err(|e| {
        WopError::usage(format!("--registry {}: cannot create: {e}", root.display()))
    })?;
    let trees: &[&str] = if args.v2_only { &["v2"] } else { &["v2", "v1"] };
    for tree in trees {
        let dir = root.join(format!("registry/{tree}/packs/{name}"));
        write_once(&dir.join(format!("-/{version}.tgz")), &tgz, &version)?;
        write(&dir.join(format!("-/{version}.sig")), &signature)?;
        let manifest = version_manifest(&folder.manifest, tree, &key_id, &integrity);
        write(&dir.join(format!("-/{version}.json")), &pretty(&manifest))?;
        let index_path = dir.join("index.json");
        let index = pack_index(&index_path, &folder.manifest, tree, &key_id, &integrity)?;
        write(&index_path, &pretty(&index))?;
    }
    let source = root.join(format!("packs/{name}"));
    if source.exists() {
        std::fs::remove_dir_all(&source)
            .map_err(|e| WopError::failed(format!("{}: cannot replace: {e}", source.display())))?;
    }
    for e in &entries {
        write(&source.join(&e.path), &e.bytes)?;
        if let Some(file) = e.path.strip_prefix("schemas/") {
            parse(Path::new(&e.path), &e.bytes)?;
            write(
                &root.join(format!("registry/{name}/{version}/{file}")),
                &e.bytes,
            )?;
        }
    }
    publish_key(root, &key, &key_id, &name)?;
    eprintln!(
        "publish: staged in {}; running the registry's gates",
        root.display()
    );
    crate::check::check_version(root, &name, &version)?;
    Ok(root.join(format!("registry/v2/packs/{name}/-/{version}.json")))
}
