use super::*;

#[test]
fn reliability_events_get_their_full_names() {
    for (read, full) in [
        ("retry-exhausted", "envelope.retry-exhausted"),
        ("envelope.retry.exhausted", "envelope.retry-exhausted"),
        ("envelope.retry-attempted", "envelope.retry-attempted"),
        ("nl-to-format-engaged", "envelope.nl-to-format-engaged"),
        (
            "envelope.nlToFormat.engaged",
            "envelope.nl-to-format-engaged",
        ),
        ("refusal", "envelope.refusal"),
    ] {
        assert_eq!(reliability_event_name(read), full, "{read}");
    }
}

#[test]
fn a_fractional_multiplier_is_read() {
    let doc = json!({"protocolVersions": ["2.0"], "preferredVersion": "2.0",
        "envelopes": {"status": "stable", "since": "2.0", "witness": "claims-check",
            "reliability": {"completion": {"distinguishesTruncation": true,
                "truncationBudgetMultiplier": 1.5}}}});
    let read = CapabilityDocument::from_json(&doc).map(|d| d.reliability);
    assert_eq!(
        read.ok()
            .flatten()
            .map(|r| r.completion.truncation_budget_multiplier),
        Some(1.5)
    );
    let over = json!({"envelopes": {"reliability": {"completion": {
        "truncationBudgetMultiplier": 9}}}});
    let e = CapabilityDocument::from_json(&over).err();
    assert_eq!(
        e.map(|e| e.field),
        Some("envelopes.reliability.completion.truncationBudgetMultiplier".to_owned())
    );
}

#[test]
fn records_are_read_and_written_back() {
    let doc = json!({"protocolVersions": ["2.0", "2.1"], "preferredVersion": "2.1",
        "providerUsage": {"status": "experimental", "since": "2.1", "until": "3.0",
            "witness": "witnessable-gated"}});
    let read = CapabilityDocument::from_json(&doc).unwrap_or_default();
    assert_eq!(read.preferred_version, "2.1");
    assert!(read.provider_usage);
    assert_eq!(read.to_json()["providerUsage"], doc["providerUsage"]);
}
