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
//! The modules follow the design, from the wire inwards: [`wire`], [`policy`], [`caps`], [`ai`],
//! [`node`], [`budget`], [`host`].

pub mod ai;
pub mod budget;
pub mod caps;
#[cfg(feature = "cli")]
pub mod cli;
pub mod host;
#[cfg(feature = "local")]
pub mod journal;
#[cfg(feature = "local")]
pub mod local;
pub mod node;
pub mod policy;
pub mod wire;

pub use ai::{AiFailure, AiRequest, AttemptId, Completion, InvalidOutput, Output, RetryOf, Text};
pub use budget::{CallPlan, Estimate, PlannedCall};
pub use caps::{AttemptsProof, Capabilities, Capability, RetryPolicyProof};
pub use host::{AttemptKey, Host, RunId};
pub use node::{Category, DynNode, Node, NodeCtx, NodeError, NodeSpec, Role};
pub use policy::{RetryPolicy, RetryReason};
