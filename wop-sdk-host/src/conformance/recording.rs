//! [`Recording`]: a host wrapper that keeps every `ctx.callAI` answer exactly as the host gave
//! it, so that judges can decide on the host's own answer rather than on what the fixture node
//! re-serialized. A host reached in process answers typed values: they are kept as the wire JSON
//! they denote ([`CallAiResult::to_json`]), so two answers are equal exactly when their values
//! are. A host behind a JSON boundary (a bridge) is held to its bytes by the bridge's own parser.

use serde_json::Value;
use std::fmt;
use std::sync::{Arc, Mutex, PoisonError};
use wop_sdk::host::{AttemptKey, BoxFuture, Host, HostFailure, HostLayer, StreamSink};
use wop_sdk::wire::{CallAiRequest, CallAiResult};

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

// A layer: every other method (the capability document, refusals, settling, events) is the
// inner host's, and a streamed call's answer is kept like a plain one.
impl HostLayer for Recording {
    fn inner(&self) -> &dyn Host {
        &*self.inner
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

    fn call_ai_stream<'a>(
        &'a self,
        key: &'a AttemptKey,
        request: &'a CallAiRequest,
        sink: &'a StreamSink,
    ) -> BoxFuture<'a, Result<CallAiResult, HostFailure>> {
        Box::pin(async move {
            let answer = self.inner.call_ai_stream(key, request, sink).await;
            self.keep(&answer);
            answer
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::HostProbe;

    #[tokio::test]
    async fn every_host_method_reaches_the_inner_host() {
        let probe = Arc::new(HostProbe::default());
        let recording = Recording::new(Arc::clone(&probe) as Arc<dyn Host>);
        HostProbe::exercise(&recording).await;
        assert_eq!(probe.reached(), HostProbe::METHODS);
        assert_eq!(
            recording.answers().len(),
            3,
            "call_ai, call_ai_json and call_ai_stream answers kept"
        );
    }
}
