//! A pack of nodes and its `pack.json` (v2): what `pack! { ... }` generates, and the checks a
//! manifest must pass.
//!
//! ```rust,no_run
//! use wop_sdk::manifest::{Pack, validate_manifest};
//! # use wop_sdk::{NodeCtx, NodeError, wop_node};
//! # #[wop_node(type_id = "community.demo.bookai.review", version = "1.0.0")]
//! # async fn review(ctx: &NodeCtx<'_>, input: String) -> Result<String, NodeError> { Ok(input) }
//! let pack = Pack::new("community.demo.bookai", "0.1.0").node(Review);
//! let json = pack.manifest();
//! assert_eq!(validate_manifest(&json), Ok(()));
//! assert!(pack.find("community.demo.bookai.review").is_some());
//! ```

use crate::caps::Capability;
use crate::node::{DynNode, Node};
use crate::policy::RetryPolicy;
use serde_json::{Map, Value, json};
use std::fmt;
use wop_sdk_rules::{grammar, sets};

/// The `engines.openwop` range a v2 pack declares.
pub const ENGINES_OPENWOP: &str = ">=2.0 <3.0.0";
/// The namespaces a pack name starts with.
pub const NAMESPACES: &[&str] = wop_sdk_rules::sets::PACK_NAMESPACES;

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
    /// Every node calls a model, so a pack with nodes declares
    /// `peerDependencies: {"aiProviders": "required"}`; when a node requires `attempts` or
    /// `retry_policy`, `peerDependenciesMeta.aiProviders.facets` lists `callAccounting`.
    pub fn manifest(&self) -> Value {
        let nodes: Vec<Value> = self.nodes.iter().map(|n| node_json(&**n)).collect();
        let mut m = Map::new();
        m.insert("name".into(), json!(self.name));
        m.insert("version".into(), json!(self.version));
        m.insert("kind".into(), json!("node"));
        m.insert("engines".into(), json!({"openwop": ENGINES_OPENWOP}));
        m.insert(
            "runtime".into(),
            json!({"language": "rust", "entry": self.name}),
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
}

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
    m.insert("inputSchema".into(), node.input_schema());
    m.insert("outputSchema".into(), node.output_schema());
    if let Some(max_calls) = spec.max_calls {
        m.insert("maxCalls".into(), json!(max_calls));
    }
    // `to_wire` is `None` for the host default: no `retry` then.
    if let Some(retry) = spec.retry.to_wire() {
        m.insert(
            "retry".into(),
            serde_json::to_value(retry).unwrap_or(Value::Null),
        );
    }
    Value::Object(m)
}

/// Whether `name` is a pack name: `namespace.owner.pack` (see
/// [`rules::grammar::pack_name_problem`](wop_sdk_rules::grammar::pack_name_problem)).
pub fn is_pack_name(name: &str) -> bool {
    grammar::pack_name_problem(name).is_none()
}

/// Whether `id` is a node type id (see
/// [`rules::grammar::type_id_problem`](wop_sdk_rules::grammar::type_id_problem)).
pub fn is_type_id(id: &str) -> bool {
    grammar::type_id_problem(id).is_none()
}

/// Whether `v` is a semantic version `MAJOR.MINOR.PATCH[-pre][+build]`.
pub fn is_semver(v: &str) -> bool {
    grammar::semver_problem(v).is_none()
}

/// Checks `manifest` against the pack.json v2 rules; every broken rule is one line.
pub fn validate_manifest(manifest: &Value) -> Result<(), Vec<String>> {
    let mut errors = Vec::new();
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
    if manifest.pointer("/engines/openwop") != Some(&json!(ENGINES_OPENWOP)) {
        errors.push(format!("`engines.openwop` must be `{ENGINES_OPENWOP}`"));
    }
    for key in ["language", "entry"] {
        if manifest
            .pointer(&format!("/runtime/{key}"))
            .and_then(Value::as_str)
            .is_none_or(str::is_empty)
        {
            errors.push(format!("`runtime.{key}` is required (a non-empty string)"));
        }
    }
    let nodes = manifest.get("nodes").and_then(Value::as_array);
    match nodes {
        None => errors.push("`nodes` is required (an array)".to_owned()),
        Some(nodes) => {
            let mut seen = Vec::new();
            for (i, node) in nodes.iter().enumerate() {
                validate_node(i, node, &mut seen, &mut errors);
            }
            if !nodes.is_empty()
                && manifest.pointer("/peerDependencies/aiProviders") != Some(&json!("required"))
            {
                errors.push(
                    "`peerDependencies.aiProviders` must be `\"required\"`: the nodes call models"
                        .to_owned(),
                );
            }
        }
    }
    if let Some(facets) = manifest.pointer("/peerDependenciesMeta/aiProviders/facets")
        && !facets
            .as_array()
            .is_some_and(|f| f.iter().all(Value::is_string))
    {
        errors.push(
            "`peerDependenciesMeta.aiProviders.facets` must be an array of strings".to_owned(),
        );
    }
    if errors.is_empty() {
        Ok(())
    } else {
        Err(errors)
    }
}

fn validate_node(i: usize, node: &Value, seen: &mut Vec<String>, errors: &mut Vec<String>) {
    let at = format!("nodes[{i}]");
    let Some(obj) = node.as_object() else {
        errors.push(format!("`{at}` must be an object"));
        return;
    };
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
    for key in ["inputSchema", "outputSchema", "configSchema"] {
        if obj
            .get(key)
            .is_some_and(|s| !s.is_object() && !s.is_boolean())
        {
            errors.push(format!(
                "`{at}.{key}` must be a JSON Schema (object or bool)"
            ));
        }
    }
    if obj
        .get("maxCalls")
        .is_some_and(|m| m.as_u64().is_none_or(|m| m == 0))
    {
        errors.push(format!("`{at}.maxCalls` must be an integer of at least 1"));
    }
    if obj
        .get("retry")
        .is_some_and(|r| RetryPolicy::from_json(r).is_err())
    {
        errors.push(format!(
            "`{at}.retry` must be `{{maxAttempts?: 1..16, growMaxTokens?: bool}}`"
        ));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn grammars() {
        assert!(is_pack_name("community.demo.bookai"));
        assert!(!is_pack_name("community.bookai"));
        assert!(!is_pack_name("bookai"));
        assert!(!is_pack_name("acme.x.bookai"));
        assert!(is_type_id("community.demo.bookai.draft-scene"));
        assert!(is_type_id("core.ai.callPrompt"));
        assert!(is_type_id("vendor.acme.my_tools.echo"));
        assert!(!is_type_id("community.2fa.verify"));
        assert!(!is_type_id("community.Bookai.x"));
        assert!(is_semver("1.0.0-rc.1+b.2"));
        assert!(!is_semver("1.0"));
        assert!(!is_semver("01.0.0"));
    }

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
    fn an_empty_pack_is_valid_and_needs_no_providers() {
        let m = Pack::new("community.demo.empty", "0.1.0").manifest();
        assert_eq!(validate_manifest(&m), Ok(()));
        assert!(m.get("peerDependencies").is_none());
    }

    #[test]
    fn reports_every_broken_rule() {
        let m = json!({"name": "bookai", "version": "1", "kind": "nodes", "nodes": [
            {"typeId": "x", "version": "1.0.0", "category": "chatty", "role": "pure"}
        ]});
        let errors = validate_manifest(&m).err().unwrap_or_default();
        assert_eq!(errors.len(), 9, "{errors:#?}");
    }
}
