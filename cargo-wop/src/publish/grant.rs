//! Whether the registry lets the key sign the pack: `registry/keys/<keyId>.pub` holds this key,
//! and `.well-known/openwop-registry.json` has a `signingKeys` entry for it whose
//! `permittedNamespaces` cover the pack (what the registry's `verify-signatures.mjs` requires).
//! `publish` never grants a namespace on its own: a key the registry does not know is refused,
//! naming `--add-key`, which writes the key and its entry into the pull request, where the
//! registry's maintainers review the grant (the registry README's "Signing keys + namespace
//! assignments").

use super::stage::Staging;
use crate::error::{Result, WopError, parse, pretty};
use crate::keys::{covers, load_public_key, owner_namespace, public_pem, signing_keys_entry};
use ed25519_dalek::VerifyingKey;
use serde_json::{Value, json};

const DISCOVERY: &str = "registry/.well-known/openwop-registry.json";

fn key_file(key_id: &str) -> String {
    format!("registry/keys/{key_id}.pub")
}

/// Checks the grant in the staging copy; with `add`, writes what is missing of it there and
/// answers the lines to tell the person publishing.
pub fn ensure(
    staging: &Staging,
    key: &VerifyingKey,
    key_id: &str,
    name: &str,
    add: bool,
) -> Result<Vec<String>> {
    let key_path = staging.dir.join(key_file(key_id));
    let shown = |rel: &str| staging.root.join(rel).display().to_string();
    let key_known = if key_path.is_file() {
        if load_public_key(&key_path)? != *key {
            return Err(WopError::usage(format!(
                "{}: the registry holds another public key under the id {key_id}; sign with that key, or choose another --key-id",
                shown(&key_file(key_id))
            )));
        }
        true
    } else {
        false
    };
    let discovery_path = staging.dir.join(DISCOVERY);
    let mut doc = if discovery_path.is_file() {
        parse(
            &discovery_path,
            &std::fs::read(&discovery_path)
                .map_err(|e| WopError::failed(format!("{}: cannot read: {e}", shown(DISCOVERY))))?,
        )?
    } else {
        Value::Null
    };
    let entry = doc["signingKeys"]
        .as_array()
        .and_then(|keys| keys.iter().find(|k| k["keyId"] == json!(key_id)))
        .cloned();
    let namespace = owner_namespace(name).unwrap_or_else(|| name.to_owned());
    if let Some(e) = &entry {
        let covered = e["permittedNamespaces"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(Value::as_str)
            .any(|ns| covers(ns, name));
        if !covered {
            return Err(WopError::usage(format!(
                "{}: `signingKeys[{key_id}].permittedNamespaces` {} does not cover {name}: a namespace grant is the registry maintainers' decision (ask them to add {namespace}), or sign with a key granted it",
                shown(DISCOVERY),
                e["permittedNamespaces"]
            )));
        }
        if e["status"].as_str().is_some_and(|s| s != "active") {
            return Err(WopError::usage(format!(
                "{}: `signingKeys[{key_id}].status` is {}: the key may not sign",
                shown(DISCOVERY),
                e["status"]
            )));
        }
    }
    let proposed = signing_keys_entry(key_id, std::slice::from_ref(&namespace), None);
    if key_known && entry.is_some() {
        return Ok(Vec::new());
    }
    if !add {
        let missing = match (key_known, entry.is_some()) {
            (false, false) => format!(
                "neither {} nor a `signingKeys` entry for {key_id}",
                key_file(key_id)
            ),
            (false, true) => format!("no {}", key_file(key_id)),
            _ => format!("no `signingKeys` entry for {key_id}"),
        };
        return Err(WopError::usage(format!(
            "{}: the registry does not know the key {key_id} ({missing}), so its CI would refuse the pack: `--add-key` writes the public key and this entry into your pull request, for the registry's maintainers to review:\n{}",
            staging.root.display(),
            serde_json::to_string_pretty(&proposed).unwrap_or_default()
        )));
    }
    let mut told = Vec::new();
    if !key_known {
        staging.write(&key_file(key_id), public_pem(key)?.as_bytes())?;
        told.push(format!("--add-key: wrote {}", shown(&key_file(key_id))));
    }
    if entry.is_none() {
        if doc.is_null() {
            doc = json!({
                "name": "local registry (cargo wop publish)",
                "endpoints": {
                    "registryIndex": "/v1/index.json",
                    "packMetadata": "/v1/packs/{name}/index.json",
                    "versionManifest": "/v1/packs/{name}/-/{version}.json",
                    "versionTarball": "/v1/packs/{name}/-/{version}.tgz",
                    "versionSignature": "/v1/packs/{name}/-/{version}.sig",
                    "publicKey": "/keys/{keyId}.pub"
                },
                "signingKeys": [],
            });
        }
        let text = std::fs::read_to_string(&discovery_path).unwrap_or_default();
        let bytes = match insert_entry(&text, &proposed) {
            Some(edited) => edited.into_bytes(),
            None => {
                match doc["signingKeys"].as_array_mut() {
                    Some(keys) => keys.push(proposed),
                    None => doc["signingKeys"] = json!([proposed]),
                }
                pretty(&doc)
            }
        };
        staging.write(DISCOVERY, &bytes)?;
        told.push(format!(
            "--add-key: added a `signingKeys` entry granting {key_id} {namespace} to {}: the registry's maintainers review this grant in your pull request",
            shown(DISCOVERY)
        ));
    }
    Ok(told)
}

/// `text` (the discovery document) with `entry` appended to its `signingKeys` array, the rest of
/// the file byte for byte as it was (a maintainer reviews a diff of one entry); `None` when the
/// text has no such array or the result would not be that document.
fn insert_entry(text: &str, entry: &Value) -> Option<String> {
    let before: Value = serde_json::from_str(text).ok()?;
    let key = text.find("\"signingKeys\"")?;
    let open = key + text[key..].find('[')?;
    let (mut depth, mut in_string, mut escaped, mut close) = (0usize, false, false, None);
    for (i, c) in text[open..].char_indices() {
        match (in_string, escaped, c) {
            (true, true, _) => escaped = false,
            (true, false, '\\') => escaped = true,
            (true, false, '"') => in_string = false,
            (true, false, _) => {}
            (false, _, '"') => in_string = true,
            (false, _, '[' | '{') => depth += 1,
            (false, _, ']' | '}') => {
                depth -= 1;
                if depth == 0 {
                    close = Some(open + i);
                    break;
                }
            }
            _ => {}
        }
    }
    let close = close?;
    let inner_end = text[..close].trim_end().len();
    let empty = text[open + 1..inner_end].trim().is_empty();
    let body = serde_json::to_string_pretty(entry)
        .ok()?
        .replace('\n', "\n    ");
    let edited = format!(
        "{}{}\n    {body}{}",
        &text[..inner_end],
        if empty { "" } else { "," },
        &text[inner_end..]
    );
    let mut expected = before;
    expected["signingKeys"].as_array_mut()?.push(entry.clone());
    (serde_json::from_str::<Value>(&edited).ok()? == expected).then_some(edited)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A registry folder holding `alice-1`'s public key and a `signingKeys` entry for it that
    /// grants `community.bob.*` only.
    fn registry(key: &VerifyingKey) -> std::path::PathBuf {
        let root = std::env::temp_dir().join(format!("wop-grant-unit-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&root);
        let write =
            |rel: &str, bytes: &[u8]| crate::error::write(&root.join(rel), bytes).expect("written");
        write(
            &key_file("alice-1"),
            public_pem(key).expect("pem").as_bytes(),
        );
        let entry = signing_keys_entry("alice-1", &["community.bob.*".to_owned()], None);
        write(DISCOVERY, &pretty(&json!({"signingKeys": [entry]})));
        root
    }

    #[test]
    fn a_grant_is_never_widened_nor_a_key_replaced() {
        let key = ed25519_dalek::SigningKey::from_bytes(&[1; 32]).verifying_key();
        let root = registry(&key);
        let staging = Staging::new(&root).expect("staging");
        // Known key, its entry covers another namespace: refused, even with --add-key.
        let e =
            ensure(&staging, &key, "alice-1", "community.alice.x", true).expect_err("not covered");
        assert!(
            e.message.contains("does not cover community.alice.x"),
            "{}",
            e.message
        );
        assert!(e.message.contains("maintainers' decision"), "{}", e.message);
        // Covered: nothing to add, nothing written.
        assert_eq!(
            ensure(&staging, &key, "alice-1", "community.bob.x", false).expect("ok"),
            Vec::<String>::new()
        );
        // Another key under the same id: refused.
        let other = ed25519_dalek::SigningKey::from_bytes(&[2; 32]).verifying_key();
        let e =
            ensure(&staging, &other, "alice-1", "community.bob.x", true).expect_err("another key");
        assert!(
            e.message
                .contains("holds another public key under the id alice-1"),
            "{}",
            e.message
        );
        drop(staging);
        let _ = std::fs::remove_dir_all(&root);
    }

    #[test]
    fn an_entry_is_appended_and_nothing_else_moves() {
        let text = "{\n  \"z\": 1,\n  \"signingKeys\": [\n    {\"keyId\": \"a]\\\"\"}\n  ],\n  \"a\": [2]\n}\n";
        let edited = insert_entry(text, &json!({"keyId": "b"})).expect("inserted");
        assert_eq!(
            edited,
            "{\n  \"z\": 1,\n  \"signingKeys\": [\n    {\"keyId\": \"a]\\\"\"},\n    {\n      \"keyId\": \"b\"\n    }\n  ],\n  \"a\": [2]\n}\n"
        );
        let empty = insert_entry("{\"signingKeys\": []}", &json!({"keyId": "b"})).expect("empty");
        assert_eq!(
            empty,
            "{\"signingKeys\": [\n    {\n      \"keyId\": \"b\"\n    }]}"
        );
        assert_eq!(insert_entry("{\"other\": []}", &json!({})), None);
    }
}
