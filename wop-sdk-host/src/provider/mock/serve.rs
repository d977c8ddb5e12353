//! The [`ScriptedProvider`]: the steps not served yet (one shared script, and a script per run
//! when a run has its own), every request received and how many were in flight at most, and
//! serving one step as a whole or a streamed reply.
//!
//! The mock clamps each reported `outputTokens` to the request's `maxTokens`; a reply whose
//! declared `outputTokens` exceeds the request's budget is served truncated (`finishReason:
//! length`, the content cut), which makes budget growth visible.

use super::{Script, Step};
use crate::provider::class::SCRIPT_EXHAUSTED;
use crate::provider::{Provider, ProviderError, ProviderReply, ProviderRequest};
use serde_json::Value;
use std::collections::{HashMap, VecDeque};
use std::fmt;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use wop_sdk::host::{BoxFuture, RunId};
use wop_sdk::wire::{FinishReason, WireError};

/// What the provider holds: the steps not served yet and the requests received.
#[derive(Default)]
struct State {
    shared: VecDeque<Step>,
    per_run: HashMap<RunId, VecDeque<Step>>,
    received: Vec<ProviderRequest>,
    /// The steps served to each run, in order (what `cargo wop test` replays).
    served: HashMap<RunId, Vec<Step>>,
}

/// The scripted mock provider. Records every request it receives, and how many were in flight
/// at most, so tests can assert what the provider was really sent.
#[derive(Clone, Default)]
pub struct ScriptedProvider {
    state: Arc<Mutex<State>>,
    in_flight: Arc<AtomicUsize>,
    max_in_flight: Arc<AtomicUsize>,
}

impl fmt::Debug for ScriptedProvider {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ScriptedProvider")
            .field("received", &self.lock().received.len())
            .finish()
    }
}

/// Counts one request in flight while it lives.
struct InFlight<'a>(&'a AtomicUsize);

impl Drop for InFlight<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::SeqCst);
    }
}

impl ScriptedProvider {
    /// A provider serving `script` to every run that has no script of its own.
    pub fn new(script: Script) -> Self {
        let p = Self::default();
        p.lock().shared = script.0.into();
        p
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Gives `run` its own script.
    pub fn set_run_script(&self, run: &RunId, script: Script) {
        self.lock().per_run.insert(run.clone(), script.0.into());
    }

    /// Appends steps to the shared script.
    pub fn push(&self, steps: impl IntoIterator<Item = Step>) {
        self.lock().shared.extend(steps);
    }

    /// Every request received, in order.
    pub fn requests(&self) -> Vec<ProviderRequest> {
        self.lock().received.clone()
    }

    /// The requests received for one run.
    pub fn requests_of(&self, run: &RunId) -> Vec<ProviderRequest> {
        self.lock()
            .received
            .iter()
            .filter(|r| &r.run_id == run)
            .cloned()
            .collect()
    }

    /// How many requests were received.
    pub fn request_count(&self) -> usize {
        self.lock().received.len()
    }

    /// The most requests that were in flight at once.
    pub fn max_in_flight(&self) -> usize {
        self.max_in_flight.load(Ordering::SeqCst)
    }

    /// Takes the `script` field of a node's input, when there is one, as `run`'s script (the
    /// conformance fixture's contract); a malformed script is a `validation_error` naming the
    /// field under `input.script`.
    pub fn install_input_script(&self, run: &RunId, input: &Value) -> Result<(), WireError> {
        if let Some(script) = input.get("script") {
            let script = Script::from_json(script)
                .map_err(|e| WireError::validation(format!("input.{}", e.field), e.rule))?;
            self.set_run_script(run, script);
        }
        Ok(())
    }

    /// The steps served to `run`, in order.
    pub(crate) fn served_to(&self, run: &RunId) -> Vec<Step> {
        self.lock().served.get(run).cloned().unwrap_or_default()
    }

    /// Steps not served yet (shared and per-run).
    pub fn remaining(&self) -> usize {
        let s = self.lock();
        s.shared.len() + s.per_run.values().map(VecDeque::len).sum::<usize>()
    }
}

/// Cuts a reply to what fits `max_tokens` when it declares more: reported tokens clamped, the
/// reply served truncated.
fn clamp(mut reply: ProviderReply, max_tokens: u32) -> ProviderReply {
    if let Some(u) = &mut reply.usage {
        if let Some(out) = u.output_tokens
            && out > u64::from(max_tokens)
        {
            u.output_tokens = Some(u64::from(max_tokens));
            reply.finish_reason = FinishReason::Length;
            reply.content.truncate(reply.content.len() / 2);
        }
        u.total_tokens = match (u.input_tokens, u.output_tokens) {
            (Some(i), Some(o)) => Some(i + o),
            _ => u.total_tokens,
        };
    }
    reply
}

impl ScriptedProvider {
    /// Serves the next step of `request`'s script; `on_chunk` (a streamed call) receives the
    /// chunks one at a time, each after a turn of the scheduler, as a network stream would.
    async fn serve(
        &self,
        request: ProviderRequest,
        on_chunk: Option<&mut (dyn FnMut(&str) + Send)>,
    ) -> Result<ProviderReply, ProviderError> {
        let now = self.in_flight.fetch_add(1, Ordering::SeqCst) + 1;
        let _guard = InFlight(&self.in_flight);
        self.max_in_flight.fetch_max(now, Ordering::SeqCst);
        let max_tokens = request.max_tokens;
        let (step, exhausted) = {
            let mut s = self.lock();
            let (step, script) = match s.per_run.get_mut(&request.run_id) {
                Some(own) => (own.pop_front(), "the run's own script (set_run_script)"),
                None => (
                    s.shared.pop_front(),
                    "the shared script (ScriptedProvider::new)",
                ),
            };
            // What the test's author needs to find the request the script was one step short
            // for: it is told as it is (see `public_advice`).
            let exhausted = step.is_none().then(|| {
                let of_run = 1 + s
                    .received
                    .iter()
                    .filter(|r| r.run_id == request.run_id)
                    .count();
                format!(
                    "{SCRIPT_EXHAUSTED}: request {of_run} of run {} (node {}, attempt {} of its call; \
                     request {} the provider received) found no step left in {script}: add \
                     a step for it to the test's script",
                    request.run_id.as_str(),
                    request.node_id,
                    request.attempt,
                    s.received.len() + 1
                )
            });
            if let Some(step) = &step {
                s.served
                    .entry(request.run_id.clone())
                    .or_default()
                    .push(step.clone());
            }
            s.received.push(request);
            (step, exhausted)
        };
        // Let other tasks run, as a real provider round trip would.
        tokio::task::yield_now().await;
        let (chunks, end) = match step {
            Some(Step::Chunked { chunks, end }) => (chunks, *end),
            Some(other) => (Vec::new(), other),
            None => {
                let why = exhausted.unwrap_or_else(|| SCRIPT_EXHAUSTED.to_owned());
                return Err(ProviderError::Failed(why));
            }
        };
        let streamed = !chunks.is_empty();
        let reply = match end {
            // A scripted error reply reached the provider; the host may retry it at once.
            Step::Error(e) => Err(ProviderError::Transient {
                message: e,
                retry_after: Some(std::time::Duration::ZERO),
                reached: true,
            }),
            Step::Cut => Err(ProviderError::NoAnswer(
                "the connection closed before the reply was complete".into(),
            )),
            Step::Hang | Step::Chunked { .. } => Ok(None),
            Step::Reply {
                content,
                finish_reason,
                usage,
                mode,
            } => {
                let mut joined: Vec<u8> = chunks.concat().into_bytes();
                joined.extend_from_slice(&content);
                let reply = ProviderReply {
                    content: joined,
                    finish_reason,
                    usage,
                    mode,
                    model: Some("mock-1".into()),
                };
                Ok(Some(clamp(reply, max_tokens)))
            }
        };
        if let Some(on_chunk) = on_chunk {
            // The chunks a streamed call sees are those of the reply as served (a clamped reply
            // was cut short), or all of them before a failure.
            let mut left = match &reply {
                Ok(Some(r)) => r.content.len(),
                _ => usize::MAX,
            };
            let pieces: Vec<&str> = if streamed {
                chunks.iter().map(String::as_str).collect()
            } else {
                Vec::new()
            };
            for piece in pieces {
                if left == 0 {
                    break;
                }
                let mut cut = piece.len().min(left);
                while !piece.is_char_boundary(cut) {
                    cut -= 1;
                }
                left -= cut;
                on_chunk(&piece[..cut]);
                tokio::task::yield_now().await;
            }
            if !streamed && let Ok(Some(r)) = &reply {
                // A step without chunks reaches a streamed call as one chunk.
                on_chunk(&String::from_utf8_lossy(&r.content));
            }
        }
        match reply {
            Ok(Some(r)) => Ok(r),
            Ok(None) => std::future::pending().await,
            Err(e) => Err(e),
        }
    }
}

impl Provider for ScriptedProvider {
    fn name(&self) -> &str {
        "mock"
    }

    /// Every name: the script stands in for whichever provider a pack names, so a pack runs
    /// unchanged against it.
    fn serves(&self, _name: &str) -> bool {
        true
    }

    fn generate<'a>(
        &'a self,
        request: ProviderRequest,
    ) -> BoxFuture<'a, Result<ProviderReply, ProviderError>> {
        Box::pin(self.serve(request, None))
    }

    fn generate_stream<'a>(
        &'a self,
        request: ProviderRequest,
        on_chunk: &'a mut (dyn FnMut(&str) + Send),
    ) -> BoxFuture<'a, Result<ProviderReply, ProviderError>> {
        Box::pin(self.serve(request, Some(on_chunk)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_streamed_reply_is_its_chunks_and_a_plain_call_gets_them_joined() {
        let p = ScriptedProvider::new(Script(vec![
            Step::chunks(["Once", " upon"], 2),
            Step::chunks(["Once", " upon"], 2),
            Step::chunks(["Half"], 0).then(Step::Error("reset".into())),
        ]));
        let request = ProviderRequest {
            run_id: RunId::new("r"),
            node_id: "n".into(),
            provider: "mock".into(),
            model: "m".into(),
            system_prompt: None,
            messages: Arc::new([]),
            max_tokens: 100,
            temperature: None,
            stop_sequences: None,
            response_schema: None,
            mode: None,
            attempt: 1,
        };
        let mut seen = Vec::new();
        let mut on_chunk = |c: &str| seen.push(c.to_owned());
        let reply = p
            .generate_stream(request.clone(), &mut on_chunk)
            .await
            .expect("reply");
        assert_eq!(seen, ["Once", " upon"]);
        assert_eq!(reply.content, b"Once upon");
        let plain = p.generate(request.clone()).await.expect("reply");
        assert_eq!(plain.content, b"Once upon");
        let mut seen = Vec::new();
        let mut on_chunk = |c: &str| seen.push(c.to_owned());
        let failed = p.generate_stream(request, &mut on_chunk).await;
        assert!(matches!(failed, Err(ProviderError::Transient { .. })));
        assert_eq!(seen, ["Half"]);
    }

    #[test]
    fn a_step_written_as_json_reads_back_as_itself() {
        let steps = [
            Step::json(&serde_json::json!({"title": "T"}), 4),
            Step::text("prose", 2).without_usage(),
            Step::text("cut short", 9).finish(FinishReason::Length),
            Step::Reply {
                content: vec![0xff, 0x41],
                finish_reason: FinishReason::Stop,
                usage: None,
                mode: None,
            },
            Step::Error("HTTP 429 Too Many Requests".into()),
            Step::Hang,
            Step::Cut,
            Step::chunks(["Once", " upon"], 2),
            Step::chunks(["Half"], 0).then(Step::Error("reset".into())),
        ];
        for (i, step) in steps.iter().enumerate() {
            let json = step.to_json();
            assert_eq!(Step::from_json(&json, i).as_ref(), Ok(step), "{json}");
        }
    }
}
