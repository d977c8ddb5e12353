//! A release, made in memory from a built pack folder (which it never changes): its schemas with
//! their `$id`s, and the two signed forms a registry serves.
//!
//! - **v1**, the registry's tree today (`registry/v1/`, what openwop-registry's CI checks and
//!   openwop-app's installer fetches): `pack.json` with the v1 signing block `{method: "manual",
//!   publicKeyRef, signatureRef: "keys/pack.json.sig"}`, exactly as the registry's
//!   `scripts/build-pack-tarball.mjs --signed` writes it, and without `peerDependenciesMeta`,
//!   which the registry's closed schemas do not admit (its `node-pack-manifest` allows only
//!   `optional` there, its `registry-version-manifest` not the key at all). The tarball is the one
//!   that script builds from `packs/<name>/` as `publish` stages it: same bytes, same signature.
//! - **v2** (`registry/v2/`, the official v2 schemas): `pack.json` with `signing: {keyId, scheme:
//!   "ed25519-canonical-json"}` and every key the v2 manifest has, `peerDependenciesMeta` (RFC 0248
//!   §C's `callAccounting` facet) included.
//!
//! Each form's `pack.json` is its own RFC 8785 bytes, which is what the registry's own
//! `canonicalJson` writes for a manifest (sorted keys, no spaces, integers), and the detached
//! Ed25519 signature covers exactly those bytes.

use super::{SCHEMA_ORIGIN, integrity, schema_id};
use crate::error::{Result, WopError, pretty};
use crate::folder::PackFolder;
use crate::sign::{SCHEME, SIGNATURE_FILE, canonical};
use crate::tarball::{Entry, tgz};
use ed25519_dalek::{Signer, SigningKey};
use serde_json::{Map, Value, json};

/// One signed form of a release.
#[derive(Clone, Debug)]
pub struct Form {
    /// `v1` or `v2`: the tree it is served from.
    pub tree: &'static str,
    /// The files of its tarball (and of `packs/<name>/` for v1), sorted by path.
    pub entries: Vec<Entry>,
    /// The gzipped tarball.
    pub tgz: Vec<u8>,
    /// The 64-byte Ed25519 signature over `pack.json`.
    pub signature: Vec<u8>,
    /// `sha256-<base64>` of the tarball.
    pub integrity: String,
    /// The version manifest served beside the tarball (`<version>.json`).
    pub version_manifest: Value,
}

/// A pack version ready to publish.
#[derive(Clone, Debug)]
pub struct Release {
    /// The pack's name.
    pub name: String,
    /// Its version.
    pub version: String,
    /// The v1 form (the registry's tree today).
    pub v1: Form,
    /// The v2 form.
    pub v2: Form,
    /// The folder's files no tarball carries.
    pub left_out: Vec<String>,
    /// The schemas whose `$id` was set here.
    pub ids_set: usize,
    /// What the v1 form leaves out of the manifest, for the person publishing.
    pub v1_dropped: Vec<String>,
}

/// The signing block of each tree.
pub fn signing_block(tree: &str, key_id: &str) -> Value {
    if tree == "v1" {
        json!({"method": "manual", "publicKeyRef": key_id, "signatureRef": SIGNATURE_FILE})
    } else {
        json!({"keyId": key_id, "scheme": SCHEME})
    }
}

/// The schema files with their `$id` set to `https://packs.openwop.dev/<pack>/<version>/<file>`
/// (a schema already carrying it keeps its bytes), and how many were changed.
fn with_schema_ids(entries: &mut [Entry], name: &str, version: &str) -> Result<usize> {
    let mut n = 0;
    for e in entries
        .iter_mut()
        .filter(|e| e.path.starts_with("schemas/"))
    {
        let file = e.path["schemas/".len()..].to_owned();
        let mut schema: Value = serde_json::from_slice(&e.bytes)
            .map_err(|err| WopError::failed(format!("{}: not JSON: {err}", e.path)))?;
        let Some(object) = schema.as_object_mut() else {
            return Err(WopError::failed(format!(
                "{}: a schema is a JSON object",
                e.path
            )));
        };
        let id = schema_id(name, version, &file);
        if object.get("$id").and_then(Value::as_str) != Some(id.as_str()) {
            object.insert("$id".into(), Value::String(id));
            e.bytes = pretty(&schema);
            n += 1;
        }
    }
    Ok(n)
}

fn form(
    tree: &'static str,
    manifest: &Map<String, Value>,
    files: &[Entry],
    key: &SigningKey,
    key_id: &str,
) -> Result<Form> {
    let mut signed = manifest.clone();
    signed.insert("signing".into(), signing_block(tree, key_id));
    let pack_json = canonical(&Value::Object(signed.clone()))?;
    let signature = key.sign(&pack_json).to_bytes().to_vec();
    let mut entries: Vec<Entry> = files
        .iter()
        .filter(|e| e.path != "pack.json" && e.path != SIGNATURE_FILE)
        .cloned()
        .collect();
    entries.push(Entry {
        path: "pack.json".into(),
        bytes: pack_json,
    });
    entries.push(Entry {
        path: SIGNATURE_FILE.into(),
        bytes: signature.clone(),
    });
    entries.sort_by(|a, b| a.path.as_bytes().cmp(b.path.as_bytes()));
    let tgz = tgz(entries.clone())?;
    let integrity = integrity(&tgz);
    let name = manifest.get("name").and_then(Value::as_str).unwrap_or("");
    let version = manifest
        .get("version")
        .and_then(Value::as_str)
        .unwrap_or("");
    let base = format!("/{tree}/packs/{name}/-/{version}");
    let mut vm = signed;
    vm.insert("integrity".into(), json!(integrity));
    vm.insert("tarballUrl".into(), json!(format!("{base}.tgz")));
    vm.insert("signatureUrl".into(), json!(format!("{base}.sig")));
    Ok(Form {
        tree,
        entries,
        tgz,
        signature,
        integrity,
        version_manifest: Value::Object(vm),
    })
}

impl Release {
    /// The release of the pack folder, signed with `key` under `key_id`.
    pub fn of(folder: &PackFolder, key: &SigningKey, key_id: &str) -> Result<Self> {
        let path = folder.dir.join("pack.json");
        let Some(manifest) = folder.manifest.as_object() else {
            return Err(WopError::failed(format!(
                "{}: not a JSON object",
                path.display()
            )));
        };
        let extension: Vec<&String> = manifest
            .keys()
            .chain(
                manifest
                    .get("nodes")
                    .and_then(Value::as_array)
                    .into_iter()
                    .flatten()
                    .filter_map(Value::as_object)
                    .flat_map(Map::keys),
            )
            .filter(|k| wop_sdk_rules::grammar::is_extension_key(k))
            .collect();
        if !extension.is_empty() {
            return Err(WopError::usage(format!(
                "{}: extension keys {extension:?}: the registry's manifest schema admits none (a pack built before the registry form); build the pack again (`cargo wop build`)",
                path.display()
            )));
        }
        let (mut files, left_out) = folder.tarball_entries()?;
        let (name, version) = (folder.name.clone(), folder.version.clone());
        let ids_set = with_schema_ids(&mut files, &name, &version)?;
        let mut unsigned = manifest.clone();
        unsigned.remove("signing");
        let v2 = form("v2", &unsigned, &files, key, key_id)?;
        let mut v1_dropped = Vec::new();
        if let Some(meta) = unsigned.remove("peerDependenciesMeta") {
            v1_dropped.push(format!(
                "`peerDependenciesMeta` {meta} (not admitted by the registry's v1 schemas; the addon checks the host's capabilities itself)"
            ));
        }
        let v1 = form("v1", &unsigned, &files, key, key_id)?;
        Ok(Self {
            name,
            version,
            v1,
            v2,
            left_out,
            ids_set,
            v1_dropped,
        })
    }

    /// `https://packs.openwop.dev/<name>/<version>/`, where the schemas are served.
    pub fn schema_base(&self) -> String {
        format!("{SCHEMA_ORIGIN}/{}/{}/", self.name, self.version)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_v1_block_is_the_one_build_pack_tarball_writes() {
        assert_eq!(
            signing_block("v1", "alice-1"),
            json!({"method": "manual", "publicKeyRef": "alice-1", "signatureRef": "keys/pack.json.sig"})
        );
        assert_eq!(
            signing_block("v2", "alice-1"),
            json!({"keyId": "alice-1", "scheme": "ed25519-canonical-json"})
        );
    }

    #[test]
    fn each_form_signs_its_own_canonical_pack_json() {
        let manifest = json!({"name": "community.a.b", "version": "1.0.0",
            "peerDependenciesMeta": {"aiProviders": {"facets": ["callAccounting"]}}});
        let files = vec![Entry {
            path: "index.mjs".into(),
            bytes: b"export const nodes = {};\n".to_vec(),
        }];
        let key = SigningKey::from_bytes(&[3; 32]);
        let object = manifest.as_object().cloned().unwrap_or_default();
        let f = form("v1", &object, &files, &key, "a-1").expect("form");
        let paths: Vec<&str> = f.entries.iter().map(|e| e.path.as_str()).collect();
        assert_eq!(paths, ["index.mjs", "keys/pack.json.sig", "pack.json"]);
        let pack_json = &f.entries[2].bytes;
        assert!(crate::sign::verifies(
            pack_json,
            &f.signature,
            &key.verifying_key()
        ));
        let parsed: Value = serde_json::from_slice(pack_json).expect("JSON");
        assert_eq!(&canonical(&parsed).expect("canonical"), pack_json);
        assert_eq!(
            f.version_manifest["tarballUrl"],
            "/v1/packs/community.a.b/-/1.0.0.tgz"
        );
        assert_eq!(f.version_manifest["integrity"], json!(integrity(&f.tgz)));
    }
}
