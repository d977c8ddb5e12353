//! The typed node runtime through the local host: typed calls, closed-world validation, retry
//! lineage, opaque failures, capability gating and budgets.

mod provider;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use std::sync::Arc;
use wop_sdk::host::{AttemptKey, BoxFuture, Host, HostFailure, HostLayer, RunId};
use wop_sdk::node::execute;
use wop_sdk::wire::{CallAiRequest, CallAiResult, CapabilityDocument, ErrorCode};
use wop_sdk::{
    AiRequest, CallPlan, Capabilities, Estimate, NodeCtx, NodeError, PlannedCall, RetryPolicy,
    RetryReason, Text, wop_node,
};
use wop_sdk_host::local::{LocalHost, ScriptedProvider, Step};

/// A scene.
#[derive(Debug, Deserialize, Serialize, JsonSchema)]
struct Scene {
    /// The scene's text.
    text: String,
}

#[derive(Debug, Serialize, Deserialize, JsonSchema)]
struct In {
    prompt: String,
}

#[derive(Debug, Serialize, Deserialize, JsonSchema)]
struct Out {
    text: String,
    repaired: bool,
    attempts: Option<u32>,
}

fn long_enough(s: &Scene) -> Result<(), Vec<String>> {
    if s.text.split_whitespace().count() >= 3 {
        Ok(())
    } else {
        Err(vec!["`text` must have at least 3 words".into()])
    }
}

// Draft, validate closed-world, and repair once with a deliberate retry.
#[wop_node(type_id = "community.test.draft", version = "1.0.0", max_calls = 10)]
async fn draft(ctx: &NodeCtx<'_>, input: In) -> Result<Out, NodeError> {
    let first = ctx
        .call_ai(
            AiRequest::<Scene>::prompt(&input.prompt)
                .max_tokens(100)
                .validate(long_enough),
        )
        .await?;
    let proof = ctx.capabilities().attempts();
    let (scene, repaired) = match first.output() {
        Ok(s) => (s.text.clone(), false),
        Err(invalid) => {
            let repair = AiRequest::<Scene>::prompt(format!(
                "{}\nFix: {}",
                input.prompt,
                invalid.errors.join("; ")
            ))
            .max_tokens(100)
            .validate(long_enough)
            .retry_of(&first, RetryReason::InvalidOutput);
            let second = ctx.call_ai(repair).await?;
            let text = second
                .into_output()
                .map_err(|e| NodeError::new(e.to_string()))?
                .text;
            (text, true)
        }
    };
    Ok(Out {
        text: scene,
        repaired,
        attempts: proof.and_then(|p| first.attempts(p)).map(|a| a.count),
    })
}

fn host(steps: Vec<Step>) -> (LocalHost, ScriptedProvider) {
    let p = ScriptedProvider::new(steps.into_iter().collect());
    (LocalHost::rfc0248().provider(p.clone()).build(), p)
}

fn scene(text: &str) -> Step {
    Step::json(&json!({ "text": text }), 5)
}

#[tokio::test]
async fn a_typed_call_round_trips() {
    let (host, provider) = host(vec![scene("one two three four")]);
    let out = host.run(&Draft, json!({"prompt": "write"})).await;
    assert_eq!(
        out.result,
        Ok(json!({"text": "one two three four", "repaired": false, "attempts": 1}))
    );
    // The response schema came from the type.
    let sent = provider.requests();
    assert_eq!(
        sent[0]
            .response_schema
            .as_ref()
            .and_then(|s| s.pointer("/properties/text/type")),
        Some(&json!("string"))
    );
}

#[tokio::test]
async fn an_invalid_output_is_repaired_by_a_deliberate_retry_with_lineage() {
    let (host, provider) = host(vec![scene("too short"), scene("now it is long")]);
    let recorder = Recorder::new(host.clone());
    let out = execute(
        recorder.clone(),
        RunId::new("lineage"),
        "main",
        &Draft,
        json!({"prompt": "write"}),
    )
    .await;
    assert_eq!(
        out.result.as_ref().map(|v| v["repaired"].clone()),
        Ok(json!(true))
    );
    let requests = recorder.requests();
    assert_eq!(requests.len(), 2);
    assert!(requests[0].get("retryOfAttemptId").is_none());
    assert_eq!(requests[1]["retryReason"], "invalid_output");
    let first_result = &recorder.results()[0];
    assert_eq!(requests[1]["retryOfAttemptId"], first_result["attemptId"]);
    assert_eq!(provider.request_count(), 2);
    assert_eq!(out.calls[0].status, "invalid_output");
    assert_eq!(out.calls[1].retry_reason.as_deref(), Some("invalid_output"));
}

#[tokio::test]
async fn a_failure_propagated_with_question_mark_ends_the_node_as_settled() {
    let (host, _) = host(vec![
        Step::text("SECRET-PROVIDER-TEXT", 1).finish(wop_sdk::wire::FinishReason::ContentFilter),
    ]);
    let out = host.run(&Draft, json!({"prompt": "write"})).await;
    let err = out.result.expect_err("the node fails");
    assert_eq!(err.error, ErrorCode::EnvelopeRefusal);
    assert!(!err.message.contains("SECRET"));
    let diags = host.diagnostics();
    assert_eq!(diags.len(), 1);
    assert!(diags[0].settled, "propagating with `?` settles the failure");
    let events = host.events(&out.run_id).await;
    assert_eq!(events.last().map(|e| e.kind()), Some("node.failed"));
}

// Settles explicitly and goes on.
#[wop_node(type_id = "community.test.settle", version = "1.0.0")]
async fn settler(ctx: &NodeCtx<'_>, _input: In) -> Result<Out, NodeError> {
    let text = match ctx.call_ai(AiRequest::<Text>::prompt("hi")).await {
        Ok(c) => c.into_output().map(|t| t.0).unwrap_or_default(),
        Err(failure) => {
            assert_eq!(format!("{failure:?}"), "AiFailure(opaque)");
            ctx.settle_ai_failure(failure).await?;
            "settled".to_owned()
        }
    };
    Ok(Out {
        text,
        repaired: false,
        attempts: None,
    })
}

#[tokio::test]
async fn a_failure_settled_by_the_node_lets_it_go_on() {
    let (host, _) = host(vec![Step::Error("503 upstream with key sk-123".into())]);
    let out = host
        .run_typed(
            &Settler,
            In {
                prompt: String::new(),
            },
        )
        .await;
    assert_eq!(out.map(|o| o.text), Ok("settled".to_owned()));
    assert!(host.diagnostics().iter().all(|d| d.settled));
}

/// A host wrapper that records wire requests and results, and can break the contract.
#[derive(Clone)]
struct Recorder {
    inner: LocalHost,
    log: Arc<std::sync::Mutex<(Vec<Value>, Vec<Value>)>>,
    /// A result field this host leaves out.
    strip: Option<&'static str>,
    advertise_attempts: bool,
}

impl Recorder {
    fn new(inner: LocalHost) -> Arc<Self> {
        Arc::new(Self {
            inner,
            log: Arc::default(),
            strip: None,
            advertise_attempts: true,
        })
    }
    fn requests(&self) -> Vec<Value> {
        self.log.lock().map(|l| l.0.clone()).unwrap_or_default()
    }
    fn results(&self) -> Vec<Value> {
        self.log.lock().map(|l| l.1.clone()).unwrap_or_default()
    }
}

impl HostLayer for Recorder {
    fn inner(&self) -> &dyn Host {
        &self.inner
    }
    fn capability_document(&self) -> Arc<CapabilityDocument> {
        let mut d = (*self.inner.capability_document()).clone();
        if !self.advertise_attempts
            && let Some(ca) = &mut d.call_accounting
        {
            ca.attempts = false;
        }
        Arc::new(d)
    }
    fn call_ai<'a>(
        &'a self,
        key: &'a AttemptKey,
        request: &'a CallAiRequest,
    ) -> BoxFuture<'a, Result<CallAiResult, HostFailure>> {
        Box::pin(async move {
            let mut r = self.inner.call_ai(key, request).await;
            if let Ok(v) = &mut r {
                match self.strip {
                    Some("attempts") => v.attempts = None,
                    Some("attemptId") => v.attempt_id = None,
                    _ => {}
                }
            }
            if let Ok(mut log) = self.log.lock() {
                log.0.push(request.to_json());
                if let Ok(v) = &r {
                    log.1.push(v.to_json());
                }
            }
            r
        })
    }
}

#[tokio::test]
async fn a_host_that_breaks_its_contract_is_reported_as_a_protocol_error() {
    // Advertises `attempts` and omits them; omits the `attemptId` every result must carry.
    for field in ["attempts", "attemptId"] {
        let (inner, _) = host(vec![scene("one two three")]);
        let liar = Arc::new(Recorder {
            strip: Some(field),
            ..(*Recorder::new(inner)).clone()
        });
        let out = execute(
            liar,
            RunId::new("liar"),
            "main",
            &Draft,
            json!({"prompt": "x"}),
        )
        .await;
        let err = out.result.expect_err("protocol error");
        assert_eq!(err.error, ErrorCode::ProtocolError);
        assert_eq!(err.field(), Some(field));
    }
}

#[tokio::test]
async fn unadvertised_attempts_are_never_visible() {
    let (inner, _) = host(vec![scene("one two three")]);
    // The host still sends `attempts`, but does not advertise them: they are not believed.
    let quiet = Arc::new(Recorder {
        advertise_attempts: false,
        ..(*Recorder::new(inner)).clone()
    });
    let out = execute(
        quiet.clone(),
        RunId::new("quiet"),
        "main",
        &Draft,
        json!({"prompt": "x"}),
    )
    .await;
    assert!(quiet.results()[0].get("attempts").is_some());
    assert_eq!(out.result.map(|v| v["attempts"].clone()), Ok(Value::Null));
}

// Makes structured calls until the budget refuses one.
#[wop_node(type_id = "community.test.greedy", version = "1.0.0", max_calls = 7)]
async fn greedy(ctx: &NodeCtx<'_>, _input: In) -> Result<Out, NodeError> {
    let mut made = 0u32;
    loop {
        let request = AiRequest::<Scene>::prompt("again");
        let fits = ctx.budget().admits(ctx.worst_case(&request));
        match ctx.call_ai(request).await {
            Ok(_) => {
                assert!(fits, "a call the budget did not admit must not be made");
                made += 1;
            }
            Err(f) => {
                assert!(!fits, "the budget refused a call that fits");
                ctx.settle_ai_failure(f).await?;
                break;
            }
        }
    }
    Ok(Out {
        text: String::new(),
        repaired: false,
        attempts: Some(made),
    })
}

#[tokio::test]
async fn the_budget_refuses_the_call_that_could_overrun_and_never_one_that_fits() {
    // Ceiling 3: worst case 3 per call. max_calls 7: the first call takes 1 (attempts reported),
    // the second 1, then 5 left ≥ 3, third 1 → 4 left ≥ 3, fourth 1 → 3 left, fifth 1 → 2 left: refused.
    let (host, provider) = host((0..10).map(|_| scene("a b c")).collect());
    let out = host.run(&Greedy, json!({"prompt": ""})).await;
    assert_eq!(out.result.map(|v| v["attempts"].clone()), Ok(json!(5)));
    assert_eq!(
        provider.request_count(),
        5,
        "the refused call never reached the provider"
    );
    assert_eq!(out.budget.used, 5);
    assert_eq!(
        out.calls.last().map(|c| c.status),
        Some("wop-sdk.budget_exhausted")
    );
}

#[tokio::test]
async fn without_attempts_the_budget_charges_the_worst_case() {
    let p = ScriptedProvider::new((0..10).map(|_| scene("a b c")).collect());
    let host = LocalHost::rfc0248()
        .provider(p.clone())
        .older_host()
        .build();
    let out = host.run(&Greedy, json!({"prompt": ""})).await;
    // 3 charged per call: 7 admits two calls (6), then 1 left.
    assert_eq!(out.result.map(|v| v["attempts"].clone()), Ok(json!(2)));
    assert_eq!(p.request_count(), 2);
}

// Requires its retry policy to be honoured.
#[wop_node(type_id = "community.test.strict", version = "1.0.0")]
async fn strict(ctx: &NodeCtx<'_>, _input: In) -> Result<Out, NodeError> {
    let c = ctx
        .call_ai(
            AiRequest::<Scene>::prompt("x")
                .retry(RetryPolicy::NO_RETRIES)
                .require_retry_policy(),
        )
        .await?;
    Ok(Out {
        text: c.into_output().map(|s| s.text).unwrap_or_default(),
        repaired: false,
        attempts: None,
    })
}

#[tokio::test]
async fn a_required_retry_policy_fails_on_an_older_host_before_any_request() {
    let p = ScriptedProvider::new([scene("a b c")].into_iter().collect());
    let host = LocalHost::rfc0248()
        .provider(p.clone())
        .older_host()
        .build();
    let out = host.run(&Strict, json!({"prompt": ""})).await;
    assert_eq!(
        out.result.expect_err("refused").error,
        ErrorCode::CapabilityNotProvided
    );
    assert_eq!(p.request_count(), 0);
}

#[wop_node(
    type_id = "community.test.needs",
    version = "1.0.0",
    requires(attempts)
)]
async fn needs_attempts(_ctx: &NodeCtx<'_>, _input: In) -> Result<Out, NodeError> {
    Ok(Out {
        text: String::new(),
        repaired: false,
        attempts: None,
    })
}

#[tokio::test]
async fn a_node_requiring_a_capability_refuses_to_start_without_it() {
    let host = LocalHost::rfc0248().older_host().build();
    let out = host.run(&NeedsAttempts, json!({"prompt": ""})).await;
    let e = out.result.expect_err("refused");
    assert_eq!(e.error, ErrorCode::CapabilityNotProvided);
    let ok = LocalHost::rfc0248()
        .build()
        .run(&NeedsAttempts, json!({"prompt": ""}))
        .await;
    assert!(ok.result.is_ok());
}

#[tokio::test]
async fn bad_node_input_names_the_field() {
    let out = LocalHost::rfc0248()
        .build()
        .run(&Draft, json!({"promt": "typo"}))
        .await;
    let e = out.result.expect_err("refused");
    assert_eq!(e.error, ErrorCode::ValidationError);
    assert_eq!(e.field(), Some("input.prompt"));
}

#[test]
fn estimates_match_the_worked_example() {
    let caps = Capabilities::negotiate(LocalHost::rfc0248().build().capabilities());
    let mut est = Estimate::new(&caps);
    let plan = CallPlan::new([PlannedCall::structured(1000, RetryPolicy::HOST_DEFAULT)]);
    let n = est
        .add_node(&caps, None, "draft", "community.test.draft", Some(3), &plan)
        .clone();
    assert_eq!(
        (
            n.requests,
            n.output_tokens_with_growth,
            n.output_tokens_without_growth
        ),
        (3, 7000, 3000)
    );
    assert!(n.fits);
    let tight = est
        .add_node(&caps, None, "x", "community.test.x", Some(2), &plan)
        .clone();
    assert!(!tight.fits);
    let no_growth = CallPlan::new([PlannedCall::structured(
        1000,
        RetryPolicy::HOST_DEFAULT.grow_max_tokens(false),
    )
    .times(2)]);
    let n = est
        .add_node(&caps, None, "y", "community.test.y", None, &no_growth)
        .clone();
    assert_eq!((n.requests, n.output_tokens), (6, 6000));
    assert_eq!(est.total_requests(), 12);
}
