//! Opening a log journal: a new file's header, and an existing file read whole, its records
//! applied in order and its tail checked (`file.rs` says how damage and a torn write differ).

use super::file::{self, CHUNK, HEADER, Tail};
use super::ops::{self, Op};
use super::{Log, io};
use crate::journal::JournalError;
use crate::journal::memory::Records;
use std::fs::File;
use std::os::unix::fs::FileExt;
use std::path::Path;

/// Writes a new file's header, and makes the file and its name durable.
pub(super) fn create(path: &Path, file: &File) -> Result<(), JournalError> {
    file.write_all_at(&file::header(), 0)
        .and_then(|()| file::grow(file, HEADER, CHUNK))
        .and_then(|()| file.sync_all())
        .map_err(|e| io(path, "cannot write the journal's header", &e))?;
    if let Some(parent) = path.parent() {
        let dir = if parent.as_os_str().is_empty() {
            Path::new(".")
        } else {
            parent
        };
        if let Ok(d) = File::open(dir) {
            let _ = d.sync_all();
        }
    }
    Ok(())
}

/// Reads the whole file (its lock held): every record applied, the tail checked and, when
/// `repair`, a torn write zeroed.
pub(super) fn read(path: &Path, file: &File, repair: bool) -> Result<Log, JournalError> {
    let mut bytes = Vec::new();
    {
        use std::io::Read;
        let mut reader = file;
        reader
            .read_to_end(&mut bytes)
            .map_err(|e| io(path, "cannot read it", &e))?;
    }
    file::check_header(path, &bytes)?;
    let mut records = Records::default();
    let (mut at, mut next_seq) = (HEADER as usize, 0u64);
    while let Some((frame, payload)) = file::record_at(&bytes, at) {
        if frame.seq != next_seq {
            break;
        }
        apply(path, &mut records, &frame, &bytes[payload], at as u64)?;
        at += frame.span() as usize;
        next_seq += 1;
    }
    match file::tail(&bytes, at) {
        Tail::Clean => {}
        Tail::Torn if repair => {
            tracing::warn!(path = %path.display(), at, "the log journal ends in a torn write: zeroed");
            file::zero_from(file, at as u64)
                .map_err(|e| io(path, "cannot zero a torn write", &e))?;
        }
        Tail::Torn => {}
        Tail::Damaged { found, durable } => {
            return Err(JournalError::Corrupt(format!(
                "{}: record {next_seq} at offset {at} is damaged: the whole record at offset \
                 {found} says the file was durable up to offset {durable}",
                path.display()
            )));
        }
    }
    if repair {
        // What was read is on the disk from here on (a record's durable end says so).
        file.sync_data().map_err(|e| io(path, "fdatasync", &e))?;
    }
    Ok(Log {
        records,
        end: at as u64,
        next_seq,
        len: bytes.len() as u64,
        framed: Vec::new(),
        broken: None,
    })
}

/// Applies the payload of record `frame` (at offset `at`) to `records`.
pub(super) fn apply(
    path: &Path,
    records: &mut Records,
    frame: &file::Frame,
    payload: &[u8],
    at: u64,
) -> Result<(), JournalError> {
    let damaged = |m: String| {
        JournalError::Corrupt(format!(
            "{}: record {} at offset {at}: {m}",
            path.display(),
            frame.seq
        ))
    };
    let op: Op<'_> = serde_json::from_slice(payload).map_err(|e| damaged(e.to_string()))?;
    op.apply(records, ops::time(frame.at)).map_err(damaged)
}
