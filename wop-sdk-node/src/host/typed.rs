//! The runtime's request written straight as the text the host gets, without building its JSON
//! value first (the per-call path of [`super::JsHost`]): the same checks as
//! [`super::request::host_request`] ([`fill_and_check`]) and the same text, key by key (tested in
//! `host/equivalence.rs`), its response schema apart.

use super::config::NodeConfig;
use super::document::HostKind;
use super::request::{Field, Filled, HostRequest, fill_and_check, write_error};
use serde::ser::{Serialize, SerializeMap, Serializer};
use std::sync::Arc;
use wop_sdk::wire::{CallAiRequest, ErrorEnvelope, Message, Retry};

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

/// A JSON object written key by key.
struct Object {
    out: Vec<u8>,
}

impl Object {
    fn new(capacity: usize) -> Self {
        let mut out = Vec::with_capacity(capacity);
        out.push(b'{');
        Self { out }
    }

    /// Writes `"key":`; `key` is one of the request's keys (nothing to escape).
    fn key(&mut self, key: &str) {
        if self.out.len() > 1 {
            self.out.push(b',');
        }
        self.out.push(b'"');
        self.out.extend_from_slice(key.as_bytes());
        self.out.extend_from_slice(b"\":");
    }

    fn entry<T: Serialize + ?Sized>(&mut self, key: &str, value: &T) -> serde_json::Result<()> {
        self.key(key);
        serde_json::to_writer(&mut self.out, value)
    }

    fn end(mut self) -> serde_json::Result<String> {
        self.out.push(b'}');
        String::from_utf8(self.out).map_err(serde::ser::Error::custom)
    }
}

/// The runtime's request written as JSON text, its keys in the order of its JSON value
/// (`CallAiRequest::to_json`, a sorted map), then the `filled` ones; `responseSchema` written as
/// the placeholder `0`, whose offset is answered.
fn write_typed(
    r: &CallAiRequest,
    filled: &Filled<'_>,
    plain: bool,
) -> serde_json::Result<(String, Option<usize>)> {
    let own = |key: &str| filled.iter().all(|(k, v)| *k != key || v.is_none());
    let mut o = Object::new(256 + r.messages.iter().map(|m| m.content.len()).sum::<usize>());
    if !r.beneficiary_user_ids.is_empty() {
        o.entry("beneficiaryUserIds", &r.beneficiary_user_ids)?;
    }
    if let Some(v) = r.max_tokens {
        o.entry("maxTokens", &v)?;
    }
    o.entry("messages", &Msgs(&r.messages))?;
    if let (Some(v), true) = (&r.model, own("model")) {
        o.entry("model", v)?;
    }
    if let (Some(v), true) = (&r.provider, own("provider")) {
        o.entry("provider", v)?;
    }
    if let Some(v) = &r.purpose {
        o.entry("purpose", v)?;
    }
    let mut placeholder = None;
    if r.response_schema.is_some() {
        o.key("responseSchema");
        placeholder = Some(o.out.len());
        o.out.push(b'0');
    }
    if !plain {
        if let Some(v) = &r.retry {
            o.entry("retry", &RetryOut(v))?;
        }
        if let Some(v) = &r.retry_of_attempt_id {
            o.entry("retryOfAttemptId", v)?;
        }
        if let Some(v) = &r.retry_reason {
            o.entry("retryReason", v)?;
        }
    }
    if let Some(v) = &r.slot {
        o.entry("slot", v)?;
    }
    if let Some(v) = &r.stop_sequences {
        o.entry("stopSequences", v)?;
    }
    if let Some(v) = &r.system_prompt {
        o.entry("systemPrompt", v)?;
    }
    if let Some(v) = r.temperature {
        o.entry("temperature", &v)?;
    }
    for (key, value) in filled {
        if let Some(v) = value {
            o.entry(key, v)?;
        }
    }
    Ok((o.end()?, placeholder))
}

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
    let (text, placeholder) = write_typed(request, &filled, plain).map_err(|e| write_error(&e))?;
    let schema = match (&request.response_schema, placeholder) {
        (Some(schema), Some(at)) => Some((at, Arc::clone(schema))),
        _ => None,
    };
    Ok(HostRequest { text, schema })
}
