//! Deferred writes: a call's outcome is answered before it is committed, and becomes durable with
//! the next durable write (of any caller), at the end of the flush window, or when the journal
//! is dropped. What is committed is read through a second connection, as another process (or
//! the same one after a crash) would.

use super::*;
use crate::journal::{Lease, RunMeta};
use std::time::Duration;

/// The outcome of `k` as a second connection (another process) sees it: committed only.
fn committed_outcome(path: &Path, k: &AttemptKey) -> Option<String> {
    let c = rusqlite::Connection::open_with_flags(path, rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY)
        .expect("a second connection");
    c.query_row(
        "SELECT outcome FROM calls WHERE run_id = ?1 AND node_id = ?2 AND call_index = ?3",
        rusqlite::params![k.run_id.as_str(), k.node_id, k.call_index],
        |r| r.get::<_, Option<String>>(0),
    )
    .ok()
    .flatten()
}

fn done() -> Outcome {
    Outcome::Completed {
        result: "{\"title\":\"t\"}".into(),
    }
}

#[tokio::test]
async fn an_outcome_rides_on_the_next_identity_in_one_commit() {
    let path = temp_path("deferred-next");
    let j = SqliteJournal::open(&path).expect("open");
    j.set_flush_window(Duration::from_secs(3600));
    let fp = Fingerprint([1; 32]);
    let (k1, k2) = (key("r1", 0), key("r1", 1));
    assert_eq!(
        j.begin_first_request(&k1, &fp, "a-1", 64).await,
        Ok(Begin::Fresh)
    );
    let before = j.commits();
    assert_eq!(j.finish(&k1, done(), None, Vec::new()).await, Ok(()));
    assert_eq!(j.commits(), before, "the outcome did not commit on its own");
    // This process sees it at once; another does not yet.
    assert_eq!(
        j.lookup(&k1).await.expect("lookup").and_then(|e| e.outcome),
        Some(done())
    );
    assert_eq!(committed_outcome(&path, &k1), None);
    // The next call's identity is durable before it returns, and carries the outcome with it.
    assert_eq!(
        j.begin_first_request(&k2, &fp, "a-2", 64).await,
        Ok(Begin::Fresh)
    );
    assert_eq!(
        j.commits(),
        before + 1,
        "one commit for the outcome and the identity"
    );
    assert!(committed_outcome(&path, &k1).is_some_and(|o| o.contains("completed")));
    drop(j);
    cleanup(&path);
}

#[tokio::test]
async fn a_nodes_end_commits_its_last_outcome_and_the_run_record() {
    let path = temp_path("deferred-end");
    let j = SqliteJournal::open(&path).expect("open");
    j.set_flush_window(Duration::from_secs(3600));
    let run = RunId::new("r1");
    let record = RunRecord {
        run_id: RunId::new("r1"),
        owner: "o".into(),
        replay_of: None,
        meta: RunMeta::default(),
    };
    let start = j.commits();
    assert_eq!(j.begin_run(record).await, Ok(()));
    assert_eq!(
        j.append_event(
            &run,
            event(
                "node.started",
                json!({"nodeId": "n1", "typeId": "community.test.n"})
            )
        )
        .await
        .map(|_| ()),
        Ok(())
    );
    assert_eq!(
        j.commits(),
        start,
        "a run's record and node.started are deferred"
    );
    let k = key("r1", 0);
    assert_eq!(
        j.begin_first_request(&k, &Fingerprint([2; 32]), "a-1", 64)
            .await,
        Ok(Begin::Fresh)
    );
    assert_eq!(j.finish(&k, done(), None, Vec::new()).await, Ok(()));
    assert_eq!(j.commits(), start + 1, "the identity's commit only");
    let ended = event("node.completed", json!({"nodeId": "n1", "outputs": {}}));
    assert!(j.append_event(&run, ended).await.is_ok());
    assert_eq!(j.commits(), start + 2, "the node's end is durable");
    assert!(
        committed_outcome(&path, &k).is_some(),
        "and carried the last outcome"
    );
    drop(j);
    cleanup(&path);
}

#[tokio::test]
async fn the_flush_window_and_dropping_the_journal_commit_what_waits() {
    let path = temp_path("deferred-window");
    let fp = Fingerprint([3; 32]);
    let (k1, k2) = (key("r1", 0), key("r1", 1));
    {
        let j = SqliteJournal::open(&path).expect("open");
        j.set_flush_window(Duration::from_millis(20));
        assert_eq!(
            j.begin_first_request(&k1, &fp, "a-1", 64).await,
            Ok(Begin::Fresh)
        );
        let before = j.commits();
        assert_eq!(j.finish(&k1, done(), None, Vec::new()).await, Ok(()));
        let waited = std::time::Instant::now();
        while committed_outcome(&path, &k1).is_none() {
            assert!(
                waited.elapsed() < Duration::from_secs(30),
                "never committed"
            );
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        assert_eq!(
            j.commits(),
            before + 1,
            "committed on its own at the window's end"
        );

        // A window that never ends: dropping the journal commits.
        j.set_flush_window(Duration::from_secs(3600));
        assert_eq!(
            j.begin_first_request(&k2, &fp, "a-2", 64).await,
            Ok(Begin::Fresh)
        );
        assert_eq!(j.finish(&k2, done(), None, Vec::new()).await, Ok(()));
        assert_eq!(committed_outcome(&path, &k2), None);
    }
    assert!(
        committed_outcome(&path, &k2).is_some(),
        "committed when dropped"
    );
    cleanup(&path);
}

/// The lease of `k` as a second connection sees it: committed only.
fn committed_lease(path: &Path, k: &AttemptKey) -> Option<String> {
    let c = rusqlite::Connection::open_with_flags(path, rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY)
        .expect("a second connection");
    c.query_row(
        "SELECT lease FROM calls WHERE run_id = ?1 AND node_id = ?2 AND call_index = ?3",
        rusqlite::params![k.run_id.as_str(), k.node_id, k.call_index],
        |r| r.get::<_, String>(0),
    )
    .ok()
}

#[tokio::test]
async fn leases_are_durable_whatever_the_window_and_a_zero_window_commits_every_write() {
    let path = temp_path("deferred-zero");
    let j = SqliteJournal::open(&path).expect("open");
    j.set_flush_window(Duration::from_secs(3600));
    let k = key("r1", 0);
    let mut lease = Lease {
        holder: "h1".into(),
        pid: std::process::id(),
        boot: "".into(),
        heartbeat_ms: 1,
    };
    assert_eq!(
        j.begin_leased(&k, &Fingerprint([4; 32]), "a-1", 64, &lease)
            .await,
        Ok(Begin::Fresh)
    );
    assert!(
        committed_lease(&path, &k).is_some(),
        "another host sees the owner at once"
    );
    // A heartbeat is durable when it returns, deferred writes or not.
    lease.heartbeat_ms = 2;
    let before = j.commits();
    assert_eq!(j.renew_lease(&k, &lease).await, Ok(true));
    assert_eq!(j.commits(), before + 1);
    assert!(committed_lease(&path, &k).is_some_and(|l| l.contains("\"heartbeatMs\":2")));

    j.set_flush_window(Duration::ZERO);
    let before = j.commits();
    assert_eq!(j.finish(&k, done(), None, Vec::new()).await, Ok(()));
    assert_eq!(
        j.commits(),
        before + 1,
        "no window: the outcome commits on its own"
    );
    assert!(committed_outcome(&path, &k).is_some());
    drop(j);
    cleanup(&path);
}
