//! Reading back what the journal listed: a run's events in log order, each with its v2 wrapper,
//! and the ledger's charges (the SQL that writes them is in `rows.rs`).

use super::errors::sql;
use super::rows::{from_json, to_u64};
use crate::journal::{Charge, ChargeRow, JournalError};
use rusqlite::Connection;
use serde_json::Value;
use wop_sdk::wire::{Event, RunEvent};

/// The timestamp of an event stored before timestamps were kept (schema version 1).
pub(super) const UNKNOWN_TIME: &str = "1970-01-01T00:00:00.000Z";

/// The run's events in log order, each with its v2 wrapper.
pub(super) fn events(c: &Connection, run: &str) -> Result<Vec<RunEvent>, JournalError> {
    let rows = c
        .prepare_cached("SELECT kind, payload, ts FROM events WHERE run_id = ?1 ORDER BY seq")
        .and_then(|mut s| {
            s.query_map([&run], |r| {
                Ok((
                    r.get::<_, String>(0)?,
                    r.get::<_, String>(1)?,
                    r.get::<_, Option<String>>(2)?,
                ))
            })?
            .collect::<Result<Vec<_>, _>>()
        })
        .map_err(sql)?;
    // The sequence is the position in the log: journals of schema version 1 numbered
    // from 1.
    rows.into_iter()
        .enumerate()
        .map(|(i, (kind, payload, ts))| {
            let payload: Value = from_json(&payload, "event payload")?;
            let event = Event::from_parts(&kind, &payload).map_err(|e| {
                JournalError::Corrupt(format!("a stored event of run `{run}`: {e}"))
            })?;
            Ok(RunEvent::new(
                run,
                i as u64,
                ts.unwrap_or_else(|| UNKNOWN_TIME.to_owned()),
                event,
            ))
        })
        .collect()
}

/// The ledger, or one run's part of it, in call order.
pub(super) fn charges(c: &Connection, run: Option<&str>) -> Result<Vec<ChargeRow>, JournalError> {
    let rows = c
        .prepare_cached(
            "SELECT run_id, node_id, call_index, beneficiaries, generations, output_tokens \
             FROM calls WHERE beneficiaries IS NOT NULL AND (?1 IS NULL OR run_id = ?1) \
             ORDER BY run_id, node_id, call_index",
        )
        .and_then(|mut s| {
            s.query_map([&run], |r| {
                Ok((
                    r.get::<_, String>(0)?,
                    r.get::<_, String>(1)?,
                    r.get::<_, u32>(2)?,
                    r.get::<_, String>(3)?,
                    r.get::<_, u32>(4)?,
                    r.get::<_, i64>(5)?,
                ))
            })?
            .collect::<Result<Vec<_>, _>>()
        })
        .map_err(sql)?;
    rows.into_iter()
        .map(
            |(run_id, node_id, call_index, beneficiaries, generations, output_tokens)| {
                Ok(ChargeRow {
                    run_id,
                    node_id,
                    call_index,
                    charge: Charge {
                        beneficiaries: from_json(&beneficiaries, "beneficiary list")?,
                        generations,
                        output_tokens: to_u64(output_tokens)?,
                    },
                })
            },
        )
        .collect()
}
