//! Running a node on its own types (`LocalHost::run_typed`): its typed output, or a `RunError`
//! that says where the run stopped and keeps its id and the recorded error code.

use super::*;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use wop_sdk::{AiRequest, NodeCtx, NodeError, wop_node};
use wop_sdk_host::local::{RunError, RunOptions};

#[derive(Debug, Serialize, Deserialize, JsonSchema)]
pub(super) struct Topic {
    pub(super) topic: String,
}

#[derive(Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
pub(super) struct Title {
    pub(super) title: String,
}

/// One typed call; a failed call ends the node through `?`.
#[wop_node(
    type_id = "community.test.typed-title",
    version = "1.0.0",
    max_calls = 3
)]
pub(super) async fn typed_title(ctx: &NodeCtx<'_>, input: Topic) -> Result<Title, NodeError> {
    let completion = ctx
        .call_ai(AiRequest::<Title>::prompt(format!(
            "Name a book about {}",
            input.topic
        )))
        .await?;
    Ok(completion.into_output()?)
}

/// Refuses a chapter number of 0 with its own error.
#[wop_node(type_id = "community.test.typed-chapter", version = "1.0.0")]
async fn typed_chapter(_ctx: &NodeCtx<'_>, number: u32) -> Result<String, NodeError> {
    if number == 0 {
        return Err(NodeError::new("there is no chapter 0"));
    }
    Ok(format!("Chapter {number}"))
}

#[tokio::test]
async fn a_typed_run_gives_the_nodes_own_output() {
    let (host, provider) = host_with(vec![Step::json(&json!({"title": "Lamps"}), 3)], |b| b);
    let title = host
        .run_typed(
            &TypedTitle,
            Topic {
                topic: "lighthouses".into(),
            },
        )
        .await;
    assert_eq!(
        title,
        Ok(Title {
            title: "Lamps".into()
        })
    );
    // The typed input reached the node as the node's own type.
    let sent = provider.requests();
    assert_eq!(sent.len(), 1);
    assert_eq!(
        sent[0].messages.last().map(|m| m.content.as_str()),
        Some("Name a book about lighthouses")
    );
    assert_eq!(host.active_runs(), 0);
}

#[tokio::test]
async fn a_node_failure_keeps_the_run_and_the_nodes_error() {
    let (host, provider) = host_with(Vec::new(), |b| b);
    let run = RunId::new("local/typed-chapter");
    let options = RunOptions {
        run_id: Some(run.clone()),
        node_id: Some("chapter".into()),
        ..RunOptions::default()
    };
    let err = host
        .run_typed_with(&TypedChapter, 0, options)
        .await
        .expect_err("no chapter 0");
    let RunError::NodeFailed {
        run_id,
        node_id,
        error,
    } = &err
    else {
        panic!("a node failure, not {err:?}");
    };
    assert_eq!(run_id, &run);
    assert_eq!(node_id, "chapter");
    assert_eq!(error.message, "there is no chapter 0");
    assert_eq!(err.code(), Some(ErrorCode::NodeFailed));
    assert_eq!(err.run_id(), Some(&run));
    assert!(
        err.to_string()
            .contains("node `chapter` of run `local/typed-chapter` failed"),
        "{err}"
    );
    let log = events(&host, run.as_str()).await;
    assert_eq!(log.last().map(|e| e.kind()), Some(kind::NODE_FAILED));
    assert_eq!(provider.request_count(), 0);

    // The same node on a good input: its output.
    assert_eq!(
        host.run_typed(&TypedChapter, 2).await,
        Ok("Chapter 2".into())
    );
}

#[tokio::test]
async fn a_failed_call_inside_is_the_nodes_failure_with_the_calls_public_code() {
    let (host, _) = host_with(
        vec![Step::text("PROVIDER-SECRET refusal", 2).finish(FinishReason::ContentFilter)],
        |b| b,
    );
    let topic = Topic {
        topic: "lighthouses".into(),
    };
    let err = host
        .run_typed(&TypedTitle, topic)
        .await
        .expect_err("refused");
    assert!(matches!(err, RunError::NodeFailed { .. }), "{err:?}");
    assert_eq!(err.code(), Some(ErrorCode::EnvelopeRefusal));
    assert!(!err.to_string().contains("PROVIDER-SECRET"), "{err}");
    // The cause stays in the host's private records of that run.
    let run = err.run_id().expect("a run was started");
    assert!(
        host.diagnostics_of(run)
            .iter()
            .any(|d| format!("{d:?}").contains("PROVIDER-SECRET"))
    );
}

/// A test with one reply too few: the node's error says the script ran out and names the
/// request it ran out on (the node's second call asks, the script had one step).
#[tokio::test]
async fn a_script_one_reply_short_fails_naming_the_exhausted_script() {
    let (host, provider) = host_with(vec![valid()], |b| b);
    let topic = || Topic {
        topic: "lighthouses".into(),
    };
    host.run_typed(&TypedTitle, topic())
        .await
        .expect("the first run has its step");
    let err = host
        .run_typed(&TypedTitle, topic())
        .await
        .expect_err("no step left");
    assert_eq!(err.code(), Some(ErrorCode::UpstreamUnavailable), "{err:?}");
    let run = err.run_id().expect("a run was started").as_str().to_owned();
    let message = err.to_string();
    assert!(
        message.contains(&format!(
            "the mock script is exhausted: request 1 of run {run} (node main, attempt 1 of \
             its call; request 2 the provider received) found no step left in the shared script"
        )),
        "{message}"
    );
    assert_eq!(provider.request_count(), 2);
}

/// A node whose input carries a provider script, like the conformance fixture.
#[derive(Debug, Serialize, Deserialize, JsonSchema)]
struct WithScript {
    script: Value,
}

#[wop_node(type_id = "community.test.typed-scripted", version = "1.0.0")]
async fn typed_scripted(_ctx: &NodeCtx<'_>, _input: WithScript) -> Result<u32, NodeError> {
    Ok(1)
}

#[tokio::test]
async fn a_run_the_host_refuses_to_start_is_refused_not_failed() {
    let (host, _) = host_with(Vec::new(), |b| b);
    let err = host
        .run_typed(
            &TypedScripted,
            WithScript {
                script: json!("not a list of replies"),
            },
        )
        .await
        .expect_err("a malformed script");
    let RunError::Refused { run_id, error, .. } = &err else {
        panic!("a refusal, not {err:?}");
    };
    assert_eq!(error.error, ErrorCode::ValidationError);
    assert!(
        error.field().is_some_and(|f| f.starts_with("input.script")),
        "{error:?}"
    );
    // The node never started.
    let log = events(&host, run_id.as_str()).await;
    assert_eq!(count(&log, kind::NODE_STARTED), 0, "{log:?}");
    assert_eq!(count(&log, kind::NODE_FAILED), 1, "{log:?}");
}

/// An output whose `Serialize` drops a field its `Deserialize` needs.
#[derive(Debug, Serialize, Deserialize, JsonSchema)]
struct Lossy {
    text: String,
    // Never read: the point is that it does not come back.
    #[allow(dead_code)]
    #[serde(skip_serializing)]
    hidden: String,
}

#[wop_node(type_id = "community.test.typed-lossy", version = "1.0.0")]
async fn typed_lossy(_ctx: &NodeCtx<'_>, text: String) -> Result<Lossy, NodeError> {
    Ok(Lossy {
        text,
        hidden: "kept back".into(),
    })
}

#[tokio::test]
async fn an_output_that_does_not_read_back_is_reported_with_what_was_recorded() {
    let (host, _) = host_with(Vec::new(), |b| b);
    let err = host
        .run_typed(&TypedLossy, "hello".to_owned())
        .await
        .expect_err("does not read back");
    let RunError::Output {
        run_id,
        output,
        message,
        ..
    } = &err
    else {
        panic!("an output mismatch, not {err:?}");
    };
    assert_eq!(output, &json!({"text": "hello"}));
    assert!(message.contains("hidden"), "{message}");
    assert_eq!(err.code(), None);
    // The run itself completed.
    let log = events(&host, run_id.as_str()).await;
    assert_eq!(log.last().map(|e| e.kind()), Some(kind::NODE_COMPLETED));
}

/// An input that cannot be written as JSON.
#[derive(Debug, Deserialize, JsonSchema)]
struct Unwritable {}

impl Serialize for Unwritable {
    fn serialize<S: serde::Serializer>(&self, _s: S) -> Result<S::Ok, S::Error> {
        Err(serde::ser::Error::custom("this input has no JSON form"))
    }
}

#[wop_node(type_id = "community.test.typed-unwritable", version = "1.0.0")]
async fn typed_unwritable(_ctx: &NodeCtx<'_>, _input: Unwritable) -> Result<u32, NodeError> {
    Ok(1)
}

#[tokio::test]
async fn an_input_that_does_not_serialize_starts_no_run() {
    let (host, provider) = host_with(Vec::new(), |b| b);
    let err = host
        .run_typed(&TypedUnwritable, Unwritable {})
        .await
        .expect_err("no JSON form");
    assert_eq!(
        err,
        RunError::Input {
            message: "this input has no JSON form".into()
        }
    );
    assert_eq!(err.run_id(), None);
    assert_eq!(host.active_runs(), 0);
    assert_eq!(provider.request_count(), 0);
}

/// A node's id is one shared text: its events, its calls' `provider.usage` and its run's record
/// hold the same one (no copy each), and a run that names no node takes the host's `main`.
#[tokio::test]
async fn a_nodes_events_and_its_run_record_share_one_node_id() {
    use wop_sdk::wire::Event;
    let (host, _) = host_with(
        vec![
            Step::json(&json!({"title": "A"}), 3),
            Step::json(&json!({"title": "B"}), 3),
        ],
        |b| b,
    );
    let mut ids = Vec::new();
    for topic in ["lamps", "keepers"] {
        let outcome = host.run(&TypedTitle, json!({ "topic": topic })).await;
        assert!(outcome.result.is_ok(), "{outcome:?}");
        let log = host.events(&outcome.run_id).await;
        let kinds: Vec<_> = log.iter().map(RunEvent::kind).collect();
        assert_eq!(kinds, ["node.started", "provider.usage", "node.completed"]);
        let (Event::NodeStarted(started), Event::ProviderUsage(usage), Event::NodeCompleted(done)) =
            (&log[0].event, &log[1].event, &log[2].event)
        else {
            panic!("{log:?}");
        };
        assert_eq!(
            (&*started.node_id, &*started.type_id),
            ("main", "community.test.typed-title")
        );
        let usage_node = usage.node_id.as_ref().expect("usage names its node");
        assert!(Arc::ptr_eq(&started.node_id, usage_node));
        assert!(Arc::ptr_eq(&started.node_id, &done.node_id));
        let record = host
            .journal()
            .run(&outcome.run_id)
            .await
            .expect("readable")
            .expect("recorded");
        assert!(Arc::ptr_eq(&started.node_id, &record.meta.node_id));
        ids.push(Arc::clone(&started.node_id));
    }
    // Both runs took the host's default: one text for every run.
    assert!(Arc::ptr_eq(&ids[0], &ids[1]));
}
