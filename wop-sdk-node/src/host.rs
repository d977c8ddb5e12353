//! [`JsHost`]: `wop_sdk::Host` over the `ctx` of a host that loads JavaScript packs.

use crate::errors::map_host_error;
use serde::ser::{Serialize, SerializeMap, Serializer};
use serde_json::{Map, Value, json};
use std::collections::BTreeSet;
use std::fmt;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use wop_sdk::RunId;
use wop_sdk::host::{AttemptKey, Host};
use wop_sdk::host::{BoxFuture, FailureToken, HostFailure};
use wop_sdk::wire::{
    CallAiRequest, CallAiResult, CapabilityDocument, ErrorCode, ErrorEnvelope, Event, RunEvent,
};

/// The capability document assumed when the environment names none: the public openwop-app
/// snapshot (`routes/discovery.ts`): AI providers, the RFC 0032 reliability loop with a ceiling
/// of 3 requests, truncation doubling and the natural-language fallback, and no
/// `aiProviders.callAccounting`.
pub const OPENWOP_APP_SNAPSHOT: &str = r#"{
  "aiProviders": {"providers": ["mock"]},
  "envelopes": {"reliability": {
    "maxRetryAttempts": 3,
    "events": ["envelope.retry.attempted", "envelope.retry.exhausted", "envelope.refusal",
               "envelope.truncated", "envelope.recovery.applied", "envelope.nlToFormat.engaged"],
    "completion": {"distinguishesTruncation": true, "truncationBudgetMultiplier": 2}}},
  "providerUsage": {}
}"#;

/// Which kind of host the bridge runs on (see the crate docs for what differs).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum HostKind {
    /// The host advertises `aiProviders.callAccounting` (RFC 0248): it reports `attempts`, makes
    /// the attempt ids and checks lineage.
    Accounting,
    /// The host advertises no `callAccounting`: the bridge makes local attempt ids, checks
    /// lineage itself and never sends `retry`.
    Plain,
}

impl HostKind {
    /// The kind a capability document advertises.
    pub fn of(document: &CapabilityDocument) -> Self {
        if document.call_accounting.is_some() {
            Self::Accounting
        } else {
            Self::Plain
        }
    }
}

/// The document the runtime negotiates with, from the host's own.
///
/// On a host without `callAccounting` that advertises the natural-language fallback
/// (`envelope.nlToFormat.engaged`, or the spec's `envelope.nl-to-format-engaged`), the fallback
/// is one more provider request after the ceiling (openwop-app: 3 requests, then the fallback),
/// so the ceiling the runtime budgets with is `maxRetryAttempts + 1`. A host with
/// `callAccounting` counts the fallback inside its ceiling (SPEC.md), so its document is
/// unchanged.
pub fn host_document(mut document: CapabilityDocument) -> CapabilityDocument {
    if document.call_accounting.is_none()
        && let Some(rel) = &mut document.reliability
        && rel.events.iter().any(|e| {
            let e = e.to_ascii_lowercase();
            e.contains("nltoformat") || e.contains("nl-to-format")
        })
    {
        rel.max_retry_attempts = rel.max_retry_attempts.saturating_add(1);
    }
    document
}

/// One `ctx.callAI` call, as the generated `index.mjs` makes it: the request as JSON text in,
/// the answer as JSON text out: `{"result": <the host's result>}` or `{"error": {"code"?,
/// "message", "details"?, "thrown"}}` (`thrown`: `error` for an `Error`, `value` for anything
/// else thrown, `timeout` for a call that did not settle within the node's timeout, `missing`
/// when the host offers no `ctx.callAI`). `Err` is a failure of the bridge itself (the call
/// could not be made or its answer not read).
pub trait JsCallAi: Send + Sync {
    /// Makes the call.
    fn call(&self, request: String) -> BoxFuture<'_, Result<String, String>>;
}

/// The node's configuration the bridge reads, and the pack's defaults.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct NodeConfig {
    /// `ctx.config.provider`, else the pack's default.
    pub provider: Option<String>,
    /// `ctx.config.model`, else the pack's default.
    pub model: Option<String>,
}

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

/// `wop_sdk::Host` over a JavaScript host's `ctx`, for one node execution.
///
/// Made by [`crate::run_node`] for each execution. Events the runtime records (`node.*`) stay
/// in this value: the JavaScript host records its own node events.
pub struct JsHost {
    call: Arc<dyn JsCallAi>,
    document: CapabilityDocument,
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
            document,
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

    /// The request the host is sent, as JSON text: provider and model filled in, and on a
    /// plain host the lineage checked and left out, and no `retry`. Written straight from the
    /// runtime's value, without a copy of it.
    fn prepare(&self, request: &Value) -> Result<String, ErrorEnvelope> {
        let Value::Object(request) = request else {
            return Err(ErrorEnvelope::validation(
                "request",
                "a ctx.callAI request must be a JSON object",
            ));
        };
        let mut filled: [(&str, Option<&str>); 2] = [("provider", None), ("model", None)];
        for (key, fill) in &mut filled {
            let default = if *key == "provider" {
                &self.config.provider
            } else {
                &self.config.model
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
        let plain = self.kind == HostKind::Plain;
        if plain {
            match (request.get("retryOfAttemptId"), request.get("retryReason")) {
                (None, None) => {}
                (Some(Value::String(id)), Some(_)) => {
                    if !self.books().issued.contains(id) {
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

    /// One call, JSON in and out: the single place where the typed `Host` meets the JS edge
    /// (`Host::call_ai` is this with the request's JSON, the answer read as a `CallAiResult`).
    pub fn call_json<'a>(
        &'a self,
        key: &'a AttemptKey,
        request: &'a Value,
    ) -> BoxFuture<'a, Result<Value, HostFailure>> {
        Box::pin(async move {
            let text = match self.prepare(request) {
                Ok(text) => text,
                Err(public) => return Err(self.fail(public)),
            };
            let answer = match self.call.call(text).await {
                Ok(answer) => answer,
                Err(e) => {
                    let public = ErrorEnvelope::new(
                        ErrorCode::UpstreamUnavailable,
                        format!("the bridge could not call the host's ctx.callAI: {e}"),
                    );
                    return Err(self.fail(public));
                }
            };
            let mut answer: Value = match serde_json::from_str(&answer) {
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
                // The host's message may hold provider diagnostics: it stays out of the envelope.
                return Err(self.fail(public));
            }
            let mut result = answer
                .as_object_mut()
                .and_then(|a| a.remove("result"))
                .unwrap_or(Value::Null);
            if self.kind == HostKind::Plain
                && let Value::Object(map) = &mut result
            {
                let id = {
                    let mut books = self.books();
                    books.next_local += 1;
                    let id = format!("local:{key}:{}", books.next_local);
                    books.issued.insert(id.clone());
                    id
                };
                map.insert("attemptId".to_owned(), json!(id));
            }
            Ok(result)
        })
    }
}

impl Host for JsHost {
    fn capability_document(&self) -> CapabilityDocument {
        self.document.clone()
    }

    fn call_ai<'a>(
        &'a self,
        key: &'a AttemptKey,
        request: &'a CallAiRequest,
    ) -> BoxFuture<'a, Result<CallAiResult, HostFailure>> {
        Box::pin(async move {
            let value = self.call_json(key, &request.to_json()).await?;
            CallAiResult::from_json(&value, request.is_structured())
                .map_err(|e| self.fail(e.to_envelope()))
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

#[cfg(test)]
mod tests {
    use super::*;

    /// A host `ctx.callAI` that records what it was sent and answers `answer`.
    struct Fake {
        sent: Mutex<Vec<Value>>,
        answer: String,
    }

    impl JsCallAi for Fake {
        fn call(&self, request: String) -> BoxFuture<'_, Result<String, String>> {
            Box::pin(async move {
                let v = serde_json::from_str(&request).map_err(|e| e.to_string())?;
                self.sent
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner)
                    .push(v);
                Ok(self.answer.clone())
            })
        }
    }

    fn host(document: &str, answer: Value, provider: Option<&str>) -> (JsHost, Arc<Fake>) {
        let fake = Arc::new(Fake {
            sent: Mutex::new(Vec::new()),
            answer: answer.to_string(),
        });
        let document =
            CapabilityDocument::from_json(&serde_json::from_str(document).unwrap_or(Value::Null))
                .unwrap_or_else(|e| panic!("document: {e}"));
        let config = NodeConfig {
            provider: provider.map(str::to_owned),
            model: Some("m-1".to_owned()),
        };
        (JsHost::new(fake.clone(), document, config), fake)
    }

    fn key(i: u32) -> AttemptKey {
        AttemptKey {
            run_id: RunId::new("r"),
            node_id: "n".to_owned(),
            call_index: i,
        }
    }

    const RFC_0248: &str = r#"{"aiProviders": {"providers": ["mock"], "callAccounting": {"attempts": true, "retryPolicy": true}}}"#;

    #[tokio::test]
    async fn a_plain_host_gets_no_retry_and_its_results_a_local_attempt_id() {
        let (host, fake) = host(
            OPENWOP_APP_SNAPSHOT,
            json!({"result": {"content": "hi"}}),
            Some("mock"),
        );
        assert_eq!(host.kind(), HostKind::Plain);
        // The ceiling and the fallback after it.
        assert_eq!(
            host.capability_document()
                .reliability
                .map(|r| r.max_retry_attempts),
            Some(4)
        );
        let request = json!({"messages": [], "retry": {"maxAttempts": 1}});
        let result = host.call_json(&key(0), &request).await.expect("a result");
        let id = result["attemptId"]
            .as_str()
            .expect("an attempt id")
            .to_owned();
        assert!(id.starts_with("local:r/n#0:"), "{id}");
        let sent = fake.sent.lock().expect("sent")[0].clone();
        assert_eq!(
            sent,
            json!({"messages": [], "provider": "mock", "model": "m-1"})
        );
        // Lineage: checked by the bridge, then removed.
        let retry =
            json!({"messages": [], "retryOfAttemptId": id, "retryReason": "invalid_output"});
        host.call_json(&key(1), &retry).await.expect("a known id");
        assert!(
            fake.sent.lock().expect("sent")[1]
                .get("retryOfAttemptId")
                .is_none()
        );
        let forged = json!({"messages": [], "retryOfAttemptId": "local:r/n#0:9", "retryReason": "invalid_output"});
        let refused = host.call_json(&key(2), &forged).await.expect_err("forged");
        assert_eq!(refused.public.field(), Some("retryOfAttemptId"));
        assert_eq!(fake.sent.lock().expect("sent").len(), 2, "never sent");
        // The failure settles once.
        let run = RunId::new("r");
        assert!(host.settle_ai_failure(&run, refused.token).await.is_ok());
        assert!(host.settle_ai_failure(&run, refused.token).await.is_err());
    }

    #[tokio::test]
    async fn an_accounting_host_gets_the_request_as_the_runtime_made_it() {
        let (host, fake) = host(
            RFC_0248,
            json!({"result": {"content": "hi", "attemptId": "h-1"}}),
            Some("mock"),
        );
        assert_eq!(host.kind(), HostKind::Accounting);
        let request = json!({"messages": [], "retry": {"maxAttempts": 1}, "retryOfAttemptId": "h-0", "retryReason": "invalid_output"});
        let result = host.call_json(&key(0), &request).await.expect("a result");
        assert_eq!(result["attemptId"], "h-1");
        let sent = fake.sent.lock().expect("sent")[0].clone();
        assert_eq!(sent["retry"], json!({"maxAttempts": 1}));
        assert_eq!(sent["retryOfAttemptId"], "h-0");
    }

    #[tokio::test]
    async fn a_call_without_provider_is_refused_before_it_is_sent() {
        let (host, fake) = host(OPENWOP_APP_SNAPSHOT, json!({"result": {}}), None);
        let e = host
            .call_json(&key(0), &json!({"messages": []}))
            .await
            .expect_err("no provider");
        assert_eq!(e.public.error, ErrorCode::ValidationError);
        assert_eq!(e.public.field(), Some("provider"));
        assert!(fake.sent.lock().expect("sent").is_empty());
        // A call that names its provider keeps it.
        let named = json!({"messages": [], "provider": "openai"});
        host.call_json(&key(1), &named).await.expect("named");
        assert_eq!(fake.sent.lock().expect("sent")[0]["provider"], "openai");
    }

    #[tokio::test]
    async fn the_runtimes_events_are_kept_for_their_run() {
        let (host, _) = host(OPENWOP_APP_SNAPSHOT, json!({}), Some("mock"));
        let run = RunId::new("r");
        let started = |node: &str| {
            Event::NodeStarted(wop_sdk::wire::NodeStarted {
                node_id: node.into(),
                type_id: "community.x.y".into(),
                attempt: None,
            })
        };
        host.record_event(&run, started("n")).await;
        host.record_event(&RunId::new("other"), started("n")).await;
        // One that breaks a payload rule is not kept.
        host.record_event(&run, started("")).await;
        let events = host.events(&run).await;
        assert_eq!(events.len(), 1);
        assert_eq!(events[0].kind(), "node.started");
        assert_eq!(events[0].sequence, 0);
    }
}
