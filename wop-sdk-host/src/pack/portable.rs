//! The `pack.json` a pack folder carries: the manifest with no extension keys, so that it is
//! valid both against the official v2 schema and against openwop-registry's own
//! `schemas/node-pack-manifest.schema.json` (which closes every object, extension keys included),
//! and the registry's CI accepts it as it is. What this SDK adds (each node's `x-maxCalls` and
//! `x-retry`, the bridge ABI, the addon's digest and platforms) goes into the generated
//! `index.mjs` instead, as `export const wopSdk = {…}` on one line: a registry install keeps that
//! file, a person or a tool reads it there, and the host never needed it (the node's budget is
//! enforced in the addon and its retry policy travels with each `ctx.callAI` request).

use serde_json::{Map, Value};
use wop_sdk::rules::grammar::is_extension_key;

/// The line of `index.mjs` that holds the SDK's own metadata, up to its JSON.
pub const WOP_SDK_LINE: &str = "export const wopSdk = ";

/// `manifest` without extension keys (at its root and in each node), and the nodes' extension
/// keys by type id (`{"<typeId>": {"x-maxCalls": 4, "x-retry": {…}}}`, nodes without any left
/// out).
pub fn split(mut manifest: Value) -> (Value, Map<String, Value>) {
    let mut by_node = Map::new();
    if let Some(root) = manifest.as_object_mut() {
        root.retain(|k, _| !is_extension_key(k));
    }
    if let Some(nodes) = manifest.get_mut("nodes").and_then(Value::as_array_mut) {
        for node in nodes.iter_mut().filter_map(Value::as_object_mut) {
            let keys: Vec<String> = node
                .keys()
                .filter(|k| is_extension_key(k))
                .cloned()
                .collect();
            let own: Map<String, Value> = keys
                .into_iter()
                .filter_map(|k| node.remove(&k).map(|v| (k, v)))
                .collect();
            if let (false, Some(id)) = (own.is_empty(), node.get("typeId").and_then(Value::as_str))
            {
                by_node.insert(id.to_owned(), Value::Object(own));
            }
        }
    }
    (manifest, by_node)
}

/// What the generated `index.mjs` exercises of the platform (RFC 0076 `runtime.requires`, which a
/// sandboxing host evaluates at install time): it reads `WOP_SDK_HOST_CAPABILITIES` and
/// `WOP_SDK_ADDON_DIR` (`env.read`), reads and writes the addon folder (`fs.read`, `fs.write`),
/// and loads a new addon in a child Node process first (`subprocess`).
pub const BRIDGE_REQUIRES: &[&str] = &["env.read", "fs.read", "fs.write", "subprocess"];

/// Adds [`BRIDGE_REQUIRES`] to `runtime.requires` (kept sorted, each once).
pub fn declare_requires(manifest: &mut Value) {
    let Some(runtime) = manifest.get_mut("runtime").and_then(Value::as_object_mut) else {
        return;
    };
    let mut all: Vec<String> = runtime
        .get("requires")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .map(str::to_owned)
        .chain(BRIDGE_REQUIRES.iter().map(|r| (*r).to_owned()))
        .collect();
    all.sort();
    all.dedup();
    runtime.insert(
        "requires".into(),
        Value::Array(all.into_iter().map(Value::String).collect()),
    );
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn extension_keys_leave_the_manifest_and_are_kept_by_node() {
        let m = json!({"name": "community.a.b", "x-top": 1, "nodes": [
            {"typeId": "community.a.b.one", "x-maxCalls": 4, "x-retry": {"maxAttempts": 2}, "role": "pure"},
            {"typeId": "community.a.b.two", "role": "pure"}]});
        let (portable, by_node) = split(m);
        assert_eq!(
            portable,
            json!({"name": "community.a.b", "nodes": [
                {"typeId": "community.a.b.one", "role": "pure"},
                {"typeId": "community.a.b.two", "role": "pure"}]})
        );
        assert_eq!(
            Value::Object(by_node),
            json!({"community.a.b.one": {"x-maxCalls": 4, "x-retry": {"maxAttempts": 2}}})
        );
    }

    #[test]
    fn the_bridges_platform_needs_are_declared_once() {
        let mut m =
            json!({"runtime": {"language": "javascript", "requires": ["net.outbound", "fs.read"]}});
        declare_requires(&mut m);
        assert_eq!(
            m["runtime"]["requires"],
            json!([
                "env.read",
                "fs.read",
                "fs.write",
                "net.outbound",
                "subprocess"
            ])
        );
    }
}
