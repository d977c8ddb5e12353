//! The local host's handle ([`LocalHost`], an `Arc` of its parts) and the local host as a
//! [`Host`]: a thin layer over its parts.

use super::config::LocalConfig;
use super::diagnostics::Diagnostic;
use super::inner::Inner;
use crate::answers::{constant, ready};
use crate::journal::{ChargeRow, Journal, JournalError};
use std::collections::HashMap;
use std::fmt;
use std::sync::Arc;
use std::task::{Context, Waker};
use wop_sdk::host::{AttemptKey, BoxFuture, FailureToken, Host, HostFailure, RunId, StreamSink};
use wop_sdk::wire::{
    CallAiRequest, CallAiResult, CapabilityDocument, ErrorEnvelope, Event, RunEvent,
};

/// The embedded local host. Cheap to clone.
///
/// Run a node with [`LocalHost::run_typed`] to get its typed output or a [`super::RunError`] saying why
/// there is none, or with [`LocalHost::run`] (JSON in, the whole [`wop_sdk::node::NodeOutcome`]
/// out: the output or public error, the call reports, the budget).
#[derive(Clone)]
pub struct LocalHost {
    pub(crate) inner: Arc<Inner>,
}

impl fmt::Debug for LocalHost {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("LocalHost")
            .field("config", &self.inner.config)
            .finish_non_exhaustive()
    }
}

impl LocalHost {
    /// The settings.
    pub fn config(&self) -> &LocalConfig {
        &self.inner.config
    }

    /// The capability document this host advertises (written from its settings when it was
    /// built, `capabilities.rs`).
    pub fn capabilities(&self) -> CapabilityDocument {
        (*self.inner.document).clone()
    }

    /// The journal.
    pub fn journal(&self) -> &Arc<dyn Journal> {
        &self.inner.journal
    }

    /// The billing ledger: every charge, or a run's.
    pub async fn ledger(&self, run: Option<&RunId>) -> Result<Vec<ChargeRow>, JournalError> {
        self.inner.journal.charges(run).await
    }

    /// Charges summed per beneficiary: (generations, output tokens).
    pub async fn charges_by_beneficiary(
        &self,
        run: Option<&RunId>,
    ) -> Result<HashMap<String, (u32, u64)>, JournalError> {
        let mut out: HashMap<String, (u32, u64)> = HashMap::new();
        for row in self.ledger(run).await? {
            for b in row.charge.beneficiaries.iter() {
                let e = out.entry(b.clone()).or_default();
                e.0 += row.charge.generations;
                e.1 += row.charge.output_tokens;
            }
        }
        Ok(out)
    }

    /// How many runs the host keeps a record of in memory: those with a node executing, and those
    /// used through [`wop_sdk::host::Host::call_ai`] outside a node. A finished (or aborted) run leaves
    /// nothing behind here.
    pub fn active_runs(&self) -> usize {
        self.inner.runs.len()
    }

    /// How many calls this host is dispatching now. A call whose caller gave up leaves nothing
    /// behind here.
    pub fn calls_in_flight(&self) -> usize {
        self.inner.identities.in_flight()
    }

    /// The host-private diagnostics: the cause of every failure kept (see the retention in the
    /// module docs). Never shown to pack code.
    pub fn diagnostics(&self) -> Vec<Diagnostic> {
        self.inner.diagnostics.all()
    }

    /// The host-private diagnostics of one run.
    pub fn diagnostics_of(&self, run: &RunId) -> Vec<Diagnostic> {
        self.inner.diagnostics.of_run(run)
    }
}

impl Host for LocalHost {
    fn capability_document(&self) -> Arc<CapabilityDocument> {
        self.inner.capability_document()
    }

    fn call_ai<'a>(
        &'a self,
        key: &'a AttemptKey,
        request: &'a CallAiRequest,
    ) -> BoxFuture<'a, Result<CallAiResult, HostFailure>> {
        self.inner.call_ai(key, request)
    }

    fn call_ai_stream<'a>(
        &'a self,
        key: &'a AttemptKey,
        request: &'a CallAiRequest,
        sink: &'a StreamSink,
    ) -> BoxFuture<'a, Result<CallAiResult, HostFailure>> {
        self.inner.call_ai_stream(key, request, sink)
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

/// The local host as a [`Host`] is its parts: a node execution holds them as its
/// `Arc<dyn Host>` without a handle allocated around them (`LocalHost::as_host`).
impl Host for Inner {
    fn capability_document(&self) -> Arc<CapabilityDocument> {
        Arc::clone(&self.negotiated)
    }

    fn call_ai<'a>(
        &'a self,
        key: &'a AttemptKey,
        request: &'a CallAiRequest,
    ) -> BoxFuture<'a, Result<CallAiResult, HostFailure>> {
        Box::pin(self.serve(key, request, None))
    }

    fn call_ai_stream<'a>(
        &'a self,
        key: &'a AttemptKey,
        request: &'a CallAiRequest,
        sink: &'a StreamSink,
    ) -> BoxFuture<'a, Result<CallAiResult, HostFailure>> {
        Box::pin(self.serve(key, request, Some(sink)))
    }

    fn refuse(&self, key: &AttemptKey, public: ErrorEnvelope) -> HostFailure {
        let cause = format!("refused request: {public}");
        let token = self
            .diagnostics
            .record(&key.run_id, Some(key), &public, cause, false);
        HostFailure { public, token }
    }

    fn settle_ai_failure<'a>(
        &'a self,
        run: &'a RunId,
        failure: FailureToken,
    ) -> BoxFuture<'a, Result<(), ErrorEnvelope>> {
        let r = if self.diagnostics.settle(run, failure) {
            Ok(())
        } else {
            Err(ErrorEnvelope::validation(
                "failure",
                "is not a failure of this run",
            ))
        };
        ready(r)
    }

    /// The event is seen live and handed to the journal now (the SDK awaits the returned future
    /// at once: nothing is reordered). The journal's answer is polled once here: when it is
    /// ready (the in-memory journal's always is) the future returned is an empty one, which
    /// allocates nothing, instead of a box holding the answer.
    fn record_event<'a>(&'a self, run: &'a RunId, event: Event) -> BoxFuture<'a, ()> {
        self.live.observe(run, &event);
        let mut write = self.journal.append_event(run, event);
        let mut cx = Context::from_waker(Waker::noop());
        if write.as_mut().poll(&mut cx).is_ready() {
            // An event the journal cannot keep is still seen live; the run goes on.
            return constant(|| ());
        }
        Box::pin(async move {
            let _ = write.await;
        })
    }

    fn events<'a>(&'a self, run: &'a RunId) -> BoxFuture<'a, Vec<RunEvent>> {
        Box::pin(async move { self.journal.events(run).await.unwrap_or_default() })
    }
}
