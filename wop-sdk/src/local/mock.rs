//! The scripted mock provider: one reply per provider request, from a script built in code or
//! loaded from JSON.
//!
//! # Script format (JSON)
//!
//! An array of steps, served in order, one per provider request:
//!
//! ```json
//! [ {"content": "not json", "usage": {"inputTokens": 10, "outputTokens": 40}},
//!   {"content": {"title": "…"}, "usage": {"outputTokens": 1800}, "mode": "native"},
//!   {"content": "…", "usage": false},
//!   {"finishReason": "content-filter", "content": "I can't help with that."},
//!   {"error": "503 from upstream"},
//!   {"hang": true} ]
//! ```
//!
//! - `content`: a string (sent as is) or any other JSON value (sent as its JSON text).
//! - `finishReason`: `stop` (default), `length`, `content-filter`.
//! - `usage`: `{inputTokens?, outputTokens?}`, or `false` for a reply that reports none.
//! - `mode`: `native` or `prompt`, the structured-output mode the reply declares.
//! - `error`: the provider answers with this error (nothing generated): a transient error that
//!   reached the provider, so the host may retry it at once, and counts it as an attempt that
//!   reported no usage.
//! - `hang`: the reply never comes.
//! - `raw`: base64-free escape for hostile tests: an array of byte values sent as the content.
//!
//! The mock clamps each reported `outputTokens` to the request's `maxTokens`; a reply whose
//! declared `outputTokens` exceeds the request's budget is served truncated (`finishReason:
//! length`, the content cut), which makes budget growth visible.

use super::provider::{Provider, ProviderError, ProviderReply, ProviderRequest};
use crate::host::{BoxFuture, RunId};
use crate::wire::{FinishReason, StructuredOutputMode, Usage, WireError};
use serde_json::Value;
use std::collections::{HashMap, VecDeque};
use std::fmt;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

/// One scripted reply.
#[derive(Clone, Debug, PartialEq)]
pub enum Step {
    /// A reply.
    Reply {
        /// The content bytes.
        content: Vec<u8>,
        /// Why it stopped.
        finish_reason: FinishReason,
        /// Usage, or `None` for `usage: false`.
        usage: Option<Usage>,
        /// The declared mode.
        mode: Option<StructuredOutputMode>,
    },
    /// A provider error.
    Error(String),
    /// No reply ever.
    Hang,
}

impl Step {
    /// A reply with JSON content and `output_tokens` of usage.
    pub fn json(content: &Value, output_tokens: u64) -> Self {
        Self::Reply {
            content: content.to_string().into_bytes(),
            finish_reason: FinishReason::Stop,
            usage: Some(Usage {
                input_tokens: Some(10),
                output_tokens: Some(output_tokens),
                total_tokens: None,
            }),
            mode: None,
        }
    }

    /// A reply with text content and `output_tokens` of usage.
    pub fn text(content: &str, output_tokens: u64) -> Self {
        Self::Reply {
            content: content.as_bytes().to_vec(),
            finish_reason: FinishReason::Stop,
            usage: Some(Usage {
                input_tokens: Some(10),
                output_tokens: Some(output_tokens),
                total_tokens: None,
            }),
            mode: None,
        }
    }

    /// The same reply without usage (`usage: false`).
    #[must_use]
    pub fn without_usage(mut self) -> Self {
        if let Self::Reply { usage, .. } = &mut self {
            *usage = None;
        }
        self
    }

    /// The same reply with another finish reason.
    #[must_use]
    pub fn finish(mut self, reason: FinishReason) -> Self {
        if let Self::Reply { finish_reason, .. } = &mut self {
            *finish_reason = reason;
        }
        self
    }

    /// The same reply declaring a structured-output mode.
    #[must_use]
    pub fn mode(mut self, m: StructuredOutputMode) -> Self {
        if let Self::Reply { mode, .. } = &mut self {
            *mode = Some(m);
        }
        self
    }

    /// Parses one step of the JSON script format; errors name the field (`script[3].usage`).
    pub fn from_json(v: &Value, index: usize) -> Result<Self, WireError> {
        let at = |k: &str| format!("script[{index}].{k}");
        let Value::Object(m) = v else {
            return Err(WireError::validation(
                format!("script[{index}]"),
                "must be an object",
            ));
        };
        if let Some(e) = m.get("error") {
            return match e {
                Value::String(s) => Ok(Self::Error(s.clone())),
                _ => Err(WireError::validation(at("error"), "must be a string")),
            };
        }
        if m.get("hang") == Some(&Value::Bool(true)) {
            return Ok(Self::Hang);
        }
        let content = match (m.get("raw"), m.get("content")) {
            (Some(Value::Array(bytes)), _) => bytes
                .iter()
                .map(|b| b.as_u64().and_then(|b| u8::try_from(b).ok()))
                .collect::<Option<Vec<u8>>>()
                .ok_or_else(|| {
                    WireError::validation(at("raw"), "must be an array of byte values 0..=255")
                })?,
            (Some(_), _) => {
                return Err(WireError::validation(
                    at("raw"),
                    "must be an array of byte values",
                ));
            }
            (None, Some(Value::String(s))) => s.clone().into_bytes(),
            (None, Some(other)) => other.to_string().into_bytes(),
            (None, None) => Vec::new(),
        };
        let finish_reason = match m.get("finishReason") {
            None => FinishReason::Stop,
            Some(Value::String(s)) => FinishReason::parse(s).ok_or_else(|| {
                WireError::validation(at("finishReason"), "must be stop, length or content-filter")
            })?,
            Some(_) => {
                return Err(WireError::validation(
                    at("finishReason"),
                    "must be a string",
                ));
            }
        };
        let usage = match m.get("usage") {
            None => Some(Usage {
                input_tokens: Some(10),
                output_tokens: Some(0),
                total_tokens: None,
            }),
            Some(Value::Bool(false)) => None,
            Some(u @ Value::Object(_)) => Some(
                Usage::from_json(u, &at("usage"))
                    .map_err(|e| WireError::validation(e.field, e.rule))?,
            ),
            Some(_) => {
                return Err(WireError::validation(
                    at("usage"),
                    "must be an object or `false`",
                ));
            }
        };
        let mode = match m.get("mode").and_then(Value::as_str) {
            None => None,
            Some("native") => Some(StructuredOutputMode::Native),
            Some("prompt") => Some(StructuredOutputMode::Prompt),
            Some(_) => {
                return Err(WireError::validation(
                    at("mode"),
                    "must be `native` or `prompt`",
                ));
            }
        };
        Ok(Self::Reply {
            content,
            finish_reason,
            usage,
            mode,
        })
    }
}

/// A script: steps served in order.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Script(pub Vec<Step>);

impl Script {
    /// Parses the JSON script format.
    pub fn from_json(v: &Value) -> Result<Self, WireError> {
        match v {
            Value::Array(items) => items
                .iter()
                .enumerate()
                .map(|(i, s)| Step::from_json(s, i))
                .collect::<Result<_, _>>()
                .map(Self),
            _ => Err(WireError::validation("script", "must be an array of steps")),
        }
    }

    /// Reads a script file; errors name the file and the field.
    pub fn from_file(path: &std::path::Path) -> Result<Self, String> {
        let text = std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
        let v: Value = serde_json::from_str(&text)
            .map_err(|e| format!("{}: not JSON: {e}", path.display()))?;
        Self::from_json(&v).map_err(|e| format!("{}: {e}", path.display()))
    }
}

impl FromIterator<Step> for Script {
    fn from_iter<I: IntoIterator<Item = Step>>(iter: I) -> Self {
        Self(iter.into_iter().collect())
    }
}

#[derive(Default)]
struct State {
    shared: VecDeque<Step>,
    per_run: HashMap<RunId, VecDeque<Step>>,
    received: Vec<ProviderRequest>,
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

impl Provider for ScriptedProvider {
    fn name(&self) -> &str {
        "mock"
    }

    fn generate<'a>(
        &'a self,
        request: ProviderRequest,
    ) -> BoxFuture<'a, Result<ProviderReply, ProviderError>> {
        Box::pin(async move {
            let now = self.in_flight.fetch_add(1, Ordering::SeqCst) + 1;
            let _guard = InFlight(&self.in_flight);
            self.max_in_flight.fetch_max(now, Ordering::SeqCst);
            let max_tokens = request.max_tokens;
            let step = {
                let mut s = self.lock();
                let step = match s.per_run.get_mut(&request.run_id) {
                    Some(own) => own.pop_front(),
                    None => s.shared.pop_front(),
                };
                s.received.push(request);
                step
            };
            // Let other tasks run, as a real provider round trip would.
            tokio::task::yield_now().await;
            match step {
                None => Err(ProviderError::Failed("the mock script is exhausted".into())),
                // A scripted error reply reached the provider; the host may retry it at once.
                Some(Step::Error(e)) => Err(ProviderError::Transient {
                    message: e,
                    retry_after: Some(std::time::Duration::ZERO),
                    reached: true,
                }),
                Some(Step::Hang) => std::future::pending().await,
                Some(Step::Reply {
                    content,
                    finish_reason,
                    usage,
                    mode,
                }) => {
                    let reply = ProviderReply {
                        content,
                        finish_reason,
                        usage,
                        mode,
                        model: Some("mock-1".into()),
                    };
                    Ok(clamp(reply, max_tokens))
                }
            }
        })
    }
}
