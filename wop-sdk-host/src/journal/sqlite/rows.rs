//! The SQL of each table (`runs`, `calls` with their leases and charges, `requests`, `events`),
//! run on the writer's connection: reading rows into the journal's types and writing them back
//! (a run's events and the ledger are listed back by `reads.rs`).

use super::errors::sql;
use crate::journal::{
    Begin, Charge, Fingerprint, JournalError, Lease, Outcome, RunRecord, checked,
};
use rusqlite::{Connection, OptionalExtension, params};
use std::time::SystemTime;
use wop_sdk::host::{AttemptKey, RunId};
use wop_sdk::wire::{Event, rfc3339};

pub(super) fn key_params(key: &AttemptKey) -> (String, String, u32) {
    (
        key.run_id.as_str().to_owned(),
        String::from(&*key.node_id),
        key.call_index,
    )
}

pub(super) fn to_json<T: serde::Serialize>(v: &T) -> Result<String, JournalError> {
    serde_json::to_string(v).map_err(|e| JournalError::Io(format!("cannot encode: {e}")))
}

pub(super) fn from_json<T: serde::de::DeserializeOwned>(
    text: &str,
    what: &str,
) -> Result<T, JournalError> {
    serde_json::from_str(text)
        .map_err(|e| JournalError::Corrupt(format!("a stored {what} is not valid: {e}")))
}

pub(super) fn no_identity(key: &AttemptKey) -> JournalError {
    JournalError::Io(format!("no identity recorded for {key}"))
}

pub(super) fn to_i64(v: u64) -> Result<i64, JournalError> {
    i64::try_from(v).map_err(|_| JournalError::Io(format!("{v} is too large to store")))
}

pub(super) fn to_u64(v: i64) -> Result<u64, JournalError> {
    u64::try_from(v).map_err(|_| JournalError::Corrupt(format!("a stored count is negative: {v}")))
}

/// The `seq` key of the run's next stored event, and its position in the run's log. A run's keys
/// are contiguous (events are only appended, each at the last key + 1, and never deleted one by
/// one) from 0, or from 1 in a log migrated from schema 1: the position is the next key less the
/// first. Both ends are read through the key's index, so an append costs as much in a long run
/// as in a short one (counting the run's events read every one of them).
pub(super) fn next_seq(conn: &Connection, run: &str) -> Result<(i64, i64), JournalError> {
    let (last, first): (Option<i64>, Option<i64>) = conn
        .prepare_cached(
            "SELECT (SELECT seq FROM events WHERE run_id = ?1 ORDER BY seq DESC LIMIT 1), \
                    (SELECT seq FROM events WHERE run_id = ?1 ORDER BY seq LIMIT 1)",
        )
        .and_then(|mut s| s.query_row([run], |r| Ok((r.get(0)?, r.get(1)?))))
        .map_err(sql)?;
    let (Some(last), Some(first)) = (last, first) else {
        return Ok((0, 0));
    };
    let corrupt = || JournalError::Corrupt(format!("run {run}: event keys {first}..={last}"));
    let next = last.checked_add(1).ok_or_else(corrupt)?;
    Ok((next, next.checked_sub(first).ok_or_else(corrupt)?))
}

/// An event ready to store: checked and its payload written before the writer runs (under load
/// the writer's time is every caller's). Its time is taken when it is stored, so that times
/// follow the log's order.
pub(super) struct StoredEvent {
    event: Event,
    payload: String,
}

impl StoredEvent {
    pub(super) fn new(event: Event) -> Result<Self, JournalError> {
        checked(&event)?;
        Ok(Self {
            payload: event.payload_text(),
            event,
        })
    }
}

/// Stores a typed event: its v2 type and payload, and when it was recorded. Returns its sequence
/// (its position in the run's log, from 0).
pub(super) fn push_event(
    conn: &Connection,
    run: &str,
    stored: &StoredEvent,
) -> Result<u64, JournalError> {
    let (seq, position) = next_seq(conn, run)?;
    let ts = rfc3339(SystemTime::now());
    conn.prepare_cached(
        "INSERT INTO events (run_id, seq, kind, payload, ts) VALUES (?1, ?2, ?3, ?4, ?5)",
    )
    .and_then(|mut s| s.execute(params![run, seq, stored.event.kind(), stored.payload, ts]))
    .map_err(sql)?;
    to_u64(position)
}

pub(super) fn read_run(
    r: &rusqlite::Row<'_>,
) -> rusqlite::Result<(String, String, Option<String>, String)> {
    Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?))
}

pub(super) fn to_run(
    row: (String, String, Option<String>, String),
) -> Result<RunRecord, JournalError> {
    let (run_id, owner, replay_of, meta) = row;
    Ok(RunRecord {
        run_id: RunId::new(run_id),
        owner: owner.into(),
        replay_of,
        meta: from_json(&meta, "run metadata")?,
    })
}

pub(super) type CallRow = (String, String, u32, Option<String>);

pub(super) fn read_call(
    conn: &Connection,
    key: &AttemptKey,
) -> Result<Option<CallRow>, JournalError> {
    let (run, node, index) = key_params(key);
    conn.prepare_cached(
        "SELECT attempt_id, fingerprint, requests, outcome FROM calls \
         WHERE run_id = ?1 AND node_id = ?2 AND call_index = ?3",
    )
    .and_then(|mut s| {
        s.query_row(params![run, node, index], |r| {
            Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?))
        })
        .optional()
    })
    .map_err(sql)
}

/// The lease on an unfinished call (its row's `lease`; none once its outcome is written).
pub(super) fn read_lease(
    conn: &Connection,
    key: &AttemptKey,
) -> Result<Option<Lease>, JournalError> {
    let (run, node, index) = key_params(key);
    let text: Option<Option<String>> = conn
        .prepare_cached(
            "SELECT lease FROM calls WHERE run_id = ?1 AND node_id = ?2 AND call_index = ?3",
        )
        .and_then(|mut s| {
            s.query_row(params![run, node, index], |r| r.get(0))
                .optional()
        })
        .map_err(sql)?;
    text.flatten().map(|t| from_json(&t, "lease")).transpose()
}

pub(super) fn parse_fingerprint(hex: &str) -> Result<Fingerprint, JournalError> {
    Fingerprint::from_hex(hex)
        .ok_or_else(|| JournalError::Corrupt(format!("a stored fingerprint is not valid: {hex}")))
}

/// `begin`, on the writer; with `first_request`, request 1 (its `max_tokens`) and with `lease`
/// the call's lease are written in the call's own row: one statement.
pub(super) fn begin_in(
    c: &Connection,
    key: &AttemptKey,
    fingerprint: &Fingerprint,
    attempt_id: &str,
    first_request: Option<u32>,
    lease: Option<&Lease>,
) -> Result<Begin, JournalError> {
    // A fresh identity is one statement: the insert finds out whether the row exists.
    let (run, node, index) = key_params(key);
    let counted = u32::from(first_request.is_some());
    let lease = lease.map(to_json).transpose()?;
    let inserted = c
        .prepare_cached(
            "INSERT INTO calls \
             (run_id, node_id, call_index, attempt_id, fingerprint, requests, max_tokens, lease) \
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8) ON CONFLICT DO NOTHING",
        )
        .and_then(|mut s| {
            s.execute(params![
                run,
                node,
                index,
                attempt_id,
                fingerprint.to_hex(),
                counted,
                first_request,
                lease
            ])
        })
        .map_err(sql);
    if matches!(inserted, Ok(1)) {
        return Ok(Begin::Fresh);
    }
    // The row exists, or the insert failed (a read-only journal still answers a recorded call).
    let Some((recorded_id, hex, requests, outcome)) = read_call(c, key)? else {
        return Err(inserted.err().unwrap_or_else(|| no_identity(key)));
    };
    if parse_fingerprint(&hex)? != *fingerprint {
        return Ok(Begin::Mismatch);
    }
    Ok(match outcome {
        Some(text) => Begin::Recorded {
            attempt_id: recorded_id,
            outcome: from_json(&text, "outcome")?,
        },
        None => Begin::Unfinished {
            attempt_id: recorded_id,
            requests,
        },
    })
}

/// `record_request`, on the writer.
pub(super) fn record_request_in(
    c: &Connection,
    key: &AttemptKey,
    n: u32,
    max_tokens: u32,
) -> Result<(), JournalError> {
    let (run, node, index) = key_params(key);
    let changed = c
        .prepare_cached(
            "UPDATE calls SET requests = MAX(requests, ?4) \
             WHERE run_id = ?1 AND node_id = ?2 AND call_index = ?3",
        )
        .and_then(|mut s| s.execute(params![run, node, index, n]))
        .map_err(sql)?;
    if changed == 0 {
        return Err(no_identity(key));
    }
    announce(c, key, n, max_tokens)
}

/// The `requests` row of provider request `n`: announced before it is sent.
fn announce(c: &Connection, key: &AttemptKey, n: u32, max_tokens: u32) -> Result<(), JournalError> {
    let (run, node, index) = key_params(key);
    c.prepare_cached(
        "INSERT OR REPLACE INTO requests (run_id, node_id, call_index, n, max_tokens) \
         VALUES (?1, ?2, ?3, ?4, ?5)",
    )
    .and_then(|mut s| s.execute(params![run, node, index, n, max_tokens]))
    .map_err(sql)?;
    Ok(())
}

/// The terminal write of a call, made ready before the writer runs: its outcome and charge
/// written as stored, and its events checked ([`StoredEvent`]): all or nothing.
pub(super) struct Finish {
    outcome: String,
    beneficiaries: Option<String>,
    generations: Option<u32>,
    output_tokens: Option<i64>,
    pub(super) events: Vec<StoredEvent>,
}

impl Finish {
    pub(super) fn new(
        outcome: &Outcome,
        charge: Option<&Charge>,
        events: Vec<Event>,
    ) -> Result<Self, JournalError> {
        let events = events
            .into_iter()
            .map(StoredEvent::new)
            .collect::<Result<_, _>>()?;
        let (beneficiaries, generations, output_tokens) = match charge {
            Some(charge) => (
                Some(to_json(&charge.beneficiaries)?),
                Some(charge.generations),
                Some(to_i64(charge.output_tokens)?),
            ),
            None => (None, None, None),
        };
        Ok(Self {
            outcome: to_json(outcome)?,
            beneficiaries,
            generations,
            output_tokens,
            events,
        })
    }
}

/// The terminal write of a call: its outcome, its charge and its events; the call's lease is
/// given up.
pub(super) fn finish(c: &Connection, key: &AttemptKey, f: &Finish) -> Result<(), JournalError> {
    let (run, node, index) = key_params(key);
    let changed = c
        .prepare_cached(
            "UPDATE calls SET outcome = ?4, lease = NULL, beneficiaries = ?5, generations = ?6, \
             output_tokens = ?7 \
             WHERE run_id = ?1 AND node_id = ?2 AND call_index = ?3 AND outcome IS NULL",
        )
        .and_then(|mut s| {
            s.execute(params![
                run,
                node,
                index,
                f.outcome,
                f.beneficiaries,
                f.generations,
                f.output_tokens
            ])
        })
        .map_err(sql)?;
    if changed == 0 {
        return Err(match read_call(c, key)? {
            None => no_identity(key),
            Some(_) => JournalError::Io(format!("the outcome of {key} is already recorded")),
        });
    }
    for event in &f.events {
        push_event(c, &run, event)?;
    }
    Ok(())
}
