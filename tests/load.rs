//! Load: 64 concurrent runs of 20 calls each through one local host with the SQLite journal and
//! a generation cap of 8. Bounded in count; stops by itself.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::json;
use std::time::Duration;
use wop_sdk::host::RunId;
use wop_sdk::{AiRequest, NodeCtx, NodeError, wop_node};
use wop_sdk_host::local::{LocalHost, RunOptions, ScriptedProvider, Step};

const RUNS: usize = 64;
const CALLS: u32 = 20;

#[derive(Deserialize, Serialize, JsonSchema)]
struct Line {
    line: String,
}

#[derive(Deserialize, JsonSchema)]
struct In {}

#[derive(Serialize, JsonSchema)]
struct Out {
    lines: u32,
}

#[wop_node(type_id = "community.test.poem", version = "1.0.0")]
async fn poem(ctx: &NodeCtx<'_>, _input: In) -> Result<Out, NodeError> {
    for i in 0..CALLS {
        ctx.call_ai(AiRequest::<Line>::prompt(format!("line {i}")))
            .await?;
    }
    Ok(Out { lines: CALLS })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn sixty_four_runs_of_twenty_calls_under_a_cap_of_eight() {
    let dir = std::env::temp_dir().join(format!("wop-load-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let total = RUNS * CALLS as usize;
    let provider = ScriptedProvider::new(
        (0..total)
            .map(|i| Step::json(&json!({"line": format!("l{i}")}), 3))
            .collect(),
    );
    let host = LocalHost::rfc0248()
        .provider(provider.clone())
        .max_concurrent_generations(8)
        .sqlite_journal(dir.join("journal.sqlite"))
        .expect("journal")
        .build();
    let run_ids: Vec<RunId> = (0..RUNS).map(|i| RunId::new(format!("load-{i}"))).collect();
    let tasks: Vec<_> = run_ids
        .iter()
        .map(|run| {
            let (host, run) = (host.clone(), run.clone());
            tokio::spawn(async move {
                let options = RunOptions {
                    run_id: Some(run),
                    owner: Some("load".into()),
                    ..RunOptions::default()
                };
                host.run_with(&Poem, json!({}), options).await
            })
        })
        .collect();
    let all = tokio::time::timeout(Duration::from_secs(240), async {
        let mut outcomes = Vec::new();
        for t in tasks {
            outcomes.push(t.await.expect("task"));
        }
        outcomes
    })
    .await
    .expect("the load finishes in bounded time");
    assert!(
        all.iter()
            .all(|o| o.result.as_ref().is_ok_and(|v| v["lines"] == CALLS)),
        "every run finishes"
    );
    assert_eq!(provider.request_count(), total);
    assert!(
        provider.max_in_flight() <= 8,
        "{} requests were in flight at once",
        provider.max_in_flight()
    );
    assert_eq!(
        host.journal().call_count().await,
        Ok(total as u64),
        "exactly the expected identities"
    );
    let ledger = host.ledger(None).await.expect("ledger");
    assert_eq!(ledger.len(), total, "exactly one charge per call");
    assert!(
        ledger
            .iter()
            .all(|c| c.charge.generations == 1 && *c.charge.beneficiaries == ["load"])
    );

    // A replay of every run makes no provider request.
    let replays: Vec<_> = run_ids
        .iter()
        .map(|run| {
            let (host, run) = (host.clone(), run.clone());
            tokio::spawn(async move { host.replay(&run, "main", &Poem, json!({})).await })
        })
        .collect();
    for r in replays {
        assert!(r.await.expect("task").result.is_ok());
    }
    assert_eq!(
        provider.request_count(),
        total,
        "replays made no provider request"
    );
    assert_eq!(
        host.ledger(None).await.map(|l| l.len()),
        Ok(total),
        "and no charge"
    );
    drop(host);
    let _ = std::fs::remove_dir_all(&dir);
}
