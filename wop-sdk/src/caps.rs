//! The negotiated host capabilities, read once per run from the capability document.
//!
//! Anything gated on a capability needs a proof value that only the runtime's negotiation with
//! the host a node runs on can produce ([`RunCapabilities`], from `ctx.capabilities()`). A pack
//! cannot make one up: [`Capabilities::negotiate`] reads any document (for estimates and tools)
//! but yields no proof, so reading `attempts` from a host that does not advertise them, or with
//! a document the pack wrote itself, does not compile.
//!
use crate::wire::CapabilityDocument;
use std::sync::Arc;

/// Proof that the host advertises `aiProviders.callAccounting.attempts: true`.
///
/// No public constructor: only negotiation makes one.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct AttemptsProof {
    _negotiated: (),
}

/// Proof that the host advertises `aiProviders.callAccounting.retryPolicy: true`.
///
/// No public constructor: only negotiation makes one.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RetryPolicyProof {
    _negotiated: (),
}

/// A host capability a node can require (`#[wop_node(requires(...))]`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Capability {
    /// `aiProviders`.
    AiProviders,
    /// `aiProviders.callAccounting.attempts`.
    Attempts,
    /// `aiProviders.callAccounting.retryPolicy`.
    RetryPolicy,
    /// `providerUsage`.
    ProviderUsage,
    /// `replay.modes` containing `replay`.
    Replay,
}

impl Capability {
    /// How the capability is named in errors and docs.
    pub fn name(self) -> &'static str {
        match self {
            Self::AiProviders => "aiProviders",
            Self::Attempts => "aiProviders.callAccounting.attempts",
            Self::RetryPolicy => "aiProviders.callAccounting.retryPolicy",
            Self::ProviderUsage => "providerUsage",
            Self::Replay => "replay.modes[replay]",
        }
    }
}

/// The host default ceiling when a document does not advertise `envelopes.reliability`
/// ([`wop_sdk_rules::retry::DEFAULT_CEILING`], which `#[wop_node]` checks `max_calls` against).
pub const DEFAULT_CEILING: u8 = wop_sdk_rules::retry::DEFAULT_CEILING;
/// The truncation multiplier when a document does not advertise one.
pub const DEFAULT_TRUNCATION_MULTIPLIER: u32 = 2;

/// The document a runtime budgets with, from the one a host advertises.
///
/// On a host without `aiProviders.callAccounting` that advertises the natural-language fallback
/// (`envelope.nlToFormat.engaged`, or the spec's `envelope.nl-to-format-engaged`), the fallback
/// is one more provider request after the ceiling (openwop-app: 3 requests, then the fallback),
/// so the ceiling to budget with is `maxRetryAttempts` +
/// [`wop_sdk_rules::retry::FALLBACK_AFTER_CEILING`]. A host with `callAccounting` counts the
/// fallback inside its ceiling (RFC 0248 §B.1), so its document is returned unchanged. The Node
/// bridge and the local host both hand the runtime this document.
pub fn charged_document(mut document: CapabilityDocument) -> CapabilityDocument {
    if document.call_accounting.is_none()
        && let Some(rel) = &mut document.reliability
        && rel.events.iter().any(|e| {
            let e = e.to_ascii_lowercase();
            e.contains("nltoformat") || e.contains("nl-to-format")
        })
    {
        rel.max_retry_attempts = rel
            .max_retry_attempts
            .saturating_add(wop_sdk_rules::retry::FALLBACK_AFTER_CEILING);
    }
    document
}

/// What a capability document advertises, read for estimates and tools.
///
/// It carries no proof: the proofs come only from [`RunCapabilities`], which the runtime
/// negotiates with the host a node runs on.
#[derive(Clone, Debug)]
pub struct Capabilities {
    document: Arc<CapabilityDocument>,
}

impl Capabilities {
    /// Reads a (v1 or v2) capability document. It yields no proof (a document can be written
    /// by anyone); a node's proofs are in `ctx.capabilities()`.
    pub fn negotiate(document: CapabilityDocument) -> Self {
        Self {
            document: Arc::new(document),
        }
    }

    /// The plan of a call on this host: its ceiling and truncation multiplier, the call's policy
    /// only when the host advertises `retryPolicy`, and the provider's largest budget when known.
    pub fn attempt_plan(
        &self,
        structured: bool,
        policy: crate::policy::RetryPolicy,
        max_tokens: u32,
        provider_max: Option<u32>,
    ) -> crate::budget::AttemptPlan {
        let honoured = self.has(Capability::RetryPolicy).then_some(policy);
        crate::budget::AttemptPlan::new(
            structured,
            self.max_retry_attempts(),
            honoured,
            max_tokens,
            self.truncation_multiplier(),
            provider_max,
        )
    }

    /// The host's ceiling on provider requests per call (`maxRetryAttempts`, default 3).
    pub fn max_retry_attempts(&self) -> u8 {
        self.document
            .reliability
            .as_ref()
            .map_or(DEFAULT_CEILING, |r| r.max_retry_attempts)
    }

    /// The truncation budget multiplier as advertised (a number in 1..=8, default 2).
    pub fn truncation_budget_multiplier(&self) -> f64 {
        self.document
            .reliability
            .as_ref()
            .map_or(f64::from(DEFAULT_TRUNCATION_MULTIPLIER), |r| {
                r.completion.truncation_budget_multiplier
            })
    }

    /// The truncation budget multiplier rounded up to a whole factor (default 2): an upper bound
    /// for worst-case estimates (`1.5` counts as 2).
    pub fn truncation_multiplier(&self) -> u32 {
        let m = self.truncation_budget_multiplier().ceil();
        // The document reader keeps the multiplier in 1..=8.
        (1..=8u32).find(|n| f64::from(*n) >= m).unwrap_or(8)
    }

    /// Whether the host emits `provider.usage`.
    pub fn provider_usage(&self) -> bool {
        self.document.provider_usage
    }

    /// The replay modes the host offers.
    pub fn replay_modes(&self) -> &[String] {
        &self.document.replay_modes
    }

    /// The providers the host offers.
    pub fn providers(&self) -> &[String] {
        &self.document.providers
    }

    /// The document negotiated from.
    pub fn document(&self) -> &CapabilityDocument {
        &self.document
    }

    /// Whether the host offers `capability`.
    pub fn has(&self, capability: Capability) -> bool {
        match capability {
            Capability::AiProviders => self.document.ai_providers,
            Capability::Attempts => self.call_accounting().attempts,
            Capability::RetryPolicy => self.call_accounting().retry_policy,
            Capability::ProviderUsage => self.document.provider_usage,
            Capability::Replay => self.document.replay_modes.iter().any(|m| m == "replay"),
        }
    }

    /// How a host without `aiProviders.callAccounting` charges a node, from this document: the
    /// document as it is when it advertises no `callAccounting` (its ceiling already says what it
    /// may send), else the same host without it, as openwop-app's public snapshot is: no
    /// `attempts` (each call charged its worst case), no `retry` honoured, and the
    /// natural-language fallback after the ceiling
    /// ([`wop_sdk_rules::retry::FALLBACK_AFTER_CEILING`] more requests per structured call).
    pub fn without_call_accounting(&self) -> Self {
        if self.document.call_accounting.is_none() {
            return self.clone();
        }
        let mut document = (*self.document).clone();
        document.call_accounting = None;
        let charged = self
            .max_retry_attempts()
            .saturating_add(wop_sdk_rules::retry::FALLBACK_AFTER_CEILING);
        match &mut document.reliability {
            Some(r) => r.max_retry_attempts = charged,
            None => {
                document.reliability = Some(crate::wire::Reliability {
                    max_retry_attempts: charged,
                    events: Vec::new(),
                    completion: crate::wire::EnvelopeCompletion {
                        distinguishes_truncation: false,
                        truncation_budget_multiplier: f64::from(DEFAULT_TRUNCATION_MULTIPLIER),
                    },
                });
            }
        }
        Self {
            document: Arc::new(document),
        }
    }

    fn call_accounting(&self) -> crate::wire::CallAccounting {
        self.document.call_accounting.unwrap_or_default()
    }
}

/// What the runtime negotiated with the host a node runs on: the document's capabilities (every
/// [`Capabilities`] method, through `Deref`) and the proofs for gated features.
///
/// No public constructor: the runner makes one per node execution from the host's own
/// capability document, and a node reads it with `ctx.capabilities()`.
#[derive(Clone, Debug)]
pub struct RunCapabilities {
    caps: Capabilities,
    attempts: Option<AttemptsProof>,
    retry_policy: Option<RetryPolicyProof>,
}

impl RunCapabilities {
    /// Negotiates with `host`: the only way to obtain the proofs.
    pub(crate) fn with_host(host: &dyn crate::host::Host) -> Self {
        let document = host.capability_document();
        let ca = document.call_accounting.unwrap_or_default();
        Self {
            attempts: ca.attempts.then_some(AttemptsProof { _negotiated: () }),
            retry_policy: ca
                .retry_policy
                .then_some(RetryPolicyProof { _negotiated: () }),
            caps: Capabilities { document },
        }
    }

    /// The proof for `attempts`, when the host advertises it.
    pub fn attempts(&self) -> Option<AttemptsProof> {
        self.attempts
    }

    /// The proof for a per-call `retry`, when the host advertises it.
    pub fn retry_policy(&self) -> Option<RetryPolicyProof> {
        self.retry_policy
    }
}

impl std::ops::Deref for RunCapabilities {
    type Target = Capabilities;

    fn deref(&self) -> &Capabilities {
        &self.caps
    }
}
