//! The shape of an argument list, whatever the macro: comma-separated items, each `key = value`
//! or `key(...)`. Each item is parsed on its own, so one broken item does not hide the errors of
//! the others; a key given no value, a value where a list belongs, a repeated key (on its second
//! occurrence) and an unknown key (listing the valid ones) are reported here.

use crate::errors::Errors;
use proc_macro2::{Span, TokenStream, TokenTree};
use syn::ext::IdentExt;
use syn::parse::{ParseStream, Parser};

/// The keys as "`a`, `b`, `c`", for error messages.
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
pub(super) fn each_item(
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
pub(super) fn set_once<T>(
    slot: &mut Option<T>,
    value: T,
    key: &str,
    span: Span,
    errors: &mut Errors,
) {
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
pub(super) fn value(
    input: ParseStream<'_>,
    key: &str,
    span: Span,
    example: &str,
) -> syn::Result<syn::Expr> {
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
pub(super) fn parens<'a>(
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

/// The error for an item that does not start with a key of `what`: at the key when there is one,
/// listing the valid keys.
pub(super) fn unknown(input: ParseStream<'_>, what: &str, valid: &[&str]) -> syn::Error {
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
