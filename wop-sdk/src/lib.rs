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
//! - **an embedded local host** that behaves like a production host, so `cargo test` means
//!   something.
//!
//! # A node, run on the local host
//!
//! ```rust,no_run
//! use wop_sdk::local::{LocalHost, ScriptedProvider, Step};
//! use wop_sdk::{AiRequest, NodeCtx, NodeError, wop_node};
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
//! # async fn demo() {
//! let provider = ScriptedProvider::new([Step::json(&serde_json::json!({"title": "Lamps"}), 3)].into_iter().collect());
//! let host = LocalHost::builder().provider(provider).build();
//! // `#[wop_node]` made the node type `NameBook` from `name_book`.
//! // Its own input type in, its own output type out (`host.run` takes and gives JSON, with
//! // the call reports and the budget).
//! let title = host.run_typed(&NameBook, "lighthouses".to_owned()).await;
//! assert_eq!(title.map(|t| t.title).ok().as_deref(), Some("Lamps"));
//! # }
//! ```
//!
//! # A call's path
//!
//! [`NodeCtx::call_ai`] (`node/ctx.rs`) → `node/call.rs`: the node's budget reserves the call's
//! worst case ([`budget::AttemptPlan`]) and the typed [`wire::CallAiRequest`] goes to
//! [`host::Host::call_ai`] → on the local host, `local/identity.rs` persists the call's identity
//! (or replays, refuses, reattaches) → `local/call.rs` drives the retry state machine
//! (`local/retry/`) through admission (`local/runs.rs`), the provider behind the reply guard
//! (`local/guard.rs`) and schema validation (`local/schemas.rs`), its events built as typed
//! [`wire::Event`]s (`local/events.rs`) → the typed [`wire::CallAiResult`] comes back (its
//! journal text written once, the bytes a replay reproduces) → `node/call.rs` checks it as any host answer, charges the budget and makes the
//! typed [`Completion`], or records the opaque [`AiFailure`] (`failure.rs`). JSON is made only at
//! the edges: the journal's text, the command line, a host bridge, and [`host::Host::call_ai_json`].
//!
//! The modules follow the design, from the wire inwards: [`wire`], [`policy`], [`caps`], [`ai`],
//! [`node`], [`budget`], [`host`]; then the embedded host ([`local`], [`journal`]), the
//! conformance harness ([`conformance`]), the manifest ([`manifest`]) and the command line
//! ([`cli`]). The embedded host, SQLite, the command line and the OpenAI-compatible provider
//! (`local::openai`) are default-on features (`local`, `sqlite`, `cli`, `openai`), so a pack built
//! for a production host or for `wasm32` can leave them out.
//!
//! The library emits [`tracing`](https://docs.rs/tracing) spans, nested: `wop.node` (one node
//! execution, on any host: run, node, type, outcome), `wop.call` (one call on the local host:
//! call index, outcome, error code, `attempts.count`) and `wop.provider.request` (one provider
//! request, with the OpenTelemetry GenAI attribute names). It never installs a subscriber; the
//! command line does (`RUST_LOG`, `-v`).

#![warn(missing_docs)]

// The macros expand to `::wop_sdk::…` paths; this lets the crate use them itself (the conformance
// fixture is a `#[wop_node]`).
extern crate self as wop_sdk;

pub mod ai;
mod brand;
pub mod budget;
pub mod caps;
#[cfg(feature = "cli")]
pub mod cli;
pub mod conformance;
mod failure;
mod hex;
pub mod host;
#[cfg(feature = "local")]
pub mod journal;
#[cfg(feature = "local")]
pub mod local;
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
    pub use crate::budget::{CallPlan, PlannedCall};
    pub use crate::node::{NodeCtx, NodeError};
    pub use crate::policy::{RetryPolicy, RetryReason};
    pub use crate::{retry, wop_node};
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
}
