//! Arbitrary damage to a journal file's bytes, for the stores' property tests: cut short, bits
//! flipped, bytes overwritten, garbage appended.

use proptest::prelude::*;

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

/// Applies `d` to `bytes`.
pub(crate) fn apply(bytes: &mut Vec<u8>, d: &Damage) {
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
