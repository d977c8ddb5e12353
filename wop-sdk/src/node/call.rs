//! One call from a node, from [`crate::NodeCtx::call_ai`] to the host and back: admission
//! against the node's budget and the host's capabilities, the typed request handed to the host,
//! the answer checked as any host answer is, and the typed [`Completion`] or opaque failure.

use super::state::{CallReport, RunState};
use crate::ai::request::Lineage;
use crate::ai::{AiFailure, AiRequest, Completion, InvalidOutput, Output};
use crate::caps::RunCapabilities;
use crate::host::{AttemptKey, FailureToken, StreamSink};
use crate::policy::RetryPolicy;
use crate::wire::{CallAiResult, ErrorCode, ErrorEnvelope, SemanticStatus};
use serde_json::Value;
use std::sync::Arc;
use std::sync::atomic::Ordering;

/// A call's worst case, reserved against the node's budget while the call is in flight.
///
/// Dropped without [`Reservation::settle`] (the call's future was dropped: a timeout, a
/// `select!`, an aborted task), it charges the worst case and reports the call `cancelled`, so a
/// cancelled call neither leaks its reservation nor escapes the budget.
struct Reservation<'a> {
    state: &'a RunState,
    worst: u32,
    report: Option<CallReport>,
}

impl<'a> Reservation<'a> {
    /// Reserves `worst` requests, or refuses with `budget_exhausted` (the report is recorded).
    fn take(
        state: &'a RunState,
        worst: u32,
        mut report: CallReport,
    ) -> Result<Self, ErrorEnvelope> {
        let mut books = state.books();
        let b = books.budget;
        if !b.admits(worst) {
            let e = ErrorEnvelope::new(
                ErrorCode::BudgetExhausted,
                format!(
                    "the call could make {worst} provider requests but the node's budget has {} of {} left",
                    b.remaining().unwrap_or(0),
                    b.max_calls.unwrap_or(0)
                ),
            )
            .with_detail("maxCalls", b.max_calls.unwrap_or(0))
            .with_detail("used", b.used)
            .with_detail("worstCase", worst);
            report.status = e.error.as_str();
            books.calls.push(report);
            return Err(e);
        }
        books.budget.reserved += worst;
        Ok(Self {
            state,
            worst,
            report: Some(report),
        })
    }

    /// The call ended: `charged` requests move from reserved to used, and the report is filed.
    fn settle(mut self, charged: u32, fill: impl FnOnce(&mut CallReport)) {
        if let Some(mut report) = self.report.take() {
            report.charged = charged;
            fill(&mut report);
            self.file(report);
        }
    }

    fn file(&self, report: CallReport) {
        let mut books = self.state.books();
        books.budget.reserved -= self.worst;
        books.budget.used += report.charged;
        books.calls.push(report);
    }
}

impl Drop for Reservation<'_> {
    fn drop(&mut self) {
        if let Some(mut report) = self.report.take() {
            report.charged = self.worst;
            report.status = "cancelled";
            self.file(report);
        }
    }
}

/// How a call reaches the host.
pub(crate) enum Dispatch<'s> {
    /// [`crate::host::Host::call_ai`].
    Plain,
    /// The conformance fixture only: `retry` sent as this raw value, unvalidated, through the
    /// host's JSON edge.
    RawRetry(Value),
    /// [`crate::host::Host::call_ai_stream`], provisional items into the sink.
    Stream(&'s StreamSink),
}

/// Makes one call for a node execution. Nothing happens until the future is first polled (the
/// call's index is taken then).
///
/// Written as an `async` block over the request it owns, worked on in place: an `async fn`
/// keeps its arguments twice (as arguments and as the body's locals) and kept the request's
/// wire form a third time once taken apart. A node's future holds this one whole: about 0.65 KB
/// this way, 1.6 KB before with `call_ai`'s own `async fn` around it (past the sizes the
/// allocator serves from its per-thread cache).
#[allow(clippy::manual_async_fn)] // the point: see above
pub(crate) fn call<'s, 'run, T: Output>(
    state: &'s Arc<RunState>,
    mut request: AiRequest<T>,
    lineage: Option<Lineage>,
    dispatch: Dispatch<'s>,
) -> impl Future<Output = Result<Completion<'run, T>, AiFailure<'run>>> + 's {
    async move {
        let call_index = state.next_call.fetch_add(1, Ordering::SeqCst);
        let policy = request.policy.unwrap_or(state.default_policy);
        let honoured = state.caps.retry_policy().is_some();
        let structured = request.wire.is_structured();
        let report = CallReport {
            call_index,
            charged: 0,
            requests: None,
            output_tokens: None,
            usage_complete: None,
            status: "",
            retry_reason: lineage.as_ref().map(|l| l.reason.as_str().to_owned()),
        };
        if request.require_retry_policy && !honoured && policy != RetryPolicy::HOST_DEFAULT {
            let e = ErrorEnvelope::new(
                ErrorCode::CapabilityNotProvided,
                "the call requires a per-call retry policy, but the host does not advertise \
             `aiProviders.callAccounting.retryPolicy`",
            )
            .with_detail("capability", "aiProviders.callAccounting.retryPolicy");
            state.books().calls.push(CallReport {
                status: e.error.as_str(),
                ..report
            });
            return Err(state.failures.record(e, None));
        }
        let worst = state
            .caps
            .attempt_plan(structured, policy, 1, None)
            .requests;
        let reservation = match Reservation::take(state, worst, report) {
            Ok(r) => r,
            Err(e) => return Err(state.failures.record(e, None)),
        };
        let wire = &mut request.wire;
        let validator = &request.validator;
        if honoured {
            wire.retry = policy.to_wire();
        }
        if let Some(lineage) = lineage {
            // A host without `callAccounting` ignores the lineage fields: without these messages the
            // retry could be the same request, and a host cache would return the same reply.
            if state.caps.document().call_accounting.is_none() {
                lineage.append_corrective_messages(&mut wire.messages);
            }
            wire.retry_of_attempt_id = Some(lineage.attempt_id);
            wire.retry_reason = Some(lineage.reason);
        }
        let key = AttemptKey {
            run_id: state.run_id.clone(),
            node_id: Arc::clone(&state.node_id),
            call_index,
        };
        let answer = match dispatch {
            Dispatch::Plain => state.host.call_ai(&key, wire).await,
            Dispatch::Stream(sink) => state.host.call_ai_stream(&key, wire, sink).await,
            Dispatch::RawRetry(raw) => {
                let mut json = wire.to_json();
                if let Value::Object(map) = &mut json {
                    map.insert("retry".to_owned(), raw);
                }
                state.host.call_ai_json(&key, &json).await
            }
        };
        let outcome = answer
            .map_err(|f| (f.public, Some(f.token)))
            .and_then(|result| check_result(&state.caps, result, structured));
        match outcome {
            Err((public, token)) => {
                reservation.settle(worst, |r| r.status = public.error.as_str());
                Err(state.failures.record(public, token))
            }
            Ok((attempt_id, mut result)) => {
                let attempts = result.attempts;
                let charged = attempts.map_or(worst, |a| a.count);
                let data = result.data.take();
                let content = result.content.take();
                let invalid = |errors| InvalidOutput {
                    errors,
                    raw: match (&data, &content) {
                        (Some(d), _) => d.clone(),
                        (None, Some(c)) => Value::String(c.clone()),
                        (None, None) => Value::Null,
                    },
                };
                let mut output = T::from_result(data.as_ref(), content.as_deref()).map_err(invalid);
                if result.semantic_status == Some(SemanticStatus::InvalidOutput) && output.is_ok() {
                    output = Err(invalid(vec![
                        "the host reported `semanticStatus: invalid_output`".to_owned(),
                    ]));
                }
                if let (Ok(value), Some(check)) = (&output, validator)
                    && let Err(errors) = check(value)
                {
                    output = Err(invalid(errors));
                }
                let valid = output.is_ok();
                reservation.settle(charged, |r| {
                    r.requests = attempts.map(|a| a.count);
                    r.output_tokens = attempts.and_then(|a| a.output_tokens);
                    r.usage_complete = attempts.map(|a| a.usage_complete);
                    r.status = if valid { "ok" } else { "invalid_output" };
                });
                Ok(Completion::new(
                    attempt_id,
                    output,
                    result.usage,
                    attempts,
                    result.finish_reason,
                    result.model,
                    honoured,
                ))
            }
        }
    }
}

/// Holds a host's result to the contract: the rules of a wire result
/// ([`CallAiResult::check`]), capability gating (drops `attempts` a host did not advertise,
/// refuses a result without them from a host that did), and an `attemptId`.
fn check_result(
    caps: &RunCapabilities,
    mut result: CallAiResult,
    structured: bool,
) -> Result<(String, CallAiResult), (ErrorEnvelope, Option<FailureToken>)> {
    if caps.attempts().is_none() {
        result.attempts = None;
    } else if result.attempts.is_none() {
        return Err((
            ErrorEnvelope::new(
                ErrorCode::ProtocolError,
                "the host advertises `callAccounting.attempts` but its result has no `attempts` (RFC 0248 §A)",
            )
            .with_detail("field", "attempts"),
            None,
        ));
    }
    result
        .check(structured)
        .map_err(|e| (e.to_envelope(), None))?;
    let Some(id) = result.attempt_id.take().filter(|id| !id.is_empty()) else {
        return Err((
            ErrorEnvelope::new(
                ErrorCode::ProtocolError,
                "the host's result has no `attemptId`",
            )
            .with_detail("field", "attemptId"),
            None,
        ));
    };
    Ok((id, result))
}
