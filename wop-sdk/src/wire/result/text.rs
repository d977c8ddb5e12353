//! The result as the journal's JSON text, written directly.

use super::{CallAiResult, SemanticStatus};
use std::cell::RefCell;

thread_local! {
    /// The text is written here and copied out at its exact length: one allocation a result,
    /// none for growing (a result's length is not known before it is written).
    static SCRATCH: RefCell<Vec<u8>> = const { RefCell::new(Vec::new()) };
}

/// The most room the scratch text keeps between results.
const SCRATCH_KEPT: usize = 64 * 1024;

impl CallAiResult {
    /// The result as JSON text: the bytes `serde_json::to_string` writes for it, written
    /// directly (field names as literals, no per-key escaping). It is the exact text a journal
    /// records and a replay reads back, made once per completed call.
    pub fn to_text(&self) -> String {
        SCRATCH.with(|scratch| match scratch.try_borrow_mut() {
            Ok(mut scratch) => {
                scratch.clear();
                let text = self.write_text(std::mem::take(&mut *scratch));
                let out = utf8(&text);
                // A large result's room is not kept for the thread's life.
                if text.capacity() <= SCRATCH_KEPT {
                    *scratch = text;
                }
                out
            }
            // Only reached if writing a result wrote another one (it does not).
            Err(_) => utf8(&self.write_text(Vec::new())),
        })
    }

    fn write_text(&self, out: Vec<u8>) -> Vec<u8> {
        let mut w = TextWriter { out, first: true };
        if let Some(data) = &self.data {
            w.key("data");
            w.json(data);
        }
        if let Some(content) = &self.content {
            w.key("content");
            w.json(content);
        }
        if let Some(u) = &self.usage {
            w.key("usage");
            let mut inner = TextWriter {
                out: std::mem::take(&mut w.out),
                first: true,
            };
            inner.opt_u64("inputTokens", u.input_tokens);
            inner.opt_u64("outputTokens", u.output_tokens);
            inner.opt_u64("totalTokens", u.total_tokens);
            w.out = inner.end();
        }
        if let Some(f) = self.finish_reason {
            w.key("finishReason");
            w.string_literal(f.as_str());
        }
        if let Some(model) = &self.model {
            w.key("model");
            w.json(model);
        }
        if let Some(id) = &self.attempt_id {
            w.key("attemptId");
            w.json(id);
        }
        if let Some(status) = self.semantic_status {
            w.key("semanticStatus");
            w.string_literal(match status {
                SemanticStatus::Ok => "ok",
                SemanticStatus::InvalidOutput => "invalid_output",
            });
        }
        if let Some(a) = &self.attempts {
            w.key("attempts");
            let mut inner = TextWriter {
                out: std::mem::take(&mut w.out),
                first: true,
            };
            inner.opt_u64("count", Some(u64::from(a.count)));
            inner.opt_u64("outputTokens", a.output_tokens);
            inner.key("usageComplete");
            inner.raw(if a.usage_complete { "true" } else { "false" });
            if let Some(mode) = a.structured_output {
                inner.key("structuredOutput");
                inner.string_literal(mode.as_str());
            }
            w.out = inner.end();
        }
        w.end()
    }
}

/// The written bytes as text (they are: every piece written is UTF-8).
fn utf8(bytes: &[u8]) -> String {
    match std::str::from_utf8(bytes) {
        Ok(text) => text.to_owned(),
        Err(_) => String::from_utf8_lossy(bytes).into_owned(),
    }
}

/// Writes a JSON object whose keys are known literals (nothing to escape).
struct TextWriter {
    out: Vec<u8>,
    first: bool,
}

impl TextWriter {
    fn raw(&mut self, text: &str) {
        self.out.extend_from_slice(text.as_bytes());
    }

    fn key(&mut self, key: &str) {
        self.out.push(if self.first { b'{' } else { b',' });
        self.first = false;
        self.out.push(b'"');
        self.raw(key);
        self.raw("\":");
    }

    /// A value as `serde_json` writes it (a string escaped as it escapes), in place.
    fn json<T: serde::Serialize + ?Sized>(&mut self, value: &T) {
        let at = self.out.len();
        if serde_json::to_writer(&mut self.out, value).is_err() {
            self.out.truncate(at);
            self.raw("null");
        }
    }

    /// A string value with nothing to escape (a closed-set spelling).
    fn string_literal(&mut self, value: &str) {
        self.out.push(b'"');
        self.raw(value);
        self.out.push(b'"');
    }

    fn opt_u64(&mut self, key: &str, value: Option<u64>) {
        if let Some(n) = value {
            self.key(key);
            self.raw(itoa::Buffer::new().format(n));
        }
    }

    fn end(mut self) -> Vec<u8> {
        if self.first {
            self.out.push(b'{');
        }
        self.out.push(b'}');
        self.out
    }
}

#[cfg(test)]
mod tests {
    use crate::wire::{
        Attempts, CallAiResult, FinishReason, SemanticStatus, StructuredOutputMode, Usage,
    };
    use serde_json::json;

    /// Every combination of present and absent fields, with text that needs escaping.
    #[test]
    fn the_text_is_what_serde_json_writes() {
        for mask in 0u32..(1 << 9) {
            let on = |bit: u32| mask & (1 << bit) != 0;
            let result = CallAiResult {
                data: on(0).then(|| json!({"line": "a \"quoted\"\nline", "n": [1, 2.5, null]})),
                content: on(1).then(|| "tab\there é 🦀 \u{1}".to_owned()),
                usage: on(2).then_some(Usage {
                    input_tokens: on(3).then_some(12),
                    output_tokens: Some(u64::MAX),
                    total_tokens: on(4).then_some(0),
                }),
                finish_reason: on(5).then_some(if on(6) {
                    FinishReason::ContentFilter
                } else {
                    FinishReason::Stop
                }),
                model: on(6).then(|| "m\\1".to_owned()),
                attempt_id: on(7).then(|| "att_0001".to_owned()),
                semantic_status: on(8).then_some(if on(0) {
                    SemanticStatus::Ok
                } else {
                    SemanticStatus::InvalidOutput
                }),
                attempts: on(3).then_some(Attempts {
                    count: 3,
                    output_tokens: on(4).then_some(40),
                    usage_complete: on(5),
                    structured_output: on(6).then_some(StructuredOutputMode::Prompt),
                }),
            };
            let expected = serde_json::to_string(&result).expect("serialize");
            assert_eq!(result.to_text(), expected, "fields {mask:#b}");
        }
    }
}
