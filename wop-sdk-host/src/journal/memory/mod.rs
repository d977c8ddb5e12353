//! The in-memory journal: the same contract as the SQLite one, for tests and for a host that
//! keeps nothing across restarts. Nothing survives the process, and a retention rule
//! ([`Retention`], `retention.rs`) bounds what it holds in a long-lived one.
//!
//! Everything of a run sits in one place (its record, calls, charges, leases and events), so a
//! call's key is stored once, not once per table, and dropping a run is one removal.

mod answers;
mod calls;
mod retention;

pub use retention::Retention;

use super::{
    Begin, Charge, ChargeRow, Entry, Fingerprint, Journal, JournalError, Lease, Outcome, RunRecord,
};
use answers::{begun, done, ready};
use calls::{Call, RunCalls};
use foldhash::HashMap;
use retention::Ended;
use std::sync::{Mutex, MutexGuard, PoisonError};
use std::time::SystemTime;
use wop_sdk::host::{AttemptKey, BoxFuture, RunId};
use wop_sdk::wire::{Event, RunEvent, rfc3339};

/// What the journal holds of one run.
#[derive(Default)]
struct Run {
    /// The run's record, with the order it was registered in (`runs` lists them in it); `None`
    /// for a run whose calls were recorded without a record.
    record: Option<(u64, RunRecord)>,
    /// The calls, by node instance and then call index.
    calls: RunCalls,
    /// The log: the typed events as written, with when. The v2 wrapper (id, RFC 3339 timestamp)
    /// is a function of these and is made when the log is read.
    events: Vec<(SystemTime, Event)>,
}

#[derive(Default)]
struct State {
    runs: HashMap<RunId, Run>,
    /// The order the next run record is registered in.
    next_run: u64,
    /// Calls held, over every run.
    calls: u64,
    /// The runs with no node executing, oldest first, and what has been dropped.
    ended: Ended,
}

impl State {
    fn call(&self, key: &AttemptKey) -> Option<&Call> {
        self.runs
            .get(&key.run_id)?
            .calls
            .get(&key.node_id, key.call_index)
    }

    fn call_mut(&mut self, key: &AttemptKey) -> Option<&mut Call> {
        self.runs
            .get_mut(&key.run_id)?
            .calls
            .get_mut(&key.node_id, key.call_index)
    }

    /// `run`'s entry, made when it has none (a run id is an `Arc`: cloning it copies nothing).
    fn run_mut(&mut self, run: &RunId) -> &mut Run {
        self.runs.entry(run.clone()).or_default()
    }

    /// Forgets `run`: its record, calls, charges, leases and events.
    fn drop_run(&mut self, run: &RunId) {
        if let Some(dropped) = self.runs.remove(run) {
            self.calls = self.calls.saturating_sub(dropped.calls.len() as u64);
        }
    }
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
            .field("calls", &self.lock().calls)
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

/// Appends typed events to the run's log; returns the sequence of the last.
fn push_events(run: &mut Run, events: impl IntoIterator<Item = Event>) -> u64 {
    let now = SystemTime::now();
    run.events.extend(events.into_iter().map(|e| (now, e)));
    run.events.len().saturating_sub(1) as u64
}

/// `begin`, under the lock.
fn begin_in(s: &mut State, key: &AttemptKey, fingerprint: &Fingerprint, attempt_id: &str) -> Begin {
    match s.call(key) {
        None => {
            s.run_mut(&key.run_id).calls.insert(
                &key.node_id,
                key.call_index,
                Call {
                    entry: Entry {
                        attempt_id: attempt_id.to_owned(),
                        fingerprint: *fingerprint,
                        requests: 0,
                        outcome: None,
                    },
                    charge: None,
                    lease: None,
                },
            );
            s.calls += 1;
            Begin::Fresh
        }
        Some(c) if c.entry.fingerprint != *fingerprint => Begin::Mismatch,
        Some(c) => match &c.entry.outcome {
            Some(o) => Begin::Recorded {
                attempt_id: c.entry.attempt_id.clone(),
                outcome: o.clone(),
            },
            None => Begin::Unfinished {
                attempt_id: c.entry.attempt_id.clone(),
                requests: c.entry.requests,
            },
        },
    }
}

fn no_identity(key: &AttemptKey) -> JournalError {
    JournalError::Io(format!("no identity recorded for {key}"))
}

impl Journal for MemoryJournal {
    fn begin_run(&self, run: RunRecord) -> BoxFuture<'_, Result<(), JournalError>> {
        let mut s = self.lock();
        // A run that ended and is begun again (a second node) is not dropped meanwhile.
        s.ended.resume(run.run_id.as_str());
        let at = s.next_run;
        let slot = match s.runs.get_mut(run.run_id.as_str()) {
            Some(slot) => slot,
            None => s.run_mut(&RunId::new(run.run_id.as_str())),
        };
        if slot.record.is_none() {
            slot.record = Some((at, run));
            s.next_run += 1;
        }
        done()
    }

    fn run<'a>(&'a self, run: &'a RunId) -> BoxFuture<'a, Result<Option<RunRecord>, JournalError>> {
        let s = self.lock();
        let record = s.runs.get(run).and_then(|r| r.record.as_ref());
        ready(Ok(record.map(|(_, r)| r.clone())))
    }

    fn runs(&self) -> BoxFuture<'_, Result<Vec<RunRecord>, JournalError>> {
        let s = self.lock();
        let mut runs: Vec<_> = s.runs.values().filter_map(|r| r.record.as_ref()).collect();
        runs.sort_unstable_by_key(|(at, _)| *at);
        ready(Ok(runs.into_iter().map(|(_, r)| r.clone()).collect()))
    }

    fn begin<'a>(
        &'a self,
        key: &'a AttemptKey,
        fingerprint: &'a Fingerprint,
        attempt_id: &'a str,
    ) -> BoxFuture<'a, Result<Begin, JournalError>> {
        begun(begin_in(&mut self.lock(), key, fingerprint, attempt_id))
    }

    fn begin_leased<'a>(
        &'a self,
        key: &'a AttemptKey,
        fingerprint: &'a Fingerprint,
        attempt_id: &'a str,
        max_tokens: u32,
        lease: &'a Lease,
    ) -> BoxFuture<'a, Result<Begin, JournalError>> {
        // One lock: nobody sees the identity without its lease.
        let mut s = self.lock();
        let begin = begin_in(&mut s, key, fingerprint, attempt_id);
        if begin == Begin::Fresh
            && let Some(call) = s.call_mut(key)
        {
            // Request 1, announced with the identity (`max_tokens` is not kept in memory).
            let _ = max_tokens;
            call.entry.requests = call.entry.requests.max(1);
            call.lease = Some(Box::new(lease.clone()));
        }
        begun(begin)
    }

    fn renew_lease<'a>(
        &'a self,
        key: &'a AttemptKey,
        lease: &'a Lease,
    ) -> BoxFuture<'a, Result<bool, JournalError>> {
        let mut s = self.lock();
        let renewed = match s.call_mut(key).and_then(|c| c.lease.as_mut()) {
            Some(held) if held.holder == lease.holder => {
                **held = lease.clone();
                true
            }
            _ => false,
        };
        ready(Ok(renewed))
    }

    fn leased<'a>(
        &'a self,
        key: &'a AttemptKey,
    ) -> BoxFuture<'a, Result<Option<Lease>, JournalError>> {
        let s = self.lock();
        ready(Ok(s.call(key).and_then(|c| c.lease.as_deref().cloned())))
    }

    fn record_request<'a>(
        &'a self,
        key: &'a AttemptKey,
        n: u32,
        _max_tokens: u32,
    ) -> BoxFuture<'a, Result<(), JournalError>> {
        let mut s = self.lock();
        match s.call_mut(key) {
            Some(c) => {
                c.entry.requests = c.entry.requests.max(n);
                done()
            }
            None => ready(Err(no_identity(key))),
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
        let mut s = self.lock();
        let Some(call) = s.call_mut(key) else {
            return ready(Err(no_identity(key)));
        };
        if call.entry.outcome.is_some() {
            return ready(Err(JournalError::Io(format!(
                "the outcome of {key} is already recorded"
            ))));
        }
        call.entry.outcome = Some(outcome);
        call.lease = None;
        call.charge = charge;
        push_events(s.run_mut(&key.run_id), events);
        done()
    }

    fn lookup<'a>(
        &'a self,
        key: &'a AttemptKey,
    ) -> BoxFuture<'a, Result<Option<Entry>, JournalError>> {
        ready(Ok(self.lock().call(key).map(|c| c.entry.clone())))
    }

    fn completed_attempt<'a>(
        &'a self,
        run: &'a RunId,
        attempt_id: &'a str,
    ) -> BoxFuture<'a, Result<bool, JournalError>> {
        // Only a deliberate retry asks, so the run's calls are scanned rather than indexed.
        let s = self.lock();
        let found = s.runs.get(run).is_some_and(|r| {
            r.calls.iter().any(|(_, _, c)| {
                c.entry.attempt_id == attempt_id
                    && matches!(c.entry.outcome, Some(Outcome::Completed { .. }))
            })
        });
        ready(Ok(found))
    }

    fn append_event<'a>(
        &'a self,
        run: &'a RunId,
        event: Event,
    ) -> BoxFuture<'a, Result<u64, JournalError>> {
        if let Err(e) = super::checked(&event) {
            return ready(Err(e));
        }
        let mut s = self.lock();
        ready(Ok(push_events(s.run_mut(run), [event])))
    }

    fn events<'a>(&'a self, run: &'a RunId) -> BoxFuture<'a, Result<Vec<RunEvent>, JournalError>> {
        let s = self.lock();
        let log = s.runs.get(run).map_or(&[][..], |r| r.events.as_slice());
        let events = (0..)
            .zip(log)
            .map(|(sequence, (at, event))| {
                RunEvent::new(run.as_str(), sequence, rfc3339(*at), event.clone())
            })
            .collect();
        ready(Ok(events))
    }

    fn charges<'a>(
        &'a self,
        run: Option<&'a RunId>,
    ) -> BoxFuture<'a, Result<Vec<ChargeRow>, JournalError>> {
        let s = self.lock();
        let mut charged: Vec<(&RunId, &str, u32, &Charge)> = Vec::new();
        for (id, r) in s.runs.iter().filter(|(id, _)| run.is_none_or(|w| w == *id)) {
            for (node, index, call) in r.calls.iter() {
                if let Some(c) = &call.charge {
                    charged.push((id, node, index, c));
                }
            }
        }
        charged.sort_unstable_by(|a, b| (a.0, a.1, a.2).cmp(&(b.0, b.1, b.2)));
        let rows = charged
            .into_iter()
            .map(|(id, node, index, c)| ChargeRow {
                run_id: id.as_str().to_owned(),
                node_id: node.to_owned(),
                call_index: index,
                charge: c.clone(),
            })
            .collect();
        ready(Ok(rows))
    }

    fn call_count(&self) -> BoxFuture<'_, Result<u64, JournalError>> {
        ready(Ok(self.lock().calls))
    }

    fn run_ended(&self, run: &RunId) {
        let mut s = self.lock();
        let State { ended, .. } = &mut *s;
        let due = ended.end(run, &self.retention);
        for old in due {
            s.drop_run(&old);
        }
    }
}
