//! [`JsHost`]: `wop_sdk::Host` over the `ctx` of a host that loads JavaScript packs.
//!
//! This file holds the host for one node execution: the call through the JS edge, and its books
//! (local attempt ids, open failures, the runtime's events). `document` says which kind of host
//! it is and the document the runtime negotiates with; `request` writes the request the host
//! gets.

mod answer;
mod config;
mod document;
#[cfg(test)]
mod equivalence;
mod request;
#[cfg(test)]
mod tests;
mod typed;

pub use config::NodeConfig;
pub(crate) use document::snapshot_document;
pub use document::{HostKind, OPENWOP_APP_SNAPSHOT, host_document};
pub use request::HostRequest;

use crate::errors::{map_host_error, with_host_message, with_mock_seam_hint};
use serde_json::{Value, json};
use std::collections::BTreeSet;
use std::fmt;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use wop_sdk::RunId;
use wop_sdk::host::{AttemptKey, Host};
use wop_sdk::host::{BoxFuture, FailureToken, HostFailure};
use wop_sdk::wire::{
    CallAiRequest, CallAiResult, CapabilityDocument, ErrorCode, ErrorEnvelope, Event, RunEvent,
};

/// One `ctx.callAI` call, as the generated `index.mjs` makes it: the request in (JSON text, its
/// schema apart, [`HostRequest`]), the answer as JSON text out: `{"result": <the host's
/// result>}` or `{"error": {"code"?, "message", "details"?, "thrown"}}` (`thrown`: `error` for
/// an `Error`, `value` for anything else thrown, `missing` when the host offers no
/// `ctx.callAI`; a call that does not settle is ended with its node, at the node's timeout).
/// `Err` is a failure of
/// the bridge itself (the call could not be made or its answer not read).
pub trait JsCallAi: Send + Sync {
    /// Makes the call.
    fn call(&self, request: HostRequest) -> BoxFuture<'_, Result<String, String>>;
}

/// What one node execution's host keeps: the attempt ids it made, its open failures, the
/// runtime's events.
#[derive(Default)]
struct Books {
    next_local: u64,
    /// Local attempt ids handed out in results (a plain host only).
    issued: BTreeSet<String>,
    /// Failures handed to the runtime and not yet settled. Their causes are not kept: the host
    /// itself threw them and has its own diagnostics.
    open_failures: BTreeSet<u64>,
    next_failure: u64,
    /// What the runtime recorded: (run, kind, payload).
    events: Vec<(String, Event)>,
}

/// `wop_sdk::Host` over a JavaScript host's `ctx`, for one node execution.
///
/// Made by [`crate::run_node`] for each execution. Events the runtime records (`node.*`) stay
/// in this value: the JavaScript host records its own node events.
pub struct JsHost {
    call: Arc<dyn JsCallAi>,
    document: Arc<CapabilityDocument>,
    kind: HostKind,
    config: NodeConfig,
    books: Mutex<Books>,
}

impl fmt::Debug for JsHost {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("JsHost")
            .field("kind", &self.kind)
            .field("config", &self.config)
            .finish_non_exhaustive()
    }
}

impl JsHost {
    /// A host for one node execution: `document` is the host's capability document (adjusted
    /// with [`host_document`]).
    pub fn new(call: Arc<dyn JsCallAi>, document: CapabilityDocument, config: NodeConfig) -> Self {
        let document = host_document(document);
        Self {
            kind: HostKind::of(&document),
            call,
            document: Arc::new(document),
            config,
            books: Mutex::new(Books::default()),
        }
    }

    /// The kind of host.
    pub fn kind(&self) -> HostKind {
        self.kind
    }

    fn books(&self) -> MutexGuard<'_, Books> {
        self.books.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn fail(&self, public: ErrorEnvelope) -> HostFailure {
        let mut books = self.books();
        books.next_failure += 1;
        let id = books.next_failure;
        books.open_failures.insert(id);
        HostFailure {
            public,
            token: FailureToken::new(id),
        }
    }

    /// The attempt id the bridge makes for a result on a plain host, and keeps as issued.
    fn local_attempt_id(&self, key: &AttemptKey) -> String {
        let mut books = self.books();
        books.next_local += 1;
        let id = format!("local:{key}:{}", books.next_local);
        books.issued.insert(id.clone());
        id
    }

    /// Makes the call through the JS edge; the answer's JSON text.
    async fn send(&self, request: HostRequest) -> Result<String, HostFailure> {
        self.call.call(request).await.map_err(|e| {
            self.fail(ErrorEnvelope::new(
                ErrorCode::UpstreamUnavailable,
                format!("the bridge could not call the host's ctx.callAI: {e}"),
            ))
        })
    }

    /// The answer read as a JSON value: the host's result (on a plain host with the bridge's
    /// attempt id), or the failure the host's error maps to. `provider` is the call's.
    fn read(
        &self,
        key: &AttemptKey,
        answer: &str,
        provider: Option<&str>,
    ) -> Result<Value, HostFailure> {
        let mut answer: Value = match serde_json::from_str(answer) {
            Ok(v) => v,
            Err(e) => {
                let public = ErrorEnvelope::new(
                    ErrorCode::ProtocolError,
                    format!("the answer of the host's ctx.callAI could not be read: {e}"),
                );
                return Err(self.fail(public));
            }
        };
        if let Some(error) = answer.get("error") {
            let code = error.get("code").and_then(Value::as_str);
            let mut public = map_host_error(code, error.get("details"));
            if let Some(thrown) = error.get("thrown").and_then(Value::as_str) {
                public = public.with_detail("thrown", thrown);
            }
            // The host's own message is what tells the user what to fix ("No credential
            // available for provider …"): kept, bounded, keys cut out.
            if let Some(message) = error.get("message").and_then(Value::as_str) {
                public = with_host_message(public, code, message);
            }
            let provider = provider.or(self.config.provider.as_deref());
            if code == Some("envelope_invalid") && provider == Some("mock") {
                public = with_mock_seam_hint(public);
            }
            return Err(self.fail(public));
        }
        let mut result = answer
            .as_object_mut()
            .and_then(|a| a.remove("result"))
            .unwrap_or(Value::Null);
        if self.kind == HostKind::Plain
            && let Value::Object(map) = &mut result
        {
            map.insert("attemptId".to_owned(), json!(self.local_attempt_id(key)));
        }
        Ok(result)
    }

    /// One call, JSON in and out: the request as a JSON value (written as the host gets it, its
    /// schema in place), the result as one (on a plain host with the bridge's attempt id). What
    /// [`Host::call_ai`] does with the runtime's typed request, for any JSON.
    pub fn call_json<'a>(
        &'a self,
        key: &'a AttemptKey,
        request: &'a Value,
    ) -> BoxFuture<'a, Result<Value, HostFailure>> {
        Box::pin(async move {
            let issued = |id: &str| self.books().issued.contains(id);
            let text = match request::host_request(request, self.kind, &self.config, issued) {
                Ok(text) => text,
                Err(public) => return Err(self.fail(public)),
            };
            let answer = self.send(HostRequest { text, schema: None }).await?;
            let provider = request.get("provider").and_then(Value::as_str);
            self.read(key, &answer, provider)
        })
    }
}

impl Host for JsHost {
    fn capability_document(&self) -> Arc<CapabilityDocument> {
        Arc::clone(&self.document)
    }

    fn call_ai<'a>(
        &'a self,
        key: &'a AttemptKey,
        request: &'a CallAiRequest,
    ) -> BoxFuture<'a, Result<CallAiResult, HostFailure>> {
        Box::pin(async move {
            // The request written straight from the runtime's, its schema apart (the same text
            // as `call_json` of its JSON value).
            let issued = |id: &str| self.books().issued.contains(id);
            let outgoing = match typed::typed_request(request, self.kind, &self.config, issued) {
                Ok(outgoing) => outgoing,
                Err(public) => return Err(self.fail(public)),
            };
            let answer = self.send(outgoing).await?;
            let structured = request.is_structured();
            // A plain result read straight; anything else as a JSON value, which names what is
            // wrong. Either way the same rules hold it (`check`).
            let result = match answer::result_of(&answer) {
                Some(mut result) => {
                    if self.kind == HostKind::Plain {
                        result.attempt_id = Some(self.local_attempt_id(key));
                    }
                    result.check(structured).map(|()| result)
                }
                None => {
                    let value = self.read(key, &answer, request.provider.as_deref())?;
                    CallAiResult::from_json(&value, structured)
                }
            };
            result.map_err(|e| self.fail(e.to_envelope()))
        })
    }

    fn settle_ai_failure<'a>(
        &'a self,
        run: &'a RunId,
        failure: FailureToken,
    ) -> BoxFuture<'a, Result<(), ErrorEnvelope>> {
        let _ = run; // one JsHost serves one node execution of one run
        Box::pin(async move {
            if self.books().open_failures.remove(&failure.get()) {
                Ok(())
            } else {
                Err(ErrorEnvelope::validation(
                    "failure",
                    "is not an unsettled failure of this node execution",
                ))
            }
        })
    }

    fn record_event<'a>(&'a self, run: &'a RunId, event: Event) -> BoxFuture<'a, ()> {
        Box::pin(async move {
            // Kept as recorded; given their v2 wrapper only when read (nothing reads them on
            // the way: the JavaScript host records its own node events).
            if event.check().is_ok() {
                self.books().events.push((run.as_str().to_owned(), event));
            }
        })
    }

    fn events<'a>(&'a self, run: &'a RunId) -> BoxFuture<'a, Vec<RunEvent>> {
        Box::pin(async move {
            self.books()
                .events
                .iter()
                .filter(|(r, _)| r == run.as_str())
                .enumerate()
                .map(|(i, (_, event))| RunEvent::now(run.as_str(), i as u64, event.clone()))
                .collect()
        })
    }
}
