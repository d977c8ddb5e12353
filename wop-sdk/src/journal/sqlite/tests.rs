//! The SQLite journal's own tests: the shared suite, durability across reopen, refusals that
//! leave the file as it was, read-only, a full store, batches and concurrency.

use super::open::{side_file, user_version};
use super::*;
use crate::journal::suite::event;
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

/// A valid `provider.usage` payload.
fn usage(output_tokens: u64) -> Value {
    json!({"provider": "mock", "model": "m", "inputTokens": 1, "outputTokens": output_tokens})
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
            vec![event("provider.usage", usage(u64::from(i)))],
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
    super::super::suite::leases(&j).await;
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
            vec![event("provider.usage", usage(42))],
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
    let b = j.finish(&k1, &first, None, Vec::new());
    let again = j.finish(&k1, &second, None, Vec::new());
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
                    vec![event("provider.usage", usage(u64::from(i)))],
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
        let seqs: Vec<u64> = events.iter().map(|e| e.sequence).collect();
        assert_eq!(seqs, (0..8).collect::<Vec<u64>>());
    }
    eprintln!(
        "96 writes from 32 concurrent calls: {} commits in {elapsed:?}",
        j.commits() - commits
    );
    drop(j);
    cleanup(&path);
}

#[tokio::test]
async fn a_schema_1_journal_migrates_and_its_events_read_as_v2() {
    let path = temp_path("schema-1");
    std::fs::create_dir_all(path.parent().expect("parent")).expect("dir");
    {
        // A journal as the first build wrote it: `seq` from 1, v1 payloads, no timestamps.
        let c = Connection::open(&path).expect("plain open");
        c.execute_batch(super::open::SCHEMA_V1).expect("schema 1");
        c.pragma_update(None, "user_version", 1).expect("version");
        for (seq, kind, payload) in [
            (
                1,
                "node.started",
                r#"{"nodeId":"main","typeId":"community.demo.x"}"#,
            ),
            (
                2,
                "envelope.retry.exhausted",
                r#"{"nodeId":"main","totalAttempts":2,"finalReason":"provider-error"}"#,
            ),
            (
                3,
                "node.failed",
                r#"{"nodeId":"main","error":{"error":"upstream_unavailable","message":"m"}}"#,
            ),
        ] {
            c.execute(
                "INSERT INTO events (run_id, seq, kind, payload) VALUES ('run-1', ?1, ?2, ?3)",
                rusqlite::params![seq, kind, payload],
            )
            .expect("row");
        }
    }
    let j = SqliteJournal::open(&path).expect("migrates");
    let events = j.events(&RunId::new("run-1")).await.expect("events");
    let seqs: Vec<u64> = events.iter().map(|e| e.sequence).collect();
    assert_eq!(seqs, [0, 1, 2]);
    assert!(events.iter().all(|e| e.timestamp == UNKNOWN_TIME));
    assert_eq!(events[1].kind(), "envelope.retry-exhausted");
    assert_eq!(
        events[1].payload()["finalReason"],
        crate::wire::PROVIDER_FAILURE_REASON
    );
    assert_eq!(
        events[2].payload()["error"],
        json!({"code": "upstream_unavailable", "message": "m"})
    );
    // A new event continues the log, with its time.
    assert_eq!(
        j.append_event(
            &RunId::new("run-1"),
            event(
                "node.started",
                json!({"nodeId": "again", "typeId": "community.demo.x"})
            )
        )
        .await,
        Ok(3)
    );
    let events = j.events(&RunId::new("run-1")).await.expect("events");
    assert_ne!(events[3].timestamp, UNKNOWN_TIME);
    drop(j);
    let c = Connection::open(&path).expect("plain open");
    assert_eq!(user_version(&c), Ok(SCHEMA_VERSION));
    drop(c);
    cleanup(&path);
}
