//! Executes one node against a host: negotiation, required capabilities, `node.*` events,
//! settling of failures left unsettled, and the node's own cost report.

use super::ctx::NodeCtx;
use super::error::NodeErrorKind;
use super::spec::DynNode;
use super::state::{CallReport, RunState};
use super::unwind::{Unwinding, panic_message};
use crate::budget::BudgetStatus;
use crate::caps::RunCapabilities;
use crate::host::{Host, RunId};
use crate::wire::{ErrorCode, ErrorEnvelope, Event, NodeCompleted, NodeFailed, NodeStarted};
use serde::Serialize;
use serde_json::Value;
use std::borrow::Cow;
use std::sync::Arc;
use tracing::Instrument as _;
use tracing::field::Empty;

/// How one node execution ended, and what its calls cost.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct NodeOutcome {
    /// The run.
    #[serde(serialize_with = "ser_run")]
    pub run_id: RunId,
    /// The node instance.
    pub node_id: String,
    /// The output, or the public error of `node.failed`.
    pub result: Result<Value, ErrorEnvelope>,
    /// The node's calls, in call order.
    pub calls: Vec<CallReport>,
    /// The budget at the end.
    pub budget: BudgetStatus,
}

fn ser_run<S: serde::Serializer>(r: &RunId, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(r.as_str())
}

/// Executes `node` as `node_id` of `run_id` on `host` with a JSON `input`.
///
/// Records `node.started`, then `node.completed {output}` or `node.failed {error}`. A node that
/// requires a capability the host lacks fails `capability_not_provided` before any request.
/// Failures the node left unsettled are settled with the host when it ends.
///
/// The execution runs in a `wop.node` span (`wop.run_id`, `wop.node_id`, `wop.type_id`; at the
/// end `wop.outcome`, `completed` or `failed`, and for a failure `error.type`, its code), the
/// parent of its calls' spans.
///
/// `node_id` is made a shared text once (pass an `Arc<str>` to share one the caller holds): the
/// node's events and its calls' keys share it; the outcome has its own `String`.
pub fn execute<'a>(
    host: Arc<dyn Host>,
    run_id: RunId,
    node_id: impl Into<Arc<str>>,
    node: &'a dyn DynNode,
    input: Value,
) -> impl Future<Output = NodeOutcome> + 'a {
    execute_shared(host, run_id, node_id.into(), node, input)
}

/// [`execute`] with the node's id made shared (one body, whatever the caller passed).
async fn execute_shared(
    host: Arc<dyn Host>,
    run_id: RunId,
    node_id: Arc<str>,
    node: &dyn DynNode,
    input: Value,
) -> NodeOutcome {
    let span = tracing::info_span!(
        "wop.node",
        wop.run_id = %run_id,
        wop.node_id = &*node_id,
        wop.type_id = node.spec().type_id,
        wop.outcome = Empty,
        error.type = Empty,
    );
    if span.is_disabled() {
        return execute_in(host, run_id, node_id, node, input).await;
    }
    let outcome = execute_in(host, run_id, node_id, node, input)
        .instrument(span.clone())
        .await;
    match &outcome.result {
        Ok(_) => span.record("wop.outcome", "completed"),
        Err(e) => span
            .record("wop.outcome", "failed")
            .record("error.type", e.error.as_str()),
    };
    outcome
}

async fn execute_in(
    host: Arc<dyn Host>,
    run_id: RunId,
    node_id: Arc<str>,
    node: &dyn DynNode,
    input: Value,
) -> NodeOutcome {
    let spec = node.spec();
    let caps = RunCapabilities::with_host(host.as_ref());
    host.record_event(
        &run_id,
        Event::NodeStarted(NodeStarted {
            node_id: Arc::clone(&node_id),
            type_id: Cow::Borrowed(spec.type_id),
            attempt: None,
        }),
    )
    .await;
    let state = Arc::new(RunState::new(
        Arc::clone(&host),
        run_id.clone(),
        Arc::clone(&node_id),
        caps,
        spec.retry,
        spec.max_calls,
    ));
    let missing = spec.requires.iter().find(|c| !state.caps.has(**c));
    let result = if let Some(missing) = missing {
        Err(ErrorEnvelope::new(
            ErrorCode::CapabilityNotProvided,
            format!(
                "the node `{}` requires `{}`, which the host does not advertise",
                spec.type_id,
                missing.name()
            ),
        )
        .with_detail("capability", missing.name()))
    } else {
        let ctx = NodeCtx::new(Arc::clone(&state));
        let out = Unwinding(node.run_json(&ctx, input)).await;
        match out {
            Err(panic) => Err(ErrorEnvelope::new(
                ErrorCode::NodeFailed,
                format!("the node panicked: {}", panic_message(&*panic)),
            )),
            Ok(Ok(v)) => Ok(v),
            Ok(Err(e)) => Err(match e.kind {
                NodeErrorKind::Own(env) => env,
                NodeErrorKind::Ai { id, ref book } => {
                    if Arc::ptr_eq(book, &state.failures) {
                        book.public_of(id).unwrap_or_else(|| {
                            ErrorEnvelope::new(ErrorCode::NodeFailed, "an AI call failed")
                        })
                    } else {
                        ErrorEnvelope::validation(
                            "failure",
                            "an AI failure of another run was propagated",
                        )
                    }
                }
            }),
        }
    };
    state.failures.settle_remaining().await;
    host.record_event(&run_id, ended(Arc::clone(&node_id), &result))
        .await;
    // The node has ended: its call reports move into the outcome.
    let mut books = state.books();
    NodeOutcome {
        run_id,
        node_id: String::from(&*node_id),
        result,
        calls: std::mem::take(&mut books.calls),
        budget: books.budget,
    }
}

/// `node.completed` with the output's ports, or `node.failed` with the public error.
pub fn ended(node_id: impl Into<Arc<str>>, result: &Result<Value, ErrorEnvelope>) -> Event {
    let node_id = node_id.into();
    match result {
        Ok(output) => Event::NodeCompleted(NodeCompleted {
            node_id,
            outputs: NodeCompleted::ports(output.clone()),
            duration_ms: None,
        }),
        Err(error) => Event::NodeFailed(NodeFailed {
            node_id,
            error: error.into(),
            attempts: None,
        }),
    }
}
