//! The requests that reach `ctx.callAI`, as JSON text, are exactly those the bridge sent before
//! its ABI 2 (issue 27 item 4: the request written without a JSON value, its response schema
//! handed to JavaScript once per node execution and copied for each call).
//!
//! `callai_requests.json` holds, for Book AI's three nodes on each kind of host, the text of
//! every request `ctx.callAI` received from the bridge of ABI 1 (commit d98460e, the harness's
//! `callAI` record), keys in the order they arrived. Each step here runs with
//! `mutateRequests`: the host changes the response schema it was given once it has answered, so
//! a schema shared between calls would show in the next request.
//!
//! A deliberate change of what the runtime sends (a prompt, a new field) changes these texts:
//! then record them again, from the bridge before the change, by running `check`'s scenario
//! through the harness and writing each step's `callAI` under its host kind and node id.

use super::{book_steps, harness, scenario};
use serde_json::Value;

fn expected() -> Value {
    serde_json::from_str(include_str!("callai_requests.json")).expect("the recorded requests")
}

fn check(rfc0248: bool, kind: &str) {
    let mut steps = book_steps();
    for step in steps.as_array_mut().expect("steps") {
        step["mutateRequests"] = Value::Bool(true);
    }
    let report = harness(&scenario(rfc0248, steps));
    let expected = &expected()[kind];
    for step in report["steps"].as_array().expect("steps") {
        let node = step["nodeId"].as_str().expect("a node id");
        assert_eq!(step["outcome"]["status"], "success", "{step:#}");
        let received = step["callAI"].as_array().expect("the requests received");
        let before = expected[node].as_array().expect("recorded requests");
        assert_eq!(received.len(), before.len(), "{kind} {node}");
        for (i, (now, then)) in received.iter().zip(before).enumerate() {
            let now = now.as_str().expect("JSON text");
            assert!(
                !now.contains("mutatedByHost"),
                "{kind} {node} request {i}: a schema the host changed reached a later call: {now}"
            );
            assert_eq!(now, then.as_str().expect("JSON text"), "{kind} {node} {i}");
        }
    }
    // The draft node's three calls (scene 1, its repair, scene 2) are structured.
    let draft = &expected["draft-1"];
    assert_eq!(draft.as_array().map(Vec::len), Some(3));
    for text in draft.as_array().into_iter().flatten() {
        assert!(
            text.as_str()
                .is_some_and(|t| t.contains("\"responseSchema\":{"))
        );
    }
}

#[test]
fn an_rfc_0248_host_gets_every_request_as_before() {
    check(true, "rfc0248");
}

#[test]
fn openwop_apps_public_snapshot_gets_every_request_as_before() {
    check(false, "plain");
}
