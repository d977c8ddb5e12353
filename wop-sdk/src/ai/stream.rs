//! A streamed call (`callAIStream`): provisional [`Fragment`]s, then exactly one terminal result.
//!
//! [`crate::NodeCtx::call_ai_stream`] returns a [`CallStream`]. [`CallStream::next`] yields the
//! provisional items ([`Provisional`]) as the host writes them; [`CallStream::finish`] consumes
//! the stream and gives the terminal result: the same `Result<Completion, AiFailure>` as a
//! plain call. The types keep the two apart:
//!
//! - a [`Fragment`] carries text and its attempt number, nothing else: no typed output, no
//!   attempt id, no usage, no `attempts`, and no conversion into any of them;
//! - the typed output exists only on the [`Completion`] that [`CallStream::finish`] returns, and
//!   `finish` takes the stream by value, so there is exactly one terminal item;
//! - a failed stream gives the same opaque, run-bound [`AiFailure`] as a plain call, whatever
//!   fragments came before it.
//!
//! A host retry inside the call (a truncation, a schema miss, a transient provider error) shows
//! as [`Provisional::Restart`] carrying the new request's number: the fragments before it belong
//! to a discarded attempt. `attempts` on the completion counts every provider request, as for a
//! plain call.
//!
//! Dropping a [`CallStream`] before [`CallStream::finish`] has returned cancels the call exactly
//! as dropping a plain call's future does: the node's reservation is charged once, as the worst
//! case, the call is reported `cancelled`, and the host forgets the call in flight.
//!
//! Why not `futures_core::Stream`: a `Stream` has one item type, so the terminal result would be
//! one more variant that a consumer may never reach (or reach twice in its own bookkeeping); and
//! it would add a dependency pack authors then need an extension trait for. [`CallStream::next`]
//! is an `async fn` and [`CallStream::poll_next`] the poll form, for adapters.

use super::completion::Completion;
use super::output::Output;
use crate::failure::AiFailure;
use crate::host::{StreamDelta, StreamSink};
use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};

/// Provisional text of a streamed call: what the provider produced so far in one attempt.
///
/// It is not the call's result: it has no typed output and cannot become one. It may belong to
/// an attempt the host later discards ([`Provisional::Restart`]), and the call may still fail.
#[derive(Clone, PartialEq, Eq)]
pub struct Fragment {
    text: String,
    attempt: u32,
}

impl Fragment {
    /// The text.
    pub fn text(&self) -> &str {
        &self.text
    }

    /// The provider request it belongs to (1 for the call's first).
    pub fn attempt(&self) -> u32 {
        self.attempt
    }
}

impl fmt::Debug for Fragment {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Fragment")
            .field("attempt", &self.attempt)
            .field("text", &self.text)
            .finish()
    }
}

/// One provisional item of a streamed call.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Provisional {
    /// Text of the current attempt.
    Fragment(Fragment),
    /// The host began provider request `attempt` (2, 3, …): every fragment before this belongs
    /// to a discarded attempt.
    Restart {
        /// The new request's number within the call.
        attempt: u32,
    },
    /// The call was recorded already (a redelivery, a replay fork): its terminal result is
    /// replayed, no fragment follows, and no provider request is made.
    Replay,
}

type Terminal<'run, T> = Result<Completion<'run, T>, AiFailure<'run>>;
type TerminalFuture<'run, T> = Pin<Box<dyn Future<Output = Terminal<'run, T>> + Send + 'run>>;

enum State<'run, T> {
    Running(TerminalFuture<'run, T>),
    Ended(Terminal<'run, T>),
}

/// A streamed call in progress: provisional items from [`CallStream::next`], then the terminal
/// result from [`CallStream::finish`]. Dropped before `finish` returns, it cancels the call.
///
/// ```rust,no_run
/// use wop_sdk::ai::{Provisional, Text};
/// use wop_sdk::{AiRequest, NodeCtx, NodeError};
///
/// async fn draft<'run>(ctx: &NodeCtx<'run>) -> Result<String, NodeError<'run>> {
///     let mut stream = ctx.call_ai_stream(AiRequest::<Text>::prompt("Write the scene."));
///     let mut shown = String::new();
///     while let Some(item) = stream.next().await {
///         match item {
///             Provisional::Fragment(f) => shown.push_str(f.text()),
///             // A host retry: what was shown belongs to a discarded attempt.
///             Provisional::Restart { .. } => shown.clear(),
///             _ => {}
///         }
///     }
///     // The result is the terminal item, never the fragments.
///     let completion = stream.finish().await?;
///     Ok(completion.into_output().map_err(|e| NodeError::new(e.to_string()))?.0)
/// }
/// ```
#[must_use = "a streamed call is cancelled when dropped before `finish`"]
pub struct CallStream<'run, T> {
    sink: StreamSink,
    state: State<'run, T>,
    attempt: u32,
    replayed: bool,
}

impl<T> fmt::Debug for CallStream<'_, T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CallStream")
            .field("attempt", &self.attempt)
            .field("replayed", &self.replayed)
            .field("ended", &matches!(self.state, State::Ended(_)))
            .finish()
    }
}

impl<'run, T: Output> CallStream<'run, T> {
    pub(crate) fn new(sink: StreamSink, terminal: TerminalFuture<'run, T>) -> Self {
        Self {
            sink,
            state: State::Running(terminal),
            attempt: 1,
            replayed: false,
        }
    }

    /// The next provisional item, or `None` once the terminal result is ready (then
    /// [`CallStream::finish`] returns it at once).
    pub async fn next(&mut self) -> Option<Provisional> {
        std::future::poll_fn(|cx| self.poll_next(cx)).await
    }

    /// The poll form of [`CallStream::next`], for adapters (a `Stream` implementation of your
    /// own, a hand-written future).
    pub fn poll_next(&mut self, cx: &mut Context<'_>) -> Poll<Option<Provisional>> {
        self.sink.unpark();
        loop {
            if let Some(delta) = self.sink.pop() {
                return Poll::Ready(Some(self.provisional(delta)));
            }
            let State::Running(terminal) = &mut self.state else {
                return Poll::Ready(None);
            };
            match terminal.as_mut().poll(cx) {
                // Items written during the last poll come first; `None` after them.
                Poll::Ready(result) => self.state = State::Ended(result),
                Poll::Pending => {
                    if self.sink.park(cx.waker()) {
                        return Poll::Pending;
                    }
                }
            }
        }
    }

    fn provisional(&mut self, delta: StreamDelta) -> Provisional {
        match delta {
            StreamDelta::Fragment(text) => Provisional::Fragment(Fragment {
                text,
                attempt: self.attempt,
            }),
            StreamDelta::Restart { attempt } => {
                self.attempt = attempt;
                Provisional::Restart { attempt }
            }
            StreamDelta::Replay => {
                self.replayed = true;
                Provisional::Replay
            }
        }
    }

    /// The terminal result: the same as a plain call's. Provisional items not read yet are
    /// dropped unread.
    pub async fn finish(self) -> Result<Completion<'run, T>, AiFailure<'run>> {
        self.sink.discard();
        match self.state {
            State::Running(terminal) => terminal.await,
            State::Ended(result) => result,
        }
    }

    /// The provider request the latest fragments belong to (1 until a restart).
    pub fn attempt(&self) -> u32 {
        self.attempt
    }

    /// Whether the host said the terminal result is a recorded one ([`Provisional::Replay`]
    /// was read).
    pub fn is_replay(&self) -> bool {
        self.replayed
    }
}
