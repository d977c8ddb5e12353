//! Everything the command line writes, through the real `book_ai` binary.

use super::*;

fn run(args: &[&str]) -> (i32, Value) {
    let o: Output = Command::new(book_ai_binary())
        .args(args)
        .output()
        .expect("runs");
    let stdout = String::from_utf8_lossy(&o.stdout);
    let json = serde_json::from_str(&stdout).unwrap_or_else(|e| {
        panic!(
            "{args:?} printed no JSON ({e}): {stdout}\n{}",
            String::from_utf8_lossy(&o.stderr)
        )
    });
    (o.status.code().unwrap_or(-1), json)
}

#[test]
fn everything_the_command_line_writes_follows_the_rules() {
    let dir = std::env::temp_dir().join(format!("wop-spec-v2-cli-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("dir");
    let journal = dir.join("runs.db");
    let _ = std::fs::remove_file(&journal);
    let journal = journal.to_str().expect("utf-8").to_owned();

    // manifest
    let (code, manifest) = run(&["manifest"]);
    assert_eq!(code, 0);
    let mut problems = manifest_problems(&manifest, &[]);
    // The binary prints the manifest alone; the schema files are checked through the library.
    problems.retain(|p| !p.contains("no such schema file"));
    assert_eq!(problems, Vec::<String>::new());

    // run: one that completes and one that fails, both recorded in the journal
    let review = json!({"draft": {"number": 1, "scenes": [
        {"beat": "b", "text": "t", "placeholder": false, "repaired": false}]}})
    .to_string();
    let mut runs = Vec::new();
    for (name, script) in [
        (
            "ok",
            r#"[{"content": "Tighten the ending.", "usage": {"outputTokens": 12}}]"#,
        ),
        (
            "fail",
            r#"[{"error": "503"}, {"error": "503"}, {"error": "503"}, {"error": "503"}]"#,
        ),
    ] {
        let path = dir.join(format!("{name}.json"));
        std::fs::write(&path, script).expect("script");
        let (_, out) = run(&[
            "run",
            "--node",
            "community.demo.bookai.review-chapter",
            "--input-json",
            &review,
            "--script",
            path.to_str().expect("utf-8"),
            "--journal",
            &journal,
            "--json",
        ]);
        let run_id = out["outcome"]["runId"].as_str().expect("runId").to_owned();
        assert!(run_id_ok(&run_id), "{run_id}");
        if let Some(error) = out["outcome"].get("error") {
            assert_eq!(envelope_problems(error), Vec::<String>::new(), "{error}");
        }
        runs.push((name, run_id, out));
    }
    let failed = &runs[1].2["outcome"];
    assert!(
        failed["status"] == "failed" && failed.get("error").is_some(),
        "the failing script fails the node: {failed}"
    );

    // events --json
    for (name, run_id, _) in &runs {
        let (code, events) = run(&["events", run_id, "--journal", &journal, "--json"]);
        assert_eq!(code, 0);
        let events = events.as_array().cloned().unwrap_or_default();
        assert!(!events.is_empty());
        assert_eq!(log_problems(&events), Vec::<String>::new(), "{name}");
    }

    // conformance --json: verdicts only; every id and code in it follows the rules
    let (code, report) = run(&["conformance", "--json"]);
    assert_eq!(code, 0, "{report}");
    assert_eq!(report["allPassed"], true);
    for leg in report["legs"].as_array().cloned().unwrap_or_default() {
        assert!(leg["id"].as_str().is_some_and(|id| id.starts_with("0248.")));
        assert_eq!(leg["verdict"], "executed-pass");
    }

    // the capability document the local host advertises
    let caps = LocalHost::rfc0248().build().capabilities().to_json();
    assert_eq!(caps_problems(&caps), Vec::<String>::new());
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn an_event_of_the_first_shape_still_reads_as_v2() {
    let old = json!({"seq": 1, "runId": "run-1", "type": "node.completed",
        "payload": {"nodeId": "main", "output": "text"}});
    let read = RunEvent::from_json(&old).expect("reads");
    assert_eq!(read.sequence, 0);
    assert_eq!(read.payload()["outputs"], json!({"output": "text"}));
    let failed = json!({"seq": 2, "runId": "run-1", "type": "node.failed",
        "payload": {"nodeId": "main", "error": {"error": "budget_exhausted", "message": "m"}}});
    let read = RunEvent::from_json(&failed).expect("reads");
    assert_eq!(
        read.node_error().map(|e| e.error),
        Some(ErrorCode::BudgetExhausted)
    );
    assert_eq!(read.payload()["error"]["code"], "budget_exhausted");
}
