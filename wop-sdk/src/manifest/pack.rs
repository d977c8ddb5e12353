//! [`Pack`]: a name, a version and its nodes, and what it writes: `pack.json` v2 and the schema
//! files the manifest names.

use super::keys::{
    ENGINES_OPENWOP, RUNTIME_ENTRY, RUNTIME_LANGUAGE, SCHEMA_DIR, X_MAX_CALLS, X_RETRY,
};
use crate::caps::Capability;
use crate::node::{DynNode, Node};
use serde_json::{Map, Value, json};
use std::fmt;

/// A pack: a name, a version and its nodes.
pub struct Pack {
    name: String,
    version: String,
    nodes: Vec<Box<dyn DynNode>>,
}

impl fmt::Debug for Pack {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Pack")
            .field("name", &self.name)
            .field("version", &self.version)
            .field("nodes", &self.type_ids())
            .finish()
    }
}

impl Pack {
    /// An empty pack.
    pub fn new(name: impl Into<String>, version: impl Into<String>) -> Self {
        Self {
            name: name.into(),
            version: version.into(),
            nodes: Vec::new(),
        }
    }

    /// The pack with `node` added.
    #[must_use]
    pub fn node<N: Node>(mut self, node: N) -> Self {
        self.nodes.push(Box::new(node));
        self
    }

    /// The type ids of its nodes, in order.
    pub fn type_ids(&self) -> Vec<&'static str> {
        self.nodes.iter().map(|n| n.spec().type_id).collect()
    }

    /// The pack's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The pack's version.
    pub fn version(&self) -> &str {
        &self.version
    }

    /// The nodes, in declaration order.
    pub fn nodes(&self) -> &[Box<dyn DynNode>] {
        &self.nodes
    }

    /// The node with `type_id`.
    pub fn find(&self, type_id: &str) -> Option<&dyn DynNode> {
        self.nodes
            .iter()
            .find(|n| n.spec().type_id == type_id)
            .map(|n| &**n)
    }

    /// `pack.json` v2.
    ///
    /// `runtime` is `{"language": "javascript", "entry": "index.mjs", "format": "esm"}`: the
    /// folder a production host mounts loads the nodes through that module. Each node names its
    /// schemas by `inputSchemaRef` / `outputSchemaRef` (the files of [`Pack::schema_files`]);
    /// its budget and retry policy are our own keys, `x-maxCalls` and `x-retry`. Every node
    /// calls a model, so the pack declares `peerDependencies: {"aiProviders": "required"}`;
    /// when a node requires `attempts` or `retry_policy`,
    /// `peerDependenciesMeta.aiProviders.facets` lists `callAccounting` (RFC 0248 §C).
    pub fn manifest(&self) -> Value {
        let nodes: Vec<Value> = self.nodes.iter().map(|n| node_json(&**n)).collect();
        let mut m = Map::new();
        m.insert("name".into(), json!(self.name));
        m.insert("version".into(), json!(self.version));
        m.insert("kind".into(), json!("node"));
        m.insert("engines".into(), json!({"openwop": ENGINES_OPENWOP}));
        m.insert(
            "runtime".into(),
            json!({"language": RUNTIME_LANGUAGE, "entry": RUNTIME_ENTRY, "format": "esm"}),
        );
        m.insert("nodes".into(), Value::Array(nodes));
        if !self.nodes.is_empty() {
            m.insert(
                "peerDependencies".into(),
                json!({"aiProviders": "required"}),
            );
        }
        let accounting = self.nodes.iter().any(|n| {
            n.spec()
                .requires
                .iter()
                .any(|c| matches!(c, Capability::Attempts | Capability::RetryPolicy))
        });
        if accounting {
            m.insert(
                "peerDependenciesMeta".into(),
                json!({"aiProviders": {"facets": ["callAccounting"]}}),
            );
        }
        Value::Object(m)
    }

    /// Every schema file the manifest names, as (path relative to the pack folder, schema), in
    /// node order: `schemas/<typeId>.input.json` then `schemas/<typeId>.output.json`.
    pub fn schema_files(&self) -> Vec<(String, Value)> {
        self.nodes
            .iter()
            .flat_map(|n| {
                let id = n.spec().type_id;
                [
                    (schema_path(id, "input"), n.input_schema()),
                    (schema_path(id, "output"), n.output_schema()),
                ]
            })
            .collect()
    }
}

/// `schemas/<typeId>.<which>.json`. A type id holds only letters, digits, `.`, `_` and `-`, so
/// the name is a safe file name on every platform.
fn schema_path(type_id: &str, which: &str) -> String {
    format!("{SCHEMA_DIR}/{type_id}.{which}.json")
}

/// One node's entry in `nodes`.
fn node_json(node: &dyn DynNode) -> Value {
    let spec = node.spec();
    let mut m = Map::new();
    m.insert("typeId".into(), json!(spec.type_id));
    m.insert("version".into(), json!(spec.version));
    m.insert("category".into(), json!(spec.category.as_str()));
    m.insert("role".into(), json!(spec.role.as_str()));
    if let Some(label) = spec.label {
        m.insert("label".into(), json!(label));
    }
    if let Some(description) = spec.description {
        m.insert("description".into(), json!(description));
    }
    m.insert(
        "inputSchemaRef".into(),
        json!(schema_path(spec.type_id, "input")),
    );
    m.insert(
        "outputSchemaRef".into(),
        json!(schema_path(spec.type_id, "output")),
    );
    if let Some(max_calls) = spec.max_calls {
        m.insert(X_MAX_CALLS.into(), json!(max_calls));
    }
    // `to_wire` is `None` for the host default: no `x-retry` then.
    if let Some(retry) = spec.retry.to_wire() {
        m.insert(
            X_RETRY.into(),
            serde_json::to_value(retry).unwrap_or(Value::Null),
        );
    }
    Value::Object(m)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::manifest::validate_manifest;
    use wop_sdk_rules::sets;

    #[test]
    fn runtime_enums_are_the_shared_sets() {
        use crate::node::{Category, Role};
        fn same<T: fmt::Debug + Copy>(
            all: &[T],
            wire: fn(T) -> &'static str,
            set: &[sets::Member],
        ) {
            assert_eq!(all.len(), set.len());
            for (v, m) in all.iter().zip(set) {
                assert_eq!((wire(*v), format!("{v:?}")), (m.wire, m.variant.to_owned()));
            }
        }
        use Category as C;
        same(
            &[
                C::Chat,
                C::Control,
                C::Data,
                C::Canvas,
                C::Coordination,
                C::Integration,
            ],
            C::as_str,
            sets::CATEGORIES,
        );
        same(&[Role::Pure, Role::SideEffect], Role::as_str, sets::ROLES);
        use Capability as K;
        same(
            &[
                K::AiProviders,
                K::Attempts,
                K::RetryPolicy,
                K::ProviderUsage,
                K::Replay,
            ],
            K::name,
            sets::CAPABILITIES,
        );
    }

    #[test]
    fn an_empty_pack_is_refused() {
        let m = Pack::new("community.demo.empty", "0.1.0").manifest();
        let errors = validate_manifest(&m).err().unwrap_or_default();
        assert_eq!(errors.len(), 1, "{errors:#?}");
        assert!(errors[0].contains("at least one node"));
        assert!(m.get("peerDependencies").is_none());
    }
}
