//! # wop-sdk-host
//!
//! The host side of [`wop_sdk`]: what runs a pack's nodes on your machine and in your tests. A
//! pack crate depends on `wop-sdk` alone; it takes this crate as a dev-dependency (tests on the
//! local host) or in a binary (the pack command line).
//!
//! - [`local`]: the embedded local host, which behaves like a production OpenWOP host (the retry
//!   loop, RFC 0248 accounting, events, replay forks, ceilings, the billing ledger);
//! - [`journal`]: where attempt identities live (SQLite, feature `sqlite`; in memory);
//! - [`provider`]: the [`provider::Provider`] trait the local host calls, the scripted provider
//!   ([`provider::mock`]) and the OpenAI-compatible one ([`provider::openai`], feature `openai`).
//!   Providers know nothing of the host;
//! - [`conformance`]: the RFC 0248 legs and judges, against any [`wop_sdk::host::Host`];
//! - [`pack`]: the folder a host that loads JavaScript packs (openwop-app) mounts;
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

#![warn(missing_docs)]

#[cfg(feature = "cli")]
pub mod cli;
pub mod conformance;
pub mod journal;
pub mod local;
pub mod pack;
pub mod provider;
pub mod testing;
