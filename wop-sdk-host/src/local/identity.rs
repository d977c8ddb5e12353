//! The attempt-identity protocol ("redelivery is not retry"): a call's identity is persisted
//! before dispatch, with its request fingerprint; the terminal outcome is recorded after. On
//! re-entry with the same identity the host replays the recorded outcome (same request),
//! refuses a changed request (`idempotency_key_mismatch`), or, when the earlier dispatch left no
//! outcome, gives a terminal ambiguous failure without a second generation and without a
//! charge. A second entry while the first is in flight in this process reattaches to it.
//!
//! The state it owns: the calls in flight (so a dropped call leaves nothing behind) and the
//! attempt-id generator. The journal holds the rest.

use super::call::{Call, plan};
use super::inflight::Answer;
use super::inner::Inner;
use crate::journal::lease::{self, Awaited};
use crate::journal::{Begin, Fingerprint, Journal, Outcome};
use std::sync::Arc;
use wop_sdk::host::{AttemptKey, HostFailure, StreamSink};
use wop_sdk::wire::{CallAiRequest, CallAiResult, ErrorCode, ErrorEnvelope};

/// The public failure of a call whose dispatch outcome is unknown.
fn unknown_outcome() -> ErrorEnvelope {
    ErrorEnvelope::new(
        ErrorCode::UpstreamUnavailable,
        "the outcome of an earlier dispatch of this call is unknown; it is not repeated and not billed to the user",
    )
}

/// A call whose identity is in the journal and whose outcome is not yet. Dropped armed (the
/// caller gave up mid-dispatch: a timeout, a `select!`, an aborted task), it records the call's
/// terminal ambiguous failure on the runtime at once, and the lease goes with it: re-entry, here
/// or on another host sharing the journal, replays that failure instead of waiting for the lease
/// to expire. Without a runtime to write on, the lease's expiry still ends it.
struct Unfinished<'a> {
    journal: &'a Arc<dyn Journal>,
    key: &'a AttemptKey,
    armed: bool,
}

impl Drop for Unfinished<'_> {
    fn drop(&mut self) {
        if !self.armed {
            return;
        }
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            return;
        };
        let journal = Arc::clone(self.journal);
        let key = self.key.clone();
        runtime.spawn(async move {
            let outcome = Outcome::Failed {
                public: unknown_outcome(),
                private_cause: "ambiguous dispatch: the caller gave up the call while it was in \
                                flight"
                    .into(),
                ambiguous: true,
            };
            // An outcome written meanwhile wins: this one is then refused, and nothing changes.
            let _ = journal.finish(&key, outcome, None, Vec::new()).await;
        });
    }
}

impl Inner {
    pub(super) fn mismatch(&self, key: &AttemptKey) -> HostFailure {
        let e = ErrorEnvelope::new(
            ErrorCode::IdempotencyKeyMismatch,
            "this call's identity was already used with a different request",
        )
        .with_detail("attemptKey", key.to_string());
        self.failure(
            key,
            e,
            "integrity: fingerprint differs from the recorded request".into(),
            false,
        )
    }

    /// The answer a recorded outcome gives: the recorded text read back (a replay reproduces
    /// the exact bytes).
    pub(super) fn replay_outcome(
        &self,
        key: &AttemptKey,
        outcome: Outcome,
        structured: bool,
    ) -> Answer {
        match outcome {
            Outcome::Completed { result } => serde_json::from_str(&result)
                .map_err(|e| e.to_string())
                .and_then(|v| CallAiResult::from_json(&v, structured).map_err(|e| e.to_string()))
                .map_err(|e| {
                    self.failure(
                        key,
                        ErrorEnvelope::new(
                            ErrorCode::UpstreamUnavailable,
                            "the recorded outcome cannot be read",
                        ),
                        format!("journal: recorded result is unreadable: {e}"),
                        false,
                    )
                }),
            Outcome::Failed {
                public,
                private_cause,
                ambiguous,
            } => Err(self.failure(key, public, private_cause, ambiguous)),
        }
    }

    pub(super) async fn dispatch_fresh(
        &self,
        key: &AttemptKey,
        request: &CallAiRequest,
        fp: &Fingerprint,
        sink: Option<&StreamSink>,
    ) -> Answer {
        let structured = request.is_structured();
        let attempt_id = self.identities.new_attempt_id();
        let plan = plan(&self.config, request);
        // This host's lease on the call: a second host on the journal waits for it while it
        // lives. The identity, its lease and the announcement of the first provider request are
        // made durable in one write, before anything is dispatched.
        let lease = self.identities.lease();
        let begin = self
            .journal
            .begin_leased(key, fp, &attempt_id, plan.first_max_tokens, &lease)
            .await
            .map_err(|e| {
                self.failure(
                    key,
                    ErrorEnvelope::new(
                        ErrorCode::UpstreamUnavailable,
                        "the host could not persist the call's identity; nothing was dispatched",
                    ),
                    format!("journal: {e}"),
                    false,
                )
            })?;
        match begin {
            Begin::Fresh => {}
            Begin::Recorded { outcome, .. } => {
                // Redelivery: the recorded terminal result, never a new generation.
                if let Some(sink) = sink {
                    sink.replay();
                }
                return self.replay_outcome(key, outcome, structured);
            }
            Begin::Mismatch => return Err(self.mismatch(key)),
            Begin::Unfinished { requests, .. } => {
                // Another host may be dispatching it now: wait for a live owner, and reattach to
                // its outcome; only an owner that is gone leaves the outcome unknown.
                if let Ok(Awaited::Finished(outcome)) =
                    lease::await_owner(self.journal.as_ref(), key, &lease.holder).await
                {
                    if let Some(sink) = sink {
                        // Reattached to another host's dispatch: its terminal result only.
                        sink.replay();
                    }
                    return self.replay_outcome(key, outcome, structured);
                }
                let public = unknown_outcome();
                let cause = format!(
                    "ambiguous dispatch: identity recorded with {requests} provider request(s) and no outcome"
                );
                let outcome = Outcome::Failed {
                    public: public.clone(),
                    private_cause: cause.clone(),
                    ambiguous: true,
                };
                // Best effort: record the terminal failure so the next re-entry replays it.
                let _ = self.journal.finish(key, outcome, None, Vec::new()).await;
                return Err(self.failure(key, public, cause, true));
            }
        }
        let mut unfinished = Unfinished {
            journal: &self.journal,
            key,
            armed: true,
        };
        let dispatch = Call {
            parts: self.parts(),
            key,
            request,
            attempt_id,
            plan,
            sink,
        }
        .dispatch();
        // The lease is renewed while the call is in flight, and given up with the outcome. A
        // call whose caller gave up is recorded ambiguous by `Unfinished` (above); only a host
        // that dies mid-call leaves its lease to expire (`journal::lease::LEASE_TTL`).
        let finished = lease::hold(self.journal.as_ref(), key, &lease, dispatch).await;
        let super::call::Finished {
            outcome,
            result,
            charge,
            events,
        } = finished;
        // A completed call answers with its result; only a failure reads its outcome back.
        let answer = result.ok_or_else(|| outcome.clone());
        let written = self.journal.finish(key, outcome, charge, events).await;
        unfinished.armed = false;
        if let Err(e) = written {
            // The outcome is not durable: on re-entry it is ambiguous and never charged.
            let public = ErrorEnvelope::new(
                ErrorCode::UpstreamUnavailable,
                "the host could not record the call's outcome",
            );
            return Err(self.failure(
                key,
                public,
                format!("journal: terminal write failed: {e}"),
                true,
            ));
        }
        answer.or_else(|outcome| self.replay_outcome(key, outcome, structured))
    }
}
