//! The events the local host emits, in one place: the live observer (progress lines) and the
//! payloads of a call's events, buffered for the journal's terminal transaction.

use super::retry::Signal;
use crate::host::RunId;
use crate::wire::{RunEvent, Usage, kind};
use serde_json::{Value, json};
use std::sync::Arc;

/// Receives every event as it happens (before its journal write): for progress lines.
pub type Observer = Arc<dyn Fn(&RunEvent) + Send + Sync>;

/// Shows events to the observer, if there is one.
pub(crate) struct Live(pub(crate) Option<Observer>);

impl Live {
    pub(crate) fn observe(&self, run: &RunId, kind: &str, payload: &Value) {
        if let Some(o) = &self.0
            && let Ok(event) = crate::wire::Event::from_emitted(kind, payload)
        {
            // Seen live, before the journal gives it its place in the log.
            o(&RunEvent::now(run.as_str(), 0, event));
        }
    }
}

/// The events of one call: shown live as they happen, kept for the journal.
pub(crate) struct CallEvents<'a> {
    live: &'a Live,
    run: &'a RunId,
    node_id: &'a str,
    provider: &'a str,
    pub(crate) buffer: Vec<(String, Value)>,
}

impl<'a> CallEvents<'a> {
    pub(crate) fn new(live: &'a Live, run: &'a RunId, node_id: &'a str, provider: &'a str) -> Self {
        Self {
            live,
            run,
            node_id,
            provider,
            buffer: Vec::new(),
        }
    }

    fn emit(&mut self, kind: &str, mut payload: Value) {
        if let Value::Object(m) = &mut payload {
            m.insert("nodeId".into(), Value::String(self.node_id.to_owned()));
        }
        self.live.observe(self.run, kind, &payload);
        self.buffer.push((kind.to_owned(), payload));
    }

    /// `provider.usage`: exactly one per provider request that reported usage.
    pub(crate) fn usage(&mut self, model: &str, usage: &Usage, output_tokens: u64) {
        let mut p = json!({
            "provider": self.provider,
            "model": model,
            "inputTokens": usage.input_tokens.unwrap_or(0),
            "outputTokens": output_tokens,
        });
        if let Some(total) = usage.total_tokens {
            p["totalTokens"] = json!(total);
        }
        self.emit(kind::PROVIDER_USAGE, p);
    }

    /// `envelope.truncated`.
    pub(crate) fn truncated(&mut self, model: &str, output_tokens: Option<u64>) {
        let mut p = json!({"provider": self.provider, "model": model, "stopReason": "length"});
        if let Some(o) = output_tokens {
            p["outputTokenCount"] = json!(o);
        }
        self.emit(kind::TRUNCATED, p);
    }

    /// `envelope.refusal` (never the refusal text).
    pub(crate) fn refusal(&mut self, model: &str) {
        let p = json!({"provider": self.provider, "model": model});
        self.emit(kind::REFUSAL, p);
    }

    /// What the retry loop announces.
    pub(crate) fn signal(&mut self, signal: Signal) {
        match signal {
            Signal::RetryAttempted { attempt, reason } => self.emit(
                kind::RETRY_ATTEMPTED,
                json!({"attempt": attempt, "reason": reason}),
            ),
            Signal::RetryExhausted { total, reason } => self.emit(
                kind::RETRY_EXHAUSTED,
                json!({"totalAttempts": total, "finalReason": reason}),
            ),
            Signal::FallbackEngaged => self.emit(
                kind::NL_TO_FORMAT_ENGAGED,
                json!({"originalEnvelopeType": "structured", "fallbackCalls": 1}),
            ),
        }
    }
}
