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

fn run(args: &[&str]) -> Output {
    Command::new(binary())
        .args(args)
        .output()
        .expect("the example runs")
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
        "refused before dispatch (budget_exhausted)",
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
    assert_eq!(v["outcome"]["result"]["Ok"]["title"], "T", "{v:#}");
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
    assert_eq!(replayed["outcome"]["result"], recorded["outcome"]["result"]);
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
    assert_eq!(out.matches("executed-pass").count(), 8, "{out}");
    assert!(out.contains("0248.retry-malformed-refused"));

    let o = run(&["conformance", "--older-host", "--json"]);
    assert_eq!(code(&o), 1, "an older host does not pass: {}", stdout(&o));
    let report: Value = serde_json::from_str(&stdout(&o)).expect("JSON report");
    let text = report.to_string();
    assert_eq!(text.matches("\"skipped\"").count(), 8, "{text}");

    let dir = temp("conformance-journal", "");
    let o = run(&[
        "conformance",
        "--journal",
        dir.join("x.sqlite").to_str().expect("utf-8"),
    ]);
    assert_eq!(code(&o), 2, "{}", stdout(&o));
    assert!(stderr(&o).contains("--journal"), "{}", stderr(&o));
}
