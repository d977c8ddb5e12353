//! Ceilings and charges: concurrent generations, generations per run (across the run's nodes too),
//! and who is charged.

use super::*;

#[tokio::test]
async fn concurrent_calls_never_exceed_the_generation_cap() {
    let (host, provider) = host_with((0..40).map(|_| valid()).collect(), |b| {
        b.max_concurrent_generations(3)
    });
    let host = Arc::new(host);
    let mut tasks = Vec::new();
    for i in 0..40 {
        let host = Arc::clone(&host);
        tasks.push(tokio::spawn(async move {
            host.call_ai_json(
                &key("conc", i),
                &json!({"prompt": "t", "responseSchema": schema()}),
            )
            .await
            .map(|r| r.to_json())
            .is_ok()
        }));
    }
    for t in tasks {
        assert!(t.await.expect("task"));
    }
    assert_eq!(provider.request_count(), 40);
    assert!(
        provider.max_in_flight() <= 3,
        "saw {} in flight",
        provider.max_in_flight()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_generation_cap_holds_on_a_multi_thread_runtime() {
    let (host, provider) = host_with((0..64).map(|_| valid()).collect(), |b| {
        b.max_concurrent_generations(2)
    });
    let host = Arc::new(host);
    let tasks: Vec<_> = (0..64)
        .map(|i| {
            let host = Arc::clone(&host);
            tokio::spawn(async move {
                host.call_ai_json(
                    &key("mt", i),
                    &json!({"prompt": "t", "responseSchema": schema()}),
                )
                .await
                .map(|r| r.to_json())
                .is_ok()
            })
        })
        .collect();
    for t in tasks {
        assert!(t.await.expect("task"));
    }
    assert!(provider.max_in_flight() <= 2);
    assert!(provider.max_in_flight() >= 1);
}

#[tokio::test]
async fn the_run_ceiling_refuses_before_dispatch_and_the_refusal_is_not_charged() {
    let (host, provider) = host_with((0..5).map(|_| Step::text("x", 1)).collect(), |b| {
        b.max_generations_per_run(2)
    });
    let _ = host
        .call_ai_json(&key("ceil", 0), &json!({"prompt": "a"}))
        .await
        .map(|r| r.to_json())
        .expect("1");
    let _ = host
        .call_ai_json(&key("ceil", 1), &json!({"prompt": "b"}))
        .await
        .map(|r| r.to_json())
        .expect("2");
    let f = host
        .call_ai_json(&key("ceil", 2), &json!({"prompt": "c"}))
        .await
        .map(|r| r.to_json())
        .expect_err("refused");
    assert_eq!(f.public.error, ErrorCode::BudgetExhausted);
    assert_eq!(provider.request_count(), 2);
    let ledger = host
        .ledger(Some(&RunId::new("ceil")))
        .await
        .expect("ledger");
    assert_eq!(ledger.len(), 2);
}

#[tokio::test]
async fn charges_go_to_the_beneficiaries_or_the_owner() {
    let (host, _) = host_with(vec![Step::text("x", 5), Step::text("y", 6)], |b| b);
    let _ = host
        .call_ai_json(
            &key("bill", 0),
            &json!({"prompt": "a", "beneficiaryUserIds": ["ana", "bo"]}),
        )
        .await
        .map(|r| r.to_json())
        .expect("ok");
    let _ = host
        .call_ai_json(&key("bill", 1), &json!({"prompt": "b"}))
        .await
        .map(|r| r.to_json())
        .expect("ok");
    let by = host
        .charges_by_beneficiary(Some(&RunId::new("bill")))
        .await
        .expect("ledger");
    assert_eq!(by.get("ana"), Some(&(1, 5)));
    assert_eq!(by.get("bo"), Some(&(1, 5)));
    assert_eq!(by.get("local-user"), Some(&(1, 6)));
}

#[tokio::test]
async fn the_run_ceiling_holds_across_node_executions_of_the_run() {
    use schemars::JsonSchema;
    use wop_sdk::{AiRequest, NodeCtx, NodeError, Text, wop_node};

    #[derive(serde::Deserialize, JsonSchema)]
    struct Nothing {}

    #[wop_node(type_id = "community.test.twice", version = "1.0.0")]
    async fn twice(ctx: &NodeCtx<'_>, _input: Nothing) -> Result<u32, NodeError> {
        let topic = std::env::var("WOP_TEST_TOPIC").unwrap_or_default();
        ctx.call_ai(AiRequest::<Text>::prompt(format!("one {topic}")))
            .await?;
        ctx.call_ai(AiRequest::<Text>::prompt("two")).await?;
        Ok(2)
    }

    let (host, provider) = host_with((0..6).map(|_| Step::text("x", 1)).collect(), |b| {
        b.max_generations_per_run(3)
    });
    let run = RunId::new("ceiling-redelivered");
    let options = wop_sdk_host::local::RunOptions {
        run_id: Some(run.clone()),
        ..Default::default()
    };
    let first = host.run_with(&Twice, json!({}), options).await;
    assert_eq!(first.result, Ok(json!(2)));
    // Another node of the same run: one generation left under the ceiling of 3.
    let options = wop_sdk_host::local::RunOptions {
        run_id: Some(run.clone()),
        node_id: Some("second".into()),
        ..Default::default()
    };
    let second = host.run_with(&Twice, json!({}), options).await;
    assert_eq!(
        second.result.expect_err("the ceiling").error,
        ErrorCode::BudgetExhausted
    );
    assert_eq!(provider.request_count(), 3);
    assert_eq!(host.active_runs(), 0);
}
