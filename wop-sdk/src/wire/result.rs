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

    /// The result as JSON text: the bytes `serde_json::to_string` writes for it, written
    /// directly (field names as literals, no per-key escaping). It is the exact text a journal
    /// records and a replay reads back, made once per completed call.
    pub fn to_text(&self) -> String {
        let mut w = TextWriter {
            out: String::with_capacity(160),
            first: true,
        };
        if let Some(data) = &self.data {
            w.key("data");
            match serde_json::to_string(data) {
                Ok(text) => w.out.push_str(&text),
                Err(_) => w.out.push_str("null"),
            }
        }
        if let Some(content) = &self.content {
            w.key("content");
            super::canonical::push_str_json(content, &mut w.out);
        }
        if let Some(u) = &self.usage {
            w.key("usage");
            let mut inner = TextWriter {
                out: std::mem::take(&mut w.out),
                first: true,
            };
            inner.opt_u64("inputTokens", u.input_tokens);
            inner.opt_u64("outputTokens", u.output_tokens);
            inner.opt_u64("totalTokens", u.total_tokens);
            w.out = inner.end();
        }
        if let Some(f) = self.finish_reason {
            w.key("finishReason");
            w.string_literal(f.as_str());
        }
        if let Some(model) = &self.model {
            w.key("model");
            super::canonical::push_str_json(model, &mut w.out);
        }
        if let Some(id) = &self.attempt_id {
            w.key("attemptId");
            super::canonical::push_str_json(id, &mut w.out);
        }
        if let Some(status) = self.semantic_status {
            w.key("semanticStatus");
            w.string_literal(match status {
                SemanticStatus::Ok => "ok",
                SemanticStatus::InvalidOutput => "invalid_output",
            });
        }
        if let Some(a) = &self.attempts {
            w.key("attempts");
            let mut inner = TextWriter {
                out: std::mem::take(&mut w.out),
                first: true,
            };
            inner.opt_u64("count", Some(u64::from(a.count)));
            inner.opt_u64("outputTokens", a.output_tokens);
            inner.key("usageComplete");
            inner
                .out
                .push_str(if a.usage_complete { "true" } else { "false" });
            if let Some(mode) = a.structured_output {
                inner.key("structuredOutput");
                inner.string_literal(mode.as_str());
            }
            w.out = inner.end();
        }
        w.end()
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

/// Writes a JSON object whose keys are known literals (nothing to escape).
struct TextWriter {
    out: String,
    first: bool,
}

impl TextWriter {
    fn key(&mut self, key: &str) {
        self.out.push(if self.first { '{' } else { ',' });
        self.first = false;
        self.out.push('"');
        self.out.push_str(key);
        self.out.push_str("\":");
    }

    /// A string value with nothing to escape (a closed-set spelling).
    fn string_literal(&mut self, value: &str) {
        self.out.push('"');
        self.out.push_str(value);
        self.out.push('"');
    }

    fn opt_u64(&mut self, key: &str, value: Option<u64>) {
        if let Some(n) = value {
            self.key(key);
            self.out.push_str(itoa::Buffer::new().format(n));
        }
    }

    fn end(mut self) -> String {
        if self.first {
            self.out.push('{');
        }
        self.out.push('}');
        self.out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// Every combination of present and absent fields, with text that needs escaping.
    #[test]
    fn the_text_is_what_serde_json_writes() {
        for mask in 0u32..(1 << 9) {
            let on = |bit: u32| mask & (1 << bit) != 0;
            let result = CallAiResult {
                data: on(0).then(|| json!({"line": "a \"quoted\"\nline", "n": [1, 2.5, null]})),
                content: on(1).then(|| "tab\there é 🦀 \u{1}".to_owned()),
                usage: on(2).then_some(Usage {
                    input_tokens: on(3).then_some(12),
                    output_tokens: Some(u64::MAX),
                    total_tokens: on(4).then_some(0),
                }),
                finish_reason: on(5).then_some(if on(6) {
                    FinishReason::ContentFilter
                } else {
                    FinishReason::Stop
                }),
                model: on(6).then(|| "m\\1".to_owned()),
                attempt_id: on(7).then(|| "att_0001".to_owned()),
                semantic_status: on(8).then_some(if on(0) {
                    SemanticStatus::Ok
                } else {
                    SemanticStatus::InvalidOutput
                }),
                attempts: on(3).then_some(Attempts {
                    count: 3,
                    output_tokens: on(4).then_some(40),
                    usage_complete: on(5),
                    structured_output: on(6).then_some(StructuredOutputMode::Prompt),
                }),
            };
            let expected = serde_json::to_string(&result).expect("serialize");
            assert_eq!(result.to_text(), expected, "fields {mask:#b}");
        }
    }
}
