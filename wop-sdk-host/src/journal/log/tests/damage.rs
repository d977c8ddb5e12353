//! A torn write, damage, a foreign or newer file, and a record that does not fit.

use super::*;
use crate::journal::log::file::HEADER;
use crate::journal::log::ops::Op;
use std::os::unix::fs::FileExt;

#[tokio::test]
async fn a_torn_write_at_the_end_is_zeroed_and_writing_goes_on_after_it() {
    let path = temp_path("torn");
    let j = LogJournal::open(&path).expect("open");
    write_some(&j).await;
    let end = j.shared.log().end;
    drop(j);
    // A crash halfway through a record: its frame and part of its payload.
    let file = OpenOptions::new().write(true).open(&path).expect("file");
    let mut torn = Vec::new();
    file::frame(&mut torn, 99, 0, 0, br#"{"run":{"record":{"runId":"lost"#);
    torn.truncate(torn.len() - 5);
    file.write_all_at(&torn, end).expect("tear");
    drop(file);
    let j = LogJournal::open(&path).expect("a torn write is not damage");
    check_some(&j, 2).await;
    let mut rest = vec![0u8; 64];
    j.shared.file.read_at(&mut rest, end).expect("read");
    assert!(rest.iter().all(|b| *b == 0), "the torn bytes are zeroed");
    let fp = Fingerprint([1; 32]);
    assert_eq!(j.begin(&key("r3", 0), &fp, "c").await, Ok(Begin::Fresh));
    drop(j);
    let j = LogJournal::open(&path).expect("reopen");
    assert!(j.lookup(&key("r3", 0)).await.expect("lookup").is_some());
    check_some(&j, 3).await;
    drop(j);
    cleanup(&path);
}

#[tokio::test]
async fn damage_in_durable_records_is_refused_and_the_file_left_as_it_was() {
    let path = temp_path("damaged");
    let j = LogJournal::open(&path).expect("open");
    write_some(&j).await;
    drop(j);
    // A record written after the others were synced (its durable end says so) stays whole;
    // one of the others is damaged.
    let j = LogJournal::open(&path).expect("open");
    let fp = Fingerprint([2; 32]);
    assert_eq!(j.begin(&key("r4", 0), &fp, "d").await, Ok(Begin::Fresh));
    drop(j);
    let mut bytes = std::fs::read(&path).expect("read");
    bytes[HEADER as usize + file::FRAME + 3] ^= 0x01;
    std::fs::write(&path, &bytes).expect("damage");
    match LogJournal::open(&path) {
        Err(JournalError::Corrupt(m)) => {
            assert!(m.contains("record 0 at offset 64 is damaged"), "{m}");
        }
        other => panic!("a damaged log must be refused: {other:?}"),
    }
    assert_eq!(std::fs::read(&path).expect("read"), bytes, "left as it was");
    assert!(matches!(
        LogJournal::open_read_only(&path),
        Err(JournalError::Corrupt(_))
    ));
    cleanup(&path);
}

#[test]
fn a_foreign_or_newer_file_is_refused_untouched() {
    let path = temp_path("foreign");
    std::fs::create_dir_all(path.parent().expect("dir")).expect("dir");
    let foreign = b"SQLite format 3\0".repeat(8);
    std::fs::write(&path, &foreign).expect("write");
    assert!(
        matches!(LogJournal::open(&path), Err(JournalError::Corrupt(m)) if m.contains("not a wop-sdk log journal"))
    );
    assert_eq!(std::fs::read(&path).expect("read"), foreign);
    let mut newer = file::header().to_vec();
    newer[8] = 2;
    std::fs::write(&path, &newer).expect("write");
    assert_eq!(
        LogJournal::open(&path).map(|_| ()),
        Err(JournalError::NewerSchema {
            found: 2,
            supported: file::FORMAT
        })
    );
    assert_eq!(std::fs::read(&path).expect("read"), newer);
    cleanup(&path);
}

#[tokio::test]
async fn a_whole_record_that_does_not_fit_the_ones_before_it_is_damage() {
    let path = temp_path("twice");
    let j = LogJournal::open(&path).expect("open");
    let fp = Fingerprint([3; 32]);
    assert_eq!(j.begin(&key("r5", 0), &fp, "e").await, Ok(Begin::Fresh));
    let end = j.shared.log().end;
    drop(j);
    // The same identity again, as record 1: no journal writes that.
    let again = key("r5", 0);
    let op = Op::Begin {
        key: ops::Key::of(&again),
        fingerprint: fp.to_hex(),
        attempt: "e".into(),
        requests: 0,
        max_tokens: None,
        lease: None,
    };
    let mut rec = Vec::new();
    file::frame(&mut rec, 1, 0, 0, &serde_json::to_vec(&op).expect("json"));
    let file = OpenOptions::new().write(true).open(&path).expect("file");
    file.write_all_at(&rec, end).expect("write");
    drop(file);
    match LogJournal::open(&path) {
        Err(JournalError::Corrupt(m)) => assert!(m.contains("recorded twice"), "{m}"),
        other => panic!("must be refused: {other:?}"),
    }
    cleanup(&path);
}
