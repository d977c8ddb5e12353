//! The boundary: the one trait through which the runtime reaches a host.
//!
//! Everything above it (the typed calls, nodes, budgets, the conformance harness) talks only to
//! [`Host`]. The embedded local host implements it; so can an adapter to a production host, or a
//! test double.

use crate::wire::{CallAiRequest, CallAiResult, CapabilityDocument, ErrorEnvelope, RunEvent};
use serde_json::Value;
use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

/// A boxed, `Send` future: what the host trait's methods return.
pub type BoxFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// A run's identity.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct RunId(Arc<str>);

impl RunId {
    /// A run id from its string form. Cheap to clone: every call of a run carries it.
    pub fn new(id: impl Into<String>) -> Self {
        Self(Arc::from(id.into()))
    }

    /// The string form.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for RunId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// A call's identity: (run id, node id, call index within that node execution).
///
/// A redelivered node re-entering the same call gets the same key, so the host can replay the
/// recorded outcome, refuse a changed request, or report an ambiguous dispatch.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct AttemptKey {
    /// The run.
    pub run_id: RunId,
    /// The node instance within the run (not its type id).
    pub node_id: String,
    /// 0 for the node's first call, 1 for the second, …
    pub call_index: u32,
}

impl fmt::Display for AttemptKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}#{}", self.run_id, self.node_id, self.call_index)
    }
}

/// A host's handle on one failure. It names the failure in the host's private records and
/// carries nothing of its cause.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct FailureToken(u64);

impl FailureToken {
    /// For host implementations: the handle of a failure in the host's private records.
    pub fn new(id: u64) -> Self {
        Self(id)
    }

    /// The number the host gave it.
    pub fn get(self) -> u64 {
        self.0
    }
}

/// How a host reports a failed call to the runtime: the public envelope (code, a sentence that
/// carries no private diagnostics, `details.field` for a validation error) and the token of the
/// private record. The runtime never shows either to pack code: pack code sees an opaque
/// [`crate::AiFailure`].
#[derive(Clone, Debug, PartialEq)]
pub struct HostFailure {
    /// What an outside party may see (e.g. in `node.failed`).
    pub public: ErrorEnvelope,
    /// The host's private record of the cause.
    pub token: FailureToken,
}

/// The host boundary.
///
/// # Contract
///
/// - [`Host::capability_document`] is read once per run; the runtime negotiates proofs from it.
/// - [`Host::call_ai`] receives the call's [`AttemptKey`] and the typed request, and answers the
///   typed result or a [`HostFailure`]. A host must persist the key before dispatch, and on
///   re-entry with the same key and request return the recorded outcome without a provider
///   request. The runtime checks what comes back ([`CallAiResult::check`]) as it would a JSON
///   answer: a typed result is not trusted more than a parsed one.
/// - [`Host::call_ai_json`] is the JSON edge: a request exactly as JSON pack code would send it
///   (a host bridge, the conformance fixture's deliberately malformed `retry`). The default
///   parses it as a host does ([`CallAiRequest::from_json_for_host`]: a malformed `retry` is a
///   `validation_error` naming the key when the host advertises `retryPolicy`, ignored when it
///   does not) and calls [`Host::call_ai`].
/// - [`Host::settle_ai_failure`] is given the failures pack code settled (or propagated); a host
///   refuses a token that is not a failure of that run.
/// - [`Host::record_event`] appends to the run's event log (the runtime records `node.*` events);
///   [`Host::events`] reads the log in sequence order.
pub trait Host: Send + Sync {
    /// The capability document this host advertises.
    fn capability_document(&self) -> CapabilityDocument;

    /// One `ctx.callAI` call.
    fn call_ai<'a>(
        &'a self,
        key: &'a AttemptKey,
        request: &'a CallAiRequest,
    ) -> BoxFuture<'a, Result<CallAiResult, HostFailure>>;

    /// One `ctx.callAI` call whose request is JSON, as it crosses a host boundary.
    fn call_ai_json<'a>(
        &'a self,
        key: &'a AttemptKey,
        request: &'a Value,
    ) -> BoxFuture<'a, Result<CallAiResult, HostFailure>> {
        Box::pin(async move {
            let honours_retry = self
                .capability_document()
                .call_accounting
                .is_some_and(|c| c.retry_policy);
            match CallAiRequest::from_json_for_host(request, honours_retry) {
                Ok(typed) => self.call_ai(key, &typed).await,
                Err(e) => Err(self.refuse(key, e.to_envelope())),
            }
        })
    }

    /// Records a call refused at the JSON edge before any dispatch, and returns its failure. The
    /// default keeps no private record (token 0); a host with diagnostics overrides it.
    fn refuse(&self, key: &AttemptKey, public: ErrorEnvelope) -> HostFailure {
        let _ = key;
        HostFailure {
            public,
            token: FailureToken::new(0),
        }
    }

    /// Settles a failure of `run`.
    fn settle_ai_failure<'a>(
        &'a self,
        run: &'a RunId,
        failure: FailureToken,
    ) -> BoxFuture<'a, Result<(), ErrorEnvelope>>;

    /// Appends an event to the run's log.
    fn record_event<'a>(
        &'a self,
        run: &'a RunId,
        kind: &'a str,
        payload: Value,
    ) -> BoxFuture<'a, ()>;

    /// The run's event log, in sequence order.
    fn events<'a>(&'a self, run: &'a RunId) -> BoxFuture<'a, Vec<RunEvent>>;
}
