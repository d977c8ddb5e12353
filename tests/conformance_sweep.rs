//! The sweep of RFC 0248 over a generated space (`wop_sdk_host::conformance::sweep`): the local
//! host holds every MUST in every case, and a host double that breaks one MUST in one corner of
//! the space (one `maxAttempts`, one call length) is caught there, by that MUST only.

use serde_json::Value;
use std::collections::BTreeSet;
use std::sync::Arc;
use wop_sdk::host::{AttemptKey, BoxFuture, Host, HostFailure, HostLayer, StreamSink};
use wop_sdk::wire::{CallAiRequest, CallAiResult, ErrorCode, ErrorEnvelope};
use wop_sdk_host::conformance::LocalTarget;
use wop_sdk_host::conformance::sweep::{
    self, CAP, CLAMP, COUNT, FINAL_USAGE, Finding, MODE, REPLAY, RESULT, USAGE,
};
use wop_sdk_host::local::{LocalHost, ScriptedProvider};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Lie {
    /// §A.1: `count` one short, on calls of 3 requests under `maxAttempts: 7` only.
    CountShortAtSeven,
    /// §A.1: `count: 2` for a plain call (one request), under `maxAttempts: 5` only.
    PlainCountAtFive,
    /// §A: a sum below the final attempt's usage (a record that breaks its own rules), on calls
    /// of 2 requests under `maxAttempts: 14` only.
    SumBelowFinalAtFourteen,
    /// §A.3: no `structuredOutput` on a structured call of 2 requests under `maxAttempts: 6`.
    ModeMissingAtSix,
    /// §A.4: `usage` one token below the final attempt's, on calls of 2 requests under
    /// `maxAttempts: 15`.
    UsageNotFinalAtFifteen,
    /// §A.1: `count` one too many on streamed calls of 2 requests under `maxAttempts: 8` only.
    StreamCountAtEight,
    /// §A.2: `usageComplete: true` though an attempt withheld usage, on calls of 3 requests under
    /// `maxAttempts: 11` only.
    UsageCompleteAtEleven,
    /// §A.5: a replay fork's `outputTokens` one more than recorded, on calls of 2 requests under
    /// `maxAttempts: 13` only.
    ReplayDriftsAtThirteen,
    /// §B.1: `maxAttempts: 3` taken as 4, on a host whose ceiling is 8 (the legs and the extra
    /// checks try 1, 2 and 16).
    FourForThree,
    /// §B.3: `maxAttempts: 9` (above the ceiling of 3) refused instead of clamped.
    RefusesNine,
}

struct Liar {
    local: LocalHost,
    lie: Lie,
}

fn max_attempts(request: &CallAiRequest) -> Option<u8> {
    request.retry.and_then(|r| r.max_attempts)
}

impl HostLayer for Liar {
    fn inner(&self) -> &dyn Host {
        &self.local
    }

    /// Streamed calls: the lies of whole calls do not apply (they are whole-call corners).
    fn call_ai_stream<'a>(
        &'a self,
        key: &'a AttemptKey,
        request: &'a CallAiRequest,
        sink: &'a StreamSink,
    ) -> BoxFuture<'a, Result<CallAiResult, HostFailure>> {
        Box::pin(async move {
            let mut result = self.local.call_ai_stream(key, request, sink).await?;
            if let Some(a) = &mut result.attempts
                && self.lie == Lie::StreamCountAtEight
                && a.count == 2
                && max_attempts(request) == Some(8)
            {
                a.count = 3;
            }
            Ok(result)
        })
    }

    /// The fixture sends `retry` through the JSON edge: parsed as the host parses it, then the
    /// lying typed call.
    fn call_ai_json<'a>(
        &'a self,
        key: &'a AttemptKey,
        request: &'a Value,
    ) -> BoxFuture<'a, Result<CallAiResult, HostFailure>> {
        Box::pin(async move {
            match CallAiRequest::from_json_for_host(request, true) {
                Ok(typed) => HostLayer::call_ai(self, key, &typed).await,
                Err(e) => Err(self.local.refuse(key, e.to_envelope())),
            }
        })
    }

    fn call_ai<'a>(
        &'a self,
        key: &'a AttemptKey,
        request: &'a CallAiRequest,
    ) -> BoxFuture<'a, Result<CallAiResult, HostFailure>> {
        Box::pin(async move {
            let m = max_attempts(request);
            match self.lie {
                Lie::FourForThree if m == Some(3) => {
                    let mut widened = request.clone();
                    if let Some(r) = &mut widened.retry {
                        r.max_attempts = Some(4);
                    }
                    return self.local.call_ai(key, &widened).await;
                }
                Lie::RefusesNine if m == Some(9) => {
                    let e = ErrorEnvelope::new(ErrorCode::ValidationError, "maxAttempts too large")
                        .with_detail("field", "retry.maxAttempts");
                    return Err(self.local.refuse(key, e));
                }
                _ => {}
            }
            let mut result = self.local.call_ai(key, request).await?;
            let fork = key.run_id.as_str().contains(".replay-");
            let plain = request.response_schema.is_none();
            if let Some(a) = &mut result.attempts {
                match self.lie {
                    Lie::PlainCountAtFive if plain && m == Some(5) => a.count = 2,
                    Lie::ModeMissingAtSix if a.count == 2 && m == Some(6) => {
                        a.structured_output = None;
                    }
                    Lie::UsageNotFinalAtFifteen if a.count == 2 && m == Some(15) => {
                        if let Some(u) = &mut result.usage {
                            u.output_tokens = u.output_tokens.map(|n| n - 1);
                        }
                    }
                    Lie::SumBelowFinalAtFourteen
                        if a.count == 2
                            && m == Some(14)
                            && result
                                .usage
                                .and_then(|u| u.output_tokens)
                                .is_some_and(|n| n > 0) =>
                    {
                        a.output_tokens = Some(0);
                    }
                    _ => {}
                }
            }
            if let Some(a) = &mut result.attempts
                && self.lie == Lie::ReplayDriftsAtThirteen
                && fork
                && a.count == 2
                && m == Some(13)
            {
                a.output_tokens = a.output_tokens.map(|n| n + 1);
            }
            if let Some(a) = &mut result.attempts
                && a.count == 3
            {
                match self.lie {
                    Lie::CountShortAtSeven if m == Some(7) => a.count = 2,
                    Lie::UsageCompleteAtEleven if m == Some(11) && !a.usage_complete => {
                        a.usage_complete = true;
                        a.output_tokens = Some(a.output_tokens.unwrap_or(0));
                    }
                    _ => {}
                }
            }
            Ok(result)
        })
    }
}

/// The local host; a ceiling of 8 for the cap lie, so that a cap of 3 binds below it.
fn local(lie: Option<Lie>) -> LocalHost {
    let ceiling = if lie == Some(Lie::FourForThree) { 8 } else { 3 };
    LocalHost::rfc0248()
        .provider(ScriptedProvider::default())
        .max_retry_attempts(ceiling)
        .build()
}

async fn findings(lie: Option<Lie>) -> Vec<Finding> {
    let local = local(lie);
    let target = match lie {
        None => LocalTarget::new(local),
        Some(lie) => LocalTarget::through(
            local.clone(),
            Arc::new(Liar { local, lie }) as Arc<dyn Host>,
        ),
    };
    sweep::sweep(&target).await
}

#[test]
fn the_space_is_generated_whole() {
    let cases = sweep::cases();
    // 17 values of maxAttempts (absent, 1..=16) x whole and streamed x (30 structured + 2 plain).
    assert_eq!(cases.len(), 17 * 2 * 32);
    let unique: BTreeSet<String> = cases.iter().map(ToString::to_string).collect();
    assert_eq!(unique.len(), cases.len());
}

#[tokio::test]
async fn the_local_host_holds_every_must_in_every_case() {
    let found = findings(None).await;
    assert!(found.is_empty(), "{found:#?}");
}

/// The lie is caught by `must` alone, in exactly the cases `corner` picks.
async fn caught_in(lie: Lie, must: &str, corner: impl Fn(&sweep::Case) -> bool) {
    let found = findings(Some(lie)).await;
    assert!(!found.is_empty(), "{lie:?} passed the sweep");
    for f in &found {
        assert_eq!(f.must, must, "{lie:?}: {f:#?}");
    }
    // Caught in every case of its corner, and nowhere else.
    let caught: BTreeSet<String> = found.iter().map(|f| f.case.to_string()).collect();
    let expected: BTreeSet<String> = sweep::cases()
        .iter()
        .filter(|c| corner(c))
        .map(ToString::to_string)
        .collect();
    assert_eq!(caught, expected, "{lie:?}");
}

#[tokio::test]
async fn a_count_lie_on_one_call_length_and_one_cap_is_caught() {
    caught_in(Lie::CountShortAtSeven, COUNT, |c| {
        !c.streamed && c.requests == 3 && c.max_attempts == Some(7)
    })
    .await;
}

#[tokio::test]
async fn a_usage_lie_when_an_earlier_attempt_withheld_usage_is_caught() {
    caught_in(Lie::UsageCompleteAtEleven, USAGE, |c| {
        !c.streamed && c.requests == 3 && c.max_attempts == Some(11) && c.withheld != 0
    })
    .await;
    // The corner includes usage withheld by an attempt that is not the last.
    let found = findings(Some(Lie::UsageCompleteAtEleven)).await;
    assert!(found.iter().any(|f| f.case.withheld == 0b001));
}

#[tokio::test]
async fn a_cap_taken_one_wider_is_caught() {
    caught_in(Lie::FourForThree, CAP, |c| {
        !c.streamed && c.structured && c.requests == 4 && c.max_attempts == Some(3)
    })
    .await;
}

#[tokio::test]
async fn a_cap_above_the_ceiling_refused_is_caught() {
    // Calls of 4 requests fail under the ceiling of 3 anyway.
    caught_in(Lie::RefusesNine, CLAMP, |c| {
        !c.streamed && c.max_attempts == Some(9) && c.requests <= 3
    })
    .await;
}

#[tokio::test]
async fn a_replay_that_drifts_on_one_corner_is_caught() {
    caught_in(Lie::ReplayDriftsAtThirteen, REPLAY, |c| {
        !c.streamed && c.requests == 2 && c.max_attempts == Some(13)
    })
    .await;
}

/// Each of these lies passes the eight legs and the extra checks: only the sweep finds it.
#[tokio::test]
async fn the_legs_and_the_extra_checks_let_these_lies_through() {
    for lie in [
        Lie::CountShortAtSeven,
        Lie::StreamCountAtEight,
        Lie::PlainCountAtFive,
        Lie::ModeMissingAtSix,
        Lie::UsageNotFinalAtFifteen,
        Lie::SumBelowFinalAtFourteen,
        Lie::UsageCompleteAtEleven,
        Lie::FourForThree,
        Lie::RefusesNine,
        Lie::ReplayDriftsAtThirteen,
    ] {
        let local = local(Some(lie));
        let target = LocalTarget::through(
            local.clone(),
            Arc::new(Liar { local, lie }) as Arc<dyn Host>,
        );
        let report = wop_sdk_host::conformance::run_conformance(&target).await;
        assert!(
            report.all_passed() && report.all_extra_passed(),
            "{lie:?}\n{report}"
        );
    }
}

#[tokio::test]
async fn a_count_lie_on_plain_calls_only_is_caught() {
    caught_in(Lie::PlainCountAtFive, COUNT, |c| {
        !c.streamed && !c.structured && c.max_attempts == Some(5)
    })
    .await;
}

#[tokio::test]
async fn a_record_that_breaks_its_own_rules_in_one_corner_is_caught() {
    caught_in(Lie::SumBelowFinalAtFourteen, RESULT, |c| {
        !c.streamed && c.requests == 2 && c.max_attempts == Some(14) && c.withheld & 0b10 == 0
    })
    .await;
}

#[tokio::test]
async fn a_missing_mode_in_one_corner_is_caught() {
    caught_in(Lie::ModeMissingAtSix, MODE, |c| {
        !c.streamed && c.structured && c.requests == 2 && c.max_attempts == Some(6)
    })
    .await;
}

#[tokio::test]
async fn a_usage_that_is_not_the_final_attempts_is_caught() {
    caught_in(Lie::UsageNotFinalAtFifteen, FINAL_USAGE, |c| {
        !c.streamed && c.requests == 2 && c.max_attempts == Some(15) && c.withheld & 0b10 == 0
    })
    .await;
}

#[tokio::test]
async fn a_count_lie_on_streamed_calls_only_is_caught() {
    caught_in(Lie::StreamCountAtEight, COUNT, |c| {
        c.streamed && c.structured && c.requests == 2 && c.max_attempts == Some(8)
    })
    .await;
}
