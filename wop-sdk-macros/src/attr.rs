//! Parsing of macro arguments into the typed model of [`crate::ast`].
//!
//! Arguments are comma-separated `key = value` or `key(...)` items. Each item is parsed on its
//! own, so one broken item does not hide the errors of the others. A repeated key errors on its
//! second occurrence; an unknown key errors on the key and lists the valid ones.

use crate::ast::{Cap, CategoryKind, Lit, NodeArgs, PackArgs, RetryArgs, RoleKind};
use crate::errors::Errors;
use proc_macro2::{Span, TokenStream, TokenTree};
use syn::ext::IdentExt;
use syn::parse::{ParseStream, Parser};
use syn::spanned::Spanned;

/// Declares the accepted keys of one macro once: a `syn::custom_keyword!` each, and their
/// spellings for error messages.
macro_rules! keys {
    ($($key:ident),* $(,)?) => {
        $(syn::custom_keyword!($key);)*
        /// Every accepted key, in documentation order.
        pub(crate) const ALL: &[&str] = &[$(stringify!($key)),*];
    };
}

/// Keys of `#[wop_node(...)]`.
pub(crate) mod node_kw {
    keys!(
        type_id,
        version,
        category,
        role,
        label,
        description,
        max_calls,
        retry,
        requires,
        plan
    );
}

/// Keys of `retry(...)` and `retry!(...)`.
pub(crate) mod retry_kw {
    keys!(max_attempts, grow_max_tokens);
}

/// Keys of `pack! { ... }`.
pub(crate) mod pack_kw {
    keys!(name, version, nodes);
}

fn list(keys: &[&str]) -> String {
    keys.iter()
        .map(|k| format!("`{k}`"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// Splits `tokens` at top-level commas; empty items (a trailing comma) are dropped.
fn items(tokens: TokenStream) -> Vec<TokenStream> {
    let mut out = Vec::new();
    let mut current = TokenStream::new();
    for tt in tokens {
        match &tt {
            TokenTree::Punct(p) if p.as_char() == ',' => {
                if !current.is_empty() {
                    out.push(std::mem::take(&mut current));
                }
            }
            _ => current.extend([tt]),
        }
    }
    if !current.is_empty() {
        out.push(current);
    }
    out
}

/// Parses each item with `parse`, collecting the errors of all of them.
fn each_item(
    tokens: TokenStream,
    errors: &mut Errors,
    mut parse: impl FnMut(ParseStream<'_>, &mut Errors) -> syn::Result<()>,
) {
    for item in items(tokens) {
        let mut inner = Errors::default();
        let parsed = (|input: ParseStream<'_>| parse(input, &mut inner)).parse2(item);
        errors.push_all(inner);
        errors.ok(parsed);
    }
}

/// Records `value` in `slot`, or errors on this second occurrence of `key`.
fn set_once<T>(slot: &mut Option<T>, value: T, key: &str, span: Span, errors: &mut Errors) {
    if slot.is_some() {
        errors.at(
            span,
            format!("`{key}` is given twice: each key may appear once; remove this one"),
        );
    } else {
        *slot = Some(value);
    }
}

/// The value after `key`: `= <expr>`. Errors on a missing value at the key or the `=`.
fn value(input: ParseStream<'_>, key: &str, span: Span, example: &str) -> syn::Result<syn::Expr> {
    let missing = |span| {
        syn::Error::new(
            span,
            format!("`{key}` needs a value: a key alone says nothing; write `{key} = {example}`"),
        )
    };
    if input.peek(syn::token::Paren) {
        return Err(syn::Error::new(
            input.span(),
            format!("`{key}` takes a value, not a list; write `{key} = {example}`"),
        ));
    }
    if input.is_empty() {
        return Err(missing(span));
    }
    let eq: syn::Token![=] = input.parse()?;
    if input.is_empty() {
        return Err(missing(eq.span));
    }
    input.parse()
}

/// The contents of `key(...)`. Errors when the key is given a value instead.
fn parens<'a>(
    input: ParseStream<'a>,
    key: &str,
    span: Span,
    example: &str,
) -> syn::Result<TokenStream> {
    if !input.peek(syn::token::Paren) {
        let span = if input.is_empty() { span } else { input.span() };
        return Err(syn::Error::new(
            span,
            format!("`{key}` takes a list in parentheses; write `{key}({example})`"),
        ));
    }
    let content;
    syn::parenthesized!(content in input);
    content.parse()
}

fn strip_group(expr: &syn::Expr) -> &syn::Expr {
    match expr {
        syn::Expr::Group(g) => strip_group(&g.expr),
        syn::Expr::Paren(p) => strip_group(&p.expr),
        e => e,
    }
}

/// A string literal value.
fn string(expr: &syn::Expr, key: &str, example: &str) -> syn::Result<Lit<String>> {
    match strip_group(expr) {
        syn::Expr::Lit(syn::ExprLit {
            lit: syn::Lit::Str(s),
            ..
        }) => Ok(Lit {
            value: s.value(),
            span: s.span(),
        }),
        other => Err(syn::Error::new(
            other.span(),
            format!(
                "`{key}` must be a string literal: it is written into the pack manifest as is; write `{key} = {example}`"
            ),
        )),
    }
}

/// An integer literal, possibly negated, as `i128` (so out-of-range values can be reported).
fn integer(expr: &syn::Expr) -> Option<i128> {
    match strip_group(expr) {
        syn::Expr::Lit(syn::ExprLit {
            lit: syn::Lit::Int(i),
            ..
        }) => i.base10_parse::<i128>().ok(),
        syn::Expr::Unary(syn::ExprUnary {
            op: syn::UnOp::Neg(_),
            expr,
            ..
        }) => integer(expr).map(|i| -i),
        _ => None,
    }
}

/// The error for a named value (a constant, a path, a call, a block...) where the macro needs a
/// literal: it says that a literal is required and why, and how to pass a value computed at run
/// time instead. `None` for a literal (whose own rule applies).
fn not_a_literal(
    expr: &syn::Expr,
    key: &str,
    example: &str,
    at_run_time: &str,
) -> Option<syn::Error> {
    let literal = match strip_group(expr) {
        syn::Expr::Lit(_) => true,
        syn::Expr::Unary(syn::ExprUnary {
            op: syn::UnOp::Neg(_),
            expr,
            ..
        }) => matches!(strip_group(expr), syn::Expr::Lit(_)),
        _ => false,
    };
    if literal {
        return None;
    }
    let named = quote::ToTokens::to_token_stream(expr).to_string();
    Some(syn::Error::new(
        expr.span(),
        format!(
            "`{key}` needs a literal, not `{named}`: the macro checks the value when it expands, \
             before constants are evaluated, so it cannot see what a named constant holds; write \
             the value itself, e.g. `{example}`, {at_run_time}"
        ),
    ))
}

/// `max_attempts = N`: an integer literal in 1..=16.
fn max_attempts(expr: &syn::Expr) -> syn::Result<Lit<u8>> {
    let rule = format!(
        "`max_attempts` {}: a host refuses 0 and anything above 16 with `validation_error` (RFC 0248 §B.5) and clamps values above its own ceiling",
        wop_sdk_rules::retry::ATTEMPTS_RULE
    );
    let span = expr.span();
    if let Some(e) = not_a_literal(
        expr,
        "max_attempts",
        "max_attempts = 2",
        "or build the policy at run time with `RetryPolicy::try_new(n, grow)` and pass it to `AiRequest::retry`",
    ) {
        return Err(e);
    }
    let quoted = matches!(
        strip_group(expr),
        syn::Expr::Lit(syn::ExprLit {
            lit: syn::Lit::Str(_),
            ..
        })
    );
    match integer(expr).and_then(wop_sdk_rules::retry::attempts) {
        Some(n) => Ok(Lit { value: n, span }),
        _ if quoted => Err(syn::Error::new(
            span,
            format!("{rule}; write the number without quotes, e.g. `max_attempts = 3`"),
        )),
        _ => Err(syn::Error::new(
            span,
            format!(
                "{rule}; write e.g. `max_attempts = 2`, or `max_attempts = 1` to turn host retries off"
            ),
        )),
    }
}

/// `grow_max_tokens = B`: a bool literal.
fn boolean(expr: &syn::Expr) -> syn::Result<Lit<bool>> {
    if let Some(e) = not_a_literal(
        expr,
        "grow_max_tokens",
        "grow_max_tokens = false",
        "or build the policy at run time with `RetryPolicy::try_new(n, grow)` and pass it to `AiRequest::retry`",
    ) {
        return Err(e);
    }
    match strip_group(expr) {
        syn::Expr::Lit(syn::ExprLit {
            lit: syn::Lit::Bool(b),
            ..
        }) => Ok(Lit {
            value: b.value,
            span: b.span,
        }),
        other => Err(syn::Error::new(
            other.span(),
            "`grow_max_tokens` must be `true` or `false`: it says whether a truncation retry may raise `maxTokens`; write `grow_max_tokens = false` to keep every attempt within the request's budget",
        )),
    }
}

/// Parses the contents of `retry(...)` or `retry!(...)` into `args`.
pub(crate) fn retry_args(tokens: TokenStream, errors: &mut Errors) -> RetryArgs {
    let mut args = RetryArgs::default();
    each_item(tokens, errors, |input, errors| {
        if input.peek(retry_kw::max_attempts) {
            let k: retry_kw::max_attempts = input.parse()?;
            let v = max_attempts(&value(input, "max_attempts", k.span, "2")?)?;
            set_once(&mut args.max_attempts, v, "max_attempts", k.span, errors);
        } else if input.peek(retry_kw::grow_max_tokens) {
            let k: retry_kw::grow_max_tokens = input.parse()?;
            let v = boolean(&value(input, "grow_max_tokens", k.span, "false")?)?;
            set_once(
                &mut args.grow_max_tokens,
                v,
                "grow_max_tokens",
                k.span,
                errors,
            );
        } else {
            return Err(unknown(input, "a retry policy", retry_kw::ALL));
        }
        Ok(())
    });
    args
}

fn unknown(input: ParseStream<'_>, what: &str, valid: &[&str]) -> syn::Error {
    match input.call(syn::Ident::parse_any) {
        Ok(key) => syn::Error::new(
            key.span(),
            format!(
                "unknown key `{key}` in {what}: valid keys are {}",
                list(valid)
            ),
        ),
        Err(_) => syn::Error::new(
            input.span(),
            format!("expected a key of {what}: valid keys are {}", list(valid)),
        ),
    }
}

/// `category = "chat"`.
fn category(expr: &syn::Expr) -> syn::Result<Lit<CategoryKind>> {
    let s = string(expr, "category", "\"chat\"")?;
    CategoryKind::parse(&s.value)
        .map(|value| Lit {
            value,
            span: s.span,
        })
        .ok_or_else(|| {
            syn::Error::new(
                s.span,
                format!(
                    "unknown category `{}`: pack.json v2 accepts only {}; pick one of them",
                    s.value,
                    CategoryKind::list()
                ),
            )
        })
}

/// `role = "side-effect"`.
fn role(expr: &syn::Expr) -> syn::Result<Lit<RoleKind>> {
    let s = string(expr, "role", "\"side-effect\"")?;
    RoleKind::parse(&s.value)
        .map(|value| Lit { value, span: s.span })
        .ok_or_else(|| {
            syn::Error::new(
                s.span,
                format!(
                    "unknown role `{}`: a node is {}; a node that calls a model has effects, so it is usually `side-effect`",
                    s.value,
                    RoleKind::list()
                ),
            )
        })
}

/// `max_calls = N`: an integer of at least 1.
fn max_calls(expr: &syn::Expr) -> syn::Result<Lit<u32>> {
    if let Some(e) = not_a_literal(
        expr,
        "max_calls",
        "max_calls = 6",
        "since the budget is part of the node's declaration",
    ) {
        return Err(e);
    }
    match integer(expr).map(u32::try_from) {
        Some(Ok(n)) if n >= 1 => Ok(Lit {
            value: n,
            span: expr.span(),
        }),
        _ => Err(syn::Error::new(
            expr.span(),
            "`max_calls` must be an integer of at least 1: it is the node's budget in provider requests and a node with none could never call its model; write e.g. `max_calls = 6`, or remove it for no limit",
        )),
    }
}

/// `requires(attempts, retry_policy)`.
fn requires(tokens: TokenStream, out: &mut Vec<Lit<Cap>>, errors: &mut Errors) {
    each_item(tokens, errors, |input, errors| {
        let ident = input.call(syn::Ident::parse_any)?;
        let name = ident.to_string();
        match Cap::parse(&name) {
            Some(cap) if out.iter().any(|c| c.value == cap) => errors.at(
                ident.span(),
                format!("capability `{name}` is required twice: each capability may appear once; remove this one"),
            ),
            Some(value) => out.push(Lit {
                value,
                span: ident.span(),
            }),
            None => errors.at(
                ident.span(),
                format!(
                    "unknown capability `{name}`: a node can require {}",
                    Cap::list()
                ),
            ),
        }
        Ok(())
    });
}

/// `plan = path::to::fn`.
fn plan(expr: &syn::Expr) -> syn::Result<syn::Path> {
    match strip_group(expr) {
        syn::Expr::Path(p) if p.qself.is_none() => Ok(p.path.clone()),
        other => Err(syn::Error::new(
            other.span(),
            "`plan` must name a function `fn(&Input) -> CallPlan`: the estimate calls it before a run; write `plan = my_plan`",
        )),
    }
}

/// Parses the arguments of `#[wop_node(...)]`.
pub(crate) fn node_args(tokens: TokenStream, errors: &mut Errors) -> NodeArgs {
    let mut args = NodeArgs::default();
    let mut seen_requires = None::<Span>;
    each_item(tokens, errors, |input, errors| {
        macro_rules! string_key {
            ($key:ident, $example:literal) => {
                if input.peek(node_kw::$key) {
                    let k: node_kw::$key = input.parse()?;
                    args.written.push(stringify!($key));
                    let v = string(
                        &value(input, stringify!($key), k.span, $example)?,
                        stringify!($key),
                        $example,
                    )?;
                    set_once(&mut args.$key, v, stringify!($key), k.span, errors);
                    return Ok(());
                }
            };
        }
        macro_rules! value_key {
            ($key:ident, $example:literal, $read:expr) => {
                if input.peek(node_kw::$key) {
                    let k: node_kw::$key = input.parse()?;
                    args.written.push(stringify!($key));
                    let v = $read(&value(input, stringify!($key), k.span, $example)?)?;
                    set_once(&mut args.$key, v, stringify!($key), k.span, errors);
                    return Ok(());
                }
            };
        }
        string_key!(type_id, "\"community.demo.bookai.draft-scene\"");
        string_key!(version, "\"1.0.0\"");
        value_key!(category, "\"chat\"", category);
        value_key!(role, "\"side-effect\"", role);
        string_key!(label, "\"Draft a scene\"");
        string_key!(description, "\"Drafts one scene of a chapter\"");
        value_key!(max_calls, "6", max_calls);
        value_key!(plan, "my_plan", plan);
        if input.peek(node_kw::retry) {
            let k: node_kw::retry = input.parse()?;
            let inner = parens(
                input,
                "retry",
                k.span,
                "max_attempts = 2, grow_max_tokens = false",
            )?;
            let v = retry_args(inner, errors);
            set_once(&mut args.retry, v, "retry", k.span, errors);
            return Ok(());
        }
        if input.peek(node_kw::requires) {
            let k: node_kw::requires = input.parse()?;
            let inner = parens(input, "requires", k.span, "attempts, retry_policy")?;
            if seen_requires.is_some() {
                errors.at(k.span, "`requires` is given twice: each key may appear once; list every capability in one `requires(...)`");
            } else {
                seen_requires = Some(k.span);
                requires(inner, &mut args.requires, errors);
            }
            return Ok(());
        }
        Err(unknown(input, "`#[wop_node]`", node_kw::ALL))
    });
    args
}

/// `nodes = [A, B, C]`.
fn nodes(expr: &syn::Expr, errors: &mut Errors) -> syn::Result<Lit<Vec<syn::Path>>> {
    let syn::Expr::Array(array) = strip_group(expr) else {
        return Err(syn::Error::new(
            expr.span(),
            "`nodes` must be a list of node types in brackets: the pack registers each; write `nodes = [PlanOutline, DraftScene]`",
        ));
    };
    let mut paths = Vec::new();
    for elem in &array.elems {
        match strip_group(elem) {
            syn::Expr::Path(p) if p.qself.is_none() => paths.push(p.path.clone()),
            other => errors.at(
                other.span(),
                "a pack node must be named by its type, the one `#[wop_node]` generated (`draft_scene` → `DraftScene`); write e.g. `DraftScene`",
            ),
        }
    }
    Ok(Lit {
        value: paths,
        span: array.bracket_token.span.join(),
    })
}

/// Parses the body of `pack! { ... }`.
pub(crate) fn pack_args(tokens: TokenStream, errors: &mut Errors) -> PackArgs {
    let mut args = PackArgs::default();
    each_item(tokens, errors, |input, errors| {
        if input.peek(pack_kw::name) {
            let k: pack_kw::name = input.parse()?;
            args.written.push("name");
            let v = string(
                &value(input, "name", k.span, "\"community.demo.bookai\"")?,
                "name",
                "\"community.demo.bookai\"",
            )?;
            set_once(&mut args.name, v, "name", k.span, errors);
        } else if input.peek(pack_kw::version) {
            let k: pack_kw::version = input.parse()?;
            args.written.push("version");
            let v = string(
                &value(input, "version", k.span, "\"0.1.0\"")?,
                "version",
                "\"0.1.0\"",
            )?;
            set_once(&mut args.version, v, "version", k.span, errors);
        } else if input.peek(pack_kw::nodes) {
            let k: pack_kw::nodes = input.parse()?;
            args.written.push("nodes");
            let v = nodes(&value(input, "nodes", k.span, "[DraftScene]")?, errors)?;
            set_once(&mut args.nodes, v, "nodes", k.span, errors);
        } else {
            return Err(unknown(input, "`pack!`", pack_kw::ALL));
        }
        Ok(())
    });
    args
}

#[cfg(test)]
mod tests {
    use super::*;
    use quote::quote;

    fn messages(errors: Errors) -> Vec<String> {
        errors
            .finish(())
            .err()
            .map(|e| e.into_iter().map(|e| e.to_string()).collect())
            .unwrap_or_default()
    }

    fn retry(tokens: TokenStream) -> (RetryArgs, Vec<String>) {
        let mut errors = Errors::default();
        let args = retry_args(tokens, &mut errors);
        (args, messages(errors))
    }

    #[test]
    fn reads_a_retry_policy() {
        let (args, errors) = retry(quote!(max_attempts = 2, grow_max_tokens = false,));
        assert!(errors.is_empty(), "{errors:?}");
        assert_eq!(args.max_attempts.map(|l| l.value), Some(2));
        assert_eq!(args.grow_max_tokens.map(|l| l.value), Some(false));
    }

    #[test]
    fn refuses_every_bad_max_attempts() {
        for bad in [
            quote!(max_attempts = 0),
            quote!(max_attempts = 17),
            quote!(max_attempts = -1),
            quote!(max_attempts = 2.5),
            quote!(max_attempts = "3"),
            quote!(max_attempts = 300),
        ] {
            let (args, errors) = retry(bad.clone());
            assert!(args.max_attempts.is_none(), "{bad}");
            assert_eq!(errors.len(), 1, "{bad}");
            assert!(
                errors[0].starts_with("`max_attempts` must be an integer in 1..=16"),
                "{bad}: {errors:?}"
            );
        }
        for missing in [quote!(max_attempts), quote!(max_attempts =)] {
            let (_, errors) = retry(missing);
            assert_eq!(errors.len(), 1);
            assert!(
                errors[0].starts_with("`max_attempts` needs a value"),
                "{errors:?}"
            );
        }
    }

    #[test]
    fn a_named_value_is_told_a_literal_is_required_and_why() {
        for (tokens, key, named) in [
            (quote!(max_attempts = ATTEMPTS), "max_attempts", "ATTEMPTS"),
            (
                quote!(max_attempts = consts::ATTEMPTS),
                "max_attempts",
                "consts :: ATTEMPTS",
            ),
            (
                quote!(max_attempts = attempts()),
                "max_attempts",
                "attempts ()",
            ),
            (quote!(grow_max_tokens = GROW), "grow_max_tokens", "GROW"),
        ] {
            let (args, errors) = retry(tokens.clone());
            assert!(args.max_attempts.is_none() && args.grow_max_tokens.is_none());
            assert_eq!(errors.len(), 1, "{tokens}");
            assert!(
                errors[0].starts_with(&format!("`{key}` needs a literal, not `{named}`")),
                "{tokens}: {errors:?}"
            );
            assert!(
                errors[0].contains("before constants are evaluated"),
                "{errors:?}"
            );
        }
        // A negative literal is still a literal: its own rule applies.
        let (_, errors) = retry(quote!(max_attempts = -1));
        assert!(errors[0].starts_with("`max_attempts` must be an integer"));
    }

    #[test]
    fn collects_repeated_unknown_and_bad_keys_together() {
        let (_, errors) = retry(quote!(
            max_attempts = 2,
            max_attempts = 3,
            tries = 4,
            grow_max_tokens = 1
        ));
        assert_eq!(errors.len(), 3, "{errors:?}");
        assert!(errors[0].contains("given twice"));
        assert!(
            errors[1].contains("unknown key `tries`") && errors[1].contains("`grow_max_tokens`")
        );
        assert!(errors[2].contains("`true` or `false`"));
    }

    #[test]
    fn reads_node_arguments() {
        let mut errors = Errors::default();
        let args = node_args(
            quote!(
                type_id = "community.demo.bookai.draft-scene",
                version = "1.0.0",
                category = "data",
                role = "pure",
                max_calls = 6,
                retry(max_attempts = 2),
                requires(attempts, replay),
                plan = plans::draft,
                label = "Draft"
            ),
            &mut errors,
        );
        assert!(errors.is_empty());
        assert_eq!(
            args.type_id.map(|l| l.value).as_deref(),
            Some("community.demo.bookai.draft-scene")
        );
        assert_eq!(args.category.map(|l| l.value.spelling()), Some("data"));
        assert_eq!(args.role.map(|l| l.value.spelling()), Some("pure"));
        assert_eq!(args.max_calls.map(|l| l.value), Some(6));
        assert_eq!(
            args.requires
                .iter()
                .map(|c| c.value.spelling())
                .collect::<Vec<_>>(),
            ["attempts", "replay"]
        );
        assert!(args.plan.is_some());
    }

    #[test]
    fn lists_valid_values_of_closed_sets() {
        let mut errors = Errors::default();
        node_args(
            quote!(
                category = "chatty",
                role = "impure",
                requires(magic),
                colour = "red"
            ),
            &mut errors,
        );
        let errors = messages(errors);
        assert_eq!(errors.len(), 4, "{errors:?}");
        assert!(
            errors[0]
                .contains("`chat`, `control`, `data`, `canvas`, `coordination`, `integration`")
        );
        assert!(errors[1].contains("`pure`, `side-effect`"));
        assert!(
            errors[2]
                .contains("`ai_providers`, `attempts`, `retry_policy`, `provider_usage`, `replay`")
        );
        assert!(errors[3].contains("`type_id`, `version`, `category`"));
    }

    #[test]
    fn reads_a_pack() {
        let mut errors = Errors::default();
        let args = pack_args(
            quote!(
                name = "community.demo.bookai",
                version = "0.1.0",
                nodes = [A, b::B]
            ),
            &mut errors,
        );
        assert!(errors.is_empty());
        assert_eq!(args.nodes.map(|n| n.value.len()), Some(2));
    }
}
