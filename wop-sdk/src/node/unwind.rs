//! A node that panics ends as a coded failure on every host, not as a panic through the host.
//!
//! The runner polls the node's body inside `catch_unwind`: the panic's payload becomes the
//! message of a `wop-sdk.node_failed` (cut to [`MAX_MESSAGE`] characters), the node's unsettled
//! failures are settled and `node.failed` is recorded, as for any other failure. The local host
//! and the Node bridge run the same runner, so a panicking node fails the same way on both.

use std::any::Any;
use std::future::Future;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::pin::Pin;
use std::task::{Context, Poll};

/// The longest panic message kept, in characters.
pub(crate) const MAX_MESSAGE: usize = 300;

/// `F`, with a panic inside a poll answered as `Err(payload)`.
pub(crate) struct Unwinding<F>(pub(crate) Pin<Box<F>>)
where
    F: ?Sized;

impl<F, T> Future for Unwinding<F>
where
    F: Future<Output = T> + ?Sized,
{
    type Output = Result<T, Box<dyn Any + Send>>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        // The body is not polled again after a panic: the runner drops it at once.
        let inner = self.0.as_mut();
        match catch_unwind(AssertUnwindSafe(|| inner.poll(cx))) {
            Ok(Poll::Pending) => Poll::Pending,
            Ok(Poll::Ready(v)) => Poll::Ready(Ok(v)),
            Err(payload) => Poll::Ready(Err(payload)),
        }
    }
}

/// A panic payload's text (`panic!("...")` gives a `&str` or a `String`), cut to
/// [`MAX_MESSAGE`] characters; a payload of another type says so.
pub(crate) fn panic_message(payload: &(dyn Any + Send)) -> String {
    let text = payload
        .downcast_ref::<&str>()
        .copied()
        .or_else(|| payload.downcast_ref::<String>().map(String::as_str))
        .unwrap_or("a panic payload that is not text");
    match text.char_indices().nth(MAX_MESSAGE) {
        Some((cut, _)) => format!("{}…", &text[..cut]),
        None => text.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_message_is_kept_whole_or_cut() {
        assert_eq!(panic_message(&"boom"), "boom");
        assert_eq!(panic_message(&String::from("b")), "b");
        assert_eq!(panic_message(&7_u8), "a panic payload that is not text");
        let long = "é".repeat(MAX_MESSAGE + 5);
        let cut = panic_message(&long);
        assert_eq!(cut.chars().count(), MAX_MESSAGE + 1, "{cut}");
        assert!(cut.ends_with('…'));
    }
}
