//! The in-memory journal's answers as futures: its work is done when it is called, so each
//! answer is ready at once; the usual ones (`Ok(())`, a fresh identity) allocate nothing.

use crate::journal::{Begin, JournalError};
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};
use wop_sdk::host::BoxFuture;

pub(super) fn ready<'a, T: Send + 'a>(v: T) -> BoxFuture<'a, T> {
    Box::pin(std::future::ready(v))
}

/// A future ready with `make()`. For a constant answer (`Ok(())`, `Begin::Fresh`) `make`
/// captures nothing, so the future has no size and its box allocates nothing: the answers of a
/// call's usual path cost no allocation.
struct Constant<F>(F);

impl<T, F: Fn() -> T + Unpin> Future for Constant<F> {
    type Output = T;

    fn poll(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<T> {
        Poll::Ready((self.0)())
    }
}

fn constant<'a, T, F: Fn() -> T + Send + Unpin + 'a>(make: F) -> BoxFuture<'a, T> {
    Box::pin(Constant(make))
}

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
