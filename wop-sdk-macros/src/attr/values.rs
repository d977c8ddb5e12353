//! What each key's value must be: a string, integer or bool literal (a named constant is refused,
//! saying why), the closed sets `category`, `role` and `requires`, a `plan` function path, and the
//! `nodes` list of a pack. Each reader returns the value with the span of its tokens.

use super::syntax::each_item;
use crate::ast::{Cap, CategoryKind, Lit, RoleKind};
use crate::errors::Errors;
use proc_macro2::TokenStream;
use syn::ext::IdentExt;
use syn::spanned::Spanned;

/// The expression inside any invisible group or parentheses.
fn strip_group(expr: &syn::Expr) -> &syn::Expr {
    match expr {
        syn::Expr::Group(g) => strip_group(&g.expr),
        syn::Expr::Paren(p) => strip_group(&p.expr),
        e => e,
    }
}

/// A string literal value.
pub(super) fn string(expr: &syn::Expr, key: &str, example: &str) -> syn::Result<Lit<String>> {
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
pub(super) fn max_attempts(expr: &syn::Expr) -> syn::Result<Lit<u8>> {
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
pub(super) fn boolean(expr: &syn::Expr) -> syn::Result<Lit<bool>> {
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

/// `category = "chat"`.
pub(super) fn category(expr: &syn::Expr) -> syn::Result<Lit<CategoryKind>> {
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
pub(super) fn role(expr: &syn::Expr) -> syn::Result<Lit<RoleKind>> {
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
pub(super) fn max_calls(expr: &syn::Expr) -> syn::Result<Lit<u32>> {
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
pub(super) fn requires(tokens: TokenStream, out: &mut Vec<Lit<Cap>>, errors: &mut Errors) {
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
pub(super) fn plan(expr: &syn::Expr) -> syn::Result<syn::Path> {
    match strip_group(expr) {
        syn::Expr::Path(p) if p.qself.is_none() => Ok(p.path.clone()),
        other => Err(syn::Error::new(
            other.span(),
            "`plan` must name a function `fn(&Input) -> CallPlan`: the estimate calls it before a run; write `plan = my_plan`",
        )),
    }
}

/// `nodes = [A, B, C]`.
pub(super) fn nodes(expr: &syn::Expr, errors: &mut Errors) -> syn::Result<Lit<Vec<syn::Path>>> {
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
