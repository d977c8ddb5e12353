//! What a call hands the provider: the temperature and stop sequences it set, and nothing at
//! all when it names a provider the host does not have.

use super::*;
use wop_sdk_host::testing::{from_fn, reply};

#[wop_node(type_id = "community.test.tuned", version = "1.0.0")]
async fn tuned(ctx: &NodeCtx<'_>, _input: In) -> Result<Out, NodeError> {
    let request = AiRequest::<Text>::prompt("a haiku")
        .temperature(0.3)
        .stop_sequences(["END", "\n\n"]);
    let text = ctx.call_ai(request).await?.into_output()?.0;
    Ok(Out {
        text,
        repaired: false,
        attempts: None,
    })
}

#[tokio::test]
async fn temperature_and_stop_sequences_reach_the_provider() {
    let (tuned, provider) = host(vec![Step::text("old pond", 2)]);
    let out = tuned.run(&Tuned, json!({"prompt": "x"})).await;
    assert_eq!(out.result.map(|v| v["text"].clone()), Ok(json!("old pond")));
    let sent = provider.requests();
    assert_eq!(sent[0].temperature, Some(0.3));
    assert_eq!(
        sent[0].stop_sequences.as_deref(),
        Some(&["END".to_owned(), "\n\n".to_owned()][..])
    );
    // A call that sets neither sends neither.
    let (plain, provider) = host(vec![scene("one two three four")]);
    plain.run(&Draft, json!({"prompt": "write"})).await;
    assert_eq!(provider.requests()[0].temperature, None);
    assert_eq!(provider.requests()[0].stop_sequences, None);
}

#[wop_node(type_id = "community.test.named", version = "1.0.0")]
async fn named(ctx: &NodeCtx<'_>, provider: String) -> Result<String, NodeError> {
    let c = ctx
        .call_ai(AiRequest::<Text>::prompt("x").provider(provider))
        .await?;
    Ok(c.into_output()?.0)
}

#[tokio::test]
async fn a_call_naming_a_provider_the_host_does_not_have_is_refused_before_any_request() {
    // A provider that answers every request with the same line and counts them.
    let requests = Arc::new(std::sync::atomic::AtomicU32::new(0));
    let counted = Arc::clone(&requests);
    let house = from_fn("house", move |_request| {
        counted.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        async { Ok(reply("a line")) }
    });
    let host = LocalHost::rfc0248().provider(house).build();
    let out = host.run(&Named, json!("elsewhere")).await;
    let error = out.result.expect_err("refused");
    assert_eq!(error.error, ErrorCode::ValidationError);
    assert_eq!(error.field(), Some("provider"));
    assert_eq!(requests.load(std::sync::atomic::Ordering::SeqCst), 0);
    // Its own name is served; the scripted provider stands in for any name.
    let out = host.run(&Named, json!("house")).await;
    assert_eq!(out.result, Ok(json!("a line")));
    let (scripted, _) = self::host(vec![Step::text("scripted", 1)]);
    let out = scripted.run(&Named, json!("openai")).await;
    assert_eq!(out.result, Ok(json!("scripted")));
}

#[test]
fn a_nan_temperature_and_an_empty_stop_list_set_nothing() {
    let request = AiRequest::<Text>::prompt("x")
        .temperature(f64::NAN)
        .stop_sequences(Vec::<String>::new());
    assert_eq!(request.wire().temperature, None);
    assert_eq!(request.wire().stop_sequences, None);
    // Out of range is clamped to 0..=2.
    assert_eq!(
        AiRequest::<Text>::prompt("x")
            .temperature(7.0)
            .wire()
            .temperature,
        Some(2.0)
    );
}
