//! The local host as a [`Host`]: a thin layer over its parts.

use super::LocalHost;
use wop_sdk::host::{AttemptKey, BoxFuture, FailureToken, Host, HostFailure, RunId, StreamSink};
use wop_sdk::wire::{
    CallAiRequest, CallAiResult, CapabilityDocument, ErrorEnvelope, Event, RunEvent,
};

impl Host for LocalHost {
    fn capability_document(&self) -> CapabilityDocument {
        self.capabilities()
    }

    fn call_ai<'a>(
        &'a self,
        key: &'a AttemptKey,
        request: &'a CallAiRequest,
    ) -> BoxFuture<'a, Result<CallAiResult, HostFailure>> {
        Box::pin(self.inner.serve(key, request, None))
    }

    fn call_ai_stream<'a>(
        &'a self,
        key: &'a AttemptKey,
        request: &'a CallAiRequest,
        sink: &'a StreamSink,
    ) -> BoxFuture<'a, Result<CallAiResult, HostFailure>> {
        Box::pin(self.inner.serve(key, request, Some(sink)))
    }

    fn refuse(&self, key: &AttemptKey, public: ErrorEnvelope) -> HostFailure {
        let cause = format!("refused request: {public}");
        let token = self
            .inner
            .diagnostics
            .record(&key.run_id, Some(key), &public, cause, false);
        HostFailure { public, token }
    }

    fn settle_ai_failure<'a>(
        &'a self,
        run: &'a RunId,
        failure: FailureToken,
    ) -> BoxFuture<'a, Result<(), ErrorEnvelope>> {
        let r = if self.inner.diagnostics.settle(run, failure) {
            Ok(())
        } else {
            Err(ErrorEnvelope::validation(
                "failure",
                "is not a failure of this run",
            ))
        };
        Box::pin(std::future::ready(r))
    }

    fn record_event<'a>(&'a self, run: &'a RunId, event: Event) -> BoxFuture<'a, ()> {
        Box::pin(async move {
            self.inner.live.observe(run, &event);
            // An event the journal cannot keep is still seen live; the run goes on.
            let _ = self.inner.journal.append_event(run, event).await;
        })
    }

    fn events<'a>(&'a self, run: &'a RunId) -> BoxFuture<'a, Vec<RunEvent>> {
        Box::pin(async move { self.inner.journal.events(run).await.unwrap_or_default() })
    }
}
