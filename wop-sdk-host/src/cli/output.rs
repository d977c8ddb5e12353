//! Bytes leaving the command line: standard output that a closed pipe silences, JSON printing,
//! and the JSON shapes of a run (never Rust's `{"Ok": …}`).

use crate::local::{ProviderError, ProviderReply, ProviderRequest};
use serde::Serialize;
use serde_json::Value;
use std::collections::BTreeMap;
use std::io::{self, Write};
use std::sync::{Arc, Mutex, PoisonError};
use wop_sdk::budget::BudgetStatus;
use wop_sdk::node::{CallReport, NodeOutcome};
use wop_sdk::wire::ErrorEnvelope;

/// Standard output for `| head`: once the reader has gone (`BrokenPipe`), every later write is
/// dropped quietly, so the command ends as it would have, without an error about the pipe.
#[derive(Debug)]
pub(super) struct QuietPipe<W: Write> {
    inner: W,
    closed: bool,
}

impl<W: Write> QuietPipe<W> {
    pub(super) fn new(inner: W) -> Self {
        Self {
            inner,
            closed: false,
        }
    }
}

impl<W: Write> Write for QuietPipe<W> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        if self.closed {
            return Ok(buf.len());
        }
        match self.inner.write(buf) {
            Err(e) if e.kind() == io::ErrorKind::BrokenPipe => {
                self.closed = true;
                Ok(buf.len())
            }
            other => other,
        }
    }

    fn flush(&mut self) -> io::Result<()> {
        if self.closed {
            return Ok(());
        }
        match self.inner.flush() {
            Err(e) if e.kind() == io::ErrorKind::BrokenPipe => {
                self.closed = true;
                Ok(())
            }
            other => other,
        }
    }
}

/// Pretty JSON and a final newline.
pub(super) fn print_json(out: &mut dyn Write, v: &impl Serialize) -> io::Result<()> {
    serde_json::to_writer_pretty(&mut *out, v).map_err(io::Error::other)?;
    out.write_all(b"\n")
}

/// What the provider itself received for one node, counted from what happened to each request.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Sent {
    /// Requests written to the provider: those it answered and those with no answer
    /// (`requests + noAnswer`). Connections that never reached it are not here (`notSent`).
    pub sent: u32,
    /// Requests the provider answered (a reply or an error status): known to have reached it.
    pub requests: u32,
    /// Of those, requests the provider answered with an error (no reply to use).
    pub failed: u32,
    /// Requests sent that got no answer (a timeout, a connection closed after sending): the
    /// provider may have received them, and generated something; nobody knows. In `sent`, not
    /// in `requests`.
    pub no_answer: u32,
    /// Requests that never reached the provider (connection refused, DNS, TLS handshake): not
    /// received, not in `requests`.
    pub not_sent: u32,
    /// Output tokens the replies reported, summed; `null` when requests were received and no
    /// reply reported its output tokens (unknown, never 0).
    pub output_tokens: Option<u64>,
    /// False when a reply withheld its usage or a request got no answer: `output_tokens` is then
    /// a floor. An error status generated nothing and withholds nothing.
    pub usage_complete: bool,
}

impl Sent {
    fn nothing() -> Self {
        Self {
            output_tokens: Some(0),
            usage_complete: true,
            ..Self::default()
        }
    }
}

/// Per node id, what the provider received, fed by a [`super::WatchedProvider`].
#[derive(Clone, Debug, Default)]
pub(super) struct SentLog(Arc<Mutex<BTreeMap<String, Sent>>>);

impl SentLog {
    pub(super) fn record(
        &self,
        request: &ProviderRequest,
        answer: &Result<ProviderReply, ProviderError>,
    ) {
        let mut map = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        let s = map
            .entry(String::from(&*request.node_id))
            .or_insert_with(Sent::nothing);
        let reported = |s: &mut Sent, n: Option<u64>| match n {
            Some(t) => s.output_tokens = Some(s.output_tokens.unwrap_or(0) + t),
            None => {
                s.usage_complete = false;
                if s.output_tokens == Some(0) {
                    s.output_tokens = None;
                }
            }
        };
        match answer {
            Err(e) if e.never_sent() => s.not_sent += 1,
            Err(ProviderError::NoAnswer(_)) => {
                s.sent += 1;
                s.no_answer += 1;
                reported(s, None);
            }
            Err(_) => {
                // An error status: received, and nothing generated (no usage to withhold).
                s.sent += 1;
                s.requests += 1;
                s.failed += 1;
            }
            Ok(reply) => {
                s.sent += 1;
                s.requests += 1;
                reported(s, reply.usage.and_then(|u| u.output_tokens));
            }
        }
    }

    /// What `node_id` sent; nothing sent is complete usage of zero tokens.
    pub(super) fn of(&self, node_id: &str) -> Sent {
        self.0
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .get(node_id)
            .copied()
            .unwrap_or_else(Sent::nothing)
    }
}

/// A node's budget at the end, with the part charged at the worst case.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct BudgetJson {
    /// The node's `max_calls`; `null` without a limit.
    pub max_calls: Option<u32>,
    /// Provider requests charged to the budget.
    pub charged: u32,
    /// Of `charged`, what calls that reported no attempts were charged: their worst case,
    /// reserved before dispatch (a failed call carries no attempts).
    pub charged_worst_case: u32,
    /// What is left; `null` without a limit.
    pub remaining: Option<u32>,
}

impl BudgetJson {
    fn new(b: BudgetStatus, calls: &[CallReport]) -> Self {
        Self {
            max_calls: b.max_calls,
            charged: b.used,
            charged_worst_case: calls
                .iter()
                .filter(|c| c.requests.is_none())
                .map(|c| c.charged)
                .sum(),
            remaining: b.remaining(),
        }
    }
}

/// One node execution as JSON: `status` is `completed` (with `output`) or `failed` (with
/// `error`); each call's figures are `null` where the host did not report them.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct NodeRunJson<'a> {
    /// The run.
    pub run_id: &'a str,
    /// The node instance.
    pub node_id: &'a str,
    /// `completed` or `failed`.
    pub status: &'static str,
    /// The output, when completed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub output: Option<&'a Value>,
    /// The public error, when failed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<&'a ErrorEnvelope>,
    /// Each call as the node saw it.
    pub calls: &'a [CallReport],
    /// The budget at the end.
    pub budget: BudgetJson,
    /// What the provider itself received in this run (nothing, for a replay).
    pub provider: Sent,
}

impl<'a> NodeRunJson<'a> {
    pub(super) fn new(o: &'a NodeOutcome, provider: Sent) -> Self {
        let (status, output, error) = match &o.result {
            Ok(v) => ("completed", Some(v), None),
            Err(e) => ("failed", None, Some(e)),
        };
        Self {
            run_id: o.run_id.as_str(),
            node_id: &o.node_id,
            status,
            output,
            error,
            calls: &o.calls,
            budget: BudgetJson::new(o.budget, &o.calls),
            provider,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    struct Closed;
    impl Write for Closed {
        fn write(&mut self, _: &[u8]) -> io::Result<usize> {
            Err(io::ErrorKind::BrokenPipe.into())
        }
        fn flush(&mut self) -> io::Result<()> {
            Err(io::ErrorKind::BrokenPipe.into())
        }
    }

    struct Full;
    impl Write for Full {
        fn write(&mut self, _: &[u8]) -> io::Result<usize> {
            Err(io::Error::other("disk full"))
        }
        fn flush(&mut self) -> io::Result<()> {
            Ok(())
        }
    }

    #[test]
    fn a_closed_pipe_is_quiet_other_errors_are_not() {
        let mut w = QuietPipe::new(Closed);
        assert!(writeln!(w, "a line").is_ok());
        assert!(w.flush().is_ok());
        assert!(print_json(&mut w, &serde_json::json!({"a": 1})).is_ok());
        let mut w = QuietPipe::new(Full);
        assert!(writeln!(w, "a line").is_err());
    }

    #[test]
    fn json_ends_with_a_newline() {
        let mut buf = Vec::new();
        print_json(&mut buf, &serde_json::json!({"a": [1, 2]})).expect("write");
        assert!(buf.ends_with(b"}\n"));
    }
}
