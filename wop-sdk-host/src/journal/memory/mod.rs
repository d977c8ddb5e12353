//! The in-memory journal: the same contract as the SQLite one, for tests and for a host that
//! keeps nothing across restarts. Nothing survives the process, and a retention rule
//! ([`Retention`], `retention.rs`) bounds what it holds in a long-lived one.

mod retention;

pub use retention::Retention;

use super::{
    Begin, Charge, ChargeRow, Entry, Fingerprint, Journal, JournalError, Lease, Outcome, RunRecord,
};
use foldhash::{HashMap, HashSet};
use retention::Ended;
use std::sync::{Mutex, MutexGuard, PoisonError};
use std::time::SystemTime;
use wop_sdk::host::{AttemptKey, BoxFuture, RunId};
use wop_sdk::wire::{Event, RunEvent, rfc3339};

#[derive(Default)]
struct State {
    /// Each run's record, with the order it was registered in (`runs` lists them in it).
    runs: HashMap<String, (u64, RunRecord)>,
    next_run: u64,
    /// The calls of each run: dropping a run does not scan.
    run_calls: HashMap<RunId, Vec<AttemptKey>>,
    calls: HashMap<AttemptKey, Entry>,
    /// (run, attempt id) of every completed call: the lineage check does not scan.
    completed: HashSet<(RunId, String)>,
    /// Each run's log: the typed events as written, with when. The v2 wrapper (id, RFC 3339
    /// timestamp) is a function of these and is made when the log is read.
    events: HashMap<RunId, Vec<(SystemTime, Event)>>,
    /// Sorted by call when read.
    charges: HashMap<AttemptKey, Charge>,
    leases: HashMap<AttemptKey, Lease>,
    /// The runs with no node executing, oldest first, and what has been dropped.
    ended: Ended,
}

impl State {
    /// Forgets `run`: its record, calls, completions, events, charges and leases.
    fn drop_run(&mut self, run: &RunId) {
        self.runs.remove(run.as_str());
        for key in self.run_calls.remove(run).unwrap_or_default() {
            if let Some(entry) = self.calls.remove(&key) {
                self.completed
                    .remove(&(key.run_id.clone(), entry.attempt_id));
            }
            self.charges.remove(&key);
            self.leases.remove(&key);
        }
        self.events.remove(run);
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
            .field("calls", &self.lock().calls.len())
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

fn ready<'a, T: Send + 'a>(v: T) -> BoxFuture<'a, T> {
    Box::pin(std::future::ready(v))
}

/// Appends typed events to the run's log; returns the sequence of the last.
fn push_events(state: &mut State, run: &RunId, events: impl IntoIterator<Item = Event>) -> u64 {
    let now = SystemTime::now();
    let log = match state.events.get_mut(run) {
        Some(log) => log,
        None => state.events.entry(run.clone()).or_default(),
    };
    log.extend(events.into_iter().map(|e| (now, e)));
    log.len().saturating_sub(1) as u64
}

/// `begin`, under the lock.
fn begin_in(s: &mut State, key: &AttemptKey, fingerprint: &Fingerprint, attempt_id: &str) -> Begin {
    match s.calls.get(key) {
        None => {
            s.run_calls
                .entry(key.run_id.clone())
                .or_default()
                .push(key.clone());
            s.calls.insert(
                key.clone(),
                Entry {
                    attempt_id: attempt_id.to_owned(),
                    fingerprint: *fingerprint,
                    requests: 0,
                    outcome: None,
                },
            );
            Begin::Fresh
        }
        Some(e) if e.fingerprint != *fingerprint => Begin::Mismatch,
        Some(e) => match &e.outcome {
            Some(o) => Begin::Recorded {
                attempt_id: e.attempt_id.clone(),
                outcome: o.clone(),
            },
            None => Begin::Unfinished {
                attempt_id: e.attempt_id.clone(),
                requests: e.requests,
            },
        },
    }
}

impl Journal for MemoryJournal {
    fn begin_run<'a>(&'a self, run: &'a RunRecord) -> BoxFuture<'a, Result<(), JournalError>> {
        let mut s = self.lock();
        if !s.runs.contains_key(&run.run_id) {
            let at = s.next_run;
            s.next_run += 1;
            s.runs.insert(run.run_id.clone(), (at, run.clone()));
        }
        // A run that ended and is begun again (a second node) is not dropped meanwhile.
        s.ended.resume(&RunId::new(run.run_id.as_str()));
        ready(Ok(()))
    }

    fn run<'a>(&'a self, run: &'a RunId) -> BoxFuture<'a, Result<Option<RunRecord>, JournalError>> {
        ready(Ok(self
            .lock()
            .runs
            .get(run.as_str())
            .map(|(_, r)| r.clone())))
    }

    fn runs(&self) -> BoxFuture<'_, Result<Vec<RunRecord>, JournalError>> {
        let s = self.lock();
        let mut runs: Vec<_> = s.runs.values().collect();
        runs.sort_unstable_by_key(|(at, _)| *at);
        ready(Ok(runs.into_iter().map(|(_, r)| r.clone()).collect()))
    }

    fn begin<'a>(
        &'a self,
        key: &'a AttemptKey,
        fingerprint: &'a Fingerprint,
        attempt_id: &'a str,
    ) -> BoxFuture<'a, Result<Begin, JournalError>> {
        ready(Ok(begin_in(&mut self.lock(), key, fingerprint, attempt_id)))
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
        if begin == Begin::Fresh {
            if let Some(e) = s.calls.get_mut(key) {
                // Request 1, announced with the identity (`max_tokens` is not kept in memory).
                e.requests = e.requests.max(1);
            }
            let _ = max_tokens;
            s.leases.insert(key.clone(), lease.clone());
        }
        ready(Ok(begin))
    }

    fn renew_lease<'a>(
        &'a self,
        key: &'a AttemptKey,
        lease: &'a Lease,
    ) -> BoxFuture<'a, Result<bool, JournalError>> {
        let mut s = self.lock();
        let renewed = match s.leases.get_mut(key) {
            Some(held) if held.holder == lease.holder => {
                *held = lease.clone();
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
        ready(Ok(self.lock().leases.get(key).cloned()))
    }

    fn record_request<'a>(
        &'a self,
        key: &'a AttemptKey,
        n: u32,
        _max_tokens: u32,
    ) -> BoxFuture<'a, Result<(), JournalError>> {
        let mut s = self.lock();
        let r = match s.calls.get_mut(key) {
            Some(e) => {
                e.requests = e.requests.max(n);
                Ok(())
            }
            None => Err(JournalError::Io(format!("no identity recorded for {key}"))),
        };
        ready(r)
    }

    fn finish<'a>(
        &'a self,
        key: &'a AttemptKey,
        outcome: &'a Outcome,
        charge: Option<&'a Charge>,
        events: Vec<Event>,
    ) -> BoxFuture<'a, Result<(), JournalError>> {
        // Every event is checked before anything is written: all or nothing.
        if let Err(e) = events.iter().try_for_each(super::checked) {
            return ready(Err(e));
        }
        let mut s = self.lock();
        let Some(e) = s.calls.get_mut(key) else {
            return ready(Err(JournalError::Io(format!(
                "no identity recorded for {key}"
            ))));
        };
        if e.outcome.is_some() {
            return ready(Err(JournalError::Io(format!(
                "the outcome of {key} is already recorded"
            ))));
        }
        e.outcome = Some(outcome.clone());
        if matches!(outcome, Outcome::Completed { .. }) {
            let id = e.attempt_id.clone();
            s.completed.insert((key.run_id.clone(), id));
        }
        s.leases.remove(key);
        if let Some(c) = charge {
            s.charges.insert(key.clone(), c.clone());
        }
        push_events(&mut s, &key.run_id, events);
        ready(Ok(()))
    }

    fn lookup<'a>(
        &'a self,
        key: &'a AttemptKey,
    ) -> BoxFuture<'a, Result<Option<Entry>, JournalError>> {
        ready(Ok(self.lock().calls.get(key).cloned()))
    }

    fn completed_attempt<'a>(
        &'a self,
        run: &'a RunId,
        attempt_id: &'a str,
    ) -> BoxFuture<'a, Result<bool, JournalError>> {
        let found = self
            .lock()
            .completed
            .contains(&(run.clone(), attempt_id.to_owned()));
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
        ready(Ok(push_events(&mut s, run, [event])))
    }

    fn events<'a>(&'a self, run: &'a RunId) -> BoxFuture<'a, Result<Vec<RunEvent>, JournalError>> {
        let s = self.lock();
        let log = s.events.get(run).map_or(&[][..], Vec::as_slice);
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
        let mut charged: Vec<_> = s
            .charges
            .iter()
            .filter(|(k, _)| run.is_none_or(|r| k.run_id == *r))
            .collect();
        charged.sort_unstable_by(|a, b| a.0.cmp(b.0));
        let rows = charged
            .into_iter()
            .map(|(k, c)| ChargeRow {
                run_id: k.run_id.as_str().to_owned(),
                node_id: k.node_id.clone(),
                call_index: k.call_index,
                charge: c.clone(),
            })
            .collect();
        ready(Ok(rows))
    }

    fn call_count(&self) -> BoxFuture<'_, Result<u64, JournalError>> {
        ready(Ok(self.lock().calls.len() as u64))
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
