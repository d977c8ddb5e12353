//! The state of one node execution, shared by its context (`ctx.rs`) and its calls (`call.rs`):
//! the host, the run, the capabilities, the budget books and the failure book.

use crate::budget::BudgetStatus;
use crate::caps::RunCapabilities;
use crate::failure::FailureBook;
use crate::host::{Host, RunId};
use crate::policy::RetryPolicy;
use serde::Serialize;
use std::sync::atomic::AtomicU32;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

/// What one call of a node cost, as the runtime saw it: the node's own report.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct CallReport {
    /// The call's index within the node execution.
    pub call_index: u32,
    /// Provider requests charged to the budget (`attempts.count`, or the worst case when the host
    /// does not report attempts, the call failed, or it was cancelled).
    pub charged: u32,
    /// `attempts.count` when the host reported it.
    pub requests: Option<u32>,
    /// `attempts.outputTokens` when reported.
    pub output_tokens: Option<u64>,
    /// `attempts.usageComplete` when reported.
    pub usage_complete: Option<bool>,
    /// `ok`, `invalid_output`, `cancelled`, or the failure's public code (each a fixed text: a
    /// report costs no allocation for it).
    pub status: &'static str,
    /// A deliberate retry: the reason.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub retry_reason: Option<String>,
}

/// The budget and the call reports of one node execution.
#[derive(Default)]
pub(crate) struct Books {
    pub(crate) budget: BudgetStatus,
    pub(crate) calls: Vec<CallReport>,
}

/// The state of one node execution, shared by its context and its calls.
pub(crate) struct RunState {
    pub(crate) host: Arc<dyn Host>,
    pub(crate) run_id: RunId,
    pub(crate) node_id: Arc<str>,
    pub(crate) caps: RunCapabilities,
    pub(crate) default_policy: RetryPolicy,
    pub(crate) next_call: AtomicU32,
    books: Mutex<Books>,
    pub(crate) failures: Arc<FailureBook>,
}

impl RunState {
    pub(crate) fn new(
        host: Arc<dyn Host>,
        run_id: RunId,
        node_id: Arc<str>,
        caps: RunCapabilities,
        default_policy: RetryPolicy,
        max_calls: Option<u32>,
    ) -> Self {
        let books = Books {
            budget: BudgetStatus {
                max_calls,
                used: 0,
                reserved: 0,
            },
            calls: Vec::new(),
        };
        Self {
            failures: FailureBook::new(Arc::clone(&host), run_id.clone()),
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
}
