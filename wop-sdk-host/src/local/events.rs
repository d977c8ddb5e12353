//! The events the local host emits, in one place: the live observer (progress lines) and the
//! payloads of a call's events, buffered for the journal's terminal transaction.

use super::retry::{Signal, Unmetered};
use serde_json::{Value, json};
use std::sync::Arc;
use wop_sdk::host::RunId;
use wop_sdk::wire::{
    Event, FinishReason, NlToFormatEngaged, ProviderUsage, Refusal, RetryAttempted, RetryExhausted,
    RunEvent, Truncated, Usage,
};

/// This host's event for a provider request that reached the provider and has no
/// `provider.usage` (a reply that withheld its usage or its input tokens, or an error status), a
/// vendor event under this SDK's own org (RFC 0171 §A.1, `<org>.<name>`, as its error codes):
/// with `provider.usage` it makes one event per provider request, so the events count them.
/// `provider.usage` requires `inputTokens` and `outputTokens` as the provider reported them, and
/// RFC 0248 leaves a request without usage to the host ("a `usage: false` attempt emits no
/// `provider.usage`"): this host says so in an event of its own rather than write a 0.
pub const PROVIDER_REQUEST: &str = "wop-sdk.provider-request";

/// `output.chunk` (OpenWOP v2 `outputChunk`): streamed output of an AI call.
pub(crate) const OUTPUT_CHUNK: &str = "output.chunk";

/// Receives every event as it happens (before its journal write): for progress lines.
pub type Observer = Arc<dyn Fn(&RunEvent) + Send + Sync>;

/// Shows events to the observer, if there is one.
pub(crate) struct Live(pub(crate) Option<Observer>);

impl Live {
    pub(crate) fn observe(&self, run: &RunId, event: &Event) {
        if let Some(o) = &self.0 {
            // Seen live, before the journal gives it its place in the log.
            o(&RunEvent::now(run.as_str(), 0, event.clone()));
        }
    }
}

/// The events of one call, typed as they are made: shown live as they happen, kept for the
/// journal's terminal transaction.
pub(crate) struct CallEvents<'a> {
    live: &'a Live,
    run: &'a RunId,
    /// The call's node and its host's provider name, shared with the call: `provider.usage`
    /// holds them by reference count.
    node_id: &'a Arc<str>,
    provider: &'a Arc<str>,
    /// The call's index within its node execution (`x-callIndex` of its chunks).
    call_index: u32,
    pub(crate) buffer: Vec<Event>,
}

impl<'a> CallEvents<'a> {
    pub(crate) fn new(
        live: &'a Live,
        run: &'a RunId,
        node_id: &'a Arc<str>,
        provider: &'a Arc<str>,
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

    fn emit(&mut self, event: Event) {
        self.live.observe(self.run, &event);
        self.buffer.push(event);
    }

    /// The node's id, shared with the call's key.
    fn node(&self) -> Arc<str> {
        Arc::clone(self.node_id)
    }

    /// `provider.usage`: one per provider request whose reply reported both token counts (the
    /// v2 payload requires both, as the provider reported them).
    pub(crate) fn usage(&mut self, model: String, usage: &Usage, output_tokens: u64) {
        let Some(input_tokens) = usage.input_tokens else {
            return self.unmetered(
                Some(model),
                0,
                None,
                Some(output_tokens),
                Unmetered::InputUnknown,
            );
        };
        self.emit(Event::ProviderUsage(ProviderUsage {
            provider: Arc::clone(self.provider),
            model,
            input_tokens,
            output_tokens,
            total_tokens: usage.total_tokens,
            node_id: Some(self.node()),
        }));
    }

    /// [`PROVIDER_REQUEST`]: a provider request that reached the provider and has no
    /// `provider.usage`, because its usage is not wholly known. Only the figures the provider
    /// reported are written; `usage` says why the rest are missing (`withheld`,
    /// `input-tokens-unknown`, `error-status`).
    pub(crate) fn unmetered(
        &mut self,
        model: Option<String>,
        attempt: u32,
        input_tokens: Option<u64>,
        output_tokens: Option<u64>,
        why: Unmetered,
    ) {
        let mut p = json!({
            "nodeId": self.node_id,
            "provider": self.provider,
            "usage": why.as_str(),
        });
        if let Some(m) = model.filter(|m| !m.is_empty()) {
            p["model"] = json!(m);
        }
        if attempt > 0 {
            p["attempt"] = json!(attempt);
        }
        if let Some(n) = input_tokens {
            p["inputTokens"] = json!(n);
        }
        if let Some(n) = output_tokens {
            p["outputTokens"] = json!(n);
        }
        self.emit(Event::Other {
            kind: PROVIDER_REQUEST.to_owned(),
            payload: p,
        });
    }

    /// `envelope.truncated`: the reply stopped at the request's token budget (`max_tokens`).
    pub(crate) fn truncated(&mut self, model: String, output_tokens: Option<u64>) {
        self.emit(Event::Truncated(Truncated {
            node_id: self.node(),
            provider: String::from(&**self.provider),
            model,
            stop_reason: "max_tokens".to_owned(),
            output_token_count: output_tokens,
        }));
    }

    /// `envelope.refusal` (never the refusal text).
    pub(crate) fn refusal(&mut self, model: String) {
        self.emit(Event::Refusal(Refusal {
            node_id: self.node(),
            provider: String::from(&**self.provider),
            model,
        }));
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
            "nodeId": self.node_id,
            "runId": self.run.as_str(),
            "chunk": text,
            "isLast": false,
            "x-attempt": attempt,
            "x-callIndex": self.call_index,
        });
        self.emit(chunk_event(p));
    }

    /// The closing `output.chunk` of a streamed call (`isLast: true`, empty text): for a
    /// completed call with the final attempt's finish reason and model in `meta`; without
    /// `meta` for a failed one.
    pub(crate) fn last_chunk(&mut self, completed: Option<(FinishReason, Option<&str>)>) {
        let mut p = json!({
            "nodeId": self.node_id,
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
        self.emit(chunk_event(p));
    }

    /// What the retry loop announces.
    pub(crate) fn signal(&mut self, signal: Signal) {
        self.emit(match signal {
            Signal::RetryAttempted { attempt, reason } => Event::RetryAttempted(RetryAttempted {
                node_id: self.node(),
                attempt,
                reason: reason.to_owned(),
                previous_error: None,
            }),
            Signal::RetryExhausted { total, reason } => Event::RetryExhausted(RetryExhausted {
                node_id: self.node(),
                total_attempts: total,
                final_reason: reason.to_owned(),
                final_error: None,
            }),
            Signal::FallbackEngaged => Event::NlToFormatEngaged(NlToFormatEngaged {
                node_id: self.node(),
                original_envelope_type: "structured".to_owned(),
                fallback_calls: Some(1),
            }),
            Signal::Usage {
                model,
                usage,
                output_tokens,
            } => return self.usage(model, &usage, output_tokens),
            Signal::Unmetered {
                model,
                attempt,
                input_tokens,
                output_tokens,
                why,
            } => return self.unmetered(model, attempt, input_tokens, output_tokens, why),
            Signal::Truncated {
                model,
                output_tokens,
            } => return self.truncated(model, output_tokens),
            Signal::Refusal { model } => return self.refusal(model),
        });
    }
}

/// `output.chunk`: not one of the types this SDK reads back typed; kept with its payload.
fn chunk_event(payload: Value) -> Event {
    Event::Other {
        kind: OUTPUT_CHUNK.to_owned(),
        payload,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::local::retry::Miss;

    /// Every event the local host builds keeps the v2 payload rules: the journal refuses a call's
    /// terminal write over one that does not, and the outcome would be lost.
    #[test]
    fn every_built_event_keeps_the_payload_rules() {
        let live = Live(None);
        let run = RunId::new("local/r");
        let (node, provider) = (Arc::from("main"), Arc::from("mock"));
        let mut events = CallEvents::new(&live, &run, &node, &provider, 0);
        let usage = Usage {
            input_tokens: Some(3),
            output_tokens: Some(4),
            total_tokens: Some(7),
        };
        events.usage("m".into(), &usage, 4);
        events.truncated("m".into(), Some(4));
        events.truncated("m".into(), None);
        events.refusal("m".into());
        events.chunk("text", 1);
        events.last_chunk(Some((FinishReason::Stop, Some("m"))));
        events.last_chunk(None);
        for miss in [
            Miss::Truncation,
            Miss::Parse(String::new()),
            Miss::Schema(String::new()),
            Miss::Provider(String::new()),
        ] {
            let reason = miss.reason();
            events.signal(Signal::RetryAttempted { attempt: 2, reason });
            events.signal(Signal::RetryExhausted { total: 3, reason });
        }
        events.signal(Signal::FallbackEngaged);
        events.unmetered(None, 2, None, None, Unmetered::ErrorStatus);
        assert_eq!(events.buffer.len(), 17);
        for event in &events.buffer {
            assert_eq!(event.check(), Ok(()), "{event:?}");
        }
    }
}
