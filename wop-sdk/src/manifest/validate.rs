//! [`validate_manifest`]: the pack.json v2 rules, each broken rule reported as one line naming
//! its field: closed objects (with the v2 spelling of a renamed key), the grammars of names, type
//! ids and versions, `engines`, `runtime`, `peerDependencies(Meta)` and each node.

use super::keys::{ENGINES_OPENWOP, X_MAX_CALLS, X_RETRY, is_semver, is_type_id};
use crate::policy::RetryPolicy;
use serde_json::{Map, Value, json};
use wop_sdk_rules::{grammar, sets};

/// The keys a pack.json v2 root may carry, besides extension keys.
const ROOT_KEYS: &[&str] = &[
    "kind",
    "name",
    "version",
    "description",
    "author",
    "license",
    "homepage",
    "repository",
    "keywords",
    "engines",
    "dependencies",
    "peerDependencies",
    "peerDependenciesMeta",
    "nodes",
    "agents",
    "runtime",
    "signing",
    "connector",
];
/// The keys a pack.json v2 node may carry, besides extension keys (`x-…`).
const NODE_KEYS: &[&str] = &[
    "typeId",
    "version",
    "label",
    "description",
    "category",
    "role",
    "capabilities",
    "configSchemaRef",
    "inputSchemaRef",
    "outputSchemaRef",
    "outputs",
    "envelopeContractRef",
    "artifact",
    "mcp",
    "requiresSecrets",
    "requiredCredentials",
    "auth",
    "requiredModelCapabilities",
    "fallbackModel",
];
/// The keys of `runtime`.
const RUNTIME_KEYS: &[&str] = &[
    "language",
    "entry",
    "format",
    "minRuntimeVersion",
    "requires",
    "mcpServer",
];
/// What each key of the first manifests is called now.
const RENAMED: &[(&str, &str)] = &[
    ("inputSchema", "inputSchemaRef (a file)"),
    ("outputSchema", "outputSchemaRef (a file)"),
    ("configSchema", "configSchemaRef (a file)"),
    ("maxCalls", X_MAX_CALLS),
    ("retry", X_RETRY),
];

/// Reports each key of `obj` (at path `at`) that is neither in `known` nor an extension key.
fn unknown_keys(obj: &Map<String, Value>, at: &str, known: &[&str], errors: &mut Vec<String>) {
    for key in obj.keys() {
        if known.contains(&key.as_str()) || grammar::is_extension_key(key) {
            continue;
        }
        let path = if at.is_empty() {
            format!("`{key}`")
        } else {
            format!("`{at}.{key}`")
        };
        match RENAMED.iter().find(|(old, _)| old == key) {
            Some((_, now)) => errors.push(format!(
                "{path} is not a pack.json v2 key: v2 spells it `{now}`"
            )),
            None => errors.push(format!(
                "{path} is not a pack.json v2 key: the object is closed; an own key takes an `x-`, `openwop-` or `vendor.` prefix"
            )),
        }
    }
}

/// Whether `range` is an `engines.openwop` range with an upper bound: `>=1.0.0 <3.0.0`.
fn engines_ok(range: &str) -> bool {
    let Some((low, high)) = range.split_once(' ') else {
        return false;
    };
    let numbers = |s: &str, max: usize| {
        let parts: Vec<&str> = s.split('.').collect();
        !parts.is_empty()
            && parts.len() <= max
            && parts
                .iter()
                .all(|p| !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit()))
    };
    low.strip_prefix(">=").is_some_and(|l| numbers(l, 3))
        && high
            .strip_prefix('<')
            .and_then(|h| h.strip_suffix(".0.0"))
            .is_some_and(|h| numbers(h, 1))
}

/// Checks `manifest` against the pack.json v2 rules; every broken rule is one line naming the
/// field. The grammar messages are the ones the macros give at compile time.
pub fn validate_manifest(manifest: &Value) -> Result<(), Vec<String>> {
    let mut errors = Vec::new();
    let Some(root) = manifest.as_object() else {
        return Err(vec!["a manifest must be a JSON object".to_owned()]);
    };
    unknown_keys(root, "", ROOT_KEYS, &mut errors);
    let str_at = |v: &Value, key: &str| v.get(key).and_then(Value::as_str).map(str::to_owned);
    match str_at(manifest, "name") {
        Some(name) => {
            if let Some(problem) = grammar::pack_name_problem(&name) {
                errors.push(format!(
                    "`name` `{name}` breaks the OpenWOP pack name grammar: {problem}"
                ));
            }
        }
        None => errors.push("`name` is required (a string)".to_owned()),
    }
    match str_at(manifest, "version") {
        Some(v) => {
            if let Some(problem) = grammar::semver_problem(&v) {
                errors.push(format!(
                    "`version` `{v}` is not a semantic version: {problem}"
                ));
            }
        }
        None => errors.push("`version` is required (a string)".to_owned()),
    }
    if manifest.get("kind") != Some(&json!("node")) {
        errors.push("`kind` must be `\"node\"`".to_owned());
    }
    match manifest.pointer("/engines/openwop").and_then(Value::as_str) {
        Some(range) if engines_ok(range) => {}
        _ => errors.push(format!(
            "`engines.openwop` must be a range with an upper bound, like `{ENGINES_OPENWOP}`"
        )),
    }
    validate_runtime(manifest.get("runtime"), &mut errors);
    let nodes = manifest.get("nodes").and_then(Value::as_array);
    match nodes {
        None => errors.push("`nodes` is required (an array)".to_owned()),
        Some(nodes) if nodes.is_empty() => {
            errors.push("`nodes` is empty: a node pack declares at least one node".to_owned())
        }
        Some(nodes) => {
            let mut seen = Vec::new();
            for (i, node) in nodes.iter().enumerate() {
                validate_node(i, node, &mut seen, &mut errors);
            }
            if manifest.pointer("/peerDependencies/aiProviders") != Some(&json!("required")) {
                errors.push(
                    "`peerDependencies.aiProviders` must be `\"required\"`: the nodes call models"
                        .to_owned(),
                );
            }
        }
    }
    if let Some(peers) = manifest.get("peerDependencies")
        && !peers
            .as_object()
            .is_some_and(|p| p.values().all(Value::is_string))
    {
        errors.push("`peerDependencies` must map each capability family to a string".to_owned());
    }
    validate_peer_meta(manifest.get("peerDependenciesMeta"), &mut errors);
    if let Some(signing) = manifest.get("signing") {
        validate_signing(signing, &mut errors);
    }
    if errors.is_empty() {
        Ok(())
    } else {
        Err(errors)
    }
}

/// `signing` (optional; `cargo wop sign` writes it): exactly `{keyId, scheme}`, the one scheme
/// `ed25519-canonical-json`; no extension keys (the v1 `method`/`publicKeyRef`/`signatureRef`
/// block is not v2).
fn validate_signing(signing: &Value, errors: &mut Vec<String>) {
    let Some(obj) = signing.as_object() else {
        errors.push("`signing` must be an object `{keyId, scheme}`".to_owned());
        return;
    };
    for key in obj
        .keys()
        .filter(|k| !["keyId", "scheme"].contains(&k.as_str()))
    {
        errors.push(format!(
            "`signing.{key}` is not allowed: v2 signing is exactly `{{keyId, scheme}}`"
        ));
    }
    let key_id = obj.get("keyId").and_then(Value::as_str).unwrap_or("");
    if !(1..=128).contains(&key_id.len())
        || !key_id
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"._~-".contains(&b))
    {
        errors.push("`signing.keyId` must be 1 to 128 of `A-Za-z0-9._~-`".to_owned());
    }
    if obj.get("scheme").and_then(Value::as_str) != Some("ed25519-canonical-json") {
        errors.push("`signing.scheme` must be `\"ed25519-canonical-json\"`".to_owned());
    }
}

/// `runtime`: `{language, entry}`, a closed object.
fn validate_runtime(runtime: Option<&Value>, errors: &mut Vec<String>) {
    let Some(rt) = runtime.and_then(Value::as_object) else {
        errors.push("`runtime` is required: `{language, entry}`".to_owned());
        return;
    };
    unknown_keys(rt, "runtime", RUNTIME_KEYS, errors);
    match rt.get("language").and_then(Value::as_str) {
        Some(l) if sets::RUNTIME_LANGUAGES.contains(&l) => {}
        _ => errors.push(format!(
            "`runtime.language` must be one of {}",
            sets::quoted(sets::RUNTIME_LANGUAGES.iter().copied())
        )),
    }
    if rt
        .get("entry")
        .and_then(Value::as_str)
        .is_none_or(str::is_empty)
    {
        errors.push(
            "`runtime.entry` is required: the file in the pack a host loads, e.g. `index.mjs`"
                .to_owned(),
        );
    }
}

/// `peerDependenciesMeta`: per family, only `optional` and `facets`, each facet declared once.
fn validate_peer_meta(meta: Option<&Value>, errors: &mut Vec<String>) {
    let Some(meta) = meta else { return };
    let Some(meta) = meta.as_object() else {
        errors.push("`peerDependenciesMeta` must be an object".to_owned());
        return;
    };
    for (family, entry) in meta {
        let at = format!("peerDependenciesMeta.{family}");
        let Some(entry) = entry.as_object() else {
            errors.push(format!("`{at}` must be an object"));
            continue;
        };
        for key in entry.keys() {
            if key != "optional" && key != "facets" {
                errors.push(format!(
                    "`{at}.{key}` is not allowed: an entry holds only `optional` and `facets`"
                ));
            }
        }
        if entry.get("optional").is_some_and(|o| !o.is_boolean()) {
            errors.push(format!("`{at}.optional` must be a boolean"));
        }
        let Some(facets) = entry.get("facets") else {
            continue;
        };
        let Some(facets) = facets.as_array().filter(|f| !f.is_empty()) else {
            errors.push(format!(
                "`{at}.facets` must be a non-empty array of facet names"
            ));
            continue;
        };
        let declared: &[&str] = if family == "aiProviders" {
            sets::AI_PROVIDER_FACETS
        } else {
            &[]
        };
        for (i, facet) in facets.iter().enumerate() {
            let Some(facet) = facet.as_str() else {
                errors.push(format!("`{at}.facets[{i}]` must be a string"));
                continue;
            };
            if facets[..i].iter().any(|f| f.as_str() == Some(facet)) {
                errors.push(format!("`{at}.facets[{i}]` `{facet}` is listed twice"));
            } else if family == "aiProviders"
                && let Some(problem) = grammar::facet_problem(facet, declared)
            {
                errors.push(format!("`{at}.facets[{i}]` `{facet}`: {problem}"));
            }
        }
    }
}

/// `nodes[i]`: a closed object with a unique type id; `seen` holds the ids before it.
fn validate_node(i: usize, node: &Value, seen: &mut Vec<String>, errors: &mut Vec<String>) {
    let at = format!("nodes[{i}]");
    let Some(obj) = node.as_object() else {
        errors.push(format!("`{at}` must be an object"));
        return;
    };
    unknown_keys(obj, &at, NODE_KEYS, errors);
    match obj.get("typeId").and_then(Value::as_str) {
        Some(id) if !is_type_id(id) => errors.push(format!(
            "`{at}.typeId` `{id}` breaks the OpenWOP type id grammar: {}",
            grammar::type_id_problem(id).unwrap_or_default()
        )),
        Some(id) if seen.iter().any(|s| s == id) => {
            errors.push(format!("`{at}.typeId` `{id}` is declared twice"));
        }
        Some(id) => seen.push(id.to_owned()),
        None => errors.push(format!("`{at}.typeId` is required (a string)")),
    }
    match obj.get("version").and_then(Value::as_str) {
        Some(v) if is_semver(v) => {}
        _ => errors.push(format!("`{at}.version` must be semver")),
    }
    match obj.get("category").and_then(Value::as_str) {
        Some(c) if sets::find_wire(sets::CATEGORIES, c).is_some() => {}
        _ => errors.push(format!(
            "`{at}.category` must be one of {}",
            sets::list_wire(sets::CATEGORIES)
        )),
    }
    if obj
        .get("role")
        .and_then(Value::as_str)
        .is_none_or(str::is_empty)
    {
        errors.push(format!("`{at}.role` is required (a non-empty string)"));
    }
    for key in ["inputSchemaRef", "outputSchemaRef", "configSchemaRef"] {
        if obj
            .get(key)
            .is_some_and(|s| s.as_str().is_none_or(str::is_empty))
        {
            errors.push(format!(
                "`{at}.{key}` must be a path inside the pack (a non-empty string)"
            ));
        }
    }
    if obj
        .get(X_MAX_CALLS)
        .is_some_and(|m| m.as_u64().is_none_or(|m| m == 0))
    {
        errors.push(format!(
            "`{at}.{X_MAX_CALLS}` must be an integer of at least 1"
        ));
    }
    if obj
        .get(X_RETRY)
        .is_some_and(|r| RetryPolicy::from_json(r).is_err())
    {
        errors.push(format!(
            "`{at}.{X_RETRY}` must be `{{maxAttempts?: 1..16, growMaxTokens?: bool}}`"
        ));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn old_node_keys_are_named_with_their_v2_spelling() {
        let m = json!({"name": "community.demo.x", "version": "1.0.0", "kind": "node",
            "engines": {"openwop": ENGINES_OPENWOP},
            "runtime": {"language": "javascript", "entry": "index.mjs"},
            "peerDependencies": {"aiProviders": "required"},
            "nodes": [{"typeId": "community.demo.x.y", "version": "1.0.0", "category": "chat",
                "role": "pure", "inputSchema": {}, "maxCalls": 2, "x-maxCalls": 2}]});
        let errors = validate_manifest(&m).err().unwrap_or_default();
        assert_eq!(errors.len(), 2, "{errors:#?}");
        assert!(
            errors[0].contains("`nodes[0].inputSchema`") && errors[0].contains("inputSchemaRef")
        );
        assert!(errors[1].contains("`nodes[0].maxCalls`") && errors[1].contains("x-maxCalls"));
    }

    #[test]
    fn reports_every_broken_rule() {
        let m = json!({"name": "bookai", "version": "1", "kind": "nodes", "nodes": [
            {"typeId": "x", "version": "1.0.0", "category": "chatty", "role": "pure"}
        ]});
        let errors = validate_manifest(&m).err().unwrap_or_default();
        // name, version, kind, engines, runtime, typeId, category, peerDependencies
        assert_eq!(errors.len(), 8, "{errors:#?}");
    }
}
