//! The attempt journal: where call identities live.
//!
//! A call's identity ([`AttemptKey`]) and its request [`Fingerprint`] are persisted before
//! dispatch; each provider request of the call is recorded as it is sent; the terminal outcome,
//! its charge and the call's events are written in one transaction. On re-entry the journal tells
//! the host whether to replay ([`Begin::Recorded`]), refuse ([`Begin::Mismatch`]), or report an
//! ambiguous dispatch ([`Begin::Unfinished`]): redelivery is not retry. An unfinished call is
//! ambiguous only when its owner is gone: the owner holds a [`Lease`] on it (process, boot,
//! heartbeat; see [`lease`]), and a second host waits for a live owner and reattaches to its
//! outcome.
//!
//! Three stores pass one shared test suite: [`MemoryJournal`] for fast unit tests and a host that
//! needs no durability; with the `sqlite` feature, [`SqliteJournal`] (bundled SQLite, WAL,
//! durable before dispatch; its memory does not grow with the runs it has seen); and
//! [`LogJournal`], one file of checksummed records, where a durable call costs about one
//! `fdatasync` (it holds an index of every run it has seen: BENCHMARKS.md §13).

#[cfg(test)]
pub(crate) mod damage;
mod fingerprint;
pub mod lease;
mod log;
mod memory;
#[cfg(feature = "sqlite")]
mod sqlite;
#[cfg(test)]
pub(crate) mod suite;

pub use fingerprint::{Fingerprint, fingerprint};
pub use lease::Lease;
pub use log::LogJournal;
pub use memory::{MemoryJournal, Retention};
#[cfg(feature = "sqlite")]
pub use sqlite::{DEFAULT_FLUSH_WINDOW, SqliteJournal};
pub use wop_sdk::wire::canonical_json;

use crate::answers::ready;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::borrow::Cow;
use std::fmt;
use std::sync::Arc;
use wop_sdk::host::{AttemptKey, BoxFuture, RunId};
use wop_sdk::wire::{ErrorEnvelope, Event, RunEvent};

/// Refuses an event that breaks a v2 payload rule ([`Event::check`]), naming the field.
pub(crate) fn checked(event: &Event) -> Result<(), JournalError> {
    event.check().map_err(|e| {
        JournalError::Io(format!(
            "event `{}` is not a valid v2 event: {e}",
            event.kind()
        ))
    })
}

/// The schema version this build writes and reads.
pub const SCHEMA_VERSION: u32 = 3;

/// A journal failure. Never a panic: a damaged or newer file is reported and left untouched.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum JournalError {
    /// The file is not a journal, or is damaged.
    Corrupt(String),
    /// The file was written by a newer version of the SDK.
    NewerSchema {
        /// The version found.
        found: u32,
        /// The version this build understands.
        supported: u32,
    },
    /// The storage refused a read or a write (full disk, read-only file, I/O error).
    Io(String),
}

impl fmt::Display for JournalError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Corrupt(m) => write!(f, "the attempt journal is damaged or not a journal: {m}"),
            Self::NewerSchema { found, supported } => write!(
                f,
                "the attempt journal has schema version {found}, newer than the {supported} this build \
                 understands: upgrade wop-sdk to open it (the file was not modified)"
            ),
            Self::Io(m) => write!(f, "the attempt journal could not be read or written: {m}"),
        }
    }
}

impl std::error::Error for JournalError {}

/// A generation charged to beneficiaries: one row per completed call.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Charge {
    /// Who is charged, jointly (the run's owner when the call named none). Shared: the charges
    /// of a run's calls that name no beneficiary hold its owner's one list.
    pub beneficiaries: Arc<[String]>,
    /// Completed provider generations.
    pub generations: u32,
    /// Output tokens reported for them.
    pub output_tokens: u64,
}

/// A charge as the ledger holds it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ChargeRow {
    /// The call.
    pub run_id: String,
    /// The call.
    pub node_id: String,
    /// The call.
    pub call_index: u32,
    /// The charge.
    #[serde(flatten)]
    pub charge: Charge,
}

/// How a call ended.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "camelCase")]
pub enum Outcome {
    /// The call completed: the exact result JSON text handed to the pack.
    Completed {
        /// The result, byte for byte.
        result: String,
    },
    /// The call failed.
    Failed {
        /// What an outside party may see.
        public: ErrorEnvelope,
        /// The cause, private to the host (provider error text, policy, billing).
        private_cause: String,
        /// The dispatch outcome was unknown (a crash mid-call).
        ambiguous: bool,
    },
}

/// A recorded call.
#[derive(Clone, Debug, PartialEq)]
pub struct Entry {
    /// The identity handed out.
    pub attempt_id: String,
    /// The request fingerprint.
    pub fingerprint: Fingerprint,
    /// Provider requests recorded as sent.
    pub requests: u32,
    /// The terminal outcome, when written.
    pub outcome: Option<Outcome>,
}

/// What [`Journal::begin`] found.
#[derive(Clone, Debug, PartialEq)]
pub enum Begin {
    /// No record: the identity is now persisted (durably) with the given attempt id.
    Fresh,
    /// Same identity, same fingerprint, terminal outcome recorded: replay it.
    Recorded {
        /// The recorded identity.
        attempt_id: String,
        /// The recorded outcome.
        outcome: Outcome,
    },
    /// Same identity, a different request: an integrity error.
    Mismatch,
    /// Same identity and request, no terminal outcome: the dispatch outcome is unknown.
    Unfinished {
        /// The recorded identity.
        attempt_id: String,
        /// Provider requests recorded as sent before the interruption.
        requests: u32,
    },
}

/// A run as the journal knows it: enough to show its events or replay it later.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RunRecord {
    /// The run.
    pub run_id: RunId,
    /// Who owns it (charged when a call names no beneficiary); shared with the host's copy.
    pub owner: Arc<str>,
    /// The run it replays, for a replay fork.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub replay_of: Option<String>,
    /// The node the run started with and its input: what a replay runs again.
    pub meta: RunMeta,
}

/// What the host keeps of how a run started. Stored as the JSON object `{"nodeId", "typeId",
/// "input"}`; a key a journal lacks reads as its default (`main`, no type, `{}`), and keys it
/// does not know are ignored.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct RunMeta {
    /// The node instance id (shared with the node's events).
    pub node_id: Arc<str>,
    /// The node's type id (empty when the journal recorded none: the run cannot be replayed).
    pub type_id: Cow<'static, str>,
    /// The node's input.
    pub input: Value,
}

impl Default for RunMeta {
    fn default() -> Self {
        Self {
            node_id: Arc::from("main"),
            type_id: Cow::Borrowed(""),
            input: Value::Object(serde_json::Map::new()),
        }
    }
}

/// The store behind the local host. Implementations must make [`Journal::begin`]'s write durable
/// before it returns, and [`Journal::finish`] atomic.
///
/// Durability, for a store that has it: every write is applied in the order it was made and seen
/// by later reads at once. The identity writes (`begin*`, [`Journal::record_request`]), leases
/// and a node's end (`node.completed` / `node.failed` through [`Journal::append_event`]) are
/// durable when they return. [`Journal::finish`], [`Journal::begin_run`] and the other events may
/// be *deferred*: durable at the latest with the next durable write, which a store makes durable
/// together with everything written before it (so the run's result never leaves the process
/// before the outcomes it rests on are durable). A crash may lose a deferred write; for an
/// outcome that is the same as a crash just before it, and the call is then ambiguous and never
/// charged. The SQLite journal defers; [`LogJournal`] defers the sync only (a deferred write is
/// in its file when it returns: a process crash keeps it, a machine crash before the next sync
/// can lose it); [`MemoryJournal`] keeps nothing across a crash.
pub trait Journal: Send + Sync {
    /// Registers a run (idempotent).
    fn begin_run(&self, run: RunRecord) -> BoxFuture<'_, Result<(), JournalError>>;

    /// A run's record.
    fn run<'a>(&'a self, run: &'a RunId) -> BoxFuture<'a, Result<Option<RunRecord>, JournalError>>;

    /// Every run, oldest first.
    fn runs(&self) -> BoxFuture<'_, Result<Vec<RunRecord>, JournalError>>;

    /// Looks the identity up and, when it is new, persists it with `attempt_id` before returning.
    fn begin<'a>(
        &'a self,
        key: &'a AttemptKey,
        fingerprint: &'a Fingerprint,
        attempt_id: &'a str,
    ) -> BoxFuture<'a, Result<Begin, JournalError>>;

    /// [`Journal::begin`] and, when the identity is fresh, [`Journal::record_request`] of request
    /// 1 with `max_tokens`, made durable together: the identity and the announcement of the first
    /// request cost one durable write instead of two. The default runs the two in turn; a store
    /// that can write both in one transaction should.
    fn begin_first_request<'a>(
        &'a self,
        key: &'a AttemptKey,
        fingerprint: &'a Fingerprint,
        attempt_id: &'a str,
        max_tokens: u32,
    ) -> BoxFuture<'a, Result<Begin, JournalError>> {
        Box::pin(async move {
            let begin = self.begin(key, fingerprint, attempt_id).await?;
            if begin == Begin::Fresh {
                self.record_request(key, 1, max_tokens).await?;
            }
            Ok(begin)
        })
    }

    /// [`Journal::begin_first_request`] and, when the identity is fresh, `lease` on the call,
    /// made durable together: a second host never sees the identity without its owner. The
    /// default keeps no lease (a store without leases: a second host then takes every unfinished
    /// call for abandoned, as before leases).
    fn begin_leased<'a>(
        &'a self,
        key: &'a AttemptKey,
        fingerprint: &'a Fingerprint,
        attempt_id: &'a str,
        max_tokens: u32,
        lease: &'a Lease,
    ) -> BoxFuture<'a, Result<Begin, JournalError>> {
        let _ = lease;
        self.begin_first_request(key, fingerprint, attempt_id, max_tokens)
    }

    /// Renews the heartbeat of `lease` on the call, if `lease.holder` still holds it; answers
    /// whether it did. [`Journal::finish`] gives the lease up.
    fn renew_lease<'a>(
        &'a self,
        key: &'a AttemptKey,
        lease: &'a Lease,
    ) -> BoxFuture<'a, Result<bool, JournalError>> {
        let _ = (key, lease);
        ready(Ok(false))
    }

    /// The lease on an unfinished call, if any.
    fn leased<'a>(
        &'a self,
        key: &'a AttemptKey,
    ) -> BoxFuture<'a, Result<Option<Lease>, JournalError>> {
        let _ = key;
        ready(Ok(None))
    }

    /// Records that provider request number `n` (from 1) of the call is about to be sent with
    /// `max_tokens`.
    fn record_request<'a>(
        &'a self,
        key: &'a AttemptKey,
        n: u32,
        max_tokens: u32,
    ) -> BoxFuture<'a, Result<(), JournalError>>;

    /// Writes the terminal outcome, its charge and the call's events in one transaction, and
    /// gives up the call's lease; may be deferred (see the trait). They are the journal's from
    /// then on: nothing is copied on the way. An event that breaks a payload rule
    /// ([`Event::check`]) refuses the whole write: all or nothing.
    fn finish<'a>(
        &'a self,
        key: &'a AttemptKey,
        outcome: Outcome,
        charge: Option<Charge>,
        events: Vec<Event>,
    ) -> BoxFuture<'a, Result<(), JournalError>>;

    /// The recorded call, for a replay fork.
    fn lookup<'a>(
        &'a self,
        key: &'a AttemptKey,
    ) -> BoxFuture<'a, Result<Option<Entry>, JournalError>>;

    /// Whether `attempt_id` is a completed call of `run` (retry lineage).
    fn completed_attempt<'a>(
        &'a self,
        run: &'a RunId,
        attempt_id: &'a str,
    ) -> BoxFuture<'a, Result<bool, JournalError>>;

    /// Appends one event to the run's log, recorded now; returns its sequence number, from 0.
    /// Read back ([`Journal::events`]) it has its v2 wrapper: `eventId` (derived from the run
    /// and the sequence), `timestamp`, `schemaVersion`. An event that breaks a payload rule
    /// ([`Event::check`]) is refused ([`JournalError::Io`] naming the field) and nothing is
    /// written.
    fn append_event<'a>(
        &'a self,
        run: &'a RunId,
        event: Event,
    ) -> BoxFuture<'a, Result<u64, JournalError>>;

    /// The run's events in sequence order, `sequence` from 0.
    fn events<'a>(&'a self, run: &'a RunId) -> BoxFuture<'a, Result<Vec<RunEvent>, JournalError>>;

    /// The ledger: every charge, or a run's.
    fn charges<'a>(
        &'a self,
        run: Option<&'a RunId>,
    ) -> BoxFuture<'a, Result<Vec<ChargeRow>, JournalError>>;

    /// How many calls are recorded (for diagnostics and benchmarks).
    fn call_count(&self) -> BoxFuture<'_, Result<u64, JournalError>>;

    /// The host says `run` has no node executing any more (its last node ended, or was
    /// dropped). A journal with a retention rule ([`MemoryJournal::with_retention`]) may drop
    /// ended runs from then on; a run with a node executing is never dropped. The default keeps
    /// everything (the SQLite journal: the file is the record).
    fn run_ended(&self, run: &RunId) {
        let _ = run;
    }
}
