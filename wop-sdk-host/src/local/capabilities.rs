//! The capability document the local host advertises, from its settings: written once when the
//! host is built (the settings do not change after), shared with every node execution.

use super::config::LocalConfig;
use wop_sdk::wire::{CallAccounting, CapabilityDocument, EnvelopeCompletion, Reliability, kind};

/// The document a host with `config` and a provider named `provider` advertises (its
/// `providers` setting, else the provider's name).
pub(super) fn document(c: &LocalConfig, provider: &str) -> CapabilityDocument {
    let mut events = vec![
        kind::RETRY_ATTEMPTED.to_owned(),
        kind::RETRY_EXHAUSTED.to_owned(),
        kind::TRUNCATED.to_owned(),
        kind::REFUSAL.to_owned(),
    ];
    if c.nl_fallback {
        events.push(kind::NL_TO_FORMAT_ENGAGED.to_owned());
    }
    CapabilityDocument {
        ai_providers: true,
        providers: if c.providers.is_empty() {
            vec![provider.to_owned()]
        } else {
            c.providers.clone()
        },
        call_accounting: (c.attempts || c.retry_policy).then_some(CallAccounting {
            attempts: c.attempts,
            retry_policy: c.retry_policy,
        }),
        reliability: Some(Reliability {
            max_retry_attempts: c.max_retry_attempts,
            events,
            completion: EnvelopeCompletion {
                distinguishes_truncation: true,
                truncation_budget_multiplier: f64::from(c.truncation_multiplier),
            },
        }),
        provider_usage: true,
        replay_modes: vec!["replay".to_owned()],
        schema_rounds: Some(u32::from(c.max_retry_attempts)),
        ..CapabilityDocument::default()
    }
}
