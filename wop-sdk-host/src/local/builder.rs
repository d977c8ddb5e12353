//! [`LocalHostBuilder`]: a local host from its settings, provider, journal and observer.

use super::config::LocalConfig;
use super::events::Observer;
use super::host::LocalHost;
use super::inner::Inner;
use crate::journal::{Journal, MemoryJournal};
use crate::provider::Provider;
use crate::provider::mock::ScriptedProvider;
use std::fmt;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;
use wop_sdk::wire::RunEvent;

impl LocalHost {
    /// A builder of a host playing [`HostProfile::DEFAULT`](super::HostProfile::DEFAULT)
    /// (openwop-app); [`HostProfile::builder`](super::HostProfile::builder) plays another.
    pub fn builder() -> LocalHostBuilder {
        LocalHostBuilder::with_config(LocalConfig::default())
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
    pub(super) fn with_config(config: LocalConfig) -> Self {
        Self {
            config,
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

    /// How long a node may run before the host drops it and fails it `wop-sdk.node_timeout`
    /// (default 5 minutes, [`LocalConfig::node_timeout`]).
    #[must_use]
    pub fn node_timeout(mut self, d: Duration) -> Self {
        self.config.node_timeout = d;
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

    /// The journal (default: in memory; see [`LocalHostBuilder::sqlite_journal`] and
    /// [`LocalHostBuilder::log_journal`] for the durable ones).
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

    /// The log journal at `path` (created when missing): one file of checksummed records, a
    /// durable call at the disk's `fdatasync` rate ([`LogJournal`](crate::journal::LogJournal)).
    pub fn log_journal(
        self,
        path: impl AsRef<std::path::Path>,
    ) -> Result<Self, crate::journal::JournalError> {
        let j = crate::journal::LogJournal::open(path)?;
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
