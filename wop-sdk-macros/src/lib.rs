//! Implementation detail of `wop-sdk`: depend on `wop-sdk` and use its re-exports
//! (`wop_sdk::wop_node`, `wop_sdk::pack`, `wop_sdk::retry`), documented there.
//!
//! The entry points below only parse, expand, and turn errors into `compile_error!`; the work is
//! in `attr` (arguments), `ast` (the typed model), `check` (rules) and `expand` (quoting).

mod ast;
mod attr;
mod brand;
mod check;
mod errors;
mod expand;

use errors::Errors;
use proc_macro::TokenStream;

/// The errors, followed by `item` so that follow-on errors and completion stay sane.
fn fail(error: syn::Error, item: proc_macro2::TokenStream) -> TokenStream {
    let mut out = error.to_compile_error();
    out.extend(item);
    out.into()
}

/// Turns an `async fn` into an OpenWOP node. Documented on `wop_sdk::wop_node`.
#[proc_macro_attribute]
pub fn wop_node(args: TokenStream, item: TokenStream) -> TokenStream {
    let item = proc_macro2::TokenStream::from(item);
    let mut errors = Errors::default();
    let args = attr::node_args(args.into(), &mut errors);
    let func = errors.ok(syn::parse2::<syn::ItemFn>(item.clone()).map_err(|e| {
        syn::Error::new(
            e.span(),
            "`#[wop_node]` goes on an `async fn`: the node is generated from its signature; write `async fn draft_scene(ctx: &NodeCtx<'_>, input: DraftIn) -> Result<DraftOut, NodeError>`",
        )
    }));
    let node_fn = func
        .as_ref()
        .and_then(|f| ast::NodeFn::from_item(f, &mut errors));
    let node = check::node(args, node_fn.clone(), &mut errors);
    match (errors.finish(()), func, node) {
        (Ok(()), Some(func), Some(node)) => expand::node(&func, &node).into(),
        // The user's fn beside the errors, branded as it would be, so that its own signature
        // (`NodeError` without its run) adds no follow-on error; and the node type, so that
        // every later use of it (`pack!`, `host.run_typed(&DraftScene, ..)`) is not a second,
        // misleading error (thiserror and tokio-macros emit such a fallback).
        (Err(e), Some(func), _) => fail(e, expand::fallback(&func, node_fn.as_ref())),
        (Err(e), ..) => fail(e, item),
        (Ok(()), ..) => fail(
            syn::Error::new(
                proc_macro2::Span::call_site(),
                "`#[wop_node]` could not read this fn",
            ),
            item,
        ),
    }
}

/// A compile-time checked `RetryPolicy`. Documented on `wop_sdk::retry`.
#[proc_macro]
pub fn retry(input: TokenStream) -> TokenStream {
    let mut errors = Errors::default();
    let args = attr::retry_args(input.into(), &mut errors);
    match errors.finish(args) {
        Ok(args) => expand::retry(Some(&args)).into(),
        Err(e) => {
            let errors = e.to_compile_error();
            quote::quote!({ #errors ::wop_sdk::RetryPolicy::HOST_DEFAULT }).into()
        }
    }
}

/// Declares a pack of nodes: `pub fn pack() -> Pack`. Documented on `wop_sdk::pack`.
#[proc_macro]
pub fn pack(input: TokenStream) -> TokenStream {
    let mut errors = Errors::default();
    let args = attr::pack_args(input.into(), &mut errors);
    check::pack(&args, &mut errors);
    match errors.finish(args) {
        Ok(args) => expand::pack(&args).into(),
        Err(e) => fail(e, proc_macro2::TokenStream::new()),
    }
}
