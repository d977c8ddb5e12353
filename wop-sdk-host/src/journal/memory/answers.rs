//! The in-memory journal's answers as futures: its work is done when it is called, so each
//! answer is ready at once; the usual ones (`Ok(())`, a fresh identity) allocate nothing.

use crate::answers::{constant, ready};
use crate::journal::{Begin, JournalError};
use wop_sdk::host::BoxFuture;

/// `Ok(())`, without an allocation.
pub(super) fn done<'a>() -> BoxFuture<'a, Result<(), JournalError>> {
    constant(|| Ok(()))
}

/// The answer of `begin`, without an allocation for a fresh identity (the usual one).
pub(super) fn begun<'a>(begin: Begin) -> BoxFuture<'a, Result<Begin, JournalError>> {
    if begin == Begin::Fresh {
        constant(|| Ok(Begin::Fresh))
    } else {
        ready(Ok(begin))
    }
}
