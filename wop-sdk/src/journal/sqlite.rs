//! The durable journal: one SQLite file (bundled SQLite, WAL, `synchronous=FULL`).
//!
//! A dedicated writer thread owns the connection. Every journal call becomes a command sent to it
//! over a channel and answered through a oneshot. The thread drains every command already queued
//! and runs them in one transaction (group commit: one fsync for the batch), each inside its own
//! savepoint so that a failing command fails alone; the answers go out only after the commit, so
//! [`Journal::begin`] is durable before it returns. When the commit itself fails, every command of
//! that batch fails with [`JournalError::Io`] and nothing of it is kept.
//!
//! Opening inspects an existing file before SQLite may write to it: the header is checked by hand
//! (magic, page size, declared length against the file length, schema version), then a read-only
//! connection checks the schema and runs `PRAGMA quick_check`. A damaged, foreign or newer file is
//! refused with [`JournalError::Corrupt`] or [`JournalError::NewerSchema`] and left as it was.

use super::{
    Begin, Charge, ChargeRow, Entry, Fingerprint, Journal, JournalError, Outcome, RunRecord,
    SCHEMA_VERSION,
};
use crate::host::{AttemptKey, BoxFuture, RunId};
use crate::wire::RunEvent;
use rusqlite::{Connection, ErrorCode, OpenFlags, OptionalExtension, params};
use serde_json::Value;
use std::ffi::OsString;
use std::fmt;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, mpsc};
use std::thread::JoinHandle;
use std::time::Duration;
use tokio::sync::oneshot;

/// How long a statement waits for a lock held by another process before failing.
const BUSY_TIMEOUT: Duration = Duration::from_secs(5);

/// The most commands one transaction takes.
const MAX_BATCH: usize = 512;

/// The SQLite file header magic.
const MAGIC: &[u8; 16] = b"SQLite format 3\0";

/// Schema version 1.
const SCHEMA_V1: &str = "
CREATE TABLE runs (
    seq INTEGER PRIMARY KEY,
    run_id TEXT NOT NULL UNIQUE,
    owner TEXT NOT NULL,
    replay_of TEXT,
    meta TEXT NOT NULL
);
CREATE TABLE calls (
    run_id TEXT NOT NULL,
    node_id TEXT NOT NULL,
    call_index INTEGER NOT NULL,
    attempt_id TEXT NOT NULL,
    fingerprint TEXT NOT NULL,
    requests INTEGER NOT NULL DEFAULT 0,
    outcome TEXT,
    PRIMARY KEY (run_id, node_id, call_index)
);
CREATE INDEX calls_by_attempt ON calls (run_id, attempt_id);
CREATE TABLE requests (
    run_id TEXT NOT NULL,
    node_id TEXT NOT NULL,
    call_index INTEGER NOT NULL,
    n INTEGER NOT NULL,
    max_tokens INTEGER NOT NULL,
    PRIMARY KEY (run_id, node_id, call_index, n),
    FOREIGN KEY (run_id, node_id, call_index) REFERENCES calls (run_id, node_id, call_index)
);
CREATE TABLE events (
    run_id TEXT NOT NULL,
    seq INTEGER NOT NULL,
    kind TEXT NOT NULL,
    payload TEXT NOT NULL,
    PRIMARY KEY (run_id, seq)
);
CREATE TABLE charges (
    run_id TEXT NOT NULL,
    node_id TEXT NOT NULL,
    call_index INTEGER NOT NULL,
    beneficiaries TEXT NOT NULL,
    generations INTEGER NOT NULL,
    output_tokens INTEGER NOT NULL,
    PRIMARY KEY (run_id, node_id, call_index),
    FOREIGN KEY (run_id, node_id, call_index) REFERENCES calls (run_id, node_id, call_index)
);
";

/// The tables and columns this build reads and writes (checked on open).
const TABLES: &[(&str, &[&str])] = &[
    ("runs", &["seq", "run_id", "owner", "replay_of", "meta"]),
    (
        "calls",
        &[
            "run_id",
            "node_id",
            "call_index",
            "attempt_id",
            "fingerprint",
            "requests",
            "outcome",
        ],
    ),
    (
        "requests",
        &["run_id", "node_id", "call_index", "n", "max_tokens"],
    ),
    ("events", &["run_id", "seq", "kind", "payload"]),
    (
        "charges",
        &[
            "run_id",
            "node_id",
            "call_index",
            "beneficiaries",
            "generations",
            "output_tokens",
        ],
    ),
];

/// A journal in one SQLite file.
pub struct SqliteJournal {
    path: PathBuf,
    read_only: bool,
    tx: Option<mpsc::Sender<Box<dyn Task>>>,
    writer: Option<JoinHandle<()>>,
    commits: Arc<AtomicU64>,
}

impl fmt::Debug for SqliteJournal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SqliteJournal")
            .field("path", &self.path)
            .field("read_only", &self.read_only)
            .field("commits", &self.commits.load(Ordering::Relaxed))
            .finish()
    }
}

impl Drop for SqliteJournal {
    fn drop(&mut self) {
        // Closing the channel lets the writer finish what is queued, close the connection
        // (checkpointing the WAL) and stop.
        drop(self.tx.take());
        if let Some(handle) = self.writer.take() {
            let _ = handle.join();
        }
    }
}

impl SqliteJournal {
    /// Opens the journal at `path`, creating the parent directories and the file when missing and
    /// migrating an older schema. A damaged or foreign file gives [`JournalError::Corrupt`], a newer
    /// one [`JournalError::NewerSchema`]; either is left untouched.
    pub fn open(path: impl AsRef<Path>) -> Result<Self, JournalError> {
        let path = path.as_ref().to_path_buf();
        if let Some(parent) = path.parent()
            && !parent.as_os_str().is_empty()
        {
            std::fs::create_dir_all(parent).map_err(|e| {
                JournalError::Io(format!("cannot create {}: {e}", parent.display()))
            })?;
        }
        if file_len(&path)?.is_some_and(|len| len > 0) {
            inspect(&path)?;
        }
        let flags = OpenFlags::SQLITE_OPEN_READ_WRITE
            | OpenFlags::SQLITE_OPEN_CREATE
            | OpenFlags::SQLITE_OPEN_NO_MUTEX;
        let mut conn = Connection::open_with_flags(&path, flags).map_err(|e| opening(&path, e))?;
        conn.busy_timeout(BUSY_TIMEOUT).map_err(sql)?;
        let mode: String = conn
            .query_row("PRAGMA journal_mode = WAL", [], |r| r.get(0))
            .map_err(sql)?;
        if !mode.eq_ignore_ascii_case("wal") {
            return Err(JournalError::Io(format!(
                "{}: cannot switch to WAL mode (journal_mode is {mode})",
                path.display()
            )));
        }
        conn.execute_batch("PRAGMA synchronous = FULL; PRAGMA foreign_keys = ON;")
            .map_err(sql)?;
        migrate(&mut conn)?;
        check_tables(&conn)?;
        Self::spawn(path, false, conn)
    }

    /// Opens an existing journal for reading only (`SQLITE_OPEN_READ_ONLY` and `query_only`):
    /// every write answers [`JournalError::Io`]. The file is never migrated or modified.
    pub fn open_read_only(path: impl AsRef<Path>) -> Result<Self, JournalError> {
        let path = path.as_ref().to_path_buf();
        if file_len(&path)?.is_none_or(|len| len == 0) {
            return Err(JournalError::Io(format!(
                "{}: no journal to open read-only",
                path.display()
            )));
        }
        let version = inspect(&path)?;
        if version < SCHEMA_VERSION {
            return Err(JournalError::Io(format!(
                "{}: schema version {version} needs a migration, which a read-only open cannot do",
                path.display()
            )));
        }
        let flags = OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX;
        let conn = Connection::open_with_flags(&path, flags).map_err(|e| opening(&path, e))?;
        conn.busy_timeout(BUSY_TIMEOUT).map_err(sql)?;
        conn.execute_batch("PRAGMA query_only = ON;").map_err(sql)?;
        check_tables(&conn)?;
        Self::spawn(path, true, conn)
    }

    fn spawn(path: PathBuf, read_only: bool, conn: Connection) -> Result<Self, JournalError> {
        let (tx, rx) = mpsc::channel::<Box<dyn Task>>();
        let commits = Arc::new(AtomicU64::new(0));
        let counter = Arc::clone(&commits);
        let writer = std::thread::Builder::new()
            .name("wop-journal".into())
            .spawn(move || writer_loop(conn, rx, &counter))
            .map_err(|e| JournalError::Io(format!("cannot start the journal thread: {e}")))?;
        Ok(Self {
            path,
            read_only,
            tx: Some(tx),
            writer: Some(writer),
            commits,
        })
    }

    /// The journal file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Transactions committed so far (each batch of writes is one, with one fsync of the WAL):
    /// how well writes are grouped under load.
    pub fn commits(&self) -> u64 {
        self.commits.load(Ordering::Relaxed)
    }

    /// Sends `work` to the journal thread; the future answers once it ran (and, for a write, once
    /// its batch is committed).
    fn submit<T, F>(&self, write: bool, work: F) -> BoxFuture<'static, Result<T, JournalError>>
    where
        T: Send + 'static,
        F: FnOnce(&Connection) -> Result<T, JournalError> + Send + 'static,
    {
        let (reply, answer) = oneshot::channel();
        let job = Box::new(Job {
            write,
            work: Some(work),
            result: None,
            reply,
        });
        let sent = self.tx.as_ref().is_some_and(|tx| tx.send(job).is_ok());
        Box::pin(async move {
            if !sent {
                return Err(stopped());
            }
            answer.await.unwrap_or_else(|_| Err(stopped()))
        })
    }
}

fn stopped() -> JournalError {
    JournalError::Io("the journal thread has stopped".into())
}

/// A SQLite error as a journal error: damage is [`JournalError::Corrupt`], the rest I/O.
fn sql(e: rusqlite::Error) -> JournalError {
    match e.sqlite_error_code() {
        Some(ErrorCode::DatabaseCorrupt | ErrorCode::NotADatabase) => {
            JournalError::Corrupt(e.to_string())
        }
        _ => JournalError::Io(e.to_string()),
    }
}

fn opening(path: &Path, e: rusqlite::Error) -> JournalError {
    match sql(e) {
        JournalError::Corrupt(m) => JournalError::Corrupt(format!("{}: {m}", path.display())),
        JournalError::Io(m) => JournalError::Io(format!("{}: {m}", path.display())),
        other => other,
    }
}

fn file_len(path: &Path) -> Result<Option<u64>, JournalError> {
    match std::fs::metadata(path) {
        Ok(m) if m.is_file() => Ok(Some(m.len())),
        Ok(_) => Err(JournalError::Io(format!(
            "{}: not a regular file",
            path.display()
        ))),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(JournalError::Io(format!("{}: {e}", path.display()))),
    }
}

fn side_file(path: &Path, suffix: &str) -> PathBuf {
    let mut s = OsString::from(path.as_os_str());
    s.push(suffix);
    PathBuf::from(s)
}

fn be32(b: &[u8], at: usize) -> u32 {
    let mut w = [0u8; 4];
    if let Some(s) = b.get(at..at + 4) {
        w.copy_from_slice(s);
    }
    u32::from_be_bytes(w)
}

/// Checks an existing, non-empty file without writing to it; returns its schema version.
fn inspect(path: &Path) -> Result<u32, JournalError> {
    let corrupt = |m: String| JournalError::Corrupt(format!("{}: {m}", path.display()));
    let len = file_len(path)?.unwrap_or(0);
    let mut header = Vec::with_capacity(100);
    std::fs::File::open(path)
        .and_then(|f| f.take(100).read_to_end(&mut header))
        .map_err(|e| JournalError::Io(format!("{}: {e}", path.display())))?;
    if header.len() < 100 || !header.starts_with(MAGIC) {
        return Err(corrupt(
            "not an SQLite database (the file header is missing or wrong)".into(),
        ));
    }
    let page_size = match u16::from_be_bytes([header[16], header[17]]) {
        1 => 65536u64,
        n if n >= 512 && n.is_power_of_two() => u64::from(n),
        n => return Err(corrupt(format!("invalid page size {n} in the header"))),
    };
    // The main file may lag behind a WAL that was not checkpointed; only a file without one must
    // hold every page its header declares.
    let wal_len = file_len(&side_file(path, "-wal"))?.unwrap_or(0);
    if wal_len == 0 {
        if len % page_size != 0 {
            return Err(corrupt(format!(
                "the file is {len} bytes, not a whole number of {page_size}-byte pages (truncated?)"
            )));
        }
        let declared = u64::from(be32(&header, 28));
        let valid = be32(&header, 24) == be32(&header, 92);
        if valid && declared > 0 && declared * page_size > len {
            return Err(corrupt(format!(
                "the header declares {declared} pages but the file holds {} (truncated)",
                len / page_size
            )));
        }
    }
    let header_version = be32(&header, 60);
    if header_version > SCHEMA_VERSION {
        return Err(JournalError::NewerSchema {
            found: header_version,
            supported: SCHEMA_VERSION,
        });
    }
    let conn = inspection_connection(path)?;
    let version = user_version(&conn).map_err(|e| prefix(path, e))?;
    if version > SCHEMA_VERSION {
        return Err(JournalError::NewerSchema {
            found: version,
            supported: SCHEMA_VERSION,
        });
    }
    let check: String = conn
        .query_row("PRAGMA quick_check(1)", [], |r| r.get(0))
        .map_err(|e| prefix(path, sql(e)))?;
    if check != "ok" {
        return Err(corrupt(format!("integrity check failed: {check}")));
    }
    if version == 0 {
        no_foreign_tables(&conn).map_err(|e| prefix(path, e))?;
    } else {
        check_tables(&conn).map_err(|e| prefix(path, e))?;
    }
    drop(conn);
    Ok(version)
}

/// A read-only connection that creates nothing next to the file. Without a WAL or rollback
/// journal beside it the file alone is the database, so it is opened `immutable` (no locks, no
/// `-shm`/`-wal` created, even for a WAL-mode file); otherwise SQLite needs those side files, and
/// they already exist.
fn inspection_connection(path: &Path) -> Result<Connection, JournalError> {
    let flags = OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX;
    let alone = ["-wal", "-shm", "-journal"]
        .iter()
        .all(|suffix| !side_file(path, suffix).exists());
    let conn = match path.to_str().filter(|_| alone) {
        Some(text) => Connection::open_with_flags(
            format!("file:{}?immutable=1", uri_path(text)),
            flags | OpenFlags::SQLITE_OPEN_URI,
        ),
        None => Connection::open_with_flags(path, flags),
    }
    .map_err(|e| opening(path, e))?;
    conn.busy_timeout(BUSY_TIMEOUT).map_err(sql)?;
    Ok(conn)
}

/// A path as the path part of a `file:` URI.
fn uri_path(path: &str) -> String {
    let mut out = String::with_capacity(path.len());
    if cfg!(windows) && path.as_bytes().get(1) == Some(&b':') {
        out.push('/');
    }
    for b in path.bytes() {
        match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'.' | b'_' | b'~' | b'/' => {
                out.push(char::from(b));
            }
            b'\\' if cfg!(windows) => out.push('/'),
            b':' if cfg!(windows) => out.push(':'),
            _ => out.push_str(&format!("%{b:02X}")),
        }
    }
    out
}

fn prefix(path: &Path, e: JournalError) -> JournalError {
    match e {
        JournalError::Corrupt(m) => JournalError::Corrupt(format!("{}: {m}", path.display())),
        JournalError::Io(m) => JournalError::Io(format!("{}: {m}", path.display())),
        other => other,
    }
}

fn user_version(conn: &Connection) -> Result<u32, JournalError> {
    let v: i64 = conn
        .query_row("PRAGMA user_version", [], |r| r.get(0))
        .map_err(sql)?;
    u32::try_from(v).map_err(|_| JournalError::Corrupt(format!("invalid schema version {v}")))
}

/// A schema-less file may be adopted only when it holds nothing.
fn no_foreign_tables(conn: &Connection) -> Result<(), JournalError> {
    let mut stmt = conn
        .prepare("SELECT name FROM sqlite_master WHERE name NOT LIKE 'sqlite_%' ORDER BY name")
        .map_err(sql)?;
    let names = stmt
        .query_map([], |r| r.get::<_, String>(0))
        .map_err(sql)?
        .collect::<Result<Vec<_>, _>>()
        .map_err(sql)?;
    if names.is_empty() {
        Ok(())
    } else {
        Err(JournalError::Corrupt(format!(
            "an SQLite database but not an attempt journal (no schema version; it holds {})",
            names.join(", ")
        )))
    }
}

/// Every table and column this build uses is present.
fn check_tables(conn: &Connection) -> Result<(), JournalError> {
    for (table, columns) in TABLES {
        let stmt = conn
            .prepare(&format!("SELECT * FROM \"{table}\" LIMIT 0"))
            .map_err(|e| {
                JournalError::Corrupt(format!("not an attempt journal: table {table}: {e}"))
            })?;
        let have: Vec<&str> = stmt.column_names().collect();
        if let Some(missing) = columns.iter().find(|c| !have.contains(c)) {
            return Err(JournalError::Corrupt(format!(
                "not an attempt journal: table {table} has no column {missing}"
            )));
        }
    }
    Ok(())
}

/// Brings the schema to [`SCHEMA_VERSION`], one step per version, in one transaction.
fn migrate(conn: &mut Connection) -> Result<(), JournalError> {
    let tx = conn
        .transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)
        .map_err(sql)?;
    let mut version = user_version(&tx)?;
    if version > SCHEMA_VERSION {
        return Err(JournalError::NewerSchema {
            found: version,
            supported: SCHEMA_VERSION,
        });
    }
    if version == SCHEMA_VERSION {
        return Ok(());
    }
    while version < SCHEMA_VERSION {
        migrate_step(&tx, version)?;
        version += 1;
        tx.pragma_update(None, "user_version", version)
            .map_err(sql)?;
    }
    tx.commit().map_err(sql)
}

/// One migration step, from `from` to `from + 1`.
fn migrate_step(conn: &Connection, from: u32) -> Result<(), JournalError> {
    match from {
        0 => {
            no_foreign_tables(conn)?;
            conn.execute_batch(SCHEMA_V1).map_err(sql)
        }
        other => Err(JournalError::Corrupt(format!(
            "no migration from schema version {other}"
        ))),
    }
}

/// A command for the journal thread, type-erased.
trait Task: Send {
    fn is_write(&self) -> bool;
    /// Runs the command; true when it succeeded.
    fn exec(&mut self, conn: &Connection) -> bool;
    /// Answers the caller: the command's own result, or `failure` when its batch was lost.
    fn answer(self: Box<Self>, failure: Option<JournalError>);
}

struct Job<T, F> {
    write: bool,
    work: Option<F>,
    result: Option<Result<T, JournalError>>,
    reply: oneshot::Sender<Result<T, JournalError>>,
}

impl<T, F> Task for Job<T, F>
where
    T: Send,
    F: FnOnce(&Connection) -> Result<T, JournalError> + Send,
{
    fn is_write(&self) -> bool {
        self.write
    }

    fn exec(&mut self, conn: &Connection) -> bool {
        let result = match self.work.take() {
            Some(work) => work(conn),
            None => Err(JournalError::Io("a journal command ran twice".into())),
        };
        let ok = result.is_ok();
        self.result = Some(result);
        ok
    }

    fn answer(self: Box<Self>, failure: Option<JournalError>) {
        let result = match (self.result, failure) {
            (Some(Err(e)), _) => Err(e),
            (_, Some(f)) => Err(f),
            (Some(ok), None) => ok,
            (None, None) => Err(JournalError::Io("a journal command did not run".into())),
        };
        let _ = self.reply.send(result);
    }
}

fn writer_loop(conn: Connection, rx: mpsc::Receiver<Box<dyn Task>>, commits: &AtomicU64) {
    while let Ok(first) = rx.recv() {
        let mut batch = vec![first];
        while batch.len() < MAX_BATCH {
            match rx.try_recv() {
                Ok(task) => batch.push(task),
                Err(_) => break,
            }
        }
        run_batch(&conn, batch, commits);
    }
    let _ = conn.close();
}

/// Runs a batch: reads alone run as they are; with a write, the whole batch is one transaction,
/// one savepoint per command, answered after the commit.
fn run_batch(conn: &Connection, mut batch: Vec<Box<dyn Task>>, commits: &AtomicU64) {
    if !batch.iter().any(|t| t.is_write()) {
        for mut task in batch {
            task.exec(conn);
            task.answer(None);
        }
        return;
    }
    if let Err(e) = conn.execute_batch("BEGIN IMMEDIATE") {
        let e = sql(e);
        for mut task in batch {
            if task.is_write() {
                task.answer(Some(e.clone()));
            } else {
                task.exec(conn);
                task.answer(None);
            }
        }
        return;
    }
    let mut lost: Option<JournalError> = None;
    for task in &mut batch {
        if let Err(e) = conn.execute_batch("SAVEPOINT wop_cmd") {
            lost = Some(sql(e));
            break;
        }
        let ok = task.exec(conn);
        if conn.is_autocommit() {
            // SQLite rolled the whole transaction back (full disk, I/O error).
            lost = Some(JournalError::Io(
                "the journal transaction was rolled back by a storage error".into(),
            ));
            break;
        }
        let end = if ok {
            "RELEASE wop_cmd"
        } else {
            "ROLLBACK TO wop_cmd; RELEASE wop_cmd"
        };
        if let Err(e) = conn.execute_batch(end) {
            lost = Some(sql(e));
            break;
        }
    }
    let failure = match lost {
        Some(e) => Some(e),
        None => match conn.execute_batch("COMMIT") {
            Ok(()) => {
                commits.fetch_add(1, Ordering::Relaxed);
                None
            }
            Err(e) => Some(JournalError::Io(format!(
                "the journal could not commit: {}",
                message(&sql(e))
            ))),
        },
    };
    if failure.is_some() && !conn.is_autocommit() {
        let _ = conn.execute_batch("ROLLBACK");
    }
    for task in batch {
        task.answer(failure.clone());
    }
}

fn message(e: &JournalError) -> String {
    match e {
        JournalError::Corrupt(m) | JournalError::Io(m) => m.clone(),
        other => other.to_string(),
    }
}

fn key_params(key: &AttemptKey) -> (String, String, u32) {
    (
        key.run_id.as_str().to_owned(),
        key.node_id.clone(),
        key.call_index,
    )
}

fn to_json<T: serde::Serialize>(v: &T) -> Result<String, JournalError> {
    serde_json::to_string(v).map_err(|e| JournalError::Io(format!("cannot encode: {e}")))
}

fn from_json<T: serde::de::DeserializeOwned>(text: &str, what: &str) -> Result<T, JournalError> {
    serde_json::from_str(text)
        .map_err(|e| JournalError::Corrupt(format!("a stored {what} is not valid: {e}")))
}

fn no_identity(key: &AttemptKey) -> JournalError {
    JournalError::Io(format!("no identity recorded for {key}"))
}

fn to_i64(v: u64) -> Result<i64, JournalError> {
    i64::try_from(v).map_err(|_| JournalError::Io(format!("{v} is too large to store")))
}

fn to_u64(v: i64) -> Result<u64, JournalError> {
    u64::try_from(v).map_err(|_| JournalError::Corrupt(format!("a stored count is negative: {v}")))
}

fn next_seq(conn: &Connection, run: &str) -> Result<i64, JournalError> {
    conn.prepare_cached("SELECT COALESCE(MAX(seq), 0) + 1 FROM events WHERE run_id = ?1")
        .and_then(|mut s| s.query_row([run], |r| r.get(0)))
        .map_err(sql)
}

fn push_event(
    conn: &Connection,
    run: &str,
    kind: &str,
    payload: &Value,
) -> Result<u64, JournalError> {
    let seq = next_seq(conn, run)?;
    let payload = to_json(payload)?;
    conn.prepare_cached("INSERT INTO events (run_id, seq, kind, payload) VALUES (?1, ?2, ?3, ?4)")
        .and_then(|mut s| s.execute(params![run, seq, kind, payload]))
        .map_err(sql)?;
    to_u64(seq)
}

fn read_run(r: &rusqlite::Row<'_>) -> rusqlite::Result<(String, String, Option<String>, String)> {
    Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?))
}

fn to_run(row: (String, String, Option<String>, String)) -> Result<RunRecord, JournalError> {
    let (run_id, owner, replay_of, meta) = row;
    Ok(RunRecord {
        run_id,
        owner,
        replay_of,
        meta: from_json(&meta, "run metadata")?,
    })
}

type CallRow = (String, String, u32, Option<String>);

fn read_call(conn: &Connection, key: &AttemptKey) -> Result<Option<CallRow>, JournalError> {
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

fn parse_fingerprint(hex: &str) -> Result<Fingerprint, JournalError> {
    Fingerprint::from_hex(hex)
        .ok_or_else(|| JournalError::Corrupt(format!("a stored fingerprint is not valid: {hex}")))
}

/// `begin`, in the writer thread; with `first_request`, request 1 is recorded in the same savepoint.
fn begin_in(
    c: &Connection,
    key: &AttemptKey,
    fingerprint: &Fingerprint,
    attempt_id: &str,
    first_request: Option<u32>,
) -> Result<Begin, JournalError> {
    let Some((recorded_id, hex, requests, outcome)) = read_call(c, key)? else {
        let (run, node, index) = key_params(key);
        c.prepare_cached(
            "INSERT INTO calls (run_id, node_id, call_index, attempt_id, fingerprint) \
             VALUES (?1, ?2, ?3, ?4, ?5)",
        )
        .and_then(|mut s| s.execute(params![run, node, index, attempt_id, fingerprint.to_hex()]))
        .map_err(sql)?;
        if let Some(max_tokens) = first_request {
            record_request_in(c, key, 1, max_tokens)?;
        }
        return Ok(Begin::Fresh);
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

/// `record_request`, in the writer thread.
fn record_request_in(
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
    c.prepare_cached(
        "INSERT OR REPLACE INTO requests (run_id, node_id, call_index, n, max_tokens) \
         VALUES (?1, ?2, ?3, ?4, ?5)",
    )
    .and_then(|mut s| s.execute(params![run, node, index, n, max_tokens]))
    .map_err(sql)?;
    Ok(())
}

impl Journal for SqliteJournal {
    fn begin_run<'a>(&'a self, run: &'a RunRecord) -> BoxFuture<'a, Result<(), JournalError>> {
        let run = run.clone();
        self.submit(true, move |c| {
            let meta = to_json(&run.meta)?;
            c.prepare_cached(
                "INSERT OR IGNORE INTO runs (run_id, owner, replay_of, meta) VALUES (?1, ?2, ?3, ?4)",
            )
            .and_then(|mut s| s.execute(params![run.run_id, run.owner, run.replay_of, meta]))
            .map_err(sql)?;
            Ok(())
        })
    }

    fn run<'a>(&'a self, run: &'a RunId) -> BoxFuture<'a, Result<Option<RunRecord>, JournalError>> {
        let run = run.as_str().to_owned();
        self.submit(false, move |c| {
            c.prepare_cached("SELECT run_id, owner, replay_of, meta FROM runs WHERE run_id = ?1")
                .and_then(|mut s| s.query_row([run], read_run).optional())
                .map_err(sql)?
                .map(to_run)
                .transpose()
        })
    }

    fn runs(&self) -> BoxFuture<'_, Result<Vec<RunRecord>, JournalError>> {
        self.submit(false, |c| {
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
        self.submit(true, move |c| {
            begin_in(c, &key, &fingerprint, &attempt_id, None)
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
        self.submit(true, move |c| {
            begin_in(c, &key, &fingerprint, &attempt_id, Some(max_tokens))
        })
    }

    fn record_request<'a>(
        &'a self,
        key: &'a AttemptKey,
        n: u32,
        max_tokens: u32,
    ) -> BoxFuture<'a, Result<(), JournalError>> {
        let key = key.clone();
        self.submit(true, move |c| record_request_in(c, &key, n, max_tokens))
    }

    fn finish<'a>(
        &'a self,
        key: &'a AttemptKey,
        outcome: &'a Outcome,
        charge: Option<&'a Charge>,
        events: &'a [(String, Value)],
    ) -> BoxFuture<'a, Result<(), JournalError>> {
        let key = key.clone();
        let outcome = outcome.clone();
        let charge = charge.cloned();
        let events = events.to_vec();
        self.submit(true, move |c| {
            match read_call(c, &key)? {
                None => return Err(no_identity(&key)),
                Some((_, _, _, Some(_))) => {
                    return Err(JournalError::Io(format!(
                        "the outcome of {key} is already recorded"
                    )));
                }
                Some(_) => {}
            }
            let (run, node, index) = key_params(&key);
            let text = to_json(&outcome)?;
            c.prepare_cached(
                "UPDATE calls SET outcome = ?4 WHERE run_id = ?1 AND node_id = ?2 AND call_index = ?3",
            )
            .and_then(|mut s| s.execute(params![run, node, index, text]))
            .map_err(sql)?;
            if let Some(charge) = charge {
                let beneficiaries = to_json(&charge.beneficiaries)?;
                let output_tokens = to_i64(charge.output_tokens)?;
                c.prepare_cached(
                    "INSERT INTO charges \
                     (run_id, node_id, call_index, beneficiaries, generations, output_tokens) \
                     VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
                )
                .and_then(|mut s| {
                    s.execute(params![
                        run,
                        node,
                        index,
                        beneficiaries,
                        charge.generations,
                        output_tokens
                    ])
                })
                .map_err(sql)?;
            }
            for (kind, payload) in &events {
                push_event(c, &run, kind, payload)?;
            }
            Ok(())
        })
    }

    fn lookup<'a>(
        &'a self,
        key: &'a AttemptKey,
    ) -> BoxFuture<'a, Result<Option<Entry>, JournalError>> {
        let key = key.clone();
        self.submit(false, move |c| {
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
        self.submit(false, move |c| {
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
        kind: &'a str,
        payload: &'a Value,
    ) -> BoxFuture<'a, Result<u64, JournalError>> {
        let run = run.as_str().to_owned();
        let kind = kind.to_owned();
        let payload = payload.clone();
        self.submit(true, move |c| push_event(c, &run, &kind, &payload))
    }

    fn events<'a>(&'a self, run: &'a RunId) -> BoxFuture<'a, Result<Vec<RunEvent>, JournalError>> {
        let run = run.as_str().to_owned();
        self.submit(false, move |c| {
            let rows = c
                .prepare_cached(
                    "SELECT seq, kind, payload FROM events WHERE run_id = ?1 ORDER BY seq",
                )
                .and_then(|mut s| {
                    s.query_map([&run], |r| {
                        Ok((
                            r.get::<_, i64>(0)?,
                            r.get::<_, String>(1)?,
                            r.get::<_, String>(2)?,
                        ))
                    })?
                    .collect::<Result<Vec<_>, _>>()
                })
                .map_err(sql)?;
            rows.into_iter()
                .map(|(seq, kind, payload)| {
                    Ok(RunEvent {
                        seq: to_u64(seq)?,
                        run_id: run.clone(),
                        kind,
                        payload: from_json(&payload, "event payload")?,
                    })
                })
                .collect()
        })
    }

    fn charges<'a>(
        &'a self,
        run: Option<&'a RunId>,
    ) -> BoxFuture<'a, Result<Vec<ChargeRow>, JournalError>> {
        let run = run.map(|r| r.as_str().to_owned());
        self.submit(false, move |c| {
            let rows = c
                .prepare_cached(
                    "SELECT run_id, node_id, call_index, beneficiaries, generations, output_tokens \
                     FROM charges WHERE ?1 IS NULL OR run_id = ?1 \
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
        })
    }

    fn call_count(&self) -> BoxFuture<'_, Result<u64, JournalError>> {
        self.submit(false, |c| {
            let n: i64 = c
                .query_row("SELECT COUNT(*) FROM calls", [], |r| r.get(0))
                .map_err(sql)?;
            to_u64(n)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use sha2::{Digest, Sha256};
    use std::sync::atomic::AtomicUsize;

    /// A fresh path in its own (not yet created) directory under the system temp dir.
    fn temp_path(name: &str) -> PathBuf {
        static NEXT: AtomicUsize = AtomicUsize::new(0);
        let n = NEXT.fetch_add(1, Ordering::Relaxed);
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos())
            .unwrap_or(0);
        std::env::temp_dir()
            .join(format!(
                "wop-journal-{}-{nanos}-{n}-{name}",
                std::process::id()
            ))
            .join("journal.db")
    }

    fn cleanup(path: &Path) {
        if let Some(dir) = path.parent() {
            let _ = std::fs::remove_dir_all(dir);
        }
    }

    fn digest(path: &Path) -> [u8; 32] {
        Sha256::digest(std::fs::read(path).expect("read the file")).into()
    }

    fn no_side_files(path: &Path) {
        for suffix in ["-wal", "-shm", "-journal"] {
            assert!(
                !side_file(path, suffix).exists(),
                "{suffix} was created next to {}",
                path.display()
            );
        }
    }

    fn key(run: &str, call: u32) -> AttemptKey {
        AttemptKey {
            run_id: RunId::new(run),
            node_id: "n1".into(),
            call_index: call,
        }
    }

    fn charge() -> Charge {
        Charge {
            beneficiaries: vec!["u1".into(), "u2".into()],
            generations: 1,
            output_tokens: 42,
        }
    }

    /// A closed journal holding `calls` finished calls.
    async fn journal_with(path: &Path, calls: u32) {
        let j = SqliteJournal::open(path).expect("open");
        for i in 0..calls {
            let k = key("r1", i);
            assert_eq!(
                j.begin(&k, &Fingerprint([7; 32]), &format!("a-{i}")).await,
                Ok(Begin::Fresh)
            );
            j.finish(
                &k,
                &Outcome::Completed {
                    result: format!("{{\"content\":\"{}\"}}", "x".repeat(200)),
                },
                Some(&charge()),
                &[("provider.usage".into(), json!({"i": i}))],
            )
            .await
            .expect("finish");
        }
    }

    fn refused(path: &Path) -> JournalError {
        SqliteJournal::open(path).expect_err("a damaged file must be refused")
    }

    #[tokio::test]
    async fn sqlite_journal_passes_the_suite() {
        let path = temp_path("suite");
        let j = SqliteJournal::open(&path).expect("open");
        assert_eq!(j.path(), path);
        assert!(format!("{j:?}").contains("SqliteJournal"));
        super::super::suite::begin_answers(&j).await;
        super::super::suite::failures_and_lineage(&j).await;
        super::super::suite::runs_and_events(&j).await;
        drop(j);
        cleanup(&path);
    }

    #[tokio::test]
    async fn the_first_request_is_durable_with_the_identity_in_one_commit() {
        let path = temp_path("begin-first");
        let k = key("r1", 0);
        {
            let j = SqliteJournal::open(&path).expect("open");
            let before = j.commits();
            assert_eq!(
                j.begin_first_request(&k, &Fingerprint([1; 32]), "a-1", 256)
                    .await,
                Ok(Begin::Fresh)
            );
            assert_eq!(j.commits() - before, 1, "one durable write");
            // Re-entry: the identity is found, nothing more is recorded.
            assert_eq!(
                j.begin_first_request(&k, &Fingerprint([1; 32]), "a-2", 256)
                    .await,
                Ok(Begin::Unfinished {
                    attempt_id: "a-1".into(),
                    requests: 1
                })
            );
        }
        let j = SqliteJournal::open(&path).expect("reopen");
        assert_eq!(
            j.begin(&k, &Fingerprint([1; 32]), "a-3").await,
            Ok(Begin::Unfinished {
                attempt_id: "a-1".into(),
                requests: 1
            })
        );
        drop(j);
        cleanup(&path);
    }

    #[tokio::test]
    async fn a_begun_call_is_unfinished_after_reopen() {
        let path = temp_path("begin-reopen");
        let k = key("r1", 0);
        {
            let j = SqliteJournal::open(&path).expect("open");
            assert_eq!(
                j.begin(&k, &Fingerprint([1; 32]), "a-1").await,
                Ok(Begin::Fresh)
            );
            j.record_request(&k, 1, 256).await.expect("request");
        }
        let j = SqliteJournal::open(&path).expect("reopen");
        assert_eq!(
            j.begin(&k, &Fingerprint([1; 32]), "a-2").await,
            Ok(Begin::Unfinished {
                attempt_id: "a-1".into(),
                requests: 1
            })
        );
        assert_eq!(
            j.begin(&k, &Fingerprint([2; 32]), "a-2").await,
            Ok(Begin::Mismatch)
        );
        drop(j);
        cleanup(&path);
    }

    #[tokio::test]
    async fn a_finished_call_is_recorded_byte_for_byte_after_reopen() {
        let path = temp_path("finish-reopen");
        let k = key("r1", 0);
        // Key order, whitespace, escapes and non-ASCII must survive untouched.
        let text = "{ \"z\":1,\"a\" : [1.50, 2e3],\"s\":\"h\\u00e9llo \\\"q\\\" \u{1F600}\" }";
        let outcome = Outcome::Completed {
            result: text.to_owned(),
        };
        {
            let j = SqliteJournal::open(&path).expect("open");
            j.begin_run(&RunRecord {
                run_id: "r1".into(),
                owner: "o".into(),
                replay_of: None,
                meta: json!({"node": "x"}),
            })
            .await
            .expect("run");
            j.begin(&k, &Fingerprint([1; 32]), "a-1")
                .await
                .expect("begin");
            j.finish(
                &k,
                &outcome,
                Some(&charge()),
                &[("provider.usage".into(), json!({"outputTokens": 42}))],
            )
            .await
            .expect("finish");
        }
        let j = SqliteJournal::open(&path).expect("reopen");
        match j.begin(&k, &Fingerprint([1; 32]), "a-2").await {
            Ok(Begin::Recorded {
                attempt_id,
                outcome: Outcome::Completed { result },
            }) => {
                assert_eq!(attempt_id, "a-1");
                assert_eq!(result.as_bytes(), text.as_bytes());
            }
            other => panic!("expected a recorded completion, got {other:?}"),
        }
        let rows = j.charges(None).await.expect("charges");
        assert_eq!(rows.len(), 1);
        assert_eq!(rows[0].charge, charge());
        assert_eq!(j.events(&RunId::new("r1")).await.expect("events").len(), 1);
        assert_eq!(j.runs().await.expect("runs").len(), 1);
        assert!(
            j.completed_attempt(&RunId::new("r1"), "a-1")
                .await
                .expect("lineage")
        );
        drop(j);
        cleanup(&path);
    }

    #[tokio::test]
    async fn a_newer_schema_is_refused_and_left_alone() {
        let path = temp_path("newer");
        journal_with(&path, 2).await;
        {
            let c = Connection::open(&path).expect("plain open");
            c.pragma_update(None, "user_version", 99)
                .expect("set version");
        }
        let before = digest(&path);
        assert_eq!(
            SqliteJournal::open(&path).expect_err("newer"),
            JournalError::NewerSchema {
                found: 99,
                supported: SCHEMA_VERSION
            }
        );
        assert_eq!(
            SqliteJournal::open_read_only(&path).expect_err("newer"),
            JournalError::NewerSchema {
                found: 99,
                supported: SCHEMA_VERSION
            }
        );
        assert_eq!(digest(&path), before, "the file was modified");
        no_side_files(&path);
        cleanup(&path);
    }

    #[tokio::test]
    async fn a_truncated_journal_is_refused_and_left_alone() {
        let path = temp_path("truncated");
        journal_with(&path, 200).await;
        let len = std::fs::metadata(&path).expect("len").len();
        let file = std::fs::OpenOptions::new()
            .write(true)
            .open(&path)
            .expect("open for truncation");
        file.set_len(len / 2).expect("truncate");
        drop(file);
        let before = digest(&path);
        let err = refused(&path);
        assert!(
            matches!(&err, JournalError::Corrupt(m) if m.contains("truncated")),
            "{err}"
        );
        assert_eq!(digest(&path), before, "the file was modified");
        no_side_files(&path);
        cleanup(&path);
    }

    #[test]
    fn garbage_is_refused_and_left_alone() {
        for (name, bytes) in [
            (
                "garbage",
                (0..10_000u32).map(|i| (i * 7919 % 251) as u8).collect(),
            ),
            ("short", b"hello".to_vec()),
            (
                "text",
                "{\"not\": \"a database\"}\n".repeat(100).into_bytes(),
            ),
        ] {
            let path = temp_path(name);
            std::fs::create_dir_all(path.parent().expect("parent")).expect("dir");
            std::fs::write(&path, &bytes).expect("write");
            let before = digest(&path);
            let err = refused(&path);
            assert!(
                matches!(&err, JournalError::Corrupt(m) if m.contains("not an SQLite database")),
                "{name}: {err}"
            );
            assert!(
                matches!(
                    SqliteJournal::open_read_only(&path),
                    Err(JournalError::Corrupt(_))
                ),
                "{name}"
            );
            assert_eq!(digest(&path), before, "{name}: the file was modified");
            no_side_files(&path);
            cleanup(&path);
        }
    }

    #[tokio::test]
    async fn a_journal_with_garbage_pages_is_refused_and_left_alone() {
        let path = temp_path("garbage-pages");
        journal_with(&path, 200).await;
        let mut bytes = std::fs::read(&path).expect("read");
        // Keep the header page, scramble the rest.
        for (i, b) in bytes.iter_mut().enumerate().skip(4096) {
            *b = (i * 31 % 253) as u8;
        }
        std::fs::write(&path, &bytes).expect("write");
        let before = digest(&path);
        let err = refused(&path);
        assert!(matches!(err, JournalError::Corrupt(_)), "{err}");
        assert_eq!(digest(&path), before, "the file was modified");
        no_side_files(&path);
        cleanup(&path);
    }

    #[test]
    fn a_foreign_database_is_refused_and_left_alone() {
        let path = temp_path("foreign");
        std::fs::create_dir_all(path.parent().expect("parent")).expect("dir");
        {
            let c = Connection::open(&path).expect("plain open");
            c.execute_batch("CREATE TABLE users (id INTEGER PRIMARY KEY, name TEXT);")
                .expect("create");
        }
        no_side_files(&path);
        let before = digest(&path);
        let err = refused(&path);
        assert!(
            matches!(&err, JournalError::Corrupt(m) if m.contains("not an attempt journal") && m.contains("users")),
            "{err}"
        );
        assert!(matches!(
            SqliteJournal::open_read_only(&path),
            Err(JournalError::Corrupt(_))
        ));
        assert_eq!(digest(&path), before, "the file was modified");
        no_side_files(&path);

        // A file claiming version 1 without the journal's tables is not a journal either.
        {
            let c = Connection::open(&path).expect("plain open");
            c.pragma_update(None, "user_version", 1).expect("version");
        }
        let before = digest(&path);
        let err = refused(&path);
        assert!(
            matches!(&err, JournalError::Corrupt(m) if m.contains("not an attempt journal")),
            "{err}"
        );
        assert_eq!(digest(&path), before, "the file was modified");
        cleanup(&path);
    }

    #[tokio::test]
    async fn a_path_with_uri_characters_reopens() {
        let path = temp_path("we?ird #dir %20&x=1").with_file_name("j o?u#r%n=al.db");
        journal_with(&path, 1).await;
        let j = SqliteJournal::open(&path).expect("reopen");
        assert_eq!(j.call_count().await, Ok(1));
        drop(j);
        no_side_files(&path);
        cleanup(&path);
    }

    #[tokio::test]
    async fn an_empty_file_becomes_a_journal() {
        let path = temp_path("empty");
        std::fs::create_dir_all(path.parent().expect("parent")).expect("dir");
        std::fs::write(&path, b"").expect("write");
        let j = SqliteJournal::open(&path).expect("open");
        assert_eq!(j.call_count().await, Ok(0));
        drop(j);
        let c = Connection::open(&path).expect("plain open");
        assert_eq!(user_version(&c), Ok(SCHEMA_VERSION));
        drop(c);
        cleanup(&path);
    }

    #[tokio::test]
    async fn a_read_only_journal_reads_and_refuses_writes() {
        let path = temp_path("read-only");
        journal_with(&path, 3).await;
        let before = digest(&path);
        let j = SqliteJournal::open_read_only(&path).expect("open read-only");
        assert_eq!(j.call_count().await, Ok(3));
        let entry = j.lookup(&key("r1", 1)).await.expect("lookup");
        assert_eq!(entry.map(|e| e.attempt_id), Some("a-1".to_owned()));
        for result in [
            j.begin(&key("r1", 9), &Fingerprint([7; 32]), "a-9")
                .await
                .map(|_| ()),
            j.append_event(&RunId::new("r1"), "x", &json!({}))
                .await
                .map(|_| ()),
            j.record_request(&key("r1", 0), 2, 1).await,
        ] {
            assert!(
                matches!(&result, Err(JournalError::Io(m)) if m.contains("readonly")),
                "{result:?}"
            );
        }
        // Reads still work after refused writes.
        assert_eq!(j.charges(None).await.map(|c| c.len()), Ok(3));
        drop(j);
        assert_eq!(digest(&path), before, "a read-only open modified the file");
        assert!(matches!(
            SqliteJournal::open_read_only(temp_path("missing")),
            Err(JournalError::Io(_))
        ));
        cleanup(&path);
    }

    #[tokio::test]
    async fn a_full_store_is_an_io_error_not_a_panic() {
        let path = temp_path("full");
        let j = SqliteJournal::open(&path).expect("open");
        // Cap the file at its current size: the next page it needs is "disk full".
        j.submit(true, |c| {
            let pages: i64 = c
                .query_row("PRAGMA page_count", [], |r| r.get(0))
                .map_err(sql)?;
            c.pragma_update(None, "max_page_count", pages).map_err(sql)
        })
        .await
        .expect("cap the file");
        let mut ok = 0u32;
        let mut failure = None;
        for i in 0..500 {
            match j
                .begin(&key("r1", i), &Fingerprint([1; 32]), &"a".repeat(2000))
                .await
            {
                Ok(Begin::Fresh) => ok += 1,
                Ok(other) => panic!("unexpected {other:?}"),
                Err(e) => {
                    failure = Some(e);
                    break;
                }
            }
        }
        let failure = failure.expect("the capped file must fill up");
        assert!(
            matches!(&failure, JournalError::Io(m) if m.contains("full")),
            "{failure}"
        );
        assert_eq!(j.call_count().await, Ok(u64::from(ok)));
        drop(j);
        cleanup(&path);
    }

    #[tokio::test]
    async fn a_failing_command_fails_alone_in_its_batch() {
        let path = temp_path("batch");
        let j = SqliteJournal::open(&path).expect("open");
        let commits = j.commits();
        // Hold the thread so the next commands queue up and run as one batch.
        let hold = j.submit(false, |_| {
            std::thread::sleep(Duration::from_millis(300));
            Ok(())
        });
        let (k1, k2, k3) = (key("r1", 1), key("r1", 2), key("nope", 0));
        let fp = Fingerprint([1; 32]);
        let a = j.begin(&k1, &fp, "a-1");
        let bad = j.record_request(&k3, 1, 1);
        let twice = j.begin(&k2, &fp, "a-2");
        let first = Outcome::Completed {
            result: "{}".into(),
        };
        let second = Outcome::Completed {
            result: "[]".into(),
        };
        let b = j.finish(&k1, &first, None, &[]);
        let again = j.finish(&k1, &second, None, &[]);
        hold.await.expect("hold");
        assert_eq!(a.await, Ok(Begin::Fresh));
        assert!(matches!(bad.await, Err(JournalError::Io(m)) if m.contains("no identity")));
        assert_eq!(twice.await, Ok(Begin::Fresh));
        assert_eq!(b.await, Ok(()));
        assert!(matches!(again.await, Err(JournalError::Io(m)) if m.contains("already")));
        assert_eq!(j.commits(), commits + 1, "one batch, one commit");
        assert_eq!(j.call_count().await, Ok(2));
        assert_eq!(
            j.lookup(&k1).await.expect("lookup").and_then(|e| e.outcome),
            Some(Outcome::Completed {
                result: "{}".into()
            })
        );
        drop(j);
        cleanup(&path);
    }

    /// A figure, not a check: `cargo test -p wop-sdk --lib sequential_begin_latency -- --ignored
    /// --nocapture`.
    #[tokio::test]
    #[ignore = "measurement"]
    async fn sequential_begin_latency() {
        let path = temp_path("latency");
        let j = SqliteJournal::open(&path).expect("open");
        let fp = Fingerprint([1; 32]);
        let started = std::time::Instant::now();
        for i in 0..200 {
            let k = key("r1", i);
            assert_eq!(j.begin(&k, &fp, "a").await, Ok(Begin::Fresh));
        }
        let elapsed = started.elapsed();
        eprintln!(
            "200 sequential durable begins: {elapsed:?} ({:?} each, {} commits)",
            elapsed / 200,
            j.commits()
        );
        drop(j);
        cleanup(&path);
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
    async fn concurrent_calls_are_all_kept() {
        let path = temp_path("concurrent");
        let j = Arc::new(SqliteJournal::open(&path).expect("open"));
        let commits = j.commits();
        let started = std::time::Instant::now();
        let tasks: Vec<_> = (0..32u32)
            .map(|i| {
                let j = Arc::clone(&j);
                tokio::spawn(async move {
                    let k = AttemptKey {
                        run_id: RunId::new(format!("run-{}", i % 4)),
                        node_id: format!("node-{i}"),
                        call_index: i,
                    };
                    let (fp, id) = (Fingerprint([i as u8; 32]), format!("a-{i}"));
                    assert_eq!(j.begin(&k, &fp, &id).await, Ok(Begin::Fresh));
                    j.record_request(&k, 1, 128).await.expect("request");
                    j.finish(
                        &k,
                        &Outcome::Completed {
                            result: format!("{{\"i\":{i}}}"),
                        },
                        Some(&charge()),
                        &[("provider.usage".into(), json!({"i": i}))],
                    )
                    .await
                    .expect("finish");
                })
            })
            .collect();
        for t in tasks {
            t.await.expect("task");
        }
        let elapsed = started.elapsed();
        assert_eq!(j.call_count().await, Ok(32));
        assert_eq!(j.charges(None).await.map(|c| c.len()), Ok(32));
        for r in 0..4 {
            let events = j
                .events(&RunId::new(format!("run-{r}")))
                .await
                .expect("events");
            let seqs: Vec<u64> = events.iter().map(|e| e.seq).collect();
            assert_eq!(seqs, (1..=8).collect::<Vec<u64>>());
        }
        eprintln!(
            "96 writes from 32 concurrent calls: {} commits in {elapsed:?}",
            j.commits() - commits
        );
        drop(j);
        cleanup(&path);
    }
}
