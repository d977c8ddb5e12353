//! Two journals on one file, read-only opening, group commit, the flush window, growth.

use super::*;
use crate::journal::log::file::CHUNK;

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
    // Nothing was created beside it (which is why a folder this user cannot write does not stop it).
    let beside: Vec<_> = std::fs::read_dir(path.parent().expect("dir"))
        .expect("dir")
        .map(|e| e.expect("entry").file_name())
        .collect();
    assert_eq!(beside, [std::ffi::OsString::from("journal.log")]);
    assert!(matches!(
        LogJournal::open_read_only(temp_path("missing")),
        Err(JournalError::Io(_))
    ));
    cleanup(&path);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_durable_writes_are_all_answered_and_durable() {
    // How many syncs they share depends on timing; that durable writes made during a sync share
    // the next one is `sync.rs`'s own test.
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
    assert!(j.commits() > before, "the durable writes were synced");
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
