//! [`Recording`]: a host wrapper that keeps every `ctx.callAI` answer exactly as the host gave
//! it, so that judges can decide on the host's own bytes rather than on what the fixture node
//! re-serialized.

use crate::host::{AttemptKey, BoxFuture, FailureToken, Host, HostFailure, RunId};
use crate::wire::{CapabilityDocument, ErrorEnvelope, RunEvent};
use serde_json::Value;
use std::fmt;
use std::sync::{Arc, Mutex, PoisonError};

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
        request: &'a Value,
    ) -> BoxFuture<'a, Result<Value, HostFailure>> {
        Box::pin(async move {
            let answer = self.inner.call_ai(key, request).await;
            if let Ok(value) = &answer {
                self.answers
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner)
                    .push(value.clone());
            }
            answer
        })
    }

    fn settle_ai_failure<'a>(
        &'a self,
        run: &'a RunId,
        failure: FailureToken,
    ) -> BoxFuture<'a, Result<(), ErrorEnvelope>> {
        self.inner.settle_ai_failure(run, failure)
    }

    fn record_event<'a>(
        &'a self,
        run: &'a RunId,
        kind: &'a str,
        payload: Value,
    ) -> BoxFuture<'a, ()> {
        self.inner.record_event(run, kind, payload)
    }

    fn events<'a>(&'a self, run: &'a RunId) -> BoxFuture<'a, Vec<RunEvent>> {
        self.inner.events(run)
    }
}
