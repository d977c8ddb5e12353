//! Reading a host's JSON answer: the shape only (types, closed sets, required keys). Every rule
//! a shaped value can still break is [`CallAiResult::check`]'s, called at the end, so the typed
//! and the JSON paths share one rule set.

use super::{Attempts, CallAiResult, FinishReason, SemanticStatus, StructuredOutputMode, Usage};
use crate::wire::error::WireError;
use crate::wire::read::{Obj, Side};
use serde_json::Value;
use wop_sdk_rules::accounting::STRUCTURED_OUTPUT_MODES;

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

impl Attempts {
    /// Parses `attempts` and holds it to §A ([`Attempts::check`]). `structured` says whether the
    /// call sent a `responseSchema`; every broken rule is a `protocol_error` naming the field.
    pub fn from_json(value: &Value, structured: bool) -> Result<Self, WireError> {
        let attempts = Self::shape(value)?;
        attempts.check(structured)?;
        Ok(attempts)
    }

    /// The shape of `attempts`, no rule between its fields checked.
    fn shape(value: &Value) -> Result<Self, WireError> {
        let obj = Obj::new(value, "attempts", Side::Host)?;
        // The bound (≥ 1) is the check's; here only "an integer a u32 holds".
        let count = obj
            .opt_int("count", 0, u32::MAX.into())?
            .ok_or_else(|| obj.err("count", "is required (an integer ≥ 1)"))?;
        let usage_complete = obj
            .opt_bool("usageComplete")?
            .ok_or_else(|| obj.err("usageComplete", "is required"))?;
        let structured_output = match obj.opt_str("structuredOutput")? {
            None => None,
            Some(mode) => Some(StructuredOutputMode::parse(&mode).ok_or_else(|| {
                obj.err(
                    "structuredOutput",
                    format!(
                        "must be one of {}, got `{mode}`",
                        STRUCTURED_OUTPUT_MODES.join(", ")
                    ),
                )
            })?),
        };
        Ok(Self {
            count: u32::try_from(count).unwrap_or(u32::MAX),
            output_tokens: obj.opt_int("outputTokens", 0, u64::MAX)?,
            usage_complete,
            structured_output,
        })
    }
}

impl CallAiResult {
    /// Parses a host's answer to a call and holds it to the contract ([`CallAiResult::check`]:
    /// the same rules a typed answer meets). `structured` says whether the call sent
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
            Some(s) => Some(
                SemanticStatus::parse(s)
                    .ok_or_else(|| obj.err("semanticStatus", "must be `ok` or `invalid_output`"))?,
            ),
        };
        let usage = obj
            .child("usage")?
            .map(|u| Usage::from_obj(&u))
            .transpose()?;
        let attempts = obj.get("attempts").map(Attempts::shape).transpose()?;
        let result = Self {
            data: obj.get("data").cloned(),
            content: obj.opt_str("content")?,
            usage,
            finish_reason,
            model: obj.opt_str("model")?,
            attempt_id: obj.opt_str("attemptId")?,
            semantic_status,
            attempts,
        };
        result.check(structured)?;
        Ok(result)
    }
}
