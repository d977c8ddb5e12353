//! Failures in one place: the opaque [`AiFailure`] pack code holds, the [`FailureBook`] of a node
//! execution where the runtime keeps each failure's public envelope and host token, settling
//! (by the node, or by the runner for the failures a node propagated or dropped).
//!
//! An `AiFailure` holds only its book and an id: nothing of its cause, and nothing of the run's
//! other state. The host keeps the cause in its private records, named by a [`FailureToken`].

use crate::brand::Brand;
use crate::host::{FailureToken, Host, RunId};
use crate::wire::ErrorEnvelope;
use std::collections::BTreeMap;
use std::fmt;
use std::marker::PhantomData;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

struct Record {
    public: ErrorEnvelope,
    /// The host's token, until the host is told the failure was settled.
    token: Option<FailureToken>,
}

/// The failures of one node execution.
pub(crate) struct FailureBook {
    host: Arc<dyn Host>,
    run_id: RunId,
    records: Mutex<(u64, BTreeMap<u64, Record>)>,
}

impl FailureBook {
    pub(crate) fn new(host: Arc<dyn Host>, run_id: RunId) -> Arc<Self> {
        Arc::new(Self {
            host,
            run_id,
            records: Mutex::new((0, BTreeMap::new())),
        })
    }

    fn records(&self) -> MutexGuard<'_, (u64, BTreeMap<u64, Record>)> {
        self.records.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Records a failure and hands pack code its opaque handle. `token` is `None` for a call the
    /// runtime refused before it reached the host (a budget, a missing capability).
    pub(crate) fn record<'run>(
        self: &Arc<Self>,
        public: ErrorEnvelope,
        token: Option<FailureToken>,
    ) -> AiFailure<'run> {
        let mut records = self.records();
        records.0 += 1;
        let id = records.0;
        records.1.insert(id, Record { public, token });
        AiFailure {
            id,
            book: Arc::clone(self),
            _brand: PhantomData,
        }
    }

    /// The public envelope of failure `id` of this book.
    pub(crate) fn public_of(&self, id: u64) -> Option<ErrorEnvelope> {
        self.records().1.get(&id).map(|r| r.public.clone())
    }

    /// Settles `failure`, which must be of this book: the host is told once.
    pub(crate) async fn settle(
        self: &Arc<Self>,
        failure: AiFailure<'_>,
    ) -> Result<(), ErrorEnvelope> {
        if !Arc::ptr_eq(&failure.book, self) {
            return Err(ErrorEnvelope::validation(
                "failure",
                "belongs to another run or node execution and cannot be settled here",
            ));
        }
        let token = self
            .records()
            .1
            .get_mut(&failure.id)
            .and_then(|record| record.token.take());
        match token {
            Some(token) => self.host.settle_ai_failure(&self.run_id, token).await,
            None => Ok(()),
        }
    }

    /// When the node ends: settles with the host every failure the node propagated with `?` or
    /// dropped (those it settled itself gave their token up already).
    pub(crate) async fn settle_remaining(&self) {
        let tokens: Vec<FailureToken> = self
            .records()
            .1
            .values_mut()
            .filter_map(|r| r.token.take())
            .collect();
        for token in tokens {
            // The node has ended: a refusal here has no one to report to, and the cause stays
            // private.
            let _ = self.host.settle_ai_failure(&self.run_id, token).await;
        }
    }
}

/// A failed call: an opaque, run-bound capability.
///
/// It can be tested (it is the `Err` of the call), settled with
/// [`crate::NodeCtx::settle_ai_failure`], or propagated with `?` (which settles it and fails the
/// node with the failure's public error code). It cannot be constructed, cloned, serialized,
/// inspected or carried out of its run; `Debug` and `Display` reveal nothing of the cause, which
/// stays in the host's private records. A failure dropped without settling is settled when the
/// node ends.
#[must_use = "an AI failure must be settled (`ctx.settle_ai_failure`) or propagated with `?`"]
pub struct AiFailure<'run> {
    pub(crate) id: u64,
    pub(crate) book: Arc<FailureBook>,
    _brand: Brand<'run>,
}

impl fmt::Debug for AiFailure<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("AiFailure(opaque)")
    }
}

impl fmt::Display for AiFailure<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("the AI call failed; its cause is private to the host (settle it or propagate it with `?`)")
    }
}
