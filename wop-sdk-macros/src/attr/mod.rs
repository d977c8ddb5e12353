//! Parsing of macro arguments into the typed model of [`crate::ast`]: the accepted keys of each
//! macro (declared once here) and the three parsers, `retry_args`, `node_args` and `pack_args`.
//!
//! Below it, `syntax` reads the shape of an argument list (items, `key = value`, `key(...)`,
//! repeated and unknown keys) and `values` what each key's value must be.

mod syntax;
#[cfg(test)]
mod tests;
mod values;

use crate::ast::{NodeArgs, PackArgs, RetryArgs};
use crate::errors::Errors;
use proc_macro2::{Span, TokenStream};
use syntax::{each_item, parens, set_once, unknown, value};
use values::{boolean, category, max_attempts, max_calls, nodes, plan, requires, role, string};

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

/// One `key = value` item: when the item starts with `$kw::$key`, reads its value with `$read`,
/// records it once in `$args.$key` and returns from the item's parser. With `written`, also notes
/// that the key was written, so a refused value does not add a "needs `key`" error.
macro_rules! key_value {
    ($input:ident, $args:ident, $errors:ident, $kw:ident::$key:ident, $example:literal, $read:expr $(, $written:ident)?) => {
        if $input.peek($kw::$key) {
            let k: $kw::$key = $input.parse()?;
            $($args.$written.push(stringify!($key));)?
            let v = $read(&value($input, stringify!($key), k.span, $example)?)?;
            set_once(&mut $args.$key, v, stringify!($key), k.span, $errors);
            return Ok(());
        }
    };
}

/// A written `key = "string"` item (see [`key_value!`]).
macro_rules! key_string {
    ($input:ident, $args:ident, $errors:ident, $kw:ident::$key:ident, $example:literal) => {
        key_value!(
            $input,
            $args,
            $errors,
            $kw::$key,
            $example,
            |e: &syn::Expr| string(e, stringify!($key), $example),
            written
        )
    };
}

/// Parses the contents of `retry(...)` or `retry!(...)` into `args`.
pub(crate) fn retry_args(tokens: TokenStream, errors: &mut Errors) -> RetryArgs {
    let mut args = RetryArgs::default();
    each_item(tokens, errors, |input, errors| {
        key_value!(
            input,
            args,
            errors,
            retry_kw::max_attempts,
            "2",
            max_attempts
        );
        key_value!(
            input,
            args,
            errors,
            retry_kw::grow_max_tokens,
            "false",
            boolean
        );
        Err(unknown(input, "a retry policy", retry_kw::ALL))
    });
    args
}

/// Parses the arguments of `#[wop_node(...)]`.
pub(crate) fn node_args(tokens: TokenStream, errors: &mut Errors) -> NodeArgs {
    let mut args = NodeArgs::default();
    let mut seen_requires = None::<Span>;
    each_item(tokens, errors, |input, errors| {
        key_string!(
            input,
            args,
            errors,
            node_kw::type_id,
            "\"community.demo.bookai.draft-scene\""
        );
        key_string!(input, args, errors, node_kw::version, "\"1.0.0\"");
        key_value!(
            input,
            args,
            errors,
            node_kw::category,
            "\"chat\"",
            category,
            written
        );
        key_value!(
            input,
            args,
            errors,
            node_kw::role,
            "\"side-effect\"",
            role,
            written
        );
        key_string!(input, args, errors, node_kw::label, "\"Draft a scene\"");
        key_string!(
            input,
            args,
            errors,
            node_kw::description,
            "\"Drafts one scene of a chapter\""
        );
        key_value!(
            input,
            args,
            errors,
            node_kw::max_calls,
            "6",
            max_calls,
            written
        );
        key_value!(input, args, errors, node_kw::plan, "my_plan", plan, written);
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

/// Parses the body of `pack! { ... }`.
pub(crate) fn pack_args(tokens: TokenStream, errors: &mut Errors) -> PackArgs {
    let mut args = PackArgs::default();
    each_item(tokens, errors, |input, errors| {
        key_string!(
            input,
            args,
            errors,
            pack_kw::name,
            "\"community.demo.bookai\""
        );
        key_string!(input, args, errors, pack_kw::version, "\"0.1.0\"");
        key_value!(
            input,
            args,
            errors,
            pack_kw::nodes,
            "[DraftScene]",
            |e: &syn::Expr| nodes(e, errors),
            written
        );
        Err(unknown(input, "`pack!`", pack_kw::ALL))
    });
    args
}
