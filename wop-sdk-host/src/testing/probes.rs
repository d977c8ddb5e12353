//! Probes: a [`Provider`] and a [`Host`] that record which of their methods were reached, and
//! call every method of a provider or a host once. A wrapper's test exercises the wrapper and
//! checks that the probe under it saw every method.

use crate::provider::{Provider, ProviderError, ProviderReply, ProviderRequest};
use std::sync::{Arc, Mutex, PoisonError};
use wop_sdk::host::{AttemptKey, BoxFuture, FailureToken, Host, HostFailure, RunId, StreamSink};
use wop_sdk::wire::{
    CallAiRequest, CallAiResult, CapabilityDocument, ErrorCode, ErrorEnvelope, Event, Message,
    NodeStarted, Role, RunEvent,
};

fn push(log: &Mutex<Vec<&'static str>>, method: &'static str) {
    log.lock()
        .unwrap_or_else(PoisonError::into_inner)
        .push(method);
}

fn read(log: &Mutex<Vec<&'static str>>) -> Vec<&'static str> {
    log.lock().unwrap_or_else(PoisonError::into_inner).clone()
}

/// A provider that records each method reached, in order, and answers `"probe"`. It serves
/// its own name and any name starting with it, so that a wrapper that compares names instead
/// of asking the inner provider is caught.
#[derive(Debug)]
pub struct ProviderProbe {
    name: String,
    reached: Mutex<Vec<&'static str>>,
}

impl ProviderProbe {
    /// Every method of [`Provider`], in the order [`ProviderProbe::exercise`] calls them.
    pub const METHODS: [&'static str; 4] = ["name", "serves", "generate", "generate_stream"];

    /// A probe named `name`.
    pub fn new(name: impl Into<String>) -> Self {
        Self {
            name: name.into(),
            reached: Mutex::new(Vec::new()),
        }
    }

    /// The methods reached so far, in order.
    pub fn reached(&self) -> Vec<&'static str> {
        read(&self.reached)
    }

    /// Calls every method of `provider` once, in the order of [`ProviderProbe::METHODS`].
    pub async fn exercise(provider: &dyn Provider) {
        let alias = format!("{}-alias", provider.name());
        let _ = provider.serves(&alias);
        let _ = provider.generate(request()).await;
        let _ = provider.generate_stream(request(), &mut |_| {}).await;
    }
}

fn request() -> ProviderRequest {
    ProviderRequest {
        run_id: RunId::new("probe-run"),
        node_id: "probe-node".into(),
        provider: "probe".into(),
        model: "probe-model".into(),
        system_prompt: None,
        messages: Arc::new([Message {
            role: Role::User,
            content: "probe".into(),
        }]),
        max_tokens: 16,
        temperature: None,
        stop_sequences: None,
        response_schema: None,
        mode: None,
        attempt: 1,
    }
}

impl Provider for ProviderProbe {
    fn name(&self) -> &str {
        push(&self.reached, "name");
        &self.name
    }

    fn serves(&self, name: &str) -> bool {
        push(&self.reached, "serves");
        name.starts_with(self.name.as_str())
    }

    fn generate<'a>(
        &'a self,
        _request: ProviderRequest,
    ) -> BoxFuture<'a, Result<ProviderReply, ProviderError>> {
        push(&self.reached, "generate");
        Box::pin(async { Ok(super::reply("probe")) })
    }

    fn generate_stream<'a>(
        &'a self,
        _request: ProviderRequest,
        on_chunk: &'a mut (dyn FnMut(&str) + Send),
    ) -> BoxFuture<'a, Result<ProviderReply, ProviderError>> {
        push(&self.reached, "generate_stream");
        on_chunk("probe");
        Box::pin(async { Ok(super::reply("probe")) })
    }
}

/// A host that records each method reached, in order. Its calls complete with the text
/// `"probe"`; it advertises the default capability document.
#[derive(Debug, Default)]
pub struct HostProbe {
    reached: Mutex<Vec<&'static str>>,
}

impl HostProbe {
    /// Every method of [`Host`], in the order [`HostProbe::exercise`] calls them.
    pub const METHODS: [&'static str; 8] = [
        "capability_document",
        "call_ai",
        "call_ai_json",
        "refuse",
        "call_ai_stream",
        "settle_ai_failure",
        "record_event",
        "events",
    ];

    /// The methods reached so far, in order.
    pub fn reached(&self) -> Vec<&'static str> {
        read(&self.reached)
    }

    /// Calls every method of `host` once, in the order of [`HostProbe::METHODS`].
    pub async fn exercise(host: &dyn Host) {
        let key = AttemptKey {
            run_id: RunId::new("probe-run"),
            node_id: "probe-node".into(),
            call_index: 0,
        };
        let request = CallAiRequest {
            messages: Arc::new([Message {
                role: Role::User,
                content: "probe".into(),
            }]),
            ..CallAiRequest::default()
        };
        let _ = host.capability_document();
        let _ = host.call_ai(&key, &request).await;
        let _ = host
            .call_ai_json(&key, &serde_json::json!({"prompt": "probe"}))
            .await;
        let _ = host.refuse(
            &key,
            ErrorEnvelope::new(ErrorCode::ValidationError, "probe"),
        );
        let _ = host
            .call_ai_stream(&key, &request, &StreamSink::new())
            .await;
        let _ = host
            .settle_ai_failure(&key.run_id, FailureToken::new(0))
            .await;
        host.record_event(
            &key.run_id,
            Event::NodeStarted(NodeStarted {
                node_id: "probe-node".into(),
                type_id: "community.probe.node".into(),
                attempt: None,
            }),
        )
        .await;
        let _ = host.events(&key.run_id).await;
    }

    fn answer(&self, method: &'static str) -> BoxFuture<'_, Result<CallAiResult, HostFailure>> {
        push(&self.reached, method);
        Box::pin(async {
            Ok(CallAiResult {
                content: Some("probe".into()),
                ..CallAiResult::default()
            })
        })
    }
}

impl Host for HostProbe {
    fn capability_document(&self) -> Arc<CapabilityDocument> {
        push(&self.reached, "capability_document");
        Arc::default()
    }

    fn call_ai<'a>(
        &'a self,
        _key: &'a AttemptKey,
        _request: &'a CallAiRequest,
    ) -> BoxFuture<'a, Result<CallAiResult, HostFailure>> {
        self.answer("call_ai")
    }

    fn call_ai_json<'a>(
        &'a self,
        _key: &'a AttemptKey,
        _request: &'a serde_json::Value,
    ) -> BoxFuture<'a, Result<CallAiResult, HostFailure>> {
        self.answer("call_ai_json")
    }

    fn refuse(&self, _key: &AttemptKey, public: ErrorEnvelope) -> HostFailure {
        push(&self.reached, "refuse");
        HostFailure {
            public,
            token: FailureToken::new(0),
        }
    }

    fn call_ai_stream<'a>(
        &'a self,
        _key: &'a AttemptKey,
        _request: &'a CallAiRequest,
        _sink: &'a StreamSink,
    ) -> BoxFuture<'a, Result<CallAiResult, HostFailure>> {
        self.answer("call_ai_stream")
    }

    fn settle_ai_failure<'a>(
        &'a self,
        _run: &'a RunId,
        _failure: FailureToken,
    ) -> BoxFuture<'a, Result<(), ErrorEnvelope>> {
        push(&self.reached, "settle_ai_failure");
        Box::pin(async { Ok(()) })
    }

    fn record_event<'a>(&'a self, _run: &'a RunId, _event: Event) -> BoxFuture<'a, ()> {
        push(&self.reached, "record_event");
        Box::pin(async {})
    }

    fn events<'a>(&'a self, _run: &'a RunId) -> BoxFuture<'a, Vec<RunEvent>> {
        push(&self.reached, "events");
        Box::pin(async { Vec::new() })
    }
}
