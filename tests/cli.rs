//! Every subcommand of the pack command line, through the real `book_ai` example binary.
//!
//! Finding the binary: `CARGO_BIN_EXE_*` exists only for `[[bin]]` targets, so the test asks
//! cargo itself to build the example once (`cargo build --example book_ai`, the same cargo, the
//! same target dir and profile; a no-op when `cargo test` already built it) and runs it from
//! `<target>/<profile>/examples/`, a sibling of the `deps/` folder this test runs from. Cargo
//! releases its build lock before it runs tests, so the nested build does not wait; it also keeps
//! `cargo test --test cli` from ever running a stale binary.

use serde_json::{Value, json};
use std::path::PathBuf;
use std::process::{Command, Output};
use std::sync::OnceLock;

fn binary() -> PathBuf {
    static BUILT: OnceLock<PathBuf> = OnceLock::new();
    BUILT
        .get_or_init(|| {
            let status = Command::new(env!("CARGO"))
                .args(["build", "--quiet", "--example", "book_ai"])
                .current_dir(env!("CARGO_MANIFEST_DIR"))
                .status()
                .expect("cargo runs");
            assert!(status.success(), "`cargo build --example book_ai` failed");
            let exe = std::env::current_exe().expect("current exe");
            let profile_dir = exe
                .parent()
                .and_then(|deps| deps.parent())
                .expect("<target>/<profile>/deps/<test>");
            let bin = profile_dir
                .join("examples")
                .join(format!("book_ai{}", std::env::consts::EXE_SUFFIX));
            assert!(bin.exists(), "{} is missing", bin.display());
            bin
        })
        .clone()
}

/// Runs the example, its colours left to its own judgement (no `NO_COLOR`, no `CLICOLOR_FORCE`
/// from the environment of the test).
fn run(args: &[&str]) -> Output {
    run_env(args, &[])
}

fn code(o: &Output) -> i32 {
    o.status.code().expect("exit code")
}

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

fn temp(name: &str, contents: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("book-ai-cli-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let path = dir.join(name);
    std::fs::write(&path, contents).expect("write temp file");
    path
}

const BRIEF: &str = r#"{"premise": "A lighthouse mystery.", "chapters": 1, "scenesPerChapter": 2}"#;

fn chapter(scenes: usize) -> Value {
    json!({
        "chapter": {"number": 1, "title": "The Dark Lamp", "characters": ["Mara Quill"],
                    "scenes": vec!["a beat"; scenes]},
        "minWords": 5
    })
}

#[test]
fn without_arguments_the_demo_runs_and_exits_0() {
    let o = run(&[]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let out = stdout(&o);
    for expected in [
        "Estimate (host ceiling 3",
        "Progress",
        "draft-1: host retry, attempt 2 (truncation)",
        "draft-1: call 2 held back by the node's budget before dispatch",
        "budget_exhausted: never sent, nothing charged",
        "by design: the node's budget held this scene back",
        "Charges per beneficiary",
        "[PLACEHOLDER]",
    ] {
        assert!(out.contains(expected), "missing `{expected}` in:\n{out}");
    }
}

#[test]
fn manifest_prints_pack_json() {
    let o = run(&["manifest"]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let v: Value = serde_json::from_str(&stdout(&o)).expect("pack.json is JSON");
    assert_eq!(v["name"], "community.demo.bookai");
    assert_eq!(v["kind"], "node");
    let ids: Vec<&str> = v["nodes"]
        .as_array()
        .expect("nodes")
        .iter()
        .map(|n| n["typeId"].as_str().expect("typeId"))
        .collect();
    assert_eq!(
        ids,
        [
            "community.demo.bookai.plan-outline",
            "community.demo.bookai.draft-scene",
            "community.demo.bookai.review-chapter"
        ]
    );
    assert_eq!(
        v["nodes"][0]["outputSchemaRef"],
        "schemas/community.demo.bookai.plan-outline.output.json"
    );
    assert_eq!(v["runtime"]["language"], "javascript");

    let bad = run(&["manifest", "--pretty"]);
    assert_eq!(code(&bad), 2);
    assert!(stderr(&bad).contains("--pretty"), "{}", stderr(&bad));
}

#[test]
fn estimate_reports_each_node_and_refuses_bad_input() {
    let plan = json!({
        "community.demo.bookai.plan-outline": serde_json::from_str::<Value>(BRIEF).expect("brief"),
        "community.demo.bookai.draft-scene": chapter(2),
    });
    let o = run(&["estimate", "--input-json", &plan.to_string(), "--json"]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let v: Value = serde_json::from_str(&stdout(&o)).expect("JSON");
    assert_eq!(v["nodes"][0]["requests"], 3);
    assert_eq!(v["nodes"][1]["requests"], 6);
    assert_eq!(
        v["nodes"][1]["outputTokensWithGrowth"],
        2 * (600 + 1200 + 2400)
    );
    assert_eq!(v["nodes"][1]["outputTokensWithoutGrowth"], 2 * 3 * 600);
    assert_eq!(v["nodes"][1]["fits"], true);

    let file = temp(
        "plan.json",
        r#"{"community.demo.bookai.plan-outline": {"premise": "x"}}"#,
    );
    let bad = run(&["estimate", "--input", file.to_str().expect("utf-8")]);
    assert_eq!(code(&bad), 2);
    let err = stderr(&bad);
    assert!(
        err.contains("plan.json: field `community.demo.bookai.plan-outline.chapters`"),
        "{err}"
    );
    assert!(err.contains("missing field `chapters`"), "{err}");
}

#[test]
fn estimate_exits_1_when_a_node_cannot_fit() {
    let plan = json!({"community.demo.bookai.draft-scene": chapter(3)});
    let o = run(&["estimate", "--input-json", &plan.to_string()]);
    assert_eq!(code(&o), 1);
    assert!(
        stderr(&o)
            .contains("node `draft-scene` may make 9 provider requests, but its max_calls is 6"),
        "{}",
        stderr(&o)
    );
}

#[test]
fn run_executes_a_node_with_a_script_and_refuses_bad_input() {
    let script = temp(
        "outline-script.json",
        &json!([
            {"content": {"title": "T"}, "usage": {"outputTokens": 40}},
            {"content": {"title": "T", "chapters": [{"number": 1, "title": "C",
              "characters": ["Mara"], "scenes": ["a", "b"]}]}, "usage": {"outputTokens": 90}}
        ])
        .to_string(),
    );
    let script = script.to_str().expect("utf-8");
    let o = run(&[
        "run",
        "--node",
        "community.demo.bookai.plan-outline",
        "--input-json",
        BRIEF,
        "--script",
        script,
        "--json",
    ]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let v: Value = serde_json::from_str(&stdout(&o)).expect("JSON");
    assert_eq!(v["outcome"]["status"], "completed", "{v:#}");
    assert_eq!(v["outcome"]["output"]["title"], "T", "{v:#}");
    assert!(v["outcome"].get("error").is_none(), "{v:#}");
    assert!(
        !stdout(&o).contains("\"Ok\"") && !stdout(&o).contains("\"Err\""),
        "no Rust enum tags: {v:#}"
    );
    assert_eq!(v["outcome"]["provider"]["requests"], 2);
    assert_eq!(v["outcome"]["budget"]["charged"], 2);
    assert_eq!(v["outcome"]["budget"]["maxCalls"], 4);
    assert_eq!(v["outcome"]["calls"][0]["requests"], 2);
    assert_eq!(v["outcome"]["calls"][0]["outputTokens"], 130);
    assert_eq!(v["estimate"]["nodes"][0]["requests"], 3);

    let bad_script = temp("bad-script.json", r#"[{"content": "x", "usage": 3}]"#);
    let bad = run(&[
        "run",
        "--node",
        "community.demo.bookai.plan-outline",
        "--input-json",
        BRIEF,
        "--script",
        bad_script.to_str().expect("utf-8"),
    ]);
    assert_eq!(code(&bad), 2);
    let err = stderr(&bad);
    assert!(err.contains("bad-script.json"), "{err}");
    assert!(
        err.contains("`script[0].usage` must be an object or `false`"),
        "{err}"
    );

    let wrong_type = run(&[
        "run",
        "--node",
        "community.demo.bookai.plan-outline",
        "--input-json",
        r#"{"premise": "x", "chapters": "two", "scenesPerChapter": 2}"#,
        "--script",
        script,
    ]);
    assert_eq!(code(&wrong_type), 2);
    assert!(
        stderr(&wrong_type).contains(
            "--input-json: field `input.chapters`: the node input is invalid: \
             invalid type: string \"two\", expected u32"
        ),
        "{}",
        stderr(&wrong_type)
    );

    let no_script = run(&[
        "run",
        "--node",
        "community.demo.bookai.plan-outline",
        "--input-json",
        BRIEF,
    ]);
    assert_eq!(code(&no_script), 2);
    assert!(stderr(&no_script).contains("--input-json: no provider script"));

    let unknown = run(&[
        "run",
        "--node",
        "community.demo.bookai.nope",
        "--input-json",
        "{}",
    ]);
    assert_eq!(code(&unknown), 2);
    assert!(stderr(&unknown).contains("--node community.demo.bookai.nope: no such node"));
}

#[test]
fn run_refuses_to_start_a_node_that_cannot_fit() {
    let script = temp("empty-script.json", "[]");
    let o = run(&[
        "run",
        "--node",
        "community.demo.bookai.draft-scene",
        "--input-json",
        &chapter(3).to_string(),
        "--script",
        script.to_str().expect("utf-8"),
    ]);
    assert_eq!(code(&o), 1);
    assert!(
        stderr(&o).contains(
            "refusing to start: the run would not fit its budget: node `main` may make 9 \
             provider requests, but its max_calls is 6"
        ),
        "{}",
        stderr(&o)
    );
}

#[test]
fn run_events_and_replay_share_a_sqlite_journal() {
    let journal = std::env::temp_dir()
        .join(format!("book-ai-cli-{}", std::process::id()))
        .join("runs.db");
    let _ = std::fs::remove_file(&journal);
    let journal = journal.to_str().expect("utf-8").to_owned();
    let script = temp(
        "review-script.json",
        r#"[{"content": "Tighten the ending.", "usage": {"outputTokens": 12}}]"#,
    );
    let review = json!({"draft": {"number": 1, "scenes": [
        {"beat": "b", "text": "t", "placeholder": false, "repaired": false}]}});
    let o = run(&[
        "run",
        "--node",
        "community.demo.bookai.review-chapter",
        "--input-json",
        &review.to_string(),
        "--script",
        script.to_str().expect("utf-8"),
        "--journal",
        &journal,
        "--json",
    ]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let recorded: Value = serde_json::from_str(&stdout(&o)).expect("JSON");
    let run_id = recorded["outcome"]["runId"]
        .as_str()
        .expect("runId")
        .to_owned();

    // events: the recorded log, read without a provider.
    let o = run(&["events", &run_id, "--journal", &journal, "--json"]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let events: Value = serde_json::from_str(&stdout(&o)).expect("JSON");
    let types: Vec<&str> = events
        .as_array()
        .expect("array")
        .iter()
        .map(|e| e["type"].as_str().expect("type"))
        .collect();
    assert_eq!(types, ["node.started", "provider.usage", "node.completed"]);
    let o = run(&["events", "run-that-never-was", "--journal", &journal]);
    assert_eq!(code(&o), 2);
    assert!(stderr(&o).contains("RUN_ID run-that-never-was: no such run in the journal"));

    // replay: the same output and the same attempts, with no script (no provider request).
    let o = run(&["replay", &run_id, "--journal", &journal, "--json"]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let replayed: Value = serde_json::from_str(&stdout(&o)).expect("JSON");
    assert_eq!(replayed["outcome"]["output"], recorded["outcome"]["output"]);
    assert_eq!(replayed["outcome"]["status"], "completed");
    // A replay sends nothing to the provider.
    assert_eq!(replayed["outcome"]["provider"]["requests"], 0);
    assert_eq!(recorded["outcome"]["provider"]["requests"], 1);
    assert_eq!(replayed["outcome"]["calls"], recorded["outcome"]["calls"]);
    assert_ne!(replayed["outcome"]["runId"], recorded["outcome"]["runId"]);
    // A second replay, from another process, is a fork of its own.
    let o = run(&["replay", &run_id, "--journal", &journal, "--json"]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let again: Value = serde_json::from_str(&stdout(&o)).expect("JSON");
    assert_ne!(again["outcome"]["runId"], replayed["outcome"]["runId"]);
    assert_eq!(again["outcome"]["calls"], recorded["outcome"]["calls"]);
    let missing = format!("{journal}.missing");
    let o = run(&["replay", &run_id, "--journal", &missing]);
    assert_eq!(code(&o), 2);
    assert!(
        stderr(&o).contains("no such journal file"),
        "{}",
        stderr(&o)
    );
    assert!(!std::path::Path::new(&missing).exists());

    // No --journal at all: a usage error from the argument parser.
    for sub in ["events", "replay"] {
        let o = run(&[sub, "run-1"]);
        assert_eq!(code(&o), 2, "{sub}");
        assert!(stderr(&o).contains("--journal"), "{sub}: {}", stderr(&o));
    }
}

#[test]
fn conformance_reports_the_eight_legs() {
    let o = run(&["conformance"]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let out = stdout(&o);
    let legs = out.lines().filter(|l| l.trim_start().starts_with("0248."));
    assert_eq!(
        legs.filter(|l| l.contains("executed-pass")).count(),
        8,
        "{out}"
    );
    // The extra checks are reported apart, after the legs.
    assert!(out.contains("extra.retry-malformed-every-form"), "{out}");
    assert!(out.contains("0248.retry-malformed-refused"));

    let o = run(&["conformance", "--json"]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert!(stdout(&o).ends_with("}\n"), "JSON ends with a newline");
    let report: Value = serde_json::from_str(&stdout(&o)).expect("JSON report");
    assert_eq!(report["result"], "passed");

    // An older host advertises no callAccounting: every leg is skipped by design, which passes.
    let o = run(&["conformance", "--older-host", "--json"]);
    assert_eq!(code(&o), 0, "skipped by design: {}", stderr(&o));
    assert!(stdout(&o).ends_with("}\n"), "JSON ends with a newline");
    let report: Value = serde_json::from_str(&stdout(&o)).expect("JSON report");
    assert_eq!(report["result"], "skipped-by-design");
    let verdicts: Vec<&str> = report["legs"]
        .as_array()
        .expect("legs")
        .iter()
        .map(|l| l["verdict"].as_str().expect("verdict"))
        .collect();
    assert_eq!(verdicts, ["skipped"; 8]);
    assert!(
        stderr(&o).contains("every leg was skipped, as --older-host intends"),
        "says why: {}",
        stderr(&o)
    );
    let o = run(&["conformance", "--older-host"]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let out = stdout(&o);
    let legs = out.lines().filter(|l| l.trim_start().starts_with("0248."));
    assert_eq!(legs.filter(|l| l.contains("skipped")).count(), 8, "{out}");

    let dir = temp("conformance-journal", "");
    let o = run(&[
        "conformance",
        "--journal",
        dir.join("x.sqlite").to_str().expect("utf-8"),
    ]);
    assert_eq!(code(&o), 2, "{}", stdout(&o));
    assert!(stderr(&o).contains("--journal"), "{}", stderr(&o));
}

fn run_env(args: &[&str], env: &[(&str, &str)]) -> Output {
    let mut c = Command::new(binary());
    c.args(args)
        .env_remove("NO_COLOR")
        .env_remove("CLICOLOR_FORCE");
    for (k, v) in env {
        c.env(k, v);
    }
    c.output().expect("the example runs")
}

/// The pack's name as its own manifest says (it may change; the tests do not pin it).
fn pack_name() -> String {
    let o = run(&["manifest"]);
    let v: Value = serde_json::from_str(&stdout(&o)).expect("pack.json");
    v["name"].as_str().expect("name").to_owned()
}

/// The type id of the pack's node whose id ends with `-suffix`, as its manifest says.
fn node(suffix: &str) -> String {
    let o = run(&["manifest"]);
    let v: Value = serde_json::from_str(&stdout(&o)).expect("pack.json");
    v["nodes"]
        .as_array()
        .expect("nodes")
        .iter()
        .filter_map(|n| n["typeId"].as_str())
        .find(|id| id.ends_with(&format!(".{suffix}")))
        .unwrap_or_else(|| panic!("no node `{suffix}` in the manifest"))
        .to_owned()
}

/// Three replies, each truncated: the call fails after three requests.
fn truncated_script() -> PathBuf {
    temp(
        "truncated-script.json",
        &json!([
            {"content": {"title": "T"}, "usage": {"outputTokens": 2000}, "finishReason": "length"},
            {"content": {"title": "T"}, "usage": {"outputTokens": 2000}, "finishReason": "length"},
            {"content": {"title": "T"}, "usage": {"outputTokens": 2000}, "finishReason": "length"}
        ])
        .to_string(),
    )
}

/// A schema violation, then the outline in a reply that withholds its usage.
fn withheld_script() -> PathBuf {
    temp(
        "withheld-script.json",
        &json!([
            {"content": {"title": "T"}, "usage": {"outputTokens": 40}},
            {"content": {"title": "T", "chapters": [{"number": 1, "title": "C",
              "characters": ["Mara"], "scenes": ["a", "b"]}]}, "usage": false}
        ])
        .to_string(),
    )
}

#[test]
fn version_and_help_describe_the_pack_and_the_script_format() {
    let o = run(&["--version"]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let version = stdout(&o);
    assert!(
        version.starts_with(&format!("{} 0.1.0 (wop-sdk ", pack_name())),
        "{version}"
    );
    assert!(version.ends_with('\n'));

    let o = run(&["--help"]);
    assert_eq!(code(&o), 0);
    assert!(
        stdout(&o).contains("Exit codes: 0 success"),
        "{}",
        stdout(&o)
    );

    let o = run(&["run", "--help"]);
    assert_eq!(code(&o), 0);
    let help = stdout(&o);
    for expected in [
        "Provider script (--script FILE, or the input's `script` field)",
        "usage         {inputTokens?, outputTokens?}, or false for a reply that reports none",
        "finishReason  stop (default), length, content-filter",
        "--report <FILE.svg>",
        "NO_COLOR",
    ] {
        assert!(help.contains(expected), "missing `{expected}` in\n{help}");
    }
}

#[test]
fn a_failed_call_shows_what_was_reserved_and_what_was_sent_never_a_made_up_zero() {
    let script = truncated_script();
    let script = script.to_str().expect("utf-8");
    let outline = node("plan-outline");
    let args = [
        "run",
        "--node",
        &outline,
        "--input-json",
        BRIEF,
        "--script",
        script,
    ];
    let o = run(&[&args[..], &["--json"]].concat());
    assert_eq!(code(&o), 1, "{}", stderr(&o));
    let v: Value = serde_json::from_str(&stdout(&o)).expect("one JSON object");
    let outcome = &v["outcome"];
    assert_eq!(outcome["status"], "failed");
    assert_eq!(
        outcome["error"]["error"],
        "envelope_truncation_unrecoverable"
    );
    assert!(outcome.get("output").is_none());
    // The node is told no attempts for a failed call: unknown, written null, never 0.
    let call = &outcome["calls"][0];
    assert_eq!(call["requests"], Value::Null, "{outcome:#}");
    assert_eq!(call["outputTokens"], Value::Null, "{outcome:#}");
    assert_eq!(call["usageComplete"], Value::Null, "{outcome:#}");
    // Reserved and charged: the worst case. Really sent: what the provider received.
    assert_eq!(call["charged"], 3);
    assert_eq!(outcome["budget"]["charged"], 3);
    assert_eq!(outcome["budget"]["chargedWorstCase"], 3);
    assert_eq!(outcome["budget"]["remaining"], 1, "max_calls 4, 3 charged");
    assert_eq!(outcome["provider"]["requests"], 3);
    // 800, then 1600 (the budget grown x2), then 2000 as declared (under 3200).
    assert_eq!(outcome["provider"]["outputTokens"], 800 + 1600 + 2000);
    assert_eq!(outcome["provider"]["usageComplete"], true);

    let o = run(&args);
    assert_eq!(code(&o), 1);
    let text = stdout(&o);
    assert!(
        text.contains("3 reserved and charged (a failed call is charged its worst case)"),
        "{text}"
    );
    assert!(
        text.contains("requests and output tokens unknown to the node"),
        "{text}"
    );
    assert!(
        text.contains("sent to the provider: 3 requests, 4400 output tokens"),
        "{text}"
    );
    assert!(!text.contains(" 0 output tokens"), "{text}");
    assert!(stderr(&o).contains("host retries exhausted after 3 attempts"));
}

#[test]
fn a_reply_that_withheld_usage_is_a_floor_and_has_its_progress_line() {
    let script = withheld_script();
    let outline = node("plan-outline");
    let o = run(&[
        "run",
        "--node",
        &outline,
        "--input-json",
        BRIEF,
        "--script",
        script.to_str().expect("utf-8"),
    ]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let err = stderr(&o);
    let progress: Vec<&str> = err
        .lines()
        .filter(|l| l.contains("provider request answered"))
        .collect();
    assert_eq!(progress.len(), 2, "one line per request: {err}");
    assert!(progress[1].ends_with("output tokens unknown (the reply withheld its usage)"));
    // Every progress line starts with the elapsed time: `   0.01s  main: ...`.
    for l in err.lines().filter(|l| l.contains("main: ")) {
        let (time, _) = l.trim_start().split_once("s  main: ").expect("time column");
        assert!(time.parse::<f64>().is_ok(), "{l}");
    }
    assert!(
        stdout(&o).contains("at least 40 output tokens (usage withheld)"),
        "{}",
        stdout(&o)
    );
}

#[test]
fn run_report_draws_estimate_against_actual() {
    let script = withheld_script();
    let svg_path = temp("report.svg", "");
    let outline = node("plan-outline");
    let o = run(&[
        "run",
        "--node",
        &outline,
        "--input-json",
        BRIEF,
        "--script",
        script.to_str().expect("utf-8"),
        "--report",
        svg_path.to_str().expect("utf-8"),
        "--json",
    ]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let svg = std::fs::read_to_string(&svg_path).expect("the report was written");
    let doc = roxmltree::Document::parse(&svg).expect("well-formed SVG");
    assert_eq!(doc.root_element().tag_name().name(), "svg");
    let bar = |class: &str| -> Vec<(String, f64)> {
        doc.descendants()
            .filter(|n| n.attribute("class") == Some(class))
            .map(|n| {
                assert_eq!(n.attribute("data-node"), Some("main"));
                let w: f64 = n
                    .attribute("width")
                    .expect("width")
                    .parse()
                    .expect("number");
                (n.attribute("data-value").expect("value").to_owned(), w)
            })
            .collect()
    };
    let estimate = bar("bar estimate");
    let actual = bar("bar actual");
    // Requests then output tokens.
    assert_eq!(
        estimate.iter().map(|(v, _)| v.as_str()).collect::<Vec<_>>(),
        ["3", "5600"]
    );
    assert_eq!(
        actual.iter().map(|(v, _)| v.as_str()).collect::<Vec<_>>(),
        ["2", "40"]
    );
    // Bars are drawn to scale: 2 of 3 requests is two thirds of the estimate's bar.
    let ratio = actual[0].1 / estimate[0].1;
    assert!((ratio - 2.0 / 3.0).abs() < 0.01, "{ratio}");
    assert_eq!(bar("bar max-calls")[0].0, "4");
    assert_eq!(bar("bar used")[0].0, "2");
    let texts: Vec<&str> = doc
        .descendants()
        .filter(|n| n.has_tag_name("text"))
        .filter_map(|n| n.text())
        .map(str::trim)
        .collect();
    for label in [
        "Provider requests",
        "Output tokens",
        "Budget used of max_calls",
        "main",
        "2 of 4",
        "at least 40 (usage withheld)",
    ] {
        assert!(texts.contains(&label), "missing `{label}` in {texts:?}");
    }

    let o = run(&[
        "run",
        "--node",
        &outline,
        "--input-json",
        BRIEF,
        "--script",
        script.to_str().expect("utf-8"),
        "--report",
        "/nonexistent-dir/report.svg",
    ]);
    assert_eq!(code(&o), 1);
    assert!(
        stderr(&o).contains("--report /nonexistent-dir/report.svg: cannot write"),
        "{}",
        stderr(&o)
    );
}

#[test]
fn events_pretty_print_their_payloads() {
    let journal = std::env::temp_dir()
        .join(format!("book-ai-cli-{}", std::process::id()))
        .join("events.db");
    let _ = std::fs::remove_file(&journal);
    let journal = journal.to_str().expect("utf-8").to_owned();
    let script = temp(
        "events-script.json",
        r#"[{"content": "Tighten the ending.", "usage": {"outputTokens": 12}}]"#,
    );
    let review_node = node("review-chapter");
    let review = json!({"draft": {"number": 1, "scenes": [
        {"beat": "b", "text": "t", "placeholder": false, "repaired": false}]}});
    let o = run(&[
        "run",
        "--node",
        &review_node,
        "--input-json",
        &review.to_string(),
        "--script",
        script.to_str().expect("utf-8"),
        "--journal",
        &journal,
        "--json",
    ]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let v: Value = serde_json::from_str(&stdout(&o)).expect("JSON");
    let run_id = v["outcome"]["runId"].as_str().expect("runId").to_owned();
    let o = run(&["events", &run_id, "--journal", &journal]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let text = stdout(&o);
    // The node's output is spread over indented lines, one field each.
    let notes = text
        .lines()
        .find(|l| l.contains("\"notes\": \"Tighten the ending.\""))
        .unwrap_or_else(|| panic!("no pretty output in\n{text}"));
    assert!(notes.starts_with("          "), "indented: `{notes}`");
    assert!(
        text.lines().any(|l| l.trim() == "\"placeholders\": 0"),
        "{text}"
    );
    assert!(text.lines().any(|l| l.contains("provider.usage")), "{text}");
}

/// Runs the example with its standard output a pipe whose reader is already gone, as after
/// `| head` has read what it wanted.
fn run_into_closed_pipe(args: &[&str]) -> Output {
    let (reader, writer) = std::io::pipe().expect("a pipe");
    drop(reader);
    Command::new(binary())
        .args(args)
        .stdout(writer)
        .stderr(std::process::Stdio::piped())
        .output()
        .expect("the example runs")
}

#[test]
fn a_closed_pipe_ends_the_command_quietly() {
    let script = temp(
        "pipe-script.json",
        r#"[{"content": "Tighten the ending.", "usage": {"outputTokens": 12}}]"#,
    );
    let review = json!({"draft": {"number": 1, "scenes": [
        {"beat": "b", "text": "t", "placeholder": false, "repaired": false}]}})
    .to_string();
    let script = script.to_str().expect("utf-8");
    let review_node = node("review-chapter");
    for args in [
        &["manifest"][..],
        &["conformance"],
        &["conformance", "--json"],
        &["--help"],
        &["--version"],
        &[],
        &[
            "run",
            "--node",
            &review_node,
            "--input-json",
            &review,
            "--script",
            script,
            "--json",
        ],
    ] {
        let o = run_into_closed_pipe(args);
        let err = stderr(&o);
        assert_eq!(code(&o), 0, "{args:?}: {err}");
        assert!(!err.contains("Broken pipe"), "{args:?}: {err}");
        assert!(!err.contains("panicked"), "{args:?}: {err}");
        assert!(!err.contains("error"), "{args:?}: {err}");
    }
    // A refused command still says why on standard error, with its own exit code.
    let mut bad = serde_json::Map::new();
    bad.insert(node("plan-outline"), json!({}));
    let o = run_into_closed_pipe(&["estimate", "--input-json", &Value::Object(bad).to_string()]);
    assert_eq!(code(&o), 2, "{}", stderr(&o));
    assert!(!stderr(&o).contains("Broken pipe"), "{}", stderr(&o));
}

#[test]
fn colours_only_on_request_and_never_with_no_color() {
    let script = withheld_script();
    let outline = node("plan-outline");
    let args = [
        "run",
        "--node",
        &outline,
        "--input-json",
        BRIEF,
        "--script",
        script.to_str().expect("utf-8"),
    ];
    let esc = |o: &Output| stdout(o).contains('\u{1b}') || stderr(o).contains('\u{1b}');
    // Not a terminal: plain.
    let o = run_env(&args, &[]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert!(!esc(&o), "{}", stderr(&o));
    // Forced: coloured.
    let o = run_env(&args, &[("CLICOLOR_FORCE", "1")]);
    assert!(esc(&o), "CLICOLOR_FORCE colours: {}", stderr(&o));
    // NO_COLOR wins.
    let o = run_env(&args, &[("CLICOLOR_FORCE", "1"), ("NO_COLOR", "1")]);
    assert!(!esc(&o), "NO_COLOR: {}", stderr(&o));
}
