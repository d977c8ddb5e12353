//! Brands the user's node fn with its run: the lifetime of its `NodeCtx<'_>` becomes a named
//! lifetime, and its `NodeError` carries it (`NodeError<'run>`), so that an AI failure
//! propagated with `?` cannot leave the run (stored in a static, sent to a thread, returned from
//! another run). The pack author keeps writing `Result<Out, NodeError>`.

/// The name given to an anonymous context lifetime.
const RUN: &str = "'wop_run";

/// The last path segment of a type, through references and parentheses.
fn last_segment_mut(ty: &mut syn::Type) -> Option<&mut syn::PathSegment> {
    match ty {
        syn::Type::Path(p) => p.path.segments.last_mut(),
        syn::Type::Reference(r) => last_segment_mut(&mut r.elem),
        syn::Type::Paren(p) => last_segment_mut(&mut p.elem),
        syn::Type::Group(g) => last_segment_mut(&mut g.elem),
        _ => None,
    }
}

/// The lifetime of the fn's `&NodeCtx<'_>` parameter (wherever it is), named `'wop_run` (and
/// declared) when it was anonymous.
fn context_lifetime(item: &mut syn::ItemFn) -> Option<syn::Lifetime> {
    let lt = item.sig.inputs.iter_mut().find_map(|arg| {
        let syn::FnArg::Typed(t) = arg else {
            return None;
        };
        let seg = last_segment_mut(&mut t.ty)?;
        if seg.ident != "NodeCtx" {
            return None;
        }
        match &mut seg.arguments {
            syn::PathArguments::AngleBracketed(a) => match a.args.first_mut() {
                Some(syn::GenericArgument::Lifetime(lt)) => Some(lt),
                _ => None,
            },
            _ => None,
        }
    })?;
    if lt.ident != "_" {
        return Some(lt.clone());
    }
    let named = syn::Lifetime::new(RUN, lt.span());
    *lt = named.clone();
    item.sig.generics.params.insert(
        0,
        syn::GenericParam::Lifetime(syn::LifetimeParam::new(named.clone())),
    );
    Some(named)
}

/// `item` with its context lifetime named and its `NodeError` branded with it. The rest of a
/// signature that is not of the node shape is left as it is (its errors are reported elsewhere).
pub(crate) fn brand(item: &syn::ItemFn) -> syn::ItemFn {
    let mut item = item.clone();
    let run = context_lifetime(&mut item).unwrap_or_else(|| {
        // No context to brand with (a signature the macro refuses): `'static` keeps the refusal
        // the only error.
        syn::Lifetime::new("'static", proc_macro2::Span::call_site())
    });
    let syn::ReturnType::Type(_, ret) = &mut item.sig.output else {
        return item;
    };
    let Some(result) = last_segment_mut(ret) else {
        return item;
    };
    let syn::PathArguments::AngleBracketed(args) = &mut result.arguments else {
        return item;
    };
    let Some(syn::GenericArgument::Type(err)) = args.args.iter_mut().nth(1) else {
        return item;
    };
    let Some(seg) = last_segment_mut(err) else {
        return item;
    };
    if seg.ident != "NodeError" {
        return item;
    }
    let span = seg.ident.span();
    let mut branded = syn::AngleBracketedGenericArguments {
        colon2_token: None,
        lt_token: syn::Token![<](span),
        args: syn::punctuated::Punctuated::new(),
        gt_token: syn::Token![>](span),
    };
    match &mut seg.arguments {
        syn::PathArguments::None => {
            branded
                .args
                .push(syn::GenericArgument::Lifetime(syn::Lifetime {
                    apostrophe: span,
                    ident: run.ident.clone(),
                }));
            seg.arguments = syn::PathArguments::AngleBracketed(branded);
        }
        syn::PathArguments::AngleBracketed(a) => {
            if let Some(syn::GenericArgument::Lifetime(l)) = a.args.first_mut()
                && l.ident == "_"
            {
                *l = syn::Lifetime {
                    apostrophe: l.apostrophe,
                    ident: run.ident.clone(),
                };
            }
        }
        syn::PathArguments::Parenthesized(_) => {}
    }
    item
}

#[cfg(test)]
mod tests {
    use super::*;
    use quote::ToTokens;

    fn branded(src: &str) -> String {
        let item: syn::ItemFn = syn::parse_str(src).expect("fn");
        brand(&item).sig.to_token_stream().to_string()
    }

    #[test]
    fn names_the_context_lifetime_and_brands_the_error() {
        assert_eq!(
            branded("async fn f(ctx: &NodeCtx<'_>, i: In) -> Result<Out, NodeError> {}"),
            "async fn f < 'wop_run > (ctx : & NodeCtx < 'wop_run > , i : In) -> Result < Out , NodeError < 'wop_run > >"
        );
        assert_eq!(
            branded(
                "async fn f(ctx: &wop_sdk::NodeCtx<'_>, i: In) -> Result<Out, wop_sdk::NodeError<'_>> {}"
            ),
            "async fn f < 'wop_run > (ctx : & wop_sdk :: NodeCtx < 'wop_run > , i : In) -> Result < Out , wop_sdk :: NodeError < 'wop_run > >"
        );
    }

    #[test]
    fn keeps_a_named_lifetime_and_an_explicit_brand() {
        assert_eq!(
            branded("async fn f<'r>(ctx: &NodeCtx<'r>, i: In) -> Result<Out, NodeError> {}"),
            "async fn f < 'r > (ctx : & NodeCtx < 'r > , i : In) -> Result < Out , NodeError < 'r > >"
        );
        assert_eq!(
            branded("async fn f<'r>(ctx: &NodeCtx<'r>, i: In) -> Result<Out, NodeError<'r>> {}"),
            "async fn f < 'r > (ctx : & NodeCtx < 'r > , i : In) -> Result < Out , NodeError < 'r > >"
        );
    }

    #[test]
    fn leaves_other_shapes_alone() {
        for src in [
            "async fn f(ctx: NodeCtx, i: In) -> Result<Out, NodeError> {}",
            "async fn f(ctx: &NodeCtx<'_>, i: In) -> Result<Out, String> {}",
            "async fn f(ctx: &NodeCtx<'_>, i: In) {}",
        ] {
            let item: syn::ItemFn = syn::parse_str(src).expect("fn");
            let out = brand(&item).sig.output.to_token_stream().to_string();
            assert!(!out.contains("wop_run"), "{src}: {out}");
        }
    }
}
