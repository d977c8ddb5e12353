//! The in-memory journal: the same contract as the SQLite one, for tests and for a host that
//! keeps nothing across restarts. Nothing survives the process, and a retention rule
//! ([`Retention`], `retention.rs`) bounds what it holds in a long-lived one. What it holds is a
//! [`Records`] (`records.rs`), which the log journal keeps too.

mod answers;
mod calls;
mod records;
mod retention;

pub(in crate::journal) use records::Records;
pub use retention::Retention;

use super::{
    Begin, Charge, ChargeRow, Entry, Fingerprint, Journal, JournalError, Lease, Outcome, RunRecord,
};
use crate::answers::ready;
use answers::{begun, done};
use retention::Ended;
use std::sync::{Mutex, MutexGuard, PoisonError};
use std::time::SystemTime;
use wop_sdk::host::{AttemptKey, BoxFuture, RunId};
use wop_sdk::wire::{Event, RunEvent};

#[derive(Default)]
struct State {
    records: Records,
    /// The runs with no node executing, oldest first, and what has been dropped.
    ended: Ended,
}

/// A journal held in memory, bounded by its [`Retention`].
#[derive(Default)]
pub struct MemoryJournal {
    state: Mutex<State>,
    retention: Retention,
}

impl std::fmt::Debug for MemoryJournal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MemoryJournal")
            .field("calls", &self.lock().records.call_count())
            .finish()
    }
}

impl MemoryJournal {
    /// An empty journal with the default retention ([`Retention::default`]: the last 10 000
    /// ended runs).
    pub fn new() -> Self {
        Self::default()
    }

    /// An empty journal that keeps ended runs as `retention` says, then drops them (their
    /// calls, events and charges with them). A run with a node executing is never dropped.
    pub fn with_retention(retention: Retention) -> Self {
        Self {
            state: Mutex::default(),
            retention,
        }
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

impl Journal for MemoryJournal {
    fn begin_run(&self, run: RunRecord) -> BoxFuture<'_, Result<(), JournalError>> {
        let mut s = self.lock();
        // A run that ended and is begun again (a second node) is not dropped meanwhile.
        s.ended.resume(run.run_id.as_str());
        s.records.register_run(run);
        done()
    }

    fn run<'a>(&'a self, run: &'a RunId) -> BoxFuture<'a, Result<Option<RunRecord>, JournalError>> {
        ready(Ok(self.lock().records.run(run)))
    }

    fn runs(&self) -> BoxFuture<'_, Result<Vec<RunRecord>, JournalError>> {
        ready(Ok(self.lock().records.runs()))
    }

    fn begin<'a>(
        &'a self,
        key: &'a AttemptKey,
        fingerprint: &'a Fingerprint,
        attempt_id: &'a str,
    ) -> BoxFuture<'a, Result<Begin, JournalError>> {
        begun(
            self.lock()
                .records
                .begin(key, fingerprint, attempt_id, 0, None),
        )
    }

    fn begin_leased<'a>(
        &'a self,
        key: &'a AttemptKey,
        fingerprint: &'a Fingerprint,
        attempt_id: &'a str,
        max_tokens: u32,
        lease: &'a Lease,
    ) -> BoxFuture<'a, Result<Begin, JournalError>> {
        // One lock: nobody sees the identity without its lease. Request 1 is announced with the
        // identity (`max_tokens` is not kept in memory).
        let _ = max_tokens;
        begun(
            self.lock()
                .records
                .begin(key, fingerprint, attempt_id, 1, Some(lease)),
        )
    }

    fn renew_lease<'a>(
        &'a self,
        key: &'a AttemptKey,
        lease: &'a Lease,
    ) -> BoxFuture<'a, Result<bool, JournalError>> {
        ready(Ok(self.lock().records.renew_lease(key, lease)))
    }

    fn leased<'a>(
        &'a self,
        key: &'a AttemptKey,
    ) -> BoxFuture<'a, Result<Option<Lease>, JournalError>> {
        ready(Ok(self.lock().records.leased(key)))
    }

    fn record_request<'a>(
        &'a self,
        key: &'a AttemptKey,
        n: u32,
        _max_tokens: u32,
    ) -> BoxFuture<'a, Result<(), JournalError>> {
        match self.lock().records.record_request(key, n) {
            Ok(()) => done(),
            Err(e) => ready(Err(e)),
        }
    }

    fn finish<'a>(
        &'a self,
        key: &'a AttemptKey,
        outcome: Outcome,
        charge: Option<Charge>,
        events: Vec<Event>,
    ) -> BoxFuture<'a, Result<(), JournalError>> {
        // Every event is checked before anything is written: all or nothing.
        if let Err(e) = events.iter().try_for_each(super::checked) {
            return ready(Err(e));
        }
        let now = SystemTime::now();
        match self
            .lock()
            .records
            .finish(key, outcome, charge, events, now)
        {
            Ok(()) => done(),
            Err(e) => ready(Err(e)),
        }
    }

    fn lookup<'a>(
        &'a self,
        key: &'a AttemptKey,
    ) -> BoxFuture<'a, Result<Option<Entry>, JournalError>> {
        ready(Ok(self.lock().records.lookup(key)))
    }

    fn completed_attempt<'a>(
        &'a self,
        run: &'a RunId,
        attempt_id: &'a str,
    ) -> BoxFuture<'a, Result<bool, JournalError>> {
        ready(Ok(self.lock().records.completed_attempt(run, attempt_id)))
    }

    fn append_event<'a>(
        &'a self,
        run: &'a RunId,
        event: Event,
    ) -> BoxFuture<'a, Result<u64, JournalError>> {
        if let Err(e) = super::checked(&event) {
            return ready(Err(e));
        }
        let now = SystemTime::now();
        ready(Ok(self.lock().records.append_events(run, [event], now)))
    }

    fn events<'a>(&'a self, run: &'a RunId) -> BoxFuture<'a, Result<Vec<RunEvent>, JournalError>> {
        ready(Ok(self.lock().records.events(run)))
    }

    fn charges<'a>(
        &'a self,
        run: Option<&'a RunId>,
    ) -> BoxFuture<'a, Result<Vec<ChargeRow>, JournalError>> {
        ready(Ok(self.lock().records.charges(run)))
    }

    fn call_count(&self) -> BoxFuture<'_, Result<u64, JournalError>> {
        ready(Ok(self.lock().records.call_count()))
    }

    fn run_ended(&self, run: &RunId) {
        let mut s = self.lock();
        let State { ended, records } = &mut *s;
        for old in ended.end(run, &self.retention) {
            records.drop_run(&old);
        }
    }
}
