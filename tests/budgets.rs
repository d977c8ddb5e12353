//! Honest budgets on both kinds of host (issue 25): the estimate's worst case on a host with
//! `aiProviders.callAccounting` and on one without it, and the check a tool runs before
//! publishing (`Pack::budget_warnings`).

use book_ai::pack;
use serde_json::json;
use wop_sdk::budget::{CallPlan, PlannedCall};
use wop_sdk::manifest::Pack;
use wop_sdk::wire::CapabilityDocument;
use wop_sdk::{AiRequest, Capabilities, Node, NodeCtx, NodeError, Text, wop_node};
use wop_sdk_host::local::LocalHost;

fn local_caps() -> Capabilities {
    Capabilities::negotiate(LocalHost::rfc0248().build().capabilities())
}

#[test]
fn a_host_without_call_accounting_charges_its_ceiling_and_the_fallback() {
    let caps = local_caps();
    assert!(caps.document().call_accounting.is_some());
    let older = caps.without_call_accounting();
    assert!(older.document().call_accounting.is_none());
    assert_eq!(older.max_retry_attempts(), caps.max_retry_attempts() + 1);
    // A document that already advertises no callAccounting says what its host charges.
    assert_eq!(older.without_call_accounting().max_retry_attempts(), 4);
    let bare = Capabilities::negotiate(
        CapabilityDocument::from_json(&json!({"aiProviders": {"providers": ["mock"]}}))
            .expect("a document"),
    );
    assert_eq!(bare.without_call_accounting().max_retry_attempts(), 3);
}

/// Two structured calls that ask the host for at most 2 requests each.
#[wop_node(
    type_id = "community.test.two-calls",
    version = "1.0.0",
    max_calls = 6,
    retry(max_attempts = 2),
    plan = two_calls
)]
async fn tight(ctx: &NodeCtx<'_>, _input: serde_json::Value) -> Result<String, NodeError> {
    let c = ctx.call_ai(AiRequest::<Text>::prompt("x")).await?;
    Ok(c.into_output().map(|t| t.0).unwrap_or_default())
}

fn two_calls(_input: &serde_json::Value) -> CallPlan {
    CallPlan::new([PlannedCall::structured(100, Tight::SPEC.retry).times(2)])
}

#[test]
fn the_estimate_and_the_check_show_both_kinds_of_host() {
    let caps = local_caps();
    let book = pack::pack();
    let chapter = json!({"chapter": {"number": 1, "title": "t", "characters": ["A"],
                                      "scenes": ["one", "two"]}, "minWords": 10});
    // Book AI's draft node fits both: 12 requests here, 16 without callAccounting.
    let inputs = json!({"community.demo.bookai.draft-scene": chapter});
    assert_eq!(book.budget_warnings(&caps, &inputs), Vec::<String>::new());

    // A node whose policy keeps it within 6 on an RFC 0248 host (2 x 2) but not where the
    // policy is not honoured (2 x 4).
    let tight = Pack::new("community.test.budgets", "0.1.0").node(Tight);
    let warnings = tight.budget_warnings(&caps, &json!({"community.test.two-calls": {}}));
    assert_eq!(warnings.len(), 1, "{warnings:#?}");
    let w = &warnings[0];
    assert!(
        w.starts_with("node `community.test.two-calls`: `max_calls = 6`"),
        "{w}"
    );
    assert!(w.contains("8 in all (4 on this host)"), "{w}");
    assert!(w.contains("raise `max_calls` to 8"), "{w}");
    // No input, no plan: not checked. An input the node refuses is said, with its field.
    assert!(tight.budget_warnings(&caps, &json!({})).is_empty());
    let refused = book.budget_warnings(
        &caps,
        &json!({"community.demo.bookai.draft-scene": {"chapter": 3}}),
    );
    assert_eq!(refused.len(), 1, "{refused:#?}");
    assert!(refused[0].contains("not checked"), "{}", refused[0]);
}
