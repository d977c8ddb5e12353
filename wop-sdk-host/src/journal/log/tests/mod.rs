//! The log journal: the shared suite and reopening here; torn writes and damage in `damage.rs`,
//! arbitrary damage in `arbitrary.rs`; two journals on one file, read-only opening, group commit
//! and the flush window in `sharing.rs`.

use super::*;

mod arbitrary;
mod damage;
mod sharing;
use crate::journal::suite::event;
use crate::journal::{Begin, Charge, Fingerprint, Journal, Lease, Outcome, RunMeta, RunRecord};
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
        run_id: RunId::new("r1"),
        owner: "ana".into(),
        replay_of: None,
        meta: RunMeta {
            node_id: "n1".into(),
            ..RunMeta::default()
        },
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
        beneficiaries: vec!["ana".into()].into(),
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
    assert_eq!(&*runs[0].owner, "ana");
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

fn cold(j: &LogJournal) -> Vec<String> {
    let log = j.shared.log();
    let mut runs: Vec<String> = log
        .index
        .cold()
        .iter()
        .map(|r| r.as_str().to_owned())
        .collect();
    runs.sort();
    runs
}

#[tokio::test]
async fn an_ended_run_is_held_cold_and_read_back_whole_when_asked() {
    let path = temp_path("cold");
    let j = LogJournal::open(&path).expect("open");
    write_some(&j).await;
    let r1 = RunId::new("r1");
    // A call in flight keeps its run in memory.
    j.run_ended(&r1);
    assert!(cold(&j).is_empty());
    j.finish(&key("r1", 1), completed("\"second\""), None, Vec::new())
        .await
        .expect("finish");
    j.run_ended(&r1);
    assert_eq!(cold(&j), ["r1"]);
    // Every read answers as before, and leaves it cold.
    let events = j.events(&r1).await.expect("events");
    assert_eq!(events.len(), 1);
    assert_eq!(j.charges(None).await.map(|c| c.len()), Ok(1));
    assert_eq!(j.charges(Some(&r1)).await.map(|c| c.len()), Ok(1));
    assert_eq!(j.runs().await.map(|r| r.len()), Ok(1));
    assert_eq!(j.call_count().await, Ok(2));
    assert_eq!(j.leased(&key("r1", 1)).await, Ok(None));
    assert_eq!(
        j.lookup(&key("r1", 0)).await.map(|e| e.map(|e| e.requests)),
        Ok(Some(2))
    );
    assert_eq!(cold(&j), ["r1"]);
    // A write (a redelivery) reads it back for good, and finds the call recorded.
    let fp = Fingerprint([7; 32]);
    assert_eq!(
        j.begin(&key("r1", 1), &fp, "x").await,
        Ok(Begin::Recorded {
            attempt_id: "a-1".into(),
            outcome: completed("\"second\"")
        })
    );
    assert!(cold(&j).is_empty());
    assert_eq!(j.append_event(&r1, usage()).await, Ok(1));
    assert_eq!(j.events(&r1).await.expect("events")[0], events[0]);
    drop(j);
    // Opened again, every ended run is cold, and answers the same.
    let j = LogJournal::open(&path).expect("reopen");
    assert_eq!(cold(&j), ["r1"]);
    assert_eq!(j.events(&r1).await.map(|e| e.len()), Ok(2));
    assert_eq!(j.call_count().await, Ok(2));
    assert_eq!(
        j.begin(&key("r1", 0), &fp, "y").await,
        Ok(Begin::Recorded {
            attempt_id: "a-0".into(),
            outcome: completed("{\"t\":1}")
        })
    );
    drop(j);
    cleanup(&path);
}
