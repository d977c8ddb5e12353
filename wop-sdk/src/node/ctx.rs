//! The node context: typed calls, settling, budget, capabilities.

use super::NodeError;
use crate::ai::{AiFailure, Brand, Completion, IntoCall, InvalidOutput, Output};
use crate::budget::{BudgetStatus, worst_case_requests};
use crate::caps::Capabilities;
use crate::host::{AttemptKey, FailureToken, Host, RunId};
use crate::policy::RetryPolicy;
use crate::wire::{CallAiResult, ErrorCode, ErrorEnvelope, SemanticStatus};
use serde::Serialize;
use std::collections::BTreeMap;
use std::fmt;
use std::marker::PhantomData;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

/// What one call of a node cost, as the runtime saw it: the node's own report.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct CallReport {
    /// The call's index within the node execution.
    pub call_index: u32,
    /// Provider requests charged to the budget (`attempts.count`, or the worst case when the host
    /// does not report attempts or the call failed).
    pub charged: u32,
    /// `attempts.count` when the host reported it.
    pub requests: Option<u32>,
    /// `attempts.outputTokens` when reported.
    pub output_tokens: Option<u64>,
    /// `attempts.usageComplete` when reported.
    pub usage_complete: Option<bool>,
    /// `ok`, `invalid_output`, or the failure's public code.
    pub status: String,
    /// A deliberate retry: the reason.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub retry_reason: Option<String>,
}

pub(crate) struct FailureRecord {
    pub(crate) public: ErrorEnvelope,
    pub(crate) token: Option<FailureToken>,
}

#[derive(Default)]
pub(crate) struct Books {
    pub(crate) budget: BudgetStatus,
    pub(crate) failures: BTreeMap<u64, FailureRecord>,
    pub(crate) next_failure: u64,
    pub(crate) calls: Vec<CallReport>,
}

/// The state of one node execution, shared by its context, its failures and its errors.
pub(crate) struct RunState {
    pub(crate) host: Arc<dyn Host>,
    pub(crate) run_id: RunId,
    pub(crate) node_id: String,
    pub(crate) caps: Capabilities,
    pub(crate) default_policy: RetryPolicy,
    next_call: AtomicU32,
    books: Mutex<Books>,
}

impl RunState {
    pub(crate) fn new(
        host: Arc<dyn Host>,
        run_id: RunId,
        node_id: String,
        caps: Capabilities,
        default_policy: RetryPolicy,
        max_calls: Option<u32>,
    ) -> Self {
        let books = Books {
            budget: BudgetStatus {
                max_calls,
                used: 0,
                reserved: 0,
            },
            ..Books::default()
        };
        Self {
            host,
            run_id,
            node_id,
            caps,
            default_policy,
            next_call: AtomicU32::new(0),
            books: Mutex::new(books),
        }
    }

    pub(crate) fn books(&self) -> MutexGuard<'_, Books> {
        self.books.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn record_failure(&self, public: ErrorEnvelope, token: Option<FailureToken>) -> u64 {
        let mut books = self.books();
        books.next_failure += 1;
        let id = books.next_failure;
        books.failures.insert(id, FailureRecord { public, token });
        id
    }
}

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
    pub fn capabilities(&self) -> &Capabilities {
        &self.state.caps
    }

    /// The node's budget now.
    pub fn budget(&self) -> BudgetStatus {
        self.state.books().budget
    }

    /// The worst-case provider requests of `request` on this host under its policy.
    pub fn worst_case<T: Output>(&self, request: &crate::ai::AiRequest<T>) -> u32 {
        let policy = request.policy.unwrap_or(self.state.default_policy);
        worst_case_requests(&self.state.caps, request.wire.is_structured(), policy)
    }

    /// What the node's calls cost so far.
    pub fn calls(&self) -> Vec<CallReport> {
        self.state.books().calls.clone()
    }

    fn fail(&self, public: ErrorEnvelope, token: Option<FailureToken>) -> AiFailure<'run> {
        AiFailure::new(
            self.state.record_failure(public, token),
            Arc::clone(&self.state),
        )
    }

    /// Makes one `ctx.callAI` call.
    ///
    /// Before dispatch the runtime refuses, as an [`AiFailure`], a call the node's budget cannot
    /// cover in the worst case (`budget_exhausted`) and a call that requires a retry policy the
    /// host does not honour (`capability_not_provided`). After it, the budget is charged
    /// `attempts.count` when the host reports it, else the worst case.
    ///
    /// The call's index (part of its identity) is taken when the returned future is first
    /// polled: await calls in a deterministic order (sequentially, or `join!` in a fixed order).
    pub async fn call_ai<T: Output>(
        &self,
        request: impl IntoCall<'run, T>,
    ) -> Result<Completion<'run, T>, AiFailure<'run>> {
        let (request, lineage) = request.into_parts();
        let call_index = self.state.next_call.fetch_add(1, Ordering::SeqCst);
        let state = &self.state;
        let policy = request.policy.unwrap_or(state.default_policy);
        let honoured = state.caps.retry_policy().is_some();
        let structured = request.wire.is_structured();
        let mut report = CallReport {
            call_index,
            charged: 0,
            requests: None,
            output_tokens: None,
            usage_complete: None,
            status: String::new(),
            retry_reason: lineage.as_ref().map(|l| l.reason.as_str().to_owned()),
        };
        if request.require_retry_policy && !honoured && policy != RetryPolicy::HOST_DEFAULT {
            let e = ErrorEnvelope::new(
                ErrorCode::CapabilityNotProvided,
                "the call requires a per-call retry policy, but the host does not advertise \
                 `aiProviders.callAccounting.retryPolicy`",
            )
            .with_detail("capability", "aiProviders.callAccounting.retryPolicy");
            report.status = e.error.as_str().to_owned();
            state.books().calls.push(report);
            return Err(self.fail(e, None));
        }
        let worst = worst_case_requests(&state.caps, structured, policy);
        {
            let mut books = state.books();
            if !books.budget.admits(worst) {
                let b = books.budget;
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
                report.status = e.error.as_str().to_owned();
                books.calls.push(report);
                drop(books);
                return Err(self.fail(e, None));
            }
            books.budget.reserved += worst;
        }
        let mut wire = request.wire;
        if honoured {
            wire.retry = policy.to_wire();
        }
        if let Some(lineage) = lineage {
            // A host without `callAccounting` ignores the lineage fields: without these messages
            // the retry could be the same request, and a host cache would return the same reply.
            if state.caps.document().call_accounting.is_none() {
                wire.messages.extend(lineage.corrective_messages());
            }
            wire.retry_of_attempt_id = Some(lineage.attempt_id);
            wire.retry_reason = Some(lineage.reason);
        }
        let key = AttemptKey {
            run_id: state.run_id.clone(),
            node_id: state.node_id.clone(),
            call_index,
        };
        let mut wire_json = wire.to_json();
        if let (Some(raw), serde_json::Value::Object(map)) = (request.raw_retry, &mut wire_json) {
            // The conformance fixture's raw `retry`: sent as is, so the host's own validation is
            // what gets tested (RFC 0248 §B.5).
            map.insert("retry".to_owned(), raw);
        }
        let answer = state.host.call_ai(&key, &wire_json).await;
        let outcome = answer
            .map_err(|f| (f.public, Some(f.token)))
            .and_then(|value| {
                let result = CallAiResult::from_json(&value, structured)
                    .map_err(|e| (e.to_envelope(), None))?;
                check_result(&state.caps, result)
            });
        let mut books = state.books();
        books.budget.reserved -= worst;
        match outcome {
            Err((public, token)) => {
                report.charged = worst;
                report.status = public.error.as_str().to_owned();
                books.budget.used += worst;
                books.calls.push(report);
                drop(books);
                Err(self.fail(public, token))
            }
            Ok((attempt_id, result)) => {
                let charged = result.attempts.map_or(worst, |a| a.count);
                books.budget.used += charged;
                let mut output = T::from_result(result.data.as_ref(), result.content.as_deref())
                    .map_err(|errors| InvalidOutput {
                        errors,
                        raw: raw_output(&result),
                    });
                if result.semantic_status == Some(SemanticStatus::InvalidOutput) && output.is_ok() {
                    output = Err(InvalidOutput {
                        errors: vec![
                            "the host reported `semanticStatus: invalid_output`".to_owned(),
                        ],
                        raw: raw_output(&result),
                    });
                }
                if let (Ok(value), Some(check)) = (&output, &request.validator)
                    && let Err(errors) = check(value)
                {
                    output = Err(InvalidOutput {
                        errors,
                        raw: raw_output(&result),
                    });
                }
                report.charged = charged;
                report.requests = result.attempts.map(|a| a.count);
                report.output_tokens = result.attempts.and_then(|a| a.output_tokens);
                report.usage_complete = result.attempts.map(|a| a.usage_complete);
                report.status = if output.is_ok() {
                    "ok"
                } else {
                    "invalid_output"
                }
                .to_owned();
                books.calls.push(report);
                Ok(Completion::new(
                    attempt_id,
                    output,
                    result.usage,
                    result.attempts,
                    result.finish_reason,
                    result.model,
                    honoured,
                ))
            }
        }
    }

    /// Settles a failure of this run: the host records that the pack handled it. A failure of
    /// another run cannot be passed here (the `'run` brand), and is refused at run time too.
    pub async fn settle_ai_failure(&self, failure: AiFailure<'run>) -> Result<(), NodeError> {
        if !Arc::ptr_eq(&failure.state, &self.state) {
            return Err(NodeError::from_envelope(ErrorEnvelope::validation(
                "failure",
                "belongs to another run or node execution and cannot be settled here",
            )));
        }
        let token = {
            let mut books = self.state.books();
            let Some(record) = books.failures.get_mut(&failure.local) else {
                return Err(NodeError::new("unknown failure"));
            };
            // Taken: the host is told once; the runner tells it about the rest at the end.
            record.token.take()
        };
        if let Some(token) = token {
            self.state
                .host
                .settle_ai_failure(&self.state.run_id, token)
                .await
                .map_err(NodeError::from_envelope)?;
        }
        Ok(())
    }
}

fn raw_output(result: &CallAiResult) -> serde_json::Value {
    match (&result.data, &result.content) {
        (Some(d), _) => d.clone(),
        (None, Some(c)) => serde_json::Value::String(c.clone()),
        (None, None) => serde_json::Value::Null,
    }
}

/// Applies capability gating to a host's result: drops `attempts` a host did not advertise,
/// refuses a result without them from a host that did, and requires an `attemptId`.
fn check_result(
    caps: &Capabilities,
    mut result: CallAiResult,
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
    let Some(id) = result.attempt_id.clone().filter(|id| !id.is_empty()) else {
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
