//! The SQLite journal's own tests: the shared suite and durability across reopen here; refusals
//! that leave the file as it was ([`refusals`]); arbitrary damage ([`arbitrary`]); batches,
//! concurrency and migration ([`batches`]).

use super::open::side_file;
use super::schema::user_version;
use super::*;
use crate::journal::suite::event;
pub(super) use crate::journal::{Begin, Charge, Fingerprint, Journal, Outcome, RunMeta, RunRecord};
use serde_json::{Value, json};
use sha2::{Digest, Sha256};
use std::sync::atomic::AtomicUsize;
pub(super) use wop_sdk::host::{AttemptKey, RunId};

mod arbitrary;
mod batches;
mod deferred;
mod refusals;

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
        beneficiaries: vec!["u1".into(), "u2".into()].into(),
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
            Outcome::Completed {
                result: format!("{{\"content\":\"{}\"}}", "x".repeat(200)),
            },
            Some(charge()),
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

/// SQLite does not sync at a commit (`synchronous = NORMAL`); the writer syncs the WAL after every
/// commit, checkpoints included (a checkpoint restarts the WAL, whose file the writer keeps open).
#[tokio::test]
async fn every_commit_is_followed_by_a_sync_of_the_wal() {
    let path = temp_path("wal-sync");
    let j = SqliteJournal::open(&path).expect("open");
    let level: i64 = j
        .submit(Durability::Read, |c| {
            c.query_row("PRAGMA synchronous", [], |r| r.get(0))
                .map_err(errors::sql)
        })
        .await
        .expect("synchronous");
    assert_eq!(level, 1, "NORMAL: the writer syncs");
    let (commits, syncs) = (j.commits(), j.core.shared.syncs.load(Ordering::Relaxed));
    let fp = Fingerprint([1; 32]);
    for i in 0..40 {
        assert_eq!(
            j.begin_first_request(&key("r1", i), &fp, "a", 64).await,
            Ok(Begin::Fresh)
        );
        if i % 10 == 9 {
            let (busy, _, _): (i64, i64, i64) = j
                .submit(Durability::Read, |c| {
                    c.query_row("PRAGMA wal_checkpoint(RESTART)", [], |r| {
                        Ok((r.get(0)?, r.get(1)?, r.get(2)?))
                    })
                    .map_err(errors::sql)
                })
                .await
                .expect("checkpoint");
            assert_eq!(busy, 0, "the checkpoint ran");
        }
    }
    let made = j.commits() - commits;
    assert_eq!(made, 40, "one commit per durable write");
    assert_eq!(j.core.shared.syncs.load(Ordering::Relaxed) - syncs, made);
    drop(j);
    let j = SqliteJournal::open(&path).expect("reopen");
    assert_eq!(j.call_count().await, Ok(40));
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
        j.begin_run(RunRecord {
            run_id: RunId::new("r1"),
            owner: "o".into(),
            replay_of: None,
            meta: RunMeta {
                node_id: "x".into(),
                ..RunMeta::default()
            },
        })
        .await
        .expect("run");
        j.begin(&k, &Fingerprint([1; 32]), "a-1")
            .await
            .expect("begin");
        j.finish(
            &k,
            outcome.clone(),
            Some(charge()),
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

/// A run's metadata is stored as the object `{"nodeId", "typeId", "input"}`, and one a journal
/// wrote before `RunMeta` (other keys, or keys missing) reads back with the defaults.
#[tokio::test]
async fn run_metadata_is_three_keys_and_older_forms_read_with_their_defaults() {
    let path = temp_path("run-meta");
    {
        let j = SqliteJournal::open(&path).expect("open");
        let meta = RunMeta {
            node_id: "n1".into(),
            type_id: "c.x".into(),
            input: json!({"a": 1}),
        };
        j.begin_run(RunRecord {
            run_id: RunId::new("r1"),
            owner: "o".into(),
            replay_of: None,
            meta,
        })
        .await
        .expect("run");
    }
    let c = Connection::open(&path).expect("plain open");
    let stored: String = c
        .query_row("SELECT meta FROM runs WHERE run_id = 'r1'", [], |r| {
            r.get(0)
        })
        .expect("meta");
    let stored: Value = serde_json::from_str(&stored).expect("json");
    assert_eq!(
        stored,
        json!({"nodeId": "n1", "typeId": "c.x", "input": {"a": 1}})
    );
    c.execute_batch(
        "INSERT INTO runs (run_id, owner, replay_of, meta) VALUES \
         ('old', 'o', NULL, '{\"nodeId\": \"draft-1\", \"script\": [\"x\"]}'), \
         ('bare', 'o', NULL, '{}')",
    )
    .expect("older rows");
    drop(c);
    let j = SqliteJournal::open(&path).expect("reopen");
    let read = |id: &str| {
        let j = &j;
        let id = RunId::new(id);
        async move { j.run(&id).await.expect("read").expect("recorded").meta }
    };
    let old = read("old").await;
    assert_eq!(
        (&*old.node_id, &*old.type_id, &old.input),
        ("draft-1", "", &json!({}))
    );
    assert_eq!(read("bare").await, RunMeta::default());
    assert_eq!(&*RunMeta::default().node_id, "main");
    drop(j);
    cleanup(&path);
}
