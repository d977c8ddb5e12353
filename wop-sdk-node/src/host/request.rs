//! The request as the host gets it: written from the runtime's request, with the node's
//! provider and model filled in, and on a plain host (no `callAccounting`) the lineage checked by
//! the bridge and left out, with no `retry`.
//!
//! Two writers, one text: [`host_request`] here writes a JSON value (what
//! [`super::JsHost::call_json`] takes), `typed.rs` writes the runtime's `CallAiRequest`
//! straight, without building a value first (the per-call path). Both check with
//! [`fill_and_check`] and write the same keys in the same order (the order of the request's JSON
//! value: sorted, then the filled keys), so a request is the same text whichever path wrote it
//! (tested in `host/equivalence.rs`).

use super::config::NodeConfig;
use super::document::HostKind;
use serde::ser::{Serialize, SerializeMap, Serializer};
use serde_json::{Map, Value};
use std::sync::Arc;
use wop_sdk::wire::ErrorEnvelope;

/// One request as the bridge hands it to JavaScript: its JSON text and, for a structured call
/// from the runtime, its response schema apart.
#[derive(Clone, Debug, PartialEq)]
pub struct HostRequest {
    /// The request as JSON text. With [`HostRequest::schema`], its `responseSchema` is the
    /// placeholder `0`, which JavaScript replaces with a copy of the schema.
    pub text: String,
    /// The response schema, and the byte offset of its placeholder in `text`. A node's calls of
    /// one output type share one schema: the bridge hands it to JavaScript once per node
    /// execution, and each call a copy of it.
    pub schema: Option<(usize, Arc<Value>)>,
}

impl HostRequest {
    /// The request as the host gets it, as JSON text: `text` with the schema in place of its
    /// placeholder.
    ///
    /// `text` as it is when `schema` is `None` or its offset is not that of a `0` in it.
    pub fn full_text(&self) -> String {
        let Some((at, schema)) = &self.schema else {
            return self.text.clone();
        };
        match (self.text.get(..*at), self.text.get(*at..)) {
            (Some(before), Some(rest)) if rest.starts_with('0') => {
                format!("{before}{schema}{}", &rest[1..])
            }
            _ => self.text.clone(),
        }
    }
}

/// What the checks read of one key of the request.
#[derive(Clone, Copy)]
pub(super) enum Field<'a> {
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

    pub(super) fn of_opt(v: Option<&'a str>) -> Self {
        v.map_or(Self::Absent, Self::Str)
    }
}

/// `provider` and `model` from the configuration when the request has none.
pub(super) type Filled<'a> = [(&'static str, Option<&'a str>); 2];

/// The checks of both writers: `provider` and `model` (`fields[0]`, `fields[1]`) present or
/// filled from `config`; on a plain host the lineage (`retry_of`, `reason_present`) is one the
/// bridge made (`issued`). Answers the filled keys.
pub(super) fn fill_and_check<'a>(
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
                             configuration (`{key}`), or as the pack's default (`cargo wop \
                             build --{key} …`)"
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

pub(super) fn write_error(e: &serde_json::Error) -> ErrorEnvelope {
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
