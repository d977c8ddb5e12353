//! A reply that gives no `finish_reason` (`null`, which OpenAI reads as "in progress or
//! incomplete", or the empty string some servers write): a truncation when its output tokens
//! reached the budget sent, else `other`, never `stop`.

use super::*;

/// One plain call; the node's output is the finish reason the host reported.
#[wop_node(
    type_id = "community.openai-test.finish",
    version = "1.0.0",
    max_calls = 3
)]
async fn finish_of(ctx: &NodeCtx<'_>, _input: Value) -> Result<String, NodeError> {
    let c = ctx
        .call_ai(AiRequest::<wop_sdk::Text>::prompt("One line.").max_tokens(100))
        .await?;
    Ok(c.finish_reason()
        .map_or("absent", FinishReason::as_str)
        .to_owned())
}

fn without_reason(content: &str, output_tokens: u64) -> Answer {
    Answer::json(
        200,
        &json!({"model": "test-model",
                "choices": [{"index": 0, "message": {"role": "assistant", "content": content},
                             "finish_reason": null}],
                "usage": {"prompt_tokens": 5, "completion_tokens": output_tokens}}),
    )
}

#[tokio::test]
async fn a_structured_reply_without_a_reason_that_used_its_budget_is_a_truncation() {
    let server = Server::start().await;
    server.push([
        without_reason("{\"text\":\"The lig", 100),
        without_reason(r#"{"text":"The light went out."}"#, 140),
    ]);
    let host = provider(config(&server)).local_host().build();
    let outcome = host.run(&DraftScene, brief()).await;
    assert!(outcome.result.is_ok(), "{:?}", outcome.result);
    let got = server.received();
    assert_eq!(got.len(), 2);
    // Retried as a truncation: the budget doubled.
    assert_eq!(got[0].body["max_tokens"], 100);
    assert_eq!(got[1].body["max_tokens"], 200);
    let events = host.events(&outcome.run_id).await;
    assert_eq!(
        events
            .iter()
            .filter(|e| e.kind() == "envelope.truncated")
            .count(),
        1
    );
}

#[tokio::test]
async fn a_plain_reply_without_a_reason_is_other_or_length_never_stop() {
    let server = Server::start().await;
    server.push([
        without_reason("a line", 7),
        without_reason("a line cut at the bud", 100),
    ]);
    let host = provider(config(&server)).local_host().build();
    let under = host.run(&FinishOf, json!({})).await;
    assert_eq!(under.result, Ok(json!("other")));
    let at_budget = host.run(&FinishOf, json!({})).await;
    assert_eq!(at_budget.result, Ok(json!("length")));
    assert_eq!(server.received().len(), 2);
}

#[tokio::test]
async fn a_stream_that_ends_without_a_reason_is_read_the_same_way() {
    let server = Server::start().await;
    // `""` on the last chunk (as some servers write it), then `[DONE]`.
    server.push([
        Answer::stream(&["a ", "line"], "", Some((5, 7))),
        Answer::stream(&["cut at ", "the bud"], "", Some((5, 256))),
        Answer::stream(&["a ", "line"], "stop", Some((5, 256))),
    ]);
    let p = provider(config(&server));
    let mut reasons = Vec::new();
    for _ in 0..3 {
        let mut ignore = |_: &str| {};
        let reply = p
            .generate_stream(request(None, None), &mut ignore)
            .await
            .expect("reply");
        reasons.push(reply.finish_reason);
    }
    // The budget sent is `request`'s 256; a reason given is believed.
    assert_eq!(
        reasons,
        [
            FinishReason::Other,
            FinishReason::Length,
            FinishReason::Stop
        ]
    );
}
