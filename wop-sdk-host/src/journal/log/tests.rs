//! The log journal: the shared suite, reopening, torn writes and damage, two journals on one
//! file, read-only opening, and group commit.

use super::*;
use crate::journal::suite::event;
use crate::journal::{Begin, Charge, Fingerprint, Journal, Lease, Outcome, RunRecord};
use serde_json::json;
use std::sync::atomic::{AtomicUsize, Ordering};
use wop_sdk::host::{AttemptKey, RunId};

/// A fresh path in its own (not yet created) directory under the system temp dir.
fn temp_path(name: &str) -> PathBuf {
    static NEXT: AtomicUsize = AtomicUsize::new(0);
    let n = NEXT.fetch_add(1, Ordering::Relaxed);
    std::env::temp_dir()
        .join(format!("wop-log-{}-{n}-{name}", std::process::id()))
        .join("journal.log")
}

fn cleanup(path: &Path) {
    if let Some(dir) = path.parent() {
        let _ = std::fs::remove_dir_all(dir);
    }
}

fn key(run: &str, call: u32) -> AttemptKey {
    AttemptKey {
        run_id: RunId::new(run),
        node_id: "n1".into(),
        call_index: call,
    }
}

fn lease(holder: &str, beat: u64) -> Lease {
    Lease {
        holder: holder.into(),
        pid: 4242,
        boot: "boot-1".into(),
        heartbeat_ms: beat,
    }
}

fn usage() -> wop_sdk::wire::Event {
    event(
        "provider.usage",
        json!({"provider": "mock", "model": "m", "inputTokens": 3, "outputTokens": 5}),
    )
}

fn completed(text: &str) -> Outcome {
    Outcome::Completed {
        result: text.to_owned(),
    }
}

/// A run of two calls, one finished with a charge and an event, one in flight under a lease.
async fn write_some(j: &LogJournal) {
    j.begin_run(RunRecord {
        run_id: "r1".into(),
        owner: "ana".into(),
        replay_of: None,
        meta: json!({"node": "n1"}),
    })
    .await
    .expect("run");
    let fp = Fingerprint([7; 32]);
    assert_eq!(
        j.begin_leased(&key("r1", 0), &fp, "a-0", 100, &lease("h", 1))
            .await,
        Ok(Begin::Fresh)
    );
    j.record_request(&key("r1", 0), 2, 200)
        .await
        .expect("request 2");
    let charge = Charge {
        beneficiaries: vec!["ana".into()],
        generations: 2,
        output_tokens: 5,
    };
    j.finish(
        &key("r1", 0),
        completed("{\"t\":1}"),
        Some(charge),
        vec![usage()],
    )
    .await
    .expect("finish");
    assert_eq!(
        j.begin_leased(&key("r1", 1), &fp, "a-1", 100, &lease("h", 2))
            .await,
        Ok(Begin::Fresh)
    );
    assert_eq!(j.renew_lease(&key("r1", 1), &lease("h", 3)).await, Ok(true));
    assert_eq!(
        j.renew_lease(&key("r1", 1), &lease("other", 4)).await,
        Ok(false)
    );
}

/// What `write_some` wrote, read back.
async fn check_some(j: &dyn Journal, calls: u64) {
    let runs = j.runs().await.expect("runs");
    assert_eq!(runs.len(), 1);
    assert_eq!(runs[0].owner, "ana");
    let fp = Fingerprint([7; 32]);
    assert_eq!(
        j.begin(&key("r1", 0), &fp, "x").await,
        Ok(Begin::Recorded {
            attempt_id: "a-0".into(),
            outcome: completed("{\"t\":1}")
        })
    );
    assert_eq!(
        j.begin(&key("r1", 1), &fp, "x").await,
        Ok(Begin::Unfinished {
            attempt_id: "a-1".into(),
            requests: 1
        })
    );
    assert_eq!(j.leased(&key("r1", 1)).await, Ok(Some(lease("h", 3))));
    assert_eq!(j.leased(&key("r1", 0)).await, Ok(None));
    assert_eq!(
        j.lookup(&key("r1", 0)).await.map(|e| e.map(|e| e.requests)),
        Ok(Some(2))
    );
    let charges = j.charges(None).await.expect("charges");
    assert_eq!(charges.len(), 1);
    assert_eq!(charges[0].charge.generations, 2);
    let events = j.events(&RunId::new("r1")).await.expect("events");
    assert_eq!(events.len(), 1);
    assert_eq!(events[0].event, usage());
    assert_eq!(j.call_count().await, Ok(calls));
}

#[tokio::test]
async fn log_journal_passes_the_suite() {
    let path = temp_path("suite");
    let j = LogJournal::open(&path).expect("open");
    assert_eq!(j.path(), path);
    assert!(format!("{j:?}").contains("LogJournal"));
    crate::journal::suite::begin_answers(&j).await;
    crate::journal::suite::failures_and_lineage(&j).await;
    crate::journal::suite::runs_and_events(&j).await;
    crate::journal::suite::leases(&j).await;
    drop(j);
    // And everything it wrote reads back the same after a reopen.
    let j = LogJournal::open(&path).expect("reopen");
    assert!(j.call_count().await.expect("count") > 0);
    drop(j);
    cleanup(&path);
}

#[tokio::test]
async fn everything_written_reads_back_after_a_reopen_with_the_same_times() {
    let path = temp_path("reopen");
    let j = LogJournal::open(&path).expect("open");
    write_some(&j).await;
    check_some(&j, 2).await;
    let before = j.events(&RunId::new("r1")).await.expect("events");
    drop(j);
    let j = LogJournal::open(&path).expect("reopen");
    check_some(&j, 2).await;
    assert_eq!(j.events(&RunId::new("r1")).await.expect("events"), before);
    // The reopened journal writes after what it read.
    let fp = Fingerprint([7; 32]);
    assert_eq!(j.begin(&key("r2", 0), &fp, "b").await, Ok(Begin::Fresh));
    drop(j);
    let j = LogJournal::open_read_only(&path).expect("read-only");
    check_some(&j, 3).await;
    assert!(j.lookup(&key("r2", 0)).await.expect("lookup").is_some());
    drop(j);
    cleanup(&path);
}

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

#[tokio::test]
async fn two_journals_on_one_file_see_each_others_writes() {
    let path = temp_path("two");
    let a = LogJournal::open(&path).expect("a");
    let b = LogJournal::open(&path).expect("b");
    let fp = Fingerprint([5; 32]);
    assert_eq!(
        a.begin_leased(&key("r6", 0), &fp, "a-owner", 10, &lease("host-a", 1))
            .await,
        Ok(Begin::Fresh)
    );
    // B sees A's identity and lease, and cannot take the call.
    assert_eq!(
        b.begin_leased(&key("r6", 0), &fp, "b-try", 10, &lease("host-b", 1))
            .await,
        Ok(Begin::Unfinished {
            attempt_id: "a-owner".into(),
            requests: 1
        })
    );
    assert_eq!(b.leased(&key("r6", 0)).await, Ok(Some(lease("host-a", 1))));
    assert_eq!(
        b.renew_lease(&key("r6", 0), &lease("host-b", 2)).await,
        Ok(false)
    );
    assert_eq!(
        a.renew_lease(&key("r6", 0), &lease("host-a", 2)).await,
        Ok(true)
    );
    assert_eq!(b.leased(&key("r6", 0)).await, Ok(Some(lease("host-a", 2))));
    // A deferred outcome is seen by B at once.
    a.finish(&key("r6", 0), completed("\"done\""), None, vec![usage()])
        .await
        .expect("finish");
    assert_eq!(
        b.begin(&key("r6", 0), &fp, "b-again").await,
        Ok(Begin::Recorded {
            attempt_id: "a-owner".into(),
            outcome: completed("\"done\"")
        })
    );
    // Writes interleave: each journal numbers events after the other's.
    let run = RunId::new("r6");
    assert_eq!(b.append_event(&run, usage()).await, Ok(1));
    assert_eq!(a.append_event(&run, usage()).await, Ok(2));
    assert_eq!(b.events(&run).await.map(|e| e.len()), Ok(3));
    drop((a, b));
    let c = LogJournal::open(&path).expect("c");
    assert_eq!(c.events(&run).await.map(|e| e.len()), Ok(3));
    drop(c);
    cleanup(&path);
}

#[tokio::test]
async fn a_read_only_journal_refuses_every_write_and_changes_nothing() {
    let path = temp_path("read-only");
    let j = LogJournal::open(&path).expect("open");
    write_some(&j).await;
    drop(j);
    let before = std::fs::read(&path).expect("read");
    let j = LogJournal::open_read_only(&path).expect("read-only");
    check_some(&j, 2).await;
    let refused = j.begin(&key("r7", 0), &Fingerprint([1; 32]), "z").await;
    assert!(matches!(refused, Err(JournalError::Io(m)) if m.contains("read-only")));
    assert!(j.append_event(&RunId::new("r1"), usage()).await.is_err());
    drop(j);
    assert_eq!(std::fs::read(&path).expect("read"), before);
    assert!(matches!(
        LogJournal::open_read_only(temp_path("missing")),
        Err(JournalError::Io(_))
    ));
    cleanup(&path);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_durable_writes_share_their_syncs() {
    let path = temp_path("group");
    let j = Arc::new(LogJournal::open(&path).expect("open"));
    let before = j.commits();
    let tasks: Vec<_> = (0..64)
        .map(|i| {
            let j = Arc::clone(&j);
            tokio::spawn(async move {
                let k = key("r8", i);
                let fp = Fingerprint([9; 32]);
                for n in 1..=4 {
                    if n == 1 {
                        assert_eq!(
                            j.begin_first_request(&k, &fp, "g", 5).await,
                            Ok(Begin::Fresh)
                        );
                    } else {
                        j.record_request(&k, n, 5).await.expect("request");
                    }
                }
            })
        })
        .collect();
    for t in tasks {
        t.await.expect("task");
    }
    let syncs = j.commits() - before;
    assert!(
        (1..=256).contains(&syncs),
        "{syncs} syncs for 256 durable writes"
    );
    assert_eq!(j.call_count().await, Ok(64));
    drop(j);
    let j = LogJournal::open(&path).expect("reopen");
    assert_eq!(
        j.lookup(&key("r8", 63))
            .await
            .map(|e| e.map(|e| e.requests)),
        Ok(Some(4))
    );
    drop(j);
    cleanup(&path);
}

#[tokio::test]
async fn a_deferred_write_is_synced_when_its_window_ends() {
    let path = temp_path("window");
    let j = LogJournal::open(&path).expect("open");
    j.set_flush_window(Duration::from_millis(5));
    let before = j.commits();
    j.append_event(&RunId::new("r9"), usage())
        .await
        .expect("event");
    assert_eq!(j.commits(), before, "answered before its sync");
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    while j.commits() == before && std::time::Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(2)).await;
    }
    assert_eq!(j.commits(), before + 1, "one sync, by the flush thread");
    // Window zero: every write is durable when answered.
    j.set_flush_window(Duration::ZERO);
    j.append_event(&RunId::new("r9"), usage())
        .await
        .expect("event");
    assert_eq!(j.commits(), before + 2);
    drop(j);
    cleanup(&path);
}

#[tokio::test]
async fn a_record_grows_the_file_past_its_first_step() {
    let path = temp_path("grow");
    let j = LogJournal::open(&path).expect("open");
    // One outcome longer than the file's first step.
    let big = format!("\"{}\"", "x".repeat(CHUNK as usize + 1000));
    let k = key("r10", 0);
    j.begin(&k, &Fingerprint([1; 32]), "big")
        .await
        .expect("begin");
    j.finish(&k, completed(&big), None, Vec::new())
        .await
        .expect("finish");
    drop(j);
    assert!(std::fs::metadata(&path).expect("stat").len() >= 2 * CHUNK);
    let j = LogJournal::open(&path).expect("reopen");
    let entry = j.lookup(&k).await.expect("lookup").expect("the call");
    assert_eq!(entry.outcome, Some(completed(&big)));
    drop(j);
    cleanup(&path);
}
