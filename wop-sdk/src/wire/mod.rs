//! Serde types for exactly the JSON of the wire contract: the `ctx.callAI` request and result,
//! RFC 0248's `attempts` and `retry`, the capability document, run events and the error envelope.
//!
//! Parsing goes through `from_json` functions that check every rule and name the exact field:
//! what a pack sent breaks a rule as `validation_error`, what a host sent as `protocol_error`.
//! v2 spellings are written; v1 spellings are accepted on input.

#[doc(hidden)]
pub mod canonical;
mod caps;
mod error;
mod event;
mod read;
mod reason;
mod request;
mod result;

pub use canonical::{canonical_json, digest};
pub use caps::{
    CallAccounting, CapabilityDocument, EnvelopeCompletion, FamilyRecord, PROTOCOL_VERSION,
    Reliability, reliability_event_name,
};
pub use error::{ErrorCode, ErrorEnvelope, VENDOR_ORG, WireError};
pub use event::{
    EVENT_SCHEMA_VERSION, Event, EventError, NlToFormatEngaged, NodeCompleted, NodeFailed,
    NodeStarted, OUTPUT_PORT, PROVIDER_FAILURE_REASON, ProviderUsage, Refusal, RetryAttempted,
    RetryExhausted, RunEvent, Truncated, event_id, kind, normalize_type, rfc3339,
};
pub use reason::RetryReason;
pub use request::{CallAiRequest, Message, Retry, Role};
pub use result::{
    Attempts, CallAiResult, FinishReason, SemanticStatus, StructuredOutputMode, Usage,
};
