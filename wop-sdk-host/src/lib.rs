//! # wop-sdk-host
//!
//! The host side of [`wop_sdk`]: what runs a pack's nodes on your machine and in your tests. A
//! pack crate depends on `wop-sdk` alone; it takes this crate as a dev-dependency (tests on the
//! local host) or in a binary (the pack command line).
//!
//! - [`local`]: the embedded local host, which behaves like a production OpenWOP host (the retry
//!   loop, RFC 0248 accounting, events, replay forks, ceilings, the billing ledger);
//! - [`journal`]: where attempt identities live (SQLite, feature `sqlite`; a log of checksummed
//!   records; in memory);
//! - [`provider`]: the [`provider::Provider`] trait the local host calls, the scripted provider
//!   ([`provider::mock`]) and the OpenAI-compatible one ([`provider::openai`], feature `openai`).
//!   Providers know nothing of the host;
//! - [`conformance`]: the RFC 0248 legs and judges, against any [`wop_sdk::host::Host`];
//! - [`pack`]: the folder a host that loads JavaScript packs (openwop-app) mounts;
//! - [`testing`]: doubles for a pack's or a wrapper's tests (a provider from a closure, probes);
//! - [`cli`]: the pack command line (feature `cli`).
//!
//! ```rust,no_run
//! use wop_sdk::prelude::*;
//! use wop_sdk_host::local::{LocalHost, ScriptedProvider, Step};
//!
//! #[wop_node(type_id = "community.example.shout", version = "1.0.0", max_calls = 3)]
//! async fn shout(ctx: &NodeCtx<'_>, text: String) -> Result<String, NodeError> {
//!     let reply = ctx.call_ai(AiRequest::<Text>::prompt(text)).await?;
//!     Ok(reply.into_output().map(|t| t.0.to_uppercase()).unwrap_or_default())
//! }
//!
//! # async fn demo() {
//! let provider = ScriptedProvider::new([Step::text("hello", 1)].into_iter().collect());
//! let host = LocalHost::builder().provider(provider).build();
//! assert_eq!(host.run_typed(&Shout, "hi".to_owned()).await.ok().as_deref(), Some("HELLO"));
//! # }
//! ```

//!
//! # A call's path
//!
//! One structured call on the local host, from the node to the provider and back, in twelve
//! files (the first two in `wop-sdk`):
//!
//! 1. `wop-sdk/src/node/ctx.rs`: [`wop_sdk::NodeCtx::call_ai`] takes the typed request;
//! 2. `wop-sdk/src/node/call.rs`: the node's budget reserves the call's worst case
//!    ([`wop_sdk::budget::AttemptPlan`]) and the typed [`wop_sdk::wire::CallAiRequest`] goes to
//!    [`wop_sdk::host::Host::call_ai`];
//! 3. `local/host.rs`: the local host's `Host` impl hands it to
//! 4. `local/serve.rs`: the `wop.call` span, admission (a provider this host has, a lineage that
//!    names a completed attempt of the run) and the replay fork of a replayed run;
//! 5. `local/inflight.rs`: a second entry with the same identity reattaches to the call in
//!    flight, one with another request is refused;
//! 6. `local/identity.rs`: the call's identity and lease are made durable before anything is
//!    sent (a recorded outcome is replayed instead, an unknown one is a terminal ambiguous
//!    failure);
//! 7. `local/call.rs`: the dispatch, given the host's parts it uses: each request admitted under
//!    the ceilings, announced to the journal, sent to the provider through
//! 8. `local/guard.rs`: the reply guard (timeout, size), the answer handed to
//! 9. `local/retry/mod.rs`: the retry machine, which counts the answer and says whether the call
//!    goes on (the next request's budget and messages) or how it ended, on the verdict of
//! 10. `local/retry/classify.rs`: accepted, refused, truncated, unparsable, off the schema, a
//!     provider error, or no answer;
//! 11. `local/events.rs`: what the machine announced, as typed [`wop_sdk::wire::Event`]s;
//! 12. `journal/sqlite/store.rs` (or `journal/log/store.rs`, `journal/memory/mod.rs`): the
//!     outcome (its text written once, [`wop_sdk::wire::CallAiResult::to_text`], the bytes a
//!     replay reproduces), the charge and the events in one terminal write.
//!
//! The typed result goes back the same way; `node/call.rs` checks it as any host's answer
//! ([`wop_sdk::wire::CallAiResult::check`]), charges the budget and makes the typed
//! [`wop_sdk::Completion`], or records the opaque [`wop_sdk::AiFailure`].

#![warn(missing_docs)]

mod answers;
#[cfg(feature = "cli")]
pub mod cli;
pub mod conformance;
pub mod journal;
pub mod local;
pub mod pack;
pub mod provider;
pub mod testing;
