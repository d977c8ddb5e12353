//! The `ctx.callAI` request.

use super::error::WireError;
use super::read::{Obj, Side};
use super::reason::RetryReason;
use serde::{Deserialize, Deserializer, Serialize};
use serde_json::Value;
use std::sync::Arc;
use wop_sdk_rules::retry::{MAX_ATTEMPTS, MIN_ATTEMPTS};

/// Who speaks a message.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    /// The user.
    User,
    /// The model.
    Assistant,
    /// The system.
    System,
}

/// One message of the prompt.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Message {
    /// Who speaks.
    pub role: Role,
    /// What is said.
    pub content: String,
}

impl Message {
    /// A user message.
    pub fn user(content: impl Into<String>) -> Self {
        Self {
            role: Role::User,
            content: content.into(),
        }
    }

    /// An assistant message.
    pub fn assistant(content: impl Into<String>) -> Self {
        Self {
            role: Role::Assistant,
            content: content.into(),
        }
    }
}

/// The per-call retry policy on the wire (RFC 0248 §B).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Retry {
    /// 1..=16: the most provider requests the call may make.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_attempts: Option<u8>,
    /// Default `true`; `false` keeps every truncation retry at the request's `maxTokens`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub grow_max_tokens: Option<bool>,
}

impl Retry {
    /// Parses and validates `retry`: each broken rule is a `validation_error` naming the key
    /// (`retry.maxAttempts`, `retry.growMaxTokens`, or the unknown key). An explicit `null` is
    /// refused too: RFC 0248 types the keys as an integer and a boolean, and absent is spelled
    /// by leaving the key out.
    pub fn from_json(value: &Value) -> Result<Self, WireError> {
        let obj = Obj::new(value, "retry", Side::Request)?;
        obj.deny_unknown(&["maxAttempts", "growMaxTokens"])?;
        obj.deny_null(&["maxAttempts"], "omit it, or give an integer in 1..=16")?;
        obj.deny_null(&["growMaxTokens"], "omit it, or give `true` or `false`")?;
        let max_attempts = obj
            .opt_int("maxAttempts", MIN_ATTEMPTS.into(), MAX_ATTEMPTS.into())?
            .map(|n| u8::try_from(n).unwrap_or(MAX_ATTEMPTS));
        Ok(Self {
            max_attempts,
            grow_max_tokens: obj.opt_bool("growMaxTokens")?,
        })
    }
}

/// A `ctx.callAI` request as it travels on the wire.
///
/// Built by the typed runtime ([`crate::AiRequest`]); parsed with [`CallAiRequest::from_json`],
/// which refuses what a host refuses (§B.5) and names the field.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct CallAiRequest {
    /// The provider; the host default when absent.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub provider: Option<String>,
    /// The model; the host default when absent.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    /// The system prompt.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub system_prompt: Option<String>,
    /// The prompt (`prompt: "…"` on input is shorthand for one user message). Shared, never
    /// copied per attempt: a host's provider requests hold the same messages by reference count
    /// (a retry that adds a corrective note makes a new list). Written as a JSON array.
    pub messages: Arc<[Message]>,
    /// 0..=2.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub temperature: Option<f64>,
    /// ≥ 1; the host's default when absent.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_tokens: Option<u32>,
    /// Stop sequences.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub stop_sequences: Option<Vec<String>>,
    /// Present: a structured call, replies validated against it. Shared, never copied per call
    /// or per attempt: a typed request's schema is generated once per type
    /// ([`crate::ai::schema_of`]).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub response_schema: Option<Arc<Value>>,
    /// RFC 0248 §B.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub retry: Option<Retry>,
    /// Routing metadata (seed 2).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub slot: Option<String>,
    /// Routing metadata (seed 2).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub purpose: Option<String>,
    /// Who is charged; the run's owner when empty.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub beneficiary_user_ids: Vec<String>,
    /// A deliberate retry: the `attemptId` of the successful completion it retries.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub retry_of_attempt_id: Option<String>,
    /// A deliberate retry: why.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub retry_reason: Option<RetryReason>,
}

impl CallAiRequest {
    /// Whether this is a structured call (`responseSchema` present).
    pub fn is_structured(&self) -> bool {
        self.response_schema.is_some()
    }

    /// Parses and validates a request. Unknown top-level keys are ignored, as an older host
    /// ignores an unknown field; everything named in SPEC.md is checked. `retry` is checked
    /// only when `honour_retry` is set (a host that does not advertise `retryPolicy` is not bound
    /// by §B.5 and ignores the field).
    pub fn from_json_for_host(value: &Value, honour_retry: bool) -> Result<Self, WireError> {
        let obj = Obj::new(value, "", Side::Request)?;
        let messages = match (obj.get("messages"), obj.opt_str("prompt")?) {
            (Some(_), Some(_)) => {
                return Err(obj.err("prompt", "cannot be given together with `messages`"));
            }
            (Some(Value::Array(items)), None) => items
                .iter()
                .enumerate()
                .map(|(i, item)| parse_message(item, i))
                .collect::<Result<Arc<[_]>, _>>()?,
            (Some(_), None) => return Err(obj.err("messages", "must be an array of messages")),
            (None, Some(prompt)) => Arc::new([Message::user(prompt)]),
            (None, None) => return Err(obj.err("messages", "is required (or `prompt`)")),
        };
        if messages.is_empty() {
            return Err(obj.err("messages", "must hold at least one message"));
        }
        let response_schema = match obj.get("responseSchema") {
            None => None,
            Some(v @ (Value::Object(_) | Value::Bool(_))) => Some(Arc::new(v.clone())),
            Some(_) => return Err(obj.err("responseSchema", "must be a JSON Schema object")),
        };
        let retry = match obj.get("retry") {
            Some(v) if honour_retry => Some(Retry::from_json(v)?),
            _ => None,
        };
        let retry_of_attempt_id = obj.opt_str("retryOfAttemptId")?;
        let retry_reason = match obj.opt_str("retryReason")? {
            None => None,
            Some(s) => Some(RetryReason::parse(&s).ok_or_else(|| {
                obj.err(
                    "retryReason",
                    format!(
                        "must be one of invalid_output, tool_validation_failed, provider_failure, \
                         user_requested, workflow_policy; got `{s}`"
                    ),
                )
            })?),
        };
        match (&retry_of_attempt_id, &retry_reason) {
            (Some(id), None) if !id.is_empty() => {
                return Err(obj.err("retryReason", "is required with `retryOfAttemptId`"));
            }
            (None, Some(_)) => {
                return Err(obj.err("retryOfAttemptId", "is required with `retryReason`"));
            }
            (Some(id), _) if id.is_empty() => {
                return Err(obj.err("retryOfAttemptId", "must not be empty"));
            }
            _ => {}
        }
        Ok(Self {
            provider: obj.opt_str("provider")?,
            model: obj.opt_str("model")?,
            system_prompt: obj.opt_str("systemPrompt")?,
            messages,
            temperature: obj.opt_f64("temperature", 0.0, 2.0)?,
            max_tokens: obj
                .opt_int("maxTokens", 1, u32::MAX.into())?
                .map(|n| u32::try_from(n).unwrap_or(u32::MAX)),
            stop_sequences: obj.opt_str_list("stopSequences")?,
            response_schema,
            retry,
            slot: obj.opt_str("slot")?,
            purpose: obj.opt_str("purpose")?,
            beneficiary_user_ids: obj.opt_str_list("beneficiaryUserIds")?.unwrap_or_default(),
            retry_of_attempt_id,
            retry_reason,
        })
    }

    /// Parses and validates a request as a host advertising `retryPolicy` does.
    pub fn from_json(value: &Value) -> Result<Self, WireError> {
        Self::from_json_for_host(value, true)
    }

    /// The JSON value of this request (v2 spelling).
    pub fn to_json(&self) -> Value {
        serde_json::to_value(self).unwrap_or(Value::Null)
    }
}

fn parse_message(item: &Value, i: usize) -> Result<Message, WireError> {
    let obj = Obj::new(item, &format!("messages[{i}]"), Side::Request)?;
    let role = match obj.opt_str("role")?.as_deref() {
        Some("user") => Role::User,
        Some("assistant") => Role::Assistant,
        Some("system") => Role::System,
        Some(_) => return Err(obj.err("role", "must be `user`, `assistant` or `system`")),
        None => return Err(obj.err("role", "is required")),
    };
    let content = obj
        .opt_str("content")?
        .ok_or_else(|| obj.err("content", "is required"))?;
    Ok(Message { role, content })
}

impl<'de> Deserialize<'de> for CallAiRequest {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let v = Value::deserialize(d)?;
        Self::from_json(&v).map_err(serde::de::Error::custom)
    }
}

impl<'de> Deserialize<'de> for Retry {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let v = Value::deserialize(d)?;
        Self::from_json(&v).map_err(serde::de::Error::custom)
    }
}
