//! The request as the host gets it: written from the runtime's request, with the node's
//! provider and model filled in, and on a plain host (no `callAccounting`) the lineage checked by
//! the bridge and left out, with no `retry`.

use super::config::NodeConfig;
use super::document::HostKind;
use serde::ser::{Serialize, SerializeMap, Serializer};
use serde_json::{Map, Value};
use wop_sdk::wire::ErrorEnvelope;

/// The request as the host gets it: the runtime's object without the `left_out` keys, with the
/// `filled` keys that had no value.
struct Outgoing<'a> {
    request: &'a Map<String, Value>,
    filled: [(&'a str, Option<&'a str>); 2],
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

/// The request the host is sent, as JSON text: provider and model filled in (from `config` when
/// the call names none), and on a plain host the lineage checked (`issued`: whether the bridge
/// made that attempt id) and left out, and no `retry`. Written straight from the runtime's
/// value, without a copy of it.
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
    let mut filled: [(&str, Option<&str>); 2] = [("provider", None), ("model", None)];
    for (key, fill) in &mut filled {
        let default = if *key == "provider" {
            &config.provider
        } else {
            &config.model
        };
        match request.get(*key) {
            Some(Value::String(s)) if !s.is_empty() => {}
            Some(Value::Null) | None => match default {
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
            Some(_) => {
                return Err(ErrorEnvelope::validation(
                    *key,
                    format!("`{key}` must be a non-empty string"),
                ));
            }
        }
    }
    let plain = kind == HostKind::Plain;
    if plain {
        match (request.get("retryOfAttemptId"), request.get("retryReason")) {
            (None, None) => {}
            (Some(Value::String(id)), Some(_)) => {
                if !issued(id) {
                    return Err(ErrorEnvelope::validation(
                        "retryOfAttemptId",
                        "is not a completed attempt of this node execution (the host keeps \
                         no attempt ids: the bridge made this one, and checks it alone)",
                    ));
                }
            }
            (Some(_), None) | (None, Some(_)) => {
                return Err(ErrorEnvelope::validation(
                    "retryOfAttemptId",
                    "`retryOfAttemptId` and `retryReason` go together",
                ));
            }
            (Some(_), Some(_)) => {
                return Err(ErrorEnvelope::validation(
                    "retryOfAttemptId",
                    "must be a string",
                ));
            }
        }
    }
    let outgoing = Outgoing {
        request,
        filled,
        left_out: if plain {
            &["retry", "retryOfAttemptId", "retryReason"]
        } else {
            &[]
        },
    };
    serde_json::to_string(&outgoing).map_err(|e| {
        ErrorEnvelope::validation("request", format!("cannot be written as JSON: {e}"))
    })
}
