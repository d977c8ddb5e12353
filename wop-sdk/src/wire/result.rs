//! The `ctx.callAI` result, its `usage` and RFC 0248's `attempts`.

use super::error::WireError;
use super::read::{Obj, Side};
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

impl Usage {
    fn from_obj(obj: &Obj<'_>) -> Result<Self, WireError> {
        let int = |keys: &[&'static str]| -> Result<Option<u64>, WireError> {
            match obj.get_any(keys) {
                None => Ok(None),
                Some((key, _)) => obj.opt_int(key, 0, u64::MAX),
            }
        };
        Ok(Self {
            input_tokens: int(&["inputTokens", "promptTokens"])?,
            output_tokens: int(&["outputTokens", "completionTokens"])?,
            total_tokens: int(&["totalTokens"])?,
        })
    }

    /// Parses `usage` from a host answer (v1 aliases accepted).
    pub fn from_json(value: &Value, field: &str) -> Result<Self, WireError> {
        Self::from_obj(&Obj::new(value, field, Side::Host)?)
    }
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

impl Attempts {
    /// Parses and checks `attempts` against §A. `structured` says whether the call sent a
    /// `responseSchema`; every broken rule is a `protocol_error` naming the field.
    pub fn from_json(value: &Value, structured: bool) -> Result<Self, WireError> {
        let obj = Obj::new(value, "attempts", Side::Host)?;
        let count = obj
            .opt_int("count", 1, u32::MAX.into())?
            .ok_or_else(|| obj.err("count", "is required (an integer ≥ 1)"))?;
        let usage_complete = obj
            .opt_bool("usageComplete")?
            .ok_or_else(|| obj.err("usageComplete", "is required"))?;
        let structured_output = match obj.opt_str("structuredOutput")?.as_deref() {
            None => None,
            Some(_) if !structured => {
                return Err(obj.err(
                    "structuredOutput",
                    "must be absent on a call without `responseSchema`",
                ));
            }
            Some("native") => Some(StructuredOutputMode::Native),
            Some("prompt") => Some(StructuredOutputMode::Prompt),
            Some(other) => {
                return Err(obj.err(
                    "structuredOutput",
                    format!("must be `native` or `prompt`, got `{other}`"),
                ));
            }
        };
        let output_tokens = obj.opt_int("outputTokens", 0, u64::MAX)?;
        if usage_complete && output_tokens.is_none() {
            // §A.2: complete usage means every attempt reported its output tokens, so their sum
            // exists.
            return Err(obj.err(
                "outputTokens",
                "is required when `usageComplete` is true (every attempt reported usage, so the \
                 sum exists)",
            ));
        }
        Ok(Self {
            count: u32::try_from(count).unwrap_or(u32::MAX),
            output_tokens,
            usage_complete,
            structured_output,
        })
    }
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
    /// Parses a host's answer to a call. `structured` says whether the call sent
    /// `responseSchema`; every broken rule is a `protocol_error` naming the field.
    pub fn from_json(value: &Value, structured: bool) -> Result<Self, WireError> {
        let obj = Obj::new(value, "", Side::Host)?;
        let finish_reason = match obj.opt_str("finishReason")? {
            None => None,
            Some(s) => Some(FinishReason::parse(&s).ok_or_else(|| {
                obj.err(
                    "finishReason",
                    "must be one of stop, length, content-filter, tool-call, other",
                )
            })?),
        };
        let semantic_status = match obj.opt_str("semanticStatus")?.as_deref() {
            None => None,
            Some("ok") => Some(SemanticStatus::Ok),
            Some("invalid_output") => Some(SemanticStatus::InvalidOutput),
            Some(_) => return Err(obj.err("semanticStatus", "must be `ok` or `invalid_output`")),
        };
        let usage = obj
            .child("usage")?
            .map(|u| Usage::from_obj(&u))
            .transpose()?;
        let attempts = obj
            .get("attempts")
            .map(|v| Attempts::from_json(v, structured))
            .transpose()?;
        // §A.2 and §A.4: `usage` is the final attempt's, which is one of the attempts summed.
        if let (Some(a), Some(final_out)) = (attempts, usage.and_then(|u| u.output_tokens)) {
            match a.output_tokens {
                Some(sum) if sum < final_out => {
                    return Err(obj.err(
                        "attempts.outputTokens",
                        format!(
                            "is {sum}, below the final attempt's `usage.outputTokens` \
                             {final_out}: the sum over the attempts includes the final one"
                        ),
                    ));
                }
                None => {
                    return Err(obj.err(
                        "attempts.outputTokens",
                        format!(
                            "is absent though the final attempt reported `usage.outputTokens` \
                             {final_out}: the sum over the attempts that reported usage exists"
                        ),
                    ));
                }
                Some(_) => {}
            }
        }
        Ok(Self {
            data: obj.get("data").cloned(),
            content: obj.opt_str("content")?,
            usage,
            finish_reason,
            model: obj.opt_str("model")?,
            attempt_id: obj.opt_str("attemptId")?,
            semantic_status,
            attempts,
        })
    }

    /// The JSON value of this result (v2 spelling).
    pub fn to_json(&self) -> Value {
        serde_json::to_value(self).unwrap_or(Value::Null)
    }

    /// Checks a typed result against the rules [`CallAiResult::from_json`] enforces on a JSON
    /// one, so a host reached in-process is held to the same contract as one reached over the
    /// wire. Every broken rule is a `protocol_error` naming the field.
    pub fn check(&self, structured: bool) -> Result<(), WireError> {
        if let Some(a) = &self.attempts {
            if a.count == 0 {
                return Err(WireError::protocol(
                    "attempts.count",
                    "must be an integer ≥ 1",
                ));
            }
            if a.structured_output.is_some() && !structured {
                return Err(WireError::protocol(
                    "attempts.structuredOutput",
                    "must be absent on a call without `responseSchema`",
                ));
            }
        }
        Ok(())
    }
}
