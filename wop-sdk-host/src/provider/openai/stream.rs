//! A streamed Chat Completions reply (`stream: true`): server-sent events read as they come.
//!
//! The request is the plain one with `stream: true` and `stream_options: {include_usage: true}`
//! (a server that does not know the option ignores it or sends no usage). Each event's `data:`
//! is a `chat.completion.chunk`: `choices[0].delta.content` is text, handed on at once;
//! `delta.refusal` pieces make a refusal (`content-filter`, the text kept private as for a plain
//! reply); `choices[0].finish_reason` ends the generation; the chunk with `usage` (after the
//! finish, with an empty `choices`) gives the usage, and without it the usage is unknown (the
//! call's `usageComplete` is then `false`); `data: [DONE]` ends the stream.
//!
//! The stream must end with `[DONE]` or at least with a finish reason; a stream that breaks off
//! before either is no answer (something was generated, how much is unknown). An `error` event
//! is a transient failure that reached the provider.
//!
//! The SSE framing (lines ending in `\n`, `\r\n` or `\r`; `data:` fields joined with `\n`; a
//! blank line ends an event; comments and other fields ignored) is read by [`Events`], by hand:
//! it is a few lines, and the crates that do it wrap a `futures` byte stream this provider does
//! not otherwise use.

use super::reply::ApiUsage;
use crate::local::{ProviderError, ProviderReply, ProviderRequest};
use serde::{Deserialize, Serialize};
use wop_sdk::wire::{FinishReason, StructuredOutputMode, Usage};

/// What a streamed request adds to the plain body.
#[derive(Serialize)]
pub(crate) struct StreamBody<B: Serialize> {
    #[serde(flatten)]
    pub(crate) body: B,
    pub(crate) stream: bool,
    pub(crate) stream_options: StreamOptions,
}

#[derive(Serialize)]
pub(crate) struct StreamOptions {
    pub(crate) include_usage: bool,
}

/// The `data:` of the events in a byte stream, one event at a time.
#[derive(Debug, Default)]
pub(crate) struct Events {
    line: Vec<u8>,
    data: Vec<u8>,
    has_data: bool,
    /// The previous byte was a `\r` (a `\n` right after it ends nothing more).
    after_cr: bool,
}

impl Events {
    /// Feeds bytes; each complete event's data goes to `on_event`. `max` bounds one line and one
    /// event's data: past it, the error.
    pub(crate) fn feed(
        &mut self,
        bytes: &[u8],
        max: usize,
        on_event: &mut dyn FnMut(&[u8]) -> Result<(), ProviderError>,
    ) -> Result<(), ProviderError> {
        for &b in bytes {
            if self.after_cr && b == b'\n' {
                self.after_cr = false;
                continue;
            }
            self.after_cr = b == b'\r';
            if b == b'\n' || b == b'\r' {
                self.end_line(on_event)?;
            } else {
                if self.line.len() >= max {
                    return Err(ProviderError::Failed(format!(
                        "a server-sent event line exceeds the {max}-byte limit"
                    )));
                }
                self.line.push(b);
            }
        }
        if self.data.len() > max {
            return Err(ProviderError::Failed(format!(
                "a server-sent event exceeds the {max}-byte limit"
            )));
        }
        Ok(())
    }

    fn end_line(
        &mut self,
        on_event: &mut dyn FnMut(&[u8]) -> Result<(), ProviderError>,
    ) -> Result<(), ProviderError> {
        let line = std::mem::take(&mut self.line);
        if line.is_empty() {
            if self.has_data {
                let data = std::mem::take(&mut self.data);
                self.has_data = false;
                on_event(&data)?;
            }
            return Ok(());
        }
        if line[0] == b':' {
            return Ok(());
        }
        let (field, value) = match line.iter().position(|&c| c == b':') {
            Some(i) => {
                let v = &line[i + 1..];
                (&line[..i], v.strip_prefix(b" ").unwrap_or(v))
            }
            None => (&line[..], &[][..]),
        };
        if field == b"data" {
            if self.has_data {
                self.data.push(b'\n');
            }
            self.data.extend_from_slice(value);
            self.has_data = true;
        }
        Ok(())
    }
}

#[derive(Deserialize)]
struct Chunk {
    #[serde(default)]
    choices: Vec<ChunkChoice>,
    #[serde(default)]
    usage: Option<ApiUsage>,
    #[serde(default)]
    model: Option<String>,
    #[serde(default)]
    error: Option<serde_json::Value>,
}

#[derive(Deserialize)]
struct ChunkChoice {
    #[serde(default)]
    delta: Option<Delta>,
    #[serde(default)]
    finish_reason: Option<String>,
}

#[derive(Deserialize)]
struct Delta {
    #[serde(default)]
    content: Option<String>,
    #[serde(default)]
    refusal: Option<String>,
}

/// A streamed reply as it is read.
#[derive(Debug, Default)]
pub(crate) struct Reply {
    content: String,
    refusal: String,
    finish: Option<String>,
    usage: Option<Usage>,
    model: Option<String>,
    done: bool,
}

impl Reply {
    /// Reads one event's data: text goes to `on_text`.
    pub(crate) fn event(
        &mut self,
        data: &[u8],
        limit: usize,
        on_text: &mut dyn FnMut(&str),
    ) -> Result<(), ProviderError> {
        if data == b"[DONE]" {
            self.done = true;
            return Ok(());
        }
        let chunk: Chunk = serde_json::from_slice(data).map_err(|e| {
            ProviderError::Failed(format!(
                "a server-sent event ({} bytes) is not a chat completion chunk: {e}",
                data.len()
            ))
        })?;
        if let Some(error) = chunk.error {
            let excerpt: String = error.to_string().chars().take(512).collect();
            return Err(ProviderError::Transient {
                message: format!("the stream reported an error: {excerpt}"),
                retry_after: None,
                reached: true,
            });
        }
        if chunk.model.is_some() {
            self.model = chunk.model;
        }
        if let Some(u) = chunk.usage {
            self.usage = u.usage();
        }
        if let Some(choice) = chunk.choices.into_iter().next() {
            if let Some(delta) = choice.delta {
                if let Some(r) = delta.refusal.filter(|r| !r.is_empty()) {
                    self.refusal.push_str(&r);
                }
                if let Some(text) = delta.content.filter(|t| !t.is_empty()) {
                    if self.content.len() + text.len() > limit {
                        return Err(ProviderError::Failed(format!(
                            "the streamed reply exceeds the {limit}-byte limit"
                        )));
                    }
                    self.content.push_str(&text);
                    on_text(&text);
                }
            }
            // Some servers write `""` on every chunk before the last: no reason yet.
            if choice
                .finish_reason
                .as_deref()
                .is_some_and(|r| !r.is_empty())
            {
                self.finish = choice.finish_reason;
            }
        }
        Ok(())
    }

    /// Whether `data: [DONE]` was read.
    pub(crate) fn is_done(&self) -> bool {
        self.done
    }

    /// The reply, once the stream ended cleanly; an error when it ended before the generation
    /// did.
    pub(crate) fn finish(self, request: &ProviderRequest) -> Result<ProviderReply, ProviderError> {
        if !self.done && self.finish.is_none() && self.refusal.is_empty() {
            return Err(ProviderError::NoAnswer(format!(
                "the stream ended after {} bytes of text without a finish reason or `[DONE]`",
                self.content.len()
            )));
        }
        let mode = request
            .response_schema
            .as_ref()
            .map(|_| request.mode.unwrap_or(StructuredOutputMode::Native));
        let (content, finish) = if self.refusal.is_empty() {
            let text = match mode {
                Some(StructuredOutputMode::Prompt) => {
                    super::reply::unfence(&self.content).to_owned()
                }
                _ => self.content,
            };
            let reason = super::reply::finish_reason(
                self.finish.as_deref(),
                self.usage.as_ref(),
                request.max_tokens,
            );
            (text, reason)
        } else {
            (self.refusal, FinishReason::ContentFilter)
        };
        Ok(ProviderReply {
            content: content.into_bytes(),
            finish_reason: finish,
            usage: self.usage,
            mode,
            model: self.model,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn events_of(feeds: &[&[u8]]) -> Vec<String> {
        let mut events = Events::default();
        let mut out = Vec::new();
        for f in feeds {
            events
                .feed(f, 1 << 20, &mut |d| {
                    out.push(String::from_utf8_lossy(d).into_owned());
                    Ok(())
                })
                .expect("feeds");
        }
        out
    }

    #[test]
    fn framing_follows_the_sse_rules() {
        // Split anywhere, any line ending, comments and other fields ignored, data lines joined.
        assert_eq!(
            events_of(&[
                b"data: a\n",
                b"\ndata:b\r\n\r",
                b"\n: keep-alive\n\nevent: x\ndata: c\ndata: d\r\r"
            ]),
            ["a", "b", "c\nd"]
        );
        // An event cut off before its blank line is not dispatched.
        assert_eq!(events_of(&[b"data: a\n\ndata: b"]), ["a"]);
        let mut events = Events::default();
        let long = vec![b'x'; 64];
        assert!(matches!(
            events.feed(&long, 16, &mut |_| Ok(())),
            Err(ProviderError::Failed(_))
        ));
    }

    fn request() -> ProviderRequest {
        super::super::test_request(None, None)
    }

    fn read(events: &[&str]) -> (Vec<String>, Result<ProviderReply, ProviderError>) {
        let mut reply = Reply::default();
        let mut texts = Vec::new();
        for e in events {
            if let Err(err) = reply.event(e.as_bytes(), 1 << 20, &mut |t| texts.push(t.to_owned()))
            {
                return (texts, Err(err));
            }
        }
        (texts, reply.finish(&request()))
    }

    #[test]
    fn deltas_usage_and_the_end() {
        let (texts, reply) = read(&[
            r#"{"model":"m-2","choices":[{"delta":{"role":"assistant","content":""}}]}"#,
            r#"{"choices":[{"delta":{"content":"Hel"}}]}"#,
            r#"{"choices":[{"delta":{"content":"lo"},"finish_reason":"stop"}]}"#,
            r#"{"choices":[],"usage":{"prompt_tokens":3,"completion_tokens":2,"total_tokens":5}}"#,
            "[DONE]",
        ]);
        assert_eq!(texts, ["Hel", "lo"]);
        let reply = reply.expect("reply");
        assert_eq!(reply.content, b"Hello");
        assert_eq!(reply.finish_reason, FinishReason::Stop);
        assert_eq!(reply.model.as_deref(), Some("m-2"));
        assert_eq!(
            reply.usage,
            Some(Usage {
                input_tokens: Some(3),
                output_tokens: Some(2),
                total_tokens: Some(5)
            })
        );
        // Without the usage chunk, the usage is unknown.
        let (_, reply) = read(&[
            r#"{"choices":[{"delta":{"content":"Hi"},"finish_reason":"length"}]}"#,
            "[DONE]",
        ]);
        let reply = reply.expect("reply");
        assert_eq!(reply.usage, None);
        assert_eq!(reply.finish_reason, FinishReason::Length);
    }

    #[test]
    fn refusals_errors_and_broken_streams() {
        let (texts, reply) = read(&[
            r#"{"choices":[{"delta":{"refusal":"I can't"}}]}"#,
            r#"{"choices":[{"delta":{"refusal":" help."},"finish_reason":"stop"}]}"#,
            "[DONE]",
        ]);
        assert!(texts.is_empty(), "a refusal's text is not a fragment");
        let reply = reply.expect("reply");
        assert_eq!(reply.finish_reason, FinishReason::ContentFilter);
        assert_eq!(reply.content, b"I can't help.");
        let (texts, reply) = read(&[r#"{"choices":[{"delta":{"content":"Once"}}]}"#]);
        assert_eq!(texts, ["Once"]);
        assert!(matches!(reply, Err(ProviderError::NoAnswer(_))));
        let (_, reply) = read(&[r#"{"error":{"message":"overloaded"}}"#]);
        assert!(matches!(
            reply,
            Err(ProviderError::Transient { reached: true, .. })
        ));
        let (_, reply) = read(&["<html>"]);
        assert!(matches!(reply, Err(ProviderError::Failed(_))));
    }
}
