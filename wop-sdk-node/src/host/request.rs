//! The request as the host gets it: written from the runtime's request, with the node's
//! provider and model filled in, and on a plain host (no `callAccounting`) the lineage checked by
//! the bridge and left out, with no `retry`.
//!
//! Two writers, one text: [`host_request`] writes a JSON value (what [`super::JsHost::call_json`]
//! takes), [`typed_request`] writes the runtime's [`CallAiRequest`] straight, without building a
//! value first (the per-call path). Both check with [`fill_and_check`] and write the same keys in
//! the same order (the order of the request's JSON value: sorted, then the filled keys), so a
//! request is the same text whichever path wrote it (tested in `host/tests.rs`).

use super::HostRequest;
use super::config::NodeConfig;
use super::document::HostKind;
use serde::ser::{Serialize, SerializeMap, Serializer};
use serde_json::{Map, Value};
use std::sync::Arc;
use wop_sdk::wire::{CallAiRequest, ErrorEnvelope, Message, Retry};

/// What the checks read of one key of the request.
#[derive(Clone, Copy)]
enum Field<'a> {
    Absent,
    Str(&'a str),
    /// Present, not a string.
    Other,
}

impl<'a> Field<'a> {
    fn of_value(v: Option<&'a Value>) -> Self {
        match v {
            None | Some(Value::Null) => Self::Absent,
            Some(Value::String(s)) => Self::Str(s),
            Some(_) => Self::Other,
        }
    }

    /// As [`Field::of_value`], but a `null` is present (`Other`): the lineage keys are checked
    /// as given.
    fn of_raw(v: Option<&'a Value>) -> Self {
        match v {
            None => Self::Absent,
            Some(Value::String(s)) => Self::Str(s),
            Some(_) => Self::Other,
        }
    }

    fn of_opt(v: Option<&'a str>) -> Self {
        v.map_or(Self::Absent, Self::Str)
    }
}

/// `provider` and `model` from the configuration when the request has none.
type Filled<'a> = [(&'static str, Option<&'a str>); 2];

/// The checks of both writers: `provider` and `model` (`fields[0]`, `fields[1]`) present or
/// filled from `config`; on a plain host the lineage (`retry_of`, `reason_present`) is one the
/// bridge made (`issued`). Answers the filled keys.
fn fill_and_check<'a>(
    fields: [Field<'_>; 2],
    retry_of: Field<'_>,
    reason_present: bool,
    plain: bool,
    config: &'a NodeConfig,
    issued: impl Fn(&str) -> bool,
) -> Result<Filled<'a>, ErrorEnvelope> {
    let mut filled: Filled<'a> = [("provider", None), ("model", None)];
    for ((key, fill), field) in filled.iter_mut().zip(fields) {
        let default = if *key == "provider" {
            &config.provider
        } else {
            &config.model
        };
        match field {
            Field::Str(s) if !s.is_empty() => {}
            Field::Absent => match default {
                Some(d) => *fill = Some(d.as_str()),
                None => {
                    return Err(ErrorEnvelope::validation(
                        *key,
                        format!(
                            "the host requires `{key}`: set it on the call, in the node's \
                             configuration (`{key}`), or as the pack's default (`pack --{key}`)"
                        ),
                    ));
                }
            },
            Field::Str(_) | Field::Other => {
                return Err(ErrorEnvelope::validation(
                    *key,
                    format!("`{key}` must be a non-empty string"),
                ));
            }
        }
    }
    if plain {
        match (retry_of, reason_present) {
            (Field::Absent, false) => {}
            (Field::Str(id), true) => {
                if !issued(id) {
                    return Err(ErrorEnvelope::validation(
                        "retryOfAttemptId",
                        "is not a completed attempt of this node execution (the host keeps \
                         no attempt ids: the bridge made this one, and checks it alone)",
                    ));
                }
            }
            (Field::Absent, true) | (Field::Str(_) | Field::Other, false) => {
                return Err(ErrorEnvelope::validation(
                    "retryOfAttemptId",
                    "`retryOfAttemptId` and `retryReason` go together",
                ));
            }
            (Field::Other, true) => {
                return Err(ErrorEnvelope::validation(
                    "retryOfAttemptId",
                    "must be a string",
                ));
            }
        }
    }
    Ok(filled)
}

/// The keys a plain host is never sent.
const LINEAGE: &[&str] = &["retry", "retryOfAttemptId", "retryReason"];

/// The request as the host gets it: the runtime's object without the `left_out` keys, with the
/// `filled` keys that had no value.
struct Outgoing<'a> {
    request: &'a Map<String, Value>,
    filled: Filled<'a>,
    left_out: &'static [&'static str],
}

impl Serialize for Outgoing<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut map = s.serialize_map(None)?;
        for (key, value) in self.request {
            let filled = self.filled.iter().any(|(k, v)| k == key && v.is_some());
            if !filled && !self.left_out.contains(&key.as_str()) {
                map.serialize_entry(key, value)?;
            }
        }
        for (key, value) in &self.filled {
            if let Some(v) = value {
                map.serialize_entry(key, v)?;
            }
        }
        map.end()
    }
}

fn write_error(e: &serde_json::Error) -> ErrorEnvelope {
    ErrorEnvelope::validation("request", format!("cannot be written as JSON: {e}"))
}

/// The request the host is sent, as JSON text: provider and model filled in (from `config` when
/// the call names none), and on a plain host the lineage checked (`issued`: whether the bridge
/// made that attempt id) and left out, and no `retry`. Written straight from `request`, without
/// a copy of it.
pub(super) fn host_request(
    request: &Value,
    kind: HostKind,
    config: &NodeConfig,
    issued: impl Fn(&str) -> bool,
) -> Result<String, ErrorEnvelope> {
    let Value::Object(request) = request else {
        return Err(ErrorEnvelope::validation(
            "request",
            "a ctx.callAI request must be a JSON object",
        ));
    };
    let plain = kind == HostKind::Plain;
    let filled = fill_and_check(
        [
            Field::of_value(request.get("provider")),
            Field::of_value(request.get("model")),
        ],
        Field::of_raw(request.get("retryOfAttemptId")),
        request.contains_key("retryReason"),
        plain,
        config,
        issued,
    )?;
    let outgoing = Outgoing {
        request,
        filled,
        left_out: if plain { LINEAGE } else { &[] },
    };
    serde_json::to_string(&outgoing).map_err(|e| write_error(&e))
}

/// A message as its JSON value is written: `content`, then `role`.
struct Msg<'a>(&'a Message);

impl Serialize for Msg<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut map = s.serialize_map(Some(2))?;
        map.serialize_entry("content", &self.0.content)?;
        map.serialize_entry("role", &self.0.role)?;
        map.end()
    }
}

struct Msgs<'a>(&'a [Message]);

impl Serialize for Msgs<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_seq(self.0.iter().map(Msg))
    }
}

/// `retry` as its JSON value is written: `growMaxTokens`, then `maxAttempts`, each when set.
struct RetryOut<'a>(&'a Retry);

impl Serialize for RetryOut<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut map = s.serialize_map(None)?;
        if let Some(g) = self.0.grow_max_tokens {
            map.serialize_entry("growMaxTokens", &g)?;
        }
        if let Some(m) = self.0.max_attempts {
            map.serialize_entry("maxAttempts", &m)?;
        }
        map.end()
    }
}

/// The request written from the runtime's value, its keys in the order of its JSON value
/// (`CallAiRequest::to_json`, a sorted map); `responseSchema` written as `0` when `schema_apart`.
struct Typed<'a> {
    request: &'a CallAiRequest,
    filled: Filled<'a>,
    plain: bool,
    schema_apart: bool,
}

impl Serialize for Typed<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let r = self.request;
        let own = |key: &str| self.filled.iter().all(|(k, v)| *k != key || v.is_none());
        let mut map = s.serialize_map(None)?;
        if !r.beneficiary_user_ids.is_empty() {
            map.serialize_entry("beneficiaryUserIds", &r.beneficiary_user_ids)?;
        }
        if let Some(v) = r.max_tokens {
            map.serialize_entry("maxTokens", &v)?;
        }
        map.serialize_entry("messages", &Msgs(&r.messages))?;
        if let (Some(v), true) = (&r.model, own("model")) {
            map.serialize_entry("model", v)?;
        }
        if let (Some(v), true) = (&r.provider, own("provider")) {
            map.serialize_entry("provider", v)?;
        }
        if let Some(v) = &r.purpose {
            map.serialize_entry("purpose", v)?;
        }
        match &r.response_schema {
            Some(_) if self.schema_apart => map.serialize_entry("responseSchema", &0)?,
            Some(v) => map.serialize_entry("responseSchema", v.as_ref())?,
            None => {}
        }
        if !self.plain {
            if let Some(v) = &r.retry {
                map.serialize_entry("retry", &RetryOut(v))?;
            }
            if let Some(v) = &r.retry_of_attempt_id {
                map.serialize_entry("retryOfAttemptId", v)?;
            }
            if let Some(v) = &r.retry_reason {
                map.serialize_entry("retryReason", v)?;
            }
        }
        if let Some(v) = &r.slot {
            map.serialize_entry("slot", v)?;
        }
        if let Some(v) = &r.stop_sequences {
            map.serialize_entry("stopSequences", v)?;
        }
        if let Some(v) = &r.system_prompt {
            map.serialize_entry("systemPrompt", v)?;
        }
        if let Some(v) = r.temperature {
            map.serialize_entry("temperature", &v)?;
        }
        for (key, value) in &self.filled {
            if let Some(v) = value {
                map.serialize_entry(key, v)?;
            }
        }
        map.end()
    }
}

/// The placeholder `responseSchema` value of a request written with its schema apart.
const PLACEHOLDER: &str = "\"responseSchema\":0";

/// The runtime's request as the host gets it, with the same checks and the same text as
/// [`host_request`] of its JSON value, written without building that value. The response schema,
/// constant for a node's calls of one type, goes apart ([`HostRequest::schema`]): the bridge
/// hands it to JavaScript once per node execution.
pub(super) fn typed_request(
    request: &CallAiRequest,
    kind: HostKind,
    config: &NodeConfig,
    issued: impl Fn(&str) -> bool,
) -> Result<HostRequest, ErrorEnvelope> {
    let plain = kind == HostKind::Plain;
    let filled = fill_and_check(
        [
            Field::of_opt(request.provider.as_deref()),
            Field::of_opt(request.model.as_deref()),
        ],
        Field::of_opt(request.retry_of_attempt_id.as_deref()),
        request.retry_reason.is_some(),
        plain,
        config,
        issued,
    )?;
    let typed = Typed {
        request,
        filled,
        plain,
        schema_apart: request.response_schema.is_some(),
    };
    let text = serde_json::to_string(&typed).map_err(|e| write_error(&e))?;
    let schema = match &request.response_schema {
        // The placeholder is the one unescaped `"responseSchema":` of the text (a key; in a
        // string its quotes would be escaped).
        Some(schema) => match text.find(PLACEHOLDER) {
            Some(at) => Some((at + PLACEHOLDER.len() - 1, Arc::clone(schema))),
            None => return Err(write_error(&serde::ser::Error::custom("no schema key"))),
        },
        None => None,
    };
    Ok(HostRequest { text, schema })
}
