//! The progress lines of a streamed call: each fragment shows the scene so far (on a terminal,
//! or to a sink; on plain output to a file or a pipe, fragments get no line of their own), a host
//! retry discards what was shown, and the closing chunk says how the stream ended: a summary line
//! per attempt.

use serde_json::Value;
use std::collections::BTreeMap;
use std::sync::Arc;
use wop_sdk::wire::RunEvent;
use wop_sdk_host::cli::Progress;

/// The streamed calls being shown, per node: the text of the current attempt so far.
#[derive(Clone, Default)]
pub struct Streams(Arc<std::sync::Mutex<BTreeMap<String, Shown>>>);

/// One node's streamed call as shown: which call and attempt, and its text so far.
#[derive(Default)]
struct Shown {
    call: u64,
    attempt: u64,
    text: String,
}

impl Streams {
    /// The event's own progress line, then the stream's, if it is part of one. On plain output
    /// (not a terminal) a fragment gets no line: each attempt ends with one (discarded, failed or
    /// complete, with its size).
    pub fn event(&self, progress: &Progress, e: &RunEvent) {
        progress.event(e);
        let fragment =
            e.kind() == "output.chunk" && e.payload().get("isLast") != Some(&Value::Bool(true));
        let lines = self.lines(e);
        if fragment && progress.is_plain() {
            return;
        }
        for line in lines {
            progress.line(&line);
        }
    }

    /// The progress lines a streamed call's events make: each fragment shows the scene so far;
    /// a host retry discards what was shown; the closing chunk says how the stream ended.
    pub fn lines(&self, e: &RunEvent) -> Vec<String> {
        let kind = e.kind();
        if !matches!(
            kind,
            "output.chunk" | "envelope.retry-attempted" | "envelope.nl-to-format-engaged"
        ) {
            return Vec::new();
        }
        let payload = e.payload();
        let text = |k: &str| payload.get(k).and_then(Value::as_str).unwrap_or("");
        let num = |k: &str| payload.get(k).and_then(Value::as_u64);
        let node = match text("nodeId") {
            "" => "?".to_owned(),
            n => n.to_owned(),
        };
        let mut open = self
            .0
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if kind != "output.chunk" {
            return match open.get_mut(&node) {
                Some(s) if !s.text.is_empty() => {
                    let line = format!(
                        "{node}: call {}: {} chars of attempt {} discarded",
                        s.call,
                        s.text.chars().count(),
                        s.attempt
                    );
                    s.text.clear();
                    vec![line]
                }
                _ => Vec::new(),
            };
        }
        let call = num("x-callIndex").unwrap_or(0);
        if payload.get("isLast") == Some(&Value::Bool(true)) {
            let shown = open.remove(&node).unwrap_or_default();
            let chars = shown.text.chars().count();
            let attempt = shown.attempt.max(1);
            return vec![if payload.get("x-failed").is_some() {
                format!(
                    "{node}: call {call}: the stream failed after {chars} chars: fragments discarded, \
                     the call failed"
                )
            } else {
                format!("{node}: call {call}: stream complete, {chars} chars (attempt {attempt})")
            }];
        }
        let attempt = num("x-attempt").unwrap_or(1);
        let s = open.entry(node.clone()).or_default();
        if s.call != call || s.attempt != attempt {
            *s = Shown {
                call,
                attempt,
                text: String::new(),
            };
        }
        s.text.push_str(text("chunk"));
        vec![format!(
            "{node}: call {call}, attempt {attempt}: {} chars so far ...{}",
            s.text.chars().count(),
            tail(&s.text, 40)
        )]
    }
}

/// The last `n` characters of `text`.
fn tail(text: &str, n: usize) -> String {
    let count = text.chars().count();
    text.chars().skip(count.saturating_sub(n)).collect()
}
