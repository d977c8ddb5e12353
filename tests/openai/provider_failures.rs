//! The provider alone: each kind of failure (a rate limit, a server error, a permanent error, a
//! malformed or oversized body, no answer, a refused connection), the key kept out of its text.

use super::*;

#[tokio::test]
async fn rate_limit_is_transient_with_its_retry_after() {
    let server = Server::start().await;
    let date = httpdate::fmt_http_date(std::time::SystemTime::now() + Duration::from_secs(120));
    server.push([
        Answer::json(
            429,
            &json!({"error": {"message": "Rate limit reached", "key": KEY}}),
        )
        .header("retry-after", "3"),
        Answer::json(503, &json!({"error": {"message": "overloaded"}}))
            .header("retry-after", &date),
        Answer::json(500, &json!({"error": {"message": "boom"}})),
    ]);
    let p = provider(config(&server));
    let e = p.generate(request(None, None)).await.expect_err("429");
    let ProviderError::Transient {
        retry_after,
        reached,
        message,
    } = &e
    else {
        panic!("429 is transient: {e:?}");
    };
    assert_eq!(*retry_after, Some(Duration::from_secs(3)));
    assert!(*reached);
    assert!(
        message.contains("429") && message.contains("Rate limit"),
        "{message}"
    );
    assert!(!message.contains(KEY), "the key is cut out: {message}");

    let e = p.generate(request(None, None)).await.expect_err("503");
    let ProviderError::Transient { retry_after, .. } = e else {
        panic!("503 is transient: {e:?}");
    };
    let wait = retry_after.expect("an HTTP date is a wait");
    assert!(
        wait > Duration::from_secs(100) && wait <= Duration::from_secs(120),
        "{wait:?}"
    );

    let e = p.generate(request(None, None)).await.expect_err("500");
    assert!(matches!(
        e,
        ProviderError::Transient {
            retry_after: None,
            reached: true,
            ..
        }
    ));
}

#[tokio::test]
async fn server_error_then_success_on_the_next_request() {
    let server = Server::start().await;
    server.push([
        Answer::json(502, &json!({"error": "bad gateway"})),
        Answer::completion("{\"text\":\"ok\"}", "stop", Some((3, 4))),
    ]);
    let p = provider(config(&server));
    let first = p.generate(request(None, None)).await;
    assert!(
        matches!(first, Err(ProviderError::Transient { .. })),
        "{first:?}"
    );
    let second = p
        .generate(request(None, None))
        .await
        .expect("the next request");
    assert_eq!(second.content, b"{\"text\":\"ok\"}");
    // The provider itself never retries: one request per call of `generate`.
    assert_eq!(server.received().len(), 2);
}

#[tokio::test]
async fn permanent_errors_are_failed_and_keep_the_key_out() {
    let server = Server::start().await;
    server.push([
        Answer::json(
            401,
            &json!({"error": {"message": format!("Incorrect API key provided: {KEY}")}}),
        ),
        Answer::json(400, &json!({"error": {"message": "invalid schema"}})),
    ]);
    let p = provider(config(&server));
    for _ in 0..2 {
        let e = p.generate(request(None, None)).await.expect_err("error");
        assert!(matches!(e, ProviderError::Failed(_)), "{e:?}");
        assert!(!private_text(&e).contains(KEY));
        assert!(!format!("{e:?} {e}").contains(KEY));
    }
    assert!(!format!("{p:?}").contains(KEY), "{p:?}");
    assert!(format!("{p:?}").contains("ApiKey(<redacted>)"), "{p:?}");
}

#[tokio::test]
async fn malformed_bodies_are_failed() {
    let server = Server::start().await;
    server.push([
        Answer::Http {
            status: 200,
            headers: vec![("content-type".into(), "text/html".into())],
            body: b"<html>gateway</html>".to_vec(),
        },
        Answer::json(200, &json!({"choices": []})),
        Answer::json(200, &json!({"object": "chat.completion"})),
    ]);
    let p = provider(config(&server));
    for _ in 0..3 {
        let e = p
            .generate(request(None, None))
            .await
            .expect_err("malformed");
        assert!(matches!(e, ProviderError::Failed(_)), "{e:?}");
    }
}

#[tokio::test]
async fn a_body_over_the_size_limit_is_refused() {
    let server = Server::start().await;
    let big = "x".repeat(4096);
    server.push([
        Answer::completion(&big, "stop", Some((1, 1000))),
        Answer::completion("small", "stop", Some((1, 1))),
    ]);
    let p = provider(config(&server).max_reply_bytes(1024));
    let e = p.generate(request(None, None)).await.expect_err("too big");
    let ProviderError::Failed(text) = &e else {
        panic!("over the limit is a failure: {e:?}");
    };
    assert!(text.contains("1024-byte limit"), "{text}");
    // The provider still works afterwards.
    let ok = p.generate(request(None, None)).await.expect("small reply");
    assert_eq!(ok.content, b"small");
}

#[tokio::test]
async fn a_server_that_never_answers_times_out_as_no_answer() {
    let server = Server::start().await;
    server.push([Answer::Hang]);
    let p = provider(config(&server).timeout(Duration::from_millis(300)));
    let e = p.generate(request(None, None)).await.expect_err("timeout");
    assert!(matches!(e, ProviderError::NoAnswer(_)), "{e:?}");
}

#[tokio::test]
async fn a_connection_closed_mid_body_is_no_answer() {
    let server = Server::start().await;
    let full =
        json!({"choices": [{"message": {"content": "a long reply"}, "finish_reason": "stop"}]})
            .to_string();
    server.push([Answer::CloseMidBody {
        declared: full.len(),
        body: full.as_bytes()[..full.len() / 2].to_vec(),
    }]);
    let e = provider(config(&server))
        .generate(request(None, None))
        .await
        .expect_err("closed mid-body");
    let ProviderError::NoAnswer(text) = &e else {
        panic!("a broken body is no answer: {e:?}");
    };
    assert!(text.contains("broke off"), "{text}");
}

#[tokio::test]
async fn a_refused_connection_is_transient_and_never_reached() {
    // A port with nothing listening: bind, note it, close.
    let addr = std::net::TcpListener::bind("127.0.0.1:0")
        .expect("bind")
        .local_addr()
        .expect("addr");
    let p = provider(
        OpenAiConfig::new(&format!("http://{addr}/v1"), "m")
            .expect("config")
            .api_key(ApiKey::new(KEY)),
    );
    let e = p.generate(request(None, None)).await.expect_err("refused");
    assert!(
        matches!(
            e,
            ProviderError::Transient {
                reached: false,
                retry_after: None,
                ..
            }
        ),
        "{e:?}"
    );
    assert!(!private_text(&e).contains(KEY));
}
