//! Arbitrary damage to a log's bytes (cut short, bits flipped, bytes overwritten, garbage
//! appended): opening it answers, a journal or an error, and never panics; an error leaves the
//! file as it was; a read-only opening never changes it; a journal that opens can be read whole,
//! written to, and opened again with what it wrote.

use super::*;
use crate::journal::damage::{apply, damage};
use proptest::prelude::*;
use std::sync::OnceLock;

/// A log as a crash leaves it: `write_some`'s run (a finished call with its charge and event, a
/// call in flight under a lease) and a second run that ended (held cold), then the zeros the file
/// was grown with, cut to a few hundred bytes.
fn pristine() -> &'static [u8] {
    static BYTES: OnceLock<Vec<u8>> = OnceLock::new();
    BYTES.get_or_init(|| {
        let path = temp_path("pristine");
        let rt = runtime();
        let end = rt.block_on(async {
            let j = LogJournal::open(&path).expect("open");
            write_some(&j).await;
            let r2 = RunId::new("r2");
            j.begin_run(RunRecord {
                run_id: r2.clone(),
                owner: "bo".into(),
                replay_of: None,
                meta: RunMeta::default(),
            })
            .await
            .expect("run 2");
            let fp = Fingerprint([9; 32]);
            let k = AttemptKey {
                run_id: r2.clone(),
                node_id: "main".into(),
                call_index: 0,
            };
            assert_eq!(j.begin(&k, &fp, "b-0").await, Ok(Begin::Fresh));
            j.finish(&k, completed("{}"), None, vec![usage()])
                .await
                .expect("finish");
            j.append_event(&r2, usage()).await.expect("event");
            j.run_ended(&r2);
            j.shared.log().end
        });
        let mut bytes = std::fs::read(&path).expect("read");
        cleanup(&path);
        bytes.truncate(usize::try_from(end).expect("small") + 256);
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
async fn read_whole(j: &LogJournal) {
    if let Ok(runs) = j.runs().await {
        for run in runs {
            let _ = j.run(&run.run_id).await;
            let _ = j.events(&run.run_id).await;
        }
    }
    for k in [key("r1", 0), key("r1", 1)] {
        let _ = j.lookup(&k).await;
        let _ = j.leased(&k).await;
    }
    let _ = j.events(&RunId::new("r2")).await;
    let _ = j.charges(None).await;
    let _ = j.call_count().await;
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 192, ..ProptestConfig::default() })]

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

        if let Ok(j) = LogJournal::open_read_only(&path) {
            rt.block_on(read_whole(&j));
        }
        prop_assert_eq!(&std::fs::read(&path).expect("read"), &bytes, "a read-only opening changed the file");

        match LogJournal::open(&path) {
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
                    let again = LogJournal::open(&path);
                    prop_assert!(again.is_ok(), "a log the journal opened and wrote to is refused: {:?}", again.err());
                    let found = rt.block_on(again.expect("open").lookup(&fresh));
                    prop_assert!(matches!(found, Ok(Some(_))), "the write after the damage is lost: {:?}", found);
                }
            }
        }
        cleanup(&path);
    }
}
