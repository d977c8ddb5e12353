//! The error envelope `{ "error": "<code>", "message": "…", "details": {…} }` and its codes.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use std::fmt;

/// The error codes of the wire contract (SPEC.md §Errors), plus `protocol_error` for a host that
/// breaks the contract it advertised.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum ErrorCode {
    /// A request field breaks its rule; `details.field` names the key.
    ValidationError,
    /// The node needs a host capability the host does not advertise.
    CapabilityNotProvided,
    /// A structured call ran out of attempts without a reply that meets the schema.
    EnvelopeInvalid,
    /// The provider refused; never retried.
    EnvelopeRefusal,
    /// Truncation retries ran out.
    EnvelopeTruncationUnrecoverable,
    /// A call budget or a runtime ceiling refused the call before dispatch.
    BudgetExhausted,
    /// An attempt identity was reused with a changed request.
    IdempotencyKeyMismatch,
    /// A replay fork found no recorded outcome for a call.
    ReplaySourceMissing,
    /// The provider could not be reached, or the dispatch outcome is unknown.
    UpstreamUnavailable,
    /// The host broke the contract it advertised (for example `attempts` missing or malformed).
    ProtocolError,
    /// The node itself failed (its own error, not an AI call's).
    NodeFailed,
}

impl ErrorCode {
    /// The wire spelling, e.g. `validation_error`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::ValidationError => "validation_error",
            Self::CapabilityNotProvided => "capability_not_provided",
            Self::EnvelopeInvalid => "envelope_invalid",
            Self::EnvelopeRefusal => "envelope_refusal",
            Self::EnvelopeTruncationUnrecoverable => "envelope_truncation_unrecoverable",
            Self::BudgetExhausted => "budget_exhausted",
            Self::IdempotencyKeyMismatch => "idempotency_key_mismatch",
            Self::ReplaySourceMissing => "replay_source_missing",
            Self::UpstreamUnavailable => "upstream_unavailable",
            Self::ProtocolError => "protocol_error",
            Self::NodeFailed => "node_failed",
        }
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
    pub(crate) fn validation(field: impl Into<String>, rule: impl Into<String>) -> Self {
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
