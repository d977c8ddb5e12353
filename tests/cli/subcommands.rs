//! Each subcommand: the demo, `manifest`, `estimate`, `run`, `events` and `replay` on one journal,
//! `conformance`.

use super::*;

#[test]
fn without_arguments_the_demo_runs_and_exits_0() {
    let o = run(&[]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    // The estimate and progress on standard error, the report on standard output.
    let out = format!("{}{}", stderr(&o), stdout(&o));
    for expected in [
        "Estimate (host ceiling 3",
        "w/o 0248: a host without callAccounting, each structured call charged 4",
        "Progress",
        "draft-1: host retry, request 2 (truncation)",
        "Billed per beneficiary",
        "[drafted] Hale questions the ferryman at dawn",
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
    // Two scenes, each a draft and one repair: 4 structured calls.
    assert_eq!(v["nodes"][1]["requests"], 4 * 3);
    assert_eq!(
        v["nodes"][1]["outputTokensWithGrowth"],
        4 * (600 + 1200 + 2400)
    );
    assert_eq!(v["nodes"][1]["outputTokensWithoutGrowth"], 4 * 3 * 600);
    assert_eq!(v["nodes"][1]["fits"], true);
    // On a host without callAccounting each is charged 3 requests and the fallback.
    assert_eq!(v["nodes"][0]["requestsWithoutAccounting"], 4);
    assert_eq!(v["nodes"][1]["requestsWithoutAccounting"], 4 * 4);
    assert_eq!(v["nodes"][1]["fitsWithoutAccounting"], true);

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
            .contains("node `draft-scene` may make 18 provider requests, but its max_calls is 16"),
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
            "refusing to start: the run would not fit its budget: node `main` may make 18 \
             provider requests, but its max_calls is 16"
        ),
        "{}",
        stderr(&o)
    );
}

#[test]
fn run_events_and_replay_share_a_sqlite_journal() {
    run_events_and_replay_share_a_journal("runs.db");
}

/// A new `*.log` file is a log journal; the commands after `run` know it by its header.
#[test]
fn run_events_and_replay_share_a_log_journal() {
    run_events_and_replay_share_a_journal("runs.log");
    let journal = std::env::temp_dir()
        .join(format!("book-ai-cli-{}", std::process::id()))
        .join("runs.log");
    let bytes = std::fs::read(&journal).expect("the journal");
    assert!(bytes.starts_with(b"WOPJLOG\n"), "a log journal");
    let _ = std::fs::remove_file(&journal);
}

fn run_events_and_replay_share_a_journal(name: &str) {
    let journal = fresh_journal(name);
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
