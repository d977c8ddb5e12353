//! The local host's settings (its builder is in `builder.rs`). Every path to a setting goes through
//! [`LocalConfig::validated`], so a host never runs with a setting the builder would refuse.

use std::time::Duration;

/// The local host's settings. Build with [`LocalHost::builder`](crate::local::LocalHost::builder).
#[derive(Clone, Debug, PartialEq)]
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
    /// The fallback is one more request after the ceiling (openwop-app), not the last request
    /// within it (RFC 0248 §B.1).
    pub fallback_after_ceiling: bool,
    /// The fallback is engaged only when the last reply was prose: it does not start with `{`,
    /// `[` or a code fence (openwop-app).
    pub fallback_for_prose_only: bool,
    /// A structured reply's JSON is also read out of a code fence, or from the first balanced
    /// `{…}`/`[…]` in prose (openwop-app's lenient parse).
    pub lenient_json: bool,
    /// The schema check of a structured reply is openwop-app's: an object holding every
    /// `required` key of the schema's top level, no more (else the whole JSON Schema).
    pub required_keys_only: bool,
    /// How many times an HTTP 429 answer is resent below the retry loop before it counts as an
    /// attempt (openwop-app: 2, so 3 requests; each after the server's `Retry-After`, else 1 s,
    /// 2 s, … up to `max_retry_backoff`). A resent request is not an attempt and is not charged.
    pub rate_limit_resends: u8,
    /// The providers advertised in `aiProviders.providers` (empty: the provider's own name).
    pub providers: Vec<String>,
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
    /// How long a node may run: past it, the host drops the node's execution (and every future
    /// it awaited) and the node fails `wop-sdk.node_timeout`, as the Node bridge does at the
    /// node configuration's `timeoutMs` (default [`DEFAULT_NODE_TIMEOUT`], the pack's default
    /// there too).
    pub node_timeout: Duration,
}

/// The node timeout of a host that sets none: 5 minutes, the pack folder's default
/// `timeoutMs` (`wop_sdk_host::pack::DEFAULT_TIMEOUT_MS`).
pub const DEFAULT_NODE_TIMEOUT: Duration = Duration::from_secs(300);

/// The settings of the default profile ([`HostProfile::DEFAULT`](super::HostProfile::DEFAULT),
/// openwop-app).
impl Default for LocalConfig {
    fn default() -> Self {
        super::HostProfile::DEFAULT.config()
    }
}

impl LocalConfig {
    /// The settings of an RFC 0248 host ([`HostProfile::Rfc0248`](super::HostProfile::Rfc0248)).
    pub fn rfc0248() -> Self {
        Self {
            attempts: true,
            retry_policy: true,
            max_retry_attempts: wop_sdk::caps::DEFAULT_CEILING,
            truncation_multiplier: 2,
            default_max_tokens: 1024,
            provider_max_tokens: 32_768,
            nl_fallback: false,
            fallback_after_ceiling: false,
            fallback_for_prose_only: false,
            lenient_json: false,
            required_keys_only: false,
            rate_limit_resends: 0,
            providers: Vec::new(),
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
            node_timeout: DEFAULT_NODE_TIMEOUT,
        }
    }

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
        self.node_timeout = self.node_timeout.max(Duration::from_millis(1));
        self
    }
}
