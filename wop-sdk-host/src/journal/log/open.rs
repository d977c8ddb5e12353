//! Opening a log journal: a new file's header, and an existing file read whole, its records
//! applied in order and its tail checked (`file.rs` says how damage and a torn write differ).

use super::file::{self, CHUNK, HEADER, Next, Tail};
use super::index::Index;
use super::ops::{self, Op};
use super::state::{Log, io};
use crate::journal::JournalError;
use crate::journal::memory::Records;
use std::fs::File;
use std::os::unix::fs::FileExt;
use std::path::Path;
use wop_sdk::host::RunId;

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
    let mut index = Index::default();
    let (mut at, mut next_seq) = (HEADER as usize, 0u64);
    while let Some((frame, payload)) = file::record_at(&bytes, at) {
        if frame.seq != next_seq {
            break;
        }
        apply(
            path,
            &mut records,
            &mut index,
            &frame,
            &bytes[payload],
            at as u64,
        )?;
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
    // Every run whose calls all ended is held cold: a host opening the file holds no node of it.
    for run in records.run_ids() {
        freeze(&mut records, &mut index, &run);
    }
    Ok(Log {
        records,
        index,
        end: at as u64,
        next_seq,
        len: bytes.len() as u64,
        framed: Vec::new(),
        broken: None,
    })
}

/// Applies the payload of record `frame` (at offset `at`) to `records`, unless its run is held
/// cold (`index` then only notes where it is).
pub(super) fn apply(
    path: &Path,
    records: &mut Records,
    index: &mut Index,
    frame: &file::Frame,
    payload: &[u8],
    at: u64,
) -> Result<(), JournalError> {
    let op = parse(path, frame, payload, at)?;
    if index.note(op.run(), at) {
        return Ok(());
    }
    apply_op(path, records, op, frame, at)
}

fn damaged(path: &Path, frame: &file::Frame, at: u64, m: &str) -> JournalError {
    JournalError::Corrupt(format!(
        "{}: record {} at offset {at}: {m}",
        path.display(),
        frame.seq
    ))
}

fn parse<'p>(
    path: &Path,
    frame: &file::Frame,
    payload: &'p [u8],
    at: u64,
) -> Result<Op<'p>, JournalError> {
    serde_json::from_slice(payload).map_err(|e| damaged(path, frame, at, &e.to_string()))
}

fn apply_op(
    path: &Path,
    records: &mut Records,
    op: Op<'_>,
    frame: &file::Frame,
    at: u64,
) -> Result<(), JournalError> {
    op.apply(records, ops::time(frame.at))
        .map_err(|m| damaged(path, frame, at, &m))
}

/// Reads a cold run back into `records` from its records at `offsets`.
pub(super) fn thaw(
    path: &Path,
    file: &File,
    records: &mut Records,
    offsets: &[u64],
) -> Result<(), JournalError> {
    for &at in offsets {
        let next = file::next_at(file, at).map_err(|e| io(path, "read", &e))?;
        let Next::Record(frame, payload) = next else {
            return Err(JournalError::Corrupt(format!(
                "{}: the record at offset {at}, read before, is not whole any more",
                path.display()
            )));
        };
        let op = parse(path, &frame, &payload, at)?;
        apply_op(path, records, op, &frame, at)?;
    }
    Ok(())
}

/// Drops `run` from `records` when none of its calls is unfinished, and holds it cold.
pub(super) fn freeze(records: &mut Records, index: &mut Index, run: &RunId) {
    if let Some(calls) = records.ended_calls(run.as_str()) {
        records.drop_run(run);
        index.freeze(run.as_str(), calls);
    }
}
