//! The embedded local host: the default for development, examples and tests.
//!
//! It behaves like a production OpenWOP host: the retry loop of SPEC.md (refusal never retried,
//! truncation retried with a grown budget unless `growMaxTokens: false`, schema violations
//! retried with a corrective note, the natural-language fallback inside the cap, transient
//! provider errors retried after a backoff), RFC 0248 accounting, a per-run event log, replay
//! forks, ceilings on generations, a billing ledger, and an attempt journal that makes
//! redelivery safe. Providers plug in behind [`Provider`]; the [`ScriptedProvider`] serves the
//! conformance script.
//!
//! # Defaults
//!
//! | setting | default |
//! |---|---|
//! | `callAccounting.attempts`, `.retryPolicy` | both advertised |
//! | ceiling (`maxRetryAttempts`) | 3 (1..=16) |
//! | truncation multiplier | 2 (1..=8) |
//! | default `maxTokens` | 1024 |
//! | provider maximum `maxTokens` | 32 768 |
//! | natural-language fallback | off |
//! | concurrent generations (host-wide) | 8 |
//! | generations per run | unlimited |
//! | provider answer timeout | 120 s (then the dispatch is ambiguous) |
//! | backoff after a transient provider error | 250 ms doubled per error, at most 20 s, or the server's `Retry-After` |
//! | largest reply accepted | 8 MiB; JSON nesting depth 128 |
//! | private diagnostics kept | those of the last 1024 finished runs |
//!
//! Settings out of range are brought inside it when the host is built
//! ([`LocalConfig::validated`]).
//!
//! # A call's path
//!
//! [`wop_sdk::NodeCtx::call_ai`] reserves the call's worst case against the node's budget
//! (`node/call.rs`) and hands the typed request to [`wop_sdk::host::Host::call_ai`] (`local/host.rs`). The
//! attempt-identity protocol (`local/identity.rs`) persists the call's identity in the journal,
//! or replays, refuses or reattaches; a fresh call is dispatched (`local/call.rs`), driving the
//! retry state machine (`local/retry/`) through admission (`local/runs.rs`), the provider
//! behind the reply guard (`local/guard.rs`) and schema validation (`local/schemas.rs`), with
//! its events built typed (`local/events.rs`, [`wop_sdk::wire::Event`]) and handed to the journal
//! with the outcome in one write. The outcome is written to the journal once as text (the bytes
//! a replay reproduces, [`wop_sdk::wire::CallAiResult::to_text`]) and returned typed; the runtime
//! checks it and makes the typed [`wop_sdk::Completion`]. JSON is made only for the journal. The
//! call runs in a `wop.call` tracing span.
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
mod nodes;
mod retry;
mod runs;
mod schemas;
mod serve;
mod typed;

pub use crate::provider::mock::{Script, ScriptedProvider, Step};
pub use crate::provider::{Provider, ProviderError, ProviderReply, ProviderRequest};
pub use config::{LocalConfig, LocalHostBuilder};
pub use diagnostics::Diagnostic;
pub use events::Observer;
pub use nodes::RunOptions;
pub use typed::RunError;

use crate::journal::{ChargeRow, Journal, JournalError};
use std::collections::HashMap;
use std::fmt;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use wop_sdk::host::RunId;

pub(crate) fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

/// The parts of the host, each owning its own state.
pub(crate) struct Inner {
    pub(crate) config: LocalConfig,
    pub(crate) provider: Arc<dyn Provider>,
    /// The scripted provider's handle, when the provider is one: it serves per-run scripts.
    pub(crate) scripts: Option<ScriptedProvider>,
    pub(crate) journal: Arc<dyn Journal>,
    pub(crate) live: events::Live,
    pub(crate) runs: runs::Runs,
    pub(crate) diagnostics: diagnostics::Diagnostics,
    pub(crate) identities: identity::Identities,
    pub(crate) schemas: schemas::Schemas,
    pub(crate) guard: guard::ReplyGuard,
    pub(crate) seed: u64,
}

impl Inner {
    pub(crate) fn new(
        config: LocalConfig,
        provider: Arc<dyn Provider>,
        scripts: Option<ScriptedProvider>,
        journal: Arc<dyn Journal>,
        observer: Option<Observer>,
        seed: u64,
    ) -> Self {
        Self {
            runs: runs::Runs::new(
                config.max_concurrent_generations,
                config.max_generations_per_run,
                config.default_owner.clone(),
            ),
            diagnostics: diagnostics::Diagnostics::new(config.diagnostics_retained_runs),
            identities: identity::Identities::new(seed),
            schemas: schemas::Schemas::default(),
            guard: guard::ReplyGuard {
                timeout: config.provider_timeout,
                max_bytes: config.max_reply_bytes,
                max_depth: config.max_json_depth,
            },
            live: events::Live(observer),
            config,
            provider,
            scripts,
            journal,
            seed,
        }
    }
}

/// The embedded local host. Cheap to clone.
///
/// Run a node with [`LocalHost::run_typed`] to get its typed output or a [`RunError`] saying why
/// there is none, or with [`LocalHost::run`] (JSON in, the whole [`wop_sdk::node::NodeOutcome`]
/// out: the output or public error, the call reports, the budget).
#[derive(Clone)]
pub struct LocalHost {
    pub(crate) inner: Arc<Inner>,
}

impl fmt::Debug for LocalHost {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("LocalHost")
            .field("config", &self.inner.config)
            .finish_non_exhaustive()
    }
}

impl LocalHost {
    /// A builder with the defaults of [`LocalConfig`].
    pub fn builder() -> LocalHostBuilder {
        LocalHostBuilder::new()
    }

    /// The settings.
    pub fn config(&self) -> &LocalConfig {
        &self.inner.config
    }

    /// The journal.
    pub fn journal(&self) -> &Arc<dyn Journal> {
        &self.inner.journal
    }

    /// The billing ledger: every charge, or a run's.
    pub async fn ledger(&self, run: Option<&RunId>) -> Result<Vec<ChargeRow>, JournalError> {
        self.inner.journal.charges(run).await
    }

    /// Charges summed per beneficiary: (generations, output tokens).
    pub async fn charges_by_beneficiary(
        &self,
        run: Option<&RunId>,
    ) -> Result<HashMap<String, (u32, u64)>, JournalError> {
        let mut out: HashMap<String, (u32, u64)> = HashMap::new();
        for row in self.ledger(run).await? {
            for b in &row.charge.beneficiaries {
                let e = out.entry(b.clone()).or_default();
                e.0 += row.charge.generations;
                e.1 += row.charge.output_tokens;
            }
        }
        Ok(out)
    }

    /// How many runs the host keeps a record of in memory: those with a node executing, and those
    /// used through [`wop_sdk::host::Host::call_ai`] outside a node. A finished (or aborted) run leaves
    /// nothing behind here.
    pub fn active_runs(&self) -> usize {
        self.inner.runs.len()
    }

    /// How many calls this host is dispatching now. A call whose caller gave up leaves nothing
    /// behind here.
    pub fn calls_in_flight(&self) -> usize {
        self.inner.identities.in_flight()
    }

    /// The host-private diagnostics: the cause of every failure kept (see the retention in the
    /// module docs). Never shown to pack code.
    pub fn diagnostics(&self) -> Vec<Diagnostic> {
        self.inner.diagnostics.all()
    }

    /// The host-private diagnostics of one run.
    pub fn diagnostics_of(&self, run: &RunId) -> Vec<Diagnostic> {
        self.inner.diagnostics.of_run(run)
    }
}
