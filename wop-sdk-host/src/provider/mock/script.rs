//! The mock's script: [`Step`]s served in order, built in code or parsed from JSON.
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
//!   {"hang": true},
//!   {"chunks": ["{\"text\": \"Mara", " climbed\"}"], "usage": {"outputTokens": 12}},
//!   {"chunks": ["Once upon", " a time"], "cut": true} ]
//! ```
//!
//! - `content`: a string (sent as is) or any other JSON value (sent as its JSON text).
//! - `finishReason`: `stop` (default), `length`, `content-filter`.
//! - `usage`: `{inputTokens?, outputTokens?}` (`inputTokens` 10 when only `outputTokens` is
//!   given, as a reply with no `usage` reports), or `false` for a reply that reports none.
//! - `mode`: `native` or `prompt`, the structured-output mode the reply declares.
//! - `error`: the provider answers with this error (nothing generated): a transient error that
//!   reached the provider, so the host may retry it at once, and counts it as an attempt that
//!   reported no usage.
//! - `hang`: the reply never comes.
//! - `raw`: base64-free escape for hostile tests: an array of byte values sent as the content.
//! - `chunks`: an array of strings, the reply as a streamed call receives it, one chunk at a time
//!   (instead of `content`; the reply's content is the chunks joined). With `error`, `hang` or
//!   `cut` beside it, the chunks are sent and then the step fails that way: a failure after some
//!   chunks. A plain (not streamed) call receives the joined reply, or the failure, at once.
//! - `cut`: the connection closes before the reply is complete (after the `chunks`, if any): the
//!   host gets no answer, so the dispatch is ambiguous.
//!

use serde_json::Value;
use wop_sdk::wire::{FinishReason, StructuredOutputMode, Usage, WireError};

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
    /// The connection closes before the reply is complete: no answer.
    Cut,
    /// A streamed reply: `chunks`, one at a time, then `end` (a [`Step::Reply`] whose content
    /// follows the chunks, usually empty; or a failure after the chunks).
    Chunked {
        /// The pieces of text, in order.
        chunks: Vec<String>,
        /// What follows them.
        end: Box<Step>,
    },
}

impl Step {
    /// A reply with JSON content and `output_tokens` of usage.
    pub fn json(content: &Value, output_tokens: u64) -> Self {
        Self::stop(content.to_string().into_bytes(), output_tokens)
    }

    /// A reply with text content and `output_tokens` of usage.
    pub fn text(content: &str, output_tokens: u64) -> Self {
        Self::stop(content.as_bytes().to_vec(), output_tokens)
    }

    /// A reply that stops normally, with the scripted usage of `output_tokens`.
    fn stop(content: Vec<u8>, output_tokens: u64) -> Self {
        Self::Reply {
            content,
            finish_reason: FinishReason::Stop,
            usage: Some(scripted_usage(output_tokens)),
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

    /// A streamed reply of `chunks` (joined, they are the content) and `output_tokens` of usage.
    pub fn chunks<I, S>(chunks: I, output_tokens: u64) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        Self::Chunked {
            chunks: chunks.into_iter().map(Into::into).collect(),
            end: Box::new(Self::text("", output_tokens)),
        }
    }

    /// The same chunks, then `end` instead of the reply's completion (a failure after some
    /// chunks: [`Step::Error`], [`Step::Cut`], [`Step::Hang`]). On a step without chunks, `end`
    /// itself.
    #[must_use]
    pub fn then(self, end: Step) -> Self {
        match self {
            Self::Chunked { chunks, .. } => Self::Chunked {
                chunks,
                end: Box::new(end),
            },
            _ => end,
        }
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
        if let Some(chunks) = m.get("chunks") {
            let Value::Array(items) = chunks else {
                return Err(WireError::validation(
                    at("chunks"),
                    "must be an array of strings",
                ));
            };
            let chunks = items
                .iter()
                .enumerate()
                .map(|(i, c)| {
                    c.as_str().map(str::to_owned).ok_or_else(|| {
                        WireError::validation(at(&format!("chunks[{i}]")), "must be a string")
                    })
                })
                .collect::<Result<Vec<_>, _>>()?;
            if m.contains_key("content") || m.contains_key("raw") {
                return Err(WireError::validation(
                    at("content"),
                    "cannot be given with `chunks`: the chunks joined are the content",
                ));
            }
            let mut rest = m.clone();
            rest.remove("chunks");
            let end = Self::from_json(&Value::Object(rest), index)?;
            return Ok(Self::Chunked {
                chunks,
                end: Box::new(end),
            });
        }
        if m.get("cut") == Some(&Value::Bool(true)) {
            return Ok(Self::Cut);
        }
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
            None => Some(scripted_usage(0)),
            Some(Value::Bool(false)) => None,
            Some(u @ Value::Object(_)) => {
                let mut usage = Usage::from_json(u, &at("usage"))
                    .map_err(|e| WireError::validation(e.field, e.rule))?;
                // The scripted provider's own report: its default input tokens unless the step
                // names them (a provider that reports output tokens reports its input too).
                if usage.input_tokens.is_none() && usage.output_tokens.is_some() {
                    usage.input_tokens = scripted_usage(0).input_tokens;
                }
                Some(usage)
            }
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

impl Step {
    /// The step in the JSON script format [`Step::from_json`] reads (and the harness of
    /// openwop-app's contract serves): `content` as text (`raw` bytes when it is not UTF-8),
    /// `usage` (`false` when withheld), `finishReason`, `mode`; `error`, `hang`, `cut`, `chunks`.
    pub fn to_json(&self) -> Value {
        let mut m = serde_json::Map::new();
        match self {
            Self::Reply {
                content,
                finish_reason,
                usage,
                mode,
            } => {
                match std::str::from_utf8(content) {
                    Ok(text) => m.insert("content".into(), Value::String(text.to_owned())),
                    Err(_) => m.insert("raw".into(), serde_json::json!(content)),
                };
                m.insert(
                    "usage".into(),
                    usage.map_or(Value::Bool(false), |u| {
                        serde_json::to_value(u).unwrap_or(Value::Null)
                    }),
                );
                if *finish_reason != FinishReason::Stop {
                    m.insert("finishReason".into(), Value::from(finish_reason.as_str()));
                }
                if let Some(mode) = mode {
                    m.insert("mode".into(), Value::from(mode.as_str()));
                }
            }
            Self::Error(e) => {
                m.insert("error".into(), Value::String(e.clone()));
            }
            Self::Hang => {
                m.insert("hang".into(), Value::Bool(true));
            }
            Self::Cut => {
                m.insert("cut".into(), Value::Bool(true));
            }
            Self::Chunked { chunks, end } => {
                if let Value::Object(rest) = end.to_json() {
                    m = rest;
                }
                m.remove("content");
                m.insert("chunks".into(), serde_json::json!(chunks));
            }
        }
        Value::Object(m)
    }
}

/// The usage a scripted reply reports unless told otherwise: 10 input tokens and
/// `output_tokens`.
fn scripted_usage(output_tokens: u64) -> Usage {
    Usage {
        input_tokens: Some(10),
        output_tokens: Some(output_tokens),
        total_tokens: None,
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

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn chunks_parse_with_what_follows_them_and_errors_name_the_field() {
        let s = Script::from_json(&json!([
            {"chunks": ["a", "b"], "usage": {"inputTokens": 10, "outputTokens": 3}},
            {"chunks": ["a"], "error": "reset"},
            {"chunks": ["a"], "cut": true},
            {"chunks": ["a"], "hang": true},
            {"cut": true}
        ]))
        .expect("parses");
        assert_eq!(s.0[0], Step::chunks(["a", "b"], 3));
        assert_eq!(
            s.0[1],
            Step::chunks(["a"], 0).then(Step::Error("reset".into()))
        );
        assert_eq!(s.0[2], Step::chunks(["a"], 0).then(Step::Cut));
        assert_eq!(s.0[3], Step::chunks(["a"], 0).then(Step::Hang));
        assert_eq!(s.0[4], Step::Cut);

        let field = |v: Value| Script::from_json(&v).expect_err("refused").field;
        assert_eq!(field(json!([{"chunks": "ab"}])), "script[0].chunks");
        assert_eq!(
            field(json!([{}, {"chunks": ["a", 1]}])),
            "script[1].chunks[1]"
        );
        assert_eq!(
            field(json!([{"chunks": ["a"], "content": "a"}])),
            "script[0].content"
        );
    }
}
