//! The hosts a pack ships to, as the local host plays them (`HostProfile`): openwop-app (the
//! default) as its public snapshot has it (`openwop/openwop-app-install`,
//! `backend/typescript/src/aiProviders/aiProvidersHost.ts`: `dispatchStructured`, whose loop
//! runs `maxRetryAttempts` (3) requests and then the natural-language fallback when the last reply
//! was prose; `host/envelopeReliabilityEmit.ts`: `tryLenientParse`; `providers/dispatch.ts`:
//! `fetchWith429Retry`, 3 requests per dispatch on HTTP 429), and an RFC 0248 host.

use super::typed_run::{Title, Topic, TypedTitle};
use super::*;
use wop_sdk_host::local::{HostProfile, OPENWOP_APP_PROVIDERS, RunError, on_every_host};

fn on(profile: HostProfile, steps: Vec<Step>) -> (LocalHost, ScriptedProvider) {
    let provider = ScriptedProvider::new(steps.into_iter().collect());
    (
        profile.builder().provider(provider.clone()).build(),
        provider,
    )
}

fn structured() -> Value {
    json!({"prompt": "t", "responseSchema": schema(), "maxTokens": 100})
}

fn prose() -> Step {
    Step::text("The title I would choose is Lamps.", 8)
}

/// An HTTP 429 as a provider writes it (the OpenAI-compatible provider's text for a status).
fn rate_limited() -> Step {
    Step::Error("HTTP 429 Too Many Requests: rate limit reached".into())
}

#[tokio::test]
async fn the_default_host_is_openwop_app_as_its_snapshot_advertises() {
    let host = LocalHost::builder().build();
    let doc = host.capabilities();
    assert!(doc.call_accounting.is_none(), "no callAccounting");
    assert_eq!(
        doc.providers,
        OPENWOP_APP_PROVIDERS.map(str::to_owned).to_vec()
    );
    let rel = doc.reliability.as_ref().expect("reliability");
    assert_eq!(rel.max_retry_attempts, 3);
    assert!(rel.events.iter().any(|e| e == kind::NL_TO_FORMAT_ENGAGED));
    assert_eq!(HostProfile::DEFAULT, HostProfile::OpenwopApp);
    assert!(!host.config().native_structured_output);
    assert_eq!(
        (
            host.config().default_max_tokens,
            host.config().provider_max_tokens
        ),
        (4096, 64_000)
    );
    // The scripted provider answers for every provider name openwop-app offers.
    for (i, name) in OPENWOP_APP_PROVIDERS.into_iter().enumerate() {
        let (host, provider) = on(HostProfile::OpenwopApp, vec![Step::text("hi", 1)]);
        let r = host
            .call_ai_json(
                &key("p", u32::try_from(i).expect("small")),
                &json!({"prompt": "t", "provider": name}),
            )
            .await;
        assert!(r.is_ok(), "{name}: {r:?}");
        assert_eq!(&*provider.requests()[0].provider, name);
    }
    // The RFC 0248 host is the one the local host was before.
    let rfc = LocalHost::rfc0248().build().capabilities();
    let ca = rfc.call_accounting.expect("callAccounting");
    assert!(ca.attempts && ca.retry_policy);
    assert_eq!(rfc.providers, vec!["mock".to_owned()]);
    assert_eq!(
        HostProfile::from_name("rfc-0248"),
        Some(HostProfile::Rfc0248)
    );
    assert_eq!(HostProfile::from_name("openwop"), None);
}

#[tokio::test]
async fn openwop_app_sends_the_schema_in_the_prompt_and_falls_back_after_three_requests() {
    let (host, provider) = on(
        HostProfile::OpenwopApp,
        vec![prose(), prose(), prose(), valid()],
    );
    let r = host
        .call_ai_json(&key("fb", 0), &structured())
        .await
        .map(|r| r.to_json())
        .expect("the fallback's reply completes the call");
    assert_eq!(r["data"], json!({"title": "ok"}));
    assert!(
        r.get("attempts").is_none(),
        "no attempts without callAccounting: {r}"
    );
    let sent = provider.requests();
    assert_eq!(sent.len(), 4, "3 requests, then the fallback");
    assert!(
        sent.iter()
            .all(|r| r.mode == Some(StructuredOutputMode::Prompt))
    );
    let ev = events(&host, "fb").await;
    assert_eq!(count(&ev, kind::NL_TO_FORMAT_ENGAGED), 1);
    assert_eq!(count(&ev, kind::RETRY_ATTEMPTED), 2);
    // The same script on an RFC 0248 host with the fallback on: the fallback is the third
    // request, inside the ceiling, and it is prose too.
    let provider =
        ScriptedProvider::new([prose(), prose(), prose(), valid()].into_iter().collect());
    let host = LocalHost::rfc0248()
        .nl_fallback(true)
        .provider(provider.clone())
        .build();
    assert!(
        host.call_ai_json(&key("fb", 0), &structured())
            .await
            .is_err()
    );
    assert_eq!(provider.request_count(), 3);
}

#[tokio::test]
async fn openwop_app_converts_prose_only_a_reply_like_json_ends_at_three() {
    let wrong = || Step::json(&json!({"name": "no title"}), 5);
    let (host, provider) = on(
        HostProfile::OpenwopApp,
        vec![wrong(), wrong(), wrong(), valid()],
    );
    let failed = host.call_ai_json(&key("j", 0), &structured()).await;
    assert!(failed.is_err(), "{failed:?}");
    assert_eq!(
        provider.request_count(),
        3,
        "no fallback after a reply that looks like JSON"
    );
    let ev = events(&host, "j").await;
    assert_eq!(count(&ev, kind::NL_TO_FORMAT_ENGAGED), 0);
    assert_eq!(count(&ev, kind::RETRY_EXHAUSTED), 1);
}

#[tokio::test]
async fn openwop_app_reads_a_fenced_reply_and_checks_the_required_keys_alone() {
    let fenced = || {
        Step::text(
            "Here it is:\n```json\n{\"title\": \"ok\", \"extra\": 1}\n```",
            9,
        )
    };
    let (host, provider) = on(HostProfile::OpenwopApp, vec![fenced(), valid()]);
    let r = host
        .call_ai_json(&key("f", 0), &structured())
        .await
        .map(|r| r.to_json())
        .expect("the fenced JSON is read out");
    assert_eq!(r["data"], json!({"title": "ok", "extra": 1}));
    assert_eq!(provider.request_count(), 1);
    // An RFC 0248 host reads the whole reply as JSON: a parse error, retried.
    let (host, provider) = on(HostProfile::Rfc0248, vec![fenced(), valid()]);
    let r = host
        .call_ai_json(&key("f", 0), &structured())
        .await
        .map(|r| r.to_json())
        .expect("the retry completes");
    assert_eq!(r["data"], json!({"title": "ok"}));
    assert_eq!(provider.request_count(), 2);
}

#[tokio::test]
async fn openwop_app_resends_a_429_below_its_loop_and_an_rfc_0248_host_counts_it() {
    let plain = json!({"prompt": "t"});
    // Two 429s, then a reply: one dispatch of a plain call (which has one request), 3 sent.
    let (host, provider) = on(
        HostProfile::OpenwopApp,
        vec![rate_limited(), rate_limited(), Step::text("hello", 2)],
    );
    let r = host
        .call_ai_json(&key("rl", 0), &plain)
        .await
        .map(|r| r.to_json());
    assert_eq!(r.expect("resent below the loop")["content"], "hello");
    assert_eq!(provider.request_count(), 3);
    // A third 429 ends the dispatch: a plain call fails there, after 3 requests.
    let (host, provider) = on(
        HostProfile::OpenwopApp,
        vec![
            rate_limited(),
            rate_limited(),
            rate_limited(),
            Step::text("late", 2),
        ],
    );
    assert!(host.call_ai_json(&key("rl", 0), &plain).await.is_err());
    assert_eq!(provider.request_count(), 3);
    // In a structured call the third 429 is an attempt, and the loop goes on.
    let (host, provider) = on(
        HostProfile::OpenwopApp,
        vec![rate_limited(), rate_limited(), rate_limited(), valid()],
    );
    let r = host
        .call_ai_json(&key("rl", 0), &structured())
        .await
        .map(|r| r.to_json());
    assert_eq!(
        r.expect("the second attempt completes")["data"],
        json!({"title": "ok"})
    );
    assert_eq!(provider.request_count(), 4);
    // An RFC 0248 host counts the 429 as the plain call's one attempt.
    let (host, provider) = on(
        HostProfile::Rfc0248,
        vec![rate_limited(), Step::text("hello", 2)],
    );
    assert!(host.call_ai_json(&key("rl", 0), &plain).await.is_err());
    assert_eq!(provider.request_count(), 1);
}

#[tokio::test]
/// `TypedTitle`: one structured call under a budget of 3 requests, the RFC 0248 ceiling and one
/// short of openwop-app's worst case (3 and the fallback).
async fn a_node_is_charged_what_each_host_would_charge_it() {
    let mut seen = Vec::new();
    on_every_host(|profile| {
        seen.push(profile);
        async move {
            let (host, provider) = on(profile, vec![Step::json(&json!({"title": "Lamps"}), 3)]);
            let r = host
                .run_typed(
                    &TypedTitle,
                    Topic {
                        topic: "lamps".into(),
                    },
                )
                .await;
            match profile {
                HostProfile::Rfc0248 => {
                    assert_eq!(
                        r,
                        Ok(Title {
                            title: "Lamps".into()
                        }),
                        "on {profile}"
                    );
                    assert_eq!(provider.request_count(), 1);
                }
                _ => {
                    // openwop-app may send 4 requests for the call: the budget refuses it before
                    // any is sent, as the bridge does on openwop-app itself.
                    let Err(RunError::NodeFailed { error, .. }) = &r else {
                        panic!("on {profile}: {r:?}");
                    };
                    assert_eq!(error.error, ErrorCode::BudgetExhausted, "on {profile}");
                    let details = error.details.as_ref().expect("details");
                    assert_eq!(details["worstCase"], 4, "on {profile}: {error:?}");
                    assert_eq!(provider.request_count(), 0);
                }
            }
        }
    })
    .await;
    assert_eq!(
        seen,
        HostProfile::ALL.to_vec(),
        "every profile, the default first"
    );
}
