//! A host that wraps another: [`HostLayer`] forwards every method of [`Host`] to the inner host,
//! so a wrapper overrides only what it changes and cannot forget one.

use super::{AttemptKey, BoxFuture, FailureToken, Host, HostFailure, RunId, StreamSink};
use crate::wire::{
    CallAiRequest, CallAiResult, CapabilityDocument, ErrorEnvelope, Event, RunEvent,
};
use serde_json::Value;
use std::sync::Arc;

/// A host that wraps another (a recorder, a bridge's adapter, a test double that lies about one
/// thing). Every [`Host`] method reaches [`HostLayer::inner`] unless the layer overrides it, and
/// every `HostLayer` is a [`Host`]: implement this, not `Host`, for a wrapper.
///
/// ```rust,no_run
/// use std::sync::Arc;
/// use std::sync::atomic::{AtomicU32, Ordering};
/// use wop_sdk::host::{AttemptKey, BoxFuture, Host, HostFailure, HostLayer};
/// use wop_sdk::wire::{CallAiRequest, CallAiResult};
///
/// /// Counts the calls; everything else is the inner host's.
/// struct Counted(Arc<dyn Host>, AtomicU32);
///
/// impl HostLayer for Counted {
///     fn inner(&self) -> &dyn Host {
///         &*self.0
///     }
///
///     fn call_ai<'a>(
///         &'a self,
///         key: &'a AttemptKey,
///         request: &'a CallAiRequest,
///     ) -> BoxFuture<'a, Result<CallAiResult, HostFailure>> {
///         self.1.fetch_add(1, Ordering::Relaxed);
///         self.0.call_ai(key, request)
///     }
/// }
/// ```
pub trait HostLayer: Send + Sync {
    /// The host this one wraps.
    fn inner(&self) -> &dyn Host;

    /// [`Host::capability_document`].
    fn capability_document(&self) -> Arc<CapabilityDocument> {
        self.inner().capability_document()
    }

    /// [`Host::call_ai`].
    fn call_ai<'a>(
        &'a self,
        key: &'a AttemptKey,
        request: &'a CallAiRequest,
    ) -> BoxFuture<'a, Result<CallAiResult, HostFailure>> {
        self.inner().call_ai(key, request)
    }

    /// [`Host::call_ai_json`].
    fn call_ai_json<'a>(
        &'a self,
        key: &'a AttemptKey,
        request: &'a Value,
    ) -> BoxFuture<'a, Result<CallAiResult, HostFailure>> {
        self.inner().call_ai_json(key, request)
    }

    /// [`Host::refuse`].
    fn refuse(&self, key: &AttemptKey, public: ErrorEnvelope) -> HostFailure {
        self.inner().refuse(key, public)
    }

    /// [`Host::call_ai_stream`].
    fn call_ai_stream<'a>(
        &'a self,
        key: &'a AttemptKey,
        request: &'a CallAiRequest,
        sink: &'a StreamSink,
    ) -> BoxFuture<'a, Result<CallAiResult, HostFailure>> {
        self.inner().call_ai_stream(key, request, sink)
    }

    /// [`Host::settle_ai_failure`].
    fn settle_ai_failure<'a>(
        &'a self,
        run: &'a RunId,
        failure: FailureToken,
    ) -> BoxFuture<'a, Result<(), ErrorEnvelope>> {
        self.inner().settle_ai_failure(run, failure)
    }

    /// [`Host::record_event`].
    fn record_event<'a>(&'a self, run: &'a RunId, event: Event) -> BoxFuture<'a, ()> {
        self.inner().record_event(run, event)
    }

    /// [`Host::events`].
    fn events<'a>(&'a self, run: &'a RunId) -> BoxFuture<'a, Vec<RunEvent>> {
        self.inner().events(run)
    }
}

// Every method, none left to `Host`'s defaults: a layer's `call_ai_json` and `call_ai_stream`
// are the inner host's, not a re-parse or a non-streamed call on top of the layer.
impl<L: HostLayer> Host for L {
    fn capability_document(&self) -> Arc<CapabilityDocument> {
        HostLayer::capability_document(self)
    }

    fn call_ai<'a>(
        &'a self,
        key: &'a AttemptKey,
        request: &'a CallAiRequest,
    ) -> BoxFuture<'a, Result<CallAiResult, HostFailure>> {
        HostLayer::call_ai(self, key, request)
    }

    fn call_ai_json<'a>(
        &'a self,
        key: &'a AttemptKey,
        request: &'a Value,
    ) -> BoxFuture<'a, Result<CallAiResult, HostFailure>> {
        HostLayer::call_ai_json(self, key, request)
    }

    fn refuse(&self, key: &AttemptKey, public: ErrorEnvelope) -> HostFailure {
        HostLayer::refuse(self, key, public)
    }

    fn call_ai_stream<'a>(
        &'a self,
        key: &'a AttemptKey,
        request: &'a CallAiRequest,
        sink: &'a StreamSink,
    ) -> BoxFuture<'a, Result<CallAiResult, HostFailure>> {
        HostLayer::call_ai_stream(self, key, request, sink)
    }

    fn settle_ai_failure<'a>(
        &'a self,
        run: &'a RunId,
        failure: FailureToken,
    ) -> BoxFuture<'a, Result<(), ErrorEnvelope>> {
        HostLayer::settle_ai_failure(self, run, failure)
    }

    fn record_event<'a>(&'a self, run: &'a RunId, event: Event) -> BoxFuture<'a, ()> {
        HostLayer::record_event(self, run, event)
    }

    fn events<'a>(&'a self, run: &'a RunId) -> BoxFuture<'a, Vec<RunEvent>> {
        HostLayer::events(self, run)
    }
}
