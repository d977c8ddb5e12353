//! The RFC 0248 conformance harness, used as a host implementer would: the honest local host
//! passes all eight legs; hosts that lie in one way each are failed by exactly the leg(s) they
//! lie to; a host advertising neither `callAccounting` flag has every gated leg skipped.

use serde_json::{Value, json};
use std::sync::Arc;
use wop_sdk::RunId;
use wop_sdk::host::{AttemptKey, Host};
use wop_sdk::host::{BoxFuture, FailureToken, HostFailure};
use wop_sdk::wire::{
    CallAiRequest, CallAiResult, CapabilityDocument, ErrorCode, ErrorEnvelope, Event, Retry,
    RunEvent, StructuredOutputMode, kind, normalize_type,
};
use wop_sdk_host::conformance::{
    ATTEMPTS_COUNT, ATTEMPTS_REPLAYED, ConformanceTarget, EXTRA_IDS, LEG_IDS, LocalTarget,
    MAX_ATTEMPTS_CAP, NO_BUDGET_GROWTH, OUTPUT_TOKENS_SUM, RETRY_MALFORMED_REFUSED, Report,
    STRUCTURED_OUTPUT, USAGE_INCOMPLETE, Verdict, extra, run_conformance,
};
use wop_sdk_host::journal::{Journal, MemoryJournal, SqliteJournal};
use wop_sdk_host::local::{LocalHost, Script, ScriptedProvider};

async fn honest_host_passes_all_legs_with(journal: Arc<dyn Journal>) {
    let host = LocalHost::rfc0248().journal(journal).build();
    let report = run_conformance(&host).await;
    println!("{report}");
    assert!(report.all_passed(), "{report}");
    assert_eq!(
        report
            .legs
            .iter()
            .map(|(id, _)| id.as_str())
            .collect::<Vec<_>>(),
        LEG_IDS.to_vec()
    );
    let json = report.to_json();
    for leg in json["legs"].as_array().expect("legs") {
        assert_eq!(leg["verdict"], "executed-pass", "{leg}");
    }
    // The extra checks, apart from the legs: every one runs and passes.
    assert!(report.all_extra_passed(), "{report}");
    assert_eq!(
        report
            .extra
            .iter()
            .map(|(id, _)| id.as_str())
            .collect::<Vec<_>>(),
        EXTRA_IDS.to_vec()
    );
    assert_eq!(
        json["extra"].as_array().map(Vec::len),
        Some(EXTRA_IDS.len())
    );
}

#[tokio::test]
async fn honest_local_host_passes_all_eight_legs_in_memory() {
    honest_host_passes_all_legs_with(Arc::new(MemoryJournal::new())).await;
}

/// The same legs with the durable journal: the replay leg then reads the recorded outcome back
/// from SQLite.
#[tokio::test]
async fn honest_local_host_passes_all_eight_legs_with_sqlite() {
    let dir = std::env::temp_dir().join(format!(
        "wop-conformance-{}-{}",
        std::process::id(),
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos())
    ));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let journal = SqliteJournal::open(dir.join("journal.sqlite")).expect("open the journal");
    honest_host_passes_all_legs_with(Arc::new(journal)).await;
    let _ = std::fs::remove_dir_all(&dir);
}

#[tokio::test]
async fn a_host_advertising_neither_flag_is_skipped_not_passed() {
    let host = LocalHost::rfc0248().older_host().build();
    let report = run_conformance(&host).await;
    assert!(!report.all_passed());
    for (id, v) in &report.legs {
        assert!(matches!(v, Verdict::Skipped(_)), "{id}: {v:?}");
    }
    assert_eq!(report.legs.len(), 8);
    assert_eq!(report.ids_with("skipped").len(), 8);
}

#[tokio::test]
async fn a_host_that_does_not_retry_blocks_the_count_legs() {
    let host = LocalHost::rfc0248().max_retry_attempts(1).build();
    let report = run_conformance(&host).await;
    assert_eq!(
        report.ids_with("blocked"),
        vec![ATTEMPTS_COUNT, OUTPUT_TOKENS_SUM, ATTEMPTS_REPLAYED],
        "{report}"
    );
    assert_eq!(report.ids_with("executed-pass").len(), 5, "{report}");
}

/// The one way a lying host lies.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Lie {
    /// `attempts.count` leaves out the failed attempt.
    CountWithoutFailedAttempt,
    /// `attempts.outputTokens` counts the final attempt only.
    TokensOfFinalAttemptOnly,
    /// `usageComplete: true` even after a `usage: false` reply.
    UsageAlwaysComplete,
    /// `structuredOutput` on a call without `responseSchema`.
    StructuredOutputWithoutSchema,
    /// A replay fork re-dispatches the provider instead of reusing the recorded outcome.
    ReplayRedispatches,
    /// Ignores `maxAttempts`: retries beyond it (and records the extra `provider.usage`).
    RetriesBeyondMaxAttempts,
    /// Ignores `growMaxTokens: false`: grows the budget on truncation.
    GrowsBudgetAnyway,
    /// Ignores a malformed `retry` instead of refusing it.
    IgnoresMalformedRetry,
    // The lies below pass all eight official legs; each is caught by one extra check.
    /// `attempts.count` leaves out truncation retries.
    CountWithoutTruncationRetries,
    /// `usageComplete` says whether the final attempt reported usage, not every attempt.
    UsageCompleteFromFinalAttempt,
    /// `structuredOutput: native` on every structured call.
    AlwaysNativeMode,
    /// `usage.outputTokens` is the call's sum, not the final attempt's.
    UsageSummed,
    /// Honours `maxAttempts: 1` only; a larger cap is dropped.
    HonoursOnlyMaxAttemptsOne,
    /// Refuses a `maxAttempts` above its ceiling instead of clamping it.
    RefusesAboveCeiling,
    /// Grows the budget under `growMaxTokens: false` when the request names no `maxTokens`.
    GrowsWithoutMaxTokens,
    /// Retries after a refusal.
    RetriesAfterRefusal,
    /// Advertises `retry-exhausted` but never shows it.
    HidesRetryExhausted,
    /// Refuses `maxAttempts: 0` only, ignoring every other malformed `retry`.
    RefusesOnlyZero,
}

/// A host that wraps the honest local host and alters what it answers in one way.
struct LyingHost {
    local: LocalHost,
    provider: ScriptedProvider,
    lie: Lie,
}

impl LyingHost {
    async fn call(&self, key: &AttemptKey, request: &Value) -> Result<CallAiResult, HostFailure> {
        let mut request = request.clone();
        let retry = request.get("retry").cloned();
        match self.lie {
            Lie::RetriesBeyondMaxAttempts | Lie::GrowsBudgetAnyway | Lie::IgnoresMalformedRetry => {
                if let (Some(r), Some(map)) = (&retry, request.as_object_mut()) {
                    let drop_it = match self.lie {
                        // A well-formed cap only: a malformed one is still refused.
                        Lie::RetriesBeyondMaxAttempts => {
                            r.get("maxAttempts").is_some() && Retry::from_json(r).is_ok()
                        }
                        Lie::GrowsBudgetAnyway => r.get("growMaxTokens") == Some(&json!(false)),
                        _ => Retry::from_json(r).is_err(),
                    };
                    if drop_it {
                        map.remove("retry");
                    }
                }
            }
            Lie::HonoursOnlyMaxAttemptsOne
            | Lie::RefusesAboveCeiling
            | Lie::GrowsWithoutMaxTokens
            | Lie::RefusesOnlyZero => {
                let no_max_tokens = request.get("maxTokens").is_none();
                if let (Some(r), Some(map)) = (&retry, request.as_object_mut()) {
                    let well_formed = Retry::from_json(r).ok();
                    let attempts = well_formed.and_then(|w| w.max_attempts);
                    match self.lie {
                        Lie::HonoursOnlyMaxAttemptsOne if attempts.is_some_and(|n| n >= 2) => {
                            map.remove("retry");
                        }
                        Lie::RefusesAboveCeiling if attempts.is_some_and(|n| n > 3) => {
                            return Err(HostFailure {
                                public: ErrorEnvelope::validation(
                                    "retry.maxAttempts",
                                    "above this host's ceiling of 3",
                                ),
                                token: FailureToken::new(u64::MAX),
                            });
                        }
                        Lie::GrowsWithoutMaxTokens
                            if no_max_tokens && r.get("growMaxTokens") == Some(&json!(false)) =>
                        {
                            map.remove("retry");
                        }
                        Lie::RefusesOnlyZero
                            if well_formed.is_none() && r.get("maxAttempts") != Some(&json!(0)) =>
                        {
                            map.remove("retry");
                        }
                        _ => {}
                    }
                }
            }
            Lie::ReplayRedispatches => {
                let fork = matches!(
                    self.local.journal().run(&key.run_id).await,
                    Ok(Some(r)) if r.replay_of.is_some()
                );
                if fork {
                    // Re-dispatch the mock under a fresh identity: the provider now answers
                    // valid at once, so the count differs from the recorded one.
                    let fresh = AttemptKey {
                        run_id: RunId::new(format!("{}-redispatch", key.run_id)),
                        ..key.clone()
                    };
                    let script = Script::from_json(&json!([
                        {"content": {"answer": "ok"}, "usage": {"outputTokens": 7}}
                    ]))
                    .expect("script");
                    self.provider.set_run_script(&fresh.run_id, script);
                    return self.local.call_ai_json(&fresh, &request).await;
                }
            }
            _ => {}
        }
        let mut result = match self.local.call_ai_json(key, &request).await {
            Err(f)
                if self.lie == Lie::RetriesAfterRefusal
                    && f.public.error == ErrorCode::EnvelopeRefusal =>
            {
                // A second generation under a new identity of the same run: the script goes on.
                let again = AttemptKey {
                    call_index: key.call_index + 100,
                    ..key.clone()
                };
                self.local.call_ai_json(&again, &request).await?
            }
            other => other?,
        };
        let structured = request.get("responseSchema").is_some();
        let final_tokens = result.usage.and_then(|u| u.output_tokens);
        let truncated = if self.lie == Lie::CountWithoutTruncationRetries {
            let events = self.local.events(&key.run_id).await;
            let n = events
                .iter()
                .filter(|e| normalize_type(e.kind()) == kind::TRUNCATED)
                .count();
            u32::try_from(n).unwrap_or(u32::MAX)
        } else {
            0
        };
        if let Some(a) = &mut result.attempts {
            match self.lie {
                Lie::CountWithoutFailedAttempt => a.count = a.count.saturating_sub(1).max(1),
                Lie::TokensOfFinalAttemptOnly => a.output_tokens = final_tokens,
                Lie::UsageAlwaysComplete => a.usage_complete = true,
                Lie::StructuredOutputWithoutSchema if !structured => {
                    a.structured_output = Some(StructuredOutputMode::Native);
                }
                Lie::CountWithoutTruncationRetries => {
                    a.count = a.count.saturating_sub(truncated).max(1);
                }
                Lie::UsageCompleteFromFinalAttempt => a.usage_complete = final_tokens.is_some(),
                Lie::AlwaysNativeMode if structured => {
                    a.structured_output = Some(StructuredOutputMode::Native);
                }
                _ => {}
            }
        }
        if self.lie == Lie::UsageSummed
            && let (Some(sum), Some(usage)) = (
                result.attempts.and_then(|a| a.output_tokens),
                result.usage.as_mut(),
            )
        {
            usage.output_tokens = Some(sum);
        }
        Ok(result)
    }
}

impl Host for LyingHost {
    fn capability_document(&self) -> Arc<CapabilityDocument> {
        // It advertises everything the honest host does.
        self.local.capability_document()
    }

    fn call_ai<'a>(
        &'a self,
        key: &'a AttemptKey,
        request: &'a CallAiRequest,
    ) -> BoxFuture<'a, Result<CallAiResult, HostFailure>> {
        Box::pin(async move { self.call(key, &request.to_json()).await })
    }

    fn call_ai_json<'a>(
        &'a self,
        key: &'a AttemptKey,
        request: &'a Value,
    ) -> BoxFuture<'a, Result<CallAiResult, HostFailure>> {
        Box::pin(self.call(key, request))
    }

    fn settle_ai_failure<'a>(
        &'a self,
        run: &'a RunId,
        failure: FailureToken,
    ) -> BoxFuture<'a, Result<(), ErrorEnvelope>> {
        self.local.settle_ai_failure(run, failure)
    }

    fn record_event<'a>(&'a self, run: &'a RunId, event: Event) -> BoxFuture<'a, ()> {
        self.local.record_event(run, event)
    }

    fn events<'a>(&'a self, run: &'a RunId) -> BoxFuture<'a, Vec<RunEvent>> {
        Box::pin(async move {
            let mut events = self.local.events(run).await;
            if self.lie == Lie::HidesRetryExhausted {
                events.retain(|e| normalize_type(e.kind()) != kind::RETRY_EXHAUSTED);
            }
            events
        })
    }
}

async fn judge_liar(lie: Lie) -> Report {
    let provider = ScriptedProvider::default();
    let local = LocalHost::rfc0248().provider(provider.clone()).build();
    let liar = LyingHost {
        local: local.clone(),
        provider,
        lie,
    };
    let target = LocalTarget::through(local, Arc::new(liar));
    let report = run_conformance(&target as &dyn ConformanceTarget).await;
    println!("{lie:?}\n{report}");
    report
}

async fn assert_failed_exactly_by(lie: Lie, legs: &[&str]) {
    let report = judge_liar(lie).await;
    assert_eq!(
        report.ids_with("executed-fail"),
        legs.to_vec(),
        "{lie:?}\n{report}"
    );
    assert_eq!(
        report.ids_with("executed-pass").len(),
        8 - legs.len(),
        "{lie:?}\n{report}"
    );
}

#[tokio::test]
async fn lying_count_is_failed_by_attempts_count() {
    assert_failed_exactly_by(Lie::CountWithoutFailedAttempt, &[ATTEMPTS_COUNT]).await;
}

#[tokio::test]
async fn lying_tokens_are_failed_by_output_tokens_sum() {
    assert_failed_exactly_by(Lie::TokensOfFinalAttemptOnly, &[OUTPUT_TOKENS_SUM]).await;
}

#[tokio::test]
async fn lying_usage_complete_is_failed_by_usage_incomplete() {
    assert_failed_exactly_by(Lie::UsageAlwaysComplete, &[USAGE_INCOMPLETE]).await;
}

#[tokio::test]
async fn lying_structured_output_is_failed_by_structured_output() {
    assert_failed_exactly_by(Lie::StructuredOutputWithoutSchema, &[STRUCTURED_OUTPUT]).await;
}

#[tokio::test]
async fn a_redispatching_replay_is_failed_by_attempts_replayed() {
    assert_failed_exactly_by(Lie::ReplayRedispatches, &[ATTEMPTS_REPLAYED]).await;
}

#[tokio::test]
async fn retrying_beyond_max_attempts_is_failed_by_max_attempts_cap() {
    assert_failed_exactly_by(Lie::RetriesBeyondMaxAttempts, &[MAX_ATTEMPTS_CAP]).await;
}

#[tokio::test]
async fn growing_the_budget_anyway_is_failed_by_no_budget_growth() {
    assert_failed_exactly_by(Lie::GrowsBudgetAnyway, &[NO_BUDGET_GROWTH]).await;
}

#[tokio::test]
async fn ignoring_a_malformed_retry_is_failed_by_retry_malformed_refused() {
    assert_failed_exactly_by(Lie::IgnoresMalformedRetry, &[RETRY_MALFORMED_REFUSED]).await;
}

/// A lie the eight official legs let through: every leg passes, and exactly one extra check
/// fails it.
async fn assert_only_extra_check_fails(lie: Lie, check: &str) {
    let report = judge_liar(lie).await;
    assert_eq!(
        report.ids_with("executed-pass").len(),
        8,
        "{lie:?}: the official legs do not see this lie\n{report}"
    );
    assert_eq!(
        report.extra_ids_with("executed-fail"),
        vec![check],
        "{lie:?}\n{report}"
    );
    assert_eq!(
        report.extra_ids_with("executed-pass").len(),
        EXTRA_IDS.len() - 1,
        "{lie:?}\n{report}"
    );
}

#[tokio::test]
async fn a_count_without_truncation_retries_is_failed_by_count_every_request() {
    assert_only_extra_check_fails(
        Lie::CountWithoutTruncationRetries,
        extra::COUNT_EVERY_REQUEST,
    )
    .await;
}

#[tokio::test]
async fn usage_complete_from_the_final_attempt_is_failed_by_usage_incomplete_any_attempt() {
    assert_only_extra_check_fails(
        Lie::UsageCompleteFromFinalAttempt,
        extra::USAGE_INCOMPLETE_ANY_ATTEMPT,
    )
    .await;
}

#[tokio::test]
async fn always_native_is_failed_by_structured_output_final_mode() {
    assert_only_extra_check_fails(Lie::AlwaysNativeMode, extra::STRUCTURED_OUTPUT_FINAL_MODE).await;
}

#[tokio::test]
async fn summed_usage_is_failed_by_usage_of_final_attempt() {
    assert_only_extra_check_fails(Lie::UsageSummed, extra::USAGE_OF_FINAL_ATTEMPT).await;
}

#[tokio::test]
async fn honouring_only_max_attempts_one_is_failed_by_max_attempts_two() {
    assert_only_extra_check_fails(Lie::HonoursOnlyMaxAttemptsOne, extra::MAX_ATTEMPTS_TWO).await;
}

#[tokio::test]
async fn refusing_above_the_ceiling_is_failed_by_max_attempts_clamped() {
    assert_only_extra_check_fails(Lie::RefusesAboveCeiling, extra::MAX_ATTEMPTS_CLAMPED).await;
}

#[tokio::test]
async fn growing_without_max_tokens_is_failed_by_no_growth_host_default() {
    assert_only_extra_check_fails(Lie::GrowsWithoutMaxTokens, extra::NO_GROWTH_HOST_DEFAULT).await;
}

#[tokio::test]
async fn retrying_after_a_refusal_is_failed_by_no_retry_after_refusal() {
    assert_only_extra_check_fails(Lie::RetriesAfterRefusal, extra::NO_RETRY_AFTER_REFUSAL).await;
}

#[tokio::test]
async fn hiding_retry_exhausted_is_failed_by_retry_exhausted_emitted() {
    assert_only_extra_check_fails(Lie::HidesRetryExhausted, extra::RETRY_EXHAUSTED_EMITTED).await;
}

#[tokio::test]
async fn refusing_only_zero_is_failed_by_retry_malformed_every_form() {
    assert_only_extra_check_fails(Lie::RefusesOnlyZero, extra::RETRY_MALFORMED_EVERY_FORM).await;
}
