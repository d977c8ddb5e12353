//! The gates of `cargo wop check` that read the tarball: the key and signature, the schemas, the
//! exported type ids.

use crate::error::{Result, WopError, json, read};
use crate::publish::schema_id;
use crate::sign::verifies;
use crate::tarball::Entry;
use serde_json::{Value, json};
use std::path::Path;
use std::process::Command;

pub(super) struct Gate<'a> {
    pub(super) problems: Vec<String>,
    pub(super) what: &'a str,
}

impl Gate<'_> {
    pub(super) fn fail(&mut self, file: &Path, rule: impl std::fmt::Display) {
        self.problems.push(format!("{}: {rule}", file.display()));
    }

    pub(super) fn pass(&self, gate: &str) {
        eprintln!("check: {}: {gate}", self.what);
    }
}

pub(super) fn entry<'e>(entries: &'e [Entry], path: &str) -> Option<&'e Entry> {
    entries.iter().find(|e| e.path == path)
}

/// The type ids `index.mjs` exports, imported by `node` from the extracted tarball.
pub(super) fn exported_type_ids(entries: &[Entry], what: &str) -> Result<Vec<String>> {
    let dir = std::env::temp_dir().join(format!(
        "wop-check-{}-{}",
        std::process::id(),
        what.replace(['/', '@'], "_")
    ));
    let _ = std::fs::remove_dir_all(&dir);
    for e in entries {
        crate::error::write(&dir.join(&e.path), &e.bytes)?;
    }
    let index = std::path::absolute(dir.join("index.mjs"))
        .map_err(|e| WopError::failed(format!("{}: {e}", dir.display())))?;
    let script = "const m = await import(require('node:url').pathToFileURL(process.argv[1]).href); \
                  process.stdout.write(JSON.stringify(Object.keys(m.nodes ?? {})));";
    let out = Command::new("node")
        .args(["--input-type=commonjs", "-e"])
        .arg(format!("(async () => {{ {script} }})().catch((e) => {{ console.error(e?.message ?? String(e)); process.exit(1); }});"))
        .arg(&index)
        .output()
        .map_err(|e| WopError::failed(format!("node: cannot run it ({e}): Node >= 20 checks that index.mjs exports every typeId")))?;
    let _ = std::fs::remove_dir_all(&dir);
    if !out.status.success() {
        return Err(WopError::failed(format!(
            "{what}: index.mjs does not import: {}",
            String::from_utf8_lossy(&out.stderr).trim()
        )));
    }
    serde_json::from_slice(&out.stdout)
        .map_err(|e| WopError::failed(format!("{what}: index.mjs `nodes`: {e}")))
}

pub(super) fn check_schemas(
    g: &mut Gate<'_>,
    tgz: &Path,
    entries: &[Entry],
    manifest: &Value,
    root: &Path,
    name: &str,
    version: &str,
) {
    let mut n = 0;
    for e in entries.iter().filter(|e| e.path.starts_with("schemas/")) {
        let file = &e.path["schemas/".len()..];
        let at = tgz.join(&e.path);
        let schema: Value = match serde_json::from_slice(&e.bytes) {
            Ok(v) => v,
            Err(err) => {
                g.fail(&at, format!("not JSON: {err}"));
                continue;
            }
        };
        n += 1;
        let expected = schema_id(name, version, file);
        if schema.get("$id").and_then(Value::as_str) != Some(expected.as_str()) {
            g.fail(
                &at,
                format!(
                    "`$id` is {}; the rule: `$id` is {expected} (<pack>/<version>/<file>)",
                    schema.get("$id").unwrap_or(&Value::Null)
                ),
            );
        }
        if let Err(err) = jsonschema::meta::validate(&schema) {
            g.fail(&at, format!("not a valid JSON Schema: {err}"));
        } else if let Err(err) = jsonschema::validator_for(&schema) {
            g.fail(&at, format!("not a usable JSON Schema: {err}"));
        }
        let served = root.join(format!("registry/{name}/{version}/{file}"));
        if std::fs::read(&served).ok().as_deref() != Some(e.bytes.as_slice()) {
            g.fail(
                &served,
                "missing or not the tarball's schema: the schema is served at its `$id`",
            );
        }
    }
    let refs = manifest["nodes"]
        .as_array()
        .into_iter()
        .flatten()
        .flat_map(|node| {
            ["inputSchemaRef", "outputSchemaRef", "configSchemaRef"]
                .into_iter()
                .filter_map(|k| {
                    node.get(k)
                        .and_then(Value::as_str)
                        .map(|r| (k, r.to_owned()))
                })
        });
    for (field, r) in refs {
        if entry(entries, r.trim_start_matches("./")).is_none() {
            g.fail(
                &tgz.join("pack.json"),
                format!("`nodes[].{field}` {r}: no such file in the tarball"),
            );
        }
    }
    g.pass(&format!("{n} schema(s) valid, `$id`s {SCHEME_ORIGIN_NOTE}",));
}

const SCHEME_ORIGIN_NOTE: &str = "match <pack>/<version>/<file>";

pub(super) fn check_key(
    g: &mut Gate<'_>,
    root: &Path,
    key_id: &str,
    name: &str,
    pack_json: &[u8],
    sig_path: &Path,
) {
    let discovery = root.join("registry/.well-known/openwop-registry.json");
    let mut authorized = false;
    match json(&discovery) {
        Err(e) => g.problems.push(e.message),
        Ok(doc) => {
            let entry = doc["signingKeys"]
                .as_array()
                .into_iter()
                .flatten()
                .find(|k| k["keyId"] == json!(key_id));
            match entry {
                None => g.fail(
                    &discovery,
                    format!("`signingKeys` has no entry with keyId {key_id}"),
                ),
                Some(k) => {
                    let covered = k["permittedNamespaces"]
                        .as_array()
                        .into_iter()
                        .flatten()
                        .filter_map(Value::as_str)
                        .any(|ns| crate::keys::covers(ns, name));
                    authorized = covered
                        && k.get("status")
                            .and_then(Value::as_str)
                            .is_none_or(|s| s == "active");
                    if !covered {
                        g.fail(
                            &discovery,
                            format!(
                                "`signingKeys[{key_id}].permittedNamespaces` does not cover {name}"
                            ),
                        );
                    }
                    if k.get("status")
                        .and_then(Value::as_str)
                        .is_some_and(|s| s != "active")
                    {
                        g.fail(
                            &discovery,
                            format!("`signingKeys[{key_id}].status` is not active"),
                        );
                    }
                }
            }
        }
    }
    let key_path = root.join(format!("registry/keys/{key_id}.pub"));
    match (crate::keys::load_public_key(&key_path), read(sig_path)) {
        (Ok(key), Ok(sig)) => {
            if sig.len() != 64 {
                g.fail(
                    sig_path,
                    format!("{} bytes; an Ed25519 signature is 64", sig.len()),
                );
            } else if !verifies(pack_json, &sig, &key) {
                g.fail(
                    sig_path,
                    format!("does not verify over the tarball's pack.json bytes with {key_id}"),
                );
            } else if authorized {
                g.pass(&format!(
                    "signature verifies with {key_id}, which the registry authorizes for {name}"
                ));
            } else {
                g.pass(&format!(
                    "signature verifies with {key_id} (not authorized for {name}: see above)"
                ));
            }
        }
        (Err(e), _) | (_, Err(e)) => g.problems.push(e.message),
    }
}
