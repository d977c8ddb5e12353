//! Rules on the typed model: the grammars of type ids, pack names and versions, required keys,
//! and rules that span several arguments.

use crate::ast::{Node, NodeArgs, NodeFn, PackArgs};
use crate::errors::Errors;
use proc_macro2::{Ident, Span};

/// The namespaces an OpenWOP type id or pack name starts with.
pub(crate) const NAMESPACES: &[&str] = &["core", "vendor", "community", "private"];

fn segment_ok(s: &str) -> bool {
    let mut bytes = s.bytes();
    matches!(bytes.next(), Some(b'a'..=b'z' | b'0'..=b'9'))
        && bytes.all(|b| matches!(b, b'a'..=b'z' | b'0'..=b'9' | b'-'))
}

/// Why `id` breaks the grammar of dotted names with at least `min` segments, if it does.
fn dotted_problem(id: &str, min: usize, shape: &str) -> Option<String> {
    let segments: Vec<&str> = id.split('.').collect();
    let namespaces = NAMESPACES
        .iter()
        .map(|n| format!("`{n}`"))
        .collect::<Vec<_>>()
        .join(", ");
    if !NAMESPACES.contains(&segments[0]) {
        return Some(format!(
            "the first segment must be one of {namespaces}, got `{}`",
            segments[0]
        ));
    }
    if segments.len() < min {
        return Some(format!(
            "it needs at least {min} dotted segments ({shape}), got {}",
            segments.len()
        ));
    }
    segments
        .iter()
        .find(|s| !segment_ok(s))
        .map(|s| format!("segment `{s}` must match `[a-z0-9][a-z0-9-]*`"))
}

/// Why `id` is not an OpenWOP node type id, if it is not.
pub(crate) fn type_id_problem(id: &str) -> Option<String> {
    dotted_problem(id, 3, "namespace.pack.node")
}

/// Why `name` is not an OpenWOP pack name, if it is not.
pub(crate) fn pack_name_problem(name: &str) -> Option<String> {
    dotted_problem(name, 2, "namespace.pack")
}

fn numeric_ok(s: &str) -> bool {
    !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit()) && (s == "0" || !s.starts_with('0'))
}

fn identifiers_ok(s: &str, numeric_rule: bool) -> bool {
    s.split('.').all(|id| {
        !id.is_empty()
            && id.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-')
            && (!numeric_rule || !id.bytes().all(|b| b.is_ascii_digit()) || numeric_ok(id))
    })
}

/// Why `v` is not a semantic version `MAJOR.MINOR.PATCH[-pre][+build]`, if it is not.
pub(crate) fn semver_problem(v: &str) -> Option<String> {
    let (rest, build) = match v.split_once('+') {
        Some((rest, build)) => (rest, Some(build)),
        None => (v, None),
    };
    let (core, pre) = match rest.split_once('-') {
        Some((core, pre)) => (core, Some(pre)),
        None => (rest, None),
    };
    let parts: Vec<&str> = core.split('.').collect();
    if parts.len() != 3 || !parts.iter().all(|p| numeric_ok(p)) {
        return Some(
            "the core must be three numbers `MAJOR.MINOR.PATCH` without leading zeros".to_owned(),
        );
    }
    if pre.is_some_and(|p| !identifiers_ok(p, true)) {
        return Some(
            "the pre-release after `-` must be dot-separated `[0-9A-Za-z-]+` identifiers"
                .to_owned(),
        );
    }
    if build.is_some_and(|b| !identifiers_ok(b, false)) {
        return Some(
            "the build metadata after `+` must be dot-separated `[0-9A-Za-z-]+` identifiers"
                .to_owned(),
        );
    }
    None
}

fn check_version(version: Option<&crate::ast::Lit<String>>, what: &str, errors: &mut Errors) {
    if let Some(v) = version
        && let Some(problem) = semver_problem(&v.value)
    {
        {
            errors.at(
                v.span,
                format!(
                    "`version` `{}` is not a semantic version: {problem}; hosts order {what} releases by semver, so write e.g. `version = \"1.0.0\"`",
                    v.value
                ),
            );
        }
    }
}

/// Checks a node's arguments and builds the node from them and its function.
pub(crate) fn node(args: NodeArgs, func: Option<NodeFn>, errors: &mut Errors) -> Option<Node> {
    let call_site = Span::call_site();
    match &args.type_id {
        None if args.written.contains(&"type_id") => {}
        None => errors.at(
            call_site,
            "`#[wop_node]` needs `type_id`: it names the node in the pack manifest and in every run; add `type_id = \"community.bookai.draft-scene\"`",
        ),
        Some(id) => {
            if let Some(problem) = type_id_problem(&id.value) {
                errors.at(
                    id.span,
                    format!(
                        "`type_id` `{}` breaks the OpenWOP type id grammar: {problem}; write lowercase dotted segments like `community.bookai.draft-scene`",
                        id.value
                    ),
                );
            }
        }
    }
    if args.version.is_none() && !args.written.contains(&"version") {
        errors.at(
            call_site,
            "`#[wop_node]` needs `version`: the manifest lists each node's semver; add `version = \"1.0.0\"`",
        );
    }
    check_version(args.version.as_ref(), "node", errors);
    let attempts = args.retry.as_ref().and_then(|r| r.max_attempts.as_ref());
    if let (Some(calls), Some(attempts)) = (&args.max_calls, attempts)
        && calls.value < u32::from(attempts.value)
    {
        {
            errors.at(
                calls.span,
                format!(
                    "`max_calls = {}` is smaller than `max_attempts = {}`: one structured call may make up to {} provider requests, so not even one call could fit the budget; raise `max_calls` to at least {} or lower `max_attempts`",
                    calls.value, attempts.value, attempts.value, attempts.value
                ),
            );
        }
    }
    let func = func?;
    let struct_ident = Ident::new(
        &crate::ast::camel_case(&func.ident.to_string()),
        func.ident.span(),
    );
    errors.is_empty().then_some(Node {
        args,
        func,
        struct_ident,
    })
}

/// Checks a pack's arguments.
pub(crate) fn pack(args: &PackArgs, errors: &mut Errors) {
    let call_site = Span::call_site();
    match &args.name {
        None if args.written.contains(&"name") => {}
        None => errors.at(
            call_site,
            "`pack!` needs `name`: it is the pack's name in pack.json; add `name = \"community.bookai\"`",
        ),
        Some(name) => {
            if let Some(problem) = pack_name_problem(&name.value) {
                errors.at(
                    name.span,
                    format!(
                        "pack `name` `{}` breaks the OpenWOP pack name grammar: {problem}; write lowercase dotted segments like `community.bookai`",
                        name.value
                    ),
                );
            }
        }
    }
    if args.version.is_none() && !args.written.contains(&"version") {
        errors.at(
            call_site,
            "`pack!` needs `version`: pack.json requires a semver; add `version = \"0.1.0\"`",
        );
    }
    check_version(args.version.as_ref(), "pack", errors);
    match &args.nodes {
        None if args.written.contains(&"nodes") => {}
        None => errors.at(
            call_site,
            "`pack!` needs `nodes`: a node pack without nodes offers nothing; add `nodes = [DraftScene]`",
        ),
        Some(nodes) if nodes.value.is_empty() => errors.at(
            nodes.span,
            "`nodes` is empty: a node pack without nodes offers nothing; list the types `#[wop_node]` generated, e.g. `nodes = [DraftScene]`",
        ),
        Some(nodes) => {
            let mut seen: Vec<String> = Vec::new();
            for path in &nodes.value {
                let key = quote::quote!(#path).to_string();
                if seen.contains(&key) {
                    errors.at(
                        syn::spanned::Spanned::span(path),
                        format!("node `{key}` is listed twice: a pack registers each node once; remove this one"),
                    );
                } else {
                    seen.push(key);
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn type_id_grammar() {
        assert_eq!(type_id_problem("community.bookai.draft-scene"), None);
        assert_eq!(type_id_problem("core.a.b.c-2"), None);
        assert!(type_id_problem("acme.bookai.draft").is_some_and(|p| p.contains("first segment")));
        assert!(type_id_problem("community.bookai").is_some_and(|p| p.contains("at least 3")));
        assert!(type_id_problem("community.BookAi.draft").is_some_and(|p| p.contains("`BookAi`")));
        assert!(type_id_problem("community..draft").is_some());
        assert!(type_id_problem("community.-x.draft").is_some());
        assert!(type_id_problem("").is_some());
    }

    #[test]
    fn pack_name_grammar() {
        assert_eq!(pack_name_problem("community.bookai"), None);
        assert_eq!(pack_name_problem("private.a.b"), None);
        assert!(pack_name_problem("bookai").is_some());
        assert!(pack_name_problem("community").is_some());
        assert!(pack_name_problem("community.Book").is_some());
    }

    #[test]
    fn semver_grammar() {
        for ok in [
            "0.1.0",
            "1.0.0",
            "10.20.30",
            "1.0.0-alpha.1",
            "1.0.0+build.5",
            "1.0.0-rc-1+x",
        ] {
            assert_eq!(semver_problem(ok), None, "{ok}");
        }
        for bad in [
            "1", "1.0", "1.0.0.0", "01.0.0", "v1.0.0", "1.0.0-", "1.0.0-01", "1.0.0+", "1.x.0", "",
        ] {
            assert!(semver_problem(bad).is_some(), "{bad}");
        }
    }
}
