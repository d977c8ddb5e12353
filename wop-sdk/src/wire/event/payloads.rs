//! The payload of each event type this SDK writes and reads, as the v2 payload schemas say.
//!
//! A payload's `node_id` is a shared text ([`Arc<str>`]): a node execution makes its id once and
//! every event it writes shares it (no copy per event); read from a journal, each is made once
//! from the payload's text. Written as plain JSON strings.

use super::*;

/// `provider.usage`: one provider request that reported usage.
///
/// `provider` and `node_id` are shared texts: a host emits one per provider request and shares
/// the names its call already holds (no copy per request); read from a journal, each is made
/// once from the payload's text. Written as plain JSON strings.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ProviderUsage {
    /// The provider id.
    pub provider: Arc<str>,
    /// The model the provider stamped.
    pub model: String,
    /// Input tokens the provider reported.
    pub input_tokens: u64,
    /// Output tokens the provider reported.
    pub output_tokens: u64,
    /// `inputTokens + outputTokens`, when the provider said.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub total_tokens: Option<u64>,
    /// The node that made the call.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub node_id: Option<Arc<str>>,
}

/// `envelope.retry-attempted`: the host is about to send attempt `attempt` (2..=16).
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct RetryAttempted {
    /// The node whose call is retried.
    pub node_id: Arc<str>,
    /// The attempt about to be made (1-based; the first attempt emits nothing).
    pub attempt: u32,
    /// Why the prior attempt failed: one of `wop_sdk::rules::sets::ENVELOPE_FAILURE_REASONS` or a
    /// host extension `x-host-<host>-<reason>`.
    pub reason: String,
    /// Validator output from the failing attempt (never prompt or reply text).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub previous_error: Option<String>,
}

/// `envelope.retry-exhausted`: the call ran out of attempts.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct RetryExhausted {
    /// The node whose call failed.
    pub node_id: Arc<str>,
    /// Provider requests the call made (at least 1).
    pub total_attempts: u32,
    /// Why the last attempt failed (same values as [`RetryAttempted::reason`]).
    pub final_reason: String,
    /// Validator output from the last attempt.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub final_error: Option<String>,
}

/// `envelope.truncated`: a reply was cut before it was complete.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Truncated {
    /// The node whose call was cut.
    pub node_id: Arc<str>,
    /// The provider id.
    pub provider: String,
    /// The model.
    pub model: String,
    /// `max_tokens` (the request's token budget was reached), `length` (the model stopped on
    /// its own length limit), `stop_sequence` or `unknown`.
    pub stop_reason: String,
    /// Tokens produced before the cut, when reported.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub output_token_count: Option<u64>,
}

/// `envelope.refusal`: the provider refused (never the refusal text).
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Refusal {
    /// The node whose call was refused.
    pub node_id: Arc<str>,
    /// The provider id.
    pub provider: String,
    /// The model.
    pub model: String,
}

/// `envelope.nl-to-format-engaged`: the natural-language-to-JSON fallback was engaged.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct NlToFormatEngaged {
    /// The node whose call falls back.
    pub node_id: Arc<str>,
    /// The envelope the original attempts tried to emit.
    pub original_envelope_type: String,
    /// Secondary calls used to reformat (at least 1).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub fallback_calls: Option<u32>,
}

/// `node.started`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct NodeStarted {
    /// The node.
    pub node_id: Arc<str>,
    /// Its type id (borrowed from the node's spec when a host writes it).
    pub type_id: Cow<'static, str>,
    /// Zero-based retry counter of the node, when known.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub attempt: Option<u32>,
}

/// `node.completed`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct NodeCompleted {
    /// The node.
    pub node_id: Arc<str>,
    /// The output ports: a node whose output is a JSON object writes one port per key; any
    /// other output is the single port [`OUTPUT_PORT`].
    pub outputs: Map<String, Value>,
    /// How long the node ran, when measured.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub duration_ms: Option<u64>,
}

impl NodeCompleted {
    /// The ports of a node whose output is `output`.
    pub fn ports(output: Value) -> Map<String, Value> {
        match output {
            Value::Object(map) => map,
            other => {
                let mut m = Map::new();
                m.insert(OUTPUT_PORT.to_owned(), other);
                m
            }
        }
    }
}

/// The error of a `node.failed`: `{code, message, details?}`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct EventError {
    /// A registered code or a vendor code (kept as written, so an unknown code survives).
    pub code: String,
    /// A human sentence.
    pub message: String,
    /// Structured details.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub details: Option<Value>,
}

impl From<&ErrorEnvelope> for EventError {
    fn from(e: &ErrorEnvelope) -> Self {
        Self {
            code: e.error.as_str().to_owned(),
            message: e.message.clone(),
            details: e.details.clone(),
        }
    }
}

/// `node.failed`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct NodeFailed {
    /// The node.
    pub node_id: Arc<str>,
    /// Why it failed.
    pub error: EventError,
    /// Node attempts made, when known.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub attempts: Option<u32>,
}
