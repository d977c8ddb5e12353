//! [`Recording`]: a host wrapper that keeps every `ctx.callAI` answer exactly as the host gave
//! it, so that judges can decide on the host's own answer rather than on what the fixture node
//! re-serialized. A host reached in process answers typed values: they are kept as the wire JSON
//! they denote ([`CallAiResult::to_json`]), so two answers are equal exactly when their values
//! are. A host behind a JSON boundary (a bridge) is held to its bytes by the bridge's own parser.

use serde_json::Value;
use std::fmt;
use std::sync::{Arc, Mutex, PoisonError};
use wop_sdk::host::{AttemptKey, BoxFuture, FailureToken, Host, HostFailure, RunId};
use wop_sdk::wire::{
    CallAiRequest, CallAiResult, CapabilityDocument, ErrorEnvelope, Event, RunEvent,
};

/// Wraps a host and records each successful `ctx.callAI` answer, unaltered, in call order.
///
/// A [`super::ConformanceTarget`] runs the fixture through one per run and puts
/// [`Recording::answers`] in [`super::Observed::answers`].
pub struct Recording {
    inner: Arc<dyn Host>,
    answers: Mutex<Vec<Value>>,
}

impl fmt::Debug for Recording {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Recording")
            .field("answers", &self.answers())
            .finish_non_exhaustive()
    }
}

impl Recording {
    /// Records what `inner` answers.
    pub fn new(inner: Arc<dyn Host>) -> Self {
        Self {
            inner,
            answers: Mutex::new(Vec::new()),
        }
    }

    fn keep(&self, answer: &Result<CallAiResult, HostFailure>) {
        if let Ok(result) = answer {
            self.answers
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .push(result.to_json());
        }
    }

    /// The answers so far, as the host gave them.
    pub fn answers(&self) -> Vec<Value> {
        self.answers
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }
}

impl Host for Recording {
    fn capability_document(&self) -> CapabilityDocument {
        self.inner.capability_document()
    }

    fn call_ai<'a>(
        &'a self,
        key: &'a AttemptKey,
        request: &'a CallAiRequest,
    ) -> BoxFuture<'a, Result<CallAiResult, HostFailure>> {
        Box::pin(async move {
            let answer = self.inner.call_ai(key, request).await;
            self.keep(&answer);
            answer
        })
    }

    fn call_ai_json<'a>(
        &'a self,
        key: &'a AttemptKey,
        request: &'a Value,
    ) -> BoxFuture<'a, Result<CallAiResult, HostFailure>> {
        Box::pin(async move {
            let answer = self.inner.call_ai_json(key, request).await;
            self.keep(&answer);
            answer
        })
    }

    fn refuse(&self, key: &AttemptKey, public: ErrorEnvelope) -> HostFailure {
        self.inner.refuse(key, public)
    }

    fn settle_ai_failure<'a>(
        &'a self,
        run: &'a RunId,
        failure: FailureToken,
    ) -> BoxFuture<'a, Result<(), ErrorEnvelope>> {
        self.inner.settle_ai_failure(run, failure)
    }

    fn record_event<'a>(&'a self, run: &'a RunId, event: Event) -> BoxFuture<'a, ()> {
        self.inner.record_event(run, event)
    }

    fn events<'a>(&'a self, run: &'a RunId) -> BoxFuture<'a, Vec<RunEvent>> {
        self.inner.events(run)
    }
}
