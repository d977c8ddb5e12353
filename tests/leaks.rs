//! Nothing of a failure's private cause reaches a surface pack code can see: node outputs,
//! events, and the `Debug`/`Display` of every public type a node can hold.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use std::sync::Mutex;
use wop_sdk::host::Host;
use wop_sdk::wire::FinishReason;
use wop_sdk::{AiRequest, NodeCtx, NodeError, Text, wop_node};
use wop_sdk_host::local::{LocalHost, ScriptedProvider, Step};

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

/// What the node rendered: the test reads it after the run.
static SEEN: Mutex<Vec<String>> = Mutex::new(Vec::new());

fn log(line: String) {
    SEEN.lock().map(|mut l| l.push(line)).ok();
}

/// Renders every public value it gets with Debug and Display into the log, then propagates the
/// last failure with `?`.
#[wop_node(
    type_id = "community.test.curious",
    version = "1.0.0",
    retry(max_attempts = 1)
)]
async fn curious(ctx: &NodeCtx<'_>, _input: In) -> Result<Out, NodeError> {
    for _ in 0..3 {
        match ctx.call_ai(AiRequest::<Title>::prompt("x")).await {
            Ok(c) => log(format!("{c:?}")),
            Err(f) => {
                log(format!("{f:?} {f}"));
                let e = NodeError::from(f);
                log(format!("{e:?} {e}"));
            }
        }
    }
    let failure = match ctx.call_ai(AiRequest::<Text>::prompt("y")).await {
        Err(f) => f,
        Ok(c) => {
            return Ok(Out {
                seen: vec![format!("{:?}", c.output())],
            });
        }
    };
    log(format!("{failure:?} {failure}"));
    log(format!("{:?} {:?}", ctx.calls(), ctx.budget()));
    let e = NodeError::from(failure);
    log(format!("{e:?} {e}"));
    Err(e)
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
    let host = LocalHost::rfc0248().provider(provider).build();
    let outcome = host.run(&Curious, json!({})).await;
    let events = host.events(&outcome.run_id).await;
    let mut surfaces: Vec<String> = SEEN.lock().map(|l| l.clone()).unwrap_or_default();
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
    let failed: Value = events.last().map(|e| e.payload()).unwrap_or_default();
    assert_eq!(failed["error"]["code"], "wop-sdk.upstream_unavailable");
}
