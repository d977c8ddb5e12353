//! The contract every journal store passes. Each store's tests call these functions.

use super::*;
use serde_json::json;
use wop_sdk::host::AttemptKey;

fn key(run: &str, call: u32) -> AttemptKey {
    AttemptKey {
        run_id: RunId::new(run),
        node_id: "n1".into(),
        call_index: call,
    }
}

fn fp(b: u8) -> Fingerprint {
    Fingerprint([b; 32])
}

/// The typed event of `kind` with `payload`, as a host would read it.
pub(crate) fn event(kind: &str, payload: serde_json::Value) -> Event {
    Event::from_parts(kind, &payload).expect("a valid event")
}

fn completed(text: &str) -> Outcome {
    Outcome::Completed {
        result: text.to_owned(),
    }
}

/// Fresh, then recorded, mismatch and unfinished answers.
pub(crate) async fn begin_answers(j: &dyn Journal) {
    let k = key("r1", 0);
    assert_eq!(j.begin(&k, &fp(1), "a-1").await, Ok(Begin::Fresh));
    assert_eq!(
        j.begin(&k, &fp(1), "a-other").await,
        Ok(Begin::Unfinished {
            attempt_id: "a-1".into(),
            requests: 0
        })
    );
    j.record_request(&k, 1, 100).await.expect("record request");
    j.record_request(&k, 2, 200).await.expect("record request");
    assert_eq!(
        j.begin(&k, &fp(1), "x").await,
        Ok(Begin::Unfinished {
            attempt_id: "a-1".into(),
            requests: 2
        })
    );
    assert_eq!(j.begin(&k, &fp(2), "x").await, Ok(Begin::Mismatch));
    let charge = Charge {
        beneficiaries: vec!["u1".into()].into(),
        generations: 2,
        output_tokens: 300,
    };
    let events = vec![event(
        "provider.usage",
        json!({"provider": "mock", "model": "m", "inputTokens": 1, "outputTokens": 100}),
    )];
    j.finish(
        &k,
        completed(r#"{"content":"hi"}"#),
        Some(charge.clone()),
        events,
    )
    .await
    .expect("finish");
    assert_eq!(
        j.begin(&k, &fp(1), "x").await,
        Ok(Begin::Recorded {
            attempt_id: "a-1".into(),
            outcome: completed(r#"{"content":"hi"}"#)
        })
    );
    assert_eq!(j.begin(&k, &fp(2), "x").await, Ok(Begin::Mismatch));
    assert!(
        j.finish(&k, completed("again"), None, Vec::new())
            .await
            .is_err(),
        "an outcome is written once"
    );
    let rows = j.charges(Some(&RunId::new("r1"))).await.expect("charges");
    assert_eq!(rows.len(), 1);
    assert_eq!(rows[0].charge, charge);
    let ev = j.events(&RunId::new("r1")).await.expect("events");
    assert_eq!(ev.len(), 1);
    assert_eq!(ev[0].sequence, 0);
    assert_eq!(ev[0].u64("outputTokens"), Some(100));
    assert!(
        j.completed_attempt(&RunId::new("r1"), "a-1")
            .await
            .expect("lineage")
    );
    assert!(
        !j.completed_attempt(&RunId::new("r2"), "a-1")
            .await
            .expect("lineage")
    );
    assert_eq!(j.call_count().await, Ok(1));
}

/// A failed outcome is replayed as failed and is never a lineage source; a terminal write with an
/// event that breaks a payload rule is refused whole.
pub(crate) async fn failures_and_lineage(j: &dyn Journal) {
    let k = key("r3", 0);
    assert_eq!(j.begin(&k, &fp(3), "a-3").await, Ok(Begin::Fresh));
    let failed = Outcome::Failed {
        public: wop_sdk::wire::ErrorEnvelope::new(
            wop_sdk::wire::ErrorCode::UpstreamUnavailable,
            "unknown",
        ),
        private_cause: "socket reset".into(),
        ambiguous: true,
    };
    j.finish(&k, failed.clone(), None, Vec::new())
        .await
        .expect("finish");
    assert_eq!(
        j.begin(&k, &fp(3), "x").await,
        Ok(Begin::Recorded {
            attempt_id: "a-3".into(),
            outcome: failed
        })
    );
    assert!(
        !j.completed_attempt(&RunId::new("r3"), "a-3")
            .await
            .expect("lineage")
    );
    assert!(
        j.charges(Some(&RunId::new("r3")))
            .await
            .expect("charges")
            .is_empty()
    );
    assert!(j.record_request(&key("nope", 0), 1, 1).await.is_err());

    // A terminal write with an event that breaks a payload rule is refused whole: no outcome, no
    // charge, no event; the call stays unfinished.
    let k = key("r4", 0);
    assert_eq!(j.begin(&k, &fp(4), "a-4").await, Ok(Begin::Fresh));
    let charge = Charge {
        beneficiaries: vec!["u4".into()].into(),
        generations: 1,
        output_tokens: 5,
    };
    let events = vec![
        event(
            "provider.usage",
            json!({"provider": "mock", "model": "m", "outputTokens": 5, "nodeId": "n"}),
        ),
        Event::RetryAttempted(wop_sdk::wire::RetryAttempted {
            node_id: "n".into(),
            attempt: 2,
            reason: "because".into(),
            previous_error: None,
        }),
    ];
    let refused = j
        .finish(
            &k,
            completed(r#"{"content":"x"}"#),
            Some(charge.clone()),
            events,
        )
        .await;
    assert!(
        matches!(&refused, Err(JournalError::Io(m)) if m.contains("payload.reason")),
        "{refused:?}"
    );
    assert!(matches!(
        j.begin(&k, &fp(4), "x").await,
        Ok(Begin::Unfinished { .. })
    ));
    let r4 = RunId::new("r4");
    assert!(j.charges(Some(&r4)).await.expect("charges").is_empty());
    assert!(j.events(&r4).await.expect("events").is_empty());
}

/// Runs, events and their order.
pub(crate) async fn runs_and_events(j: &dyn Journal) {
    let run = RunRecord {
        run_id: RunId::new("r9"),
        owner: "o".into(),
        replay_of: None,
        meta: RunMeta {
            node_id: "x".into(),
            ..RunMeta::default()
        },
    };
    j.begin_run(run.clone()).await.expect("run");
    j.begin_run(run.clone()).await.expect("idempotent");
    assert_eq!(
        j.runs()
            .await
            .expect("runs")
            .iter()
            .filter(|r| r.run_id.as_str() == "r9")
            .count(),
        1
    );
    assert_eq!(j.run(&RunId::new("r9")).await, Ok(Some(run)));
    let r = RunId::new("r9");
    assert_eq!(
        j.append_event(
            &r,
            event("node.started", json!({"nodeId": "n", "typeId": "c.x"}))
        )
        .await,
        Ok(0)
    );
    assert_eq!(
        j.append_event(
            &r,
            event("node.completed", json!({"nodeId": "n", "output": 1}))
        )
        .await,
        Ok(1)
    );
    // An event that breaks a v2 payload rule is refused, naming the field; nothing is written.
    let refused = j
        .append_event(
            &r,
            Event::RetryExhausted(wop_sdk::wire::RetryExhausted {
                node_id: "n".into(),
                total_attempts: 0,
                final_reason: "parse-error".into(),
                final_error: None,
            }),
        )
        .await;
    assert!(
        matches!(&refused, Err(JournalError::Io(m)) if m.contains("payload.totalAttempts")),
        "{refused:?}"
    );
    let events = j.events(&r).await.expect("events");
    let kinds: Vec<&str> = events.iter().map(RunEvent::kind).collect();
    assert_eq!(kinds, ["node.started", "node.completed"]);
    // Stored the v2 way: sequence from 0, ids, timestamps, the port map.
    for (i, e) in events.iter().enumerate() {
        assert_eq!(e.sequence, i as u64);
        assert_eq!(e.run_id, "r9");
        assert_eq!(e.event_id, wop_sdk::wire::event_id("r9", i as u64));
        assert!(
            e.timestamp.ends_with('Z') && e.timestamp.len() == 24,
            "{}",
            e.timestamp
        );
    }
    assert_eq!(events[1].payload()["outputs"], json!({"output": 1}));
}

/// A lease is written with the identity, renewed only by its holder, never taken over by a
/// second entry, and given up with the outcome; a waiter reattaches to a live owner's outcome.
pub(crate) async fn leases(j: &dyn Journal) {
    use super::lease::{Awaited, await_owner};
    let k = key("leased", 0);
    let owner = Lease::now("owner-host");
    assert_eq!(
        j.begin_leased(&k, &fp(7), "a-7", 100, &owner).await,
        Ok(Begin::Fresh)
    );
    assert_eq!(j.leased(&k).await, Ok(Some(owner.clone())));
    assert_eq!(
        j.lookup(&k).await.expect("lookup").map(|e| e.requests),
        Some(1),
        "request 1 is announced with the identity"
    );
    // A second entry finds the call unfinished and does not take the lease.
    let second = Lease::now("second-host");
    assert_eq!(
        j.begin_leased(&k, &fp(7), "a-other", 100, &second).await,
        Ok(Begin::Unfinished {
            attempt_id: "a-7".into(),
            requests: 1
        })
    );
    assert_eq!(j.leased(&k).await, Ok(Some(owner.clone())));
    assert_eq!(j.renew_lease(&k, &second).await, Ok(false));
    let mut renewed = owner.clone();
    renewed.heartbeat_ms += 500;
    assert_eq!(j.renew_lease(&k, &renewed).await, Ok(true));
    assert_eq!(j.leased(&k).await, Ok(Some(renewed.clone())));
    // The holder's own stale lease is not waited for.
    assert_eq!(
        await_owner(j, &k, "owner-host").await,
        Ok(Awaited::Abandoned)
    );
    // A live owner is waited for, until it finishes: the waiter reattaches to its outcome.
    let finishing = async {
        tokio::time::sleep(std::time::Duration::from_millis(150)).await;
        j.finish(&k, completed(r#"{"content":"owner"}"#), None, Vec::new())
            .await
            .expect("finish");
    };
    let (awaited, ()) = tokio::join!(await_owner(j, &k, "second-host"), finishing);
    assert_eq!(
        awaited,
        Ok(Awaited::Finished(completed(r#"{"content":"owner"}"#)))
    );
    assert_eq!(j.leased(&k).await, Ok(None), "given up with the outcome");
    assert_eq!(j.renew_lease(&k, &renewed).await, Ok(false));
    // An owner whose heartbeat stopped is gone.
    let k2 = key("leased", 1);
    let mut stale = Lease::now("crashed-host");
    stale.heartbeat_ms = 0;
    j.begin_leased(&k2, &fp(8), "a-8", 100, &stale)
        .await
        .expect("begin");
    assert_eq!(
        await_owner(j, &k2, "second-host").await,
        Ok(Awaited::Abandoned)
    );
}

#[tokio::test]
async fn memory_journal_passes_the_suite() {
    let j = MemoryJournal::new();
    begin_answers(&j).await;
    failures_and_lineage(&j).await;
    runs_and_events(&j).await;
    leases(&j).await;
}
