//! The reply guard: what the host accepts from a provider. An answer must come within the
//! timeout (else the dispatch is ambiguous), a reply must fit the size limit, and JSON must not
//! nest deeper than the depth limit (checked before parsing, so a hostile reply cannot exhaust
//! the stack or the memory).

use crate::provider::{Provider, ProviderError, ProviderReply, ProviderRequest};
use serde_json::Value;
use std::time::Duration;

#[derive(Clone, Copy, Debug)]
pub(crate) struct ReplyGuard {
    pub(crate) timeout: Duration,
    pub(crate) max_bytes: usize,
    pub(crate) max_depth: usize,
}

impl ReplyGuard {
    /// Sends one request, bounded in time. A reply larger than the limit is returned as is for
    /// [`ReplyGuard::oversized`] to judge (its usage still counts: it was generated).
    pub(crate) async fn send(
        &self,
        provider: &dyn Provider,
        request: ProviderRequest,
    ) -> Result<ProviderReply, ProviderError> {
        tokio::time::timeout(self.timeout, provider.generate(request))
            .await
            .unwrap_or_else(|_| {
                Err(ProviderError::NoAnswer(format!(
                    "no answer within {} ms",
                    self.timeout.as_millis()
                )))
            })
    }

    /// [`ReplyGuard::send`] for a streamed call: chunks go to `on_chunk` until the size limit
    /// (past it nothing more is forwarded; the whole reply is judged as any other).
    pub(crate) async fn send_stream(
        &self,
        provider: &dyn Provider,
        request: ProviderRequest,
        on_chunk: &mut (dyn FnMut(&str) + Send),
    ) -> Result<ProviderReply, ProviderError> {
        let mut forwarded = 0usize;
        let max = self.max_bytes;
        let mut bounded = |chunk: &str| {
            forwarded = forwarded.saturating_add(chunk.len());
            if forwarded <= max {
                on_chunk(chunk);
            }
        };
        tokio::time::timeout(
            self.timeout,
            provider.generate_stream(request, &mut bounded),
        )
        .await
        .unwrap_or_else(|_| {
            Err(ProviderError::NoAnswer(format!(
                "no complete answer within {} ms",
                self.timeout.as_millis()
            )))
        })
    }

    /// Why a reply is too large, if it is.
    pub(crate) fn oversized(&self, reply: &ProviderReply) -> Option<String> {
        (reply.content.len() > self.max_bytes).then(|| {
            format!(
                "reply of {} bytes exceeds the {}-byte limit",
                reply.content.len(),
                self.max_bytes
            )
        })
    }

    /// Parses a reply as JSON with the nesting limit (serde_json's own recursion limit also
    /// holds).
    pub(crate) fn parse_json(&self, text: &str) -> Result<Value, String> {
        let mut depth = 0usize;
        let mut in_str = false;
        let mut escaped = false;
        for b in text.bytes() {
            if in_str {
                match b {
                    _ if escaped => escaped = false,
                    b'\\' => escaped = true,
                    b'"' => in_str = false,
                    _ => {}
                }
                continue;
            }
            match b {
                b'"' => in_str = true,
                b'[' | b'{' => {
                    depth += 1;
                    if depth > self.max_depth {
                        return Err(format!("JSON nested deeper than {}", self.max_depth));
                    }
                }
                b']' | b'}' => depth = depth.saturating_sub(1),
                _ => {}
            }
        }
        serde_json::from_str(text).map_err(|e| format!("not valid JSON: {e}"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn depth_is_refused_before_parsing_and_strings_do_not_count() {
        let g = ReplyGuard {
            timeout: Duration::from_secs(1),
            max_bytes: 10,
            max_depth: 2,
        };
        assert!(g.parse_json(r#"{"a": ["[[[[{{{{"]}"#).is_ok());
        assert!(
            g.parse_json("[[[1]]]")
                .expect_err("refused")
                .contains("deeper than 2")
        );
        assert!(
            g.parse_json("{")
                .expect_err("refused")
                .starts_with("not valid JSON")
        );
    }
}
