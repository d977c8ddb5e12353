//! Rules on the typed model: the grammars of type ids, pack names and versions, required keys,
//! and rules that span several arguments.

use crate::ast::{Node, NodeArgs, NodeFn, PackArgs};
use crate::errors::Errors;
use proc_macro2::{Ident, Span};

use wop_sdk_rules::grammar::{pack_name_problem, semver_problem, type_id_problem};
use wop_sdk_rules::retry::DEFAULT_CEILING;

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
            "`#[wop_node]` needs `type_id`: it names the node in the pack manifest and in every run; add `type_id = \"community.demo.bookai.draft-scene\"`",
        ),
        Some(id) => {
            if let Some(problem) = type_id_problem(&id.value) {
                errors.at(
                    id.span,
                    format!(
                        "`type_id` `{}` breaks the OpenWOP type id grammar: {problem}; write dotted segments that start with a lowercase letter, like `community.demo.bookai.draft-scene`",
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
    check_max_calls(&args, errors);
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

/// `max_calls` must fit one structured call: `max_attempts` requests when the node's policy
/// names it, else the host's default ceiling (a call under the host's own policy may make that
/// many; [`DEFAULT_CEILING`]). A node of plain calls only (one request each) says so with
/// `retry(max_attempts = 1)`.
fn check_max_calls(args: &NodeArgs, errors: &mut Errors) {
    let Some(calls) = &args.max_calls else {
        return;
    };
    match args.retry.as_ref().and_then(|r| r.max_attempts.as_ref()) {
        Some(attempts) if calls.value < u32::from(attempts.value) => errors.at(
            calls.span,
            format!(
                "`max_calls = {}` is smaller than `max_attempts = {}`: one structured call may make up to {} provider requests, so not even one call could fit the budget; raise `max_calls` to at least {} or lower `max_attempts`",
                calls.value, attempts.value, attempts.value, attempts.value
            ),
        ),
        Some(_) => {}
        None if calls.value < u32::from(DEFAULT_CEILING) => errors.at(
            calls.span,
            format!(
                "`max_calls = {}` cannot fit one structured call: without `retry(max_attempts = N)` a structured call runs under the host's own policy, up to its ceiling of provider requests ({DEFAULT_CEILING} by default), so not even one call could fit the budget; raise `max_calls` to at least {DEFAULT_CEILING}, or cap the node's calls with `retry(max_attempts = {})` (a node of plain calls makes one request per call)",
                calls.value, calls.value
            ),
        ),
        None => {}
    }
}

/// Checks a pack's arguments.
pub(crate) fn pack(args: &PackArgs, errors: &mut Errors) {
    let call_site = Span::call_site();
    match &args.name {
        None if args.written.contains(&"name") => {}
        None => errors.at(
            call_site,
            "`pack!` needs `name`: it is the pack's name in pack.json; add `name = \"community.demo.bookai\"`",
        ),
        Some(name) => {
            if let Some(problem) = pack_name_problem(&name.value) {
                errors.at(
                    name.span,
                    format!(
                        "pack `name` `{}` breaks the OpenWOP pack name grammar: {problem}; write `namespace.owner.pack` like `community.demo.bookai`",
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
    use crate::ast::{Lit, PackArgs};
    use crate::errors::Errors;
    use proc_macro2::Span;

    fn pack_errors(name: &str) -> Vec<String> {
        let args = PackArgs {
            name: Some(Lit {
                value: name.to_owned(),
                span: Span::call_site(),
            }),
            ..PackArgs::default()
        };
        let mut errors = Errors::default();
        super::pack(&args, &mut errors);
        messages(errors)
    }

    fn max_calls_errors(tokens: proc_macro2::TokenStream) -> Vec<String> {
        let mut errors = Errors::default();
        let args = crate::attr::node_args(tokens, &mut errors);
        super::check_max_calls(&args, &mut errors);
        messages(errors)
    }

    fn messages(errors: Errors) -> Vec<String> {
        errors
            .finish(())
            .err()
            .map(|e| e.into_iter().map(|e| e.to_string()).collect())
            .unwrap_or_default()
    }

    #[test]
    fn max_calls_fits_one_call_at_the_default_ceiling_or_at_max_attempts() {
        use quote::quote;
        let ceiling = u32::from(wop_sdk_rules::retry::DEFAULT_CEILING);
        for n in 1..=ceiling + 1 {
            let lit = proc_macro2::Literal::u32_unsuffixed(n);
            let errors = max_calls_errors(quote!(max_calls = #lit));
            assert_eq!(
                errors.is_empty(),
                n >= ceiling,
                "max_calls = {n}: {errors:?}"
            );
            if n < ceiling {
                assert!(
                    errors[0].contains("cannot fit one structured call"),
                    "{errors:?}"
                );
            }
            // Written out, `max_attempts` is the bound instead of the ceiling.
            for attempts in 1..=ceiling + 1 {
                let a = proc_macro2::Literal::u32_unsuffixed(attempts);
                let errors = max_calls_errors(quote!(max_calls = #lit, retry(max_attempts = #a)));
                assert_eq!(
                    errors.is_empty(),
                    n >= attempts,
                    "{n} {attempts}: {errors:?}"
                );
            }
        }
        // No budget, nothing to fit.
        assert!(max_calls_errors(quote!(type_id = "community.a.b")).is_empty());
    }

    #[test]
    fn pack_names_go_through_the_shared_grammar() {
        let errors = pack_errors("community.bookai");
        assert!(
            errors.iter().any(|e| e.contains(
                &wop_sdk_rules::grammar::pack_name_problem("community.bookai").unwrap_or_default()
            )),
            "{errors:#?}"
        );
        assert!(
            !pack_errors("community.demo.bookai")
                .iter()
                .any(|e| e.contains("grammar")),
        );
    }
}
