//! Nothing of a failure's private cause reaches a surface pack code can see: node outputs,
//! events, and the `Debug`/`Display` of every public type a node can hold.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use std::sync::{Arc, Mutex};
use wop_sdk::host::{BoxFuture, Host};
use wop_sdk::local::{LocalHost, ScriptedProvider, Step};
use wop_sdk::wire::FinishReason;
use wop_sdk::{AiRequest, Category, Node, NodeCtx, NodeError, NodeSpec, RetryPolicy, Role, Text};

const PROVIDER_ERROR: &str = "upstream 503: org-7731 quota for key sk-live-PLANTED";
const CREDENTIAL: &str = "credential-ref-vault://PLANTED/openai";
const POLICY: &str = "policy blocked topic PLANTED-weapons";
const PLANTED: [&str; 3] = ["sk-live-PLANTED", "vault://PLANTED", "PLANTED-weapons"];

#[derive(Debug, Deserialize, Serialize, JsonSchema)]
struct Title {
    title: String,
}

#[derive(Deserialize, JsonSchema)]
struct In {}

#[derive(Serialize, JsonSchema)]
struct Out {
    seen: Vec<String>,
}

/// Holds every public value it gets, renders each with Debug and Display into its output and a
/// shared log, then propagates the last failure with `?`.
struct Curious(Arc<Mutex<Vec<String>>>);

impl Node for Curious {
    type Input = In;
    type Output = Out;
    const SPEC: NodeSpec = NodeSpec {
        type_id: "community.test.curious",
        version: "1.0.0",
        category: Category::Chat,
        role: Role::SideEffect,
        label: None,
        description: None,
        max_calls: None,
        retry: RetryPolicy::NO_RETRIES,
        requires: &[],
    };
    fn run<'a, 'run>(
        &'a self,
        ctx: &'a NodeCtx<'run>,
        _input: In,
    ) -> BoxFuture<'a, Result<Out, NodeError>> {
        Box::pin(async move {
            let mut seen = Vec::new();
            for _ in 0..3 {
                match ctx.call_ai(AiRequest::<Title>::prompt("x")).await {
                    Ok(c) => seen.push(format!("{c:?}")),
                    Err(f) => {
                        seen.push(format!("{f:?} {f}"));
                        let e = NodeError::from(f);
                        seen.push(format!("{e:?} {e}"));
                    }
                }
            }
            let plain = ctx.call_ai(AiRequest::<Text>::prompt("y")).await;
            if let Err(f) = &plain {
                seen.push(format!("{f:?} {f}"));
            }
            seen.push(format!("{:?} {:?}", ctx.calls(), ctx.budget()));
            self.0
                .lock()
                .map(|mut l| l.extend(seen.iter().cloned()))
                .ok();
            let failure = match plain {
                Err(f) => f,
                Ok(_) => return Ok(Out { seen }),
            };
            let e = NodeError::from(failure);
            self.0.lock().map(|mut l| l.push(format!("{e:?} {e}"))).ok();
            Err(e)
        })
    }
}

#[tokio::test]
async fn planted_secrets_never_reach_a_pack_visible_surface() {
    let provider = ScriptedProvider::new(
        [
            Step::Error(PROVIDER_ERROR.into()),
            Step::text(POLICY, 3).finish(FinishReason::ContentFilter),
            Step::Error(CREDENTIAL.into()),
            Step::Error(format!("{PROVIDER_ERROR} {CREDENTIAL} {POLICY}")),
        ]
        .into_iter()
        .collect(),
    );
    let host = LocalHost::builder().provider(provider).build();
    let log = Arc::new(Mutex::new(Vec::new()));
    let outcome = host.run(&Curious(Arc::clone(&log)), json!({})).await;
    let events = host.events(&outcome.run_id).await;
    let mut surfaces: Vec<String> = log.lock().map(|l| l.clone()).unwrap_or_default();
    surfaces.push(format!("{:?}", outcome.result));
    surfaces.extend(
        events
            .iter()
            .map(|e| serde_json::to_string(e).unwrap_or_default()),
    );
    assert!(
        surfaces.len() > 8,
        "the node saw its failures: {surfaces:#?}"
    );
    for s in &surfaces {
        for secret in PLANTED {
            assert!(
                !s.contains(secret),
                "`{secret}` leaked into a pack-visible surface: {s}"
            );
        }
    }
    // The operator can still read every cause.
    let private: Vec<String> = host.diagnostics().into_iter().map(|d| d.cause).collect();
    for secret in PLANTED {
        assert!(
            private.iter().any(|c| c.contains(secret)),
            "`{secret}` missing from the diagnostics"
        );
    }
    let failed: Value = events.last().map(|e| e.payload.clone()).unwrap_or_default();
    assert_eq!(failed["error"]["error"], "upstream_unavailable");
}
