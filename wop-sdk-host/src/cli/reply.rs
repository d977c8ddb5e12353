//! The progress line of a provider's answer that no run event describes: a reply without usage,
//! a failed request, a request that never reached the provider, a wait the server asked for.

use crate::provider::{ProviderError, ProviderReply, ProviderRequest};
use std::time::Duration;

/// The progress line for a provider's answer that no run event describes: a reply that withheld
/// its usage (no `provider.usage` follows it) or a request the provider failed. `None` for a
/// reply with usage, whose `provider.usage` event has the line.
///
/// Requests are numbered as RFC 0248 counts attempts (`request.attempt`, the number
/// `attempts.count`, `envelope.retry-*` and the trace's `wop.attempt` use): a connection that
/// never reached the provider is not a provider request, takes no number of its own and does not
/// count against `maxAttempts`; the request is tried again under the same number.
/// The provider's error text is private to the host's diagnostics (and `-v`) and is never shown
/// here: only its class (`HTTP 404`, `refused`, `tls`, `timeout` …).
pub fn reply_line(
    request: &ProviderRequest,
    answer: &Result<ProviderReply, ProviderError>,
) -> Option<String> {
    let node = &request.node_id;
    match answer {
        Ok(reply) if reply.usage.and_then(|u| u.output_tokens).is_some() => None,
        Ok(_) => Some(format!(
            "{node}: provider request answered, output tokens unknown (the reply withheld its usage)"
        )),
        Err(e) if e.never_sent() => Some(format!(
            "{node}: request {} never reached the provider ({}): not received, not an attempt, \
             not counted against maxAttempts",
            request.attempt,
            e.class()
        )),
        Err(ProviderError::NoAnswer(_)) => Some(format!(
            "{node}: request {} sent, no answer ({}): its outcome is unknown",
            request.attempt,
            e_class(answer)
        )),
        Err(e) => {
            let mut line = format!(
                "{node}: request {} failed ({}), no reply to use",
                request.attempt,
                e.class()
            );
            if let ProviderError::Transient { retry_after, .. } = e {
                line.push_str(&match retry_after {
                    Some(d) => format!(
                        "; the server asks for a wait of {} before another request (Retry-After)",
                        seconds(*d)
                    ),
                    None => "; another request may follow after a backoff".to_owned(),
                });
            }
            Some(line)
        }
    }
}

fn e_class(answer: &Result<ProviderReply, ProviderError>) -> String {
    answer
        .as_ref()
        .err()
        .map_or_else(String::new, |e| e.class().to_string())
}

/// A wait in words: `20 s`, `1.5 s`, `250 ms`.
fn seconds(d: Duration) -> String {
    if d.as_millis() < 1000 {
        format!("{} ms", d.as_millis())
    } else if d.subsec_millis() == 0 {
        format!("{} s", d.as_secs())
    } else {
        format!("{:.1} s", d.as_secs_f64())
    }
}
