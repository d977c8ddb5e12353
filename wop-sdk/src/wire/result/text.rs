//! The result as the journal's JSON text, written directly.

use super::{CallAiResult, SemanticStatus};

impl CallAiResult {
    /// The result as JSON text: the bytes `serde_json::to_string` writes for it, written
    /// directly (field names as literals, no per-key escaping). It is the exact text a journal
    /// records and a replay reads back, made once per completed call.
    pub fn to_text(&self) -> String {
        let mut w = TextWriter {
            out: String::with_capacity(160),
            first: true,
        };
        if let Some(data) = &self.data {
            w.key("data");
            match serde_json::to_string(data) {
                Ok(text) => w.out.push_str(&text),
                Err(_) => w.out.push_str("null"),
            }
        }
        if let Some(content) = &self.content {
            w.key("content");
            crate::wire::canonical::push_str_json(content, &mut w.out);
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
            crate::wire::canonical::push_str_json(model, &mut w.out);
        }
        if let Some(id) = &self.attempt_id {
            w.key("attemptId");
            crate::wire::canonical::push_str_json(id, &mut w.out);
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
            inner
                .out
                .push_str(if a.usage_complete { "true" } else { "false" });
            if let Some(mode) = a.structured_output {
                inner.key("structuredOutput");
                inner.string_literal(mode.as_str());
            }
            w.out = inner.end();
        }
        w.end()
    }
}

/// Writes a JSON object whose keys are known literals (nothing to escape).
struct TextWriter {
    out: String,
    first: bool,
}

impl TextWriter {
    fn key(&mut self, key: &str) {
        self.out.push(if self.first { '{' } else { ',' });
        self.first = false;
        self.out.push('"');
        self.out.push_str(key);
        self.out.push_str("\":");
    }

    /// A string value with nothing to escape (a closed-set spelling).
    fn string_literal(&mut self, value: &str) {
        self.out.push('"');
        self.out.push_str(value);
        self.out.push('"');
    }

    fn opt_u64(&mut self, key: &str, value: Option<u64>) {
        if let Some(n) = value {
            self.key(key);
            self.out.push_str(itoa::Buffer::new().format(n));
        }
    }

    fn end(mut self) -> String {
        if self.first {
            self.out.push('{');
        }
        self.out.push('}');
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
