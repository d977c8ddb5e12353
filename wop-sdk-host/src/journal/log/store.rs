//! The [`Journal`] operations of [`LogJournal`]: each a record's payload written first, then,
//! under the file's lock (`mod.rs`), a check against the records, the record appended when
//! something changes, and the change applied.

use super::LogJournal;
use super::ops::{EventRecord, Key, Op, encode};
use crate::answers::ready;
use crate::journal::{
    Begin, Charge, ChargeRow, Entry, Fingerprint, Journal, JournalError, Lease, Outcome, RunRecord,
    checked,
};
use std::borrow::Cow;
use wop_sdk::host::{AttemptKey, BoxFuture, RunId};
use wop_sdk::wire::{Event, RunEvent};

impl LogJournal {
    /// `begin`, with `requests` announced with the identity and its lease: durable.
    fn begin_with<'a>(
        &'a self,
        key: &'a AttemptKey,
        fingerprint: &'a Fingerprint,
        attempt_id: &'a str,
        first: Option<u32>,
        lease: Option<&'a Lease>,
    ) -> BoxFuture<'a, Result<Begin, JournalError>> {
        let requests = u32::from(first.is_some());
        let payload = match encode(&Op::Begin {
            key: Key::of(key),
            fingerprint: fingerprint.to_hex(),
            attempt: Cow::Borrowed(attempt_id),
            requests,
            max_tokens: first,
            lease: lease.map(Cow::Borrowed),
        }) {
            Ok(payload) => payload,
            Err(e) => return ready(Err(e)),
        };
        self.shared.write_then(true, key.run_id.as_str(), |w| {
            if let Some(found) = w.records().found(key, fingerprint) {
                return Ok(found);
            }
            w.append(&payload)?;
            w.records()
                .insert_call(key, fingerprint, attempt_id, requests, lease);
            Ok(Begin::Fresh)
        })
    }
}

impl Journal for LogJournal {
    fn begin_run(&self, run: RunRecord) -> BoxFuture<'_, Result<(), JournalError>> {
        // Deferred: the run's first call identity, or its node's end, makes it durable.
        let payload = match encode(&Op::Run {
            record: Cow::Borrowed(&run),
        }) {
            Ok(payload) => payload,
            Err(e) => return ready(Err(e)),
        };
        let id = run.run_id.clone();
        self.shared.write_then(false, id.as_str(), |w| {
            if !w.records().has_run(run.run_id.as_str()) {
                w.append(&payload)?;
                w.records().register_run(run);
            }
            Ok(())
        })
    }

    fn run<'a>(&'a self, run: &'a RunId) -> BoxFuture<'a, Result<Option<RunRecord>, JournalError>> {
        ready(self.shared.read_run(run, |r| r.run(run)))
    }

    fn runs(&self) -> BoxFuture<'_, Result<Vec<RunRecord>, JournalError>> {
        // Every run, in the order its first record was written.
        ready(self.shared.read_all(|r, index| {
            let mut runs: Vec<_> = index
                .runs()
                .filter_map(|id| r.run(id).map(|record| (index.first(id.as_str()), record)))
                .collect();
            runs.sort_unstable_by_key(|(first, _)| *first);
            runs.into_iter().map(|(_, record)| record).collect()
        }))
    }

    fn begin<'a>(
        &'a self,
        key: &'a AttemptKey,
        fingerprint: &'a Fingerprint,
        attempt_id: &'a str,
    ) -> BoxFuture<'a, Result<Begin, JournalError>> {
        self.begin_with(key, fingerprint, attempt_id, None, None)
    }

    fn begin_first_request<'a>(
        &'a self,
        key: &'a AttemptKey,
        fingerprint: &'a Fingerprint,
        attempt_id: &'a str,
        max_tokens: u32,
    ) -> BoxFuture<'a, Result<Begin, JournalError>> {
        self.begin_with(key, fingerprint, attempt_id, Some(max_tokens), None)
    }

    fn begin_leased<'a>(
        &'a self,
        key: &'a AttemptKey,
        fingerprint: &'a Fingerprint,
        attempt_id: &'a str,
        max_tokens: u32,
        lease: &'a Lease,
    ) -> BoxFuture<'a, Result<Begin, JournalError>> {
        self.begin_with(key, fingerprint, attempt_id, Some(max_tokens), Some(lease))
    }

    fn renew_lease<'a>(
        &'a self,
        key: &'a AttemptKey,
        lease: &'a Lease,
    ) -> BoxFuture<'a, Result<bool, JournalError>> {
        let payload = match encode(&Op::Renew {
            key: Key::of(key),
            lease: Cow::Borrowed(lease),
        }) {
            Ok(payload) => payload,
            Err(e) => return ready(Err(e)),
        };
        self.shared.write_then(true, key.run_id.as_str(), |w| {
            if !w.records().holds_lease(key, &lease.holder) {
                return Ok(false);
            }
            w.append(&payload)?;
            Ok(w.records().renew_lease(key, lease))
        })
    }

    fn leased<'a>(
        &'a self,
        key: &'a AttemptKey,
    ) -> BoxFuture<'a, Result<Option<Lease>, JournalError>> {
        ready(self.shared.read_run(&key.run_id, |r| r.leased(key)))
    }

    fn record_request<'a>(
        &'a self,
        key: &'a AttemptKey,
        n: u32,
        max_tokens: u32,
    ) -> BoxFuture<'a, Result<(), JournalError>> {
        let payload = match encode(&Op::Request {
            key: Key::of(key),
            n,
            max_tokens,
        }) {
            Ok(payload) => payload,
            Err(e) => return ready(Err(e)),
        };
        self.shared.write_then(true, key.run_id.as_str(), |w| {
            w.records().check_request(key)?;
            w.append(&payload)?;
            w.records().record_request(key, n)
        })
    }

    fn finish<'a>(
        &'a self,
        key: &'a AttemptKey,
        outcome: Outcome,
        charge: Option<Charge>,
        events: Vec<Event>,
    ) -> BoxFuture<'a, Result<(), JournalError>> {
        // Every event is checked, and the record written, before the file is locked: all or
        // nothing.
        let payload = events
            .iter()
            .map(|e| checked(e).map(|()| EventRecord::of(e)))
            .collect::<Result<Vec<_>, _>>()
            .and_then(|written| {
                encode(&Op::Finish {
                    key: Key::of(key),
                    outcome: Cow::Borrowed(&outcome),
                    charge: charge.as_ref().map(Cow::Borrowed),
                    events: written,
                })
            });
        let payload = match payload {
            Ok(payload) => payload,
            Err(e) => return ready(Err(e)),
        };
        // Deferred: the next call's identity, or the node's end, makes it durable.
        self.shared
            .write_then(false, key.run_id.as_str(), move |w| {
                w.records().check_finish(key)?;
                let at = w.append(&payload)?;
                w.records().finish(key, outcome, charge, events, at)
            })
    }

    fn lookup<'a>(
        &'a self,
        key: &'a AttemptKey,
    ) -> BoxFuture<'a, Result<Option<Entry>, JournalError>> {
        ready(self.shared.read_run(&key.run_id, |r| r.lookup(key)))
    }

    fn completed_attempt<'a>(
        &'a self,
        run: &'a RunId,
        attempt_id: &'a str,
    ) -> BoxFuture<'a, Result<bool, JournalError>> {
        ready(
            self.shared
                .read_run(run, |r| r.completed_attempt(run, attempt_id)),
        )
    }

    fn append_event<'a>(
        &'a self,
        run: &'a RunId,
        event: Event,
    ) -> BoxFuture<'a, Result<u64, JournalError>> {
        // A node's end is what the run's result leaves the process after: durable, with every
        // write before it. Other events are deferred.
        let durable = matches!(event, Event::NodeCompleted(_) | Event::NodeFailed(_));
        let payload = checked(&event)
            .map(|()| EventRecord::of(&event))
            .and_then(|written| {
                encode(&Op::Event {
                    run: Cow::Borrowed(run.as_str()),
                    event: written,
                })
            });
        let payload = match payload {
            Ok(payload) => payload,
            Err(e) => return ready(Err(e)),
        };
        self.shared.write_then(durable, run.as_str(), move |w| {
            let at = w.append(&payload)?;
            Ok(w.records().append_events(run, [event], at))
        })
    }

    fn events<'a>(&'a self, run: &'a RunId) -> BoxFuture<'a, Result<Vec<RunEvent>, JournalError>> {
        ready(self.shared.read_run(run, |r| r.events(run)))
    }

    fn charges<'a>(
        &'a self,
        run: Option<&'a RunId>,
    ) -> BoxFuture<'a, Result<Vec<ChargeRow>, JournalError>> {
        ready(match run {
            Some(run) => self.shared.read_run(run, |r| r.charges(Some(run))),
            None => self.shared.read_all(|r, _| r.charges(None)),
        })
    }

    fn call_count(&self) -> BoxFuture<'_, Result<u64, JournalError>> {
        ready(self.shared.call_count())
    }

    fn run_ended(&self, run: &RunId) {
        // Held cold from now on, once none of its calls is unfinished (`index.rs`).
        self.shared.run_ended(run);
    }
}
