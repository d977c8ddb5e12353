//! # wop-sdk
//!
//! Write [OpenWOP](https://openwop.dev) node packs whose nodes call language models through
//! `ctx.callAI`, in Rust, with:
//!
//! - **typed calls**: the `responseSchema` comes from your type ([`AiRequest`]), the reply is
//!   validated closed-world ([`Completion::output`]);
//! - **honest accounting** (RFC 0248): every provider request a call really made, the output
//!   tokens summed over them, whether usage is complete ([`wire::Attempts`]), readable only with
//!   the proof that the host advertises it ([`caps::AttemptsProof`]);
//! - **failures you cannot mishandle**: [`AiFailure`] is opaque and branded to its run; it can
//!   only be settled or propagated with `?`;
//! - **retry lineage**: a deliberate retry names the successful [`Completion`] it retries and a
//!   [`RetryReason`] ([`AiRequest::retry_of`]); there is no way to pass an attempt id as a string;
//! - **budgets and plans**: a node's `max_calls` counted in provider requests, and the worst
//!   case of a run before it starts ([`Estimate`]).
//!
//! This crate is what a pack depends on: nodes, typed calls, completions and failures, budgets,
//! policy, capability proofs, the manifest and the macros, with no host, no SQLite, no HTTP
//! client and no command line in its tree. The embedded local host that runs a pack in tests and
//! on a laptop (its journals, providers, command line and the RFC 0248 conformance harness) is
//! the crate `wop-sdk-host`, a dev-dependency of a pack; the bridge to a host that loads
//! JavaScript packs (openwop-app) is `wop-sdk-node`.
//!
//! # A node
//!
//! ```rust,no_run
//! use wop_sdk::prelude::*;
//!
//! /// A title. Doc comments become the response schema's descriptions.
//! #[derive(serde::Deserialize, serde::Serialize, schemars::JsonSchema)]
//! struct Title {
//!     /// At most eight words.
//!     title: String,
//! }
//!
//! #[wop_node(type_id = "community.example.name-book", version = "1.0.0", max_calls = 3,
//!            retry(max_attempts = 2))]
//! async fn name_book(ctx: &NodeCtx<'_>, topic: String) -> Result<Title, NodeError> {
//!     let completion = ctx.call_ai(AiRequest::<Title>::prompt(topic).max_tokens(100)).await?;
//!     if let Some(proof) = ctx.capabilities().attempts() {
//!         // RFC 0248: what the call really cost, only on a host that advertises it.
//!         let _requests = completion.attempts(proof).map(|a| a.count);
//!     }
//!     completion.into_output().map_err(|invalid| NodeError::new(invalid.to_string()))
//! }
//!
//! // `#[wop_node]` made the node type `NameBook` from `name_book`; `pack!` lists it.
//! wop_sdk::pack! { name = "community.example.books", version = "0.1.0", nodes = [NameBook] }
//! ```
//!
//! Run it in a test with `wop-sdk-host` (`LocalHost::builder().provider(..).build()` and
//! `host.run_typed(&NameBook, topic)`), or on openwop-app with `cargo wop build`.
//!
//! # A call's path, on the pack's side
//!
//! [`NodeCtx::call_ai`] (`node/ctx.rs`) → `node/call.rs`: the node's budget reserves the call's
//! worst case ([`budget::AttemptPlan`]) and the typed [`wire::CallAiRequest`] goes to
//! [`host::Host::call_ai`] → the host answers a typed [`wire::CallAiResult`] or a
//! [`host::HostFailure`] → `node/call.rs` checks the result as any host answer
//! ([`wire::CallAiResult::check`]), charges the budget and makes the typed [`Completion`], or
//! records the opaque [`AiFailure`] (`failure.rs`). The local host's side of the same call is in
//! `wop-sdk-host`'s crate docs. JSON is made only at the edges: the journal's text, the command
//! line, a host bridge, and [`host::Host::call_ai_json`].
//!
//! The modules follow the design, from the wire inwards: [`wire`], [`policy`], [`caps`], [`ai`],
//! [`node`], [`budget`], [`host`] (the boundary every host implements), and [`manifest`].
//!
//! The library emits a [`tracing`](https://docs.rs/tracing) span `wop.node` per node execution,
//! on any host (run, node, type, outcome); the local host nests its `wop.call` and
//! `wop.provider.request` spans in it. It never installs a subscriber.

#![warn(missing_docs)]

pub mod ai;
mod brand;
pub mod budget;
pub mod caps;
mod failure;
// The one hex writer of ids and digests, shared with `wop-sdk-host` (which pins this version).
#[doc(hidden)]
pub mod hex;
pub mod host;
pub mod manifest;
pub mod node;
pub mod policy;
pub mod wire;

pub use ai::{AiFailure, AiRequest, AttemptId, Completion, InvalidOutput, Output, RetryOf, Text};
pub use budget::{CallPlan, Estimate, PlannedCall};
pub use caps::{AttemptsProof, Capabilities, Capability, RetryPolicyProof, RunCapabilities};
pub use host::RunId;
pub use node::{Category, Node, NodeCtx, NodeError, NodeSpec, Role};
pub use policy::{RetryPolicy, RetryReason};

/// What a pack author writes every day: `use wop_sdk::prelude::*;`.
///
/// Host-side items (the [`host::Host`] trait, [`host::AttemptKey`], [`node::DynNode`], the
/// journal) live in their own modules, for the few who implement a host or a bridge.
pub mod prelude {
    pub use crate::ai::{AiFailure, AiRequest, Completion, InvalidOutput, Provisional, Text};
    pub use crate::ai::{IntoCall, Output};
    pub use crate::budget::{CallPlan, PlannedCall};
    pub use crate::node::{Node, NodeCtx, NodeError};
    pub use crate::policy::{RetryPolicy, RetryReason};
    pub use crate::{pack, retry, wop_node};
}

/// Turns an `async fn` into an OpenWOP node.
///
/// ```rust,no_run
/// use wop_sdk::{NodeCtx, NodeError, wop_node};
/// # #[derive(serde::Deserialize, schemars::JsonSchema)] pub struct DraftIn { scene: String }
/// # #[derive(serde::Serialize, schemars::JsonSchema)] pub struct DraftOut { text: String }
/// #[wop_node(
///     type_id = "community.demo.bookai.draft-scene",
///     version = "1.0.0",
///     category = "chat",          // default `chat`
///     role = "side-effect",       // default `side-effect`
///     label = "Draft a scene",
///     max_calls = 6,              // the node's budget in provider requests
///     retry(max_attempts = 2, grow_max_tokens = false),
///     requires(attempts, retry_policy),
/// )]
/// pub async fn draft_scene(ctx: &NodeCtx<'_>, input: DraftIn) -> Result<DraftOut, NodeError> {
///     let _ = ctx;
///     Ok(DraftOut { text: input.scene })
/// }
/// // generates `pub struct DraftScene;` implementing `wop_sdk::Node`
/// ```
///
/// The node type is the fn's name in CamelCase (`draft_scene` → `DraftScene`), with the fn's
/// visibility: it must not clash with a type of yours (a fn `title` returning a `Title` would).
///
/// Required: `type_id` (the OpenWOP grammar: at least two dotted segments, each starting with a
/// lowercase letter, e.g. `community.demo.bookai.draft-scene` or `core.ai.callPrompt`; see
/// [`rules::grammar::type_id_problem`]) and `version` (semver). `requires(...)` takes `ai_providers`,
/// `attempts`, `retry_policy`, `provider_usage`, `replay`; `plan = path` names a
/// `fn(&Input) -> CallPlan` used for estimates. Every literal is checked at compile time.
///
/// `max_calls` must fit one structured call, or the node does not compile: at least
/// `max_attempts` when the node's `retry(...)` names it, else at least a host's default ceiling
/// ([`caps::DEFAULT_CEILING`], 3 requests). That is all the macro can know: a host advertising a
/// higher ceiling, or one without `callAccounting` whose natural-language fallback follows its
/// ceiling, may need more; [`Estimate`] shows both kinds of host for the node's `plan`.
pub use wop_sdk_macros::wop_node;

/// A [`RetryPolicy`] checked at compile time: `retry!(max_attempts = 2, grow_max_tokens = false)`,
/// `retry!(max_attempts = 1)`, `retry!(grow_max_tokens = false)`, or `retry!()` (the host default).
///
/// ```rust,no_run
/// use wop_sdk::{RetryPolicy, retry};
/// const STRICT: RetryPolicy = retry!(max_attempts = 2, grow_max_tokens = false);
/// assert_eq!(STRICT.max_attempts(), Some(2));
/// assert_eq!(retry!(), RetryPolicy::HOST_DEFAULT);
/// ```
pub use wop_sdk_macros::retry;

/// Declares a pack: generates `pub fn pack() -> wop_sdk::manifest::Pack`.
///
/// ```rust,no_run
/// # use wop_sdk::{NodeCtx, NodeError, wop_node};
/// # #[wop_node(type_id = "community.demo.bookai.review", version = "1.0.0")]
/// # async fn review(ctx: &NodeCtx<'_>, input: String) -> Result<String, NodeError> { Ok(input) }
/// wop_sdk::pack! { name = "community.demo.bookai", version = "0.1.0", nodes = [Review] }
/// let manifest = pack().manifest(); // pack.json v2
/// ```
pub use wop_sdk_macros::pack;

/// The OpenWOP v2 grammar, closed sets and bounds, shared with the macros: the compile errors of
/// `#[wop_node]` and `pack!` and [`manifest::validate_manifest`] give the same reasons.
///
/// ```rust
/// use wop_sdk::rules::grammar::{pack_name_problem, type_id_problem};
/// assert_eq!(type_id_problem("core.ai.callPrompt"), None);
/// assert!(pack_name_problem("community.bookai").is_some()); // needs `community.<author>.<pack>`
/// ```
pub use wop_sdk_rules as rules;

/// What the macros' expansions use. Not part of the API.
#[doc(hidden)]
pub mod __private {
    pub use schemars::JsonSchema;
    pub use serde::Serialize;
    pub use serde::de::DeserializeOwned;
    pub use std::boxed::Box;

    /// `pack!` names node types; this makes the value and checks, at the user's path, that the
    /// type is a node.
    pub fn node<N: crate::Node + Default>() -> N {
        N::default()
    }

    /// The `SPEC` of the node type `#[wop_node]` emits beside its compile errors (so that later
    /// uses of the type add none). The crate does not compile, so it never reaches a manifest.
    pub const FALLBACK_SPEC: crate::NodeSpec = crate::NodeSpec {
        type_id: "invalid.node",
        version: "0.0.0",
        category: crate::Category::Chat,
        role: crate::Role::SideEffect,
        label: None,
        description: None,
        max_calls: None,
        retry: crate::RetryPolicy::HOST_DEFAULT,
        requires: &[],
    };

    /// The body of that fallback node when its fn's signature could not be read: a node
    /// failure. It never runs, as the crate does not compile.
    pub fn fallback_run<'a, 'run>(
        ctx: &'a crate::NodeCtx<'run>,
        input: (),
    ) -> crate::host::BoxFuture<'a, Result<(), crate::NodeError<'run>>> {
        let _ = (ctx, input);
        Box::pin(std::future::ready(Err(crate::NodeError::new(
            "this node did not compile: see the errors of `#[wop_node]`",
        ))))
    }
}
