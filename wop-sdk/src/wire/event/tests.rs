//! Events: v2 serialization, v1 spellings read, every rule naming its field.

use super::*;
use std::time::Duration;

#[test]
fn timestamps_are_rfc3339_utc() {
    assert_eq!(rfc3339(UNIX_EPOCH), "1970-01-01T00:00:00.000Z");
    let t = UNIX_EPOCH + Duration::from_millis(1_709_164_800_123); // a leap day
    assert_eq!(rfc3339(t), "2024-02-29T00:00:00.123Z");
    let t = UNIX_EPOCH + Duration::from_secs(4_102_444_799); // last second of 2099
    assert_eq!(rfc3339(t), "2099-12-31T23:59:59.000Z");
    let t = UNIX_EPOCH + Duration::from_secs(253_402_300_799) + Duration::from_millis(999);
    assert_eq!(rfc3339(t), "9999-12-31T23:59:59.999Z");
    let t = UNIX_EPOCH + Duration::from_secs(253_402_300_800 + 86_400 + 3_661);
    assert_eq!(
        rfc3339(t),
        "10000-01-02T01:01:01.000Z",
        "past 9999: five digits"
    );
}

#[test]
fn timestamps_agree_with_a_formatted_civil_date_over_four_centuries() {
    // Every 7th day and an odd time of day, 1970..2370, against the fields formatted by `format!`.
    for day in (0..146_097u64).step_by(7) {
        let secs = day * 86_400 + (day * 7_919) % 86_400;
        let t = UNIX_EPOCH + Duration::from_secs(secs) + Duration::from_millis(day % 1000);
        let text = rfc3339(t);
        let (date, time) = text.split_once('T').expect("a T");
        let rem = secs % 86_400;
        assert_eq!(
            time,
            format!(
                "{:02}:{:02}:{:02}.{:03}Z",
                rem / 3600,
                rem % 3600 / 60,
                rem % 60,
                day % 1000
            )
        );
        let parts: Vec<u32> = date
            .split('-')
            .map(|p| p.parse().expect("digits"))
            .collect();
        let [y, m, d] = parts[..] else {
            panic!("{text}: not a date")
        };
        assert!((1..=12).contains(&m) && (1..=31).contains(&d), "{text}");
        assert_eq!(date.len(), 10, "{text}");
        // Days since the epoch, back from the civil date (the inverse of Hinnant's algorithm).
        let (y, m) = (i64::from(y) - i64::from(m <= 2), i64::from(m));
        let era = y.div_euclid(400);
        let yoe = y - era * 400;
        let doy = (153 * (if m > 2 { m - 3 } else { m + 9 }) + 2) / 5 + i64::from(d) - 1;
        let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
        assert_eq!(era * 146_097 + doe - 719_468, day as i64, "{text}");
    }
}

#[test]
fn event_ids_are_opaque_ids_and_differ() {
    let a = event_id("local/0123456789abcdef", 0);
    assert_eq!(grammar::opaque_id_problem(&a), None);
    assert_ne!(a, event_id("local/0123456789abcdef", 1));
    assert_ne!(a, event_id("local/0123456789abcdee", 0));
}

#[test]
fn v1_names_become_v2_names() {
    for (v1, v2) in [
        ("envelope.retry.exhausted", "envelope.retry-exhausted"),
        (
            "envelope.nlToFormat.engaged",
            "envelope.nl-to-format-engaged",
        ),
        ("envelope.retry-attempted", "envelope.retry-attempted"),
        ("agent.toolCalled", "agent.tool-called"),
        ("run.dead_lettered", "run.dead-lettered"),
        ("node.completed", "node.completed"),
        ("core.dispatch.fanOut", "dispatch.fanned-out"),
    ] {
        assert_eq!(normalize_type(v1), v2);
    }
}

#[test]
fn the_first_payloads_are_read_as_v2() {
    let done = Event::from_parts("node.completed", &json!({"nodeId": "n", "output": 3}));
    assert_eq!(
        done.map(|e| e.payload()).ok(),
        Some(json!({"nodeId": "n", "outputs": {"output": 3}}))
    );
    let failed = Event::from_parts(
        "node.failed",
        &json!({"nodeId": "n", "error": {"error": "budget_exhausted", "message": "m"}}),
    );
    assert_eq!(
        failed.map(|e| e.payload()).ok(),
        Some(json!({"nodeId": "n", "error": {"code": "budget_exhausted", "message": "m"}}))
    );
    let retry = Event::from_parts(
        "envelope.retry.attempted",
        &json!({"nodeId": "n", "attempt": 2, "reason": "provider-error"}),
    );
    assert_eq!(
        retry.map(|e| e.payload()["reason"].clone()).ok(),
        Some(json!(PROVIDER_FAILURE_REASON))
    );
}

#[test]
fn a_built_event_is_checked_against_the_payload_rules() {
    let retry = |attempt, reason: &str| {
        Event::RetryAttempted(RetryAttempted {
            node_id: "n".into(),
            attempt,
            reason: reason.into(),
            previous_error: None,
        })
    };
    assert_eq!(retry(2, "parse-error").check(), Ok(()));
    for (event, field) in [
        (retry(0, "parse-error"), "payload.attempt"),
        (retry(17, "parse-error"), "payload.attempt"),
        (retry(2, "because"), "payload.reason"),
        (
            Event::RetryExhausted(RetryExhausted {
                node_id: "n".into(),
                total_attempts: 0,
                final_reason: "parse-error".into(),
                final_error: None,
            }),
            "payload.totalAttempts",
        ),
        (
            Event::Truncated(Truncated {
                node_id: "n".into(),
                provider: "p".into(),
                model: "m".into(),
                stop_reason: "tired".into(),
                output_token_count: None,
            }),
            "payload.stopReason",
        ),
        (
            Event::NodeFailed(NodeFailed {
                node_id: "n".into(),
                error: EventError {
                    code: "node_failed".into(),
                    message: String::new(),
                    details: None,
                },
                attempts: None,
            }),
            "payload.error.message",
        ),
        (
            Event::NodeStarted(NodeStarted {
                node_id: "".into(),
                type_id: "c.x".into(),
                attempt: None,
            }),
            "payload.nodeId",
        ),
    ] {
        let e = event.check().expect_err(field);
        assert_eq!(e.to_envelope().field(), Some(field), "{e:?}");
    }
}

#[test]
fn a_broken_payload_names_the_field() {
    for (kind, payload, field) in [
        (
            "provider.usage",
            json!({"model": "m", "outputTokens": 1}),
            "payload.provider",
        ),
        (
            "envelope.retry-attempted",
            json!({"nodeId": "n", "attempt": 2, "reason": "because"}),
            "payload.reason",
        ),
        (
            "envelope.truncated",
            json!({"nodeId": "n", "provider": "p", "model": "m", "stopReason": "cut"}),
            "payload.stopReason",
        ),
        (
            "node.failed",
            json!({"nodeId": "n", "error": {"message": "m"}}),
            "payload.error.code",
        ),
        (
            "node.completed",
            json!({"nodeId": "n", "outputs": 3}),
            "payload.outputs",
        ),
    ] {
        let e = Event::from_parts(kind, &payload).err();
        assert_eq!(e.map(|e| e.field), Some(field.to_owned()), "{kind}");
    }
}

#[test]
fn an_unknown_type_is_kept() {
    let e = Event::from_parts("vendor.thing-happened", &json!({"x": 1}));
    assert_eq!(
        e.as_ref().map(Event::kind).ok(),
        Some("vendor.thing-happened")
    );
    assert_eq!(e.map(|e| e.payload()).ok(), Some(json!({"x": 1})));
}

#[test]
fn the_wrapper_is_v2_and_reads_back() {
    let ev = RunEvent::new(
        "local/0123456789abcdef",
        0,
        "2026-12-03T09:00:00.000Z".into(),
        Event::NodeStarted(NodeStarted {
            node_id: "n".into(),
            type_id: "community.demo.x".into(),
            attempt: None,
        }),
    );
    let json = ev.to_json();
    let keys: Vec<&str> = json
        .as_object()
        .map(|m| m.keys().map(String::as_str).collect())
        .unwrap_or_default();
    let mut keys = keys;
    keys.sort_unstable();
    assert_eq!(
        keys,
        [
            "eventId",
            "nodeId",
            "payload",
            "runId",
            "schemaVersion",
            "sequence",
            "timestamp",
            "type"
        ]
    );
    assert_eq!(RunEvent::from_json(&json).ok(), Some(ev));
    let old = RunEvent::from_json(&json!({"seq": 1, "runId": "r", "type": "node.started",
        "payload": {"nodeId": "n", "typeId": "t.x"}}));
    assert_eq!(old.map(|e| e.sequence).ok(), Some(0));
}

#[test]
fn provider_usage_writes_its_shared_names_as_strings_and_reads_them_back() {
    let event = Event::ProviderUsage(ProviderUsage {
        provider: Arc::from("mock"),
        model: "m-1".into(),
        input_tokens: 3,
        output_tokens: 4,
        total_tokens: Some(7),
        node_id: Some(Arc::from("main")),
    });
    let text = event.payload_text();
    assert_eq!(
        text,
        r#"{"provider":"mock","model":"m-1","inputTokens":3,"outputTokens":4,"totalTokens":7,"nodeId":"main"}"#
    );
    let payload: Value = serde_json::from_str(&text).expect("JSON");
    assert_eq!(
        Event::from_parts("provider.usage", &payload).ok(),
        Some(event)
    );
    let bare = json!({"provider": "p", "model": "m", "outputTokens": 1, "nodeId": null});
    let read = Event::from_parts("provider.usage", &bare).expect("valid");
    assert_eq!(read.node_id(), None);
    assert_eq!(
        read.payload_text(),
        r#"{"provider":"p","model":"m","inputTokens":0,"outputTokens":1}"#
    );
}
