//! The node context: what a node execution holds (its host, run, capabilities, budget books and
//! failure book), and what pack code can ask of it.

use super::call::Dispatch;
use super::error::NodeError;
use super::state::{CallReport, RunState};
use crate::ai::{AiFailure, AiRequest, CallStream, Completion, IntoCall, Output};
use crate::brand::Brand;
use crate::budget::BudgetStatus;
use crate::caps::RunCapabilities;
use crate::host::RunId;
use crate::host::StreamSink;
use std::fmt;
use std::marker::PhantomData;
use std::sync::Arc;

/// The context a node runs in: one node execution of one run. Branded with `'run`, so the
/// failures and attempt ids it hands out cannot be used with another run.
pub struct NodeCtx<'run> {
    pub(crate) state: Arc<RunState>,
    _brand: Brand<'run>,
}

impl fmt::Debug for NodeCtx<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("NodeCtx")
            .field("run_id", &self.state.run_id)
            .field("node_id", &self.state.node_id)
            .finish()
    }
}

impl<'run> NodeCtx<'run> {
    pub(crate) fn new(state: Arc<RunState>) -> Self {
        Self {
            state,
            _brand: PhantomData,
        }
    }

    /// The run.
    pub fn run_id(&self) -> &RunId {
        &self.state.run_id
    }

    /// The node instance within the run.
    pub fn node_id(&self) -> &str {
        &self.state.node_id
    }

    /// What was negotiated with the host (and the proofs for gated features).
    pub fn capabilities(&self) -> &RunCapabilities {
        &self.state.caps
    }

    /// The node's budget now.
    pub fn budget(&self) -> BudgetStatus {
        self.state.books().budget
    }

    /// The worst-case provider requests of `request` on this host under its policy.
    pub fn worst_case<T: Output>(&self, request: &AiRequest<T>) -> u32 {
        let policy = request.policy.unwrap_or(self.state.default_policy);
        self.state
            .caps
            .attempt_plan(request.wire.is_structured(), policy, 1, None)
            .requests
    }

    /// What the node's calls cost so far.
    pub fn calls(&self) -> Vec<CallReport> {
        self.state.books().calls.clone()
    }

    /// Makes one `ctx.callAI` call.
    ///
    /// Before dispatch the runtime refuses, as an [`AiFailure`], a call the node's budget cannot
    /// cover in the worst case (`budget_exhausted`) and a call that requires a retry policy the
    /// host does not honour (`capability_not_provided`). After it, the budget is charged
    /// `attempts.count` when the host reports it, else the worst case.
    ///
    /// Dropping the returned future (a `tokio::time::timeout`, a `select!`, an aborted task)
    /// cancels the call: its reservation is released and charged as the worst case (the call may
    /// have reached the provider, and how many requests it made is unknown to the node), and the
    /// node's report lists it as `cancelled`. The host, for its part, never charges the user for
    /// a dispatch whose outcome is unknown.
    ///
    /// The call's index (part of its identity) is taken when the returned future is first
    /// polled: await calls in a deterministic order (sequentially, or `join!` in a fixed order).
    pub fn call_ai<T: Output>(
        &self,
        request: impl IntoCall<'run, T>,
    ) -> impl Future<Output = Result<Completion<'run, T>, AiFailure<'run>>> + '_ {
        let (request, lineage) = request.into_parts();
        super::call::call(&self.state, request, lineage, Dispatch::Plain)
    }

    /// Makes one streamed `ctx.callAI` call (`callAIStream`): provisional fragments while the
    /// host works, then the terminal result ([`CallStream::finish`]), the same as
    /// [`NodeCtx::call_ai`]'s. Admission, budget, lineage and failures are those of a plain call;
    /// see [`crate::ai::stream`] for what a fragment is and is not.
    ///
    /// Dropping the stream before `finish` returns cancels the call as dropping a plain call's
    /// future does (charged once, as the worst case; reported `cancelled`). The call's index is
    /// taken when the stream is first read.
    pub fn call_ai_stream<T: Output>(
        &self,
        request: impl IntoCall<'run, T>,
    ) -> CallStream<'run, T> {
        let (request, lineage) = request.into_parts();
        let sink = StreamSink::new();
        let writer = sink.clone();
        let state = Arc::clone(&self.state);
        CallStream::new(
            sink,
            Box::pin(async move {
                super::call::call(&state, request, lineage, Dispatch::Stream(&writer)).await
            }),
        )
    }

    /// The conformance fixture's call: `retry` goes to the host as this raw JSON value,
    /// unvalidated, through the host's JSON edge ([`Host::call_ai_json`]), so that the host's own
    /// refusal of a malformed policy is what gets tested (RFC 0248 §B.5). Crate-private: packs
    /// cannot send what the typed [`RetryPolicy`] refuses.
    #[doc(hidden)]
    pub fn call_ai_with_raw_retry<T: Output>(
        &self,
        request: AiRequest<T>,
        raw_retry: serde_json::Value,
    ) -> impl Future<Output = Result<Completion<'run, T>, AiFailure<'run>>> + '_ {
        super::call::call(&self.state, request, None, Dispatch::RawRetry(raw_retry))
    }

    /// Settles a failure of this run: the host records that the pack handled it. A failure of
    /// another run cannot be passed here (the `'run` brand), and is refused at run time too.
    pub async fn settle_ai_failure(&self, failure: AiFailure<'run>) -> Result<(), NodeError<'run>> {
        self.state
            .failures
            .settle(failure)
            .await
            .map_err(NodeError::from_envelope)
    }
}
