//! What a journal holds, in memory: each run's record, calls, charges, leases and events. The
//! in-memory journal is these behind a lock; the log journal (`journal/log`) is these rebuilt
//! from its file and kept up to date with it.
//!
//! Everything of a run sits in one place, so a call's key is stored once, not once per table,
//! and dropping a run is one removal. Each write comes in two halves where a store must write
//! something between them: a check that answers whether (and why not) the write may happen, and
//! the change itself, which cannot fail once the check passed.

use super::calls::{Call, RunCalls};
use crate::journal::{
    Begin, Charge, ChargeRow, Entry, Fingerprint, JournalError, Lease, Outcome, RunRecord,
};
use foldhash::HashMap;
use std::time::SystemTime;
use wop_sdk::host::{AttemptKey, RunId};
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

/// Every run the journal holds.
#[derive(Default)]
pub(in crate::journal) struct Records {
    runs: HashMap<RunId, Run>,
    /// The order the next run record is registered in.
    next_run: u64,
    /// Calls held, over every run.
    calls: u64,
}

fn no_identity(key: &AttemptKey) -> JournalError {
    JournalError::Io(format!("no identity recorded for {key}"))
}

impl Records {
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
    pub(in crate::journal) fn drop_run(&mut self, run: &RunId) {
        if let Some(dropped) = self.runs.remove(run) {
            self.calls = self.calls.saturating_sub(dropped.calls.len() as u64);
        }
    }

    /// How many calls `run` holds, when none of them is unfinished (its nodes ended: the log
    /// journal may drop it from memory); `None` while one is.
    pub(in crate::journal) fn ended_calls(&self, run: &str) -> Option<u64> {
        let Some(r) = self.runs.get(run) else {
            return Some(0);
        };
        let unfinished = r.calls.iter().any(|(_, _, c)| c.entry.outcome.is_none());
        (!unfinished).then_some(r.calls.len() as u64)
    }

    /// Every run held.
    pub(in crate::journal) fn run_ids(&self) -> Vec<RunId> {
        self.runs.keys().cloned().collect()
    }

    /// Whether `run` has a record (registering it again changes nothing).
    pub(in crate::journal) fn has_run(&self, run: &str) -> bool {
        self.runs.get(run).is_some_and(|r| r.record.is_some())
    }

    /// Registers `run` unless it has a record.
    pub(in crate::journal) fn register_run(&mut self, run: RunRecord) {
        let at = self.next_run;
        let slot = match self.runs.get_mut(run.run_id.as_str()) {
            Some(slot) => slot,
            None => self.run_mut(&run.run_id),
        };
        if slot.record.is_none() {
            slot.record = Some((at, run));
            self.next_run += 1;
        }
    }

    pub(in crate::journal) fn run(&self, run: &RunId) -> Option<RunRecord> {
        let record = self.runs.get(run).and_then(|r| r.record.as_ref());
        record.map(|(_, r)| r.clone())
    }

    /// Every run record, in the order registered.
    pub(in crate::journal) fn runs(&self) -> Vec<RunRecord> {
        let mut runs: Vec<_> = self
            .runs
            .values()
            .filter_map(|r| r.record.as_ref())
            .collect();
        runs.sort_unstable_by_key(|(at, _)| *at);
        runs.into_iter().map(|(_, r)| r.clone()).collect()
    }

    /// What `begin` answers for a call already recorded; `None` when the identity is new.
    pub(in crate::journal) fn found(
        &self,
        key: &AttemptKey,
        fingerprint: &Fingerprint,
    ) -> Option<Begin> {
        let c = self.call(key)?;
        Some(if c.entry.fingerprint != *fingerprint {
            Begin::Mismatch
        } else {
            match &c.entry.outcome {
                Some(o) => Begin::Recorded {
                    attempt_id: c.entry.attempt_id.clone(),
                    outcome: o.clone(),
                },
                None => Begin::Unfinished {
                    attempt_id: c.entry.attempt_id.clone(),
                    requests: c.entry.requests,
                },
            }
        })
    }

    /// Records a new identity (the caller found none) with `requests` announced and its lease.
    pub(in crate::journal) fn insert_call(
        &mut self,
        key: &AttemptKey,
        fingerprint: &Fingerprint,
        attempt_id: &str,
        requests: u32,
        lease: Option<&Lease>,
    ) {
        self.run_mut(&key.run_id).calls.insert(
            &key.node_id,
            key.call_index,
            Call {
                entry: Entry {
                    attempt_id: attempt_id.to_owned(),
                    fingerprint: *fingerprint,
                    requests,
                    outcome: None,
                },
                charge: None,
                lease: lease.map(|l| Box::new(l.clone())),
            },
        );
        self.calls += 1;
    }

    /// `begin`: the recorded answer, or the identity recorded now.
    pub(in crate::journal) fn begin(
        &mut self,
        key: &AttemptKey,
        fingerprint: &Fingerprint,
        attempt_id: &str,
        requests: u32,
        lease: Option<&Lease>,
    ) -> Begin {
        match self.found(key, fingerprint) {
            Some(found) => found,
            None => {
                self.insert_call(key, fingerprint, attempt_id, requests, lease);
                Begin::Fresh
            }
        }
    }

    /// Whether `holder` holds the lease on the call (a renewal by it may be written).
    pub(in crate::journal) fn holds_lease(&self, key: &AttemptKey, holder: &str) -> bool {
        self.call(key)
            .and_then(|c| c.lease.as_deref())
            .is_some_and(|held| &*held.holder == holder)
    }

    /// Renews the lease when its holder holds it; answers whether it did.
    pub(in crate::journal) fn renew_lease(&mut self, key: &AttemptKey, lease: &Lease) -> bool {
        match self.call_mut(key).and_then(|c| c.lease.as_mut()) {
            Some(held) if held.holder == lease.holder => {
                **held = lease.clone();
                true
            }
            _ => false,
        }
    }

    pub(in crate::journal) fn leased(&self, key: &AttemptKey) -> Option<Lease> {
        self.call(key).and_then(|c| c.lease.as_deref().cloned())
    }

    /// Whether a request of the call may be recorded: its identity is.
    pub(in crate::journal) fn check_request(&self, key: &AttemptKey) -> Result<(), JournalError> {
        match self.call(key) {
            Some(_) => Ok(()),
            None => Err(no_identity(key)),
        }
    }

    /// Request `n` of the call is announced.
    pub(in crate::journal) fn record_request(
        &mut self,
        key: &AttemptKey,
        n: u32,
    ) -> Result<(), JournalError> {
        let call = self.call_mut(key).ok_or_else(|| no_identity(key))?;
        call.entry.requests = call.entry.requests.max(n);
        Ok(())
    }

    /// Whether the call's outcome may be written: its identity is recorded, its outcome not.
    pub(in crate::journal) fn check_finish(&self, key: &AttemptKey) -> Result<(), JournalError> {
        match self.call(key) {
            None => Err(no_identity(key)),
            Some(c) if c.entry.outcome.is_some() => Err(JournalError::Io(format!(
                "the outcome of {key} is already recorded"
            ))),
            Some(_) => Ok(()),
        }
    }

    /// Writes the call's outcome, charge and events (recorded `at`), and gives its lease up.
    pub(in crate::journal) fn finish(
        &mut self,
        key: &AttemptKey,
        outcome: Outcome,
        charge: Option<Charge>,
        events: Vec<Event>,
        at: SystemTime,
    ) -> Result<(), JournalError> {
        self.check_finish(key)?;
        let call = self.call_mut(key).ok_or_else(|| no_identity(key))?;
        call.entry.outcome = Some(outcome);
        call.lease = None;
        call.charge = charge;
        self.append_events(&key.run_id, events, at);
        Ok(())
    }

    pub(in crate::journal) fn lookup(&self, key: &AttemptKey) -> Option<Entry> {
        self.call(key).map(|c| c.entry.clone())
    }

    /// Whether `attempt_id` is a completed call of `run`. Only a deliberate retry asks, so the
    /// run's calls are scanned rather than indexed.
    pub(in crate::journal) fn completed_attempt(&self, run: &RunId, attempt_id: &str) -> bool {
        self.runs.get(run).is_some_and(|r| {
            r.calls.iter().any(|(_, _, c)| {
                c.entry.attempt_id == attempt_id
                    && matches!(c.entry.outcome, Some(Outcome::Completed { .. }))
            })
        })
    }

    /// Appends typed events, recorded `at`, to the run's log; returns the sequence of the last.
    pub(in crate::journal) fn append_events(
        &mut self,
        run: &RunId,
        events: impl IntoIterator<Item = Event>,
        at: SystemTime,
    ) -> u64 {
        let run = self.run_mut(run);
        run.events.extend(events.into_iter().map(|e| (at, e)));
        run.events.len().saturating_sub(1) as u64
    }

    /// The run's events with their v2 wrapper, in order.
    pub(in crate::journal) fn events(&self, run: &RunId) -> Vec<RunEvent> {
        let log = self.runs.get(run).map_or(&[][..], |r| r.events.as_slice());
        (0..)
            .zip(log)
            .map(|(sequence, (at, event))| {
                RunEvent::new(run.as_str(), sequence, rfc3339(*at), event.clone())
            })
            .collect()
    }

    /// The ledger: every charge, or `run`'s, by run, node and call index.
    pub(in crate::journal) fn charges(&self, run: Option<&RunId>) -> Vec<ChargeRow> {
        let mut charged: Vec<(&RunId, &str, u32, &Charge)> = Vec::new();
        for (id, r) in self
            .runs
            .iter()
            .filter(|(id, _)| run.is_none_or(|w| w == *id))
        {
            for (node, index, call) in r.calls.iter() {
                if let Some(c) = &call.charge {
                    charged.push((id, node, index, c));
                }
            }
        }
        charged.sort_unstable_by(|a, b| (a.0, a.1, a.2).cmp(&(b.0, b.1, b.2)));
        charged
            .into_iter()
            .map(|(id, node, index, c)| ChargeRow {
                run_id: id.as_str().to_owned(),
                node_id: node.to_owned(),
                call_index: index,
                charge: c.clone(),
            })
            .collect()
    }

    /// Calls held, over every run.
    pub(in crate::journal) fn call_count(&self) -> u64 {
        self.calls
    }
}
