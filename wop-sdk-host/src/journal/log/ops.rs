//! A record's payload: one write of the journal, as JSON ([`Op`]), and how it is applied to the
//! [`Records`] the journal keeps in memory. Opening the log applies every record in order; a
//! journal catches up with another process's records the same way. A payload is written before
//! the file is locked ([`encode`]); the record's time, taken under the lock, is in its frame.

use crate::journal::memory::Records;
use crate::journal::{Charge, Fingerprint, JournalError, Lease, Outcome, RunRecord};
use serde::{Deserialize, Serialize};
use std::borrow::Cow;
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};
use wop_sdk::host::{AttemptKey, RunId};
use wop_sdk::wire::Event;

/// A call's key as a record writes it.
#[derive(Serialize, Deserialize)]
pub(super) struct Key<'a> {
    #[serde(borrow)]
    run: Cow<'a, str>,
    #[serde(borrow)]
    node: Cow<'a, str>,
    index: u32,
}

impl<'a> Key<'a> {
    pub(super) fn of(key: &'a AttemptKey) -> Self {
        Self {
            run: Cow::Borrowed(key.run_id.as_str()),
            node: Cow::Borrowed(&key.node_id),
            index: key.call_index,
        }
    }

    fn key(&self) -> AttemptKey {
        AttemptKey {
            run_id: RunId::new(&*self.run),
            node_id: Arc::from(&*self.node),
            call_index: self.index,
        }
    }
}

/// An event as a record writes it: its v2 type and its payload's JSON text, as a string. (Not
/// as raw JSON: serde_json's `raw_value` feature would reach every crate of a build, a pack's
/// compile errors included.)
#[derive(Serialize, Deserialize)]
pub(super) struct EventRecord<'a> {
    #[serde(borrow)]
    kind: Cow<'a, str>,
    #[serde(borrow)]
    payload: Cow<'a, str>,
}

impl EventRecord<'_> {
    /// The record of `event` (checked by the caller), made before the file is locked.
    pub(super) fn of(event: &Event) -> EventRecord<'static> {
        EventRecord {
            kind: Cow::Owned(event.kind().to_owned()),
            payload: Cow::Owned(event.payload_text()),
        }
    }

    fn event(&self) -> Result<Event, String> {
        let payload: serde_json::Value =
            serde_json::from_str(&self.payload).map_err(|e| e.to_string())?;
        Event::from_parts(&self.kind, &payload).map_err(|e| e.to_string())
    }
}

/// One write of the journal.
#[derive(Serialize, Deserialize)]
#[serde(rename_all = "camelCase", rename_all_fields = "camelCase")]
pub(super) enum Op<'a> {
    /// A run's record.
    Run { record: Cow<'a, RunRecord> },
    /// A call's identity, with the requests announced with it and its lease.
    Begin {
        #[serde(borrow)]
        key: Key<'a>,
        fingerprint: String,
        #[serde(borrow)]
        attempt: Cow<'a, str>,
        requests: u32,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        max_tokens: Option<u32>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        lease: Option<Cow<'a, Lease>>,
    },
    /// Provider request `n` of a call, about to be sent.
    Request {
        #[serde(borrow)]
        key: Key<'a>,
        n: u32,
        max_tokens: u32,
    },
    /// A lease's heartbeat.
    Renew {
        #[serde(borrow)]
        key: Key<'a>,
        lease: Cow<'a, Lease>,
    },
    /// A call's outcome, charge and events (recorded at the record's time).
    Finish {
        #[serde(borrow)]
        key: Key<'a>,
        outcome: Cow<'a, Outcome>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        charge: Option<Cow<'a, Charge>>,
        #[serde(borrow)]
        events: Vec<EventRecord<'a>>,
    },
    /// One event of a run (recorded at the record's time).
    Event {
        #[serde(borrow)]
        run: Cow<'a, str>,
        #[serde(borrow)]
        event: EventRecord<'a>,
    },
}

/// `t` as a record writes it: nanoseconds since the Unix epoch.
pub(super) fn nanos(t: SystemTime) -> u64 {
    t.duration_since(UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_nanos()).unwrap_or(u64::MAX))
}

/// A record's time as the journal keeps it.
pub(super) fn time(nanos: u64) -> SystemTime {
    UNIX_EPOCH + Duration::from_nanos(nanos)
}

/// The payload of `op`.
pub(super) fn encode(op: &Op<'_>) -> Result<Vec<u8>, JournalError> {
    serde_json::to_vec(op).map_err(|e| JournalError::Io(format!("cannot write a record: {e}")))
}

impl Op<'_> {
    /// The run the write is of.
    pub(super) fn run(&self) -> &str {
        match self {
            Op::Run { record } => record.run_id.as_str(),
            Op::Begin { key, .. }
            | Op::Request { key, .. }
            | Op::Renew { key, .. }
            | Op::Finish { key, .. } => &key.run,
            Op::Event { run, .. } => run,
        }
    }

    /// Applies the write, made `at`, to `records`. A record that does not fit what came before it (a call
    /// recorded twice, an outcome for no identity) is an error: the log is not one this journal
    /// wrote.
    pub(super) fn apply(self, records: &mut Records, at: SystemTime) -> Result<(), String> {
        match self {
            Op::Run { record } => records.register_run(record.into_owned()),
            Op::Begin {
                key,
                fingerprint,
                attempt,
                requests,
                max_tokens: _,
                lease,
            } => {
                let key = key.key();
                let fingerprint = Fingerprint::from_hex(&fingerprint).ok_or_else(|| {
                    format!("{key}: the fingerprint `{fingerprint}` is not 64 hex digits")
                })?;
                if records.found(&key, &fingerprint).is_some() {
                    return Err(format!("{key}: the identity is recorded twice"));
                }
                records.insert_call(&key, &fingerprint, &attempt, requests, lease.as_deref());
            }
            Op::Request { key, n, .. } => {
                records
                    .record_request(&key.key(), n)
                    .map_err(|e| e.to_string())?;
            }
            Op::Renew { key, lease } => {
                let key = key.key();
                if !records.renew_lease(&key, &lease) {
                    return Err(format!("{key}: a heartbeat of a lease not held"));
                }
            }
            Op::Finish {
                key,
                outcome,
                charge,
                events,
            } => {
                let events = events
                    .iter()
                    .map(EventRecord::event)
                    .collect::<Result<Vec<_>, _>>()?;
                records
                    .finish(
                        &key.key(),
                        outcome.into_owned(),
                        charge.map(Cow::into_owned),
                        events,
                        at,
                    )
                    .map_err(|e| e.to_string())?;
            }
            Op::Event { run, event } => {
                let event = event.event()?;
                records.append_events(&RunId::new(&*run), [event], at);
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_record_reads_back_as_it_was_written() {
        let key = AttemptKey {
            run_id: RunId::new("r-1"),
            node_id: "n \"quoted\"".into(),
            call_index: 3,
        };
        let event = crate::journal::suite::event(
            "provider.usage",
            serde_json::json!({"provider": "mock", "model": "m", "inputTokens": 1, "outputTokens": 2}),
        );
        let outcome = Outcome::Completed {
            result: "{\"a\":\"é\"}".into(),
        };
        let op = Op::Finish {
            key: Key::of(&key),
            outcome: Cow::Borrowed(&outcome),
            charge: None,
            events: vec![EventRecord::of(&event)],
        };
        let text = serde_json::to_vec(&op).expect("write");
        let back: Op<'_> = serde_json::from_slice(&text).expect("read");
        let mut records = Records::default();
        let fp = Fingerprint([4; 32]);
        records.insert_call(&key, &fp, "a-1", 1, None);
        back.apply(&mut records, time(1_764_860_000_123_000_000))
            .expect("apply");
        let entry = records.lookup(&key).expect("the call");
        assert_eq!(entry.outcome, Some(outcome));
        let events = records.events(&key.run_id);
        assert_eq!(events.len(), 1);
        assert_eq!(events[0].event, event);
        assert_eq!(events[0].timestamp, "2025-12-04T14:53:20.123Z");
    }
}
