//! Arbitrary damage to a log's bytes (cut short, bits flipped, bytes overwritten, garbage
//! appended): opening it answers, a journal or an error, and never panics; an error leaves the
//! file as it was; a read-only opening never changes it; a journal that opens can be read whole,
//! written to, and opened again with what it wrote.

use super::*;
use crate::journal::damage::{answered, damage, damaged, runtime};
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

proptest! {
    #![proptest_config(ProptestConfig { cases: 192, ..ProptestConfig::default() })]

    #[test]
    fn damage_is_answered_not_panicked_on(damages in prop::collection::vec(damage(), 1..4)) {
        let bytes = damaged(pristine(), &damages);
        let path = temp_path("arbitrary");
        let r2 = AttemptKey { run_id: RunId::new("r2"), node_id: "main".into(), call_index: 0 };
        let keys = [key("r1", 0), key("r1", 1), r2];
        let answer = answered(&bytes, &path, |p| LogJournal::open(p), |p| LogJournal::open_read_only(p), &keys);
        cleanup(&path);
        answer?;
    }
}
