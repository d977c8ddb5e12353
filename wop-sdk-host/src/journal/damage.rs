//! Arbitrary damage to a journal file's bytes, for the stores' property tests (cut short, bits
//! flipped, bytes overwritten, garbage appended), and what a store must answer to it
//! ([`answered`]).

use super::{Begin, Fingerprint, Journal, JournalError};
use proptest::prelude::*;
use proptest::test_runner::TestCaseError;
use std::path::Path;
use wop_sdk::host::{AttemptKey, RunId};

/// What can happen to the file's bytes. Offsets are taken within the bytes as they are then.
#[derive(Clone, Debug)]
pub(crate) enum Damage {
    Cut(prop::sample::Index),
    Flip(prop::sample::Index, u8),
    Overwrite(prop::sample::Index, Vec<u8>),
    Append(Vec<u8>),
}

/// One damage, anywhere in the file.
pub(crate) fn damage() -> impl Strategy<Value = Damage> {
    prop_oneof![
        any::<prop::sample::Index>().prop_map(Damage::Cut),
        (any::<prop::sample::Index>(), 1u8..=255).prop_map(|(at, x)| Damage::Flip(at, x)),
        (
            any::<prop::sample::Index>(),
            prop::collection::vec(any::<u8>(), 1..48)
        )
            .prop_map(|(at, b)| Damage::Overwrite(at, b)),
        prop::collection::vec(any::<u8>(), 1..96).prop_map(Damage::Append),
    ]
}

/// `pristine` with `damages` applied in turn.
pub(crate) fn damaged(pristine: &[u8], damages: &[Damage]) -> Vec<u8> {
    let mut bytes = pristine.to_vec();
    for d in damages {
        apply(&mut bytes, d);
    }
    bytes
}

/// Applies `d` to `bytes`.
fn apply(bytes: &mut Vec<u8>, d: &Damage) {
    match d {
        Damage::Cut(at) if !bytes.is_empty() => bytes.truncate(at.index(bytes.len())),
        Damage::Flip(at, x) if !bytes.is_empty() => {
            let i = at.index(bytes.len());
            bytes[i] ^= x;
        }
        Damage::Overwrite(at, b) if !bytes.is_empty() => {
            let i = at.index(bytes.len());
            let n = b.len().min(bytes.len() - i);
            bytes[i..i + n].copy_from_slice(&b[..n]);
        }
        Damage::Append(b) => bytes.extend_from_slice(b),
        _ => {}
    }
}

/// A current-thread runtime for a property test's case.
pub(crate) fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime")
}

/// Reads everything a journal answers about its runs and about `keys`; errors are answers,
/// panics are not.
async fn read_whole(j: &dyn Journal, keys: &[AttemptKey]) {
    if let Ok(runs) = j.runs().await {
        for run in runs {
            let _ = j.run(&run.run_id).await;
            let _ = j.events(&run.run_id).await;
        }
    }
    for k in keys {
        let _ = j.lookup(k).await;
        let _ = j.leased(k).await;
        let _ = j.events(&k.run_id).await;
    }
    let _ = j.charges(None).await;
    let _ = j.call_count().await;
}

/// Writes `bytes` at `path` and holds a store to what a damaged file must get:
/// - a read-only opening (`open_read_only`) never changes the file, and what it opens reads;
/// - an opening (`open`) answers; when it refuses, the file is as it was;
/// - a journal that opens reads whole (its runs and `keys`), and a fresh identity it makes
///   durable is there when the file is opened again.
pub(crate) fn answered<J: Journal>(
    bytes: &[u8],
    path: &Path,
    open: impl Fn(&Path) -> Result<J, JournalError>,
    open_read_only: impl Fn(&Path) -> Result<J, JournalError>,
    keys: &[AttemptKey],
) -> Result<(), TestCaseError> {
    std::fs::create_dir_all(path.parent().expect("dir")).expect("dir");
    std::fs::write(path, bytes).expect("write");
    let rt = runtime();
    if let Ok(j) = open_read_only(path) {
        rt.block_on(read_whole(&j, keys));
    }
    prop_assert_eq!(
        &std::fs::read(path).expect("read"),
        bytes,
        "a read-only opening changed the file"
    );
    match open(path) {
        Err(_) => prop_assert_eq!(
            &std::fs::read(path).expect("read"),
            bytes,
            "a refused file was changed"
        ),
        Ok(j) => {
            let fresh = AttemptKey {
                run_id: RunId::new("fresh"),
                node_id: "n1".into(),
                call_index: 0,
            };
            let wrote = rt.block_on(async {
                read_whole(&j, keys).await;
                j.begin(&fresh, &Fingerprint([5; 32]), "f-0").await
            });
            drop(j);
            if wrote == Ok(Begin::Fresh) {
                let found = open(path).map(|again| rt.block_on(again.lookup(&fresh)));
                prop_assert!(
                    matches!(found, Ok(Ok(Some(_)))),
                    "the write after the damage is lost: {:?}",
                    found
                );
            }
        }
    }
    Ok(())
}
