//! Arbitrary damage to a closed journal's bytes (cut short, bits flipped, bytes overwritten,
//! garbage appended): opening it answers, a journal or an error, and never panics; a refused file
//! is left as it was; a read-only opening never changes it; a journal that opens can be read
//! whole and written to, and what it wrote is there when it is opened again.

use super::*;
use crate::journal::damage::{apply, damage};
use proptest::prelude::*;
use std::sync::OnceLock;

/// A closed journal of six finished calls (`journal_with`), a run record and a call in flight
/// under a lease: a few pages.
fn pristine() -> &'static [u8] {
    static BYTES: OnceLock<Vec<u8>> = OnceLock::new();
    BYTES.get_or_init(|| {
        let path = temp_path("pristine");
        runtime().block_on(async {
            journal_with(&path, 6).await;
            let j = SqliteJournal::open(&path).expect("open");
            j.begin_run(RunRecord {
                run_id: RunId::new("r1"),
                owner: "ana".into(),
                replay_of: None,
                meta: RunMeta::default(),
            })
            .await
            .expect("run");
            let lease = crate::journal::Lease::now("h-1");
            let k = key("r1", 6);
            let fresh = j.begin_leased(&k, &Fingerprint([7; 32]), "a-6", 100, &lease);
            assert_eq!(fresh.await, Ok(Begin::Fresh));
        });
        let bytes = std::fs::read(&path).expect("read");
        cleanup(&path);
        bytes
    })
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime")
}

/// Reads everything a journal answers; errors are answers, panics are not.
async fn read_whole(j: &SqliteJournal) {
    if let Ok(runs) = j.runs().await {
        for run in runs {
            let _ = j.run(&run.run_id).await;
            let _ = j.events(&run.run_id).await;
        }
    }
    for i in 0..8 {
        let _ = j.lookup(&key("r1", i)).await;
        let _ = j.leased(&key("r1", i)).await;
    }
    let _ = j.events(&RunId::new("r1")).await;
    let _ = j.charges(None).await;
    let _ = j.call_count().await;
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 96, ..ProptestConfig::default() })]

    #[test]
    fn damage_is_answered_not_panicked_on(damages in prop::collection::vec(damage(), 1..4)) {
        let mut bytes = pristine().to_vec();
        for d in &damages {
            apply(&mut bytes, d);
        }
        let path = temp_path("arbitrary");
        std::fs::create_dir_all(path.parent().expect("dir")).expect("dir");
        std::fs::write(&path, &bytes).expect("write");
        let rt = runtime();

        if let Ok(j) = SqliteJournal::open_read_only(&path) {
            rt.block_on(read_whole(&j));
        }
        prop_assert_eq!(&std::fs::read(&path).expect("read"), &bytes, "a read-only opening changed the file");

        match SqliteJournal::open(&path) {
            Err(_) => {
                prop_assert_eq!(&std::fs::read(&path).expect("read"), &bytes, "a refused file was changed");
            }
            Ok(j) => {
                let fresh = key("fresh", 0);
                let wrote = rt.block_on(async {
                    read_whole(&j).await;
                    j.begin(&fresh, &Fingerprint([5; 32]), "f-0").await
                });
                drop(j);
                if wrote == Ok(Begin::Fresh) {
                    let found = SqliteJournal::open(&path).map(|again| rt.block_on(again.lookup(&fresh)));
                    prop_assert!(matches!(found, Ok(Ok(Some(_)))), "the write after the damage is lost: {:?}", found);
                }
            }
        }
        cleanup(&path);
    }
}
