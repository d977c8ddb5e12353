//! Opening a journal file: the hand check of the header, the read-only inspection, connections
//! (the schema and its migrations are in `schema.rs`). Nothing here writes to a file it has not
//! accepted.

use super::errors::{BUSY_TIMEOUT, opening, sql};
use super::schema::{check_tables_at, no_foreign_tables, user_version};
use crate::journal::{JournalError, SCHEMA_VERSION};
use rusqlite::{Connection, OpenFlags};
use std::ffi::OsString;
use std::io::Read;
use std::path::{Path, PathBuf};

/// The SQLite file header magic.
pub(super) const MAGIC: &[u8; 16] = b"SQLite format 3\0";

pub(super) fn file_len(path: &Path) -> Result<Option<u64>, JournalError> {
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

pub(super) fn side_file(path: &Path, suffix: &str) -> PathBuf {
    let mut s = OsString::from(path.as_os_str());
    s.push(suffix);
    PathBuf::from(s)
}

pub(super) fn be32(b: &[u8], at: usize) -> u32 {
    let mut w = [0u8; 4];
    if let Some(s) = b.get(at..at + 4) {
        w.copy_from_slice(s);
    }
    u32::from_be_bytes(w)
}

/// Checks an existing, non-empty file without writing to it; returns its schema version.
pub(super) fn inspect(path: &Path) -> Result<u32, JournalError> {
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
        check_tables_at(&conn, version).map_err(|e| prefix(path, e))?;
    }
    drop(conn);
    Ok(version)
}

/// A read-only connection that creates nothing next to the file. Without a WAL or rollback
/// journal beside it the file alone is the database, so it is opened `immutable` (no locks, no
/// `-shm`/`-wal` created, even for a WAL-mode file); otherwise SQLite needs those side files, and
/// they already exist.
pub(super) fn inspection_connection(path: &Path) -> Result<Connection, JournalError> {
    let flags = OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX;
    let no_side_files = ["-wal", "-shm", "-journal"]
        .iter()
        .all(|suffix| !side_file(path, suffix).exists());
    let conn = match path.to_str().filter(|_| no_side_files) {
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

/// Whether SQLite failed because it could not create or open a file: for a journal that
/// inspected healthy, a side file (`-wal`, `-shm`) in a folder this user cannot write.
fn cannot_create(e: &rusqlite::Error) -> bool {
    matches!(
        e.sqlite_error_code(),
        Some(rusqlite::ErrorCode::CannotOpen | rusqlite::ErrorCode::ReadOnly)
    )
}

/// Whether the file alone is the whole database: no WAL or rollback journal beside it holds
/// anything (an empty `-wal`, and the `-shm` index of one, are left by a reader that closed).
fn alone(path: &Path) -> bool {
    ["-wal", "-journal"]
        .iter()
        .all(|suffix| file_len(&side_file(path, suffix)).is_ok_and(|len| len.unwrap_or(0) == 0))
}

fn folder(path: &Path) -> String {
    path.parent()
        .filter(|p| !p.as_os_str().is_empty())
        .map_or_else(|| ".".to_owned(), |p| p.display().to_string())
}

/// When `e` is SQLite failing to create or write a file, the error that says so plainly (a
/// read-only journal file, or a folder this user cannot create the WAL's side files in);
/// otherwise `e` back.
pub(super) fn unwritable(path: &Path, e: rusqlite::Error) -> Result<JournalError, rusqlite::Error> {
    if !cannot_create(&e) {
        return Err(e);
    }
    let file_read_only = std::fs::metadata(path).is_ok_and(|m| m.permissions().readonly());
    Ok(JournalError::Io(if file_read_only {
        format!(
            "{}: the journal file is read-only ({e}): recording needs to write it; read it with a \
             read-only open (e.g. the `events` command), or make the file writable",
            path.display()
        )
    } else {
        format!(
            "{}: the folder {} is read-only for this user ({e}): recording needs to create the \
             journal's WAL side files (`-wal`, `-shm`) there; read it with a read-only open (e.g. \
             the `events` command), or use a journal in a writable folder",
            path.display(),
            folder(path)
        )
    }))
}

/// The read-only connection of [`super::SqliteJournal::open_read_only`]: the ordinary one, or,
/// when SQLite cannot create the WAL index next to a journal that stands alone (its folder is
/// read-only for this user), an `immutable` one that creates nothing.
pub(super) fn read_only_connection(path: &Path) -> Result<Connection, JournalError> {
    let flags = OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX;
    let conn = Connection::open_with_flags(path, flags).map_err(|e| opening(path, e))?;
    conn.busy_timeout(BUSY_TIMEOUT).map_err(sql)?;
    // SQLite opens lazily: the first read is what needs the side files.
    match conn.query_row("SELECT count(*) FROM sqlite_master", [], |r| {
        r.get::<_, i64>(0)
    }) {
        Ok(_) => Ok(conn),
        Err(e) if cannot_create(&e) => {
            drop(conn);
            if alone(path) {
                // Checked healthy by `inspect`, closed cleanly: the file is the whole database.
                return inspection_connection(path);
            }
            Err(JournalError::Io(format!(
                "{}: the folder {} is read-only for this user, and the journal's WAL was left \
                 beside it (its writer crashed or is still running), so it cannot be read without \
                 the WAL index SQLite must create there ({e}); the journal is not damaged: open it \
                 once where the folder is writable (which checkpoints the WAL), or copy the \
                 journal with its `-wal` file to a writable folder",
                path.display(),
                folder(path)
            )))
        }
        Err(e) => Err(opening(path, e)),
    }
}

/// A path as the path part of a `file:` URI.
pub(super) fn uri_path(path: &str) -> String {
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

pub(super) fn prefix(path: &Path, e: JournalError) -> JournalError {
    match e {
        JournalError::Corrupt(m) => JournalError::Corrupt(format!("{}: {m}", path.display())),
        JournalError::Io(m) => JournalError::Io(format!("{}: {m}", path.display())),
        other => other,
    }
}
