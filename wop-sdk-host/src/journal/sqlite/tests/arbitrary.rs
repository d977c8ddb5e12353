//! Arbitrary damage to a closed journal's bytes (cut short, bits flipped, bytes overwritten,
//! garbage appended): opening it answers, a journal or an error, and never panics; a refused file
//! is left as it was; a read-only opening never changes it; a journal that opens can be read
//! whole and written to, and what it wrote is there when it is opened again.

use super::*;
use crate::journal::damage::{answered, damage, damaged, runtime};
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

proptest! {
    #![proptest_config(ProptestConfig { cases: 96, ..ProptestConfig::default() })]

    #[test]
    fn damage_is_answered_not_panicked_on(damages in prop::collection::vec(damage(), 1..4)) {
        let bytes = damaged(pristine(), &damages);
        let path = temp_path("arbitrary");
        let keys: Vec<_> = (0..8).map(|i| key("r1", i)).collect();
        let answer = answered(&bytes, &path, |p| SqliteJournal::open(p), |p| SqliteJournal::open_read_only(p), &keys);
        cleanup(&path);
        answer?;
    }
}
