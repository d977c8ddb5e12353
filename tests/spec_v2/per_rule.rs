//! One test per rule, on documents the SDK writes.

use super::*;

#[test]
fn a_pack_name_is_namespace_owner_pack() {
    for (name, ok) in [
        ("community.demo.bookai", true),
        ("vendor.acme.my_tools", true),
        ("private.host.a.bC", true),
        ("community.bookai", false),
        ("community.2fa.verify", false),
        ("acme.tools.x", false),
        ("community.Demo.x", false),
    ] {
        assert_eq!(pack_name_ok(name), ok, "our rule: {name}");
        assert_eq!(is_pack_name(name), ok, "the SDK: {name}");
    }
    assert!(pack_name_ok(pack().name()));
}

#[test]
fn a_type_id_is_two_or_more_segments_camel_case_after_the_first() {
    for (id, ok) in [
        ("core.ai.callPrompt", true),
        ("vendor.acme.my_tools.echo", true),
        ("conformance.callai.echo-attempts", true),
        ("community.bookai", true),
        ("community.2fa.verify", false),
        ("Core.ai.x", false),
        ("core_X.y", false),
        ("echo", false),
        ("a..b", false),
    ] {
        assert_eq!(type_id_ok(id), ok, "our rule: {id}");
        assert_eq!(is_type_id(id), ok, "the SDK: {id}");
    }
}

#[test]
fn a_node_object_is_closed_and_names_its_schema_files() {
    let p = pack();
    let m = p.manifest();
    assert_eq!(
        manifest_problems(&m, &p.schema_files()),
        Vec::<String>::new()
    );
    assert_eq!(validate_manifest(&m), Ok(()));
    // An own key without a prefix breaks the rule, and the SDK says so.
    let mut broken = m.clone();
    broken["nodes"][0]["maxCalls"] = json!(3);
    broken["nodes"][0]["inputSchema"] = json!({});
    assert_eq!(manifest_problems(&broken, &p.schema_files()).len(), 2);
    assert_eq!(validate_manifest(&broken).err().map(|e| e.len()), Some(2));
    // With its prefix it is carried.
    let mut extended = m;
    extended["nodes"][0]["x-maxCalls"] = json!(3);
    assert_eq!(validate_manifest(&extended), Ok(()));
}

#[test]
fn a_signed_manifest_carries_the_closed_v2_signing_block() {
    let p = pack();
    let mut signed = p.manifest();
    signed["signing"] = json!({"keyId": "alice-1", "scheme": "ed25519-canonical-json"});
    assert_eq!(
        manifest_problems(&signed, &p.schema_files()),
        Vec::<String>::new()
    );
    assert_eq!(validate_manifest(&signed), Ok(()));
    // The v1 block (`method`, `publicKeyRef`, `signatureRef`) is not v2.
    let mut v1 = signed.clone();
    v1["signing"] = json!({"method": "manual", "publicKeyRef": "alice-1",
                           "signatureRef": "keys/pack.json.sig"});
    let problems = manifest_problems(&v1, &p.schema_files());
    assert_eq!(problems.len(), 5, "{problems:#?}");
    assert_eq!(validate_manifest(&v1).err().map(|e| e.len()), Some(5));
}

#[test]
fn the_runtime_is_a_v2_language_with_an_entry_in_the_pack() {
    let p = pack();
    let m = p.manifest();
    assert_eq!(m["runtime"]["language"], "javascript");
    assert_eq!(m["runtime"]["entry"], "index.mjs");
    for (language, entry) in [("rust", "index.mjs"), ("javascript", "")] {
        let mut broken = m.clone();
        broken["runtime"] = json!({"language": language, "entry": entry});
        assert_eq!(manifest_problems(&broken, &p.schema_files()).len(), 1);
        assert!(validate_manifest(&broken).is_err(), "{language} {entry}");
    }
}

#[test]
fn a_facet_named_in_peer_dependencies_meta_is_declared() {
    let m = pack().manifest();
    assert_eq!(
        m["peerDependenciesMeta"],
        json!({"aiProviders": {"facets": ["callAccounting"]}})
    );
    let mut broken = m;
    broken["peerDependenciesMeta"]["aiProviders"]["facets"] = json!(["attempts"]);
    assert_eq!(manifest_problems(&broken, &pack().schema_files()).len(), 1);
    assert!(validate_manifest(&broken).is_err());
}

#[tokio::test]
async fn an_event_is_wrapped_with_id_time_version_and_a_sequence_from_0() {
    let (run_id, events) = run_title(vec![good()], false).await;
    assert!(run_id_ok(&run_id), "{run_id}");
    assert_eq!(log_problems(&events), Vec::<String>::new());
    assert_eq!(events[0]["sequence"], 0);
    let types: Vec<&str> = events.iter().filter_map(|e| e["type"].as_str()).collect();
    assert_eq!(types, ["node.started", "provider.usage", "node.completed"]);
}

#[tokio::test]
async fn node_completed_carries_a_port_map() {
    let (_, events) = run_title(vec![good()], false).await;
    let done = of_type(&events, "node.completed");
    assert_eq!(done.len(), 1);
    assert_eq!(done[0]["payload"]["outputs"], json!({"title": "ok"}));
    assert!(done[0]["payload"].get("output").is_none());
}

#[tokio::test]
async fn node_failed_carries_code_and_message() {
    let (_, events) = run_title(vec![Step::text("nope", 1); 3], false).await;
    assert_eq!(log_problems(&events), Vec::<String>::new());
    let failed = of_type(&events, "node.failed");
    assert_eq!(failed.len(), 1);
    assert_eq!(failed[0]["payload"]["error"]["code"], "envelope_invalid");
    assert!(failed[0]["payload"]["error"].get("error").is_none());
}

#[tokio::test]
async fn retry_reasons_are_registered_values_or_host_extensions() {
    let (_, events) = run_title(
        vec![
            Step::Error("503 from upstream".into()),
            Step::text("not json", 2),
            good(),
        ],
        false,
    )
    .await;
    assert_eq!(log_problems(&events), Vec::<String>::new());
    let reasons: Vec<&str> = of_type(&events, "envelope.retry-attempted")
        .iter()
        .filter_map(|e| e["payload"]["reason"].as_str())
        .collect();
    assert_eq!(reasons.len(), 2);
    assert!(!reasons.contains(&"provider-error"));
    assert_eq!(reasons[1], "parse-error");
}

#[tokio::test]
async fn a_cut_at_the_token_budget_is_max_tokens() {
    let (_, events) = run_title(
        vec![
            Step::text("{\"title\": \"cut", 50).finish(FinishReason::Length),
            good(),
        ],
        false,
    )
    .await;
    assert_eq!(log_problems(&events), Vec::<String>::new());
    let cut = of_type(&events, "envelope.truncated");
    assert_eq!(cut.len(), 1);
    assert_eq!(cut[0]["payload"]["stopReason"], "max_tokens");
}

#[tokio::test]
async fn the_nl_to_format_fallback_has_its_v2_name() {
    assert_eq!(
        normalize_type("envelope.nlToFormat.engaged"),
        "envelope.nl-to-format-engaged"
    );
    let v1 = RunEvent::from_json(
        &json!({"type": "envelope.nlToFormat.engaged", "runId": "local/0123456789abcdef",
        "payload": {"nodeId": "n", "originalEnvelopeType": "structured"}}),
    )
    .expect("a v1 event reads");
    assert_eq!(v1.to_json()["type"], "envelope.nl-to-format-engaged");
    let (_, events) = run_title(vec![Step::text("no", 1); 4], true).await;
    assert_eq!(log_problems(&events), Vec::<String>::new());
    assert_eq!(of_type(&events, "envelope.nl-to-format-engaged").len(), 1);
}

#[test]
fn the_capability_document_names_versions_and_records_each_family() {
    let host = LocalHost::rfc0248().nl_fallback(true).build();
    let doc = host.capabilities().to_json();
    assert_eq!(caps_problems(&doc), Vec::<String>::new());
    assert_eq!(doc["preferredVersion"], "2.0");
    assert_eq!(
        doc.pointer("/aiProviders/callAccounting/attempts"),
        Some(&json!(true))
    );
    // A missing record, a v1 short event name or an out-of-range multiplier break the rules.
    let mut broken = doc.clone();
    broken["providerUsage"] = json!({});
    broken["envelopes"]["reliability"]["events"] = json!(["retry-exhausted", "envelope.refusal"]);
    broken["envelopes"]["reliability"]["completion"]["truncationBudgetMultiplier"] = json!(9);
    let problems = caps_problems(&broken).join("\n");
    for expected in [
        "providerUsage.status",
        "providerUsage.since",
        "providerUsage.witness",
        "retry-exhausted: not a full v2 name",
        "truncationBudgetMultiplier 9",
    ] {
        assert!(problems.contains(expected), "{expected} in {problems}");
    }
}

#[test]
fn a_fractional_truncation_multiplier_is_read_and_written() {
    let host = LocalHost::rfc0248().build();
    let mut doc = host.capabilities().to_json();
    doc["envelopes"]["reliability"]["completion"]["truncationBudgetMultiplier"] = json!(1.5);
    let read = CapabilityDocument::from_json(&doc).expect("1.5 is in 1..8");
    let written = read.to_json();
    assert_eq!(
        written.pointer("/envelopes/reliability/completion/truncationBudgetMultiplier"),
        Some(&json!(1.5))
    );
    assert_eq!(caps_problems(&written), Vec::<String>::new());
}

#[test]
fn every_error_code_is_registered_or_a_vendor_code() {
    for code in ErrorCode::ALL {
        assert!(code_ok(code.as_str()), "{}", code.as_str());
        let envelope = wop_sdk::wire::ErrorEnvelope::new(code, "m");
        let json = serde_json::to_value(&envelope).expect("serializes");
        assert_eq!(envelope_problems(&json), Vec::<String>::new());
    }
    for bad in ["budget_exhausted", "openwop.x", "Wop.x", "a.b.c"] {
        assert!(!code_ok(bad), "{bad}");
    }
}
