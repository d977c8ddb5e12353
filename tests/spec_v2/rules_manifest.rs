//! The rules, in our words: `pack.json` and the schema files it names.

use super::*;

/// `pack.json` v2 (with the schema files the pack ships).
pub(crate) fn manifest_problems(m: &Value, files: &[(String, Value)]) -> Vec<String> {
    let mut out = Vec::new();
    let Some(root) = m.as_object() else {
        return vec!["not an object".into()];
    };
    closed(
        root,
        "$",
        &[
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
        ],
        &mut out,
    );
    // `$defs/Signing`: closed `{keyId, scheme}`, one scheme; optional on a bare manifest.
    if let Some(signing) = m.get("signing") {
        match signing.as_object() {
            Some(obj) => {
                closed(obj, "$.signing", &["keyId", "scheme"], &mut out);
                if !signing["keyId"]
                    .as_str()
                    .is_some_and(|k| id_chars(k, 1, 128))
                {
                    out.push(format!("signing.keyId {}: not a key id", signing["keyId"]));
                }
                if signing["scheme"] != "ed25519-canonical-json" {
                    out.push(format!(
                        "signing.scheme {}: must be ed25519-canonical-json",
                        signing["scheme"]
                    ));
                }
            }
            None => out.push("signing: not an object".into()),
        }
    }
    if !m["name"].as_str().is_some_and(pack_name_ok) {
        out.push(format!("name {}: not namespace.owner.pack", m["name"]));
    }
    if m["kind"] != "node" {
        out.push("kind: must be node".into());
    }
    let range = m["engines"]["openwop"].as_str().unwrap_or("");
    if !(range.starts_with(">=") && range.contains(" <") && range.ends_with(".0.0")) {
        out.push(format!("engines.openwop {range}: needs an upper bound"));
    }
    let language = m["runtime"]["language"].as_str().unwrap_or("");
    if ![
        "javascript",
        "python",
        "go",
        "wasm",
        "wasm-component",
        "remote",
    ]
    .contains(&language)
    {
        out.push(format!("runtime.language {language}: not a v2 runtime"));
    }
    let entry = m["runtime"]["entry"].as_str().unwrap_or("");
    if entry.is_empty() || entry.starts_with('/') || entry.split('/').any(|p| p == "..") {
        out.push(format!("runtime.entry {entry}: not a file inside the pack"));
    }
    let nodes = m["nodes"].as_array().cloned().unwrap_or_default();
    if nodes.is_empty() {
        out.push("nodes: at least one".into());
    }
    for (i, n) in nodes.iter().enumerate() {
        let at = format!("nodes[{i}]");
        let Some(obj) = n.as_object() else {
            out.push(format!("{at}: not an object"));
            continue;
        };
        closed(
            obj,
            &at,
            &[
                "typeId",
                "version",
                "label",
                "description",
                "category",
                "role",
                "inputSchemaRef",
                "outputSchemaRef",
            ],
            &mut out,
        );
        for req in ["typeId", "version", "category", "role"] {
            if !obj.contains_key(req) {
                out.push(format!("{at}.{req}: required"));
            }
        }
        if !n["typeId"].as_str().is_some_and(type_id_ok) {
            out.push(format!("{at}.typeId {}: breaks the grammar", n["typeId"]));
        }
        let category = n["category"].as_str().unwrap_or("");
        if ![
            "chat",
            "control",
            "data",
            "canvas",
            "coordination",
            "integration",
        ]
        .contains(&category)
        {
            out.push(format!("{at}.category {category}: not a v2 category"));
        }
        for r in ["inputSchemaRef", "outputSchemaRef"] {
            if let Some(path) = n.get(r) {
                let path = path.as_str().unwrap_or("");
                if !files.iter().any(|(f, s)| f == path && s.is_object()) {
                    out.push(format!("{at}.{r} {path}: no such schema file in the pack"));
                }
            }
        }
    }
    if let Some(meta) = m.get("peerDependenciesMeta") {
        for (family, entry) in meta.as_object().cloned().unwrap_or_default() {
            let facets = entry["facets"].as_array().cloned().unwrap_or_default();
            if facets.is_empty() {
                out.push(format!(
                    "peerDependenciesMeta.{family}.facets: at least one"
                ));
            }
            for f in facets {
                // RFC 0248 §C makes `callAccounting` a facet of `aiProviders`.
                let declared = family == "aiProviders"
                    && ["callAccounting", "providers", "byok", "policies", "input"]
                        .contains(&f.as_str().unwrap_or(""));
                if !declared {
                    out.push(format!(
                        "peerDependenciesMeta.{family}.facets {f}: not declared"
                    ));
                }
            }
        }
    }
    out
}
