//! The embedded local host: the default for development, examples and tests.
//!
//! It behaves like the production OpenWOP host a pack ships to ([`HostProfile`]): the retry loop
//! of SPEC.md (refusal never retried, truncation retried with a grown budget unless
//! `growMaxTokens: false`, schema violations retried with a corrective note, the
//! natural-language fallback, transient provider errors retried after a backoff), RFC 0248
//! accounting where the host advertises it, a per-run event log, replay
//! forks, ceilings on generations, a billing ledger, and an attempt journal that makes
//! redelivery safe. Providers plug in behind [`Provider`]; the [`ScriptedProvider`] serves the
//! conformance script.
//!
//! # Defaults
//!
//! [`LocalHost::builder`] plays openwop-app as its public snapshot is, [`LocalHost::rfc0248`] an
//! RFC 0248 host ([`HostProfile`] says what differs and why openwop-app is the default;
//! [`on_every_host`] runs a test on each). The settings the two share:
//!
//! | setting | default |
//! |---|---|
//! | ceiling (`maxRetryAttempts`) | 3 (1..=16) |
//! | truncation multiplier | 2 (1..=8) |
//! | concurrent generations (host-wide) | 8 |
//! | generations per run | unlimited |
//! | provider answer timeout | 120 s (then the dispatch is ambiguous) |
//! | backoff after a transient provider error | 250 ms doubled per error, at most 20 s, or the server's `Retry-After` |
//! | largest reply accepted | 8 MiB; JSON nesting depth 128 |
//! | private diagnostics kept | those of the last 1024 finished runs |
//! | node timeout | 5 min, then the node is dropped and fails `wop-sdk.node_timeout` (the bridge: the node configuration's `timeoutMs`, the same default) |
//!
//! And those that differ:
//!
//! | setting | openwop-app | RFC 0248 |
//! |---|---|---|
//! | `callAccounting.attempts`, `.retryPolicy` | neither | both |
//! | `aiProviders.providers` | [`OPENWOP_APP_PROVIDERS`] | the provider's name |
//! | structured output | in the prompt | native |
//! | natural-language fallback | on, after the ceiling, for prose only | off (inside the ceiling when on) |
//! | a reply's JSON | also out of a code fence or prose; `required` keys checked | the whole reply; the whole schema checked |
//! | HTTP 429 | resent twice below the loop | an attempt |
//! | default `maxTokens`; the provider's largest | 4096; 64 000 | 1024; 32 768 |
//!
//! Settings out of range are brought inside it when the host is built
//! ([`LocalConfig::validated`]).
//!
//! # A call's path
//!
//! In the crate docs ([`crate`]): twelve files, from `NodeCtx::call_ai` to the journal and back.
//!
//! A streamed call ([`wop_sdk::NodeCtx::call_ai_stream`], [`wop_sdk::host::Host::call_ai_stream`])
//! takes the same path. Each provider request goes through [`Provider::generate_stream`]; its
//! chunks are written to the call's sink as fragments and recorded as `output.chunk` events
//! (`x-attempt` tells a discarded attempt's chunks apart; a closing `isLast: true` chunk ends the
//! call, with `x-failed: true` when it failed), and a further request of the retry loop writes a
//! restart marker first. The journal records the terminal outcome only: a redelivered or replayed
//! streamed call gets the replay marker and the recorded result, never fragments and never a new
//! generation.
//!
//! # Cancellation
//!
//! Dropping a call's future releases everything it held: the node's reservation (the call is
//! charged its worst case and reported `cancelled`), the host's in-flight entry, the ceiling
//! slot. A dispatch given up mid-request has no known outcome: the host records its terminal
//! ambiguous failure as it is dropped (on the runtime, releasing its lease), so re-entering it,
//! here or on another host sharing the journal, replays that failure at once: never charged,
//! never repeated. Only a host that dies mid-call leaves its lease to expire. Dropping a whole run
//! (an aborted task) releases the run's record.

mod builder;
mod call;
mod capabilities;
mod config;
mod diagnostics;
mod events;
#[cfg(feature = "openai")]
mod fit;
mod guard;
mod host;
mod identity;
mod inflight;
mod inner;
mod lenient;
mod lock;
mod nodes;
mod profile;
mod record;
mod retry;
mod runs;
mod schemas;
mod serve;
mod typed;

pub use crate::provider::mock::{Script, ScriptedProvider, Step};
pub use crate::provider::{Provider, ProviderError, ProviderReply, ProviderRequest};
pub use builder::LocalHostBuilder;
pub use config::{DEFAULT_NODE_TIMEOUT, LocalConfig};
pub use diagnostics::Diagnostic;
pub use events::{Observer, PROVIDER_REQUEST};
pub use host::LocalHost;
pub use nodes::RunOptions;
pub use profile::{HostProfile, OPENWOP_APP_PROVIDERS, on_every_host};
pub use record::RECORD_DIR_VAR;
pub use typed::RunError;
