//! Serving one call, the local host's entry point: the `wop.call` span, admission (a provider
//! this host has, a lineage that names a completed attempt of the run), the replay fork, then the
//! attempt-identity protocol (`identity.rs`) for a fresh call.

use super::inflight::Entry;
use super::inner::Inner;
use crate::journal::{Begin, Outcome, fingerprint};
use tracing::Instrument as _;
use tracing::field::Empty;
use wop_sdk::host::{AttemptKey, HostFailure, RunId, StreamSink};
use wop_sdk::wire::{CallAiRequest, CallAiResult, ErrorCode, ErrorEnvelope};

type Answer = Result<CallAiResult, HostFailure>;

impl Inner {
    /// A failure of this call: its cause kept in the private diagnostics, a token for settling.
    pub(super) fn failure(
        &self,
        key: &AttemptKey,
        public: ErrorEnvelope,
        cause: String,
        ambiguous: bool,
    ) -> HostFailure {
        let token = self
            .diagnostics
            .record(&key.run_id, Some(key), &public, cause, ambiguous);
        HostFailure { public, token }
    }

    /// One call: admission, then the identity protocol (`identity.rs`), or the replay fork. `sink`: a streamed call, whose provisional items go
    /// there; a recorded outcome (replayed or reattached) is announced with the replay marker and
    /// has no fragments.
    ///
    /// The call runs in a `wop.call` span (`wop.run_id`, `wop.node_id`, `wop.call_index`,
    /// `wop.structured`; at the end `wop.outcome`, `completed` or `failed`, `error.type` (the
    /// public code) and `wop.attempts` (`attempts.count`, when the host reports it)), the parent of
    /// its provider requests' spans.
    pub(crate) async fn serve(
        &self,
        key: &AttemptKey,
        request: &CallAiRequest,
        sink: Option<&StreamSink>,
    ) -> Answer {
        let span = tracing::info_span!(
            "wop.call",
            wop.run_id = %key.run_id,
            wop.node_id = %key.node_id,
            wop.call_index = key.call_index,
            wop.structured = request.is_structured(),
            wop.outcome = Empty,
            wop.attempts = Empty,
            error.type = Empty,
        );
        // Without a subscriber the call runs as it is (the instrumented wrapper would move the
        // call's whole state once more).
        if span.is_disabled() {
            return self.serve_in(key, request, sink).await;
        }
        let answer = self
            .serve_in(key, request, sink)
            .instrument(span.clone())
            .await;
        match &answer {
            Ok(result) => {
                span.record("wop.outcome", "completed");
                if let Some(a) = result.attempts {
                    span.record("wop.attempts", a.count);
                }
            }
            Err(failure) => {
                span.record("wop.outcome", "failed")
                    .record("error.type", failure.public.error.as_str());
            }
        }
        answer
    }

    async fn serve_in(
        &self,
        key: &AttemptKey,
        request: &CallAiRequest,
        sink: Option<&StreamSink>,
    ) -> Answer {
        if let Some(source) = self.runs.replay_source(&key.run_id) {
            let answer = self.replay_call(key, &source, request).await;
            if answer.is_ok()
                && let Some(sink) = sink
            {
                sink.replay();
            }
            return answer;
        }
        if let Some(named) = request.provider.as_deref()
            && !self.provider.serves(named)
        {
            let e = ErrorEnvelope::validation(
                "provider",
                format!(
                    "names `{named}`, a provider this host does not have (it has `{}`)",
                    self.provider.name()
                ),
            );
            return Err(self.failure(key, e, format!("provider `{named}` refused"), false));
        }
        if let Some(id) = &request.retry_of_attempt_id {
            let known = self
                .journal
                .completed_attempt(&key.run_id, id)
                .await
                .unwrap_or(false);
            if !known {
                let e = ErrorEnvelope::validation(
                    "retryOfAttemptId",
                    "must name a completed attempt of the same run",
                );
                return Err(self.failure(
                    key,
                    e,
                    format!("lineage: unknown attempt `{id}`"),
                    false,
                ));
            }
        }
        let fp = fingerprint(request);
        match self.identities.enter(key, fp) {
            Entry::Fresh(slot) => {
                let answer = self.dispatch_fresh(key, request, &fp, sink).await;
                slot.finish(&answer);
                answer
            }
            Entry::Attach(mut rx) => {
                if let Some(sink) = sink {
                    // Reattached: the terminal result of the dispatch in flight, no fragments.
                    sink.replay();
                }
                let answer = rx
                    .wait_for(Option::is_some)
                    .await
                    .ok()
                    .and_then(|v| v.clone());
                answer.unwrap_or_else(|| {
                    let e = ErrorEnvelope::new(
                        ErrorCode::UpstreamUnavailable,
                        "the call in flight was lost",
                    );
                    Err(self.failure(key, e, "in-flight call dropped by its caller".into(), true))
                })
            }
            Entry::Mismatch => Err(self.mismatch(key)),
        }
    }

    async fn replay_call(
        &self,
        key: &AttemptKey,
        source: &RunId,
        request: &CallAiRequest,
    ) -> Answer {
        let source_key = AttemptKey {
            run_id: source.clone(),
            ..key.clone()
        };
        let recorded = self.journal.lookup(&source_key).await.ok().flatten();
        let Some(entry) = recorded.filter(|e| e.outcome.is_some()) else {
            let e = ErrorEnvelope::new(
                ErrorCode::ReplaySourceMissing,
                "the source run has no recorded outcome for this call",
            )
            .with_detail("attemptKey", source_key.to_string());
            return Err(self.failure(key, e, "replay: no recorded outcome".into(), false));
        };
        if entry.fingerprint != fingerprint(request) {
            return Err(self.mismatch(key));
        }
        let outcome = entry.outcome.unwrap_or(Outcome::Completed {
            result: String::new(),
        });
        // Record the fork's own copy, without a charge and without provider events.
        if matches!(
            self.journal
                .begin(key, &entry.fingerprint, &entry.attempt_id)
                .await,
            Ok(Begin::Fresh)
        ) {
            let _ = self
                .journal
                .finish(key, outcome.clone(), None, Vec::new())
                .await;
        }
        self.replay_outcome(key, outcome, request.is_structured())
    }
}
