//! The log's file format: a header, then records, each framed and checksummed, then zeros.
//!
//! ```text
//! header (64 bytes)  "WOPJLOG\n" | format u32 LE | zeros
//! record             "WREC" | payload length u32 | sequence u64 | durable end u64 |
//!                    time u64 | CRC-32 u32 | 0 u32 | payload (JSON, `ops.rs`) |
//!                    zeros to a multiple of 8
//! ```
//!
//! Records follow one another from offset 64, numbered from 0 without a gap; the CRC covers the
//! frame's fields after the magic and the payload. The *durable end* is how far the writer knew
//! the file to be on the disk when it wrote the record (an `fdatasync` had returned after every
//! byte before it). Everything after the last record is zero: the file grows in steps of
//! [`CHUNK`] of zeros written out (so that a record's sync writes its data and nothing of the
//! file system's: no new length, no block to allocate), and a torn write is zeroed before
//! anything is written after it.
//!
//! Reading stops at the first position that is not a whole record with the next number. What
//! follows is then either a torn write (a crash during a write no one was told was durable), or
//! damage. The durable ends tell them apart: when a whole record further on says the file was
//! durable beyond the stop, the stop is in bytes that were on the disk, and the file is damaged.
//! (Damage to the very last records, with nothing whole after them, looks like a torn write.)

use crate::journal::JournalError;
use std::fs::File;
use std::ops::Range;
use std::os::unix::fs::FileExt;
use std::path::Path;

/// The file's first bytes.
pub(super) const MAGIC: &[u8; 8] = b"WOPJLOG\n";
/// The format this build writes and reads.
pub(super) const FORMAT: u32 = 1;
/// The header's length: the first record's offset.
pub(super) const HEADER: u64 = 64;
/// A record's first bytes.
const RECORD: &[u8; 4] = b"WREC";
/// A record's frame, before its payload.
pub(super) const FRAME: usize = 40;
/// The step the file grows by.
pub(super) const CHUNK: u64 = 4 << 20;
/// The longest payload read back: a longer length is damage, not a record.
const MAX_PAYLOAD: u32 = 1 << 30;

/// A record's frame, as read.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Frame {
    pub(super) seq: u64,
    /// How far the file was durable when the record was written.
    pub(super) durable: u64,
    /// When it was written: nanoseconds since the Unix epoch (an event's time).
    pub(super) at: u64,
    pub(super) len: u32,
}

impl Frame {
    /// The record's length in the file, frame and padding included.
    pub(super) fn span(&self) -> u64 {
        (FRAME as u64 + u64::from(self.len)).next_multiple_of(8)
    }
}

/// The header of a new log.
pub(super) fn header() -> [u8; HEADER as usize] {
    let mut h = [0u8; HEADER as usize];
    h[..8].copy_from_slice(MAGIC);
    h[8..12].copy_from_slice(&FORMAT.to_le_bytes());
    h
}

/// Checks a file's header: a foreign file is [`JournalError::Corrupt`], a newer format
/// [`JournalError::NewerSchema`].
pub(super) fn check_header(path: &Path, bytes: &[u8]) -> Result<(), JournalError> {
    if bytes.len() < HEADER as usize || &bytes[..8] != MAGIC {
        return Err(JournalError::Corrupt(format!(
            "{}: not a wop-sdk log journal (its first bytes are not `WOPJLOG`)",
            path.display()
        )));
    }
    let mut format = [0u8; 4];
    format.copy_from_slice(&bytes[8..12]);
    match u32::from_le_bytes(format) {
        FORMAT => Ok(()),
        found if found > FORMAT => Err(JournalError::NewerSchema {
            found,
            supported: FORMAT,
        }),
        found => Err(JournalError::Corrupt(format!(
            "{}: log format {found} is not one this build reads",
            path.display()
        ))),
    }
}

fn u32_at(b: &[u8], at: usize) -> u32 {
    let mut v = [0u8; 4];
    v.copy_from_slice(&b[at..at + 4]);
    u32::from_le_bytes(v)
}

fn u64_at(b: &[u8], at: usize) -> u64 {
    let mut v = [0u8; 8];
    v.copy_from_slice(&b[at..at + 8]);
    u64::from_le_bytes(v)
}

/// Appends record `seq`, written `at`, with `payload` to `out`, framed and padded.
pub(super) fn frame(out: &mut Vec<u8>, seq: u64, durable: u64, at: u64, payload: &[u8]) {
    let start = out.len();
    let len = u32::try_from(payload.len()).unwrap_or(u32::MAX);
    out.extend_from_slice(RECORD);
    out.extend_from_slice(&len.to_le_bytes());
    out.extend_from_slice(&seq.to_le_bytes());
    out.extend_from_slice(&durable.to_le_bytes());
    out.extend_from_slice(&at.to_le_bytes());
    let mut crc = crc32fast::Hasher::new();
    crc.update(&out[start + 4..start + 32]);
    crc.update(payload);
    out.extend_from_slice(&crc.finalize().to_le_bytes());
    out.extend_from_slice(&[0; 4]);
    out.extend_from_slice(payload);
    out.resize(start + (FRAME + payload.len()).next_multiple_of(8), 0);
}

/// The frame at the start of `bytes`, when it is one (its payload not checked yet).
pub(super) fn parse_frame(bytes: &[u8]) -> Option<Frame> {
    if bytes.len() < FRAME || &bytes[..4] != RECORD {
        return None;
    }
    let len = u32_at(bytes, 4);
    (len <= MAX_PAYLOAD).then(|| Frame {
        seq: u64_at(bytes, 8),
        durable: u64_at(bytes, 16),
        at: u64_at(bytes, 24),
        len,
    })
}

/// Whether `payload` is the one `frame` (read from `frame_bytes`) checksums.
pub(super) fn intact(frame_bytes: &[u8], payload: &[u8]) -> bool {
    let mut crc = crc32fast::Hasher::new();
    crc.update(&frame_bytes[4..32]);
    crc.update(payload);
    crc.finalize() == u32_at(frame_bytes, 32)
}

/// The whole record at `at` of `buf` (any number): its frame and its payload's range.
pub(super) fn record_at(buf: &[u8], at: usize) -> Option<(Frame, Range<usize>)> {
    let frame = parse_frame(buf.get(at..)?)?;
    let payload = at + FRAME..at + FRAME + frame.len as usize;
    let bytes = buf.get(payload.clone())?;
    intact(&buf[at..at + FRAME], bytes).then_some((frame, payload))
}

/// What follows the last record.
#[derive(Debug, PartialEq, Eq)]
pub(super) enum Tail {
    /// Zeros.
    Clean,
    /// Bytes of a write that did not finish: to be zeroed.
    Torn,
    /// A whole record at `found` says the file was durable up to `durable`, beyond the stop.
    Damaged { found: u64, durable: u64 },
}

/// What follows the last record, which ends at `end`, in `buf` (the whole file).
pub(super) fn tail(buf: &[u8], end: usize) -> Tail {
    let Some(rest) = buf.get(end..) else {
        return Tail::Clean;
    };
    if rest.iter().all(|b| *b == 0) {
        return Tail::Clean;
    }
    let found = (end..buf.len())
        .step_by(8)
        .filter_map(|at| record_at(buf, at).map(|(f, _)| (at, f)))
        .find(|(_, f)| f.durable > end as u64);
    match found {
        Some((at, f)) => Tail::Damaged {
            found: at as u64,
            durable: f.durable,
        },
        None => Tail::Torn,
    }
}

/// Zeros the file from `from` to its end (a torn write), and makes that durable.
pub(super) fn zero_from(file: &File, from: u64) -> std::io::Result<()> {
    let len = file.metadata()?.len();
    write_zeros(file, from, len)?;
    file.sync_data()
}

/// Grows the file from `from` to `to` bytes with zeros written out, not a hole, and makes that
/// durable: the blocks are allocated now, so that a record's sync later writes its data and
/// nothing of the file system's (BENCHMARKS.md §13: a log written into holes syncs slower).
pub(super) fn grow(file: &File, from: u64, to: u64) -> std::io::Result<()> {
    write_zeros(file, from, to)?;
    file.sync_data()
}

fn write_zeros(file: &File, from: u64, to: u64) -> std::io::Result<()> {
    let zeros = vec![0u8; 256 << 10];
    let mut at = from;
    while at < to {
        let n = (to - at).min(zeros.len() as u64) as usize;
        file.write_all_at(&zeros[..n], at)?;
        at += n as u64;
    }
    Ok(())
}

/// What the file holds at `at`, read with `pread`.
pub(super) enum Next {
    /// A whole record: its frame and payload.
    Record(Frame, Vec<u8>),
    /// Zeros: nothing was written there.
    End,
    /// Something that is not a whole record.
    Torn,
}

/// Reads what the file holds at `at` (another process may have written there).
pub(super) fn next_at(file: &File, at: u64) -> std::io::Result<Next> {
    let mut frame_bytes = [0u8; FRAME];
    let n = read_up_to(file, &mut frame_bytes, at)?;
    if frame_bytes.iter().all(|b| *b == 0) {
        return Ok(Next::End);
    }
    let Some(frame) = parse_frame(&frame_bytes[..n]) else {
        return Ok(Next::Torn);
    };
    let mut payload = vec![0u8; frame.len as usize];
    let got = read_up_to(file, &mut payload, at + FRAME as u64)?;
    if got < payload.len() || !intact(&frame_bytes, &payload) {
        return Ok(Next::Torn);
    }
    Ok(Next::Record(frame, payload))
}

/// `pread` until `buf` is full or the file ends; how much was read.
fn read_up_to(file: &File, buf: &mut [u8], at: u64) -> std::io::Result<usize> {
    let mut done = 0;
    while done < buf.len() {
        match file.read_at(&mut buf[done..], at + done as u64) {
            Ok(0) => break,
            Ok(n) => done += n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(done)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn log(records: &[(&[u8], u64)]) -> (Vec<u8>, Vec<usize>) {
        let mut buf = header().to_vec();
        let mut starts = Vec::new();
        for (seq, (payload, durable)) in records.iter().enumerate() {
            starts.push(buf.len());
            frame(&mut buf, seq as u64, *durable, 7, payload);
        }
        (buf, starts)
    }

    #[test]
    fn records_read_back_whole_and_a_flipped_bit_is_not_a_record() {
        let (mut buf, starts) = log(&[(b"{\"a\":1}", 64), (b"{\"bb\":2}", 64)]);
        let (first, _) = record_at(&buf, starts[0]).expect("the first record");
        assert_eq!(starts[1] as u64, starts[0] as u64 + first.span());
        assert_eq!(first.span() % 8, 0);
        let (f, range) = record_at(&buf, starts[1]).expect("the second record");
        assert_eq!((f.seq, f.len), (1, 8));
        assert_eq!(&buf[range], b"{\"bb\":2}");
        buf[starts[1] + FRAME + 2] ^= 1;
        assert!(record_at(&buf, starts[1]).is_none());
    }

    #[test]
    fn a_torn_tail_and_damage_are_told_apart_by_the_durable_end() {
        let (mut buf, _) = log(&[(b"{}", 64), (b"{\"x\":1}", 64), (b"{\"y\":2}", 0)]);
        let end = buf.len();
        buf.resize(end + 256, 0);
        assert_eq!(tail(&buf, end), Tail::Clean);
        // A write cut short after the last record: torn.
        buf[end..end + 12].copy_from_slice(b"WREC\x09\0\0\0\x03\0\0\0");
        assert_eq!(tail(&buf, end), Tail::Torn);
        // The second record damaged, and the third says the file was durable past it.
        let (mut buf, starts2) = log(&[(b"{}", 64), (b"{\"x\":1}", 64), (b"{\"y\":2}", 200)]);
        buf[starts2[1] + FRAME] ^= 0x20;
        let stop = starts2[1];
        assert_eq!(
            tail(&buf, stop),
            Tail::Damaged {
                found: starts2[2] as u64,
                durable: 200
            }
        );
    }

    #[test]
    fn a_foreign_or_newer_header_is_refused() {
        let p = Path::new("j.log");
        assert!(check_header(p, &header()).is_ok());
        assert!(matches!(
            check_header(p, b"SQLite format 3\0 and more bytes to make sixty-four bytes long....."),
            Err(JournalError::Corrupt(m)) if m.contains("not a wop-sdk log journal")
        ));
        let mut newer = header();
        newer[8] = 9;
        assert_eq!(
            check_header(p, &newer),
            Err(JournalError::NewerSchema {
                found: 9,
                supported: FORMAT
            })
        );
    }
}
