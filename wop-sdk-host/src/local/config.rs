//! The local host's settings and its builder. Every path to a setting goes through
//! [`LocalConfig::validated`], so a host never runs with a setting the builder would refuse.

use super::{Inner, LocalHost, Observer, Provider, ScriptedProvider};
use crate::journal::{Journal, MemoryJournal};
use std::fmt;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;
use wop_sdk::wire::RunEvent;

/// The local host's settings. Build with [`LocalHost::builder`].
#[derive(Clone, Debug)]
pub struct LocalConfig {
    /// Advertise and emit `attempts` (RFC 0248 §A).
    pub attempts: bool,
    /// Advertise and honour a per-call `retry` (RFC 0248 §B).
    pub retry_policy: bool,
    /// The ceiling on provider requests per call (1..=16).
    pub max_retry_attempts: u8,
    /// The truncation budget multiplier (1..=8).
    pub truncation_multiplier: u32,
    /// `maxTokens` when a request names none (≥ 1).
    pub default_max_tokens: u32,
    /// The provider's largest `maxTokens`: growth stops there (≥ 1).
    pub provider_max_tokens: u32,
    /// The natural-language-to-JSON fallback.
    pub nl_fallback: bool,
    /// Ask the provider for native structured output (else the schema goes in the prompt).
    pub native_structured_output: bool,
    /// Host-wide cap on generations in flight (≥ 1).
    pub max_concurrent_generations: usize,
    /// Per-run cap on total generations.
    pub max_generations_per_run: Option<u32>,
    /// How long to wait for a provider's answer before the dispatch counts as ambiguous.
    pub provider_timeout: Duration,
    /// The first delay after a transient provider error (doubled per error, with jitter).
    pub retry_backoff: Duration,
    /// The longest delay after a transient provider error, and the longest `Retry-After`
    /// honoured.
    pub max_retry_backoff: Duration,
    /// The largest reply accepted, in bytes (≥ 1).
    pub max_reply_bytes: usize,
    /// The deepest JSON nesting accepted in a reply (≥ 1).
    pub max_json_depth: usize,
    /// The model named when a request names none.
    pub default_model: String,
    /// Who owns runs started without an owner (charged when a call names no beneficiary).
    pub default_owner: String,
    /// How many finished runs keep their private diagnostics (the oldest are pruned first).
    pub diagnostics_retained_runs: usize,
}

impl Default for LocalConfig {
    fn default() -> Self {
        Self {
            attempts: true,
            retry_policy: true,
            max_retry_attempts: wop_sdk::caps::DEFAULT_CEILING,
            truncation_multiplier: 2,
            default_max_tokens: 1024,
            provider_max_tokens: 32_768,
            nl_fallback: false,
            native_structured_output: true,
            max_concurrent_generations: 8,
            max_generations_per_run: None,
            provider_timeout: crate::provider::DEFAULT_TIMEOUT,
            retry_backoff: Duration::from_millis(250),
            max_retry_backoff: Duration::from_secs(20),
            max_reply_bytes: crate::provider::DEFAULT_MAX_REPLY_BYTES,
            max_json_depth: 128,
            default_model: "mock-1".into(),
            default_owner: "local-user".into(),
            diagnostics_retained_runs: 1024,
        }
    }
}

impl LocalConfig {
    /// The settings with every number brought inside its range: the ceiling to 1..=16 (a ceiling
    /// of 0 would send the first request as the natural-language fallback), the multiplier to
    /// 1..=8 (the capability document's range), budgets, caps and limits to at least 1.
    #[must_use]
    pub fn validated(mut self) -> Self {
        self.max_retry_attempts = self
            .max_retry_attempts
            .clamp(wop_sdk::policy::MIN_ATTEMPTS, wop_sdk::policy::MAX_ATTEMPTS);
        self.truncation_multiplier = self.truncation_multiplier.clamp(1, 8);
        self.default_max_tokens = self.default_max_tokens.max(1);
        self.provider_max_tokens = self.provider_max_tokens.max(1);
        self.max_concurrent_generations = self.max_concurrent_generations.max(1);
        self.max_reply_bytes = self.max_reply_bytes.max(1);
        self.max_json_depth = self.max_json_depth.max(1);
        self.max_retry_backoff = self.max_retry_backoff.max(self.retry_backoff);
        self
    }
}

/// Builds a [`LocalHost`].
pub struct LocalHostBuilder {
    pub(super) config: LocalConfig,
    provider: Option<Arc<dyn Provider>>,
    scripts: Option<ScriptedProvider>,
    journal: Option<Arc<dyn Journal>>,
    observer: Option<Observer>,
}

impl fmt::Debug for LocalHostBuilder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("LocalHostBuilder")
            .field("config", &self.config)
            .finish_non_exhaustive()
    }
}

static HOSTS_BUILT: AtomicU64 = AtomicU64::new(0);

impl LocalHostBuilder {
    pub(super) fn new() -> Self {
        Self {
            config: LocalConfig::default(),
            provider: None,
            scripts: None,
            journal: None,
            observer: None,
        }
    }

    /// Both `callAccounting` flags on or off: `older_host()` advertises neither.
    #[must_use]
    pub fn call_accounting(mut self, attempts: bool, retry_policy: bool) -> Self {
        self.config.attempts = attempts;
        self.config.retry_policy = retry_policy;
        self
    }

    /// A host that advertises neither `callAccounting` flag (an older host).
    #[must_use]
    pub fn older_host(self) -> Self {
        self.call_accounting(false, false)
    }

    /// The ceiling on provider requests per call (clamped to 1..=16).
    #[must_use]
    pub fn max_retry_attempts(mut self, n: u8) -> Self {
        self.config.max_retry_attempts = n;
        self
    }

    /// The truncation multiplier (clamped to 1..=8).
    #[must_use]
    pub fn truncation_multiplier(mut self, k: u32) -> Self {
        self.config.truncation_multiplier = k;
        self
    }

    /// The provider's largest `maxTokens`.
    #[must_use]
    pub fn provider_max_tokens(mut self, n: u32) -> Self {
        self.config.provider_max_tokens = n;
        self
    }

    /// The natural-language-to-JSON fallback on or off.
    #[must_use]
    pub fn nl_fallback(mut self, on: bool) -> Self {
        self.config.nl_fallback = on;
        self
    }

    /// Host-wide cap on generations in flight.
    #[must_use]
    pub fn max_concurrent_generations(mut self, n: usize) -> Self {
        self.config.max_concurrent_generations = n;
        self
    }

    /// Per-run cap on total generations.
    #[must_use]
    pub fn max_generations_per_run(mut self, n: u32) -> Self {
        self.config.max_generations_per_run = Some(n);
        self
    }

    /// How long to wait for a provider before the dispatch counts as ambiguous.
    #[must_use]
    pub fn provider_timeout(mut self, d: Duration) -> Self {
        self.config.provider_timeout = d;
        self
    }

    /// Any other setting (validated with the rest when the host is built).
    #[must_use]
    pub fn config(mut self, f: impl FnOnce(&mut LocalConfig)) -> Self {
        f(&mut self.config);
        self
    }

    /// The provider (default: an empty [`ScriptedProvider`]). A [`ScriptedProvider`] also
    /// serves per-run scripts: a run's `script` option, or the `script` field of a node's input
    /// (the conformance fixture's contract).
    #[must_use]
    pub fn provider<P: Provider + 'static>(mut self, p: P) -> Self {
        self.scripts = (&p as &dyn std::any::Any)
            .downcast_ref::<ScriptedProvider>()
            .cloned();
        self.provider = Some(Arc::new(p));
        self
    }

    /// The scripted provider that serves per-run scripts, when the provider is a wrapper around
    /// one (a provider that is itself a [`ScriptedProvider`] serves them without this).
    #[must_use]
    pub fn scripts(mut self, scripts: ScriptedProvider) -> Self {
        self.scripts = Some(scripts);
        self
    }

    /// The journal (default: in memory; see [`LocalHostBuilder::sqlite_journal`] for the durable one).
    #[must_use]
    pub fn journal(mut self, j: Arc<dyn Journal>) -> Self {
        self.journal = Some(j);
        self
    }

    /// The SQLite journal at `path` (created when missing).
    #[cfg(feature = "sqlite")]
    pub fn sqlite_journal(
        self,
        path: impl AsRef<std::path::Path>,
    ) -> Result<Self, crate::journal::JournalError> {
        let j = crate::journal::SqliteJournal::open(path)?;
        Ok(self.journal(Arc::new(j)))
    }

    /// The SQLite journal of the project in the current directory: `.wop/journal.sqlite`.
    #[cfg(feature = "sqlite")]
    pub fn project_journal(self) -> Result<Self, crate::journal::JournalError> {
        self.sqlite_journal(std::path::Path::new(".wop").join("journal.sqlite"))
    }

    /// Receives every event as it happens.
    #[must_use]
    pub fn observer(mut self, f: impl Fn(&RunEvent) + Send + Sync + 'static) -> Self {
        self.observer = Some(Arc::new(f));
        self
    }

    /// The host.
    pub fn build(self) -> LocalHost {
        let seed = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| {
                u64::try_from(d.as_nanos() & u128::from(u64::MAX)).unwrap_or(0)
            })
            ^ u64::from(std::process::id())
            // Two hosts built in one process within the clock's resolution still differ.
            ^ HOSTS_BUILT.fetch_add(1, Ordering::SeqCst).rotate_right(16);
        let (provider, scripts) = match (self.provider, self.scripts) {
            (Some(p), scripts) => (p, scripts),
            (None, _) => {
                let mock = ScriptedProvider::default();
                (Arc::new(mock.clone()) as Arc<dyn Provider>, Some(mock))
            }
        };
        LocalHost {
            inner: Arc::new(Inner::new(
                self.config.validated(),
                provider,
                scripts,
                self.journal
                    .unwrap_or_else(|| Arc::new(MemoryJournal::new())),
                self.observer,
                seed,
            )),
        }
    }
}
