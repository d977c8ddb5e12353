//! The `book_ai` command line against the loopback server.

use super::*;

/// Runs the example with `args` (and `OPENAI_API_KEY`) while this test's server keeps serving.
async fn book_ai(args: Vec<String>) -> std::process::Output {
    let bin = book_ai_binary();
    tokio::task::spawn_blocking(move || {
        std::process::Command::new(bin)
            .args(args)
            .env("OPENAI_API_KEY", KEY)
            .env_remove("RUST_LOG")
            .env_remove("OPENAI_MODEL")
            .env_remove("OPENAI_BASE_URL")
            .output()
            .expect("the example runs")
    })
    .await
    .expect("joined")
}

/// The issue's own command: `book_ai -- run --provider openai --base-url … --model …` writes the
/// book with the server's model and prints the same report as the scripted demo.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cli_runs_book_ai_against_the_server() {
    let reference = book_ai(Vec::new()).await;
    assert!(reference.status.success());

    let server = Server::start().await;
    let steps: Value = serde_json::from_str(demo::SCRIPT).expect("script.json");
    server.push(steps.as_array().expect("steps").iter().map(scripted));
    let args = [
        "run",
        "--provider",
        "openai",
        "--base-url",
        &server.base_url(),
        "--model",
        "test-model",
    ];
    let o = book_ai(args.iter().map(|s| (*s).to_owned()).collect()).await;
    let stdout = String::from_utf8_lossy(&o.stdout);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let without_run_id = |text: &str| {
        text.lines()
            .map(|l| {
                if l.starts_with("Report for run ") {
                    "Report for run RUN"
                } else {
                    l
                }
            })
            .map(|l| l.replace("mock-1", "MODEL").replace("test-model", "MODEL"))
            // Progress lines start with the elapsed time, which differs between two runs.
            .map(|l| match l.trim_start().split_once("s  ") {
                Some((t, rest)) if t.parse::<f64>().is_ok() => format!("TIME  {rest}"),
                _ => l,
            })
            .collect::<Vec<_>>()
    };
    assert_eq!(
        without_run_id(&String::from_utf8_lossy(&reference.stdout)),
        without_run_id(&stdout)
    );
    assert_eq!(server.remaining(), 0);
    let got = server.received();
    assert!(
        got.iter()
            .all(|r| r.header("authorization") == Some(&*format!("Bearer {KEY}")))
    );
    assert!(got.iter().all(|r| r.body["model"] == "test-model"));
}

/// `run --node … --provider openai -v`: one node against the server, with the provider request's
/// span on standard error, and no key anywhere in the output.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cli_run_node_with_openai_and_tracing() {
    let server = Server::start().await;
    server.push([Answer::completion(
        "Tight and vivid; draft scene two.",
        "stop",
        Some((80, 9)),
    )]);
    let input = json!({"draft": {"number": 1, "scenes": []}}).to_string();
    let args = [
        "run",
        "--node",
        "community.demo.bookai.review-chapter",
        "--input-json",
        &input,
        "--provider",
        "openai",
        "--base-url",
        &server.base_url(),
        "--model",
        "test-model",
        "--json",
        "-v",
    ];
    let o = book_ai(args.iter().map(|s| (*s).to_owned()).collect()).await;
    let (stdout, stderr) = (
        String::from_utf8_lossy(&o.stdout).into_owned(),
        String::from_utf8_lossy(&o.stderr).into_owned(),
    );
    assert!(o.status.success(), "{stderr}");
    let v: Value = serde_json::from_str(&stdout).expect("JSON");
    assert_eq!(v["outcome"]["calls"][0]["requests"], 1, "{v:#}");
    assert_eq!(v["outcome"]["calls"][0]["outputTokens"], 9, "{v:#}");
    for needle in [
        "wop.provider.request",
        "gen_ai.request.model=test-model",
        "gen_ai.usage.output_tokens=9",
        // The node's and the call's spans close too, with their outcome (README, "-v").
        "wop.node{",
        "wop.call{",
        "wop.outcome=\"completed\"",
    ] {
        assert!(stderr.contains(needle), "`{needle}` missing:\n{stderr}");
    }
    assert!(!stdout.contains(KEY) && !stderr.contains(KEY));

    // Without `-v` nothing is traced.
    server.push([Answer::completion("Fine.", "stop", Some((80, 2)))]);
    let quiet: Vec<String> = args
        .iter()
        .filter(|a| **a != "-v")
        .map(|s| (*s).to_owned())
        .collect();
    let o = book_ai(quiet).await;
    assert!(o.status.success());
    let quiet_err = String::from_utf8_lossy(&o.stderr);
    assert!(!quiet_err.contains("wop.provider.request") && !quiet_err.contains("wop.call{"));

    // A missing model names the flag and the variable.
    let o = book_ai(vec![
        "run".into(),
        "--node".into(),
        "community.demo.bookai.review-chapter".into(),
        "--input-json".into(),
        input.clone(),
        "--provider".into(),
        "openai".into(),
        "--base-url".into(),
        server.base_url(),
    ])
    .await;
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("`--model M` or set `OPENAI_MODEL`"));
}

/// The demo takes `-v` and `--json` as `run` does: the report as JSON on standard output (its
/// provider counts equal the server's log), progress and the spans on standard error.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_demo_run_takes_verbose_and_json() {
    let server = Server::start().await;
    let steps: Value = serde_json::from_str(demo::SCRIPT).expect("script.json");
    server.push(steps.as_array().expect("steps").iter().map(scripted));
    let args = [
        "run",
        "--provider",
        "openai",
        "--base-url",
        &server.base_url(),
        "--model",
        "test-model",
        "-v",
        "--json",
    ];
    let o = book_ai(args.iter().map(|s| (*s).to_owned()).collect()).await;
    let (stdout, stderr) = (
        String::from_utf8_lossy(&o.stdout).into_owned(),
        String::from_utf8_lossy(&o.stderr).into_owned(),
    );
    assert!(o.status.success(), "{stderr}");
    let v: Value = serde_json::from_str(&stdout).unwrap_or_else(|e| panic!("{e}: {stdout}"));
    assert_eq!(v["completed"], true, "{v:#}");
    let nodes = v["nodes"].as_array().expect("nodes");
    let received: u64 = nodes
        .iter()
        .map(|n| n["provider"]["requests"].as_u64().expect("a count"))
        .sum();
    assert_eq!(received as usize, server.received().len(), "{v:#}");
    // The outline's reply withheld its usage: unknown stays unknown.
    assert_eq!(nodes[0]["usageComplete"], false, "{v:#}");
    assert_eq!(
        v["billed"]["author-1"]["outputTokensComplete"], false,
        "{v:#}"
    );
    // Each person's bill by their own calls: the editor's one call reported its usage.
    assert_eq!(
        v["billed"]["editor-7"]["outputTokensComplete"], true,
        "{v:#}"
    );
    for needle in ["wop.provider.request", "outline: started"] {
        assert!(stderr.contains(needle), "`{needle}` missing:\n{stderr}");
    }
    assert!(!stdout.contains(KEY) && !stderr.contains(KEY));
}
