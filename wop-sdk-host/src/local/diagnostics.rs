//! The host's private diagnostics: the cause of every failure, which pack code never sees.
//! Indexed by run (a token names its run, so settling is a lookup), and pruned with the runs:
//! the diagnostics of the most recent finished runs are kept (`diagnostics_retained_runs`), older
//! ones go, so a long-lived host does not grow with the runs it has served.

use super::lock::lock;
use foldhash::HashMap;
use serde::Serialize;
use std::collections::VecDeque;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};
use wop_sdk::host::{AttemptKey, FailureToken, RunId};
use wop_sdk::wire::ErrorEnvelope;

/// Something a host operator may read and a pack never sees: the cause of a failure.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Diagnostic {
    /// The failure's token.
    pub token: u64,
    /// The run.
    pub run_id: String,
    /// The call, when the failure is a call's.
    pub call: Option<String>,
    /// The public code.
    pub code: String,
    /// The private cause (provider error text, policy, billing).
    pub cause: String,
    /// The dispatch outcome was unknown.
    pub ambiguous: bool,
    /// Settled by the pack.
    pub settled: bool,
}

#[derive(Default)]
struct Book {
    by_run: HashMap<RunId, Vec<Diagnostic>>,
    token_run: HashMap<u64, RunId>,
    /// Finished runs, oldest first: pruned beyond the retention.
    finished: VecDeque<RunId>,
}

pub(crate) struct Diagnostics {
    book: Mutex<Book>,
    next: AtomicU64,
    retained_runs: usize,
}

impl Diagnostics {
    pub(crate) fn new(retained_runs: usize) -> Self {
        Self {
            book: Mutex::default(),
            next: AtomicU64::new(1),
            retained_runs,
        }
    }

    /// Records a failure's cause and returns the token that names it.
    pub(crate) fn record(
        &self,
        run: &RunId,
        key: Option<&AttemptKey>,
        public: &ErrorEnvelope,
        cause: String,
        ambiguous: bool,
    ) -> FailureToken {
        let token = self.next.fetch_add(1, Ordering::Relaxed);
        let mut book = lock(&self.book);
        book.token_run.insert(token, run.clone());
        book.by_run
            .entry(run.clone())
            .or_default()
            .push(Diagnostic {
                token,
                run_id: run.as_str().to_owned(),
                call: key.map(ToString::to_string),
                code: public.error.as_str().to_owned(),
                cause,
                ambiguous,
                settled: false,
            });
        FailureToken::new(token)
    }

    /// Marks `token` settled when it is a failure of `run`.
    pub(crate) fn settle(&self, run: &RunId, token: FailureToken) -> bool {
        let mut book = lock(&self.book);
        if book.token_run.get(&token.get()) != Some(run) {
            return false;
        }
        book.by_run
            .get_mut(run)
            .and_then(|ds| ds.iter_mut().find(|d| d.token == token.get()))
            .map(|d| d.settled = true)
            .is_some()
    }

    /// A run's node ended: its diagnostics are kept among the most recent finished runs'.
    pub(crate) fn run_finished(&self, run: &RunId) {
        let mut book = lock(&self.book);
        if !book.by_run.contains_key(run) {
            return;
        }
        book.finished.retain(|r| r != run);
        book.finished.push_back(run.clone());
        while book.finished.len() > self.retained_runs {
            if let Some(old) = book.finished.pop_front()
                && let Some(ds) = book.by_run.remove(&old)
            {
                for d in ds {
                    book.token_run.remove(&d.token);
                }
            }
        }
    }

    /// A run's diagnostics.
    pub(crate) fn of_run(&self, run: &RunId) -> Vec<Diagnostic> {
        lock(&self.book)
            .by_run
            .get(run)
            .cloned()
            .unwrap_or_default()
    }

    /// Every diagnostic kept, in token order.
    pub(crate) fn all(&self) -> Vec<Diagnostic> {
        let mut all: Vec<Diagnostic> = lock(&self.book)
            .by_run
            .values()
            .flatten()
            .cloned()
            .collect();
        all.sort_by_key(|d| d.token);
        all
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use wop_sdk::wire::ErrorCode;

    #[test]
    fn tokens_settle_only_in_their_run_and_old_runs_are_pruned() {
        let d = Diagnostics::new(1);
        let (a, b) = (RunId::new("t/a"), RunId::new("t/b"));
        let e = ErrorEnvelope::new(ErrorCode::EnvelopeInvalid, "x");
        let ta = d.record(&a, None, &e, "cause a".into(), false);
        assert!(!d.settle(&b, ta));
        assert!(d.settle(&a, ta));
        d.run_finished(&a);
        let tb = d.record(&b, None, &e, "cause b".into(), false);
        assert_eq!(d.all().len(), 2);
        d.run_finished(&b);
        // Retention 1: run a's diagnostics went with it.
        assert!(d.of_run(&a).is_empty());
        assert_eq!(d.of_run(&b)[0].token, tb.get());
        assert!(!d.settle(&a, ta));
    }
}
