//! The boundary: the one trait through which the runtime reaches a host.
//!
//! Everything above it (the typed calls, nodes, budgets, the conformance harness) talks only to
//! [`Host`]. The embedded local host implements it; so can an adapter to a production host, or a
//! test double.

mod layer;

pub use layer::HostLayer;

use crate::wire::{
    CallAiRequest, CallAiResult, CapabilityDocument, ErrorEnvelope, Event, RunEvent,
};
use serde_json::Value;
use std::collections::VecDeque;
use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::task::Waker;

/// A boxed, `Send` future: what the host trait's methods return.
pub type BoxFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// A run's identity.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct RunId(Arc<str>);

impl RunId {
    /// A run id from its string form. Cheap to clone: every call of a run carries it. The text
    /// is copied once, into the shared id (a `&str` is not made a `String` first).
    pub fn new(id: impl AsRef<str>) -> Self {
        Self(Arc::from(id.as_ref()))
    }

    /// The string form.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

/// A map keyed by run id is looked up with the id's string form (`Hash` and `Eq` agree).
impl std::borrow::Borrow<str> for RunId {
    fn borrow(&self) -> &str {
        &self.0
    }
}

/// Written as its string form; read from one (copied once, into the shared id).
impl serde::Serialize for RunId {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.0)
    }
}

impl<'de> serde::Deserialize<'de> for RunId {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct Text;
        impl serde::de::Visitor<'_> for Text {
            type Value = RunId;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a run id (a string)")
            }
            fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<RunId, E> {
                Ok(RunId::new(v))
            }
        }
        d.deserialize_str(Text)
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
    /// The node instance within the run (not its type id). Shared: every call of a node
    /// execution, and the host's records of it, hold the same text (`"n".into()` makes one).
    pub node_id: Arc<str>,
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
///   request. The runtime checks what comes back with [`CallAiResult::check`], the very check
///   [`CallAiResult::from_json`] ends with: a typed result meets the same rules as a parsed one
///   and is refused with the same error.
/// - [`Host::call_ai_json`] is the JSON edge: a request exactly as JSON pack code would send it
///   (a host bridge, the conformance fixture's deliberately malformed `retry`). The default
///   parses it as a host does ([`CallAiRequest::from_json_for_host`]: a malformed `retry` is a
///   `validation_error` naming the key when the host advertises `retryPolicy`, ignored when it
///   does not) and calls [`Host::call_ai`].
/// - [`Host::call_ai_stream`] is a streamed call: the same contract as [`Host::call_ai`] for
///   its terminal result, plus provisional items written to a [`StreamSink`] while the call runs
///   (text fragments, a restart marker when a host retry begins another provider request, a
///   replay marker when the terminal result is a recorded one). The default writes nothing and
///   calls [`Host::call_ai`]: on such a host the terminal item is the stream's only item.
/// - [`Host::settle_ai_failure`] is given the failures pack code settled (or propagated); a host
///   refuses a token that is not a failure of that run.
/// - [`Host::record_event`] appends to the run's event log (the runtime records `node.*` events);
///   [`Host::events`] reads the log in sequence order.
pub trait Host: Send + Sync {
    /// The capability document this host advertises. Shared: the runtime reads it once per node
    /// execution, and a host that keeps its document answers without copying it.
    fn capability_document(&self) -> Arc<CapabilityDocument>;

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

    /// One streamed `ctx.callAI` call (`callAIStream`): provisional items go to `sink` while the
    /// call runs; the returned future is the terminal result, exactly as [`Host::call_ai`]'s.
    ///
    /// A host that retries inside the call writes [`StreamDelta::Restart`] before each further
    /// provider request (fragments before it belong to a discarded attempt), and a host that
    /// answers from its records writes [`StreamDelta::Replay`] and no fragment. Dropping the
    /// future cancels the call as it cancels a plain one.
    ///
    /// The default writes nothing and calls [`Host::call_ai`], so a host that cannot stream (an
    /// older host, a bridge) still serves streamed calls: the terminal item is then the only item.
    fn call_ai_stream<'a>(
        &'a self,
        key: &'a AttemptKey,
        request: &'a CallAiRequest,
        sink: &'a StreamSink,
    ) -> BoxFuture<'a, Result<CallAiResult, HostFailure>> {
        let _ = sink;
        self.call_ai(key, request)
    }

    /// Settles a failure of `run`.
    fn settle_ai_failure<'a>(
        &'a self,
        run: &'a RunId,
        failure: FailureToken,
    ) -> BoxFuture<'a, Result<(), ErrorEnvelope>>;

    /// Appends an event to the run's log. The event is typed: a host that speaks JSON writes
    /// its v2 type ([`Event::kind`]) and payload ([`Event::payload`]); a journal refuses one that
    /// breaks a payload rule ([`Event::check`]).
    fn record_event<'a>(&'a self, run: &'a RunId, event: Event) -> BoxFuture<'a, ()>;

    /// The run's event log, in sequence order.
    fn events<'a>(&'a self, run: &'a RunId) -> BoxFuture<'a, Vec<RunEvent>>;
}

/// A provisional item of a streamed call, as a host writes it to a [`StreamSink`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum StreamDelta {
    /// Text the current provider request produced so far (provisional: it is not the result).
    Fragment(String),
    /// The host began provider request `attempt` (2, 3, …) of the same call: every fragment
    /// written before belongs to a discarded attempt.
    Restart {
        /// The new request's number within the call (1 is the first request).
        attempt: u32,
    },
    /// The terminal result is a recorded one (a redelivery, a replay fork, a reattachment): no
    /// fragment follows and no provider request is made for it.
    Replay,
}

#[derive(Debug, Default)]
struct SinkState {
    queue: VecDeque<StreamDelta>,
    waker: Option<Waker>,
    /// The reader gave up on provisional items (it only waits for the terminal result).
    discarding: bool,
}

/// Where a host writes the provisional items of one streamed call, for the runtime to hand to
/// pack code. Cheap to clone (clones share the queue); writing never blocks.
///
/// The runtime reads an item before it asks the host for more work, so the queue holds at most
/// what the host produced between two reads.
#[derive(Clone, Debug, Default)]
pub struct StreamSink(Arc<Mutex<SinkState>>);

impl StreamSink {
    /// An empty sink.
    pub fn new() -> Self {
        Self::default()
    }

    fn state(&self) -> MutexGuard<'_, SinkState> {
        self.0.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Writes one item; wakes the reader if it waits.
    pub fn push(&self, delta: StreamDelta) {
        let waker = {
            let mut s = self.state();
            if s.discarding {
                return;
            }
            s.queue.push_back(delta);
            s.waker.take()
        };
        if let Some(w) = waker {
            w.wake();
        }
    }

    /// Writes a text fragment of the current attempt (an empty one is not written).
    pub fn fragment(&self, text: &str) {
        if !text.is_empty() {
            self.push(StreamDelta::Fragment(text.to_owned()));
        }
    }

    /// Writes the restart marker of provider request `attempt`.
    pub fn restart(&self, attempt: u32) {
        self.push(StreamDelta::Restart { attempt });
    }

    /// Writes the replay marker.
    pub fn replay(&self) {
        self.push(StreamDelta::Replay);
    }

    /// The next item written, if any.
    pub(crate) fn pop(&self) -> Option<StreamDelta> {
        self.state().queue.pop_front()
    }

    /// Forgets a waiting reader (it is being polled now).
    pub(crate) fn unpark(&self) {
        self.state().waker = None;
    }

    /// Parks the reader until the next write; `false` (not parked) when an item is waiting.
    pub(crate) fn park(&self, waker: &Waker) -> bool {
        let mut s = self.state();
        if !s.queue.is_empty() {
            return false;
        }
        s.waker = Some(waker.clone());
        true
    }

    /// Drops what was written and every later write: the reader waits for the terminal result
    /// only.
    pub(crate) fn discard(&self) {
        let mut s = self.state();
        s.discarding = true;
        s.queue.clear();
    }
}
