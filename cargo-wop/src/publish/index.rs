//! The per-pack `index.json` `publish` writes where the registry's own `build-index.mjs` does
//! not: the v2 tree (the registry has no script for it yet), and the v1 tree of a folder that is
//! not a checkout of openwop-registry. Its shape is the one `build-index.mjs` writes for a node
//! pack (the same keys in the same order), so a client reads both alike; in a checkout the
//! registry's script writes the v1 index itself.

use crate::error::{Result, json};
use serde_json::{Map, Value, json};
use std::path::Path;

/// SemVer precedence of the release part (`1.2.3-rc.1` sorts before `1.2.3`).
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

/// The current time as RFC 3339 UTC (`2026-12-04T15:28:27.123Z`): a version manifest's
/// `publishedAt`.
pub fn now_rfc3339() -> String {
    wop_sdk::wire::rfc3339(std::time::SystemTime::now())
}

/// The pack's `index.json` in `tree`, with this version's row added or replaced. `vm` is the
/// version manifest as served.
pub fn pack_index(path: &Path, vm: &Value, tree: &str) -> Result<Value> {
    let name = vm["name"].as_str().unwrap_or("");
    let version = vm["version"].as_str().unwrap_or("");
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
    let signing = &vm["signing"];
    let mut row = Map::new();
    row.insert("version".into(), json!(version));
    row.insert("publishedAt".into(), vm["publishedAt"].clone());
    row.insert("manifestUrl".into(), json!(format!("{base}.json")));
    row.insert("tarballUrl".into(), json!(format!("{base}.tgz")));
    row.insert("signatureUrl".into(), json!(format!("{base}.sig")));
    if tree == "v1" {
        row.insert("signingMethod".into(), signing["method"].clone());
        row.insert("signingKeyId".into(), signing["publicKeyRef"].clone());
    } else {
        row.insert("signingScheme".into(), signing["scheme"].clone());
        row.insert("signingKeyId".into(), signing["keyId"].clone());
    }
    row.insert("integrity".into(), vm["integrity"].clone());
    row.insert("deprecated".into(), json!(false));
    row.insert("yanked".into(), json!(false));
    versions.push(Value::Object(row));
    versions.sort_by_key(|row| semver_key(row["version"].as_str().unwrap_or("")));
    let type_ids: Vec<Value> = vm["nodes"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|n| n.get("typeId").cloned())
        .collect();
    let latest = versions
        .iter()
        .rev()
        .find(|row| !row["version"].as_str().unwrap_or("").contains('-'))
        .or(versions.last())
        .and_then(|row| row.get("version").cloned())
        .unwrap_or(Value::Null);
    let text = |k: &str| vm.get(k).cloned().unwrap_or(json!(""));
    let mut doc = Map::new();
    doc.insert("name".into(), json!(name));
    doc.insert(
        "kind".into(),
        vm.get("kind").cloned().unwrap_or(json!("node")),
    );
    doc.insert("description".into(), text("description"));
    doc.insert("author".into(), text("author"));
    doc.insert("license".into(), text("license"));
    for key in ["homepage", "repository"] {
        if let Some(v) = vm.get(key) {
            doc.insert(key.into(), v.clone());
        }
    }
    doc.insert("tags".into(), vm.get("tags").cloned().unwrap_or(json!([])));
    let node_count = type_ids.len();
    doc.insert("typeIds".into(), Value::Array(type_ids));
    doc.insert("nodeCount".into(), json!(node_count));
    doc.insert("agentCount".into(), json!(0));
    let all_deprecated = versions.iter().all(|v| v["deprecated"] == json!(true));
    doc.insert("versions".into(), Value::Array(versions));
    doc.insert("latest".into(), latest);
    doc.insert("deprecated".into(), json!(all_deprecated));
    Ok(Value::Object(doc))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prereleases_sort_before_their_release() {
        let mut v = ["1.0.0", "1.0.0-rc.1", "0.9.10", "0.9.9"];
        v.sort_by_key(|v| semver_key(v));
        assert_eq!(v, ["0.9.9", "0.9.10", "1.0.0-rc.1", "1.0.0"]);
    }
}
