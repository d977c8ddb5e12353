//! Which kind of host the bridge runs on, and the document the runtime negotiates with:
//! [`OPENWOP_APP_SNAPSHOT`] (assumed when the environment names none), [`HostKind`] and
//! [`host_document`].

use wop_sdk::wire::CapabilityDocument;

/// The capability document assumed when the environment names none: the public openwop-app
/// snapshot (`routes/discovery.ts`): AI providers, the RFC 0032 reliability loop with a ceiling
/// of 3 requests, truncation doubling and the natural-language fallback, and no
/// `aiProviders.callAccounting`.
pub const OPENWOP_APP_SNAPSHOT: &str = r#"{
  "aiProviders": {"providers": ["mock"]},
  "envelopes": {"reliability": {
    "maxRetryAttempts": 3,
    "events": ["envelope.retry.attempted", "envelope.retry.exhausted", "envelope.refusal",
               "envelope.truncated", "envelope.recovery.applied", "envelope.nlToFormat.engaged"],
    "completion": {"distinguishesTruncation": true, "truncationBudgetMultiplier": 2}}},
  "providerUsage": {}
}"#;

/// [`OPENWOP_APP_SNAPSHOT`] as a document: what the bridge assumes when the environment names
/// none.
pub(crate) fn snapshot_document() -> Result<CapabilityDocument, wop_sdk::wire::WireError> {
    CapabilityDocument::from_json(
        &serde_json::from_str(OPENWOP_APP_SNAPSHOT).unwrap_or(serde_json::Value::Null),
    )
}

/// Which kind of host the bridge runs on (see the crate docs for what differs).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum HostKind {
    /// The host advertises `aiProviders.callAccounting` (RFC 0248): it reports `attempts`, makes
    /// the attempt ids and checks lineage.
    Accounting,
    /// The host advertises no `callAccounting`: the bridge makes local attempt ids, checks
    /// lineage itself and never sends `retry`.
    Plain,
}

impl HostKind {
    /// The kind a capability document advertises.
    pub fn of(document: &CapabilityDocument) -> Self {
        if document.call_accounting.is_some() {
            Self::Accounting
        } else {
            Self::Plain
        }
    }
}

/// The document the runtime negotiates with, from the host's own:
/// [`wop_sdk::caps::charged_document`] (on a host without `callAccounting` that advertises the
/// natural-language fallback, the ceiling the runtime budgets with is `maxRetryAttempts + 1`).
pub fn host_document(document: CapabilityDocument) -> CapabilityDocument {
    wop_sdk::caps::charged_document(document)
}
