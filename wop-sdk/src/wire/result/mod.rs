//! The `ctx.callAI` result, its `usage` and RFC 0248's `attempts`.
//!
//! One rule set: [`CallAiResult::check`] (`check.rs`) holds every rule a result can break once
//! it has a shape; [`CallAiResult::from_json`] (`parse.rs`) reads the shape (types, closed sets,
//! required keys) and then calls the same check, so a typed answer and its JSON text are
//! accepted or refused together, with the same error. The journal's text is written in
//! `text.rs`.

mod check;
mod parse;
mod text;

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// Why the provider stopped.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum FinishReason {
    /// A natural stop.
    #[serde(rename = "stop")]
    Stop,
    /// The output budget ran out: a truncation.
    #[serde(rename = "length")]
    Length,
    /// The provider refused (v1 spells it `content_filter`).
    #[serde(rename = "content-filter", alias = "content_filter")]
    ContentFilter,
    /// The model asked for a tool.
    #[serde(rename = "tool-call", alias = "tool_call", alias = "tool_calls")]
    ToolCall,
    /// Anything else.
    #[serde(rename = "other")]
    Other,
}

impl FinishReason {
    /// Parses the v2 spelling or a v1 alias.
    pub fn parse(s: &str) -> Option<Self> {
        Some(match s {
            "stop" => Self::Stop,
            "length" => Self::Length,
            "content-filter" | "content_filter" => Self::ContentFilter,
            "tool-call" | "tool_call" | "tool_calls" => Self::ToolCall,
            "other" => Self::Other,
            _ => return None,
        })
    }

    /// The v2 spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Stop => "stop",
            Self::Length => "length",
            Self::ContentFilter => "content-filter",
            Self::ToolCall => "tool-call",
            Self::Other => "other",
        }
    }
}

/// Whether the completion meets the contract.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SemanticStatus {
    /// It does.
    Ok,
    /// The completion exists but does not meet the contract.
    InvalidOutput,
}

impl SemanticStatus {
    /// Parses the wire spelling (`ok`, `invalid_output`).
    pub fn parse(s: &str) -> Option<Self> {
        match s {
            "ok" => Some(Self::Ok),
            "invalid_output" => Some(Self::InvalidOutput),
            _ => None,
        }
    }
}

/// Which structured-output mechanism an attempt used (RFC 0248 §A.3).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum StructuredOutputMode {
    /// The provider's own mechanism (a JSON-schema response format, a forced tool call).
    Native,
    /// A schema embedded in the prompt.
    Prompt,
}

impl StructuredOutputMode {
    /// Parses the wire spelling (one of `wop_sdk::rules::accounting::STRUCTURED_OUTPUT_MODES`).
    pub fn parse(s: &str) -> Option<Self> {
        match s {
            "native" => Some(Self::Native),
            "prompt" => Some(Self::Prompt),
            _ => None,
        }
    }

    /// The wire spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Native => "native",
            Self::Prompt => "prompt",
        }
    }
}

/// Token usage of one attempt.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Usage {
    /// Input tokens (v1: `promptTokens`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub input_tokens: Option<u64>,
    /// Output tokens (v1: `completionTokens`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub output_tokens: Option<u64>,
    /// Their sum, when reported.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub total_tokens: Option<u64>,
}

impl<'de> Deserialize<'de> for Usage {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let v = Value::deserialize(d)?;
        Self::from_json(&v, "usage").map_err(serde::de::Error::custom)
    }
}

/// RFC 0248 §A: what one call really cost at the provider.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Attempts {
    /// ≥ 1: the provider requests the call made, retries and fallbacks included.
    pub count: u32,
    /// Output tokens summed over every attempt that reported usage.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub output_tokens: Option<u64>,
    /// `false` when any attempt reported no usage (then `output_tokens` is a floor).
    pub usage_complete: bool,
    /// Only with `responseSchema`: the mode of the final attempt.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub structured_output: Option<StructuredOutputMode>,
}

/// A `ctx.callAI` result as it travels on the wire.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct CallAiResult {
    /// The structured output, when `responseSchema` was sent.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub data: Option<Value>,
    /// The text output of a plain call.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub content: Option<String>,
    /// Usage of the attempt whose output this result carries (§A.4).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub usage: Option<Usage>,
    /// Why the final attempt stopped.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub finish_reason: Option<FinishReason>,
    /// The model that answered.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    /// The identity the host persisted for this call.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub attempt_id: Option<String>,
    /// `ok` or `invalid_output`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub semantic_status: Option<SemanticStatus>,
    /// RFC 0248 §A, from a host advertising `callAccounting.attempts`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub attempts: Option<Attempts>,
}

impl CallAiResult {
    /// The JSON value of this result (v2 spelling).
    pub fn to_json(&self) -> Value {
        serde_json::to_value(self).unwrap_or(Value::Null)
    }
}
