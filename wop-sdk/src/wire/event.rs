//! The run events a host records (SPEC.md §Run events). v2 names are written; v1 dotted names
//! (`envelope.retry.exhausted`) are accepted when reading.

use super::error::{ErrorEnvelope, WireError};
use super::read::{Obj, Side};
use serde::Serialize;
use serde_json::{Map, Value};

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
    /// A node completed; `output` is its output.
    pub const NODE_COMPLETED: &str = "node.completed";
    /// A node failed; `error` is the envelope.
    pub const NODE_FAILED: &str = "node.failed";
}

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

/// One event of a run's log.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct RunEvent {
    /// Position in the run's log, from 1.
    pub seq: u64,
    /// The run.
    pub run_id: String,
    /// The v2 type name.
    #[serde(rename = "type")]
    pub kind: String,
    /// The payload (always an object).
    pub payload: Value,
}

impl RunEvent {
    /// Reads an event, accepting v1 dotted names.
    pub fn from_json(value: &Value) -> Result<Self, WireError> {
        let obj = Obj::new(value, "", Side::Host)?;
        let kind = obj
            .opt_str("type")?
            .ok_or_else(|| obj.err("type", "is required"))?;
        let payload = match obj.get("payload") {
            None => Value::Object(Map::new()),
            Some(v @ Value::Object(_)) => v.clone(),
            Some(_) => return Err(obj.err("payload", "must be an object")),
        };
        Ok(Self {
            seq: obj.opt_int("seq", 0, u64::MAX)?.unwrap_or(0),
            run_id: obj.opt_str("runId")?.unwrap_or_default(),
            kind: normalize_type(&kind),
            payload,
        })
    }

    /// A payload field as an integer.
    pub fn u64(&self, key: &str) -> Option<u64> {
        self.payload.get(key)?.as_u64()
    }

    /// A payload field as a string.
    pub fn str(&self, key: &str) -> Option<&str> {
        self.payload.get(key)?.as_str()
    }

    /// The error envelope of a `node.failed` event.
    pub fn node_error(&self) -> Option<ErrorEnvelope> {
        if self.kind != kind::NODE_FAILED {
            return None;
        }
        serde_json::from_value(self.payload.get("error")?.clone()).ok()
    }
}
