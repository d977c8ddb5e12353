//! The typed model of what a macro was given. Every value keeps the span of the tokens it came
//! from, so a later rule can point at exactly those tokens.

use crate::errors::Errors;
use proc_macro2::{Ident, Span};
use syn::spanned::Spanned;

/// A value read from the macro input, with the span of its tokens.
#[derive(Clone, Debug)]
pub(crate) struct Lit<T> {
    pub(crate) value: T,
    pub(crate) span: Span,
}

/// `retry(max_attempts = N, grow_max_tokens = B)` or `retry!(...)`.
#[derive(Clone, Debug, Default)]
pub(crate) struct RetryArgs {
    pub(crate) max_attempts: Option<Lit<u8>>,
    pub(crate) grow_max_tokens: Option<Lit<bool>>,
}

/// Declares a closed set whose values live in `wop_sdk_rules::sets`, with their runtime
/// counterparts (the enum `::wop_sdk::…::$path`).
macro_rules! spelled {
    ($(#[$m:meta])* $name:ident => $path:literal, $set:path $(, $default:path)?) => {
        $(#[$m])*
        #[derive(Clone, Copy, Debug, PartialEq, Eq)]
        pub(crate) struct $name(&'static wop_sdk_rules::sets::Member);

        impl $name {
            $(
            /// The value used when the argument is left out.
            pub(crate) fn default_value() -> Self {
                Self($default)
            }
            )?

            /// How the value is spelled in source.
            #[cfg(test)]
            pub(crate) fn spelling(self) -> &'static str {
                self.0.spelling
            }

            /// The value a spelling names.
            pub(crate) fn parse(s: &str) -> Option<Self> {
                wop_sdk_rules::sets::find($set, s).map(Self)
            }

            /// The runtime path, relative to `::wop_sdk`.
            pub(crate) fn runtime(self) -> (&'static str, &'static str) {
                ($path, self.0.variant)
            }

            /// The valid spellings, for error messages: "`a`, `b`, `c`".
            pub(crate) fn list() -> String {
                wop_sdk_rules::sets::list($set)
            }
        }
    };
}

spelled! {
    /// `category = "..."`: the manifest categories of pack.json v2.
    CategoryKind => "Category", wop_sdk_rules::sets::CATEGORIES, wop_sdk_rules::sets::DEFAULT_CATEGORY
}

spelled! {
    /// `role = "..."`.
    RoleKind => "Role", wop_sdk_rules::sets::ROLES, wop_sdk_rules::sets::DEFAULT_ROLE
}

spelled! {
    /// `requires(...)`: host capabilities a node refuses to start without.
    Cap => "Capability", wop_sdk_rules::sets::CAPABILITIES
}

/// The arguments of `#[wop_node(...)]`.
#[derive(Clone, Debug, Default)]
pub(crate) struct NodeArgs {
    pub(crate) type_id: Option<Lit<String>>,
    pub(crate) version: Option<Lit<String>>,
    pub(crate) category: Option<Lit<CategoryKind>>,
    pub(crate) role: Option<Lit<RoleKind>>,
    pub(crate) label: Option<Lit<String>>,
    pub(crate) description: Option<Lit<String>>,
    pub(crate) max_calls: Option<Lit<u32>>,
    pub(crate) retry: Option<RetryArgs>,
    pub(crate) requires: Vec<Lit<Cap>>,
    pub(crate) plan: Option<syn::Path>,
    /// Keys written, valid or not: a broken value is not also reported as missing.
    pub(crate) written: Vec<&'static str>,
}

/// What the node's `async fn` says: its name, visibility and typed input and output.
#[derive(Clone, Debug)]
pub(crate) struct NodeFn {
    pub(crate) vis: syn::Visibility,
    pub(crate) ident: Ident,
    pub(crate) input: syn::Type,
    pub(crate) output: syn::Type,
}

/// A checked `#[wop_node]`: its arguments and its function.
#[derive(Clone, Debug)]
pub(crate) struct Node {
    pub(crate) args: NodeArgs,
    pub(crate) func: NodeFn,
    /// The generated node type, `DraftScene` for `draft_scene`.
    pub(crate) struct_ident: Ident,
}

/// The arguments of `pack! { ... }`.
#[derive(Clone, Debug, Default)]
pub(crate) struct PackArgs {
    pub(crate) name: Option<Lit<String>>,
    pub(crate) version: Option<Lit<String>>,
    pub(crate) nodes: Option<Lit<Vec<syn::Path>>>,
    /// Keys written, valid or not: a broken value is not also reported as missing.
    pub(crate) written: Vec<&'static str>,
}

/// `draft_scene` → `DraftScene`.
pub(crate) fn camel_case(snake: &str) -> String {
    let snake = snake.strip_prefix("r#").unwrap_or(snake);
    let mut out = String::with_capacity(snake.len());
    for word in snake.split('_').filter(|w| !w.is_empty()) {
        let mut chars = word.chars();
        if let Some(first) = chars.next() {
            out.extend(first.to_uppercase());
            out.push_str(chars.as_str());
        }
    }
    out
}

fn last_ident(ty: &syn::Type) -> Option<&syn::PathSegment> {
    match ty {
        syn::Type::Path(p) if p.qself.is_none() => p.path.segments.last(),
        syn::Type::Group(g) => last_ident(&g.elem),
        syn::Type::Paren(p) => last_ident(&p.elem),
        _ => None,
    }
}

/// Whether `ty` is `&NodeCtx<'_>` (any path ending in `NodeCtx`, one lifetime).
fn is_ctx(ty: &syn::Type) -> bool {
    let syn::Type::Reference(r) = ty else {
        return false;
    };
    if r.mutability.is_some() {
        return false;
    }
    let Some(seg) = last_ident(&r.elem) else {
        return false;
    };
    if seg.ident != "NodeCtx" {
        return false;
    }
    match &seg.arguments {
        syn::PathArguments::AngleBracketed(a) => {
            a.args.len() == 1 && matches!(a.args.first(), Some(syn::GenericArgument::Lifetime(_)))
        }
        _ => false,
    }
}

/// `Result<T, NodeError>` → `T`.
fn ok_type(ty: &syn::Type) -> Option<&syn::Type> {
    let seg = last_ident(ty)?;
    if seg.ident != "Result" {
        return None;
    }
    let syn::PathArguments::AngleBracketed(a) = &seg.arguments else {
        return None;
    };
    let mut types = a.args.iter().filter_map(|arg| match arg {
        syn::GenericArgument::Type(t) => Some(t),
        _ => None,
    });
    let (ok, err) = (types.next()?, types.next()?);
    if types.next().is_some() || a.args.len() != 2 {
        return None;
    }
    (last_ident(err)?.ident == "NodeError").then_some(ok)
}

const SHAPE: &str = "write `async fn draft_scene(ctx: &NodeCtx<'_>, input: DraftIn) -> Result<DraftOut, NodeError>`";

impl NodeFn {
    /// Reads the node's signature, recording every way it breaks the node shape.
    pub(crate) fn from_item(item: &syn::ItemFn, errors: &mut Errors) -> Option<Self> {
        let sig = &item.sig;
        let mut ok = true;
        if sig.asyncness.is_none() {
            errors.at(
                sig.fn_token.span,
                format!(
                    "`#[wop_node]` needs an `async fn`: a node awaits its model calls; {SHAPE}"
                ),
            );
            ok = false;
        }
        if let Some(param) = sig
            .generics
            .params
            .iter()
            .find(|p| !matches!(p, syn::GenericParam::Lifetime(_)))
        {
            errors.at(
                param.span(),
                "a node fn cannot have type or const parameters: the host calls it with one concrete input type; use a concrete type",
            );
            ok = false;
        }
        let params: Vec<&syn::FnArg> = sig.inputs.iter().collect();
        let mut input = None;
        if params.len() == 2 {
            match params[0] {
                syn::FnArg::Typed(t) if is_ctx(&t.ty) => {}
                syn::FnArg::Typed(t) => {
                    errors.at(
                        t.ty.span(),
                        "the first parameter of a node must be `&NodeCtx<'_>`: the runtime passes the node's context there; write `ctx: &NodeCtx<'_>`",
                    );
                    ok = false;
                }
                syn::FnArg::Receiver(r) => {
                    errors.at(
                        r.span(),
                        "a node fn cannot take `self`: `#[wop_node]` generates the node type itself; write a free `async fn` whose first parameter is `ctx: &NodeCtx<'_>`",
                    );
                    ok = false;
                }
            }
            match params[1] {
                syn::FnArg::Typed(t) => input = Some((*t.ty).clone()),
                syn::FnArg::Receiver(r) => {
                    errors.at(r.span(), format!("a node fn cannot take `self`; {SHAPE}"));
                    ok = false;
                }
            }
        } else {
            let span = if sig.inputs.is_empty() {
                sig.paren_token.span.join()
            } else {
                sig.inputs.span()
            };
            errors.at(
                span,
                format!(
                    "a node fn takes exactly 2 parameters, the context and the input, not {}: the runtime passes one typed input; {SHAPE}",
                    params.len()
                ),
            );
            ok = false;
        }
        let output = match &sig.output {
            syn::ReturnType::Type(_, ty) => match ok_type(ty) {
                Some(out) => Some(out.clone()),
                None => {
                    errors.at(
                        ty.span(),
                        "a node must return `Result<Output, NodeError>`: the runtime reports the error as the node's `node.failed`; write `-> Result<DraftOut, NodeError>`",
                    );
                    None
                }
            },
            syn::ReturnType::Default => {
                errors.at(
                    sig.ident.span(),
                    "a node must return `Result<Output, NodeError>`: the output becomes `node.completed`, the error `node.failed`; add `-> Result<DraftOut, NodeError>`",
                );
                None
            }
        };
        Some(Self {
            vis: item.vis.clone(),
            ident: sig.ident.clone(),
            input: input?,
            output: output?,
        })
        .filter(|_| ok)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read(src: &str) -> (Option<NodeFn>, Vec<String>) {
        let item: syn::ItemFn = syn::parse_str(src).unwrap_or_else(|e| unreachable!("{e}"));
        let mut errors = Errors::default();
        let f = NodeFn::from_item(&item, &mut errors);
        let messages = errors
            .finish(())
            .err()
            .map(|e| e.into_iter().map(|e| e.to_string()).collect())
            .unwrap_or_default();
        (f, messages)
    }

    #[test]
    fn camel_cases_fn_names() {
        assert_eq!(camel_case("draft_scene"), "DraftScene");
        assert_eq!(camel_case("review"), "Review");
        assert_eq!(camel_case("r#type"), "Type");
        assert_eq!(camel_case("plan__outline_2"), "PlanOutline2");
    }

    #[test]
    fn reads_the_node_shape() {
        let (f, errors) = read(
            "pub async fn draft_scene(ctx: &wop_sdk::NodeCtx<'_>, input: DraftIn) -> Result<DraftOut, NodeError> { Ok(DraftOut { text: input.scene }) }",
        );
        assert!(errors.is_empty(), "{errors:?}");
        let f = f.unwrap_or_else(|| unreachable!());
        assert_eq!(f.ident, "draft_scene");
        assert!(matches!(f.vis, syn::Visibility::Public(_)));
    }

    #[test]
    fn reports_every_broken_part_of_the_shape() {
        let (f, errors) = read("fn f(ctx: NodeCtx, a: A, b: B) {}");
        assert!(f.is_none());
        assert_eq!(errors.len(), 3, "{errors:?}");
        assert!(errors[0].contains("async fn"));
        assert!(errors[1].contains("exactly 2 parameters"));
        assert!(errors[2].contains("Result<Output, NodeError>"));
    }

    #[test]
    fn refuses_a_wrong_context_and_error_type() {
        let (_, errors) = read("async fn f(ctx: &mut NodeCtx<'_>, a: A) -> Result<A, String> {}");
        assert_eq!(errors.len(), 2, "{errors:?}");
        assert!(errors[0].contains("`&NodeCtx<'_>`"));
    }
}
