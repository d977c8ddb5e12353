//! The run events a host records, as one typed enum ([`Event`]) inside the v2 wrapper
//! ([`RunEvent`]): `{eventId, runId, nodeId?, type, payload, timestamp, sequence, schemaVersion}`,
//! each payload as `run-event-payloads.schema.json` has it.
//!
//! v2 spellings are written. When reading, v1 type names (`envelope.retry.exhausted`,
//! `envelope.nlToFormat.engaged`) and the first payload shapes this SDK wrote (`seq` from 1,
//! `node.completed.output`, `node.failed.error.error`) are accepted.
//!
//! The parts: the payload types (`payloads.rs`), the payload rules for reading and for checking
//! a built event (`rules.rs`), and here the enum, the wrapper, ids and timestamps.

use super::error::{ErrorCode, ErrorEnvelope, WireError};
use super::read::{Obj, Side};
use serde::ser::SerializeMap;
use serde::{Serialize, Serializer};
use serde_json::{Map, Value, json};
use sha2::{Digest, Sha256};
use std::borrow::Cow;
use std::sync::Arc;
use std::time::{SystemTime, UNIX_EPOCH};
use wop_sdk_rules::{grammar, sets};

/// The event types this SDK records and reads, with their v2 names.
pub mod kind {
    /// One per provider request that reported usage.
    pub const PROVIDER_USAGE: &str = "provider.usage";
    /// A host retry is about to be made.
    pub const RETRY_ATTEMPTED: &str = "envelope.retry-attempted";
    /// The call ran out of attempts.
    pub const RETRY_EXHAUSTED: &str = "envelope.retry-exhausted";
    /// A reply was truncated.
    pub const TRUNCATED: &str = "envelope.truncated";
    /// The provider refused (never the refusal text).
    pub const REFUSAL: &str = "envelope.refusal";
    /// The natural-language-to-JSON fallback was engaged.
    pub const NL_TO_FORMAT_ENGAGED: &str = "envelope.nl-to-format-engaged";
    /// A node started.
    pub const NODE_STARTED: &str = "node.started";
    /// A node completed; `outputs` is its port map.
    pub const NODE_COMPLETED: &str = "node.completed";
    /// A node failed; `error` is `{code, message, details?}`.
    pub const NODE_FAILED: &str = "node.failed";
}

/// The `schemaVersion` of every event this SDK writes.
pub const EVENT_SCHEMA_VERSION: u32 = 1;

/// The port a node's output is written to when it is not an object of ports.
pub const OUTPUT_PORT: &str = "output";

/// The retry reason this host gives for a provider failure: the registry has none, so it is a
/// host extension (`x-host-<host>-<reason>`).
pub const PROVIDER_FAILURE_REASON: &str = "x-host-wop-sdk-provider-error";

/// v1 names whose v2 name does not follow the general rule of [`normalize_type`].
const IRREGULAR: &[(&str, &str)] = &[
    ("run.resuming", "run.resume-started"),
    ("runOrchestrator.decided", "orchestrator.decided"),
    ("core.dispatch.fanOut", "dispatch.fanned-out"),
    ("core.dispatch.join", "dispatch.joined"),
    ("core.workflowChain.event", "workflow-chain.event"),
    (
        "core.workflowChain.confidence-escalated",
        "workflow-chain.confidence-escalated",
    ),
];

/// The v2 spelling of an event type. v2 keeps the family (the first segment) and writes the rest
/// as one kebab-case word: `envelope.retry.exhausted` → `envelope.retry-exhausted`,
/// `envelope.nlToFormat.engaged` → `envelope.nl-to-format-engaged`, `agent.toolCalled` →
/// `agent.tool-called`. A v2 name is unchanged.
pub fn normalize_type(t: &str) -> String {
    if let Some((_, v2)) = IRREGULAR.iter().find(|(v1, _)| *v1 == t) {
        return (*v2).to_owned();
    }
    let Some((family, rest)) = t.split_once('.') else {
        return t.to_owned();
    };
    let mut out = String::with_capacity(t.len() + 4);
    out.push_str(family);
    out.push('.');
    for c in rest.chars() {
        match c {
            '.' | '_' => out.push('-'),
            c if c.is_ascii_uppercase() => {
                if !out.ends_with(['.', '-']) {
                    out.push('-');
                }
                out.push(c.to_ascii_lowercase());
            }
            c => out.push(c),
        }
    }
    out
}

mod payloads;
mod rules;
pub use payloads::*;

/// One run event, typed: the events this SDK writes, and any other type kept as read.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub enum Event {
    /// `provider.usage`.
    ProviderUsage(ProviderUsage),
    /// `envelope.retry-attempted`.
    RetryAttempted(RetryAttempted),
    /// `envelope.retry-exhausted`.
    RetryExhausted(RetryExhausted),
    /// `envelope.truncated`.
    Truncated(Truncated),
    /// `envelope.refusal`.
    Refusal(Refusal),
    /// `envelope.nl-to-format-engaged`.
    NlToFormatEngaged(NlToFormatEngaged),
    /// `node.started`.
    NodeStarted(NodeStarted),
    /// `node.completed`.
    NodeCompleted(NodeCompleted),
    /// `node.failed`.
    NodeFailed(NodeFailed),
    /// A type this SDK does not write, read from another host's log: kept, never acted on.
    Other {
        /// Its type, v2-normalized.
        kind: String,
        /// Its payload as read.
        payload: Value,
    },
}

/// An event's payload, serialized from its typed form (no intermediate `Value`).
struct PayloadOf<'a>(&'a Event);

impl Serialize for PayloadOf<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self.0 {
            Event::ProviderUsage(p) => p.serialize(s),
            Event::RetryAttempted(p) => p.serialize(s),
            Event::RetryExhausted(p) => p.serialize(s),
            Event::Truncated(p) => p.serialize(s),
            Event::Refusal(p) => p.serialize(s),
            Event::NlToFormatEngaged(p) => p.serialize(s),
            Event::NodeStarted(p) => p.serialize(s),
            Event::NodeCompleted(p) => p.serialize(s),
            Event::NodeFailed(p) => p.serialize(s),
            Event::Other { payload, .. } => payload.serialize(s),
        }
    }
}

impl Event {
    /// The v2 type name.
    pub fn kind(&self) -> &str {
        match self {
            Self::ProviderUsage(_) => kind::PROVIDER_USAGE,
            Self::RetryAttempted(_) => kind::RETRY_ATTEMPTED,
            Self::RetryExhausted(_) => kind::RETRY_EXHAUSTED,
            Self::Truncated(_) => kind::TRUNCATED,
            Self::Refusal(_) => kind::REFUSAL,
            Self::NlToFormatEngaged(_) => kind::NL_TO_FORMAT_ENGAGED,
            Self::NodeStarted(_) => kind::NODE_STARTED,
            Self::NodeCompleted(_) => kind::NODE_COMPLETED,
            Self::NodeFailed(_) => kind::NODE_FAILED,
            Self::Other { kind, .. } => kind,
        }
    }

    /// The v2 payload.
    pub fn payload(&self) -> Value {
        match self {
            Self::Other { payload, .. } => payload.clone(),
            typed => {
                serde_json::to_value(PayloadOf(typed)).unwrap_or_else(|_| Value::Object(Map::new()))
            }
        }
    }

    /// The v2 payload as JSON text, written from the typed payload.
    pub fn payload_text(&self) -> String {
        serde_json::to_string(&PayloadOf(self)).unwrap_or_else(|_| "{}".to_owned())
    }

    /// The node the event is about, when it is node-scoped.
    pub fn node_id(&self) -> Option<&str> {
        match self {
            Self::ProviderUsage(p) => p.node_id.as_deref(),
            Self::RetryAttempted(p) => Some(&p.node_id),
            Self::RetryExhausted(p) => Some(&p.node_id),
            Self::Truncated(p) => Some(&p.node_id),
            Self::Refusal(p) => Some(&p.node_id),
            Self::NlToFormatEngaged(p) => Some(&p.node_id),
            Self::NodeStarted(p) => Some(&p.node_id),
            Self::NodeCompleted(p) => Some(&p.node_id),
            Self::NodeFailed(p) => Some(&p.node_id),
            Self::Other { payload, .. } => payload.get("nodeId").and_then(Value::as_str),
        }
    }
}

/// A UTC instant as RFC 3339 with milliseconds: `2026-12-03T09:41:07.123Z`.
pub fn rfc3339(t: SystemTime) -> String {
    let d = t.duration_since(UNIX_EPOCH).unwrap_or_default();
    let secs = d.as_secs();
    let (days, rem) = (secs / 86_400, secs % 86_400);
    // Civil date from days since 1970-01-01 (Howard Hinnant's algorithm).
    let z = i64::try_from(days).unwrap_or(0) + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    let (hour, minute, second) = (rem / 3600, rem % 3600 / 60, rem % 60);
    let millis = d.subsec_millis();
    let Ok(year4 @ 0..=9999) = u16::try_from(year) else {
        return format!(
            "{year:04}-{month:02}-{day:02}T{hour:02}:{minute:02}:{second:02}.{millis:03}Z"
        );
    };
    // Every field in range: written digit by digit (an event's timestamp is taken per event;
    // `format!` cost ten times as much).
    let mut out = String::with_capacity(24);
    push_digits(&mut out, u64::from(year4), 4);
    let fields = [month as u64, day as u64, hour, minute, second];
    for (field, sep) in fields.into_iter().zip(['-', '-', 'T', ':', ':']) {
        out.push(sep);
        push_digits(&mut out, field, 2);
    }
    out.push('.');
    push_digits(&mut out, u64::from(millis), 3);
    out.push('Z');
    out
}

/// `v` in `width` decimal digits, zero-padded (`v` < 10^width).
fn push_digits(out: &mut String, v: u64, width: u32) {
    for place in (0..width).rev() {
        out.push(char::from(b'0' + (v / 10u64.pow(place) % 10) as u8));
    }
}

/// The id of the event at `sequence` of `run_id`: 32 hex characters derived from both, so the
/// same event read twice has the same id and two events never share one.
pub fn event_id(run_id: &str, sequence: u64) -> String {
    let digest = Sha256::new()
        .chain_update(run_id.as_bytes())
        .chain_update([0u8])
        .chain_update(sequence.to_be_bytes())
        .finalize();
    crate::hex::of_bytes(&digest[..16])
}

/// One event of a run's log: the v2 wrapper around a typed [`Event`].
#[derive(Clone, Debug, PartialEq)]
pub struct RunEvent {
    /// Unique id of the event ([`event_id`]).
    pub event_id: String,
    /// The run.
    pub run_id: String,
    /// Position in the run's log, from 0.
    pub sequence: u64,
    /// When it was recorded, RFC 3339 UTC.
    pub timestamp: String,
    /// The event's schema version ([`EVENT_SCHEMA_VERSION`]).
    pub schema_version: u32,
    /// The event.
    pub event: Event,
}

impl Serialize for RunEvent {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let node_id = self.event.node_id();
        let mut m = s.serialize_map(Some(7 + usize::from(node_id.is_some())))?;
        m.serialize_entry("eventId", &self.event_id)?;
        m.serialize_entry("runId", &self.run_id)?;
        if let Some(node) = node_id {
            m.serialize_entry("nodeId", node)?;
        }
        m.serialize_entry("type", self.event.kind())?;
        m.serialize_entry("payload", &PayloadOf(&self.event))?;
        m.serialize_entry("timestamp", &self.timestamp)?;
        m.serialize_entry("sequence", &self.sequence)?;
        m.serialize_entry("schemaVersion", &self.schema_version)?;
        m.end()
    }
}

impl RunEvent {
    /// The event at `sequence` of `run_id`, recorded at `timestamp`.
    pub fn new(run_id: &str, sequence: u64, timestamp: String, event: Event) -> Self {
        Self {
            event_id: event_id(run_id, sequence),
            run_id: run_id.to_owned(),
            sequence,
            timestamp,
            schema_version: EVENT_SCHEMA_VERSION,
            event,
        }
    }

    /// The event at `sequence` of `run_id`, recorded now.
    pub fn now(run_id: &str, sequence: u64, event: Event) -> Self {
        Self::new(run_id, sequence, rfc3339(SystemTime::now()), event)
    }

    /// Reads an event: a v2 document, or the first shape this SDK wrote (`seq` from 1, no
    /// `eventId`/`timestamp`), accepting v1 type names and payloads.
    pub fn from_json(value: &Value) -> Result<Self, WireError> {
        let obj = Obj::new(value, "", Side::Host)?;
        let kind = obj
            .opt_str("type")?
            .ok_or_else(|| obj.err("type", "is required"))?;
        let empty = Value::Object(Map::new());
        let payload = obj.get("payload").unwrap_or(&empty);
        let event = Event::from_parts(&kind, payload)?;
        let run_id = obj.opt_str("runId")?.unwrap_or_default();
        let sequence = match obj.opt_int("sequence", 0, u64::MAX)? {
            Some(n) => n,
            None => obj
                .opt_int("seq", 1, u64::MAX)?
                .map_or(0, |n| n.saturating_sub(1)),
        };
        let event_id = match obj.opt_str("eventId")? {
            Some(id) => id,
            None => self::event_id(&run_id, sequence),
        };
        Ok(Self {
            event_id,
            run_id,
            sequence,
            timestamp: obj.opt_str("timestamp")?.unwrap_or_default(),
            schema_version: obj
                .opt_int("schemaVersion", 1, u64::from(u32::MAX))?
                .and_then(|n| u32::try_from(n).ok())
                .unwrap_or(EVENT_SCHEMA_VERSION),
            event,
        })
    }

    /// The v2 document of this event.
    pub fn to_json(&self) -> Value {
        serde_json::to_value(self).unwrap_or_else(|_| json!({}))
    }

    /// The v2 type name.
    pub fn kind(&self) -> &str {
        self.event.kind()
    }

    /// The v2 payload.
    pub fn payload(&self) -> Value {
        self.event.payload()
    }

    /// A payload field as an integer.
    pub fn u64(&self, key: &str) -> Option<u64> {
        self.payload().get(key)?.as_u64()
    }

    /// A payload field as a string.
    pub fn str(&self, key: &str) -> Option<String> {
        self.payload().get(key)?.as_str().map(str::to_owned)
    }

    /// The error of a `node.failed` event as an envelope (a code this SDK does not know reads as
    /// `None`).
    pub fn node_error(&self) -> Option<ErrorEnvelope> {
        let Event::NodeFailed(f) = &self.event else {
            return None;
        };
        Some(ErrorEnvelope {
            error: ErrorCode::parse(&f.error.code)?,
            message: f.error.message.clone(),
            details: f.error.details.clone(),
        })
    }
}

#[cfg(test)]
mod tests;
