//! The events the local host emits, in one place: the live observer (progress lines) and the
//! payloads of a call's events, buffered for the journal's terminal transaction.

use super::retry::Signal;
use crate::host::RunId;
use crate::wire::{FinishReason, RunEvent, Usage, kind};
use serde_json::{Value, json};
use std::sync::Arc;

/// `output.chunk` (OpenWOP v2 `outputChunk`): streamed output of an AI call.
pub(crate) const OUTPUT_CHUNK: &str = "output.chunk";

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
    /// The call's index within its node execution (`x-callIndex` of its chunks).
    call_index: u32,
    pub(crate) buffer: Vec<(String, Value)>,
}

impl<'a> CallEvents<'a> {
    pub(crate) fn new(
        live: &'a Live,
        run: &'a RunId,
        node_id: &'a str,
        provider: &'a str,
        call_index: u32,
    ) -> Self {
        Self {
            live,
            run,
            node_id,
            provider,
            call_index,
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

    /// `output.chunk` for a piece of streamed text of provider request `attempt`. The payload
    /// is the schema's (`nodeId`, `runId`, `chunk`, `isLast`) and two keys under its `x-`
    /// extension rule: `x-attempt` (chunks of a discarded attempt are told apart from the
    /// final one's by it; an `envelope.retry-attempted` comes between) and `x-callIndex` (the
    /// call within the node execution).
    pub(crate) fn chunk(&mut self, text: &str, attempt: u32) {
        if text.is_empty() {
            return;
        }
        let p = json!({
            "runId": self.run.as_str(),
            "chunk": text,
            "isLast": false,
            "x-attempt": attempt,
            "x-callIndex": self.call_index,
        });
        self.emit(OUTPUT_CHUNK, p);
    }

    /// The closing `output.chunk` of a streamed call (`isLast: true`, empty text): for a
    /// completed call with the final attempt's finish reason and model in `meta`; without
    /// `meta` for a failed one.
    pub(crate) fn last_chunk(&mut self, completed: Option<(FinishReason, Option<&str>)>) {
        let mut p = json!({
            "runId": self.run.as_str(),
            "chunk": "",
            "isLast": true,
            "x-callIndex": self.call_index,
        });
        if let Some((finish, model)) = completed {
            // The schema's `meta.finishReason` spells them the v1 way.
            let reason = match finish {
                FinishReason::Stop => Some("stop"),
                FinishReason::Length => Some("length"),
                FinishReason::ContentFilter => Some("content_filter"),
                FinishReason::ToolCall => Some("tool_calls"),
                FinishReason::Other => None,
            };
            let mut meta = serde_json::Map::new();
            if let Some(r) = reason {
                meta.insert("finishReason".into(), json!(r));
            }
            if let Some(m) = model {
                meta.insert("model".into(), json!(m));
            }
            p["meta"] = Value::Object(meta);
        } else {
            p["x-failed"] = json!(true);
        }
        self.emit(OUTPUT_CHUNK, p);
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
