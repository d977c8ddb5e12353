//! The manifest's fixed values (the engines range, the runtime, the schema folder, our extension
//! keys) and the grammar predicates, shared by `pack` and `validate`.

use wop_sdk_rules::grammar;

/// The `engines.openwop` range a pack declares: protocol 1.x and 2.x. The registry's v2 gate
/// (`check-pack-engines-admit-major`, RFC 0177 §A.1: a range must admit major 2, and one with
/// no upper bound reads as `<2.0.0`) wants a ceiling above 2; today's openwop-app advertises
/// protocol 1.1, which a `>=2.0` floor would refuse. The bridge serves both kinds of host.
pub const ENGINES_OPENWOP: &str = ">=1.0.0 <3.0.0";
/// `runtime.language`: a production host loads the pack as JavaScript (the bridge's `index.mjs`
/// loads the compiled nodes).
pub const RUNTIME_LANGUAGE: &str = "javascript";
/// `runtime.entry`: the file in the pack folder a host loads.
pub const RUNTIME_ENTRY: &str = "index.mjs";
/// The folder of the pack that holds the node schemas.
pub const SCHEMA_DIR: &str = "schemas";
/// Our own node key for the node's budget (an extension key: a host that does not know it
/// ignores it).
pub(super) const X_MAX_CALLS: &str = "x-maxCalls";
/// Our own node key for the node's retry policy (an extension key, like [`X_MAX_CALLS`]).
pub(super) const X_RETRY: &str = "x-retry";
/// The namespaces a pack name starts with.
pub const NAMESPACES: &[&str] = wop_sdk_rules::sets::PACK_NAMESPACES;

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
}
