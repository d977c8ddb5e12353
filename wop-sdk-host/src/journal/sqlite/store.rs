//! The [`Journal`] operations of [`SqliteJournal`]: each a task for the writer (`writer.rs`, run by `combine.rs`),
//! over the SQL of `rows.rs`.

use super::SqliteJournal;
use super::rows::{
    Finish, StoredEvent, begin_in, from_json, key_params, parse_fingerprint, push_event, read_call,
    read_lease, read_run, record_request_in, to_json, to_run, to_u64,
};
use crate::answers::ready;

use super::errors::sql;
use super::task::Durability;
use crate::journal::{
    Begin, Charge, ChargeRow, Entry, Fingerprint, Journal, JournalError, Lease, Outcome, RunRecord,
};
use rusqlite::{OptionalExtension, params};
use wop_sdk::host::{AttemptKey, BoxFuture, RunId};
use wop_sdk::wire::{Event, RunEvent};

impl Journal for SqliteJournal {
    fn begin_run(&self, run: RunRecord) -> BoxFuture<'_, Result<(), JournalError>> {
        // Deferred: the run's first call identity, or its node's end, commits it.
        self.submit_one_write(Durability::Deferred, move |c| {
            let meta = to_json(&run.meta)?;
            c.prepare_cached(
                "INSERT OR IGNORE INTO runs (run_id, owner, replay_of, meta) VALUES (?1, ?2, ?3, ?4)",
            )
            .and_then(|mut s| s.execute(params![run.run_id.as_str(), run.owner, run.replay_of, meta]))
            .map_err(sql)?;
            Ok(())
        })
    }

    fn run<'a>(&'a self, run: &'a RunId) -> BoxFuture<'a, Result<Option<RunRecord>, JournalError>> {
        let run = run.as_str().to_owned();
        self.submit(Durability::Read, move |c| {
            c.prepare_cached("SELECT run_id, owner, replay_of, meta FROM runs WHERE run_id = ?1")
                .and_then(|mut s| s.query_row([run], read_run).optional())
                .map_err(sql)?
                .map(to_run)
                .transpose()
        })
    }

    fn runs(&self) -> BoxFuture<'_, Result<Vec<RunRecord>, JournalError>> {
        self.submit(Durability::Read, |c| {
            let rows = c
                .prepare_cached("SELECT run_id, owner, replay_of, meta FROM runs ORDER BY seq")
                .and_then(|mut s| s.query_map([], read_run)?.collect::<Result<Vec<_>, _>>())
                .map_err(sql)?;
            rows.into_iter().map(to_run).collect()
        })
    }

    fn begin<'a>(
        &'a self,
        key: &'a AttemptKey,
        fingerprint: &'a Fingerprint,
        attempt_id: &'a str,
    ) -> BoxFuture<'a, Result<Begin, JournalError>> {
        let (key, fingerprint, attempt_id) = (key.clone(), *fingerprint, attempt_id.to_owned());
        self.submit_one_write(Durability::Durable, move |c| {
            begin_in(c, &key, &fingerprint, &attempt_id, None, None)
        })
    }

    fn begin_first_request<'a>(
        &'a self,
        key: &'a AttemptKey,
        fingerprint: &'a Fingerprint,
        attempt_id: &'a str,
        max_tokens: u32,
    ) -> BoxFuture<'a, Result<Begin, JournalError>> {
        let (key, fingerprint, attempt_id) = (key.clone(), *fingerprint, attempt_id.to_owned());
        self.submit_one_write(Durability::Durable, move |c| {
            begin_in(c, &key, &fingerprint, &attempt_id, Some(max_tokens), None)
        })
    }

    fn record_request<'a>(
        &'a self,
        key: &'a AttemptKey,
        n: u32,
        max_tokens: u32,
    ) -> BoxFuture<'a, Result<(), JournalError>> {
        let key = key.clone();
        self.submit(Durability::Durable, move |c| {
            record_request_in(c, &key, n, max_tokens)
        })
    }

    fn begin_leased<'a>(
        &'a self,
        key: &'a AttemptKey,
        fingerprint: &'a Fingerprint,
        attempt_id: &'a str,
        max_tokens: u32,
        lease: &'a Lease,
    ) -> BoxFuture<'a, Result<Begin, JournalError>> {
        let (key, fingerprint, attempt_id) = (key.clone(), *fingerprint, attempt_id.to_owned());
        let lease = lease.clone();
        self.submit_one_write(Durability::Durable, move |c| {
            begin_in(
                c,
                &key,
                &fingerprint,
                &attempt_id,
                Some(max_tokens),
                Some(&lease),
            )
        })
    }

    fn renew_lease<'a>(
        &'a self,
        key: &'a AttemptKey,
        lease: &'a Lease,
    ) -> BoxFuture<'a, Result<bool, JournalError>> {
        let key = key.clone();
        let lease = lease.clone();
        self.submit(Durability::Durable, move |c| {
            let held = read_lease(c, &key)?;
            if held.is_none_or(|h| h.holder != lease.holder) {
                return Ok(false);
            }
            let (run, node, index) = key_params(&key);
            let text = to_json(&lease)?;
            c.prepare_cached(
                "UPDATE calls SET lease = ?4 \
                 WHERE run_id = ?1 AND node_id = ?2 AND call_index = ?3 AND outcome IS NULL",
            )
            .and_then(|mut s| s.execute(params![run, node, index, text]))
            .map_err(sql)?;
            Ok(true)
        })
    }

    fn leased<'a>(
        &'a self,
        key: &'a AttemptKey,
    ) -> BoxFuture<'a, Result<Option<Lease>, JournalError>> {
        let key = key.clone();
        self.submit(Durability::Read, move |c| read_lease(c, &key))
    }

    fn finish<'a>(
        &'a self,
        key: &'a AttemptKey,
        outcome: Outcome,
        charge: Option<Charge>,
        events: Vec<Event>,
    ) -> BoxFuture<'a, Result<(), JournalError>> {
        let key = key.clone();
        let finish = match Finish::new(&outcome, charge.as_ref(), events) {
            Ok(finish) => finish,
            Err(e) => return ready(Err(e)),
        };
        // Deferred: the next call's identity, or the node's end, commits it (see the module).
        // Without events it is one statement (the row's update), which needs no savepoint.
        let one_write = finish.events.is_empty();
        self.submit_job(Durability::Deferred, one_write, move |c| {
            super::rows::finish(c, &key, &finish)
        })
    }

    fn lookup<'a>(
        &'a self,
        key: &'a AttemptKey,
    ) -> BoxFuture<'a, Result<Option<Entry>, JournalError>> {
        let key = key.clone();
        self.submit(Durability::Read, move |c| {
            let Some((attempt_id, hex, requests, outcome)) = read_call(c, &key)? else {
                return Ok(None);
            };
            Ok(Some(Entry {
                attempt_id,
                fingerprint: parse_fingerprint(&hex)?,
                requests,
                outcome: outcome
                    .map(|text| from_json(&text, "outcome"))
                    .transpose()?,
            }))
        })
    }

    fn completed_attempt<'a>(
        &'a self,
        run: &'a RunId,
        attempt_id: &'a str,
    ) -> BoxFuture<'a, Result<bool, JournalError>> {
        let run = run.as_str().to_owned();
        let attempt_id = attempt_id.to_owned();
        self.submit(Durability::Read, move |c| {
            let outcomes = c
                .prepare_cached(
                    "SELECT outcome FROM calls WHERE run_id = ?1 AND attempt_id = ?2 \
                     AND outcome IS NOT NULL",
                )
                .and_then(|mut s| {
                    s.query_map([run, attempt_id], |r| r.get::<_, String>(0))?
                        .collect::<Result<Vec<_>, _>>()
                })
                .map_err(sql)?;
            for text in outcomes {
                if matches!(
                    from_json::<Outcome>(&text, "outcome")?,
                    Outcome::Completed { .. }
                ) {
                    return Ok(true);
                }
            }
            Ok(false)
        })
    }

    fn append_event<'a>(
        &'a self,
        run: &'a RunId,
        event: Event,
    ) -> BoxFuture<'a, Result<u64, JournalError>> {
        let run = run.as_str().to_owned();
        // A node's end is what the run's result leaves the process after: durable, and it
        // commits every deferred write before it. Other events are deferred.
        let durability = match event {
            Event::NodeCompleted(_) | Event::NodeFailed(_) => Durability::Durable,
            _ => Durability::Deferred,
        };
        let stored = match StoredEvent::new(event) {
            Ok(stored) => stored,
            Err(e) => return ready(Err(e)),
        };
        // One statement writes (the insert; the sequence is read before it).
        self.submit_one_write(durability, move |c| push_event(c, &run, &stored))
    }

    fn events<'a>(&'a self, run: &'a RunId) -> BoxFuture<'a, Result<Vec<RunEvent>, JournalError>> {
        let run = run.as_str().to_owned();
        self.submit(Durability::Read, move |c| super::reads::events(c, &run))
    }

    fn charges<'a>(
        &'a self,
        run: Option<&'a RunId>,
    ) -> BoxFuture<'a, Result<Vec<ChargeRow>, JournalError>> {
        let run = run.map(|r| r.as_str().to_owned());
        self.submit(Durability::Read, move |c| {
            super::reads::charges(c, run.as_deref())
        })
    }

    fn call_count(&self) -> BoxFuture<'_, Result<u64, JournalError>> {
        self.submit(Durability::Read, |c| {
            let n: i64 = c
                .query_row("SELECT COUNT(*) FROM calls", [], |r| r.get(0))
                .map_err(sql)?;
            to_u64(n)
        })
    }
}
