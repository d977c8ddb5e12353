//! The journal's schema: its tables at each version, the check that a file has them, and the
//! migrations from one version to the next.

use super::errors::sql;
use crate::journal::{JournalError, SCHEMA_VERSION};
use rusqlite::{Connection, OptionalExtension};

/// Schema version 1.
pub(super) const SCHEMA_V1: &str = "
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

/// Schema version 2: each event keeps when it was recorded (the v2 `timestamp`).
pub(super) const SCHEMA_V2: &str = "ALTER TABLE events ADD COLUMN ts TEXT;";

/// Schema version 3: one row per call, and no table beside its own index. A call's row holds
/// its lease, its first request's `max_tokens` and its charge, so its identity is one `INSERT`
/// and its outcome one `UPDATE` (before: rows in `calls`, `requests`, `leases` and `charges`);
/// `calls` and `events` are `WITHOUT ROWID` tables, stored in their primary key's order, so a
/// commit writes one page of each instead of a table page and an index page (and the
/// `calls_by_attempt` index goes: the lineage check reads the run's calls by primary key). The
/// tables are rebuilt (foreign keys are off during the migration, see `migrate`): the leases of
/// unfinished calls and the charges move into their calls' rows; `requests` keeps the rows of
/// later requests (a retry's) and those of request 1 written before version 3.
pub(super) const SCHEMA_V3: &str = "
CREATE TABLE calls_v3 (
    run_id TEXT NOT NULL,
    node_id TEXT NOT NULL,
    call_index INTEGER NOT NULL,
    attempt_id TEXT NOT NULL,
    fingerprint TEXT NOT NULL,
    requests INTEGER NOT NULL DEFAULT 0,
    outcome TEXT,
    lease TEXT,
    max_tokens INTEGER,
    beneficiaries TEXT,
    generations INTEGER,
    output_tokens INTEGER,
    PRIMARY KEY (run_id, node_id, call_index)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS leases (
    run_id TEXT NOT NULL,
    node_id TEXT NOT NULL,
    call_index INTEGER NOT NULL,
    lease TEXT NOT NULL,
    PRIMARY KEY (run_id, node_id, call_index)
);
INSERT INTO calls_v3 (run_id, node_id, call_index, attempt_id, fingerprint, requests, outcome,
    lease, beneficiaries, generations, output_tokens)
SELECT c.run_id, c.node_id, c.call_index, c.attempt_id, c.fingerprint, c.requests, c.outcome,
    CASE WHEN c.outcome IS NULL THEN l.lease END, g.beneficiaries, g.generations, g.output_tokens
FROM calls c
LEFT JOIN leases l
    ON l.run_id = c.run_id AND l.node_id = c.node_id AND l.call_index = c.call_index
LEFT JOIN charges g
    ON g.run_id = c.run_id AND g.node_id = c.node_id AND g.call_index = c.call_index;
DROP TABLE leases;
DROP TABLE charges;
DROP TABLE calls;
ALTER TABLE calls_v3 RENAME TO calls;
CREATE TABLE events_v3 (
    run_id TEXT NOT NULL,
    seq INTEGER NOT NULL,
    kind TEXT NOT NULL,
    payload TEXT NOT NULL,
    ts TEXT,
    PRIMARY KEY (run_id, seq)
) WITHOUT ROWID;
INSERT INTO events_v3 (run_id, seq, kind, payload, ts)
SELECT run_id, seq, kind, payload, ts FROM events;
DROP TABLE events;
ALTER TABLE events_v3 RENAME TO events;
";

/// The tables and columns this build reads and writes (checked on open).
pub(super) const TABLES: &[(&str, &[&str])] = &[
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
            "lease",
            "max_tokens",
            "beneficiaries",
            "generations",
            "output_tokens",
        ],
    ),
    (
        "requests",
        &["run_id", "node_id", "call_index", "n", "max_tokens"],
    ),
    ("events", &["run_id", "seq", "kind", "payload", "ts"]),
];

pub(super) fn user_version(conn: &Connection) -> Result<u32, JournalError> {
    let v: i64 = conn
        .query_row("PRAGMA user_version", [], |r| r.get(0))
        .map_err(sql)?;
    u32::try_from(v).map_err(|_| JournalError::Corrupt(format!("invalid schema version {v}")))
}

/// A schema-less file may be adopted only when it holds nothing.
pub(super) fn no_foreign_tables(conn: &Connection) -> Result<(), JournalError> {
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
pub(super) fn check_tables(conn: &Connection) -> Result<(), JournalError> {
    check_tables_at(conn, SCHEMA_VERSION)
}

/// Columns added after schema version 1, with the version that added each.
const ADDED: &[(&str, &str, u32)] = &[
    ("events", "ts", 2),
    ("calls", "lease", 3),
    ("calls", "max_tokens", 3),
    ("calls", "beneficiaries", 3),
    ("calls", "generations", 3),
    ("calls", "output_tokens", 3),
];

/// Checks the tables and columns a journal of schema `version` has.
pub(super) fn check_tables_at(conn: &Connection, version: u32) -> Result<(), JournalError> {
    for (table, columns) in TABLES {
        let columns = columns.iter().filter(|c| {
            !ADDED
                .iter()
                .any(|(t, col, since)| t == table && col == *c && *since > version)
        });
        // Reading the table tells a missing table (not a journal) from a damaged file.
        conn.prepare(&format!("SELECT * FROM \"{table}\" LIMIT 0"))
            .map_err(|e| {
                if e.to_string().contains("no such table") {
                    JournalError::Corrupt(format!("not an attempt journal: table {table}: {e}"))
                } else {
                    // Not the journal's shape: the storage refused the read (an unopenable side
                    // file, a lock), or the file is damaged.
                    sql(e)
                }
            })?;
        // The names as bytes: a damaged schema can name a column with bytes that are not UTF-8,
        // and rusqlite's `column_names` panics on those.
        let have = conn
            .prepare_cached("SELECT name FROM pragma_table_info(?1)")
            .and_then(|mut names| {
                names
                    .query_map([table], |r| {
                        Ok(r.get_ref(0)?
                            .as_bytes()
                            .map(<[u8]>::to_vec)
                            .unwrap_or_default())
                    })?
                    .collect::<Result<Vec<_>, _>>()
            })
            .map_err(sql)?;
        if let Some(missing) = columns
            .into_iter()
            .find(|c| !have.iter().any(|h| h == c.as_bytes()))
        {
            return Err(JournalError::Corrupt(format!(
                "not an attempt journal: table {table} has no column {missing}"
            )));
        }
    }
    Ok(())
}

/// Brings the schema to [`SCHEMA_VERSION`], one step per version, in one transaction, with
/// foreign keys off (a step may rebuild a table others refer to: SQLite's procedure for it) and
/// checked before the commit; they are on again afterwards.
pub(super) fn migrate(conn: &mut Connection) -> Result<(), JournalError> {
    conn.execute_batch("PRAGMA foreign_keys = OFF;")
        .map_err(sql)?;
    let migrated = migrate_in(conn);
    conn.execute_batch("PRAGMA foreign_keys = ON;")
        .map_err(sql)?;
    migrated
}

fn migrate_in(conn: &mut Connection) -> Result<(), JournalError> {
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
    let broken: Option<String> = tx
        .query_row("PRAGMA foreign_key_check", [], |r| r.get(0))
        .optional()
        .map_err(sql)?;
    if let Some(table) = broken {
        return Err(JournalError::Corrupt(format!(
            "a row of table {table} refers to a call the journal does not hold"
        )));
    }
    tx.commit().map_err(sql)
}

/// One migration step, from `from` to `from + 1`.
pub(super) fn migrate_step(conn: &Connection, from: u32) -> Result<(), JournalError> {
    match from {
        0 => {
            no_foreign_tables(conn)?;
            conn.execute_batch(SCHEMA_V1).map_err(sql)
        }
        1 => conn.execute_batch(SCHEMA_V2).map_err(sql),
        2 => conn.execute_batch(SCHEMA_V3).map_err(sql),
        other => Err(JournalError::Corrupt(format!(
            "no migration from schema version {other}"
        ))),
    }
}
