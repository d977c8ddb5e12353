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

/// The current time as RFC 3339 UTC with seconds (`2026-12-04T15:28:27Z`): a version
/// manifest's `publishedAt`.
pub fn now_rfc3339() -> String {
    let secs = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0);
    rfc3339(secs)
}

/// `secs` since the epoch as RFC 3339 UTC (the civil-from-days algorithm of H. Hinnant).
pub fn rfc3339(secs: u64) -> String {
    let (days, rem) = (secs / 86_400, secs % 86_400);
    let z = days as i64 + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    format!(
        "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}Z",
        rem / 3600,
        rem % 3600 / 60,
        rem % 60
    )
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
    fn rfc3339_of_known_instants() {
        assert_eq!(rfc3339(0), "1970-01-01T00:00:00Z");
        assert_eq!(rfc3339(951_782_400), "2000-02-29T00:00:00Z");
        assert_eq!(rfc3339(1_796_398_107), "2026-12-04T15:28:27Z");
    }

    #[test]
    fn prereleases_sort_before_their_release() {
        let mut v = ["1.0.0", "1.0.0-rc.1", "0.9.10", "0.9.9"];
        v.sort_by_key(|v| semver_key(v));
        assert_eq!(v, ["0.9.9", "0.9.10", "1.0.0-rc.1", "1.0.0"]);
    }
}
