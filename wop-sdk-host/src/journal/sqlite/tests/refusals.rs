//! Files the journal refuses and leaves as they were: newer, truncated, garbage, foreign;
//! read-only and full stores.

use super::*;

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

/// A damaged schema can name a column with bytes that are not UTF-8 (rusqlite's `column_names`
/// panics on those: found by `arbitrary.rs`).
#[tokio::test]
async fn a_column_named_in_bytes_that_are_not_utf8_is_refused_not_panicked_on() {
    let path = temp_path("non-utf8-column");
    journal_with(&path, 2).await;
    let live: String = rusqlite::Connection::open(&path)
        .and_then(|c| {
            c.query_row(
                "SELECT sql FROM sqlite_schema WHERE name = 'calls'",
                [],
                |r| r.get(0),
            )
        })
        .expect("the schema of calls");
    let mut bytes = std::fs::read(&path).expect("read");
    // The live text of `calls` (page 1 may also hold older, freed copies of it).
    let table = bytes
        .windows(live.len())
        .position(|w| w == live.as_bytes())
        .expect("the schema's text is in the file");
    let at = table + live.find("attempt_id").expect("the column");
    bytes[at] |= 0x80; // `a` becomes 0xE1, a lead byte with no continuation
    std::fs::write(&path, &bytes).expect("write");
    let before = digest(&path);
    let err = refused(&path);
    assert!(
        matches!(&err, JournalError::Corrupt(m) if m.contains("table calls has no column attempt_id")),
        "{err}"
    );
    assert!(matches!(
        SqliteJournal::open_read_only(&path),
        Err(JournalError::Corrupt(_))
    ));
    assert_eq!(digest(&path), before, "the file was modified");
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
        j.append_event(&RunId::new("r1"), event("x.y", json!({})))
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
    j.submit(Durability::Durable, |c| {
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
