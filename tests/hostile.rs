//! Hostile provider replies, journal faults and leaks: nothing panics, nothing is lost, nothing
//! leaks. Each test can fail if its promise breaks.

use serde_json::{Value, json};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;
use wop_sdk::host::{AttemptKey, BoxFuture, Host, RunId};
use wop_sdk::wire::{ErrorCode, Event, FinishReason, RunEvent, StructuredOutputMode};
use wop_sdk_host::journal::{
    Begin, Charge, ChargeRow, Entry, Fingerprint, Journal, JournalError, MemoryJournal, Outcome,
    RunRecord,
};
use wop_sdk_host::local::{LocalHost, ProviderReply, ScriptedProvider, Step};
use wop_sdk_host::testing::{from_fn, reply};

fn schema() -> Value {
    json!({"type": "object", "required": ["title"], "properties": {"title": {"type": "string"}}})
}

fn key(run: &str) -> AttemptKey {
    AttemptKey {
        run_id: RunId::new(run),
        node_id: "n".into(),
        call_index: 0,
    }
}

fn raw(bytes: Vec<u8>) -> Step {
    Step::Reply {
        content: bytes,
        finish_reason: FinishReason::Stop,
        usage: None,
        mode: None,
    }
}

/// Each hostile reply is a miss that the host retries, then a clean failure with the cause kept
/// privately.
#[tokio::test]
async fn hostile_replies_end_as_a_retry_or_an_opaque_failure() {
    let deep = format!("{}{}", "[".repeat(100_000), "]".repeat(100_000)).into_bytes();
    let cases: Vec<(&str, Step, &str)> = vec![
        ("invalid-utf8", raw(vec![0xff, 0xfe, 0x7b]), "UTF-8"),
        ("fifty-megabytes", raw(vec![b' '; 50 << 20]), "exceeds"),
        ("deep", raw(deep), "nested deeper"),
        ("wrong-type", raw(b"[1, 2, 3]".to_vec()), "not of type"),
        ("empty", raw(Vec::new()), "not valid JSON"),
    ];
    for (name, hostile, cause) in cases {
        // Retried: a valid reply follows.
        let p = ScriptedProvider::new(
            [hostile.clone(), Step::json(&json!({"title": "t"}), 3)]
                .into_iter()
                .collect(),
        );
        let host = LocalHost::rfc0248().provider(p.clone()).build();
        let r = host
            .call_ai_json(
                &key(name),
                &json!({"prompt": "x", "responseSchema": schema()}),
            )
            .await;
        let r = r.unwrap_or_else(|f| panic!("{name}: should be retried, got {}", f.public));
        assert_eq!(r.attempts.map(|a| a.count), Some(2), "{name}");
        // Not retried: an opaque failure, the cause in the private diagnostics.
        let p = ScriptedProvider::new([hostile].into_iter().collect());
        let host = LocalHost::rfc0248().provider(p).build();
        let f = host
            .call_ai_json(
                &key(name),
                &json!({"prompt": "x", "responseSchema": schema(), "retry": {"maxAttempts": 1}}),
            )
            .await
            .expect_err(name);
        assert!(
            matches!(
                f.public.error,
                ErrorCode::EnvelopeInvalid | ErrorCode::UpstreamUnavailable
            ),
            "{name}: {}",
            f.public
        );
        let diags = host.diagnostics();
        assert!(
            diags.iter().any(|d| d.cause.contains(cause)),
            "{name}: cause not kept: {diags:?}"
        );
        assert!(
            f.public.message.len() < 200,
            "{name}: the public message stays small"
        );
    }
}

#[tokio::test]
async fn a_plain_call_with_invalid_utf8_fails_cleanly() {
    let p = ScriptedProvider::new([raw(vec![0xc3, 0x28])].into_iter().collect());
    let host = LocalHost::rfc0248().provider(p).build();
    let f = host
        .call_ai_json(&key("plain"), &json!({"prompt": "x"}))
        .await
        .expect_err("not UTF-8");
    assert_eq!(f.public.error, ErrorCode::UpstreamUnavailable);
}

#[tokio::test]
async fn a_reply_after_the_caller_gave_up_is_ambiguous_and_never_charged() {
    // A provider that answers only after the host has given up.
    let answered = Arc::new(AtomicBool::new(false));
    let flag = Arc::clone(&answered);
    let late = from_fn("late", move |_request| {
        let flag = Arc::clone(&flag);
        async move {
            tokio::time::sleep(Duration::from_millis(200)).await;
            flag.store(true, Ordering::SeqCst);
            Ok(ProviderReply {
                mode: Some(StructuredOutputMode::Native),
                ..reply(r#"{"title": "late"}"#)
            })
        }
    });
    let host = LocalHost::rfc0248()
        .provider(late)
        .provider_timeout(Duration::from_millis(20))
        .build();
    let f = host
        .call_ai_json(
            &key("late"),
            &json!({"prompt": "x", "responseSchema": schema()}),
        )
        .await
        .expect_err("gave up");
    assert_eq!(f.public.error, ErrorCode::UpstreamUnavailable);
    assert!(host.diagnostics().iter().any(|d| d.ambiguous));
    tokio::time::sleep(Duration::from_millis(250)).await;
    assert!(
        !answered.load(Ordering::SeqCst),
        "the abandoned request was dropped, not awaited"
    );
    assert!(host.ledger(None).await.expect("ledger").is_empty());
}

/// A journal whose writes can be made to fail.
#[derive(Default)]
struct Faulty {
    inner: MemoryJournal,
    fail_begin: AtomicBool,
    fail_finish: AtomicBool,
}

fn io<'a, T: Send + 'a>() -> BoxFuture<'a, Result<T, JournalError>> {
    Box::pin(std::future::ready(Err(JournalError::Io(
        "disk I/O error (injected)".into(),
    ))))
}

impl Journal for Faulty {
    fn begin_run(&self, run: RunRecord) -> BoxFuture<'_, Result<(), JournalError>> {
        self.inner.begin_run(run)
    }
    fn run<'a>(&'a self, run: &'a RunId) -> BoxFuture<'a, Result<Option<RunRecord>, JournalError>> {
        self.inner.run(run)
    }
    fn runs(&self) -> BoxFuture<'_, Result<Vec<RunRecord>, JournalError>> {
        self.inner.runs()
    }
    fn begin<'a>(
        &'a self,
        key: &'a AttemptKey,
        fp: &'a Fingerprint,
        id: &'a str,
    ) -> BoxFuture<'a, Result<Begin, JournalError>> {
        if self.fail_begin.load(Ordering::SeqCst) {
            io()
        } else {
            self.inner.begin(key, fp, id)
        }
    }
    fn record_request<'a>(
        &'a self,
        key: &'a AttemptKey,
        n: u32,
        m: u32,
    ) -> BoxFuture<'a, Result<(), JournalError>> {
        self.inner.record_request(key, n, m)
    }
    fn finish<'a>(
        &'a self,
        key: &'a AttemptKey,
        outcome: Outcome,
        charge: Option<Charge>,
        events: Vec<Event>,
    ) -> BoxFuture<'a, Result<(), JournalError>> {
        if self.fail_finish.load(Ordering::SeqCst) {
            io()
        } else {
            self.inner.finish(key, outcome, charge, events)
        }
    }
    fn lookup<'a>(
        &'a self,
        key: &'a AttemptKey,
    ) -> BoxFuture<'a, Result<Option<Entry>, JournalError>> {
        self.inner.lookup(key)
    }
    fn completed_attempt<'a>(
        &'a self,
        run: &'a RunId,
        id: &'a str,
    ) -> BoxFuture<'a, Result<bool, JournalError>> {
        self.inner.completed_attempt(run, id)
    }
    fn append_event<'a>(
        &'a self,
        run: &'a RunId,
        event: Event,
    ) -> BoxFuture<'a, Result<u64, JournalError>> {
        self.inner.append_event(run, event)
    }
    fn events<'a>(&'a self, run: &'a RunId) -> BoxFuture<'a, Result<Vec<RunEvent>, JournalError>> {
        self.inner.events(run)
    }
    fn charges<'a>(
        &'a self,
        run: Option<&'a RunId>,
    ) -> BoxFuture<'a, Result<Vec<ChargeRow>, JournalError>> {
        self.inner.charges(run)
    }
    fn call_count(&self) -> BoxFuture<'_, Result<u64, JournalError>> {
        self.inner.call_count()
    }
}

#[tokio::test]
async fn a_failing_write_before_dispatch_refuses_the_call() {
    let journal = Arc::new(Faulty::default());
    journal.fail_begin.store(true, Ordering::SeqCst);
    let p = ScriptedProvider::new([Step::text("x", 1)].into_iter().collect());
    let host = LocalHost::rfc0248()
        .provider(p.clone())
        .journal(journal)
        .build();
    let f = host
        .call_ai_json(&key("fb"), &json!({"prompt": "x"}))
        .await
        .expect_err("refused");
    assert_eq!(f.public.error, ErrorCode::UpstreamUnavailable);
    assert_eq!(p.request_count(), 0, "nothing dispatched");
    assert!(
        host.ledger(None).await.expect("ledger").is_empty(),
        "nothing charged"
    );
    assert!(host.diagnostics()[0].cause.contains("injected"));
}

#[tokio::test]
async fn a_failing_terminal_write_is_ambiguous_on_re_entry_and_not_charged() {
    let journal = Arc::new(Faulty::default());
    journal.fail_finish.store(true, Ordering::SeqCst);
    let p = ScriptedProvider::new(
        [Step::text("x", 1), Step::text("y", 1)]
            .into_iter()
            .collect(),
    );
    let host = LocalHost::rfc0248()
        .provider(p.clone())
        .journal(Arc::clone(&journal) as Arc<dyn Journal>)
        .build();
    let req = json!({"prompt": "x"});
    let f = host
        .call_ai_json(&key("ff"), &req)
        .await
        .expect_err("outcome not durable");
    assert_eq!(f.public.error, ErrorCode::UpstreamUnavailable);
    journal.fail_finish.store(false, Ordering::SeqCst);
    let f = host
        .call_ai_json(&key("ff"), &req)
        .await
        .expect_err("ambiguous on re-entry");
    assert_eq!(f.public.error, ErrorCode::UpstreamUnavailable);
    assert_eq!(p.request_count(), 1, "never a second generation");
    assert!(host.ledger(None).await.expect("ledger").is_empty());
    assert!(host.diagnostics().iter().filter(|d| d.ambiguous).count() >= 1);
}
