//! Issue 26: the command line's counts equal what the loopback server logged, in every fault
//! case (refused connections, a server stopped mid-run, 429 with and without `Retry-After`, a
//! reply without usage), and each failure's cause reaches the user: its class and what to check
//! in the public message, the status and the server's own words at `-v`, never the key.

use super::read_right::{book_ai_with_key, outline_args, outline_reply};
use super::*;

/// `book_ai run --node plan-outline --provider openai --base-url BASE` plus `extra`: the exit
/// code, the standard output and the standard error (progress lines, tracing); the key is in
/// neither.
async fn run_outline(base: &str, extra: &[&str]) -> (Option<i32>, String, String) {
    let (code, stdout, stderr) = book_ai_with_key(outline_args(base, extra), KEY).await;
    assert!(
        !stdout.contains(KEY) && !stderr.contains(KEY),
        "the key leaked"
    );
    (code, stdout, stderr)
}

/// [`run_outline`] with `--json`: the exit code and the outcome as JSON.
async fn run_outline_json(base: &str, extra: &[&str]) -> (Option<i32>, Value, String) {
    let mut args = vec!["--json"];
    args.extend_from_slice(extra);
    let (code, stdout, stderr) = run_outline(base, &args).await;
    let v: Value = serde_json::from_str(&stdout)
        .unwrap_or_else(|e| panic!("not JSON ({e}):\n{stdout}\nstderr:\n{stderr}"));
    (code, v, stderr)
}

/// A base URL where nothing listens: a port that was just free.
fn nothing_listens() -> String {
    let l = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let addr = l.local_addr().expect("addr");
    drop(l);
    format!("http://{addr}/v1")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn refused_connections_are_not_received_and_say_to_check_the_base_url() {
    let base = nothing_listens();
    let (code, v, _) = run_outline_json(&base, &[]).await;
    assert_eq!(code, Some(1));
    let p = &v["outcome"]["provider"];
    assert_eq!(p["requests"], 0, "nothing was received: {v:#}");
    assert!(p["notSent"].as_u64().unwrap_or(0) >= 1, "{v:#}");
    let message = v["outcome"]["error"]["message"]
        .as_str()
        .unwrap_or_default();
    assert!(
        message.contains("refused") && message.contains("base URL"),
        "{message}"
    );
    let (code, stdout, stderr) = run_outline(&base, &[]).await;
    assert_eq!(code, Some(1));
    assert!(
        stdout.contains(
            "sent to the provider: 0 requests; never reached the provider: 3 connections"
        ),
        "{stdout}"
    );
    assert!(
        stderr.contains("request 1 never reached the provider (refused): not received"),
        "{stderr}"
    );
    assert!(
        !stderr.contains("host retries exhausted"),
        "no attempt: {stderr}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_stopped_mid_run_is_counted_as_it_logged() {
    let server = Server::start().await;
    // A reply that is not JSON (an attempt, with usage), a rate limit asking for a second's
    // wait, and the server ends: the next request finds nothing listening.
    let stopping = || {
        [
            Answer::completion("Not JSON at all.", "stop", Some((30, 5))),
            Answer::ThenStop(Box::new(
                Answer::json(429, &json!({"error": {"message": "slow down"}}))
                    .header("retry-after", "1"),
            )),
        ]
    };
    server.push(stopping());
    let (code, v, _) = run_outline_json(&server.base_url(), &[]).await;
    assert_eq!(code, Some(1));
    let p = &v["outcome"]["provider"];
    assert_eq!(p["requests"], server.received().len(), "{v:#}");
    assert_eq!(p["requests"], 2, "{v:#}");
    assert_eq!(
        p["notSent"], 3,
        "the third request found nothing, three times (the cap bounds them apart): {v:#}"
    );
    assert_eq!(p["outputTokens"], 5, "{v:#}");
    // The reasons that happened, and what to check for the last.
    let message = v["outcome"]["error"]["message"]
        .as_str()
        .unwrap_or_default();
    assert!(
        message.contains("retries ran out after parse-error, x-host-wop-sdk-provider-error")
            && message.contains("refused"),
        "{message}"
    );
    assert!(!message.contains("truncated"), "{message}");

    // The text report and the progress lines say the same, as the server logged it.
    let server = Server::start().await;
    server.push(stopping());
    let (code, stdout, stderr) = run_outline(&server.base_url(), &[]).await;
    assert_eq!(code, Some(1));
    assert_eq!(server.received().len(), 2);
    assert!(
        stdout.contains(
            "sent to the provider: 2 requests (2 answered, 1 with an error status), 5 output \
             tokens; never reached the provider: 3 connections"
        ),
        "{stdout}"
    );
    assert!(
        stderr.contains("request 3 never reached the provider (refused)"),
        "{stderr}"
    );
    assert!(
        stderr.contains("host retries exhausted after 2 provider requests"),
        "{stderr}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rate_limits_with_and_without_retry_after_wait_say_so_and_count_as_logged() {
    let server = Server::start().await;
    server.push([
        Answer::json(429, &json!({"error": {"message": "slow down"}})).header("retry-after", "1"),
        Answer::json(429, &json!({"error": {"message": "slow down"}})),
        outline_reply(json!({"inputTokens": 90, "outputTokens": 70})),
    ]);
    let (code, v, stderr) = run_outline_json(&server.base_url(), &[]).await;
    assert_eq!(code, Some(0), "{stderr}");
    let p = &v["outcome"]["provider"];
    assert_eq!(p["requests"], server.received().len(), "{v:#}");
    assert_eq!(p["requests"], 3, "{v:#}");
    assert_eq!(p["failed"], 2, "{v:#}");
    assert_eq!(p["notSent"], 0, "{v:#}");
    assert_eq!(v["outcome"]["calls"][0]["requests"], 3, "{v:#}");

    server.push([
        Answer::json(429, &json!({"error": {"message": "slow down"}})).header("retry-after", "1"),
        Answer::json(429, &json!({"error": {"message": "slow down"}})),
        outline_reply(json!({"inputTokens": 90, "outputTokens": 70})),
    ]);
    let (code, stdout, stderr) = run_outline(&server.base_url(), &["-v"]).await;
    assert_eq!(code, Some(0), "{stderr}");
    assert_eq!(server.received().len(), 6);
    // At -v, each wait as it starts: the server's second, then the host's own backoff.
    let waits: Vec<&str> = stderr
        .lines()
        .filter(|l| l.contains("waiting before the next provider request"))
        .collect();
    assert_eq!(waits.len(), 2, "{stderr}");
    assert!(waits[0].ends_with("wait_ms=1000 request=2"), "{stderr}");
    assert!(waits[1].ends_with("request=3"), "{stderr}");
    assert!(
        stdout.contains("sent to the provider: 3 requests (3 answered, 2 with an error status)"),
        "{stdout}"
    );
    assert!(
        stderr.contains("request 1 failed (HTTP 429), no reply to use; the server asks for a wait of 1 s before another request (Retry-After)"),
        "{stderr}"
    );
    assert!(
        stderr.contains("request 2 failed (HTTP 429), no reply to use; another request may follow after a backoff"),
        "{stderr}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reply_without_usage_is_null_not_zero() {
    let server = Server::start().await;
    server.push([outline_reply(json!(false))]);
    let (code, v, _) = run_outline_json(&server.base_url(), &[]).await;
    assert_eq!(code, Some(0));
    let p = &v["outcome"]["provider"];
    assert_eq!(p["requests"], server.received().len(), "{v:#}");
    assert_eq!(p["outputTokens"], Value::Null, "unknown, never 0: {v:#}");
    assert_eq!(p["usageComplete"], false, "{v:#}");
    server.push([outline_reply(json!(false))]);
    let (_, stdout, _) = run_outline(&server.base_url(), &[]).await;
    assert!(
        stdout.contains(
            "sent to the provider: 1 request (1 answered), output tokens unknown (no reply reported its usage)"
        ),
        "{stdout}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_404_says_check_the_base_url_and_v_shows_the_servers_words() {
    let server = Server::start().await;
    server.push([Answer::json(
        404,
        &json!({"error": {"message": format!("no route; you sent Bearer {KEY}")}}),
    )]);
    let (code, v, stderr) = run_outline_json(&server.base_url(), &["-v"]).await;
    assert_eq!(code, Some(1));
    assert_eq!(
        v["outcome"]["provider"]["requests"],
        server.received().len()
    );
    let message = v["outcome"]["error"]["message"]
        .as_str()
        .unwrap_or_default();
    assert!(
        message.contains("HTTP 404") && message.contains("/v1"),
        "{message}"
    );
    assert!(
        !message.contains("no route"),
        "the server's words stay private: {message}"
    );
    // At -v: the class, the status and the server's own words, the key cut out.
    for needle in [
        "error.class=\"4xx\"",
        "HTTP 404",
        "no route; you sent Bearer <redacted>",
    ] {
        assert!(stderr.contains(needle), "`{needle}` missing:\n{stderr}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn timeout_flag_ends_a_silent_request_as_unknown() {
    let server = Server::start().await;
    server.push([Answer::Hang]);
    let (code, v, _) = run_outline_json(&server.base_url(), &["--timeout", "0.5"]).await;
    assert_eq!(code, Some(1));
    let p = &v["outcome"]["provider"];
    // The server got it and never answered; the client cannot know it arrived: unknown, not
    // counted as received.
    assert_eq!(server.received().len(), 1);
    assert_eq!(p["requests"], 0, "{v:#}");
    assert_eq!(p["noAnswer"], 1, "{v:#}");
    server.push([Answer::Hang]);
    let (_, stdout, stderr) = run_outline(&server.base_url(), &["--timeout", "0.5"]).await;
    assert!(
        stderr.contains("request 1 sent, no answer (timeout)"),
        "{stderr}"
    );
    assert!(
        stdout.contains(
            "sent to the provider: 1 request (0 answered, 1 with no answer (the provider may \
             have received it)), output tokens unknown (no reply reported its usage)"
        ),
        "{stdout}"
    );
    let help = std::process::Command::new(book_ai_binary())
        .args(["run", "--help"])
        .output()
        .expect("help");
    let help = String::from_utf8_lossy(&help.stdout);
    assert!(
        help.contains("--timeout <SECONDS>") && help.contains("[default: 120]"),
        "{help}"
    );
}
