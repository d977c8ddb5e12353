//! The sweep: RFC 0248 §A.1 to §A.5, §B.1 and §B.3 held over a generated space instead of
//! a few hand-picked runs. A host that breaks a MUST only on calls of 3 requests, only for one
//! value of `maxAttempts`, only on plain calls or only when usage is missing from an attempt
//! that is not the last, passes the eight legs and the extra checks; it fails here.
//!
//! The space ([`cases`]): structured calls that need 1 to 4 requests (invalid replies, then a
//! valid one), each reply's usage reported or withheld (every position, every combination), and
//! plain calls of one request, each whole and streamed, with no `retry` or with every
//! `maxAttempts` from 1 to 16 (above the host's ceiling included); every call that completes is
//! replayed on a fork. The suite wrote each script, so it knows what every request returned.

use super::judges::{attempts_of, attempts_replayed, usage_events};
use super::target::{ConformanceTarget, Observed};
use serde_json::{Value, json};
use wop_sdk::caps::DEFAULT_CEILING;
use wop_sdk::rules::retry::{MAX_ATTEMPTS, MIN_ATTEMPTS};
use wop_sdk::wire::ErrorCode;

/// §A.1: `count` equals the requests sent.
pub const COUNT: &str = "A.1 count";
/// §A.2: `outputTokens` is the sum of what the attempts reported; `usageComplete` is false when
/// any attempt reported none, true otherwise.
pub const USAGE: &str = "A.2 outputTokens/usageComplete";
/// §A.3: `structuredOutput` is present (`native` or `prompt`) on a call with `responseSchema`,
/// absent without.
pub const MODE: &str = "A.3 structuredOutput";
/// §A.4: the result's `usage` is the final attempt's.
pub const FINAL_USAGE: &str = "A.4 usage";
/// §A.5: on replay `attempts` equals the recorded value.
pub const REPLAY: &str = "A.5 replay";
/// §A: the host's result broke the record's rules (the runtime refused it as `protocol_error`).
pub const RESULT: &str = "A result";
/// §B.1: no more than `maxAttempts` requests.
pub const CAP: &str = "B.1 maxAttempts";
/// §B.3: a `maxAttempts` above the ceiling is clamped, not refused.
pub const CLAMP: &str = "B.3 clamp";

/// One call of the space.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Case {
    /// A `responseSchema` is sent.
    pub structured: bool,
    /// The call is streamed (`ctx.call_ai_stream`).
    pub streamed: bool,
    /// The requests the call needs: `requests - 1` invalid replies, then a valid one.
    pub requests: usize,
    /// Bit `i` set: reply `i` withholds its usage.
    pub withheld: u32,
    /// The call's `retry.maxAttempts`, if any.
    pub max_attempts: Option<u8>,
}

impl Case {
    /// Output tokens reply `i` reports (distinct per position, so a sum names its terms).
    fn tokens(i: usize) -> u64 {
        1 << (i + 2)
    }

    fn reported(&self, i: usize) -> bool {
        self.withheld & (1 << i) == 0
    }

    /// The fixture input: the script and the call's `retry`.
    pub fn input(&self) -> Value {
        let usage = |i: usize| {
            if self.reported(i) {
                json!({"outputTokens": Self::tokens(i)})
            } else {
                json!(false)
            }
        };
        let mut script: Vec<Value> = (0..self.requests - 1)
            .map(|i| json!({"content": "not json", "usage": usage(i)}))
            .collect();
        let last = self.requests - 1;
        script.push(if self.structured {
            json!({"content": {"answer": "ok"}, "usage": usage(last)})
        } else {
            json!({"content": "ok", "usage": usage(last)})
        });
        let mut input =
            json!({"script": script, "schema": self.structured, "stream": self.streamed});
        if let Some(m) = self.max_attempts {
            input["retry"] = json!({"maxAttempts": m});
        }
        input
    }

    /// The requests the host may send for this call.
    fn cap(&self, ceiling: u8, honoured: bool) -> usize {
        if !self.structured {
            return 1;
        }
        let m = self.max_attempts.filter(|_| honoured).unwrap_or(ceiling);
        usize::from(m.min(ceiling))
    }
}

impl std::fmt::Display for Case {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let kind = if self.structured {
            "structured"
        } else {
            "plain"
        };
        let how = if self.streamed { "streamed" } else { "whole" };
        write!(
            f,
            "{kind} {how}, {} request(s), usage withheld {:#b}, maxAttempts {}",
            self.requests,
            self.withheld,
            self.max_attempts
                .map_or_else(|| "absent".to_owned(), |m| m.to_string())
        )
    }
}

/// Every case of the space, generated: structured calls of 1 to 4 requests with every pattern
/// of withheld usage, plain calls of one request with and without usage, each whole and
/// streamed, with no `retry` and with every valid `maxAttempts`.
pub fn cases() -> Vec<Case> {
    let caps: Vec<Option<u8>> = std::iter::once(None)
        .chain((MIN_ATTEMPTS..=MAX_ATTEMPTS).map(Some))
        .collect();
    let mut out = Vec::new();
    for &max_attempts in &caps {
        for streamed in [false, true] {
            for requests in 1..=4usize {
                for withheld in 0..(1u32 << requests) {
                    out.push(Case {
                        structured: true,
                        streamed,
                        requests,
                        withheld,
                        max_attempts,
                    });
                }
            }
            for withheld in 0..2 {
                out.push(Case {
                    structured: false,
                    streamed,
                    requests: 1,
                    withheld,
                    max_attempts,
                });
            }
        }
    }
    out
}

/// A MUST broken in one case.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Finding {
    /// Which MUST ([`COUNT`], [`USAGE`], [`MODE`], [`FINAL_USAGE`], [`REPLAY`], [`RESULT`],
    /// [`CAP`], [`CLAMP`]).
    pub must: &'static str,
    /// The case.
    pub case: Case,
    /// What was seen.
    pub reason: String,
}

/// Runs every case against `target` and judges each MUST on it; an empty list means every MUST
/// held everywhere. §A is judged when the host advertises `callAccounting.attempts`, §B when it
/// advertises `retryPolicy` (without it, `retry` is ignored and the ceiling binds).
pub async fn sweep(target: &dyn ConformanceTarget) -> Vec<Finding> {
    let doc = target.host().capability_document();
    let ca = doc.call_accounting.unwrap_or_default();
    let ceiling = doc
        .reliability
        .as_ref()
        .map_or(DEFAULT_CEILING, |r| r.max_retry_attempts);
    let mut findings = Vec::new();
    for case in cases() {
        let obs = target.run_fixture(case.input()).await;
        let mut found = |must, reason: String| findings.push(Finding { must, case, reason });
        let cap = case.cap(ceiling, ca.retry_policy);
        if case.requests > cap {
            // §B.1: the request that would get the valid reply must never be sent.
            if obs.output.is_ok() {
                found(
                    CAP,
                    format!(
                        "the call completed, so it sent {} requests; the cap is {cap}",
                        case.requests
                    ),
                );
            }
            let sent = usage_events(&obs.events).len();
            if sent > cap {
                found(
                    CAP,
                    format!("{sent} `provider.usage` events, above the cap {cap}"),
                );
            }
            continue;
        }
        let error = obs.output.as_ref().err();
        if let Some(e) = error {
            if e.error == ErrorCode::ProtocolError {
                found(RESULT, e.to_string());
            }
            if case.max_attempts.is_some_and(|m| m > ceiling)
                && e.error == ErrorCode::ValidationError
            {
                found(
                    CLAMP,
                    format!("refused ({e}) instead of clamped to the ceiling {ceiling}"),
                );
            }
            // A host MAY make fewer requests than the cap (§B.1): nothing more to judge.
            continue;
        }
        if !ca.attempts {
            continue;
        }
        judge_attempts(&case, &obs, &mut found);
        let fork = target.replay(&obs.run_id).await;
        if fork.output.is_ok()
            && let Err(reason) = attempts_replayed(&obs, &fork)
        {
            found(REPLAY, reason);
        }
    }
    findings
}

/// §A.1 to §A.4 on a completed call.
fn judge_attempts(case: &Case, obs: &Observed, found: &mut impl FnMut(&'static str, String)) {
    let a = match attempts_of(obs) {
        Ok(a) => a,
        Err(reason) => return found(COUNT, reason),
    };
    let count = a.get("count").and_then(Value::as_u64);
    if count != u64::try_from(case.requests).ok() {
        found(
            COUNT,
            format!(
                "`count` is {count:?}; the call made {} requests",
                case.requests
            ),
        );
    }
    let reported: u64 = (0..case.requests)
        .filter(|&i| case.reported(i))
        .map(Case::tokens)
        .sum();
    let complete = (0..case.requests).all(|i| case.reported(i));
    let sum = a.get("outputTokens").and_then(Value::as_u64);
    // None reported: the sum over no attempt is 0, or absent.
    let sum_ok = sum == Some(reported) || (reported == 0 && sum.is_none());
    if !sum_ok {
        found(
            USAGE,
            format!("`outputTokens` is {sum:?}; the attempts reported {reported}"),
        );
    }
    let mode = a.get("structuredOutput").and_then(Value::as_str);
    let mode_ok = if case.structured {
        matches!(mode, Some("native" | "prompt"))
    } else {
        a.get("structuredOutput").is_none()
    };
    if !mode_ok {
        found(
            MODE,
            format!(
                "`structuredOutput` is {mode:?} on a {} call",
                if case.structured {
                    "structured"
                } else {
                    "plain"
                }
            ),
        );
    }
    // §A.4, on the host's own answer: the final attempt's usage, or none when it withheld it.
    let last = case.requests - 1;
    let expected = case.reported(last).then(|| Case::tokens(last));
    let answered = obs
        .answers
        .last()
        .and_then(|r| r.get("usage"))
        .and_then(|u| u.get("outputTokens"))
        .and_then(Value::as_u64);
    if answered != expected {
        found(
            FINAL_USAGE,
            format!(
                "`usage.outputTokens` is {answered:?}; the final attempt reported {expected:?}"
            ),
        );
    }
    let flag = a.get("usageComplete").and_then(Value::as_bool);
    if flag != Some(complete) {
        found(
            USAGE,
            format!("`usageComplete` is {flag:?}; every attempt reported usage: {complete}"),
        );
    }
}
