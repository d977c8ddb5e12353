//! Issue 33: what a person still read wrong, each against the loopback server: the key cut only
//! where it stands as a key, usage withheld only when a reply withheld it, one request
//! numbering, refused connections that do not use up the retries, a timed-out request said as
//! what is known, the cause class at default verbosity.

use super::*;
use std::io::{BufRead, BufReader};
use std::process::Stdio;

const OUTLINE: &str = "community.demo.bookai.plan-outline";

/// `book_ai run --node plan-outline --provider openai --base-url BASE` plus `extra`.
pub(super) fn outline_args(base: &str, extra: &[&str]) -> Vec<String> {
    let input =
        json!({"premise": "A keeper's ledger, torn.", "chapters": 1, "scenesPerChapter": 2});
    let mut args: Vec<String> = [
        "run",
        "--node",
        OUTLINE,
        "--input-json",
        &input.to_string(),
        "--provider",
        "openai",
        "--base-url",
        base,
        "--model",
        "test-model",
    ]
    .iter()
    .map(|s| (*s).to_owned())
    .collect();
    args.extend(extra.iter().map(|s| (*s).to_owned()));
    args
}

/// Runs the example with `args` and the key `key`: exit code, standard output, standard error.
pub(super) async fn book_ai_with_key(
    args: Vec<String>,
    key: &str,
) -> (Option<i32>, String, String) {
    let key = key.to_owned();
    let o = tokio::task::spawn_blocking(move || {
        std::process::Command::new(book_ai_binary())
            .args(args)
            .env("OPENAI_API_KEY", key)
            .env_remove("RUST_LOG")
            .output()
            .expect("the example runs")
    })
    .await
    .expect("joined");
    let text = |b: &[u8]| String::from_utf8_lossy(b).into_owned();
    (o.status.code(), text(&o.stdout), text(&o.stderr))
}

/// The bundled script's outline step, with `usage` as given.
pub(super) fn outline_reply(usage: Value) -> Answer {
    let steps: Value = serde_json::from_str(demo::SCRIPT).expect("script.json");
    let mut step = steps[1].clone();
    step["usage"] = usage;
    scripted(&step)
}

/// Runs the outline node against a port that refuses connections until the progress has said
/// `refusals` times that a request never reached the provider; then the loopback server listens
/// there and serves `answers`. Exit code, standard output, standard error, the server.
pub(super) async fn run_after_refusals(
    refusals: usize,
    answers: Vec<Answer>,
    extra: &[&str],
) -> (Option<i32>, String, String, Server) {
    // Bound, not listening: a connection to it is refused.
    let socket = tokio::net::TcpSocket::new_v4().expect("socket");
    socket
        .bind("127.0.0.1:0".parse().expect("addr"))
        .expect("bind");
    let base = format!("http://{}/v1", socket.local_addr().expect("addr"));
    let mut child = std::process::Command::new(book_ai_binary())
        .args(outline_args(&base, extra))
        .env("OPENAI_API_KEY", KEY)
        .env_remove("RUST_LOG")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("the example runs");
    let stderr = child.stderr.take().expect("stderr");
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stderr).lines().map_while(Result::ok) {
            let _ = tx.send(line);
        }
    });
    let (mut seen, mut lines, mut socket, mut server) = (0, Vec::new(), Some(socket), None);
    let (mut progress, mut traced) = (0, 0);
    let mut answers = Some(answers);
    while let Some(line) = rx.recv().await {
        // A progress line, and at `-v` the trace's line: each refusal counted once.
        if line.contains("never reached the provider") {
            progress += 1;
        } else if line.contains("provider request failed") && line.contains("class=\"refused\"") {
            traced += 1;
        }
        if progress.max(traced) > seen {
            seen = progress.max(traced);
            if seen == refusals
                && let Some(s) = socket.take()
            {
                // The host waits a backoff (at least 125 ms) before it connects again.
                let s = Server::start_on(s.listen(64).expect("listen"));
                s.push(answers.take().unwrap_or_default());
                server = Some(s);
            }
        }
        lines.push(line);
    }
    let o = tokio::task::spawn_blocking(move || child.wait_with_output())
        .await
        .expect("joined")
        .expect("waited");
    let stdout = String::from_utf8_lossy(&o.stdout).into_owned();
    let stderr = lines.join("\n");
    assert!(
        !stdout.contains(KEY) && !stderr.contains(KEY),
        "the key leaked"
    );
    let server = server.unwrap_or_else(|| panic!("no refusal seen:\n{stderr}"));
    (o.status.code(), stdout, stderr, server)
}

fn rate_limited() -> Answer {
    Answer::json(429, &json!({"error": {"message": "slow down"}})).header("retry-after", "0")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_short_key_never_damages_a_message() {
    // A server that answers a TLS hello with plain HTTP: the handshake fails.
    let plain = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let addr = plain.local_addr().expect("addr");
    tokio::spawn(async move {
        use tokio::io::{AsyncReadExt, AsyncWriteExt};
        while let Ok((mut s, _)) = plain.accept().await {
            let mut buf = [0u8; 512];
            let _ = s.read(&mut buf).await;
            let _ = s
                .write_all(b"HTTP/1.1 400 Bad Request\r\ncontent-length: 0\r\n\r\n")
                .await;
        }
    });
    let base = format!("https://{addr}/v1");
    let (code, stdout, stderr) =
        book_ai_with_key(outline_args(&base, &["--json", "-v"]), "k").await;
    assert_eq!(code, Some(1), "{stderr}");
    let v: Value = serde_json::from_str(&stdout).unwrap_or_else(|e| panic!("{e}: {stdout}"));
    let message = v["outcome"]["error"]["message"]
        .as_str()
        .unwrap_or_default();
    assert!(
        message.contains("TLS handshake"),
        "the class at default verbosity: {message}"
    );
    assert!(stderr.contains("TLS handshake failed"), "{stderr}");
    assert!(
        !stderr.contains("<redacted>"),
        "nothing to cut, nothing damaged: {stderr}"
    );

    // A reply that breaks off: "connection broken" stays whole.
    let server = Server::start().await;
    server.push([Answer::CloseMidBody {
        declared: 400,
        body: b"{\"id\":".to_vec(),
    }]);
    let (code, _, stderr) = book_ai_with_key(outline_args(&server.base_url(), &["-v"]), "k").await;
    assert_eq!(code, Some(1));
    assert!(stderr.contains("connection broken"), "{stderr}");
    assert!(!stderr.contains("<redacted>"), "{stderr}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_rate_limit_then_a_reply_with_usage_is_complete() {
    let server = Server::start().await;
    server.push([
        rate_limited(),
        outline_reply(json!({"inputTokens": 90, "outputTokens": 418})),
    ]);
    let (code, stdout, stderr) =
        book_ai_with_key(outline_args(&server.base_url(), &["--json"]), KEY).await;
    assert_eq!(code, Some(0), "{stderr}");
    let v: Value = serde_json::from_str(&stdout).expect("JSON");
    let call = &v["outcome"]["calls"][0];
    assert_eq!(
        (call["requests"].clone(), call["outputTokens"].clone()),
        (json!(2), json!(418))
    );
    assert_eq!(
        call["usageComplete"], true,
        "a 429 generated nothing: {v:#}"
    );
    assert_eq!(v["outcome"]["provider"]["usageComplete"], true, "{v:#}");
    server.push([
        rate_limited(),
        outline_reply(json!({"inputTokens": 90, "outputTokens": 418})),
    ]);
    let (_, stdout, _) = book_ai_with_key(outline_args(&server.base_url(), &[]), KEY).await;
    assert!(
        stdout.contains("2 requests, 418 output tokens, ok"),
        "{stdout}"
    );
    assert!(
        !stdout.contains("withheld") && !stdout.contains("at least"),
        "{stdout}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn refused_connections_take_no_number_and_use_up_no_retry() {
    let answers = vec![rate_limited(), outline_reply(json!(false))];
    let (code, stdout, stderr, server) = run_after_refusals(2, answers, &["-v"]).await;
    // Two refused connections, a 429, a reply: the call completes within its cap of 3.
    assert_eq!(code, Some(0), "{stderr}");
    assert_eq!(server.received().len(), 2);
    assert!(
        stdout.contains("call 0: 2 requests"),
        "attempts.count: {stdout}"
    );
    // One numbering: progress, the trace and attempts.count.
    let refused = "request 1 never reached the provider (refused): not received, not an \
                   attempt, not counted against maxAttempts";
    assert_eq!(stderr.matches(refused).count(), 2, "{stderr}");
    assert!(stderr.contains("request 1 failed (HTTP 429)"), "{stderr}");
    assert!(!stderr.contains("request 3"), "{stderr}");
    let spans: Vec<&str> = stderr
        .lines()
        .filter(|l| l.contains("wop.provider.request{") && l.contains("}: close "))
        .collect();
    assert_eq!(
        spans.len(),
        4,
        "a span per connection and request:\n{stderr}"
    );
    assert!(
        spans.iter().all(|l| !l.contains("wop.attempt=3")),
        "{stderr}"
    );
    assert_eq!(
        spans.iter().filter(|l| l.contains("wop.attempt=2")).count(),
        1,
        "{stderr}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn retries_run_out_on_provider_requests_and_say_how_many() {
    let answers = vec![rate_limited(), rate_limited(), rate_limited()];
    let (code, _, stderr, server) = run_after_refusals(1, answers, &[]).await;
    assert_eq!(code, Some(1));
    assert_eq!(
        server.received().len(),
        3,
        "the cap bounds provider requests: {stderr}"
    );
    assert!(
        stderr.contains("host retries exhausted after 3 provider requests"),
        "{stderr}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_timed_out_request_is_sent_with_no_answer_in_every_view() {
    let dir = std::env::temp_dir().join(format!("wop-t33-timeout-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("dir");
    let svg = dir.join("r.svg");
    let server = Server::start().await;
    server.push([Answer::Hang]);
    let args = [
        "--timeout",
        "0.5",
        "--json",
        "--report",
        svg.to_str().expect("utf-8"),
    ];
    let (code, stdout, _) = book_ai_with_key(outline_args(&server.base_url(), &args), KEY).await;
    assert_eq!(code, Some(1));
    assert_eq!(server.received().len(), 1);
    let v: Value = serde_json::from_str(&stdout).expect("JSON");
    let p = &v["outcome"]["provider"];
    assert_eq!(
        (p["sent"].clone(), p["noAnswer"].clone()),
        (json!(1), json!(1)),
        "{v:#}"
    );
    let message = v["outcome"]["error"]["message"]
        .as_str()
        .unwrap_or_default();
    assert!(
        message.contains("timed out") && message.contains("may have received"),
        "{message}"
    );
    let picture = std::fs::read_to_string(&svg).expect("svg");
    assert!(picture.contains("1 sent, 1 with no answer (the provider may have received it)"));
    server.push([Answer::Hang]);
    let (_, stdout, _) =
        book_ai_with_key(outline_args(&server.base_url(), &["--timeout", "0.5"]), KEY).await;
    assert!(
        stdout.contains(
            "sent to the provider: 1 request (0 answered, 1 with no answer (the provider may \
             have received it))"
        ),
        "{stdout}"
    );
    assert!(!stdout.contains("received by the provider: 0"), "{stdout}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_400_naming_the_key_says_check_the_key() {
    // LiteLLM's answer to a wrong key.
    let body = json!({"error": {"message": "Authentication Error, Invalid proxy server token \
        passed. Received API Key = sk-...", "type": "auth_error", "param": "None", "code": "400"}});
    let server = Server::start().await;
    server.push([Answer::json(400, &body)]);
    let (code, stdout, stderr) =
        book_ai_with_key(outline_args(&server.base_url(), &["--json", "-v"]), KEY).await;
    assert_eq!(code, Some(1));
    let v: Value = serde_json::from_str(&stdout).expect("JSON");
    let message = v["outcome"]["error"]["message"]
        .as_str()
        .unwrap_or_default();
    assert!(
        message.contains("HTTP 400") && message.contains("API key"),
        "{message}"
    );
    assert!(!message.contains("model name"), "{message}");
    assert!(
        stderr.contains("Invalid proxy server token"),
        "-v adds the body: {stderr}"
    );
}
