//! The error envelope `{ "error": "<code>", "message": "…", "details": {…} }` and its codes.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use std::fmt;

/// The org of this SDK's own error codes, in the vendor form `<org>.<code>` of the v2 registry.
pub const VENDOR_ORG: &str = "wop-sdk";

/// The error codes this SDK writes. Each is a code of the v2 registry
/// (`error-envelope.schema.json`) or, where the registry has none that means the same, this
/// SDK's own code in the registry's vendor form (`wop-sdk.<code>`). The first spellings
/// (`budget_exhausted`, …) are still read.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[non_exhaustive]
pub enum ErrorCode {
    /// A request field breaks its rule; `details.field` names the key. `validation_error`.
    #[serde(rename = "validation_error")]
    ValidationError,
    /// The node needs a host capability the host does not advertise. `capability_not_provided`.
    #[serde(rename = "capability_not_provided")]
    CapabilityNotProvided,
    /// A structured call ran out of attempts without a reply that meets the schema.
    /// `envelope_invalid`.
    #[serde(rename = "envelope_invalid")]
    EnvelopeInvalid,
    /// The provider refused; never retried. `envelope_refusal`.
    #[serde(rename = "envelope_refusal")]
    EnvelopeRefusal,
    /// Truncation retries ran out. `envelope_truncation_unrecoverable`.
    #[serde(rename = "envelope_truncation_unrecoverable")]
    EnvelopeTruncationUnrecoverable,
    /// A call budget or a runtime ceiling refused the call before dispatch.
    /// `wop-sdk.budget_exhausted` (read: `budget_exhausted`).
    #[serde(rename = "wop-sdk.budget_exhausted", alias = "budget_exhausted")]
    BudgetExhausted,
    /// An attempt identity was reused with a changed request. `idempotency_key_mismatch`.
    #[serde(rename = "idempotency_key_mismatch")]
    IdempotencyKeyMismatch,
    /// A replay fork found no recorded outcome for a call. `replay_source_missing`.
    #[serde(rename = "replay_source_missing")]
    ReplaySourceMissing,
    /// The provider could not be reached, or the dispatch outcome is unknown.
    /// `wop-sdk.upstream_unavailable` (read: `upstream_unavailable`).
    #[serde(
        rename = "wop-sdk.upstream_unavailable",
        alias = "upstream_unavailable"
    )]
    UpstreamUnavailable,
    /// The host broke the contract it advertised (for example `attempts` missing or malformed).
    /// `wop-sdk.protocol_error` (read: `protocol_error`).
    #[serde(rename = "wop-sdk.protocol_error", alias = "protocol_error")]
    ProtocolError,
    /// The node itself failed (its own error, not an AI call's). `wop-sdk.node_failed` (read:
    /// `node_failed`).
    #[serde(rename = "wop-sdk.node_failed", alias = "node_failed")]
    NodeFailed,
    /// The pack's native addon cannot be loaded on this host (missing, built for another
    /// platform, architecture, Node or bridge ABI, or a file that does not load in a test
    /// process), so every node of the pack fails at once, before any call; the host process never
    /// loads such a file. `wop-sdk.addon_unloadable`.
    #[serde(rename = "wop-sdk.addon_unloadable")]
    AddonUnloadable,
    /// The node did not end within its timeout (the node configuration's `timeoutMs`, else the
    /// host's default): the host dropped its execution, and whatever it awaited with it.
    /// `wop-sdk.node_timeout`.
    #[serde(rename = "wop-sdk.node_timeout")]
    NodeTimeout,
    /// The host gave up on the node before it ended (its run was cancelled, the node's abort
    /// signal fired): the execution was dropped. `wop-sdk.node_cancelled`.
    #[serde(rename = "wop-sdk.node_cancelled")]
    NodeCancelled,
}

impl ErrorCode {
    /// Every code, in declaration order.
    pub const ALL: [Self; 14] = [
        Self::ValidationError,
        Self::CapabilityNotProvided,
        Self::EnvelopeInvalid,
        Self::EnvelopeRefusal,
        Self::EnvelopeTruncationUnrecoverable,
        Self::BudgetExhausted,
        Self::IdempotencyKeyMismatch,
        Self::ReplaySourceMissing,
        Self::UpstreamUnavailable,
        Self::ProtocolError,
        Self::NodeFailed,
        Self::AddonUnloadable,
        Self::NodeTimeout,
        Self::NodeCancelled,
    ];

    /// The wire spelling, e.g. `validation_error` or `wop-sdk.budget_exhausted`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::ValidationError => "validation_error",
            Self::CapabilityNotProvided => "capability_not_provided",
            Self::EnvelopeInvalid => "envelope_invalid",
            Self::EnvelopeRefusal => "envelope_refusal",
            Self::EnvelopeTruncationUnrecoverable => "envelope_truncation_unrecoverable",
            Self::BudgetExhausted => "wop-sdk.budget_exhausted",
            Self::IdempotencyKeyMismatch => "idempotency_key_mismatch",
            Self::ReplaySourceMissing => "replay_source_missing",
            Self::UpstreamUnavailable => "wop-sdk.upstream_unavailable",
            Self::ProtocolError => "wop-sdk.protocol_error",
            Self::NodeFailed => "wop-sdk.node_failed",
            Self::AddonUnloadable => "wop-sdk.addon_unloadable",
            Self::NodeTimeout => "wop-sdk.node_timeout",
            Self::NodeCancelled => "wop-sdk.node_cancelled",
        }
    }

    /// The code a wire string names: the v2 spelling, or the first spelling this SDK wrote.
    pub fn parse(s: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|c| {
            let wire = c.as_str();
            wire == s || wire.strip_prefix("wop-sdk.") == Some(s)
        })
    }
}

impl fmt::Display for ErrorCode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The error envelope of SPEC.md: what a host answers and what `node.failed` carries.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ErrorEnvelope {
    /// The code.
    pub error: ErrorCode,
    /// A human sentence; never provider, billing, credential or policy diagnostics.
    pub message: String,
    /// Structured details, e.g. `{"field": "retry.maxAttempts"}`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub details: Option<Value>,
}

impl ErrorEnvelope {
    /// An envelope with no details.
    pub fn new(error: ErrorCode, message: impl Into<String>) -> Self {
        Self {
            error,
            message: message.into(),
            details: None,
        }
    }

    /// A `validation_error` naming `field`.
    pub fn validation(field: impl Into<String>, message: impl Into<String>) -> Self {
        Self::new(ErrorCode::ValidationError, message).with_detail("field", field.into())
    }

    /// Adds one key to `details`.
    #[must_use]
    pub fn with_detail(mut self, key: &str, value: impl Into<Value>) -> Self {
        let details = self
            .details
            .get_or_insert_with(|| Value::Object(Map::new()));
        if let Value::Object(map) = details {
            map.insert(key.to_owned(), value.into());
        }
        self
    }

    /// `details.field`, when present.
    pub fn field(&self) -> Option<&str> {
        self.details.as_ref()?.get("field")?.as_str()
    }
}

impl fmt::Display for ErrorEnvelope {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.error, self.message)?;
        if let Some(field) = self.field() {
            write!(f, " (field `{field}`)")?;
        }
        Ok(())
    }
}

impl std::error::Error for ErrorEnvelope {}

/// A wire value that breaks the contract: `validation_error` for what a pack sent,
/// `protocol_error` for what a host sent. Always names the field.
#[derive(Clone, Debug, PartialEq)]
pub struct WireError {
    /// `validation_error` or `protocol_error`.
    pub code: ErrorCode,
    /// The dotted path of the offending key, e.g. `retry.maxAttempts`.
    pub field: String,
    /// The rule that was broken.
    pub rule: String,
}

impl WireError {
    /// A `validation_error` naming the offending key and the rule it broke.
    pub fn validation(field: impl Into<String>, rule: impl Into<String>) -> Self {
        Self {
            code: ErrorCode::ValidationError,
            field: field.into(),
            rule: rule.into(),
        }
    }

    pub(crate) fn protocol(field: impl Into<String>, rule: impl Into<String>) -> Self {
        Self {
            code: ErrorCode::ProtocolError,
            field: field.into(),
            rule: rule.into(),
        }
    }

    /// The envelope a host answers with.
    pub fn to_envelope(&self) -> ErrorEnvelope {
        ErrorEnvelope::new(self.code, format!("`{}` {}", self.field, self.rule))
            .with_detail("field", self.field.clone())
    }
}

impl fmt::Display for WireError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: `{}` {}", self.code, self.field, self.rule)
    }
}

impl std::error::Error for WireError {}

impl From<WireError> for ErrorEnvelope {
    fn from(e: WireError) -> Self {
        e.to_envelope()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use wop_sdk_rules::{grammar, sets};

    /// Fails to compile when a variant is added without a place in [`ErrorCode::ALL`].
    fn position(code: ErrorCode) -> usize {
        match code {
            ErrorCode::ValidationError => 0,
            ErrorCode::CapabilityNotProvided => 1,
            ErrorCode::EnvelopeInvalid => 2,
            ErrorCode::EnvelopeRefusal => 3,
            ErrorCode::EnvelopeTruncationUnrecoverable => 4,
            ErrorCode::BudgetExhausted => 5,
            ErrorCode::IdempotencyKeyMismatch => 6,
            ErrorCode::ReplaySourceMissing => 7,
            ErrorCode::UpstreamUnavailable => 8,
            ErrorCode::ProtocolError => 9,
            ErrorCode::NodeFailed => 10,
            ErrorCode::AddonUnloadable => 11,
            ErrorCode::NodeTimeout => 12,
            ErrorCode::NodeCancelled => 13,
        }
    }

    #[test]
    fn every_code_is_registered_or_ours_in_the_vendor_form() {
        for (i, code) in ErrorCode::ALL.into_iter().enumerate() {
            assert_eq!(position(code), i);
            let wire = code.as_str();
            assert!(
                sets::is_registered_error_code(wire)
                    || (grammar::vendor_code_problem(wire).is_none()
                        && wire.starts_with(VENDOR_ORG)),
                "`{wire}` is neither registered nor `{VENDOR_ORG}.<code>`"
            );
            assert_eq!(serde_json::to_value(code).ok(), Some(Value::from(wire)));
            assert_eq!(ErrorCode::parse(wire), Some(code));
        }
    }

    #[test]
    fn first_spellings_are_still_read() {
        for (old, code) in [
            ("budget_exhausted", ErrorCode::BudgetExhausted),
            ("upstream_unavailable", ErrorCode::UpstreamUnavailable),
            ("protocol_error", ErrorCode::ProtocolError),
            ("node_failed", ErrorCode::NodeFailed),
        ] {
            assert_eq!(
                serde_json::from_value::<ErrorCode>(Value::from(old)).ok(),
                Some(code)
            );
            assert_eq!(ErrorCode::parse(old), Some(code));
        }
        assert_eq!(ErrorCode::parse("wop-sdk.validation_error"), None);
    }
}
