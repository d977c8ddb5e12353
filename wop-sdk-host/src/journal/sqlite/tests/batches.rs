//! Group commit: a failing command fails alone in its batch; concurrent calls are all kept;
//! a schema-1 journal migrates; a long log is numbered in order.

use super::*;
use std::time::Duration;

#[tokio::test]
async fn a_failing_command_fails_alone_in_its_batch() {
    let path = temp_path("batch");
    let j = Arc::new(SqliteJournal::open(&path).expect("open"));
    let commits = j.commits();
    // Another thread holds the writer, so the next commands queue up; it runs them as one batch
    // when its own command is done.
    let holder = {
        let j = Arc::clone(&j);
        std::thread::spawn(move || {
            j.submit(Durability::Read, |_| {
                std::thread::sleep(Duration::from_millis(300));
                Ok(())
            })
        })
    };
    std::thread::sleep(Duration::from_millis(100));
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
    let b = j.finish(&k1, first, None, Vec::new());
    let again = j.finish(&k1, second, None, Vec::new());
    let hold = holder.join().expect("the holder's thread");
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
                    node_id: format!("node-{i}").into(),
                    call_index: i,
                };
                let (fp, id) = (Fingerprint([i as u8; 32]), format!("a-{i}"));
                assert_eq!(j.begin(&k, &fp, &id).await, Ok(Begin::Fresh));
                j.record_request(&k, 1, 128).await.expect("request");
                j.finish(
                    &k,
                    Outcome::Completed {
                        result: format!("{{\"i\":{i}}}"),
                    },
                    Some(charge()),
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

/// Under load (16 writers, their writes grouped into batches): every durable write is answered
/// after a sync that began after its commit, every commit is synced, and another connection sees
/// each write by the time it is answered.
#[test]
fn durable_writes_are_answered_after_their_sync_under_load() {
    let path = temp_path("sync-under-load");
    let j = Arc::new(SqliteJournal::open(&path).expect("open"));
    let threads: Vec<_> = (0..16u32)
        .map(|t| {
            let (j, path) = (Arc::clone(&j), path.clone());
            std::thread::spawn(move || {
                let other =
                    Connection::open_with_flags(&path, rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY)
                        .expect("a second connection");
                for i in 0..25u32 {
                    let k = key(&format!("run-{t}"), i);
                    let synced_before = j.core.shared.syncs.load(Ordering::SeqCst);
                    let begun = block_on(j.begin_first_request(&k, &Fingerprint([1; 32]), "a", 64));
                    assert_eq!(begun, Ok(Begin::Fresh));
                    assert!(
                        j.core.shared.syncs.load(Ordering::SeqCst) > synced_before,
                        "answered before a sync"
                    );
                    let seen: i64 = other
                        .query_row(
                            "SELECT COUNT(*) FROM calls WHERE run_id = ?1 AND call_index = ?2",
                            rusqlite::params![k.run_id.as_str(), i],
                            |r| r.get(0),
                        )
                        .expect("read");
                    assert_eq!(seen, 1, "committed when answered");
                }
            })
        })
        .collect();
    for t in threads {
        t.join().expect("a writer thread");
    }
    let (commits, syncs) = (j.commits(), j.core.shared.syncs.load(Ordering::SeqCst));
    assert_eq!(commits, syncs, "every commit synced");
    assert!(commits < 400, "grouped: {commits} commits for 400 writes");
    drop(j);
    let j = SqliteJournal::open(&path).expect("reopen");
    let rt = tokio::runtime::Builder::new_current_thread()
        .build()
        .expect("rt");
    assert_eq!(rt.block_on(j.call_count()), Ok(400));
    drop(j);
    cleanup(&path);
}

/// Waits for a journal future on this (non-async) thread.
fn block_on<T>(f: impl std::future::Future<Output = T>) -> T {
    tokio::runtime::Builder::new_current_thread()
        .build()
        .expect("rt")
        .block_on(f)
}

#[tokio::test]
async fn a_schema_1_journal_migrates_and_its_events_read_as_v2() {
    let path = temp_path("schema-1");
    std::fs::create_dir_all(path.parent().expect("parent")).expect("dir");
    {
        // A journal as the first build wrote it: `seq` from 1, v1 payloads, no timestamps.
        let c = Connection::open(&path).expect("plain open");
        c.execute_batch(super::schema::SCHEMA_V1).expect("schema 1");
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
        wop_sdk::wire::PROVIDER_FAILURE_REASON
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

/// An event's position is its run's count of events before it, whatever the log's length and
/// the other runs' events between its own, and after the journal is opened again.
#[tokio::test]
async fn a_long_log_numbers_its_events_in_order_beside_other_runs_and_after_a_reopen() {
    let path = temp_path("long-log");
    let (long, short) = (RunId::new("local/long"), RunId::new("local/short"));
    let started = || {
        event(
            "node.started",
            json!({"nodeId": "main", "typeId": "community.demo.x"}),
        )
    };
    {
        let j = SqliteJournal::open(&path).expect("open");
        for i in 0..300u64 {
            assert_eq!(j.append_event(&long, started()).await, Ok(i));
            if i % 60 == 0 {
                assert_eq!(j.append_event(&short, started()).await, Ok(i / 60));
            }
        }
    }
    let j = SqliteJournal::open(&path).expect("opens again");
    assert_eq!(j.append_event(&long, started()).await, Ok(300));
    assert_eq!(j.append_event(&short, started()).await, Ok(5));
    let events = j.events(&long).await.expect("events");
    assert_eq!(events.len(), 301);
    assert!(
        events
            .iter()
            .enumerate()
            .all(|(i, e)| e.sequence == i as u64)
    );
    drop(j);
    cleanup(&path);
}

#[tokio::test]
async fn a_schema_2_journal_migrates_its_leases_and_charges_into_the_calls() {
    let path = temp_path("schema-2");
    std::fs::create_dir_all(path.parent().expect("parent")).expect("dir");
    let lease = r#"{"holder":"h-1","pid":1,"boot":"","heartbeatMs":5}"#;
    {
        // A journal as version 2 wrote it: leases in their own table.
        let c = Connection::open(&path).expect("plain open");
        c.execute_batch(super::schema::SCHEMA_V1).expect("schema 1");
        c.execute_batch(super::schema::SCHEMA_V2).expect("schema 2");
        c.execute_batch(
            "CREATE TABLE leases (run_id TEXT NOT NULL, node_id TEXT NOT NULL, \
             call_index INTEGER NOT NULL, lease TEXT NOT NULL, \
             PRIMARY KEY (run_id, node_id, call_index));",
        )
        .expect("leases");
        c.pragma_update(None, "user_version", 2).expect("version");
        for (index, outcome) in [
            (0, None),
            (1, Some(r#"{"kind":"completed","result":"{}"}"#)),
        ] {
            c.execute(
                "INSERT INTO calls (run_id, node_id, call_index, attempt_id, fingerprint, \
                 requests, outcome) VALUES ('r1', 'n1', ?1, 'a', ?2, 1, ?3)",
                rusqlite::params![index, Fingerprint([1; 32]).to_hex(), outcome],
            )
            .expect("call");
            c.execute(
                "INSERT INTO leases VALUES ('r1', 'n1', ?1, ?2)",
                rusqlite::params![index, lease],
            )
            .expect("lease");
        }
        c.execute(
            "INSERT INTO charges VALUES ('r1', 'n1', 1, '[\"ana\"]', 1, 7)",
            [],
        )
        .expect("charge");
    }
    let j = SqliteJournal::open(&path).expect("migrates");
    let held = j.leased(&key("r1", 0)).await.expect("read");
    assert_eq!(
        held.map(|l| l.pid),
        Some(1),
        "the unfinished call keeps its lease"
    );
    assert_eq!(
        j.leased(&key("r1", 1)).await,
        Ok(None),
        "a finished call has none"
    );
    drop(j);
    let c = Connection::open(&path).expect("plain open");
    assert_eq!(user_version(&c), Ok(SCHEMA_VERSION));
    drop(c);
    cleanup(&path);
}
